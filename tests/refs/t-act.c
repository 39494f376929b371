/* t-act.c: qf_ref_activation / qf_ref_glu.
 *
 * Oracle: the textbook formulas (0.5 x (1 + erf(x / sqrt 2)), 0.5 x (1 +
 * tanh(...)), x sigmoid(x)) evaluated naively in MPFR at 2048 bits, which
 * is enough for their cancellation at the magnitudes drawn here (|x| <= 20;
 * GELU_TANH would lose everything near x = -25).
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

static void oracle(qf_ref_act act, double x, mpfr_t r)
{
    mpfr_t t, u;
    mpfr_inits2(OP, t, u, (mpfr_ptr)0);
    mpfr_set_d(r, x, MPFR_RNDN);
    switch (act) {
    case QF_REF_ACT_GELU_ERF:
        mpfr_sqrt_ui(t, 2, MPFR_RNDN);
        mpfr_div(t, r, t, MPFR_RNDN);
        mpfr_erf(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(r, r, t, MPFR_RNDN);
        mpfr_div_2ui(r, r, 1, MPFR_RNDN);
        break;
    case QF_REF_ACT_GELU_TANH:
        mpfr_pow_ui(t, r, 3, MPFR_RNDN);
        mpfr_set_str(u, "0.044715", 10, MPFR_RNDN);
        mpfr_mul(t, t, u, MPFR_RNDN);
        mpfr_add(t, t, r, MPFR_RNDN);
        mpfr_const_pi(u, MPFR_RNDN);
        mpfr_ui_div(u, 2, u, MPFR_RNDN);
        mpfr_sqrt(u, u, MPFR_RNDN);
        mpfr_mul(t, t, u, MPFR_RNDN);
        mpfr_tanh(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(r, r, t, MPFR_RNDN);
        mpfr_div_2ui(r, r, 1, MPFR_RNDN);
        break;
    case QF_REF_ACT_SILU:
    case QF_REF_ACT_SIGMOID:
        mpfr_neg(t, r, MPFR_RNDN);
        mpfr_exp(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        if (act == QF_REF_ACT_SILU)
            mpfr_div(r, r, t, MPFR_RNDN);
        else
            mpfr_ui_div(r, 1, t, MPFR_RNDN);
        break;
    default:
        if (x < 0)
            mpfr_set_zero(r, 1);
        break;
    }
    mpfr_clears(t, u, (mpfr_ptr)0);
}

static qf_ref_out run(const qf_ref_opts *o, qf_ref_act act, const double *x, const double *up, size_t n)
{
    qf_ref_out y;
    ck_assert_int_eq(qf_ref_out_alloc(&y, n), QF_OK);
    ck_assert_int_eq(up ? qf_ref_glu(o, act, x, up, n, &y) : qf_ref_activation(o, act, x, n, &y), QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, n);
    return y;
}

START_TEST(test_hand)
{
    double x[5] = {0, -0.0, 1, INFINITY, -INFINITY};
    qf_ref_out y;
    qf_ref_act a;
    for (a = 0; a < QF_REF_ACT_COUNT; a++) {
        y = run(NULL, a, x, NULL, 5);
        ck_assert(y.value[0] == (a == QF_REF_ACT_SIGMOID ? 0.5 : 0.0));
        ck_assert_int_eq(y.status[0], QF_REF_EXACT);
        ck_assert_int_eq(y.status[1], QF_REF_EXACT);
        ck_assert(y.value[3] == (a == QF_REF_ACT_SIGMOID ? 1.0 : INFINITY));
        ck_assert(y.value[4] == 0.0);
        ck_assert_uint_eq(y.n_undecided + y.n_undefined, 0);
        qf_ref_out_free(&y);
    }
    y = run(NULL, QF_REF_ACT_GELU_ERF, x, NULL, 3);
    ck_assert(fabs(y.value[2] - 0.8413447460685429) < 2e-16); /* Phi(1) */
    qf_ref_out_free(&y);
    y = run(NULL, QF_REF_ACT_SILU, x, NULL, 3);
    ck_assert(fabs(y.value[2] - 1 / (1 + exp(-1.0))) < 2e-16);
    qf_ref_out_free(&y);
    y = run(NULL, QF_REF_ACT_RELU, x, NULL, 3);
    ck_assert(y.value[2] == 1 && y.status[2] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    {
        /* large magnitudes: exact limits in nearest modes, no cancellation */
        double big[4] = {1e300, -1e300, 40, -40};
        for (a = 0; a < QF_REF_ACT_RELU; a++) {
            y = run(NULL, a, big, NULL, 4);
            ck_assert(y.value[0] == (a == QF_REF_ACT_SIGMOID ? 1.0 : 1e300));
            ck_assert(y.value[1] == 0.0);
            ck_assert(y.value[2] == (a == QF_REF_ACT_SIGMOID ? 1.0 : 40.0));
            /* GELU(-40) ~ -40 Phi(-40) ~ -1e-348 underflows to 0; SiLU(-40) ~ -1.7e-16 */
            if (a == QF_REF_ACT_SILU)
                ck_assert(y.value[3] < 0 && y.value[3] > -2e-16);
            else if (a == QF_REF_ACT_SIGMOID)
                ck_assert(y.value[3] > 4e-18 && y.value[3] < 5e-18);
            else
                ck_assert(y.value[3] == 0);
            ck_assert_uint_eq(y.n_undecided, 0);
            qf_ref_out_free(&y);
        }
    }
}
END_TEST

START_TEST(test_glu)
{
    double g[8] = {1, 0, INFINITY, -INFINITY, 2, -1, INFINITY, 3};
    double u[8] = {2, INFINITY, 0, INFINITY, -INFINITY, -INFINITY, -5, NAN};
    qf_ref_out y = run(NULL, QF_REF_ACT_SILU, g, u, 8), z;
    double one = 1;
    ck_assert(fabs(y.value[0] - 2 / (1 + exp(-1.0))) < 4e-16);
    ck_assert(y.status[1] == QF_REF_UNDEFINED); /* silu(0) * inf */
    ck_assert(y.status[2] == QF_REF_UNDEFINED); /* inf * 0 */
    ck_assert(y.status[3] == QF_REF_UNDEFINED); /* silu(-inf) = 0, * inf */
    ck_assert(y.value[4] == -INFINITY && y.status[4] == QF_REF_EXACT);
    ck_assert(y.value[5] == INFINITY); /* silu(-1) < 0 times -inf */
    ck_assert(y.value[6] == -INFINITY);
    ck_assert(y.status[7] == QF_REF_UNDEFINED && isnan(y.value[7]));
    qf_ref_out_free(&y);
    /* glu with up = 1 is the activation itself */
    y = run(NULL, QF_REF_ACT_GELU_TANH, g, NULL, 1);
    z = run(NULL, QF_REF_ACT_GELU_TANH, g, &one, 1);
    ck_assert(y.value[0] == z.value[0]);
    qf_ref_out_free(&y);
    qf_ref_out_free(&z);
}
END_TEST

/* ReLU GLU products near and in binary64's subnormal range, into float64
 * in every deterministic mode.  relu(g) up is exact in binary64 arithmetic
 * only when its fma residual is a binary64 number: 1.5 * 2^-1074 rounds to
 * 2^-1073 (a tie, to even) with residual -2^-1075, which itself rounds to
 * 0, and the element was taken as EXACT 2^-1073 in every mode.  Expected
 * values worked out with Python fractions (the exact product, rounded by
 * hand into binary64 with gradual underflow). */
START_TEST(test_glu_relu_subnormal)
{
    static const qf_round modes[5] = {QF_ROUND_RNE, QF_ROUND_RNA, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    static const struct {
        double gate, up, want[5]; /* rne rna rtz up down */
        int exact;
    } cases[] = {
        /* 1.5 * 2^-1074: a tie between 2^-1074 and 2^-1073 */
        {1.5, 0x1p-1074, {0x1p-1073, 0x1p-1073, 0x1p-1074, 0x1p-1073, 0x1p-1074}, 0},
        {1.5, -0x1p-1074, {-0x1p-1073, -0x1p-1073, -0x1p-1074, -0x1p-1074, -0x1p-1073}, 0},
        /* 4.5 * 2^-1074: a tie between 4 and 5 units, 4 even */
        {1.5, 0x3p-1074, {0x4p-1074, 0x5p-1074, 0x4p-1074, 0x5p-1074, 0x4p-1074}, 0},
        /* exact in the subnormal range */
        {2, 0x1p-1074, {0x1p-1073, 0x1p-1073, 0x1p-1073, 0x1p-1073, 0x1p-1073}, 1},
        {1.25, 0x1p-1072, {0x5p-1074, 0x5p-1074, 0x5p-1074, 0x5p-1074, 0x5p-1074}, 1},
        /* normal, but the residual 2^-1094 is below the subnormals:
         * 2^-990 (1 + 2^-51 + 2^-104) */
        {0x1.0000000000001p+0,
         0x1.0000000000001p-990,
         {0x1.0000000000002p-990, 0x1.0000000000002p-990, 0x1.0000000000002p-990, 0x1.0000000000003p-990,
          0x1.0000000000002p-990},
         0},
        /* exact, far from underflow (the fast exact case still taken) */
        {1.5, 0x1p-900, {0x1.8p-900, 0x1.8p-900, 0x1.8p-900, 0x1.8p-900, 0x1.8p-900}, 1},
        /* relu(-1.5) = 0 */
        {-1.5, 0x1p-1074, {0, 0, 0, 0, 0}, 1},
    };
    size_t c;
    int m, slow;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (m = 0; m < 5; m++)
            for (slow = 0; slow < 2; slow++) {
                qf_ref_opts o = qf_ref_opts_default();
                qf_ref_out y;
                o.round = modes[m];
                o.slow_only = slow;
                o.threads = 1;
                ck_assert_int_eq(qf_ref_out_alloc(&y, 1), QF_OK);
                ck_assert_int_eq(qf_ref_glu(&o, QF_REF_ACT_RELU, &cases[c].gate, &cases[c].up, 1, &y), QF_OK);
                if (y.value[0] != cases[c].want[m] || !signbit(y.value[0]) != !signbit(cases[c].want[m]) ||
                    y.status[0] != (cases[c].exact ? QF_REF_EXACT : QF_REF_ROUNDED))
                    ck_abort_msg("relu(%a) * %a, %s%s: got %a (%s), want %a (%s)", cases[c].gate, cases[c].up,
                                 qf_round_name(modes[m]), slow ? ", slow_only" : "", y.value[0],
                                 qf_ref_status_name((qf_ref_status)y.status[0]), cases[c].want[m],
                                 cases[c].exact ? "exact" : "rounded");
                qf_ref_out_free(&y);
            }
}
END_TEST

START_TEST(test_random_oracle)
{
    static const qf_format_id fmts[] = {QF_FLOAT64, QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16, QF_FLOAT8_E5M2};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN, QF_ROUND_RNA};
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(50);
    size_t n = 200, und = 0, total = 0, i;
    mpfr_t r, t;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    mpfr_inits2(OP, r, t, (mpfr_ptr)0);
    for (it = 0; it < iters; it++) {
        qf_ref_act act = (qf_ref_act)(it % QF_REF_ACT_COUNT);
        qf_ref_opts o = qf_ref_opts_default();
        double x[200], up[200], amp = it % 3 == 0 ? 4.0 : it % 3 == 1 ? 20.0 : 1e-3;
        int glu = it % 4 == 3;
        qf_ref_out y;
        for (i = 0; i < n; i++) {
            x[i] = unif(seed, it * 1000 + i, amp);
            up[i] = unif(seed, 7000000 + it * 1000 + i, 3.0);
        }
        o.format = qf_format_get(fmts[(it / 5) % 5]);
        o.round = rnds[(it / 25) % 5];
        o.saturate = it % 2;
        y = run(&o, act, x, glu ? up : NULL, n);
        for (i = 0; i < n; i++) {
            double want;
            if (y.status[i] == QF_REF_UNDECIDED) {
                und++;
                continue;
            }
            oracle(act, x[i], r);
            if (glu)
                mpfr_mul_d(r, r, up[i], MPFR_RNDN);
            want = qf_format_decode(o.format, qf_format_encode_mpfr(o.format, r, o.round, o.saturate, 32, 0));
            if (!same(want, y.value[i]))
                ck_abort_msg("%s%s(%a)%s%a %s round %s: got %a want %a (QF_SEED=%llu)", glu ? "glu " : "",
                             qf_ref_act_name(act), x[i], glu ? " * " : "", glu ? up[i] : 0.0, o.format->name,
                             qf_round_name(o.round), y.value[i], want, (unsigned long long)qf_test_seed());
        }
        total += n;
        qf_ref_out_free(&y);
    }
    mpfr_clears(r, t, (mpfr_ptr)0);
    fprintf(stderr, "refs/act random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

START_TEST(test_precisions)
{
    double x[300];
    size_t i;
    qf_ref_act a;
    qf_ref_opts lo = qf_ref_opts_default(), hi = qf_ref_opts_default();
    for (i = 0; i < 300; i++)
        x[i] = unif(qf_test_seed(), i, 10.0);
    lo.prec_extra = 0;
    hi.prec_extra = 181;
    hi.threads = 1;
    for (a = 0; a < QF_REF_ACT_COUNT; a++) {
        qf_ref_out ya = run(&lo, a, x, NULL, 300), yb = run(&hi, a, x, NULL, 300);
        for (i = 0; i < 300; i++)
            ck_assert_uint_eq(ya.code[i], yb.code[i]);
        qf_ref_out_free(&ya);
        qf_ref_out_free(&yb);
    }
}
END_TEST

START_TEST(test_names)
{
    qf_ref_act a;
    ck_assert_int_eq(qf_ref_act_lookup("gelu", &a), QF_OK);
    ck_assert_int_eq(a, QF_REF_ACT_GELU_ERF);
    ck_assert_int_eq(qf_ref_act_lookup("GELU_TANH", &a), QF_OK);
    ck_assert_int_eq(a, QF_REF_ACT_GELU_TANH);
    ck_assert_int_eq(qf_ref_act_lookup("swish?", &a), QF_EPARSE);
    ck_assert_str_eq(qf_ref_act_name(QF_REF_ACT_SILU), "silu");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/act");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_glu);
    tcase_add_test(tc, test_glu_relu_subnormal);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_precisions);
    tcase_add_test(tc, test_names);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
