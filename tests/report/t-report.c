/* t-report.c: results.json, report.md and junit.xml from synthetic results
 * (qf_report.h).  results.json is parsed back with Jansson and checked
 * against docs/schema/results.schema.json with a small validator (required,
 * type, enum, const, properties, items, $ref, anyOf: the subset the schema
 * uses), then read back with qf_report_read; junit.xml is checked for
 * balanced tags, escaped content and counts; report.md for its rows. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_report.h"
#include "qf_test_seal.h"
#include "qf_test.h"

#define NRES 11

static qf_result res[NRES];
static qf_provenance prov;
static char dir[128];

static void dim(qf_result *r, const char *name, uint64_t v)
{
    snprintf(r->dims[r->ndims].name, sizeof r->dims[0].name, "%s", name);
    r->dims[r->ndims++].value = v;
}

static void role(qf_result *r, const char *name, const char *fmt)
{
    snprintf(r->roles[r->nroles].role, sizeof r->roles[0].role, "%s", name);
    snprintf(r->roles[r->nroles++].format, sizeof r->roles[0].format, "%s", fmt);
}

static void base(qf_result *r, const char *op, const char *kernel, const char *kind, const char *dtype,
                 qf_verdict v, uint64_t seed)
{
    qf_result_init(r);
    snprintf(r->suite, sizeof r->suite, "shapes/premerge.yaml");
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    snprintf(r->kernel_kind, sizeof r->kernel_kind, "%s", kind);
    snprintf(r->kernel_origin, sizeof r->kernel_origin, "built-in");
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    snprintf(r->input, sizeof r->input, "normal");
    snprintf(r->arch, sizeof r->arch, "cpu");
    r->verdict = v;
    r->seed = seed;
    r->wall_s = 0.25;
}

/* The reproducer of r (its case id copied first: snprintf from a member of
 * the record it writes into is what -Wrestrict warns of). */
static void repro(qf_result *r, const char *suite, const char *kernel)
{
    char id[sizeof r->case_id];
    snprintf(id, sizeof id, "%s", r->case_id);
    snprintf(r->reproducer, sizeof r->reproducer, "qualify run %s --case '%.400s' --kernel %s", suite, id, kernel);
}

static void metrics(qf_result *r, double max_ulp, double max_abs, double util)
{
    int i;
    r->has_metrics = 1;
    memset(&r->metrics, 0, sizeof r->metrics);
    r->metrics.n = r->metrics.n_checked = 64;
    r->metrics.max_ulp = max_ulp;
    r->metrics.max_abs = max_abs;
    r->metrics.max_rel = max_abs / 4;
    r->metrics.max_util = util;
    r->metrics.normwise = max_abs / 8;
    r->metrics.sqnr_db = INFINITY;
    r->metrics.cosine = 1;
    r->metrics.bias = r->metrics.bias_ulp = r->metrics.rms = 0;
    r->metrics.frac_exact_rounded = 0.5;
    r->metrics.viol_err = r->metrics.viol_bound = NAN;
    r->metrics.viol_err_ulp = r->metrics.viol_bound_ulp = NAN;
    r->metrics.diff_dg = 0;
    for (i = 0; i < QF_METRICS_NPCT; i++)
        r->metrics.pct_ulp[i] = r->metrics.pct_abs[i] = r->metrics.pct_rel[i] = r->metrics.pct_util[i] = 0.1;
    snprintf(r->bound.kind, sizeof r->bound.kind, "gemm");
    r->bound.rel_abs = 1e-6;
    r->bound.rel_out = 0x1p-24;
    r->bound.abs_min = 0;
    r->n_elements = r->n_checked = 64;
}

/* Three kernels: a K sweep of a reference GEMM (error growing as K^0.5),
 * a known-bad GEMM with every failing verdict and a hostile reason, and a
 * softmax with the verdicts that are not failures. */
static void build(void)
{
    static const uint64_t ks[4] = {64, 256, 1024, 4096};
    size_t i, k = 0;
    for (i = 0; i < 4; i++) {
        qf_result *r = &res[k++];
        base(r, "gemm", "gemm.cpu.naive.f32", "reference", "f32.f32.f32.f32", QF_VERDICT_QUALIFIED, i);
        dim(r, "M", 16), dim(r, "N", 32), dim(r, "K", ks[i]);
        role(r, "a", "float32"), role(r, "b", "float32"), role(r, "acc", "float32"),
            role(r, "out", "float32");
        snprintf(r->case_id, sizeof r->case_id, "gemm/M=16,N=32,K=%llu/f32.f32.f32.f32/normal/seed=%zu",
                 (unsigned long long)ks[i], i);
        metrics(r, 0.5 + (double)i * 0.25, 1e-7 * sqrt((double)ks[i]), 0.01 * (double)(i + 1));
        repro(r, "shapes/premerge.yaml", "gemm.cpu.naive.f32");
    }
    {
        qf_result *r = &res[k++];
        base(r, "gemm", "gemm.cpu.bad.trunc", "known-bad", "bf16.bf16.f32.bf16", QF_VERDICT_FAILED,
             18446744073709551615ull);
        dim(r, "M", 16), dim(r, "N", 32), dim(r, "K", 128);
        role(r, "a", "bfloat16"), role(r, "out", "bfloat16");
        snprintf(r->case_id, sizeof r->case_id, "gemm/M=16,N=32,K=128/bf16.bf16.f32.bf16/normal/seed=max");
        snprintf(r->reason, sizeof r->reason,
                 "element (3, 17): error 2.5 ulp > bound 1.8 ulp <&> \"q\" 'a' \x01");
        metrics(r, 2.5, 1e-2, 1.39);
        r->metrics.n_violations = 3;
        snprintf(r->reproducer, sizeof r->reproducer,
                 "qualify run shapes/premerge.yaml --case 'gemm/M=16,N=32,K=128/bf16.bf16.f32.bf16/normal/"
                 "seed=max' --kernel gemm.cpu.bad.trunc");
    }
    {
        qf_result *r = &res[k++];
        base(r, "gemm", "gemm.cpu.bad.trunc", "known-bad", "bf16.bf16.f32.bf16", QF_VERDICT_CRASHED, 1);
        dim(r, "M", 1), dim(r, "N", 1), dim(r, "K", 1);
        snprintf(r->case_id, sizeof r->case_id, "gemm/M=1,N=1,K=1/bf16.bf16.f32.bf16/normal/seed=1");
        snprintf(r->reason, sizeof r->reason, "signal 11 (Segmentation fault)");
        r->signal = 11;
        /* No reproducer recorded: the report must make one up. */
    }
    {
        qf_result *r = &res[k++];
        base(r, "gemm", "gemm.cpu.bad.trunc", "known-bad", "bf16.bf16.f32.bf16", QF_VERDICT_TIMEOUT, 2);
        dim(r, "M", 2), dim(r, "N", 2), dim(r, "K", 2);
        snprintf(r->case_id, sizeof r->case_id, "gemm/M=2,N=2,K=2/bf16.bf16.f32.bf16/normal/seed=2");
        snprintf(r->reason, sizeof r->reason, "ran past 10 s");
        snprintf(r->reproducer, sizeof r->reproducer,
                 "qualify run s.yaml --case x --kernel gemm.cpu.bad.trunc");
    }
    {
        static const qf_verdict v[4] = {QF_VERDICT_UNSUPPORTED, QF_VERDICT_SKIPPED, QF_VERDICT_MARGINAL,
                                        QF_VERDICT_MISTRUSTED};
        for (i = 0; i < 4; i++) {
            qf_result *r = &res[k++];
            base(r, "softmax", "softmax.cpu.f32", "reference", "f32.f32", v[i], 7);
            dim(r, "rows", 4), dim(r, "cols", 100 + i);
            role(r, "x", "float32"), role(r, "y", "float32");
            snprintf(r->case_id, sizeof r->case_id, "softmax/rows=4,cols=%zu/f32.f32/normal/seed=7", 100 + i);
            snprintf(r->reason, sizeof r->reason, "%s reason", qf_verdict_name(v[i]));
            if (v[i] == QF_VERDICT_MARGINAL || v[i] == QF_VERDICT_MISTRUSTED)
                metrics(r, 3, 1e-6, 0.5);
            repro(r, "s.yaml", "softmax.cpu.f32");
        }
    }
    ck_assert_uint_eq(k, NRES);
    for (i = 0; i < NRES; i++)
        qf_test_seal(&res[i]);
}

static void setup(void)
{
    char suite[256];
    snprintf(dir, sizeof dir, "/tmp/qf-t-report-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    build();
    ck_assert_int_eq(qf_provenance_collect(&prov, NULL), QF_OK);
    qf_test_write_text(dir, "suite.yaml", "abc");
    snprintf(suite, sizeof suite, "%s/suite.yaml", dir);
    ck_assert_int_eq(qf_provenance_add_file(&prov, suite), QF_OK);
    qf_provenance_set_gpu(&prov, "NVIDIA H100 <80GB>", "sm_90", "CUDA 12.4", "550.54");
}

static void teardown(void)
{
    const char *names[] = {"results.json", "report.md", "junit.xml", "suite.yaml", "journal.jsonl"};
    char p[256];
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        remove(p);
    }
    rmdir(dir);
    qf_provenance_free(&prov);
}

static void write_all(const qf_report_options *opt)
{
    char err[512] = "";
    ck_assert_msg(qf_report_write_all(dir, res, NRES, &prov, opt, err, sizeof err) == QF_OK, "%s", err);
}

/* ---- A small JSON Schema checker ------------------------------------------ */

static const json_t *schema_root;

static int type_ok(const json_t *v, const char *t)
{
    if (!strcmp(t, "object"))
        return json_is_object(v);
    if (!strcmp(t, "array"))
        return json_is_array(v);
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v);
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "null"))
        return json_is_null(v);
    ck_abort_msg("schema uses unknown type '%s'", t);
    return 0;
}

/* 0 when v validates against s; else a message in why (path first). */
static int validate(const json_t *v, const json_t *s, const char *path, char *why, size_t n)
{
    const json_t *x, *y;
    const char *key;
    size_t i;
    char sub[512];
    if ((x = json_object_get(s, "$ref"))) {
        const char *ref = json_string_value(x);
        ck_assert_msg(ref && !strncmp(ref, "#/$defs/", 8), "unsupported $ref at %s", path);
        y = json_object_get(json_object_get(schema_root, "$defs"), ref + 8);
        ck_assert_msg(y != NULL, "dangling $ref %s", ref);
        if (validate(v, y, path, why, n))
            return 1;
    }
    if ((x = json_object_get(s, "anyOf"))) {
        int ok = 0;
        json_array_foreach(x, i, y) if (!validate(v, y, path, sub, sizeof sub)) ok = 1;
        if (!ok) {
            snprintf(why, n, "%s: matches no anyOf branch (%s)", path, sub);
            return 1;
        }
    }
    if ((x = json_object_get(s, "type"))) {
        int ok = 0;
        if (json_is_string(x))
            ok = type_ok(v, json_string_value(x));
        else
            json_array_foreach(x, i, y) ok |= type_ok(v, json_string_value(y));
        if (!ok) {
            snprintf(why, n, "%s: wrong type", path);
            return 1;
        }
    }
    if ((x = json_object_get(s, "const")) && !json_equal(x, (json_t *)v)) {
        snprintf(why, n, "%s: not the const value", path);
        return 1;
    }
    if ((x = json_object_get(s, "enum"))) {
        int ok = 0;
        json_array_foreach(x, i, y) ok |= json_equal(y, (json_t *)v);
        if (!ok) {
            snprintf(why, n, "%s: not one of the enum values", path);
            return 1;
        }
    }
    if (json_is_object(v)) {
        if ((x = json_object_get(s, "required")))
            json_array_foreach(x, i, y) if (!json_object_get(v, json_string_value(y)))
            {
                snprintf(why, n, "%s: required key '%s' missing", path, json_string_value(y));
                return 1;
            }
        if ((x = json_object_get(s, "properties")))
            json_object_foreach((json_t *)x, key, y)
            {
                const json_t *m = json_object_get(v, key);
                snprintf(sub, sizeof sub, "%s.%s", path, key);
                if (m && validate(m, y, sub, why, n))
                    return 1;
            }
        if ((x = json_object_get(s, "additionalProperties")) && json_is_object(x))
            json_object_foreach((json_t *)v, key, y)
            {
                if (json_object_get(json_object_get(s, "properties"), key))
                    continue;
                snprintf(sub, sizeof sub, "%s.%s", path, key);
                if (validate(y, x, sub, why, n))
                    return 1;
            }
    }
    if (json_is_array(v) && (x = json_object_get(s, "items")))
        json_array_foreach(v, i, y)
        {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (validate(y, x, sub, why, n))
                return 1;
        }
    return 0;
}

static json_t *load_schema(void)
{
    const char *src = getenv("QF_SOURCE_DIR");
    char path[4096];
    json_error_t e;
    json_t *s;
    ck_assert_msg(src && *src, "QF_SOURCE_DIR is not set (run through ctest)");
    snprintf(path, sizeof path, "%s/docs/schema/results.schema.json", src);
    s = json_load_file(path, 0, &e);
    ck_assert_msg(s != NULL, "%s:%d: %s", path, e.line, e.text);
    return s;
}

START_TEST(test_json_schema)
{
    char path[256], why[1024] = "";
    json_error_t e;
    json_t *doc, *schema = load_schema(), *cases, *c, *bad;
    size_t i;
    static const char *required[] = {"kernel",  "op",      "dtypes", "shape",    "seed",
                                     "verdict", "metrics", "bound",  "reproduce"};
    write_all(NULL);
    snprintf(path, sizeof path, "%s/results.json", dir);
    doc = json_load_file(path, 0, &e);
    ck_assert_msg(doc != NULL, "%s:%d: %s", path, e.line, e.text);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "schema_version")), QF_REPORT_SCHEMA_VERSION);
    ck_assert_int_eq(
        json_integer_value(
            json_object_get(json_object_get(schema, "properties"), "schema_version")
                ? json_object_get(json_object_get(json_object_get(schema, "properties"), "schema_version"),
                                  "const")
                : NULL),
        QF_REPORT_SCHEMA_VERSION);
    cases = json_object_get(doc, "cases");
    ck_assert_uint_eq(json_array_size(cases), NRES);
    json_array_foreach(cases, i, c)
    {
        size_t j;
        for (j = 0; j < sizeof required / sizeof required[0]; j++)
            ck_assert_msg(json_object_get(c, required[j]) != NULL, "case %zu lacks '%s'", i, required[j]);
        ck_assert_msg(json_string_length(json_object_get(c, "reproduce")) > 0, "case %zu: empty reproduce",
                      i);
    }
    /* The issue's key list is part of the schema's case requirements. */
    {
        const json_t *req =
            json_object_get(json_object_get(json_object_get(schema, "$defs"), "case"), "required");
        size_t j;
        for (j = 0; j < sizeof required / sizeof required[0]; j++) {
            const json_t *y;
            int seen = 0;
            json_array_foreach(req, i, y) seen |= !strcmp(json_string_value(y), required[j]);
            ck_assert_msg(seen, "schema $defs.case.required lacks '%s'", required[j]);
        }
    }
    /* Spot values. */
    c = json_array_get(cases, 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "verdict")), "QUALIFIED");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "shape"), "K")), 64);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "dtypes"), "acc")), "float32");
    ck_assert(json_is_integer(json_object_get(c, "seed")));
    c = json_array_get(cases, 4);
    ck_assert_str_eq(json_string_value(json_object_get(c, "seed")), "18446744073709551615");
    c = json_array_get(cases, 5);
    ck_assert_msg(strstr(json_string_value(json_object_get(c, "reproduce")), "--kernel 'gemm.cpu.bad.trunc'"),
                  "made-up reproducer: %s", json_string_value(json_object_get(c, "reproduce")));
    ck_assert(json_is_null(json_object_get(c, "metrics")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "summary"), "failed")), 3);
    ck_assert_str_eq(json_string_value(
                         json_object_get(json_object_get(json_object_get(doc, "provenance"), "gpu"), "arch")),
                     "sm_90");

    schema_root = schema;
    ck_assert_msg(!validate(doc, schema, "$", why, sizeof why), "results.json does not validate: %s", why);
    /* The checker itself must catch a missing key and a bad verdict. */
    bad = json_deep_copy(doc);
    json_object_del(json_array_get(json_object_get(bad, "cases"), 2), "reproduce");
    ck_assert(validate(bad, schema, "$", why, sizeof why));
    ck_assert_msg(strstr(why, "reproduce"), "%s", why);
    json_decref(bad);
    bad = json_deep_copy(doc);
    json_object_set_new(json_array_get(json_object_get(bad, "cases"), 2), "verdict", json_string("PASSED"));
    ck_assert(validate(bad, schema, "$", why, sizeof why));
    json_decref(bad);
    json_decref(doc);
    json_decref(schema);
}
END_TEST

START_TEST(test_read_back)
{
    char path[256], err[512] = "";
    qf_result *back = NULL;
    qf_provenance p2;
    size_t n = 0, i;
    write_all(NULL);
    snprintf(path, sizeof path, "%s/results.json", dir);
    ck_assert_msg(qf_report_read(path, &back, &n, &p2, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(n, NRES);
    for (i = 0; i < n; i++) {
        ck_assert_str_eq(back[i].case_id, res[i].case_id);
        ck_assert_str_eq(back[i].kernel, res[i].kernel);
        ck_assert_int_eq(back[i].verdict, res[i].verdict);
        ck_assert(back[i].seed == res[i].seed);
        ck_assert_int_eq(back[i].has_metrics, res[i].has_metrics);
        if (res[i].has_metrics) {
            ck_assert(back[i].metrics.max_ulp == res[i].metrics.max_ulp);
            ck_assert(back[i].metrics.max_abs == res[i].metrics.max_abs);
            ck_assert(isinf(back[i].metrics.sqnr_db));
        }
        ck_assert_uint_eq(back[i].ndims, res[i].ndims);
        ck_assert(back[i].reproducer[0]);
    }
    ck_assert_str_eq(p2.cpu_model, prov.cpu_model);
    ck_assert_str_eq(p2.cpu_isa, prov.cpu_isa);
    ck_assert_str_eq(p2.version_mpfr, prov.version_mpfr);
    ck_assert_str_eq(p2.gpu_name, "NVIDIA H100 <80GB>");
    ck_assert_uint_eq(p2.nfiles, 1);
    ck_assert_str_eq(p2.files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    free(back);
    qf_provenance_free(&p2);

    /* Errors name the file. */
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    ck_assert_int_eq(qf_report_read(path, &back, &n, NULL, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "junit.xml"), "%s", err);
    snprintf(path, sizeof path, "%s/nonexistent.json", dir);
    ck_assert_int_eq(qf_report_read(path, &back, &n, NULL, err, sizeof err), QF_EIO);
    ck_assert_msg(strstr(err, "nonexistent.json"), "%s", err);
    snprintf(path, sizeof path, "%s/journal.jsonl", dir);
    qf_test_write_text(dir, "journal.jsonl", "{\"schema_version\": 99, \"cases\": []}\n");
    ck_assert_int_eq(qf_report_read(path, &back, &n, NULL, err, sizeof err), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(err, "99"), "%s", err);
    qf_test_write_text(dir, "journal.jsonl",
                       "{\"schema_version\": 1, \"cases\": [{\"case_id\": \"x\", \"verdict\": \"NOPE\"}]}\n");
    ck_assert_int_eq(qf_report_read(path, &back, &n, NULL, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "cases[0]") && strstr(err, "verdict"), "%s", err);
}
END_TEST

/* A journal is a report too (qualify show on a run in progress). */
START_TEST(test_read_journal)
{
    char path[256], err[512] = "";
    qf_journal *j = NULL;
    qf_result *back = NULL;
    size_t n = 0, i;
    snprintf(path, sizeof path, "%s/journal.jsonl", dir);
    ck_assert_msg(qf_journal_open(path, 0, NULL, &j, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < NRES; i++)
        ck_assert_int_eq(qf_journal_append(j, &res[i]), QF_OK);
    ck_assert_int_eq(qf_journal_close(j), QF_OK);
    ck_assert_msg(qf_report_read(path, &back, &n, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(n, NRES);
    ck_assert_int_eq(back[4].verdict, QF_VERDICT_FAILED);
    free(back);
}
END_TEST

START_TEST(test_summary)
{
    qf_report_group *g = NULL;
    size_t ng = 0;
    ck_assert_int_eq(qf_report_summarize(res, NRES, &g, &ng), QF_OK);
    ck_assert_uint_eq(ng, 3);
    ck_assert_str_eq(g[0].kernel, "gemm.cpu.naive.f32");
    ck_assert_str_eq(g[0].op, "gemm");
    ck_assert_uint_eq(g[0].n, 4);
    ck_assert_uint_eq(g[0].count[QF_VERDICT_QUALIFIED], 4);
    ck_assert_double_eq(g[0].worst_ulp, 1.25);
    ck_assert_double_eq_tol(g[0].worst_util, 0.04, 1e-15);
    ck_assert_uint_eq(g[0].growth_points, 4);
    ck_assert_msg(fabs(g[0].growth - 0.5) < 1e-9, "growth %g", g[0].growth);
    ck_assert_uint_eq(
        g[1].count[QF_VERDICT_FAILED] + g[1].count[QF_VERDICT_CRASHED] + g[1].count[QF_VERDICT_TIMEOUT], 3);
    /* One K value: no sweep, no exponent. */
    ck_assert(isnan(g[1].growth));
    ck_assert_uint_eq(g[1].growth_points, 0);
    ck_assert(isnan(g[2].growth));
    ck_assert_uint_eq(qf_report_failed(res, NRES, 0), 3);
    ck_assert_uint_eq(qf_report_failed(res, NRES, 1), 5);
    free(g);
    ck_assert_int_eq(qf_report_summarize(NULL, 0, &g, &ng), QF_OK);
    ck_assert_uint_eq(ng, 0);
    free(g);
}
END_TEST

/* Two suite ops served by one kernel and dtype tuple (log_softmax runs on
 * softmax kernels) are two rows everywhere: the summary, results.json's
 * groups and report.md. */
START_TEST(test_rows_per_op)
{
    static const char *ops[4] = {"softmax", "log_softmax", "softmax", "log_softmax"};
    qf_result r[4];
    qf_report_group *g = NULL;
    size_t ng = 0, i;
    char path[256], err[512] = "", *m;
    json_t *doc, *groups;
    json_error_t je;
    for (i = 0; i < 4; i++) {
        base(&r[i], ops[i], "softmax.cpu.f32", "reference", "f32.f32", QF_VERDICT_QUALIFIED, i);
        dim(&r[i], "rows", 4), dim(&r[i], "cols", 8);
        snprintf(r[i].case_id, sizeof r[i].case_id, "%s/rows=4,cols=8/f32.f32/normal/seed=%zu", ops[i], i);
        metrics(&r[i], i < 2 ? 0.5 : 0.75, 1e-7, 0.1);
    }
    r[1].verdict = QF_VERDICT_MARGINAL;
    ck_assert_int_eq(qf_report_summarize(r, 4, &g, &ng), QF_OK);
    ck_assert_uint_eq(ng, 2);
    ck_assert_str_eq(g[0].op, "softmax");
    ck_assert_str_eq(g[1].op, "log_softmax");
    ck_assert_uint_eq(g[0].n, 2);
    ck_assert_uint_eq(g[1].count[QF_VERDICT_MARGINAL], 1);
    free(g);
    ck_assert_msg(qf_report_write_all(dir, r, 4, &prov, NULL, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path, "%s/report.md", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(
        strstr(m, "| softmax.cpu.f32 | reference | softmax | f32.f32 | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 2 |"), "%s",
        m);
    ck_assert_msg(
        strstr(m, "| softmax.cpu.f32 | reference | log_softmax | f32.f32 | 2 | 0 | 0 | 0 | 0 | 1 | 0 | 1 |"),
        "%s", m);
    free(m);
    snprintf(path, sizeof path, "%s/results.json", dir);
    doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    groups = json_object_get(json_object_get(doc, "summary"), "groups");
    ck_assert_uint_eq(json_array_size(groups), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(groups, 1), "op")), "log_softmax");
    json_decref(doc);
}
END_TEST

/* Pairs the runner did not run because the kernel claims no dtype tuple
 * for the case (a glob over kernels of other dtypes) leave report.md's
 * table for one line per kernel, stay in the totals, results.json and
 * junit.xml; an UNSUPPORTED pair for any other reason keeps its row. */
static size_t count_str(const char *s, const char *w);

static void no_tuple(qf_result *r, const char *kernel, const char *dtype, uint64_t k)
{
    base(r, "gemm", kernel, "optimized", dtype, QF_VERDICT_UNSUPPORTED, 0);
    dim(r, "M", 4), dim(r, "N", 4), dim(r, "K", k);
    snprintf(r->case_id, sizeof r->case_id, "gemm/M=4,N=4,K=%llu/%s/normal/seed=0", (unsigned long long)k,
             dtype);
    /* The runner's reason and cause (runner.c run_pair) */
    snprintf(r->reason, sizeof r->reason, "unsupported: %s claims no dtype tuple for %s", kernel, dtype);
    r->ev.outcome = r->cause = QF_CAUSE_NO_TUPLE;
}

/* Another outcome cause of UNSUPPORTED, the reason kept. */
static void other_cause(qf_result *r, qf_cause c)
{
    r->ev.outcome = r->cause = c;
}

START_TEST(test_not_run)
{
    qf_result r[8];
    qf_report_group *g = NULL;
    size_t ng = 0, i;
    char path[256], err[512] = "", *m;
    json_t *doc, *groups;
    json_error_t je;
    no_tuple(&r[0], "gemm.x.f64", "f32.f32.f32.f32", 16);
    no_tuple(&r[1], "gemm.x.f64", "f32.f32.f32.f32", 32);
    no_tuple(&r[2], "gemm.x.f64", "bf16.bf16.f32.bf16", 16);
    base(&r[3], "gemm", "gemm.cpu.naive.f32", "reference", "f32.f32.f32.f32", QF_VERDICT_QUALIFIED, 0);
    metrics(&r[3], 0.5, 1e-7, 0.1);
    no_tuple(&r[4], "gemm.cpu.naive.f32", "bf16.bf16.f32.bf16", 16);
    /* Look-alikes that are not the runner's: a kernel's own message after
     * its tuple was named (cause declined), another reason, the runner's
     * very words with another cause: the cause decides, never the text. */
    no_tuple(&r[5], "gemm.y", "f32.f32.f32.f32", 16);
    snprintf(r[5].dtype_tuple, sizeof r[5].dtype_tuple, "f32");
    other_cause(&r[5], QF_CAUSE_DECLINED);
    no_tuple(&r[6], "gemm.z", "f32.f32.f32.f32", 16);
    snprintf(r[6].reason, sizeof r[6].reason,
             "unsupported: the kernel declined: gemm.z claims no dtype tuple "
             "for f32.f32.f32.f32");
    other_cause(&r[6], QF_CAUSE_DECLINED);
    no_tuple(&r[7], "gemm.w", "f32.f32.f32.f32", 16);
    other_cause(&r[7], QF_CAUSE_UNSUPPORTED);
    for (i = 0; i < 8; i++)
        ck_assert_int_eq(qf_report_no_tuple(&r[i]), i < 3 || i == 4);
    ck_assert_int_eq(qf_report_summarize(r, 8, &g, &ng), QF_OK);
    ck_assert_uint_eq(ng, 7);
    ck_assert_uint_eq(g[0].n, 2);
    ck_assert_uint_eq(g[0].n_no_tuple, 2);
    ck_assert_uint_eq(g[0].count[QF_VERDICT_UNSUPPORTED], 2);
    ck_assert_uint_eq(g[4].n_no_tuple, 0);
    free(g);

    ck_assert_msg(qf_report_write_all(dir, r, 8, &prov, NULL, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path, "%s/report.md", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(strstr(m, "8 cases: 1 QUALIFIED, 7 UNSUPPORTED, passing."), "%s", m);
    ck_assert_msg(strstr(m, "\n- gemm.x.f64: 3 pairs not run: no dtype tuple for f32.f32.f32.f32, "
                            "bf16.bf16.f32.bf16 (UNSUPPORTED)\n"
                            "- gemm.cpu.naive.f32: 1 pair not run: no dtype tuple for bf16.bf16.f32.bf16 "
                            "(UNSUPPORTED)\n"),
                  "%s", m);
    ck_assert_msg(!strstr(m, "| gemm.x.f64 |") && !strstr(m, "| bf16.bf16.f32.bf16 |"), "%s", m);
    ck_assert_msg(strstr(m, "| gemm.cpu.naive.f32 | reference | gemm | f32.f32.f32.f32 | 1 |"), "%s", m);
    ck_assert_msg(strstr(m, "| gemm.y | optimized | gemm | f32.f32.f32.f32 | 1 |") &&
                      strstr(m, "| gemm.z |") && strstr(m, "| gemm.w |"),
                  "%s", m);
    free(m);
    snprintf(path, sizeof path, "%s/results.json", dir);
    doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "cases")), 8);
    groups = json_object_get(json_object_get(doc, "summary"), "groups");
    ck_assert_uint_eq(json_array_size(groups), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(groups, 0), "no_tuple")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(groups, 2), "no_tuple")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(doc, "summary"), "verdicts"), "UNSUPPORTED")),
                     7);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_uint_eq(count_str(m, "<testcase "), 8);
    ck_assert_uint_eq(count_str(m, "<skipped "), 7);
    free(m);

    /* Only pairs not run: no table, the lines. */
    ck_assert_msg(qf_report_write_all(dir, r, 3, &prov, NULL, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path, "%s/report.md", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(strstr(m, "No pair ran") && !strstr(m, "| kernel |") && strstr(m, "- gemm.x.f64: 3 pairs"),
                  "%s", m);
    free(m);
}
END_TEST

/* Exact zeros apart (docs/verdicts.md "Exact zeros"): the ulp headline is
 * the error where the exact value is not 0, the zeros are counted apart
 * with their absolute error; a record that does not separate them keeps
 * max_ulp, marked, when it missed one (max_rel infinite). */
START_TEST(test_exact_zeros)
{
    qf_result r[3];
    qf_report_group *g = NULL;
    size_t ng = 0, i;
    int unsure;
    char path[256], err[512] = "", text[256], *m;
    for (i = 0; i < 3; i++) {
        base(&r[i], "gemm", i < 2 ? "gemm.a" : "gemm.b", "model", "e5m2.e5m2.f32.f32", QF_VERDICT_QUALIFIED,
             i);
        dim(&r[i], "M", 2), dim(&r[i], "N", 2), dim(&r[i], "K", 96 + i);
        snprintf(r[i].case_id, sizeof r[i].case_id, "gemm/M=2,N=2,K=%zu/e5m2/file/seed=0", 96 + i);
        metrics(&r[i], 0x1p149, 1, 0.01);
        r[i].metrics.n_zero_ref = 3;
        r[i].metrics.max_rel = INFINITY;
    }
    /* r[0], r[1]: records that separate their exact zeros */
    r[0].metrics.max_ulp_nonzero = 3, r[0].metrics.n_zero_checked = 3, r[0].metrics.n_zero_inexact = 2;
    r[0].metrics.max_abs_zero = 1;
    r[1].metrics.max_ulp_nonzero = 2.5, r[1].metrics.n_zero_checked = 3, r[1].metrics.n_zero_inexact = 0;
    r[1].metrics.max_abs_zero = 0;
    r[1].verdict = QF_VERDICT_FAILED;
    /* r[2]: one that does not (read from a journal without them) */
    ck_assert(qf_report_ulp_nonzero(&r[0], &unsure) == 3 && !unsure);
    ck_assert(qf_report_ulp_nonzero(&r[2], &unsure) == 0x1p149 && unsure);
    r[2].metrics.max_rel = 0.5; /* no zero was missed: max_ulp is the figure */
    ck_assert(qf_report_ulp_nonzero(&r[2], &unsure) == 0x1p149 && !unsure);
    r[2].metrics.max_rel = INFINITY;
    qf_report_error_text(&r[1], text, sizeof text);
    ck_assert_str_eq(text, "2.5 ulp where the exact value is not 0; 0 of 3 exact zeros returned nonzero");
    qf_report_error_text(&r[0], text, sizeof text);
    ck_assert_str_eq(text,
                     "3 ulp where the exact value is not 0; 2 of 3 exact zeros returned nonzero (max abs 1)");
    qf_report_error_text(&r[2], text, sizeof text);
    ck_assert_str_eq(text, "7.136e+44 ulp (may count a result at an exact zero in ulps of zero)");
    ck_assert_int_eq(qf_report_summarize(r, 3, &g, &ng), QF_OK);
    ck_assert_uint_eq(ng, 2);
    ck_assert(g[0].worst_ulp == 0x1p149 && g[0].worst_ulp_nonzero == 3 && !g[0].ulp_unsure);
    ck_assert(g[0].n_zero_checked == 6 && g[0].n_zero_inexact == 2 && g[0].worst_abs_zero == 1);
    ck_assert(g[1].ulp_unsure && g[1].zeros_unsure && g[1].n_zero_checked == 0);
    free(g);
    ck_assert_msg(qf_report_write_all(dir, r, 3, &prov, NULL, err, sizeof err) == QF_OK, "%s", err);
    snprintf(path, sizeof path, "%s/report.md", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(strstr(m, "| worst ulp (exact ≠ 0) | exact zeros missed | worst bound util |"), "%s", m);
    ck_assert_msg(strstr(m,
                         "| gemm.a | model | gemm | e5m2.e5m2.f32.f32 | 2 | 1 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 0 | "
                         "3 | 2 of 6 (max abs 1) | 0.01 |"),
                  "%s", m);
    ck_assert_msg(strstr(m, "| 7.14e+44\\* | ?\\* | 0.01 |") && strstr(m, "\n\\* from records that do not"),
                  "%s", m);
    ck_assert_msg(strstr(m,
                         "- max error: 2.5 ulp where the exact value is not 0; 0 of 3 exact zeros returned "
                         "nonzero, bound utilization 0.01"),
                  "%s", m);
    free(m);
    /* Records without exact zeros: the figures as before, no mark. */
    write_all(NULL);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(!strstr(m, "\\*"), "%s", m);
    free(m);
}
END_TEST

/* ---- JUnit ------------------------------------------------------------------- */

static size_t count_str(const char *s, const char *w)
{
    size_t k = 0;
    for (; (s = strstr(s, w)) != NULL; s++)
        k++;
    return k;
}

/* Balanced tags, entities well formed, no raw '<' or control character in
 * content.  Returns 0 or fails the test with a position. */
static void xml_check(const char *x)
{
    const char *stack[64];
    size_t depth = 0, sn[64];
    const char *p = x;
    ck_assert_msg(!strncmp(x, "<?xml ", 6), "no XML declaration");
    p = strstr(x, "?>") + 2;
    while (*p) {
        unsigned char c = (unsigned char)*p;
        ck_assert_msg(c >= 0x20 || c == '\n' || c == '\t' || c == '\r', "control character at %ld",
                      (long)(p - x));
        if (c == '&') {
            const char *e = strchr(p, ';');
            ck_assert_msg(e && (!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) || !strncmp(p, "&gt;", 4) ||
                                !strncmp(p, "&quot;", 6) || !strncmp(p, "&apos;", 6) || !strncmp(p, "&#", 2)),
                          "bad entity at %ld: %.12s", (long)(p - x), p);
            p = e + 1;
            continue;
        }
        if (c != '<') {
            p++;
            continue;
        }
        {
            const char *end = strchr(p, '>'), *q;
            size_t len;
            int closing = p[1] == '/', selfclose;
            ck_assert_msg(end != NULL, "unterminated tag at %ld", (long)(p - x));
            for (q = p + 1; q < end; q++)
                ck_assert_msg(*q != '<', "'<' inside a tag at %ld", (long)(q - x));
            selfclose = end[-1] == '/';
            q = p + 1 + closing;
            len = strcspn(q, " />");
            if (closing) {
                ck_assert_msg(depth > 0, "close without open at %ld", (long)(p - x));
                depth--;
                ck_assert_msg(sn[depth] == len && !strncmp(stack[depth], q, len), "mismatched </%.*s> at %ld",
                              (int)len, q, (long)(p - x));
            } else if (!selfclose) {
                ck_assert(depth < 64);
                stack[depth] = q;
                sn[depth++] = len;
            }
            /* Attribute values are quoted: an odd number of '"' is broken. */
            {
                size_t quotes = 0;
                for (q = p; q < end; q++)
                    quotes += *q == '"';
                ck_assert_msg(quotes % 2 == 0, "unbalanced quotes in tag at %ld", (long)(p - x));
            }
            p = end + 1;
        }
    }
    ck_assert_msg(depth == 0, "%zu unclosed elements", depth);
}

START_TEST(test_junit)
{
    char path[256];
    char *x;
    write_all(NULL);
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    x = qf_test_slurp(path, NULL);
    xml_check(x);
    ck_assert_uint_eq(count_str(x, "<testsuite "), 3);
    ck_assert_uint_eq(count_str(x, "<testcase "), NRES);
    ck_assert_uint_eq(count_str(x, "<failure "), 3);
    ck_assert_uint_eq(count_str(x, "<skipped "), 2);
    ck_assert_msg(
        strstr(x, "<testsuites name=\"qualify\" tests=\"11\" failures=\"3\" errors=\"0\" skipped=\"2\""),
        "%s", x);
    ck_assert_msg(strstr(x, "<testsuite name=\"gemm.cpu.bad.trunc\" tests=\"3\" failures=\"3\""), "%s", x);
    /* The hostile reason, escaped, and the reproducer in the failure. */
    ck_assert_msg(strstr(x, "&lt;&amp;&gt; &quot;q&quot; &apos;a&apos;"), "%s", x);
    ck_assert_msg(
        strstr(x, "reproduce: qualify run shapes/premerge.yaml --case &apos;gemm/M=16,N=32,K=128") ||
            strstr(x, "reproduce: qualify run shapes/premerge.yaml --case 'gemm/M=16,N=32,K=128"),
        "%s", x);
    ck_assert_msg(strstr(x, "NVIDIA H100 &lt;80GB&gt;"), "%s", x);
    free(x);
    {
        qf_report_options o = {1, NULL, NULL};
        write_all(&o);
        x = qf_test_slurp(path, NULL);
        xml_check(x);
        ck_assert_uint_eq(count_str(x, "<failure "), 5);
        free(x);
    }
}
END_TEST

START_TEST(test_markdown)
{
    char path[256];
    char *m;
    qf_report_options o = {0, "pre-merge", NULL};
    write_all(&o);
    snprintf(path, sizeof path, "%s/report.md", dir);
    m = qf_test_slurp(path, NULL);
    ck_assert_msg(strstr(m, "# pre-merge\n"), "%s", m);
    ck_assert_msg(
        strstr(m,
               "| gemm.cpu.naive.f32 | reference | gemm | f32.f32.f32.f32 | 4 | 0 | 0 | 0 | 0 | 0 | 0 | 4 | 0 | "
               "0 | 1.25 | - | 0.04 | 0.50 (R² 1.00, 4 pts) |"),
        "%s", m);
    ck_assert_msg(strstr(m, "| gemm.cpu.bad.trunc | known-bad | gemm | bf16.bf16.f32.bf16 | 3 | 1 | 1 | 1 |"),
                  "%s", m);
    ck_assert_msg(strstr(m, "| softmax.cpu.f32 | reference | softmax | f32.f32 | 4 |"), "%s", m);
    ck_assert_msg(strstr(m, "### FAILED `gemm.cpu.bad.trunc`"), "%s", m);
    ck_assert_msg(strstr(m, "### CRASHED") && strstr(m, "### TIMEOUT") && !strstr(m, "### MARGINAL"), "%s",
                  m);
    ck_assert_msg(strstr(m, "- reproduce: `qualify run shapes/premerge.yaml --case 'gemm/M=16,N=32,K=128"),
                  "%s", m);
    ck_assert_msg(strstr(m, "signal 11"), "%s", m);
    ck_assert_msg(strstr(m, "## Provenance") && strstr(m, "| GPU architecture | sm_90 |") &&
                      strstr(m, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
                  "%s", m);
    ck_assert_msg(strstr(m, "NOT PASSING"), "%s", m);
    free(m);
}
END_TEST

START_TEST(test_errors)
{
    char err[512] = "";
    ck_assert_int_eq(qf_report_write_all("/nonexistent-dir-qf", res, NRES, &prov, NULL, err, sizeof err),
                     QF_EIO);
    ck_assert_msg(strstr(err, "/nonexistent-dir-qf/results.json"), "%s", err);
    ck_assert_int_eq(qf_report_summarize(NULL, 3, NULL, NULL), QF_EINVAL);
    /* An empty report is still a report. */
    ck_assert_int_eq(qf_report_write_all(dir, NULL, 0, NULL, NULL, err, sizeof err), QF_OK);
    {
        char path[256];
        qf_result *back = NULL;
        size_t n = 7;
        snprintf(path, sizeof path, "%s/results.json", dir);
        ck_assert_msg(qf_report_read(path, &back, &n, NULL, err, sizeof err) == QF_OK, "%s", err);
        ck_assert_uint_eq(n, 0);
        free(back);
    }
}
END_TEST

int main(void)
{
    return qf_test_main("report/report", "report", 0, setup, teardown,
                        QF_TESTS(test_json_schema, test_read_back, test_read_journal, test_summary,
                                 test_rows_per_op, test_not_run, test_exact_zeros, test_junit, test_markdown,
                                 test_errors));
}
