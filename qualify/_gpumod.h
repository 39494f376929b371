/* _gpumod.h: the GPU back ends as modules loaded on demand (private;
 * docs/gpu.md "How the back ends are loaded").
 *
 * The CUDA and HIP back ends, their kernels and their vendor libraries
 * (cudart, cuBLAS, cuBLASLt, the HIP runtime) live in shared modules,
 * libqualify_cuda.so and libqualify_hip.so, that are dlopen'ed only when a
 * GPU back end is asked for (qf_backend_get, a GPU kernel's call, the
 * runner's device probe).  Mapping them costs about 200 MB of resident
 * memory and, in every process the runner forks, the page tables of those
 * mappings, so a CPU sweep or `qualify list` must never pay for them.  The
 * kernels' records (names, claims, archs) are static data in libqualify
 * (kernels/cuda/table.c, kernels/hip/table.c): listed without the module.
 *
 * A module exports one C function, "qf_gpu_module_<name>", taking the
 * plugin host table (qf_kernel.h: the module reaches libqualify only
 * through it, since the qualify program links libqualify statically) and
 * returning a _qf_gpu_module.
 */
#ifndef QF__GPUMOD_H
#define QF__GPUMOD_H

#include <stddef.h>
#include <stdint.h>

#include "qf_backend.h"
#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever _qf_gpu_module or what the module expects of the host
 * changes; a module built for another value is refused. */
#define QF_GPU_MODULE_ABI 1u

typedef struct _qf_gpu_module {
    uint32_t abi_version;            /* QF_GPU_MODULE_ABI */
    uint32_t struct_size;            /* sizeof(_qf_gpu_module) */
    const char *name;                /* "cuda", "hip" */
    const char *version;             /* QF_VERSION_STRING the module was built with */
    const qf_backend *backend;       /* the memory and timer table */
    const char *(*last_error)(void); /* the last failed runtime call ("" if none) */
} _qf_gpu_module;

typedef const _qf_gpu_module *(*_qf_gpu_module_fn)(const qf_plugin_host *host);

/* 1 when this libqualify was built with the back end `name` (its kernel
 * records are registered), without loading anything. */
int _qf_gpumod_built(const char *name);
/* Load the module once per process (thread-safe); NULL with the reason
 * in why (naming the .so and dlerror()) when it cannot be used.  Any name
 * is accepted: tests load stand-in modules through QF_MODULE_PATH. */
const _qf_gpu_module *_qf_gpumod_load(const char *name, char *why, size_t why_size);
/* Is the module mapped in this process?  (Loads nothing.) */
int _qf_gpumod_loaded(const char *name);
/* The function `sym` of the loaded (or now loaded) module, or NULL with
 * the reason in why. */
void *_qf_gpumod_fn(const char *name, const char *sym, char *why, size_t why_size);
/* The module's last runtime error, or why it did not load ("" if neither). */
const char *_qf_gpumod_error(const char *name);

#ifdef __cplusplus
}
#endif

#endif
