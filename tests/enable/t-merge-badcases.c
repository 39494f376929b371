/* t-merge-badcases.c: 'qualify enable' and 'qualify diff' as a new user
 * meets them: several results files merged (different shapes; the same
 * case with different verdicts, where the worse verdict wins whatever the
 * order, docs/enable.md), cases only in one file of a diff, and results
 * whose cases are malformed (no kernel, a member of the wrong type): exit 2
 * naming the file, the case and the member, nothing on stdout.  Results of
 * one architecture from different machines (an Intel AVX2 CPU and the
 * machine of the sweep, both "cpu") are exit 2 too: before, they were
 * merged under the identity of the first file.
 * Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static const char *bin;
static char dir[128], base[256];

/* One sweep of the FP8 model (10 cases, M in {1, 16}, K 16 ... 4096). */
static void setup(void)
{
    char args[1024];
    const char *src = getenv("QF_SOURCE_DIR");
    qf_cli_result r;
    bin = getenv("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-merge-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof args, "%s/tests/enable/evidence.yaml --kernel gemm.model.h100.e4m3 -q -o %s/sweep", src,
             dir);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == 0, "run: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    snprintf(base, sizeof base, "%s/sweep/results.json", dir);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

static long long dim_of(json_t *c, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(c, "dims"), i, d)
    {
        if (!strcmp(json_string_value(json_array_get(d, 0)), name))
            return json_integer_value(json_array_get(d, 1));
    }
    ck_abort_msg("no dimension %s", name);
    return -1;
}

/* BASE with only the cases of M = m; with fail_k, the case at K = fail_k
 * is made FAILED. Written to dir/name. */
static void write_subset(const char *name, long long m, long long fail_k)
{
    json_t *j = load(base), *cases = json_object_get(j, "cases"), *keep = json_array(), *c;
    char path[512];
    size_t i;
    json_array_foreach(cases, i, c)
    {
        if (dim_of(c, "M") != m)
            continue;
        if (fail_k && dim_of(c, "K") == fail_k) {
            /* with evidence that gives it (docs/verdicts.md rule 9):
             * readers decide again and refuse a bare verdict edit */
            json_object_set_new(c, "verdict", json_string("FAILED"));
            json_object_set_new(c, "cause", json_string("exact_index"));
            json_object_set_new(json_object_get(c, "evidence"), "exact_fail",
                                json_string("a failure made up by the test"));
            json_object_set_new(c, "reason", json_string("a failure made up by the test"));
        }
        json_array_append(keep, c);
    }
    json_object_set_new(j, "cases", keep);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(json_dump_file(j, path, 0), 0);
    json_decref(j);
}

/* The entry of the FP8 model in DIR/enable.json after enabling ARGS. */
static json_t *enable_entry(const char *args, const char *out)
{
    char a[1024], path[512];
    qf_cli_result r;
    json_t *j, *e, *found = NULL;
    size_t i;
    snprintf(a, sizeof a, "%s -o %s/%s", args, dir, out);
    r = qf_cli_run(bin, "enable", a);
    ck_assert_msg(r.rc == 0, "enable %s: rc %d: %s", a, r.rc, r.err);
    qf_cli_result_free(&r);
    snprintf(path, sizeof path, "%s/%s/enable.json", dir, out);
    j = load(path);
    json_array_foreach(json_object_get(j, "entries"), i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "kernel")), "gemm.model.h100.e4m3"))
            found = json_incref(e);
    }
    json_decref(j);
    ck_assert_ptr_nonnull(found);
    return found;
}

START_TEST(test_merge_shapes)
{
    char args[1024];
    json_t *e;
    write_subset("m1.json", 1, 0);
    write_subset("m16.json", 16, 0);
    snprintf(args, sizeof args, "%s/m1.json %s/m16.json", dir, dir);
    e = enable_entry(args, "t-merged");
    /* The two files together are the whole sweep: M {1, 16}, 10 cases. */
    ck_assert_int_eq(json_integer_value(json_object_get(e, "cases")), 10);
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(e, "swept"), "M")), 2);
    {
        json_t *q0 = json_array_get(json_object_get(e, "qualified"), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(q0, "hi"), "M")), 16);
    }
    json_decref(e);
}
END_TEST

START_TEST(test_merge_same_case_worst_wins)
{
    char args[1024];
    json_t *e1, *e2;
    write_subset("m1.json", 1, 0);
    write_subset("m1-failed.json", 1, 16);
    snprintf(args, sizeof args, "%s/m1.json %s/m1-failed.json", dir, dir);
    e1 = enable_entry(args, "t-a");
    snprintf(args, sizeof args, "%s/m1-failed.json %s/m1.json", dir, dir);
    e2 = enable_entry(args, "t-b");
    /* K = 16 was QUALIFIED in one file and FAILED in the other: failed in
     * both orders (1 qualified shape K = 64 left, 4 failed). */
    ck_assert_int_eq(json_integer_value(json_object_get(e1, "shapes_qualified")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(e1, "shapes_failed")), 4);
    ck_assert(json_equal(e1, e2));
    {
        char *failed = json_dumps(json_object_get(e1, "failed"), 0);
        ck_assert_ptr_nonnull(strstr(failed, "a failure made up by the test"));
        free(failed);
    }
    json_decref(e1);
    json_decref(e2);
}
END_TEST

START_TEST(test_diff_only_in_one)
{
    char args[1024];
    qf_cli_result r;
    write_subset("m1.json", 1, 0);
    write_subset("m16.json", 16, 0);
    snprintf(args, sizeof args, "%s/m1.json %s/m16.json", dir, dir);
    r = qf_cli_run(bin, "diff", args);
    /* The qualified M = 1 shapes are gone from NEW: lost, so regressed. */
    ck_assert_msg(r.rc == 1, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "0 matched, 5 only in base, 5 only in new"));
    ck_assert_ptr_nonnull(strstr(r.out, "no longer swept"));
    qf_cli_result_free(&r);
    /* A superset of BASE regresses nothing. */
    snprintf(args, sizeof args, "%s/m1.json %s", dir, base);
    r = qf_cli_run(bin, "diff", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "5 matched, 0 only in base, 5 only in new"));
    qf_cli_result_free(&r);
}
END_TEST

/* enable and diff (both sides) on BASE with member of cases[3] set to
 * value (deleted when NULL): exit 2, nothing on stdout, the message names
 * the file and holds both words. */
static void expect_rejected(const char *name, const char *member, json_t *value, const char *w1, const char *w2)
{
    json_t *j = load(base);
    char path[512], args[1024];
    qf_cli_result r;
    int k;
    if (value)
        json_object_set_new(json_array_get(json_object_get(j, "cases"), 3), member, value);
    else
        json_object_del(json_array_get(json_object_get(j, "cases"), 3), member);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(json_dump_file(j, path, 0), 0);
    json_decref(j);
    for (k = 0; k < 3; k++) {
        const char *cmd = k == 0 ? "enable" : "diff";
        if (k == 0)
            snprintf(args, sizeof args, "%s -o %s/t-out", path, dir);
        else if (k == 1)
            snprintf(args, sizeof args, "%s %s", base, path);
        else
            snprintf(args, sizeof args, "%s %s", path, base);
        r = qf_cli_run(bin, cmd, args);
        ck_assert_msg(r.rc == 2, "%s %s: rc %d, stderr %s", cmd, args, r.rc, r.err);
        ck_assert_str_eq(r.out, "");
        ck_assert_msg(strstr(r.err, name) && strstr(r.err, w1) && strstr(r.err, w2), "%s %s: %s", cmd, args,
                      r.err);
        qf_cli_result_free(&r);
    }
}

START_TEST(test_case_without_kernel)
{
    /* Before: enable wrote a table without the case, diff reported it as
     * lost and new. */
    expect_rejected("nokernel.json", "kernel", NULL, "case 3", "no 'kernel'");
    expect_rejected("noop.json", "op", NULL, "case 3", "no 'op'");
}
END_TEST

START_TEST(test_member_of_wrong_type)
{
    /* Before: "member 'a string member': wrong type or value". */
    expect_rejected("archnum.json", "arch", json_integer(5), "cases[3]", "member 'arch': a string expected");
    expect_rejected("kindnum.json", "kernel_kind", json_true(), "cases[3]", "member 'kernel_kind'");
}
END_TEST

START_TEST(test_different_cpus)
{
    char path[512], args[1024];
    json_t *j;
    qf_cli_result r;
    write_subset("m1.json", 1, 0);
    write_subset("m16.json", 16, 0);
    snprintf(path, sizeof path, "%s/m16.json", dir);
    j = load(path);
    json_object_set_new(json_object_get(j, "provenance"), "cpu",
                        json_pack("{s:s, s:s, s:[s,s], s:i}", "vendor", "GenuineIntel", "model", "Intel Xeon (test)",
                                  "isa", "sse4.2", "avx2", "count", 8));
    snprintf(path, sizeof path, "%s/m16-other-cpu.json", dir);
    ck_assert_int_eq(json_dump_file(j, path, 0), 0);
    json_decref(j);
    /* The FP8 model's cases are sim:sm_90 (host CPU irrelevant): merged. */
    snprintf(args, sizeof args, "%s/m1.json %s -o %s/t-sim", dir, path, dir);
    r = qf_cli_run(bin, "enable", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    /* The same files relabelled as CPU results: refused, both named. */
    {
        int k;
        for (k = 0; k < 2; k++) {
            char p2[512];
            size_t i;
            json_t *c;
            snprintf(p2, sizeof p2, k ? "%s" : "%s/m1.json", k ? path : dir);
            j = load(p2);
            json_array_foreach(json_object_get(j, "cases"), i, c)
            {
                json_object_set_new(c, "arch", json_string("cpu"));
            }
            snprintf(p2, sizeof p2, "%s/cpu%d.json", dir, k);
            ck_assert_int_eq(json_dump_file(j, p2, 0), 0);
            json_decref(j);
        }
    }
    snprintf(args, sizeof args, "%s/cpu0.json %s/cpu1.json -o %s/t-cpu", dir, dir, dir);
    r = qf_cli_run(bin, "enable", args);
    ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.out);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strstr(r.err, "cpu1.json") && strstr(r.err, "cpu0.json") && strstr(r.err, "Intel Xeon (test)"),
                  "%s", r.err);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enable/merge-badcases");
    TCase *tc = tcase_create("cli");
    if (!getenv("QF_QUALIFY_BIN") || !*getenv("QF_QUALIFY_BIN") || !getenv("QF_SOURCE_DIR")) {
        fprintf(stderr, "QF_QUALIFY_BIN or QF_SOURCE_DIR is not set: skipped\n");
        return QF_TEST_SKIP;
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_merge_shapes);
    tcase_add_test(tc, test_merge_same_case_worst_wins);
    tcase_add_test(tc, test_diff_only_in_one);
    tcase_add_test(tc, test_case_without_kernel);
    tcase_add_test(tc, test_member_of_wrong_type);
    tcase_add_test(tc, test_different_cpus);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
