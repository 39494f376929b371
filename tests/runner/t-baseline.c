/* t-baseline.c: a suite policy `baseline: KERNEL, baseline_factor: M` runs
 * the baseline on the same inputs (its own isolated child) and compares
 * errors against the same reference (qf_verdict: max abs error <= M x the
 * baseline's, FlashAttention's rule).  Test-only float16 GEMMs that all
 * claim a float16 accumulator: one accumulating in binary64 (rounds once),
 * the float32-accumulating baseline, and one that really accumulates in
 * float16 (conformant with its claim, but far worse than the baseline):
 * QUALIFIED, QUALIFIED, MARGINAL.  A baseline that crashes makes the
 * comparison MISTRUSTED; one that is not registered UNSUPPORTED. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_test.h"

enum { ACC64, ACC32, ACC16, CRASH };

static qf_status run_gemm(void *ctx, const qf_kernel_call *call)
{
    int what = (int)(intptr_t)ctx;
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_format *h = qf_format_get(QF_FLOAT16), *f = qf_format_get(QF_FLOAT32);
    const uint16_t *a = call->in[0].data, *b = call->in[1].data;
    uint16_t *d = call->out[0].data;
    size_t i, j, l, m = g->m, n = g->n, k = g->k;
    if (what == CRASH)
        raise(SIGSEGV);
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0;
            for (l = 0; l < k; l++) {
                /* float16 products are exact in binary64 and float32 */
                double pr = qf_format_decode(h, a[i * k + l]) * qf_format_decode(h, b[l * n + j]);
                s += pr;
                if (what == ACC32)
                    s = qf_format_decode(f, qf_format_encode(f, s, QF_ROUND_RNE, 0, 0, 0));
                else if (what == ACC16)
                    s = qf_format_decode(h, qf_format_encode(h, s, QF_ROUND_RNE, 0, 0, 0));
            }
            d[i * n + j] = (uint16_t)qf_format_encode(h, s, QF_ROUND_RNE, 0, 0, 0);
        }
    return QF_OK;
}

static const qf_dtype_tuple *tuple(void)
{
    static qf_dtype_tuple t[1];
    t[0].name = "f16_f16acc";
    t[0].in[0] = t[0].in[1] = t[0].in[2] = QF_FLOAT16;
    t[0].out[0] = QF_FLOAT16;
    t[0].arith = qf_arith_claim_default();
    t[0].arith.acc_format = QF_FLOAT16;
    return t;
}

static const char *const names[] = {"gemm.test.acc64", "gemm.test.acc32", "gemm.test.acc16",
                                    "gemm.test.crash"};

static qf_registry *test_registry(void)
{
    qf_registry *r = NULL;
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        qf_kernel k;
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = sizeof k;
        k.name = names[i];
        k.op = QF_OP_GEMM;
        k.kind = i == ACC16 || i == CRASH ? QF_KERNEL_KNOWN_BAD : QF_KERNEL_REFERENCE;
        k.description = "test kernel";
        k.backend = "cpu";
        k.archs = "cpu";
        k.dtypes = tuple();
        k.n_dtypes = 1;
        k.run = run_gemm;
        k.user = (void *)(intptr_t)i;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    return r;
}

static const qf_result *find(const qf_runner_summary *s, const char *group, const char *kernel)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        if (!strcmp(s->results[i].kernel, kernel) && !strncmp(s->results[i].case_id, group, strlen(group)))
            return &s->results[i];
    ck_abort_msg("no result for %s %s", group, kernel);
    return NULL;
}

START_TEST(baseline_policy)
{
    char suite_path[128], err[512];
    FILE *f;
    qf_suite *suite = NULL;
    qf_registry *reg = test_registry();
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    const qf_result *r;
    snprintf(suite_path, sizeof suite_path, "/tmp/qf-t-baseline-%d.yaml", (int)getpid());
    f = fopen(suite_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: baseline\n"
          "refute: false\n" /* the pair counts below are of these inputs alone (docs/refute.md) */
          "groups:\n"
          "  - name: vs32\n"
          "    op: gemm\n"
          "    kernels: [gemm.test.acc64, gemm.test.acc32, gemm.test.acc16]\n"
          "    dtypes: [{a: float16, b: float16, acc: float16, out: float16}]\n"
          "    shapes: {M: [8], N: [12], K: [256]}\n"
          "    policy: {baseline: gemm.test.acc32, baseline_factor: 2}\n"
          "  - name: rms\n"
          "    op: gemm\n"
          "    kernels: [gemm.test.acc64, gemm.test.acc16]\n"
          "    dtypes: [{a: float16, b: float16, acc: float16, out: float16}]\n"
          "    shapes: {M: [8], N: [12], K: [256]}\n"
          "    policy: {baseline: gemm.test.acc32, baseline_factor: 2, baseline_metric: rms}\n"
          "  - name: crash\n"
          "    op: gemm\n"
          "    kernels: [gemm.test.acc64, gemm.test.acc16]\n"
          "    dtypes: [{a: float16, b: float16, acc: float16, out: float16}]\n"
          "    shapes: {M: [4], N: [4], K: [64]}\n"
          "    policy: {baseline: gemm.test.crash}\n"
          "  - name: missing\n"
          "    op: gemm\n"
          "    kernels: [gemm.test.acc64]\n"
          "    dtypes: [{a: float16, b: float16, acc: float16, out: float16}]\n"
          "    shapes: {M: [4], N: [4], K: [64]}\n"
          "    policy: {baseline: gemm.test.nosuch}\n",
          f);
    fclose(f);
    ck_assert_msg(qf_suite_load(suite_path, &suite, err, sizeof err) == QF_OK, "%s", err);
    o.jobs = 2;
    o.timeout_s = 10.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, &sum, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(sum.n, 8);

    r = find(&sum, "vs32", "gemm.test.acc64");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "acc64: %s %s", qf_verdict_name(r->verdict), r->reason);
    r = find(&sum, "vs32", "gemm.test.acc32");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "acc32: %s %s", qf_verdict_name(r->verdict), r->reason);
    r = find(&sum, "vs32", "gemm.test.acc16");
    ck_assert_msg(r->verdict == QF_VERDICT_MARGINAL && strstr(r->reason, "baseline"), "acc16: %s %s",
                  qf_verdict_name(r->verdict), r->reason);

    /* torch._dynamo's rule: RMSE <= 2 x the baseline's RMSE (+ tol 0). */
    r = find(&sum, "rms", "gemm.test.acc64");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "rms acc64: %s %s", qf_verdict_name(r->verdict),
                  r->reason);
    r = find(&sum, "rms", "gemm.test.acc16");
    ck_assert_msg(r->verdict == QF_VERDICT_MARGINAL && strstr(r->reason, "baseline"), "rms acc16: %s %s",
                  qf_verdict_name(r->verdict), r->reason);

    /* A baseline that crashes: the comparison is doubtful, not the kernel. */
    r = find(&sum, "crash", "gemm.test.acc64");
    ck_assert_msg(r->verdict == QF_VERDICT_MISTRUSTED && strstr(r->reason, "gemm.test.crash") &&
                      strstr(r->reason, "signal 11"),
                  "crash baseline: %s %s", qf_verdict_name(r->verdict), r->reason);
    r = find(&sum, "missing", "gemm.test.acc64");
    ck_assert_msg(r->verdict == QF_VERDICT_UNSUPPORTED && strstr(r->reason, "gemm.test.nosuch"),
                  "missing baseline: %s %s", qf_verdict_name(r->verdict), r->reason);

    qf_runner_summary_free(&sum);
    qf_suite_free(suite);
    qf_registry_free(reg);
    remove(suite_path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner-baseline");
    TCase *tc = tcase_create("baseline");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, baseline_policy);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
