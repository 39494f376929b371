/* t-gemm.c: refuting inputs (qualify/qf_refute.h, docs/refute.md) through
 * `qualify run` (QF_QUALIFY_BIN) with claim files:
 *   - gemm.cpu.naive.f32 (one FMA chain) under a claim of blocked(32,
 *     sequential): the normal inputs QUALIFY, refute:stagnation and
 *     refute:cancel FAIL naming one FMA chain over K; under its true
 *     (sequential) claim every pair QUALIFIES, and stagnation is not
 *     planned (nothing tighter to refute);
 *   - the h100.e4m3 model (13 kept bits, truncating alignment) under a claim
 *     of 23 bits: refute:width FAILS naming 13 with truncation; under its
 *     own claim it QUALIFIES;
 *   - gemm.cpu.blocked.f32 (16 strided lanes) under a sequential claim
 *     QUALIFIES (the looser bound), under split(64) at K = 4096 FAILS
 *     naming split(16);
 *   - --no-refute and `refute: false` leave the refuting pairs out.
 * The module alone: predicted powers (sequential claims give stagnation
 * nothing to refute; the designs' values are exact in their formats). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_refute.h"
#include "qf_result.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

static void write_file(const char *name, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* qualify run SUITE [--claim CLAIM] [extra] -o DIR/out (files in DIR); the
 * journal's results. */
static qf_result *run(const char *suite, const char *claim, const char *extra, size_t *n)
{
    char args[2048], path[512], err[512], cl[300] = "";
    qf_result *r = NULL;
    qf_cli_result res;
    if (claim)
        snprintf(cl, sizeof cl, "--claim %s/%s", dir, claim);
    snprintf(args, sizeof args, "%s/%s -q -o %s/out %s %s", dir, suite, dir, cl, extra);
    res = qf_cli_run(bin, "run", args);
    ck_assert_msg(res.rc == 0 || res.rc == 1, "qualify run %s: exit %d: %s", args, res.rc, res.err);
    qf_cli_result_free(&res);
    snprintf(path, sizeof path, "%s/out/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    snprintf(args, sizeof args, "rm -rf '%s/out'", dir);
    ck_assert_int_eq(system(args), 0);
    return r;
}

static const char naive_suite[] = "suite: t-refute-naive\n"
                                  "op: gemm\n"
                                  "kernels: [gemm.cpu.naive.f32]\n"
                                  "dtypes: [float32]\n"
                                  "shapes: {M: [1, 4], N: [8], K: [127, 300]}\n"
                                  "inputs: [normal, {name: outliers, fraction: 0.01, scale: 100}]\n";

static const char naive_claim[] = "claim_version: 1\n"
                                  "kernel: gemm.cpu.naive.f32\n"
                                  "arith:\n"
                                  "  acc_format: float32\n"
                                  "  fma: unfused\n"
                                  "  order: %s\n";

START_TEST(naive_wrong_blocked_claim)
{
    char claim[512];
    size_t n, i, stag = 0, cancel = 0, random_ok = 0;
    qf_result *r;
    write_file("naive.yaml", naive_suite);
    snprintf(claim, sizeof claim, naive_claim, "blocked(32, sequential)");
    write_file("blocked.yaml", claim);
    r = run("naive.yaml", "blocked.yaml", "", &n);
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        if (strncmp(c->input, "refute:", 7)) {
            /* random inputs cannot refute the wrong order: the point */
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s: %s", c->case_id, c->reason);
            random_ok++;
        } else if (!strcmp(c->input, "refute:stagnation") || !strcmp(c->input, "refute:cancel")) {
            ck_assert_msg(c->verdict == QF_VERDICT_FAILED, "%s: %s: %s", c->case_id, qf_verdict_name(c->verdict),
                          c->reason);
            ck_assert_msg(strstr(c->reason, "claims blocked(32, sequential) order; behaves as one FMA chain over K"),
                          "%s: reason '%s'", c->case_id, c->reason);
            ck_assert_msg(strstr(c->reason, "> bound"), "%s", c->reason);
            stag += c->input[7] == 's';
            cancel += c->input[7] == 'c';
        }
    }
    ck_assert_uint_eq(random_ok, 8);
    ck_assert_uint_eq(stag, 4);
    ck_assert_uint_eq(cancel, 4);
    free(r);
}
END_TEST

START_TEST(naive_true_claim)
{
    char claim[512];
    size_t n, i, refute = 0, width = 0, ties = 0;
    qf_result *r;
    write_file("naive.yaml", naive_suite);
    snprintf(claim, sizeof claim, naive_claim, "sequential");
    write_file("seq.yaml", claim);
    r = run("naive.yaml", "seq.yaml", "", &n);
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s %s: %s", c->case_id, qf_verdict_name(c->verdict),
                      c->reason);
        if (!strncmp(c->input, "refute:", 7)) {
            refute++;
            width += !strcmp(c->input, "refute:width");
            ties += !strcmp(c->input, "refute:ties");
            /* the claim's own bound is not tighter than one chain: nothing to refute */
            ck_assert_msg(strcmp(c->input, "refute:stagnation") && strcmp(c->input, "refute:cancel"), "%s",
                          c->case_id);
        }
    }
    ck_assert_uint_eq(width, 4);
    ck_assert_uint_eq(ties, 4);
    ck_assert_uint_eq(refute, 8);
    free(r);
    /* --no-refute: only the 8 random pairs */
    r = run("naive.yaml", "seq.yaml", "--no-refute", &n);
    ck_assert_uint_eq(n, 8);
    free(r);
}
END_TEST

static const char model_suite[] = "suite: t-refute-model\n"
                                  "op: gemm\n"
                                  "kernels: [gemm.model.h100.e4m3]\n"
                                  "dtypes: [{a: float8_e4m3fn, b: float8_e4m3fn, out: float32}]\n"
                                  "shapes: {M: [4], N: [8], K: [16, 256]}\n"
                                  "inputs: [normal]\n";

START_TEST(model_width)
{
    size_t n, i, failed = 0, own = 0;
    qf_result *r;
    write_file("model.yaml", model_suite);
    write_file("wide.yaml", "claim_version: 1\n"
                            "kernel: gemm.model.h100.e4m3\n"
                            "arith:\n"
                            "  acc_format: float32\n"
                            "  acc_frac_bits: 23\n"
                            "  block_fma: 32\n"
                            "  acc_round: rtz\n"
                            "  align_truncates: true\n");
    r = run("model.yaml", "wide.yaml", "", &n);
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        if (strcmp(c->input, "refute:width"))
            continue;
        ck_assert_msg(c->verdict == QF_VERDICT_FAILED, "%s: %s", c->case_id, c->reason);
        ck_assert_msg(strstr(c->reason, "claims 23 kept fraction bits (truncation); behaves as 13 with truncation"),
                      "%s: reason '%s'", c->case_id, c->reason);
        failed++;
    }
    ck_assert_uint_eq(failed, 2);
    free(r);
    r = run("model.yaml", NULL, "", &n);
    for (i = 0; i < n; i++) {
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s", r[i].case_id, r[i].reason);
        own += !strcmp(r[i].input, "refute:width");
    }
    ck_assert_uint_eq(own, 2);
    free(r);
}
END_TEST

START_TEST(blocked_kernel)
{
    size_t n, i, stag = 0;
    qf_result *r;
    write_file("blk.yaml", "suite: t-refute-blocked\n"
                           "op: gemm\n"
                           "kernels: [gemm.cpu.blocked.f32]\n"
                           "dtypes: [float32]\n"
                           "shapes: {M: [1], N: [2], K: [300, 4096]}\n"
                           "inputs: [normal]\n");
    write_file("blk-seq.yaml", "claim_version: 1\nkernel: gemm.cpu.blocked.f32\narith:\n  order: sequential\n");
    write_file("blk-64.yaml", "claim_version: 1\nkernel: gemm.cpu.blocked.f32\narith:\n  order: split(64)\n");
    /* sequential's bound is looser than split(16)'s: every pair QUALIFIED */
    r = run("blk.yaml", "blk-seq.yaml", "", &n);
    for (i = 0; i < n; i++)
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s", r[i].case_id, r[i].reason);
    free(r);
    /* its own claim, split(16): QUALIFIED, stagnation included */
    r = run("blk.yaml", NULL, "", &n);
    for (i = 0; i < n; i++) {
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s", r[i].case_id, r[i].reason);
        stag += !strcmp(r[i].input, "refute:stagnation");
    }
    ck_assert_uint_eq(stag, 2);
    free(r);
    /* more lanes than it has: at K = 4096 the stagnation chain of its lane 0
     * (256 terms) is twice split(64)'s bound */
    r = run("blk.yaml", "blk-64.yaml", "", &n);
    stag = 0;
    for (i = 0; i < n; i++) {
        if (strcmp(r[i].input, "refute:stagnation") || !strstr(r[i].case_id, "K=4096"))
            continue;
        ck_assert_msg(r[i].verdict == QF_VERDICT_FAILED, "%s: %s", r[i].case_id, r[i].reason);
        ck_assert_msg(strstr(r[i].reason, "claims split(64) order; behaves as split(16)"), "reason '%s'",
                      r[i].reason);
        stag++;
    }
    ck_assert_uint_eq(stag, 1);
    free(r);
}
END_TEST

START_TEST(suite_switch)
{
    size_t n;
    qf_result *r;
    write_file("off.yaml", "suite: t-refute-off\n"
                           "op: gemm\n"
                           "kernels: [gemm.cpu.naive.f32]\n"
                           "dtypes: [float32]\n"
                           "shapes: {M: [4], N: [8], K: [300]}\n"
                           "refute: false\n");
    r = run("off.yaml", NULL, "", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(r[0].input, "normal");
    free(r);
}
END_TEST

/* The module: powers, and the designs' values exact in their formats. */
START_TEST(module_power)
{
    qf_arith_claim c = qf_arith_claim_default();
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *e4 = qf_format_get(QF_FLOAT8_E4M3FN);
    qf_refute_spec s = {&c, f32, f32, f32, 300, QF_REFUTE_STAGNATION};
    char why[256];
    double a[4 * 300], b[300 * 8];
    size_t i;
    /* sequential: the stagnation chain reaches its own bound, not more */
    ck_assert(qf_refute_power(&s, why, sizeof why) == 0);
    ck_assert_ptr_nonnull(strstr(why, "refutes nothing"));
    c.sum_order = QF_SUM_BLOCKED;
    c.sum_block = 32;
    c.sum_inner = QF_SUM_SEQUENTIAL;
    /* (K - 1) / (B + K / B - 1) = 299 / 41 */
    ck_assert_double_gt(qf_refute_power(&s, why, sizeof why), 7);
    ck_assert_double_lt(qf_refute_power(&s, why, sizeof why), 7.4);
    /* integer accumulators refute nothing */
    c.acc_kind = QF_ACC_INT32;
    ck_assert(qf_refute_power(&s, why, sizeof why) == 0);
    /* width on e4m3 x e4m3: every value exact in e4m3 */
    c = qf_arith_claim_default();
    c.acc_frac_bits = 23;
    c.block_fma = 32;
    c.align_truncates = 1;
    c.acc_round = QF_ROUND_RTZ;
    s.fa = s.fb = e4;
    s.k = 300;
    s.family = QF_REFUTE_WIDTH;
    ck_assert_int_eq(qf_refute_gemm(&s, 4, 8, a, b, why, sizeof why), QF_OK);
    for (i = 0; i < 4 * 300; i++)
        ck_assert(qf_format_decode(e4, qf_format_encode(e4, a[i], QF_ROUND_RNE, 0, 0, 0)) == a[i]);
    for (i = 0; i < 300 * 8; i++)
        ck_assert(qf_format_decode(e4, qf_format_encode(e4, b[i], QF_ROUND_RNE, 0, 0, 0)) == b[i]);
    /* rungs: column j's small terms are 2^j times column 0's */
    ck_assert(b[1 * 8 + 3] == 8 * b[1 * 8 + 0]);
    /* ties refute only a claim of rounding to nearest */
    s.family = QF_REFUTE_TIES;
    ck_assert(qf_refute_power(&s, why, sizeof why) == 0);
    ck_assert_ptr_nonnull(strstr(why, "toward zero"));
    ck_assert_int_eq(qf_refute_family_lookup("cancel"), QF_REFUTE_CANCEL);
    ck_assert_int_eq(qf_refute_family_lookup("nope"), -1);
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-refute-%d", (int)getpid());
    return qf_test_run_in_dir(qf_test_suite("refute/gemm", "gemm", 600, NULL, NULL, 0, NULL,
                                            QF_TESTS(module_power, naive_wrong_blocked_claim, naive_true_claim,
                                                     model_width, blocked_kernel, suite_switch)),
                              dir);
}
