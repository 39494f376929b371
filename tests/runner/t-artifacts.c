/* t-artifacts.c: qualify run --save-failing (docs/runner.md "Failing
 * pairs' tensors") through the CLI (QF_QUALIFY_BIN).  A known-bad kernel's
 * failing pair of shapes/detection.yaml (gemm.bad.tile64) and another of
 * FP8 codes (gemm.bad.h100_fp8_as_f32) save their inputs, outputs and
 * references as .npy files, listed in the journal record and in
 * results.json; the files read back (qf_npy.h) with the shapes and types
 * of the case and explain the failure (the saved output is outside the
 * saved bound around the saved exact value at the first violation); the
 * printed reproducer, run from those files, fails the same way (verdict,
 * first failing element, largest error); a kernel whose two runs differ
 * has run 2's output saved too.  A QUALIFIED pair saves nothing;
 * a pair over the per-pair limit and one past the total are left out with
 * a note; a link planted at a file's place, or at failing/, is refused and
 * not followed; a fresh sweep clears the last one's files; a worker
 * kernel's reproducers carry the environment the worker needs; a claim
 * for a worker's kernel applies under a kernel server, and its pair's
 * reproducers rerun it (issue 27).  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_npy.h"
#include "qf_report.h"
#include "qf_result.h"
#include "qf_test.h"

static char dir[256];

#define TILE64_CASE "tile64-shows:gemm/M=65,N=8,K=16/f32.f32.f32.f32/normal/seed=0"

/* FP8 operands (one-byte codes, saved as raw '|V1' elements). */
static const char *fp8_suite = "suite: fp8\n"
                               "refute: false\n"
                               "op: gemm\n"
                               "kernels: [gemm.bad.h100_fp8_as_f32]\n"
                               "dtypes: [{a: float8_e4m3fn, b: float8_e4m3fn, acc: float32, out: float32}]\n"
                               "shapes: {M: [4], N: [4], K: [4096]}\n"
                               "inputs: [{name: uniform, lo: 0, hi: 1}]\n";

/* Two failing pairs of tile64 (M = 65 and 100), for the sweep's total. */
static const char *two_suite = "suite: two\n"
                               "refute: false\n"
                               "op: gemm\n"
                               "kernels: [gemm.bad.tile64]\n"
                               "dtypes: [float32]\n"
                               "shapes: {M: [65, 100], N: [8], K: [16]}\n";

/* Run `sh -c CMD` in dir, output into dir/log.txt; its exit status. */
static int sh(const char *cmd)
{
    char full[8192];
    int st;
    snprintf(full, sizeof full, "cd '%s' && %s >>log.txt 2>&1", dir, cmd);
    st = system(full);
    ck_assert_msg(WIFEXITED(st), "%s did not exit", cmd);
    return WEXITSTATUS(st);
}

/* qualify run ARGS in dir. */
static int run(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "qualify run %s", args);
    return sh(cmd);
}

static const qf_result *find(const qf_result *r, size_t n, const char *kernel)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!strcmp(r[i].kernel, kernel))
            return &r[i];
    ck_abort_msg("no record of %s", kernel);
    return NULL;
}

static int has_key(const qf_result *r, const char *key)
{
    size_t i;
    for (i = 0; i < r->nartifacts; i++)
        if (!strcmp(r->artifacts[i], key))
            return 1;
    return 0;
}

/* The artifact key of r, read back from out/ with its shape and type. */
static void load(const char *out, const qf_result *r, const char *key, qf_npy *a, qf_npy_dtype t, int ndim,
                 size_t d0, size_t d1)
{
    char path[1024], file[64], err[512];
    ck_assert_msg(has_key(r, key), "%s: no artifact %s", r->kernel, key);
    qf_result_artifact_file(key, file, sizeof file);
    snprintf(path, sizeof path, "%s/%s/%s/%s", dir, out, r->artifacts_dir, file);
    ck_assert_msg(qf_npy_read(path, a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_msg(a->dtype == t, "%s: dtype %s, expected %s", path, qf_npy_dtype_name(a->dtype),
                  qf_npy_dtype_name(t));
    ck_assert_int_eq(a->ndim, ndim);
    ck_assert_uint_eq(a->shape[0], d0);
    if (ndim > 1)
        ck_assert_uint_eq(a->shape[1], d1);
}

/* results.json of out lists the same artifacts as r, at
 * ARTIFACTS_DIR/FILE, and the same reproducer. */
static void check_results_json(const char *out, const qf_result *r)
{
    char path[512], want[512], file[64];
    json_error_t jerr;
    json_t *root, *c, *a;
    size_t i, found = 0;
    snprintf(path, sizeof path, "%s/%s/results.json", dir, out);
    root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root, "%s: %s", path, jerr.text);
    json_array_foreach(json_object_get(root, "cases"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "kernel")), r->kernel) ||
            strcmp(json_string_value(json_object_get(c, "case_id")), r->case_id))
            continue;
        found++;
        a = json_object_get(c, "artifacts");
        ck_assert_msg(json_is_object(a), "%s: no artifacts in results.json", r->kernel);
        ck_assert_uint_eq(json_object_size(a), r->nartifacts);
        for (i = 0; i < r->nartifacts; i++) {
            qf_result_artifact_file(r->artifacts[i], file, sizeof file);
            snprintf(want, sizeof want, "%s/%s", r->artifacts_dir, file);
            ck_assert_str_eq(json_string_value(json_object_get(a, r->artifacts[i])), want);
        }
        ck_assert_str_eq(json_string_value(json_object_get(c, "artifacts_reproducer")), r->artifacts_reproducer);
        break;
    }
    ck_assert_uint_eq(found, 1);
    json_decref(root);
    /* and qualify's own reader gives the record back */
    {
        qf_result *rs = NULL;
        size_t n;
        char err[512];
        ck_assert_msg(qf_report_read(path, &rs, &n, NULL, err, sizeof err) == QF_OK, "%s", err);
        for (i = 0; i < n; i++)
            if (!strcmp(rs[i].kernel, r->kernel) && !strcmp(rs[i].case_id, r->case_id)) {
                ck_assert_str_eq(rs[i].artifacts_dir, r->artifacts_dir);
                ck_assert_uint_eq(rs[i].nartifacts, r->nartifacts);
            }
        free(rs);
    }
}

/* The saved output lies outside the saved bound around the saved exact
 * value at the record's first violation: the files explain the verdict. */
static void check_explains(const char *out, const qf_result *r, const qf_npy *d, size_t m, size_t n)
{
    qf_npy ex, bd;
    size_t at = r->metrics.at_violation;
    double got;
    ck_assert_msg(r->has_metrics && at < m * n, "%s: no violation", r->kernel);
    load(out, r, "exact:d", &ex, QF_NPY_FLOAT64, 2, m, n);
    load(out, r, "bound:d", &bd, QF_NPY_FLOAT64, 2, m, n);
    got = ((const float *)d->data)[at];
    ck_assert_msg(fabs(got - ((const double *)ex.data)[at]) > ((const double *)bd.data)[at],
                  "element %zu: |%g - %g| <= bound %g", at, got, ((const double *)ex.data)[at],
                  ((const double *)bd.data)[at]);
    qf_npy_free(&ex);
    qf_npy_free(&bd);
}

/* Run r's artifacts reproducer and compare the rerun's record with r. */
static void check_rerun(const qf_result *r)
{
    const char *o = strstr(r->artifacts_reproducer, " -o ");
    char out[1024], *sp;
    qf_result *rr;
    size_t n;
    ck_assert_msg(strstr(r->artifacts_reproducer, "repro.yaml") && o, "%s", r->artifacts_reproducer);
    ck_assert_msg(strstr(r->artifacts_reproducer, "--save-failing=off"), "%s", r->artifacts_reproducer);
    /* the rerun fails as the pair did: exit 1 */
    ck_assert_int_eq(sh(r->artifacts_reproducer), 1);
    snprintf(out, sizeof out, "%s", o + 4);
    if ((sp = strchr(out, ' ')))
        *sp = '\0';
    rr = qf_test_journal(dir, out, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rr[0].kernel, r->kernel);
    ck_assert_int_eq(rr[0].verdict, r->verdict);
    ck_assert_uint_eq(rr[0].metrics.at_violation, r->metrics.at_violation);
    ck_assert_uint_eq(rr[0].metrics.n_violations, r->metrics.n_violations);
    ck_assert_msg(rr[0].metrics.max_ulp == r->metrics.max_ulp, "max ulp %.17g, was %.17g", rr[0].metrics.max_ulp,
                  r->metrics.max_ulp);
    ck_assert_uint_eq(rr[0].nartifacts, 0); /* --save-failing=off */
    free(rr);
}

static int exists(const char *rel)
{
    struct stat st;
    return lstat(qf_test_path(dir, rel), &st) == 0;
}

/* The known-bad pair of detection.yaml and its QUALIFIED control. */
START_TEST(detection_pair)
{
    char args[1024];
    const qf_result *r, *good;
    qf_result *rs;
    size_t n;
    qf_npy a, b, d, ref;
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -j 1 -o out --case '%s'", getenv("QF_SOURCE_DIR"),
             TILE64_CASE);
    ck_assert_int_eq(run(args), 1);
    rs = qf_test_journal(dir, "out", &n);
    ck_assert_uint_eq(n, 2);
    r = find(rs, n, "gemm.bad.tile64");
    good = find(rs, n, "gemm.cpu.naive.f32");
    ck_assert_int_eq(r->verdict, QF_VERDICT_FAILED);
    /* the QUALIFIED pair: nothing */
    ck_assert_int_eq(good->verdict, QF_VERDICT_QUALIFIED);
    ck_assert_uint_eq(good->nartifacts, 0);
    ck_assert_str_eq(good->artifacts_note, "");
    ck_assert_str_eq(good->artifacts_reproducer, "");
    /* the FAILED one: every input, the output, the references, the suite */
    ck_assert_msg(r->nartifacts == 7, "%zu artifacts (%s)", r->nartifacts, r->artifacts_note);
    ck_assert_str_eq(r->artifacts_note, "");
    ck_assert_msg(!strncmp(r->artifacts_dir, "failing/tile64-shows_gemm_M=65,N=8,K=16_f32",
                           strlen("failing/tile64-shows_gemm_M=65,N=8,K=16_f32")) &&
                      strstr(r->artifacts_dir, "--gemm.bad.tile64-"),
                  "%s", r->artifacts_dir);
    ck_assert(has_key(r, "suite"));
    load("out", r, "a", &a, QF_NPY_FLOAT32, 2, 65, 16);
    load("out", r, "b", &b, QF_NPY_FLOAT32, 2, 16, 8);
    load("out", r, "d", &d, QF_NPY_FLOAT32, 2, 65, 8);
    load("out", r, "ref:d", &ref, QF_NPY_FLOAT32, 2, 65, 8);
    check_explains("out", r, &d, 65, 8);
    /* the defect: the edge tile's row (64) is wrong */
    ck_assert_msg(r->metrics.at_violation / 8 == 64, "first violation at %zu", r->metrics.at_violation);
    check_results_json("out", r);
    check_rerun(r);
    qf_npy_free(&a);
    qf_npy_free(&b);
    qf_npy_free(&d);
    qf_npy_free(&ref);
    /* one directory under failing/, the marker beside it */
    ck_assert(exists("out/failing/.qualify-failing"));
    /* a fresh sweep clears the last one's files (here saving none) */
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -o out --save-failing=off --case '%s'",
             getenv("QF_SOURCE_DIR"), TILE64_CASE);
    ck_assert_int_eq(run(args), 1);
    ck_assert(!exists("out/failing"));
    free(rs);
}
END_TEST

/* FP8 codes as raw one-byte elements; the rerun reads them as codes. */
START_TEST(fp8_codes)
{
    const qf_result *r;
    qf_result *rs;
    size_t n;
    qf_npy a, b, d;
    qf_test_write_text(dir, "fp8.yaml", fp8_suite);
    ck_assert_int_eq(run("fp8.yaml -q -o out"), 1);
    rs = qf_test_journal(dir, "out", &n);
    ck_assert_uint_eq(n, 1);
    r = &rs[0];
    ck_assert_int_eq(r->verdict, QF_VERDICT_FAILED);
    load("out", r, "a", &a, QF_NPY_RAW8, 2, 4, 4096);
    load("out", r, "b", &b, QF_NPY_RAW8, 2, 4096, 4);
    load("out", r, "d", &d, QF_NPY_FLOAT32, 2, 4, 4);
    check_explains("out", r, &d, 4, 4);
    check_results_json("out", r);
    check_rerun(r);
    qf_npy_free(&a);
    qf_npy_free(&b);
    qf_npy_free(&d);
    free(rs);
}
END_TEST

/* A kernel whose two runs differ: run 2's output is saved beside run 1's. */
START_TEST(two_runs)
{
    char args[1024];
    qf_result *rs;
    size_t n;
    qf_npy d1, d2;
    snprintf(args, sizeof args,
             "'%s/shapes/detection.yaml' -q -o out --kernel gemm.bad.racy_order "
             "--case 'racy-shows:gemm/M=8,N=8,K=64/f32.f32.f32.f32/normal/seed=0'",
             getenv("QF_SOURCE_DIR"));
    ck_assert_int_eq(run(args), 1);
    rs = qf_test_journal(dir, "out", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rs[0].verdict, QF_VERDICT_FAILED);
    ck_assert(!rs[0].det_equal);
    load("out", &rs[0], "d", &d1, QF_NPY_FLOAT32, 2, 8, 8);
    load("out", &rs[0], "run2:d", &d2, QF_NPY_FLOAT32, 2, 8, 8);
    ck_assert(memcmp(d1.data, d2.data, 64 * sizeof(float)) != 0);
    qf_npy_free(&d1);
    qf_npy_free(&d2);
    free(rs);
}
END_TEST

/* Over the per-pair limit: nothing, and a note; past the total: the
 * first pair is saved, the second is not. */
START_TEST(limits)
{
    char args[1024];
    qf_result *rs;
    size_t n;
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -o out --save-failing=1K --case '%s'",
             getenv("QF_SOURCE_DIR"), TILE64_CASE);
    ck_assert_int_eq(run(args), 1);
    rs = qf_test_journal(dir, "out", &n);
    {
        const qf_result *r = find(rs, n, "gemm.bad.tile64");
        ck_assert_uint_eq(r->nartifacts, 0);
        ck_assert_str_eq(r->artifacts_reproducer, "");
        ck_assert_msg(strstr(r->artifacts_note, "not saved: the pair's tensors take") &&
                          strstr(r->artifacts_note, "over --save-failing's 1.0 KiB per pair"),
                      "%s", r->artifacts_note);
    }
    free(rs);
    ck_assert(!exists("out/failing")); /* refused before anything was made */
    /* each pair takes about 18 KiB: a total of 30 KiB holds one */
    qf_test_write_text(dir, "two.yaml", two_suite);
    ck_assert_int_eq(run("two.yaml -q -j 1 -o two --save-failing=1M,30K"), 1);
    rs = qf_test_journal(dir, "two", &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_msg(rs[0].nartifacts > 0, "%s", rs[0].artifacts_note);
    ck_assert_uint_eq(rs[1].nartifacts, 0);
    ck_assert_msg(strstr(rs[1].artifacts_note, "would pass the total of 30.0 KiB"), "%s", rs[1].artifacts_note);
    free(rs);
    /* malformed values are usage errors */
    ck_assert_int_eq(run("two.yaml -q -o bad --save-failing=lots"), 2);
    ck_assert_int_eq(run("two.yaml -q -o bad --save-failing=1M,"), 2);
}
END_TEST

/* A link where a file goes, or where failing/ goes, is refused, never
 * followed: the victims stay as they were. */
START_TEST(planted_links)
{
    char args[1024], link[1024], *v;
    qf_result *rs;
    size_t n;
    const qf_result *r;
    char pdir[QF_RESULT_ARTIFACT_DIR];
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -o out --kernel gemm.bad.tile64 --case '%s'",
             getenv("QF_SOURCE_DIR"), TILE64_CASE);
    ck_assert_int_eq(run(args), 1); /* learns the pair's directory */
    rs = qf_test_journal(dir, "out", &n);
    snprintf(pdir, sizeof pdir, "%s", rs[0].artifacts_dir);
    ck_assert_uint_gt(rs[0].nartifacts, 0);
    free(rs);
    /* a link at a.npy's place, in a failing/ that is not one qualify made */
    qf_test_write_text(dir, "victim.txt", "victim\n");
    snprintf(link, sizeof link, "mkdir -p 'planted/%s' && ln -s '%s/victim.txt' 'planted/%s/a.npy'", pdir, dir,
             pdir);
    ck_assert_int_eq(sh(link), 0);
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -o planted --kernel gemm.bad.tile64 --case '%s'",
             getenv("QF_SOURCE_DIR"), TILE64_CASE);
    ck_assert_int_eq(run(args), 1);
    rs = qf_test_journal(dir, "planted", &n);
    r = &rs[0];
    ck_assert_uint_eq(r->nartifacts, 0);
    ck_assert_msg(strstr(r->artifacts_note, "a.npy is a symbolic link: refused, not followed"), "%s",
                  r->artifacts_note);
    free(rs);
    v = qf_test_slurp(qf_test_path(dir, "victim.txt"), NULL);
    ck_assert_str_eq(v, "victim\n");
    free(v);
    {
        struct stat st;
        snprintf(link, sizeof link, "planted/%s/a.npy", pdir);
        ck_assert_int_eq(lstat(qf_test_path(dir, link), &st), 0);
        ck_assert(S_ISLNK(st.st_mode));
        snprintf(link, sizeof link, "planted/%s/b.npy", pdir);
        ck_assert(!exists(link)); /* all or nothing */
    }
    /* failing/ itself a link to another directory */
    ck_assert_int_eq(sh("mkdir -p elsewhere linked && ln -s ../elsewhere linked/failing"), 0);
    snprintf(args, sizeof args, "'%s/shapes/detection.yaml' -q -o linked --kernel gemm.bad.tile64 --case '%s'",
             getenv("QF_SOURCE_DIR"), TILE64_CASE);
    ck_assert_int_eq(run(args), 1);
    rs = qf_test_journal(dir, "linked", &n);
    ck_assert_uint_eq(rs[0].nartifacts, 0);
    ck_assert_msg(strstr(rs[0].artifacts_note, "failing is a symbolic link, not a directory: not followed"), "%s",
                  rs[0].artifacts_note);
    free(rs);
    ck_assert_int_eq(sh("test -z \"$(ls -A elsewhere)\""), 0);
}
END_TEST

/* A worker kernel whose failure needs a variable of its environment: both
 * reproducers carry it (and PYTHONPATH), and the one from the files fails
 * the same way in an environment without it. */
START_TEST(worker_env)
{
    char args[2048];
    const char *w = getenv("QF_TEST_WORKER");
    qf_result *rs;
    size_t n;
    ck_assert_msg(w, "QF_TEST_WORKER comes from CTest");
    qf_test_write_text(dir, "w.yaml",
                       "suite: w\nrefute: false\nop: gemm\nkernels: [gemm.w.biased]\ndtypes: [float32]\n"
                       "shapes: {M: [3], N: [5], K: [4]}\n");
    snprintf(args, sizeof args,
             "env QF_TEST_WORKER_BIAS=0.5 QUALIFY_REPRO_ENV=QF_TEST_WORKER_BIAS PYTHONPATH=/opt/marker "
             "qualify run w.yaml -q -o out --worker '%s'",
             w);
    ck_assert_int_eq(sh(args), 1);
    rs = qf_test_journal(dir, "out", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rs[0].verdict, QF_VERDICT_FAILED);
    ck_assert_uint_eq(rs[0].metrics.at_violation, 1 * 5 + 2);
    ck_assert_msg(!strncmp(rs[0].reproducer, "env ", 4) && strstr(rs[0].reproducer, "PYTHONPATH=/opt/marker ") &&
                      strstr(rs[0].reproducer, "QF_TEST_WORKER_BIAS=0.5 ") &&
                      strstr(rs[0].reproducer, " qualify run ") && strstr(rs[0].reproducer, "--worker "),
                  "%s", rs[0].reproducer);
    ck_assert_msg(!strncmp(rs[0].artifacts_reproducer, "env ", 4) &&
                      strstr(rs[0].artifacts_reproducer, "QF_TEST_WORKER_BIAS=0.5 ") &&
                      strstr(rs[0].artifacts_reproducer, "--worker "),
                  "%s", rs[0].artifacts_reproducer);
    /* without the variable here, the reproducer still gives it to the worker */
    ck_assert_ptr_null(getenv("QF_TEST_WORKER_BIAS"));
    check_rerun(&rs[0]);
    free(rs);
}
END_TEST

/* Claims for a worker's kernel, in the suite's claims: and by --claim,
 * beside one for a built-in kernel, under the default --isolate server
 * (whose kernel server is handed every claim file and serves only the
 * built-in): each claim applies to its kernel, and both reproducers (the
 * printed one and the one from the files) rerun the worker's pair. */
START_TEST(worker_claim)
{
    char args[QF_RESULT_CMD_MAX + 64];
    const char *w = getenv("QF_TEST_WORKER");
    qf_result *rs;
    size_t n, i;
    ck_assert_msg(w, "QF_TEST_WORKER comes from CTest");
    qf_test_write_text(dir, "wc.yaml",
                       "claim_version: 1\nkernel: gemm.w.biased\narith:\n  acc_format: float32\n"
                       "  order: sequential\n");
    qf_test_write_text(dir, "nc.yaml",
                       "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith:\n  acc_format: float32\n"
                       "  order: sequential\n");
    qf_test_write_text(dir, "c.yaml",
                       "suite: c\nrefute: false\nclaims: [wc.yaml]\nop: gemm\n"
                       "kernels: [gemm.w.biased, gemm.cpu.naive.f32]\ndtypes: [float32]\n"
                       "shapes: {M: [3], N: [5], K: [4]}\n");
    snprintf(args, sizeof args,
             "env QF_TEST_WORKER_BIAS=0.5 QUALIFY_REPRO_ENV=QF_TEST_WORKER_BIAS "
             "qualify run c.yaml -q -o out --claim nc.yaml --worker '%s'",
             w);
    ck_assert_int_eq(sh(args), 1);
    rs = qf_test_journal(dir, "out", &n);
    ck_assert_uint_eq(n, 2);
    for (i = 0; i < n; i++) {
        int worker = !strcmp(rs[i].kernel, "gemm.w.biased");
        ck_assert_msg(strstr(rs[i].claim_origin, worker ? "wc.yaml" : "nc.yaml"), "%s: claim from '%s'",
                      rs[i].kernel, rs[i].claim_origin);
        ck_assert_int_eq(rs[i].verdict, worker ? QF_VERDICT_FAILED : QF_VERDICT_QUALIFIED);
        if (!worker)
            continue;
        ck_assert_msg(strstr(rs[i].reproducer, "--claim 'nc.yaml'"), "%s", rs[i].reproducer);
        /* the printed reproducer, into another directory: the same verdict */
        snprintf(args, sizeof args, "%s -q -o again", rs[i].reproducer);
        ck_assert_int_eq(sh(args), 1);
        check_rerun(&rs[i]);
    }
    free(rs);
    rs = qf_test_journal(dir, "again", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rs[0].verdict, QF_VERDICT_FAILED);
    ck_assert_msg(strstr(rs[0].claim_origin, "wc.yaml"), "%s", rs[0].claim_origin);
    free(rs);
}
END_TEST

static void setup(void)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char path[8192], b[4096];
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-artifacts");
    /* reproducers say `qualify`: the binary under test */
    snprintf(b, sizeof b, "%s", bin);
    snprintf(path, sizeof path, "%s:%s", dirname(b), getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

int main(void)
{
    if (!getenv("QF_QUALIFY_BIN") || !getenv("QF_SOURCE_DIR"))
        return QF_TEST_SKIP;
    unsetenv("QF_TEST_WORKER_BIAS");
    unsetenv("QUALIFY_REPRO_ENV");
    return qf_test_main("artifacts", "save-failing", 300, setup, teardown,
                        QF_TESTS(detection_pair, fp8_codes, two_runs, limits, planted_links, worker_env, worker_claim));
}
