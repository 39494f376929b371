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

/* GPU kernels: their records are part of libqualify when it is built with
 * the back end (kernels/cuda/table.c, kernels/hip/table.c; QF_HAVE_CUDA /
 * QF_HAVE_HIP), while the code that runs them is in the back end's module,
 * loaded on the first call (qualify/_gpumod.h).  Registering touches no
 * device and loads nothing: without a device (or a module) the kernels are
 * listed and their cases are UNSUPPORTED with the reason
 * (qualify/runner_device.c). */
#if defined(QF_HAVE_CUDA)
qf_status qf_cuda_register_kernels(qf_registry *r);
#define QF_CUDA_ADD qf_cuda_register_kernels
#else
#define QF_CUDA_ADD NULL
#endif
#if defined(QF_HAVE_HIP)
qf_status qf_hip_register_kernels(qf_registry *r);
#define QF_HIP_ADD qf_hip_register_kernels
#else
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
