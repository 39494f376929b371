/* cli/ref.c: 'qualify ref OP': exact or correctly rounded references
 * computed from NumPy .npy files (docs/refs.md).
 *
 * Every op reads its inputs, checks every shape and value before computing,
 * computes, and only then writes its outputs, so a rejected request leaves
 * no output file behind and prints nothing on stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "qf_dot.h"
#include "qf_format.h"
#include "qf_npy.h"
#include "qf_ref.h"

/* ---- Options ------------------------------------------------------------------ */

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

/* clang-format off */
static const opt_info optinfo[O_COUNT] = {
    [O_OUT]          = { "out",            1, "FILE", "output values, float64 .npy: each the exact value of its rounded result (required)" },
    [O_STATUS]       = { "status",         1, "FILE", "per-element status, uint8 .npy: 0 exact, 1 rounded, 2 undecided, 3 undefined" },
    [O_CODES]        = { "codes",          1, "FILE", "per-element codes in --out-dtype, uint8/16/32/64 .npy" },
    [O_IN_DTYPE]     = { "in-dtype",       1, "NAME", "format of the main inputs: float data must be exactly representable in it;\n"
                                                      "integer or raw (|V2, <f1) files of its width are read as its codes" },
    [O_AUX_DTYPE]    = { "aux-dtype",      1, "NAME", "the same for the secondary inputs: --c, --weight, --bias, --mask-add,\n"
                                                      "--scales, --sel-bias, --inv-freq (default: their file's values as they are)" },
    [O_OUT_DTYPE]    = { "out-dtype",      1, "NAME", "format the results are rounded into (default float64)" },
    [O_ROUND]        = { "round",          1, "MODE", "rne (default), rna, rtz, up, down; e8m0 also floor, ceil, even, rceil" },
    [O_SAT]          = { "saturate",       0, NULL,   "overflow gives +-max of --out-dtype" },
    [O_NOSAT]        = { "no-saturate",    0, NULL,   "overflow gives Inf, or NaN, or max, per the format (default)" },
    [O_STRICT]       = { "strict",         0, NULL,   "exit 1 when some element is undecided (default: exit 0, warn)" },
    [O_QUIET]        = { "quiet",          0, NULL,   "no summary line on stdout" },
    [O_THREADS]      = { "threads",        1, "N",    "OpenMP threads (default: all; the results do not depend on it)" },
    [O_PREC_MAX]     = { "prec-max",       1, "BITS", "largest MPFR working precision tried before 'undecided' (default 4096)" },
    [O_HELP]         = { "help",           0, NULL,   "this text" },
    [O_A]            = { "a",              1, "FILE", "A: [M, K], or [K, M] with --trans-a; [batch, ...] for a batch" },
    [O_B]            = { "b",              1, "FILE", "B: [K, N], or [N, K] with --trans-b; [batch, ...] for a batch" },
    [O_C]            = { "c",              1, "FILE", "C: [M, N] or [batch, M, N] (a 2-d C is shared by the batch)" },
    [O_ALPHA]        = { "alpha",          1, "X",    "alpha (default 1)" },
    [O_BETA]         = { "beta",           1, "X",    "beta (default 1 with --c; beta 0 does not read C)" },
    [O_TRANS_A]      = { "trans-a",        0, NULL,   "op(A) = A^T" },
    [O_TRANS_B]      = { "trans-b",        0, NULL,   "op(B) = B^T" },
    [O_X]            = { "x",              1, "FILE", "input" },
    [O_SCALE]        = { "scale",          1, "X",    "logit scale (softmax: default 1; attention: default 1/sqrt(head_dim),\n"
                                                      "the real number, not a rounded double)" },
    [O_Q]            = { "q",              1, "FILE", "queries [batch, heads, seq_q, head_dim] ([heads, seq_q, d] or [seq_q, d] too)" },
    [O_K]            = { "k",              1, "FILE", "keys [batch, kv_heads, seq_k, head_dim]; kv_heads divides heads (GQA/MQA)" },
    [O_V]            = { "v",              1, "FILE", "values [batch, kv_heads, seq_k, head_dim_v]" },
    [O_CAUSAL]       = { "causal",         0, NULL,   "causal mask (window-right 0)" },
    [O_WIN_L]        = { "window-left",    1, "N",    "keep keys j >= P - N (P: the query's position; default unbounded)" },
    [O_WIN_R]        = { "window-right",   1, "N",    "keep keys j <= P + N (default unbounded)" },
    [O_SOFTCAP]      = { "softcap",        1, "X",    "logit soft cap: s = X tanh(s / X) (default none)" },
    [O_MASK_ADD]     = { "mask-add",       1, "FILE", "additive mask [.., seq_q, seq_k], leading dims 1 or batch/heads (-inf allowed)" },
    [O_MASK_BOOL]    = { "mask-bool",      1, "FILE", "boolean mask [.., seq_q, seq_k], nonzero = keep" },
    [O_LSE_OUT]      = { "lse-out",        1, "FILE", "log-sum-exp per query row, float64 .npy [batch, heads, seq_q]" },
    [O_LSE_DTYPE]    = { "lse-dtype",      1, "NAME", "format the lse is rounded into (default: --out-dtype)" },
    [O_ALIGN]        = { "align",          1, "WHERE","top-left (default; PyTorch SDPA) or bottom-right (FlashAttention):\n"
                                                      "query i sits at position i, or i + seq_k - seq_q" },
    [O_MASKED_ROW]   = { "masked-row-value", 1, "X",  "output of a row with no kept key (default 0; PyTorch gives nan)" },
    [O_EPS]          = { "eps",            1, "X",    "epsilon (default 1e-6 rmsnorm, 1e-5 layernorm; the binary64 nearest)" },
    [O_WEIGHT]       = { "weight",         1, "FILE", "weight [cols]" },
    [O_BIAS]         = { "bias",           1, "FILE", "bias [cols]" },
    [O_WEIGHT_OFFSET]= { "weight-offset",  1, "X",    "factor (X + weight); 1 for Gemma's (1 + w) (default 0)" },
    [O_APPROX]       = { "approx",         1, "KIND", "erf (default) or tanh" },
    [O_GATE]         = { "gate",           1, "FILE", "gate input (activation side)" },
    [O_UP]           = { "up",             1, "FILE", "up input (linear side), same shape as --gate" },
    [O_THETA]        = { "theta",          1, "X",    "base of the frequencies theta^(-2i/rotary_dim) (default 10000)" },
    [O_LAYOUT]       = { "layout",         1, "KIND", "interleaved (GPT-J: pairs 2i, 2i+1) or half (GPT-NeoX, Llama:\n"
                                                      "pairs i, i + rotary_dim/2); required" },
    [O_OFFSET]       = { "offset",         1, "N",    "position of the first token (default 0)" },
    [O_ROTARY_DIM]   = { "rotary-dim",     1, "N",    "rotated components per head, even (default head_dim)" },
    [O_POSITIONS]    = { "positions",      1, "FILE", "integer positions [tokens] (or [batch, tokens]); overrides --offset" },
    [O_INV_FREQ]     = { "inv-freq",       1, "FILE", "the frequency table [rotary_dim / 2] to use instead of theta" },
    [O_LOGITS]       = { "logits",         1, "FILE", "router logits [tokens, experts]" },
    [O_TOP_K]        = { "top-k",          1, "K",    "experts per token (required)" },
    [O_SCORE]        = { "score",          1, "KIND", "softmax (default) or sigmoid" },
    [O_RENORM]       = { "renorm",         0, NULL,   "divide the selected weights by their sum" },
    [O_ROUTE_SCALE]  = { "route-scale",    1, "X",    "multiply the weights by X (default 1)" },
    [O_SEL_BIAS]     = { "sel-bias",       1, "FILE", "selection bias [experts] (DeepSeek-V3): steers selection only" },
    [O_TIE_TOL]      = { "tie-tol",        1, "X",    "keys within X count as ties (default 0)" },
    [O_INDICES]      = { "indices",        1, "FILE", "selected experts, int32 .npy [tokens, top_k]" },
    [O_TIES]         = { "ties",           1, "FILE", "tie flags, uint8 .npy [tokens, top_k]: 1 set tie, 2 order tie" },
    [O_SCALES]       = { "scales",         1, "FILE", "scales, one per group (default: none, i.e. 1)" },
    [O_GROUP]        = { "group",          1, "G",    "elements per scale, along the flattened input (default 0: one scale)" },
};
/* clang-format on */

/* ---- Parsed arguments ------------------------------------------------------------- */

typedef struct args {
    const struct ref_op *op;
    char cmd[48]; /* "ref gemm", for messages */
    int seen[O_COUNT];
    const char *str[O_COUNT]; /* the argument of each option */
    const qf_format *in_fmt, *aux_fmt, *out_fmt, *lse_fmt;
    qf_ref_opts ro;
    int strict, quiet;
} args;

typedef struct ref_op {
    const char *name;
    int (*run)(args *a);
    const char *summary;
    const char *synopsis;
    const int *opts; /* op-specific options, 0-terminated */
    const char *notes;
} ref_op;

static int err(args *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int err(args *a, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "qualify %s: ", a->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return QF_EXIT_USAGE;
}

#define OPTNAME(id) optinfo[id].name

/* ---- Scalars -------------------------------------------------------------------- */

static int parse_double(const char *s, double *out)
{
    char *end;
    if (*s == '\0')
        return 0;
    errno = 0;
    *out = strtod(s, &end);
    return end != s && *end == '\0';
}

static int parse_long(const char *s, long *out)
{
    char *end;
    if (*s == '\0')
        return 0;
    errno = 0;
    *out = strtol(s, &end, 10);
    return *end == '\0' && errno == 0;
}

/* A real option value; finite unless allow_nonfinite. */
static int get_double(args *a, int id, double def, int allow_nonfinite, double *out)
{
    *out = def;
    if (!a->seen[id])
        return 0;
    if (!parse_double(a->str[id], out) || (!allow_nonfinite && !isfinite(*out)))
        return err(a, "--%s: '%s' is not a %snumber (decimal or C99 hex float)", OPTNAME(id), a->str[id],
                   allow_nonfinite ? "" : "finite ");
    return 0;
}

static int get_long(args *a, int id, long def, long lo, long hi, long *out)
{
    *out = def;
    if (!a->seen[id])
        return 0;
    if (!parse_long(a->str[id], out) || *out < lo || *out > hi)
        return err(a, "--%s: '%s' is not an integer in %ld..%ld", OPTNAME(id), a->str[id], lo, hi);
    return 0;
}

/* ---- Tensors -------------------------------------------------------------------- */

typedef struct tensor {
    const char *opt; /* the option it came from, for messages */
    const char *path;
    int ndim;
    size_t shape[QF_NPY_MAX_DIMS];
    size_t n;
    double *v;
} tensor;

static void tensor_free(tensor *t)
{
    free(t->v);
    t->v = NULL;
}

static const char *shape_str(const tensor *t, char *buf, size_t size)
{
    qf_npy_shape_str(t->ndim, t->shape, buf, size);
    return buf;
}

static void index_str(const tensor *t, size_t flat, char *buf, size_t size)
{
    size_t idx[QF_NPY_MAX_DIMS];
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? flat % t->shape[d] : 0;
        flat = t->shape[d] ? flat / t->shape[d] : 0;
    }
    qf_npy_shape_str(t->ndim, idx, buf, size);
}

static int is_code_dtype(qf_npy_dtype t)
{
    char k = qf_npy_dtype_kind(t);
    return k == 'u' || k == 'i' || k == 'V';
}

/* Is this code a code of f (no bits outside the format)? */
static int valid_code(const qf_format *f, uint64_t c)
{
    if (f->id == QF_TF32)
        return (c & 0x1FFFu) == 0 && c <= 0xFFFFFFFFu;
    return f->bits >= 64 || (c >> f->bits) == 0;
}

static int representable(const qf_format *f, double x)
{
    uint64_t c = qf_format_encode(f, x, QF_ROUND_RNE, 0, 32, 0);
    double y = qf_format_decode(f, c);
    return isnan(x) ? isnan(y) : y == x;
}

/* Load an input: its exact binary64 values, checked against (or decoded
 * from the codes of) fmt when fmt is not NULL.  Returns an exit code. */
static int load(args *a, int id, const qf_format *fmt, const char *fmt_opt, tensor *t)
{
    qf_npy arr;
    char msg[768], shp[256];
    const char *path = a->str[id];
    size_t i, bad = 0;
    qf_status st;
    memset(t, 0, sizeof *t);
    t->opt = OPTNAME(id);
    t->path = path;
    if ((st = qf_npy_read(path, &arr, msg, sizeof msg)) != QF_OK)
        return err(a, "--%s: %s", t->opt, msg);
    t->ndim = arr.ndim;
    memcpy(t->shape, arr.shape, sizeof t->shape);
    t->n = arr.count;
    qf_npy_shape_str(arr.ndim, arr.shape, shp, sizeof shp);
    t->v = malloc((t->n ? t->n : 1) * sizeof *t->v);
    if (t->v == NULL) {
        qf_npy_free(&arr);
        return err(a, "--%s: %s: out of memory for shape %s", t->opt, path, shp);
    }
    /* Codes: raw elements always, integers when fmt is a float format. */
    if (qf_npy_dtype_kind(arr.dtype) == 'V' ||
        (fmt && fmt->kind != QF_KIND_INT && is_code_dtype(arr.dtype))) {
        uint64_t *codes;
        size_t bits = 8 * qf_npy_dtype_size(arr.dtype);
        if (fmt == NULL) {
            qf_npy_free(&arr);
            tensor_free(t);
            return err(
                a, "--%s: %s: elements of descr '%s' are codes of a format that is not named; give --%s NAME",
                t->opt, path, qf_npy_dtype_descr(arr.dtype), fmt_opt);
        }
        if (bits != (size_t)fmt->storage_bits) {
            qf_npy_free(&arr);
            tensor_free(t);
            return err(
                a, "--%s: %s: %s elements cannot hold %s codes (%d-bit); give %d-bit codes or float values",
                t->opt, path, qf_npy_dtype_name(arr.dtype), fmt->name, fmt->storage_bits, fmt->storage_bits);
        }
        codes = malloc((t->n ? t->n : 1) * sizeof *codes);
        if (codes == NULL) {
            qf_npy_free(&arr);
            tensor_free(t);
            return err(a, "--%s: %s: out of memory", t->opt, path);
        }
        qf_npy_get_bits(&arr, codes);
        qf_npy_free(&arr);
        for (i = 0; i < t->n; i++) {
            if (!valid_code(fmt, codes[i])) {
                char idx[256];
                uint64_t c = codes[i];
                index_str(t, i, idx, sizeof idx);
                free(codes);
                tensor_free(t);
                return err(a, "--%s: %s: element %zu (index %s) = 0x%" PRIX64 " is not a %s code", t->opt,
                           path, i, idx, c, fmt->name);
            }
            t->v[i] = qf_format_decode(fmt, codes[i]);
        }
        free(codes);
        return 0;
    }
    st = qf_npy_get_f64(&arr, t->v, &bad);
    qf_npy_free(&arr);
    if (st != QF_OK) {
        char idx[256];
        index_str(t, bad, idx, sizeof idx);
        tensor_free(t);
        return err(a, "--%s: %s: element %zu (index %s) is an integer that binary64 cannot hold exactly",
                   t->opt, path, bad, idx);
    }
    if (fmt)
        for (i = 0; i < t->n; i++)
            if (!representable(fmt, t->v[i])) {
                char idx[256];
                double x = t->v[i];
                index_str(t, i, idx, sizeof idx);
                tensor_free(t);
                return err(a,
                           "--%s: %s: element %zu (index %s) = %.17g (%a) is not exactly representable in %s",
                           t->opt, path, i, idx, x, x, fmt->name);
            }
    return 0;
}

static int load_main(args *a, int id, tensor *t)
{
    return load(a, id, a->in_fmt, "in-dtype", t);
}

static int load_aux(args *a, int id, tensor *t)
{
    return load(a, id, a->aux_fmt, "aux-dtype", t);
}

static int need(args *a, int id)
{
    if (!a->seen[id])
        return err(a, "--%s is required; see 'qualify %s --help'", OPTNAME(id), a->cmd);
    return 0;
}

/* rows x cols view of a tensor reduced along its last axis. */
static int last_axis(args *a, const tensor *t, size_t *rows, size_t *cols)
{
    size_t r = 1;
    int d;
    if (t->ndim < 1)
        return err(a, "--%s: %s: a scalar (shape ()); the op needs at least one dimension", t->opt, t->path);
    for (d = 0; d < t->ndim - 1; d++)
        r *= t->shape[d];
    *rows = r;
    *cols = t->shape[t->ndim - 1];
    return 0;
}

static int check_1d(args *a, const tensor *t, size_t n, const char *what)
{
    char shp[256];
    if (t->ndim != 1 || t->shape[0] != n)
        return err(a, "--%s: %s: shape %s does not match %s = %zu (want (%zu,))", t->opt, t->path,
                   shape_str(t, shp, sizeof shp), what, n, n);
    return 0;
}

/* ---- Outputs -------------------------------------------------------------------- */

/* Fail early on an output that cannot be written, before computing. */
static int check_writable(args *a, int id)
{
    const char *p;
    char dir[4096];
    const char *slash;
    struct stat sb;
    if (!a->seen[id])
        return 0;
    p = a->str[id];
    if (*p == '\0')
        return err(a, "--%s: empty file name", OPTNAME(id));
    if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
        return err(a, "--%s: %s: is a directory", OPTNAME(id), p);
    slash = strrchr(p, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == p)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - p), p);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return err(a, "--%s: %s: directory '%s' does not exist", OPTNAME(id), p, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return err(a, "--%s: %s: directory '%s' is not writable", OPTNAME(id), p, dir);
    return 0;
}

static int write_npy(args *a, int id, qf_npy_dtype t, int ndim, const size_t *shape, const void *data)
{
    char msg[768];
    if (!a->seen[id])
        return 0;
    if (qf_npy_write_data(a->str[id], t, ndim, shape, data, msg, sizeof msg) != QF_OK)
        return err(a, "--%s: %s", OPTNAME(id), msg);
    return 0;
}

static qf_npy_dtype code_dtype(const qf_format *f)
{
    return f->storage_bits <= 8    ? QF_NPY_UINT8
           : f->storage_bits <= 16 ? QF_NPY_UINT16
           : f->storage_bits <= 32 ? QF_NPY_UINT32
                                   : QF_NPY_UINT64;
}

/* -o, --status, --codes of the main result. */
static int write_main(args *a, const qf_ref_out *o, size_t n, int ndim, const size_t *shape)
{
    const qf_format *f = a->out_fmt;
    int rc;
    if ((rc = write_npy(a, O_OUT, QF_NPY_FLOAT64, ndim, shape, o->value)) != 0)
        return rc;
    if ((rc = write_npy(a, O_STATUS, QF_NPY_UINT8, ndim, shape, o->status)) != 0)
        return rc;
    if (a->seen[O_CODES]) {
        size_t bytes = qf_format_array_bytes(f, n ? n : 1), i;
        void *c = malloc(bytes);
        if (c == NULL)
            return err(a, "--codes: out of memory");
        for (i = 0; i < n; i++) {
            switch (code_dtype(f)) {
            case QF_NPY_UINT8: ((uint8_t *)c)[i] = (uint8_t)o->code[i]; break;
            case QF_NPY_UINT16: ((uint16_t *)c)[i] = (uint16_t)o->code[i]; break;
            case QF_NPY_UINT32: ((uint32_t *)c)[i] = (uint32_t)o->code[i]; break;
            default: ((uint64_t *)c)[i] = o->code[i]; break;
            }
        }
        rc = write_npy(a, O_CODES, code_dtype(f), ndim, shape, c);
        free(c);
    }
    return rc;
}

static void print_counts(FILE *fp, const char *label, const qf_ref_out *o)
{
    fprintf(fp, "%s %zu exact, %zu rounded, %zu undecided, %zu undefined", label, o->n_exact, o->n_rounded,
            o->n_undecided, o->n_undefined);
}

/* The summary line, the undecided warning, the exit code. */
static int finish(args *a, const qf_ref_out *o, const qf_ref_out *extra, const char *extra_label,
                  const char *note)
{
    size_t und = o->n_undecided + (extra ? extra->n_undecided : 0);
    int prec = o->max_prec;
    if (extra && extra->max_prec > prec)
        prec = extra->max_prec;
    if (!a->quiet) {
        size_t total = o->n_exact + o->n_rounded + o->n_undecided + o->n_undefined;
        printf("ref %s: %zu element%s:", a->op->name, total, total == 1 ? "" : "s");
        print_counts(stdout, "", o);
        if (extra) {
            printf("; %s:", extra_label);
            print_counts(stdout, "", extra);
        }
        printf(" (%s, %s", a->out_fmt->name, qf_round_name(a->ro.round));
        if (note)
            printf(", %s", note);
        else if (prec > 0)
            printf(", working precision up to %d bits", prec);
        else
            printf(", computed exactly");
        printf(")\n");
    }
    if (und > 0) {
        fprintf(stderr,
                "qualify %s: warning: %zu element%s undecided at %d bits (status 2); their values are best "
                "guesses, not references\n",
                a->cmd, und, und == 1 ? "" : "s", prec);
        if (a->strict)
            return QF_EXIT_FAIL;
    }
    return QF_EXIT_OK;
}

static int ref_failed(args *a, qf_status st)
{
    return err(a, "the reference refused the request: %s", qf_status_str(st));
}

static int out_alloc(args *a, qf_ref_out *o, size_t n)
{
    if (qf_ref_out_alloc(o, n ? n : 1) != QF_OK)
        return err(a, "out of memory for %zu outputs", n);
    return 0;
}

/* ---- gemm ------------------------------------------------------------------------- */

static int run_gemm(args *a)
{
    tensor A, B, C;
    int rc, ta = a->seen[O_TRANS_A], tb = a->seen[O_TRANS_B], have_c = a->seen[O_C], ndim;
    size_t batch = 1, m, k, kb, n, total, i, shape[3];
    double alpha, beta;
    qf_gemm_desc d;
    qf_ref_out o;
    qf_status st;
    char s1[256], s2[256];

    memset(&o, 0, sizeof o);
    memset(&C, 0, sizeof C);
    if ((rc = need(a, O_A)) || (rc = need(a, O_B)))
        return rc;
    if ((rc = get_double(a, O_ALPHA, 1.0, 0, &alpha)) ||
        (rc = get_double(a, O_BETA, have_c ? 1.0 : 0.0, 0, &beta)))
        return rc;
    if (a->seen[O_BETA] && !have_c)
        return err(a, "--beta needs --c");
    if ((rc = load_main(a, O_A, &A)))
        return rc;
    if ((rc = load_main(a, O_B, &B))) {
        tensor_free(&A);
        return rc;
    }
#define GEMM_FAIL(...)                                                                                       \
    do {                                                                                                     \
        rc = err(a, __VA_ARGS__);                                                                            \
        goto done;                                                                                           \
    } while (0)
    if (A.ndim < 2 || A.ndim > 3)
        GEMM_FAIL("--a: %s: shape %s: A must be 2-d [M, K] or 3-d [batch, M, K]", A.path,
                  shape_str(&A, s1, 256));
    if (B.ndim < 2 || B.ndim > 3)
        GEMM_FAIL("--b: %s: shape %s: B must be 2-d [K, N] or 3-d [batch, K, N]", B.path,
                  shape_str(&B, s1, 256));
    m = A.shape[A.ndim - (ta ? 1 : 2)];
    k = A.shape[A.ndim - (ta ? 2 : 1)];
    kb = B.shape[B.ndim - (tb ? 1 : 2)];
    n = B.shape[B.ndim - (tb ? 2 : 1)];
    if (kb != k)
        GEMM_FAIL("--b: shape %s does not match K=%zu of --a%s (shape %s)%s", shape_str(&B, s1, 256), k,
                  ta ? " (transposed)" : "", shape_str(&A, s2, 256),
                  tb ? "; with --trans-b, B is [N, K]" : "; B is [K, N] (or [N, K] with --trans-b)");
    if (A.ndim == 3)
        batch = A.shape[0];
    if (B.ndim == 3) {
        if (A.ndim == 3 && B.shape[0] != batch)
            GEMM_FAIL("--b: shape %s: batch %zu does not match batch %zu of --a", shape_str(&B, s1, 256),
                      B.shape[0], batch);
        batch = B.shape[0];
    }
    if (have_c) {
        if ((rc = load_aux(a, O_C, &C)))
            goto done;
        if (!((C.ndim == 2 && C.shape[0] == m && C.shape[1] == n) ||
              (C.ndim == 3 && C.shape[0] == batch && C.shape[1] == m && C.shape[2] == n)))
            GEMM_FAIL("--c: shape %s does not match the result [%s%zu, %zu] (M=%zu from --a, N=%zu from --b)",
                      shape_str(&C, s1, 256), A.ndim == 3 || B.ndim == 3 ? "batch, " : "", m, n, m, n);
    }
    if ((rc = check_writable(a, O_OUT)) || (rc = check_writable(a, O_STATUS)) ||
        (rc = check_writable(a, O_CODES)))
        goto done;
    if (m != 0 && n != 0 && batch > SIZE_MAX / m / n)
        GEMM_FAIL("the result [%zu, %zu, %zu] is too large", batch, m, n);
    total = batch * m * n;
    if ((rc = out_alloc(a, &o, total)))
        goto done;

    d = qf_gemm_desc_default();
    d.layout = QF_ROW_MAJOR;
    d.trans_a = ta ? QF_TRANS : QF_NO_TRANS;
    d.trans_b = tb ? QF_TRANS : QF_NO_TRANS;
    d.m = m;
    d.n = n;
    d.k = k;
    d.alpha = alpha;
    d.a = A.v;
    d.lda = A.shape[A.ndim - 1] ? A.shape[A.ndim - 1] : 1; /* K = 0: nothing is read */
    d.b = B.v;
    d.ldb = B.shape[B.ndim - 1] ? B.shape[B.ndim - 1] : 1;
    d.beta = have_c ? beta : 0.0;
    d.c = have_c ? C.v : NULL;
    d.ldc = n;
    d.batch = batch;
    d.stride_a = A.ndim == 3 ? (ptrdiff_t)(m * k) : 0;
    d.stride_b = B.ndim == 3 ? (ptrdiff_t)(k * n) : 0;
    d.stride_c = have_c && C.ndim == 3 ? (ptrdiff_t)(m * n) : 0;
    d.fa = a->in_fmt;
    d.fb = a->in_fmt;
    d.out = a->out_fmt;
    d.round = a->ro.round;
    d.saturate = a->ro.saturate;
    d.ldd = n;
    d.stride_d = (ptrdiff_t)(m * n);
    d.d_code = o.code;
    d.d_value = o.value;
    d.d_status = o.status; /* decided on the exact sums: never undecided */
    d.threads = a->ro.threads;
    if (total > 0 && (st = qf_gemm(&d)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    for (i = 0; i < total; i++) {
        if (o.status[i] == QF_REF_EXACT)
            o.n_exact++;
        else if (o.status[i] == QF_REF_ROUNDED)
            o.n_rounded++;
        else
            o.n_undefined++;
    }
    ndim = A.ndim == 3 || B.ndim == 3 ? 3 : 2;
    shape[0] = batch;
    shape[ndim - 2] = m;
    shape[ndim - 1] = n;
    if ((rc = write_main(a, &o, total, ndim, shape)) != 0)
        goto done;
    rc = finish(a, &o, NULL, NULL, "exact dot products, rounded once");
done:
#undef GEMM_FAIL
    qf_ref_out_free(&o);
    tensor_free(&A);
    tensor_free(&B);
    tensor_free(&C);
    return rc;
}

/* ---- Row ops: softmax, log-softmax, sum, amax -------------------------------------- */

static int common_checks(args *a)
{
    int rc;
    if ((rc = check_writable(a, O_OUT)) || (rc = check_writable(a, O_STATUS)) ||
        (rc = check_writable(a, O_CODES)))
        return rc;
    return 0;
}

static int run_rows(args *a, int kind)
{
    tensor X;
    size_t rows = 0, cols = 0, nout;
    double scale = 1.0;
    qf_ref_out o;
    qf_status st;
    int rc;
    memset(&o, 0, sizeof o);
    if ((rc = need(a, O_X)))
        return rc;
    if ((rc = get_double(a, O_SCALE, 1.0, 0, &scale)))
        return rc;
    if ((rc = load_main(a, O_X, &X)))
        return rc;
    if ((rc = last_axis(a, &X, &rows, &cols)) || (rc = common_checks(a)))
        goto done;
    nout = kind >= 2 ? rows : X.n;
    if ((rc = out_alloc(a, &o, nout)))
        goto done;
    switch (kind) {
    case 0: st = qf_ref_softmax(&a->ro, X.v, rows, cols, scale, &o); break;
    case 1: st = qf_ref_log_softmax(&a->ro, X.v, rows, cols, scale, &o); break;
    case 2: st = qf_ref_sum(&a->ro, X.v, rows, cols, &o); break;
    default: st = qf_ref_amax(&a->ro, X.v, rows, cols, &o); break;
    }
    if (st != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, nout, kind >= 2 ? X.ndim - 1 : X.ndim, X.shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    qf_ref_out_free(&o);
    tensor_free(&X);
    return rc;
}

static int run_softmax(args *a)
{
    return run_rows(a, 0);
}
static int run_log_softmax(args *a)
{
    return run_rows(a, 1);
}
static int run_sum(args *a)
{
    return run_rows(a, 2);
}
static int run_amax(args *a)
{
    return run_rows(a, 3);
}

/* ---- attention ---------------------------------------------------------------------- */

/* Leading dims of a mask [.., seq_q, seq_k] against (batch, heads): the
 * mask's strides (0 broadcasts), or an error. */
static int mask_strides(args *a, const tensor *t, size_t B, size_t H, size_t sq, size_t sk, size_t *sb,
                        size_t *sh)
{
    char shp[256];
    size_t mb = 1, mh = 1, plane = sq * sk;
    if (t->ndim < 2 || t->ndim > 4 || t->shape[t->ndim - 2] != sq || t->shape[t->ndim - 1] != sk)
        goto bad;
    if (t->ndim == 4) {
        mb = t->shape[0];
        mh = t->shape[1];
    } else if (t->ndim == 3) { /* [heads or 1, seq_q, seq_k] */
        mh = t->shape[0];
    }
    if ((mb != 1 && mb != B) || (mh != 1 && mh != H))
        goto bad;
    *sh = mh == 1 ? 0 : plane;
    *sb = mb == 1 ? 0 : mh * plane;
    return 0;
bad:
    return err(a,
               "--%s: %s: shape %s does not broadcast to [batch=%zu, heads=%zu, seq_q=%zu, seq_k=%zu] (give "
               "[seq_q, seq_k], [heads or 1, seq_q, seq_k] or [batch or 1, heads or 1, seq_q, seq_k])",
               t->opt, t->path, shape_str(t, shp, sizeof shp), B, H, sq, sk);
}

/* Copy a broadcast mask into the full [B][H][sq][sk] layout. */
static double *expand_mask(const double *m, size_t B, size_t H, size_t plane, size_t sb, size_t sh)
{
    size_t total = B * H * plane;
    double *o = malloc((total ? total : 1) * sizeof *o);
    size_t b, h;
    if (o == NULL)
        return NULL;
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            memcpy(o + (b * H + h) * plane, m + b * sb + h * sh, plane * sizeof *o);
    return o;
}

static int run_attention(args *a)
{
    tensor Q, K, V, MA, MB;
    qf_ref_attn_params p;
    qf_ref_out o, lse;
    size_t B, H, HK, SQ, SK, D, DV, i, sb_a = 0, sh_a = 0, sb_b = 0, sh_b = 0, shape[4];
    int rc, qn;
    long wl, wr;
    double *ma_full = NULL, *mb_full = NULL;
    uint8_t *mbool = NULL;
    qf_status st;
    char s1[256], s2[256];

    memset(&o, 0, sizeof o);
    memset(&lse, 0, sizeof lse);
    memset(&Q, 0, sizeof Q);
    memset(&K, 0, sizeof K);
    memset(&V, 0, sizeof V);
    memset(&MA, 0, sizeof MA);
    memset(&MB, 0, sizeof MB);
    qf_ref_attn_params_init(&p);
    if ((rc = need(a, O_Q)) || (rc = need(a, O_K)) || (rc = need(a, O_V)))
        return rc;
    if ((rc = get_double(a, O_SCALE, 0.0, 0, &p.scale)) ||
        (rc = get_double(a, O_SOFTCAP, 0.0, 0, &p.softcap)) ||
        (rc = get_double(a, O_MASKED_ROW, 0.0, 1, &p.masked_row_value)) ||
        (rc = get_long(a, O_WIN_L, -1, -1, LONG_MAX, &wl)) ||
        (rc = get_long(a, O_WIN_R, -1, -1, LONG_MAX, &wr)))
        return rc;
    if (a->seen[O_SCALE] && p.scale == 0)
        return err(a, "--scale: 0 would make every logit 0; omit --scale for 1/sqrt(head_dim) (exactly)");
    if (p.softcap < 0)
        return err(a, "--softcap: '%s' must be positive (omit it for no cap)", a->str[O_SOFTCAP]);
    if (a->seen[O_CAUSAL] && a->seen[O_WIN_R] && wr != 0)
        return err(a, "--causal and --window-right %ld contradict each other (--causal is window-right 0)",
                   wr);
    p.window_left = wl;
    p.window_right = wr;
    p.causal = a->seen[O_CAUSAL];
    if (a->seen[O_ALIGN]) {
        if (!strcmp(a->str[O_ALIGN], "top-left"))
            p.align_bottom_right = 0;
        else if (!strcmp(a->str[O_ALIGN], "bottom-right"))
            p.align_bottom_right = 1;
        else
            return err(a, "--align: unknown alignment '%s'; valid: top-left bottom-right", a->str[O_ALIGN]);
    }
    p.lse_format = a->lse_fmt;

#define AT_FAIL(...)                                                                                         \
    do {                                                                                                     \
        rc = err(a, __VA_ARGS__);                                                                            \
        goto done;                                                                                           \
    } while (0)
    if ((rc = load_main(a, O_Q, &Q)) || (rc = load_main(a, O_K, &K)) || (rc = load_main(a, O_V, &V)))
        goto done;
    qn = Q.ndim;
    if (qn < 2 || qn > 4)
        AT_FAIL("--q: %s: shape %s: q must be [batch, heads, seq_q, head_dim], [heads, seq_q, head_dim] or "
                "[seq_q, head_dim]",
                Q.path, shape_str(&Q, s1, 256));
    if (K.ndim != qn)
        AT_FAIL("--k: shape %s has %d dimensions, --q has %d (shape %s)", shape_str(&K, s1, 256), K.ndim, qn,
                shape_str(&Q, s2, 256));
    if (V.ndim != qn)
        AT_FAIL("--v: shape %s has %d dimensions, --q has %d (shape %s)", shape_str(&V, s1, 256), V.ndim, qn,
                shape_str(&Q, s2, 256));
    B = qn == 4 ? Q.shape[0] : 1;
    H = qn >= 3 ? Q.shape[qn - 3] : 1;
    HK = qn >= 3 ? K.shape[qn - 3] : 1;
    SQ = Q.shape[qn - 2];
    D = Q.shape[qn - 1];
    SK = K.shape[qn - 2];
    DV = V.shape[qn - 1];
    if (qn == 4 && K.shape[0] != B)
        AT_FAIL("--k: shape %s: batch %zu does not match batch %zu of --q", shape_str(&K, s1, 256),
                K.shape[0], B);
    if (HK == 0 || H % HK != 0)
        AT_FAIL("--k: shape %s: %zu kv heads do not divide the %zu heads of --q (GQA needs heads %% kv_heads "
                "== 0)",
                shape_str(&K, s1, 256), HK, H);
    if (K.shape[qn - 1] != D)
        AT_FAIL("--k: shape %s: head_dim %zu does not match head_dim %zu of --q", shape_str(&K, s1, 256),
                K.shape[qn - 1], D);
    if ((qn == 4 && V.shape[0] != B) || (qn >= 3 && V.shape[qn - 3] != HK) || V.shape[qn - 2] != SK)
        AT_FAIL("--v: shape %s does not match --k %s: want [%s%s%zu, head_dim_v]", shape_str(&V, s1, 256),
                shape_str(&K, s2, 256), qn == 4 ? "batch, " : "", qn >= 3 ? "kv_heads, " : "", SK);
    if (D == 0)
        AT_FAIL("--q: head_dim is 0");
    p.batch = B;
    p.heads = H;
    p.kv_heads = HK;
    p.seq_q = SQ;
    p.seq_k = SK;
    p.head_dim = D;
    p.head_dim_v = DV;
    if (DV == 0)
        AT_FAIL("--v: head_dim_v is 0");
    if (a->seen[O_MASK_ADD]) {
        if ((rc = load_aux(a, O_MASK_ADD, &MA)) || (rc = mask_strides(a, &MA, B, H, SQ, SK, &sb_a, &sh_a)))
            goto done;
        for (i = 0; i < MA.n; i++)
            if (isnan(MA.v[i]) || MA.v[i] == INFINITY) {
                char idx[256];
                index_str(&MA, i, idx, sizeof idx);
                AT_FAIL("--mask-add: %s: element %zu (index %s) is %s; an additive mask holds finite values "
                        "or -inf",
                        MA.path, i, idx, isnan(MA.v[i]) ? "nan" : "+inf");
            }
    }
    if (a->seen[O_MASK_BOOL]) {
        if ((rc = load(a, O_MASK_BOOL, NULL, "aux-dtype", &MB)) ||
            (rc = mask_strides(a, &MB, B, H, SQ, SK, &sb_b, &sh_b)))
            goto done;
    }
    if ((rc = common_checks(a)) || (rc = check_writable(a, O_LSE_OUT)))
        goto done;
    /* One pair of strides serves both masks: expand when they differ. */
    if (MA.v && MB.v && (sb_a != sb_b || sh_a != sh_b)) {
        ma_full = expand_mask(MA.v, B, H, SQ * SK, sb_a, sh_a);
        mb_full = expand_mask(MB.v, B, H, SQ * SK, sb_b, sh_b);
        if (!ma_full || !mb_full)
            AT_FAIL("out of memory expanding the masks");
        sb_a = sb_b = H * SQ * SK;
        sh_a = sh_b = SQ * SK;
    }
    if (MA.v) {
        p.mask_add = ma_full ? ma_full : MA.v;
        p.mask_stride_b = sb_a;
        p.mask_stride_h = sh_a;
    }
    if (MB.v) {
        const double *src = mb_full ? mb_full : MB.v;
        size_t nb = mb_full ? B * H * SQ * SK : MB.n;
        mbool = malloc(nb ? nb : 1);
        if (mbool == NULL)
            AT_FAIL("out of memory");
        for (i = 0; i < nb; i++) {
            if (isnan(src[i]))
                AT_FAIL("--mask-bool: %s: element %zu is nan", MB.path, i);
            mbool[i] = src[i] != 0;
        }
        p.mask_bool = mbool;
        p.mask_stride_b = sb_b;
        p.mask_stride_h = sh_b;
    }
    if ((rc = out_alloc(a, &o, B * H * SQ * DV)) || (rc = out_alloc(a, &lse, B * H * SQ)))
        goto done;
    if ((st = qf_ref_attention(&a->ro, &p, Q.v, K.v, V.v, &o, &lse)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    memcpy(shape, Q.shape, sizeof(size_t) * (size_t)qn);
    shape[qn - 1] = DV;
    if ((rc = write_main(a, &o, B * H * SQ * DV, qn, shape)) ||
        (rc = write_npy(a, O_LSE_OUT, QF_NPY_FLOAT64, qn - 1, Q.shape, lse.value)))
        goto done;
    rc = finish(a, &o, &lse, "lse", NULL);
done:
#undef AT_FAIL
    free(ma_full);
    free(mb_full);
    free(mbool);
    qf_ref_out_free(&o);
    qf_ref_out_free(&lse);
    tensor_free(&Q);
    tensor_free(&K);
    tensor_free(&V);
    tensor_free(&MA);
    tensor_free(&MB);
    return rc;
}

/* ---- rmsnorm, layernorm ------------------------------------------------------------- */

static int run_norm(args *a, int layer)
{
    tensor X, W, Bi;
    qf_ref_norm_params p;
    qf_ref_out o;
    qf_status st;
    int rc;
    memset(&o, 0, sizeof o);
    memset(&X, 0, sizeof X);
    memset(&W, 0, sizeof W);
    memset(&Bi, 0, sizeof Bi);
    memset(&p, 0, sizeof p);
    if ((rc = need(a, O_X)))
        return rc;
    if ((rc = get_double(a, O_EPS, layer ? 1e-5 : 1e-6, 0, &p.eps)) ||
        (rc = get_double(a, O_WEIGHT_OFFSET, 0.0, 0, &p.weight_offset)))
        return rc;
    if (p.eps < 0)
        return err(a, "--eps: '%s' is negative", a->str[O_EPS]);
    if (a->seen[O_WEIGHT_OFFSET] && !a->seen[O_WEIGHT])
        return err(a, "--weight-offset needs --weight");
    if ((rc = load_main(a, O_X, &X)) || (rc = last_axis(a, &X, &p.rows, &p.cols)))
        goto done;
    if (a->seen[O_WEIGHT] &&
        ((rc = load_aux(a, O_WEIGHT, &W)) || (rc = check_1d(a, &W, p.cols, "the last dimension of --x"))))
        goto done;
    if (a->seen[O_BIAS] &&
        ((rc = load_aux(a, O_BIAS, &Bi)) || (rc = check_1d(a, &Bi, p.cols, "the last dimension of --x"))))
        goto done;
    if ((rc = common_checks(a)) || (rc = out_alloc(a, &o, X.n)))
        goto done;
    p.weight = W.v;
    p.bias = Bi.v;
    st = layer ? qf_ref_layernorm(&a->ro, &p, X.v, &o) : qf_ref_rmsnorm(&a->ro, &p, X.v, &o);
    if (st != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, X.n, X.ndim, X.shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    qf_ref_out_free(&o);
    tensor_free(&X);
    tensor_free(&W);
    tensor_free(&Bi);
    return rc;
}

static int run_rmsnorm(args *a)
{
    return run_norm(a, 0);
}
static int run_layernorm(args *a)
{
    return run_norm(a, 1);
}

/* ---- activations ------------------------------------------------------------------- */

static int gelu_kind(args *a, qf_ref_act *act)
{
    *act = QF_REF_ACT_GELU_ERF;
    if (!a->seen[O_APPROX] || !strcmp(a->str[O_APPROX], "erf") || !strcmp(a->str[O_APPROX], "none"))
        return 0;
    if (!strcmp(a->str[O_APPROX], "tanh")) {
        *act = QF_REF_ACT_GELU_TANH;
        return 0;
    }
    return err(a, "--approx: unknown GELU form '%s'; valid: erf tanh", a->str[O_APPROX]);
}

static int run_act(args *a, qf_ref_act act)
{
    tensor X;
    qf_ref_out o;
    qf_status st;
    int rc;
    memset(&o, 0, sizeof o);
    if (act == QF_REF_ACT_GELU_ERF && (rc = gelu_kind(a, &act)))
        return rc;
    if ((rc = need(a, O_X)))
        return rc;
    if ((rc = load_main(a, O_X, &X)))
        return rc;
    if ((rc = common_checks(a)) || (rc = out_alloc(a, &o, X.n)))
        goto done;
    if ((st = qf_ref_activation(&a->ro, act, X.v, X.n, &o)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, X.n, X.ndim, X.shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    qf_ref_out_free(&o);
    tensor_free(&X);
    return rc;
}

static int run_gelu(args *a)
{
    return run_act(a, QF_REF_ACT_GELU_ERF);
}
static int run_silu(args *a)
{
    return run_act(a, QF_REF_ACT_SILU);
}
static int run_sigmoid(args *a)
{
    return run_act(a, QF_REF_ACT_SIGMOID);
}
static int run_relu(args *a)
{
    return run_act(a, QF_REF_ACT_RELU);
}

static int run_glu(args *a, qf_ref_act act)
{
    tensor X, G, U;
    qf_ref_out o;
    qf_status st;
    int rc, ndim;
    size_t n, shape[QF_NPY_MAX_DIMS];
    char s1[256], s2[256];
    memset(&o, 0, sizeof o);
    memset(&X, 0, sizeof X);
    memset(&G, 0, sizeof G);
    memset(&U, 0, sizeof U);
    if (act == QF_REF_ACT_GELU_ERF && (rc = gelu_kind(a, &act)))
        return rc;
    if (a->seen[O_X] == (a->seen[O_GATE] || a->seen[O_UP]))
        return err(a, "give either --gate and --up, or --x (fused: gate = x[..., :d], up = x[..., d:])");
    if (a->seen[O_X]) {
        size_t rows = 0, cols = 0, r;
        if ((rc = load_main(a, O_X, &X)) || (rc = last_axis(a, &X, &rows, &cols)))
            goto done;
        if (cols % 2) {
            rc = err(a, "--x: %s: shape %s: the last dimension must be even (gate and up halves)", X.path,
                     shape_str(&X, s1, 256));
            goto done;
        }
        n = rows * (cols / 2);
        G.v = malloc((n ? n : 1) * sizeof(double));
        U.v = malloc((n ? n : 1) * sizeof(double));
        if (!G.v || !U.v) {
            rc = err(a, "out of memory");
            goto done;
        }
        for (r = 0; r < rows; r++) {
            memcpy(G.v + r * (cols / 2), X.v + r * cols, cols / 2 * sizeof(double));
            memcpy(U.v + r * (cols / 2), X.v + r * cols + cols / 2, cols / 2 * sizeof(double));
        }
        ndim = X.ndim;
        memcpy(shape, X.shape, sizeof shape);
        shape[ndim - 1] = cols / 2;
    } else {
        if ((rc = need(a, O_GATE)) || (rc = need(a, O_UP)))
            goto done;
        if ((rc = load_main(a, O_GATE, &G)) || (rc = load_main(a, O_UP, &U)))
            goto done;
        if (G.ndim != U.ndim || memcmp(G.shape, U.shape, (size_t)G.ndim * sizeof(size_t))) {
            rc = err(a, "--up: shape %s does not match shape %s of --gate", shape_str(&U, s1, 256),
                     shape_str(&G, s2, 256));
            goto done;
        }
        n = G.n;
        ndim = G.ndim;
        memcpy(shape, G.shape, sizeof shape);
    }
    if ((rc = common_checks(a)) || (rc = out_alloc(a, &o, n)))
        goto done;
    if ((st = qf_ref_glu(&a->ro, act, G.v, U.v, n, &o)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, n, ndim, shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    qf_ref_out_free(&o);
    tensor_free(&X);
    tensor_free(&G);
    tensor_free(&U);
    return rc;
}

static int run_swiglu(args *a)
{
    return run_glu(a, QF_REF_ACT_SILU);
}
static int run_geglu(args *a)
{
    return run_glu(a, QF_REF_ACT_GELU_ERF);
}

/* ---- rope -------------------------------------------------------------------------------- */

static int run_rope(args *a)
{
    tensor X, P, F;
    qf_ref_rope_params p;
    qf_ref_out o;
    qf_status st;
    int rc;
    long off, rd;
    size_t nb = 1, T, i;
    int64_t *pos = NULL;
    char s1[256];
    memset(&o, 0, sizeof o);
    memset(&X, 0, sizeof X);
    memset(&P, 0, sizeof P);
    memset(&F, 0, sizeof F);
    qf_ref_rope_params_init(&p);
    if ((rc = need(a, O_X)) || (rc = need(a, O_LAYOUT)))
        return rc;
    if (!strcmp(a->str[O_LAYOUT], "interleaved"))
        p.layout = QF_REF_ROPE_INTERLEAVED;
    else if (!strcmp(a->str[O_LAYOUT], "half"))
        p.layout = QF_REF_ROPE_HALF;
    else
        return err(a, "--layout: unknown layout '%s'; valid: interleaved half", a->str[O_LAYOUT]);
    if ((rc = get_double(a, O_THETA, 10000.0, 0, &p.theta)) ||
        (rc = get_long(a, O_OFFSET, 0, -(1L << 53), 1L << 53, &off)) ||
        (rc = get_long(a, O_ROTARY_DIM, 0, 0, LONG_MAX, &rd)))
        return rc;
    if (p.theta <= 0)
        return err(a, "--theta: '%s' must be positive", a->str[O_THETA]);
    if (a->seen[O_POSITIONS] && a->seen[O_OFFSET])
        return err(a, "--positions and --offset exclude each other");
    if (a->seen[O_INV_FREQ] && a->seen[O_THETA])
        return err(a, "--inv-freq and --theta exclude each other");
    if ((rc = load_main(a, O_X, &X)))
        goto done;
    if (X.ndim < 2 || X.ndim > 4) {
        rc = err(a,
                 "--x: %s: shape %s: x must be [tokens, head_dim], [tokens, heads, head_dim] or [batch, "
                 "tokens, heads, head_dim]",
                 X.path, shape_str(&X, s1, 256));
        goto done;
    }
    if (X.ndim == 4)
        nb = X.shape[0];
    T = X.shape[X.ndim == 4 ? 1 : 0];
    p.tokens = nb * T;
    p.heads = X.ndim >= 3 ? X.shape[X.ndim - 2] : 1;
    p.head_dim = X.shape[X.ndim - 1];
    p.rotary_dim = rd ? (size_t)rd : p.head_dim;
    if (p.rotary_dim % 2 || p.rotary_dim > p.head_dim) {
        rc = err(a, "--rotary-dim %zu must be even and at most head_dim = %zu", p.rotary_dim, p.head_dim);
        goto done;
    }
    p.pos_offset = off;
    if (a->seen[O_POSITIONS]) {
        if ((rc = load(a, O_POSITIONS, NULL, "aux-dtype", &P)))
            goto done;
        if (!((P.ndim == 1 && P.shape[0] == T) || (P.ndim == 2 && P.shape[0] == nb && P.shape[1] == T))) {
            rc = err(a, "--positions: %s: shape %s does not match tokens = %zu of --x%s", P.path,
                     shape_str(&P, s1, 256), T, X.ndim == 4 ? " (or [batch, tokens])" : "");
            goto done;
        }
    }
    if (a->seen[O_POSITIONS] || nb > 1) {
        pos = malloc((p.tokens ? p.tokens : 1) * sizeof *pos);
        if (pos == NULL) {
            rc = err(a, "out of memory");
            goto done;
        }
        for (i = 0; i < p.tokens; i++) {
            if (P.v) {
                double v = P.v[P.ndim == 1 ? i % T : i];
                if (v != floor(v) || fabs(v) > 9007199254740992.0) {
                    rc = err(a, "--positions: %s: element %zu = %.17g is not an integer", P.path,
                             P.ndim == 1 ? i % T : i, v);
                    goto done;
                }
                pos[i] = (int64_t)v;
            } else {
                pos[i] = off + (int64_t)(i % T);
            }
        }
        p.positions = pos;
    }
    if (a->seen[O_INV_FREQ]) {
        if ((rc = load_aux(a, O_INV_FREQ, &F)) || (rc = check_1d(a, &F, p.rotary_dim / 2, "rotary_dim / 2")))
            goto done;
        for (i = 0; i < F.n; i++)
            if (!isfinite(F.v[i])) {
                rc = err(a, "--inv-freq: %s: element %zu is not finite", F.path, i);
                goto done;
            }
        p.inv_freq = F.v;
    }
    if ((rc = common_checks(a)) || (rc = out_alloc(a, &o, X.n)))
        goto done;
    if ((st = qf_ref_rope(&a->ro, &p, X.v, &o)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, X.n, X.ndim, X.shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    free(pos);
    qf_ref_out_free(&o);
    tensor_free(&X);
    tensor_free(&P);
    tensor_free(&F);
    return rc;
}

/* ---- moe-router ----------------------------------------------------------------------------- */

static int run_moe(args *a)
{
    tensor L, SB;
    qf_ref_moe_params p;
    qf_ref_out o;
    qf_status st;
    int rc;
    long topk;
    int32_t *idx = NULL;
    uint8_t *ties = NULL;
    size_t shape[2], i, nties = 0, nslots;
    char s1[256], note[96];
    memset(&o, 0, sizeof o);
    memset(&L, 0, sizeof L);
    memset(&SB, 0, sizeof SB);
    qf_ref_moe_params_init(&p);
    if ((rc = need(a, O_LOGITS)) || (rc = need(a, O_TOP_K)))
        return rc;
    if ((rc = get_long(a, O_TOP_K, 1, 1, LONG_MAX, &topk)) ||
        (rc = get_double(a, O_ROUTE_SCALE, 1.0, 0, &p.route_scale)) ||
        (rc = get_double(a, O_TIE_TOL, 0.0, 0, &p.tie_tol)))
        return rc;
    if (p.tie_tol < 0)
        return err(a, "--tie-tol: '%s' is negative", a->str[O_TIE_TOL]);
    if (a->seen[O_SCORE]) {
        if (!strcmp(a->str[O_SCORE], "softmax"))
            p.score = QF_REF_ROUTER_SOFTMAX;
        else if (!strcmp(a->str[O_SCORE], "sigmoid"))
            p.score = QF_REF_ROUTER_SIGMOID;
        else
            return err(a, "--score: unknown score '%s'; valid: softmax sigmoid", a->str[O_SCORE]);
    }
    p.renormalize = a->seen[O_RENORM];
    if ((rc = load_main(a, O_LOGITS, &L)) || (rc = last_axis(a, &L, &p.tokens, &p.experts)))
        goto done;
    if ((size_t)topk > p.experts) {
        rc = err(a, "--top-k %ld exceeds the %zu experts of --logits (shape %s)", topk, p.experts,
                 shape_str(&L, s1, 256));
        goto done;
    }
    p.top_k = (size_t)topk;
    if (a->seen[O_SEL_BIAS]) {
        if ((rc = load_aux(a, O_SEL_BIAS, &SB)) || (rc = check_1d(a, &SB, p.experts, "experts")))
            goto done;
        p.sel_bias = SB.v;
    }
    if ((rc = common_checks(a)) || (rc = check_writable(a, O_INDICES)) || (rc = check_writable(a, O_TIES)))
        goto done;
    if ((rc = out_alloc(a, &o, p.tokens * p.top_k)))
        goto done;
    nslots = p.tokens * p.top_k;
    idx = malloc((nslots ? nslots : 1) * sizeof *idx);
    ties = calloc(nslots ? nslots : 1, 1);
    if (!idx || !ties) {
        rc = err(a, "out of memory");
        goto done;
    }
    if ((st = qf_ref_moe_router(&a->ro, &p, L.v, idx, &o, ties)) != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    shape[0] = p.tokens;
    shape[1] = p.top_k;
    if ((rc = write_main(a, &o, p.tokens * p.top_k, 2, shape)) ||
        (rc = write_npy(a, O_INDICES, QF_NPY_INT32, 2, shape, idx)) ||
        (rc = write_npy(a, O_TIES, QF_NPY_UINT8, 2, shape, ties)))
        goto done;
    for (i = 0; i < p.tokens * p.top_k; i++)
        nties += ties[i] != 0;
    snprintf(note, sizeof note, "%zu slot%s with ties, working precision up to %d bits", nties,
             nties == 1 ? "" : "s", o.max_prec);
    rc = finish(a, &o, NULL, NULL, note);
done:
    free(idx);
    free(ties);
    qf_ref_out_free(&o);
    tensor_free(&L);
    tensor_free(&SB);
    return rc;
}

/* ---- quantize, dequantize ----------------------------------------------------------------------- */

static int run_quant(args *a, int deq)
{
    tensor X, S;
    qf_ref_out o;
    qf_status st;
    int rc;
    long group;
    size_t ngroups;
    uint64_t *codes = NULL;
    char s1[256];
    memset(&o, 0, sizeof o);
    memset(&X, 0, sizeof X);
    memset(&S, 0, sizeof S);
    if ((rc = need(a, O_X)))
        return rc;
    if (deq && !a->in_fmt)
        return err(a, "--in-dtype NAME is required: the format of the codes to dequantize");
    if (!deq && !a->seen[O_OUT_DTYPE])
        return err(a, "--out-dtype NAME is required: the format to quantize into");
    if ((rc = get_long(a, O_GROUP, 0, 0, LONG_MAX, &group)))
        return rc;
    if (a->seen[O_GROUP] && !a->seen[O_SCALES])
        return err(a, "--group needs --scales");
    if ((rc = load_main(a, O_X, &X)))
        goto done;
    if (a->seen[O_SCALES]) {
        if ((rc = load_aux(a, O_SCALES, &S)))
            goto done;
        ngroups = group == 0 ? 1 : (X.n + (size_t)group - 1) / (size_t)group;
        if (S.n != ngroups) {
            rc = err(a, "--scales: %s: shape %s holds %zu scales; %zu elements in groups of %ld need %zu",
                     S.path, shape_str(&S, s1, 256), S.n, X.n, group, ngroups);
            goto done;
        }
    }
    if ((rc = common_checks(a)) || (rc = out_alloc(a, &o, X.n)))
        goto done;
    if (deq) {
        size_t i;
        codes = malloc((X.n ? X.n : 1) * sizeof *codes);
        if (codes == NULL) {
            rc = err(a, "out of memory");
            goto done;
        }
        /* The values were checked (or decoded): encoding them is exact. */
        for (i = 0; i < X.n; i++)
            codes[i] = qf_format_encode(a->in_fmt, X.v[i], QF_ROUND_RNE, 0, 32, 0);
        st = qf_ref_dequantize(&a->ro, a->in_fmt, codes, X.n, S.v, (size_t)group, &o);
    } else {
        st = qf_ref_quantize(&a->ro, X.v, X.n, S.v, (size_t)group, &o);
    }
    if (st != QF_OK) {
        rc = ref_failed(a, st);
        goto done;
    }
    if ((rc = write_main(a, &o, X.n, X.ndim, X.shape)))
        goto done;
    rc = finish(a, &o, NULL, NULL, NULL);
done:
    free(codes);
    qf_ref_out_free(&o);
    tensor_free(&X);
    tensor_free(&S);
    return rc;
}

static int run_quantize(args *a)
{
    return run_quant(a, 0);
}
static int run_dequantize(args *a)
{
    return run_quant(a, 1);
}

/* ---- The op table ------------------------------------------------------------------------------- */

static const int gemm_opts[] = {O_A, O_B, O_C, O_ALPHA, O_BETA, O_TRANS_A, O_TRANS_B, 0};
static const int softmax_opts[] = {O_X, O_SCALE, 0};
static const int attn_opts[] = {O_Q,         O_K,          O_V,       O_SCALE,     O_SOFTCAP,
                                O_CAUSAL,    O_WIN_L,      O_WIN_R,   O_ALIGN,     O_MASK_ADD,
                                O_MASK_BOOL, O_MASKED_ROW, O_LSE_OUT, O_LSE_DTYPE, 0};
static const int norm_opts[] = {O_X, O_EPS, O_WEIGHT, O_BIAS, O_WEIGHT_OFFSET, 0};
static const int gelu_opts[] = {O_X, O_APPROX, 0};
static const int x_opts[] = {O_X, 0};
static const int swiglu_opts[] = {O_GATE, O_UP, O_X, 0};
static const int geglu_opts[] = {O_GATE, O_UP, O_X, O_APPROX, 0};
static const int rope_opts[] = {O_X, O_LAYOUT, O_THETA, O_OFFSET, O_POSITIONS, O_ROTARY_DIM, O_INV_FREQ, 0};
static const int moe_opts[] = {O_LOGITS,   O_TOP_K,   O_SCORE,   O_RENORM, O_ROUTE_SCALE,
                               O_SEL_BIAS, O_TIE_TOL, O_INDICES, O_TIES,   0};
static const int quant_opts[] = {O_X, O_SCALES, O_GROUP, 0};

/* clang-format off */
static const ref_op ops[] = {
    { "gemm",        run_gemm,        "D = alpha op(A) op(B) + beta C, exact dot products rounded once",
      "--a A.npy --b B.npy [--c C.npy --alpha X --beta Y] [--trans-a] [--trans-b] -o D.npy", gemm_opts,
      "Shapes: op(A) [M, K], op(B) [K, N], D [M, N]; a 3-d A or B is a batch (a 2-d one is shared).\n"
      "Every element is the exact alpha sum a*b + beta c rounded once into --out-dtype: never\n"
      "undecided.  alpha and beta are the binary64 values of their text (hex floats are exact).\n" },
    { "softmax",     run_softmax,     "softmax over the last axis",
      "--x X.npy [--scale S] -o Y.npy", softmax_opts,
      "y = exp(S x) / sum exp(S x) along the last axis of x (any leading shape).  -inf entries give 0;\n"
      "a row of -inf, or with nan or +inf, is undefined (nan).\n" },
    { "log-softmax", run_log_softmax, "log-softmax over the last axis",
      "--x X.npy [--scale S] -o Y.npy", softmax_opts,
      "y = S x - log sum exp(S x) along the last axis.  Special values as for softmax.\n" },
    { "attention",   run_attention,   "attention forward: softmax(scale q k^T + masks) v, and the lse",
      "--q Q.npy --k K.npy --v V.npy [--causal] [--window-left N] [--window-right N] [--scale X]\n"
      "                       [--softcap X] [--mask-add M.npy] [--mask-bool M.npy] [--lse-out L.npy] -o O.npy", attn_opts,
      "Layout BHSD: q [batch, heads, seq_q, d], k [batch, kv_heads, seq_k, d], v [batch, kv_heads, seq_k,\n"
      "dv], out [batch, heads, seq_q, dv]; heads / kv_heads query heads share a kv head (GQA).\n"
      "The default scale is 1/sqrt(d) as a real number.  A row with no kept key gives\n"
      "--masked-row-value (undefined status) and lse -inf.\n" },
    { "rmsnorm",     run_rmsnorm,     "RMSNorm over the last axis",
      "--x X.npy [--eps E] [--weight W.npy] [--bias B.npy] [--weight-offset X] -o Y.npy", norm_opts,
      "y = x / sqrt(mean(x^2) + eps) * (offset + w) + b along the last axis.\n" },
    { "layernorm",   run_layernorm,   "LayerNorm over the last axis",
      "--x X.npy [--eps E] [--weight W.npy] [--bias B.npy] [--weight-offset X] -o Y.npy", norm_opts,
      "y = (x - mean) / sqrt(var + eps) * (offset + w) + b, var the biased (1/n) variance.\n" },
    { "gelu",        run_gelu,        "GELU, erf or tanh form",
      "--x X.npy [--approx erf|tanh] -o Y.npy", gelu_opts,
      "erf: x/2 (1 + erf(x/sqrt 2)); tanh: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).\n" },
    { "silu",        run_silu,        "SiLU: x / (1 + exp(-x))",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "sigmoid",     run_sigmoid,     "sigmoid: 1 / (1 + exp(-x))",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "relu",        run_relu,        "ReLU: max(x, 0)",
      "--x X.npy -o Y.npy", x_opts, "" },
    { "swiglu",      run_swiglu,      "SwiGLU: silu(gate) * up",
      "(--gate G.npy --up U.npy | --x X.npy) -o Y.npy", swiglu_opts,
      "A fused --x [..., 2d] is split as gate = x[..., :d], up = x[..., d:] (vLLM silu_and_mul).\n" },
    { "geglu",       run_geglu,       "GeGLU: gelu(gate) * up",
      "(--gate G.npy --up U.npy | --x X.npy) [--approx erf|tanh] -o Y.npy", geglu_opts,
      "A fused --x [..., 2d] is split as gate = x[..., :d], up = x[..., d:].\n" },
    { "rope",        run_rope,        "rotary position embedding",
      "--x X.npy --layout interleaved|half [--theta T] [--offset N | --positions P.npy]\n"
      "                  [--rotary-dim R] [--inv-freq F.npy] -o Y.npy", rope_opts,
      "x [tokens, heads, head_dim] (also [tokens, head_dim], or [batch, tokens, heads, head_dim] with\n"
      "positions restarting per batch).  Token t sits at position offset + t.\n" },
    { "moe-router",  run_moe,         "mixture-of-experts router: top-k experts and their weights",
      "--logits L.npy --top-k K [--score softmax|sigmoid] [--renorm] [--route-scale X]\n"
      "                        [--sel-bias B.npy] [--tie-tol X] [--indices I.npy] [--ties T.npy] -o W.npy", moe_opts,
      "-o gets the weights [tokens, top_k]; --indices the experts (int32), in decreasing key order,\n"
      "equal keys by lower index; --ties marks slots a kernel may legitimately fill differently.\n" },
    { "sum",         run_sum,         "sum over the last axis",
      "--x X.npy -o Y.npy", x_opts, "The output drops the last axis.  An empty row sums to 0.\n" },
    { "amax",        run_amax,        "max |x| over the last axis",
      "--x X.npy -o Y.npy", x_opts, "The output drops the last axis.  An empty row gives 0.\n" },
    { "quantize",    run_quantize,    "code = round(x / scale) into --out-dtype",
      "--x X.npy --out-dtype NAME [--scales S.npy [--group G]] -o Y.npy [--codes C.npy]", quant_opts,
      "Element i (flattened) uses scales[i / G]; G = 0 (default) uses one scale.  -o gets the exact\n"
      "values of the codes (x / scale rounded once), --codes the codes.\n" },
    { "dequantize",  run_dequantize,  "y = decode(code) * scale, rounded into --out-dtype",
      "--x CODES.npy --in-dtype NAME [--scales S.npy [--group G]] -o Y.npy", quant_opts,
      "--x holds codes of --in-dtype (uint8/uint16 files) or its values.\n" },
};
/* clang-format on */

#define N_OPS (sizeof ops / sizeof ops[0])

static void list_ops(FILE *fp)
{
    size_t i;
    for (i = 0; i < N_OPS; i++)
        fprintf(fp, " %s", ops[i].name);
}

static void print_opt(FILE *fp, int id)
{
    char left[64];
    const char *h = optinfo[id].help, *nl;
    if (id == O_OUT)
        snprintf(left, sizeof left, "-o, --%s %s", optinfo[id].name, optinfo[id].arg);
    else if (id == O_HELP)
        snprintf(left, sizeof left, "-h, --help");
    else
        snprintf(left, sizeof left, "--%s%s%s", optinfo[id].name, optinfo[id].arg ? " " : "",
                 optinfo[id].arg ? optinfo[id].arg : "");
    fprintf(fp, "  %-22s ", left);
    while ((nl = strchr(h, '\n')) != NULL) {
        fprintf(fp, "%.*s\n%25s", (int)(nl - h), h, "");
        h = nl + 1;
    }
    fprintf(fp, "%s\n", h);
}

static void help_general(FILE *fp)
{
    size_t i;
    fprintf(fp, "usage: qualify ref OP [options] -o OUT.npy\n"
                "       qualify ref OP --help\n"
                "\n"
                "Compute an exact or correctly rounded reference from NumPy .npy inputs (float64,\n"
                "float32, float16 natively; other formats as codes or values with --in-dtype NAME).\n"
                "Each output element is rounded once, from the exact real result, into --out-dtype\n"
                "and written as the float64 value of that rounding.\n"
                "\n"
                "ops:\n");
    for (i = 0; i < N_OPS; i++)
        fprintf(fp, "  %-12s %s\n", ops[i].name, ops[i].summary);
    fprintf(fp, "\noptions of every op:\n");
    for (i = 1; i < O_COMMON_END; i++)
        print_opt(fp, (int)i);
    fprintf(fp, "\nExit codes: 0 success (undecided elements are warned about on stderr), 1 undecided\n"
                "elements with --strict, 2 bad usage or bad input.  docs/refs.md has the guarantees.\n");
}

static void help_op(FILE *fp, const ref_op *op)
{
    int i;
    fprintf(fp, "usage: qualify ref %s %s\n\n%s.\n", op->name, op->synopsis, op->summary);
    if (op->notes && *op->notes)
        fprintf(fp, "\n%s", op->notes);
    fprintf(fp, "\noptions:\n");
    for (i = 0; op->opts[i]; i++)
        print_opt(fp, op->opts[i]);
    fprintf(fp, "\noptions of every op:\n");
    for (i = 1; i < O_COMMON_END; i++)
        print_opt(fp, i);
    fprintf(fp, "\nExit codes: 0 success, 1 undecided elements with --strict, 2 bad usage or bad input.\n");
}

static int op_allows(const ref_op *op, int id)
{
    int i;
    if (id < O_COMMON_END)
        return 1;
    for (i = 0; op->opts[i]; i++)
        if (op->opts[i] == id)
            return 1;
    return 0;
}

static const qf_format *format_opt(args *a, int id)
{
    const qf_format *f;
    if (!a->seen[id])
        return NULL;
    f = qf_format_lookup(a->str[id]);
    if (f == NULL) {
        char names[512];
        qf_format_list_names(names, sizeof names);
        err(a, "--%s: unknown format '%s'; valid formats: %s", OPTNAME(id), a->str[id], names);
    }
    return f;
}

/* Long options return OPT_BASE + id, clear of the short option letters. */
#define OPT_BASE 256

/* Options may follow the op name; an option's argument may start with '-'
 * (--alpha -1.5). */
int qf_cli_ref(int argc, char **argv)
{
    struct option lopts[O_COUNT + 1];
    args A;
    args *a = &A;
    const char *pos[2] = {NULL, NULL};
    int npos = 0, c, i, help = 0, extra = 0, rc;

    memset(a, 0, sizeof *a);
    snprintf(a->cmd, sizeof a->cmd, "ref");
    for (i = 1, c = 0; i < O_COUNT; i++, c++) {
        lopts[c].name = optinfo[i].name;
        lopts[c].has_arg = optinfo[i].has_arg ? required_argument : no_argument;
        lopts[c].flag = NULL;
        lopts[c].val = OPT_BASE + i;
    }
    memset(&lopts[c], 0, sizeof lopts[c]);

    optind = 1;
    opterr = 0;
    for (;;) {
        int id;
        if (optind < argc && (argv[optind][0] != '-' || argv[optind][1] == '\0')) {
            if (npos < 2)
                pos[npos] = argv[optind];
            npos++;
            optind++;
            continue;
        }
        if ((id = getopt_long(argc, argv, "+ho:", lopts, NULL)) == -1) {
            while (optind < argc) { /* after "--" */
                if (npos < 2)
                    pos[npos] = argv[optind];
                npos++;
                optind++;
            }
            break;
        }
        if (id == 'h')
            id = O_HELP;
        else if (id == 'o')
            id = O_OUT;
        else if (id > OPT_BASE && id < OPT_BASE + O_COUNT)
            id -= OPT_BASE;
        else {
            if (optopt == 'o' || (optopt > OPT_BASE && optopt < OPT_BASE + O_COUNT))
                return err(a, "option '%s' needs a value; see 'qualify ref --help'", argv[optind - 1]);
            return err(a, "unknown option '%s'; see 'qualify ref --help'", argv[optind - 1]);
        }
        if (id == O_HELP) {
            help = 1;
            continue;
        }
        if (a->seen[id] && optinfo[id].has_arg && strcmp(a->str[id], optarg))
            return err(a, "--%s given twice ('%s' and '%s')", OPTNAME(id), a->str[id], optarg);
        a->seen[id] = 1;
        a->str[id] = optinfo[id].has_arg ? optarg : NULL;
    }
    extra = npos > 1;
    if (npos == 0) {
        if (help) {
            help_general(stdout);
            return QF_EXIT_OK;
        }
        fprintf(stderr, "qualify ref: no op given; valid ops:");
        list_ops(stderr);
        fputc('\n', stderr);
        return QF_EXIT_USAGE;
    }
    for (i = 0; i < (int)N_OPS; i++)
        if (!strcmp(pos[0], ops[i].name))
            a->op = &ops[i];
    if (a->op == NULL) {
        fprintf(stderr, "qualify ref: unknown op '%s'; valid ops:", pos[0]);
        list_ops(stderr);
        fputc('\n', stderr);
        return QF_EXIT_USAGE;
    }
    snprintf(a->cmd, sizeof a->cmd, "ref %s", a->op->name);
    if (help) {
        help_op(stdout, a->op);
        return QF_EXIT_OK;
    }
    if (extra)
        return err(a, "unexpected argument '%s' (inputs are given with options such as --x FILE)", pos[1]);
    for (i = 1; i < O_COUNT; i++)
        if (a->seen[i] && !op_allows(a->op, i))
            return err(a, "--%s does not apply to %s; see 'qualify ref %s --help'", OPTNAME(i), a->op->name,
                       a->op->name);
    if ((rc = need(a, O_OUT)))
        return rc;
    {
        static const int outs[] = {O_OUT, O_STATUS, O_CODES, O_LSE_OUT, O_INDICES, O_TIES};
        size_t u, v;
        for (u = 0; u < sizeof outs / sizeof outs[0]; u++)
            for (v = u + 1; v < sizeof outs / sizeof outs[0]; v++)
                if (a->seen[outs[u]] && a->seen[outs[v]] && !strcmp(a->str[outs[u]], a->str[outs[v]]))
                    return err(a, "--%s and --%s name the same file '%s'", OPTNAME(outs[u]), OPTNAME(outs[v]),
                               a->str[outs[u]]);
    }

    /* Formats, rounding, precision. */
    if ((a->seen[O_IN_DTYPE] && !(a->in_fmt = format_opt(a, O_IN_DTYPE))) ||
        (a->seen[O_AUX_DTYPE] && !(a->aux_fmt = format_opt(a, O_AUX_DTYPE))) ||
        (a->seen[O_LSE_DTYPE] && !(a->lse_fmt = format_opt(a, O_LSE_DTYPE))))
        return QF_EXIT_USAGE;
    a->out_fmt = qf_format_get(QF_FLOAT64);
    if (a->seen[O_OUT_DTYPE] && !(a->out_fmt = format_opt(a, O_OUT_DTYPE)))
        return QF_EXIT_USAGE;
    a->ro = qf_ref_opts_default();
    a->ro.format = a->out_fmt;
    if (a->seen[O_SAT] && a->seen[O_NOSAT])
        return err(a, "--saturate and --no-saturate exclude each other");
    a->ro.saturate = a->seen[O_SAT];
    if (a->seen[O_ROUND]) {
        qf_round r = QF_ROUND_RNE;
        int known = qf_round_lookup(a->str[O_ROUND], &r) == QF_OK;
        if (!known || !qf_round_valid(a->out_fmt, r) || r == QF_ROUND_STOCHASTIC) {
            int k;
            if (known && r == QF_ROUND_STOCHASTIC)
                fprintf(stderr,
                        "qualify %s: --round stochastic: a reference is deterministic; valid modes:", a->cmd);
            else
                fprintf(stderr, "qualify %s: unknown rounding mode '%s' for %s; valid modes:", a->cmd,
                        a->str[O_ROUND], a->out_fmt->name);
            for (k = 0; k < QF_ROUND_COUNT; k++)
                if (k != QF_ROUND_STOCHASTIC && qf_round_valid(a->out_fmt, (qf_round)k))
                    fprintf(stderr, " %s", qf_round_name((qf_round)k));
            fputc('\n', stderr);
            return QF_EXIT_USAGE;
        }
        a->ro.round = r;
    }
    if (a->lse_fmt && a->seen[O_ROUND] && !qf_round_valid(a->lse_fmt, a->ro.round))
        return err(a, "--round %s does not apply to --lse-dtype %s", a->str[O_ROUND], a->lse_fmt->name);
    {
        long t, pm;
        if ((rc = get_long(a, O_THREADS, 0, 0, 4096, &t)) ||
            (rc = get_long(a, O_PREC_MAX, 4096, 64, 1L << 24, &pm)))
            return rc;
        a->ro.threads = (int)t;
        a->ro.prec_max = (int)pm;
    }
    a->strict = a->seen[O_STRICT];
    a->quiet = a->seen[O_QUIET];
    return a->op->run(a);
}
