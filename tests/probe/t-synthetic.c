/* t-synthetic.c: held-out kernels written here (not in the library), each
 * registered in a qf_registry and probed through qf_probe_gemm, must be
 * named correctly: sequential, pairwise, split(2/4/8) strided lanes,
 * blocked(16/32/64/128/320, sequential), a per-column order (even columns
 * split(2), odd columns sequential), accumulators of 12/13/14/23 fraction
 * bits truncating and rounding to nearest, flushed subnormal inputs, and
 * fused against unfused multiply-add.
 *
 * Their arithmetic is evaluated exactly here: each addition's exact value
 * is s + e (TwoSum of binary64 values; float32 products are exact in
 * binary64), rounded once to the accumulator's width.
 */
#include <float.h>
#include <math.h>

#include "qf_probe.h"
#include "qf_test.h"

enum { SEQ, PAIR, SPLIT, BLOCK, VARY };

typedef struct syn {
    const char *name;
    int order, param; /* SPLIT: lanes; BLOCK: block */
    int acc;          /* fraction bits */
    int rtz;
    int fma;
    int flush;        /* subnormal inputs flushed */
    size_t k;         /* probe K */
} syn;

static double round_bits(double x, int frac, int rtz)
{
    int e;
    double m;
    if (x == 0 || !isfinite(x))
        return x;
    frexp(x, &e);
    m = ldexp(x, frac + 1 - e);
    return ldexp(rtz ? trunc(m) : nearbyint(m), e - frac - 1);
}

/* s + e exactly (|e| <= half an ulp of s in binary64), rounded to p fraction bits. */
static double round_exact(double s, double e, int p, int rtz)
{
    double r = round_bits(s, p, rtz), lo, ulp;
    int ex;
    if (e == 0 || s == 0)
        return r;
    frexp(s, &ex);
    if (rtz) {
        if (r == s && (e < 0) != (s < 0)) {
            /* the exact value is just inside s: one step toward zero */
            ulp = ldexp(1.0, ex - 1 - p);
            if (fabs(s) == ldexp(1.0, ex - 1))
                ulp /= 2;
            r = s - copysign(ulp, s);
        }
        return r;
    }
    lo = round_bits(s, p, 1);
    ulp = ldexp(1.0, ex - 1 - p);
    if (fabs(s - lo) * 2 == ulp) /* s is a tie: e decides */
        r = ((e > 0) == (s > 0)) ? lo + copysign(ulp, s) : lo;
    return r;
}

static double add(const syn *k, double x, double y)
{
    double s = x + y, bb = s - x, e = (x - (s - bb)) + (y - bb);
    return round_exact(s, e, k->acc, k->rtz);
}

static double prod(const syn *k, double a, double b)
{
    if (k->flush) {
        if (fabs(a) < FLT_MIN)
            a = 0;
        if (fabs(b) < FLT_MIN)
            b = 0;
    }
    return k->fma ? a * b : round_bits(a * b, k->acc, k->rtz);
}

/* acc + a*b: one rounding with fma (the product is exact in binary64) */
static double madd(const syn *k, double acc, double a, double b)
{
    return add(k, acc, prod(k, a, b));
}

static double seq(const syn *k, const double *a, const double *b, size_t n, size_t stride)
{
    double acc = 0;
    for (size_t l = 0; l < n; l++)
        acc = madd(k, acc, a[l * stride], b[l * stride]);
    return acc;
}

static double pair(const syn *k, const double *a, const double *b, size_t n)
{
    if (n == 1)
        return add(k, 0, prod(k, a[0], b[0]));
    return add(k, pair(k, a, b, n / 2), pair(k, a + n / 2, b + n / 2, n - n / 2));
}

static double dot(const syn *k, const double *a, const double *b, size_t n, size_t col)
{
    int order = k->order, S = k->param;
    double acc = 0;
    if (order == VARY) {
        order = col % 2 ? SEQ : SPLIT;
        S = 2;
    }
    switch (order) {
    case PAIR: return pair(k, a, b, n);
    case SPLIT:
        for (int s = 0; s < S && (size_t)s < n; s++)
            acc = add(k, acc, seq(k, a + s, b + s, (n - (size_t)s + (size_t)S - 1) / (size_t)S, (size_t)S));
        return acc;
    case BLOCK:
        for (size_t s = 0; s < n; s += (size_t)S)
            acc = add(k, acc, seq(k, a + s, b + s, n - s < (size_t)S ? n - s : (size_t)S, 1));
        return acc;
    default: return seq(k, a, b, n, 1);
    }
}

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static qf_status syn_run(void *ctx, const qf_kernel_call *call)
{
    const syn *k = ctx;
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_tensor *A = &call->in[0], *B = &call->in[1];
    qf_tensor *D = &call->out[0];
    double *a = malloc(g->k * sizeof *a), *b = malloc(g->k * sizeof *b);
    if (!a || !b)
        return QF_ENOMEM;
    for (size_t j = 0; j < g->n; j++) {
        for (size_t l = 0; l < g->k; l++)
            b[l] = f32(((const uint32_t *)B->data)[(int64_t)l * B->stride[0] + (int64_t)j * B->stride[1]]);
        for (size_t i = 0; i < g->m; i++) {
            float r;
            uint32_t u;
            for (size_t l = 0; l < g->k; l++)
                a[l] = f32(((const uint32_t *)A->data)[(int64_t)i * A->stride[0] + (int64_t)l * A->stride[1]]);
            r = (float)dot(k, a, b, g->k, j);
            memcpy(&u, &r, 4);
            ((uint32_t *)D->data)[(int64_t)i * D->stride[0] + (int64_t)j * D->stride[1]] = u;
        }
    }
    free(a);
    free(b);
    return QF_OK;
}

static const syn kernels[] = {
    {"seq", SEQ, 0, 23, 0, 0, 0, 256},       {"pair", PAIR, 0, 23, 0, 0, 0, 256},
    {"split2", SPLIT, 2, 23, 0, 0, 0, 256},  {"split4", SPLIT, 4, 23, 0, 0, 0, 256},
    {"split8", SPLIT, 8, 23, 0, 0, 0, 256},  {"block16", BLOCK, 16, 23, 0, 0, 0, 256},
    {"block32", BLOCK, 32, 23, 0, 0, 0, 256}, {"block64", BLOCK, 64, 23, 0, 0, 0, 512},
    {"block128", BLOCK, 128, 23, 0, 0, 0, 512}, {"block320", BLOCK, 320, 23, 0, 0, 0, 1024},
    {"vary", VARY, 0, 23, 0, 0, 0, 256},
    {"acc12rtz", SEQ, 0, 12, 1, 1, 0, 128},  {"acc13rtz", SEQ, 0, 13, 1, 1, 0, 128},
    {"acc14rtz", SEQ, 0, 14, 1, 1, 0, 128},  {"acc23rtz", SEQ, 0, 23, 1, 1, 0, 128},
    {"acc12rne", SEQ, 0, 12, 0, 1, 0, 128},  {"acc13rne", SEQ, 0, 13, 0, 1, 0, 128},
    {"acc14rne", SEQ, 0, 14, 0, 1, 0, 128},  {"acc23rne", SEQ, 0, 23, 0, 1, 0, 128},
    {"flush", SEQ, 0, 23, 0, 1, 1, 128},     {"fma", SEQ, 0, 23, 0, 1, 0, 128},
    {"unfused", SEQ, 0, 23, 0, 0, 0, 128},
};
#define NK (sizeof kernels / sizeof kernels[0])

static const qf_dtype_tuple tup[] = {{.name = "f32", .in = {QF_FLOAT32, QF_FLOAT32, QF_FLOAT32}, .out = {QF_FLOAT32},
                                       .arith = {.acc_format = QF_FLOAT32, .block_fma = 1, .split_k = 1,
                                                 .promote_format = QF_FLOAT32}}};
static char names[NK][48];
static qf_registry *reg;

START_TEST(synthetic)
{
    size_t i, bad = 0;
    /* every kernel in the normal build; every other one under the
     * sanitizers (time budget) */
    for (i = 0; i < NK; i += qf_test_stride(2)) {
        const syn *k = &kernels[i];
        qf_probe_opts o = {.k = k->k, .cols = 4, .seed = qf_test_seed()};
        qf_probe_result *r = malloc(sizeof *r);
        char err[512], want[64];
        int ok = 1;
        ck_assert_ptr_nonnull(r);
        if (qf_probe_gemm(reg, names[i], &o, r, err, sizeof err) != QF_OK) {
            fprintf(stderr, "%s: %s\n", names[i], err);
            bad++;
            free(r);
            continue;
        }
        switch (k->order) {
        case PAIR: snprintf(want, sizeof want, "pairwise"); break;
        case SPLIT: snprintf(want, sizeof want, "split(%d)", k->param); break;
        case BLOCK: snprintf(want, sizeof want, "blocked(%d, sequential)", k->param); break;
        case VARY: snprintf(want, sizeof want, "varies(split(2), sequential)"); break;
        default: snprintf(want, sizeof want, "sequential"); break;
        }
        ok &= !strcmp(r->order_claim, want);
        if (k->order == VARY)
            ok &= r->varies && r->n_orders == 2 && !strcmp(r->order_cols[0], "0 2") && !strcmp(r->order_cols[1], "1 3");
        ok &= r->block == 1 && r->align == QF_PROBE_ALIGN_EXACT;
        ok &= r->acc_frac_bits == k->acc && r->acc_frac_min == k->acc;
        ok &= r->acc_round_known && r->acc_round == (k->rtz ? QF_ROUND_RTZ : QF_ROUND_RNE);
        ok &= r->fma == (k->fma ? 1 : 0);
        ok &= r->flush_in == k->flush;
        ok &= r->deterministic_threads && r->validated_ok == r->validated && r->validated;
        fprintf(stderr, "%-20s %-30s acc %d..%d %s fma %d flush %d replay %zu/%zu  %5zu calls %.2f s%s\n", names[i],
                r->order_claim, r->acc_frac_min, r->acc_frac_bits, qf_round_name(r->acc_round), r->fma, r->flush_in,
                r->validated_ok, r->validated, r->kernel_calls, r->seconds, ok ? "" : "  WRONG");
        if (!ok)
            for (size_t e = 0; e < r->n_evidence; e++)
                fprintf(stderr, "    %s\n", r->evidence[e]);
        bad += !ok;
        free(r);
    }
    qf_test_tally("synthetic kernels classified", (long)((NK + qf_test_stride(2) - 1) / qf_test_stride(2)), (long)bad);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe/synthetic");
    TCase *tc = tcase_create("synthetic");
    int rc;
    if (qf_registry_create(&reg) != QF_OK)
        return 1;
    for (size_t i = 0; i < NK; i++) {
        qf_kernel k = {.abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .op = QF_OP_GEMM,
                       .kind = QF_KERNEL_OPTIMIZED, .description = "probe test kernel", .backend = "cpu",
                       .archs = "cpu", .dtypes = tup, .n_dtypes = 1, .run = syn_run, .user = (void *)&kernels[i]};
        snprintf(names[i], sizeof names[i], "gemm.test.%s", kernels[i].name);
        k.name = names[i];
        if (qf_registry_add(reg, &k) != QF_OK) {
            fprintf(stderr, "%s\n", qf_registry_error(reg));
            return 1;
        }
    }
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, synthetic);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    qf_registry_free(reg);
    return rc;
}
