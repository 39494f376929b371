/* t-journal.c: result records as JSON and the JSON Lines journal: exact
 * round trip (NaN, Inf, 17 digits), append and read back, a torn last line
 * (a sweep killed mid-write) skipped and reported, cut off on resume, a bad
 * line in the middle an error naming PATH:LINE. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test_seal.h"
#include "qf_test.h"

static char path[256];

static void make_path(void)
{
    snprintf(path, sizeof path, "/tmp/qf-t-journal-%d.jsonl", (int)getpid());
    remove(path);
}

static void sample_result(qf_result *r, int i)
{
    qf_result_init(r);
    snprintf(r->case_id, sizeof r->case_id, "gemm/M=%d,N=16,K=127/f32.f32.f32.f32/normal/seed=0", i);
    snprintf(r->op, sizeof r->op, "gemm");
    snprintf(r->kernel, sizeof r->kernel, "gemm.cpu.naive.f32");
    snprintf(r->kernel_kind, sizeof r->kernel_kind, "reference");
    snprintf(r->dtype, sizeof r->dtype, "f32.f32.f32.f32");
    r->ndims = 3;
    snprintf(r->dims[0].name, sizeof r->dims[0].name, "M");
    r->dims[0].value = (uint64_t)i;
    snprintf(r->dims[1].name, sizeof r->dims[1].name, "N");
    r->dims[1].value = 16;
    snprintf(r->dims[2].name, sizeof r->dims[2].name, "K");
    r->dims[2].value = 127;
    r->nparams = 1;
    snprintf(r->params[0].key, sizeof r->params[0].key, "alpha");
    snprintf(r->params[0].value, sizeof r->params[0].value, "1");
    r->nroles = 2;
    snprintf(r->roles[0].role, sizeof r->roles[0].role, "a");
    snprintf(r->roles[0].format, sizeof r->roles[0].format, "float32");
    snprintf(r->roles[1].role, sizeof r->roles[1].role, "out");
    snprintf(r->roles[1].format, sizeof r->roles[1].format, "float32");
    r->seed = 0xFFFFFFFFFFFFFFFFull - (uint64_t)i; /* beyond json_int_t */
    r->verdict = i % 2 ? QF_VERDICT_FAILED : QF_VERDICT_QUALIFIED;
    snprintf(r->reason, sizeof r->reason, "reason \"%d\"\twith\nescapes", i);
    r->has_metrics = 1;
    r->metrics.n = 100;
    r->metrics.n_checked = 99;
    r->metrics.max_ulp = 0.1 + i; /* not a short decimal: 17 digits needed */
    r->metrics.sqnr_db = INFINITY;
    r->metrics.max_util = NAN;
    r->metrics.bias = -INFINITY;
    r->metrics.at_ulp = (size_t)-1;
    r->metrics.pct_ulp[3] = 1.0 / 3.0;
    snprintf(r->bound.kind, sizeof r->bound.kind, "gemm");
    r->bound.rel_abs = 0x1.0000000000001p-20;
    r->n_elements = 1000;
    r->n_checked = 99;
    r->sampled = 1;
    r->ref_exact = 3;
    r->ref_rounded = 96;
    r->ref_exact_engine = 7;
    r->det_checked = 1;
    r->det_equal = 1;
    r->timing.measured = 1;
    r->timing.reps = 10;
    r->timing.median_s = 1e-6;
    r->wall_s = 0.25;
    snprintf(r->reproducer, sizeof r->reproducer, "qualify run 'a b.yaml' --case x");
    qf_test_seal(r); /* evidence that gives the verdict: readers decide again */
}

static char *dump(const qf_result *r)
{
    json_t *j = NULL;
    char *s;
    ck_assert_int_eq(qf_result_to_json(r, &j), QF_OK);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(j);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(roundtrip)
{
    qf_result a, b;
    json_t *j = NULL;
    char err[256], *sa, *sb;
    sample_result(&a, 3);
    ck_assert_int_eq(qf_result_to_json(&a, &j), QF_OK);
    ck_assert_int_eq(qf_result_from_json(j, &b, err, sizeof err), QF_OK);
    json_decref(j);
    ck_assert_str_eq(b.case_id, a.case_id);
    /* A reason is stored as one line (docs/security.md): its tab and
     * newline come back as visible escapes, and a second trip keeps them. */
    ck_assert_str_eq(b.reason, "reason \"3\"\\twith\\nescapes");
    ck_assert_uint_eq(b.seed, a.seed);
    ck_assert_int_eq(b.verdict, a.verdict);
    ck_assert(b.metrics.max_ulp == a.metrics.max_ulp);
    ck_assert(isinf(b.metrics.sqnr_db) && b.metrics.sqnr_db > 0);
    ck_assert(isinf(b.metrics.bias) && b.metrics.bias < 0);
    ck_assert(isnan(b.metrics.max_util));
    ck_assert(b.metrics.pct_ulp[3] == 1.0 / 3.0);
    ck_assert(b.bound.rel_abs == a.bound.rel_abs);
    ck_assert_uint_eq(b.metrics.at_ulp, (size_t)-1);
    ck_assert_uint_eq(b.ndims, 3);
    ck_assert_uint_eq(b.dims[2].value, 127);
    ck_assert_int_eq(b.timing.measured, 1);
    ck_assert_uint_eq(b.ref_exact_engine, 7);
    sa = dump(&a);
    sb = dump(&b);
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    /* A record without a verdict is refused, naming the member. */
    j = json_pack("{s:s, s:s}", "record", "case", "case_id", "x");
    ck_assert_int_eq(qf_result_from_json(j, &b, err, sizeof err), QF_EPARSE);
    ck_assert_ptr_nonnull(strstr(err, "verdict"));
    json_decref(j);
}
END_TEST

START_TEST(append_read)
{
    qf_journal *jr = NULL;
    qf_result r, *out = NULL;
    size_t n = 0;
    int torn = -1, i;
    json_t *hdr = json_pack("{s:s}", "suite", "quick.yaml"), *h = NULL;
    char err[256];
    make_path();
    ck_assert_int_eq(qf_journal_open(path, 0, hdr, &jr, &torn, err, sizeof err), QF_OK);
    ck_assert_int_eq(torn, 0);
    for (i = 0; i < 3; i++) {
        sample_result(&r, i);
        ck_assert_int_eq(qf_journal_append(jr, &r), QF_OK);
    }
    ck_assert_uint_eq(qf_journal_count(jr), 3);
    ck_assert_int_eq(qf_journal_close(jr), QF_OK);
    ck_assert_int_eq(qf_journal_read(path, &out, &n, &torn, &h, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(torn, 0);
    ck_assert_ptr_nonnull(h);
    ck_assert_str_eq(json_string_value(json_object_get(h, "suite")), "quick.yaml");
    ck_assert_str_eq(json_string_value(json_object_get(h, "format")), "qualify-journal");
    for (i = 0; i < 3; i++)
        ck_assert_uint_eq(out[i].dims[0].value, (uint64_t)i);
    json_decref(h);
    json_decref(hdr);
    free(out);
    /* Opening without resume starts over. */
    ck_assert_int_eq(qf_journal_open(path, 0, NULL, &jr, NULL, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_journal_close(jr), QF_OK);
    ck_assert_int_eq(qf_journal_read(path, &out, &n, NULL, NULL, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 0);
    free(out);
    remove(path);
    /* A missing file is an I/O error naming it. */
    ck_assert_int_eq(qf_journal_read(path, &out, &n, NULL, NULL, err, sizeof err), QF_EIO);
    ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

START_TEST(torn_last_line)
{
    qf_journal *jr = NULL;
    qf_result r, *out = NULL;
    size_t n = 0;
    int torn = 0, i;
    char err[256], *line;
    FILE *f;
    make_path();
    ck_assert_int_eq(qf_journal_open(path, 1, NULL, &jr, &torn, err, sizeof err), QF_OK); /* creates */
    for (i = 0; i < 2; i++) {
        sample_result(&r, i);
        ck_assert_int_eq(qf_journal_append(jr, &r), QF_OK);
    }
    ck_assert_int_eq(qf_journal_close(jr), QF_OK);
    /* Half of a third record, as a kill in the middle of a write leaves it. */
    sample_result(&r, 2);
    line = dump(&r);
    f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    fwrite(line, 1, strlen(line) / 2, f);
    fclose(f);
    free(line);
    ck_assert_int_eq(qf_journal_read(path, &out, &n, &torn, NULL, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(torn, 1);
    free(out);
    /* Resume cuts it off, then appends cleanly after the finished records. */
    ck_assert_int_eq(qf_journal_open(path, 1, NULL, &jr, &torn, err, sizeof err), QF_OK);
    ck_assert_int_eq(torn, 1);
    ck_assert_int_eq(qf_journal_append(jr, &r), QF_OK);
    ck_assert_int_eq(qf_journal_close(jr), QF_OK);
    ck_assert_int_eq(qf_journal_read(path, &out, &n, &torn, NULL, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(torn, 0);
    for (i = 0; i < 3; i++)
        ck_assert_uint_eq(out[i].dims[0].value, (uint64_t)i);
    free(out);
    remove(path);
}
END_TEST

START_TEST(bad_line_in_the_middle)
{
    qf_journal *jr = NULL;
    qf_result r, *out = NULL;
    size_t n = 0;
    char err[256], where[300];
    FILE *f;
    make_path();
    ck_assert_int_eq(qf_journal_open(path, 0, NULL, &jr, NULL, err, sizeof err), QF_OK);
    sample_result(&r, 0);
    ck_assert_int_eq(qf_journal_append(jr, &r), QF_OK);
    ck_assert_int_eq(qf_journal_close(jr), QF_OK);
    /* A good record after the bad line, written by hand: a resume would
     * cut a bad last line before appending (docs/runner.md "Resume"). */
    {
        char *text = qf_test_slurp(path, NULL), *rec = strchr(text, '\n');
        ck_assert_ptr_nonnull(rec);
        f = fopen(path, "ab");
        fputs("{not json\n", f);
        fputs(rec + 1, f);
        fclose(f);
        free(text);
    }
    ck_assert_int_eq(qf_journal_read(path, &out, &n, NULL, NULL, err, sizeof err), QF_EPARSE);
    snprintf(where, sizeof where, "%s:3:", path); /* header, record, bad line */
    ck_assert_msg(strstr(err, where) != NULL, "message '%s' lacks '%s'", err, where);
    ck_assert_ptr_null(out);
    remove(path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/journal");
    TCase *tc = tcase_create("journal");
    tcase_add_test(tc, roundtrip);
    tcase_add_test(tc, append_read);
    tcase_add_test(tc, torn_last_line);
    tcase_add_test(tc, bad_line_in_the_middle);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
