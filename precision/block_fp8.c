/* block_fp8.c: FP8 per-tensor and per-channel scaling from amax with a
 * margin (NVIDIA Transformer Engine's recipe; docs/numerics.md#block-scaled-formats).
 *
 * Where rounding happens:
 *   scale      S = RN32((fp8_max / amax) / 2^margin), one rounding from the
 *              exact value (TE rounds fp8_max / amax to float32 and then
 *              divides by 2^margin: the same unless the result is a
 *              float32 subnormal).  pow2: S's float32 fraction cleared
 *              (TE force_pow_2_scales).  amax = max(amax, epsilon) first;
 *              amax 0, NaN or Inf gives S = 1 (TE keeps the previous scale,
 *              initially 1); S overflowing float32 gives FLT_MAX (TE).
 *   element    q = round_fp8(x * S), one rounding from the exact product,
 *              saturating by default; fp32_product rounds x * S to float32
 *              first, as a float32 kernel computes it (a double rounding,
 *              modelled on purpose).
 *   dequantize DIV: RN64(decode(q) / S), correctly rounded binary64 (the
 *              exact quotient is a rational, not always a double);
 *              SCALE_INV: decode(q) * RN32(1 / S), exact, which is what a
 *              GEMM fed TE's scale_inv computes with.
 */
#include <math.h>
#include <string.h>

#include "_block.h"
#include "qf_block.h"

qf_block_fp8_params qf_block_fp8_params_default(void)
{
    qf_block_fp8_params p;
    memset(&p, 0, sizeof p);
    p.elem = QF_FLOAT8_E4M3FN;
    p.granularity = QF_BLOCK_FP8_TENSOR;
    p.margin = 0;
    p.amax_epsilon = 0;
    p.pow2 = 0;
    p.saturate = 1;
    p.fp32_product = 0;
    p.dequant = QF_BLOCK_FP8_DIV;
    p.round = QF_ROUND_RNE;
    p.seed = 0x5eed;
    p.random_bits = 32;
    return p;
}

static int _qf_fp8_params_ok(const qf_block_fp8_params *p)
{
    const qf_format *f;
    if (p == NULL || (unsigned)p->granularity > QF_BLOCK_FP8_COL || !_qf_block_round_ok(p->round))
        return 0;
    if ((unsigned)p->dequant > QF_BLOCK_FP8_SCALE_INV || !(p->amax_epsilon >= 0) ||
        !isfinite(p->amax_epsilon))
        return 0;
    if (p->margin < -1000 || p->margin > 1000)
        return 0;
    f = qf_format_get(p->elem);
    return f != NULL && f->kind == QF_KIND_FLOAT && f->bits <= 8;
}

static double _qf_f32(uint32_t c)
{
    float f;
    memcpy(&f, &c, sizeof f);
    return f;
}

size_t qf_block_fp8_scale_count(const qf_block_fp8_params *p, size_t rows, size_t cols)
{
    if (p == NULL || rows == 0 || cols == 0)
        return 0;
    switch (p->granularity) {
    case QF_BLOCK_FP8_TENSOR: return 1;
    case QF_BLOCK_FP8_ROW: return rows;
    case QF_BLOCK_FP8_COL: return cols;
    }
    return 0;
}

qf_status qf_block_fp8_scale_from_amax(const qf_block_fp8_params *p, double amax, uint32_t *scale_code,
                                       double *scale)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    uint32_t c;
    if (!_qf_fp8_params_ok(p) || scale_code == NULL)
        return QF_EINVAL;
    amax = fabs(amax);
    if (amax < p->amax_epsilon)
        amax = p->amax_epsilon;
    if (amax == 0 || !isfinite(amax)) {
        c = 0x3F800000u;
    } else {
        _qf_parts t;
        _qf_parts_of_quotient(qf_format_get(p->elem)->max, amax, &t);
        t.exp -= p->margin;
        c = (uint32_t)_qf_parts_encode(f32, &t, QF_ROUND_RNE, 1, 0, 0);
        if (c == 0)
            c = 1; /* underflow: 2^-149 rather than a zero scale */
        if (p->pow2) {
            int e;
            frexp(_qf_f32(c), &e);
            c = (uint32_t)qf_format_encode(f32, ldexp(1.0, e - 1), QF_ROUND_RNE, 1, 0, 0);
        }
    }
    *scale_code = c;
    if (scale)
        *scale = _qf_f32(c);
    return QF_OK;
}

uint32_t qf_block_fp8_scale_inv(uint32_t scale_code)
{
    _qf_parts t;
    double s = _qf_f32(scale_code);
    if (!(s > 0) || !isfinite(s))
        return (uint32_t)qf_format_encode(qf_format_get(QF_FLOAT32), 1.0 / s, QF_ROUND_RNE, 0, 0, 0);
    _qf_parts_of_quotient(1.0, s, &t);
    return (uint32_t)_qf_parts_encode(qf_format_get(QF_FLOAT32), &t, QF_ROUND_RNE, 1, 0, 0);
}

/* Which scale element idx (row-major) uses. */
static size_t _qf_fp8_scale_index(const qf_block_fp8_params *p, size_t cols, size_t idx)
{
    switch (p->granularity) {
    case QF_BLOCK_FP8_ROW: return idx / cols;
    case QF_BLOCK_FP8_COL: return idx % cols;
    default: return 0;
    }
}

qf_status qf_block_fp8_scale_encode(const qf_block_fp8_params *p, const double *x, size_t rows, size_t cols,
                                    const uint32_t *scale_codes, uint8_t *codes)
{
    const qf_format *ef, *f32 = qf_format_get(QF_FLOAT32);
    size_t n, i;
    if (!_qf_fp8_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    n = rows * cols;
    if (n == 0)
        return QF_OK;
    if (x == NULL || scale_codes == NULL || codes == NULL)
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    for (i = 0; i < n; i++) {
        double s = _qf_f32(scale_codes[_qf_fp8_scale_index(p, cols, i)]);
        uint64_t rnd = p->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(p->seed, i) : 0;
        double v = x[i];
        _qf_parts t;
        if (!isfinite(v) || !isfinite(s)) {
            codes[i] = (uint8_t)qf_format_encode(ef, v * s, p->round, p->saturate, p->random_bits, rnd);
            continue;
        }
        _qf_parts_of_product(v, s, &t);
        if (p->fp32_product) {
            /* the float32 product a kernel holds, then its conversion */
            double y = _qf_f32((uint32_t)_qf_parts_encode(f32, &t, QF_ROUND_RNE, 0, 0, 0));
            codes[i] = (uint8_t)qf_format_encode(ef, y, p->round, p->saturate, p->random_bits, rnd);
        } else {
            codes[i] = (uint8_t)_qf_parts_encode(ef, &t, p->round, p->saturate, p->random_bits, rnd);
        }
    }
    return QF_OK;
}

qf_status qf_block_fp8_scale_quantize(const qf_block_fp8_params *p, const double *x, size_t rows, size_t cols,
                                      uint8_t *codes, uint32_t *scale_codes, double *scales)
{
    size_t ns, n, s, j;
    if (!_qf_fp8_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_fp8_scale_count(p, rows, cols);
    if (ns == 0)
        return QF_OK;
    if (x == NULL || scale_codes == NULL || codes == NULL)
        return QF_EINVAL;
    n = rows * cols;
    /* amax per scale; a NaN makes it NaN (TE's amax is NaN then, and the
     * scale falls back to 1) */
    for (s = 0; s < ns; s++) {
        double amax = 0;
        size_t len = p->granularity == QF_BLOCK_FP8_TENSOR ? n
                     : p->granularity == QF_BLOCK_FP8_ROW  ? cols
                                                           : rows;
        for (j = 0; j < len; j++) {
            size_t idx = p->granularity == QF_BLOCK_FP8_TENSOR ? j
                         : p->granularity == QF_BLOCK_FP8_ROW  ? s * cols + j
                                                               : j * cols + s;
            double a = fabs(x[idx]);
            if (isnan(a)) {
                amax = a;
                break;
            }
            if (a > amax)
                amax = a;
        }
        qf_block_fp8_scale_from_amax(p, amax, &scale_codes[s], scales ? &scales[s] : NULL);
    }
    return qf_block_fp8_scale_encode(p, x, rows, cols, scale_codes, codes);
}

qf_status qf_block_fp8_scale_dequantize(const qf_block_fp8_params *p, const uint8_t *codes,
                                        const uint32_t *scale_codes, size_t rows, size_t cols, double *out)
{
    const qf_format *ef;
    size_t n, i;
    uint32_t last_sc = 0;
    double inv = _qf_f32(qf_block_fp8_scale_inv(0)), val[256];
    if (!_qf_fp8_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    n = rows * cols;
    if (n == 0)
        return QF_OK;
    if (codes == NULL || scale_codes == NULL || out == NULL)
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    for (i = 0; i < 256; i++)
        val[i] = qf_format_decode(ef, i);
    for (i = 0; i < n; i++) {
        uint32_t sc = scale_codes[_qf_fp8_scale_index(p, cols, i)];
        double v = val[codes[i]];
        if (p->dequant == QF_BLOCK_FP8_SCALE_INV) {
            if (sc != last_sc) {
                last_sc = sc;
                inv = _qf_f32(qf_block_fp8_scale_inv(sc));
            }
            out[i] = v * inv; /* exact: 4 x 24 bits */
        } else
            out[i] = v / _qf_f32(sc); /* one correctly rounded binary64 division */
    }
    return QF_OK;
}
