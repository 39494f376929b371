/* softmax.c: softmax.bad.nomax, a softmax without max subtraction.
 *
 * Per row: z_j = float32(scale * x_j), e_j = expf(z_j), s = sequential
 * float32 sum of e_j, y_j = e_j / s; it claims what softmax.cpu.f32 claims
 * (float32 compute, expf within 2 ulps, nearest even).  The defect: no
 * m = max z_j is subtracted before expf, so expf overflows to +inf once
 * some z_j > 88.7 (the row becomes inf / inf = NaN, or 0 and NaN), and a
 * row whose entries are all below about -87 underflows into subnormals
 * and 0 / 0.  Shows on rows with large entries (normal with std 100, or
 * logits in the hundreds); hidden on rows of moderate magnitude
 * (|z| < ~80), where expf(z) is as accurate as expf(z - m).
 */
#include <math.h>

#include "_bad.h"

qf_status _qf_bad_softmax_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (op->u.softmax.log || !isfinite(op->u.softmax.scale)) {
        snprintf(why, why_size, "log_softmax and a non-finite scale are not implemented by this kernel");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

qf_status _qf_bad_softmax_nomax_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_softmax *o;
    const qf_tensor *X, *Y;
    int64_t rows, cols, r, j;
    qf_status s;
    (void)ctx;
    if ((s = _qf_cpu_softmax_args_get(call, &o, &X, &Y)) != QF_OK)
        return s;
    rows = (int64_t)o->rows;
    cols = (int64_t)o->cols;
    for (r = 0; r < rows; r++) {
        const uint32_t *x = X->data;
        uint32_t *y = Y->data;
        float sum = 0.0f;
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float z = o->scale == 1.0 ? xv : (float)(o->scale * (double)xv);
            float e = expf(z); /* the defect: expf(z - max z) is the safe form */
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(e);
            sum = sum + e;
        }
        for (j = 0; j < cols; j++) {
            int64_t oy = _qf_cpu_off(Y, 0, r, j);
            y[oy] = _qf_bits_of_f32(_qf_f32_of_bits(y[oy]) / sum);
        }
    }
    return QF_OK;
}
