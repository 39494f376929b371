/* t-encode.c: qf_format_encode, qf_format_encode_parts and
 * qf_format_encode_mpfr against the MPFR emulation of each format
 * (_ref_format.h), for every format, every deterministic rounding mode
 * (plus the e8m0 scale rules) and both saturation settings.
 *
 * Inputs: every code's exact value, every midpoint between neighbouring
 * codes (and one binary64 step either side) for the formats of 16 bits or
 * less; a random sample of codes and midpoints for float32 and tf32; and
 * qf_test_iters(100000) random binary64 values per format spanning its range
 * (its subnormals, binary64 subnormals, +-0, +-Inf, NaN).  The parts and
 * MPFR entry points get random exact values with more than 53 bits.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "qf_format.h"
#include "qf_test.h"
#include "_ref_format.h"

#define N_RANDOM     100000L
#define N_WIDE_CODES 20000L /* sampled codes of float32 / tf32 */
#define N_PARTS      20000L
#define MAX_REPORT   12

static long n_checked, n_failed;

static const qf_round det_modes[] = {QF_ROUND_RNE, QF_ROUND_RNA, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
static const qf_round scale_modes[] = {QF_ROUND_RNE,  QF_ROUND_RNA,  QF_ROUND_RTZ,
                                       QF_ROUND_UP,   QF_ROUND_DOWN, QF_ROUND_FLOOR,
                                       QF_ROUND_CEIL, QF_ROUND_EVEN, QF_ROUND_RCEIL};

static void modes_of(const qf_format *f, const qf_round **m, int *n)
{
    if (f->kind == QF_KIND_SCALE) {
        *m = scale_modes;
        *n = (int)(sizeof scale_modes / sizeof scale_modes[0]);
    } else {
        *m = det_modes;
        *n = (int)(sizeof det_modes / sizeof det_modes[0]);
    }
}

static void report(const char *what, const qf_format *f, qf_round r, int sat, const char *input, uint64_t got,
                   uint64_t want)
{
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(stderr,
            "FAIL %s %s round=%s saturate=%d x=%s: got 0x%0*" PRIX64 " expected 0x%0*" PRIX64
            " [reproduce: QF_SEED=%" PRIu64 " t-precision-encode]\n",
            what, f->name, qf_round_name(r), sat, input, ref_code_width(f), got, ref_code_width(f), want,
            qf_test_seed());
}

/* One binary64 input, every mode, both saturation settings. */
static void check_double(const qf_format *f, double x)
{
    const qf_round *modes;
    int nm, i, sat;
    modes_of(f, &modes, &nm);
    for (i = 0; i < nm; i++) {
        uint64_t want[2];
        ref_encode2_d(f, x, modes[i], want);
        for (sat = 0; sat <= 1; sat++) {
            uint64_t got = qf_format_encode(f, x, modes[i], sat, 32, 0);
            n_checked++;
            if (got != want[sat]) {
                char in[64];
                snprintf(in, sizeof in, "%a", x);
                report("encode", f, modes[i], sat, in, got, want[sat]);
            }
        }
    }
}

/* The value of code c, a midpoint to the next larger magnitude, and one
 * binary64 step either side of that midpoint. */
static void check_code_and_midpoint(const qf_format *f, uint64_t c)
{
    double v = ref_decode_d(f, c), next, mid;
    if (isnan(v))
        return;
    check_double(f, v);
    if (isinf(v))
        return;
    if (f->kind == QF_KIND_INT) {
        next = v + 1;
    } else if (f->kind == QF_KIND_SCALE) {
        next = 2 * v;
    } else {
        /* next magnitude: one ulp of v's binade (clamped at the subnormal
         * step); past max this is the overflow threshold's neighbour */
        int e = v == 0 ? f->emin : ilogb(v);
        if (e < f->emin)
            e = f->emin;
        next = fabs(v) + ldexp(1.0, e - f->man_bits);
        if (signbit(v))
            next = -next;
    }
    mid = v / 2 + next / 2; /* exact: neither half underflows for these formats */
    if (f->kind == QF_KIND_INT && v == f->int_min && v < 0) {
        check_double(f, v - 0.5); /* below the range too */
        check_double(f, nextafter(v - 0.5, 0));
    }
    check_double(f, mid);
    check_double(f, nextafter(mid, INFINITY));
    check_double(f, nextafter(mid, -INFINITY));
}

static void finish(const char *what)
{
    qf_test_tally(what, n_checked, n_failed);
}

START_TEST(test_grid)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    n_checked = n_failed = 0;
    if (f->id == QF_FLOAT64)
        return; /* midpoints of binary64 are not binary64 values; random only */
    if (f->bits <= 16) {
        uint64_t c;
        for (c = 0; c < (1ull << f->bits); c++)
            check_code_and_midpoint(f, c);
    } else {
        ref_rng r = {qf_test_seed() ^ (0x1000u + (unsigned)_i)};
        long i, n = qf_test_iters(N_WIDE_CODES);
        for (i = 0; i < n; i++) {
            uint64_t c = ref_rng_next(&r) & 0xFFFFFFFFull;
            if (f->id == QF_TF32)
                c &= 0xFFFFE000ull;
            check_code_and_midpoint(f, c);
        }
        /* the ends of the range */
        check_code_and_midpoint(f, f->max_code);
        check_code_and_midpoint(f, f->max_code | 0x80000000ull);
        check_code_and_midpoint(f, f->id == QF_TF32 ? 0x2000 : 1);
        check_code_and_midpoint(f, 0);
    }
    finish(f->name);
}
END_TEST

START_TEST(test_random)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x2000u + (unsigned)_i)};
    long i, n = qf_test_iters(N_RANDOM);
    n_checked = n_failed = 0;
    for (i = 0; i < n; i++)
        check_double(f, ref_random_double(&r, f));
    finish(f->name);
}
END_TEST

/* Hand-picked cases from the specifications, as a readable cross-check. */
START_TEST(test_known)
{
    const qf_format *e4 = qf_format_get(QF_FLOAT8_E4M3FN), *e5 = qf_format_get(QF_FLOAT8_E5M2);
    const qf_format *e4z = qf_format_get(QF_FLOAT8_E4M3FNUZ), *fp4 = qf_format_get(QF_FLOAT4_E2M1FN);
    const qf_format *fp6 = qf_format_get(QF_FLOAT6_E2M3FN), *e8 = qf_format_get(QF_FLOAT8_E8M0FNU);
    const qf_format *i8 = qf_format_get(QF_INT8), *u4 = qf_format_get(QF_UINT4);
    /* OCP OFP8: 464 is the tie between 448 and the NaN slot 480: even -> 448 */
    ck_assert_uint_eq(qf_format_encode(e4, 464.0, QF_ROUND_RNE, 0, 0, 0), 0x7E);
    ck_assert_uint_eq(qf_format_encode(e4, 464.0, QF_ROUND_RNA, 0, 0, 0), 0x7F);
    ck_assert_uint_eq(qf_format_encode(e4, -500.0, QF_ROUND_UP, 0, 0, 0), 0xFE); /* toward zero: -max */
    ck_assert_uint_eq(qf_format_encode(e4, -500.0, QF_ROUND_DOWN, 0, 0, 0), 0xFF);
    ck_assert_uint_eq(qf_format_encode(e4, -INFINITY, QF_ROUND_RNE, 1, 0, 0), 0xFE);
    ck_assert_uint_eq(qf_format_encode(e4, -NAN, QF_ROUND_RNE, 1, 0, 0), 0xFF); /* NaN stays NaN */
    ck_assert_uint_eq(qf_format_encode(e5, 1e6, QF_ROUND_RNE, 0, 0, 0), 0x7C);
    ck_assert_uint_eq(qf_format_encode(e5, 1e6, QF_ROUND_RNE, 1, 0, 0), 0x7B);
    ck_assert_uint_eq(qf_format_encode(e5, -NAN, QF_ROUND_RNE, 0, 0, 0), 0xFE);
    ck_assert_uint_eq(qf_format_encode(e4z, -0.0, QF_ROUND_RNE, 0, 0, 0), 0x00); /* no -0 */
    ck_assert_uint_eq(qf_format_encode(e4z, -0x1p-12, QF_ROUND_RNE, 0, 0, 0), 0x00);
    ck_assert_uint_eq(qf_format_encode(e4z, 1e9, QF_ROUND_RNE, 0, 0, 0), 0x80);
    ck_assert_uint_eq(qf_format_encode(e4z, -INFINITY, QF_ROUND_RNE, 0, 0, 0), 0x80);
    ck_assert_uint_eq(qf_format_encode(fp4, 0.25, QF_ROUND_RNE, 0, 0, 0), 0x0); /* min_sub/2: tie to 0 */
    ck_assert_uint_eq(qf_format_encode(fp4, 0.25, QF_ROUND_RNA, 0, 0, 0), 0x1);
    ck_assert_uint_eq(qf_format_encode(fp4, 5.0, QF_ROUND_RNE, 0, 0, 0), 0x6);   /* tie 4|6 -> 4 (even) */
    ck_assert_uint_eq(qf_format_encode(fp4, 100.0, QF_ROUND_RNE, 0, 0, 0), 0x7); /* no Inf/NaN: max */
    ck_assert_uint_eq(qf_format_encode(fp4, NAN, QF_ROUND_RNE, 0, 0, 0), 0x8);
    ck_assert_uint_eq(qf_format_encode(fp6, NAN, QF_ROUND_RNE, 0, 0, 0), 0x20);
    ck_assert_uint_eq(qf_format_encode(fp6, -NAN, QF_ROUND_RNE, 0, 0, 0), 0x00); /* ml_dtypes: -quiet_NaN() */
    ck_assert_uint_eq(qf_format_encode(e8, 1.5, QF_ROUND_EVEN, 0, 0, 0), 128);   /* tie up */
    ck_assert_uint_eq(qf_format_encode(e8, 1.5, QF_ROUND_FLOOR, 0, 0, 0), 127);
    ck_assert_uint_eq(qf_format_encode(e8, 0x1p-130, QF_ROUND_RNE, 0, 0, 0), 0x00);
    ck_assert_uint_eq(qf_format_encode(e8, 0.0, QF_ROUND_RNE, 0, 0, 0), 0xFF);
    ck_assert_uint_eq(qf_format_encode(e8, 0.0, QF_ROUND_RNE, 1, 0, 0), 0x00);
    ck_assert_uint_eq(qf_format_encode(e8, 0x1.8p127, QF_ROUND_CEIL, 0, 0, 0), 0xFF);
    ck_assert_uint_eq(qf_format_encode(e8, 0x1.8p127, QF_ROUND_RCEIL, 0, 0, 0), 0xFE);
    ck_assert_uint_eq(qf_format_encode(i8, -128.5, QF_ROUND_RNE, 0, 0, 0), 0x80);
    ck_assert_uint_eq(qf_format_encode(i8, 2.5, QF_ROUND_RNE, 0, 0, 0), 2);
    ck_assert_uint_eq(qf_format_encode(i8, -2.5, QF_ROUND_RNA, 0, 0, 0), 0xFD);
    ck_assert_uint_eq(qf_format_encode(i8, NAN, QF_ROUND_RNE, 0, 0, 0), 0);
    ck_assert_uint_eq(qf_format_encode(u4, -3.0, QF_ROUND_RNE, 0, 0, 0), 0);
    ck_assert_uint_eq(qf_format_encode(u4, INFINITY, QF_ROUND_RNE, 0, 0, 0), 15);
    {
        /* int32 (the int8 GEMM output): saturating like the other integers,
         * ties to even, and every code decodes to its two's complement. */
        const qf_format *i32 = qf_format_get(QF_INT32);
        ck_assert_uint_eq(qf_format_encode(i32, 2147483647.0, QF_ROUND_RNE, 0, 0, 0), 0x7FFFFFFFu);
        ck_assert_uint_eq(qf_format_encode(i32, 3e9, QF_ROUND_RNE, 0, 0, 0), 0x7FFFFFFFu);
        ck_assert_uint_eq(qf_format_encode(i32, -3e9, QF_ROUND_RNE, 0, 0, 0), 0x80000000u);
        ck_assert_uint_eq(qf_format_encode(i32, -INFINITY, QF_ROUND_RNE, 0, 0, 0), 0x80000000u);
        ck_assert_uint_eq(qf_format_encode(i32, -2147483648.0, QF_ROUND_RNE, 0, 0, 0), 0x80000000u);
        ck_assert_uint_eq(qf_format_encode(i32, 1073741824.5, QF_ROUND_RNE, 0, 0, 0), 0x40000000u);
        ck_assert_uint_eq(qf_format_encode(i32, -5.5, QF_ROUND_RNE, 0, 0, 0), 0xFFFFFFFAu);
        ck_assert_uint_eq(qf_format_encode(i32, NAN, QF_ROUND_RNE, 0, 0, 0), 0);
        ck_assert(qf_format_decode(i32, 0x80000000u) == -2147483648.0);
        ck_assert(qf_format_decode(i32, 0xFFFFFFFFu) == -1.0);
        ck_assert(qf_format_decode(i32, 0x7FFFFFFFu) == 2147483647.0);
        ck_assert_ptr_eq(qf_format_lookup("i32"), i32);
    }
}
END_TEST

/* qf_format_max_code against the reference's +-max */
START_TEST(test_max_code)
{
    int i;
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const qf_format *f = qf_format_get((qf_format_id)i);
        uint64_t pos, neg;
        if (f->kind == QF_KIND_INT) {
            pos = ref_int_from(f, f->int_max);
            neg = ref_int_from(f, f->int_min);
        } else if (f->kind == QF_KIND_SCALE) {
            pos = neg = 0xFE;
        } else {
            pos = ref_float_max_code(f, 0);
            neg = ref_float_max_code(f, 1);
        }
        ck_assert_msg(qf_format_max_code(f, 0) == pos, "%s +max", f->name);
        ck_assert_msg(qf_format_max_code(f, 1) == neg, "%s -max", f->name);
    }
}
END_TEST

/* qf_format_encode_parts: value (-1)^sign * sig * 2^(exp - 63), sticky
 * meaning more nonzero bits below sig.  Any value strictly between sig and
 * sig + 1 (in units of 2^(exp-63)) rounds like sig + 1/2, because every
 * rounding boundary of a format of at most 53 bits lies on a multiple of
 * 2^(exp - 54) or coarser; the reference gets sig + 1/2. */
START_TEST(test_parts)
{
    ref_rng r = {qf_test_seed() ^ 0x3000u};
    long it, n = qf_test_iters(N_PARTS);
    int fi;
    mpfr_t v;
    mpfr_init2(v, 66);
    n_checked = n_failed = 0;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        const qf_round *modes;
        int nm;
        modes_of(f, &modes, &nm);
        for (it = 0; it < n; it++) {
            int sign = (int)(ref_rng_next(&r) & 1), sticky = (int)(ref_rng_next(&r) & 1), exp, k, i, sat;
            uint64_t sig = ref_rng_next(&r) | (1ull << 63);
            double xd = ref_random_double(&r, f);
            /* exponents: near the format most of the time, else anywhere */
            if (isfinite(xd) && xd != 0 && (it & 7))
                exp = ilogb(xd);
            else
                exp = (int)ref_rng_below(&r, 4000) - 2000;
            if (it % 11 == 0)
                exp = (int)ref_rng_below(&r, 200001) - 100000;
            k = (int)ref_rng_below(&r, 64); /* keep k bits below the leading one: ties */
            if (it & 1)
                sig &= ~((1ull << (63 - k)) - 1) | (1ull << 63);
            if (it % 13 == 0)
                sig = 0; /* a signed zero */
            if (sig) {
                mpfr_set_uj_2exp(v, (uintmax_t)sig, (intmax_t)exp - 63, MPFR_RNDN);
                if (sticky) {
                    mpfr_t h;
                    mpfr_init2(h, 2);
                    mpfr_set_si_2exp(h, 1, (long)exp - 64, MPFR_RNDN);
                    mpfr_add(v, v, h, MPFR_RNDN); /* exact in 66 bits */
                    mpfr_clear(h);
                }
            } else {
                mpfr_set_zero(v, 1);
            }
            if (sign)
                mpfr_neg(v, v, MPFR_RNDN);
            for (i = 0; i < nm; i++) {
                uint64_t want2[2];
                ref_encode2(f, v, NULL, 0, modes[i], want2);
                for (sat = 0; sat <= 1; sat++) {
                    uint64_t got = qf_format_encode_parts(f, sign, exp, sig, sticky, modes[i], sat, 32, 0);
                    uint64_t want = want2[sat];
                    n_checked++;
                    if (got != want) {
                        char in[128];
                        snprintf(in, sizeof in, "parts(sign=%d exp=%d sig=0x%016" PRIX64 " sticky=%d)", sign,
                                 exp, sig, sticky);
                        report("encode_parts", f, modes[i], sat, in, got, want);
                    }
                }
            }
        }
    }
    mpfr_clear(v);
    finish("encode_parts");
}
END_TEST

/* A random MPFR value of 54..200 bits: near a format value or midpoint
 * (perturbed below the 53rd bit) or anywhere in and around the format. */
static void random_mpfr(ref_rng *r, const qf_format *f, mpfr_ptr x, gmp_randstate_t gs)
{
    double base = ref_random_double(r, f);
    long shift;
    mpfr_t d;
    mpfr_set_prec(x, 56 + (mpfr_prec_t)ref_rng_below(r, 145));
    if (!isfinite(base) || base == 0 || ref_rng_below(r, 4) == 0) {
        /* random significand, exponent in the same window as the doubles */
        int e = isfinite(base) && base != 0 ? ilogb(base) : (int)ref_rng_below(r, 300) - 150;
        mpfr_urandomb(x, gs);
        if (mpfr_zero_p(x))
            mpfr_set_ui(x, 1, MPFR_RNDN);
        mpfr_set_exp(x, e + 1);
        if (ref_rng_next(r) >> 63)
            mpfr_neg(x, x, MPFR_RNDN);
        return;
    }
    /* base + or - 2^(ilogb(base) - shift), shift in 54..prec-2: bits past
     * binary64, exact in x's precision */
    mpfr_set_d(x, base, MPFR_RNDN);
    shift = 54 + (long)ref_rng_below(r, (uint64_t)(mpfr_get_prec(x) - 55));
    mpfr_init2(d, 2);
    mpfr_set_si_2exp(d, (ref_rng_next(r) >> 63) ? -1 : 1, (long)ilogb(base) - shift, MPFR_RNDN);
    if (ref_rng_below(r, 3))
        mpfr_add(x, x, d, MPFR_RNDN); /* exact: x's precision reaches 2^(e - shift) */
    mpfr_clear(d);
}

/* qf_format_encode_mpfr on MPFR values wider than binary64.  The two
 * emulations (MPFR's subnormalize recipe and integer rounding of the
 * scaled value) are also checked against each other here. */
START_TEST(test_mpfr_input)
{
    ref_rng r = {qf_test_seed() ^ 0x4000u};
    gmp_randstate_t gs;
    long it, n = qf_test_iters(N_PARTS);
    int fi;
    mpfr_t x, y1, y2;
    gmp_randinit_default(gs);
    gmp_randseed_ui(gs, (unsigned long)qf_test_seed());
    mpfr_inits2(64, x, y1, y2, (mpfr_ptr)0);
    n_checked = n_failed = 0;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        const qf_round *modes;
        int nm;
        modes_of(f, &modes, &nm);
        if (f->kind == QF_KIND_FLOAT) {
            mpfr_set_prec(y1, f->man_bits + 1);
            mpfr_set_prec(y2, f->man_bits + 1);
        }
        for (it = 0; it < n; it++) {
            int i, sat;
            uint64_t want2[2];
            random_mpfr(&r, f, x, gs);
            for (i = 0; i < nm; i++) {
                if (f->kind == QF_KIND_FLOAT && !mpfr_zero_p(x)) {
                    ref_float_round(f, y1, x, NULL, modes[i]);
                    ref_float_round_rint(f, y2, x, modes[i]);
                    if (!mpfr_equal_p(y1, y2) || mpfr_signbit(y1) != mpfr_signbit(y2)) {
                        n_failed++;
                        mpfr_fprintf(stderr, "HARNESS %s %s: recipe %Ra, rint %Ra for x=%Ra\n", f->name,
                                     qf_round_name(modes[i]), y1, y2, x);
                    }
                }
                ref_encode2(f, x, NULL, 0, modes[i], want2);
                for (sat = 0; sat <= 1; sat++) {
                    uint64_t got = qf_format_encode_mpfr(f, x, modes[i], sat, 32, 0);
                    uint64_t want = want2[sat];
                    n_checked++;
                    if (got != want) {
                        char in[256];
                        mpfr_snprintf(in, sizeof in, "%Ra (prec %ld)", x, (long)mpfr_get_prec(x));
                        report("encode_mpfr", f, modes[i], sat, in, got, want);
                    }
                }
            }
        }
    }
    mpfr_clears(x, y1, y2, (mpfr_ptr)0);
    gmp_randclear(gs);
    finish("encode_mpfr");
}
END_TEST

/* qf_format_encode_interval: decided exactly when both ends round alike.
 * A point interval is always decided; an interval around a midpoint of the
 * format is not, for nearest modes. */
START_TEST(test_interval)
{
    ref_rng r = {qf_test_seed() ^ 0x6000u};
    long it, n = qf_test_iters(2000);
    int fi;
    mpfr_t lo, hi;
    mpfr_inits2(120, lo, hi, (mpfr_ptr)0);
    n_checked = n_failed = 0;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        for (it = 0; it < n; it++) {
            double x = ref_random_double(&r, f);
            qf_round m = (qf_round)ref_rng_below(&r, 5);
            uint64_t c = 0, a, b;
            int dec;
            if (!isfinite(x))
                continue;
            mpfr_set_d(lo, x, MPFR_RNDN);
            dec = qf_format_encode_interval(f, lo, lo, m, 0, &c);
            n_checked++;
            if (!dec || c != ref_encode_mpfr(f, lo, 0, m, 0)) {
                n_failed++;
                fprintf(stderr, "FAIL encode_interval %s %s point %a: decided %d code 0x%" PRIX64 "\n",
                        f->name, qf_round_name(m), x, dec, c);
            }
            /* widen by 2^-100 relative either side */
            mpfr_set_d(hi, x, MPFR_RNDN);
            mpfr_nextbelow(lo);
            mpfr_nextabove(hi);
            a = ref_encode_mpfr(f, lo, 0, m, 0);
            b = ref_encode_mpfr(f, hi, 0, m, 0);
            c = 0x5A5A;
            dec = qf_format_encode_interval(f, lo, hi, m, 0, &c);
            n_checked++;
            if (dec != (a == b) || (dec && c != a)) {
                n_failed++;
                fprintf(stderr,
                        "FAIL encode_interval %s %s around %a: decided %d, ends 0x%" PRIX64 " 0x%" PRIX64
                        "\n",
                        f->name, qf_round_name(m), x, dec, a, b);
            }
        }
    }
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    finish("encode_interval");
}
END_TEST

/* The bridge must not depend on the caller's MPFR exponent range: a
 * reference that emulates binary16 arithmetic keeps emin = -23, emax = 16
 * (the MPFR manual's recipe) while it rounds its results into formats. */
START_TEST(test_mpfr_range)
{
    mpfr_exp_t emin0 = mpfr_get_emin(), emax0 = mpfr_get_emax();
    ref_rng r = {qf_test_seed() ^ 0x5000u};
    const qf_format *f16 = qf_format_get(QF_FLOAT16);
    mpfr_t x, back;
    long it, n = qf_test_iters(2000);
    int fi;
    n_checked = n_failed = 0;
    mpfr_init2(x, 11);
    mpfr_init2(back, 64);
    for (it = 0; it < n; it++) {
        double xd = ref_random_double(&r, f16);
        uint64_t want[QF_FORMAT_COUNT], got;
        if (!isfinite(xd) || fabs(xd) > 65504 || fabs(xd) < 0x1p-24)
            continue;
        mpfr_set_d(x, xd, MPFR_RNDN); /* default range: the value, rounded to 11 bits */
        xd = mpfr_get_d(x, MPFR_RNDN);
        for (fi = 0; fi < QF_FORMAT_COUNT; fi++)
            want[fi] = ref_encode_d(qf_format_get((qf_format_id)fi), xd, QF_ROUND_RNE, 0);
        mpfr_set_emin(-23);
        mpfr_set_emax(16);
        for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
            const qf_format *f = qf_format_get((qf_format_id)fi);
            got = qf_format_encode_mpfr(f, x, QF_ROUND_RNE, 0, 32, 0);
            n_checked++;
            if (got != want[fi]) {
                char in[64];
                snprintf(in, sizeof in, "%a (MPFR emin -23, emax 16)", xd);
                report("encode_mpfr", f, QF_ROUND_RNE, 0, in, got, want[fi]);
            }
        }
        /* decode_mpfr of the float16 code, in the narrow range: its value */
        qf_format_decode_mpfr(f16, want[QF_FLOAT16], back);
        mpfr_set_emin(emin0);
        mpfr_set_emax(emax0);
        n_checked++;
        if (mpfr_cmp_d(back, ref_decode_d(f16, want[QF_FLOAT16])) != 0) {
            n_failed++;
            fprintf(stderr, "FAIL decode_mpfr float16 0x%04" PRIX64 " under a narrow exponent range\n",
                    want[QF_FLOAT16]);
        }
    }
    mpfr_clears(x, back, (mpfr_ptr)0);
    finish("encode_mpfr range");
}
END_TEST

/* ---- Split codes ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Points of the real line, ascending, for walking the codes of f: 0, the
 * magnitudes of every code (formats of 8 bits or less) or of the codes
 * near both ends and 1 (wider ones), each with one binary64 step either
 * side and the midpoint to the next magnitude, and 2^-1074, 2^-1000,
 * 1.5 max, 2 max, 1e300, DBL_MAX; both signs.  *n points in a malloc'd
 * array. */
static double *line_points(const qf_format *f, size_t *n)
{
    double mags[600], *p;
    size_t nm = 0, np = 0, i;
    if (f->bits <= 8) {
        uint64_t c;
        for (c = 0; c < (1ull << f->bits); c++) {
            double v = ref_decode_d(f, c);
            if (isfinite(v))
                mags[nm++] = fabs(v);
        }
    } else if (f->kind == QF_KIND_INT) {
        for (i = 0; i < 8; i++) {
            mags[nm++] = (double)i;
            mags[nm++] = (double)f->int_max - (double)i;
            mags[nm++] = -(double)f->int_min - (double)i;
        }
    } else {
        double prev_max = f->max - ldexp(f->epsilon, f->emax);
        for (i = 1; i <= 8; i++)
            mags[nm++] = f->min_subnormal * (double)i;
        mags[nm++] = f->min_normal;
        mags[nm++] = f->min_normal * (1 + f->epsilon);
        mags[nm++] = 1;
        mags[nm++] = 1 + f->epsilon;
        mags[nm++] = prev_max;
        mags[nm++] = f->max;
    }
    mags[nm++] = 0x1p-1074;
    mags[nm++] = 0x1p-1000;
    mags[nm++] = 1e300;
    mags[nm++] = DBL_MAX;
    if (isfinite(1.5 * f->max))
        mags[nm++] = 1.5 * f->max;
    if (isfinite(2 * f->max))
        mags[nm++] = 2 * f->max;
    qsort(mags, nm, sizeof mags[0], cmp_double);
    p = malloc(nm * 8 * sizeof *p + sizeof *p);
    ck_assert_ptr_nonnull(p);
    p[np++] = 0;
    for (i = 0; i < nm; i++) {
        double v = mags[i], c[4];
        int k;
        c[0] = v;
        c[1] = nextafter(v, INFINITY);
        c[2] = nextafter(v, 0);
        c[3] = i + 1 < nm ? v / 2 + mags[i + 1] / 2 : v;
        for (k = 0; k < 4; k++)
            if (c[k] > 0 && isfinite(c[k])) {
                p[np++] = c[k];
                p[np++] = -c[k];
            }
    }
    qsort(p, np, sizeof *p, cmp_double);
    for (i = 0, *n = 0; i < np; i++)
        if (*n == 0 || p[i] != p[*n - 1])
            p[(*n)++] = p[i];
    return p;
}

/* The codes that start a run (a maximal stretch of equal codes) along
 * pts[lo, hi), sorted into runs; returns their count. */
static size_t code_runs(const qf_format *f, const double *pts, size_t lo, size_t hi, qf_round r, int sat,
                        uint64_t *runs)
{
    size_t i, n = 0;
    uint64_t prev = 0;
    for (i = lo; i < hi; i++) {
        uint64_t c = ref_encode_d(f, pts[i], r, sat);
        if (i == lo || c != prev)
            runs[n++] = c;
        prev = c;
    }
    qsort(runs, n, sizeof *runs, cmp_u64);
    return n;
}

/* qf_format_split_codes against a walk along the real line with the MPFR
 * emulation of each format (_ref_format.h): on each half (<= 0, > 0) every
 * code is one run (the monotonicity that the split rule rests on), and the
 * codes with two runs along the whole line are exactly the split ones;
 * the known cases by name: fnuz's 0x80 (rne, rna, not saturating) and
 * e8m0's 0xFF (not saturating; rne, rna, up, ceil, even), nothing else. */
START_TEST(test_split_codes)
{
    int fi;
    n_checked = n_failed = 0;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        const qf_round *modes;
        size_t np, nz, i;
        double *pts = line_points(f, &np);
        uint64_t *runs = malloc(np * sizeof *runs);
        int nmodes, m, sat;
        ck_assert_ptr_nonnull(runs);
        for (nz = 0; nz < np && pts[nz] <= 0; nz++)
            ;
        modes_of(f, &modes, &nmodes);
        for (m = 0; m < nmodes; m++)
            for (sat = 0; sat <= 1; sat++) {
                uint64_t split[2] = {0, 0}, want[2];
                size_t nr, nwant = 0;
                int n = qf_format_split_codes(f, modes[m], sat, split), known;
                /* each half: no code twice */
                for (int half = 0; half < 2; half++) {
                    nr = half ? code_runs(f, pts, nz, np, modes[m], sat, runs)
                              : code_runs(f, pts, 0, nz, modes[m], sat, runs);
                    for (i = 1; i < nr; i++) {
                        n_checked++;
                        if (runs[i] == runs[i - 1])
                            report("split: a code in two runs on one half", f, modes[m], sat,
                                   half ? "x > 0" : "x <= 0", runs[i], runs[i]);
                    }
                }
                /* the whole line: the codes of two runs */
                nr = code_runs(f, pts, 0, np, modes[m], sat, runs);
                for (i = 1; i < nr; i++)
                    if (runs[i] == runs[i - 1] && (nwant == 0 || want[nwant - 1] != runs[i]) && nwant < 2)
                        want[nwant++] = runs[i];
                n_checked++;
                if ((size_t)n != nwant || (n >= 1 && split[0] != want[0] && split[1] != want[0]) ||
                    (n == 2 && split[0] != want[1] && split[1] != want[1]) ||
                    (n == 1 && split[1] != split[0]))
                    report("split_codes (count, first code)", f, modes[m], sat, "-",
                           (uint64_t)n * 0x1000 + split[0], (uint64_t)nwant * 0x1000 + (nwant ? want[0] : 0));
                /* the facts of the specifications, by name ([FNUZ], [MX]) */
                known = !sat &&
                        ((f->nan == QF_NAN_FNUZ && (modes[m] == QF_ROUND_RNE || modes[m] == QF_ROUND_RNA)) ||
                         (f->nan == QF_NAN_E8M0 &&
                          (modes[m] == QF_ROUND_RNE || modes[m] == QF_ROUND_RNA || modes[m] == QF_ROUND_UP ||
                           modes[m] == QF_ROUND_CEIL || modes[m] == QF_ROUND_EVEN)));
                n_checked++;
                if (n != known || (known && split[0] != (f->nan == QF_NAN_FNUZ ? 0x80u : 0xFFu)))
                    report("split_codes (the known cases)", f, modes[m], sat, "-", (uint64_t)n,
                           (uint64_t)known);
                n_checked++;
                if (known != qf_format_code_split(f, f->nan == QF_NAN_FNUZ ? 0x80u : 0xFFu, modes[m], sat) &&
                    (f->nan == QF_NAN_FNUZ || f->nan == QF_NAN_E8M0))
                    report("code_split", f, modes[m], sat, "-", (uint64_t)!known, (uint64_t)known);
            }
        free(runs);
        free(pts);
    }
    finish("split codes");
}
END_TEST

/* qf_format_encode_interval on intervals whose ends round to a split code:
 * from -overflow to +overflow (fnuz) or from a negative number to the
 * overflow (e8m0) nothing is decided, though both ends give the NaN code;
 * wholly past +overflow, or wholly negative (e8m0), every number gives the
 * NaN by one rule, and it is decided.  The overflow thresholds: 248 for
 * float8_e4m3fnuz in rne (the midpoint of 240 and the next step, 256),
 * 61440 for float8_e5m2fnuz, 1.5 * 2^127 for e8m0. */
START_TEST(test_interval_split)
{
    static const struct {
        const char *fmt;
        qf_round r;
        int sat;
        double lo, hi;
        int decided;
        uint64_t code;
    } cases[] = {
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, -1000, 1000, 0, 0},
        {"float8_e4m3fnuz", QF_ROUND_RNA, 0, -249, 249, 0, 0},
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, -1e300, 1e300, 0, 0},
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, 249, 1000, 1, 0x80},
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, 248, 1e300, 1, 0x80}, /* 248 is a tie: to 256, even */
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, -1000, -249, 1, 0x80},
        {"float8_e4m3fnuz", QF_ROUND_UP, 0, 300, 1000, 1, 0x80},          /* only +overflow gives NaN */
        {"float8_e4m3fnuz", QF_ROUND_UP, 0, -1000, -300, 1, 0xFF},        /* -max: toward zero */
        {"float8_e4m3fnuz", QF_ROUND_RNE, 1, -1000, -300, 1, 0xFF},       /* saturating: -max */
        {"float8_e4m3fnuz", QF_ROUND_RNE, 0, -0x1p-12, 0x1p-12, 1, 0x00}, /* no -0: one zero */
        {"float8_e5m2fnuz", QF_ROUND_RNE, 0, -1e6, 1e6, 0, 0},
        {"float8_e5m2fnuz", QF_ROUND_RNA, 0, -61440, 61440, 0, 0},
        {"float8_e5m2fnuz", QF_ROUND_RNE, 0, 61441, 1e6, 1, 0x80},
        {"float8_e5m2fnuz", QF_ROUND_RNE, 0, -1e6, -61441, 1, 0x80},
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, -1, 0x1p130, 0, 0},
        {"float8_e8m0fnu", QF_ROUND_UP, 0, -0x1p-1074, 0x1.000001p127, 0, 0},
        {"float8_e8m0fnu", QF_ROUND_EVEN, 0, -5, 0x1p128, 0, 0},
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, 0, 0x1p130, 0, 0}, /* 0 gives NaN, and so does 2^130 */
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, -5, -1, 1, 0xFF},
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, -1, 0, 1, 0xFF},
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, 0x1p129, 0x1p130, 1, 0xFF},
        {"float8_e8m0fnu", QF_ROUND_RNE, 0, 0x1.8p127, 1e300, 1, 0xFF},
        {"float8_e8m0fnu", QF_ROUND_RTZ, 0, -1, 0x1p130, 0, 0},     /* 0xFF and 0xFE */
        {"float8_e8m0fnu", QF_ROUND_RNE, 1, -1, 0x1p-140, 1, 0x00}, /* saturating: one run */
    };
    size_t i;
    mpfr_t lo, hi;
    mpfr_inits2(64, lo, hi, (mpfr_ptr)0);
    n_checked = n_failed = 0;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const qf_format *f = qf_format_lookup(cases[i].fmt);
        uint64_t code = 0x5A5A;
        int dec;
        ck_assert_ptr_nonnull(f);
        mpfr_set_d(lo, cases[i].lo, MPFR_RNDN);
        mpfr_set_d(hi, cases[i].hi, MPFR_RNDN);
        dec = qf_format_encode_interval(f, lo, hi, cases[i].r, cases[i].sat, &code);
        n_checked++;
        if (dec != cases[i].decided || (dec && code != cases[i].code)) {
            n_failed++;
            fprintf(stderr,
                    "FAIL encode_interval %s %s sat %d [%a, %a]: decided %d code 0x%" PRIX64
                    ", want %d 0x%" PRIX64 "\n",
                    f->name, qf_round_name(cases[i].r), cases[i].sat, cases[i].lo, cases[i].hi, dec, code,
                    cases[i].decided, cases[i].code);
        }
    }
    /* wider than binary64: -2^100000 .. 2^100000 */
    mpfr_set_ui_2exp(hi, 1, 100000, MPFR_RNDN);
    mpfr_neg(lo, hi, MPFR_RNDN);
    n_checked++;
    if (qf_format_encode_interval(qf_format_lookup("float8_e4m3fnuz"), lo, hi, QF_ROUND_RNE, 0,
                                  &(uint64_t){0}))
        n_failed++, fprintf(stderr, "FAIL encode_interval e4m3fnuz [-2^100000, 2^100000] decided\n");
    /* not intervals: a NaN end, lo > hi */
    mpfr_set_nan(lo);
    n_checked++;
    if (qf_format_encode_interval(qf_format_lookup("float8_e4m3fnuz"), lo, lo, QF_ROUND_RNE, 0,
                                  &(uint64_t){0}))
        n_failed++, fprintf(stderr, "FAIL encode_interval [NaN, NaN] decided\n");
    mpfr_set_d(lo, 2, MPFR_RNDN);
    mpfr_set_d(hi, 1, MPFR_RNDN);
    n_checked++;
    if (qf_format_encode_interval(qf_format_get(QF_FLOAT32), lo, hi, QF_ROUND_RNE, 0, &(uint64_t){0}))
        n_failed++, fprintf(stderr, "FAIL encode_interval [2, 1] decided\n");
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    finish("encode_interval split codes");
}
END_TEST

int main(void)
{
    return qf_test_main_loops(
        "precision/encode", "encode", 1800, NULL, NULL, QF_FORMAT_COUNT, QF_TESTS(test_grid, test_random),
        QF_TESTS(test_known, test_max_code, test_parts, test_mpfr_input, test_mpfr_range, test_interval,
                 test_split_codes, test_interval_split));
}
