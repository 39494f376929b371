/* _hip_kernels.h: the run functions of the HIP kernels (kernels.hip,
 * quantize.hip), exported by libqualify_hip.so; the records in table.c
 * (libqualify) reach them by name through the module (qualify/_gpumod.h),
 * and their supports checks are in libqualify (kernels/_gpu_supports.h,
 * table.c) (private). */
#ifndef QF__HIP_KERNELS_H
#define QF__HIP_KERNELS_H

#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

qf_status qf_hip_gemm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_rmsnorm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_softmax_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_attention_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_quantize_run(void *ctx, const qf_kernel_call *call);

#ifdef __cplusplus
}
#endif

#endif
