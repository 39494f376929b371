/* table.c: the CUDA kernels' records and claims (kernels.cu computes them).
 *
 * Tensor-core arithmetic differs per architecture, so a tensor-core kernel
 * is registered once per architecture family it runs on, each record
 * claiming that family's published arithmetic (docs/numerics.md#matrix-units "How
 * matrix units accumulate": A100 fp16/bf16 block 8 with 24 fraction bits,
 * H100 fp16/bf16 block 16 with 25, H100 fp8 block 32 with 13 and L40S fp8
 * block 16 with 13, alignment truncating, round toward zero).  The claims
 * are taken from the CPU models of the same hardware (qf_model_claim of
 * kernels/models presets a100.*, h100.*, l40s.e4m3), so the models and
 * these kernels cannot drift apart; tests/cuda/t-model-vs-hw checks the
 * models against the instructions themselves.  Where no published fact
 * exists (bf16 on sm_89, e5m2 on sm_89) no record is registered: such a
 * case is UNSUPPORTED, not claimed.
 *
 * Vendor paths (cuBLAS, cuBLASLt): their summation order is not documented,
 * so they claim the sequential order, the longest rounding chain and so the
 * loosest bound of the usual orders (split-K and trees have shorter
 * chains), with the matrix-unit facts of the architecture.  cuBLAS is
 * bitwise reproducible run to run on one GPU model (cuBLAS documentation,
 * "Results reproducibility"), claimed as deterministic.
 *
 * This file is part of libqualify, not of the CUDA module: the records,
 * their claims and the host-side supports checks are static data and host
 * code, so `qualify list kernels` shows them without loading CUDA.  Their
 * run, init and fini entries forward to kernels.cu in libqualify_cuda.so
 * (kernels/_gpu_fwd.h), loaded on the first call.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "_gpu_fwd.h"
#include "_gpu_supports.h"
#include "qf_block.h"
#include "qf_kernel.h"
#include "qf_model.h"
#include "qf_ref.h"

#define N_MAX_TUPLES 8

typedef struct built {
    qf_dtype_tuple t[N_MAX_TUPLES];
    size_t n;
} built;

/* A tuple whose claim is the model preset's (block FMA, alignment, RTZ),
 * with a nearest-even output conversion (the kernels' own rounding). */
static void add_tuple(built *b, const char *name, qf_format_id a, qf_format_id bb, qf_format_id out,
                      int scaled, const char *preset)
{
    qf_dtype_tuple *t = &b->t[b->n++];
    const qf_model_params *p = qf_model_preset(preset);
    memset(t, 0, sizeof *t);
    t->name = name;
    t->in[0] = a;
    t->in[1] = bb;
    t->in[2] = out;
    t->out[0] = out;
    if (scaled) {
        t->in_scale[0] = t->in_scale[1] = QF_SCALE_TENSOR;
        t->in_scale_format[0] = t->in_scale_format[1] = t->in_scale_format[2] = QF_FLOAT32;
    }
    t->arith = qf_model_claim(p);
    t->arith.out_round = QF_ROUND_RNE;
    t->arith.sum_order = QF_SUM_SEQUENTIAL;
    t->arith.deterministic = 1;
    t->arith.deterministic_threads = 1; /* the thread count does not reach the device */
}

static built wmma_bf16_sm80, wmma_bf16_sm90, wmma_f16_sm80, wmma_f16_sm90;
static built fp8_sm89, fp8_sm90, lt_sm89, lt_sm90;
static built blas_bf16_sm80, blas_bf16_sm90, blas_f16_sm80, blas_f16_sm90, blas_f32;
static built norm_f32, softmax_f32, attn_bf16, quant_fp8;

static qf_arith_claim f32_claim(void)
{
    qf_arith_claim c = qf_arith_claim_default();
    c.deterministic = 1;
    c.deterministic_threads = 1;
    return c;
}

static void build_tables(void)
{
    qf_dtype_tuple *t;
    add_tuple(&wmma_bf16_sm80, "bf16", QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16, 0, "a100.bf16");
    add_tuple(&wmma_bf16_sm80, "bf16_f32", QF_BFLOAT16, QF_BFLOAT16, QF_FLOAT32, 0, "a100.bf16");
    add_tuple(&wmma_bf16_sm90, "bf16", QF_BFLOAT16, QF_BFLOAT16, QF_BFLOAT16, 0, "h100.bf16");
    add_tuple(&wmma_bf16_sm90, "bf16_f32", QF_BFLOAT16, QF_BFLOAT16, QF_FLOAT32, 0, "h100.bf16");
    add_tuple(&wmma_f16_sm80, "f16", QF_FLOAT16, QF_FLOAT16, QF_FLOAT16, 0, "a100.f16");
    add_tuple(&wmma_f16_sm80, "f16_f32", QF_FLOAT16, QF_FLOAT16, QF_FLOAT32, 0, "a100.f16");
    add_tuple(&wmma_f16_sm90, "f16", QF_FLOAT16, QF_FLOAT16, QF_FLOAT16, 0, "h100.f16");
    add_tuple(&wmma_f16_sm90, "f16_f32", QF_FLOAT16, QF_FLOAT16, QF_FLOAT32, 0, "h100.f16");
    blas_bf16_sm80 = wmma_bf16_sm80;
    blas_bf16_sm90 = wmma_bf16_sm90;
    blas_f16_sm80 = wmma_f16_sm80;
    blas_f16_sm90 = wmma_f16_sm90;
    /* FP8: e4m3 only on sm_89 (L40S facts are for e4m3); e4m3 and e5m2 in
     * every combination on sm_90 (H100 fp8 facts cover both). */
    add_tuple(&fp8_sm89, "e4m3_e4m3_bf16", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_BFLOAT16, 1, "l40s.e4m3");
    add_tuple(&fp8_sm89, "e4m3_e4m3_f32", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_FLOAT32, 1, "l40s.e4m3");
    add_tuple(&fp8_sm90, "e4m3_e4m3_bf16", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_BFLOAT16, 1, "h100.e4m3");
    add_tuple(&fp8_sm90, "e4m3_e4m3_f32", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_FLOAT32, 1, "h100.e4m3");
    add_tuple(&fp8_sm90, "e5m2_e5m2_bf16", QF_FLOAT8_E5M2, QF_FLOAT8_E5M2, QF_BFLOAT16, 1, "h100.e5m2");
    add_tuple(&fp8_sm90, "e4m3_e5m2_bf16", QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_BFLOAT16, 1, "h100.e4m3");
    add_tuple(&fp8_sm90, "e5m2_e4m3_bf16", QF_FLOAT8_E5M2, QF_FLOAT8_E4M3FN, QF_BFLOAT16, 1, "h100.e4m3");
    /* cuBLASLt FP8: no e5m2 x e5m2 (cuBLASLt documentation,
     * cublasLtMatmul FP8 type combinations). */
    lt_sm89 = fp8_sm89;
    add_tuple(&lt_sm90, "e4m3_e4m3_bf16", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_BFLOAT16, 1, "h100.e4m3");
    add_tuple(&lt_sm90, "e4m3_e4m3_f32", QF_FLOAT8_E4M3FN, QF_FLOAT8_E4M3FN, QF_FLOAT32, 1, "h100.e4m3");
    add_tuple(&lt_sm90, "e4m3_e5m2_bf16", QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_BFLOAT16, 1, "h100.e4m3");
    add_tuple(&lt_sm90, "e5m2_e4m3_bf16", QF_FLOAT8_E5M2, QF_FLOAT8_E4M3FN, QF_BFLOAT16, 1, "h100.e4m3");
    /* float32 cuBLAS: CUDA-core FMAs, float32 accumulator (claimed as a
     * sequential float32 sum: FMA only removes roundings). */
    t = &blas_f32.t[blas_f32.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32";
    t->in[0] = t->in[1] = t->in[2] = t->out[0] = QF_FLOAT32;
    t->arith = f32_claim();
    /* Row reductions: per-thread sequential sums then a 256-leaf tree; the
     * sequential claim's chain (cols) is longer than cols / 256 + 8. */
    t = &norm_f32.t[norm_f32.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32";
    t->in[0] = t->in[1] = t->in[2] = t->out[0] = QF_FLOAT32;
    t->arith = f32_claim();
    t = &softmax_f32.t[softmax_f32.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32";
    t->in[0] = t->out[0] = QF_FLOAT32;
    t->arith = f32_claim(); /* elem_ulp 0 = 2 ulp: CUDA's documented expf */
    /* Attention: P is rounded to bfloat16 before P V, so the claimed
     * compute format is bfloat16 (docs/gpu.md). */
    t = &attn_bf16.t[attn_bf16.n++];
    memset(t, 0, sizeof *t);
    t->name = "bf16";
    t->in[0] = t->in[1] = t->in[2] = QF_BFLOAT16;
    t->out[0] = QF_BFLOAT16;
    t->out[1] = QF_FLOAT32;
    t->arith = f32_claim();
    t->arith.acc_format = QF_BFLOAT16;
    /* Quantizers: exact (every code must equal the block module's). */
    t = &quant_fp8.t[quant_fp8.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32_e4m3";
    t->in[0] = QF_FLOAT32;
    t->out[0] = QF_FLOAT8_E4M3FN;
    t->arith = f32_claim();
    t = &quant_fp8.t[quant_fp8.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32_e5m2";
    t->in[0] = QF_FLOAT32;
    t->out[0] = QF_FLOAT8_E5M2;
    t->arith = f32_claim();
}

/* The kernels in libqualify_cuda.so (kernels/cuda/_cuda_kernels.h). */
QF_GPU_FWD_RUN("cuda", qf_cuda_gemm_wmma_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_gemm_fp8_mma_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_cublas_gemm_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_cublaslt_fp8_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_rmsnorm_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_softmax_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_attention_run)
QF_GPU_FWD_RUN("cuda", qf_cuda_quantize_run)
QF_GPU_FWD_INIT("cuda", qf_cuda_cublas_init)
QF_GPU_FWD_INIT("cuda", qf_cuda_cublaslt_init)
QF_GPU_FWD_FINI("cuda", qf_cuda_cublas_fini)
QF_GPU_FWD_FINI("cuda", qf_cuda_cublaslt_fini)

static qf_status quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size)
{
    const qf_ref_block_params *p = &op->u.quantize.block;
    int mx = k && k->user != NULL;
    (void)dtype;
    if (op->op != QF_OP_QUANTIZE)
        return QF_EUNSUPPORTED;
    if (mx) {
        if (p->family != QF_REF_BLOCK_MX || p->mx.axis != 1 || p->mx.rule != QF_BLOCK_MX_FLOOR ||
            p->mx.round != QF_ROUND_RNE || (p->mx.elem != QF_FLOAT8_E4M3FN && p->mx.elem != QF_FLOAT8_E5M2) ||
            p->mx.block == 0) {
            snprintf(why, why_size, "MX: e4m3/e5m2 elements, axis 1, the OCP floor rule, nearest even only");
            return QF_EUNSUPPORTED;
        }
        return QF_OK;
    }
    if (p->family != QF_REF_BLOCK_FP8 || p->fp8.granularity != QF_BLOCK_FP8_TENSOR || p->fp8.margin != 0 ||
        p->fp8.amax_epsilon != 0 || p->fp8.pow2 || !p->fp8.saturate || p->fp8.fp32_product ||
        p->fp8.round != QF_ROUND_RNE || (p->fp8.elem != QF_FLOAT8_E4M3FN && p->fp8.elem != QF_FLOAT8_E5M2)) {
        snprintf(
            why, why_size,
            "FP8: per-tensor scale, margin 0, no epsilon or pow2, saturating, exact product, nearest even, "
            "e4m3/e5m2");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_kernel mk(const char *name, qf_op op, qf_kernel_kind kind, const char *desc, const char *archs,
                    const built *b, qf_kernel_run_fn run, qf_kernel_supports_fn sup, qf_kernel_init_fn init,
                    qf_kernel_fini_fn fini)
{
    qf_kernel k;
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof(qf_kernel);
    k.name = name;
    k.op = op;
    k.kind = kind;
    k.description = desc;
    k.backend = "cuda";
    k.archs = archs;
    k.dtypes = b->t;
    k.n_dtypes = b->n;
    k.run = run;
    k.supports = sup;
    k.init = init;
    k.fini = fini;
    k.limits.align_bytes = 256;
    return k;
}

/* Listed in kernels/families.c. */
qf_status qf_cuda_register_kernels(qf_registry *r);

qf_status qf_cuda_register_kernels(qf_registry *r)
{
    static int built_once;
    qf_kernel ks[20];
    size_t n = 0, i;
    const qf_kernel_kind O = QF_KERNEL_OPTIMIZED;
    if (!built_once) {
        build_tables();
        built_once = 1;
    }
#define GEMM_MN(k, mm, nn, kk)                                                                               \
    do {                                                                                                     \
        (k).limits.multiple_of[0] = (mm);                                                                    \
        (k).limits.multiple_of[1] = (nn);                                                                    \
        (k).limits.multiple_of[2] = (kk);                                                                    \
    } while (0)
    ks[n] =
        mk("gemm.cuda.wmma.bf16.sm80", QF_OP_GEMM, O,
           "bfloat16 WMMA 16x16x16 (HMMA), float32 tensor-core accumulator in K order, A100 arithmetic",
           "sm_80", &wmma_bf16_sm80, fwd_qf_cuda_gemm_wmma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cuda.wmma.bf16.sm90", QF_OP_GEMM, O,
               "bfloat16 WMMA 16x16x16 (HMMA), float32 tensor-core accumulator in K order, H100 arithmetic",
               "sm_90 sm_90a", &wmma_bf16_sm90, fwd_qf_cuda_gemm_wmma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cuda.wmma.f16.sm80", QF_OP_GEMM, O,
               "float16 WMMA 16x16x16 (HMMA), float32 tensor-core accumulator in K order, A100 arithmetic",
               "sm_80", &wmma_f16_sm80, fwd_qf_cuda_gemm_wmma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cuda.wmma.f16.sm90", QF_OP_GEMM, O,
               "float16 WMMA 16x16x16 (HMMA), float32 tensor-core accumulator in K order, H100 arithmetic",
               "sm_90 sm_90a", &wmma_f16_sm90, fwd_qf_cuda_gemm_wmma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cuda.mma_fp8.sm89", QF_OP_GEMM, O,
               "FP8 mma.sync m16n8k32 (e4m3), per-tensor float32 scales, L40S fp8 arithmetic", "sm_89",
               &fp8_sm89, fwd_qf_cuda_gemm_fp8_mma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 8, 32);
    n++;
    ks[n] =
        mk("gemm.cuda.mma_fp8.sm90", QF_OP_GEMM, O,
           "FP8 mma.sync m16n8k32 (e4m3/e5m2), per-tensor float32 scales, H100 fp8 arithmetic, no promotion",
           "sm_90 sm_90a", &fp8_sm90, fwd_qf_cuda_gemm_fp8_mma_run, _qf_gpu_gemm_supports, NULL, NULL);
    GEMM_MN(ks[n], 16, 8, 32);
    n++;
    ks[n] = mk("gemm.cublaslt.fp8.sm89", QF_OP_GEMM, O,
               "vendor: cuBLASLt FP8 matmul with scale pointers, float32 D, rounded once to the output",
               "sm_89", &lt_sm89, fwd_qf_cuda_cublaslt_fp8_run, _qf_gpu_gemm_supports, fwd_qf_cuda_cublaslt_init,
               fwd_qf_cuda_cublaslt_fini);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cublaslt.fp8.sm90", QF_OP_GEMM, O,
               "vendor: cuBLASLt FP8 matmul with scale pointers, float32 D, rounded once to the output",
               "sm_90 sm_90a", &lt_sm90, fwd_qf_cuda_cublaslt_fp8_run, _qf_gpu_gemm_supports,
               fwd_qf_cuda_cublaslt_init, fwd_qf_cuda_cublaslt_fini);
    GEMM_MN(ks[n], 16, 16, 16);
    n++;
    ks[n] = mk("gemm.cublas.bf16.sm80", QF_OP_GEMM, O, "vendor: cublasGemmEx bfloat16, CUBLAS_COMPUTE_32F",
               "sm_80", &blas_bf16_sm80, fwd_qf_cuda_cublas_gemm_run, _qf_gpu_gemm_supports,
               fwd_qf_cuda_cublas_init, fwd_qf_cuda_cublas_fini);
    n++;
    ks[n] = mk("gemm.cublas.bf16.sm90", QF_OP_GEMM, O, "vendor: cublasGemmEx bfloat16, CUBLAS_COMPUTE_32F",
               "sm_90 sm_90a", &blas_bf16_sm90, fwd_qf_cuda_cublas_gemm_run, _qf_gpu_gemm_supports,
               fwd_qf_cuda_cublas_init, fwd_qf_cuda_cublas_fini);
    n++;
    ks[n] = mk("gemm.cublas.f16.sm80", QF_OP_GEMM, O, "vendor: cublasGemmEx float16, CUBLAS_COMPUTE_32F",
               "sm_80", &blas_f16_sm80, fwd_qf_cuda_cublas_gemm_run, _qf_gpu_gemm_supports,
               fwd_qf_cuda_cublas_init, fwd_qf_cuda_cublas_fini);
    n++;
    ks[n] = mk("gemm.cublas.f16.sm90", QF_OP_GEMM, O, "vendor: cublasGemmEx float16, CUBLAS_COMPUTE_32F",
               "sm_90 sm_90a", &blas_f16_sm90, fwd_qf_cuda_cublas_gemm_run, _qf_gpu_gemm_supports,
               fwd_qf_cuda_cublas_init, fwd_qf_cuda_cublas_fini);
    n++;
    ks[n] =
        mk("gemm.cublas.f32", QF_OP_GEMM, O,
           "vendor: cublasGemmEx float32, CUBLAS_COMPUTE_32F, default math mode (no TF32)", "sm_*", &blas_f32,
           fwd_qf_cuda_cublas_gemm_run, _qf_gpu_gemm_supports, fwd_qf_cuda_cublas_init, fwd_qf_cuda_cublas_fini);
    n++;
    ks[n] = mk("rmsnorm.cuda.f32", QF_OP_RMSNORM, O,
               "float32 RMSNorm, one block per row: strided sums of squares, 256-leaf tree, 1/sqrt, x*r*w+b",
               "sm_*", &norm_f32, fwd_qf_cuda_rmsnorm_run, NULL, NULL, NULL);
    n++;
    ks[n] = mk("softmax.cuda.f32", QF_OP_SOFTMAX, O,
               "float32 softmax, one block per row: tree max, expf, tree sum, division", "sm_*", &softmax_f32,
               fwd_qf_cuda_softmax_run, NULL, NULL, NULL);
    n++;
    ks[n] =
        mk("attention.cuda.flash.bf16", QF_OP_ATTENTION, O,
           "bfloat16 flash-style forward: one warp per query row, online softmax per 32-key tile, P rounded "
           "to bfloat16 before P V, float32 O, causal or none; GQA",
           "sm_*", &attn_bf16, fwd_qf_cuda_attention_run, _qf_gpu_attention_supports, NULL, NULL);
    n++;
    ks[n] =
        mk("quantize.cuda.mxfp8", QF_OP_QUANTIZE, O,
           "MXFP8 (OCP MX, floor rule): per-block amax, E8M0 scale, hardware cvt to e4m3/e5m2 with satfinite",
           "sm_*", &quant_fp8, fwd_qf_cuda_quantize_run, quantize_supports, NULL, NULL);
    ks[n].user = (void *)1; /* MX (kernels/cuda/quantize.cu) */
    n++;
    ks[n] = mk("quantize.cuda.fp8", QF_OP_QUANTIZE, O,
               "FP8 per-tensor scaling: amax, float32 scale fp8_max / amax, exact product converted once "
               "(satfinite)",
               "sm_*", &quant_fp8, fwd_qf_cuda_quantize_run, quantize_supports, NULL, NULL);
    n++;
#undef GEMM_MN
    for (i = 0; i < n; i++) {
        qf_status s = qf_registry_add(r, &ks[i]);
        if (s != QF_OK)
            return s;
    }
    return QF_OK;
}
