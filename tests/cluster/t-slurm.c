/* t-slurm.c: shapes/kernels.yaml split in 3 shards, merged, equals the
 * unsharded run (issue 16):
 *   - through_slurm: a one-node Slurm started by tests/cluster/slurm-local
 *     (munged, slurmctld and slurmd in the scratch folder) and `qualify
 *     slurm kernels.yaml --shards 3 --submit --wait`: three array tasks
 *     (`qualify run --shard I/3`) and the dependent merge job;
 *   - local_shards, where Slurm cannot start: `qualify run --shard I/3`
 *     three times and `qualify merge` (prints each shard's summed pair
 *     wall time, max / mean);
 * compared with the unsharded run record by record (verdict, reason,
 * metrics, bound: all but times and memory) and in the summary.  And
 * scripts_written: the scripts `qualify slurm` writes, and its usage
 * errors.
 * The sweeps run in normal builds only: under the sanitizers kernels.yaml
 * takes many minutes, and tests/cli/t-shard covers the merge there (a
 * killed shard resumed and merged equals the uninterrupted run).  The
 * Slurm sweep is skipped, with slurm-local's reason, where Slurm cannot
 * start (not installed, not root).  Without QF_QUALIFY_BIN: skipped (77). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_shard_test.h"

static const char *src;
static int slurm_up;

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The unsharded run both comparisons use, run by the first that needs it
 * (each test is its own process; the folder is shared). */
static void unsharded(const char *suite)
{
    if (access(qf_test_path(dir, "whole/results.json"), F_OK))
        run(suite, "whole", "-j 2");
}

/* Sum of a journal's wall_s: a shard's measured cost. */
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

START_TEST(local_shards)
{
    char suite[4200], shard[64], name[32];
    double w[3], mx = 0, mean = 0;
    int i;
    snprintf(suite, sizeof suite, "%s/shapes/kernels.yaml", src);
    unsharded(suite);
    for (i = 0; i < 3; i++) {
        snprintf(shard, sizeof shard, "--shard %d/3 -j 2", i);
        snprintf(name, sizeof name, "k%d", i);
        run(suite, name, shard);
    }
    {
        qf_cli_result r = qf_cli_expectf(
            bin, "merge", 0, NULL, "'%s/k2' '%s/k0/results.json' '%s/k1' -o '%s/k-m'", dir, dir, dir, dir);
        ck_assert_msg(strstr(r.out, "merged 3 shards"), "%s", r.out);
        qf_cli_result_free(&r);
    }
    same_results("whole/results.json", "k-m/results.json");
    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "k%d/journal.jsonl", i);
        w[i] = journal_wall(name);
        mx = w[i] > mx ? w[i] : mx;
        mean += w[i] / 3;
    }
    printf("local shards: wall_s sums %.2f %.2f %.2f: max/mean %.3f\n", w[0], w[1], w[2], mx / mean);
}
END_TEST

START_TEST(through_slurm)
{
    char cmd[8192], suite[4200];
    int rc, i;
    snprintf(suite, sizeof suite, "%s/shapes/kernels.yaml", src);
    unsharded(suite);
    /* Each task takes one CPU and runs --jobs 1: the node's CPUs run that
     * many shards at once. */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && SLURM_CONF='%s/slurm/slurm.conf' timeout 1200 '%s' slurm '%s' --shards 3 -o sharded "
             "--cpus-per-task 1 --submit --wait >slurm.log 2>&1",
             dir, dir, bin, suite);
    rc = sh(cmd);
    if (rc > 1) {
        snprintf(cmd, sizeof cmd, "cat '%s/slurm.log' '%s'/sharded/slurm/*.log >&2", dir, dir);
        sh(cmd);
    }
    ck_assert_msg(rc <= 1, "qualify slurm --submit --wait exited %d (logs above)", rc);
    /* Three array tasks, each its own slice, each a journal. */
    for (i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "test -s '%s/sharded/shard-%d/journal.jsonl'", dir, i);
        ck_assert_msg(sh(cmd) == 0, "shard %d wrote no journal", i);
    }
    same_results("whole/results.json", "sharded/merged/results.json");
    printf("through Slurm: 3 array tasks merged equal the unsharded run\n");
}
END_TEST

/* The scripts `qualify slurm` writes without --submit: one array task per
 * shard, the run options quoted for the shell, --devices all for several
 * GPUs a task, a merge of every shard; and its usage errors (exit 2). */
START_TEST(scripts_written)
{
    char cmd[8192], *s;
    static const char *const bad[] = {"--shards 0", "", "--shards 2 --partition 'a b'", "--shards 2 --wait",
                                      "--shards 2 --sbatch-option \"$(printf 'a\\nb')\""};
    size_t i;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' --shards 5 -o scripts --partition gpu "
             "--gpus-per-task 2 --time 1:00:00 -- --seed 7 --plugin \"/x/a b'c.so\" >/dev/null",
             dir, bin, src);
    ck_assert_int_eq(sh(cmd), 0);
    s = qf_cli_slurp(qf_test_path(dir, "scripts/slurm/shards.sbatch"));
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --array=0-4\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --partition=gpu\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --gpus-per-task=2\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --time=1:00:00\n"));
    ck_assert_ptr_nonnull(strstr(s, "--shard \"$I/5\""));
    ck_assert_ptr_nonnull(strstr(s, " --devices all --seed 7 --plugin '/x/a b'\\''c.so'"));
    free(s);
    s = qf_cli_slurp(qf_test_path(dir, "scripts/slurm/merge.sbatch"));
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "\"$D/shard-0\" \"$D/shard-1\" \"$D/shard-2\" \"$D/shard-3\" \"$D/shard-4\" -o"));
    free(s);
    snprintf(cmd, sizeof cmd, "sh -n '%s/scripts/slurm/shards.sbatch' && sh -n '%s/scripts/slurm/merge.sbatch'", dir,
             dir);
    ck_assert_int_eq(sh(cmd), 0);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' %s 2>/dev/null", dir, bin, src,
                 bad[i]);
        ck_assert_msg(sh(cmd) == 2, "qualify slurm SUITE %s: not exit 2", bad[i]);
    }
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm nonexistent.yaml --shards 2 2>/dev/null", dir, bin);
    ck_assert_int_eq(sh(cmd), 2);
}
END_TEST

int main(void)
{
    char cmd[8192];
    Suite *s;
    TCase *tc;
    int rc, sweeps;
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    src = qf_test_require_env("QF_SOURCE_DIR");
    snprintf(dir, sizeof dir, "/tmp/qf-t-slurm-%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (sh(cmd))
        return EXIT_FAILURE;
    sweeps = !qf_test_sanitized();
    if (sweeps) {
        snprintf(cmd, sizeof cmd, "'%s/tests/cluster/slurm-local' start '%s/slurm'", src, dir);
        slurm_up = sh(cmd) == 0;
    } else {
        fprintf(stderr, "t-slurm: sanitizer build: the kernels.yaml sweeps are the normal build's "
                        "(tests/cli/t-shard merges under the sanitizers)\n");
    }
    s = suite_create("cluster/slurm");
    tc = tcase_create("slurm");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, scripts_written);
    /* The Slurm tasks are the local runs (`qualify run --shard I/3`, then
     * `qualify merge`) under Slurm: with Slurm up, the local sweep would
     * repeat them (a kernels.yaml of test time), so it runs only without. */
    if (slurm_up)
        tcase_add_test(tc, through_slurm);
    else if (sweeps)
        tcase_add_test(tc, local_shards);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    if (slurm_up) {
        snprintf(cmd, sizeof cmd, "'%s/tests/cluster/slurm-local' stop '%s/slurm'", src, dir);
        sh(cmd);
    } else if (sweeps && rc == EXIT_SUCCESS) {
        fprintf(stderr, "t-slurm: Slurm did not start (the reason is above): the sweep through Slurm "
                        "is skipped, the local shards ran\n");
        rc = QF_TEST_SKIP;
    }
    qf_test_rmtree(dir);
    return rc;
}
