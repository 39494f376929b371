/* t-onednn.c: the probe on oneDNN's f32 matmul (examples/onednn, the
 * QF_ONEDNN_PLUGIN of CTest; skipped, exit 77, without it).  oneDNN picks
 * its kernels from the CPU, so CTest runs this twice (docs/third-party.md
 * "Tests on every CPU"):
 *   - probe/onednn, natively: the probe succeeds and every shape whose
 *     elements it replayed all of replays bit for bit from the claim it
 *     wrote (what holds on any CPU: a probe's claim is right where it says
 *     it was checked);
 *   - probe/onednn-avx2, oneDNN pinned to its AVX2 kernels: also what that
 *     path does (docs/third-party.md "Claims written by qualify probe"):
 *     at M = 1 one FMA chain over K (sequential), at larger M another order
 *     (two strided lanes at K = 256 on the machines measured); the order
 *     changes with the shape, and the probe says so.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static int pinned; /* oneDNN pinned to its AVX2 kernels (qf_test_pinned_avx2) */

START_TEST(onednn_f32)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_ONEDNN_PLUGIN");
    char dir[] = "/tmp/qf-dnnl-XXXXXX", args[1600], path[700];
    qf_cli_result res;
    int replayed;
    if (!bin || !*bin)
        return;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/onednn.yaml", dir);
    snprintf(args, sizeof args, "gemm.onednn.f32 --plugin '%s' -o %s", plugin, path);
    res = qf_cli_expect(bin, "probe", args, 0, NULL);
    fprintf(stderr, "%s", res.out);
    ck_assert_msg(strstr(res.out, "order:"), "no order line\n%s", res.out);
    if (pinned) {
        ck_assert_msg(strstr(res.out, "   1 x  8 x  256: all: sequential (8 of 8 replayed)"),
                      "M = 1: one FMA chain\n%s", res.out);
        ck_assert_msg(strstr(res.out, "the order map changes with the shape"), "%s", res.out);
    }
    snprintf(args, sizeof args, "--plugin '%s'", plugin);
    replayed = qf_cli_replay_probed_shapes(bin, "gemm.onednn.f32", args, path, res.out, 3);
    qf_cli_result_free(&res);
    if (pinned)
        ck_assert_int_gt(replayed, 0);
    fprintf(stderr, "t-onednn (%s): %d fully replayed shape(s) replayed bit-exact from the claim\n",
            pinned ? "pinned to AVX2" : "native", replayed);
    unlink(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    const char *plugin = getenv("QF_ONEDNN_PLUGIN");
    Suite *s = suite_create("probe/onednn");
    TCase *tc = tcase_create("onednn");
    if (!plugin || !*plugin || access(plugin, R_OK)) {
        fprintf(stderr, "QF_ONEDNN_PLUGIN not set or unreadable: oneDNN's probe skipped\n");
        return QF_TEST_SKIP;
    }
    pinned = qf_test_pinned_avx2();
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, onednn_f32);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
