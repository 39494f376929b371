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

#define QF_TEST_DEFAULT_SEED 20261129ull
#define QF_TEST_SKIP 77

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

#endif
