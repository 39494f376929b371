/* t-files-out.c: entries planted in an output directory (docs/security.md
 * "Output files").  A kernel runs as the same user as qualify and can put a
 * FIFO, a symbolic link or a file where qualify writes:
 *   - FIFOs at the temporary names qualify once wrote through
 *     (results.json.tmp, report.md.tmp, junit.xml.tmp) and at the final
 *     names, links from report.md and journal.jsonl to a file outside the
 *     directory: the sweep returns, writes every output as a regular file
 *     and leaves the outside file alone (before: it blocked for ever on
 *     results.json.tmp; without the FIFO it wrote through the links);
 *   - a link results.json.tmp -> journal.jsonl: the journal stays intact,
 *     fresh or resumed (before: results.json was written into it);
 *   - a link at journal.jsonl is not followed by --resume: exit 2 naming it;
 *   - a kernel that plants a file, FIFOs and a link during the sweep
 *     (plugin_planter.c): every result is written, the outside file is left
 *     alone, and what it planted is named on stderr with exit status 1; a
 *     second sweep over the same directory names nothing (run with
 *     --no-sandbox where qualify has it: a sandbox stops the planting);
 *   - enable -o DIR and ref -o FILE replace a planted link or FIFO.
 * Every command runs under timeout(1) (QF_TEST_HANG_S, 60 s): a blocked
 * command fails its test with exit 124.  Without QF_QUALIFY_BIN or the
 * plugin: skipped. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>

#include "qf_npy.h"
#include "qf_report.h"
#include "qf_result.h"

#include "_files_test.h"

static char dir[256], out[512], victim[512], plugin[4200];

#define VICTIM_TEXT "the victim, outside the output directory\n"

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-files-out");
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    qf_test_write_text(dir, "victim.txt", VICTIM_TEXT);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static void link_to(const char *target, const char *in, const char *name)
{
    const char *p = qf_test_path(in, name);
    ck_assert_msg(symlink(target, p) == 0, "symlink %s: %s", p, strerror(errno));
}

static void expect_victim_intact(void)
{
    char *v = qf_test_slurp(victim, NULL);
    ck_assert_msg(!strcmp(v, VICTIM_TEXT), "the file outside the directory was written: %s", v);
    free(v);
}

/* name in in is a regular file (not a link, not a FIFO). */
static void expect_regular(const char *in, const char *name)
{
    struct stat st;
    const char *p = qf_test_path(in, name);
    ck_assert_msg(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", p);
}

/* The four outputs are regular files; results.json and the journal read
 * back with n records, every one QUALIFIED. */
static void expect_outputs(size_t n)
{
    qf_result *r = NULL;
    size_t got = 0, i;
    char err[512];
    expect_regular(out, "results.json");
    expect_regular(out, "report.md");
    expect_regular(out, "junit.xml");
    expect_regular(out, "journal.jsonl");
    ck_assert_msg(qf_report_read(qf_test_path(out, "results.json"), &r, &got, NULL, err, sizeof err) == QF_OK,
                  "%s", err);
    ck_assert_uint_eq(got, n);
    for (i = 0; i < got; i++)
        ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s %s: %s", r[i].kernel, r[i].case_id,
                      qf_verdict_name(r[i].verdict));
    free(r);
    r = qf_test_journal(dir, "out", &got);
    ck_assert_uint_eq(got, n);
    free(r);
}

/* run the tiny suite (4 pairs) into out with extra options; the exit status. */
static int sweep(const char *extra, char **err_text)
{
    ftr r = ft_run(dir, "run '%s' -o '%s' -q %s", ft_tiny_suite(dir), out, extra);
    ck_assert_msg(r.rc != 124, "run %s hung: %s", extra, r.err);
    if (err_text)
        *err_text = r.err, r.err = NULL;
    ft_free(&r);
    return r.rc;
}

START_TEST(planted_before)
{
    char *e = NULL;
    int rc;
    ft_fifo(out, "results.json.tmp");
    ft_fifo(out, "report.md.tmp");
    ft_fifo(out, "junit.xml.tmp");
    ft_fifo(out, "results.json");
    ft_fifo(out, "junit.xml");
    link_to(victim, out, "report.md");
    link_to(victim, out, "journal.jsonl");
    rc = sweep("", &e);
    /* there before the sweep: not the kernels' doing, not named */
    ck_assert_msg(rc == 0, "exit %d: %s", rc, e);
    free(e);
    expect_victim_intact();
    expect_outputs(4);
}
END_TEST

START_TEST(temp_link_to_journal)
{
    char *before, *after, *e = NULL;
    int rc;
    link_to("journal.jsonl", out, "results.json.tmp");
    rc = sweep("", &e);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, e);
    free(e);
    expect_outputs(4);
    before = qf_test_slurp(qf_test_path(out, "journal.jsonl"), NULL);
    rc = sweep("--resume", &e);
    ck_assert_msg(rc == 0, "--resume: exit %d: %s", rc, e);
    free(e);
    after = qf_test_slurp(qf_test_path(out, "journal.jsonl"), NULL);
    ck_assert_msg(!strcmp(before, after), "--resume changed the journal of a finished sweep");
    free(before);
    free(after);
    expect_outputs(4);
}
END_TEST

START_TEST(journal_link_resume)
{
    link_to(victim, out, "journal.jsonl");
    ft_expect_2(ft_run(dir, "run '%s' -o '%s' -q --resume", ft_tiny_suite(dir), out), "journal link --resume",
                "journal.jsonl", "not a regular file (a symbolic link, not followed)", NULL);
    expect_victim_intact();
}
END_TEST

/* "--no-sandbox" when this qualify has the option, else "".  A sandbox
 * that keeps kernels from writing to the output directory stops the
 * planting itself; the check of the directory is what remains where no
 * sandbox can be had, so it is tested without one. */
static const char *no_sandbox(void)
{
    static int known = -1;
    if (known < 0) {
        ftr r = ft_run(dir, "run --help");
        known = r.out && strstr(r.out, "--no-sandbox") != NULL;
        ft_free(&r);
    }
    return known ? "--no-sandbox" : "";
}

/* The planter's sweep: gemm.planter and a built-in, 2 shapes. */
static int planter_sweep(const char *extra, char **err_text)
{
    qf_test_write_text(dir, "plant.yaml",
                       "suite: plant\n"
                       "refute: false\n"
                       "op: gemm\n"
                       "kernels: [gemm.planter, gemm.cpu.naive.f32]\n"
                       "dtypes: [float32]\n"
                       "inputs: [normal]\n"
                       "seeds: 1\n"
                       "shapes: {M: [8], N: [8], K: [16, 32]}\n");
    setenv("QF_PLANT_DIR", out, 1);
    setenv("QF_PLANT_VICTIM", victim, 1);
    {
        ftr r = ft_run(dir, "run '%s' -o '%s' -q --plugin '%s' %s %s", qf_test_path(dir, "plant.yaml"), out,
                       plugin, no_sandbox(), extra);
        unsetenv("QF_PLANT_DIR");
        unsetenv("QF_PLANT_VICTIM");
        ck_assert_msg(r.rc != 124, "run %s hung: %s", extra, r.err);
        *err_text = r.err;
        r.err = NULL;
        ft_free(&r);
        return r.rc;
    }
}

static void planted_during(const char *extra)
{
    static const char *const named[] = {"out/planted: a regular file that qualify did not write",
                                        "out/results.json.tmp: a FIFO that qualify did not write",
                                        "out/journal.jsonl.tmp: a FIFO that qualify did not write",
                                        "3 entries in the output directory that qualify did not write"};
    char *e = NULL;
    size_t i;
    int rc = planter_sweep(extra, &e);
    ck_assert_msg(rc == 1, "%s: exit %d, not 1: %s", extra, rc, e);
    for (i = 0; i < sizeof named / sizeof named[0]; i++)
        ck_assert_msg(strstr(e, named[i]), "%s: stderr lacks '%s': %s", extra, named[i], e);
    ck_assert_msg(!strstr(e, "report.md"), "%s: report.md named (qualify replaced the link): %s", extra, e);
    free(e);
    expect_victim_intact();
    expect_outputs(4);
    /* Over the same directory: all of it was there before. */
    rc = planter_sweep(extra, &e);
    ck_assert_msg(rc == 0, "%s, again: exit %d: %s", extra, rc, e);
    free(e);
    expect_victim_intact();
    expect_outputs(4);
}

START_TEST(planted_during_server)
{
    planted_during("");
}
END_TEST

START_TEST(planted_during_pair)
{
    planted_during("--isolate pair -j 2");
}
END_TEST

START_TEST(other_outputs)
{
    char *e = NULL, en[600];
    float x[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    char err[512];
    int rc = sweep("", &e);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, e);
    free(e);
    /* enable -o DIR: a link and a FIFO at its file names */
    snprintf(en, sizeof en, "%s/en", dir);
    ck_assert_int_eq(mkdir(en, 0755), 0);
    link_to(victim, en, "enable.md");
    ft_fifo(en, "enable.json");
    {
        ftr r = ft_run(dir, "enable '%s/results.json' -o '%s'", out, en);
        ck_assert_msg(r.rc == 0, "enable: exit %d: %s", r.rc, r.err);
        ft_free(&r);
    }
    expect_regular(en, "enable.md");
    expect_regular(en, "enable.json");
    expect_victim_intact();
    /* ref -o FILE: a link there */
    ck_assert_msg(
        qf_npy_write_data(qf_test_path(dir, "x.npy"), QF_NPY_FLOAT32, 2, shape, x, err, sizeof err) == QF_OK,
        "%s", err);
    link_to(victim, dir, "y.npy");
    {
        ftr r = ft_run(dir, "ref softmax --x '%s/x.npy' -o '%s/y.npy'", dir, dir);
        ck_assert_msg(r.rc == 0, "ref: exit %d: %s", r.rc, r.err);
        ft_free(&r);
    }
    expect_regular(dir, "y.npy");
    expect_victim_intact();
}
END_TEST

int main(void)
{
    const char *bin = qf_test_require_env("QF_BINARY_DIR");
    qf_test_require_env("QF_QUALIFY_BIN");
    snprintf(plugin, sizeof plugin, "%s/tests/libqf_test_planter_plugin.so", bin);
    if (access(plugin, R_OK)) {
        fprintf(stderr, "%s not built: skipped\n", plugin);
        return QF_TEST_SKIP;
    }
    return qf_test_main("security/files-out", "out", 300, setup, teardown,
                        QF_TESTS(planted_before, temp_link_to_journal, journal_link_resume,
                                 planted_during_server, planted_during_pair, other_outputs));
}
