/* ref_norm.c: RMSNorm and LayerNorm, row-wise.
 *
 * In rigorous intervals at working precision w:
 *   RMSNorm:   ms = (sum x_j^2) / n, the squares exact (106-bit) and summed by
 *              mpfr_sum; r = sqrt(ms + eps); y = (x / r) g + b
 *   LayerNorm: mean = (sum x_j) / n (mpfr_sum); dev_j = x_j - mean;
 *              var = (sum dev_j^2) / n; r = sqrt(var + eps);
 *              y = (dev / r) g + b
 * with g = weight_offset + weight (1 without a weight).  Dividing by the
 * square root (not multiplying by its reciprocal) keeps exact cases exact:
 * RMSNorm of a constant row is +-1 exactly when eps = 0; LayerNorm of a
 * constant row gives dev = 0 exactly, so y = b exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_fast.h"
#include "_ziv.h"

typedef struct nm_ctx {
    const _qf_rctx *c;
    const qf_ref_norm_params *p;
    const double *x;
    int layer;
    _qf_sink *s;
} nm_ctx;

static void row_undefined(_qf_sink *s, size_t base, size_t n)
{
    size_t j;
    for (j = 0; j < n; j++)
        _qf_sink_undefined(s, base + j, NAN);
}

/* RMSNorm of a row in binary64 (_fast.h), deciding what it can; 1 when
 * every element of the row was decided.  With u = 2^-53:
 *   ss = sum x_j^2 in blocks of 64 (each square rounded, each block left
 *   to right, then the block sums): all terms positive, so |ss^ - ss| <=
 *   gamma_{65 + blocks} ss (Higham, ASNA 2nd ed., sec. 4.2);
 *   D = RN(RN(ss / n) + eps): two more roundings, relative rho_D;
 *   rt = RN(sqrt(D)): rho_D / 2 + u (the square root halves a relative
 *   error);
 *   y_j = RN(RN(x_j / rt) RN(offset + w_j)): rho_D / 2 + 4u relative, then
 *   + b_j: that times |x_j / rt * g| absolute, plus u |y| for the sum.
 * The exact result can be a target value (a constant row is +-1 when eps
 * is 0), so such enclosures go to MPFR (may_be_exact).  Rows whose sum of
 * squares is tiny (underflow) or zero are left to MPFR whole. */
static int nm_fast_row(const nm_ctx *k, const double *x, size_t base)
{
    const double u = 0x1p-53;
    const qf_ref_norm_params *P = k->p;
    size_t n = P->cols, j, nb = 0, done = 0;
    double ss = 0, D, rt, g, rho, rel;
    if (k->c->slow_only || k->layer || n == 0)
        return 0;
    for (j = 0; j < n; j += 64) {
        size_t i, e = j + 64 < n ? j + 64 : n;
        double b = 0;
        for (i = j; i < e; i++)
            b += x[i] * x[i];
        ss += b;
        nb++;
    }
    if (!(ss >= 0x1p-900 && ss <= 0x1p900))
        return 0;
    D = ss / (double)n + P->eps;
    if (!(D > 0) || !isfinite(D))
        return 0;
    g = (65.0 + (double)nb) * u;
    rho = g / (1 - g) + 2 * u;
    rt = sqrt(D);
    rel = 1.01 * (rho / 2 + u + 4 * u) + 2 * u;
    for (j = 0; j < n; j++) {
        _qf_fenc f;
        double y = x[j] / rt, gg = P->weight ? P->weight_offset + P->weight[j] : 1, yg = y * gg, e;
        if (k->s->st[base + j] != QF_REF_UNDECIDED) {
            done++;
            continue;
        }
        e = fabs(yg) * rel * (1 + 2 * rel);
        f.v = P->bias ? yg + P->bias[j] : yg;
        f.e = (e + (P->bias ? u * fabs(f.v) : 0)) * (1 + 4 * u);
        done += (size_t)_qf_sink_decide_fast(k->s, base + j, &f, 1);
    }
    return done == n;
}

static int nm_row(void *vctx, size_t r)
{
    const nm_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    const qf_ref_norm_params *P = k->p;
    size_t n = P->cols, base = r * n, j;
    const double *x = k->x + base;
    mpfr_t *term;
    mpfr_ptr *tp;
    _qf_iv *dev = NULL, m, var, rt, y, g, t;
    mpfr_prec_t w = c->w0;
    _qf_ziv zv;

    for (j = 0; j < n; j++) {
        if (!isfinite(x[j])) {
            row_undefined(k->s, base, n);
            return 0;
        }
    }
    /* Binary64 first; MPFR for the row only if something is left. */
    if (nm_fast_row(k, x, base))
        return 0;
    term = malloc(n * sizeof *term);
    tp = malloc(n * sizeof *tp);
    if (k->layer)
        dev = malloc(n * sizeof *dev);
    if (!term || !tp || (k->layer && !dev)) {
        free(term), free(tp), free(dev);
        row_undefined(k->s, base, n);
        return 0;
    }
    for (j = 0; j < n; j++) {
        mpfr_init2(term[j], 106);
        mpfr_set_d(term[j], x[j], MPFR_RNDN);
        if (!k->layer)
            mpfr_sqr(term[j], term[j], MPFR_RNDN); /* exact */
        tp[j] = term[j];
        if (k->layer)
            _qf_iv_init(&dev[j], w);
    }
    _qf_iv_init(&m, w);
    _qf_iv_init(&var, w);
    _qf_iv_init(&rt, w);
    _qf_iv_init(&y, w);
    _qf_iv_init(&g, w);
    _qf_iv_init(&t, w);
    _qf_ziv_init(&zv, c, w);
    _qf_ziv_track_each(&zv, 6, &m, &var, &rt, &y, &g, &t);
    _qf_ziv_track(&zv, dev, k->layer ? n : 0);
    while (_qf_ziv_next(&zv)) {
        _qf_iv_sum(&m, tp, n);
        _qf_iv_div_ui(&m, &m, (unsigned long)n);
        if (k->layer) {
            _qf_iv_set_zero(&var);
            for (j = 0; j < n; j++) {
                _qf_iv_set_d(&t, x[j]);
                _qf_iv_sub(&dev[j], &t, &m);
                _qf_iv_sqr(&t, &dev[j]);
                _qf_iv_add(&var, &var, &t);
            }
            _qf_iv_div_ui(&var, &var, (unsigned long)n);
        } else {
            _qf_iv_set(&var, &m);
        }
        _qf_iv_add_d(&var, &var, P->eps);
        if (mpfr_zero_p(var.hi)) { /* 0 / 0 */
            row_undefined(k->s, base, n);
            break;
        }
        _qf_iv_sqrt(&rt, &var); /* a zero lower end gives infinite or NaN ends: refined */
        for (j = 0; j < n; j++) {
            if (k->s->st[base + j] != QF_REF_UNDECIDED)
                continue;
            if (k->layer) {
                _qf_iv_div_pos(&y, &dev[j], &rt);
            } else {
                _qf_iv_set_d(&t, x[j]);
                _qf_iv_div_pos(&y, &t, &rt);
            }
            if (P->weight) {
                _qf_iv_set_d(&g, P->weight[j]);
                _qf_iv_add_d(&g, &g, P->weight_offset);
                _qf_iv_mul(&t, &y, &g);
                _qf_iv_set(&y, &t);
            }
            if (P->bias)
                _qf_iv_add_d(&y, &y, P->bias[j]);
            _qf_ziv_done(&zv, k->s, base + j, &y);
        }
    }
    for (j = 0; j < n; j++) {
        mpfr_clear(term[j]);
        if (k->layer)
            _qf_iv_clear(&dev[j]);
    }
    _qf_iv_clear(&m);
    _qf_iv_clear(&var);
    _qf_iv_clear(&rt);
    _qf_iv_clear(&y);
    _qf_iv_clear(&g);
    _qf_iv_clear(&t);
    free(term), free(tp), free(dev);
    return (int)zv.w;
}

static qf_status norm_any(const qf_ref_opts *opts, const qf_ref_norm_params *p, const double *x, int layer,
                          qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    nm_ctx k;
    qf_status st;
    size_t j;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || (!x && p->rows && p->cols) || !isfinite(p->eps) || p->eps < 0 || !isfinite(p->weight_offset) ||
        (p->cols && p->rows > SIZE_MAX / p->cols))
        return QF_EINVAL;
    for (j = 0; j < p->cols; j++) {
        if ((p->weight && !isfinite(p->weight[j])) || (p->bias && !isfinite(p->bias[j])))
            return QF_EINVAL;
    }
    if ((st = _qf_sink_open(&s, &c, NULL, y, p->rows * p->cols)) != QF_OK)
        return st;
    k.c = &c;
    k.p = p;
    k.x = x;
    k.layer = layer;
    k.s = &s;
    maxp = p->cols ? _qf_parallel_rows(&c, p->rows, nm_row, &k) : 0;
    _qf_sink_close(&s, maxp);
    return QF_OK;
}

qf_status qf_ref_rmsnorm(const qf_ref_opts *opts, const qf_ref_norm_params *p, const double *x, qf_ref_out *y)
{
    return norm_any(opts, p, x, 0, y);
}

qf_status qf_ref_layernorm(const qf_ref_opts *opts, const qf_ref_norm_params *p, const double *x,
                           qf_ref_out *y)
{
    return norm_any(opts, p, x, 1, y);
}
