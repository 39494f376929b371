/* qf_workload.h: a small transformer forward pass assembled from registered
 * kernels, run against the exact reference path (`qualify workload`).
 *
 * The receipt that a kernel's local error does, or does not, change a
 * workload's result: the same weights and tokens go through (a) the kernel
 * path, every op through a kernel of the registry called in-process (they
 * are CPU kernels) on float32 activations, and (b) the exact path, every op
 * the correctly rounded binary64 result of its binary64 inputs (exact GEMM
 * of refs/qf_dot.h, MPFR references of refs/qf_ref.h).  The outputs are
 * compared per layer, at the final norm and at the logits (KL divergence,
 * top-1 agreement).  docs/workload.md gives the model, the tensor names of
 * a weights file and the precise meaning of "exact path".
 *
 * Model (Llama-style, batch 1, causal): h = embed[tokens]; per layer
 *   h += Wo attention(rope(Wq rmsnorm(h)), rope(Wk rmsnorm(h)), Wv rmsnorm(h))
 *   h += Wd (silu(Wg rmsnorm(h)) * (Wu rmsnorm(h)))
 * then logits = lm_head rmsnorm(h).  Attention has GQA (heads a multiple of
 * kv_heads) and half-split RoPE (GPT-NeoX / Llama layout).
 */
#ifndef QF_WORKLOAD_H
#define QF_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "qf_block.h"
#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;
struct qf_safetensors;

typedef struct qf_workload_config {
    size_t layers, dim, heads, kv_heads, ffn, vocab, seq;
    double eps;        /* RMSNorm epsilon; 1e-5 */
    double rope_theta; /* 10000 */
} qf_workload_config;

/* 2 layers, dim 128, 4 heads, 2 kv heads, ffn 256, vocab 256, seq 16. */
qf_workload_config qf_workload_config_default(void);
/* QF_EINVAL with a message for zero sizes, heads not a multiple of
 * kv_heads, dim not a multiple of heads, an odd head_dim. */
qf_status qf_workload_config_check(const qf_workload_config *c, char *err, size_t err_size);

/* Weights as binary64 values, laid out as in a Llama checkpoint: embed
 * [vocab][dim], per layer attn_norm [dim], wq [heads*hd][dim], wk, wv
 * [kv_heads*hd][dim], wo [dim][heads*hd], mlp_norm [dim], wg, wu
 * [ffn][dim], wd [dim][ffn]; final_norm [dim], lm_head [vocab][dim]. */
enum {
    QF_WL_ATTN_NORM = 0,
    QF_WL_WQ,
    QF_WL_WK,
    QF_WL_WV,
    QF_WL_WO,
    QF_WL_MLP_NORM,
    QF_WL_WG,
    QF_WL_WU,
    QF_WL_WD,
    QF_WL_PER_LAYER
};
typedef struct qf_workload_weights {
    double *embed, *final_norm, *lm_head;
    double **layer; /* [layers * QF_WL_PER_LAYER] */
    size_t layers;
} qf_workload_weights;

/* The checkpoint name of a tensor ("model.layers.0.self_attn.q_proj.weight");
 * layer ignored for the three global ones (which = -1 embed, -2 final norm,
 * -3 lm_head). */
void qf_workload_tensor_name(int which, size_t layer, char *buf, size_t size);

/* Seeded synthetic weights, each a float32 value: projections normal with
 * std 1/sqrt(fan_in), embeddings std 1, norm weights 1 + N(0, 0.1^2). */
qf_status qf_workload_weights_synthetic(const qf_workload_config *c, uint64_t seed, qf_workload_weights *w);
/* Load from a .safetensors file (tensor names above; any float dtype,
 * decoded exactly).  Sizes come from the shapes: dim and vocab from the
 * embedding, layers from the layer tensors present, ffn from gate_proj,
 * kv_heads from k_proj (c->heads must be given; head_dim = dim / heads);
 * c is updated.  QF_EINVAL with a message naming the file and tensor. */
qf_status qf_workload_weights_load(const struct qf_safetensors *st, qf_workload_config *c,
                                   qf_workload_weights *w, char *err, size_t err_size);
/* Write the weights as F32 tensors under those names. */
qf_status qf_workload_weights_save(const char *path, const qf_workload_config *c, const qf_workload_weights *w,
                                   char *err, size_t err_size);
void qf_workload_weights_free(qf_workload_weights *w);

/* The ops of the forward pass that a kernel may take. */
typedef enum qf_workload_op {
    QF_WL_OP_GEMM = 0,
    QF_WL_OP_RMSNORM,
    QF_WL_OP_ATTENTION,
    QF_WL_OP_ACTIVATION,
    QF_WL_OP_ROPE,
    QF_WL_OP_COUNT
} qf_workload_op;
const char *qf_workload_op_name(qf_workload_op op);
/* The kernel ABI op a stage runs on (QF_OP_COUNT when out of range): a
 * kernel chosen for the stage must be of this op. */
qf_op qf_workload_op_kernel_op(qf_workload_op op);

/* What computes each op.  exact = 1: the exact path (every op its binary64
 * correctly rounded reference; kernels ignored).  Otherwise activations are
 * float32 and op i runs kernel[i] when it is set and accepts the case, or
 * the fallback: the op's reference correctly rounded to float32 (noted in
 * the trace).  GEMM inputs of a kernel whose tuple takes 8-bit floats are
 * quantized with float32 scales (fp8_granularity: TENSOR, or ROW = per token
 * for activations and per output channel for weights) and the float32
 * output is divided by the two scales in binary64, rounded to float32. */
typedef struct qf_workload_plan {
    int exact;
    const qf_kernel *kernel[QF_WL_OP_COUNT];
    const qf_dtype_tuple *gemm_dtype; /* NULL: the kernel's first tuple with a float32 output */
    qf_block_fp8_granularity fp8_granularity;
} qf_workload_plan;

/* Activations kept for the comparison. */
typedef struct qf_workload_trace {
    size_t layers, seq, dim, vocab;
    double *hidden;  /* [layers][seq][dim]: the residual stream after each block */
    double *final;   /* [seq][dim]: after the final norm */
    double *logits;  /* [seq][vocab] */
    char used[QF_WL_OP_COUNT][160]; /* what computed each op: a kernel name, "exact", "fallback ..." */
    /* The kernel's LOCAL error per op: ||out - exact|| / ||exact|| pooled
     * over its calls, where exact is the binary64 reference on the very
     * inputs the kernel got (for scaled 8-bit GEMM: the quantized codes,
     * with the same scales); NaN where no kernel ran. */
    double local[QF_WL_OP_COUNT];
} qf_workload_trace;

qf_status qf_workload_run(const qf_workload_config *c, const qf_workload_weights *w, const int64_t *tokens,
                          const qf_workload_plan *plan, qf_workload_trace *out, char *err, size_t err_size);
void qf_workload_trace_free(qf_workload_trace *t);

typedef struct qf_workload_err {
    double normwise; /* ||got - ref|| / ||ref|| */
    double max_abs;
} qf_workload_err;

typedef struct qf_workload_cmp {
    size_t layers;
    qf_workload_err *layer; /* [layers] */
    qf_workload_err final, logits;
    double kl_mean, kl_max; /* KL(P_ref || P_got) of the next-token distributions, nats */
    double top1;            /* fraction of positions with the same argmax */
} qf_workload_cmp;

/* got against ref (same config).  KL uses softmax in binary64 with the
 * log-sum-exp shift. */
qf_status qf_workload_compare(const qf_workload_trace *ref, const qf_workload_trace *got, qf_workload_cmp *out);
void qf_workload_cmp_free(qf_workload_cmp *c);

#ifdef __cplusplus
}
#endif

#endif /* QF_WORKLOAD_H */
