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
 * P V, as the bound's O = (P V) / l.  lse = m + logf(l): the model of
 * qf_bound_attention_lse.
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

static qf_status _qf_cpu_attn_check(const qf_kernel_call *call, const qf_tensor *t, const char *slot,
                                    qf_format_id f, int nd, const int64_t *shape)
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

float _qf_cpu_attn_ld(const qf_tensor *t, int64_t off)
{
    const qf_format *f = qf_format_get(t->format);
    uint64_t c = f->storage_bits == 32   ? ((const uint32_t *)t->data)[off]
                 : f->storage_bits == 16 ? ((const uint16_t *)t->data)[off]
                                         : ((const uint8_t *)t->data)[off];
    return (float)qf_format_decode(f, c);
}

void _qf_cpu_attn_st(const qf_tensor *t, int64_t off, float v)
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

int64_t _qf_cpu_attn_off(const qf_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * t->stride[0] + b * t->stride[1] + c * t->stride[2] + d * t->stride[3];
}

qf_status _qf_cpu_attn_args_get(const qf_kernel_call *call, _qf_cpu_attn_args *x)
{
    const qf_dtype_tuple *t = call->dtype;
    const qf_op_attention *a;
    qf_status st;
    char why[128];
    if (!call->op || call->op->op != QF_OP_ATTENTION || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not an attention call");
    a = x->a = &call->op->u.attention;
    if (_qf_cpu_attention_supports(call->kernel, call->op, t, why, sizeof why) != QF_OK)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "%s", why);
    if (call->in[3].data)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "a mask tensor is not supported");
    x->B = (int64_t)a->batch;
    x->H = (int64_t)a->heads;
    x->HK = (int64_t)a->kv_heads;
    x->SQ = (int64_t)a->seq_q;
    x->SK = (int64_t)a->seq_k;
    x->D = (int64_t)a->head_dim;
    x->DV = a->head_dim_v ? (int64_t)a->head_dim_v : x->D;
    x->group = x->H / x->HK;
    x->q = &call->in[0];
    x->k = &call->in[1];
    x->v = &call->in[2];
    x->o = &call->out[0];
    x->lse = &call->out[1];
    {
        int64_t sq[4] = {x->B, x->H, x->SQ, x->D}, sk[4] = {x->B, x->HK, x->SK, x->D},
                sv[4] = {x->B, x->HK, x->SK, x->DV}, so[4] = {x->B, x->H, x->SQ, x->DV};
        if ((st = _qf_cpu_attn_check(call, x->q, "q", t->in[0], 4, sq)) != QF_OK ||
            (st = _qf_cpu_attn_check(call, x->k, "k", t->in[1], 4, sk)) != QF_OK ||
            (st = _qf_cpu_attn_check(call, x->v, "v", t->in[2], 4, sv)) != QF_OK ||
            (st = _qf_cpu_attn_check(call, x->o, "out", t->out[0], 4, so)) != QF_OK ||
            (x->lse->data && (st = _qf_cpu_attn_check(call, x->lse, "lse", t->out[1], 3, so)) != QF_OK))
            return st;
    }
    x->sc = (float)(a->scale > 0 ? a->scale : 1 / sqrt((double)x->D));
    return QF_OK;
}

int64_t _qf_cpu_attn_last(const _qf_cpu_attn_args *x, int64_t i)
{
    if (x->a->mask == QF_MASK_CAUSAL)
        return i < x->SK - 1 ? i : x->SK - 1;
    if (x->a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT)
        return i + (x->SK - x->SQ);
    return x->SK - 1;
}

float _qf_cpu_attn_score(const _qf_cpu_attn_args *x, int64_t b, int64_t h, int64_t i, int64_t j)
{
    float acc = 0.0f;
    int64_t c, hk = h / x->group;
    for (c = 0; c < x->D; c++) {
        float p = _qf_cpu_attn_ld(x->q, _qf_cpu_attn_off(x->q, b, h, i, c)) *
                  _qf_cpu_attn_ld(x->k, _qf_cpu_attn_off(x->k, b, hk, j, c));
        acc = acc + p;
    }
    return acc * x->sc;
}

void _qf_cpu_attn_finish(const _qf_cpu_attn_args *x, int64_t b, int64_t h, int64_t i, const float *o, float m,
                         float l)
{
    int64_t c;
    for (c = 0; c < x->DV; c++)
        _qf_cpu_attn_st(x->o, _qf_cpu_attn_off(x->o, b, h, i, c), o[c] / l);
    if (x->lse->data)
        _qf_cpu_attn_st(x->lse, b * x->lse->stride[0] + h * x->lse->stride[1] + i * x->lse->stride[2],
                        m + logf(l));
}

qf_status _qf_cpu_attention_naive_run(void *ctx, const qf_kernel_call *call)
{
    _qf_cpu_attn_args x;
    int64_t b, h, i, j, c;
    float *s = NULL, *o = NULL;
    qf_status st;
    (void)ctx;
    if ((st = _qf_cpu_attn_args_get(call, &x)) != QF_OK)
        return st;
    s = malloc((size_t)x.SK * sizeof *s);
    o = malloc((size_t)x.DV * sizeof *o);
    if (!s || !o) {
        free(s);
        free(o);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory for the scores");
    }
    for (b = 0; b < x.B; b++)
        for (h = 0; h < x.H; h++)
            for (i = 0; i < x.SQ; i++) {
                int64_t hk = h / x.group, last = _qf_cpu_attn_last(&x, i);
                float m = -INFINITY, l = 0.0f;
                /* S = sc * Q K^T, materialized for the row. */
                for (j = 0; j <= last; j++) {
                    s[j] = _qf_cpu_attn_score(&x, b, h, i, j);
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
                for (c = 0; c < x.DV; c++)
                    o[c] = 0.0f;
                for (j = 0; j <= last; j++)
                    for (c = 0; c < x.DV; c++) {
                        float p = s[j] * _qf_cpu_attn_ld(x.v, _qf_cpu_attn_off(x.v, b, hk, j, c));
                        o[c] = o[c] + p;
                    }
                _qf_cpu_attn_finish(&x, b, h, i, o, m, l);
            }
    free(s);
    free(o);
    return QF_OK;
}
