/* t-verdict.c: every verdict path of qf_verdict_decide, its order, the
 * reasons, names, combination across seeds and the false-failure figures. */
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

static qf_verdict decide(const qf_verdict_input *in, const qf_policy *p, char *why)
{
    qf_verdict v;
    ck_assert_int_eq(qf_verdict_decide(in, p, &v, why, 256), QF_OK);
    fprintf(stderr, "  %-11s %s\n", qf_verdict_name(v), why);
    return v;
}

START_TEST(test_run_states)
{
    qf_policy p = qf_policy_default(0);
    qf_verdict_input in = qf_verdict_input_default();
    char why[256];
    in.run = QF_VERDICT_RUN_CRASHED, in.run_reason = "signal 11 (SIGSEGV)";
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_CRASHED);
    ck_assert(strstr(why, "signal 11"));
    in.run = QF_VERDICT_RUN_TIMEOUT, in.run_reason = "30 s";
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_TIMEOUT);
    in.run = QF_VERDICT_RUN_UNSUPPORTED, in.run_reason = "no CUDA device";
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_UNSUPPORTED);
    ck_assert(strstr(why, "no CUDA device"));
    in.run = QF_VERDICT_RUN_SKIPPED, in.run_reason = NULL;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_SKIPPED);
    /* OK without metrics is a caller error, not a verdict */
    {
        qf_verdict v;
        in.run = QF_VERDICT_RUN_OK;
        ck_assert_int_eq(qf_verdict_decide(&in, &p, &v, why, sizeof why), QF_EINVAL);
        ck_assert_int_eq(qf_verdict_decide(&in, NULL, &v, why, sizeof why), QF_EINVAL);
    }
}
END_TEST

START_TEST(test_failed)
{
    qf_policy p = qf_policy_default(0);
    qf_verdict_input in = qf_verdict_input_default();
    qf_metrics m = clean();
    char why[256];
    in.metrics = &m;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    /* NaN where the reference is finite */
    m.nonfinite_bad = 2, m.nan_mismatch = 2, m.at_nonfinite_bad = 37;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    ck_assert(strstr(why, "(3, 7)") && strstr(why, "NaN or Inf"));
    /* finite where the reference is NaN */
    m = clean(), m.finite_bad = 1, m.nan_mismatch = 1, m.at_finite_bad = 5;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    /* Inf of the wrong sign */
    m = clean(), m.inf_mismatch = 1;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    /* a bound violation, with the element and both errors in ulps */
    m = clean(), m.n_violations = 4, m.at_violation = 317, m.cols = 100;
    m.viol_err_ulp = 2.5, m.viol_bound_ulp = 1.8, m.viol_err = 2.5e-3, m.viol_bound = 1.8e-3;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    ck_assert(strstr(why, "element (3, 17): error 2.5 ulp > bound 1.8 ulp"));
    /* a violation stands even on degenerate data (certain evidence first) */
    m.frac_zero_ref = 0.95;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    /* signed zeros: counted only, unless the policy says so */
    m = clean(), m.signed_zero_mismatch = 3;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    p.signed_zero_fails = 1;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    p = qf_policy_default(0);
    /* determinism claimed and not observed */
    m = clean();
    in.det_claimed = 1, in.det_checked = 1, in.det_equal = 0, in.det_first_diff = 12;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    ck_assert(strstr(why, "element 12"));
    in.det_claimed = 0; /* not claimed: differing runs are allowed */
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    in.det_threads_claimed = 1, in.det_threads_checked = 1, in.det_threads_equal = 0;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_FAILED);
    in.det_threads_equal = 1;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
}
END_TEST

START_TEST(test_mistrusted)
{
    qf_policy p = qf_policy_default(0), pm = qf_policy_default(1);
    qf_verdict_input in = qf_verdict_input_default();
    qf_metrics m = clean();
    char why[256];
    in.metrics = &m;
    ck_assert(p.max_zero_frac == 0.30 && pm.max_zero_frac == 0.90 && p.max_undecided_frac == 0.01);
    /* oneDNN: more than 30% zeros (90% for matmul) */
    m.frac_zero_ref = 0.5;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    ck_assert(strstr(why, "zero"));
    ck_assert_int_eq(decide(&in, &pm, why), QF_VERDICT_QUALIFIED);
    m.frac_zero_ref = 0.95;
    ck_assert_int_eq(decide(&in, &pm, why), QF_VERDICT_MISTRUSTED);
    /* zeros the op computes exactly (relu of a negative) are not counted:
     * 50 zeros, 40 of them exact, leave 10% */
    m.n_zero_ref = 50, m.frac_zero_ref = 0.5, in.n_zero_exact = 40;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    in.n_zero_exact = 10; /* 40% left */
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    ck_assert_msg(strstr(why, "40% of the reference is zero (> 30%), not counting 10 exact zero(s)"), "%s",
                  why);
    in.n_zero_exact = 0;
    /* undecided reference above 1% */
    m = clean(), m.n_undecided = 2, m.n_checked = 98;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    ck_assert(strstr(why, "undecided"));
    m.n_undecided = 1, m.n_checked = 99;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    /* nothing checked */
    m = clean(), m.n_checked = 0, m.n_undefined = 100, m.n_bound = 0;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    /* a baseline rule without a baseline result */
    m = clean(), p.baseline_factor = 2;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    /* empty output: nothing to check, conformant */
    m = clean(), m.n = m.n_checked = m.n_bound = 0, p = qf_policy_default(0);
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
}
END_TEST

START_TEST(test_marginal)
{
    qf_policy p = qf_policy_default(0);
    qf_verdict_input in = qf_verdict_input_default();
    qf_metrics m = clean(), base = clean();
    char why[256];
    in.metrics = &m;
    p.max_ulp = 0.5;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    m.max_ulp = 1.5, m.at_ulp = 21;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MARGINAL);
    ck_assert(strstr(why, "(2, 1)") && strstr(why, "max_ulp"));
    m = clean(), p = qf_policy_default(0), p.max_normwise = 1e-8;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MARGINAL);
    p = qf_policy_default(0), p.min_sqnr_db = 150;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MARGINAL);
    p.min_sqnr_db = 25; /* torchao's fp8 cast threshold */
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    /* FlashAttention's rule: max error <= 2x the baseline's */
    p = qf_policy_default(0), p.baseline_factor = 2;
    in.baseline = &base;
    base.max_abs = 0.4e-7;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MARGINAL);
    ck_assert(strstr(why, "baseline"));
    base.max_abs = 0.5e-7;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    /* dynamo's rule: RMSE <= m * baseline RMSE + tol */
    p.baseline_metric = QF_BASELINE_RMS, p.baseline_factor = 3, p.baseline_tol = 0;
    base.rms = 1e-8;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MARGINAL);
    p.baseline_tol = 3e-8;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_QUALIFIED);
    /* unfit and weak data: MISTRUSTED wins over MARGINAL */
    m.frac_zero_ref = 0.6, p.max_ulp = 0.1;
    ck_assert_int_eq(decide(&in, &p, why), QF_VERDICT_MISTRUSTED);
    /* reason may be NULL */
    {
        qf_verdict v;
        ck_assert_int_eq(qf_verdict_decide(&in, &p, &v, NULL, 0), QF_OK);
        ck_assert_int_eq(v, QF_VERDICT_MISTRUSTED);
    }
}
END_TEST

START_TEST(test_names_combine)
{
    qf_verdict v, all[3] = {QF_VERDICT_QUALIFIED, QF_VERDICT_MARGINAL, QF_VERDICT_QUALIFIED};
    int i;
    for (i = 0; i < QF_VERDICT_COUNT; i++) {
        ck_assert_int_eq(qf_verdict_lookup(qf_verdict_name((qf_verdict)i), &v), QF_OK);
        ck_assert_int_eq(v, i);
    }
    ck_assert_int_eq(qf_verdict_lookup("failed", &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_FAILED);
    ck_assert_int_eq(qf_verdict_lookup("FAIL", &v), QF_EPARSE);
    ck_assert_str_eq(qf_verdict_name(QF_VERDICT_COUNT), "UNKNOWN");
    ck_assert_int_eq(qf_verdict_combine(all, 3, &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_MARGINAL);
    all[2] = QF_VERDICT_FAILED;
    ck_assert_int_eq(qf_verdict_combine(all, 3, &v), QF_OK);
    ck_assert_int_eq(v, QF_VERDICT_FAILED);
    ck_assert_int_eq(qf_verdict_combine(all, 0, &v), QF_EINVAL);
    ck_assert(qf_verdict_severity(QF_VERDICT_FAILED) > qf_verdict_severity(QF_VERDICT_CRASHED));
    ck_assert(qf_verdict_severity(QF_VERDICT_MISTRUSTED) > qf_verdict_severity(QF_VERDICT_MARGINAL));
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
    return qf_test_main(
        "verdict/verdict", "verdict", 0, NULL, NULL,
        QF_TESTS(test_run_states, test_failed, test_mistrusted, test_marginal, test_names_combine));
}
