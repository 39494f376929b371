/* ref_moe.c: MoE router (scores, top-k, weights, near-tie marks).
 *
 * Per token, in rigorous intervals at working precision w:
 *   softmax: p_e = exp(l_e - m) (m the largest logit), s_e = p_e / sum p
 *   sigmoid: s_e = 1 / (1 + exp(-l_e))
 *   key_e = s_e + sel_bias_e
 * The top_k + 1 largest keys are found by selection with a total order on
 * the enclosures (lower end, upper end, index), which agrees with the exact
 * order wherever that order is proven.  Every adjacent pair that matters is
 * classified: exactly equal (same logit and bias: a tie), provably further
 * apart than tie_tol (no tie), provably within tie_tol (a tie), or not yet
 * known (refined; still unknown at prec_max: marked as a tie).
 * Weights: s_i (softmax with renormalize: p_i / sum of selected p, which is
 * the exact value without the full-row denominator), / selected sum when
 * renormalize, * route_scale.  When a refinement changes the selection, the
 * weights are recomputed for the new one.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ziv.h"

void qf_ref_moe_params_init(qf_ref_moe_params *p)
{
    memset(p, 0, sizeof *p);
    p->score = QF_REF_ROUTER_SOFTMAX;
    p->route_scale = 1.0;
}

typedef struct mo_ctx {
    const _qf_rctx *c;
    const qf_ref_moe_params *p;
    const double *l;
    int32_t *idx;
    uint8_t *ties;
    _qf_sink *s;
} mo_ctx;

static double bias_of(const qf_ref_moe_params *P, size_t e)
{
    return P->sel_bias ? P->sel_bias[e] : 0.0;
}

/* a before b in the selection order */
static int before(const _qf_iv *key, size_t a, size_t b)
{
    int c = mpfr_cmp(key[a].lo, key[b].lo);
    if (c)
        return c > 0;
    c = mpfr_cmp(key[a].hi, key[b].hi);
    if (c)
        return c > 0;
    return a < b;
}

/* 1: tie, 0: no tie, -1: not known at this precision.  a sorts before b. */
static int pair_tie(const mo_ctx *k, const double *l, const _qf_iv *key, size_t a, size_t b, mpfr_ptr t)
{
    if (l[a] == l[b] && bias_of(k->p, a) == bias_of(k->p, b))
        return 1;
    mpfr_sub(t, key[a].hi, key[b].lo, MPFR_RNDU); /* upper bound of the distance */
    if (mpfr_cmp_d(t, k->p->tie_tol) <= 0)
        return 1;
    mpfr_sub(t, key[a].lo, key[b].hi, MPFR_RNDD); /* lower bound */
    if (mpfr_cmp_d(t, k->p->tie_tol) > 0)
        return 0;
    return -1;
}

static void token_undefined(const mo_ctx *k, size_t tk)
{
    size_t K = k->p->top_k, i;
    for (i = 0; i < K; i++) {
        k->idx[tk * K + i] = -1;
        if (k->ties)
            k->ties[tk * K + i] = 0;
        _qf_sink_undefined(k->s, tk * K + i, NAN);
    }
}

static int mo_token(void *vctx, size_t tk)
{
    const mo_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    const qf_ref_moe_params *P = k->p;
    size_t E = P->experts, K = P->top_k, e, i, j, nsel = K < E ? K + 1 : K;
    const double *l = k->l + tk * E;
    double m = -INFINITY;
    _qf_iv *sc, *key, S, y, W;
    size_t *ord;
    char *taken;
    int32_t *prev;
    uint8_t *flags;
    mpfr_t tmp;
    mpfr_prec_t w = c->w0;
    _qf_ziv zv;

    for (e = 0; e < E; e++) {
        if (isnan(l[e]) || (P->score == QF_REF_ROUTER_SOFTMAX && l[e] == INFINITY)) {
            token_undefined(k, tk);
            return 0;
        }
        if (l[e] > m)
            m = l[e];
    }
    if (P->score == QF_REF_ROUTER_SOFTMAX && m == -INFINITY) {
        token_undefined(k, tk);
        return 0;
    }
    sc = malloc(E * sizeof *sc);
    key = malloc(E * sizeof *key);
    ord = malloc(nsel * sizeof *ord);
    taken = calloc(E, 1);
    prev = malloc(K * sizeof *prev);
    flags = calloc(K, 1);
    if (!sc || !key || !ord || !taken || !prev || !flags) {
        free(sc), free(key), free(ord), free(taken), free(prev), free(flags);
        token_undefined(k, tk);
        return 0;
    }
    for (e = 0; e < E; e++) {
        _qf_iv_init(&sc[e], w);
        _qf_iv_init(&key[e], w);
    }
    for (i = 0; i < K; i++)
        prev[i] = -1;
    _qf_iv_init(&S, w);
    _qf_iv_init(&y, w);
    _qf_iv_init(&W, w);
    mpfr_init2(tmp, w);
    _qf_ziv_init(&zv, c, w);
    _qf_ziv_track(&zv, sc, E);
    _qf_ziv_track(&zv, key, E);
    _qf_ziv_track_each(&zv, 3, &S, &y, &W);
    _qf_ziv_track_mpfr(&zv, tmp);
    while (_qf_ziv_next(&zv)) {
        /* scores: sc holds p_e (softmax, unnormalized) or sigmoid_e */
        _qf_iv_set_zero(&S);
        for (e = 0; e < E; e++) {
            if (P->score == QF_REF_ROUTER_SOFTMAX) {
                if (l[e] == -INFINITY)
                    _qf_iv_set_zero(&sc[e]);
                else {
                    _qf_iv_set_d(&y, l[e]);
                    _qf_iv_add_d(&y, &y, -m);
                    _qf_iv_exp(&sc[e], &y);
                }
                _qf_iv_add(&S, &S, &sc[e]);
            } else if (isinf(l[e])) {
                _qf_iv_set_si(&sc[e], l[e] > 0);
            } else {
                _qf_iv_set_d(&y, -l[e]);
                _qf_iv_exp(&W, &y);
                _qf_iv_add_ui(&W, &W, 1);
                _qf_iv_ui_div_pos(&sc[e], 1, &W);
            }
        }
        for (e = 0; e < E; e++) {
            if (P->score == QF_REF_ROUTER_SOFTMAX)
                _qf_iv_div_pos(&key[e], &sc[e], &S);
            else
                _qf_iv_set(&key[e], &sc[e]);
            if (P->sel_bias)
                _qf_iv_add_d(&key[e], &key[e], P->sel_bias[e]);
        }
        /* selection of the top nsel */
        memset(taken, 0, E);
        for (i = 0; i < nsel; i++) {
            size_t best = SIZE_MAX;
            for (e = 0; e < E; e++)
                if (!taken[e] && (best == SIZE_MAX || before(key, e, best)))
                    best = e;
            ord[i] = best;
            taken[best] = 1;
        }
        /* ties */
        memset(flags, 0, K);
        for (i = 0; i < K; i++) {
            int t;
            if (K < E) {
                t = pair_tie(k, l, key, ord[i], ord[K], tmp);
                if (t < 0)
                    _qf_ziv_retry(&zv);
                if (t != 0)
                    flags[i] |= QF_REF_TIE_SET;
            }
            if (i + 1 < K) {
                t = pair_tie(k, l, key, ord[i], ord[i + 1], tmp);
                if (t < 0)
                    _qf_ziv_retry(&zv);
                if (t != 0) {
                    flags[i] |= QF_REF_TIE_ORDER;
                    flags[i + 1] |= QF_REF_TIE_ORDER;
                }
            }
        }
        /* a new selection invalidates the weights decided so far */
        for (i = 0; i < K; i++) {
            if (prev[i] != (int32_t)ord[i]) {
                for (j = 0; j < K; j++)
                    k->s->st[tk * K + j] = QF_REF_UNDECIDED;
                break;
            }
        }
        for (i = 0; i < K; i++)
            prev[i] = (int32_t)ord[i];
        /* weights */
        if (P->renormalize) {
            _qf_iv_set_zero(&W);
            for (i = 0; i < K; i++)
                _qf_iv_add(&W, &W, &sc[ord[i]]);
        }
        for (i = 0; i < K; i++) {
            size_t oi = tk * K + i;
            if (k->s->st[oi] != QF_REF_UNDECIDED)
                continue;
            if (P->renormalize) {
                if (mpfr_zero_p(W.hi)) {
                    _qf_sink_undefined(k->s, oi, NAN);
                    continue;
                }
                _qf_iv_div_pos(&y, &sc[ord[i]], &W);
            } else if (P->score == QF_REF_ROUTER_SOFTMAX) {
                _qf_iv_div_pos(&y, &sc[ord[i]], &S);
            } else {
                _qf_iv_set(&y, &sc[ord[i]]);
            }
            _qf_iv_mul_d(&y, &y, P->route_scale);
            _qf_ziv_done(&zv, k->s, oi, &y);
        }
    }
    for (i = 0; i < K; i++) {
        k->idx[tk * K + i] = (int32_t)ord[i];
        if (k->ties)
            k->ties[tk * K + i] = flags[i];
    }
    for (e = 0; e < E; e++) {
        _qf_iv_clear(&sc[e]);
        _qf_iv_clear(&key[e]);
    }
    _qf_iv_clear(&S);
    _qf_iv_clear(&y);
    _qf_iv_clear(&W);
    mpfr_clear(tmp);
    free(sc), free(key), free(ord), free(taken), free(prev), free(flags);
    return (int)zv.w;
}

qf_status qf_ref_moe_router(const qf_ref_opts *opts, const qf_ref_moe_params *p, const double *logits,
                            int32_t *indices, qf_ref_out *weights, uint8_t *ties)
{
    _qf_rctx c;
    _qf_sink s;
    mo_ctx k;
    qf_status st;
    size_t e;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || !indices || p->top_k == 0 || p->top_k > p->experts || p->experts > INT32_MAX ||
        (p->score != QF_REF_ROUTER_SOFTMAX && p->score != QF_REF_ROUTER_SIGMOID) ||
        !isfinite(p->route_scale) || !isfinite(p->tie_tol) || p->tie_tol < 0 || (p->tokens && !logits))
        return QF_EINVAL;
    if (p->sel_bias)
        for (e = 0; e < p->experts; e++)
            if (!isfinite(p->sel_bias[e]))
                return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, weights, p->tokens * p->top_k)) != QF_OK)
        return st;
    k.c = &c;
    k.p = p;
    k.l = logits;
    k.idx = indices;
    k.ties = ties;
    k.s = &s;
    maxp = _qf_parallel_rows(&c, p->tokens, mo_token, &k);
    _qf_sink_close(&s, maxp);
    return QF_OK;
}
