/* backend.cu: the CUDA back end behind qualify/qf_backend.h.
 *
 * Device memory (cudaMalloc), copies, memset and synchronization on the
 * legacy default stream (the kernels launch there too, so ordering is the
 * program order), and event timing.  Every CUDA call is checked; a failure
 * is printed to stderr with the call, the error name and the line, and kept
 * for qf_cuda_last_error().  The table is part of libqualify_cuda.so, which
 * hands it to libqualify when loaded (kernels/gpu_module.c,
 * qualify/_gpumod.h), so libqualify itself links no CUDA library.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_cuda.h"
#include "qf_backend.h"
#include "qf_cuda.h"

static char last_err[512];

extern "C" const char *qf_cuda_last_error(void)
{
    return last_err;
}

extern "C" qf_status qf_cu_fail(cudaError_t e, const char *what, const char *file, int line, char *msg,
                                size_t msg_size)
{
    const char *base = strrchr(file, '/');
    snprintf(last_err, sizeof last_err, "%s failed: %s (%s) at %s:%d", what, cudaGetErrorName(e),
             cudaGetErrorString(e), base ? base + 1 : file, line);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", last_err);
    /* The device itself failed (CUDA Runtime API, "Data types":
     * cudaError): the runner takes it out of a --devices rotation. */
    if (e == cudaErrorECCUncorrectable || e == cudaErrorNvlinkUncorrectable || e == cudaErrorDevicesUnavailable)
        return QF_EDEVICE;
    return e == cudaErrorMemoryAllocation ? QF_ENOMEM : QF_EIO;
}

typedef struct cu_state {
    int dev;
    cudaDeviceProp prop;
} cu_state;

/* The back end's functions have no msg argument: failures go to stderr. */
#define BE_TRY(call)                                                                                         \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            qf_status s_ = qf_cu_fail(e_, #call, __FILE__, __LINE__, NULL, 0);                               \
            fprintf(stderr, "qualify: cuda: %s\n", last_err);                                                \
            return s_;                                                                                       \
        }                                                                                                    \
    } while (0)

static qf_status cu_open(int index, void **state)
{
    int n = 0;
    cu_state *s;
    if (!state)
        return QF_EINVAL;
    *state = NULL;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaError_t e = cudaGetLastError();
        qf_cu_fail(e == cudaSuccess ? cudaErrorNoDevice : e, "cudaGetDeviceCount", __FILE__, __LINE__, NULL,
                   0);
        return QF_EUNSUPPORTED;
    }
    if (index < 0 || index >= n)
        return QF_EINVAL;
    s = (cu_state *)calloc(1, sizeof *s);
    if (!s)
        return QF_ENOMEM;
    s->dev = index;
    {
        cudaError_t e = cudaSetDevice(index);
        if (e == cudaSuccess)
            e = cudaGetDeviceProperties(&s->prop, index);
        if (e != cudaSuccess) {
            qf_cu_fail(e, "cudaSetDevice/cudaGetDeviceProperties", __FILE__, __LINE__, NULL, 0);
            fprintf(stderr, "qualify: cuda: %s\n", last_err);
            free(s);
            return QF_EIO;
        }
    }
    *state = s;
    return QF_OK;
}

static void cu_close(void *state)
{
    free(state);
}

static qf_status cu_arch(void *state, char *buf, size_t size)
{
    cu_state *s = (cu_state *)state;
    if (!s || !buf || !size)
        return QF_EINVAL;
    snprintf(buf, size, "sm_%d%d", s->prop.major, s->prop.minor);
    return QF_OK;
}

static qf_status cu_describe(void *state, char *buf, size_t size)
{
    cu_state *s = (cu_state *)state;
    int drv = 0, rt = 0;
    if (!s || !buf || !size)
        return QF_EINVAL;
    BE_TRY(cudaDriverGetVersion(&drv));
    BE_TRY(cudaRuntimeGetVersion(&rt));
    snprintf(buf, size, "cuda: %s; sm_%d%d; %d SMs; %.1f GiB; driver CUDA %d.%d; runtime %d.%d", s->prop.name,
             s->prop.major, s->prop.minor, s->prop.multiProcessorCount,
             (double)s->prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), drv / 1000, (drv % 1000) / 10,
             rt / 1000, (rt % 1000) / 10);
    return QF_OK;
}

static qf_status cu_alloc(void *state, size_t bytes, void **ptr)
{
    (void)state;
    if (!ptr)
        return QF_EINVAL;
    /* never NULL for a zero-byte tensor, as the CPU back end */
    BE_TRY(cudaMalloc(ptr, bytes ? bytes : 256));
    return QF_OK;
}

static void cu_free(void *state, void *ptr)
{
    (void)state;
    if (ptr) {
        cudaError_t e = cudaFree(ptr);
        if (e != cudaSuccess) {
            qf_cu_fail(e, "cudaFree", __FILE__, __LINE__, NULL, 0);
            fprintf(stderr, "qualify: cuda: %s\n", last_err);
        }
    }
}

static qf_status cu_copy(void *state, void *dst, const void *src, size_t bytes, qf_copy_kind kind)
{
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                           cudaMemcpyDeviceToDevice};
    (void)state;
    if ((unsigned)kind > QF_COPY_DEVICE_TO_DEVICE || ((!dst || !src) && bytes))
        return QF_EINVAL;
    if (bytes)
        BE_TRY(cudaMemcpy(dst, src, bytes, kinds[kind]));
    return QF_OK;
}

static qf_status cu_memset(void *state, void *dst, int byte, size_t bytes)
{
    (void)state;
    if (!dst && bytes)
        return QF_EINVAL;
    if (bytes) {
        BE_TRY(cudaMemset(dst, byte, bytes));
        BE_TRY(cudaDeviceSynchronize());
    }
    return QF_OK;
}

static qf_status cu_synchronize(void *state)
{
    (void)state;
    BE_TRY(cudaGetLastError());
    BE_TRY(cudaDeviceSynchronize());
    return QF_OK;
}

/* qf_timer: _opaque[0] and [1] hold the two events. */
static qf_status cu_timer_start(void *state, qf_timer *t)
{
    cudaEvent_t a, b;
    (void)state;
    if (!t)
        return QF_EINVAL;
    BE_TRY(cudaEventCreate(&a));
    BE_TRY(cudaEventCreate(&b));
    t->_opaque[0] = (uint64_t)(uintptr_t)a;
    t->_opaque[1] = (uint64_t)(uintptr_t)b;
    BE_TRY(cudaEventRecord(a, 0));
    return QF_OK;
}

static qf_status cu_timer_stop(void *state, qf_timer *t, double *seconds)
{
    cudaEvent_t a, b;
    float ms = 0;
    (void)state;
    if (!t || !seconds)
        return QF_EINVAL;
    a = (cudaEvent_t)(uintptr_t)t->_opaque[0];
    b = (cudaEvent_t)(uintptr_t)t->_opaque[1];
    BE_TRY(cudaEventRecord(b, 0));
    BE_TRY(cudaEventSynchronize(b));
    BE_TRY(cudaEventElapsedTime(&ms, a, b));
    BE_TRY(cudaEventDestroy(a));
    BE_TRY(cudaEventDestroy(b));
    *seconds = (double)ms * 1e-3;
    return QF_OK;
}

static qf_status cu_count(int *n)
{
    *n = 0;
    if (cudaGetDeviceCount(n) != cudaSuccess) {
        (void)cudaGetLastError(); /* reset the last error for later calls */
        *n = 0;
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* The UUID as nvidia-smi -L prints it: GPU-8-4-4-4-12 hex digits. */
static qf_status cu_identity(void *state, char *uuid, size_t uuid_size, char *name, size_t name_size)
{
    cu_state *s = (cu_state *)state;
    const unsigned char *b;
    if (!s || !uuid || !name)
        return QF_EINVAL;
    b = (const unsigned char *)s->prop.uuid.bytes;
    snprintf(uuid, uuid_size,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    snprintf(name, name_size, "%s", s->prop.name);
    return QF_OK;
}

extern "C" const qf_backend qf_backend_cuda_table = {
    QF_BACKEND_ABI_VERSION,
    "cuda",
    cu_open,
    cu_close,
    cu_arch,
    cu_describe,
    cu_alloc,
    cu_free,
    cu_copy,
    cu_memset,
    cu_synchronize,
    cu_timer_start,
    cu_timer_stop,
    cu_count,
    cu_identity,
};
