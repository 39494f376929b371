/* format_mpfr.c: exact MPFR values into and out of formats. */
#include <stdint.h>
#include <mpfr.h>

#include "qf_format_mpfr.h"

uint64_t qf_format_encode_mpfr(const qf_format *f, mpfr_srcptr x, qf_round round, int saturate,
                               int random_bits, uint64_t rnd_word)
{
    mpfr_t t;
    uint64_t sig;
    int sign, sticky;
    mpfr_exp_t e, emin, emax;

    if (mpfr_nan_p(x))
        return qf_format_encode(f, __builtin_nan(""), round, saturate, random_bits, rnd_word);
    if (mpfr_inf_p(x))
        return qf_format_encode(f, mpfr_sgn(x) < 0 ? -__builtin_inf() : __builtin_inf(), round, saturate,
                                random_bits, rnd_word);
    sign = mpfr_signbit(x) != 0;
    if (mpfr_zero_p(x))
        return qf_format_encode_parts(f, sign, 0, 0, 0, round, saturate, random_bits, rnd_word);
    /* The top 64 bits, truncated, and whether anything was cut off.  The
     * caller may have narrowed MPFR's exponent range (to emulate a format,
     * as the MPFR manual does for binary16): mpfr_set_exp(t, 64) then fails
     * and mpfr_abs may underflow, so work in the widest range. */
    emin = mpfr_get_emin();
    emax = mpfr_get_emax();
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    mpfr_init2(t, 64);
    sticky = mpfr_abs(t, x, MPFR_RNDZ) != 0;
    e = mpfr_get_exp(t); /* t = 0.1xxx * 2^e */
    mpfr_set_exp(t, 64); /* now an integer in [2^63, 2^64) */
    sig = (uint64_t)mpfr_get_uj(t, MPFR_RNDZ);
    mpfr_clear(t);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    /* exponent of the leading bit in the 1.xxx convention is e - 1; beyond
     * int range nothing rounds differently from a huge or tiny value */
    if (e - 1 > 100000)
        e = 100001;
    if (e - 1 < -100000)
        e = -99999;
    return qf_format_encode_parts(f, sign, (int)(e - 1), sig, sticky, round, saturate, random_bits, rnd_word);
}

void qf_format_decode_mpfr(const qf_format *f, uint64_t code, mpfr_ptr rop)
{
    /* exact: decode is exact; like any MPFR result, a value outside the
     * caller's exponent range underflows or overflows */
    mpfr_set_d(rop, qf_format_decode(f, code), MPFR_RNDN);
}

int qf_format_encode_interval(const qf_format *f, mpfr_srcptr lo, mpfr_srcptr hi, qf_round round, int saturate,
                              uint64_t *code)
{
    uint64_t a, b;
    if (round == QF_ROUND_STOCHASTIC || mpfr_nan_p(lo) || mpfr_nan_p(hi) || mpfr_cmp(lo, hi) > 0)
        return 0; /* not an interval */
    a = qf_format_encode_mpfr(f, lo, round, saturate, 32, 0);
    b = qf_format_encode_mpfr(f, hi, round, saturate, 32, 0);
    if (a != b)
        return 0;
    /* One code is one value, or one rule, only on one half of the line:
     * a split code from ends on both halves (fnuz's NaN from -overflow and
     * +overflow, e8m0's 0xFF from a negative and an overflow) leaves the
     * numbers between them, which round elsewhere, undecided. */
    if ((mpfr_sgn(lo) > 0) != (mpfr_sgn(hi) > 0) && qf_format_code_split(f, a, round, saturate))
        return 0;
    *code = a;
    return 1;
}
