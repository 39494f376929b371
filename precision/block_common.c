/* block_common.c: exact parts of products and quotients, block layout.
 *
 * Why the parts are exact enough (see _block.h): for a quotient, both
 * operands are first scaled by powers of two into [0.5, 1), which is exact,
 * so q = a'/b' is far from underflow and the remainder r = a' - q b' is a
 * double, computed exactly by one fma (the classic property of a correctly
 * rounded division: Markstein 1990; Boldo and Daumas 2003).  The sign of r
 * tells on which side of q the exact quotient lies; |error| < ulp(q)/2.
 * The product uses the same idea with the exact error fma(a', b', -p).
 * The exact value then lies strictly between two consecutive 64-bit
 * significands (one of them q's, shifted by 11 bits), and a format of at
 * most 52 bits rounds every point of that gap the same way, so the gap is
 * described by (sig, sticky) with sig the lower end.
 */
#include <math.h>
#include <string.h>

#include "_block.h"
#include "qf_block.h"

/* |x| = sig * 2^(exp - 63) exactly, bit 63 of sig set (x finite, nonzero).
 * Bit operations rather than frexp: this runs once per element. */
static void _qf_split(double x, int *exp, uint64_t *sig)
{
    uint64_t u, be, m;
    memcpy(&u, &x, sizeof u);
    be = (u >> 52) & 0x7FF;
    m = u & 0xFFFFFFFFFFFFFull;
    if (be == 0) {
        int lz = __builtin_clzll(m); /* subnormal: normalize */
        *sig = m << lz;
        *exp = -1022 - (lz - 11);
    } else {
        *sig = (m | (1ull << 52)) << 11;
        *exp = (int)be - 1023;
    }
}

/* frexp without the library call: a = m * 2^e, |m| in [0.5, 1). */
static double _qf_frexp(double a, int *e)
{
    uint64_t sig;
    double m;
    _qf_split(a, e, &sig);
    *e += 1;
    m = (double)(sig >> 11) * 0x1p-53; /* exact: 53 bits */
    return signbit(a) ? -m : m;
}

/* q is a nonzero double; dir > 0: the exact value's magnitude exceeds |q|,
 * dir < 0: it is below, 0: exact.  extra: added to the exponent. */
static void _qf_parts_from_double_dir(double q, int dir, int extra, _qf_parts *p)
{
    p->zero = 0;
    p->sign = signbit(q) != 0;
    _qf_split(q, &p->exp, &p->sig);
    p->exp += extra;
    p->sticky = dir != 0;
    if (dir < 0) {
        /* below |q|: the gap just under sig */
        p->sig -= 1;
        if (!(p->sig >> 63)) {
            /* |q| was a power of two: the gap lies in the binade below */
            p->sig = ~0ull;
            p->exp -= 1;
        }
    }
}

void _qf_parts_of_double(double x, int shift, _qf_parts *p)
{
    if (x == 0) {
        p->zero = 1;
        p->sign = signbit(x) != 0;
        p->exp = 0;
        p->sig = 0;
        p->sticky = 0;
        return;
    }
    _qf_parts_from_double_dir(x, 0, shift, p);
}

void _qf_parts_of_quotient(double a, double b, _qf_parts *p)
{
    int ea, eb, dir = 0;
    double ma, mb, q, r;
    if (a == 0) {
        _qf_parts_of_double(0.0, 0, p);
        p->sign = (signbit(a) != 0) != (signbit(b) != 0);
        return;
    }
    ma = _qf_frexp(a, &ea);
    mb = _qf_frexp(b, &eb);
    q = ma / mb; /* |q| in (0.5, 2) */
    r = fma(-q, mb, ma);
    if (r != 0) {
        /* exact = q + r / mb: larger in magnitude when r / mb has q's sign */
        int up = ((r > 0) == (mb > 0)) == (q > 0);
        dir = up ? 1 : -1;
    }
    _qf_parts_from_double_dir(q, dir, ea - eb, p);
}

void _qf_parts_of_product(double a, double b, _qf_parts *p)
{
    int ea, eb, dir = 0;
    double ma, mb, q, r;
    if (a == 0 || b == 0) {
        _qf_parts_of_double(0.0, 0, p);
        p->sign = (signbit(a) != 0) != (signbit(b) != 0);
        return;
    }
    ma = _qf_frexp(a, &ea);
    mb = _qf_frexp(b, &eb);
    q = ma * mb; /* |q| in [0.25, 1) */
    r = fma(ma, mb, -q);
    if (r != 0)
        dir = ((r > 0) == (q > 0)) ? 1 : -1;
    _qf_parts_from_double_dir(q, dir, ea + eb, p);
}

int64_t _qf_parts_round_int(const _qf_parts *p, qf_round round, int random_bits, uint64_t rnd)
{
    /* Rounding to an integer is rounding into binary64 scaled by 2^-1074:
     * there every value below 2^52 is subnormal, the format's step is 1
     * (times 2^-1074), and the magnitude bits of the code are the integer.
     * So the one rounding routine (encode.c), with all its modes, does it. */
    const qf_format *f64 = qf_format_get(QF_FLOAT64);
    uint64_t code;
    int64_t mag;
    if (p->zero)
        return 0;
    if (p->exp >= 40)
        return p->sign ? -((int64_t)1 << 40) : ((int64_t)1 << 40);
    code = qf_format_encode_parts(f64, p->sign, p->exp - 1074, p->sig, p->sticky, round, 0, random_bits, rnd);
    mag = (int64_t)(code & 0x7FFFFFFFFFFFFFFFull);
    return p->sign ? -mag : mag;
}

void _qf_block_locate(size_t rows, size_t cols, int axis, size_t block, size_t si, _qf_blk *b)
{
    if (axis == 1) {
        size_t nb = (cols + block - 1) / block;
        size_t r = si / nb, k = si % nb;
        b->first = r * cols + k * block;
        b->stride = 1;
        b->len = cols - k * block < block ? cols - k * block : block;
    } else {
        size_t k = si / cols, c = si % cols;
        b->first = k * block * cols + c;
        b->stride = cols;
        b->len = rows - k * block < block ? rows - k * block : block;
    }
}

int _qf_block_dims_ok(size_t rows, size_t cols)
{
    return cols == 0 || rows <= (size_t)-1 / cols;
}

size_t qf_block_scale_count(size_t rows, size_t cols, int axis, size_t block)
{
    if (block == 0 || (axis != 0 && axis != 1) || rows == 0 || cols == 0 || !_qf_block_dims_ok(rows, cols))
        return 0;
    if (axis == 1)
        return rows * ((cols + block - 1) / block);
    return ((rows + block - 1) / block) * cols;
}
