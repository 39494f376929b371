/* attention_flash.c: flash-style CPU attention forward kernels.
 *
 *   attention.cpu.flash.f32     keys in tiles of 16, online softmax: per
 *                               query row (GQA: key/value head h / group),
 *                               for each tile of the kept keys:
 *                                 s_j   = float32(float32(q . k_j) * sc)
 *                                         (sequential float32 dot, products
 *                                         and sums rounded, no FMA; sc the
 *                                         scale rounded once to float32)
 *                                 m'    = max(m, max_j s_j)
 *                                 alpha = expf(m - m')  (0 for the first tile)
 *                                 p_j   = expf(s_j - m')
 *                                 l     = l * alpha + sum_j p_j
 *                                 o_c   = o_c * alpha + sum_j p~_j v_jc
 *                                         (the tile's sums start from 0,
 *                                         sequential, products rounded)
 *                               with p~_j = p_j; at the end o_c / l into the
 *                               output format (nearest even) and
 *                               lse = m + logf(l).  The running max and sum
 *                               are float32.  f32 and bf16 inputs.
 *   attention.cpu.flash_bf16p   the same with bfloat16 q, k, v and out, and
 *                               p~_j = bfloat16(p_j) (nearest even) before
 *                               P V, while l sums the float32 p_j: what
 *                               FlashAttention-2/3 do on GPUs (P is cast to
 *                               the input type for the second matrix
 *                               product; this is their code's behaviour,
 *                               not a published numerical fact).
 *
 * Claim: the default float32 arithmetic plus attn_kv_tile = 16 and, for
 * flash_bf16p, attn_p_format = bfloat16: the model of qf_bound_attention
 * (docs/bounds.md "Attention"): ceil(n / 16) - 1 rescales, each a computed
 * exp and one rounding of l and of o; the PV chain of a key in tile i is
 * its product, at most 15 additions inside the tile and one per later
 * tile, never more than the n_kv steps the bound counts.
 *
 * Masks: none, causal top-left, causal bottom-right when seq_q <= seq_k;
 * tiles past the last kept key are skipped, as fast kernels do.  Other
 * masks and a softcap are declined (the naive kernel's supports callback).
 * Deterministic, also across thread counts (single thread).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_cpu.h"
#include "qf_kernel.h"

/* p rounded to the P format (nearest even); float32: unchanged. */
static float round_p(const qf_format *pf, float p)
{
    if (!pf)
        return p;
    return (float)qf_format_decode(pf, qf_format_encode(pf, (double)p, QF_ROUND_RNE, 0, 0, 0));
}

qf_status _qf_cpu_attention_flash(const qf_kernel_call *call, const _qf_cpu_flash_cfg *cfg)
{
    _qf_cpu_attn_args x;
    const qf_format *pf;
    int64_t b, h, i, j, c, T;
    float *s = NULL, *o = NULL;
    qf_status st;
    if (!cfg || cfg->kv_tile < 1)
        return _qf_cpu_fail(call, QF_EINVAL, "no tile size");
    if ((st = _qf_cpu_attn_args_get(call, &x)) != QF_OK)
        return st;
    pf = cfg->p_format == QF_FLOAT32 ? NULL : qf_format_get(cfg->p_format);
    T = cfg->kv_tile;
    s = malloc((size_t)T * sizeof *s);
    o = malloc((size_t)x.DV * sizeof *o);
    if (!s || !o) {
        free(s);
        free(o);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory for a tile");
    }
    for (b = 0; b < x.B; b++)
        for (h = 0; h < x.H; h++)
            for (i = 0; i < x.SQ; i++) {
                int64_t hk = h / x.group, last = _qf_cpu_attn_last(&x, i), j0;
                float m = -INFINITY, l = 0.0f;
                for (c = 0; c < x.DV; c++)
                    o[c] = 0.0f;
                for (j0 = 0; j0 <= last; j0 += T) {
                    int64_t n = last + 1 - j0 < T ? last + 1 - j0 : T;
                    float mt = m, alpha, rowsum = 0.0f;
                    /* Scores of the tile and the new running max. */
                    for (j = 0; j < n; j++) {
                        s[j] = _qf_cpu_attn_score(&x, b, h, i, j0 + j);
                        if (s[j] != s[j])
                            mt = NAN;
                        else if (s[j] > mt)
                            mt = s[j];
                    }
                    /* Rescale factor of what came before (m = -inf: nothing). */
                    alpha = m == -INFINITY ? 0.0f : expf(m - mt);
                    m = mt;
                    /* l sums the float32 terms; P V takes them rounded to P's
                     * format (once per tile). */
                    for (j = 0; j < n; j++) {
                        float p = expf(s[j] - m);
                        rowsum = rowsum + p;
                        s[j] = round_p(pf, p);
                    }
                    l = (cfg->defect == _QF_DEFECT_FLASH_NO_RESCALE_L ? l : l * alpha) + rowsum;
                    for (c = 0; c < x.DV; c++) {
                        float pv = 0.0f;
                        for (j = 0; j < n; j++) {
                            float p = s[j] * _qf_cpu_attn_ld(x.v, _qf_cpu_attn_off(x.v, b, hk, j0 + j, c));
                            pv = pv + p;
                        }
                        o[c] = o[c] * alpha + pv;
                    }
                }
                _qf_cpu_attn_finish(&x, b, h, i, o, m, l);
            }
    free(s);
    free(o);
    return QF_OK;
}

qf_status _qf_cpu_attention_flash_run(void *ctx, const qf_kernel_call *call)
{
    return _qf_cpu_attention_flash(call, (const _qf_cpu_flash_cfg *)ctx);
}
