/* _hip_kernels.h: the run functions of the HIP kernels (kernels.hip,
 * quantize.hip, gemm_fp8.hip), exported by libqualify_hip.so; the records in table.c
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
/* FP8 (fnuz) MFMA GEMM with per-tensor scales (gemm_fp8.hip). */
qf_status qf_hip_gemm_fp8_run(void *ctx, const qf_kernel_call *call);

/* The gfx942 build of each (clang-19; present when QF_HIP_GFX942 is on). */
qf_status qf_hip_gemm_run_gfx942(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_rmsnorm_run_gfx942(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_softmax_run_gfx942(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_attention_run_gfx942(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_quantize_run_gfx942(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_gemm_fp8_run_gfx942(void *ctx, const qf_kernel_call *call);

#ifdef __cplusplus
}
#endif

#endif
