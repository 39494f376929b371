/* gpu_supports.c: the host-side checks shared by the CUDA and HIP kernel
 * records (_gpu_supports.h). */
#include <stdio.h>

#include "_gpu_supports.h"

qf_status _qf_gpu_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const qf_op_gemm *o = &op->u.gemm;
    (void)k;
    (void)dtype;
    if (op->op != QF_OP_GEMM)
        return QF_EUNSUPPORTED;
    if (o->trans_a || o->trans_b || o->batch > 1 || o->groups || o->alpha != 1.0 || o->beta != 0.0) {
        snprintf(why, why_size, "only d = a b: no transposes, batch 1, not grouped, alpha 1, beta 0");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

qf_status _qf_gpu_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size)
{
    const qf_op_attention *a = &op->u.attention;
    size_t dv = a->head_dim_v ? a->head_dim_v : a->head_dim;
    (void)k;
    (void)dtype;
    if (op->op != QF_OP_ATTENTION)
        return QF_EUNSUPPORTED;
    if (a->mask != QF_MASK_NONE && a->mask != QF_MASK_CAUSAL) {
        snprintf(why, why_size, "mask %s: only none and causal (top-left)", qf_mask_kind_name(a->mask));
        return QF_EUNSUPPORTED;
    }
    if (a->softcap != 0 || dv > 256 || a->kv_heads == 0 || a->heads % a->kv_heads) {
        snprintf(why, why_size, "no softcap, head_dim_v <= 256, heads a multiple of kv_heads");
        return QF_EUNSUPPORTED;
    }
    if (a->mask == QF_MASK_CAUSAL && a->seq_k < a->seq_q) {
        snprintf(why, why_size, "causal with seq_k < seq_q leaves rows with no key");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}
