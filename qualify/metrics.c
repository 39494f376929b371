/* metrics.c: per-element and per-case error metrics (docs/verdicts.md).
 *
 * Sums of squares and inner products are computed exactly with the
 * superaccumulator of refs/qf_dot.h (products of two doubles are exact
 * there) and rounded once: the normwise error, SQNR and cosine do not
 * degrade with n, and the error energy is formed as
 * sum y^2 - 2 sum x y + sum x^2 without rounding the differences first.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_metrics.h"

const double qf_metrics_pct[QF_METRICS_NPCT] = {0.50, 0.90, 0.99, 0.999};

/* qf_ref_status values (refs/qf_ref.h), not included to keep this module
 * independent of MPFR's header. */
enum { REF_UNDECIDED = 2, REF_UNDEFINED = 3 };

/* The errors but the ulp one (which costs the most), for qf_metrics_elem
 * and for the percentiles' passes, which need one kind at a time. */
static qf_elem_err elem_abs(double got, double exact, double bound)
{
    qf_elem_err e;
    double d = got - exact;
    e.ulp = NAN;
    e.abs = fabs(d);
    if (isinf(d) && isfinite(got) && isfinite(exact))
        e.abs = 2 * fabs(0.5 * got - 0.5 * exact); /* overflow of the difference: Inf is right */
    if (exact == 0)
        e.rel = e.abs == 0 ? 0 : INFINITY;
    else
        e.rel = e.abs / fabs(exact);
    if (isnan(bound))
        e.util = NAN;
    else if (bound == 0)
        e.util = e.abs == 0 ? 0 : INFINITY;
    else
        e.util = e.abs / bound;
    return e;
}

qf_elem_err qf_metrics_elem(const qf_format *out, double got, double exact, double bound)
{
    qf_elem_err e = elem_abs(got, exact, bound);
    e.ulp = qf_format_ulp_error(out, got, exact);
    return e;
}

/* v[k] becomes the value sorting would put there, none after it smaller
 * and none before it larger: Hoare's selection, in place.  (qsort sorted
 * v before, and glibc's qsort is a merge sort that allocates a copy of v:
 * 8 bytes more per checked element at the metrics' peak, docs/runner.md
 * "Memory".  The values are non-negative numbers, so the value at a rank
 * is the same whichever way it is found.) */
static void select_rank(double *v, ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t k)
{
    while (lo < hi) {
        ptrdiff_t i = lo - 1, j = hi + 1;
        double piv = v[lo + (hi - lo) / 2], t;
        for (;;) {
            do
                i++;
            while (v[i] < piv);
            do
                j--;
            while (v[j] > piv);
            if (i >= j)
                break;
            t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
}

void qf_metrics_where(const qf_metrics *m, size_t i, char *buf, size_t size)
{
    if (m && m->cols)
        snprintf(buf, size, "(%zu, %zu)", i / m->cols, i % m->cols);
    else
        snprintf(buf, size, "[%zu]", i);
}

typedef struct sums {
    qf_dot_acc x2, y2, xy, err2, bias, bias_ulp;
} sums;

static void set_max(double v, size_t i, double *max, size_t *at)
{
    if (v > *max || (isnan(*max) && !isnan(v))) {
        *max = v;
        *at = i;
    }
}

/* Element i of the candidate: got[i], or its code decoded (got_codes). */
static double got_at(const qf_metrics_input *in, size_t i)
{
    const unsigned char *q;
    size_t eb;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    if (in->got)
        return in->got[i];
    eb = (size_t)in->out->storage_bits / 8;
    q = (const unsigned char *)in->got_codes + (in->got_idx ? (size_t)in->got_idx[i] : i) * eb;
    switch (eb) {
    case 1: memcpy(&u8, q, 1); u64 = u8; break;
    case 2: memcpy(&u16, q, 2); u64 = u16; break;
    case 4: memcpy(&u32, q, 4); u64 = u32; break;
    default: memcpy(&u64, q, 8); break;
    }
    return qf_format_decode(in->out, u64);
}

/* How element i enters the metrics, in the main loop's order: its
 * reference undecided or undefined, a NaN or an Inf reference judged by
 * value, a non-finite result against a finite reference, or both finite
 * (the error metrics).  The percentiles' passes ask again instead of
 * reading a mark per element (1 byte per checked element less). */
enum { EC_UNDECIDED, EC_UNDEFINED, EC_NAN, EC_INF, EC_GOT_NONFINITE, EC_FINITE };
typedef struct elem_vals {
    double g, x, r, bnd; /* x: as the reference gave it */
} elem_vals;

static int elem_class(const qf_metrics_input *in, size_t i, elem_vals *v)
{
    v->g = got_at(in, i);
    v->x = in->exact[i];
    v->bnd = in->bound ? in->bound[i] : NAN;
    v->r = NAN;
    if (in->status && in->status[i] == REF_UNDECIDED)
        return EC_UNDECIDED;
    if (in->status && in->status[i] == REF_UNDEFINED)
        return EC_UNDEFINED;
    v->r = in->rounded ? in->rounded[i]
                       : qf_format_decode(in->out, qf_format_encode(in->out, v->x, QF_ROUND_RNE, 0, 0, 0));
    /* Special values are judged against the correctly rounded
     * reference: an exact value past the format's range is Inf or NaN
     * there (or max when the case saturates). */
    if (isnan(v->r) || isnan(v->x))
        return EC_NAN;
    /* An exact value past the output's range whose correctly rounded
     * value is Inf, and a finite result: a kernel may round an
     * accumulator that is within its bound of the exact value, but
     * below the overflow threshold, to max.  Judged by the bound when
     * there is one (docs/verdicts.md). */
    if (isinf(v->r) && !(isfinite(v->x) && isfinite(v->g) && !isnan(v->bnd)))
        return EC_INF;
    if (!isfinite(v->g))
        return EC_GOT_NONFINITE;
    return EC_FINITE;
}

/* Element i's error of one kind (0 ulp, 1 abs, 2 rel, 3 util), as the main
 * loop computed it, or -1 when i has none of that kind. */
static double err_kind(const qf_metrics_input *in, int kind, size_t i)
{
    elem_vals v;
    qf_elem_err e;
    double x;
    if (elem_class(in, i, &v) != EC_FINITE || (kind == 3 && !isfinite(v.bnd)))
        return -1;
    x = isfinite(v.x) ? v.x : v.r;
    if (kind == 0)
        return fabs(qf_format_ulp_error(in->out, v.g, x));
    e = elem_abs(v.g, x, v.bnd);
    return kind == 1 ? e.abs : kind == 2 ? e.rel : e.util;
}

/* The percentiles in bounded memory.  The errors are non-negative, so
 * their order is that of their bit patterns as unsigned integers (IEEE
 * 754-2019, sec. 5.10: totalOrder on positive numbers), and a value's rank
 * can be found by most-significant-digit radix selection: a pass counts
 * the errors of the kind by their next DIGIT bits among those that share the
 * rank's known leading bits, which narrows the rank to one bucket; once a
 * rank's bucket holds at most PCT_CAP(n) values, a last pass gathers them
 * and Hoare's selection finds the rank there.  The errors are recomputed
 * in each pass instead of kept (8 bytes per checked element before, the
 * largest array at the metrics' peak, docs/runner.md "Memory"); the cost
 * is time, about three passes per kind (the exponent, 12 bits of the
 * significand, the gathering) instead of one.  A bucket whose values are
 * all equal (an exact kernel's zeros) ends the search at once.  The value
 * at a rank is the one a sort would put there, so the figures are those of
 * selecting in one array of every error. */
#define DIGIT      12
#define NB         ((size_t)1 << DIGIT)
#define PCT_CAP(n) ((n) / 64 + 4096)

typedef struct rank_st {
    size_t k;     /* rank within the values that share the leading bits */
    size_t count; /* how many share them */
    uint64_t pre; /* the leading bits known */
    int known;    /* how many */
    int done;
    double v;
    uint64_t mn, mx; /* the smallest and largest pattern sharing them */
    double *seg;     /* gathered values */
} rank_st;

static uint64_t key_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int shares(const rank_st *r, uint64_t b)
{
    return r->known == 0 || (b >> (64 - r->known)) == r->pre;
}

/* One counting pass for the ranks still too wide to gather. */
static void pct_count(const qf_metrics_input *in, int kind, rank_st *rk, int nr, size_t *hist, size_t cap)
{
    size_t i;
    int q;
    memset(hist, 0, (size_t)nr * NB * sizeof *hist);
    for (q = 0; q < nr; q++) {
        rk[q].mn = UINT64_MAX, rk[q].mx = 0;
        if (!rk[q].done && rk[q].known == 64) { /* the whole pattern: one value */
            memcpy(&rk[q].v, &rk[q].pre, sizeof rk[q].v);
            rk[q].done = 1;
        }
    }
    for (i = 0; i < in->n; i++) {
        double v = err_kind(in, kind, i);
        uint64_t b;
        if (v < 0)
            continue;
        b = key_of(v);
        for (q = 0; q < nr; q++) {
            rank_st *r = &rk[q];
            int w = 64 - r->known < DIGIT ? 64 - r->known : DIGIT;
            if (r->done || r->count <= cap || !shares(r, b))
                continue;
            hist[(size_t)q * NB + ((b << r->known) >> (64 - w))]++;
            r->mn = b < r->mn ? b : r->mn;
            r->mx = b > r->mx ? b : r->mx;
        }
    }
    for (q = 0; q < nr; q++) {
        rank_st *r = &rk[q];
        int w = 64 - r->known < DIGIT ? 64 - r->known : DIGIT;
        size_t d = 0;
        if (r->done || r->count <= cap)
            continue;
        if (r->mn == r->mx) { /* every value alike (or the pattern complete) */
            memcpy(&r->v, &r->mn, sizeof r->v);
            r->done = 1;
            continue;
        }
        while (r->k >= hist[(size_t)q * NB + d]) /* the bucket holding rank k */
            r->k -= hist[(size_t)q * NB + d++];
        r->count = hist[(size_t)q * NB + d];
        r->pre = (r->pre << w) | d;
        r->known += w;
    }
}

/* The last pass: each open rank's values gathered, then selected. */
static int pct_gather(const qf_metrics_input *in, int kind, rank_st *rk, int nr)
{
    size_t i, *fill = calloc((size_t)nr, sizeof *fill);
    int q, ok = fill != NULL;
    for (q = 0; q < nr && ok; q++)
        if (!rk[q].done && !(rk[q].seg = malloc((rk[q].count ? rk[q].count : 1) * sizeof *rk[q].seg)))
            ok = 0;
    for (i = 0; i < in->n && ok; i++) {
        double v = err_kind(in, kind, i);
        uint64_t b;
        if (v < 0)
            continue;
        b = key_of(v);
        for (q = 0; q < nr; q++)
            if (!rk[q].done && shares(&rk[q], b) && fill[q] < rk[q].count)
                rk[q].seg[fill[q]++] = v;
    }
    for (q = 0; q < nr && ok; q++) {
        if (rk[q].done)
            continue;
        select_rank(rk[q].seg, 0, (ptrdiff_t)rk[q].count - 1, (ptrdiff_t)rk[q].k);
        rk[q].v = rk[q].seg[rk[q].k];
    }
    for (q = 0; q < nr; q++)
        free(rk[q].seg);
    free(fill);
    return ok ? 0 : -1;
}

/* The percentiles of one error kind over the nk elements that have one. */
static int pct_kind(const qf_metrics_input *in, int kind, size_t nk, size_t *hist, double *pct)
{
    rank_st rk[QF_METRICS_NPCT];
    size_t cap = PCT_CAP(in->n);
    int q, open = 1;
    if (nk == 0) {
        for (q = 0; q < QF_METRICS_NPCT; q++)
            pct[q] = NAN;
        return 0;
    }
    memset(rk, 0, sizeof rk);
    for (q = 0; q < QF_METRICS_NPCT; q++) {
        /* nearest rank: the smallest value with at least p n values <= it */
        double r = ceil(qf_metrics_pct[q] * (double)nk - 1e-9); /* 0.999 * 1000 is not 999 in binary */
        size_t i = r < 1 ? 0 : (size_t)r - 1;
        rk[q].k = i >= nk ? nk - 1 : i;
        rk[q].count = nk;
    }
    while (open) {
        open = 0;
        for (q = 0; q < QF_METRICS_NPCT; q++)
            open |= !rk[q].done && rk[q].count > cap;
        if (open)
            pct_count(in, kind, rk, QF_METRICS_NPCT, hist, cap);
    }
    if (pct_gather(in, kind, rk, QF_METRICS_NPCT))
        return -1;
    for (q = 0; q < QF_METRICS_NPCT; q++)
        pct[q] = rk[q].v;
    return 0;
}

qf_status qf_metrics_compute(const qf_metrics_input *in, qf_metrics *m, qf_elem_err *elems)
{
    size_t i, n, nc = 0, nb = 0;
    double best_viol = -1;
    size_t *hist = NULL;
    sums *S;
    if (!in || !m || !in->out || (in->n && ((!in->got && !in->got_codes) || !in->exact)))
        return QF_EINVAL;
    n = in->n;
    memset(m, 0, sizeof *m);
    m->n = n;
    m->cols = in->cols;
    m->max_ulp = m->max_abs = m->max_rel = m->max_util = m->max_ulp_nonzero = m->max_abs_zero = NAN;
    m->at_ulp = m->at_abs = m->at_rel = m->at_util = m->at_ulp_nonzero = m->at_abs_zero = n;
    m->at_nonfinite_bad = m->at_finite_bad = m->at_violation = n;
    m->viol_err = m->viol_bound = m->viol_err_ulp = m->viol_bound_ulp = NAN;
    S = malloc(sizeof *S);
    if (!S)
        return QF_ENOMEM;
    qf_dot_acc_init(&S->x2), qf_dot_acc_init(&S->y2), qf_dot_acc_init(&S->xy);
    qf_dot_acc_init(&S->err2), qf_dot_acc_init(&S->bias), qf_dot_acc_init(&S->bias_ulp);

    for (i = 0; i < n; i++) {
        elem_vals ev;
        int cls = elem_class(in, i, &ev);
        double g = ev.g, x = ev.x, r = ev.r, bnd = ev.bnd;
        qf_elem_err e;
        if (elems)
            elems[i].ulp = elems[i].abs = elems[i].rel = elems[i].util = NAN;
        if (cls == EC_UNDECIDED || cls == EC_UNDEFINED) {
            if (cls == EC_UNDECIDED)
                m->n_undecided++;
            else
                m->n_undefined++;
            continue;
        }
        if (x == 0)
            m->n_zero_ref++;
        if (cls == EC_NAN) {
            if (!isnan(g)) {
                m->nan_mismatch++;
                if (m->finite_bad++ == 0)
                    m->at_finite_bad = i;
            }
            continue;
        }
        if (cls == EC_INF) {
            if (g == r) {
                m->n_exact_rounded++;
            } else {
                if (isnan(g))
                    m->nan_mismatch++;
                else
                    m->inf_mismatch++;
                if (isfinite(g) && m->finite_bad++ == 0)
                    m->at_finite_bad = i;
            }
            continue;
        }
        if (cls == EC_GOT_NONFINITE) {
            if (isnan(g))
                m->nan_mismatch++;
            else
                m->inf_mismatch++;
            if (m->nonfinite_bad++ == 0)
                m->at_nonfinite_bad = i;
            continue;
        }
        if (!isfinite(x)) /* exact Inf rounded to a finite max (saturating) */
            x = r;
        /* Both finite: the error metrics. */
        if (g == 0 && r == 0 && signbit(g) != signbit(r))
            m->signed_zero_mismatch++;
        else if (g == r)
            m->n_exact_rounded++;
        e = qf_metrics_elem(in->out, g, x, bnd);
        if (elems)
            elems[i] = e;
        nc++;
        set_max(fabs(e.ulp), i, &m->max_ulp, &m->at_ulp);
        if (x != 0) {
            set_max(fabs(e.ulp), i, &m->max_ulp_nonzero, &m->at_ulp_nonzero);
        } else { /* an exact zero: its error is |g|, in value */
            m->n_zero_checked++;
            m->n_zero_inexact += g != 0;
            set_max(e.abs, i, &m->max_abs_zero, &m->at_abs_zero);
        }
        set_max(e.abs, i, &m->max_abs, &m->at_abs);
        set_max(e.rel, i, &m->max_rel, &m->at_rel);
        /* An infinite bound checks nothing (a derivation that gives up):
         * such an element is not counted as checked against a bound. */
        if (isfinite(bnd)) {
            nb++;
            set_max(e.util, i, &m->max_util, &m->at_util);
            if (e.abs > bnd) {
                m->n_violations++;
                if (e.util > best_viol) {
                    double w = qf_format_ulp(in->out, x);
                    best_viol = e.util;
                    m->at_violation = i;
                    m->viol_err = e.abs;
                    m->viol_bound = bnd;
                    m->viol_err_ulp = fabs(e.ulp);
                    m->viol_bound_ulp = bnd / w;
                }
            }
        }
        qf_dot_acc_add_product(&S->x2, x, x);
        qf_dot_acc_add_product(&S->y2, g, g);
        qf_dot_acc_add_product(&S->xy, x, g);
        qf_dot_acc_add_product(&S->err2, g, g);
        qf_dot_acc_add_product(&S->err2, x, x);
        qf_dot_acc_add_product(&S->err2, -2 * x, g);
        qf_dot_acc_add_d(&S->bias, g);
        qf_dot_acc_sub_d(&S->bias, x);
        qf_dot_acc_add_d(&S->bias_ulp, e.ulp);
    }
    m->n_checked = nc;
    m->n_bound = nb;
    m->frac_exact_rounded = nc ? (double)m->n_exact_rounded / (double)nc : NAN;
    m->frac_zero_ref = n ? (double)m->n_zero_ref / (double)n : NAN;
    hist = malloc(QF_METRICS_NPCT * NB * sizeof *hist);
    if (!hist || pct_kind(in, 0, nc, hist, m->pct_ulp) || pct_kind(in, 1, nc, hist, m->pct_abs) ||
        pct_kind(in, 2, nc, hist, m->pct_rel) || pct_kind(in, 3, nb, hist, m->pct_util)) {
        free(S), free(hist);
        return QF_ENOMEM;
    }
    if (nc) {
        double x2 = qf_dot_acc_get_d(&S->x2, QF_ROUND_RNE), y2 = qf_dot_acc_get_d(&S->y2, QF_ROUND_RNE);
        double xy = qf_dot_acc_get_d(&S->xy, QF_ROUND_RNE), e2 = qf_dot_acc_get_d(&S->err2, QF_ROUND_RNE);
        double dn = (double)nc;
        m->bias = qf_dot_acc_get_d(&S->bias, QF_ROUND_RNE) / dn;
        m->bias_ulp = qf_dot_acc_get_d(&S->bias_ulp, QF_ROUND_RNE) / dn;
        m->rms = sqrt(e2 / dn);
        m->normwise = x2 > 0 ? sqrt(e2 / x2) : (e2 > 0 ? INFINITY : 0);
        m->sqnr_db = e2 > 0 ? (x2 > 0 ? 10 * log10(x2 / e2) : -INFINITY) : INFINITY;
        if (x2 > 0 && y2 > 0)
            m->cosine = xy / (sqrt(x2) * sqrt(y2));
        else
            m->cosine = (x2 == 0 && y2 == 0) ? 1 : 0;
        m->diff_dg = (x2 + y2) > 0 ? e2 / (x2 + y2) : 0;
    } else {
        m->bias = m->bias_ulp = m->rms = m->normwise = m->sqnr_db = m->cosine = m->diff_dg = NAN;
    }
    free(S), free(hist);
    return QF_OK;
}

qf_status qf_metrics_growth(size_t n, const double *k, const double *err, double *slope, double *intercept,
                            double *r2)
{
    size_t i, m = 0;
    double sx = 0, sy = 0, mx, my, sxx = 0, sxy = 0, syy = 0, b;
    if (!k || !err || !slope)
        return QF_EINVAL;
    for (i = 0; i < n; i++)
        if (k[i] > 0 && err[i] > 0 && isfinite(k[i]) && isfinite(err[i])) {
            sx += log(k[i]);
            sy += log(err[i]);
            m++;
        }
    if (m < 2)
        return QF_EINVAL;
    mx = sx / (double)m;
    my = sy / (double)m;
    /* centred sums: no cancellation in the slope */
    for (i = 0; i < n; i++)
        if (k[i] > 0 && err[i] > 0 && isfinite(k[i]) && isfinite(err[i])) {
            double dx = log(k[i]) - mx, dy = log(err[i]) - my;
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
    if (!(sxx > 0))
        return QF_EINVAL;
    b = sxy / sxx;
    *slope = b;
    if (intercept)
        *intercept = my - b * mx;
    if (r2)
        *r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1;
    return QF_OK;
}

qf_status qf_metrics_bitwise(const void *a, const void *b, size_t n, size_t elem_bytes, size_t *n_diff,
                             size_t *first)
{
    const unsigned char *p = a, *q = b;
    size_t i, d = 0, f = n;
    if ((n && (!a || !b)) || elem_bytes == 0 || !n_diff)
        return QF_EINVAL;
    for (i = 0; i < n; i++)
        if (memcmp(p + i * elem_bytes, q + i * elem_bytes, elem_bytes) != 0) {
            if (d++ == 0)
                f = i;
        }
    *n_diff = d;
    if (first)
        *first = f;
    return QF_OK;
}
