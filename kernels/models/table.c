/* table.c: the model presets (docs/numerics.md#matrix-units) and their
 * registration as GEMM kernels gemm.model.<preset>.
 *
 * Sources: Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of
 * NVIDIA tensor cores" (PeerJ CS 2021): V100/T4/A100 exact products,
 * alignment without guard bits, truncation, RTZ normalization; Khattak and
 * Mikaitis, "Accurate models of NVIDIA tensor cores": block sizes and kept
 * alignment bits per generation (V100 23, A100 24, H100/B200 25, Hopper
 * fp8 13); DeepSeek-V3 technical report (2024) section 3.3.2: Hopper FP8
 * keeps about 14 bits, promotion every 128 elements of K; Microsoft
 * MMA-Sim (arXiv 2511.10909) for the AMD rows.  What the sources leave open is a
 * parameter with the most likely value, listed in docs/models.md.
 */
#include <stdlib.h>
#include <string.h>

#include "../cpu/_cpu.h"
#include "qf_model.h"

#define FA   QF_MODEL_ALIGN_RTZ
#define FL   QF_MODEL_ALIGN_FLOOR
#define BLK  QF_MODEL_SUM_BLOCK
#define TREE QF_MODEL_SUM_TREE
#define OE   QF_MODEL_SUM_ODD_EVEN
#define RTZ  QF_ROUND_RTZ
#define RNE  QF_ROUND_RNE
#define F16  QF_FLOAT16
#define BF16 QF_BFLOAT16
#define TF32 QF_TF32
#define E4M3 QF_FLOAT8_E4M3FN
#define E5M2 QF_FLOAT8_E5M2
#define E4FZ QF_FLOAT8_E4M3FNUZ
#define E5FZ QF_FLOAT8_E5M2FNUZ

#define SRC_NV  "Fasi-Higham-Mikaitis-Pranesh 2021; Khattak-Mikaitis 2025"
#define SRC_FP8 "Khattak-Mikaitis 2025; DeepSeek-V3 report 3.3.2"
#define SRC_AMD "MMA-Sim (Xie et al. 2025); docs/models.md assumptions"

/* clang-format off */
#define P(NAME, SIM, A, B, SUM, BLOCK, ALIGN_F, ALIGN, PROD_F, ROUND, FLUSH, PROMOTE, SRC)                   \
    { .name = NAME, .simulates = SIM, .in_a = A, .in_b = B, .sum = SUM, .block = BLOCK,                       \
      .align_frac_bits = ALIGN_F, .align = ALIGN, .product_frac_bits = PROD_F, .acc_frac_bits = 23,            \
      .acc_round = ROUND, .flush_in = FLUSH, .flush_out = FLUSH, .promote_interval = PROMOTE,                  \
      .out_round = RNE, .source = SRC }

static const qf_model_params presets[] = {
    /*  name                     sim       a     b     sum   blk align_f align prod round flush promote */
    P("v100.f16",                "sm_70",  F16,  F16,  BLK,  4,  23,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("a100.f16",                "sm_80",  F16,  F16,  BLK,  8,  24,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("a100.bf16",               "sm_80",  BF16, BF16, BLK,  8,  24,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("a100.tf32",               "sm_80",  TF32, TF32, BLK,  4,  24,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("h100.f16",                "sm_90",  F16,  F16,  BLK,  16, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("h100.bf16",               "sm_90",  BF16, BF16, BLK,  16, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("h100.tf32",               "sm_90",  TF32, TF32, BLK,  8,  25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("h100.e4m3",               "sm_90",  E4M3, E4M3, BLK,  32, 13,    FA,   0,   RTZ,  0,    0,   SRC_FP8),
    P("h100.e5m2",               "sm_90",  E5M2, E5M2, BLK,  32, 13,    FA,   0,   RTZ,  0,    0,   SRC_FP8),
    P("h100_promote128.e4m3",    "sm_90",  E4M3, E4M3, BLK,  32, 13,    FA,   0,   RTZ,  0,    128, SRC_FP8),
    P("h100_promote128.e5m2",    "sm_90",  E5M2, E5M2, BLK,  32, 13,    FA,   0,   RTZ,  0,    128, SRC_FP8),
    P("l40s.e4m3",               "sm_89",  E4M3, E4M3, BLK,  16, 13,    FA,   0,   RTZ,  0,    0,   SRC_FP8),
    P("b200.f16",                "sm_100", F16,  F16,  BLK,  16, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("b200.bf16",               "sm_100", BF16, BF16, BLK,  16, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("b200.tf32",               "sm_100", TF32, TF32, BLK,  8,  25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("b200.e4m3",               "sm_100", E4M3, E4M3, BLK,  32, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("b200.e5m2",               "sm_100", E5M2, E5M2, BLK,  32, 25,    FA,   0,   RTZ,  0,    0,   SRC_NV),
    P("mi250x.f16",              "gfx90a", F16,  F16,  TREE, 4,  23,    FA,   0,   RNE,  1,    0,   SRC_AMD),
    P("mi250x.bf16",             "gfx90a", BF16, BF16, TREE, 4,  23,    FA,   0,   RNE,  1,    0,   SRC_AMD),
    P("mi300.f16",               "gfx942", F16,  F16,  BLK,  8,  24,    FL,   24,  RNE,  0,    0,   SRC_AMD),
    P("mi300.bf16",              "gfx942", BF16, BF16, BLK,  8,  24,    FL,   24,  RNE,  0,    0,   SRC_AMD),
    P("mi300.e4m3fnuz",          "gfx942", E4FZ, E4FZ, OE,   16, 24,    FL,   0,   RNE,  0,    0,   SRC_AMD),
    P("mi300.e5m2fnuz",          "gfx942", E5FZ, E5FZ, OE,   16, 24,    FL,   0,   RNE,  0,    0,   SRC_AMD),
};
/* clang-format on */

#define N_PRESETS (sizeof presets / sizeof presets[0])

const qf_model_params *qf_model_presets(size_t *n)
{
    if (n)
        *n = N_PRESETS;
    return presets;
}

const qf_model_params *qf_model_preset(const char *name)
{
    size_t i;
    for (i = 0; name && i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

/* ---- The kernels ------------------------------------------------------------- */

/* Decode element (p, r, c) of a code tensor. */
static double ld(const qf_tensor *t, int64_t p, int64_t r, int64_t c)
{
    int64_t o = _qf_cpu_off(t, p, r, c);
    const qf_format *f = qf_format_get(t->format);
    uint64_t code;
    switch (f->storage_bits) {
    case 8: code = ((const uint8_t *)t->data)[o]; break;
    case 16: code = ((const uint16_t *)t->data)[o]; break;
    case 32: code = ((const uint32_t *)t->data)[o]; break;
    default: code = ((const uint64_t *)t->data)[o]; break;
    }
    return qf_format_decode(f, code);
}

static void st(const qf_tensor *t, int64_t p, int64_t r, int64_t c, uint64_t code)
{
    int64_t o = _qf_cpu_off(t, p, r, c);
    switch (qf_format_get(t->format)->storage_bits) {
    case 8: ((uint8_t *)t->data)[o] = (uint8_t)code; break;
    case 16: ((uint16_t *)t->data)[o] = (uint16_t)code; break;
    case 32: ((uint32_t *)t->data)[o] = (uint32_t)code; break;
    default: ((uint64_t *)t->data)[o] = code; break;
    }
}

static qf_status supports_p(const qf_model_params *p, const qf_op_desc *op, char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    if ((double)(float)g->alpha != g->alpha || (double)(float)g->beta != g->beta) {
        snprintf(why, why_size, "alpha and beta must be float32 values (the epilogue runs in float32)");
        return QF_EUNSUPPORTED;
    }
    if (g->groups) {
        snprintf(why, why_size, "grouped GEMM is not modelled");
        return QF_EUNSUPPORTED;
    }
    if (p && p->sum == QF_MODEL_SUM_ODD_EVEN && g->k % (size_t)p->block) {
        /* A partial group would be two half steps for fewer than block
         * products, which the claim (block_fma = block / 2) does not cover;
         * the hardware instruction needs whole groups too. */
        snprintf(why, why_size, "k = %zu is not a multiple of %d", g->k, p->block);
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_status model_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    (void)dtype;
    return supports_p(k ? k->user : NULL, op, why, why_size);
}

static qf_status model_run(void *ctx, const qf_kernel_call *call)
{
    const qf_model_params *p = ctx;
    const qf_dtype_tuple *t = call->dtype;
    const qf_op_gemm *g;
    const qf_tensor *A, *B, *C, *D;
    int64_t batch, m, n, k, q, i, j, l;
    int ta, tb, has_c;
    double *ra, *cb;
    qf_status s;
    char why[128];

    if (!p || !call->op || call->op->op != QF_OP_GEMM || !t)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    g = &call->op->u.gemm;
    if ((s = supports_p(p, call->op, why, sizeof why)) != QF_OK)
        return _qf_cpu_fail(call, s, "%s", why);
    A = &call->in[0];
    B = &call->in[1];
    C = &call->in[2];
    D = &call->out[0];
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    ta = g->trans_a != 0;
    tb = g->trans_b != 0;
    batch = g->batch ? (int64_t)g->batch : 1;
    has_c = g->beta != 0;
    if ((s = _qf_cpu_check2(call, A, "a", t->in[0], batch, ta ? k : m, ta ? m : k)) != QF_OK ||
        (s = _qf_cpu_check2(call, B, "b", t->in[1], batch, tb ? n : k, tb ? k : n)) != QF_OK ||
        (s = _qf_cpu_check2(call, D, "d", t->out[0], batch, m, n)) != QF_OK ||
        (has_c && (s = _qf_cpu_check2(call, C, "c", t->in[2], batch, m, n)) != QF_OK))
        return s;
    if (batch > 1 && (D->ndim != 3 || D->shape[0] != batch))
        return _qf_cpu_fail(call, QF_EINVAL, "tensor d must be [batch][m][n] for a batched gemm");

    ra = malloc((size_t)(k ? k : 1) * sizeof *ra);
    cb = malloc((size_t)(k ? k : 1) * sizeof *cb);
    if (!ra || !cb) {
        free(ra);
        free(cb);
        return _qf_cpu_fail(call, QF_ENOMEM, "out of memory");
    }
    for (q = 0; q < batch; q++) {
        for (j = 0; j < n; j++) {
            for (l = 0; l < k; l++)
                cb[l] = ld(B, q, tb ? j : l, tb ? l : j);
            for (i = 0; i < m; i++) {
                double v;
                float r;
                for (l = 0; l < k; l++)
                    ra[l] = ld(A, q, ta ? l : i, ta ? i : l);
                if ((s = qf_model_dot(p, (size_t)k, ra, 1, cb, 1, &v)) != QF_OK) {
                    free(ra);
                    free(cb);
                    return _qf_cpu_fail(call, s, "model parameters rejected");
                }
                /* Epilogue in float32, nearest even (as gemm.c). */
                r = (float)v;
                if (g->alpha != 1)
                    r = (float)g->alpha * r;
                if (has_c) {
                    float bc = (float)g->beta * (float)ld(C, q, i, j);
                    r = r + bc;
                }
                st(D, q, i, j, qf_format_encode(qf_format_get(t->out[0]), (double)r, p->out_round, 0, 0, 0));
            }
        }
    }
    free(ra);
    free(cb);
    return QF_OK;
}

/* Tuples: inputs in the preset's format, c and d float32 (and a bfloat16
 * output for the FP8 presets, as FP8 GEMMs are used). */
#define TUP(NAME, A, OUT, PRESET)                                                                            \
    {                                                                                                        \
        .name = NAME, .in = {A, A, QF_FLOAT32}, .out = {OUT}, .arith = CLAIM_##PRESET                        \
    }

/* The claims are written out as constant initializers (a static table
 * cannot call qf_model_claim); tests/models/t-presets checks that each
 * equals qf_model_claim of its preset. */
#define CL(FRAC, BLOCK, ROUND, ALIGN_T, GUARD, PROMOTE)                                                      \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = FRAC, .block_fma = BLOCK, .acc_round = ROUND,             \
        .align_truncates = ALIGN_T, .guard_bits = GUARD, .promote_interval = PROMOTE,                        \
        .promote_format = QF_FLOAT32, .sum_order = QF_SUM_SEQUENTIAL, .split_k = 1, .out_round = RNE,        \
        .max_ulp = 0, .elem_ulp = 0, .deterministic = 1, .deterministic_threads = 1                          \
    }

#define CLAIM_V100    CL(0, 4, RTZ, 1, 0, 0)
#define CLAIM_A100    CL(0, 8, RTZ, 1, 1, 0)
#define CLAIM_A100TF  CL(0, 4, RTZ, 1, 1, 0)
#define CLAIM_H100    CL(0, 16, RTZ, 1, 2, 0)
#define CLAIM_H100TF  CL(0, 8, RTZ, 1, 2, 0)
#define CLAIM_H100F8  CL(13, 32, RTZ, 1, 0, 0)
#define CLAIM_H100F8P CL(13, 32, RTZ, 1, 0, 128)
#define CLAIM_L40SF8  CL(13, 16, RTZ, 1, 0, 0)
#define CLAIM_B200F8  CL(0, 32, RTZ, 1, 2, 0)
/* MI250X flushes subnormal inputs and results (MMA-Sim; docs/numerics.md#matrix-units): claimed. */
#define CLAIM_MI250X                                                                                         \
    {                                                                                                        \
        .acc_format = QF_FLOAT32, .acc_frac_bits = 0, .block_fma = 1, .acc_round = RNE, .align_truncates = 0, \
        .guard_bits = 0, .promote_interval = 0, .promote_format = QF_FLOAT32, .sum_order = QF_SUM_SEQUENTIAL, \
        .split_k = 1, .out_round = RNE, .max_ulp = 0, .elem_ulp = 0, .deterministic = 1,                     \
        .deterministic_threads = 1, .flush_subnormals = 1                                                    \
    }
#define CLAIM_MI300   CL(0, 8, RNE, 1, 1, 0)
#define CLAIM_MI300F8 CL(0, 8, RNE, 1, 1, 0)

/* clang-format off */
static const qf_dtype_tuple t_v100_f16[]   = { TUP("f16_f32",  F16,  QF_FLOAT32, V100) };
static const qf_dtype_tuple t_a100_f16[]   = { TUP("f16_f32",  F16,  QF_FLOAT32, A100) };
static const qf_dtype_tuple t_a100_bf16[]  = { TUP("bf16_f32", BF16, QF_FLOAT32, A100) };
static const qf_dtype_tuple t_a100_tf32[]  = { TUP("tf32_f32", TF32, QF_FLOAT32, A100TF) };
static const qf_dtype_tuple t_h100_f16[]   = { TUP("f16_f32",  F16,  QF_FLOAT32, H100) };
static const qf_dtype_tuple t_h100_bf16[]  = { TUP("bf16_f32", BF16, QF_FLOAT32, H100) };
static const qf_dtype_tuple t_h100_tf32[]  = { TUP("tf32_f32", TF32, QF_FLOAT32, H100TF) };
static const qf_dtype_tuple t_h100_e4m3[]  = { TUP("e4m3_e4m3_f32", E4M3, QF_FLOAT32, H100F8),
                                               TUP("e4m3_e4m3_bf16", E4M3, BF16, H100F8) };
static const qf_dtype_tuple t_h100_e5m2[]  = { TUP("e5m2_e5m2_f32", E5M2, QF_FLOAT32, H100F8),
                                               TUP("e5m2_e5m2_bf16", E5M2, BF16, H100F8) };
static const qf_dtype_tuple t_h100p_e4m3[] = { TUP("e4m3_e4m3_f32", E4M3, QF_FLOAT32, H100F8P),
                                               TUP("e4m3_e4m3_bf16", E4M3, BF16, H100F8P) };
static const qf_dtype_tuple t_h100p_e5m2[] = { TUP("e5m2_e5m2_f32", E5M2, QF_FLOAT32, H100F8P),
                                               TUP("e5m2_e5m2_bf16", E5M2, BF16, H100F8P) };
static const qf_dtype_tuple t_l40s_e4m3[]  = { TUP("e4m3_e4m3_f32", E4M3, QF_FLOAT32, L40SF8),
                                               TUP("e4m3_e4m3_bf16", E4M3, BF16, L40SF8) };
static const qf_dtype_tuple t_b200_f16[]   = { TUP("f16_f32",  F16,  QF_FLOAT32, H100) };
static const qf_dtype_tuple t_b200_bf16[]  = { TUP("bf16_f32", BF16, QF_FLOAT32, H100) };
static const qf_dtype_tuple t_b200_tf32[]  = { TUP("tf32_f32", TF32, QF_FLOAT32, H100TF) };
static const qf_dtype_tuple t_b200_e4m3[]  = { TUP("e4m3_e4m3_f32", E4M3, QF_FLOAT32, B200F8),
                                               TUP("e4m3_e4m3_bf16", E4M3, BF16, B200F8) };
static const qf_dtype_tuple t_b200_e5m2[]  = { TUP("e5m2_e5m2_f32", E5M2, QF_FLOAT32, B200F8),
                                               TUP("e5m2_e5m2_bf16", E5M2, BF16, B200F8) };
static const qf_dtype_tuple t_mi250x_f16[] = { TUP("f16_f32",  F16,  QF_FLOAT32, MI250X) };
static const qf_dtype_tuple t_mi250x_bf16[]= { TUP("bf16_f32", BF16, QF_FLOAT32, MI250X) };
static const qf_dtype_tuple t_mi300_f16[]  = { TUP("f16_f32",  F16,  QF_FLOAT32, MI300) };
static const qf_dtype_tuple t_mi300_bf16[] = { TUP("bf16_f32", BF16, QF_FLOAT32, MI300) };
static const qf_dtype_tuple t_mi300_e4fz[] = { TUP("e4m3fnuz_e4m3fnuz_f32", E4FZ, QF_FLOAT32, MI300F8),
                                               TUP("e4m3fnuz_e4m3fnuz_bf16", E4FZ, BF16, MI300F8) };
static const qf_dtype_tuple t_mi300_e5fz[] = { TUP("e5m2fnuz_e5m2fnuz_f32", E5FZ, QF_FLOAT32, MI300F8),
                                               TUP("e5m2fnuz_e5m2fnuz_bf16", E5FZ, BF16, MI300F8) };

#define K(PRESET, IDX, SIM, DESC, TUPLES)                                                                          \
    { .abi_version = QF_KERNEL_ABI_VERSION, .struct_size = sizeof(qf_kernel), .name = "gemm.model." PRESET,  \
      .op = QF_OP_GEMM, .kind = QF_KERNEL_MODEL, .description = DESC, .backend = "cpu", .archs = "cpu",      \
      .simulates = SIM, .dtypes = TUPLES, .n_dtypes = sizeof TUPLES / sizeof TUPLES[0],    \
      .run = model_run, .supports = model_supports, .user = (void *)&presets[IDX] }

static const qf_kernel model_kernels[] = {
    K("v100.f16",             0, "sm_70",   "V100 fp16 tensor core: blocks of 4, 23 aligned bits truncated, RTZ fp32", t_v100_f16),
    K("a100.f16",             1, "sm_80",   "A100 fp16 tensor core: blocks of 8, 24 aligned bits truncated, RTZ fp32", t_a100_f16),
    K("a100.bf16",            2, "sm_80",   "A100 bf16 tensor core: blocks of 8, 24 aligned bits truncated, RTZ fp32", t_a100_bf16),
    K("a100.tf32",            3, "sm_80",   "A100 tf32 tensor core: blocks of 4, 24 aligned bits truncated, RTZ fp32", t_a100_tf32),
    K("h100.f16",             4, "sm_90",   "H100 fp16 tensor core: blocks of 16, 25 aligned bits truncated, RTZ fp32", t_h100_f16),
    K("h100.bf16",            5, "sm_90",   "H100 bf16 tensor core: blocks of 16, 25 aligned bits truncated, RTZ fp32", t_h100_bf16),
    K("h100.tf32",            6, "sm_90",   "H100 tf32 tensor core: blocks of 8, 25 aligned bits truncated, RTZ fp32", t_h100_tf32),
    K("h100.e4m3",            7, "sm_90",   "H100 fp8 wgmma: blocks of 32, 13 aligned bits truncated, RTZ fp32, no promotion", t_h100_e4m3),
    K("h100.e5m2",            8, "sm_90",   "H100 fp8 wgmma: blocks of 32, 13 aligned bits truncated, RTZ fp32, no promotion", t_h100_e5m2),
    K("h100_promote128.e4m3", 9, "sm_90",   "H100 fp8 wgmma with float32 promotion every 128 of K (DeepSeek-V3)", t_h100p_e4m3),
    K("h100_promote128.e5m2", 10, "sm_90",  "H100 fp8 wgmma with float32 promotion every 128 of K (DeepSeek-V3)", t_h100p_e5m2),
    K("l40s.e4m3",            11, "sm_89",  "L40S fp8 tensor core: blocks of 16, 13 aligned bits truncated, RTZ fp32", t_l40s_e4m3),
    K("b200.f16",             12, "sm_100", "B200 fp16 tensor core: blocks of 16, 25 aligned bits truncated, RTZ fp32", t_b200_f16),
    K("b200.bf16",            13, "sm_100", "B200 bf16 tensor core: blocks of 16, 25 aligned bits truncated, RTZ fp32", t_b200_bf16),
    K("b200.tf32",            14, "sm_100", "B200 tf32 tensor core: blocks of 8, 25 aligned bits truncated, RTZ fp32", t_b200_tf32),
    K("b200.e4m3",            15, "sm_100", "B200 fp8 tensor core: blocks of 32, 25 aligned bits truncated, RTZ fp32", t_b200_e4m3),
    K("b200.e5m2",            16, "sm_100", "B200 fp8 tensor core: blocks of 32, 25 aligned bits truncated, RTZ fp32", t_b200_e5m2),
    K("mi250x.f16",           17, "gfx90a", "MI250X fp16 matrix core: groups of 4, pairwise fp32 tree, FTZ, RNE", t_mi250x_f16),
    K("mi250x.bf16",          18, "gfx90a", "MI250X bf16 matrix core: groups of 4, pairwise fp32 tree, FTZ, RNE", t_mi250x_bf16),
    K("mi300.f16",            19, "gfx942", "MI300 fp16 matrix core: groups of 8, 24 aligned bits rounded down, RNE fp32", t_mi300_f16),
    K("mi300.bf16",           20, "gfx942", "MI300 bf16 matrix core: groups of 8, 24 aligned bits rounded down, RNE fp32", t_mi300_bf16),
    K("mi300.e4m3fnuz",       21, "gfx942", "MI300 fp8 matrix core: groups of 16 as even and odd halves, RNE fp32", t_mi300_e4fz),
    K("mi300.e5m2fnuz",       22, "gfx942", "MI300 fp8 matrix core: groups of 16 as even and odd halves, RNE fp32", t_mi300_e5fz),
};
/* clang-format on */

const qf_kernel *qf_kernels_models(size_t *n)
{
    if (n)
        *n = sizeof model_kernels / sizeof model_kernels[0];
    return model_kernels;
}
