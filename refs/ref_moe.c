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
 *
 * Before MPFR, a binary64 first evaluation with proven bounds (mo_fast)
 * decides the token when it can: the selection and the tie marks only
 * when every comparison they need is proven, the weights by enclosure;
 * otherwise the token goes through the loop above (docs/refs.md "Fast
 * path: attention, RoPE, router").
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_fast_attn.h"
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
    int fast; /* the binary64 first evaluation is tried */
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

/* Exactly equal keys: the same logit and the same bias (MPFR's enclosures
 * of them are then identical, so it orders them by index). */
static int same_key(const qf_ref_moe_params *P, const double *l, size_t a, size_t b)
{
    return l[a] == l[b] && bias_of(P, a) == bias_of(P, b);
}

/* 1: tie, 0: no tie, -1: not decided, from the outward enclosures [lo,
 * hi] of the keys (a before b): the distance lies in [lo_a - hi_b, hi_a -
 * lo_b], whose ends are rounded outward by one step (a rounding to nearest
 * is within half a spacing of the exact difference). */
static int fast_tie(const qf_ref_moe_params *P, const double *l, const double *lo, const double *hi, size_t a,
                    size_t b)
{
    if (same_key(P, l, a, b))
        return 1;
    if (nextafter(hi[a] - lo[b], INFINITY) <= P->tie_tol)
        return 1;
    if (nextafter(lo[a] - hi[b], -INFINITY) > P->tie_tol)
        return 0;
    return -1;
}

/* The token in binary64 (docs/refs.md "Fast path: attention, RoPE,
 * router").  Scores with absolute bounds:
 *   softmax: d_e = RN(l_e - m) (u |d_e|), p_e = exp(d_e) by _qf_fast_exp,
 *     |p_e - exp(l_e - m)| <= e_exp + 1.01 p_e u |d_e| (exp's derivative
 *     is itself; |d_e| u <= 700 u); d_e < -700: p_e = 0 within 2^-1009; l_e
 *     = -inf: 0 exactly.  S = sum p_e left to right: sum of the bounds +
 *     gamma_E S.  s_e = RN(p_e / S): (e_p + s_e e_S) / S, enlarged by 1 %
 *     (for e_S <= 2^-20 S: 1/(S - e_S) against 1/S), + u |s_e|;
 *   sigmoid: _qf_fast_act; l = 0 (1/2), +-inf (1, 0) exact.
 * key_e = RN(s_e + bias_e), + u |key_e|.  The top nsel keys by (value, then
 * index) are accepted only when each adjacent pair of them is proven in
 * that order (outward enclosures disjoint) or exactly equal (same logit
 * and bias: index order, as MPFR orders identical enclosures), and every
 * other expert is proven below the last or exactly equal to it; then this
 * is the exact order, and MPFR's, whose enclosures at w0 >= 64 bits are
 * far narrower than these.  Tie marks need the distance decided against
 * tie_tol (fast_tie).  Weights: p_i / W (renormalized softmax; W the sum
 * of the selected p: sum of bounds + gamma_K W), s_i / W (sigmoid), s_i,
 * times route_scale: the relative bounds add, + u for each division and
 * product; may_be_exact is 1 (a weight can be exactly 1/E, 1/2, 1 ...).
 * Writes idx, ties and what it decides of the weights, and ord; 1 when the
 * selection was proven (0: nothing written).  Work arrays: 6 E doubles. */
static int mo_fast(const mo_ctx *k, size_t tk, size_t *ord, double *wk)
{
    const qf_ref_moe_params *P = k->p;
    const double u = 0x1p-53;
    size_t E = P->experts, K = P->top_k, nsel = K < E ? K + 1 : K, e, i;
    const double *l = k->l + tk * E;
    double *pv = wk, *ep = wk + E, *lo = wk + 2 * E, *hi = wk + 3 * E, *sv = wk + 4 * E, *kv = wk + 5 * E;
    double m = -INFINITY, S = 0, eS = 0, W = 0, eW = 0;
    uint8_t fl[64];
    for (e = 0; e < E; e++)
        m = l[e] > m ? l[e] : m;
    /* scores: pv (softmax unnormalized, or the sigmoid), ep its bound */
    for (e = 0; e < E; e++) {
        _qf_fenc f;
        if (P->score == QF_REF_ROUTER_SOFTMAX) {
            double d = l[e] - m;
            if (l[e] == -INFINITY) {
                pv[e] = ep[e] = 0;
            } else if (d < -700) {
                pv[e] = 0;
                ep[e] = 0x1p-1009;
            } else {
                if (!_qf_fast_exp(d, &f))
                    return 0;
                pv[e] = f.v;
                ep[e] = f.e + 1.01 * (f.v + f.e) * u * fabs(d);
            }
            S += pv[e];
            eS += ep[e];
        } else if (l[e] == 0 || isinf(l[e])) {
            pv[e] = l[e] == 0 ? 0.5 : l[e] > 0;
            ep[e] = 0;
        } else {
            if (!_qf_fast_act(QF_REF_ACT_SIGMOID, l[e], &f))
                return 0;
            pv[e] = f.v;
            ep[e] = f.e;
        }
    }
    if (P->score == QF_REF_ROUTER_SOFTMAX) {
        double g = (double)E * u;
        eS = 1.01 * (eS + g / (1 - g) * S);
        if (!(S > 0) || !(eS <= 0x1p-20 * S))
            return 0;
    }
    /* keys and their outward enclosures */
    for (e = 0; e < E; e++) {
        _qf_fenc f;
        double es;
        if (P->score == QF_REF_ROUTER_SOFTMAX) {
            sv[e] = pv[e] / S;
            es = 1.01 * (ep[e] + sv[e] * eS) / S + u * sv[e];
        } else {
            sv[e] = pv[e];
            es = ep[e];
        }
        f.v = kv[e] = sv[e] + bias_of(P, e);
        f.e = P->sel_bias ? es + u * fabs(f.v) : es;
        _qf_fenc_bounds(&f, &lo[e], &hi[e]);
    }
    /* the top nsel by (value, then index): insertion into a sorted list,
     * a later expert passing only a strictly larger value */
    for (e = 0, i = 0; e < E; e++) {
        size_t j;
        if (i == nsel && !(kv[e] > kv[ord[nsel - 1]]))
            continue;
        j = i < nsel ? i++ : nsel - 1;
        for (; j > 0 && kv[e] > kv[ord[j - 1]]; j--)
            ord[j] = ord[j - 1];
        ord[j] = e;
    }
    for (i = 0; i + 1 < nsel; i++)
        if (!(lo[ord[i]] > hi[ord[i + 1]]) && !same_key(P, l, ord[i], ord[i + 1]))
            return 0;
    {
        /* every other expert below the last selected (or its exact equal) */
        size_t last = ord[nsel - 1];
        for (i = 0; i < nsel; i++)
            kv[ord[i]] = NAN; /* marks the selected; kv is not read again */
        for (e = 0; e < E; e++)
            if (!isnan(kv[e]) && !(hi[e] < lo[last]) && !same_key(P, l, e, last))
                return 0;
    }
    /* tie marks, all decided or none written */
    if (K > sizeof fl)
        return 0;
    memset(fl, 0, K);
    for (i = 0; i < K; i++) {
        int t;
        if (K < E) {
            if ((t = fast_tie(P, l, lo, hi, ord[i], ord[K])) < 0)
                return 0;
            if (t)
                fl[i] |= QF_REF_TIE_SET;
        }
        if (i + 1 < K) {
            if ((t = fast_tie(P, l, lo, hi, ord[i], ord[i + 1])) < 0)
                return 0;
            if (t) {
                fl[i] |= QF_REF_TIE_ORDER;
                fl[i + 1] |= QF_REF_TIE_ORDER;
            }
        }
    }
    for (i = 0; i < K; i++) {
        k->idx[tk * K + i] = (int32_t)ord[i];
        if (k->ties)
            k->ties[tk * K + i] = fl[i];
    }
    /* weights */
    if (P->renormalize) {
        double g = (double)K * u;
        for (i = 0; i < K; i++) {
            W += pv[ord[i]];
            eW += ep[ord[i]];
        }
        eW = 1.01 * (eW + g / (1 - g) * W);
        if (!(W > 0) || !(eW <= 0x1p-20 * W))
            return 1; /* the weights go to MPFR (W = 0: UNDEFINED there) */
    }
    for (i = 0; i < K; i++) {
        size_t oi = tk * K + i, a = ord[i];
        double rel;
        _qf_fenc y;
        if (P->renormalize) {
            y.v = pv[a] / W;
            rel = (pv[a] > 0 ? ep[a] / pv[a] : INFINITY) + eW / W + u;
        } else if (P->score == QF_REF_ROUTER_SOFTMAX) {
            y.v = sv[a];
            rel = (pv[a] > 0 ? ep[a] / pv[a] : INFINITY) + eS / S + u;
        } else {
            y.v = pv[a];
            rel = pv[a] > 0 ? ep[a] / pv[a] : INFINITY;
        }
        y.v *= P->route_scale;
        rel = 1.01 * (rel + u) + 2 * u;
        if (!(rel <= 0x1p-20))
            continue; /* a zero or badly bounded score: MPFR */
        y.e = fabs(y.v) * rel;
        _qf_sink_decide_fast(k->s, oi, &y, 1);
    }
    return 1;
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
    double *wk = NULL; /* the fast path's work, and its order in ford */
    size_t *ford = NULL;
    int fsel = 0;

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
    if (k->fast) {
        /* Binary64 first: a proven selection keeps its decided weights
         * through the loop below (prev), which then only computes the rest. */
        wk = malloc(6 * E * sizeof *wk + nsel * sizeof *ford);
        if (wk) {
            ford = (size_t *)(void *)(wk + 6 * E);
            fsel = mo_fast(k, tk, ford, wk);
        }
        if (fsel) {
            for (i = 0; i < K && k->s->st[tk * K + i] != QF_REF_UNDECIDED; i++)
                ;
            if (i == K) {
                free(wk);
                return 0;
            }
        }
    }
    sc = malloc(E * sizeof *sc);
    key = malloc(E * sizeof *key);
    ord = malloc(nsel * sizeof *ord);
    taken = calloc(E, 1);
    prev = malloc(K * sizeof *prev);
    flags = calloc(K, 1);
    if (!sc || !key || !ord || !taken || !prev || !flags) {
        free(sc), free(key), free(ord), free(taken), free(prev), free(flags), free(wk);
        token_undefined(k, tk);
        return 0;
    }
    for (i = 0; i < K; i++)
        prev[i] = -1;
    if (fsel)
        for (i = 0; i < K; i++)
            prev[i] = (int32_t)ford[i];
    free(wk);
    for (e = 0; e < E; e++) {
        _qf_iv_init(&sc[e], w);
        _qf_iv_init(&key[e], w);
    }
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
    /* No binary64 evaluation decides a binary64 (or wider) rounding; below
     * 64 bits of starting precision MPFR's own enclosures might be too wide
     * to prove the order the fast path proves (docs/refs.md). */
    k.fast = !c.slow_only && _qf_format_prec(s.f) < 53 && c.w0 >= 64;
    maxp = _qf_parallel_rows(&c, p->tokens, mo_token, &k);
    _qf_sink_close(&s, maxp);
    return QF_OK;
}
