/* t-issue5.c: the flash attention, Welford LayerNorm and RoPE CPU kernels
 * (attention.cpu.flash.f32, attention.cpu.flash_bf16p,
 * layernorm.cpu.welford.f32, rope.cpu.f32) over 20 seeds, through
 * `qualify run tests/kernels/issue5_seeds.yaml` as a user runs it
 * (QF_QUALIFY_BIN, QF_SOURCE_DIR; without them: skipped, 77).  Read back
 * from the journal: every case QUALIFIED (the false-failure count is
 * printed and must be 0), each kernel seen with 20 distinct seeds, and
 * its bound derived from the claim (kind attention, norm or rope, not a
 * claimed ulp).  Their detection power is tests/kernels/t-bad
 * (shapes/detection.yaml) and tests/bounds/t-welford, t-rope. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test.h"

static const char *bin, *src;
static char dir[128];

static const struct {
    const char *kernel, *bound;
} kernels[] = {
    {"attention.cpu.flash.f32", "attention"},
    {"attention.cpu.flash_bf16p", "attention"},
    {"layernorm.cpu.welford.f32", "norm"},
    {"rope.cpu.f32", "rope"},
};

START_TEST(seeds20)
{
    char cmd[4096], path[512], err[512];
    qf_result *r = NULL;
    size_t n = 0, i, j, bad = 0;
    int st;
    snprintf(cmd, sizeof cmd,
             "'%s' run '%s/tests/kernels/issue5_seeds.yaml' -o '%s/out' --jobs 2 -q 2>'%s/stderr.txt'", bin,
             src, dir, dir);
    st = system(cmd);
    snprintf(path, sizeof path, "%s/out/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (j = 0; j < n; j++)
        if (r[j].verdict != QF_VERDICT_QUALIFIED) {
            if (bad++ < 10)
                fprintf(stderr, "%s %s: %s (%s)\n", r[j].kernel, r[j].case_id, qf_verdict_name(r[j].verdict),
                        r[j].reason);
        }
    fprintf(stderr, "issue5_seeds.yaml: %zu case runs, %zu not QUALIFIED (false failures)\n", n, bad);
    ck_assert_uint_eq(bad, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "qualify run exited %d",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    for (i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        uint64_t seen = 0; /* bit s: seed s (the suite's seeds are 0 .. 19) */
        size_t cases = 0, nseeds = 0;
        double util = 0;
        for (j = 0; j < n; j++) {
            if (strcmp(r[j].kernel, kernels[i].kernel))
                continue;
            cases++;
            ck_assert_str_eq(r[j].bound.kind, kernels[i].bound);
            /* derived from the claim, not a claimed ulp bound */
            ck_assert(isnan(r[j].bound.claimed_ulp));
            ck_assert(r[j].has_metrics);
            if (r[j].metrics.max_util > util)
                util = r[j].metrics.max_util;
            if (r[j].seed < 64)
                seen |= (uint64_t)1 << r[j].seed;
        }
        for (j = 0; j < 64; j++)
            nseeds += (seen >> j) & 1;
        fprintf(stderr, "%-28s %5zu cases, %zu seeds, max bound utilization %.3f\n", kernels[i].kernel, cases,
                nseeds, util);
        ck_assert_uint_ge(nseeds, 20);
    }
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/issue5");
    TCase *tc = tcase_create("seeds");
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || !*src) {
        fprintf(stderr, "QF_QUALIFY_BIN or QF_SOURCE_DIR is not set: skipped\n");
        return QF_TEST_SKIP;
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-issue5-%d", (int)getpid());
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, seeds20);
    suite_add_tcase(s, tc);
    return qf_test_run_in_dir(s, dir);
}
