/* ref_l2norm.c: L2 normalization, row-wise (qf_ref.h qf_ref_l2norm).
 *
 * In rigorous intervals at working precision w:
 *   q = sum x_j^2, the squares exact (106-bit) and summed by mpfr_sum;
 *   d = max(sqrt(q), eps); y_j = x_j / d.
 * max is monotone in both arguments, so clamping each end of the interval
 * of sqrt(q) at eps encloses d; the clamp is exact (eps is a binary64 and
 * w >= 53).  Dividing (not multiplying by a rounded reciprocal) keeps the
 * exact cases exact: a row with one nonzero entry gives +-1 and zeros, a
 * zero row with eps > 0 gives zeros.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_ziv.h"

typedef struct _l2_ctx {
    const _qf_rctx *c;
    const qf_ref_l2norm_params *p;
    const double *x;
    _qf_sink *s;
} _l2_ctx;

static void _l2_undefined(_qf_sink *s, size_t base, size_t n)
{
    for (size_t j = 0; j < n; j++)
        _qf_sink_undefined(s, base + j, NAN);
}

/* d = max(d, eps) on both ends of the enclosure. */
static void _l2_clamp(_qf_iv *d, double eps)
{
    if (mpfr_cmp_d(d->lo, eps) < 0)
        mpfr_set_d(d->lo, eps, MPFR_RNDD);
    if (mpfr_cmp_d(d->hi, eps) < 0)
        mpfr_set_d(d->hi, eps, MPFR_RNDU);
}

static int _l2_row(void *vctx, size_t r)
{
    const _l2_ctx *k = vctx;
    size_t n = k->p->cols, base = r * n, j;
    const double *x = k->x + base;
    double eps = k->p->eps;
    mpfr_t *sq;
    mpfr_ptr *sp;
    _qf_iv q, d, t, y;
    _qf_ziv zv;
    int zero = 1;

    /* A NaN or an infinity makes the norm NaN or infinite: the row has
     * no finite answer (torch gives NaN, or 0 beside an infinity). */
    for (j = 0; j < n; j++) {
        if (!isfinite(x[j])) {
            _l2_undefined(k->s, base, n);
            return 0;
        }
        zero = zero && x[j] == 0;
    }
    if (zero && eps == 0) { /* 0 / 0 */
        _l2_undefined(k->s, base, n);
        return 0;
    }
    sq = malloc(n * sizeof *sq);
    sp = malloc(n * sizeof *sp);
    if (!sq || !sp) {
        free(sq), free(sp);
        _l2_undefined(k->s, base, n);
        return 0;
    }
    for (j = 0; j < n; j++) {
        mpfr_init2(sq[j], 106);
        mpfr_set_d(sq[j], x[j], MPFR_RNDN);
        mpfr_sqr(sq[j], sq[j], MPFR_RNDN); /* exact: 53 x 53 bits */
        sp[j] = sq[j];
    }
    _qf_iv_init(&q, k->c->w0);
    _qf_iv_init(&d, k->c->w0);
    _qf_iv_init(&t, k->c->w0);
    _qf_iv_init(&y, k->c->w0);
    _qf_ziv_init(&zv, k->c, k->c->w0);
    _qf_ziv_track_each(&zv, 4, &q, &d, &t, &y);
    while (_qf_ziv_next(&zv)) {
        _qf_iv_sum(&q, sp, n);
        _qf_iv_sqrt(&d, &q);
        _l2_clamp(&d, eps);
        for (j = 0; j < n; j++) {
            if (k->s->st[base + j] != QF_REF_UNDECIDED)
                continue;
            _qf_iv_set_d(&t, x[j]);
            _qf_iv_div_pos(&y, &t, &d);
            _qf_ziv_done(&zv, k->s, base + j, &y);
        }
    }
    for (j = 0; j < n; j++)
        mpfr_clear(sq[j]);
    _qf_iv_clear(&q);
    _qf_iv_clear(&d);
    _qf_iv_clear(&t);
    _qf_iv_clear(&y);
    free(sq), free(sp);
    return (int)zv.w;
}

qf_status qf_ref_l2norm(const qf_ref_opts *opts, const qf_ref_l2norm_params *p, const double *x,
                        qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    _l2_ctx k;
    qf_status st;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || (!x && p->rows && p->cols) || !isfinite(p->eps) || p->eps < 0 ||
        (p->cols && p->rows > SIZE_MAX / p->cols))
        return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, y, p->rows * p->cols)) != QF_OK)
        return st;
    k.c = &c;
    k.p = p;
    k.x = x;
    k.s = &s;
    maxp = p->cols ? _qf_parallel_rows(&c, p->rows, _l2_row, &k) : 0;
    _qf_sink_close(&s, maxp);
    return QF_OK;
}
