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
    "QUALIFIED", "MARGINAL", "FAILED", "CRASHED", "TIMEOUT", "MISTRUSTED", "UNSUPPORTED", "SKIPPED", "UNCHECKED",
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
    p.max_componentwise = NAN;
    return p;
}

/* Cause names and the verdict of each run outcome: one table. */
static const struct {
    const char *name;
    qf_verdict outcome; /* the verdict of a run outcome; QF_VERDICT_COUNT: a rule's cause */
} causes[QF_CAUSE_COUNT] = {
    [QF_CAUSE_NONE] = {"none", QF_VERDICT_COUNT},
    [QF_CAUSE_SKIPPED] = {"skipped", QF_VERDICT_SKIPPED},
    [QF_CAUSE_UNSUPPORTED] = {"unsupported", QF_VERDICT_UNSUPPORTED},
    [QF_CAUSE_DECLINED] = {"declined", QF_VERDICT_UNSUPPORTED},
    [QF_CAUSE_NO_TUPLE] = {"no_tuple", QF_VERDICT_UNSUPPORTED},
    [QF_CAUSE_CRASH] = {"crash", QF_VERDICT_CRASHED},
    [QF_CAUSE_WORKER_DIED] = {"worker_died", QF_VERDICT_CRASHED},
    [QF_CAUSE_TIMEOUT] = {"timeout", QF_VERDICT_TIMEOUT},
    [QF_CAUSE_KERNEL_ERROR] = {"kernel_error", QF_VERDICT_FAILED},
    [QF_CAUSE_DEVICE_LOST] = {"device_lost", QF_VERDICT_FAILED},
    [QF_CAUSE_BAD_WRITE] = {"bad_write", QF_VERDICT_FAILED},
    [QF_CAUSE_HARNESS] = {"harness", QF_VERDICT_MISTRUSTED},
    [QF_CAUSE_NONFINITE] = {"nonfinite", QF_VERDICT_COUNT},
    [QF_CAUSE_FINITE] = {"finite", QF_VERDICT_COUNT},
    [QF_CAUSE_SPECIALS] = {"specials", QF_VERDICT_COUNT},
    [QF_CAUSE_BOUND] = {"bound", QF_VERDICT_COUNT},
    [QF_CAUSE_SIGNED_ZERO] = {"signed_zero", QF_VERDICT_COUNT},
    [QF_CAUSE_NONDETERMINISM] = {"nondeterminism", QF_VERDICT_COUNT},
    [QF_CAUSE_THREADS] = {"threads", QF_VERDICT_COUNT},
    [QF_CAUSE_RUN2_CODES] = {"run2_codes", QF_VERDICT_COUNT},
    [QF_CAUSE_EXACT_INDEX] = {"exact_index", QF_VERDICT_COUNT},
    [QF_CAUSE_UNDECIDED] = {"undecided", QF_VERDICT_COUNT},
    [QF_CAUSE_DEGENERATE] = {"degenerate", QF_VERDICT_COUNT},
    [QF_CAUSE_NOTHING_CHECKED] = {"nothing_checked", QF_VERDICT_COUNT},
    [QF_CAUSE_OVERFLOW] = {"overflow", QF_VERDICT_COUNT},
    [QF_CAUSE_BASELINE_MISSING] = {"baseline_missing", QF_VERDICT_COUNT},
    [QF_CAUSE_BASELINE_UNDEFINED] = {"baseline_undefined", QF_VERDICT_COUNT},
    [QF_CAUSE_POLICY_ULP] = {"policy_ulp", QF_VERDICT_COUNT},
    [QF_CAUSE_POLICY_NORMWISE] = {"policy_normwise", QF_VERDICT_COUNT},
    [QF_CAUSE_POLICY_SQNR] = {"policy_sqnr", QF_VERDICT_COUNT},
    [QF_CAUSE_POLICY_BASELINE] = {"policy_baseline", QF_VERDICT_COUNT},
    [QF_CAUSE_POLICY_COMPONENTWISE] = {"policy_componentwise", QF_VERDICT_COUNT},
    [QF_CAUSE_NO_BOUND] = {"no_bound", QF_VERDICT_COUNT},
    [QF_CAUSE_EMPTY] = {"empty", QF_VERDICT_COUNT},
    [QF_CAUSE_CONFORMS] = {"conforms", QF_VERDICT_COUNT},
};

const char *qf_cause_name(qf_cause c)
{
    return (int)c >= 0 && c < QF_CAUSE_COUNT ? causes[c].name : "unknown";
}

qf_status qf_cause_lookup(const char *name, qf_cause *out)
{
    int c;
    if (!name || !out)
        return QF_EINVAL;
    for (c = 0; c < QF_CAUSE_COUNT; c++)
        if (!strcmp(causes[c].name, name)) {
            *out = (qf_cause)c;
            return QF_OK;
        }
    return QF_EPARSE;
}

qf_verdict qf_cause_outcome_verdict(qf_cause c)
{
    return (int)c > 0 && c < QF_CAUSE_COUNT ? causes[c].outcome : QF_VERDICT_COUNT;
}

qf_evidence qf_evidence_default(void)
{
    qf_evidence e;
    memset(&e, 0, sizeof e);
    e.outcome = QF_CAUSE_NONE;
    e.ovf_reach = e.acc_max = NAN;
    e.baseline_max_abs = e.baseline_rms = NAN;
    e.baseline_verdict = QF_VERDICT_MISTRUSTED;
    e.cw_worst = NAN;
    return e;
}

/* The compiler checks the reason formats against their arguments. */
#ifdef __GNUC__
static void say(qf_decision *d, qf_verdict what, qf_cause why, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#endif

static void say(qf_decision *d, qf_verdict what, qf_cause why, const char *fmt, ...)
{
    va_list ap;
    d->verdict = what;
    d->cause = why;
    va_start(ap, fmt);
    _qf_vfail(d->reason, sizeof d->reason, QF_OK, NULL, fmt, ap);
    va_end(ap);
}

/* Append to the reason (a note that changes no verdict). */
#ifdef __GNUC__
static void note(qf_decision *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif

static void note(qf_decision *d, const char *fmt, ...)
{
    va_list ap;
    size_t len = strlen(d->reason);
    va_start(ap, fmt);
    vsnprintf(d->reason + len, sizeof d->reason - len, fmt, ap);
    va_end(ap);
}

static int set(double x)
{
    return !isnan(x);
}

/* What one output's comparison says (rules 2-4 of docs/verdicts.md):
 * conformance, then trust, then fitness, then QUALIFIED.  baseline: its
 * errors or NULL (the rule then says the comparison is doubtful). */
typedef struct output_ev {
    const qf_metrics *m;
    int det_claimed, det_checked, det_equal;
    int det_threads_claimed;
    size_t det_first_diff, n_zero_exact;
    const double *baseline; /* [max_abs, rms] or NULL */
} output_ev;

static void decide_conformance(const output_ev *o, const qf_policy *p, qf_decision *d)
{
    const qf_metrics *m = o->m;
    char at[64];
    if (m->nonfinite_bad) {
        qf_metrics_where(m, m->at_nonfinite_bad, at, sizeof at);
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_NONFINITE,
                   "element %s: NaN or Inf where the reference is finite (%zu element(s))", at, m->nonfinite_bad);
    }
    if (m->finite_bad) {
        qf_metrics_where(m, m->at_finite_bad, at, sizeof at);
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_FINITE,
                   "element %s: finite where the reference is NaN or Inf (%zu element(s))", at, m->finite_bad);
    }
    if (m->nan_mismatch || m->inf_mismatch)
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_SPECIALS, "special values differ: %zu NaN and %zu Inf mismatches",
                   m->nan_mismatch, m->inf_mismatch);
    if (m->n_violations) {
        qf_metrics_where(m, m->at_violation, at, sizeof at);
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_BOUND,
                   "element %s: error %.4g ulp > bound %.4g ulp (abs %.6g > %.6g); %zu of %zu elements "
                   "outside the bound derived from the claim",
                   at, m->viol_err_ulp, m->viol_bound_ulp, m->viol_err, m->viol_bound, m->n_violations, m->n_bound);
    }
    if (p->signed_zero_fails && m->signed_zero_mismatch)
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_SIGNED_ZERO, "%zu signed-zero mismatches", m->signed_zero_mismatch);
    /* The two runs used the case's thread count and one more when the
     * kernel claims the same bits across thread counts: their comparison
     * is then the thread-count check, else the plain determinism check. */
    if (o->det_claimed && !o->det_threads_claimed && o->det_checked && !o->det_equal)
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_NONDETERMINISM,
                   "claims bitwise determinism, but two runs differ (first at element %zu)", o->det_first_diff);
    if (o->det_threads_claimed && o->det_checked && !o->det_equal)
        return say(d, QF_VERDICT_FAILED, QF_CAUSE_THREADS,
                   "claims determinism across thread counts, but the bits differ (first at element %zu)",
                   o->det_first_diff);
    d->verdict = QF_VERDICT_COUNT; /* conforms */
}

static void decide_trust(const output_ev *o, const qf_policy *p, qf_decision *d)
{
    const qf_metrics *m = o->m;
    d->verdict = QF_VERDICT_COUNT;
    if (m->n == 0)
        return say(d, QF_VERDICT_QUALIFIED, QF_CAUSE_EMPTY, "empty output: nothing to check");
    if ((double)m->n_undecided > p->max_undecided_frac * (double)m->n)
        return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_UNDECIDED,
                   "reference undecided for %zu of %zu elements (%.3g%% > %.3g%%)", m->n_undecided, m->n,
                   100.0 * (double)m->n_undecided / (double)m->n, 100 * p->max_undecided_frac);
    if (o->n_zero_exact) {
        /* Only the zeros no exact step of the op explains are weak evidence. */
        size_t z = m->n_zero_ref - (o->n_zero_exact < m->n_zero_ref ? o->n_zero_exact : m->n_zero_ref);
        double frac = (double)z / (double)m->n;
        if (frac > p->max_zero_frac)
            return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE,
                       "degenerate data: %.3g%% of the reference is zero (> %.3g%%), not counting %zu exact "
                       "zero(s) the op computes from nonzero inputs",
                       100 * frac, 100 * p->max_zero_frac, o->n_zero_exact);
    } else if (m->frac_zero_ref > p->max_zero_frac) {
        return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE,
                   "degenerate data: %.3g%% of the reference is zero (> %.3g%%)", 100 * m->frac_zero_ref,
                   100 * p->max_zero_frac);
    }
    if (m->n_checked == 0)
        return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_NOTHING_CHECKED, "no element could be checked (%zu undefined)",
                   m->n_undefined);
}

static void decide_fitness(const output_ev *o, const qf_policy *p, qf_decision *d)
{
    const qf_metrics *m = o->m;
    char at[64];
    d->verdict = QF_VERDICT_COUNT;
    if (set(p->max_ulp) && !(m->max_ulp <= p->max_ulp)) {
        qf_metrics_where(m, m->at_ulp, at, sizeof at);
        return say(d, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_ULP, "element %s: error %.4g ulp > policy max_ulp %.4g",
                   at, m->max_ulp, p->max_ulp);
    }
    if (set(p->max_normwise) && !(m->normwise <= p->max_normwise))
        return say(d, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_NORMWISE, "normwise error %.4g > policy max_normwise %.4g",
                   m->normwise, p->max_normwise);
    if (set(p->min_sqnr_db) && !(m->sqnr_db >= p->min_sqnr_db))
        return say(d, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_SQNR, "SQNR %.4g dB < policy min_sqnr_db %.4g", m->sqnr_db,
                   p->min_sqnr_db);
    if (set(p->baseline_factor)) {
        double mine, base, lim;
        const char *what = p->baseline_metric == QF_BASELINE_RMS ? "RMS error" : "max abs error";
        if (!o->baseline)
            return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_BASELINE_MISSING,
                       "policy compares with a baseline kernel, but no baseline result was given");
        mine = p->baseline_metric == QF_BASELINE_RMS ? m->rms : m->max_abs;
        base = o->baseline[p->baseline_metric == QF_BASELINE_RMS];
        if (isnan(base))
            return say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_BASELINE_UNDEFINED, "the baseline's %s is undefined", what);
        lim = p->baseline_factor * base + p->baseline_tol;
        if (!(mine <= lim))
            return say(d, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_BASELINE, "%s %.6g > %.4g x baseline %.6g + %.4g",
                       what, mine, p->baseline_factor, base, p->baseline_tol);
    }
}

/* The headline error in ulps: where the exact value is not 0 when exact
 * zeros were checked (the ulp of 0 is the smallest subnormal: a result of
 * 2^-20 at an exact 0 is 2^129 "ulps"; docs/verdicts.md "Exact zeros"),
 * with the exact zeros missed and their largest absolute error. */
static void ulp_text(const qf_metrics *m, char *buf, size_t size)
{
    if (m->n_zero_checked && m->n_zero_inexact)
        snprintf(buf, size, "max error %.4g ulp where the exact value is not 0 (%zu of %zu exact zeros nonzero, max abs %.4g)",
                 m->max_ulp_nonzero, m->n_zero_inexact, m->n_zero_checked, m->max_abs_zero);
    else if (m->n_zero_checked)
        snprintf(buf, size, "max error %.4g ulp", m->max_ulp_nonzero);
    else
        snprintf(buf, size, "max error %.4g ulp", m->max_ulp);
}

/* One output, every rule; the bound's absence is the caller's (UNCHECKED). */
static void decide_output(const output_ev *o, const qf_policy *p, qf_decision *d)
{
    const qf_metrics *m = o->m;
    char err[160];
    decide_conformance(o, p, d);
    if (d->verdict != QF_VERDICT_COUNT)
        return;
    decide_trust(o, p, d);
    if (d->verdict != QF_VERDICT_COUNT)
        return;
    decide_fitness(o, p, d);
    if (d->verdict != QF_VERDICT_COUNT)
        return;
    ulp_text(m, err, sizeof err);
    if (m->n_bound)
        return say(d, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS, "%s, max bound utilization %.3g, normwise %.3g, SQNR %.4g dB",
                   err, m->max_util, m->normwise, m->sqnr_db);
    say(d, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS, "%s, normwise %.3g, SQNR %.4g dB (no bound)", err, m->normwise,
        m->sqnr_db);
}

/* The worse of d and o stands, o's reason prefixed. */
static void worse(qf_decision *d, const qf_decision *o, const char *prefix)
{
    if (qf_verdict_severity(o->verdict) > qf_verdict_severity(d->verdict))
        say(d, o->verdict, o->cause, "%s%.*s", prefix, (int)(sizeof d->reason - strlen(prefix) - 1), o->reason);
}

/* Rule 5: the second output (attention's lse), for conformance and trust
 * under the default policy. */
static void decide_out2(const qf_evidence *e, const qf_metrics *m, int run, qf_decision *d)
{
    qf_policy pol = qf_policy_default(0);
    output_ev o;
    qf_decision d2;
    char prefix[64];
    memset(&o, 0, sizeof o);
    o.m = m;
    decide_output(&o, &pol, &d2);
    snprintf(prefix, sizeof prefix, "%s%s: ", run ? "run 2: " : "", e->out2_name);
    worse(d, &d2, prefix);
}

qf_status qf_verdict_decide(const qf_evidence *e, const qf_metrics *m, const qf_policy *p, const char *detail,
                            qf_decision *d)
{
    output_ev o;
    qf_policy pol;
    double base[2];
    if (!e || !p || !d)
        return QF_EINVAL;
    memset(d, 0, sizeof *d);
    /* ---- 1. How the run ended: its outcome decides. */
    if (e->outcome != QF_CAUSE_NONE) {
        qf_verdict v = qf_cause_outcome_verdict(e->outcome);
        if (v == QF_VERDICT_COUNT)
            return QF_EINVAL;
        say(d, v, e->outcome, "%s", detail && *detail ? detail : qf_cause_name(e->outcome));
        return QF_OK;
    }
    if (!m)
        return QF_EINVAL;
    /* ---- 2-4. The first output: conformance, trust, fitness.  A baseline
     * that gave no result leaves its rule out here (rule 7 below). */
    pol = *p;
    if (e->baseline < 0)
        pol.baseline_factor = NAN;
    memset(&o, 0, sizeof o);
    o.m = m;
    o.det_claimed = e->det_claimed;
    o.det_threads_claimed = e->det_threads_claimed;
    o.det_checked = e->det_checked;
    o.det_equal = e->det_equal;
    o.det_first_diff = e->det_first_diff;
    o.n_zero_exact = e->n_zero_exact;
    base[0] = e->baseline_max_abs;
    base[1] = e->baseline_rms;
    o.baseline = e->baseline > 0 ? base : NULL;
    decide_output(&o, &pol, d);
    /* ---- 5. Run 2, when the runs differ: judged on its own (else a kernel
     * could compute right once and return anything the second time). */
    if (e->det_checked && !e->det_equal && d->verdict != QF_VERDICT_FAILED) {
        if (e->exact_codes) {
            say(d, QF_VERDICT_FAILED, QF_CAUSE_RUN2_CODES,
                "run 2: its codes differ from run 1's, which equal the exact expectation (first at element %zu)",
                e->det_first_diff);
        } else if (e->run2) {
            qf_decision d2;
            o.m = &e->run2_metrics;
            decide_output(&o, &pol, &d2);
            worse(d, &d2, "run 2: ");
        }
    }
    /* ---- 6. Overflow of the claimed accumulator: the exact result is
     * finite, the claim's range is not. */
    if (e->n_ovf && (d->verdict == QF_VERDICT_QUALIFIED || d->verdict == QF_VERDICT_MARGINAL ||
                     d->verdict == QF_VERDICT_MISTRUSTED))
        say(d, QF_VERDICT_MISTRUSTED, QF_CAUSE_OVERFLOW,
            "%zu element(s) finite where the rounded reference is NaN or Inf (or NaN against Inf) where the "
            "claimed %s accumulator may overflow (intermediates up to %.3g >= its max %.3g) and the exact result "
            "is finite: outside the range the claim defines",
            e->n_ovf, e->acc_name, e->ovf_reach, e->acc_max);
    if (e->n_ovf_failed && d->verdict == QF_VERDICT_FAILED)
        note(d,
             "; %zu NaN/Inf element(s) where the claimed %s accumulator may overflow (intermediates up to %.3g >= "
             "its max %.3g): inputs outside the range the claim can hold",
             e->n_ovf_failed, e->acc_name, e->ovf_reach, e->acc_max);
    /* ---- 7. A baseline that gave no result: a pair that would pass cannot,
     * its fitness against the baseline being unknown (FAILED stays). */
    if (e->baseline < 0 && set(p->baseline_factor) && d->verdict == QF_VERDICT_QUALIFIED)
        say(d, e->baseline_verdict, QF_CAUSE_BASELINE_MISSING, "%s",
            e->baseline_why[0] ? e->baseline_why : "the baseline gave no result");
    /* ---- 8. max_componentwise. */
    if (d->verdict == QF_VERDICT_QUALIFIED && set(p->max_componentwise) && e->cw_checked &&
        e->cw_worst > p->max_componentwise)
        say(d, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_COMPONENTWISE,
            "componentwise error %.4g > policy max_componentwise %.4g (checked element %zu)", e->cw_worst,
            p->max_componentwise, e->cw_at);
    /* ---- 9. An exactly checked output that is wrong (the root cause: the
     * weights of a wrong expert are wrong too). */
    if (e->exact_fail[0])
        say(d, QF_VERDICT_FAILED, QF_CAUSE_EXACT_INDEX, "%s", e->exact_fail);
    /* ---- 10. The second output, run 1 then run 2. */
    if (e->out2 >= 1)
        decide_out2(e, &e->out2_metrics, 0, d);
    if (e->out2 >= 2)
        decide_out2(e, &e->out2_run2_metrics, 1, d);
    /* ---- 11. No bound, no conformance check: never a pass.  A bound that
     * is infinite everywhere (a derivation that gives up) is none; where
     * only some elements have one, the reason says how many did not. */
    if ((!e->bound || !m->n_bound) && d->verdict == QF_VERDICT_MARGINAL)
        note(d, "; no conformance check: no %sbound applied", e->bound ? "finite " : "");
    if (e->bound && m->n_bound && m->n_checked > m->n_bound && d->verdict == QF_VERDICT_QUALIFIED)
        note(d, "; %zu of %zu checked elements had no finite bound (checked against nothing)",
             m->n_checked - m->n_bound, m->n_checked);
    if ((!e->bound || !m->n_bound) && d->verdict == QF_VERDICT_QUALIFIED && d->cause != QF_CAUSE_EMPTY) {
        char err[160];
        ulp_text(m, err, sizeof err);
        say(d, QF_VERDICT_UNCHECKED, QF_CAUSE_NO_BOUND,
            "%s: %s, normwise %.3g, SQNR %.4g dB, checked against nothing",
            e->bound ? "no finite bound (the derivation gives none for these elements)"
                     : "no bound applied (the op derives none for this case and the claim states no max_ulp)",
            err, m->normwise, m->sqnr_db);
    }
    return QF_OK;
}

int qf_verdict_severity(qf_verdict v)
{
    static const int sev[QF_VERDICT_COUNT] = {
        [QF_VERDICT_QUALIFIED] = 0,  [QF_VERDICT_UNCHECKED] = 1, [QF_VERDICT_SKIPPED] = 2,
        [QF_VERDICT_UNSUPPORTED] = 3, [QF_VERDICT_MARGINAL] = 4,  [QF_VERDICT_MISTRUSTED] = 5,
        [QF_VERDICT_TIMEOUT] = 6,    [QF_VERDICT_CRASHED] = 7,   [QF_VERDICT_FAILED] = 8,
    };
    return (int)v >= 0 && v < QF_VERDICT_COUNT ? sev[v] : 9;
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
