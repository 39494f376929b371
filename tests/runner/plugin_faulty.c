/* plugin_faulty.c: a kernel plugin (a MODULE library, loaded with
 * `qualify run --plugin`) whose GEMM kernels misbehave in every way a
 * child process can: a segfault, an abort, a hang, a write one element
 * past the output, an output element left unwritten, a NaN; and one good
 * kernel.  tests/runner/t-faulty.c runs them through the CLI and checks
 * that each gets its verdict while the other cases finish. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qf_kernel.h"

enum { GOOD, SEGV, ABRT, HANG, OVERRUN, UNWRITTEN, NAN_OUT, N_KERNELS };

static const char *const names[N_KERNELS] = {"gemm.faulty.good",    "gemm.faulty.segv",      "gemm.faulty.abort",
                                             "gemm.faulty.hang",    "gemm.faulty.overrun",   "gemm.faulty.unwritten",
                                             "gemm.faulty.nan"};

static qf_status faulty_run(void *ctx, const qf_kernel_call *call)
{
    int what = (int)(intptr_t)ctx;
    const qf_op_gemm *g = &call->op->u.gemm;
    const float *a = call->in[0].data, *b = call->in[1].data;
    float *d = call->out[0].data;
    size_t i, j, l, m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    volatile int spin = 1;
    if (what == SEGV)
        raise(SIGSEGV);
    if (what == ABRT)
        abort();
    while (what == HANG && spin)
        ;
    /* row-major, no transposes, no batch: the suite of t-faulty asks for
     * nothing else */
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float s = 0.0f;
            for (l = 0; l < k; l++)
                s = s + a[i * k + l] * b[l * n + j];
            if (what == UNWRITTEN && i == m - 1 && j == n - 1)
                continue;
            d[i * n + j] = s;
        }
    if (what == OVERRUN)
        d[m * n] = 0.0f;
    if (what == NAN_OUT)
        memcpy(&d[0], &(uint32_t){0x7FC00000u}, sizeof d[0]);
    return QF_OK;
}

static qf_dtype_tuple dtypes[1];

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(dtypes, 0, sizeof dtypes);
    dtypes[0].name = "f32";
    dtypes[0].in[0] = dtypes[0].in[1] = dtypes[0].in[2] = QF_FLOAT32;
    dtypes[0].out[0] = QF_FLOAT32;
    dtypes[0].arith = host->arith_claim_default(); /* float32, sequential, RNE */
    for (i = 0; i < N_KERNELS; i++) {
        qf_kernel kern;
        qf_status s;
        memset(&kern, 0, sizeof kern);
        kern.abi_version = QF_KERNEL_ABI_VERSION;
        kern.struct_size = sizeof kern;
        kern.name = names[i];
        kern.op = QF_OP_GEMM;
        kern.kind = i == GOOD ? QF_KERNEL_OPTIMIZED : QF_KERNEL_KNOWN_BAD;
        kern.description = "t-faulty plugin kernel";
        kern.backend = "cpu";
        kern.archs = "cpu";
        kern.dtypes = dtypes;
        kern.n_dtypes = 1;
        kern.run = faulty_run;
        kern.user = (void *)(intptr_t)i;
        if ((s = host->add(reg, &kern)) != QF_OK)
            return s;
    }
    return QF_OK;
}
