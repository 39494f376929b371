/* ref_reduce.c: row sums and absolute maxima.
 *
 * sum: mpfr_sum of the exact doubles, rounded down and up at working
 * precision w; the two agree (a point) when the sum is exact at w, and the
 * rounding into the target is decided from that enclosure (refined as
 * usual).  amax: max |x| is a double, exact; only its rounding into the
 * target can be inexact.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_ziv.h"

typedef struct rd_ctx {
    const _qf_rctx *c;
    const double *x;
    size_t cols;
    _qf_sink *s;
} rd_ctx;

static int sum_row(void *vctx, size_t r)
{
    const rd_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    const double *x = k->x + r * k->cols;
    size_t n = k->cols, j;
    int pinf = 0, ninf = 0;
    mpfr_t *t;
    mpfr_ptr *tp;
    _qf_iv y;
    _qf_ziv zv;

    for (j = 0; j < n; j++) {
        if (isnan(x[j])) {
            _qf_sink_undefined(k->s, r, NAN);
            return 0;
        }
        pinf |= x[j] == INFINITY;
        ninf |= x[j] == -INFINITY;
    }
    if (pinf || ninf) {
        if (pinf && ninf)
            _qf_sink_undefined(k->s, r, NAN);
        else
            _qf_sink_put_d(k->s, r, pinf ? INFINITY : -INFINITY);
        return 0;
    }
    t = malloc((n ? n : 1) * sizeof *t);
    tp = malloc((n ? n : 1) * sizeof *tp);
    if (!t || !tp) {
        free(t), free(tp);
        _qf_sink_undefined(k->s, r, NAN);
        return 0;
    }
    for (j = 0; j < n; j++) {
        mpfr_init2(t[j], 53);
        mpfr_set_d(t[j], x[j], MPFR_RNDN);
        tp[j] = t[j];
    }
    _qf_iv_init(&y, c->w0);
    _qf_ziv_init(&zv, c, c->w0);
    _qf_ziv_track(&zv, &y, 1);
    while (_qf_ziv_next(&zv)) {
        _qf_iv_sum(&y, tp, n);
        _qf_ziv_done(&zv, k->s, r, &y);
    }
    _qf_iv_clear(&y);
    for (j = 0; j < n; j++)
        mpfr_clear(t[j]);
    free(t), free(tp);
    return (int)zv.w;
}

static int amax_row(void *vctx, size_t r)
{
    const rd_ctx *k = vctx;
    const double *x = k->x + r * k->cols;
    size_t j;
    double m = 0;
    for (j = 0; j < k->cols; j++) {
        if (isnan(x[j])) {
            _qf_sink_undefined(k->s, r, NAN);
            return 0;
        }
        if (fabs(x[j]) > m)
            m = fabs(x[j]);
    }
    _qf_sink_put_d(k->s, r, m);
    return 0;
}

static qf_status reduce_any(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, int amax,
                            qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    rd_ctx k;
    qf_status st;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!x && rows && cols)
        return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, y, rows)) != QF_OK)
        return st;
    k.c = &c;
    k.x = x;
    k.cols = cols;
    k.s = &s;
    maxp = _qf_parallel_rows(&c, rows, amax ? amax_row : sum_row, &k);
    _qf_sink_close(&s, maxp);
    return QF_OK;
}

qf_status qf_ref_sum(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, qf_ref_out *y)
{
    return reduce_any(opts, x, rows, cols, 0, y);
}

qf_status qf_ref_amax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, qf_ref_out *y)
{
    return reduce_any(opts, x, rows, cols, 1, y);
}
