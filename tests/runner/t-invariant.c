/* t-invariant.c: the engine's behaviour does not drift.  Runs `qualify
 * run` (QF_QUALIFY_BIN) on shapes/quick.yaml, shapes/detection.yaml and
 * (outside sanitizer builds, where it takes minutes) shapes/kernels.yaml
 * with their fixed seeds, and compares every (case, kernel) pair with the
 * fingerprints recorded in tests/runner/invariant/<suite>.tsv before the
 * op-table redesign (docs/architecture.md): the same pairs, the same
 * verdicts, and bit-identical measured errors (printed with %a).  Bounds
 * and reasons are not compared: a documented fix may change a bound.
 *
 * To re-record after a deliberate change of measured behaviour (say why
 * in the commit): QF_INVARIANT_WRITE=1 ctest -R runner/invariant.
 * Without QF_QUALIFY_BIN: skipped (77).
 *
 * Kernel servers (docs/runner.md): quick and detection run under both
 * --isolate server (the default) and --isolate pair against the same
 * records; kernels.yaml (minutes) under the default only, or under
 * QF_INVARIANT_ISOLATE=pair. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *src;
static char dir[128];

/* One pair's fingerprint: identity, verdict and the measured errors. */
static void fingerprint(const qf_result *r, char *buf, size_t size)
{
    const qf_metrics *m = &r->metrics;
    int n = snprintf(buf, size, "%s\t%s\t%s", r->case_id, r->kernel, qf_verdict_name(r->verdict));
    /* The racy known-bad kernel sums in a thread-scheduled order by
     * design: its verdict is stable, its error figures are not. */
    if (strstr(r->kernel, ".racy"))
        return;
    if (r->has_metrics && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "\tn=%zu checked=%zu undecided=%zu ulp=%a abs=%a rel=%a norm=%a "
                 "bias=%a rms=%a sqnr=%a exact=%zu zero=%zu nonfinite=%zu finite=%zu",
                 m->n, m->n_checked, m->n_undecided, m->max_ulp, m->max_abs, m->max_rel, m->normwise,
                 m->bias, m->rms, m->sqnr_db, m->n_exact_rounded, m->n_zero_ref, m->nonfinite_bad,
                 m->finite_bad);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_suite(const char *suite, const char *isolate)
{
    char cmd[4096], path[1024], line[2048], **got;
    qf_result *r = NULL;
    size_t n = 0, i, nexp = 0, bad = 0;
    int st;
    FILE *f;
    snprintf(cmd, sizeof cmd, "'%s' run '%s/shapes/%s.yaml' --isolate %s -o '%s/%s' -j 2 -q >'%s/%s.log' 2>&1", bin,
             src, suite, isolate, dir, suite, dir, suite);
    st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) <= 1, "qualify run %s: status %d", suite, st);
    snprintf(path, sizeof path, "%s/%s/journal.jsonl", dir, suite);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, line, sizeof line) == QF_OK, "%s", line);
    got = calloc(n, sizeof *got);
    ck_assert_ptr_nonnull(got);
    for (i = 0; i < n; i++) {
        fingerprint(&r[i], line, sizeof line);
        got[i] = strdup(line);
    }
    qsort(got, n, sizeof *got, cmp_str);
    snprintf(path, sizeof path, "%s/tests/runner/invariant/%s.tsv", src, suite);
    if (getenv("QF_INVARIANT_WRITE") && *getenv("QF_INVARIANT_WRITE") == '1') {
        f = fopen(path, "w");
        ck_assert_msg(f != NULL, "cannot write %s", path);
        for (i = 0; i < n; i++)
            fprintf(f, "%s\n", got[i]);
        fclose(f);
    } else {
        f = fopen(path, "r");
        ck_assert_msg(f != NULL, "cannot read %s", path);
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            char *key = line;
            char **hit = bsearch(&key, got, n, sizeof *got, cmp_str);
            if (!hit) {
                if (bad++ < 10)
                    fprintf(stderr, "%s (--isolate %s): changed or missing: %s\n", suite, isolate, line);
            }
            nexp++;
        }
        fclose(f);
        ck_assert_msg(bad == 0, "%s (--isolate %s): %zu of %zu recorded pairs changed (first ones on stderr)", suite,
                      isolate, bad, nexp);
        ck_assert_msg(nexp == n, "%s (--isolate %s): %zu pairs ran, %zu recorded", suite, isolate, n, nexp);
    }
    for (i = 0; i < n; i++)
        free(got[i]);
    free(got);
    free(r);
}

/* Both isolation modes in the normal build; the default (server) alone
 * under the sanitizers, where each run takes several times longer: the
 * two modes' agreement is a property of the code, checked once. */
START_TEST(quick)
{
    check_suite("quick", "server");
    if (!qf_test_sanitized())
        check_suite("quick", "pair");
}
END_TEST

START_TEST(detection)
{
    check_suite("detection", "server");
    if (!qf_test_sanitized())
        check_suite("detection", "pair");
}
END_TEST

START_TEST(kernels)
{
    const char *san = getenv("QF_SANITIZED");
    if (san && (!strcmp(san, "ON") || !strcmp(san, "1")))
        return; /* minutes under ASan; the normal build checks it */
    {
        const char *iso = getenv("QF_INVARIANT_ISOLATE");
        check_suite("kernels", iso && !strcmp(iso, "pair") ? "pair" : "server");
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("invariant");
    TCase *tc = tcase_create("suites");
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || !*src)
        return 77;
    snprintf(dir, sizeof dir, "/tmp/qf-invariant-%d", (int)getpid());
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, quick);
    tcase_add_test(tc, detection);
    tcase_add_test(tc, kernels);
    suite_add_tcase(s, tc);
    return qf_test_run_in_dir(s, dir);
}
