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
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_metrics.h"

const double qf_metrics_pct[QF_METRICS_NPCT] = {0.50, 0.90, 0.99, 0.999};

/* qf_ref_status values (refs/qf_ref.h), not included to keep this module
 * independent of MPFR's header. */
enum { REF_UNDECIDED = 2, REF_UNDEFINED = 3 };

qf_elem_err qf_metrics_elem(const qf_format *out, double got, double exact, double bound)
{
    qf_elem_err e;
    double d = got - exact;
    e.ulp = qf_format_ulp_error(out, got, exact);
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

static void percentiles(double *v, size_t n, double *pct)
{
    size_t k;
    ptrdiff_t done = 0; /* v[0 .. done-1] hold no value above the ranks selected so far */
    if (n == 0) {
        for (k = 0; k < QF_METRICS_NPCT; k++)
            pct[k] = NAN;
        return;
    }
    for (k = 0; k < QF_METRICS_NPCT; k++) {
        /* nearest rank: the smallest value with at least p n values <= it */
        double r = ceil(qf_metrics_pct[k] * (double)n - 1e-9); /* 0.999 * 1000 is not 999 in binary */
        size_t i = r < 1 ? 0 : (size_t)r - 1;
        if (i >= n)
            i = n - 1;
        /* the ranks grow with k: each selection works past the last one */
        if ((ptrdiff_t)i >= done) {
            select_rank(v, done, (ptrdiff_t)n - 1, (ptrdiff_t)i);
            done = (ptrdiff_t)i + 1;
        }
        pct[k] = v[i];
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

/* Which errors element i contributes to the percentiles (bit 0: ulp, abs
 * and rel; bit 1: bound utilization), set by the main loop. */
enum { PCT_ERR = 1, PCT_UTIL = 2 };

/* The percentiles of one error kind (0 ulp, 1 abs, 2 rel, 3 util) over the
 * elements marked for it, recomputed as the main loop computed them: one
 * array of the values at a time instead of four side by side (32 bytes
 * per checked element, the largest part of a big case's metrics; docs/
 * runner.md "Memory"). */
static void pct_kind(const qf_metrics_input *in, const uint8_t *mark, int kind, double *v, double *pct)
{
    size_t i, j = 0;
    for (i = 0; i < in->n; i++) {
        double g = got_at(in, i), x = in->exact[i], bnd = in->bound ? in->bound[i] : NAN;
        qf_elem_err e;
        if (!(mark[i] & (kind == 3 ? PCT_UTIL : PCT_ERR)))
            continue;
        if (!isfinite(x)) /* as the main loop: an exact Inf rounded to a finite max */
            x = in->rounded ? in->rounded[i]
                            : qf_format_decode(in->out, qf_format_encode(in->out, x, QF_ROUND_RNE, 0, 0, 0));
        e = qf_metrics_elem(in->out, g, x, bnd);
        v[j++] = kind == 0 ? fabs(e.ulp) : kind == 1 ? e.abs : kind == 2 ? e.rel : e.util;
    }
    percentiles(v, j, pct);
}

qf_status qf_metrics_compute(const qf_metrics_input *in, qf_metrics *m, qf_elem_err *elems)
{
    size_t i, n, nc = 0, nb = 0;
    double *v = NULL, best_viol = -1;
    uint8_t *mark = NULL;
    sums *S;
    if (!in || !m || !in->out || (in->n && ((!in->got && !in->got_codes) || !in->exact)))
        return QF_EINVAL;
    n = in->n;
    memset(m, 0, sizeof *m);
    m->n = n;
    m->cols = in->cols;
    m->max_ulp = m->max_abs = m->max_rel = m->max_util = NAN;
    m->at_ulp = m->at_abs = m->at_rel = m->at_util = n;
    m->at_nonfinite_bad = m->at_finite_bad = m->at_violation = n;
    m->viol_err = m->viol_bound = m->viol_err_ulp = m->viol_bound_ulp = NAN;
    S = malloc(sizeof *S);
    mark = calloc(n ? n : 1, 1);
    if (!S || !mark) {
        free(S), free(mark);
        return QF_ENOMEM;
    }
    qf_dot_acc_init(&S->x2), qf_dot_acc_init(&S->y2), qf_dot_acc_init(&S->xy);
    qf_dot_acc_init(&S->err2), qf_dot_acc_init(&S->bias), qf_dot_acc_init(&S->bias_ulp);

    for (i = 0; i < n; i++) {
        double g = got_at(in, i), x = in->exact[i], r, bnd = in->bound ? in->bound[i] : NAN;
        qf_elem_err e;
        if (elems)
            elems[i].ulp = elems[i].abs = elems[i].rel = elems[i].util = NAN;
        if (in->status && in->status[i] == REF_UNDECIDED) {
            m->n_undecided++;
            continue;
        }
        if (in->status && in->status[i] == REF_UNDEFINED) {
            m->n_undefined++;
            continue;
        }
        if (x == 0)
            m->n_zero_ref++;
        r = in->rounded ? in->rounded[i]
                        : qf_format_decode(in->out, qf_format_encode(in->out, x, QF_ROUND_RNE, 0, 0, 0));
        /* Special values are judged against the correctly rounded
         * reference: an exact value past the format's range is Inf or NaN
         * there (or max when the case saturates). */
        if (isnan(r) || isnan(x)) {
            if (!isnan(g)) {
                m->nan_mismatch++;
                if (m->finite_bad++ == 0)
                    m->at_finite_bad = i;
            }
            continue;
        }
        /* An exact value past the output's range whose correctly rounded
         * value is Inf, and a finite result: a kernel may round an
         * accumulator that is within its bound of the exact value, but
         * below the overflow threshold, to max.  Judged by the bound when
         * there is one (docs/verdicts.md). */
        if (isinf(r) && !(isfinite(x) && isfinite(g) && !isnan(bnd))) {
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
        if (!isfinite(g)) {
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
        mark[i] = PCT_ERR;
        nc++;
        set_max(fabs(e.ulp), i, &m->max_ulp, &m->at_ulp);
        set_max(e.abs, i, &m->max_abs, &m->at_abs);
        set_max(e.rel, i, &m->max_rel, &m->at_rel);
        if (!isnan(bnd)) {
            mark[i] |= PCT_UTIL;
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
    v = malloc((nc ? nc : 1) * sizeof *v);
    if (!v) {
        free(S), free(mark);
        return QF_ENOMEM;
    }
    pct_kind(in, mark, 0, v, m->pct_ulp);
    pct_kind(in, mark, 1, v, m->pct_abs);
    pct_kind(in, mark, 2, v, m->pct_rel);
    pct_kind(in, mark, 3, v, m->pct_util);
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
    free(S), free(mark), free(v);
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
