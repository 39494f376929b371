/* t-diff.c: the rules of qualify diff (docs/diff.md) on hand-made
 * results, and the CLI's exit codes (0 / 1 / 2 naming the bad file). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_diff.h"
#include "qf_report.h"
#include "qf_test_seal.h"
#include "qf_test.h"

static qf_result mk(const char *kernel, unsigned k, qf_verdict v, double ulp)
{
    qf_result r;
    qf_result_init(&r);
    snprintf(r.arch, sizeof r.arch, "cpu");
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
    snprintf(r.op, sizeof r.op, "gemm");
    snprintf(r.dtype, sizeof r.dtype, "f32");
    snprintf(r.case_id, sizeof r.case_id, "gemm/K=%u", k);
    r.ndims = 1;
    snprintf(r.dims[0].name, sizeof r.dims[0].name, "K");
    r.dims[0].value = k;
    r.verdict = v;
    if (!isnan(ulp)) {
        r.has_metrics = 1;
        r.metrics.max_ulp = ulp;
    }
    qf_test_seal(&r);
    return r;
}

static qf_diff_counts run(const qf_result *b, size_t nb, const qf_result *n, size_t nn)
{
    qf_diff_counts c;
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(qf_diff_markdown(devnull, b, nb, n, nn, "base", "new", NULL, &c), QF_OK);
    fclose(devnull);
    return c;
}

START_TEST(test_identical)
{
    qf_result b[2] = {mk("k", 16, QF_VERDICT_QUALIFIED, 0.5), mk("k", 32, QF_VERDICT_FAILED, 9)};
    qf_diff_counts c = run(b, 2, b, 2);
    ck_assert_uint_eq(c.regressions, 0);
    ck_assert_uint_eq(c.matched, 2);
}
END_TEST

START_TEST(test_verdicts)
{
    qf_result b[3] = {mk("k", 16, QF_VERDICT_QUALIFIED, 0.5), mk("k", 32, QF_VERDICT_QUALIFIED, 0.5),
                      mk("k", 64, QF_VERDICT_FAILED, 9)};
    qf_result n[4] = {mk("k", 16, QF_VERDICT_MARGINAL, 0.5), mk("k", 32, QF_VERDICT_QUALIFIED, 0.5),
                      mk("k", 64, QF_VERDICT_QUALIFIED, 0.5), mk("k", 128, QF_VERDICT_CRASHED, NAN)};
    qf_diff_counts c = run(b, 3, n, 4);
    ck_assert_uint_eq(c.verdict_worse, 1);  /* QUALIFIED -> MARGINAL */
    ck_assert_uint_eq(c.new_failures, 1);   /* a new case that crashed */
    ck_assert_uint_eq(c.shapes_lost, 1);    /* K = 16 no longer qualifies */
    ck_assert_uint_eq(c.verdict_better, 1); /* FAILED -> QUALIFIED, not a regression */
    ck_assert_uint_eq(c.only_new, 1);
    ck_assert_uint_eq(c.regressions, 3);
}
END_TEST

START_TEST(test_error_growth)
{
    /* x2 exactly is not growth; above x2 and by more than 0.5 ulp is; a
     * tiny error that doubles (0.1 -> 0.3) is below the floor. */
    qf_result b[4] = {mk("k", 1, QF_VERDICT_QUALIFIED, 1.0), mk("k", 2, QF_VERDICT_QUALIFIED, 1.0),
                      mk("k", 3, QF_VERDICT_QUALIFIED, 0.1), mk("k", 4, QF_VERDICT_QUALIFIED, 1.0)};
    qf_result n[4] = {mk("k", 1, QF_VERDICT_QUALIFIED, 2.0), mk("k", 2, QF_VERDICT_QUALIFIED, 2.01),
                      mk("k", 3, QF_VERDICT_QUALIFIED, 0.3), mk("k", 4, QF_VERDICT_QUALIFIED, INFINITY)};
    qf_diff_counts c = run(b, 4, n, 4);
    ck_assert_uint_eq(c.error_growth, 2); /* K=2 and the infinite one */
    ck_assert_uint_eq(c.regressions, 2);
}
END_TEST

START_TEST(test_slowdown)
{
    qf_result b[3] = {mk("k", 1, QF_VERDICT_QUALIFIED, 0.5), mk("k", 2, QF_VERDICT_QUALIFIED, 0.5),
                      mk("k", 3, QF_VERDICT_QUALIFIED, 0.5)};
    qf_result n[3];
    size_t i;
    qf_diff_counts c;
    memcpy(n, b, sizeof b);
    for (i = 0; i < 3; i++) {
        b[i].timing.measured = n[i].timing.measured = 1;
        b[i].timing.median_s = 1.0;
        b[i].timing.spread = n[i].timing.spread = 0.05;
    }
    n[0].timing.median_s = 1.14; /* < 1 + 0.10 + 0.05: noise */
    n[1].timing.median_s = 1.16; /* beyond */
    n[2].timing.median_s = 1.30;
    n[2].timing.spread = 0.40; /* a noisy measurement widens the threshold */
    c = run(b, 3, n, 3);
    ck_assert_uint_eq(c.slowdowns, 1);
    ck_assert_uint_eq(c.regressions, 1);
}
END_TEST

START_TEST(test_cli)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char dir[] = "/tmp/qf-diff-XXXXXX", a[256], bad[256], newer[256], args[1024];
    qf_result r[1] = {mk("k", 16, QF_VERDICT_QUALIFIED, 0.5)};
    qf_cli_result x;
    /* CTest sets it; a case that ran nothing must not pass. */
    ck_assert_msg(bin && *bin, "QF_QUALIFY_BIN is not set (run through ctest)");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a.json", dir);
    ck_assert_int_eq(qf_report_write_json(a, r, 1, NULL, NULL, 0), QF_OK);
    snprintf(bad, sizeof bad, "%s/corrupt.json", dir);
    qf_test_write_text(dir, "corrupt.json", "{\"schema_version\": 1, \"cases\": [");
    snprintf(newer, sizeof newer, "%s/newer.json", dir);
    qf_test_write_text(dir, "newer.json", "{\"schema_version\": 99, \"cases\": []}");

    snprintf(args, sizeof args, "'%s' '%s'", a, a);
    x = qf_cli_run(bin, "diff", args);
    ck_assert_int_eq(x.rc, 0);
    qf_cli_result_free(&x);
    snprintf(args, sizeof args, "'%s' '%s'", a, bad);
    x = qf_cli_run(bin, "diff", args);
    ck_assert_msg(x.rc == 2 && strstr(x.err, bad) && !x.out[0], "corrupt: %d %s", x.rc, x.err);
    qf_cli_result_free(&x);
    snprintf(args, sizeof args, "'%s' '%s'", newer, a);
    x = qf_cli_run(bin, "diff", args);
    ck_assert_msg(x.rc == 2 && strstr(x.err, newer), "newer schema: %d %s", x.rc, x.err);
    qf_cli_result_free(&x);
    snprintf(args, sizeof args, "'%s' '%s/missing.json'", a, dir);
    x = qf_cli_run(bin, "diff", args);
    ck_assert_msg(x.rc == 2 && strstr(x.err, "missing.json"), "missing: %d %s", x.rc, x.err);
    qf_cli_result_free(&x);
    x = qf_cli_run(bin, "diff", a);
    ck_assert_int_eq(x.rc, 2);
    qf_cli_result_free(&x);
    snprintf(args, sizeof args, "--ulp-factor 0.5 '%s' '%s'", a, a);
    x = qf_cli_run(bin, "diff", args);
    ck_assert_int_eq(x.rc, 2);
    qf_cli_result_free(&x);
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    return qf_test_main("diff/diff", "diff", 0, NULL, NULL,
                        QF_TESTS(test_identical, test_verdicts, test_error_growth, test_slowdown, test_cli));
}
