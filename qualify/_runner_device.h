/* _runner_device.h: how the runner drives kernels whose tensors live on a
 * GPU back end (private; qualify/runner_device.c).
 *
 * Parent side (never touches a driver, so the forked kernel children can):
 *   _qf_rdev_prepare probes each GPU back end a sweep needs once, in a
 *   child process, before the workers fork; _qf_rdev_probe answers from
 *   that probe: the device's architecture, or why the kernel cannot run
 *   ("no CUDA device ...", "architecture sm_80 not in the kernel's archs
 *   sm_90"), which the runner reports as UNSUPPORTED.
 *   With _qf_rdev_enumerate(1) (qualify run --devices) the probe also
 *   counts the back end's devices and names each (_qf_rdev_count,
 *   _qf_rdev_info_of); without it, device 0 only, as before.
 * Kernel-child side:
 *   _qf_rdev_open opens the device _qf_rdev_use chose (0 by default) of
 *   the kernel's back end; _qf_rdev_run
 *   runs one call: device buffers with guard regions around every output
 *   (filled with a canary byte), inputs and poisoned outputs copied in, the
 *   kernel run and synchronized (timed with the back end's events), outputs
 *   copied back into the host buffers; a clobbered device guard byte is
 *   mirrored into the host canary at the same distance, so the runner's
 *   canary check reports it as for a CPU kernel.
 */
#ifndef QF__RUNNER_DEVICE_H
#define QF__RUNNER_DEVICE_H

#include <stddef.h>

#include "qf_backend.h"
#include "qf_kernel.h"

#define _QF_RDEV_MAX 16 /* devices of one back end the probe names */

/* One device as the probe found it ("" where the back end does not say). */
typedef struct _qf_rdev_info {
    char arch[64];
    char uuid[64];
    char name[128];
} _qf_rdev_info;

/* Before the probe: 1 to count and name every device of a back end. */
void _qf_rdev_enumerate(int all);
/* The first GPU back end the probe found a device of, or NULL. */
const char *_qf_rdev_backend(void);
/* How many devices of backend the probe found (0: none, or not probed). */
int _qf_rdev_count(const char *backend);
/* Device index of backend, or NULL. */
const _qf_rdev_info *_qf_rdev_info_of(const char *backend, int index);
/* The device the next kernel child or server opens (inherited by fork;
 * a kernel server takes it from QUALIFY_DEVICE). */
void _qf_rdev_use(int index);
int _qf_rdev_current(void);

/* 1 when k's tensors live on a GPU back end (backend set and not "cpu"). */
int _qf_rdev_is_device(const qf_kernel *k);
/* Probe k's back end now if not done yet in this process (call before
 * forking workers so they inherit the answer). */
void _qf_rdev_prepare(const qf_kernel *k);
/* 0 and the device's architecture in arch; -1 and the reason in why. */
int _qf_rdev_probe(const qf_kernel *k, char *arch, size_t arch_size, char *why, size_t why_size);

/* Kernel child: open device _qf_rdev_current() of k's back end into dev (QF_EUNSUPPORTED
 * with the reason in msg when there is none). */
qf_status _qf_rdev_open(const qf_kernel *k, qf_device *dev, char *msg, size_t msg_size);
/* One call of k->run with call's host tensors staged through dev;
 * *kernel_s receives the device time of the run alone (may be NULL). */
qf_status _qf_rdev_run(qf_device *dev, void *ctx, qf_kernel_call *call, double *kernel_s);

#endif
