/* _gpu_fwd.h: the entry points a GPU kernel record (kernels/cuda/table.c,
 * kernels/hip/table.c) gives the runner, forwarding to the function of the
 * same name in the back end's module (private).
 *
 * The records are static data in libqualify, so listing the kernels loads
 * nothing; a call (in the runner's kernel child, once the device probe has
 * found a device) loads the module on its first use (qualify/_gpumod.h)
 * and looks the function up.  A module that cannot be loaded makes the
 * call fail with QF_EUNSUPPORTED and the reason in call->msg.
 */
#ifndef QF__GPU_FWD_H
#define QF__GPU_FWD_H

#include <stdio.h>

#include "_gpumod.h"
#include "qf_kernel.h"

/* fwd_FN: a qf_kernel_run_fn calling FN of module BACKEND. */
#define QF_GPU_FWD_RUN(backend, fn)                                                                          \
    static qf_status fwd_##fn(void *ctx, const qf_kernel_call *call)                                         \
    {                                                                                                        \
        qf_kernel_run_fn f;                                                                                  \
        *(void **)&f = _qf_gpumod_fn(backend, #fn, call->msg, call->msg_size);                               \
        return f ? f(ctx, call) : QF_EUNSUPPORTED;                                                           \
    }

/* fwd_FN: a qf_kernel_init_fn; its failure to load is said on stderr (an
 * init has no message buffer). */
#define QF_GPU_FWD_INIT(backend, fn)                                                                         \
    static qf_status fwd_##fn(const qf_kernel *k, void **ctx)                                                \
    {                                                                                                        \
        char why_[1024];                                                                                     \
        qf_kernel_init_fn f;                                                                                 \
        *(void **)&f = _qf_gpumod_fn(backend, #fn, why_, sizeof why_);                                       \
        if (!f) {                                                                                            \
            fprintf(stderr, "qualify: %s: %s\n", k->name, why_);                                             \
            return QF_EUNSUPPORTED;                                                                          \
        }                                                                                                    \
        return f(k, ctx);                                                                                    \
    }

/* fwd_FN: a qf_kernel_fini_fn (only called after its init succeeded). */
#define QF_GPU_FWD_FINI(backend, fn)                                                                         \
    static void fwd_##fn(void *ctx)                                                                          \
    {                                                                                                        \
        qf_kernel_fini_fn f;                                                                                 \
        *(void **)&f = _qf_gpumod_fn(backend, #fn, NULL, 0);                                                 \
        if (f)                                                                                               \
            f(ctx);                                                                                          \
    }

#endif
