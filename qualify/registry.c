/* registry.c: ops, tensors, claims and the kernel registry (qf_kernel.h).
 *
 * Built-in kernels and plugin kernels go through the same qf_registry_add,
 * so a plugin is held to exactly the checks a built-in kernel is.
 */
#define _POSIX_C_SOURCE 200809L

#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_families.h"
#include "_registry.h"
#include "qf_kernel.h"

/* ---- Names --------------------------------------------------------------------- */

/* clang-format off */
static const char *const kind_names[QF_KERNEL_KIND_COUNT] = {
    [QF_KERNEL_REFERENCE] = "reference",
    [QF_KERNEL_OPTIMIZED] = "optimized",
    [QF_KERNEL_MODEL]     = "model",
    [QF_KERNEL_KNOWN_BAD] = "known-bad",
};

static const char *const mask_names[QF_MASK_COUNT] = {
    [QF_MASK_NONE]                = "none",
    [QF_MASK_CAUSAL]              = "causal",
    [QF_MASK_CAUSAL_BOTTOM_RIGHT] = "causal_bottom_right",
    [QF_MASK_WINDOW]              = "window",
    [QF_MASK_ADDITIVE]            = "additive",
    [QF_MASK_BOOLEAN]             = "boolean",
};

static const char *const scale_names[QF_SCALE_COUNT] = {
    [QF_SCALE_NONE]   = "none",
    [QF_SCALE_TENSOR] = "tensor",
    [QF_SCALE_ROW]    = "row",
    [QF_SCALE_COL]    = "col",
    [QF_SCALE_BLOCK]  = "block",
};
/* clang-format on */

const char *qf_mask_kind_name(qf_mask_kind m)
{
    return (unsigned)m < QF_MASK_COUNT ? mask_names[m] : NULL;
}

const char *qf_scale_kind_name(qf_scale_kind s)
{
    return (unsigned)s < QF_SCALE_COUNT ? scale_names[s] : NULL;
}

const char *qf_kernel_kind_name(qf_kernel_kind k)
{
    return (unsigned)k < QF_KERNEL_KIND_COUNT ? kind_names[k] : NULL;
}

qf_status qf_kernel_kind_lookup(const char *name, qf_kernel_kind *out)
{
    int i;
    if (!name || !out)
        return QF_EINVAL;
    for (i = 0; i < QF_KERNEL_KIND_COUNT; i++)
        if (!strcmp(kind_names[i], name)) {
            *out = (qf_kernel_kind)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

/* ---- Operand layouts ------------------------------------------------------------- */

static const char *const layout_names[] = {"ld", "col", "batch"};

const char *qf_layout_name(uint32_t bit)
{
    size_t i;
    for (i = 0; i < sizeof layout_names / sizeof layout_names[0]; i++)
        if (bit == 1u << i)
            return layout_names[i];
    return NULL;
}

qf_status qf_layout_lookup(const char *name, uint32_t *bit)
{
    size_t i;
    if (!name || !bit)
        return QF_EINVAL;
    if (!strcmp(name, "dense")) {
        *bit = 0;
        return QF_OK;
    }
    for (i = 0; i < sizeof layout_names / sizeof layout_names[0]; i++)
        if (!strcmp(name, layout_names[i])) {
            *bit = 1u << i;
            return QF_OK;
        }
    return QF_EPARSE;
}

const char *qf_layout_text(uint32_t layouts, char *buf, size_t size)
{
    size_t i, u = 0;
    if (!buf || !size)
        return buf;
    buf[0] = '\0';
    if (!layouts)
        snprintf(buf, size, "dense only");
    for (i = 0; i < sizeof layout_names / sizeof layout_names[0]; i++)
        if ((layouts & (1u << i)) && u < size)
            u += (size_t)snprintf(buf + u, size - u, "%s%s", u ? ", " : "", layout_names[i]);
    return buf;
}

/* ---- Tensors ---------------------------------------------------------------------- */

qf_status qf_tensor_init(qf_tensor *t, qf_format_id format, int ndim, const int64_t *shape)
{
    int i;
    int64_t s = 1;
    if (!t || (unsigned)format >= QF_FORMAT_COUNT || ndim < 0 || ndim > QF_TENSOR_MAX_DIMS ||
        (ndim > 0 && !shape))
        return QF_EINVAL;
    memset(t, 0, sizeof *t);
    t->format = format;
    t->ndim = ndim;
    for (i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return QF_EINVAL;
    for (i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->stride[i] = s;
        if (shape[i] > 0 && s > INT64_MAX / shape[i])
            return QF_EINVAL;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
    t->scale.kind = QF_SCALE_NONE;
    return QF_OK;
}

size_t qf_tensor_numel(const qf_tensor *t)
{
    size_t n = 1;
    int i;
    if (!t || t->ndim <= 0 || t->ndim > QF_TENSOR_MAX_DIMS)
        return 0;
    for (i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return 0;
        if (t->shape[i] && n > SIZE_MAX / (size_t)t->shape[i])
            return 0;
        n *= (size_t)t->shape[i];
    }
    return n;
}

size_t qf_tensor_dense_bytes(const qf_tensor *t)
{
    size_t n = qf_tensor_numel(t);
    if (!t)
        return 0;
    if (t->index_bits)
        return n * (size_t)(t->index_bits / 8);
    if (t->packed)
        return (n + 1) / 2;
    {
        const qf_format *f = qf_format_get(t->format);
        return f ? qf_format_array_bytes(f, n) : 0;
    }
}

/* ---- Claims --------------------------------------------------------------------- */

int qf_kernel_glob(const char *pattern, const char *name)
{
    if (!pattern || !name)
        return 0;
    return fnmatch(pattern, name, 0) == 0;
}

int qf_kernel_arch_ok(const qf_kernel *k, const char *arch)
{
    char pat[64];
    const char *p;
    if (!k || !arch)
        return 0;
    if (!strncmp(arch, "sim:", 4))
        return k->simulates && qf_kernel_glob(k->simulates, arch + 4);
    if (!k->archs)
        return 0;
    /* Walk the space-separated glob list without modifying it. */
    for (p = k->archs; *p;) {
        size_t n;
        while (*p == ' ')
            p++;
        n = strcspn(p, " ");
        if (n == 0)
            break;
        if (n < sizeof pat) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (!strcmp(pat, "any") || qf_kernel_glob(pat, arch))
                return 1;
        }
        p += n;
    }
    return 0;
}

const qf_dtype_tuple *qf_kernel_dtype(const qf_kernel *k, const char *name)
{
    size_t i;
    if (!k || !name || !k->dtypes)
        return NULL;
    for (i = 0; i < k->n_dtypes; i++)
        if (k->dtypes[i].name && !strcmp(k->dtypes[i].name, name))
            return &k->dtypes[i];
    return NULL;
}

static void why_set(char *why, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void why_set(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (!why || size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

qf_status qf_kernel_check(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype, char *why,
                          size_t why_size)
{
    int64_t dims[QF_OP_MAX_DIMS];
    int i, n;
    if (why && why_size)
        why[0] = '\0';
    if (!k || !op || !dtype) {
        why_set(why, why_size, "missing kernel, op or dtype tuple");
        return QF_EINVAL;
    }
    if (op->op != k->op) {
        why_set(why, why_size, "kernel %s computes %s, not %s", k->name, qf_op_name(k->op),
                qf_op_name(op->op) ? qf_op_name(op->op) : "an unknown op");
        return QF_EUNSUPPORTED;
    }
    if (!k->dtypes || dtype < k->dtypes || dtype >= k->dtypes + k->n_dtypes) {
        why_set(why, why_size, "dtype tuple %s is not one of kernel %s's",
                dtype->name ? dtype->name : "(unnamed)", k->name);
        return QF_EUNSUPPORTED;
    }
    n = qf_op_dims(op, dims);
    for (i = 0; i < n; i++) {
        const char *dn = qf_op_dim_name(op->op, i);
        if (k->limits.min[i] > 0 && dims[i] < k->limits.min[i]) {
            why_set(why, why_size, "%s = %" PRId64 " is below the minimum %" PRId64, dn, dims[i],
                    k->limits.min[i]);
            return QF_EUNSUPPORTED;
        }
        if (k->limits.max[i] > 0 && dims[i] > k->limits.max[i]) {
            why_set(why, why_size, "%s = %" PRId64 " is above the maximum %" PRId64, dn, dims[i],
                    k->limits.max[i]);
            return QF_EUNSUPPORTED;
        }
        if (k->limits.multiple_of[i] > 1 && dims[i] % k->limits.multiple_of[i]) {
            why_set(why, why_size, "%s = %" PRId64 " is not a multiple of %" PRId64, dn, dims[i],
                    k->limits.multiple_of[i]);
            return QF_EUNSUPPORTED;
        }
    }
    if (k->supports) {
        qf_status s = k->supports(k, op, dtype, why, why_size);
        if (s != QF_OK && why && why_size && !why[0])
            why_set(why, why_size, "kernel %s declines this case (%s)", k->name, qf_status_str(s));
        return s;
    }
    return QF_OK;
}

/* ---- Registry --------------------------------------------------------------------- */

typedef struct entry {
    qf_kernel k;
    int plugin;               /* index into plugins, -1: built-in or added directly */
    qf_dtype_tuple *own;      /* the registry's copy of k.dtypes once a claim replaced one */
    const qf_dtype_tuple *registered; /* k.dtypes as registered, before any claim */
    char *claim_origin;       /* the claim file that did, or NULL */
} entry;

typedef struct plugin {
    char *path;
    void *handle;
    void (*close)(void *handle); /* _qf_plugin_close, or an adapter's */
    int live;                    /* 0 once a failed load was rolled back */
} plugin;

/* Entries are allocated one by one so that the kernel pointers handed
 * out stay valid while more kernels are added. */
struct qf_registry {
    entry **e;
    size_t n, cap;
    plugin *p;
    size_t np, capp;
    int loading; /* plugin being registered, -1: none */
    char err[1024];
};

void _qf_registry_set_error(qf_registry *r, const char *fmt, ...)
{
    va_list ap;
    size_t len = 0;
    if (!r)
        return;
    r->err[0] = '\0';
    if (r->loading >= 0) {
        int w = snprintf(r->err, sizeof r->err, "plugin %s: ", r->p[r->loading].path);
        len = w > 0 ? (size_t)w : 0;
        if (len >= sizeof r->err)
            len = sizeof r->err - 1;
    }
    va_start(ap, fmt);
    vsnprintf(r->err + len, sizeof r->err - len, fmt, ap);
    va_end(ap);
}

qf_status qf_registry_create(qf_registry **out)
{
    qf_registry *r;
    if (!out)
        return QF_EINVAL;
    *out = NULL;
    r = calloc(1, sizeof *r);
    if (!r)
        return QF_ENOMEM;
    r->loading = -1;
    *out = r;
    return QF_OK;
}

void qf_registry_free(qf_registry *r)
{
    size_t i;
    if (!r)
        return;
    for (i = 0; i < r->np; i++) {
        if (r->p[i].handle)
            r->p[i].close(r->p[i].handle);
        free(r->p[i].path);
    }
    free(r->p);
    for (i = 0; i < r->n; i++)
    {
        free(r->e[i]->own);
        free(r->e[i]->claim_origin);
        free(r->e[i]);
    }
    free(r->e);
    free(r);
}

const char *qf_registry_error(const qf_registry *r)
{
    return r ? r->err : "";
}

/* op.impl[.more]: letters, digits and _ - + in each dot-separated part,
 * no empty part; the first part is the op's name. */
static qf_status check_name(qf_registry *r, const qf_kernel *k)
{
    const char *s = k->name, *opn = qf_op_name(k->op);
    size_t i, n, parts = 1;
    if (!s || !*s) {
        _qf_registry_set_error(r, "a kernel has no name");
        return QF_EINVAL;
    }
    n = strlen(s);
    if (n > 127) {
        _qf_registry_set_error(r, "kernel name '%.40s...' is longer than 127 characters", s);
        return QF_EINVAL;
    }
    for (i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '-' || c == '+' || c == '.';
        if (!ok) {
            _qf_registry_set_error(r,
                                   "kernel name '%s': character %zu ('%c') is not a letter, digit, "
                                   "'_', '-', '+' or '.'",
                                   s, i + 1, c);
            return QF_EINVAL;
        }
        if (c == '.') {
            parts++;
            if (i == 0 || i + 1 == n || s[i + 1] == '.') {
                _qf_registry_set_error(r, "kernel name '%s' has an empty part (names are op.impl.dtype)", s);
                return QF_EINVAL;
            }
        }
    }
    if (parts < 2 || strncmp(s, opn, strlen(opn)) || s[strlen(opn)] != '.') {
        _qf_registry_set_error(r, "kernel name '%s' must start with '%s.' (its op), as in %s.cpu.naive.f32",
                               s, opn, opn);
        return QF_EINVAL;
    }
    return QF_OK;
}

static qf_status check_kernel(qf_registry *r, const qf_kernel *k)
{
    size_t i, j;
    qf_status s;
    if (!qf_op_name(k->op)) {
        _qf_registry_set_error(r, "kernel '%s': op %d is out of range (0..%d)", k->name ? k->name : "?",
                               (int)k->op, QF_OP_COUNT - 1);
        return QF_EINVAL;
    }
    if ((s = check_name(r, k)) != QF_OK)
        return s;
    if ((unsigned)k->kind >= QF_KERNEL_KIND_COUNT) {
        _qf_registry_set_error(r,
                               "kernel '%s': kind %d is out of range (reference, optimized, model, "
                               "known-bad)",
                               k->name, (int)k->kind);
        return QF_EINVAL;
    }
    if (!k->run) {
        _qf_registry_set_error(r, "kernel '%s' has no run function", k->name);
        return QF_EINVAL;
    }
    if (!k->backend || !*k->backend || !k->archs || !*k->archs) {
        _qf_registry_set_error(r, "kernel '%s' names no back end or no architecture (use \"cpu\")", k->name);
        return QF_EINVAL;
    }
    if (k->layouts & ~QF_LAYOUT_ALL) {
        _qf_registry_set_error(r, "kernel '%s': layouts 0x%x has bits no layout names (ld, col, batch)",
                               k->name, (unsigned)k->layouts);
        return QF_EINVAL;
    }
    if (!k->dtypes || k->n_dtypes == 0) {
        _qf_registry_set_error(r, "kernel '%s' claims no dtype tuple", k->name);
        return QF_EINVAL;
    }
    for (i = 0; i < k->n_dtypes; i++) {
        const qf_dtype_tuple *t = &k->dtypes[i];
        int sl;
        if (!t->name || !*t->name) {
            _qf_registry_set_error(r, "kernel '%s': dtype tuple %zu has no name", k->name, i);
            return QF_EINVAL;
        }
        for (j = 0; j < i; j++)
            if (!strcmp(k->dtypes[j].name, t->name)) {
                _qf_registry_set_error(r, "kernel '%s': dtype tuple '%s' is listed twice", k->name, t->name);
                return QF_EINVAL;
            }
        for (sl = 0; sl < QF_KERNEL_MAX_IN; sl++)
            if ((unsigned)t->in[sl] >= QF_FORMAT_COUNT || (unsigned)t->in_scale[sl] >= QF_SCALE_COUNT ||
                (t->in_scale[sl] != QF_SCALE_NONE && (unsigned)t->in_scale_format[sl] >= QF_FORMAT_COUNT)) {
                _qf_registry_set_error(r,
                                       "kernel '%s', dtype tuple '%s': input slot %d has an unknown "
                                       "format or scale",
                                       k->name, t->name, sl);
                return QF_EFORMAT;
            }
        for (sl = 0; sl < QF_KERNEL_MAX_OUT; sl++)
            if ((unsigned)t->out[sl] >= QF_FORMAT_COUNT) {
                _qf_registry_set_error(r,
                                       "kernel '%s', dtype tuple '%s': output slot %d has an unknown "
                                       "format",
                                       k->name, t->name, sl);
                return QF_EFORMAT;
            }
        if ((s = qf_arith_claim_check(&t->arith)) != QF_OK) {
            _qf_registry_set_error(r, "kernel '%s', dtype tuple '%s': the arithmetic claim is invalid (%s)",
                                   k->name, t->name, qf_status_str(s));
            return s;
        }
    }
    for (i = 0; i < QF_OP_MAX_DIMS; i++)
        if (k->limits.min[i] < 0 || k->limits.max[i] < 0 || k->limits.multiple_of[i] < 0 ||
            (k->limits.max[i] > 0 && k->limits.min[i] > k->limits.max[i])) {
            _qf_registry_set_error(r, "kernel '%s': shape limits of dimension %s are inconsistent", k->name,
                                   qf_op_dim_name(k->op, (int)i) ? qf_op_dim_name(k->op, (int)i) : "?");
            return QF_EINVAL;
        }
    return QF_OK;
}

qf_status qf_registry_add(qf_registry *r, const qf_kernel *k)
{
    qf_status s;
    if (!r)
        return QF_EINVAL;
    if (!k) {
        _qf_registry_set_error(r, "NULL kernel record");
        return QF_EINVAL;
    }
    /* The version first: nothing else in a record of another ABI can be
     * trusted, not even where its name is. */
    if (k->abi_version != QF_KERNEL_ABI_VERSION) {
        _qf_registry_set_error(r,
                               "kernel ABI version %u, but this qualify expects %u: rebuild the "
                               "kernel against this qualify's qf_kernel.h",
                               (unsigned)k->abi_version, (unsigned)QF_KERNEL_ABI_VERSION);
        return QF_EUNSUPPORTED;
    }
    if (k->struct_size != sizeof(qf_kernel)) {
        _qf_registry_set_error(r,
                               "kernel record of %u bytes, but this qualify's qf_kernel has %zu: "
                               "rebuild the kernel against this qualify's qf_kernel.h",
                               (unsigned)k->struct_size, sizeof(qf_kernel));
        return QF_EUNSUPPORTED;
    }
    if ((s = check_kernel(r, k)) != QF_OK)
        return s;
    {
        size_t i;
        for (i = 0; i < r->n; i++)
            if (!strcmp(r->e[i]->k.name, k->name)) {
                const char *o = qf_registry_origin(r, i);
                _qf_registry_set_error(r, "kernel '%s' is already registered (by %s)", k->name, o);
                return QF_EINVAL;
            }
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        entry **e = realloc(r->e, cap * sizeof *e);
        if (!e) {
            _qf_registry_set_error(r, "out of memory");
            return QF_ENOMEM;
        }
        r->e = e;
        r->cap = cap;
    }
    r->e[r->n] = malloc(sizeof **r->e);
    if (!r->e[r->n]) {
        _qf_registry_set_error(r, "out of memory");
        return QF_ENOMEM;
    }
    r->e[r->n]->k = *k;
    r->e[r->n]->plugin = r->loading;
    r->e[r->n]->own = NULL;
    r->e[r->n]->registered = NULL;
    r->e[r->n]->claim_origin = NULL;
    r->n++;
    return QF_OK;
}

int _qf_registry_plugin_begin(qf_registry *r, const char *path, void *handle)
{
    return _qf_registry_owner_begin(r, path, handle, _qf_plugin_close);
}

int _qf_registry_owner_begin(qf_registry *r, const char *path, void *handle, void (*close)(void *))
{
    char *copy;
    if (r->np == r->capp) {
        size_t cap = r->capp ? 2 * r->capp : 4;
        plugin *p = realloc(r->p, cap * sizeof *p);
        if (!p)
            return -1;
        r->p = p;
        r->capp = cap;
    }
    copy = malloc(strlen(path) + 1);
    if (!copy)
        return -1;
    strcpy(copy, path);
    r->p[r->np].path = copy;
    r->p[r->np].handle = handle;
    r->p[r->np].close = close;
    r->p[r->np].live = 1;
    r->loading = (int)r->np;
    r->err[0] = '\0';
    return (int)r->np++;
}

void _qf_registry_plugin_end(qf_registry *r, int pl, int ok)
{
    r->loading = -1;
    if (pl < 0 || (size_t)pl >= r->np)
        return;
    if (!ok) {
        size_t i, j = 0;
        for (i = 0; i < r->n; i++) {
            if (r->e[i]->plugin != pl)
                r->e[j++] = r->e[i];
            else
                free(r->e[i]);
        }
        r->n = j;
        if (r->p[pl].handle)
            r->p[pl].close(r->p[pl].handle);
        r->p[pl].handle = NULL;
        r->p[pl].live = 0;
    }
}

size_t qf_registry_count(const qf_registry *r)
{
    return r ? r->n : 0;
}

const qf_kernel *qf_registry_get(const qf_registry *r, size_t i)
{
    return r && i < r->n ? &r->e[i]->k : NULL;
}

const char *qf_registry_origin(const qf_registry *r, size_t i)
{
    if (!r || i >= r->n)
        return NULL;
    return r->e[i]->plugin < 0 ? "built-in" : r->p[r->e[i]->plugin].path;
}

const char *qf_registry_claim_origin(const qf_registry *r, size_t i)
{
    return r && i < r->n ? r->e[i]->claim_origin : NULL;
}

const qf_dtype_tuple *_qf_registry_registered_tuples(const qf_registry *r, size_t i)
{
    if (!r || i >= r->n)
        return NULL;
    return r->e[i]->registered ? r->e[i]->registered : r->e[i]->k.dtypes;
}

size_t qf_registry_set_claim(qf_registry *r, const char *kernel_glob, const char *dtype_glob,
                             const qf_arith_claim *c, const char *origin)
{
    size_t i, j, n = 0;
    if (!r || !kernel_glob || !c || !origin || qf_arith_claim_check(c) != QF_OK)
        return 0;
    for (i = 0; i < r->n; i++) {
        entry *e = r->e[i];
        if (!qf_kernel_glob(kernel_glob, e->k.name))
            continue;
        for (j = 0; j < e->k.n_dtypes; j++) {
            char *o;
            if (dtype_glob && *dtype_glob && !qf_kernel_glob(dtype_glob, e->k.dtypes[j].name))
                continue;
            if (!e->own) {
                /* The kernel's table is not ours to change: copy it. */
                if (!(e->own = malloc(e->k.n_dtypes * sizeof *e->own)))
                    return n;
                memcpy(e->own, e->k.dtypes, e->k.n_dtypes * sizeof *e->own);
                e->registered = e->k.dtypes;
                e->k.dtypes = e->own;
            }
            if (!(o = malloc(strlen(origin) + 1)))
                return n;
            strcpy(o, origin);
            free(e->claim_origin);
            e->claim_origin = o;
            e->own[j].arith = *c;
            n++;
        }
    }
    return n;
}

const qf_kernel *qf_registry_find(const qf_registry *r, const char *name)
{
    size_t i;
    if (!r || !name)
        return NULL;
    for (i = 0; i < r->n; i++)
        if (!strcmp(r->e[i]->k.name, name))
            return &r->e[i]->k;
    return NULL;
}

size_t qf_registry_match(const qf_registry *r, const char *glob, const qf_kernel **out, size_t max)
{
    size_t i, n = 0;
    if (!r || !glob)
        return 0;
    for (i = 0; i < r->n; i++)
        if (qf_kernel_glob(glob, r->e[i]->k.name)) {
            if (out && n < max)
                out[n] = &r->e[i]->k;
            n++;
        }
    return n;
}

/* The built-in kernels: every family of kernels/families.c in its order,
 * each table in table order.  The list is walked, never named here, so a
 * family (or a back end linked in) is added without editing the registry. */
static qf_status add_family(qf_registry *r, const _qf_family *f)
{
    if (f->table) {
        size_t i, n = 0;
        const qf_kernel *t = f->table(&n);
        for (i = 0; i < n; i++) {
            qf_status s = qf_registry_add(r, &t[i]);
            if (s != QF_OK)
                return s;
        }
    }
    return f->add ? f->add(r) : QF_OK;
}

qf_status qf_registry_add_builtins(qf_registry *r)
{
    size_t i, n = 0;
    const _qf_family *f = _qf_families_get(&n);
    if (!r)
        return QF_EINVAL;
    for (i = 0; i < n; i++) {
        qf_status s = add_family(r, &f[i]);
        if (s != QF_OK)
            return s;
    }
    return QF_OK;
}
