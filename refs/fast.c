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

/* Relative error of _qf_fast_exp (derived in exp_core2): 3.1 u, taken as
 * 4 u (_QF_FAST_EXP_REL). */
#define EXP_REL _QF_FAST_EXP_REL

/* ln 2 split for Cody and Waite's reduction (W. J. Cody and W. Waite,
 * Software Manual for the Elementary Functions, 1980, ch. 6): LN2_HI has
 * 32 significant bits, so k LN2_HI is exact for |k| < 2^21; |ln 2 - LN2_HI
 * - LN2_LO| < 2^-80 (tests/refs/t-fast checks both against MPFR). */
static const double LN2_HI = 0x1.62e42fee00000p-1;
static const double LN2_LO = 0x1.a39ef35793c76p-33;
/* |v - exact| <= rel |exact| as an absolute bound on the computed v:
 * rel |v| / (1 - rel) <= rel |v| (1 + 2 rel) for rel < 1/2, and the three
 * roundings of this product are covered by the factor 1 + 4u. */
static double abs_of(double v, double rel)
{
    return fabs(v) * rel * (1 + 2 * rel) * (1 + 4 * U);
}

/* 2^(j/32), j = 0..31, rounded to nearest (computed with MPFR at 300
 * bits; tests/refs/t-fast checks each against MPFR). */
static const double EXP2_32[32] = {
    0x1p+0,                0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0,  0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0,  0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0,  0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0,  0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0,  0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f09p+0,  0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0,  0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0,  0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e454p+0,
};

const double *_qf_fast_exp2_table(void)
{
    return EXP2_32;
}

/* exp(x + lo), |x| <= 700, |lo| <= 2^-10, as v (1 + d) with |d| <=
 * EXP_REL (+ 2^-62 for lo's own rounding, which the callers count), by
 * Tang's table-driven method (P. T. P. Tang, "Table-driven implementation
 * of the exponential function in IEEE floating-point arithmetic", ACM TOMS
 * 15(2), 1989): x + lo = (32 q + j) ln2/32 + r, exp = 2^q 2^(j/32) exp(r).
 *
 * Reduction: k = 32 q + j = nearest integer to x 32/ln2 (|k| <= 32352,
 * by adding and subtracting 1.5 2^52), r1 = x - k C_HI exactly (C_HI =
 * LN2_HI / 32 has 32 significant bits, so k C_HI is exact; for k != 0,
 * |x| >= 0.0108 makes x and k C_HI multiples of 2^-59 and |r1| <= 0.011 <
 * 2^-6, so r1 fits 53 bits), r = r1 - (k C_LO - lo) with three roundings.
 * With r* = x + lo - k ln2/32 the real reduced argument, |r - r*| <= u |k
 * C_LO| + u (|k C_LO| + |lo|) + u |r| + |k| 2^-85 <= 0.012 u (|r| <= 0.0109),
 * so exp(r) = exp(r*) (1 + d0), |d0| <= 0.013 u.
 * Polynomial: p(r) = sum_{i<=7} c_i r^i, c_i = RN(1/i!):
 *   truncation   |r|^8 / 8! e^|r| <= 5e-21: below 0.001 u;
 *   coefficients c_0..c_2 exact, the others within u / i!: below 0.001 u;
 *   Horner       q_7 = c_7, q_i = RN(RN(q_{i+1} r) + c_i): the error
 *                err_i = q_i - P_i(r) (P_i the exact tail polynomial)
 *                obeys |err_i| <= |r| |err_{i+1}| + u |q_{i+1} r| +
 *                u |q_i| (1 + 2u), so |err_0| <= u sum_i |r|^i (|r|
 *                |q_{i+1}| + |q_i|) (1.01); with |q_i| <= e^|r| / i!
 *                that is <= u e^|r| ((e^|r| - 1) + e^|r|) 1.01 <= 1.044 u,
 *                relative to exp(r) >= e^-0.0109: <= 1.056 u.  (The
 *                generic gamma_2n bound of Higham, Accuracy and Stability
 *                of Numerical Algorithms, eq. (5.3), is 14 u here.)
 * Table T[j] = RN(2^(j/32)): u; the product T[j] p: u; the scaling by 2^q
 * is exact (the result lies in [e^-700.01, e^700.01], normal).
 * Sum: 0.013 + 0.002 + 1.056 + 1 + 1 = 3.07 u, taken as 4 u. */
static inline double exp_core2(double x, double lo)
{
    static const double C_HI = 0x1.62e42fee00000p-6, C_LO = 0x1.a39ef35793c76p-38;
    double kd = (x * 0x1.71547652b82fep+5 + 0x1.8p52) - 0x1.8p52, r, p;
    int64_t k = (int64_t)kd;
    union {
        uint64_t u;
        double d;
    } two_q;
    r = (x - kd * C_HI) - (kd * C_LO - lo);
    p = 0x1.a01a01a01a01ap-13; /* 1/7! */
    p = p * r + 0x1.6c16c16c16c17p-10;
    p = p * r + 0x1.1111111111111p-7;
    p = p * r + 0x1.5555555555555p-5;
    p = p * r + 0x1.5555555555555p-3;
    p = p * r + 0.5;
    p = p * r + 1;
    p = p * r + 1;
    /* 2^q as a bit pattern (|q| <= 1011: a normal number): ldexp's
     * generic path cost more than the rest */
    two_q.u = (uint64_t)((k >> 5) + 1023) << 52; /* k >> 5: floor(k / 32) */
    return (EXP2_32[k & 31] * p) * two_q.d;
}

static double exp_core(double x)
{
    return exp_core2(x, 0);
}

double _qf_fast_exp_dd(double hi, double lo)
{
    return exp_core2(hi, lo);
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
 * (by fma, exact when t t >= 2^-968: the residual is then a binary64
 * number, see refs/ref_act.c), exp(-t^2) = exp(-s) exp(-s_lo); |s_lo| <=
 * u s <= 676 u, and exp(-s_lo) = (1 - s_lo)(1 + d), |d| <= s_lo^2 <
 * 2^-80.  Relative error of the result: EXP_REL (exp(-s)) + u (1 - s_lo)
 * + u (product) + 2^-80 <= EXP_REL + 2.1 u.  Below 2^-968 (erf of a tiny
 * argument) the fma's result may have rounded, by at most 2^-1075: a
 * relative change of exp(-t^2) (then 1 within 2^-968) below 2^-1074,
 * inside EXP_REL's slack (3.07 u derived, 4 u taken).  Requires t^2 <=
 * 700. */
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
 *   factor  2/sqrt(pi) rounded (0.13 u), exp(-t^2) (exp_neg_sq), two
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
         * constant 0.044715 rounded (0.45u) and its product (u): 3.45u;
         * the sum of two terms of x's sign: 4.45u; -2 sqrt(2/pi) rounded
         * (0.57u: the constants' errors are checked against MPFR in
         * tests/refs/t-fast_rows)
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
        /* z = -x / sqrt 2 (the constant RN(1/sqrt 2) is 0.62u off, more
         * than half a unit: 1/sqrt 2 lies just above a power of two; the
         * product u: |theta| <= 1.62u, taken as 1.7u);
         * erfc's relative condition |z erfc'(z) / erfc(z)| is below
         * 2z^2 + 1 for z >= 0 (A&S 7.1.13's lower bound on erfc) and below
         * 0.49 for z < 0, so the argument's error moves erfc by at most
         * (2z^2 + 1) 1.7u (x 1.01); then x/2 (exact) times erfc (u). */
        _qf_fenc E;
        double z = -x * 0x1.6a09e667f3bcdp-1, rel, kappa;
        if (!_qf_fast_erfc(z, &E))
            return 0;
        kappa = z > 0 ? 2 * z * z + 1 : 0.5;
        rel = E.e / fabs(E.v) * (1 + 2 * U) + 1.01 * kappa * 1.7 * U;
        r->v = (0.5 * x) * E.v;
        r->e = abs_of(r->v, 1.01 * rel + 2 * U);
        return 1;
    }
    default: return 0;
    }
}

/* ---- log1p ---------------------------------------------------------------- */

/* 1/(2i+1) rounded to nearest, i = 0..13. */
static const double INV_ODD[14] = {
    0x1.0000000000000p+0, 0x1.5555555555555p-2, 0x1.999999999999ap-3, 0x1.2492492492492p-3, 0x1.c71c71c71c71cp-4,
    0x1.745d1745d1746p-4, 0x1.3b13b13b13b14p-4, 0x1.1111111111111p-4, 0x1.e1e1e1e1e1e1ep-5, 0x1.af286bca1af28p-5,
    0x1.8618618618618p-5, 0x1.642c8590b2164p-5, 0x1.47ae147ae147bp-5, 0x1.2f684bda12f68p-5,
};

/* 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) for |s| <= 0.2, by Horner in
 * z = s^2 over 14 terms.  For s with relative error |ds| <= 2.01 u (both
 * callers), the result's relative error against 2 atanh(s*) is at most
 *   s        atanh's condition s / ((1 - s^2) atanh s) <= 1/(1 - s^2)
 *            <= 1.042: 2.1 u;
 *   z        RN(s s): 5.03 u, through z P'(z) / P(z) <= z / 3 / (1 - z)
 *            <= 0.014: 0.07 u;
 *   Horner   as in exp_core, |err| <= u sum z^i (z |q_{i+1}| + |q_i|)
 *            (1.01) with |q_i| <= 1 / ((2i+1)(1 - z)): <= 1.09 u of P >= 1;
 *   coefficients (1/3 on, u / (2i+1) each): <= u z / (3 (1 - z)) <= 0.014 u;
 *   truncation  sum_{i>=14} z^i / (2i+1) <= z^14 / 28 < 2^-64;
 *   product  RN(2s P) (2s exact): u.
 * Sum: 4.28 u (z <= 0.0401). */
static double atanh2(double s)
{
    double z = s * s, p = INV_ODD[13];
    int i;
    for (i = 12; i >= 0; i--)
        p = p * z + INV_ODD[i];
    return (2 * s) * p;
}

/* log1p(t), 0 <= t <= 2^50, relative error <= _QF_FAST_LOG1P_REL = 10 u:
 *   t <= 1/2: log1p(t) = 2 atanh(s), s = t / (2 + t) <= 0.2 with two
 *     roundings (2.01 u): 4.3 u in all (atanh2), no 1 + t formed;
 *   t > 1/2: w = RN(1 + t) (log w - log1p(t) <= 1.01 u absolute), w = 2^e f
 *     exactly with f in [sqrt(1/2), sqrt 2), 1 <= e <= 51; log f = 2
 *     atanh((f - 1) / (f + 1)): f - 1 exact (Sterbenz), f + 1 and the
 *     division 2.01 u, |s| <= 0.1716: 4.21 u of |log f| <= 0.3466, so
 *     1.46 u absolute; L = e LN2_HI + (log f + e LN2_LO): e LN2_HI exact
 *     (e < 2^21), e LN2_LO and the split (e 2^-80) below 2^-80, the inner
 *     sum u |log f + e LN2_LO| <= 0.35 u, the outer u |L|.  Absolute
 *     1.01 + 1.46 + 0.35 = 2.82 u over L >= log 1.5 = 0.405: 6.97 u, plus
 *     u: 7.97 u.
 * Both taken as 10 u. */
int _qf_fast_log1p(double t, double *v)
{
    double w, f, s;
    int e;
    if (!(t >= 0 && t <= 0x1p50))
        return 0;
    if (t <= 0.5) {
        *v = atanh2(t / (2 + t));
        return 1;
    }
    w = 1 + t;
    f = frexp(w, &e); /* w = f 2^e, f in [1/2, 1): exact */
    if (f < 0x1.6a09e667f3bcdp-1) {
        f *= 2;
        e--;
    }
    s = (f - 1) / (f + 1);
    *v = e * LN2_HI + (atanh2(s) + e * LN2_LO);
    return 1;
}

/* ---- Rows ---------------------------------------------------------------- */

/* gamma_{n-1}^2 for Sum2's bound (n < 2^50), rounded up by the caller's
 * margin. */
static double gamma_sq(size_t n)
{
    double g = n > 1 ? (double)(n - 1) * U : 0;
    g = g / (1 - g);
    return g * g;
}

double _qf_fast_sum2(const double *x, size_t n, int sq, double *bound)
{
    double s = 0, c = 0, a = 0, g2 = gamma_sq(n);
    size_t j;
    for (j = 0; j < n; j++) {
        /* TwoSum (Knuth, TAOCP vol. 2, sec. 4.2.2, Theorem B): t + err = s + p exactly */
        double p = sq ? x[j] * x[j] : x[j], t = s + p, z = t - s;
        c += (s - (t - z)) + (p - z);
        s = t;
        a += fabs(p);
    }
    s += c;
    /* sum |p| <= a (1 + gamma_{n-1}) <= 2a */
    *bound = (U * fabs(s) + g2 * 2 * a) * (1 + 0x1p-40);
    return s;
}

int _qf_fast_expsum(const double *x, size_t n, double scale, double *E, double *d, double *dlo, _qf_fast_row *r)
{
    double tm = -INFINITY, resm = 0, s = 0, c = 0, g2 = gamma_sq(n);
    size_t j, jm = 0, k = 0, nfin = 0;
    int inexact = 0;
    if (n == 0)
        return 0;
    for (j = 0; j < n; j++) {
        double t = scale * x[j];
        if (isinf(x[j]) && scale != 0 && (x[j] > 0) != (scale > 0))
            continue; /* scale x = -inf: a masked entry, weight 0 */
        if (!(fabs(t) <= 0x1.fffffffffffffp+1023) || (scale != 1 && x[j] != 0 && fabs(t) < 0x1p-960))
            return 0;
        nfin++;
        if (t > tm) {
            tm = t;
            jm = j;
        }
    }
    if (nfin == 0)
        return 0;
    /* The shift is a_jm = tm + resm exactly (any shift gives the same
     * softmax; the largest one keeps every argument <= 2^-10). */
    if (scale != 1)
        resm = fma(scale, x[jm], -tm);
    for (j = 0; j < n; j++) {
        double t, res, dh, bb, lo;
        if (isinf(x[j])) {
            E[j] = 0; /* masked (checked above) */
            if (d) {
                d[j] = -INFINITY;
                dlo[j] = 0;
            }
            continue;
        }
        t = scale * x[j];
        res = scale != 1 ? fma(scale, x[j], -t) : 0;
        dh = t - tm;
        bb = dh - t;
        /* TwoSum(t, -tm): dh + dl = t - tm exactly */
        double dl = (t - (dh - bb)) + (-tm - bb);
        if (res != resm) {
            /* |res| <= 2^-12 keeps lo <= 2^-10 and its two roundings
             * below u 2^-9.4 < 2^-62 (r->lo_err) */
            if (!(fabs(res) <= 0x1p-12 && fabs(resm) <= 0x1p-12))
                return 0;
            lo = dl + (res - resm);
            inexact = 1;
        } else {
            lo = dl;
        }
        if (!(dh >= -700) || !(fabs(lo) <= 0x1p-10))
            return 0;
        if (d) {
            d[j] = dh;
            dlo[j] = lo;
        }
        if (dh == 0 && lo == 0) {
            E[j] = 1; /* exp(0): exactly a_jm */
            k++;
            continue;
        }
        E[j] = exp_core2(dh, lo);
        {
            double p = E[j], tt = s + p, z = tt - s;
            c += (s - (tt - z)) + (p - z);
            s = tt;
        }
    }
    r->m = tm;
    r->k = k;
    r->nfin = nfin;
    r->S1 = s + c;
    r->lo_err = inexact ? 0x1p-62 : 0;
    /* exp(a + eps) = exp(a) (1 + d), |d| <= 1.01 |eps| */
    r->eta = EXP_REL + 1.01 * r->lo_err;
    /* positive terms: sum |p| is the exact sum */
    r->rel_S1 = (U + g2 * (1 + 4 * U)) * (1 + 0x1p-40);
    r->S = (double)k + r->S1;
    /* k exact; S1's error <= rel_S1 S1 <= rel_S1 S; the sum's rounding u */
    r->rel_S = r->rel_S1 * (1 + 2 * U) + U * (1 + 0x1p-40);
    return 1;
}
