/* decode.c: the exact value of every code.
 *
 * Every format here has at most 53 significant bits and an exponent range
 * inside binary64's, so each value is exactly a double; ldexp() of an
 * integer significand is exact.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qf_format.h"
#include "_precision.h"

double qf_format_decode(const qf_format *f, uint64_t code)
{
    uint64_t mag, frac, e;
    int neg = 0;
    double v;

    if (f->id == QF_FLOAT64) {
        memcpy(&v, &code, sizeof v);
        return v;
    }
    if (f->kind == QF_KIND_INT) {
        code &= _qf_code_mask(f);
        if (f->is_signed && (code >> (f->bits - 1)))
            return (double)((int64_t)code - ((int64_t)1 << f->bits));
        return (double)code;
    }
    code = _qf_code_from_storage(f, code);
    if (f->kind == QF_KIND_SCALE) {
        if (code == 0xFF)
            return NAN;
        return ldexp(1.0, (int)code - f->bias);
    }
    if (_qf_code_is_nan(f, code))
        return NAN;
    neg = f->is_signed && ((code >> (f->bits - 1)) & 1);
    mag = code & _qf_mag_mask(f);
    if (f->has_inf && mag == _qf_inf_mag(f))
        return neg ? -INFINITY : INFINITY;
    e = mag >> f->man_bits;
    frac = mag & ((1ull << f->man_bits) - 1);
    if (e == 0)
        v = ldexp((double)frac, f->emin - f->man_bits);
    else
        v = ldexp((double)(frac | (1ull << f->man_bits)), (int)e - f->bias - f->man_bits);
    return neg ? -v : v;
}

int qf_format_is_nan(const qf_format *f, uint64_t code)
{
    if (f->id == QF_FLOAT64)
        return (code & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    if (f->kind == QF_KIND_INT)
        return 0;
    return _qf_code_is_nan(f, _qf_code_from_storage(f, code));
}

int qf_format_is_inf(const qf_format *f, uint64_t code)
{
    if (!f->has_inf)
        return 0;
    if (f->id == QF_FLOAT64)
        return (code & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull;
    return (_qf_code_from_storage(f, code) & _qf_mag_mask(f)) == _qf_inf_mag(f);
}

/* Lookup tables for formats of 16 bits or less, built once. */
static double *dec_tables[QF_FORMAT_COUNT];

static const double *_qf_decode_table(const qf_format *f)
{
    const double *t;
    if (f->bits > 16)
        return NULL;
#if defined(__GNUC__)
    t = __atomic_load_n(&dec_tables[f->id], __ATOMIC_ACQUIRE);
#else
    t = dec_tables[f->id];
#endif
    if (t == NULL) {
        size_t n = (size_t)1 << f->bits, i;
        double *nt = malloc(n * sizeof *nt);
        double *expected = NULL;
        if (nt == NULL)
            return NULL;
        for (i = 0; i < n; i++)
            nt[i] = qf_format_decode(f, i);
#if defined(__GNUC__)
        if (!__atomic_compare_exchange_n(&dec_tables[f->id], &expected, nt, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            free(nt);
            return expected;
        }
#else
        dec_tables[f->id] = nt;
        (void)expected;
#endif
        t = nt;
    }
    return t;
}

qf_status qf_format_decode_array(const qf_format *f, const void *codes, size_t n, double *out)
{
    const double *t;
    size_t i;
    if (f == NULL || (n && (codes == NULL || out == NULL)))
        return QF_EINVAL;
    if (n == 0)
        return QF_OK; /* codes and out may be NULL (memcpy must not see them) */
    switch (f->storage_bits) {
    case 8: {
        const uint8_t *c = codes;
        uint8_t m = (uint8_t)_qf_code_mask(f);
        t = _qf_decode_table(f);
        if (t == NULL)
            return QF_ENOMEM;
        for (i = 0; i < n; i++)
            out[i] = t[c[i] & m];
        return QF_OK;
    }
    case 16: {
        const uint16_t *c = codes;
        t = _qf_decode_table(f);
        if (t == NULL)
            return QF_ENOMEM;
        for (i = 0; i < n; i++)
            out[i] = t[c[i]];
        return QF_OK;
    }
    case 32: {
        const uint32_t *c = codes;
        if (f->kind == QF_KIND_INT) {
            /* int32: two's complement, every value exact in binary64. */
            for (i = 0; i < n; i++)
                out[i] = (double)(int32_t)c[i];
            return QF_OK;
        }
        for (i = 0; i < n; i++) {
            float x;
            uint32_t b = c[i];
            if (f->id == QF_TF32)
                b &= 0xFFFFE000u;
            memcpy(&x, &b, sizeof x);
            out[i] = x;
        }
        return QF_OK;
    }
    case 64:
        memcpy(out, codes, n * sizeof *out);
        return QF_OK;
    }
    return QF_EFORMAT;
}
