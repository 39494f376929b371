/* layernorm_welford.c: CPU candidate LayerNorm with Welford's variance.
 *
 *   layernorm.cpu.welford.f32   float32 x, weight, bias and y; per row of n,
 *                               one pass (Welford 1962), for k = 1 .. n:
 *                                 delta = x_k - M          (rounded)
 *                                 M     = M + delta / k    (two roundings)
 *                                 M2    = M2 + delta * (x_k - M)
 *                                         (three roundings)
 *                               then v = float32(M2 / n + eps) (M2 / n
 *                               rounded, + the binary64 eps rounded once),
 *                               r = 1.0f / sqrtf(v), y_j = (x_j - M) * r * w_j
 *                               + b_j (each rounded), as the two-pass kernel.
 * Claim: the default float32 arithmetic with var_algo = Welford, the model
 * of qf_bound_norm's Welford branch (docs/bounds.md "LayerNorm with
 * Welford's algorithm": the mean's error and M2's error propagated through
 * the update).  weight_offset must be 0 and n at most 2^24 (k exact in
 * float32).  Deterministic.
 *
 * The known-bad variant layernorm.bad.welford_sq (kernels/bad) adds
 * delta * delta to M2 instead of delta * (x_k - M_new), forgetting the
 * factor (k - 1) / k: M2 too large by about sum_k delta_k^2 / k
 * (_QF_DEFECT_WELFORD_NO_FACTOR in kernel->user, NULL for the correct kernel).
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_layernorm_welford_run(void *ctx, const qf_kernel_call *call)
{
    _qf_defect defect = _qf_cpu_defect(ctx);
    _qf_cpu_norm_args a;
    int64_t r;
    qf_status s;
    if ((s = _qf_cpu_norm_args_get(call, QF_OP_LAYERNORM, &a)) != QF_OK)
        return s;
    for (r = 0; r < a.rows; r++) {
        const uint32_t *x = a.x->data, *w = a.w->data, *b = a.b->data;
        uint32_t *y = a.y->data;
        float mean = 0.0f, m2 = 0.0f, v, rs;
        int64_t j;
        for (j = 0; j < a.cols; j++) {
            float xk = _qf_f32_of_bits(x[_qf_cpu_off(a.x, 0, r, j)]);
            float delta = xk - mean, step = delta / (float)(j + 1), d2;
            mean = mean + step;
            d2 = defect == _QF_DEFECT_WELFORD_NO_FACTOR ? delta : xk - mean;
            d2 = delta * d2;
            m2 = m2 + d2;
        }
        v = m2 / (float)a.cols;
        v = (float)((double)v + a.o->eps);
        rs = 1.0f / sqrtf(v);
        for (j = 0; j < a.cols; j++) {
            float t = (_qf_f32_of_bits(x[_qf_cpu_off(a.x, 0, r, j)]) - mean) * rs;
            if (w)
                t = t * _qf_f32_of_bits(w[j * a.w->stride[0]]);
            if (b)
                t = t + _qf_f32_of_bits(b[j * a.b->stride[0]]);
            y[_qf_cpu_off(a.y, 0, r, j)] = _qf_bits_of_f32(t);
        }
    }
    return QF_OK;
}
