/* quantize.cu: FP8 quantizers on the device (op quantize, qf_kernel.h).
 *
 *   quantize.cuda.mxfp8     MX (OCP Microscaling v1.0,
 *       docs/numerics.md#block-scaled-formats): blocks of `block` (32)
 *       elements along each row share one
 *       E8M0 scale 2^X, X = floor(log2 amax) - emax_elem (8 for e4m3, 15
 *       for e5m2), code X + 127 clamped to [0, 254]; 0xFF for a NaN or
 *       infinite amax, 0x00 for amax 0.  floor(log2 amax) is the exponent
 *       field of the float32 amax (frexpf, exact, subnormals included).
 *       Elements: the hardware conversion __nv_cvt_float_to_fp8(v 2^-X,
 *       __NV_SATFINITE, kind) -- v 2^-X is exact in float32 whenever it is
 *       normal, and values below float32's normal range are far below the
 *       FP8 formats' smallest subnormal, so this rounds once, nearest even,
 *       clamping past the element maximum as OCP MX specifies.  On sm_89 and
 *       later the conversion is a cvt.rn.satfinite instruction (PTX ISA:
 *       "cvt ... .e4m3x2/.e5m2x2 requires sm_89"); on sm_80 cuda_fp8.h
 *       emulates it with the same rounding.
 *   quantize.cuda.fp8       FP8 per-tensor scaling (Transformer Engine's
 *       recipe, precision/qf_block.h "fp8"): amax over the tensor (one
 *       block, fixed order: deterministic), scale = float32(fp8_max / amax)
 *       by IEEE float32 division (rounded once; FLT_MAX if it overflows;
 *       1.0 when amax is 0, NaN or infinite), elements = the exact product
 *       x * scale (48 bits, exact in binary64) converted once with
 *       __nv_cvt_double_to_fp8(.., __NV_SATFINITE, kind), nearest even:
 *       converting a float32-rounded product instead would round twice.
 * Claims: exact quantization (nothing to bound: any code that differs from
 * the block module's is FAILED).
 */
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "_cuda.h"
#include "_cuda_kernels.h"
#include "_gpu_args.h"
#include "qf_block.h"
#include "qf_ref.h"

/* One thread per block of a row: amax, scale code, elements. */
__global__ void k_mx_quant(const float *x, uint8_t *q, uint8_t *sc, int rows, int cols, int block, int e5m2,
                           int emax)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int nb = (cols + block - 1) / block;
    if (t >= (size_t)rows * nb)
        return;
    int r = (int)(t / nb), b = (int)(t % nb), c0 = b * block, c1 = c0 + block < cols ? c0 + block : cols;
    const float *xr = x + (size_t)r * cols;
    float amax = 0.f;
    int bad = 0;
    for (int c = c0; c < c1; c++) {
        float a = fabsf(xr[c]);
        if (isnan(a) || isinf(a))
            bad = 1;
        else
            amax = fmaxf(amax, a);
    }
    uint8_t code;
    int X = 0;
    if (bad)
        code = 0xFF;
    else if (amax == 0.f)
        code = 0x00, X = -127;
    else {
        int e;
        frexpf(amax, &e); /* amax = m 2^e, m in [0.5, 1): floor(log2 amax) = e - 1 */
        X = (e - 1) - emax;
        X = X < -127 ? -127 : X > 127 ? 127 : X;
        code = (uint8_t)(X + 127);
    }
    sc[(size_t)r * nb + b] = code;
    for (int c = c0; c < c1; c++) {
        float v = bad ? NAN : ldexpf(xr[c], -X);
        q[(size_t)r * cols + c] =
            (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
    }
}

__global__ void k_fp8_amax_scale(const float *x, size_t n, float fp8_max, float *scale)
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

__global__ void k_fp8_scale_encode(const float *x, size_t n, const float *scale, uint8_t *q, int e5m2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        q[i] = (uint8_t)__nv_cvt_double_to_fp8((double)x[i] * (double)*scale, __NV_SATFINITE,
                                               e5m2 ? __NV_E5M2 : __NV_E4M3);
}

extern "C" qf_status qf_cuda_quantize_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_quantize *o = &call->op->u.quantize;
    const qf_tensor *X = &call->in[0], *Q = &call->out[0];
    char *msg = call->msg;
    size_t msg_size = call->msg_size, n;
    qf_status st;
    int mx = call->kernel->user != NULL, e5m2;
    (void)ctx;
    if (call->op->op != QF_OP_QUANTIZE)
        return _qf_gpu_fail(call, QF_EINVAL, "not a quantize call");
    if ((st = _qf_gpu_supported(call)) !=
        QF_OK)
        return st;
    n = o->rows * o->cols;
    if (!X->data || X->format != QF_FLOAT32 || qf_tensor_numel(X) != n || X->stride[X->ndim - 1] != 1 ||
        (X->ndim >= 2 && X->stride[X->ndim - 2] != (int64_t)o->cols))
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "x: dense row-major float32 [rows][cols] expected");
    if (!Q->data || Q->packed || !Q->scale.data || qf_tensor_numel(Q) != n)
        return _qf_gpu_fail(call, QF_EINVAL, "q: unpacked codes and scales expected");
    e5m2 = (mx ? o->block.mx.elem : o->block.fp8.elem) == QF_FLOAT8_E5M2;
    if (n == 0)
        return QF_OK;
    if (mx) {
        size_t nb = (o->cols + o->block.mx.block - 1) / o->block.mx.block;
        if (Q->scale.count != o->rows * nb)
            return _qf_gpu_fail(call, QF_EINVAL, "q.scale: %zu E8M0 codes expected", o->rows * nb);
        k_mx_quant<<<(unsigned)((o->rows * nb + 127) / 128), 128>>>(
            (const float *)X->data, (uint8_t *)Q->data, (uint8_t *)Q->scale.data, (int)o->rows, (int)o->cols,
            (int)o->block.mx.block, e5m2, e5m2 ? 15 : 8);
        QF_CU_LAUNCH("k_mx_quant");
    } else {
        if (Q->scale.count != 1 || Q->scale.format != QF_FLOAT32)
            return _qf_gpu_fail(call, QF_EINVAL, "q.scale: one float32 scale expected");
        k_fp8_amax_scale<<<1, 256>>>((const float *)X->data, n, e5m2 ? 57344.0f : 448.0f,
                                     (float *)Q->scale.data);
        QF_CU_LAUNCH("k_fp8_amax_scale");
        k_fp8_scale_encode<<<(unsigned)((n + 255) / 256), 256>>>(
            (const float *)X->data, n, (const float *)Q->scale.data, (uint8_t *)Q->data, e5m2);
        QF_CU_LAUNCH("k_fp8_scale_encode");
    }
done:
    return st;
}
