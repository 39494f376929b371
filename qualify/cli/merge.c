/* cli/merge.c: 'qualify merge': join the outputs of the N shards of one
 * sweep (qualify run --shard I/N) into the journal and reports an
 * unsharded run writes (docs/cluster.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "qf_provenance.h"
#include "qf_report.h"
#include "qf_result.h"
#include "qf_runner.h"

static const char *help_text =
    "usage: qualify merge SHARD... -o DIR [--fail-on LIST] [-q]\n"
    "\n"
    "Join the outputs of the N shards of one sweep (each SHARD the -o directory\n"
    "of 'qualify run SUITE --shard I/N', or its results.json) into DIR:\n"
    "journal.jsonl, results.json, report.md and junit.xml in plan order, as one\n"
    "unsharded run writes them; results.json lists every shard's machine.\n"
    "\n"
    "  -o, --output DIR     output directory (required; created if needed)\n"
    "  --fail-on LIST       also exit 1 on: marginal, mistrusted, unchecked (comma-separated)\n"
    "  -q, --quiet          no summary line\n"
    "  -h, --help           this text\n"
    "\n"
    "Checked: every shard is of the same sweep (suite hash, kernel set, qualify\n"
    "version, the options that change results), of the same N, given once; every\n"
    "index 0..N-1 is present; every shard finished all its pairs.\n"
    "Exit codes: 0 merged and nothing FAILED, CRASHED or TIMEOUT (nor the\n"
    "--fail-on verdicts); 1 otherwise or the outputs cannot be written; 2 bad\n"
    "usage, or a missing, duplicated, mismatched, incomplete or unreadable shard\n"
    "(the message names it); 3 no pair of the sweep ran (every one UNSUPPORTED or\n"
    "SKIPPED): nothing was checked, not a pass.\n";

/* One shard's output, as read. */
typedef struct shard_in {
    char dir[PATH_MAX];
    json_t *hdr;   /* its journal's header */
    json_t *shard; /* hdr's "shard" (borrowed) */
    json_t *res;   /* its results.json (provenance, host), NULL when unreadable */
    qf_result *r;  /* its journal's records */
    size_t n;
    unsigned index;
} shard_in;

static int merge_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int merge_error(const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qf_cli_error("merge", "%s", msg); /* escaped: shards' text is quoted */
    return QF_EXIT_USAGE;
}

/* The shard's directory: arg itself, or the directory of a results.json. */
static void shard_dir(const char *arg, char *dir, size_t size)
{
    struct stat st;
    if (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode)) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", arg);
        snprintf(dir, size, "%s", dirname(tmp));
    } else {
        snprintf(dir, size, "%s", arg);
    }
}

/* Is j an integer in [lo, hi]? */
static int in_range(const json_t *j, json_int_t lo, json_int_t hi)
{
    return json_is_integer(j) && json_integer_value(j) >= lo && json_integer_value(j) <= hi;
}

/* Are a and b the same directory? */
static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Journal records by key, for the results.json check below. */
static const qf_result *key_base;
static int by_key(const void *a, const void *b)
{
    const qf_result *x = &key_base[*(const size_t *)a], *y = &key_base[*(const size_t *)b];
    int c = strcmp(x->kernel, y->kernel);
    return c ? c : strcmp(x->case_id, y->case_id);
}

/* Do the shard's results.json cases say what its journal says?  Every
 * case of results.json that the journal holds must have the same verdict
 * and cause there (each record was decided again from its evidence when
 * read): a report edited apart from its journal is refused.  Without
 * results.json (a shard killed before its reports) there is nothing to
 * compare. */
static int results_agree(const shard_in *s)
{
    const json_t *cases = s->res ? json_object_get(s->res, "cases") : NULL, *c;
    size_t *ix, i, lo, hi;
    int rc = QF_EXIT_OK;
    if (!json_is_array(cases))
        return QF_EXIT_OK;
    ix = malloc((s->n ? s->n : 1) * sizeof *ix);
    if (!ix)
        return merge_error("%s: out of memory", s->dir);
    for (i = 0; i < s->n; i++)
        ix[i] = i;
    key_base = s->r;
    qsort(ix, s->n, sizeof *ix, by_key);
    json_array_foreach(cases, i, c)
    {
        const char *k = json_string_value(json_object_get(c, "kernel"));
        const char *id = json_string_value(json_object_get(c, "case_id"));
        const char *v = json_string_value(json_object_get(c, "verdict"));
        const char *cause = json_string_value(json_object_get(c, "cause"));
        const qf_result *hit = NULL;
        lo = 0, hi = s->n;
        while (k && id && lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const qf_result *m = &s->r[ix[mid]];
            int d = strcmp(k, m->kernel);
            if (!d)
                d = strcmp(id, m->case_id);
            if (!d) {
                hit = m;
                break;
            }
            if (d < 0)
                hi = mid;
            else
                lo = mid + 1;
        }
        /* a case the journal lacks is an incomplete shard: said below,
         * with the resume command, by the completeness check */
        if (hit && (!v || strcmp(v, qf_verdict_name(hit->verdict)) || !cause ||
                    strcmp(cause, qf_cause_name(hit->cause)))) {
            rc = merge_error("%s: its journal and results.json disagree on %s %s (journal: %s, results.json: %s): "
                             "one was edited; rerun the shard",
                             s->dir, k, id, qf_verdict_name(hit->verdict), v ? v : "no verdict");
            break;
        }
    }
    free(ix);
    return rc;
}

/* Journal, header, shard identity and results.json of one shard. */
static int read_shard(const char *arg, shard_in *s)
{
    char path[PATH_MAX + 32], err[1024];
    json_error_t je;
    shard_dir(arg, s->dir, sizeof s->dir);
    snprintf(path, sizeof path, "%s/journal.jsonl", s->dir);
    if (qf_journal_read(path, &s->r, &s->n, NULL, &s->hdr, err, sizeof err) != QF_OK)
        return merge_error("%s: cannot read the shard's journal: %s", s->dir, err[0] ? err : strerror(errno));
    s->shard = json_object_get(s->hdr, "shard");
    if (!json_is_object(s->shard))
        return merge_error("%s: not a shard: its journal's header has no shard identity (a run "
                           "without --shard I/N)",
                           s->dir);
    if (!in_range(json_object_get(s->shard, "index"), 0, QF_RUNNER_MAX_SHARDS - 1) ||
        !in_range(json_object_get(s->shard, "count"), 1, QF_RUNNER_MAX_SHARDS) ||
        !in_range(json_object_get(s->shard, "plan_pairs"), 0, (json_int_t)1 << 40) ||
        !json_is_object(json_object_get(s->shard, "sweep")) ||
        !json_is_array(json_object_get(s->shard, "pairs")))
        return merge_error("%s: its journal's shard identity is malformed", s->dir);
    s->index = (unsigned)json_integer_value(json_object_get(s->shard, "index"));
    /* Needed for the provenance once the journal shows the shard complete
     * (an incomplete shard is reported as such first). */
    snprintf(path, sizeof path, "%s/results.json", s->dir);
    s->res = json_load_file(path, 0, &je);
    return results_agree(s);
}

/* Which member of the sweep identity differs, in words. */
static const char *sweep_diff(const json_t *a, const json_t *b)
{
    static const struct {
        const char *key, *what;
    } m[] = {{"suite_sha256", "another suite (suite file hash)"},
             {"kernels_sha256", "another kernel set"},
             {"qualify_version", "another qualify version"},
             {"options", "other options (--seed, --kernel, --case, --no-refute, --timeout, "
                         "--max-case-memory, --claim)"}};
    size_t i;
    for (i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!json_equal(json_object_get(a, m[i].key), json_object_get(b, m[i].key)))
            return m[i].what;
    return json_equal((json_t *)a, (json_t *)b) ? NULL : "another sweep";
}

/* Every shard of the first one's sweep and N, each index once, none
 * missing. */
static int check_set(const shard_in *s, size_t ns, unsigned *count)
{
    const json_t *sweep0 = json_object_get(s[0].shard, "sweep");
    const json_t *plan0 = json_object_get(s[0].shard, "plan_pairs");
    unsigned char *seen;
    size_t i, j, missing = 0;
    *count = (unsigned)json_integer_value(json_object_get(s[0].shard, "count"));
    for (i = 0; i < ns; i++) {
        unsigned n = (unsigned)json_integer_value(json_object_get(s[i].shard, "count"));
        const char *d = sweep_diff(sweep0, json_object_get(s[i].shard, "sweep"));
        if (n != *count)
            return merge_error("%s: shard %u/%u, but %s is shard %u/%u: N differs (every shard of a "
                               "sweep has the same N)",
                               s[i].dir, s[i].index, n, s[0].dir, s[0].index, *count);
        if (d || !json_equal((json_t *)plan0, json_object_get(s[i].shard, "plan_pairs")))
            return merge_error("%s: shard %u/%u is of %s than %s", s[i].dir, s[i].index, n,
                               d ? d : "another plan", s[0].dir);
        if (s[i].index >= n)
            return merge_error("%s: shard index %u out of range for N = %u", s[i].dir, s[i].index, n);
        for (j = 0; j < i; j++)
            if (s[j].index == s[i].index)
                return merge_error("shard %u/%u given twice: %s and %s", s[i].index, n, s[j].dir, s[i].dir);
    }
    seen = calloc(*count, 1);
    if (!seen)
        return merge_error("out of memory");
    for (i = 0; i < ns; i++)
        seen[s[i].index] = 1;
    for (i = 0; i < *count; i++)
        if (!seen[i]) {
            fprintf(stderr, "qualify merge: shard %zu/%u missing\n", i, *count);
            missing++;
        }
    free(seen);
    if (missing)
        return merge_error("%zu of %u shards missing (given %zu)", missing, *count, ns);
    return QF_EXIT_OK;
}

/* A record's key and its line order in the journal. */
typedef struct keyed {
    char key[QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2];
    size_t at;
} keyed;

/* By key, then journal order: the last of equal keys is the one that wins. */
static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->at < y->at ? -1 : x->at > y->at;
}

/* The record of kernel + case id among the sorted keys (the last one
 * written), or -1. */
static long find_record(const keyed *k, size_t n, const char *want)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first key > want */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(k[mid].key, want) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && !strcmp(k[lo - 1].key, want) ? (long)k[lo - 1].at : -1;
}

/* The shard's records into merged[] at their plan index; every pair its
 * header lists must have a record (the last one of its key wins, as
 * --resume takes it). */
static int place_shard(const shard_in *s, unsigned count, qf_result *merged, unsigned char *filled,
                       size_t plan_pairs)
{
    const json_t *pairs = json_object_get(s->shard, "pairs");
    size_t i, missing = 0;
    char want[QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2];
    keyed *k = malloc((s->n ? s->n : 1) * sizeof *k);
    int rc = QF_EXIT_OK;
    if (!k)
        return merge_error("out of memory");
    for (i = 0; i < s->n; i++) {
        qf_result_key(&s->r[i], k[i].key, sizeof k[i].key);
        k[i].at = i;
    }
    qsort(k, s->n, sizeof *k, keyed_cmp);
    for (i = 0; i < json_array_size(pairs) && rc == QF_EXIT_OK; i++) {
        const json_t *p = json_array_get(pairs, i);
        json_int_t at = json_integer_value(json_array_get(p, 0));
        long found;
        if (at < 0 || (size_t)at >= plan_pairs || !json_is_string(json_array_get(p, 1)) ||
            !json_is_string(json_array_get(p, 2))) {
            rc = merge_error("%s: shard %u/%u: its header's pair %zu is malformed", s->dir, s->index, count,
                             i);
            break;
        }
        if (filled[at]) {
            rc = merge_error("%s: shard %u/%u: plan pair %lld is in another shard too", s->dir, s->index,
                             count, (long long)at);
            break;
        }
        snprintf(want, sizeof want, "%s %s", json_string_value(json_array_get(p, 1)),
                 json_string_value(json_array_get(p, 2)));
        found = find_record(k, s->n, want);
        if (found < 0) {
            missing++;
            continue;
        }
        merged[at] = s->r[found];
        filled[at] = 1;
    }
    free(k);
    if (rc == QF_EXIT_OK && missing)
        rc = merge_error("%s: shard %u/%u incomplete: %zu of %zu pairs have no record in its journal "
                         "(resume it: qualify run SUITE --shard %u/%u -o %s --resume)",
                         s->dir, s->index, count, missing, json_array_size(pairs), s->index, count, s->dir);
    return rc;
}

/* OUT/journal.jsonl: a header naming the merged sweep, then every record
 * in plan order. */
static int write_journal(const char *out, const shard_in *s0, unsigned count, const qf_result *r, size_t n,
                         json_t *argv)
{
    char path[PATH_MAX + 32], err[1024];
    json_t *hdr = json_pack("{s:O, s:O, s:{s:I, s:O, s:I}}", "suite", json_object_get(s0->hdr, "suite"),
                            "argv", argv, "merged", "count", (json_int_t)count, "sweep",
                            json_object_get(s0->shard, "sweep"), "plan_pairs", (json_int_t)n);
    qf_journal *j = NULL;
    size_t i;
    qf_status st;
    snprintf(path, sizeof path, "%s/journal.jsonl", out);
    st = hdr ? qf_journal_open(path, 0, hdr, &j, NULL, err, sizeof err) : QF_ENOMEM;
    json_decref(hdr);
    qf_journal_set_batch(j, 1); /* one fsync: the shards still hold every record */
    for (i = 0; st == QF_OK && i < n; i++)
        st = qf_journal_append(j, &r[i]);
    if (j && qf_journal_close(j) != QF_OK && st == QF_OK)
        st = QF_EIO;
    if (st != QF_OK) {
        fprintf(stderr, "qualify merge: %s: cannot write the journal: %s\n", path,
                err[0] ? err : strerror(errno));
        return QF_EXIT_FAIL;
    }
    return QF_EXIT_OK;
}

/* results.json's "shards": each shard's index, machine, pair count,
 * directory and provenance, by index. */
static json_t *shards_json(const shard_in *s, size_t ns, unsigned count)
{
    json_t *arr = json_array(), *extra;
    unsigned idx;
    size_t i;
    for (idx = 0; idx < count; idx++)
        for (i = 0; i < ns; i++) {
            const json_t *rs = json_object_get(s[i].res, "shard");
            if (s[i].index != idx)
                continue;
            json_array_append_new(arr, json_pack("{s:I, s:O*, s:O*, s:s, s:O*}", "index", (json_int_t)idx,
                                                 "host", json_object_get(rs, "host"), "n_pairs",
                                                 json_object_get(rs, "n_pairs"), "dir", s[i].dir,
                                                 "provenance", json_object_get(s[i].res, "provenance")));
        }
    extra = json_object();
    json_object_set_new(extra, "shards", arr);
    return extra;
}

/* Merge the read shards into out. */
static int merge(shard_in *s, size_t ns, const char *out, unsigned fail_mask, int quiet, json_t *argv)
{
    unsigned count, first = 0;
    size_t plan, i, cnt[QF_VERDICT_COUNT] = {0};
    qf_result *merged;
    unsigned char *filled;
    qf_provenance prov;
    json_t *extra;
    char err[512];
    int rc = check_set(s, ns, &count), v;
    if (rc != QF_EXIT_OK)
        return rc;
    plan = (size_t)json_integer_value(json_object_get(s[0].shard, "plan_pairs"));
    merged = calloc(plan ? plan : 1, sizeof *merged);
    filled = calloc(plan ? plan : 1, 1);
    if (!merged || !filled) {
        free(merged);
        free(filled);
        return merge_error("out of memory");
    }
    for (i = 0; i < ns && rc == QF_EXIT_OK; i++) {
        rc = place_shard(&s[i], count, merged, filled, plan);
        if (s[i].index == 0)
            first = (unsigned)i;
        /* Placed: a record is large (fixed-size strings), and a sweep of
         * 10^5 pairs would otherwise be held twice. */
        free(s[i].r);
        s[i].r = NULL;
    }
    for (i = 0; i < ns && rc == QF_EXIT_OK; i++)
        if (!s[i].res)
            rc = merge_error("%s: shard %u/%u has no readable results.json: it did not finish; run it "
                             "again with --resume and the same --shard",
                             s[i].dir, s[i].index, count);
    for (i = 0; i < plan && rc == QF_EXIT_OK; i++)
        if (!filled[i])
            rc = merge_error("plan pair %zu is in no shard's plan (the shards' plans disagree)", i);
    if (rc == QF_EXIT_OK && qf_cli_mkdir_p(out))
        rc = merge_error("cannot create the output directory %s: %s", out, strerror(errno));
    for (i = 0; i < ns && rc == QF_EXIT_OK; i++)
        if (same_dir(out, s[i].dir))
            rc = merge_error("-o %s is shard %u's own directory: its journal would be replaced", out,
                             s[i].index);
    if (rc == QF_EXIT_OK)
        rc = write_journal(out, &s[first], count, merged, plan, argv);
    if (rc == QF_EXIT_OK) {
        /* The sweep's provenance is shard 0's; every shard's is in "shards". */
        memset(&prov, 0, sizeof prov);
        qf_report_provenance_from_json(json_object_get(s[first].res, "provenance"), &prov, err, sizeof err);
        extra = shards_json(s, ns, count);
        rc = qf_cli_write_reports(
            "merge", out, merged, plan, &prov,
            json_string_value(json_object_get(json_object_get(s[first].shard, "sweep"), "suite")), fail_mask,
            extra);
        rc = qf_cli_nothing_ran("merge", merged, plan, rc, 0);
        json_decref(extra);
        qf_provenance_free(&prov);
    }
    for (i = 0; i < plan && rc != QF_EXIT_USAGE && !quiet; i++)
        cnt[merged[i].verdict < QF_VERDICT_COUNT ? merged[i].verdict : 0]++;
    if (rc != QF_EXIT_USAGE && !quiet) {
        printf("merged %u shards: %zu case(s):", count, plan);
        for (v = 0; v < QF_VERDICT_COUNT; v++)
            if (cnt[v])
                printf(" %zu %s", cnt[v], qf_verdict_name((qf_verdict)v));
        printf("\nresults: %s/results.json\n", out);
    }
    free(merged);
    free(filled);
    return rc;
}

int qf_cli_merge(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"fail-on", required_argument, NULL, 'F'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *out = NULL;
    unsigned fail_mask = (1u << QF_VERDICT_FAILED) | (1u << QF_VERDICT_CRASHED) | (1u << QF_VERDICT_TIMEOUT);
    int quiet = 0, c, rc = QF_EXIT_OK;
    size_t ns, i;
    shard_in *s;
    json_t *av = qf_cli_argv_json(argc, argv); /* before getopt_long permutes it */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'F':
            if (qf_cli_parse_fail_on(optarg, &fail_mask))
                rc = qf_cli_usage_error("merge",
                                        "--fail-on '%s': valid choices are marginal, mistrusted, unchecked "
                                        "(comma-separated)",
                                        optarg);
            break;
        case 'q': quiet = 1; break;
        case 'h':
            fputs(help_text, stdout);
            json_decref(av);
            return QF_EXIT_OK;
        case ':':
            rc = qf_cli_usage_error("merge", "option '%s' needs a value (see qualify merge --help)",
                                    argv[optind - 1]);
            break;
        default:
            rc = qf_cli_usage_error("merge", "unknown option '%s' (see qualify merge --help)",
                                    argv[optind - 1]);
        }
        if (rc != QF_EXIT_OK) {
            json_decref(av);
            return rc;
        }
    }
    if (!out || optind >= argc) {
        json_decref(av);
        return qf_cli_usage_error("merge", "%s (see qualify merge --help)",
                                  !out ? "-o DIR is required" : "no shard given");
    }
    ns = (size_t)(argc - optind);
    s = calloc(ns, sizeof *s);
    if (!s) {
        json_decref(av);
        return merge_error("out of memory");
    }
    for (i = 0; i < ns && rc == QF_EXIT_OK; i++)
        rc = read_shard(argv[optind + (int)i], &s[i]);
    if (rc == QF_EXIT_OK)
        rc = merge(s, ns, out, fail_mask, quiet, av);
    for (i = 0; i < ns; i++) {
        json_decref(s[i].hdr);
        json_decref(s[i].res);
        free(s[i].r);
    }
    free(s);
    json_decref(av);
    return rc;
}
