/* t-consumer.c: the installed tree works for a user: install into a
 * temporary prefix, then build and run a small program against it through
 * pkg-config and through find_package(qualify), and run the installed CLI
 * (with a CUDA build: finding its module, lib/libqualify_cuda.so).
 * Skipped (77) in sanitizer builds, whose libraries need the sanitizer
 * runtime in every consumer. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_test.h"

static char prefix[2048], work[4096];

static const char *consumer_c =
    "#include <stdio.h>\n"
    "#include <qf_format.h>\n"
    "int main(void) {\n"
    "    const qf_format *f = qf_format_lookup(\"e4m3\");\n"
    "    unsigned long long c = qf_format_encode(f, 448.0, QF_ROUND_RNE, 0, 0, 0);\n"
    "    printf(\"%s 0x%llX %a\\n\", f->name, c, qf_format_decode(f, c));\n"
    "    return c == 0x7E ? 0 : 1;\n"
    "}\n";

static const char *consumer_cmake = "cmake_minimum_required(VERSION 3.25)\n"
                                    "project(consumer C)\n"
                                    "find_package(qualify REQUIRED)\n"
                                    "add_executable(consumer consumer.c)\n"
                                    "target_link_libraries(consumer PRIVATE qualify::qualify_static)\n";

START_TEST(test_install_and_consume)
{
    const char *bin = getenv("QF_BINARY_DIR"), *cmake = getenv("QF_CMAKE");
    char *tmp;
    ck_assert_msg(bin && cmake, "QF_BINARY_DIR and QF_CMAKE must be set by CTest");
    snprintf(prefix, sizeof prefix, "%s/qf-install-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    tmp = mkdtemp(prefix);
    ck_assert_ptr_nonnull(tmp);
    snprintf(work, sizeof work, "%s/work", prefix);

    {
        char cmd[16384];
        snprintf(cmd, sizeof cmd, "\"%s\" --install \"%s\" --prefix \"%s\" >/dev/null", cmake, bin, prefix);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "\"%s/bin/qualify\" formats --encode e5m2 1e6 | grep -qx 0x7C", prefix);
        ck_assert_msg(system(cmd) == 0, "installed CLI: %s", cmd);
        /* the installed CLI finds its default suite in share/qualify */
        snprintf(cmd, sizeof cmd,
                 "cd / && \"%s/bin/qualify\" run -q -o \"%s/run-out\" && test -s \"%s/run-out/results.json\"",
                 prefix, prefix, prefix);
        ck_assert_msg(system(cmd) == 0, "installed default sweep: %s", cmd);
        /* with a GPU back end: its module is installed next to libqualify
         * and the installed CLI finds it without QF_MODULE_PATH (a GPU
         * case's reason then comes from the runtime, not the loader) */
        snprintf(cmd, sizeof cmd, "\"%s/bin/qualify\" list kernels | grep -q gemm.cublas.f32", prefix);
        if (system(cmd) == 0) {
            snprintf(cmd, sizeof cmd,
                     "cd \"%s\" && test -f lib/libqualify_cuda.so && printf 'suite: m\\ninputs: [normal]\\nseeds: 1\\ngroups:\\n  - name: g\\n"
                     "    op: gemm\\n    kernels: [gemm.cublas.f32]\\n    dtypes: [float32]\\n    shapes: [{M: 16, N: 16, "
                     "K: 16}]\\n' > m.yaml && { env -u QF_MODULE_PATH bin/qualify run m.yaml -q -j 1 -o m-out; "
                     "rc=$?; [ $rc -eq 0 ] || [ $rc -eq 3 ]; } && " /* 3: no device here, nothing ran */
                     "grep -q gemm.cublas.f32 m-out/results.json && "
                     "! grep -q 'libqualify_cuda.so' m-out/results.json",
                     prefix);
            ck_assert_msg(system(cmd) == 0, "installed CUDA module: %s", cmd);
        }
        snprintf(cmd, sizeof cmd, "mkdir -p \"%s\"", work);
        ck_assert_int_eq(system(cmd), 0);
        qf_test_write_text(work, "consumer.c", consumer_c);
        qf_test_write_text(work, "CMakeLists.txt", consumer_cmake);
        /* pkg-config, static linking so the test does not depend on the
         * run-time linker finding the new prefix */
        snprintf(cmd, sizeof cmd,
                 "cd \"%s\" && PKG_CONFIG_PATH=\"%s/lib/pkgconfig\" sh -c "
                 "'cc -std=c11 consumer.c -o pc-consumer $(pkg-config --cflags qualify) "
                 "$(pkg-config --static --libs qualify | sed s/-lqualify/-l:libqualify.a/)' && ./pc-consumer",
                 work, prefix);
        ck_assert_msg(system(cmd) == 0, "pkg-config consumer: %s", cmd);
        snprintf(cmd, sizeof cmd,
                 "cd \"%s\" && \"%s\" -S . -B build -DCMAKE_PREFIX_PATH=\"%s\" >/dev/null && \"%s\" --build "
                 "build >/dev/null "
                 "&& ./build/consumer",
                 work, cmake, prefix, cmake);
        ck_assert_msg(system(cmd) == 0, "find_package consumer: %s", cmd);
        snprintf(cmd, sizeof cmd, "rm -rf \"%s\"", prefix);
        (void)system(cmd);
    }
}
END_TEST

int main(void)
{
    qf_test_skip_if_sanitized("install/consumer");
    return qf_test_main("install/consumer", "consumer", 600, NULL, NULL, QF_TESTS(test_install_and_consume));
}
