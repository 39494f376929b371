/* bench_refs.c: the correctly rounded references of element-wise and row
 * ops against a plain binary64 libm loop over the same values, side by side
 * in one run (docs/bench.md "bench_refs").
 *
 * For each op, 64 x 4096 = 262144 float32 values (uniform on [-12, 12] for
 * the activations, N(0, 1) for the rows: softmax, log-softmax, RMSNorm,
 * LayerNorm), one thread:
 *   qualify  qf_ref_* into float32, every element correctly rounded (the
 *            binary64 fast path where it decides, MPFR for the rest)
 *   libm     the textbook formula in binary64 with the C library (the
 *            speed any reference can hope for, NOT correctly rounded)
 * Each figure is the fastest of the repeats, in CPU time of the calling
 * thread (both run there: threads = 1), so that other work on a shared
 * machine, which stretches wall-clock time, does not skew the ratio.  The
 * ratios of log_softmax and layernorm come first, then the last lines read
 *   ref gelu float32 262144: qualify/libm = R
 *   ref softmax float32 262144: qualify/libm = R
 *   ref rmsnorm float32 262144: qualify/libm = R
 *   ref slow-path fraction = F
 * with F the fraction of elements that needed MPFR, over gelu and the four
 * row ops on N(0, 1) inputs (targets, issue 15: R <= 10, F <= 1e-4).
 *
 * usage: bench_refs [--reps r] [--rows R]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qf_format.h"
#include "qf_ref.h"

#define COLS 4096

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64: the bench's own values, float32-representable. */
static double draw(uint64_t *s, int normal)
{
    uint64_t z;
    double u, v;
    z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    u = (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
    if (!normal)
        return (double)(float)(-12 + 24 * u);
    z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    v = (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
    return (double)(float)(sqrt(-2 * log(u + 0x1p-60)) * cos(6.283185307179586 * v));
}

typedef enum { OP_GELU, OP_SILU, OP_SOFTMAX, OP_RMSNORM, OP_LOG_SOFTMAX, OP_LAYERNORM, OP_COUNT } op_id;
static const char *const op_name[OP_COUNT] = {"gelu", "silu", "softmax", "rmsnorm", "log_softmax", "layernorm"};

static volatile double sink;

/* The libm loop of one op over rows x COLS values. */
static void libm_loop(op_id op, const double *x, size_t rows, double *y)
{
    size_t r, c, n = rows * COLS;
    switch (op) {
    case OP_GELU:
        for (c = 0; c < n; c++)
            y[c] = 0.5 * x[c] * erfc(-x[c] * 0.7071067811865476);
        break;
    case OP_SILU:
        for (c = 0; c < n; c++)
            y[c] = x[c] / (1 + exp(-x[c]));
        break;
    case OP_SOFTMAX:
        for (r = 0; r < rows; r++) {
            const double *xr = x + r * COLS;
            double *yr = y + r * COLS, m = xr[0], s = 0;
            for (c = 1; c < COLS; c++)
                m = xr[c] > m ? xr[c] : m;
            for (c = 0; c < COLS; c++)
                s += yr[c] = exp(xr[c] - m);
            for (c = 0; c < COLS; c++)
                yr[c] /= s;
        }
        break;
    case OP_LOG_SOFTMAX:
        for (r = 0; r < rows; r++) {
            const double *xr = x + r * COLS;
            double *yr = y + r * COLS, m = xr[0], s = 0, l;
            for (c = 1; c < COLS; c++)
                m = xr[c] > m ? xr[c] : m;
            for (c = 0; c < COLS; c++)
                s += exp(xr[c] - m);
            l = log(s);
            for (c = 0; c < COLS; c++)
                yr[c] = (xr[c] - m) - l;
        }
        break;
    case OP_LAYERNORM:
        for (r = 0; r < rows; r++) {
            const double *xr = x + r * COLS;
            double *yr = y + r * COLS, mu = 0, v = 0, inv;
            for (c = 0; c < COLS; c++)
                mu += xr[c];
            mu /= COLS;
            for (c = 0; c < COLS; c++)
                v += (xr[c] - mu) * (xr[c] - mu);
            inv = 1 / sqrt(v / COLS + 1e-6);
            for (c = 0; c < COLS; c++)
                yr[c] = (xr[c] - mu) * inv;
        }
        break;
    default:
        for (r = 0; r < rows; r++) {
            const double *xr = x + r * COLS;
            double *yr = y + r * COLS, s = 0, inv;
            for (c = 0; c < COLS; c++)
                s += xr[c] * xr[c];
            inv = 1 / sqrt(s / COLS + 1e-6);
            for (c = 0; c < COLS; c++)
                yr[c] = xr[c] * inv;
        }
        break;
    }
    sink = y[n / 2];
}

static qf_status ref(op_id op, const double *x, size_t rows, qf_ref_out *o)
{
    qf_ref_opts opts = qf_ref_opts_default();
    qf_ref_norm_params np;
    opts.format = qf_format_get(QF_FLOAT32);
    opts.threads = 1;
    switch (op) {
    case OP_GELU: return qf_ref_activation(&opts, QF_REF_ACT_GELU_ERF, x, rows * COLS, o);
    case OP_SILU: return qf_ref_activation(&opts, QF_REF_ACT_SILU, x, rows * COLS, o);
    case OP_SOFTMAX: return qf_ref_softmax(&opts, x, rows, COLS, 1.0, o);
    case OP_LOG_SOFTMAX: return qf_ref_log_softmax(&opts, x, rows, COLS, 1.0, o);
    default:
        memset(&np, 0, sizeof np);
        np.rows = rows;
        np.cols = COLS;
        np.eps = 1e-6;
        return op == OP_LAYERNORM ? qf_ref_layernorm(&opts, &np, x, o) : qf_ref_rmsnorm(&opts, &np, x, o);
    }
}

int main(int argc, char **argv)
{
    int reps = 3, i, op;
    size_t rows = 64, n, slow = 0, total = 0;
    double ratio[OP_COUNT];
    double *x, *y;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows = (size_t)atol(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_refs [--reps r] [--rows R]\n");
            return 2;
        }
    }
    if (reps < 1 || rows < 1)
        return 2;
    n = rows * COLS;
    x = malloc(n * sizeof *x);
    y = malloc(n * sizeof *y);
    if (!x || !y)
        return 1;
    printf("%zu x %d float32 values per op, 1 thread, fastest of %d\n", rows, COLS, reps);
    printf("%-11s %12s %12s %10s %14s\n", "op", "qualify s", "libm s", "ratio", "slow-path");
    for (op = 0; op < OP_COUNT; op++) {
        double tq = INFINITY, tl = INFINITY;
        size_t fast = 0, special;
        uint64_t seed = 20261201;
        qf_ref_out o;
        int normal = op >= OP_SOFTMAX;
        for (i = 0; (size_t)i < n; i++)
            x[i] = draw(&seed, normal);
        if (qf_ref_out_alloc(&o, n) != QF_OK)
            return 1;
        for (i = 0; i < reps; i++) {
            double t0 = now();
            libm_loop((op_id)op, x, rows, y);
            t0 = now() - t0;
            tl = t0 < tl ? t0 : tl;
            t0 = now();
            if (ref((op_id)op, x, rows, &o) != QF_OK)
                return 1;
            t0 = now() - t0;
            tq = t0 < tq ? t0 : tq;
        }
        fast = o.n_fast;
        special = o.n_undefined;
        printf("%-11s %12.4f %12.4f %10.1f %14.3g\n", op_name[op], tq, tl, tq / tl,
               (double)(n - special - fast) / (double)n);
        ratio[op] = tq / tl;
        qf_ref_out_free(&o);
        /* The slow-path fraction of gelu and the row ops, on N(0, 1). */
        if (op == OP_SILU)
            continue;
        if (!normal) {
            seed = 20261202;
            for (i = 0; (size_t)i < n; i++)
                x[i] = draw(&seed, 1);
            if (qf_ref_out_alloc(&o, n) != QF_OK || ref((op_id)op, x, rows, &o) != QF_OK)
                return 1;
        } else if (qf_ref_out_alloc(&o, n) != QF_OK || ref((op_id)op, x, rows, &o) != QF_OK) {
            return 1;
        }
        slow += n - o.n_undefined - o.n_fast;
        total += n;
        qf_ref_out_free(&o);
    }
    printf("ref log_softmax float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_LOG_SOFTMAX]);
    printf("ref layernorm float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_LAYERNORM]);
    printf("ref gelu float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_GELU]);
    printf("ref softmax float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_SOFTMAX]);
    printf("ref rmsnorm float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_RMSNORM]);
    printf("ref slow-path fraction = %.3g\n", (double)slow / (double)total);
    free(x);
    free(y);
    return 0;
}
