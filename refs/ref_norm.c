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

/* RMSNorm or LayerNorm of a row in binary64 (_fast.h), deciding what it
 * can; 1 when every element of the row was decided.  u = 2^-53; sums by
 * Sum2 (_qf_fast_sum2: the sum and an absolute bound on its error);
 * first-order bounds enlarged by 1 % and 2 u, as everywhere in the fast
 * path.  c_j = x_j (RMSNorm) or x_j - mean (LayerNorm), Q = sum c_j^2:
 *   RMSNorm:   Q^ = Sum2 of RN(x_j^2): each square u (relative; a square
 *              below 2^-1022 loses at most 2^-1074 absolute, n 2^-1074 in
 *              all), Sum2's bound b_Q: rho_Q = u + (b_Q + n 2^-1074) / Q^.
 *   LayerNorm: two passes.  s = Sum2 of x_j (bound b_s), mu = RN(s / n):
 *              |mu - mean| <= dmu = b_s / n + u |mu|;
 *              dev_j = RN(x_j - mu) = c_j + eps_j, |eps_j| <= u |dev_j| +
 *              dmu;  Q^ = Sum2 of RN(dev_j^2); since |dev_j^2 - c_j^2| <=
 *              |eps_j| (2 |dev_j| + |eps_j|), with A = sum |dev_j|:
 *              |Q^ - Q| <= b_Q + u Q^ + n 2^-1074 + 2 u Q^ + 2 dmu A +
 *              2 n dmu^2 (second order in u dropped into the 1 %), so
 *              rho_Q = that / Q^.  (A compensated mean makes dmu about
 *              u |mean|, and Q is the sum of squared deviations from the
 *              exact mean: no cancellation as in E[x^2] - E[x]^2.)
 *   D = RN(RN(Q^ / n) + eps) (eps >= 0): rho_D = rho_Q + 2u;
 *   inv = RN(1 / RN(sqrt D)): rho_D / 2 + u (the square root halves it)
 *   + u (the reciprocal; a product per element costs less than a
 *   division);
 *   y_j = RN(c_j inv) RN(offset + w_j) (+ b_j): relative rho_D / 2 + 2u
 *   (inv) + u (product) + u (LayerNorm: dev_j's rounding) + 2u (weight:
 *   its sum and product) of |y g|, plus dmu |g| inv (LayerNorm's mean),
 *   plus u |result| for the bias.
 * The exact result can be a target value (a constant row gives +-1 in
 * RMSNorm with eps = 0, the bias in LayerNorm), so such enclosures go to
 * MPFR (may_be_exact); rows whose Q^ is 0 or outside [2^-900, 2^900] go
 * to MPFR whole (constant LayerNorm rows among them).  Memory: none per
 * element beyond the output (dev_j is recomputed, the same rounding). */
static int nm_fast_row(const nm_ctx *k, const double *x, size_t base)
{
    const double u = 0x1p-53;
    const qf_ref_norm_params *P = k->p;
    size_t n = P->cols, j, done = 0;
    _qf_fast_dst dst;
    double Q, bQ, rhoQ, mu = 0, dmu = 0, D, inv, R, gmu;
    if (k->c->slow_only || n == 0 || (double)n > 0x1p40)
        return 0;
    if (!k->layer) {
        Q = _qf_fast_sum2(x, n, 1, &bQ);
        if (!(Q >= 0x1p-900 && Q <= 0x1p900))
            return 0;
        rhoQ = u + (bQ + (double)n * 0x1p-1074) / Q;
    } else {
        double bs, s = _qf_fast_sum2(x, n, 0, &bs), c = 0, A = 0, t;
        if (!isfinite(s))
            return 0;
        mu = s / (double)n;
        dmu = (bs / (double)n + u * fabs(mu)) * (1 + 8 * u);
        Q = 0;
        for (j = 0; j < n; j++) {
            /* Sum2 of the rounded squares, as _qf_fast_sum2 (inline: dev_j
             * is not stored) */
            double dv = x[j] - mu, p = dv * dv, z;
            t = Q + p;
            z = t - Q;
            c += (Q - (t - z)) + (p - z);
            Q = t;
            A += fabs(dv);
        }
        Q += c;
        if (!(Q >= 0x1p-900 && Q <= 0x1p900))
            return 0;
        {
            double g = (double)(n - 1) * u;
            g = g / (1 - g);
            bQ = (u * Q + g * g * 2 * Q) * (1 + 0x1p-40); /* Sum2, positive terms */
        }
        rhoQ = (bQ + 3 * u * Q + (double)n * 0x1p-1074 + 2 * dmu * A * 1.01 + 2 * (double)n * dmu * dmu) / Q;
    }
    D = Q / (double)n + P->eps;
    if (!(D > 0) || !isfinite(D))
        return 0;
    inv = 1 / sqrt(D);
    R = 1.01 * ((rhoQ + 2 * u) / 2 + u + 2 * u + (k->layer ? u : 0) + (P->weight ? 2 * u : 0)) + 2 * u;
    gmu = 1.01 * dmu * inv;
    _qf_fast_begin(&dst, k->s);
    for (j = 0; j < n; j++) {
        double c = k->layer ? x[j] - mu : x[j];
        double g = P->weight ? P->weight_offset + P->weight[j] : 1, y = (c * inv) * g, v, e;
        e = fabs(y) * R * (1 + 2 * R) + (k->layer ? gmu * fabs(g) * (1 + 2 * u) : 0);
        v = P->bias ? y + P->bias[j] : y;
        e = (e + (P->bias ? u * fabs(v) : 0)) * (1 + 8 * u);
        done += (size_t)_qf_fast_decide(&dst, base + j, v, e, 1);
    }
    _qf_fast_end(&dst);
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
