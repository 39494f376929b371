/* kernels.cu: the CUDA kernels registered by kernels/cuda/table.c.
 *
 * Each run function is a qf_kernel_run_fn: it receives device tensors of
 * CODES (qf_kernel.h) staged by the runner, checks them (dense row-major;
 * what table.c's supports callbacks let through), launches, checks the
 * launch (cudaGetLastError) and the execution (cudaDeviceSynchronize), and
 * reports any failure in call->msg.  What each computes, in the order of
 * its roundings, is written next to it; table.c states the claims.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <mma.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "_cuda.h"
#include "_cuda_kernels.h"
#include "_gpu_args.h"

/* ---- Helpers ------------------------------------------------------------- */

/* Output codes from float32 values, nearest even (cuda_bf16.h / cuda_fp16.h
 * __float2bfloat16_rn, __float2half_rn). */
__device__ static inline void store_out(void *d, size_t i, float v, int fmt)
{
    if (fmt == QF_FLOAT32)
        ((float *)d)[i] = v;
    else if (fmt == QF_BFLOAT16) {
        __nv_bfloat16 b = __float2bfloat16_rn(v);
        ((uint16_t *)d)[i] = *(uint16_t *)&b;
    } else {
        __half h = __float2half_rn(v);
        ((uint16_t *)d)[i] = *(uint16_t *)&h;
    }
}

__global__ void k_convert(const float *src, void *dst, size_t n, int fmt)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        store_out(dst, i, src[i], fmt);
}

/* dst[r][c] = src[c][r] (src column-major rows x cols), converted to fmt. */
__global__ void k_transpose_convert(const float *src, void *dst, int rows, int cols, int fmt)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols) {
        int r = (int)(i / cols), c = (int)(i % cols);
        store_out(dst, i, src[(size_t)c * rows + r], fmt);
    }
}

/* dst [cols][rows] = src [rows][cols], bytes. */
__global__ void k_transpose_u8(const uint8_t *src, uint8_t *dst, int rows, int cols)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols) {
        int r = (int)(i / cols), c = (int)(i % cols);
        dst[(size_t)c * rows + r] = src[i];
    }
}

static unsigned blocks_for(size_t n, unsigned t)
{
    return (unsigned)((n + t - 1) / t);
}

/* The checked GEMM arguments every CUDA GEMM accepts: no transposes, batch
 * 1, not grouped, alpha 1, beta 0 (c absent), dense row-major. */
static qf_status gemm_args(const qf_kernel_call *call, const qf_op_gemm **g)
{
    const qf_op_gemm *o;
    const qf_dtype_tuple *t = call->dtype;
    qf_status s;
    if (call->op->op != QF_OP_GEMM)
        return _qf_gpu_fail(call, QF_EINVAL, "not a gemm call");
    o = &call->op->u.gemm;
    if (o->trans_a || o->trans_b || o->batch > 1 || o->groups || o->alpha != 1.0 || o->beta != 0.0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "only d = a b (no transposes, batch 1, alpha 1, beta 0)");
    if ((s = _qf_gpu_dense2(call, &call->in[0], "a", t->in[0], (int64_t)o->m, (int64_t)o->k)) != QF_OK ||
        (s = _qf_gpu_dense2(call, &call->in[1], "b", t->in[1], (int64_t)o->k, (int64_t)o->n)) != QF_OK ||
        (s = _qf_gpu_dense2(call, &call->out[0], "d", t->out[0], (int64_t)o->m, (int64_t)o->n)) != QF_OK)
        return s;
    *g = o;
    return QF_OK;
}

/* ---- Tensor-core GEMM (WMMA, bf16/f16 in, float32 accumulator) -------------
 * One warp per 16x16 tile of D: for k0 = 0, 16, ..., the tile's float32
 * accumulator += A[tile][k0:k0+16] B[k0:k0+16][tile] by one wmma::mma_sync
 * (HMMA m16n8k16 instructions: the tensor core's block FMA,
 * docs/numerics.md#matrix-units), in order of k0; the float32 tile is
 * written, then rounded once to the output format (nearest even).
 * m, n, k multiples of 16 (table.c's limits). */
using namespace nvcuda;

template <typename T> __global__ void k_wmma(const T *A, const T *B, float *D, int M, int N, int K)
{
    int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    int tiles_n = N / 16, tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm >= M / 16)
        return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k0, K);
        wmma::load_matrix_sync(b, B + (size_t)k0 * N + tn * 16, N);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(D + (size_t)tm * 16 * N + tn * 16, c, N, wmma::mem_row_major);
}

extern "C" qf_status qf_cuda_gemm_wmma_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    qf_status st = gemm_args(call, &g);
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    float *acc = NULL;
    int M, N, K, bf = call->dtype->in[0] == QF_BFLOAT16, fo = call->dtype->out[0];
    unsigned warps;
    (void)ctx;
    if (st != QF_OK)
        return st;
    M = (int)g->m, N = (int)g->n, K = (int)g->k;
    if (M % 16 || N % 16 || K % 16)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "m, n and k must be multiples of 16");
    if (M == 0 || N == 0)
        return QF_OK;
    if (fo == QF_FLOAT32)
        acc = (float *)call->out[0].data;
    else
        QF_CU(cudaMalloc((void **)&acc, (size_t)M * N * sizeof(float)));
    warps = (unsigned)(M / 16) * (unsigned)(N / 16);
    if (K == 0)
        QF_CU(cudaMemset(acc, 0, (size_t)M * N * sizeof(float)));
    else if (bf)
        k_wmma<__nv_bfloat16><<<(warps + 3) / 4, 128>>>(
            (const __nv_bfloat16 *)call->in[0].data, (const __nv_bfloat16 *)call->in[1].data, acc, M, N, K);
    else
        k_wmma<__half><<<(warps + 3) / 4, 128>>>((const __half *)call->in[0].data,
                                                 (const __half *)call->in[1].data, acc, M, N, K);
    QF_CU_LAUNCH("k_wmma");
    if (fo != QF_FLOAT32) {
        size_t n = (size_t)M * N;
        k_convert<<<blocks_for(n, 256), 256>>>(acc, call->out[0].data, n, fo);
        QF_CU_LAUNCH("k_convert");
    }
done:
    if (acc && acc != call->out[0].data)
        cudaFree(acc);
    return st;
}

/* ---- FP8 GEMM on mma.sync (sm_89 and later) -------------------------------
 * One warp per 16x8 tile of D; for k0 = 0, 32, ...: one
 * mma.sync.aligned.m16n8k32.row.col.f32.<ta>.<tb>.f32 (PTX ISA 8.4,
 * sm_89+), accumulating in the tensor core's float32 accumulator in order
 * of k0 (no promotion).  Fragments as the PTX ISA's "Matrix fragments for
 * mma.m16n8k32" (8-bit types): lane = 4 g + t; A regs: rows g / g+8, bytes
 * k = 4t..4t+3 (+16); B regs: column g, k = 4t..4t+3 (+16); C: rows g /
 * g+8, columns 2t, 2t+1.  Epilogue: acc * (s_a s_b) with s_a s_b exact in
 * binary64 and the product rounded to binary64, then once more to the
 * output format (nearest even).  k a multiple of 32, m of 16, n of 8.
 * Compiled for sm_80 too, where the body only raises *bad (the host never
 * launches it there: the kernel records claim sm_89 / sm_90 only). */
template <int EA, int EB>
__global__ void k_fp8_mma(const uint8_t *A, const uint8_t *B, const float *sa, const float *sb, void *D,
                          int M, int N, int K, int fo, int *bad)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = (int)(threadIdx.x % 32);
    int tiles_n = N / 8, tm = warp / tiles_n, tn = warp % tiles_n, g = lane >> 2, t = lane & 3;
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (tm >= M / 16)
        return;
    for (int k0 = 0; k0 < K; k0 += 32) {
        uint32_t a[4], b[2];
        const uint8_t *r0 = A + (size_t)(tm * 16 + g) * K + k0, *r1 = r0 + (size_t)8 * K;
        for (int h = 0; h < 2; h++) {
            uint32_t w0 = 0, w1 = 0, wb = 0;
            for (int j = 0; j < 4; j++) {
                int kk = h * 16 + t * 4 + j;
                w0 |= (uint32_t)r0[kk] << (8 * j);
                w1 |= (uint32_t)r1[kk] << (8 * j);
                wb |= (uint32_t)B[(size_t)(k0 + kk) * N + tn * 8 + g] << (8 * j);
            }
            a[2 * h] = w0;
            a[2 * h + 1] = w1;
            b[h] = wb;
        }
        if (EA == 0 && EB == 0)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        else if (EA == 0 && EB == 1)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        else if (EA == 1 && EB == 0)
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        else
            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    {
        double s = (double)*sa * (double)*sb;
        for (int i = 0; i < 4; i++) {
            int row = tm * 16 + g + (i >= 2 ? 8 : 0), col = tn * 8 + 2 * t + (i & 1);
            store_out(D, (size_t)row * N + col, (float)((double)c[i] * s), fo);
        }
    }
#else
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *bad = 1;
#endif
}

static int fp8_code(qf_format_id f)
{
    return f == QF_FLOAT8_E4M3FN ? 0 : f == QF_FLOAT8_E5M2 ? 1 : -1;
}

/* The device's compute capability times 10 (89, 90), 0 on failure. */
static int device_cc(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return 0;
    return major * 10 + minor;
}

static qf_status scaled_args(const qf_kernel_call *call, const qf_op_gemm **g)
{
    qf_status s = gemm_args(call, g);
    int i;
    if (s != QF_OK)
        return s;
    for (i = 0; i < 2; i++) {
        const qf_tensor_scale *sc = &call->in[i].scale;
        if (sc->kind != QF_SCALE_TENSOR || sc->format != QF_FLOAT32 || !sc->data || sc->count != 1)
            return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: one float32 per-tensor scale expected",
                                i ? "b" : "a");
    }
    if (fp8_code(call->dtype->in[0]) < 0 || fp8_code(call->dtype->in[1]) < 0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "inputs must be float8_e4m3fn or float8_e5m2");
    return QF_OK;
}

extern "C" qf_status qf_cuda_gemm_fp8_mma_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    qf_status st = scaled_args(call, &g);
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    int *bad = NULL, hbad = 0, M, N, K, ea, eb, fo = call->dtype->out[0];
    unsigned warps, nb;
    const uint8_t *A;
    const uint8_t *B;
    const float *sa, *sb;
    void *D;
    (void)ctx;
    if (st != QF_OK)
        return st;
    if (device_cc() < 89)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "FP8 mma needs sm_89 or later");
    M = (int)g->m, N = (int)g->n, K = (int)g->k;
    if (M % 16 || N % 8 || K % 32)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "m, n, k must be multiples of 16, 8, 32");
    if (M == 0 || N == 0)
        return QF_OK;
    if (K == 0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "k = 0");
    ea = fp8_code(call->dtype->in[0]);
    eb = fp8_code(call->dtype->in[1]);
    A = (const uint8_t *)call->in[0].data;
    B = (const uint8_t *)call->in[1].data;
    sa = (const float *)call->in[0].scale.data;
    sb = (const float *)call->in[1].scale.data;
    D = call->out[0].data;
    QF_CU(cudaMalloc((void **)&bad, sizeof(int)));
    QF_CU(cudaMemset(bad, 0, sizeof(int)));
    warps = (unsigned)(M / 16) * (unsigned)(N / 8);
    nb = (warps + 3) / 4;
    if (ea == 0 && eb == 0)
        k_fp8_mma<0, 0><<<nb, 128>>>(A, B, sa, sb, D, M, N, K, fo, bad);
    else if (ea == 0)
        k_fp8_mma<0, 1><<<nb, 128>>>(A, B, sa, sb, D, M, N, K, fo, bad);
    else if (eb == 0)
        k_fp8_mma<1, 0><<<nb, 128>>>(A, B, sa, sb, D, M, N, K, fo, bad);
    else
        k_fp8_mma<1, 1><<<nb, 128>>>(A, B, sa, sb, D, M, N, K, fo, bad);
    QF_CU_LAUNCH("k_fp8_mma");
    QF_CU(cudaMemcpy(&hbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
    if (hbad)
        st = _qf_gpu_fail(call, QF_EUNSUPPORTED,
                          "this build has no FP8 mma code for the device's architecture");
done:
    if (bad)
        cudaFree(bad);
    return st;
}

/* ---- cuBLAS (vendor path) ---------------------------------------------------
 * cublasGemmEx on the row-major problem as its column-major transpose
 * (D^T = B^T A^T), compute type CUBLAS_COMPUTE_32F with the default math
 * mode (no TF32 for float32 inputs, cuBLAS documentation "cublasGemmEx"),
 * output written by cuBLAS in the output type.  The handle is the kernel's
 * init context, created in the kernel's process after the device opened. */
extern "C" qf_status qf_cuda_cublas_init(const qf_kernel *k, void **ctx)
{
    cublasHandle_t h;
    (void)k;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
        return QF_EIO;
    *ctx = h;
    return QF_OK;
}

extern "C" void qf_cuda_cublas_fini(void *ctx)
{
    if (ctx)
        cublasDestroy((cublasHandle_t)ctx);
}

static cudaDataType cuda_type(qf_format_id f)
{
    switch (f) {
    case QF_BFLOAT16: return CUDA_R_16BF;
    case QF_FLOAT16: return CUDA_R_16F;
    case QF_FLOAT8_E4M3FN: return CUDA_R_8F_E4M3;
    case QF_FLOAT8_E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
    }
}

extern "C" qf_status qf_cuda_cublas_gemm_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    qf_status st = gemm_args(call, &g);
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    float one = 1.0f, zero = 0.0f;
    cublasStatus_t cs;
    if (st != QF_OK)
        return st;
    if (!ctx)
        return _qf_gpu_fail(call, QF_EINVAL, "no cuBLAS handle");
    if (g->m == 0 || g->n == 0)
        return QF_OK;
    if (g->k == 0) { /* cuBLAS wants lda >= 1: the empty sum is +0 in every format */
        QF_CU(cudaMemset(call->out[0].data, 0,
                         call->out[0].bytes ? call->out[0].bytes : qf_tensor_dense_bytes(&call->out[0])));
        goto done;
    }
    cs = cublasGemmEx((cublasHandle_t)ctx, CUBLAS_OP_N, CUBLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, &one,
                      call->in[1].data, cuda_type(call->dtype->in[1]), (int)g->n, call->in[0].data,
                      cuda_type(call->dtype->in[0]), (int)g->k, &zero, call->out[0].data,
                      cuda_type(call->dtype->out[0]), (int)g->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (cs != CUBLAS_STATUS_SUCCESS)
        return _qf_gpu_fail(call, QF_EIO, "cublasGemmEx: %s", cublasGetStatusString(cs));
    QF_CU(cudaDeviceSynchronize());
done:
    return st;
}

/* ---- cuBLASLt FP8 (vendor path) ---------------------------------------------
 * cublasLtMatmul with FP8 A and B and per-tensor scales given as device
 * pointers (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER), which
 * needs the "TN" layout: the Lt problem is the column-major m x n
 * D_lt = A_lt^T B_lt with A_lt = our row-major A read as k x m and B_lt =
 * B transposed on the device (n x k row-major = k x n column-major).
 * D_lt is float32 (column-major); it is transposed into the row-major D and
 * rounded once to the output format (nearest even).  Default settings: no
 * CUBLASLT_MATMUL_DESC_FAST_ACCUM. */
#define LT_TRY(call)                                                                                         \
    do {                                                                                                     \
        cublasStatus_t s_ = (call);                                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
            st = _qf_gpu_fail(callp, QF_EIO, "%s: %s", #call, cublasGetStatusString(s_));                    \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

extern "C" qf_status qf_cuda_cublaslt_init(const qf_kernel *k, void **ctx)
{
    cublasLtHandle_t h;
    (void)k;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS)
        return QF_EIO;
    *ctx = h;
    return QF_OK;
}

extern "C" void qf_cuda_cublaslt_fini(void *ctx)
{
    if (ctx)
        cublasLtDestroy((cublasLtHandle_t)ctx);
}

extern "C" qf_status qf_cuda_cublaslt_fp8_run(void *ctx, const qf_kernel_call *call)
{
    const qf_kernel_call *callp = call;
    const qf_op_gemm *g;
    qf_status st = scaled_args(call, &g);
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    uint8_t *bt = NULL;
    float *dlt = NULL;
    void *ws = NULL;
    size_t ws_size = 32u << 20;
    int nres = 0;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    float one = 1.0f, zero = 0.0f;
    const void *sa, *sb;
    uint64_t M, N, K;
    if (st != QF_OK)
        return st;
    if (!ctx)
        return _qf_gpu_fail(call, QF_EINVAL, "no cuBLASLt handle");
    if (device_cc() < 89)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "FP8 cuBLASLt needs sm_89 or later");
    M = g->m, N = g->n, K = g->k;
    if (M == 0 || N == 0)
        return QF_OK;
    if (K == 0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "k = 0");
    sa = call->in[0].scale.data;
    sb = call->in[1].scale.data;
    QF_CU(cudaMalloc((void **)&bt, N * K));
    QF_CU(cudaMalloc((void **)&dlt, M * N * sizeof(float)));
    QF_CU(cudaMalloc(&ws, ws_size));
    k_transpose_u8<<<blocks_for(K * N, 256), 256>>>((const uint8_t *)call->in[1].data, bt, (int)K, (int)N);
    QF_CU_LAUNCH("k_transpose_u8");
    LT_TRY(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
    LT_TRY(cublasLtMatrixLayoutCreate(&la, cuda_type(call->dtype->in[0]), K, M, K));
    LT_TRY(cublasLtMatrixLayoutCreate(&lb, cuda_type(call->dtype->in[1]), K, N, K));
    LT_TRY(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, M, N, M));
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size,
                                                sizeof ws_size));
    LT_TRY(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)ctx, op, la, lb, ld, ld, pref, 1, &heur, &nres));
    if (nres == 0) {
        st = _qf_gpu_fail(call, QF_EUNSUPPORTED, "cuBLASLt has no FP8 algorithm for this problem");
        goto done;
    }
    LT_TRY(cublasLtMatmul((cublasLtHandle_t)ctx, op, &one, call->in[0].data, la, bt, lb, &zero, dlt, ld, dlt,
                          ld, &heur.algo, ws, ws_size, 0));
    QF_CU(cudaDeviceSynchronize());
    k_transpose_convert<<<blocks_for(M * N, 256), 256>>>(dlt, call->out[0].data, (int)M, (int)N,
                                                         call->dtype->out[0]);
    QF_CU_LAUNCH("k_transpose_convert");
done:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (ld)
        cublasLtMatrixLayoutDestroy(ld);
    if (op)
        cublasLtMatmulDescDestroy(op);
    cudaFree(bt);
    cudaFree(dlt);
    cudaFree(ws);
    return st;
}

/* ---- Row reductions: one 256-thread block per row --------------------------
 * block_sum: each thread sums its strided elements sequentially (float32,
 * nearest even), then the 256 partials are added in a fixed pairwise tree
 * (shared memory, halving strides).  Fixed launch shape, so bitwise
 * deterministic run to run. */
#define RT 256

__device__ static float block_sum(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = RT / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s)
            sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + s];
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

__device__ static float block_max(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = RT / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s)
            sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

/* RMSNorm: ss = tree sum of x^2 (each square rounded), r = 1 / sqrtf(ss / n
 * + eps) (IEEE sqrtf and division: __fsqrt_rn, __fdiv_rn), y = (x * r) * w
 * + b, each operation rounded (no contraction: __fmul_rn / __fadd_rn). */
__global__ void k_rmsnorm(const float *x, const float *w, const float *b, float *y, int cols, float eps)
{
    __shared__ float sh[RT];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.f, r;
    for (int j = threadIdx.x; j < cols; j += RT)
        ss = __fadd_rn(ss, __fmul_rn(xr[j], xr[j]));
    ss = block_sum(ss, sh);
    r = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, (float)cols), eps)));
    for (int j = threadIdx.x; j < cols; j += RT) {
        float v = __fmul_rn(xr[j], r);
        if (w)
            v = __fmul_rn(v, w[j]);
        if (b)
            v = __fadd_rn(v, b[j]);
        yr[j] = v;
    }
}

extern "C" qf_status qf_cuda_rmsnorm_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_norm *o = &call->op->u.norm;
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    qf_status st;
    (void)ctx;
    if (call->op->op != QF_OP_RMSNORM)
        return _qf_gpu_fail(call, QF_EINVAL, "not an rmsnorm call");
    if (o->weight_offset != 0.0 || !(o->eps >= 0) || (double)(float)o->eps != o->eps)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "weight_offset 0 and a float32 eps >= 0 only");
    if ((st = _qf_gpu_dense2(call, &call->in[0], "x", QF_FLOAT32, (int64_t)o->rows, (int64_t)o->cols)) !=
            QF_OK ||
        (st = _qf_gpu_dense2(call, &call->out[0], "y", QF_FLOAT32, (int64_t)o->rows, (int64_t)o->cols)) !=
            QF_OK ||
        (call->in[1].data &&
         (st = _qf_gpu_dense_n(call, &call->in[1], "weight", QF_FLOAT32, o->cols)) != QF_OK) ||
        (call->in[2].data &&
         (st = _qf_gpu_dense_n(call, &call->in[2], "bias", QF_FLOAT32, o->cols)) != QF_OK))
        return st;
    if (o->rows == 0 || o->cols == 0)
        return QF_OK;
    k_rmsnorm<<<(unsigned)o->rows, RT>>>((const float *)call->in[0].data, (const float *)call->in[1].data,
                                         (const float *)call->in[2].data, (float *)call->out[0].data,
                                         (int)o->cols, (float)o->eps);
    QF_CU_LAUNCH("k_rmsnorm");
done:
    return st;
}

/* Softmax: m = max x (tree), s = tree sum of e_j = expf(x_j * scale - m')
 * (CUDA's expf: 2 ulp, CUDA C++ Programming Guide, "Mathematical
 * functions"), y_j = e_j / s (__fdiv_rn); log: y_j = (x_j - m') - logf(s). */
__global__ void k_softmax(const float *x, float *y, int cols, float scale, int lg)
{
    __shared__ float sh[RT];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    for (int j = threadIdx.x; j < cols; j += RT)
        m = fmaxf(m, __fmul_rn(xr[j], scale));
    m = block_max(m, sh);
    for (int j = threadIdx.x; j < cols; j += RT)
        s = __fadd_rn(s, expf(__fsub_rn(__fmul_rn(xr[j], scale), m)));
    s = block_sum(s, sh);
    for (int j = threadIdx.x; j < cols; j += RT) {
        float d = __fsub_rn(__fmul_rn(xr[j], scale), m);
        yr[j] = lg ? __fsub_rn(d, logf(s)) : __fdiv_rn(expf(d), s);
    }
}

extern "C" qf_status qf_cuda_softmax_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_softmax *o = &call->op->u.softmax;
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    qf_status st;
    (void)ctx;
    if (call->op->op != QF_OP_SOFTMAX)
        return _qf_gpu_fail(call, QF_EINVAL, "not a softmax call");
    if ((double)(float)o->scale != o->scale)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "the scale must be a float32 value");
    if ((st = _qf_gpu_dense2(call, &call->in[0], "x", QF_FLOAT32, (int64_t)o->rows, (int64_t)o->cols)) !=
            QF_OK ||
        (st = _qf_gpu_dense2(call, &call->out[0], "y", QF_FLOAT32, (int64_t)o->rows, (int64_t)o->cols)) !=
            QF_OK)
        return st;
    if (o->rows == 0 || o->cols == 0)
        return QF_OK;
    k_softmax<<<(unsigned)o->rows, RT>>>((const float *)call->in[0].data, (float *)call->out[0].data,
                                         (int)o->cols, (float)o->scale, o->log);
    QF_CU_LAUNCH("k_softmax");
done:
    return st;
}

/* ---- Flash-attention-style forward (bf16) -----------------------------------
 * One warp per query row (b, h, i), keys in tiles of 32 (lane j scores key
 * t + j): s = (q . k) in float32 (sequential over head_dim, products and
 * sums rounded), times scale; online softmax per tile: m_new = max(m,
 * tile max), alpha = expf(m - m_new), l = l alpha + sum of p (warp tree),
 * with p = expf(s - m_new) ROUNDED TO BFLOAT16 before P V (as
 * FlashAttention-2 feeds P to the tensor cores in bf16); o = o alpha + sum
 * over the tile of p v (float32, in key order).  out = o / l rounded to
 * bfloat16; lse = m + logf(l) in float32.  Causal (top-left) or no mask;
 * GQA by heads / kv_heads; head_dim_v <= 256. */
__global__ void k_attention(const uint16_t *Q, const uint16_t *Kt, const uint16_t *V, uint16_t *O, float *LSE,
                            int B, int H, int HK, int SQ, int SK, int D, int DV, float scale, int causal)
{
    int row = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = (int)(threadIdx.x % 32);
    int i, h, b, hk;
    float m = -INFINITY, l = 0.f, o[8];
    if (row >= B * H * SQ)
        return;
    i = row % SQ;
    h = (row / SQ) % H;
    b = row / (SQ * H);
    hk = h / (H / HK);
    for (int c = 0; c < 8; c++)
        o[c] = 0.f;
    const uint16_t *q = Q + (((size_t)b * H + h) * SQ + i) * D;
    const uint16_t *kb = Kt + ((size_t)b * HK + hk) * SK * D;
    const uint16_t *vb = V + ((size_t)b * HK + hk) * SK * DV;
    int kend = causal ? (i + 1 < SK ? i + 1 : SK) : SK;
    for (int t0 = 0; t0 < kend; t0 += 32) {
        int j = t0 + lane;
        float s = -INFINITY, tm, p, ps, alpha;
        if (j < kend) {
            float acc = 0.f;
            for (int d = 0; d < D; d++)
                acc = __fadd_rn(acc, __fmul_rn(__uint_as_float((uint32_t)q[d] << 16),
                                               __uint_as_float((uint32_t)kb[(size_t)j * D + d] << 16)));
            s = __fmul_rn(acc, scale);
        }
        tm = s;
        for (int off = 16; off > 0; off /= 2)
            tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, off));
        tm = fmaxf(m, tm);
        alpha = m == -INFINITY ? 0.f : expf(__fsub_rn(m, tm));
        p = j < kend ? __bfloat162float(__float2bfloat16_rn(expf(__fsub_rn(s, tm)))) : 0.f;
        ps = p;
        for (int off = 16; off > 0; off /= 2)
            ps = __fadd_rn(ps, __shfl_xor_sync(0xffffffffu, ps, off));
        l = __fadd_rn(__fmul_rn(l, alpha), ps);
        m = tm;
        for (int c = 0; c < 8; c++)
            o[c] = __fmul_rn(o[c], alpha);
        for (int jj = 0; jj < 32 && t0 + jj < kend; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            for (int c = 0; c < 8; c++) {
                int d = lane + 32 * c;
                if (d < DV)
                    o[c] = __fadd_rn(
                        o[c], __fmul_rn(pj, __uint_as_float((uint32_t)vb[(size_t)(t0 + jj) * DV + d] << 16)));
            }
        }
    }
    for (int c = 0; c < 8; c++) {
        int d = lane + 32 * c;
        if (d < DV) {
            __nv_bfloat16 r = __float2bfloat16_rn(__fdiv_rn(o[c], l));
            O[(size_t)row * DV + d] = *(uint16_t *)&r;
        }
    }
    if (LSE && lane == 0)
        LSE[row] = __fadd_rn(m, logf(l));
}

extern "C" qf_status qf_cuda_attention_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_attention *a = &call->op->u.attention;
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    qf_status st;
    size_t dv, rows;
    float scale;
    (void)ctx;
    if (call->op->op != QF_OP_ATTENTION)
        return _qf_gpu_fail(call, QF_EINVAL, "not an attention call");
    if ((st = _qf_gpu_supported(call)) !=
        QF_OK)
        return st;
    dv = a->head_dim_v ? a->head_dim_v : a->head_dim;
    rows = a->batch * a->heads * a->seq_q;
    scale = a->scale != 0 ? (float)a->scale : 1.0f / sqrtf((float)a->head_dim);
    if (a->scale != 0 && (double)scale != a->scale)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "the scale must be a float32 value");
    if ((st = _qf_gpu_dense_n(call, &call->in[0], "q", QF_BFLOAT16, rows * a->head_dim)) != QF_OK ||
        (st = _qf_gpu_dense_n(call, &call->in[1], "k", QF_BFLOAT16,
                              a->batch * a->kv_heads * a->seq_k * a->head_dim)) != QF_OK ||
        (st = _qf_gpu_dense_n(call, &call->in[2], "v", QF_BFLOAT16,
                              a->batch * a->kv_heads * a->seq_k * dv)) != QF_OK ||
        (st = _qf_gpu_dense_n(call, &call->out[0], "out", QF_BFLOAT16, rows * dv)) != QF_OK ||
        (call->out[1].data && (st = _qf_gpu_dense_n(call, &call->out[1], "lse", QF_FLOAT32, rows)) != QF_OK))
        return st;
    if (call->in[3].data)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "no mask tensor");
    if (rows == 0 || dv == 0)
        return QF_OK;
    if (a->seq_k == 0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "seq_k = 0");
    k_attention<<<blocks_for(rows * 32, 128), 128>>>(
        (const uint16_t *)call->in[0].data, (const uint16_t *)call->in[1].data,
        (const uint16_t *)call->in[2].data, (uint16_t *)call->out[0].data, (float *)call->out[1].data,
        (int)a->batch, (int)a->heads, (int)a->kv_heads, (int)a->seq_q, (int)a->seq_k, (int)a->head_dim,
        (int)dv, scale, a->mask == QF_MASK_CAUSAL);
    QF_CU_LAUNCH("k_attention");
done:
    return st;
}
