/* _gemm_refute.h: the gemm class's refuting inputs (gemm_refute.c,
 * docs/refute.md), private to the op classes. */
#ifndef QF__GEMM_REFUTE_H
#define QF__GEMM_REFUTE_H

#include "_ops.h"
#include "qf_refute.h"

/* The suite inputs "refute:stagnation" ... "refute:ties", one per family. */
extern const qf_suite_input _qf_gemm_refute_inputs[QF_REFUTE_COUNT];
/* _qf_opclass.refute_applies: the kernel's tuple for the case has a claim
 * the case's family is predicted to refute (qf_refute_power > 0). */
int _qf_gemm_refute_applies(const qf_suite_case *c, const qf_kernel *k, char *why, size_t why_size);
/* The case's a and b from its refute family, stored as the case lays
 * them out (shapes sa, sb of ndim dimensions); 0, or -1 with the verdict
 * said in r. */
int _qf_gemm_refute_gen(_qf_case *p, qf_result *r, int ndim, const int64_t *sa, const int64_t *sb);
/* _qf_opclass.explain: prepend "refute:FAMILY: <diagnosis>; " to r->reason. */
void _qf_gemm_refute_explain(const _qf_case *p, const _qf_checked *ck, qf_result *r);

#endif
