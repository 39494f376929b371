/* rmsnorm.c: the built-in CPU RMSNorm kernel.
 *
 *   rmsnorm.cpu.f32   float32 x, weight, bias and y; per row of n:
 *                       q = sum_j x_j * x_j, sequential, float32
 *                       v = float32(q / n + eps)   (q / n rounded, then
 *                           the sum with the binary64 eps rounded once)
 *                       r = 1.0f / sqrtf(v)
 *                       y_j = (x_j * r) * w_j + b_j   (each step rounded)
 * The shape the bound module assumes for norms (qf_bound_norm: n roundings
 * for the sum of squares, one for the mean, one for + eps, the reciprocal
 * square root within elem_ulp, then * r, * w, + b).  weight_offset must be
 * 0 (the supports callback declines Gemma's 1 + w, which would add a
 * rounding); n up to 2^24 so that n is a float32.  Deterministic.
 *
 * The known-bad rmsnorm.bad.no_eps (kernels/bad) is this kernel with
 * _QF_DEFECT_RMSNORM_NO_EPS in kernel->user (NULL here): v = q / n, eps
 * never added.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_rmsnorm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (op->u.norm.weight_offset != 0) {
        snprintf(why, why_size, "weight_offset must be 0 (1 + w would be one more rounding)");
        return QF_EUNSUPPORTED;
    }
    if (!(op->u.norm.eps >= 0) || !isfinite(op->u.norm.eps)) {
        snprintf(why, why_size, "eps must be finite and >= 0");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* An optional [cols] vector slot: absent, or float32 1-d of cols. */
static qf_status check_vec(const qf_kernel_call *call, const qf_tensor *t, const char *slot, int64_t cols)
{
    if (!t->data)
        return QF_OK;
    if (t->format != QF_FLOAT32 || t->index_bits || t->packed || t->scale.kind != QF_SCALE_NONE ||
        t->ndim != 1 || t->shape[0] != cols)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s must be float32 [%lld]", slot, (long long)cols);
    return QF_OK;
}

qf_status _qf_cpu_norm_args_get(const qf_kernel_call *call, qf_op op, _qf_cpu_norm_args *a)
{
    const char *name = op == QF_OP_LAYERNORM ? "layernorm" : "rmsnorm";
    qf_status s;
    if (!call->op || call->op->op != op || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a %s call", name);
    a->o = &call->op->u.norm;
    if (a->o->weight_offset != 0 || !(a->o->eps >= 0) || !isfinite(a->o->eps))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "weight_offset != 0 or a bad eps");
    a->x = &call->in[0];
    a->w = &call->in[1];
    a->b = &call->in[2];
    a->y = &call->out[0];
    a->rows = (int64_t)a->o->rows;
    a->cols = (int64_t)a->o->cols;
    /* float32 sums of more terms than 2^24 lose whole units of the count */
    if (a->cols > (1 << 24))
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "cols above 2^24");
    if ((s = _qf_cpu_check2(call, a->x, "x", QF_FLOAT32, -1, a->rows, a->cols)) != QF_OK ||
        (s = _qf_cpu_check2(call, a->y, "y", QF_FLOAT32, -1, a->rows, a->cols)) != QF_OK ||
        (s = check_vec(call, a->w, "weight", a->cols)) != QF_OK ||
        (s = check_vec(call, a->b, "bias", a->cols)) != QF_OK)
        return s;
    if (a->x->ndim != 2 || a->y->ndim != 2)
        return _qf_cpu_fail(call, QF_EINVAL, "%s tensors must be 2-d [rows][cols]", name);
    return QF_OK;
}

qf_status _qf_cpu_rmsnorm_f32_run(void *ctx, const qf_kernel_call *call)
{
    _qf_cpu_norm_args a;
    const qf_op_norm *o;
    const qf_tensor *X, *W, *B, *Y;
    int64_t rows, cols, r;
    qf_status s;
    int no_eps = _qf_cpu_defect(ctx) == _QF_DEFECT_RMSNORM_NO_EPS;
    if ((s = _qf_cpu_norm_args_get(call, QF_OP_RMSNORM, &a)) != QF_OK)
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
        float q = 0.0f, v, rs;
        int64_t j;
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float sq = xv * xv;
            q = q + sq;
        }
        v = q / (float)cols;
        if (!no_eps)
            v = (float)((double)v + o->eps);
        rs = 1.0f / sqrtf(v);
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float t = xv * rs;
            if (w)
                t = t * _qf_f32_of_bits(w[j * W->stride[0]]);
            if (b)
                t = t + _qf_f32_of_bits(b[j * B->stride[0]]);
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(t);
        }
    }
    return QF_OK;
}
