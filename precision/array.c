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
    int64_t norm_off; /* (1023 - bias) << man */
    int64_t sub_bits; /* bits of the magic constant C */
    int64_t min_norm; /* bits of 2^emin */
    int64_t ovf_bits; /* |x| bits at or beyond which the result overflows */
    int64_t sign_bit;
    int64_t ovf_pos, ovf_neg; /* full codes of an overflow */
    int64_t nan_pos, nan_neg; /* full codes of a NaN input */
    int64_t zero_neg;         /* code of a negative value rounding to zero */
    double c;
    int drop; /* 52 - man */
} fastenc;

static void _fastenc_init(const qf_format *f, int saturate, fastenc *fe)
{
    double t, mx, half, thr;
    uint64_t b;
    fe->drop = 52 - f->man_bits;
    fe->norm_off = (int64_t)(1023 - f->bias) << f->man_bits;
    fe->c = ldexp(1.0, f->emin + fe->drop);
    memcpy(&fe->sub_bits, &fe->c, 8);
    t = ldexp(1.0, f->emin);
    memcpy(&fe->min_norm, &t, 8);
    /* The smallest |x| that rounds above max is max + half an ulp, where a
     * tie goes to even: to max when max's last fraction bit is 0. */
    mx = f->max;
    half = ldexp(1.0, f->emax - f->man_bits - 1);
    thr = mx + half; /* exact: one bit more than the format */
    memcpy(&b, &thr, 8);
    fe->ovf_bits = (int64_t)((f->max_code & 1) ? b : b + 1);
    fe->sign_bit = (int64_t)_qf_sign_bit(f);
    /* The scalar encoder decides every special; ask it once. */
    fe->ovf_pos = (int64_t)qf_format_encode(f, INFINITY, QF_ROUND_RNE, saturate, 0, 0);
    fe->ovf_neg = (int64_t)qf_format_encode(f, -INFINITY, QF_ROUND_RNE, saturate, 0, 0);
    fe->nan_pos = (int64_t)qf_format_encode(f, NAN, QF_ROUND_RNE, saturate, 0, 0);
    fe->nan_neg = (int64_t)qf_format_encode(f, -NAN, QF_ROUND_RNE, saturate, 0, 0);
    fe->zero_neg = (int64_t)qf_format_encode(f, -0.0, QF_ROUND_RNE, saturate, 0, 0);
}

/* Every branch below is a select, so the loop vectorizes. */
#define FAST_BODY(T)                                                                               \
    do {                                                                                           \
        T *o = codes;                                                                              \
        const int64_t norm_off = fe.norm_off, sub_bits = fe.sub_bits, min_norm = fe.min_norm;     \
        const int64_t ovf_bits = fe.ovf_bits, sign_bit = fe.sign_bit;                              \
        const int64_t ovf_pos = fe.ovf_pos, ovf_neg = fe.ovf_neg, nan_pos = fe.nan_pos;            \
        const int64_t nan_neg = fe.nan_neg, zero_neg = fe.zero_neg;                                \
        const int64_t half_m1 = ((int64_t)1 << (fe.drop - 1)) - 1;                                 \
        const double cc = fe.c;                                                                    \
        const int drop = fe.drop;                                                                  \
        for (i = 0; i < n; i++) {                                                                  \
            int64_t u, a, norm, sub, mag, code, m, m_sub, m_neg;                                   \
            double ax, y;                                                                          \
            memcpy(&u, &x[i], 8);                                                                  \
            a = u & 0x7FFFFFFFFFFFFFFFll;                                                          \
            /* unsigned: NaN payloads near 2^63 must wrap, not overflow */                         \
            norm = (int64_t)(((uint64_t)a + (uint64_t)((a >> drop) & 1) + (uint64_t)half_m1) >> drop) \
                   - norm_off;                                                                     \
            memcpy(&ax, &a, 8);                                                                    \
            y = ax + cc;                                                                           \
            memcpy(&sub, &y, 8);                                                                   \
            sub -= sub_bits;                                                                       \
            m_sub = -(int64_t)(a < min_norm);                                                      \
            mag = (sub & m_sub) | (norm & ~m_sub);                                                 \
            m_neg = -(int64_t)(u < 0);                                                             \
            m = m_neg & -(int64_t)(mag == 0);                                                      \
            code = ((mag | (sign_bit & m_neg)) & ~m) | (zero_neg & m);                             \
            m = -(int64_t)(a >= ovf_bits);                                                         \
            code = (code & ~m) | (((ovf_neg & m_neg) | (ovf_pos & ~m_neg)) & m);                   \
            m = -(int64_t)(a > 0x7FF0000000000000ll);                                              \
            code = (code & ~m) | (((nan_neg & m_neg) | (nan_pos & ~m_neg)) & m);                   \
            o[i] = (T)code;                                                                        \
        }                                                                                          \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QF_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QF_CLONES
#endif

QF_CLONES static void _fast_encode8(const fastenc *fep, const double *x, size_t n, uint8_t *codes)
{
    fastenc fe = *fep;
    size_t i;
    FAST_BODY(uint8_t);
}

QF_CLONES static void _fast_encode16(const fastenc *fep, const double *x, size_t n, uint16_t *codes)
{
    fastenc fe = *fep;
    size_t i;
    FAST_BODY(uint16_t);
}

#define SLOW_LOOP(T)                                                                   \
    do {                                                                               \
        T *o = codes;                                                                  \
        for (i = 0; i < n; i++)                                                        \
            o[i] = (T)qf_format_encode(f, x[i], r, sat, rb,                            \
                                       r == QF_ROUND_STOCHASTIC ? qf_rng_u64(seed, first + i) : 0); \
    } while (0)

qf_status qf_format_encode_array(const qf_format *f, const double *x, size_t n, void *codes,
                                 const qf_encode_opts *opts)
{
    return qf_format_encode_array_at(f, x, n, codes, opts, 0);
}

qf_status qf_format_encode_array_at(const qf_format *f, const double *x, size_t n, void *codes,
                                    const qf_encode_opts *opts, uint64_t first)
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

    if (n == 0)
        return QF_OK; /* codes and x may be NULL */
    if (f->id == QF_FLOAT64 && !sat) {
        memcpy(codes, x, n * sizeof *x);
        return QF_OK;
    }
    if (r == QF_ROUND_RNE && f->kind == QF_KIND_FLOAT && f->storage_bits <= 16 &&
        f->id != QF_TF32) {
        fastenc fe;
        _fastenc_init(f, sat, &fe);
        if (f->storage_bits == 8)
            _fast_encode8(&fe, x, n, codes);
        else
            _fast_encode16(&fe, x, n, codes);
        return QF_OK;
    }
    switch (f->storage_bits) {
    case 8: SLOW_LOOP(uint8_t); break;
    case 16: SLOW_LOOP(uint16_t); break;
    case 32: SLOW_LOOP(uint32_t); break;
    case 64: SLOW_LOOP(uint64_t); break; /* float64, saturating */
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
