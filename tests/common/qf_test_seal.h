/* qf_test_seal.h: make a record built by hand in a test say its verdict
 * through evidence, so readers that decide again (qf_result_recheck:
 * show, diff, enable, merge, --resume) accept it.  The record's verdict
 * is what the test wants; the evidence chosen is the plainest that gives
 * it (a run outcome for CRASHED, TIMEOUT, UNSUPPORTED, SKIPPED and, without
 * metrics, FAILED and MISTRUSTED; the metric rules otherwise).  The
 * test's reason is kept. */
#ifndef QF_TEST_SEAL_H
#define QF_TEST_SEAL_H

#include <check.h>
#include <string.h>

#include "qf_result.h"

/* Clear what would decide otherwise than QUALIFIED on the metric path. */
static inline void qf_test_seal_clean(qf_result *r)
{
    qf_metrics *m = &r->metrics;
    if (!m->n)
        m->n = 1;
    m->n_checked = m->n;
    m->n_undecided = m->nonfinite_bad = m->finite_bad = m->nan_mismatch = m->inf_mismatch = 0;
    m->n_violations = m->signed_zero_mismatch = 0;
    m->frac_zero_ref = 0;
    if (!m->n_bound || m->n_bound > m->n_checked) /* every checked element bounded (finitely) */
        m->n_bound = m->n_checked;
    r->det_equal = 1;
}

static inline void qf_test_seal(qf_result *r)
{
    char why[QF_RESULT_TEXT_MAX];
    qf_verdict want = r->verdict;
    memcpy(why, r->reason, sizeof why);
    r->policy = qf_policy_default(0);
    r->ev = qf_evidence_default();
    switch (want) {
    case QF_VERDICT_CRASHED: r->ev.outcome = QF_CAUSE_CRASH; break;
    case QF_VERDICT_TIMEOUT: r->ev.outcome = QF_CAUSE_TIMEOUT; break;
    case QF_VERDICT_UNSUPPORTED: r->ev.outcome = QF_CAUSE_UNSUPPORTED; break;
    case QF_VERDICT_SKIPPED: r->ev.outcome = QF_CAUSE_SKIPPED; break;
    default:
        if (!r->has_metrics && (want == QF_VERDICT_FAILED || want == QF_VERDICT_MISTRUSTED)) {
            r->ev.outcome = want == QF_VERDICT_FAILED ? QF_CAUSE_KERNEL_ERROR : QF_CAUSE_HARNESS;
            break;
        }
        if (!r->has_metrics) {
            memset(&r->metrics, 0, sizeof r->metrics);
            r->has_metrics = 1;
        }
        if (!r->bound.kind[0])
            strcpy(r->bound.kind, "ulp");
        if (want == QF_VERDICT_UNCHECKED)
            r->bound.kind[0] = '\0';
        /* the metrics as the test wrote them, when they give its verdict */
        if (qf_result_decide(r) == QF_OK && r->verdict == want)
            break;
        qf_test_seal_clean(r);
        if (want == QF_VERDICT_MARGINAL) {
            r->policy.max_componentwise = 0;
            r->ev.cw_checked = 1;
            r->ev.cw_worst = 1;
        }
        if (want == QF_VERDICT_MISTRUSTED) {
            r->ev.n_ovf = 1;
            strcpy(r->ev.acc_name, "float32");
        }
        if (want == QF_VERDICT_FAILED)
            strcpy(r->ev.exact_fail, "sealed by the test");
        break;
    }
    ck_assert_int_eq(qf_result_decide(r), QF_OK);
    ck_assert_msg(r->verdict == want, "qf_test_seal: %s wanted, the evidence gives %s", qf_verdict_name(want),
                  qf_verdict_name(r->verdict));
    memcpy(r->reason, why, sizeof why);
}

#endif
