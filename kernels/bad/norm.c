/* norm.c: the known-bad norms.
 *
 *   layernorm.bad.onepass   float32 LayerNorm with the one-pass variance
 *                           var = E[x^2] - E[x]^2: per row of n,
 *                           s1 = sum x_j, s2 = sum x_j * x_j (sequential
 *                           float32), mu = s1 / n, var = s2 / n - mu * mu,
 *                           r = 1 / sqrtf(float32(var + eps)),
 *                           y_j = ((x_j - mu) * r) * w_j + b_j.  It claims
 *                           the two-pass float32 arithmetic the norm bound
 *                           derives (qf_bound_norm, center = 1).  The
 *                           defect is cancellation: when |mean| >> std the
 *                           two sums agree in most of their bits and var
 *                           loses them (it can even come out negative:
 *                           NaN).  Shows on rows with a large mean (normal
 *                           with mean 1000, std 1); hidden on zero-mean
 *                           rows, where E[x]^2 << E[x^2].
 *   rmsnorm.bad.no_eps      float32 RMSNorm as rmsnorm.cpu.f32 but without
 *                           eps: r = 1 / sqrtf(q / n).  Shows when eps is
 *                           not negligible against mean(x^2) (small
 *                           inputs, or eps = 1e-2; an all-zero row gives
 *                           0 * inf = NaN); hidden when eps is below
 *                           float32's resolution of mean(x^2) (eps =
 *                           1e-12 on unit-variance rows).
 * Both: weight and bias optional float32 [cols], weight_offset 0.
 */
#include <math.h>

#include "_bad.h"

qf_status _qf_bad_norm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (op->u.norm.weight_offset != 0 || !(op->u.norm.eps >= 0) || !isfinite(op->u.norm.eps)) {
        snprintf(why, why_size, "weight_offset must be 0 and eps finite and >= 0");
        return QF_EUNSUPPORTED;
    }
    if (op->u.norm.cols > (1u << 24)) {
        snprintf(why, why_size, "cols above 2^24");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_status norm_run(int center, const qf_kernel_call *call)
{
    _qf_cpu_norm_args a;
    const qf_op_norm *o;
    const qf_tensor *X, *W, *B, *Y;
    int64_t rows, cols, r, j;
    char why[128];
    qf_status s;
    if ((s = _qf_cpu_norm_args_get(call, center ? QF_OP_LAYERNORM : QF_OP_RMSNORM, &a)) != QF_OK)
        return s;
    if ((s = _qf_bad_norm_supports(call->kernel, call->op, call->dtype, why, sizeof why)) != QF_OK)
        return _qf_cpu_fail(call, s, "%s", why);
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
        float s1 = 0.0f, s2 = 0.0f, mu = 0.0f, v, rs;
        for (j = 0; j < cols; j++) {
            float xv = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            float sq = xv * xv;
            s1 = s1 + xv;
            s2 = s2 + sq;
        }
        if (center) {
            /* The defect of onepass: E[x^2] - E[x]^2 in float32. */
            float m2;
            mu = s1 / (float)cols;
            m2 = mu * mu;
            v = s2 / (float)cols;
            v = v - m2;
            v = (float)((double)v + o->eps);
        } else {
            /* The defect of no_eps: eps is never added. */
            v = s2 / (float)cols;
        }
        rs = 1.0f / sqrtf(v);
        for (j = 0; j < cols; j++) {
            float t = _qf_f32_of_bits(x[_qf_cpu_off(X, 0, r, j)]);
            if (center)
                t = t - mu;
            t = t * rs;
            if (w)
                t = t * _qf_f32_of_bits(w[j * W->stride[0]]);
            if (b)
                t = t + _qf_f32_of_bits(b[j * B->stride[0]]);
            y[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(t);
        }
    }
    return QF_OK;
}

qf_status _qf_bad_layernorm_onepass_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return norm_run(1, call);
}

qf_status _qf_bad_rmsnorm_no_eps_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    return norm_run(0, call);
}
