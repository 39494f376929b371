/* ref_rope.c: rotary position embedding.
 *
 * Per token, in rigorous intervals at working precision w:
 *   f_i = exp((-2i / rotary_dim) log theta)   (f_0 = 1 exactly), or inv_freq[i]
 *   a_i = pos f_i;  sin a_i, cos a_i through the Lipschitz enclosure
 *   y_a = x_a cos - x_b sin,  y_b = x_a sin + x_b cos.
 * At position 0 every angle is exactly 0, so y = x exactly.
 *
 * Before MPFR, a binary64 first evaluation with a proven bound (rp_fast,
 * _fast_attn.h) decides what it can; only the token's other elements go
 * through the loop above (docs/refs.md "Fast path: attention, RoPE,
 * router").
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_fast_attn.h"
#include "_ziv.h"

void qf_ref_rope_params_init(qf_ref_rope_params *p)
{
    memset(p, 0, sizeof *p);
    p->layout = QF_REF_ROPE_INTERLEAVED;
    p->theta = 10000.0;
}

typedef struct rp_ctx {
    const _qf_rctx *c;
    const qf_ref_rope_params *p;
    const double *x;
    size_t rd;
    _qf_sink *s;
    /* the frequencies for the fast path: f_i = fh + fl + d, |d| <= ef;
     * NULL when it is off */
    const double *fh, *fl, *ef;
} rp_ctx;

/* The binary64 evaluation of one token (docs/refs.md "Fast path:
 * attention, RoPE, router"): sin and cos of pos f_i with absolute bounds
 * es, ec (_qf_fast_sincos_pos), then
 *   y_a = RN(RN(x_a c) - RN(x_b s)),  y_b = RN(RN(x_a s) + RN(x_b c)),
 * |y_a - exact| <= |x_a| ec + |x_b| es + u (|x_a c| + |x_b s| + |y_a|)
 * (the three roundings), enlarged by 1 % (the bound's own roundings) and
 * 2^-1000 (subnormal products).  A pair whose angle is exactly 0 (pos 0,
 * f_i = 0) is left to MPFR, which finds it EXACT; otherwise no output can
 * be a target value unless the pair is (0, 0) (x_a cos a - x_b sin a is
 * transcendental for a nonzero algebraic angle, Lindemann-Weierstrass), and
 * a zero result is not decided here, so may_be_exact is 0.  sc holds 4
 * half doubles. */
static void rp_fast(const rp_ctx *k, size_t t, int64_t pos, double *sc)
{
    const qf_ref_rope_params *P = k->p;
    const double u = 0x1p-53;
    size_t H = P->heads, D = P->head_dim, half = k->rd / 2, base = t * H * D, h, i;
    double *sn = sc, *cs = sc + half, *es = sc + 2 * half, *ec = sc + 3 * half;
    /* a position past 2^53 would be rounded by its conversion to double */
    int in_range = pos <= ((int64_t)1 << 53) && pos >= -((int64_t)1 << 53);
    for (i = 0; i < half; i++) {
        es[i] = -1; /* not evaluated */
        if (pos == 0 || !in_range || k->fh[i] == 0)
            continue;
        if (!_qf_fast_sincos_pos((double)pos, k->fh[i], k->fl[i], k->ef[i], &sn[i], &cs[i], &es[i], &ec[i]))
            es[i] = -1;
    }
    for (h = 0; h < H; h++) {
        const double *x = k->x + base + h * D;
        for (i = 0; i < half; i++) {
            size_t ia = P->layout == QF_REF_ROPE_HALF ? i : 2 * i;
            size_t ib = P->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
            double xa = x[ia], xb = x[ib], p1, p2;
            _qf_fenc y;
            if (es[i] < 0 || k->s->st[base + h * D + ia] != QF_REF_UNDECIDED)
                continue; /* no angle, or a non-finite pair (UNDEFINED) */
            p1 = xa * cs[i];
            p2 = xb * sn[i];
            y.v = p1 - p2;
            y.e = 1.01 * (fabs(xa) * ec[i] + fabs(xb) * es[i] + u * (fabs(p1) + fabs(p2) + fabs(y.v))) +
                  0x1p-1000;
            _qf_sink_decide_fast(k->s, base + h * D + ia, &y, 0);
            p1 = xa * sn[i];
            p2 = xb * cs[i];
            y.v = p1 + p2;
            y.e = 1.01 * (fabs(xa) * es[i] + fabs(xb) * ec[i] + u * (fabs(p1) + fabs(p2) + fabs(y.v))) +
                  0x1p-1000;
            _qf_sink_decide_fast(k->s, base + h * D + ib, &y, 0);
        }
    }
}

static int rp_token(void *vctx, size_t t)
{
    const rp_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    const qf_ref_rope_params *P = k->p;
    size_t H = P->heads, D = P->head_dim, rd = k->rd, half = rd / 2, h, i, e;
    size_t base = t * H * D;
    int64_t pos = P->positions ? P->positions[t] : (int64_t)((uint64_t)P->pos_offset + (uint64_t)t);
    _qf_iv *sn, *cs, f, L, pv, ex, y, t1, t2;
    mpfr_prec_t w = c->w0;
    _qf_ziv zv;

    /* pass-through components and non-finite pairs first */
    for (h = 0; h < H; h++) {
        const double *x = k->x + base + h * D;
        for (e = rd; e < D; e++)
            _qf_sink_put_d(k->s, base + h * D + e, x[e]);
        for (i = 0; i < half; i++) {
            size_t ia = P->layout == QF_REF_ROPE_HALF ? i : 2 * i;
            size_t ib = P->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
            if (!isfinite(x[ia]) || !isfinite(x[ib])) {
                _qf_sink_undefined(k->s, base + h * D + ia, NAN);
                _qf_sink_undefined(k->s, base + h * D + ib, NAN);
            }
        }
    }
    if (k->fh && half) {
        double *sc = malloc(4 * half * sizeof *sc);
        if (sc) {
            rp_fast(k, t, pos, sc);
            free(sc);
        }
        for (e = 0; e < H * D && k->s->st[base + e] != QF_REF_UNDECIDED; e++)
            ;
        if (e == H * D)
            return 0;
    }
    sn = malloc((half ? half : 1) * sizeof *sn);
    cs = malloc((half ? half : 1) * sizeof *cs);
    if (!sn || !cs) {
        free(sn), free(cs);
        for (e = 0; e < H * D; e++)
            if (k->s->st[base + e] == QF_REF_UNDECIDED)
                _qf_sink_undefined(k->s, base + e, NAN);
        return 0;
    }
    for (i = 0; i < half; i++) {
        _qf_iv_init(&sn[i], w);
        _qf_iv_init(&cs[i], w);
    }
    _qf_iv_init(&f, w);
    _qf_iv_init(&L, w);
    _qf_iv_init(&pv, w);
    _qf_iv_init(&ex, w);
    _qf_iv_init(&y, w);
    _qf_iv_init(&t1, w);
    _qf_iv_init(&t2, w);
    _qf_ziv_init(&zv, c, w);
    _qf_ziv_track(&zv, sn, half);
    _qf_ziv_track(&zv, cs, half);
    _qf_ziv_track_each(&zv, 7, &f, &L, &pv, &ex, &y, &t1, &t2);
    while (_qf_ziv_next(&zv)) {
        _qf_iv_set_sj(&pv, (intmax_t)pos);
        if (!P->inv_freq) {
            _qf_iv_set_d(&t1, P->theta);
            _qf_iv_log(&L, &t1);
        }
        for (i = 0; i < half; i++) {
            if (P->inv_freq) {
                _qf_iv_set_d(&f, P->inv_freq[i]);
            } else if (i == 0) {
                _qf_iv_set_si(&f, 1);
            } else {
                _qf_iv_set_si(&t1, -2 * (long)i);
                _qf_iv_div_ui(&t1, &t1, (unsigned long)rd);
                _qf_iv_mul(&ex, &t1, &L);
                _qf_iv_exp(&f, &ex);
            }
            _qf_iv_mul(&t1, &pv, &f);
            _qf_iv_sincos(&sn[i], &cs[i], &t1);
        }
        for (h = 0; h < H; h++) {
            const double *x = k->x + base + h * D;
            for (i = 0; i < half; i++) {
                size_t ia = P->layout == QF_REF_ROPE_HALF ? i : 2 * i;
                size_t ib = P->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
                int side;
                for (side = 0; side < 2; side++) {
                    size_t oi = base + h * D + (side ? ib : ia);
                    if (k->s->st[oi] != QF_REF_UNDECIDED)
                        continue;
                    if (side == 0) { /* x_a cos - x_b sin */
                        _qf_iv_mul_d(&t1, &cs[i], x[ia]);
                        _qf_iv_mul_d(&t2, &sn[i], x[ib]);
                        _qf_iv_sub(&y, &t1, &t2);
                    } else { /* x_a sin + x_b cos */
                        _qf_iv_mul_d(&t1, &sn[i], x[ia]);
                        _qf_iv_mul_d(&t2, &cs[i], x[ib]);
                        _qf_iv_add(&y, &t1, &t2);
                    }
                    _qf_ziv_done(&zv, k->s, oi, &y);
                }
            }
        }
    }
    for (i = 0; i < half; i++) {
        _qf_iv_clear(&sn[i]);
        _qf_iv_clear(&cs[i]);
    }
    _qf_iv_clear(&f);
    _qf_iv_clear(&L);
    _qf_iv_clear(&pv);
    _qf_iv_clear(&ex);
    _qf_iv_clear(&y);
    _qf_iv_clear(&t1);
    _qf_iv_clear(&t2);
    free(sn), free(cs);
    return (int)zv.w;
}

/* The frequencies for the fast path, once per call: inv_freq[i] exactly
 * (fl = ef = 0), or theta^(-2i / rd) enclosed by MPFR at 256 bits (the
 * same formula as rp_token's) and split into fh + fl with the distance to
 * both ends of the enclosure, rounded up, as ef. */
static void rp_freqs(const qf_ref_rope_params *P, size_t rd, double *fh, double *fl, double *ef)
{
    size_t half = rd / 2, i;
    _qf_mpfr_env env;
    _qf_iv f, L, t1;
    mpfr_t m, d;
    if (P->inv_freq) {
        for (i = 0; i < half; i++) {
            fh[i] = P->inv_freq[i];
            fl[i] = ef[i] = 0;
        }
        return;
    }
    _qf_mpfr_enter(&env);
    _qf_iv_init(&f, 256);
    _qf_iv_init(&L, 256);
    _qf_iv_init(&t1, 256);
    mpfr_inits2(320, m, d, (mpfr_ptr)0);
    _qf_iv_set_d(&t1, P->theta);
    _qf_iv_log(&L, &t1);
    fh[0] = 1, fl[0] = ef[0] = 0;
    for (i = 1; i < half; i++) {
        double e1, e2;
        _qf_iv_set_si(&t1, -2 * (long)i);
        _qf_iv_div_ui(&t1, &t1, (unsigned long)rd);
        _qf_iv_mul(&f, &t1, &L);
        _qf_iv_exp(&f, &f);
        mpfr_add(m, f.lo, f.hi, MPFR_RNDN); /* exact at 320 bits */
        mpfr_div_2ui(m, m, 1, MPFR_RNDN);
        fh[i] = mpfr_get_d(m, MPFR_RNDN);
        mpfr_sub_d(m, m, fh[i], MPFR_RNDN); /* exact */
        fl[i] = mpfr_get_d(m, MPFR_RNDN);
        mpfr_set_d(m, fh[i], MPFR_RNDN);
        mpfr_add_d(m, m, fl[i], MPFR_RNDN); /* fh + fl, exact */
        mpfr_sub(d, f.hi, m, MPFR_RNDU);
        e1 = fabs(mpfr_get_d(d, MPFR_RNDU));
        mpfr_sub(d, m, f.lo, MPFR_RNDU);
        e2 = fabs(mpfr_get_d(d, MPFR_RNDU));
        ef[i] = (e1 > e2 ? e1 : e2) * (1 + 0x1p-50);
    }
    mpfr_clears(m, d, (mpfr_ptr)0);
    _qf_iv_clear(&f);
    _qf_iv_clear(&L);
    _qf_iv_clear(&t1);
    _qf_mpfr_leave(&env);
}

qf_status qf_ref_rope(const qf_ref_opts *opts, const qf_ref_rope_params *p, const double *x, qf_ref_out *y)
{
    double *fq = NULL;
    _qf_rctx c;
    _qf_sink s;
    rp_ctx k;
    qf_status st;
    size_t rd, n, i;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if (!p)
        return QF_EINVAL;
    rd = p->rotary_dim ? p->rotary_dim : p->head_dim;
    if (rd % 2 || rd > p->head_dim || (p->layout != QF_REF_ROPE_INTERLEAVED && p->layout != QF_REF_ROPE_HALF))
        return QF_EINVAL;
    if (!p->inv_freq && (!isfinite(p->theta) || p->theta <= 0))
        return QF_EINVAL;
    if (p->inv_freq)
        for (i = 0; i < rd / 2; i++)
            if (!isfinite(p->inv_freq[i]))
                return QF_EINVAL;
    n = p->tokens * p->heads * p->head_dim;
    if (n && !x)
        return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, y, n)) != QF_OK)
        return st;
    k.c = &c;
    k.p = p;
    k.x = x;
    k.rd = rd;
    k.s = &s;
    k.fh = k.fl = k.ef = NULL;
    /* No binary64 evaluation decides a binary64 (or wider) rounding. */
    if (!c.slow_only && _qf_format_prec(s.f) < 53 && rd && n) {
        fq = malloc(3 * (rd / 2) * sizeof *fq);
        if (fq) {
            rp_freqs(p, rd, fq, fq + rd / 2, fq + rd);
            k.fh = fq;
            k.fl = fq + rd / 2;
            k.ef = fq + rd;
        }
    }
    maxp = n ? _qf_parallel_rows(&c, p->tokens, rp_token, &k) : 0;
    _qf_sink_close(&s, maxp);
    free(fq);
    return QF_OK;
}
