/* t-gemm_quant.c: the quantized-operand GEMMs of kernels/cpu/gemm_quant.c
 * through the runner (issue 5).
 *
 * good: every tuple family of gemm.cpu.fp8_channel, mxfp8, mxfp4, nvfp4,
 *       int8 and w4a16 over 20 seeds of small shapes (M = 17, N in {1, 17},
 *       K in {1, 300}: a single element, and several blocks with a tail --
 *       for fp8_channel more than one promotion of 128), transposes, a
 *       batch, group sizes 32 / 64 / 128: every case must be
 *       QUALIFIED (the count of others, the false failures, is printed and
 *       must be 0; measured: 0 of 1360).
 * bad:  a wrapper per kernel registered by this test, with one planted
 *       defect, must be FAILED for the bound somewhere in its region:
 *         mxfp8 / mxfp4  a's last e8m0 scale one exponent up;
 *         nvfp4          b's float32 global scale ignored;
 *         fp8_channel    every row of a takes row 0's scale;
 *         w4a16          b's last bfloat16 group scale one exponent up;
 *         int8           an int32 accumulator that wraps and no K limit,
 *                        claiming saturation: QUALIFIED at small K,
 *                        FAILED at K = 140000 with every product 128 *
 *                        128 (the exact sum is past 2^31), where
 *                        gemm.cpu.int8 says UNSUPPORTED; the same kernel
 *                        claiming wrap is QUALIFIED there.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_runner_test.h"
#include "qf_test.h"

typedef enum defect { D_SCALE_A_LAST_UP, D_NO_GLOBAL_B, D_ROW0_SCALE_A, D_SCALE_B_LAST_UP } defect;

typedef struct wrap {
    const char *name, *builtin;
    defect d;
    const qf_kernel *k; /* the built-in kernel, found at registration */
} wrap;

static wrap wraps[] = {
    {"gemm.test.mxfp8.scale_up", "gemm.cpu.mxfp8", D_SCALE_A_LAST_UP, NULL},
    {"gemm.test.mxfp4.scale_up", "gemm.cpu.mxfp4", D_SCALE_A_LAST_UP, NULL},
    {"gemm.test.nvfp4.no_global", "gemm.cpu.nvfp4", D_NO_GLOBAL_B, NULL},
    {"gemm.test.fp8_channel.row0", "gemm.cpu.fp8_channel", D_ROW0_SCALE_A, NULL},
    {"gemm.test.w4a16.scale_up", "gemm.cpu.w4a16", D_SCALE_B_LAST_UP, NULL},
};

static size_t scale_bytes(const qf_tensor *t)
{
    return t->scale.count * (size_t)(qf_format_get(t->scale.format)->storage_bits / 8);
}

/* Call the built-in kernel on a copy of the inputs with the defect planted
 * in the copied scales. */
static qf_status run_wrap(void *ctx, const qf_kernel_call *call)
{
    const wrap *w = ctx;
    qf_kernel_call c2 = *call;
    qf_tensor in[QF_KERNEL_MAX_IN];
    int slot = w->d == D_SCALE_A_LAST_UP || w->d == D_ROW0_SCALE_A ? 0 : 1;
    unsigned char *sc;
    size_t nb, i;
    qf_status s;
    memcpy(in, call->in, sizeof in);
    nb = scale_bytes(&in[slot]);
    sc = malloc(nb + 1);
    if (!sc)
        return QF_ENOMEM;
    memcpy(sc, in[slot].scale.data, nb);
    switch (w->d) {
    case D_SCALE_A_LAST_UP: sc[nb - 1]++; break; /* e8m0: one binade up */
    case D_NO_GLOBAL_B: in[1].scale.global_code = 0x3F800000u; break;
    case D_ROW0_SCALE_A:
        for (i = 4; i < nb; i++)
            sc[i] = sc[i % 4];
        break;
    case D_SCALE_B_LAST_UP: {
        uint16_t v;
        memcpy(&v, sc + nb - 2, 2);
        v = (uint16_t)(v + 0x80); /* bfloat16: exponent + 1 */
        memcpy(sc + nb - 2, &v, 2);
        break;
    }
    }
    in[slot].scale.data = sc;
    c2.in = in;
    c2.kernel = w->k;
    s = w->k->run(w->k->user, &c2);
    free(sc);
    return s;
}

/* int8 with an int32 accumulator that wraps (unsigned arithmetic: defined
 * wrap-around) and no K limit, claiming what gemm.cpu.int8 claims. */
static qf_status run_int8_wrap(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const int8_t *a = call->in[0].data, *b = call->in[1].data;
    uint32_t *d = call->out[0].data;
    size_t i, j, l;
    (void)ctx;
    if (g->trans_a || g->trans_b || (g->batch && g->batch != 1))
        return QF_EUNSUPPORTED;
    for (i = 0; i < g->m; i++)
        for (j = 0; j < g->n; j++) {
            uint32_t acc = 0;
            for (l = 0; l < g->k; l++)
                acc += (uint32_t)((int32_t)a[i * g->k + l] * (int32_t)b[l * g->n + j]);
            d[i * g->n + j] = acc;
        }
    return QF_OK;
}

static qf_registry *test_registry(void)
{
    qf_registry *r = NULL;
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    for (i = 0; i < sizeof wraps / sizeof wraps[0]; i++) {
        qf_kernel k;
        wraps[i].k = qf_registry_find(r, wraps[i].builtin);
        ck_assert_ptr_nonnull(wraps[i].k);
        k = *wraps[i].k;
        k.name = wraps[i].name;
        k.kind = QF_KERNEL_KNOWN_BAD;
        k.run = run_wrap;
        k.supports = NULL; /* the built-in's reads its algorithm from user */
        k.user = &wraps[i];
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    {
        /* The wrapping kernel claims a saturating int32 accumulator (the
         * claim it breaks), and once more the wrap it does (kept). */
        static qf_dtype_tuple sat[1], wrap[1];
        qf_kernel k = *qf_registry_find(r, "gemm.cpu.int8");
        sat[0] = wrap[0] = k.dtypes[0];
        sat[0].arith.acc_kind = wrap[0].arith.acc_kind = QF_ACC_INT32;
        sat[0].arith.acc_overflow = QF_OVERFLOW_SATURATE;
        wrap[0].arith.acc_overflow = QF_OVERFLOW_WRAP;
        k.n_dtypes = 1;
        k.dtypes = sat;
        k.name = "gemm.test.int8.wrap";
        k.kind = QF_KERNEL_KNOWN_BAD;
        k.run = run_int8_wrap;
        k.supports = NULL;
        k.user = NULL;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
        k.dtypes = wrap;
        k.name = "gemm.test.int8.wrap_claimed";
        k.kind = QF_KERNEL_OPTIMIZED;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    return r;
}

static void run_suite(const char *yaml, qf_registry *reg, qf_runner_summary *sum)
{
    qf_test_run_yaml(yaml, "gemm-quant.yaml", reg, sum);
}

/* Shapes: K = 1 (one element, a lone tail block) and K = 300 (tails of
 * every block size: 300 = 9 * 32 + 12 = 18 * 16 + 12 = 4 * 64 + 44 =
 * 2 * 128 + 44); N = 1 and 17 (a column edge); 20 seeds.  The transposes
 * and the batch get one group each. */
static const char good_yaml[] =
    "suite: gemm-quant-good\n"
    "inputs: [{name: outliers, fraction: 0.01, scale: 100}]\n"
    "seeds: 20\n"
    "shapes: {M: [17], N: [1, 17], K: [1, 300]}\n"
    "groups:\n"
    "  - name: fp8ch\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.fp8_channel]\n"
    "    dtypes:\n"
    "      - {a: e4m3, b: e4m3, out: bf16, scale: per_channel}\n"
    "      - {a: e5m2, b: e5m2, out: bf16, scale: per_channel}\n"
    "      - {a: e4m3fnuz, b: e4m3fnuz, out: bf16, scale: per_channel}\n"
    "      - {a: e5m2fnuz, b: e5m2fnuz, out: bf16, scale: per_channel}\n"
    "  - name: fp8ch-t\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.fp8_channel]\n"
    "    dtypes: [{a: e4m3, b: e4m3, out: f32, scale: per_channel}]\n"
    "    shapes: {M: [5], N: [3], K: [300]}\n"
    "    params: {trans_a: true, trans_b: true}\n"
    "  - name: mxfp8\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.mxfp8]\n"
    "    dtypes:\n"
    "      - {a: e4m3, b: e4m3, out: f32, scale: mx}\n"
    "      - {a: e5m2, b: e5m2, out: bf16, scale: mx}\n"
    "      - {a: e4m3, b: e5m2, out: bf16, scale: mx}\n"
    "  - name: mxfp8-t\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.mxfp8]\n"
    "    dtypes: [{a: e4m3, b: e4m3, out: bf16, scale: mx}]\n"
    "    shapes: {M: [5], N: [3], K: [300]}\n"
    "    params: {trans_a: true, trans_b: true}\n"
    "  - name: mxfp4\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.mxfp4]\n"
    "    dtypes: [{a: e2m1, b: e2m1, out: bf16, scale: mx}, {a: e2m1, b: e2m1, out: f32, scale: mx}]\n"
    "  - name: nvfp4\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.nvfp4]\n"
    "    dtypes: [{a: e2m1, b: e2m1, out: bf16, scale: nvfp4}, {a: e2m1, b: e2m1, out: f32, scale: nvfp4}]\n"
    "  - name: nvfp4-tb\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.nvfp4]\n"
    "    dtypes: [{a: e2m1, b: e2m1, out: f32, scale: nvfp4}]\n"
    "    shapes: {M: [5], N: [3], K: [300], batch: [2]}\n"
    "    params: {trans_b: true}\n"
    "  - name: int8\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.int8]\n"
    "    dtypes: [{a: int8, b: int8, out: int32}]\n"
    "    inputs: [{name: uniform, lo: -128, hi: 127}]\n"
    "    params: {trans_a: [false, true]}\n"
    "  - name: w4a16\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.w4a16]\n"
    "    dtypes: [{a: bf16, b: int4, out: bf16, scale: group}]\n"
    "    params: {group_size: [32, 64, 128]}\n"
    "  - name: w4a16-t\n"
    "    op: gemm\n"
    "    kernels: [gemm.cpu.w4a16]\n"
    "    dtypes: [{a: bf16, b: int4, out: bf16, scale: group}]\n"
    "    shapes: {M: [5], N: [3], K: [300]}\n"
    "    params: {group_size: 64, trans_b: true}\n";

START_TEST(good_kernels_qualify)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    size_t i, bad = 0, per[6] = {0};
    static const char *const names[6] = {"gemm.cpu.fp8_channel", "gemm.cpu.mxfp8", "gemm.cpu.mxfp4",
                                         "gemm.cpu.nvfp4",       "gemm.cpu.int8",  "gemm.cpu.w4a16"};
    run_suite(good_yaml, reg, &sum);
    for (i = 0; i < sum.n; i++) {
        const qf_result *r = &sum.results[i];
        size_t j;
        for (j = 0; j < 6; j++)
            if (!strcmp(r->kernel, names[j]))
                per[j]++;
        if (r->verdict != QF_VERDICT_QUALIFIED) {
            if (bad < 10)
                fprintf(stderr, "not QUALIFIED: %s %s: %s (%s)\n", r->kernel, r->case_id,
                        qf_verdict_name(r->verdict), r->reason);
            bad++;
        }
    }
    fprintf(stderr, "gemm_quant: %zu cases over 20 seeds, %zu not QUALIFIED (false failures)\n", sum.n, bad);
    for (i = 0; i < 6; i++)
        ck_assert_msg(per[i] >= 20 * 4, "%s: only %zu cases", names[i], per[i]);
    ck_assert_uint_eq(bad, 0);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
}
END_TEST

static const char bad_yaml[] = "suite: gemm-quant-bad\n"
                               "inputs: [normal]\n"
                               "seeds: 2\n"
                               "groups:\n"
                               "  - name: mxfp8\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.mxfp8.scale_up]\n"
                               "    dtypes: [{a: e4m3, b: e4m3, out: bf16, scale: mx}]\n"
                               "    shapes: {M: [3], N: [5], K: [45]}\n"
                               "  - name: mxfp4\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.mxfp4.scale_up]\n"
                               "    dtypes: [{a: e2m1, b: e2m1, out: f32, scale: mx}]\n"
                               "    shapes: {M: [3], N: [5], K: [45]}\n"
                               "  - name: nvfp4\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.nvfp4.no_global]\n"
                               "    dtypes: [{a: e2m1, b: e2m1, out: bf16, scale: nvfp4}]\n"
                               "    shapes: {M: [3], N: [5], K: [45]}\n"
                               "  - name: fp8ch\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.fp8_channel.row0]\n"
                               "    dtypes: [{a: e4m3, b: e4m3, out: bf16, scale: per_channel}]\n"
                               "    inputs: [{name: outliers, fraction: 0.05, scale: 100}]\n"
                               "    shapes: {M: [8], N: [5], K: [45]}\n"
                               "  - name: w4a16\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.w4a16.scale_up]\n"
                               "    dtypes: [{a: bf16, b: int4, out: bf16, scale: group}]\n"
                               "    shapes: {M: [3], N: [5], K: [45]}\n"
                               "    params: {group_size: 32}\n"
                               "  - name: int8-small\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.int8.wrap, gemm.test.int8.wrap_claimed, gemm.cpu.int8]\n"
                               "    dtypes: [{a: int8, b: int8, out: int32}]\n"
                               "    inputs: [{name: uniform, lo: -128, hi: 127}]\n"
                               "    shapes: {M: [3], N: [5], K: [300]}\n"
                               "  - name: int8-edge\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.int8.wrap, gemm.test.int8.wrap_claimed, gemm.cpu.int8]\n"
                               "    dtypes: [{a: int8, b: int8, out: int32}]\n"
                               "    inputs: [{name: uniform, lo: -128.25, hi: -127.75}]\n"
                               "    shapes: {M: [1], N: [1], K: [131071]}\n"
                               "  - name: int8-overflow\n"
                               "    op: gemm\n"
                               "    kernels: [gemm.test.int8.wrap, gemm.test.int8.wrap_claimed, gemm.cpu.int8]\n"
                               "    dtypes: [{a: int8, b: int8, out: int32}]\n"
                               "    inputs: [{name: uniform, lo: -128.25, hi: -127.75}]\n"
                               "    shapes: {M: [1], N: [1], K: [140000]}\n";

/* Every result of kernel k in group g (case ids start with "g:") has
 * verdict v, with `reason` in its reason when not NULL; returns the count. */
static size_t expect_all(const qf_runner_summary *s, const char *g, const char *k, qf_verdict v,
                         const char *reason)
{
    size_t i, n = 0, gl = strlen(g);
    for (i = 0; i < s->n; i++) {
        const qf_result *r = &s->results[i];
        if (strcmp(r->kernel, k) || strncmp(r->case_id, g, gl) || r->case_id[gl] != ':')
            continue;
        ck_assert_msg(r->verdict == v && (!reason || strstr(r->reason, reason)), "%s %s: %s (%s)", k,
                      r->case_id, qf_verdict_name(r->verdict), r->reason);
        if (n++ == 0)
            fprintf(stderr, "%s %s: %s (%s)\n", k, r->case_id, qf_verdict_name(r->verdict), r->reason);
    }
    ck_assert_msg(n > 0, "no result for %s in %s", k, g);
    return n;
}

START_TEST(defects_fail)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    run_suite(bad_yaml, reg, &sum);
    expect_all(&sum, "mxfp8", "gemm.test.mxfp8.scale_up", QF_VERDICT_FAILED, "bound");
    expect_all(&sum, "mxfp4", "gemm.test.mxfp4.scale_up", QF_VERDICT_FAILED, "bound");
    expect_all(&sum, "nvfp4", "gemm.test.nvfp4.no_global", QF_VERDICT_FAILED, "bound");
    expect_all(&sum, "fp8ch", "gemm.test.fp8_channel.row0", QF_VERDICT_FAILED, "bound");
    expect_all(&sum, "w4a16", "gemm.test.w4a16.scale_up", QF_VERDICT_FAILED, "bound");
    /* Wrapping shows only past the int32 range. */
    expect_all(&sum, "int8-small", "gemm.test.int8.wrap", QF_VERDICT_QUALIFIED, NULL);
    expect_all(&sum, "int8-small", "gemm.cpu.int8", QF_VERDICT_QUALIFIED, NULL);
    /* The largest K claimed: 131071 * 2^14 = 2^31 - 2^14, exact in int32. */
    expect_all(&sum, "int8-edge", "gemm.test.int8.wrap", QF_VERDICT_QUALIFIED, NULL);
    expect_all(&sum, "int8-edge", "gemm.cpu.int8", QF_VERDICT_QUALIFIED, NULL);
    expect_all(&sum, "int8-overflow", "gemm.test.int8.wrap", QF_VERDICT_FAILED, NULL);
    /* The same wrap, claimed (accumulator: int32, overflow: wrap): the
     * wrapped sum is the expected result (docs/claims.md). */
    expect_all(&sum, "int8-overflow", "gemm.test.int8.wrap_claimed", QF_VERDICT_QUALIFIED, NULL);
    expect_all(&sum, "int8-overflow", "gemm.cpu.int8", QF_VERDICT_UNSUPPORTED, "overflow");
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/gemm_quant");
    TCase *tc = tcase_create("gemm_quant");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, good_kernels_qualify);
    tcase_add_test(tc, defects_fail);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
