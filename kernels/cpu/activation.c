/* activation.c: CPU candidate activation / GLU kernel.
 *
 *   activation.cpu.f32   float32 x (the gate for GLU), up and y, elementwise
 *                        (y = act(x), or act(x) * up when glu), every
 *                        operation in float32, nearest even, written without
 *                        the cancellations of the textbook forms:
 *     sigmoid(x)   e = expf(-|x|); x >= 0: 1 / (1 + e), else e / (1 + e)
 *                  (no overflow, no 1 - small)
 *     silu(x)      x * sigmoid(x)
 *     gelu_erf(x)  0.5 * x * erfcf(-x * float32(1/sqrt 2))  (erfc instead
 *                  of 1 + erf: no cancellation for negative x)
 *     gelu_tanh(x) x * sigmoid(2 t), t = float32(sqrt(2/pi)) * (x +
 *                  float32(0.044715) * x^3)  (1 + tanh(t) = 2 sigmoid(2 t))
 *     relu(x)      x > 0 ? x : +0
 *     x = -inf     +0 for every function (the limit, as the reference)
 * Claim: the default float32 arithmetic with elem_ulp = 4, from which
 * qf_bound_activation derives the bound of every element (docs/bounds.md
 * "Activations": the rounded constants and arguments, the argument's
 * effect through the function's derivative, expf / erfcf within elem_ulp,
 * the products).  elem_ulp 4 because glibc's erfcf is not within 2 ulps:
 * 2.85 ulps measured on a sample of the float32 numbers in [-12, 12]
 * (expf: 0.50).  The derived bound holds for inputs of any scale,
 * including underflowing outputs (an absolute term of a few subnormal
 * steps); the earlier measured claim (max_ulp 64) only held for inputs of
 * about unit scale.  Measured utilization: gelu_erf up to 0.92 (the
 * argument's rounding dominates for x << 0: erfc's relative sensitivity
 * is about 2 t |dt|), gelu_tanh 0.35, silu and sigmoid 0.1.
 * Deterministic.
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_activation_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                      char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if ((int)op->u.activation.act < 0 || op->u.activation.act >= QF_REF_ACT_COUNT) {
        snprintf(why, why_size, "unknown activation");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static float sigmoidf_(float x)
{
    float e = expf(-fabsf(x));
    float d = 1.0f + e;
    return x >= 0 ? 1.0f / d : e / d;
}

static float act(qf_ref_act a, float x)
{
    /* The limit at -inf is 0 for every activation (the reference's value,
     * refs/ref_act.c); the formulas below would give -inf * 0 = NaN for
     * silu and the gelus (found by tests/stress/nl-rowops.yaml). */
    if (x == -INFINITY)
        return 0.0f;
    switch (a) {
    case QF_REF_ACT_GELU_ERF: {
        float t = -x * 0.70710678118654752f;
        float h = 0.5f * x;
        return h * erfcf(t);
    }
    case QF_REF_ACT_GELU_TANH: {
        float x3 = x * x;
        float in, t;
        x3 = x3 * x;
        in = 0.044715f * x3;
        in = x + in;
        t = 0.79788456080286536f * in;
        t = 2.0f * t;
        return x * sigmoidf_(t);
    }
    case QF_REF_ACT_SILU:
        return x * sigmoidf_(x);
    case QF_REF_ACT_SIGMOID:
        return sigmoidf_(x);
    case QF_REF_ACT_RELU:
    default:
        return x > 0 ? x : 0.0f;
    }
}

qf_status _qf_cpu_activation_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_activation *o;
    const qf_tensor *X, *U, *Y;
    int64_t rows, cols, r, j;
    qf_status s;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_ACTIVATION || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not an activation call");
    o = &call->op->u.activation;
    if ((int)o->act < 0 || o->act >= QF_REF_ACT_COUNT)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "unknown activation");
    X = &call->in[0];
    U = &call->in[1];
    Y = &call->out[0];
    if (X->ndim != 2 || Y->ndim != 2)
        return _qf_cpu_fail(call, QF_EINVAL, "activation tensors must be 2-d");
    rows = X->shape[0];
    cols = X->shape[1];
    if ((size_t)(rows * cols) != o->n)
        return _qf_cpu_fail(call, QF_EINVAL, "x holds %lld elements, the op %zu", (long long)(rows * cols), o->n);
    if ((s = _qf_cpu_check2(call, X, "x", QF_FLOAT32, -1, rows, cols)) != QF_OK ||
        (s = _qf_cpu_check2(call, Y, "y", QF_FLOAT32, -1, rows, cols)) != QF_OK ||
        (o->glu && (s = _qf_cpu_check2(call, U, "up", QF_FLOAT32, -1, rows, cols)) != QF_OK))
        return s;
    for (r = 0; r < rows; r++)
        for (j = 0; j < cols; j++) {
            float x = _qf_f32_of_bits(((const uint32_t *)X->data)[_qf_cpu_off(X, 0, r, j)]);
            float y = act(o->act, x);
            if (o->glu)
                y = y * _qf_f32_of_bits(((const uint32_t *)U->data)[_qf_cpu_off(U, 0, r, j)]);
            ((uint32_t *)Y->data)[_qf_cpu_off(Y, 0, r, j)] = _qf_bits_of_f32(y);
        }
    return QF_OK;
}
