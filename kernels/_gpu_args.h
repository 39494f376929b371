/* _gpu_args.h: host-side argument checks shared by the CUDA and HIP
 * kernels (the .cu files of kernels/cuda, the .hip files of kernels/hip; private).
 *
 * The runner stages dense row-major tensors of codes; these checks say so
 * to a caller that passes anything else, in call->msg.
 */
#ifndef QF__GPU_ARGS_H
#define QF__GPU_ARGS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu/_cpu.h"
#include "qf_kernel.h"

/* Failure reason into call->msg: the CPU kernels' helper. */
#define _qf_gpu_fail _qf_cpu_fail

/* The kernel record's own supports check (kernels/_gpu_supports.h, in
 * libqualify with the record), repeated by a kernel before it runs. */
static inline qf_status _qf_gpu_supported(const qf_kernel_call *call)
{
    const qf_kernel *k = call->kernel;
    if (!k || !k->supports)
        return QF_OK;
    return k->supports(k, call->op, call->dtype, call->msg, call->msg_size);
}

/* A dense row-major [rows][cols] tensor (or [1][rows][cols]) of format f. */
static inline qf_status _qf_gpu_dense2(const qf_kernel_call *call, const qf_tensor *t, const char *slot,
                                       qf_format_id f, int64_t rows, int64_t cols)
{
    if (!t->data)
        return _qf_gpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: format %s expected", slot,
                            qf_format_get(f)->name);
    if (t->ndim < 2 || t->ndim > 3 || (t->ndim == 3 && t->shape[0] != 1) || t->shape[t->ndim - 2] != rows ||
        t->shape[t->ndim - 1] != cols)
        return _qf_gpu_fail(call, QF_EINVAL, "tensor %s: [%lld][%lld] expected", slot, (long long)rows,
                            (long long)cols);
    if (t->stride[t->ndim - 1] != 1 || t->stride[t->ndim - 2] != cols)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: dense row-major layout expected", slot);
    return QF_OK;
}

/* A dense contiguous tensor of any shape with n elements. */
static inline qf_status _qf_gpu_dense_n(const qf_kernel_call *call, const qf_tensor *t, const char *slot,
                                        qf_format_id f, size_t n)
{
    int64_t want = 1;
    int d;
    if (!t->data)
        return _qf_gpu_fail(call, QF_EINVAL, "tensor %s is missing", slot);
    if (t->format != f || t->index_bits || t->packed)
        return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: format %s expected", slot,
                            qf_format_get(f)->name);
    if (qf_tensor_numel(t) != n)
        return _qf_gpu_fail(call, QF_EINVAL, "tensor %s: %zu elements expected", slot, n);
    for (d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] > 1 && t->stride[d] != want)
            return _qf_gpu_fail(call, QF_EUNSUPPORTED, "tensor %s: dense row-major layout expected", slot);
        want *= t->shape[d];
    }
    return QF_OK;
}

#endif
