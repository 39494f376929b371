/* attention.c: CPU candidate attention forward kernel.
 *
 *   attention.cpu.naive.f32   scores materialized in float32, per query row
 *                             (batch b, head h, position i; GQA: key/value
 *                             head h / (heads / kv_heads)):
 *                               s_j = float32(float32(q . k_j) * sc)
 *                                 q . k_j: sequential float32 dot, products
 *                                 and sums rounded (no FMA); sc = the scale
 *                                 rounded to float32 once;
 *                               m = max_j s_j over the kept keys;
 *                               t_j = expf(s_j - m);  l = sum_j t_j
 *                                 (sequential float32);
 *                               o_c = (sum_j t_j v_jc) / l  (sequential
 *                                 float32 dot, products rounded; one division);
 *                               lse = m + logf(l) (float32).
 *                             The output is rounded once into the tuple's
 *                             output format (nearest even).
 *
 * Claim: the default float32 arithmetic (acc float32, block 1, sequential,
 * nearest even, elem_ulp 0 = 2 ulps, which covers glibc's expf).  This is
 * the model of qf_bound_attention with p_format = NULL (P stays float32)
 * and kv_tile = 0 (one pass over the keys), which is what the runner
 * derives the bound with: the scores are a GEMM with K = head_dim and one
 * epilogue rounding (* sc); the rounding of sc itself is one of the two
 * u |s_j| terms of the argument error; the normalization happens after
 * P V, as the bound's O = (P V) / l.  lse has no derived bound (fitness
 * only).
 *
 * Masks: none, causal (top-left), causal bottom-right when seq_q <= seq_k
 * (no fully masked row); windows, additive and boolean masks and a softcap
 * are declined.  Deterministic, also across thread counts (single thread).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size)
{
    const qf_op_attention *a = &op->u.attention;
    (void)k;
    (void)dtype;
    if (a->mask != QF_MASK_NONE && a->mask != QF_MASK_CAUSAL && a->mask != QF_MASK_CAUSAL_BOTTOM_RIGHT) {
        snprintf(why, why_size, "mask %s is not supported (none, causal, causal_bottom_right)",
                 qf_mask_kind_name(a->mask));
        return QF_EUNSUPPORTED;
    }
    if (a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT && a->seq_q > a->seq_k) {
        snprintf(why, why_size, "bottom-right causal with seq_q > seq_k (fully masked rows)");
        return QF_EUNSUPPORTED;
    }
    if (a->softcap != 0 || !(a->scale >= 0) || !isfinite(a->scale)) {
        snprintf(why, why_size, "a softcap or a non-finite scale is not supported");
        return QF_EUNSUPPORTED;
    }
    if (a->kv_heads == 0 || a->heads % a->kv_heads || a->head_dim == 0 || a->seq_k == 0) {
        snprintf(why, why_size, "heads must be a multiple of kv_heads; head_dim and seq_k > 0");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_status check4(const qf_kernel_call *call, const qf_tensor *t, const char *slot, qf_format_id f,
                        int nd, const int64_t *shape)
{
    int i;
    if (!t->data)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed || t->scale.kind != QF_SCALE_NONE || t->ndim != nd)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "tensor %s: %d-d %s unscaled expected", slot, nd,
                            qf_format_get(f)->name);
    for (i = 0; i < nd; i++)
        if (t->shape[i] != shape[i])
            return _qf_cpu_fail(call, QF_EINVAL, "tensor %s: extent %d is %lld, expected %lld", slot, i,
                                (long long)t->shape[i], (long long)shape[i]);
    return QF_OK;
}

static float ld(const qf_tensor *t, int64_t off)
{
    const qf_format *f = qf_format_get(t->format);
    uint64_t c = f->storage_bits == 32   ? ((const uint32_t *)t->data)[off]
                 : f->storage_bits == 16 ? ((const uint16_t *)t->data)[off]
                                         : ((const uint8_t *)t->data)[off];
    return (float)qf_format_decode(f, c);
}

static void st(const qf_tensor *t, int64_t off, float v)
{
    const qf_format *f = qf_format_get(t->format);
    uint64_t c = qf_format_encode(f, (double)v, QF_ROUND_RNE, 0, 0, 0);
    if (f->storage_bits == 32)
        ((uint32_t *)t->data)[off] = (uint32_t)c;
    else if (f->storage_bits == 16)
        ((uint16_t *)t->data)[off] = (uint16_t)c;
    else
        ((uint8_t *)t->data)[off] = (uint8_t)c;
}

static int64_t off4(const qf_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * t->stride[0] + b * t->stride[1] + c * t->stride[2] + d * t->stride[3];
}

qf_status _qf_cpu_attention_naive_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_attention *a;
    const qf_dtype_tuple *t = call->dtype;
    const qf_tensor *Q, *K, *V, *O, *L;
    int64_t B, H, HK, SQ, SK, D, DV, b, h, i, j, c, group;
    float sc, *s = NULL, *o = NULL;
    qf_status st_;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_ATTENTION || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not an attention call");
    a = &call->op->u.attention;
    {
        char why[128];
        if (_qf_cpu_attention_supports(call->kernel, call->op, t, why, sizeof why) != QF_OK)
            return _qf_cpu_fail(call, QF_EUNSUPPORTED, "%s", why);
    }
    if (call->in[3].data)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "a mask tensor is not supported");
    B = (int64_t)a->batch;
    H = (int64_t)a->heads;
    HK = (int64_t)a->kv_heads;
    SQ = (int64_t)a->seq_q;
    SK = (int64_t)a->seq_k;
    D = (int64_t)a->head_dim;
    DV = a->head_dim_v ? (int64_t)a->head_dim_v : D;
    group = H / HK;
    Q = &call->in[0];
    K = &call->in[1];
    V = &call->in[2];
    O = &call->out[0];
    L = &call->out[1];
    {
        int64_t sq[4] = {B, H, SQ, D}, sk[4] = {B, HK, SK, D}, sv[4] = {B, HK, SK, DV}, so[4] = {B, H, SQ, DV};
        if ((st_ = check4(call, Q, "q", t->in[0], 4, sq)) != QF_OK ||
            (st_ = check4(call, K, "k", t->in[1], 4, sk)) != QF_OK ||
            (st_ = check4(call, V, "v", t->in[2], 4, sv)) != QF_OK ||
            (st_ = check4(call, O, "out", t->out[0], 4, so)) != QF_OK ||
            (L->data && (st_ = check4(call, L, "lse", t->out[1], 3, so)) != QF_OK))
            return st_;
    }
    sc = (float)(a->scale > 0 ? a->scale : 1 / sqrt((double)D));
    s = malloc((size_t)SK * sizeof *s);
    o = malloc((size_t)DV * sizeof *o);
    if (!s || !o) {
        free(s);
        free(o);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory for the scores");
    }
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (i = 0; i < SQ; i++) {
                int64_t hk = h / group, last = SK - 1;
                float m = -INFINITY, l = 0.0f;
                if (a->mask == QF_MASK_CAUSAL)
                    last = i < SK - 1 ? i : SK - 1;
                else if (a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT)
                    last = i + (SK - SQ);
                /* S = sc * Q K^T, materialized for the row. */
                for (j = 0; j <= last; j++) {
                    float acc = 0.0f;
                    for (c = 0; c < D; c++) {
                        float p = ld(Q, off4(Q, b, h, i, c)) * ld(K, off4(K, b, hk, j, c));
                        acc = acc + p;
                    }
                    s[j] = acc * sc;
                    if (s[j] != s[j])
                        m = NAN; /* and stays NaN: NaN > x is false */
                    else if (s[j] > m)
                        m = s[j];
                }
                /* P = exp(S - m), unnormalized; l = sum P. */
                for (j = 0; j <= last; j++) {
                    s[j] = expf(s[j] - m);
                    l = l + s[j];
                }
                for (c = 0; c < DV; c++)
                    o[c] = 0.0f;
                for (j = 0; j <= last; j++)
                    for (c = 0; c < DV; c++) {
                        float p = s[j] * ld(V, off4(V, b, hk, j, c));
                        o[c] = o[c] + p;
                    }
                for (c = 0; c < DV; c++)
                    st(O, off4(O, b, h, i, c), o[c] / l);
                if (L->data)
                    st(L, b * L->stride[0] + h * L->stride[1] + i * L->stride[2], m + logf(l));
            }
    free(s);
    free(o);
    return QF_OK;
}
