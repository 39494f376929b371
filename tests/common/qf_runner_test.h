/* qf_runner_test.h: run a suite given as YAML text through the runner, for
 * tests that register their own kernels (wrong variants, wrappers). */
#ifndef QF_RUNNER_TEST_H
#define QF_RUNNER_TEST_H

#include <check.h>
#include <string.h>

#include "qf_runner.h"
#include "qf_suite.h"

/* Load yaml (named name in messages) and run it over reg with 2 jobs and a
 * 30 s limit per kernel call; asserts that both steps succeed. */
static inline void qf_test_run_yaml(const char *yaml, const char *name, qf_registry *reg,
                                    qf_runner_summary *sum)
{
    char err[512];
    qf_suite *suite = NULL;
    qf_runner_opts o = qf_runner_opts_default();
    ck_assert_msg(qf_suite_load_mem(yaml, strlen(yaml), name, &suite, err, sizeof err) == QF_OK, "%s", err);
    o.jobs = 2;
    o.timeout_s = 30.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, sum, err, sizeof err) == QF_OK, "%s", err);
    qf_suite_free(suite);
}

/* The first result whose case id starts with prefix ("group:"); fails the
 * test when there is none. */
static inline const qf_result *qf_test_find_case(const qf_runner_summary *s, const char *prefix)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        if (!strncmp(s->results[i].case_id, prefix, strlen(prefix)))
            return &s->results[i];
    ck_abort_msg("no result for %s", prefix);
    return NULL;
}

#endif
