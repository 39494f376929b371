/* t-shape-dup.c: a shape that names a dimension twice ("M=16,K=32,M=4")
 * is bad text for qf_guard_shape_parse and exit 2 for 'qualify guard';
 * before, the first value silently won and the guard answered. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_cli_test.h"
#include "qf_guard.h"
#include "qf_test.h"

START_TEST(test_parse)
{
    qf_guard_shape s;
    char ok[] = "M=16,N=16,K=32", dup[] = "M=16,N=16,K=32,M=4", dup2[] = "K=1,K=1";
    ck_assert_int_eq(qf_guard_shape_parse(ok, &s), 0);
    ck_assert_uint_eq(s.ndims, 3);
    ck_assert_int_eq(qf_guard_shape_parse(dup, &s), -1);
    ck_assert_int_eq(qf_guard_shape_parse(dup2, &s), -1);
}
END_TEST

START_TEST(test_cli)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    qf_cli_result r;
    if (!bin || !*bin)
        return;
    /* The shape is checked before the table is read. */
    r = qf_cli_run(bin, "guard", "/nonexistent/enable.json --kernel k --dtype d --shape M=16,K=32,M=4");
    ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strstr(r.err, "--shape") && strstr(r.err, "once"), "%s", r.err);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("guard/shape-dup");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
