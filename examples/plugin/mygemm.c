/* mygemm.c: a user's own GEMM as a qualify plugin (docs/kernels.md).
 *
 * The kernel, gemm.user.acc4.f32, is what a hand-vectorized CPU GEMM
 * does: four float32 accumulators take the products of k = 0, 4, 8, ...,
 * k = 1, 5, 9, ... and so on, and are added at the end as
 * ((acc0 + acc1) + acc2) + acc3.  Its claim says exactly that: float32
 * accumulation, nearest even, split into 4 sequential partial sums that are
 * then summed (QF_SUM_SPLITK, split_k = 4), so the longest chain of
 * roundings is ceil(K/4) + 3 and the bound is tighter than gamma_K.
 *
 * Build (against an installed qualify; this directory's CMakeLists.txt):
 *     cmake -S examples/plugin -B build-plugin && cmake --build build-plugin
 *     qualify list kernels --plugin build-plugin/libqf_example_gemm.so
 *
 * The plugin uses nothing from libqualify at link time (it links with
 * -z defs): it reaches the host only through the qf_plugin_host table given
 * to qf_plugin_register, of which it keeps a copy for its run function.
 *
 * Test-only variants (built in-tree with the test suite): with
 * QF_EXAMPLE_NO_ENTRY the entry point is not exported; with
 * QF_EXAMPLE_ABI=N the kernel record claims ABI version N.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"

#ifndef QF_EXAMPLE_ABI
#define QF_EXAMPLE_ABI QF_KERNEL_ABI_VERSION
#endif

/* The host's helpers, copied at registration for the run function (the
 * table handed to the entry point lives only during that call). */
static qf_plugin_host host_copy;
static const qf_plugin_host *host = &host_copy;
static const qf_format *fmt_f32;

/* A float32 code's value: the host's exact decode, a double that a float
 * holds exactly. */
static float f32(uint32_t u)
{
    return (float)host->format_decode(fmt_f32, u);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Offset of (p, r, c) in a 2-d or 3-d tensor (a 2-d one is shared by
 * every batch entry). */
static int64_t off(const qf_tensor *t, int64_t p, int64_t r, int64_t c)
{
    int64_t o = r * t->stride[t->ndim - 2] + c * t->stride[t->ndim - 1];
    if (t->ndim == 3 && t->shape[0] > 1)
        o += p * t->stride[0];
    return o;
}

static qf_status fail(const qf_kernel_call *call, qf_status s, const char *why)
{
    if (call->msg && call->msg_size)
        snprintf(call->msg, call->msg_size, "gemm.user.acc4.f32: %s", why);
    return s;
}

static int shape_ok(const qf_tensor *t, int64_t rows, int64_t cols)
{
    return t->data && t->format == QF_FLOAT32 && !t->packed && !t->index_bits &&
           t->scale.kind == QF_SCALE_NONE && (t->ndim == 2 || t->ndim == 3) &&
           t->shape[t->ndim - 2] == rows && t->shape[t->ndim - 1] == cols;
}

static qf_status acc4_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g;
    const qf_tensor *A, *B, *D;
    int64_t m, n, k, batch, p, i, j, l;
    char why[160];
    qf_status s;
    (void)ctx;
    if (!call->op || call->op->op != QF_OP_GEMM)
        return fail(call, QF_EINVAL, "not a gemm call");
    /* The engine has checked the claim already; checking again through the
     * host is cheap insurance against a caller that did not. */
    s = host->kernel_check(call->kernel, call->op, call->dtype, why, sizeof why);
    if (s != QF_OK)
        return fail(call, s, why);
    g = &call->op->u.gemm;
    if (g->groups || g->alpha != 1.0 || g->beta != 0.0)
        return fail(call, QF_EUNSUPPORTED, "only alpha = 1, beta = 0, not grouped");
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    batch = g->batch ? (int64_t)g->batch : 1;
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    if (!shape_ok(A, g->trans_a ? k : m, g->trans_a ? m : k) ||
        !shape_ok(B, g->trans_b ? n : k, g->trans_b ? k : n) || !shape_ok(D, m, n))
        return fail(call, QF_EINVAL, "tensors do not match the op (float32 [batch][rows][cols] expected)");
    if (host->tensor_numel(D) < (size_t)(m * n))
        return fail(call, QF_EINVAL, "output tensor too small");
    for (p = 0; p < batch; p++)
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) {
                float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                const uint32_t *a = A->data, *b = B->data;
                for (l = 0; l < k; l++) {
                    float x = f32(a[g->trans_a ? off(A, p, l, i) : off(A, p, i, l)]);
                    float y = f32(b[g->trans_b ? off(B, p, j, l) : off(B, p, l, j)]);
                    float prod = x * y;
                    acc[l & 3] = acc[l & 3] + prod;
                }
                ((uint32_t *)D->data)[off(D, p, i, j)] = bits(((acc[0] + acc[1]) + acc[2]) + acc[3]);
            }
    return QF_OK;
}

static qf_dtype_tuple dtypes[1];

/* The test variant without an entry point exports the function under
 * another name, as a typo would. */
#ifdef QF_EXAMPLE_NO_ENTRY
#define qf_plugin_register qf_plugin_registr
#endif

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *h);

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *h)
{
    qf_kernel kern;
    /* A host of another ABI may lay the table out differently: check
     * before touching anything past the first two fields.  An older host of
     * this ABI has a shorter table: the last-appended helper used here
     * (kernel_check) must be in it, and then so are the others. */
    if (h->abi_version != QF_KERNEL_ABI_VERSION || !QF_PLUGIN_HOST_HAS(h, kernel_check))
        return QF_EUNSUPPORTED;
    qf_plugin_host_copy(&host_copy, h);
    fmt_f32 = host->format_get(QF_FLOAT32);

    memset(dtypes, 0, sizeof dtypes);
    dtypes[0].name = "f32";
    dtypes[0].in[0] = dtypes[0].in[1] = dtypes[0].in[2] = QF_FLOAT32;
    dtypes[0].out[0] = QF_FLOAT32;
    dtypes[0].arith = host->arith_claim_default(); /* float32 accumulator, RNE */
    dtypes[0].arith.sum_order = QF_SUM_SPLITK;
    dtypes[0].arith.split_k = 4;
    dtypes[0].arith.deterministic = 1;
    dtypes[0].arith.deterministic_threads = 1;

    memset(&kern, 0, sizeof kern);
    kern.abi_version = QF_EXAMPLE_ABI;
    kern.struct_size = sizeof kern;
    kern.name = "gemm.user.acc4.f32";
    kern.op = QF_OP_GEMM;
    kern.kind = QF_KERNEL_OPTIMIZED;
    kern.description = "example plugin: float32 GEMM with 4 interleaved float32 accumulators";
    kern.backend = "cpu";
    kern.archs = "cpu";
    kern.dtypes = dtypes;
    kern.n_dtypes = 1;
    kern.run = acc4_run;
    return host->add(reg, &kern);
}
