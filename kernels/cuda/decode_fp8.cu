/* decode_fp8.cu: the device-side FP8 decode and device discovery.
 *
 * The conversion is the hardware one (cuda_fp8.h __nv_cvt_fp8_to_halfraw,
 * a cvt instruction on sm_89 and later), widened to float exactly: every
 * FP8 value is a float16 value.  Comparing it with precision/'s exact
 * decode is the first piece of evidence that host and device agree on the
 * formats (OCP OFP8 rev 1.0).
 */
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "qf_cuda.h"

static void set_msg(char *buf, size_t size, const char *what, cudaError_t e)
{
    if (buf && size)
        snprintf(buf, size, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define QF_CUDA_TRY(call)                                                                          \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            set_msg(err, err_size, #call, e_);                                                     \
            st = QF_EUNSUPPORTED;                                                                  \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

extern "C" int qf_cuda_device_count(char *why, size_t why_size)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        set_msg(why, why_size, "cudaGetDeviceCount", e);
        cudaGetLastError(); /* clear the sticky error */
        return 0;
    }
    if (n == 0 && why && why_size)
        snprintf(why, why_size, "no CUDA device");
    return n;
}

extern "C" qf_status qf_cuda_device_arch(int dev, char *arch, size_t arch_size, char *name, size_t name_size)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        cudaGetLastError();
        return QF_EUNSUPPORTED;
    }
    if (arch && arch_size)
        snprintf(arch, arch_size, "sm_%d%d", p.major, p.minor);
    if (name && name_size)
        snprintf(name, name_size, "%s", p.name);
    return QF_OK;
}

__global__ void qf_decode_fp8_kernel(const uint8_t *codes, size_t n, int e5m2, float *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)codes[i], e5m2 ? __NV_E5M2 : __NV_E4M3);
        out[i] = __half2float(__half(h));
    }
}

extern "C" qf_status qf_cuda_decode_fp8(qf_format_id fmt, const uint8_t *codes, size_t n, float *out, char *err,
                                        size_t err_size)
{
    uint8_t *d_codes = NULL;
    float *d_out = NULL;
    qf_status st = QF_OK;
    unsigned blocks;

    if (fmt != QF_FLOAT8_E4M3FN && fmt != QF_FLOAT8_E5M2) {
        if (err && err_size)
            snprintf(err, err_size, "qf_cuda_decode_fp8: only float8_e4m3fn and float8_e5m2 have a CUDA conversion");
        return QF_EFORMAT;
    }
    if (n == 0)
        return QF_OK;
    if (codes == NULL || out == NULL)
        return QF_EINVAL;
    QF_CUDA_TRY(cudaMalloc((void **)&d_codes, n));
    QF_CUDA_TRY(cudaMalloc((void **)&d_out, n * sizeof(float)));
    QF_CUDA_TRY(cudaMemcpy(d_codes, codes, n, cudaMemcpyHostToDevice));
    blocks = (unsigned)((n + 255) / 256);
    qf_decode_fp8_kernel<<<blocks, 256>>>(d_codes, n, fmt == QF_FLOAT8_E5M2, d_out);
    QF_CUDA_TRY(cudaGetLastError());
    QF_CUDA_TRY(cudaDeviceSynchronize());
    QF_CUDA_TRY(cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
done:
    if (d_codes)
        cudaFree(d_codes);
    if (d_out)
        cudaFree(d_out);
    return st;
}
