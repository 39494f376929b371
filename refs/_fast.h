/* _fast.h: binary64 evaluations with proven error bounds (not installed).
 *
 * The references try these before MPFR (Ziv's strategy at its first, cheap
 * level: A. Ziv, ACM TOMS 17(3), 1991).  Each returns an approximation v and
 * an absolute bound e with |v - f(x)| <= e for the real value f(x); the sink
 * decides the rounding from [v - e, v + e] when both ends round alike
 * (_qf_sink_decide_fast), and only the other elements go to the MPFR
 * enclosures.  Nothing here calls the C library's exp, log or erfc: their
 * errors are documented (the glibc manual's table of known maximum errors)
 * but not proven, so exp, log1p and erf/erfc are evaluated here by formulas
 * whose error the comments derive (docs/refs.md "Fast path" gives the
 * derivations).
 * Relative bounds are in units of u = 2^-53 and every step's rounding is
 * counted whether or not the compiler contracts to FMA (the build turns
 * contraction off; the bounds hold either way).
 */
#ifndef QF__FAST_H
#define QF__FAST_H

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "_ref.h"
#include "qf_ref.h"

/* v and its absolute error bound e (|v - exact| <= e, e >= 0). */
typedef struct _qf_fenc {
    double v, e;
} _qf_fenc;

/* Relative error of the binary64 exp below (derived in fast.c, exp_core2):
 * 3.1 u, taken as 4 u.  Row references that add many exps (softmax,
 * log-softmax; attention and the router after merge) use it directly. */
#define _QF_FAST_EXP_REL (4 * 0x1p-53)

/* exp(x) for -700 <= x <= 700 (results normal in binary64): 1, else 0. */
int _qf_fast_exp(double x, _qf_fenc *r);
/* exp(hi + lo) for |hi| <= 700 and |lo| <= 2^-10 (a double-double
 * argument, such as x_j - max split exactly by TwoSum): the value, with
 * relative error <= _QF_FAST_EXP_REL + 2^-62 (the low part enters the
 * reduction, whose rounding already counts); the caller checks the
 * ranges. */
double _qf_fast_exp_dd(double hi, double lo);
/* The table 2^(j/32), j = 0..31, of that exp (for the test's check). */
const double *_qf_fast_exp2_table(void);
/* log1p(t) for 0 <= t <= 2^50: 1 and *v with relative error <=
 * _QF_FAST_LOG1P_REL (fast.c derives it), else 0.  No 1 + t is formed for
 * t <= 1/2, so a tiny t keeps its relative accuracy (log-softmax of the
 * largest entry is -log1p(sum of the others)). */
#define _QF_FAST_LOG1P_REL (10 * 0x1p-53)
int _qf_fast_log1p(double t, double *v);
/* erfc(z) for |z| <= 26 (erfc(26) is about 6e-296, still normal): 1, else 0. */
int _qf_fast_erfc(double z, _qf_fenc *r);
/* act(x) for finite nonzero x within each activation's domain: 1, else 0
 * (the caller falls back to MPFR). */
int _qf_fast_act(qf_ref_act act, double x, _qf_fenc *r);

/* ---- Rows (softmax, log-softmax, norms; attention and the router may use
 * them too) ---- */

/* The shifted exponentials of one row of a_j = scale x_j, finite or -inf
 * (a masked entry: x_j infinite of the sign opposite to scale's, E[j] = 0
 * exactly, d[j] = -inf; at least one entry finite):
 *   t_j = RN(scale x_j), jm the first index of max t_j (tm = t_jm), the
 *   shift a_jm (t_jm plus its FMA residual: exact);
 *   d[j] + dlo[j] = a_j - a_jm up to lo_err (0 when scale = 1: then
 *   TwoSum splits t_j - tm exactly);
 *   E[j] = exp(a_j - a_jm) (1 + eta_j), |eta_j| <= eta; E[j] = 1 exactly
 *   for the k entries with a_j = a_jm;
 *   S1 = the sum of the other E[j], S = RN(k + S1), by Ogita, Rump and
 *   Oishi's Sum2 (compensated; SIAM J. Sci. Comput. 26(6), 2005, Prop.
 *   4.5): |S1^ - sum E[j]| <= (u + gamma_{n-1}^2) sum E[j] for positive
 *   terms, which is rel_S1; rel_S the same for S.
 * d and dlo may be NULL (softmax needs neither).  Returns 0 (use MPFR for
 * the row) when an entry lies more than 700 below the largest, a product
 * overflows or its residual could be inexact (0 < |a_j| < 2^-960 with
 * scale != 1) or large (|residual| > 2^-12), or an entry is NaN, +inf
 * after the scale, or every entry is masked.  Memory: the caller's E (and
 * d, dlo): 8 (24) bytes per element of one row. */
typedef struct _qf_fast_row {
    double m;      /* tm */
    size_t k;      /* entries equal to the shift */
    size_t nfin;   /* entries not masked */
    double S, S1;  /* k + S1 and the sum of the other E[j] */
    double eta;    /* relative bound of each E[j] */
    double rel_S1; /* relative bound of S1 against the exact sum of the E[j] */
    double rel_S;  /* the same for S */
    double lo_err; /* absolute bound of d + dlo against a_j - a_jm */
} _qf_fast_row;
int _qf_fast_expsum(const double *x, size_t n, double scale, double *E, double *d, double *dlo, _qf_fast_row *r);

/* Sum2 of n doubles (Ogita, Rump and Oishi, above): the sum, and in *bound
 * an absolute bound on its error, (u |s| + gamma_{n-1}^2 2a) (1 + 2^-40)
 * with a the recursive sum of |x_j| (2a >= sum |x_j| for n u < 1/2); sq = 1 sums the rounded squares RN(x_j^2) instead (the squares'
 * own roundings are the caller's: at most u each, relative). */
double _qf_fast_sum2(const double *x, size_t n, int sq, double *bound);

/* ---- Deciding many elements --------------------------------------------- */

/* One row's (or run's) decisions into a sink: _qf_fast_begin, then
 * _qf_fast_decide per element, then _qf_fast_end.  For float32 with round
 * to nearest even, not saturating (the common case), the decision is
 * inline, with the output's pointers held here (the status stores, as
 * bytes, would otherwise make the compiler reload them per element), and
 * the count is added to the sink once, not by an atomic add per element. */
typedef struct _qf_fast_dst {
    _qf_sink *s;
    int f32; /* the inline case */
    double *value, *approx, *approx_err;
    uint64_t *code;
    uint8_t *st;
    size_t nf; /* decided inline, not yet counted */
} _qf_fast_dst;

static inline void _qf_fast_begin(_qf_fast_dst *d, _qf_sink *s)
{
    d->s = s;
    /* (float32 has no split code: equal codes at the ends decide) */
    d->f32 = !s->fast_off && s->f->id == QF_FLOAT32 && s->round == QF_ROUND_RNE && !s->saturate && !s->nsplit;
    d->value = s->out->value;
    d->approx = s->out->approx;
    d->approx_err = s->out->approx_err;
    d->code = s->out->code;
    d->st = s->st;
    d->nf = 0;
}

/* _qf_sink_decide_fast for element i (same decisions, same writes): 1 and
 * the element written (status ROUNDED) when every number within e of v
 * rounds alike (and, may_be_exact, no target value lies within: MPFR
 * would call it EXACT), else 0.  The inline case: the ends [lo, hi] hold
 * [v - e, v + e]: with e2 = e + 2u|v| (rounded up by the last factor) and
 * e2 <= |v|, RN(v -+ e2) is within u (|v| + e2) <= 2u|v| of v -+ e2, so
 * past v -+ e.  The hardware's binary64 to binary32 conversion is IEEE
 * 754's round to nearest even with gradual underflow and overflow to
 * infinity, which is qf_format_encode's for this target. */
static inline int _qf_fast_decide(_qf_fast_dst *d, size_t i, double v, double e, int may_be_exact)
{
    double e2, lo, hi;
    float fl, fh;
    uint32_t a, b;
    if (!d->f32) {
        _qf_fenc f;
        f.v = v;
        f.e = e;
        return _qf_sink_decide_fast(d->s, i, &f, may_be_exact);
    }
    if (!(e >= 0) || !(fabs(v) >= 0x1p-1000) || !(fabs(v) <= 0x1.fffffffffffffp+1023))
        return 0;
    e2 = (e + 0x1p-52 * fabs(v)) * (1 + 0x1p-50);
    if (!(e2 <= fabs(v)))
        return 0;
    lo = v - e2;
    hi = v + e2;
    fl = (float)lo;
    fh = (float)hi;
    memcpy(&a, &fl, sizeof a);
    memcpy(&b, &fh, sizeof b);
    /* without branches: fl sits below or above v at random, and a
     * mispredicted branch per element cost more than the rest */
    if ((a != b) | (may_be_exact & ((double)fl >= lo) & ((double)fl <= hi)))
        return 0;
    d->value[i] = (double)fl;
    if (d->code)
        d->code[i] = a;
    d->st[i] = QF_REF_ROUNDED;
    if (d->approx)
        d->approx[i] = v;
    if (d->approx_err)
        d->approx_err[i] = e;
    d->nf++;
    return 1;
}

static inline void _qf_fast_end(_qf_fast_dst *d)
{
    if (d->nf)
        atomic_fetch_add_explicit(&d->s->n_fast, d->nf, memory_order_relaxed);
    d->nf = 0;
}

#endif
