/* t-stochastic.c: stochastic rounding (QF_ROUND_STOCHASTIC).
 *
 * The rule (docs/precision.md): with b = random_bits, the low b bits of
 * the random word are added below the kept bits and the sum truncated, so
 * the result rounds away from zero with probability
 *     q_b = floor(f * 2^b) / 2^b,
 * f = (|x| - |lo|) / (|hi| - |lo|) the discarded fraction, lo and hi the
 * neighbours of x toward and away from zero (MPFR, _ref_format.h).
 *
 * Checks:
 * 1. every result is lo or hi (past max: max or the overflow value), for
 *    random inputs over each format's whole range;
 * 2. for b <= 10, over all 2^b random words the number of results equal to
 *    hi is exactly floor(f * 2^b): the truncation is exact, not just close,
 *    and bits above b are ignored;
 * 3. the mean of N draws (words from qf_rng_u64 through the array encoder)
 *    converges: with ups the number of results equal to hi, the sample mean
 *    is lo + (ups/N)(hi - lo).  By Hoeffding, P(|ups/N - q_b| >= t) <=
 *    2 exp(-2 N t^2); we take t = sqrt(ln(2/1e-9) / (2N)) (false alarm rate
 *    1e-9 per input) and require
 *        |mean - E[mean]| <= t ulp,  E[mean] = lo + q_b ulp,
 *        |mean - x|       <= (t + 2^-b) ulp,
 *    ulp = |hi - lo|, since 0 <= f - q_b < 2^-b (the truncation bias,
 *    toward zero, which b = 3 makes visible: up to 1/8 ulp);
 * 4. array encode with a seed is reproducible, changes with the seed, and
 *    encoding in chunks (qf_format_encode_array_at) gives the same codes.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "qf_format.h"
#include "qf_test.h"
#include "_ref_format.h"

#define N_NEIGHBOUR   20000L
#define N_MEAN_INPUTS 40L
#define N_DRAWS       4096
#define MAX_REPORT    12

static long n_checked, n_failed;

static void fail_msg(const qf_format *f, const char *what, double x, int b, const char *detail)
{
    n_failed++;
    if (n_failed <= MAX_REPORT)
        fprintf(stderr,
                "FAIL stochastic %s %s x=%a random_bits=%d: %s [QF_SEED=%" PRIu64
                " t-precision-stochastic]\n",
                f->name, what, x, b, detail, qf_test_seed());
}

static void finish(const char *what)
{
    qf_test_tally(what, n_checked, n_failed);
}

/* The two candidates: rounded toward zero and away from zero. */
static void neighbours(const qf_format *f, double x, int sat, uint64_t *lo, uint64_t *hi)
{
    *lo = ref_encode_d(f, x, QF_ROUND_RTZ, sat);
    *hi = ref_encode_d(f, x, signbit(x) ? QF_ROUND_DOWN : QF_ROUND_UP, sat);
}

/* 1. only the neighbours, everywhere */
START_TEST(test_neighbours)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x600u + (unsigned)_i)};
    long i, n = qf_test_iters(N_NEIGHBOUR);
    n_checked = n_failed = 0;
    for (i = 0; i < n; i++) {
        double x = ref_random_double(&r, f);
        int sat = (int)(i & 1), d;
        uint64_t lo, hi;
        neighbours(f, x, sat, &lo, &hi);
        for (d = 0; d < 8; d++) {
            int b = 1 + (int)ref_rng_below(&r, 32);
            uint64_t c = qf_format_encode(f, x, QF_ROUND_STOCHASTIC, sat, b, ref_rng_next(&r));
            n_checked++;
            if (c != lo && c != hi) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "saturate=%d got 0x%" PRIX64 ", neighbours 0x%" PRIX64 " 0x%" PRIX64, sat, c, lo,
                         hi);
                fail_msg(f, "neighbour", x, b, msg);
            }
        }
    }
    finish(f->name);
}
END_TEST

/* A random input whose neighbours are both finite values of the format
 * (no overflow, no NaN code), with its discarded fraction as an exact
 * MPFR number.  Returns 0 if the draw does not qualify. */
static int pick_input(const qf_format *f, ref_rng *r, double *x, uint64_t *lo, uint64_t *hi, mpfr_ptr frac)
{
    double vlo, vhi;
    mpfr_t a, b;
    *x = ref_random_double(r, f);
    if (!isfinite(*x) || fabs(*x) > f->max)
        return 0;
    if (f->kind == QF_KIND_INT && (*x < (double)f->int_min || *x > (double)f->int_max))
        return 0;
    if (f->kind == QF_KIND_SCALE && !(*x >= 0x1p-127))
        return 0;
    neighbours(f, *x, 0, lo, hi);
    vlo = ref_decode_d(f, *lo);
    vhi = ref_decode_d(f, *hi);
    if (!isfinite(vlo) || !isfinite(vhi))
        return 0;
    if (vlo == vhi) {
        mpfr_set_zero(frac, 1);
        return 1;
    }
    mpfr_inits2(2200, a, b, (mpfr_ptr)0);
    mpfr_set_d(a, fabs(*x), MPFR_RNDN);
    mpfr_set_d(b, fabs(vlo), MPFR_RNDN);
    mpfr_sub(a, a, b, MPFR_RNDN);                    /* exact */
    mpfr_set_d(b, fabs(vhi) - fabs(vlo), MPFR_RNDN); /* a power of two: exact */
    mpfr_div(frac, a, b, MPFR_RNDN);                 /* exact: dividing by a power of two */
    mpfr_clears(a, b, (mpfr_ptr)0);
    return 1;
}

/* floor(frac * 2^b) */
static uint64_t trunc_count(mpfr_srcptr frac, int b)
{
    mpfr_t t;
    uint64_t k;
    mpfr_init2(t, mpfr_get_prec(frac));
    mpfr_mul_2ui(t, frac, (unsigned long)b, MPFR_RNDN);
    mpfr_rint_floor(t, t, MPFR_RNDN);
    k = (uint64_t)mpfr_get_uj(t, MPFR_RNDN);
    mpfr_clear(t);
    return k;
}

/* 2. exhaustive over the random words for small b */
START_TEST(test_exact_probability)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    static const int bs[] = {1, 2, 3, 5, 8, 10};
    ref_rng r = {qf_test_seed() ^ (0x700u + (unsigned)_i)};
    long i, n = qf_test_iters(N_MEAN_INPUTS), tries = 0;
    mpfr_t frac;
    mpfr_init2(frac, 2200);
    n_checked = n_failed = 0;
    for (i = 0; i < n && tries < 1000 * n; tries++) {
        double x;
        uint64_t lo, hi;
        size_t k;
        if (!pick_input(f, &r, &x, &lo, &hi, frac))
            continue;
        i++;
        for (k = 0; k < sizeof bs / sizeof bs[0]; k++) {
            int b = bs[k];
            uint64_t w, ups = 0, want = trunc_count(frac, b), junk = ref_rng_next(&r) << b;
            int bad = 0;
            for (w = 0; w < (1ull << b); w++) {
                uint64_t c = qf_format_encode(f, x, QF_ROUND_STOCHASTIC, 0, b, w | junk);
                if (c == hi && hi != lo)
                    ups++;
                else if (c != lo)
                    bad = 1;
            }
            n_checked++;
            if (bad || ups != want) {
                char msg[160];
                snprintf(msg, sizeof msg,
                         "%" PRIu64 " of %llu words rounded up, expected floor(f 2^b) = %" PRIu64 "%s", ups,
                         1ull << b, want, bad ? " (and a result off the neighbours)" : "");
                fail_msg(f, "exact probability", x, b, msg);
            }
        }
    }
    mpfr_clear(frac);
    finish(f->name);
}
END_TEST

/* 3. the mean of N draws through the array encoder */
START_TEST(test_mean)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    static const int bs[] = {1, 3, 8, 16, 32};
    ref_rng r = {qf_test_seed() ^ (0x800u + (unsigned)_i)};
    long i, n = qf_test_iters(N_MEAN_INPUTS), tries = 0;
    const int N = N_DRAWS;
    const double t = sqrt(log(2 / 1e-9) / (2.0 * N));
    double *xs = malloc(N * sizeof *xs);
    void *codes = malloc((size_t)N * 8);
    mpfr_t frac;
    ck_assert(xs && codes);
    mpfr_init2(frac, 2200);
    n_checked = n_failed = 0;
    for (i = 0; i < n && tries < 1000 * n; tries++) {
        double x, fr;
        uint64_t lo, hi;
        size_t k;
        int j;
        if (!pick_input(f, &r, &x, &lo, &hi, frac))
            continue;
        i++;
        fr = mpfr_get_d(frac, MPFR_RNDN);
        for (j = 0; j < N; j++)
            xs[j] = x;
        for (k = 0; k < sizeof bs / sizeof bs[0]; k++) {
            qf_encode_opts o = qf_encode_opts_default();
            int b = bs[k];
            long ups = 0, off = 0;
            double qb = (double)trunc_count(frac, b) / ldexp(1.0, b), p;
            o.round = QF_ROUND_STOCHASTIC;
            o.random_bits = b;
            o.seed = ref_rng_next(&r);
            ck_assert_int_eq(qf_format_encode_array(f, xs, (size_t)N, codes, &o), QF_OK);
            for (j = 0; j < N; j++) {
                uint64_t c = f->storage_bits == 8    ? ((uint8_t *)codes)[j]
                             : f->storage_bits == 16 ? ((uint16_t *)codes)[j]
                             : f->storage_bits == 32 ? ((uint32_t *)codes)[j]
                                                     : ((uint64_t *)codes)[j];
                if (c == hi && hi != lo)
                    ups++;
                else if (c != lo)
                    off++;
            }
            p = (double)ups / N; /* mean = lo + p ulp */
            n_checked++;
            if (off || fabs(p - qb) > t || fabs(p - fr) > t + ldexp(1.0, -b)) {
                char msg[240];
                snprintf(msg, sizeof msg,
                         "mean = lo + %.5f ulp; expected lo + %.5f ulp (truncated), x = lo + %.5f ulp, bound "
                         "%.5f + 2^-%d; %ld results off the neighbours",
                         p, qb, fr, t, b, off);
                fail_msg(f, "mean", x, b, msg);
            }
        }
    }
    mpfr_clear(frac);
    free(xs);
    free(codes);
    finish(f->name);
}
END_TEST

/* 4. reproducible, seed-dependent, independent of chunking */
START_TEST(test_array_seed)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x900u + (unsigned)_i)};
    const size_t n = 3001;
    double *x = malloc(n * sizeof *x);
    uint8_t *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
    size_t i, bytes = qf_format_array_bytes(f, n), es = (size_t)f->storage_bits / 8;
    size_t cuts[] = {0, 1, 17, 1000, 1001, 2999, n};
    qf_encode_opts o = qf_encode_opts_default();
    int differs = 0;
    ck_assert(x && a && b && c);
    for (i = 0; i < n; i++)
        x[i] = ref_random_double(&r, f);
    o.round = QF_ROUND_STOCHASTIC;
    o.random_bits = 32;
    o.seed = qf_test_seed();
    ck_assert_int_eq(qf_format_encode_array(f, x, n, a, &o), QF_OK);
    ck_assert_int_eq(qf_format_encode_array(f, x, n, b, &o), QF_OK);
    ck_assert_msg(memcmp(a, b, bytes) == 0, "%s: same seed, different codes", f->name);
    /* chunks at uneven cuts, each with its offset */
    memset(c, 0x5A, n * 8);
    for (i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; i++)
        ck_assert_int_eq(
            qf_format_encode_array_at(f, x + cuts[i], cuts[i + 1] - cuts[i], c + cuts[i] * es, &o, cuts[i]),
            QF_OK);
    ck_assert_msg(memcmp(a, c, bytes) == 0, "%s: chunked encode differs from one call", f->name);
    /* a prefix is the prefix */
    ck_assert_int_eq(qf_format_encode_array(f, x, 100, c, &o), QF_OK);
    ck_assert_msg(memcmp(a, c, 100 * es) == 0, "%s: prefix differs", f->name);
    /* another seed moves some of the inexact elements (float64 is exact) */
    o.seed ^= 0x1234567ull;
    ck_assert_int_eq(qf_format_encode_array(f, x, n, b, &o), QF_OK);
    differs = memcmp(a, b, bytes) != 0;
    ck_assert_msg(differs || f->id == QF_FLOAT64, "%s: the seed changes nothing", f->name);
    free(x);
    free(a);
    free(b);
    free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("precision/stochastic");
    TCase *tc = tcase_create("stochastic");
    tcase_set_timeout(tc, 1800);
    tcase_add_loop_test(tc, test_neighbours, 0, QF_FORMAT_COUNT);
    tcase_add_loop_test(tc, test_exact_probability, 1, QF_FORMAT_COUNT); /* float64: identity */
    tcase_add_loop_test(tc, test_mean, 1, QF_FORMAT_COUNT);
    tcase_add_loop_test(tc, test_array_seed, 0, QF_FORMAT_COUNT);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
