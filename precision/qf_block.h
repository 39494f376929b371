/* qf_block.h: block-scaled formats: quantize, dequantize, scales exposed.
 *
 * Four families (docs/block.md, facts in docs/numerics.md#block-scaled-formats):
 *   MX     OCP Microscaling v1.0: blocks of 32 elements (e4m3, e5m2, e2m3,
 *          e3m2, e2m1, MXINT8) sharing one E8M0 scale; the scale rule
 *          (FLOOR, CEIL, EVEN, RCEIL) is a parameter.
 *   NVFP4  blocks of 16 E2M1 elements sharing an unsigned E4M3 scale, with
 *          an optional FP32 per-tensor scale; the rounding of the block
 *          scale is a parameter.
 *   group  int4/int8/uint4/uint8 per group of 32/64/128 along a chosen
 *          axis, symmetric or with a zero point, fp16/bf16 scales.
 *   fp8    FP8 per-tensor, per-row or per-column scaling from amax with a
 *          margin (Transformer-Engine style), float32 scales.
 *
 * Layout.  Every quantizer reads a row-major rows x cols matrix of binary64
 * values (a vector is rows = 1).  Block-scaled families cut blocks along
 * one axis: axis 1 cuts each row into blocks of consecutive columns (the
 * contiguous axis; K of an M x K activation, or of an N x K weight), axis 0
 * cuts each column into blocks of consecutive rows (K of a K x N matrix).
 * The last block of a row (column) is shorter when the block size does not
 * divide cols (rows): a tail block, scaled from its own elements.
 * Codes come back unpacked, one element per byte, in the layout of x, as
 * the qf_format code of the element format (two's complement in the low
 * bits for the integer formats); pack two 4-bit codes per byte with
 * qf_format_pack4 (element 2i in the low nibble).  Scales form a row-major
 * matrix of shape rows x nb (axis 1, nb = ceil(cols / block)) or
 * nb x cols (axis 0, nb = ceil(rows / block)); see qf_block_scale_count.
 * Each quantizer returns the scale codes and, when the pointer is not
 * NULL, their decoded values.
 *
 * Exactness.  Every rounding happens once, from the exact value, through
 * qf_format_encode_parts (docs/block.md lists where).  Dequantize returns
 * the exact binary64 value of each quantized element (element value times
 * its scales), except fp8 scaling in its default division mode, where
 * decode / scale is a rational: that one is rounded once to binary64.
 *
 * All functions are reentrant; none allocates.
 */
#ifndef QF_BLOCK_H
#define QF_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of scales of a rows x cols matrix cut into blocks of `block`
 * along `axis` (0 when rows or cols is 0, or the arguments are invalid). */
size_t qf_block_scale_count(size_t rows, size_t cols, int axis, size_t block);

/* ---- MX (OCP Microscaling v1.0) ------------------------------------------ */

/* How a block's E8M0 exponent X (scale 2^X) follows from its largest
 * magnitude amax; emax_elem and max_elem are the element format's
 * (qf_block_mx_emax, qf_block_mx_elem_max). */
typedef enum qf_block_mx_rule {
    QF_BLOCK_MX_FLOOR = 0, /* floor(log2 amax) - emax_elem (OCP MX v1.0 6.3) */
    QF_BLOCK_MX_CEIL,      /* ceil(log2(amax / max_elem)), exact */
    QF_BLOCK_MX_EVEN,      /* amax's significand rounded to the element's
                            * fraction bits, half up, then FLOOR (torchao) */
    QF_BLOCK_MX_RCEIL,     /* float32(amax / max_elem) rounded up to a power
                            * of two (cvt.rp.satfinite.ue8m0; cuBLAS) */
    QF_BLOCK_MX_RULE_COUNT
} qf_block_mx_rule;

typedef struct qf_block_mx_params {
    /* QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_FLOAT6_E2M3FN, QF_FLOAT6_E3M2FN,
     * QF_FLOAT4_E2M1FN, or QF_INT8 for MXINT8 (code k means k * 2^-6) */
    qf_format_id elem;
    qf_block_mx_rule rule;
    size_t block;    /* elements per block; the standard is 32 */
    int axis;        /* 1: blocks along rows (contiguous), 0: along columns */
    qf_round round;  /* element rounding: rne, rna, rtz, up, down, stochastic */
    uint64_t seed;   /* stochastic: element i (row-major) draws qf_rng_u64(seed, i) */
    int random_bits; /* stochastic: bits of randomness, 1..32 */
} qf_block_mx_params;

/* e4m3, FLOOR, 32, axis 1, nearest-even. */
qf_block_mx_params qf_block_mx_params_default(void);

/* "floor", "ceil", "even", "rceil"; QF_EPARSE if unknown. */
const char *qf_block_mx_rule_name(qf_block_mx_rule r);
qf_status qf_block_mx_rule_lookup(const char *name, qf_block_mx_rule *out);

/* emax_elem (8, 15, 2, 4, 2, 0 for MXINT8) and the largest element value
 * (448, 57344, 7.5, 28, 6, 127/64); -1000 and NaN for a format MX lacks. */
int qf_block_mx_emax(qf_format_id elem);
double qf_block_mx_elem_max(qf_format_id elem);

/* The E8M0 scale code of one block whose largest magnitude is amax:
 * 0xFF for a NaN or infinite amax, 0x00 (2^-127) for amax == 0, otherwise
 * X + 127 with X from the rule, clamped to [-127, 127]. */
qf_status qf_block_mx_scale(const qf_block_mx_params *p, double amax, uint8_t *scale_code);

/* codes: rows*cols bytes; scale_codes: qf_block_scale_count bytes;
 * scales: the decoded scales 2^X (NaN for 0xFF), or NULL.  A block with a
 * NaN or an infinity gets scale 0xFF and element codes 0. */
qf_status qf_block_mx_quantize(const qf_block_mx_params *p, const double *x, size_t rows, size_t cols,
                               uint8_t *codes, uint8_t *scale_codes, double *scales);
/* out[i] = element value * 2^X exactly; NaN for every element of a 0xFF
 * block and for NaN element codes. */
qf_status qf_block_mx_dequantize(const qf_block_mx_params *p, const uint8_t *codes,
                                 const uint8_t *scale_codes, size_t rows, size_t cols, double *out);

/* ---- NVFP4 ------------------------------------------------------------------ */

typedef struct qf_block_nvfp4_params {
    size_t block;         /* elements per block; 16 */
    int axis;             /* as for MX */
    int tensor_scale;     /* 1: two-level, FP32 tensor scale = amax / (448 * 6); 0: none (1.0) */
    double tensor_amax;   /* > 0: the amax of the tensor scale (calibrated or global);
                           * 0: the largest finite magnitude of x */
    qf_round scale_round; /* block scale into E4M3: rne (torchao) or up; rna, rtz, down allowed */
    double scale_min;     /* lower clamp of the block scale, an E4M3 value in [2^-9, 448]; 2^-6 */
    qf_round round;       /* element rounding into E2M1 */
    uint64_t seed;
    int random_bits;
} qf_block_nvfp4_params;

/* 16, axis 1, tensor scale on, block scale nearest-even, scale_min 2^-6,
 * elements nearest-even. */
qf_block_nvfp4_params qf_block_nvfp4_params_default(void);

/* codes: rows*cols E2M1 codes; scale_codes: E4M3 codes (sign bit 0; 0x7F,
 * the E4M3 NaN, for a block holding a NaN or an infinity, whose element
 * codes are 0); scales: decoded block scales or NULL; tensor_scale_code:
 * the float32 bits of the tensor scale (0x3F800000, 1.0, without one);
 * tensor_scale: its value, or NULL. */
qf_status qf_block_nvfp4_quantize(const qf_block_nvfp4_params *p, const double *x, size_t rows, size_t cols,
                                  uint8_t *codes, uint8_t *scale_codes, double *scales,
                                  uint32_t *tensor_scale_code, double *tensor_scale);
/* out[i] = e2m1 value * block scale * tensor scale, exactly. */
qf_status qf_block_nvfp4_dequantize(const qf_block_nvfp4_params *p, const uint8_t *codes,
                                    const uint8_t *scale_codes, uint32_t tensor_scale_code, size_t rows,
                                    size_t cols, double *out);

/* ---- Group-wise integers ---------------------------------------------------- */

typedef struct qf_block_group_params {
    qf_format_id elem;         /* QF_INT4, QF_INT8, QF_UINT4, QF_UINT8 */
    size_t group;              /* elements per group: 32, 64, 128 (any >= 1 accepted) */
    int axis;                  /* as for MX */
    int symmetric;             /* 1: scale = amax / qmax, no zero point (signed only);
                                * 0: scale = (max - min) / (qmax - qmin), zero point */
    int include_zero;          /* asymmetric: widen [min, max] to hold 0 (torchao, GPTQ); 1 */
    qf_format_id scale_format; /* QF_FLOAT16 or QF_BFLOAT16 */
    double scale_min;          /* the scale is at least this (rounded up into the
                                * scale format); 0: the format's smallest positive */
    qf_round round;            /* element rounding to an integer */
    uint64_t seed;
    int random_bits;
} qf_block_group_params;

/* int4, 128, axis 1, symmetric, fp16 scales, scale_min 0, nearest-even. */
qf_block_group_params qf_block_group_params_default(void);

/* codes: rows*cols element codes (int4 -1 is 0x0F); scale_codes: fp16 or
 * bf16 codes of the scales; scales: decoded or NULL; zero_points: the integer zero points (asymmetric;
 * may be NULL when symmetric, else filled with 0).  A group holding a NaN
 * or an infinity gets the scale format's NaN and codes 0, zero point 0. */
qf_status qf_block_group_quantize(const qf_block_group_params *p, const double *x, size_t rows, size_t cols,
                                  uint8_t *codes, uint16_t *scale_codes, double *scales,
                                  int16_t *zero_points);
/* out[i] = (q - zero_point) * scale exactly, q the element's integer. */
qf_status qf_block_group_dequantize(const qf_block_group_params *p, const uint8_t *codes,
                                    const uint16_t *scale_codes, const int16_t *zero_points, size_t rows,
                                    size_t cols, double *out);
/* ---- FP8 per-tensor / per-channel scaling ------------------------------------ */

typedef enum qf_block_fp8_granularity {
    QF_BLOCK_FP8_TENSOR = 0, /* one scale */
    QF_BLOCK_FP8_ROW,        /* one scale per row (per token, per output channel of N x K) */
    QF_BLOCK_FP8_COL         /* one scale per column */
} qf_block_fp8_granularity;

typedef enum qf_block_fp8_dequant {
    QF_BLOCK_FP8_DIV = 0,  /* decode(code) / scale, rounded once to binary64 */
    QF_BLOCK_FP8_SCALE_INV /* decode(code) * float32(1 / scale), exact (TE scale_inv) */
} qf_block_fp8_dequant;

typedef struct qf_block_fp8_params {
    qf_format_id elem; /* a float format of at most 8 bits: e4m3fn (default), e5m2, fnuz, ... */
    qf_block_fp8_granularity granularity;
    int margin;          /* scale = (fp8_max / amax) / 2^margin; 0 */
    double amax_epsilon; /* amax = max(amax, epsilon) first; 0 */
    int pow2;            /* 1: the float32 scale rounded down to a power of two (TE force_pow_2_scales) */
    int saturate;        /* 1: overflow and +-Inf give +-max (TE, OCP saturating mode) */
    int fp32_product;    /* 1: round x * scale to float32 first, as a float32 kernel does */
    qf_block_fp8_dequant dequant;
    qf_round round;
    uint64_t seed;
    int random_bits;
} qf_block_fp8_params;

/* e4m3fn, per tensor, margin 0, epsilon 0, no pow2, saturating, one
 * rounding of x * scale, dequantize by division, nearest-even. */
qf_block_fp8_params qf_block_fp8_params_default(void);

/* Number of scales: 1, rows or cols by the granularity. */
size_t qf_block_fp8_scale_count(const qf_block_fp8_params *p, size_t rows, size_t cols);

/* The float32 scale from an amax: (fp8_max / amax) / 2^margin rounded once
 * to nearest-even float32 (saturating at FLT_MAX; 2^-149 if it would
 * underflow to 0); 1.0 when amax is 0, NaN or infinite (TE's fallback). */
qf_status qf_block_fp8_scale_from_amax(const qf_block_fp8_params *p, double amax, uint32_t *scale_code,
                                       double *scale);
/* float32(1 / scale), rounded once (nearest-even): TE's scale_inv. */
uint32_t qf_block_fp8_scale_inv(uint32_t scale_code);

/* Scales from the amax of each tensor/row/column, then encode. */
qf_status qf_block_fp8_scale_quantize(const qf_block_fp8_params *p, const double *x, size_t rows, size_t cols,
                                      uint8_t *codes, uint32_t *scale_codes, double *scales);
/* Encode with given scales (delayed scaling: scales from an amax history). */
qf_status qf_block_fp8_scale_encode(const qf_block_fp8_params *p, const double *x, size_t rows, size_t cols,
                                    const uint32_t *scale_codes, uint8_t *codes);
qf_status qf_block_fp8_scale_dequantize(const qf_block_fp8_params *p, const uint8_t *codes,
                                        const uint32_t *scale_codes, size_t rows, size_t cols, double *out);

#ifdef __cplusplus
}
#endif

#endif /* QF_BLOCK_H */
