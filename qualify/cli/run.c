/* cli/run.c: 'qualify run': sweep a suite through the isolated runner,
 * journal every case, write the reports (docs/runner.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "_escape.h"
#include "_runner_device.h"
#include "_sandbox.h"
#include "_worker.h"
#include "cli.h"
#include "qf_provenance.h"
#include "qf_report.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_kernel.h"
#include "qf_sha256.h"

static const char *help_text =
    "usage: qualify run [SUITE.yaml] [options]\n"
    "\n"
    "Run every case of a suite against every registered kernel matching its\n"
    "globs, each in a child process with a time limit; journal each finished\n"
    "case at once; write results.json, report.md and junit.xml.  Without\n"
    "SUITE, the default suite shapes/quick.yaml.\n"
    "\n"
    "  -o, --output DIR     output directory (default ./qualify-out): journal.jsonl\n"
    "                       and the reports\n"
    "  --plugin LIB.so      load kernels from a plugin (repeatable)\n"
    "  --adapter cblas:LIB.so[:SYMBOL]\n"
    "                       register GEMM kernels calling LIB's CBLAS entry\n"
    "                       points (repeatable; docs/third-party.md)\n"
    "  --worker CMD         start the kernel worker CMD (/bin/sh -c) and register\n"
    "                       its kernels (repeatable; docs/workers.md); adds to\n"
    "                       the suite's workers:\n"
    "  --claim FILE         replace the arithmetic claim of the kernels a claim\n"
    "                       file names (repeatable; docs/claims.md)\n"
    "  -j, --jobs N         cases run in parallel (default: the usable cores,\n"
    "                       1 with --time); results do not depend on N\n"
    "  --isolate server|pair  server (default): in-process kernels run in one\n"
    "                       kernel server per job slot (init and device context\n"
    "                       once per server); pair: a kernel child per pair\n"
    "                       (default with --time; docs/runner.md)\n"
    "  --devices all|I,J,...  run GPU kernels on these devices of their back end\n"
    "                       (one kernel server per device at least; a failing\n"
    "                       device leaves the rotation, its pairs run again on\n"
    "                       the others; default: device 0; docs/runner.md)\n"
    "  --resume             continue a killed sweep from DIR/journal.jsonl\n"
    "  --time               time the QUALIFIED and MARGINAL cases (warm-up,\n"
    "                       repetitions, median, min, max, spread)\n"
    "  --reps N             timed repetitions with --time (default 10)\n"
    "  --timeout S          time limit of one kernel run in seconds (default 60)\n"
    "  --kernel-memory SIZE  data limit of each kernel process (kernel child,\n"
    "                       server, worker): bytes with K, M, G suffixes, or 0\n"
    "                       for none (default: half the RAM, at most 16G; not\n"
    "                       applied to GPU kernels nor in sanitizer builds)\n"
    "  --kernel-cpu S       CPU seconds per kernel process (per run in a server;\n"
    "                       default 600; 0: none)\n"
    "  --kernel-procs N     processes a kernel may add (default 256; 0: none)\n"
    "  --kernel-fsize SIZE  largest file a kernel may write (default 1G; 0: none)\n"
    "  --kernel-disk SIZE   all a kernel process may write into its scratch\n"
    "                       directory (default 1G; 0: none)\n"
    "  --require-sandbox    refuse to run unless every kernel process is fully\n"
    "                       confined (Landlock ABI >= 6, seccomp, namespaces)\n"
    "  --no-sandbox         run kernel processes without the sandbox (debugging;\n"
    "                       said in every report)\n"
    "  --kernel-writable DIR  kernel processes may also write under DIR (a\n"
    "                       framework's cache; never the output directory)\n"
    "  --max-case-memory SIZE\n"
    "                       a case whose buffers are estimated above SIZE (bytes,\n"
    "                       or 512M, 4G: powers of 1024) is UNSUPPORTED without\n"
    "                       being run (default: a quarter of physical memory)\n"
    "  --kernel GLOB        only kernels whose name matches GLOB\n"
    "  --case ID            only the case with this id (see --list)\n"
    "  --seed S             replace every group's seeds by the single seed S\n"
    "  --fail-on LIST       also exit 1 on: marginal, mistrusted, unchecked (comma-separated)\n"
    "  --save-failing[=all|off|SIZE[,TOTAL]]\n"
    "                       write the inputs, outputs and reference of every\n"
    "                       FAILED, MARGINAL or MISTRUSTED pair as .npy files under\n"
    "                       DIR/failing/ with a suite that reruns the pair from\n"
    "                       them; on by default within 64M per pair and 1G in all;\n"
    "                       SIZE[,TOTAL] sets those limits, all lifts them, off\n"
    "                       saves nothing (docs/runner.md)\n"
    "  --no-refute          leave out the refuting inputs designed against each\n"
    "                       kernel's claim (docs/refute.md)\n"
    "  --shard I/N          run only slice I (0-based) of N of the pairs, balanced\n"
    "                       by estimated cost; the journal and results.json record\n"
    "                       the shard; 'qualify merge' joins the N outputs\n"
    "                       (docs/cluster.md)\n"
    "  --list               print the case ids and exit; with --shard, the shard's\n"
    "                       pairs (KERNEL CASE_ID, plan order)\n"
    "  -q, --quiet          no progress output\n"
    "  -h, --help           this text\n"
    "\n"
    "Default suite search: $QUALIFY_SUITE_DIR/quick.yaml, then\n"
    "<bindir>/../share/qualify/shapes/quick.yaml, <bindir>/../shapes/quick.yaml,\n"
    "./shapes/quick.yaml.\n"
    "Exit codes: 0 nothing FAILED, CRASHED or TIMEOUT (nor the --fail-on\n"
    "verdicts); 1 otherwise; 2 bad usage or bad input (a suite error names\n"
    "FILE:LINE:COL; a claim file or --kernel / --case that leaves nothing to\n"
    "run); 3 no pair ran (every one UNSUPPORTED or SKIPPED): nothing was\n"
    "checked, not a pass (a shard exits as its pairs say: the merge judges).\n";

enum {
    OPT_PLUGIN = 256,
    OPT_ADAPTER,
    OPT_WORKER,
    OPT_CLAIM,
    OPT_RESUME,
    OPT_TIME,
    OPT_TIMEOUT,
    OPT_KERNEL,
    OPT_CASE,
    OPT_SEED,
    OPT_FAIL_ON,
    OPT_LIST,
    OPT_REPS,
    OPT_NO_REFUTE,
    OPT_DEVICES,
    OPT_ISOLATE,
    OPT_KMEM,
    OPT_KCPU,
    OPT_KPROCS,
    OPT_KFSIZE,
    OPT_KDISK,
    OPT_REQUIRE_SANDBOX,
    OPT_NO_SANDBOX,
    OPT_KWRITABLE,
    OPT_MAX_CASE_MEMORY,
    OPT_SHARD,
    OPT_SAVE_FAILING
};

/* A kernel limit: "0" (none), else a size as --max-case-memory takes it
 * (qf_runner_parse_bytes) or, for a count (--kernel-procs), a plain
 * integer; 0 when valid. */
static int parse_limit(const char *s, int count, unsigned long long *out)
{
    size_t v;
    char *end;
    if (!strcmp(s, "0")) {
        *out = 0;
        return 0;
    }
    if (count) {
        if (*s < '0' || *s > '9')
            return -1;
        errno = 0;
        *out = strtoull(s, &end, 10);
        return errno || *end ? -1 : 0;
    }
    if (qf_runner_parse_bytes(s, &v))
        return -1;
    *out = v;
    return 0;
}

/* --save-failing's value: none (the default limits), "all" (no limits),
 * "off", or SIZE[,TOTAL] (the total: 1 GiB, or SIZE when larger); 0 when
 * valid. */
static int parse_save_failing(const char *v, int *on, size_t *pair, size_t *total)
{
    char buf[64];
    const char *comma;
    *on = 1;
    *pair = QF_RUNNER_SAVE_PAIR_DEFAULT;
    *total = QF_RUNNER_SAVE_TOTAL_DEFAULT;
    if (!v)
        return 0;
    if (!strcmp(v, "off")) {
        *on = 0;
        return 0;
    }
    if (!strcmp(v, "all")) {
        *pair = *total = 0;
        return 0;
    }
    comma = strchr(v, ',');
    if (strlen(v) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%.*s", comma ? (int)(comma - v) : (int)strlen(v), v);
    if (qf_runner_parse_bytes(buf, pair))
        return -1;
    if (comma)
        return qf_runner_parse_bytes(comma + 1, total);
    if (*pair > *total)
        *total = *pair;
    return 0;
}

/* Does the sweep plan a GPU kernel: a registered device kernel that a
 * group's globs (a group without globs: any kernel) and --kernel match? */
static int plans_device_kernel(const qf_suite *suite, const qf_registry *reg, const char *kglob)
{
    size_t i, g, j;
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        if (!_qf_rdev_is_device(k) || (kglob && !qf_kernel_glob(kglob, k->name)))
            continue;
        for (g = 0; g < suite->ngroups; g++) {
            const qf_suite_group *gr = &suite->groups[g];
            if (!gr->nkernels)
                return 1;
            for (j = 0; j < gr->nkernels; j++)
                if (qf_kernel_glob(gr->kernels[j], k->name))
                    return 1;
        }
    }
    return 0;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The default suite; buf receives the path.  0 when found. */
static int default_suite(char *buf, size_t size)
{
    const char *env = getenv("QUALIFY_SUITE_DIR");
    char exe[PATH_MAX];
    ssize_t n;
    if (env && *env) {
        snprintf(buf, size, "%s/quick.yaml", env);
        if (file_exists(buf))
            return 0;
    }
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        char *dir;
        exe[n] = '\0';
        dir = dirname(exe);
        snprintf(buf, size, "%s/../share/qualify/shapes/quick.yaml", dir);
        if (file_exists(buf))
            return 0;
        snprintf(buf, size, "%s/../shapes/quick.yaml", dir);
        if (file_exists(buf))
            return 0;
    }
    snprintf(buf, size, "shapes/quick.yaml");
    return file_exists(buf) ? 0 : -1;
}

/* ---- Progress ------------------------------------------------------------- */

typedef struct progress {
    const char *outdir;
    int tty, quiet;
    double t0;
    size_t failures, run_done;
    unsigned fail_mask;
} progress;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_progress(void *user, const qf_result *r, size_t done, size_t total, int resumed)
{
    progress *pg = user;
    if (pg->fail_mask & (1u << r->verdict))
        pg->failures++;
    if (!resumed)
        pg->run_done++;
    if (pg->quiet)
        return;
    if (pg->tty) {
        /* One line redrawn in place: bar, count, ETA, failures so far. */
        char bar[31];
        size_t i, fill = total ? 30 * done / total : 30;
        double el = mono() - pg->t0, eta;
        size_t left = total - done;
        for (i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        eta = pg->run_done ? el / (double)pg->run_done * (double)left : 0;
        fprintf(stderr, "\r[%s] %zu/%zu  ETA %d:%02d  failures %zu ", bar, done, total, (int)(eta / 60),
                (int)fmod(eta, 60), pg->failures);
        if (pg->fail_mask & (1u << r->verdict)) {
            /* Names and the kernel's reason are shown, never obeyed: the
             * terminal gets no control character of theirs (_escape.h). */
            fprintf(stderr, "\r\033[K%s ", qf_verdict_name(r->verdict));
            _qf_esc_term(stderr, r->kernel);
            fputc(' ', stderr);
            _qf_esc_term(stderr, r->case_id);
            fputs(": ", stderr);
            _qf_esc_term(stderr, r->reason);
            fputc('\n', stderr);
        }
        if (done == total)
            fputc('\n', stderr);
        fflush(stderr);
    } else {
        printf("[%zu/%zu] %-11s ", done, total, qf_verdict_name(r->verdict));
        _qf_esc_term(stdout, r->kernel);
        putchar(' ');
        _qf_esc_term(stdout, r->case_id);
        puts(resumed ? " (resumed)" : "");
        if (r->verdict != QF_VERDICT_QUALIFIED && r->verdict != QF_VERDICT_UNSUPPORTED && !resumed) {
            fputs("    ", stdout);
            _qf_esc_term(stdout, r->reason);
            fputs("\n    reproduce: ", stdout);
            _qf_esc_term(stdout, r->reproducer);
            putchar('\n');
            if (r->nartifacts) { /* --save-failing */
                printf("    tensors: ");
                _qf_esc_term(stdout, pg->outdir);
                putchar('/');
                _qf_esc_term(stdout, r->artifacts_dir);
                putchar('\n');
            }
            if (r->artifacts_reproducer[0]) {
                fputs("    reproduce from them: ", stdout);
                _qf_esc_term(stdout, r->artifacts_reproducer);
                putchar('\n');
            }
            if (r->artifacts_note[0]) {
                fputs("    tensors: ", stdout);
                _qf_esc_term(stdout, r->artifacts_note);
                putchar('\n');
            }
        }
        fflush(stdout);
    }
}

/* --list --shard I/N: the shard's pairs, "KERNEL CASE_ID" in plan order. */
static int list_shard(const qf_suite *suite, const qf_registry *reg, qf_runner_opts *o, unsigned index,
                      unsigned count, const char *kernel, const char *case_id)
{
    qf_runner_summary sum;
    char err[1024];
    size_t i;
    qf_status st;
    o->shard_index = index;
    o->shard_count = count;
    o->kernel_glob = kernel;
    o->case_id = case_id;
    o->list_only = 1;
    st = qf_runner_run(suite, reg, o, &sum, err, sizeof err);
    if (st != QF_OK) {
        qf_cli_error("run", "%s", err[0] ? err : qf_status_str(st));
        return st == QF_ENOMEM ? QF_EXIT_FAIL : QF_EXIT_USAGE;
    }
    for (i = 0; i < sum.n; i++) {
        _qf_esc_term(stdout, sum.results[i].kernel);
        putchar(' ');
        _qf_esc_term(stdout, sum.results[i].case_id);
        putchar('\n');
    }
    qf_runner_summary_free(&sum);
    return QF_EXIT_OK;
}

/* results.json's "shard" of a shard's run: its identity, how many pairs it
 * ran of how many in the plan, and the machine it ran on (a resumed
 * shard: the machine that finished it). */
static json_t *shard_results(const json_t *header, const qf_runner_summary *sum)
{
    json_t *sh = json_deep_copy(json_object_get(header, "shard")), *extra;
    char host[256];
    if (gethostname(host, sizeof host))
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    json_object_set_new(sh, "plan_pairs", json_integer((json_int_t)sum->plan_pairs));
    json_object_set_new(sh, "n_pairs", json_integer((json_int_t)sum->n));
    json_object_set_new(sh, "host", json_string(host));
    extra = json_object();
    json_object_set_new(extra, "shard", sh);
    return extra;
}

static void devices_provenance(const qf_runner_summary *sum, qf_provenance *prov)
{
    size_t i;
    prov->ndevices = sum->ndevices;
    for (i = 0; i < sum->ndevices; i++)
        prov->devices[i] = sum->devices[i];
    prov->device_retries = sum->device_retries;
}

/* The reports from the complete set of results (header: a shard's journal
 * header, else NULL), then what appeared in outdir during the sweep that
 * qualify did not write (cli/outdir.c): exit 1 when anything did, every
 * result written all the same. */
static int finish(const char *outdir, const qf_registry *reg, const qf_runner_summary *sum, const qf_cli_outdir *before,
                  const char *suite_path, const char *title, unsigned fail_mask, const json_t *header,
                  int save)
{
    qf_provenance prov;
    json_t *extra = header ? shard_results(header, sum) : NULL;
    int rc;
    memset(&prov, 0, sizeof prov);
    /* qualify's own revision (NULL: the tree it was built from) */
    qf_provenance_collect(&prov, NULL);
    qf_runner_gpu_provenance(&prov); /* the GPU of GPU kernels, when one ran */
    devices_provenance(sum, &prov);
    qf_cli_sandbox_provenance(reg, sum->results, sum->n, &prov); /* what confined each kernel */
    qf_provenance_add_file(&prov, suite_path);
    rc = qf_cli_write_reports("run", outdir, sum->results, sum->n, &prov, title, fail_mask, extra);
    json_decref(extra);
    qf_provenance_free(&prov);
    if (qf_cli_outdir_foreign(before, "run", outdir, sum->results, sum->n, save))
        rc = QF_EXIT_FAIL;
    return rc;
}

/* "devices: 0 (NAME) 12 pairs; 1 (NAME) OUT: why" after the counts. */
static void print_devices(const qf_runner_summary *sum)
{
    size_t i;
    if (!sum->ndevices)
        return;
    fputs("devices:", stdout);
    for (i = 0; i < sum->ndevices; i++) {
        const qf_runner_device *d = &sum->devices[i];
        printf("%s %d (", i ? ";" : "", d->index);
        _qf_esc_term(stdout, d->name);
        printf(") %zu pair(s)", d->pairs);
        if (d->out) {
            fputs(", out of the rotation: ", stdout);
            _qf_esc_term(stdout, d->why);
        }
    }
    printf("; %zu pair(s) run again\n", sum->device_retries);
}

int qf_cli_run(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"plugin", required_argument, NULL, OPT_PLUGIN},
                                             {"adapter", required_argument, NULL, OPT_ADAPTER},
                                             {"worker", required_argument, NULL, OPT_WORKER},
                                             {"claim", required_argument, NULL, OPT_CLAIM},
                                             {"jobs", required_argument, NULL, 'j'},
                                             {"resume", no_argument, NULL, OPT_RESUME},
                                             {"time", no_argument, NULL, OPT_TIME},
                                             {"reps", required_argument, NULL, OPT_REPS},
                                             {"isolate", required_argument, NULL, OPT_ISOLATE},
                                             {"timeout", required_argument, NULL, OPT_TIMEOUT},
                                             {"max-case-memory", required_argument, NULL, OPT_MAX_CASE_MEMORY},
                                             {"kernel", required_argument, NULL, OPT_KERNEL},
                                             {"case", required_argument, NULL, OPT_CASE},
                                             {"seed", required_argument, NULL, OPT_SEED},
                                             {"fail-on", required_argument, NULL, OPT_FAIL_ON},
                                             {"list", no_argument, NULL, OPT_LIST},
                                             {"shard", required_argument, NULL, OPT_SHARD},
                                             {"no-refute", no_argument, NULL, OPT_NO_REFUTE},
                                             {"save-failing", optional_argument, NULL, OPT_SAVE_FAILING},
                                             {"devices", required_argument, NULL, OPT_DEVICES},
                                             {"kernel-memory", required_argument, NULL, OPT_KMEM},
                                             {"kernel-cpu", required_argument, NULL, OPT_KCPU},
                                             {"kernel-procs", required_argument, NULL, OPT_KPROCS},
                                             {"kernel-fsize", required_argument, NULL, OPT_KFSIZE},
                                             {"kernel-disk", required_argument, NULL, OPT_KDISK},
                                             {"require-sandbox", no_argument, NULL, OPT_REQUIRE_SANDBOX},
                                             {"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
                                             {"kernel-writable", required_argument, NULL, OPT_KWRITABLE},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *outdir = "qualify-out", *kernel = NULL, *case_id = NULL;
    const char **plugins = NULL;
    /* A fixed table: no allocation to release on every early return. */
    const char *adapters[16], *workers[16], *claims[16];
    char repro[8192];
    size_t nplugins = 0, nadapters = 0, nworkers = 0, nclaims = 0, i;
    int jobs = 0, resume = 0, timing = 0, list = 0, quiet = 0, have_seed = 0, c, rc = QF_EXIT_OK;
    unsigned shard_index = 0, shard_count = 0; /* --shard I/N; 0: unsharded */
    int max_mem_given = 0;
    /* --save-failing: on within the default limits unless told otherwise */
    int save = 1;
    size_t save_pair = QF_RUNNER_SAVE_PAIR_DEFAULT, save_total = QF_RUNNER_SAVE_TOTAL_DEFAULT;
    int isolate = -1; /* 1 server, 0 pair, -1 not given: server, or pair with --time */
    long reps = 0;
    double timeout = 60;
    uint64_t seed = 0;
    unsigned fail_mask = (1u << QF_VERDICT_FAILED) | (1u << QF_VERDICT_CRASHED) | (1u << QF_VERDICT_TIMEOUT);
    char suite_path[PATH_MAX], err[1024], journal[PATH_MAX + 32], seed_arg[40];
    qf_suite *suite = NULL;
    qf_registry *reg = NULL;
    qf_runner_opts o = qf_runner_opts_default();
    qf_kernel_limits lim = qf_kernel_limits_default();
    qf_runner_summary sum;
    qf_cli_outdir before = {0};
    progress pg;
    qf_status st;
    json_t *header = NULL, *av;
    char *end;

    memset(&sum, 0, sizeof sum);
    /* argv as typed, before getopt_long permutes it. */
    av = qf_cli_argv_json(argc, argv);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': outdir = optarg; break;
        case OPT_PLUGIN: {
            const char **np = realloc(plugins, (nplugins + 1) * sizeof *np);
            if (!np) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "out of memory");
            }
            plugins = np;
            plugins[nplugins++] = optarg;
            break;
        }
        case OPT_ADAPTER:
            if (nadapters == sizeof adapters / sizeof adapters[0]) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "at most %zu --adapter options", nadapters);
            }
            adapters[nadapters++] = optarg;
            break;
        case OPT_WORKER:
            if (nworkers == sizeof workers / sizeof workers[0]) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "at most %zu --worker options", nworkers);
            }
            workers[nworkers++] = optarg;
            break;
        case OPT_CLAIM:
            if (nclaims == sizeof claims / sizeof claims[0]) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "at most %zu --claim options", nclaims);
            }
            claims[nclaims++] = optarg;
            break;
        case 'j':
            errno = 0;
            jobs = (int)strtol(optarg, &end, 10);
            if (errno || *end || jobs < 1 || jobs > 1024) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--jobs '%s': an integer from 1 to 1024 expected", optarg);
            }
            break;
        case OPT_ISOLATE:
            if (strcmp(optarg, "server") && strcmp(optarg, "pair")) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--isolate '%s': server or pair expected", optarg);
            }
            isolate = !strcmp(optarg, "server");
            break;
        case OPT_RESUME: resume = 1; break;
        case OPT_TIME: timing = 1; break;
        case OPT_REPS:
            errno = 0;
            reps = strtol(optarg, &end, 10);
            if (errno || *end || reps < 1 || reps > 1000) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--reps '%s': an integer from 1 to 1000 expected", optarg);
            }
            break;
        case OPT_TIMEOUT:
            errno = 0;
            timeout = strtod(optarg, &end);
            if (errno || *end || !(timeout > 0) || !isfinite(timeout)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--timeout '%s': a positive number of seconds expected",
                                          optarg);
            }
            break;
        case OPT_MAX_CASE_MEMORY:
            max_mem_given = 1;
            if (qf_runner_parse_bytes(optarg, &o.max_case_bytes)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run",
                                          "--max-case-memory '%s': a positive size expected (bytes, or a "
                                          "number with K, M, G or T: 512M, 4G)",
                                          optarg);
            }
            break;
        case OPT_KERNEL: kernel = optarg; break;
        case OPT_CASE: case_id = optarg; break;
        case OPT_SEED:
            errno = 0;
            seed = strtoull(optarg, &end, 0);
            if (errno || *end || !*optarg || *optarg == '-') {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--seed '%s': a non-negative integer expected", optarg);
            }
            have_seed = 1;
            break;
        case OPT_FAIL_ON:
            if (qf_cli_parse_fail_on(optarg, &fail_mask)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run",
                                          "--fail-on '%s': valid choices are marginal, mistrusted, unchecked "
                                          "(comma-separated)",
                                          optarg);
            }
            break;
        case OPT_LIST: list = 1; break;
        case OPT_SHARD:
            if (qf_runner_parse_shard(optarg, &shard_index, &shard_count)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run",
                                          "--shard '%s': I/N expected with 0 <= I < N <= %d (0-based: "
                                          "0/3, 1/3 and 2/3 are the shards of a 3-way split)",
                                          optarg, QF_RUNNER_MAX_SHARDS);
            }
            break;
        case OPT_NO_REFUTE: o.no_refute = 1; break;
        case OPT_SAVE_FAILING:
            if (parse_save_failing(optarg, &save, &save_pair, &save_total)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run",
                                          "--save-failing '%s': all, off, or SIZE[,TOTAL] expected (bytes, or "
                                          "a number with K, M, G or T: 64M,1G)",
                                          optarg);
            }
            break;
        case OPT_DEVICES: {
            int idx[QF_RUNNER_DEVICES_MAX], all;
            size_t n;
            /* the syntax now; the indices against the devices found, by
             * the runner once it probed them */
            if (qf_runner_parse_devices(optarg, idx, QF_RUNNER_DEVICES_MAX, &n, &all, err, sizeof err)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "%s", err);
            }
            o.devices = optarg;
            break;
        }
        case OPT_REQUIRE_SANDBOX: _qf_sbx_set_mode(QF_SANDBOX_REQUIRE); break;
        case OPT_NO_SANDBOX: _qf_sbx_set_mode(QF_SANDBOX_OFF); break;
        case OPT_KWRITABLE:
            if (_qf_sbx_allow_write(optarg)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--kernel-writable '%s': %s", optarg, strerror(errno));
            }
            break;
        case OPT_KMEM:
        case OPT_KFSIZE:
        case OPT_KDISK:
        case OPT_KPROCS:
            if (parse_limit(optarg, c == OPT_KPROCS,
                            c == OPT_KMEM     ? &lim.memory
                            : c == OPT_KFSIZE ? &lim.fsize
                            : c == OPT_KDISK  ? &lim.disk
                                              : &lim.procs)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "%s '%s': %s expected",
                                          c == OPT_KMEM     ? "--kernel-memory"
                                          : c == OPT_KFSIZE ? "--kernel-fsize"
                                          : c == OPT_KDISK  ? "--kernel-disk"
                                                            : "--kernel-procs",
                                          optarg,
                                          c == OPT_KPROCS ? "a non-negative integer"
                                                          : "a size in bytes (K, M, G, T suffixes), 0 for none");
            }
            break;
        case OPT_KCPU:
            errno = 0;
            lim.cpu_s = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(lim.cpu_s >= 0) || !isfinite(lim.cpu_s)) {
                json_decref(av);
                free(plugins);
                return qf_cli_usage_error("run", "--kernel-cpu '%s': a non-negative number of seconds expected",
                                          optarg);
            }
            break;
        case 'q': quiet = 1; break;
        case 'h':
            fputs(help_text, stdout);
            json_decref(av);
            free(plugins);
            return QF_EXIT_OK;
        case ':':
            json_decref(av);
            free(plugins);
            return qf_cli_usage_error("run", "option '%s' needs a value (see qualify run --help)",
                                      argv[optind - 1]);
        default:
            json_decref(av);
            free(plugins);
            return qf_cli_usage_error("run", "unknown option '%s' (see qualify run --help)",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind > 1) {
        json_decref(av);
        free(plugins);
        return qf_cli_usage_error("run", "one suite file expected, got %d arguments", argc - optind);
    }
    if (optind < argc) {
        snprintf(suite_path, sizeof suite_path, "%s", argv[optind]);
    } else if (default_suite(suite_path, sizeof suite_path)) {
        json_decref(av);
        free(plugins);
        return qf_cli_usage_error("run", "no suite given and the default quick.yaml was not found "
                                         "(set QUALIFY_SUITE_DIR or name a suite file)");
    }

    st = qf_suite_load(suite_path, &suite, err, sizeof err);
    if (st != QF_OK) {
        qf_cli_error("run", "%s", err);
        json_decref(av);
        free(plugins);
        return QF_EXIT_USAGE;
    }
    if (have_seed) {
        /* One seed for every group: the case ids carry it, so reproducers
         * need --seed too (the id says seed=S). */
        static uint64_t one;
        one = seed;
        for (i = 0; i < suite->ngroups; i++) {
            suite->groups[i].nseeds = 1;
            suite->groups[i].seeds = &one;
        }
    }
    if (list && !shard_count) {
        qf_suite_cases cs;
        st = qf_suite_expand(suite, &cs, err, sizeof err);
        if (st != QF_OK) {
            qf_cli_error("run", "%s", err);
            rc = QF_EXIT_USAGE;
        } else {
            for (i = 0; i < cs.n; i++) { /* a suite's text: shown, never obeyed */
                _qf_esc_term(stdout, cs.cases[i].id);
                putchar('\n');
            }
            qf_suite_cases_free(&cs);
        }
        goto out;
    }

    /* Before any kernel process starts (workers, servers: below): what is
     * in the output directory, to tell what a kernel put there. */
    if (qf_cli_outdir_note(&before, outdir))
        fprintf(stderr, "qualify run: warning: cannot list %s: %s\n", outdir, strerror(errno));
    qf_runner_set_kernel_limits(&lim);
    if ((rc = qf_cli_sandbox_check("run", quiet)) != QF_EXIT_OK)
        goto out;
    /* The output directory and the suite, not the claim files: a kernel
     * server reads those (they are the kernels' own words anyway). */
    if (!list && (rc = qf_cli_sandbox_hide("run", outdir, (const char *const[]){suite_path}, 1)) != QF_EXIT_OK)
        goto out;
    {
        /* The suite's workers and claim files first, then those of the
         * command line (a later claim for the same kernel wins). */
        const char *allw[16 + QF_SUITE_MAX_WORKERS], *allc[16 + QF_SUITE_MAX_CLAIMS];
        qf_cli_sources src = {plugins, nplugins, adapters, nadapters, allw, 0, allc, 0, 0};
        for (i = 0; i < suite->nworkers && src.nworkers < sizeof allw / sizeof allw[0]; i++)
            allw[src.nworkers++] = suite->workers[i];
        for (i = 0; i < nworkers && src.nworkers < sizeof allw / sizeof allw[0]; i++)
            allw[src.nworkers++] = workers[i];
        for (i = 0; i < suite->nclaims && src.nclaims < sizeof allc / sizeof allc[0]; i++)
            allc[src.nclaims++] = suite->claims[i];
        for (i = 0; i < nclaims && src.nclaims < sizeof allc / sizeof allc[0]; i++)
            allc[src.nclaims++] = claims[i];
        if ((rc = qf_cli_registry("run", &src, &reg)) != QF_EXIT_OK)
            goto out;
        /* Timing measures the kernel in a process of its own: the round
         * trips to a server would be timed with it.  A server takes no
         * memory limit when it may serve a GPU kernel (docs/security.md):
         * it is told whether this sweep plans one, so that a CPU-only sweep
         * of a GPU-enabled build keeps the limit. */
        if (!list && (isolate < 0 ? !timing : isolate)) {
            setenv("QUALIFY_SERVER_DEVICE", plans_device_kernel(suite, reg, kernel) ? "1" : "0", 1);
            if ((rc = qf_cli_route_servers("run", &src, reg)) != QF_EXIT_OK)
                goto out;
        }
    }
    if (list) { /* with --shard: the slice needs the registry's kernels */
        rc = list_shard(suite, reg, &o, shard_index, shard_count, kernel, case_id);
        goto out;
    }
    if (qf_cli_mkdir_p(outdir)) {
        fprintf(stderr, "qualify run: cannot create the output directory %s: %s\n", outdir, strerror(errno));
        rc = QF_EXIT_USAGE;
        goto out;
    }
    if ((rc = qf_cli_sandbox_outdir("run", outdir)) != QF_EXIT_OK)
        goto out;
    snprintf(journal, sizeof journal, "%s/journal.jsonl", outdir);
    /* A fresh sweep starts its failing pairs' tensors afresh, as its
     * journal; --resume keeps those of the pairs it keeps. */
    if (!resume) {
        int kept = 0;
        if (qf_runner_artifacts_clear(outdir, &kept, err, sizeof err) != QF_OK)
            qf_cli_error("run", "warning: %s", err);
        else if (!kept)
            qf_cli_outdir_forget(&before, "failing"); /* removed: its names are new again */
        else if (kept && save)
            fprintf(stderr,
                    "qualify run: warning: %s/failing is not one --save-failing made (no marker in it): left as it "
                    "is, and failing pairs' tensors go into it\n",
                    outdir);
    }

    header = json_object();
    json_object_set_new(header, "suite", json_string(suite_path));
    json_object_set_new(header, "argv", av);
    av = NULL;
    {
        /* What makes two runs one sweep: a merge checks it of shards,
         * --resume of every journal (docs/cli.md "--resume").  The options
         * are those that change results. */
        json_t *opts = json_pack("{s:o, s:o, s:o, s:b, s:f, s:o, s:o}", "seed",
                                 have_seed ? json_sprintf("%llu", (unsigned long long)seed) : json_null(),
                                 "kernel", kernel ? json_string(kernel) : json_null(), "case",
                                 case_id ? json_string(case_id) : json_null(), "no_refute", o.no_refute,
                                 "timeout_s", timeout, "max_case_memory",
                                 max_mem_given ? json_integer((json_int_t)o.max_case_bytes) : json_null(),
                                 "claims", json_array());
        json_t *id;
        for (i = 0; opts && i < suite->nclaims + nclaims; i++) {
            const char *cf = i < suite->nclaims ? suite->claims[i] : claims[i - suite->nclaims];
            char hex[QF_SHA256_HEX];
            json_array_append_new(json_object_get(opts, "claims"),
                                  json_string(qf_sha256_file(cf, hex) == QF_OK ? hex : cf));
        }
        id = !opts         ? NULL
             : shard_count ? qf_cli_shard_identity(shard_index, shard_count, suite_path, suite->name, reg, opts)
                           : qf_cli_sweep_identity(suite_path, suite->name, reg, opts);
        if (!id || json_object_set_new(header, shard_count ? "shard" : "sweep", id)) {
            fprintf(stderr, "qualify run: %s: cannot hash the suite for the sweep's identity\n", suite_path);
            rc = QF_EXIT_USAGE;
            goto out;
        }
        o.shard_index = shard_index;
        o.shard_count = shard_count;
    }

    memset(&pg, 0, sizeof pg);
    pg.tty = isatty(STDERR_FILENO);
    pg.outdir = outdir;
    pg.quiet = quiet;
    pg.t0 = mono();
    pg.fail_mask = fail_mask;
    o.suite_arg = suite_path;
    o.plugins = plugins;
    o.nplugins = nplugins;
    repro[0] = '\0';
    if (have_seed) {
        snprintf(seed_arg, sizeof seed_arg, " --seed %llu", (unsigned long long)seed);
        strcat(repro, seed_arg);
    }
    /* Reproducers name the adapters too (single-quoted; a spec holding a
     * quote is rare enough to be written as it is). */
    for (i = 0; i < nadapters; i++)
        if (strlen(repro) + strlen(adapters[i]) + 14 < sizeof repro && !strchr(adapters[i], '\'')) {
            strcat(repro, " --adapter '");
            strcat(repro, adapters[i]);
            strcat(repro, "'");
        }
    for (i = 0; i < nclaims; i++)
        if (strlen(repro) + strlen(claims[i]) + 14 < sizeof repro && !strchr(claims[i], '\'')) {
            strcat(repro, " --claim '");
            strcat(repro, claims[i]);
            strcat(repro, "'");
        }
    for (i = 0; i < nworkers; i++)
        if (strlen(repro) + strlen(workers[i]) + 14 < sizeof repro && !strchr(workers[i], '\'')) {
            strcat(repro, " --worker '");
            strcat(repro, workers[i]);
            strcat(repro, "'");
        }
    if (repro[0])
        o.reproducer_args = repro;
    o.kernel_glob = kernel;
    o.case_id = case_id;
    o.journal_path = journal;
    o.save_dir = save ? outdir : NULL;
    o.save_pair_max = save_pair;
    o.save_total_max = save_total;
    o.resume = resume;
    /* default: every usable core (affinity and cgroup quota); timing runs
     * alone so that pairs do not slow each other down */
    o.jobs = jobs ? jobs : timing ? 1 : qf_usable_cores();
    o.timeout_s = timeout;
    o.time = timing;
    o.reps = (size_t)reps;
    o.header = header;
    o.progress = on_progress;
    o.progress_user = &pg;
    st = qf_runner_run(suite, reg, &o, &sum, err, sizeof err);
    if (st != QF_OK) {
        qf_cli_error("run", "%s", err[0] ? err : qf_status_str(st));
        rc = st == QF_EIO || st == QF_ENOMEM ? QF_EXIT_FAIL : QF_EXIT_USAGE;
        goto out;
    }
    /* A killed write is routine; a line that was never a record, or a lost
     * header, is not: those are warned even with -q (docs/runner.md "Resume"). */
    if ((sum.journal_torn & QF_JOURNAL_TORN) && !quiet)
        fprintf(stderr, "qualify run: %s: the last record was torn (a killed write) and was cut off\n",
                journal);
    if (sum.journal_torn & QF_JOURNAL_DROPPED)
        fprintf(stderr, "qualify run: %s: warning: the last line was not a case record; it was dropped\n",
                journal);
    if (sum.journal_torn & QF_JOURNAL_REHEADED)
        fprintf(stderr, "qualify run: %s: warning: the journal's header line was torn; a new header was written\n",
                journal);

    /* Reports from the complete set of results, once every kernel process
     * has ended (docs/security.md): none is left to touch them. */
    _qf_worker_stop_everything();
    _qf_sbx_cleanup();
    rc = finish(outdir, reg, &sum, &before, suite_path, suite->name, fail_mask, shard_count ? header : NULL, save);
    rc = qf_cli_nothing_ran("run", sum.results, sum.n, rc, shard_count != 0);

    if (!quiet) {
        int v;
        _qf_esc_term(stdout, suite->name ? suite->name : suite_path);
        printf(": %zu case(s)", sum.n);
        if (sum.resumed)
            printf(" (%zu resumed)", sum.resumed);
        printf(":");
        for (v = 0; v < QF_VERDICT_COUNT; v++)
            if (sum.count[v])
                printf(" %zu %s", sum.count[v], qf_verdict_name((qf_verdict)v));
        puts(qf_report_ran(sum.results, sum.n) ? "" : "; nothing ran: not a pass");
        print_devices(&sum);
        fputs("journal: ", stdout);
        _qf_esc_term(stdout, journal);
        putchar('\n');
        {
            size_t saved = 0;
            for (i = 0; i < sum.n; i++)
                saved += sum.results[i].nartifacts > 0;
            if (saved) {
                printf("tensors of %zu failing pair(s): ", saved);
                _qf_esc_term(stdout, outdir);
                fputs("/failing/ (results.json: artifacts, artifacts_reproducer)\n", stdout);
            }
        }
    }
out:
    qf_cli_outdir_free(&before);
    json_decref(av);
    json_decref(header);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
    qf_suite_free(suite);
    free(plugins);
    return rc;
}
