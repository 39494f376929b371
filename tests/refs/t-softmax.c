/* t-softmax.c: qf_ref_softmax / qf_ref_log_softmax.
 *
 * Oracle: the same formula evaluated naively in MPFR at 2048 bits, round to
 * nearest, then rounded into the target; every decided reference element
 * must agree with it.  Also: agreement across starting precisions and thread
 * counts, hand-checked values, special values, forced undecided elements.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void wide_range(void)
{
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
}

/* Naive softmax / log-softmax of one row (finite entries and -inf only) at
 * OP bits plus the row's dynamic range: exp(-range) must still register
 * next to 1 for the directed rounding modes. */
static void oracle_row(const double *x, size_t n, double scale, int lg, mpfr_t *out)
{
    mpfr_t m, s, t;
    size_t j;
    int have = 0;
    double lo = INFINITY, hi = -INFINITY;
    mpfr_prec_t op;
    for (j = 0; j < n; j++) {
        if (isinf(x[j]))
            continue;
        lo = fmin(lo, scale * x[j]);
        hi = fmax(hi, scale * x[j]);
    }
    op = OP + (hi > lo ? (mpfr_prec_t)(1.5 * (hi - lo)) : 0);
    for (j = 0; j < n; j++)
        mpfr_set_prec(out[j], op);
    mpfr_inits2(op, m, s, t, (mpfr_ptr)0);
    for (j = 0; j < n; j++) {
        if (isinf(x[j]))
            continue;
        mpfr_set_d(t, x[j], MPFR_RNDN);
        mpfr_mul_d(t, t, scale, MPFR_RNDN);
        if (!have || mpfr_cmp(t, m) > 0)
            mpfr_set(m, t, MPFR_RNDN);
        have = 1;
    }
    mpfr_set_zero(s, 1);
    for (j = 0; j < n; j++) {
        if (isinf(x[j]))
            continue;
        mpfr_set_d(t, x[j], MPFR_RNDN);
        mpfr_mul_d(t, t, scale, MPFR_RNDN);
        mpfr_sub(t, t, m, MPFR_RNDN);
        mpfr_exp(t, t, MPFR_RNDN);
        mpfr_add(s, s, t, MPFR_RNDN);
    }
    for (j = 0; j < n; j++) {
        if (isinf(x[j])) {
            mpfr_set_inf(out[j], lg ? -1 : 1);
            if (!lg)
                mpfr_set_zero(out[j], 1);
            continue;
        }
        mpfr_set_d(t, x[j], MPFR_RNDN);
        mpfr_mul_d(t, t, scale, MPFR_RNDN);
        mpfr_sub(t, t, m, MPFR_RNDN);
        if (lg) {
            mpfr_log(out[j], s, MPFR_RNDN);
            mpfr_sub(out[j], t, out[j], MPFR_RNDN);
        } else {
            mpfr_exp(t, t, MPFR_RNDN);
            mpfr_div(out[j], t, s, MPFR_RNDN);
        }
    }
    mpfr_clears(m, s, t, (mpfr_ptr)0);
}

/* Compares every decided element of y with the oracle; returns the number
 * of undecided elements. */
static size_t check_oracle(const qf_ref_opts *o, const double *x, size_t rows, size_t cols, double scale,
                           int lg, const qf_ref_out *y, const char *tag)
{
    mpfr_t *v = malloc(cols * sizeof *v);
    size_t r, j, und = 0;
    const qf_format *f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    for (j = 0; j < cols; j++)
        mpfr_init2(v[j], OP);
    for (r = 0; r < rows; r++) {
        oracle_row(x + r * cols, cols, scale, lg, v);
        for (j = 0; j < cols; j++) {
            size_t i = r * cols + j;
            uint64_t code;
            double want;
            if (y->status[i] == QF_REF_UNDECIDED) {
                und++;
                continue;
            }
            ck_assert_int_ne(y->status[i], QF_REF_UNDEFINED);
            code = qf_format_encode_mpfr(f, v[j], o->round, o->saturate, 32, 0);
            want = qf_format_decode(f, code);
            if (!same(want, y->value[i])) {
                size_t t;
                fprintf(stderr,
                        "%s %s format=%s round=%s row %zu col %zu: got %a want %a status %s scale %a\n", tag,
                        lg ? "log_softmax" : "softmax", f->name, qf_round_name(o->round), r, j, y->value[i],
                        want, qf_ref_status_name((qf_ref_status)y->status[i]), scale);
                for (t = 0; t < cols; t++)
                    fprintf(stderr, "  x[%zu] = %a\n", t, x[r * cols + t]);
                ck_abort_msg("reference disagrees with the 2048-bit oracle (QF_SEED=%llu)",
                             (unsigned long long)qf_test_seed());
            }
        }
    }
    for (j = 0; j < cols; j++)
        mpfr_clear(v[j]);
    free(v);
    return und;
}

static qf_ref_out run(const qf_ref_opts *o, const double *x, size_t rows, size_t cols, double scale, int lg)
{
    qf_ref_out y;
    ck_assert_int_eq(qf_ref_out_alloc(&y, rows * cols), QF_OK);
    ck_assert_int_eq(lg ? qf_ref_log_softmax(o, x, rows, cols, scale, &y)
                        : qf_ref_softmax(o, x, rows, cols, scale, &y),
                     QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, rows * cols);
    return y;
}

START_TEST(test_hand)
{
    double x4[4] = {0.5, 0.5, 0.5, 0.5}, x3[3] = {-2, -2, -2}, x1[1] = {123.25};
    qf_ref_out y;
    int lg;
    size_t j;
    y = run(NULL, x4, 1, 4, 1.0, 0);
    for (j = 0; j < 4; j++) {
        ck_assert(y.value[j] == 0.25);
        ck_assert_int_eq(y.status[j], QF_REF_EXACT);
    }
    qf_ref_out_free(&y);
    y = run(NULL, x3, 1, 3, 7.0, 0);
    for (j = 0; j < 3; j++) {
        ck_assert(y.value[j] == 1.0 / 3.0); /* 1/3 correctly rounded, as the IEEE division */
        ck_assert_int_eq(y.status[j], QF_REF_ROUNDED);
    }
    qf_ref_out_free(&y);
    y = run(NULL, x4, 1, 4, 1.0, 1);
    for (j = 0; j < 4; j++)
        ck_assert(y.value[j] == -0x1.62e42fefa39efp+0); /* -log 4 = -2 log 2 */
    qf_ref_out_free(&y);
    for (lg = 0; lg < 2; lg++) {
        y = run(NULL, x1, 1, 1, 3.0, lg);
        ck_assert(y.value[0] == (lg ? 0.0 : 1.0));
        ck_assert_int_eq(y.status[0], QF_REF_EXACT);
        qf_ref_out_free(&y);
    }
    {
        /* softmax([0, log 2]) is not [1/3, 2/3] exactly (log 2 is rounded), but close */
        double x2[2] = {0, 0x1.62e42fefa39efp-1};
        y = run(NULL, x2, 1, 2, 1.0, 0);
        ck_assert(fabs(y.value[0] - 1.0 / 3) < 1e-15 && fabs(y.value[1] - 2.0 / 3) < 1e-15);
        ck_assert_int_eq(y.n_rounded, 2);
        qf_ref_out_free(&y);
    }
}
END_TEST

START_TEST(test_special)
{
    double a[] = {-INFINITY, 1, 1, -INFINITY};
    double b[] = {-INFINITY, -INFINITY, -INFINITY};
    double c[] = {1, NAN, 2};
    double d[] = {1, INFINITY, 2};
    double e[] = {1e308, -1e308, 1.7e308, 0};
    double f[] = {3, INFINITY};
    qf_ref_out y;
    y = run(NULL, a, 1, 4, 1.0, 0);
    ck_assert(y.value[0] == 0 && y.value[3] == 0 && y.value[1] == 0.5 && y.value[2] == 0.5);
    ck_assert_uint_eq(y.n_exact, 4);
    qf_ref_out_free(&y);
    y = run(NULL, a, 1, 4, 1.0, 1);
    ck_assert(y.value[0] == -INFINITY && y.value[1] == -0x1.62e42fefa39efp-1);
    ck_assert_int_eq(y.status[0], QF_REF_EXACT);
    qf_ref_out_free(&y);
    /* fully masked, NaN, +inf: no real result */
    y = run(NULL, b, 1, 3, 1.0, 0);
    ck_assert_uint_eq(y.n_undefined, 3);
    ck_assert(isnan(y.value[0]));
    qf_ref_out_free(&y);
    y = run(NULL, c, 1, 3, 1.0, 1);
    ck_assert_uint_eq(y.n_undefined, 3);
    qf_ref_out_free(&y);
    y = run(NULL, d, 1, 3, 1.0, 0);
    ck_assert_uint_eq(y.n_undefined, 3);
    qf_ref_out_free(&y);
    /* a negative scale turns +inf into -inf: weight 0 */
    y = run(NULL, f, 1, 2, -1.0, 0);
    ck_assert(y.value[0] == 1.0 && y.value[1] == 0.0);
    ck_assert_uint_eq(y.n_exact, 2);
    qf_ref_out_free(&y);
    /* scale 0 with an infinity: 0 * inf */
    y = run(NULL, f, 1, 2, 0.0, 0);
    ck_assert_uint_eq(y.n_undefined, 2);
    qf_ref_out_free(&y);
    /* magnitudes that overflow a naive exp: no overflow here */
    y = run(NULL, e, 1, 4, 1.0, 0);
    ck_assert(y.value[2] == 1.0 && y.value[0] == 0 && y.value[1] == 0 && y.value[3] == 0);
    ck_assert_int_eq(y.status[2], QF_REF_ROUNDED); /* 1 - tiny */
    ck_assert_uint_eq(y.n_undecided, 0);
    qf_ref_out_free(&y);
    y = run(NULL, e, 1, 4, 1.0, 1);
    ck_assert(y.value[0] == 1e308 - 1.7e308 && y.value[2] == 0.0 && y.value[3] == -1.7e308);
    qf_ref_out_free(&y);
    /* a row dominated by one entry by 2000 (exp(-2000) ~ 2^-2885, beyond
     * what the working precision resolves next to 1): decided anyway in the
     * directed modes */
    {
        double t[2] = {0, -2000};
        qf_ref_opts o = qf_ref_opts_default();
        o.round = QF_ROUND_RTZ;
        y = run(&o, t, 1, 2, 1.0, 0);
        ck_assert(y.value[0] == 0x1.fffffffffffffp-1 && y.status[0] == QF_REF_ROUNDED);
        ck_assert(y.value[1] == 0 && y.n_undecided == 0);
        qf_ref_out_free(&y);
        o.round = QF_ROUND_UP;
        y = run(&o, t, 1, 2, 1.0, 0);
        ck_assert(y.value[0] == 1.0 && y.value[1] == 0x1p-1074 && y.n_rounded == 2);
        qf_ref_out_free(&y);
        o.round = QF_ROUND_DOWN;
        y = run(&o, t, 1, 2, 1.0, 1);
        ck_assert(y.value[0] == -0x1p-1074 && y.status[0] == QF_REF_ROUNDED);
        /* -2000 - 2^-2885: the known directed-mode corner (qf_ref.h), either
         * undecided or the right neighbour, never a wrong value */
        ck_assert(y.status[1] == QF_REF_UNDECIDED || y.value[1] == nextafter(-2000.0, -INFINITY));
        qf_ref_out_free(&y);
    }
    /* scale 0: uniform */
    y = run(NULL, e, 1, 4, 0.0, 0);
    ck_assert(y.value[0] == 0.25 && y.n_exact == 4);
    qf_ref_out_free(&y);
    /* empty rows and columns */
    ck_assert_int_eq(qf_ref_softmax(NULL, NULL, 0, 5, 1.0, &y), QF_OK);
    ck_assert_int_eq(qf_ref_softmax(NULL, e, 1, 4, NAN, &y), QF_EINVAL);
}
END_TEST

START_TEST(test_random_oracle)
{
    static const qf_format_id fmts[] = {QF_FLOAT64, QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16, QF_FLOAT8_E4M3FN};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN, QF_ROUND_RNA};
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(12);
    size_t und = 0, total = 0;
    wide_range();
    for (it = 0; it < iters; it++) {
        size_t rows = 3, cols = 1 + (size_t)(qf_rng_u64(seed, 1000 + it) % 70), i;
        double amp = it % 3 == 0 ? 1.0 : it % 3 == 1 ? 30.0 : 1e4;
        double scale = it % 2 ? 1.0 : 0.125 * (double)(1 + it % 7);
        double *x = malloc(rows * cols * sizeof *x);
        qf_ref_opts o = qf_ref_opts_default();
        int lg;
        for (i = 0; i < rows * cols; i++) {
            x[i] = unif(seed, it * 100000 + i, amp);
            if (i % 11 == 5)
                x[i] = x[i - 1]; /* repeated values */
            if (i % 17 == 3)
                x[i] = -INFINITY;
        }
        o.format = qf_format_get(fmts[it % 5]);
        o.round = rnds[(it / 5) % 5];
        o.saturate = 1;
        for (lg = 0; lg < 2; lg++) {
            qf_ref_out y = run(&o, x, rows, cols, scale, lg);
            und += check_oracle(&o, x, rows, cols, scale, lg, &y, "random");
            total += rows * cols;
            qf_ref_out_free(&y);
        }
        free(x);
    }
    fprintf(stderr, "refs/softmax random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

/* The decided values do not depend on the starting precision or the
 * thread count (the doubled-precision check). */
START_TEST(test_precisions)
{
    uint64_t seed = qf_test_seed() ^ 0x5a5a;
    size_t rows = 8, cols = 40, i;
    double *x = malloc(rows * cols * sizeof *x);
    qf_ref_opts a = qf_ref_opts_default(), b = qf_ref_opts_default(), c = qf_ref_opts_default();
    qf_ref_out ya, yb, yc;
    int lg;
    for (i = 0; i < rows * cols; i++)
        x[i] = unif(seed, i, 8.0);
    a.prec_extra = 4; /* starts too low: refinement does the work */
    b.prec_extra = 128;
    b.threads = 1;
    c.prec_extra = 64 * 2 + 53; /* "doubled" */
    c.threads = 2;
    for (lg = 0; lg < 2; lg++) {
        ya = run(&a, x, rows, cols, 1.5, lg);
        yb = run(&b, x, rows, cols, 1.5, lg);
        yc = run(&c, x, rows, cols, 1.5, lg);
        ck_assert_int_gt(ya.max_prec, 61); /* it did refine */
        for (i = 0; i < rows * cols; i++) {
            ck_assert_int_eq(ya.status[i], yb.status[i]);
            ck_assert(same(ya.value[i], yb.value[i]) && same(yb.value[i], yc.value[i]));
            ck_assert_uint_eq(ya.code[i], yc.code[i]);
        }
        qf_ref_out_free(&ya);
        qf_ref_out_free(&yb);
        qf_ref_out_free(&yc);
    }
    free(x);
}
END_TEST

/* With prec_max at the target precision nothing can be refined: elements
 * come back UNDECIDED, counted, and their guess lies in the enclosure (a
 * width of about 2 cols roundings at 53 bits). */
START_TEST(test_undecided)
{
    size_t cols = 64, j;
    double x[64];
    qf_ref_opts o = qf_ref_opts_default();
    qf_ref_out y;
    for (j = 0; j < cols; j++)
        x[j] = unif(7, j, 3.0);
    o.prec_extra = 0;
    o.prec_max = 0;
    y = run(&o, x, 1, cols, 1.0, 0);
    fprintf(stderr, "refs/softmax at 53 bits: %zu undecided of %zu\n", y.n_undecided, cols);
    ck_assert_uint_gt(y.n_undecided, 0);
    ck_assert_int_eq(y.max_prec, 53);
    {
        qf_ref_out z = run(NULL, x, 1, cols, 1.0, 0);
        for (j = 0; j < cols; j++) {
            if (y.status[j] == QF_REF_UNDECIDED)
                ck_assert(fabs(y.value[j] - z.value[j]) <=
                          128 * qf_format_ulp(qf_format_get(QF_FLOAT64), z.value[j]));
            else
                ck_assert(y.value[j] == z.value[j]);
        }
        qf_ref_out_free(&z);
    }
    qf_ref_out_free(&y);
    /* stochastic rounding is not a reference */
    o = qf_ref_opts_default();
    o.round = QF_ROUND_STOCHASTIC;
    ck_assert_int_eq(qf_ref_softmax(&o, x, 1, cols, 1.0, &y), QF_EINVAL);
}
END_TEST

START_TEST(test_long_row)
{
    size_t cols = 32768, j;
    double *x = malloc(cols * sizeof *x);
    qf_ref_opts o = qf_ref_opts_default();
    qf_ref_out y;
    for (j = 0; j < cols; j++)
        x[j] = unif(11, j, 12.0);
    o.format = qf_format_get(QF_FLOAT32);
    y = run(&o, x, 1, cols, 1.0, 1);
    ck_assert_uint_eq(y.n_undecided, 0);
    ck_assert_uint_eq(y.n_rounded, cols);
    qf_ref_out_free(&y);
    free(x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/softmax");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_precisions);
    tcase_add_test(tc, test_undecided);
    tcase_add_test(tc, test_long_row);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
