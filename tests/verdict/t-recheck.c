/* t-recheck.c: every reader decides the verdicts again from the records'
 * evidence (docs/verdicts.md "Evidence, and verdicts decided again").  A
 * shard of a small sweep with a known-bad kernel (gemm.bad.tile64 FAILED
 * at M = 65) is edited as a user or a hostile kernel would edit it:
 *   - a journal record FAILED -> QUALIFIED, and also with its cause made
 *     "conforms": `qualify show`, `merge`, `enable`, `diff`, `report` and
 *     `run --resume` refuse it (exit 2), naming the pair;
 *   - results.json made to disagree with the journal by a record that is
 *     consistent in itself: `qualify merge` refuses the shard;
 *   - unedited, everything reads and merges.
 * Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

static const char suite[] = "suite: recheck\ninputs: [normal]\ngroups:\n"
                            "  - op: gemm\n    kernels: [gemm.cpu.naive.f32, gemm.bad.tile64]\n"
                            "    dtypes: [float32]\n    shapes: {M: [65], N: [8], K: [16]}\n";

/* Replace the first occurrence of `from` after the first `after` in PATH. */
static void edit(const char *path, const char *after, const char *from, const char *to)
{
    char *s = qf_test_slurp(path, NULL), *a, *at;
    FILE *f;
    a = strstr(s, after);
    ck_assert_msg(a != NULL, "%s has no '%s'", path, after);
    at = strstr(a, from);
    ck_assert_msg(at != NULL, "%s has no '%s' after '%s'", path, from, after);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(s, 1, (size_t)(at - s), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(s);
}

static void copy(const char *from, const char *to)
{
    size_t n;
    char *s = qf_test_slurp(from, &n);
    FILE *f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(s, 1, n, f), n);
    fclose(f);
    free(s);
}

/* Every reader refuses what is at dir/A now, naming the pair. */
static void all_refuse(const char *what)
{
    const char *pair = "gemm.bad.tile64 gemm/M=65";
    qf_cli_result r;
    fprintf(stderr, "-- %s\n", what);
    r = qf_cli_expectf(bin, "show", 2, pair, "%s/A/journal.jsonl", dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "merge", 2, pair, "%s/A -o %s/M-bad", dir, dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "enable", 2, pair, "%s/A/journal.jsonl -o %s/E-bad", dir, dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "diff", 2, pair, "%s/A/journal.jsonl %s/A/journal.jsonl", dir, dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "run", 2, pair, "%s/s.yaml --shard 0/1 -q -o %s/A --resume", dir, dir);
    qf_cli_result_free(&r);
}

START_TEST(edited_records_refused)
{
    char path[256], saved[256], res[256];
    qf_cli_result r;
    qf_test_write_text(dir, "s.yaml", suite);
    r = qf_cli_expectf(bin, "run", 1, NULL, "%s/s.yaml --shard 0/1 -q -o %s/A", dir, dir);
    qf_cli_result_free(&r);
    snprintf(path, sizeof path, "%s/A/journal.jsonl", dir);
    snprintf(saved, sizeof saved, "%s/journal.saved", dir);
    snprintf(res, sizeof res, "%s/A/results.json", dir);
    copy(path, saved);
    /* unedited: read, merged (exit 1: a FAILED pair), resumed */
    r = qf_cli_expectf(bin, "show", 1, NULL, "%s", path);
    ck_assert_msg(strstr(r.out, "FAILED"), "%s", r.out);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "merge", 1, NULL, "%s/A -o %s/M", dir, dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "run", 1, NULL, "%s/s.yaml --shard 0/1 -q -o %s/A --resume", dir, dir);
    qf_cli_result_free(&r);

    /* the verdict alone */
    edit(path, "\"kernel\":\"gemm.bad.tile64\"", "\"verdict\":\"FAILED\"", "\"verdict\":\"QUALIFIED\"");
    all_refuse("FAILED -> QUALIFIED");
    /* verdict and cause: the evidence still holds the violations */
    edit(path, "\"kernel\":\"gemm.bad.tile64\"", "\"cause\":\"bound\"", "\"cause\":\"conforms\"");
    all_refuse("FAILED (bound) -> QUALIFIED (conforms)");
    r = qf_cli_expectf(bin, "show", 2, "does not follow from its evidence", "%s", path);
    ck_assert_msg(strstr(r.err, "FAILED (bound)"), "%s", r.err);
    qf_cli_result_free(&r);
    copy(saved, path);

    /* results.json apart from the journal, consistent in itself: the
     * naive kernel's QUALIFIED made FAILED through an exact-output failure */
    edit(res, "\"kernel\": \"gemm.cpu.naive.f32\"", "\"verdict\": \"QUALIFIED\"", "\"verdict\": \"FAILED\"");
    edit(res, "\"kernel\": \"gemm.cpu.naive.f32\"", "\"cause\": \"conforms\"", "\"cause\": \"exact_index\"");
    edit(res, "\"kernel\": \"gemm.cpu.naive.f32\"", "\"outcome\": \"none\"",
         "\"outcome\": \"none\", \"exact_fail\": \"edited\"");
    r = qf_cli_expectf(bin, "show", 1, NULL, "%s", res); /* consistent: it reads */
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "merge", 2, "disagree on gemm.cpu.naive.f32", "%s/A -o %s/M2", dir, dir);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    bin = getenv("QF_QUALIFY_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "no QF_QUALIFY_BIN: skipped\n");
        return QF_TEST_SKIP;
    }
    snprintf(dir, sizeof dir, "/tmp/qf-t-recheck-%d", (int)getpid());
    return qf_test_run_in_dir(
        qf_test_suite("verdict/recheck", "recheck", 300, NULL, NULL, 0, NULL, QF_TESTS(edited_records_refused)), dir);
}
