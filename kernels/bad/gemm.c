/* gemm.c: what the known-bad GEMMs do not share with their good kernels
 * (table.c and origin.c say what each is made of).
 *
 * Their scope: d = a b (alpha = 1, beta = 0), row-major, no batch, no
 * transposes, no groups.  Each defect is coded for that case only (the
 * edge tile and the stray stores are those of one [m][n] output), so the
 * supports callback declines the rest, whatever the good kernel accepts.
 */
#include <string.h>

#include "_bad.h"
#include "qf_model.h"

qf_status _qf_bad_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    (void)k;
    (void)dtype;
    if (g->alpha != 1 || g->beta != 0 || g->trans_a || g->trans_b || g->batch > 1 || g->groups) {
        snprintf(why, why_size, "only d = a b: alpha 1, beta 0, no transposes, no batch, no groups");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* gemm.bad.h100_fp8_as_f32: the model kernel gemm.model.h100.e4m3 itself
 * (its arithmetic is right for what it models); only the claim differs.
 * The model's configuration is private to kernels/models, so the run goes
 * through the model's own table entry. */
qf_status _qf_bad_gemm_fp8_as_f32_run(void *ctx, const qf_kernel_call *call)
{
    size_t i, n = 0;
    const qf_kernel *t = qf_kernels_models(&n);
    (void)ctx;
    for (i = 0; i < n; i++)
        if (!strcmp(t[i].name, "gemm.model.h100.e4m3"))
            return t[i].run(t[i].user, call);
    return _qf_cpu_fail(call, QF_EINVAL, "the model gemm.model.h100.e4m3 is not built");
}
