/* t-ops.c: the ops the runner drives beyond gemm / softmax / norms.  For
 * each, a test-only kernel in this test's own registry that computes the op
 * correctly (in binary64, rounded once into float32, claiming 2 ulp, which
 * bounds only what no derivation does, moe_router's weights: every other
 * op is checked against its derived bound, docs/claims.md "max_ulp";
 * QUALIFIED) and one with a planted defect (FAILED, the reason naming the
 * bound it broke):
 *   log_softmax  bad: the last column forgets the log-sum-exp
 *   activation   silu; bad: a "fast" exp(-x) ~ 1 - x for |x| < 1/2
 *   glu          swiglu (silu(gate) * up); bad: the last element drops up
 *   rope         half layout, pos_offset 3; bad: positions off by one
 *   attention    GQA (4 heads, 2 kv heads), causal, out and lse, the
 *                derived bound (no claimed ulp); bad: the last query row
 *                ignores the causal mask
 *   moe_router   softmax scores, top 3 of 8, small-integer logits so that
 *                ties are common; the good kernel breaks ties towards the
 *                HIGHER expert index (the reference: lower), legitimate
 *                flips the reference marks; bad: the last slot takes the
 *                next-best expert
 *   quantize     MX float4_e2m1fn (block 32, floor rule) and FP8 e4m3 per
 *                tensor, through the block module itself (an exact
 *                expectation); bad: MX's last scale one binade up, FP8's
 *                last code off by one
 *   scaled gemm  float8_e4m3fn a and b with per-tensor float32 scales,
 *                bfloat16 out; bad: ignores b's scale
 * and two cases the runner cannot check, UNSUPPORTED with the reason:
 * stochastic quantization and per_token scaled GEMM (per_channel, mx,
 * nvfp4 and group are driven: tests/kernels/t-gemm_quant.c).
 * The suite's kernel globs of log_softmax and glu groups start with '*':
 * the suite loader wants a literal first component to be the suite op
 * (log_softmax, glu) while the registry wants kernel names to start with
 * the kernel op (softmax, activation), so only a wildcard can match. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_block.h"
#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
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
    float f = (float)d; /* one rounding, nearest-even */
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static qf_status run_log_softmax(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_softmax *o = &call->op->u.softmax;
    const uint32_t *x = call->in[0].data;
    uint32_t *y = call->out[0].data;
    size_t i, j, R = o->rows, C = o->cols;
    if (!o->log)
        return QF_EUNSUPPORTED;
    for (i = 0; i < R; i++) {
        double mx = -INFINITY, s = 0, lse;
        for (j = 0; j < C; j++)
            mx = fmax(mx, f32(x[i * C + j]));
        for (j = 0; j < C; j++)
            s += exp(f32(x[i * C + j]) - mx);
        lse = mx + log(s);
        for (j = 0; j < C; j++)
            y[i * C + j] = bits(f32(x[i * C + j]) - (bad && j == C - 1 ? mx : lse));
    }
    return QF_OK;
}

static double silu(double x, int fast)
{
    double e = fast && fabs(x) < 0.5 ? 1 - x : exp(-x);
    return x / (1 + e);
}

static qf_status run_act(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_activation *o = &call->op->u.activation;
    const uint32_t *x = call->in[0].data, *up = call->in[1].data;
    uint32_t *y = call->out[0].data;
    size_t i;
    if (o->act != QF_REF_ACT_SILU)
        return QF_EUNSUPPORTED;
    for (i = 0; i < o->n; i++) {
        double v = silu(f32(x[i]), bad && !o->glu);
        if (o->glu && !(bad && i == o->n - 1))
            v *= f32(up[i]);
        y[i] = bits(v);
    }
    return QF_OK;
}

static qf_status run_rope(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_rope *o = &call->op->u.rope;
    const uint32_t *x = call->in[0].data;
    uint32_t *y = call->out[0].data;
    size_t t, h, i, D = o->head_dim, R = o->rotary_dim ? o->rotary_dim : D, half = R / 2;
    for (t = 0; t < o->tokens; t++)
        for (h = 0; h < o->heads; h++) {
            const uint32_t *xr = x + (t * o->heads + h) * D;
            uint32_t *yr = y + (t * o->heads + h) * D;
            double pos = (double)(o->pos_offset + (int64_t)t + bad);
            for (i = 0; i < D; i++)
                yr[i] = xr[i];
            for (i = 0; i < half; i++) {
                size_t a = o->layout == QF_REF_ROPE_HALF ? i : 2 * i,
                       b = o->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
                double ang = pos * pow(o->theta, -2.0 * (double)i / (double)R), c = cos(ang), s = sin(ang);
                double xa = f32(xr[a]), xb = f32(xr[b]);
                yr[a] = bits(xa * c - xb * s);
                yr[b] = bits(xa * s + xb * c);
            }
        }
    return QF_OK;
}

static qf_status run_attention(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_attention *a = &call->op->u.attention;
    const uint32_t *q = call->in[0].data, *k = call->in[1].data, *v = call->in[2].data;
    uint32_t *o = call->out[0].data, *lse = call->out[1].data;
    size_t b, h, i, j, c, D = a->head_dim, DV = a->head_dim_v ? a->head_dim_v : D, SK = a->seq_k;
    double scale = a->scale > 0 ? a->scale : 1 / sqrt((double)D), s[64], acc[64];
    if (SK > 64 || DV > 64 || a->mask != QF_MASK_CAUSAL)
        return QF_EUNSUPPORTED;
    for (b = 0; b < a->batch; b++)
        for (h = 0; h < a->heads; h++)
            for (i = 0; i < a->seq_q; i++) {
                size_t row = (b * a->heads + h) * a->seq_q + i;
                size_t kv = (b * a->kv_heads + h / (a->heads / a->kv_heads)) * SK;
                size_t last = bad && i == a->seq_q - 1 ? SK - 1 : (i < SK - 1 ? i : SK - 1);
                double mx = -INFINITY, sum = 0;
                for (j = 0; j <= last; j++) {
                    double d = 0;
                    for (c = 0; c < D; c++)
                        d += f32(q[row * D + c]) * f32(k[(kv + j) * D + c]);
                    s[j] = scale * d;
                    mx = fmax(mx, s[j]);
                }
                for (c = 0; c < DV; c++)
                    acc[c] = 0;
                for (j = 0; j <= last; j++) {
                    double e = exp(s[j] - mx);
                    sum += e;
                    for (c = 0; c < DV; c++)
                        acc[c] += e * f32(v[(kv + j) * DV + c]);
                }
                for (c = 0; c < DV; c++)
                    o[row * DV + c] = bits(acc[c] / sum);
                if (lse)
                    lse[row] = bits(mx + log(sum));
            }
    return QF_OK;
}

static qf_status run_moe(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_moe_router *m = &call->op->u.moe_router;
    const uint32_t *x = call->in[0].data;
    uint32_t *w = call->out[0].data;
    int32_t *idx = call->out[1].data;
    size_t t, e, s, E = m->experts, K = m->top_k;
    if (m->score != QF_REF_ROUTER_SOFTMAX || m->renormalize || E > 64)
        return QF_EUNSUPPORTED;
    for (t = 0; t < m->tokens; t++) {
        const uint32_t *l = x + t * E;
        double mx = -INFINITY, sum = 0;
        int used[64] = {0};
        for (e = 0; e < E; e++)
            mx = fmax(mx, f32(l[e]));
        for (e = 0; e < E; e++)
            sum += exp(f32(l[e]) - mx);
        for (s = 0; s < K + (size_t)bad; s++) {
            size_t best = E;
            for (e = 0; e < E; e++) /* >=: ties go to the higher index */
                if (!used[e] && (best == E || f32(l[e]) >= f32(l[best])))
                    best = e;
            used[best] = 1;
            if (bad && s == K - 1)
                continue; /* the defect: the last slot gets the next one */
            if (s >= K)
                s = K - 1;
            idx[t * K + s] = (int32_t)best;
            w[t * K + s] = bits(m->route_scale * exp(f32(l[best]) - mx) / sum);
            if (bad && s == K - 1)
                break;
        }
    }
    return QF_OK;
}

static qf_status run_quantize(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_quantize *q = &call->op->u.quantize;
    const uint32_t *x = call->in[0].data;
    uint8_t *codes = call->out[0].data;
    size_t i, n = q->rows * q->cols, ns = call->out[0].scale.count;
    double *xv = malloc((n + 1) * sizeof *xv);
    qf_status s;
    if (!xv)
        return QF_ENOMEM;
    for (i = 0; i < n; i++)
        xv[i] = f32(x[i]);
    if (q->block.family == QF_REF_BLOCK_MX) {
        uint8_t *sc = call->out[0].scale.data;
        s = qf_block_mx_quantize(&q->block.mx, xv, q->rows, q->cols, codes, sc, NULL);
        if (bad)
            sc[ns - 1]++;
    } else if (q->block.family == QF_REF_BLOCK_FP8) {
        s = qf_block_fp8_scale_quantize(&q->block.fp8, xv, q->rows, q->cols, codes, call->out[0].scale.data,
                                        NULL);
        if (bad)
            codes[n - 1] ^= 1;
    } else {
        s = QF_EUNSUPPORTED;
    }
    free(xv);
    return s;
}

static const qf_dtype_tuple *tuple_quantize(void)
{
    static qf_dtype_tuple t[2];
    t[0].name = "f32_e2m1";
    t[0].in[0] = QF_FLOAT32;
    t[0].out[0] = QF_FLOAT4_E2M1FN;
    t[0].arith = qf_arith_claim_default();
    t[1] = t[0];
    t[1].name = "f32_e4m3";
    t[1].out[0] = QF_FLOAT8_E4M3FN;
    return t;
}

static qf_status run_gemm_fp8(void *ctx, const qf_kernel_call *call)
{
    int bad = (int)(intptr_t)ctx;
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_format *e = qf_format_get(QF_FLOAT8_E4M3FN), *bf = qf_format_get(QF_BFLOAT16);
    const uint8_t *a = call->in[0].data, *b = call->in[1].data;
    double sa = f32(*(const uint32_t *)call->in[0].scale.data),
           sb = f32(*(const uint32_t *)call->in[1].scale.data);
    uint16_t *d = call->out[0].data;
    size_t i, j, l;
    if (g->trans_a || g->trans_b || g->batch > 1 || call->in[0].scale.kind != QF_SCALE_TENSOR)
        return QF_EUNSUPPORTED;
    for (i = 0; i < g->m; i++)
        for (j = 0; j < g->n; j++) {
            double acc = 0;
            for (l = 0; l < g->k; l++)
                acc += qf_format_decode(e, a[i * g->k + l]) * qf_format_decode(e, b[l * g->n + j]);
            d[i * g->n + j] =
                (uint16_t)qf_format_encode(bf, g->alpha * acc * sa * (bad ? 1 : sb), QF_ROUND_RNE, 0, 0, 0);
        }
    return QF_OK;
}

static const qf_dtype_tuple *tuple_fp8(void)
{
    static qf_dtype_tuple t[1];
    t[0].name = "e4m3_e4m3_bf16";
    t[0].in[0] = t[0].in[1] = t[0].in[2] = QF_FLOAT8_E4M3FN;
    t[0].in_scale[0] = t[0].in_scale[1] = QF_SCALE_TENSOR;
    t[0].in_scale_format[0] = t[0].in_scale_format[1] = QF_FLOAT32;
    t[0].out[0] = QF_BFLOAT16;
    t[0].arith = qf_arith_claim_default();
    return t;
}

static const qf_dtype_tuple *tuple_derived(void)
{
    static qf_dtype_tuple t[1];
    t[0].name = "f32";
    t[0].in[0] = t[0].in[1] = t[0].in[2] = t[0].in[3] = QF_FLOAT32;
    t[0].out[0] = t[0].out[1] = QF_FLOAT32;
    t[0].arith = qf_arith_claim_default();
    return t;
}

static const qf_dtype_tuple *tuple(void)
{
    static qf_dtype_tuple t[1];
    t[0].name = "f32";
    t[0].in[0] = t[0].in[1] = t[0].in[2] = t[0].in[3] = QF_FLOAT32;
    t[0].out[0] = t[0].out[1] = QF_FLOAT32;
    t[0].arith = qf_arith_claim_default();
    t[0].arith.max_ulp = 2;
    return t;
}

static void add(qf_registry *r, const char *name, qf_op op, qf_kernel_run_fn run, int bad)
{
    qf_kernel k;
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = name;
    k.op = op;
    k.kind = bad ? QF_KERNEL_KNOWN_BAD : QF_KERNEL_REFERENCE;
    k.description = "test kernel";
    k.backend = "cpu";
    k.archs = "cpu";
    k.dtypes = op == QF_OP_ATTENTION  ? tuple_derived()
               : op == QF_OP_QUANTIZE ? tuple_quantize()
               : op == QF_OP_GEMM     ? tuple_fp8()
                                      : tuple();
    k.n_dtypes = op == QF_OP_QUANTIZE ? 2 : 1;
    k.run = run;
    k.user = (void *)(intptr_t)bad;
    ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
}

static qf_registry *test_registry(void)
{
    qf_registry *r = NULL;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    add(r, "softmax.test.log.good", QF_OP_SOFTMAX, run_log_softmax, 0);
    add(r, "softmax.test.log.bad", QF_OP_SOFTMAX, run_log_softmax, 1);
    add(r, "activation.test.silu.good", QF_OP_ACTIVATION, run_act, 0);
    add(r, "activation.test.silu.bad", QF_OP_ACTIVATION, run_act, 1);
    add(r, "activation.test.swiglu.good", QF_OP_ACTIVATION, run_act, 0);
    add(r, "activation.test.swiglu.bad", QF_OP_ACTIVATION, run_act, 1);
    add(r, "rope.test.good", QF_OP_ROPE, run_rope, 0);
    add(r, "rope.test.bad", QF_OP_ROPE, run_rope, 1);
    add(r, "attention.test.good", QF_OP_ATTENTION, run_attention, 0);
    add(r, "attention.test.bad", QF_OP_ATTENTION, run_attention, 1);
    add(r, "moe_router.test.good", QF_OP_MOE_ROUTER, run_moe, 0);
    add(r, "moe_router.test.bad", QF_OP_MOE_ROUTER, run_moe, 1);
    add(r, "quantize.test.good", QF_OP_QUANTIZE, run_quantize, 0);
    add(r, "quantize.test.bad", QF_OP_QUANTIZE, run_quantize, 1);
    add(r, "gemm.test.fp8.good", QF_OP_GEMM, run_gemm_fp8, 0);
    add(r, "gemm.test.fp8.bad", QF_OP_GEMM, run_gemm_fp8, 1);
    return r;
}

static const qf_result *find(const qf_runner_summary *s, const char *op, const char *kernel)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        if (!strcmp(s->results[i].kernel, kernel) &&
            (!strcmp(s->results[i].op, op) || !strncmp(s->results[i].case_id, op, strlen(op))))
            return &s->results[i];
    ck_abort_msg("no result for %s %s", op, kernel);
    return NULL;
}

static void expect(const qf_runner_summary *s, const char *op, const char *kernel, qf_verdict v,
                   const char *in_reason)
{
    const qf_result *r = find(s, op, kernel);
    ck_assert_msg(r->verdict == v && (!in_reason || strstr(r->reason, in_reason)), "%s %s: %s (%s)", op,
                  kernel, qf_verdict_name(r->verdict), r->reason);
    if (v == QF_VERDICT_QUALIFIED || v == QF_VERDICT_FAILED)
        ck_assert_msg(r->has_metrics && r->n_checked == r->n_elements &&
                          !strcmp(r->bound.kind, !strcmp(op, "attention")    ? "attention"
                                                 : !strncmp(op, "q-", 2)     ? "exact"
                                                 : !strcmp(op, "gemm")       ? "gemm"
                                                 : !strcmp(op, "moe_router") ? "ulp"
                                                 : !strcmp(op, "glu")        ? "activation"
                                                                             : op),
                      "%s %s: metrics %d, %zu of %zu checked, bound '%s'", op, kernel, r->has_metrics,
                      r->n_checked, r->n_elements, r->bound.kind);
}

START_TEST(ops_good_and_bad)
{
    char suite_path[128], err[512];
    FILE *f;
    qf_suite *suite = NULL;
    qf_registry *reg = test_registry();
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    snprintf(suite_path, sizeof suite_path, "/tmp/qf-t-ops-%d.yaml", (int)getpid());
    f = fopen(suite_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: ops\n"
          "dtypes: [float32]\n"
          "groups:\n"
          "  - op: log_softmax\n"
          "    kernels: ['softmax.test.log.*']\n"
          "    shapes: {rows: [5], cols: [64]}\n"
          "  - op: activation\n"
          "    kernels: [activation.test.silu.*]\n"
          "    shapes: {rows: [4], cols: [33]}\n"
          "    params: {fn: silu}\n"
          "  - op: glu\n"
          "    kernels: ['activation.test.swiglu.*']\n"
          "    shapes: {rows: [3], cols: [17]}\n"
          "    params: {fn: silu}\n"
          "  - op: rope\n"
          "    kernels: [rope.test.*]\n"
          "    shapes: {tokens: [6], heads: [2], head_dim: [16]}\n"
          "    params: {layout: half, pos_offset: 3}\n"
          "  - op: attention\n"
          "    kernels: [attention.test.*]\n"
          "    shapes: {heads: [4], kv_heads: [2], seq_q: [5], seq_k: [7], head_dim: [8]}\n"
          "    params: {causal: true}\n"
          "  - op: moe_router\n"
          "    kernels: [moe_router.test.*]\n"
          "    inputs: [{name: small_int, int_max: 2}]\n"
          "    shapes: {tokens: [16], experts: [8]}\n"
          "    params: {top_k: 3}\n"
          "  - name: q-mx\n"
          "    op: quantize\n"
          "    kernels: [quantize.test.*]\n"
          "    dtypes: [{in: float32, out: float4_e2m1fn}]\n"
          "    shapes: {rows: [4], cols: [96]}\n"
          "    params: {family: mx}\n"
          "  - name: q-fp8\n"
          "    op: quantize\n"
          "    kernels: [quantize.test.*]\n"
          "    dtypes: [{in: float32, out: float8_e4m3fn}]\n"
          "    shapes: {rows: [5], cols: [24]}\n"
          "    params: {family: fp8}\n"
          "  - op: gemm\n"
          "    kernels: [gemm.test.fp8.*]\n"
          "    dtypes: [{a: float8_e4m3fn, b: float8_e4m3fn, out: bfloat16, scale: per_tensor}]\n"
          "    inputs: [{name: normal, std: 3}]\n"
          "    shapes: {M: [7], N: [9], K: [40]}\n"
          "    params: {alpha: 0.5}\n"
          "  - name: q-sr\n"
          "    op: quantize\n"
          "    kernels: [quantize.test.good]\n"
          "    dtypes: [{in: float32, out: float4_e2m1fn}]\n"
          "    shapes: {rows: [1], cols: [32]}\n"
          "    params: {family: mx, round: stochastic}\n"
          "  - name: g-pc\n"
          "    op: gemm\n"
          "    kernels: [gemm.test.fp8.good]\n"
          "    dtypes: [{a: float8_e4m3fn, b: float8_e4m3fn, out: bfloat16, scale: per_token}]\n"
          "    shapes: {M: [2], N: [2], K: [8]}\n",
          f);
    fclose(f);
    ck_assert_msg(qf_suite_load(suite_path, &suite, err, sizeof err) == QF_OK, "%s", err);
    o.jobs = 2;
    o.timeout_s = 10.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, &sum, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(sum.n, 20);
    expect(&sum, "log_softmax", "softmax.test.log.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "log_softmax", "softmax.test.log.bad", QF_VERDICT_FAILED, "bound");
    expect(&sum, "activation", "activation.test.silu.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "activation", "activation.test.silu.bad", QF_VERDICT_FAILED, "bound");
    expect(&sum, "glu", "activation.test.swiglu.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "glu", "activation.test.swiglu.bad", QF_VERDICT_FAILED, "(2, 16)");
    expect(&sum, "rope", "rope.test.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "rope", "rope.test.bad", QF_VERDICT_FAILED, "bound");
    expect(&sum, "attention", "attention.test.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "attention", "attention.test.bad", QF_VERDICT_FAILED, "bound");
    expect(&sum, "moe_router", "moe_router.test.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "moe_router", "moe_router.test.bad", QF_VERDICT_FAILED, "indices");
    expect(&sum, "q-mx", "quantize.test.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "q-mx", "quantize.test.bad", QF_VERDICT_FAILED, "scales: 1 of 12");
    expect(&sum, "q-fp8", "quantize.test.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "q-fp8", "quantize.test.bad", QF_VERDICT_FAILED, "codes: 1 of 120");
    expect(&sum, "gemm", "gemm.test.fp8.good", QF_VERDICT_QUALIFIED, NULL);
    expect(&sum, "gemm", "gemm.test.fp8.bad", QF_VERDICT_FAILED, "bound");
    {
        /* The reference's two passes (binary64, bfloat16) left some of
         * their evaluations to the exact engine and decided the others by
         * qf_gemm's certified fast path (docs/refs.md "Fast GEMM"). */
        const qf_result *g = find(&sum, "gemm", "gemm.test.fp8.good");
        ck_assert_msg(g->ref_exact_engine > 0 && g->ref_exact_engine < 2 * g->n_checked,
                      "gemm: %zu exact-engine evaluations for %zu elements", g->ref_exact_engine, g->n_checked);
    }
    /* What the runner cannot check says so. */
    expect(&sum, "q-sr", "quantize.test.good", QF_VERDICT_UNSUPPORTED, "stochastic rounding");
    expect(&sum, "g-pc", "gemm.test.fp8.good", QF_VERDICT_UNSUPPORTED, "not per_token");
    qf_runner_summary_free(&sum);
    qf_suite_free(suite);
    qf_registry_free(reg);
    remove(suite_path);
}
END_TEST

/* An op that derives no bound (moe_router's weights), with a claim that
 * states no max_ulp: checked against nothing, so UNCHECKED, never a pass. */
START_TEST(no_bound_says_so)
{
    static const char yaml[] = "suite: nobound\n"
                               "groups:\n"
                               "  - op: moe_router\n"
                               "    kernels: ['moe_router.test.noclaim']\n"
                               "    dtypes: [float32]\n"
                               "    inputs: [{name: small_int, int_max: 2}]\n"
                               "    shapes: {tokens: [16], experts: [8]}\n"
                               "    params: {top_k: 3}\n";
    static qf_dtype_tuple t[1];
    qf_registry *r = NULL;
    qf_kernel k;
    qf_runner_summary sum;
    t[0] = tuple()[0];
    t[0].arith.max_ulp = 0;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = "moe_router.test.noclaim";
    k.op = QF_OP_MOE_ROUTER;
    k.kind = QF_KERNEL_REFERENCE;
    k.backend = k.archs = "cpu";
    k.dtypes = t;
    k.n_dtypes = 1;
    k.run = run_moe;
    ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    qf_test_run_yaml(yaml, "nobound.yaml", r, &sum);
    ck_assert_uint_eq(sum.n, 1);
    /* no bound, no pass: UNCHECKED, never QUALIFIED (docs/verdicts.md rule 11) */
    ck_assert_msg(sum.results[0].verdict == QF_VERDICT_UNCHECKED && sum.results[0].cause == QF_CAUSE_NO_BOUND &&
                      sum.results[0].bound.kind[0] == '\0' && strstr(sum.results[0].reason, "checked against nothing"),
                  "%s: %s", qf_verdict_name(sum.results[0].verdict), sum.results[0].reason);
    qf_runner_summary_free(&sum);
    qf_registry_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner-ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ops_good_and_bad);
    tcase_add_test(tc, no_bound_says_so);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
