/* t-torn-journal.c: a journal whose last line is cut short (a run killed
 * mid-write) given to qf_report_read and to 'qualify enable' / 'diff' /
 * 'report' / 'show'.  The complete cases are read (the reader's rule for a
 * torn write), but no longer silently: qf_report_read returns QF_OK with a
 * warning in err, and each command prints it on stderr naming the file.
 * A whole journal gives no warning.  Without QF_QUALIFY_BIN: skipped. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_report.h"
#include "qf_test.h"

START_TEST(test_torn)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *src = getenv("QF_SOURCE_DIR");
    char dir[128], args[1024], whole[256], torn[256], err[1024], *text;
    qf_result *r = NULL;
    size_t n_whole = 0, n_torn = 0, len;
    qf_cli_result c;
    FILE *f;
    static const char *const cmds[] = {"enable", "diff", "report", "show"};
    int k;
    snprintf(dir, sizeof dir, "/tmp/qf-t-torn-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof args, "'%s/tests/enable/evidence.yaml' --kernel gemm.cpu.bf16_f32acc -q -o %s/s",
             src, dir);
    c = qf_cli_run(bin, "run", args);
    ck_assert_msg(c.rc == 0, "run: rc %d: %s", c.rc, c.err);
    qf_cli_result_free(&c);
    snprintf(whole, sizeof whole, "%s/s/journal.jsonl", dir);
    snprintf(torn, sizeof torn, "%s/torn.jsonl", dir);
    text = qf_cli_slurp(whole);
    len = strlen(text);
    ck_assert_uint_gt(len, 200);
    f = fopen(torn, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len - 100, f), len - 100); /* the last record cut */
    fclose(f);
    free(text);

    ck_assert_msg(qf_report_read(whole, &r, &n_whole, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_str_eq(err, "");
    free(r);
    ck_assert_msg(qf_report_read(torn, &r, &n_torn, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(n_torn, n_whole - 1);
    ck_assert_msg(strstr(err, torn) && strstr(err, "cut short"), "%s", err);
    free(r);

    for (k = 0; k < 4; k++) {
        if (k == 0)
            snprintf(args, sizeof args, "%s -o %s/en", torn, dir);
        else if (k == 1)
            snprintf(args, sizeof args, "%s %s", whole, torn);
        else if (k == 2)
            snprintf(args, sizeof args, "%s -o %s/r.html", torn, dir);
        else
            snprintf(args, sizeof args, "%s", torn);
        c = qf_cli_run(bin, cmds[k], args);
        /* report exits 2 only in a build without PLplot; diff 1: a case lost */
        ck_assert_msg(c.rc == 0 || (k == 1 && c.rc == 1) || (k == 2 && strstr(c.err, "without PLplot")),
                      "%s: rc %d: %s", cmds[k], c.rc, c.err);
        if (!(k == 2 && c.rc == 2))
            ck_assert_msg(strstr(c.err, "torn.jsonl: warning: the last line is cut short"), "%s: %s", cmds[k],
                          c.err);
        qf_cli_result_free(&c);
    }
    snprintf(args, sizeof args, "%s -o %s/en2", whole, dir);
    c = qf_cli_run(bin, "enable", args);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_msg(!strstr(c.err, "warning"), "%s", c.err);
    qf_cli_result_free(&c);
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    qf_test_require_env("QF_SOURCE_DIR");
    return qf_test_main("report/torn-journal", "torn", 300, NULL, NULL, QF_TESTS(test_torn));
}
