/* t-files-plugin.c: D8, a plugin that crashes, hangs or exits inside
 * qf_plugin_register (tests/security/plugin_badreg.c).  Loading happens in
 * a child first (qualify/plugin.c): each is exit 2 with a message naming
 * the plugin.  Before, a crash killed qualify (signal 11, no message), a
 * hang hung it, and exit(0) ended it "successfully" with nothing listed.
 * The hang is killed after QF_PLUGIN_LOAD_TIMEOUT (set to 2 s here).
 * Without QF_QUALIFY_BIN or the plugin: skipped. */
#define _POSIX_C_SOURCE 200809L

#include "_files_test.h"

static char dir[256], plugin[4200];

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-files-plugin");
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static void expect_refused(const char *how, const char *says)
{
    setenv("QF_BADREG", how, 1);
    setenv("QF_PLUGIN_LOAD_TIMEOUT", "2", 1);
    ft_expect_2(ft_run(dir, "list kernels --plugin '%s'", plugin), how, plugin, says, NULL);
    ft_expect_2(ft_run(dir, "run '%s' --plugin '%s' -o '%s/out' -q", ft_tiny_suite(dir), plugin, dir), how,
                plugin, says, NULL);
}

START_TEST(test_crash)
{
    /* Under AddressSanitizer the child's SIGSEGV becomes its exit 1. */
    expect_refused("crash", qf_test_sanitized() ? "loading it" : "crashed");
}
END_TEST

START_TEST(test_hang)
{
    expect_refused("hang", "did not finish within 2 s");
}
END_TEST

START_TEST(test_exit)
{
    expect_refused("exit", "ended the process (exit status");
}
END_TEST

/* A registration that fails normally keeps its own message. */
START_TEST(test_plain_failure)
{
    setenv("QF_BADREG", "fail", 1);
    ft_expect_2(ft_run(dir, "list kernels --plugin '%s'", plugin), "fail", plugin, "failed", NULL);
}
END_TEST

int main(void)
{
    const char *bin = qf_test_require_env("QF_BINARY_DIR");
    qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(plugin, sizeof plugin, "%s/tests/libqf_test_badreg_plugin.so", bin);
    if (access(plugin, R_OK)) {
        fprintf(stderr, "%s not built: skipped\n", plugin);
        return QF_TEST_SKIP;
    }
    return qf_test_main("security/files-plugin", "plugin", 300, setup, teardown,
                        QF_TESTS(test_crash, test_hang, test_exit, test_plain_failure));
}
