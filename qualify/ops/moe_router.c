/* moe_router.c: the moe_router op class (_ops.h): top-k expert selection
 * with softmax or sigmoid scores, optional renormalization and route
 * scale.  The weights are judged against the reference (a claimed ulp
 * bound); indices must equal the reference's except where a tie allows
 * either expert. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_ops.h"
#include "qf_bound.h"

static int build(_qf_case *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_moe_router *m = &p->op.u.moe_router;
    qf_suite_value v;
    int dflt;
    p->op.op = QF_OP_MOE_ROUTER;
    m->tokens = c->dims[0];
    m->experts = c->dims[1];
    m->top_k = (size_t)_qf_param_real(c, "top_k", 1);
    m->score = qf_suite_case_param(c, "score", &v, &dflt) == QF_OK && v.s && !strcmp(v.s, "sigmoid")
                   ? QF_REF_ROUTER_SIGMOID
                   : QF_REF_ROUTER_SOFTMAX;
    m->renormalize = _qf_param_real(c, "renormalize", 0) != 0;
    m->route_scale = _qf_param_real(c, "route_scale", 1);
    p->rows = m->tokens;
    p->cols = m->top_k;
    return 0;
}

static int inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    const qf_op_moe_router *m = &p->op.u.moe_router;
    int64_t sl[2] = {(int64_t)m->tokens, (int64_t)m->experts},
            sw[2] = {(int64_t)m->tokens, (int64_t)m->top_k};
    if (_qf_gen_input(p, r, 0, d, 2, sl, m->tokens, m->experts))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 2, sw);
    /* indices [tokens][top_k], int32 */
    qf_tensor_init(&p->out[1], p->t->out[0], 2, sw);
    p->out[1].index_bits = 32;
    p->out1_n = m->tokens * m->top_k;
    p->out1_eb = 4;
    return 0;
}

/* MoE router: weights (ck, every element) and indices.  An index that
 * differs from the reference's is FAILED unless the reference marked that
 * slot as a legitimate tie (QF_REF_TIE_SET / QF_REF_TIE_ORDER: keys within
 * tie_tol = 0, i.e. exactly equal, or not provably ordered).  Weights: the
 * claimed ulp bound. */
static int reference_moe(_qf_case *p, _qf_checked *ck, _qf_checked *ck1, qf_result *r, uint64_t target,
                         uint64_t tile)
{
    const qf_op_moe_router *m = &p->op.u.moe_router;
    qf_ref_moe_params mp;
    qf_ref_opts o64 = qf_ref_opts_default(), oo = qf_ref_opts_default();
    qf_ref_out ex, ro;
    int32_t *ri = NULL;
    uint8_t *ties = NULL;
    size_t i, n = p->out_n, bad = 0, flips = 0, first = 0;
    qf_status s;
    int rc = -1;
    memset(&ex, 0, sizeof ex);
    memset(&ro, 0, sizeof ro);
    qf_ref_moe_params_init(&mp);
    mp.tokens = m->tokens;
    mp.experts = m->experts;
    mp.top_k = m->top_k;
    mp.score = m->score;
    mp.renormalize = m->renormalize;
    mp.route_scale = m->route_scale;
    if (_qf_checked_all(ck, n) || qf_ref_out_alloc(&ex, n) != QF_OK || qf_ref_out_alloc(&ro, n) != QF_OK ||
        !(ri = malloc((n + 1) * sizeof *ri)) || !(ties = calloc(n + 1, 1))) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
        goto done;
    }
    o64.threads = oo.threads = 1;
    oo.format = p->outf;
    s = qf_ref_moe_router(&o64, &mp, p->inval[0], ri, &ex, ties);
    if (s == QF_OK)
        s = qf_ref_moe_router(&oo, &mp, p->inval[0], ri, &ro, NULL);
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    _qf_take_ref(ck, &ex, &ro, r);
    for (i = 0; i < n; i++) {
        int32_t got;
        memcpy(&got, p->g1[0].data + 4 * i, 4);
        if (got == ri[i])
            continue;
        if (ties[i]) {
            flips++;
            continue;
        }
        if (bad++ == 0)
            first = i;
    }
    if (bad) {
        int32_t got;
        memcpy(&got, p->g1[0].data + 4 * first, 4);
        snprintf(
            p->fail1, sizeof p->fail1,
            "indices: %zu of %zu differ from the reference with no tie to allow it (first at (%zu, %zu): "
            "expert %d, the reference selects %d)%s",
            bad, n, first / m->top_k, first % m->top_k, (int)got, (int)ri[first],
            flips ? "; legitimate tie flips elsewhere" : "");
    }
    for (i = 0; i < n; i++)
        ck->bound[i] = NAN;
    _qf_claimed_ulp(p, p->outf, n, ck->exact, ck->bound, r);
    rc = 0;
done:
    free(ri);
    free(ties);
    qf_ref_out_free(&ex);
    qf_ref_out_free(&ro);
    return rc;
}

/* clang-format off */
static const char *const scores[] = {"softmax", "sigmoid", NULL};
static const pspec params[] = {
    {"top_k",       PT_INT,  1, 4096, 0, 0, NULL, 1, 0, NULL},
    {"score",       PT_ENUM, 0, 0, 0, 0,    scores, 0, 0, "softmax"},
    {"renormalize", PT_BOOL, 0, 0, 0, 0,    NULL, 0, 0, NULL},
    {"route_scale", PT_REAL, 0, 1e6, 1, 0,  NULL, 0, 1, NULL},
    QF_SCHEMA_END};
static int check(const uint64_t *dims, const qf_suite_value *(*param)(const void *, const char *), const void *pctx,
                 const char **field, char *msg, size_t size)
{
    const qf_suite_value *tk = param(pctx, "top_k");
    if (tk && (uint64_t)tk->i > dims[1]) {
        *field = "params.top_k";
        snprintf(msg, size, "top_k (%lld) exceeds experts (%llu)", (long long)tk->i, (unsigned long long)dims[1]);
        return -1;
    }
    return 0;
}

static const op_schema schema = {
    "moe_router", 2, {"tokens", "experts"}, {{1, 0, -1}, {1, 0, -1}}, "tokens, experts", QF_SCHEMA_IAO, params, check, 0};
/* clang-format on */

static void dims_of(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.moe_router.tokens);
    dims[1] = _qf_abi_dim(d->u.moe_router.experts);
    dims[2] = _qf_abi_dim(d->u.moe_router.top_k);
}

/* logits [tokens][experts]; weights and indices [tokens][top_k]; no
 * sel_bias (runner_memory.c). */
static void elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    const qf_op_moe_router *m = &d->u.moe_router;
    in[0] = _qf_mul_sat(m->tokens, m->experts);
    out[0] = out[1] = _qf_mul_sat(m->tokens, m->top_k);
}

static void fields_json(const qf_op_desc *d, json_t *o)
{
    const qf_op_moe_router *m = &d->u.moe_router;
    json_object_set_new(o, "score", json_string(m->score == QF_REF_ROUTER_SIGMOID ? "sigmoid" : "softmax"));
    json_object_set_new(o, "renormalize", json_boolean(m->renormalize));
    json_object_set_new(o, "route_scale", json_real(m->route_scale));
}

static int from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    static const char *const scores[] = {"softmax", "sigmoid", NULL};
    qf_op_moe_router *m = &d->u.moe_router;
    int sc;
    (void)owned;
    m->tokens = (size_t)dims[0];
    m->experts = (size_t)dims[1];
    m->top_k = (size_t)dims[2];
    if (_qf_jword(o, "score", scores, &sc, err, es) || _qf_jbool(o, "renormalize", &m->renormalize, err, es) ||
        _qf_jreal(o, "route_scale", &m->route_scale, err, es))
        return -1;
    m->score = sc ? QF_REF_ROUTER_SIGMOID : QF_REF_ROUTER_SOFTMAX;
    return 0;
}

static const _qf_abi abi = {"top-k expert selection with softmax or sigmoid scores",
                            {"logits", "sel_bias", NULL},
                            {"weights", "indices", NULL},
                            {"tokens", "experts", "top_k", NULL},
                            dims_of,
                            fields_json,
                            from_json,
                            elems};

const _qf_opclass _qf_op_moe_router = {
    .abi_info = &abi,
    .schema = &schema,
    .name = "moe_router",
    .abi = QF_OP_MOE_ROUTER,
    .bound = NULL,
    .build = build,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs,
    .reference = reference_moe,
};
