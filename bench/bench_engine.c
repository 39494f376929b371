/* bench_engine.c: the runner's engine cost per pair with kernel servers
 * (docs/runner.md "Kernel servers"; issue 15), measured on a kernel whose
 * init is expensive, as a GPU kernel's context and module loads are.
 *
 * The kernel is gemm.slowinit.crashy of tests/runner/plugin_slowinit.c: its
 * init sleeps 50 ms and counts itself (one byte appended to a log file),
 * and it crashes by SIGSEGV on the seeds that are 199 modulo 200, so a run
 * of N tiny float32 GEMM pairs (M = N = K = 4, seeds 0 .. N-1) has N / 200
 * deliberate crashes, each taking its kernel server down: that pair is
 * CRASHED, the server is restarted for the slot's next pair (one more
 * init).  The sweep runs through qf_runner_run with the plugin's kernels
 * routed to kernel servers (qf_worker_route, as `qualify run --isolate
 * server` does), then, for comparison, a short sweep of the same kernel
 * with a kernel child per pair (`--isolate pair`: one init per pair).
 * Every pair must be QUALIFIED except the chosen crashes (CRASHED): a
 * broken run measures nothing.
 *
 * Targets (issue 15): pairs/s >= 300 and init calls <= 4 (+ restarts)
 * for 2,000 pairs with --jobs 2.
 *
 * The cost of the sandbox (issue 26, docs/security.md "The sandbox"): the
 * server sweep runs twice more, unconfined (the sandbox off) and confined,
 * alternated, the best of two each; with QUICK_SUITE, `qualify run` of it
 * the same way (`--no-sandbox` and not).  The last lines:
 *   sandbox: server pairs/s = U unconfined, C confined (C/U = R); quick suite = A s unconfined, B s confined (B/A = S)
 *   engine: pairs/s = P, init calls = I, restarts = R
 *
 * usage: bench_engine QUALIFY_BIN SLOWINIT_PLUGIN [pairs] [jobs] [pair-mode pairs] [QUICK_SUITE]
 *   defaults 2000 pairs, 2 jobs, 100 pairs for the per-pair comparison.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_worker.h"
#include "_sandbox.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) ? 0 : (long)sb.st_size;
}

/* One sweep of n pairs: seconds, or < 0 when a pair is not what the
 * plugin makes it (QUALIFIED, or CRASHED on a crash seed); *crashes
 * counts the crashes. */
static double sweep(const char *plugin, const char *server_cmd, int n, int jobs, long *crashes)
{
    char text[512], err[1024];
    qf_suite *s = NULL;
    qf_registry *reg = NULL;
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    size_t i, routed = 0;
    double t;
    int bad = 0;
    snprintf(text, sizeof text,
             "suite: bench-engine\nrefute: false\nop: gemm\nkernels: [gemm.slowinit.crashy]\n"
             "dtypes: [float32]\nshapes: {M: [4], N: [4], K: [4]}\nseeds: %d\n",
             n);
    if (qf_suite_load_mem(text, strlen(text), "bench-engine.yaml", &s, err, sizeof err) != QF_OK ||
        qf_registry_create(&reg) != QF_OK || qf_registry_load_plugin(reg, plugin) != QF_OK) {
        fprintf(stderr, "bench_engine: %s%s\n", err, reg ? qf_registry_error(reg) : "");
        return -1;
    }
    if (server_cmd && (qf_worker_route(reg, server_cmd, &routed, err, sizeof err) != QF_OK || routed != 2)) {
        fprintf(stderr, "bench_engine: the kernel server: %s (%zu kernels routed)\n", err, routed);
        return -1;
    }
    o.jobs = jobs;
    o.timeout_s = 30;
    t = now();
    if (qf_runner_run(s, reg, &o, &sum, err, sizeof err) != QF_OK) {
        fprintf(stderr, "bench_engine: %s\n", err);
        return -1;
    }
    t = now() - t;
    *crashes = 0;
    for (i = 0; i < sum.n; i++) {
        int crash_seed = sum.results[i].seed % 200 == 199;
        qf_verdict want = crash_seed ? QF_VERDICT_CRASHED : QF_VERDICT_QUALIFIED;
        if (sum.results[i].verdict != want) {
            if (!bad)
                fprintf(stderr, "bench_engine: seed %llu: %s (%s)\n", (unsigned long long)sum.results[i].seed,
                        qf_verdict_name(sum.results[i].verdict), sum.results[i].reason);
            bad = 1;
        }
        *crashes += sum.results[i].verdict == QF_VERDICT_CRASHED;
    }
    qf_runner_summary_free(&sum);
    qf_registry_free(reg); /* bye to the servers: their fini */
    qf_suite_free(s);
    return bad ? -1 : t;
}

/* `qualify run SUITE` once: seconds, or < 0. */
static double quick(const char *bin, const char *suite, int confined)
{
    char cmd[4096];
    double t = now();
    int rc;
    snprintf(cmd, sizeof cmd, "'%s' run '%s' -q %s -o /tmp/qf-bench-engine-quick-%d > /dev/null 2>&1", bin, suite,
             confined ? "" : "--no-sandbox", (int)getpid());
    rc = system(cmd);
    t = now() - t;
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/qf-bench-engine-quick-%d", (int)getpid());
    if (system(cmd) != 0 || rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) > 1)
        return -1;
    return t;
}

/* The sandbox's cost, side by side (see the top). */
static int sandbox_cost(const char *bin, const char *plugin, const char *cmd, int pairs, int jobs,
                        const char *suite)
{
    double best[2] = {1e30, 1e30}, qbest[2] = {1e30, 1e30}, t;
    long c;
    int r, conf;
    for (r = 0; r < 2; r++)
        for (conf = 0; conf < 2; conf++) {
            _qf_sbx_set_mode(conf ? QF_SANDBOX_AUTO : QF_SANDBOX_OFF);
            if ((t = sweep(plugin, cmd, pairs, jobs, &c)) < 0)
                return -1;
            if (t < best[conf])
                best[conf] = t;
            if (suite) {
                if ((t = quick(bin, suite, conf)) < 0)
                    return -1;
                if (t < qbest[conf])
                    qbest[conf] = t;
            }
        }
    _qf_sbx_set_mode(QF_SANDBOX_AUTO);
    printf("sandbox: server pairs/s = %.1f unconfined, %.1f confined (C/U = %.3f)", pairs / best[0],
           pairs / best[1], best[0] / best[1]);
    if (suite)
        printf("; quick suite = %.2f s unconfined, %.2f s confined (B/A = %.3f)", qbest[0], qbest[1],
               qbest[1] / qbest[0]);
    putchar('\n');
    return 0;
}

int main(int argc, char **argv)
{
    int pairs = argc > 3 ? atoi(argv[3]) : 2000, jobs = argc > 4 ? atoi(argv[4]) : 2;
    int ppairs = argc > 5 ? atoi(argv[5]) : 100;
    char log[128], cmd[4096];
    long crashes = 0, pcrashes = 0, inits, pinits;
    double ts, tp;
    if (argc < 3 || pairs < 1 || jobs < 1 || ppairs < 1) {
        fprintf(stderr, "usage: bench_engine QUALIFY_BIN SLOWINIT_PLUGIN [pairs] [jobs] [pair-mode pairs]\n");
        return 2;
    }
    /* The kernels' init log, in a directory they may write (the sandbox
     * lets them write nowhere else: --kernel-writable). */
    snprintf(log, sizeof log, "/tmp/qf-bench-engine-%d", (int)getpid());
    mkdir(log, 0700);
    if (_qf_sbx_allow_write(log)) {
        perror(log);
        return 1;
    }
    strcat(log, "/init");
    setenv("QF_INIT_LOG", log, 1); /* inherited by the servers and kernel children */
    snprintf(cmd, sizeof cmd, "exec '%s' kernel-server --plugin '%s'", argv[1], argv[2]);

    unlink(log);
    tp = sweep(argv[2], NULL, ppairs, jobs, &pcrashes);
    pinits = file_size(log);
    unlink(log);
    ts = sweep(argv[2], cmd, pairs, jobs, &crashes);
    inits = file_size(log);
    unlink(log);
    if (tp < 0 || ts < 0)
        return 1;

    printf("--isolate pair:   %d pairs in %.2f s: %.1f pairs/s, %ld init calls, %ld crashes\n", ppairs, tp,
           ppairs / tp, pinits, pcrashes);
    printf("--isolate server: %d pairs in %.2f s: %.1f pairs/s, %ld init calls, %ld crashes (%d jobs)\n", pairs, ts,
           pairs / ts, inits, crashes, jobs);
    fflush(stdout);
    if (sandbox_cost(argv[1], argv[2], cmd, pairs, jobs, argc > 6 ? argv[6] : NULL))
        return 1;
    unlink(log);
    *strrchr(log, '/') = '\0';
    rmdir(log);
    printf("engine: pairs/s = %.1f, init calls = %ld, restarts = %ld\n", pairs / ts, inits, crashes);
    return 0;
}
