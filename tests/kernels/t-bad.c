/* t-bad.c: the known-bad kernels (kernels/bad) against shapes/detection.yaml,
 * through `qualify run` as a user runs it (QF_QUALIFY_BIN, the suite from
 * QF_SOURCE_DIR; without them: skipped, 77).  Detection power, read back
 * from the journal:
 *   - every registered known-bad kernel has a row in `expected` below (a
 *     new one must say how it is caught) and is FAILED, CRASHED or TIMEOUT
 *     in at least one case of a `*-shows` group, with a reason that names
 *     the mechanism that caught it (bound, canary, poison, determinism,
 *     NaN, codes);
 *   - it runs in at least one `*-hidden*` group, the region where its
 *     defect does not show, and QUALIFIES in every case there;
 *   - no kernel of another kind (the controls: reference and model
 *     kernels) has anything but QUALIFIED;
 *   - the sweep exits 1 (failures found) and reports every pair.
 * Every failure message prints the case, kernel, verdict and reason. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *src;
static char dir[128];

/* How each known-bad kernel is caught: a piece of its reason. */
static const struct {
    const char *kernel;
    const char *reason;
} expected[] = {
    {"gemm.bad.f16acc",                "outside the bound derived from the claim"},
    {"gemm.bad.tile64",                "outside the bound derived from the claim"},
    {"gemm.bad.h100_fp8_as_f32",       "outside the bound derived from the claim"},
    {"gemm.bad.racy_order",            "determinism"},
    {"gemm.bad.overrun",               "canary: output d written out of bounds"},
    {"gemm.bad.unwritten",             "unwritten:"},
    {"softmax.bad.nomax",              "NaN or Inf where the reference is finite"},
    {"layernorm.bad.onepass",          "outside the bound derived from the claim"},
    {"rmsnorm.bad.no_eps",             "outside the bound derived from the claim"},
    {"attention.bad.drop_tail",        "outside the bound derived from the claim"},
    {"quantize.bad.mx_scale_off",      "scales differ"},
    {"quantize.bad.e4m3_nan_overflow", "got 0x7f, expected 0x7e"},
    {"attention.bad.flash_norescale",  "outside the bound derived from the claim"},
    {"attention.bad.flash_bf16p_as_f32", "outside the bound derived from the claim"},
    {"rope.bad.f16_angle",             "outside the bound derived from the claim"},
    {"layernorm.bad.welford_sq",       "outside the bound derived from the claim"},
};

static int failing(qf_verdict v)
{
    return v == QF_VERDICT_FAILED || v == QF_VERDICT_CRASHED || v == QF_VERDICT_TIMEOUT;
}

/* The group of a case: its id up to the first ':' ("tile64-shows"). */
static void group_of(const qf_result *r, char *g, size_t size)
{
    const char *c = strchr(r->case_id, ':');
    size_t n = c ? (size_t)(c - r->case_id) : 0;
    if (n >= size)
        n = size - 1;
    memcpy(g, r->case_id, n);
    g[n] = '\0';
}

START_TEST(detection)
{
    char cmd[4096], path[512], err[512], g[128];
    qf_result *r = NULL;
    qf_registry *reg = NULL;
    size_t n = 0, i, j, nk, controls = 0;
    struct timespec t0, t1;
    int st;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(cmd, sizeof cmd, "'%s' run '%s/shapes/detection.yaml' -o '%s/out' --jobs 2 --timeout 30 -q 2>'%s/stderr.txt'",
             bin, src, dir, dir);
    st = system(cmd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "qualify run shapes/detection.yaml: %.2f s\n",
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    /* Failures found: exit code 1 (2 would be a suite or usage error). */
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "qualify run exited %d (see %s/stderr.txt)",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, dir);
    snprintf(path, sizeof path, "%s/out/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_gt(n, 0);

    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    nk = 0;
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        const char *want = NULL;
        size_t caught = 0, hidden = 0;
        if (k->kind != QF_KERNEL_KNOWN_BAD)
            continue;
        nk++;
        for (j = 0; j < sizeof expected / sizeof expected[0]; j++)
            if (!strcmp(expected[j].kernel, k->name))
                want = expected[j].reason;
        ck_assert_msg(want != NULL, "known-bad kernel %s has no row in t-bad.c's table", k->name);
        for (j = 0; j < n; j++) {
            if (strcmp(r[j].kernel, k->name))
                continue;
            ck_assert_str_eq(r[j].kernel_kind, "known-bad");
            group_of(&r[j], g, sizeof g);
            if (strstr(g, "-shows")) {
                if (failing(r[j].verdict) && r[j].reason[0] && strstr(r[j].reason, want))
                    caught++;
            } else {
                ck_assert_msg(strstr(g, "-hidden") != NULL, "%s: group '%s' is neither -shows nor -hidden",
                              r[j].case_id, g);
                ck_assert_msg(r[j].verdict == QF_VERDICT_QUALIFIED,
                              "%s %s, where its defect does not show: %s (%s)", k->name, r[j].case_id,
                              qf_verdict_name(r[j].verdict), r[j].reason);
                hidden++;
            }
        }
        ck_assert_msg(caught > 0, "%s is never caught in its region with a reason containing '%s'", k->name,
                      want);
        ck_assert_msg(hidden > 0, "%s has no case where its defect does not show", k->name);
        fprintf(stderr, "%-32s caught in %zu case(s), qualified in %zu\n", k->name, caught, hidden);
    }
    ck_assert_uint_eq(nk, sizeof expected / sizeof expected[0]);

    /* Controls: good kernels beside the bad ones never fail. */
    for (j = 0; j < n; j++) {
        if (!strcmp(r[j].kernel_kind, "known-bad"))
            continue;
        ck_assert_msg(r[j].verdict == QF_VERDICT_QUALIFIED, "%s (%s) %s: %s (%s)", r[j].kernel,
                      r[j].kernel_kind, r[j].case_id, qf_verdict_name(r[j].verdict), r[j].reason);
        controls++;
    }
    ck_assert_uint_gt(controls, 0);
    qf_registry_free(reg);
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/bad");
    TCase *tc = tcase_create("detection");
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || !*src) {
        fprintf(stderr, "QF_QUALIFY_BIN or QF_SOURCE_DIR is not set: skipped\n");
        return QF_TEST_SKIP;
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-bad-%d", (int)getpid());
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, detection);
    suite_add_tcase(s, tc);
    return qf_test_run_in_dir(s, dir);
}
