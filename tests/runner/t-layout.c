/* t-layout.c: operand layouts (docs/suites.md#layouts, docs/runner.md
 * "Operand layouts", docs/kernels.md "Strides and operand layouts"):
 *   - the stride-aware gemm.cpu.naive.f32 QUALIFIES on every layout
 *     (padded ld, column-major, both, padded batch stride, with
 *     transposes, beta and a batch), and its results are keyed by layout;
 *   - a dense-only kernel (gemm.cpu.blocked.f32) is UNSUPPORTED on every
 *     non-dense layout with the reason, QUALIFIED on dense;
 *   - a kernel declaring some layouts is UNSUPPORTED on the others;
 *   - kernels that mishandle strides are FAILED: one that reads a and b
 *     as dense (gemm.bad.ignores_ld: the NaN padding), one that writes
 *     the padding of each row (gemm.bad.pad_store), one that writes
 *     between batch entries (a test kernel), one that ignores the row
 *     pitch of a row op (a test softmax);
 *   - a stride-aware row kernel (a test softmax honouring the row pitch)
 *     QUALIFIES on ld+P;
 *   - the suite's spelling of layouts and its errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_runner_test.h"
#include "qf_suite.h"
#include "qf_test.h"

static const qf_kernel *naive;

/* Test kernels: a softmax that honours (or ignores) the row pitch, a GEMM
 * that runs the naive one and then writes between batch entries, and a
 * GEMM declaring ld only. */
enum { SM_STRIDED, SM_IGNORES, GEMM_BATCH_GAP, GEMM_LD_ONLY };

static qf_status run_softmax(void *ctx, const qf_kernel_call *call)
{
    const qf_tensor *X = &call->in[0];
    qf_tensor *Y = &call->out[0];
    size_t rows = call->op->u.softmax.rows, cols = call->op->u.softmax.cols, i, j;
    int ignore = (int)(intptr_t)ctx == SM_IGNORES;
    int64_t xs = ignore ? (int64_t)cols : X->stride[0], ys = ignore ? (int64_t)cols : Y->stride[0];
    for (i = 0; i < rows; i++) {
        const float *x = (const float *)X->data + (int64_t)i * xs;
        float *y = (float *)Y->data + (int64_t)i * ys;
        double m = -INFINITY, s = 0;
        for (j = 0; j < cols; j++)
            m = x[j] > m ? x[j] : m;
        for (j = 0; j < cols; j++)
            s += exp((double)x[j] - m);
        for (j = 0; j < cols; j++)
            y[j] = (float)(exp((double)x[j] - m) / s);
    }
    return QF_OK;
}

static qf_status run_gemm(void *ctx, const qf_kernel_call *call)
{
    qf_status s = naive->run(naive->user, call);
    const qf_tensor *D = &call->out[0];
    if (s == QF_OK && (int)(intptr_t)ctx == GEMM_BATCH_GAP && D->ndim == 3)
        /* the last element before batch entry 1: inside the gap */
        ((float *)D->data)[D->stride[0] - 1] = 0.0f;
    return s;
}

static qf_registry *test_registry(void)
{
    static qf_dtype_tuple t[1];
    static const struct {
        const char *name;
        qf_op op;
        uint32_t layouts;
    } ks[] = {{"softmax.test.strided", QF_OP_SOFTMAX, QF_LAYOUT_LD},
              {"softmax.test.ignores_ld", QF_OP_SOFTMAX, QF_LAYOUT_LD},
              {"gemm.test.batch_gap", QF_OP_GEMM, QF_LAYOUT_ALL},
              {"gemm.test.ld_only", QF_OP_GEMM, QF_LAYOUT_LD}};
    qf_registry *r = NULL;
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    naive = qf_registry_find(r, "gemm.cpu.naive.f32");
    ck_assert_ptr_nonnull(naive);
    ck_assert_uint_eq(naive->layouts, QF_LAYOUT_ALL);
    t[0] = naive->dtypes[0]; /* float32, the naive claim: more than enough for float64 softmax */
    for (i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        qf_kernel k;
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = sizeof k;
        k.name = ks[i].name;
        k.op = ks[i].op;
        k.kind = QF_KERNEL_REFERENCE;
        k.description = "test kernel";
        k.backend = "cpu";
        k.archs = "cpu";
        k.dtypes = t;
        k.n_dtypes = 1;
        k.run = ks[i].op == QF_OP_GEMM ? run_gemm : run_softmax;
        k.supports = ks[i].op == QF_OP_GEMM ? naive->supports : NULL;
        k.user = (void *)(intptr_t)i;
        k.layouts = ks[i].layouts;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    return r;
}

/* Every result of kernel whose case id contains tag. */
static size_t each(const qf_runner_summary *s, const char *kernel, const char *tag, const qf_result **out,
                   size_t max)
{
    size_t i, n = 0;
    for (i = 0; i < s->n; i++)
        if (!strcmp(s->results[i].kernel, kernel) && strstr(s->results[i].case_id, tag) && n < max)
            out[n++] = &s->results[i];
    ck_assert_msg(n > 0, "no result of %s with '%s'", kernel, tag);
    return n;
}

static const char *param(const qf_result *r, const char *key)
{
    size_t i;
    for (i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].key, key))
            return r->params[i].value;
    return NULL;
}

START_TEST(gemm_layouts)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    const qf_result *rs[64];
    size_t i, n, dense = 0, strided = 0;
    qf_test_run_yaml("suite: layouts\n"
                     "refute: false\n" /* the pairs counted below are the layouts' */
                     "op: gemm\n"
                     "kernels: [gemm.cpu.naive.f32, gemm.cpu.blocked.f32, gemm.test.*]\n"
                     "dtypes: [float32]\n"
                     "shapes: {M: 5, N: 6, K: 7, batch: [1, 3]}\n"
                     "params: {trans_a: [false, true], beta: [0, 0.5]}\n"
                     "layout: [dense, \"ld+3\", col, \"col,ld+5\", \"batch+64\", \"ld+2,batch+7\"]\n",
                     "layouts.yaml", reg, &sum);
    ck_assert_uint_eq(sum.n, 2 * 4 * 6 * 4);
    for (i = 0; i < sum.n; i++) {
        const qf_result *r = &sum.results[i];
        const char *lay = param(r, "layout");
        int is_dense = !strstr(r->case_id, "layout=");
        ck_assert_msg(is_dense == (lay == NULL), "%s: layout keyed as %s", r->case_id, lay ? lay : "(none)");
        if (!strcmp(r->kernel, "gemm.cpu.naive.f32")) {
            ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s: %s %s", r->case_id,
                          qf_verdict_name(r->verdict), r->reason);
            ck_assert_msg(r->det_checked && r->det_equal, "%s: runs differ", r->case_id);
            dense += is_dense;
            strided += !is_dense;
        }
    }
    ck_assert_uint_eq(dense, 8);
    ck_assert_uint_eq(strided, 40);
    /* The dense-only kernel: UNSUPPORTED on every other layout, naming it. */
    n = each(&sum, "gemm.cpu.blocked.f32", "layout=", rs, 64);
    ck_assert_uint_eq(n, 40);
    for (i = 0; i < n; i++)
        ck_assert_msg(rs[i]->verdict == QF_VERDICT_UNSUPPORTED &&
                          strstr(rs[i]->reason, "gemm.cpu.blocked.f32 takes dense row-major operands only (layout "),
                      "%s: %s %s", rs[i]->case_id, qf_verdict_name(rs[i]->verdict), rs[i]->reason);
    n = each(&sum, "gemm.cpu.blocked.f32", "/normal/", rs, 64);
    for (i = 0; i < n; i++)
        if (!strstr(rs[i]->case_id, "layout="))
            ck_assert_msg(rs[i]->verdict == QF_VERDICT_QUALIFIED, "%s: %s", rs[i]->case_id, rs[i]->reason);
    /* A kernel declaring ld only: col and batch are not its. */
    n = each(&sum, "gemm.test.ld_only", "layout=col,ld+5/", rs, 64);
    for (i = 0; i < n; i++)
        ck_assert_msg(rs[i]->verdict == QF_VERDICT_UNSUPPORTED &&
                          strstr(rs[i]->reason, "does not take layout col,ld+5 (it declares ld)"),
                      "%s", rs[i]->reason);
    n = each(&sum, "gemm.test.ld_only", "layout=ld+3/", rs, 64);
    for (i = 0; i < n; i++)
        ck_assert_msg(rs[i]->verdict == QF_VERDICT_QUALIFIED, "%s", rs[i]->reason);
    /* Writing between batch entries: FAILED where there is a gap, naming it. */
    n = each(&sum, "gemm.test.batch_gap", "batch=3/f32.f32.f32.f32/trans_a=false,beta=0,layout=batch+64/", rs, 64);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_FAILED &&
                      strstr(rs[0]->reason, "padding: output d written into its padding in the gap after batch "
                                            "entry 0 (element 63 of 64; batch stride 94)"),
                  "%s %s", qf_verdict_name(rs[0]->verdict), rs[0]->reason);
    n = each(&sum, "gemm.test.batch_gap", "batch=3/f32.f32.f32.f32/trans_a=false,beta=0,layout=ld+2,batch+7/", rs, 64);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_FAILED && strstr(rs[0]->reason, "in the gap after batch entry 0"),
                  "%s", rs[0]->reason);
    /* Dense batches have no gap: the write lands on an element of entry 0,
     * which the naive result then differs from (or the poison check). */
    n = each(&sum, "gemm.test.batch_gap", "batch=3/f32.f32.f32.f32/trans_a=false,beta=0/normal", rs, 64);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_FAILED, "%s", rs[0]->reason);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
}
END_TEST

START_TEST(bad_kernels)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    const qf_result *rs[16];
    size_t i, n;
    qf_test_run_yaml("suite: layouts-bad\n"
                     "refute: false\n"
                     "op: gemm\n"
                     "kernels: [gemm.bad.ignores_ld, gemm.bad.pad_store]\n"
                     "dtypes: [float32]\n"
                     "shapes: {M: 4, N: 6, K: 8}\n"
                     "layout: [dense, \"ld+3\", \"col,ld+2\"]\n",
                     "layouts-bad.yaml", reg, &sum);
    ck_assert_uint_eq(sum.n, 6);
    n = each(&sum, "gemm.bad.ignores_ld", "layout=", rs, 16);
    for (i = 0; i < n; i++)
        ck_assert_msg(rs[i]->verdict == QF_VERDICT_FAILED &&
                          strstr(rs[i]->reason, "NaN or Inf where the reference is finite"),
                      "%s: %s %s", rs[i]->case_id, qf_verdict_name(rs[i]->verdict), rs[i]->reason);
    n = each(&sum, "gemm.bad.pad_store", "layout=ld+3/", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_FAILED &&
                      strstr(rs[0]->reason, "padding: output d written into its padding at row 0, col 6 (ld 9, 6 "
                                            "columns); 12 padding element(s) written (run 1)"),
                  "%s", rs[0]->reason);
    /* Column-major d has no row padding to store over: its stores are right. */
    n = each(&sum, "gemm.bad.pad_store", "layout=col,ld+2/", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_QUALIFIED, "%s", rs[0]->reason);
    for (i = 0; i < sum.n; i++)
        if (!strstr(sum.results[i].case_id, "layout="))
            ck_assert_msg(sum.results[i].verdict == QF_VERDICT_QUALIFIED, "%s dense: %s", sum.results[i].kernel,
                          sum.results[i].reason);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
}
END_TEST

START_TEST(row_pitch)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    const qf_result *rs[16];
    size_t n;
    char err[512];
    qf_suite *s = NULL;
    static const char bad[] = "op: softmax\ndtypes: [float32]\nshapes: {rows: 2, cols: 3}\nlayout: [col]\n";
    qf_test_run_yaml("suite: rows\n"
                     "op: softmax\n"
                     "kernels: [softmax.test.*, softmax.cpu.f32]\n"
                     "dtypes: [float32]\n"
                     "shapes: {rows: 5, cols: 33}\n"
                     "layout: [dense, \"ld+7\"]\n",
                     "rows.yaml", reg, &sum);
    n = each(&sum, "softmax.test.strided", "layout=ld+7", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_QUALIFIED, "%s", rs[0]->reason);
    n = each(&sum, "softmax.test.ignores_ld", "layout=ld+7", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_FAILED, "%s %s", qf_verdict_name(rs[0]->verdict), rs[0]->reason);
    n = each(&sum, "softmax.test.ignores_ld", "/normal/", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_QUALIFIED, "%s", rs[0]->reason); /* dense: the first is dense */
    n = each(&sum, "softmax.cpu.f32", "layout=ld+7", rs, 16);
    ck_assert_msg(rs[0]->verdict == QF_VERDICT_UNSUPPORTED &&
                      strstr(rs[0]->reason, "takes dense row-major operands only (layout ld+7)"),
                  "%s", rs[0]->reason);
    (void)n;
    qf_runner_summary_free(&sum);
    /* The row ops lay out a row pitch only. */
    ck_assert_int_eq(qf_suite_load_mem(bad, strlen(bad), "bad.yaml", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "field 'layout[0]': op softmax lays out its operands as ld; layout 'col' is not "
                              "driven for it"),
                  "%s", err);
    qf_registry_free(reg);
}
END_TEST

START_TEST(suite_spelling)
{
    static const struct {
        const char *layout, *err;
    } cases[] = {
        {"[\"ld+5,col\"]", NULL},
        {"[\"ld+0\"]", "unknown layout part 'ld+0'"},
        {"[\"col,col\"]", "names col twice"},
        {"[\"col,\"]", "a trailing ','"},
        {"[\"ld+3\", \"ld+3\"]", "layout ld+3 appears twice"},
        {"[\"ld+5,col\", \"col,ld+5\"]", "layout col,ld+5 appears twice"},
        {"[row]", "unknown layout part 'row'"},
        {"{ld: 3}", "expected a layout or a list of them"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char yaml[512], err[512];
        qf_suite *s = NULL;
        qf_status st;
        snprintf(yaml, sizeof yaml, "op: gemm\ndtypes: [float32]\nshapes: {M: 2, N: 2, K: 2}\nlayout: %s\n",
                 cases[i].layout);
        st = qf_suite_load_mem(yaml, strlen(yaml), "l.yaml", &s, err, sizeof err);
        if (!cases[i].err) {
            qf_suite_cases cs;
            ck_assert_msg(st == QF_OK, "%s: %s", cases[i].layout, err);
            ck_assert_int_eq(qf_suite_expand(s, &cs, err, sizeof err), QF_OK);
            ck_assert_str_eq(cs.cases[0].id, "gemm/M=2,N=2,K=2/f32.f32.f32.f32/layout=col,ld+5/normal/seed=0");
            ck_assert_uint_eq(cs.cases[0].layout->needs, QF_LAYOUT_COL | QF_LAYOUT_LD);
            ck_assert_uint_eq(cs.cases[0].layout->ld_pad, 5);
            qf_suite_cases_free(&cs);
            qf_suite_free(s);
        } else {
            ck_assert_msg(st == QF_EPARSE && strstr(err, cases[i].err), "%s: %s", cases[i].layout, err);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/layout");
    TCase *tc = tcase_create("layout");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, suite_spelling);
    tcase_add_test(tc, gemm_layouts);
    tcase_add_test(tc, bad_kernels);
    tcase_add_test(tc, row_pitch);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
