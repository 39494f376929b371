/* qf_refute.h: refuting inputs, designed AGAINST a GEMM kernel's claim
 * (docs/refute.md).
 *
 * Why: random inputs cannot refute a claim whose bound is tighter than the
 * kernel's real arithmetic.  A kernel that is one FMA chain over K but
 * claims blocked(32) stays far inside the blocked bound on normal and
 * outlier data (their errors are random walks, sqrt(K) u, while the bound
 * is linear in the claimed chain); only inputs that make the real chain's
 * worst case happen expose it.  Each family below is sized from the claim
 * (its accumulator width, rounding, block and order) so that any
 * implementation of the claimed arithmetic stays inside the derived bound
 * (it always does: the bound holds for every input) while the plausible
 * alternative the family targets exceeds it by a factor the module
 * predicts before the kernel runs (qf_refute_power).  On a violation,
 * qf_refute_diagnose replays candidate arithmetics (qf_probe_replay_dot) on
 * the same inputs and names the one that reproduces the kernel's outputs.
 *
 * Sources: FPRev (Xie, Gao, Xue 2024/2025) for designed inputs that reveal
 * summation orders; Fasi, Higham, Mikaitis and Pranesh (PeerJ CS 2021) for
 * the alignment and rounding probes of matrix units; Higham, "Accuracy and
 * Stability of Numerical Algorithms" (2002), sec. 3.1 and 4.2, for the
 * bounds and for stagnation of recursive summation.
 */
#ifndef QF_REFUTE_H
#define QF_REFUTE_H

#include <stddef.h>

#include "qf_bound.h"
#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every dot product of a family starts with one large term M (term 0);
 * the small terms t that follow are sized from the claim. */
typedef enum qf_refute_family {
    /* t = u M (the claimed accumulator's tie), K - 1 of them: one running
     * chain over K loses every t, a claimed blocked / split / pairwise /
     * block-FMA order keeps most of them.  Targets order claims. */
    QF_REFUTE_STAGNATION = 0,
    /* The same with -M as the last term: the exact result is the sum of
     * the t, so a narrow output format does not hide what the chain lost. */
    QF_REFUTE_CANCEL,
    /* t just below the kept bits of a unit 3, 5, 7 ... fraction bits
     * narrower than the claim (one width per output element, "rungs"): the
     * claimed width keeps every t exactly, a narrower or truncating
     * alignment drops them.  Targets acc_frac_bits / align claims. */
    QF_REFUTE_WIDTH,
    /* t = (1 - 2^-p) ulp of M at the claimed width, one per block step:
     * round-to-nearest keeps it (error 2^-p ulp), truncation or floor drops
     * it (error ~1 ulp).  Targets a claim of RNE accumulation. */
    QF_REFUTE_TIES,
    QF_REFUTE_COUNT
} qf_refute_family;

/* "stagnation", "cancel", "width", "ties"; NULL out of range. */
const char *qf_refute_family_name(qf_refute_family f);
/* The family of a name, or -1. */
int qf_refute_family_lookup(const char *name);
/* "stagnation, cancel, width, ties" for messages. */
void qf_refute_family_list(char *buf, size_t size);

/* A family for one claim and one GEMM dtype tuple at reduction length k. */
typedef struct qf_refute_spec {
    const qf_arith_claim *claim;
    const qf_format *fa, *fb, *fo; /* input formats of a and b, output format */
    size_t k;
    qf_refute_family family;
} qf_refute_spec;

/* A family is run only when it is predicted to exceed the claim's bound
 * by at least this factor under its alternative. */
#define QF_REFUTE_MIN_POWER 1.5

/* The predicted ratio |alternative - exact| / bound(claim) on element 0 of
 * the design, the alternative being the family's (stagnation, cancel: one
 * FMA chain over K in the claimed accumulator; width: the claimed order
 * with 3 fewer kept fraction bits, truncating; ties: the claimed order,
 * truncating).  0 with the reason in why when the family cannot be built
 * for these formats (ranges too short, integer or float64 accumulators) or
 * its power is below QF_REFUTE_MIN_POWER (the claim's bound is not
 * tighter than the alternative's: nothing to refute). */
double qf_refute_power(const qf_refute_spec *s, char *why, size_t why_size);

/* The design's values for an m x n x k GEMM: a[i*k + l] (row i of the
 * logical A, whatever its storage) and b[l*n + j] (the logical B), every
 * value exact in fa / fb.  Rows and columns carry the width rungs (element
 * (i, j) tests min(i, Ri) + min(j, Rj)); the other families give every
 * element the same dot product.  QF_EUNSUPPORTED with why when the family
 * cannot be built (as qf_refute_power). */
qf_status qf_refute_gemm(const qf_refute_spec *s, size_t m, size_t n, double *a, double *b, char *why,
                         size_t why_size);

/* Diagnose a violation: ne dot products (x[e*k ..], y[e*k ..]: the a and
 * b values of element e) whose kernel outputs are got[e].  Candidate
 * arithmetics (the claimed one; one FMA chain over K; sequential block-FMA
 * chains; split(S) and blocked(B) orders; 7 .. 24 kept fraction bits with
 * RNE or truncation) are replayed with qf_probe_replay_dot and rounded
 * into fo; the first that reproduces every got[e] bit for bit is named in
 * out, the claimed property first ("claims blocked(32, sequential) order;
 * behaves as one FMA chain over K"), or out says plainly that none did.
 * Returns 1 when a candidate reproduced the outputs, 0 otherwise. */
int qf_refute_diagnose(const qf_refute_spec *s, size_t ne, const double *x, const double *y, const double *got,
                       char *out, size_t size);

/* The claim's order as a claim file spells it ("blocked(32, sequential)"). */
void qf_refute_order_text(const qf_arith_claim *c, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* QF_REFUTE_H */
