/* plugin_slowinit.c: a kernel plugin whose init is expensive, as a GPU
 * kernel's context and module loads are: it sleeps 50 ms and counts itself
 * by appending one byte to the file $QF_INIT_LOG (when set).  Two float32
 * GEMM kernels (row-major, no transposes, no batch, beta 0):
 *   gemm.slowinit.good   correct;
 *   gemm.slowinit.crashy correct, except that it raises SIGSEGV when the
 *                        case seed is 199 modulo 200 (a deliberate crash
 *                        that takes a kernel server down with it).
 * tests/runner/t-serve.c counts init calls under --isolate server and pair;
 * bench/bench_engine.c measures pairs per second with it. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qf_kernel.h"

static qf_status slow_init(const qf_kernel *k, void **ctx)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    const char *log = getenv("QF_INIT_LOG");
    while (nanosleep(&ts, &ts))
        ;
    if (log && *log) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            if (write(fd, "i", 1) != 1) {
                close(fd);
                return QF_EIO;
            }
            close(fd);
        }
    }
    *ctx = k->user;
    return QF_OK;
}

static qf_status slow_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const float *a = call->in[0].data, *b = call->in[1].data;
    float *d = call->out[0].data;
    size_t i, j, l, m = g->m, n = g->n, k = g->k;
    if (ctx && call->seed % 200 == 199)
        raise(SIGSEGV);
    if (g->trans_a || g->trans_b || g->beta != 0 || (g->batch > 1) || g->groups || g->alpha != 1) {
        if (call->msg)
            strncpy(call->msg, "plain row-major d = a b only", call->msg_size);
        return QF_EUNSUPPORTED;
    }
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float s = 0.0f;
            for (l = 0; l < k; l++)
                s = s + a[i * k + l] * b[l * n + j];
            d[i * n + j] = s;
        }
    return QF_OK;
}

static qf_dtype_tuple dtypes[1];

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    static const char *const names[2] = {"gemm.slowinit.good", "gemm.slowinit.crashy"};
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(dtypes, 0, sizeof dtypes);
    dtypes[0].name = "f32";
    dtypes[0].in[0] = dtypes[0].in[1] = dtypes[0].in[2] = QF_FLOAT32;
    dtypes[0].out[0] = QF_FLOAT32;
    dtypes[0].arith = host->arith_claim_default(); /* float32, sequential, RNE */
    for (i = 0; i < 2; i++) {
        qf_kernel kern;
        qf_status s;
        memset(&kern, 0, sizeof kern);
        kern.abi_version = QF_KERNEL_ABI_VERSION;
        kern.struct_size = sizeof kern;
        kern.name = names[i];
        kern.op = QF_OP_GEMM;
        kern.kind = QF_KERNEL_OPTIMIZED;
        kern.description = "plugin_slowinit: init sleeps 50 ms";
        kern.backend = "cpu";
        kern.archs = "cpu";
        kern.dtypes = dtypes;
        kern.n_dtypes = 1;
        kern.run = slow_run;
        kern.init = slow_init;
        kern.user = (void *)(intptr_t)i; /* 1: crashy */
        if ((s = host->add(reg, &kern)) != QF_OK)
            return s;
    }
    return QF_OK;
}
