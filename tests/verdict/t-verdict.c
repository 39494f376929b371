/* t-verdict.c: qf_verdict_decide, one test per rule of docs/verdicts.md
 * "Rules" (run outcomes; the first output's conformance, trust and
 * fitness; run 2; overflow; baseline; componentwise; exact outputs; the
 * second output; no bound), the order between them, the causes, names,
 * combination across seeds and the false-failure figures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qf_metrics.h"
#include "qf_test.h"
#include "qf_verdict.h"

/* A clean metrics record: 100 elements, 0.4 ulp max, bound utilization 0.3. */
static qf_metrics clean(void)
{
    qf_metrics m;
    memset(&m, 0, sizeof m);
    m.n = m.n_checked = m.n_bound = 100;
    m.cols = 10;
    m.max_ulp = 0.4, m.max_abs = 1e-7, m.max_rel = 1e-7, m.max_util = 0.3;
    m.normwise = 1e-7, m.rms = 5e-8, m.sqnr_db = 140, m.cosine = 1;
    m.frac_zero_ref = 0.01;
    m.at_violation = m.at_nonfinite_bad = m.at_finite_bad = m.n;
    return m;
}

/* Evidence of a compared run with a bound. */
static qf_evidence checked(void)
{
    qf_evidence e = qf_evidence_default();
    e.bound = 1;
    e.det_checked = e.det_equal = 1;
    return e;
}

static qf_decision decide(const qf_evidence *e, const qf_metrics *m, const qf_policy *p)
{
    qf_decision d;
    ck_assert_int_eq(qf_verdict_decide(e, m, p, NULL, &d), QF_OK);
    fprintf(stderr, "  %-11s %-20s %s\n", qf_verdict_name(d.verdict), qf_cause_name(d.cause), d.reason);
    return d;
}

#define EXPECT(e, m, p, want_v, want_c)                                                                      \
    do {                                                                                                     \
        qf_decision d_ = decide(e, m, p);                                                                    \
        ck_assert_int_eq(d_.verdict, want_v);                                                                \
        ck_assert_int_eq(d_.cause, want_c);                                                                  \
    } while (0)

/* Rule 1: how the run ended decides, with its detail as the reason; each
 * outcome cause has one verdict, and a rule's cause is no outcome. */
START_TEST(rule1_outcomes)
{
    static const struct {
        qf_cause c;
        qf_verdict v;
    } t[] = {
        {QF_CAUSE_SKIPPED, QF_VERDICT_SKIPPED},        {QF_CAUSE_UNSUPPORTED, QF_VERDICT_UNSUPPORTED},
        {QF_CAUSE_DECLINED, QF_VERDICT_UNSUPPORTED},   {QF_CAUSE_CRASH, QF_VERDICT_CRASHED},
        {QF_CAUSE_NO_TUPLE, QF_VERDICT_UNSUPPORTED},
        {QF_CAUSE_WORKER_DIED, QF_VERDICT_CRASHED},    {QF_CAUSE_TIMEOUT, QF_VERDICT_TIMEOUT},
        {QF_CAUSE_KERNEL_ERROR, QF_VERDICT_FAILED},    {QF_CAUSE_DEVICE_LOST, QF_VERDICT_FAILED},
        {QF_CAUSE_BAD_WRITE, QF_VERDICT_FAILED},       {QF_CAUSE_HARNESS, QF_VERDICT_MISTRUSTED},
    };
    qf_policy p = qf_policy_default(0);
    qf_evidence e = qf_evidence_default();
    qf_metrics m = clean();
    qf_decision d;
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        e.outcome = t[i].c;
        ck_assert_int_eq(qf_verdict_decide(&e, NULL, &p, "crashed: signal 11 (SIGSEGV)", &d), QF_OK);
        ck_assert_int_eq(d.verdict, t[i].v);
        ck_assert_int_eq(d.cause, t[i].c);
        ck_assert_str_eq(d.reason, "crashed: signal 11 (SIGSEGV)");
        ck_assert_int_eq(qf_cause_outcome_verdict(t[i].c), t[i].v);
        /* the outcome stands whatever the metrics say */
        m.n_violations = 5;
        ck_assert_int_eq(qf_verdict_decide(&e, &m, &p, NULL, &d), QF_OK);
        ck_assert_int_eq(d.verdict, t[i].v);
        ck_assert_str_eq(d.reason, qf_cause_name(t[i].c));
    }
    /* a rule's cause is not a run outcome; no metrics, no policy: errors */
    e.outcome = QF_CAUSE_BOUND;
    ck_assert_int_eq(qf_verdict_decide(&e, &m, &p, NULL, &d), QF_EINVAL);
    ck_assert_int_eq(qf_cause_outcome_verdict(QF_CAUSE_CONFORMS), QF_VERDICT_COUNT);
    e.outcome = QF_CAUSE_NONE;
    ck_assert_int_eq(qf_verdict_decide(&e, NULL, &p, NULL, &d), QF_EINVAL);
    ck_assert_int_eq(qf_verdict_decide(&e, &m, NULL, NULL, &d), QF_EINVAL);
}
END_TEST

/* Rule 2: conformance of the first output, in its order; certain evidence
 * stands on weak data. */
START_TEST(rule2_conformance)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    m.nonfinite_bad = 2, m.nan_mismatch = 2, m.at_nonfinite_bad = 37;
    d = decide(&e, &m, &p);
    ck_assert(d.cause == QF_CAUSE_NONFINITE && strstr(d.reason, "(3, 7)") && strstr(d.reason, "NaN or Inf"));
    m = clean(), m.finite_bad = 1, m.nan_mismatch = 1, m.at_finite_bad = 5;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_FINITE);
    m = clean(), m.inf_mismatch = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_SPECIALS);
    m = clean(), m.n_violations = 4, m.at_violation = 317, m.cols = 100;
    m.viol_err_ulp = 2.5, m.viol_bound_ulp = 1.8, m.viol_err = 2.5e-3, m.viol_bound = 1.8e-3;
    d = decide(&e, &m, &p);
    ck_assert(d.cause == QF_CAUSE_BOUND && strstr(d.reason, "element (3, 17): error 2.5 ulp > bound 1.8 ulp"));
    m.frac_zero_ref = 0.95; /* on degenerate data too */
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_BOUND);
    /* signed zeros: counted only, unless the policy says so */
    m = clean(), m.signed_zero_mismatch = 3;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    p.signed_zero_fails = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_SIGNED_ZERO);
    p = qf_policy_default(0);
    /* determinism claimed and not observed; not claimed: allowed */
    m = clean();
    e.det_claimed = 1, e.det_equal = 0, e.det_first_diff = 12;
    d = decide(&e, &m, &p);
    ck_assert(d.cause == QF_CAUSE_NONDETERMINISM && strstr(d.reason, "element 12"));
    e.det_claimed = 0;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    /* across thread counts (the two runs then used different counts) */
    e.det_threads_claimed = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_THREADS);
    e.det_equal = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
}
END_TEST

/* Rule 3: trust of the first output. */
START_TEST(rule3_trust)
{
    qf_policy p = qf_policy_default(0), pm = qf_policy_default(1);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    ck_assert(p.max_zero_frac == 0.30 && pm.max_zero_frac == 0.90 && p.max_undecided_frac == 0.01);
    m.frac_zero_ref = 0.5; /* oneDNN: more than 30% zeros (90% for matmul) */
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE);
    EXPECT(&e, &m, &pm, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    /* zeros the op computes exactly are not counted: 50 zeros, 40 exact */
    m.n_zero_ref = 50, e.n_zero_exact = 40;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    e.n_zero_exact = 10; /* 40% left */
    d = decide(&e, &m, &p);
    ck_assert_msg(d.cause == QF_CAUSE_DEGENERATE &&
                      strstr(d.reason, "40% of the reference is zero (> 30%), not counting 10 exact zero(s)"),
                  "%s", d.reason);
    e.n_zero_exact = 100; /* all of them exact: a result, not weak data (log_softmax of one column) */
    m.n_zero_ref = 100, m.frac_zero_ref = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    e.n_zero_exact = 0;
    m = clean(), m.n_undecided = 2, m.n_checked = 98;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_UNDECIDED);
    m.n_undecided = 1, m.n_checked = 99;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    m = clean(), m.n_checked = 0, m.n_undefined = 100, m.n_bound = 0;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_NOTHING_CHECKED);
    /* empty output: nothing to check, conformant (no bound needed) */
    m = clean(), m.n = m.n_checked = m.n_bound = 0;
    e.bound = 0;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_EMPTY);
}
END_TEST

/* Rule 4: fitness of the first output; a baseline rule without a result. */
START_TEST(rule4_fitness)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    p.max_ulp = 0.5;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    m.max_ulp = 1.5, m.at_ulp = 21;
    d = decide(&e, &m, &p);
    ck_assert(d.cause == QF_CAUSE_POLICY_ULP && strstr(d.reason, "(2, 1)") && strstr(d.reason, "max_ulp"));
    m = clean(), p = qf_policy_default(0), p.max_normwise = 1e-8;
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_NORMWISE);
    p = qf_policy_default(0), p.min_sqnr_db = 150;
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_SQNR);
    p.min_sqnr_db = 25; /* torchao's fp8 cast threshold */
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    /* FlashAttention's rule: max error <= 2x the baseline's */
    p = qf_policy_default(0), p.baseline_factor = 2;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_BASELINE_MISSING);
    e.baseline = 1, e.baseline_max_abs = 0.4e-7, e.baseline_rms = 1e-8;
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_BASELINE);
    e.baseline_max_abs = 0.5e-7;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    e.baseline_max_abs = NAN;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_BASELINE_UNDEFINED);
    /* dynamo's rule: RMSE <= m * baseline RMSE + tol */
    p.baseline_metric = QF_BASELINE_RMS, p.baseline_factor = 3, p.baseline_tol = 0;
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_BASELINE);
    p.baseline_tol = 3e-8;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    /* unfit and weak data: MISTRUSTED wins over MARGINAL */
    m.frac_zero_ref = 0.6, p.max_ulp = 0.1;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE);
}
END_TEST

/* Rule 5: the runs differ: run 2 is judged on its own, the worse stands;
 * an op with an exact expectation fails on any difference; a FAILED run 1
 * stays as it is. */
START_TEST(rule5_run2)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    e.det_equal = 0, e.det_first_diff = 3;
    e.run2 = 1, e.run2_metrics = clean();
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    e.run2_metrics.n_violations = 1, e.run2_metrics.at_violation = 4;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_FAILED && d.cause == QF_CAUSE_BOUND && !strncmp(d.reason, "run 2: ", 7));
    e.run2_metrics = clean(), e.run2_metrics.frac_zero_ref = 0.9;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE);
    /* run 1 FAILED already: it stands, with its own reason */
    m.n_violations = 2;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_FAILED && strncmp(d.reason, "run 2: ", 7));
    m = clean();
    e.run2 = 0, e.exact_codes = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_RUN2_CODES);
    e.det_equal = 1; /* equal runs: nothing to judge */
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
}
END_TEST

/* Rule 6: finite outputs where the claimed accumulator may overflow make a
 * pair that would pass (or be MARGINAL) MISTRUSTED; on a FAILED pair the
 * NaN/Inf ones are a note. */
START_TEST(rule6_overflow)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    e.n_ovf = 3, e.ovf_reach = 7e4, e.acc_max = 65504;
    snprintf(e.acc_name, sizeof e.acc_name, "float16");
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_MISTRUSTED && d.cause == QF_CAUSE_OVERFLOW && strstr(d.reason, "float16"));
    p.max_ulp = 0.1;
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_OVERFLOW);
    m.n_violations = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_BOUND);
    e.n_ovf = 0, e.n_ovf_failed = 2;
    d = decide(&e, &m, &p);
    ck_assert(d.cause == QF_CAUSE_BOUND && strstr(d.reason, "2 NaN/Inf element(s)"));
}
END_TEST

/* Rule 7: a baseline that gave no result turns a pass into its verdict
 * (MISTRUSTED or UNSUPPORTED); what is worse stands. */
START_TEST(rule7_baseline_missing)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    p.baseline_factor = 2;
    e.baseline = -1, e.baseline_verdict = QF_VERDICT_UNSUPPORTED;
    snprintf(e.baseline_why, sizeof e.baseline_why, "unsupported: the baseline b declined: K");
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_UNSUPPORTED && d.cause == QF_CAUSE_BASELINE_MISSING &&
              strstr(d.reason, "declined"));
    m.n_violations = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_BOUND);
    m = clean(), p.max_ulp = 0.1; /* unfit whatever the baseline says */
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_ULP);
}
END_TEST

/* Rule 8: max_componentwise on a pair that would pass. */
START_TEST(rule8_componentwise)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    e.cw_checked = 1, e.cw_worst = 3e-6, e.cw_at = 9;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS); /* no policy: not a rule */
    p.max_componentwise = 1e-6;
    EXPECT(&e, &m, &p, QF_VERDICT_MARGINAL, QF_CAUSE_POLICY_COMPONENTWISE);
    p.max_componentwise = 1e-5;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
}
END_TEST

/* Rule 9: an exactly checked output that is wrong (MoE expert indices)
 * fails the pair, whatever the weights say. */
START_TEST(rule9_exact_output)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    m.frac_zero_ref = 0.9;
    snprintf(e.exact_fail, sizeof e.exact_fail, "token 3: expert 5 selected, the exact top-k has 6");
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_FAILED && d.cause == QF_CAUSE_EXACT_INDEX && strstr(d.reason, "expert 5"));
}
END_TEST

/* Rule 10: the second output (attention's lse), run 1 and run 2, for
 * conformance and trust under the default policy; the worse stands. */
START_TEST(rule10_second_output)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    e.out2 = 1, e.out2_metrics = clean();
    snprintf(e.out2_name, sizeof e.out2_name, "lse");
    p.max_ulp = 0.5; /* the fitness policy is the first output's: lse's 9 ulp is no rule */
    e.out2_metrics.max_ulp = 9;
    EXPECT(&e, &m, &p, QF_VERDICT_QUALIFIED, QF_CAUSE_CONFORMS);
    p = qf_policy_default(0);
    e.out2_metrics.frac_zero_ref = 0.9; /* but its trust is */
    EXPECT(&e, &m, &p, QF_VERDICT_MISTRUSTED, QF_CAUSE_DEGENERATE);
    e.out2_metrics = clean();
    e.out2_metrics.nonfinite_bad = 1;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_FAILED && d.cause == QF_CAUSE_NONFINITE && !strncmp(d.reason, "lse: ", 5));
    e.out2_metrics = clean();
    e.out2 = 2, e.out2_run2_metrics = clean(), e.out2_run2_metrics.n_violations = 1;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_FAILED && !strncmp(d.reason, "run 2: lse: ", 12));
}
END_TEST

/* Rule 11: no bound applied: never a pass (UNCHECKED), but unfitness and
 * failures still show. */
START_TEST(rule11_no_bound)
{
    qf_policy p = qf_policy_default(0);
    qf_evidence e = checked();
    qf_metrics m = clean();
    qf_decision d;
    e.bound = 0, m.n_bound = 0;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_UNCHECKED && d.cause == QF_CAUSE_NO_BOUND &&
              strstr(d.reason, "checked against nothing"));
    p.max_ulp = 0.1; /* unfit: MARGINAL, saying nothing was checked for conformance */
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_MARGINAL && d.cause == QF_CAUSE_POLICY_ULP &&
              strstr(d.reason, "; no conformance check: no bound applied"));
    p = qf_policy_default(0);
    m.nonfinite_bad = 1;
    EXPECT(&e, &m, &p, QF_VERDICT_FAILED, QF_CAUSE_NONFINITE);
    /* a bound that is infinite everywhere is none; infinite at some
     * elements: QUALIFIED, the reason says how many were not checked */
    m = clean(), e.bound = 1, m.n_bound = 0;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_UNCHECKED && strstr(d.reason, "no finite bound"));
    m.n_bound = 60;
    d = decide(&e, &m, &p);
    ck_assert(d.verdict == QF_VERDICT_QUALIFIED && strstr(d.reason, "40 of 100 checked elements had no finite bound"));
}
END_TEST

START_TEST(names_combine)
{
    qf_verdict v, all[3] = {QF_VERDICT_QUALIFIED, QF_VERDICT_MARGINAL, QF_VERDICT_QUALIFIED};
    qf_cause c;
    int i;
    for (i = 0; i < QF_VERDICT_COUNT; i++) {
        ck_assert_int_eq(qf_verdict_lookup(qf_verdict_name((qf_verdict)i), &v), QF_OK);
        ck_assert_int_eq(v, i);
    }
    for (i = 0; i < QF_CAUSE_COUNT; i++) {
        ck_assert_ptr_nonnull(qf_cause_name((qf_cause)i));
        ck_assert_int_eq(qf_cause_lookup(qf_cause_name((qf_cause)i), &c), QF_OK);
        ck_assert_int_eq(c, i);
    }
    ck_assert_int_eq(qf_cause_lookup("device lost", &c), QF_EPARSE);
    ck_assert_int_eq(qf_verdict_lookup("failed", &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_FAILED);
    ck_assert_int_eq(qf_verdict_lookup("unchecked", &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_UNCHECKED);
    ck_assert_int_eq(qf_verdict_lookup("FAIL", &v), QF_EPARSE);
    ck_assert_str_eq(qf_verdict_name(QF_VERDICT_COUNT), "UNKNOWN");
    ck_assert_int_eq(qf_verdict_combine(all, 3, &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_MARGINAL);
    all[1] = QF_VERDICT_UNCHECKED; /* one unchecked seed: the case is not a pass */
    ck_assert_int_eq(qf_verdict_combine(all, 3, &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_UNCHECKED);
    all[2] = QF_VERDICT_FAILED;
    ck_assert_int_eq(qf_verdict_combine(all, 3, &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_FAILED);
    ck_assert_int_eq(qf_verdict_combine(all, 0, &v), QF_EINVAL);
    ck_assert(qf_verdict_severity(QF_VERDICT_FAILED) > qf_verdict_severity(QF_VERDICT_CRASHED));
    ck_assert(qf_verdict_severity(QF_VERDICT_MISTRUSTED) > qf_verdict_severity(QF_VERDICT_MARGINAL));
    ck_assert(qf_verdict_severity(QF_VERDICT_UNCHECKED) > qf_verdict_severity(QF_VERDICT_QUALIFIED));
    /* false failures: 1 - (1 - a)^S <= S a */
    ck_assert(fabs(qf_policy_false_failure(0.01, 3) - (1 - 0.99 * 0.99 * 0.99)) < 1e-15);
    ck_assert(qf_policy_false_failure(1e-6, 5) <= 5e-6);
    ck_assert(isnan(qf_policy_false_failure(2, 5)));
    /* lambda: 2 exp(-lambda^2 (1-u)^2 / 2) * seeds * chains == p_ff */
    {
        double u = 0x1p-24, l = qf_policy_lambda(1e-3, 3, 1000000, u);
        double pf = 2 * exp(-l * l * (1 - u) * (1 - u) / 2) * 3 * 1e6;
        ck_assert(fabs(pf - 1e-3) < 1e-9);
        ck_assert(isnan(qf_policy_lambda(0, 3, 10, u)));
    }
}
END_TEST

int main(void)
{
    return qf_test_main("verdict/verdict", "verdict", 0, NULL, NULL,
                        QF_TESTS(rule1_outcomes, rule2_conformance, rule3_trust, rule4_fitness, rule5_run2,
                                 rule6_overflow, rule7_baseline_missing, rule8_componentwise, rule9_exact_output,
                                 rule10_second_output, rule11_no_bound, names_combine));
}
