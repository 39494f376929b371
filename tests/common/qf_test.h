/* qf_test.h: conventions shared by the Check suites.
 *
 * - A fixed default seed; QF_SEED overrides it and the seed in use is
 *   printed by every suite (docs/style.md#seeds).
 * - QF_TEST_SCALE multiplies iteration counts (QF_TEST_SCALE=10 or more is
 *   the long mode); QF_TEST_LONG=1 is a shorthand for a scale of 10.
 * - qf_test_run() runs a suite and turns the result into the exit code.
 */
#ifndef QF_TEST_H
#define QF_TEST_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QF_TEST_DEFAULT_SEED 20261129ull
#define QF_TEST_SKIP         77

static inline uint64_t qf_test_seed(void)
{
    const char *s = getenv("QF_SEED");
    return s && *s ? strtoull(s, NULL, 0) : QF_TEST_DEFAULT_SEED;
}

static inline double qf_test_scale(void)
{
    const char *s = getenv("QF_TEST_SCALE");
    const char *l = getenv("QF_TEST_LONG");
    double v = s && *s ? strtod(s, NULL) : 1.0;
    if (l && *l && *l != '0' && v < 10)
        v = 10;
    return v > 0 ? v : 1.0;
}

/* n scaled by QF_TEST_SCALE, never below 1. */
static inline long qf_test_iters(long n)
{
    double v = (double)n * qf_test_scale();
    return v < 1 ? 1 : (long)v;
}

static inline int qf_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;
    fprintf(stderr, "QF_SEED=%llu QF_TEST_SCALE=%g\n", (unsigned long long)qf_test_seed(), qf_test_scale());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The end of a sweep: print how many of the checks failed (the first few
 * failures are printed as they happen) and fail the test on any. */
static inline void qf_test_tally(const char *what, long checked, long failed)
{
    fprintf(stderr, "%s: %ld checks, %ld failures\n", what, checked, failed);
    ck_assert_msg(failed == 0, "%s: %ld of %ld checks failed (the first ones printed above)", what, failed,
                  checked);
}

/* splitmix64 over a test's own state: the sweeps draw apart from the
 * library's generator, so that a bug there cannot hide in both. */
static inline uint64_t qf_test_splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits, from qf_test_splitmix. */
static inline double qf_test_unif01(uint64_t *state)
{
    return (double)(qf_test_splitmix(state) >> 11) * 0x1p-53;
}

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200809L
/* mkdtemp is POSIX: for the tests that define _POSIX_C_SOURCE. */
/* Make the scratch folder $TMPDIR/STEM-XXXXXX (/tmp without TMPDIR) into
 * dir[size]; asserts that it was made. */
static inline void qf_test_mkdtemp(char *dir, size_t size, const char *stem)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, size, "%s/%s-XXXXXX", t && *t ? t : "/tmp", stem);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}
#endif

/* "dir/name" in one of four rotating buffers, so that one call may take
 * up to four of them as arguments. */
static inline const char *qf_test_path(const char *dir, const char *name)
{
    static char buf[4][4200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Remove a scratch folder and everything below it (the tests make them
 * under /tmp with mkdtemp or their pid); says so when that fails. */
static inline void qf_test_rmtree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* Run s with the scratch folder dir (a path the caller filled) made before
 * and removed after. */
static inline int qf_test_run_in_dir(Suite *s, const char *dir)
{
    int rc;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make %s\n", dir);
        return EXIT_FAILURE;
    }
    rc = qf_test_run(s);
    qf_test_rmtree(dir);
    return rc;
}

/* The whole file, NUL-terminated (binary files too: *len, when len is not
 * NULL, is the size without the NUL); asserts that it can be read. */
static inline char *qf_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_msg(n >= 0, "cannot size %s", path);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Write len bytes of data, then text when it is not NULL, as the file path
 * (replacing it); asserts that every byte was written. */
static inline void qf_test_write_file(const char *path, const void *data, size_t len, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    if (text)
        ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

/* The text as the file dir/name. */
static inline void qf_test_write_text(const char *dir, const char *name, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    qf_test_write_file(path, "", 0, text);
}

/* A copy of the first keep bytes of src (all of it when keep < 0 or
 * beyond its end) as dst, with append (when not NULL) after them: the
 * truncated and doctored inputs of the rejection tests. */
static inline void qf_test_copy_prefix(const char *src, const char *dst, long keep, const char *append)
{
    size_t n;
    char *s = qf_test_slurp(src, &n);
    qf_test_write_file(dst, s, keep < 0 || (size_t)keep > n ? n : (size_t)keep, append);
    free(s);
}

#ifdef QF_RESULT_H
/* The records of the journal of a run whose output directory is
 * dir/out (for tests that include qf_result.h first); asserts that it
 * reads. */
static inline qf_result *qf_test_journal(const char *dir, const char *out, size_t *n)
{
    char path[4200], err[512];
    qf_result *r = NULL;
    snprintf(path, sizeof path, "%s/%s/journal.jsonl", dir, out);
    ck_assert_msg(qf_journal_read(path, &r, n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    return r;
}
#endif

/* Lines (newlines) of a file, 0 when it cannot be opened: how far a
 * sweep that is about to be killed has written its journal. */
static inline size_t qf_test_count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int c;
    if (!f)
        return 0;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* For main(), outside Check: exit 77 (skipped, never passed) unless the
 * environment variable name is set and not empty; returns its value. */
static inline const char *qf_test_require_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set: skipped\n", name);
        exit(QF_TEST_SKIP);
    }
    return v;
}

/* 1 in a sanitizer build (QF_SANITIZED set, not 0 or OFF): an unoptimized
 * build several times slower, where the heaviest sweeps take every k-th
 * item (qf_test_stride) so that the suite keeps its time budget; the
 * normal build runs them whole. */
static inline int qf_test_sanitized(void)
{
    const char *san = getenv("QF_SANITIZED");
    return san && *san && strcmp(san, "0") && strcmp(san, "OFF");
}

/* The step of a sweep: 1, or k in a sanitizer build. */
static inline size_t qf_test_stride(size_t k)
{
    return qf_test_sanitized() ? k : 1;
}

/* For main(): exit 77 in a sanitizer build (QF_SANITIZED set, not 0 or
 * OFF), where what the test builds would need the sanitizer runtime. */
static inline void qf_test_skip_if_sanitized(const char *test)
{
    const char *san = getenv("QF_SANITIZED");
    if (san && *san && strcmp(san, "0") && strcmp(san, "OFF")) {
        printf("SKIP %s: sanitizer build (consumers would need the sanitizer runtime)\n", test);
        exit(QF_TEST_SKIP);
    }
}

/* The tests of a main(), NULL-terminated: QF_TESTS(test_a, test_b). */
#define QF_TESTS(...) ((const TTest *const[]){__VA_ARGS__, NULL})

/* The suite of one test case, tcase, with the fixture setup/teardown (both
 * NULL: none) and the timeout in seconds (0: Check's default), holding
 * loops (NULL: none; each run for _i in [0, loop_end)) and tests (NULL:
 * none). */
static inline Suite *qf_test_suite(const char *suite, const char *tcase, double timeout, void (*setup)(void),
                                   void (*teardown)(void), int loop_end, const TTest *const *loops,
                                   const TTest *const *tests)
{
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create(tcase);
    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (; loops && *loops; loops++)
        tcase_add_loop_test(tc, *loops, 0, loop_end);
    for (; tests && *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return s;
}

/* main() of a test program: qf_test_run of that suite. */
static inline int qf_test_main_loops(const char *suite, const char *tcase, double timeout,
                                     void (*setup)(void), void (*teardown)(void), int loop_end,
                                     const TTest *const *loops, const TTest *const *tests)
{
    return qf_test_run(qf_test_suite(suite, tcase, timeout, setup, teardown, loop_end, loops, tests));
}

/* The same without loop tests. */
static inline int qf_test_main(const char *suite, const char *tcase, double timeout, void (*setup)(void),
                               void (*teardown)(void), const TTest *const *tests)
{
    return qf_test_main_loops(suite, tcase, timeout, setup, teardown, 0, NULL, tests);
}

/* Debian's OpenBLAS shared library (libopenblas-dev, installed by
 * scripts/install-deps), or NULL: the tests that drive a real BLAS through
 * the cblas adapter skip that part without it. */
static inline const char *qf_test_openblas(void)
{
    static const char *const candidates[] = {"/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
                                             "/usr/lib/aarch64-linux-gnu/libopenblas.so.0",
                                             "/usr/lib64/libopenblas.so.0", "/usr/lib/libopenblas.so.0"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], R_OK) == 0)
            return candidates[i];
    return NULL;
}

/* Does the first "flags" line of /proc/cpuinfo list FLAG (a whole word,
 * e.g. "avx2", "avx512_vnni")?  0 where /proc/cpuinfo cannot be read. */
static inline int qf_test_cpu_flag(const char *flag)
{
    char line[8192], *p;
    size_t n = strlen(flag);
    int found = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5))
            continue;
        for (p = line; (p = strstr(p, flag)) != NULL; p += n)
            if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
                found = 1;
        break;
    }
    fclose(f);
    return found;
}

/* Third-party code paths (docs/third-party.md "Tests on every CPU").
 * oneDNN and OpenBLAS pick their kernels from the CPU, so the tests that
 * drive them run twice (tests/CMakeLists.txt): natively, where they assert
 * only what holds on every x86-64 CPU, and with both libraries pinned to
 * their AVX2 kernels (QF_TEST_PIN_ISA=avx2, with ONEDNN_MAX_CPU_ISA,
 * DNNL_MAX_CPU_ISA and OPENBLAS_CORETYPE set), where they also assert what
 * that path computes.  Returns 1 when pinned to AVX2, 0 when native;
 * when pinned on a CPU without AVX2 and FMA (the pin cannot raise the
 * ISA) it prints why and exits 77 (skipped). */
static inline int qf_test_pinned_avx2(void)
{
    const char *pin = getenv("QF_TEST_PIN_ISA");
    if (!pin || !*pin)
        return 0;
    if (strcmp(pin, "avx2") != 0) {
        fprintf(stderr, "QF_TEST_PIN_ISA=%s: only avx2 is known\n", pin);
        exit(EXIT_FAILURE);
    }
    if (!qf_test_cpu_flag("avx2") || !qf_test_cpu_flag("fma")) {
        fprintf(stderr, "pinned to AVX2, but this CPU lacks avx2 or fma: skipped\n");
        exit(QF_TEST_SKIP);
    }
    return 1;
}

#endif
