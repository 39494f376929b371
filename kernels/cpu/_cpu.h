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

/* Code i of an array of codes stored in storage_bits-wide elements (8, 16
 * or 32), and of a tensor of its format. */
static inline uint64_t _qf_cpu_load_raw(const void *data, int storage_bits, int64_t i)
{
    switch (storage_bits) {
    case 8: return ((const uint8_t *)data)[i];
    case 16: return ((const uint16_t *)data)[i];
    default: return ((const uint32_t *)data)[i];
    }
}

static inline uint64_t _qf_cpu_load_code(const qf_tensor *t, int64_t off)
{
    return _qf_cpu_load_raw(t->data, qf_format_get(t->format)->storage_bits, off);
}

/* Round v once (nearest even) into output format fo and store the code at
 * element off of D (a value already of the format is stored as is). */
static inline void _qf_cpu_store_code(const qf_tensor *D, const qf_format *fo, int64_t off, double v)
{
    uint64_t c = qf_format_encode(fo, v, QF_ROUND_RNE, 0, 0, 0);
    if (fo->storage_bits == 32)
        ((uint32_t *)D->data)[off] = (uint32_t)c;
    else if (fo->storage_bits == 16)
        ((uint16_t *)D->data)[off] = (uint16_t)c;
    else
        ((uint8_t *)D->data)[off] = (uint8_t)c;
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

/* The defects a known-bad kernel (kernels/bad) switches on in a correct
 * kernel, one each: a known-bad kernel is its good kernel's run function
 * with kernel->user naming one of these (kernels/bad/origin.c says which
 * good kernel and which defect, docs/kernels.md "Known-bad kernels" how
 * to add one).  Every correct kernel runs with _QF_DEFECT_NONE. */
typedef enum _qf_defect {
    _QF_DEFECT_NONE = 0,
    _QF_DEFECT_GEMM_EDGE_TILE_K,    /* gemm.c: rows of the edge M-tile of 64 drop the last product */
    _QF_DEFECT_GEMM_RACY_ORDER,     /* gemm.c: the sum starts at an index that changes per call */
    _QF_DEFECT_GEMM_PAIR_OVERRUN,   /* gemm.c: odd N, the last column is stored as a pair */
    _QF_DEFECT_GEMM_UNWRITTEN_TAIL, /* gemm.c: only whole chunks of 8 columns are stored */
    _QF_DEFECT_SOFTMAX_NO_MAX,      /* softmax.c: expf(z), no max subtracted */
    _QF_DEFECT_LAYERNORM_ONE_PASS,  /* layernorm.c: var = E[x^2] - E[x]^2 */
    _QF_DEFECT_RMSNORM_NO_EPS,      /* rmsnorm.c: eps is never added */
    _QF_DEFECT_FLASH_NO_RESCALE_L,  /* attention_flash.c: the running sum is not rescaled */
    _QF_DEFECT_WELFORD_NO_FACTOR,   /* layernorm_welford.c: M2 += delta * delta */
    _QF_DEFECT_ROPE_F16_ANGLE,      /* rope.c: the angle rounded to float16 */
    _QF_DEFECT_L2NORM_F16_SUMSQ,    /* l2norm.c: squares and partial sums rounded to float16 */
    _QF_DEFECT_GEMM_IGNORES_LD,     /* gemm.c: a and b read as if dense (lda = K, ldb = N) */
    _QF_DEFECT_GEMM_PAD_STORE,      /* gemm.c: each row of d stored over its whole pitch (zeros in the padding) */
    _QF_DEFECT_SOFTMAX_BF16_SUM,    /* softmax.c: the sum of exponentials rounded to bfloat16 */
} _qf_defect;

/* The defect of a run: ctx (kernel->user) is NULL, or points to a
 * _qf_defect or to a configuration whose first member is one (a pointer
 * to a structure, converted, points to its first member: C11 6.7.2.1). */
static inline _qf_defect _qf_cpu_defect(const void *ctx)
{
    return ctx ? *(const _qf_defect *)ctx : _QF_DEFECT_NONE;
}

/* The run and supports functions of the built-in kernels (table.c).
 * gemm.cpu.naive.f32, softmax.cpu.f32, rmsnorm.cpu.f32 and
 * layernorm.cpu.twopass.f32 take ctx NULL or a const _qf_defect *. */
qf_status _qf_cpu_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_cpu_gemm_f32_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_gemm_bf16_run(void *ctx, const qf_kernel_call *call);
/* The checks every softmax run starts with (op, log/scale, x and y float32
 * 2-d [rows][cols]): QF_OK, or the failure already written to call->msg. */
qf_status _qf_cpu_softmax_args_get(const qf_kernel_call *call, const qf_op_softmax **o, const qf_tensor **X,
                                   const qf_tensor **Y);
qf_status _qf_cpu_softmax_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status _qf_cpu_softmax_f32_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_rmsnorm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                   char *why, size_t why_size);
qf_status _qf_cpu_rmsnorm_f32_run(void *ctx, const qf_kernel_call *call);
/* gemm_fast.c: the candidate GEMMs; kernel->user holds the algorithm.
 * That of gemm.cpu.f16acc (gemm_fast.c's GF_F16ACC), which the known-bad
 * gemm.bad.f16acc runs too: */
#define _QF_CPU_GEMM_FAST_F16ACC ((void *)(intptr_t)4)
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
/* Shared by the attention kernels ("BHSD" 4-d, lse 3-d): the checked
 * arguments of a call (masks none / causal / causal bottom-right, no mask
 * tensor), the last kept key of query row i, one score float32(float32(q .
 * k_j) * sc) (sequential float32 dot, products rounded), the output row
 * o / l and lse = m + logf(l); element loads and stores (codes of any
 * float format of at most 32 bits; stores round to nearest even). */
typedef struct _qf_cpu_attn_args {
    const qf_op_attention *a;
    const qf_tensor *q, *k, *v, *o, *lse;
    int64_t B, H, HK, SQ, SK, D, DV, group;
    float sc; /* the scale rounded to float32 */
} _qf_cpu_attn_args;
qf_status _qf_cpu_attn_args_get(const qf_kernel_call *call, _qf_cpu_attn_args *x);
int64_t _qf_cpu_attn_last(const _qf_cpu_attn_args *x, int64_t i);
float _qf_cpu_attn_score(const _qf_cpu_attn_args *x, int64_t b, int64_t h, int64_t i, int64_t j);
void _qf_cpu_attn_finish(const _qf_cpu_attn_args *x, int64_t b, int64_t h, int64_t i, const float *o, float m,
                         float l);
float _qf_cpu_attn_ld(const qf_tensor *t, int64_t off);
void _qf_cpu_attn_st(const qf_tensor *t, int64_t off, float v);
int64_t _qf_cpu_attn_off(const qf_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d);

/* attention_flash.c: the flash-style forward, parametrized so that the
 * known-bad variants (kernels/bad) share it. */
typedef struct _qf_cpu_flash_cfg {
    _qf_defect defect;     /* first (_qf_cpu_defect): none, or _QF_DEFECT_FLASH_NO_RESCALE_L */
    int kv_tile;           /* keys per tile */
    qf_format_id p_format; /* P rounded to this before P V; QF_FLOAT32: not rounded */
} _qf_cpu_flash_cfg;
qf_status _qf_cpu_attention_flash(const qf_kernel_call *call, const _qf_cpu_flash_cfg *cfg);
/* kernel->user: a const _qf_cpu_flash_cfg * */
qf_status _qf_cpu_attention_flash_run(void *ctx, const qf_kernel_call *call);
/* layernorm_welford.c and rope.c: ctx NULL, or a const _qf_defect *
 * (_QF_DEFECT_WELFORD_NO_FACTOR, _QF_DEFECT_ROPE_F16_ANGLE). */
qf_status _qf_cpu_layernorm_welford_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_cpu_rope_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_cpu_rope_run(void *ctx, const qf_kernel_call *call);
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
/* l2norm.c: ctx NULL, or a const _qf_defect * (_QF_DEFECT_L2NORM_F16_SUMSQ). */
qf_status _qf_cpu_l2norm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                  char *why, size_t why_size);
qf_status _qf_cpu_l2norm_run(void *ctx, const qf_kernel_call *call);
/* softmax_online.c */
qf_status _qf_cpu_softmax_online_supports(const qf_kernel *k, const qf_op_desc *op,
                                          const qf_dtype_tuple *dtype, char *why, size_t why_size);
qf_status _qf_cpu_softmax_online_run(void *ctx, const qf_kernel_call *call);

#endif
