/* t-guard.c: the guard library over a compiled-in table (qf_guard.h):
 * every answer, selection from a priority list, the environment
 * (QF_GUARD_FORCE, QF_GUARD_LOG, QF_GUARD_ARCH), shape parsing, and the
 * messages for a table that is not one. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_guard.h"
#include "qf_test.h"

/* Kernel "fast" on sm_90, dims M, K: qualified M in [1, 64], K in
 * [128, 4096] % 128; failed M in [1, 64], K = 8192 (FAILED). */
static const qf_guard_region fast_regions[] = {
    {0, "QUALIFIED", "", {1, 128}, {64, 4096}, {1, 128}},
    {1, "FAILED", "error 12 ulp > bound 3 ulp", {1, 8192}, {64, 8192}, {1, 1}},
};
static const qf_guard_entry entries[] = {
    {"sm_90", "fast", "bf16", 2, {"M", "K"}, {1, 128}, {64, 8192}, 2, fast_regions, NULL, "", ""},
    {"sm_90",
     "safe",
     "bf16",
     2,
     {"M", "K"},
     {1, 1},
     {1024, 1 << 20},
     1,
     (const qf_guard_region[]){{0, "QUALIFIED", "", {1, 1}, {1024, 1 << 20}, {1, 1}}},
     NULL,
     "",
     ""},
    /* Swept with batch 1 and 4, qualified only at batch 1. */
    {"sm_90",
     "batched",
     "bf16",
     2,
     {"M", "batch"},
     {1, 1},
     {64, 4},
     1,
     (const qf_guard_region[]){{0, "QUALIFIED", "", {1, 1}, {64, 1}, {1, 1}}},
     NULL,
     "",
     ""},
    /* A CPU entry qualified on a CPU with these ISA features. */
    {"cpu",
     "simd",
     "bf16",
     1,
     {"M"},
     {1},
     {64},
     1,
     (const qf_guard_region[]){{0, "QUALIFIED", "", {1}, {64}, {1}}},
     "sse4.2 avx2 avx512f",
     "",
     ""},
};
static const qf_guard_table table = {4, entries};

static qf_guard *open_guard(void)
{
    qf_guard *g = NULL;
    ck_assert_int_eq(qf_guard_open_table(&table, &g), 0);
    qf_guard_set_arch(g, "sm_90");
    return g;
}

static qf_guard_answer ask(qf_guard *g, const char *kernel, const char *shape_text, int *allowed)
{
    char buf[128];
    qf_guard_shape s;
    qf_guard_decision d;
    snprintf(buf, sizeof buf, "%s", shape_text);
    ck_assert_int_eq(qf_guard_shape_parse(buf, &s), 0);
    *allowed = qf_guard_may_run(g, kernel, "bf16", &s, &d);
    ck_assert_int_eq(*allowed, d.allowed);
    ck_assert_msg(d.reason[0], "a decision always has a reason");
    return d.answer;
}

START_TEST(test_answers)
{
    qf_guard *g;
    int ok;
    unsetenv("QF_GUARD_FORCE");
    unsetenv("QF_GUARD_LOG");
    g = open_guard();
    ck_assert_int_eq(ask(g, "fast", "M=64,K=4096", &ok), QF_GUARD_QUALIFIED); /* corner */
    ck_assert_int_eq(ok, 1);
    ck_assert_int_eq(ask(g, "fast", "M=1,K=128", &ok), QF_GUARD_QUALIFIED);     /* other corner */
    ck_assert_int_eq(ask(g, "fast", "K=384,M=3", &ok), QF_GUARD_QUALIFIED);     /* order free */
    ck_assert_int_eq(ask(g, "fast", "M=3,K=385", &ok), QF_GUARD_NOT_QUALIFIED); /* off alignment */
    ck_assert_int_eq(ok, 0);
    ck_assert_int_eq(ask(g, "fast", "M=3,K=6144", &ok), QF_GUARD_NOT_QUALIFIED); /* between */
    ck_assert_int_eq(ask(g, "fast", "M=3,K=8192", &ok), QF_GUARD_FAILED);
    ck_assert_int_eq(ask(g, "fast", "M=65,K=128", &ok), QF_GUARD_NOT_SWEPT); /* just past */
    ck_assert_int_eq(ask(g, "fast", "M=3,K=64", &ok), QF_GUARD_NOT_SWEPT);
    ck_assert_int_eq(ask(g, "fast", "M=3", &ok), QF_GUARD_NOT_SWEPT); /* K missing */
    ck_assert_int_eq(ask(g, "other", "M=3,K=128", &ok), QF_GUARD_NOT_SWEPT);
    /* An omitted batch is 1 (as in the op descriptors); other dims are not. */
    ck_assert_int_eq(ask(g, "batched", "M=3", &ok), QF_GUARD_QUALIFIED);
    ck_assert_int_eq(ask(g, "batched", "M=3,batch=1", &ok), QF_GUARD_QUALIFIED);
    ck_assert_int_eq(ask(g, "batched", "M=3,batch=4", &ok), QF_GUARD_NOT_QUALIFIED);
    ck_assert_int_eq(ask(g, "batched", "batch=1", &ok), QF_GUARD_NOT_SWEPT);
    /* ISA: allowed only on a CPU with every feature the entry's CPU had. */
    qf_guard_set_arch(g, "cpu");
    qf_guard_set_isa(g, "sse4.2 avx avx2 fma avx512f avx512bw");
    ck_assert_int_eq(ask(g, "simd", "M=3", &ok), QF_GUARD_QUALIFIED);
    qf_guard_set_isa(g, "sse4.2 avx avx2 fma avx512");
    ck_assert_int_eq(ask(g, "simd", "M=3", &ok), QF_GUARD_ISA_MISSING); /* avx512 is not avx512f */
    ck_assert_int_eq(ok, 0);
    qf_guard_set_isa(g, "");
    ck_assert_int_eq(ask(g, "simd", "M=3", &ok), QF_GUARD_ISA_MISSING);
    qf_guard_set_arch(g, "gfx942");
    ck_assert_int_eq(ask(g, "fast", "M=3,K=128", &ok), QF_GUARD_UNKNOWN_ARCH);
    ck_assert_int_eq(ok, 0);
    qf_guard_close(g);
}
END_TEST

START_TEST(test_select)
{
    qf_guard *g;
    const char *list[] = {"fast", "safe"};
    char t1[] = "M=8,K=256", t2[] = "M=8,K=8192", t3[] = "M=4096,K=8";
    qf_guard_shape s;
    qf_guard_decision d;
    unsetenv("QF_GUARD_FORCE");
    g = open_guard();
    qf_guard_shape_parse(t1, &s);
    ck_assert_str_eq(qf_guard_select(g, list, 2, "ref", "bf16", &s, &d), "fast");
    qf_guard_shape_parse(t2, &s);
    ck_assert_str_eq(qf_guard_select(g, list, 2, "ref", "bf16", &s, &d), "safe");
    qf_guard_shape_parse(t3, &s);
    ck_assert_str_eq(qf_guard_select(g, list, 2, "ref", "bf16", &s, &d), "ref");
    ck_assert_int_eq(d.allowed, 0);
    qf_guard_close(g);
}
END_TEST

START_TEST(test_env)
{
    qf_guard *g;
    const char *list[] = {"fast"};
    char t[] = "M=8,K=8192";
    qf_guard_shape s;
    qf_guard_decision d;
    int ok, fd, saved;
    char logpath[] = "/tmp/qf-guard-log-XXXXXX", buf[1024] = "";
    FILE *f;
    qf_guard_shape_parse(t, &s);

    setenv("QF_GUARD_FORCE", "off", 1);
    g = open_guard();
    ck_assert_int_eq(ask(g, "fast", "M=3,K=8192", &ok), QF_GUARD_OFF);
    ck_assert_int_eq(ok, 1);
    qf_guard_close(g);

    setenv("QF_GUARD_FORCE", "safe", 1);
    g = open_guard();
    ck_assert_int_eq(ask(g, "fast", "M=3,K=128", &ok), QF_GUARD_NOT_FORCED);
    ck_assert_int_eq(ok, 0);
    ck_assert_str_eq(qf_guard_select(g, list, 1, "ref", "bf16", &s, &d), "safe");
    ck_assert_int_eq(d.answer, QF_GUARD_FORCED);
    qf_guard_close(g);
    unsetenv("QF_GUARD_FORCE");

    setenv("QF_GUARD_ARCH", "sim:gfx942", 1);
    g = NULL;
    ck_assert_int_eq(qf_guard_open_table(&table, &g), 0);
    ck_assert_str_eq(qf_guard_arch(g), "sim:gfx942");
    qf_guard_close(g);
    unsetenv("QF_GUARD_ARCH");

    /* QF_GUARD_LOG=1: every decision on stderr */
    setenv("QF_GUARD_LOG", "1", 1);
    fd = mkstemp(logpath);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    saved = dup(2);
    dup2(fd, 2);
    g = open_guard();
    ck_assert_str_eq(qf_guard_select(g, list, 1, "ref", "bf16", &s, &d), "ref");
    qf_guard_close(g);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    unsetenv("QF_GUARD_LOG");
    f = fopen(logpath, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_gt(fread(buf, 1, sizeof buf - 1, f), 0);
    fclose(f);
    remove(logpath);
    ck_assert_msg(
        strstr(buf, "qualify-guard: arch=sm_90 kernel=fast dtype=bf16 params=(defaults) shape=M=8,K=8192: denied (failed)") &&
            strstr(buf, "fallback ref"),
        "log: %s", buf);
}
END_TEST

START_TEST(test_shape_parse)
{
    qf_guard_shape s;
    char a[] = "M=1,N=18446744073709551615", b[] = "M=", c[] = "=3", d[] = "M=-1", e[] = "M=1,,N=2", f[] = "";
    ck_assert_int_eq(qf_guard_shape_parse(a, &s), 0);
    ck_assert_uint_eq(s.ndims, 2);
    ck_assert_str_eq(s.names[1], "N");
    ck_assert(s.values[1] == UINT64_MAX);
    ck_assert_int_eq(qf_guard_shape_parse(b, &s), -1);
    ck_assert_int_eq(qf_guard_shape_parse(c, &s), -1);
    ck_assert_int_eq(qf_guard_shape_parse(d, &s), -1);
    ck_assert_int_eq(qf_guard_shape_parse(e, &s), -1);
    ck_assert_int_eq(qf_guard_shape_parse(f, &s), -1);
}
END_TEST

START_TEST(test_bad_tables)
{
    static const struct {
        const char *text, *expect;
    } cases[] = {
        {"{", "not a JSON enablement table"},
        {"{\"cases\": []}", "not an enablement table"},
        {"{\"format\": \"qualify-enable\", \"version\": 3, \"entries\": []}", "version 3"},
        /* version 1 merged the parameter combinations of a kernel */
        {"{\"format\": \"qualify-enable\", \"version\": 1, \"entries\": []}", "regenerate"},
        {"{\"format\": \"qualify-enable\", \"version\": 2, \"entries\": [{\"arch\": \"cpu\"}]}",
         "entries[0]"},
        /* an entry without its parameter key */
        {"{\"format\": \"qualify-enable\", \"version\": 2, \"entries\": [{\"arch\": \"cpu\", \"kernel\": "
         "\"k\", \"dtype\": \"f32\", \"dims\": [], \"swept\": {}, \"qualified\": [], \"failed\": []}]}",
         "entries[0]"},
    };
    size_t i;
    char path[] = "/tmp/qf-guard-table-XXXXXX", err[1024];
    qf_guard *g;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(cases[i].text, f);
        fclose(f);
        err[0] = '\0';
        ck_assert_int_eq(qf_guard_open_json(path, &g, err, sizeof err), -1);
        ck_assert_ptr_null(g);
        ck_assert_msg(strstr(err, path) && strstr(err, cases[i].expect), "case %zu: %s", i, err);
    }
    remove(path);
    ck_assert_int_eq(qf_guard_open_json("/nonexistent/enable.json", &g, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/enable.json"));
}
END_TEST

START_TEST(test_detect)
{
    char arch[64], v[64], m[256], isa[1024];
    unsetenv("QF_GUARD_ARCH");
    qf_guard_detect_arch(arch, sizeof arch);
    /* "cpu" without a GPU back end or device; sm_XY / gfx... with one */
    ck_assert_msg(!strcmp(arch, "cpu") || !strncmp(arch, "sm_", 3) || !strncmp(arch, "gfx", 3), "arch %s",
                  arch);
    qf_guard_cpu_identity(v, sizeof v, m, sizeof m, isa, sizeof isa);
    ck_assert(v[0] && m[0] && isa[0]);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))
        ck_assert_ptr_nonnull(strstr(isa, "avx2"));
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("guard/guard");
    TCase *tc = tcase_create("guard");
    tcase_add_test(tc, test_answers);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_shape_parse);
    tcase_add_test(tc, test_bad_tables);
    tcase_add_test(tc, test_detect);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
