/* t-welford.c: qf_bound_norm for a claim with var_algo = Welford
 * (docs/bounds.md "LayerNorm with Welford's algorithm").
 *   - A plain float32 Welford LayerNorm (the steps of
 *     layernorm.cpu.welford.f32) stays inside the bound against the MPFR
 *     reference, on rows with mean 0, 3 and 1000 (std 1 and 10), n from 1
 *     to 4096, with and without weight and bias; the bound is not vacuous
 *     (some element uses more than 1% of it).
 *   - Detection: the one-pass variance E[x^2] - E[x]^2 under the same
 *     claim leaves the bound on mean-1000 rows, and so does a Welford that
 *     updates M2 with delta^2 (forgetting the (k-1)/k factor) on mean-0
 *     rows of 64.
 *   - The claim fields of ABI 2: qf_arith_claim_check and
 *     qf_arith_claim_p_format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_ref.h"
#include "qf_test.h"

static double unif(uint64_t seed, uint64_t i)
{
    return (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53;
}

static double gauss(uint64_t seed, uint64_t i)
{
    double u1 = unif(seed, 2 * i) + 0x1p-54, u2 = unif(seed, 2 * i + 1);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

typedef enum variant { V_WELFORD, V_ONEPASS, V_NO_FACTOR } variant;

/* float32 LayerNorm; the variance as the variant says. */
static void layernorm_f32(variant vr, const double *x, size_t n, const double *w, const double *bias,
                          double eps, double *y)
{
    float mean = 0, m2 = 0, v, r;
    size_t k;
    if (vr == V_ONEPASS) {
        float s = 0, s2 = 0;
        for (k = 0; k < n; k++) {
            float xk = (float)x[k], sq = xk * xk;
            s = s + xk;
            s2 = s2 + sq;
        }
        mean = s / (float)n;
        m2 = s2 - s * mean;
        if (m2 < 0)
            m2 = 0;
    } else {
        for (k = 0; k < n; k++) {
            float xk = (float)x[k], delta = xk - mean, st = delta / (float)(k + 1), d2;
            mean = mean + st;
            d2 = vr == V_NO_FACTOR ? delta : xk - mean;
            d2 = delta * d2;
            m2 = m2 + d2;
        }
    }
    v = m2 / (float)n;
    v = (float)((double)v + eps);
    r = 1.0f / sqrtf(v);
    for (k = 0; k < n; k++) {
        float t = ((float)x[k] - mean) * r;
        if (w)
            t = t * (float)w[k];
        if (bias)
            t = t + (float)bias[k];
        y[k] = t;
    }
}

/* Runs one row; returns the largest error / bound. */
static double row(variant vr, size_t n, double offset, double stdev, int affine, uint64_t s, size_t *viol)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *b = malloc(n * sizeof *b);
    double *w = malloc(n * sizeof *w), *bias = malloc(n * sizeof *bias), eps = 0x1p-17, worst = 0;
    qf_ref_out ref;
    qf_ref_norm_params p = {1, n, eps, affine ? w : NULL, affine ? bias : NULL, 0};
    size_t i;
    c.var_algo = QF_VAR_WELFORD;
    ck_assert(x && y && b && w && bias);
    for (i = 0; i < n; i++) {
        x[i] = (float)(offset + stdev * gauss(s, i));
        w[i] = (float)(1 + 0.125 * gauss(s + 1, i));
        bias[i] = (float)(0.125 * gauss(s + 2, i));
    }
    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
    ck_assert_int_eq(qf_ref_layernorm(NULL, &p, x, &ref), QF_OK);
    layernorm_f32(vr, x, n, p.weight, p.bias, eps, y);
    ck_assert_int_eq(qf_bound_norm(&c, f32, n, x, p.weight, p.bias, eps, 1, ref.value, b), QF_OK);
    for (i = 0; i < n; i++) {
        double e = fabs(y[i] - ref.value[i]);
        if (!(e <= b[i]) && vr == V_WELFORD && (*viol)++ < 5)
            fprintf(stderr, "  n %zu offset %g elem %zu: got %.9g exact %.17g err %.3g > bound %.3g\n", n,
                    offset, i, y[i], ref.value[i], e, b[i]);
        if (!(e <= b[i]) && vr != V_WELFORD)
            (*viol)++;
        if (b[i] > 0 && e / b[i] > worst)
            worst = e / b[i];
    }
    qf_ref_out_free(&ref);
    free(x), free(y), free(b), free(w), free(bias);
    return worst;
}

START_TEST(test_welford_inside)
{
    static const size_t ns[] = {1, 2, 7, 64, 1000, 4096};
    static const double offsets[] = {0, 3, 1000};
    uint64_t seed = qf_test_seed();
    long reps = qf_test_iters(2), r;
    size_t in, io, viol = 0, rows = 0;
    double util = 0;
    int affine, sd;
    for (in = 0; in < sizeof ns / sizeof ns[0]; in++)
        for (io = 0; io < 3; io++)
            for (sd = 0; sd < 2; sd++)
                for (affine = 0; affine < 2; affine++)
                    for (r = 0; r < reps; r++) {
                        double u = row(V_WELFORD, ns[in], offsets[io], sd ? 10 : 1, affine,
                                       seed + 1000 * in + 100 * io + 10 * (uint64_t)sd +
                                           5 * (uint64_t)affine + (uint64_t)r * 77777,
                                       &viol);
                        rows++;
                        if (u > util)
                            util = u;
                    }
    fprintf(stderr, "  welford: %zu rows, max utilization %.3f\n", rows, util);
    ck_assert_uint_eq(viol, 0);
    ck_assert(util > 0.01);
}
END_TEST

START_TEST(test_welford_detects)
{
    uint64_t seed = qf_test_seed();
    size_t v1 = 0, v2 = 0, i;
    for (i = 0; i < 4; i++) {
        row(V_ONEPASS, 256, 1000, 1, 1, seed + i, &v1);
        row(V_NO_FACTOR, 64, 0, 1, 1, seed + 100 + i, &v2);
    }
    fprintf(stderr, "  outside the Welford bound: one-pass %zu of 1024, no (k-1)/k factor %zu of 256\n", v1,
            v2);
    ck_assert_uint_gt(v1, 0);
    ck_assert_uint_gt(v2, 0);
}
END_TEST

START_TEST(test_claim_fields)
{
    qf_arith_claim c = qf_arith_claim_default(), z;
    ck_assert_int_eq(c.attn_kv_tile, 0);
    ck_assert_int_eq(c.var_algo, QF_VAR_TWO_PASS);
    ck_assert_ptr_null(qf_arith_claim_p_format(&c)); /* float64: none */
    c.attn_p_format = QF_FLOAT32;
    ck_assert_ptr_null(qf_arith_claim_p_format(&c)); /* the compute format: none */
    c.attn_p_format = QF_BFLOAT16;
    ck_assert_ptr_eq(qf_arith_claim_p_format(&c), qf_format_get(QF_BFLOAT16));
    c.attn_p_format = QF_FLOAT16;
    ck_assert_ptr_eq(qf_arith_claim_p_format(&c), qf_format_get(QF_FLOAT16));
    ck_assert_int_eq(qf_arith_claim_check(&c), QF_OK);
    z = c;
    z.attn_kv_tile = -1;
    ck_assert_int_eq(qf_arith_claim_check(&z), QF_EINVAL);
    z = c;
    z.var_algo = (qf_var_algo)7;
    ck_assert_int_eq(qf_arith_claim_check(&z), QF_EINVAL);
    z = c;
    z.attn_p_format = QF_INT8;
    ck_assert_int_eq(qf_arith_claim_check(&z), QF_EFORMAT);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/welford", "welford", 120, NULL, NULL,
                        QF_TESTS(test_claim_fields, test_welford_inside, test_welford_detects));
}
