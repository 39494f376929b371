/* t-shard.c: 'qualify run --shard I/N' and 'qualify merge' as separate
 * processes (QF_QUALIFY_BIN; docs/cluster.md), on a small suite
 * (tests/cluster/t-slurm.c merges shapes/kernels.yaml).  Each merge error (a
 * missing, duplicated or incomplete shard; a shard of another suite,
 * kernel set, qualify version, options or N; not a shard) exits 2 naming
 * it; bad --shard values exit 2; a shard killed with SIGKILL resumes with
 * --resume and the same --shard, and its merge equals the uninterrupted
 * result; --list --shard prints the pairs the shard's journal lists; a
 * FAILED pair makes the merge exit 1.  Without QF_QUALIFY_BIN: skipped (77).
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_shard_test.h"

/* The small suite's three shards s0, s1, s2 and its unsharded run, once. */
static const char *small_shards(void)
{
    const char *suite = small_suite("small.yaml", "");
    struct stat st;
    char shard[32];
    int i;
    if (stat(qf_test_path(dir, "s2/results.json"), &st) == 0)
        return suite;
    run(suite, "full", "-j 2");
    for (i = 0; i < 3; i++) {
        snprintf(shard, sizeof shard, "--shard %d/3 -j 2", i);
        run(suite, i == 0 ? "s0" : i == 1 ? "s1" : "s2", shard);
    }
    return suite;
}

/* A copy of shard FROM as NAME whose journal header has the sed
 * expression EDIT applied, or (EDIT NULL) whose journal loses its last
 * DROP records. */
static void doctored(const char *from, const char *name, const char *edit, int drop)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s' && cp -r '%s/%s' '%s/%s'", dir, name, dir, from, dir, name);
    ck_assert_int_eq(system(cmd), 0);
    if (edit)
        snprintf(cmd, sizeof cmd, "sed -i '1%s' '%s/%s/journal.jsonl'", edit, dir, name);
    else
        snprintf(cmd, sizeof cmd,
                 "head -n -%d '%s/%s/journal.jsonl' > '%s/cut.tmp' && mv '%s/cut.tmp' '%s/%s/journal.jsonl'",
                 drop, dir, name, dir, dir, dir, name);
    ck_assert_int_eq(system(cmd), 0);
}

/* qualify merge ARGS (shard names under dir) rejected, naming names. */
static void merge_rejects(const char *shards, const char *names, const char *what)
{
    char args[4096], buf[1024], *tok, *save = NULL;
    size_t len = 0;
    snprintf(buf, sizeof buf, "%s", shards);
    args[0] = '\0';
    for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        len += (size_t)snprintf(args + len, sizeof args - len, "'%s/%s' ", dir, tok);
    snprintf(args + len, sizeof args - len, "-o '%s/bad-merge'", dir);
    qf_cli_expect_reject(bin, "merge", args, names, what);
}

START_TEST(merge_errors)
{
    const char *plugin = getenv("QF_EXAMPLE_PLUGIN");
    char suite[600], other[600], args[2048];
    /* qf_test_path's buffers rotate: keep copies. */
    snprintf(suite, sizeof suite, "%s", small_shards());
    snprintf(other, sizeof other, "%s", small_suite("other.yaml", "-other"));
    run(other, "o2", "--shard 2/3 -j 2");
    run(suite, "seed2", "--shard 2/3 --seed 7 -j 2");
    run(suite, "n4", "--shard 2/4 -j 2");
    merge_rejects("s0 s1", "shard 2/3 missing", "a missing shard");
    merge_rejects("s0 s1 s1 s2", "given twice", "a duplicated shard");
    merge_rejects("s0 s1 o2", "another suite", "a shard of another suite");
    merge_rejects("s0 s1 seed2", "other options", "a shard with another --seed");
    merge_rejects("s0 s1 n4", "N differs", "a shard of another N");
    if (plugin &&
        access(plugin, R_OK) == 0) { /* a real second kernel set: the example plugin's kernels too */
        snprintf(args, sizeof args, "--shard 2/3 -j 2 --plugin '%s'", plugin);
        run(suite, "kset", args);
    } else {
        doctored("s2", "kset", "s/\"kernels_sha256\":\"/&0/", 0);
    }
    merge_rejects("s0 s1 kset", "another kernel set", "a shard of another kernel set");
    doctored("s2", "ver", "s/\"qualify_version\":\"/&9./", 0);
    merge_rejects("s0 s1 ver", "another qualify version", "a shard of another qualify version");
    doctored("s2", "cut", NULL, 3);
    merge_rejects("s0 s1 cut", "incomplete: 3 of", "a shard with 3 records missing");
    merge_rejects("s0 s1 full", "not a shard", "an unsharded run");
    merge_rejects("s0 s1 nowhere", "nowhere", "a directory that does not exist");
    doctored("s2", "nores", "s/x/x/", 0);
    ck_assert_int_eq(remove(qf_test_path(dir, "nores/results.json")), 0);
    merge_rejects("s0 s1 nores", "no readable results.json", "a shard without results.json");
    qf_cli_expect_reject(bin, "merge", "-o x", "no shard given", "no shard");
    snprintf(args, sizeof args, "'%s/s0' '%s/s1' '%s/s2' -o '%s/s1'", dir, dir, dir, dir);
    qf_cli_expect_reject(bin, "merge", args, "shard 1's own directory", "-o a shard's directory");
}
END_TEST

START_TEST(bad_shard_values)
{
    static const char *const bad[] = {"3/3", "-1/3", "1/0", "abc", "1/3x", "1", "/3", "0/65537"};
    char suite[600], args[1024];
    size_t i;
    snprintf(suite, sizeof suite, "%s", small_suite("small.yaml", ""));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "'%s' --shard '%s' -o '%s/never'", suite, bad[i], dir);
        qf_cli_expect_reject(bin, "run", args, "--shard", bad[i]);
    }
}
END_TEST

START_TEST(resume_killed_shard)
{
    char suite[600], killed[300], journal[400], args[2048];
    pid_t pid;
    int st, i;
    snprintf(suite, sizeof suite, "%s", small_shards());
    snprintf(killed, sizeof killed, "%s/killed", dir);
    snprintf(journal, sizeof journal, "%s/journal.jsonl", killed);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(bin, bin, "run", suite, "--shard", "1/3", "-j", "1", "-o", killed, "-q", (char *)NULL);
        _exit(127);
    }
    /* SIGKILL once a few records are on disk (or when it is done). */
    for (i = 0; i < 100000; i++) {
        struct timespec ts = {0, 200000};
        if (qf_test_count_lines(journal) >= 6 || waitpid(pid, &st, WNOHANG) == pid)
            break;
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    /* Killed: the merge names it incomplete; another shard's --resume is refused. */
    merge_rejects("s0 killed s2", "incomplete", "a killed shard");
    snprintf(args, sizeof args, "'%s' --shard 0/3 --resume -o '%s'", suite, killed);
    qf_cli_expect_reject(bin, "run", args, "not this shard 0/3", "--resume as another shard");
    snprintf(args, sizeof args, "'%s' --resume -o '%s'", suite, killed);
    qf_cli_expect_reject(bin, "run", args, "resume it with the same --shard", "--resume without --shard");
    run(suite, "killed", "--shard 1/3 --resume -j 2");
    {
        qf_cli_result r =
            qf_cli_expectf(bin, "merge", 0, NULL, "'%s/s0' '%s' '%s/s2' -o '%s/km'", dir, killed, dir, dir);
        qf_cli_result_free(&r);
    }
    same_results("full/results.json", "km/results.json");
}
END_TEST

/* --list --shard I/N prints the shard's pairs: those its journal header
 * lists, in the same order; the three lists cover the plan once. */
START_TEST(list_shard)
{
    char suite[600], args[1024], name[32];
    size_t total = 0, plan = 0;
    int i;
    snprintf(suite, sizeof suite, "%s", small_shards());
    for (i = 0; i < 3; i++) {
        qf_cli_result r;
        json_t *hdr, *pairs;
        char *text, *line, *save = NULL, want[1024];
        size_t k;
        snprintf(args, sizeof args, "'%s' --list --shard %d/3", suite, i);
        r = qf_cli_expect(bin, "run", args, 0, NULL);
        snprintf(name, sizeof name, "s%d/journal.jsonl", i);
        text = qf_cli_slurp(qf_test_path(dir, name));
        *strchr(text, '\n') = '\0';
        hdr = json_loads(text, 0, NULL);
        ck_assert_ptr_nonnull(hdr);
        pairs = json_object_get(json_object_get(hdr, "shard"), "pairs");
        plan = (size_t)json_integer_value(json_object_get(json_object_get(hdr, "shard"), "plan_pairs"));
        for (k = 0, line = strtok_r(r.out, "\n", &save); line; k++, line = strtok_r(NULL, "\n", &save)) {
            const json_t *p = json_array_get(pairs, k);
            ck_assert_ptr_nonnull(p);
            snprintf(want, sizeof want, "%s %s", json_string_value(json_array_get(p, 1)),
                     json_string_value(json_array_get(p, 2)));
            ck_assert_str_eq(line, want);
        }
        ck_assert_uint_eq(k, json_array_size(pairs));
        total += k;
        json_decref(hdr);
        free(text);
        qf_cli_result_free(&r);
    }
    ck_assert_uint_eq(total, plan);
}
END_TEST

/* A failing pair fails the merge as it fails the run: exit 1, the merged
 * junit.xml has the failure; a shard's own exit code does not matter. */
START_TEST(merge_exit_one)
{
    char args[2048];
    qf_cli_result r;
    int i;
    qf_test_write_text(
        dir, "bad.yaml",
        "suite: bad\nrefute: false\nop: gemm\nkernels: [gemm.cpu.naive.f32, gemm.bad.racy_order]\n"
        "dtypes: [float32]\nshapes: {M: [3, 8], N: [4], K: [5]}\n");
    for (i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "'%s/bad.yaml' --shard %d/2 -o '%s/bad%d' -q", dir, i, dir, i);
        r = qf_cli_run(bin, "run", args);
        ck_assert_msg(r.rc == 0 || r.rc == 1, "shard %d: exit %d: %s", i, r.rc, r.err);
        qf_cli_result_free(&r);
    }
    r = qf_cli_expectf(bin, "merge", 1, NULL, "'%s/bad0' '%s/bad1' -o '%s/bad-m'", dir, dir, dir);
    ck_assert_msg(strstr(r.out, "FAILED"), "%s", r.out);
    qf_cli_result_free(&r);
    {
        char *junit = qf_cli_slurp(qf_test_path(dir, "bad-m/junit.xml"));
        ck_assert_ptr_nonnull(strstr(junit, "<failure"));
        free(junit);
    }
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-shard-%d", (int)getpid());
    return qf_test_run_in_dir(qf_test_suite("cli/shard", "shard", 300, NULL, NULL, 0, NULL,
                                            QF_TESTS(bad_shard_values, list_shard, merge_errors,
                                                     merge_exit_one, resume_killed_shard)),
                              dir);
}
