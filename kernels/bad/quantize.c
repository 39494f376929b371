/* quantize.c: the known-bad quantizers.
 *
 *   quantize.bad.mx_scale_off       MX (OCP block scaling, any float
 *       element format, axis 1).  The defect: the block's amax is reduced
 *       in bfloat16 (amax rounded to 8 significant bits, nearest even)
 *       before the scale rule sees it, so a block whose amax lies within
 *       half a bfloat16 ulp below a power of two (2^e (1 - 2^-9) <= amax
 *       < 2^e) gets an E8M0 scale one binade too high, and its elements
 *       are encoded against that scale.  Rare on random data (about one
 *       block in several hundred for normal inputs); shows on data whose
 *       amax sits just below a power of two (uniform in [1.997, 1.9999]);
 *       hidden on ordinary blocks, which it quantizes exactly as the OCP
 *       rule says.
 *   quantize.bad.e4m3_nan_overflow  float8_e4m3fn elements, MX or per-tensor
 *       FP8 scaling, claiming the saturating conversion (OCP MX clamps;
 *       the suite's saturate: true).  The defect: the encoder is called
 *       without saturation, and float8_e4m3fn has no infinity, so a value
 *       that rounds past 448 becomes NaN.  Shows with MX's floor rule,
 *       which maps a block's amax into [256, 512) so that amaxes with a
 *       significand of 1.75 or more overflow; hidden with per-tensor FP8
 *       scaling (amax maps to at most 448) and MX's ceil rule.
 * The exact expectation (the block module) decides: any code that differs
 * is FAILED.  Codes are unpacked, one per byte.
 */
#include <math.h>
#include <stdlib.h>

#include "_bad.h"
#include "qf_block.h"
#include "qf_ref.h"

qf_status _qf_bad_quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                    char *why, size_t why_size)
{
    const qf_ref_block_params *p = &op->u.quantize.block;
    int is_nan_kernel = k && k->run == _qf_bad_quantize_e4m3_nan_run;
    (void)dtype;
    if (p->family == QF_REF_BLOCK_MX) {
        if (p->mx.axis != 1 || p->mx.elem == QF_INT8 || p->mx.round == QF_ROUND_STOCHASTIC) {
            snprintf(why, why_size, "MX: axis 1, float elements and deterministic rounding only");
            return QF_EUNSUPPORTED;
        }
        return QF_OK;
    }
    if (p->family == QF_REF_BLOCK_FP8 && is_nan_kernel) {
        if (p->fp8.round == QF_ROUND_STOCHASTIC) {
            snprintf(why, why_size, "FP8: deterministic rounding only");
            return QF_EUNSUPPORTED;
        }
        return QF_OK;
    }
    snprintf(why, why_size, "%s only", is_nan_kernel ? "MX and per-tensor FP8 scaling" : "MX");
    return QF_EUNSUPPORTED;
}

/* Common checks and the float32 input as binary64; *xv is malloc'd. */
static qf_status prepare(const qf_kernel_call *call, double **xv)
{
    const qf_op_quantize *q;
    const qf_tensor *X, *Q;
    size_t i, n;
    char why[128];
    qf_status s;
    *xv = NULL;
    if (!call->op || call->op->op != QF_OP_QUANTIZE || !call->dtype)
        return _qf_cpu_fail(call, QF_EINVAL, "not a quantize call");
    if ((s = _qf_bad_quantize_supports(call->kernel, call->op, call->dtype, why, sizeof why)) != QF_OK)
        return _qf_cpu_fail(call, s, "%s", why);
    q = &call->op->u.quantize;
    X = &call->in[0];
    Q = &call->out[0];
    if ((s = _qf_cpu_check2(call, X, "x", QF_FLOAT32, -1, (int64_t)q->rows, (int64_t)q->cols)) != QF_OK)
        return s;
    if (!Q->data || Q->packed || !Q->scale.data)
        return _qf_cpu_fail(call, QF_EINVAL, "q: unpacked codes and scales expected");
    n = q->rows * q->cols;
    *xv = malloc((n ? n : 1) * sizeof **xv);
    if (!*xv)
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        (*xv)[i] = _qf_f32_of_bits(((const uint32_t *)X->data)[i]);
    return QF_OK;
}

qf_status _qf_bad_quantize_mx_scale_off_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_quantize *q = &call->op->u.quantize;
    const qf_block_mx_params *p = &q->block.mx;
    const qf_format *bf = qf_format_get(QF_BFLOAT16), *ef;
    uint8_t *codes = call->out[0].data, *sc = call->out[0].scale.data;
    size_t r, bi, i, nb;
    double *xv;
    qf_status s;
    (void)ctx;
    if ((s = prepare(call, &xv)) != QF_OK)
        return s;
    /* Ordinary blocks: exactly the OCP rule. */
    if ((s = qf_block_mx_quantize(p, xv, q->rows, q->cols, codes, sc, NULL)) != QF_OK) {
        free(xv);
        return _qf_cpu_fail(call, s, "MX parameters rejected");
    }
    ef = qf_format_get(p->elem);
    nb = (q->cols + p->block - 1) / p->block;
    for (r = 0; r < q->rows; r++)
        for (bi = 0; bi < nb; bi++) {
            size_t c0 = bi * p->block, c1 = c0 + p->block < q->cols ? c0 + p->block : q->cols;
            double amax = 0, a16;
            uint8_t c;
            int X;
            for (i = c0; i < c1; i++)
                amax = fmax(amax, fabs(xv[r * q->cols + i]));
            if (!isfinite(amax) || amax == 0)
                continue;
            /* The defect: the scale comes from a bfloat16 amax. */
            a16 = qf_format_decode(bf, qf_format_encode(bf, amax, QF_ROUND_RNE, 0, 0, 0));
            qf_block_mx_scale(p, a16, &c);
            if (c == sc[r * nb + bi])
                continue;
            sc[r * nb + bi] = c;
            X = (int)c - 127;
            for (i = c0; i < c1; i++)
                codes[r * q->cols + i] =
                    (uint8_t)qf_format_encode(ef, ldexp(xv[r * q->cols + i], -X), p->round, 1, 0, 0);
        }
    free(xv);
    return QF_OK;
}

qf_status _qf_bad_quantize_e4m3_nan_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_quantize *q = &call->op->u.quantize;
    const qf_format *ef = qf_format_get(QF_FLOAT8_E4M3FN);
    uint8_t *codes = call->out[0].data;
    size_t r, bi, i, nb;
    double *xv;
    qf_status s;
    (void)ctx;
    if (call->dtype && call->dtype->out[0] != QF_FLOAT8_E4M3FN)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "float8_e4m3fn elements only");
    if ((s = prepare(call, &xv)) != QF_OK)
        return s;
    if (q->block.family == QF_REF_BLOCK_FP8) {
        qf_block_fp8_params p = q->block.fp8;
        p.saturate = 0; /* the defect */
        s = qf_block_fp8_scale_quantize(&p, xv, q->rows, q->cols, codes, call->out[0].scale.data, NULL);
        free(xv);
        return s == QF_OK ? QF_OK : _qf_cpu_fail(call, s, "FP8 parameters rejected");
    } else {
        const qf_block_mx_params *p = &q->block.mx;
        uint8_t *sc = call->out[0].scale.data;
        /* The scales (and NaN blocks) as the OCP rule gives them ... */
        if ((s = qf_block_mx_quantize(p, xv, q->rows, q->cols, codes, sc, NULL)) != QF_OK) {
            free(xv);
            return _qf_cpu_fail(call, s, "MX parameters rejected");
        }
        nb = (q->cols + p->block - 1) / p->block;
        for (r = 0; r < q->rows; r++)
            for (bi = 0; bi < nb; bi++) {
                size_t c0 = bi * p->block, c1 = c0 + p->block < q->cols ? c0 + p->block : q->cols;
                int X = (int)sc[r * nb + bi] - 127;
                if (sc[r * nb + bi] == 0xFF)
                    continue;
                /* ... and the elements through the non-saturating encoder
                 * (the defect): past 448 is NaN in float8_e4m3fn. */
                for (i = c0; i < c1; i++)
                    codes[r * q->cols + i] =
                        (uint8_t)qf_format_encode(ef, ldexp(xv[r * q->cols + i], -X), p->round, 0, 0, 0);
            }
    }
    free(xv);
    return QF_OK;
}
