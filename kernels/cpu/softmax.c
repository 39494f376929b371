/* softmax.c: the built-in CPU softmax and log-softmax kernel.
 *
 *   softmax.cpu.f32   float32 codes in and out, per row (max-subtracted,
 *                     the usual safe form):
 *                       z_j = float32(scale * x_j)   (exact when scale = 1)
 *                       m   = max_j z_j
 *                       e_j = expf(z_j - m)
 *                       s   = sum_j e_j, sequential, float32
 *                       y_j = e_j / s
 *                     log_softmax (the shifted log-sum-exp, as ONNX
 *                     Runtime's MLAS and the CUDA and HIP kernels write it):
 *                       y_j = (z_j - m) - logf(s)
 * The claim: compute format float32 (acc_format), nearest even, expf and
 * logf within elem_ulp = 0 (the bound module's default of 2 ulps, which
 * covers glibc's), output float32 nearest even; deterministic.  Both
 * bounds are derived (docs/bounds.md "Softmax", "Log-softmax").
 * Special rows follow IEEE arithmetic and so match the reference's
 * UNDEFINED rows (qf_ref.h): a NaN, a +inf entry, or a row of -inf only
 * gives NaN everywhere; -inf entries of other rows give exactly 0 (log:
 * -inf).
 *
 * The known-bad softmax.bad.nomax (kernels/bad) is this kernel with
 * _QF_DEFECT_SOFTMAX_NO_MAX in kernel->user (NULL here): m is taken as 0,
 * so e_j = expf(z_j - 0) = expf(z_j) (subtracting +0 changes no float,
 * -0 included), which overflows once some z_j > 88.7.  softmax.bad.bf16_sum
 * is this kernel with _QF_DEFECT_SOFTMAX_BF16_SUM: every partial sum of s
 * rounded to bfloat16 (a bfloat16 accumulator) while the claim says
 * float32.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_softmax_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (!isfinite(op->u.softmax.scale)) {
        snprintf(why, why_size, "the scale must be finite");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

qf_status _qf_cpu_softmax_args_get(const qf_kernel_call *call, const qf_op_softmax **o, const qf_tensor **X,
                                   const qf_tensor **Y)
{
    qf_status s;
    int64_t rows, cols;
    if (!call->op || call->op->op != QF_OP_SOFTMAX || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a softmax call");
    *o = &call->op->u.softmax;
    if (!isfinite((*o)->scale))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "a non-finite scale");
    *X = &call->in[0];
    *Y = &call->out[0];
    rows = (int64_t)(*o)->rows;
    cols = (int64_t)(*o)->cols;
    if ((s = _qf_cpu_check2(call, *X, "x", QF_FLOAT32, -1, rows, cols)) != QF_OK ||
        (s = _qf_cpu_check2(call, *Y, "y", QF_FLOAT32, -1, rows, cols)) != QF_OK)
        return s;
    /* _qf_cpu_check2 would accept a leading extent; every row is one of
     * the 2-d [rows][cols] matrix here. */
    if ((*X)->ndim != 2 || (*Y)->ndim != 2)
        return _qf_cpu_fail(call, QF_EINVAL, "softmax tensors must be 2-d [rows][cols]");
    return QF_OK;
}

/* v rounded to bfloat16, nearest even (softmax.bad.bf16_sum's running sum). */
static float bf16_rne(float v)
{
    const qf_format *bf = qf_format_get(QF_BFLOAT16);
    return (float)qf_format_decode(bf, qf_format_encode(bf, v, QF_ROUND_RNE, 0, 0, 0));
}

qf_status _qf_cpu_softmax_f32_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_softmax *o;
    const qf_tensor *X, *Y;
    int64_t rows, cols, r;
    double scale;
    qf_status s;
    int no_max = _qf_cpu_defect(ctx) == _QF_DEFECT_SOFTMAX_NO_MAX;
    int bf16_sum = _qf_cpu_defect(ctx) == _QF_DEFECT_SOFTMAX_BF16_SUM;
    if ((s = _qf_cpu_softmax_args_get(call, &o, &X, &Y)) != QF_OK)
        return s;
    rows = (int64_t)o->rows;
    cols = (int64_t)o->cols;
    scale = o->scale;
    for (r = 0; r < rows; r++) {
        const uint32_t *x = X->data;
        uint32_t *y = Y->data;
        float m = -INFINITY, sum = 0.0f, lg;
        int64_t j;
        int has_nan = 0;
        /* y holds z, then e (softmax), then the result: one pass each. */
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float z = scale == 1.0 ? xv : (float)(scale * (double)xv);
            if (z != z)
                has_nan = 1;
            else if (z > m)
                m = z;
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(z);
        }
        if (has_nan)
            m = NAN;
        if (no_max)
            m = 0.0f;
        for (j = 0; j < cols; j++) {
            int64_t oy = _qf_cpu_off(Y, 0, r, j);
            float e = expf(_qf_f32_of_bits(y[oy]) - m);
            if (!o->log)
                y[oy] = _qf_bits_of_f32(e);
            sum = sum + e;
            if (bf16_sum)
                sum = bf16_rne(sum);
        }
        lg = o->log ? logf(sum) : 0.0f;
        for (j = 0; j < cols; j++) {
            int64_t oy = _qf_cpu_off(Y, 0, r, j);
            float v = _qf_f32_of_bits(y[oy]);
            y[oy] = _qf_bits_of_f32(o->log ? (v - m) - lg : v / sum);
        }
    }
    return QF_OK;
}
