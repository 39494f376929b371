/* _fast_attn.h: binary64 evaluations with proven error bounds for RoPE,
 * attention and the MoE router (not installed).
 *
 * The same contract as _fast.h: each result is a value v with an absolute
 * bound e, |v - exact| <= e, that the sinks turn into a decided rounding
 * (_qf_sink_decide_fast) or leave to MPFR.  sin, cos and log are evaluated
 * here by polynomials whose errors the comments derive (docs/refs.md "Fast
 * path: attention, RoPE, router"); nothing calls the C library's sin, cos
 * or log, whose accuracy is documented but not proven.  u = 2^-53.
 */
#ifndef QF__FAST_ATTN_H
#define QF__FAST_ATTN_H

#include "_fast.h"

/* sin and cos of the angle pos (fh + fl + d), |d| <= ef, for an integer
 * pos with |pos| <= 2^53 and |pos fh| <= 2^24 (the RoPE angles of
 * positions up to ~1.6e7 at frequency 1): *s, *c with absolute bounds
 * *es, *ec.  1, or 0 outside that domain (the caller falls back). */
int _qf_fast_sincos_pos(double pos, double fh, double fl, double ef, double *s, double *c, double *es,
                        double *ec);

/* log(x) for normal positive x (2^-1000 <= x <= 2^1000): 1, else 0. */
int _qf_fast_log(double x, _qf_fenc *r);

/* One attention row (docs/refs.md "Fast path: attention, RoPE, router"):
 * the query q[D], the kept keys' rows k + keep[j] D and values v +
 * keep[j] dv (j < nkeep >= 1, all finite), their additive masks madd[j]
 * (finite), scale (0: 1/sqrt(D)) and softcap (0: none).  Writes the
 * enclosures of the dv outputs softmax(s) v into out and of the row's
 * log-sum-exp into *lse.  work: 2 nkeep + 2 dv doubles.  1, or 0 when a
 * step leaves its domain (a logit too large for exp's range or tanh's,
 * an overflow): the caller falls back. */
int _qf_fast_attn_row(const double *q, const double *k, const double *v, size_t D, size_t dv, const size_t *keep,
                      const double *madd, size_t nkeep, double scale, double softcap, double *work, _qf_fenc *out,
                      _qf_fenc *lse);

/* [lo, hi], binary64 numbers with lo <= v - e and v + e <= hi: the
 * enclosure with its ends rounded outward, for exact comparisons. */
void _qf_fenc_bounds(const _qf_fenc *f, double *lo, double *hi);

#endif
