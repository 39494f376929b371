/* _ref_format.h: an MPFR emulation of every qualify number format, written
 * from the format definitions (docs/numerics.md#number-formats, OCP OFP8 rev 1.0,
 * OCP MX v1.0) and independent of precision/encode.c and decode.c.  The
 * precision tests compare the library against it.
 *
 * The format parameters come from the qf_format record; t-decode checks
 * every record against a transcription of the table in docs/numerics.md#number-formats, so a wrong
 * row cannot hide here.
 *
 * Rounding follows the MPFR manual's recipe for emulating a format with
 * subnormals: precision p = man_bits + 1, emin set so that the smallest
 * subnormal 2^(emin - man_bits) is MPFR's smallest positive number, then
 * mpfr_check_range and mpfr_subnormalize.  emax stays at MPFR's maximum so
 * that MPFR never overflows: the overflow rules of the format (an unbounded
 * exponent above, then the max/Inf/NaN rule) are applied here by hand.
 * MPFR has no ties-away mode, so rna is emulated by comparing the input with
 * the midpoint of its two neighbours.
 */
#ifndef QF_TEST_REF_FORMAT_H
#define QF_TEST_REF_FORMAT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qf_format_mpfr.h" /* stdint.h before mpfr.h: mpfr_get_uj */

/* ---- A small generator for test inputs (splitmix64), kept apart from
 * the library's qf_rng_u64 so the tests do not depend on what they test. */
typedef struct ref_rng {
    uint64_t s;
} ref_rng;

static inline uint64_t ref_rng_next(ref_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, n) (n > 0; the tiny modulo bias does not matter here) */
static inline uint64_t ref_rng_below(ref_rng *r, uint64_t n)
{
    return ref_rng_next(r) % n;
}

static inline double ref_bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline uint64_t ref_double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline const char *ref_mode_name(qf_round r)
{
    return qf_round_name(r);
}

/* ---- Scratch MPFR numbers -------------------------------------------------------
 * The reference runs millions of times per test; one fixed slot per use site
 * (allocated once, 256 bits, never reallocated by mpfr_set_prec below that)
 * keeps malloc out of the loop, which matters under AddressSanitizer. */
enum {
    REF_T_INPUT,
    REF_T_Y,
    REF_T_Z,
    REF_T_A,
    REF_T_MID,
    REF_T_CODE,
    REF_T_MAX,
    REF_T_INT,
    REF_T_E8,
    REF_T_E8LO,
    REF_T_E8HI,
    REF_T_E8MID,
    REF_T_DECODE,
    REF_T_COUNT
};
static mpfr_t ref_scratch[REF_T_COUNT];
static int ref_scratch_ready;

static inline mpfr_ptr ref_tmp(int slot, mpfr_prec_t prec)
{
    if (!ref_scratch_ready) {
        int i;
        for (i = 0; i < REF_T_COUNT; i++)
            mpfr_init2(ref_scratch[i], 256);
        ref_scratch_ready = 1;
    }
    mpfr_set_prec(ref_scratch[slot], prec);
    return ref_scratch[slot];
}

/* ---- Codes from fields ---------------------------------------------------- */

static inline uint64_t ref_sign_bit(const qf_format *f)
{
    return f->is_signed ? 1ull << (f->bits - 1) : 0;
}

/* The code of a format value given as fields; tf32 codes live in the float32
 * container with the low 13 bits zero (docs/numerics.md#number-formats: tf32 held in 32 bits). */
static inline uint64_t ref_code_fields(const qf_format *f, int neg, uint64_t biased, uint64_t frac)
{
    uint64_t c = (neg ? ref_sign_bit(f) : 0) | (biased << f->man_bits) | frac;
    return f->id == QF_TF32 ? c << 13 : c;
}

static inline uint64_t ref_all_ones_exp(const qf_format *f)
{
    return (1ull << f->exp_bits) - 1;
}

/* Quiet NaN of a float format: IEEE-like formats keep the sign and set the
 * top fraction bit; E4M3FN has only S.1111.111; FNUZ only 0x80; the MX
 * FP6/FP4 types have no NaN: a NaN gets their -0 code (ml_dtypes quiet_NaN()),
 * a NaN with the sign bit set its negation, +0. */
static inline uint64_t ref_float_nan(const qf_format *f, int neg)
{
    switch (f->nan) {
    case QF_NAN_IEEE: return ref_code_fields(f, neg, ref_all_ones_exp(f), 1ull << (f->man_bits - 1));
    case QF_NAN_FN: return ref_code_fields(f, neg, ref_all_ones_exp(f), (1ull << f->man_bits) - 1);
    case QF_NAN_FNUZ: return ref_sign_bit(f);
    case QF_NAN_E8M0: return 0xFF;
    case QF_NAN_NONE: return neg ? 0 : ref_sign_bit(f); /* ml_dtypes: -quiet_NaN() is +0 */
    }
    return 0;
}

/* ---- Rounding a real number into a float format ------------------------------ */

/* One step of the MPFR recipe with the format's emin; x (a double when xd is
 * used, else an MPFR number) is rounded to y of precision p. */
static inline int ref_round_recipe(const qf_format *f, mpfr_ptr y, mpfr_srcptr x, const double *xd,
                                   mpfr_rnd_t rnd)
{
    mpfr_exp_t emin0 = mpfr_get_emin(), emax0 = mpfr_get_emax();
    int t;
    /* smallest subnormal 2^(emin - man) = 0.1b * 2^(emin - man + 1) */
    mpfr_set_emin(f->emin - f->man_bits + 1);
    mpfr_set_emax(mpfr_get_emax_max());
    if (xd)
        t = mpfr_set_d(y, *xd, rnd);
    else
        t = mpfr_set(y, x, rnd); /* rounds in the extended range; check_range underflows */
    t = mpfr_check_range(y, t, rnd);
    t = mpfr_subnormalize(y, t, rnd);
    mpfr_set_emin(emin0);
    mpfr_set_emax(emax0);
    return t;
}

/* Round x (finite) to the float format's precision with subnormals and an
 * unbounded exponent above.  y must have precision man_bits + 1. */
static inline void ref_float_round(const qf_format *f, mpfr_ptr y, mpfr_srcptr x, const double *xd,
                                   qf_round r)
{
    mpfr_rnd_t m;
    switch (r) {
    case QF_ROUND_RNE: m = MPFR_RNDN; break;
    case QF_ROUND_RTZ: m = MPFR_RNDZ; break;
    case QF_ROUND_UP: m = MPFR_RNDU; break;
    case QF_ROUND_DOWN: m = MPFR_RNDD; break;
    case QF_ROUND_RNA: {
        /* ties away: the neighbour away from zero when x is at or past the
         * midpoint of its two neighbours */
        mpfr_ptr z = ref_tmp(REF_T_Z, mpfr_get_prec(y)), a = ref_tmp(REF_T_A, mpfr_get_prec(y));
        mpfr_ptr mid = ref_tmp(REF_T_MID, 2 * mpfr_get_prec(y) + 8);
        ref_round_recipe(f, z, x, xd, MPFR_RNDZ);
        ref_round_recipe(f, a, x, xd, MPFR_RNDA);
        mpfr_add(mid, z, a, MPFR_RNDN); /* exact: neighbours one ulp apart */
        mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);
        /* x always holds the exact input (xd only selects mpfr_set_d) */
        mpfr_set(y, mpfr_cmpabs(x, mid) >= 0 ? a : z, MPFR_RNDN);
        return;
    }
    default: m = MPFR_RNDN; break;
    }
    ref_round_recipe(f, y, x, xd, m);
}

/* A second, independent emulation (used to check the first on MPFR
 * inputs): scale x by its quantum 2^(max(e, emin) - man), round to an
 * integer with mpfr_rint / mpfr_round, scale back. */
static inline void ref_float_round_rint(const qf_format *f, mpfr_ptr y, mpfr_srcptr x, qf_round r)
{
    mpfr_t t;
    long e, q;
    if (mpfr_zero_p(x)) {
        mpfr_set(y, x, MPFR_RNDN);
        return;
    }
    e = (long)mpfr_get_exp(x) - 1;
    q = (e < f->emin ? f->emin : e) - f->man_bits;
    mpfr_init2(t, mpfr_get_prec(x) + 2);
    mpfr_mul_2si(t, x, -q, MPFR_RNDN); /* exact */
    switch (r) {
    case QF_ROUND_RNA: mpfr_round(t, t); break;
    case QF_ROUND_RTZ: mpfr_rint(t, t, MPFR_RNDZ); break;
    case QF_ROUND_UP: mpfr_rint(t, t, MPFR_RNDU); break;
    case QF_ROUND_DOWN: mpfr_rint(t, t, MPFR_RNDD); break;
    default: mpfr_rint(t, t, MPFR_RNDN); break;
    }
    if (mpfr_zero_p(t))
        mpfr_set_zero(t, mpfr_signbit(x) ? -1 : 1);
    mpfr_mul_2si(t, t, q, MPFR_RNDN);
    mpfr_set(y, t, MPFR_RNDN); /* exact: at most p significant bits */
    mpfr_clear(t);
}

/* The code of a finite format value y (|y| <= max, any sign, zero allowed). */
static inline uint64_t ref_float_code_of(const qf_format *f, mpfr_srcptr y)
{
    int neg = mpfr_signbit(y) != 0;
    long e, scale;
    uint64_t m, biased;
    mpfr_ptr t;
    if (mpfr_zero_p(y))
        return (neg && f->has_negzero) ? ref_code_fields(f, 1, 0, 0) : ref_code_fields(f, 0, 0, 0);
    e = (long)mpfr_get_exp(y) - 1; /* y = 1.f * 2^e */
    if (e < f->emin) {
        biased = 0;
        scale = f->emin - f->man_bits;
    } else {
        biased = (uint64_t)(e + f->bias);
        scale = e - f->man_bits;
    }
    t = ref_tmp(REF_T_CODE, 64);
    mpfr_abs(t, y, MPFR_RNDN);
    mpfr_mul_2si(t, t, -scale, MPFR_RNDN);
    m = (uint64_t)mpfr_get_uj(t, MPFR_RNDN);
    if (biased)
        m -= 1ull << f->man_bits;
    return ref_code_fields(f, neg, biased, m);
}

/* +-max as a code, from the value */
static inline uint64_t ref_float_max_code(const qf_format *f, int neg)
{
    mpfr_ptr t = ref_tmp(REF_T_MAX, 64);
    mpfr_set_d(t, neg ? -f->max : f->max, MPFR_RNDN);
    return ref_float_code_of(f, t);
}

/* What an overflowing result or an infinite input becomes when not
 * saturated: +-Inf if the format has Inf, its NaN if it has NaN but no Inf,
 * +-max if neither (docs/numerics.md#conversions; OCP OFP8 5.3; MX v1.0). */
static inline uint64_t ref_float_overflow_value(const qf_format *f, int neg)
{
    if (f->has_inf)
        return ref_code_fields(f, neg, ref_all_ones_exp(f), 0);
    if (f->nan != QF_NAN_NONE)
        return ref_float_nan(f, neg);
    return ref_float_max_code(f, neg);
}

static inline int ref_toward_zero(qf_round r, int neg)
{
    return r == QF_ROUND_RTZ || r == QF_ROUND_FLOOR || (r == QF_ROUND_UP && neg) ||
           (r == QF_ROUND_DOWN && !neg);
}

/* Expected codes for a float-kind format, out[0] not saturating, out[1]
 * saturating.  x is given as a double (xd) or an MPFR number (x); specials
 * are handled by the caller. */
static inline void ref_float_encode_finite(const qf_format *f, mpfr_srcptr x, const double *xd, qf_round r,
                                           uint64_t out[2])
{
    mpfr_ptr y = ref_tmp(REF_T_Y, f->man_bits + 1);
    int neg;
    ref_float_round(f, y, x, xd, r);
    neg = mpfr_signbit(y) != 0;
    if (mpfr_cmp_d(y, f->max) > 0 || mpfr_cmp_d(y, -f->max) < 0) {
        out[1] = ref_float_max_code(f, neg);
        out[0] = ref_toward_zero(r, neg) ? out[1] : ref_float_overflow_value(f, neg);
    } else {
        out[0] = out[1] = ref_float_code_of(f, y);
    }
}

/* ---- Integer formats: round to an integer by mode, clamp, NaN -> 0 ------- */

static inline uint64_t ref_int_from(const qf_format *f, int64_t v)
{
    if (v < f->int_min)
        v = f->int_min;
    if (v > f->int_max)
        v = f->int_max;
    return (uint64_t)v & ((1ull << f->bits) - 1);
}

static inline uint64_t ref_int_encode_finite(const qf_format *f, mpfr_srcptr x, qf_round r)
{
    /* 64 bits hold every in-range integer exactly; mpfr_rint rounds from
     * all of x's bits, so a huge x only needs to stay huge */
    mpfr_ptr t = ref_tmp(REF_T_INT, 64);
    int64_t v;
    switch (r) {
    case QF_ROUND_RNA: mpfr_round(t, x); break;
    case QF_ROUND_RTZ: mpfr_rint(t, x, MPFR_RNDZ); break;
    case QF_ROUND_UP: mpfr_rint(t, x, MPFR_RNDU); break;
    case QF_ROUND_DOWN: mpfr_rint(t, x, MPFR_RNDD); break;
    default: mpfr_rint(t, x, MPFR_RNDN); break;
    }
    /* clamp first so the conversion cannot overflow */
    if (mpfr_cmp_si(t, (long)f->int_max) > 0)
        v = f->int_max;
    else if (mpfr_cmp_si(t, (long)f->int_min) < 0)
        v = f->int_min;
    else
        v = (int64_t)mpfr_get_si(t, MPFR_RNDN);
    return ref_int_from(f, v);
}

/* ---- float8_e8m0fnu: 2^(code - 127), 0xFF NaN, unsigned, no zero ---------- */

static inline int ref_e8m0_saturating(qf_round r, int sat)
{
    return sat || r == QF_ROUND_RCEIL; /* rceil: like PTX .satfinite */
}

static inline void ref_e8m0_encode_positive(const qf_format *f, mpfr_srcptr x, qf_round r, uint64_t out[2])
{
    mpfr_ptr y, lo, hi, mid;
    long e;
    if (mpfr_cmp_si_2exp(x, 1, -127) < 0) { /* below 2^-127: the smallest code */
        out[0] = out[1] = 0x00;
        return;
    }
    y = ref_tmp(REF_T_E8, 1);
    switch (r) {
    case QF_ROUND_RTZ:
    case QF_ROUND_DOWN:
    case QF_ROUND_FLOOR: mpfr_set(y, x, MPFR_RNDZ); break;
    case QF_ROUND_UP:
    case QF_ROUND_CEIL:
    case QF_ROUND_RCEIL: mpfr_set(y, x, MPFR_RNDU); break;
    case QF_ROUND_RNE:
        /* MPFR's nearest at precision 1 takes the larger neighbour on a tie;
         * the even rule has no even significand to pick at one bit */
        mpfr_set(y, x, MPFR_RNDN);
        break;
    default:
        /* rna and even: nearest, ties up (= away, x > 0) */
        lo = ref_tmp(REF_T_E8LO, 1);
        hi = ref_tmp(REF_T_E8HI, 2);
        mid = ref_tmp(REF_T_E8MID, 2);
        mpfr_set(lo, x, MPFR_RNDZ); /* the power of two below x */
        mpfr_mul_2ui(hi, lo, 1, MPFR_RNDN);
        mpfr_add(mid, lo, hi, MPFR_RNDN); /* 3 * 2^k: exact in 2 bits */
        mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);
        mpfr_set(y, mpfr_cmp(x, mid) >= 0 ? hi : lo, MPFR_RNDN);
        break;
    }
    e = (long)mpfr_get_exp(y) - 1;
    if (e > 127) {
        out[1] = 0xFE;
        out[0] = (ref_e8m0_saturating(r, 0) || ref_toward_zero(r, 0)) ? 0xFE : 0xFF;
    } else {
        out[0] = out[1] = (uint64_t)(e + 127);
    }
    (void)f;
}

/* ---- The whole rule set ------------------------------------------------------ */

/* Expected codes of rounding the exact value x into f: out[0] without,
 * out[1] with saturation.  NaN inputs take their sign from nan_neg (MPFR
 * does not keep a NaN's sign). */
static inline void ref_encode2(const qf_format *f, mpfr_srcptr x, const double *xd, int nan_neg, qf_round r,
                               uint64_t out[2])
{
    int neg = mpfr_signbit(x) != 0, sat;
    if (mpfr_nan_p(x)) {
        if (f->id == QF_FLOAT64 && xd)
            out[0] = ref_double_to_bits(*xd); /* float64 encode is the identity, payload kept */
        else if (f->kind == QF_KIND_INT)
            out[0] = 0;
        else if (f->kind == QF_KIND_SCALE)
            out[0] = 0xFF;
        else
            out[0] = ref_float_nan(f, nan_neg);
        out[1] = out[0]; /* saturation leaves NaN alone (OCP OFP8) */
        return;
    }
    if (f->kind == QF_KIND_INT) {
        if (mpfr_inf_p(x))
            out[0] = ref_int_from(f, neg ? f->int_min : f->int_max);
        else
            out[0] = ref_int_encode_finite(f, x, r);
        out[1] = out[0]; /* integers always clamp */
        return;
    }
    if (f->kind == QF_KIND_SCALE) {
        for (sat = 0; sat <= 1; sat++) {
            if (mpfr_zero_p(x) || neg) /* no zero, no sign: NaN (ml_dtypes), 0x00 saturating */
                out[sat] = ref_e8m0_saturating(r, sat) ? 0x00 : 0xFF;
            else if (mpfr_inf_p(x))
                out[sat] = ref_e8m0_saturating(r, sat) ? 0xFE : 0xFF;
        }
        if (!mpfr_zero_p(x) && !neg && !mpfr_inf_p(x))
            ref_e8m0_encode_positive(f, x, r, out);
        return;
    }
    if (mpfr_inf_p(x)) {
        out[0] = ref_float_overflow_value(f, neg);
        out[1] = ref_float_max_code(f, neg);
        return;
    }
    if (mpfr_zero_p(x)) {
        out[0] = out[1] = ref_float_code_of(f, x);
        return;
    }
    ref_float_encode_finite(f, x, xd, r, out);
}

static inline uint64_t ref_encode_mpfr(const qf_format *f, mpfr_srcptr x, int nan_neg, qf_round r, int sat)
{
    uint64_t out[2];
    ref_encode2(f, x, NULL, nan_neg, r, out);
    return out[sat != 0];
}

static inline void ref_encode2_d(const qf_format *f, double x, qf_round r, uint64_t out[2])
{
    mpfr_ptr m = ref_tmp(REF_T_INPUT, 53);
    mpfr_set_d(m, x, MPFR_RNDN); /* exact */
    ref_encode2(f, m, &x, signbit(x) != 0, r, out);
}

static inline uint64_t ref_encode_d(const qf_format *f, double x, qf_round r, int sat)
{
    uint64_t out[2];
    ref_encode2_d(f, x, r, out);
    return out[sat != 0];
}

/* ---- Decoding from fields (docs/numerics.md) --------------------------------- */

/* What a code is, from its fields: 'n' NaN, 'i' infinity, 'v' a value (set
 * into v, which needs 64 bits of precision). */
static inline char ref_decode_mpfr(const qf_format *f, uint64_t code, mpfr_ptr v)
{
    uint64_t mag, biased, frac;
    int neg;
    if (f->kind == QF_KIND_INT) {
        int64_t k;
        code &= (1ull << f->bits) - 1;
        k = (int64_t)code;
        if (f->is_signed && (code >> (f->bits - 1)))
            k -= (int64_t)1 << f->bits; /* two's complement */
        mpfr_set_si(v, (long)k, MPFR_RNDN);
        return 'v';
    }
    if (f->kind == QF_KIND_SCALE) {
        code &= 0xFF;
        if (code == 0xFF) {
            mpfr_set_nan(v);
            return 'n';
        }
        mpfr_set_si_2exp(v, 1, (long)code - 127, MPFR_RNDN); /* 2^(code - 127) */
        return 'v';
    }
    if (f->id == QF_TF32)
        code = (code >> 13) & 0x7FFFF;
    else if (f->bits < 64)
        code &= (1ull << f->bits) - 1;
    neg = (int)((code >> (f->bits - 1)) & 1);
    mag = code & ((1ull << (f->bits - 1)) - 1);
    if (f->bits == 64)
        mag = code & 0x7FFFFFFFFFFFFFFFull;
    biased = mag >> f->man_bits;
    frac = mag & ((1ull << f->man_bits) - 1);
    switch (f->nan) {
    case QF_NAN_IEEE:
        if (biased == ref_all_ones_exp(f)) {
            if (frac) {
                mpfr_set_nan(v);
                return 'n';
            }
            mpfr_set_inf(v, neg ? -1 : 1);
            return 'i';
        }
        break;
    case QF_NAN_FN:
        if (biased == ref_all_ones_exp(f) && frac == (1ull << f->man_bits) - 1) {
            mpfr_set_nan(v);
            return 'n';
        }
        break;
    case QF_NAN_FNUZ:
        if (neg && mag == 0) {
            mpfr_set_nan(v);
            return 'n';
        }
        break;
    default: break;
    }
    if (biased == 0) /* subnormal: 0.frac * 2^(1 - bias) */
        mpfr_set_ui_2exp(v, (unsigned long)frac, 1 - f->bias - f->man_bits, MPFR_RNDN);
    else /* 1.frac * 2^(biased - bias) */
        mpfr_set_uj_2exp(v, (uintmax_t)(frac | (1ull << f->man_bits)),
                         (intmax_t)biased - f->bias - f->man_bits, MPFR_RNDN);
    if (neg)
        mpfr_neg(v, v, MPFR_RNDN);
    return 'v';
}

/* The same as a double (NaN, +-Inf or the exact value). */
static inline double ref_decode_d(const qf_format *f, uint64_t code)
{
    mpfr_ptr v = ref_tmp(REF_T_DECODE, 64);
    double d;
    char k;
    k = ref_decode_mpfr(f, code, v);
    d = k == 'n' ? NAN : mpfr_get_d(v, MPFR_RNDN); /* exact: at most 53 bits */
    return d;
}

/* ---- Random inputs spanning a format ----------------------------------------- */

/* A binary64 input for f: a mix of raw bit patterns (any double, NaN
 * payloads and Inf included), binary64 subnormals, specials, values with
 * few significant bits near the format's grid (ties and near ties) and
 * values with random significands across the format's exponent range plus a
 * margin (its subnormals, its overflow). */
static inline double ref_random_double(ref_rng *r, const qf_format *f)
{
    int lo, hi, e, k;
    uint64_t u = ref_rng_next(r), m;
    double x;
    if (f->kind == QF_KIND_INT) {
        lo = -4;
        hi = f->bits + 2;
    } else if (f->id == QF_FLOAT64) {
        lo = -1074;
        hi = 1023;
    } else {
        lo = f->emin - f->man_bits - 3;
        hi = f->emax + 3;
    }
    switch (ref_rng_below(r, 16)) {
    case 0: return ref_bits_to_double(u);
    case 1: return ref_bits_to_double(u & 0x800FFFFFFFFFFFFFull); /* binary64 subnormal or zero */
    case 2: {
        const double sp[] = {0.0,
                             INFINITY,
                             NAN,
                             f->max,
                             f->min_subnormal,
                             f->min_subnormal / 2,
                             f->min_normal,
                             0x1.fffffffffffffp1023,
                             0x1p-1074,
                             1.0,
                             0.5,
                             1.5};
        x = sp[ref_rng_below(r, sizeof sp / sizeof sp[0])];
        if (u >> 63)
            x = -x;
        if ((u >> 62) & 1)
            x = nextafter(x, (u >> 61) & 1 ? INFINITY : -INFINITY);
        return x;
    }
    case 3:
    case 4:
    case 5: {
        /* few bits: man_bits + 1..3 significant bits, exact ties included */
        int bits = (f->kind == QF_KIND_FLOAT ? f->man_bits : 0) + 1 + (int)ref_rng_below(r, 3);
        if (f->kind == QF_KIND_INT)
            bits = 1 + (int)ref_rng_below(r, (uint64_t)f->bits + 3);
        if (bits > 53)
            bits = 53;
        e = lo + (int)ref_rng_below(r, (uint64_t)(hi - lo + 1));
        m = (u & ((1ull << (bits - 1)) - 1)) | (1ull << (bits - 1));
        x = ldexp((double)m, e - (bits - 1));
        k = (int)ref_rng_below(r, 4);
        if (k == 1)
            x = nextafter(x, INFINITY);
        else if (k == 2)
            x = nextafter(x, 0.0);
        return (ref_rng_next(r) >> 63) ? -x : x;
    }
    default:
        e = lo + (int)ref_rng_below(r, (uint64_t)(hi - lo + 1));
        m = (u & 0xFFFFFFFFFFFFFull) | (1ull << 52);
        x = ldexp((double)m, e - 52);
        return (ref_rng_next(r) >> 63) ? -x : x;
    }
}

/* The code printed in messages: hex, as wide as the storage */
static inline int ref_code_width(const qf_format *f)
{
    return f->storage_bits / 4;
}

#endif
