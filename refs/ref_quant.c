/* ref_quant.c: per-format quantize / dequantize with group scales.
 *
 *   quantize:   round(x / scale) into opts->format, from the exact quotient
 *               (an enclosure refined until decided; a point when exact)
 *   dequantize: round(decode(code) * scale), the product exact (106 bits)
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_ziv.h"

typedef struct qu_ctx {
    const _qf_rctx *c;
    const double *x;
    const qf_format *in;
    const uint64_t *codes;
    const double *scales;
    size_t n, group, chunk;
    _qf_sink *s;
} qu_ctx;

static double scale_of(const qu_ctx *k, size_t i)
{
    if (!k->scales)
        return 1.0;
    return k->scales[k->group ? i / k->group : 0];
}

static int qu_chunk(void *vctx, size_t ch)
{
    const qu_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    size_t i0 = ch * k->chunk, i1 = i0 + k->chunk, i;
    _qf_iv y;
    _qf_ziv zv;
    int used = 0;
    if (i1 > k->n)
        i1 = k->n;
    _qf_iv_init(&y, c->w0);
    _qf_ziv_init(&zv, c, c->w0);
    _qf_ziv_track(&zv, &y, 1);
    for (i = i0; i < i1; i++) {
        double sc = scale_of(k, i), x;
        x = k->codes ? qf_format_decode(k->in, k->codes[i]) : k->x[i];
        if (!isfinite(x)) {
            /* NaN stays NaN (UNDEFINED); +-inf / scale and +-inf * scale are +-inf */
            _qf_sink_put_d(k->s, i, isnan(x) ? x : ((x > 0) == (sc > 0) ? INFINITY : -INFINITY));
            continue;
        }
        _qf_ziv_start(&zv, c->w0);
        while (_qf_ziv_next(&zv)) {
            if ((int)zv.w > used)
                used = (int)zv.w;
            _qf_iv_set_d(&y, x);
            if (k->codes)
                _qf_iv_mul_d(&y, &y, sc);
            else
                _qf_iv_div_d(&y, &y, sc);
            _qf_ziv_done(&zv, k->s, i, &y);
        }
    }
    _qf_iv_clear(&y);
    return used;
}

static qf_status quant_any(const qf_ref_opts *opts, const double *x, const qf_format *in,
                           const uint64_t *codes, size_t n, const double *scales, size_t group, qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    qu_ctx k;
    qf_status st;
    size_t i, ns;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (n && !x && !codes)
        return QF_EINVAL;
    if (scales) {
        ns = group ? (n + group - 1) / group : (n ? 1 : 0);
        for (i = 0; i < ns; i++)
            if (!isfinite(scales[i]) || scales[i] == 0)
                return QF_EINVAL;
    }
    if ((st = _qf_sink_open(&s, &c, NULL, y, n)) != QF_OK)
        return st;
    k.c = &c;
    k.x = x;
    k.in = in;
    k.codes = codes;
    k.scales = scales;
    k.n = n;
    k.group = group;
    k.chunk = 1024;
    k.s = &s;
    maxp = _qf_parallel_rows(&c, (n + k.chunk - 1) / k.chunk, qu_chunk, &k);
    _qf_sink_close(&s, maxp);
    return QF_OK;
}

qf_status qf_ref_quantize(const qf_ref_opts *opts, const double *x, size_t n, const double *scales,
                          size_t group, qf_ref_out *y)
{
    if (n && !x)
        return QF_EINVAL;
    return quant_any(opts, x, NULL, NULL, n, scales, group, y);
}

qf_status qf_ref_dequantize(const qf_ref_opts *opts, const qf_format *in, const uint64_t *codes, size_t n,
                            const double *scales, size_t group, qf_ref_out *y)
{
    if (!in || (n && !codes))
        return QF_EINVAL;
    return quant_any(opts, NULL, in, codes, n, scales, group, y);
}
