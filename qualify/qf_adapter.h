/* qf_adapter.h: standard-signature adapters, which qualify a shared library
 * that exports a standard API without any code written for qualify.
 *
 * An adapter spec names the API and the library:
 *
 *     cblas:LIB.so[:SYMBOL]
 *
 * dlopens LIB.so (a name without '/' is looked up on the system library
 * path, as dlopen does: cblas:libopenblas.so.0) and registers one GEMM
 * kernel per CBLAS entry point it finds (BLAS Technical Forum standard,
 * 2001, annex B; netlib CBLAS):
 *
 *     cblas_sgemm   gemm.cblas.<lib>.f32    float32 in and out
 *     cblas_dgemm   gemm.cblas.<lib>.f64    float64 in and out
 *     cblas_sbgemm  gemm.cblas.<lib>.bf16   bfloat16 a, b; float32 c, d
 *                                           (OpenBLAS; only when exported)
 *
 * <lib> is the file name without directory, "lib" prefix and suffixes
 * (libopenblas.so.0: openblas).  Without SYMBOL, cblas_sgemm and
 * cblas_dgemm must both exist (every CBLAS has them) and cblas_sbgemm is
 * added when present; with SYMBOL, only that entry point is registered
 * and it must exist.  The kernels go through qf_registry_add, held to the
 * checks a plugin's kernels are; the library stays loaded until
 * qf_registry_free.  docs/third-party.md describes the claim they make.
 */
#ifndef QF_ADAPTER_H
#define QF_ADAPTER_H

#include <stddef.h>

#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Load the library of spec and register its kernels into r (all or
 * nothing).  QF_EINVAL for a malformed spec or an unknown API, QF_EIO when
 * the library cannot be loaded or lacks a required symbol (err names the
 * file and the symbol), QF_ENOMEM, or the status of qf_registry_add (err
 * then holds qf_registry_error's message). */
qf_status qf_adapter_load(qf_registry *r, const char *spec, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_ADAPTER_H */
