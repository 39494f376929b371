/* gemm_fp8.hip: FP8 (fnuz) MFMA GEMM with per-tensor scales, for CDNA3.
 *
 * d = (a b) * (s_a s_b), a [M][K] and b [K][N] each of float8_e4m3fnuz
 * (fp8) or float8_e5m2fnuz (bf8) codes, in any of the four pairings (the
 * FP8 formats of gfx940/gfx942 matrix instructions, AMD CDNA3 ISA guide,
 * "Matrix fused multiply-add", which has an instruction per pairing), one
 * float32 scale per tensor (the CUDA FP8 kernels' convention,
 * kernels/cuda/kernels.cu), d float32 or bfloat16.
 *
 * One wave (64 lanes) per 16x16 tile of d, k0 = 0, 32, ...: one
 * v_mfma_f32_16x16x32_{fp8_fp8,fp8_bf8,bf8_fp8,bf8_bf8} per step (the
 * first name A's format, the second B's), in K order, float32
 * accumulator, C chained from the previous step.  Operand layout of the
 * 16x16x32 8-bit instructions (AMD matrix instruction calculator, 8 values
 * per lane in one 64-bit register): lane l holds A[l % 16][8 (l / 16) + i]
 * and B[8 (l / 16) + i][l % 16], i = 0..7, byte i = element i; it receives
 * D[4 (l / 16) + i][l % 16], i = 0..3 (as for 16x16x16).  Epilogue: the
 * float32 accumulator times s_a s_b in binary64 (the scales' product is
 * exact there), rounded once to the output format, nearest even.
 *
 * Compiled by hipcc for gfx940 (and gfx90a, which has no FP8 matrix
 * instructions: the kernel raises a flag there and the host refuses) and
 * by clang-19 for gfx942; the records claim gfx942 only, with the MI300
 * FP8 model (kernels/hip/table.c).  tests/hip/t-gfx942-isa compares the
 * inner loops of the gfx940 and gfx942 code objects of this file.
 */
#include <hip/hip_runtime.h>
#include <stdint.h>
#include <string.h>

#include "_gpu_args.h"
#include "_hip.h"
#include "_hip_kernels.h"

typedef float f32x4 __attribute__((ext_vector_type(4)));

/* float32 -> bfloat16 code, nearest even, NaN kept quiet. */
__device__ static inline uint16_t g8_bf16_rne(float v)
{
    uint32_t u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* A_BF8, B_BF8 = 1: that operand is e5m2fnuz (bf8), else e4m3fnuz (fp8). */
template <int A_BF8, int B_BF8>
static __global__ void hk_gemm_fp8(const uint8_t *A, const uint8_t *B, const float *sa, const float *sb, void *D,
                                   int M, int N, int K, int out_bf16, int *bad)
{
    int wave = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 64), l = (int)(threadIdx.x % 64);
    int tiles_n = N / 16, tm = wave / tiles_n, tn = wave % tiles_n;
    if (tm >= M / 16)
        return;
#if defined(__gfx940__) || defined(__gfx942__)
    {
        f32x4 c = {0.f, 0.f, 0.f, 0.f};
        const uint8_t *ar = A + (size_t)(tm * 16 + l % 16) * K;
        const uint8_t *bc = B + tn * 16 + l % 16;
        double s = (double)*sa * (double)*sb;
        for (int k0 = 0; k0 < K; k0 += 32) {
            int kb = k0 + 8 * (l / 16);
            uint64_t a = 0, b = 0;
            for (int i = 0; i < 8; i++) {
                a |= (uint64_t)ar[kb + i] << (8 * i);
                b |= (uint64_t)bc[(size_t)(kb + i) * N] << (8 * i);
            }
            if (A_BF8 && B_BF8)
                c = __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8((long)a, (long)b, c, 0, 0, 0);
            else if (A_BF8)
                c = __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8((long)a, (long)b, c, 0, 0, 0);
            else if (B_BF8)
                c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8((long)a, (long)b, c, 0, 0, 0);
            else
                c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8((long)a, (long)b, c, 0, 0, 0);
        }
        for (int i = 0; i < 4; i++) {
            size_t at = (size_t)(tm * 16 + 4 * (l / 16) + i) * N + tn * 16 + l % 16;
            float v = (float)((double)c[i] * s);
            if (out_bf16)
                ((uint16_t *)D)[at] = g8_bf16_rne(v);
            else
                ((float *)D)[at] = v;
        }
    }
#else
    (void)A, (void)B, (void)sa, (void)sb, (void)D, (void)K, (void)out_bf16;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *bad = 1;
#endif
}

extern "C" qf_status QF_HIP_ENTRY(qf_hip_gemm_fp8_run)(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_dtype_tuple *t = call->dtype;
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    qf_status st = QF_OK;
    int *bad = NULL, hbad = 0, i;
    unsigned waves;
    /* [a is bf8][b is bf8] */
    static void (*const kern[2][2])(const uint8_t *, const uint8_t *, const float *, const float *, void *, int,
                                    int, int, int, int *) = {{hk_gemm_fp8<0, 0>, hk_gemm_fp8<0, 1>},
                                                             {hk_gemm_fp8<1, 0>, hk_gemm_fp8<1, 1>}};
    (void)ctx;
    if (call->op->op != QF_OP_GEMM)
        return _qf_gpu_fail(call, QF_EINVAL, "not a gemm call");
    if (g->trans_a || g->trans_b || g->batch > 1 || g->groups || g->alpha != 1.0 || g->beta != 0.0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "only d = a b");
    for (i = 0; i < 2; i++)
        if (t->in[i] != QF_FLOAT8_E4M3FNUZ && t->in[i] != QF_FLOAT8_E5M2FNUZ)
            return _qf_gpu_fail(call, QF_EUNSUPPORTED, "inputs must be float8_e4m3fnuz or float8_e5m2fnuz");
    if (t->out[0] != QF_FLOAT32 && t->out[0] != QF_BFLOAT16)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "output must be float32 or bfloat16");
    for (i = 0; i < 2; i++) {
        const qf_tensor_scale *sc = &call->in[i].scale;
        if (sc->kind != QF_SCALE_TENSOR || sc->format != QF_FLOAT32 || !sc->data || sc->count != 1)
            return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: one float32 per-tensor scale expected",
                                i ? "b" : "a");
    }
    if ((st = _qf_gpu_dense2(call, &call->in[0], "a", t->in[0], (int64_t)g->m, (int64_t)g->k)) != QF_OK ||
        (st = _qf_gpu_dense2(call, &call->in[1], "b", t->in[1], (int64_t)g->k, (int64_t)g->n)) != QF_OK ||
        (st = _qf_gpu_dense2(call, &call->out[0], "d", t->out[0], (int64_t)g->m, (int64_t)g->n)) != QF_OK)
        return st;
    if (g->m % 16 || g->n % 16 || g->k % 32)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "m, n, k must be multiples of 16, 16, 32");
    if (g->m == 0 || g->n == 0)
        return QF_OK;
    if (g->k == 0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "k = 0");
    QF_HIP(hipMalloc((void **)&bad, sizeof(int)));
    QF_HIP(hipMemset(bad, 0, sizeof(int)));
    waves = (unsigned)(g->m / 16 * (g->n / 16));
    hipLaunchKernelGGL(kern[t->in[0] == QF_FLOAT8_E5M2FNUZ][t->in[1] == QF_FLOAT8_E5M2FNUZ], dim3((waves + 3) / 4),
                       dim3(256), 0, 0, (const uint8_t *)call->in[0].data, (const uint8_t *)call->in[1].data,
                       (const float *)call->in[0].scale.data, (const float *)call->in[1].scale.data,
                       call->out[0].data, (int)g->m, (int)g->n, (int)g->k, t->out[0] == QF_BFLOAT16, bad);
    QF_HIP_LAUNCH();
    QF_HIP(hipMemcpy(&hbad, bad, sizeof(int), hipMemcpyDeviceToHost));
    if (hbad)
        st = _qf_gpu_fail(call, QF_EUNSUPPORTED, "this build has no FP8 MFMA code for the device's architecture");
done:
    if (bad)
        (void)hipFree(bad);
    return st;
}
