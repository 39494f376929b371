/* _worker.h: what the runner needs of worker.c (private).
 *
 * The runner's parent process owns each worker instance; the pair's
 * process inherits the pipes and calls the kernel itself (no kernel
 * child).  The parent calls _qf_worker_before_pair right before forking a
 * pair's process (it starts the slot's instance when needed and tells the
 * pair's process which slot it runs in) and _qf_worker_after_pair once that process is reaped, before
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

/* A worker kernel is called in the pair's own process, between these two
 * (no kernel child: the worker is the isolated process).  deadline: the
 * _qf_rp_now_s() time by which each done must have come.  _end returns 0,
 * 1 when the worker failed (died, broke the protocol, given up: the reason
 * is in the call's msg; CRASHED) or 2 when it timed out (TIMEOUT); in both
 * cases _qf_worker_after_pair replaces the instance. */
void _qf_worker_inline_begin(double deadline);
int _qf_worker_inline_end(void);
void _qf_worker_after_pair(const qf_kernel *k, int slot, qf_result *r);

#endif
