/* l2norm.c: the built-in CPU L2 normalization kernel.
 *
 *   l2norm.cpu.f32    x and y float32, or x and y bfloat16 (float32
 *                     compute); per row of n:
 *                       q = sum_j x_j * x_j, sequential, float32
 *                       d = max(sqrtf(q), float32(eps))
 *                       y_j = x_j / d   (rounded once in float32, then
 *                                        once into bfloat16 for bf16)
 * The shape qf_bound_l2norm assumes (docs/bounds.md "L2 normalization").
 * A NaN in q propagates (the clamp is written so that a NaN norm stays
 * NaN, as torch's clamp_min does); n up to 2^24.  Deterministic.
 *
 * The known-bad l2norm.bad.f16_sumsq (kernels/bad) is this kernel with
 * _QF_DEFECT_L2NORM_F16_SUMSQ in kernel->user (NULL here): every square
 * and every partial sum of q is rounded to float16.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_l2norm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                  char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (!(op->u.norm.eps >= 0) || !isfinite(op->u.norm.eps)) {
        snprintf(why, why_size, "eps must be finite and >= 0");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* Element off of a float32 or bfloat16 tensor, as a float (exact). */
static float _l2_load(const qf_tensor *t, int64_t off)
{
    if (t->format == QF_BFLOAT16)
        return _qf_f32_of_bits((uint32_t)((const uint16_t *)t->data)[off] << 16);
    return _qf_f32_of_bits(((const uint32_t *)t->data)[off]);
}

/* v rounded to float16 (the known-bad sum of squares). */
static float _l2_f16(const qf_format *f16, float v)
{
    return (float)qf_format_decode(f16, qf_format_encode(f16, v, QF_ROUND_RNE, 0, 0, 0));
}

qf_status _qf_cpu_l2norm_run(void *ctx, const qf_kernel_call *call)
{
    const qf_format *f16 = qf_format_get(QF_FLOAT16), *fo;
    const qf_op_norm *o;
    const qf_tensor *X, *Y;
    int64_t rows, cols, r, j;
    qf_format_id fmt;
    qf_status s;
    float epsf;
    int f16_sumsq = _qf_cpu_defect(ctx) == _QF_DEFECT_L2NORM_F16_SUMSQ;
    if (!call->op || call->op->op != QF_OP_L2NORM || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not an l2norm call");
    o = &call->op->u.norm;
    if (!(o->eps >= 0) || !isfinite(o->eps))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "eps must be finite and >= 0");
    X = &call->in[0];
    Y = &call->out[0];
    rows = (int64_t)o->rows;
    cols = (int64_t)o->cols;
    /* float32 sums of more terms than 2^24 lose whole units of the count */
    if (cols > (1 << 24))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "cols above 2^24");
    fmt = call->dtype->in[0];
    if ((fmt != QF_FLOAT32 && fmt != QF_BFLOAT16) || call->dtype->out[0] != fmt)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "x and y must be both float32 or both bfloat16");
    if ((s = _qf_cpu_check2(call, X, "x", fmt, -1, rows, cols)) != QF_OK ||
        (s = _qf_cpu_check2(call, Y, "y", fmt, -1, rows, cols)) != QF_OK)
        return s;
    if (X->ndim != 2 || Y->ndim != 2)
        return _qf_cpu_fail(call, QF_EINVAL, "l2norm tensors must be 2-d [rows][cols]");
    fo = qf_format_get(fmt);
    epsf = (float)o->eps; /* one rounding, nearest even */
    for (r = 0; r < rows; r++) {
        float q = 0.0f, nrm, d;
        for (j = 0; j < cols; j++) {
            float xv = _l2_load(X, _qf_cpu_off(X, 0, r, j));
            float sq = xv * xv;
            if (f16_sumsq)
                q = _l2_f16(f16, q + _l2_f16(f16, sq));
            else
                q = q + sq;
        }
        nrm = sqrtf(q);
        d = nrm < epsf ? epsf : nrm; /* NaN < epsf is false: NaN stays */
        for (j = 0; j < cols; j++) {
            float yv = _l2_load(X, _qf_cpu_off(X, 0, r, j)) / d;
            if (fmt == QF_FLOAT32)
                ((uint32_t *)Y->data)[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(yv);
            else
                _qf_cpu_store_code(Y, fo, _qf_cpu_off(Y, 0, r, j), (double)yv);
        }
    }
    return QF_OK;
}
