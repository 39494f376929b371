/* ref_core.c: options, output sinks, rigorous MPFR intervals, threading
 * (shared by every reference in refs/). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "_fast.h"
#include "_ref.h"
#include "qf_format_mpfr.h"

/* ---- Public small things -------------------------------------------------------- */

const char *qf_ref_status_name(qf_ref_status s)
{
    switch (s) {
    case QF_REF_EXACT: return "exact";
    case QF_REF_ROUNDED: return "rounded";
    case QF_REF_UNDECIDED: return "undecided";
    case QF_REF_UNDEFINED: return "undefined";
    default: return "?";
    }
}

qf_ref_opts qf_ref_opts_default(void)
{
    qf_ref_opts o;
    memset(&o, 0, sizeof o);
    o.format = NULL;
    o.round = QF_ROUND_RNE;
    o.saturate = 0;
    o.prec_extra = 64;
    o.prec_max = 4096;
    o.threads = 0;
    return o;
}

qf_status qf_ref_out_alloc(qf_ref_out *out, size_t n)
{
    size_t m = n ? n : 1;
    if (!out)
        return QF_EINVAL;
    memset(out, 0, sizeof *out);
    out->value = malloc(m * sizeof *out->value);
    out->code = malloc(m * sizeof *out->code);
    out->status = malloc(m);
    if (!out->value || !out->code || !out->status) {
        qf_ref_out_free(out);
        return QF_ENOMEM;
    }
    return QF_OK;
}

void qf_ref_out_free(qf_ref_out *out)
{
    if (!out)
        return;
    free(out->value);
    free(out->code);
    free(out->status);
    out->value = NULL;
    out->code = NULL;
    out->status = NULL;
}

/* ---- Context ----------------------------------------------------------------------- */

mpfr_prec_t _qf_format_prec(const qf_format *f)
{
    switch (f->kind) {
    case QF_KIND_INT: return f->bits;
    case QF_KIND_SCALE: return 2;
    default: return f->man_bits + 1;
    }
}

mpfr_prec_t _qf_rctx_w0_for(const _qf_rctx *c, const qf_format *f)
{
    long w = (long)_qf_format_prec(f) + c->extra;
    if (w < 8)
        w = 8;
    return w > c->wmax ? c->wmax : (mpfr_prec_t)w;
}

qf_status _qf_rctx_init(_qf_rctx *c, const qf_ref_opts *o)
{
    qf_ref_opts d = qf_ref_opts_default();
    long w0, wmax;
    if (!o)
        o = &d;
    c->f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    if (!c->f)
        return QF_EFORMAT;
    c->round = o->round;
    c->saturate = o->saturate != 0;
    if ((int)o->round < 0 || o->round >= QF_ROUND_COUNT || o->round == QF_ROUND_STOCHASTIC ||
        !qf_round_valid(c->f, o->round))
        return QF_EINVAL;
    if (o->prec_extra < 0 || o->prec_max < 0)
        return QF_EINVAL;
    w0 = (long)_qf_format_prec(c->f) + o->prec_extra;
    if (w0 < 8)
        w0 = 8;
    wmax = o->prec_max;
    if (wmax < w0)
        wmax = w0;
    if (wmax > 1L << 24)
        return QF_EINVAL;
    c->w0 = (mpfr_prec_t)w0;
    c->extra = o->prec_extra;
    c->slow_only = o->slow_only != 0;
    c->wmax = (mpfr_prec_t)wmax;
    c->threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    if (c->threads < 1 || !mpfr_buildopt_tls_p()) /* MPFR state is per thread only with TLS */
        c->threads = 1;
    return QF_OK;
}

mpfr_prec_t _qf_next_prec(const _qf_rctx *c, mpfr_prec_t w)
{
    if (w >= c->wmax)
        return 0;
    return 2 * w < c->wmax ? 2 * w : c->wmax;
}

void _qf_mpfr_enter(_qf_mpfr_env *e)
{
    e->emin = mpfr_get_emin();
    e->emax = mpfr_get_emax();
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
}

void _qf_mpfr_leave(const _qf_mpfr_env *e)
{
    mpfr_set_emin(e->emin);
    mpfr_set_emax(e->emax);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
}

int _qf_parallel_rows(const _qf_rctx *c, size_t n, int (*body)(void *ctx, size_t r), void *ctx)
{
    int maxp = 0;
    int nt = c->threads;
    if (n == 0)
        return 0;
    if ((size_t)nt > n)
        nt = (int)n;
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(max : maxp)
    {
        _qf_mpfr_env env;
        long r;
        _qf_mpfr_enter(&env);
#pragma omp for schedule(dynamic, 1)
        for (r = 0; r < (long)n; r++) {
            int p = body(ctx, (size_t)r);
            if (p > maxp)
                maxp = p;
        }
        _qf_mpfr_leave(&env);
    }
    return maxp;
}

/* ---- Intervals ------------------------------------------------------------------------ */

void _qf_iv_init(_qf_iv *a, mpfr_prec_t w)
{
    mpfr_init2(a->lo, w);
    mpfr_init2(a->hi, w);
}

void _qf_iv_clear(_qf_iv *a)
{
    mpfr_clear(a->lo);
    mpfr_clear(a->hi);
}

void _qf_iv_set_prec(_qf_iv *a, mpfr_prec_t w)
{
    mpfr_set_prec(a->lo, w);
    mpfr_set_prec(a->hi, w);
}

void _qf_iv_set_d(_qf_iv *r, double x)
{
    mpfr_set_d(r->lo, x, MPFR_RNDD);
    mpfr_set_d(r->hi, x, MPFR_RNDU);
}

void _qf_iv_set_si(_qf_iv *r, long x)
{
    mpfr_set_si(r->lo, x, MPFR_RNDD);
    mpfr_set_si(r->hi, x, MPFR_RNDU);
}

void _qf_iv_set_sj(_qf_iv *r, intmax_t x)
{
    mpfr_set_sj(r->lo, x, MPFR_RNDD);
    mpfr_set_sj(r->hi, x, MPFR_RNDU);
}

void _qf_iv_set_mpfr(_qf_iv *r, mpfr_srcptr x)
{
    mpfr_set(r->lo, x, MPFR_RNDD);
    mpfr_set(r->hi, x, MPFR_RNDU);
}

void _qf_iv_set(_qf_iv *r, const _qf_iv *a)
{
    if (r == a)
        return;
    mpfr_set(r->lo, a->lo, MPFR_RNDD);
    mpfr_set(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_set_zero(_qf_iv *r)
{
    mpfr_set_zero(r->lo, 1);
    mpfr_set_zero(r->hi, 1);
}

int _qf_iv_is_point(const _qf_iv *a)
{
    return mpfr_equal_p(a->lo, a->hi);
}

void _qf_iv_neg(_qf_iv *r, const _qf_iv *a)
{
    if (r == a) {
        mpfr_swap(r->lo, r->hi);
        mpfr_neg(r->lo, r->lo, MPFR_RNDD);
        mpfr_neg(r->hi, r->hi, MPFR_RNDU);
    } else {
        mpfr_neg(r->lo, a->hi, MPFR_RNDD);
        mpfr_neg(r->hi, a->lo, MPFR_RNDU);
    }
}

void _qf_iv_add(_qf_iv *r, const _qf_iv *a, const _qf_iv *b)
{
    mpfr_add(r->lo, a->lo, b->lo, MPFR_RNDD);
    mpfr_add(r->hi, a->hi, b->hi, MPFR_RNDU);
}

void _qf_iv_sub(_qf_iv *r, const _qf_iv *a, const _qf_iv *b)
{
    /* b may not alias r: r->lo is written before b->lo is read below */
    mpfr_sub(r->lo, a->lo, b->hi, MPFR_RNDD);
    mpfr_sub(r->hi, a->hi, b->lo, MPFR_RNDU);
}

void _qf_iv_add_d(_qf_iv *r, const _qf_iv *a, double x)
{
    mpfr_add_d(r->lo, a->lo, x, MPFR_RNDD);
    mpfr_add_d(r->hi, a->hi, x, MPFR_RNDU);
}

void _qf_iv_add_ui(_qf_iv *r, const _qf_iv *a, unsigned long x)
{
    mpfr_add_ui(r->lo, a->lo, x, MPFR_RNDD);
    mpfr_add_ui(r->hi, a->hi, x, MPFR_RNDU);
}

void _qf_iv_sub_mpfr(_qf_iv *r, const _qf_iv *a, mpfr_srcptr x)
{
    mpfr_sub(r->lo, a->lo, x, MPFR_RNDD);
    mpfr_sub(r->hi, a->hi, x, MPFR_RNDU);
}

void _qf_iv_mul_d(_qf_iv *r, const _qf_iv *a, double x)
{
    if (x >= 0) {
        mpfr_mul_d(r->lo, a->lo, x, MPFR_RNDD);
        mpfr_mul_d(r->hi, a->hi, x, MPFR_RNDU);
    } else {
        if (r == a)
            mpfr_swap(r->lo, r->hi);
        else {
            mpfr_set(r->lo, a->hi, MPFR_RNDD);
            mpfr_set(r->hi, a->lo, MPFR_RNDU);
        }
        mpfr_mul_d(r->lo, r->lo, x, MPFR_RNDD);
        mpfr_mul_d(r->hi, r->hi, x, MPFR_RNDU);
    }
}

void _qf_iv_mul_2si(_qf_iv *r, const _qf_iv *a, long e)
{
    mpfr_mul_2si(r->lo, a->lo, e, MPFR_RNDD);
    mpfr_mul_2si(r->hi, a->hi, e, MPFR_RNDU);
}

void _qf_iv_mul_pos(_qf_iv *r, const _qf_iv *a, const _qf_iv *b)
{
    if (mpfr_sgn(a->lo) >= 0) {
        mpfr_mul(r->lo, a->lo, b->lo, MPFR_RNDD);
        mpfr_mul(r->hi, a->hi, b->hi, MPFR_RNDU);
    } else if (mpfr_sgn(a->hi) <= 0) {
        mpfr_mul(r->lo, a->lo, b->hi, MPFR_RNDD);
        mpfr_mul(r->hi, a->hi, b->lo, MPFR_RNDU);
    } else {
        mpfr_mul(r->lo, a->lo, b->hi, MPFR_RNDD);
        mpfr_mul(r->hi, a->hi, b->hi, MPFR_RNDU);
    }
}

void _qf_iv_mul(_qf_iv *r, const _qf_iv *a, const _qf_iv *b)
{
    mpfr_t t;
    const mpfr_srcptr al = a->lo, ah = a->hi, bl = b->lo, bh = b->hi;
    mpfr_srcptr pairs[4][2] = {{al, bl}, {al, bh}, {ah, bl}, {ah, bh}};
    int i;
    if (mpfr_sgn(bl) >= 0) {
        _qf_iv_mul_pos(r, a, b);
        return;
    }
    if (mpfr_sgn(al) >= 0) {
        _qf_iv_mul_pos(r, b, a);
        return;
    }
    mpfr_init2(t, mpfr_get_prec(r->lo));
    mpfr_mul(r->lo, al, bl, MPFR_RNDD);
    for (i = 1; i < 4; i++) {
        mpfr_mul(t, pairs[i][0], pairs[i][1], MPFR_RNDD);
        mpfr_min(r->lo, r->lo, t, MPFR_RNDD);
    }
    mpfr_set_prec(t, mpfr_get_prec(r->hi));
    mpfr_mul(r->hi, al, bl, MPFR_RNDU);
    for (i = 1; i < 4; i++) {
        mpfr_mul(t, pairs[i][0], pairs[i][1], MPFR_RNDU);
        mpfr_max(r->hi, r->hi, t, MPFR_RNDU);
    }
    mpfr_clear(t);
}

void _qf_iv_sqr(_qf_iv *r, const _qf_iv *a)
{
    if (mpfr_sgn(a->lo) >= 0) {
        mpfr_sqr(r->lo, a->lo, MPFR_RNDD);
        mpfr_sqr(r->hi, a->hi, MPFR_RNDU);
    } else if (mpfr_sgn(a->hi) <= 0) {
        mpfr_t t;
        mpfr_init2(t, mpfr_get_prec(r->lo));
        mpfr_sqr(t, a->hi, MPFR_RNDD);
        mpfr_sqr(r->hi, a->lo, MPFR_RNDU);
        mpfr_swap(t, r->lo);
        mpfr_clear(t);
    } else {
        if (mpfr_cmpabs(a->lo, a->hi) > 0)
            mpfr_sqr(r->hi, a->lo, MPFR_RNDU);
        else
            mpfr_sqr(r->hi, a->hi, MPFR_RNDU);
        mpfr_set_zero(r->lo, 1);
    }
}

void _qf_iv_div_pos(_qf_iv *r, const _qf_iv *a, const _qf_iv *b)
{
    if (mpfr_sgn(a->lo) >= 0) {
        mpfr_div(r->lo, a->lo, b->hi, MPFR_RNDD);
        mpfr_div(r->hi, a->hi, b->lo, MPFR_RNDU);
    } else if (mpfr_sgn(a->hi) <= 0) {
        mpfr_div(r->lo, a->lo, b->lo, MPFR_RNDD);
        mpfr_div(r->hi, a->hi, b->hi, MPFR_RNDU);
    } else {
        mpfr_div(r->lo, a->lo, b->lo, MPFR_RNDD);
        mpfr_div(r->hi, a->hi, b->lo, MPFR_RNDU);
    }
}

void _qf_iv_div_ui(_qf_iv *r, const _qf_iv *a, unsigned long n)
{
    mpfr_div_ui(r->lo, a->lo, n, MPFR_RNDD);
    mpfr_div_ui(r->hi, a->hi, n, MPFR_RNDU);
}

void _qf_iv_div_d(_qf_iv *r, const _qf_iv *a, double x)
{
    if (x > 0) {
        mpfr_div_d(r->lo, a->lo, x, MPFR_RNDD);
        mpfr_div_d(r->hi, a->hi, x, MPFR_RNDU);
    } else {
        if (r == a)
            mpfr_swap(r->lo, r->hi);
        else {
            mpfr_set(r->lo, a->hi, MPFR_RNDD);
            mpfr_set(r->hi, a->lo, MPFR_RNDU);
        }
        mpfr_div_d(r->lo, r->lo, x, MPFR_RNDD);
        mpfr_div_d(r->hi, r->hi, x, MPFR_RNDU);
    }
}

void _qf_iv_ui_div_pos(_qf_iv *r, unsigned long n, const _qf_iv *b)
{
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(r->lo));
    mpfr_ui_div(t, n, b->hi, MPFR_RNDD);
    mpfr_ui_div(r->hi, n, b->lo, MPFR_RNDU);
    mpfr_swap(t, r->lo);
    mpfr_clear(t);
}

void _qf_iv_exp(_qf_iv *r, const _qf_iv *a)
{
    mpfr_exp(r->lo, a->lo, MPFR_RNDD);
    mpfr_exp(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_log(_qf_iv *r, const _qf_iv *a)
{
    mpfr_log(r->lo, a->lo, MPFR_RNDD);
    mpfr_log(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_log1p(_qf_iv *r, const _qf_iv *a)
{
    mpfr_log1p(r->lo, a->lo, MPFR_RNDD);
    mpfr_log1p(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_sqrt(_qf_iv *r, const _qf_iv *a)
{
    mpfr_sqrt(r->lo, a->lo, MPFR_RNDD);
    mpfr_sqrt(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_rec_sqrt(_qf_iv *r, const _qf_iv *a)
{
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(r->lo));
    mpfr_rec_sqrt(t, a->hi, MPFR_RNDD);
    mpfr_rec_sqrt(r->hi, a->lo, MPFR_RNDU);
    mpfr_swap(t, r->lo);
    mpfr_clear(t);
}

void _qf_iv_tanh(_qf_iv *r, const _qf_iv *a)
{
    mpfr_tanh(r->lo, a->lo, MPFR_RNDD);
    mpfr_tanh(r->hi, a->hi, MPFR_RNDU);
}

void _qf_iv_erfc_neg(_qf_iv *r, const _qf_iv *a)
{
    /* erfc(-x) increases with x: the lower end comes from a->lo */
    mpfr_t t, u;
    mpfr_init2(t, mpfr_get_prec(a->lo));
    mpfr_init2(u, mpfr_get_prec(r->lo));
    mpfr_neg(t, a->lo, MPFR_RNDN); /* exact: same precision */
    mpfr_erfc(u, t, MPFR_RNDD);
    mpfr_set_prec(t, mpfr_get_prec(a->hi));
    mpfr_neg(t, a->hi, MPFR_RNDN);
    mpfr_erfc(r->hi, t, MPFR_RNDU);
    mpfr_swap(u, r->lo);
    mpfr_clear(t);
    mpfr_clear(u);
}

void _qf_iv_sincos(_qf_iv *s, _qf_iv *c, const _qf_iv *a)
{
    mpfr_t rad, t;
    mpfr_prec_t w = mpfr_get_prec(s->lo);
    mpfr_init2(rad, 32);
    mpfr_init2(t, w);
    /* rad >= hi - lo; sin and cos move by at most rad over [lo, hi] */
    mpfr_sub(rad, a->hi, a->lo, MPFR_RNDU);
    mpfr_sin(t, a->lo, MPFR_RNDD);
    mpfr_sin(s->hi, a->lo, MPFR_RNDU);
    mpfr_sub(s->lo, t, rad, MPFR_RNDD);
    mpfr_add(s->hi, s->hi, rad, MPFR_RNDU);
    mpfr_cos(t, a->lo, MPFR_RNDD);
    mpfr_cos(c->hi, a->lo, MPFR_RNDU);
    mpfr_sub(c->lo, t, rad, MPFR_RNDD);
    mpfr_add(c->hi, c->hi, rad, MPFR_RNDU);
    /* both lie in [-1, 1] */
    if (mpfr_cmp_si(s->lo, -1) < 0)
        mpfr_set_si(s->lo, -1, MPFR_RNDD);
    if (mpfr_cmp_si(s->hi, 1) > 0)
        mpfr_set_si(s->hi, 1, MPFR_RNDU);
    if (mpfr_cmp_si(c->lo, -1) < 0)
        mpfr_set_si(c->lo, -1, MPFR_RNDD);
    if (mpfr_cmp_si(c->hi, 1) > 0)
        mpfr_set_si(c->hi, 1, MPFR_RNDU);
    mpfr_clear(rad);
    mpfr_clear(t);
}

void _qf_iv_const_pi(_qf_iv *r)
{
    mpfr_const_pi(r->lo, MPFR_RNDD);
    mpfr_const_pi(r->hi, MPFR_RNDU);
}

void _qf_iv_set_str(_qf_iv *r, const char *s)
{
    mpfr_set_str(r->lo, s, 10, MPFR_RNDD);
    mpfr_set_str(r->hi, s, 10, MPFR_RNDU);
}

void _qf_iv_sum(_qf_iv *r, const mpfr_ptr *x, size_t n)
{
    if (n == 0) {
        _qf_iv_set_zero(r);
        return;
    }
    mpfr_sum(r->lo, (const mpfr_ptr *)x, (unsigned long)n, MPFR_RNDD);
    mpfr_sum(r->hi, (const mpfr_ptr *)x, (unsigned long)n, MPFR_RNDU);
}

/* ---- Sinks ----------------------------------------------------------------------------- */

qf_status _qf_sink_open(_qf_sink *s, const _qf_rctx *c, const qf_format *f, qf_ref_out *out, size_t n)
{
    memset(s, 0, sizeof *s);
    if (!out || (!out->value && n))
        return QF_EINVAL;
    s->out = out;
    s->f = f ? f : c->f;
    s->round = c->round;
    s->saturate = c->saturate;
    if (!qf_round_valid(s->f, s->round))
        return QF_EINVAL;
    s->n = n;
    if (out->status)
        s->st = out->status;
    else {
        s->own = malloc(n ? n : 1);
        if (!s->own)
            return QF_ENOMEM;
        s->st = s->own;
    }
    memset(s->st, QF_REF_UNDECIDED, n);
    out->n_exact = out->n_rounded = out->n_undecided = out->n_undefined = 0;
    out->n_fast = 0;
    out->max_prec = 0;
    s->fast_off = c->slow_only;
    atomic_init(&s->n_fast, 0);
    s->nsplit = qf_format_split_codes(s->f, s->round, s->saturate, s->split);
    return QF_OK;
}

void _qf_sink_close(_qf_sink *s, int max_prec)
{
    size_t i;
    qf_ref_out *o = s->out;
    if (!o)
        return;
    for (i = 0; i < s->n; i++) {
        switch (s->st[i]) {
        case QF_REF_EXACT: o->n_exact++; break;
        case QF_REF_ROUNDED: o->n_rounded++; break;
        case QF_REF_UNDEFINED: o->n_undefined++; break;
        default: o->n_undecided++; break;
        }
    }
    o->max_prec = max_prec;
    o->n_fast = atomic_load(&s->n_fast);
    free(s->own);
    s->own = NULL;
}

/* The value of a code; float32's without qf_format_decode's generic path
 * (the fast path writes millions of them). */
static double dec(const _qf_sink *s, uint64_t code)
{
    if (s->f->id == QF_FLOAT32) {
        uint32_t c = (uint32_t)code;
        float f;
        memcpy(&f, &c, sizeof f);
        return f;
    }
    return qf_format_decode(s->f, code);
}

static void put(_qf_sink *s, size_t i, uint64_t code, qf_ref_status st)
{
    s->out->value[i] = dec(s, code);
    if (s->out->code)
        s->out->code[i] = code;
    s->st[i] = (uint8_t)st;
}

static uint64_t enc_d(const _qf_sink *s, double x)
{
    return qf_format_encode(s->f, x, s->round, s->saturate, 32, 0);
}

static uint64_t enc_m(const _qf_sink *s, mpfr_srcptr x)
{
    return qf_format_encode_mpfr(s->f, x, s->round, s->saturate, 32, 0);
}

static int sink_decide(_qf_sink *s, size_t i, const _qf_iv *v);

void _qf_sink_approx(_qf_sink *s, size_t i, double v, double e)
{
    if (s->out->approx)
        s->out->approx[i] = v;
    if (s->out->approx_err)
        s->out->approx_err[i] = e;
}

/* approx from an enclosure: its midpoint in binary64, with the half-width
 * (rounded up) and half an ulp of the rounding to binary64. */
static void approx_iv(_qf_sink *s, size_t i, const _qf_iv *v)
{
    mpfr_t m;
    mpfr_prec_t p;
    double mid, hw;
    if (!s->out->approx && !s->out->approx_err)
        return;
    p = mpfr_get_prec(v->lo) > mpfr_get_prec(v->hi) ? mpfr_get_prec(v->lo) : mpfr_get_prec(v->hi);
    mpfr_init2(m, p + 1);
    mpfr_sub(m, v->hi, v->lo, MPFR_RNDU);
    hw = mpfr_get_d(m, MPFR_RNDU) * 0.5;
    mpfr_add(m, v->lo, v->hi, MPFR_RNDN);
    mpfr_div_2ui(m, m, 1, MPFR_RNDN);
    mid = mpfr_get_d(m, MPFR_RNDN);
    mpfr_clear(m);
    /* half an ulp of binary64 (at least the subnormal spacing), or more */
    hw += isfinite(mid) && fabs(mid) >= 0x1p-1022 ? 0.5 * fabs(mid) * 0x1p-52 : 0x1p-1074;
    _qf_sink_approx(s, i, mid, hw);
}

int _qf_sink_decide(_qf_sink *s, size_t i, const _qf_iv *v)
{
    int done = sink_decide(s, i, v);
    if (done)
        approx_iv(s, i, v);
    return done;
}

static int sink_decide(_qf_sink *s, size_t i, const _qf_iv *v)
{
    uint64_t code, a, b;
    if (mpfr_nan_p(v->lo) || mpfr_nan_p(v->hi))
        return 0;
    if (mpfr_zero_p(v->lo) && mpfr_zero_p(v->hi)) {
        code = enc_d(s, 0.0);
        put(s, i, code, qf_format_decode(s->f, code) == 0.0 ? QF_REF_EXACT : QF_REF_ROUNDED);
        return 1;
    }
    if (mpfr_equal_p(v->lo, v->hi)) {
        double d;
        code = enc_m(s, v->lo);
        d = qf_format_decode(s->f, code);
        put(s, i, code, !isnan(d) && mpfr_cmp_d(v->lo, d) == 0 ? QF_REF_EXACT : QF_REF_ROUNDED);
        return 1;
    }
    if (mpfr_cmp(v->lo, v->hi) > 0)
        return 0; /* not an enclosure: never decide from it */
    a = enc_m(s, v->lo);
    b = enc_m(s, v->hi);
    if (a == b) {
        /* one code is one value (or one rule) only on one side of 0 when
         * it is split: -overflow and +overflow both give fnuz's NaN, and
         * the numbers between them do not */
        if (_qf_sink_split(s, a, mpfr_sgn(v->lo) > 0, mpfr_sgn(v->hi) > 0))
            return 0;
        put(s, i, a, QF_REF_ROUNDED);
        return 1;
    }
    /* both ends round to a zero: the real result rounds to 0 (its sign is
     * not a property of the real number) */
    if (qf_format_decode(s->f, a) == 0.0 && qf_format_decode(s->f, b) == 0.0) {
        put(s, i, enc_d(s, 0.0), QF_REF_ROUNDED);
        return 1;
    }
    return 0;
}

int _qf_sink_decide_fast(_qf_sink *s, size_t i, const _qf_fenc *f, int may_be_exact)
{
    double lo, hi;
    uint64_t a, b;
    /* Relative error models break down below the normal range (and a
     * bound that is not a number decides nothing). */
    if (s->fast_off || !(f->e >= 0) || !isfinite(f->v) || !isfinite(f->e) || fabs(f->v) < 0x1p-1000)
        return 0;
    /* The ends rounded outward: [lo, hi] holds [v - e, v + e].  With e'
     * = e + 2u|v| (rounded up by the last factor) and e' <= |v|, RN(v -+
     * e') is within u(|v| + e') <= 2u|v| of v -+ e', so past v -+ e. */
    {
        double e2 = (f->e + 0x1p-52 * fabs(f->v)) * (1 + 0x1p-50);
        if (e2 <= fabs(f->v)) {
            lo = f->v - e2;
            hi = f->v + e2;
        } else {
            lo = nextafter(f->v - f->e, -INFINITY);
            hi = nextafter(f->v + f->e, INFINITY);
        }
    }
    if (s->f->id == QF_FLOAT32 && s->round == QF_ROUND_RNE && !s->saturate) {
        /* The conversion of the hardware (IEEE 754 binary64 to binary32,
         * round to nearest even, gradual underflow, overflow to infinity)
         * is qf_format_encode's for this case, at a fraction of the cost. */
        float fl = (float)lo, fh = (float)hi;
        uint32_t ca, cb;
        memcpy(&ca, &fl, sizeof ca);
        memcpy(&cb, &fh, sizeof cb);
        a = ca;
        b = cb;
    } else {
        a = enc_d(s, lo);
        b = enc_d(s, hi);
    }
    if (a != b || _qf_sink_split(s, a, lo > 0, hi > 0))
        return 0;
    if (may_be_exact) {
        /* A target value inside the enclosure may be the exact result,
         * which MPFR would call EXACT: left to it, so that the statuses
         * never depend on the path (the chance is about 2e / spacing). */
        double va = dec(s, a);
        if (va >= lo && va <= hi)
            return 0;
    }
    put(s, i, a, QF_REF_ROUNDED);
    _qf_sink_approx(s, i, f->v, f->e);
    atomic_fetch_add_explicit(&s->n_fast, 1, memory_order_relaxed);
    return 1;
}

void _qf_sink_guess(_qf_sink *s, size_t i, const _qf_iv *v)
{
    mpfr_t m;
    mpfr_prec_t p = mpfr_get_prec(v->lo) > mpfr_get_prec(v->hi) ? mpfr_get_prec(v->lo) : mpfr_get_prec(v->hi);
    mpfr_init2(m, p + 1);
    mpfr_add(m, v->lo, v->hi, MPFR_RNDN); /* exact at p + 1 bits when the ends are close */
    mpfr_div_2ui(m, m, 1, MPFR_RNDN);
    put(s, i, enc_m(s, m), QF_REF_UNDECIDED);
    mpfr_clear(m);
    approx_iv(s, i, v);
}

void _qf_sink_put_d(_qf_sink *s, size_t i, double x)
{
    uint64_t code;
    double d;
    if (isnan(x)) {
        _qf_sink_undefined(s, i, x);
        return;
    }
    if (x == 0)
        x = 0.0;
    code = enc_d(s, x);
    d = qf_format_decode(s->f, code);
    put(s, i, code, d == x ? QF_REF_EXACT : QF_REF_ROUNDED);
    _qf_sink_approx(s, i, x, 0);
}

void _qf_sink_undefined(_qf_sink *s, size_t i, double x)
{
    put(s, i, enc_d(s, x), QF_REF_UNDEFINED);
    if (isnan(x))
        s->out->value[i] = x;
    _qf_sink_approx(s, i, x, 0);
}
