/* ulp.c: the unit in the last place of a format, and errors measured in it.
 *
 * Definition (Zimmermann et al., "Accuracy of mathematical functions",
 * docs/numerics.md#measuring-accuracy): for exact value y with y = 1.f * 2^e, ulp(y) = 2^(max(e, emin)
 * - man_bits): the spacing of the format around y, clamped at the subnormal
 * step.  The exponent is not clamped at the top, so values past max keep
 * the spacing of their binade.
 */
#include <math.h>

#include "qf_format.h"

double qf_format_ulp(const qf_format *f, double x)
{
    int e;
    if (isnan(x) || isinf(x))
        return NAN;
    if (f->kind == QF_KIND_INT)
        return 1.0;
    if (x == 0)
        return ldexp(1.0, f->emin - f->man_bits);
    e = ilogb(x);
    if (e < f->emin)
        e = f->emin;
    return ldexp(1.0, e - f->man_bits);
}

double qf_format_ulp_error(const qf_format *f, double approx, double exact)
{
    double u = qf_format_ulp(f, exact), d;
    if (isnan(u) || isnan(approx))
        return approx == exact ? 0.0 : NAN;
    /* approx - exact is rounded once; dividing by the power of two u is
     * exact unless it underflows, which cannot happen: a nonzero difference
     * is at least 2^(e - 53) when exact is in binade e (so the quotient is
     * at least 2^(man - 53)), and at least 2^-1074 against the clamped
     * u = 2^(emin - man) below it (quotient at least 2^-947 for every
     * format here). */
    d = approx - exact;
    if (isinf(d) && !isinf(approx)) {
        /* The difference overflows binary64 although the quotient may not
         * (opposite signs near DBL_MAX, or a format whose ulp is large).
         * Both operands are then at least 2^971, so halving them is exact
         * and (approx/2 - exact/2) is the same single rounding, scaled. */
        d = 0.5 * approx - 0.5 * exact;
        return d / u * 2.0;
    }
    return d / u;
}
