/* _ref.h: helpers shared inside refs/ (not installed).
 *
 * _qf_iv is a closed interval [lo, hi] of MPFR numbers that provably
 * contains an exact real value: every operation rounds its lower end with
 * MPFR_RNDD and its upper end with MPFR_RNDU, on the end points that make
 * the result an enclosure (monotonicity, sign cases).  The enclosure holds
 * at any precision; only its width depends on it.
 *
 * _qf_sink writes one output array: it turns an enclosure into a code, a
 * value and a status (qf_ref.h), and counts.
 */
#ifndef QF__REF_H
#define QF__REF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <mpfr.h>

#include "qf_format.h"
#include "qf_ref.h"

/* ---- Options resolved ------------------------------------------------------ */

typedef struct _qf_rctx {
    const qf_format *f; /* main target */
    qf_round round;
    int saturate;
    mpfr_prec_t w0;   /* starting working precision */
    mpfr_prec_t wmax; /* last one tried */
    long extra;       /* opts.prec_extra */
    int threads;      /* resolved, >= 1 */
    int slow_only;    /* opts.slow_only: no binary64 fast path */
} _qf_rctx;

qf_status _qf_rctx_init(_qf_rctx *c, const qf_ref_opts *o);
/* Precision p of a format: man_bits + 1, the bit width of an integer, 2 for e8m0. */
mpfr_prec_t _qf_format_prec(const qf_format *f);
/* The starting precision for another target format (same policy). */
mpfr_prec_t _qf_rctx_w0_for(const _qf_rctx *c, const qf_format *f);
/* Next precision of the doubling schedule, 0 when wmax was the last. */
mpfr_prec_t _qf_next_prec(const _qf_rctx *c, mpfr_prec_t w);

/* Each thread that computes calls enter first and leave last: the widest
 * exponent range while computing, the caller's restored after, and MPFR's
 * thread-local caches freed. */
typedef struct _qf_mpfr_env {
    mpfr_exp_t emin, emax;
} _qf_mpfr_env;
void _qf_mpfr_enter(_qf_mpfr_env *e);
void _qf_mpfr_leave(const _qf_mpfr_env *e);

/* ---- Intervals ---------------------------------------------------------------
 * Unless said otherwise r may alias a (never b). */

typedef struct _qf_iv {
    mpfr_t lo, hi;
} _qf_iv;

void _qf_iv_init(_qf_iv *a, mpfr_prec_t w);
void _qf_iv_clear(_qf_iv *a);
void _qf_iv_set_prec(_qf_iv *a, mpfr_prec_t w); /* value lost */
void _qf_iv_set_d(_qf_iv *r, double x);
void _qf_iv_set_si(_qf_iv *r, long x);
void _qf_iv_set_sj(_qf_iv *r, intmax_t x);
void _qf_iv_set_mpfr(_qf_iv *r, mpfr_srcptr x);
void _qf_iv_set(_qf_iv *r, const _qf_iv *a);
void _qf_iv_set_zero(_qf_iv *r);
int _qf_iv_is_point(const _qf_iv *a);
void _qf_iv_neg(_qf_iv *r, const _qf_iv *a);
void _qf_iv_add(_qf_iv *r, const _qf_iv *a, const _qf_iv *b);
void _qf_iv_sub(_qf_iv *r, const _qf_iv *a, const _qf_iv *b);
void _qf_iv_add_d(_qf_iv *r, const _qf_iv *a, double x);
void _qf_iv_add_ui(_qf_iv *r, const _qf_iv *a, unsigned long x);
void _qf_iv_sub_mpfr(_qf_iv *r, const _qf_iv *a, mpfr_srcptr x); /* a - x, x exact */
void _qf_iv_mul_d(_qf_iv *r, const _qf_iv *a, double x);
void _qf_iv_mul_2si(_qf_iv *r, const _qf_iv *a, long e); /* exact */
/* b >= 0 (b.lo >= 0). */
void _qf_iv_mul_pos(_qf_iv *r, const _qf_iv *a, const _qf_iv *b);
/* Any signs; r may alias neither. */
void _qf_iv_mul(_qf_iv *r, const _qf_iv *a, const _qf_iv *b);
void _qf_iv_sqr(_qf_iv *r, const _qf_iv *a);
/* b > 0 (b.lo > 0), r may alias neither. */
void _qf_iv_div_pos(_qf_iv *r, const _qf_iv *a, const _qf_iv *b);
void _qf_iv_div_ui(_qf_iv *r, const _qf_iv *a, unsigned long n);     /* n > 0 */
void _qf_iv_div_d(_qf_iv *r, const _qf_iv *a, double x);             /* x finite, nonzero */
void _qf_iv_ui_div_pos(_qf_iv *r, unsigned long n, const _qf_iv *b); /* n / b, b > 0 */
void _qf_iv_exp(_qf_iv *r, const _qf_iv *a);
void _qf_iv_log(_qf_iv *r, const _qf_iv *a);   /* a > 0 */
void _qf_iv_log1p(_qf_iv *r, const _qf_iv *a); /* a > -1 */
void _qf_iv_sqrt(_qf_iv *r, const _qf_iv *a);
void _qf_iv_rec_sqrt(_qf_iv *r, const _qf_iv *a); /* a > 0 */
void _qf_iv_tanh(_qf_iv *r, const _qf_iv *a);
void _qf_iv_erfc_neg(_qf_iv *r, const _qf_iv *a); /* erfc(-a), increasing in a */
/* s = sin a, c = cos a through the Lipschitz bound (|sin'|, |cos'| <= 1). */
void _qf_iv_sincos(_qf_iv *s, _qf_iv *c, const _qf_iv *a);
void _qf_iv_const_pi(_qf_iv *r);
/* The enclosure of a decimal constant given as a string ("0.044715"). */
void _qf_iv_set_str(_qf_iv *r, const char *s);
/* Enclosure of sum x[i] (exact terms of any precision) by mpfr_sum. */
void _qf_iv_sum(_qf_iv *r, const mpfr_ptr *x, size_t n);

/* ---- Output sinks ------------------------------------------------------------ */

typedef struct _qf_sink {
    qf_ref_out *out;
    const qf_format *f;
    qf_round round;
    int saturate;
    uint8_t *st;  /* out->status or own */
    uint8_t *own; /* allocated when out->status is NULL */
    size_t n;
    int fast_off;         /* opts->slow_only: the fast path is not tried */
    atomic_size_t n_fast; /* decided by _qf_sink_decide_fast (threads add) */
    /* qf_format_split_codes of (f, round, saturate): a code that numbers
     * of both signs round to (fnuz's NaN 0x80, e8m0's 0xFF) decides an
     * enclosure only when its ends lie on one side of 0 */
    int nsplit;
    uint64_t split[2];
} _qf_sink;

qf_status _qf_sink_open(_qf_sink *s, const _qf_rctx *c, const qf_format *f, qf_ref_out *out, size_t n);
/* Counts and frees; max_prec is the largest precision used. */
void _qf_sink_close(_qf_sink *s, int max_prec);
/* 1 and the element written when the rounding of the enclosure is
 * decided: every number of it rounds to one code (its ends to one code,
 * on one side of 0 when that code is split). */
int _qf_sink_decide(_qf_sink *s, size_t i, const _qf_iv *v);
/* The binary64 fast path (_fast.h): 1 and the element written (status
 * ROUNDED) when every number within f->e of f->v rounds alike (the rule of
 * _qf_sink_decide), else 0: the caller goes on to MPFR.  may_be_exact:
 * the caller cannot rule out that the exact result is a target value
 * (which MPFR would call EXACT), so an enclosure holding a target value is
 * left to MPFR too; the activations rule it out (their MPFR enclosures of
 * nonzero arguments never shrink to a point), softmax and the norms do
 * not.  Always 0 when the sink's fast path is off. */
struct _qf_fenc;
int _qf_sink_decide_fast(_qf_sink *s, size_t i, const struct _qf_fenc *f, int may_be_exact);
/* The approximation of element i's exact value (qf_ref_out.approx): v
 * with |v - exact| <= e, when the output asks for it. */
void _qf_sink_approx(_qf_sink *s, size_t i, double v, double e);
/* Do ends lo and hi that both round to code leave it undecided: a split
 * code with ends on both sides of 0 (lo_pos, hi_pos: the end is > 0)?
 * Free unless the target has split codes. */
static inline int _qf_sink_split(const _qf_sink *s, uint64_t code, int lo_pos, int hi_pos)
{
    return s->nsplit && lo_pos != hi_pos && (code == s->split[0] || code == s->split[1]);
}
/* The enclosure's midpoint rounded, status UNDECIDED. */
void _qf_sink_guess(_qf_sink *s, size_t i, const _qf_iv *v);
/* An exact value known as a double (infinities included): EXACT when the
 * target holds it, ROUNDED otherwise; NaN gives UNDEFINED. */
void _qf_sink_put_d(_qf_sink *s, size_t i, double x);
/* UNDEFINED with the convention value x (value NaN when x is NaN). */
void _qf_sink_undefined(_qf_sink *s, size_t i, double x);

/* Run body(ctx, r) for r in [0, n) over c->threads threads, each inside
 * _qf_mpfr_enter/leave; body returns the largest precision it used, and the
 * maximum over all r is returned. */
int _qf_parallel_rows(const _qf_rctx *c, size_t n, int (*body)(void *ctx, size_t r), void *ctx);

#endif
