/* table.c: the built-in CPU kernels and their claims (qf_kernel.h).
 *
 * One row per kernel; the arithmetic each claims is written out field by
 * field next to the code that does it (gemm.c, softmax.c, rmsnorm.c), and
 * docs/kernels.md lists them.  More kernels come with kernels/models.
 */
#include <stddef.h>
#include <stdint.h>

#include "_cpu.h"
#include "qf_kernel.h"

/* float32 accumulator (and compute format), one rounding per step, nearest
 * even, sequential, nearest-even output; bitwise deterministic, also across
 * thread counts. */
#define CLAIM_F32_SEQ                                                                                        \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }

/* The candidate GEMMs (gemm_fast.c): 16 interleaved float32 lanes added
 * in order at the end = split-K with 16 partials (docs/bounds.md). */
#define CLAIM_F32_SPLITK(S)                                                                                  \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SPLITK, .split_k = S, .out_round = QF_ROUND_RNE, .max_ulp = 0,                   \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }
/* float16 accumulator, one rounding per fp16 FMA, sequential. */
#define CLAIM_F16_SEQ                                                                                        \
    {                                                                                                        \
        .acc_format = QF_FLOAT16, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }

/* Algorithms of gemm_fast.c, passed in kernel->user (its gf_algo). */
#define GF_BLOCKED ((void *)(intptr_t)0)
#define GF_TF32    ((void *)(intptr_t)1)
#define GF_FP8     ((void *)(intptr_t)2)
#define GF_SPLITK4 ((void *)(intptr_t)3)
#define GF_F16ACC  ((void *)(intptr_t)4)

#define FP8_TUPLE(NAME, FA, FB, FO)                                                                          \
    { .name = NAME, .in = { FA, FB, FO }, .out = { FO },                                                     \
      .in_scale = { QF_SCALE_TENSOR, QF_SCALE_TENSOR, QF_SCALE_NONE },                                       \
      .in_scale_format = { QF_FLOAT32, QF_FLOAT32, QF_FLOAT32 }, .arith = CLAIM_F32_SPLITK(16) }

/* clang-format off */
static const qf_dtype_tuple gemm_f32[] = {
    { .name = "f32",  .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32 },  .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple gemm_bf16[] = {
    { .name = "bf16", .in = { QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16 }, .out = { QF_BFLOAT16 }, .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple softmax_f32[] = {
    { .name = "f32",  .in = { QF_FLOAT32 },                            .out = { QF_FLOAT32 },  .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple rmsnorm_f32[] = {
    { .name = "f32",  .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32 },  .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple gemm_blocked_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32, QF_FLOAT32, QF_FLOAT32 }, .out = { QF_FLOAT32 }, .arith = CLAIM_F32_SPLITK(16) },
};
static const qf_dtype_tuple gemm_f16_f32acc[] = {
    { .name = "f16",      .in = { QF_FLOAT16, QF_FLOAT16, QF_FLOAT16 }, .out = { QF_FLOAT16 }, .arith = CLAIM_F32_SPLITK(16) },
    { .name = "f16_f32",  .in = { QF_FLOAT16, QF_FLOAT16, QF_FLOAT32 }, .out = { QF_FLOAT32 }, .arith = CLAIM_F32_SPLITK(16) },
};
static const qf_dtype_tuple gemm_tf32[] = {
    { .name = "tf32",     .in = { QF_TF32,    QF_TF32,    QF_FLOAT32 }, .out = { QF_FLOAT32 }, .arith = CLAIM_F32_SPLITK(16) },
};
static const qf_dtype_tuple gemm_splitk4_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32, QF_FLOAT32, QF_FLOAT32 }, .out = { QF_FLOAT32 }, .arith = CLAIM_F32_SPLITK(4) },
};
static const qf_dtype_tuple gemm_f16acc[] = {
    { .name = "f16",      .in = { QF_FLOAT16, QF_FLOAT16, QF_FLOAT16 }, .out = { QF_FLOAT16 }, .arith = CLAIM_F16_SEQ },
};
static const qf_dtype_tuple gemm_fp8[] = {
    FP8_TUPLE("e4m3_e4m3_bf16",   QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_BFLOAT16),
    FP8_TUPLE("e4m3_e4m3_f32",    QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_FLOAT32),
    FP8_TUPLE("e5m2_e5m2_bf16",   QF_FLOAT8_E5M2,     QF_FLOAT8_E5M2,     QF_BFLOAT16),
    FP8_TUPLE("e4m3_e5m2_bf16",   QF_FLOAT8_E4M3FN,   QF_FLOAT8_E5M2,     QF_BFLOAT16),
    FP8_TUPLE("e5m2_e4m3_bf16",   QF_FLOAT8_E5M2,     QF_FLOAT8_E4M3FN,   QF_BFLOAT16),
    FP8_TUPLE("e4m3fnuz_bf16",    QF_FLOAT8_E4M3FNUZ, QF_FLOAT8_E4M3FNUZ, QF_BFLOAT16),
    FP8_TUPLE("e5m2fnuz_bf16",    QF_FLOAT8_E5M2FNUZ, QF_FLOAT8_E5M2FNUZ, QF_BFLOAT16),
    FP8_TUPLE("e4m3fnuz_f32",     QF_FLOAT8_E4M3FNUZ, QF_FLOAT8_E4M3FNUZ, QF_FLOAT32),
};
static const qf_dtype_tuple attention_naive[] = {
    { .name = "f32",      .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32,  QF_FLOAT32 }, .arith = CLAIM_F32_SEQ },
    { .name = "bf16",     .in = { QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16 }, .out = { QF_BFLOAT16, QF_FLOAT32 }, .arith = CLAIM_F32_SEQ },
};
static const qf_dtype_tuple layernorm_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32 },  .arith = CLAIM_F32_SEQ },
};
/* Online softmax: the derived bound, online over tiles of 1 (softmax_online.c). */
static const qf_dtype_tuple softmax_online_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32 }, .out = { QF_FLOAT32 },
      .arith = { .acc_format = QF_FLOAT32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = QF_FLOAT32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,
                 .deterministic = 1, .deterministic_threads = 1, .attn_kv_tile = 1 } },
};
/* Activations: the derived bound (qf_bound_activation) with elem_ulp 4
 * for glibc's erfcf (activation.c says why). */
static const qf_dtype_tuple activation_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32, QF_FLOAT32 }, .out = { QF_FLOAT32 },
      .arith = { .acc_format = QF_FLOAT32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = QF_FLOAT32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,
                 .elem_ulp = 4, .deterministic = 1, .deterministic_threads = 1 } },
};
/* MoE router weights: a measured max_ulp (moe_router.c says why). */
static const qf_dtype_tuple moe_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32, QF_FLOAT32 }, .out = { QF_FLOAT32, QF_FLOAT32 },
      .arith = { .acc_format = QF_FLOAT32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = QF_FLOAT32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 256,
                 .deterministic = 1, .deterministic_threads = 1 } },
};
/* Flash attention (attention_flash.c): the float32 claim plus the KV tile
 * of its online softmax and the format P is rounded to before P V. */
#define CLAIM_FLASH(TILE, PF)                                                                                \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1, .attn_kv_tile = TILE,                 \
        .attn_p_format = PF, .var_algo = QF_VAR_TWO_PASS                                                     \
    }
static const qf_dtype_tuple attention_flash[] = {
    { .name = "f32",      .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32,  QF_FLOAT32 }, .arith = CLAIM_FLASH(16, QF_FLOAT64) },
    { .name = "bf16",     .in = { QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16 }, .out = { QF_BFLOAT16, QF_FLOAT32 }, .arith = CLAIM_FLASH(16, QF_FLOAT64) },
};
static const qf_dtype_tuple attention_flash_bf16p[] = {
    { .name = "bf16",     .in = { QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16 }, .out = { QF_BFLOAT16, QF_FLOAT32 }, .arith = CLAIM_FLASH(16, QF_BFLOAT16) },
    { .name = "bf16_f32", .in = { QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16 }, .out = { QF_FLOAT32,  QF_FLOAT32 }, .arith = CLAIM_FLASH(16, QF_BFLOAT16) },
};
static const _qf_cpu_flash_cfg flash_f32_cfg = { .kv_tile = 16, .p_format = QF_FLOAT32 };
static const _qf_cpu_flash_cfg flash_bf16p_cfg = { .kv_tile = 16, .p_format = QF_BFLOAT16 };
/* LayerNorm with Welford's variance: the float32 claim, var_algo Welford. */
static const qf_dtype_tuple layernorm_welford_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32,  QF_FLOAT32,  QF_FLOAT32 },  .out = { QF_FLOAT32 },
      .arith = { .acc_format = QF_FLOAT32, .block_fma = 1, .acc_round = QF_ROUND_RNE, .promote_format = QF_FLOAT32,
                 .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .deterministic = 1,
                 .deterministic_threads = 1, .attn_p_format = QF_FLOAT64, .var_algo = QF_VAR_WELFORD } },
};
/* RoPE: the float32 claim; the bound is derived (qf_bound_rope). */
static const qf_dtype_tuple rope_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32 }, .out = { QF_FLOAT32 }, .arith = CLAIM_F32_SEQ },
};

#define KERNEL_CFG(NAME, OP, DESC, DTYPES, RUN, SUPPORTS, CFG)                                  \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME,    \
      .op = OP, .kind = QF_KERNEL_OPTIMIZED, .description = DESC, .backend = "cpu",            \
      .archs = "cpu", .simulates = NULL, .dtypes = DTYPES,                                     \
      .n_dtypes = sizeof DTYPES / sizeof DTYPES[0], .run = RUN, .supports = SUPPORTS,          \
      .user = (void *)(CFG) }

/* ---- Quantized-operand GEMMs (gemm_quant.c; docs/bounds.md "Scaled and
 * integer GEMM" derives each claim). */
#define QG_FP8_CHANNEL ((void *)(intptr_t)0)
#define QG_MX          ((void *)(intptr_t)1)
#define QG_NVFP4       ((void *)(intptr_t)2)
#define QG_INT8        ((void *)(intptr_t)3)
#define QG_W4A16       ((void *)(intptr_t)4)

/* float32 partial sums of P products promoted into a float32 accumulator,
 * or (block B) exact block sums added with one rounding each. */
#define CLAIM_F32_PROMOTE(P)                                                                                 \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = P, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }
#define CLAIM_F32_BLOCK(B)                                                                                   \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = B, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                                        \
    }
/* int32 accumulation, exact (ABI 3: acc_kind int32, wrap; K <= 131071 is
 * declined beyond, so no sum overflows).  acc_format stays float64: the
 * range note of qualify/ops/gemm_range.c reads it. */
#define CLAIM_EXACT_INT                                                                                      \
    {                                                                                                        \
        .acc_format = QF_FLOAT64, .acc_frac_bits = 0, .block_fma = 1, .acc_round = QF_ROUND_RNE,             \
        .align_truncates = 0, .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT64,          \
        .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = QF_ROUND_RNE, .max_ulp = 0,               \
        .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1, .acc_kind = QF_ACC_INT32,             \
        .acc_overflow = QF_OVERFLOW_WRAP                                                                     \
    }
#define QG_TUPLE(NAME, FA, FB, FO, SA, SB, SF, BLK, CLAIM)                                                   \
    { .name = NAME, .in = { FA, FB, FO }, .out = { FO }, .in_scale = { SA, SB, QF_SCALE_NONE },              \
      .in_scale_format = { SF, SF, QF_FLOAT32 }, .in_scale_block = { BLK, BLK, 0 }, .arith = CLAIM }
#define FP8CH(NAME, FA, FB, FO)                                                                              \
    QG_TUPLE(NAME, FA, FB, FO, QF_SCALE_ROW, QF_SCALE_COL, QF_FLOAT32, 0, CLAIM_F32_PROMOTE(128))
#define MX(NAME, FA, FB, FO)                                                                                 \
    QG_TUPLE(NAME, FA, FB, FO, QF_SCALE_BLOCK, QF_SCALE_BLOCK, QF_FLOAT8_E8M0FNU, 32, CLAIM_F32_PROMOTE(32))
#define NVFP4(NAME, FO)                                                                                      \
    QG_TUPLE(NAME, QF_FLOAT4_E2M1FN, QF_FLOAT4_E2M1FN, FO, QF_SCALE_BLOCK, QF_SCALE_BLOCK, QF_FLOAT8_E4M3FN, \
             16, CLAIM_F32_BLOCK(16))
#define W4A16(NAME, G)                                                                                       \
    { .name = NAME, .in = { QF_BFLOAT16, QF_INT4, QF_BFLOAT16 }, .out = { QF_BFLOAT16 },                     \
      .in_scale = { QF_SCALE_NONE, QF_SCALE_BLOCK, QF_SCALE_NONE },                                          \
      .in_scale_format = { QF_FLOAT32, QF_BFLOAT16, QF_FLOAT32 }, .in_scale_block = { 0, G, 0 },             \
      .arith = CLAIM_F32_PROMOTE(G) }

/* clang-format off */
static const qf_dtype_tuple gemm_fp8_channel[] = {
    FP8CH("e4m3_e4m3_bf16",  QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_BFLOAT16),
    FP8CH("e4m3_e4m3_f32",   QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_FLOAT32),
    FP8CH("e5m2_e5m2_bf16",  QF_FLOAT8_E5M2,     QF_FLOAT8_E5M2,     QF_BFLOAT16),
    FP8CH("e4m3_e5m2_bf16",  QF_FLOAT8_E4M3FN,   QF_FLOAT8_E5M2,     QF_BFLOAT16),
    FP8CH("e4m3fnuz_bf16",   QF_FLOAT8_E4M3FNUZ, QF_FLOAT8_E4M3FNUZ, QF_BFLOAT16),
    FP8CH("e5m2fnuz_bf16",   QF_FLOAT8_E5M2FNUZ, QF_FLOAT8_E5M2FNUZ, QF_BFLOAT16),
};
static const qf_dtype_tuple gemm_mxfp8[] = {
    MX("e4m3_e4m3_bf16",     QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_BFLOAT16),
    MX("e4m3_e4m3_f32",      QF_FLOAT8_E4M3FN,   QF_FLOAT8_E4M3FN,   QF_FLOAT32),
    MX("e5m2_e5m2_bf16",     QF_FLOAT8_E5M2,     QF_FLOAT8_E5M2,     QF_BFLOAT16),
    MX("e4m3_e5m2_bf16",     QF_FLOAT8_E4M3FN,   QF_FLOAT8_E5M2,     QF_BFLOAT16),
};
static const qf_dtype_tuple gemm_mxfp4[] = {
    MX("e2m1_e2m1_bf16",     QF_FLOAT4_E2M1FN,   QF_FLOAT4_E2M1FN,   QF_BFLOAT16),
    MX("e2m1_e2m1_f32",      QF_FLOAT4_E2M1FN,   QF_FLOAT4_E2M1FN,   QF_FLOAT32),
};
static const qf_dtype_tuple gemm_nvfp4[] = {
    NVFP4("e2m1_e2m1_bf16",  QF_BFLOAT16),
    NVFP4("e2m1_e2m1_f32",   QF_FLOAT32),
};
static const qf_dtype_tuple gemm_int8[] = {
    { .name = "i8_i8_i32", .in = { QF_INT8, QF_INT8, QF_INT32 }, .out = { QF_INT32 }, .arith = CLAIM_EXACT_INT },
};
static const qf_dtype_tuple gemm_w4a16[] = {
    W4A16("bf16_i4_g32_bf16",  32),
    W4A16("bf16_i4_g64_bf16",  64),
    W4A16("bf16_i4_g128_bf16", 128),
};
/* L2 normalization: float32, or bfloat16 in and out with float32 compute
 * (l2norm.c); the derived bound (qf_bound_l2norm). */
static const qf_dtype_tuple l2norm_f32[] = {
    { .name = "f32",      .in = { QF_FLOAT32 },  .out = { QF_FLOAT32 },  .arith = CLAIM_F32_SEQ },
    { .name = "bf16",     .in = { QF_BFLOAT16 }, .out = { QF_BFLOAT16 }, .arith = CLAIM_F32_SEQ },
};
/* clang-format on */

#define KERNEL_L(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS, LAYOUTS)                       \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME, \
      .op = OP, .kind = KIND, .description = DESC, .backend = "cpu", .archs = "cpu",        \
      .simulates = NULL, .dtypes = DTYPES, .n_dtypes = sizeof DTYPES / sizeof DTYPES[0],     \
      .run = RUN, .supports = SUPPORTS, .layouts = LAYOUTS }
#define KERNEL(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS) \
    KERNEL_L(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS, 0)
/* One that honours any strides (its loads and stores go through
 * _qf_cpu_off): it declares every operand layout (qf_kernel.h). */
#define KERNEL_STRIDED(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS) \
    KERNEL_L(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS, QF_LAYOUT_ALL)
#define KERNEL_U(NAME, DESC, DTYPES, ALGO)                                                  \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME, \
      .op = QF_OP_GEMM, .kind = QF_KERNEL_OPTIMIZED, .description = DESC, .backend = "cpu", \
      .archs = "cpu", .simulates = NULL, .dtypes = DTYPES,                                  \
      .n_dtypes = sizeof DTYPES / sizeof DTYPES[0], .run = _qf_cpu_gemm_fast_run,           \
      .supports = _qf_cpu_gemm_fast_supports, .user = ALGO }

#define KERNEL_Q(NAME, DESC, DTYPES, ALGO)                                                  \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME, \
      .op = QF_OP_GEMM, .kind = QF_KERNEL_OPTIMIZED, .description = DESC, .backend = "cpu", \
      .archs = "cpu", .simulates = NULL, .dtypes = DTYPES,                                  \
      .n_dtypes = sizeof DTYPES / sizeof DTYPES[0], .run = _qf_cpu_gemm_quant_run,          \
      .supports = _qf_cpu_gemm_quant_supports, .user = ALGO }

static const qf_kernel cpu_kernels[] = {
    KERNEL_STRIDED("gemm.cpu.naive.f32", QF_OP_GEMM, QF_KERNEL_REFERENCE,
           "float32 in, float32 sequential sum (products and sums rounded), float32 out",
           gemm_f32,    _qf_cpu_gemm_f32_run,    _qf_cpu_gemm_supports),
    KERNEL("gemm.cpu.bf16_f32acc", QF_OP_GEMM,    QF_KERNEL_REFERENCE,
           "bfloat16 in, exact products, float32 sequential sum, bfloat16 out (nearest even)",
           gemm_bf16,   _qf_cpu_gemm_bf16_run,   _qf_cpu_gemm_supports),
    KERNEL("softmax.cpu.f32",      QF_OP_SOFTMAX, QF_KERNEL_REFERENCE,
           "float32 max-subtracted softmax: expf, sequential float32 sum, division",
           softmax_f32, _qf_cpu_softmax_f32_run, _qf_cpu_softmax_supports),
    KERNEL("rmsnorm.cpu.f32",      QF_OP_RMSNORM, QF_KERNEL_REFERENCE,
           "float32 RMSNorm: sequential sum of squares, 1/sqrtf, x * r * w + b",
           rmsnorm_f32, _qf_cpu_rmsnorm_f32_run, _qf_cpu_rmsnorm_supports),
    KERNEL_U("gemm.cpu.blocked.f32",
             "float32, cache-blocked, 16 interleaved float32 lanes added in order (split-K 16)",
             gemm_blocked_f32, GF_BLOCKED),
    KERNEL_U("gemm.cpu.f16_f32acc",
             "float16 in, exact products, 16 interleaved float32 lanes (split-K 16), float16/float32 out",
             gemm_f16_f32acc, GF_BLOCKED),
    KERNEL_U("gemm.cpu.f16acc",
             "float16 in, float16 accumulator (one fp16 FMA rounding per step, sequential)",
             gemm_f16acc, GF_F16ACC),
    KERNEL_U("gemm.cpu.splitk4.f32",
             "float32, split-K: 4 contiguous K slices, float32 partials, summed in order",
             gemm_splitk4_f32, GF_SPLITK4),
    KERNEL_U("gemm.cpu.tf32",
             "tf32 in (rounded nearest ties-away), exact products, 16 float32 lanes (split-K 16)",
             gemm_tf32, GF_TF32),
    KERNEL_U("gemm.cpu.fp8",
             "FP8 in with per-tensor float32 scales, exact products, 16 float32 lanes, scales in one rounding",
             gemm_fp8, GF_FP8),
    KERNEL("attention.cpu.naive.f32", QF_OP_ATTENTION, QF_KERNEL_OPTIMIZED,
           "float32 scores materialized, max-subtracted expf, O = (P V) / l, sequential float32 sums; GQA, causal",
           attention_naive, _qf_cpu_attention_naive_run, _qf_cpu_attention_supports),
    KERNEL("layernorm.cpu.twopass.f32", QF_OP_LAYERNORM, QF_KERNEL_OPTIMIZED,
           "float32 two-pass LayerNorm: sequential mean, sequential sum of (x - mu)^2, 1/sqrtf, d * r * w + b",
           layernorm_f32, _qf_cpu_layernorm_twopass_run, _qf_cpu_rmsnorm_supports),
    KERNEL("softmax.cpu.online.f32", QF_OP_SOFTMAX, QF_KERNEL_OPTIMIZED,
           "float32 online softmax: running max and rescaled sum in one pass, then expf / l",
           softmax_online_f32, _qf_cpu_softmax_online_run, _qf_cpu_softmax_online_supports),
    KERNEL("activation.cpu.f32", QF_OP_ACTIVATION, QF_KERNEL_OPTIMIZED,
           "float32 gelu (erfc form, tanh as sigmoid), silu, sigmoid, relu; GLU: act(gate) * up",
           activation_f32, _qf_cpu_activation_run, _qf_cpu_activation_supports),
    KERNEL("moe_router.cpu.softmax_topk", QF_OP_MOE_ROUTER, QF_KERNEL_OPTIMIZED,
           "float32 router: top-k on the logits, expf(l - max), softmax or renormalized weights",
           moe_f32, _qf_cpu_moe_run, _qf_cpu_moe_supports),
    KERNEL_Q("gemm.cpu.fp8_channel",
             "FP8 in, float32 scale per row of a / column of b, float32 sums promoted every 128, 2 scale roundings",
             gemm_fp8_channel, QG_FP8_CHANNEL),
    KERNEL_Q("gemm.cpu.mxfp8",
             "MXFP8 (e8m0 per 32 along K): float32 block sums of 32, scaled by 2^(Xa+Xb), float32 accumulator",
             gemm_mxfp8, QG_MX),
    KERNEL_Q("gemm.cpu.mxfp4",
             "MXFP4 e2m1 (e8m0 per 32 along K): float32 block sums of 32, scaled by 2^(Xa+Xb), float32 accumulator",
             gemm_mxfp4, QG_MX),
    KERNEL_Q("gemm.cpu.nvfp4",
             "NVFP4 e2m1 (e4m3 per 16, float32 global): exact block sums, float32 accumulator, float32 alpha",
             gemm_nvfp4, QG_NVFP4),
    KERNEL_Q("gemm.cpu.int8",
             "int8 in, exact int32 accumulation (K <= 131071), int32 out",
             gemm_int8, QG_INT8),
    KERNEL_Q("gemm.cpu.w4a16",
             "bfloat16 a, int4 b with bfloat16 group scales along K: float32 group sums, scaled, float32 accumulator",
             gemm_w4a16, QG_W4A16),
    KERNEL_CFG("attention.cpu.flash.f32", QF_OP_ATTENTION,
               "flash-style: KV tiles of 16, online softmax with float32 running max and sum rescaled per tile; GQA, causal",
               attention_flash, _qf_cpu_attention_flash_run, _qf_cpu_attention_supports, &flash_f32_cfg),
    KERNEL_CFG("attention.cpu.flash_bf16p", QF_OP_ATTENTION,
               "flash-style, bfloat16 in, P rounded to bfloat16 before P V (FlashAttention-2/3); tiles of 16",
               attention_flash_bf16p, _qf_cpu_attention_flash_run, _qf_cpu_attention_supports, &flash_bf16p_cfg),
    KERNEL("layernorm.cpu.welford.f32", QF_OP_LAYERNORM, QF_KERNEL_OPTIMIZED,
           "float32 LayerNorm, Welford's one-pass running mean and M2, 1/sqrtf, d * r * w + b",
           layernorm_welford_f32, _qf_cpu_layernorm_welford_run, _qf_cpu_rmsnorm_supports),
    KERNEL_CFG("rope.cpu.f32", QF_OP_ROPE,
               "float32 RoPE, interleaved or half layout: float32 inv_freq and angle, cosf / sinf, rotate",
               rope_f32, _qf_cpu_rope_run, _qf_cpu_rope_supports, NULL),
    KERNEL("l2norm.cpu.f32", QF_OP_L2NORM, QF_KERNEL_REFERENCE,
           "float32 L2 normalization: sequential float32 sum of squares, sqrtf, clamp at eps, x / d",
           l2norm_f32, _qf_cpu_l2norm_run, _qf_cpu_l2norm_supports),
};
/* clang-format on */

const qf_kernel *qf_kernels_cpu(size_t *n)
{
    if (n)
        *n = sizeof cpu_kernels / sizeof cpu_kernels[0];
    return cpu_kernels;
}
