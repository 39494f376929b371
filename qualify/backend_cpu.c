/* backend_cpu.c: the CPU back end and the list of back ends.
 *
 * Host memory is device memory here, so copies are memcpy and
 * synchronize has nothing to wait for.  The table is also the reference a
 * GPU back end starts from (docs/style.md#back-ends: a back end is a table of
 * function pointers, filled from the reference table and then overridden).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_gpumod.h"
#include "qf_backend.h"

static qf_status cpu_open(int index, void **state)
{
    if (!state)
        return QF_EINVAL;
    *state = NULL;
    /* One CPU device: the process's whole machine. */
    return index == 0 ? QF_OK : QF_EINVAL;
}

static void cpu_close(void *state)
{
    (void)state;
}

static qf_status cpu_arch(void *state, char *buf, size_t size)
{
    (void)state;
    if (!buf || size == 0)
        return QF_EINVAL;
    snprintf(buf, size, "cpu");
    return QF_OK;
}

/* "model name" from /proc/cpuinfo where there is one (Linux). */
static void cpu_model(char *buf, size_t size)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                size_t n;
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                n = strcspn(p, "\n");
                snprintf(buf, size, "%.*s", (int)n, p);
            }
            break;
        }
    }
    fclose(f);
}

static qf_status cpu_describe(void *state, char *buf, size_t size)
{
    char model[256];
    char isa[128] = "";
    (void)state;
    if (!buf || size == 0)
        return QF_EINVAL;
    cpu_model(model, sizeof model);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse2"))
        strcat(isa, " sse2");
    if (__builtin_cpu_supports("avx2"))
        strcat(isa, " avx2");
    if (__builtin_cpu_supports("fma"))
        strcat(isa, " fma");
    if (__builtin_cpu_supports("avx512f"))
        strcat(isa, " avx512f");
#elif defined(__aarch64__)
    strcat(isa, " neon");
#endif
    snprintf(buf, size, "cpu: %s;%s", model, isa[0] ? isa : " (no ISA features detected)");
    return QF_OK;
}

static qf_status cpu_alloc(void *state, size_t bytes, void **ptr)
{
    (void)state;
    if (!ptr)
        return QF_EINVAL;
    /* 64-byte alignment (a cache line; what vector kernels may claim) and
     * never a NULL for a zero-byte tensor, so "absent" stays NULL. */
    {
        size_t n = (bytes + 63) / 64 * 64;
        void *p;
        if (n < bytes)
            return QF_ENOMEM;
        if (n == 0)
            n = 64;
        p = aligned_alloc(64, n);
        if (!p)
            return QF_ENOMEM;
        *ptr = p;
    }
    return QF_OK;
}

static void cpu_free(void *state, void *ptr)
{
    (void)state;
    free(ptr);
}

static qf_status cpu_copy(void *state, void *dst, const void *src, size_t bytes, qf_copy_kind kind)
{
    (void)state;
    if ((unsigned)kind > QF_COPY_DEVICE_TO_DEVICE || ((!dst || !src) && bytes))
        return QF_EINVAL;
    if (bytes)
        memmove(dst, src, bytes);
    return QF_OK;
}

static qf_status cpu_memset(void *state, void *dst, int byte, size_t bytes)
{
    (void)state;
    if (!dst && bytes)
        return QF_EINVAL;
    if (bytes)
        memset(dst, byte, bytes);
    return QF_OK;
}

static qf_status cpu_synchronize(void *state)
{
    (void)state;
    return QF_OK;
}

static qf_status cpu_timer_start(void *state, qf_timer *t)
{
    struct timespec ts;
    (void)state;
    if (!t || clock_gettime(CLOCK_MONOTONIC, &ts))
        return QF_EINVAL;
    t->_opaque[0] = (uint64_t)ts.tv_sec;
    t->_opaque[1] = (uint64_t)ts.tv_nsec;
    return QF_OK;
}

static qf_status cpu_timer_stop(void *state, qf_timer *t, double *seconds)
{
    struct timespec ts;
    (void)state;
    if (!t || !seconds || clock_gettime(CLOCK_MONOTONIC, &ts))
        return QF_EINVAL;
    *seconds =
        ((double)ts.tv_sec - (double)t->_opaque[0]) + ((double)ts.tv_nsec - (double)t->_opaque[1]) * 1e-9;
    return QF_OK;
}

/* clang-format off */
static const qf_backend cpu_backend = {
    QF_BACKEND_ABI_VERSION, "cpu",
    cpu_open,     cpu_close,
    cpu_arch,     cpu_describe,
    cpu_alloc,    cpu_free,
    cpu_copy,     cpu_memset,
    cpu_synchronize,
    cpu_timer_start, cpu_timer_stop,
    NULL,         NULL, /* one device, no UUID */
};
/* clang-format on */

/* The GPU back ends live in modules loaded on first use (qualify/gpumod.c,
 * docs/gpu.md "How the back ends are loaded"): libqualify depends on no
 * CUDA or HIP library, and a process that never asks for a GPU back end
 * never maps one.  Their names are known without loading them. */
static const char *const gpu_backends[] = {"cuda", "hip"};

#define N_GPU (sizeof gpu_backends / sizeof gpu_backends[0])

/* Back ends a plugin added (qf_backend_add): looked up like the CPU's,
 * never loaded from a module.  Written while plugins load, before any
 * sweep forks, so no lock. */
#define MAX_ADDED 8
static const qf_backend *added[MAX_ADDED];
static size_t nadded;

static const qf_backend *added_get(const char *name)
{
    size_t i;
    for (i = 0; i < nadded; i++)
        if (!strcmp(added[i]->name, name))
            return added[i];
    return NULL;
}

qf_status qf_backend_add(const qf_backend *be)
{
    size_t i;
    if (!be || be->abi_version != QF_BACKEND_ABI_VERSION || !be->name || !*be->name ||
        !strcmp(be->name, cpu_backend.name))
        return QF_EINVAL;
    for (i = 0; i < N_GPU; i++)
        if (!strcmp(be->name, gpu_backends[i]))
            return QF_EINVAL;
    if (added_get(be->name))
        return added_get(be->name) == be ? QF_OK : QF_EINVAL;
    if (nadded == MAX_ADDED)
        return QF_ENOMEM;
    added[nadded++] = be;
    return QF_OK;
}

const qf_backend *qf_backend_cpu(void)
{
    return &cpu_backend;
}

const qf_backend *qf_backend_get(const char *name)
{
    const _qf_gpu_module *m;
    if (!name)
        return NULL;
    if (!strcmp(name, cpu_backend.name))
        return &cpu_backend;
    if (added_get(name))
        return added_get(name);
    if (!_qf_gpumod_built(name))
        return NULL;
    m = _qf_gpumod_load(name, NULL, 0);
    return m ? m->backend : NULL;
}

const char *qf_backend_error(const char *name)
{
    return _qf_gpumod_error(name);
}

void qf_backend_list_names(char *buf, size_t size)
{
    size_t i, len;
    if (!buf || size == 0)
        return;
    snprintf(buf, size, "%s", cpu_backend.name);
    len = strlen(buf);
    for (i = 0; i < N_GPU && len < size; i++) {
        int w;
        if (!_qf_gpumod_built(gpu_backends[i]))
            continue;
        w = snprintf(buf + len, size - len, ", %s", gpu_backends[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

qf_status qf_backend_select(const char *name, const qf_backend **out)
{
    const char *from = "argument";
    const char *dbg = getenv("QF_BACKEND_DEBUG");
    const qf_backend *be;
    if (!out)
        return QF_EINVAL;
    *out = NULL;
    if (!name) {
        name = getenv("QF_BACKEND");
        from = "QF_BACKEND";
        if (!name || !*name) {
            name = "cpu";
            from = "default";
        }
    }
    be = qf_backend_get(name);
    if (dbg && !strcmp(dbg, "1"))
        fprintf(stderr, "qualify: back end '%s' (%s)%s%s\n", name, from, be ? "" : ": ",
                be                       ? ""
                : _qf_gpumod_built(name) ? _qf_gpumod_error(name)
                                         : "not built");
    if (!be)
        return QF_EUNSUPPORTED;
    *out = be;
    return QF_OK;
}

qf_status qf_device_open(const qf_backend *be, int index, qf_device *dev)
{
    qf_status s;
    if (!be || !dev)
        return QF_EINVAL;
    if (be->abi_version != QF_BACKEND_ABI_VERSION)
        return QF_EUNSUPPORTED;
    dev->backend = be;
    dev->index = index;
    dev->state = NULL;
    s = be->open(index, &dev->state);
    if (s != QF_OK)
        dev->backend = NULL;
    return s;
}

void qf_device_close(qf_device *dev)
{
    if (!dev || !dev->backend)
        return;
    dev->backend->close(dev->state);
    dev->backend = NULL;
    dev->state = NULL;
}

qf_status qf_device_alloc(qf_device *dev, size_t bytes, void **ptr)
{
    if (!dev || !dev->backend)
        return QF_EINVAL;
    return dev->backend->alloc(dev->state, bytes, ptr);
}

void qf_device_free(qf_device *dev, void *ptr)
{
    if (dev && dev->backend && ptr)
        dev->backend->free(dev->state, ptr);
}

qf_status qf_device_copy(qf_device *dev, void *dst, const void *src, size_t bytes, qf_copy_kind kind)
{
    if (!dev || !dev->backend)
        return QF_EINVAL;
    return dev->backend->copy(dev->state, dst, src, bytes, kind);
}

qf_status qf_device_synchronize(qf_device *dev)
{
    if (!dev || !dev->backend)
        return QF_EINVAL;
    return dev->backend->synchronize(dev->state);
}
