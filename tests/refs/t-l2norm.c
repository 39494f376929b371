/* t-l2norm.c: qf_ref_l2norm.
 *
 * Oracle: x / max(sqrt(sum x^2), eps) evaluated naively in MPFR at 2048
 * bits (round to nearest), then rounded into the target: it must agree
 * with every element the reference decides, on random rows of ordinary,
 * huge and tiny magnitudes and on rows whose norm is near eps.  Hand-
 * checked exact rows and the special values (zero rows, NaN, Inf, eps).
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

/* The elements the reference decided against the oracle; returns how many
 * it left UNDECIDED. */
static size_t check_oracle(const qf_ref_opts *o, const qf_ref_l2norm_params *p, const double *x,
                           const qf_ref_out *y)
{
    const qf_format *f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    size_t r, j, n = p->cols, und = 0;
    mpfr_t q, t, d;
    mpfr_inits2(OP, q, t, d, (mpfr_ptr)0);
    for (r = 0; r < p->rows; r++) {
        const double *xr = x + r * n;
        mpfr_set_zero(q, 1);
        for (j = 0; j < n; j++) {
            mpfr_set_d(t, xr[j], MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(q, q, t, MPFR_RNDN);
        }
        mpfr_sqrt(d, q, MPFR_RNDN);
        if (mpfr_cmp_d(d, p->eps) < 0)
            mpfr_set_d(d, p->eps, MPFR_RNDN);
        for (j = 0; j < n; j++) {
            size_t i = r * n + j;
            double want;
            if (y->status[i] == QF_REF_UNDECIDED) {
                und++;
                continue;
            }
            ck_assert_int_ne(y->status[i], QF_REF_UNDEFINED);
            mpfr_set_d(t, xr[j], MPFR_RNDN);
            mpfr_div(t, t, d, MPFR_RNDN);
            want = qf_format_decode(f, qf_format_encode_mpfr(f, t, o->round, o->saturate, 32, 0));
            if (!same(want, y->value[i])) {
                fprintf(stderr, "l2norm %s round %s row %zu col %zu: got %a want %a (%s) eps %a\n", f->name,
                        qf_round_name(o->round), r, j, y->value[i], want,
                        qf_ref_status_name((qf_ref_status)y->status[i]), p->eps);
                ck_abort_msg("l2norm disagrees with the oracle (QF_SEED=%llu)",
                             (unsigned long long)qf_test_seed());
            }
        }
    }
    mpfr_clears(q, t, d, (mpfr_ptr)0);
    return und;
}

static qf_ref_out run(const qf_ref_opts *o, const qf_ref_l2norm_params *p, const double *x)
{
    qf_ref_out y;
    ck_assert_int_eq(qf_ref_out_alloc(&y, p->rows * p->cols), QF_OK);
    ck_assert_int_eq(qf_ref_l2norm(o, p, x, &y), QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, p->rows * p->cols);
    return y;
}

START_TEST(test_hand)
{
    double one[4] = {0, -5, 0, 0}, x34[2] = {3, 4}, big[2] = {3e300, -4e300}, tiny[2] = {3e-320, 4e-320};
    qf_ref_l2norm_params p = {1, 4, 1e-12};
    qf_ref_out y;
    size_t j;
    /* One nonzero entry: sign(x) there, zeros elsewhere, all exact. */
    y = run(NULL, &p, one);
    ck_assert(y.value[1] == -1.0 && y.n_exact == 4);
    for (j = 0; j < 4; j++)
        ck_assert(j == 1 || y.value[j] == 0);
    qf_ref_out_free(&y);
    /* [3, 4] / 5 = [0.6, 0.8], rounded; the huge row does not overflow and
     * the subnormal row does not underflow: the same answer. */
    p.cols = 2;
    y = run(NULL, &p, x34);
    ck_assert(y.value[0] == 0.6 && y.value[1] == 0.8 && y.n_rounded == 2);
    qf_ref_out_free(&y);
    y = run(NULL, &p, big);
    ck_assert(y.value[0] == 0.6 && y.value[1] == -0.8);
    qf_ref_out_free(&y);
    p.eps = 0;
    y = run(NULL, &p, tiny);
    ck_assert(y.value[0] == 0.6 && y.value[1] == 0.8);
    qf_ref_out_free(&y);
    /* The norm below eps: x / eps, exact when eps is a power of two. */
    p.eps = 0.25;
    y = run(NULL, &p, (double[]){0.0625, -0.125});
    ck_assert(y.value[0] == 0.25 && y.value[1] == -0.5 && y.n_exact == 2);
    qf_ref_out_free(&y);
    /* The norm exactly eps: both sides of the clamp agree, decided. */
    p.eps = 5;
    y = run(NULL, &p, x34);
    ck_assert(y.value[0] == 0.6 && y.value[1] == 0.8 && y.n_undecided == 0);
    qf_ref_out_free(&y);
}
END_TEST

START_TEST(test_special)
{
    double z[3] = {0, 0, 0}, nn[3] = {1, NAN, 2}, in[3] = {1, INFINITY, 2}, ni[3] = {-INFINITY, 0, 0};
    qf_ref_l2norm_params p = {1, 3, 0.0};
    qf_ref_out y;
    y = run(NULL, &p, z); /* 0 / 0 */
    ck_assert_uint_eq(y.n_undefined, 3);
    ck_assert(isnan(y.value[0]));
    qf_ref_out_free(&y);
    p.eps = 1e-12;
    y = run(NULL, &p, z); /* 0 / eps, torch's answer for a zero row */
    ck_assert_uint_eq(y.n_exact, 3);
    ck_assert(y.value[0] == 0 && !signbit(y.value[0]));
    qf_ref_out_free(&y);
    y = run(NULL, &p, nn);
    ck_assert_uint_eq(y.n_undefined, 3);
    ck_assert(isnan(y.value[2]));
    qf_ref_out_free(&y);
    y = run(NULL, &p, in);
    ck_assert_uint_eq(y.n_undefined, 3);
    qf_ref_out_free(&y);
    y = run(NULL, &p, ni);
    ck_assert_uint_eq(y.n_undefined, 3);
    qf_ref_out_free(&y);
    /* Only the row with the NaN is undefined. */
    {
        double two[6] = {1, 2, 2, NAN, 0, 0};
        qf_ref_l2norm_params p2 = {2, 3, 1e-12};
        y = run(NULL, &p2, two);
        ck_assert_uint_eq(y.n_undefined, 3);
        ck_assert(y.value[0] * 3 == 1.0 || fabs(y.value[0] - 1.0 / 3) < 1e-16);
        ck_assert(isnan(y.value[3]));
        qf_ref_out_free(&y);
    }
    p.eps = -1;
    ck_assert_int_eq(qf_ref_l2norm(NULL, &p, z, &y), QF_EINVAL);
    p.eps = INFINITY;
    ck_assert_int_eq(qf_ref_l2norm(NULL, &p, z, &y), QF_EINVAL);
    p.eps = 1e-12;
    ck_assert_int_eq(qf_ref_l2norm(NULL, NULL, z, &y), QF_EINVAL);
}
END_TEST

START_TEST(test_random_oracle)
{
    static const qf_format_id fmts[] = {QF_FLOAT64, QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16, QF_FLOAT8_E4M3FN};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_DOWN, QF_ROUND_RTZ, QF_ROUND_UP};
    /* Ordinary, huge, tiny (subnormal binary64 squares) rows, and rows
     * whose norm is about eps = 1e-2 (the clamp on either side). */
    static const double amps[] = {2.0, 1e150, 1e-160, 4e-3};
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(24);
    size_t und = 0, total = 0;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    for (it = 0; it < iters; it++) {
        qf_ref_l2norm_params p;
        qf_ref_opts o = qf_ref_opts_default();
        double *x, amp = amps[it % 4];
        size_t i;
        p.rows = 3;
        p.cols = 1 + qf_rng_u64(seed, it) % 50;
        p.eps = it % 4 == 3 ? 1e-2 : it % 3 == 0 ? 0.0 : 1e-12;
        x = malloc(p.rows * p.cols * sizeof *x);
        for (i = 0; i < p.rows * p.cols; i++)
            x[i] = unif(seed, 100000 * it + i, amp);
        o.format = qf_format_get(fmts[it % 5]);
        o.round = rnds[(it / 5) % 4];
        {
            qf_ref_out y = run(&o, &p, x);
            und += check_oracle(&o, &p, x, &y);
            total += p.rows * p.cols;
            qf_ref_out_free(&y);
        }
        free(x);
    }
    fprintf(stderr, "refs/l2norm random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

/* The answer does not depend on the starting precision or the threads. */
START_TEST(test_precisions)
{
    qf_ref_l2norm_params p = {5, 33, 1e-5};
    double x[5 * 33];
    qf_ref_opts a = qf_ref_opts_default(), b = qf_ref_opts_default();
    size_t i;
    for (i = 0; i < 5 * 33; i++)
        x[i] = unif(qf_test_seed(), i, 3.0) + 100.0;
    a.prec_extra = 0;
    a.threads = 1;
    b.prec_extra = 181;
    {
        qf_ref_out ya = run(&a, &p, x), yb = run(&b, &p, x);
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
    Suite *s = suite_create("refs/l2norm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_precisions);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
