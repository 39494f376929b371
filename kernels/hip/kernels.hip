/* kernels.hip: the HIP kernels registered by kernels/hip/table.c.
 *
 * Same contract as kernels/cuda/kernels.cu: device tensors of codes,
 * checked dense row-major, every HIP call and launch checked, failures in
 * call->msg.  Targets: gfx90a and gfx940 (Debian 12's hipcc, clang 15) and,
 * compiled a second time by clang-19, gfx942 (entry points suffixed
 * _gfx942, _hip.h); the GEMM uses MFMA (__builtin_amdgcn_mfma_f32_16x16x16f16
 * and ..._16x16x16bf16_1k, on gfx90a, gfx940 and gfx942) where the target
 * macro says the instruction exists, and a plain float32 loop elsewhere,
 * which the MFMA records refuse to pass as MFMA arithmetic (docs/gpu.md).
 */
#include <hip/hip_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "_hip.h"
#include "_hip_kernels.h"
#include "_gpu_args.h"

static unsigned blocks_for(size_t n, unsigned t)
{
    return (unsigned)((n + t - 1) / t);
}

/* float32 -> bfloat16 / float16 codes, nearest even (bit arithmetic for
 * bfloat16, NaN kept quiet; the hardware conversion for float16). */
__device__ static inline uint16_t bf16_rne(float v)
{
    uint32_t u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__device__ static inline void store_out(void *d, size_t i, float v, int fmt)
{
    if (fmt == QF_FLOAT32)
        ((float *)d)[i] = v;
    else if (fmt == QF_BFLOAT16)
        ((uint16_t *)d)[i] = bf16_rne(v);
    else {
        _Float16 h = (_Float16)v;
        ((uint16_t *)d)[i] = *(uint16_t *)&h;
    }
}

__device__ static inline float in16(const uint16_t *p, size_t i, int bf)
{
    if (bf)
        return __uint_as_float((uint32_t)p[i] << 16);
    {
        uint16_t c = p[i];
        return (float)*(const _Float16 *)&c;
    }
}

/* ---- GEMM: MFMA 16x16x16, float32 accumulator -------------------------------
 * One wave (64 lanes) per 16x16 tile of D, k0 = 0, 16, ...: one
 * v_mfma_f32_16x16x16{f16,bf16_1k} per step, in K order.  Operand layout
 * (AMD matrix instruction calculator, 16x16x16 with 4 elements per lane):
 * lane l holds A[l % 16][4 (l / 16) + i] and B[4 (l / 16) + i][l % 16],
 * i = 0..3, and D[4 (l / 16) + i][l % 16].  The float32 tile is then rounded
 * once to the output format (nearest even). */
typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef short short4v __attribute__((ext_vector_type(4)));
typedef float float4v __attribute__((ext_vector_type(4)));

static __global__ void hk_gemm16(const uint16_t *A, const uint16_t *B, void *D, int M, int N, int K, int bf, int fo,
                          int *used_mfma)
{
    int wave = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 64), l = (int)(threadIdx.x % 64);
    int tiles_n = N / 16, tm = wave / tiles_n, tn = wave % tiles_n;
    if (tm >= M / 16)
        return;
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx942__)
    float4v c = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        int kb = k0 + 4 * (l / 16);
        if (bf) {
            short4v a, b;
            for (int i = 0; i < 4; i++) {
                a[i] = (short)A[(size_t)(tm * 16 + l % 16) * K + kb + i];
                b[i] = (short)B[(size_t)(kb + i) * N + tn * 16 + l % 16];
            }
            c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
        } else {
            half4 a, b;
            for (int i = 0; i < 4; i++) {
                uint16_t ca = A[(size_t)(tm * 16 + l % 16) * K + kb + i];
                uint16_t cb = B[(size_t)(kb + i) * N + tn * 16 + l % 16];
                a[i] = *(const _Float16 *)&ca;
                b[i] = *(const _Float16 *)&cb;
            }
            c = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
        }
    }
    for (int i = 0; i < 4; i++)
        store_out(D, (size_t)(tm * 16 + 4 * (l / 16) + i) * N + tn * 16 + l % 16, c[i], fo);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *used_mfma = 1;
#else
    /* plain HIP: lane l computes 4 elements of the tile with float32 FMAs */
    for (int i = 0; i < 4; i++) {
        int row = tm * 16 + 4 * (l / 16) + i, col = tn * 16 + l % 16;
        float acc = 0.f;
        for (int k = 0; k < K; k++)
            acc = fmaf(in16(A, (size_t)row * K + k, bf), in16(B, (size_t)k * N + col, bf), acc);
        store_out(D, (size_t)row * N + col, acc, fo);
    }
#endif
}

extern "C" qf_status QF_HIP_ENTRY(qf_hip_gemm_run)(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const qf_dtype_tuple *t = call->dtype;
    char *msg = call->msg;
    size_t msg_size = call->msg_size;
    qf_status st = QF_OK;
    int *flag = NULL, hflag = 0;
    unsigned waves;
    (void)ctx;
    if (call->op->op != QF_OP_GEMM)
        return _qf_gpu_fail(call, QF_EINVAL, "not a gemm call");
    if (g->trans_a || g->trans_b || g->batch > 1 || g->groups || g->alpha != 1.0 || g->beta != 0.0)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "only d = a b");
    if ((st = _qf_gpu_dense2(call, &call->in[0], "a", t->in[0], (int64_t)g->m, (int64_t)g->k)) != QF_OK ||
        (st = _qf_gpu_dense2(call, &call->in[1], "b", t->in[1], (int64_t)g->k, (int64_t)g->n)) != QF_OK ||
        (st = _qf_gpu_dense2(call, &call->out[0], "d", t->out[0], (int64_t)g->m, (int64_t)g->n)) != QF_OK)
        return st;
    if (g->m % 16 || g->n % 16 || g->k % 16)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "m, n and k must be multiples of 16");
    if (g->m == 0 || g->n == 0)
        return QF_OK;
    QF_HIP(hipMalloc((void **)&flag, sizeof(int)));
    QF_HIP(hipMemset(flag, 0, sizeof(int)));
    waves = (unsigned)(g->m / 16 * (g->n / 16));
    hipLaunchKernelGGL(hk_gemm16, dim3((waves + 3) / 4), dim3(256), 0, 0, (const uint16_t *)call->in[0].data,
                       (const uint16_t *)call->in[1].data, call->out[0].data, (int)g->m, (int)g->n, (int)g->k,
                       t->in[0] == QF_BFLOAT16, (int)t->out[0], flag);
    QF_HIP_LAUNCH();
    QF_HIP(hipMemcpy(&hflag, flag, sizeof(int), hipMemcpyDeviceToHost));
    /* the record claims MFMA arithmetic: the plain path must not pass as it */
    if (!hflag && call->kernel->user)
        st = _qf_gpu_fail(call, QF_EUNSUPPORTED, "this build has no MFMA code for the device's architecture");
done:
    if (flag)
        (void)hipFree(flag);
    return st;
}

/* ---- RMSNorm and softmax: one 256-thread block per row ----------------------
 * As kernels/cuda/kernels.cu: per-thread sequential float32 sums, a fixed
 * 256-leaf pairwise tree, IEEE division and square root; every operation
 * is an explicit __fadd_rn / __fmul_rn / __fdiv_rn, so no contraction. */
#define RT 256

__device__ static float block_reduce(float v, float *sh, int is_max)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = RT / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s)
            sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s])
                                     : __fadd_rn(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();
    return v;
}

static __global__ void hk_rmsnorm(const float *x, const float *w, const float *b, float *y, int cols, float eps)
{
    __shared__ float sh[RT];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.f, r;
    for (int j = threadIdx.x; j < cols; j += RT)
        ss = __fadd_rn(ss, __fmul_rn(xr[j], xr[j]));
    ss = block_reduce(ss, sh, 0);
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

extern "C" qf_status QF_HIP_ENTRY(qf_hip_rmsnorm_run)(void *ctx, const qf_kernel_call *call)
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
    hipLaunchKernelGGL(hk_rmsnorm, dim3((unsigned)o->rows), dim3(RT), 0, 0, (const float *)call->in[0].data,
                       (const float *)call->in[1].data, (const float *)call->in[2].data,
                       (float *)call->out[0].data, (int)o->cols, (float)o->eps);
    QF_HIP_LAUNCH();
done:
    return st;
}

static __global__ void hk_softmax(const float *x, float *y, int cols, float scale, int lg)
{
    __shared__ float sh[RT];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    for (int j = threadIdx.x; j < cols; j += RT)
        m = fmaxf(m, __fmul_rn(xr[j], scale));
    m = block_reduce(m, sh, 1);
    for (int j = threadIdx.x; j < cols; j += RT)
        s = __fadd_rn(s, expf(__fsub_rn(__fmul_rn(xr[j], scale), m)));
    s = block_reduce(s, sh, 0);
    for (int j = threadIdx.x; j < cols; j += RT) {
        float d = __fsub_rn(__fmul_rn(xr[j], scale), m);
        yr[j] = lg ? __fsub_rn(d, logf(s)) : __fdiv_rn(expf(d), s);
    }
}

extern "C" qf_status QF_HIP_ENTRY(qf_hip_softmax_run)(void *ctx, const qf_kernel_call *call)
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
    hipLaunchKernelGGL(hk_softmax, dim3((unsigned)o->rows), dim3(RT), 0, 0, (const float *)call->in[0].data,
                       (float *)call->out[0].data, (int)o->cols, (float)o->scale, o->log);
    QF_HIP_LAUNCH();
done:
    return st;
}

/* ---- Flash-style attention forward (bf16) -----------------------------------
 * The CUDA kernel's algorithm (kernels/cuda/kernels.cu) on groups of 32
 * lanes of a 64-lane wave (shuffles of width 32): online softmax per
 * 32-key tile, P rounded to bfloat16 before P V, float32 O, out = O / l in
 * bfloat16, lse = m + logf(l). */
static __global__ void hk_attention(const uint16_t *Q, const uint16_t *Kt, const uint16_t *V, uint16_t *O,
                             float *LSE, int B, int H, int HK, int SQ, int SK, int D, int DV, float scale,
                             int causal)
{
    int row = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = (int)(threadIdx.x % 32);
    int valid = row < B * H * SQ;
    int r = valid ? row : 0;
    int i = r % SQ, h = (r / SQ) % H, b = r / (SQ * H), hk = h / (H / HK);
    float m = -INFINITY, l = 0.f, o[8];
    const uint16_t *q = Q + (((size_t)b * H + h) * SQ + i) * D;
    const uint16_t *kb = Kt + ((size_t)b * HK + hk) * SK * D;
    const uint16_t *vb = V + ((size_t)b * HK + hk) * SK * DV;
    int kend = causal ? (i + 1 < SK ? i + 1 : SK) : SK;
    for (int c = 0; c < 8; c++)
        o[c] = 0.f;
    /* every lane of the wave takes part in the shuffles; invalid rows
     * compute row 0 and do not store */
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
            tm = fmaxf(tm, __shfl_xor(tm, off, 32));
        tm = fmaxf(m, tm);
        alpha = m == -INFINITY ? 0.f : expf(__fsub_rn(m, tm));
        p = j < kend ? __uint_as_float((uint32_t)bf16_rne(expf(__fsub_rn(s, tm))) << 16) : 0.f;
        ps = p;
        for (int off = 16; off > 0; off /= 2)
            ps = __fadd_rn(ps, __shfl_xor(ps, off, 32));
        l = __fadd_rn(__fmul_rn(l, alpha), ps);
        m = tm;
        for (int c = 0; c < 8; c++)
            o[c] = __fmul_rn(o[c], alpha);
        for (int jj = 0; jj < 32 && t0 + jj < kend; jj++) {
            float pj = __shfl(p, jj, 32);
            for (int c = 0; c < 8; c++) {
                int d = lane + 32 * c;
                if (d < DV)
                    o[c] = __fadd_rn(
                        o[c], __fmul_rn(pj, __uint_as_float((uint32_t)vb[(size_t)(t0 + jj) * DV + d] << 16)));
            }
        }
    }
    if (!valid)
        return;
    for (int c = 0; c < 8; c++) {
        int d = lane + 32 * c;
        if (d < DV)
            O[(size_t)row * DV + d] = bf16_rne(__fdiv_rn(o[c], l));
    }
    if (LSE && lane == 0)
        LSE[row] = __fadd_rn(m, logf(l));
}

extern "C" qf_status QF_HIP_ENTRY(qf_hip_attention_run)(void *ctx, const qf_kernel_call *call)
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
    hipLaunchKernelGGL(
        hk_attention, dim3(blocks_for(rows * 32, 128)), dim3(128), 0, 0, (const uint16_t *)call->in[0].data,
        (const uint16_t *)call->in[1].data, (const uint16_t *)call->in[2].data, (uint16_t *)call->out[0].data,
        (float *)call->out[1].data, (int)a->batch, (int)a->heads, (int)a->kv_heads, (int)a->seq_q,
        (int)a->seq_k, (int)a->head_dim, (int)dv, scale, a->mask == QF_MASK_CAUSAL);
    QF_HIP_LAUNCH();
done:
    return st;
}
