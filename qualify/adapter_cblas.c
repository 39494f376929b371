/* adapter_cblas.c: the cblas adapter (qf_adapter.h): GEMM kernels that call
 * a library's CBLAS entry points, found with dlsym.
 *
 * No <cblas.h>: the prototypes and enum values below are those of the BLAS
 * Technical Forum standard (2001), annex B (the C interface), as netlib's
 * CBLAS spells them, so libqualify needs no BLAS at build time.  Dimensions
 * and leading dimensions are int (the LP64 interface; an ILP64 build with
 * 64-bit integers, such as Debian's libopenblas64, is not supported).
 * cblas_sbgemm is OpenBLAS's extension (interface/sbgemm.c, built with
 * BUILD_BFLOAT16): bfloat16 a and b as uint16_t codes, float alpha, beta,
 * c.
 *
 * The claim (docs/third-party.md "The claim"): a BLAS promises no
 * summation order, blocking or FMA use, so each kernel claims an
 * accumulator of its type (float32, float64) rounded to nearest, block 1,
 * QF_SUM_SEQUENTIAL.  The sequential chain (K roundings) is the longest
 * any evaluation order of a K-term dot product can have, so the bound
 * gamma_K |A||B| holds for every order, with or without FMA (Higham,
 * Accuracy and Stability of Numerical Algorithms, 2nd ed., 2002, sec. 3.1:
 * the bound "holds for any order of evaluation").  No determinism is
 * claimed, neither run to run nor across thread counts.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_files.h"
#include "_registry.h"
#include "cpu/_cpu.h" /* _qf_cpu_fail */
#include "qf_adapter.h"
#include "qf_kernel.h"

/* CBLAS enums (standard values; netlib cblas.h). */
enum { CB_ROW_MAJOR = 101, CB_COL_MAJOR = 102 };
enum { CB_NO_TRANS = 111, CB_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a,
                         int lda, const double *b, int ldb, double beta, double *c, int ldc);
typedef void (*sbgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const uint16_t *a,
                          int lda, const uint16_t *b, int ldb, float beta, float *c, int ldc);

/* Thread-count setters of the libraries we know.  BLIS's dim_t is a
 * 64-bit integer in its default configuration (BLIS_INT_TYPE_SIZE 64). */
typedef void (*set_int_fn)(int);
typedef int (*get_int_fn)(void);
typedef void (*set_i64_fn)(int64_t);
typedef int64_t (*get_i64_fn)(void);

enum { E_SGEMM = 0, E_DGEMM, E_SBGEMM, E_COUNT };
static const char *const entry_sym[E_COUNT] = {"cblas_sgemm", "cblas_dgemm", "cblas_sbgemm"};
static const char *const entry_dtype[E_COUNT] = {"f32", "f64", "bf16"};

typedef struct cblas_lib cblas_lib;

/* kernel->user of one registered kernel. */
typedef struct cblas_entry {
    cblas_lib *lib;
    int which; /* E_* */
    void *fn;  /* the entry point */
    char name[128];
    char desc[512];
    qf_dtype_tuple tuple;
} cblas_entry;

struct cblas_lib {
    void *dl;
    set_int_fn set_int;
    set_i64_fn set_i64;
    int default_threads; /* the library's count at load time; 0: unknown */
    cblas_entry e[E_COUNT];
};

static void cblas_close(void *handle)
{
    cblas_lib *lib = handle;
    if (!lib)
        return;
    if (lib->dl)
        dlclose(lib->dl);
    free(lib);
}

/* The load error, when the caller gave room for one. */
#define ERRF(...) ((void)(err && err_size ? snprintf(err, err_size, __VA_ARGS__) : 0))

/* POSIX: a dlsym result converts to a function pointer; copying the bits
 * avoids ISO C's warning about the cast. */
static void *sym(void *dl, const char *name)
{
    dlerror();
    return dlsym(dl, name);
}

/* "libopenblas.so.0" -> "openblas": base name, less "lib" and everything
 * from the first '.'; characters a kernel name cannot hold become '_'. */
static void lib_name(const char *path, char *out, size_t size)
{
    const char *b = strrchr(path, '/');
    size_t i, n;
    b = b ? b + 1 : path;
    if (!strncmp(b, "lib", 3) && b[3] && b[3] != '.')
        b += 3;
    n = strcspn(b, ".");
    if (n == 0) {
        snprintf(out, size, "unnamed");
        return;
    }
    if (n >= size)
        n = size - 1;
    for (i = 0; i < n; i++) {
        char c = b[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || c == '+';
        out[i] = ok ? c : '_';
    }
    out[n] = '\0';
}

/* ---- Running ------------------------------------------------------------- */

/* One operand as the BLAS sees it: per batch entry a matrix with unit
 * stride along a row (row-major) or down a column (col), ld elements
 * between its rows or columns. */
typedef struct view {
    char *base;
    int64_t batch_stride, ld; /* elements */
    int col;                  /* column-major: stride 1 down a column */
} view;

static qf_status get_view(const qf_kernel_call *call, const qf_tensor *t, const char *slot, int64_t batch,
                          int64_t rows, int64_t cols, view *v)
{
    int nd = t->ndim;
    int64_t need;
    if (!t->data)
        return _qf_cpu_fail(call, QF_EINVAL, "operand %s is missing", slot);
    if (nd != 2 && nd != 3)
        return _qf_cpu_fail(call, QF_EINVAL, "operand %s has %d dimensions (2 or 3 expected)", slot, nd);
    if (t->packed || t->index_bits || t->scale.kind != QF_SCALE_NONE)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "operand %s is packed, an index tensor or scaled", slot);
    if (t->shape[nd - 2] != rows || t->shape[nd - 1] != cols || (nd == 3 && t->shape[0] != batch) ||
        (nd == 2 && batch > 1))
        return _qf_cpu_fail(call, QF_EINVAL, "operand %s has the wrong shape for this gemm", slot);
    /* The BLAS reads rows (row-major) or columns (column-major) of ld
     * elements; ld >= max(1, row or column length) by the standard, and a
     * matrix with unit stride in neither direction has no CBLAS spelling.
     * A single row or column is read in the order its unit stride says. */
    v->col = !(cols <= 1 || t->stride[nd - 1] == 1);
    if (v->col && rows > 1 && t->stride[nd - 2] != 1)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED,
                            "operand %s: CBLAS needs unit stride along a row or down a column", slot);
    v->base = t->data;
    need = v->col ? (rows > 1 ? rows : 1) : (cols > 1 ? cols : 1);
    /* one row (column): its stride is never used */
    v->ld = (v->col ? cols : rows) <= 1 ? need : t->stride[v->col ? nd - 1 : nd - 2];
    if (v->ld < need)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED,
                            "operand %s: %s overlap (leading dimension below their length)", slot,
                            v->col ? "columns" : "rows");
    if (v->ld > INT_MAX)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "operand %s: leading dimension above INT_MAX", slot);
    v->batch_stride = nd == 3 ? t->stride[0] : 0;
    return QF_OK;
}

/* The library's thread count for this call: call->threads, or its own
 * default again (0: "its choice"), when it has a setter we know. */
static void set_threads(const cblas_lib *lib, int threads)
{
    int n = threads > 0 ? threads : lib->default_threads;
    if (n <= 0)
        return;
    if (lib->set_int)
        lib->set_int(n);
    else if (lib->set_i64)
        lib->set_i64((int64_t)n);
}

static int is_f32_value(double x)
{
    return (double)(float)x == x;
}

static qf_status cblas_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size)
{
    const cblas_entry *e = k->user;
    const qf_op_gemm *g = &op->u.gemm;
    (void)dtype;
    if (op->op != QF_OP_GEMM) {
        snprintf(why, why_size, "not a gemm");
        return QF_EUNSUPPORTED;
    }
    if (g->groups) {
        snprintf(why, why_size, "grouped GEMM has no CBLAS entry point");
        return QF_EUNSUPPORTED;
    }
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX) {
        snprintf(why, why_size, "M, N or K above INT_MAX (the CBLAS int interface)");
        return QF_EUNSUPPORTED;
    }
    if (e->which != E_DGEMM && (!is_f32_value(g->alpha) || !is_f32_value(g->beta))) {
        snprintf(why, why_size, "alpha and beta must be float32 values (%s takes float)",
                 entry_sym[e->which]);
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static qf_status cblas_run(void *ctx, const qf_kernel_call *call)
{
    const cblas_entry *e = ctx;
    const qf_op_gemm *g;
    int64_t batch, m, n, k, p;
    size_t esz_ab, esz_cd;
    int ta, tb, has_c;
    view A, B, C, D;
    qf_status s;
    char why[160];

    if (!e || !call->op || call->op->op != QF_OP_GEMM)
        return _qf_cpu_fail(call, QF_EINVAL, "not a gemm call");
    g = &call->op->u.gemm;
    if (cblas_supports(call->kernel, call->op, call->dtype, why, sizeof why) != QF_OK)
        return _qf_cpu_fail(call, QF_EUNSUPPORTED, "%s", why);
    m = (int64_t)g->m;
    n = (int64_t)g->n;
    k = (int64_t)g->k;
    batch = g->batch ? (int64_t)g->batch : 1;
    ta = g->trans_a != 0;
    tb = g->trans_b != 0;
    has_c = g->beta != 0;
    esz_ab = e->which == E_DGEMM ? 8 : e->which == E_SBGEMM ? 2 : 4;
    esz_cd = e->which == E_DGEMM ? 8 : 4;
    if ((s = get_view(call, &call->in[0], "a", batch, ta ? k : m, ta ? m : k, &A)) != QF_OK ||
        (s = get_view(call, &call->in[1], "b", batch, tb ? n : k, tb ? k : n, &B)) != QF_OK ||
        (s = get_view(call, &call->out[0], "d", batch, m, n, &D)) != QF_OK ||
        (has_c && (s = get_view(call, &call->in[2], "c", batch, m, n, &C)) != QF_OK))
        return s;
    if (m == 0 || n == 0)
        return QF_OK;

    set_threads(e->lib, call->threads);
    for (p = 0; p < batch; p++) {
        const void *a = A.base + (size_t)(p * A.batch_stride) * esz_ab;
        const void *b = B.base + (size_t)(p * B.batch_stride) * esz_ab;
        char *d = D.base + (size_t)(p * D.batch_stride) * esz_cd;
        /* The call's order is d's.  An operand stored the other way is, in
         * that order, the transpose of what it holds (a row-major [r][c]
         * with ld is a column-major [c][r] with the same ld), so its
         * transpose flag flips (the C interface of the standard's annex B). */
        int order = D.col ? CB_COL_MAJOR : CB_ROW_MAJOR;
        int cta = (ta != (A.col != D.col)) ? CB_TRANS : CB_NO_TRANS;
        int ctb = (tb != (B.col != D.col)) ? CB_TRANS : CB_NO_TRANS;
        /* The BLAS updates C in place: d starts as c.  With beta = 0 it is
         * left as the runner poisoned it: the standard says C "need not be
         * set on input" then, so a BLAS that reads it is wrong. */
        if (has_c) {
            const char *c = C.base + (size_t)(p * C.batch_stride) * esz_cd;
            int64_t i, j;
            for (i = 0; i < m; i++)
                for (j = 0; j < n; j++)
                    memcpy(d + (size_t)(D.col ? j * D.ld + i : i * D.ld + j) * esz_cd,
                           c + (size_t)(C.col ? j * C.ld + i : i * C.ld + j) * esz_cd, esz_cd);
        }
        switch (e->which) {
        case E_SGEMM: {
            sgemm_fn f;
            memcpy(&f, &e->fn, sizeof f);
            f(order, cta, ctb, (int)m, (int)n, (int)k, (float)g->alpha, a, (int)A.ld, b, (int)B.ld,
              (float)g->beta, (float *)(void *)d, (int)D.ld);
            break;
        }
        case E_DGEMM: {
            dgemm_fn f;
            memcpy(&f, &e->fn, sizeof f);
            f(order, cta, ctb, (int)m, (int)n, (int)k, g->alpha, a, (int)A.ld, b, (int)B.ld, g->beta,
              (double *)(void *)d, (int)D.ld);
            break;
        }
        default: {
            sbgemm_fn f;
            memcpy(&f, &e->fn, sizeof f);
            f(order, cta, ctb, (int)m, (int)n, (int)k, (float)g->alpha, a, (int)A.ld, b, (int)B.ld,
              (float)g->beta, (float *)(void *)d, (int)D.ld);
            break;
        }
        }
    }
    return QF_OK;
}

/* ---- Loading ------------------------------------------------------------- */

/* What the adapter claims for one entry point (the file comment says
 * why).  cblas_sbgemm may flush subnormals: its AVX512-BF16 kernels use
 * VDPBF16PS, which treats denormal inputs and outputs as zero whatever
 * MXCSR says (Intel SDM vol. 2, VDPBF16PS), and flushing is the weaker
 * claim (its bound adds what flushing can lose). */
static void entry_tuple(int which, qf_dtype_tuple *t)
{
    qf_format_id io = which == E_DGEMM ? QF_FLOAT64 : QF_FLOAT32;
    memset(t, 0, sizeof *t);
    t->name = entry_dtype[which];
    t->in[0] = t->in[1] = which == E_SBGEMM ? QF_BFLOAT16 : io;
    t->in[2] = t->out[0] = io;
    t->arith = qf_arith_claim_default();
    t->arith.acc_format = io;
    t->arith.acc_frac_bits = 0;
    t->arith.block_fma = 1;
    t->arith.acc_round = QF_ROUND_RNE;
    t->arith.sum_order = QF_SUM_SEQUENTIAL;
    t->arith.out_round = QF_ROUND_RNE;
    t->arith.promote_interval = 0;
    t->arith.deterministic = 0;
    t->arith.deterministic_threads = 0;
    t->arith.flush_subnormals = which == E_SBGEMM;
}

/* Split "cblas:PATH[:SYMBOL]"; a trailing ":cblas_..." is the symbol (so
 * a path may itself hold ':'). */
static qf_status parse_spec(const char *spec, char *path, size_t path_size, const char **symbol, char *err,
                            size_t err_size)
{
    const char *rest, *colon;
    size_t n;
    if (!spec || strncmp(spec, "cblas:", 6)) {
        const char *c = spec ? strchr(spec, ':') : NULL;
        ERRF("unknown adapter '%.*s' (known: cblas; the spec is cblas:LIB.so[:SYMBOL])",
             c ? (int)(c - spec) : 64, spec ? spec : "");
        return QF_EINVAL;
    }
    rest = spec + 6;
    colon = strrchr(rest, ':');
    *symbol = NULL;
    n = strlen(rest);
    if (colon && !strncmp(colon + 1, "cblas_", 6)) {
        *symbol = colon + 1;
        n = (size_t)(colon - rest);
    }
    if (n == 0) {
        ERRF("adapter spec '%s' names no library (cblas:LIB.so[:SYMBOL])", spec);
        return QF_EINVAL;
    }
    if (n >= path_size) {
        ERRF("library path in '%.64s...' is too long", spec);
        return QF_EINVAL;
    }
    memcpy(path, rest, n);
    path[n] = '\0';
    return QF_OK;
}

struct adapter_try {
    qf_registry *r;
    const char *spec;
};

static int adapter_trial(void *ctx)
{
    const struct adapter_try *t = ctx;
    return qf_adapter_load(t->r, t->spec, NULL, 0) == QF_OK ? 0 : 1;
}

qf_status qf_adapter_load(qf_registry *r, const char *spec, char *err, size_t err_size)
{
    char path[4096], lname[64];
    const char *symbol;
    cblas_lib *lib;
    int want[E_COUNT] = {0}, i, pl;
    qf_status s;

    if (err && err_size)
        err[0] = '\0';
    if (!r)
        return QF_EINVAL;
    if ((s = parse_spec(spec, path, sizeof path, &symbol, err, err_size)) != QF_OK)
        return s;
    if (symbol) {
        for (i = 0; i < E_COUNT; i++)
            if (!strcmp(symbol, entry_sym[i]))
                want[i] = 1;
        if (!want[E_SGEMM] && !want[E_DGEMM] && !want[E_SBGEMM]) {
            ERRF("%s: unknown CBLAS entry point '%s' (known: cblas_sgemm, cblas_dgemm, cblas_sbgemm)", path,
                 symbol);
            return QF_EINVAL;
        }
    }
    {
        /* A FIFO would block dlopen; a library whose constructors crash,
         * exit or hang is caught in a child first (qualify/plugin.c). */
        char msg[1024];
        if (strchr(path, '/') && _qf_check_regular(path, msg, sizeof msg) && access(path, F_OK) == 0) {
            ERRF("%s", msg);
            return QF_EINVAL;
        }
        if (_qf_load_trial(path, adapter_trial, (void *)&(struct adapter_try){r, spec}, msg, sizeof msg)) {
            ERRF("%s", msg);
            return QF_EINVAL;
        }
    }
    lib = calloc(1, sizeof *lib);
    if (!lib) {
        ERRF("out of memory");
        return QF_ENOMEM;
    }
    dlerror();
    lib->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib->dl) {
        const char *e = dlerror();
        ERRF("cannot load %s: %s", path, e ? e : "unknown error");
        free(lib);
        return QF_EIO;
    }
    for (i = 0; i < E_COUNT; i++) {
        void *f = sym(lib->dl, entry_sym[i]);
        /* Without a symbol named: sgemm and dgemm are required (every
         * CBLAS has both), sbgemm is taken when there. */
        int required = symbol ? want[i] : i != E_SBGEMM;
        if (!f && required) {
            ERRF("%s does not export %s", path, entry_sym[i]);
            cblas_close(lib);
            return QF_EIO;
        }
        if (f && (!symbol || want[i]))
            lib->e[i].fn = f;
    }
    {
        void *f;
        if ((f = sym(lib->dl, "openblas_set_num_threads")) || (f = sym(lib->dl, "MKL_Set_Num_Threads"))) {
            get_int_fn get = NULL;
            void *g = sym(lib->dl, "openblas_get_num_threads");
            if (!g)
                g = sym(lib->dl, "MKL_Get_Max_Threads");
            memcpy(&lib->set_int, &f, sizeof lib->set_int);
            if (g) {
                memcpy(&get, &g, sizeof get);
                lib->default_threads = get();
            }
        } else if ((f = sym(lib->dl, "bli_thread_set_num_threads"))) {
            void *g = sym(lib->dl, "bli_thread_get_num_threads");
            memcpy(&lib->set_i64, &f, sizeof lib->set_i64);
            if (g) {
                get_i64_fn get;
                int64_t d;
                memcpy(&get, &g, sizeof get);
                d = get();
                lib->default_threads = d > 0 && d <= INT_MAX ? (int)d : 0;
            }
        }
    }

    lib_name(path, lname, sizeof lname);
    {
        char origin[4096 + 8];
        snprintf(origin, sizeof origin, "cblas:%s", path);
        pl = _qf_registry_owner_begin(r, origin, lib, cblas_close);
    }
    if (pl < 0) {
        cblas_close(lib);
        ERRF("out of memory");
        return QF_ENOMEM;
    }
    s = QF_OK;
    for (i = 0; i < E_COUNT && s == QF_OK; i++) {
        cblas_entry *e = &lib->e[i];
        qf_kernel k;
        if (!e->fn)
            continue;
        e->lib = lib;
        e->which = i;
        snprintf(e->name, sizeof e->name, "gemm.cblas.%s.%s", lname, entry_dtype[i]);
        snprintf(e->desc, sizeof e->desc,
                 "%s of %.300s through the cblas adapter: %s accumulation in an order the BLAS does not "
                 "state; no determinism claimed%s",
                 entry_sym[i], path, i == E_DGEMM ? "float64" : "float32",
                 lib->set_int || lib->set_i64 ? "" : "; the library's own thread count");
        entry_tuple(i, &e->tuple);
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = (uint32_t)sizeof k;
        k.name = e->name;
        k.op = QF_OP_GEMM;
        k.kind = QF_KERNEL_OPTIMIZED;
        k.description = e->desc;
        k.backend = "cpu";
        k.archs = "cpu";
        k.dtypes = &e->tuple;
        k.n_dtypes = 1;
        k.run = cblas_run;
        k.supports = cblas_supports;
        k.user = e;
        /* Leading dimensions, either storage order (per operand: the
         * transpose flags absorb a mismatch with d's) and any batch
         * stride: each batch entry is its own call. */
        k.layouts = QF_LAYOUT_ALL;
        s = qf_registry_add(r, &k);
    }
    if (s != QF_OK)
        ERRF("%s", qf_registry_error(r));
    /* On failure this removes the kernels added and closes lib. */
    _qf_registry_plugin_end(r, pl, s == QF_OK);
    return s;
}
