/* qf_cuda.h: C entry points of the CUDA back end (kernels/cuda).
 *
 * The engine never calls CUDA directly; it goes through these functions.
 * Every one of them is safe to call on a machine without a driver or a
 * device: they report "no device" instead of failing, so CI (which builds
 * this back end but has no GPU) can run the tests and see them skipped.
 */
#ifndef QF_CUDA_H
#define QF_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when there is no driver or device.
 * why (may be NULL) receives the reason when the answer is 0. */
int qf_cuda_device_count(char *why, size_t why_size);

/* "sm_90" style architecture name and marketing name of device dev. */
qf_status qf_cuda_device_arch(int dev, char *arch, size_t arch_size, char *name, size_t name_size);

/* Decode n FP8 codes (float8_e4m3fn or float8_e5m2) to float on device 0
 * with the hardware conversion of cuda_fp8.h, so tests can compare the
 * device's reading of every code with precision/'s exact decode. */
qf_status qf_cuda_decode_fp8(qf_format_id fmt, const uint8_t *codes, size_t n, float *out, char *err,
                             size_t err_size);

/* One tensor-core instruction on device 0 (mma_probe.cu), C = 0:
 * kind 0: mma.sync m16n8k16 bf16, 1: the same in float16 (A [16][16],
 * B [16][8]); kind 2: mma.sync m16n8k32 e4m3 (A [16][32], B [32][8]; sm_89
 * and later).  a, b: row-major values exactly representable in the input
 * format; d [16][8] receives the float32 results.  For the model-vs-hardware
 * check (tests/cuda/t-model-vs-hw.c). */
qf_status qf_cuda_mma_probe(int kind, const float *a, const float *b, float *d, char *err, size_t err_size);
/* One wgmma.mma_async m64n8k16 bf16 (sm_90a build on an sm_90 device,
 * else QF_EUNSUPPORTED): a [64][16], b [16][8], d [64][8]. */
qf_status qf_cuda_wgmma_probe(const float *a, const float *b, float *d, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif
