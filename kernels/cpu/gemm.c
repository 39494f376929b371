/* gemm.c: built-in CPU GEMM kernels, whose arithmetic is exactly known.
 *
 *   gemm.cpu.naive.f32     float32 codes in, float32 out: for each element
 *                          acc = 0; acc = acc + a_l * b_l for l = 0..K-1,
 *                          product and sum each rounded to float32 (nearest
 *                          even; the build has -ffp-contract=off, so no FMA).
 *   gemm.cpu.bf16_f32acc   bfloat16 a, b (and c): products exact in float32
 *                          (8 + 8 significant bits <= 24), the same float32
 *                          sequential sum, bfloat16 output rounded once,
 *                          nearest even.
 * Epilogue (both): d = alpha * acc + beta * c, in float32, each operation
 * rounded: alpha * acc only when alpha != 1, beta * c and the addition only
 * when beta != 0 (so 0, 1, 2 or 3 roundings after the reduction: the
 * `epilogue` argument of qf_bound_gemm_coef).  alpha and beta must be
 * float32 values, which the supports callback checks.
 *
 * The claim (docs/numerics.md#error-bounds: a sequential sum is one running
 * accumulator, gamma_K |A||B|; the first addition 0 + p_0 is exact, so a
 * rounded product costs no more than the FMA model's step): accumulator
 * float32, block_fma 1, nearest even, sequential, output nearest even;
 * bitwise deterministic, also across thread counts (rows are spread over
 * OpenMP threads, each element's sum order is fixed).  The table entries
 * are in table.c.
 *
 * Known-bad variants (kernels/bad) run this code with one _qf_defect in
 * kernel->user (NULL here): _QF_DEFECT_GEMM_EDGE_TILE_K (rows from
 * m - m % 64 on, the edge tile of a kernel that tiles M by 64, sum one
 * product short), _QF_DEFECT_GEMM_RACY_ORDER (each element's sum starts at
 * index rot % K, rot changing from call to call, as an order set by thread
 * timing would), _QF_DEFECT_GEMM_PAIR_OVERRUN (odd N: the last column is
 * stored as the pair (value, 0), one element past the row) and
 * _QF_DEFECT_GEMM_UNWRITTEN_TAIL (the last N % 8 columns are never
 * stored), _QF_DEFECT_GEMM_IGNORES_LD (a and b are read at their dense
 * row-major offsets whatever their strides: a kernel that takes lda = K
 * and ldb = N for granted) and _QF_DEFECT_GEMM_PAD_STORE (a row-major d
 * with a padded leading dimension gets zeros in each row's padding, as a
 * kernel whose stores cover the whole row pitch).  The last two show only
 * on strided operands (a suite's `layout`).  With a defect the rows run on one thread, in order, as the
 * defective kernels were written: the overrun's stray 0 lands in the next
 * row before that row is computed and overwrites it.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "_cpu.h"
#include "qf_kernel.h"

static float ld_f32(const void *base, int64_t off)
{
    return _qf_f32_of_bits(((const uint32_t *)base)[off]);
}

/* bfloat16 is the upper half of a float32: widening is exact. */
static float ld_bf16(const void *base, int64_t off)
{
    return _qf_f32_of_bits((uint32_t)((const uint16_t *)base)[off] << 16);
}

static void st_f32(void *base, int64_t off, float v)
{
    ((uint32_t *)base)[off] = _qf_bits_of_f32(v);
}

/* float32 -> bfloat16, nearest even; overflow carries into the exponent
 * and gives Inf, as IEEE rounding does; NaN stays a (quiet) NaN. */
static void st_bf16(void *base, int64_t off, float v)
{
    uint32_t u = _qf_bits_of_f32(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u = (u | 0x00400000u);
    else
        u += 0x7fffu + ((u >> 16) & 1u);
    ((uint16_t *)base)[off] = (uint16_t)(u >> 16);
}

/* The offset of (p, r, c) in t as if it were dense row-major, whatever its
 * strides (_QF_DEFECT_GEMM_IGNORES_LD). */
static int64_t dense_off(const qf_tensor *t, int64_t p, int64_t r, int64_t c)
{
    int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1], o = r * C + c;
    if (t->ndim == 3 && t->shape[0] > 1)
        o += p * R * C;
    return o;
}

typedef float (*load_fn)(const void *, int64_t);
typedef void (*store_fn)(void *, int64_t, float);

static int is_f32_value(double x)
{
    return (double)(float)x == x;
}

qf_status _qf_cpu_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    (void)k;
    (void)dtype;
    if (!is_f32_value(g->alpha) || !is_f32_value(g->beta)) {
        snprintf(why, why_size, "alpha and beta must be float32 values (the epilogue runs in float32)");
        return QF_EUNSUPPORTED;
    }
    if (g->groups && g->trans_a) {
        snprintf(why, why_size, "grouped GEMM with a transposed a is not supported");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* The rotation of _QF_DEFECT_GEMM_RACY_ORDER: a clock reading taken once
 * per process, plus one per call, so that two calls in a row always start
 * their sums at different indices (a bare clock reading could repeat). */
static unsigned long _racy_rotation(void)
{
    static unsigned long base, calls;
    static int have_base;
    if (!have_base) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        base = (unsigned long)ts.tv_nsec / 1024u + (unsigned long)ts.tv_sec;
        have_base = 1;
    }
    return base + calls++;
}

static qf_status gemm_run_typed(const qf_kernel_call *call, load_fn ld, store_fn st, _qf_defect defect)
{
    const qf_op_gemm *g;
    const qf_dtype_tuple *t = call->dtype;
    const qf_tensor *A, *B, *C, *D;
    int64_t batch, groups, problems, mtot, n, k;
    int trans_a, trans_b, has_c;
    float alpha, beta;
    qf_status s;
    int64_t p;

    if (!call->op || call->op->op != QF_OP_GEMM || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    g = &call->op->u.gemm;
    A = &call->in[0];
    B = &call->in[1];
    C = &call->in[2];
    D = &call->out[0];
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    trans_a = g->trans_a != 0;
    trans_b = g->trans_b != 0;
    groups = (int64_t)g->groups;
    batch = g->batch ? (int64_t)g->batch : 1;
    if (groups && !g->group_m)
        return _qf_cpu_fail(call, QF_EINVAL, "grouped gemm without group_m");
    /* The supports callback refuses it too; a direct caller (a plugin host
     * that skips qf_kernel_check) must not get a stacked a read transposed. */
    if (groups && trans_a)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "grouped GEMM with a transposed a is not supported");
    mtot = (int64_t)g->m;
    if (groups) {
        int64_t i;
        mtot = 0;
        for (i = 0; i < groups; i++)
            mtot += (int64_t)g->group_m[i];
    }
    problems = groups ? groups : batch;
    alpha = (float)g->alpha;
    beta = (float)g->beta;
    has_c = g->beta != 0;

    /* Shapes: grouped a, c, d stack the groups' rows in one matrix. */
    if (groups) {
        if ((s = _qf_cpu_check2(call, A, "a", t->in[0], -1, mtot, k)) != QF_OK ||
            (s = _qf_cpu_check2(call, B, "b", t->in[1], groups, trans_b ? n : k, trans_b ? k : n)) != QF_OK ||
            (s = _qf_cpu_check2(call, D, "d", t->out[0], -1, mtot, n)) != QF_OK ||
            (has_c && (s = _qf_cpu_check2(call, C, "c", t->in[2], -1, mtot, n)) != QF_OK))
            return s;
        if (A->ndim != 2 || D->ndim != 2 || B->ndim != 3 || (has_c && C->ndim != 2))
            return _qf_cpu_fail(call, QF_EINVAL, "grouped gemm: a, c, d must be 2-d and b 3-d");
    } else {
        if ((s = _qf_cpu_check2(call, A, "a", t->in[0], batch, trans_a ? k : mtot, trans_a ? mtot : k)) !=
                QF_OK ||
            (s = _qf_cpu_check2(call, B, "b", t->in[1], batch, trans_b ? n : k, trans_b ? k : n)) != QF_OK ||
            (s = _qf_cpu_check2(call, D, "d", t->out[0], batch, mtot, n)) != QF_OK ||
            (has_c && (s = _qf_cpu_check2(call, C, "c", t->in[2], batch, mtot, n)) != QF_OK))
            return s;
        if (batch > 1 && (D->ndim != 3 || D->shape[0] != batch))
            return _qf_cpu_fail(call, QF_EINVAL, "tensor d must be [batch][m][n] for a batched gemm");
    }
    if (!is_f32_value(g->alpha) || !is_f32_value(g->beta))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "alpha and beta must be float32 values");

    {
        int64_t r0 = 0;
        /* The defects' parameters: the first row of the edge M-tile, the
         * columns stored, the starting index of every sum. */
        int64_t edge_first = defect == _QF_DEFECT_GEMM_EDGE_TILE_K ? mtot - mtot % 64 : INT64_MAX;
        int64_t n_stored = defect == _QF_DEFECT_GEMM_UNWRITTEN_TAIL ? n - n % 8 : n;
        unsigned long rot = defect == _QF_DEFECT_GEMM_RACY_ORDER ? _racy_rotation() : 0;
        int64_t start = k > 0 ? (int64_t)(rot % (unsigned long)k) : 0;
        for (p = 0; p < problems; p++) {
            int64_t m = groups ? (int64_t)g->group_m[p] : mtot;
            int64_t pa = groups ? 0 : p; /* a, c, d: the stacked matrix when grouped */
            int64_t i;
            int nth = call->threads;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)                                                                    \
    num_threads(nth > 0 ? nth : omp_get_max_threads()) if (m * n * k > 65536 && defect == _QF_DEFECT_NONE)
#endif
            for (i = 0; i < m; i++) {
                int64_t j, l, r = r0 + i, kk = r >= edge_first && k > 0 ? k - 1 : k;
                for (j = 0; j < n; j++) {
                    float acc = 0.0f;
                    for (l = 0; l < kk; l++) {
                        int64_t ll = start ? (start + l) % k : l;
                        float a, b;
                        if (defect == _QF_DEFECT_GEMM_IGNORES_LD) {
                            a = ld(A->data, trans_a ? dense_off(A, pa, ll, r) : dense_off(A, pa, r, ll));
                            b = ld(B->data, trans_b ? dense_off(B, p, j, ll) : dense_off(B, p, ll, j));
                        } else {
                            a = ld(A->data, trans_a ? _qf_cpu_off(A, pa, ll, r) : _qf_cpu_off(A, pa, r, ll));
                            b = ld(B->data, trans_b ? _qf_cpu_off(B, p, j, ll) : _qf_cpu_off(B, p, ll, j));
                        }
                        float prod = a * b;
                        acc = acc + prod;
                    }
                    if (alpha != 1.0f)
                        acc = alpha * acc;
                    if (has_c) {
                        float bc = beta * ld(C->data, _qf_cpu_off(C, pa, r, j));
                        acc = acc + bc;
                    }
                    if (j >= n_stored)
                        continue;
                    st(D->data, _qf_cpu_off(D, pa, r, j), acc);
                    if (defect == _QF_DEFECT_GEMM_PAIR_OVERRUN && n % 2 && j == n - 1)
                        /* The pair store's second lane: one element past
                         * the row (past the buffer in the last row). */
                        st(D->data, _qf_cpu_off(D, pa, r, j) + 1, 0.0f);
                }
                if (defect == _QF_DEFECT_GEMM_PAD_STORE && D->stride[D->ndim - 1] == 1)
                    /* The store covers the row pitch: zeros past column n. */
                    for (j = n; j < D->stride[D->ndim - 2]; j++)
                        st(D->data, _qf_cpu_off(D, pa, r, 0) + j, 0.0f);
            }
            (void)nth;
            if (groups)
                r0 += m;
        }
    }
    return QF_OK;
}

qf_status _qf_cpu_gemm_f32_run(void *ctx, const qf_kernel_call *call)
{
    return gemm_run_typed(call, ld_f32, st_f32, _qf_cpu_defect(ctx));
}

qf_status _qf_cpu_gemm_bf16_run(void *ctx, const qf_kernel_call *call)
{
    return gemm_run_typed(call, ld_bf16, st_bf16, _qf_cpu_defect(ctx));
}
