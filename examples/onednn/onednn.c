/* onednn.c: oneDNN's matmul primitive as qualify kernels (a plugin,
 * docs/kernels.md; the claims and the measured results are in
 * docs/third-party.md, "oneDNN matmul (C plugin)").
 *
 *   gemm.onednn.f32  float32 x float32 -> float32
 *   gemm.onednn.s8   int8 x int8 -> int32, claimed exact
 *
 * Each call builds a 2-d matmul primitive through the oneDNN 2.x C API
 * (dnnl_matmul_desc_init, dnnl_primitive_desc_create,
 * dnnl_primitive_create, dnnl_primitive_execute) on the CPU engine, with
 * memory descriptors that carry the tensors' own strides, so a transposed
 * operand is passed as it is stored, not copied.  A batch is one execution
 * per batch entry with the data handles moved.  alpha != 1, beta != 0 and
 * grouped GEMMs are UNSUPPORTED: oneDNN would do them through output scales
 * and a sum post-op, whose roundings this plugin does not claim.
 *
 * Build: examples/onednn/CMakeLists.txt (in-tree only when oneDNN is found).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "qf_kernel.h"

/* kernel->user: which tuple the kernel serves. */
enum { OD_F32 = 0, OD_S8 = 1 };

/* int8 products are at most 2^14 in magnitude: K * 2^14 stays below 2^31
 * for K <= 131071, so inside this limit the exact sum fits int32 and an
 * overflow cannot be what makes a case fail (gemm.cpu.int8's limit). */
#define OD_S8_KMAX 131071

typedef struct od_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
} od_ctx;

static int kind_of(const qf_kernel *k)
{
    return (int)(intptr_t)k->user;
}

static qf_status fail(const qf_kernel_call *call, qf_status s, const char *what, dnnl_status_t ds)
{
    if (call->msg && call->msg_size)
        snprintf(call->msg, call->msg_size, "%s: %s%s%s", call->kernel->name, what,
                 ds == dnnl_success ? "" : ": ", ds == dnnl_success ? "" : dnnl_status2str(ds));
    return s;
}

/* One engine and stream per process, kept across calls. */
static qf_status od_init(const qf_kernel *k, void **out)
{
    od_ctx *c = calloc(1, sizeof *c);
    (void)k;
    if (!c)
        return QF_ENOMEM;
    /* No CPU engine or stream: this process cannot serve the kernel. */
    if (dnnl_engine_create(&c->engine, dnnl_cpu, 0) != dnnl_success) {
        free(c);
        return QF_EUNSUPPORTED;
    }
    if (dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags) != dnnl_success) {
        dnnl_engine_destroy(c->engine);
        free(c);
        return QF_EUNSUPPORTED;
    }
    *out = c;
    return QF_OK;
}

static void od_fini(void *ctx)
{
    od_ctx *c = ctx;
    if (!c)
        return;
    dnnl_stream_destroy(c->stream);
    dnnl_engine_destroy(c->engine);
    free(c);
}

static qf_status od_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype, char *why,
                             size_t why_size)
{
    const qf_op_gemm *g = &op->u.gemm;
    (void)dtype;
    if (g->groups) {
        snprintf(why, why_size, "grouped GEMM is not supported by this kernel");
        return QF_EUNSUPPORTED;
    }
    if (g->alpha != 1 || g->beta != 0) {
        snprintf(why, why_size,
                 "alpha must be 1 and beta 0 (output scales and sum post-ops are not claimed)");
        return QF_EUNSUPPORTED;
    }
    if (kind_of(k) == OD_S8 && g->k > OD_S8_KMAX) {
        snprintf(why, why_size, "K = %zu > %d: the exact sum could overflow int32", g->k, OD_S8_KMAX);
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* Does t hold rows x cols (2-d, or 3-d [batch or 1][rows][cols]) of a
 * plain, unscaled format f? */
static int shape_ok(const qf_tensor *t, qf_format_id f, int64_t rows, int64_t cols)
{
    return t->data && t->format == f && !t->packed && !t->index_bits && t->scale.kind == QF_SCALE_NONE &&
           (t->ndim == 2 || t->ndim == 3) && t->shape[t->ndim - 2] == rows && t->shape[t->ndim - 1] == cols;
}

/* Element offset of batch entry p (a 2-d tensor, or a 3-d one of one
 * entry, is shared by the whole batch). */
static int64_t batch_off(const qf_tensor *t, int64_t p)
{
    return t->ndim == 3 && t->shape[0] > 1 ? p * t->stride[0] : 0;
}

/* The logical rows x cols matrix of t: stored as is, or transposed (t
 * holds cols x rows), expressed through strides. */
static dnnl_status_t md_of(dnnl_memory_desc_t *md, const qf_tensor *t, int trans, dnnl_data_type_t dt)
{
    int64_t rs = t->stride[t->ndim - 2], cs = t->stride[t->ndim - 1];
    int64_t rows = t->shape[t->ndim - (trans ? 1 : 2)], cols = t->shape[t->ndim - (trans ? 2 : 1)];
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? cs : rs, trans ? rs : cs};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}

static qf_status od_run(void *ctx, const qf_kernel_call *call)
{
    od_ctx *c = ctx;
    const qf_op_gemm *g;
    const qf_tensor *A, *B;
    qf_tensor *D;
    int s8;
    qf_format_id fi, fo;
    dnnl_data_type_t di, dout;
    size_t esi, eso;
    int64_t m, n, k, batch, p;
    dnnl_memory_desc_t amd, bmd, dmd;
    dnnl_matmul_desc_t mmd;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t am = NULL, bm = NULL, dm = NULL;
    dnnl_status_t ds;
    qf_status st = QF_OK;
    const char *what = NULL;

    if (!call->op || call->op->op != QF_OP_GEMM)
        return fail(call, QF_EINVAL, "not a gemm call", dnnl_success);
    g = &call->op->u.gemm;
    if (g->groups || g->alpha != 1.0 || g->beta != 0.0)
        return fail(call, QF_EUNSUPPORTED, "only alpha = 1, beta = 0, not grouped", dnnl_success);
    s8 = kind_of(call->kernel) == OD_S8;
    fi = s8 ? QF_INT8 : QF_FLOAT32;
    fo = s8 ? QF_INT32 : QF_FLOAT32;
    di = s8 ? dnnl_s8 : dnnl_f32;
    dout = s8 ? dnnl_s32 : dnnl_f32;
    esi = s8 ? 1 : 4;
    eso = 4;
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    batch = g->batch ? (int64_t)g->batch : 1;
    A = &call->in[0];
    B = &call->in[1];
    D = &call->out[0];
    if (!shape_ok(A, fi, g->trans_a ? k : m, g->trans_a ? m : k) ||
        !shape_ok(B, fi, g->trans_b ? n : k, g->trans_b ? k : n) || !shape_ok(D, fo, m, n))
        return fail(call, QF_EINVAL, "tensors do not match the op and the kernel's formats", dnnl_success);
    if (s8 && k > OD_S8_KMAX)
        return fail(call, QF_EUNSUPPORTED, "K too large: the exact sum could overflow int32", dnnl_success);

    /* goto-free cleanup: each step runs only while the previous ones
     * succeeded, and everything created is destroyed at the end. */
    if ((ds = md_of(&amd, A, g->trans_a, di)) != dnnl_success ||
        (ds = md_of(&bmd, B, g->trans_b, di)) != dnnl_success ||
        (ds = md_of(&dmd, D, 0, dout)) != dnnl_success)
        what = "memory descriptor";
    else if ((ds = dnnl_matmul_desc_init(&mmd, &amd, &bmd, NULL, &dmd)) != dnnl_success)
        what = "dnnl_matmul_desc_init";
    else if ((ds = dnnl_primitive_desc_create(&pd, &mmd, NULL, c->engine, NULL)) != dnnl_success)
        what = "dnnl_primitive_desc_create (no implementation for this case)";
    else if ((ds = dnnl_primitive_create(&prim, pd)) != dnnl_success)
        what = "dnnl_primitive_create";
    else if ((ds = dnnl_memory_create(&am, &amd, c->engine, DNNL_MEMORY_NONE)) != dnnl_success ||
             (ds = dnnl_memory_create(&bm, &bmd, c->engine, DNNL_MEMORY_NONE)) != dnnl_success ||
             (ds = dnnl_memory_create(&dm, &dmd, c->engine, DNNL_MEMORY_NONE)) != dnnl_success)
        what = "dnnl_memory_create";
    for (p = 0; !what && p < batch; p++) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, dm}};
        if ((ds = dnnl_memory_set_data_handle(am, (char *)A->data + batch_off(A, p) * (int64_t)esi)) !=
                dnnl_success ||
            (ds = dnnl_memory_set_data_handle(bm, (char *)B->data + batch_off(B, p) * (int64_t)esi)) !=
                dnnl_success ||
            (ds = dnnl_memory_set_data_handle(dm, (char *)D->data + batch_off(D, p) * (int64_t)eso)) !=
                dnnl_success)
            what = "dnnl_memory_set_data_handle";
        else if ((ds = dnnl_primitive_execute(prim, c->stream, 3, args)) != dnnl_success ||
                 (ds = dnnl_stream_wait(c->stream)) != dnnl_success)
            what = "dnnl_primitive_execute";
    }
    if (what)
        /* No implementation for the case is a limit of the library; any
         * other failure is an error with oneDNN's status in the message. */
        st = fail(call, ds == dnnl_unimplemented ? QF_EUNSUPPORTED : QF_EINVAL, what, ds);
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(bm);
    dnnl_memory_destroy(dm);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

static qf_dtype_tuple tuples[2];
static char descr[2][160];

/* Round-to-nearest accumulation in acc along the sequential chain (no
 * block FMA), with or without a determinism claim. */
static qf_arith_claim seq_claim(const qf_plugin_host *host, qf_format_id acc, int deterministic)
{
    qf_arith_claim c = host->arith_claim_default();
    c.acc_format = acc;
    c.block_fma = 1;
    c.acc_round = QF_ROUND_RNE;
    c.sum_order = QF_SUM_SEQUENTIAL;
    c.out_round = QF_ROUND_RNE;
    c.deterministic = deterministic;
    c.deterministic_threads = deterministic;
    return c;
}

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

QF_PLUGIN_EXPORT qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    const dnnl_version_t *v = dnnl_version();
    qf_kernel kern;
    qf_status s;
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;

    memset(tuples, 0, sizeof tuples);
    /* float32: oneDNN documents no summation order, blocking or FMA use
     * (its JIT kernels pick them per ISA), so the claim is the one every
     * order satisfies: the sequential chain of K float32 roundings, which
     * bounds any evaluation order (docs/third-party.md, as for cblas).
     * Nothing promises bitwise repeatability: its thread count is
     * oneDNN's own (OMP_NUM_THREADS), and the blocking may follow it. */
    tuples[0].name = "f32";
    tuples[0].in[0] = tuples[0].in[1] = tuples[0].in[2] = QF_FLOAT32;
    tuples[0].out[0] = QF_FLOAT32;
    tuples[0].arith = seq_claim(host, QF_FLOAT32, 0);

    /* int8: oneDNN's matmul accumulates s8 x s8 in s32 (its int8 guide),
     * which is exact below OD_S8_KMAX.  qf_arith_claim has no integer
     * accumulator: as gemm.cpu.int8 does, the claim is float64
     * accumulation, exact for these sums, whose bound is below half a
     * unit, so only the exact integer passes.  An exact result is also
     * the same in every run and at every thread count. */
    tuples[1].name = "i8_i8_i32";
    tuples[1].in[0] = tuples[1].in[1] = QF_INT8;
    tuples[1].in[2] = QF_INT32;
    tuples[1].out[0] = QF_INT32;
    tuples[1].arith = seq_claim(host, QF_FLOAT64, 1);

    snprintf(descr[0], sizeof descr[0],
             "oneDNN %d.%d.%d matmul, float32 (claim: float32 accumulation, any order)", v->major, v->minor,
             v->patch);
    snprintf(descr[1], sizeof descr[1],
             "oneDNN %d.%d.%d matmul, int8 x int8 -> int32 (claim: exact, K <= %d)", v->major, v->minor,
             v->patch, OD_S8_KMAX);

    for (i = 0; i < 2; i++) {
        memset(&kern, 0, sizeof kern);
        kern.abi_version = QF_KERNEL_ABI_VERSION;
        kern.struct_size = sizeof kern;
        kern.name = i == OD_F32 ? "gemm.onednn.f32" : "gemm.onednn.s8";
        kern.op = QF_OP_GEMM;
        kern.kind = QF_KERNEL_OPTIMIZED;
        kern.description = descr[i];
        kern.backend = "cpu";
        kern.archs = "cpu";
        kern.dtypes = &tuples[i];
        kern.n_dtypes = 1;
        kern.run = od_run;
        kern.init = od_init;
        kern.fini = od_fini;
        kern.supports = od_supports;
        kern.user = (void *)(intptr_t)i;
        if ((s = host->add(reg, &kern)) != QF_OK)
            return s;
    }
    return QF_OK;
}
