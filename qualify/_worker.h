/* _worker.h: what the runner needs of worker.c (private).
 *
 * The runner's parent process owns each worker instance; the pair's
 * process and its kernel child inherit the pipes.  The parent calls
 * _qf_worker_before_pair right before forking a pair's process (it starts
 * the slot's instance when needed and tells the kernel child which slot it
 * runs in) and _qf_worker_after_pair once that process is reaped, before
 * the result is journaled (it reaps and restarts a faulty instance and
 * words the CRASHED reason with the worker's exit status). */
#ifndef QF__WORKER_H
#define QF__WORKER_H

#include "qf_kernel.h"
#include "qf_result.h"

/* Exit status of a kernel child whose worker failed (died, broke the
 * protocol, given up): the reason is in the child's message. */
#define _QF_WORKER_EXIT 117

void _qf_worker_before_pair(const qf_kernel *k, int slot);
void _qf_worker_after_pair(const qf_kernel *k, int slot, qf_result *r);

#endif
