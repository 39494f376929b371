/* block_nvfp4.c: NVFP4, blocks of 16 E2M1 elements with an E4M3 scale and
 * an optional FP32 tensor scale (docs/numerics.md#block-scaled-formats).
 *
 * Where rounding happens (each a single rounding from the exact value):
 *   tensor scale  ts = RN32(tensor_amax / (448 * 6))   (1.0 without one)
 *   block scale   s  = round_E4M3((block_amax / 6) / ts) in scale_round,
 *                 clamped to [scale_min, 448] (a monotone rounding commutes
 *                 with a clamp to representable bounds, so clamping before
 *                 or after rounding is the same)
 *   element       q  = RN_E2M1(v / (s * ts)), saturating at +-6
 * s * ts is exact in binary64 (4 and 24 significant bits), and so is the
 * dequantized q * s * ts.  torchao's nvfp4_quantize computes the same
 * quantities in float32 steps (amax / 6, then / ts, then the E4M3 cast;
 * data / fp32(ts * s)): a block whose quotient lands within a float32 ulp
 * of an E4M3 or E2M1 rounding boundary can differ from this one-rounding
 * reference.  The tensor scale is what an NVFP4 GEMM applies in its
 * epilogue, the block scales are applied inside the MMA, so the exact
 * value of an element is q * s * ts.
 */
#include <math.h>
#include <string.h>

#include "_block.h"
#include "qf_block.h"

#define NVFP4_TS_DENOM 2688.0 /* 448 * 6: E4M3 max times E2M1 max */

qf_block_nvfp4_params qf_block_nvfp4_params_default(void)
{
    qf_block_nvfp4_params p;
    memset(&p, 0, sizeof p);
    p.block = 16;
    p.axis = 1;
    p.tensor_scale = 1;
    p.tensor_amax = 0;
    p.scale_round = QF_ROUND_RNE;
    p.scale_min = 0x1p-6; /* torchao: torch.finfo(float8_e4m3fn).tiny */
    p.round = QF_ROUND_RNE;
    p.seed = 0x5eed;
    p.random_bits = 32;
    return p;
}

static int _qf_nvfp4_params_ok(const qf_block_nvfp4_params *p)
{
    const qf_format *sf = qf_format_get(QF_FLOAT8_E4M3FN);
    if (p == NULL || p->block == 0 || (p->axis != 0 && p->axis != 1) || !_qf_block_round_ok(p->round))
        return 0;
    if (p->scale_round == QF_ROUND_STOCHASTIC || !_qf_block_round_ok(p->scale_round))
        return 0;
    if (!(p->tensor_amax >= 0) || !isfinite(p->tensor_amax))
        return 0;
    /* scale_min must be an E4M3 value in [2^-9, 448] so the clamp keeps
     * every scale an E4M3 value */
    if (!(p->scale_min >= 0x1p-9 && p->scale_min <= 448.0))
        return 0;
    return qf_format_decode(sf, qf_format_encode(sf, p->scale_min, QF_ROUND_RNE, 1, 0, 0)) == p->scale_min;
}

/* The float32 tensor scale from the tensor's amax. */
static uint32_t _qf_nvfp4_tensor_scale(double amax)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    _qf_parts t;
    uint32_t c;
    if (amax == 0)
        return 0x3F800000u; /* an all-zero tensor: 1.0, nothing to scale */
    _qf_parts_of_quotient(amax, NVFP4_TS_DENOM, &t);
    c = (uint32_t)_qf_parts_encode(f32, &t, QF_ROUND_RNE, 1, 0, 0);
    return c == 0 ? 1u : c; /* underflow: 2^-149, never 0 */
}

static double _qf_f32(uint32_t c)
{
    float f;
    memcpy(&f, &c, sizeof f);
    return f;
}

qf_status qf_block_nvfp4_quantize(const qf_block_nvfp4_params *p, const double *x, size_t rows, size_t cols,
                                  uint8_t *codes, uint8_t *scale_codes, double *scales,
                                  uint32_t *tensor_scale_code, double *tensor_scale)
{
    const qf_format *ef = qf_format_get(QF_FLOAT4_E2M1FN), *sf = qf_format_get(QF_FLOAT8_E4M3FN);
    size_t ns, si, i, n;
    uint32_t tsc = 0x3F800000u;
    uint64_t smin_code;
    double ts;
    if (!_qf_nvfp4_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->block);
    if (ns != 0 && (x == NULL || codes == NULL || scale_codes == NULL))
        return QF_EINVAL;
    n = rows * cols;
    if (p->tensor_scale) {
        double amax = p->tensor_amax;
        if (amax == 0) /* the largest finite magnitude: NaN and Inf blocks are NaN anyway */
            for (i = 0; i < n; i++) {
                double a = fabs(x[i]);
                if (isfinite(a) && a > amax)
                    amax = a;
            }
        tsc = _qf_nvfp4_tensor_scale(amax);
    }
    ts = _qf_f32(tsc);
    if (tensor_scale_code)
        *tensor_scale_code = tsc;
    if (tensor_scale)
        *tensor_scale = ts;
    smin_code = qf_format_encode(sf, p->scale_min, QF_ROUND_RNE, 1, 0, 0);
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        _qf_parts t;
        double amax, s, d;
        uint64_t sc;
        _qf_block_locate(rows, cols, p->axis, p->block, si, &b);
        amax = _qf_block_amax(x, &b);
        if (isnan(amax)) {
            /* E4M3 NaN: the whole block is NaN */
            _qf_block_set_nan(&b, si, 0x7F, codes, scale_codes, scales);
            continue;
        }
        /* (amax / 6) / ts = amax / (6 ts), 6 ts exact */
        _qf_parts_of_quotient(amax, 6.0 * ts, &t);
        sc = _qf_parts_encode(sf, &t, p->scale_round, 1, 0, 0);
        s = qf_format_decode(sf, sc);
        if (s < p->scale_min) {
            sc = smin_code;
            s = p->scale_min;
        }
        scale_codes[si] = (uint8_t)sc;
        if (scales)
            scales[si] = s;
        d = s * ts; /* exact */
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            uint64_t rnd = p->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(p->seed, idx) : 0;
            _qf_parts_of_quotient(x[idx], d, &t);
            codes[idx] = (uint8_t)_qf_parts_encode(ef, &t, p->round, 1, p->random_bits, rnd);
        }
    }
    return QF_OK;
}

qf_status qf_block_nvfp4_dequantize(const qf_block_nvfp4_params *p, const uint8_t *codes,
                                    const uint8_t *scale_codes, uint32_t tensor_scale_code, size_t rows,
                                    size_t cols, double *out)
{
    const qf_format *ef = qf_format_get(QF_FLOAT4_E2M1FN), *sf = qf_format_get(QF_FLOAT8_E4M3FN);
    size_t ns, si, i;
    double ts = _qf_f32(tensor_scale_code), val[256];
    if (!_qf_nvfp4_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->block);
    if (ns != 0 && (codes == NULL || scale_codes == NULL || out == NULL))
        return QF_EINVAL;
    for (i = 0; i < 256; i++)
        val[i] = qf_format_decode(ef, i); /* the low nibble is the code */
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        /* the scale is unsigned: its sign bit is ignored */
        double s = qf_format_decode(sf, scale_codes[si] & 0x7F);
        _qf_block_locate(rows, cols, p->axis, p->block, si, &b);
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            /* exact: 2 x 4 x 24 significant bits */
            out[idx] = val[codes[idx]] * s * ts;
        }
    }
    return QF_OK;
}
