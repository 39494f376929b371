/* gemm_fast.c: CPU candidate GEMM kernels, written the way fast CPU GEMMs
 * are written, each with the claim its accumulation order implies
 * (docs/kernels.md "CPU candidate kernels").
 *
 * Common shape: the operands are packed once per problem into float32
 * panels, a as [m][k] and b as b^T [n][k] (so the reduction runs over
 * contiguous memory whatever the transposes), then the output is computed
 * in cache blocks of GF_MB rows x GF_NB columns.  Decoding a code into a
 * float32 is exact for every input format accepted here (at most 24
 * significant bits, exponents inside float32's range).
 *
 *   gemm.cpu.blocked.f32      the dot product of a row of a and a column of b
 *                             runs over GF_LANES = 16 interleaved float32
 *                             accumulators (lane t takes l = t, t + 16, ...:
 *                             one SIMD register of 16 floats, or two of 8),
 *                             product and sum each rounded (no FMA: the
 *                             build has -ffp-contract=off); the 16 lanes are
 *                             then added sequentially, lane 0 first.  That is
 *                             a split-K sum with S = 16 partials of at most
 *                             ceil(K / 16) terms followed by 15 additions:
 *                             claim sum_order = split-K, split_k = 16.
 *   gemm.cpu.f16_f32acc       float16 a, b: the same 16-lane dot, products
 *                             exact in float32 (11 + 11 significant bits).
 *   gemm.cpu.tf32             tf32 a, b: each input is rounded to tf32
 *                             (10 fraction bits) nearest, ties AWAY from zero
 *                             (as cvt.rna.tf32.f32 on sm_80; docs/numerics.md#conversions) -- the
 *                             identity on the tf32 codes the runner gives --
 *                             then the 16-lane dot (products exact: 11 + 11
 *                             bits).
 *   gemm.cpu.fp8              FP8 a, b (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz)
 *                             with per-tensor float32 dequantization scales:
 *                             the 16-lane dot over the decoded codes
 *                             (products exact: at most 4 + 4 bits), then
 *                             acc * (s_a * s_b) rounded ONCE to float32
 *                             (s_a s_b is exact in binary64, the product with
 *                             acc is formed exactly as a two-product and
 *                             rounded once), then the output rounding.  One
 *                             epilogue rounding for the scales, as the runner
 *                             charges.  alpha = 1 and beta = 0 only.
 *   gemm.cpu.splitk4.f32      a split-K GEMM as GPU libraries run one: K cut
 *                             into 4 contiguous slices of ceil(K / 4); each
 *                             slice a sequential float32 sum (products
 *                             rounded) written to a float32 workspace
 *                             [4][m][n]; then d = ((P0 + P1) + P2) + P3.
 *                             Claim split-K, split_k = 4.
 *   gemm.cpu.f16acc           float16 a, b and a float16 ACCUMULATOR: per
 *                             element acc = RN16(a_l b_l + acc), l = 0..K-1,
 *                             one rounding per step (an fp16 FMA, as hfma2):
 *                             claim acc_format = float16, block 1,
 *                             sequential.  The output is the accumulator
 *                             (exactly representable: no output rounding).
 *                             alpha = 1 and beta = 0 only.
 *
 * Epilogue of the float32-accumulating kernels (not fp8): as gemm.c,
 * alpha * acc if alpha != 1, + beta * c if beta != 0, in float32, then the
 * output rounding (nearest even) into the tuple's output format.
 *
 * Determinism: every element's order of operations is fixed by the code
 * above; rows are spread over OpenMP threads in blocks, so results do not
 * depend on the thread count (deterministic_threads = 1).
 * Grouped GEMM is declined (supports).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "_cpu.h"
#include "qf_kernel.h"

#define GF_LANES 16
#define GF_MB    32
#define GF_NB    64

/* The algorithm, from kernel->user (table.c uses the same numbers). */
typedef enum gf_algo { GF_BLOCKED = 0, GF_TF32 = 1, GF_FP8 = 2, GF_SPLITK4 = 3, GF_F16ACC = 4 } gf_algo;

static int is_f32_value(double x)
{
    return (double)(float)x == x;
}

static int algo_of(const qf_kernel *k)
{
    return (int)(intptr_t)k->user;
}

qf_status _qf_cpu_gemm_fast_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    int algo = algo_of(k);
    (void)dtype;
    if (g->groups) {
        snprintf(why, why_size, "grouped GEMM is not supported by this kernel");
        return QF_EUNSUPPORTED;
    }
    if ((algo == GF_FP8 || algo == GF_F16ACC) && (g->alpha != 1 || g->beta != 0)) {
        snprintf(why, why_size, "alpha must be 1 and beta 0 (no epilogue in this kernel's claim)");
        return QF_EUNSUPPORTED;
    }
    if (!is_f32_value(g->alpha) || !is_f32_value(g->beta)) {
        snprintf(why, why_size, "alpha and beta must be float32 values (the epilogue runs in float32)");
        return QF_EUNSUPPORTED;
    }
    if (g->k > ((size_t)1 << 30) || g->m > ((size_t)1 << 30) || g->n > ((size_t)1 << 30)) {
        snprintf(why, why_size, "dimensions above 2^30");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* Check a slot: format, unpacked codes, the scaling (none, or one float32
 * tensor scale when scaled), ndim 2 or 3 and the extents. */
static qf_status check_slot(const qf_kernel_call *call, const qf_tensor *t, const char *slot, qf_format_id f,
                            int scaled, int64_t batch, int64_t rows, int64_t cols)
{
    if (!t->data)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "tensor %s: format %s unpacked expected", slot,
                            qf_format_get(f)->name);
    if (scaled ? (t->scale.kind != QF_SCALE_TENSOR || t->scale.format != QF_FLOAT32 || !t->scale.data ||
                  t->scale.count != 1)
               : t->scale.kind != QF_SCALE_NONE)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "tensor %s: %s expected", slot,
                            scaled ? "one float32 per-tensor scale" : "no scale");
    if (t->ndim < 2 || t->ndim > 3 || (t->ndim == 3 && t->shape[0] != batch && t->shape[0] != 1) ||
        t->shape[t->ndim - 2] != rows || t->shape[t->ndim - 1] != cols)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s: shape does not match the op (expected [%lld][%lld])",
                            slot, (long long)rows, (long long)cols);
    return QF_OK;
}

/* float32 -> tf32, nearest with ties away from zero (cvt.rna): add half
 * an ulp of tf32 to the magnitude bits and clear the 13 low bits; a carry
 * into the exponent is the correct next binade (or Inf past the maximum). */
static float round_tf32_rna(float x)
{
    uint32_t u = _qf_bits_of_f32(x);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return x; /* Inf, NaN */
    u = (u + 0x1000u) & 0xffffe000u;
    return _qf_f32_of_bits(u);
}

/* Pack operand p of problem `pb` into dst [rows][depth]: rows index the
 * output (m for a, n for b), depth runs over k.  `tr` says the stored
 * tensor is [depth][rows]. */
static void pack(const qf_tensor *t, int64_t pb, int tr, int64_t rows, int64_t depth, int tf32, float *dst)
{
    const qf_format *f = qf_format_get(t->format);
    int64_t r, l;
    for (r = 0; r < rows; r++)
        for (l = 0; l < depth; l++) {
            int64_t off = tr ? _qf_cpu_off(t, pb, l, r) : _qf_cpu_off(t, pb, r, l);
            /* tf32 lives in a float32 container: take the float32 bits as
             * they are and round them (the identity on tf32 values). */
            dst[r * depth + l] = tf32 ? round_tf32_rna(_qf_f32_of_bits((uint32_t)_qf_cpu_load_code(t, off)))
                                      : (float)qf_format_decode(f, _qf_cpu_load_code(t, off));
        }
}

/* The 16-lane dot product: lane t sums l = t (mod 16) sequentially, then
 * the lanes are added in order.  Written so a compiler maps acc[] onto
 * SIMD registers; with -ffp-contract=off the products are rounded. */
static float dot_lanes(const float *a, const float *b, int64_t k)
{
    float acc[GF_LANES];
    float s;
    int64_t l, t, k16 = k - k % GF_LANES;
    for (t = 0; t < GF_LANES; t++)
        acc[t] = 0.0f;
    for (l = 0; l < k16; l += GF_LANES)
        for (t = 0; t < GF_LANES; t++) {
            float p = a[l + t] * b[l + t];
            acc[t] = acc[t] + p;
        }
    for (t = 0; l + t < k; t++) {
        float p = a[l + t] * b[l + t];
        acc[t] = acc[t] + p;
    }
    s = acc[0];
    for (t = 1; t < GF_LANES; t++)
        s = s + acc[t];
    return s;
}

/* Sequential float32 dot over [l0, l1). */
static float dot_seq(const float *a, const float *b, int64_t l0, int64_t l1)
{
    float acc = 0.0f;
    int64_t l;
    for (l = l0; l < l1; l++) {
        float p = a[l] * b[l];
        acc = acc + p;
    }
    return acc;
}

/* Round a binary64 value to the nearest float16 value (ties to even),
 * returned as a binary64; overflow gives +-Inf, as IEEE rounding does. */
static double rn16(double x)
{
    int e, q;
    if (x != x)
        return x;
    if (!(fabs(x) < 65520.0)) /* 65520 = 65504 + half an ulp: ties to even go up */
        return copysign(INFINITY, x);
    (void)frexp(x, &e);
    q = e - 11;
    if (q < -24)
        q = -24; /* subnormal step 2^-24 */
    return ldexp(nearbyint(ldexp(x, -q)), q);
}

/* float16 accumulation: acc = RN16(a_l b_l + acc).  fma in binary64 gives
 * RN53 of the exact a_l b_l + acc, and rounding that to float16 is the
 * single rounding RN16: a harmful double rounding needs the exact value
 * within 2^-53 relative of a float16 midpoint without being one, which
 * takes a term of magnitude >= 2^-12 |acc| -- and then the exact value has
 * at most about 40 significant bits, so fma was exact. */
static double dot_f16acc(const float *a, const float *b, int64_t k)
{
    double acc = 0.0;
    int64_t l;
    for (l = 0; l < k; l++)
        acc = rn16(fma((double)a[l], (double)b[l], acc));
    return acc;
}

/* x * s rounded once to float32, x a float32 and s exact in binary64 with
 * at most 48 significant bits: hi + lo = x s exactly (two-product); the
 * rounding of hi to float32 is the correct one unless hi is a float32
 * midpoint with lo != 0, where the exact value lies on lo's side. */
static float mul_round_once(float x, double s)
{
    double hi = (double)x * s, lo = fma((double)x, s, -hi);
    float r = (float)hi, other;
    if (lo == 0 || !isfinite(hi) || (double)r == hi || isinf(r))
        return r;
    /* hi lies strictly between r and its neighbour on hi's side. */
    other = nextafterf(r, (double)r < hi ? INFINITY : -INFINITY);
    if ((double)r / 2 + (double)other / 2 != hi)
        return r; /* not a midpoint: r is nearest for hi + lo too */
    /* A midpoint: the exact value is on lo's side of it. */
    return (lo > 0) == ((double)r > hi) ? r : other;
}

static qf_status gemm_fast_run(const qf_kernel_call *call, int algo)
{
    const qf_op_gemm *g;
    const qf_dtype_tuple *t = call->dtype;
    const qf_tensor *A, *B, *C, *D;
    const qf_format *fo;
    int64_t batch, m, n, k, pb;
    int trans_a, trans_b, has_c, scaled = algo == GF_FP8;
    float alpha, beta;
    double sab = 1;
    qf_status s;
    float *pa = NULL, *pbt = NULL, *work = NULL;

    if (!call->op || call->op->op != QF_OP_GEMM || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    g = &call->op->u.gemm;
    if (g->groups)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "grouped GEMM is not supported");
    A = &call->in[0];
    B = &call->in[1];
    C = &call->in[2];
    D = &call->out[0];
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    trans_a = g->trans_a != 0;
    trans_b = g->trans_b != 0;
    batch = g->batch ? (int64_t)g->batch : 1;
    alpha = (float)g->alpha;
    beta = (float)g->beta;
    has_c = g->beta != 0;
    if (!is_f32_value(g->alpha) || !is_f32_value(g->beta) ||
        ((algo == GF_FP8 || algo == GF_F16ACC) && (g->alpha != 1 || has_c)))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "alpha / beta outside this kernel's claim");
    if ((s = check_slot(call, A, "a", t->in[0], scaled, batch, trans_a ? k : m, trans_a ? m : k)) != QF_OK ||
        (s = check_slot(call, B, "b", t->in[1], scaled, batch, trans_b ? n : k, trans_b ? k : n)) != QF_OK ||
        (s = check_slot(call, D, "d", t->out[0], 0, batch, m, n)) != QF_OK ||
        (has_c && (s = check_slot(call, C, "c", t->in[2], 0, batch, m, n)) != QF_OK))
        return s;
    if (batch > 1 && (D->ndim != 3 || D->shape[0] != batch))
        return _qf_cpu_fail(call, QF_EINVAL, "tensor d must be [batch][m][n] for a batched gemm");
    if (scaled) {
        /* Two float32 scales: their product (48 bits) is exact in binary64. */
        float sa = _qf_f32_of_bits(*(const uint32_t *)A->scale.data);
        float sb = _qf_f32_of_bits(*(const uint32_t *)B->scale.data);
        sab = (double)sa * (double)sb;
    }
    fo = qf_format_get(t->out[0]);
    if (m == 0 || n == 0)
        return QF_OK;
    pa = malloc((size_t)(m * (k ? k : 1)) * sizeof *pa);
    pbt = malloc((size_t)(n * (k ? k : 1)) * sizeof *pbt);
    if (algo == GF_SPLITK4)
        work = malloc((size_t)(4 * m * n) * sizeof *work);
    if (!pa || !pbt || (algo == GF_SPLITK4 && !work)) {
        free(pa);
        free(pbt);
        free(work);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory for the packed panels");
    }

    for (pb = 0; pb < batch; pb++) {
        int64_t i0, nblk = (m + GF_MB - 1) / GF_MB;
        int nth = call->threads;
        pack(A, pb, trans_a, m, k, algo == GF_TF32, pa);
        pack(B, pb, !trans_b, n, k, algo == GF_TF32, pbt);
        (void)nth;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)                                                                    \
    num_threads(nth > 0 ? nth : omp_get_max_threads()) if (m * n * k > 262144)
#endif
        for (i0 = 0; i0 < nblk; i0++) {
            int64_t j0, i, j, ib = i0 * GF_MB, ie = ib + GF_MB < m ? ib + GF_MB : m;
            for (j0 = 0; j0 < n; j0 += GF_NB) {
                int64_t je = j0 + GF_NB < n ? j0 + GF_NB : n;
                for (i = ib; i < ie; i++)
                    for (j = j0; j < je; j++) {
                        const float *ar = pa + i * k, *br = pbt + j * k;
                        int64_t off = _qf_cpu_off(D, pb, i, j);
                        float acc;
                        if (algo == GF_F16ACC) {
                            _qf_cpu_store_code(D, fo, off, dot_f16acc(ar, br, k));
                            continue;
                        }
                        if (algo == GF_SPLITK4) {
                            int64_t q, ch = (k + 3) / 4;
                            for (q = 0; q < 4; q++) {
                                int64_t l0 = q * ch < k ? q * ch : k, l1 = (q + 1) * ch < k ? (q + 1) * ch : k;
                                work[(q * m + i) * n + j] = dot_seq(ar, br, l0, l1);
                            }
                            continue;
                        }
                        acc = dot_lanes(ar, br, k);
                        if (algo == GF_FP8) {
                            acc = mul_round_once(acc, sab);
                        } else {
                            if (alpha != 1.0f)
                                acc = alpha * acc;
                            if (has_c) {
                                float bc = beta * (float)qf_format_decode(
                                                      qf_format_get(C->format),
                                                      _qf_cpu_load_code(C, _qf_cpu_off(C, pb, i, j)));
                                acc = acc + bc;
                            }
                        }
                        _qf_cpu_store_code(D, fo, off, (double)acc);
                    }
            }
        }
        if (algo == GF_SPLITK4) {
            /* The reduction kernel: the 4 float32 partials, in order. */
            int64_t i, j;
            for (i = 0; i < m; i++)
                for (j = 0; j < n; j++) {
                    int64_t off = _qf_cpu_off(D, pb, i, j);
                    float acc = work[i * n + j];
                    acc = acc + work[(m + i) * n + j];
                    acc = acc + work[(2 * m + i) * n + j];
                    acc = acc + work[(3 * m + i) * n + j];
                    if (alpha != 1.0f)
                        acc = alpha * acc;
                    if (has_c) {
                        float bc = beta * (float)qf_format_decode(
                                              qf_format_get(C->format),
                                              _qf_cpu_load_code(C, _qf_cpu_off(C, pb, i, j)));
                        acc = acc + bc;
                    }
                    _qf_cpu_store_code(D, fo, off, (double)acc);
                }
        }
    }
    free(pa);
    free(pbt);
    free(work);
    return QF_OK;
}

qf_status _qf_cpu_gemm_fast_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_fast_run(call, algo_of(call->kernel));
}
