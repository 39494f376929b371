/* families.c: the kernel families and back ends that register built-in
 * kernels (qualify/_families.h), in registration order.
 *
 * This is the only file that names them, so the registry (qualify/
 * registry.c) includes no family's header and a family is added here
 * alone.  The order is the order of `qualify list kernels` and of every
 * sweep, so an entry is only ever appended.
 */
#include <stddef.h>

#include "_families.h"
#include "bad/qf_bad.h"
#include "qf_kernel.h"
#include "qf_model.h"

/* GPU kernels register from their back ends' archives (kernels/cuda/
 * table.c, kernels/hip/table.c) when those are linked in (QF_HAVE_CUDA /
 * QF_HAVE_HIP builds link them whole); weak references keep libqualify
 * free of CUDA and HIP, as qualify/backend_cpu.c does for the back-end
 * tables.  An unlinked one is a null pointer.  Registering touches no
 * device: without one the kernels are listed and their cases are
 * UNSUPPORTED (qualify/runner_device.c). */
#if defined(__GNUC__)
extern qf_status qf_cuda_register_kernels(qf_registry *r) __attribute__((weak));
extern qf_status qf_hip_register_kernels(qf_registry *r) __attribute__((weak));
#define QF_CUDA_ADD qf_cuda_register_kernels
#define QF_HIP_ADD qf_hip_register_kernels
#else
#define QF_CUDA_ADD NULL
#define QF_HIP_ADD NULL
#endif

static const _qf_family families[] = {
    /* kernels/cpu: the reference and candidate CPU kernels (qf_kernel.h). */
    { "cpu", qf_kernels_cpu, NULL },
    /* kernels/models: CPU models of matrix-unit arithmetic (qf_model.h). */
    { "models", qf_kernels_models, NULL },
    /* kernels/bad: known-bad kernels that prove detection (qf_bad.h). */
    { "bad", qf_kernels_bad, NULL },
    { "cuda", NULL, QF_CUDA_ADD },
    { "hip", NULL, QF_HIP_ADD },
};

const _qf_family *_qf_families_get(size_t *n)
{
    if (n)
        *n = sizeof families / sizeof families[0];
    return families;
}
