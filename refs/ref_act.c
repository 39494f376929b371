/* ref_act.c: element-wise activations and gated linear units.
 *
 * Formulations chosen so that no step cancels (rigorous intervals, _ref.h):
 *   GELU_ERF   x/2 erfc(-x / sqrt 2)
 *   GELU_TANH  x sigmoid(2u) = x / (1 + exp(-2u)),
 *              u = sqrt(2/pi) (x + 0.044715 x^3)   [1 + tanh u = 2 sigmoid 2u]
 *   SILU       x / (1 + exp(-x))
 *   SIGMOID    1 / (1 + exp(-x))
 *   RELU       max(x, 0), exact
 * GLU: act(gate) * up.
 */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "_fast.h"
#include "_ziv.h"

static const char *const act_names[QF_REF_ACT_COUNT] = {"gelu_erf", "gelu_tanh", "silu", "sigmoid", "relu"};

const char *qf_ref_act_name(qf_ref_act a)
{
    return (unsigned)a < QF_REF_ACT_COUNT ? act_names[a] : "?";
}

qf_status qf_ref_act_lookup(const char *name, qf_ref_act *out)
{
    int i;
    if (!name || !out)
        return QF_EINVAL;
    if (!strcasecmp(name, "gelu")) {
        *out = QF_REF_ACT_GELU_ERF;
        return QF_OK;
    }
    for (i = 0; i < QF_REF_ACT_COUNT; i++) {
        if (!strcasecmp(name, act_names[i])) {
            *out = (qf_ref_act)i;
            return QF_OK;
        }
    }
    return QF_EPARSE;
}

/* act(x) for x = +-inf (the limits). */
static double act_inf(qf_ref_act act, double x)
{
    if (x > 0)
        return act == QF_REF_ACT_SIGMOID ? 1.0 : INFINITY;
    return 0.0;
}

/* Sign of act(x) for finite x (-1, 0, 1): the GLU special cases need it. */
static int act_sign(qf_ref_act act, double x)
{
    if (act == QF_REF_ACT_SIGMOID)
        return 1;
    if (act == QF_REF_ACT_RELU)
        return x > 0;
    return (x > 0) - (x < 0);
}

/* Enclosure of act(x), x finite, at the precision of r (t1, t2 temps). */
static void act_iv(qf_ref_act act, double x, _qf_iv *r, _qf_iv *t1, _qf_iv *t2)
{
    switch (act) {
    case QF_REF_ACT_GELU_ERF:
        /* t1 = sqrt 2; t2 = x / sqrt 2; r = x/2 erfc(-t2) */
        mpfr_sqrt_ui(t1->lo, 2, MPFR_RNDD);
        mpfr_sqrt_ui(t1->hi, 2, MPFR_RNDU);
        _qf_iv_set_d(r, x);
        _qf_iv_div_pos(t2, r, t1);
        _qf_iv_erfc_neg(t1, t2);
        _qf_iv_mul_d(r, t1, x);
        _qf_iv_mul_2si(r, r, -1);
        break;
    case QF_REF_ACT_GELU_TANH:
        /* t1 = x + 0.044715 x^3 */
        _qf_iv_set_d(t2, x);
        _qf_iv_sqr(t1, t2);
        _qf_iv_mul_d(t1, t1, x); /* x^3 */
        _qf_iv_set_str(t2, "0.044715");
        _qf_iv_mul(r, t1, t2);
        _qf_iv_add_d(t1, r, x);
        /* r = sqrt(2 / pi) */
        _qf_iv_const_pi(t2);
        _qf_iv_ui_div_pos(r, 2, t2);
        _qf_iv_sqrt(r, r);
        _qf_iv_mul_pos(t2, t1, r); /* u */
        _qf_iv_mul_2si(t2, t2, 1);
        _qf_iv_neg(t2, t2);
        _qf_iv_exp(t1, t2);
        _qf_iv_add_ui(t1, t1, 1);
        _qf_iv_set_d(t2, x);
        _qf_iv_div_pos(r, t2, t1);
        break;
    case QF_REF_ACT_SILU:
    case QF_REF_ACT_SIGMOID:
        _qf_iv_set_d(t2, -x);
        _qf_iv_exp(t1, t2);
        _qf_iv_add_ui(t1, t1, 1);
        _qf_iv_set_d(t2, act == QF_REF_ACT_SILU ? x : 1.0);
        _qf_iv_div_pos(r, t2, t1);
        break;
    default: /* RELU */ _qf_iv_set_d(r, x > 0 ? x : 0.0); break;
    }
}

typedef struct ac_ctx {
    const _qf_rctx *c;
    qf_ref_act act;
    const double *x, *up; /* up NULL: plain activation */
    size_t n, chunk;
    _qf_sink *s;
} ac_ctx;

/* Special values of one element: 1 when written. */
static int act_special(const ac_ctx *k, size_t i)
{
    double x = k->x[i];
    if (isnan(x) || (k->up && isnan(k->up[i]))) {
        _qf_sink_undefined(k->s, i, NAN);
        return 1;
    }
    if (!k->up) {
        if (isinf(x)) {
            _qf_sink_put_d(k->s, i, act_inf(k->act, x));
            return 1;
        }
        return 0;
    }
    if (isinf(x)) {
        double a = act_inf(k->act, x), u = k->up[i];
        if ((a == 0 && isinf(u)) || (isinf(a) && u == 0))
            _qf_sink_undefined(k->s, i, NAN);
        else if (a == 0)
            _qf_sink_put_d(k->s, i, 0.0);
        else
            _qf_sink_put_d(k->s, i, a * u); /* +inf * u or 1 * u: exact */
        return 1;
    }
    if (isinf(k->up[i])) {
        int sg = act_sign(k->act, x);
        if (sg == 0)
            _qf_sink_undefined(k->s, i, NAN);
        else
            _qf_sink_put_d(k->s, i, sg > 0 ? k->up[i] : -k->up[i]);
        return 1;
    }
    return 0;
}

static int ac_chunk(void *vctx, size_t ch)
{
    const ac_ctx *k = vctx;
    const _qf_rctx *c = k->c;
    size_t i0 = ch * k->chunk, i1 = i0 + k->chunk, i;
    _qf_iv r, t1, t2, u;
    _qf_ziv zv;
    int used = 0;
    if (i1 > k->n)
        i1 = k->n;
    _qf_iv_init(&r, c->w0);
    _qf_iv_init(&t1, c->w0);
    _qf_iv_init(&t2, c->w0);
    _qf_iv_init(&u, c->w0);
    _qf_ziv_init(&zv, c, c->w0);
    _qf_ziv_track_each(&zv, 4, &r, &t1, &t2, &u);
    for (i = i0; i < i1; i++) {
        _qf_fenc f;
        if (act_special(k, i))
            continue;
        if (k->act == QF_REF_ACT_RELU && !k->up) {
            _qf_sink_put_d(k->s, i, k->x[i] > 0 ? k->x[i] : 0.0); /* exact */
            continue;
        }
        /* Binary64 first (_fast.h); GLU: act(x) up adds one rounding. */
        if (_qf_fast_act(k->act, k->x[i], &f)) {
            int ok = 1;
            if (k->up) {
                double u = k->up[i], v = f.v * u;
                if (f.e == 0) {
                    /* relu(x) exact: the product is v plus its fma
                     * residual, exactly, when the residual is a binary64
                     * number: the product of a and b is a multiple of
                     * ulp(a) ulp(b) >= 2^(ea + eb - 104) (ea, eb the
                     * exponents, emin for a subnormal), so is the
                     * residual, and it is below ulp(v), so it fits when
                     * ea + eb >= -1022 + 52, which |v| >= 2^-968 implies
                     * (|a b| < 2^(ea + eb + 2); the classic condition
                     * ea + eb >= emin + p - 1 for an exact product error,
                     * Muller et al., Handbook of Floating-Point Arithmetic,
                     * 2nd ed., 2018, ch. 4).
                     * Below, the residual may have rounded (to 0: 1.5 times
                     * 2^-1074 is 2^-1073 with residual -2^-1075, which
                     * rounds to 0), so MPFR takes the element, whose point
                     * enclosure of the product is exact.  An exact product
                     * is that point enclosure (EXACT when the target holds
                     * it), so it takes put_d's statuses. */
                    double res = fma(f.v, u, -v);
                    if (res == 0 && fabs(v) >= 0x1p-968 && isfinite(v)) {
                        _qf_sink_put_d(k->s, i, v);
                        continue;
                    }
                    f.e = fabs(res);
                    ok = fabs(v) >= 0x1p-968;
                } else {
                    f.e = (f.e * fabs(u) + 0x1p-53 * fabs(v)) * (1 + 0x1p-51);
                }
                f.v = v;
                ok &= u != 0 && v != 0 && isfinite(v);
            }
            if (ok && _qf_sink_decide_fast(k->s, i, &f, 0))
                continue;
        }
        _qf_ziv_start(&zv, c->w0);
        while (_qf_ziv_next(&zv)) {
            if ((int)zv.w > used)
                used = (int)zv.w;
            act_iv(k->act, k->x[i], &r, &t1, &t2);
            if (k->up) {
                _qf_iv_mul_d(&u, &r, k->up[i]);
                _qf_iv_set(&r, &u);
            }
            _qf_ziv_done(&zv, k->s, i, &r);
        }
    }
    _qf_iv_clear(&r);
    _qf_iv_clear(&t1);
    _qf_iv_clear(&t2);
    _qf_iv_clear(&u);
    return used;
}

static qf_status act_any(const qf_ref_opts *opts, qf_ref_act act, const double *x, const double *up, size_t n,
                         qf_ref_out *y)
{
    _qf_rctx c;
    _qf_sink s;
    ac_ctx k;
    qf_status st;
    int maxp;
    if ((st = _qf_rctx_init(&c, opts)) != QF_OK)
        return st;
    if ((unsigned)act >= QF_REF_ACT_COUNT || (n && !x))
        return QF_EINVAL;
    if ((st = _qf_sink_open(&s, &c, NULL, y, n)) != QF_OK)
        return st;
    k.c = &c;
    k.act = act;
    k.x = x;
    k.up = up;
    k.n = n;
    k.chunk = 256;
    k.s = &s;
    maxp = _qf_parallel_rows(&c, (n + k.chunk - 1) / k.chunk, ac_chunk, &k);
    _qf_sink_close(&s, maxp);
    return QF_OK;
}

qf_status qf_ref_activation(const qf_ref_opts *opts, qf_ref_act act, const double *x, size_t n, qf_ref_out *y)
{
    return act_any(opts, act, x, NULL, n, y);
}

qf_status qf_ref_glu(const qf_ref_opts *opts, qf_ref_act act, const double *gate, const double *up, size_t n,
                     qf_ref_out *y)
{
    if (n && !up)
        return QF_EINVAL;
    return act_any(opts, act, gate, up, n, y);
}
