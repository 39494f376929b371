/* fast_attn.c: sin/cos of RoPE angles and log, in binary64 with proven
 * error bounds (_fast_attn.h).
 *
 * Notation as in fast.c: u = 2^-53; a rounding to nearest of a real z
 * gives RN(z) with |RN(z) - z| <= u |RN(z)| outside the subnormal range
 * (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., 2002,
 * eq. (2.5)); gamma_n = n u / (1 - n u).  Bounds are first-order sums
 * enlarged by 1 % (which covers the second-order terms and the rounding of
 * the bound's own arithmetic for the sizes here) plus a tiny absolute term
 * for a possible subnormal intermediate.  docs/refs.md "Fast path:
 * attention, RoPE, router" states the same derivations.
 */
#include <math.h>

#include "_fast_attn.h"

#define U 0x1p-53
/* Absolute slack for subnormal intermediates (each rounding there is off
 * by at most 2^-1075) and for the truncations below 2^-60. */
#define TINY 0x1p-1000

/* pi/2 = C1 + C2 + C3 + delta, |delta| < 2.4e-41 < 2^-133 (Cody and
 * Waite's splitting, W. J. Cody and W. Waite, Software Manual for the
 * Elementary Functions, 1980, ch. 8): C1 has 25 significant bits, so k C1
 * is exact for |k| < 2^28; C2 = RN(pi/2 - C1), C3 = RN(pi/2 - C1 - C2)
 * (tests/refs/t-fast_attn checks them against MPFR). */
static const double C1 = 0x1.921fb50000000p+0;
static const double C2 = 0x1.110b4611a6263p-26;
static const double C3 = 0x1.8a2e03707344ap-81;
static const double PIO2_DELTA = 0x1p-133;
static const double TWO_OVER_PI = 0x1.45f306dc9c883p-1;

/* (-1)^j / (2j+1)! and (-1)^j / (2j)!, rounded to nearest. */
static const double SIN_C[8] = {
    -0x1.5555555555555p-3,  0x1.1111111111111p-7,  -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19,
    -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,
};
static const double COS_C[9] = {
    -0x1.0000000000000p-1,  0x1.5555555555555p-5,  -0x1.6c16c16c16c17p-10,
    0x1.a01a01a01a01ap-16,  -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29,
    -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45, -0x1.6827863b97d97p-53,
};

/* sin(r) and cos(r) for |r| <= 0.786, absolute errors 3u and 10u.
 *   sin: r + (r z) q(z), z = RN(r r), q = SIN_C by Horner (7 steps);
 *     term j (c_{2j+1} r^{2j+1}, j = 1..8) carries gamma_14 (Horner,
 *     Higham eq. (5.3)), (j - 1) u from z^(j-1) in q, u from z in r z,
 *     u for r z, u for the product, u for its coefficient: (17 + j) u <=
 *     25 u; the terms sum to at most sinh|r| - |r| <= 0.0835, so 2.09 u,
 *     plus the last addition u |sin r| <= 0.71 u, plus the truncation
 *     |r|^19 / 19! <= 8.5e-20 (Lagrange remainder, |sin^(19)| <= 1):
 *     2.8 u, taken as 3 u.
 *   cos: 1 + z q(z), q = COS_C by Horner (8 steps); term j (j = 1..9):
 *     gamma_16 + (j - 1) u + u (z) + u (z q) + u (coefficient) <= 27 u, on
 *     terms summing to at most cosh|r| - 1 <= 0.3252: 8.78 u; the last
 *     addition u; truncation |r|^20 / 20! <= 3.4e-21: 9.8 u, taken as
 *     10 u. */
static void sincos_red(double r, double *s, double *c)
{
    double z = r * r, p;
    int i;
    p = SIN_C[7];
    for (i = 6; i >= 0; i--)
        p = p * z + SIN_C[i];
    *s = r + (r * z) * p;
    p = COS_C[8];
    for (i = 7; i >= 0; i--)
        p = p * z + COS_C[i];
    *c = 1 + z * p;
}

/* The angle a = pos (fh + fl + d) and its reduction r = a - k pi/2:
 *   a1 = RN(pos fh), a2 = pos fh - a1 (an FMA, exact: |a1| >= 2^-900
 *   keeps the residual representable), a3 = RN(pos fl) (u |a3|), and the
 *   frequency's own error |pos| ef;
 *   k = the integer nearest RN(a1 2/pi): |k| <= 2^24 0.64 + 1 < 2^24;
 *   t = RN(a1 - k C1) (k C1 exact: 24 + 25 bits), c2 = RN(k C2), c3 =
 *   RN(k C3), then s1 = RN(a2 + a3), s2 = RN(s1 - c2), s3 = RN(s2 - c3),
 *   r = RN(t + s3): each rounding at most u times its result, and k delta.
 * So |r - (a - k pi/2)| <= er = u (|t| + |a3| + |c2| + |c3| + |s1| + |s2|
 * + |s3| + |r|) + |k| 2^-133 + |pos| ef, evaluated at run time (a running
 * error bound, Higham sec. 3.3).  |r| <= pi/4 + 2^-27 by the choice of k;
 * the polynomial needs |r| <= 0.786, checked.  sin and cos are
 * 1-Lipschitz, so sin a = +-sin r or +-cos r (exact quadrant swap) within
 * er + the polynomial's error. */
int _qf_fast_sincos_pos(double pos, double fh, double fl, double ef, double *s, double *c, double *es,
                        double *ec)
{
    double a1, a2, a3, k, t, c2, c3, s1, s2, s3, r, er, sr, cr;
    long q;
    if (!(fabs(pos) <= 0x1p53) || pos != nearbyint(pos) || !(ef >= 0))
        return 0;
    a1 = pos * fh;
    if (!(fabs(a1) <= 0x1p24) || (a1 != 0 && fabs(a1) < 0x1p-900))
        return 0;
    a2 = fma(pos, fh, -a1);
    a3 = pos * fl;
    k = nearbyint(a1 * TWO_OVER_PI);
    t = a1 - k * C1;
    c2 = k * C2;
    c3 = k * C3;
    s1 = a2 + a3;
    s2 = s1 - c2;
    s3 = s2 - c3;
    r = t + s3;
    er = U * (fabs(t) + fabs(a3) + fabs(c2) + fabs(c3) + fabs(s1) + fabs(s2) + fabs(s3) + fabs(r)) +
         fabs(k) * PIO2_DELTA + fabs(pos) * ef;
    if (!(fabs(r) <= 0.786) || !(er <= 0x1p-30))
        return 0;
    sincos_red(r, &sr, &cr);
    q = (long)k & 3; /* k mod 4 in [0, 3] (two's complement) */
    switch (q) {
    case 0: *s = sr, *c = cr; break;
    case 1: *s = cr, *c = -sr; break;
    case 2: *s = -sr, *c = -cr; break;
    default: *s = -cr, *c = sr; break;
    }
    er = 1.01 * er + TINY;
    if (q & 1) { /* the polynomials swapped */
        *es = er + 1.01 * 10 * U;
        *ec = er + 1.01 * 3 * U;
    } else {
        *es = er + 1.01 * 3 * U;
        *ec = er + 1.01 * 10 * U;
    }
    return 1;
}

/* ln 2 split as in fast.c: LN2_HI has 32 significant bits, so k LN2_HI is
 * exact for |k| < 2^21; |ln 2 - LN2_HI - LN2_LO| < 2^-80. */
static const double LN2_HI = 0x1.62e42fee00000p-1;
static const double LN2_LO = 0x1.a39ef35793c76p-33;

/* 1 / (2n + 1), n = 0..11, rounded to nearest. */
static const double ATANH_C[12] = {
    1.0,
    0x1.5555555555555p-2,
    0x1.999999999999ap-3,
    0x1.2492492492492p-3,
    0x1.c71c71c71c71cp-4,
    0x1.745d1745d1746p-4,
    0x1.3b13b13b13b14p-4,
    0x1.1111111111111p-4,
    0x1.e1e1e1e1e1e1ep-5,
    0x1.af286bca1af28p-5,
    0x1.8618618618618p-5,
    0x1.642c8590b2164p-5,
};

/* log x = k ln 2 + log m, x = 2^k m with m in [1/sqrt 2, sqrt 2) (frexp,
 * exact); log m = 2 atanh t = 2 t q(t^2), t = (m - 1) / (m + 1), q(z) =
 * sum_{n<12} z^n / (2n + 1) (A&S 4.1.27).
 *   t: m - 1 exact (Sterbenz), m + 1 and the division: 2u; |t| <= 0.1716,
 *   z = RN(t t) <= 0.02944 with 5u;
 *   q: Horner gamma_22 on positive terms (22 u relative, q >= 1), the
 *   coefficients u, z's error through z q'/q <= 0.011: 0.06 u;
 *   truncation z^12 / 25 / (1 - z) <= 1.8e-20 (0.0002 u relative);
 *   log m = RN(2 t q): 2u + 23.1u + u = 26.1 u, taken as 27 u relative.
 *   k LN2_HI exact, RN(k LN2_LO) u |k LN2_LO|, the split |k| 2^-80, the
 *   sums RN(k LN2_LO + lm) and RN(k LN2_HI + that): u each of their
 *   results. */
int _qf_fast_log(double x, _qf_fenc *r)
{
    double m, t, z, q, lm, klo, in, v;
    int k, i;
    if (!(x >= 0x1p-1000 && x <= 0x1p1000))
        return 0;
    m = frexp(x, &k);
    if (m < 0x1.6a09e667f3bcdp-1) {
        m *= 2;
        k--;
    }
    t = (m - 1) / (m + 1);
    z = t * t;
    q = ATANH_C[11];
    for (i = 10; i >= 0; i--)
        q = q * z + ATANH_C[i];
    lm = (2 * t) * q;
    klo = k * LN2_LO;
    in = klo + lm;
    v = k * LN2_HI + in;
    r->v = v;
    r->e = 1.01 * (27 * U * fabs(lm) + U * fabs(klo) + fabs((double)k) * 0x1p-80 + U * fabs(in) + U * fabs(v)) +
           TINY;
    return 1;
}

void _qf_fenc_bounds(const _qf_fenc *f, double *lo, double *hi)
{
    /* As _qf_sink_decide_fast: with e' = e + 2u|v| (rounded up by the last
     * factor) and e' <= |v|, RN(v -+ e') is within u (|v| + e') <= 2u|v|
     * of v -+ e', so past v -+ e; otherwise one step outward of the
     * rounded ends (a rounding to nearest is within half a spacing). */
    double e2 = (f->e + 0x1p-52 * fabs(f->v)) * (1 + 0x1p-50);
    if (f->e == 0) {
        *lo = *hi = f->v;
    } else if (e2 <= fabs(f->v)) {
        *lo = f->v - e2;
        *hi = f->v + e2;
    } else {
        *lo = nextafter(f->v - f->e, -INFINITY);
        *hi = nextafter(f->v + f->e, INFINITY);
    }
}

/* The logit of key kr: s = scale q.k (then softcap tanh(s / softcap)) +
 * madd, with its absolute bound in *e.
 *   dot: p_t = RN(q_t k_t), partial sums s_t = RN(s_{t'} + p_t) (four
 *     interleaved ones, then combined): each rounding at most u times its
 *     result, and the errors of a sum add up,
 *     so |dot^ - q.k| <= u (sum |p_t| + sum |s_t|) (a running bound,
 *     Higham sec. 3.3), its own sum of 2D positive terms within gamma_2D
 *     (covered by the 1 % for D < 2^40);
 *   scale: a given scale is exact; 1/sqrt(D) = RN(1 / RN(sqrt D)) (both
 *     correctly rounded IEEE operations) within 2.01 u relative;
 *     x = RN(sc dot): |sc| e_dot + |x| sc_rel + u |x|;
 *   softcap c: y = RN(x / c) (e_x / c + u |y|); tanh|y| = (1 - E) / (1 + E),
 *     E = exp(-2|y|) (_qf_fast_exp, bound e_E; 2|y| exact): 1 - E exact
 *     for E >= 1/2 (Sterbenz), else u; 1 + E and the quotient u each; the
 *     derivative of (1 - E) / (1 + E) is at most 2 in E; tanh is
 *     1-Lipschitz in y: |tanh^ - tanh y*| <= e_y + 2 e_E + 3u |tanh^|;
 *     the logit RN(c tanh^): c times that + u;
 *   mask: RN(x + madd): u |result|. */
static int logit(const double *q, const double *kr, size_t D, double sc, double sc_rel, double softcap,
                 double madd, double *x, double *e)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, e0 = 0, e1 = 0, e2 = 0, e3 = 0, s01, s23, s, ea, v, ev;
    size_t t;
    /* four interleaved partial sums (t mod 4), then (s0 + s1) + (s2 + s3):
     * still one rounding per product and per addition, each within u of
     * its result, so the running bound is the same sum over all of them */
    for (t = 0; t + 4 <= D; t += 4) {
        double p0 = q[t] * kr[t], p1 = q[t + 1] * kr[t + 1], p2 = q[t + 2] * kr[t + 2], p3 = q[t + 3] * kr[t + 3];
        s0 += p0, s1 += p1, s2 += p2, s3 += p3;
        e0 += fabs(p0) + fabs(s0), e1 += fabs(p1) + fabs(s1);
        e2 += fabs(p2) + fabs(s2), e3 += fabs(p3) + fabs(s3);
    }
    for (; t < D; t++) {
        double p = q[t] * kr[t];
        s0 += p;
        e0 += fabs(p) + fabs(s0);
    }
    s01 = s0 + s1;
    s23 = s2 + s3;
    s = s01 + s23;
    ea = ((e0 + e1) + (e2 + e3)) + (fabs(s01) + fabs(s23) + fabs(s));
    v = sc * s;
    ev = 1.01 * (fabs(sc) * U * ea + fabs(v) * sc_rel) + U * fabs(v);
    if (softcap > 0) {
        double y = v / softcap, ey = ev / softcap + U * fabs(y), th;
        _qf_fenc E;
        if (!_qf_fast_exp(-2 * fabs(y), &E))
            return 0;
        th = (1 - E.v) / (1 + E.v);
        ev = 1.01 * softcap * (ey + 2 * E.e + 3 * U * th);
        v = softcap * (y < 0 ? -th : th);
        ev += U * fabs(v);
    }
    if (madd != 0) {
        v += madd;
        ev += U * fabs(v);
    }
    *x = v;
    *e = 1.01 * ev + TINY;
    return isfinite(v) && isfinite(ea) && ev <= 0x1p-12;
}

/* The row, from the logits L_j (bounds e_j):
 *   m = max L_j; d_j = RN(L_j - m) off the real d_j* = (exact logit) - m
 *   by delta_j = e_j + u |d_j| (softmax and lse are the same for any
 *   shift m, so m's own error does not count);
 *   E_j = exp(d_j) (_qf_fast_exp), |E_j - exp(d_j*)| <= e_exp + 1.01 (E_j
 *   + e_exp) delta_j (delta_j <= 2^-12); d_j < -700: E_j = 0 within
 *   2^-1009 (such keys' values enter the outputs' bounds by max |v|);
 *   S = sum E_j left to right: sum of the bounds + gamma_n S;
 *   lse = RN(m + log S): |log S - log S*| <= 1.01 e_S / S (e_S <= 2^-20 S),
 *   _qf_fast_log's bound, u |lse|;
 *   N_e = sum_j E_j v_je, A_e = sum_j E_j |v_je| (same order): the
 *   products and sums gamma_n A_e (Higham eq. (3.5)), the E_j errors at
 *   most rho A_e + 2^-1009 sum of the underflowed keys' |v_je|, rho =
 *   max e_Ej / E_j;
 *   out_e = RN(N_e / S): (e_N + |out_e| e_S) / S enlarged by 1 %, + u. */
int _qf_fast_attn_row(const double *q, const double *k, const double *v, size_t D, size_t dv, const size_t *keep,
                      const double *madd, size_t nkeep, double scale, double softcap, double *work, _qf_fenc *out,
                      _qf_fenc *lse)
{
    double *Ej = work, *eL = work + nkeep, *N = work + 2 * nkeep, *A = N + dv;
    double sc = scale, sc_rel = 0, m = -INFINITY, S = 0, eS = 0, rho = 0, vtail = 0, g;
    size_t j, e, n = nkeep;
    _qf_fenc lf;
    if (scale == 0) {
        sc = 1 / sqrt((double)D);
        sc_rel = 2.01 * U;
    }
    for (j = 0; j < n; j++) {
        if (!logit(q, k + keep[j] * D, D, sc, sc_rel, softcap, madd[j], &Ej[j], &eL[j]))
            return 0;
        m = Ej[j] > m ? Ej[j] : m;
    }
    for (j = 0; j < n; j++) {
        double d = Ej[j] - m, delta = eL[j] + U * fabs(d);
        _qf_fenc f;
        if (d < -700) {
            const double *vr = v + keep[j] * dv;
            Ej[j] = 0;
            eL[j] = 0x1p-1009;
            for (e = 0; e < dv; e++)
                vtail += fabs(vr[e]);
        } else {
            if (!_qf_fast_exp(d, &f))
                return 0;
            Ej[j] = f.v;
            eL[j] = f.e + 1.01 * (f.v + f.e) * delta;
            rho = eL[j] / f.v > rho ? eL[j] / f.v : rho;
        }
        S += Ej[j];
        eS += eL[j];
    }
    g = (double)n * U;
    g = g / (1 - g);
    eS = 1.01 * (eS + g * S);
    if (!(S > 0) || !(eS <= 0x1p-20 * S) || !_qf_fast_log(S, &lf))
        return 0;
    lse->v = m + lf.v;
    lse->e = 1.01 * (1.01 * eS / S + lf.e + U * fabs(lse->v)) + TINY;
    for (e = 0; e < dv; e++)
        N[e] = A[e] = 0;
    for (j = 0; j < n; j++) {
        const double *vr = v + keep[j] * dv;
        double w = Ej[j];
        if (w == 0)
            continue;
        for (e = 0; e < dv; e++) {
            N[e] += w * vr[e];
            A[e] += w * fabs(vr[e]);
        }
    }
    for (e = 0; e < dv; e++) {
        double eN = 1.01 * ((rho + g) * A[e] + 0x1p-1009 * vtail), y = N[e] / S;
        if (!isfinite(A[e]))
            return 0;
        out[e].v = y;
        out[e].e = 1.01 * (1.01 * (eN + fabs(y) * eS) / S + U * fabs(y)) + TINY;
    }
    return 1;
}
