/* demo_gemm.c: the kernel of the out-of-tree example project (README.md
 * here): a float32 GEMM that sums each dot product in two halves, even
 * and odd k, each accumulated in float32 and added at the end, and says
 * so in its claim (split into 2 sequential partial sums).
 *
 * Built with -DDEMO_BROKEN the products are truncated to 16 significant
 * bits first: the claim no longer holds, the sweep reports FAILED and the
 * CTest test registered by qualify_add_sweep fails. */
#include <stdint.h>
#include <string.h>

#include <qf_kernel.h>

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static qf_status demo_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    const qf_tensor *A, *B, *D;
    int64_t i, j, l;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_GEMM)
        return QF_EINVAL;
    g = &call->op->u.gemm;
    if (g->groups || g->alpha != 1.0 || g->beta != 0.0 || (g->batch && g->batch != 1) || g->trans_a ||
        g->trans_b)
        return QF_EUNSUPPORTED;
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    for (i = 0; i < (int64_t)g->m; i++)
        for (j = 0; j < (int64_t)g->n; j++) {
            const uint32_t *a = A->data, *b = B->data;
            float half[2] = {0.0f, 0.0f};
            for (l = 0; l < (int64_t)g->k; l++) {
                float p = f32(a[i * A->stride[A->ndim - 2] + l * A->stride[A->ndim - 1]]) *
                          f32(b[l * B->stride[B->ndim - 2] + j * B->stride[B->ndim - 1]]);
#ifdef DEMO_BROKEN
                p = f32(u32(p) & 0xFFFF8000u);
#endif
                half[l & 1] += p;
            }
            ((uint32_t *)D->data)[i * D->stride[D->ndim - 2] + j * D->stride[D->ndim - 1]] =
                u32(half[0] + half[1]);
        }
    return QF_OK;
}

static qf_dtype_tuple tuples[1];

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    qf_kernel k;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(tuples, 0, sizeof tuples);
    tuples[0].name = "f32";
    tuples[0].in[0] = tuples[0].in[1] = tuples[0].in[2] = QF_FLOAT32;
    tuples[0].out[0] = QF_FLOAT32;
    tuples[0].arith = host->arith_claim_default(); /* float32 accumulation, RNE */
    tuples[0].arith.sum_order = QF_SUM_SPLITK;
    tuples[0].arith.split_k = 2;
    memset(&k, 0, sizeof k);
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = "gemm.demo.halves.f32";
    k.op = QF_OP_GEMM;
    k.kind = QF_KERNEL_OPTIMIZED;
    k.description = "example project: float32 GEMM summing even and odd k apart";
    k.backend = "cpu";
    k.archs = "cpu";
    k.dtypes = tuples;
    k.n_dtypes = 1;
    k.run = demo_run;
    return host->add(reg, &k);
}
