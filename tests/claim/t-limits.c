/* t-limits.c: a claim file (which may come from an untrusted pull
 * request) is held to the limits of a suite file (docs/claims.md
 * "Errors", docs/security.md "Inputs and text"):
 *   - flow collections nested 100000 deep are refused in well under a
 *     second (libyaml's scanner, quadratic in the depth, took more than a
 *     minute), the message naming the file, line, column and key; 64
 *     levels are read; brackets in quoted strings and comments are not
 *     nesting;
 *   - a file over 16 MiB is refused before it is read (a sparse 20 MiB
 *     file), naming the file and its size;
 *   - aliases that would make the walk longer than a million nodes are
 *     refused, naming the file, line and key;
 *   - more than 1024 claims in a file are refused;
 *   - evidence is a list of strings: a nested list in it is refused,
 *     naming the line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qf_claim.h"
#include "qf_test.h"

static char path[128];

/* The claim text as a fresh file; its name in path. */
static void write_tmp(const char *text, size_t len)
{
    static int n;
    snprintf(path, sizeof path, "/tmp/qf-claim-lim-%d-%d.yaml", (int)getpid(), n++);
    qf_test_write_file(path, text, len, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A claim whose evidence is depth flow lists deep. */
static char *nested(size_t depth)
{
    const char *head = "claim_version: 1\nkernel: gemm.cpu.naive.f32\nevidence: ";
    size_t h = strlen(head);
    char *t = malloc(h + 2 * depth + 8);
    ck_assert_ptr_nonnull(t);
    memcpy(t, head, h);
    memset(t + h, '[', depth);
    memset(t + h + depth, ']', depth);
    strcpy(t + h + 2 * depth, "\n");
    return t;
}

static void expect_refused(const char *text, size_t len, const char *want)
{
    qf_claim_set s;
    char err[1024];
    write_tmp(text, len);
    ck_assert_int_eq(qf_claim_file_load(path, &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, path) && strstr(err, want), "'%s' lacks the file or '%s'", err, want);
    unlink(path);
}

START_TEST(deep_nesting_refused_fast)
{
    char *t = nested(100000), want[128];
    double t0 = now_s();
    /* the first '[' is at column 11 of line 3: the 65th at column 75 */
    snprintf(want, sizeof want, ":3:75: key 'evidence': collections nested deeper than 64 levels");
    expect_refused(t, strlen(t), want);
    ck_assert_msg(now_s() - t0 < 1.0, "took %.2f s", now_s() - t0);
    free(t);
}
END_TEST

START_TEST(nesting_at_the_limit_and_in_strings)
{
    qf_claim_set s;
    char err[1024], *t = nested(64);
    /* 64 levels: YAML that is read, then refused for what it holds */
    write_tmp(t, strlen(t));
    ck_assert_int_eq(qf_claim_file_load(path, &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "evidence") && strstr(err, "a list of strings") && !strstr(err, "nested deeper"),
                  "%s", err);
    unlink(path);
    free(t);
    /* brackets inside quotes and comments are no nesting */
    {
        char q[1024] = "claim_version: 1\nkernel: gemm.cpu.naive.f32\nevidence: [\"";
        size_t n = strlen(q);
        memset(q + n, '[', 100);
        strcpy(q + n + 100, "\", 'it''s [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]'] # ");
        n = strlen(q);
        memset(q + n, '{', 100);
        strcpy(q + n + 100, "\n");
        write_tmp(q, strlen(q));
    }
    ck_assert_msg(qf_claim_file_load(path, &s, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(s.n, 1);
    qf_claim_set_free(&s);
    unlink(path);
}
END_TEST

/* 20 MiB (sparse: nothing is written, and nothing may be read). */
START_TEST(large_file_refused)
{
    qf_claim_set s;
    char err[1024];
    FILE *f;
    write_tmp("claim_version: 1\nkernel: gemm.cpu.naive.f32\nevidence:\n", 55);
    f = fopen(path, "r+");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftruncate(fileno(f), 20 << 20), 0);
    fclose(f);
    ck_assert_int_eq(qf_claim_file_load(path, &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, path) && strstr(err, "20971520 bytes, larger than the 16777216 (16 MiB)"), "%s", err);
    unlink(path);
    /* QF_CLAIM_FILE_MAX is the suites' limit */
    ck_assert_uint_eq(QF_CLAIM_FILE_MAX, 16u << 20);
}
END_TEST

/* 1000 aliases of a claim whose arith mapping has 3000 keys: 6 million
 * nodes to walk from a 40 KB file. */
START_TEST(alias_walk_refused)
{
    size_t i, n = 0, cap = 64 << 10;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    n += (size_t)snprintf(t + n, cap - n, "- &c {claim_version: 1, kernel: gemm.cpu.naive.f32, arith: {");
    for (i = 0; i < 3000; i++)
        n += (size_t)snprintf(t + n, cap - n, "%sfma: fused", i ? ", " : "");
    n += (size_t)snprintf(t + n, cap - n, "}}\n");
    for (i = 0; i < 1000; i++)
        n += (size_t)snprintf(t + n, cap - n, "- *c\n");
    ck_assert_uint_lt(n, cap);
    expect_refused(t, n, "key 'fma': document too large (more than 1000000 nodes, aliases counted at each use)");
    free(t);
}
END_TEST

START_TEST(too_many_claims_refused)
{
    size_t i, n = 0, cap = 1 << 20;
    char *t = malloc(cap);
    qf_claim_set s;
    char err[1024];
    ck_assert_ptr_nonnull(t);
    for (i = 0; i < QF_CLAIM_CLAIMS_MAX; i++)
        n += (size_t)snprintf(t + n, cap - n, "- {claim_version: 1, kernel: k%zu}\n", i);
    write_tmp(t, n);
    ck_assert_msg(qf_claim_file_load(path, &s, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(s.n, QF_CLAIM_CLAIMS_MAX);
    qf_claim_set_free(&s);
    unlink(path);
    /* one more, in a second document */
    n += (size_t)snprintf(t + n, cap - n, "---\nclaim_version: 1\nkernel: one.more\n");
    expect_refused(t, n, ":1026:1: more than 1024 claims in the file");
    free(t);
}
END_TEST

START_TEST(evidence_is_strings)
{
    static const char t[] = "claim_version: 1\nkernel: k\nevidence:\n  - fine\n  - - - nested\n";
    expect_refused(t, sizeof t - 1, ":5:5: key 'evidence': a list of strings");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("claim/limits");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, deep_nesting_refused_fast);
    tcase_add_test(tc, nesting_at_the_limit_and_in_strings);
    tcase_add_test(tc, large_file_refused);
    tcase_add_test(tc, alias_walk_refused);
    tcase_add_test(tc, too_many_claims_refused);
    tcase_add_test(tc, evidence_is_strings);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
