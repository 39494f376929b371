/* quantize.hip: FP8 (fnuz) per-tensor quantization with gfx940's hardware
 * conversions (op quantize, qf_kernel.h).
 *
 *   quantize.hip.fp8_fnuz   float32 -> float8_e4m3fnuz / float8_e5m2fnuz
 *       (docs/numerics.md#number-formats: bias 8 / 16, NaN 0x80 only, no Inf, no -0), per-tensor
 *       scaling as precision/qf_block.h "fp8": amax over the tensor (one
 *       block, fixed order), scale = float32(fp8_max / amax) by IEEE
 *       division (FLT_MAX on overflow; 1.0 for amax 0, NaN or Inf), each
 *       element the nearest-even FP8 value of the EXACT product x * scale,
 *       saturating.  The conversion is gfx940's v_cvt_pk_fp8_f32 /
 *       v_cvt_pk_bf8_f32 (__builtin_amdgcn_cvt_pk_{fp8,bf8}_f32, in Debian's
 *       clang 15 for gfx940), which takes a float32: p = fl(x * scale) can
 *       differ from the exact product by its rounding error e = fma(x,
 *       scale, -p), and that matters only when p is itself a midpoint
 *       between two FP8 values (the FP8 midpoints are float32 values, so
 *       the exact product and p lie on the same side of every other one).
 *       Then the neighbour of p on e's side is converted instead.  Values
 *       past the maximum are clamped to it before the conversion
 *       (saturation).  On other targets the kernel raises a flag and the
 *       record (archs gfx940) never sends it there.
 * Claim: exact (every code must equal the block module's).
 */
#include <float.h>
#include <hip/hip_runtime.h>
#include <math.h>
#include <stdint.h>

#include "_gpu_args.h"
#include "_hip.h"
#include "_hip_kernels.h"
#include "qf_block.h"
#include "qf_ref.h"

#if defined(__gfx940__) || defined(__gfx942__)
__device__ static uint8_t cvt8(float v, int bf8)
{
    int w = bf8 ? __builtin_amdgcn_cvt_pk_bf8_f32(v, 0.0f, 0, false)
                : __builtin_amdgcn_cvt_pk_fp8_f32(v, 0.0f, 0, false);
    return (uint8_t)(w & 0xFF);
}
#endif

static __global__ void hk_fp8_amax_scale(const float *x, size_t n, float fp8_max, float *scale)
{
    __shared__ float sh[256];
    float m = 0.f;
    int nan = 0;
    for (size_t i = threadIdx.x; i < n; i += 256) {
        float a = fabsf(x[i]);
        if (isnan(a))
            nan = 1;
        m = fmaxf(m, a);
    }
    sh[threadIdx.x] = nan ? NAN : m;
    __syncthreads();
    for (int s = 128; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) {
            float a = sh[threadIdx.x], b = sh[threadIdx.x + s];
            sh[threadIdx.x] = (isnan(a) || isnan(b)) ? NAN : fmaxf(a, b);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float amax = sh[0], s;
        if (amax == 0.f || isnan(amax) || isinf(amax))
            s = 1.0f;
        else {
            s = __fdiv_rn(fp8_max, amax);
            if (isinf(s))
                s = FLT_MAX;
        }
        *scale = s;
    }
}

static __global__ void hk_fp8_encode(const float *x, size_t n, const float *scale, uint8_t *q, int bf8,
                              float fp8_max, int *bad)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if defined(__gfx940__) || defined(__gfx942__)
    float s = *scale, p = __fmul_rn(x[i], s), e = fmaf(x[i], s, -p);
    uint8_t c;
    if (isnan(p))
        c = cvt8(p, bf8);
    else if (fabsf(p) >= fp8_max)
        c = cvt8(copysignf(fp8_max, p), bf8);
    else {
        uint8_t lo = cvt8(nextafterf(p, -INFINITY), bf8), hi = cvt8(nextafterf(p, INFINITY), bf8);
        c = (lo != hi && e != 0.f) ? (e > 0.f ? hi : lo) : cvt8(p, bf8);
    }
    q[i] = c;
#else
    (void)x, (void)scale, (void)q, (void)bf8, (void)fp8_max;
    if (i == 0)
        *bad = 1;
#endif
}

extern "C" qf_status QF_HIP_ENTRY(qf_hip_quantize_run)(void *ctx, const qf_kernel_call *call)
{
    const qf_op_quantize *o = &call->op->u.quantize;
    const qf_tensor *X = &call->in[0], *Q = &call->out[0];
    char *msg = call->msg;
    size_t msg_size = call->msg_size, n;
    qf_status st;
    int bf8, *bad = NULL, hbad = 0;
    float fp8_max;
    (void)ctx;
    if ((st = _qf_gpu_supported(call)) !=
        QF_OK)
        return st;
    n = o->rows * o->cols;
    if (!X->data || X->format != QF_FLOAT32 || qf_tensor_numel(X) != n || X->stride[X->ndim - 1] != 1 ||
        (X->ndim >= 2 && X->stride[X->ndim - 2] != (int64_t)o->cols))
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "x: dense row-major float32 [rows][cols] expected");
    if (!Q->data || Q->packed || !Q->scale.data || qf_tensor_numel(Q) != n || Q->scale.count != 1 ||
        Q->scale.format != QF_FLOAT32)
        return _qf_gpu_fail(call, QF_EINVAL, "q: unpacked codes and one float32 scale expected");
    if (n == 0)
        return QF_OK;
    bf8 = o->block.fp8.elem == QF_FLOAT8_E5M2FNUZ;
    fp8_max = bf8 ? 57344.0f : 240.0f; /* docs/numerics.md#number-formats: e5m2fnuz 57344, e4m3fnuz 240 */
    QF_HIP(hipMalloc((void **)&bad, sizeof(int)));
    QF_HIP(hipMemset(bad, 0, sizeof(int)));
    hipLaunchKernelGGL(hk_fp8_amax_scale, dim3(1), dim3(256), 0, 0, (const float *)X->data, n, fp8_max,
                       (float *)Q->scale.data);
    QF_HIP_LAUNCH();
    hipLaunchKernelGGL(hk_fp8_encode, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, 0,
                       (const float *)X->data, n, (const float *)Q->scale.data, (uint8_t *)Q->data, bf8,
                       fp8_max, bad);
    QF_HIP_LAUNCH();
    QF_HIP(hipMemcpy(&hbad, bad, sizeof(int), hipMemcpyDeviceToHost));
    if (hbad)
        st = _qf_gpu_fail(call, QF_EUNSUPPORTED, "the FP8 conversions exist on gfx940 only in this build");
done:
    if (bad)
        (void)hipFree(bad);
    return st;
}
