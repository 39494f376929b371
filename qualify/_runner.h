/* _runner.h: the runner's own helpers shared by its files (private). */
#ifndef QF__RUNNER_H
#define QF__RUNNER_H

#include <stddef.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"

/* Fill what identifies a (case, kernel) pair in r (case id, suite, op,
 * kernel, dtypes, dimensions, parameters, input, seed, architecture, start
 * time) and its one-line reproducer; r is initialized first. */
void _qf_runner_identity(qf_result *r, const qf_suite *suite, const qf_suite_case *c, const qf_kernel *k,
                         size_t kidx, const qf_registry *reg, const qf_runner_opts *o);

/* ---- Process and memory plumbing (runner_proc.c) ---------------------- */

#include <sys/types.h>

#include "ops/_ops.h"

/* Seconds on the monotonic clock. */
double _qf_rp_now_s(void);
/* Shared anonymous memory (survives fork in both processes), or NULL. */
void *_qf_rp_shm_alloc(size_t bytes);
/* One output buffer between canary pages, its data filled with fill; 0,
 * or -1 when out of memory. */
int _qf_rp_guarded_alloc(_qf_guarded *g, size_t bytes, unsigned char fill);
void _qf_rp_guarded_free(_qf_guarded *g);
/* Offset of the first clobbered canary byte: < 0 before the data, > 0
 * past its end (1-based), 0 when intact. */
long _qf_rp_guarded_check(const _qf_guarded *g);
/* A descriptor readable when child pid exits (pidfd), or -1 where there is
 * none: the caller then naps. */
int _qf_rp_child_fd(pid_t pid);
/* Block until one of n child descriptors is readable or timeout_s passes;
 * without any, nap *nap seconds and double it up to cap. */
void _qf_rp_wait_children(const int *fds, size_t n, double timeout_s, double *nap, double cap);

#endif
