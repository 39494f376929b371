/* qf_worker.h: kernel workers, long-lived processes that announce kernels
 * and run cases over the line-JSON protocol of docs/workers.md.
 *
 * qf_worker_start runs a command line with /bin/sh -c in the current
 * directory, reads its hello and registers its kernels (all or nothing)
 * through qf_registry_add; the registry owns the worker from then on and
 * qf_registry_free sends it bye and reaps it.  A worker kernel's run
 * function copies the call's tensors into a POSIX shared-memory object,
 * sends `run` and waits for `done`; the runner (qualify/runner.c) restarts
 * a worker that died, hung or broke the protocol before its next pair.
 * With --jobs N each job slot gets its own instance of the worker, started
 * on the slot's first pair (docs/workers.md, "Concurrency").
 */
#ifndef QF_WORKER_H
#define QF_WORKER_H

#include <stddef.h>

#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Start the worker cmd and register its kernels into r.  QF_EIO when it
 * cannot be started or gives no hello within 30 s, QF_EPARSE for a
 * malformed hello or another protocol version, QF_EINVAL for a kernel
 * record the hello or the registry rejects, QF_ENOMEM; err names the
 * worker in every case. */
qf_status qf_worker_start(qf_registry *r, const char *cmd, char *err, size_t err_size);

/* Is k served by a worker (or routed to a kernel server)? */
int qf_worker_kernel_is(const qf_kernel *k);

/* Kernel servers (docs/runner.md "Kernel servers"): qualify's own kernels
 * served over this protocol by a long-lived process per job slot, so that
 * init, a device context and module loads happen once per server instead
 * of once per pair, with the isolation of a worker (a crash or hang costs
 * that pair and a restart).  The hello's "server" member carries this
 * version of the server's additions (docs/workers.md). */
#define QF_KERNEL_SERVER_VERSION 1

/* Serve reg's in-process kernels (not those of workers) on in_fd / out_fd
 * until bye or the end of input: the hello, then one done per run.  Each
 * kernel's init runs on its first run and fini after bye; a GPU kernel's
 * device is opened once per back end.  name: the hello's name.  Returns 0
 * after bye or at the end of input, 1 on a broken pipe or a message that
 * is not a run (the host restarts a server that breaks the protocol). */
int qf_kernel_serve(const qf_registry *reg, const char *name, int in_fd, int out_fd);

/* Start the kernel server cmd (a worker command line running `qualify
 * kernel-server` with the same plugins, adapters and claims as r) and
 * route every in-process kernel of r that its hello lists with the same op
 * and dtype tuples through it: the record stays r's (name, claims, origin,
 * supports, user), its calls go to the slot's server instance.  Other
 * kernels stay in-process.  *n_routed (may be NULL): how many were.  The
 * errors of qf_worker_start. */
qf_status qf_worker_route(qf_registry *r, const char *cmd, size_t *n_routed, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_WORKER_H */
