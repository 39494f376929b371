/* t-run.c: 'qualify run' as a separate process (QF_QUALIFY_BIN): the
 * default suite without arguments exits 0 and writes the journal and the
 * reports; a bad suite exits 2 naming FILE:LINE:COL; --jobs 2 gives the
 * same results as --jobs 1; --case/--kernel run one pair; --time records
 * timing; usage errors exit 2.  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

/* Run "cd DIR && qualify run ARGS"; stderr into *err (may be NULL). */
static int run(const char *args, char **err)
{
    char cmd[4096], ef[256];
    int st;
    snprintf(ef, sizeof ef, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' run %s >'%s/stdout.txt' 2>'%s'", dir, bin, args, dir, ef);
    st = system(cmd);
    if (err)
        *err = qf_test_slurp(ef, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *small = "suite: small\n"
                           "inputs: [normal, {name: outliers, fraction: 0.05, scale: 50}]\n"
                           "seeds: 2\n"
                           "groups:\n"
                           "  - op: gemm\n"
                           "    kernels: [gemm.cpu.*]\n"
                           "    dtypes: [float32, {in: bfloat16, acc: float32}]\n"
                           "    shapes: {M: [1, 17], N: [5, 33], K: [16]}\n"
                           "  - op: rmsnorm\n"
                           "    kernels: [rmsnorm.cpu.*]\n"
                           "    dtypes: [float32]\n"
                           "    shapes: {rows: [3], cols: [1, 100]}\n"
                           "  - op: softmax\n"
                           "    kernels: [softmax.cpu.*]\n"
                           "    dtypes: [float32]\n"
                           "    shapes: {rows: [4], cols: [9]}\n";

START_TEST(default_suite)
{
    char *err, path[256];
    const char *src = getenv("QF_SOURCE_DIR");
    qf_result *r;
    size_t n, i, q = 0;
    struct stat st;
    /* The search finds <bindir>/../shapes when the build tree sits in the
     * source tree; QUALIFY_SUITE_DIR makes it independent of that. */
    if (src && *src) {
        char env[1024];
        snprintf(env, sizeof env, "%s/shapes", src);
        setenv("QUALIFY_SUITE_DIR", env, 1);
    }
    ck_assert_msg(run("-q --jobs 2", &err) == 0, "stderr: %s", err);
    free(err);
    r = qf_test_journal(dir, "qualify-out", &n);
    ck_assert_uint_gt(n, 100);
    for (i = 0; i < n; i++) {
        ck_assert_msg(r[i].verdict != QF_VERDICT_FAILED && r[i].verdict != QF_VERDICT_CRASHED &&
                          r[i].verdict != QF_VERDICT_TIMEOUT,
                      "%s %s: %s", r[i].kernel, r[i].case_id, r[i].reason);
        q += r[i].verdict == QF_VERDICT_QUALIFIED;
        ck_assert_ptr_nonnull(strstr(r[i].reproducer, "qualify run "));
    }
    ck_assert_uint_gt(q, 50);
    free(r);
    snprintf(path, sizeof path, "%s/qualify-out/results.json", dir);
    ck_assert_int_eq(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/qualify-out/junit.xml", dir);
    ck_assert_int_eq(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/qualify-out/report.md", dir);
    ck_assert_int_eq(stat(path, &st), 0);
}
END_TEST

START_TEST(bad_suite)
{
    char *err;
    qf_test_write_text(dir, "bad.yaml", "suite: bad\ngroups:\n  - op: gemm\n    shapez: {M: [1]}\n");
    ck_assert_int_eq(run("bad.yaml -o out-bad", &err), 2);
    ck_assert_msg(strstr(err, "bad.yaml:4:5:") != NULL, "stderr: %s", err);
    ck_assert_msg(strstr(err, "shapez") != NULL, "stderr: %s", err);
    free(err);
    ck_assert_int_eq(run("missing.yaml -o out-bad", &err), 2);
    ck_assert_msg(strstr(err, "missing.yaml") != NULL, "stderr: %s", err);
    free(err);
}
END_TEST

START_TEST(usage_errors)
{
    char *err;
    qf_test_write_text(dir, "small.yaml", small);
    ck_assert_int_eq(run("small.yaml --jobs 0", &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--jobs"));
    free(err);
    ck_assert_int_eq(run("small.yaml --fail-on bogus", &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "marginal, mistrusted"));
    free(err);
    ck_assert_int_eq(run("small.yaml --frobnicate", &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--frobnicate"));
    free(err);
    ck_assert_int_eq(run("small.yaml --case no/such/case -o out-x", &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "no/such/case"));
    free(err);
    ck_assert_int_eq(run("small.yaml --kernel 'nothing.*' -o out-x", &err), 2);
    free(err);
    ck_assert_int_eq(run("small.yaml --plugin /nonexistent/plugin.so -o out-x", &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/plugin.so"));
    free(err);
    ck_assert_int_eq(run("--help", NULL), 0);
}
END_TEST

START_TEST(jobs_do_not_change_results)
{
    qf_result *a, *b;
    size_t na, nb, i, j;
    char *err;
    qf_test_write_text(dir, "small.yaml", small);
    ck_assert_msg(run("small.yaml -q -o out-j1 --jobs 1", &err) == 0, "%s", err);
    free(err);
    ck_assert_msg(run("small.yaml -q -o out-j2 --jobs 2", &err) == 0, "%s", err);
    free(err);
    a = qf_test_journal(dir, "out-j1", &na);
    b = qf_test_journal(dir, "out-j2", &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_uint_gt(na, 20);
    for (i = 0; i < na; i++) {
        char ka[700], kb[700];
        int found = 0;
        qf_result_key(&a[i], ka, sizeof ka);
        for (j = 0; j < nb && !found; j++) {
            qf_result_key(&b[j], kb, sizeof kb);
            if (strcmp(ka, kb))
                continue;
            found = 1;
            ck_assert_int_eq(a[i].verdict, b[j].verdict);
            ck_assert_str_eq(a[i].reason, b[j].reason);
            ck_assert_int_eq(a[i].has_metrics, b[j].has_metrics);
            if (a[i].has_metrics) {
                ck_assert(a[i].metrics.max_ulp == b[j].metrics.max_ulp);
                ck_assert(a[i].metrics.max_abs == b[j].metrics.max_abs);
                ck_assert(a[i].metrics.normwise == b[j].metrics.normwise ||
                          (a[i].metrics.normwise != a[i].metrics.normwise &&
                           b[j].metrics.normwise != b[j].metrics.normwise));
                ck_assert_uint_eq(a[i].metrics.n_checked, b[j].metrics.n_checked);
            }
        }
        ck_assert_msg(found, "%s missing with --jobs 2", ka);
    }
    free(a);
    free(b);
}
END_TEST

START_TEST(one_case_and_timing)
{
    qf_result *r;
    size_t n;
    char *err;
    qf_test_write_text(dir, "small.yaml", small);
    ck_assert_msg(run("small.yaml -q -o out-one --time --reps 5 --case "
                      "'gemm/M=17,N=33,K=16/f32.f32.f32.f32/normal/seed=1' --kernel gemm.cpu.naive.f32",
                      &err) == 0,
                  "%s", err);
    free(err);
    r = qf_test_journal(dir, "out-one", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(r[0].kernel, "gemm.cpu.naive.f32");
    ck_assert_int_eq(r[0].verdict, QF_VERDICT_QUALIFIED);
    ck_assert_int_eq(r[0].timing.measured, 1);
    ck_assert_uint_eq(r[0].timing.reps, 5);
    ck_assert(r[0].timing.min_s <= r[0].timing.median_s && r[0].timing.median_s <= r[0].timing.max_s);
    ck_assert_ptr_nonnull(
        strstr(r[0].reproducer, "--case gemm/M=17,N=33,K=16/f32.f32.f32.f32/normal/seed=1"));
    free(r);
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-run-%d", (int)getpid());
    return qf_test_run_in_dir(qf_test_suite("cli/run", "run", 300, NULL, NULL, 0, NULL,
                                            QF_TESTS(default_suite, bad_suite, usage_errors,
                                                     jobs_do_not_change_results, one_case_and_timing)),
                              dir);
}
