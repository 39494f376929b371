/* t-files.c: bad and hostile input files (docs/cli.md "Files qualify reads").
 *   - D5: a FIFO given as a suite, an include, a tensor (.npy,
 *     .safetensors), a results file (show, diff, enable, report), the
 *     journal of run --resume, a claim file, a plugin or an enablement table
 *     is refused at once with exit 2 and a message naming it; before, every
 *     command blocked forever in open(2) (the FIFO has no writer).  The
 *     journal of a fresh sweep is new: a FIFO there is replaced.
 *   - D12: a results file whose kernel name or case id is 100,000 bytes is
 *     refused by show, diff, report and enable, naming the file, the case
 *     and the member; before, show / diff / report cut it silently.
 *   - a suite's file input path longer than a qf_dist holds is refused, not
 *     cut (before, the runner cut it and read another file, or none).
 *   - audit's "no float tensor" message names the files it read.
 * Every command runs under timeout(1) (QF_TEST_HANG_S, 60 s): a blocked
 * command fails its test with exit 124.  Without QF_QUALIFY_BIN: skipped. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>

#include "_files_test.h"

static char dir[256];

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-files");
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

START_TEST(test_fifo_suite)
{
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s", ft_fifo(dir, "suite.yaml"));
    ft_expect_2(ft_run(dir, "run '%s' -o '%s/out' -q", fifo, dir), "suite", fifo, "not a regular file (a FIFO)",
                NULL);
    ft_expect_2(ft_run(dir, "run '%s' --list", fifo), "suite --list", fifo, "not a regular file", NULL);
}
END_TEST

START_TEST(test_fifo_include)
{
    char main_suite[512];
    ft_fifo(dir, "inc.yaml");
    qf_test_write_text(dir, "main.yaml", "suite: main\ninclude: inc.yaml\n");
    snprintf(main_suite, sizeof main_suite, "%s/main.yaml", dir);
    ft_expect_2(ft_run(dir, "run '%s' -o '%s/out' -q", main_suite, dir), "include", "main.yaml:2:10",
                "inc.yaml' is not a regular file (a FIFO)", NULL);
}
END_TEST

START_TEST(test_fifo_tensors)
{
    char npy[512], st[512];
    snprintf(npy, sizeof npy, "%s", ft_fifo(dir, "w.npy"));
    snprintf(st, sizeof st, "%s", ft_fifo(dir, "w.safetensors"));
    ft_expect_2(ft_run(dir, "audit '%s' --formats bf16", npy), ".npy", npy, "not a regular file (a FIFO)", NULL);
    ft_expect_2(ft_run(dir, "audit '%s' --formats bf16", st), ".safetensors", st, "not a regular file (a FIFO)",
                NULL);
    ft_expect_2(ft_run(dir, "ref softmax --x '%s' -o '%s/o.npy'", npy, dir), "ref --x", npy, "not a regular file",
                NULL);
    ft_expect_2(ft_run(dir, "workload --weights '%s' --layers 1", st), "workload --weights", st,
                "not a regular file", NULL);
}
END_TEST

START_TEST(test_fifo_results)
{
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s", ft_fifo(dir, "results.json"));
    ft_expect_2(ft_run(dir, "show '%s'", fifo), "show", fifo, "not a regular file (a FIFO)", NULL);
    ft_expect_2(ft_run(dir, "diff '%s' '%s'", fifo, fifo), "diff", fifo, "not a regular file", NULL);
    ft_expect_2(ft_run(dir, "enable '%s' -o '%s/en'", fifo, dir), "enable", fifo, "not a regular file", NULL);
    ft_expect_2(ft_run(dir, "report '%s' -o '%s/r.html'", fifo, dir), "report", fifo, NULL);
    ft_expect_2(ft_run(dir, "guard '%s' --kernel k --dtype float32 --shape M=1", fifo), "guard table", fifo,
                "not a regular file", NULL);
}
END_TEST

START_TEST(test_fifo_journal)
{
    char suite[512], out[512], j[600];
    snprintf(suite, sizeof suite, "%s", ft_tiny_suite(dir));
    snprintf(out, sizeof out, "%s/out", dir);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    snprintf(j, sizeof j, "%s", ft_fifo(out, "journal.jsonl"));
    ft_expect_2(ft_run(dir, "run '%s' -o '%s' -q --resume", suite, out), "journal --resume", j,
                "not a regular file (a FIFO)", NULL);
    /* Without --resume the journal is new: written beside the FIFO and
     * renamed over it (docs/security.md "Output files"), never opened. */
    {
        struct stat st;
        ftr r = ft_run(dir, "run '%s' -o '%s' -q", suite, out);
        ck_assert_msg(r.rc == 0, "journal: a fresh sweep over a FIFO: exit %d (124: it hung): %s", r.rc,
                      r.err);
        ft_free(&r);
        ck_assert_msg(lstat(j, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file after the sweep",
                      j);
    }
}
END_TEST

START_TEST(test_fifo_claim_plugin)
{
    char claim[512], plugin[512];
    snprintf(claim, sizeof claim, "%s", ft_fifo(dir, "claim.yaml"));
    snprintf(plugin, sizeof plugin, "%s", ft_fifo(dir, "libfifo.so"));
    ft_expect_2(ft_run(dir, "list kernels --claim '%s'", claim), "claim", claim, "not a regular file (a FIFO)",
                NULL);
    ft_expect_2(ft_run(dir, "list kernels --plugin '%s'", plugin), "plugin", plugin, "not a regular file (a FIFO)",
                NULL);
    ft_expect_2(ft_run(dir, "list kernels --adapter 'cblas:%s'", plugin), "adapter", plugin,
                "not a regular file (a FIFO)", NULL);
}
END_TEST

/* results.json of the tiny suite with one member of case 1 made n bytes. */
static void long_member(const char *src, const char *dst, const char *member, size_t n)
{
    json_error_t je;
    json_t *doc = json_load_file(src, 0, &je), *c;
    char *s = malloc(n + 1);
    ck_assert_msg(doc != NULL, "%s: %s", src, je.text);
    ck_assert_ptr_nonnull(s);
    memset(s, 'k', n);
    s[n] = '\0';
    c = json_array_get(json_object_get(doc, "cases"), 1);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(json_object_set_new(c, member, json_string(s)), 0);
    ck_assert_int_eq(json_dump_file(doc, dst, 0), 0);
    json_decref(doc);
    free(s);
}

START_TEST(test_long_names)
{
    char suite[512], good[512], bad[512], badid[512];
    ftr r;
    snprintf(suite, sizeof suite, "%s", ft_tiny_suite(dir));
    r = ft_run(dir, "run '%s' -o '%s/out' -q", suite, dir);
    ck_assert_msg(r.rc == 0, "run: exit %d: %s", r.rc, r.err);
    ft_free(&r);
    snprintf(good, sizeof good, "%s/out/results.json", dir);
    snprintf(bad, sizeof bad, "%s/long.json", dir);
    snprintf(badid, sizeof badid, "%s/longid.json", dir);
    long_member(good, bad, "kernel", 100000);
    long_member(good, badid, "case_id", 100000);
    ft_expect_2(ft_run(dir, "show '%s'", bad), "show", "long.json: cases[1]: member 'kernel' is 100000 bytes long",
                NULL);
    ft_expect_2(ft_run(dir, "show '%s'", badid), "show case_id", "longid.json: cases[1]: member 'case_id'",
                "100000", NULL);
    ft_expect_2(ft_run(dir, "diff '%s' '%s'", good, bad), "diff", "long.json: cases[1]: member 'kernel'", NULL);
    ft_expect_2(ft_run(dir, "enable '%s' -o '%s/en'", bad, dir), "enable", "long.json: cases[1]: member 'kernel'",
                NULL);
    r = ft_run(dir, "report '%s' -o '%s/r.html'", bad, dir);
    ck_assert_msg(r.rc == 2, "report: exit %d: %s", r.rc, r.err);
    if (!strstr(r.err, "without PLplot"))
        ck_assert_msg(strstr(r.err, "long.json: cases[1]: member 'kernel'"), "report: %s", r.err);
    ft_free(&r);
    /* The file as written is still read. */
    r = ft_run(dir, "show '%s'", good);
    ck_assert_msg(r.rc == 0, "show: exit %d: %s", r.rc, r.err);
    ft_free(&r);
}
END_TEST

/* A suite's file input whose path, resolved against the suite's folder, is
 * longer than qf_dist holds is refused at FILE:LINE:COL, never cut (a cut
 * path would name another file). */
START_TEST(test_long_input_path)
{
    char sub[512], text[1200];
    int n;
    ftr r;
    snprintf(sub, sizeof sub, "%s/deep", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    n = snprintf(text, sizeof text,
                 "suite: long\ngroups:\n  - op: softmax\n    kernels: [softmax.cpu.*]\n    dtypes: [float32]\n"
                 "    shapes: {rows: [2], cols: [3]}\n    inputs: [{name: file, path: ");
    memset(text + n, 'p', 1000);
    snprintf(text + n + 1000, sizeof text - (size_t)n - 1000, "}]\n");
    qf_test_write_text(sub, "long.yaml", text);
    r = ft_run(dir, "run '%s/long.yaml' --list", sub);
    ck_assert_msg(r.rc == 2, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.err, "long.yaml:7:") && strstr(r.err, "longer than 1023"), "%s", r.err);
    ft_free(&r);
}
END_TEST

/* The "no float tensor" line names every file read. */
START_TEST(test_no_float_tensor)
{
    /* An int32 .npy of two elements (the .npy format, version 1.0). */
    char hdr[128] = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
    unsigned char file[256];
    size_t hl = strlen(hdr), total;
    char npy[512], *line;
    ftr r;
    while ((10 + hl + 1) % 64)
        hdr[hl++] = ' ';
    hdr[hl++] = '\n';
    memcpy(file, "\x93NUMPY\x01\x00", 8);
    file[8] = (unsigned char)(hl & 0xff);
    file[9] = (unsigned char)(hl >> 8);
    memcpy(file + 10, hdr, hl);
    total = 10 + hl;
    memset(file + total, 1, 8);
    total += 8;
    snprintf(npy, sizeof npy, "%s/ints.npy", dir);
    qf_test_write_file(npy, file, total, NULL);
    r = ft_run(dir, "audit '%s' --formats bf16 --tensors 'w*'", npy);
    ck_assert_msg(r.rc == 2, "exit %d: %s", r.rc, r.err);
    line = strstr(r.err, "no float tensor");
    ck_assert_msg(line != NULL, "%s", r.err);
    if (strchr(line, '\n'))
        *strchr(line, '\n') = '\0';
    ck_assert_msg(strstr(line, "ints.npy") != NULL, "the message does not name the file: %s", line);
    ft_free(&r);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main("security/files", "files", 900, setup, teardown,
                        QF_TESTS(test_fifo_suite, test_fifo_include, test_fifo_tensors, test_fifo_results,
                                 test_fifo_journal, test_fifo_claim_plugin, test_long_names, test_long_input_path,
                                 test_no_float_tensor));
}
