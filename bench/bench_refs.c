/* bench_refs.c: the correctly rounded references of element-wise and row
 * ops against a plain binary64 libm loop over the same values, side by side
 * in one run (docs/bench.md "bench_refs").
 *
 * For each op, 64 x 4096 = 262144 float32 values (uniform on [-12, 12] for
 * the activations, N(0, 1) for the rows: softmax, log-softmax, RMSNorm,
 * LayerNorm, L2 normalization), one thread:
 *   qualify  qf_ref_* into float32, every element correctly rounded (the
 *            binary64 fast path where it decides, MPFR for the rest)
 *   libm     the textbook formula in binary64 with the C library (the
 *            speed any reference can hope for, NOT correctly rounded)
 * Each figure is the fastest of the repeats, in CPU time of the calling
 * thread (both run there: threads = 1), so that other work on a shared
 * machine, which stretches wall-clock time, does not skew the ratio.  The
 * ratios of log_softmax, layernorm and l2norm come first, then the last
 * lines read
 *   ref gelu float32 262144: qualify/libm = R
 *   ref softmax float32 262144: qualify/libm = R
 *   ref rmsnorm float32 262144: qualify/libm = R
 *   ref slow-path fraction = F
 * with F the fraction of elements that needed MPFR, over gelu and the five
 * row ops on N(0, 1) inputs (targets, issue 15: R <= 10, F <= 1e-4).
 * First of all, the same ratio for attention, RoPE and the MoE router
 * (bench_attn_ops; N(0, 1) inputs, the libm loop the same formula in
 * binary64 with the C library's exp, sin, cos, log):
 *   ref attention float32 N: qualify/libm = R   (N outputs of 8 heads x
 *       256 queries x 256 keys, head_dim 64, lse too)
 *   ref rope float32 N: qualify/libm = R        (512 tokens x 8 heads x
 *       64, theta 10000, positions 8192..8703)
 *   ref router float32 N: qualify/libm = R      (2048 tokens, 256 experts,
 *       top 8, sigmoid + selection bias, renormalized, route_scale 2.5)
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

typedef enum {
    OP_GELU,
    OP_SILU,
    OP_SOFTMAX,
    OP_RMSNORM,
    OP_LOG_SOFTMAX,
    OP_LAYERNORM,
    OP_L2NORM,
    OP_COUNT
} op_id;
static const char *const op_name[OP_COUNT] = {"gelu",        "silu",      "softmax", "rmsnorm",
                                              "log_softmax", "layernorm", "l2norm"};

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
    case OP_L2NORM:
        for (r = 0; r < rows; r++) {
            const double *xr = x + r * COLS;
            double *yr = y + r * COLS, s = 0, d;
            for (c = 0; c < COLS; c++)
                s += xr[c] * xr[c];
            d = fmax(sqrt(s), 1e-12);
            for (c = 0; c < COLS; c++)
                yr[c] = xr[c] / d;
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

/* ---- attention, RoPE, router (bench_attn_ops) ---------------------------- */

enum { AT_H = 8, AT_S = 256, AT_D = 64, RP_T = 512, RP_H = 8, RP_D = 64, MO_T = 2048, MO_E = 256, MO_K = 8 };

static void libm_attention(const double *q, const double *k, const double *v, double *out, double *lse)
{
    size_t h, i, j, e;
    double sc[AT_S], acc[AT_D];
    for (h = 0; h < AT_H; h++)
        for (i = 0; i < AT_S; i++) {
            const double *qr = q + (h * AT_S + i) * AT_D;
            double m = -INFINITY, s = 0;
            for (j = 0; j < AT_S; j++) {
                const double *kr = k + (h * AT_S + j) * AT_D;
                double d = 0;
                for (e = 0; e < AT_D; e++)
                    d += qr[e] * kr[e];
                sc[j] = d / 8; /* 1 / sqrt(64) */
                m = sc[j] > m ? sc[j] : m;
            }
            for (e = 0; e < AT_D; e++)
                acc[e] = 0;
            for (j = 0; j < AT_S; j++) {
                const double *vr = v + (h * AT_S + j) * AT_D;
                double w = exp(sc[j] - m);
                s += w;
                for (e = 0; e < AT_D; e++)
                    acc[e] += w * vr[e];
            }
            for (e = 0; e < AT_D; e++)
                out[(h * AT_S + i) * AT_D + e] = acc[e] / s;
            lse[h * AT_S + i] = m + log(s);
        }
}

static void libm_rope(const double *x, double *y)
{
    size_t t, h, i, half = RP_D / 2;
    double f[RP_D / 2], sn[RP_D / 2], cs[RP_D / 2];
    for (i = 0; i < half; i++)
        f[i] = pow(10000.0, -2.0 * (double)i / RP_D);
    for (t = 0; t < RP_T; t++) {
        for (i = 0; i < half; i++) {
            double a = (double)(8192 + t) * f[i];
            sn[i] = sin(a);
            cs[i] = cos(a);
        }
        for (h = 0; h < RP_H; h++) {
            const double *xr = x + (t * RP_H + h) * RP_D;
            double *yr = y + (t * RP_H + h) * RP_D;
            for (i = 0; i < half; i++) { /* HALF (Llama) layout */
                yr[i] = xr[i] * cs[i] - xr[i + half] * sn[i];
                yr[i + half] = xr[i] * sn[i] + xr[i + half] * cs[i];
            }
        }
    }
}

static void libm_router(const double *l, const double *bias, int32_t *idx, double *w)
{
    size_t t, e, i;
    double s[MO_E], key[MO_E];
    for (t = 0; t < MO_T; t++) {
        double sum = 0;
        for (e = 0; e < MO_E; e++) {
            s[e] = 1 / (1 + exp(-l[t * MO_E + e]));
            key[e] = s[e] + bias[e];
        }
        for (i = 0; i < MO_K; i++) {
            size_t best = 0;
            for (e = 1; e < MO_E; e++)
                best = key[e] > key[best] ? e : best;
            idx[t * MO_K + i] = (int32_t)best;
            sum += s[best];
            key[best] = -INFINITY;
        }
        for (i = 0; i < MO_K; i++)
            w[t * MO_K + i] = s[idx[t * MO_K + i]] / sum * 2.5;
    }
}

/* One op of the three: 0 attention, 1 rope, 2 router, with the fast path;
 * in o (and lse, idx for attention and the router). */
static qf_status ref_attn_op(int op, const double *a, const double *b, const double *c, qf_ref_out *o,
                             qf_ref_out *lse, int32_t *idx)
{
    qf_ref_opts opts = qf_ref_opts_default();
    opts.format = qf_format_get(QF_FLOAT32);
    opts.threads = 1;
    if (op == 0) {
        qf_ref_attn_params p;
        qf_ref_attn_params_init(&p);
        p.batch = 1, p.heads = p.kv_heads = AT_H, p.seq_q = p.seq_k = AT_S, p.head_dim = AT_D;
        return qf_ref_attention(&opts, &p, a, b, c, o, lse);
    } else if (op == 1) {
        qf_ref_rope_params p;
        qf_ref_rope_params_init(&p);
        p.tokens = RP_T, p.heads = RP_H, p.head_dim = RP_D, p.layout = QF_REF_ROPE_HALF, p.pos_offset = 8192;
        return qf_ref_rope(&opts, &p, a, o);
    } else {
        qf_ref_moe_params p;
        qf_ref_moe_params_init(&p);
        p.tokens = MO_T, p.experts = MO_E, p.top_k = MO_K, p.score = QF_REF_ROUTER_SIGMOID;
        p.renormalize = 1, p.route_scale = 2.5, p.sel_bias = b;
        return qf_ref_moe_router(&opts, &p, a, idx, o, NULL);
    }
}

/* Prints the three lines "ref OP float32 N: qualify/libm = R" (and a
 * table line each with the slow-path fraction); 0, or 1 on failure. */
static int bench_attn_ops(int reps)
{
    static const char *const name[3] = {"attention", "rope", "router"};
    static const size_t nout[3] = {AT_H * AT_S * AT_D, RP_T * RP_H * RP_D, MO_T * MO_K};
    size_t nin = MO_T * MO_E, i; /* the largest input of the three */
    double *a = malloc(nin * sizeof *a), *b = malloc(nin * sizeof *b), *c = malloc(nin * sizeof *c);
    double *y = malloc(nin * sizeof *y), *y2 = malloc(AT_H * AT_S * sizeof *y2), ratio[3];
    int32_t *idx = malloc(MO_T * MO_K * sizeof *idx);
    int op, r, fail = 0;
    if (!a || !b || !c || !y || !y2 || !idx)
        fail = 1;
    for (op = 0; op < 3 && !fail; op++) {
        uint64_t seed = 20261203 + (uint64_t)op;
        double tq = INFINITY, tl = INFINITY;
        qf_ref_out o, l;
        size_t n = nout[op];
        for (i = 0; i < nin; i++) {
            a[i] = draw(&seed, 1);
            b[i] = op == 2 ? 0.01 * draw(&seed, 1) : draw(&seed, 1);
            c[i] = draw(&seed, 1);
        }
        if (qf_ref_out_alloc(&o, n) != QF_OK || qf_ref_out_alloc(&l, AT_H * AT_S) != QF_OK)
            return 1;
        for (r = 0; r < reps && !fail; r++) {
            double t0 = now();
            if (op == 0)
                libm_attention(a, b, c, y, y2);
            else if (op == 1)
                libm_rope(a, y);
            else
                libm_router(a, b, idx, y);
            sink = y[n / 2];
            t0 = now() - t0;
            tl = t0 < tl ? t0 : tl;
            t0 = now();
            fail = ref_attn_op(op, a, b, c, &o, &l, idx) != QF_OK;
            t0 = now() - t0;
            tq = t0 < tq ? t0 : tq;
        }
        printf("%-11s %12.4f %12.4f %10.1f %14.3g\n", name[op], tq, tl, tq / tl,
               (double)(n - o.n_fast - o.n_undefined) / (double)n);
        ratio[op] = tq / tl;
        qf_ref_out_free(&o);
        qf_ref_out_free(&l);
    }
    for (op = 0; op < 3 && !fail; op++)
        printf("ref %s float32 %zu: qualify/libm = %.2f\n", name[op], nout[op], ratio[op]);
    free(a), free(b), free(c), free(y), free(y2), free(idx);
    return fail;
}

static qf_status ref(op_id op, const double *x, size_t rows, qf_ref_out *o)
{
    qf_ref_opts opts = qf_ref_opts_default();
    qf_ref_norm_params np;
    qf_ref_l2norm_params lp = {rows, COLS, 1e-12};
    opts.format = qf_format_get(QF_FLOAT32);
    opts.threads = 1;
    switch (op) {
    case OP_GELU: return qf_ref_activation(&opts, QF_REF_ACT_GELU_ERF, x, rows * COLS, o);
    case OP_SILU: return qf_ref_activation(&opts, QF_REF_ACT_SILU, x, rows * COLS, o);
    case OP_SOFTMAX: return qf_ref_softmax(&opts, x, rows, COLS, 1.0, o);
    case OP_LOG_SOFTMAX: return qf_ref_log_softmax(&opts, x, rows, COLS, 1.0, o);
    case OP_L2NORM: return qf_ref_l2norm(&opts, &lp, x, o);
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
    if (bench_attn_ops(reps))
        return 1;
    printf("ref log_softmax float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_LOG_SOFTMAX]);
    printf("ref layernorm float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_LAYERNORM]);
    printf("ref l2norm float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_L2NORM]);
    printf("ref gelu float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_GELU]);
    printf("ref softmax float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_SOFTMAX]);
    printf("ref rmsnorm float32 %zu: qualify/libm = %.2f\n", n, ratio[OP_RMSNORM]);
    printf("ref slow-path fraction = %.3g\n", (double)slow / (double)total);
    free(x);
    free(y);
    return 0;
}
