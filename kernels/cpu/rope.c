/* rope.c: CPU candidate rotary position embedding.
 *
 *   rope.cpu.f32   float32 x and y [tokens][heads][head_dim], the first
 *                  rotary_dim components rotate in pairs (interleaved:
 *                  (2i, 2i + 1), GPT-J; half: (i, i + rotary_dim / 2),
 *                  GPT-NeoX / Llama), the rest are copied.  The way
 *                  PyTorch model code builds its table, all in float32:
 *                    e     = float32(2i) / float32(rotary_dim)   (rounded)
 *                    inv_f = 1.0f / powf(float32(theta), e)      (rounded)
 *                    angle = float32(pos) * inv_f                (rounded)
 *                    c = cosf(angle), s = sinf(angle)
 *                    y_a = x_a c - x_b s,  y_b = x_a s + x_b c  (products
 *                    and the sum rounded, no FMA)
 *                  pos = positions[t] when given, else pos_offset + t.
 * The angle's error grows with the position (about |angle| times a few
 * u): at position 100000 it is of the order of 1e-2 radians.  Claim: the
 * default float32 arithmetic (elem_ulp 0 = 2 ulps for powf, cosf, sinf,
 * which covers glibc); qf_bound_rope models exactly these steps
 * (docs/bounds.md "RoPE").  Deterministic.
 *
 * The known-bad variant rope.bad.f16_angle (kernels/bad) rounds the angle
 * to float16 before cosf / sinf (_QF_DEFECT_ROPE_F16_ANGLE).
 */
#include <math.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

qf_status _qf_cpu_rope_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const qf_op_rope *r = &op->u.rope;
    size_t rd = r->rotary_dim ? r->rotary_dim : r->head_dim;
    (void)k;
    (void)dtype;
    if (rd % 2 || rd > r->head_dim || !isfinite(r->theta) || !(r->theta > 0) ||
        (r->layout != QF_REF_ROPE_INTERLEAVED && r->layout != QF_REF_ROPE_HALF)) {
        snprintf(why, why_size, "rotary_dim must be even and <= head_dim, theta finite and > 0");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

qf_status _qf_cpu_rope_run(void *ctx, const qf_kernel_call *call)
{
    _qf_defect defect = _qf_cpu_defect(ctx);
    const qf_op_rope *o;
    const qf_tensor *X, *Y;
    const qf_format *f16 = qf_format_get(QF_FLOAT16);
    int64_t T, H, D, RD, half, t, h, i;
    float th;
    qf_status s;
    char why[128];
    if (!call->op || call->op->op != QF_OP_ROPE || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a rope call");
    if (_qf_cpu_rope_supports(call->kernel, call->op, call->dtype, why, sizeof why) != QF_OK)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "%s", why);
    o = &call->op->u.rope;
    T = (int64_t)o->tokens;
    H = (int64_t)o->heads;
    D = (int64_t)o->head_dim;
    RD = o->rotary_dim ? (int64_t)o->rotary_dim : D;
    half = RD / 2;
    X = &call->in[0];
    Y = &call->out[0];
    if ((s = _qf_cpu_check2(call, X, "x", QF_FLOAT32, T, H, D)) != QF_OK ||
        (s = _qf_cpu_check2(call, Y, "y", QF_FLOAT32, T, H, D)) != QF_OK)
        return s;
    /* _qf_cpu_check2 accepts a [heads][head_dim] tensor shared by every
     * token: right for an input, wrong for the output each token writes. */
    if (T > 1 && (Y->ndim != 3 || Y->shape[0] != T))
        return _qf_cpu_fail(call, QF_EINVAL, "y must be [tokens][heads][head_dim]");
    th = (float)o->theta;
    for (t = 0; t < T; t++) {
        int64_t pos = o->positions ? o->positions[t] : o->pos_offset + t;
        for (h = 0; h < H; h++) {
            const uint32_t *x = X->data;
            uint32_t *y = Y->data;
            for (i = RD; i < D; i++)
                y[_qf_cpu_off(Y, t, h, i)] = x[_qf_cpu_off(X, t, h, i)];
            for (i = 0; i < half; i++) {
                int64_t ia = o->layout == QF_REF_ROPE_HALF ? i : 2 * i;
                int64_t ib = o->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
                float e = (float)(2 * i) / (float)RD, inv_f = 1.0f / powf(th, e), angle = (float)pos * inv_f;
                float c, sn, xa, xb, p1, p2;
                if (defect == _QF_DEFECT_ROPE_F16_ANGLE)
                    angle = (float)qf_format_decode(f16, qf_format_encode(f16, angle, QF_ROUND_RNE, 0, 0, 0));
                c = cosf(angle);
                sn = sinf(angle);
                xa = _qf_f32_of_bits(x[_qf_cpu_off(X, t, h, ia)]);
                xb = _qf_f32_of_bits(x[_qf_cpu_off(X, t, h, ib)]);
                p1 = xa * c;
                p2 = xb * sn;
                y[_qf_cpu_off(Y, t, h, ia)] = _qf_bits_of_f32(p1 - p2);
                p1 = xa * sn;
                p2 = xb * c;
                y[_qf_cpu_off(Y, t, h, ib)] = _qf_bits_of_f32(p1 + p2);
            }
        }
    }
    return QF_OK;
}
