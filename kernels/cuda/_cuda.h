/* _cuda.h: helpers shared by the CUDA back end and kernels (private).
 *
 * Every CUDA call goes through QF_CU (or qf_cu_check), which records the
 * failing call, its error name and the source line in a message that the
 * caller gets back (call->msg for kernels, stderr and qf_cuda_last_error()
 * for the back end).  A launch is followed by QF_CU_LAUNCH, which checks
 * cudaGetLastError (launch configuration errors) before anything else runs.
 */
#ifndef QF__CUDA_H
#define QF__CUDA_H

#include <cuda_runtime.h>
#include <stdio.h>

#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record a failed CUDA call (what: the call's text) into msg and the back
 * end's last-error buffer; returns QF_EIO (QF_ENOMEM for out of memory). */
qf_status qf_cu_fail(cudaError_t e, const char *what, const char *file, int line, char *msg, size_t msg_size);
/* The last recorded CUDA failure of this process ("" if none). */
const char *qf_cuda_last_error(void);

#ifdef __cplusplus
}
#endif

/* In a function with `qf_status st` and a label `done`, and msg/msg_size. */
#define QF_CU(call)                                                                                          \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            st = qf_cu_fail(e_, #call, __FILE__, __LINE__, msg, msg_size);                                   \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

/* After a <<<...>>> launch: the launch itself, then its execution. */
#define QF_CU_LAUNCH(what)                                                                                   \
    do {                                                                                                     \
        QF_CU(cudaGetLastError());                                                                           \
        QF_CU(cudaDeviceSynchronize());                                                                      \
    } while (0)

#endif
