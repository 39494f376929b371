/* bench_memory.c: peak resident memory of `qualify run` on one case,
 * against the bytes of the case's input and output tensors.
 *
 * Issue 4: "peak resident memory stays within 3x the largest case's input
 * and output tensors plus a fixed overhead".  Each measurement forks a
 * child that loads the suite and runs one (case, kernel) pair through
 * qf_runner_run (which forks its own worker, and the worker the kernel
 * child); wait4() on that child returns ru_maxrss, the largest resident
 * set of the child and every descendant it waited for, i.e. the peak of the
 * worker (inputs, shared output buffers, reference) or of the kernel child.
 * The fixed overhead is measured the same way on a child that runs nothing.
 *
 * Cases:
 *   quick    the largest case of shapes/quick.yaml (by input + output
 *            bytes), with its built-in kernels;
 *   big      an n x n x n float32 GEMM (default n = 8192) checked by
 *            sampling (max_elements 100000), run by a bench-only kernel,
 *            gemm.bench.constant: the inputs are normal{mean: 1, std: 0}
 *            (every element 1.0), so the exact product is K in every
 *            element and the kernel writes it without doing the 2 n^3
 *            flops (a real float32 GEMM of that size takes hours on one
 *            core).  What is measured is the runner itself: input
 *            generation and quantization of both operands, the poisoned
 *            and guarded output buffers of both runs, the canary / poison
 *            scan, and the sampled reference (qf_gemm_acc_element per
 *            sampled element, streaming: nothing of size n^3 or n^2 x
 *            doubles beyond the inputs is materialized).
 *
 * usage: bench_memory [--n N] [--max-elements T] [--suite quick.yaml] [--no-big]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_runner.h"
#include "qf_suite.h"

typedef struct shared_out {
    int ran;
    qf_verdict verdict;
    char reason[512];
    size_t n_elements, n_checked, count;
} shared_out;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every element of d is K * a[0] * b[0]: exact for constant inputs. */
static qf_status run_constant(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_format *f = qf_format_get(QF_FLOAT32);
    const uint32_t *a = call->in[0].data, *b = call->in[1].data;
    uint32_t *d = call->out[0].data, v;
    size_t i, n = g->m * g->n * (g->batch ? g->batch : 1);
    (void)ctx;
    v = (uint32_t)qf_format_encode(f, (double)g->k * qf_format_decode(f, a[0]) * qf_format_decode(f, b[0]),
                                   QF_ROUND_RNE, 0, 0, 0);
    for (i = 0; i < n; i++)
        d[i] = v;
    return QF_OK;
}

static qf_status add_constant_kernel(qf_registry *r)
{
    static qf_dtype_tuple t[1];
    qf_kernel k;
    t[0].name = "f32";
    t[0].in[0] = t[0].in[1] = t[0].in[2] = QF_FLOAT32;
    t[0].out[0] = QF_FLOAT32;
    t[0].arith = qf_arith_claim_default();
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = "gemm.bench.constant";
    k.op = QF_OP_GEMM;
    k.kind = QF_KERNEL_KNOWN_BAD; /* right only for constant inputs */
    k.description = "bench only: K * a[0] * b[0] everywhere";
    k.backend = "cpu";
    k.archs = "cpu";
    k.dtypes = t;
    k.n_dtypes = 1;
    k.run = run_constant;
    return qf_registry_add(r, &k);
}

/* Run (suite, case_id) in a forked child; peak RSS in KiB of that child's
 * tree, or -1.  suite NULL: a child that does nothing (fixed overhead). */
static long measure(const qf_suite *suite, const qf_registry *reg, const char *case_id, shared_out *so,
                    double *wall)
{
    struct rusage ru;
    int st = 0;
    double t0 = now();
    pid_t pid;
    memset(so, 0, sizeof *so);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        qf_runner_opts o = qf_runner_opts_default();
        qf_runner_summary sum;
        char err[512];
        if (!suite)
            _exit(0);
        o.case_id = case_id;
        o.timeout_s = 600;
        if (qf_runner_run(suite, reg, &o, &sum, err, sizeof err) != QF_OK) {
            snprintf(so->reason, sizeof so->reason, "%s", err);
            _exit(1);
        }
        so->ran = 1;
        so->count = sum.n;
        if (sum.n) {
            so->verdict = sum.results[0].verdict;
            snprintf(so->reason, sizeof so->reason, "%s", sum.results[0].reason);
            so->n_elements = sum.results[0].n_elements;
            so->n_checked = sum.results[0].n_checked;
        }
        _exit(0);
    }
    if (wait4(pid, &st, 0, &ru) != pid)
        return -1;
    *wall = now() - t0;
    return ru.ru_maxrss;
}

/* Input + output tensor bytes of a case (gemm and row-wise ops). */
static double case_bytes(const qf_suite_case *c)
{
    const char *op = qf_suite_op_name(c->op);
    if (!strcmp(op, "gemm")) {
        const qf_format *a = qf_suite_case_format(c, "a"), *b = qf_suite_case_format(c, "b"),
                        *o = qf_suite_case_format(c, "out");
        double bt = c->ndims > 3 && c->dims[3] ? (double)c->dims[3] : 1, m = (double)c->dims[0],
               n = (double)c->dims[1], k = (double)c->dims[2];
        return bt * (m * k * a->bits / 8.0 + k * n * b->bits / 8.0 + m * n * o->bits / 8.0);
    }
    {
        const qf_format *in = qf_suite_case_format(c, "in"), *o = qf_suite_case_format(c, "out");
        double rc = (double)c->dims[0] * (double)c->dims[1];
        return rc * ((in ? in->bits : 32) + (o ? o->bits : 32)) / 8.0;
    }
}

static void report(const char *what, long kb, long base_kb, double bytes, const shared_out *so, double wall)
{
    double mib = kb / 1024.0, tmib = bytes / 1048576.0, base = base_kb / 1024.0;
    printf("%-6s peak RSS %9.1f MiB  tensors %9.3f MiB  ratio %7.2f  (peak - overhead) / tensors %6.2f  "
           "%.1f s\n",
           what, mib, tmib, tmib > 0 ? mib / tmib : 0.0, tmib > 0 ? (mib - base) / tmib : 0.0, wall);
    printf("       verdict %s (%s), %zu of %zu elements checked, %zu pair(s)\n",
           so->ran ? qf_verdict_name(so->verdict) : "NOT RUN", so->reason, so->n_checked, so->n_elements,
           so->count);
}

int main(int argc, char **argv)
{
    const char *quick = "shapes/quick.yaml";
    unsigned long long n = 8192, target = 100000;
    int big = 1, i;
    long base_kb, kb;
    double wall = 0;
    char err[512], yaml[1024];
    qf_registry *reg = NULL;
    qf_suite *suite = NULL;
    qf_suite_cases cases;
    shared_out *so = mmap(NULL, sizeof *so, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max-elements") && i + 1 < argc)
            target = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--suite") && i + 1 < argc)
            quick = argv[++i];
        else if (!strcmp(argv[i], "--no-big"))
            big = 0;
        else {
            fprintf(stderr, "usage: %s [--n N] [--max-elements T] [--suite quick.yaml] [--no-big]\n",
                    argv[0]);
            return 2;
        }
    }
    if (so == MAP_FAILED || qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK ||
        add_constant_kernel(reg) != QF_OK) {
        fprintf(stderr, "bench_memory: cannot set up the registry\n");
        return 1;
    }
    base_kb = measure(NULL, reg, NULL, so, &wall);
    printf("fixed overhead (a forked child that runs nothing): %.1f MiB\n", base_kb / 1024.0);

    /* The largest case of quick.yaml. */
    if (qf_suite_load(quick, &suite, err, sizeof err) != QF_OK ||
        qf_suite_expand(suite, &cases, err, sizeof err) != QF_OK) {
        fprintf(stderr, "bench_memory: %s (run from the source tree or pass --suite)\n", err);
        return 1;
    } else {
        size_t c, best = 0;
        for (c = 1; c < cases.n; c++)
            if (case_bytes(&cases.cases[c]) > case_bytes(&cases.cases[best]))
                best = c;
        printf("quick: %s\n", cases.cases[best].id);
        kb = measure(suite, reg, cases.cases[best].id, so, &wall);
        report("quick", kb, base_kb, case_bytes(&cases.cases[best]), so, wall);
        qf_suite_cases_free(&cases);
        qf_suite_free(suite);
        suite = NULL;
    }

    if (big) {
        snprintf(yaml, sizeof yaml,
                 "suite: bench-memory\n"
                 "groups:\n"
                 "  - op: gemm\n"
                 "    kernels: [gemm.bench.constant]\n"
                 "    dtypes: [float32]\n"
                 "    shapes: {M: [%llu], N: [%llu], K: [%llu]}\n"
                 "    inputs: [{name: normal, mean: 1, std: 0}]\n"
                 "    sampling: {max_elements: %llu}\n",
                 n, n, n, target);
        if (qf_suite_load_mem(yaml, strlen(yaml), "bench_memory.yaml", &suite, err, sizeof err) != QF_OK ||
            qf_suite_expand(suite, &cases, err, sizeof err) != QF_OK) {
            fprintf(stderr, "bench_memory: %s\n", err);
            return 1;
        }
        printf("big: %s (gemm.bench.constant, sampled, max_elements %llu)\n", cases.cases[0].id, target);
        kb = measure(suite, reg, cases.cases[0].id, so, &wall);
        report("big", kb, base_kb, case_bytes(&cases.cases[0]), so, wall);
        qf_suite_cases_free(&cases);
        qf_suite_free(suite);
    }
    qf_registry_free(reg);
    return 0;
}
