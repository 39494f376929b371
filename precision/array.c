/* array.c: array encode with a branch-free nearest-even path, packing, and
 * the counter-based generator used for stochastic rounding. */
#include <math.h>
#include <string.h>

#include "qf_format.h"
#include "_precision.h"

uint64_t qf_rng_u64(uint64_t seed, uint64_t i)
{
    /* splitmix64 (Steele, Lea, Flood 2014) of a (seed, counter) mix */
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    z = (z + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 29);
}

size_t qf_format_array_bytes(const qf_format *f, size_t n)
{
    return n * (size_t)(f->storage_bits / 8);
}

/* Nearest-even into a narrow float format (p <= 24, no exponent beyond
 * binary32's), written without branches so the compiler can vectorize it.
 * Normal results: add the nearest-even bias to the binary64 bits and shift
 * (the carry runs into the exponent). Subnormal results: |x| + 2^(emin+52-m)
 * rounds |x| at the subnormal step in one correctly rounded binary64
 * addition; the low bits of the sum are the code. */
typedef struct fastenc {
    uint64_t norm_off;  /* (1023 - bias) << man */
    uint64_t sub_bits;  /* bits of the magic constant C */
    uint64_t min_norm;  /* bits of 2^emin */
    uint64_t ovf_bits;  /* |x| bits at or beyond which the result overflows */
    uint64_t max_mag, ovf_code, nan_code, sign_bit, nan_sign_bit;
    double c;
    int drop; /* 52 - man */
    int has_negzero;
} fastenc;

static void _fastenc_init(const qf_format *f, int saturate, fastenc *fe)
{
    double t;
    fe->drop = 52 - f->man_bits;
    fe->norm_off = (uint64_t)(1023 - f->bias) << f->man_bits;
    fe->c = ldexp(1.0, f->emin + fe->drop);
    memcpy(&fe->sub_bits, &fe->c, 8);
    t = ldexp(1.0, f->emin);
    memcpy(&fe->min_norm, &t, 8);
    fe->max_mag = f->max_code;
    /* smallest |x| that rounds above max: max + half an ulp, exclusive when
     * max is even (a tie goes down to it), which is the case for every
     * format here because max's last fraction bit ... is checked below */
    {
        double mx = f->max, half = ldexp(1.0, f->emax - f->man_bits - 1);
        double thr = mx + half; /* exact: one more bit than the format */
        uint64_t b;
        memcpy(&b, &thr, 8);
        /* a tie at thr goes to even; max is even iff its last bit is 0 */
        fe->ovf_bits = (f->max_code & 1) ? b : b + 1;
    }
    if (saturate)
        fe->ovf_code = f->max_code;
    else if (f->has_inf)
        fe->ovf_code = _qf_inf_mag(f);
    else if (f->nan == QF_NAN_FN)
        fe->ovf_code = _qf_mag_mask(f);
    else if (f->nan == QF_NAN_FNUZ)
        fe->ovf_code = ~0ull; /* marker: 0x80 without sign */
    else
        fe->ovf_code = f->max_code;
    fe->sign_bit = _qf_sign_bit(f);
    fe->has_negzero = f->has_negzero;
    fe->nan_code = qf_format_encode(f, NAN, QF_ROUND_RNE, saturate, 0, 0);
    fe->nan_sign_bit = (f->nan == QF_NAN_IEEE || f->nan == QF_NAN_FN) ? fe->sign_bit : 0;
}

static inline uint64_t _fastenc_one(const fastenc *fe, double x)
{
    uint64_t u, a, s, nb, norm, sub, mag, code;
    double ax, y;
    memcpy(&u, &x, 8);
    a = u & 0x7FFFFFFFFFFFFFFFull;
    s = (u >> 63) ? fe->sign_bit : 0;
    nb = (a >> fe->drop) & 1;
    norm = ((a + nb + (1ull << (fe->drop - 1)) - 1) >> fe->drop) - fe->norm_off;
    memcpy(&ax, &a, 8);
    y = ax + fe->c;
    memcpy(&sub, &y, 8);
    sub -= fe->sub_bits;
    mag = a < fe->min_norm ? sub : norm;
    code = s | mag;
    if (mag == 0 && !fe->has_negzero)
        code = 0;
    if (a >= fe->ovf_bits)
        code = fe->ovf_code == ~0ull ? fe->sign_bit : (s | fe->ovf_code);
    if (a > 0x7FF0000000000000ull)
        code = fe->nan_code | (s & fe->nan_sign_bit);
    return code;
}

#define FAST_LOOP(T)                                                                   \
    do {                                                                               \
        T *o = codes;                                                                  \
        for (i = 0; i < n; i++)                                                        \
            o[i] = (T)_fastenc_one(&fe, x[i]);                                         \
    } while (0)

#define SLOW_LOOP(T)                                                                   \
    do {                                                                               \
        T *o = codes;                                                                  \
        for (i = 0; i < n; i++)                                                        \
            o[i] = (T)qf_format_encode(f, x[i], r, sat, rb,                            \
                                       r == QF_ROUND_STOCHASTIC ? qf_rng_u64(seed, i) : 0); \
    } while (0)

qf_status qf_format_encode_array(const qf_format *f, const double *x, size_t n, void *codes,
                                 const qf_encode_opts *opts)
{
    qf_encode_opts d = qf_encode_opts_default();
    qf_round r;
    int sat, rb;
    uint64_t seed;
    size_t i;

    if (f == NULL || (n && (x == NULL || codes == NULL)))
        return QF_EINVAL;
    if (opts == NULL)
        opts = &d;
    if (!qf_round_valid(f, opts->round))
        return QF_EINVAL;
    r = opts->round;
    sat = opts->saturate;
    rb = opts->random_bits;
    seed = opts->seed;

    if (f->id == QF_FLOAT64) {
        memcpy(codes, x, n * sizeof *x);
        return QF_OK;
    }
    if (r == QF_ROUND_RNE && f->kind == QF_KIND_FLOAT && f->storage_bits <= 16 &&
        f->id != QF_TF32) {
        fastenc fe;
        _fastenc_init(f, sat, &fe);
        if (f->storage_bits == 8)
            FAST_LOOP(uint8_t);
        else
            FAST_LOOP(uint16_t);
        return QF_OK;
    }
    switch (f->storage_bits) {
    case 8: SLOW_LOOP(uint8_t); break;
    case 16: SLOW_LOOP(uint16_t); break;
    case 32: SLOW_LOOP(uint32_t); break;
    default: return QF_EFORMAT;
    }
    return QF_OK;
}

qf_status qf_format_pack4(const uint8_t *codes, size_t n, uint8_t *packed)
{
    size_t i;
    if (n && (codes == NULL || packed == NULL))
        return QF_EINVAL;
    for (i = 0; i + 1 < n; i += 2)
        packed[i / 2] = (uint8_t)((codes[i] & 0xF) | ((codes[i + 1] & 0xF) << 4));
    if (n & 1)
        packed[n / 2] = codes[n - 1] & 0xF;
    return QF_OK;
}

qf_status qf_format_unpack4(const uint8_t *packed, size_t n, uint8_t *codes)
{
    size_t i;
    if (n && (codes == NULL || packed == NULL))
        return QF_EINVAL;
    for (i = 0; i < n; i++)
        codes[i] = (uint8_t)((packed[i / 2] >> ((i & 1) * 4)) & 0xF);
    return QF_OK;
}
