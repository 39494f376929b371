/* t-slots.c: per-slot inputs (docs/suites.md#inputs): a and b of a GEMM
 * read from their own .npy files, so M != N; the files' shapes must be the
 * slots' (an error naming the file and the dimension otherwise), and a
 * slot the case does not draw is refused.  Built-in kernels, files written
 * here with qualify/npy.c. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_npy.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_runner_test.h"
#include "qf_test.h"

static char dir[256];

static void write_npy(const char *name, size_t rows, size_t cols, double scale)
{
    char err[256];
    size_t shape[2] = {rows, cols}, i;
    float *v = malloc(rows * cols * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (i = 0; i < rows * cols; i++) /* small integers: any order of the sums is exact */
        v[i] = (float)(scale * (double)((int)(i % 7) - 3));
    ck_assert_msg(qf_npy_write_data(qf_test_path(dir, name), QF_NPY_FLOAT32, 2, shape, v, err, sizeof err) ==
                      QF_OK,
                  "%s", err);
    free(v);
}

START_TEST(per_slot_files)
{
    qf_registry *reg = NULL;
    qf_runner_summary sum;
    const qf_result *r;
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-slots");
    write_npy("A.npy", 3, 5, 1);
    write_npy("B.npy", 5, 7, 0.5);
    write_npy("Z.npy", 3, 5, 0);
    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    /* the suite's name puts it in dir, where its relative paths resolve */
    qf_test_run_yaml("suite: slots\n"
                     "refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
                     "op: gemm\n"
                     "kernels: [gemm.cpu.naive.f32]\n"
                     "dtypes: [float32]\n"
                     "groups:\n"
                     "  - name: ab\n"
                     "    shapes: {M: 3, N: 7, K: 5}\n"
                     "    inputs: [{a: {name: file, path: A.npy}, b: {name: file, path: B.npy}}]\n"
                     "  - name: zero\n"
                     "    shapes: {M: 3, N: 7, K: 5}\n"
                     "    inputs: [{a: {name: file, path: Z.npy}, b: normal}]\n"
                     "  - name: badk\n"
                     "    shapes: {M: 3, N: 7, K: 6}\n"
                     "    inputs: [{a: {name: file, path: A.npy}, b: normal}]\n"
                     "  - name: undrawn\n"
                     "    shapes: {M: 3, N: 7, K: 5}\n"
                     "    inputs: [{c: uniform}]\n",
                     qf_test_path(dir, "s.yaml"), reg, &sum);
    ck_assert_uint_eq(sum.n, 4);
    r = qf_test_find_case(&sum, "ab:");
    ck_assert_str_eq(r->case_id,
                     "ab:gemm/M=3,N=7,K=5/f32.f32.f32.f32/a=file:path=A.npy+b=file:path=B.npy/seed=0");
    ck_assert_str_eq(r->input, "a=file:path=A.npy+b=file:path=B.npy");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    /* a read from the all-zero file: the product is zero whatever b holds */
    r = qf_test_find_case(&sum, "zero:");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "degenerate"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "badk:");
    ck_assert_msg(r->verdict == QF_VERDICT_UNSUPPORTED && strstr(r->reason, "A.npy has shape (3, 5)") &&
                      strstr(r->reason, "dimension 1 is 5, not 6"),
                  "%s %s", qf_verdict_name(r->verdict), r->reason);
    r = qf_test_find_case(&sum, "undrawn:");
    ck_assert_msg(r->verdict == QF_VERDICT_UNSUPPORTED && strstr(r->reason, "input c"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/slots");
    TCase *tc = tcase_create("slots");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, per_slot_files);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
