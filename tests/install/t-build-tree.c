/* t-build-tree.c: a plugin and a consumer built against qualify's build
 * tree, not installed: BUILD/include/qualify holds every public header,
 * BUILD/qualify-uninstalled.pc serves pkg-config (which prefers it to
 * qualify.pc when BUILD is on PKG_CONFIG_PATH) and BUILD/qualifyConfig.cmake
 * serves find_package(qualify) with qualify_DIR=BUILD.  Each way builds the
 * example plugin with -z defs and a consumer that loads it through
 * libqualify and runs its kernel.
 * Skipped (77) in sanitizer builds, like install/consumer: the consumers
 * would need the sanitizer runtime. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_test.h"

/* Loads the plugin named by argv[1] and runs its kernel on a 1x1x2 GEMM. */
static const char *consumer_c =
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#include <qf_kernel.h>\n"
    "int main(int argc, char **argv) {\n"
    "    qf_registry *r; const qf_kernel *k; qf_kernel_call call; qf_op_desc op;\n"
    "    qf_tensor in[3], out[1]; float a[2] = {1.5f, 2.0f}, b[2] = {4.0f, 0.25f}, d = 0;\n"
    "    int64_t sa[2] = {1, 2}, sb[2] = {2, 1}, sd[2] = {1, 1};\n"
    "    if (argc < 2 || qf_registry_create(&r) != QF_OK) return 2;\n"
    "    if (qf_registry_load_plugin(r, argv[1]) != QF_OK) { puts(qf_registry_error(r)); return 3; }\n"
    "    k = qf_registry_find(r, \"gemm.user.acc4.f32\");\n"
    "    if (!k) return 4;\n"
    "    qf_tensor_init(&in[0], QF_FLOAT32, 2, sa); qf_tensor_init(&in[1], QF_FLOAT32, 2, sb);\n"
    "    qf_tensor_init(&in[2], QF_FLOAT32, 2, sd); qf_tensor_init(&out[0], QF_FLOAT32, 2, sd);\n"
    "    in[0].data = a; in[1].data = b; out[0].data = &d;\n"
    "    memset(&op, 0, sizeof op); op.op = QF_OP_GEMM;\n"
    "    op.u.gemm.m = 1; op.u.gemm.n = 1; op.u.gemm.k = 2; op.u.gemm.alpha = 1;\n"
    "    memset(&call, 0, sizeof call); call.abi_version = QF_KERNEL_ABI_VERSION;\n"
    "    call.kernel = k; call.dtype = &k->dtypes[0]; call.op = &op; call.in = in; call.out = out;\n"
    "    if (k->run(k->user, &call) != QF_OK) return 5;\n"
    "    printf(\"d = %g\\n\", d);\n"
    "    qf_registry_free(r);\n"
    "    return d == 6.5f ? 0 : 6;\n"
    "}\n";

static const char *project_cmake = "cmake_minimum_required(VERSION 3.25)\n"
                                   "project(bt C)\n"
                                   "set(CMAKE_C_STANDARD 11)\n"
                                   "find_package(qualify REQUIRED)\n"
                                   "add_library(plugin MODULE mygemm.c)\n"
                                   "target_link_libraries(plugin PRIVATE qualify::headers)\n"
                                   "target_link_options(plugin PRIVATE LINKER:-z,defs)\n"
                                   "set_target_properties(plugin PROPERTIES C_VISIBILITY_PRESET hidden)\n"
                                   "add_executable(consumer consumer.c)\n"
                                   "target_link_libraries(consumer PRIVATE qualify::qualify_static)\n";

static char dir[4096];
static const char *bin, *src, *cmake; /* from CTest */

static void sh(const char *what, const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "%s: %s", what, cmd);
}

START_TEST(test_pkg_config)
{
    /* qualify-uninstalled.pc is the one found, and its paths exist */
    sh("pkg-config picks qualify-uninstalled.pc",
       "test \"$(PKG_CONFIG_PATH='%s' pkg-config --variable=includedir qualify)\" = '%s/include/qualify' && "
       "test -f '%s/include/qualify/qf_block.h' && test -x \"$(PKG_CONFIG_PATH='%s' pkg-config "
       "--variable=qualify qualify)\"",
       bin, bin, bin, bin);
    sh("pkg-config plugin (-z defs) and consumer",
       "cd '%s' && export PKG_CONFIG_PATH='%s' && "
       "cc -std=c11 -shared -fPIC -fvisibility=hidden -Wl,-z,defs '%s/examples/plugin/mygemm.c' -o libpc.so "
       "$(pkg-config --cflags qualify) && "
       "cc -std=c11 consumer.c -o pc-consumer $(pkg-config --cflags qualify) "
       "$(pkg-config --static --libs qualify | sed s/-lqualify/-l:libqualify.a/) && ./pc-consumer ./libpc.so "
       "&& "
       "\"$(pkg-config --variable=qualify qualify)\" list kernels --plugin ./libpc.so | grep -q "
       "gemm.user.acc4.f32",
       dir, bin, src);
}
END_TEST

START_TEST(test_find_package)
{
    sh("find_package(qualify) with qualify_DIR=BUILD",
       "cd '%s' && '%s' -S . -B build -Dqualify_DIR='%s' >cmake.log 2>&1 && '%s' --build build >>cmake.log "
       "2>&1 && "
       "./build/consumer \"$PWD/build/libplugin.so\"",
       dir, cmake, bin, cmake);
    sh("find_package(qualify) with CMAKE_PREFIX_PATH=BUILD",
       "cd '%s' && '%s' -S . -B build2 -DCMAKE_PREFIX_PATH='%s' >cmake2.log 2>&1 && '%s' --build build2 "
       ">>cmake2.log 2>&1 && ./build2/consumer \"$PWD/build2/libplugin.so\"",
       dir, cmake, bin, cmake);
}
END_TEST

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-build-tree");
    qf_test_write_text(dir, "consumer.c", consumer_c);
    qf_test_write_text(dir, "CMakeLists.txt", project_cmake);
    sh("copy the plugin", "cp '%s/examples/plugin/mygemm.c' '%s/'", src, dir);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

int main(void)
{
    Suite *s;
    TCase *tc;
    qf_test_skip_if_sanitized("install/build-tree");
    bin = qf_test_require_env("QF_BINARY_DIR");
    src = qf_test_require_env("QF_SOURCE_DIR");
    cmake = qf_test_require_env("QF_CMAKE");
    if (system("pkg-config --version >/dev/null 2>&1") || system("cc --version >/dev/null 2>&1")) {
        printf("SKIP install/build-tree: needs pkg-config and cc\n");
        return QF_TEST_SKIP;
    }
    s = suite_create("install/build-tree");
    tc = tcase_create("build-tree");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_pkg_config);
    tcase_add_test(tc, test_find_package);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
