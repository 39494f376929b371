/* t-onednn.c: oneDNN's matmul as a plugin (examples/onednn), through
 * `qualify run --plugin` as a separate process (QF_QUALIFY_BIN) on the
 * suite examples/onednn/onednn.yaml.  oneDNN picks its kernels from the
 * CPU, so CTest runs this program twice (docs/third-party.md "Tests on
 * every CPU"): kernels/onednn natively, asserting only what holds on every
 * x86-64 CPU, and kernels/onednn-avx2 with oneDNN pinned to its AVX2
 * kernels (ONEDNN_MAX_CPU_ISA=AVX2, qf_test_pinned_avx2), asserting also
 * what that path computes.
 *   - gemm.onednn.f32: every case QUALIFIED under its claim (float32
 *     accumulation, any order), no element outside its bound;
 *   - gemm.onednn.s8 (claimed exact): weights |b| <= 63 and <= 64 with
 *     full-range src are QUALIFIED on every path (no int16 pair sum can
 *     saturate, even on the vpmaddubsw path); weights up to 127 are FAILED
 *     with a reason naming the element and the error where oneDNN's int8
 *     path has no VNNI (a CPU without avx512_vnni / avx_vnni, or pinned to
 *     AVX2, which excludes AVX2_VNNI), where it saturates.  With VNNI either
 *     verdict is accepted, but it must match what was measured: QUALIFIED
 *     exactly when the error is 0.
 *   - the M = 1 path under a blocked(320, sequential) claim: on every CPU
 *     each verdict follows its evidence (FAILED exactly when an element is
 *     outside the bound, the reason naming the claimed order); pinned to
 *     AVX2, the path is one FMA chain over K and the refuting inputs show
 *     it.
 * Skipped (77) when the plugin was not built (no oneDNN: QF_ONEDNN_PLUGIN
 * empty) or without QF_QUALIFY_BIN.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *plugin, *srcdir;
static char dir[128];
static int has_vnni;

static int pinned; /* oneDNN pinned to its AVX2 kernels (qf_test_pinned_avx2) */

START_TEST(onednn_verdicts)
{
    char path[512], err[512];
    qf_result *r = NULL;
    size_t n = 0, i, f32 = 0, refute = 0, small_w = 0, big_w = 0, big_failed = 0;
    char args[1024];
    qf_cli_result res;
    int rc;
    snprintf(args, sizeof args, "%s/examples/onednn/onednn.yaml -q -o %s/out --plugin '%s'", srcdir, dir,
             plugin);
    res = qf_cli_run(bin, "run", args);
    /* exit 1 when something FAILED, 0 when all QUALIFIED: checked against
     * the journal below */
    rc = res.rc;
    ck_assert_msg(rc == 0 || rc == 1, "qualify run %s: exit %d: %s", args, rc, res.err);
    qf_cli_result_free(&res);

    snprintf(path, sizeof path, "%s/out/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        ck_assert_msg(c->has_metrics, "%s %s: %s: %s", c->kernel, c->case_id, qf_verdict_name(c->verdict),
                      c->reason);
        ck_assert_ptr_nonnull(strstr(c->reproducer, "--plugin"));
        if (!strcmp(c->kernel, "gemm.onednn.f32")) {
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s: %s: %s", c->case_id,
                          qf_verdict_name(c->verdict), c->reason);
            ck_assert_uint_eq(c->metrics.n_violations, 0);
            ck_assert_msg(c->metrics.max_util <= 1.0, "%s: bound utilization %g", c->case_id,
                          c->metrics.max_util);
            /* the refuting inputs its `any` claim admits (width, ties: docs/refute.md) */
            if (!strncmp(c->input, "refute:", 7))
                refute++;
            else
                f32++;
            continue;
        }
        ck_assert_str_eq(c->kernel, "gemm.onednn.s8");
        if (strstr(c->input, "b=small_int:int_max=63") || strstr(c->input, "b=small_int:int_max=64")) {
            /* |b| <= 64: exact on any path. */
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED && c->metrics.max_abs == 0, "%s: %s: %s",
                          c->case_id, qf_verdict_name(c->verdict), c->reason);
            small_w++;
            continue;
        }
        ck_assert_ptr_nonnull(strstr(c->input, "b=small_int:int_max=127"));
        big_w++;
        /* Whatever the CPU: the verdict says whether the result was exact. */
        if (c->metrics.max_abs == 0) {
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s: exact but %s: %s", c->case_id,
                          qf_verdict_name(c->verdict), c->reason);
            continue;
        }
        ck_assert_msg(c->verdict == QF_VERDICT_FAILED, "%s: error %g but %s", c->case_id, c->metrics.max_abs,
                      qf_verdict_name(c->verdict));
        ck_assert_uint_gt(c->metrics.n_violations, 0);
        /* The reason names the element, its error and the bound. */
        ck_assert_msg(strstr(c->reason, "element (") && strstr(c->reason, "error ") &&
                          strstr(c->reason, "outside the bound derived from the claim"),
                      "%s: reason '%s'", c->case_id, c->reason);
        big_failed++;
    }
    /* f32: (24 + 1) shapes x 4 transposes x 2 inputs; s8: (4 + 1) shapes
     * x 4 transposes per input, 2 inputs each side of |b| = 64. */
    ck_assert_uint_eq(f32, 200);
    ck_assert_uint_gt(refute, 0);
    ck_assert_uint_eq(small_w, 40);
    ck_assert_uint_eq(big_w, 40);
    if (!has_vnni)
        ck_assert_uint_eq(big_failed, big_w);
    ck_assert_int_eq(rc, big_failed > 0);
    fprintf(stderr, "t-onednn (%s): VNNI %s; int8 cases with |b| <= 127: %zu of %zu FAILED\n",
            pinned ? "pinned to AVX2" : "native", has_vnni ? "yes" : "no", big_failed, big_w);
    free(r);
}
END_TEST

/* The M = 1 path under a claim of blocked(320, sequential) (N = 1, K = 1000
 * and 4096).  On every CPU: the normal and outlier inputs stay far inside
 * the blocked bound (QUALIFIED), and every refuting case is FAILED exactly
 * when an element is outside the bound, its reason naming the claimed
 * order.  Pinned to AVX2 (the path measured in docs/third-party.md):
 * refute:stagnation and refute:cancel exceed the bound at both K and name
 * one FMA chain over K.  Natively another path may sum otherwise (oneDNN's
 * AVX-512 M = 1 path keeps refute:cancel at K = 1000 inside the bound). */
START_TEST(onednn_m1_blocked_claim)
{
    char path[512], err[512], args[1024];
    qf_result *r = NULL;
    size_t n = 0, i, refuted = 0, failed = 0;
    qf_cli_result res;
    FILE *f;
    int rc;
    snprintf(path, sizeof path, "%s/m1.yaml", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: onednn-m1\nop: gemm\nkernels: [gemm.onednn.f32]\ndtypes: [float32]\n"
          "shapes: {M: [1], N: [1], K: [1000, 4096]}\n"
          "inputs: [normal, {name: outliers, fraction: 0.05, scale: 50}]\n",
          f);
    fclose(f);
    snprintf(path, sizeof path, "%s/blocked.yaml", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("claim_version: 1\nkernel: gemm.onednn.f32\narith:\n  acc_format: float32\n"
          "  order: blocked(320, sequential)\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "%s/m1.yaml -q -o %s/m1 --plugin '%s' --claim %s", dir, dir, plugin, path);
    res = qf_cli_run(bin, "run", args);
    rc = res.rc;
    ck_assert_msg(rc == 0 || rc == 1, "qualify run %s: exit %d: %s", args, rc, res.err);
    qf_cli_result_free(&res);
    snprintf(path, sizeof path, "%s/m1/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        ck_assert_msg(c->has_metrics, "%s: %s: %s", c->case_id, qf_verdict_name(c->verdict), c->reason);
        if (strncmp(c->input, "refute:", 7)) {
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s: %s", c->case_id, c->reason);
            continue;
        }
        /* every CPU: the verdict is what the evidence says */
        if (c->metrics.n_violations > 0) {
            ck_assert_msg(c->verdict == QF_VERDICT_FAILED, "%s: %zu violations but %s: %s", c->case_id,
                          (size_t)c->metrics.n_violations, qf_verdict_name(c->verdict), c->reason);
            ck_assert_msg(strstr(c->reason, "claims blocked(320, sequential) order; behaves as"), "%s: reason '%s'",
                          c->case_id, c->reason);
            failed++;
        } else {
            ck_assert_msg(c->verdict == QF_VERDICT_QUALIFIED, "%s: inside the bound but %s: %s", c->case_id,
                          qf_verdict_name(c->verdict), c->reason);
        }
        if (!strcmp(c->input, "refute:stagnation") || !strcmp(c->input, "refute:cancel")) {
            /* the AVX2 path: one FMA chain over K, refuted at both K */
            if (pinned) {
                ck_assert_msg(c->verdict == QF_VERDICT_FAILED, "%s: %s", c->case_id, c->reason);
                ck_assert_msg(
                    strstr(c->reason, "claims blocked(320, sequential) order; behaves as one FMA chain over K"),
                    "%s: reason '%s'", c->case_id, c->reason);
            }
            refuted += c->verdict == QF_VERDICT_FAILED;
        }
    }
    if (pinned)
        ck_assert_uint_eq(refuted, 4);
    ck_assert_int_eq(rc, failed > 0);
    fprintf(stderr, "t-onednn (%s): M = 1 under blocked(320, sequential): %zu refuting cases FAILED (%zu of 4 "
            "stagnation/cancel)\n", pinned ? "pinned to AVX2" : "native", failed, refuted);
    free(r);
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    srcdir = qf_test_require_env("QF_SOURCE_DIR");
    plugin = getenv("QF_ONEDNN_PLUGIN");
    if (!plugin || !*plugin) {
        fprintf(stderr, "oneDNN plugin not built (scripts/install-deps installs libdnnl-dev): skipped\n");
        return QF_TEST_SKIP;
    }
    pinned = qf_test_pinned_avx2();
    /* oneDNN's int8 kernels use vpdpbusd (int32 accumulation, no
     * saturation) where the CPU has VNNI and the ISA is not capped below
     * it. */
    has_vnni = !pinned && (qf_test_cpu_flag("avx512_vnni") || qf_test_cpu_flag("avx_vnni"));
    snprintf(dir, sizeof dir, "/tmp/qf-t-onednn-%d", (int)getpid());
    return qf_test_run_in_dir(
        qf_test_suite("kernels/onednn", "onednn", 600, NULL, NULL, 0, NULL, QF_TESTS(onednn_verdicts, onednn_m1_blocked_claim)), dir);
}
