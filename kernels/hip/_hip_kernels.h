/* _hip_kernels.h: run and supports functions of the HIP kernels
 * (kernels.hip), registered by table.c (private). */
#ifndef QF__HIP_KERNELS_H
#define QF__HIP_KERNELS_H

#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

qf_status qf_hip_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                               char *why, size_t why_size);
qf_status qf_hip_gemm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_rmsnorm_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_softmax_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                    char *why, size_t why_size);
qf_status qf_hip_attention_run(void *ctx, const qf_kernel_call *call);
qf_status qf_hip_quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status qf_hip_quantize_run(void *ctx, const qf_kernel_call *call);

/* Register the HIP kernels (table.c); listed in kernels/families.c. */
qf_status qf_hip_register_kernels(qf_registry *r);

#ifdef __cplusplus
}
#endif

#endif
