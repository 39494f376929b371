/* rope.c: the rope op class (_ops.h): rotary position embedding of
 * x [tokens][heads][head_dim], interleaved or half layout, with a partial
 * rotary_dim.  The bound is derived from the float32 angle computation
 * (docs/bounds.md "RoPE"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_ops.h"
#include "qf_bound.h"

static int build(_qf_case *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_rope *ro = &p->op.u.rope;
    const char *layout = _qf_param_enum(c, "layout");
    p->op.op = QF_OP_ROPE;
    ro->tokens = c->dims[0];
    ro->heads = c->dims[1];
    ro->head_dim = c->dims[2];
    ro->rotary_dim = (size_t)_qf_param_real(c, "rotary_dim", 0);
    ro->theta = _qf_param_real(c, "theta", 10000);
    ro->pos_offset = (int64_t)_qf_param_real(c, "pos_offset", 0);
    ro->layout = layout && !strcmp(layout, "half") ? QF_REF_ROPE_HALF : QF_REF_ROPE_INTERLEAVED;
    p->rows = ro->tokens * ro->heads; /* one row per (token, head) */
    p->cols = ro->head_dim;
    return 0;
}

static int inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    int64_t sx[3] = {(int64_t)p->op.u.rope.tokens, (int64_t)p->op.u.rope.heads,
                     (int64_t)p->op.u.rope.head_dim};
    if (_qf_gen_input(p, r, 0, d, 3, sx, p->rows, p->cols))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 3, sx);
    return 0;
}

/* Each checked row is one (token, head): a one-head "token" of its own, at
 * its token's position. */
static qf_status ref(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                     qf_ref_out *out)
{
    const qf_op_rope *ro = &p->op.u.rope;
    qf_ref_rope_params rp;
    size_t i;
    if (!rr->pos) {
        if (!(rr->pos = malloc((rr->nr + 1) * sizeof *rr->pos)))
            return QF_ENOMEM;
        for (i = 0; i < rr->nr; i++)
            rr->pos[i] = (ro->positions ? ro->positions[rr->rows[i] / ro->heads] : 0) + ro->pos_offset +
                         (ro->positions ? 0 : (int64_t)(rr->rows[i] / ro->heads));
    }
    qf_ref_rope_params_init(&rp);
    rp.tokens = rr->nr;
    rp.heads = 1;
    rp.head_dim = rr->cols;
    rp.rotary_dim = ro->rotary_dim;
    rp.layout = ro->layout;
    rp.theta = ro->theta;
    rp.positions = rr->pos;
    return qf_ref_rope(o, &rp, rr->x, out);
}

static qf_status bound(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck)
{
    const qf_op_rope *ro = &p->op.u.rope;
    qf_status s = QF_OK;
    size_t i, C = rr->cols;
    for (i = 0; i < rr->nr && s == QF_OK; i++)
        s = qf_bound_rope(&p->t->arith, p->outf, C, ro->rotary_dim, ro->layout == QF_REF_ROPE_HALF, ro->theta,
                          (double)rr->pos[i], rr->x + i * C, ck->exact + i * C, ck->bound + i * C);
    return s;
}

static const _qf_rowops rope_rows = {ref, bound};

/* clang-format off */
static const char *const layouts[] = {"interleaved", "half", NULL};
static const pspec params[] = {
    {"theta",      PT_REAL, 0, 1e12, 1, 0, NULL, 0, 10000, NULL},
    {"layout",     PT_ENUM, 0, 0, 0, 0,    layouts, 0, 0, "interleaved"},
    {"rotary_dim", PT_INT,  0, QF_SCHEMA_BIG, 0, 0, NULL, 0, 0, NULL}, /* 0: head_dim */
    {"pos_offset", PT_INT,  0, 1099511627776.0, 0, 0, NULL, 0, 0, NULL},
    QF_SCHEMA_END};
static int check(const uint64_t *dims, const qf_suite_value *(*param)(const void *, const char *), const void *pctx,
                 const char **field, char *msg, size_t size)
{
    const qf_suite_value *rd = param(pctx, "rotary_dim");
    if (dims[2] % 2) {
        *field = "shapes.head_dim";
        snprintf(msg, size, "head_dim (%llu) must be even for rope", (unsigned long long)dims[2]);
        return -1;
    }
    if (rd && ((uint64_t)rd->i > dims[2] || rd->i % 2)) {
        *field = "params.rotary_dim";
        snprintf(msg, size, "rotary_dim (%lld) must be even and at most head_dim (%llu)", (long long)rd->i,
                 (unsigned long long)dims[2]);
        return -1;
    }
    return 0;
}

static const op_schema schema = {
    "rope", 3, {"tokens", "heads", "head_dim"}, {{1, 0, -1}, {1, 0, -1}, {1, 0, -1}}, "tokens, heads, head_dim",
    QF_SCHEMA_IAO, params, check, 0};
/* clang-format on */

static void dims_of(const qf_op_desc *d, int64_t *dims)
{
    const qf_op_rope *r = &d->u.rope;
    dims[0] = _qf_abi_dim(r->tokens);
    dims[1] = _qf_abi_dim(r->heads);
    dims[2] = _qf_abi_dim(r->head_dim);
    dims[3] = _qf_abi_dim(r->rotary_dim ? r->rotary_dim : r->head_dim);
}

/* x and y [tokens][heads][head_dim] (runner_memory.c). */
static void elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    const qf_op_rope *r = &d->u.rope;
    in[0] = out[0] = _qf_mul_sat(_qf_mul_sat(r->tokens, r->heads), r->head_dim);
}

static void fields_json(const qf_op_desc *d, json_t *o)
{
    json_object_set_new(o, "theta", json_real(d->u.rope.theta));
    json_object_set_new(o, "layout",
                        json_string(d->u.rope.layout == QF_REF_ROPE_HALF ? "half" : "interleaved"));
    json_object_set_new(o, "pos_offset", json_integer(d->u.rope.pos_offset));
    if (d->u.rope.positions) {
        json_t *a = json_array();
        for (size_t i = 0; i < d->u.rope.tokens; i++)
            json_array_append_new(a, json_integer((json_int_t)d->u.rope.positions[i]));
        json_object_set_new(o, "positions", a);
    }
}

static int from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    static const char *const layouts[] = {"interleaved", "half", NULL};
    qf_op_rope *r = &d->u.rope;
    json_t *pos = json_object_get(o, "positions");
    int lay;
    r->tokens = (size_t)dims[0];
    r->heads = (size_t)dims[1];
    r->head_dim = (size_t)dims[2];
    r->rotary_dim = (size_t)dims[3];
    if (_qf_jreal(o, "theta", &r->theta, err, es) || _qf_jword(o, "layout", layouts, &lay, err, es) ||
        _qf_jint(o, "pos_offset", &r->pos_offset, err, es))
        return -1;
    r->layout = lay ? QF_REF_ROPE_HALF : QF_REF_ROPE_INTERLEAVED;
    if (pos) {
        int64_t *p;
        if (!json_is_array(pos) || json_array_size(pos) != r->tokens)
            return snprintf(err, es, "op: \"positions\" must list %zu positions", r->tokens), -1;
        if (!(p = malloc((r->tokens ? r->tokens : 1) * sizeof *p)))
            return snprintf(err, es, "out of memory"), -1;
        *owned = p;
        for (size_t i = 0; i < r->tokens; i++) {
            json_t *v = json_array_get(pos, i);
            if (!json_is_integer(v))
                return snprintf(err, es, "op: positions[%zu] is not an integer", i), -1;
            p[i] = (int64_t)json_integer_value(v);
        }
        r->positions = p;
    }
    return 0;
}

static const _qf_abi abi = {
    "rotary position embedding, interleaved or half layout", {"x", NULL}, {"y", NULL},
    {"tokens", "heads", "head_dim", "rotary_dim", NULL},     dims_of,     fields_json, from_json, elems};

const _qf_opclass _qf_op_rope = {
    .abi_info = &abi,
    .schema = &schema,
    .name = "rope",
    .abi = QF_OP_ROPE,
    .bound = "rope",
    .build = build,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs,
    .rows = &rope_rows,
};
