/* t-reduce.c: qf_ref_sum / qf_ref_amax.
 *
 * Oracle for sum: sequential mpfr_add at 4096 bits, exact for any doubles
 * whose sum does not need more than 4096 bits (all drawn here), rounded
 * into the target in each mode.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

static qf_ref_out run(const qf_ref_opts *o, const double *x, size_t rows, size_t cols, int amax)
{
    qf_ref_out y;
    ck_assert_int_eq(qf_ref_out_alloc(&y, rows), QF_OK);
    ck_assert_int_eq(amax ? qf_ref_amax(o, x, rows, cols, &y) : qf_ref_sum(o, x, rows, cols, &y), QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, rows);
    return y;
}

START_TEST(test_hand)
{
    double a[3] = {1, 0x1p-100, -1}, b[3] = {1e308, 1e308, -1e308}, c[3] = {1, 2, 3}, d[3] = {0.1, 0.2, 0.3};
    double e[3] = {INFINITY, 1, -INFINITY}, f[3] = {INFINITY, 1, 2}, g[3] = {1, NAN, 2}, h[2] = {-3, 2};
    qf_ref_out y;
    y = run(NULL, a, 1, 3, 0); /* a naive sum gives 0 */
    ck_assert(y.value[0] == 0x1p-100 && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    y = run(NULL, b, 1, 3, 0); /* no overflow */
    ck_assert(y.value[0] == 1e308 && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    y = run(NULL, c, 1, 3, 0);
    ck_assert(y.value[0] == 6 && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    y = run(NULL, d, 1, 3, 0); /* 0.1 + 0.2 + 0.3 as exact doubles, rounded once */
    ck_assert(y.value[0] == 0x1.3333333333333p-1 + 0 * 1 || fabs(y.value[0] - 0.6) < 2e-16);
    ck_assert_int_eq(y.status[0], QF_REF_ROUNDED);
    qf_ref_out_free(&y);
    y = run(NULL, e, 1, 3, 0);
    ck_assert(isnan(y.value[0]) && y.status[0] == QF_REF_UNDEFINED);
    qf_ref_out_free(&y);
    y = run(NULL, f, 1, 3, 0);
    ck_assert(y.value[0] == INFINITY && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    y = run(NULL, g, 1, 3, 0);
    ck_assert(y.status[0] == QF_REF_UNDEFINED);
    qf_ref_out_free(&y);
    y = run(NULL, c, 3, 0, 0); /* empty rows */
    ck_assert(y.value[0] == 0 && y.n_exact == 3);
    qf_ref_out_free(&y);
    /* amax */
    y = run(NULL, h, 1, 2, 1);
    ck_assert(y.value[0] == 3 && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    y = run(NULL, g, 1, 3, 1);
    ck_assert(y.status[0] == QF_REF_UNDEFINED);
    qf_ref_out_free(&y);
    y = run(NULL, e, 1, 3, 1);
    ck_assert(y.value[0] == INFINITY && y.status[0] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    {
        double t[1] = {1.0 / 3};
        qf_ref_opts o = qf_ref_opts_default();
        o.format = qf_format_get(QF_BFLOAT16);
        y = run(&o, t, 1, 1, 1);
        ck_assert(y.status[0] == QF_REF_ROUNDED && fabs(y.value[0] - 1.0 / 3) < 1e-2);
        qf_ref_out_free(&y);
        o.format = qf_format_get(QF_FLOAT8_E4M3FN); /* 1e308 overflows e4m3: NaN, not saturating */
        y = run(&o, b, 1, 1, 1);
        ck_assert(isnan(y.value[0]) && y.status[0] == QF_REF_ROUNDED);
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
    size_t rows = 8, und = 0, total = 0, r, j;
    mpfr_t s;
    mpfr_init2(s, 4096);
    for (it = 0; it < iters; it++) {
        size_t cols = 1 + qf_rng_u64(seed, it) % 300;
        double *x = malloc(rows * cols * sizeof *x);
        qf_ref_opts o = qf_ref_opts_default();
        qf_ref_out y;
        for (j = 0; j < rows * cols; j++) {
            /* wide exponents and cancellation */
            x[j] = ldexp(unif(seed, it * 100000 + j, 1.0), (int)(qf_rng_u64(seed, 5000000 + j) % 200) - 100);
            if (j % 7 == 3)
                x[j] = -x[j - 1];
        }
        o.format = qf_format_get(fmts[it % 5]);
        o.round = rnds[(it / 5) % 5];
        o.saturate = it % 2;
        y = run(&o, x, rows, cols, 0);
        for (r = 0; r < rows; r++) {
            double want;
            if (y.status[r] == QF_REF_UNDECIDED) {
                und++;
                continue;
            }
            mpfr_set_zero(s, 1);
            for (j = 0; j < cols; j++)
                mpfr_add_d(s, s, x[r * cols + j], MPFR_RNDN); /* exact */
            want = qf_format_decode(o.format, qf_format_encode_mpfr(o.format, s, o.round, o.saturate, 32, 0));
            ck_assert_msg(want == y.value[r] || (isnan(want) && isnan(y.value[r])),
                          "sum row %zu (%s, %s): got %a want %a (QF_SEED=%llu)", r, o.format->name,
                          qf_round_name(o.round), y.value[r], want, (unsigned long long)qf_test_seed());
            if (y.status[r] == QF_REF_EXACT)
                ck_assert(mpfr_cmp_d(s, y.value[r]) == 0);
        }
        total += rows;
        qf_ref_out_free(&y);
        y = run(&o, x, rows, cols, 1);
        for (r = 0; r < rows; r++) {
            double m = 0;
            for (j = 0; j < cols; j++)
                m = fmax(m, fabs(x[r * cols + j]));
            ck_assert(y.value[r] ==
                      qf_format_decode(o.format, qf_format_encode(o.format, m, o.round, o.saturate, 32, 0)));
        }
        qf_ref_out_free(&y);
        free(x);
    }
    mpfr_clear(s);
    fprintf(stderr, "refs/reduce random: %zu sums, %zu undecided\n", total, und);
    ck_assert_uint_eq(und, 0);
    mpfr_free_cache();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/reduce");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_random_oracle);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
