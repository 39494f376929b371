/* backend.hip: the HIP back end behind qualify/qf_backend.h.
 *
 * Device memory (hipMalloc), copies, memset and synchronization on the
 * legacy default stream (the kernels launch there too, so ordering is the
 * program order), and event timing.  Every HIP call is checked; a failure
 * is printed to stderr with the call, the error name and the line, and kept
 * for qf_hip_last_error().  The table is part of libqualify_hip.so, which
 * hands it to libqualify when loaded (kernels/gpu_module.c,
 * qualify/_gpumod.h), so libqualify itself links no HIP library.
 */
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_hip.h"
#include "qf_backend.h"
#include "qf_hip.h"

static char last_err[512];

extern "C" const char *qf_hip_last_error(void)
{
    return last_err;
}

extern "C" qf_status qf_hip_fail(hipError_t e, const char *what, const char *file, int line, char *msg,
                                 size_t msg_size)
{
    const char *base = strrchr(file, '/');
    snprintf(last_err, sizeof last_err, "%s failed: %s (%s) at %s:%d", what, hipGetErrorName(e),
             hipGetErrorString(e), base ? base + 1 : file, line);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", last_err);
    /* The device itself failed (HIP Runtime API, hipError_t): the runner
     * takes it out of a --devices rotation. */
    if (e == hipErrorECCNotCorrectable)
        return QF_EDEVICE;
    return e == hipErrorOutOfMemory ? QF_ENOMEM : QF_EIO;
}

typedef struct hip_state {
    int dev;
    hipDeviceProp_t prop;
} hip_state;

/* The back end's functions have no msg argument: failures go to stderr. */
#define BE_TRY(call)                                                                                         \
    do {                                                                                                     \
        hipError_t e_ = (call);                                                                              \
        if (e_ != hipSuccess) {                                                                              \
            qf_status s_ = qf_hip_fail(e_, #call, __FILE__, __LINE__, NULL, 0);                              \
            fprintf(stderr, "qualify: hip: %s\n", last_err);                                                 \
            return s_;                                                                                       \
        }                                                                                                    \
    } while (0)

static qf_status hb_open(int index, void **state)
{
    int n = 0;
    hip_state *s;
    if (!state)
        return QF_EINVAL;
    *state = NULL;
    if (hipGetDeviceCount(&n) != hipSuccess || n == 0) {
        hipError_t e = hipGetLastError();
        qf_hip_fail(e == hipSuccess ? hipErrorNoDevice : e, "hipGetDeviceCount", __FILE__, __LINE__, NULL, 0);
        return QF_EUNSUPPORTED;
    }
    if (index < 0 || index >= n)
        return QF_EINVAL;
    s = (hip_state *)calloc(1, sizeof *s);
    if (!s)
        return QF_ENOMEM;
    s->dev = index;
    {
        hipError_t e = hipSetDevice(index);
        if (e == hipSuccess)
            e = hipGetDeviceProperties(&s->prop, index);
        if (e != hipSuccess) {
            qf_hip_fail(e, "hipSetDevice/hipGetDeviceProperties", __FILE__, __LINE__, NULL, 0);
            fprintf(stderr, "qualify: hip: %s\n", last_err);
            free(s);
            return QF_EIO;
        }
    }
    *state = s;
    return QF_OK;
}

static void hb_close(void *state)
{
    free(state);
}

static qf_status hb_arch(void *state, char *buf, size_t size)
{
    hip_state *s = (hip_state *)state;
    if (!s || !buf || !size)
        return QF_EINVAL;
    /* gcnArchName without its feature suffixes ("gfx90a:sramecc+:xnack-") */
    snprintf(buf, size, "%.*s", (int)strcspn(s->prop.gcnArchName, ":"), s->prop.gcnArchName);
    return QF_OK;
}

static qf_status hb_describe(void *state, char *buf, size_t size)
{
    hip_state *s = (hip_state *)state;
    int drv = 0, rt = 0;
    if (!s || !buf || !size)
        return QF_EINVAL;
    BE_TRY(hipDriverGetVersion(&drv));
    BE_TRY(hipRuntimeGetVersion(&rt));
    snprintf(buf, size, "hip: %s; %s; %d CUs; %.1f GiB; driver %d; runtime %d", s->prop.name,
             s->prop.gcnArchName, s->prop.multiProcessorCount,
             (double)s->prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), drv, rt);
    return QF_OK;
}

static qf_status hb_alloc(void *state, size_t bytes, void **ptr)
{
    (void)state;
    if (!ptr)
        return QF_EINVAL;
    /* never NULL for a zero-byte tensor, as the CPU back end */
    BE_TRY(hipMalloc(ptr, bytes ? bytes : 256));
    return QF_OK;
}

static void hb_free(void *state, void *ptr)
{
    (void)state;
    if (ptr) {
        hipError_t e = hipFree(ptr);
        if (e != hipSuccess) {
            qf_hip_fail(e, "hipFree", __FILE__, __LINE__, NULL, 0);
            fprintf(stderr, "qualify: hip: %s\n", last_err);
        }
    }
}

static qf_status hb_copy(void *state, void *dst, const void *src, size_t bytes, qf_copy_kind kind)
{
    static const hipMemcpyKind kinds[] = {hipMemcpyHostToDevice, hipMemcpyDeviceToHost,
                                          hipMemcpyDeviceToDevice};
    (void)state;
    if ((unsigned)kind > QF_COPY_DEVICE_TO_DEVICE || ((!dst || !src) && bytes))
        return QF_EINVAL;
    if (bytes)
        BE_TRY(hipMemcpy(dst, src, bytes, kinds[kind]));
    return QF_OK;
}

static qf_status hb_memset(void *state, void *dst, int byte, size_t bytes)
{
    (void)state;
    if (!dst && bytes)
        return QF_EINVAL;
    if (bytes) {
        BE_TRY(hipMemset(dst, byte, bytes));
        BE_TRY(hipDeviceSynchronize());
    }
    return QF_OK;
}

static qf_status hb_synchronize(void *state)
{
    (void)state;
    BE_TRY(hipGetLastError());
    BE_TRY(hipDeviceSynchronize());
    return QF_OK;
}

/* qf_timer: _opaque[0] and [1] hold the two events. */
static qf_status hb_timer_start(void *state, qf_timer *t)
{
    hipEvent_t a, b;
    (void)state;
    if (!t)
        return QF_EINVAL;
    BE_TRY(hipEventCreate(&a));
    BE_TRY(hipEventCreate(&b));
    t->_opaque[0] = (uint64_t)(uintptr_t)a;
    t->_opaque[1] = (uint64_t)(uintptr_t)b;
    BE_TRY(hipEventRecord(a, 0));
    return QF_OK;
}

static qf_status hb_timer_stop(void *state, qf_timer *t, double *seconds)
{
    hipEvent_t a, b;
    float ms = 0;
    (void)state;
    if (!t || !seconds)
        return QF_EINVAL;
    a = (hipEvent_t)(uintptr_t)t->_opaque[0];
    b = (hipEvent_t)(uintptr_t)t->_opaque[1];
    BE_TRY(hipEventRecord(b, 0));
    BE_TRY(hipEventSynchronize(b));
    BE_TRY(hipEventElapsedTime(&ms, a, b));
    BE_TRY(hipEventDestroy(a));
    BE_TRY(hipEventDestroy(b));
    *seconds = (double)ms * 1e-3;
    return QF_OK;
}

/* Host code only: the device pass of hipcc must not see a table of host
 * function addresses. */
#if !defined(__HIP_DEVICE_COMPILE__)
static qf_status hb_count(int *n)
{
    *n = 0;
    if (hipGetDeviceCount(n) != hipSuccess) {
        (void)hipGetLastError(); /* reset the last error for later calls */
        *n = 0;
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

/* ROCm's UUID bytes are ASCII (rocm-smi prints "GPU-" and them); hex
 * where they are not.  hipDeviceProp_t has uuid from ROCm 6 on. */
static qf_status hb_identity(void *state, char *uuid, size_t uuid_size, char *name, size_t name_size)
{
    hip_state *s = (hip_state *)state;
    if (!s || !uuid || !name)
        return QF_EINVAL;
    uuid[0] = '\0';
#if defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR >= 6
    {
        const unsigned char *b = (const unsigned char *)s->prop.uuid.bytes;
        int i, text = 1;
        size_t len;
        for (i = 0; i < 16; i++)
            text &= b[i] >= 0x21 && b[i] < 0x7f;
        len = (size_t)snprintf(uuid, uuid_size, "GPU-");
        for (i = 0; i < 16 && len + 3 < uuid_size; i++)
            len += (size_t)snprintf(uuid + len, uuid_size - len, text ? "%c" : "%02x", b[i]);
    }
#endif
    snprintf(name, name_size, "%s", s->prop.name);
    return QF_OK;
}

extern "C" const qf_backend qf_backend_hip_table = {
    QF_BACKEND_ABI_VERSION,
    "hip",
    hb_open,
    hb_close,
    hb_arch,
    hb_describe,
    hb_alloc,
    hb_free,
    hb_copy,
    hb_memset,
    hb_synchronize,
    hb_timer_start,
    hb_timer_stop,
    hb_count,
    hb_identity,
};
#endif
