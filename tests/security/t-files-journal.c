/* t-files-journal.c: journal repair on --resume (docs/runner.md "Resume").
 *   - D6: a complete garbage last line is dropped with a warning and cut
 *     from the file; before, it was accepted, left in place, and once the
 *     resumed run appended records after it, every later read refused the
 *     journal (garbage in the middle).
 *   - D7: a journal torn inside its header line resumes into a file whose
 *     first line is a header; before, the file had no header line at all.
 *   - A last line over 16 MiB (no record is that long) is dropped unread.
 *   - A bad line in the middle is still refused (exit 2, FILE:LINE).
 * Without QF_QUALIFY_BIN: skipped. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>

#include "_files_test.h"

static char dir[256], suite[512], out[512], j[600];

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-files-journal");
    snprintf(suite, sizeof suite, "%s", ft_tiny_suite(dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(j, sizeof j, "%s/journal.jsonl", out);
}

/* The tiny suite swept into out/ (extra: more options); asserts exit 0. */
static void sweep(const char *extra)
{
    ftr r = ft_run(dir, "run '%s' -o '%s' -q %s", suite, out, extra);
    ck_assert_msg(r.rc == 0, "run %s: exit %d: %s", extra, r.rc, r.err);
    ft_free(&r);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

/* Lines of PATH; asserts each is a JSON object, the first a header when
 * header is set; *cases counts the case records. */
static size_t check_lines(const char *path, int header, size_t *cases)
{
    char *text = qf_test_slurp(path, NULL), *line, *save = NULL;
    size_t n = 0;
    *cases = 0;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        const char *rec;
        ck_assert_msg(o && json_is_object(o), "%s: line %zu is not a JSON object: %.80s", path, n + 1, line);
        rec = json_string_value(json_object_get(o, "record"));
        ck_assert_msg(rec != NULL, "%s: line %zu has no 'record'", path, n + 1);
        if (n == 0 && header)
            ck_assert_msg(!strcmp(rec, "header"), "%s: line 1 is a '%s' record, not the header", path, rec);
        if (!strcmp(rec, "case"))
            (*cases)++;
        json_decref(o);
    }
    free(text);
    return n;
}

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_garbage_last_line)
{
    size_t lines, cases, lines2, cases2;
    ftr r;
    sweep("");
    lines = check_lines(j, 1, &cases);
    ck_assert_uint_gt(cases, 0);
    append(j, "this line is no record\n");
    r = ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out);
    ck_assert_msg(r.rc == 0, "resume: exit %d: %s", r.rc, r.err);
    /* Repaired: nothing but records, the same ones; and said so. */
    lines2 = check_lines(j, 1, &cases2);
    ck_assert_uint_eq(lines2, lines);
    ck_assert_uint_eq(cases2, cases);
    ck_assert_msg(strstr(r.err, "journal.jsonl: warning: the last line was not a case record; it was dropped"),
                  "no warning: %s", r.err);
    ft_free(&r);
    /* A resume that runs a pair appends it after good records only (the
     * last record dropped: its pair runs again; a suite with one more
     * case would be another sweep, which --resume refuses). */
    {
        char *text = qf_test_slurp(j, NULL), *last;
        size_t len = strlen(text);
        ck_assert(len > 1 && text[len - 1] == '\n');
        text[len - 1] = '\0';
        last = strrchr(text, '\n');
        ck_assert_ptr_nonnull(last);
        qf_test_write_file(j, text, (size_t)(last - text) + 1, NULL);
        free(text);
    }
    check_lines(j, 1, &cases2);
    ck_assert_uint_eq(cases2, cases - 1);
    r = ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out);
    ck_assert_msg(r.rc == 0, "second resume: exit %d: %s", r.rc, r.err);
    ck_assert_msg(!strstr(r.err, "warning"), "%s", r.err);
    ft_free(&r);
    check_lines(j, 1, &cases2);
    ck_assert_uint_eq(cases2, cases);
    r = ft_run(dir, "show '%s'", j);
    ck_assert_msg(r.rc == 0 && !strstr(r.err, "warning"), "show: exit %d: %s", r.rc, r.err);
    ft_free(&r);
}
END_TEST

/* A last line too long to be a record (over 16 MiB) is dropped unread. */
START_TEST(test_huge_last_line)
{
    size_t lines, cases, cases2, n = (17u << 20);
    char *junk = malloc(n + 2);
    ftr r;
    ck_assert_ptr_nonnull(junk);
    sweep("");
    lines = check_lines(j, 1, &cases);
    memset(junk, 'x', n);
    junk[n] = '\n';
    junk[n + 1] = '\0';
    append(j, junk);
    free(junk);
    r = ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out);
    ck_assert_msg(r.rc == 0, "resume: exit %d: %s", r.rc, r.err);
    ck_assert_uint_eq(check_lines(j, 1, &cases2), lines);
    ck_assert_uint_eq(cases2, cases);
    ck_assert_msg(strstr(r.err, "it was dropped"), "no warning: %s", r.err);
    ft_free(&r);
}
END_TEST

START_TEST(test_torn_header)
{
    size_t cases, fresh;
    ftr r;
    ck_assert_int_eq(mkdir(out, 0755), 0);
    qf_test_write_text(out, "journal.jsonl", "{\"record\":\"header\",\"format\":\"qualify-jou");
    r = ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out);
    ck_assert_msg(r.rc == 0, "resume: exit %d: %s", r.rc, r.err);
    /* line 1 the header, then every pair, as a fresh sweep has them */
    check_lines(j, 1, &cases);
    ck_assert_msg(strstr(r.err, "a new header was written"), "no warning: %s", r.err);
    ft_free(&r);
    ck_assert_int_eq(rename(j, qf_test_path(dir, "resumed.jsonl")), 0);
    sweep("");
    check_lines(j, 1, &fresh);
    ck_assert_uint_eq(cases, fresh);
}
END_TEST

START_TEST(test_bad_middle_line)
{
    char *text, *nl;
    sweep("");
    /* header, garbage, the cases */
    text = qf_test_slurp(j, NULL);
    nl = strchr(text, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    qf_test_write_file(j, text, strlen(text), "\nnot a record\n");
    append(j, nl + 1);
    free(text);
    ft_expect_2(ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out), "middle", "journal.jsonl:2:", NULL);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main("security/files-journal", "journal", 600, setup, teardown,
                        QF_TESTS(test_garbage_last_line, test_huge_last_line, test_torn_header, test_bad_middle_line));
}
