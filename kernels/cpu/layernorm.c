/* layernorm.c: CPU candidate LayerNorm kernel.
 *
 *   layernorm.cpu.twopass.f32   float32 x, weight, bias and y; per row of n:
 *                                 S  = sum_j x_j, sequential float32
 *                                 mu = S / n            (one rounding)
 *                                 d_j = x_j - mu        (rounded)
 *                                 Q  = sum_j d_j * d_j, sequential float32
 *                                 v  = float32(Q / n + eps)  (Q / n rounded,
 *                                      then + the binary64 eps rounded once)
 *                                 r  = 1.0f / sqrtf(v)
 *                                 y_j = (d_j * r) * w_j + b_j  (each rounded)
 * This is the two-pass model qf_bound_norm derives its bound from (center =
 * 1: n - 1 additions and the division for the mean, the centred values
 * rounded once, n roundings of the sum of squares, one for / n, one for +
 * eps, the reciprocal square root within elem_ulp = 2 ulps -- correctly
 * rounded sqrtf then a division: at most 1.5 ulps --, then * r, * w, + b).
 * Claim: the default float32 arithmetic.  weight_offset must be 0 and n at
 * most 2^24 (n exact in float32).  Deterministic.
 *
 * The known-bad layernorm.bad.onepass (kernels/bad) is this kernel with
 * _QF_DEFECT_LAYERNORM_ONE_PASS in kernel->user (NULL here): the variance
 * is the one-pass E[x^2] - E[x]^2, v = float32(S2 / n) - mu * mu with
 * S2 = sum_j x_j * x_j sequential float32, then + eps as above; it cancels
 * when |mean| >> std (and can come out negative: NaN).
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_layernorm_twopass_run(void *ctx, const qf_kernel_call *call)
{
    _qf_cpu_norm_args a;
    const qf_op_norm *o;
    const qf_tensor *X, *W, *B, *Y;
    int64_t rows, cols, r;
    qf_status s;
    int one_pass = _qf_cpu_defect(ctx) == _QF_DEFECT_LAYERNORM_ONE_PASS;
    if ((s = _qf_cpu_norm_args_get(call, QF_OP_LAYERNORM, &a)) != QF_OK)
        return s;
    o = a.o;
    X = a.x;
    W = a.w;
    B = a.b;
    Y = a.y;
    rows = a.rows;
    cols = a.cols;
    for (r = 0; r < rows; r++) {
        const uint32_t *x = X->data, *w = W->data, *b = B->data;
        uint32_t *y = Y->data;
        float sum = 0.0f, mu, q = 0.0f, v, rs;
        int64_t j;
        for (j = 0; j < cols; j++)
            sum = sum + _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
        mu = sum / (float)cols;
        if (one_pass) {
            float m2 = mu * mu;
            for (j = 0; j < cols; j++) {
                float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
                float sq = xv * xv;
                q = q + sq;
            }
            v = q / (float)cols;
            v = v - m2;
        } else {
            for (j = 0; j < cols; j++) {
                float d = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]) - mu;
                float sq = d * d;
                q = q + sq;
            }
            v = q / (float)cols;
        }
        v = (float)((double)v + o->eps);
        rs = 1.0f / sqrtf(v);
        for (j = 0; j < cols; j++) {
            float d = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]) - mu;
            float t = d * rs;
            if (w)
                t = t * _qf_f32_of_bits(w[j * W->stride[0]]);
            if (b)
                t = t + _qf_f32_of_bits(b[j * B->stride[0]]);
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(t);
        }
    }
    return QF_OK;
}
