/* ref_attention.c: attention forward, softmax(scale Q K^T [softcap] + mask) V,
 * with the row log-sum-exp.
 *
 * Per query row (b, h, i), in rigorous intervals at working precision w:
 *   dot_j = q . k_j      exact products (106-bit), mpfr_sum down and up
 *   s_j   = scale dot_j, then cap tanh(s_j / cap), then + mask_add
 *   m     = the key with the largest lower end of s_j
 *   p_j   = exp(s_j - s_m), and p_j = 1 exactly for j = m and for every key
 *           whose logit provably equals s_m (the exact dot products are
 *           equal, by mpfr_sum of their difference, and so are the masks)
 *   S     = k + S1 (k weights exactly 1, S1 the sum of the others),
 *   lse   = s_m + log k + log1p(S1 / k),  out_e = (sum_j p_j v_je) / S.
 * Taking p_m = 1 exactly (instead of exp of an interval around 0) removes
 * the dependency that would keep a single kept key, or equal logits, from
 * ever being decided in the directed rounding modes: then out is exact.
 * Excluded keys contribute exactly nothing.
 *
 * Before MPFR, a binary64 first evaluation with proven bounds
 * (_qf_fast_attn_row, _fast_attn.h) decides what it can of the row; the
 * loop above runs only for a row with an element left (docs/refs.md "Fast
 * path: attention, RoPE, router").
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_fast_attn.h"
#include "_ziv.h"

void qf_ref_attn_params_init(qf_ref_attn_params *p)
{
    memset(p, 0, sizeof *p);
    p->window_left = -1;
    p->window_right = -1;
    p->masked_row_value = 0.0;
}

typedef struct at_ctx {
    const _qf_rctx *c;
    const qf_ref_attn_params *p;
    const double *q, *k, *v;
    size_t dv, group;
    mpfr_prec_t w0;
    _qf_sink *so, *sl;
    int fast_o, fast_l; /* the fast path is tried for out, for lse */
    /* [batch][kv_heads][seq_k]: 1 when the key's k and v rows are finite,
     * checked once per call instead of once per query row; NULL: check in
     * each row */
    const uint8_t *kfin;
} at_ctx;

/* The row in binary64 (_qf_fast_attn_row): every out and lse element it
 * decides is written; 1 when nothing is left for MPFR.  may_be_exact is 1
 * throughout: an output can be a target value (one kept key gives v
 * exactly, equal logits an average), and MPFR would call it EXACT. */
static int at_fast_row(const at_ctx *a, size_t r, const double *qr, const double *kb, const double *vb,
                       const size_t *keep, const double *madd, size_t nkeep)
{
    size_t dv = a->dv, e, left = 0;
    double *wk = malloc((2 * nkeep + 2 * dv) * sizeof *wk);
    _qf_fenc *fo = malloc(dv * sizeof *fo), fl;
    if (wk && fo &&
        _qf_fast_attn_row(qr, kb, vb, a->p->head_dim, dv, keep, madd, nkeep, a->p->scale, a->p->softcap, wk, fo,
                          &fl)) {
        for (e = 0; e < dv && a->fast_o; e++)
            _qf_sink_decide_fast(a->so, r * dv + e, &fo[e], 1);
        if (a->sl && a->fast_l)
            _qf_sink_decide_fast(a->sl, r, &fl, 1);
    }
    free(wk), free(fo);
    for (e = 0; e < dv; e++)
        left += a->so->st[r * dv + e] == QF_REF_UNDECIDED;
    return left == 0 && (!a->sl || a->sl->st[r] != QF_REF_UNDECIDED);
}

static void row_fill_undefined(const at_ctx *a, size_t r, double out_val, int lse_neg_inf)
{
    size_t e;
    for (e = 0; e < a->dv; e++)
        _qf_sink_undefined(a->so, r * a->dv + e, out_val);
    if (a->sl) {
        if (lse_neg_inf)
            _qf_sink_put_d(a->sl, r, -INFINITY);
        else
            _qf_sink_undefined(a->sl, r, NAN);
    }
}

static int all_finite(const double *x, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* Do keys kj and km (indices into keep) have exactly the same logit?  Yes
 * when their masks agree and q . k_j - q . k_m is exactly 0 (mpfr_sum of
 * the 2D exact products is correctly rounded, so it is 0 only when the
 * exact sum is). */
static int same_logit(const at_ctx *a, const double *qr, const double *kb, const size_t *keep,
                      const double *madd, size_t kj, size_t km, mpfr_t *prod, mpfr_ptr *pp)
{
    size_t D = a->p->head_dim, t;
    const double *k1 = kb + keep[kj] * D, *k2 = kb + keep[km] * D;
    mpfr_t z;
    int zero;
    if (madd[kj] != madd[km])
        return 0;
    for (t = 0; t < D; t++) {
        mpfr_set_d(prod[t], qr[t], MPFR_RNDN);
        mpfr_mul_d(prod[t], prod[t], k1[t], MPFR_RNDN); /* exact */
        mpfr_set_d(prod[D + t], qr[t], MPFR_RNDN);
        mpfr_mul_d(prod[D + t], prod[D + t], -k2[t], MPFR_RNDN);
        pp[t] = prod[t];
        pp[D + t] = prod[D + t];
    }
    mpfr_init2(z, 32);
    mpfr_sum(z, pp, (unsigned long)(2 * D), MPFR_RNDN);
    zero = mpfr_zero_p(z);
    mpfr_clear(z);
    return zero;
}

static int at_row(void *vctx, size_t r)
{
    const at_ctx *a = vctx;
    const qf_ref_attn_params *P = a->p;
    const _qf_rctx *c = a->c;
    size_t D = P->head_dim, dv = a->dv, Sk = P->seq_k;
    size_t i = r % P->seq_q, h = (r / P->seq_q) % P->heads, b = r / (P->seq_q * P->heads);
    size_t kvh = h / a->group, j, t, e, nkeep = 0;
    const double *qr = a->q + r * D;
    const double *kb = a->k + (b * P->kv_heads + kvh) * Sk * D;
    const double *vb = a->v + (b * P->kv_heads + kvh) * Sk * dv;
    long long pos = (long long)i + (P->align_bottom_right ? (long long)Sk - (long long)P->seq_q : 0);
    long wl = P->window_left, wr = P->causal ? 0 : P->window_right;
    size_t moff = b * P->mask_stride_b + h * P->mask_stride_h + i * Sk;
    size_t *keep = NULL;
    double *madd = NULL;
    mpfr_t *prod = NULL, tmp;
    mpfr_ptr *pp = NULL;
    _qf_iv *s = NULL, *pj = NULL, S, L, N, y, sc;
    mpfr_prec_t w = a->w0;
    int ok = 1;
    _qf_ziv zv;
    size_t m, kone;

    keep = malloc((Sk ? Sk : 1) * sizeof *keep);
    madd = malloc((Sk ? Sk : 1) * sizeof *madd);
    if (!keep || !madd) {
        free(keep), free(madd);
        row_fill_undefined(a, r, NAN, 0);
        return 0;
    }
    if (!all_finite(qr, D))
        ok = 0;
    for (j = 0; j < Sk && ok; j++) {
        double m = 0;
        if (wl >= 0 && (long long)j < pos - wl)
            continue;
        if (wr >= 0 && (long long)j > pos + wr)
            continue;
        if (P->mask_bool && !P->mask_bool[moff + j])
            continue;
        if (P->mask_add) {
            m = P->mask_add[moff + j];
            if (isnan(m) || m == INFINITY) {
                ok = 0;
                break;
            }
            if (m == -INFINITY)
                continue;
        }
        if (a->kfin ? !a->kfin[(b * P->kv_heads + kvh) * Sk + j]
                    : !all_finite(kb + j * D, D) || !all_finite(vb + j * dv, dv)) {
            ok = 0;
            break;
        }
        keep[nkeep] = j;
        madd[nkeep] = m;
        nkeep++;
    }
    if (!ok || nkeep == 0) {
        free(keep), free(madd);
        row_fill_undefined(a, r, ok ? P->masked_row_value : NAN, ok);
        return 0;
    }
    if ((a->fast_o || a->fast_l) && at_fast_row(a, r, qr, kb, vb, keep, madd, nkeep)) {
        free(keep), free(madd);
        return 0;
    }

    prod = malloc(2 * D * sizeof *prod);
    pp = malloc(2 * D * sizeof *pp);
    s = malloc(nkeep * sizeof *s);
    pj = malloc(nkeep * sizeof *pj);
    if (!prod || !pp || !s || !pj) {
        free(keep), free(madd), free(prod), free(pp), free(s), free(pj);
        row_fill_undefined(a, r, NAN, 0);
        return 0;
    }
    for (t = 0; t < 2 * D; t++) {
        mpfr_init2(prod[t], 106);
        pp[t] = prod[t];
    }
    for (j = 0; j < nkeep; j++) {
        _qf_iv_init(&s[j], w);
        _qf_iv_init(&pj[j], w);
    }
    _qf_iv_init(&S, w);
    _qf_iv_init(&L, w);
    _qf_iv_init(&N, w);
    _qf_iv_init(&y, w);
    _qf_iv_init(&sc, w);
    mpfr_init2(tmp, w);

    _qf_ziv_init(&zv, c, w);
    _qf_ziv_track(&zv, s, nkeep);
    _qf_ziv_track(&zv, pj, nkeep);
    _qf_ziv_track_each(&zv, 5, &S, &L, &N, &y, &sc);
    _qf_ziv_track_mpfr(&zv, tmp);
    while (_qf_ziv_next(&zv)) {
        if (P->scale == 0) {
            _qf_iv_set_si(&sc, (long)D);
            _qf_iv_rec_sqrt(&sc, &sc);
        }
        /* logits */
        for (j = 0; j < nkeep; j++) {
            const double *kr = kb + keep[j] * D;
            for (t = 0; t < D; t++) {
                mpfr_set_d(prod[t], qr[t], MPFR_RNDN);
                mpfr_mul_d(prod[t], prod[t], kr[t], MPFR_RNDN); /* exact */
            }
            _qf_iv_sum(&s[j], pp, D);
            if (P->scale == 0)
                _qf_iv_mul_pos(&s[j], &s[j], &sc);
            else
                _qf_iv_mul_d(&s[j], &s[j], P->scale);
            if (P->softcap > 0) {
                _qf_iv_div_d(&s[j], &s[j], P->softcap);
                _qf_iv_tanh(&s[j], &s[j]);
                _qf_iv_mul_d(&s[j], &s[j], P->softcap);
            }
            if (madd[j] != 0)
                _qf_iv_add_d(&s[j], &s[j], madd[j]);
        }
        m = 0;
        for (j = 1; j < nkeep; j++)
            if (mpfr_cmp(s[j].lo, s[m].lo) > 0)
                m = j;
        /* weights relative to key m, and their sum */
        _qf_iv_set_zero(&S); /* first the sum S1 of the weights below 1 */
        for (j = 0, kone = 0; j < nkeep; j++) {
            if (j == m ||
                (mpfr_cmp(s[j].hi, s[m].lo) >= 0 && same_logit(a, qr, kb, keep, madd, j, m, prod, pp))) {
                _qf_iv_set_si(&pj[j], 1);
                kone++;
            } else {
                _qf_iv_sub(&pj[j], &s[j], &s[m]);
                _qf_iv_exp(&pj[j], &pj[j]);
                _qf_iv_add(&S, &S, &pj[j]);
            }
        }
        if (a->sl && a->sl->st[r] == QF_REF_UNDECIDED) {
            /* lse = s_m + log(kone) + log1p(S1 / kone): no loss when S1 is tiny */
            _qf_iv_div_ui(&L, &S, (unsigned long)kone);
            _qf_iv_log1p(&L, &L);
            if (kone > 1) {
                _qf_iv_set_si(&y, (long)kone);
                _qf_iv_log(&y, &y);
                _qf_iv_add(&L, &L, &y);
            }
            _qf_iv_add(&L, &L, &s[m]);
            _qf_ziv_done(&zv, a->sl, r, &L);
        }
        _qf_iv_add_ui(&S, &S, (unsigned long)kone);
        for (e = 0; e < dv; e++) {
            size_t oi = r * dv + e;
            if (a->so->st[oi] != QF_REF_UNDECIDED)
                continue;
            _qf_iv_set_zero(&N);
            for (j = 0; j < nkeep; j++) {
                double ve = vb[keep[j] * dv + e];
                if (ve == 0)
                    continue;
                if (ve > 0) {
                    mpfr_mul_d(tmp, pj[j].lo, ve, MPFR_RNDD);
                    mpfr_add(N.lo, N.lo, tmp, MPFR_RNDD);
                    mpfr_mul_d(tmp, pj[j].hi, ve, MPFR_RNDU);
                    mpfr_add(N.hi, N.hi, tmp, MPFR_RNDU);
                } else {
                    mpfr_mul_d(tmp, pj[j].hi, ve, MPFR_RNDD);
                    mpfr_add(N.lo, N.lo, tmp, MPFR_RNDD);
                    mpfr_mul_d(tmp, pj[j].lo, ve, MPFR_RNDU);
                    mpfr_add(N.hi, N.hi, tmp, MPFR_RNDU);
                }
            }
            _qf_iv_div_pos(&y, &N, &S);
            _qf_ziv_done(&zv, a->so, oi, &y);
        }
    }

    for (t = 0; t < 2 * D; t++)
        mpfr_clear(prod[t]);
    for (j = 0; j < nkeep; j++) {
        _qf_iv_clear(&s[j]);
        _qf_iv_clear(&pj[j]);
    }
    _qf_iv_clear(&S);
    _qf_iv_clear(&L);
    _qf_iv_clear(&N);
    _qf_iv_clear(&y);
    _qf_iv_clear(&sc);
    mpfr_clear(tmp);
    free(keep), free(madd), free(prod), free(pp), free(s), free(pj);
    return (int)zv.w;
}

qf_status qf_ref_attention(const qf_ref_opts *opts, const qf_ref_attn_params *p, const double *q,
                           const double *k, const double *v, qf_ref_out *out, qf_ref_out *lse)
{
    _qf_rctx c;
    _qf_sink so, sl;
    at_ctx a;
    qf_status st;
    size_t rows, dv;
    int maxp;
    mpfr_prec_t wl;

    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p || !out)
        return QF_EINVAL;
    dv = p->head_dim_v ? p->head_dim_v : p->head_dim;
    if (p->kv_heads == 0 || p->heads % p->kv_heads != 0 || !isfinite(p->scale) || !isfinite(p->softcap) ||
        p->softcap < 0 || p->head_dim == 0)
        return QF_EINVAL;
    rows = p->batch * p->heads * p->seq_q;
    if (rows && (!q || (p->seq_k && (!k || !v))))
        return QF_EINVAL;
    if ((st = _qf_sink_open(&so, &c, NULL, out, rows * dv)) != QF_OK)
        return st;
    if (lse && (st = _qf_sink_open(&sl, &c, p->lse_format, lse, rows)) != QF_OK) {
        _qf_sink_close(&so, 0);
        return st;
    }
    a.c = &c;
    a.p = p;
    a.q = q;
    a.k = k;
    a.v = v;
    a.dv = dv;
    a.group = p->heads / p->kv_heads;
    a.so = &so;
    a.sl = lse ? &sl : NULL;
    /* No binary64 evaluation decides a binary64 (or wider) rounding. */
    a.fast_o = !c.slow_only && _qf_format_prec(so.f) < 53;
    a.fast_l = lse && !c.slow_only && _qf_format_prec(sl.f) < 53;
    a.w0 = c.w0;
    wl = lse ? _qf_rctx_w0_for(&c, sl.f) : 0;
    if (wl > a.w0)
        a.w0 = wl;
    {
        size_t nk = p->batch * p->kv_heads * p->seq_k, j;
        uint8_t *kf = rows && nk ? malloc(nk) : NULL;
        for (j = 0; kf && j < nk; j++)
            kf[j] = (uint8_t)(all_finite(k + j * p->head_dim, p->head_dim) && all_finite(v + j * dv, dv));
        a.kfin = kf;
        maxp = _qf_parallel_rows(&c, rows, at_row, &a);
        free(kf);
    }
    _qf_sink_close(&so, maxp);
    if (lse)
        _qf_sink_close(&sl, maxp);
    return QF_OK;
}
