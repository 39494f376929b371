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

/* Is k served by a worker? */
int qf_worker_kernel_is(const qf_kernel *k);

#ifdef __cplusplus
}
#endif

#endif /* QF_WORKER_H */
