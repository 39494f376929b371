/* qf_verdict.h: the verdict of one case, from its metrics, the claim's
 * bounds and the suite's fitness policy (docs/verdicts.md "Verdicts"; definitions
 * and policy keys in docs/verdicts.md).
 *
 * Two questions are kept apart:
 *   conformance  every checked element inside the bound derived from the
 *                claim (qf_bound.h), no NaN/Inf where the reference is
 *                finite, claimed determinism observed -> else FAILED;
 *   fitness      the suite's policy (max ulp, max normwise, min SQNR, at
 *                most m times a baseline's error) -> else MARGINAL.
 * MISTRUSTED when the check itself is doubtful (too many undecided
 * reference elements, too many zeros in the reference: oneDNN benchdnn's
 * 30%, 90% for matmul, docs/numerics.md#peer-tolerances), nothing checked.  A verdict is never
 * replaced by a sentinel number.
 *
 * Order (docs/verdicts.md): run outcome (UNSUPPORTED, SKIPPED, CRASHED,
 * TIMEOUT) > FAILED (certain evidence: it stands even when the data are
 * weak) > MISTRUSTED (a pass on weak data is no pass) > MARGINAL >
 * QUALIFIED.
 */
#ifndef QF_VERDICT_H
#define QF_VERDICT_H

#include <stddef.h>

#include "qf_metrics.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qf_verdict {
    QF_VERDICT_QUALIFIED = 0,
    QF_VERDICT_MARGINAL,    /* conformant, fails the fitness policy */
    QF_VERDICT_FAILED,      /* does not do what it claims */
    QF_VERDICT_CRASHED,     /* signal, abort, nonzero exit of the child */
    QF_VERDICT_TIMEOUT,     /* ran past the time limit */
    QF_VERDICT_MISTRUSTED,  /* the check itself is doubtful */
    QF_VERDICT_UNSUPPORTED, /* no device, architecture or dtype not claimed */
    QF_VERDICT_SKIPPED,     /* not run (filtered, resumed, user request) */
    QF_VERDICT_COUNT
} qf_verdict;

/* "QUALIFIED", "MARGINAL", ... ; lookup is case-insensitive (QF_EPARSE). */
const char *qf_verdict_name(qf_verdict v);
qf_status qf_verdict_lookup(const char *name, qf_verdict *out);

/* Which error the baseline rule compares. */
typedef enum qf_baseline_metric {
    QF_BASELINE_MAX_ABS = 0, /* FlashAttention tests: max |err| <= m * baseline's */
    QF_BASELINE_RMS          /* torch._dynamo: RMSE <= m * baseline RMSE + tol */
} qf_baseline_metric;

/* The fitness policy of a suite, and the MISTRUSTED thresholds.  Unset
 * fitness thresholds are NaN (qf_policy_default sets them so). */
typedef struct qf_policy {
    double max_ulp;         /* max |error| in ulps of the output format */
    double max_normwise;    /* ||c^ - c||_2 / ||c||_2 (hipBLASLt: f32 1e-5, f16 0.01, bf16 0.1,
                             * f8 0.125, bf8 0.25) */
    double min_sqnr_db;     /* torchao: fp8 cast 25, fp8 linear 18, MX fp4 12, NVFP4 16 */
    double baseline_factor; /* m: error <= m * baseline error (+ baseline_tol) */
    qf_baseline_metric baseline_metric;
    double baseline_tol;       /* additive tolerance of the RMS rule */
    double max_undecided_frac; /* MISTRUSTED above this fraction of undecided reference elements */
    double max_zero_frac;      /* MISTRUSTED above this fraction of exact zeros in the reference */
    int signed_zero_fails;     /* 1: a signed-zero mismatch is FAILED (default 0: counted only) */
} qf_policy;

/* All fitness thresholds unset (NaN), baseline max-abs with tol 0,
 * max_undecided_frac 0.01, max_zero_frac 0.30, or 0.90 when is_matmul
 * (oneDNN benchdnn), signed_zero_fails 0. */
qf_policy qf_policy_default(int is_matmul);

/* What the runner observed. */
typedef enum qf_verdict_run {
    QF_VERDICT_RUN_OK = 0,
    QF_VERDICT_RUN_CRASHED,
    QF_VERDICT_RUN_TIMEOUT,
    QF_VERDICT_RUN_UNSUPPORTED,
    QF_VERDICT_RUN_SKIPPED
} qf_verdict_run;

typedef struct qf_verdict_input {
    qf_verdict_run run;
    const char *run_reason;     /* "signal 11", "no CUDA device", ...; may be NULL */
    const qf_metrics *metrics;  /* required when run == QF_VERDICT_RUN_OK */
    const qf_metrics *baseline; /* the baseline kernel on the same inputs, or NULL */
    /* determinism: checked?, and were the bits equal? */
    int det_claimed, det_checked, det_equal;
    int det_threads_claimed, det_threads_checked, det_threads_equal;
    size_t det_first_diff; /* first differing element when not equal */
    /* Zeros of the reference that the op computes exactly from nonzero
     * inputs (relu of a negative): results, not degenerate data, so the
     * max_zero_frac rule does not count them (docs/verdicts.md). */
    size_t n_zero_exact;
} qf_verdict_input;

/* A verdict input with run = OK and everything else zero / NULL. */
qf_verdict_input qf_verdict_input_default(void);

/* Decide.  reason (may be NULL) receives one line explaining the verdict,
 * e.g. "element (3, 17): error 2.5 ulp > bound 1.8 ulp".  QF_EINVAL when
 * run == OK without metrics or the policy is NULL. */
qf_status qf_verdict_decide(const qf_verdict_input *r, const qf_policy *p, qf_verdict *v, char *reason,
                            size_t reason_size);

/* Severity for combining (higher is worse): QUALIFIED < SKIPPED <
 * UNSUPPORTED < MARGINAL < MISTRUSTED < TIMEOUT < CRASHED < FAILED. */
int qf_verdict_severity(qf_verdict v);

/* Acceptance across seeds: the worst verdict of the n seeds (a case is
 * QUALIFIED only when every seed is).  QF_EINVAL for n == 0. */
qf_status qf_verdict_combine(const qf_verdict *v, size_t n, qf_verdict *out);

/* False-failure probability of the all-seeds rule for a fit kernel whose
 * per-seed probability of exceeding the threshold is at most alpha:
 * 1 - (1 - alpha)^seeds (<= seeds * alpha). */
double qf_policy_false_failure(double alpha, size_t seeds);

/* The lambda of the Higham-Mary probabilistic bound (qf_bound_coef.prob)
 * that makes a fitness threshold built from it fail a kernel with
 * independent zero-mean rounding errors with probability at most p_ff over
 * `seeds` seeds and `chains` checked elements (union bound over the
 * 2 exp(-lambda^2 (1-u)^2 / 2) per chain, docs/numerics.md#error-bounds), for unit roundoff u.
 * NaN when p_ff is not in (0, 1). */
double qf_policy_lambda(double p_ff, size_t seeds, size_t chains, double u);

#ifdef __cplusplus
}
#endif

#endif /* QF_VERDICT_H */
