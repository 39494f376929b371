/* _fast.h: binary64 evaluations with proven error bounds (not installed).
 *
 * The references try these before MPFR (Ziv's strategy at its first, cheap
 * level: A. Ziv, ACM TOMS 17(3), 1991).  Each returns an approximation v and
 * an absolute bound e with |v - f(x)| <= e for the real value f(x); the sink
 * decides the rounding from [v - e, v + e] when both ends round alike
 * (_qf_sink_decide_fast), and only the other elements go to the MPFR
 * enclosures.  Nothing here calls the C library's exp or erfc: their errors
 * are documented (the glibc manual's table of known maximum errors) but not
 * proven, so exp and erf/erfc are evaluated here by formulas whose error
 * the comments derive (docs/refs.md "Fast path" gives the derivations).
 * Relative bounds are in units of u = 2^-53 and every step's rounding is
 * counted whether or not the compiler contracts to FMA (the build turns
 * contraction off; the bounds hold either way).
 */
#ifndef QF__FAST_H
#define QF__FAST_H

#include "qf_ref.h"

/* v and its absolute error bound e (|v - exact| <= e, e >= 0). */
typedef struct _qf_fenc {
    double v, e;
} _qf_fenc;

/* exp(x) for -700 <= x <= 700 (results normal in binary64): 1, else 0. */
int _qf_fast_exp(double x, _qf_fenc *r);
/* erfc(z) for |z| <= 26 (erfc(26) is about 6e-296, still normal): 1, else 0. */
int _qf_fast_erfc(double z, _qf_fenc *r);
/* act(x) for finite nonzero x within each activation's domain: 1, else 0
 * (the caller falls back to MPFR). */
int _qf_fast_act(qf_ref_act act, double x, _qf_fenc *r);

#endif
