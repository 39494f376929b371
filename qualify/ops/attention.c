/* attention.c: the attention op class (_ops.h): softmax(scale q k^T +
 * mask) v and lse, GQA, causal (both alignments) and sliding windows,
 * soft-cap.  The reference is MPFR's qf_ref_attention over every element;
 * the bounds of out and lse are derived per query row (docs/bounds.md
 * "Attention"; with a softcap, a claimed ulp). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_ops.h"
#include "qf_bound.h"
#include "qf_dot.h"

static int build(_qf_case *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_attention *a = &p->op.u.attention;
    long window = (long)_qf_param_real(c, "window", -1);
    int bottom = _qf_param_real(c, "align_bottom_right", 0) != 0;
    p->op.op = QF_OP_ATTENTION;
    a->batch = c->dims[0] ? c->dims[0] : 1;
    a->heads = c->dims[1];
    a->kv_heads = c->dims[2] ? c->dims[2] : a->heads;
    a->seq_q = c->dims[3];
    a->seq_k = c->dims[4] ? c->dims[4] : a->seq_q;
    a->head_dim = c->dims[5];
    a->head_dim_v = c->dims[6] ? c->dims[6] : a->head_dim;
    a->scale = _qf_param_real(c, "scale", 0);
    a->softcap = _qf_param_real(c, "softcap", 0);
    a->causal = _qf_param_real(c, "causal", 0) != 0;
    a->window_left = window;
    a->window_right = a->causal ? 0 : -1;
    if (window >= 0) {
        if (bottom) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: attention: a window with align_bottom_right has no qf_op_attention form");
            return -1;
        }
        a->mask = QF_MASK_WINDOW;
    } else if (a->causal) {
        a->mask = bottom ? QF_MASK_CAUSAL_BOTTOM_RIGHT : QF_MASK_CAUSAL;
    } else {
        a->mask = QF_MASK_NONE;
    }
    if (a->kv_heads == 0 || a->heads % a->kv_heads) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: attention: heads %zu not a multiple of kv_heads %zu",
                a->heads, a->kv_heads);
        return -1;
    }
    p->rows = a->batch * a->heads * a->seq_q;
    p->cols = a->head_dim_v;
    return 0;
}

static int tuple_matches(const qf_suite_case *c, const qf_dtype_tuple *t)
{
    return _qf_fmt_eq(_qf_role(c, "q"), t->in[0]) && _qf_fmt_eq(_qf_role(c, "k"), t->in[1]) &&
           _qf_fmt_eq(_qf_role(c, "v"), t->in[2]);
}

static int inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    const qf_op_attention *a = &p->op.u.attention;
    int64_t sq[4] = {(int64_t)a->batch, (int64_t)a->heads, (int64_t)a->seq_q, (int64_t)a->head_dim};
    int64_t sk[4] = {(int64_t)a->batch, (int64_t)a->kv_heads, (int64_t)a->seq_k, (int64_t)a->head_dim};
    int64_t sv[4] = {(int64_t)a->batch, (int64_t)a->kv_heads, (int64_t)a->seq_k, (int64_t)a->head_dim_v};
    int64_t so[4] = {(int64_t)a->batch, (int64_t)a->heads, (int64_t)a->seq_q, (int64_t)a->head_dim_v};
    if (_qf_gen_input(p, r, 0, d, 4, sq, a->batch * a->heads * a->seq_q, a->head_dim) ||
        _qf_gen_input(p, r, 1, d, 4, sk, a->batch * a->kv_heads * a->seq_k, a->head_dim) ||
        _qf_gen_input(p, r, 2, d, 4, sv, a->batch * a->kv_heads * a->seq_k, a->head_dim_v))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 4, so);
    /* lse [batch][heads][seq_q] in the tuple's second output format. */
    p->outf1 = qf_format_get(p->t->out[1]);
    if (!p->outf1 || p->outf1->storage_bits % 8) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: attention: the lse format is not a byte format");
        return -1;
    }
    qf_tensor_init(&p->out[1], p->t->out[1], 3, so);
    p->out1_n = a->batch * a->heads * a->seq_q;
    p->out1_eb = p->outf1->storage_bits / 8;
    return 0;
}

/* Attention: out (ck) and lse (ck1), every element (the reference works on
 * whole rows of keys; sampling is not applied).  Bounds:
 * qf_bound_attention and qf_bound_attention_lse per query row from the
 * exact scores, or, with a softcap, whose tanh the derivations do not
 * cover, the claimed ulp (fitness only without one). */
static int reference_attention(_qf_case *p, _qf_checked *ck, _qf_checked *ck1, qf_result *r, uint64_t target,
                               uint64_t tile)
{
    const qf_op_attention *a = &p->op.u.attention;
    const double *q = p->inval[0], *k = p->inval[1], *v = p->inval[2];
    const qf_format *fq = qf_format_get(p->t->in[0]), *fk = qf_format_get(p->t->in[1]);
    qf_ref_attn_params ap;
    qf_ref_opts o64 = qf_ref_opts_default(), oo = qf_ref_opts_default();
    qf_ref_out ex, ro, lex, lro;
    size_t row, j, d = a->head_dim, dv = a->head_dim_v, sk = a->seq_k, group = a->heads / a->kv_heads;
    double *sc = NULL, *sabs = NULL, scale = a->scale > 0 ? a->scale : 1 / sqrt((double)d);
    qf_status s = QF_OK;
    int rc = -1;
    memset(&ex, 0, sizeof ex);
    memset(&ro, 0, sizeof ro);
    memset(&lex, 0, sizeof lex);
    memset(&lro, 0, sizeof lro);
    qf_ref_attn_params_init(&ap);
    ap.batch = a->batch;
    ap.heads = a->heads;
    ap.kv_heads = a->kv_heads;
    ap.seq_q = a->seq_q;
    ap.seq_k = a->seq_k;
    ap.head_dim = d;
    ap.head_dim_v = dv;
    ap.scale = a->scale;
    ap.softcap = a->softcap;
    ap.causal = a->mask == QF_MASK_CAUSAL || a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT ||
                (a->mask == QF_MASK_WINDOW && a->causal);
    ap.align_bottom_right = a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT;
    ap.window_left = a->mask == QF_MASK_WINDOW ? a->window_left : -1;
    ap.window_right = a->mask == QF_MASK_WINDOW && !a->causal ? a->window_right : -1;
    if (_qf_checked_all(ck, p->out_n) || _qf_checked_all(ck1, p->out1_n) ||
        qf_ref_out_alloc(&ex, p->out_n) != QF_OK || qf_ref_out_alloc(&ro, p->out_n) != QF_OK ||
        qf_ref_out_alloc(&lex, p->out1_n) != QF_OK || qf_ref_out_alloc(&lro, p->out1_n) != QF_OK ||
        !(sc = malloc((sk + 1) * sizeof *sc)) || !(sabs = malloc((sk + 1) * sizeof *sabs))) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
        goto done;
    }
    o64.threads = oo.threads = 1;
    oo.format = p->outf;
    s = qf_ref_attention(&o64, &ap, q, k, v, &ex, &lex);
    ap.lse_format = p->outf1;
    if (s == QF_OK)
        s = qf_ref_attention(&oo, &ap, q, k, v, &ro, &lro);
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    _qf_take_ref(ck, &ex, &ro, r);
    _qf_take_ref(ck1, &lex, &lro, r);
    for (j = 0; j < ck->n; j++)
        ck->bound[j] = NAN;
    for (j = 0; j < ck1->n; j++)
        ck1->bound[j] = NAN;
    if (a->softcap == 0) {
        for (row = 0; row < p->out1_n && s == QF_OK; row++) {
            size_t b = row / (a->heads * a->seq_q), h = (row / a->seq_q) % a->heads, i = row % a->seq_q;
            size_t kvb = (b * a->kv_heads + h / group) * sk;
            long P = (long)i + (ap.align_bottom_right ? (long)sk - (long)a->seq_q : 0);
            long wl = ap.window_left, wr = ap.causal ? 0 : ap.window_right;
            for (j = 0; j < sk; j++) {
                long jj = (long)j;
                if ((wl < 0 || jj >= P - wl) && (wr < 0 || jj <= P + wr)) {
                    qf_dot_acc acc, abs;
                    qf_dot_acc_init(&acc);
                    qf_dot_acc_init(&abs);
                    qf_dot_acc_add_dot(&acc, &abs, d, q + row * d, 1, k + (kvb + j) * d, 1, fq, fk);
                    sc[j] = scale * qf_dot_acc_get_d(&acc, QF_ROUND_RNE);
                    sabs[j] = scale * qf_dot_acc_get_d(&abs, QF_ROUND_UP);
                } else {
                    sc[j] = -INFINITY;
                    sabs[j] = 0;
                }
            }
            /* The claim's KV tile and P format (flash kernels). */
            s = qf_bound_attention(&p->t->arith, p->outf, sk, d, dv, sc, sabs, v + kvb * dv,
                                   qf_arith_claim_p_format(&p->t->arith), (size_t)p->t->arith.attn_kv_tile,
                                   ck->exact + row * dv, ck->bound + row * dv);
            if (s == QF_OK)
                s = qf_bound_attention_lse(&p->t->arith, p->outf1, sk, d, sc, sabs,
                                           (size_t)p->t->arith.attn_kv_tile, ck1->exact[row],
                                           ck1->bound + row);
        }
        snprintf(r->bound.kind, sizeof r->bound.kind, "attention");
        ck1->has_bound = 1;
    } else {
        /* the softcap's tanh: no derivation, the claimed ulp (out and lse) */
        _qf_claimed_ulp(p, p->outf, ck->n, ck->exact, ck->bound, r);
        ck1->has_bound = _qf_claimed_ulp(p, p->outf1, ck1->n, ck1->exact, ck1->bound, r);
    }
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot derive the bound from the claim: %s", qf_status_str(s));
        goto done;
    }
    rc = 0;
done:
    free(sc);
    free(sabs);
    qf_ref_out_free(&ex);
    qf_ref_out_free(&ro);
    qf_ref_out_free(&lex);
    qf_ref_out_free(&lro);
    return rc;
}

/* clang-format off */
static const pspec params[] = {
    {"causal",             PT_BOOL, 0, 0, 0, 0,    NULL, 0, 0, NULL},
    {"window",             PT_INT,  -1, QF_SCHEMA_BIG, 0, 0, NULL, 0, -1, NULL}, /* left window; -1: none */
    {"softcap",            PT_REAL, 0, 1e6, 0, 0,  NULL, 0, 0, NULL},  /* 0: none */
    {"scale",              PT_REAL, 0, 1e6, 0, 0,  NULL, 0, 0, NULL},  /* 0: 1/sqrt(head_dim) */
    {"align_bottom_right", PT_BOOL, 0, 0, 0, 0,    NULL, 0, 0, NULL},
    QF_SCHEMA_END};
static int check(const uint64_t *dims, const qf_suite_value *(*param)(const void *, const char *), const void *pctx,
                 const char **field, char *msg, size_t size)
{
    (void)param;
    (void)pctx;
    if (dims[2] > dims[1] || dims[1] % dims[2] != 0) {
        *field = "shapes.kv_heads";
        snprintf(msg, size, "heads (%llu) must be a multiple of kv_heads (%llu)", (unsigned long long)dims[1],
                 (unsigned long long)dims[2]);
        return -1;
    }
    return 0;
}

/* kv_heads follows heads, seq_k seq_q, head_dim_v head_dim. */
static const op_schema schema = {
    "attention", 7, {"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "head_dim_v"},
    {{0, 1, -1}, {1, 0, -1}, {0, 0, 1}, {1, 0, -1}, {0, 0, 3}, {1, 0, -1}, {0, 0, 5}},
    "heads, seq_q, head_dim",
    5, {"q", "k", "v", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL, params, check, 0};
/* clang-format on */

static void dims_of(const qf_op_desc *d, int64_t *dims)
{
    const qf_op_attention *a = &d->u.attention;
    dims[0] = _qf_abi_dim(a->batch);
    dims[1] = _qf_abi_dim(a->heads);
    dims[2] = _qf_abi_dim(a->kv_heads);
    dims[3] = _qf_abi_dim(a->seq_q);
    dims[4] = _qf_abi_dim(a->seq_k);
    dims[5] = _qf_abi_dim(a->head_dim);
    dims[6] = _qf_abi_dim(a->head_dim_v ? a->head_dim_v : a->head_dim);
}

/* q, k, v and out in BHSD order, lse [batch][heads][seq_q]; the mask slot
 * is never driven. */
static void elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    const qf_op_attention *a = &d->u.attention;
    uint64_t dv = a->head_dim_v ? a->head_dim_v : a->head_dim;
    uint64_t bhq = _qf_mul_sat(_qf_mul_sat(a->batch, a->heads), a->seq_q);
    uint64_t bkk = _qf_mul_sat(_qf_mul_sat(a->batch, a->kv_heads), a->seq_k);
    in[0] = _qf_mul_sat(bhq, a->head_dim);
    in[1] = _qf_mul_sat(bkk, a->head_dim);
    in[2] = _qf_mul_sat(bkk, dv);
    out[0] = _qf_mul_sat(bhq, dv);
    out[1] = bhq;
}

static void fields_json(const qf_op_desc *d, json_t *o)
{
    const qf_op_attention *a = &d->u.attention;
    json_object_set_new(o, "scale", json_real(a->scale));
    json_object_set_new(o, "softcap", json_real(a->softcap));
    json_object_set_new(o, "mask", json_string(qf_mask_kind_name(a->mask)));
    json_object_set_new(o, "causal", json_boolean(a->causal));
    json_object_set_new(o, "window_left", json_integer(a->window_left));
    json_object_set_new(o, "window_right", json_integer(a->window_right));
}

static int from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    const char *masks[QF_MASK_COUNT + 1];
    qf_op_attention *a = &d->u.attention;
    int64_t wl, wr;
    int m, i;
    (void)owned;
    for (i = 0; i < QF_MASK_COUNT; i++)
        masks[i] = qf_mask_kind_name((qf_mask_kind)i);
    masks[QF_MASK_COUNT] = NULL;
    a->batch = (size_t)dims[0];
    a->heads = (size_t)dims[1];
    a->kv_heads = (size_t)dims[2];
    a->seq_q = (size_t)dims[3];
    a->seq_k = (size_t)dims[4];
    a->head_dim = (size_t)dims[5];
    a->head_dim_v = (size_t)dims[6];
    if (_qf_jreal(o, "scale", &a->scale, err, es) || _qf_jreal(o, "softcap", &a->softcap, err, es) ||
        _qf_jword(o, "mask", masks, &m, err, es) || _qf_jbool(o, "causal", &a->causal, err, es) ||
        _qf_jint(o, "window_left", &wl, err, es) || _qf_jint(o, "window_right", &wr, err, es))
        return -1;
    a->mask = (qf_mask_kind)m;
    a->window_left = (long)wl;
    a->window_right = (long)wr;
    return 0;
}

static const _qf_abi abi = {"attention forward: softmax(scale q k^T + mask) v, lse; GQA, soft-cap",
                            {"q", "k", "v", "mask", NULL},
                            {"out", "lse", NULL},
                            {"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "head_dim_v", NULL},
                            dims_of,
                            fields_json,
                            from_json,
                            elems};

const _qf_opclass _qf_op_attention = {
    .abi_info = &abi,
    .schema = &schema,
    .name = "attention",
    .abi = QF_OP_ATTENTION,
    .bound = "attention",
    .build = build,
    .tuple_matches = tuple_matches,
    .inputs = inputs,
    .reference = reference_attention,
};
