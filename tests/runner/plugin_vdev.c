/* plugin_vdev.c: a stand-in GPU back end, "vdev", with several virtual
 * devices in host memory, and two float32 GEMM kernels on it, so that
 * `qualify run --devices` is tested on a machine without a GPU through
 * the same device path as CUDA and HIP (tests/runner/t-devices.c,
 * docs/runner.md "Devices").  The back end is registered by the plugin
 * (qf_plugin_host.backend_add), never built into qualify's kernel list.
 *
 * Environment (read by every process that loads the plugin: the probe,
 * each kernel server, each kernel child):
 *   QF_VDEV_COUNT       devices (default 3, at most 16);
 *   QF_VDEV_FAIL        the index of the device that fails (default none);
 *   QF_VDEV_FAIL_MODE   crash: the process dies of SIGBUS (as a driver
 *                       does on a fallen-off device); lost: every call
 *                       returns QF_EDEVICE from then on; hang: the
 *                       synchronize never returns;
 *   QF_VDEV_FAIL_AFTER  kernel runs on that device in this process before
 *                       it fails (default 0: the first one);
 *   QF_VDEV_DELAY_MS    milliseconds every kernel run takes on any device
 *                       (default 0), as a real kernel's work would;
 *   QF_VDEV_LIAR        set: on case seed 3, on every device, the kernel
 *                       returns an error whose message says "device lost"
 *                       (a kernel's words, not the device's status).
 * Each device has the UUID VDEV-00000000-0000-0000-0000-0000000000II and
 * the name "qualify virtual device I".  Kernels: gemm.vdev.naive and
 * gemm.vdev.second (correct), gemm.vdev.crashy (correct, but SIGSEGV on
 * case seed 2 on every device: a kernel's own fault, not a device's). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qf_backend.h"
#include "qf_kernel.h"

typedef struct vdev {
    int index;
    int runs; /* kernel runs synchronized in this process */
    int lost;
} vdev;

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static qf_status vd_count(int *n)
{
    *n = env_int("QF_VDEV_COUNT", 3);
    if (*n > 16)
        *n = 16;
    return QF_OK;
}

static qf_status vd_open(int index, void **state)
{
    int n;
    vdev *d;
    vd_count(&n);
    if (index < 0 || index >= n)
        return QF_EINVAL;
    if (!(d = calloc(1, sizeof *d)))
        return QF_ENOMEM;
    d->index = index;
    *state = d;
    return QF_OK;
}

static void vd_close(void *state)
{
    free(state);
}

static qf_status vd_arch(void *state, char *buf, size_t size)
{
    (void)state;
    snprintf(buf, size, "vdev");
    return QF_OK;
}

static qf_status vd_describe(void *state, char *buf, size_t size)
{
    snprintf(buf, size, "vdev: qualify virtual device %d; vdev; host memory; driver none; runtime none",
             ((vdev *)state)->index);
    return QF_OK;
}

static qf_status vd_identity(void *state, char *uuid, size_t uuid_size, char *name, size_t name_size)
{
    int i = ((vdev *)state)->index;
    snprintf(uuid, uuid_size, "VDEV-00000000-0000-0000-0000-0000000000%02d", i);
    snprintf(name, name_size, "qualify virtual device %d", i);
    return QF_OK;
}

static qf_status vd_alloc(void *state, size_t bytes, void **ptr)
{
    if (((vdev *)state)->lost)
        return QF_EDEVICE;
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? QF_OK : QF_ENOMEM;
}

static void vd_free(void *state, void *ptr)
{
    (void)state;
    free(ptr);
}

static qf_status vd_copy(void *state, void *dst, const void *src, size_t bytes, qf_copy_kind kind)
{
    (void)kind;
    if (((vdev *)state)->lost)
        return QF_EDEVICE;
    memmove(dst, src, bytes);
    return QF_OK;
}

static qf_status vd_memset(void *state, void *dst, int byte, size_t bytes)
{
    if (((vdev *)state)->lost)
        return QF_EDEVICE;
    memset(dst, byte, bytes);
    return QF_OK;
}

/* Where the failing device fails: after its kernel, as a real device's
 * fault shows at the next synchronization. */
static qf_status vd_synchronize(void *state)
{
    vdev *d = state;
    const char *mode = getenv("QF_VDEV_FAIL_MODE");
    long ms = env_int("QF_VDEV_DELAY_MS", 0);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    if (d->lost)
        return QF_EDEVICE;
    while (ms > 0 && nanosleep(&ts, &ts))
        ;
    if (d->index != env_int("QF_VDEV_FAIL", -1) || d->runs++ < env_int("QF_VDEV_FAIL_AFTER", 0))
        return QF_OK;
    if (mode && !strcmp(mode, "crash"))
        raise(SIGBUS);
    if (mode && !strcmp(mode, "hang"))
        for (;;)
            pause();
    d->lost = 1;
    return QF_EDEVICE;
}

static qf_status vd_timer_start(void *state, qf_timer *t)
{
    struct timespec ts;
    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t->_opaque[0] = (uint64_t)ts.tv_sec;
    t->_opaque[1] = (uint64_t)ts.tv_nsec;
    return QF_OK;
}

static qf_status vd_timer_stop(void *state, qf_timer *t, double *seconds)
{
    struct timespec ts;
    qf_status s = vd_synchronize(state);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *seconds = ((double)ts.tv_sec - (double)t->_opaque[0]) + ((double)ts.tv_nsec - (double)t->_opaque[1]) * 1e-9;
    return s;
}

/* clang-format off */
static const qf_backend vdev_backend = {
    QF_BACKEND_ABI_VERSION, "vdev",
    vd_open,        vd_close,
    vd_arch,        vd_describe,
    vd_alloc,       vd_free,
    vd_copy,        vd_memset,
    vd_synchronize,
    vd_timer_start, vd_timer_stop,
    vd_count,       vd_identity,
};
/* clang-format on */

/* d = a b, row-major, float32, k ascending: both kernels round alike, so
 * their verdicts and errors are those of any device. */
static qf_status vd_gemm(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const float *a = call->in[0].data, *b = call->in[1].data;
    float *d = call->out[0].data;
    size_t i, j, l;
    if (ctx && call->seed == 2)
        raise(SIGSEGV);
    if (getenv("QF_VDEV_LIAR") && call->seed == 3) {
        if (call->msg)
            snprintf(call->msg, call->msg_size, "device lost: (the kernel's own message)");
        return QF_EIO;
    }
    if (g->trans_a || g->trans_b || g->beta != 0 || g->batch > 1 || g->groups || g->alpha != 1) {
        if (call->msg)
            snprintf(call->msg, call->msg_size, "plain row-major d = a b only");
        return QF_EUNSUPPORTED;
    }
    for (i = 0; i < g->m; i++)
        for (j = 0; j < g->n; j++) {
            float s = 0.0f;
            for (l = 0; l < g->k; l++)
                s = s + a[i * g->k + l] * b[l * g->n + j];
            d[i * g->n + j] = s;
        }
    return QF_OK;
}

static qf_dtype_tuple dtypes[1];

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    static const char *const names[3] = {"gemm.vdev.naive", "gemm.vdev.second", "gemm.vdev.crashy"};
    qf_status s;
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || !QF_PLUGIN_HOST_HAS(host, backend_add))
        return QF_EUNSUPPORTED;
    if ((s = host->backend_add(&vdev_backend)) != QF_OK)
        return s;
    memset(dtypes, 0, sizeof dtypes);
    dtypes[0].name = "f32";
    dtypes[0].in[0] = dtypes[0].in[1] = dtypes[0].in[2] = QF_FLOAT32;
    dtypes[0].out[0] = QF_FLOAT32;
    dtypes[0].arith = host->arith_claim_default(); /* float32, sequential, RNE */
    for (i = 0; i < 3; i++) {
        qf_kernel k;
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = sizeof k;
        k.name = names[i];
        k.op = QF_OP_GEMM;
        k.kind = QF_KERNEL_OPTIMIZED;
        k.description = "plugin_vdev: float32 GEMM on a virtual device";
        k.backend = "vdev";
        k.archs = "vdev";
        k.dtypes = dtypes;
        k.n_dtypes = 1;
        k.run = vd_gemm;
        k.user = (void *)(intptr_t)(i == 2); /* crashy */
        if ((s = host->add(reg, &k)) != QF_OK)
            return s;
    }
    return QF_OK;
}
