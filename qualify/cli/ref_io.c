/* cli/ref_io.c: the plumbing of 'qualify ref' (_ref.h): messages, option
 * values, loading and checking .npy inputs, writing outputs, the summary
 * line and the exit code. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_ref.h"
#include "qf_runner.h"

int _qf_cr_err(args *a, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qf_cli_usage_error(a->cmd, "%s", msg);
}

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
int _qf_cr_get_double(args *a, int id, double def, int allow_nonfinite, double *out)
{
    *out = def;
    if (!a->seen[id])
        return 0;
    if (!parse_double(a->str[id], out) || (!allow_nonfinite && !isfinite(*out)))
        return _qf_cr_err(a, "--%s: '%s' is not a %snumber (decimal or C99 hex float)", OPTNAME(id),
                          a->str[id], allow_nonfinite ? "" : "finite ");
    return 0;
}

int _qf_cr_keyword(args *a, int id, const char *what, const char *const *names, int *out)
{
    int i;
    for (i = 0; names[i]; i++)
        if (!strcmp(a->str[id], names[i])) {
            *out = i;
            return 0;
        }
    fprintf(stderr, "qualify %s: --%s: unknown %s '%s'; valid:", a->cmd, OPTNAME(id), what, a->str[id]);
    for (i = 0; names[i]; i++)
        fprintf(stderr, " %s", names[i]);
    fputc('\n', stderr);
    return QF_EXIT_USAGE;
}

int _qf_cr_get_long(args *a, int id, long def, long lo, long hi, long *out)
{
    *out = def;
    if (!a->seen[id])
        return 0;
    if (!parse_long(a->str[id], out) || *out < lo || *out > hi)
        return _qf_cr_err(a, "--%s: '%s' is not an integer in %ld..%ld", OPTNAME(id), a->str[id], lo, hi);
    return 0;
}

/* ---- Tensors -------------------------------------------------------------------- */

void _qf_cr_tensor_free(tensor *t)
{
    free(t->v);
    t->v = NULL;
}

const char *_qf_cr_shape_str(const tensor *t, char *buf, size_t size)
{
    qf_npy_shape_str(t->ndim, t->shape, buf, size);
    return buf;
}

void _qf_cr_index_str(const tensor *t, size_t flat, char *buf, size_t size)
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

/* "--OPT FILE needs N of memory (beside M already taken), over
 * --max-case-memory B"; returns the usage exit code. */
static int over_budget(args *a, const char *opt, const char *what, size_t need)
{
    char n[32], u[32], b[32];
    qf_runner_format_bytes(need, n, sizeof n);
    qf_runner_format_bytes(a->mem_used, u, sizeof u);
    qf_runner_format_bytes(a->mem_budget, b, sizeof b);
    return _qf_cr_err(a, "--%s %s needs %s of memory (beside %s already taken), over --max-case-memory %s", opt,
                      what, n, u, b);
}

/* Load an input: its exact binary64 values, checked against (or decoded
 * from the codes of) fmt when fmt is not NULL.  Returns an exit code. */
int _qf_cr_load(args *a, int id, const qf_format *fmt, const char *fmt_opt, tensor *t)
{
    qf_npy arr;
    char msg[768], shp[256];
    const char *path = a->str[id];
    size_t i, bad = 0;
    qf_status st;
    memset(t, 0, sizeof *t);
    t->opt = OPTNAME(id);
    t->path = path;
    /* The file is read whole: refuse it before when it alone is over the
     * budget, then, knowing its elements, before their binary64 values
     * (and codes) are allocated beside it. */
    {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= 0 &&
            (uint64_t)sb.st_size > a->mem_budget - a->mem_used)
            return over_budget(a, t->opt, path, (size_t)sb.st_size);
    }
    if ((st = qf_npy_read(path, &arr, msg, sizeof msg)) != QF_OK)
        return _qf_cr_err(a, "--%s: %s", t->opt, msg);
    t->ndim = arr.ndim;
    memcpy(t->shape, arr.shape, sizeof t->shape);
    t->n = arr.count;
    qf_npy_shape_str(arr.ndim, arr.shape, shp, sizeof shp);
    {
        /* the file's elements, their values, and codes for a code file */
        size_t eb = qf_npy_dtype_size(arr.dtype), per = eb + 8 + 8;
        size_t need = t->n > (SIZE_MAX - 1) / per ? SIZE_MAX : t->n * per;
        if (need > a->mem_budget - a->mem_used) {
            qf_npy_free(&arr);
            return over_budget(a, t->opt, path, need);
        }
        a->mem_used += t->n * 8;
    }
    t->v = malloc((t->n ? t->n : 1) * sizeof *t->v);
    if (t->v == NULL) {
        qf_npy_free(&arr);
        return _qf_cr_err(a, "--%s: %s: out of memory for shape %s", t->opt, path, shp);
    }
    /* Codes: raw elements always, integers when fmt is a float format. */
    if (qf_npy_dtype_kind(arr.dtype) == 'V' ||
        (fmt && fmt->kind != QF_KIND_INT && is_code_dtype(arr.dtype))) {
        uint64_t *codes;
        size_t bits = 8 * qf_npy_dtype_size(arr.dtype);
        if (fmt == NULL) {
            qf_npy_free(&arr);
            _qf_cr_tensor_free(t);
            return _qf_cr_err(
                a, "--%s: %s: elements of descr '%s' are codes of a format that is not named; give --%s NAME",
                t->opt, path, qf_npy_dtype_descr(arr.dtype), fmt_opt);
        }
        if (bits != (size_t)fmt->storage_bits) {
            qf_npy_free(&arr);
            _qf_cr_tensor_free(t);
            return _qf_cr_err(
                a, "--%s: %s: %s elements cannot hold %s codes (%d-bit); give %d-bit codes or float values",
                t->opt, path, qf_npy_dtype_name(arr.dtype), fmt->name, fmt->storage_bits, fmt->storage_bits);
        }
        codes = malloc((t->n ? t->n : 1) * sizeof *codes);
        if (codes == NULL) {
            qf_npy_free(&arr);
            _qf_cr_tensor_free(t);
            return _qf_cr_err(a, "--%s: %s: out of memory", t->opt, path);
        }
        qf_npy_get_bits(&arr, codes);
        qf_npy_free(&arr);
        for (i = 0; i < t->n; i++) {
            if (!valid_code(fmt, codes[i])) {
                char idx[256];
                uint64_t c = codes[i];
                _qf_cr_index_str(t, i, idx, sizeof idx);
                free(codes);
                _qf_cr_tensor_free(t);
                return _qf_cr_err(a, "--%s: %s: element %zu (index %s) = 0x%" PRIX64 " is not a %s code",
                                  t->opt, path, i, idx, c, fmt->name);
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
        _qf_cr_index_str(t, bad, idx, sizeof idx);
        _qf_cr_tensor_free(t);
        return _qf_cr_err(a,
                          "--%s: %s: element %zu (index %s) is an integer that binary64 cannot hold exactly",
                          t->opt, path, bad, idx);
    }
    if (fmt)
        for (i = 0; i < t->n; i++)
            if (!representable(fmt, t->v[i])) {
                char idx[256];
                double x = t->v[i];
                _qf_cr_index_str(t, i, idx, sizeof idx);
                _qf_cr_tensor_free(t);
                return _qf_cr_err(
                    a, "--%s: %s: element %zu (index %s) = %.17g (%a) is not exactly representable in %s",
                    t->opt, path, i, idx, x, x, fmt->name);
            }
    return 0;
}

int _qf_cr_load_main(args *a, int id, tensor *t)
{
    return _qf_cr_load(a, id, a->in_fmt, "in-dtype", t);
}

int _qf_cr_load_aux(args *a, int id, tensor *t)
{
    return _qf_cr_load(a, id, a->aux_fmt, "aux-dtype", t);
}

int _qf_cr_need(args *a, int id)
{
    if (!a->seen[id])
        return _qf_cr_err(a, "--%s is required; see 'qualify %s --help'", OPTNAME(id), a->cmd);
    return 0;
}

/* rows x cols view of a tensor reduced along its last axis. */
int _qf_cr_last_axis(args *a, const tensor *t, size_t *rows, size_t *cols)
{
    size_t r = 1;
    int d;
    if (t->ndim < 1)
        return _qf_cr_err(a, "--%s: %s: a scalar (shape ()); the op needs at least one dimension", t->opt,
                          t->path);
    for (d = 0; d < t->ndim - 1; d++)
        r *= t->shape[d];
    *rows = r;
    *cols = t->shape[t->ndim - 1];
    return 0;
}

int _qf_cr_check_1d(args *a, const tensor *t, size_t n, const char *what)
{
    char shp[256];
    if (t->ndim != 1 || t->shape[0] != n)
        return _qf_cr_err(a, "--%s: %s: shape %s does not match %s = %zu (want (%zu,))", t->opt, t->path,
                          _qf_cr_shape_str(t, shp, sizeof shp), what, n, n);
    return 0;
}

/* ---- Outputs -------------------------------------------------------------------- */

/* Fail early on an output that cannot be written, before computing. */
int _qf_cr_check_writable(args *a, int id)
{
    const char *p;
    char dir[4096];
    const char *slash;
    struct stat sb;
    if (!a->seen[id])
        return 0;
    p = a->str[id];
    if (*p == '\0')
        return _qf_cr_err(a, "--%s: empty file name", OPTNAME(id));
    if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
        return _qf_cr_err(a, "--%s: %s: is a directory", OPTNAME(id), p);
    slash = strrchr(p, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == p)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - p), p);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return _qf_cr_err(a, "--%s: %s: directory '%s' does not exist", OPTNAME(id), p, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return _qf_cr_err(a, "--%s: %s: directory '%s' is not writable", OPTNAME(id), p, dir);
    return 0;
}

int _qf_cr_write_npy(args *a, int id, qf_npy_dtype t, int ndim, const size_t *shape, const void *data)
{
    char msg[768];
    if (!a->seen[id])
        return 0;
    if (qf_npy_write_data(a->str[id], t, ndim, shape, data, msg, sizeof msg) != QF_OK)
        return _qf_cr_err(a, "--%s: %s", OPTNAME(id), msg);
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
int _qf_cr_write_main(args *a, const qf_ref_out *o, size_t n, int ndim, const size_t *shape)
{
    const qf_format *f = a->out_fmt;
    int rc;
    if ((rc = _qf_cr_write_npy(a, O_OUT, QF_NPY_FLOAT64, ndim, shape, o->value)) != 0)
        return rc;
    if ((rc = _qf_cr_write_npy(a, O_STATUS, QF_NPY_UINT8, ndim, shape, o->status)) != 0)
        return rc;
    if (a->seen[O_CODES]) {
        size_t bytes = qf_format_array_bytes(f, n ? n : 1), i;
        void *c = malloc(bytes);
        if (c == NULL)
            return _qf_cr_err(a, "--codes: out of memory");
        for (i = 0; i < n; i++) {
            switch (code_dtype(f)) {
            case QF_NPY_UINT8: ((uint8_t *)c)[i] = (uint8_t)o->code[i]; break;
            case QF_NPY_UINT16: ((uint16_t *)c)[i] = (uint16_t)o->code[i]; break;
            case QF_NPY_UINT32: ((uint32_t *)c)[i] = (uint32_t)o->code[i]; break;
            default: ((uint64_t *)c)[i] = o->code[i]; break;
            }
        }
        rc = _qf_cr_write_npy(a, O_CODES, code_dtype(f), ndim, shape, c);
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
int _qf_cr_finish(args *a, const qf_ref_out *o, const qf_ref_out *extra, const char *extra_label,
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

int _qf_cr_ref_failed(args *a, qf_status st)
{
    return _qf_cr_err(a, "the reference refused the request: %s", qf_status_str(st));
}

int _qf_cr_out_alloc(args *a, qf_ref_out *o, size_t n)
{
    /* per element: value, code and status (17), the approximation and its
     * error when asked (16), the codes written to --codes (8) */
    size_t need = n > SIZE_MAX / 41 ? SIZE_MAX : n * 41;
    char what[48];
    if (need > a->mem_budget - a->mem_used) {
        snprintf(what, sizeof what, "(%zu elements)", n);
        return over_budget(a, "out", what, need);
    }
    a->mem_used += need;
    if (qf_ref_out_alloc(o, n ? n : 1) != QF_OK)
        return _qf_cr_err(a, "out of memory for %zu outputs", n);
    return 0;
}

/* ---- The common steps of an op ------------------------------------------------------ */

int _qf_cr_common_checks(args *a)
{
    int rc;
    if ((rc = _qf_cr_check_writable(a, O_OUT)) || (rc = _qf_cr_check_writable(a, O_STATUS)) ||
        (rc = _qf_cr_check_writable(a, O_CODES)))
        return rc;
    return 0;
}

int _qf_cr_prepare(args *a, qf_ref_out *o, size_t n)
{
    int rc;
    if ((rc = _qf_cr_common_checks(a)) || (rc = _qf_cr_out_alloc(a, o, n)))
        return rc;
    return 0;
}

int _qf_cr_conclude(args *a, qf_status st, const qf_ref_out *o, size_t n, int ndim, const size_t *shape)
{
    int rc;
    if (st != QF_OK)
        return _qf_cr_ref_failed(a, st);
    if ((rc = _qf_cr_write_main(a, o, n, ndim, shape)))
        return rc;
    return _qf_cr_finish(a, o, NULL, NULL, NULL);
}
