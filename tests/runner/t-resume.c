/* t-resume.c: a killed sweep resumes without redoing finished cases and
 * without losing any.  The CLI (QF_QUALIFY_BIN) runs a small suite once
 * uninterrupted; then (1) a journal cut after a few records with a torn
 * half record, and (2) a sweep killed with SIGKILL while it runs, are
 * resumed with --resume.  The final set of results must equal the
 * uninterrupted one: same pairs, verdicts, reasons and metrics, no pair
 * twice.  And a pair with two records in the journal resumes with the
 * last.  A journal of another sweep (another suite file, claim file or
 * --seed, or a header with no sweep identity) is not resumed: exit 2
 * naming what differs, the journal untouched (before, its records were
 * taken as this sweep's).  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test.h"

static const char *bin;
static char dir[128], suite[256];

static void write_suite(void)
{
    FILE *f;
    mkdir(dir, 0755);
    snprintf(suite, sizeof suite, "%s/small.yaml", dir);
    f = fopen(suite, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: small\n"
          "inputs: [normal, uniform]\n"
          "seeds: 2\n"
          "groups:\n"
          "  - op: gemm\n"
          "    kernels: [gemm.cpu.*]\n"
          "    dtypes: [float32, {in: bfloat16, acc: float32}]\n"
          "    shapes: {M: [3, 17], N: [5], K: [9, 33]}\n"
          "  - op: softmax\n"
          "    kernels: [softmax.cpu.*]\n"
          "    dtypes: [float32]\n"
          "    shapes: {rows: [2], cols: [7, 65]}\n",
          f);
    fclose(f);
}

static int run_cli(const char *out, const char *extra)
{
    char cmd[2048];
    int st;
    snprintf(cmd, sizeof cmd, "'%s' run '%s' -o '%s' -q %s >/dev/null 2>%s/err.txt", bin, suite, out, extra,
             dir);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* run_cli that must exit 2 with want in its message, leaving out's
 * journal as it was. */
static void refused(const char *out, const char *extra, const char *want)
{
    char path[512], *before, *after, *err;
    snprintf(path, sizeof path, "%s/journal.jsonl", out);
    before = qf_test_slurp(path, NULL);
    ck_assert_int_eq(run_cli(out, extra), 2);
    err = qf_test_slurp(qf_test_path(dir, "err.txt"), NULL);
    ck_assert_msg(strstr(err, "journal.jsonl: the journal") && strstr(err, want), "%s: '%s' lacks '%s'", extra,
                  err, want);
    after = qf_test_slurp(path, NULL);
    ck_assert_msg(!strcmp(before, after), "%s: the journal changed", extra);
    free(before);
    free(after);
    free(err);
}

static qf_result *load(const char *out, size_t *n)
{
    char path[512], err[512];
    qf_result *r = NULL;
    snprintf(path, sizeof path, "%s/journal.jsonl", out);
    ck_assert_msg(qf_journal_read(path, &r, n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    return r;
}

static char *metrics_text(const qf_result *r)
{
    json_t *j = NULL;
    char *s;
    if (!r->has_metrics)
        return strdup("null");
    ck_assert_int_eq(qf_metrics_to_json(&r->metrics, &j), QF_OK);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(j);
    return s;
}

/* Same pairs (each once), same verdicts, reasons and metrics. */
static void same_results(const qf_result *a, size_t na, const qf_result *b, size_t nb)
{
    size_t i, j;
    ck_assert_uint_eq(na, nb);
    for (i = 0; i < na; i++) {
        char ka[700], kb[700];
        size_t hits = 0, at = 0;
        qf_result_key(&a[i], ka, sizeof ka);
        for (j = 0; j < nb; j++) {
            qf_result_key(&b[j], kb, sizeof kb);
            if (!strcmp(ka, kb))
                hits++, at = j;
        }
        ck_assert_msg(hits == 1, "%s appears %zu times", ka, hits);
        ck_assert_msg(a[i].verdict == b[at].verdict, "%s: %s vs %s", ka, qf_verdict_name(a[i].verdict),
                      qf_verdict_name(b[at].verdict));
        ck_assert_str_eq(a[i].reason, b[at].reason);
        {
            char *ma = metrics_text(&a[i]), *mb = metrics_text(&b[at]);
            ck_assert_msg(!strcmp(ma, mb), "%s: metrics differ", ka);
            free(ma);
            free(mb);
        }
    }
}

/* Keep the header and the first `keep` records, then half a record. */
static void cut_journal(const char *out, int keep)
{
    char path[512], *line = NULL;
    size_t cap = 0;
    ssize_t len;
    FILE *in, *o;
    char tmp[520];
    int lines = 0;
    snprintf(path, sizeof path, "%s/journal.jsonl", out);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    in = fopen(path, "r");
    o = fopen(tmp, "w");
    ck_assert(in && o);
    while ((len = getline(&line, &cap, in)) > 0) {
        if (lines <= keep)
            fwrite(line, 1, (size_t)len, o);
        else {
            fwrite(line, 1, (size_t)len / 2, o);
            break;
        }
        lines++;
    }
    free(line);
    fclose(in);
    fclose(o);
    ck_assert_int_eq(rename(tmp, path), 0);
}

START_TEST(resume_after_cut)
{
    char full[256], part[256], cmd[1024];
    qf_result *a, *b;
    size_t na, nb;
    write_suite();
    snprintf(full, sizeof full, "%s/full", dir);
    snprintf(part, sizeof part, "%s/part", dir);
    ck_assert_int_eq(run_cli(full, ""), 0);
    a = load(full, &na);
    ck_assert_uint_ge(na, 20);
    /* The cut journal: 5 finished records and a torn sixth. */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/journal.jsonl' '%s/'", part, full, part);
    ck_assert_int_eq(system(cmd), 0);
    cut_journal(part, 5);
    ck_assert_int_eq(run_cli(part, "--resume"), 0);
    b = load(part, &nb);
    same_results(a, na, b, nb);
    free(b);
    /* Resuming a finished sweep runs nothing and changes nothing. */
    ck_assert_int_eq(run_cli(part, "--resume"), 0);
    b = load(part, &nb);
    same_results(a, na, b, nb);
    free(b);
    free(a);
}
END_TEST

/* A journal may hold two records of one pair (a record appended after
 * another's resume): resuming takes the last one, for every pair whatever
 * its place (the records are looked up by key in a sorted index). */
START_TEST(resume_last_record_wins)
{
    char full[256], path[512], *line = NULL;
    size_t cap = 0, i, n, na;
    ssize_t len;
    int lines = 0;
    FILE *f;
    json_t *rec = NULL, *res, *cases;
    json_error_t je;
    qf_result *a;
    const char *kernel, *id;
    write_suite();
    snprintf(full, sizeof full, "%s/dup", dir);
    ck_assert_int_eq(run_cli(full, ""), 0);
    a = load(full, &na);
    snprintf(path, sizeof path, "%s/journal.jsonl", full);
    /* the third record (line 4), appended again with another reason */
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while ((len = getline(&line, &cap, f)) > 0)
        if (++lines == 4)
            rec = json_loads(line, 0, &je);
    fclose(f);
    free(line);
    ck_assert_msg(rec != NULL, "%s", je.text);
    json_object_set_new(rec, "reason", json_string("the appended record"));
    kernel = json_string_value(json_object_get(rec, "kernel"));
    id = json_string_value(json_object_get(rec, "case_id"));
    ck_assert(kernel && id);
    f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    json_dumpf(rec, f, JSON_COMPACT);
    fputc('\n', f);
    fclose(f);
    ck_assert_int_eq(run_cli(full, "--resume"), 0);
    snprintf(path, sizeof path, "%s/results.json", full);
    res = json_load_file(path, 0, &je);
    ck_assert_msg(res != NULL, "%s", je.text);
    cases = json_object_get(res, "cases");
    n = json_array_size(cases);
    ck_assert_uint_eq(n, na);
    for (i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i);
        int same = !strcmp(json_string_value(json_object_get(c, "kernel")), kernel) &&
                   !strcmp(json_string_value(json_object_get(c, "case_id")), id);
        const char *why = json_string_value(json_object_get(c, "reason"));
        ck_assert_msg(!same || !strcmp(why, "the appended record"), "%s %s: %s", kernel, id, why);
        ck_assert_msg(same || strcmp(why, "the appended record"), "case %zu took the appended record", i);
    }
    json_decref(rec);
    json_decref(res);
    free(a);
}
END_TEST

START_TEST(resume_after_sigkill)
{
    char full[256], killed[256], journal[512];
    qf_result *a, *b;
    size_t na, nb;
    pid_t pid;
    int st, i;
    write_suite();
    snprintf(full, sizeof full, "%s/full2", dir);
    snprintf(killed, sizeof killed, "%s/killed", dir);
    snprintf(journal, sizeof journal, "%s/journal.jsonl", killed);
    ck_assert_int_eq(run_cli(full, ""), 0);
    a = load(full, &na);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execl(bin, bin, "run", suite, "-o", killed, "-q", (char *)NULL);
        _exit(127);
    }
    /* Kill it once a few records are on disk (or when it is done). */
    for (i = 0; i < 20000; i++) {
        struct timespec ts = {0, 200000};
        if (qf_test_count_lines(journal) >= 4 || waitpid(pid, &st, WNOHANG) == pid)
            break;
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_assert_int_eq(run_cli(killed, "--resume"), 0);
    b = load(killed, &nb);
    same_results(a, na, b, nb);
    free(a);
    free(b);
}
END_TEST

/* Another sweep's journal is refused, naming what differs. */
START_TEST(resume_another_sweep)
{
    char out[256], claim[256], extra[512], *text, *nl;
    write_suite();
    snprintf(out, sizeof out, "%s/other", dir);
    snprintf(claim, sizeof claim, "%s/claim.yaml", dir);
    qf_test_write_text(dir, "claim.yaml", "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith: {order: any}\n");
    snprintf(extra, sizeof extra, "--claim '%s'", claim);
    ck_assert_int_eq(run_cli(out, extra), 0);
    snprintf(extra, sizeof extra, "--claim '%s' --resume", claim);
    ck_assert_int_eq(run_cli(out, extra), 0); /* the same sweep */
    /* the claim file's contents changed, or no claim file */
    qf_test_write_text(dir, "claim.yaml", "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith: {order: pairwise}\n");
    refused(out, extra, "is of another sweep: the claim files");
    refused(out, "--resume", "the claim files (--claim and the suite's claims:, SHA-256 of each): 1 file(s): ");
    qf_test_write_text(dir, "claim.yaml", "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith: {order: any}\n");
    /* another seed */
    snprintf(extra, sizeof extra, "--claim '%s' --resume --seed 7", claim);
    refused(out, extra, "--seed: none in the journal, '7' now");
    /* another suite: the same file with one shape more */
    text = qf_test_slurp(suite, NULL);
    qf_test_write_text(dir, "small.yaml", "suite: small\nrefute: false\ninputs: [normal]\nseeds: 1\nop: gemm\n"
                                          "kernels: [gemm.cpu.naive.f32]\ndtypes: [float32]\n"
                                          "shapes: {M: [3], N: [5], K: [9]}\n");
    snprintf(extra, sizeof extra, "--claim '%s' --resume", claim);
    refused(out, extra, "the suite file (SHA-256): ");
    qf_test_write_text(dir, "small.yaml", text);
    free(text);
    ck_assert_int_eq(run_cli(out, extra), 0); /* the same sweep again */
    /* a header without the sweep's identity (an older qualify's) */
    {
        char path[512];
        json_t *h;
        snprintf(path, sizeof path, "%s/journal.jsonl", out);
        text = qf_test_slurp(path, NULL);
        nl = strchr(text, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = '\0';
        h = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(h);
        ck_assert_ptr_nonnull(json_object_get(h, "sweep"));
        json_object_del(h, "sweep");
        {
            char *line = json_dumps(h, JSON_COMPACT);
            qf_test_write_file(path, line, strlen(line), "\n");
            free(line);
        }
        json_decref(h);
        {
            FILE *f = fopen(path, "a");
            ck_assert_ptr_nonnull(f);
            fputs(nl + 1, f);
            fclose(f);
        }
        free(text);
    }
    refused(out, extra, "the journal names no sweep");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/resume");
    TCase *tc = tcase_create("resume");
    bin = getenv("QF_QUALIFY_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "QF_QUALIFY_BIN is not set: skipped\n");
        return QF_TEST_SKIP;
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-resume-%d", (int)getpid());
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, resume_after_cut);
    tcase_add_test(tc, resume_last_record_wins);
    tcase_add_test(tc, resume_after_sigkill);
    tcase_add_test(tc, resume_another_sweep);
    suite_add_tcase(s, tc);
    {
        int rc = qf_test_run(s);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove the temporary directory\n");
        return rc;
    }
}
