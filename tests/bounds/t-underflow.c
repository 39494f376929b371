/* t-underflow.c: the nonlinear bounds when an intermediate falls below
 * float32's smallest normal, where its rounding is absolute (a subnormal
 * step), not u relative (docs/bounds.md: "Attention" step 7, "Online
 * softmax", RMSNorm "Underflow", RoPE step 4).  Each case is a float32
 * computation of the claimed model whose error the relative terms alone
 * cannot cover; the bound must hold, and must not be vacuous. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_test.h"

/* Attention, one query, two keys: scores 0 and -100, v = 0 and 1e30.  The
 * weight expf(-100) = 3.7e-44 is subnormal in float32 (1.2% off), and
 * carries the whole output: O = 3.7e-14 with an error near 4.6e-16. */
START_TEST(test_attention_exp_underflow)
{
    qf_arith_claim c = qf_arith_claim_default();
    const double s[2] = {0, -100}, s_abs[2] = {0, 100}, v[2] = {0, 1e30};
    double exact = v[1] * exp(-100.0) / (1 + exp(-100.0)), bound, err;
    float p0 = expf(0.0f - 0.0f), p1 = expf(-100.0f - 0.0f), num, den, o;
    size_t tile;
    num = p0 * 0.0f;
    num = num + p1 * 1e30f;
    den = p0 + p1;
    o = num / den;
    err = fabs((double)o - exact);
    ck_assert_msg(err > 1e-17, "the case must make an error (%g)", err);
    for (tile = 0; tile <= 1; tile++) {
        ck_assert_int_eq(qf_bound_attention(&c, qf_format_get(QF_FLOAT32), 2, 1, 1, s, s_abs, v, NULL, tile,
                                            &exact, &bound),
                         QF_OK);
        fprintf(stderr, "attention tile %zu: error %g, bound %g (utilization %.3f)\n", tile, err, bound,
                err / bound);
        ck_assert_msg(err <= bound, "tile %zu: error %g > bound %g", tile, err, bound);
        ck_assert_msg(bound < 0.5 * exact, "vacuous bound %g for %g", bound, exact);
    }
}
END_TEST

/* Online softmax (tiles of 1) over an increasing row: every element
 * rescales the running sum, the worst case the bound counts.  The float32
 * online normalizer stays inside, and the bound is not vacuous. */
START_TEST(test_online_softmax_increasing)
{
    enum { N = 4096 };
    qf_arith_claim c = qf_arith_claim_default();
    static double x[N], y[N], bound[N];
    double sum = 0, m, worst = 0;
    float fm = -INFINITY, l = 0;
    size_t i;
    c.attn_kv_tile = 1;
    for (i = 0; i < N; i++)
        x[i] = (double)(float)(-20.0 + 40.0 * (double)i / N);
    m = x[N - 1];
    for (i = 0; i < N; i++)
        sum += exp(x[i] - m);
    for (i = 0; i < N; i++)
        y[i] = exp(x[i] - m) / sum;
    for (i = 0; i < N; i++) {
        float z = (float)x[i];
        if (z > fm) {
            float f = fm == -INFINITY ? 0.0f : expf(fm - z);
            l = l * f;
            l = l + 1.0f;
            fm = z;
        } else {
            l = l + expf(z - fm);
        }
    }
    ck_assert_int_eq(qf_bound_softmax(&c, qf_format_get(QF_FLOAT32), N, x, 1.0, y, bound), QF_OK);
    for (i = 0; i < N; i++) {
        float e = expf((float)x[i] - fm), yy = e / l;
        double err = fabs((double)yy - y[i]);
        ck_assert_msg(err <= bound[i], "element %zu: error %g > bound %g", i, err, bound[i]);
        ck_assert_msg(bound[i] <= 1e-2 * y[i] + 1e-40, "element %zu: vacuous bound", i);
        if (err / bound[i] > worst)
            worst = err / bound[i];
    }
    fprintf(stderr, "online softmax, increasing row of %d: utilization %.3f\n", N, worst);
}
END_TEST

/* RMSNorm of a row whose entries are subnormal multiples: the products
 * d r and (d r) w land below the smallest normal. */
START_TEST(test_rmsnorm_subnormal_product)
{
    enum { N = 4 };
    qf_arith_claim c = qf_arith_claim_default();
    const double x[N] = {0x1p-149 * 3, 1.0, -1.0, 0.5}, w[N] = {0.7, 1, 1, 1};
    double v = 0, exact[N], bound[N];
    float fs = 0, r;
    size_t i;
    for (i = 0; i < N; i++)
        v += x[i] * x[i];
    v /= N;
    for (i = 0; i < N; i++)
        exact[i] = x[i] / sqrt(v) * (double)(float)w[i];
    for (i = 0; i < N; i++)
        fs = fs + (float)x[i] * (float)x[i];
    r = 1.0f / sqrtf(fs / (float)N);
    ck_assert_int_eq(qf_bound_norm(&c, qf_format_get(QF_FLOAT32), N, x, w, NULL, 0x1p-40, 0, exact, bound),
                     QF_OK);
    for (i = 0; i < N; i++) {
        float yy = ((float)x[i] * r) * (float)w[i];
        double err = fabs((double)yy - exact[i]);
        ck_assert_msg(err <= bound[i], "element %zu: error %g > bound %g", i, err, bound[i]);
    }
    /* The subnormal element errs by about a third of a step: more than
     * u relative to it could cover. */
    ck_assert(fabs((double)(((float)x[0] * r) * (float)w[0]) - exact[0]) > 0x1p-24 * fabs(exact[0]) * 4);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/underflow", "underflow", 0, NULL, NULL,
                        QF_TESTS(test_attention_exp_underflow, test_online_softmax_increasing,
                                 test_rmsnorm_subnormal_product));
}
