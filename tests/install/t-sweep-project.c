/* t-sweep-project.c: examples/sweep-project against an installed tree:
 * install into a temporary prefix, then
 *   - CMake: find_package(qualify) + qualify_add_sweep; the registered
 *     CTest test passes with the good kernel and fails with -DDEMO_BROKEN;
 *   - Makefile + pkg-config: sweep, qualify enable, and a dispatcher that
 *     links libqualify_guard (pkg-config qualify-guard) and the generated
 *     table, whose decisions it checks.
 * The same again against the build tree, not installed: find_package with
 * CMAKE_PREFIX_PATH=BUILD and pkg-config with PKG_CONFIG_PATH=BUILD
 * (qualify-uninstalled.pc).
 * Skipped (77) in sanitizer builds (consumers would need the sanitizer
 * runtime), like install/consumer. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_test.h"

static char prefix[2048];

static int run(const char *cmd)
{
    int st = system(cmd);
    return st;
}

/* The project, copied under prefix, against qualify found at root (CMake)
 * and pc_path (pkg-config). */
static void sweep_project(const char *src, const char *cmake, const char *ctest, const char *root,
                          const char *pc_path)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "cp -r \"%s/examples/sweep-project\" \"%s/cm\" && cp -r \"%s/examples/sweep-project\" \"%s/mk\"",
             src, prefix, src, prefix);
    ck_assert_int_eq(run(cmd), 0);

    /* CMake: the good kernel passes its sweep test */
    snprintf(
        cmd, sizeof cmd,
        "cd \"%s/cm\" && \"%s\" -S . -B build -DCMAKE_PREFIX_PATH=\"%s\" >/dev/null && "
        "\"%s\" --build build >/dev/null && \"%s\" --test-dir build --output-on-failure >ctest.log 2>&1 && "
        "grep -q 'demo-sweep .*Passed' ctest.log && test -s build/qualify-demo-sweep/results.json",
        prefix, cmake, root, cmake, ctest);
    ck_assert_msg(run(cmd) == 0, "find_package + qualify_add_sweep: %s", cmd);
    /* ... and the broken kernel fails it */
    snprintf(cmd, sizeof cmd,
             "cd \"%s/cm\" && \"%s\" -S . -B broken -DDEMO_BROKEN=ON -DCMAKE_PREFIX_PATH=\"%s\" "
             ">/dev/null && "
             "\"%s\" --build broken >/dev/null && ! \"%s\" --test-dir broken >broken.log 2>&1 && "
             "grep -q 'demo-sweep .*Failed' broken.log && grep -q FAILED broken/qualify-demo-sweep/report.md",
             prefix, cmake, root, cmake, ctest);
    ck_assert_msg(run(cmd) == 0, "broken kernel must fail its sweep test: %s", cmd);

    /* Makefile + pkg-config (lib or lib64, as GNUInstallDirs chose) */
    snprintf(cmd, sizeof cmd,
             "cd \"%s/mk\" && PKG_CONFIG_PATH=\"%s\" make -s check >make.log 2>&1 && "
             "grep -q 'K=100,batch=1 -> gemm.demo.halves.f32 (qualified)' make.log && "
             "grep -q 'K=4096,batch=1 -> reference (not-swept)' make.log",
             prefix, pc_path);
    ck_assert_msg(run(cmd) == 0, "Makefile + pkg-config: %s (see %s/mk/make.log)", cmd, prefix);
}

/* ctest lives next to cmake */
static void ctest_path(const char *cmake, char *ctest, size_t size)
{
    const char *slash = strrchr(cmake, '/');
    if (slash)
        snprintf(ctest, size, "%.*s/ctest", (int)(slash - cmake), cmake);
    else
        snprintf(ctest, size, "ctest");
}

START_TEST(test_sweep_project)
{
    const char *bin = getenv("QF_BINARY_DIR"), *src = getenv("QF_SOURCE_DIR"), *cmake = getenv("QF_CMAKE");
    char cmd[16384], ctest[4096], root[4096], pc_path[4096];
    FILE *pc;
    ck_assert_msg(bin && src && cmake, "QF_BINARY_DIR, QF_SOURCE_DIR and QF_CMAKE must be set by CTest");
    snprintf(prefix, sizeof prefix, "%s/qf-sweep-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(prefix));
    ctest_path(cmake, ctest, sizeof ctest);

    snprintf(cmd, sizeof cmd, "\"%s\" --install \"%s\" --prefix \"%s/inst\" >/dev/null", cmake, bin, prefix);
    ck_assert_msg(run(cmd) == 0, "%s", cmd);
    /* the guard library and its pkg-config file are installed */
    snprintf(cmd, sizeof cmd,
             "test -f \"%s/inst/lib/libqualify_guard.a\" -o -f \"%s/inst/lib64/libqualify_guard.a\" || "
             "ls \"%s\"/inst/lib/*/libqualify_guard.a >/dev/null 2>&1",
             prefix, prefix, prefix);
    ck_assert_msg(run(cmd) == 0, "libqualify_guard.a not installed under %s/inst", prefix);
    /* lib or lib64, as GNUInstallDirs chose */
    snprintf(cmd, sizeof cmd,
             "dirname $(ls -d \"%s\"/inst/lib*/pkgconfig/qualify.pc \"%s\"/inst/lib/*/pkgconfig/qualify.pc "
             "2>/dev/null | head -1)",
             prefix, prefix);
    pc = popen(cmd, "r");
    ck_assert_ptr_nonnull(pc);
    ck_assert_ptr_nonnull(fgets(pc_path, sizeof pc_path, pc));
    pclose(pc);
    pc_path[strcspn(pc_path, "\n")] = '\0';
    snprintf(root, sizeof root, "%s/inst", prefix);
    sweep_project(src, cmake, ctest, root, pc_path);

    snprintf(cmd, sizeof cmd, "rm -rf \"%s\"", prefix);
    (void)run(cmd);
}
END_TEST

/* The build tree, not installed: its qualifyConfig.cmake and
 * qualify-uninstalled.pc. */
START_TEST(test_sweep_project_build_tree)
{
    const char *bin = getenv("QF_BINARY_DIR"), *src = getenv("QF_SOURCE_DIR"), *cmake = getenv("QF_CMAKE");
    char cmd[4200], ctest[4096];
    ck_assert_msg(bin && src && cmake, "QF_BINARY_DIR, QF_SOURCE_DIR and QF_CMAKE must be set by CTest");
    qf_test_mkdtemp(prefix, sizeof prefix, "qf-sweep-bt");
    ctest_path(cmake, ctest, sizeof ctest);
    sweep_project(src, cmake, ctest, bin, bin);
    snprintf(cmd, sizeof cmd, "rm -rf \"%s\"", prefix);
    (void)run(cmd);
}
END_TEST

int main(void)
{
    qf_test_skip_if_sanitized("install/sweep-project");
    if (system("make --version >/dev/null 2>&1") || system("cc --version >/dev/null 2>&1")) {
        printf("SKIP install/sweep-project: needs make and cc\n");
        return QF_TEST_SKIP;
    }
    return qf_test_main("install/sweep-project", "sweep-project", 600, NULL, NULL,
                        QF_TESTS(test_sweep_project, test_sweep_project_build_tree));
}
