/* qf_result.h: the result record of one case, and the journal.
 *
 * One qf_result per (case, kernel) pair the runner (qf_runner.h) visits:
 * what ran (case id, op, kernel, dtypes, shape, parameters, inputs, seed),
 * what came out (verdict and its one-line reason, metrics, bound summary,
 * how many elements were checked and whether they were a sample, the
 * reference's per-element status counts, determinism, optional timing) and
 * how to reproduce it (a command line).
 *
 * The record is plain data with fixed-size strings, so a child process can
 * fill one in shared memory and the parent can copy it without pointers.
 *
 * The JOURNAL is a JSON Lines file: one JSON object per line, written with
 * one write, flushed and fsync'ed before the runner moves on, so a sweep
 * killed at any moment loses at most the record being written.  Line 1 is a
 * header ({"record": "header", "format": "qualify-journal", "version": 1,
 * ...}); every other line is {"record": "case", ...} (qf_result_to_json).
 * A last line without its newline (a torn write), or a complete last line
 * that is not a record, is ignored by the reader, which says so, and cut
 * off by qf_journal_open(resume = 1) before anything is appended; a bad
 * line before the last is refused.  docs/runner.md documents the fields
 * and the repair rules.
 */
#ifndef QF_RESULT_H
#define QF_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "qf_metrics.h"
#include "qf_status.h"
#include "qf_verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Jansson's json_t, without making every includer find jansson.h. */
struct json_t;

#define QF_RESULT_JOURNAL_VERSION 2

#define QF_RESULT_ID_MAX     512  /* case id */
#define QF_RESULT_NAME_MAX   128  /* kernel, op, dtype names */
#define QF_RESULT_TEXT_MAX   512  /* reason, input label, parameters */
#define QF_RESULT_CMD_MAX    2048 /* reproducer */
#define QF_RESULT_MAX_DIMS   8
#define QF_RESULT_MAX_PARAMS 8
#define QF_RESULT_MAX_ROLES  6
#define QF_RESULT_OUTPUT_MAX 4097 /* kernel_output: 4 KiB and its NUL */
#define QF_RESULT_MAX_ARTIFACTS 24  /* files --save-failing writes for one pair */
#define QF_RESULT_ARTIFACT_KEY  24  /* "a", "ref:d", "checked:lse", "suite" */
#define QF_RESULT_ARTIFACT_DIR  192 /* "failing/<case>--<kernel>-<hash>" */

/* One named dimension of the case ("M" = 16). */
typedef struct qf_result_dim {
    char name[32];
    uint64_t value;
} qf_result_dim;

/* One op parameter as text ("eps" = "1e-06"). */
typedef struct qf_result_param {
    char key[32];
    char value[64];
} qf_result_param;

/* One dtype role of the case ("a" = "bfloat16"). */
typedef struct qf_result_role {
    char role[16];
    char format[32];
} qf_result_role;

/* The bound the verdict used (qf_bound.h), summarized.  kind:
 *   "gemm"       coefficients below (rel_abs * sum|a||b| + rel_out |c| + abs_min),
 *   "ulp"        the claimed max_ulp of the kernel (claimed_ulp),
 *   "softmax", "log_softmax", "norm", "l2norm", "attention", "rope", "activation"   derived per element
 *                (docs/bounds.md; an infinite one checks nothing: not counted in metrics.n_bound),
 *   "exact"      codes compared with an exact expectation (quantize),
 *   ""           no bound: the op derives none for the case, or no outputs (UNCHECKED or an outcome).
 * max_bound: the largest per-element bound; max_bound_ulp the same in ulps
 * of the output format at the element where it occurs. */
typedef struct qf_result_bound {
    char kind[16];
    double rel_abs, rel_out, abs_min, chain, eta, prob;
    double claimed_ulp;
    double max_bound, max_bound_ulp;
} qf_result_bound;

/* --time: correctness-gated timing, only for QUALIFIED or MARGINAL cases. */
typedef struct qf_result_timing {
    int measured;  /* 0: not asked for, or the verdict did not allow it */
    size_t warmup; /* warm-up runs, not timed */
    size_t reps;   /* timed repetitions */
    double median_s, min_s, max_s;
    double spread; /* (max - min) / median */
} qf_result_timing;

typedef struct qf_result {
    /* What ran. */
    char case_id[QF_RESULT_ID_MAX];         /* qf_suite.h id, stable across machines */
    char suite[QF_RESULT_TEXT_MAX];         /* path of the suite file as given */
    char op[QF_RESULT_NAME_MAX];            /* suite op name: "gemm", "log_softmax" */
    char kernel[QF_RESULT_NAME_MAX];        /* "gemm.cpu.naive.f32" */
    char kernel_kind[16];                   /* "reference", "optimized", "model", "known-bad" */
    char kernel_origin[QF_RESULT_TEXT_MAX]; /* "built-in" or the plugin path */
    char claim_origin[QF_RESULT_TEXT_MAX];  /* the claim file that replaced the kernel's own
                                             * claim (docs/claims.md), or "" */
    char dtype[QF_RESULT_NAME_MAX];         /* suite dtype label "bf16.bf16.f32.bf16" */
    char dtype_tuple[QF_RESULT_NAME_MAX];   /* the kernel's tuple that served it ("bf16"), or "" */
    size_t nroles;
    qf_result_role roles[QF_RESULT_MAX_ROLES];
    size_t ndims;
    qf_result_dim dims[QF_RESULT_MAX_DIMS];
    size_t nparams;
    qf_result_param params[QF_RESULT_MAX_PARAMS];
    char input[QF_RESULT_TEXT_MAX]; /* distribution label "outliers:fraction=0.01,scale=100" */
    uint64_t seed;                  /* the case's seed (inputs: qf_inputs streams 0, 1, ...) */
    char arch[64];                  /* architecture it ran on ("cpu") */
    /* The device a GPU kernel's pair ran on (docs/runner.md "Devices"):
     * its index in the back end, UUID and name; index -1 (and the strings
     * "") for a CPU pair or one that never reached a device. */
    int device_index;
    char device_uuid[64];
    char device_name[128];

    /* What came out: the verdict, decided by qf_verdict_decide from ev
     * under policy (qf_result_decide), the cause of the rule that decided
     * it (what scheduling and readers switch on), and a one-line reason
     * (for people: it may quote the kernel's own message). */
    qf_verdict verdict;
    qf_cause cause;
    char reason[QF_RESULT_TEXT_MAX]; /* one line: why this verdict */
    qf_evidence ev;                  /* what the verdict was decided from */
    qf_policy policy;                /* the policy it was decided under */
    int signal;                      /* CRASHED: the signal number, else 0 */
    int exit_code;                   /* CRASHED by exit: the child's status, else 0 */
    /* What the kernel wrote to its standard output and error during the
     * pair (captured apart from qualify's own output, docs/security.md):
     * the first 4 KiB as text (NUL and invalid UTF-8 as '?'), and how many
     * bytes it wrote in all, so a reader sees how much was dropped. */
    char kernel_output[QF_RESULT_OUTPUT_MAX];
    size_t kernel_output_bytes;

    int has_metrics;    /* 1 when outputs were compared */
    qf_metrics metrics; /* qf_metrics.h (counts over the checked elements) */
    qf_result_bound bound;

    size_t n_elements; /* output elements of the case */
    size_t n_checked;  /* elements compared (all, or the sample) */
    int sampled;       /* 1: n_checked < n_elements, a seeded sample */
    size_t ref_exact, ref_rounded, ref_undecided, ref_undefined; /* qf_ref_status counts */
    /* Reference evaluations by the exact dot engine (GEMM: a full reference
     * evaluates each element twice, binary64 and the output format, and
     * qf_gemm's certified fast path decides the others; a sampled one
     * evaluates each checked element once, exactly).  0 for other ops. */
    size_t ref_exact_engine;

    int det_checked; /* determinism: two runs compared bitwise */
    int det_equal;
    size_t det_first_diff; /* first differing element when not equal */

    qf_result_timing timing;
    /* Memory (docs/runner.md "Memory"): the runner's estimate of what the
     * case allocates (inputs, outputs with their guards, the shared-memory
     * object of a server or worker, the reference and its working memory),
     * checked against the budget before anything is mapped; the case's
     * tensors alone (inputs and outputs in their formats, one binary64
     * reference value per checked element), the yardstick of the peak; and
     * the largest resident set of the pair's process and its kernel child
     * (getrusage ru_maxrss, the process's fixed base included).  0: not
     * known (a record of an older qualify, a case refused earlier). */
    size_t case_bytes, tensor_bytes, peak_rss_bytes;
    double wall_s;    /* whole case: inputs, run, reference, verdict */
    char started[32]; /* UTC time the case started, ISO 8601 */

    /* --save-failing (docs/runner.md "Failing pairs' tensors"): the files
     * written for a FAILED, MARGINAL or MISTRUSTED pair, all in one
     * directory relative to the output directory (artifacts_dir,
     * "failing/<case>--<kernel>-<hash>"), each named by a key: an input or
     * output slot ("a", "d"), "run2:<slot>" (run 2's output when the runs
     * differ), "scale:<slot>", "ref:<slot>" (the correctly rounded
     * reference in the output format), "exact:<slot>" (binary64),
     * "bound:<slot>", "checked:<slot>" (the checked elements' indices when
     * sampled) or "suite" (a suite that reruns the pair from the files).
     * The file of a key is the key with ':' as '.' and ".npy" after it
     * ("ref.d.npy"; "suite": "repro.yaml").  artifacts_note says why some
     * or all were not written ("" when nothing is to say);
     * artifacts_reproducer is the command that reruns the pair from them
     * ("" when there is none). */
    char artifacts_dir[QF_RESULT_ARTIFACT_DIR];
    size_t nartifacts;
    char artifacts[QF_RESULT_MAX_ARTIFACTS][QF_RESULT_ARTIFACT_KEY];
    char artifacts_note[QF_RESULT_TEXT_MAX];
    char artifacts_reproducer[QF_RESULT_CMD_MAX];

    char reproducer[QF_RESULT_CMD_MAX]; /* "qualify run SUITE --case ID --kernel K [--plugin P]..." */
} qf_result;

/* The file name of an artifact key (qf_result.artifacts) into buf:
 * "ref:d" -> "ref.d.npy", "suite" -> "repro.yaml". */
void qf_result_artifact_file(const char *key, char *buf, size_t size);

/* A zeroed record with verdict SKIPPED and every double field that means
 * "not measured" set to NaN; evidence qf_evidence_default, policy
 * qf_policy_default(0). */
void qf_result_init(qf_result *r);

/* Set the verdict, cause and reason from the record's evidence (r->ev,
 * r->metrics when r->has_metrics, r->det_*, r->bound) and r->policy,
 * through qf_verdict_decide.  For a run outcome the current reason is the
 * detail it keeps.  QF_EINVAL when the evidence is incomplete. */
qf_status qf_result_decide(qf_result *r);

/* A run that ended before its outputs were compared: evidence outcome
 * `cause` (SKIPPED .. HARNESS in qf_cause), the reason printf-style, and
 * the verdict qf_result_decide gives it. */
#ifdef __GNUC__
__attribute__((format(printf, 3, 4)))
#endif
void qf_result_outcome(qf_result *r, qf_cause cause, const char *fmt, ...);

/* Does the stored verdict follow from the stored evidence?  0 when it does;
 * -1 with why ("stored QUALIFIED (conforms), the evidence gives FAILED
 * (bound): element ...") when not: a record edited by hand, or written by
 * a qualify that decided otherwise. */
int qf_result_recheck(const qf_result *r, char *why, size_t why_size);

/* The key a resumed sweep matches finished work by: "KERNEL CASE_ID" into
 * buf (truncated to size). */
void qf_result_key(const qf_result *r, char *buf, size_t size);

/* ---- JSON -------------------------------------------------------------------
 * Non-finite doubles are written as the strings "NaN", "Infinity",
 * "-Infinity" (JSON has no such numbers); finite ones with 17 significant
 * digits, so from_json(to_json(r)) gives back the same bits.  from_json
 * accepts what to_json writes; missing optional members keep their
 * qf_result_init values. */

/* A new object ({"record": "case", ...}); QF_ENOMEM. */
qf_status qf_result_to_json(const qf_result *r, struct json_t **out);
/* QF_EPARSE with a message naming the bad member. */
qf_status qf_result_from_json(const struct json_t *j, qf_result *r, char *err, size_t err_size);
/* Members of qf_metrics as a JSON object (the report writer reuses it). */
qf_status qf_metrics_to_json(const qf_metrics *m, struct json_t **out);
qf_status qf_metrics_from_json(const struct json_t *j, qf_metrics *m, char *err, size_t err_size);

/* ---- The journal --------------------------------------------------------------- */

typedef struct qf_journal qf_journal;

/* What a reader skipped or qf_journal_open(resume = 1) repaired at the end
 * of a journal (bits of *torn), so a caller can warn about each. */
#define QF_JOURNAL_TORN     1 /* a last line without its newline (a killed write) */
#define QF_JOURNAL_DROPPED  2 /* a complete last line that is not a record (garbage) */
#define QF_JOURNAL_REHEADED 4 /* open: nothing was left, not even the header: a new one was written */

/* Open PATH for appending results.
 *   resume = 0: create or truncate, then write the header line (header may
 *               be NULL or a JSON object whose members are added to it:
 *               suite, argv, arch ...; the object is not stolen).
 *   resume = 1: keep the finished records; a torn last line or a last
 *               line that is not a record is cut off (*torn: the
 *               QF_JOURNAL_* bits above, 0 when nothing was; torn may be
 *               NULL); a journal left empty by that (torn inside its
 *               header line) gets a new header; a file that does not
 *               exist yet is created as with resume = 0.
 * QF_EINVAL for a path that is not a regular file (a FIFO, a device);
 * QF_EIO with a message naming the path. */
qf_status qf_journal_open(const char *path, int resume, const struct json_t *header, qf_journal **out,
                          int *torn, char *err, size_t err_size);
/* Append one record as one line, then fflush and fsync: when this returns
 * QF_OK the record is on disk.  QF_EIO, QF_ENOMEM. */
qf_status qf_journal_append(qf_journal *j, const qf_result *r);
/* batch 1: records are fsync'ed together at qf_journal_close, not each
 * before the next: for a journal written whole from other files (qualify
 * merge), where a kill loses nothing that cannot be written again. */
void qf_journal_set_batch(qf_journal *j, int batch);
/* Records appended through this handle. */
size_t qf_journal_count(const qf_journal *j);
/* QF_EIO when the final flush fails; frees j either way (NULL is a no-op). */
qf_status qf_journal_close(qf_journal *j);

/* Read every finished case record of PATH into *results (malloc'ed array,
 * free with free()), *n of them.  A last line without its newline is a
 * torn write (*torn = QF_JOURNAL_TORN), an unparsable complete last line
 * is skipped too (*torn = QF_JOURNAL_DROPPED; torn may be NULL).  An
 * unparsable line before the last is QF_EPARSE ("PATH:LINE: message").
 * header (may be NULL) receives a new reference to the header object, or
 * NULL when the file has none.  A missing file is QF_EIO; a path that is
 * not a regular file is QF_EINVAL, refused before it is opened for
 * reading (a FIFO would block). */
qf_status qf_journal_read(const char *path, qf_result **results, size_t *n, int *torn, struct json_t **header,
                          char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_RESULT_H */
