/* bench_worker.c: throughput of tiny (case, kernel) pairs served by a
 * kernel worker (docs/workers.md) against the same GEMM in-process,
 * measured side by side in one run.
 *
 * One suite of N tiny float32 GEMM cases (M = N = K = 4, seeds 0 .. N-1) is
 * run by qf_runner_run twice per repeat, interleaved: once with the worker
 * kernel gemm.w.good of tests/runner/worker_test.c (a process per job slot,
 * the tensors in POSIX shared memory, a line of JSON each way per run), once
 * with the built-in gemm.cpu.naive.f32.  Every pair costs a process either
 * way; the built-in kernel also a kernel child, the worker kernel the
 * exchanges with its worker instead (it has no kernel child), so the ratio
 * compares those two costs.  Each figure is the fastest of the
 * repeats (preemption only ever adds time).  Target (issue 13): >= 500
 * tiny pairs/s on 2 cores with --jobs 2.
 *
 * usage: bench_worker WORKER_CMD [cases] [repeats] [jobs]
 *   WORKER_CMD: build/tests/qf_test_worker; defaults 400 cases, 3 repeats,
 *   2 jobs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qf_kernel.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_worker.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds for the sweep of kernel over the suite; < 0 on an error or a
 * pair that is not QUALIFIED (a broken benchmark measures nothing). */
static double sweep(const qf_suite *s, const qf_registry *reg, const char *kernel, int jobs)
{
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    char err[512];
    double t0;
    size_t i;
    int bad = 0;
    o.kernel_glob = kernel;
    o.jobs = jobs;
    o.timeout_s = 30;
    t0 = now();
    if (qf_runner_run(s, reg, &o, &sum, err, sizeof err) != QF_OK) {
        fprintf(stderr, "bench_worker: %s\n", err);
        return -1;
    }
    t0 = now() - t0;
    for (i = 0; i < sum.n; i++)
        bad |= sum.results[i].verdict != QF_VERDICT_QUALIFIED;
    if (bad)
        fprintf(stderr, "bench_worker: %s: a pair is not QUALIFIED (%s)\n", kernel, sum.results[0].reason);
    qf_runner_summary_free(&sum);
    return bad ? -1 : t0;
}

int main(int argc, char **argv)
{
    int cases = argc > 2 ? atoi(argv[2]) : 400, reps = argc > 3 ? atoi(argv[3]) : 3;
    int jobs = argc > 4 ? atoi(argv[4]) : 2, r;
    char text[512], err[1024];
    qf_suite *s = NULL;
    qf_registry *reg = NULL;
    double best_w = 1e30, best_i = 1e30;
    if (argc < 2 || cases < 1 || cases > 65536 || reps < 1 || jobs < 1) {
        fprintf(stderr, "usage: bench_worker WORKER_CMD [cases] [repeats] [jobs]\n");
        return 2;
    }
    snprintf(text, sizeof text,
             "suite: bench-worker\nop: gemm\nkernels: [gemm.w.good, gemm.cpu.naive.f32]\n"
             "dtypes: [float32]\nshapes: {M: [4], N: [4], K: [4]}\nseeds: %d\n",
             cases);
    if (qf_suite_load_mem(text, strlen(text), "bench.yaml", &s, err, sizeof err) != QF_OK ||
        qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK ||
        qf_worker_start(reg, argv[1], err, sizeof err) != QF_OK) {
        fprintf(stderr, "bench_worker: %s\n", err);
        qf_registry_free(reg);
        qf_suite_free(s);
        return 2;
    }
    for (r = 0; r < reps; r++) {
        double tw = sweep(s, reg, "gemm.w.good", jobs), ti = sweep(s, reg, "gemm.cpu.naive.f32", jobs);
        if (tw < 0 || ti < 0) {
            qf_registry_free(reg);
            qf_suite_free(s);
            return 1;
        }
        best_w = tw < best_w ? tw : best_w;
        best_i = ti < best_i ? ti : best_i;
    }
    printf("%d tiny GEMM pairs (M = N = K = 4), --jobs %d, fastest of %d interleaved repeats:\n", cases, jobs,
           reps);
    printf("  worker    gemm.w.good          %8.0f pairs/s\n", cases / best_w);
    printf("  in-proc   gemm.cpu.naive.f32   %8.0f pairs/s\n", cases / best_i);
    printf("  worker / in-process throughput: %.2f\n", best_i / best_w);
    qf_registry_free(reg);
    qf_suite_free(s);
    return 0;
}
