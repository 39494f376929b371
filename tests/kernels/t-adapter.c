/* t-adapter.c: the cblas adapter (qf_adapter.h) through `qualify run
 * --adapter` as a separate process (QF_QUALIFY_BIN):
 *   - Debian's OpenBLAS: f32 and f64 GEMMs with transposes, alpha, beta,
 *     batches and odd shapes are every one QUALIFIED, no element outside
 *     its bound;
 *   - a known-wrong CBLAS (cblas_wrong.c, QF_CBLAS_WRONG) whose sgemm
 *     ignores beta is FAILED with a reason where beta != 0, and its right
 *     sbgemm is QUALIFIED (the bf16 path);
 *   - a missing file, a missing symbol and an unknown adapter exit 2 and
 *     name what is missing.
 * Without QF_QUALIFY_BIN: skipped (77).  Without OpenBLAS the other tests
 * run and the program then exits 77 (the OpenBLAS part was skipped).
 * OpenBLAS picks its kernels from the CPU, and what is asserted of it holds
 * on every path (a float32 GEMM inside the bound of any order); CTest runs
 * the OpenBLAS part once more pinned to its Haswell (AVX2) kernels
 * (kernels/adapter-avx2, qf_test_pinned_avx2; docs/third-party.md "Tests
 * on every CPU"), so a dependence on the CPU shows on one machine.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *wrong;
static const char *openblas;
static char dir[128];

/* "qualify run DIR/ARGS..." with exit status rc and stderr naming err_has
 * (qf_cli_test.h); the output folders are DIR/<name>. */
#define RUN(rc, err_has, ...)                                                                                \
    do {                                                                                                     \
        qf_cli_result res_ = qf_cli_expectf(bin, "run", rc, err_has, __VA_ARGS__);                           \
        qf_cli_result_free(&res_);                                                                           \
    } while (0)

/* Odd shapes, both transposes, alpha and beta, a batch. */
static const char *blas_suite = "suite: cblas\n"
                                "inputs: [normal, {name: outliers, fraction: 0.05, scale: 50}]\n"
                                "seeds: 1\n"
                                "groups:\n"
                                "  - op: gemm\n"
                                "    kernels: [gemm.cblas.openblas.f32]\n"
                                "    dtypes: [float32]\n"
                                "    shapes: &s [{M: [1, 7, 33, 129], N: [1, 33], K: [7, 129]},\n"
                                "                {M: [7], N: [33], K: [129], batch: [3]}]\n"
                                "    params: &p {trans_a: [false, true], trans_b: [false, true],\n"
                                "                alpha: [1, -0.75], beta: [0, 1.5]}\n"
                                "  - op: gemm\n"
                                "    kernels: [gemm.cblas.openblas.f64]\n"
                                "    dtypes: [float64]\n"
                                "    shapes: *s\n"
                                "    params: *p\n";

/* Every case of DIR/OUT QUALIFIED within its bound, except, when
 * beta_fails, those with beta != 0, which must be FAILED with a reason and
 * violations; returns the number FAILED. */
static size_t check_journal(const char *out, size_t min_cases, int beta_fails)
{
    char path[512], err[512];
    qf_result *r = NULL;
    size_t n = 0, i, failed = 0;
    snprintf(path, sizeof path, "%s/%s/journal.jsonl", dir, out);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_ge(n, min_cases);
    for (i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(strstr(r[i].reproducer, "--adapter 'cblas:"));
        ck_assert(r[i].has_metrics);
        if (beta_fails && !strstr(r[i].case_id, "beta=0")) {
            ck_assert_msg(r[i].verdict == QF_VERDICT_FAILED, "%s: %s", r[i].case_id, r[i].reason);
            ck_assert_uint_gt(strlen(r[i].reason), 0);
            ck_assert_uint_gt(r[i].metrics.n_violations, 0);
            failed++;
            continue;
        }
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s %s: %s: %s", r[i].kernel, r[i].case_id,
                      qf_verdict_name(r[i].verdict), r[i].reason);
        ck_assert_uint_eq(r[i].metrics.n_violations, 0);
        ck_assert_msg(r[i].metrics.max_util <= 1.0, "%s %s: bound utilization %g", r[i].kernel, r[i].case_id,
                      r[i].metrics.max_util);
    }
    free(r);
    return failed;
}

START_TEST(openblas_qualified)
{
    qf_test_write_text(dir, "blas.yaml", blas_suite);
    RUN(0, NULL, "%s/blas.yaml -q -o %s/out-ob --adapter 'cblas:%s'", dir, dir, openblas);
    /* (16 + 1) shapes x 16 parameter sets x 2 inputs, per dtype */
    check_journal("out-ob", 2 * 17 * 16 * 2, 0);
}
END_TEST

/* OpenBLAS at 1 and 2 threads (the adapter sets openblas_set_num_threads
 * from the case's thread count): shapes large enough for OpenBLAS to split
 * the work, each QUALIFIED under the same claim. */
START_TEST(openblas_threads)
{
    char path[512], err[512];
    qf_result *r = NULL;
    size_t n = 0, i, two = 0;
    qf_test_write_text(dir, "threads.yaml",
                       "suite: cblas-threads\ninputs: [normal]\nseeds: 1\nrefute: false\n"
                       "sampling: {max_elements: 4096}\ngroups:\n"
                       "  - op: gemm\n    kernels: [gemm.cblas.openblas.f32]\n"
                       "    dtypes: [float32]\n"
                       "    shapes: {M: [192, 257], N: [256], K: [384]}\n"
                       "    threads: [1, 2]\n");
    RUN(0, NULL, "%s/threads.yaml -q -o %s/out-th --adapter 'cblas:%s'", dir, dir, openblas);
    snprintf(path, sizeof path, "%s/out-th/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(n, 4);
    for (i = 0; i < n; i++) {
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s", r[i].case_id, r[i].reason);
        two += strstr(r[i].case_id, "threads=2") != NULL;
    }
    ck_assert_uint_eq(two, 2);
    free(r);
}
END_TEST

/* Operand layouts (docs/suites.md#layouts): padded leading dimensions,
 * column-major operands (the adapter flips transpose flags or calls
 * CblasColMajor), both, and padded batch strides, with transposes and
 * beta, at 1 and 2 threads: every one QUALIFIED within the bound, nothing
 * written into the padding (the runner's gap check), the results keyed by
 * layout. */
START_TEST(openblas_layouts)
{
    char path[512], err[512];
    qf_result *r = NULL;
    size_t n = 0, i, col = 0, two = 0;
    double worst = 0;
    qf_test_write_text(dir, "layouts.yaml",
                       "suite: cblas-layouts\nrefute: false\ninputs: [normal]\nseeds: 1\n"
                       "sampling: {max_elements: 4096}\ngroups:\n"
                       "  - op: gemm\n    kernels: [gemm.cblas.openblas.f32]\n"
                       "    dtypes: [float32]\n"
                       "    shapes: [{M: [7], N: [33], K: [129], batch: [3]}, {M: [192], N: [256], K: [384]}]\n"
                       "    params: {trans_a: [false, true], trans_b: [false, true], beta: [0, 1.5]}\n"
                       "    layout: [\"ld+3\", col, \"col,ld+5\", \"batch+64\", \"ld+2,batch+7\"]\n"
                       "    threads: [1, 2]\n");
    RUN(0, NULL, "%s/layouts.yaml -q -o %s/out-lay --adapter 'cblas:%s'", dir, dir, openblas);
    snprintf(path, sizeof path, "%s/out-lay/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(n, 2 * 8 * 5 * 2);
    for (i = 0; i < n; i++) {
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s: %s", r[i].case_id,
                      qf_verdict_name(r[i].verdict), r[i].reason);
        ck_assert_uint_eq(r[i].metrics.n_violations, 0);
        col += strstr(r[i].case_id, "layout=col") != NULL;
        two += strstr(r[i].case_id, "threads=2") != NULL;
        if (r[i].metrics.max_util > worst)
            worst = r[i].metrics.max_util;
    }
    ck_assert_uint_eq(col, 2 * 8 * 2 * 2);
    ck_assert_uint_eq(two, n / 2);
    fprintf(stderr, "cblas sgemm over %zu layout cases: all QUALIFIED, max bound utilization %.3g\n", n, worst);
    free(r);
}
END_TEST

/* `qualify list kernels` loads adapters as `qualify run` does. */
START_TEST(list_adapter)
{
    qf_cli_result r =
        qf_cli_expectf(bin, "list", 0, NULL, "kernels --adapter 'cblas:%s' 'gemm.cblas.*'", openblas);
    ck_assert_msg(strstr(r.out, "gemm.cblas.openblas.f32") && strstr(r.out, "gemm.cblas.openblas.f64"), "%s",
                  r.out);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "list", 2, "--adapter cblas:/nonexistent/libnone.so",
                       "kernels --adapter "
                       "cblas:/nonexistent/libnone.so");
    qf_cli_result_free(&r);
}
END_TEST

START_TEST(wrong_sgemm_failed)
{
    qf_test_write_text(dir, "wrong.yaml",
                       "suite: wrong\ninputs: [normal]\nseeds: 1\ngroups:\n"
                       "  - op: gemm\n    kernels: [gemm.cblas.qf_test_cblas_wrong.f32]\n"
                       "    dtypes: [float32]\n"
                       "    shapes: {M: [7], N: [33], K: [1, 129]}\n"
                       "    params: {trans_a: [false, true], beta: [0, 1]}\n");
    /* exit 1: something FAILED */
    RUN(1, NULL, "%s/wrong.yaml -q -o %s/out-w --adapter 'cblas:%s:cblas_sgemm'", dir, dir, wrong);
    ck_assert_uint_eq(check_journal("out-w", 8, 1), 4);
}
END_TEST

START_TEST(sbgemm_qualified)
{
    qf_test_write_text(dir, "bf16.yaml",
                       "suite: bf16\ninputs: [normal]\nseeds: 1\ngroups:\n"
                       "  - op: gemm\n    kernels: [gemm.cblas.*.bf16]\n"
                       "    dtypes: [{in: bfloat16, out: float32}]\n"
                       "    shapes: {M: [1, 33], N: [7], K: [129]}\n"
                       "    params: {trans_b: [false, true], alpha: [1, 2], beta: [0, 0.5]}\n");
    /* Two adapters on one library: the f32 and bf16 kernels side by side. */
    RUN(0, NULL,
        "%s/bf16.yaml -q -o %s/out-bf --adapter 'cblas:%s:cblas_sbgemm' --adapter 'cblas:%s:cblas_sgemm'",
        dir, dir, wrong, wrong);
    check_journal("out-bf", 16, 0);
}
END_TEST

START_TEST(load_errors)
{
    char y[512];
    qf_test_write_text(dir, "e.yaml",
                       "suite: e\ngroups:\n  - op: gemm\n    dtypes: [float32]\n"
                       "    shapes: {M: [7], N: [3], K: [5]}\n");
    snprintf(y, sizeof y, "%s/e.yaml -o %s/out-e", dir, dir);
    RUN(2, "/nonexistent/libnoblas.so", "%s --adapter cblas:/nonexistent/libnoblas.so", y);
    /* No cblas_dgemm in the wrong library: the plain spec needs it. */
    RUN(2, "does not export cblas_dgemm", "%s --adapter 'cblas:%s'", y, wrong);
    RUN(2, wrong, "%s --adapter 'cblas:%s:cblas_dgemm'", y, wrong);
    RUN(2, "unknown CBLAS entry point 'cblas_zgemm'", "%s --adapter 'cblas:%s:cblas_zgemm'", y, wrong);
    RUN(2, "unknown adapter 'mkl'", "%s --adapter mkl:libmkl_rt.so", y);
    /* The same kernel twice: the registry's duplicate check applies. */
    RUN(2, "already registered", "%s --adapter 'cblas:%s:cblas_sgemm' --adapter 'cblas:%s:cblas_sgemm'", y,
        wrong, wrong);
}
END_TEST

int main(void)
{
    int rc;
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    wrong = qf_test_require_env("QF_CBLAS_WRONG");
    openblas = qf_test_openblas();
    snprintf(dir, sizeof dir, "/tmp/qf-t-adapter-%d", (int)getpid());
    if (qf_test_pinned_avx2()) {
        if (!openblas) {
            fprintf(stderr, "OpenBLAS not found: the pinned run is skipped\n");
            return QF_TEST_SKIP;
        }
        return qf_test_run_in_dir(qf_test_suite("kernels/adapter-avx2", "adapter", 600, NULL, NULL, 0, NULL,
                                                QF_TESTS(openblas_qualified, openblas_threads, openblas_layouts)),
                                  dir);
    }
    if (openblas) {
        rc = qf_test_run_in_dir(qf_test_suite("kernels/adapter", "adapter", 600, NULL, NULL, 0, NULL,
                                              QF_TESTS(openblas_qualified, openblas_threads, openblas_layouts, list_adapter,
                                                       wrong_sgemm_failed, sbgemm_qualified, load_errors)),
                                dir);
        return rc;
    }
    fprintf(stderr,
            "OpenBLAS not found (scripts/install-deps installs libopenblas-dev): its part is skipped\n");
    rc = qf_test_run_in_dir(qf_test_suite("kernels/adapter", "adapter", 600, NULL, NULL, 0, NULL,
                                          QF_TESTS(wrong_sgemm_failed, sbgemm_qualified, load_errors)),
                            dir);
    return rc == 0 ? QF_TEST_SKIP : rc;
}
