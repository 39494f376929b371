/* table.c: the HIP kernels' records and claims (kernels.hip computes them).
 *
 * MFMA arithmetic per target, from the CPU models of the same hardware
 * (qf_model_claim of kernels/models presets; docs/numerics.md#matrix-units "How
 * matrix units accumulate"): gfx90a (MI250X) fp16/bf16 groups of 4 summed
 * by a pairwise float32 tree, subnormals flushed, nearest even; gfx940 is a
 * CDNA3 (MI300-series) target and is claimed with the MI300 facts, which
 * were published for gfx942 (an assumption docs/gpu.md states).  gfx942
 * records exist when the build has gfx942 code objects (clang-19,
 * QF_HAVE_HIP_GFX942): the same MFMA GEMM, row kernels, attention and FP8
 * conversion compiled for gfx942, and the FP8 (fnuz) MFMA GEMM with
 * per-tensor scales claiming mi300.e4m3fnuz / mi300.e5m2fnuz, mixed
 * e4m3fnuz x e5m2fnuz in both orders too.  gfx950 is
 * never listed (it needs LLVM 20).  Row reductions and attention claim what
 * the CUDA ones claim (kernels/cuda/table.c).
 *
 * Part of libqualify, as kernels/cuda/table.c is: the run entries forward
 * to libqualify_hip.so (kernels/_gpu_fwd.h), loaded on the first call.
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

typedef struct built {
    qf_dtype_tuple t[8];
    size_t n;
} built;

static built g90_bf16, g90_f16, g940_bf16, g940_f16, norm_f32, softmax_f32, attn_bf16, quant_fnuz;
static built g942_fp8; /* gfx942 bf16/f16 claim what gfx940 claims: g940_* */


static void add_tuple(built *b, const char *name, qf_format_id in, qf_format_id out, const char *preset)
{
    qf_dtype_tuple *t = &b->t[b->n++];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->in[0] = t->in[1] = in;
    t->in[2] = t->out[0] = out;
    t->arith = qf_model_claim(qf_model_preset(preset));
    t->arith.out_round = QF_ROUND_RNE;
    t->arith.sum_order = QF_SUM_SEQUENTIAL;
    t->arith.deterministic = 1;
    t->arith.deterministic_threads = 1;
}

/* An FP8 tuple with one float32 scale per input tensor, as the CUDA FP8
 * kernels declare theirs (kernels/cuda/table.c). */
static void add_fp8_tuple(built *b, const char *name, qf_format_id in, qf_format_id out, const char *preset)
{
    qf_dtype_tuple *t;
    add_tuple(b, name, in, out, preset);
    t = &b->t[b->n - 1];
    t->in_scale[0] = t->in_scale[1] = QF_SCALE_TENSOR;
    t->in_scale_format[0] = t->in_scale_format[1] = t->in_scale_format[2] = QF_FLOAT32;
}

/* A mixed FP8 tuple: a of format fa, b of fb, claimed as the MI300 FP8
 * matrix unit (mi300.e4m3fnuz; mi300.e5m2fnuz claims the same). */
static void add_fp8_mixed(built *b, const char *name, qf_format_id fa, qf_format_id fb, qf_format_id out)
{
    add_fp8_tuple(b, name, fa, out, "mi300.e4m3fnuz");
    b->t[b->n - 1].in[1] = fb;
}

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
    add_tuple(&g90_bf16, "bf16", QF_BFLOAT16, QF_BFLOAT16, "mi250x.bf16");
    add_tuple(&g90_bf16, "bf16_f32", QF_BFLOAT16, QF_FLOAT32, "mi250x.bf16");
    add_tuple(&g90_f16, "f16_f32", QF_FLOAT16, QF_FLOAT32, "mi250x.f16");
    add_tuple(&g940_bf16, "bf16", QF_BFLOAT16, QF_BFLOAT16, "mi300.bf16");
    add_tuple(&g940_bf16, "bf16_f32", QF_BFLOAT16, QF_FLOAT32, "mi300.bf16");
    add_tuple(&g940_f16, "f16_f32", QF_FLOAT16, QF_FLOAT32, "mi300.f16");
    add_fp8_tuple(&g942_fp8, "e4m3fnuz_e4m3fnuz_f32", QF_FLOAT8_E4M3FNUZ, QF_FLOAT32, "mi300.e4m3fnuz");
    add_fp8_tuple(&g942_fp8, "e4m3fnuz_e4m3fnuz_bf16", QF_FLOAT8_E4M3FNUZ, QF_BFLOAT16, "mi300.e4m3fnuz");
    add_fp8_tuple(&g942_fp8, "e5m2fnuz_e5m2fnuz_f32", QF_FLOAT8_E5M2FNUZ, QF_FLOAT32, "mi300.e5m2fnuz");
    add_fp8_tuple(&g942_fp8, "e5m2fnuz_e5m2fnuz_bf16", QF_FLOAT8_E5M2FNUZ, QF_BFLOAT16, "mi300.e5m2fnuz");
    /* Mixed (fp8_bf8, bf8_fp8 MFMA): the MI300 FP8 model's accumulation,
     * which does not depend on the input formats (the product of an
     * e4m3fnuz and an e5m2fnuz value is exact in it as well); each order a
     * tuple of its own, since a suite names a's and b's formats apart. */
    add_fp8_mixed(&g942_fp8, "e4m3fnuz_e5m2fnuz_f32", QF_FLOAT8_E4M3FNUZ, QF_FLOAT8_E5M2FNUZ, QF_FLOAT32);
    add_fp8_mixed(&g942_fp8, "e4m3fnuz_e5m2fnuz_bf16", QF_FLOAT8_E4M3FNUZ, QF_FLOAT8_E5M2FNUZ, QF_BFLOAT16);
    add_fp8_mixed(&g942_fp8, "e5m2fnuz_e4m3fnuz_f32", QF_FLOAT8_E5M2FNUZ, QF_FLOAT8_E4M3FNUZ, QF_FLOAT32);
    add_fp8_mixed(&g942_fp8, "e5m2fnuz_e4m3fnuz_bf16", QF_FLOAT8_E5M2FNUZ, QF_FLOAT8_E4M3FNUZ, QF_BFLOAT16);
    t = &norm_f32.t[norm_f32.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32";
    t->in[0] = t->in[1] = t->in[2] = t->out[0] = QF_FLOAT32;
    t->arith = f32_claim();
    t = &softmax_f32.t[softmax_f32.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32";
    t->in[0] = t->out[0] = QF_FLOAT32;
    t->arith = f32_claim();
    t = &attn_bf16.t[attn_bf16.n++];
    memset(t, 0, sizeof *t);
    t->name = "bf16";
    t->in[0] = t->in[1] = t->in[2] = QF_BFLOAT16;
    t->out[0] = QF_BFLOAT16;
    t->out[1] = QF_FLOAT32;
    t->arith = f32_claim();
    t->arith.acc_format = QF_BFLOAT16; /* P rounded to bfloat16 (docs/gpu.md) */
    /* FP8 fnuz quantization: exact */
    t = &quant_fnuz.t[quant_fnuz.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32_e4m3fnuz";
    t->in[0] = QF_FLOAT32;
    t->out[0] = QF_FLOAT8_E4M3FNUZ;
    t->arith = f32_claim();
    t = &quant_fnuz.t[quant_fnuz.n++];
    memset(t, 0, sizeof *t);
    t->name = "f32_e5m2fnuz";
    t->in[0] = QF_FLOAT32;
    t->out[0] = QF_FLOAT8_E5M2FNUZ;
    t->arith = f32_claim();
}

/* The kernels in libqualify_hip.so (kernels/hip/_hip_kernels.h). */
QF_GPU_FWD_RUN("hip", qf_hip_gemm_run)
QF_GPU_FWD_RUN("hip", qf_hip_rmsnorm_run)
QF_GPU_FWD_RUN("hip", qf_hip_softmax_run)
QF_GPU_FWD_RUN("hip", qf_hip_attention_run)
QF_GPU_FWD_RUN("hip", qf_hip_quantize_run)
#ifdef QF_HAVE_HIP_GFX942
QF_GPU_FWD_RUN("hip", qf_hip_gemm_run_gfx942)
QF_GPU_FWD_RUN("hip", qf_hip_gemm_fp8_run_gfx942)
QF_GPU_FWD_RUN("hip", qf_hip_rmsnorm_run_gfx942)
QF_GPU_FWD_RUN("hip", qf_hip_softmax_run_gfx942)
QF_GPU_FWD_RUN("hip", qf_hip_attention_run_gfx942)
QF_GPU_FWD_RUN("hip", qf_hip_quantize_run_gfx942)
#endif

static qf_status quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size)
{
    const qf_block_fp8_params *p = &op->u.quantize.block.fp8;
    (void)k;
    (void)dtype;
    if (op->op != QF_OP_QUANTIZE || op->u.quantize.block.family != QF_REF_BLOCK_FP8 ||
        p->granularity != QF_BLOCK_FP8_TENSOR || p->margin != 0 || p->amax_epsilon != 0 || p->pow2 ||
        !p->saturate || p->fp32_product || p->round != QF_ROUND_RNE ||
        (p->elem != QF_FLOAT8_E4M3FNUZ && p->elem != QF_FLOAT8_E5M2FNUZ)) {
        snprintf(
            why, why_size,
            "FP8 fnuz: per-tensor scale, margin 0, no epsilon or pow2, saturating, exact product, nearest "
            "even, e4m3fnuz/e5m2fnuz");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_kernel mk(const char *name, qf_op op, const char *desc, const char *archs, const built *b,
                    qf_kernel_run_fn run, qf_kernel_supports_fn sup, int gemm)
{
    qf_kernel k;
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof(qf_kernel);
    k.name = name;
    k.op = op;
    k.kind = QF_KERNEL_OPTIMIZED;
    k.description = desc;
    k.backend = "hip";
    k.archs = archs;
    k.dtypes = b->t;
    k.n_dtypes = b->n;
    k.run = run;
    k.supports = sup;
    k.limits.align_bytes = 256;
    if (gemm) {
        k.limits.multiple_of[0] = k.limits.multiple_of[1] = k.limits.multiple_of[2] = 16;
        k.user = (void *)1; /* claims MFMA: kernels.hip refuses its plain path */
    }
    return k;
}

/* Listed in kernels/families.c. */
qf_status qf_hip_register_kernels(qf_registry *r);

qf_status qf_hip_register_kernels(qf_registry *r)
{
    static int built_once;
    qf_kernel ks[16];
    size_t n = 0, i;
    if (!built_once) {
        build_tables();
        built_once = 1;
    }
    ks[n++] = mk("gemm.hip.mfma_gfx90a.bf16", QF_OP_GEMM,
                 "bfloat16 MFMA 16x16x16 (bf16_1k), float32 accumulator in K order, MI250X arithmetic",
                 "gfx90a", &g90_bf16, fwd_qf_hip_gemm_run, _qf_gpu_gemm_supports, 1);
    ks[n++] = mk("gemm.hip.mfma_gfx90a.f16", QF_OP_GEMM,
                 "float16 MFMA 16x16x16, float32 accumulator in K order, MI250X arithmetic", "gfx90a",
                 &g90_f16, fwd_qf_hip_gemm_run, _qf_gpu_gemm_supports, 1);
    ks[n++] =
        mk("gemm.hip.mfma_gfx940.bf16", QF_OP_GEMM,
           "bfloat16 MFMA 16x16x16 (bf16_1k), float32 accumulator in K order, MI300 arithmetic (assumed)",
           "gfx940", &g940_bf16, fwd_qf_hip_gemm_run, _qf_gpu_gemm_supports, 1);
    ks[n++] = mk("gemm.hip.mfma_gfx940.f16", QF_OP_GEMM,
                 "float16 MFMA 16x16x16, float32 accumulator in K order, MI300 arithmetic (assumed)",
                 "gfx940", &g940_f16, fwd_qf_hip_gemm_run, _qf_gpu_gemm_supports, 1);
    ks[n++] =
        mk("rmsnorm.hip.f32", QF_OP_RMSNORM,
           "float32 RMSNorm, one block per row: strided sums of squares, 256-leaf tree, 1/sqrt, x*r*w+b",
           "gfx90a gfx940", &norm_f32, fwd_qf_hip_rmsnorm_run, NULL, 0);
    ks[n++] = mk("softmax.hip.f32", QF_OP_SOFTMAX,
                 "float32 softmax, one block per row: tree max, expf, tree sum, division", "gfx90a gfx940",
                 &softmax_f32, fwd_qf_hip_softmax_run, NULL, 0);
    ks[n++] =
        mk("attention.hip.flash.bf16", QF_OP_ATTENTION,
           "bfloat16 flash-style forward: 32 lanes per query row, online softmax per 32-key tile, P rounded "
           "to bfloat16 before P V, float32 O, causal or none; GQA",
           "gfx90a gfx940", &attn_bf16, fwd_qf_hip_attention_run, _qf_gpu_attention_supports, 0);
    ks[n++] = mk("quantize.hip.fp8_fnuz", QF_OP_QUANTIZE,
                 "FP8 fnuz per-tensor scaling with gfx940's cvt_pk_fp8/bf8 (exact product, saturating)",
                 "gfx940", &quant_fnuz, fwd_qf_hip_quantize_run, quantize_supports, 0);
#ifdef QF_HAVE_HIP_GFX942
    /* gfx942 (MI300X, MI325X): the same sources compiled by clang-19
     * (kernels/hip/CMakeLists.txt), plus the FP8 MFMA GEMM. */
    ks[n++] = mk("gemm.hip.mfma_gfx942.bf16", QF_OP_GEMM,
                 "bfloat16 MFMA 16x16x16 (bf16_1k), float32 accumulator in K order, MI300 arithmetic (clang-19)",
                 "gfx942", &g940_bf16, fwd_qf_hip_gemm_run_gfx942, _qf_gpu_gemm_supports, 1);
    ks[n++] = mk("gemm.hip.mfma_gfx942.f16", QF_OP_GEMM,
                 "float16 MFMA 16x16x16, float32 accumulator in K order, MI300 arithmetic (clang-19)", "gfx942",
                 &g940_f16, fwd_qf_hip_gemm_run_gfx942, _qf_gpu_gemm_supports, 1);
    ks[n] = mk("gemm.hip.mfma_fp8_gfx942", QF_OP_GEMM,
               "FP8 fnuz MFMA 16x16x32 (fp8_fp8, bf8_bf8, fp8_bf8, bf8_fp8), per-tensor float32 scales, float32 "
               "accumulator in K order, MI300 fp8 arithmetic (clang-19)",
               "gfx942", &g942_fp8, fwd_qf_hip_gemm_fp8_run_gfx942, _qf_gpu_gemm_supports, 1);
    ks[n++].limits.multiple_of[2] = 32;
    ks[n++] = mk("rmsnorm.hip.gfx942.f32", QF_OP_RMSNORM,
                 "float32 RMSNorm as rmsnorm.hip.f32, built for gfx942 (clang-19, ROCm 5.2 device libraries)",
                 "gfx942", &norm_f32, fwd_qf_hip_rmsnorm_run_gfx942, NULL, 0);
    ks[n++] = mk("softmax.hip.gfx942.f32", QF_OP_SOFTMAX,
                 "float32 softmax as softmax.hip.f32 (expf of ROCm 5.2's ocml), built for gfx942 (clang-19)",
                 "gfx942", &softmax_f32, fwd_qf_hip_softmax_run_gfx942, NULL, 0);
    ks[n++] = mk("attention.hip.flash_gfx942.bf16", QF_OP_ATTENTION,
                 "bfloat16 flash-style forward as attention.hip.flash.bf16, built for gfx942 (clang-19)",
                 "gfx942", &attn_bf16, fwd_qf_hip_attention_run_gfx942, _qf_gpu_attention_supports, 0);
    ks[n++] = mk("quantize.hip.fp8_fnuz_gfx942", QF_OP_QUANTIZE,
                 "FP8 fnuz per-tensor scaling with gfx942's cvt_pk_fp8/bf8 (exact product, saturating)",
                 "gfx942", &quant_fnuz, fwd_qf_hip_quantize_run_gfx942, quantize_supports, 0);
#endif
    for (i = 0; i < n; i++) {
        qf_status s = qf_registry_add(r, &ks[i]);
        if (s != QF_OK)
            return s;
    }
    return QF_OK;
}
