/* t-formula.c: the activation claim fields of ABI 3 (qf_arith_claim
 * act_formula, math_abs_err, math_rel_err; docs/bounds.md "Activation
 * formulas").
 *   - gelu evaluated through the tanh form where the op asks for gelu
 *     (erf): inside the bound that claims act_formula gelu_tanh, and
 *     outside the bound of the op's own formula (the formulas differ by up
 *     to about 5e-4, far more than float32 rounding);
 *   - silu as x / (1 + expf(-x)) in float32 (act_formula silu_exp) inside
 *     its bound on [-120, 120];
 *   - a math library claimed as (abs_err, rel_err) = (2^-20, 0): an erfcf
 *     perturbed by 2^-21 absolutely stays inside; with the default
 *     elem_ulp the same kernel leaves the bound.
 * Reference: MPFR (qf_ref_activation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_ref.h"
#include "qf_test.h"

enum { IMPL_GELU_TANH, IMPL_SILU_EXP, IMPL_GELU_ERF_NOISY };

static float impl(int which, float x)
{
    switch (which) {
    case IMPL_GELU_TANH: {
        /* x sigmoid(2 c1 (x + c2 x^3)), sigmoid from expf(-|a|) */
        float x3 = x * x * x, in = x + 0.044715f * x3, a = 2.0f * (0.7978845608f * in);
        float e = expf(-fabsf(a)), d = 1.0f + e, s = a >= 0 ? 1.0f / d : e / d;
        return x * s;
    }
    case IMPL_SILU_EXP: return x / (1.0f + expf(-x));
    default: {
        /* 0.5 x erfc(-x / sqrt 2), erfcf off by 2^-21 absolutely */
        float t = -x * 0.7071067812f, r = erfcf(t) + 0x1p-21f;
        return (0.5f * x) * r;
    }
    }
}

/* Violations of the bound of claim c for op act over n points. */
static long violations(const qf_arith_claim *c, qf_ref_act act, int which, long n, double *worst)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    uint64_t seed = qf_test_seed();
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *b = malloc(n * sizeof *b);
    qf_ref_out ref;
    long i, bad = 0;
    ck_assert(x && y && b);
    for (i = 0; i < n; i++) {
        double u = (double)(qf_rng_u64(seed, (uint64_t)i) >> 11) * 0x1p-53;
        x[i] = (float)(i % 2 ? 240 * u - 120 : 8 * u - 4);
        y[i] = impl(which, (float)x[i]);
    }
    ck_assert_int_eq(qf_ref_out_alloc(&ref, (size_t)n), QF_OK);
    ck_assert_int_eq(qf_ref_activation(NULL, act, x, (size_t)n, &ref), QF_OK);
    ck_assert_int_eq(qf_bound_activation(c, f32, (int)act, 0, (size_t)n, x, NULL, ref.value, b), QF_OK);
    *worst = 0;
    for (i = 0; i < n; i++) {
        double e = fabs(y[i] - ref.value[i]);
        if (b[i] > 0 && e / b[i] > *worst)
            *worst = e / b[i];
        bad += !(e <= b[i]);
    }
    qf_ref_out_free(&ref);
    free(x);
    free(y);
    free(b);
    return bad;
}

START_TEST(formulas)
{
    long n = qf_test_iters(4000), bad;
    double w;
    qf_arith_claim c = qf_arith_claim_default();
    c.elem_ulp = 4;
    /* gelu (erf) computed through tanh */
    bad = violations(&c, QF_REF_ACT_GELU_ERF, IMPL_GELU_TANH, n, &w);
    fprintf(stderr, "gelu_tanh for gelu, op's formula claimed: %ld violations, max utilization %.1f\n", bad, w);
    ck_assert_msg(bad > 0, "the tanh form passed as the erf form");
    c.act_formula = QF_ACT_FORMULA_GELU_TANH;
    bad = violations(&c, QF_REF_ACT_GELU_ERF, IMPL_GELU_TANH, n, &w);
    fprintf(stderr, "gelu_tanh for gelu, gelu_tanh claimed: %ld violations, max utilization %.3f\n", bad, w);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(w > 0.5, "the formula difference dominates, the bound should be nearly reached: %.3f", w);
    /* silu as x / (1 + expf(-x)) */
    c.act_formula = QF_ACT_FORMULA_SILU_EXP;
    bad = violations(&c, QF_REF_ACT_SILU, IMPL_SILU_EXP, n, &w);
    fprintf(stderr, "silu_exp: %ld violations, max utilization %.3f\n", bad, w);
    ck_assert_int_eq(bad, 0);
    ck_assert(w > 0.05);
    /* a formula that computes another function is refused */
    {
        double x0 = 1, y0 = 0.5, b0;
        ck_assert_int_eq(qf_bound_activation(&c, qf_format_get(QF_FLOAT32), QF_REF_ACT_GELU_ERF, 0, 1, &x0, NULL,
                                             &y0, &b0),
                         QF_EINVAL);
    }
}
END_TEST

START_TEST(math_accuracy_pair)
{
    long n = qf_test_iters(4000), bad;
    double w;
    qf_arith_claim c = qf_arith_claim_default();
    bad = violations(&c, QF_REF_ACT_GELU_ERF, IMPL_GELU_ERF_NOISY, n, &w);
    fprintf(stderr, "erfcf + 2^-21, elem_ulp claimed: %ld violations\n", bad);
    ck_assert_msg(bad > 0, "an erfc off by 2^-21 passed as a 2-ulp erfc");
    c.math_abs_err = 0x1p-20;
    c.math_rel_err = 0x1p-22;
    bad = violations(&c, QF_REF_ACT_GELU_ERF, IMPL_GELU_ERF_NOISY, n, &w);
    fprintf(stderr, "erfcf + 2^-21, (abs, rel) = (2^-20, 2^-22) claimed: %ld violations, max utilization %.3f\n",
            bad, w);
    ck_assert_int_eq(bad, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bounds/formula");
    TCase *tc = tcase_create("formula");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, formulas);
    tcase_add_test(tc, math_accuracy_pair);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
