/* attention.c: attention.bad.drop_tail, a tiled attention forward that
 * drops the last KV tile.
 *
 * float32 q, k, v, out and lse, layouts "BHSD" (qf_kernel.h), GQA, no mask
 * or the top-left causal mask.  Scores, the softmax and P V are computed
 * in binary64 and each output rounded once to float32, which is well
 * inside the claimed float32 attention bound (qf_bound_attention).  Keys
 * are walked in tiles of 64; the defect: the loop runs over whole tiles
 * only (seq_k / 64 of them), so when seq_k is not a multiple of 64 the
 * last seq_k % 64 keys are never seen (and with seq_k < 64 no key is:
 * 0 / 0 = NaN).  Shows for seq_k % 64 != 0; seq_k = 64, 128 are right.
 */
#include <math.h>
#include <stdlib.h>

#include "_bad.h"

#define KV_TILE 64

qf_status _qf_bad_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size)
{
    const qf_op_attention *a = &op->u.attention;
    (void)k;
    (void)dtype;
    if ((a->mask != QF_MASK_NONE && a->mask != QF_MASK_CAUSAL) || a->softcap != 0 || a->kv_heads == 0 ||
        a->heads % a->kv_heads) {
        snprintf(why, why_size, "only no mask or the top-left causal mask, no softcap, heads a multiple of kv_heads");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static double f32(const uint32_t *p, size_t i)
{
    return _qf_f32_of_bits(p[i]);
}

qf_status _qf_bad_attention_drop_tail_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_attention *a;
    const uint32_t *q, *k, *v;
    uint32_t *o, *lse;
    size_t b, h, i, j, c, D, DV, SK, seen, group;
    double scale, *s, *acc;
    char why[160];
    qf_status st;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_ATTENTION || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not an attention call");
    if ((st = _qf_bad_attention_supports(call->kernel, call->op, call->dtype, why, sizeof why)) != QF_OK)
        return _qf_cpu_fail(call, st, "%s", why);
    a = &call->op->u.attention;
    for (i = 0; i < 3; i++)
        if (!call->in[i].data || call->in[i].format != QF_FLOAT32)
            return _qf_cpu_fail(call, QF_EINVAL, "q, k and v must be float32");
    if (!call->out[0].data || call->out[0].format != QF_FLOAT32 ||
        (call->out[1].data && call->out[1].format != QF_FLOAT32))
        return _qf_cpu_fail(call, QF_EINVAL, "out and lse must be float32");
    q = call->in[0].data;
    k = call->in[1].data;
    v = call->in[2].data;
    o = call->out[0].data;
    lse = call->out[1].data;
    D = a->head_dim;
    DV = a->head_dim_v ? a->head_dim_v : D;
    SK = a->seq_k;
    group = a->heads / a->kv_heads;
    scale = a->scale > 0 ? a->scale : 1 / sqrt((double)D);
    /* The defect: whole tiles only; the partial last tile is dropped. */
    seen = SK - SK % KV_TILE;
    s = malloc((SK ? SK : 1) * sizeof *s);
    acc = malloc((DV ? DV : 1) * sizeof *acc);
    if (!s || !acc) {
        free(s);
        free(acc);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory");
    }
    for (b = 0; b < a->batch; b++)
        for (h = 0; h < a->heads; h++)
            for (i = 0; i < a->seq_q; i++) {
                size_t row = (b * a->heads + h) * a->seq_q + i;
                size_t kv = (b * a->kv_heads + h / group) * SK;
                size_t last = seen;
                double mx = -INFINITY, sum = 0;
                if (a->mask == QF_MASK_CAUSAL && i + 1 < last)
                    last = i + 1;
                for (j = 0; j < last; j++) {
                    double d = 0;
                    for (c = 0; c < D; c++)
                        d += f32(q, row * D + c) * f32(k, (kv + j) * D + c);
                    s[j] = scale * d;
                    mx = fmax(mx, s[j]);
                }
                for (c = 0; c < DV; c++)
                    acc[c] = 0;
                for (j = 0; j < last; j++) {
                    double e = exp(s[j] - mx);
                    sum += e;
                    for (c = 0; c < DV; c++)
                        acc[c] += e * f32(v, (kv + j) * DV + c);
                }
                for (c = 0; c < DV; c++)
                    o[row * DV + c] = _qf_bits_of_f32((float)(acc[c] / sum));
                if (lse)
                    lse[row] = _qf_bits_of_f32((float)(mx + log(sum)));
            }
    free(s);
    free(acc);
    return QF_OK;
}
