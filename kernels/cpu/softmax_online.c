/* softmax_online.c: CPU candidate online softmax (Milakov and Gimelshein,
 * "Online normalizer calculation for softmax", 2018).
 *
 *   softmax.cpu.online.f32   float32 codes in and out, per row, two passes
 *                            instead of three:
 *                              pass 1, for j = 0..n-1 (z_j = float32(scale x_j)):
 *                                if z_j > m: l = l * expf(m - z_j) + 1; m = z_j
 *                                else:       l = l + expf(z_j - m)
 *                              pass 2: y_j = expf(z_j - m) / l
 *                                (log_softmax: y_j = (z_j - m) - logf(l))
 *                            every operation in float32, nearest even.
 * Each rescale l * expf(m_old - m_new) perturbs the weights already summed
 * (an argument error of u |m_old - m_new|, the expf and the product's
 * rounding).  Claim: the derived softmax bound with attn_kv_tile = 1 (an
 * online normalizer over tiles of one element: at most n - 1 rescales),
 * docs/bounds.md "Online softmax".  An earlier measured claim of 256 ulps
 * was unsound: rows of 8192 nearly equal logits reach 334 ulps and rows
 * with subnormal entries 847 (tests/stress/nl-softmax-online.yaml).
 * log_softmax: the same online sum, the bound of docs/bounds.md
 * "Log-softmax" with the online factor.  Deterministic.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_softmax_online_supports(const qf_kernel *k, const qf_op_desc *op,
                                          const qf_dtype_tuple *dtype, char *why, size_t why_size)
{
    return _qf_cpu_softmax_supports(k, op, dtype, why, why_size);
}

qf_status _qf_cpu_softmax_online_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_softmax *o;
    const qf_tensor *X, *Y;
    int64_t rows, cols, r;
    qf_status s;
    (void)ctx;
    if ((s = _qf_cpu_softmax_args_get(call, &o, &X, &Y)) != QF_OK)
        return s;
    rows = (int64_t)o->rows;
    cols = (int64_t)o->cols;
    for (r = 0; r < rows; r++) {
        const uint32_t *x = X->data;
        uint32_t *y = Y->data;
        float m = -INFINITY, l = 0.0f, lg;
        int64_t j;
        int has_nan = 0;
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float z = o->scale == 1.0 ? xv : (float)(o->scale * (double)xv);
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(z);
            if (z != z) {
                has_nan = 1;
            } else if (z > m) {
                /* l * expf(-inf) = 0 for the first key: l starts at 0. */
                float f = m == -INFINITY ? 0.0f : expf(m - z);
                l = l * f;
                l = l + 1.0f;
                m = z;
            } else {
                l = l + expf(z - m);
            }
        }
        if (has_nan || m == INFINITY || m == -INFINITY)
            m = NAN, l = NAN; /* the reference's UNDEFINED rows */
        lg = o->log ? logf(l) : 0.0f;
        for (j = 0; j < cols; j++) {
            int64_t oy = _qf_cpu_off(Y, 0, r, j);
            float z = _qf_f32_of_bits(y[oy]);
            y[oy] = _qf_bits_of_f32(o->log ? (z - m) - lg : expf(z - m) / l);
        }
    }
    return QF_OK;
}
