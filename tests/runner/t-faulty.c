/* t-faulty.c: `qualify run --plugin libqf_test_faulty_plugin.so` over a
 * suite whose kernels segfault, abort, hang, write past their output,
 * leave an element unwritten or return NaN (tests/runner/plugin_faulty.c):
 * each gets its verdict and reason in results.json while the good kernel
 * and every other case finish; the exit code is 1. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

static json_t *find_case(json_t *cases, const char *kernel)
{
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *k = json_string_value(json_object_get(c, "kernel"));
        if (k && !strcmp(k, kernel))
            return c;
    }
    ck_abort_msg("no case for %s", kernel);
    return NULL;
}

static void expect(json_t *cases, const char *kernel, const char *verdict, const char *reason_part)
{
    json_t *c = find_case(cases, kernel);
    const char *v = json_string_value(json_object_get(c, "verdict"));
    const char *r = json_string_value(json_object_get(c, "reason"));
    ck_assert_msg(v && !strcmp(v, verdict), "%s: verdict %s, expected %s (%s)", kernel, v ? v : "?", verdict,
                  r ? r : "");
    if (reason_part)
        ck_assert_msg(r && strstr(r, reason_part), "%s: reason '%s' lacks '%s'", kernel, r ? r : "", reason_part);
}

/* Under both isolations (docs/runner.md "Kernel servers"): a kernel server
 * taken down by one kernel costs that pair and a restart, nothing else. */
static const char *const modes[] = {"server", "pair"};

START_TEST(faulty_plugin)
{
    const char *mode = modes[_i];
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_FAULTY_PLUGIN");
    char dir[128], suite[256], cmd[4096], path[512];
    json_error_t jerr;
    json_t *root, *cases;
    FILE *f;
    int rc;
    ck_assert_msg(bin && plugin, "QF_QUALIFY_BIN and QF_FAULTY_PLUGIN come from CTest");
    snprintf(dir, sizeof dir, "/tmp/qf-t-faulty-%d", (int)getpid());
    snprintf(suite, sizeof suite, "%s.yaml", dir);
    f = fopen(suite, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: faulty\n"
          "refute: false\n" /* the counts below are of these inputs alone (docs/refute.md) */
          "op: gemm\n"
          "kernels: [gemm.faulty.*]\n"
          "dtypes: [float32]\n"
          "shapes: {M: [5], N: [8], K: [6]}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "\"%s\" run \"%s\" --plugin \"%s\" --isolate %s --timeout 5 --jobs 2 -q -o \"%s\" >/dev/null 2>&1",
             bin, suite, plugin, mode, dir);
    rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "exit %d, expected 1: %s", rc, cmd);
    snprintf(path, sizeof path, "%s/results.json", dir);
    root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
    cases = json_object_get(root, "cases");
    ck_assert_uint_eq(json_array_size(cases), 7);
    expect(cases, "gemm.faulty.good", "QUALIFIED", NULL);
    expect(cases, "gemm.faulty.segv", "CRASHED", "signal 11");
    expect(cases, "gemm.faulty.abort", "CRASHED", "signal 6");
    expect(cases, "gemm.faulty.hang", "TIMEOUT", NULL);
    expect(cases, "gemm.faulty.overrun", "FAILED", "canary");
    expect(cases, "gemm.faulty.unwritten", "FAILED", "unwritten");
    expect(cases, "gemm.faulty.nan", "FAILED", "NaN");
    json_decref(root);
    snprintf(cmd, sizeof cmd, "rm -rf \"%s\" \"%s\"", dir, suite);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/faulty");
    TCase *tc = tcase_create("plugin");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, faulty_plugin, 0, 2);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
