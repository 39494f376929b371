/* qf_metrics.h: error metrics of a candidate against an exact reference.
 *
 * Per element: signed error in ulps of the output format relative to the
 * exact value (qf_format_ulp_error: Zimmermann et al.,
 * docs/numerics.md#measuring-accuracy), absolute and relative error, and bound
 * utilization = |error| / bound (qf_bound.h).
 * Per case: maxima (with the element that reaches them), percentiles,
 * normwise relative error, bias, RMS, SQNR, cosine similarity, special-value
 * mismatches, the fraction of exactly (correctly) rounded results and the
 * fraction of zeros in the reference (for MISTRUSTED, qf_verdict.h).
 * Across a K sweep: the error growth exponent.  Bitwise determinism.
 * Definitions are in docs/verdicts.md.
 *
 * Norms and inner products are summed exactly (qf_dot_acc, refs/qf_dot.h)
 * and rounded once, so they do not depend on n or on the order.
 */
#ifndef QF_METRICS_H
#define QF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One element's errors. */
typedef struct qf_elem_err {
    double ulp;  /* (got - exact) / ulp(exact) in the output format, signed */
    double abs;  /* |got - exact| */
    double rel;  /* |got - exact| / |exact|; exact == 0: 0 if got == 0, else +Inf */
    double util; /* abs / bound; NaN when no bound; +Inf when bound == 0 < abs */
} qf_elem_err;

/* Errors of one finite element (got, exact finite); bound NaN = no bound. */
qf_elem_err qf_metrics_elem(const qf_format *out, double got, double exact, double bound);

/* Percentiles reported: p50, p90, p99, p99.9 (nearest rank). */
#define QF_METRICS_NPCT 4
extern const double qf_metrics_pct[QF_METRICS_NPCT];

/* What one case gives to the metrics. */
typedef struct qf_metrics_input {
    const qf_format *out; /* output format (ulps, rounding); required */
    size_t n;
    const double *got;     /* [n] candidate values (decoded codes), or NULL: */
    const void *got_codes; /* then the candidate's codes of out, decoded as read
                            * (no array of n values): element i is code
                            * got_idx[i], or code i when got_idx is NULL */
    const uint64_t *got_idx;
    const double *exact;   /* [n] exact reference (binary64) */
    const double *rounded; /* [n] reference correctly rounded into out, or NULL
                            * (then exact rounded RNE, not saturating) */
    const double *bound;   /* [n] conformance bound per element, or NULL */
    const uint8_t *status; /* [n] qf_ref_status per element, or NULL (all decided) */
    size_t cols;           /* row length, for (row, col) in messages; 0 = 1-D */
} qf_metrics_input;

typedef struct qf_metrics {
    size_t n;                        /* elements */
    size_t n_checked;                /* finite, decided elements entering the error metrics */
    size_t n_undecided, n_undefined; /* reference statuses (not checked) */

    /* maxima of |ulp|, abs, rel, util over the checked elements and where */
    double max_ulp, max_abs, max_rel, max_util;
    size_t at_ulp, at_abs, at_rel, at_util;
    /* The same ulp maximum over the checked elements whose exact value is
     * not zero (NaN when there is none), and the elements whose exact
     * value is zero apart: at an exact zero the ulp is the format's
     * smallest subnormal (every standard definition, docs/verdicts.md), so
     * max_ulp counts a result y there as |y| / 2^(emin - man) ulps, a
     * figure about the format's range, not the kernel's accuracy.
     * n_zero_checked: checked elements with an exact zero; n_zero_inexact:
     * those where got is not zero; max_abs_zero: the largest |got| among
     * them (their absolute error), 0 when every one was zero, NaN when
     * none was checked. */
    double max_ulp_nonzero;
    size_t at_ulp_nonzero;
    size_t n_zero_checked, n_zero_inexact;
    double max_abs_zero;
    size_t at_abs_zero;
    /* percentiles of |ulp|, abs, rel, util (qf_metrics_pct) */
    double pct_ulp[QF_METRICS_NPCT], pct_abs[QF_METRICS_NPCT], pct_rel[QF_METRICS_NPCT],
        pct_util[QF_METRICS_NPCT];

    double normwise; /* ||got - exact||_2 / ||exact||_2 (Inf if ||exact|| = 0 < ||err||) */
    double bias;     /* mean of (got - exact) */
    double bias_ulp; /* mean of the signed ulp errors */
    double rms;      /* sqrt(mean (got - exact)^2) */
    double sqnr_db;  /* 20 log10(||exact|| / ||got - exact||); +Inf when equal */
    double cosine;   /* sum(x y) / (||x|| ||y||), x = exact, y = got; 1 for two zero vectors */
    double diff_dg;  /* 1 - 2 sum(x y) / sum(x^2 + y^2) (DeepGEMM's calc_diff) */

    /* special values (against the rounded reference) */
    size_t nan_mismatch;     /* NaN on exactly one side */
    size_t inf_mismatch;     /* Inf on one side only, or of the other sign */
    size_t nonfinite_bad;    /* got NaN/Inf where the rounded reference is finite: FAILED */
    size_t at_nonfinite_bad; /* first such element */
    size_t finite_bad;       /* got finite where the reference is NaN/Inf: FAILED */
    size_t at_finite_bad;
    size_t signed_zero_mismatch;

    size_t n_exact_rounded;    /* got == correctly rounded reference (same sign of zero) */
    double frac_exact_rounded; /* over the checked elements */
    size_t n_zero_ref;         /* reference exactly zero */
    double frac_zero_ref;      /* over n */

    /* conformance */
    size_t n_bound;                      /* elements with a bound */
    size_t n_violations;                 /* abs > bound */
    size_t at_violation;                 /* the element with the largest utilization among violations */
    double viol_err, viol_bound;         /* its error and bound (abs) */
    double viol_err_ulp, viol_bound_ulp; /* the same in ulps of exact */
    size_t cols;                         /* copied from the input, for messages */
} qf_metrics;

/* Compute every metric.  elems (may be NULL): [n] per-element errors
 * (NaN for unchecked elements).  QF_EINVAL for NULL required arrays,
 * QF_ENOMEM when the percentile scratch cannot be allocated. */
qf_status qf_metrics_compute(const qf_metrics_input *in, qf_metrics *m, qf_elem_err *elems);

/* "(row, col)" or "[i]" of element i into buf. */
void qf_metrics_where(const qf_metrics *m, size_t i, char *buf, size_t size);

/* Growth exponent: least-squares slope of log(err) against log(K) over the
 * points with K > 0 and err > 0 finite; r2 = coefficient of determination.
 * About 0.5 for random-walk rounding, about 1 for a biased (truncating)
 * accumulator.  QF_EINVAL with fewer than two usable points or all K equal.
 * intercept and r2 may be NULL. */
qf_status qf_metrics_growth(size_t n, const double *k, const double *err, double *slope, double *intercept,
                            double *r2);

/* Bitwise comparison of two runs: n elements of elem_bytes each; n_diff
 * differing elements, first = the first (n when none).  first may be NULL. */
qf_status qf_metrics_bitwise(const void *a, const void *b, size_t n, size_t elem_bytes, size_t *n_diff,
                             size_t *first);

#ifdef __cplusplus
}
#endif

#endif /* QF_METRICS_H */
