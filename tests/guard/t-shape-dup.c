/* t-shape-dup.c: shapes that do not say one thing.  A dimension named
 * twice ("M=16,K=32,M=4") is bad text for qf_guard_shape_parse and exit 2
 * for 'qualify guard' (before, the first value silently won).  A dimension
 * the entry does not have ("B=8" meant as the batch) is denied, not-swept
 * (before, it was ignored and a batch-1 answer given). */
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

/* Kernel "k" on sm_90, dims M, batch: qualified M in [1, 64], batch 1. */
static const qf_guard_region k_regions[] = {{0, "QUALIFIED", "", {1, 1}, {64, 1}, {1, 1}}};
static const qf_guard_entry k_entries[] = {{"sm_90", "k", "f32", 2, {"M", "batch"}, {1, 1}, {64, 1}, 1, k_regions, NULL, "", ""}};
static const qf_guard_table k_table = {1, k_entries};

START_TEST(test_extra_dimension)
{
    qf_guard *g;
    qf_guard_shape s;
    qf_guard_decision d;
    char plain[] = "M=16", batch[] = "M=16,batch=1", extra[] = "M=16,B=8";
    ck_assert_int_eq(qf_guard_open_table(&k_table, &g), 0);
    qf_guard_set_arch(g, "sm_90");
    ck_assert_int_eq(qf_guard_shape_parse(plain, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32", &s, &d), 1);
    ck_assert_int_eq(qf_guard_shape_parse(batch, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32", &s, &d), 1);
    ck_assert_int_eq(qf_guard_shape_parse(extra, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_SWEPT);
    ck_assert_msg(strstr(d.reason, "dimension B"), "%s", d.reason);
    qf_guard_close(g);
}
END_TEST

START_TEST(test_cli)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    qf_cli_result r;
    /* CTest sets it; a case that ran nothing must not pass. */
    ck_assert_msg(bin && *bin, "QF_QUALIFY_BIN is not set (run through ctest)");
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
    tcase_add_test(tc, test_extra_dimension);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
