/* plugin_gpu_standin.c: a kernel plugin (a MODULE library for `qualify run
 * --plugin`) whose GEMM kernels stand in for GPU kernels: one on the HIP
 * back end claiming gfx942, one on the CUDA back end claiming sm_90 and
 * sm_90a.  Neither is ever called: without a device (every CI machine, and
 * a CPU-only build, which has no GPU back end at all) the runner files
 * them UNSUPPORTED under the architectures they claim, which
 * tests/enable/t-nodevice.c checks through `qualify enable`. */
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"

static qf_status never_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    if (call->msg && call->msg_size)
        snprintf(call->msg, call->msg_size, "the stand-in GPU kernel was called");
    return QF_EIO;
}

static qf_dtype_tuple tuple;

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

static qf_kernel standin(const char *name, const char *backend, const char *archs)
{
    qf_kernel k = {.abi_version = QF_KERNEL_ABI_VERSION,
                   .struct_size = sizeof k,
                   .name = name,
                   .op = QF_OP_GEMM,
                   .kind = QF_KERNEL_OPTIMIZED,
                   .description = "t-nodevice stand-in for a GPU kernel (never called)",
                   .backend = backend,
                   .archs = archs,
                   .dtypes = &tuple,
                   .n_dtypes = 1,
                   .run = never_run};
    return k;
}

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    qf_kernel hip = standin("gemm.standin.hip", "hip", "gfx942");
    qf_kernel cuda = standin("gemm.standin.cuda", "cuda", "sm_90 sm_90a");
    qf_status s;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    tuple = (qf_dtype_tuple){.name = "f32", .in = {QF_FLOAT32, QF_FLOAT32, QF_FLOAT32}, .out = {QF_FLOAT32},
                             .arith = host->arith_claim_default()};
    s = host->add(reg, &hip);
    return s != QF_OK ? s : host->add(reg, &cuda);
}
