/* evidence.c: a record's verdict from its evidence (qf_result_decide,
 * qf_result_outcome), the check that a stored verdict follows from it
 * (qf_result_recheck), and the evidence and policy as JSON
 * (qf_result.h, docs/verdicts.md "Evidence", docs/runner.md "Journal"). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "_evidence.h"
#include "_json.h"
#include "_status.h"
#include "qf_result.h"

#define errf(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

/* The evidence's copies of what the record states once (determinism, the
 * bound), so the record cannot say one thing and the evidence another. */
static void sync(qf_result *r)
{
    r->ev.det_checked = r->det_checked;
    r->ev.det_equal = r->det_equal;
    r->ev.det_first_diff = r->det_first_diff;
    r->ev.bound = r->bound.kind[0] != '\0';
}

static qf_status decide_into(const qf_result *r, qf_decision *d)
{
    qf_result c = *r; /* sync writes; the caller's record may be const */
    sync(&c);
    return qf_verdict_decide(&c.ev, c.has_metrics ? &c.metrics : NULL, &c.policy, c.reason, d);
}

qf_status qf_result_decide(qf_result *r)
{
    qf_decision d;
    qf_status s;
    sync(r);
    s = qf_verdict_decide(&r->ev, r->has_metrics ? &r->metrics : NULL, &r->policy, r->reason, &d);
    if (s != QF_OK)
        return s;
    r->verdict = d.verdict;
    r->cause = d.cause;
    snprintf(r->reason, sizeof r->reason, "%s", d.reason);
    return QF_OK;
}

void qf_result_outcome(qf_result *r, qf_cause cause, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->ev.outcome = cause;
    if (qf_result_decide(r) != QF_OK) { /* not an outcome cause: a caller's bug, never a pass */
        r->ev.outcome = QF_CAUSE_HARNESS;
        (void)qf_result_decide(r);
    }
}

int qf_result_recheck(const qf_result *r, char *why, size_t why_size)
{
    qf_decision d;
    if (r->ev.outcome == QF_CAUSE_COUNT) {
        errf(why, why_size, "stored %s without its evidence (a record of a qualify before journal version 2, or "
             "edited): rerun the pair", qf_verdict_name(r->verdict));
        return -1;
    }
    if (decide_into(r, &d) != QF_OK) {
        errf(why, why_size, "stored %s (%s) with incomplete evidence (%s): written by an older qualify, or edited",
             qf_verdict_name(r->verdict), qf_cause_name(r->cause),
             r->ev.outcome == QF_CAUSE_NONE ? "no metrics" : "an unknown outcome");
        return -1;
    }
    if (d.verdict == r->verdict && d.cause == r->cause)
        return 0;
    errf(why, why_size, "stored %s (%s) does not follow from its evidence, which gives %s (%s): %.200s",
         qf_verdict_name(r->verdict), qf_cause_name(r->cause), qf_verdict_name(d.verdict), qf_cause_name(d.cause),
         d.reason);
    return -1;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *jsize(size_t v)
{
    return json_integer((json_int_t)v);
}

json_t *_qf_policy_to_json(const qf_policy *p)
{
    json_t *o = json_object();
    int bad = !o;
    if (bad)
        return NULL;
    bad |= _qf_json_set_new(o, "max_ulp", _qf_json_real(p->max_ulp));
    bad |= _qf_json_set_new(o, "max_normwise", _qf_json_real(p->max_normwise));
    bad |= _qf_json_set_new(o, "min_sqnr_db", _qf_json_real(p->min_sqnr_db));
    bad |= _qf_json_set_new(o, "baseline_factor", _qf_json_real(p->baseline_factor));
    bad |= _qf_json_set_new(o, "baseline_metric",
                            json_string(p->baseline_metric == QF_BASELINE_RMS ? "rms" : "max_abs"));
    bad |= _qf_json_set_new(o, "baseline_tol", _qf_json_real(p->baseline_tol));
    bad |= _qf_json_set_new(o, "max_undecided_frac", _qf_json_real(p->max_undecided_frac));
    bad |= _qf_json_set_new(o, "max_zero_frac", _qf_json_real(p->max_zero_frac));
    bad |= _qf_json_set_new(o, "signed_zero_fails", json_boolean(p->signed_zero_fails));
    bad |= _qf_json_set_new(o, "max_componentwise", _qf_json_real(p->max_componentwise));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Members read by name: a wrong type names the member. */
static int get_real(const json_t *o, const char *key, double *dst, char *err, size_t err_size)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (_qf_json_get_real(v, dst)) {
        errf(err, err_size, "member '%s': a number expected", key);
        return -1;
    }
    return 0;
}

static int get_sz(const json_t *o, const char *key, size_t *dst, char *err, size_t err_size)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        errf(err, err_size, "member '%s': a count expected", key);
        return -1;
    }
    *dst = (size_t)json_integer_value(v);
    return 0;
}

static int get_flag(const json_t *o, const char *key, int *dst, char *err, size_t err_size)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (json_is_boolean(v))
        *dst = json_is_true(v);
    else if (json_is_integer(v))
        *dst = (int)json_integer_value(v);
    else {
        errf(err, err_size, "member '%s': a boolean expected", key);
        return -1;
    }
    return 0;
}

static int get_text(const json_t *o, const char *key, char *dst, size_t size, char *err, size_t err_size)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= size) {
        errf(err, err_size, "member '%s': a string of at most %zu bytes expected", key, size - 1);
        return -1;
    }
    snprintf(dst, size, "%s", json_string_value(v));
    return 0;
}

qf_status _qf_policy_from_json(const json_t *o, qf_policy *p, char *err, size_t err_size)
{
    const json_t *m;
    *p = qf_policy_default(0);
    if (!json_is_object(o)) {
        errf(err, err_size, "member 'policy': an object expected");
        return QF_EPARSE;
    }
    if (get_real(o, "max_ulp", &p->max_ulp, err, err_size) ||
        get_real(o, "max_normwise", &p->max_normwise, err, err_size) ||
        get_real(o, "min_sqnr_db", &p->min_sqnr_db, err, err_size) ||
        get_real(o, "baseline_factor", &p->baseline_factor, err, err_size) ||
        get_real(o, "baseline_tol", &p->baseline_tol, err, err_size) ||
        get_real(o, "max_undecided_frac", &p->max_undecided_frac, err, err_size) ||
        get_real(o, "max_zero_frac", &p->max_zero_frac, err, err_size) ||
        get_flag(o, "signed_zero_fails", &p->signed_zero_fails, err, err_size) ||
        get_real(o, "max_componentwise", &p->max_componentwise, err, err_size))
        return QF_EPARSE;
    m = json_object_get(o, "baseline_metric");
    if (m) {
        if (!json_is_string(m) ||
            (strcmp(json_string_value(m), "rms") && strcmp(json_string_value(m), "max_abs"))) {
            errf(err, err_size, "member 'baseline_metric': \"rms\" or \"max_abs\" expected");
            return QF_EPARSE;
        }
        p->baseline_metric = strcmp(json_string_value(m), "rms") ? QF_BASELINE_MAX_ABS : QF_BASELINE_RMS;
    }
    return QF_OK;
}

static json_t *metrics_or_null(const qf_metrics *m, int have)
{
    json_t *o = NULL;
    if (!have)
        return json_null();
    return qf_metrics_to_json(m, &o) == QF_OK ? o : NULL;
}

json_t *_qf_evidence_to_json(const qf_evidence *e)
{
    json_t *o = json_object(), *x;
    int bad = !o;
    if (bad)
        return NULL;
    bad |= _qf_json_set_new(o, "outcome", json_string(qf_cause_name(e->outcome)));
    bad |= _qf_json_set_new(o, "det_claimed", json_boolean(e->det_claimed));
    bad |= _qf_json_set_new(o, "det_threads_claimed", json_boolean(e->det_threads_claimed));
    bad |= _qf_json_set_new(o, "n_zero_exact", jsize(e->n_zero_exact));
    if (e->n_ovf || e->n_ovf_failed) {
        x = json_object();
        bad |= !x;
        if (x) {
            bad |= _qf_json_set_new(x, "finite", jsize(e->n_ovf));
            bad |= _qf_json_set_new(x, "nonfinite", jsize(e->n_ovf_failed));
            bad |= _qf_json_set_new(x, "reach", _qf_json_real(e->ovf_reach));
            bad |= _qf_json_set_new(x, "acc_max", _qf_json_real(e->acc_max));
            bad |= _qf_json_set_new(x, "acc", json_string(e->acc_name));
        }
        bad |= _qf_json_set_new(o, "overflow", x);
    }
    bad |= _qf_json_set_new(o, "exact_codes", json_boolean(e->exact_codes));
    bad |= _qf_json_set_new(o, "run2", metrics_or_null(&e->run2_metrics, e->run2));
    if (e->out2) {
        x = json_object();
        bad |= !x;
        if (x) {
            bad |= _qf_json_set_new(x, "name", json_string(e->out2_name));
            bad |= _qf_json_set_new(x, "run1", metrics_or_null(&e->out2_metrics, 1));
            bad |= _qf_json_set_new(x, "run2", metrics_or_null(&e->out2_run2_metrics, e->out2 >= 2));
        }
        bad |= _qf_json_set_new(o, "out2", x);
    }
    if (e->baseline > 0)
        bad |= _qf_json_set_new(o, "baseline",
                                json_pack("{s:o, s:o}", "max_abs", _qf_json_real(e->baseline_max_abs), "rms",
                                          _qf_json_real(e->baseline_rms)));
    else if (e->baseline < 0)
        bad |= _qf_json_set_new(o, "baseline",
                                json_pack("{s:s, s:s}", "verdict", qf_verdict_name(e->baseline_verdict), "why",
                                          e->baseline_why));
    if (e->cw_checked)
        bad |= _qf_json_set_new(o, "componentwise",
                                json_pack("{s:o, s:o}", "worst", _qf_json_real(e->cw_worst), "at", jsize(e->cw_at)));
    if (e->exact_fail[0])
        bad |= _qf_json_set_new(o, "exact_fail", json_string(e->exact_fail));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A member that is a qf_metrics object or null: *have 1 / 0. */
static qf_status metrics_from(const json_t *v, const char *what, qf_metrics *m, int *have, char *err,
                              size_t err_size)
{
    char sub[256];
    *have = 0;
    if (!v || json_is_null(v))
        return QF_OK;
    if (qf_metrics_from_json(v, m, sub, sizeof sub) != QF_OK) {
        errf(err, err_size, "member '%s': %s", what, sub);
        return QF_EPARSE;
    }
    *have = 1;
    return QF_OK;
}

qf_status _qf_evidence_from_json(const json_t *o, qf_evidence *e, char *err, size_t err_size)
{
    const json_t *v, *x;
    int have;
    *e = qf_evidence_default();
    if (!json_is_object(o)) {
        errf(err, err_size, "member 'evidence': an object expected");
        return QF_EPARSE;
    }
    v = json_object_get(o, "outcome");
    if (!json_is_string(v) || qf_cause_lookup(json_string_value(v), &e->outcome) != QF_OK ||
        (e->outcome != QF_CAUSE_NONE && qf_cause_outcome_verdict(e->outcome) == QF_VERDICT_COUNT)) {
        errf(err, err_size, "member 'evidence.outcome': a run outcome expected (docs/verdicts.md)");
        return QF_EPARSE;
    }
    if (get_flag(o, "det_claimed", &e->det_claimed, err, err_size) ||
        get_flag(o, "det_threads_claimed", &e->det_threads_claimed, err, err_size) ||
        get_sz(o, "n_zero_exact", &e->n_zero_exact, err, err_size) ||
        get_flag(o, "exact_codes", &e->exact_codes, err, err_size) ||
        get_text(o, "exact_fail", e->exact_fail, sizeof e->exact_fail, err, err_size))
        return QF_EPARSE;
    x = json_object_get(o, "overflow");
    if (x && (!json_is_object(x) || get_sz(x, "finite", &e->n_ovf, err, err_size) ||
              get_sz(x, "nonfinite", &e->n_ovf_failed, err, err_size) ||
              get_real(x, "reach", &e->ovf_reach, err, err_size) ||
              get_real(x, "acc_max", &e->acc_max, err, err_size) ||
              get_text(x, "acc", e->acc_name, sizeof e->acc_name, err, err_size))) {
        if (!json_is_object(x))
            errf(err, err_size, "member 'evidence.overflow': an object expected");
        return QF_EPARSE;
    }
    if (metrics_from(json_object_get(o, "run2"), "evidence.run2", &e->run2_metrics, &e->run2, err, err_size))
        return QF_EPARSE;
    x = json_object_get(o, "out2");
    if (x && !json_is_null(x)) {
        if (!json_is_object(x) || get_text(x, "name", e->out2_name, sizeof e->out2_name, err, err_size) ||
            metrics_from(json_object_get(x, "run1"), "evidence.out2.run1", &e->out2_metrics, &have, err,
                         err_size))
            return errf(err, err_size, "member 'evidence.out2': malformed"), QF_EPARSE;
        e->out2 = have;
        if (metrics_from(json_object_get(x, "run2"), "evidence.out2.run2", &e->out2_run2_metrics, &have, err,
                         err_size))
            return QF_EPARSE;
        if (have && e->out2)
            e->out2 = 2;
    }
    x = json_object_get(o, "baseline");
    if (x && !json_is_null(x)) {
        if (!json_is_object(x))
            return errf(err, err_size, "member 'evidence.baseline': an object expected"), QF_EPARSE;
        if (json_object_get(x, "verdict")) {
            v = json_object_get(x, "verdict");
            e->baseline = -1;
            if (!json_is_string(v) || qf_verdict_lookup(json_string_value(v), &e->baseline_verdict) != QF_OK ||
                get_text(x, "why", e->baseline_why, sizeof e->baseline_why, err, err_size))
                return errf(err, err_size, "member 'evidence.baseline': malformed"), QF_EPARSE;
        } else {
            e->baseline = 1;
            if (get_real(x, "max_abs", &e->baseline_max_abs, err, err_size) ||
                get_real(x, "rms", &e->baseline_rms, err, err_size))
                return QF_EPARSE;
        }
    }
    x = json_object_get(o, "componentwise");
    if (x && !json_is_null(x)) {
        e->cw_checked = 1;
        if (!json_is_object(x) || get_real(x, "worst", &e->cw_worst, err, err_size) ||
            get_sz(x, "at", &e->cw_at, err, err_size))
            return errf(err, err_size, "member 'evidence.componentwise': malformed"), QF_EPARSE;
    }
    return QF_OK;
}
