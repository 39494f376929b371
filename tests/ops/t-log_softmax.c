/* t-log_softmax.c: log_softmax is judged against its derived bound
 * (docs/bounds.md "Log-softmax") through the runner, with no max_ulp in
 * any claim:
 *   - the built-in kernels softmax.cpu.f32 and softmax.cpu.online.f32
 *     QUALIFY with the bound applied (bound kind "log_softmax", every
 *     checked element bounded), on normal rows, outliers and logits
 *     around 1000, rows of 7 to 1000;
 *   - a kernel whose results are the exact ones moved by half their bound
 *     QUALIFIES, and one moved by the bound plus 4 ulps at one element is
 *     FAILED there (the bound is what is checked, to the ulp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_bound.h"
#include "qf_kernel.h"
#include "qf_ref.h"
#include "qf_result.h"
#include "qf_runner_test.h"
#include "qf_test.h"

static double f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits(double d)
{
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Element (1, 3) of the output: the exact log-softmax moved up by a
 * fraction of its bound (ctx 1: half of it; ctx 2: all of it plus 4 ulps
 * of float32), the others the exact values rounded once. */
static qf_status run_moved(void *ctx, const qf_kernel_call *call)
{
    int beyond = (int)(intptr_t)ctx == 2;
    const qf_op_softmax *o = &call->op->u.softmax;
    const uint32_t *x = call->in[0].data;
    uint32_t *y = call->out[0].data;
    size_t i, R = o->rows, C = o->cols;
    double *xd = malloc((R * C + 1) * sizeof *xd), *b = malloc((C + 1) * sizeof *b);
    qf_ref_out ref;
    qf_status s;
    if (!o->log || !xd || !b || qf_ref_out_alloc(&ref, R * C) != QF_OK)
        return free(xd), free(b), QF_EUNSUPPORTED;
    for (i = 0; i < R * C; i++)
        xd[i] = f32(x[i]);
    s = qf_ref_log_softmax(NULL, xd, R, C, o->scale, &ref);
    if (s == QF_OK && R > 1 && C > 3)
        s = qf_bound_log_softmax(&call->dtype->arith, qf_format_get(QF_FLOAT32), C, xd + C, o->scale,
                                 ref.value + C, b);
    for (i = 0; s == QF_OK && i < R * C; i++) {
        double v = ref.value[i];
        if (i == C + 3) {
            float f = (float)(v + (beyond ? b[3] : 0.5 * b[3]));
            v = beyond ? (double)nextafterf(f, INFINITY) : f;
            if (beyond)
                v += 3 * (nextafterf((float)v, INFINITY) - (float)v);
        }
        y[i] = bits(v);
    }
    qf_ref_out_free(&ref);
    free(xd), free(b);
    return s;
}

static void add_moved(qf_registry *r, const char *name, int how)
{
    static qf_dtype_tuple t[1];
    qf_kernel k;
    t[0].name = "f32";
    t[0].in[0] = QF_FLOAT32;
    t[0].out[0] = QF_FLOAT32;
    t[0].arith = qf_arith_claim_default();
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = name;
    k.op = QF_OP_SOFTMAX;
    k.kind = QF_KERNEL_REFERENCE;
    k.backend = k.archs = "cpu";
    k.dtypes = t;
    k.n_dtypes = 1;
    k.run = run_moved;
    k.user = (void *)(intptr_t)how;
    ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
}

START_TEST(builtins_qualify_with_the_bound)
{
    static const char yaml[] = "suite: lsm\n"
                               "groups:\n"
                               "  - op: log_softmax\n"
                               "    kernels: [softmax.cpu.f32, softmax.cpu.online.f32]\n"
                               "    dtypes: [float32]\n"
                               "    shapes: {rows: [1, 4], cols: [7, 64, 1000]}\n"
                               "    inputs: [normal, {name: outliers, fraction: 0.01, scale: 100},\n"
                               "             {name: normal, mean: 1000, std: 1}]\n";
    qf_registry *r = NULL;
    qf_runner_summary sum;
    size_t i;
    double util[2] = {0, 0};
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    qf_test_run_yaml(yaml, "lsm.yaml", r, &sum);
    ck_assert_uint_eq(sum.n, 36);
    for (i = 0; i < sum.n; i++) {
        const qf_result *x = &sum.results[i];
        ck_assert_msg(
            x->verdict == QF_VERDICT_QUALIFIED && !strcmp(x->bound.kind, "log_softmax") && x->has_metrics &&
                x->metrics.n_bound > 0 && x->metrics.n_bound == x->metrics.n_checked &&
                x->metrics.n_violations == 0 && x->metrics.max_util <= 1,
            "%s %s: %s (%s), bound '%s', %zu of %zu bounded", x->case_id, x->kernel,
            qf_verdict_name(x->verdict), x->reason, x->bound.kind, x->metrics.n_bound, x->metrics.n_checked);
        if (x->metrics.max_util > util[strstr(x->kernel, "online") != NULL])
            util[strstr(x->kernel, "online") != NULL] = x->metrics.max_util;
    }
    fprintf(stderr, "  log_softmax max utilization: softmax.cpu.f32 %.3f, softmax.cpu.online.f32 %.3f\n",
            util[0], util[1]);
    qf_runner_summary_free(&sum);
    qf_registry_free(r);
}
END_TEST

START_TEST(moved_by_the_bound)
{
    static const char yaml[] = "suite: moved\n"
                               "groups:\n"
                               "  - op: log_softmax\n"
                               "    kernels: ['softmax.test.moved.*']\n"
                               "    dtypes: [float32]\n"
                               "    shapes: {rows: [3], cols: [64]}\n";
    qf_registry *r = NULL;
    qf_runner_summary sum;
    const qf_result *in, *out;
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    add_moved(r, "softmax.test.moved.half", 1);
    add_moved(r, "softmax.test.moved.beyond", 2);
    qf_test_run_yaml(yaml, "moved.yaml", r, &sum);
    ck_assert_uint_eq(sum.n, 2);
    in = !strcmp(sum.results[0].kernel, "softmax.test.moved.half") ? &sum.results[0] : &sum.results[1];
    out = in == &sum.results[0] ? &sum.results[1] : &sum.results[0];
    ck_assert_msg(in->verdict == QF_VERDICT_QUALIFIED && !strcmp(in->bound.kind, "log_softmax") &&
                      in->metrics.max_util >= 0.45 && in->metrics.max_util <= 0.55,
                  "half: %s (%s), utilization %g", qf_verdict_name(in->verdict), in->reason,
                  in->metrics.max_util);
    ck_assert_msg(out->verdict == QF_VERDICT_FAILED && strstr(out->reason, "element (1, 3)") &&
                      strstr(out->reason, "outside the bound derived from the claim") &&
                      out->metrics.n_violations == 1,
                  "beyond: %s (%s)", qf_verdict_name(out->verdict), out->reason);
    for (i = 0; i < sum.n; i++)
        ck_assert_uint_eq(sum.results[i].metrics.n_bound, 192);
    qf_runner_summary_free(&sum);
    qf_registry_free(r);
}
END_TEST

int main(void)
{
    return qf_test_main("ops/log_softmax", "log_softmax", 300, NULL, NULL,
                        QF_TESTS(builtins_qualify_with_the_bound, moved_by_the_bound));
}
