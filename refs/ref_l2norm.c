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
 * A binary64 evaluation with a proven bound comes first (_l2_fast_row,
 * docs/refs.md "Fast path"); MPFR takes only the elements it leaves.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_fast.h"
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

/* The row in binary64 (_fast.h), deciding what it can; 1 when every
 * element of the row was decided.  u = 2^-53; first-order bounds enlarged
 * by 1 % and 2 u, as everywhere in the fast path (docs/refs.md "Fast
 * path", "L2 normalization").  q = sum x_j^2, d = max(sqrt q, eps):
 *   squares  s_j = RN(x_j^2): |s_j - x_j^2| <= u x_j^2, or 2^-1075 when
 *            s_j is subnormal, so |sum s_j - q| <= u q + n 2^-1075;
 *   sum      Q^ = Sum2 of the s_j (Ogita, Rump and Oishi, SIAM J. Sci.
 *            Comput. 26(6), 2005, Prop. 4.5; _qf_fast_sum2), |Q^ - sum
 *            s_j| <= b_Q: rho_Q = u + (b_Q + n 2^-1074) / Q^;
 *   root     r = RN(sqrt Q^) (IEEE 754's correctly rounded sqrt): sqrt
 *            halves a relative error (|sqrt(1 + t) - 1| <= |t| / 2 for
 *            t >= -1), and its rounding is u: rho_r = rho_Q / 2 + u;
 *   clamp    d^ = max(r, eps), eps exact: max is 1-Lipschitz in its
 *            first argument and d >= sqrt q, so |d^ - d| <= |r - sqrt q|
 *            <= rho_r d (no case split on which side eps falls);
 *   quotient y_j = RN(x_j / d^), x_j exact: rho_r (the divisor, to first
 *            order) + u, or 2^-1075 absolute when y_j is subnormal.
 * R = 1.01 (rho_Q / 2 + 2u) + 2u, e_j = (|y_j| R (1 + 2R) + 2^-1074)
 * (1 + 8u) for the roundings of e_j itself.  The exact result can be a
 * target value (one nonzero entry gives +-1, four equal ones 1/2), so such
 * enclosures go to MPFR (may_be_exact).  A zero entry gives 0 exactly
 * (EXACT, as MPFR's point enclosure, with its approximation and error).
 * Rows whose Q^ is outside [2^-900, 2^900] (zero rows among them) go to
 * MPFR whole.  Memory: none per element beyond the output. */
static int _l2_fast_row(const _l2_ctx *k, const double *x, size_t base)
{
    const double u = 0x1p-53;
    size_t n = k->p->cols, j, done = 0;
    _qf_fast_dst dst;
    double Q, bQ, rhoQ, d, R;
    if (k->c->slow_only || n == 0 || (double)n > 0x1p40)
        return 0;
    Q = _qf_fast_sum2(x, n, 1, &bQ);
    if (!(Q >= 0x1p-900 && Q <= 0x1p900))
        return 0;
    rhoQ = u + (bQ + (double)n * 0x1p-1074) / Q;
    d = sqrt(Q);
    if (d < k->p->eps)
        d = k->p->eps;
    R = 1.01 * (rhoQ / 2 + 2 * u) + 2 * u;
    _qf_fast_begin(&dst, k->s);
    for (j = 0; j < n; j++) {
        double y = x[j] / d;
        if (x[j] == 0) {
            /* as MPFR's point [0, 0]: EXACT, approximation 0 within 2^-1074 */
            _qf_sink_put_d(k->s, base + j, 0.0);
            _qf_sink_approx(k->s, base + j, x[j], 0x1p-1074);
            done++;
            continue;
        }
        done += (size_t)_qf_fast_decide(&dst, base + j, y,
                                        (fabs(y) * R * (1 + 2 * R) + 0x1p-1074) * (1 + 8 * u), 1);
    }
    _qf_fast_end(&dst);
    return done == n;
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
    /* Binary64 first; MPFR for the row only if something is left. */
    if (_l2_fast_row(k, x, base))
        return 0;
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
