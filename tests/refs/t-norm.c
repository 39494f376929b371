/* t-norm.c: qf_ref_rmsnorm / qf_ref_layernorm.
 *
 * Oracle: the formulas evaluated naively in MPFR at 2048 bits (round to
 * nearest), rounded into the target.  Hand-checked constant rows, special
 * values, the doubled-precision check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 2048

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static size_t check_oracle(const qf_ref_opts *o, const qf_ref_norm_params *p, const double *x, int layer,
                           const qf_ref_out *y)
{
    const qf_format *f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    size_t r, j, n = p->cols, und = 0;
    mpfr_t m, v, t, rr;
    mpfr_inits2(OP, m, v, t, rr, (mpfr_ptr)0);
    for (r = 0; r < p->rows; r++) {
        const double *xr = x + r * n;
        mpfr_set_zero(m, 1);
        mpfr_set_zero(v, 1);
        for (j = 0; j < n; j++)
            mpfr_add_d(m, m, xr[j], MPFR_RNDN);
        mpfr_div_ui(m, m, (unsigned long)n, MPFR_RNDN);
        for (j = 0; j < n; j++) {
            mpfr_set_d(t, xr[j], MPFR_RNDN);
            if (layer)
                mpfr_sub(t, t, m, MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(v, v, t, MPFR_RNDN);
        }
        mpfr_div_ui(v, v, (unsigned long)n, MPFR_RNDN);
        mpfr_add_d(v, v, p->eps, MPFR_RNDN);
        mpfr_sqrt(rr, v, MPFR_RNDN);
        for (j = 0; j < n; j++) {
            size_t i = r * n + j;
            double want;
            if (y->status[i] == QF_REF_UNDECIDED) {
                und++;
                continue;
            }
            mpfr_set_d(t, xr[j], MPFR_RNDN);
            if (layer)
                mpfr_sub(t, t, m, MPFR_RNDN);
            mpfr_div(t, t, rr, MPFR_RNDN);
            if (p->weight) {
                mpfr_set_d(v, p->weight[j], MPFR_RNDN);
                mpfr_add_d(v, v, p->weight_offset, MPFR_RNDN);
                mpfr_mul(t, t, v, MPFR_RNDN);
            }
            if (p->bias)
                mpfr_add_d(t, t, p->bias[j], MPFR_RNDN);
            want = qf_format_decode(f, qf_format_encode_mpfr(f, t, o->round, o->saturate, 32, 0));
            if (!same(want, y->value[i])) {
                fprintf(stderr, "%s %s round %s row %zu col %zu: got %a want %a (%s) eps %a\n",
                        layer ? "layernorm" : "rmsnorm", f->name, qf_round_name(o->round), r, j, y->value[i],
                        want, qf_ref_status_name((qf_ref_status)y->status[i]), p->eps);
                for (j = 0; j < n; j++)
                    fprintf(stderr, "  x[%zu] = %a\n", j, xr[j]);
                ck_abort_msg("norm disagrees with the oracle (QF_SEED=%llu)",
                             (unsigned long long)qf_test_seed());
            }
        }
    }
    mpfr_clears(m, v, t, rr, (mpfr_ptr)0);
    return und;
}

static qf_ref_out run(const qf_ref_opts *o, const qf_ref_norm_params *p, const double *x, int layer)
{
    qf_ref_out y;
    ck_assert_int_eq(qf_ref_out_alloc(&y, p->rows * p->cols), QF_OK);
    ck_assert_int_eq(layer ? qf_ref_layernorm(o, p, x, &y) : qf_ref_rmsnorm(o, p, x, &y), QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, p->rows * p->cols);
    return y;
}

START_TEST(test_hand)
{
    double c3[4] = {3, 3, 3, 3}, cm[3] = {-0.1, -0.1, -0.1}, pm[2] = {1, -1}, big[2] = {1e300, -1e300};
    double w[4] = {0.5, 2, -3, 0.1}, b[4] = {1, -1, 0.25, 0};
    qf_ref_norm_params p = {1, 4, 0.0, NULL, NULL, 0.0};
    qf_ref_out y;
    size_t j;
    /* RMSNorm of a constant row is sign(c), exactly, with eps = 0 */
    y = run(NULL, &p, c3, 0);
    for (j = 0; j < 4; j++)
        ck_assert(y.value[j] == 1.0 && y.status[j] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    p.cols = 3;
    y = run(NULL, &p, cm, 0);
    for (j = 0; j < 3; j++)
        ck_assert(y.value[j] == -1.0 && y.status[j] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    /* with a weight: exactly the weight */
    p.cols = 4;
    p.weight = w;
    y = run(NULL, &p, c3, 0);
    for (j = 0; j < 4; j++)
        ck_assert(y.value[j] == w[j] && y.status[j] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    /* Gemma: (1 + w) */
    p.weight_offset = 1.0;
    y = run(NULL, &p, c3, 0);
    for (j = 0; j < 4; j++)
        ck_assert(y.value[j] == 1.0 + w[j]);
    qf_ref_out_free(&y);
    /* LayerNorm of a constant row is exactly the bias (eps > 0) */
    p.weight_offset = 0;
    p.eps = 1e-5;
    p.bias = b;
    y = run(NULL, &p, c3, 1);
    for (j = 0; j < 4; j++)
        ck_assert(y.value[j] == b[j] && y.status[j] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    /* LayerNorm of [1, -1] is [1, -1] exactly; huge values do not overflow */
    p.cols = 2, p.eps = 0, p.weight = NULL, p.bias = NULL;
    y = run(NULL, &p, pm, 1);
    ck_assert(y.value[0] == 1 && y.value[1] == -1 && y.n_exact == 2);
    qf_ref_out_free(&y);
    y = run(NULL, &p, big, 1);
    ck_assert(y.value[0] == 1 && y.value[1] == -1 && y.n_exact == 2);
    qf_ref_out_free(&y);
    y = run(NULL, &p, big, 0);
    ck_assert(y.value[0] == 1 && y.value[1] == -1 && y.n_exact == 2);
    qf_ref_out_free(&y);
    /* RMSNorm of [3, 4] = [3/sqrt(12.5), 4/sqrt(12.5)] */
    {
        double x2[2] = {3, 4};
        y = run(NULL, &p, x2, 0);
        ck_assert(fabs(y.value[0] - 3 / sqrt(12.5)) < 1e-15 && y.n_rounded == 2);
        qf_ref_out_free(&y);
    }
}
END_TEST

START_TEST(test_special)
{
    double z[3] = {0, 0, 0}, nn[3] = {1, NAN, 2}, in[3] = {1, INFINITY, 2}, w[3] = {1, INFINITY, 1};
    qf_ref_norm_params p = {1, 3, 0.0, NULL, NULL, 0.0};
    qf_ref_out y;
    int layer;
    for (layer = 0; layer < 2; layer++) {
        y = run(NULL, &p, z, layer); /* 0 / 0 */
        ck_assert_uint_eq(y.n_undefined, 3);
        ck_assert(isnan(y.value[0]));
        qf_ref_out_free(&y);
        p.eps = 1e-6;
        y = run(NULL, &p, z, layer); /* 0 / sqrt(eps) */
        ck_assert_uint_eq(y.n_exact, 3);
        ck_assert(y.value[0] == 0);
        qf_ref_out_free(&y);
        y = run(NULL, &p, nn, layer);
        ck_assert_uint_eq(y.n_undefined, 3);
        qf_ref_out_free(&y);
        y = run(NULL, &p, in, layer);
        ck_assert_uint_eq(y.n_undefined, 3);
        qf_ref_out_free(&y);
        p.eps = 0;
    }
    p.weight = w;
    ck_assert_int_eq(qf_ref_rmsnorm(NULL, &p, z, &y), QF_EINVAL);
    p.weight = NULL;
    p.eps = -1;
    ck_assert_int_eq(qf_ref_layernorm(NULL, &p, z, &y), QF_EINVAL);
}
END_TEST

START_TEST(test_random_oracle)
{
    static const qf_format_id fmts[] = {QF_FLOAT64, QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16, QF_FLOAT8_E4M3FN};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_DOWN, QF_ROUND_RTZ, QF_ROUND_UP};
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(16);
    size_t und = 0, total = 0;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    for (it = 0; it < iters; it++) {
        qf_ref_norm_params p;
        qf_ref_opts o = qf_ref_opts_default();
        double *x, *w, *b, amp = it % 4 == 3 ? 1e6 : it % 4 == 2 ? 1e-3 : 2.0;
        size_t i;
        int layer;
        p.rows = 3;
        p.cols = 1 + qf_rng_u64(seed, it) % 50;
        p.eps = it % 3 == 0 ? 0.0 : 1e-6;
        x = malloc(p.rows * p.cols * sizeof *x);
        w = malloc(p.cols * sizeof *w);
        b = malloc(p.cols * sizeof *b);
        for (i = 0; i < p.rows * p.cols; i++)
            x[i] = unif(seed, 100000 * it + i, amp) +
                   (it % 5 == 1 ? 10.0 * amp : 0.0); /* offset: cancellation */
        for (i = 0; i < p.cols; i++) {
            w[i] = unif(seed, 5000000 + i, 2.0);
            b[i] = unif(seed, 6000000 + i, 1.0);
        }
        p.weight = it % 2 ? w : NULL;
        p.bias = it % 3 == 1 ? b : NULL;
        p.weight_offset = it % 7 == 3 ? 1.0 : 0.0;
        o.format = qf_format_get(fmts[it % 5]);
        o.round = rnds[(it / 5) % 4];
        for (layer = 0; layer < 2; layer++) {
            qf_ref_out y = run(&o, &p, x, layer);
            und += check_oracle(&o, &p, x, layer, &y);
            total += p.rows * p.cols;
            qf_ref_out_free(&y);
        }
        free(x), free(w), free(b);
    }
    fprintf(stderr, "refs/norm random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

START_TEST(test_precisions)
{
    qf_ref_norm_params p = {5, 33, 1e-5, NULL, NULL, 0.0};
    double x[5 * 33], w[33];
    qf_ref_opts a = qf_ref_opts_default(), b = qf_ref_opts_default();
    size_t i;
    int layer;
    for (i = 0; i < 5 * 33; i++)
        x[i] = unif(qf_test_seed(), i, 3.0) + 100.0;
    for (i = 0; i < 33; i++)
        w[i] = unif(qf_test_seed(), 1000 + i, 1.0);
    p.weight = w;
    a.prec_extra = 0;
    a.threads = 1;
    b.prec_extra = 181;
    for (layer = 0; layer < 2; layer++) {
        qf_ref_out ya = run(&a, &p, x, layer), yb = run(&b, &p, x, layer);
        ck_assert_int_gt(ya.max_prec, 53);
        for (i = 0; i < 5 * 33; i++) {
            ck_assert_int_eq(ya.status[i], yb.status[i]);
            ck_assert_uint_eq(ya.code[i], yb.code[i]);
        }
        qf_ref_out_free(&ya);
        qf_ref_out_free(&yb);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/norm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_precisions);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
