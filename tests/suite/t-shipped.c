/* t-shipped.c: every suite shipped in shapes/ loads, expands, and names
 * only kernels that exist: each kernel glob of each group matches at least
 * one registered built-in kernel, so a renamed kernel cannot silently turn
 * a group of a shipped suite into zero cases.  GPU globs (cuda, cublas,
 * hip) are exempt where their back end is not built. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_kernel.h"
#include "qf_suite.h"
#include "qf_test.h"

static int is_gpu_glob(const char *g)
{
    return strstr(g, ".cuda.") || strstr(g, ".cublas") || strstr(g, ".hip.");
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

START_TEST(test_every_shipped_suite)
{
    const char *root = getenv("QF_SOURCE_DIR");
    char dir[1024], path[2048], err[4096];
    DIR *d;
    struct dirent *e;
    qf_registry *reg = NULL;
    int nfiles = 0;
    snprintf(dir, sizeof dir, "%s/shapes", root && *root ? root : ".");
    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    while ((e = readdir(d)) != NULL) {
        qf_suite *s = NULL;
        qf_suite_cases cases;
        uint64_t n = 0;
        size_t g, k;
        if (!has_suffix(e->d_name, ".yaml"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ck_assert_msg(qf_suite_load(path, &s, err, sizeof err) == QF_OK, "%s", err);
        ck_assert_msg(qf_suite_count(s, &n, err, sizeof err) == QF_OK, "%s: %s", path, err);
        ck_assert_msg(qf_suite_expand(s, &cases, err, sizeof err) == QF_OK, "%s: %s", path, err);
        qf_suite_cases_free(&cases);
        for (g = 0; g < s->ngroups; g++)
            for (k = 0; k < s->groups[g].nkernels; k++) {
                const char *glob = s->groups[g].kernels[k];
                size_t m = qf_registry_match(reg, glob, NULL, 0);
                ck_assert_msg(m > 0 || is_gpu_glob(glob), "%s: group %s: kernel glob '%s' matches no kernel",
                              path, s->groups[g].name ? s->groups[g].name : "?", glob);
            }
        qf_suite_free(s);
        nfiles++;
    }
    closedir(d);
    qf_registry_free(reg);
    /* quick, kernels, detection, workloads, gpu, deepseek-fp8 at least */
    ck_assert_int_ge(nfiles, 6);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("suite/shipped");
    TCase *tc = tcase_create("shipped");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_shipped_suite);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
