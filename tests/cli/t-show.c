/* t-show.c: 'qualify show' on a results.json written by qf_report (and on
 * a journal), --failed, --json, --strict, its exit codes (0 nothing
 * FAILED/CRASHED/TIMEOUT, 1 otherwise) and usage errors (exit 2, a message
 * naming the bad input, nothing on stdout).  Without QF_QUALIFY_BIN:
 * skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_npy.h"
#include "qf_report.h"
#include "qf_cli_test.h"
#include "qf_test_seal.h"
#include "qf_test.h"

static const char *bin;
static char dir[128], pass_json[256], fail_json[256];

typedef qf_cli_result run_result;

/* Run "qualify show ARGS", stdout and stderr kept apart. */
static run_result run(const char *args)
{
    return qf_cli_run(bin, "show", args);
}

static void done(run_result *r)
{
    qf_cli_result_free(r);
}

static void make(qf_result *r, const char *kernel, qf_verdict v, uint64_t k, const char *reason)
{
    qf_result_init(r);
    snprintf(r->op, sizeof r->op, "gemm");
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    snprintf(r->kernel_kind, sizeof r->kernel_kind, "reference");
    snprintf(r->dtype, sizeof r->dtype, "f32.f32.f32.f32");
    snprintf(r->suite, sizeof r->suite, "shapes/premerge.yaml");
    snprintf(r->case_id, sizeof r->case_id, "gemm/M=4,N=4,K=%llu/f32.f32.f32.f32/normal/seed=0",
             (unsigned long long)k);
    snprintf(r->dims[0].name, sizeof r->dims[0].name, "M");
    r->dims[0].value = 4;
    snprintf(r->dims[1].name, sizeof r->dims[1].name, "K");
    r->dims[1].value = k;
    r->ndims = 2;
    r->verdict = v;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
    qf_test_seal(r);
    snprintf(r->reproducer, sizeof r->reproducer,
             "qualify run shapes/premerge.yaml --case '%.400s' --kernel %s", r->case_id, kernel);
}

static void setup(void)
{
    qf_result r[4];
    qf_provenance p;
    char err[512] = "";
    bin = getenv("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-show-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(qf_provenance_collect(&p, NULL), QF_OK);
    make(&r[0], "gemm.cpu.naive.f32", QF_VERDICT_QUALIFIED, 16, "");
    make(&r[1], "gemm.cpu.naive.f32", QF_VERDICT_MARGINAL, 64, "max error 3 ulp > policy 2 ulp");
    make(&r[2], "gemm.cpu.naive.f32", QF_VERDICT_UNSUPPORTED, 128, "no CUDA device");
    make(&r[3], "gemm.cpu.bad.trunc", QF_VERDICT_FAILED, 16, "element (1, 2): error 9 ulp > bound 1 ulp");
    snprintf(pass_json, sizeof pass_json, "%s/pass.json", dir);
    snprintf(fail_json, sizeof fail_json, "%s/fail.json", dir);
    ck_assert_msg(qf_report_write_json(pass_json, r, 3, &p, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_msg(qf_report_write_json(fail_json, r, 4, &p, err, sizeof err) == QF_OK, "%s", err);
    qf_provenance_free(&p);
}

static void teardown(void)
{
    char p[512];
    snprintf(p, sizeof p, "rm -rf '%s/run'", dir);
    ck_assert_int_eq(system(p), 0);
    remove(pass_json);
    remove(fail_json);
    snprintf(p, sizeof p, "%s/bad.json", dir);
    remove(p);
    rmdir(dir);
}

START_TEST(test_summary)
{
    char args[512];
    run_result r;
    snprintf(args, sizeof args, "'%s'", pass_json);
    r = run(args);
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "| gemm.cpu.naive.f32 | reference | gemm | f32.f32.f32.f32 | 3 |"), "%s",
                  r.out);
    ck_assert_msg(strstr(r.out, "## Provenance") && strstr(r.out, "## Failures\n\nNone."), "%s", r.out);
    ck_assert_str_eq(r.err, "");
    done(&r);
    /* A MARGINAL case fails only under --strict. */
    snprintf(args, sizeof args, "--strict '%s'", pass_json);
    r = run(args);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_msg(strstr(r.out, "### MARGINAL"), "%s", r.out);
    done(&r);
    snprintf(args, sizeof args, "'%s'", fail_json);
    r = run(args);
    ck_assert_msg(r.rc == 1, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "### FAILED `gemm.cpu.bad.trunc`") &&
                      strstr(r.out, "| gemm.cpu.bad.trunc | reference | gemm | f32.f32.f32.f32 | 1 | 1 |"),
                  "%s", r.out);
    done(&r);
}
END_TEST

START_TEST(test_failed)
{
    char args[512];
    run_result r;
    snprintf(args, sizeof args, "--failed '%s'", fail_json);
    r = run(args);
    ck_assert_msg(r.rc == 1, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(
        strstr(r.out, "FAILED gemm.cpu.bad.trunc gemm/M=4,N=4,K=16/f32.f32.f32.f32/normal/seed=0\n"), "%s",
        r.out);
    ck_assert_msg(strstr(r.out, "  reason: element (1, 2): error 9 ulp > bound 1 ulp\n"), "%s", r.out);
    ck_assert_msg(strstr(r.out,
                         "  reproduce: qualify run shapes/premerge.yaml --case "
                         "'gemm/M=4,N=4,K=16/f32.f32.f32.f32/normal/seed=0' --kernel gemm.cpu.bad.trunc"),
                  "%s", r.out);
    ck_assert_msg(!strstr(r.out, "MARGINAL") && !strstr(r.out, "QUALIFIED"), "%s", r.out);
    done(&r);
    snprintf(args, sizeof args, "'%s' --failed", pass_json);
    r = run(args);
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "no failing cases among 3"), "%s", r.out);
    done(&r);
}
END_TEST

/* A journal (a run still going, or killed) shows without provenance. */
START_TEST(test_journal)
{
    char path[256], args[512], err[256] = "";
    qf_result r[2];
    qf_journal *j = NULL;
    run_result o;
    make(&r[0], "gemm.cpu.naive.f32", QF_VERDICT_QUALIFIED, 16, "");
    make(&r[1], "gemm.cpu.bad.trunc", QF_VERDICT_CRASHED, 16, "signal 11");
    snprintf(path, sizeof path, "%s/journal.jsonl", dir);
    ck_assert_msg(qf_journal_open(path, 0, NULL, &j, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(qf_journal_append(j, &r[0]), QF_OK);
    ck_assert_int_eq(qf_journal_append(j, &r[1]), QF_OK);
    ck_assert_int_eq(qf_journal_close(j), QF_OK);
    snprintf(args, sizeof args, "'%s'", path);
    o = run(args);
    ck_assert_msg(o.rc == 1, "exit %d: %s", o.rc, o.err);
    ck_assert_msg(strstr(o.out, "### CRASHED `gemm.cpu.bad.trunc`") && !strstr(o.out, "## Provenance"), "%s",
                  o.out);
    done(&o);
    remove(path);
}
END_TEST

START_TEST(test_json)
{
    char args[512];
    run_result r;
    json_error_t e;
    json_t *a;
    snprintf(args, sizeof args, "--json --failed '%s'", fail_json);
    r = run(args);
    ck_assert_int_eq(r.rc, 1);
    a = json_loads(r.out, 0, &e);
    ck_assert_msg(a && json_is_array(a), "not a JSON array (%s): %s", e.text, r.out);
    ck_assert_uint_eq(json_array_size(a), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "verdict")), "FAILED");
    ck_assert(json_is_string(json_object_get(json_array_get(a, 0), "reproduce")));
    json_decref(a);
    done(&r);
    snprintf(args, sizeof args, "--json '%s'", pass_json);
    r = run(args);
    ck_assert_int_eq(r.rc, 0);
    a = json_loads(r.out, 0, &e);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(json_array_size(a), 3);
    json_decref(a);
    done(&r);
}
END_TEST

/* `qualify run SUITE -o DIR/run/OUT` on a suite written into DIR/run;
 * then `qualify show` of its results.json, which must print what the run
 * wrote into report.md.  The output of show, to free. */
static char *run_and_show(const char *name, const char *suite, int rc)
{
    char sub[256], args[1024], path[512], *md;
    run_result r;
    snprintf(sub, sizeof sub, "%s/run", dir);
    mkdir(sub, 0700);
    qf_test_write_text(sub, name, suite);
    snprintf(args, sizeof args, "'%s/%s' -o '%s/out-%s' -q -j 2", sub, name, sub, name);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == rc, "run %s: exit %d: %s", name, r.rc, r.err);
    done(&r);
    snprintf(args, sizeof args, "'%s/out-%s/results.json'", sub, name);
    r = run(args);
    ck_assert_msg(r.rc == rc, "show %s: exit %d: %s", name, r.rc, r.err);
    snprintf(path, sizeof path, "%s/out-%s/report.md", sub, name);
    md = qf_cli_slurp(path);
    /* The same text but the title (the suite's name in report.md). */
    ck_assert_msg(strstr(md, "\n## Summary") && strstr(r.out, "\n## Summary") &&
                      !strcmp(strstr(md, "\n## Summary"), strstr(r.out, "\n## Summary")),
                  "report.md:\n%s\nshow:\n%s", md, r.out);
    free(md);
    free(r.err);
    return r.out;
}

/* log_softmax runs on softmax kernels: a run of both ops on one kernel
 * shows one row per suite op, not one row for the kernel's ABI op. */
START_TEST(test_rows_per_op)
{
    char *out = run_and_show("ops.yaml",
                             "suite: rows\n"
                             "groups:\n"
                             "  - op: softmax\n"
                             "    kernels: [softmax.cpu.f32]\n"
                             "    dtypes: [float32]\n"
                             "    shapes: {rows: [2], cols: [8]}\n"
                             "  - op: log_softmax\n"
                             "    kernels: ['*softmax.cpu.f32']\n"
                             "    dtypes: [float32]\n"
                             "    shapes: {rows: [2], cols: [8, 9]}\n",
                             0);
    ck_assert_msg(strstr(out, "| softmax.cpu.f32 | reference | softmax | f32.f32.f32 | 1 |"), "%s", out);
    ck_assert_msg(strstr(out, "| softmax.cpu.f32 | reference | log_softmax | f32.f32.f32 | 2 |"), "%s", out);
    free(out);
}
END_TEST

/* A kernel list over several dtypes: the pairs whose kernel claims no
 * tuple for the case's dtypes are one line per kernel, in show and in
 * report.md, and still one record each in results.json and junit.xml
 * (the runner's reason for them is what qf_report_no_tuple knows). */
START_TEST(test_not_run)
{
    static const char suite[] = "suite: glob\n"
                                "refute: false\n"
                                "groups:\n"
                                "  - op: gemm\n"
                                "    kernels: [gemm.cpu.naive.f32, gemm.cpu.fp8]\n"
                                "    dtypes: [float32, {a: float8_e5m2, b: float8_e5m2, out: bfloat16}]\n"
                                "    shapes: {M: [2, 3], N: [4], K: [8]}\n";
    char path[512], *x, *out = run_and_show("glob.yaml", suite, 0);
    json_t *doc;
    json_error_t je;
    ck_assert_msg(strstr(out, "8 cases: 2 QUALIFIED, 6 UNSUPPORTED, passing."), "%s", out);
    ck_assert_msg(strstr(out, "| gemm.cpu.naive.f32 | reference | gemm | f32.f32.f32.f32 | 2 |"), "%s", out);
    ck_assert_msg(strstr(out, "- gemm.cpu.naive.f32: 2 pairs not run: no dtype tuple for e5m2.e5m2.f32.bf16 "
                              "(UNSUPPORTED)\n"),
                  "%s", out);
    ck_assert_msg(strstr(out, "- gemm.cpu.fp8: 4 pairs not run: no dtype tuple for f32.f32.f32.f32, "
                              "e5m2.e5m2.f32.bf16 (UNSUPPORTED)\n"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "| gemm.cpu.fp8 |") && !strstr(out, "| e5m2.e5m2.f32.bf16 |"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/run/out-glob.yaml/results.json", dir);
    doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "cases")), 8);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/run/out-glob.yaml/junit.xml", dir);
    x = qf_cli_slurp(path);
    ck_assert_msg(strstr(x, "tests=\"8\" failures=\"0\" errors=\"0\" skipped=\"6\""), "%s", x);
    ck_assert_msg(strstr(x, "unsupported: gemm.cpu.fp8 claims no dtype tuple for f32.f32.f32.f32"), "%s", x);
    free(x);
}
END_TEST

/* An e5m2 GEMM whose exact result is 0 where the kernel's accumulator
 * leaves a residue: row 0 of A is 2^15, four 0.25, -2^15, four -0.25 in
 * separate blocks of 32, which the H100 model (13 fraction bits aligned
 * to the block's largest exponent, truncated) sums to -1.  QUALIFIED:
 * the bound is relative to sum |a||b|.  max_ulp counts -1 against the
 * ulp of 0 in float32, 2^-149: 7.1e+44 ulps.  report.md's headline leaves
 * exact zeros out of the ulp figure and counts them apart. */
START_TEST(test_exact_zeros)
{
    enum { K = 96 };
    float a[2 * K] = {0}, b[K * 2];
    size_t sa[2] = {2, K}, sb[2] = {K, 2}, i;
    char sub[256], path[512], err[256] = "", *out, *md;
    json_t *doc, *m;
    json_error_t je;
    a[0] = 32768, a[40] = -32768;
    for (i = 0; i < 4; i++)
        a[1 + i] = 0.25f, a[70 + i] = -0.25f;
    for (i = 0; i < K; i++)
        a[K + i] = (float)((int)(i % 7) - 3), b[2 * i] = b[2 * i + 1] = 1;
    snprintf(sub, sizeof sub, "%s/run", dir);
    mkdir(sub, 0700);
    snprintf(path, sizeof path, "%s/A.npy", sub);
    ck_assert_msg(qf_npy_write_data(path, QF_NPY_FLOAT32, 2, sa, a, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path, "%s/B.npy", sub);
    ck_assert_msg(qf_npy_write_data(path, QF_NPY_FLOAT32, 2, sb, b, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path,
             "suite: zeros\n"
             "refute: false\n"
             "groups:\n"
             "  - op: gemm\n"
             "    kernels: [gemm.model.h100.e5m2]\n"
             "    dtypes: [{a: float8_e5m2, b: float8_e5m2, out: float32}]\n"
             "    shapes: {M: [2], N: [2], K: [%d]}\n"
             "    inputs: [{a: {name: file, path: A.npy}, b: {name: file, path: B.npy}}]\n",
             K);
    qf_test_write_text(sub, "zeros.yaml", path);
    {
        char args[1024];
        run_result r;
        snprintf(args, sizeof args, "'%s/zeros.yaml' -o '%s/out-zeros' -q", sub, sub);
        r = qf_cli_run(bin, "run", args);
        ck_assert_msg(r.rc == 0, "run: exit %d: %s", r.rc, r.err);
        done(&r);
    }
    snprintf(path, sizeof path, "%s/out-zeros/results.json", sub);
    doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    m = json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "metrics");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "verdict")),
        "QUALIFIED");
    /* The verdict input is the standard figure: 2^149 ulps of zero. */
    ck_assert(json_real_value(json_object_get(m, "max_ulp")) == 0x1p149);
    snprintf(path, sizeof path, "%s/out-zeros/report.md", sub);
    md = qf_cli_slurp(path);
    ck_assert_msg(strstr(md,
                         "| gemm.model.h100.e5m2 | model | gemm | e5m2.e5m2.f32.f32 | 1 | 0 | 0 | 0 | 0 | "
                         "0 | 0 | 1 | 0 | 0 | 0 | 2 of 2 (max abs 1) |"),
                  "%s", md);
    ck_assert_msg(!strstr(md, "e+44"), "%s", md);
    free(md);
    /* qualify show reads results.json: the same rows when the records
     * carry the exact-zero figures; a record without them (the journal's
     * metrics table does not list them yet) keeps max_ulp, marked. */
    snprintf(path, sizeof path, "'%s/out-zeros/results.json'", sub);
    {
        run_result r = run(path);
        ck_assert_int_eq(r.rc, 0);
        out = r.out;
        free(r.err);
    }
    if (json_object_get(m, "n_zero_checked"))
        ck_assert_msg(strstr(out, "| 0 | 2 of 2 (max abs 1) |"), "%s", out);
    else
        ck_assert_msg(strstr(out, "| 7.14e+44\\* | ?\\* |") && strstr(out, "\\* from records that do not"),
                      "%s", out);
    free(out);
    json_decref(doc);
}
END_TEST

/* Exit 2 with has (and also, when not NULL) on stderr; quiet: nothing on
 * stdout. */
static void expect_usage(const char *args, int quiet, const char *has, const char *also)
{
    run_result r = qf_cli_expect(bin, "show", args, 2, has);
    if (quiet)
        ck_assert_str_eq(r.out, "");
    if (also)
        ck_assert_msg(strstr(r.err, also), "%s", r.err);
    done(&r);
}

START_TEST(test_usage)
{
    char args[1024], bad[256];
    run_result r;
    expect_usage("", 1, "qualify show: ", "missing");
    snprintf(args, sizeof args, "--bogus '%s'", pass_json);
    expect_usage(args, 1, "'--bogus'", NULL);
    snprintf(args, sizeof args, "'%s/nonexistent.json'", dir);
    expect_usage(args, 1, "nonexistent.json", NULL);
    qf_test_write_text(dir, "bad.json", "{\"cases\": [");
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    snprintf(args, sizeof args, "'%s'", bad);
    expect_usage(args, 1, "bad.json", NULL);
    qf_test_write_text(dir, "bad.json", "{\"schema_version\": 1, \"cases\": {}}");
    expect_usage(args, 0, "bad.json", "cases");
    snprintf(args, sizeof args, "'%s' '%s'", pass_json, fail_json);
    expect_usage(args, 0, "fail.json", NULL);
    snprintf(args, sizeof args, "'%s'", dir);
    expect_usage(args, 1, dir, "directory");
    r = run("--help");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_msg(strstr(r.out, "usage: qualify show"), "%s", r.out);
    done(&r);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main("cli/show", "show", 60, setup, teardown,
                        QF_TESTS(test_summary, test_failed, test_journal, test_json, test_rows_per_op,
                                 test_not_run, test_exact_zeros, test_usage));
}
