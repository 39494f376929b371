/* t-generate.c: input generation: determinism across chunking and thread
 * counts, the moments and tail rates of every distribution within stated
 * statistical bounds, exactness of small integers, quantization (the
 * reference values are members of the format), near-saturation range,
 * special-value rates, prescribed condition numbers, file inputs, and the
 * name and parameter parsers with their messages.
 *
 * Statistical bounds are 6 standard errors: a correct generator fails one
 * of them with probability below 1e-8 per check, for any QF_SEED. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_inputs.h"
#include "qf_npy.h"
#include "qf_safetensors.h"
#include "qf_test.h"

#define NSIG        6.0
#define GOLDEN_HASH 0xcc088344c296f915ull

static const qf_format *F(qf_format_id id)
{
    return qf_format_get(id);
}

static double *gen(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *f, size_t rows,
                   size_t cols)
{
    double *v = malloc(rows * cols * sizeof *v + 1);
    char err[512] = "";
    qf_status s = qf_inputs_generate(d, seed, stream, f, NULL, rows, cols, v, NULL, err, sizeof err);
    ck_assert_msg(s == QF_OK, "generate %s into %s: %s", qf_dist_name(d->kind), f ? f->name : "float64", err);
    return v;
}

/* |observed count - n p| within NSIG binomial standard deviations. */
static void check_rate(const char *what, size_t count, size_t n, double p)
{
    double sd = sqrt((double)n * p * (1 - p)) + 1;
    ck_assert_msg(fabs((double)count - (double)n * p) <= NSIG * sd,
                  "%s: %zu of %zu, expected rate %g (seed %llu)", what, count, n, p,
                  (unsigned long long)qf_test_seed());
}

static void moments(const double *v, size_t n, double *mean, double *var)
{
    double m = 0, s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        m += v[i];
    m /= (double)n;
    for (i = 0; i < n; i++)
        s += (v[i] - m) * (v[i] - m);
    *mean = m;
    *var = s / (double)(n - 1);
}

/* ---- Determinism ------------------------------------------------------------ */

START_TEST(test_determinism)
{
    static const qf_dist_kind kinds[] = {QF_DIST_NORMAL,    QF_DIST_UNIFORM,    QF_DIST_SMALL_INT,
                                         QF_DIST_OUTLIERS,  QF_DIST_HEAVY_TAIL, QF_DIST_NEAR_SATURATION,
                                         QF_DIST_SUBNORMAL, QF_DIST_SPECIAL,    QF_DIST_ILL_CONDITIONED};
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT8_E5M2};
    const size_t rows = 97, cols = 301; /* chunks of 16384 elements: several, uneven */
    uint64_t seed = qf_test_seed();
    size_t k, fi, n = rows * cols;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
            const qf_format *f = F(fmts[fi]);
            qf_dist d = qf_dist_default(kinds[k]);
            size_t eb = qf_format_array_bytes(f, n), b;
            unsigned char *c1 = malloc(eb), *c2 = malloc(eb), *c3 = malloc(eb);
            double *v1 = malloc(n * sizeof *v1), *v2 = malloc(n * sizeof *v2), *v3 = malloc(n * sizeof *v3);
            char err[512] = "";
            qf_encode_opts sr = qf_encode_opts_default();
            if (kinds[k] == QF_DIST_OUTLIERS)
                d.per_channel = (int)(fi & 1);
            if (kinds[k] == QF_DIST_ILL_CONDITIONED)
                d.cond = 1e3;
#ifdef _OPENMP
            omp_set_num_threads(1);
#endif
            ck_assert_msg(qf_inputs_generate(&d, seed, 3, f, NULL, rows, cols, v1, c1, err, sizeof err) ==
                              QF_OK,
                          "%s", err);
#ifdef _OPENMP
            omp_set_num_threads(4);
#endif
            ck_assert_int_eq(qf_inputs_generate(&d, seed, 3, f, NULL, rows, cols, v2, c2, err, sizeof err),
                             QF_OK);
            ck_assert_msg(memcmp(c1, c2, eb) == 0, "%s/%s: threads change the codes", qf_dist_name(d.kind),
                          f->name);
            ck_assert_msg(memcmp(v1, v2, n * sizeof *v1) == 0, "threads change the values");
            /* uneven row chunks */
            for (b = 0; b < rows;) {
                size_t e = b + 1 + (b * 7) % 13;
                if (e > rows)
                    e = rows;
                ck_assert_int_eq(
                    qf_inputs_generate_rows(&d, seed, 3, f, NULL, rows, cols, b, e, v3 + b * cols,
                                            c3 + b * cols * (size_t)(f->storage_bits / 8), err, sizeof err),
                    QF_OK);
                b = e;
            }
            ck_assert_msg(memcmp(c1, c3, eb) == 0, "%s/%s: chunking changes the codes", qf_dist_name(d.kind),
                          f->name);
            ck_assert(memcmp(v1, v3, n * sizeof *v1) == 0);
            /* another stream or seed gives other values */
            ck_assert_int_eq(qf_inputs_generate(&d, seed, 4, f, NULL, rows, cols, v2, c2, err, sizeof err),
                             QF_OK);
            ck_assert(memcmp(c1, c2, eb) != 0);
            ck_assert_int_eq(
                qf_inputs_generate(&d, seed + 1, 3, f, NULL, rows, cols, v2, c2, err, sizeof err), QF_OK);
            ck_assert(memcmp(c1, c2, eb) != 0);
            /* stochastic rounding too is chunk-independent */
            if (kinds[k] == QF_DIST_NORMAL) {
                sr.round = QF_ROUND_STOCHASTIC;
                sr.saturate = 1;
                ck_assert_int_eq(qf_inputs_generate(&d, seed, 3, f, &sr, rows, cols, v1, c1, err, sizeof err),
                                 QF_OK);
                for (b = 0; b < rows; b += 10)
                    ck_assert_int_eq(qf_inputs_generate_rows(&d, seed, 3, f, &sr, rows, cols, b,
                                                             b + 10 < rows ? b + 10 : rows, v3 + b * cols,
                                                             c3 + b * cols * (size_t)(f->storage_bits / 8),
                                                             err, sizeof err),
                                     QF_OK);
                ck_assert(memcmp(c1, c3, eb) == 0);
            }
            free(c1);
            free(c2);
            free(c3);
            free(v1);
            free(v2);
            free(v3);
        }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
}
END_TEST

/* Golden values: the generator must give these bits on every machine
 * (no libm in the samplers).  A change here changes every recorded case. */
START_TEST(test_golden)
{
    qf_dist d = qf_dist_default(QF_DIST_NORMAL);
    double v[4];
    uint64_t h = 0;
    size_t i;
    char err[256];
    ck_assert_int_eq(qf_inputs_generate(&d, 1, 0, NULL, NULL, 1, 4, v, NULL, err, sizeof err), QF_OK);
    for (i = 0; i < 4; i++) {
        uint64_t b;
        memcpy(&b, &v[i], 8);
        h = h * 1000003u ^ b;
        fprintf(stderr, "golden normal(seed 1)[%zu] = %a\n", i, v[i]);
    }
    ck_assert_msg(h == GOLDEN_HASH, "hash %#llx", (unsigned long long)h);
}
END_TEST

/* ---- Moments ---------------------------------------------------------------- */

START_TEST(test_normal_uniform)
{
    const size_t n = (size_t)qf_test_iters(200000);
    uint64_t seed = qf_test_seed();
    qf_dist d = qf_dist_default(QF_DIST_NORMAL);
    double m, var, *v;
    size_t i, c = 0;
    d.mean = 3;
    d.std = 2;
    v = gen(&d, seed, 0, NULL, 1, n);
    moments(v, n, &m, &var);
    ck_assert_msg(fabs(m - 3) <= NSIG * 2 / sqrt((double)n), "normal mean %g", m);
    ck_assert_msg(fabs(var - 4) <= NSIG * 4 * sqrt(2.0 / (double)n), "normal var %g", var);
    for (i = 0; i < n; i++)
        c += fabs(v[i] - 3) > 2 * 1.959963984540054;
    check_rate("normal |z| > 1.96", c, n, 0.05);
    for (i = c = 0; i < n; i++)
        c += fabs(v[i] - 3) > 2 * 3.290526731491926;
    check_rate("normal |z| > 3.29", c, n, 0.001);
    free(v);

    d = qf_dist_default(QF_DIST_UNIFORM);
    d.lo = -2;
    d.hi = 6;
    v = gen(&d, seed, 0, NULL, 1, n);
    moments(v, n, &m, &var);
    for (i = c = 0; i < n; i++) {
        ck_assert(v[i] >= -2 && v[i] < 6);
        c += v[i] < 0;
    }
    /* var(U) = 64/12, var of the sample mean = that / n */
    ck_assert_msg(fabs(m - 2) <= NSIG * sqrt(64.0 / 12 / (double)n), "uniform mean %g", m);
    ck_assert_msg(fabs(var - 64.0 / 12) <= NSIG * sqrt((double)(64 * 64) / 180 / (double)n), "uniform var %g",
                  var);
    check_rate("uniform < 0", c, n, 0.25);
    free(v);
}
END_TEST

START_TEST(test_heavy_tail)
{
    const size_t n = (size_t)qf_test_iters(200000);
    uint64_t seed = qf_test_seed();
    qf_dist d = qf_dist_default(QF_DIST_HEAVY_TAIL);
    double m, var, *v, *l;
    size_t i, c = 0, neg = 0;
    /* t(3): P(|T| > 3) = 0.05767 (two-sided), P(|T| > 10) = 0.002117 */
    v = gen(&d, seed, 0, NULL, 1, n);
    for (i = 0; i < n; i++)
        c += fabs(v[i]) > 3;
    check_rate("t3 |T| > 3", c, n, 0.0576688);
    for (i = c = 0; i < n; i++)
        c += fabs(v[i]) > 10;
    check_rate("t3 |T| > 10", c, n, 0.0021165);
    free(v);
    /* t(10): variance 10/8, excess kurtosis 1 -> var of s^2 = 1.25^2 * 3 / n */
    d.dof = 10;
    v = gen(&d, seed, 1, NULL, 1, n);
    moments(v, n, &m, &var);
    ck_assert_msg(fabs(m) <= NSIG * sqrt(1.25 / (double)n), "t10 mean %g", m);
    ck_assert_msg(fabs(var - 1.25) <= NSIG * 1.25 * sqrt(4.0 / (double)n), "t10 var %g", var);
    free(v);
    /* signed log-normal: log|x| ~ N(0, sigma^2) */
    d.tail = QF_TAIL_LOGNORMAL;
    d.sigma = 2;
    v = gen(&d, seed, 2, NULL, 1, n);
    l = malloc(n * sizeof *l);
    for (i = 0; i < n; i++) {
        l[i] = log(fabs(v[i]));
        neg += v[i] < 0;
    }
    moments(l, n, &m, &var);
    ck_assert_msg(fabs(m) <= NSIG * 2 / sqrt((double)n), "lognormal log-mean %g", m);
    ck_assert_msg(fabs(var - 4) <= NSIG * 4 * sqrt(2.0 / (double)n), "lognormal log-var %g", var);
    check_rate("lognormal sign", neg, n, 0.5);
    free(l);
    free(v);
}
END_TEST

START_TEST(test_outliers)
{
    const size_t rows = 200, cols = 500, n = rows * cols;
    uint64_t seed = qf_test_seed();
    qf_dist nd = qf_dist_default(QF_DIST_NORMAL), d = qf_dist_default(QF_DIST_OUTLIERS);
    double *base = gen(&nd, seed, 5, NULL, rows, cols), *v;
    size_t i, j, c = 0, chan = 0;
    /* per entry: the outliers are the base normal draws times scale */
    d.fraction = 0.02;
    d.scale = 64;
    v = gen(&d, seed, 5, NULL, rows, cols);
    for (i = 0; i < n; i++) {
        ck_assert(v[i] == base[i] || v[i] == base[i] * 64);
        c += v[i] != base[i];
    }
    check_rate("outlier entries", c, n, 0.02);
    free(v);
    /* per channel: exactly round(fraction * cols) whole columns */
    d.per_channel = 1;
    d.fraction = 0.01;
    v = gen(&d, seed, 5, NULL, rows, cols);
    for (j = 0; j < cols; j++) {
        int out = v[j] != base[j];
        chan += (size_t)out;
        for (i = 0; i < rows; i++)
            ck_assert(v[i * cols + j] == (out ? base[i * cols + j] * 64 : base[i * cols + j]));
    }
    ck_assert_uint_eq(chan, 5);
    free(v);
    /* a tiny fraction still gives one channel */
    d.fraction = 1e-9;
    v = gen(&d, seed, 5, NULL, 3, cols);
    for (j = chan = 0; j < cols; j++)
        chan += v[j] != base[j];
    ck_assert_uint_eq(chan, 1);
    free(v);
    free(base);
}
END_TEST

/* ---- Small integers: exact dot products -------------------------------------- */

START_TEST(test_small_int)
{
    const size_t K = 4096;
    uint64_t seed = qf_test_seed();
    qf_dist d = qf_dist_default(QF_DIST_SMALL_INT);
    int64_t m = qf_inputs_small_int_max(F(QF_FLOAT8_E4M3FN), 24, K);
    double *x, *y;
    float acc = 0;
    int64_t exact = 0;
    size_t i, hist[9] = {0};
    char err[256];
    /* e4m3 holds the integers up to 16; fp32 accumulation of 4096 products
     * is exact while 4096 m^2 <= 2^24, so m = 16 (FACTS: e4m3 p = 4). */
    ck_assert_int_eq(m, 16);
    ck_assert_int_eq(qf_inputs_small_int_max(F(QF_FLOAT4_E2M1FN), 24, 1), 4);
    ck_assert_int_eq(qf_inputs_small_int_max(F(QF_FLOAT16), 11, 128), 4);
    ck_assert_int_eq(qf_inputs_small_int_max(F(QF_FLOAT16), 11, 129), 3);
    ck_assert_int_eq(qf_inputs_small_int_max(F(QF_INT8), 24, 1), 127);
    d.int_max = m;
    x = gen(&d, seed, 0, F(QF_FLOAT8_E4M3FN), 1, K);
    y = gen(&d, seed, 1, F(QF_FLOAT8_E4M3FN), 1, K);
    for (i = 0; i < K; i++) {
        ck_assert(x[i] == floor(x[i]) && fabs(x[i]) <= 16);
        acc += (float)x[i] * (float)y[i]; /* fp32, any order is exact */
        exact += (int64_t)x[i] * (int64_t)y[i];
    }
    ck_assert(fabs((double)exact) <= (double)K * 256);
    ck_assert((double)acc == (double)exact);
    free(x);
    free(y);
    /* default range 4 covers every integer; e2m1 keeps them exact */
    d = qf_dist_default(QF_DIST_SMALL_INT);
    x = gen(&d, seed, 0, F(QF_FLOAT4_E2M1FN), 1, 9000);
    for (i = 0; i < 9000; i++) {
        ck_assert(x[i] == floor(x[i]) && fabs(x[i]) <= 4);
        hist[(int)x[i] + 4]++;
    }
    for (i = 0; i < 9; i++)
        check_rate("small_int value", hist[i], 9000, 1.0 / 9);
    free(x);
    /* unsigned formats: [0, m] */
    x = gen(&d, seed, 0, F(QF_UINT4), 1, 1000);
    for (i = 0; i < 1000; i++)
        ck_assert(x[i] >= 0 && x[i] <= 4);
    free(x);
    /* too large for the format */
    d.int_max = 17;
    x = malloc(8 * sizeof *x);
    ck_assert_int_eq(
        qf_inputs_generate(&d, seed, 0, F(QF_FLOAT8_E4M3FN), NULL, 1, 8, x, NULL, err, sizeof err),
        QF_EINVAL);
    ck_assert_msg(strstr(err, "int_max = 17 must be in [1, 16]") != NULL, "%s", err);
    free(x);
}
END_TEST

/* ---- Quantization ----------------------------------------------------------- */

START_TEST(test_quantized_members)
{
    static const qf_format_id ids[] = {QF_FLOAT32,       QF_TF32,        QF_BFLOAT16,        QF_FLOAT16,
                                       QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_FLOAT8_E4M3FNUZ, QF_FLOAT6_E2M3FN,
                                       QF_FLOAT4_E2M1FN, QF_INT8};
    uint64_t seed = qf_test_seed();
    size_t k, i, n = 5000;
    for (k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const qf_format *f = F(ids[k]);
        qf_dist d = qf_dist_default(QF_DIST_NORMAL);
        double *v = malloc(n * sizeof *v), *raw = malloc(n * sizeof *raw), mx = 0;
        void *codes = malloc(qf_format_array_bytes(f, n));
        double *dec = malloc(n * sizeof *dec);
        char err[256];
        d.std = f->kind == QF_KIND_INT ? 200 : 4 * f->max; /* overflows often: saturation */
        ck_assert_int_eq(qf_inputs_generate(&d, seed, 0, f, NULL, 1, n, v, codes, err, sizeof err), QF_OK);
        ck_assert_int_eq(qf_inputs_draw(&d, seed, 0, f, 1, n, 0, 1, raw, err, sizeof err), QF_OK);
        ck_assert_int_eq(qf_format_decode_array(f, codes, n, dec), QF_OK);
        for (i = 0; i < n; i++) {
            double lim = f->kind == QF_KIND_INT ? (double)f->int_max + 1 : f->max;
            /* values are the codes' exact decodings, finite (saturating) */
            ck_assert(memcmp(&dec[i], &v[i], 8) == 0);
            ck_assert_msg(isfinite(v[i]) && fabs(v[i]) <= lim, "%s: %g", f->name, v[i]);
            /* a member of the format: re-encoding is the identity */
            ck_assert(qf_format_decode(f, qf_format_encode(f, v[i], QF_ROUND_RNE, 0, 0, 0)) == v[i]);
            /* one nearest-even rounding of the raw draw */
            ck_assert(qf_format_encode(f, raw[i], QF_ROUND_RNE, 1, 0, 0) ==
                      qf_format_encode(f, v[i], QF_ROUND_RNE, 1, 0, 0));
            if (fabs(v[i]) > mx)
                mx = fabs(v[i]);
        }
        if (f->kind != QF_KIND_INT)
            ck_assert_msg(mx == f->max, "%s: saturation never reached max", f->name);
        free(v);
        free(raw);
        free(codes);
        free(dec);
    }
}
END_TEST

/* Non-default encoding: non-saturating overflow gives the format's
 * overflow value (NaN for e4m3fn, docs/numerics.md#conversions). */
START_TEST(test_encode_opts)
{
    const qf_format *f = F(QF_FLOAT8_E4M3FN);
    qf_dist d = qf_dist_default(QF_DIST_NORMAL);
    qf_encode_opts o = qf_encode_opts_default(); /* nearest-even, not saturating */
    size_t i, n = 2000, nan = 0;
    double v[2000];
    char err[256];
    d.std = 1000;
    ck_assert_int_eq(qf_inputs_generate(&d, qf_test_seed(), 0, f, &o, 1, n, v, NULL, err, sizeof err), QF_OK);
    for (i = 0; i < n; i++) {
        nan += isnan(v[i]) != 0;
        ck_assert(isnan(v[i]) || fabs(v[i]) <= 448);
    }
    /* P(|1000 z| > 464) = 0.643 */
    check_rate("e4m3fn overflow to NaN", nan, n, 0.6427);
}
END_TEST

START_TEST(test_near_saturation)
{
    static const qf_format_id ids[] = {QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_FLOAT8_E4M3FNUZ,
                                       QF_FLOAT16,       QF_BFLOAT16,    QF_INT8};
    uint64_t seed = qf_test_seed();
    size_t k, i, n = 4000;
    for (k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const qf_format *f = F(ids[k]);
        qf_dist d = qf_dist_default(QF_DIST_NEAR_SATURATION);
        double mx = f->kind == QF_KIND_INT ? (double)f->int_max : f->max, *v = gen(&d, seed, 0, f, 1, n);
        size_t neg = 0, top = 0;
        for (i = 0; i < n; i++) {
            ck_assert_msg(fabs(v[i]) >= 0.5 * mx - 0.5 && fabs(v[i]) <= mx, "%s: %g", f->name, v[i]);
            neg += v[i] < 0;
            top += fabs(v[i]) == mx;
        }
        check_rate("near_saturation sign", neg, n, 0.5);
        if (f->bits <= 8) /* elsewhere max is a rare rounding */
            ck_assert(top > 0);
        free(v);
    }
}
END_TEST

START_TEST(test_subnormal)
{
    static const qf_format_id ids[] = {QF_FLOAT32,     QF_FLOAT16,       QF_BFLOAT16, QF_FLOAT8_E4M3FN,
                                       QF_FLOAT8_E5M2, QF_FLOAT6_E3M2FN, QF_FLOAT64};
    uint64_t seed = qf_test_seed();
    size_t k, i, n = 20000;
    char err[256];
    for (k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const qf_format *f = F(ids[k]);
        qf_dist d = qf_dist_default(QF_DIST_SUBNORMAL);
        double *v;
        size_t sub = 0;
        d.fraction = 0.3;
        v = gen(&d, seed, 0, f, 1, n);
        for (i = 0; i < n; i++)
            sub += v[i] != 0 && fabs(v[i]) < f->min_normal;
        /* the bulk N(0,1) adds the draws that round to a subnormal,
         * |z| in [min_sub / 2, min_normal - min_sub / 2], which matters for
         * the narrow formats only (e4m3: about 0.012) */
        check_rate(f->name, sub, n,
                   0.3 + 0.7 * (erf((f->min_normal - f->min_subnormal / 2) / sqrt(2.0)) -
                                erf(f->min_subnormal / 2 / sqrt(2.0))));
        free(v);
    }
    {
        qf_dist d = qf_dist_default(QF_DIST_SUBNORMAL);
        double v[4];
        ck_assert_int_eq(
            qf_inputs_generate(&d, seed, 0, F(QF_FLOAT8_E8M0FNU), NULL, 1, 4, v, NULL, err, sizeof err),
            QF_EINVAL);
        ck_assert_msg(strstr(err, "no subnormal") != NULL, "%s", err);
    }
}
END_TEST

START_TEST(test_special)
{
    uint64_t seed = qf_test_seed();
    size_t i, n = 50000, nan = 0, inf = 0, zero = 0, neg = 0;
    qf_dist d = qf_dist_default(QF_DIST_SPECIAL);
    double *v;
    char err[256];
    d.rate_nan = 0.02;
    d.rate_inf = 0.03;
    d.rate_zero = 0.05;
    v = gen(&d, seed, 0, F(QF_FLOAT8_E5M2), 1, n);
    for (i = 0; i < n; i++) {
        nan += isnan(v[i]) != 0;
        inf += isinf(v[i]) != 0;
        zero += v[i] == 0;
        neg += v[i] == 0 && signbit(v[i]);
    }
    check_rate("NaN", nan, n, 0.02);
    check_rate("Inf", inf, n, 0.03);
    /* zeros: the requested ones plus normal draws that round to 0 (|z| < 2^-17) */
    check_rate("zero", zero, n, 0.05);
    check_rate("-0 among zeros", neg, zero, 0.5);
    free(v);
    /* fixed sign */
    d.sign = -1;
    v = gen(&d, seed, 0, F(QF_FLOAT32), 1, n);
    for (i = 0; i < n; i++)
        if (isinf(v[i]) || v[i] == 0)
            ck_assert(signbit(v[i]));
    free(v);
    /* formats without the special: an error, not a silent substitute */
    v = malloc(8 * sizeof *v);
    ck_assert_int_eq(
        qf_inputs_generate(&d, seed, 0, F(QF_FLOAT8_E4M3FN), NULL, 1, 8, v, NULL, err, sizeof err),
        QF_EINVAL);
    ck_assert_msg(strstr(err, "has no infinity") != NULL, "%s", err);
    ck_assert_int_eq(
        qf_inputs_generate(&d, seed, 0, F(QF_FLOAT4_E2M1FN), NULL, 1, 8, v, NULL, err, sizeof err),
        QF_EINVAL);
    ck_assert_msg(strstr(err, "has no NaN") != NULL, "%s", err);
    /* the automatic rates follow the format */
    {
        qf_dist a = qf_dist_default(QF_DIST_SPECIAL);
        double *w = gen(&a, seed, 0, F(QF_FLOAT8_E4M3FN), 1, n);
        for (i = nan = inf = 0; i < n; i++) {
            nan += isnan(w[i]) != 0;
            inf += isinf(w[i]) != 0;
        }
        check_rate("auto NaN in e4m3fn", nan, n, 0.01);
        ck_assert_uint_eq(inf, 0);
        free(w);
        w = gen(&a, seed, 0, F(QF_FLOAT4_E2M1FN), 1, 100);
        for (i = 0; i < 100; i++)
            ck_assert(isfinite(w[i]));
        free(w);
    }
    d.rate_nan = 0.7;
    d.rate_inf = 0.7;
    ck_assert_int_eq(qf_inputs_generate(&d, seed, 0, F(QF_FLOAT32), NULL, 1, 8, v, NULL, err, sizeof err),
                     QF_EINVAL);
    free(v);
}
END_TEST

/* ---- Ill-conditioned dot products ------------------------------------------- */

static void check_cond(qf_format_id fid, double cond, size_t n, double factor)
{
    const qf_format *f = F(fid);
    const size_t rows = 6;
    qf_dist d = qf_dist_default(QF_DIST_ILL_CONDITIONED);
    double *x = malloc(rows * n * sizeof *x), *y = malloc(rows * n * sizeof *y), c[rows];
    void *xc = malloc(qf_format_array_bytes(f, rows * n));
    char err[256];
    size_t r, i;
    d.cond = cond;
    ck_assert_msg(qf_inputs_dot_pairs(&d, qf_test_seed(), 7, f, f, NULL, rows, n, x, xc, y, NULL, c, err,
                                      sizeof err) == QF_OK,
                  "%s", err);
    for (r = 0; r < rows; r++) {
        double v, a;
        qf_dot_round rd = {NULL, QF_ROUND_RNE, 0, 32, 0};
        fprintf(stderr, "%s n=%zu cond %g: achieved %g\n", f->name, n, cond, c[r]);
        ck_assert_msg(c[r] >= cond / factor && c[r] <= cond * factor,
                      "%s n=%zu: cond %g, achieved %g (seed %llu)", f->name, n, cond, c[r],
                      (unsigned long long)qf_test_seed());
        /* reported cond is the quantized pair's, recomputed here */
        ck_assert_int_eq(qf_dot(n, x + r * n, 1, y + r * n, 1, f, f, &rd, NULL, &v, &a), QF_OK);
        ck_assert(fabs(a / fabs(v) - c[r]) <= 1e-12 * c[r]);
        for (i = 0; i < n; i++)
            ck_assert(qf_format_decode(f, qf_format_encode(f, x[r * n + i], QF_ROUND_RNE, 0, 0, 0)) ==
                      x[r * n + i]);
    }
    free(x);
    free(y);
    free(xc);
}

START_TEST(test_ill_conditioned)
{
    check_cond(QF_FLOAT64, 1e12, 100, 4);
    check_cond(QF_FLOAT64, 1e30, 200, 4);
    check_cond(QF_FLOAT32, 1e6, 64, 4);
    check_cond(QF_FLOAT32, 1e10, 1000, 4);
    check_cond(QF_BFLOAT16, 1e4, 256, 4);
    check_cond(QF_FLOAT16, 1e4, 128, 4);
    check_cond(QF_FLOAT8_E4M3FN, 1e3, 256, 4);
    check_cond(QF_FLOAT8_E5M2, 1e3, 256, 4);
}
END_TEST

/* generate() with streams 2k, 2k+1 gives the two sides of dot_pairs(k). */
START_TEST(test_pairs_by_stream)
{
    const qf_format *f = F(QF_BFLOAT16);
    qf_dist d = qf_dist_default(QF_DIST_ILL_CONDITIONED);
    const size_t rows = 5, n = 64;
    double x[5 * 64], y[5 * 64], *a, *b;
    char err[256];
    d.cond = 1e4;
    ck_assert_int_eq(
        qf_inputs_dot_pairs(&d, 11, 2, f, f, NULL, rows, n, x, NULL, y, NULL, NULL, err, sizeof err), QF_OK);
    a = gen(&d, 11, 4, f, rows, n);
    b = gen(&d, 11, 5, f, rows, n);
    ck_assert(memcmp(a, x, sizeof x) == 0);
    ck_assert(memcmp(b, y, sizeof y) == 0);
    free(a);
    free(b);
}
END_TEST

/* ---- Files ------------------------------------------------------------------ */

START_TEST(test_file)
{
    char dir[256], p1[300], p2[300], p3[300], err[512];
    float data[12] = {1.0f, 2.5f, -300.0f, 1000.0f, 0.1f, -0.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};
    uint8_t e4[12];
    size_t s34[2] = {3, 4}, s12[1] = {12}, i;
    qf_dist d = qf_dist_default(QF_DIST_FILE);
    const qf_format *f = F(QF_FLOAT8_E4M3FN);
    double v[12];
    qf_st_write_tensor tw[2] = {{"w", QF_ST_F32, 2, s34, data}, {"codes", QF_ST_F8_E4M3, 1, s12, e4}};
    qf_test_mkdtemp(dir, sizeof dir, "qf-gen");
    snprintf(p1, sizeof p1, "%s/a.npy", dir);
    snprintf(p2, sizeof p2, "%s/m.safetensors", dir);
    snprintf(p3, sizeof p3, "%s/raw.npy", dir);
    for (i = 0; i < 12; i++)
        e4[i] = (uint8_t)(0x30 + i);
    ck_assert_int_eq(qf_npy_write_data(p1, QF_NPY_FLOAT32, 2, s34, data, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_npy_write_data(p3, QF_NPY_RAW8, 1, s12, e4, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_safetensors_write(p2, tw, 2, NULL, NULL, 0, err, sizeof err), QF_OK);

    /* .npy float32 -> quantized into e4m3 (saturating: 1000 -> 448) */
    ck_assert_int_eq(qf_dist_set(&d, "path", p1, err, sizeof err), QF_OK);
    ck_assert_msg(qf_inputs_generate(&d, 0, 0, f, NULL, 3, 4, v, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < 12; i++)
        ck_assert(v[i] == qf_format_decode(f, qf_format_encode(f, data[i], QF_ROUND_RNE, 1, 0, 0)));
    ck_assert(v[3] == 448 && v[2] == -288);
    /* rows of a chunk */
    ck_assert_int_eq(qf_inputs_generate_rows(&d, 0, 0, f, NULL, 3, 4, 1, 2, v, NULL, err, sizeof err), QF_OK);
    ck_assert(v[0] == qf_format_decode(f, qf_format_encode(f, data[4], QF_ROUND_RNE, 1, 0, 0)));
    /* shape mismatch */
    ck_assert_int_eq(qf_inputs_generate(&d, 0, 0, f, NULL, 2, 4, v, NULL, err, sizeof err), QF_EINVAL);
    ck_assert_msg(strstr(err, "a.npy: shape (3, 4) has 12 elements, the case needs 8") != NULL, "%s", err);
    /* raw .npy codes are codes of the case's format */
    snprintf(d.path, sizeof d.path, "%s", p3);
    ck_assert_msg(qf_inputs_generate(&d, 0, 0, f, NULL, 1, 12, v, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < 12; i++)
        ck_assert(v[i] == qf_format_decode(f, e4[i]));
    ck_assert_int_eq(qf_inputs_generate(&d, 0, 0, F(QF_BFLOAT16), NULL, 1, 12, v, NULL, err, sizeof err),
                     QF_EFORMAT);
    /* .safetensors by name */
    ck_assert_int_eq(qf_dist_parse("file:tensor=codes", &d, err, sizeof err), QF_OK);
    snprintf(d.path, sizeof d.path, "%s", p2);
    ck_assert_msg(qf_inputs_generate(&d, 0, 0, f, NULL, 4, 3, v, NULL, err, sizeof err) == QF_OK, "%s", err);
    for (i = 0; i < 12; i++)
        ck_assert(v[i] == qf_format_decode(f, e4[i]));
    snprintf(d.tensor, sizeof d.tensor, "nope");
    ck_assert_int_eq(qf_inputs_generate(&d, 0, 0, f, NULL, 4, 3, v, NULL, err, sizeof err), QF_EINVAL);
    ck_assert_msg(strstr(err, "no tensor 'nope' (tensors: w, codes)") != NULL, "%s", err);
    d.tensor[0] = '\0'; /* two tensors: the name is required */
    ck_assert_int_eq(qf_inputs_generate(&d, 0, 0, f, NULL, 4, 3, v, NULL, err, sizeof err), QF_EINVAL);
    snprintf(d.path, sizeof d.path, "%s/absent.npy", dir);
    ck_assert_int_eq(qf_inputs_generate(&d, 0, 0, f, NULL, 4, 3, v, NULL, err, sizeof err), QF_EIO);
    unlink(p1);
    unlink(p2);
    unlink(p3);
    rmdir(dir);
}
END_TEST

/* ---- Names and parameters ----------------------------------------------------- */

START_TEST(test_parse)
{
    qf_dist d;
    char err[512], list[256];
    ck_assert_int_eq(qf_dist_parse("outliers:fraction=0.001,scale=50,per_channel=1", &d, err, sizeof err),
                     QF_OK);
    ck_assert_int_eq(d.kind, QF_DIST_OUTLIERS);
    ck_assert(d.fraction == 0.001 && d.scale == 50 && d.per_channel == 1 && d.std == 1);
    ck_assert_int_eq(qf_dist_parse("heavy_tail:tail=lognormal,sigma=1.5", &d, err, sizeof err), QF_OK);
    ck_assert(d.tail == QF_TAIL_LOGNORMAL && d.sigma == 1.5);
    ck_assert_int_eq(qf_dist_parse("normal", &d, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_dist_parse("gaussian", &d, err, sizeof err), QF_EPARSE);
    qf_dist_list_names(list, sizeof list);
    ck_assert_msg(strstr(err, "distribution 'gaussian' unknown (valid: normal, uniform, small_int") != NULL,
                  "%s", err);
    ck_assert(strstr(err, list) != NULL);
    ck_assert_int_eq(qf_dist_parse("normal:sd=2", &d, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "parameter 'sd' unknown (valid: mean, std)") != NULL, "%s", err);
    ck_assert_int_eq(qf_dist_parse("normal:std=two", &d, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "'std' = 'two' is not a number") != NULL, "%s", err);
    ck_assert_int_eq(qf_dist_parse("normal:std", &d, err, sizeof err), QF_EPARSE);
    ck_assert_int_eq(qf_dist_parse("small_int:int_max=2.5", &d, err, sizeof err), QF_EPARSE);
    ck_assert_int_eq(qf_dist_parse("heavy_tail:tail=cauchy", &d, err, sizeof err), QF_EPARSE);
    ck_assert_int_eq(qf_dist_parse("special:rate_nan=0.1,sign=-1", &d, err, sizeof err), QF_OK);
    ck_assert(d.rate_nan == 0.1 && d.sign == -1);
    ck_assert_str_eq(qf_dist_name(QF_DIST_ILL_CONDITIONED), "ill_conditioned");
    /* domains */
    d = qf_dist_default(QF_DIST_NORMAL);
    d.std = -1;
    ck_assert_int_eq(qf_dist_check(&d, NULL, err, sizeof err), QF_EINVAL);
    d = qf_dist_default(QF_DIST_ILL_CONDITIONED);
    d.cond = 0.5;
    ck_assert_int_eq(qf_dist_check(&d, NULL, err, sizeof err), QF_EINVAL);
    ck_assert_msg(strstr(err, "cond = 0.5") != NULL, "%s", err);
    d = qf_dist_default(QF_DIST_FILE);
    ck_assert_int_eq(qf_dist_check(&d, NULL, err, sizeof err), QF_EINVAL);
}
END_TEST

int main(void)
{
    return qf_test_main("inputs", "core", 0, NULL, NULL,
                        QF_TESTS(test_determinism, test_golden, test_normal_uniform, test_heavy_tail,
                                 test_outliers, test_small_int, test_quantized_members, test_encode_opts,
                                 test_near_saturation, test_subnormal, test_special, test_ill_conditioned,
                                 test_pairs_by_stream, test_file, test_parse));
}
