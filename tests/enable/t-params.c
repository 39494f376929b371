/* t-params.c: the op parameters are part of an entry's identity
 * (docs/enable.md "The key"): one failing parameter combination never
 * blanks another, the key spells the defaults out, and the guard answers
 * per parameters through enable.json and through the generated C pair
 * (compiled strictly, loaded and asked). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_enable.h"
#include "qf_guard.h"
#include "qf_suite.h"
#include "qf_test_seal.h"
#include "qf_test.h"

static qf_result mk(const char *op, const char *kernel, unsigned rows, qf_verdict v, const char *why)
{
    qf_result r;
    qf_result_init(&r);
    snprintf(r.arch, sizeof r.arch, "sim:sm_90");
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
    snprintf(r.kernel_kind, sizeof r.kernel_kind, "optimized");
    snprintf(r.op, sizeof r.op, "%s", op);
    snprintf(r.dtype, sizeof r.dtype, "f32.f32.f32");
    snprintf(r.case_id, sizeof r.case_id, "%s/rows=%u", op, rows);
    snprintf(r.reason, sizeof r.reason, "%s", why);
    r.ndims = 1;
    snprintf(r.dims[0].name, sizeof r.dims[0].name, "rows");
    r.dims[0].value = rows;
    r.verdict = v;
    qf_test_seal(&r);
    return r;
}

static void param(qf_result *r, const char *k, const char *v)
{
    snprintf(r->params[r->nparams].key, sizeof r->params[0].key, "%s", k);
    snprintf(r->params[r->nparams].value, sizeof r->params[0].value, "%s", v);
    r->nparams++;
}

static const qf_enable_entry *entry(const qf_enable_table *t, const char *kernel, const char *params)
{
    size_t i;
    for (i = 0; i < t->nentries; i++)
        if (!strcmp(t->entries[i].kernel, kernel) && !strcmp(t->entries[i].params, params))
            return &t->entries[i];
    return NULL;
}

static size_t count(const qf_enable_entry *e, int failed)
{
    size_t i, n = 0;
    for (i = 0; i < e->nregions; i++)
        n += e->regions[i].failed == failed;
    return n;
}

/* act: relu MISTRUSTED, gelu QUALIFIED at rows 16 and 32.  gemm ("g"):
 * defaults QUALIFIED at rows 16, 32 (once left out, once spelled out
 * as the journal writes them); alpha = 2 FAILED at rows 16, 32. */
static void fill(qf_enable_table *t)
{
    qf_result r[10];
    size_t n = 0;
    unsigned rows;
    char err[256];
    for (rows = 16; rows <= 32; rows += 16) {
        r[n] = mk("activation", "act", rows, QF_VERDICT_MISTRUSTED, "reference mostly zeros");
        param(&r[n++], "fn", "relu");
        r[n] = mk("activation", "act", rows, QF_VERDICT_QUALIFIED, "");
        param(&r[n++], "fn", "gelu");
        r[n] = mk("gemm", "g", rows, QF_VERDICT_FAILED, "error 40 ulp > bound 4 ulp");
        param(&r[n++], "alpha", "2");
    }
    r[n++] = mk("gemm", "g", 16, QF_VERDICT_QUALIFIED, "");
    r[n] = mk("gemm", "g", 32, QF_VERDICT_QUALIFIED, "");
    param(&r[n], "trans_a", "false");
    param(&r[n++], "alpha", "1.0000000000000000");
    ck_assert_int_eq(qf_enable_add(t, r, n, NULL, "r.json", err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_finish(t), QF_OK);
}

START_TEST(test_key)
{
    qf_result r = mk("gemm", "g", 1, QF_VERDICT_QUALIFIED, "");
    char k[QF_ENABLE_PARAMS_MAX], d[QF_ENABLE_PARAMS_MAX];
    qf_enable_param_key(&r, k, sizeof k, d, sizeof d);
    ck_assert_str_eq(k, "trans_a=false,trans_b=false,alpha=1,beta=0,group_size=128");
    ck_assert_str_eq(d, k);
    /* the op's order whatever the record's; one spelling per value */
    param(&r, "beta", "0.5");
    param(&r, "trans_b", "true");
    qf_enable_param_key(&r, k, sizeof k, NULL, 0);
    ck_assert_str_eq(k, "trans_a=false,trans_b=true,alpha=1,beta=0.5,group_size=128");
    r = mk("layernorm", "ln", 1, QF_VERDICT_QUALIFIED, "");
    param(&r, "eps", "1.0000000000000001e-05");
    qf_enable_param_key(&r, k, sizeof k, NULL, 0);
    ck_assert_str_eq(k, "eps=1e-05,weight=true,bias=true");
    /* a parameter without a default has no default to spell */
    r = mk("activation", "act", 1, QF_VERDICT_QUALIFIED, "");
    param(&r, "fn", "relu");
    qf_enable_param_key(&r, k, sizeof k, d, sizeof d);
    ck_assert_str_eq(k, "fn=relu");
    ck_assert_str_eq(d, "");
    /* an op this version does not know: the record's parameters as they are */
    r = mk("newop", "x", 1, QF_VERDICT_QUALIFIED, "");
    param(&r, "z", "3.50");
    qf_enable_param_key(&r, k, sizeof k, NULL, 0);
    ck_assert_str_eq(k, "z=3.5");
}
END_TEST


START_TEST(test_entries)
{
    qf_enable_table t;
    const qf_enable_entry *relu, *gelu, *plain, *alpha2;
    qf_enable_init(&t);
    fill(&t);
    ck_assert_uint_eq(t.nentries, 4);
    relu = entry(&t, "act", "fn=relu");
    gelu = entry(&t, "act", "fn=gelu");
    plain = entry(&t, "g", "trans_a=false,trans_b=false,alpha=1,beta=0,group_size=128");
    alpha2 = entry(&t, "g", "trans_a=false,trans_b=false,alpha=2,beta=0,group_size=128");
    ck_assert_ptr_nonnull(relu);
    ck_assert_ptr_nonnull(gelu);
    ck_assert_ptr_nonnull(plain);
    ck_assert_ptr_nonnull(alpha2);
    /* the MISTRUSTED relu blanks relu only */
    ck_assert_uint_eq(count(gelu, 0), 1);
    ck_assert_uint_eq(count(gelu, 1), 0);
    ck_assert_uint_eq(count(relu, 0), 0);
    ck_assert_uint_eq(count(relu, 1), 1);
    /* the FAILED alpha = 2 stays out of the default region, which holds
     * both default cases (left out and spelled out) */
    ck_assert_uint_eq(plain->n_qualified, 2);
    ck_assert_uint_eq(count(plain, 1), 0);
    ck_assert_uint_eq(count(alpha2, 0), 0);
    ck_assert_uint_eq(alpha2->n_failed, 2);
    ck_assert_str_eq(plain->param_defaults, plain->params);
    qf_enable_free(&t);
}
END_TEST

/* The same questions to a guard, whichever way the table reached it. */
static void ask(qf_guard *g)
{
    qf_guard_shape s;
    qf_guard_decision d;
    char sh[] = "rows=32";
    ck_assert_int_eq(qf_guard_shape_parse(sh, &s), 0);
    qf_guard_set_arch(g, "sim:sm_90");
    ck_assert_int_eq(qf_guard_may_run_params(g, "act", "f32.f32.f32", "fn=gelu", &s, &d), 1);
    ck_assert_int_eq(d.answer, QF_GUARD_QUALIFIED);
    ck_assert_int_eq(qf_guard_may_run_params(g, "act", "f32.f32.f32", "fn=relu", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_FAILED);
    ck_assert_ptr_nonnull(strstr(d.reason, "MISTRUSTED"));
    /* fn has no default: without it nothing matches */
    ck_assert_int_eq(qf_guard_may_run(g, "act", "f32.f32.f32", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_SWEPT);
    /* gemm: defaults, by NULL, by "", or spelled another way */
    ck_assert_int_eq(qf_guard_may_run(g, "g", "f32.f32.f32", &s, &d), 1);
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "", &s, &d), 1);
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "alpha=1.0,trans_a=0", &s, &d), 1);
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "alpha=2", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_FAILED);
    /* not swept: another value, a parameter gemm lacks, bad text */
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "beta=1", &s, &d), 0);
    ck_assert_int_eq(d.answer, QF_GUARD_NOT_SWEPT);
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "gamma=1", &s, &d), 0);
    ck_assert_ptr_nonnull(strstr(d.reason, "no parameter gamma"));
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "alpha", &s, &d), 0);
    ck_assert_ptr_nonnull(strstr(d.reason, "NAME=VALUE"));
    ck_assert_int_eq(qf_guard_may_run_params(g, "g", "f32.f32.f32", "alpha=1,alpha=2", &s, &d), 0);
    {
        static const char *const list[] = {"act"};
        ck_assert_str_eq(qf_guard_select_params(g, list, 1, "ref", "f32.f32.f32", "fn=relu", &s, &d), "ref");
        ck_assert_str_eq(qf_guard_select_params(g, list, 1, "ref", "f32.f32.f32", "fn=gelu", &s, &d), "act");
    }
}

START_TEST(test_roundtrip)
{
    qf_enable_table t;
    char dir[] = "/tmp/qf-params-XXXXXX", path[256], err[512], cmd[1024];
    const char *src = getenv("QF_SOURCE_DIR");
    qf_guard *g;
    void *so;
    const qf_guard_table *tbl;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    qf_enable_init(&t);
    fill(&t);
    snprintf(path, sizeof path, "%s/enable.json", dir);
    ck_assert_int_eq(qf_enable_write_json(&t, path, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_enable_write_c(&t, dir, "ptbl", err, sizeof err), QF_OK);
    snprintf(path, sizeof path, "%s/enable.md", dir);
    ck_assert_int_eq(qf_enable_write_markdown(&t, path, err, sizeof err), QF_OK);
    qf_enable_free(&t);
    {
        /* enable.md shows the parameters per row */
        char buf[8192];
        FILE *f = fopen(path, "r");
        size_t n;
        ck_assert_ptr_nonnull(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        ck_assert_ptr_nonnull(strstr(buf, "| act | activation | f32.f32.f32 | fn=relu | none |"));
        ck_assert_ptr_nonnull(strstr(buf, "| g | gemm | f32.f32.f32 | trans_a=false,trans_b=false,alpha=2,"));
    }
    snprintf(path, sizeof path, "%s/enable.json", dir);
    ck_assert_msg(qf_guard_open_json(path, &g, err, sizeof err) == 0, "%s", err);
    ask(g);
    qf_guard_close(g);

    /* The C pair, compiled as a user would (strict C11) into a shared
     * object, loaded here and asked the same. */
    if (!src || system("cc --version >/dev/null 2>&1")) {
        fprintf(stderr, "t-params: no compiler or QF_SOURCE_DIR: the C pair was not compiled\n");
    } else {
        snprintf(cmd, sizeof cmd,
                 "cc -std=c11 -Wall -Wextra -Werror -pedantic -fPIC -shared -I'%s' -I'%s/qualify' "
                 "'%s/ptbl.c' -o '%s/ptbl.so'",
                 dir, src, dir, dir);
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
        snprintf(path, sizeof path, "%s/ptbl.so", dir);
        so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        ck_assert_msg(so != NULL, "%s", dlerror());
        tbl = (const qf_guard_table *)dlsym(so, "ptbl");
        ck_assert_ptr_nonnull(tbl);
        ck_assert_uint_eq(tbl->nentries, 4);
        ck_assert_int_eq(qf_guard_open_table(tbl, &g), 0);
        ask(g);
        qf_guard_close(g);
        dlclose(so);
    }
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enable/params");
    TCase *tc = tcase_create("params");
    unsetenv("QF_GUARD_FORCE");
    tcase_add_test(tc, test_key);
    tcase_add_test(tc, test_entries);
    tcase_add_test(tc, test_roundtrip);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
