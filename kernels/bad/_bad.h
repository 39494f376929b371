/* _bad.h: helpers and run functions of the known-bad kernels (private). */
#ifndef QF__BAD_H
#define QF__BAD_H

#include <stdint.h>

#include "../cpu/_cpu.h"
#include "qf_format.h"
#include "qf_kernel.h"

/* Element (p, r, c) of a code tensor, decoded exactly. */
static inline double _qf_bad_ld(const qf_tensor *t, int64_t p, int64_t r, int64_t c)
{
    int64_t o = _qf_cpu_off(t, p, r, c);
    const qf_format *f = qf_format_get(t->format);
    uint64_t code;
    switch (f->storage_bits) {
    case 8: code = ((const uint8_t *)t->data)[o]; break;
    case 16: code = ((const uint16_t *)t->data)[o]; break;
    case 32: code = ((const uint32_t *)t->data)[o]; break;
    default: code = ((const uint64_t *)t->data)[o]; break;
    }
    return qf_format_decode(f, code);
}

/* Store a code at element offset o of a tensor of codes. */
static inline void _qf_bad_st(const qf_tensor *t, int64_t o, uint64_t code)
{
    switch (qf_format_get(t->format)->storage_bits) {
    case 8: ((uint8_t *)t->data)[o] = (uint8_t)code; break;
    case 16: ((uint16_t *)t->data)[o] = (uint16_t)code; break;
    case 32: ((uint32_t *)t->data)[o] = (uint32_t)code; break;
    default: ((uint64_t *)t->data)[o] = code; break;
    }
}

qf_status _qf_bad_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_bad_gemm_f16acc_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_gemm_tile64_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_gemm_fp8_as_f32_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_gemm_racy_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_gemm_overrun_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_gemm_unwritten_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_softmax_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status _qf_bad_softmax_nomax_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_norm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_bad_layernorm_onepass_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_rmsnorm_no_eps_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);
qf_status _qf_bad_attention_drop_tail_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                    char *why, size_t why_size);
qf_status _qf_bad_quantize_mx_scale_off_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_quantize_e4m3_nan_run(void *ctx, const qf_kernel_call *call);

/* flash_rope.c: configurations of the shared CPU kernels with a defect */
extern const _qf_cpu_flash_cfg _qf_bad_flash_norescale_cfg;
extern const _qf_cpu_flash_cfg _qf_bad_flash_bf16p_cfg;
extern const _qf_cpu_rope_cfg _qf_bad_rope_f16_angle_cfg;
extern const _qf_cpu_welford_cfg _qf_bad_welford_sq_cfg;

#endif
