/* _ops.h: op classes (private to libqualify).
 *
 * Everything the engine knows about one op family lives in one file of
 * qualify/ops/ that defines a _qf_opclass: how a suite case becomes the
 * kernel ABI's typed problem (qf_op_desc), which dtype tuples serve it, how
 * its inputs are drawn, which reference runs and which bound applies, and
 * how the verdict treats it.  The runner (qualify/runner.c) keeps
 * isolation, scheduling and the journal and calls through this table; it
 * names no op.  docs/architecture.md walks through adding an op.
 */
#ifndef QF__OPS_H
#define QF__OPS_H

#include <stddef.h>
#include <stdint.h>

#include "qf_inputs.h"
#include "qf_kernel.h"
#include "qf_ref.h"
#include "qf_result.h"
#include "qf_suite.h"
#include "qf_verdict.h"

#include "_gemm_scaled.h"
#include "_schema.h"

/* One guarded output buffer of the runner: [canary page][data][canary to
 * the page end and one more page] in shared memory (runner.c). */
typedef struct _qf_guarded {
    unsigned char *map;
    size_t map_bytes, bytes;
    unsigned char *data;
} _qf_guarded;

/* One (case, kernel) pair being prepared and judged.  The op class fills
 * the problem (op, rows, cols), the inputs (in, inval, incode) and the
 * output descriptors (out, outf; out1_* for a second output); the runner
 * owns the guarded output buffers g and g1. */
typedef struct _qf_case {
    const qf_suite_case *c;
    const struct _qf_opclass *cls;
    qf_op_desc op;
    const qf_kernel *k;
    const qf_dtype_tuple *t;
    /* inputs */
    int nin;
    qf_tensor in[QF_KERNEL_MAX_IN];
    double *inval[QF_KERNEL_MAX_IN]; /* decoded values (reference input) */
    void *incode[QF_KERNEL_MAX_IN];
    /* output (slot 0 only: every op the runner drives has one) */
    int nout;
    qf_tensor out[QF_KERNEL_MAX_OUT];
    const qf_format *outf;
    size_t out_n, rows, cols; /* output as rows x cols (batch folded into rows) */
    _qf_guarded g[2];         /* run 0 and run 1 */
    /* A second output (attention lse, moe_router indices): its element
     * count (0: none driven), bytes per element, and buffers per run. */
    size_t out1_n;
    int out1_eb;
    const qf_format *outf1; /* NULL for index tensors */
    _qf_guarded g1[2];
    char fail1[256];         /* the reference found the second output wrong (moe indices) */
    int out1_is_scale;       /* quantize: the second buffer is out[0].scale.data */
    uint32_t global_code[2]; /* quantize nvfp4: out[0].scale.global_code of each run */
    qf_scale_recipe recipe;  /* gemm operand scaling (_gemm_scaled.h); QF_SCALE_RECIPE_NONE: unscaled */
    size_t group;            /* recipe group: the group size along K */
    void *inscale[2];        /* scale codes of a and b beyond per_tensor */
    uint32_t in_scale[2];    /* the float32 scale codes of a and b (value = decode(code) * scale) */
    uint64_t seed;
    /* Per-slot inputs (qf_suite_input.slots): bit i of slot_own says input
     * slot i draws slot_dist[i] instead of the case's distribution; bit i
     * of slot_drawn that an op class drew it through _qf_slot_dist (the
     * runner refuses a case whose named slot no class drew). */
    qf_dist slot_dist[QF_KERNEL_MAX_IN];
    unsigned slot_own, slot_drawn;
    /* The policy's baseline kernel and the tuple it serves the case with
     * (NULL when the policy names none). */
    const qf_kernel *bk;
    const qf_dtype_tuple *bt;
    /* Operand layout (runner_layout.c): the strided copies of the inputs
     * laid out (in[i].data points there; incode keeps the dense codes),
     * and the bytes of output 0's allocation. */
    void *instrided[QF_KERNEL_MAX_IN];
    size_t out_bytes;
} _qf_case;

/* The checked elements of one output: linear indices and, per element,
 * the kernel's value, the reference (binary64 and correctly rounded into
 * the output format), its status, the bound and (gemm) sum |a||b|. */
typedef struct _qf_checked {
    size_t n;
    /* linear output indices, or NULL when every element is checked in
     * order (element i is output element i: 8 bytes an element saved on a
     * full check, docs/runner.md "Memory"); read through _qf_ck_at */
    uint64_t *idx;
    /* no array of the kernel's values: _qf_ck_got decodes its codes as
     * they are read (8 bytes an element saved, docs/runner.md "Memory") */
    double *exact, *rounded, *bound, *absb;
    uint8_t *status;
    int has_bound; /* second outputs: 0 when no bound applies */
} _qf_checked;

/* The linear output index of checked element i. */
static inline size_t _qf_ck_at(const _qf_checked *ck, size_t i)
{
    return ck->idx ? (size_t)ck->idx[i] : i;
}

/* How the verdict treats an op (flags of _qf_opclass). */
enum {
    /* The default policy is GEMM's (qf_policy_default(1)); the
     * componentwise policy divides by sum |a||b| instead of |exact|, and
     * the exact engine leaves no undecided element (statuses unused). */
    _QF_OPC_DOT = 1u << 0,
    /* Outputs are codes compared with an exact expectation: zero codes
     * are not weak evidence, so they never make the check doubtful. */
    _QF_OPC_EXACT_CODES = 1u << 1,
};

/* The kernel ABI's view of an op (qf_kernel.h): a summary, the names of
 * its tensor slots and dimensions, and the dimensions of a problem (for
 * shape limits).  Only the class that owns its ABI op carries one
 * (log_softmax and glu run on softmax's and activation's).  Dimension
 * names are the suite's where the concept is the same (M, N, K, rows,
 * heads ...); where the ABI flattens (activation: n = rows x cols) or takes
 * a parameter as a dimension (rope rotary_dim, moe_router top_k) the name
 * is still that parameter's. */
typedef struct _qf_abi {
    const char *summary;
    const char *in[QF_KERNEL_MAX_IN + 1];
    const char *out[QF_KERNEL_MAX_OUT + 1];
    const char *dims[QF_OP_MAX_DIMS + 1];
    void (*dims_of)(const qf_op_desc *d, int64_t *dims);
    /* The problem's fields beyond its dimensions, by name, into the JSON
     * object o (the kernel-worker protocol's `op`, docs/workers.md); NULL
     * when none are sent. */
    void (*fields_json)(const qf_op_desc *d, struct json_t *o);
    /* The inverse of dims_of and fields_json: a kernel server
     * (qualify/serve.c) rebuilds the run's problem from its `op` object o,
     * whose dimensions are already read into dims (dims_of order).  Arrays
     * the problem points to (group_m, positions) go into one malloc'ed
     * block in *owned, which the caller frees.  0, or -1 with the reason in
     * err.  Every class that owns an ABI op has one, so that a new op is
     * served without a change to serve.c. */
    int (*from_json)(qf_op_desc *d, const int64_t *dims, struct json_t *o, void **owned, char *err,
                     size_t err_size);
    /* The element count of each tensor slot of the problem, inputs into
     * in[QF_KERNEL_MAX_IN] and outputs into out[QF_KERNEL_MAX_OUT] (0 for
     * a slot the problem leaves out; counts saturate at UINT64_MAX, see
     * _qf_mul_sat): the runner's memory estimate reads them before
     * anything is allocated (runner_memory.c, docs/runner.md "Memory").
     * NULL: the op's cases get no estimate and no budget check. */
    void (*elems)(const qf_op_desc *d, uint64_t *in, uint64_t *out);
} _qf_abi;

/* One op family, as the suite spells it ("log_softmax" is its own class
 * over the ABI's softmax).  Each function returns 0, or -1 with the
 * verdict and its reason said in r (_qf_say). */
typedef struct _qf_opclass {
    const op_schema *schema; /* how suites state its cases (_schema.h) */
    const char *name;        /* the suite's op name */
    qf_op abi;               /* the kernel ABI op its kernels register under */
    const _qf_abi *abi_info; /* that op's ABI names, when this class owns it */
    unsigned flags;
    /* The kind of bound the op derives, as results.json names it ("gemm",
     * "softmax" ...; a claimed max_ulp never replaces it), or NULL when
     * the op has none: then only a claimed max_ulp makes a conformance
     * check, and the verdict's reason says when none applied. */
    const char *bound;
    /* The case -> the typed problem p->op, and p->rows, p->cols. */
    int (*build)(_qf_case *p, qf_result *r);
    /* Does tuple t serve the case's dtype roles (beyond out and acc, which
     * every op compares)? */
    int (*tuple_matches)(const qf_suite_case *c, const qf_dtype_tuple *t);
    /* Draw the inputs from d and describe the outputs (p->out, second
     * output sizes). */
    int (*inputs)(_qf_case *p, qf_result *r, const qf_dist *d);
    /* The input slots (bit i: slot i) the runner lays out in the case's
     * operand layout (the schema's `layouts`), besides output 0, which is
     * laid out whenever the schema has any (runner_layout.c). */
    unsigned layout_in;
    /* The reference of the checked elements of output 0 (ck) and, when
     * the op has a second output it judges, of output 1 (ck1); the bound
     * per element and r->bound. target and tile: the suite's sampling. */
    int (*reference)(_qf_case *p, _qf_checked *ck, _qf_checked *ck1, qf_result *r, uint64_t target,
                     uint64_t tile);
    /* Or, for a row-wise op: the row hooks of the shared row reference
     * (rowref.c), which samples whole rows. */
    const struct _qf_rowops *rows;
    /* Optional: elements whose non-finite result the claimed arithmetic
     * may produce (accumulator overflow) are marked unchecked; returns how
     * many, and reports the reach and those FAILED (runner.c words the
     * verdict). */
    size_t (*mark_overflow)(const _qf_case *p, _qf_checked *ck, const qf_result *r, double *reach,
                            size_t *n_failed);
    /* Optional: the largest value the claimed accumulator holds (for the
     * overflow reason). */
    double (*acc_max)(const _qf_case *p);
    /* Optional: how many decided checked elements of output 0 have a zero
     * reference that an exact step of the op computes from nonzero inputs
     * (relu: max(x, 0) = 0 for x < 0; softmax at a masked entry;
     * log_softmax of a row of one entry; LayerNorm of a constant row;
     * quantize's zero code of a small value; docs/verdicts.md "Degenerate
     * data and exact zeros" has the table).  Such zeros are results of the
     * op, not of degenerate data, so the max_zero_frac rule leaves them out
     * (qf_verdict_input.n_zero_exact); _qf_exact_zeros counts them. */
    size_t (*exact_zeros)(const _qf_case *p, const _qf_checked *ck);
    /* Optional: refuting inputs, designed against the kernel's claim
     * (qf_refute.h, docs/refute.md).  The suite adds refute_inputs[0 ..
     * n_refute) to every case (once per dtype, shape, parameters and thread
     * count); refute_applies says whether a (case, kernel) pair with one of
     * them is run (0, with the reason in why, when the family refutes
     * nothing the kernel claims); explain, on a FAILED case with one of
     * them, names the arithmetic that reproduces the kernel's outputs in
     * r->reason. */
    const qf_suite_input *refute_inputs;
    size_t n_refute;
    int (*refute_applies)(const qf_suite_case *c, const qf_kernel *k, char *why, size_t why_size);
    void (*explain)(const _qf_case *p, const _qf_checked *ck, qf_result *r);
} _qf_opclass;

/* The op classes, indexed by qf_suite_op. */
const _qf_opclass *_qf_opclass_get(qf_suite_op op);
/* The problem as JSON: "op", its ABI dimensions by name, then the op's
 * fields (the owning class's fields_json); NULL when out of memory or the
 * op is unknown. */
struct json_t *_qf_op_json(const qf_op_desc *d);
/* The inverse of _qf_op_json: the problem of a worker protocol `op`
 * object into d (arrays in *owned, freed by the caller, NULL when none).
 * 0, or -1 with the reason in err. */
int _qf_op_from_json(struct json_t *o, qf_op_desc *d, void **owned, char *err, size_t err_size);
/* Members of an `op` object for the from_json hooks: 0, or -1 with
 * "op: KEY ..." in err when absent or of another JSON type.  _qf_jword
 * finds the member's string in words (NULL-terminated) and stores its
 * index. */
int _qf_jreal(struct json_t *o, const char *key, double *v, char *err, size_t err_size);
int _qf_jint(struct json_t *o, const char *key, int64_t *v, char *err, size_t err_size);
int _qf_jbool(struct json_t *o, const char *key, int *v, char *err, size_t err_size);
int _qf_jword(struct json_t *o, const char *key, const char *const *words, int *v, char *err, size_t err_size);
/* A member's string, or NULL with the reason in err. */
const char *_qf_jstr(struct json_t *o, const char *key, char *err, size_t err_size);
/* A dimension of a problem as the ABI counts it (INT64_MAX past it). */
int64_t _qf_abi_dim(size_t v);
/* a * b, or UINT64_MAX when the product does not fit: element counts of
 * absurd shapes stay absurd instead of wrapping to a small number that
 * would pass the memory budget. */
uint64_t _qf_mul_sat(uint64_t a, uint64_t b);
/* The element counts of d's tensor slots (the owning class's elems hook)
 * into in[QF_KERNEL_MAX_IN] and out[QF_KERNEL_MAX_OUT]; -1 (all zero)
 * when the op has no hook. */
int _qf_op_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out);

/* ---- Helpers the op classes share (ops/common.c) -------------------------- */

/* Does tuple t serve the case's dtype roles?  out and acc for every op, the
 * inputs as the op class says (the runner's and the refute plan's rule). */
int _qf_tuple_serves(const qf_suite_case *c, const _qf_opclass *cls, const qf_dtype_tuple *t);
/* The refute family of the case's input (qf_refute_family), or -1 when the
 * input is not a refuting one. */
int _qf_case_refute(const qf_suite_case *c);
/* Is the (case, kernel) pair run?  Every pair but those of a refuting input
 * the kernel's claim gives nothing to refute (or all of them when
 * no_refute). */
int _qf_pair_planned(const qf_suite_case *c, const qf_kernel *k, int no_refute);

/* The pair ended before its outputs were compared: run outcome c
 * (qf_cause: UNSUPPORTED, HARNESS, ...), the reason printf-style; the
 * verdict is qf_verdict_decide's (qf_result_outcome). */
void _qf_say(qf_result *r, qf_cause c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The case's format of a dtype role, NULL when the op has no such role. */
const qf_format *_qf_role(const qf_suite_case *c, const char *name);
int _qf_fmt_eq(const qf_format *f, qf_format_id id);
/* A numeric (or bool) op parameter of the case, dflt when absent. */
double _qf_param_real(const qf_suite_case *c, const char *key, double dflt);
/* An enum op parameter of the case, NULL when absent. */
const char *_qf_param_enum(const qf_suite_case *c, const char *key);
/* The distribution input slot `slot` draws: its own when the case's
 * input names the slot (per-slot inputs), else d.  A per-slot file must
 * have the slot's shape (ndim, shape); NULL with UNSUPPORTED said in r
 * otherwise, naming the file and the dimension. */
const qf_dist *_qf_slot_dist(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim,
                             const int64_t *shape);
/* Draw input slot `slot` as rows x cols of the tuple's format into
 * p->inval / p->incode and describe it as an ndim tensor of shape. */
int _qf_gen_input(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                  size_t rows, size_t cols);
void _qf_checked_free(_qf_checked *ck);
int _qf_checked_alloc(_qf_checked *ck, size_t n);
/* Every element of an output of n, in order. */
int _qf_checked_all(_qf_checked *ck, size_t n);
/* Copy a reference's binary64 and rounded outputs into ck and count them. */
void _qf_take_ref(_qf_checked *ck, const qf_ref_out *ex, const qf_ref_out *ro, qf_result *r);
/* The code of element i of a buffer of `bytes`-byte codes. */
uint64_t _qf_load_code(const unsigned char *base, int bytes, size_t i);
/* The binary64 inputs freed once the reference is done with them, unless
 * a failed case's explanation may read them (the class explains and the
 * case refutes): nothing after the reference reads them otherwise. */
void _qf_inval_release(_qf_case *p);
/* Element i of input slot's values: its binary64 copy, or its code
 * decoded when the copy was freed (a row reference frees input 0's,
 * rowref.c; codes of whole bytes). */
double _qf_in_at(const _qf_case *p, int slot, size_t i);
/* The kernel's value at checked element i of output 0 (run 1's codes). */
double _qf_ck_got(const _qf_case *p, const _qf_checked *ck, size_t i);
/* Where an op derives no bound (a row op without the hook, moe_router's
 * weights, attention with a softcap): the claim's
 * max_ulp, when it states one, as the bound of n elements of format f
 * (kind "ulp" in r unless a derived kind is there already, claimed_ulp);
 * returns 1 when it did.  A derived bound is never replaced
 * (docs/claims.md "max_ulp"). */
int _qf_claimed_ulp(const _qf_case *p, const qf_format *f, size_t n, const double *exact, double *bound,
                    qf_result *r);
/* The exact_zeros hooks' count: the decided checked elements of ck whose
 * reference is zero and which made(p, at, fact) says the op's math makes
 * zero from the actual inputs (at: the output index).  *fact is a value
 * the predicate may keep for the output row at / p->cols (a row-wise
 * property computed once per row): it is reset to -1 when the row
 * changes. */
size_t _qf_exact_zeros(const _qf_case *p, const _qf_checked *ck,
                       int (*made)(const _qf_case *p, size_t at, long *fact));

/* Row-wise ops (softmax, norms, activations, rope): the generic reference
 * samples rows, gathers them and calls the class's row hooks. */
typedef struct _qf_rowref {
    const uint64_t *rows; /* the checked rows */
    size_t nr, cols;
    const double *x; /* [nr][cols] input 0 of those rows */
    double *up;      /* GLU: input 1 of the checked elements (hook-allocated) */
    int64_t *pos;    /* rope: the position of each checked row (hook-allocated) */
} _qf_rowref;

typedef struct _qf_rowops {
    /* The reference of the gathered rows into out, with options o. */
    qf_status (*ref)(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                     qf_ref_out *out);
    /* The derived bound of the checked elements (ck->bound), or NULL when
     * only a claimed max_ulp bounds the op. */
    qf_status (*bound)(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck);
} _qf_rowops;

/* The fields of a qf_op_norm problem (rmsnorm, layernorm, l2norm). */
void _qf_norm_fields_json(const qf_op_desc *d, struct json_t *o);
int _qf_norm_from_json(qf_op_desc *d, const int64_t *dims, struct json_t *o, void **owned, char *err,
                       size_t err_size);

int _qf_reference_rows(_qf_case *p, const _qf_rowops *ops, _qf_checked *ck, qf_result *r, uint64_t target,
                       uint64_t tile);

/* The tuple serves a row op whose inputs are roles "in" (and "weight"). */
int _qf_tuple_in(const qf_suite_case *c, const qf_dtype_tuple *t);

/* ---- The op classes ------------------------------------------------------ */

extern const _qf_opclass _qf_op_gemm, _qf_op_attention, _qf_op_softmax, _qf_op_log_softmax, _qf_op_rmsnorm,
    _qf_op_layernorm, _qf_op_activation, _qf_op_glu, _qf_op_rope, _qf_op_moe_router, _qf_op_quantize,
    _qf_op_l2norm;

#endif
