/* plugin_drift.c: a test plugin whose kernel, gemm.test.drift.f32, exists
 * in two versions under the same name, as a kernel does before and after
 * a change (tests/enable/t-evidence builds both with cc):
 *   default            products and sum in binary64, one rounding to
 *                      float32 at the end: inside its float32 claim;
 *   QF_DRIFT_LOSSY     each product rounded to bfloat16 (by truncation)
 *                      before a float32 sum: the change that loses
 *                      precision, which `qualify diff` must name. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"

static float as_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int64_t at(const qf_tensor *t, int64_t r, int64_t c)
{
    return r * t->stride[t->ndim - 2] + c * t->stride[t->ndim - 1];
}

static qf_status drift_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    const qf_tensor *A, *B, *D;
    int64_t m, n, k, i, j, l;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_GEMM)
        return QF_EINVAL;
    g = &call->op->u.gemm;
    if (g->groups || g->alpha != 1.0 || g->beta != 0.0 || (g->batch && g->batch != 1) || g->trans_a || g->trans_b)
        return QF_EUNSUPPORTED;
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            const uint32_t *a = A->data, *b = B->data;
#ifdef QF_DRIFT_LOSSY
            float acc = 0.0f;
            for (l = 0; l < k; l++) {
                float p = as_f32(a[at(A, i, l)]) * as_f32(b[at(B, l, j)]);
                acc += as_f32(f32_bits(p) & 0xFFFF0000u);
            }
            ((uint32_t *)D->data)[at(D, i, j)] = f32_bits(acc);
#else
            double acc = 0.0;
            for (l = 0; l < k; l++)
                acc += (double)as_f32(a[at(A, i, l)]) * (double)as_f32(b[at(B, l, j)]);
            ((uint32_t *)D->data)[at(D, i, j)] = f32_bits((float)acc);
#endif
        }
    return QF_OK;
}

static qf_dtype_tuple tuples[1];

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    qf_kernel kern;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(tuples, 0, sizeof tuples);
    tuples[0].name = "f32";
    tuples[0].in[0] = tuples[0].in[1] = tuples[0].in[2] = QF_FLOAT32;
    tuples[0].out[0] = QF_FLOAT32;
    tuples[0].arith = host->arith_claim_default(); /* float32 accumulation, RNE */
    memset(&kern, 0, sizeof kern);
    kern.abi_version = QF_KERNEL_ABI_VERSION;
    kern.struct_size = sizeof kern;
    kern.name = "gemm.test.drift.f32";
    kern.op = QF_OP_GEMM;
    kern.kind = QF_KERNEL_OPTIMIZED;
    kern.description = "test plugin: a float32 GEMM before / after a change that loses precision";
    kern.backend = "cpu";
    kern.archs = "cpu";
    kern.dtypes = tuples;
    kern.n_dtypes = 1;
    kern.run = drift_run;
    return host->add(reg, &kern);
}
