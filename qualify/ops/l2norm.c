/* l2norm.c: the L2 normalization op class (_ops.h): y = x / max(||x||_2,
 * eps) per row of x [rows][cols], as torch.nn.functional.normalize(x, p=2,
 * dim=-1, eps).  Row-wise: the shared row reference (rowref.c) samples
 * whole rows and calls the hooks below; the reference is MPFR's
 * (refs/ref_l2norm.c), the bound qf_bound_l2norm (docs/bounds.md "L2
 * normalization").  docs/l2norm.md describes the op end to end. */
#include <string.h>

#include "_ops.h"
#include "qf_bound.h"

/* clang-format off */
static const pspec l2_params[] = {
    {"eps", PT_REAL, 0, 1, 1, 0, NULL, 0, 1e-12, NULL},
    QF_SCHEMA_END};
static const op_schema l2norm_schema = {"l2norm", QF_SCHEMA_ROWS_COLS, QF_SCHEMA_IAO, l2_params, NULL, QF_LAYOUT_LD};
/* clang-format on */

static void l2_dims(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.norm.rows);
    dims[1] = _qf_abi_dim(d->u.norm.cols);
}

/* x and y rows x cols (runner_memory.c). */
static void l2_elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    in[0] = out[0] = _qf_mul_sat(d->u.norm.rows, d->u.norm.cols);
}

static const _qf_abi l2norm_abi = {"x / max(||x||_2, eps) per row", {"x", NULL}, {"y", NULL},
                                   {"rows", "cols", NULL},          l2_dims,     _qf_norm_fields_json, _qf_norm_from_json, l2_elems};

/* The problem reuses qf_op_norm (rows, cols, eps); weight_offset stays 0. */
static int l2_build(_qf_case *p, qf_result *r)
{
    (void)r;
    p->op.op = QF_OP_L2NORM;
    p->op.u.norm.rows = p->c->dims[0];
    p->op.u.norm.cols = p->c->dims[1];
    p->op.u.norm.eps = _qf_param_real(p->c, "eps", 1e-12);
    p->op.u.norm.weight_offset = 0;
    p->rows = p->c->dims[0];
    p->cols = p->c->dims[1];
    return 0;
}

static int l2_inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    int64_t sx[2] = {(int64_t)p->rows, (int64_t)p->cols};
    if (_qf_gen_input(p, r, 0, d, 2, sx, p->rows, p->cols))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 2, sx);
    return 0;
}

static qf_status l2_ref(const _qf_case *p, _qf_rowref *rr, const _qf_checked *ck, const qf_ref_opts *o,
                        qf_ref_out *out)
{
    qf_ref_l2norm_params lp;
    (void)ck;
    memset(&lp, 0, sizeof lp);
    lp.rows = rr->nr;
    lp.cols = rr->cols;
    lp.eps = p->op.u.norm.eps;
    return qf_ref_l2norm(o, &lp, rr->x, out);
}

static qf_status l2_bound(const _qf_case *p, const _qf_rowref *rr, _qf_checked *ck)
{
    qf_status s = QF_OK;
    size_t i, C = rr->cols;
    for (i = 0; i < rr->nr && s == QF_OK; i++)
        s = qf_bound_l2norm(&p->t->arith, p->outf, C, rr->x + i * C, p->op.u.norm.eps, ck->exact + i * C,
                            ck->bound + i * C);
    return s;
}

static const _qf_rowops l2_rows = {l2_ref, l2_bound};

const _qf_opclass _qf_op_l2norm = {
    .abi_info = &l2norm_abi,
    .schema = &l2norm_schema,
    .name = "l2norm",
    .abi = QF_OP_L2NORM,
    .bound = "l2norm",
    .build = l2_build,
    .tuple_matches = _qf_tuple_in,
    .inputs = l2_inputs,
    .layout_in = 0x1u, /* x (and the output y): a row pitch */
    .rows = &l2_rows,
};
