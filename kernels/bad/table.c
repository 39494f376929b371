/* table.c: the known-bad kernels and the (false) claims they make.
 *
 * Every kernel here claims the arithmetic a correct kernel of its kind
 * would have (the same claims as kernels/cpu: a float32 sequential
 * accumulator, nearest even, bitwise deterministic) and breaks it in one
 * documented way (the comment at the top of each source file says which
 * and where it shows).  shapes/detection.yaml runs each inside and outside
 * the region where its defect shows; tests/kernels/t-bad checks that
 * qualify catches every one and passes every one where it is right.
 *
 * Most are a correct kernel plus one defect (DERIVED below): the good
 * kernel's own code, so that a fix to it reaches the bad one.  origin.c
 * names the good kernel and the defect of each, and says where it shows.
 */
#include <stddef.h>

#include "_bad.h"
#include "qf_bad.h"

/* The claim of a correct float32 kernel (kernels/cpu/table.c). */
#define CLAIM_F32_SEQ                                                                                        \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }

#define F32  QF_FLOAT32
#define F16  QF_FLOAT16
#define E4M3 QF_FLOAT8_E4M3FN
#define E2M1 QF_FLOAT4_E2M1FN

/* clang-format off */
static const qf_dtype_tuple gemm_f16[]  = {
    { .name = "f16_f32acc",    .in = { F16,  F16,  F16 },      .out = { F16 },      .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple gemm_f32[]  = {
    { .name = "f32",           .in = { F32,  F32,  F32 },      .out = { F32 },      .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple gemm_e4m3[] = {
    { .name = "e4m3_e4m3_f32", .in = { E4M3, E4M3, F32 },      .out = { F32 },      .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple row_f32[]   = {
    { .name = "f32",           .in = { F32,  F32,  F32 },      .out = { F32 },      .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple attn_f32[]  = {
    { .name = "f32",           .in = { F32,  F32,  F32, F32 }, .out = { F32, F32 }, .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple quant_mx[]  = {
    { .name = "f32_e4m3",      .in = { F32 },                  .out = { E4M3 },     .arith = CLAIM_F32_SEQ },
    { .name = "f32_e2m1",      .in = { F32 },                  .out = { E2M1 },     .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple quant_e4m3[] = {
    { .name = "f32_e4m3",      .in = { F32 },                  .out = { E4M3 },     .arith = CLAIM_F32_SEQ },
};
/* What a correct flash kernel with float32 P claims (kernels/cpu). */
static const qf_dtype_tuple flash_f32[] = {
    { .name = "f32",           .in = { F32,  F32,  F32, F32 }, .out = { F32, F32 },
      .arith = { .acc_format = F32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = F32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .deterministic = 1,
                 .deterministic_threads = 1, .attn_kv_tile = 16, .attn_p_format = QF_FLOAT64 } },
};
static const qf_dtype_tuple welford_f32[] = {
    { .name = "f32",           .in = { F32,  F32,  F32 },      .out = { F32 },
      .arith = { .acc_format = F32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = F32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .deterministic = 1,
                 .deterministic_threads = 1, .attn_p_format = QF_FLOAT64, .var_algo = QF_VAR_WELFORD } },
};
static const qf_dtype_tuple rope_f32[] = {
    { .name = "f32",           .in = { F32 },                  .out = { F32 },      .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple l2norm_f32[] = {
    { .name = "f32",           .in = { F32 },                  .out = { F32 },      .arith = CLAIM_F32_SEQ },
};

/* A known-bad kernel derived from a correct one: the good kernel's run
 * (and, unless the bad kernel's scope is narrower, supports) function,
 * with kernel->user naming the one defect (a _qf_defect, or a
 * configuration whose first member is the _qf_defect; a compound literal
 * at file scope has static storage, C11 6.5.2.5).  origin.c names the good
 * kernel and the defect of every entry; tests/kernels/t-bad checks them. */
#define DERIVED_L(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, USER, LAYOUTS)                    \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME, \
      .op = OP, .kind = QF_KERNEL_KNOWN_BAD, .description = DESC, .backend = "cpu",         \
      .archs = "cpu", .simulates = NULL, .dtypes = DTYPES,                                  \
      .n_dtypes = sizeof DTYPES / sizeof DTYPES[0], .run = RUN, .supports = SUPPORTS,       \
      .user = (void *)(USER), .layouts = LAYOUTS }
#define DERIVED(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, USER) \
    DERIVED_L(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, USER, 0)
/* The same, declaring every operand layout as its good kernel does (a
 * defect that shows only on strided operands). */
#define DERIVED_STRIDED(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, USER) \
    DERIVED_L(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, USER, QF_LAYOUT_ALL)
#define DEFECT(D) (&(const _qf_defect){D})
#define FLASH(D, P) (&(const _qf_cpu_flash_cfg){.defect = D, .kv_tile = 16, .p_format = P})

/* A known-bad kernel with its own code (origin.c says why). */
#define KERNEL(NAME, OP, DESC, DTYPES, RUN, SUPPORTS) DERIVED(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, NULL)

static const qf_kernel bad_kernels[] = {
    /* gemm.cpu.f16acc as it is (a float16 accumulator), claimed as a
     * float32 one: the defect is the claim (a half-precision accumulator
     * mistaken for a float32 one, as a GEMM run with CUBLAS_COMPUTE_16F). */
    DERIVED("gemm.bad.f16acc",                QF_OP_GEMM,
            "known-bad: float16 accumulation claimed as float32 (shows for K > 1)",
            gemm_f16,   _qf_cpu_gemm_fast_run,       _qf_bad_gemm_supports, _QF_CPU_GEMM_FAST_F16ACC),
    /* gemm.cpu.naive.f32 + an off-by-one K loop in the edge M-tile (a
     * remainder tile written apart from the main tiles and wrong). */
    DERIVED("gemm.bad.tile64",                QF_OP_GEMM,
            "known-bad: the edge M-tile drops the last product of K (shows when M % 64 != 0)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_EDGE_TILE_K)),
    /* gemm.model.h100.e4m3 as it is, claimed as float32 accumulation: the
     * defect is the claim (DeepSeek-V3's finding on H100 FP8 GEMMs). */
    KERNEL("gemm.bad.h100_fp8_as_f32",        QF_OP_GEMM,
           "known-bad: H100 FP8 model without promotion claimed as float32 accumulation (shows at large K)",
           gemm_e4m3,  _qf_bad_gemm_fp8_as_f32_run, _qf_bad_gemm_supports),
    /* gemm.cpu.naive.f32 + a sum order that changes per call (atomics or
     * a split reduction ordered by thread timing). */
    DERIVED("gemm.bad.racy_order",            QF_OP_GEMM,
            "known-bad: summation order varies run to run, claimed bitwise deterministic (shows for K >= 3)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_RACY_ORDER)),
    /* gemm.cpu.naive.f32 + a vector (pair) store at an odd row end. */
    DERIVED("gemm.bad.overrun",               QF_OP_GEMM,
            "known-bad: writes one element past its output (shows for odd N)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_PAIR_OVERRUN)),
    /* gemm.cpu.naive.f32 + an epilogue that stores whole chunks of 8 only. */
    DERIVED("gemm.bad.unwritten",             QF_OP_GEMM,
            "known-bad: leaves the last N % 8 columns unwritten (shows when N % 8 != 0)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_UNWRITTEN_TAIL)),
    /* gemm.cpu.naive.f32 reading a and b at dense offsets (ignoring lda,
     * ldb and column-major strides) while declaring strided layouts. */
    DERIVED_STRIDED("gemm.bad.ignores_ld",    QF_OP_GEMM,
            "known-bad: reads a and b as dense row-major whatever their strides (shows on ld+N and col layouts)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_IGNORES_LD)),
    /* gemm.cpu.naive.f32 storing zeros over each row's padding. */
    DERIVED_STRIDED("gemm.bad.pad_store",     QF_OP_GEMM,
            "known-bad: stores each row of d over its whole pitch, zeros in the padding (shows on ld+N layouts)",
            gemm_f32,   _qf_cpu_gemm_f32_run,        _qf_bad_gemm_supports, DEFECT(_QF_DEFECT_GEMM_PAD_STORE)),
    /* softmax.cpu.f32 without the max subtraction (the naive textbook form). */
    DERIVED("softmax.bad.nomax",              QF_OP_SOFTMAX,
            "known-bad: softmax without max subtraction (expf overflows for entries above ~88)",
            row_f32,    _qf_cpu_softmax_f32_run,     _qf_cpu_softmax_supports, DEFECT(_QF_DEFECT_SOFTMAX_NO_MAX)),
    /* softmax.cpu.f32 whose sum of exponentials is rounded to bfloat16 at
     * every addition (a bfloat16 reduction buffer) while claiming float32:
     * the log-sum-exp of its log_softmax, and its softmax's denominator. */
    DERIVED("softmax.bad.bf16_sum",           QF_OP_SOFTMAX,
            "known-bad: softmax and log_softmax summing their exponentials in bfloat16 while claiming float32 (shows for cols > 1)",
            row_f32,    _qf_cpu_softmax_f32_run,     _qf_cpu_softmax_supports, DEFECT(_QF_DEFECT_SOFTMAX_BF16_SUM)),
    /* layernorm.cpu.twopass.f32 with the one-pass variance (Welford 1962
     * and Chan, Golub, LeVeque 1983 on why E[x^2] - E[x]^2 cancels). */
    DERIVED("layernorm.bad.onepass",          QF_OP_LAYERNORM,
            "known-bad: one-pass variance E[x^2] - E[x]^2 (cancellation when |mean| >> std)",
            row_f32,    _qf_cpu_layernorm_twopass_run, _qf_cpu_rmsnorm_supports, DEFECT(_QF_DEFECT_LAYERNORM_ONE_PASS)),
    /* rmsnorm.cpu.f32 that forgets eps. */
    DERIVED("rmsnorm.bad.no_eps",             QF_OP_RMSNORM,
            "known-bad: RMSNorm that ignores eps (shows when eps is not negligible against mean x^2)",
            row_f32,    _qf_cpu_rmsnorm_f32_run,     _qf_cpu_rmsnorm_supports, DEFECT(_QF_DEFECT_RMSNORM_NO_EPS)),
    KERNEL("attention.bad.drop_tail",         QF_OP_ATTENTION,
           "known-bad: drops the last KV tile of 64 (shows when seq_k % 64 != 0)",
           attn_f32,   _qf_bad_attention_drop_tail_run,  _qf_bad_attention_supports),
    KERNEL("quantize.bad.mx_scale_off",       QF_OP_QUANTIZE,
           "known-bad: MX scale one binade high in blocks whose amax is just below a power of two",
           quant_mx,   _qf_bad_quantize_mx_scale_off_run, _qf_bad_quantize_supports),
    KERNEL("quantize.bad.e4m3_nan_overflow",  QF_OP_QUANTIZE,
           "known-bad: e4m3 encoder turns overflow into NaN while claiming to saturate",
           quant_e4m3, _qf_bad_quantize_e4m3_nan_run,    _qf_bad_quantize_supports),
    /* attention.cpu.flash.f32 whose running sum misses the rescale by
     * exp(m_old - m_new) (the online softmax of Milakov and Gimelshein
     * 2018 rescales both O and l). */
    DERIVED("attention.bad.flash_norescale",   QF_OP_ATTENTION,
            "known-bad: flash attention that does not rescale its running sum (shows when seq_k > 16)",
            flash_f32,  _qf_cpu_attention_flash_run, _qf_cpu_attention_supports,
            FLASH(_QF_DEFECT_FLASH_NO_RESCALE_L, QF_FLOAT32)),
    /* attention.cpu.flash_bf16p as it is (P rounded to bfloat16) on float32
     * data, claimed with float32 P: the defect is the claim. */
    DERIVED("attention.bad.flash_bf16p_as_f32", QF_OP_ATTENTION,
            "known-bad: flash attention rounding P to bfloat16 while claiming float32 P (shows for seq_k > 1)",
            flash_f32,  _qf_cpu_attention_flash_run, _qf_cpu_attention_supports,
            FLASH(_QF_DEFECT_NONE, QF_BFLOAT16)),
    /* rope.cpu.f32 with the angle computed in float16 (half-precision
     * position embeddings). */
    DERIVED("rope.bad.f16_angle",              QF_OP_ROPE,
            "known-bad: RoPE with the angle rounded to float16 (shows at positions > 0)",
            rope_f32,   _qf_cpu_rope_run,            _qf_cpu_rope_supports, DEFECT(_QF_DEFECT_ROPE_F16_ANGLE)),
    /* layernorm.cpu.welford.f32 with M2 += delta^2 (Welford's update
     * without its (k - 1) / k factor). */
    DERIVED("layernorm.bad.welford_sq",        QF_OP_LAYERNORM,
            "known-bad: Welford LayerNorm adding delta^2 to M2 (no (k-1)/k factor; shows for cols > 1)",
            welford_f32, _qf_cpu_layernorm_welford_run, _qf_cpu_rmsnorm_supports,
            DEFECT(_QF_DEFECT_WELFORD_NO_FACTOR)),
    /* l2norm.cpu.f32 summing its squares in float16 (a half-precision
     * reduction buffer) while claiming float32. */
    DERIVED("l2norm.bad.f16_sumsq",            QF_OP_L2NORM,
            "known-bad: L2 normalization whose sum of squares is rounded to float16 (shows on random rows)",
            l2norm_f32, _qf_cpu_l2norm_run, _qf_cpu_l2norm_supports, DEFECT(_QF_DEFECT_L2NORM_F16_SUMSQ)),
};
/* clang-format on */

const qf_kernel *qf_kernels_bad(size_t *n)
{
    if (n)
        *n = sizeof bad_kernels / sizeof bad_kernels[0];
    return bad_kernels;
}
