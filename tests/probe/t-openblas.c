/* t-openblas.c: the probe on OpenBLAS's sgemm through the cblas adapter
 * (Debian's libopenblas, DYNAMIC_ARCH: it picks its kernels from the CPU).
 * CTest runs this twice (docs/third-party.md "Tests on every CPU"):
 *   - probe/openblas, natively: the probe succeeds and names an order line,
 *     and every shape whose elements it replayed all of replays bit for bit
 *     from the claim it wrote, whatever kernel this CPU got;
 *   - probe/openblas-avx2, OpenBLAS pinned to its Haswell (AVX2) kernels
 *     (OPENBLAS_CORETYPE=Haswell, qf_test_pinned_avx2): also what that path
 *     does (docs/probe.md, docs/third-party.md): the 32-row call at
 *     K = 256 is replayed whole (256 of 256) and a probe at --k 256 names
 *     its order (not `any`).
 * Skipped (77) without libopenblas or QF_QUALIFY_BIN.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static const char *openblas, *bin;
static int pinned; /* OpenBLAS pinned to its Haswell kernels */

START_TEST(sgemm_claim_replays)
{
    char dir[] = "/tmp/qf-openblas-XXXXXX", src[600], path[700], args[1600];
    qf_cli_result res;
    int replayed;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(src, sizeof src, "--adapter 'cblas:%s'", openblas);
    snprintf(path, sizeof path, "%s/openblas.yaml", dir);
    snprintf(args, sizeof args, "gemm.cblas.openblas.f32 %s -o %s", src, path);
    res = qf_cli_expect(bin, "probe", args, 0, NULL);
    fprintf(stderr, "%s", res.out);
    ck_assert_msg(strstr(res.out, "order:"), "no order line\n%s", res.out);
    if (pinned) /* the 32-row call: every element replayed from the element map */
        ck_assert_msg(strstr(res.out, "32 x  8 x  256: ") && strstr(res.out, "(256 of 256 replayed)"), "%s", res.out);
    replayed = qf_cli_replay_probed_shapes(bin, "gemm.cblas.openblas.f32", src, path, res.out, 3);
    qf_cli_result_free(&res);
    if (pinned)
        ck_assert_int_gt(replayed, 0);
    fprintf(stderr, "t-openblas (%s): %d fully replayed shape(s) replayed bit-exact from the claim\n",
            pinned ? "pinned to Haswell" : "native", replayed);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* At --k 256 the Haswell path's order is one the probe names; natively the
 * probe must still succeed and print an order, `any` allowed. */
START_TEST(sgemm_order_named)
{
    qf_cli_result res = qf_cli_expectf(bin, "probe", 0, NULL, "gemm.cblas.openblas.f32 --adapter 'cblas:%s' --k 256",
                                       openblas);
    fprintf(stderr, "%s", res.out);
    ck_assert_msg(strstr(res.out, "order:"), "%s", res.out);
    if (pinned)
        ck_assert_msg(!strstr(res.out, "order:            any"), "%s", res.out);
    qf_cli_result_free(&res);
}
END_TEST

int main(void)
{
    bin = getenv("QF_QUALIFY_BIN");
    openblas = qf_test_openblas();
    if (!bin || !*bin || !openblas) {
        fprintf(stderr, "%s: skipped\n",
                !openblas ? "OpenBLAS not found (scripts/install-deps installs libopenblas-dev)" : "no QF_QUALIFY_BIN");
        return QF_TEST_SKIP;
    }
    pinned = qf_test_pinned_avx2();
    return qf_test_main("probe/openblas", "openblas", 900, NULL, NULL,
                        QF_TESTS(sgemm_claim_replays, sgemm_order_named));
}
