/* qf_verdict.h: the verdict of one (case, kernel) pair as one function of
 * typed evidence (docs/verdicts.md "Verdicts"; definitions and policy keys
 * in docs/verdicts.md).
 *
 * The runner and the op classes only gather evidence (qf_evidence: how the
 * run ended, the metrics of each compared output, whether a bound applied,
 * determinism, overflow, the baseline, ...); qf_verdict_decide alone turns
 * it into a verdict, a cause (qf_cause) and a one-line reason.  Records
 * keep the evidence and the policy, so every reader (merge, show, enable,
 * diff, --resume) recomputes the verdict and refuses a record whose stored
 * verdict does not follow.  Scheduling and device rotation read the cause,
 * never the reason text, which may quote the kernel's own message.
 *
 * Two questions are kept apart:
 *   conformance  every checked element inside the bound derived from the
 *                claim (qf_bound.h), no NaN/Inf where the reference is
 *                finite, claimed determinism observed -> else FAILED;
 *   fitness      the suite's policy (max ulp, max normwise, min SQNR, at
 *                most m times a baseline's error) -> else MARGINAL.
 * MISTRUSTED when the check itself is doubtful (too many undecided
 * reference elements, too many zeros in the reference: oneDNN benchdnn's
 * 30%, 90% for matmul, docs/numerics.md#peer-tolerances), nothing checked.
 * UNCHECKED when nothing contradicts the kernel but no bound applied (an
 * op that derives none and no claimed max_ulp): never enabled, never a
 * pass.  A verdict is never replaced by a sentinel number.
 *
 * Order (docs/verdicts.md): run outcome (UNSUPPORTED, SKIPPED, CRASHED,
 * TIMEOUT, kernel errors) > FAILED (certain evidence: it stands even when
 * the data are weak) > MISTRUSTED (a pass on weak data is no pass) >
 * MARGINAL > UNCHECKED > QUALIFIED.
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
    QF_VERDICT_UNCHECKED,   /* nothing contradicts it, but no bound applied: not a pass */
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
    double max_componentwise;  /* MARGINAL above this componentwise error (qf_evidence.cw_worst) */
} qf_policy;

/* All fitness thresholds unset (NaN, max_componentwise too), baseline
 * max-abs with tol 0, max_undecided_frac 0.01, max_zero_frac 0.30, or
 * 0.90 when is_matmul (oneDNN benchdnn), signed_zero_fails 0. */
qf_policy qf_policy_default(int is_matmul);

/* Why a verdict is what it is: one per rule of qf_verdict_decide and one
 * per way a run can end.  What scheduling, device rotation, reports and
 * recomputation read (never the reason text). */
typedef enum qf_cause {
    QF_CAUSE_NONE = 0, /* evidence: the outputs were compared (no run outcome) */
    /* How a run ended before its outputs could be compared (qf_evidence.outcome). */
    QF_CAUSE_SKIPPED,        /* SKIPPED: not run (filtered, resumed, user request) */
    QF_CAUSE_UNSUPPORTED,    /* UNSUPPORTED: the case is outside what the kernel or op takes */
    QF_CAUSE_DECLINED,       /* UNSUPPORTED: the kernel returned QF_EUNSUPPORTED */
    QF_CAUSE_NO_TUPLE,       /* UNSUPPORTED: the kernel claims no dtype tuple for the case's dtypes */
    QF_CAUSE_CRASH,          /* CRASHED: the kernel's process died (signal, exit, abort) */
    QF_CAUSE_WORKER_DIED,    /* CRASHED: qualify's worker process died (runner or reference) */
    QF_CAUSE_TIMEOUT,        /* TIMEOUT: the kernel ran past its limit and was killed */
    QF_CAUSE_KERNEL_ERROR,   /* FAILED: the kernel returned an error status */
    QF_CAUSE_DEVICE_LOST,    /* FAILED: the kernel or back end returned QF_EDEVICE */
    QF_CAUSE_BAD_WRITE,      /* FAILED: written outside its outputs, or outputs left unwritten */
    QF_CAUSE_HARNESS,        /* MISTRUSTED: qualify could not check (memory, reference, bound) */
    /* Conformance (FAILED). */
    QF_CAUSE_NONFINITE,      /* NaN or Inf where the reference is finite */
    QF_CAUSE_FINITE,         /* finite where the reference is NaN or Inf */
    QF_CAUSE_SPECIALS,       /* NaN / Inf mismatches */
    QF_CAUSE_BOUND,          /* an element outside the bound derived from the claim */
    QF_CAUSE_SIGNED_ZERO,    /* signed-zero mismatches (policy signed_zero_fails) */
    QF_CAUSE_NONDETERMINISM, /* claims bitwise determinism; two runs differ */
    QF_CAUSE_THREADS,        /* claims the same bits across thread counts; they differ */
    QF_CAUSE_RUN2_CODES,     /* exact codes: run 2 differs from run 1, which equals the expectation */
    QF_CAUSE_EXACT_INDEX,    /* an exactly checked output (MoE expert indices) is wrong */
    /* Trust (MISTRUSTED). */
    QF_CAUSE_UNDECIDED,      /* too many undecided reference elements */
    QF_CAUSE_DEGENERATE,     /* too many zeros in the reference the op does not explain */
    QF_CAUSE_NOTHING_CHECKED, /* no element could be checked */
    QF_CAUSE_OVERFLOW,       /* finite where the reference overflows the claimed accumulator */
    QF_CAUSE_BASELINE_MISSING, /* the policy compares with a baseline that gave no result */
    QF_CAUSE_BASELINE_UNDEFINED, /* the baseline's error is undefined */
    /* Fitness (MARGINAL). */
    QF_CAUSE_POLICY_ULP,
    QF_CAUSE_POLICY_NORMWISE,
    QF_CAUSE_POLICY_SQNR,
    QF_CAUSE_POLICY_BASELINE,
    QF_CAUSE_POLICY_COMPONENTWISE,
    /* No conformance check (UNCHECKED). */
    QF_CAUSE_NO_BOUND,
    /* QUALIFIED. */
    QF_CAUSE_EMPTY,          /* empty output: nothing to check */
    QF_CAUSE_CONFORMS,       /* every checked element inside its bound, fitness met */
    QF_CAUSE_COUNT
} qf_cause;

/* "bound", "crash", ... (lower case, stable: records store it);
 * lookup: QF_EPARSE for an unknown name. */
const char *qf_cause_name(qf_cause c);
qf_status qf_cause_lookup(const char *name, qf_cause *out);

/* Everything a verdict is decided from, filled by the runner and the op
 * classes, kept in the record (qf_result.ev) and recomputed by readers.
 * Plain data (no pointers): a pair's process fills it in shared memory. */
typedef struct qf_evidence {
    /* How the run ended: QF_CAUSE_NONE when the outputs were compared,
     * else one of the outcome causes (SKIPPED .. HARNESS); the reason text
     * then says what happened (it may quote the kernel). */
    qf_cause outcome;
    int bound;             /* 1: a bound applied (derived or claimed): conformance checked */
    /* determinism: claimed?, two runs compared?, equal?, first difference */
    int det_claimed, det_threads_claimed;
    int det_checked, det_equal;
    size_t det_first_diff;
    /* zeros of the reference the op computes exactly (relu of a negative,
     * log_softmax of one column): results, not degenerate data */
    size_t n_zero_exact;
    /* output elements finite where the reference is NaN/Inf because the
     * claimed accumulator may overflow (MISTRUSTED), and NaN/Inf ones there
     * on a FAILED pair; the largest intermediate and the format's max */
    size_t n_ovf, n_ovf_failed;
    double ovf_reach, acc_max;
    char acc_name[32];
    /* the runs differ (det_equal 0): run 2 judged on its own metrics, or,
     * for ops whose codes have an exact expectation, a wrong code */
    int exact_codes;
    int run2;
    qf_metrics run2_metrics;
    /* a second output judged for conformance (attention's lse): 1 run 1,
     * 2 run 1 and run 2 */
    int out2;
    char out2_name[32];
    qf_metrics out2_metrics, out2_run2_metrics;
    /* the policy's baseline: 0 none, 1 compared (its errors below), -1 it
     * gave no result (baseline_verdict, MISTRUSTED or UNSUPPORTED, stands
     * for a pair that would pass; baseline_why says why) */
    int baseline;
    double baseline_max_abs, baseline_rms;
    qf_verdict baseline_verdict;
    char baseline_why[256];
    /* max_componentwise: measured (1), the worst and its checked element */
    int cw_checked;
    double cw_worst;
    size_t cw_at;
    /* an exactly checked output is wrong (QF_CAUSE_EXACT_INDEX): why */
    char exact_fail[256];
} qf_evidence;

/* Evidence of a run whose outputs were compared, nothing else known. */
qf_evidence qf_evidence_default(void);

/* What qf_verdict_decide returns. */
typedef struct qf_decision {
    qf_verdict verdict;
    qf_cause cause;
    char reason[512]; /* one line, e.g. "element (3, 17): error 2.5 ulp > bound 1.8 ulp" */
} qf_decision;

/* Decide.  e: the evidence; m: the metrics of the (first) output, NULL
 * only when e->outcome is not QF_CAUSE_NONE; detail: for an outcome, what
 * happened (its reason; may be NULL).  Applies every rule in the order
 * of docs/verdicts.md.  QF_EINVAL for a NULL e/p/d, metrics missing where
 * needed, or an outcome that is not a run outcome. */
qf_status qf_verdict_decide(const qf_evidence *e, const qf_metrics *m, const qf_policy *p, const char *detail,
                            qf_decision *d);

/* The verdict a run outcome cause gives (SKIPPED .. HARNESS);
 * QF_VERDICT_COUNT for any other cause. */
qf_verdict qf_cause_outcome_verdict(qf_cause c);

/* Severity for combining (higher is worse): QUALIFIED < UNCHECKED <
 * SKIPPED < UNSUPPORTED < MARGINAL < MISTRUSTED < TIMEOUT < CRASHED <
 * FAILED. */
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
