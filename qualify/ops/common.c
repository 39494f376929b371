/* common.c: what the op classes share (_ops.h): verdict wording, dtype
 * roles and parameters of a case, drawing an input slot, the checked
 * elements of an output, and the table of op classes. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_ops.h"
#include "qf_bound.h"
#include "qf_npy.h"
#include "qf_refute.h"
#include "qf_safetensors.h"

/* THE op table: every op class, in qf_suite_op order (qf_suite.h names
 * the first eleven).  A new op family appends its class here. */
static const _qf_opclass *const classes[] = {
    &_qf_op_gemm,    &_qf_op_attention,  &_qf_op_softmax,    &_qf_op_log_softmax,
    &_qf_op_rmsnorm, &_qf_op_layernorm,  &_qf_op_activation, &_qf_op_glu,
    &_qf_op_rope,    &_qf_op_moe_router, &_qf_op_quantize,   &_qf_op_l2norm,
};

#define NCLASSES ((int)(sizeof classes / sizeof classes[0]))

int qf_suite_op_count(void)
{
    return NCLASSES;
}

const _qf_opclass *_qf_opclass_get(qf_suite_op op)
{
    return (int)op >= 0 && (int)op < NCLASSES ? classes[op] : NULL;
}

/* ---- The kernel ABI's ops (qf_kernel.h), from the classes that own them ---- */

static const _qf_opclass *abi_owner(qf_op op)
{
    for (int i = 0; i < NCLASSES; i++)
        if (classes[i]->abi == op && classes[i]->abi_info)
            return classes[i];
    return NULL;
}

static int count_names(const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    return n;
}

const char *qf_op_name(qf_op op)
{
    const _qf_opclass *k = abi_owner(op);
    return k ? k->name : NULL;
}

const char *qf_op_summary(qf_op op)
{
    const _qf_opclass *k = abi_owner(op);
    return k ? k->abi_info->summary : NULL;
}

qf_status qf_op_lookup(const char *name, qf_op *out)
{
    if (!name || !out)
        return QF_EINVAL;
    for (int i = 0; i < QF_OP_COUNT; i++)
        if (qf_op_name((qf_op)i) && !strcmp(qf_op_name((qf_op)i), name)) {
            *out = (qf_op)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

int qf_op_slot_count(qf_op op, int is_output)
{
    const _qf_opclass *k = abi_owner(op);
    return k ? count_names(is_output ? k->abi_info->out : k->abi_info->in) : 0;
}

const char *qf_op_slot_name(qf_op op, int is_output, int slot)
{
    if (slot < 0 || slot >= qf_op_slot_count(op, is_output))
        return NULL;
    return is_output ? abi_owner(op)->abi_info->out[slot] : abi_owner(op)->abi_info->in[slot];
}

int qf_op_dim_count(qf_op op)
{
    const _qf_opclass *k = abi_owner(op);
    return k ? count_names(k->abi_info->dims) : 0;
}

const char *qf_op_dim_name(qf_op op, int dim)
{
    if (dim < 0 || dim >= qf_op_dim_count(op))
        return NULL;
    return abi_owner(op)->abi_info->dims[dim];
}

json_t *_qf_op_json(const qf_op_desc *d)
{
    const _qf_opclass *k = d ? abi_owner(d->op) : NULL;
    int64_t dims[QF_OP_MAX_DIMS];
    json_t *o;
    int i, n;
    if (!k || !(o = json_object()))
        return NULL;
    n = qf_op_dims(d, dims);
    json_object_set_new(o, "op", json_string(k->name));
    for (i = 0; i < n; i++)
        json_object_set_new(o, qf_op_dim_name(d->op, i), json_integer(dims[i]));
    if (k->abi_info->fields_json)
        k->abi_info->fields_json(d, o);
    return o;
}

int _qf_op_from_json(json_t *o, qf_op_desc *d, void **owned, char *err, size_t err_size)
{
    const char *name = json_string_value(json_object_get(o, "op"));
    const _qf_opclass *k;
    int64_t dims[QF_OP_MAX_DIMS];
    int i, n;
    *owned = NULL;
    memset(d, 0, sizeof *d);
    if (!name || qf_op_lookup(name, &d->op) != QF_OK || !(k = abi_owner(d->op)) || !k->abi_info->from_json) {
        snprintf(err, err_size, "op: unknown op '%s'", name ? name : "(none)");
        return -1;
    }
    n = qf_op_dim_count(d->op);
    for (i = 0; i < n; i++)
        if (_qf_jint(o, qf_op_dim_name(d->op, i), &dims[i], err, err_size))
            return -1;
        else if (dims[i] < 0) {
            snprintf(err, err_size, "op: dimension %s is negative", qf_op_dim_name(d->op, i));
            return -1;
        }
    return k->abi_info->from_json(d, dims, o, owned, err, err_size);
}

static int is_number(const json_t *j)
{
    return json_is_number(j);
}
static int is_integer(const json_t *j)
{
    return json_is_integer(j);
}
static int is_boolean(const json_t *j)
{
    return json_is_boolean(j);
}

/* Member key of o if is(member), else NULL with the reason in err. */
static json_t *jmember(json_t *o, const char *key, int (*is)(const json_t *), const char *what, char *err,
                       size_t err_size)
{
    json_t *v = json_object_get(o, key);
    if (!v || !is(v)) {
        snprintf(err, err_size, "op: \"%s\" is %s (%s expected)", key, v ? "of another type" : "missing", what);
        return NULL;
    }
    return v;
}

int _qf_jreal(json_t *o, const char *key, double *v, char *err, size_t err_size)
{
    json_t *j = jmember(o, key, is_number, "a number", err, err_size);
    return j ? (*v = json_number_value(j), 0) : -1;
}

int _qf_jint(json_t *o, const char *key, int64_t *v, char *err, size_t err_size)
{
    json_t *j = jmember(o, key, is_integer, "an integer", err, err_size);
    return j ? (*v = (int64_t)json_integer_value(j), 0) : -1;
}

int _qf_jbool(json_t *o, const char *key, int *v, char *err, size_t err_size)
{
    json_t *j = jmember(o, key, is_boolean, "true or false", err, err_size);
    return j ? (*v = json_is_true(j), 0) : -1;
}

static int is_string(const json_t *j)
{
    return json_is_string(j);
}

const char *_qf_jstr(json_t *o, const char *key, char *err, size_t err_size)
{
    json_t *j = jmember(o, key, is_string, "a string", err, err_size);
    return j ? json_string_value(j) : NULL;
}

int _qf_jword(json_t *o, const char *key, const char *const *words, int *v, char *err, size_t err_size)
{
    const char *s = _qf_jstr(o, key, err, err_size);
    int i;
    if (!s)
        return -1;
    for (i = 0; words[i]; i++)
        if (!strcmp(words[i], s)) {
            *v = i;
            return 0;
        }
    snprintf(err, err_size, "op: \"%s\": unknown value '%s'", key, s);
    return -1;
}

int64_t _qf_abi_dim(size_t v)
{
    return v > (size_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

uint64_t _qf_mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

int _qf_op_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    const _qf_opclass *k = d ? abi_owner(d->op) : NULL;
    memset(in, 0, QF_KERNEL_MAX_IN * sizeof *in);
    memset(out, 0, QF_KERNEL_MAX_OUT * sizeof *out);
    if (!k || !k->abi_info->elems)
        return -1;
    k->abi_info->elems(d, in, out);
    return 0;
}

int qf_op_dims(const qf_op_desc *d, int64_t *dims)
{
    const _qf_opclass *k = d && dims ? abi_owner(d->op) : NULL;
    if (!k)
        return 0;
    k->abi_info->dims_of(d, dims);
    return qf_op_dim_count(d->op);
}

/* ---- Helpers ---------------------------------------------------------------- */

void _qf_say(qf_result *r, qf_cause c, const char *fmt, ...)
{
    va_list ap;
    char why[QF_RESULT_TEXT_MAX];
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    qf_result_outcome(r, c, "%s", why);
}

int _qf_fmt_eq(const qf_format *f, qf_format_id id)
{
    return f && f->id == id;
}

const qf_format *_qf_role(const qf_suite_case *c, const char *name)
{
    return qf_suite_case_format(c, name);
}

int _qf_tuple_serves(const qf_suite_case *c, const _qf_opclass *cls, const qf_dtype_tuple *t)
{
    const qf_format *acc = _qf_role(c, "acc"), *out = _qf_role(c, "out");
    if (!_qf_fmt_eq(out, t->out[0]) || (acc && !_qf_fmt_eq(acc, t->arith.acc_format)))
        return 0;
    return cls->tuple_matches(c, t);
}

int _qf_case_refute(const qf_suite_case *c)
{
    const qf_suite_input *in = c ? c->input : NULL;
    if (!in || strcmp(in->name, "refute") || in->nparams != 1 || !in->texts)
        return -1;
    return qf_refute_family_lookup(in->texts[0]);
}

int _qf_pair_planned(const qf_suite_case *c, const qf_kernel *k, int no_refute)
{
    const _qf_opclass *cls = _qf_opclass_get(c->op);
    if (_qf_case_refute(c) < 0)
        return 1;
    return !no_refute && cls && cls->refute_applies && cls->refute_applies(c, k, NULL, 0);
}

double _qf_param_real(const qf_suite_case *c, const char *key, double dflt)
{
    qf_suite_value v;
    int is_default;
    if (qf_suite_case_param(c, key, &v, &is_default) != QF_OK)
        return dflt;
    return v.type == QF_PARAM_INT || v.type == QF_PARAM_BOOL ? (double)v.i : v.r;
}

const char *_qf_param_enum(const qf_suite_case *c, const char *key)
{
    qf_suite_value v;
    int is_default;
    return qf_suite_case_param(c, key, &v, &is_default) == QF_OK ? v.s : NULL;
}

int _qf_tuple_in(const qf_suite_case *c, const qf_dtype_tuple *t)
{
    return _qf_fmt_eq(_qf_role(c, "in"), t->in[0]);
}

/* The shape of the tensor a file distribution reads (.npy, or a tensor
 * of a .safetensors: the named one, or the only one). */
static qf_status file_shape(const qf_dist *d, int *ndim, size_t *shape, char *err, size_t es)
{
    qf_status s;
    size_t n = strlen(d->path), i;
    if (d->tensor[0] || (n >= 12 && !strcmp(d->path + n - 12, ".safetensors"))) {
        qf_safetensors st;
        size_t idx = 0;
        if ((s = qf_safetensors_open(d->path, &st, err, es)) != QF_OK)
            return s;
        if (d->tensor[0])
            s = qf_safetensors_find(&st, d->tensor, &idx, err, es);
        if (s == QF_OK) {
            *ndim = st.tensors[idx].ndim;
            for (i = 0; i < (size_t)*ndim; i++)
                shape[i] = st.tensors[idx].shape[i];
        }
        qf_safetensors_close(&st);
        return s;
    }
    qf_npy a;
    if ((s = qf_npy_read(d->path, &a, err, es)) != QF_OK)
        return s;
    *ndim = a.ndim;
    for (i = 0; i < (size_t)a.ndim; i++)
        shape[i] = a.shape[i];
    qf_npy_free(&a);
    return QF_OK;
}

const qf_dist *_qf_slot_dist(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim,
                             const int64_t *shape)
{
    const char *name = qf_op_slot_name(p->op.op, 0, slot);
    const qf_dist *own = &p->slot_dist[slot];
    size_t fshape[QF_NPY_MAX_DIMS > QF_ST_MAX_DIMS ? QF_NPY_MAX_DIMS : QF_ST_MAX_DIMS];
    char err[256], have[128], want[128];
    int fnd = 0, i;
    if (!(p->slot_own & (1u << slot)))
        return d;
    p->slot_drawn |= 1u << slot;
    if (own->kind != QF_DIST_FILE)
        return own;
    /* The whole-case file keeps its element-count rule (docs/inputs.md);
     * a slot's own file says which tensor it is, so its shape must be the
     * slot's, dimension by dimension. */
    if (file_shape(own, &fnd, fshape, err, sizeof err) != QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input %s: %s", name, err);
        return NULL;
    }
    for (i = 0; i < ndim && i < fnd; i++)
        if ((int64_t)fshape[i] != shape[i])
            break;
    if (i < ndim || fnd != ndim) {
        size_t want_u[QF_NPY_MAX_DIMS];
        int k;
        for (k = 0; k < ndim && k < QF_NPY_MAX_DIMS; k++)
            want_u[k] = (size_t)shape[k];
        qf_npy_shape_str(fnd, fshape, have, sizeof have);
        qf_npy_shape_str(ndim, want_u, want, sizeof want);
        if (fnd != ndim)
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: input %s: %s has %d dimension(s) %s, the case's %s is %s (%d dimensions)",
                    name, own->path, fnd, have, name, want, ndim);
        else
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: input %s: %s has shape %s, the case's %s is %s: dimension %d is %zu, not "
                    "%lld",
                    name, own->path, have, name, want, i, fshape[i], (long long)shape[i]);
        return NULL;
    }
    return own;
}

/* Generate input slot `slot` as rows x cols of the tuple's format. */
int _qf_gen_input(_qf_case *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                  size_t rows, size_t cols)
{
    const qf_format *f = qf_format_get(p->t->in[slot]);
    char err[256];
    size_t n = rows * cols;
    qf_status s;
    if (!(d = _qf_slot_dist(p, r, slot, d, ndim, shape)))
        return -1;
    if (!f) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input slot %d has no valid format", slot);
        return -1;
    }
    p->inval[slot] = malloc((n ? n : 1) * sizeof(double));
    p->incode[slot] = malloc(qf_format_array_bytes(f, n ? n : 1) + 8);
    if (!p->inval[slot] || !p->incode[slot]) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory generating inputs");
        return -1;
    }
    /* The chunk entry point runs in this thread only: the worker must not
     * start OpenMP threads before it forks the kernel child. */
    s = qf_inputs_generate_rows(d, p->seed, (uint64_t)slot, f, NULL, rows, cols, 0, rows, p->inval[slot],
                                p->incode[slot], err, sizeof err);
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: input %s: %s", qf_op_slot_name(p->op.op, 0, slot),
                err);
        return -1;
    }
    qf_tensor_init(&p->in[slot], f->id, ndim, shape);
    p->in[slot].data = p->incode[slot];
    p->in[slot].bytes = qf_format_array_bytes(f, n);
    return 0;
}

uint64_t _qf_load_code(const unsigned char *base, int bytes, size_t i)
{
    const unsigned char *q = base + i * (size_t)bytes;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (bytes) {
    case 1: memcpy(&u8, q, 1); return u8;
    case 2: memcpy(&u16, q, 2); return u16;
    case 4: memcpy(&u32, q, 4); return u32;
    default: memcpy(&u64, q, 8); return u64;
    }
}

void _qf_inval_release(_qf_case *p)
{
    int i;
    if (p->cls->explain && _qf_case_refute(p->c) >= 0)
        return;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        free(p->inval[i]);
        p->inval[i] = NULL;
    }
}

double _qf_in_at(const _qf_case *p, int slot, size_t i)
{
    const qf_format *f = qf_format_get(p->t->in[slot]);
    size_t eb = (size_t)f->storage_bits / 8;
    double v = NAN;
    if (p->inval[slot])
        return p->inval[slot][i];
    /* the function that made the values (qf_format_decode_array): the same bits */
    if (qf_format_decode_array(f, (const unsigned char *)p->incode[slot] + i * eb, 1, &v) != QF_OK)
        return NAN;
    return v;
}

double _qf_ck_got(const _qf_case *p, const _qf_checked *ck, size_t i)
{
    return qf_format_decode(p->outf, _qf_load_code(p->g[0].data, p->outf->storage_bits / 8, _qf_ck_at(ck, i)));
}

int _qf_claimed_ulp(const _qf_case *p, const qf_format *f, size_t n, const double *exact, double *bound,
                    qf_result *r)
{
    double u = p->t->arith.max_ulp;
    if (!(u > 0))
        return 0;
    qf_bound_ulp(f, u, n, exact, bound);
    if (!r->bound.kind[0])
        snprintf(r->bound.kind, sizeof r->bound.kind, "ulp");
    r->bound.claimed_ulp = u;
    return 1;
}

size_t _qf_exact_zeros(const _qf_case *p, const _qf_checked *ck,
                       int (*made)(const _qf_case *p, size_t at, long *fact))
{
    size_t i, n = 0, row = (size_t)-1, C = p->cols ? p->cols : 1;
    long fact = -1;
    for (i = 0; i < ck->n; i++) {
        size_t at = _qf_ck_at(ck, i);
        if (ck->exact[i] != 0 || ck->status[i] == QF_REF_UNDECIDED || ck->status[i] == QF_REF_UNDEFINED)
            continue;
        if (at / C != row) {
            row = at / C;
            fact = -1;
        }
        n += made(p, at, &fact) != 0;
    }
    return n;
}

void _qf_checked_free(_qf_checked *ck)
{
    free(ck->idx);
    free(ck->exact);
    free(ck->rounded);
    free(ck->bound);
    free(ck->absb);
    free(ck->status);
}
int _qf_checked_alloc(_qf_checked *ck, size_t n)
{
    size_t m = n ? n : 1;
    ck->n = n;
    ck->exact = malloc(m * sizeof(double));
    ck->rounded = malloc(m * sizeof(double));
    ck->bound = malloc(m * sizeof(double));
    ck->absb = malloc(m * sizeof(double));
    ck->status = calloc(m, 1);
    return ck->exact && ck->rounded && ck->bound && ck->absb && ck->status ? 0 : -1;
}

/* Every element of an output of n, in order. */
int _qf_checked_all(_qf_checked *ck, size_t n)
{
    ck->idx = NULL; /* in order: no index array */
    return _qf_checked_alloc(ck, n);
}

void _qf_take_ref(_qf_checked *ck, const qf_ref_out *ex, const qf_ref_out *ro, qf_result *r)
{
    memcpy(ck->exact, ex->value, ck->n * sizeof(double));
    memcpy(ck->rounded, ro->value, ck->n * sizeof(double));
    memcpy(ck->status, ro->status, ck->n);
    r->ref_exact += ro->n_exact;
    r->ref_rounded += ro->n_rounded;
    r->ref_undecided += ro->n_undecided;
    r->ref_undefined += ro->n_undefined;
}
