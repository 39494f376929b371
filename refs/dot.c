/* dot.c: the exact accumulator (a small superaccumulator) and qf_dot.
 *
 * Representation (Neal 2015, "small superaccumulator"): value =
 * sum_i chunk[i] * 2^(32 i + QF_DOT_LSB).  Every addition adds one signed
 * 32-bit digit per chunk, so a chunk stays below 2^62 in magnitude for
 * QF_DOT_CARRY_EVERY additions; then one carry pass brings every chunk but
 * the top one back to [0, 2^32).  The top chunk carries the sign.
 *
 * Why the range: a product of two binary64 values lies in
 * [2^-2148, 2^2048), alpha times such a sum in [2^-3222, 2^3134) for up to
 * 2^62 terms; 2^-3264 .. 2^3264 covers it with room for carries.
 */
#include <math.h>
#include <string.h>

#include "qf_dot.h"

#if !defined(__SIZEOF_INT128__)
#error "qualify's exact dot engine needs a compiler with unsigned __int128 (GCC, Clang on 64-bit targets)"
#endif
__extension__ typedef unsigned __int128 qf_u128;

enum { SP_NAN = 1u, SP_PINF = 2u, SP_NINF = 4u };

#define QF_DOT_CARRY_EVERY (1 << 29)
#define DIGIT_MASK         0xFFFFFFFFull

/* ---- Small helpers ------------------------------------------------------ */

static inline uint64_t d2u(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double u2d(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A finite nonzero double as m * 2^e with m an integer < 2^53. */
static inline void split_double(double x, uint64_t *m, int *e)
{
    uint64_t u = d2u(x), be = (u >> 52) & 0x7FF, f = u & 0xFFFFFFFFFFFFFull;
    if (be == 0) {
        *m = f;
        *e = -1074;
    } else {
        *m = f | (1ull << 52);
        *e = (int)be - 1075;
    }
}

static inline int bit_length(qf_u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
    return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

static void note_special(qf_dot_acc *acc, double x)
{
    if (isnan(x))
        acc->_special |= SP_NAN;
    else
        acc->_special |= x > 0 ? SP_PINF : SP_NINF;
}

/* Carry pass: every chunk but the top one into [0, 2^32). */
static void normalize(qf_dot_acc *acc)
{
    int i, lo = acc->_lo, hi = acc->_hi;
    int64_t *c = acc->_chunk;
    acc->_pending = 0;
    if (lo > hi)
        return;
    for (i = lo; i < hi; i++) {
        int64_t carry = c[i] >> 32; /* arithmetic shift: floor division */
        c[i] = (int64_t)((uint64_t)c[i] & DIGIT_MASK);
        c[i + 1] += carry;
    }
    /* the top chunk may exceed 32 bits: move its excess up */
    while (hi + 1 < QF_DOT_CHUNKS && (c[hi] >= (int64_t)1 << 32 || c[hi] < -((int64_t)1 << 32))) {
        int64_t carry = c[hi] >> 32;
        c[hi] = (int64_t)((uint64_t)c[hi] & DIGIT_MASK);
        c[++hi] += carry;
    }
    while (lo <= hi && c[lo] == 0)
        lo++;
    while (hi >= lo && c[hi] == 0)
        hi--;
    if (lo > hi) {
        lo = QF_DOT_CHUNKS;
        hi = -1;
    }
    acc->_lo = lo;
    acc->_hi = hi;
}

/* acc += (-1)^neg * v * 2^(pos + QF_DOT_LSB), v < 2^128, 0 <= pos. */
static inline void add_at(qf_dot_acc *acc, int neg, qf_u128 v, int pos)
{
    uint64_t lo64 = (uint64_t)v, hi64 = (uint64_t)(v >> 64), w0, w1, w2;
    uint64_t d[5];
    int idx = pos >> 5, sh = pos & 31, k, first, last;
    int64_t *c = acc->_chunk;

    if (acc->_pending >= QF_DOT_CARRY_EVERY)
        normalize(acc);
    acc->_pending++;
    w0 = lo64 << sh;
    w1 = sh ? (lo64 >> (64 - sh)) | (hi64 << sh) : hi64;
    w2 = sh ? hi64 >> (64 - sh) : 0;
    d[0] = w0 & DIGIT_MASK;
    d[1] = w0 >> 32;
    d[2] = w1 & DIGIT_MASK;
    d[3] = w1 >> 32;
    d[4] = w2;
    first = 0;
    while (first < 5 && d[first] == 0)
        first++;
    if (first == 5)
        return;
    last = 4;
    while (d[last] == 0)
        last--;
    if (neg)
        for (k = first; k <= last; k++)
            c[idx + k] -= (int64_t)d[k];
    else
        for (k = first; k <= last; k++)
            c[idx + k] += (int64_t)d[k];
    if (idx + first < acc->_lo)
        acc->_lo = idx + first;
    if (idx + last > acc->_hi)
        acc->_hi = idx + last;
}

/* ---- Public: building the sum --------------------------------------------- */

void qf_dot_acc_init(qf_dot_acc *acc)
{
    memset(acc, 0, sizeof *acc);
    acc->_lo = QF_DOT_CHUNKS;
    acc->_hi = -1;
}

void qf_dot_acc_clear(qf_dot_acc *acc)
{
    if (acc->_lo <= acc->_hi)
        memset(&acc->_chunk[acc->_lo], 0, (size_t)(acc->_hi - acc->_lo + 1) * sizeof(int64_t));
    acc->_lo = QF_DOT_CHUNKS;
    acc->_hi = -1;
    acc->_pending = 0;
    acc->_special = 0;
}

static inline void add_signed_d(qf_dot_acc *acc, double x, int negate)
{
    uint64_t m;
    int e;
    if (!isfinite(x)) {
        note_special(acc, negate ? -x : x);
        return;
    }
    if (x == 0)
        return;
    split_double(x, &m, &e);
    add_at(acc, signbit(x) ? !negate : negate, m, e - QF_DOT_LSB);
}

void qf_dot_acc_add_d(qf_dot_acc *acc, double x)
{
    add_signed_d(acc, x, 0);
}

void qf_dot_acc_sub_d(qf_dot_acc *acc, double x)
{
    add_signed_d(acc, x, 1);
}

void qf_dot_acc_add_product(qf_dot_acc *acc, double a, double b)
{
    uint64_t ma, mb;
    int ea, eb;
    if (!isfinite(a) || !isfinite(b)) {
        note_special(acc, a * b); /* IEEE: 0 * Inf is NaN */
        return;
    }
    if (a == 0 || b == 0)
        return;
    split_double(a, &ma, &ea);
    split_double(b, &mb, &eb);
    add_at(acc, signbit(a) != signbit(b), (qf_u128)ma * mb, ea + eb - QF_DOT_LSB);
}

static void add_acc_signed(qf_dot_acc *acc, const qf_dot_acc *x, int negate)
{
    int i;
    if (x == acc) {
        qf_dot_acc t = *x;
        add_acc_signed(acc, &t, negate);
        return;
    }
    acc->_special |= negate ? ((x->_special & SP_NAN) | ((x->_special & SP_PINF) ? SP_NINF : 0u) |
                               ((x->_special & SP_NINF) ? SP_PINF : 0u))
                            : x->_special;
    if (x->_lo > x->_hi)
        return;
    normalize(acc); /* chunks below 2^32: room for x's (below 2^62) */
    for (i = x->_lo; i <= x->_hi; i++)
        acc->_chunk[i] += negate ? -x->_chunk[i] : x->_chunk[i];
    if (x->_lo < acc->_lo)
        acc->_lo = x->_lo;
    if (x->_hi > acc->_hi)
        acc->_hi = x->_hi;
    acc->_pending = QF_DOT_CARRY_EVERY; /* carry pass before the next addition */
}

void qf_dot_acc_add_acc(qf_dot_acc *acc, const qf_dot_acc *x)
{
    add_acc_signed(acc, x, 0);
}

void qf_dot_acc_sub_acc(qf_dot_acc *acc, const qf_dot_acc *x)
{
    add_acc_signed(acc, x, 1);
}

/* ---- Reading the sum ------------------------------------------------------- */

/* Magnitude digits of the finite part, all in [0, 2^32): t[0 .. *top]
 * correspond to chunks lo .. lo + *top.  Returns the sign (1 negative) and
 * sets *top = -1 for zero. */
static int magnitude(const qf_dot_acc *acc, uint64_t *t, int *lo_out, int *top)
{
    int64_t w[QF_DOT_CHUNKS + 2];
    int lo = acc->_lo, hi = acc->_hi, n, i, neg;
    int64_t carry;

    *lo_out = lo;
    *top = -1;
    if (lo > hi)
        return 0;
    n = hi - lo + 1;
    for (i = 0; i < n; i++)
        w[i] = acc->_chunk[lo + i];
    w[n] = 0;
    w[n + 1] = 0;
    for (i = 0; i <= n; i++) {
        carry = w[i] >> 32;
        w[i] = (int64_t)((uint64_t)w[i] & DIGIT_MASK);
        w[i + 1] += carry;
    }
    /* value = sum w[i] 2^(32 i) + w[n+1] 2^(32 (n+1)); w[i] in [0, 2^32)
     * for i <= n, and w[n+1] is 0 or -1 (the chunks are far below 2^63) */
    neg = w[n + 1] < 0;
    if (neg) {
        /* magnitude = 2^(32 (n+1)) * (-w[n+1]) - sum w[i] 2^(32 i): negate
         * the digits and carry again */
        for (i = 0; i <= n + 1; i++)
            w[i] = -w[i];
        for (i = 0; i <= n; i++) {
            carry = w[i] >> 32;
            w[i] = (int64_t)((uint64_t)w[i] & DIGIT_MASK);
            w[i + 1] += carry;
        }
    }
    for (i = 0; i <= n; i++)
        t[i] = (uint64_t)w[i];
    for (i = n; i >= 0 && t[i] == 0; i--)
        ;
    *top = i;
    return i < 0 ? 0 : neg;
}

qf_dot_class qf_dot_acc_parts(const qf_dot_acc *acc, int *sign, int *exp, uint64_t *sig, int *sticky)
{
    uint64_t t[QF_DOT_CHUNKS + 2];
    int lo, top, neg, b, i, st;
    qf_u128 w;

    *sign = 0;
    *exp = 0;
    *sig = 0;
    *sticky = 0;
    if (acc->_special) {
        if ((acc->_special & SP_NAN) || (acc->_special & (SP_PINF | SP_NINF)) == (SP_PINF | SP_NINF))
            return QF_DOT_NAN;
        *sign = (acc->_special & SP_NINF) != 0;
        return *sign ? QF_DOT_NEG_INF : QF_DOT_POS_INF;
    }
    neg = magnitude(acc, t, &lo, &top);
    if (top < 0)
        return QF_DOT_ZERO;
    b = 31 - __builtin_clzll(t[top] << 32 | 1); /* leading bit inside digit top */
    w = ((qf_u128)t[top] << 64) | ((qf_u128)(top >= 1 ? t[top - 1] : 0) << 32) | (top >= 2 ? t[top - 2] : 0);
    /* leading bit of w at 64 + b; keep 64 bits */
    *sig = (uint64_t)(w >> (b + 1));
    st = (w & (((qf_u128)1 << (b + 1)) - 1)) != 0;
    for (i = 0; !st && i < top - 2; i++)
        st = t[i] != 0;
    *sticky = st;
    *sign = neg;
    *exp = 32 * (lo + top) + b + QF_DOT_LSB;
    return QF_DOT_FINITE;
}

int qf_dot_acc_sign(const qf_dot_acc *acc)
{
    int sign, exp, sticky;
    uint64_t sig;
    switch (qf_dot_acc_parts(acc, &sign, &exp, &sig, &sticky)) {
    case QF_DOT_ZERO:
    case QF_DOT_NAN: return 0;
    default: return sign ? -1 : 1;
    }
}

uint64_t qf_dot_acc_round(const qf_dot_acc *acc, const qf_format *f, qf_round round, int saturate,
                          int random_bits, uint64_t rnd_word)
{
    int sign, exp, sticky;
    uint64_t sig;
    switch (qf_dot_acc_parts(acc, &sign, &exp, &sig, &sticky)) {
    case QF_DOT_NAN: return qf_format_encode(f, NAN, round, saturate, random_bits, rnd_word);
    case QF_DOT_POS_INF: return qf_format_encode(f, INFINITY, round, saturate, random_bits, rnd_word);
    case QF_DOT_NEG_INF: return qf_format_encode(f, -INFINITY, round, saturate, random_bits, rnd_word);
    case QF_DOT_ZERO:
        /* IEEE 754 6.3: an exact zero sum is +0, -0 when rounding down */
        return qf_format_encode_parts(f, round == QF_ROUND_DOWN, 0, 0, 0, round, saturate, random_bits,
                                      rnd_word);
    case QF_DOT_FINITE: break;
    }
    return qf_format_encode_parts(f, sign, exp, sig, sticky, round, saturate, random_bits, rnd_word);
}

double qf_dot_acc_get_d(const qf_dot_acc *acc, qf_round round)
{
    return u2d(qf_dot_acc_round(acc, qf_format_get(QF_FLOAT64), round, 0, 32, 0));
}

double qf_dot_acc_error(qf_dot_acc *acc, double candidate)
{
    double e;
    if (acc->_special || !isfinite(candidate)) {
        int sign, exp, sticky;
        uint64_t sig;
        qf_dot_class k = qf_dot_acc_parts(acc, &sign, &exp, &sig, &sticky);
        double ex = k == QF_DOT_NAN       ? NAN
                    : k == QF_DOT_POS_INF ? INFINITY
                    : k == QF_DOT_NEG_INF ? -INFINITY
                                          : 0.0; /* finite: only its infinity matters */
        return candidate - ex;
    }
    qf_dot_acc_sub_d(acc, candidate);
    e = qf_dot_acc_get_d(acc, QF_ROUND_RNE); /* exact - candidate */
    qf_dot_acc_add_d(acc, candidate);
    return e == 0 ? 0.0 : -e;
}

/* ---- Scaling ------------------------------------------------------------------ */

qf_status qf_dot_acc_scale(qf_dot_acc *acc, double s)
{
    uint64_t t[QF_DOT_CHUNKS + 2], ms;
    qf_dot_acc r;
    int lo, top, neg, es, i;

    if (isnan(s)) {
        acc->_special |= SP_NAN;
        return QF_OK;
    }
    if (acc->_special) {
        unsigned sp = acc->_special;
        if (s == 0 && (sp & (SP_PINF | SP_NINF)))
            sp |= SP_NAN;
        else if (s < 0)
            sp = (sp & SP_NAN) | ((sp & SP_PINF) ? SP_NINF : 0u) | ((sp & SP_NINF) ? SP_PINF : 0u);
        qf_dot_acc_clear(acc);
        acc->_special = sp;
        return QF_OK;
    }
    neg = magnitude(acc, t, &lo, &top);
    if (isinf(s)) {
        if (top < 0) {
            acc->_special = SP_NAN; /* 0 * Inf */
        } else {
            qf_dot_acc_clear(acc);
            acc->_special = (neg != (s < 0)) ? SP_NINF : SP_PINF;
        }
        return QF_OK;
    }
    if (s == 0 || top < 0) {
        qf_dot_acc_clear(acc);
        return QF_OK;
    }
    split_double(s, &ms, &es);
    neg ^= s < 0;
    qf_dot_acc_init(&r);
    for (i = 0; i <= top; i++) {
        qf_u128 v;
        int pos;
        if (t[i] == 0)
            continue;
        v = (qf_u128)t[i] * ms; /* below 2^85 */
        pos = 32 * (lo + i) + es;
        if (pos < 0) {
            if (-pos >= 128 || (v & (((qf_u128)1 << -pos) - 1)) != 0)
                return QF_EINVAL; /* bits below 2^QF_DOT_LSB */
            v >>= -pos;
            pos = 0;
        }
        /* the top chunk stays free for carries */
        if (pos + bit_length(v) > 32 * (QF_DOT_CHUNKS - 1))
            return QF_EINVAL;
        add_at(&r, neg, v, pos);
    }
    r._special = 0;
    *acc = r;
    return QF_OK;
}

/* ---- One dot product --------------------------------------------------------- */

qf_status qf_dot(size_t n, const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy,
                 const qf_format *fx, const qf_format *fy, const qf_dot_round *r, uint64_t *code,
                 double *value, double *abs_up)
{
    qf_dot_acc acc, abs;
    const qf_format *out;
    qf_round round = r ? r->round : QF_ROUND_RNE;
    uint64_t c;

    if (n > 0 && (!x || !y))
        return QF_EINVAL;
    out = r && r->out ? r->out : qf_format_get(QF_FLOAT64);
    if (!qf_round_valid(out, round))
        return QF_EFORMAT;
    if (round == QF_ROUND_STOCHASTIC && (!r || r->random_bits < 1 || r->random_bits > 32))
        return QF_EINVAL;
    qf_dot_acc_init(&acc);
    qf_dot_acc_init(&abs);
    qf_dot_acc_add_dot(&acc, abs_up ? &abs : NULL, n, x, incx, y, incy, fx, fy);
    c = qf_dot_acc_round(&acc, out, round, r ? r->saturate : 0, r ? r->random_bits : 32, r ? r->rnd_word : 0);
    if (code)
        *code = c;
    if (value)
        *value = qf_format_decode(out, c);
    if (abs_up)
        *abs_up = qf_dot_acc_get_d(&abs, QF_ROUND_UP);
    return QF_OK;
}
