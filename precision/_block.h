/* _block.h: helpers shared by the block_*.c files (not installed).
 *
 * The block quantizers divide and multiply by scales.  A quotient or a
 * product of two doubles is rarely a double, and rounding it to binary64
 * before rounding it into the element format would round twice.  These
 * helpers describe the exact result as the parts qf_format_encode_parts
 * takes (sign, exponent, 64-bit significand, sticky), so every element and
 * every scale is rounded once, by the one rounding routine of encode.c.
 */
#ifndef QF__BLOCK_H
#define QF__BLOCK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"

/* value = (-1)^sign * (sig + t) * 2^(exp - 63) with bit 63 of sig set and
 * 0 < t < 1 when sticky, t = 0 otherwise; zero: the value is 0. */
typedef struct _qf_parts {
    int sign;
    int exp;
    uint64_t sig;
    int sticky;
    int zero;
} _qf_parts;

/* x * 2^shift exactly (x finite). */
void _qf_parts_of_double(double x, int shift, _qf_parts *p);
/* a / b and a * b: b finite nonzero (quotient), a and b finite (product).
 * The parts are exact for every rounding into a format of at most 52
 * significant bits (the first discarded bit is then at or above bit 11 of
 * sig), which covers every target here. */
void _qf_parts_of_quotient(double a, double b, _qf_parts *p);
void _qf_parts_of_product(double a, double b, _qf_parts *p);

static inline uint64_t _qf_parts_encode(const qf_format *f, const _qf_parts *p, qf_round round, int saturate,
                                        int random_bits, uint64_t rnd)
{
    if (p->zero)
        return qf_format_encode_parts(f, p->sign, 0, 0, 0, round, saturate, random_bits, rnd);
    return qf_format_encode_parts(f, p->sign, p->exp, p->sig, p->sticky, round, saturate, random_bits, rnd);
}

/* The value rounded to an integer in the given mode, clamped to +-2^40. */
int64_t _qf_parts_round_int(const _qf_parts *p, qf_round round, int random_bits, uint64_t rnd);

/* Where block `si` of a rows x cols matrix lies: element i of the block is
 * x[first + i * stride], i < len. */
typedef struct _qf_blk {
    size_t first, stride, len;
} _qf_blk;

void _qf_block_locate(size_t rows, size_t cols, int axis, size_t block, size_t si, _qf_blk *b);

/* The largest magnitude in block b of x, or NaN when the block holds a
 * NaN or an infinity (a quantizer then makes the whole block NaN). */
static inline double _qf_block_amax(const double *x, const _qf_blk *b)
{
    double amax = 0;
    for (size_t i = 0; i < b->len; i++) {
        double a = fabs(x[b->first + i * b->stride]);
        if (!isfinite(a))
            return NAN;
        if (a > amax)
            amax = a;
    }
    return amax;
}

/* Block si as NaN: its scale code nan_scale (scales[si] NaN when scales is
 * not NULL) and element codes 0. */
static inline void _qf_block_set_nan(const _qf_blk *b, size_t si, uint8_t nan_scale, uint8_t *codes,
                                     uint8_t *scale_codes, double *scales)
{
    scale_codes[si] = nan_scale;
    if (scales)
        scales[si] = NAN;
    for (size_t i = 0; i < b->len; i++)
        codes[b->first + i * b->stride] = 0;
}

/* rows * cols without overflow, and the pointers of a call present. */
int _qf_block_dims_ok(size_t rows, size_t cols);

/* Element rounding modes the quantizers accept (the e8m0 scale rules are
 * not element roundings). */
static inline int _qf_block_round_ok(qf_round r)
{
    return (unsigned)r <= (unsigned)QF_ROUND_STOCHASTIC;
}

#endif
