/* ref_softmax.c: softmax and log-softmax, row-wise, with a scale.
 *
 * z_j = scale x_j is exact (a 106-bit MPFR product of two doubles).  With m
 * the largest finite z (exact), d_j = z_j - m, p_j = exp(d_j); the k entries
 * with z_j = m have p_j = 1 exactly and the others sum to S1, so
 *   softmax_j = p_j / (k + S1),
 *   log_softmax_j = d_j - log(k) - log1p(S1 / k)
 * all in rigorous interval arithmetic at working precision w (_ref.h).
 * log1p keeps the largest entry's log-softmax (-log1p(S1) for k = 1)
 * decided even when S1 is far below 2^-w.  Likewise the softmax of a largest
 * entry, 1/k - q with q = S1 / (k (k + S1)), when k is a power of two and q
 * is far below the target's spacing next to 1/k: then every value of
 * (1/k - q.hi, 1/k) rounds alike in every mode, and the directed modes get
 * decided without 2^-w having to resolve q.  Entries with z_j = -inf
 * contribute p_j = 0 exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "_fast.h"
#include "_ziv.h"

typedef struct sm_ctx {
    const _qf_rctx *c;
    const double *x;
    size_t cols;
    double scale;
    int log;
    _qf_sink *s;
} sm_ctx;

static void row_undefined(_qf_sink *s, size_t base, size_t n)
{
    size_t j;
    for (j = 0; j < n; j++)
        _qf_sink_undefined(s, base + j, NAN);
}

/* The softmax of a largest entry when 1/k - q lies within the same rounding
 * cell as 1/k - 2^(-e-p-16) (k = 2^e, p the target precision): q > 0 and
 * q < 2^(-e-p-8), far below the spacing 2^(-e-p) just under 1/k.  S1 is
 * the enclosure of the sum of the other weights.  Returns 1 when it wrote
 * the element. */
static int tiny_below(_qf_sink *s, const _qf_iv *S1, size_t k, size_t i)
{
    mpfr_t q;
    _qf_iv y;
    long e = 0;
    mpfr_prec_t p = _qf_format_prec(s->f);
    int done = 0;
    if (k & (k - 1))
        return 0;
    while ((1ul << e) < k)
        e++;
    mpfr_init2(q, 64);
    /* 0 < q <= S1 / k^2 */
    mpfr_div_ui(q, S1->hi, (unsigned long)k, MPFR_RNDU);
    mpfr_div_ui(q, q, (unsigned long)k, MPFR_RNDU);
    if (mpfr_sgn(S1->lo) > 0 && mpfr_cmp_ui_2exp(q, 1, -e - (long)p - 8) < 0) {
        _qf_iv_init(&y, p + 24);
        mpfr_set_ui_2exp(y.lo, 1, -e, MPFR_RNDN);
        mpfr_set_ui_2exp(y.hi, 1, -e - (long)p - 16, MPFR_RNDN);
        mpfr_sub(y.lo, y.lo, y.hi, MPFR_RNDN); /* exact at p + 24 bits */
        mpfr_set(y.hi, y.lo, MPFR_RNDN);
        done = _qf_sink_decide(s, i, &y);
        if (done) {
            s->st[i] = QF_REF_ROUNDED;
            /* the value is 1/k - q, 0 < q <= the bound in q (not the
             * stand-in point decided above) */
            _qf_sink_approx(s, i, ldexp(1.0, (int)-e), mpfr_get_d(q, MPFR_RNDU));
        }
        _qf_iv_clear(&y);
    }
    mpfr_clear(q);
    return done;
}

/* Softmax or log-softmax of a row of finite or masked entries in binary64 (_fast.h),
 * deciding what it can; 1 when every element of the row was decided.
 * _qf_fast_expsum gives E_j = exp(a_j - a_m) (1 + eta_j), |eta_j| <= eta
 * (6 u, a_m the largest entry's exact scale x), S = sum E_j with relative
 * bound rel_S, and k, S1 (the k entries equal to a_m, E = 1 exactly; the
 * sum of the others).  With u = 2^-53, first order, then enlarged by 1 %
 * and 2 u:
 *   softmax_j = exp(a_j - a_m) / sum_i exp(a_i - a_m) (any shift):
 *     y_j = RN(E_j RN(1 / S)): eta (E_j) + eta + rel_S (S) + 2u (the
 *     reciprocal and the product: cheaper than a division per element).
 *   log_softmax_j = (a_j - a_m) - L, L = log(k) + log1p(S1 / k) >= 0:
 *     t = RN(S1 / k): eta + rel_S1, + u unless k is a power of two;
 *     L1 = log1p(t): that (log1p's condition t / ((1 + t) log1p t) <= 1)
 *     + 10 u (_qf_fast_log1p); k > 1: L = RN(log1p(k - 1) + L1), both
 *     positive: the larger relative bound + u; eta_L is the result;
 *     y_j = RN(d_j - L) with d_j + dlo_j = a_j - a_m up to lo_err:
 *     |y_j - y_j*| <= |dlo_j| + lo_err + eta_L L (1 + 2 eta_L) + u |y_j|
 *     (1 + 2u).  d_j <= 2^-10 and L >= log 2 > d_j when d_j > 0, so
 *     d_j - L never cancels: the result is -(|d_j| + L) in magnitude, and
 *     the largest entry's -L keeps its relative accuracy however small
 *     S1 is (log1p, no 1 + S1 formed).
 * Which results can be target values (MPFR would call them EXACT): with
 * the d_i = a_i - a_m rational, a rational softmax_j = q or log_softmax_j
 * = q would give k + sum c_i exp(d_i) = exp(d_j) / q, resp. exp(d_j - q)
 * (c_i the multiplicities of the distinct nonzero d_i), a vanishing
 * combination of exponentials of distinct rationals with nonzero
 * coefficients unless every d_i term is gone; the Lindemann-Weierstrass
 * theorem (A. Baker, Transcendental Number Theory, 1975, Theorem 1.4)
 * forbids it.  So softmax is exact only for rows with no entry below the
 * largest (k = n: 1/n), and log-softmax only for a single entry (0, which
 * the decision leaves to MPFR anyway): may_be_exact is k == n for softmax
 * and 0 for log-softmax (n counting the entries that are not masked:
 * scale x = -inf, weight 0, written exactly as 0 and -inf).  That decides elements such as the log-softmax
 * of -50 next to 0 (-50 - 2e-22: in round to nearest, -50, status
 * rounded), whose enclosure holds the target value -50 but not the exact
 * result.  Rows with an entry more than 700 below
 * the largest (exp would underflow) are left to MPFR whole.  Memory: 8
 * bytes per element of the row for softmax, 24 for log-softmax. */
static int sm_fast_row(const sm_ctx *k, const double *x, size_t base)
{
    const double u = 0x1p-53;
    size_t n = k->cols, j, done = 0;
    _qf_fast_dst dst;
    double *E, *d = NULL, *dlo = NULL;
    _qf_fast_row fr;
    if (k->c->slow_only || n == 0)
        return 0;
    E = malloc((k->log ? 3 : 1) * n * sizeof *E);
    if (!E)
        return 0;
    if (k->log) {
        d = E + n;
        dlo = E + 2 * n;
    }
    if (!_qf_fast_expsum(x, n, k->scale, E, d, dlo, &fr)) {
        free(E);
        return 0;
    }
    _qf_fast_begin(&dst, k->s);
    if (!k->log) {
        double R = 1.01 * (2 * fr.eta + fr.rel_S + 2 * u) + 2 * u, inv = 1 / fr.S;
        for (j = 0; j < n; j++) {
            double y = E[j] * inv;
            if (isinf(x[j])) { /* masked: 0 exactly, as MPFR's path writes it */
                _qf_sink_put_d(k->s, base + j, 0.0);
                done++;
                continue;
            }
            done += (size_t)_qf_fast_decide(&dst, base + j, y, fabs(y) * R, fr.k == fr.nfin);
        }
    } else {
        double kd = (double)fr.k, t = fr.S1 / kd, L, L1, Lk, rel;
        int pow2 = (fr.k & (fr.k - 1)) == 0;
        rel = fr.eta + fr.rel_S1 + (pow2 ? 0 : u);
        if (!_qf_fast_log1p(t, &L1) || !_qf_fast_log1p(kd - 1, &Lk)) {
            free(E);
            return 0;
        }
        rel = 1.01 * (rel + _QF_FAST_LOG1P_REL) + 2 * u;
        if (fr.k > 1) {
            L = Lk + L1;
            rel = 1.01 * ((rel > _QF_FAST_LOG1P_REL ? rel : _QF_FAST_LOG1P_REL) + u) + 2 * u;
        } else {
            L = L1;
        }
        for (j = 0; j < n; j++) {
            double y = d[j] - L;
            if (isinf(x[j])) { /* masked: -inf exactly */
                _qf_sink_put_d(k->s, base + j, -INFINITY);
                done++;
                continue;
            }
            double e = (fabs(dlo[j]) + fr.lo_err + rel * L * (1 + 2 * rel) + u * fabs(y) * (1 + 2 * u)) * (1 + 8 * u);
            done += (size_t)_qf_fast_decide(&dst, base + j, y, e, 0);
        }
    }
    _qf_fast_end(&dst);
    free(E);
    return done == n;
}

static int sm_row(void *vctx, size_t r)
{
    const sm_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    const double *x = k->x + r * k->cols;
    size_t n = k->cols, base = r * n, j, nfin = 0, jmax = SIZE_MAX, kmax = 0;
    mpfr_t *z;
    char *fin;
    _qf_iv *d, *p, S, S1, L, y;
    mpfr_prec_t w = c->w0;
    _qf_ziv zv;

    /* Binary64 first (it declines rows with NaN or +inf after the scale);
     * MPFR only for what is left. */
    if (sm_fast_row(k, x, base))
        return 0;
    fin = malloc(n);
    z = malloc(n * sizeof *z);
    d = malloc(n * sizeof *d);
    p = malloc(n * sizeof *p);
    if (!fin || !z || !d || !p) {
        free(fin), free(z), free(d), free(p);
        row_undefined(k->s, base, n);
        return 0;
    }
    /* special values: NaN, +inf (inf - inf) and 0 * inf make the row undefined */
    for (j = 0; j < n; j++) {
        fin[j] = 0;
        if (isnan(x[j]) || (isinf(x[j]) && (k->scale == 0 || (x[j] > 0) == (k->scale > 0)))) {
            row_undefined(k->s, base, n);
            free(fin), free(z), free(d), free(p);
            return 0;
        }
        if (isinf(x[j]))
            continue; /* scale x = -inf: exact zero weight */
        fin[j] = 1;
        nfin++;
    }
    if (nfin == 0) {
        row_undefined(k->s, base, n);
        free(fin), free(z), free(d), free(p);
        return 0;
    }
    for (j = 0; j < n; j++) {
        _qf_iv_init(&d[j], w); /* all of them: the Ziv loop tracks the arrays */
        _qf_iv_init(&p[j], w);
        if (!fin[j])
            continue;
        mpfr_init2(z[j], 106);
        mpfr_set_d(z[j], x[j], MPFR_RNDN);
        mpfr_mul_d(z[j], z[j], k->scale, MPFR_RNDN); /* exact: 53 + 53 bits */
        if (jmax == SIZE_MAX || mpfr_cmp(z[j], z[jmax]) > 0)
            jmax = j;
    }
    for (j = 0; j < n; j++) {
        if (!fin[j])
            _qf_sink_put_d(k->s, base + j, k->log ? -INFINITY : 0.0);
        else if (mpfr_equal_p(z[j], z[jmax]))
            kmax++;
    }
    _qf_iv_init(&S, w);
    _qf_iv_init(&S1, w);
    _qf_iv_init(&L, w);
    _qf_iv_init(&y, w);
    _qf_ziv_init(&zv, c, w);
    _qf_ziv_track(&zv, d, n);
    _qf_ziv_track(&zv, p, n);
    _qf_ziv_track_each(&zv, 4, &S, &S1, &L, &y);
    while (_qf_ziv_next(&zv)) {
        _qf_iv_set_zero(&S); /* S1 first */
        for (j = 0; j < n; j++) {
            if (!fin[j])
                continue;
            _qf_iv_set_mpfr(&d[j], z[j]);
            _qf_iv_sub_mpfr(&d[j], &d[j], z[jmax]);
            _qf_iv_exp(&p[j], &d[j]);
            if (!mpfr_equal_p(z[j], z[jmax]))
                _qf_iv_add(&S, &S, &p[j]);
        }
        if (k->log) {
            _qf_iv_div_ui(&L, &S, (unsigned long)kmax);
            _qf_iv_log1p(&L, &L);
            if (kmax > 1) {
                _qf_iv_set_si(&y, (long)kmax);
                _qf_iv_log(&y, &y);
                _qf_iv_add(&L, &L, &y);
            }
        }
        _qf_iv_set(&S1, &S);
        _qf_iv_add_ui(&S, &S, (unsigned long)kmax);
        for (j = 0; j < n; j++) {
            if (!fin[j] || k->s->st[base + j] != QF_REF_UNDECIDED)
                continue;
            if (k->log) {
                _qf_iv_sub(&y, &d[j], &L);
            } else {
                _qf_iv_div_pos(&y, &p[j], &S);
            }
            if (!k->log && mpfr_equal_p(z[j], z[jmax]) && tiny_below(k->s, &S1, kmax, base + j))
                continue;
            _qf_ziv_done(&zv, k->s, base + j, &y);
        }
    }
    for (j = 0; j < n; j++) {
        if (fin[j])
            mpfr_clear(z[j]);
        _qf_iv_clear(&d[j]);
        _qf_iv_clear(&p[j]);
    }
    _qf_iv_clear(&S);
    _qf_iv_clear(&S1);
    _qf_iv_clear(&L);
    _qf_iv_clear(&y);
    free(fin), free(z), free(d), free(p);
    return (int)zv.w;
}

static qf_status softmax_any(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, double scale,
                             int log, qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    sm_ctx k;
    qf_status st;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if ((!x && rows && cols) || !isfinite(scale) || (cols && rows > SIZE_MAX / cols))
        return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, y, rows * cols)) != QF_OK)
        return st;
    k.c = &c;
    k.x = x;
    k.cols = cols;
    k.scale = scale;
    k.log = log;
    k.s = &s;
    maxp = cols ? _qf_parallel_rows(&c, rows, sm_row, &k) : 0;
    _qf_sink_close(&s, maxp);
    return QF_OK;
}

qf_status qf_ref_softmax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, double scale,
                         qf_ref_out *y)
{
    return softmax_any(opts, x, rows, cols, scale, 0, y);
}

qf_status qf_ref_log_softmax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, double scale,
                             qf_ref_out *y)
{
    return softmax_any(opts, x, rows, cols, scale, 1, y);
}
