/* softmax_online.c: CPU candidate online softmax (Milakov and Gimelshein,
 * "Online normalizer calculation for softmax", 2018).
 *
 *   softmax.cpu.online.f32   float32 codes in and out, per row, two passes
 *                            instead of three:
 *                              pass 1, for j = 0..n-1 (z_j = float32(scale x_j)):
 *                                if z_j > m: l = l * expf(m - z_j) + 1; m = z_j
 *                                else:       l = l + expf(z_j - m)
 *                              pass 2: y_j = expf(z_j - m) / l
 *                            every operation in float32, nearest even.
 * Each rescale l * expf(m_old - m_new) perturbs the weights already summed
 * (an argument error of u |m_old - m_new| and the expf and product
 * roundings), which the derived softmax bound (one max, one sum) does not
 * model; docs/bounds.md says to claim a max_ulp for such a kernel.  The
 * claim, max_ulp = 256 (float32 output ulps), for rows of at most 8192:
 * the measured maximum over the shapes/kernels.yaml group (normal and
 * outlier inputs, 1% of entries times 100; rows of 1 to 4096) is 63.7
 * ulps, and 18.6 on normal rows of 1000 -- the sequential sum's rounding
 * error, which grows with the row, moves every output; arguments z_j - m
 * far from 0 add u |z_j - m| relative.  The margin (4x) is for seeds and
 * rows up to 8192 not measured; rows longer than 8192 are declined, as is
 * log_softmax.  Deterministic.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_softmax_online_supports(const qf_kernel *k, const qf_op_desc *op,
                                          const qf_dtype_tuple *dtype, char *why, size_t why_size)
{
    if (op->u.softmax.cols > 8192) {
        snprintf(why, why_size, "rows longer than 8192: outside the measured max_ulp claim");
        return QF_EUNSUPPORTED;
    }
    return _qf_cpu_softmax_supports(k, op, dtype, why, why_size);
}

qf_status _qf_cpu_softmax_online_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_softmax *o;
    const qf_tensor *X, *Y;
    int64_t rows, cols, r;
    qf_status s;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_SOFTMAX || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a softmax call");
    o = &call->op->u.softmax;
    if (o->log || !isfinite(o->scale))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "log_softmax or a non-finite scale");
    X = &call->in[0];
    Y = &call->out[0];
    rows = (int64_t)o->rows;
    cols = (int64_t)o->cols;
    if ((s = _qf_cpu_check2(call, X, "x", QF_FLOAT32, -1, rows, cols)) != QF_OK ||
        (s = _qf_cpu_check2(call, Y, "y", QF_FLOAT32, -1, rows, cols)) != QF_OK)
        return s;
    if (X->ndim != 2 || Y->ndim != 2)
        return _qf_cpu_fail(call, QF_EINVAL, "softmax tensors must be 2-d [rows][cols]");
    for (r = 0; r < rows; r++) {
        const uint32_t *x = X->data;
        uint32_t *y = Y->data;
        float m = -INFINITY, l = 0.0f;
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
        for (j = 0; j < cols; j++) {
            int64_t oy = _qf_cpu_off(Y, 0, r, j);
            float e = expf(_qf_f32_of_bits(y[oy]) - m);
            y[oy] = _qf_bits_of_f32(e / l);
        }
    }
    return QF_OK;
}
