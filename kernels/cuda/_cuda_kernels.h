/* _cuda_kernels.h: the run, init and fini functions of the CUDA kernels
 * (kernels.cu, quantize.cu), exported by libqualify_cuda.so; the records
 * in table.c (libqualify) reach them by name through the module
 * (qualify/_gpumod.h), and their supports checks are in libqualify
 * (kernels/_gpu_supports.h, table.c) (private). */
#ifndef QF__CUDA_KERNELS_H
#define QF__CUDA_KERNELS_H

#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

qf_status qf_cuda_gemm_wmma_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_gemm_fp8_mma_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_cublas_init(const qf_kernel *k, void **ctx);
void qf_cuda_cublas_fini(void *ctx);
qf_status qf_cuda_cublas_gemm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_cublaslt_init(const qf_kernel *k, void **ctx);
void qf_cuda_cublaslt_fini(void *ctx);
qf_status qf_cuda_cublaslt_fp8_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_rmsnorm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_softmax_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_attention_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_quantize_run(void *ctx, const qf_kernel_call *call);

#ifdef __cplusplus
}
#endif

#endif
