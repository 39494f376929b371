/* t-exact_zeros.c: zeros an op's math computes exactly from nonzero
 * inputs are not degenerate data (the exact_zeros hooks of qualify/ops/,
 * docs/verdicts.md "Degenerate data and exact zeros"), through the runner
 * with built-in kernels and the default max_zero_frac (30%):
 *   - log_softmax of rows of one entry is exactly 0 (log 1): QUALIFIED
 *     with its derived bound, not MISTRUSTED;
 *   - softmax is exactly 0 at masked entries (-inf), log_softmax at the one
 *     unmasked entry of a row: rows of 8 with 60% masked entries QUALIFY;
 *   - LayerNorm without a bias is exactly 0 on constant rows and on rows of
 *     one entry (two-pass and Welford);
 *   - quantize's zero codes of nonzero inputs (values below the block
 *     scale's smallest step) under a suite's own max_zero_frac of 30%;
 * while zeros that come from zero inputs still count: LayerNorm and
 * quantize of all-zero rows stay MISTRUSTED. */
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner_test.h"
#include "qf_test.h"

static const char yaml[] =
    "suite: exact_zeros\n"
    "groups:\n"
    "  - name: lsm-one\n"
    "    op: log_softmax\n"
    "    kernels: [softmax.cpu.f32, softmax.cpu.online.f32]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [1, 16], cols: [1]}\n"
    "    inputs: [normal, {name: normal, mean: 0, std: 0}]\n"
    "  - name: masked\n"
    "    op: softmax\n"
    "    kernels: [softmax.cpu.f32]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [16], cols: [8]}\n"
    "    inputs: [{name: special, rate_nan: 0, rate_inf: 0.6, rate_zero: 0, sign: -1}]\n"
    "  - name: lsm-masked\n"
    "    op: log_softmax\n"
    "    kernels: [softmax.cpu.f32]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [16], cols: [8]}\n"
    "    inputs: [{name: special, rate_nan: 0, rate_inf: 0.6, rate_zero: 0, sign: -1}]\n"
    "  - name: ln-const\n"
    "    op: layernorm\n"
    "    kernels: [layernorm.cpu.*]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [4], cols: [1, 64]}\n"
    "    params: {bias: false}\n"
    "    inputs: [{name: normal, mean: 3, std: 0}]\n"
    "  - name: ln-one\n"
    "    op: layernorm\n"
    "    kernels: [layernorm.cpu.*]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [4], cols: [1]}\n"
    "    params: {bias: false}\n"
    "  - name: ln-zero\n"
    "    op: layernorm\n"
    "    kernels: [layernorm.cpu.twopass.f32]\n"
    "    dtypes: [float32]\n"
    "    shapes: {rows: [4], cols: [64]}\n"
    "    params: {bias: false}\n"
    "    inputs: [{name: normal, mean: 0, std: 0}]\n"
    /* per-tensor FP8: a scale of amax / 448 with outliers of 10^6 leaves
     * the unit-normal entries below e4m3's smallest step: zero codes
     * (quantize.bad.e4m3_nan_overflow is right there: shapes/detection.yaml
     * e4m3-nan-hidden) */
    "  - name: q-tiny\n"
    "    op: quantize\n"
    "    kernels: [quantize.bad.e4m3_nan_overflow]\n"
    "    dtypes: [{in: float32, out: float8_e4m3fn}]\n"
    "    shapes: {rows: [4], cols: [128]}\n"
    "    params: {family: fp8}\n"
    "    inputs: [{name: outliers, fraction: 0.01, scale: 1000000}]\n"
    "    policy: {max_zero_frac: 0.3}\n"
    "  - name: q-zero\n"
    "    op: quantize\n"
    "    kernels: [quantize.bad.e4m3_nan_overflow]\n"
    "    dtypes: [{in: float32, out: float8_e4m3fn}]\n"
    "    shapes: {rows: [4], cols: [128]}\n"
    "    params: {family: fp8}\n"
    "    inputs: [{name: special, rate_nan: 0, rate_inf: 0, rate_zero: 0.9}]\n"
    "    policy: {max_zero_frac: 0.3}\n";

START_TEST(exact_zeros_are_not_degenerate)
{
    qf_registry *r = NULL;
    qf_runner_summary sum;
    size_t i, seen[8] = {0};
    static const char *const groups[] = {
        "lsm-one:", "masked:", "lsm-masked:", "ln-const:", "ln-one:", "ln-zero:", "q-tiny:", "q-zero:"};
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    qf_test_run_yaml(yaml, "exact_zeros.yaml", r, &sum);
    for (i = 0; i < sum.n; i++) {
        const qf_result *x = &sum.results[i];
        const qf_metrics *m = &x->metrics;
        int g;
        for (g = 0; g < 8 && strncmp(x->case_id, groups[g], strlen(groups[g])); g++)
            ;
        ck_assert_int_lt(g, 8);
        seen[g]++;
        fprintf(stderr, "  %s %s: %s (%s); %zu of %zu zero\n", x->case_id, x->kernel,
                qf_verdict_name(x->verdict), x->reason, m->n_zero_ref, m->n);
        if (g == 5 || g == 7) { /* zeros of zero inputs: degenerate data */
            ck_assert_msg(x->verdict == QF_VERDICT_MISTRUSTED && strstr(x->reason, "degenerate data"),
                          "%s %s: %s", x->case_id, x->kernel, x->reason);
            continue;
        }
        ck_assert_msg(x->verdict == QF_VERDICT_QUALIFIED && x->bound.kind[0] && m->n_bound > 0,
                      "%s %s: %s (%s)", x->case_id, x->kernel, qf_verdict_name(x->verdict), x->reason);
        /* the exemption was needed: more zeros than the rule allows */
        if (g != 2)
            ck_assert_msg(m->n_zero_ref > 0.3 * (double)m->n, "%s: %zu of %zu zero", x->case_id,
                          m->n_zero_ref, m->n);
        if (g == 0)
            ck_assert_str_eq(x->bound.kind, "log_softmax");
    }
    for (i = 0; i < 8; i++)
        ck_assert_msg(seen[i] > 0, "no result for %s", groups[i]);
    qf_runner_summary_free(&sum);
    qf_registry_free(r);
}
END_TEST

int main(void)
{
    return qf_test_main("ops/exact_zeros", "exact_zeros", 300, NULL, NULL,
                        QF_TESTS(exact_zeros_are_not_degenerate));
}
