/* encode.c: one correctly rounded step from an exact value into a format.
 *
 * The exact value arrives as parts (sign, exponent, 64-bit significand,
 * sticky), so binary64 inputs and the exact dot-product accumulator share
 * one rounding routine and can never be rounded twice.
 *
 * Overflow follows IEEE 754-2019 7.4 with the format's own specials:
 * a result beyond +-max becomes +-max when the rounding direction points
 * toward zero (rtz; up for negatives; down for positives), otherwise the
 * overflow value: +-Inf where the format has Inf, its NaN encoding where it
 * has NaN only (OCP OFP8 E4M3, FNUZ), +-max where it has neither (MX FP6/FP4,
 * as ml_dtypes).  Saturation (OCP OFP8 "saturating mode", PTX .satfinite)
 * replaces every overflow value and every infinite input by +-max.
 */
#include <math.h>
#include <string.h>

#include "qf_format.h"
#include "_precision.h"

static uint64_t _qf_nan_code(const qf_format *f, int sign)
{
    switch (f->nan) {
    case QF_NAN_IEEE:
        /* quiet NaN: exponent all ones, top fraction bit set */
        return (sign ? _qf_sign_bit(f) : 0) | _qf_inf_mag(f) | (1ull << (f->man_bits - 1));
    case QF_NAN_FN: return (sign ? _qf_sign_bit(f) : 0) | _qf_mag_mask(f);
    case QF_NAN_FNUZ: return _qf_sign_bit(f);
    case QF_NAN_E8M0: return 0xFF;
    case QF_NAN_NONE:
        /* MX FP6/FP4: conversion from NaN is implementation-defined (MX v1.0
         * 5.3.2).  ml_dtypes returns quiet_NaN(), the -0 code, for a NaN and
         * its negation, the +0 code, for a NaN with the sign bit set. */
        return f->kind == QF_KIND_INT || sign ? 0 : _qf_sign_bit(f);
    }
    return 0;
}

/* +-max, or the overflow value when not saturating. Internal code. */
static uint64_t _qf_overflow_code(const qf_format *f, int sign, int saturate)
{
    uint64_t s = sign ? _qf_sign_bit(f) : 0;
    uint64_t max = _qf_code_from_storage(f, f->max_code);
    if (saturate)
        return s | max;
    if (f->has_inf)
        return s | _qf_inf_mag(f);
    if (f->nan != QF_NAN_NONE)
        return _qf_nan_code(f, sign);
    return s | max;
}

uint64_t qf_format_max_code(const qf_format *f, int negative)
{
    if (f->kind == QF_KIND_INT) {
        int64_t v = negative ? f->int_min : f->int_max;
        return (uint64_t)v & _qf_code_mask(f);
    }
    if (!f->is_signed)
        return f->max_code;
    return _qf_code_to_storage(f, (negative ? _qf_sign_bit(f) : 0) | _qf_code_from_storage(f, f->max_code));
}

/* Does the rounding direction point toward zero for this sign? */
static int _qf_toward_zero(qf_round r, int sign)
{
    return r == QF_ROUND_RTZ || r == QF_ROUND_FLOOR || (r == QF_ROUND_UP && sign) ||
           (r == QF_ROUND_DOWN && !sign);
}

/* Decide the increment of a truncated significand.
 *   kept: the kept bits, r: first discarded bit, s: any later discarded bit,
 *   frac: the discarded bits as a 64-bit fraction (for stochastic rounding). */
static int _qf_round_inc(qf_round round, int sign, uint64_t kept, int r, int s, uint64_t frac,
                         int random_bits, uint64_t rnd)
{
    switch (round) {
    case QF_ROUND_RNE:
    case QF_ROUND_EVEN: return r && (s || (kept & 1));
    case QF_ROUND_RNA: return r;
    case QF_ROUND_RTZ:
    case QF_ROUND_FLOOR: return 0;
    case QF_ROUND_UP:
    case QF_ROUND_CEIL:
    case QF_ROUND_RCEIL: return !sign && (r || s);
    case QF_ROUND_DOWN: return sign && (r || s);
    case QF_ROUND_STOCHASTIC: {
        /* Hardware-style: add random_bits random bits below the kept bits and
         * truncate, so P(up) = (discarded fraction truncated to random_bits). */
        int b = random_bits < 1 ? 1 : random_bits > 32 ? 32 : random_bits;
        uint64_t top = frac >> (64 - b);
        uint64_t rr = rnd & ((1ull << b) - 1);
        return top + rr >= (1ull << b);
    }
    default: return 0;
    }
}

/* Split the significand sig (with sticky, the OR of any bits below it)
 * at shift >= 1 discarded low bits: kept, the round bit r, the sticky bit
 * s of everything below r, and frac, the discarded bits left-aligned (for
 * stochastic rounding).  A shift of 64 or more keeps nothing. */
static void _qf_split(uint64_t sig, int sticky, int shift, uint64_t *kept, int *r, int *s, uint64_t *frac)
{
    if (shift >= 65) {
        *kept = 0;
        *r = 0;
        *s = 1;
        *frac = shift - 64 >= 64 ? 0 : sig >> (shift - 64);
    } else if (shift == 64) {
        *kept = 0;
        *r = (int)(sig >> 63);
        *s = (sig << 1) != 0 || sticky;
        *frac = sig;
    } else {
        *kept = sig >> shift;
        *r = (int)((sig >> (shift - 1)) & 1);
        *s = (sig & ((1ull << (shift - 1)) - 1)) != 0 || sticky;
        *frac = sig << (64 - shift);
    }
}

static uint64_t _qf_encode_int(const qf_format *f, int sign, int exp, uint64_t sig, int sticky,
                               qf_round round, int random_bits, uint64_t rnd)
{
    uint64_t kept, frac;
    int r, s, shift, inc;
    int64_t v;

    if (sig == 0)
        return 0;
    if (exp >= 62) /* |x| >= 2^62: far outside every integer format */
        return qf_format_max_code(f, sign);
    shift = 63 - exp; /* keep the bits of weight >= 1 */
    _qf_split(sig, sticky, shift, &kept, &r, &s, &frac);
    inc = _qf_round_inc(round, sign, kept, r, s, frac, random_bits, rnd);
    kept += (uint64_t)inc;
    if (kept > (uint64_t)1 << 62)
        return qf_format_max_code(f, sign);
    v = sign ? -(int64_t)kept : (int64_t)kept;
    if (v > f->int_max)
        v = f->int_max;
    if (v < f->int_min)
        v = f->int_min;
    return (uint64_t)v & _qf_code_mask(f);
}

static uint64_t _qf_encode_scale(const qf_format *f, int sign, int exp, uint64_t sig, int sticky,
                                 qf_round round, int saturate, int random_bits, uint64_t rnd)
{
    /* E8M0: value 2^(code - 127), one significant bit, no zero, no sign.
     * Like ml_dtypes: zero and negatives give NaN, or 0x00 when saturating;
     * magnitudes below 2^-127 give 0x00. */
    int r, s, inc, k;
    /* RCEIL is the cuBLAS/PTX rule (cvt.rp.satfinite.ue8m0x2): it never
     * gives NaN for a number, so it saturates at both ends. */
    if (round == QF_ROUND_RCEIL)
        saturate = 1;
    if (sig == 0 || sign)
        return saturate ? 0x00 : 0xFF;
    r = (int)((sig >> 62) & 1);
    s = (sig << 2) != 0 || sticky;
    inc = _qf_round_inc(round, 0, 1, r, s, sig << 1, random_bits, rnd);
    k = exp + inc;
    if (k < f->emin)
        return 0x00;
    if (k > f->emax)
        return (saturate || _qf_toward_zero(round, 0)) ? f->max_code : 0xFF;
    return (uint64_t)(k + f->bias);
}

uint64_t qf_format_encode_parts(const qf_format *f, int sign, int exp, uint64_t sig, int sticky,
                                qf_round round, int saturate, int random_bits, uint64_t rnd)
{
    uint64_t kept, frac, mag, max_mag, code;
    int r, s, shift, inc, e_eff, p;

    if (f->kind == QF_KIND_INT)
        return _qf_encode_int(f, sign, exp, sig, sticky, round, random_bits, rnd);
    if (f->kind == QF_KIND_SCALE)
        return _qf_encode_scale(f, sign, exp, sig, sticky, round, saturate, random_bits, rnd);
    if (sig == 0)
        return _qf_code_to_storage(f, (sign && f->has_negzero) ? _qf_sign_bit(f) : 0);

    max_mag = _qf_code_from_storage(f, f->max_code);
    if (exp > f->emax) {
        /* beyond the top binade: overflow whatever the rounding */
        code = _qf_toward_zero(round, sign) ? ((sign ? _qf_sign_bit(f) : 0) | max_mag)
                                            : _qf_overflow_code(f, sign, saturate);
        return _qf_code_to_storage(f, code);
    }
    p = f->man_bits + 1;
    e_eff = exp < f->emin ? f->emin : exp;
    shift = 64 - p + (e_eff - exp); /* discarded low bits of sig, >= 11 */
    _qf_split(sig, sticky, shift, &kept, &r, &s, &frac);
    inc = _qf_round_inc(round, sign, kept, r, s, frac, random_bits, rnd);
    /* The biased-exponent trick: emin + bias == 1 for every float format
     * here, so (e_eff - emin) << man + significand-with-hidden-bit is the
     * magnitude code, and a carry out of the significand moves into the
     * exponent field by itself. */
    mag = ((uint64_t)(e_eff - f->emin) << f->man_bits) + kept + (uint64_t)inc;
    if (mag > max_mag) {
        code = _qf_toward_zero(round, sign) ? ((sign ? _qf_sign_bit(f) : 0) | max_mag)
                                            : _qf_overflow_code(f, sign, saturate);
        return _qf_code_to_storage(f, code);
    }
    if (mag == 0 && !f->has_negzero)
        return 0; /* FNUZ: a negative result that rounds to zero is 0x00 */
    code = (sign ? _qf_sign_bit(f) : 0) | mag;
    return _qf_code_to_storage(f, code);
}

/* Split a finite nonzero binary64 into the parts above. */
static void _qf_split_double(uint64_t a, int *exp, uint64_t *sig)
{
    uint64_t be = a >> 52, m = a & 0xFFFFFFFFFFFFFull;
    if (be == 0) {
        int lz = __builtin_clzll(m);
        *sig = m << lz;
        *exp = -1022 - (lz - 11);
    } else {
        *sig = (m | (1ull << 52)) << 11;
        *exp = (int)be - 1023;
    }
}

uint64_t qf_format_encode(const qf_format *f, double x, qf_round round, int saturate, int random_bits,
                          uint64_t rnd)
{
    uint64_t u, a, sig;
    int sign, exp;

    memcpy(&u, &x, sizeof u);
    sign = (int)(u >> 63);
    a = u & 0x7FFFFFFFFFFFFFFFull;
    if (f->id == QF_FLOAT64) {
        /* the identity, NaN payloads kept; saturation still turns an
         * infinite input into +-max, as for every other format */
        if (saturate && a == 0x7FF0000000000000ull)
            return (u & 0x8000000000000000ull) | f->max_code;
        return u;
    }
    if (a > 0x7FF0000000000000ull) { /* NaN */
        if (f->kind == QF_KIND_FLOAT)
            return _qf_code_to_storage(f, _qf_nan_code(f, sign));
        return _qf_nan_code(f, sign);
    }
    if (a == 0x7FF0000000000000ull) { /* +-Inf */
        if (f->kind == QF_KIND_INT)
            return qf_format_max_code(f, sign);
        if (f->kind == QF_KIND_SCALE) {
            if (saturate || round == QF_ROUND_RCEIL) /* RCEIL saturates: see _qf_encode_scale */
                return sign ? 0x00 : f->max_code;
            return 0xFF;
        }
        return _qf_code_to_storage(f, _qf_overflow_code(f, sign, saturate));
    }
    if (a == 0)
        return qf_format_encode_parts(f, sign, 0, 0, 0, round, saturate, random_bits, rnd);
    _qf_split_double(a, &exp, &sig);
    return qf_format_encode_parts(f, sign, exp, sig, 0, round, saturate, random_bits, rnd);
}

/* Split codes (qf_format.h).  On each half of the real line, the numbers
 * <= 0 and the numbers > 0, rounding is monotone: a finite nonzero result
 * keeps the sign of its input (or, for e8m0, every number <= 0 gives one
 * code), so the codes of one half run in order from one end of the half
 * to the other, and the numbers of that half that round to one code form
 * an interval.  A code of both halves therefore has to be one of the codes
 * at their ends: zero and the smallest magnitudes, or the overflow.  It
 * joins its two intervals into one exactly when it is also the code of 0
 * (the right end of the half <= 0) and of the smallest positive numbers
 * (the left end of the other): a zero, or e8m0's 0x00 when saturating.
 * Otherwise it is split.  The ends are probed with the exponents at which
 * qf_format_encode_mpfr clamps every MPFR value (beyond every format's
 * range), through the one rounding routine, so the probes are what any
 * input at that end gives. */
static uint64_t _qf_probe(const qf_format *f, int sign, int exp, int zero, qf_round round, int saturate)
{
    return qf_format_encode_parts(f, sign, exp, zero ? 0 : 1ull << 63, 0, round, saturate, 32, 0);
}

int qf_format_split_codes(const qf_format *f, qf_round round, int saturate, uint64_t split[2])
{
    uint64_t pos[2], neg[3];
    int n = 0, i, j;
    pos[0] = _qf_probe(f, 0, -99999, 0, round, saturate); /* the smallest positive numbers */
    pos[1] = _qf_probe(f, 0, 100000, 0, round, saturate); /* the largest */
    neg[0] = _qf_probe(f, 0, 0, 1, round, saturate);      /* 0 */
    neg[1] = _qf_probe(f, 1, -99999, 0, round, saturate);
    neg[2] = _qf_probe(f, 1, 100000, 0, round, saturate);
    for (i = 0; i < 2; i++) {
        int both = 0;
        for (j = 0; j < 3; j++)
            both |= pos[i] == neg[j];
        if (!both || (pos[i] == neg[0] && pos[i] == pos[0]) || (n == 1 && pos[i] == split[0]))
            continue;
        split[n++] = pos[i];
    }
    if (n == 1)
        split[1] = split[0];
    return n;
}

int qf_format_code_split(const qf_format *f, uint64_t code, qf_round round, int saturate)
{
    uint64_t s[2];
    int n = qf_format_split_codes(f, round, saturate, s);
    return n > 0 && (code == s[0] || code == s[1]);
}
