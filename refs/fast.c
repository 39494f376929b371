/* fast.c: binary64 evaluations with proven error bounds (_fast.h).
 *
 * Notation: u = 2^-53, the unit roundoff of binary64 with rounding to
 * nearest; gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., 2002, sec. 3.1).  Every bound below is a
 * first-order sum of the relative errors of the steps, then enlarged by 1 %
 * and a few u, which covers the second-order terms many times over for
 * the sizes involved (every first-order sum here is below 2^-40).
 * docs/refs.md "Fast path" states the same derivations.
 */
#include <math.h>
#include <stdint.h>

#include "_fast.h"

#define U 0x1p-53

/* Relative error of _qf_fast_exp (derived in exp_core): 55.1 u, rounded
 * up to 64 u. */
#define EXP_REL (64 * U)

/* ln 2 split for Cody and Waite's reduction (W. J. Cody and W. Waite,
 * Software Manual for the Elementary Functions, 1980, ch. 6): LN2_HI has
 * 32 significant bits, so k LN2_HI is exact for |k| < 2^21; |ln 2 - LN2_HI
 * - LN2_LO| < 2^-80 (tests/refs/t-fast checks both against MPFR). */
static const double LN2_HI = 0x1.62e42fee00000p-1;
static const double LN2_LO = 0x1.a39ef35793c76p-33;
static const double LOG2E = 0x1.71547652b82fep+0;

/* 1/i! rounded to nearest, i = 0..13. */
static const double INV_FACT[14] = {
    1.0,
    1.0,
    0.5,
    0x1.5555555555555p-3,
    0x1.5555555555555p-5,
    0x1.1111111111111p-7,
    0x1.6c16c16c16c17p-10,
    0x1.a01a01a01a01ap-13,
    0x1.a01a01a01a01ap-16,
    0x1.71de3a556c734p-19,
    0x1.27e4fb7789f5cp-22,
    0x1.ae64567f544e4p-26,
    0x1.1eed8eff8d898p-29,
    0x1.6124613a86d09p-33,
};

/* |v - exact| <= rel |exact| as an absolute bound on the computed v:
 * rel |v| / (1 - rel) <= rel |v| (1 + 2 rel) for rel < 1/2, and the three
 * roundings of this product are covered by the factor 1 + 4u. */
static double abs_of(double v, double rel)
{
    return fabs(v) * rel * (1 + 2 * rel) * (1 + 4 * U);
}

/* exp(x), |x| <= 700, as v (1 + d) with |d| <= EXP_REL.
 *
 * Reduction: k = nearest integer to x log2(e) (|k| <= 1010), r1 = x - k
 * LN2_HI exactly (k LN2_HI is exact; r1 is a multiple of the smaller ulp
 * of x and k LN2_HI, both >= 2^-54 when k != 0, and |r1| <= 0.3466 < 2^-1,
 * so it fits 53 bits), r = r1 - k LN2_LO with two roundings.  With
 * r* = x - k ln 2 the real reduced argument, |r - r*| <= u |k LN2_LO| +
 * u |r| + |k| 2^-80 <= 0.36 u, so exp(r) = exp(r*) (1 + d0), |d0| <= 0.37 u.
 * Polynomial: p(r) = sum_{i<=13} r^i / i!, |r| <= 0.35:
 *   truncation   |exp(r) - p(r)| <= 0.35^14 / 14! e^0.35 <= 6.8e-18,
 *                relative to exp(r) >= e^-0.35 = 0.70: <= 0.09 u;
 *   coefficients |c_i - 1/i!| <= u / i!: <= u e^|r| / e^r <= 2.02 u;
 *   Horner       |p^ - p_c(r)| <= gamma_26 sum |c_i| |r|^i (Higham eq.
 *                (5.3), 13 multiplications and 13 additions) <= 26.1 u
 *                x 1.42 / 0.70 <= 52.6 u.
 * Sum: 55.1 u.  The scaling by 2^k is exact: the result lies in
 * [e^-700, e^700], normal binary64 numbers. */
static double exp_core(double x)
{
    double kd = nearbyint(x * LOG2E), r, p;
    int i;
    r = (x - kd * LN2_HI) - kd * LN2_LO;
    p = INV_FACT[13];
    for (i = 12; i >= 0; i--)
        p = p * r + INV_FACT[i];
    {
        /* 2^k as a bit pattern (|k| <= 1010: a normal number), then one
         * exact product: ldexp's generic path cost more than the rest. */
        union {
            uint64_t u;
            double d;
        } two_k;
        two_k.u = (uint64_t)((int64_t)kd + 1023) << 52;
        return p * two_k.d;
    }
}

int _qf_fast_exp(double x, _qf_fenc *r)
{
    if (!(fabs(x) <= 700))
        return 0;
    r->v = exp_core(x);
    r->e = abs_of(r->v, EXP_REL);
    return 1;
}

/* exp(-t^2) with the square split exactly: s = RN(t t), s_lo = t t - s
 * (by fma, exact), exp(-t^2) = exp(-s) exp(-s_lo); |s_lo| <= u s <= 676 u,
 * and exp(-s_lo) = (1 - s_lo)(1 + d), |d| <= s_lo^2 < 2^-80.  Relative
 * error of the result: EXP_REL (exp(-s)) + u (1 - s_lo) + u (product)
 * + 2^-80 <= EXP_REL + 2.1 u.  Requires t^2 <= 700. */
static double exp_neg_sq(double t, double *rel)
{
    double s = t * t, s_lo = fma(t, t, -s);
    *rel = EXP_REL + 2.1 * U;
    return exp_core(-s) * (1 - s_lo);
}

/* erf(t), 0 <= t <= 2, with its relative error in *rel:
 *   erf(t) = 2/sqrt(pi) exp(-t^2) S,  S = sum_{n>=0} T_n,
 *   T_0 = t, T_{n+1} = T_n 2t^2 / (2n + 3)
 * (A&S 7.1.6: every term positive, no cancellation).
 *   terms   T_n computed with 3n roundings (q = 2 RN(t t), a product and a
 *           division per step): relative error <= gamma_3n;
 *   sum     left to right of N+1 positive terms: gamma_N more, so
 *           |S^ - S_N| <= gamma_{4N+1} S_N;
 *   tail    sum_{n>N} T_n <= T_N rho1 / (1 - rho2) with rho1 = 2t^2 /
 *           (2N+3), rho2 = 2t^2 / (2N+5) (the ratios decrease), taken on
 *           the computed T_N enlarged by 1 % and added as a relative term
 *           of S^ (the loop stops once it is below 2^-60 S^);
 *   factor  2/sqrt(pi) rounded (u/2), exp(-t^2) (exp_neg_sq), two
 *           products (2u). */
static double erf_series(double t, double *rel)
{
    double q = 2 * (t * t), T = t, S = t, tail, erel;
    double C = 0x1.20dd750429b6dp+0; /* 2/sqrt(pi) */
    int n = 0;
    if (t == 0) {
        *rel = 0; /* erf(0) = 0 exactly */
        return 0;
    }
    for (;;) {
        double rho1 = q / (2.0 * n + 3), rho2 = q / (2.0 * n + 5);
        tail = rho2 < 0.5 ? 1.01 * T * rho1 / (1 - rho2) : INFINITY;
        if (tail <= 0x1p-60 * S || n >= 200)
            break;
        T = T * q / (2.0 * n + 3);
        S += T;
        n++;
    }
    {
        double e = exp_neg_sq(t, &erel), v = C * e * S, g = (4.0 * n + 1) * U;
        *rel = 1.01 * (0.5 * U + 2 * U + erel + g / (1 - g) + tail / S) + 4 * U;
        return v;
    }
}

/* erfc(z), z >= 2, with its relative error in *rel, by Laplace's continued
 * fraction (A&S 7.1.14):
 *   erfc(z) = exp(-z^2) / sqrt(pi) K,
 *   K = 1 / (z + a_1 / (z + a_2 / (z + ...))),  a_k = k / 2.
 * All a_k and z are positive, so consecutive convergents K_n, K_{n+1}
 * enclose K (W. B. Jones and W. J. Thron, Continued Fractions: Analytic
 * Theory and Applications, 1980, sec. 4.4: the even convergents of a
 * continued fraction with positive elements increase, the odd ones
 * decrease, and a convergent one lies between them).  The convergents come
 * from the forward recurrences K_n = A_n / B_n,
 *   A_n = z A_{n-1} + c_n A_{n-2},  B_n = z B_{n-1} + c_n B_{n-2},
 *   A_0 = 0, B_0 = 1, A_-1 = 1, B_-1 = 0, c_1 = 1, c_n = (n - 1) / 2,
 * sums of positive products, so a relative error r in A_{n-1} and A_{n-2}
 * is at most r + 2u in A_n (two products, one addition): A_n and B_n carry
 * gamma_{2n}, K_n gamma_{4n+1}.  (A_n and B_n are scaled together by 2^-600
 * past 2^600, which changes no ratio.)  It runs until K_n and K_{n+1}
 * agree to 2^-56, checked every 4 steps from about 260 / z^2 (the number
 * of steps needed: 63 at z = 2, 11 at z = 8); 0 when they do not by n =
 * 2048 (never seen for z >= 2). */
static int erfc_cf(double z, double *v, double *rel)
{
    double A2 = 1, A1 = 0, B2 = 0, B1 = 1; /* A_{n-2}, A_{n-1}, B_{n-2}, B_{n-1} */
    int n, check = (int)(260 / (z * z)) + 4;
    for (n = 1; n <= 2048; n++) {
        double c = n == 1 ? 1 : 0.5 * (n - 1), A = z * A1 + c * A2, B = z * B1 + c * B2;
        A2 = A1, A1 = A, B2 = B1, B1 = B;
        if (B1 > 0x1p600) {
            A2 *= 0x1p-600, A1 *= 0x1p-600, B2 *= 0x1p-600, B1 *= 0x1p-600;
        }
        if (n >= check && (n - check) % 4 == 0) {
            double K1 = A1 / B1, K0 = A2 / B2, Km = 0.5 * (K0 + K1), w, g, erel, e;
            w = 0.5 * fabs(K0 - K1) * (1 + 4 * U); /* the half-width, rounded up */
            if (w > 0x1p-56 * Km)
                continue;
            g = (4.0 * n + 6) * U;
            e = exp_neg_sq(z, &erel);
            *v = e * Km * 0x1.20dd750429b6dp-1; /* 1/sqrt(pi) */
            /* K in [Km - w, Km + w] up to gamma_{4n+6} (both convergents'
             * roundings and the midpoint's): relative w / Km + g / (1 - g). */
            *rel = 1.01 * (w / Km + g / (1 - g) + erel + 0.5 * U + 2 * U) + 4 * U;
            return 1;
        }
    }
    return 0;
}

int _qf_fast_erfc(double z, _qf_fenc *r)
{
    double a = fabs(z), rel, v, e;
    if (z < -26 && z >= -1e300) {
        /* erfc(z) = 2 - erfc(|z|), 0 < erfc(|z|) < erfc(26) < 2^-979 */
        r->v = 2;
        r->e = 0x1p-979;
        return 1;
    }
    if (!(a <= 26))
        return 0;
    if (a <= 2) {
        /* erfc(z) = 1 -+ erf(|z|): the absolute error of erf plus the
         * rounding of the sum (1 - erf(z) is exact for erf(z) >= 1/2,
         * Sterbenz; rounded once otherwise). */
        double E = erf_series(a, &rel);
        v = z >= 0 ? 1 - E : 1 + E;
        e = abs_of(E, rel) + U * fabs(v);
    } else {
        double c;
        if (!erfc_cf(a, &c, &rel))
            return 0;
        if (z > 0) {
            r->v = c;
            r->e = abs_of(c, rel);
            return 1;
        }
        v = 2 - c; /* erfc(-a) = 2 - erfc(a) */
        e = abs_of(c, rel) + U * fabs(v);
    }
    r->v = v;
    r->e = e * (1 + 4 * U);
    return 1;
}

/* x / (1 + E) with E = exp(arg) known to relative error erel: 1 + E^ has
 * relative error <= erel E / (1 + E) <= erel, its rounding u, the division
 * u.  num is x (silu, gelu_tanh) or 1 (sigmoid), exact. */
static int over_one_plus(double num, double arg, double arg_rel_abs, _qf_fenc *r)
{
    _qf_fenc E;
    double rel;
    if (arg < -700) {
        /* 0 < E < e^-700 < 2^-1009: num / (1 + E) = num (1 - d), 0 < d < E. */
        r->v = num;
        r->e = fabs(num) * 0x1p-1000;
        return 1;
    }
    if (!_qf_fast_exp(arg, &E))
        return 0;
    r->v = num / (1 + E.v);
    /* arg_rel_abs: the absolute error of the computed argument, which
     * changes exp(arg) by the factor exp(+-arg_rel_abs). */
    rel = 1.01 * (EXP_REL + 1.01 * arg_rel_abs + 2 * U) + 2 * U;
    r->e = abs_of(r->v, rel);
    return 1;
}

int _qf_fast_act(qf_ref_act act, double x, _qf_fenc *r)
{
    if (!(x != 0 && fabs(x) >= 0x1p-1000 && fabs(x) <= 1e300))
        return 0;
    switch (act) {
    case QF_REF_ACT_RELU:
        r->v = x > 0 ? x : 0.0; /* exact */
        r->e = 0;
        return 1;
    case QF_REF_ACT_SIGMOID: return over_one_plus(1.0, -x, 0, r);
    case QF_REF_ACT_SILU: return over_one_plus(x, -x, 0, r);
    case QF_REF_ACT_GELU_TANH: {
        /* a = -2 sqrt(2/pi) (x + 0.044715 x^3): x x (u), x^3 (2u), the
         * constant 0.044715 rounded (u/2) and its product (u): 3.5u; the
         * sum of two terms of x's sign: 4.5u; -2 sqrt(2/pi) rounded (u/2)
         * and its product (u): 6u, taken as 6.1u.  |a| <= 700. */
        double x3, s, a;
        if (fabs(x) > 1e100)
            return 0;
        x3 = (x * x) * x;
        s = x + 0.044715 * x3; /* rounded to nearest by the compiler: u/2 */
        a = -0x1.9884533d43651p+0 * s;      /* -2 sqrt(2/pi) */
        return over_one_plus(x, a, 6.1 * U * fabs(a), r);
    }
    case QF_REF_ACT_GELU_ERF: {
        /* z = -x / sqrt 2 (constant u/2, product u: |theta| <= 1.5u);
         * erfc's relative condition |z erfc'(z) / erfc(z)| is below
         * 2z^2 + 1 for z >= 0 (A&S 7.1.13's lower bound on erfc) and below
         * 0.49 for z < 0, so the argument's error moves erfc by at most
         * (2z^2 + 1) 1.5u (x 1.01); then x/2 (exact) times erfc (u). */
        _qf_fenc E;
        double z = -x * 0x1.6a09e667f3bcdp-1, rel, kappa;
        if (!_qf_fast_erfc(z, &E))
            return 0;
        kappa = z > 0 ? 2 * z * z + 1 : 0.5;
        rel = E.e / fabs(E.v) * (1 + 2 * U) + 1.01 * kappa * 1.5 * U;
        r->v = (0.5 * x) * E.v;
        r->e = abs_of(r->v, 1.01 * rel + 2 * U);
        return 1;
    }
    default: return 0;
    }
}
