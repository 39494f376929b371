/* t-ulp.c: qf_format_ulp and qf_format_ulp_error against their MPFR
 * definitions (docs/numerics.md#measuring-accuracy; Zimmermann et
 * al., "Accuracy of mathematical functions"):
 *   ulp(x) = 2^(max(e, emin) - man_bits), x = 1.f * 2^e, clamped at the
 *   subnormal step; 1 for integer formats; NaN for NaN and Inf;
 *   ulp_error(approx, exact) = (approx - exact) / ulp(exact), computed
 *   exactly by MPFR and rounded once to binary64 (nearest).
 * Inputs: every power of two of binary64 and its neighbours, zeros,
 * negatives, format subnormals and binary64 subnormals, random values.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>

#include "qf_format.h"
#include "qf_test.h"
#include "_ref_format.h"

#define N_RANDOM   100000L
#define MAX_REPORT 12

static long n_checked, n_failed;

/* log2 of the ulp of the format at x (x finite). */
static long ref_ulp_log2(const qf_format *f, double x)
{
    long e;
    mpfr_ptr t;
    if (f->kind == QF_KIND_INT)
        return 0;
    if (x == 0) {
        e = f->emin;
    } else {
        t = ref_tmp(REF_T_INPUT, 53);
        mpfr_set_d(t, x, MPFR_RNDN);
        e = (long)mpfr_get_exp(t) - 1; /* MPFR: x = 0.1f * 2^EXP */
        if (e < f->emin)
            e = f->emin;
    }
    return e - f->man_bits;
}

static void ref_ulp(const qf_format *f, double x, mpfr_ptr u)
{
    mpfr_set_si_2exp(u, 1, ref_ulp_log2(f, x), MPFR_RNDN);
}

static void check_ulp(const qf_format *f, double x)
{
    double got = qf_format_ulp(f, x), want;
    mpfr_ptr u;
    if (!isfinite(x)) {
        want = NAN;
    } else {
        u = ref_tmp(REF_T_Y, 8);
        ref_ulp(f, x, u);
        want = mpfr_get_d(u, MPFR_RNDN); /* exact: 2^k with k in [-1074, 1023] */
    }
    n_checked++;
    if (!(got == want || (isnan(got) && isnan(want)))) {
        n_failed++;
        if (n_failed <= MAX_REPORT)
            fprintf(stderr, "FAIL ulp %s x=%a: got %a expected %a [QF_SEED=%" PRIu64 " t-precision-ulp]\n",
                    f->name, x, got, want, qf_test_seed());
    }
}

/* (approx - exact) / ulp(exact), exact in MPFR, one rounding to binary64.
 * Specials: a NaN or infinite exact value gives 0 when approx equals it,
 * else NaN; a NaN approx gives NaN; an infinite approx (exact finite) gives
 * that infinity. */
static double ref_ulp_error(const qf_format *f, double approx, double exact)
{
    static mpfr_t d; /* allocated once: this runs 10^5 times per format */
    static int ready;
    mpfr_ptr a;
    double r;
    if (!isfinite(exact))
        return approx == exact ? 0.0 : NAN;
    if (isnan(approx))
        return NAN;
    if (isinf(approx))
        return approx;
    if (!ready) {
        mpfr_init2(d, 2200);
        ready = 1;
    }
    a = ref_tmp(REF_T_A, 53);
    mpfr_set_d(a, approx, MPFR_RNDN);
    mpfr_set_d(d, exact, MPFR_RNDN);
    mpfr_sub(d, a, d, MPFR_RNDN);                           /* exact: 2200 bits cover 2^1024 .. 2^-1074 */
    mpfr_mul_2si(d, d, -ref_ulp_log2(f, exact), MPFR_RNDN); /* exact */
    r = mpfr_get_d(d, MPFR_RNDN);                           /* the one rounding (overflow gives Inf) */
    return r;
}

static void check_err(const qf_format *f, double approx, double exact)
{
    double got = qf_format_ulp_error(f, approx, exact), want = ref_ulp_error(f, approx, exact);
    n_checked++;
    if (!((got == want && signbit(got) == signbit(want)) || (isnan(got) && isnan(want)) ||
          (got == 0 && want == 0))) {
        n_failed++;
        if (n_failed <= MAX_REPORT)
            fprintf(stderr,
                    "FAIL ulp_error %s approx=%a exact=%a: got %a expected %a [QF_SEED=%" PRIu64
                    " t-precision-ulp]\n",
                    f->name, approx, exact, got, want, qf_test_seed());
    }
}

static void finish(const char *what)
{
    qf_test_tally(what, n_checked, n_failed);
}

/* Every power of two of binary64, its neighbours, both signs, zeros,
 * specials. */
START_TEST(test_ulp_powers)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    int k, s;
    n_checked = n_failed = 0;
    for (k = -1074; k <= 1023; k++)
        for (s = -1; s <= 1; s += 2) {
            double p = s * ldexp(1.0, k);
            check_ulp(f, p);
            check_ulp(f, nextafter(p, 0));
            check_ulp(f, nextafter(p, s * INFINITY));
        }
    check_ulp(f, 0.0);
    check_ulp(f, -0.0);
    check_ulp(f, INFINITY);
    check_ulp(f, -INFINITY);
    check_ulp(f, NAN);
    check_ulp(f, f->max);
    check_ulp(f, -f->min_subnormal);
    check_ulp(f, f->min_normal);
    check_ulp(f, nextafter(f->min_normal, 0));
    finish(f->name);
}
END_TEST

START_TEST(test_ulp_random)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x100u + (unsigned)_i)};
    long i, n = qf_test_iters(N_RANDOM);
    n_checked = n_failed = 0;
    for (i = 0; i < n; i++)
        check_ulp(f, ref_random_double(&r, f));
    finish(f->name);
}
END_TEST

/* ulp_error on pairs: approx a few ulps from exact (as the format would
 * give), approx a format value near exact, far apart, opposite signs near
 * the top of binary64 (the difference overflows), specials. */
START_TEST(test_ulp_error)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x200u + (unsigned)_i)};
    long i, n = qf_test_iters(N_RANDOM);
    const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, DBL_MAX, -DBL_MAX, 0x1p-1074};
    size_t a, b;
    n_checked = n_failed = 0;
    for (a = 0; a < sizeof sp / sizeof sp[0]; a++)
        for (b = 0; b < sizeof sp / sizeof sp[0]; b++)
            check_err(f, sp[a], sp[b]);
    for (i = 0; i < n; i++) {
        double exact = ref_random_double(&r, f), approx;
        switch (i % 5) {
        case 0: approx = ref_random_double(&r, f); break;
        case 1: {
            /* the format's rounding of exact, decoded */
            uint64_t c = qf_format_encode(f, exact, (qf_round)(ref_rng_below(&r, 5)), 0, 32, 0);
            approx = qf_format_decode(f, c);
            break;
        }
        case 2: {
            double u = qf_format_ulp(f, exact);
            approx = exact + (double)((int64_t)ref_rng_below(&r, 17) - 8) * (isfinite(u) ? u : 1) / 4;
            break;
        }
        case 3: approx = -exact; break;
        default:
            /* near the top of binary64, opposite signs */
            exact =
                ldexp(1.0 + (double)ref_rng_below(&r, 1u << 20) * 0x1p-20, 1000 + (int)ref_rng_below(&r, 24));
            approx = -ldexp(1.0 + (double)ref_rng_below(&r, 1u << 20) * 0x1p-20,
                            1000 + (int)ref_rng_below(&r, 24));
            if (ref_rng_next(&r) & 1) {
                double t = exact;
                exact = approx;
                approx = t;
            }
            break;
        }
        check_err(f, approx, exact);
    }
    finish(f->name);
}
END_TEST

int main(void)
{
    return qf_test_main_loops("precision/ulp", "ulp", 1800, NULL, NULL, QF_FORMAT_COUNT,
                              QF_TESTS(test_ulp_powers, test_ulp_random, test_ulp_error), NULL);
}
