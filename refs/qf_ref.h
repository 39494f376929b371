/* qf_ref.h: MPFR references for the non-GEMM operations.
 *
 * Every reference returns each output element rounded once, directly, from
 * the exact real result into a requested format (binary64 by default), with
 * a status per element:
 *
 *   QF_REF_EXACT      the exact real result is representable; the value is it.
 *   QF_REF_ROUNDED    the value is the correctly rounded exact result (the
 *                     rounding was decided from a proven enclosure).
 *   QF_REF_UNDECIDED  the enclosure still straddled a rounding boundary at
 *                     the maximum working precision; the value is the
 *                     rounding of the enclosure's midpoint, a best guess that
 *                     is marked as such and must never be used as a verdict.
 *   QF_REF_UNDEFINED  there is no real result (a NaN input, inf - inf, a
 *                     softmax or attention row with no unmasked entry); the
 *                     value is the convention documented with each op.
 *
 * How the guarantee is obtained (all ops).  Inputs are binary64 values,
 * taken as exact (they are the exact values of the kernel's input formats).
 * Each element is evaluated in MPFR interval arithmetic: every quantity is
 * a pair [lo, hi] computed with MPFR_RNDD / MPFR_RNDU (monotone functions on
 * their end points, the Lipschitz bound |cos' | <= 1 for sin/cos), so the
 * pair provably encloses the exact real value whatever the working
 * precision.  Sums of exact products (dot products, sums of squares) use
 * mpfr_sum, correctly rounded, once down and once up.  Constants (pi,
 * sqrt 2, 0.044715) are enclosed the same way.  The element's code is the
 * common rounding of both ends (as qf_format_encode_interval decides it:
 * rounding is monotone on each side of 0, so everything in between rounds
 * the same; a split code, the NaN that fnuz formats give both +overflow
 * and -overflow or e8m0's 0xFF for numbers <= 0 and overflow, decides only
 * ends on one side of 0: "decided" means one value, or one rule, never
 * just one code, docs/refs.md); when all steps were exact, lo == hi and
 * the element is EXACT if the target holds it.  Formulations avoid
 * needless dependency and cancellation (softmax and attention weights
 * relative to the largest logit, whose weight is exactly 1; GELU through
 * erfc; 1 + tanh u as 2 sigmoid 2u), so exact results are found exact and
 * the directed modes get decided.
 *
 * Working-precision policy.  w starts at p + prec_extra bits, at least 8
 * (p = the target's precision: 53 for binary64, 24 float32, 8 bfloat16,
 * man_bits + 1 for the small floats, the bit width for integers; attention
 * takes the larger of its out and lse formats; prec_extra defaults to 64,
 * so binary64 starts at 117 bits) and doubles while
 * some element of the row (or block) is undecided, up to prec_max bits
 * (default 4096).  Only the shared per-row quantities and the still
 * undecided elements are recomputed at the higher precision.  An element
 * that is still undecided at prec_max is reported UNDECIDED.  Because the
 * enclosure is rigorous at any w, the decided value never depends on w, on
 * the thread count or on the order of evaluation: results are bitwise
 * deterministic.  MPFR's exponent range is set to its widest in each
 * thread, so no intermediate overflows or underflows in practice (and when
 * it would, directed rounding keeps the enclosure valid).
 *
 * Zero results.  References compute real numbers, which have no signed zero.
 * When the enclosure contains 0 and both ends round to a zero of the target
 * (the exact value is 0 or too small to matter in any nearest mode), the
 * result is +0, status EXACT if the enclosure is the point 0, else ROUNDED.
 * (Compare zeros by value, not by bits.)
 *
 * Known limit (directed modes only).  A result equal to a representable
 * number plus or minus an amount below about 2^-prec_max of it (such as
 * log_softmax = -2000 - exp(-2000), or an attention output of a row that
 * one key dominates by more than ~2800 nats) has an enclosure that touches
 * that number at every working precision, so it stays UNDECIDED under RTZ,
 * UP and DOWN (never wrongly decided); the nearest modes decide it.  The
 * commonest case, the softmax of the row maximum (1 - tiny), is decided.
 *
 * Rounding modes: the deterministic modes of qf_round that the target format
 * accepts (RNE, RNA, RTZ, UP, DOWN; the e8m0 scale rules for e8m0).
 * QF_ROUND_STOCHASTIC is refused (QF_EINVAL).
 *
 * Shapes are explicit; arrays are dense and row-major (the last index
 * varies fastest).  Output arrays are supplied by the caller (see
 * qf_ref_out); qf_ref_out_alloc is a convenience.  Work is spread over rows
 * with OpenMP (opts.threads); the results do not depend on it.
 */
#ifndef QF_REF_H
#define QF_REF_H

#include <stddef.h>
#include <stdint.h>

#include "qf_block.h"
#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Per-element status, options, outputs -------------------------------- */

typedef enum qf_ref_status {
    QF_REF_EXACT = 0,
    QF_REF_ROUNDED,
    QF_REF_UNDECIDED,
    QF_REF_UNDEFINED,
    QF_REF_STATUS_COUNT
} qf_ref_status;

/* "exact", "rounded", "undecided", "undefined". */
const char *qf_ref_status_name(qf_ref_status s);

typedef struct qf_ref_opts {
    const qf_format *format; /* target format; NULL = float64 */
    qf_round round;          /* default QF_ROUND_RNE */
    int saturate;            /* overflow to +-max (qf_format_encode rules); default 0 */
    int prec_extra;          /* starting working precision = p + prec_extra; default 64 */
    int prec_max;            /* largest working precision tried; default 4096 */
    int threads;             /* OpenMP threads; 0 = OpenMP default, 1 = serial */
    int slow_only;           /* 1: every element through the MPFR enclosures, the
                              * binary64 fast path not tried (to check it); 0 */
} qf_ref_opts;

/* float64, RNE, not saturating, prec_extra 64, prec_max 4096, threads 0.
 * Every function accepts opts == NULL for these defaults. */
qf_ref_opts qf_ref_opts_default(void);

/* One output array with its statuses.  value is required; code and status
 * may be NULL.  The counts and max_prec are filled by every call (they
 * describe this call's elements only). */
typedef struct qf_ref_out {
    double *value;   /* [n] exact binary64 value of each element's code
                      * (UNDEFINED: the op's convention, NaN by default) */
    uint64_t *code;  /* [n] code in the target format, or NULL */
    uint8_t *status; /* [n] qf_ref_status, or NULL */
    size_t n_exact, n_rounded, n_undecided, n_undefined;
    size_t n_fast; /* decided by the binary64 fast path (docs/refs.md "Fast
                    * path"); the others that are not special values went
                    * through MPFR */
    /* Optional (NULL: not written; qf_ref_out_alloc leaves them NULL): a
     * binary64 approximation of each element's EXACT value and a bound on
     * its error, |approx - exact| <= approx_err (0 where approx is the
     * exact value; NaN/Inf as value for special elements).  Where the fast
     * path decided, the error is about 2^-45 relative; where MPFR did, the
     * half-width of the deciding enclosure plus half an ulp.  A caller that
     * needs the exact value only to measure errors (the runner) takes it
     * from here instead of a second, binary64 reference. */
    double *approx;
    double *approx_err;
    int max_prec;  /* largest working precision any element needed */
} qf_ref_out;

/* Allocate value, code and status for n elements (zeroed counts);
 * QF_ENOMEM on failure.  qf_ref_out_free frees what alloc allocated. */
qf_status qf_ref_out_alloc(qf_ref_out *out, size_t n);
void qf_ref_out_free(qf_ref_out *out);

/* ---- Softmax ----------------------------------------------------------------
 * x: [rows][cols].  y[r][c] = exp(scale x[r][c]) / sum_j exp(scale x[r][j])
 * (log_softmax: scale x[r][c] - log sum_j exp(scale x[r][j])); scale is an
 * exact binary64 (1 for none).
 * Special values: entries with scale x = -inf give exactly 0 (log: -inf),
 * status EXACT; a row whose entries are all such, or that holds a NaN, an
 * entry with scale x = +inf (inf - inf) or 0 * inf (scale 0), is UNDEFINED
 * with value NaN.  A non-finite scale is QF_EINVAL.  cols == 0 is a no-op.
 */
qf_status qf_ref_softmax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, double scale,
                         qf_ref_out *y);
qf_status qf_ref_log_softmax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, double scale,
                             qf_ref_out *y);

/* ---- Attention forward ------------------------------------------------------
 * Layouts (row-major, "BHSD"):
 *   q   [batch][heads][seq_q][head_dim]
 *   k   [batch][kv_heads][seq_k][head_dim]
 *   v   [batch][kv_heads][seq_k][head_dim_v]
 *   out [batch][heads][seq_q][head_dim_v]
 *   lse [batch][heads][seq_q]            (natural log)
 * GQA/MQA: heads must be a multiple of kv_heads; query head h reads kv head
 * h / (heads / kv_heads) (PyTorch repeat_interleave, FlashAttention).
 * Logits:  s = scale * q.k;  if softcap > 0: s = softcap * tanh(s / softcap);
 *          then s += mask_add (additive mask), and entries excluded by the
 *          causal / window / boolean masks are -inf.
 * out = softmax(s) v,  lse = log sum_j exp(s_j).
 * Positions: query i sits at i + (seq_k - seq_q) when align_bottom_right
 * (FlashAttention >= 2.1), at i otherwise (PyTorch SDPA is_causal).  With
 * that position P, key j is kept iff  P - window_left <= j <= P + window_right
 * (a negative window side is unbounded); causal sets window_right = 0.
 * Masks: mask_add (double, -inf allowed) or mask_bool (nonzero = keep), each
 * [.. ][seq_q][seq_k] with element offset b * mask_stride_b + h *
 * mask_stride_h + i * seq_k + j (strides 0 broadcast).  Both may be given.
 * A row with no kept key: out = masked_row_value (default 0, FlashAttention;
 * PyTorch gives NaN) with status UNDEFINED, lse = -inf (log of an empty sum)
 * EXACT.  A NaN or an infinity in the row's q, in a kept key's k or v, or
 * a NaN or +inf mask_add makes the row UNDEFINED (out and lse NaN).
 * Guarantee: each out element and lse value is the correctly rounded real
 * result (dot products exact, mpfr_sum), or EXACT/UNDECIDED as above.
 * Known UNDECIDED corner: in the directed rounding modes, an output whose
 * exact value is a representable number plus or minus less than about
 * 2^-prec_max relative (a row dominated by one key by more than ~2800 nats
 * at the default prec_max, so out = v_m (1 - tiny)) cannot be decided; the
 * nearest modes decide it.
 */
typedef struct qf_ref_attn_params {
    size_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
    size_t head_dim_v; /* 0: head_dim */
    double scale;      /* 0: exactly 1/sqrt(head_dim) (the real number) */
    double softcap;    /* 0: none */
    int causal;
    int align_bottom_right;
    long window_left, window_right; /* < 0: unbounded (default -1, -1) */
    const double *mask_add;         /* NULL: none */
    const uint8_t *mask_bool;       /* NULL: none */
    size_t mask_stride_b, mask_stride_h;
    double masked_row_value;     /* default 0 */
    const qf_format *lse_format; /* NULL: same as opts->format */
} qf_ref_attn_params;

void qf_ref_attn_params_init(qf_ref_attn_params *p);

/* lse may be NULL.  out needs batch*heads*seq_q*head_dim_v elements, lse
 * batch*heads*seq_q. */
qf_status qf_ref_attention(const qf_ref_opts *opts, const qf_ref_attn_params *p, const double *q,
                           const double *k, const double *v, qf_ref_out *out, qf_ref_out *lse);

/* ---- Normalization ----------------------------------------------------------
 * x, y: [rows][cols]; weight, bias: [cols] or NULL.
 * RMSNorm:   y = x / sqrt(mean(x^2) + eps) * (weight_offset + w) + b
 * LayerNorm: y = (x - mean(x)) / sqrt(var(x) + eps) * (weight_offset + w) + b
 * (var is the biased, 1/cols, variance; weight_offset 1 is Gemma's (1 + w);
 * without a weight the factor is 1).  eps, weights and bias are exact.
 * The division is by the square root (not a multiplication by a rounded
 * reciprocal), so exact cases stay exact: RMSNorm of a constant row is
 * sign(x) * g exactly with eps = 0, LayerNorm of a constant row is b
 * exactly.  A row with a NaN or Inf, or a zero row with eps == 0 (0/0), is
 * UNDEFINED (NaN).  A negative or non-finite eps, or a non-finite weight,
 * bias or weight_offset, is QF_EINVAL.
 */
typedef struct qf_ref_norm_params {
    size_t rows, cols;
    double eps;
    const double *weight;
    const double *bias;
    double weight_offset;
} qf_ref_norm_params;

qf_status qf_ref_rmsnorm(const qf_ref_opts *opts, const qf_ref_norm_params *p, const double *x,
                         qf_ref_out *y);
qf_status qf_ref_layernorm(const qf_ref_opts *opts, const qf_ref_norm_params *p, const double *x,
                           qf_ref_out *y);

/* ---- L2 normalization --------------------------------------------------------
 * y = x / max(||x||_2, eps) per row of x [rows][cols] (torch.nn.functional.
 * normalize(x, p=2, dim=-1, eps)); eps is exact.  The division is by the
 * clamped norm (not a multiplication by a rounded reciprocal), so exact
 * cases stay exact: a row with one nonzero entry gives sign(x) and zeros, a
 * zero row with eps > 0 gives zeros, both EXACT.  A row with a NaN or Inf,
 * or a zero row with eps == 0 (0/0), is UNDEFINED (NaN).  A negative or
 * non-finite eps is QF_EINVAL.  docs/l2norm.md.
 */
typedef struct qf_ref_l2norm_params {
    size_t rows, cols;
    double eps;
} qf_ref_l2norm_params;

qf_status qf_ref_l2norm(const qf_ref_opts *opts, const qf_ref_l2norm_params *p, const double *x,
                        qf_ref_out *y);

/* ---- Activations ------------------------------------------------------------
 * GELU_ERF:  x/2 (1 + erf(x / sqrt 2))           = x/2 erfc(-x / sqrt 2)
 * GELU_TANH: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (0.044715 is the
 *            decimal constant, exactly)
 * SILU:      x / (1 + exp(-x))
 * SIGMOID:   1 / (1 + exp(-x))
 * RELU:      max(x, 0)
 * qf_ref_glu: y = act(gate) * up  (SwiGLU: SILU, GeGLU: GELU_ERF or
 * GELU_TANH); gate, up and y are separate [n] arrays (split a fused
 * [rows][2 cols] tensor first).  +-inf inputs give their limits (EXACT);
 * NaN, and limits of the form 0 * inf, are UNDEFINED (NaN).
 */
typedef enum qf_ref_act {
    QF_REF_ACT_GELU_ERF = 0,
    QF_REF_ACT_GELU_TANH,
    QF_REF_ACT_SILU,
    QF_REF_ACT_SIGMOID,
    QF_REF_ACT_RELU,
    QF_REF_ACT_COUNT
} qf_ref_act;

/* "gelu" (= gelu_erf), "gelu_erf", "gelu_tanh", "silu", "sigmoid", "relu". */
const char *qf_ref_act_name(qf_ref_act a);
qf_status qf_ref_act_lookup(const char *name, qf_ref_act *out);

qf_status qf_ref_activation(const qf_ref_opts *opts, qf_ref_act act, const double *x, size_t n,
                            qf_ref_out *y);
qf_status qf_ref_glu(const qf_ref_opts *opts, qf_ref_act act, const double *gate, const double *up, size_t n,
                     qf_ref_out *y);

/* ---- RoPE ---------------------------------------------------------------------
 * x, y: [tokens][heads][head_dim].  The first rotary_dim (even) components of
 * each head rotate, the rest pass through (EXACT or rounded copy).
 * Pair i (0 <= i < rotary_dim/2) is (2i, 2i+1) for INTERLEAVED (GPT-J) and
 * (i, i + rotary_dim/2) for HALF (GPT-NeoX, Llama).  Angle = pos * f_i with
 * f_i = theta^(-2i / rotary_dim) (the real number) or inv_freq[i] when given
 * (exact binary64, e.g. the float32 table a kernel uses);
 * pos = positions[t] when given, else pos_offset + t.
 *   y_a = x_a cos - x_b sin,   y_b = x_a sin + x_b cos.
 * The angle is enclosed rigorously and sin/cos through |sin'|, |cos'| <= 1,
 * so large positions are handled (the enclosure just needs more bits).
 * Position 0 is the identity (EXACT).  A pair holding a NaN or an infinity
 * is UNDEFINED (NaN); pass-through components are copied (rounded into the
 * target).  rotary_dim odd or > head_dim, theta <= 0 or non-finite, a
 * non-finite inv_freq: QF_EINVAL.
 */
typedef enum qf_ref_rope_layout { QF_REF_ROPE_INTERLEAVED = 0, QF_REF_ROPE_HALF } qf_ref_rope_layout;

typedef struct qf_ref_rope_params {
    size_t tokens, heads, head_dim;
    size_t rotary_dim; /* 0: head_dim */
    qf_ref_rope_layout layout;
    double theta;             /* default 10000 */
    int64_t pos_offset;       /* default 0 */
    const int64_t *positions; /* [tokens] or NULL */
    const double *inv_freq;   /* [rotary_dim / 2] or NULL */
} qf_ref_rope_params;

void qf_ref_rope_params_init(qf_ref_rope_params *p);
qf_status qf_ref_rope(const qf_ref_opts *opts, const qf_ref_rope_params *p, const double *x, qf_ref_out *y);

/* ---- MoE router ---------------------------------------------------------------
 * logits: [tokens][experts].  Scores: softmax over the experts or sigmoid
 * per expert.  Selection key = score + sel_bias[e] (sel_bias NULL: 0; the
 * DeepSeek-V3 bias steers selection only).  The top_k largest keys are
 * selected, in decreasing key order, equal keys by lower expert index.
 * Weights: the selected scores, divided by their sum when renormalize,
 * times route_scale (default 1).  Outputs per (token, slot):
 *   indices [tokens][top_k] (int32), weights [tokens][top_k] (qf_ref_out),
 *   ties    [tokens][top_k] flags, or NULL:
 *     QF_REF_TIE_SET   this slot's expert and an unselected expert have keys
 *                      within tie_tol (or not provably ordered): a kernel
 *                      may legitimately select the other one;
 *     QF_REF_TIE_ORDER this slot's key is within tie_tol of a neighbouring
 *                      slot's: a kernel may legitimately swap them.
 * Keys are compared rigorously (enclosures at up to prec_max bits); exactly
 * equal keys (same logit, same bias) are always ties; a pair whose order is
 * still not proven at prec_max is marked too.  tie_tol is absolute, in key
 * units (default 0); the marks are exact: a pair is marked iff its exact
 * key distance is <= tie_tol (or unproven).  With renormalize the softmax
 * weights are computed as exp(l_i - m) / sum over the selected, without the
 * full-row denominator.  Logits of -inf are masked experts (score 0 under
 * softmax).  A token with a NaN logit (or +inf under softmax, or only -inf
 * logits under softmax) is UNDEFINED: weights NaN, indices -1, ties 0.
 */
typedef enum qf_ref_router_score { QF_REF_ROUTER_SOFTMAX = 0, QF_REF_ROUTER_SIGMOID } qf_ref_router_score;

#define QF_REF_TIE_SET   1u
#define QF_REF_TIE_ORDER 2u

typedef struct qf_ref_moe_params {
    size_t tokens, experts, top_k;
    qf_ref_router_score score;
    int renormalize;
    double route_scale;     /* default 1 */
    const double *sel_bias; /* [experts] or NULL */
    double tie_tol;         /* default 0 */
} qf_ref_moe_params;

void qf_ref_moe_params_init(qf_ref_moe_params *p);
qf_status qf_ref_moe_router(const qf_ref_opts *opts, const qf_ref_moe_params *p, const double *logits,
                            int32_t *indices, qf_ref_out *weights, uint8_t *ties);

/* ---- Reductions ---------------------------------------------------------------
 * x: [rows][cols], y: [rows].  sum: correctly rounded sum of the row
 * (mpfr_sum; EXACT when the target holds it); amax: max |x| (exact, then
 * rounded into the target).  inf - inf and NaN give UNDEFINED (NaN); an
 * empty row gives 0 (sum) / 0 (amax), EXACT.
 */
qf_status qf_ref_sum(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, qf_ref_out *y);
qf_status qf_ref_amax(const qf_ref_opts *opts, const double *x, size_t rows, size_t cols, qf_ref_out *y);

/* ---- Quantize / dequantize through precision/ ------------------------------------
 * Per-format with optional group scales (element i uses scales[i / group];
 * scales NULL: 1, group 0: one scale for all n; scales finite, nonzero):
 *   quantize:   code_i = round_{opts->format}(x_i / scale)   (one rounding
 *               from the exact quotient; y->code gets the codes, y->value
 *               their exact values; EXACT when x_i / scale is representable)
 *   dequantize: y_i = round_{opts->format}(decode_{in}(codes_i) * scale)
 *               (the product is exact; EXACT when the target holds it)
 * NaN gives UNDEFINED; +-inf gives +-inf encoded (EXACT when the target has
 * infinities).
 */
qf_status qf_ref_quantize(const qf_ref_opts *opts, const double *x, size_t n, const double *scales,
                          size_t group, qf_ref_out *y);
qf_status qf_ref_dequantize(const qf_ref_opts *opts, const qf_format *in, const uint64_t *codes, size_t n,
                            const double *scales, size_t group, qf_ref_out *y);

/* Block-scaled formats (precision/qf_block.h: MX, NVFP4, group-wise
 * integers, FP8 with amax scaling), wrapped with per-element statuses.
 * x: [rows][cols] (layouts, axes and scale shapes as in qf_block.h).
 *   qf_ref_block_quantize: the block module's codes (it rounds once, from
 *     the exact value, with the family's parameters) into q->code (element
 *     codes, not opts->format codes); q->value = the exact dequantized value
 *     of each element rounded once into opts->format; q->status = EXACT when
 *     quantization lost nothing (the dequantized value is exactly x; for FP8
 *     scaling: decode(code) == x * S exactly) and the target holds the value,
 *     ROUNDED otherwise, UNDEFINED for the elements of a block holding a NaN
 *     or an infinity.  The scales go to *sc (any pointer in it may be NULL).
 *   qf_ref_block_dequantize: y = the exact dequantized value rounded once
 *     into opts->format (FP8 in division mode: decode(code) / S, a rational,
 *     decided like every other reference), EXACT when the target holds it.
 * The element rounding mode (including stochastic, seeded) is the family
 * parameter's; opts->round only rounds the values into opts->format.
 */
typedef enum qf_ref_block_family {
    QF_REF_BLOCK_MX = 0,
    QF_REF_BLOCK_NVFP4,
    QF_REF_BLOCK_GROUP,
    QF_REF_BLOCK_FP8
} qf_ref_block_family;

typedef struct qf_ref_block_params {
    qf_ref_block_family family; /* selects which of the four is used */
    qf_block_mx_params mx;
    qf_block_nvfp4_params nvfp4;
    qf_block_group_params group;
    qf_block_fp8_params fp8;
} qf_ref_block_params;

/* family, and every member at its qf_block_*_params_default(). */
void qf_ref_block_params_init(qf_ref_block_params *p, qf_ref_block_family family);
size_t qf_ref_block_scale_count(const qf_ref_block_params *p, size_t rows, size_t cols);

typedef struct qf_ref_block_scales {
    uint64_t *codes;            /* [scale_count]: e8m0 (MX), e4m3 (NVFP4), fp16/bf16 (group),
                                 * float32 bits (FP8) */
    double *values;             /* [scale_count] decoded, or NULL */
    int16_t *zero_points;       /* group: [scale_count] (asymmetric), or NULL */
    uint32_t tensor_scale_code; /* NVFP4: float32 bits of the tensor scale */
    double tensor_scale;
} qf_ref_block_scales;

qf_status qf_ref_block_quantize(const qf_ref_opts *opts, const qf_ref_block_params *p, const double *x,
                                size_t rows, size_t cols, qf_ref_out *q, qf_ref_block_scales *sc);
/* codes: [rows][cols] element codes; sc->codes (and zero_points for
 * asymmetric groups, tensor_scale_code for NVFP4) as quantize returned. */
qf_status qf_ref_block_dequantize(const qf_ref_opts *opts, const qf_ref_block_params *p, const uint8_t *codes,
                                  const qf_ref_block_scales *sc, size_t rows, size_t cols, qf_ref_out *y);

#ifdef __cplusplus
}
#endif

#endif /* QF_REF_H */
