/* gpu_module.c: the entry point of a GPU back end's module,
 * libqualify_cuda.so or libqualify_hip.so (qualify/_gpumod.h), compiled
 * into each with QF_GPU_MODULE_NAME set to cuda or hip.
 *
 * The module carries the back end's table, its kernels and its vendor
 * libraries, and nothing of libqualify: the qualify program links
 * libqualify statically and exports none of it, so the few libqualify
 * functions the kernels call (formats, tensor sizes) are defined here,
 * hidden, as calls through the host table the loader hands over (the
 * plugin host table, qf_kernel.h).  The module links with -z defs: any
 * other libqualify symbol would be a link error, not a load failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "_gpumod.h"
#include "qf_kernel.h"
#include "qf_version.h"

#ifndef QF_GPU_MODULE_NAME
#error "QF_GPU_MODULE_NAME (cuda or hip) must be defined"
#endif
#define QF_CAT_(a, b) a##b
#define QF_CAT(a, b)  QF_CAT_(a, b)
#define QF_STR_(a)    #a
#define QF_STR(a)     QF_STR_(a)

#define EXPORT __attribute__((visibility("default")))

/* The back end (backend.cu / backend.hip). */
extern const qf_backend QF_CAT(qf_backend_, QF_CAT(QF_GPU_MODULE_NAME, _table));
const char *QF_CAT(qf_, QF_CAT(QF_GPU_MODULE_NAME, _last_error))(void);

static qf_plugin_host host;

static const qf_plugin_host *need(void)
{
    if (!host.abi_version) {
        /* a program that linked the module and skipped the loader */
        fprintf(stderr, "qualify: libqualify_%s.so: a kernel ran before qf_gpu_module_%s()\n",
                QF_STR(QF_GPU_MODULE_NAME), QF_STR(QF_GPU_MODULE_NAME));
        abort();
    }
    return &host;
}

const qf_format *qf_format_get(qf_format_id id)
{
    return need()->format_get(id);
}

size_t qf_tensor_numel(const qf_tensor *t)
{
    return need()->tensor_numel(t);
}

size_t qf_tensor_dense_bytes(const qf_tensor *t)
{
    return need()->tensor_dense_bytes(t);
}

EXPORT const _qf_gpu_module *QF_CAT(qf_gpu_module_, QF_GPU_MODULE_NAME)(const qf_plugin_host *h);

const _qf_gpu_module *QF_CAT(qf_gpu_module_, QF_GPU_MODULE_NAME)(const qf_plugin_host *h)
{
    static const _qf_gpu_module m = {
        QF_GPU_MODULE_ABI,
        (uint32_t)sizeof(_qf_gpu_module),
        QF_STR(QF_GPU_MODULE_NAME),
        QF_VERSION_STRING,
        &QF_CAT(qf_backend_, QF_CAT(QF_GPU_MODULE_NAME, _table)),
        QF_CAT(qf_, QF_CAT(QF_GPU_MODULE_NAME, _last_error)),
    };
    if (!h || h->abi_version != QF_KERNEL_ABI_VERSION || !QF_PLUGIN_HOST_HAS(h, tensor_dense_bytes) ||
        !h->format_get || !h->tensor_numel || !h->tensor_dense_bytes)
        return NULL;
    qf_plugin_host_copy(&host, h);
    return &m;
}
