/* qf_backend.h: the memory and timing back ends (CPU; CUDA and HIP as modules).
 *
 * The engine never calls CUDA or HIP directly: tensors a kernel reads and
 * writes live in a back end's memory, which the engine allocates, fills,
 * reads back, synchronizes and times through one table of function
 * pointers.  A back end is selected once: qf_backend_select(NULL) takes
 * the environment variable QF_BACKEND when set (else "cpu"); QF_BACKEND_DEBUG=1
 * logs the choice to stderr.  Back ends are listed in one table in
 * qualify/backend_cpu.c (the CPU back end, always built, is the reference
 * table a GPU back end starts from and overrides).  The CUDA and HIP back
 * ends live in shared modules (libqualify_cuda.so, libqualify_hip.so)
 * loaded on first use, so that a process which never asks for a GPU never
 * maps the vendor libraries (docs/gpu.md "How the back ends are loaded").
 */
#ifndef QF_BACKEND_H
#define QF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QF_BACKEND_ABI_VERSION 2u /* 2: count and identity appended */

typedef enum qf_copy_kind {
    QF_COPY_HOST_TO_DEVICE = 0,
    QF_COPY_DEVICE_TO_HOST,
    QF_COPY_DEVICE_TO_DEVICE
} qf_copy_kind;

/* Opaque storage for one timer (two events, or two clock readings). */
typedef struct qf_timer {
    uint64_t _opaque[4];
} qf_timer;

typedef struct qf_backend {
    uint32_t abi_version; /* QF_BACKEND_ABI_VERSION */
    const char *name;     /* "cpu", "cuda", "hip" */
    /* Open device number `index` (0 for the CPU); *state is the back end's. */
    qf_status (*open)(int index, void **state);
    void (*close)(void *state);
    /* Architecture identity: "cpu", "sm_90", "gfx942" (docs/gpu.md
     * "Back ends"); describe: a longer line (vendor, model, ISA
     * features). */
    qf_status (*arch)(void *state, char *buf, size_t size);
    qf_status (*describe)(void *state, char *buf, size_t size);
    qf_status (*alloc)(void *state, size_t bytes, void **ptr);
    void (*free)(void *state, void *ptr);
    qf_status (*copy)(void *state, void *dst, const void *src, size_t bytes, qf_copy_kind kind);
    qf_status (*memset)(void *state, void *dst, int byte, size_t bytes);
    /* Wait until all work issued so far is done. */
    qf_status (*synchronize)(void *state);
    /* Time the work issued between start and stop (stop synchronizes). */
    qf_status (*timer_start)(void *state, qf_timer *t);
    qf_status (*timer_stop)(void *state, qf_timer *t, double *seconds);
    /* ABI 2.  How many devices there are (NULL: one), and one opened
     * device's identity: its UUID as the vendor's tools print it
     * ("GPU-xxxxxxxx-...") and its marketing name; NULL: none known.  What
     * `qualify run --devices` records per pair (docs/runner.md "Devices").
     * A function that finds the device gone (lost, ECC error, reset)
     * returns QF_EDEVICE. */
    qf_status (*count)(int *n);
    qf_status (*identity)(void *state, char *uuid, size_t uuid_size, char *name, size_t name_size);
} qf_backend;

/* An opened device of a back end. */
typedef struct qf_device qf_device;
struct qf_device {
    const qf_backend *backend;
    void *state;
    int index;
};

/* Register a back end that is neither the CPU nor a GPU module: a
 * plugin's stand-in device (qf_plugin_host.backend_add; tests/runner/
 * plugin_vdev.c).  QF_EINVAL for a taken or reserved name ("cpu", "cuda",
 * "hip") or a table of another ABI; QF_ENOMEM when the list (8) is full. */
qf_status qf_backend_add(const qf_backend *be);

/* The CPU back end (always available). */
const qf_backend *qf_backend_cpu(void);
/* The back end with this name, or NULL (not built, unknown, or its module
 * did not load: qf_backend_error says why).  "cuda" and "hip" load their
 * module here, once per process: ask only when a GPU is wanted. */
const qf_backend *qf_backend_get(const char *name);
/* Why the GPU back end `name` is unusable (the module's path and
 * dlerror()), or its runtime's last failed call; "" when neither.  Loads
 * nothing. */
const char *qf_backend_error(const char *name);
/* Writes "cpu, ..." (the built back ends) into buf; loads nothing. */
void qf_backend_list_names(char *buf, size_t size);
/* name NULL: QF_BACKEND from the environment, else "cpu".  QF_EUNSUPPORTED
 * when that back end is not built. */
qf_status qf_backend_select(const char *name, const qf_backend **out);

/* Convenience wrappers over the table (dev must be open). */
qf_status qf_device_open(const qf_backend *be, int index, qf_device *dev);
void qf_device_close(qf_device *dev);
qf_status qf_device_alloc(qf_device *dev, size_t bytes, void **ptr);
void qf_device_free(qf_device *dev, void *ptr);
qf_status qf_device_copy(qf_device *dev, void *dst, const void *src, size_t bytes, qf_copy_kind kind);
qf_status qf_device_synchronize(qf_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* QF_BACKEND_H */
