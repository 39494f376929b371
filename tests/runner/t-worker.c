/* t-worker.c: kernel workers (docs/workers.md) through `qualify run
 * --worker`, `qualify list kernels --worker` and a suite's `workers:`.
 * The worker tests/runner/worker_test.c serves a good float32 GEMM and
 * kernels that segfault, hang, exit, babble or overrun on `run`: each
 * pair gets its verdict and reason, the good kernel's pairs after every
 * fault are QUALIFIED (the worker was restarted), results.json is valid;
 * a hello of another protocol version stops the run with exit status 2
 * and a message naming the worker; a worker that keeps dying is given up.
 * What a worker writes to its stderr during a run is in that pair's record
 * (kernel_output), never on qualify's output; what it writes outside runs
 * is relayed with its name in front, control characters escaped, and
 * capped: a worker that writes 20 MB before its hello and 200 KiB after
 * every answer gets at most 64 KiB shown per gap between runs and 1 MiB in
 * all, the rest said in "[worker testw] 19.0 MiB more of stderr dropped"
 * lines (before, all of it was relayed: 140 MB were seen), its bidi
 * control escaped, and every pair still QUALIFIED. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

static char dir[128], suite[256];

static void write_suite(const char *text)
{
    FILE *f;
    snprintf(dir, sizeof dir, "/tmp/qf-t-worker-%d", (int)getpid());
    snprintf(suite, sizeof suite, "%s.yaml", dir);
    f = fopen(suite, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void cleanup(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf \"%s\" \"%s\" \"%s.log\"", dir, suite, dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Run qualify with extra arguments; its exit status. */
static int qualify(const char *args)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char cmd[4096];
    int rc;
    ck_assert_msg(bin && getenv("QF_TEST_WORKER"), "QF_QUALIFY_BIN and QF_TEST_WORKER come from CTest");
    snprintf(cmd, sizeof cmd, "\"%s\" %s >\"%s.log\" 2>&1", bin, args, dir);
    rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc), "%s did not exit", cmd);
    return WEXITSTATUS(rc);
}

static json_t *results(size_t expect_n)
{
    char path[512];
    json_error_t jerr;
    json_t *root, *cases;
    snprintf(path, sizeof path, "%s/results.json", dir);
    root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
    cases = json_object_get(root, "cases");
    ck_assert_uint_eq(json_array_size(cases), expect_n);
    return root;
}

/* Every case of kernel: verdict, and reason_part in its reason. */
static void expect(json_t *root, const char *kernel, const char *verdict, const char *reason_part)
{
    json_t *cases = json_object_get(root, "cases"), *c;
    size_t i, seen = 0;
    json_array_foreach(cases, i, c)
    {
        const char *k = json_string_value(json_object_get(c, "kernel"));
        const char *v = json_string_value(json_object_get(c, "verdict"));
        const char *r = json_string_value(json_object_get(c, "reason"));
        if (!k || strcmp(k, kernel))
            continue;
        seen++;
        ck_assert_msg(v && !strcmp(v, verdict), "%s: verdict %s, expected %s (%s)", kernel, v ? v : "?",
                      verdict, r ? r : "");
        if (reason_part)
            ck_assert_msg(r && strstr(r, reason_part), "%s: reason '%s' lacks '%s'", kernel, r ? r : "",
                          reason_part);
    }
    ck_assert_msg(seen > 0, "no case for %s", kernel);
}

/* Every case of kernel holds text in its kernel_output and counts bytes
 * in kernel_output_bytes. */
static void expect_output(json_t *root, const char *kernel, const char *text, size_t bytes)
{
    json_t *cases = json_object_get(root, "cases"), *c;
    size_t i, seen = 0;
    json_array_foreach(cases, i, c)
    {
        const char *k = json_string_value(json_object_get(c, "kernel"));
        const char *o = json_string_value(json_object_get(c, "kernel_output"));
        json_t *n = json_object_get(c, "kernel_output_bytes");
        if (!k || strcmp(k, kernel))
            continue;
        seen++;
        ck_assert_msg(o && strstr(o, text), "%s: kernel_output '%s' lacks '%s'", kernel, o ? o : "(none)", text);
        ck_assert_msg(json_integer_value(n) == (json_int_t)bytes, "%s: kernel_output_bytes %lld, expected %zu",
                      kernel, (long long)json_integer_value(n), bytes);
    }
    ck_assert_msg(seen > 0, "no case for %s", kernel);
}

static void log_read(char *buf, size_t size)
{
    char path[512];
    size_t n;
    FILE *f;
    snprintf(path, sizeof path, "%s.log", dir);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
}

static void log_lacks(const char *part)
{
    char buf[8192];
    log_read(buf, sizeof buf);
    ck_assert_msg(!strstr(buf, part), "the output has '%s':\n%s", part, buf);
}

static void log_has(const char *part)
{
    char buf[8192];
    log_read(buf, sizeof buf);
    ck_assert_msg(strstr(buf, part), "the output lacks '%s':\n%s", part, buf);
}

static const char *hostile_suite = "suite: workers\n"
"refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
                                   "op: gemm\n"
                                   "kernels: [gemm.w.*]\n"
                                   "dtypes: [float32]\n"
                                   "shapes: {M: [5, 3], N: [8], K: [6]}\n";

static void check_hostile(json_t *root)
{
    expect(root, "gemm.w.good", "QUALIFIED", NULL);
    expect(root, "gemm.w.segv", "CRASHED", "worker testw died of signal 11");
    expect(root, "gemm.w.hang", "TIMEOUT", NULL);
    expect(root, "gemm.w.exit", "CRASHED", "worker testw exited with status 3");
    expect(root, "gemm.w.garbage", "CRASHED", "worker testw broke the protocol: expected {\"done\"");
    expect(root, "gemm.w.overrun", "FAILED", "canary");
    /* The noisy kernel's line, written during each of its two runs, is
     * its record's (the NUL and the byte that is not UTF-8 as '?', ESC and
     * CR kept for JSON to escape), whatever the job slot. */
    expect(root, "gemm.w.noisy", "QUALIFIED", NULL);
    expect_output(root, "gemm.w.noisy", "noisy: \x1b[31mred\x1b[0m\r?? end\nnoisy: ", 2 * 27);
    log_lacks("noisy");
}

/* Every fault gives its verdict, and the good kernel on the next case is
 * served by the restarted worker. */
static void run_hostile(int jobs)
{
    char args[2048];
    json_t *root;
    write_suite(hostile_suite);
    snprintf(args, sizeof args, "run \"%s\" --worker \"%s\" --timeout 5 --jobs %d -q -o \"%s\"", suite,
             getenv("QF_TEST_WORKER"), jobs, dir);
    ck_assert_int_eq(qualify(args), 1);
    root = results(14);
    check_hostile(root);
    json_decref(root);
    cleanup();
}

START_TEST(hostile_one_job)
{
    run_hostile(1);
}
END_TEST

/* Two jobs: one instance of the worker per job slot. */
START_TEST(hostile_two_jobs)
{
    run_hostile(2);
}
END_TEST

/* workers: in the suite file; a transposed and a beta != 0 case too. */
START_TEST(suite_key)
{
    char text[2048], args[1024];
    json_t *root;
    snprintf(text, sizeof text,
             "suite: workers\n"
"refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
             "workers: [\"%s\"]\n"
             "op: gemm\n"
             "kernels: [gemm.w.good]\n"
             "dtypes: [float32]\n"
             "params: {trans_a: [false, true], beta: [0, 0.5]}\n"
             "shapes: {M: [4], N: [3], K: [7]}\n",
             getenv("QF_TEST_WORKER"));
    write_suite(text);
    snprintf(args, sizeof args, "run \"%s\" -q -o \"%s\"", suite, dir);
    ck_assert_int_eq(qualify(args), 0);
    root = results(4);
    expect(root, "gemm.w.good", "QUALIFIED", NULL);
    json_decref(root);
    cleanup();
}
END_TEST

START_TEST(list_kernels)
{
    char args[1024];
    write_suite("");
    snprintf(args, sizeof args, "list kernels --worker \"%s\" 'gemm.w.*'", getenv("QF_TEST_WORKER"));
    ck_assert_int_eq(qualify(args), 0);
    log_has("gemm.w.good");
    log_has("gemm.w.overrun");
    cleanup();
}
END_TEST

START_TEST(bad_version)
{
    char args[2048];
    write_suite(hostile_suite);
    snprintf(args, sizeof args, "run \"%s\" --worker \"%s badversion\" -q -o \"%s\"", suite,
             getenv("QF_TEST_WORKER"), dir);
    ck_assert_int_eq(qualify(args), 2);
    log_has("badversion");
    log_has("protocol version 99");
    snprintf(args, sizeof args, "list kernels --worker \"%s badversion\"", getenv("QF_TEST_WORKER"));
    ck_assert_int_eq(qualify(args), 2);
    log_has("protocol version 99");
    cleanup();
}
END_TEST

/* A worker that dies on every run is restarted 5 times, then given up. */
START_TEST(given_up)
{
    char args[2048];
    json_t *root, *cases;
    size_t i, crashed_exit = 0, given = 0;
    write_suite("suite: workers\n"
"refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
                "op: gemm\n"
                "kernels: [gemm.w.exit]\n"
                "dtypes: [float32]\n"
                "shapes: {M: [1, 2, 3, 4, 5, 6, 7, 8], N: [2], K: [2]}\n");
    /* One job slot: the counts below are one instance's restarts (--jobs
     * defaults to the usable cores, each slot with its own instance). */
    snprintf(args, sizeof args, "run \"%s\" --worker \"%s\" --jobs 1 -q -o \"%s\"", suite, getenv("QF_TEST_WORKER"),
             dir);
    ck_assert_int_eq(qualify(args), 1);
    root = results(8);
    cases = json_object_get(root, "cases");
    for (i = 0; i < 8; i++) {
        const char *r = json_string_value(json_object_get(json_array_get(cases, i), "reason"));
        ck_assert_ptr_nonnull(r);
        crashed_exit += strstr(r, "exited with status 3") != NULL;
        given += strstr(r, "given up after 5 restarts") != NULL;
    }
    ck_assert_uint_eq(crashed_exit, 6);
    ck_assert_uint_eq(given, 2);
    /* The last words of a worker that dies in a run, without a newline,
     * are that pair's record's, not qualify's output. */
    for (i = 0; i < 6; i++) {
        const char *o = json_string_value(json_object_get(json_array_get(cases, i), "kernel_output"));
        ck_assert_msg(o && !strcmp(o, "testw: giving up, \x1b[2Jstatus 3\r"), "case %zu: kernel_output '%s'", i,
                      o ? o : "(none)");
    }
    log_lacks("giving up");
    log_lacks("\x1b");
    json_decref(root);
    cleanup();
}
END_TEST

/* A suite of gemm.w.good alone, but for its shapes. */
#define GOOD_SUITE                                                                                                 \
    "suite: workers\n"                                                                                              \
    "refute: false\n"                                                                                               \
    "op: gemm\n"                                                                                                    \
    "kernels: [gemm.w.good]\n"                                                                                      \
    "dtypes: [float32]\n"

/* What a worker writes to its stderr outside any run (before its hello,
 * after bye) reaches qualify's line by line with its name in front (the
 * command or the hello's name: the relay may read the line after the
 * hello), its control characters as visible escapes. */
START_TEST(relayed_outside_runs)
{
    char args[2048];
    json_t *root;
    write_suite(GOOD_SUITE
                "shapes: {M: [3], N: [2], K: [4]}\n");
    snprintf(args, sizeof args, "run \"%s\" --worker \"%s chatty\" --jobs 1 -q -o \"%s\"", suite,
             getenv("QF_TEST_WORKER"), dir);
    ck_assert_int_eq(qualify(args), 0);
    root = results(1);
    expect(root, "gemm.w.good", "QUALIFIED", NULL);
    log_has("] testw: starting \\x1b[1mup\\r\n");
    log_has("[worker testw] testw: bye \\x1b[0m\n");
    log_lacks("\x1b");
    json_decref(root);
    cleanup();
}
END_TEST

/* Lines "] flood gap GAP line " in log. */
static size_t flood_lines(const char *log, const char *gap)
{
    char pat[64];
    const char *p;
    size_t n = 0;
    snprintf(pat, sizeof pat, "] flood gap %s line ", gap);
    for (p = log; (p = strstr(p, pat)) != NULL; p++)
        n++;
    return n;
}

/* Sweep 16 pairs of gemm.w.good served by the flooding worker with env in
 * its environment (--jobs 1): all QUALIFIED; qualify's output, its size
 * in *n. */
static char *flood_sweep(const char *env, size_t *n)
{
    char args[2048], path[512];
    json_t *root;
    write_suite(GOOD_SUITE
                "shapes: {M: [3], N: [2], K: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n");
    snprintf(args, sizeof args, "run \"%s\" --worker \"%s %s flood\" --jobs 1 -q -o \"%s\"", suite, env,
             getenv("QF_TEST_WORKER"), dir);
    ck_assert_int_eq(qualify(args), 0);
    root = results(16);
    expect(root, "gemm.w.good", "QUALIFIED", NULL);
    json_decref(root);
    snprintf(path, sizeof path, "%s.log", dir);
    return qf_test_slurp(path, n);
}

/* A worker flooding its stderr outside runs: capped and summarized. */
START_TEST(flood_capped)
{
    char *log;
    size_t n, per_line = 100 + strlen("[worker testw] ");
    /* 20 MB before the hello, 200 KB after bye: two gaps, each shown up to
     * 64 KiB and summarized, the bidi control escaped */
    log = flood_sweep("QF_TEST_FLOOD_FIRST=20000000 QF_TEST_FLOOD_BYE=200000", &n);
    ck_assert_msg(n < (150u << 10), "%zu bytes reached qualify's stderr", n);
    ck_assert_msg(strstr(log, "[worker testw] 19.0 MiB more of stderr dropped (at most 64 KiB between two runs"),
                  "no summary of the first gap:\n%.2000s", log);
    ck_assert_msg(flood_lines(log, "0") > 100 && flood_lines(log, "0") * per_line <= (64u << 10), "%zu lines",
                  flood_lines(log, "0"));
    ck_assert_msg(flood_lines(log, "bye") > 100 && flood_lines(log, "bye") * per_line <= (64u << 10), "%zu lines",
                  flood_lines(log, "bye"));
    ck_assert_msg(strstr(log, "KiB more of stderr dropped") && strstr(log, "flood gap bye line 0."), "%.300s",
                  strstr(log, "flood gap bye") ? strstr(log, "flood gap bye") : log);
    ck_assert_msg(strstr(log, "flood gap 0 line 0 rlo\\u202eevil"), "%.300s", log);
    ck_assert_msg(!strstr(log, "\xe2\x80\xae") && !strchr(log, '\x1b'), "a raw control in the output");
    free(log);
    cleanup();
    /* 200 KB after every answer (between runs, or in the next run's
     * record: the filing is by time): 1 MiB in all at most */
    log = flood_sweep("QF_TEST_FLOOD_FIRST=200000 QF_TEST_FLOOD_GAP=200000", &n);
    ck_assert_msg(n < (1u << 20) + 40 * 200, "%zu bytes reached qualify's stderr", n);
    ck_assert_msg(strstr(log, "more of stderr dropped"), "nothing was dropped:\n%.2000s", log);
    free(log);
    cleanup();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/worker");
    TCase *tc = tcase_create("worker");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, hostile_one_job);
    tcase_add_test(tc, hostile_two_jobs);
    tcase_add_test(tc, suite_key);
    tcase_add_test(tc, list_kernels);
    tcase_add_test(tc, bad_version);
    tcase_add_test(tc, given_up);
    tcase_add_test(tc, relayed_outside_runs);
    tcase_add_test(tc, flood_capped);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
