/* t-metrics.c: hand-computed metrics, percentiles, special-value
 * mismatches, growth exponents of synthetic power laws, bitwise checks;
 * the percentiles of large cases against a sort of every error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_metrics.h"
#include "qf_test.h"

#define CLOSE(a, b, tol) ck_assert_msg(fabs((a) - (b)) <= (tol)*fmax(1, fabs(b)), "%.17g vs %.17g", (a), (b))

START_TEST(test_elem)
{
    const qf_format *bf16 = qf_format_get(QF_BFLOAT16);
    qf_elem_err e;
    /* bf16 at 1: ulp 2^-7; got 1 + 2^-8 against exact 1: 0.5 ulp */
    e = qf_metrics_elem(bf16, 1 + 0x1p-8, 1, 0x1p-7);
    ck_assert(e.ulp == 0.5 && e.abs == 0x1p-8 && e.rel == 0x1p-8 && e.util == 0.5);
    e = qf_metrics_elem(bf16, 1 - 0x1p-7, 1, NAN);
    ck_assert(e.ulp == -1 && isnan(e.util));
    e = qf_metrics_elem(bf16, 0x1p-10, 0, 0);
    ck_assert(isinf(e.rel) && isinf(e.util));
    e = qf_metrics_elem(bf16, 0, 0, 0);
    ck_assert(e.rel == 0 && e.util == 0 && e.ulp == 0);
}
END_TEST

START_TEST(test_case_hand)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    /* exact x = (3, 4, 0, 1), got y = (3, 4 + 2^-20, 0, 1 - 2^-22) */
    double x[4] = {3, 4, 0, 1}, y[4] = {3, 4 + 0x1p-20, 0, 1 - 0x1p-22}, bnd[4] = {1e-9, 1e-9, 1e-9, 1e-9};
    qf_metrics_input in = {0};
    qf_metrics m;
    qf_elem_err el[4];
    double e2 = 0x1p-40 + 0x1p-44, x2 = 26, y2, xy;
    in.out = f32, in.n = 4, in.got = y, in.exact = x, in.bound = bnd, in.cols = 2;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, el), QF_OK);
    ck_assert_uint_eq(m.n_checked, 4);
    /* ulps of float32: at 4, ulp 2^-21 -> 2 ulp; at 1 (exact), ulp 2^-23 -> -2 ulp */
    ck_assert(el[1].ulp == 2 && el[3].ulp == -2);
    ck_assert(m.max_ulp == 2 && m.at_ulp == 1);
    ck_assert(m.max_abs == 0x1p-20 && m.at_abs == 1);
    ck_assert(m.max_rel == 0x1p-22);
    CLOSE(m.normwise, sqrt(e2 / x2), 1e-15);
    CLOSE(m.rms, sqrt(e2 / 4), 1e-15);
    CLOSE(m.bias, (0x1p-20 - 0x1p-22) / 4, 1e-15);
    CLOSE(m.bias_ulp, 0.0, 1e-15);
    CLOSE(m.sqnr_db, 10 * log10(x2 / e2), 1e-12);
    y2 = 9 + (4 + 0x1p-20) * (4 + 0x1p-20) + (1 - 0x1p-22) * (1 - 0x1p-22);
    xy = 9 + 4 * (4 + 0x1p-20) + (1 - 0x1p-22);
    CLOSE(m.cosine, xy / sqrt(x2 * y2), 1e-15);
    CLOSE(m.diff_dg, e2 / (x2 + y2), 1e-12);
    ck_assert_uint_eq(m.n_exact_rounded, 2);
    CLOSE(m.frac_exact_rounded, 0.5, 0);
    ck_assert_uint_eq(m.n_zero_ref, 1);
    CLOSE(m.frac_zero_ref, 0.25, 0);
    /* bound 1e-9 is exceeded by elements 1 and 3; the worst is element 1 */
    ck_assert_uint_eq(m.n_violations, 2);
    ck_assert_uint_eq(m.at_violation, 1);
    CLOSE(m.viol_err_ulp, 2.0, 0);
    {
        char w[32];
        qf_metrics_where(&m, m.at_violation, w, sizeof w);
        ck_assert_str_eq(w, "(0, 1)");
    }
    /* percentiles over |ulp| = {0, 2, 0, 2}: p50 = 0 (nearest rank 2), p90 = 2 */
    ck_assert(m.pct_ulp[0] == 0 && m.pct_ulp[1] == 2 && m.pct_ulp[3] == 2);
}
END_TEST

/* An exact zero that cancelled exactly where the kernel's accumulator
 * left a residue (an e5m2 GEMM, docs/verdicts.md): max_ulp counts it in
 * ulps of zero (2^-149 for float32: 2^149 ulps for a residue of 1),
 * max_ulp_nonzero leaves it out, and the zeros' own figures say how many
 * were missed and by how much, in value. */
START_TEST(test_exact_zeros)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    double x[5] = {0, 0, 1, 2, -0.0}, y[5] = {0, -1, 1 + 0x1p-23, 2, 0x1p-30};
    qf_metrics_input in = {0};
    qf_metrics m;
    in.out = f32, in.n = 5, in.got = y, in.exact = x;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert(m.max_ulp == 0x1p149 && m.at_ulp == 1); /* unchanged: the policy's max_ulp */
    ck_assert(m.max_ulp_nonzero == 1 && m.at_ulp_nonzero == 2);
    ck_assert_uint_eq(m.n_zero_ref, 3);
    ck_assert_uint_eq(m.n_zero_checked, 3);
    ck_assert_uint_eq(m.n_zero_inexact, 2);
    ck_assert(m.max_abs_zero == 1 && m.at_abs_zero == 1);
    /* Every exact zero right: 0, not NaN; no nonzero reference: NaN. */
    y[1] = 0, y[4] = -0.0;
    in.n = 2;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert(m.max_abs_zero == 0 && m.n_zero_inexact == 0 && m.n_zero_checked == 2);
    ck_assert(isnan(m.max_ulp_nonzero) && m.at_ulp_nonzero == 2 && m.max_ulp == 0);
    /* No exact zero: the zeros' figures are NaN and none, and the two ulp
     * maxima agree. */
    in.n = 2, in.exact = x + 2, in.got = y + 2;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert(m.max_ulp_nonzero == m.max_ulp && m.at_ulp_nonzero == m.at_ulp);
    ck_assert(isnan(m.max_abs_zero) && m.n_zero_checked == 0 && m.at_abs_zero == 2);
}
END_TEST

START_TEST(test_percentiles)
{
    enum { N = 1000 };
    static double x[N], y[N];
    const qf_format *f64 = qf_format_get(QF_FLOAT64);
    qf_metrics_input in = {0};
    qf_metrics m;
    size_t i;
    /* abs error i+1 at element i: p50 = 500, p90 = 900, p99 = 990, p99.9 = 999 */
    for (i = 0; i < N; i++) {
        x[(i * 37) % N] = 1e6;
        y[(i * 37) % N] = 1e6 + (double)(i + 1);
    }
    in.out = f64, in.n = N, in.got = y, in.exact = x;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert(m.pct_abs[0] == 500 && m.pct_abs[1] == 900 && m.pct_abs[2] == 990 && m.pct_abs[3] == 999);
    ck_assert(m.max_abs == 1000);
    ck_assert(isnan(m.max_util) && m.n_bound == 0 && isnan(m.pct_util[0]));
}
END_TEST

START_TEST(test_specials)
{
    const qf_format *f16 = qf_format_get(QF_FLOAT16), *e4 = qf_format_get(QF_FLOAT8_E4M3FN);
    /* 0: NaN where finite; 1: Inf where finite; 2: finite where NaN;
     * 3: -0 vs +0; 4: exact 1e6 overflows float16 -> Inf reference, got Inf: match;
     * 5: ref Inf, got -Inf; 6: NaN both; 7: fine. */
    double x[8] = {1, 2, NAN, 0, 1e6, INFINITY, NAN, 5},
           y[8] = {NAN, INFINITY, 3, -0.0, INFINITY, -INFINITY, NAN, 5};
    uint8_t st[8] = {0};
    qf_metrics_input in = {0};
    qf_metrics m;
    in.out = f16, in.n = 8, in.got = y, in.exact = x;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert_uint_eq(m.nonfinite_bad, 2);
    ck_assert_uint_eq(m.at_nonfinite_bad, 0);
    ck_assert_uint_eq(m.finite_bad, 1);
    ck_assert_uint_eq(m.at_finite_bad, 2);
    ck_assert_uint_eq(m.nan_mismatch, 2);
    ck_assert_uint_eq(m.inf_mismatch, 2);
    ck_assert_uint_eq(m.signed_zero_mismatch, 1);
    ck_assert_uint_eq(m.n_checked, 2);       /* 3 and 7 */
    ck_assert_uint_eq(m.n_exact_rounded, 2); /* 4 (overflow matched) and 7 */
    /* statuses: undecided / undefined elements are counted, not checked */
    st[0] = 2, st[2] = 3;
    in.status = st;
    ck_assert_int_eq(qf_metrics_compute(&in, &m, NULL), QF_OK);
    ck_assert_uint_eq(m.n_undecided, 1);
    ck_assert_uint_eq(m.n_undefined, 1);
    ck_assert_uint_eq(m.nonfinite_bad, 1);
    ck_assert_uint_eq(m.finite_bad, 0);
    /* e4m3fn, saturating case: reference rounded to max, got max: no mismatch */
    {
        double xs[1] = {1000}, ys[1] = {448}, rs[1] = {448};
        qf_metrics_input is = {0};
        is.out = e4, is.n = 1, is.got = ys, is.exact = xs, is.rounded = rs;
        ck_assert_int_eq(qf_metrics_compute(&is, &m, NULL), QF_OK);
        ck_assert_uint_eq(m.nan_mismatch + m.inf_mismatch + m.nonfinite_bad + m.finite_bad, 0);
        ck_assert_uint_eq(m.n_exact_rounded, 1);
    }
    /* all-zero reference and candidate: degenerate but well defined */
    {
        double z[3] = {0, 0, 0};
        qf_metrics_input iz = {0};
        iz.out = f16, iz.n = 3, iz.got = z, iz.exact = z;
        ck_assert_int_eq(qf_metrics_compute(&iz, &m, NULL), QF_OK);
        ck_assert(m.frac_zero_ref == 1 && m.normwise == 0 && isinf(m.sqnr_db) && m.cosine == 1);
    }
    ck_assert_int_eq(qf_metrics_compute(NULL, &m, NULL), QF_EINVAL);
}
END_TEST

START_TEST(test_growth)
{
    double k[8], e[8], slope, icpt, r2;
    size_t i;
    static const double p[] = {0.5, 1.0, 2.0};
    for (i = 0; i < 3; i++) {
        size_t j;
        for (j = 0; j < 8; j++) {
            k[j] = ldexp(1.0, (int)j + 4);
            e[j] = 3e-7 * pow(k[j], p[i]);
        }
        ck_assert_int_eq(qf_metrics_growth(8, k, e, &slope, &icpt, &r2), QF_OK);
        CLOSE(slope, p[i], 1e-12);
        CLOSE(exp(icpt), 3e-7, 1e-9);
        CLOSE(r2, 1.0, 1e-12);
    }
    /* noise lowers R^2; points with zero error are skipped */
    for (i = 0; i < 8; i++)
        e[i] = 1e-6 * sqrt(k[i]) * (i & 1 ? 1.5 : 0.7);
    e[3] = 0;
    ck_assert_int_eq(qf_metrics_growth(8, k, e, &slope, NULL, &r2), QF_OK);
    ck_assert(slope > 0.4 && slope < 0.6 && r2 < 0.99 && r2 > 0.5);
    ck_assert_int_eq(qf_metrics_growth(1, k, e, &slope, NULL, NULL), QF_EINVAL);
    k[1] = k[0];
    ck_assert_int_eq(qf_metrics_growth(2, k, e, &slope, NULL, NULL), QF_EINVAL);
}
END_TEST

START_TEST(test_bitwise)
{
    float a[5] = {1, 2, 3, -0.0f, 5}, b[5] = {1, 2, 3, 0.0f, 5};
    size_t nd, first;
    ck_assert_int_eq(qf_metrics_bitwise(a, a, 5, sizeof(float), &nd, &first), QF_OK);
    ck_assert_uint_eq(nd, 0);
    ck_assert_uint_eq(first, 5);
    /* -0 and +0 compare equal as numbers but not as bits */
    ck_assert_int_eq(qf_metrics_bitwise(a, b, 5, sizeof(float), &nd, &first), QF_OK);
    ck_assert_uint_eq(nd, 1);
    ck_assert_uint_eq(first, 3);
    ck_assert_int_eq(qf_metrics_bitwise(a, b, 5, 0, &nd, &first), QF_EINVAL);
}
END_TEST

/* The percentiles of a large case (selected in bounded memory, by radix
 * passes over the recomputed errors: qualify/metrics.c) are the values a
 * sort of every error puts at the nearest ranks, bit for bit: random
 * errors over many binades, a case where most errors are 0 (an exact
 * kernel), one where most are the same nonzero value (the search ends on
 * a bucket of equal values), errors equal but in their last bit, and a
 * bound on every other element (util's own count). */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double at_rank(double *v, size_t n, double p)
{
    double r = ceil(p * (double)n - 1e-9);
    size_t i = r < 1 ? 0 : (size_t)r - 1;
    return v[i >= n ? n - 1 : i];
}

START_TEST(test_percentiles_large)
{
    enum { N = 300000 };
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *b = malloc(N * sizeof *b), *v[4];
    qf_elem_err *e = malloc(N * sizeof *e);
    uint64_t st = qf_test_seed() ^ 0x9c7;
    int c, k, q;
    ck_assert(x && y && b && e);
    for (k = 0; k < 4; k++)
        ck_assert_ptr_nonnull(v[k] = malloc(N * sizeof *v[k]));
    for (c = 0; c < 4; c++) {
        qf_metrics_input in = {0};
        qf_metrics m;
        size_t i, n[4] = {0, 0, 0, 0};
        const double *pct[4];
        for (i = 0; i < N; i++) {
            double u = qf_test_unif01(&st), t = (double)(float)ldexp(1 + u, (int)(i % 40) - 20);
            x[i] = t;
            switch (c) {
            case 0: y[i] = (double)(float)(t * (1 + ldexp(u - 0.5, -(int)(i % 30)))); break;
            case 1: y[i] = i % 97 ? t : (double)(float)(t * 1.001); break;
            case 2: x[i] = 1.5, y[i] = i % 101 ? 1.5 + 0x1p-20 : 1.5 + 0x1p-10; break;
            default: x[i] = 1 + 0x1p-40 * (double)(i % 7), y[i] = 1 + 0x1p-22; break;
            }
            b[i] = i % 2 ? 0x1p-20 * fabs(x[i]) : NAN;
        }
        in.out = f32, in.n = N, in.got = y, in.exact = x, in.bound = b;
        ck_assert_int_eq(qf_metrics_compute(&in, &m, e), QF_OK);
        for (i = 0; i < N; i++) {
            if (isnan(e[i].abs))
                continue;
            v[0][n[0]++] = fabs(e[i].ulp), v[1][n[1]++] = e[i].abs, v[2][n[2]++] = e[i].rel;
            if (!isnan(e[i].util))
                v[3][n[3]++] = e[i].util;
        }
        pct[0] = m.pct_ulp, pct[1] = m.pct_abs, pct[2] = m.pct_rel, pct[3] = m.pct_util;
        for (k = 0; k < 4; k++) {
            qsort(v[k], n[k], sizeof *v[k], cmp_d);
            for (q = 0; q < QF_METRICS_NPCT; q++) {
                double want = at_rank(v[k], n[k], qf_metrics_pct[q]);
                ck_assert_msg(memcmp(&want, &pct[k][q], sizeof want) == 0,
                              "case %d kind %d pct %d: %a, sorted %a", c, k, q, pct[k][q], want);
            }
        }
    }
    for (k = 0; k < 4; k++)
        free(v[k]);
    free(x), free(y), free(b), free(e);
}
END_TEST

int main(void)
{
    return qf_test_main("metrics/metrics", "metrics", 120, NULL, NULL,
                        QF_TESTS(test_elem, test_case_hand, test_exact_zeros, test_percentiles,
                                 test_percentiles_large, test_specials, test_growth, test_bitwise));
}
