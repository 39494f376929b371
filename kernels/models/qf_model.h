/* qf_model.h: CPU models of matrix-unit (tensor core, matrix core)
 * arithmetic, and the presets that reproduce published findings.
 *
 * One parametrized block-FMA model (Fasi, Higham, Mikaitis and Pranesh,
 * "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021; Khattak and
 * Mikaitis, "Accurate models of NVIDIA tensor cores"; docs/numerics.md#matrix-units):
 *   - products of the (low-precision) inputs are exact (optionally
 *     truncated to product_frac_bits fraction bits: MI300);
 *   - QF_MODEL_SUM_BLOCK: a block of `block` products plus the running
 *     accumulator are aligned to the largest exponent E among them; each
 *     term keeps align_frac_bits fraction bits below 2^E, the bits below
 *     are dropped as `align` says (truncated toward zero: NVIDIA, no
 *     guard bits, no sticky; floored: AMD's "rounds down"; or nearest);
 *     the aligned integers are summed exactly; the sum is normalized and
 *     rounded once (acc_round) to an accumulator of acc_frac_bits fraction
 *     bits and float32's exponent range;
 *   - QF_MODEL_SUM_TREE (MI250X): the block's products are summed by a
 *     balanced binary tree of float32 additions (acc_round), then added to
 *     the accumulator with one more float32 addition;
 *   - QF_MODEL_SUM_ODD_EVEN (MI300 fp8): a group of `block` products is
 *     two BLOCK steps of block / 2: the even-indexed products with the
 *     accumulator, then the odd-indexed ones;
 *   - flush_in / flush_out: subnormal inputs (in their own format) and
 *     subnormal accumulator results are replaced by zero (MI250X);
 *   - promotion (promote_interval > 0): every promote_interval elements of
 *     K the partial sum is added into a float32 accumulator with one
 *     nearest-even float32 addition and the matrix-unit partial restarts
 *     at zero (DeepSeek-V3 technical report, section 3.3.2: FP8 GEMM on
 *     Hopper, promotion to CUDA cores every 128 elements).  Blocks never
 *     straddle a promotion boundary.
 * The model is computed with exact integer arithmetic (every aligned sum is
 * an int64; the rounding is qf_format_encode_parts), so its results are
 * deterministic and exact to its own definition.  docs/models.md lists the
 * presets, their sources and what is assumed where the sources are silent.
 */
#ifndef QF_MODEL_H
#define QF_MODEL_H

#include <stddef.h>

#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What alignment does with the bits below the kept ones. */
typedef enum qf_model_align {
    QF_MODEL_ALIGN_RTZ = 0, /* truncation of the magnitude (sign-magnitude shifter) */
    QF_MODEL_ALIGN_FLOOR,   /* toward -inf (two's-complement shifter: "rounds down") */
    QF_MODEL_ALIGN_RNE      /* nearest, ties to even (a hypothetical exact aligner) */
} qf_model_align;

typedef enum qf_model_sum {
    QF_MODEL_SUM_BLOCK = 0, /* aligned fixed-point block FMA */
    QF_MODEL_SUM_TREE,      /* pairwise float32 tree inside the block */
    QF_MODEL_SUM_ODD_EVEN   /* two aligned half blocks: even, then odd indices */
} qf_model_sum;

typedef struct qf_model_params {
    const char *name;      /* preset name: "h100.e4m3", "h100_promote128.e4m3" */
    const char *simulates; /* architecture modelled: "sm_90", "gfx942" */
    qf_format_id in_a, in_b;
    qf_model_sum sum;
    int block;             /* products per block FMA (SUM_TREE: group; ODD_EVEN: group of two halves) */
    int align_frac_bits;   /* fraction bits kept below the largest exponent at alignment */
    qf_model_align align;  /* fate of the bits below */
    int product_frac_bits; /* 0: exact products; > 0: products truncated to that many */
    int acc_frac_bits;     /* fraction bits of the normalized block result (23: float32) */
    qf_round acc_round;    /* QF_ROUND_RTZ (NVIDIA) or QF_ROUND_RNE (AMD) */
    int flush_in, flush_out;
    int promote_interval; /* 0: none; else a multiple of block */
    qf_round out_round;   /* conversion of the float32 result to a narrower output */
    const char *source;   /* where the parameters come from */
} qf_model_params;

/* The presets (the table of docs/numerics.md#matrix-units), n entries. */
const qf_model_params *qf_model_presets(size_t *n);
/* The preset with this name, or NULL. */
const qf_model_params *qf_model_preset(const char *name);
/* QF_EINVAL when a parameter is out of its domain. */
qf_status qf_model_check(const qf_model_params *p);

/* The arithmetic claim (qf_bound.h) that states what the model does:
 * accumulator fraction bits, block size, RTZ/RNE, alignment truncation and
 * guard bits, promotion.  docs/models.md says where the claim is an upper
 * bound rather than an exact description (fields it cannot express). */
qf_arith_claim qf_model_claim(const qf_model_params *p); /* NULL: qf_arith_claim_default() */

/* One dot product sum_l a[l * inca] * b[l * incb] as the model computes
 * it (no alpha, beta): *result is the accumulator's value (a float32
 * value; the promoted float32 sum with promotion).  a, b: exact values of
 * the inputs in the formats in_a, in_b (NaN and Inf propagate as in IEEE
 * addition). */
qf_status qf_model_dot(const qf_model_params *p, size_t n, const double *a, ptrdiff_t inca, const double *b,
                       ptrdiff_t incb, double *result);

/* GEMM of row-major (leading dimensions lda, ldb, ldc, ldd) matrices:
 * D = alpha * (A B as qf_model_dot) + beta * C, the epilogue in float32
 * (nearest even: alpha * acc when alpha != 1, beta * c and the addition
 * when beta != 0), then converted to `out` with p->out_round.  alpha and
 * beta must be float32 values; c may be NULL when beta == 0.  d_code and
 * d_value (either may be NULL) receive the result's code and value. */
typedef struct qf_model_gemm_desc {
    size_t m, n, k;
    const double *a;
    size_t lda;
    const double *b;
    size_t ldb;
    const double *c;
    size_t ldc;
    double alpha, beta;
    const qf_format *out; /* NULL: float32 */
    uint64_t *d_code;
    double *d_value;
    size_t ldd;
} qf_model_gemm_desc;

qf_status qf_model_gemm(const qf_model_params *p, const qf_model_gemm_desc *d);

/* The registered model kernels (gemm.model.<preset>), n entries. */
const qf_kernel *qf_kernels_models(size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* QF_MODEL_H */
