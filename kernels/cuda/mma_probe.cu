/* mma_probe.cu: single tensor-core instructions on given inputs, for the
 * model-vs-hardware check (tests/cuda/t-model-vs-hw.c compares the results
 * bit for bit with kernels/models).
 *
 * One warp executes ONE mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}
 * .{bf16,f16}.f32 (sm_80+) or m16n8k32 ...e4m3.e4m3 (sm_89+) with C = 0 on
 * a 16 x K matrix A and a K x 8 matrix B given as float values (exactly
 * representable in the input format), so every one of the 128 outputs is
 * one block-FMA result of the tensor core.  Fragment layouts: PTX ISA,
 * "Matrix fragments for mma.m16n8k16" (16-bit: lane = 4 g + t, A rows g /
 * g + 8, columns 2t, 2t+1 (+8); B rows 2t, 2t+1 (+8), column g) and
 * "mma.m16n8k32" (8-bit: 4 consecutive k per register, +16 for the second
 * half); C/D rows g / g + 8, columns 2t, 2t+1.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "_cuda.h"
#include "qf_cuda.h"

__device__ static uint32_t pack16(float lo, float hi, int bf)
{
    uint16_t a, b;
    if (bf) {
        __nv_bfloat16 x = __float2bfloat16_rn(lo), y = __float2bfloat16_rn(hi);
        a = *(uint16_t *)&x;
        b = *(uint16_t *)&y;
    } else {
        __half x = __float2half_rn(lo), y = __float2half_rn(hi);
        a = *(uint16_t *)&x;
        b = *(uint16_t *)&y;
    }
    return (uint32_t)a | ((uint32_t)b << 16);
}

/* kind 0 bf16, 1 f16 (K = 16); kind 2 e4m3 (K = 32).  A [16][K], B [K][8],
 * D [16][8] row-major floats. */
__global__ void k_mma_probe(const float *A, const float *B, float *D, int kind, int *bad)
{
    int lane = (int)threadIdx.x, g = lane >> 2, t = lane & 3;
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (kind < 2) {
        const int K = 16, bf = kind == 0;
        uint32_t a[4], b[2];
        a[0] = pack16(A[g * K + 2 * t], A[g * K + 2 * t + 1], bf);
        a[1] = pack16(A[(g + 8) * K + 2 * t], A[(g + 8) * K + 2 * t + 1], bf);
        a[2] = pack16(A[g * K + 2 * t + 8], A[g * K + 2 * t + 9], bf);
        a[3] = pack16(A[(g + 8) * K + 2 * t + 8], A[(g + 8) * K + 2 * t + 9], bf);
        b[0] = pack16(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g], bf);
        b[1] = pack16(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g], bf);
        if (bf)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        else
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
        const int K = 32;
        uint32_t a[4], b[2];
        for (int h = 0; h < 2; h++) {
            uint32_t w0 = 0, w1 = 0, wb = 0;
            for (int j = 0; j < 4; j++) {
                int kk = h * 16 + t * 4 + j;
                w0 |= (uint32_t)__nv_cvt_float_to_fp8(A[g * K + kk], __NV_SATFINITE, __NV_E4M3) << (8 * j);
                w1 |= (uint32_t)__nv_cvt_float_to_fp8(A[(g + 8) * K + kk], __NV_SATFINITE, __NV_E4M3)
                      << (8 * j);
                wb |= (uint32_t)__nv_cvt_float_to_fp8(B[kk * 8 + g], __NV_SATFINITE, __NV_E4M3) << (8 * j);
            }
            a[2 * h] = w0;
            a[2 * h + 1] = w1;
            b[h] = wb;
        }
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
        if (lane == 0)
            *bad = 1;
#endif
    }
    D[g * 8 + 2 * t] = c[0];
    D[g * 8 + 2 * t + 1] = c[1];
    D[(g + 8) * 8 + 2 * t] = c[2];
    D[(g + 8) * 8 + 2 * t + 1] = c[3];
}

/* ---- wgmma (sm_90a) ---------------------------------------------------------
 * One warpgroup (128 threads) executes ONE
 * wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 with D = 0 + A B on
 * A [64][16] and B [16][8] from shared memory.  Shared-memory layout without
 * swizzling (PTX ISA "Shared Memory Matrix Layout", "Matrix Descriptor"):
 * 8 x 8 "core matrices" of 8 rows of 16 bytes, each 128 contiguous bytes.
 * A is K-major: core matrix (rows 8i.., k 8j..) at byte 256 i + 128 j, so
 * the leading-dimension byte offset (next core matrix along K) is 128 and
 * the stride byte offset (next along M) 256.  B is K-major too (column n
 * holds its 16 k contiguously in two core matrices): (n, k) at element
 * 64 (k / 8) + 8 n + k % 8.  Descriptor: bits 0-13 address >> 4, 16-29
 * LBO >> 4, 32-45 SBO >> 4, swizzle bits 0.  Ordinary stores to shared
 * memory that the tensor core reads need fence.proxy.async before the
 * barrier.  D fragment (m64nNk16, f32): warp w of the group, lane 4 g + t:
 * d0, d1 at row 16 w + g, columns 2t, 2t+1; d2, d3 at row 16 w + g + 8. */
__global__ void k_wgmma_probe(const float *A, const float *B, float *D, int *bad)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(128) __nv_bfloat16 as[64 * 16];
    __shared__ __align__(128) __nv_bfloat16 bs[16 * 8];
    int tid = (int)threadIdx.x, w = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int e = tid; e < 64 * 16; e += 128) {
        int r = e / 16, k = e % 16;
        as[(r / 8) * 128 + (k / 8) * 64 + (r % 8) * 8 + k % 8] = __float2bfloat16_rn(A[e]);
    }
    for (int e = tid; e < 16 * 8; e += 128) {
        int k = e / 8, n = e % 8;
        bs[(k / 8) * 64 + n * 8 + k % 8] = __float2bfloat16_rn(B[e]);
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    {
        uint64_t ad = ((uint64_t)(__cvta_generic_to_shared(as) & 0x3FFFF) >> 4) |
                      ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
        uint64_t bd = ((uint64_t)(__cvta_generic_to_shared(bs) & 0x3FFFF) >> 4) |
                      ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, "
                     "0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "l"(ad), "l"(bd), "r"(0)
                     : "memory");
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    D[(16 * w + g) * 8 + 2 * t] = d[0];
    D[(16 * w + g) * 8 + 2 * t + 1] = d[1];
    D[(16 * w + g + 8) * 8 + 2 * t] = d[2];
    D[(16 * w + g + 8) * 8 + 2 * t + 1] = d[3];
#else
    (void)A, (void)B, (void)D;
    if (threadIdx.x == 0)
        *bad = 1;
#endif
}

extern "C" qf_status qf_cuda_wgmma_probe(const float *a, const float *b, float *d, char *err, size_t err_size)
{
    char *msg = err;
    size_t msg_size = err_size;
    qf_status st = QF_OK;
    float *da = NULL, *db = NULL, *dd = NULL;
    int *bad = NULL, hbad = 0;
    if (!a || !b || !d)
        return QF_EINVAL;
    QF_CU(cudaMalloc((void **)&da, 64 * 16 * sizeof(float)));
    QF_CU(cudaMalloc((void **)&db, 16 * 8 * sizeof(float)));
    QF_CU(cudaMalloc((void **)&dd, 64 * 8 * sizeof(float)));
    QF_CU(cudaMalloc((void **)&bad, sizeof(int)));
    QF_CU(cudaMemset(bad, 0, sizeof(int)));
    QF_CU(cudaMemcpy(da, a, 64 * 16 * sizeof(float), cudaMemcpyHostToDevice));
    QF_CU(cudaMemcpy(db, b, 16 * 8 * sizeof(float), cudaMemcpyHostToDevice));
    k_wgmma_probe<<<1, 128>>>(da, db, dd, bad);
    QF_CU_LAUNCH("k_wgmma_probe");
    QF_CU(cudaMemcpy(d, dd, 64 * 8 * sizeof(float), cudaMemcpyDeviceToHost));
    QF_CU(cudaMemcpy(&hbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
    if (hbad) {
        if (err && err_size)
            snprintf(err, err_size, "wgmma needs an sm_90a build on an sm_90 device");
        st = QF_EUNSUPPORTED;
    }
done:
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(bad);
    return st;
}

extern "C" qf_status qf_cuda_mma_probe(int kind, const float *a, const float *b, float *d, char *err,
                                       size_t err_size)
{
    char *msg = err;
    size_t msg_size = err_size;
    qf_status st = QF_OK;
    float *da = NULL, *db = NULL, *dd = NULL;
    int *bad = NULL, hbad = 0, K = kind == 2 ? 32 : 16;
    if (kind < 0 || kind > 2 || !a || !b || !d)
        return QF_EINVAL;
    QF_CU(cudaMalloc((void **)&da, 16 * K * sizeof(float)));
    QF_CU(cudaMalloc((void **)&db, K * 8 * sizeof(float)));
    QF_CU(cudaMalloc((void **)&dd, 16 * 8 * sizeof(float)));
    QF_CU(cudaMalloc((void **)&bad, sizeof(int)));
    QF_CU(cudaMemset(bad, 0, sizeof(int)));
    QF_CU(cudaMemcpy(da, a, 16 * K * sizeof(float), cudaMemcpyHostToDevice));
    QF_CU(cudaMemcpy(db, b, K * 8 * sizeof(float), cudaMemcpyHostToDevice));
    k_mma_probe<<<1, 32>>>(da, db, dd, kind, bad);
    QF_CU_LAUNCH("k_mma_probe");
    QF_CU(cudaMemcpy(d, dd, 16 * 8 * sizeof(float), cudaMemcpyDeviceToHost));
    QF_CU(cudaMemcpy(&hbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
    if (hbad) {
        if (err && err_size)
            snprintf(err, err_size,
                     "e4m3 mma needs sm_89 or later (no FP8 code in this build for this device)");
        st = QF_EUNSUPPORTED;
    }
done:
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(bad);
    return st;
}
