/* table.c: the built-in CPU kernels and their claims (qf_kernel.h).
 *
 * One row per kernel; the arithmetic each claims is written out field by
 * field next to the code that does it (gemm.c, softmax.c, rmsnorm.c), and
 * docs/kernels.md lists them.  More kernels come with kernels/models.
 */
#include <stddef.h>

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

#define KERNEL(NAME, OP, KIND, DESC, DTYPES, RUN, SUPPORTS)                                  \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = NAME, \
      .op = OP, .kind = KIND, .description = DESC, .backend = "cpu", .archs = "cpu",        \
      .simulates = NULL, .dtypes = DTYPES, .n_dtypes = sizeof DTYPES / sizeof DTYPES[0],     \
      .run = RUN, .supports = SUPPORTS }

static const qf_kernel cpu_kernels[] = {
    KERNEL("gemm.cpu.naive.f32",   QF_OP_GEMM,    QF_KERNEL_REFERENCE,
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
};
/* clang-format on */

const qf_kernel *qf_kernels_cpu(size_t *n)
{
    if (n)
        *n = sizeof cpu_kernels / sizeof cpu_kernels[0];
    return cpu_kernels;
}
