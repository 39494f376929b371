/* _cpu.h: helpers shared by the built-in CPU kernels (private). */
#ifndef QF__CPU_H
#define QF__CPU_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"

/* Write a failure reason into call->msg (when there is room). */
static inline qf_status _qf_cpu_fail(const qf_kernel_call *call, qf_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline qf_status _qf_cpu_fail(const qf_kernel_call *call, qf_status s, const char *fmt, ...)
{
    va_list ap;
    if (call->msg && call->msg_size) {
        va_start(ap, fmt);
        vsnprintf(call->msg, call->msg_size, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* Element offset of (p, r, c) in a 2-d [r][c] or 3-d [p][r][c] tensor; a
 * 2-d tensor, or a 3-d one of extent 1, is shared by every p. */
static inline int64_t _qf_cpu_off(const qf_tensor *t, int64_t p, int64_t r, int64_t c)
{
    int64_t o = r * t->stride[t->ndim - 2] + c * t->stride[t->ndim - 1];
    if (t->ndim == 3 && t->shape[0] > 1)
        o += p * t->stride[0];
    return o;
}

/* Check a slot: format, unpacked codes, no scale, ndim 2 or 3, and the
 * last two extents (and the first, for 3-d, when p >= 0). */
static inline qf_status _qf_cpu_check2(const qf_kernel_call *call, const qf_tensor *t, const char *slot,
                                       qf_format_id f, int64_t p, int64_t rows, int64_t cols)
{
    if (!t->data)
        return _qf_cpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed || t->scale.kind != QF_SCALE_NONE)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "tensor %s: format %s unscaled expected", slot,
                            qf_format_get(f)->name);
    if (t->ndim < 2 || t->ndim > 3 || (t->ndim == 3 && p >= 0 && t->shape[0] != p && t->shape[0] != 1) ||
        t->shape[t->ndim - 2] != rows || t->shape[t->ndim - 1] != cols)
        return _qf_cpu_fail(call, QF_EINVAL,
                            "tensor %s: shape does not match the op (expected [%lld][%lld], batch %lld)",
                            slot, (long long)rows, (long long)cols, (long long)p);
    return QF_OK;
}

static inline float _qf_f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t _qf_bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The unpacked, checked arguments of a norm call (rmsnorm and layernorm
 * kernels, good and known-bad): x and y float32 [rows][cols], weight and
 * bias absent or float32 [cols], weight_offset 0, a finite eps >= 0. */
typedef struct _qf_cpu_norm_args {
    const qf_op_norm *o;
    const qf_tensor *x, *w, *b, *y;
    int64_t rows, cols;
} _qf_cpu_norm_args;
qf_status _qf_cpu_norm_args_get(const qf_kernel_call *call, qf_op op, _qf_cpu_norm_args *a);

/* The run and supports functions of the built-in kernels (table.c). */
qf_status _qf_cpu_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_cpu_gemm_f32_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_gemm_bf16_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_softmax_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status _qf_cpu_softmax_f32_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_rmsnorm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status _qf_cpu_rmsnorm_f32_run(void *ctx, const qf_kernel_call *call);
/* gemm_fast.c: the candidate GEMMs; kernel->user holds the algorithm. */
qf_status _qf_cpu_gemm_fast_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);
qf_status _qf_cpu_gemm_fast_run(void *ctx, const qf_kernel_call *call);
/* gemm_quant.c: quantized-operand GEMMs; kernel->user holds the algorithm. */
qf_status _qf_cpu_gemm_quant_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                      char *why, size_t why_size);
qf_status _qf_cpu_gemm_quant_run(void *ctx, const qf_kernel_call *call);
/* attention.c */
qf_status _qf_cpu_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);
qf_status _qf_cpu_attention_naive_run(void *ctx, const qf_kernel_call *call);
/* layernorm.c (its supports callback is rmsnorm's: weight_offset 0, eps) */
qf_status _qf_cpu_layernorm_twopass_run(void *ctx, const qf_kernel_call *call);
/* activation.c */
qf_status _qf_cpu_activation_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                      char *why, size_t why_size);
qf_status _qf_cpu_activation_run(void *ctx, const qf_kernel_call *call);
/* moe_router.c */
qf_status _qf_cpu_moe_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype, char *why,
                               size_t why_size);
qf_status _qf_cpu_moe_run(void *ctx, const qf_kernel_call *call);
/* softmax_online.c */
qf_status _qf_cpu_softmax_online_supports(const qf_kernel *k, const qf_op_desc *op,
                                          const qf_dtype_tuple *dtype, char *why, size_t why_size);
qf_status _qf_cpu_softmax_online_run(void *ctx, const qf_kernel_call *call);

#endif
