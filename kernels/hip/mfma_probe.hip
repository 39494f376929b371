/* mfma_probe.hip: ONE matrix-core instruction on given inputs, for the
 * model-vs-hardware check (tests/hip/t-model-vs-hw.c compares its results
 * bit for bit with kernels/models).
 *
 * One wave (64 lanes) executes one v_mfma_f32_16x16x16bf16_1k or
 * v_mfma_f32_16x16x16f16 with C = 0 on A [16][16] and B [16][16] given as
 * float values exactly representable in the input format.  Operand layout
 * (AMD matrix instruction calculator, 16x16x16, 4 elements per lane): lane
 * l holds A[l % 16][4 (l / 16) + i] and B[4 (l / 16) + i][l % 16], and
 * receives D[4 (l / 16) + i][l % 16], i = 0..3.  Built for gfx90a and
 * gfx940 (both have the two instructions) and, by clang-19, gfx942;
 * elsewhere the kernel raises a flag instead.
 *
 * Kinds 2 and 3 (gfx940/gfx942 only): v_mfma_f32_16x16x32_fp8_fp8 on
 * e4m3fnuz values and ..._bf8_bf8 on e5m2fnuz values, A [16][32] and B
 * [32][16]; lane l holds A[l % 16][8 (l / 16) + i] and B[8 (l / 16) + i]
 * [l % 16], i = 0..7, one byte each in a 64-bit register, as gemm_fp8.hip.
 * The codes come from the hardware conversion (v_cvt_pk_fp8_f32 /
 * v_cvt_pk_bf8_f32), exact here since the inputs are representable.
 */
#include <hip/hip_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "_hip.h"
#include "qf_hip.h"

typedef _Float16 qf_half4 __attribute__((ext_vector_type(4)));
typedef short qf_short4 __attribute__((ext_vector_type(4)));
typedef float qf_float4 __attribute__((ext_vector_type(4)));

static __global__ void hk_mfma_probe(const float *A, const float *B, float *D, int bf, int *bad)
{
    int l = (int)threadIdx.x;
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx942__)
    qf_float4 c = {0.f, 0.f, 0.f, 0.f};
    int kb = 4 * (l / 16);
    if (bf) {
        qf_short4 a, b;
        for (int i = 0; i < 4; i++) {
            /* the inputs are bfloat16 values: their float32 bits end in 16 zeros */
            a[i] = (short)(__float_as_uint(A[(l % 16) * 16 + kb + i]) >> 16);
            b[i] = (short)(__float_as_uint(B[(kb + i) * 16 + l % 16]) >> 16);
        }
        c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
    } else {
        qf_half4 a, b;
        for (int i = 0; i < 4; i++) {
            a[i] = (_Float16)A[(l % 16) * 16 + kb + i];
            b[i] = (_Float16)B[(kb + i) * 16 + l % 16];
        }
        c = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
    }
    for (int i = 0; i < 4; i++)
        D[(kb + i) * 16 + l % 16] = c[i];
#else
    if (l == 0)
        *bad = 1;
#endif
}

#if defined(__gfx940__) || defined(__gfx942__)
/* The fnuz code of v (exactly representable), by the hardware conversion. */
__device__ static inline uint64_t probe_fp8(float v, int bf8)
{
    int w = bf8 ? __builtin_amdgcn_cvt_pk_bf8_f32(v, v, 0, false) : __builtin_amdgcn_cvt_pk_fp8_f32(v, v, 0, false);
    return (uint64_t)(w & 0xff);
}
#endif

static __global__ void hk_mfma_probe_fp8(const float *A, const float *B, float *D, int bf8, int *bad)
{
    int l = (int)threadIdx.x;
#if defined(__gfx940__) || defined(__gfx942__)
    qf_float4 c = {0.f, 0.f, 0.f, 0.f};
    uint64_t a = 0, b = 0;
    int kb = 8 * (l / 16);
    for (int i = 0; i < 8; i++) {
        a |= probe_fp8(A[(l % 16) * 32 + kb + i], bf8) << (8 * i);
        b |= probe_fp8(B[(kb + i) * 16 + l % 16], bf8) << (8 * i);
    }
    if (bf8)
        c = __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8((long)a, (long)b, c, 0, 0, 0);
    else
        c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8((long)a, (long)b, c, 0, 0, 0);
    for (int i = 0; i < 4; i++)
        D[(4 * (l / 16) + i) * 16 + l % 16] = c[i];
#else
    (void)A, (void)B, (void)D, (void)bf8;
    if (l == 0)
        *bad = 1;
#endif
}

#if defined(QF_HIP_HAVE_GFX942) && !defined(QF_HIP_GFX942)
extern "C" qf_status qf_hip_mfma_probe_gfx942(int kind, const float *a, const float *b, float *d, char *err,
                                              size_t err_size);
#endif

extern "C" qf_status QF_HIP_ENTRY(qf_hip_mfma_probe)(int kind, const float *a, const float *b, float *d, char *err,
                                       size_t err_size)
{
    char *msg = err;
    size_t msg_size = err_size;
    qf_status st = QF_OK;
    float *da = NULL, *db = NULL, *dd = NULL;
    int *bad = NULL, hbad = 0;
    const size_t bytes = 16 * 16 * sizeof(float), in_bytes = (kind >= 2 ? 32 : 16) * 16 * sizeof(float);
    if (kind < 0 || kind > 3 || !a || !b || !d)
        return QF_EINVAL;
#if defined(QF_HIP_HAVE_GFX942) && !defined(QF_HIP_GFX942)
    /* a gfx942 device runs the clang-19 build of this probe */
    if (qf_hip_device_is_gfx942())
        return qf_hip_mfma_probe_gfx942(kind, a, b, d, err, err_size);
#endif
    QF_HIP(hipMalloc((void **)&da, in_bytes));
    QF_HIP(hipMalloc((void **)&db, in_bytes));
    QF_HIP(hipMalloc((void **)&dd, bytes));
    QF_HIP(hipMalloc((void **)&bad, sizeof(int)));
    QF_HIP(hipMemset(bad, 0, sizeof(int)));
    QF_HIP(hipMemcpy(da, a, in_bytes, hipMemcpyHostToDevice));
    QF_HIP(hipMemcpy(db, b, in_bytes, hipMemcpyHostToDevice));
    if (kind >= 2)
        hipLaunchKernelGGL(hk_mfma_probe_fp8, dim3(1), dim3(64), 0, 0, da, db, dd, kind == 3, bad);
    else
        hipLaunchKernelGGL(hk_mfma_probe, dim3(1), dim3(64), 0, 0, da, db, dd, kind == 0, bad);
    QF_HIP_LAUNCH();
    QF_HIP(hipMemcpy(d, dd, bytes, hipMemcpyDeviceToHost));
    QF_HIP(hipMemcpy(&hbad, bad, sizeof(int), hipMemcpyDeviceToHost));
    if (hbad) {
        if (err && err_size)
            snprintf(err, err_size, "no MFMA code in this build for the device's architecture");
        st = QF_EUNSUPPORTED;
    }
done:
    (void)hipFree(da);
    (void)hipFree(db);
    (void)hipFree(dd);
    (void)hipFree(bad);
    return st;
}
