/* t-c-pair.c: the C pair of 'qualify enable' as a user compiles it:
 * strictly (-std=c11 -Wall -Wextra -Werror -pedantic) with cc and, when
 * installed, clang, from a table with qualified and failed regions and
 * three architectures; and --name values that cannot name a C object (not
 * an identifier, a C11 keyword such as 'int', which before wrote a pair
 * no compiler accepts) are exit 2 before anything is written.
 * Without QF_QUALIFY_BIN or cc: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_enable.h"
#include "qf_test.h"

static const char *bin, *src;
static char dir[128];

static void setup(void)
{
    char args[1024];
    qf_cli_result r;
    snprintf(dir, sizeof dir, "/tmp/qf-t-cpair-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof args, "'%s/tests/enable/evidence.yaml' --kernel 'gemm.[cm]*' -q -o %s/sweep", src, dir);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == 0, "run: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

START_TEST(test_strict_compile)
{
    static const char *const compilers[] = {"cc", "gcc", "clang"};
    char args[1024], cmd[2048];
    qf_cli_result r;
    size_t i, tried = 0;
    snprintf(args, sizeof args, "%s/sweep/results.json -o %s/t --name strict_table", dir, dir);
    r = qf_cli_run(bin, "enable", args);
    ck_assert_msg(r.rc == 0, "enable: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    for (i = 0; i < sizeof compilers / sizeof compilers[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", compilers[i]);
        if (system(cmd))
            continue;
        /* The header alone (as a dispatcher includes it) and the data. */
        snprintf(cmd, sizeof cmd,
                 "cd '%s/t' && printf '#include \"strict_table.h\"\\nint main(void){return "
                 "strict_table.nentries == 0;}\\n' > use.c && "
                 "%s -std=c11 -Wall -Wextra -Werror -pedantic -I. -I'%s/qualify' -c use.c -o use.o && "
                 "%s -std=c11 -Wall -Wextra -Werror -pedantic -I. -I'%s/qualify' -c strict_table.c -o t.o",
                 dir, compilers[i], src, compilers[i], src);
        ck_assert_msg(system(cmd) == 0, "%s: the generated pair does not compile strictly", compilers[i]);
        tried++;
    }
    ck_assert_uint_gt(tried, 0);
}
END_TEST

START_TEST(test_bad_names)
{
    static const char *const bad[] = {"int", "_Bool", "while", "my-table", "1abc", "''"};
    char args[1024], out[256], err[256];
    qf_cli_result r;
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(out, sizeof out, "%s/bad%zu", dir, i);
        snprintf(args, sizeof args, "%s/sweep/results.json -o %s --name %s", dir, out, bad[i]);
        r = qf_cli_run(bin, "enable", args);
        ck_assert_msg(r.rc == 2, "--name %s: rc %d", bad[i], r.rc);
        ck_assert_str_eq(r.out, "");
        ck_assert_msg(strstr(r.err, "--name"), "%s", r.err);
        ck_assert_msg(access(out, F_OK) != 0, "--name %s: %s was written", bad[i], out);
        qf_cli_result_free(&r);
    }
    ck_assert_int_eq(qf_enable_c_name_check("int", err, sizeof err), QF_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "keyword"));
    ck_assert_int_eq(qf_enable_c_name_check("interior", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_c_name_check("_table2", err, sizeof err), QF_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enable/c-pair");
    TCase *tc = tcase_create("cli");
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || system("cc --version >/dev/null 2>&1")) {
        fprintf(stderr, "QF_QUALIFY_BIN, QF_SOURCE_DIR or cc missing: skipped\n");
        return QF_TEST_SKIP;
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_strict_compile);
    tcase_add_test(tc, test_bad_names);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
