/* qf_format_mpfr.h: the bridge between MPFR values and qualify formats.
 *
 * References compute in MPFR and must round once, directly, into the
 * target format (never through binary64).  These functions take an MPFR
 * value as the exact input of the format's rounding.
 */
#ifndef QF_FORMAT_MPFR_H
#define QF_FORMAT_MPFR_H

#include <stdint.h>
#include <mpfr.h>

#include "qf_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Round the exact value of x into the format (same rules as
 * qf_format_encode).  x may have any precision. */
uint64_t qf_format_encode_mpfr(const qf_format *f, mpfr_srcptr x, qf_round round, int saturate,
                               int random_bits, uint64_t rnd_word);

/* Set rop to the exact value of a code (rop needs at least 53 bits, or
 * the format's precision). */
void qf_format_decode_mpfr(const qf_format *f, uint64_t code, mpfr_ptr rop);

/* The code of x rounded into f when the exact value is only known to lie
 * in [lo, hi]: returns 1 and sets *code when every number of [lo, hi]
 * rounds to one code (the rounding is decided), 0 when not.  That is both
 * ends rounding to one code, and, when that code is split (qf_format.h:
 * the NaN 0x80 of the fnuz formats, 0xFF of e8m0), both ends on the same
 * side of 0 (> 0, or <= 0): then one rule sends the whole interval there.
 * 0 for stochastic rounding, a NaN end, or lo > hi. */
int qf_format_encode_interval(const qf_format *f, mpfr_srcptr lo, mpfr_srcptr hi, qf_round round,
                              int saturate, uint64_t *code);

#ifdef __cplusplus
}
#endif

#endif
