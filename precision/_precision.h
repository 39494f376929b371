/* _precision.h: helpers shared inside precision/ (not installed). */
#ifndef QF__PRECISION_H
#define QF__PRECISION_H

#include <stdint.h>

#include "qf_format.h"

/* All bits of a code. */
static inline uint64_t _qf_code_mask(const qf_format *f)
{
    return f->bits >= 64 ? ~0ull : ((1ull << f->bits) - 1);
}

/* The magnitude bits (everything but the sign). */
static inline uint64_t _qf_mag_mask(const qf_format *f)
{
    return f->is_signed ? _qf_code_mask(f) >> 1 : _qf_code_mask(f);
}

static inline uint64_t _qf_sign_bit(const qf_format *f)
{
    return f->is_signed ? 1ull << (f->bits - 1) : 0;
}

/* Exponent field all ones, fraction zero: the infinity of IEEE-like formats. */
static inline uint64_t _qf_inf_mag(const qf_format *f)
{
    return ((1ull << f->exp_bits) - 1) << f->man_bits;
}

/* tf32 travels in a float32 container; internally its code is 19 bits. */
static inline uint64_t _qf_code_from_storage(const qf_format *f, uint64_t c)
{
    if (f->id == QF_TF32)
        return (c >> 13) & 0x7FFFF;
    return c & _qf_code_mask(f);
}

static inline uint64_t _qf_code_to_storage(const qf_format *f, uint64_t c)
{
    return f->id == QF_TF32 ? c << 13 : c;
}

/* c is an internal (not storage) code. */
static inline int _qf_code_is_nan(const qf_format *f, uint64_t c)
{
    uint64_t mag = c & _qf_mag_mask(f);
    switch (f->nan) {
    case QF_NAN_IEEE: return mag > _qf_inf_mag(f);
    case QF_NAN_FN: return mag == _qf_mag_mask(f);
    case QF_NAN_FNUZ: return c == _qf_sign_bit(f);
    case QF_NAN_E8M0: return c == 0xFF;
    case QF_NAN_NONE: return 0;
    }
    return 0;
}

#endif
