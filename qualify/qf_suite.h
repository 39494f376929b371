/* qf_suite.h: suite files (YAML) and their expansion into cases.
 *
 * A suite file says what to sweep: for one or more groups, the op, kernel
 * name globs, dtype tuples, shapes (lists, ranges, named workload sets), op
 * parameters, input distributions, seeds, a sampling policy, an acceptance
 * policy and an optional architecture filter.  A suite may include other
 * suite files.  docs/suites.md documents the format and every error.
 *
 * Loading validates everything it can without a kernel registry: unknown
 * keys, duplicate keys, wrong types, unknown op/format/distribution names,
 * numeric ranges, absurd or overflowing shapes, include cycles.  Every error
 * is one line "FILE:LINE:COL: field 'PATH': MESSAGE" (1-based line and
 * column of the offending YAML node), written into the caller's buffer.
 *
 * Expansion enumerates cases in a fixed order (independent of the machine):
 * groups in file order (an included file's groups where the include is
 * written, before the including file's own), then per group: dtype tuple,
 * shape (shape sets in order; within one set the cartesian product, last
 * dimension fastest), parameter combination (last parameter fastest),
 * thread count, operand layout, input distribution, seed.  Each case has a stable id, e.g.
 *     gemm/M=16,N=4096,K=128/bf16.bf16.f32.f32/normal/seed=2
 * that qf_suite_cases_find() selects again.  Kernel globs are not part of a
 * case id: the runner pairs each case with every kernel matching one of its
 * group's globs, and a reproducer names the kernel separately.
 */
#ifndef QF_SUITE_H
#define QF_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits that turn hostile input into an error instead of a hang. */
#define QF_SUITE_DIM_MAX       2147483647ull /* one dimension: 2^31 - 1 */
#define QF_SUITE_WORK_MAX      (1ull << 56)  /* product of a case's dimensions */
#define QF_SUITE_VALUES_MAX    4096          /* values of one dimension or list */
#define QF_SUITE_CASES_MAX     (1u << 18)    /* cases of one expanded suite */
#define QF_SUITE_FILE_MAX      (16u << 20)   /* bytes of one suite file */
#define QF_SUITE_INCLUDE_DEPTH 16
#define QF_SUITE_MAX_DIMS      8
#define QF_SUITE_MAX_ROLES     6
#define QF_SUITE_MAX_PARAMS    8
#define QF_SUITE_MAX_WORKERS   64 /* workers: of one suite */
#define QF_SUITE_MAX_CLAIMS    64 /* claims: of one suite */
#define QF_SUITE_THREADS_MAX   1024 /* one value of `threads` */

/* An op as suites name it: an index into the op table (qualify/ops/), in
 * [0, qf_suite_op_count()).  The named values are the ops of the first
 * versions, kept for callers that name one; a newer op has no constant of
 * its own (qf_suite_op_lookup finds it by name). */
typedef enum qf_suite_op {
    QF_SUITE_OP_GEMM = 0,
    QF_SUITE_OP_ATTENTION,
    QF_SUITE_OP_SOFTMAX,
    QF_SUITE_OP_LOG_SOFTMAX,
    QF_SUITE_OP_RMSNORM,
    QF_SUITE_OP_LAYERNORM,
    QF_SUITE_OP_ACTIVATION,
    QF_SUITE_OP_GLU,
    QF_SUITE_OP_ROPE,
    QF_SUITE_OP_MOE_ROUTER,
    QF_SUITE_OP_QUANTIZE
} qf_suite_op;

/* How many ops the op table holds. */
int qf_suite_op_count(void);

/* "gemm", "attention", ...; NULL when out of range. */
const char *qf_suite_op_name(qf_suite_op op);
/* Exact, case-sensitive name; QF_EPARSE if unknown. */
qf_status qf_suite_op_lookup(const char *name, qf_suite_op *out);

/* The dimension names of an op, in canonical (case id) order, e.g. gemm:
 * M, N, K, batch.  Returns the count. */
size_t qf_suite_op_dims(qf_suite_op op, const char *const **names);
/* The dtype roles of an op in tuple order, e.g. gemm: a, b, acc, out. */
size_t qf_suite_op_roles(qf_suite_op op, const char *const **names);
/* The name of the op's parameter i in its schema's order (gemm: trans_a,
 * trans_b, alpha, beta, group_size), or NULL past the last: the order in
 * which enablement keys spell parameters (docs/enable.md). */
const char *qf_suite_op_param(qf_suite_op op, size_t i);
/* The kernel ABI op the op's kernels register under (log_softmax runs on
 * softmax kernels, glu on activation kernels); QF_OP_COUNT when out of
 * range. */
qf_op qf_suite_op_kernel_op(qf_suite_op op);
/* The kind of bound the op derives from a kernel's claim ("gemm",
 * "softmax", "norm" ...; results.json bound.kind), or NULL when it derives
 * none (then only a claimed max_ulp makes a conformance check). */
const char *qf_suite_op_bound(qf_suite_op op);

/* ---- One loaded suite ----------------------------------------------------- */

typedef struct qf_suite_where {
    const char *file; /* as the suite or include named it */
    int line, col;    /* 1-based */
} qf_suite_where;

typedef enum qf_suite_ptype { QF_PARAM_BOOL = 0, QF_PARAM_INT, QF_PARAM_REAL, QF_PARAM_ENUM } qf_suite_ptype;

typedef struct qf_suite_value {
    qf_suite_ptype type;
    int64_t i;     /* BOOL (0/1) and INT */
    double r;      /* REAL (INT values are mirrored here too) */
    const char *s; /* ENUM */
} qf_suite_value;

/* An op parameter; a list in the file sweeps its values. */
typedef struct qf_suite_param {
    const char *key;
    size_t nvalues;
    qf_suite_value *values;
    qf_suite_where where;
} qf_suite_param;

/* One dtype tuple: a format per role of the op (all roles filled: missing
 * inputs take the first input's format, acc float32 (float64 when the first
 * input is float64), out the first input's format). */
typedef struct qf_suite_dtype {
    const qf_format *role[QF_SUITE_MAX_ROLES];
    const char *scale; /* gemm: "none", "per_tensor", ...; otherwise "none" */
    const char *label; /* "bf16.bf16.f32.f32", "+scale" when not none */
} qf_suite_dtype;

/* An input distribution with its parameters (docs/suites.md#inputs).  The
 * names are those of the input generator (qf_inputs.h): hand each
 * (keys[i], texts[i]) to qf_dist_set(), and path to the dist's path. */
typedef struct qf_suite_input {
    const char *name;
    size_t nparams;
    const char **keys;  /* parameters given in the file, in table order (not path) */
    double *values;     /* numeric values (bools 0/1); NaN for tail and tensor */
    const char *path;   /* file: the path, resolved against the suite file */
    const char *label;  /* "outliers:fraction=0.01,scale=100" */
    const char **texts; /* every value as qf_dist_set() reads it: "0.01", "1", "lognormal" */
    const char *tensor; /* file: the tensor name in a .safetensors, or NULL */
    /* Per-slot inputs (`{a: {name: file, path: A.npy}, b: normal}`): the
     * op's input slots the entry names, in the op's slot order, each with
     * its own distribution (whose nslots is 0).  A slot not named draws
     * the fields above, which then hold `normal`; label is
     * "a=LABEL+b=LABEL".  0 for a distribution of every slot. */
    size_t nslots;
    const char **slot_names; /* qf_op_slot_name() of the op's kernel op */
    const struct qf_suite_input *slots;
} qf_suite_input;

/* Every field optional; `set` says which were given. */
#define QF_POLICY_MAX_ULP           (1u << 0)
#define QF_POLICY_MAX_NORMWISE      (1u << 1)
#define QF_POLICY_MAX_COMPONENTWISE (1u << 2)
#define QF_POLICY_MIN_SQNR_DB       (1u << 3)
#define QF_POLICY_BASELINE          (1u << 4) /* baseline and baseline_factor */
#define QF_POLICY_FALSE_FAILURE     (1u << 5)
#define QF_POLICY_MAX_ZERO_FRAC     (1u << 6)

typedef struct qf_suite_policy {
    unsigned set;
    double max_ulp, max_normwise, max_componentwise, min_sqnr_db;
    const char *baseline;   /* a kernel name */
    double baseline_factor; /* default 2 */
    double false_failure;   /* probability budget of probabilistic bounds */
    int baseline_rms;       /* 1: torch._dynamo's RMSE rule instead of max |err| */
    double baseline_tol;    /* additive tolerance of the RMSE rule (default 0) */
    double max_zero_frac;   /* MISTRUSTED above this fraction of exact zeros in the reference */
} qf_suite_policy;

typedef struct qf_suite_sampling {
    uint64_t max_elements; /* 0: check every output element */
    int edges;             /* always include tile edges and corners (default 1) */
    uint64_t tile;         /* tile size whose edges are included (0: none) */
} qf_suite_sampling;

/* One cartesian shape set, already resolved: values[d][0..nvalues[d]) for
 * every dimension of the op (a dimension not given holds its default, 0
 * meaning "the same as the dimension it follows", e.g. kv_heads = heads). */
typedef struct qf_suite_shape_set {
    size_t nvalues[QF_SUITE_MAX_DIMS];
    uint64_t *values[QF_SUITE_MAX_DIMS];
    qf_suite_where where;
} qf_suite_shape_set;

/* A memory layout of the op's matrix operands (docs/suites.md#layouts):
 * dense row-major (every field 0, label "dense"), or a combination of
 * column-major order, a padded leading dimension and a padded batch
 * stride.  `needs` is what a kernel must declare (QF_LAYOUT_* of
 * qf_kernel.h) to be handed it. */
typedef struct qf_suite_layout {
    int col;            /* column-major: the last two strides swapped */
    uint32_t ld_pad;    /* leading dimension = the dense one + ld_pad elements */
    uint32_t batch_pad; /* batch stride = one matrix (ld x extent) + batch_pad elements */
    uint32_t needs;     /* QF_LAYOUT_* bits */
    const char *label;  /* "dense", "ld+3", "col", "col,ld+5", "batch+64" (canonical order) */
} qf_suite_layout;

#define QF_SUITE_LAYOUT_PAD_MAX 65536 /* one pad of `layout`, in elements */

typedef struct qf_suite_group {
    const char *name; /* optional; prefixes case ids "name:" */
    qf_suite_op op;
    qf_suite_where where;
    size_t nkernels;
    const char **kernels; /* globs; default "<op>.*" */
    size_t ndtypes;
    qf_suite_dtype *dtypes;
    size_t nsets;
    qf_suite_shape_set *sets;
    size_t nparams;
    qf_suite_param *params; /* in the op's parameter table order */
    size_t ninputs;
    qf_suite_input *inputs; /* default: [normal] */
    size_t nseeds;
    uint64_t *seeds; /* default: [0] */
    qf_suite_sampling sampling;
    qf_suite_policy policy;
    size_t narch;
    const char **arch; /* architecture globs; none: every architecture */
    size_t nthreads;
    uint32_t *threads; /* kernel thread counts (call.threads); default: [1] */
    size_t nlayouts;
    qf_suite_layout *layouts; /* operand layouts; default: [dense] */
    /* `refute:` (default true): add the op's refuting inputs (docs/refute.md)
     * to each case of the group, once per dtype, shape, parameters and
     * thread count, with the group's first seed. */
    int refute;
} qf_suite_group;

typedef struct qf_suite qf_suite;
struct qf_suite {
    const char *name;        /* `suite:` of the top file (or its path) */
    const char *description; /* may be NULL */
    const char *path;        /* the top file */
    size_t ngroups;
    qf_suite_group *groups;
    size_t nworkloads;
    const char **workloads; /* names of the workload sets defined */
    size_t nworkers;
    const char **workers; /* `workers:` of the top file: command lines (docs/workers.md) */
    size_t nclaims;
    const char **claims; /* `claims:` of the top file: claim files, paths relative to the
                          * suite file resolved (docs/claims.md) */
    void *_arena;         /* private: owns every allocation above */
};

/* Loads and validates a suite file and everything it includes.  On error,
 * *out is NULL and err holds "FILE:LINE:COL: field 'F': message".
 * Returns QF_EIO (unreadable file), QF_EPARSE (anything malformed),
 * QF_ENOMEM, or QF_EINVAL (NULL arguments). */
qf_status qf_suite_load(const char *path, qf_suite **out, char *err, size_t errsize);

/* The same from memory (the fuzzing entry point); name is used in messages
 * and its directory resolves includes. */
qf_status qf_suite_load_mem(const char *buf, size_t len, const char *name, qf_suite **out, char *err,
                            size_t errsize);

void qf_suite_free(qf_suite *s);

/* ---- Cases ----------------------------------------------------------------- */

typedef struct qf_suite_case {
    const qf_suite_group *group;
    qf_suite_op op;
    uint64_t dims[QF_SUITE_MAX_DIMS]; /* every dimension, defaults resolved */
    size_t ndims;
    const qf_suite_dtype *dtype;
    uint8_t param_choice[QF_SUITE_MAX_PARAMS]; /* index into group->params[i].values */
    const qf_suite_input *input;
    uint64_t seed;
    const char *id;
    uint32_t threads; /* the kernel's call.threads (1 unless the group sweeps `threads`) */
    const qf_suite_layout *layout; /* the operand layout (dense unless the group sweeps `layout`) */
} qf_suite_case;

typedef struct qf_suite_cases {
    size_t n;
    qf_suite_case *cases;
    char *_ids; /* private: storage of the ids */
} qf_suite_cases;

/* Enumerates every case of the suite.  Cross-field checks happen here
 * (heads divisible by kv_heads, top_k <= experts, even head_dim for rope,
 * the product of dimensions, the case count, duplicate ids), with the same
 * message format.  QF_EPARSE on such errors, QF_ENOMEM. */
qf_status qf_suite_expand(const qf_suite *s, qf_suite_cases *out, char *err, size_t errsize);

/* Counts the cases without building them (same checks as expand, except
 * duplicate ids). */
qf_status qf_suite_count(const qf_suite *s, uint64_t *n, char *err, size_t errsize);

/* The case with this exact id, or NULL. */
const qf_suite_case *qf_suite_cases_find(const qf_suite_cases *c, const char *id);

void qf_suite_cases_free(qf_suite_cases *c);

/* A dimension of a case by name ("M", "head_dim"); QF_EINVAL if the op has
 * no such dimension. */
qf_status qf_suite_case_dim(const qf_suite_case *c, const char *name, uint64_t *out);
/* The value of an op parameter for this case: the one chosen when the file
 * set it, else the documented default (*is_default = 1).  QF_EINVAL if the
 * op has no such parameter; a parameter without a default that the file
 * did not set is QF_EINVAL too. */
qf_status qf_suite_case_param(const qf_suite_case *c, const char *key, qf_suite_value *out, int *is_default);
/* The format of a dtype role of the case ("a", "acc", "out"); NULL if the
 * op has no such role. */
const qf_format *qf_suite_case_format(const qf_suite_case *c, const char *role);

/* fnmatch-style glob ('*', '?', no classes) used for kernel and
 * architecture filters; 1 on a match. */
int qf_suite_glob_match(const char *glob, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* QF_SUITE_H */
