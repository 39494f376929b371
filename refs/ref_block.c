/* ref_block.c: block-scaled formats (precision/qf_block.h) with statuses.
 *
 * The block module rounds every element once from the exact value and
 * dequantizes exactly (except FP8 scaling in division mode, a rational).
 * This wrapper turns its results into reference outputs: the exact
 * dequantized value rounded once into opts->format, with a status, and for
 * quantize whether anything was lost.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ziv.h"

void qf_ref_block_params_init(qf_ref_block_params *p, qf_ref_block_family family)
{
    memset(p, 0, sizeof *p);
    p->family = family;
    p->mx = qf_block_mx_params_default();
    p->nvfp4 = qf_block_nvfp4_params_default();
    p->group = qf_block_group_params_default();
    p->fp8 = qf_block_fp8_params_default();
}

size_t qf_ref_block_scale_count(const qf_ref_block_params *p, size_t rows, size_t cols)
{
    switch (p->family) {
    case QF_REF_BLOCK_MX: return qf_block_scale_count(rows, cols, p->mx.axis, p->mx.block);
    case QF_REF_BLOCK_NVFP4: return qf_block_scale_count(rows, cols, p->nvfp4.axis, p->nvfp4.block);
    case QF_REF_BLOCK_GROUP: return qf_block_scale_count(rows, cols, p->group.axis, p->group.group);
    case QF_REF_BLOCK_FP8: return qf_block_fp8_scale_count(&p->fp8, rows, cols);
    }
    return 0;
}

/* Scale codes in the family's own width. */
typedef struct raw_scales {
    uint8_t *u8;
    uint16_t *u16;
    uint32_t *u32;
    int16_t *zp;
    double *val;
} raw_scales;

static void raw_free(raw_scales *r)
{
    free(r->u8), free(r->u16), free(r->u32), free(r->zp), free(r->val);
}

static qf_status raw_alloc(raw_scales *r, size_t ns)
{
    size_t m = ns ? ns : 1;
    memset(r, 0, sizeof *r);
    r->u8 = calloc(m, 1);
    r->u16 = calloc(m, sizeof *r->u16);
    r->u32 = calloc(m, sizeof *r->u32);
    r->zp = calloc(m, sizeof *r->zp);
    r->val = calloc(m, sizeof *r->val);
    if (!r->u8 || !r->u16 || !r->u32 || !r->zp || !r->val) {
        raw_free(r);
        return QF_ENOMEM;
    }
    return QF_OK;
}

static void raw_from_codes(const qf_ref_block_params *p, raw_scales *r, const uint64_t *codes,
                           const int16_t *zp, size_t ns)
{
    size_t i;
    for (i = 0; i < ns; i++) {
        r->u8[i] = (uint8_t)codes[i];
        r->u16[i] = (uint16_t)codes[i];
        r->u32[i] = (uint32_t)codes[i];
        r->zp[i] = zp ? zp[i] : 0;
    }
    (void)p;
}

/* The block module's dequantization into dq (exact, or RN64 for FP8 DIV). */
static qf_status block_dequant(const qf_ref_block_params *p, const uint8_t *codes, const raw_scales *r,
                               uint32_t tensor_code, size_t rows, size_t cols, double *dq)
{
    switch (p->family) {
    case QF_REF_BLOCK_MX: return qf_block_mx_dequantize(&p->mx, codes, r->u8, rows, cols, dq);
    case QF_REF_BLOCK_NVFP4:
        return qf_block_nvfp4_dequantize(&p->nvfp4, codes, r->u8, tensor_code, rows, cols, dq);
    case QF_REF_BLOCK_GROUP:
        return qf_block_group_dequantize(&p->group, codes, r->u16, r->zp, rows, cols, dq);
    case QF_REF_BLOCK_FP8: {
        qf_block_fp8_params q = p->fp8;
        return qf_block_fp8_scale_dequantize(&q, codes, r->u32, rows, cols, dq);
    }
    }
    return QF_EINVAL;
}

/* The FP8 scale (a float32) of element i. */
static double fp8_scale(const qf_ref_block_params *p, const raw_scales *r, size_t cols, size_t i)
{
    size_t s = p->fp8.granularity == QF_BLOCK_FP8_TENSOR ? 0
               : p->fp8.granularity == QF_BLOCK_FP8_ROW  ? i / cols
                                                         : i % cols;
    union {
        uint32_t u;
        float f;
    } c;
    c.u = r->u32[s];
    return (double)c.f;
}

/* Writes element i of y: the exact dequantized value, rounded once. */
static void put_dequant(const _qf_rctx *c, _qf_sink *s, const qf_ref_block_params *p, const raw_scales *r,
                        const uint8_t *codes, const double *dq, size_t cols, size_t i)
{
    if (p->family == QF_REF_BLOCK_FP8 && p->fp8.dequant == QF_BLOCK_FP8_DIV) {
        double v = qf_format_decode(qf_format_get(p->fp8.elem), codes[i]), sc = fp8_scale(p, r, cols, i);
        _qf_ziv zv;
        _qf_iv y;
        if (!isfinite(v) || !(sc > 0) || !isfinite(sc)) {
            _qf_sink_put_d(s, i, dq[i]);
            return;
        }
        _qf_iv_init(&y, c->w0);
        _qf_ziv_init(&zv, c, c->w0);
        _qf_ziv_track(&zv, &y, 1);
        while (_qf_ziv_next(&zv)) {
            _qf_iv_set_d(&y, v);
            _qf_iv_div_d(&y, &y, sc);
            _qf_ziv_done(&zv, s, i, &y);
        }
        _qf_iv_clear(&y);
        return;
    }
    _qf_sink_put_d(s, i, dq[i]);
}

static int fp8_lossless(double x, double code_value, double sc)
{
    mpfr_t t;
    int eq;
    if (!isfinite(x) || !isfinite(code_value))
        return 0;
    mpfr_init2(t, 106);
    mpfr_set_d(t, x, MPFR_RNDN);
    mpfr_mul_d(t, t, sc, MPFR_RNDN); /* exact */
    eq = mpfr_cmp_d(t, code_value) == 0;
    mpfr_clear(t);
    return eq;
}

qf_status qf_ref_block_quantize(const qf_ref_opts *opts, const qf_ref_block_params *p, const double *x,
                                size_t rows, size_t cols, qf_ref_out *q, qf_ref_block_scales *sc)
{
    _qf_rctx c;
    _qf_sink s;
    raw_scales r;
    qf_status st;
    size_t n, ns, i;
    uint8_t *codes = NULL;
    double *dq = NULL;
    uint32_t tcode = 0x3F800000u;
    double tval = 1.0;
    _qf_mpfr_env env;

    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || !q || (cols && rows > SIZE_MAX / cols))
        return QF_EINVAL;
    n = rows * cols;
    ns = qf_ref_block_scale_count(p, rows, cols);
    if (n && !x)
        return QF_EINVAL;
    if ((st = raw_alloc(&r, ns)) != QF_OK)
        return st;
    codes = malloc(n ? n : 1);
    dq = malloc((n ? n : 1) * sizeof *dq);
    if (!codes || !dq) {
        free(codes), free(dq), raw_free(&r);
        return QF_ENOMEM;
    }
    switch (p->family) {
    case QF_REF_BLOCK_MX: st = qf_block_mx_quantize(&p->mx, x, rows, cols, codes, r.u8, r.val); break;
    case QF_REF_BLOCK_NVFP4:
        st = qf_block_nvfp4_quantize(&p->nvfp4, x, rows, cols, codes, r.u8, r.val, &tcode, &tval);
        break;
    case QF_REF_BLOCK_GROUP:
        st = qf_block_group_quantize(&p->group, x, rows, cols, codes, r.u16, r.val, r.zp);
        break;
    case QF_REF_BLOCK_FP8:
        st = qf_block_fp8_scale_quantize(&p->fp8, x, rows, cols, codes, r.u32, r.val);
        break;
    default: st = QF_EINVAL; break;
    }
    if (st == QF_OK)
        st = block_dequant(p, codes, &r, tcode, rows, cols, dq);
    if (st == QF_OK)
        st = _qf_sink_open(&s, &c, NULL, q, n);
    if (st != QF_OK) {
        free(codes), free(dq), raw_free(&r);
        return st;
    }
    _qf_mpfr_enter(&env);
    for (i = 0; i < n; i++) {
        int lossless;
        put_dequant(&c, &s, p, &r, codes, dq, cols, i);
        if (isnan(dq[i]) && !isnan(x[i])) { /* an element of a NaN / Inf block */
            _qf_sink_undefined(&s, i, NAN);
        } else if (s.st[i] == QF_REF_EXACT) {
            if (p->family == QF_REF_BLOCK_FP8)
                lossless = fp8_lossless(x[i], qf_format_decode(qf_format_get(p->fp8.elem), codes[i]),
                                        fp8_scale(p, &r, cols, i));
            else
                lossless = dq[i] == x[i];
            if (!lossless)
                s.st[i] = QF_REF_ROUNDED;
        }
        if (q->code)
            q->code[i] = codes[i];
    }
    _qf_mpfr_leave(&env);
    _qf_sink_close(&s, (int)c.w0);
    if (sc) {
        for (i = 0; i < ns; i++) {
            uint64_t code = p->family == QF_REF_BLOCK_GROUP ? r.u16[i]
                            : p->family == QF_REF_BLOCK_FP8 ? r.u32[i]
                                                            : r.u8[i];
            if (sc->codes)
                sc->codes[i] = code;
            if (sc->values)
                sc->values[i] = r.val[i];
            if (sc->zero_points)
                sc->zero_points[i] = r.zp[i];
        }
        sc->tensor_scale_code = tcode;
        sc->tensor_scale = tval;
    }
    free(codes), free(dq), raw_free(&r);
    return QF_OK;
}

qf_status qf_ref_block_dequantize(const qf_ref_opts *opts, const qf_ref_block_params *p, const uint8_t *codes,
                                  const qf_ref_block_scales *sc, size_t rows, size_t cols, qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    raw_scales r;
    qf_status st;
    size_t n, ns, i;
    double *dq;
    _qf_mpfr_env env;

    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || !y || !sc || (cols && rows > SIZE_MAX / cols))
        return QF_EINVAL;
    n = rows * cols;
    ns = qf_ref_block_scale_count(p, rows, cols);
    if (n && (!codes || !sc->codes))
        return QF_EINVAL;
    if ((st = raw_alloc(&r, ns)) != QF_OK)
        return st;
    if (n)
        raw_from_codes(p, &r, sc->codes, sc->zero_points, ns);
    dq = malloc((n ? n : 1) * sizeof *dq);
    if (!dq) {
        raw_free(&r);
        return QF_ENOMEM;
    }
    st = n ? block_dequant(p, codes, &r, sc->tensor_scale_code, rows, cols, dq) : QF_OK;
    if (st == QF_OK)
        st = _qf_sink_open(&s, &c, NULL, y, n);
    if (st != QF_OK) {
        free(dq), raw_free(&r);
        return st;
    }
    _qf_mpfr_enter(&env);
    for (i = 0; i < n; i++)
        put_dequant(&c, &s, p, &r, codes, dq, cols, i);
    _qf_mpfr_leave(&env);
    _qf_sink_close(&s, (int)c.w0);
    free(dq), raw_free(&r);
    return QF_OK;
}
