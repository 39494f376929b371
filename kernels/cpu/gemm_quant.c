/* gemm_quant.c: CPU candidate GEMMs on quantized operands (issue 5), each
 * with the claim its order of operations implies (docs/kernels.md,
 * derivations in docs/bounds.md "Scaled and integer GEMM").
 *
 * Common shape: per batch entry, a is packed as [m][k] and b as b^T [n][k]
 * (decoded element values, exact in float32: at most 8 significant bits),
 * and the scales as [m][kb] / [n][kb] floats (kb = K blocks), so each
 * output element runs over contiguous memory whatever the transposes.
 * Rows are spread over OpenMP threads; every element's order of operations
 * is fixed, so results do not depend on the thread count.  alpha = 1 and
 * beta = 0 only; grouped GEMM is declined.
 *
 *   gemm.cpu.fp8_channel  FP8 a, b (e4m3fn, e5m2, and the fnuz variants)
 *       with a float32 dequantization scale per row of a and per column of
 *       b (DeepSeek-V3 / Transformer Engine "per token x per channel").
 *       Main loop: float32 sums of 128 products (products exact: at most
 *       4 + 4 bits) promoted into a float32 accumulator every 128 (the
 *       CUTLASS / DeepSeek-V3 promotion interval, docs/numerics.md#matrix-units); epilogue
 *       d = s_a[i] * (s_b[j] * acc) in float32, two roundings, as vLLM's
 *       ScaledEpilogue evaluates it.  Claim: promote_interval 128.
 *   gemm.cpu.mxfp8, gemm.cpu.mxfp4  OCP MX v1.0: e8m0 scales per 32
 *       elements along K on a and b.  Per block: the 32 products (exact) are
 *       summed sequentially in float32, the sum is scaled by 2^(Xa + Xb)
 *       (ldexpf: exact unless the result leaves float32's normal range,
 *       then one correct rounding), and added into the float32 accumulator.  Claim:
 *       promote_interval 32 (the in-block chain, then one addition per
 *       block) plus one epilogue rounding for the scale product.  For
 *       e2m1 the block sums are exact (multiples of 1/4 below 2^11), so
 *       the bound is conservative there.
 *   gemm.cpu.nvfp4  e2m1 a, b, e4m3 scales per 16 along K, float32 global
 *       scales.  Per block: the 16 products summed in float32 -- EXACT:
 *       e2m1 products are multiples of 1/4 of magnitude <= 36, so partial
 *       sums are multiples of 1/4 below 2^10 (at most 12 bits) -- times
 *       s_a * s_b (two e4m3 values: at most 8 bits, >= 2^-18, exact in
 *       float32), a product of at most 20 bits: exact; added into the
 *       float32 accumulator (one rounding).  That is a block FMA of 16
 *       with exact alignment (claim block_fma 16).  Epilogue: alpha =
 *       float32(g_a * g_b), d = acc * alpha: two roundings, as cuBLASLt
 *       takes the global scales as a float32 alpha.
 *   gemm.cpu.int8  int8 a, b, int32 accumulation (exact), int32 out.  The
 *       int32 sum cannot overflow while K * 2^14 < 2^31 (|a b| <= 128 * 128):
 *       supports declines K > 131071 (UNSUPPORTED), so inside the claim the
 *       result is the exact integer.  qf_arith_claim has no integer
 *       accumulator: the claim is float64 accumulation (also exact for these
 *       sums), whose derived bound stays below half a unit, so only the
 *       exact integer passes.
 *   gemm.cpu.w4a16  bfloat16 a, int4 b with bfloat16 scales per group of
 *       32, 64 or 128 along K (one tuple per group size; symmetric, no zero
 *       point).  Per group: the products a_l q_l (8 + 4 bits: exact) summed
 *       sequentially in float32, times the group's scale (one rounding),
 *       added into the float32 accumulator; bfloat16 output, nearest even.
 *       Claim: promote_interval = the group size, one epilogue rounding.
 *       (Marlin instead dequantizes w = q s to bfloat16 before the MMA, a
 *       rounding of the weights qf_arith_claim cannot state.)
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

/* The algorithm, from kernel->user (table.c uses the same numbers). */
typedef enum qg_algo { QG_FP8_CHANNEL = 0, QG_MX = 1, QG_NVFP4 = 2, QG_INT8 = 3, QG_W4A16 = 4 } qg_algo;

#define QG_PROMOTE   128    /* fp8_channel: products per float32 partial */
#define QG_INT8_KMAX 131071 /* K * 2^14 <= 2^31 - 2^14: no int32 overflow */

static int algo_of(const qf_kernel *k)
{
    return (int)(intptr_t)k->user;
}

qf_status _qf_cpu_gemm_quant_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                      char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    (void)dtype;
    if (g->groups) {
        snprintf(why, why_size, "grouped GEMM is not supported by this kernel");
        return QF_EUNSUPPORTED;
    }
    if (g->alpha != 1 || g->beta != 0) {
        snprintf(why, why_size, "alpha must be 1 and beta 0 (no such epilogue in this kernel's claim)");
        return QF_EUNSUPPORTED;
    }
    if (algo_of(k) == QG_INT8 && g->k > QG_INT8_KMAX) {
        snprintf(why, why_size, "K = %zu > %d: the int32 accumulator could overflow", g->k, QG_INT8_KMAX);
        return QF_EUNSUPPORTED;
    }
    if (g->k > ((size_t)1 << 30) || g->m > ((size_t)1 << 30) || g->n > ((size_t)1 << 30)) {
        snprintf(why, why_size, "dimensions above 2^30");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* Index of the scale of stored element (r, c) of batch entry pb, or -1
 * when the scale layout does not fit the tensor. */
static int64_t scale_index(const qf_tensor *t, int64_t pb, int64_t r, int64_t c)
{
    const qf_tensor_scale *s = &t->scale;
    int64_t R = t->shape[t->ndim - 2], C = t->shape[t->ndim - 1];
    int64_t slices = t->ndim == 3 ? t->shape[0] : 1, per, blk = (int64_t)s->block;
    switch (s->kind) {
    case QF_SCALE_ROW: per = R; break;
    case QF_SCALE_COL: per = C; break;
    case QF_SCALE_BLOCK:
        if (blk < 1)
            return -1;
        per = s->axis ? R * ((C + blk - 1) / blk) : ((R + blk - 1) / blk) * C;
        break;
    default: return -1;
    }
    if ((int64_t)s->count != slices * per)
        return -1;
    if (slices == 1)
        pb = 0;
    switch (s->kind) {
    case QF_SCALE_ROW: return pb * per + r;
    case QF_SCALE_COL: return pb * per + c;
    default: return pb * per + (s->axis ? r * ((C + blk - 1) / blk) + c / blk : (r / blk) * C + c);
    }
}

/* Check slot t: format f, unpacked, ndim 2 or 3, extents, and the scale
 * (kind sk, format sf, block blk; QF_SCALE_NONE for none). */
static qf_status check_slot(const qf_kernel_call *call, const qf_tensor *t, const char *slot, qf_format_id f,
                            qf_scale_kind sk, qf_format_id sf, size_t blk, int64_t batch, int64_t rows,
                            int64_t cols)
{
    if (!t->data)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "tensor %s: format %s unpacked expected", slot,
                            qf_format_get(f)->name);
    if (t->ndim < 2 || t->ndim > 3 || (t->ndim == 3 && t->shape[0] != batch && t->shape[0] != 1) ||
        t->shape[t->ndim - 2] != rows || t->shape[t->ndim - 1] != cols)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s: shape does not match the op (expected [%lld][%lld])",
                            slot, (long long)rows, (long long)cols);
    if (sk == QF_SCALE_NONE
            ? t->scale.kind != QF_SCALE_NONE
            : (t->scale.kind != sk || t->scale.format != sf || !t->scale.data ||
               (sk == QF_SCALE_BLOCK && t->scale.block != blk) || scale_index(t, 0, 0, 0) < 0))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED,
                            "tensor %s: the scales are not those of this kernel's claim", slot);
    return QF_OK;
}

/* Pack logical operand [rows][depth] (tr: stored [depth][rows]) of batch
 * entry pb as decoded float32 values. */
static void pack_vals(const qf_tensor *t, int64_t pb, int tr, int64_t rows, int64_t depth, float *dst)
{
    const qf_format *f = qf_format_get(t->format);
    float lut[256];
    int64_t r, l;
    int small = f->storage_bits == 8;
    if (small)
        for (r = 0; r < 256; r++)
            lut[r] = (float)qf_format_decode(f, (uint64_t)r);
    for (r = 0; r < rows; r++)
        for (l = 0; l < depth; l++) {
            uint64_t c = _qf_cpu_load_raw(t->data, f->storage_bits,
                                          tr ? _qf_cpu_off(t, pb, l, r) : _qf_cpu_off(t, pb, r, l));
            dst[r * depth + l] = small ? lut[c & 0xFF] : (float)qf_format_decode(f, c);
        }
}

/* The scales of logical row r, block kb (elements kb * blk ...), as
 * floats: dst[r * nkb + kb]. */
static void pack_scales(const qf_tensor *t, int64_t pb, int tr, int64_t rows, int64_t nkb, int64_t blk,
                        float *dst)
{
    const qf_format *sf = qf_format_get(t->scale.format);
    int64_t r, kb;
    for (r = 0; r < rows; r++)
        for (kb = 0; kb < nkb; kb++) {
            int64_t l = kb * blk, si = tr ? scale_index(t, pb, l, r) : scale_index(t, pb, r, l);
            dst[r * nkb + kb] =
                (float)qf_format_decode(sf, _qf_cpu_load_raw(t->scale.data, sf->storage_bits, si));
        }
}

/* Sequential float32 sum of products over [l0, l1): products and sums
 * rounded (the build has -ffp-contract=off). */
static float dot_seq(const float *a, const float *b, int64_t l0, int64_t l1)
{
    float s = 0.0f;
    int64_t l;
    for (l = l0; l < l1; l++) {
        float p = a[l] * b[l];
        s = s + p;
    }
    return s;
}

/* One output element of the float algorithms. */
static float element(int algo, const float *ar, const float *br, const float *sar, const float *sbr,
                     int64_t k, int64_t blk, float alpha)
{
    float acc = 0.0f;
    int64_t l0, kb;
    if (algo == QG_FP8_CHANNEL) {
        for (l0 = 0; l0 < k; l0 += QG_PROMOTE) {
            float part = dot_seq(ar, br, l0, l0 + QG_PROMOTE < k ? l0 + QG_PROMOTE : k);
            acc = acc + part;
        }
        acc = sbr[0] * acc;
        return sar[0] * acc;
    }
    for (kb = 0, l0 = 0; l0 < k; kb++, l0 += blk) {
        float part = dot_seq(ar, br, l0, l0 + blk < k ? l0 + blk : k);
        float term;
        if (algo == QG_MX) {
            /* The e8m0 scales are powers of two: add their exponents (as
             * MX hardware does) and scale once -- exact inside float32's
             * range, one correct rounding below it. */
            term = sar[kb] != sar[kb] || sbr[kb] != sbr[kb] ? NAN
                                                            : ldexpf(part, ilogbf(sar[kb]) + ilogbf(sbr[kb]));
        } else {
            float s = algo == QG_W4A16 ? sbr[kb] : sar[kb] * sbr[kb];
            term = part * s;
        }
        acc = acc + term;
    }
    if (algo == QG_NVFP4)
        acc = acc * alpha;
    return acc;
}

static qf_status gemm_quant_run(const qf_kernel_call *call, int algo)
{
    const qf_op_gemm *g;
    const qf_dtype_tuple *t = call->dtype;
    const qf_tensor *A, *B, *D;
    const qf_format *fo;
    int64_t batch, m, n, k, pb, blk = 1, nkb = 1;
    int trans_a, trans_b;
    qf_scale_kind ska = QF_SCALE_NONE, skb = QF_SCALE_NONE;
    qf_format_id sfa = QF_FLOAT32, sfb = QF_FLOAT32;
    float alpha = 1.0f;
    qf_status s;
    float *pa = NULL, *pbt = NULL, *sa = NULL, *sb = NULL;

    if (!call->op || call->op->op != QF_OP_GEMM || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    g = &call->op->u.gemm;
    if (g->groups || g->alpha != 1 || g->beta != 0)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "grouped GEMM, alpha or beta outside this kernel's claim");
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    trans_a = g->trans_a != 0;
    trans_b = g->trans_b != 0;
    batch = g->batch ? (int64_t)g->batch : 1;
    if (algo == QG_INT8 && k > QG_INT8_KMAX)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "K above %d: the int32 accumulator could overflow",
                            QG_INT8_KMAX);
    switch (algo) {
    case QG_FP8_CHANNEL:
        /* Stored layouts: a [m][k] has a scale per row; a^T [k][m] per column. */
        ska = trans_a ? QF_SCALE_COL : QF_SCALE_ROW;
        skb = trans_b ? QF_SCALE_ROW : QF_SCALE_COL;
        blk = k ? k : 1;
        break;
    case QG_MX:
        ska = skb = QF_SCALE_BLOCK;
        sfa = sfb = QF_FLOAT8_E8M0FNU;
        blk = 32;
        break;
    case QG_NVFP4:
        ska = skb = QF_SCALE_BLOCK;
        sfa = sfb = QF_FLOAT8_E4M3FN;
        blk = 16;
        break;
    case QG_W4A16:
        skb = QF_SCALE_BLOCK;
        sfb = t->in_scale_format[1];
        blk = (int64_t)t->in_scale_block[1];
        break;
    default: break;
    }
    if ((s = check_slot(call, A, "a", t->in[0], ska, sfa, (size_t)blk, batch, trans_a ? k : m,
                        trans_a ? m : k)) != QF_OK ||
        (s = check_slot(call, B, "b", t->in[1], skb, sfb, (size_t)blk, batch, trans_b ? n : k,
                        trans_b ? k : n)) != QF_OK ||
        (s = check_slot(call, D, "d", t->out[0], QF_SCALE_NONE, QF_FLOAT32, 0, batch, m, n)) != QF_OK)
        return s;
    /* Block scales lie along K: the axis must say so. */
    if ((ska == QF_SCALE_BLOCK && A->scale.axis != !trans_a) ||
        (skb == QF_SCALE_BLOCK && B->scale.axis != trans_b))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "block scales must run along K");
    if (batch > 1 && (D->ndim != 3 || D->shape[0] != batch))
        return _qf_cpu_fail(call, QF_EINVAL, "tensor d must be [batch][m][n] for a batched gemm");
    if (algo == QG_NVFP4) {
        if (!A->scale.has_global || !B->scale.has_global)
            return _qf_cpu_fail(call, QF_EUNSUPPORTED, "nvfp4: a and b need their float32 global scales");
        /* cuBLASLt-style: the two global scales become one float32 alpha. */
        alpha = _qf_f32_of_bits(A->scale.global_code) * _qf_f32_of_bits(B->scale.global_code);
    }
    fo = qf_format_get(t->out[0]);
    if (m == 0 || n == 0)
        return QF_OK;
    nkb = k ? (k + blk - 1) / blk : 1;
    pa = malloc((size_t)(m * (k ? k : 1)) * sizeof *pa);
    pbt = malloc((size_t)(n * (k ? k : 1)) * sizeof *pbt);
    sa = malloc((size_t)(m * nkb) * sizeof *sa);
    sb = malloc((size_t)(n * nkb) * sizeof *sb);
    if (!pa || !pbt || !sa || !sb) {
        free(pa);
        free(pbt);
        free(sa);
        free(sb);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory for the packed panels");
    }
    for (pb = 0; pb < batch; pb++) {
        int64_t i;
        int nth = call->threads;
        pack_vals(A, pb, trans_a, m, k, pa);
        pack_vals(B, pb, !trans_b, n, k, pbt);
        if (ska != QF_SCALE_NONE)
            pack_scales(A, pb, trans_a, m, nkb, blk, sa);
        if (skb != QF_SCALE_NONE)
            pack_scales(B, pb, !trans_b, n, nkb, blk, sb);
        (void)nth;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)                                                                    \
    num_threads(nth > 0 ? nth : omp_get_max_threads()) if (m * n * k > 262144)
#endif
        for (i = 0; i < m; i++) {
            int64_t j, l;
            for (j = 0; j < n; j++) {
                const float *ar = pa + i * k, *br = pbt + j * k;
                int64_t off = _qf_cpu_off(D, pb, i, j);
                if (algo == QG_INT8) {
                    /* int32 accumulation: exact, K <= QG_INT8_KMAX. */
                    int32_t acc = 0;
                    for (l = 0; l < k; l++)
                        acc += (int32_t)ar[l] * (int32_t)br[l];
                    ((uint32_t *)D->data)[off] = (uint32_t)acc;
                    continue;
                }
                _qf_cpu_store_code(D, fo, off,
                                   (double)element(algo, ar, br, sa + i * nkb, sb + j * nkb, k, blk, alpha));
            }
        }
    }
    free(pa);
    free(pbt);
    free(sa);
    free(sb);
    return QF_OK;
}

qf_status _qf_cpu_gemm_quant_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return gemm_quant_run(call, algo_of(call->kernel));
}
