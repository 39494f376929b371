/* decode_fp8.hip: device-side FP8 decode and device discovery for HIP.
 *
 * Field layouts: OCP OFP8 rev 1.0 (E4M3 bias 7, NaN S.1111.111; E5M2 bias
 * 15, IEEE specials) and the FNUZ variants (bias 8 / 16, NaN 0x80 only,
 * no Inf, no -0), docs/numerics.md#number-formats.
 */
#include <hip/hip_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "_hip.h"
#include "qf_hip.h"

#ifndef QF_HIP_GFX942
/* Device discovery lives in the hipcc object only; the clang-19 (gfx942)
 * object of this file holds the decode kernel and its _gfx942 entry. */

/* Targets with code in this build (CMake passes the same list; gfx942 when
 * clang-19 built it, QF_HIP_HAVE_GFX942). */
static const char *const built_archs[] = { "gfx90a", "gfx940",
#ifdef QF_HIP_HAVE_GFX942
                                           "gfx942"
#endif
};

#endif

static void set_msg(char *buf, size_t size, const char *what, hipError_t e)
{
    if (buf && size)
        snprintf(buf, size, "%s: %s", what, hipGetErrorString(e));
}

#ifndef QF_HIP_GFX942
static int arch_built(const char *arch)
{
    for (size_t i = 0; i < sizeof built_archs / sizeof built_archs[0]; i++)
        if (strcmp(arch, built_archs[i]) == 0)
            return 1;
    return 0;
}

static void trim_arch(const char *gcn, char *out, size_t size)
{
    size_t n = strcspn(gcn, ":");
    if (n >= size)
        n = size - 1;
    memcpy(out, gcn, n);
    out[n] = '\0';
}

extern "C" qf_status qf_hip_device_arch(int dev, char *arch, size_t arch_size, char *name, size_t name_size)
{
    hipDeviceProp_t p;
    if (hipGetDeviceProperties(&p, dev) != hipSuccess)
        return QF_EUNSUPPORTED;
    if (arch && arch_size)
        trim_arch(p.gcnArchName, arch, arch_size);
    if (name && name_size)
        snprintf(name, name_size, "%s", p.name);
    return QF_OK;
}

extern "C" int qf_hip_device_count(char *why, size_t why_size)
{
    int n = 0, usable = 0;
    hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess) {
        set_msg(why, why_size, "hipGetDeviceCount", e);
        return 0;
    }
    for (int d = 0; d < n; d++) {
        char arch[64];
        if (qf_hip_device_arch(d, arch, sizeof arch, NULL, 0) == QF_OK && arch_built(arch))
            usable++;
        else if (why && why_size)
            snprintf(why, why_size, "device %d (%s) has no code in this build: this build targets gfx90a, gfx940%s only",
                     d, arch,
#ifdef QF_HIP_HAVE_GFX942
                     ", gfx942"
#else
                     ""
#endif
            );
    }
    if (n == 0 && why && why_size)
        snprintf(why, why_size, "no HIP device");
    return usable;
}

/* Whether the current device is gfx942: the hipcc entry points hand such a
 * device to the clang-19 build of the same code (the _gfx942 entries). */
extern "C" int qf_hip_device_is_gfx942(void)
{
    int dev = 0;
    char arch[64];
    return hipGetDevice(&dev) == hipSuccess && qf_hip_device_arch(dev, arch, sizeof arch, NULL, 0) == QF_OK &&
           strcmp(arch, "gfx942") == 0;
}
#endif

__device__ static float decode_field(unsigned c, int man, int bias, int nan_kind)
{
    /* nan_kind: 0 IEEE (E5M2), 1 all-ones only (E4M3FN), 2 0x80 only (FNUZ) */
    unsigned sign = c >> 7, mag = c & 0x7F;
    unsigned e = mag >> man, f = mag & ((1u << man) - 1);
    unsigned emask = (1u << (7 - man)) - 1;
    float v;
    if (nan_kind == 2 && c == 0x80)
        return NAN;
    if (nan_kind == 1 && mag == 0x7F)
        return NAN;
    if (nan_kind == 0 && e == emask)
        return f ? NAN : (sign ? -INFINITY : INFINITY);
    if (e == 0)
        v = ldexpf((float)f, 1 - bias - man);
    else
        v = ldexpf((float)(f | (1u << man)), (int)e - bias - man);
    return sign ? -v : v;
}

static __global__ void qf_hip_decode_fp8_kernel(const uint8_t *codes, size_t n, int man, int bias, int nan_kind, float *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = decode_field(codes[i], man, bias, nan_kind);
}

#if defined(QF_HIP_HAVE_GFX942) && !defined(QF_HIP_GFX942)
extern "C" qf_status qf_hip_decode_fp8_gfx942(qf_format_id fmt, const uint8_t *codes, size_t n, float *out,
                                              char *err, size_t err_size);
#endif

extern "C" qf_status QF_HIP_ENTRY(qf_hip_decode_fp8)(qf_format_id fmt, const uint8_t *codes, size_t n, float *out,
                                                     char *err, size_t err_size)
{
    int man, bias, nan_kind;
    uint8_t *d_codes = NULL;
    float *d_out = NULL;
    qf_status st = QF_OK;
    hipError_t e;

    switch (fmt) {
    case QF_FLOAT8_E4M3FN: man = 3; bias = 7; nan_kind = 1; break;
    case QF_FLOAT8_E5M2: man = 2; bias = 15; nan_kind = 0; break;
    case QF_FLOAT8_E4M3FNUZ: man = 3; bias = 8; nan_kind = 2; break;
    case QF_FLOAT8_E5M2FNUZ: man = 2; bias = 16; nan_kind = 2; break;
    default:
        if (err && err_size)
            snprintf(err, err_size, "qf_hip_decode_fp8: not an 8-bit float format");
        return QF_EFORMAT;
    }
    if (n == 0)
        return QF_OK;
    if (codes == NULL || out == NULL)
        return QF_EINVAL;
#if defined(QF_HIP_HAVE_GFX942) && !defined(QF_HIP_GFX942)
    if (qf_hip_device_is_gfx942())
        return qf_hip_decode_fp8_gfx942(fmt, codes, n, out, err, err_size);
#endif
#define QF_HIP_TRY(call)                                                                            \
    do {                                                                                            \
        if ((e = (call)) != hipSuccess) {                                                           \
            set_msg(err, err_size, #call, e);                                                       \
            st = QF_EUNSUPPORTED;                                                                   \
            goto done;                                                                              \
        }                                                                                           \
    } while (0)
    QF_HIP_TRY(hipMalloc((void **)&d_codes, n));
    QF_HIP_TRY(hipMalloc((void **)&d_out, n * sizeof(float)));
    QF_HIP_TRY(hipMemcpy(d_codes, codes, n, hipMemcpyHostToDevice));
    hipLaunchKernelGGL(qf_hip_decode_fp8_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, 0, d_codes, n, man,
                       bias, nan_kind, d_out);
    QF_HIP_TRY(hipGetLastError());
    QF_HIP_TRY(hipDeviceSynchronize());
    QF_HIP_TRY(hipMemcpy(out, d_out, n * sizeof(float), hipMemcpyDeviceToHost));
done:
    if (d_codes)
        (void)hipFree(d_codes);
    if (d_out)
        (void)hipFree(d_out);
    return st;
}
