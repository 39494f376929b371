/* t-regions.c: the region rule of qualify enable (docs/enable.md) on
 * hand-made results: boxes over swept points, alignment classes, failed
 * regions with the worst verdict, no-evidence points, the worst verdict
 * over inputs, and the outputs (JSON read back by the guard, C pair). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_enable.h"
#include "qf_guard.h"
#include "qf_test_seal.h"
#include "qf_test.h"

static qf_result mk(const char *arch, const char *kernel, unsigned m, unsigned k, qf_verdict v,
                    const char *why)
{
    qf_result r;
    qf_result_init(&r);
    snprintf(r.arch, sizeof r.arch, "%s", arch);
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
    snprintf(r.kernel_kind, sizeof r.kernel_kind, "optimized");
    snprintf(r.op, sizeof r.op, "gemm");
    snprintf(r.dtype, sizeof r.dtype, "f32.f32.f32.f32");
    snprintf(r.case_id, sizeof r.case_id, "gemm/M=%u,K=%u", m, k);
    snprintf(r.reason, sizeof r.reason, "%s", why);
    r.ndims = 2;
    snprintf(r.dims[0].name, sizeof r.dims[0].name, "M");
    snprintf(r.dims[1].name, sizeof r.dims[1].name, "K");
    r.dims[0].value = m;
    r.dims[1].value = k;
    r.verdict = v;
    qf_test_seal(&r);
    return r;
}

static const qf_enable_region *region(const qf_enable_entry *e, int failed, size_t nth)
{
    size_t i;
    for (i = 0; i < e->nregions; i++)
        if (e->regions[i].failed == failed && nth-- == 0)
            return &e->regions[i];
    return NULL;
}

/* Grid M {16, 32, 64} x K {32, 64, 128, 256}: all QUALIFIED except K = 256
 * (FAILED at M = 64, MARGINAL elsewhere) and (M = 64, K = 128) not swept. */
static void fill(qf_enable_table *t)
{
    static const unsigned ms[] = {16, 32, 64}, ks[] = {32, 64, 128, 256};
    qf_result r[16];
    size_t n = 0, i, j;
    char err[256];
    for (i = 0; i < 3; i++)
        for (j = 0; j < 4; j++) {
            if (ms[i] == 64 && ks[j] == 128)
                continue;
            if (ks[j] == 256)
                r[n++] =
                    mk("sim:sm_90", "k", ms[i], ks[j], ms[i] == 64 ? QF_VERDICT_FAILED : QF_VERDICT_MARGINAL,
                       ms[i] == 64 ? "error 9 ulp > bound 4 ulp" : "normwise over policy");
            else
                r[n++] = mk("sim:sm_90", "k", ms[i], ks[j], QF_VERDICT_QUALIFIED, "");
        }
    ck_assert_int_eq(qf_enable_add(t, r, n, NULL, "a.json", err, sizeof err), QF_OK);
    /* A second input at (16, 32) that is MISTRUSTED: the shape is not qualified. */
    r[0] = mk("sim:sm_90", "k", 16, 32, QF_VERDICT_MISTRUSTED, "mostly zeros");
    /* A shape that only has UNSUPPORTED cases: no evidence. */
    r[1] = mk("sim:sm_90", "k", 128, 32, QF_VERDICT_UNSUPPORTED, "no tuple");
    ck_assert_int_eq(qf_enable_add(t, r, 2, NULL, "b.json", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_finish(t), QF_OK);
}

START_TEST(test_region_rule)
{
    qf_enable_table t;
    const qf_enable_entry *e;
    const qf_enable_region *q;
    size_t nq = 0, nf = 0, i;
    qf_enable_init(&t);
    fill(&t);
    ck_assert_uint_eq(t.nentries, 1);
    ck_assert_uint_eq(t.narchs, 1);
    ck_assert_int_eq(t.archs[0].simulated, 1);
    e = &t.entries[0];
    ck_assert_uint_eq(e->npoints, 12);
    ck_assert_uint_eq(e->n_unsupported, 1);
    ck_assert_uint_eq(e->n_failed, 4); /* three at K = 256, plus (16, 32) MISTRUSTED */
    ck_assert_uint_eq(e->n_qualified, 7);
    /* the UNSUPPORTED M = 128 is not a swept value */
    ck_assert_uint_eq(e->nvalues[0], 3);
    for (i = 0; i < e->nregions; i++)
        e->regions[i].failed ? nf++ : nq++;
    /* Qualified points: (16,64) (16,128) (32,32) (32,64) (32,128) (64,32)
     * (64,64).  Greedy from the smallest, (16,64): M grows to 64 ((32,64),
     * (64,64) qualified); K cannot grow to 128 ((64,128) was not swept). */
    q = region(e, 0, 0);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(q->lo[0], 16);
    ck_assert_uint_eq(q->hi[0], 64);
    ck_assert_uint_eq(q->lo[1], 64);
    ck_assert_uint_eq(q->hi[1], 64);
    ck_assert_uint_eq(q->align[0], 16);
    ck_assert_uint_eq(q->shapes, 3);
    /* next from (16,128): M to 32, K stops before the failed 256 */
    q = region(e, 0, 1);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(q->lo[0], 16);
    ck_assert_uint_eq(q->hi[0], 32);
    ck_assert_uint_eq(q->lo[1], 128);
    ck_assert_uint_eq(q->hi[1], 128);
    /* then from (32,32): M in [32, 64], K in [32, 64] (alignment 32) */
    q = region(e, 0, 2);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(q->lo[0], 32);
    ck_assert_uint_eq(q->hi[0], 64);
    ck_assert_uint_eq(q->lo[1], 32);
    ck_assert_uint_eq(q->hi[1], 64);
    ck_assert_uint_eq(q->align[0], 32);
    ck_assert_uint_eq(q->align[1], 32);
    ck_assert_ptr_null(region(e, 0, 3));
    /* every qualified point lies in some qualified region, no failed point does */
    for (i = 0; i < e->npoints; i++) {
        const qf_enable_point *p = &e->points[i];
        size_t k, in_q = 0;
        for (k = 0; k < e->nregions; k++) {
            const qf_enable_region *r = &e->regions[k];
            if (!r->failed && p->x[0] >= r->lo[0] && p->x[0] <= r->hi[0] && p->x[1] >= r->lo[1] &&
                p->x[1] <= r->hi[1] && p->x[0] % r->align[0] == 0 && p->x[1] % r->align[1] == 0)
                in_q = 1;
        }
        ck_assert_msg(in_q == (p->cls == 'Q'), "point M=%llu K=%llu class %c", (unsigned long long)p->x[0],
                      (unsigned long long)p->x[1], p->cls);
    }
    /* the K = 256 row is one failed region named by its worst verdict */
    for (i = 0; i < e->nregions; i++) {
        const qf_enable_region *r = &e->regions[i];
        if (r->failed && r->lo[1] == 256) {
            ck_assert_uint_eq(r->lo[0], 16);
            ck_assert_uint_eq(r->hi[0], 64);
            ck_assert_int_eq(r->verdict, QF_VERDICT_FAILED);
            ck_assert_str_eq(r->reason, "error 9 ulp > bound 4 ulp");
        }
    }
    ck_assert_uint_ge(nq, 2);
    ck_assert_uint_ge(nf, 2);
    qf_enable_free(&t);
}
END_TEST

START_TEST(test_outputs_roundtrip)
{
    qf_enable_table t;
    char dir[] = "/tmp/qf-regions-XXXXXX", path[256], err[512], cmd[512];
    qf_guard *g;
    qf_guard_shape s;
    qf_guard_decision d;
    char sh1[] = "M=40,K=64", sh0[] = "M=48,K=64", sh2[] = "M=32,K=100", sh3[] = "M=48,K=256",
         sh4[] = "M=64,K=128", sh5[] = "M=128,K=32";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    qf_enable_init(&t);
    fill(&t);
    snprintf(path, sizeof path, "%s/enable.json", dir);
    ck_assert_int_eq(qf_enable_write_json(&t, path, err, sizeof err), QF_OK);
    snprintf(path, sizeof path, "%s/enable.md", dir);
    ck_assert_int_eq(qf_enable_write_markdown(&t, path, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_write_c(&t, dir, "tbl", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_write_c(&t, dir, "9bad", err, sizeof err), QF_EINVAL);
    ck_assert_int_eq(qf_enable_write_c(&t, dir, "a-b", err, sizeof err), QF_EINVAL);
    /* the generated pair compiles as C11 */
    snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Werror -c -I'%s' -I'%s/qualify' '%s/tbl.c' -o '%s/tbl.o'",
             dir, getenv("QF_SOURCE_DIR") ? getenv("QF_SOURCE_DIR") : ".", dir, dir);
    if (getenv("QF_SOURCE_DIR") && system("cc --version >/dev/null 2>&1") == 0)
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
    qf_enable_free(&t);

    snprintf(path, sizeof path, "%s/enable.json", dir);
    ck_assert_msg(qf_guard_open_json(path, &g, err, sizeof err) == 0, "%s", err);
    qf_guard_set_arch(g, "sim:sm_90");
    /* region M in [16, 64] % 16, K = 64: M = 40 lies between swept
     * values but off the alignment class (40 % 16 = 8) */
    ck_assert_int_eq(qf_guard_shape_parse(sh1, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_QUALIFIED);
    /* ... and M = 48 is on it, between the swept 32 and 64: qualified */
    ck_assert_int_eq(qf_guard_shape_parse(sh0, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 1);
    ck_assert_int_eq(d.answer, QF_GUARD_QUALIFIED);
    ck_assert_int_eq(qf_guard_shape_parse(sh2, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(qf_guard_shape_parse(sh3, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_FAILED);
    ck_assert_ptr_nonnull(strstr(d.reason, "FAILED: error 9 ulp"));
    /* the combination that was not swept, inside the swept range */
    ck_assert_int_eq(qf_guard_shape_parse(sh4, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_QUALIFIED);
    /* M = 128 had only UNSUPPORTED cases: outside the swept range */
    ck_assert_int_eq(qf_guard_shape_parse(sh5, &s), 0);
    ck_assert_int_eq(qf_guard_may_run(g, "k", "f32.f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_SWEPT);
    qf_guard_close(g);
    qf_test_rmtree(dir);
}
END_TEST

START_TEST(test_dims_mismatch)
{
    qf_enable_table t;
    qf_result r[2];
    char err[512] = "";
    r[0] = mk("cpu", "k", 1, 1, QF_VERDICT_QUALIFIED, "");
    r[1] = mk("cpu", "k", 2, 2, QF_VERDICT_QUALIFIED, "");
    snprintf(r[1].dims[1].name, sizeof r[1].dims[1].name, "N");
    qf_enable_init(&t);
    ck_assert_int_eq(qf_enable_add(&t, r, 2, NULL, "x.json", err, sizeof err), QF_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "x.json"));
    qf_enable_free(&t);
}
END_TEST

/* Entries whose every case was not run because the kernel claims no dtype
 * tuple for it (a kernel glob over kernels of other dtypes) are one line
 * per kernel in enable.md, not rows; enable.json keeps them. */
START_TEST(test_not_run_folded)
{
    qf_enable_table t;
    qf_result r[5];
    char dir[] = "/tmp/qf-regions-XXXXXX", path[256], err[512] = "", *md;
    json_t *j;
    json_error_t je;
    size_t i;
    r[0] = mk("cpu", "gemm.x.f64", 1, 16, QF_VERDICT_UNSUPPORTED, "");
    r[1] = mk("cpu", "gemm.x.f64", 1, 32, QF_VERDICT_UNSUPPORTED, "");
    r[2] = mk("cpu", "gemm.x.f64", 1, 16, QF_VERDICT_UNSUPPORTED, "");
    snprintf(r[2].dtype, sizeof r[2].dtype, "bf16.bf16.f32.bf16");
    r[3] = mk("cpu", "k", 1, 16, QF_VERDICT_QUALIFIED, "");
    /* UNSUPPORTED for another reason: a row, with the reason */
    r[4] = mk("cpu", "gemm.gpu", 1, 16, QF_VERDICT_UNSUPPORTED, "unsupported: no CUDA device");
    for (i = 0; i < 3; i++) {
        char dt[sizeof r[i].dtype];
        snprintf(dt, sizeof dt, "%s", r[i].dtype);
        snprintf(r[i].reason, sizeof r[i].reason, "unsupported: gemm.x.f64 claims no dtype tuple for %.64s",
                 dt);
        r[i].ev.outcome = r[i].cause = QF_CAUSE_NO_TUPLE; /* the runner's cause (runner.c run_pair) */
    }
    ck_assert_ptr_nonnull(mkdtemp(dir));
    qf_enable_init(&t);
    ck_assert_int_eq(qf_enable_add(&t, r, 5, NULL, "x.json", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_finish(&t), QF_OK);
    ck_assert_uint_eq(t.nentries, 4);
    ck_assert_uint_eq(t.entries[0].no_tuple, 2);
    ck_assert_uint_eq(t.entries[3].no_tuple, 0);
    snprintf(path, sizeof path, "%s/enable.md", dir);
    ck_assert_int_eq(qf_enable_write_markdown(&t, path, err, sizeof err), QF_OK);
    md = qf_test_slurp(path, NULL);
    ck_assert_msg(strstr(md, "\n- gemm.x.f64: 3 pairs not run: no dtype tuple for f32.f32.f32.f32, "
                             "bf16.bf16.f32.bf16 (UNSUPPORTED)\n"),
                  "%s", md);
    ck_assert_msg(!strstr(md, "| gemm.x.f64 |"), "%s", md);
    ck_assert_msg(strstr(md, "| k | gemm |") && strstr(md, "| gemm.gpu | gemm |") &&
                      strstr(md, "nothing with evidence: unsupported: no CUDA device"),
                  "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/enable.json", dir);
    ck_assert_int_eq(qf_enable_write_json(&t, path, err, sizeof err), QF_OK);
    j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "entries")), 4);
    json_decref(j);
    qf_enable_free(&t);
    qf_test_rmtree(dir);
}
END_TEST

/* Cases without an architecture count as "cpu", and land in one entry
 * with the cases that name it (they made one entry per case before). */
START_TEST(test_empty_arch_is_cpu)
{
    qf_enable_table t;
    qf_result r[3];
    char err[512] = "";
    r[0] = mk("", "k", 1, 1, QF_VERDICT_QUALIFIED, "");
    r[1] = mk("", "k", 2, 1, QF_VERDICT_QUALIFIED, "");
    r[2] = mk("cpu", "k", 4, 1, QF_VERDICT_QUALIFIED, "");
    qf_enable_init(&t);
    ck_assert_int_eq(qf_enable_add(&t, r, 3, NULL, "x.json", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_finish(&t), QF_OK);
    ck_assert_uint_eq(t.nentries, 1);
    ck_assert_str_eq(t.entries[0].arch, "cpu");
    ck_assert_uint_eq(t.entries[0].n_qualified, 3);
    qf_enable_free(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enable/regions");
    TCase *tc = tcase_create("regions");
    tcase_add_test(tc, test_region_rule);
    tcase_add_test(tc, test_outputs_roundtrip);
    tcase_add_test(tc, test_dims_mismatch);
    tcase_add_test(tc, test_empty_arch_is_cpu);
    tcase_add_test(tc, test_not_run_folded);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
