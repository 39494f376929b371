/* qf_bound.h: error bounds derived from the arithmetic a kernel claims.
 *
 * A kernel registers a qf_arith_claim: how it accumulates (format or
 * fraction bits, block-FMA size, rounding, alignment, promotion, summation
 * order), how it rounds its output, and optionally a claimed ulp bound.  The
 * input formats are not part of the claim: they come with the dtype tuple of
 * the case, and the inputs given to both kernel and reference are already
 * quantized (docs/runner.md "Data flow of one case"), so input rounding is never charged here.
 *
 * From the claim this module derives, per output element, an upper bound on
 * |kernel - exact| that any implementation of the claimed arithmetic obeys.
 * An element outside its bound is a conformance violation: FAILED
 * (qf_verdict.h).  The derivations, their assumptions and sources are in
 * docs/bounds.md; every bound is computed so that it is itself an upper
 * bound (closed forms evaluated in binary64 and then enlarged by the
 * factor QF_BOUND_SAFETY, which dominates the rounding errors of evaluating
 * them; see docs/bounds.md "Evaluating the bounds").
 *
 * Facts used (docs/numerics.md#error-bounds and
 * docs/numerics.md#matrix-units): Higham's gamma_n = n u / (1 - n u); the mixed-precision
 * block-FMA bound of Blanchard, Higham, Lopez, Mary and Pranesh (2020);
 * the probabilistic bound of Higham and Mary (2019), reported for
 * information only and never used for FAILED (it does not hold for
 * truncating accumulators); output rounding u_out |c|.
 */
#ifndef QF_BOUND_H
#define QF_BOUND_H

#include <stddef.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Relative enlargement applied to every computed bound (docs/bounds.md). */
#define QF_BOUND_SAFETY (1.0 + 0x1p-20)

/* The longest chain of accumulator roundings depends on the order of the
 * additions, so the claim states it (docs/numerics.md#error-bounds: gamma_n with
 * n the longest path). */
typedef enum qf_sum_order {
    QF_SUM_SEQUENTIAL = 0, /* one running sum over K (per block step) */
    QF_SUM_PAIRWISE,       /* balanced tree over the block steps */
    QF_SUM_SPLITK,         /* split_k sequential partials, then summed sequentially */
    /* Appended in ABI 3 (docs/claims.md "order"): */
    QF_SUM_BLOCKED, /* partials of sum_block consecutive elements, each in sum_inner order, then the
                     * ceil(K / sum_block) partials added sequentially */
    QF_SUM_VARIES,  /* one of sum_varies[0 .. n_varies) per output element or tile: the bound is the max */
    QF_SUM_ANY      /* no order promised: the bound holds for every order (the sequential chain) */
} qf_sum_order;

/* One order of a `varies` set: order with its parameter (S of split(S), B
 * of blocked(B, inner)) and, for blocked, the inner order (sequential or
 * pairwise).  varies and any cannot be members. */
typedef struct qf_sum_spec {
    qf_sum_order order;
    int param;
    qf_sum_order inner;
} qf_sum_spec;

#define QF_SUM_VARIES_MAX 4

/* Multiply-add: fused (the product enters the addition exact), or unfused
 * (each product rounded to the accumulator format first, a separate
 * multiply then add).  0 is fused: the meaning of every claim before ABI 3. */
typedef enum qf_fma_kind { QF_FMA_FUSED = 0, QF_FMA_UNFUSED } qf_fma_kind;

/* How the terms of a block are cut at alignment when align_truncates = 1:
 * toward zero (NVIDIA tensor cores), toward -inf (two's-complement shift:
 * MI300's "alignment rounds down"), or to nearest. */
typedef enum qf_align_round { QF_ALIGN_TRUNCATE = 0, QF_ALIGN_FLOOR, QF_ALIGN_NEAREST } qf_align_round;

/* The accumulator's kind: a floating-point acc_format (0, every claim before
 * ABI 3), or a two's-complement integer (s8 x s8 -> s32 GEMM). */
typedef enum qf_acc_kind { QF_ACC_FLOAT = 0, QF_ACC_INT32, QF_ACC_INT64 } qf_acc_kind;

/* What an integer accumulator does beyond its range (docs/claims.md): wrap
 * modulo 2^bits, or saturate at its ends. */
typedef enum qf_overflow { QF_OVERFLOW_WRAP = 0, QF_OVERFLOW_SATURATE } qf_overflow;

/* The formula an activation kernel evaluates, when it differs from the
 * op's own function or its default evaluation: the bound adds the exact
 * difference of the two functions (gelu through tanh where the op asks for
 * erf) and the formula's own rounding errors. */
typedef enum qf_act_formula {
    QF_ACT_FORMULA_OP = 0, /* the op's function, evaluated as docs/bounds.md "Activations" models */
    QF_ACT_FORMULA_GELU_ERF,     /* 0.5 x erfc(-x / sqrt 2) */
    QF_ACT_FORMULA_GELU_TANH,    /* x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) (the tanh form) */
    QF_ACT_FORMULA_SILU_EXP,     /* x / (1 + exp(-x)) */
    QF_ACT_FORMULA_SILU_SIGMOID, /* x * sigmoid(x), sigmoid from exp(-|x|) */
    QF_ACT_FORMULA_COUNT
} qf_act_formula;

/* Determinism scope.  0 derives it from the deterministic and
 * deterministic_threads ints (every claim before ABI 3); a nonzero scope
 * and those ints must agree (qf_arith_claim_set_determinism sets all
 * three). */
typedef enum qf_determinism {
    QF_DET_FROM_FLAGS = 0,
    QF_DET_NONE,            /* deterministic 0, deterministic_threads 0 */
    QF_DET_RUN_TO_RUN,      /* deterministic 1, deterministic_threads 0 */
    QF_DET_THREAD_INVARIANT /* deterministic 1, deterministic_threads 1 */
} qf_determinism;

/* How a LayerNorm computes its variance: the bound depends on it (two-pass
 * and Welford's update propagate the mean's error differently;
 * docs/bounds.md "LayerNorm with Welford's algorithm"). */
typedef enum qf_var_algo {
    QF_VAR_TWO_PASS = 0, /* mean, then sum of (x - mean)^2 */
    QF_VAR_WELFORD       /* Welford's running mean and M2 (one pass, sequential) */
} qf_var_algo;

/* The arithmetic a kernel claims.  Build one with qf_arith_claim_default()
 * and override fields: a zeroed struct is NOT a sensible claim (format id 0
 * is float64). */
typedef struct qf_arith_claim {
    /* Accumulator: a standard format (docs/numerics.md#matrix-units: float32
     * on most units), or, when acc_frac_bits > 0, a non-standard accumulator
     * with that many fraction bits (precision acc_frac_bits + 1) and
     * acc_format's exponent range: H100 FP8 wgmma keeps 13 (about 14
     * significant bits), V100 23, A100 24, H100/B200 fp16/bf16 25. */
    qf_format_id acc_format;
    int acc_frac_bits; /* 0: those of acc_format */

    /* Block-FMA size: products summed per block before the block is added
     * to the accumulator; 1 = plain FMA / sequential.  Table: V100 4, A100
     * 8 (fp16/bf16) / 4 (tf32), H100 16 (fp16/bf16) / 8 (tf32) / 32 (fp8),
     * L40S fp8 16, MI300 fp16 8, MI300 fp8 16. */
    int block_fma;

    /* Rounding of the accumulator additions: QF_ROUND_RNE, or QF_ROUND_RTZ
     * for truncating units (V100, H100 fp8: "fp32 output truncated";
     * Fasi, Higham, Mikaitis and Pranesh 2021).  Other modes are treated as
     * directed (|delta| < 2u), like RTZ. */
    qf_round acc_round;

    /* Alignment inside a block (block_fma > 1).  align_truncates = 0: the
     * block sum is exact before its one rounding (the BHLMP 2020 model).
     * align_truncates = 1: the block's terms are aligned to the largest
     * exponent and bits below acc_frac_bits + guard_bits fraction bits are
     * dropped (NVIDIA tensor cores: "alignment truncates", no guard bits;
     * MI300: "alignment rounds down"). */
    int align_truncates;
    int guard_bits;

    /* Promotion: every promote_interval elements of K the partial sum is
     * added into a wider accumulator of promote_format (DeepSeek-V3's fix
     * for H100 FP8: every 128 elements into float32 on the CUDA cores).
     * 0 = never.  With promotion, the segments are taken as sequential
     * block chains and sum_order is not used. */
    int promote_interval;
    qf_format_id promote_format;

    /* Summation order of the block steps; split_k = S partials for
     * QF_SUM_SPLITK (ignored otherwise).  MI250X's "pairwise fp32 FMA
     * tree" is QF_SUM_PAIRWISE inside its groups of 4. */
    qf_sum_order sum_order;
    int split_k;

    /* Final conversion to the output format (given by the dtype tuple):
     * RNE adds 0.5 ulp, RTZ and other directed modes 1 ulp (H100 fp8 "fp32
     * output truncated"). */
    qf_round out_round;

    /* Nonlinear ops: a claimed max error in ulps of the output format
     * (0: none).  It bounds only what the op derives no bound for (moe
     * router weights, attention with a softcap): where a bound is
     * derived, the derived bound is checked and max_ulp is not used, so a
     * max_ulp meant for one op of a kernel cannot replace the derived
     * bound of another it serves (docs/claims.md "max_ulp").  The
     * derivations below never read it. */
    double max_ulp;
    /* Compute format of nonlinear ops (float32 in every kernel we know)
     * is acc_format; elem_ulp is the accuracy the kernel's exp, rsqrt and
     * division have, in ulps of that format (0 = assume 2, CUDA's
     * documented expf / rsqrtf maximum, which also covers glibc). */
    double elem_ulp;

    /* Determinism the kernel claims: bitwise identical across two runs,
     * and across thread counts / launch configurations. */
    int deterministic;
    int deterministic_threads;

    /* Appended in ABI 2 (a zeroed tail is the ABI 1 meaning).
     * Flash-style attention: keys per tile of the online softmax (its
     * running max and sum are rescaled once per tile); 0 = one pass over
     * all keys.  Softmax reads it too: an online normalizer over tiles
     * of that many elements (1 = per element).  attn_p_format: the format
     * P is rounded to before P V (FlashAttention-2/3 round to the input
     * type); a format that holds
     * every compute-format value (float64, the default and what a zeroed
     * field says, or acc_format itself) means "none": P stays in the
     * compute format. */
    int attn_kv_tile;
    qf_format_id attn_p_format;
    /* LayerNorm's variance algorithm (the bound models it). */
    qf_var_algo var_algo;
    /* GEMM: 1 when subnormal inputs and subnormal accumulator results are
     * flushed to zero (docs/numerics.md#matrix-units, MI250X fp16/bf16).
     * The bound adds what flushing can lose (docs/bounds.md
     * "Flushed subnormals"); 0: gradual underflow, as IEEE 754. */
    int flush_subnormals;

    /* Appended in ABI 3 (a zeroed tail is the ABI 2 meaning; every key in
     * docs/claims.md).  fma: fused or unfused multiply-add. */
    qf_fma_kind fma;
    /* sum_order QF_SUM_BLOCKED: B and the inner order (QF_SUM_SEQUENTIAL
     * or QF_SUM_PAIRWISE); QF_SUM_VARIES: the n_varies orders of the set. */
    int sum_block;
    qf_sum_order sum_inner;
    int n_varies;
    qf_sum_spec sum_varies[QF_SUM_VARIES_MAX];
    /* Matrix units: each product rounded to nearest with product_frac_bits
     * fraction bits before the block sum (0: exact products), and how
     * truncating alignment cuts (align_truncates = 1). */
    int product_frac_bits;
    qf_align_round align_round;
    /* Integer accumulator (acc_format and the float accumulator fields are
     * then not used by the GEMM bound) and its overflow behaviour. */
    qf_acc_kind acc_kind;
    qf_overflow acc_overflow;
    /* Activations: the formula evaluated, and the math library's accuracy
     * as |f^ - f| <= math_abs_err + math_rel_err |f| (both 0: elem_ulp). */
    qf_act_formula act_formula;
    double math_abs_err;
    double math_rel_err;
    /* Determinism scope (see qf_determinism). */
    qf_determinism determinism;
} qf_arith_claim;

/* float32 accumulator, block 1, RNE, exact alignment, no promotion,
 * sequential, RNE output, max_ulp 0, elem_ulp 0 (= 2), deterministic 1,
 * deterministic_threads 0, attn_kv_tile 0, attn_p_format float64 (none),
 * var_algo two-pass. */
qf_arith_claim qf_arith_claim_default(void);

/* QF_EINVAL / QF_EFORMAT when a field is out of its domain (block_fma < 1,
 * unknown format, acc_frac_bits > 52, split_k < 1 with QF_SUM_SPLITK,
 * negative max_ulp, attn_kv_tile < 0, attn_p_format not a float format,
 * unknown var_algo; ABI 3: an unknown fma, align_round, acc_kind,
 * acc_overflow, act_formula or determinism, sum_block < 1 or an inner
 * order other than sequential / pairwise with QF_SUM_BLOCKED, n_varies
 * outside 1 .. QF_SUM_VARIES_MAX or a member that is varies, any or out of
 * its domain with QF_SUM_VARIES, product_frac_bits outside 0 .. 52,
 * negative or non-finite math errors, a determinism scope that
 * contradicts deterministic / deterministic_threads). */
qf_status qf_arith_claim_check(const qf_arith_claim *c);

/* The determinism scope a claim states: its determinism field, or, when
 * that is QF_DET_FROM_FLAGS, the one deterministic and
 * deterministic_threads say (threads without runs counts as none). */
qf_determinism qf_arith_claim_determinism(const qf_arith_claim *c);
/* Set the scope and the two ints that carry it to older readers. */
void qf_arith_claim_set_determinism(qf_arith_claim *c, qf_determinism d);

/* An integer accumulator's expected result (docs/claims.md "Integer
 * accumulators"): exact is the exact sum (binary64, exact while abs_sum <
 * 2^53), abs_sum = sum |a_l b_l|.  Wrap: exact reduced modulo 2^bits into
 * the signed range (the same in every order).  Saturate: exact when
 * abs_sum is inside the range (no partial sum can leave it), the clamped
 * exact sum when every product has one sign (partial sums are monotone);
 * otherwise the order decides and 0 is returned (undecided).  Returns 1
 * with *expected set when decided; 0 for a float accumulator too. */
int qf_bound_int_acc_expected(const qf_arith_claim *c, double exact, double abs_sum, double *expected);

/* The format P is rounded to before P V, as qf_bound_attention takes it:
 * NULL when the claim's attn_p_format holds every value of the compute
 * format (P not rounded). */
const qf_format *qf_arith_claim_p_format(const qf_arith_claim *c);

/* Unit roundoff of the claimed accumulator: 2^-(frac_bits + 1). */
double qf_bound_acc_u(const qf_arith_claim *c);

/* ---- Dot products and GEMM ----------------------------------------------- */

/* The coefficients of the bound for one reduction length K:
 *     |c^ - c| <= rel_abs * sum|a_l||b_l| + rel_out * |c| + abs_min
 * where c is the exact result of the GEMM element (alpha, beta included).
 * chain is the longest path of accumulator roundings (block steps, plus
 * promotion steps, plus epilogue roundings); eta the relative error of one
 * step; acc = the accumulator factor before output rounding.  prob is the
 * Higham-Mary probabilistic factor for lambda (information only: FAILED
 * never uses it; NaN for directed accumulators, where it does not hold). */
typedef struct qf_bound_coef {
    double rel_abs; /* multiplies sum |a||b| (d_abs) */
    double rel_out; /* multiplies |c|: output rounding */
    double abs_min; /* underflow: subnormal steps of accumulator and output */
    double chain;   /* longest chain of roundings (steps) */
    double eta;     /* relative error bound of one step */
    double prob;    /* probabilistic counterpart of rel_abs (informational) */
} qf_bound_coef;

/* epilogue: extra roundings in the accumulator format after the
 * reduction (alpha scaling, + beta c, dequantization scales), usually 0..3.
 * out: the output format of the dtype tuple.  lambda: the probabilistic
 * bound's parameter (e.g. 3; <= 0 gives prob = NaN). */
qf_status qf_bound_gemm_coef(const qf_arith_claim *claim, size_t k, int epilogue, const qf_format *out,
                             double lambda, qf_bound_coef *coef);

/* Per-element bound: bound[i] = rel_abs * abs[i] + rel_out * |exact[i]| +
 * abs_min, rounded upward.  abs: d_abs of qf_gemm (sum |a||b|, rounded up);
 * exact: the exact result (binary64; d_value of a binary64 reference, or any
 * value whose error is below 2^-50 relative).  NaN or Inf inputs give an
 * infinite bound (the verdict decides specials separately). */
void qf_bound_apply(const qf_bound_coef *coef, size_t n, const double *abs, const double *exact,
                    double *bound);

/* ---- Nonlinear ops (docs/bounds.md derivations) -------------------------- */

/* Softmax of one row of n: y = softmax(scale * x).  exact: the exact (or
 * correctly rounded binary64) result y.  bound[i]: bound on |y^_i - y_i|.
 * QF_EINVAL for n == 0 or NULL arrays. */
qf_status qf_bound_softmax(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                           double scale, const double *exact, double *bound);

/* Log-softmax of one row of n: y = scale x - log sum_k exp(scale x_k)
 * (docs/bounds.md "Log-softmax").  exact: the exact (or correctly rounded
 * binary64) log-probabilities.  Models the kernel's shifted log-sum-exp in
 * the compute format, m^ = max_j fl(scale x_j), terms exp(fl(a_j - m^))
 * within elem_ulp summed in any order (an online normalizer with
 * attn_kv_tile), L^ = log(S^) within elem_ulp, then either
 * y^ = fl(fl(a_j - m^) - L^) or y^ = fl(a_j - fl(m^ + L^)) (both are
 * covered), then the output rounding.  The bound is absolute: it grows
 * with |a_j - m| and |log sum exp|, not with |y|.  QF_EINVAL for n == 0
 * or NULL arrays. */
qf_status qf_bound_log_softmax(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                               double scale, const double *exact, double *bound);

/* RMSNorm (center = 0) or LayerNorm (center = 1) of one row of n, two-pass
 * algorithm in the compute format: y = (x - mu) / sqrt(var + eps) * w + b
 * (rmsnorm: mu = 0, var = mean x^2).  w, b may be NULL (1 and 0). */
qf_status qf_bound_norm(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                        const double *w, const double *b, double eps, int center, const double *exact,
                        double *bound);
/* The same with a weight offset (Gemma's y = ... * (1 + w)): the scale is
 * weight_offset + w_j, which the kernel forms first, one more rounding
 * (docs/bounds.md "RMSNorm and LayerNorm", step 5); without a weight (w
 * NULL) the scale is 1 and the offset is not used, as in the reference.
 * qf_bound_norm is this with weight_offset 0. */
qf_status qf_bound_norm_offset(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                               const double *w, double weight_offset, const double *b, double eps, int center,
                               const double *exact, double *bound);

/* L2 normalization of one row of n: y = x / max(||x||_2, eps) (docs/bounds.md
 * "L2 normalization"): the sum of squares as the claim accumulates it, a
 * rounded sqrt, eps rounded into the compute format, the clamp, then a
 * rounded division or a multiplication by a reciprocal within elem_ulp,
 * then the output rounding.  Assumes the sum of squares does not overflow
 * the compute format (float32: ||x|| below about 1.8e19).  QF_EINVAL for
 * n == 0, NULL arrays or a negative or non-finite eps; QF_EUNSUPPORTED for
 * a claim of truncating block alignment. */
qf_status qf_bound_l2norm(const qf_arith_claim *claim, const qf_format *out, size_t n, const double *x,
                          double eps, const double *exact, double *bound);

/* Attention, one query row: o = softmax(s) V with s_j = scale q.k_j.
 *   s:     [n_kv] exact scaled scores (-inf for masked keys),
 *   s_abs: [n_kv] scale * sum |q||k_j| (bound input of the QK^T product),
 *   v:     [n_kv][d_v] row-major,
 *   exact: [d_v] the exact output row,
 *   p_format: the format P is rounded to before P V (FlashAttention rounds
 *          to the input type), NULL when P stays in the compute format,
 *   kv_tile: keys per tile of an online (flash) softmax, whose running max
 *          and sums are rescaled once per tile; 0 = one pass over all keys.
 * The two products are bounded with the claim's accumulation (block,
 * rounding, order) for K = d_qk (QK^T) and K = n_kv (PV).  A row whose keys
 * are all masked gets bound 0 (the reference's convention decides). */
qf_status qf_bound_attention(const qf_arith_claim *claim, const qf_format *out, size_t n_kv, size_t d_qk,
                             size_t d_v, const double *s, const double *s_abs, const double *v,
                             const qf_format *p_format, size_t kv_tile, const double *exact, double *bound);

/* Attention's lse of one query row, lse = log sum_j exp(s_j) (natural
 * log), from the same scores, score bounds and KV tile as
 * qf_bound_attention: the kernel's lse^ = fl(m^ + log(l^)) with its max
 * m^ (possibly an unscaled max times the scale) and its denominator l^
 * (docs/bounds.md "Attention", step 8).  exact: the exact lse; *bound on
 * |lse^ - lse| in the format out (the lse's).  A row whose keys are all
 * masked gets bound 0 where the reference is finite, else infinite. */
qf_status qf_bound_attention_lse(const qf_arith_claim *claim, const qf_format *out, size_t n_kv, size_t d_qk,
                                 const double *s, const double *s_abs, size_t kv_tile, double exact,
                                 double *bound);

/* RoPE, one head at one position (docs/bounds.md "RoPE"): x and exact
 * [head_dim]; the first rotary_dim (even; 0 = head_dim) components rotate
 * in pairs, (2i, 2i+1) when half_layout = 0, (i, i + rotary_dim/2) when 1,
 * the rest are copies.  Models a kernel that computes inv_freq_i =
 * theta^(-2i/rotary_dim) (exponent, power and reciprocal in the compute
 * format), angle = pos * inv_freq_i (one rounding, pos rounded when not
 * representable), cos and sin within elem_ulp, then two products and a
 * sum: so the bound grows with |pos|.  QF_EINVAL for bad arguments. */
qf_status qf_bound_rope(const qf_arith_claim *claim, const qf_format *out, size_t head_dim, size_t rotary_dim,
                        int half_layout, double theta, double pos, const double *x, const double *exact,
                        double *bound);

/* Elementwise activations (docs/bounds.md "Activations"): y_i = act(x_i),
 * with claim->act_formula the formula evaluated (QF_ACT_FORMULA_OP: the
 * op's) and math_abs_err / math_rel_err the math library's accuracy when
 * either is > 0;
 * or act(x_i) * up[i] when glu (up NULL otherwise).  act is a qf_ref_act
 * (qf_ref.h): gelu_erf, gelu_tanh, silu, sigmoid, relu.  Models the
 * cancellation-free forms (sigmoid from expf(-|x|), gelu through erfc,
 * 1 + tanh u as 2 sigmoid 2u) with float32 constants, expf / erfcf within
 * elem_ulp.  QF_EINVAL for bad arguments or an unknown act. */
qf_status qf_bound_activation(const qf_arith_claim *claim, const qf_format *out, int act, int glu, size_t n,
                              const double *x, const double *up, const double *exact, double *bound);

/* The bound implied by a claimed ulp bound: max_ulp * ulp(exact[i]) of out
 * (a claim's max_ulp, where the op derives no bound). */
void qf_bound_ulp(const qf_format *out, double max_ulp, size_t n, const double *exact, double *bound);

#ifdef __cplusplus
}
#endif

#endif /* QF_BOUND_H */
