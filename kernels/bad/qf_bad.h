/* qf_bad.h: the known-bad kernels (kind known-bad).
 *
 * Each kernel carries exactly one documented defect and claims to be
 * correct: its dtype tuples state the arithmetic a correct kernel of that
 * shape would have.  They exist to prove that qualify's detection works:
 * shapes/detection.yaml runs each where its defect shows (it must be
 * FAILED, CRASHED or TIMEOUT, with the reason) and where it does not (it
 * must qualify).  docs/kernels.md "Known-bad kernels" lists them.
 */
#ifndef QF_BAD_H
#define QF_BAD_H

#include <stddef.h>

#include "qf_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The known-bad kernel table (kernels/bad): n entries. */
const qf_kernel *qf_kernels_bad(size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* QF_BAD_H */
