/* verdict.c: conformance, trust and fitness -> one verdict with a reason
 * (qf_verdict.h, docs/verdicts.md). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "_status.h"
#include "qf_verdict.h"

static const char *const names[QF_VERDICT_COUNT] = {
    "QUALIFIED", "MARGINAL", "FAILED", "CRASHED", "TIMEOUT", "MISTRUSTED", "UNSUPPORTED", "SKIPPED",
};

const char *qf_verdict_name(qf_verdict v)
{
    return (int)v >= 0 && v < QF_VERDICT_COUNT ? names[v] : "UNKNOWN";
}

qf_status qf_verdict_lookup(const char *name, qf_verdict *out)
{
    int v;
    if (!name || !out)
        return QF_EINVAL;
    for (v = 0; v < QF_VERDICT_COUNT; v++) {
        const char *a = names[v], *b = name;
        while (*a && *b && toupper((unsigned char)*b) == *a)
            a++, b++;
        if (!*a && !*b) {
            *out = (qf_verdict)v;
            return QF_OK;
        }
    }
    return QF_EPARSE;
}

qf_policy qf_policy_default(int is_matmul)
{
    qf_policy p;
    p.max_ulp = NAN;
    p.max_normwise = NAN;
    p.min_sqnr_db = NAN;
    p.baseline_factor = NAN;
    p.baseline_metric = QF_BASELINE_MAX_ABS;
    p.baseline_tol = 0;
    /* 1% undecided: MPFR's tests treat too many undecided cases as a
     * failure of the test itself (docs/style.md#undecided-references); the figure is our choice. */
    p.max_undecided_frac = 0.01;
    /* oneDNN benchdnn: MISTRUSTED over 30% zeros, 90% for matmul. */
    p.max_zero_frac = is_matmul ? 0.90 : 0.30;
    p.signed_zero_fails = 0;
    return p;
}

qf_verdict_input qf_verdict_input_default(void)
{
    qf_verdict_input r;
    memset(&r, 0, sizeof r);
    r.run = QF_VERDICT_RUN_OK;
    return r;
}

/* The compiler checks the reason formats against their arguments. */
#ifdef __GNUC__
static qf_status say(qf_verdict *v, qf_verdict what, char *reason, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#endif

static qf_status say(qf_verdict *v, qf_verdict what, char *reason, size_t size, const char *fmt, ...)
{
    va_list ap;
    *v = what;
    va_start(ap, fmt);
    _qf_vfail(reason, size, QF_OK, NULL, fmt, ap);
    va_end(ap);
    return QF_OK;
}

static int set(double x)
{
    return !isnan(x);
}

qf_status qf_verdict_decide(const qf_verdict_input *r, const qf_policy *p, qf_verdict *v, char *reason,
                            size_t size)
{
    const qf_metrics *m;
    char at[64];
    const char *why;
    if (!r || !p || !v)
        return QF_EINVAL;
    why = r->run_reason ? r->run_reason : "no reason given";
    switch (r->run) {
    case QF_VERDICT_RUN_OK: break;
    case QF_VERDICT_RUN_CRASHED: return say(v, QF_VERDICT_CRASHED, reason, size, "crashed: %s", why);
    case QF_VERDICT_RUN_TIMEOUT: return say(v, QF_VERDICT_TIMEOUT, reason, size, "timed out: %s", why);
    case QF_VERDICT_RUN_UNSUPPORTED:
        return say(v, QF_VERDICT_UNSUPPORTED, reason, size, "unsupported: %s", why);
    case QF_VERDICT_RUN_SKIPPED: return say(v, QF_VERDICT_SKIPPED, reason, size, "skipped: %s", why);
    default: return QF_EINVAL;
    }
    m = r->metrics;
    if (!m)
        return QF_EINVAL;

    /* ---- Conformance: certain evidence, so it comes first. */
    if (m->nonfinite_bad) {
        qf_metrics_where(m, m->at_nonfinite_bad, at, sizeof at);
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "element %s: NaN or Inf where the reference is finite (%zu element(s))", at,
                   m->nonfinite_bad);
    }
    if (m->finite_bad) {
        qf_metrics_where(m, m->at_finite_bad, at, sizeof at);
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "element %s: finite where the reference is NaN or Inf (%zu element(s))", at,
                   m->finite_bad);
    }
    if (m->nan_mismatch || m->inf_mismatch)
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "special values differ: %zu NaN and %zu Inf mismatches", m->nan_mismatch, m->inf_mismatch);
    if (m->n_violations) {
        qf_metrics_where(m, m->at_violation, at, sizeof at);
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "element %s: error %.4g ulp > bound %.4g ulp (abs %.6g > %.6g); %zu of %zu elements "
                   "outside the bound derived from the claim",
                   at, m->viol_err_ulp, m->viol_bound_ulp, m->viol_err, m->viol_bound, m->n_violations,
                   m->n_bound);
    }
    if (p->signed_zero_fails && m->signed_zero_mismatch)
        return say(v, QF_VERDICT_FAILED, reason, size, "%zu signed-zero mismatches", m->signed_zero_mismatch);
    if (r->det_claimed && r->det_checked && !r->det_equal)
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "claims bitwise determinism, but two runs differ (first at element %zu)",
                   r->det_first_diff);
    if (r->det_threads_claimed && r->det_threads_checked && !r->det_threads_equal)
        return say(v, QF_VERDICT_FAILED, reason, size,
                   "claims determinism across thread counts, but the bits differ (first at element %zu)",
                   r->det_first_diff);

    /* ---- Trust. */
    if (m->n == 0)
        return say(v, QF_VERDICT_QUALIFIED, reason, size, "empty output: nothing to check");
    if ((double)m->n_undecided > p->max_undecided_frac * (double)m->n)
        return say(v, QF_VERDICT_MISTRUSTED, reason, size,
                   "reference undecided for %zu of %zu elements (%.3g%% > %.3g%%)", m->n_undecided, m->n,
                   100.0 * (double)m->n_undecided / (double)m->n, 100 * p->max_undecided_frac);
    if (r->n_zero_exact) {
        /* Only the zeros no exact step of the op explains are weak evidence. */
        size_t z = m->n_zero_ref - (r->n_zero_exact < m->n_zero_ref ? r->n_zero_exact : m->n_zero_ref);
        double frac = (double)z / (double)m->n;
        if (frac > p->max_zero_frac)
            return say(v, QF_VERDICT_MISTRUSTED, reason, size,
                       "degenerate data: %.3g%% of the reference is zero (> %.3g%%), not counting %zu exact "
                       "zero(s) the op computes from nonzero inputs",
                       100 * frac, 100 * p->max_zero_frac, r->n_zero_exact);
    } else if (m->frac_zero_ref > p->max_zero_frac) {
        return say(v, QF_VERDICT_MISTRUSTED, reason, size,
                   "degenerate data: %.3g%% of the reference is zero (> %.3g%%)", 100 * m->frac_zero_ref,
                   100 * p->max_zero_frac);
    }
    if (m->n_checked == 0)
        return say(v, QF_VERDICT_MISTRUSTED, reason, size, "no element could be checked (%zu undefined)",
                   m->n_undefined);

    /* ---- Fitness. */
    if (set(p->max_ulp) && !(m->max_ulp <= p->max_ulp)) {
        qf_metrics_where(m, m->at_ulp, at, sizeof at);
        return say(v, QF_VERDICT_MARGINAL, reason, size, "element %s: error %.4g ulp > policy max_ulp %.4g",
                   at, m->max_ulp, p->max_ulp);
    }
    if (set(p->max_normwise) && !(m->normwise <= p->max_normwise))
        return say(v, QF_VERDICT_MARGINAL, reason, size, "normwise error %.4g > policy max_normwise %.4g",
                   m->normwise, p->max_normwise);
    if (set(p->min_sqnr_db) && !(m->sqnr_db >= p->min_sqnr_db))
        return say(v, QF_VERDICT_MARGINAL, reason, size, "SQNR %.4g dB < policy min_sqnr_db %.4g", m->sqnr_db,
                   p->min_sqnr_db);
    if (set(p->baseline_factor)) {
        double mine, base, lim;
        const char *what = p->baseline_metric == QF_BASELINE_RMS ? "RMS error" : "max abs error";
        if (!r->baseline)
            return say(v, QF_VERDICT_MISTRUSTED, reason, size,
                       "policy compares with a baseline kernel, but no baseline result was given");
        mine = p->baseline_metric == QF_BASELINE_RMS ? m->rms : m->max_abs;
        base = p->baseline_metric == QF_BASELINE_RMS ? r->baseline->rms : r->baseline->max_abs;
        if (isnan(base))
            return say(v, QF_VERDICT_MISTRUSTED, reason, size, "the baseline's %s is undefined", what);
        lim = p->baseline_factor * base + p->baseline_tol;
        if (!(mine <= lim))
            return say(v, QF_VERDICT_MARGINAL, reason, size, "%s %.6g > %.4g x baseline %.6g + %.4g", what,
                       mine, p->baseline_factor, base, p->baseline_tol);
    }
    if (m->n_bound)
        return say(v, QF_VERDICT_QUALIFIED, reason, size,
                   "max error %.4g ulp, max bound utilization %.3g, normwise %.3g, SQNR %.4g dB", m->max_ulp,
                   m->max_util, m->normwise, m->sqnr_db);
    return say(v, QF_VERDICT_QUALIFIED, reason, size,
               "max error %.4g ulp, normwise %.3g, SQNR %.4g dB (no bound)", m->max_ulp, m->normwise,
               m->sqnr_db);
}

int qf_verdict_severity(qf_verdict v)
{
    static const int sev[QF_VERDICT_COUNT] = {
        [QF_VERDICT_QUALIFIED] = 0, [QF_VERDICT_SKIPPED] = 1,    [QF_VERDICT_UNSUPPORTED] = 2,
        [QF_VERDICT_MARGINAL] = 3,  [QF_VERDICT_MISTRUSTED] = 4, [QF_VERDICT_TIMEOUT] = 5,
        [QF_VERDICT_CRASHED] = 6,   [QF_VERDICT_FAILED] = 7,
    };
    return (int)v >= 0 && v < QF_VERDICT_COUNT ? sev[v] : 8;
}

qf_status qf_verdict_combine(const qf_verdict *v, size_t n, qf_verdict *out)
{
    size_t i;
    qf_verdict w;
    if (!v || !out || n == 0)
        return QF_EINVAL;
    w = v[0];
    for (i = 1; i < n; i++)
        if (qf_verdict_severity(v[i]) > qf_verdict_severity(w))
            w = v[i];
    *out = w;
    return QF_OK;
}

double qf_policy_false_failure(double alpha, size_t seeds)
{
    if (!(alpha >= 0 && alpha <= 1))
        return NAN;
    return -expm1((double)seeds * log1p(-alpha));
}

double qf_policy_lambda(double p_ff, size_t seeds, size_t chains, double u)
{
    double trials = (double)(seeds ? seeds : 1) * (double)(chains ? chains : 1);
    if (!(p_ff > 0 && p_ff < 1) || !(u >= 0 && u < 1))
        return NAN;
    /* 2 exp(-lambda^2 (1-u)^2 / 2) <= p_ff / trials */
    return sqrt(2 * log(2 * trials / p_ff)) / (1 - u);
}
