/* t-shard-kernels.c: a 3-shard sweep of shapes/kernels.yaml (qualify run
 * --shard I/3, qualify merge) equals the unsharded run: every record in
 * plan order with the same verdict, reason, metrics and bound, the same
 * summary (docs/cluster.md).  In a sanitizer build the small suite of
 * qf_shard_test.h instead, so the test keeps its time.  Prints each
 * shard's summed pair wall time and their max / mean.  Without
 * QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_shard_test.h"

/* Sum of the journal's wall_s: a shard's measured cost. */
static double journal_wall(const char *name)
{
    char *text = qf_cli_slurp(qf_test_path(dir, name)), *line, *save = NULL;
    double sum = 0;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *o = json_loads(line, 0, NULL);
        sum += json_real_value(json_object_get(o, "wall_s"));
        json_decref(o);
    }
    free(text);
    return sum;
}

START_TEST(merged_equals_unsharded)
{
    char suite[4200], shard[64];
    const char *src = getenv("QF_SOURCE_DIR");
    double w[3], mx = 0, mean = 0;
    int i;
    /* kernels.yaml in the normal build; under ASan the small suite, so the
     * test stays within its minute. */
    if (src && *src && !qf_test_sanitized())
        snprintf(suite, sizeof suite, "%s/shapes/kernels.yaml", src);
    else
        snprintf(suite, sizeof suite, "%s", small_suite("small.yaml", ""));
    run(suite, "k-full", "-j 2");
    for (i = 0; i < 3; i++) {
        snprintf(shard, sizeof shard, "--shard %d/3 -j 2", i);
        run(suite, i == 0 ? "k0" : i == 1 ? "k1" : "k2", shard);
    }
    {
        qf_cli_result r = qf_cli_expectf(
            bin, "merge", 0, NULL, "'%s/k2' '%s/k0/results.json' '%s/k1' -o '%s/k-m'", dir, dir, dir, dir);
        ck_assert_msg(strstr(r.out, "merged 3 shards"), "%s", r.out);
        qf_cli_result_free(&r);
    }
    same_results("k-full/results.json", "k-m/results.json");
    for (i = 0; i < 3; i++) {
        w[i] = journal_wall(i == 0 ? "k0/journal.jsonl" : i == 1 ? "k1/journal.jsonl" : "k2/journal.jsonl");
        mx = w[i] > mx ? w[i] : mx;
        mean += w[i] / 3;
    }
    printf("shard wall_s sums %.2f %.2f %.2f: max/mean %.3f\n", w[0], w[1], w[2], mx / mean);
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-shard-kernels-%d", (int)getpid());
    return qf_test_run_in_dir(qf_test_suite("cli/shard-kernels", "kernels", 600, NULL, NULL, 0, NULL,
                                            QF_TESTS(merged_equals_unsharded)),
                              dir);
}
