/* t-slurm.c: a sharded sweep through a real Slurm (issue 16): a
 * single-node cluster started by tests/cluster/slurm-local (munged,
 * slurmctld, slurmd in a temporary folder), `qualify slurm SUITE --shards 3
 * --submit --wait`, and the merged results compared with an unsharded run
 * of the same suite: every record's verdict and figures, and the summary,
 * equal apart from what is measured per run (times, memory, provenance).
 * The suite is shapes/kernels.yaml (a smaller one in sanitizer builds,
 * where kernels.yaml takes many minutes).  Skipped (77) with the reason
 * when Slurm cannot start here (not installed, not root) or without
 * QF_QUALIFY_BIN. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

static const char *bin, *src;
static char dir[128];
static int slurm_up;

/* What differs between two runs of one sweep by nature: when and how
 * long, the memory measured, where (provenance), and the sharding. */
static const char *const volatile_keys[] = { "started",        "wall_s", "peak_rss_bytes", "peak_over_tensors",
                                             "timing",         "provenance", "shard", "shards",
                                             "device_index",   "device_uuid", "device_name", "devices",
                                             "generator_argv", NULL };

static void strip(json_t *j)
{
    size_t i;
    const char *k;
    json_t *v;
    void *tmp;
    if (json_is_array(j)) {
        json_array_foreach(j, i, v) strip(v);
        return;
    }
    if (!json_is_object(j))
        return;
    json_object_foreach_safe(j, tmp, k, v)
    {
        size_t s;
        int drop = 0;
        for (s = 0; volatile_keys[s]; s++)
            drop |= !strcmp(k, volatile_keys[s]);
        if (drop)
            json_object_del(j, k);
        else
            strip(v);
    }
}

static json_t *load_results(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j != NULL, "%s: %s (line %d)", path, e.text, e.line);
    strip(j);
    return j;
}

/* The first record (or the summary) that differs, named in the message. */
static void assert_same(const char *whole_path, const char *merged_path)
{
    json_t *a = load_results(whole_path), *b = load_results(merged_path);
    json_t *ca = json_object_get(a, "cases"), *cb = json_object_get(b, "cases");
    size_t i;
    ck_assert_msg(json_is_array(ca) && json_is_array(cb), "no cases array");
    ck_assert_msg(json_array_size(ca) == json_array_size(cb), "unsharded %zu records, merged %zu",
                  json_array_size(ca), json_array_size(cb));
    for (i = 0; i < json_array_size(ca); i++) {
        json_t *x = json_array_get(ca, i), *y = json_array_get(cb, i);
        if (!json_equal(x, y)) {
            char *sx = json_dumps(x, JSON_COMPACT), *sy = json_dumps(y, JSON_COMPACT);
            ck_abort_msg("record %zu differs:\nunsharded %.1500s\nmerged    %.1500s", i, sx, sy);
        }
    }
    ck_assert_msg(json_equal(json_object_get(a, "summary"), json_object_get(b, "summary")), "summaries differ");
    fprintf(stderr, "t-slurm: %zu records equal\n", json_array_size(ca));
    json_decref(a);
    json_decref(b);
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *suite_path(char *buf, size_t size)
{
    const char *san = getenv("QF_SANITIZED");
    if (san && *san && strcmp(san, "OFF") && strcmp(san, "0")) {
        /* Two ops, both dtype kinds, seeds: enough pairs (hundreds) for
         * three shards, minutes less than kernels.yaml under ASan. */
        FILE *f;
        snprintf(buf, size, "%s/small.yaml", dir);
        f = fopen(buf, "w");
        ck_assert_ptr_nonnull(f);
        fputs("suite: small\ninputs: [normal, uniform]\nseeds: 3\ngroups:\n"
              "  - op: gemm\n    kernels: [gemm.cpu.*]\n"
              "    dtypes: [float32, {in: bfloat16, acc: float32}]\n"
              "    shapes: {M: [1, 17], N: [5, 33], K: [16, 40]}\n"
              "  - op: softmax\n    kernels: [softmax.cpu.*]\n    dtypes: [float32]\n"
              "    shapes: {rows: [4], cols: [9, 100]}\n",
              f);
        fclose(f);
    } else
        snprintf(buf, size, "%s/shapes/kernels.yaml", src);
    return buf;
}

START_TEST(three_shards_through_slurm)
{
    char cmd[4096], suite[512], a[512], b[512];
    suite_path(suite, sizeof suite);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' run '%s' -q --jobs 2 -o whole >whole.log 2>&1", dir, bin, suite);
    ck_assert_int_le(sh(cmd), 1);
    /* Each task takes one CPU: the node's two run two shards at once. */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && SLURM_CONF='%s/slurm/slurm.conf' timeout 900 '%s' slurm '%s' --shards 3 -o sharded "
             "--cpus-per-task 1 --submit --wait >slurm.log 2>&1",
             dir, dir, bin, suite);
    {
        int rc = sh(cmd);
        if (rc > 1) {
            snprintf(cmd, sizeof cmd, "cat '%s/slurm.log' '%s'/sharded/slurm/*.log >&2", dir, dir);
            sh(cmd);
        }
        ck_assert_msg(rc <= 1, "qualify slurm --submit --wait exited %d (logs above)", rc);
    }
    snprintf(a, sizeof a, "%s/whole/results.json", dir);
    snprintf(b, sizeof b, "%s/sharded/merged/results.json", dir);
    assert_same(a, b);
    /* The shards really ran as three array tasks, each its own slice. */
    {
        int i;
        for (i = 0; i < 3; i++) {
            snprintf(cmd, sizeof cmd, "test -s '%s/sharded/shard-%d/journal.jsonl'", dir, i);
            ck_assert_msg(sh(cmd) == 0, "shard %d wrote no journal", i);
        }
    }
}
END_TEST

/* The scripts `qualify slurm` writes without --submit: one array task per
 * shard, the run options quoted for the shell, a merge of every shard. */
START_TEST(scripts_written)
{
    char cmd[4096], path[512], *s;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' --shards 5 -o scripts --partition gpu "
             "--gpus-per-task 2 --time 1:00:00 -- --seed 7 --plugin \"/x/a b'c.so\" >/dev/null",
             dir, bin, src);
    ck_assert_int_eq(sh(cmd), 0);
    snprintf(path, sizeof path, "%s/scripts/slurm/shards.sbatch", dir);
    s = qf_test_slurp(path, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --array=0-4\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --partition=gpu\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --gpus-per-task=2\n"));
    ck_assert_ptr_nonnull(strstr(s, "#SBATCH --time=1:00:00\n"));
    ck_assert_ptr_nonnull(strstr(s, "--shard \"$I/5\""));
    ck_assert_ptr_nonnull(strstr(s, " --devices all --seed 7"));
    ck_assert_ptr_nonnull(strstr(s, "--seed 7 --plugin '/x/a b'\\''c.so'"));
    free(s);
    snprintf(path, sizeof path, "%s/scripts/slurm/merge.sbatch", dir);
    s = qf_test_slurp(path, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "\"$D/shard-0\" \"$D/shard-1\" \"$D/shard-2\" \"$D/shard-3\" \"$D/shard-4\" -o"));
    free(s);
    snprintf(cmd, sizeof cmd, "sh -n '%s/scripts/slurm/shards.sbatch' && sh -n '%s/scripts/slurm/merge.sbatch'", dir,
             dir);
    ck_assert_int_eq(sh(cmd), 0);
    /* Usage errors: exit 2. */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' --shards 0 2>/dev/null", dir, bin, src);
    ck_assert_int_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' 2>/dev/null", dir, bin, src);
    ck_assert_int_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm '%s/shapes/quick.yaml' --shards 2 --partition 'a b' 2>/dev/null",
             dir, bin, src);
    ck_assert_int_eq(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' slurm nonexistent.yaml --shards 2 2>/dev/null", dir, bin);
    ck_assert_int_eq(sh(cmd), 2);
}
END_TEST

int main(void)
{
    char cmd[1024];
    Suite *s;
    TCase *tc;
    int rc, st;
    bin = getenv("QF_QUALIFY_BIN");
    src = getenv("QF_SOURCE_DIR");
    if (!bin || !*bin || !src || !*src) {
        fprintf(stderr, "t-slurm: QF_QUALIFY_BIN or QF_SOURCE_DIR not set: skipped\n");
        return QF_TEST_SKIP;
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-slurm-XXXXXX");
    if (!mkdtemp(dir))
        return EXIT_FAILURE;
    snprintf(cmd, sizeof cmd, "'%s/tests/cluster/slurm-local' start '%s/slurm'", src, dir);
    st = system(cmd);
    slurm_up = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    s = suite_create("cluster/slurm");
    tc = tcase_create("slurm");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, scripts_written);
    if (slurm_up)
        tcase_add_test(tc, three_shards_through_slurm);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    if (slurm_up) {
        snprintf(cmd, sizeof cmd, "'%s/tests/cluster/slurm-local' stop '%s/slurm'", src, dir);
        if (system(cmd)) {
        }
    } else if (rc == EXIT_SUCCESS) {
        /* The reason is slurm-local's message above. */
        fprintf(stderr, "t-slurm: Slurm did not start: the sweep through Slurm is skipped\n");
        rc = QF_TEST_SKIP;
    }
    if (rc == EXIT_SUCCESS) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) {
        }
    }
    return rc;
}
