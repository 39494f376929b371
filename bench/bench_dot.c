/* bench_dot.c: the exact dot engine and the exact GEMM reference against
 * plain binary64 arithmetic and MPFR, measured side by side in one run.
 *
 * Dot products, N = 10^2 .. 10^6, inputs drawn from N(0, 1) and quantized
 * into each input class (float32, bfloat16, float16, float8_e4m3fn):
 *   ordered   s += x[i] * y[i], one binary64 accumulator, in order
 *   fast64    16 binary64 accumulators (vectorized; the fast, NOT exact,
 *             baseline)
 *   exact     qf_dot_acc_add_dot + one rounding into float32, correctly
 *             rounded (accumulator reused and cleared, as GEMM does)
 *   mpfrsum   the products in MPFR (106 bits, exact) + mpfr_sum, rounded
 *             into float32 (mpfr_t set-up outside the timing)
 * Each figure is the fastest of r interleaved repeats of a few
 * milliseconds each (the machines are shared: preemption only ever adds
 * time, so the minimum is the least disturbed); ratios come from one run.  Targets (issue): exact/fast64 <= 4
 * for float32 and <= 2 for inputs of 16 bits and less; mpfrsum/exact >= 20, both at N = 10^5.
 *
 * GEMM: qf_gemm on M = N = K = n (default 2048), bfloat16 inputs,
 * row-major, bfloat16 output codes, with 1 and 2 threads (fastest of
 * interleaved runs), against OpenBLAS dgemm on the same shape (when the
 * build found OpenBLAS); how many elements the certified fast path left to
 * the exact engine; and the exact engine alone (exact_only), once.
 * Targets (issue 15): exact/dgemm <= 2 on one thread, speedup from 1 to 2
 * threads >= 1.8.
 *
 * usage: bench_dot [--gemm-n n] [--gemm-reps r] [--no-gemm] [--reps r] [--max-n N]
 *   --gemm-n 512 for a quick run; the default (2048, 3 interleaved runs of
 *   each) takes about a minute on 2 cores.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_format_mpfr.h"

#ifdef QF_HAVE_OPENBLAS
#include <cblas.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double fastest(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[0];
}

/* ---- The methods (out of line: nothing fused or hoisted across calls) ------ */

__attribute__((noinline)) static double dot_ordered(const double *x, const double *y, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

__attribute__((noinline)) static double dot_fast64(const double *x, const double *y, size_t n)
{
    double s[16] = {0}, t = 0;
    size_t i, j;
    for (i = 0; i + 16 <= n; i += 16)
        for (j = 0; j < 16; j++)
            s[j] += x[i + j] * y[i + j];
    for (j = 0; j < 16; j++)
        t += s[j];
    for (; i < n; i++)
        t += x[i] * y[i];
    return t;
}

static qf_dot_acc g_acc;

__attribute__((noinline)) static double dot_exact(const double *x, const double *y, size_t n,
                                                  const qf_format *f)
{
    qf_dot_acc_clear(&g_acc);
    qf_dot_acc_add_dot(&g_acc, NULL, n, x, 1, y, 1, f, f);
    return (double)qf_dot_acc_round(&g_acc, qf_format_get(QF_FLOAT32), QF_ROUND_RNE, 0, 32, 0);
}

typedef struct mpfr_work {
    mpfr_t *p;
    mpfr_ptr *pp;
    mpfr_t sum;
    size_t cap;
} mpfr_work;

__attribute__((noinline)) static double dot_mpfrsum(mpfr_work *w, const double *x, const double *y, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        mpfr_set_d(w->p[i], x[i], MPFR_RNDN);
        mpfr_mul_d(w->p[i], w->p[i], y[i], MPFR_RNDN); /* exact at 106 bits */
    }
    /* correctly rounded at 24 bits, then exactly into float32's range */
    mpfr_sum(w->sum, w->pp, (unsigned long)n, MPFR_RNDN);
    return (double)qf_format_encode_mpfr(qf_format_get(QF_FLOAT32), w->sum, QF_ROUND_RNE, 0, 32, 0);
}

/* ---- Timing ------------------------------------------------------------------- */

enum { M_ORDERED, M_FAST64, M_EXACT, M_MPFR, M_COUNT };

typedef struct job {
    int method;
    const qf_format *f;
    const double *x, *y;
    size_t n;
    mpfr_work *w;
    long calls; /* per timing */
} job;

static volatile double g_sink;

static double run_job(const job *j)
{
    long c;
    double t0 = now(), s = 0;
    for (c = 0; c < j->calls; c++) {
        switch (j->method) {
        case M_ORDERED: s += dot_ordered(j->x, j->y, j->n); break;
        case M_FAST64: s += dot_fast64(j->x, j->y, j->n); break;
        case M_EXACT: s += dot_exact(j->x, j->y, j->n, j->f); break;
        default: s += dot_mpfrsum(j->w, j->x, j->y, j->n); break;
        }
    }
    g_sink += s;
    return (now() - t0) / (double)j->calls / (double)j->n * 1e9; /* ns per term */
}

/* Calls per timing so that one timing lasts about 'target' seconds. */
static void calibrate(job *j, double target)
{
    double t;
    j->calls = 1;
    for (;;) {
        double t0 = now();
        run_job(j);
        t = now() - t0;
        if (t >= target / 8 || j->calls > (1l << 26))
            break;
        j->calls *= 4;
    }
    j->calls = (long)(j->calls * (target / (t > 1e-9 ? t : 1e-9)));
    if (j->calls < 1)
        j->calls = 1;
}

/* ---- GEMM ------------------------------------------------------------------------ */

static double rnorm(uint64_t seed, uint64_t i)
{
    double u = (double)(qf_rng_u64(seed, 2 * i) >> 11) * 0x1p-53;
    double v = (double)(qf_rng_u64(seed, 2 * i + 1) >> 11) * 0x1p-53;
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

static void bench_gemm(size_t n, int reps)
{
    const qf_format *bf = qf_format_lookup("bfloat16");
    size_t nn = n * n, i, agree = 0;
    int r;
    double *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    uint64_t *code = malloc(nn * sizeof *code);
    double t1, t2, tx, terms = (double)n * (double)n * (double)n;
    qf_gemm_desc d = qf_gemm_desc_default();
    qf_gemm_stats st;

    for (i = 0; i < nn; i++) {
        a[i] = qf_format_decode(bf, qf_format_encode(bf, rnorm(11, i), QF_ROUND_RNE, 0, 32, 0));
        b[i] = qf_format_decode(bf, qf_format_encode(bf, rnorm(12, i), QF_ROUND_RNE, 0, 32, 0));
    }
    d.m = d.n = d.k = n;
    d.a = a;
    d.b = b;
    d.lda = d.ldb = d.ldd = n;
    d.fa = d.fb = bf;
    d.out = bf;
    d.d_code = code;
    d.stats = &st;

    printf("\nGEMM %zu x %zu x %zu, bfloat16 inputs, row-major NN, bfloat16 output (correctly rounded),"
           " fastest of %d interleaved runs\n",
           n, n, n, reps);
    t1 = t2 = INFINITY;
    for (r = 0; r < reps; r++) {
        double t;
        d.threads = 1;
        t = now();
        qf_gemm(&d);
        t = now() - t;
        t1 = t < t1 ? t : t1;
        d.threads = 2;
        t = now();
        qf_gemm(&d);
        t = now() - t;
        t2 = t < t2 ? t : t2;
    }
    printf("  exact qf_gemm   1 thread  %8.3f s  %6.3f ns/term\n", t1, t1 / terms * 1e9);
    printf("  exact qf_gemm   2 threads %8.3f s  %6.3f ns/term\n", t2, t2 / terms * 1e9);
    printf("  (certified fast path: %zu of %zu elements needed the exact engine)\n", st.n_exact, st.n_elements);
    /* the exact engine alone, once (the cost before the fast path) */
    d.threads = 1;
    d.exact_only = 1;
    tx = now();
    qf_gemm(&d);
    tx = now() - tx;
    d.exact_only = 0;
    printf("  exact engine    1 thread  %8.3f s  %6.3f ns/term (exact_only, one run)\n", tx, tx / terms * 1e9);
#ifdef QF_HAVE_OPENBLAS
    {
        double b1 = INFINITY, b2 = INFINITY;
        for (r = 0; r <= reps; r++) { /* the first run warms up */
            double t;
            openblas_set_num_threads(1);
            t = now();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, a, (int)n, b,
                        (int)n, 0.0, c, (int)n);
            t = now() - t;
            if (r > 0 && t < b1)
                b1 = t;
            openblas_set_num_threads(2);
            t = now();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, a, (int)n, b,
                        (int)n, 0.0, c, (int)n);
            t = now() - t;
            if (r > 0 && t < b2)
                b2 = t;
        }
        for (i = 0; i < nn; i++)
            agree += qf_format_encode(bf, c[i], QF_ROUND_RNE, 0, 32, 0) == code[i];
        printf("  OpenBLAS dgemm  1 thread  %8.3f s  %6.3f ns/term\n", b1, b1 / terms * 1e9);
        printf("  OpenBLAS dgemm  2 threads %8.3f s  %6.3f ns/term\n", b2, b2 / terms * 1e9);
        printf("  (dgemm rounded to bfloat16 equals the exact result in %.4f%% of the elements)\n",
               100.0 * (double)agree / (double)nn);
        printf("  exact engine alone / dgemm = %.2f (1 thread); dgemm speedup 1->2 threads = %.2f (a control: "
               "below 1.8 the second core was busy)\n",
               tx / b1, b1 / b2);
        printf("gemm bfloat16 %zu^3: exact/dgemm = %.2f (1 thread), %.2f (2 threads); exact speedup 1->2 "
               "threads = %.2f\n",
               n, t1 / b1, t2 / b2, t1 / t2);
    }
#else
    (void)agree;
    (void)c;
    printf("  (OpenBLAS not found at build time: no dgemm comparison)\n");
    printf("gemm bfloat16 %zu^3: exact speedup 1->2 threads = %.2f\n", n, t1 / t2);
#endif
    free(a);
    free(b);
    free(c);
    free(code);
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    static const char *const classes[] = {"float32", "bfloat16", "float16", "float8_e4m3fn"};
    enum { NC = 4 };
    size_t gemm_n = 2048, max_n = 1000000, n, i, maxlen;
    int reps = 15, gemm_reps = 3, do_gemm = 1, a, c, r, m;
    double *x[NC], *y[NC];
    double at5[NC][M_COUNT] = {{0}}, sse2_at5[NC] = {0};
    mpfr_work w;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--gemm-n") && a + 1 < argc)
            gemm_n = (size_t)strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--gemm-reps") && a + 1 < argc)
            gemm_reps = atoi(argv[++a]) > 0 ? atoi(argv[a]) : 1;
        else if (!strcmp(argv[a], "--no-gemm"))
            do_gemm = 0;
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--max-n") && a + 1 < argc)
            max_n = (size_t)strtoull(argv[++a], NULL, 0);
        else {
            fprintf(stderr,
                    "usage: bench_dot [--gemm-n n] [--gemm-reps r] [--no-gemm] [--reps r] [--max-n N]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    maxlen = max_n < 100000 ? 100000 : max_n;
    for (c = 0; c < NC; c++) {
        const qf_format *f = qf_format_lookup(classes[c]);
        x[c] = malloc(maxlen * sizeof(double));
        y[c] = malloc(maxlen * sizeof(double));
        for (i = 0; i < maxlen; i++) {
            x[c][i] =
                qf_format_decode(f, qf_format_encode(f, rnorm(1 + (uint64_t)c, i), QF_ROUND_RNE, 0, 32, 0));
            y[c][i] =
                qf_format_decode(f, qf_format_encode(f, rnorm(100 + (uint64_t)c, i), QF_ROUND_RNE, 0, 32, 0));
        }
    }
    w.cap = maxlen;
    w.p = malloc(maxlen * sizeof *w.p);
    w.pp = malloc(maxlen * sizeof *w.pp);
    for (i = 0; i < maxlen; i++) {
        mpfr_init2(w.p[i], 106);
        w.pp[i] = w.p[i];
    }
    mpfr_init2(w.sum, 24);
    qf_dot_acc_init(&g_acc);

    printf("bench_dot: exact dot engine (block kernels: %s), inputs N(0,1) quantized, fastest of %d "
           "interleaved repeats\n",
           qf_dot_isa(), reps);
    printf("ns per term; ratios: exact/fast64 and mpfrsum/exact per input class\n\n");
    printf("%9s %8s %8s |", "N", "ordered", "fast64");
    for (c = 0; c < NC; c++)
        printf(" %14.14s %8s %8s |", classes[c], "ex/f64", "mpfr/ex");
    printf("\n");

    for (n = 100; n <= max_n; n *= 10) {
        job jobs[2 + 2 * NC];
        double t[2 + 2 * NC][64], med[2 + 2 * NC];
        int nj = 0, j;
        double target = n >= 1000000 ? 0.02 : 0.004;
        jobs[nj++] = (job){M_ORDERED, NULL, x[0], y[0], n, NULL, 1};
        jobs[nj++] = (job){M_FAST64, NULL, x[0], y[0], n, NULL, 1};
        for (c = 0; c < NC; c++) {
            jobs[nj++] = (job){M_EXACT, qf_format_lookup(classes[c]), x[c], y[c], n, NULL, 1};
            jobs[nj++] = (job){M_MPFR, qf_format_lookup(classes[c]), x[c], y[c], n, &w, 1};
        }
        for (j = 0; j < nj; j++)
            calibrate(&jobs[j], target);
        for (r = 0; r < reps && r < 64; r++)
            for (j = 0; j < nj; j++)
                t[j][r] = run_job(&jobs[j]);
        for (j = 0; j < nj; j++)
            med[j] = fastest(t[j], reps < 64 ? reps : 64);
        printf("%9zu %8.3f %8.3f |", n, med[0], med[1]);
        for (c = 0; c < NC; c++)
            printf(" %14.3f %8.2f %8.1f |", med[2 + 2 * c], med[2 + 2 * c] / med[1],
                   med[3 + 2 * c] / med[2 + 2 * c]);
        printf("\n");
        if (n <= 100000) /* the summary: N = 10^5, or the largest N run */
            for (c = 0; c < NC; c++) {
                at5[c][M_FAST64] = med[1];
                at5[c][M_EXACT] = med[2 + 2 * c];
                at5[c][M_MPFR] = med[3 + 2 * c];
            }
    }

    /* which path the blocks took, and the generic (SSE2) kernels for comparison */
    printf("\nN = 10^5 details:\n");
    for (c = 0; c < NC; c++) {
        const qf_format *f = qf_format_lookup(classes[c]);
        qf_dot_counts k;
        qf_dot_reset_counts();
        dot_exact(x[c], y[c], 100000, f);
        k = qf_dot_get_counts();
        printf("  %-14s blocks: one level %llu, two levels %llu, exact term by term %llu (rejected by a "
               "proof %llu)\n",
               classes[c], (unsigned long long)k.one_level, (unsigned long long)k.two_level,
               (unsigned long long)k.general, (unsigned long long)k.rejected);
    }
    if (strcmp(qf_dot_isa(), "sse2") != 0 && qf_dot_set_isa("sse2") == QF_OK) {
        for (c = 0; c < NC; c++) {
            job jf = {M_FAST64, NULL, x[c], y[c], 100000, NULL, 1},
                je = {M_EXACT, qf_format_lookup(classes[c]), x[c], y[c], 100000, NULL, 1};
            double tf[64], te[64];
            calibrate(&jf, 0.004);
            calibrate(&je, 0.004);
            for (r = 0; r < reps && r < 64; r++) {
                tf[r] = run_job(&jf);
                te[r] = run_job(&je);
            }
            sse2_at5[c] = fastest(te, reps < 64 ? reps : 64) / fastest(tf, reps < 64 ? reps : 64);
        }
        printf("  with the generic SSE2 kernels (QF_DOT_ISA=sse2) instead: exact/fast64 =");
        for (c = 0; c < NC; c++)
            printf(" %s %.2f%s", classes[c], sse2_at5[c], c + 1 < NC ? "," : "\n");
        qf_dot_set_isa(NULL);
    }

    printf("\n");
    if (max_n < 100000)
        printf("(summary at N = %zu: --max-n is below 10^5)\n", max_n < 100 ? (size_t)100 : max_n);
    for (m = 0; m < NC; m++)
        if (at5[m][M_EXACT] > 0)
            printf("dot %s: exact/fast64 = %.2f, mpfrsum/exact = %.1f\n", classes[m],
                   at5[m][M_EXACT] / at5[m][M_FAST64], at5[m][M_MPFR] / at5[m][M_EXACT]);

    if (do_gemm && gemm_n > 0)
        bench_gemm(gemm_n, gemm_reps);

    for (i = 0; i < maxlen; i++)
        mpfr_clear(w.p[i]);
    mpfr_clear(w.sum);
    free(w.p);
    free(w.pp);
    for (c = 0; c < NC; c++) {
        free(x[c]);
        free(y[c]);
    }
    return 0;
}
