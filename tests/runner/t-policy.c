/* t-policy.c: the componentwise fitness policy (docs/suites.md:
 * max_componentwise) turns a conformant kernel MARGINAL when
 * |c^_i - c_i| / (|A||B|)_i (gemm) or / |c_i| (other ops) exceeds it, and
 * leaves it QUALIFIED under a realistic threshold.  Built-in kernels. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_runner_test.h"
#include "qf_test.h"

/* Runs the suite text on the built-in kernels into sum. */
static void run_text(const char *text, qf_runner_summary *sum)
{
    char path[128], err[512];
    FILE *f;
    qf_suite *suite = NULL;
    qf_registry *reg = NULL;
    qf_runner_opts o = qf_runner_opts_default();
    snprintf(path, sizeof path, "/tmp/qf-t-policy-%d.yaml", (int)getpid());
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ck_assert_msg(qf_suite_load(path, &suite, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    o.timeout_s = 30.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, sum, err, sizeof err) == QF_OK, "%s", err);
    qf_suite_free(suite);
    qf_registry_free(reg);
    remove(path);
}

START_TEST(componentwise)
{
    qf_runner_summary sum;
    const qf_result *r;
    run_text("suite: policy\n"
             "refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
             "groups:\n"
             "  - {name: tight, op: gemm, kernels: [gemm.cpu.naive.f32], dtypes: [float32],\n"
             "     shapes: {M: [8], N: [8], K: [64]}, policy: {max_componentwise: 1.0e-12}}\n"
             "  - {name: loose, op: gemm, kernels: [gemm.cpu.naive.f32], dtypes: [float32],\n"
             "     shapes: {M: [8], N: [8], K: [64]}, policy: {max_componentwise: 1.0e-5}}\n"
             "  - {name: sm, op: softmax, kernels: [softmax.cpu.f32], dtypes: [float32],\n"
             "     shapes: {rows: [4], cols: [100]}, policy: {max_componentwise: 1.0e-9}}\n",
             &sum);
    ck_assert_uint_eq(sum.n, 3);
    /* float32 sequential sums of 64 products: about 2^-24 .. 2^-20 of
     * |A||B|, far above 1e-12, far below 1e-5 */
    r = qf_test_find_case(&sum, "tight:");
    ck_assert_msg(r->verdict == QF_VERDICT_MARGINAL && strstr(r->reason, "max_componentwise"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "loose:");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "sm:");
    ck_assert_msg(r->verdict == QF_VERDICT_MARGINAL && strstr(r->reason, "componentwise"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    qf_runner_summary_free(&sum);
}
END_TEST

/* max_zero_frac (docs/suites.md#policy): an all-zero GEMM is degenerate
 * data (MISTRUSTED) by default and under a suite's 0.5; a suite that says
 * its zeros are intended (1) gets the kernel's verdict. */
START_TEST(zero_frac)
{
    qf_runner_summary sum;
    const qf_result *r;
    run_text("suite: zeros\n"
             "refute: false\n"
             "kernels: [gemm.cpu.naive.f32]\n"
             "dtypes: [float32]\n"
             "shapes: {M: [4], N: [4], K: [16]}\n"
             "inputs: [{name: special, rate_nan: 0, rate_inf: 0, rate_zero: 1}]\n"
             "groups:\n"
             "  - {name: dflt, op: gemm}\n"
             "  - {name: half, op: gemm, policy: {max_zero_frac: 0.5}}\n"
             "  - {name: all, op: gemm, policy: {max_zero_frac: 1}}\n",
             &sum);
    ck_assert_uint_eq(sum.n, 3);
    r = qf_test_find_case(&sum, "dflt:");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "zero"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "half:");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "50%"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "all:");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    qf_runner_summary_free(&sum);
}
END_TEST

/* relu's zeros from negative inputs are exact results, not degenerate
 * data (docs/verdicts.md): relu and GLU relu on zero-mean inputs qualify
 * the built-in kernel, while all-zero inputs stay MISTRUSTED, for relu as
 * for gemm. */
START_TEST(relu_zeros)
{
    qf_runner_summary sum;
    const qf_result *r;
    run_text("suite: relu\n"
             "refute: false\n"
             "dtypes: [float32]\n"
             "groups:\n"
             "  - {name: relu, op: activation, kernels: [activation.cpu.f32], params: {fn: relu},\n"
             "     shapes: {rows: [16], cols: [64]}}\n"
             "  - {name: glu, op: glu, kernels: [activation.cpu.f32], params: {fn: relu},\n"
             "     shapes: {rows: [16], cols: [64]}}\n"
             "  - {name: zrelu, op: activation, kernels: [activation.cpu.f32], params: {fn: relu},\n"
             "     shapes: {rows: [16], cols: [64]},\n"
             "     inputs: [{name: special, rate_nan: 0, rate_inf: 0, rate_zero: 1}]}\n"
             "  - {name: zgemm, op: gemm, kernels: [gemm.cpu.naive.f32], shapes: {M: [4], N: [4], K: [16]},\n"
             "     inputs: [{name: special, rate_nan: 0, rate_inf: 0, rate_zero: 1}]}\n",
             &sum);
    ck_assert_uint_eq(sum.n, 4);
    r = qf_test_find_case(&sum, "relu:");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    ck_assert(r->metrics.frac_zero_ref > 0.3); /* the metrics still count every zero */
    r = qf_test_find_case(&sum, "glu:");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "zrelu:");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "degenerate"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "zgemm:");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "degenerate"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    qf_runner_summary_free(&sum);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/policy");
    TCase *tc = tcase_create("policy");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, componentwise);
    tcase_add_test(tc, zero_frac);
    tcase_add_test(tc, relu_zeros);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
