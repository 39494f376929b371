/* _ref.h: what the files of 'qualify ref' share (qualify/cli/ref*.c; not
 * installed).
 *
 *   ref.c       the option and op tables, help, argument parsing, dispatch
 *   ref_io.c    messages, option values, loading and checking .npy inputs,
 *               writing outputs, the summary line and exit code
 *   ref_ops.c   gemm, softmax, log-softmax, sum, amax, norms, activations,
 *               GLUs, quantize, dequantize
 *   ref_attn.c  attention, rope, moe-router
 *
 * Every op reads its inputs, checks every shape and value before computing,
 * computes, and only then writes its outputs, so a rejected request leaves
 * no output file behind and prints nothing on stdout.  Helpers that can
 * fail print one message and return the exit code (0 when all is well).
 */
#ifndef QF_CLI__REF_H
#define QF_CLI__REF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "qf_format.h"
#include "qf_npy.h"
#include "qf_ref.h"

/* ---- Options -------------------------------------------------------------------- */

enum {
    O_NONE = 0,
    /* common to every op */
    O_OUT,
    O_STATUS,
    O_CODES,
    O_IN_DTYPE,
    O_AUX_DTYPE,
    O_OUT_DTYPE,
    O_ROUND,
    O_SAT,
    O_NOSAT,
    O_STRICT,
    O_QUIET,
    O_THREADS,
    O_PREC_MAX,
    O_MAX_MEM,
    O_HELP,
    O_COMMON_END,
    /* op specific */
    O_A = O_COMMON_END,
    O_B,
    O_C,
    O_ALPHA,
    O_BETA,
    O_TRANS_A,
    O_TRANS_B,
    O_X,
    O_SCALE,
    O_Q,
    O_K,
    O_V,
    O_CAUSAL,
    O_WIN_L,
    O_WIN_R,
    O_SOFTCAP,
    O_MASK_ADD,
    O_MASK_BOOL,
    O_LSE_OUT,
    O_LSE_DTYPE,
    O_ALIGN,
    O_MASKED_ROW,
    O_EPS,
    O_WEIGHT,
    O_BIAS,
    O_WEIGHT_OFFSET,
    O_APPROX,
    O_GATE,
    O_UP,
    O_THETA,
    O_LAYOUT,
    O_OFFSET,
    O_ROTARY_DIM,
    O_POSITIONS,
    O_INV_FREQ,
    O_LOGITS,
    O_TOP_K,
    O_SCORE,
    O_RENORM,
    O_ROUTE_SCALE,
    O_SEL_BIAS,
    O_TIE_TOL,
    O_INDICES,
    O_TIES,
    O_SCALES,
    O_GROUP,
    O_COUNT
};

typedef struct opt_info {
    const char *name;
    int has_arg;
    const char *arg;
    const char *help;
} opt_info;

extern const opt_info _qf_cr_optinfo[O_COUNT];

#define OPTNAME(id) _qf_cr_optinfo[id].name

/* ---- Parsed arguments ------------------------------------------------------------- */

typedef struct args {
    const struct ref_op *op;
    char cmd[48]; /* "ref gemm", for messages */
    int seen[O_COUNT];
    const char *str[O_COUNT]; /* the argument of each option */
    const qf_format *in_fmt, *aux_fmt, *out_fmt, *lse_fmt;
    qf_ref_opts ro;
    int strict, quiet;
    /* --max-case-memory: the bytes the inputs and outputs may take, and
     * what those loaded or allocated so far take (_qf_cr_load,
     * _qf_cr_out_alloc refuse past it before allocating). */
    size_t mem_budget, mem_used;
} args;

typedef struct ref_op {
    const char *name;
    int (*run)(args *a);
    int kind; /* which variant run computes (run_rows, run_norm, ...) */
    const char *summary;
    const char *synopsis;
    const int *opts; /* op-specific options, 0-terminated */
    const char *notes;
} ref_op;

/* "qualify CMD: message" on stderr; returns QF_EXIT_USAGE. */
int _qf_cr_err(args *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Report an error and leave through the op's cleanup label 'done'. */
#define REF_FAIL(...)                                                                                        \
    do {                                                                                                     \
        rc = _qf_cr_err(a, __VA_ARGS__);                                                                     \
        goto done;                                                                                           \
    } while (0)

/* A real option value (def when absent); finite unless allow_nonfinite. */
int _qf_cr_get_double(args *a, int id, double def, int allow_nonfinite, double *out);
/* An integer option value in lo..hi (def when absent). */
int _qf_cr_get_long(args *a, int id, long def, long lo, long hi, long *out);
/* The index in names (NULL-terminated) of the option's keyword; an
 * unknown one is an error that lists them ("unknown <what> '...'"). */
int _qf_cr_keyword(args *a, int id, const char *what, const char *const *names, int *out);
/* The option must be given. */
int _qf_cr_need(args *a, int id);

/* ---- Tensors ---------------------------------------------------------------------- */

typedef struct tensor {
    const char *opt; /* the option it came from, for messages */
    const char *path;
    int ndim;
    size_t shape[QF_NPY_MAX_DIMS];
    size_t n;
    double *v;
} tensor;

void _qf_cr_tensor_free(tensor *t);
const char *_qf_cr_shape_str(const tensor *t, char *buf, size_t size);
/* The index "(i, j, ..)" of flat element `flat`. */
void _qf_cr_index_str(const tensor *t, size_t flat, char *buf, size_t size);
/* Load an input: its exact binary64 values, checked against (or decoded
 * from the codes of) fmt when fmt is not NULL; fmt_opt names the option
 * that would give fmt. */
int _qf_cr_load(args *a, int id, const qf_format *fmt, const char *fmt_opt, tensor *t);
/* The same with --in-dtype (main inputs) or --aux-dtype (secondary ones). */
int _qf_cr_load_main(args *a, int id, tensor *t);
int _qf_cr_load_aux(args *a, int id, tensor *t);
/* rows x cols view of a tensor reduced along its last axis. */
int _qf_cr_last_axis(args *a, const tensor *t, size_t *rows, size_t *cols);
/* t must be 1-d with n elements (what: the dimension it must match). */
int _qf_cr_check_1d(args *a, const tensor *t, size_t n, const char *what);

/* ---- Outputs ------------------------------------------------------------------------ */

/* Fail early on an output that cannot be written, before computing. */
int _qf_cr_check_writable(args *a, int id);
/* -o, --status, --codes writable; prepare also allocates o for n elements. */
int _qf_cr_common_checks(args *a);
int _qf_cr_prepare(args *a, qf_ref_out *o, size_t n);
int _qf_cr_out_alloc(args *a, qf_ref_out *o, size_t n);
/* Write one .npy to the file of option id (nothing when it is absent). */
int _qf_cr_write_npy(args *a, int id, qf_npy_dtype t, int ndim, const size_t *shape, const void *data);
/* -o, --status, --codes of the main result. */
int _qf_cr_write_main(args *a, const qf_ref_out *o, size_t n, int ndim, const size_t *shape);
/* The summary line, the undecided warning, the exit code.  extra (with its
 * label) is a second result counted beside o; note replaces the working
 * precision in the summary. */
int _qf_cr_finish(args *a, const qf_ref_out *o, const qf_ref_out *extra, const char *extra_label,
                  const char *note);
/* The reference's own refusal of a request that passed the checks. */
int _qf_cr_ref_failed(args *a, qf_status st);
/* The common tail of an op with one result: st from the reference, then
 * write o (n elements of shape ndim/shape) and finish. */
int _qf_cr_conclude(args *a, qf_status st, const qf_ref_out *o, size_t n, int ndim, const size_t *shape);

/* ---- The ops (ref_ops.c, ref_attn.c) ------------------------------------------------ */

int _qf_cr_run_gemm(args *a);
int _qf_cr_run_rows(args *a);  /* kind: 0 softmax, 1 log-softmax, 2 sum, 3 amax */
int _qf_cr_run_norm(args *a);  /* kind: 0 rmsnorm, 1 layernorm */
int _qf_cr_run_act(args *a);   /* kind: a qf_ref_act */
int _qf_cr_run_glu(args *a);   /* kind: a qf_ref_act */
int _qf_cr_run_quant(args *a); /* kind: 0 quantize, 1 dequantize */
int _qf_cr_run_attention(args *a);
int _qf_cr_run_rope(args *a);
int _qf_cr_run_moe(args *a);

#endif
