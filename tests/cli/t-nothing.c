/* t-nothing.c: a sweep that checks nothing is never a pass (docs/cli.md
 * "Exit codes", "Nothing to run"; docs/verdicts.md "A sweep where nothing
 * ran").
 *   - A claim file (kernel: '*', an accumulator no kernel has) that takes
 *     every pair from the kernels a suite plans is exit 2 before anything
 *     runs, naming the kernel, the claim file and the accumulators; before,
 *     every pair was UNSUPPORTED and the sweep exited 0, "passing".  A
 *     claim that only reaches kernels which had no pair to run anyway
 *     (gemm.cpu.* with float32 cases) is no error.
 *   - A --kernel or --case filter after which no planned pair can run is
 *     exit 2 naming the filter and the kernels; one that leaves some is
 *     not.
 *   - A sweep where every pair is UNSUPPORTED for another reason (a suite
 *     pairing a kernel with dtypes it has no tuple for, with no filter or
 *     claim) runs, and exits 3 with "nothing ran" on stderr and in the
 *     summary line, "NOTHING RAN" in report.md; `qualify show` says the
 *     same (exit 3); as a shard it exits 0 (the merge judges) and `qualify
 *     merge` of it exits 3. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static char dir[128];
static const char *bin;

static const char *suite_f32 = "suite: f32\n"
                               "refute: false\n"
                               "inputs: [normal]\n"
                               "seeds: 1\n"
                               "op: gemm\n"
                               "kernels: [gemm.cpu.*]\n"
                               "dtypes: [float32]\n"
                               "shapes: {M: [4], N: [5], K: [7, 9]}\n";

/* gemm.cpu.fp8 has no float32 tuple: every pair UNSUPPORTED. */
static const char *suite_none = "suite: none\n"
                                "refute: false\n"
                                "inputs: [normal]\n"
                                "seeds: 1\n"
                                "op: gemm\n"
                                "kernels: [gemm.cpu.fp8]\n"
                                "dtypes: [float32]\n"
                                "shapes: {M: [4], N: [5], K: [7, 9]}\n";

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

START_TEST(claim_leaving_nothing_is_an_error)
{
    qf_cli_result r;
    qf_test_write_text(dir, "f32.yaml", suite_f32);
    qf_test_write_text(dir, "fp8acc.yaml", "claim_version: 1\nkernel: '*'\narith:\n  acc_format: float8_e4m3fn\n");
    r = qf_cli_expectf(bin, "run", 2, "kernel gemm.cpu.", "'%s/f32.yaml' -q -o '%s/o1' --claim '%s/fp8acc.yaml'",
                       dir, dir, dir);
    ck_assert_msg(strstr(r.err, "fp8acc.yaml leaves it no pair to run") && strstr(r.err, "float8_e4m3fn") &&
                      strstr(r.err, "accumulator float32") && strstr(r.err, "with its own claim it would run 2"),
                  "%s", r.err);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(!exists(qf_test_path(dir, "o1/results.json")), "results written for a refused sweep");
    qf_cli_result_free(&r);
    /* the same claim from the suite's claims: */
    {
        char text[1024];
        snprintf(text, sizeof text, "claims: [fp8acc.yaml]\n%s", suite_f32);
        qf_test_write_text(dir, "f32-claimed.yaml", text);
    }
    r = qf_cli_expectf(bin, "run", 2, "leaves it no pair to run", "'%s/f32-claimed.yaml' -q -o '%s/o2'", dir, dir);
    qf_cli_result_free(&r);
    /* a float32 claim for every kernel: the float32 kernels run; the fp8
     * and int8 kernels had no float32 pair before it either */
    qf_test_write_text(dir, "f32acc.yaml", "claim_version: 1\nkernel: '*'\narith:\n  order: any\n");
    r = qf_cli_expectf(bin, "run", 0, NULL, "'%s/f32.yaml' -q -o '%s/o3' --claim '%s/f32acc.yaml'", dir, dir, dir);
    qf_cli_result_free(&r);
}
END_TEST

START_TEST(filter_leaving_nothing_is_an_error)
{
    qf_cli_result r;
    qf_test_write_text(dir, "f32.yaml", suite_f32);
    r = qf_cli_expectf(bin, "run", 2, "--kernel gemm.cpu.fp8 leaves no pair to run: gemm.cpu.fp8 claims no dtype tuple",
                       "'%s/f32.yaml' -q -o '%s/o1' --kernel gemm.cpu.fp8", dir, dir);
    ck_assert_str_eq(r.out, "");
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "run", 2, "--kernel gemm.cpu.int8 and --case gemm/M=4,N=5,K=7",
                       "'%s/f32.yaml' -q -o '%s/o2' --kernel gemm.cpu.int8 --case "
                       "'gemm/M=4,N=5,K=7/f32.f32.f32.f32/normal/seed=0'",
                       dir, dir);
    qf_cli_result_free(&r);
    /* a glob that leaves some pairs: the others are UNSUPPORTED, as always */
    r = qf_cli_expectf(bin, "run", 0, NULL, "'%s/f32.yaml' -q -o '%s/o3' --kernel 'gemm.cpu.*' --case "
                                            "'gemm/M=4,N=5,K=7/f32.f32.f32.f32/normal/seed=0'",
                       dir, dir);
    qf_cli_result_free(&r);
}
END_TEST

START_TEST(nothing_ran_is_not_a_pass)
{
    qf_cli_result r;
    char *md;
    qf_test_write_text(dir, "none.yaml", suite_none);
    r = qf_cli_expectf(bin, "run", 3, "qualify run: nothing ran: all 2 pair(s) UNSUPPORTED",
                       "'%s/none.yaml' -o '%s/o1'", dir, dir);
    ck_assert_msg(strstr(r.out, "none: 2 case(s): 2 UNSUPPORTED; nothing ran: not a pass\n"), "%s", r.out);
    qf_cli_result_free(&r);
    md = qf_test_slurp(qf_test_path(dir, "o1/report.md"), NULL);
    ck_assert_msg(strstr(md, "2 cases: 2 UNSUPPORTED, NOTHING RAN (not a pass") && !strstr(md, "passing"), "%s",
                  md);
    free(md);
    r = qf_cli_expectf(bin, "show", 3, "qualify show: nothing ran", "'%s/o1/results.json'", dir);
    ck_assert_msg(strstr(r.out, "NOTHING RAN"), "%s", r.out);
    qf_cli_result_free(&r);
    /* -q keeps the message: it is no progress output */
    r = qf_cli_expectf(bin, "run", 3, "nothing ran", "'%s/none.yaml' -q -o '%s/o2'", dir, dir);
    qf_cli_result_free(&r);
    /* a shard exits as its pairs say; the merge judges the sweep */
    r = qf_cli_expectf(bin, "run", 0, "the merge judges the sweep", "'%s/none.yaml' -q -o '%s/s0' --shard 0/1",
                       dir, dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "merge", 3, "qualify merge: nothing ran", "'%s/s0' -q -o '%s/merged'", dir, dir);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli/nothing");
    TCase *tc = tcase_create("nothing");
    bin = getenv("QF_QUALIFY_BIN");
    if (!bin)
        return 77;
    snprintf(dir, sizeof dir, "/tmp/qf-t-nothing-%d", (int)getpid());
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, claim_leaving_nothing_is_an_error);
    tcase_add_test(tc, filter_leaving_nothing_is_an_error);
    tcase_add_test(tc, nothing_ran_is_not_a_pass);
    suite_add_tcase(s, tc);
    return qf_test_run_in_dir(s, dir);
}
