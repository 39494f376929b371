/* t-standalone.c: the repository stands alone (docs/style.md#the-repository-stands-alone).
 *
 * No tracked file may cite the design notes that lived beside the
 * repository during its first development, nor a path outside the tree:
 * what the code relies on is in docs/ (numerics.md for the facts and their
 * primary sources).  The tracked files are those of `git -C $QF_SOURCE_DIR
 * ls-files`; without git or a checkout the test is skipped (exit 77), never
 * passed.
 */
#define _POSIX_C_SOURCE 200809L
#include "qf_test.h"

#include <string.h>
#include <sys/stat.h>

/* The names are split so that this file does not match itself. */
static const char *const patterns[] = {
    "DESIGN" ".md",
    "FACTS" ".md",
    "STYLE" ".md",
    ".." "/shared",   /* the notes' folder, relative to the checkout */
    "/wo" "rk/",      /* an absolute path of the machine the notes lived on */
};
#define N_PATTERNS (sizeof patterns / sizeof patterns[0])

static const char *src_dir(void)
{
    const char *s = getenv("QF_SOURCE_DIR");
    return s && *s ? s : NULL;
}

/* The first pattern found in line (case-sensitive: docs/style.md is fine),
 * or NULL. */
static const char *match(const char *line)
{
    size_t i;
    for (i = 0; i < N_PATTERNS; i++)
        if (strstr(line, patterns[i]))
            return patterns[i];
    return NULL;
}

typedef struct {
    char **v;
    size_t n, cap;
} strlist;

static void strlist_add(strlist *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        ck_assert_ptr_nonnull(l->v);
    }
    l->v[l->n] = malloc(len + 1);
    ck_assert_ptr_nonnull(l->v[l->n]);
    memcpy(l->v[l->n], s, len);
    l->v[l->n][len] = 0;
    l->n++;
}

static void strlist_free(strlist *l)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Tracked files, NUL-separated from `git ls-files -z`. */
static void tracked_files(strlist *out)
{
    char cmd[4400], *buf = NULL;
    size_t len = 0, cap = 0, got, i, start;
    FILE *p;
    snprintf(cmd, sizeof cmd, "git -C '%s' ls-files -z", src_dir());
    p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run git ls-files");
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        got = fread(buf + len, 1, cap - len, p);
        if (got == 0)
            break;
        len += got;
    }
    ck_assert_msg(pclose(p) == 0, "git ls-files failed in %s", src_dir());
    for (i = start = 0; i < len; i++)
        if (buf[i] == 0) {
            if (i > start)
                strlist_add(out, buf + start, i - start);
            start = i + 1;
        }
    free(buf);
}

/* Print path:line: pattern for every hit in one file; the number of hits.
 * Files that cannot be read (a directory of a submodule, a file deleted but
 * still tracked) and binary files (a NUL byte) have none. */
static size_t scan_file(const char *rel)
{
    char path[4400], *line = NULL;
    size_t cap = 0, lineno = 0, hits = 0;
    ssize_t n;
    struct stat st;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", src_dir(), rel);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    f = fopen(path, "r");
    if (!f)
        return 0;
    {
        char head[8192];
        size_t got = fread(head, 1, sizeof head, f);
        if (memchr(head, 0, got)) { /* binary: no citations */
            fclose(f);
            return 0;
        }
        rewind(f);
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        const char *m;
        lineno++;
        if ((m = match(line)) != NULL) {
            hits++;
            fprintf(stderr, "%s:%zu: names %s\n", rel, lineno, m);
        }
    }
    free(line);
    fclose(f);
    return hits;
}

START_TEST(test_match)
{
    ck_assert_ptr_nonnull(match("see FACTS" ".md \"Error bounds\""));
    ck_assert_ptr_nonnull(match("(DESIGN" ".md, \"Verdicts\")"));
    ck_assert_ptr_nonnull(match("STYLE" ".md practice 12"));
    ck_assert_ptr_nonnull(match("facts from ../" "shared/notes"));
    ck_assert_ptr_null(match("docs/style.md#seeds"));
    ck_assert_ptr_null(match("docs/numerics.md#matrix-units"));
    ck_assert_ptr_null(match("include: ../../../shapes/workloads.yaml"));
}
END_TEST

START_TEST(test_standalone)
{
    strlist files = {0};
    size_t i, hits = 0;
    tracked_files(&files);
    ck_assert_msg(files.n > 0, "git ls-files listed nothing in %s", src_dir());
    for (i = 0; i < files.n; i++)
        hits += scan_file(files.v[i]);
    fprintf(stderr, "scanned %zu tracked files\n", files.n);
    ck_assert_msg(hits == 0,
                  "%zu line(s) cite a file outside the repository (listed above); cite the docs/ page "
                  "that holds the fact (docs/numerics.md, docs/verdicts.md, docs/runner.md, docs/style.md)",
                  hits);
    strlist_free(&files);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("docs/standalone");
    TCase *t = tcase_create("standalone");
    tcase_add_test(t, test_match);
    tcase_add_test(t, test_standalone);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    char cmd[4400];
    if (!src_dir()) {
        fprintf(stderr, "skipped: QF_SOURCE_DIR is not set\n");
        return QF_TEST_SKIP;
    }
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --is-inside-work-tree >/dev/null 2>&1", src_dir());
    if (system(cmd) != 0) {
        fprintf(stderr, "skipped: no git, or %s is not a git checkout\n", src_dir());
        return QF_TEST_SKIP;
    }
    return qf_test_run(suite());
}
