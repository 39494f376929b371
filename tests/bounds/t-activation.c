/* t-activation.c: qf_bound_activation (docs/bounds.md "Activations").
 *   - float32 implementations of sigmoid, silu, gelu_erf, gelu_tanh (the
 *     cancellation-free forms of activation.cpu.f32, with glibc's expf and
 *     erfcf, claimed at elem_ulp 4) and their GLU forms stay inside the
 *     bound against the MPFR reference, on float32 values spread over
 *     [-120, 120] (subnormal and underflowing outputs included) and on
 *     normal data; the bound is not vacuous.
 *   - Detection: the textbook forms the kernel avoids, 0.5 x (1 + erf(x /
 *     sqrt 2)) and 1 / (1 + expf(-x)) with x sigmoid(x) for silu, leave the
 *     bound (cancellation for negative x, overflow of expf(-x)). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_ref.h"
#include "qf_test.h"

static float sigm(float x)
{
    float e = expf(-fabsf(x)), d = 1.0f + e;
    return x >= 0 ? 1.0f / d : e / d;
}

/* The kernel's forms (textbook = 0), or the textbook ones (1). */
static float act_f32(qf_ref_act a, float x, int textbook)
{
    switch (a) {
    case QF_REF_ACT_GELU_ERF: {
        float t, h = 0.5f * x;
        if (textbook) {
            t = x * 0.70710678118654752f;
            t = 1.0f + erff(t);
            return h * t;
        }
        t = -x * 0.70710678118654752f;
        return h * erfcf(t);
    }
    case QF_REF_ACT_GELU_TANH: {
        float x3 = x * x, in, t;
        x3 = x3 * x;
        in = 0.044715f * x3;
        in = x + in;
        t = 0.79788456080286536f * in;
        t = 2.0f * t;
        return x * sigm(t);
    }
    case QF_REF_ACT_SILU:
        if (textbook) {
            float d = 1.0f + expf(-x);
            return x / d;
        }
        return x * sigm(x);
    case QF_REF_ACT_SIGMOID:
    default: return sigm(x);
    }
}

static double spread(uint64_t seed, uint64_t i)
{
    /* sign, magnitude 2^-20 .. 2^7 log-uniform: underflow, cancellation and
     * overflow regions alike */
    uint64_t w = qf_rng_u64(seed, i);
    double m = ldexp(1 + (double)(w >> 40) * 0x1p-24, (int)((w >> 8) % 28) - 20);
    return (float)((w & 1) ? -m : m);
}

/* n elements of act (GLU when glu): violations counted, worst utilization
 * returned. */
static double run(qf_ref_act a, int glu, int textbook, size_t n, uint64_t seed, size_t *viol)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    double *x = malloc(n * sizeof *x), *up = malloc(n * sizeof *up), *y = malloc(n * sizeof *y);
    double *b = malloc(n * sizeof *b), worst = 0;
    qf_ref_out ref;
    size_t i;
    c.elem_ulp = 4;
    ck_assert(x && up && y && b);
    for (i = 0; i < n; i++) {
        x[i] = i % 2 ? spread(seed, i) : (float)(3 * ((double)(qf_rng_u64(seed + 1, i) >> 11) * 0x1p-52 - 1));
        up[i] = (float)ldexp((double)(qf_rng_u64(seed + 2, i) >> 11) * 0x1p-53 - 0.5, 3);
        y[i] = act_f32(a, (float)x[i], textbook);
        if (glu)
            y[i] = (float)y[i] * (float)up[i];
    }
    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
    if (glu)
        ck_assert_int_eq(qf_ref_glu(NULL, a, x, up, n, &ref), QF_OK);
    else
        ck_assert_int_eq(qf_ref_activation(NULL, a, x, n, &ref), QF_OK);
    ck_assert_int_eq(qf_bound_activation(&c, f32, (int)a, glu, n, x, glu ? up : NULL, ref.value, b), QF_OK);
    for (i = 0; i < n; i++) {
        double e = fabs(y[i] - ref.value[i]);
        if (!(e <= b[i])) {
            if (!textbook && *viol < 5)
                fprintf(stderr, "  act %d glu %d x %.9g: got %.9g exact %.17g err %.3g > bound %.3g\n",
                        (int)a, glu, x[i], y[i], ref.value[i], e, b[i]);
            (*viol)++;
        }
        if (b[i] > 0 && e / b[i] > worst)
            worst = e / b[i];
    }
    qf_ref_out_free(&ref);
    free(x), free(up), free(y), free(b);
    return worst;
}

START_TEST(test_inside)
{
    static const qf_ref_act acts[] = {QF_REF_ACT_SIGMOID, QF_REF_ACT_SILU, QF_REF_ACT_GELU_ERF,
                                      QF_REF_ACT_GELU_TANH};
    static const char *names[] = {"sigmoid", "silu", "gelu_erf", "gelu_tanh"};
    uint64_t seed = qf_test_seed();
    size_t n = (size_t)qf_test_iters(4000), ia, viol = 0;
    int glu;
    for (ia = 0; ia < 4; ia++)
        for (glu = 0; glu < 2; glu++) {
            double u = run(acts[ia], glu, 0, n, seed + 10 * ia + (uint64_t)glu, &viol);
            fprintf(stderr, "  %s%s: max utilization %.3f\n", names[ia], glu ? " (GLU)" : "", u);
            ck_assert(u > 0.01);
        }
    ck_assert_uint_eq(viol, 0);
}
END_TEST

START_TEST(test_textbook_detected)
{
    uint64_t seed = qf_test_seed();
    size_t v1 = 0, v2 = 0;
    run(QF_REF_ACT_GELU_ERF, 0, 1, 4000, seed, &v1);
    run(QF_REF_ACT_SILU, 0, 1, 4000, seed + 1, &v2);
    fprintf(stderr, "  outside the bound: gelu 0.5 x (1 + erf) %zu of 4000, silu x / (1 + expf(-x)) %zu\n",
            v1, v2);
    ck_assert_uint_gt(v1, 0);
    ck_assert_uint_gt(v2, 0);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/activation", "activation", 120, NULL, NULL,
                        QF_TESTS(test_inside, test_textbook_detected));
}
