/* qf_hip.h: C entry points of the HIP back end (kernels/hip).
 *
 * Built with Debian's hipcc (ROCm 5.2, clang 15) for gfx90a and gfx940, and
 * with Debian's clang-19 for gfx942 when installed (kernels/hip/CMakeLists.txt);
 * on a gfx942 device the entry points below run the gfx942 build.  Other
 * targets (gfx950 needs LLVM 20) are not built; qf_hip_device_count()
 * reports such a device as unsupported instead of running code that was
 * not compiled for it.
 * Safe without a driver or device: the answer is then 0 with a reason.
 */
#ifndef QF_HIP_H
#define QF_HIP_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable HIP devices (those whose gcnArchName this build has
 * code for); 0 with a reason in why otherwise. */
int qf_hip_device_count(char *why, size_t why_size);

/* gcnArchName ("gfx90a:sramecc+:xnack-" trimmed to "gfx90a") and name. */
qf_status qf_hip_device_arch(int dev, char *arch, size_t arch_size, char *name, size_t name_size);

/* Decode n FP8 codes on the device.  OCP formats (float8_e4m3fn,
 * float8_e5m2) and the FNUZ formats of gfx940/gfx942 (float8_e4m3fnuz,
 * float8_e5m2fnuz) are decoded in plain device code from their bit
 * fields (ROCm 5.2 has no FP8 types). */
qf_status qf_hip_decode_fp8(qf_format_id fmt, const uint8_t *codes, size_t n, float *out, char *err,
                            size_t err_size);

/* One MFMA instruction on device 0 (mfma_probe.hip), C = 0: kind 0
 * v_mfma_f32_16x16x16bf16_1k, kind 1 v_mfma_f32_16x16x16f16 (a [16][16],
 * b [16][16]); kind 2 v_mfma_f32_16x16x32_fp8_fp8 on e4m3fnuz values, kind
 * 3 ..._bf8_bf8 on e5m2fnuz values (a [16][32], b [32][16]; gfx940/gfx942
 * only); row-major values exact in the input format; d [16][16] receives
 * the float32 results (tests/hip/t-model-vs-hw.c). */
qf_status qf_hip_mfma_probe(int kind, const float *a, const float *b, float *d, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
