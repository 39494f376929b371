/* t-plugin-fallback.c: 'qualify workload --plugin LIB --gemm K' with a
 * plugin GEMM that passes qf_kernel_check but refuses the workload's call
 * when it runs (examples/sweep-project's kernel takes no transposed B).
 * Before: exit 1 ("kernel path: kernel ... failed"), which the docs reserve
 * for --max-kl / --min-top1.  Now: the GEMMs fall back to the reference
 * rounded to float32, the op list says so and why, exit 0.  A plugin that
 * takes the call (examples/plugin) runs without fallback.
 * Skipped (77) without QF_QUALIFY_BIN, QF_SOURCE_DIR or cc. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

START_TEST(test_refusing_plugin_falls_back)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *src = getenv("QF_SOURCE_DIR"),
               *bdir = getenv("QF_BINARY_DIR");
    char dir[128], cmd[4096], args[1024];
    qf_cli_result r;
    snprintf(dir, sizeof dir, "/tmp/qf-t-wlplug-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "cc -std=c11 -O1 -shared -fPIC -I'%s/qualify' -I'%s/precision' -I'%s/refs' -I'%s/kernels' "
             "-I'%s/kernels/models' -I'%s/generated' '%s/examples/sweep-project/demo_gemm.c' -o '%s/demo.so'",
             src, src, src, src, src, bdir ? bdir : ".", src, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "--seq 4 --plugin %s/demo.so --gemm gemm.demo.halves.f32", dir);
    r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "gemm       fallback: reference correctly rounded to float32") &&
                      strstr(r.out, "gemm.demo.halves.f32"),
                  "%s", r.out);
    qf_cli_result_free(&r);
    /* --max-kl still gates: the fallback path is float32, far inside 1e-6. */
    snprintf(args, sizeof args, "--seq 4 --plugin %s/demo.so --gemm gemm.demo.halves.f32 --max-kl 1e-6", dir);
    r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    if (getenv("QF_EXAMPLE_PLUGIN")) {
        snprintf(args, sizeof args, "--seq 4 --plugin %s --gemm gemm.user.acc4.f32",
                 getenv("QF_EXAMPLE_PLUGIN"));
        r = qf_cli_run(bin, "workload", args);
        ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
        ck_assert_msg(strstr(r.out, "gemm       gemm.user.acc4.f32 (f32); local error"), "%s", r.out);
        qf_cli_result_free(&r);
    }
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    qf_test_require_env("QF_SOURCE_DIR");
    if (system("cc --version >/dev/null 2>&1")) {
        fprintf(stderr, "cc missing: skipped\n");
        return QF_TEST_SKIP;
    }
    return qf_test_main("workload/plugin-fallback", "cli", 300, NULL, NULL,
                        QF_TESTS(test_refusing_plugin_falls_back));
}
