/* _cuda_kernels.h: the run, init and supports functions of the CUDA
 * kernels (kernels.cu), registered by table.c (private). */
#ifndef QF__CUDA_KERNELS_H
#define QF__CUDA_KERNELS_H

#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

qf_status qf_cuda_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
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
qf_status qf_cuda_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);
qf_status qf_cuda_attention_run(void *ctx, const qf_kernel_call *call);
qf_status qf_cuda_quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                    char *why, size_t why_size);
qf_status qf_cuda_quantize_run(void *ctx, const qf_kernel_call *call);

/* Register the CUDA kernels (table.c); listed in kernels/families.c. */
qf_status qf_cuda_register_kernels(qf_registry *r);

#ifdef __cplusplus
}
#endif

#endif
