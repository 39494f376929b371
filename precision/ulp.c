/* ulp.c: the unit in the last place of a format, and errors measured in it.
 *
 * Definition (Zimmermann et al., "Accuracy of mathematical functions",
 * FACTS.md): for exact value y with y = 1.f * 2^e, ulp(y) = 2^(max(e, emin)
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
    double u = qf_format_ulp(f, exact);
    if (isnan(u) || isnan(approx))
        return approx == exact ? 0.0 : NAN;
    /* approx - exact is rounded once; dividing by a power of two is exact
     * unless it underflows, which the subnormal clamp of u prevents for
     * every format but float64 near its own underflow threshold. */
    return (approx - exact) / u;
}
