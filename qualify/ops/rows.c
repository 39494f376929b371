/* rows.c: the row-wise op classes (_ops.h): softmax, log_softmax,
 * rmsnorm, layernorm, activation and glu.  Each case is rows x cols; the
 * reference is MPFR's (refs/), sampled by whole rows (rowref.c); bounds
 * are derived in qualify/bounds.c (docs/bounds.md). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_ops.h"
#include "qf_bound.h"

/* ---- Schemas ------------------------------------------------------------ */

/* clang-format off */
static const pspec no_params[] = {QF_SCHEMA_END};
static const pspec rms_params[] = {
    {"eps",           PT_REAL, 0, 1, 1, 0,      NULL, 0, 1e-6, NULL},
    {"weight",        PT_BOOL, 0, 0, 0, 0,      NULL, 0, 1, NULL},
    {"weight_offset", PT_REAL, -1e6, 1e6, 0, 0, NULL, 0, 0, NULL},
    QF_SCHEMA_END};
static const pspec ln_params[] = {
    {"eps",    PT_REAL, 0, 1, 1, 0, NULL, 0, 1e-5, NULL},
    {"weight", PT_BOOL, 0, 0, 0, 0, NULL, 0, 1, NULL},
    {"bias",   PT_BOOL, 0, 0, 0, 0, NULL, 0, 1, NULL},
    QF_SCHEMA_END};
static const char *const act_names[] = {"gelu", "gelu_erf", "gelu_tanh", "silu", "sigmoid", "relu", NULL};
static const pspec act_params[] = {
    {"fn", PT_ENUM, 0, 0, 0, 0, act_names, 1, 0, NULL},
    QF_SCHEMA_END};
static const op_schema softmax_schema     = {"softmax",     QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IAO,  no_params, NULL, QF_LAYOUT_LD};
static const op_schema log_softmax_schema = {"log_softmax", QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IAO,  no_params, NULL, QF_LAYOUT_LD};
static const op_schema rmsnorm_schema     = {"rmsnorm",     QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IWAO, rms_params, NULL, QF_LAYOUT_LD};
static const op_schema layernorm_schema   = {"layernorm",   QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IWAO, ln_params, NULL, QF_LAYOUT_LD};
static const op_schema activation_schema  = {"activation",  QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IAO,  act_params, NULL, 0};
static const op_schema glu_schema         = {"glu",         QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IAO,  act_params, NULL, 0};
/* clang-format on */

/* rows x cols of input 0 (and GLU's up: same distribution, its own
 * stream), output y of the same shape. */
static int row_inputs(_qf_case *p, qf_result *r, const qf_dist *d, int two)
{
    int64_t sx[2] = {(int64_t)p->rows, (int64_t)p->cols};
    if (_qf_gen_input(p, r, 0, d, 2, sx, p->rows, p->cols))
        return -1;
    if (two && _qf_gen_input(p, r, 1, d, 2, sx, p->rows, p->cols))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 2, sx);
    return 0;
}

static int rows_cols(_qf_case *p)
{
    p->rows = p->c->dims[0];
    p->cols = p->c->dims[1];
    return 0;
}

/* ---- The kernel ABI's ops ---------------------------------------------------- */

static void softmax_dims(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.softmax.rows);
    dims[1] = _qf_abi_dim(d->u.softmax.cols);
}

static void norm_dims(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.norm.rows);
    dims[1] = _qf_abi_dim(d->u.norm.cols);
}

/* The ABI flattens an activation: n = rows x cols. */
static void act_dims(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.activation.n);
}

static void softmax_json(const qf_op_desc *d, json_t *o)
{
    json_object_set_new(o, "scale", json_real(d->u.softmax.scale));
    json_object_set_new(o, "log", json_boolean(d->u.softmax.log));
}

/* rmsnorm, layernorm and l2norm share qf_op_norm. */
void _qf_norm_fields_json(const qf_op_desc *d, json_t *o)
{
    json_object_set_new(o, "eps", json_real(d->u.norm.eps));
    json_object_set_new(o, "weight_offset", json_real(d->u.norm.weight_offset));
}

static void act_json(const qf_op_desc *d, json_t *o)
{
    json_object_set_new(o, "act", json_string(qf_ref_act_name(d->u.activation.act)));
    json_object_set_new(o, "glu", json_boolean(d->u.activation.glu));
}

static int softmax_from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    (void)owned;
    d->u.softmax.rows = (size_t)dims[0];
    d->u.softmax.cols = (size_t)dims[1];
    return _qf_jreal(o, "scale", &d->u.softmax.scale, err, es) || _qf_jbool(o, "log", &d->u.softmax.log, err, es)
               ? -1
               : 0;
}

int _qf_norm_from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    (void)owned;
    d->u.norm.rows = (size_t)dims[0];
    d->u.norm.cols = (size_t)dims[1];
    return _qf_jreal(o, "eps", &d->u.norm.eps, err, es) ||
                   _qf_jreal(o, "weight_offset", &d->u.norm.weight_offset, err, es)
               ? -1
               : 0;
}

static int act_from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    const char *name = _qf_jstr(o, "act", err, es);
    (void)owned;
    d->u.activation.n = (size_t)dims[0];
    if (!name || _qf_jbool(o, "glu", &d->u.activation.glu, err, es))
        return -1;
    if (qf_ref_act_lookup(name, &d->u.activation.act) != QF_OK)
        return snprintf(err, es, "op: unknown act '%s'", name), -1;
    return 0;
}

/* Element counts (runner_memory.c): x and y rows x cols, a norm's weight
 * and bias one row each, GLU's up as x. */
static void softmax_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    in[0] = out[0] = _qf_mul_sat(d->u.softmax.rows, d->u.softmax.cols);
}

static void norm_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    in[0] = out[0] = _qf_mul_sat(d->u.norm.rows, d->u.norm.cols);
    in[1] = in[2] = d->u.norm.cols;
}

static void act_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    in[0] = out[0] = d->u.activation.n;
    in[1] = d->u.activation.glu ? d->u.activation.n : 0;
}

/* clang-format off */
static const _qf_abi softmax_abi = {"row softmax or log-softmax of scale x", {"x", NULL}, {"y", NULL},
                                    {"rows", "cols", NULL}, softmax_dims, softmax_json, softmax_from_json, softmax_elems};
static const _qf_abi rmsnorm_abi = {"x / sqrt(mean x^2 + eps) (offset + w) + b per row",
                                    {"x", "weight", "bias", NULL}, {"y", NULL}, {"rows", "cols", NULL}, norm_dims, _qf_norm_fields_json, _qf_norm_from_json, norm_elems};
static const _qf_abi layernorm_abi = {"(x - mean) / sqrt(var + eps) (offset + w) + b per row",
                                      {"x", "weight", "bias", NULL}, {"y", NULL}, {"rows", "cols", NULL}, norm_dims, _qf_norm_fields_json, _qf_norm_from_json, norm_elems};
static const _qf_abi activation_abi = {"gelu, gelu_tanh, silu, sigmoid, relu; GLU forms act(x) up",
                                       {"x", "up", NULL}, {"y", NULL}, {"n", NULL}, act_dims, act_json, act_from_json, act_elems};
/* clang-format on */

/* ---- softmax, log_softmax ------------------------------------------------- */

static int build_softmax(_qf_case *p, int log)
{
    p->op.op = QF_OP_SOFTMAX;
    p->op.u.softmax.rows = p->c->dims[0];
    p->op.u.softmax.cols = p->c->dims[1];
    p->op.u.softmax.scale = 1;
    p->op.u.softmax.log = log;
    return rows_cols(p);
}

static int build_sm(_qf_case *p, qf_result *r)
{
    return build_softmax(p, 0);
}

static int build_lsm(_qf_case *p, qf_result *r)
{
    return build_softmax(p, 1);
}

static int inputs_x(_qf_case *p, qf_result *r, const qf_dist *d)
{
    return row_inputs(p, r, d, 0);
}

static qf_status ref_softmax(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                             qf_ref_out *out)
{
    return p->op.u.softmax.log ? qf_ref_log_softmax(o, rr->x, rr->nr, rr->cols, p->op.u.softmax.scale, out)
                               : qf_ref_softmax(o, rr->x, rr->nr, rr->cols, p->op.u.softmax.scale, out);
}

/* softmax and log_softmax: the derivations of docs/bounds.md "Softmax"
 * and "Log-softmax" (one signature). */
static qf_status bound_softmax(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck)
{
    qf_status (*row)(const qf_arith_claim *, const qf_format *, size_t, const double *, double,
                     const double *, double *) =
        p->op.u.softmax.log ? qf_bound_log_softmax : qf_bound_softmax;
    qf_status s = QF_OK;
    size_t i, C = rr->cols;
    for (i = 0; i < rr->nr && s == QF_OK; i++)
        s = row(&p->t->arith, p->outf, C, rr->x + i * C, p->op.u.softmax.scale, ck->exact + i * C,
                ck->bound + i * C);
    return s;
}

static const _qf_rowops softmax_rows = {ref_softmax, bound_softmax};

/* Zeros of softmax's and log_softmax's math (docs/verdicts.md "Degenerate
 * data and exact zeros"): softmax is exactly 0 at a masked entry (scale x
 * = -inf: exp(-inf)) of a row with an entry that is not; log_softmax is
 * exactly 0 (log 1) at the one unmasked entry of a row, as in every row of
 * cols = 1.  Other zeros of the reference (an exp or a difference that
 * underflows binary64) still count.  *fact: the row's unmasked entries. */
static int zero_softmax(const _qf_case *p, size_t at, long *fact)
{
    size_t k, r0 = at / p->cols * p->cols;
    double sc = p->op.u.softmax.scale;
    if (*fact < 0)
        for (*fact = 0, k = 0; k < p->cols; k++)
            *fact += sc * _qf_in_at(p, 0, r0 + k) > -INFINITY; /* NaN rows are UNDEFINED */
    return p->op.u.softmax.log ? *fact == 1 : *fact >= 1 && sc * _qf_in_at(p, 0, at) == -INFINITY;
}

static size_t exact_zeros_softmax(const _qf_case *p, const _qf_checked *ck)
{
    return _qf_exact_zeros(p, ck, zero_softmax);
}

const _qf_opclass _qf_op_softmax = {
    .abi_info = &softmax_abi,
    .schema = &softmax_schema,
    .name = "softmax",
    .abi = QF_OP_SOFTMAX,
    .bound = "softmax",
    .build = build_sm,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs_x,
    .layout_in = 0x1u, /* x (and the output y): a row pitch */
    .rows = &softmax_rows,
    .exact_zeros = exact_zeros_softmax,
};

/* The shifted log-sum-exp's bound (docs/bounds.md "Log-softmax"). */
const _qf_opclass _qf_op_log_softmax = {
    .schema = &log_softmax_schema,
    .name = "log_softmax",
    .abi = QF_OP_SOFTMAX,
    .bound = "log_softmax",
    .build = build_lsm,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs_x,
    .layout_in = 0x1u, /* x (and the output y): a row pitch */
    .rows = &softmax_rows,
    .exact_zeros = exact_zeros_softmax,
};

/* ---- rmsnorm, layernorm ---------------------------------------------------- */

static int build_norm(_qf_case *p, qf_op op)
{
    p->op.op = op;
    p->op.u.norm.rows = p->c->dims[0];
    p->op.u.norm.cols = p->c->dims[1];
    p->op.u.norm.eps = _qf_param_real(p->c, "eps", 1e-6);
    p->op.u.norm.weight_offset = _qf_param_real(p->c, "weight_offset", 0);
    return rows_cols(p);
}

static int build_rms(_qf_case *p, qf_result *r)
{
    return build_norm(p, QF_OP_RMSNORM);
}

static int build_ln(_qf_case *p, qf_result *r)
{
    return build_norm(p, QF_OP_LAYERNORM);
}

static int tuple_norm(const qf_suite_case *c, const qf_dtype_tuple *t)
{
    return _qf_fmt_eq(_qf_role(c, "in"), t->in[0]) && _qf_fmt_eq(_qf_role(c, "weight"), t->in[1]);
}

/* Weights near 1 and small biases, as trained norms have them; drawn from
 * their own streams of the case's seed. */
static int inputs_norm(_qf_case *p, qf_result *r, const qf_dist *d)
{
    int64_t sv[1] = {(int64_t)p->cols};
    qf_dist w = qf_dist_default(QF_DIST_NORMAL);
    int want_w = _qf_param_real(p->c, "weight", 1) != 0;
    int want_b = p->op.op == QF_OP_LAYERNORM && _qf_param_real(p->c, "bias", 1) != 0;
    if (row_inputs(p, r, d, 0))
        return -1;
    w.mean = 1;
    w.std = 0.125;
    if (want_w && _qf_gen_input(p, r, 1, &w, 1, sv, 1, p->cols))
        return -1;
    w.mean = 0;
    if (want_b && _qf_gen_input(p, r, 2, &w, 1, sv, 1, p->cols))
        return -1;
    return 0;
}

static qf_status ref_norm(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                          qf_ref_out *out)
{
    qf_ref_norm_params np;
    memset(&np, 0, sizeof np);
    np.rows = rr->nr;
    np.cols = rr->cols;
    np.eps = p->op.u.norm.eps;
    np.weight = p->inval[1];
    np.bias = p->inval[2];
    np.weight_offset = p->op.u.norm.weight_offset;
    return p->op.op == QF_OP_RMSNORM ? qf_ref_rmsnorm(o, &np, rr->x, out)
                                     : qf_ref_layernorm(o, &np, rr->x, out);
}

static qf_status bound_norm(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck)
{
    qf_status s = QF_OK;
    size_t i, C = rr->cols;
    for (i = 0; i < rr->nr && s == QF_OK; i++)
        s = qf_bound_norm_offset(&p->t->arith, p->outf, C, rr->x + i * C, p->inval[1],
                                 p->op.u.norm.weight_offset, p->inval[2], p->op.u.norm.eps,
                                 p->op.op == QF_OP_LAYERNORM, ck->exact + i * C, ck->bound + i * C);
    return s;
}

static const _qf_rowops norm_rows = {ref_norm, bound_norm};

/* Zeros of RMSNorm's and LayerNorm's math from nonzero inputs (docs/
 * verdicts.md "Degenerate data and exact zeros"), without a bias (with
 * one, y is b there, zero only for a zero b): LayerNorm is exactly 0 on a
 * row whose entries are one nonzero value (x - mean = 0, and eps > 0 keeps
 * the scale finite), as in every row of cols = 1; either norm is exactly
 * 0 at a nonzero x whose scale weight_offset + w is 0 for a nonzero w.  A
 * zero from a zero input (x, or w with no offset) still counts.  *fact: 1
 * when the row is such a constant row. */
static int zero_norm(const _qf_case *p, size_t at, long *fact)
{
    size_t k, j = at % p->cols, r0 = at - j;
    double x = _qf_in_at(p, 0, at), w = p->inval[1] ? p->inval[1][j] : 0;
    if (x == 0 || p->inval[2])
        return 0;
    if (w != 0 && w + p->op.u.norm.weight_offset == 0)
        return 1;
    if (p->op.op != QF_OP_LAYERNORM)
        return 0;
    if (*fact < 0)
        for (*fact = 1, k = 0; k < p->cols && *fact; k++)
            *fact = _qf_in_at(p, 0, r0 + k) == x;
    return (int)*fact;
}

static size_t exact_zeros_norm(const _qf_case *p, const _qf_checked *ck)
{
    return _qf_exact_zeros(p, ck, zero_norm);
}

const _qf_opclass _qf_op_rmsnorm = {
    .abi_info = &rmsnorm_abi,
    .schema = &rmsnorm_schema,
    .name = "rmsnorm",
    .abi = QF_OP_RMSNORM,
    .bound = "norm",
    .build = build_rms,
    .tuple_matches = tuple_norm,
    .inputs = inputs_norm,
    .layout_in = 0x1u, /* x (and the output y): a row pitch */
    .rows = &norm_rows,
    .exact_zeros = exact_zeros_norm,
};

const _qf_opclass _qf_op_layernorm = {
    .abi_info = &layernorm_abi,
    .schema = &layernorm_schema,
    .name = "layernorm",
    .abi = QF_OP_LAYERNORM,
    .bound = "norm",
    .build = build_ln,
    .tuple_matches = tuple_norm,
    .inputs = inputs_norm,
    .layout_in = 0x1u, /* x (and the output y): a row pitch */
    .rows = &norm_rows,
    .exact_zeros = exact_zeros_norm,
};

/* ---- activation, glu ---------------------------------------------------------- */

static int build_activation(_qf_case *p, qf_result *r, int glu)
{
    const char *fn = _qf_param_enum(p->c, "fn");
    p->op.op = QF_OP_ACTIVATION;
    p->op.u.activation.n = p->c->dims[0] * p->c->dims[1];
    p->op.u.activation.glu = glu;
    if (!fn || qf_ref_act_lookup(fn, &p->op.u.activation.act) != QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: %s: unknown activation fn '%s'", p->cls->name,
                fn ? fn : "(none)");
        return -1;
    }
    return rows_cols(p);
}

static int build_act(_qf_case *p, qf_result *r)
{
    return build_activation(p, r, 0);
}

static int build_glu(_qf_case *p, qf_result *r)
{
    return build_activation(p, r, 1);
}

static int inputs_glu(_qf_case *p, qf_result *r, const qf_dist *d)
{
    return row_inputs(p, r, d, 1);
}

static qf_status ref_act(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                         qf_ref_out *out)
{
    const qf_op_activation *a = &p->op.u.activation;
    size_t i, n = rr->nr * rr->cols;
    (void)ck;
    if (!a->glu)
        return qf_ref_activation(o, a->act, rr->x, n, out);
    if (!rr->up) {
        if (!(rr->up = malloc((n + 1) * sizeof *rr->up)))
            return QF_ENOMEM;
        for (i = 0; i < n; i++) /* the block's rows (rowref.c): ck's index is not theirs */
            rr->up[i] = p->inval[1][rr->rows[i / rr->cols] * rr->cols + i % rr->cols];
    }
    return qf_ref_glu(o, a->act, rr->x, rr->up, n, out);
}

/* Derived for the cancellation-free forms (docs/bounds.md "Activations"). */
static qf_status bound_act(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck)
{
    return qf_bound_activation(&p->t->arith, p->outf, (int)p->op.u.activation.act, p->op.u.activation.glu,
                               rr->nr * rr->cols, rr->x, rr->up, ck->exact, ck->bound);
}

static const _qf_rowops act_rows = {ref_act, bound_act};

/* relu's zeros from negative inputs are exact results of its step, not a
 * sign of degenerate data (docs/verdicts.md "Degenerate data"); a zero
 * that comes from a zero input (x, or GLU's up) still counts as one.  The
 * smooth activations are zero only at x = 0 (or by underflow), so they
 * keep the rule as it is. */
static int zero_act(const _qf_case *p, size_t at, long *fact)
{
    const qf_op_activation *a = &p->op.u.activation;
    (void)fact;
    return a->act == QF_REF_ACT_RELU && _qf_in_at(p, 0, at) < 0 && (!a->glu || p->inval[1][at] != 0);
}

static size_t exact_zeros_act(const _qf_case *p, const _qf_checked *ck)
{
    return p->op.u.activation.act == QF_REF_ACT_RELU ? _qf_exact_zeros(p, ck, zero_act) : 0;
}

const _qf_opclass _qf_op_activation = {
    .abi_info = &activation_abi,
    .schema = &activation_schema,
    .name = "activation",
    .abi = QF_OP_ACTIVATION,
    .bound = "activation",
    .build = build_act,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs_x,
    .rows = &act_rows,
    .exact_zeros = exact_zeros_act,
};

const _qf_opclass _qf_op_glu = {
    .schema = &glu_schema,
    .name = "glu",
    .abi = QF_OP_ACTIVATION,
    .bound = "activation",
    .build = build_glu,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs_glu,
    .rows = &act_rows,
    .exact_zeros = exact_zeros_act,
};
