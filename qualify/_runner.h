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

#endif
