/* block_group.c: group-wise integer quantization (int4/int8/uint4/uint8
 * per group of 32/64/128 along one axis, docs/numerics.md#block-scaled-formats).
 *
 * Where rounding happens (each a single rounding from the exact value):
 *   symmetric   s  = RN_sf(amax / qmax), then at least scale_min
 *               q  = clamp(round(v / s), -qmax, qmax)
 *   asymmetric  s  = RN_sf((max - min) / (qmax - qmin)), then at least
 *                    scale_min ([min, max] widened to hold 0 unless
 *                    include_zero is 0)
 *               zp = clamp(qmin - RNE_int(min / s), qmin, qmax)
 *               q  = clamp(round(v / s) + zp, qmin, qmax)
 * (sf = fp16 or bf16, nearest-even, saturating; round = the element mode).
 * The rounded scale s is what quantization divides by, so dequantize,
 * (q - zp) * s, is exact in binary64 and is the value a kernel that reads
 * these codes and scales represents.  The rounding of round(v / s) + zp is
 * done before adding zp, as torch.round(x / s) + zp (torchao
 * quantize_affine): with ties to even, rounding after the shift would
 * differ for odd zero points.
 */
#include <math.h>
#include <string.h>

#include "_block.h"
#include "qf_block.h"

qf_block_group_params qf_block_group_params_default(void)
{
    qf_block_group_params p;
    memset(&p, 0, sizeof p);
    p.elem = QF_INT4;
    p.group = 128;
    p.axis = 1;
    p.symmetric = 1;
    p.include_zero = 1;
    p.scale_format = QF_FLOAT16;
    p.scale_min = 0;
    p.round = QF_ROUND_RNE;
    p.seed = 0x5eed;
    p.random_bits = 32;
    return p;
}

static int _qf_group_params_ok(const qf_block_group_params *p)
{
    if (p == NULL || p->group == 0 || (p->axis != 0 && p->axis != 1) || !_qf_block_round_ok(p->round))
        return 0;
    if (p->elem != QF_INT4 && p->elem != QF_INT8 && p->elem != QF_UINT4 && p->elem != QF_UINT8)
        return 0;
    if (p->symmetric && !qf_format_get(p->elem)->is_signed)
        return 0; /* symmetric needs a signed type: no zero point to move */
    if (p->scale_format != QF_FLOAT16 && p->scale_format != QF_BFLOAT16)
        return 0;
    return p->scale_min >= 0 && isfinite(p->scale_min);
}

/* max - min rounded to odd at 53 bits (max >= min, both finite).  TwoSum
 * gives the exact error; if it is nonzero the result is moved to the odd
 * neighbour on the error's side.  Dividing by k <= 255 and rounding into
 * at most 24 bits then gives the correctly rounded (max - min) / k: every
 * rounding boundary of the target times k has at most 33 significant bits,
 * so it is a double with an even last bit and cannot lie strictly between
 * the exact difference and its odd neighbour (Boldo and Melquiond,
 * "Emulation of FMA and correctly rounded sums: proved algorithms using
 * rounding to odd", 2008). */
static double _qf_diff_odd(double mx, double mn)
{
    double a = mx, b = -mn, s, bb, err;
    uint64_t u;
    if (fabs(a) >= 0x1p1020 || fabs(b) >= 0x1p1020) {
        /* far beyond fp16/bf16 scales, which saturate: no care needed */
        return a + b;
    }
    s = a + b;
    bb = s - a;
    err = (a - (s - bb)) + (b - bb);
    if (err == 0)
        return s;
    memcpy(&u, &s, sizeof u);
    if (!(u & 1))
        s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    return s;
}

qf_status qf_block_group_quantize(const qf_block_group_params *p, const double *x, size_t rows, size_t cols,
                                  uint8_t *codes, uint16_t *scale_codes, double *scales, int16_t *zero_points)
{
    const qf_format *ef, *sf;
    size_t ns, si, i;
    int64_t qmin, qmax;
    uint64_t mask, smin_code;
    double smin;
    if (!_qf_group_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->group);
    if (ns == 0)
        return QF_OK;
    if (x == NULL || codes == NULL || scale_codes == NULL || (!p->symmetric && zero_points == NULL))
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    sf = qf_format_get(p->scale_format);
    mask = ((uint64_t)1 << ef->bits) - 1;
    qmin = ef->int_min;
    qmax = ef->int_max;
    if (p->symmetric)
        qmin = -qmax;
    /* the smallest scale: scale_min rounded up into the scale format */
    smin_code = p->scale_min > 0 ? qf_format_encode(sf, p->scale_min, QF_ROUND_UP, 1, 0, 0)
                                 : qf_format_encode(sf, sf->min_subnormal, QF_ROUND_RNE, 1, 0, 0);
    smin = qf_format_decode(sf, smin_code);
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        _qf_parts t;
        double mn = INFINITY, mx = -INFINITY, s;
        int finite = 1;
        uint64_t sc;
        int64_t zp = 0;
        _qf_block_locate(rows, cols, p->axis, p->group, si, &b);
        for (i = 0; i < b.len; i++) {
            double v = x[b.first + i * b.stride];
            if (!isfinite(v))
                finite = 0;
            if (v < mn)
                mn = v;
            if (v > mx)
                mx = v;
        }
        if (!finite) {
            sc = qf_format_encode(sf, NAN, QF_ROUND_RNE, 0, 0, 0);
            scale_codes[si] = (uint16_t)sc;
            if (scales)
                scales[si] = NAN;
            if (zero_points)
                zero_points[si] = 0;
            for (i = 0; i < b.len; i++)
                codes[b.first + i * b.stride] = 0;
            continue;
        }
        if (p->symmetric) {
            double amax = fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx);
            _qf_parts_of_quotient(amax, (double)qmax, &t);
        } else {
            if (p->include_zero) {
                mn = mn < 0 ? mn : 0;
                mx = mx > 0 ? mx : 0;
            }
            _qf_parts_of_quotient(_qf_diff_odd(mx, mn), (double)(qmax - qmin), &t);
        }
        sc = _qf_parts_encode(sf, &t, QF_ROUND_RNE, 1, 0, 0);
        s = qf_format_decode(sf, sc);
        if (s < smin) {
            sc = smin_code;
            s = smin;
        }
        if (!p->symmetric) {
            /* zero point: nearest-even, as torch.round */
            _qf_parts_of_quotient(mn, s, &t);
            zp = qmin - _qf_parts_round_int(&t, QF_ROUND_RNE, 0, 0);
            zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
        }
        scale_codes[si] = (uint16_t)sc;
        if (scales)
            scales[si] = s;
        if (zero_points)
            zero_points[si] = (int16_t)zp;
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            uint64_t rnd = p->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(p->seed, idx) : 0;
            int64_t q;
            _qf_parts_of_quotient(x[idx], s, &t);
            q = _qf_parts_round_int(&t, p->round, p->random_bits, rnd) + zp;
            q = q < qmin ? qmin : q > qmax ? qmax : q;
            codes[idx] = (uint8_t)((uint64_t)q & mask);
        }
    }
    return QF_OK;
}

qf_status qf_block_group_dequantize(const qf_block_group_params *p, const uint8_t *codes,
                                    const uint16_t *scale_codes, const int16_t *zero_points, size_t rows,
                                    size_t cols, double *out)
{
    const qf_format *ef, *sf;
    size_t ns, si, i;
    double val[256];
    if (!_qf_group_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->group);
    if (ns == 0)
        return QF_OK;
    if (codes == NULL || scale_codes == NULL || out == NULL || (!p->symmetric && zero_points == NULL))
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    sf = qf_format_get(p->scale_format);
    for (i = 0; i < 256; i++)
        val[i] = qf_format_decode(ef, i); /* the low bits are the code */
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        double s = qf_format_decode(sf, scale_codes[si]);
        double zp = p->symmetric ? 0.0 : (double)zero_points[si];
        _qf_block_locate(rows, cols, p->axis, p->group, si, &b);
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            /* exact: an integer below 2^9 times an 11-bit scale */
            out[idx] = (val[codes[idx]] - zp) * s;
        }
    }
    return QF_OK;
}
