/* _gpu_supports.h: what the CUDA and HIP kernels accept, checked on the
 * host (private).
 *
 * These are the kernel records' supports callbacks.  They live in
 * libqualify, beside the records (kernels/cuda/table.c, kernels/hip/
 * table.c), and not in the GPU modules: the runner asks them while
 * planning, and that must not load a module (qualify/_gpumod.h).  The
 * kernels in the modules re-check through the record (_qf_gpu_supported,
 * kernels/_gpu_args.h).
 */
#ifndef QF__GPU_SUPPORTS_H
#define QF__GPU_SUPPORTS_H

#include "qf_kernel.h"

/* GEMM: d = a b only (no transposes, batch 1, not grouped, alpha 1, beta 0). */
qf_status _qf_gpu_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
/* Attention: no mask or causal (top-left), no softcap, head_dim_v <= 256, GQA. */
qf_status _qf_gpu_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);

#endif
