/* ref_rope.c: rotary position embedding.
 *
 * Per token, in rigorous intervals at working precision w:
 *   f_i = exp((-2i / rotary_dim) log theta)   (f_0 = 1 exactly), or inv_freq[i]
 *   a_i = pos f_i;  sin a_i, cos a_i through the Lipschitz enclosure
 *   y_a = x_a cos - x_b sin,  y_b = x_a sin + x_b cos.
 * At position 0 every angle is exactly 0, so y = x exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
} rp_ctx;

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

qf_status qf_ref_rope(const qf_ref_opts *opts, const qf_ref_rope_params *p, const double *x, qf_ref_out *y)
{
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
    maxp = n ? _qf_parallel_rows(&c, p->tokens, rp_token, &k) : 0;
    _qf_sink_close(&s, maxp);
    return QF_OK;
}
