/* _gemm.h: what the exact GEMM (gemm.c) and its certified fast path
 * (gemm_fast.c) share.  Internal. */
#ifndef QF__GEMM_H
#define QF__GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "qf_dot.h"

/* One problem of a batch or group: op(A) is m x k with element (i, l) at
 * a[i*rsa + l*csa], op(B) k x n at b[l*rsb + j*csb], C and D m x n. */
typedef struct _qf_gemm_prob {
    size_t m, n, k;
    const double *a, *b, *c;
    ptrdiff_t rsa, csa, rsb, csb, rsc, csc, rsd, csd;
    ptrdiff_t off_d; /* element offset of D(0, 0) in the outputs and cand */
    uint64_t lin0;   /* linear index of (0, 0) for stochastic rounding */
} _qf_gemm_prob;

/* Element (i, j) of p by the exact engine, every requested output written;
 * acc and abs are the caller's scratch accumulators. */
void _qf_gemm_exact_element(const qf_gemm_desc *d, const _qf_gemm_prob *p, size_t i, size_t j, qf_dot_acc *acc,
                            qf_dot_acc *abs);

/* Can the fast path serve this call at all (options, rounding, outputs)? */
int _qf_gemm_fast_usable(const qf_gemm_desc *d);

/* Every element of p: decided from the binary64 product where its bound
 * allows, by the exact engine otherwise; *n_exact += those. */
qf_status _qf_gemm_fast(const qf_gemm_desc *d, const _qf_gemm_prob *p, size_t *n_exact);

#endif /* QF__GEMM_H */
