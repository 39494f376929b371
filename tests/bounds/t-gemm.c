/* t-gemm.c: the GEMM / dot bounds of qf_bound.h hold for simulated
 * accumulators that do what the claim says, and are violated by one that
 * does less (a float16 accumulator claimed as float32).
 *
 * The simulations are test-only models of the matrix-unit arithmetic of
 * docs/numerics.md#matrix-units: an accumulator of f fraction bits,
 * blocks of b exact products added to it and rounded once (nearest-even or
 * toward zero), optionally with the terms aligned to the block's largest
 * exponent and truncated (Fasi, Higham, Mikaitis, Pranesh 2021), optionally
 * promoted every P elements into float32.  Every exact sum is formed in the
 * superaccumulator of refs/qf_dot.h and rounded once to f + 1 bits here.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_metrics.h"
#include "qf_test.h"
#include "qf_verdict.h"

typedef struct sim {
    int frac;        /* accumulator fraction bits */
    qf_round rnd;    /* RNE or RTZ */
    int block;       /* products per block */
    int align_trunc; /* align to the block max and truncate */
    int guard;
    int promote; /* 0 or interval into float32 (RNE) */
    int split;   /* 0/1 or S sequential partials summed at the end */
} sim;

/* The exact value of acc rounded to p significant bits. */
static double round_p(const qf_dot_acc *acc, int p, qf_round mode)
{
    int sign, exp, sticky, shift = 64 - p;
    uint64_t sig, q, low, half;
    qf_dot_class k = qf_dot_acc_parts(acc, &sign, &exp, &sig, &sticky);
    double v;
    if (k == QF_DOT_ZERO)
        return 0.0;
    ck_assert_int_eq(k, QF_DOT_FINITE);
    q = sig >> shift;
    low = sig & ((UINT64_C(1) << shift) - 1);
    half = UINT64_C(1) << (shift - 1);
    if (mode == QF_ROUND_RNE && (low > half || (low == half && (sticky || (q & 1)))))
        q++;
    v = ldexp((double)q, exp - 63 + shift);
    return sign ? -v : v;
}

static double trunc_to(double x, double grid)
{
    return trunc(x / grid) * grid;
}

/* One block step: acc + products a[0..n) b[0..n), rounded once. */
static double block_step(const sim *s, double acc, const double *a, const double *b, size_t n)
{
    qf_dot_acc t;
    size_t i;
    qf_dot_acc_init(&t);
    if (s->align_trunc) {
        double mx = fabs(acc), grid;
        for (i = 0; i < n; i++)
            mx = fmax(mx, fabs(a[i] * b[i]));
        if (mx == 0)
            return 0;
        grid = ldexp(1.0, ilogb(mx) - s->frac - s->guard);
        qf_dot_acc_add_d(&t, trunc_to(acc, grid));
        for (i = 0; i < n; i++)
            qf_dot_acc_add_d(&t, trunc_to(a[i] * b[i], grid));
    } else {
        qf_dot_acc_add_d(&t, acc);
        for (i = 0; i < n; i++)
            qf_dot_acc_add_product(&t, a[i], b[i]);
    }
    return round_p(&t, s->frac + 1, s->rnd);
}

static double add_round(double x, double y, int frac, qf_round r)
{
    qf_dot_acc t;
    qf_dot_acc_init(&t);
    qf_dot_acc_add_d(&t, x);
    qf_dot_acc_add_d(&t, y);
    return round_p(&t, frac + 1, r);
}

static double sim_chain(const sim *s, const double *a, const double *b, size_t k)
{
    double acc = 0, outer = 0;
    size_t l, since = 0;
    for (l = 0; l < k; l += (size_t)s->block) {
        size_t nb = k - l < (size_t)s->block ? k - l : (size_t)s->block;
        acc = block_step(s, acc, a + l, b + l, nb);
        since += nb;
        if (s->promote && (since >= (size_t)s->promote || l + nb == k)) {
            outer = add_round(outer, acc, 23, QF_ROUND_RNE);
            acc = 0;
            since = 0;
        }
    }
    return s->promote ? outer : acc;
}

static double sim_dot(const sim *s, const double *a, const double *b, size_t k)
{
    size_t S = s->split > 1 ? (size_t)s->split : 1, per = (k + S - 1) / S, p;
    double tot = 0;
    if (S == 1)
        return sim_chain(s, a, b, k);
    for (p = 0; p < S; p++) {
        size_t lo = p * per, n = lo >= k ? 0 : (k - lo < per ? k - lo : per);
        double part = n ? sim_chain(s, a + lo, b + lo, n) : 0;
        tot = p == 0 ? part : add_round(tot, part, s->frac, s->rnd);
    }
    return tot;
}

enum { D_NORMAL, D_POSITIVE, D_CANCEL, D_TIE, D_WIDE, D_COUNT };

static double unif(uint64_t seed, uint64_t i)
{
    return (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53;
}

static double gauss(uint64_t seed, uint64_t i)
{
    double u1 = unif(seed, 2 * i) + 0x1p-54, u2 = unif(seed, 2 * i + 1);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Inputs quantized to `in` (products exact in binary64). */
static void gen(int dist, const qf_format *in, uint64_t seed, size_t k, double *a, double *b, int frac)
{
    size_t i;
    for (i = 0; i < k; i++) {
        double x, y;
        switch (dist) {
        case D_POSITIVE: x = 0.5 + unif(seed, 4 * i), y = 0.5 + unif(seed, 4 * i + 1); break;
        case D_CANCEL:
            /* pairs that nearly cancel: the result is far below sum |a||b| */
            x = gauss(seed, i / 2 * 2), y = (i & 1) ? -1.0 : 1.0;
            if (i & 1)
                x *= 1 + 0x1p-6 * gauss(seed, i + 7777);
            break;
        case D_TIE:
            /* 1 then terms of half an ulp of 1: nearest-even never moves */
            x = i == 0 ? 1.0 : ldexp(1.0, -(frac + 1)), y = 1.0;
            break;
        case D_WIDE:
            x = ldexp(gauss(seed, i), (int)(qf_rng_u64(seed, i + 99) % 24) - 12), y = gauss(seed, i + 5);
            break;
        default: x = gauss(seed, 3 * i), y = gauss(seed, 3 * i + 1); break;
        }
        a[i] = dist == D_TIE ? x : qf_format_decode(in, qf_format_encode(in, x, QF_ROUND_RNE, 1, 0, 0));
        b[i] = dist == D_TIE ? y : qf_format_decode(in, qf_format_encode(in, y, QF_ROUND_RNE, 1, 0, 0));
    }
}

typedef struct outcome {
    double max_util;
    size_t violations, cases;
} outcome;

/* Run the simulation s for the claim c over sizes and distributions;
 * out: output format and its rounding (applied to the simulated result). */
static outcome run(const sim *s, const qf_arith_claim *c, const qf_format *in, const qf_format *out,
                   const size_t *ks, size_t nk, int reps)
{
    outcome o = {0, 0, 0};
    uint64_t seed = qf_test_seed();
    size_t ik, kmax = 0;
    double *a, *b;
    int d, r;
    for (ik = 0; ik < nk; ik++)
        kmax = ks[ik] > kmax ? ks[ik] : kmax;
    a = malloc(kmax * sizeof *a);
    b = malloc(kmax * sizeof *b);
    ck_assert(a && b);
    for (ik = 0; ik < nk; ik++) {
        qf_bound_coef coef;
        ck_assert_int_eq(qf_bound_gemm_coef(c, ks[ik], 0, out, 3, &coef), QF_OK);
        for (d = 0; d < D_COUNT; d++)
            for (r = 0; r < reps; r++) {
                qf_dot_acc ex, ab;
                double v, err, absu, exact, bnd;
                uint64_t cs = seed ^ (ks[ik] * 1000003u + (uint64_t)d * 7919u + (uint64_t)r * 104729u);
                if (d == D_TIE && s->frac > 30)
                    continue;
                gen(d, in, cs, ks[ik], a, b, s->frac);
                v = sim_dot(s, a, b, ks[ik]);
                v = qf_format_decode(out, qf_format_encode(out, v, c->out_round, 0, 0, 0));
                qf_dot_acc_init(&ex);
                qf_dot_acc_init(&ab);
                qf_dot_acc_add_dot(&ex, &ab, ks[ik], a, 1, b, 1, NULL, NULL);
                err = fabs(qf_dot_acc_error(&ex, v));
                absu = qf_dot_acc_get_d(&ab, QF_ROUND_UP);
                exact = qf_dot_acc_get_d(&ex, QF_ROUND_RNE);
                qf_bound_apply(&coef, 1, &absu, &exact, &bnd);
                o.cases++;
                if (err > bnd) {
                    if (o.violations++ < 3)
                        fprintf(stderr, "  K=%zu dist=%d rep=%d: err %.6g > bound %.6g (seed %llu)\n", ks[ik],
                                d, r, err, bnd, (unsigned long long)seed);
                }
                if (bnd > 0 && err / bnd > o.max_util)
                    o.max_util = err / bnd;
            }
    }
    free(a);
    free(b);
    return o;
}

static const size_t KS[] = {1, 2, 7, 33, 128, 513, 2048, 4096};
#define NK (sizeof KS / sizeof KS[0])

static int reps(void)
{
    return (int)qf_test_iters(8);
}

static void expect_holds(const sim *s, const qf_arith_claim *c, const qf_format *in, const qf_format *out,
                         double min_util)
{
    outcome o = run(s, c, in, out, KS, NK, reps());
    fprintf(stderr, "  %zu cases, max utilization %.3f\n", o.cases, o.max_util);
    ck_assert_uint_eq(o.violations, 0);
    /* the bound is not vacuous: some case uses a good part of it */
    ck_assert(o.max_util > min_util);
}

START_TEST(test_f32_sequential)
{
    sim s = {23, QF_ROUND_RNE, 1, 0, 0, 0, 0};
    qf_arith_claim c = qf_arith_claim_default();
    /* the tie case reaches (K-1) u against gamma_K: utilization near 1 */
    expect_holds(&s, &c, qf_format_get(QF_BFLOAT16), qf_format_get(QF_FLOAT32), 0.9);
    expect_holds(&s, &c, qf_format_get(QF_FLOAT16), qf_format_get(QF_BFLOAT16), 0.01);
}
END_TEST

START_TEST(test_f32_truncating)
{
    sim s = {23, QF_ROUND_RTZ, 1, 0, 0, 0, 0};
    qf_arith_claim c = qf_arith_claim_default();
    qf_bound_coef coef;
    c.acc_round = QF_ROUND_RTZ;
    c.out_round = QF_ROUND_RTZ;
    expect_holds(&s, &c, qf_format_get(QF_BFLOAT16), qf_format_get(QF_FLOAT32), 0.1);
    /* the probabilistic bound does not hold for truncation (docs/numerics.md#error-bounds) */
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 1024, 0, qf_format_get(QF_FLOAT32), 3, &coef), QF_OK);
    ck_assert(isnan(coef.prob));
}
END_TEST

START_TEST(test_block_fma)
{
    /* H100 fp16/bf16: block 16, 25 fraction bits, nearest (ideal block FMA) */
    sim s = {25, QF_ROUND_RNE, 16, 0, 0, 0, 0};
    qf_arith_claim c = qf_arith_claim_default();
    c.acc_frac_bits = 25;
    c.block_fma = 16;
    expect_holds(&s, &c, qf_format_get(QF_FLOAT16), qf_format_get(QF_FLOAT32), 0.2);
    /* V100-like: block 4, 23 bits, aligned terms truncated, toward zero */
    {
        sim t = {23, QF_ROUND_RTZ, 4, 1, 0, 0, 0};
        qf_arith_claim d = qf_arith_claim_default();
        d.block_fma = 4;
        d.acc_round = QF_ROUND_RTZ;
        d.align_truncates = 1;
        d.out_round = QF_ROUND_RTZ;
        expect_holds(&t, &d, qf_format_get(QF_FLOAT16), qf_format_get(QF_FLOAT32), 0.02);
    }
}
END_TEST

START_TEST(test_fp8_promotion)
{
    /* H100 fp8 wgmma: 13 fraction bits, block 32, truncating, promoted
     * every 128 into float32 (DeepSeek-V3), bf16 output */
    sim s = {13, QF_ROUND_RTZ, 32, 1, 0, 128, 0};
    qf_arith_claim c = qf_arith_claim_default();
    c.acc_frac_bits = 13;
    c.block_fma = 32;
    c.acc_round = QF_ROUND_RTZ;
    c.align_truncates = 1;
    c.promote_interval = 128;
    c.promote_format = QF_FLOAT32;
    expect_holds(&s, &c, qf_format_get(QF_FLOAT8_E4M3FN), qf_format_get(QF_BFLOAT16), 0.005);
    /* without promotion, claimed as such */
    s.promote = 0;
    c.promote_interval = 0;
    expect_holds(&s, &c, qf_format_get(QF_FLOAT8_E4M3FN), qf_format_get(QF_FLOAT32), 0.005);
}
END_TEST

START_TEST(test_f16_acc_and_splitk)
{
    sim s = {10, QF_ROUND_RNE, 1, 0, 0, 0, 0};
    qf_arith_claim c = qf_arith_claim_default();
    c.acc_format = QF_FLOAT16;
    /* values stay far inside float16's range for K <= 2048 */
    expect_holds(&s, &c, qf_format_get(QF_FLOAT8_E4M3FN), qf_format_get(QF_FLOAT16), 0.5);
    {
        sim t = {23, QF_ROUND_RNE, 1, 0, 0, 0, 4};
        qf_arith_claim d = qf_arith_claim_default();
        d.sum_order = QF_SUM_SPLITK;
        d.split_k = 4;
        expect_holds(&t, &d, qf_format_get(QF_BFLOAT16), qf_format_get(QF_FLOAT32), 0.5);
    }
}
END_TEST

/* A float16 accumulator claimed as float32 is caught: errors far outside
 * the float32 bound, FAILED through the metrics and the verdict. */
START_TEST(test_f16_claimed_f32_fails)
{
    static const size_t ks[] = {256, 1024};
    sim s = {10, QF_ROUND_RNE, 1, 0, 0, 0, 0};
    qf_arith_claim c = qf_arith_claim_default();
    const qf_format *in = qf_format_get(QF_BFLOAT16), *out = qf_format_get(QF_FLOAT32);
    outcome o = run(&s, &c, in, out, ks, 2, 2);
    ck_assert_uint_gt(o.violations, 0);
    ck_assert(o.max_util > 10);
    {
        enum { K = 512, N = 16 };
        static double a[K], b[K];
        double got[N], exact[N], absu[N], bnd[N];
        qf_bound_coef coef;
        qf_metrics m;
        qf_metrics_input mi = {0};
        qf_policy p = qf_policy_default(1);
        qf_evidence ev = qf_evidence_default();
        qf_decision d;
        size_t j;
        ck_assert_int_eq(qf_bound_gemm_coef(&c, K, 0, out, 3, &coef), QF_OK);
        for (j = 0; j < N; j++) {
            qf_dot_acc ex, ab;
            gen(D_POSITIVE, in, qf_test_seed() + j, K, a, b, 10);
            got[j] = sim_dot(&s, a, b, K);
            qf_dot_acc_init(&ex);
            qf_dot_acc_init(&ab);
            qf_dot_acc_add_dot(&ex, &ab, K, a, 1, b, 1, NULL, NULL);
            exact[j] = qf_dot_acc_get_d(&ex, QF_ROUND_RNE);
            absu[j] = qf_dot_acc_get_d(&ab, QF_ROUND_UP);
        }
        qf_bound_apply(&coef, N, absu, exact, bnd);
        mi.out = out, mi.n = N, mi.got = got, mi.exact = exact, mi.bound = bnd, mi.cols = 4;
        ck_assert_int_eq(qf_metrics_compute(&mi, &m, NULL), QF_OK);
        ev.bound = 1;
        ck_assert_int_eq(qf_verdict_decide(&ev, &m, &p, NULL, &d), QF_OK);
        fprintf(stderr, "  %s: %s\n", qf_verdict_name(d.verdict), d.reason);
        ck_assert_int_eq(d.verdict, QF_VERDICT_FAILED);
        ck_assert_int_eq(d.cause, QF_CAUSE_BOUND);
    }
}
END_TEST

START_TEST(test_coef_shapes)
{
    qf_arith_claim c = qf_arith_claim_default(), bad;
    qf_bound_coef a, b;
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *bf16 = qf_format_get(QF_BFLOAT16);
    double u = 0x1p-24;
    /* sequential K: (1+u)^K - 1 <= gamma_K, and close to K u */
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 1000, 0, f32, 3, &a), QF_OK);
    ck_assert(a.rel_abs >= 1000 * u && a.rel_abs <= 1000 * u / (1 - 1000 * u) * 1.0001);
    ck_assert(a.rel_out == 0); /* float32 accumulator into float32: exact */
    ck_assert(a.chain == 1000);
    /* probabilistic (informational) is smaller for large K */
    ck_assert(a.prob < a.rel_abs);
    /* pairwise: chain 1 + ceil(log2 K) */
    c.sum_order = QF_SUM_PAIRWISE;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 1024, 0, f32, 0, &b), QF_OK);
    ck_assert(b.chain == 11);
    ck_assert(isnan(b.prob));
    /* output rounding to bf16 adds u_out = 2^-8 (docs/numerics.md#error-bounds), 1 ulp = 2^-7 for RTZ */
    c = qf_arith_claim_default();
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 16, 0, bf16, 0, &a), QF_OK);
    ck_assert(a.rel_out >= 0x1p-8 && a.rel_out < 0x1p-8 * 1.001);
    c.out_round = QF_ROUND_RTZ;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 16, 0, bf16, 0, &a), QF_OK);
    ck_assert(a.rel_out >= 0x1p-7 && a.rel_out < 0x1p-7 * 1.001);
    /* epilogue roundings lengthen the chain */
    c = qf_arith_claim_default();
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 16, 2, f32, 0, &a), QF_OK);
    ck_assert(a.chain == 18);
    /* claim checks */
    bad = c, bad.block_fma = 0;
    ck_assert_int_eq(qf_bound_gemm_coef(&bad, 16, 0, f32, 0, &a), QF_EINVAL);
    bad = c, bad.acc_format = QF_INT8;
    ck_assert_int_eq(qf_arith_claim_check(&bad), QF_EFORMAT);
    bad = c, bad.sum_order = QF_SUM_SPLITK, bad.split_k = 0;
    ck_assert_int_eq(qf_arith_claim_check(&bad), QF_EINVAL);
    ck_assert(qf_bound_acc_u(&c) == u);
    c.acc_frac_bits = 13;
    ck_assert(qf_bound_acc_u(&c) == 0x1p-14);
    {
        double e = 1.0, ab = NAN, bd;
        qf_bound_apply(&a, 1, &ab, &e, &bd);
        ck_assert(isinf(bd));
    }
}
END_TEST

/* Growth exponent of simulated accumulators (qf_metrics_growth): the mean
 * relative error over K = 64 .. 4096 on positive data grows like sqrt(K)
 * for round-to-nearest (random walk) and like K for truncation (docs/numerics.md#error-bounds
 * "Error bounds"). */
static double growth_of(qf_round rnd)
{
    enum { NKG = 7 };
    sim s = {13, rnd, 1, 0, 0, 0, 0};
    const qf_format *in = qf_format_get(QF_BFLOAT16);
    double kk[NKG], err[NKG], slope, r2;
    double *a = malloc(4096 * sizeof *a), *b = malloc(4096 * sizeof *b);
    int i, r, reps = (int)qf_test_iters(16);
    ck_assert(a && b);
    for (i = 0; i < NKG; i++) {
        size_t k = (size_t)64 << i;
        kk[i] = (double)k;
        err[i] = 0;
        for (r = 0; r < reps; r++) {
            qf_dot_acc ex;
            double v;
            gen(D_POSITIVE, in, qf_test_seed() + 31 * (uint64_t)i + (uint64_t)r, k, a, b, 13);
            v = sim_dot(&s, a, b, k);
            qf_dot_acc_init(&ex);
            qf_dot_acc_add_dot(&ex, NULL, k, a, 1, b, 1, NULL, NULL);
            err[i] += fabs(qf_dot_acc_error(&ex, v)) / qf_dot_acc_get_d(&ex, QF_ROUND_RNE) / reps;
        }
    }
    free(a);
    free(b);
    ck_assert_int_eq(qf_metrics_growth(NKG, kk, err, &slope, NULL, &r2), QF_OK);
    fprintf(stderr, "  growth %s: slope %.3f, R^2 %.3f\n", qf_round_name(rnd), slope, r2);
    return slope;
}

START_TEST(test_growth_exponent)
{
    double rne = growth_of(QF_ROUND_RNE), rtz = growth_of(QF_ROUND_RTZ);
    ck_assert(rne > 0.25 && rne < 0.8);
    ck_assert(rtz > 0.85 && rtz < 1.15);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/gemm", "gemm", 120, NULL, NULL,
                        QF_TESTS(test_coef_shapes, test_f32_sequential, test_f32_truncating, test_block_fma,
                                 test_fp8_promotion, test_f16_acc_and_splitk, test_f16_claimed_f32_fails,
                                 test_growth_exponent));
}
