/* moe_router.c: CPU candidate MoE router (softmax, then top-k).
 *
 *   moe_router.cpu.softmax_topk   float32 logits [tokens][experts] -> float32
 *                                 weights and int32 indices [tokens][top_k]:
 *     selection on the logits themselves (softmax is monotonic, so the
 *     top-k of the logits is the top-k of the scores, as fast routers do):
 *     the k largest, in decreasing order, equal logits by lower expert
 *     index -- the reference's rule, so indices match it exactly;
 *     m = max logit; e_i = expf(l_i - m) (float32);
 *     weights: renormalize: e_i / (sum of the selected e, in slot order),
 *              else e_i / (sum of all e, in expert order), sequential
 *              float32 sums, one division; then * float32(route_scale)
 *              when it is not 1.
 * Weights lie in (0, 1] without cancellation, so a max_ulp claim is
 * stable in the shape of the data: the relative error is a few u from expf,
 * the division and the sum (worst case 2 (n - 1) ulps over n summed
 * experts, typically about sqrt(n)), plus u |l_i - m| from the rounded
 * argument.  Measured over rows of 8 to 256 experts, top_k 1 to 8, with
 * and without renormalization and route_scale, 3 seeds: 8.6 ulps on
 * normal logits, 62.5 with 1% of the logits times 100 (argument spreads of
 * a few hundred).  The claim is 256 ulps, for at most 256 experts; logit
 * spreads much beyond ~500 are outside it.  sigmoid scores, a selection
 * bias, and a route_scale that is not a positive float32 value
 * are declined.  Deterministic.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_moe_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype, char *why,
                               size_t why_size)
{
    const qf_op_moe_router *m = &op->u.moe_router;
    (void)k;
    (void)dtype;
    if (m->score != QF_REF_ROUTER_SOFTMAX) {
        snprintf(why, why_size, "only softmax scores");
        return QF_EUNSUPPORTED;
    }
    if (m->experts > 256 || m->top_k == 0 || m->top_k > m->experts) {
        snprintf(why, why_size, "experts up to 256 (the measured claim) and 0 < top_k <= experts");
        return QF_EUNSUPPORTED;
    }
    if ((double)(float)m->route_scale != m->route_scale || !(m->route_scale > 0)) {
        snprintf(why, why_size, "route_scale must be a positive float32 value");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

qf_status _qf_cpu_moe_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_moe_router *o;
    const qf_tensor *Lg, *W, *I;
    int64_t T, E, K, t, e, s;
    float *ex = NULL;
    int32_t *sel = NULL;
    qf_status st;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_MOE_ROUTER || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a moe_router call");
    o = &call->op->u.moe_router;
    {
        char why[128];
        if (_qf_cpu_moe_supports(call->kernel, call->op, call->dtype, why, sizeof why) != QF_OK)
            return _qf_cpu_fail(call, QF_EUNSUPPORTED, "%s", why);
    }
    if (call->in[1].data)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "a selection bias is not supported");
    T = (int64_t)o->tokens;
    E = (int64_t)o->experts;
    K = (int64_t)o->top_k;
    Lg = &call->in[0];
    W = &call->out[0];
    I = &call->out[1];
    if ((st = _qf_cpu_check2(call, Lg, "logits", QF_FLOAT32, -1, T, E)) != QF_OK ||
        (st = _qf_cpu_check2(call, W, "weights", QF_FLOAT32, -1, T, K)) != QF_OK)
        return st;
    if (!I->data || I->index_bits != 32 || I->ndim != 2 || I->shape[0] != T || I->shape[1] != K)
        return _qf_cpu_fail(call, QF_EINVAL, "indices must be int32 [tokens][top_k]");
    ex = malloc((size_t)E * sizeof *ex);
    sel = malloc((size_t)K * sizeof *sel);
    if (!ex || !sel) {
        free(ex);
        free(sel);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory");
    }
    for (t = 0; t < T; t++) {
        const uint32_t *lg = Lg->data;
        float m = -INFINITY, den = 0.0f, rs = (float)o->route_scale;
        int bad = 0;
        for (e = 0; e < E; e++) {
            ex[e] = _qf_f32_of_bits(lg[_qf_cpu_off(Lg, 0, t, e)]);
            if (ex[e] != ex[e] || ex[e] == INFINITY)
                bad = 1;
            else if (ex[e] > m)
                m = ex[e];
        }
        if (m == -INFINITY)
            bad = 1;
        /* Top-k by insertion: strictly larger logits first, equal ones keep
         * the lower index (scanned first). */
        for (s = 0; s < K; s++)
            sel[s] = -1;
        for (e = 0; e < E && !bad; e++) {
            int64_t pos = K;
            while (pos > 0 && (sel[pos - 1] < 0 || ex[e] > ex[sel[pos - 1]]))
                pos--;
            if (pos < K) {
                for (s = K - 1; s > pos; s--)
                    sel[s] = sel[s - 1];
                sel[pos] = (int32_t)e;
            }
        }
        for (s = 0; s < K && !bad; s++)
            if (sel[s] < 0)
                bad = 1;
        if (!bad) {
            for (e = 0; e < E; e++)
                ex[e] = expf(ex[e] - m); /* -inf logits give 0 */
            if (o->renormalize)
                for (s = 0; s < K; s++)
                    den = den + ex[sel[s]];
            else
                for (e = 0; e < E; e++)
                    den = den + ex[e];
        }
        for (s = 0; s < K; s++) {
            float w = bad ? NAN : ex[sel[s]] / den;
            if (!bad && rs != 1.0f)
                w = w * rs;
            ((uint32_t *)W->data)[_qf_cpu_off(W, 0, t, s)] = _qf_bits_of_f32(w);
            ((int32_t *)I->data)[_qf_cpu_off(I, 0, t, s)] = bad ? -1 : sel[s];
        }
    }
    free(ex);
    free(sel);
    return QF_OK;
}
