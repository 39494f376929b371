/* gemm_fast.c: the certified fast path of the exact GEMM (docs/refs.md
 * "Fast GEMM").
 *
 * 1. C64 = op(A) op(B) in binary64 by a blocked, packed kernel (6 x 8
 *    register tiles, AVX2 + FMA picked at run time, plain C otherwise),
 *    OpenMP over blocks of rows.  The order of the additions and whether
 *    they fuse do not matter: the bound below holds for any order.
 * 2. Per row i of op(A) and column j of op(B): sum of squares (binary64),
 *    the lowest set bit over the nonzero entries, finiteness.
 * 3. Per element: the bound, then either the decided code or a mark; the
 *    marked elements go to the exact engine (gemm.c), one by one.
 *
 * THE BOUND.  u = 2^-53, gamma_n = n u / (1 - n u).  For any evaluation of
 * s = sum_{l<K} a_l b_l by K products and additions (or fused
 * multiply-adds), each operation rounding to nearest with gradual
 * underflow, fl(x op y) = (x op y)(1 + d) + t, |d| <= u, |t| <= 2^-1075
 * (t = 0 for additions, which are exact in the subnormal range); every
 * term passes through at most K roundings, so (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., sec. 3.1, (3.5); sec. 2.1 for
 * underflow)
 *     |C64 - s| <= gamma_K T + K 2^-1074,   T = sum |a_l b_l|,
 * products rounded or not (float64 inputs included).  T is bounded by
 * Cauchy-Schwarz, T <= sqrt(Q_a Q_b) with Q the exact sums of squares; the
 * computed sum of squares q (positive terms, K roundings each) has
 * q >= (Q - K 2^-1074)(1 - gamma_K), so Q <= (q + K 2^-1074) / (1 - gamma_K).
 * When d_abs is asked for, the kernel also computes T64 = fl(|A||B|), and
 * T <= (T64 + K 2^-1074) / (1 - gamma_K) tightens the bound.
 *
 * THE EXACT CASE.  If every nonzero entry of row i is a multiple of 2^ea and
 * of column j of 2^eb, every product is a multiple of U = 2^(ea + eb), and
 * so is every partial sum of any subset of them.  If U >= 2^-1074 and
 * T < 2^53 U, every such partial sum (and each product) is a binary64
 * number, so every rounding was exact, in any order, FMA or not:
 * C64 = s exactly (and T64 = T).  bf16 / fp16 / FP8 / int8 inputs are
 * exact on real data (K = 2048 N(0, 1) bf16: T ~ 2^11, U ~ 2^-36).
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "_gemm.h"
#include "qf_dot.h"
#include "qf_ref.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define QF_GF_X86 1
#include <immintrin.h>
#else
#define QF_GF_X86 0
#endif

#define MR 6
#define NR 8
#define KC 256
#define MC 72 /* multiple of MR: an MC x KC panel of A is 144 KiB (L2) */
#define NC 2048 /* widest tile of C: a KC x NC panel of B is 4 MiB (L3) */

#define NO_LSB INT_MAX /* a row or column without a nonzero entry */

/* ---- The binary64 product ---------------------------------------------------- */

/* c[0..MR)[0..NR) (row stride ldc) = (first ? 0 : c) + sum over kc of the
 * packed slivers: ap holds MR values per step, bp NR. */
static void ukr_c(size_t kc, const double *ap, const double *bp, double *c, size_t ldc, int first)
{
    double t[MR][NR];
    size_t l, i, j;
    memset(t, 0, sizeof t);
    for (l = 0; l < kc; l++, ap += MR, bp += NR)
        for (i = 0; i < MR; i++)
            for (j = 0; j < NR; j++)
                t[i][j] += ap[i] * bp[j];
    for (i = 0; i < MR; i++)
        for (j = 0; j < NR; j++)
            c[i * ldc + j] = first ? t[i][j] : c[i * ldc + j] + t[i][j];
}

#if QF_GF_X86
#define QF_FMA __attribute__((target("avx2,fma")))
static QF_FMA void ukr_fma(size_t kc, const double *ap, const double *bp, double *c, size_t ldc, int first)
{
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
            c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    size_t l;
    /* the C tile (six rows far apart) is fetched while the products run */
    for (l = 0; l < MR; l++) {
        _mm_prefetch((const char *)(c + l * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + l * ldc + NR - 1), _MM_HINT_T0);
    }
    for (l = 0; l < kc; l++, ap += MR, bp += NR) {
        __m256d b0 = _mm256_loadu_pd(bp), b1 = _mm256_loadu_pd(bp + 4), a;
        a = _mm256_broadcast_sd(ap);
        c00 = _mm256_fmadd_pd(a, b0, c00);
        c01 = _mm256_fmadd_pd(a, b1, c01);
        a = _mm256_broadcast_sd(ap + 1);
        c10 = _mm256_fmadd_pd(a, b0, c10);
        c11 = _mm256_fmadd_pd(a, b1, c11);
        a = _mm256_broadcast_sd(ap + 2);
        c20 = _mm256_fmadd_pd(a, b0, c20);
        c21 = _mm256_fmadd_pd(a, b1, c21);
        a = _mm256_broadcast_sd(ap + 3);
        c30 = _mm256_fmadd_pd(a, b0, c30);
        c31 = _mm256_fmadd_pd(a, b1, c31);
        a = _mm256_broadcast_sd(ap + 4);
        c40 = _mm256_fmadd_pd(a, b0, c40);
        c41 = _mm256_fmadd_pd(a, b1, c41);
        a = _mm256_broadcast_sd(ap + 5);
        c50 = _mm256_fmadd_pd(a, b0, c50);
        c51 = _mm256_fmadd_pd(a, b1, c51);
    }
#define QF_GF_ST(R, V0, V1)                                                                                  \
    do {                                                                                                     \
        double *r_ = c + (R) * ldc;                                                                          \
        if (first) {                                                                                         \
            _mm256_storeu_pd(r_, V0);                                                                        \
            _mm256_storeu_pd(r_ + 4, V1);                                                                    \
        } else {                                                                                             \
            _mm256_storeu_pd(r_, _mm256_add_pd(_mm256_loadu_pd(r_), V0));                                    \
            _mm256_storeu_pd(r_ + 4, _mm256_add_pd(_mm256_loadu_pd(r_ + 4), V1));                            \
        }                                                                                                    \
    } while (0)
    QF_GF_ST(0, c00, c01);
    QF_GF_ST(1, c10, c11);
    QF_GF_ST(2, c20, c21);
    QF_GF_ST(3, c30, c31);
    QF_GF_ST(4, c40, c41);
    QF_GF_ST(5, c50, c51);
#undef QF_GF_ST
}
#endif

typedef void (*ukr_fn)(size_t, const double *, const double *, double *, size_t, int);

/* The FMA kernel where the dot engine uses AVX2 (qf_dot_isa: the CPU's
 * best, QF_DOT_ISA or qf_dot_set_isa) and the CPU has FMA; plain C else. */
static ukr_fn pick_ukr(void)
{
#if QF_GF_X86
    __builtin_cpu_init();
    if (!strcmp(qf_dot_isa(), "avx2") && __builtin_cpu_supports("fma"))
        return ukr_fma;
#endif
    return ukr_c;
}

/* Pack w <= width vectors of len terms as slivers: o[l*width + v] =
 * src[v*vs + l*ls], zero padded to width, absolute values on request. */
static inline __attribute__((always_inline)) void pack(const double *src, ptrdiff_t vs, ptrdiff_t ls, size_t w, size_t width, size_t len, int absval,
                 double *o)
{
    size_t l, v;
    if (w == width && vs == 1) { /* contiguous vectors of one term: copies */
        for (l = 0; l < len; l++, src += ls, o += width)
            for (v = 0; v < width; v++)
                o[v] = absval ? fabs(src[v]) : src[v];
        return;
    }
    for (l = 0; l < len; l++, src += ls, o += width) {
        for (v = 0; v < w; v++)
            o[v] = absval ? fabs(src[(ptrdiff_t)v * vs]) : src[(ptrdiff_t)v * vs];
        for (; v < width; v++)
            o[v] = 0;
    }
}

/* n vectors (entry l of vector v at src[v*vs + l*ls]), terms [0, len), as
 * slivers of `width` vectors, each len x width.  Vectors that lie along the
 * stored rows (vs == 1) are read one stored row at a time across all the
 * slivers: a sliver's own walk would jump a whole stored row per term. */
static inline __attribute__((always_inline)) void pack_panel(const double *src, ptrdiff_t vs, ptrdiff_t ls, size_t n, size_t width, size_t len,
                       int absval, double *dst)
{
    size_t s0, l, v;
    if (vs == 1 && n >= 2 * width) {
        for (l = 0; l < len; l++, src += ls)
            for (s0 = 0; s0 < n; s0 += width) {
                size_t w = n - s0 < width ? n - s0 : width;
                double *o = dst + s0 * len + l * width;
                for (v = 0; v < w; v++)
                    o[v] = absval ? fabs(src[s0 + v]) : src[s0 + v];
                for (; v < width; v++)
                    o[v] = 0;
            }
        return;
    }
    for (s0 = 0; s0 < n; s0 += width)
        pack(src + (ptrdiff_t)s0 * vs, vs, ls, n - s0 < width ? n - s0 : width, width, len, absval, dst + s0 * len);
}

/* Rows [i0, i0 + mc) of op(A), terms [l0, l0 + kc), as MR-row slivers. */
static void pack_a(const _qf_gemm_prob *p, int absval, size_t i0, size_t mc, size_t l0, size_t kc, double *dst)
{
    pack_panel(p->a + (ptrdiff_t)i0 * p->rsa + (ptrdiff_t)l0 * p->csa, p->rsa, p->csa, mc, MR, kc, absval, dst);
}

/* Columns [j0, j0 + nc) of op(B), terms [l0, l0 + kc), as NR-column slivers. */
static void pack_b(const _qf_gemm_prob *p, int absval, size_t j0, size_t nc, size_t l0, size_t kc, double *dst)
{
    pack_panel(p->b + (ptrdiff_t)l0 * p->rsb + (ptrdiff_t)j0 * p->csb, p->csb, p->rsb, nc, NR, kc, absval, dst);
}

/* C[i*ldc + j] = sum_l op(A)(i, l) op(B)(l, j) (absolute values when
 * absval), binary64, nt threads.  The threads take tiles of C (up to
 * all rows x NC columns, smaller until there are four per thread) from
 * a shared counter; each tile packs its own panels, so no thread waits for
 * another (a core taken by another process only slows its own tiles). */
static qf_status product64(const _qf_gemm_prob *p, int absval, double *C, size_t ldc, int nt)
{
    size_t mt = (p->m + MC - 1) / MC * MC, ntl = NC, ntm, ntn, kc_max = p->k < KC ? p->k : KC;
    ukr_fn ukr = pick_ukr();
    int failed = 0;
    long t;
    for (;;) {
        ntm = (p->m + mt - 1) / mt;
        ntn = (p->n + ntl - 1) / ntl;
        if (ntm * ntn >= 4 * (size_t)nt || (ntl <= 4 * NR && mt <= MC))
            break;
        /* fewer rows first (each row tile packs the B panel again), down
         * to 4 MC; then fewer columns */
        if (mt > 4 * MC)
            mt = (mt / 2 + MC - 1) / MC * MC;
        else if (ntl > 4 * NR)
            ntl /= 2;
        else
            mt = mt / 2 < MC ? MC : (mt / 2 + MC - 1) / MC * MC;
    }
    if ((size_t)nt > ntm * ntn)
        nt = (int)(ntm * ntn);
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *apk = malloc(MC * kc_max * sizeof *apk);
        double *bpk = malloc(((ntl + NR - 1) / NR) * NR * kc_max * sizeof *bpk);
        double tile[MR * NR];
        if (!apk || !bpk)
            failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (t = 0; t < (long)(ntm * ntn); t++) {
            size_t i1 = (size_t)t / ntn * mt, j1 = (size_t)t % ntn * ntl;
            size_t mlen = p->m - i1 < mt ? p->m - i1 : mt, nlen = p->n - j1 < ntl ? p->n - j1 : ntl, pc;
            if (!apk || !bpk)
                continue;
            for (pc = 0; pc < p->k; pc += KC) {
                size_t kc = p->k - pc < KC ? p->k - pc : KC, ic;
                pack_b(p, absval, j1, nlen, pc, kc, bpk);
                for (ic = 0; ic < mlen; ic += MC) {
                    size_t mc = mlen - ic < MC ? mlen - ic : MC, js, ir;
                    pack_a(p, absval, i1 + ic, mc, pc, kc, apk);
                    for (js = 0; js < nlen; js += NR) {
                        size_t nr = nlen - js < NR ? nlen - js : NR;
                        for (ir = 0; ir < mc; ir += MR) {
                            size_t mr = mc - ir < MR ? mc - ir : MR;
                            double *cp = C + (i1 + ic + ir) * ldc + j1 + js;
                            if (mr == MR && nr == NR) {
                                ukr(kc, apk + ir * kc, bpk + js * kc, cp, ldc, pc == 0);
                            } else {
                                size_t a2, b2;
                                ukr(kc, apk + ir * kc, bpk + js * kc, tile, NR, 1);
                                for (a2 = 0; a2 < mr; a2++)
                                    for (b2 = 0; b2 < nr; b2++)
                                        cp[a2 * ldc + b2] =
                                            pc == 0 ? tile[a2 * NR + b2] : cp[a2 * ldc + b2] + tile[a2 * NR + b2];
                            }
                        }
                    }
                }
            }
        }
        free(apk);
        free(bpk);
    }
    return failed ? QF_ENOMEM : QF_OK;
}

/* ---- Rows and columns ------------------------------------------------------------ */

/* Exponent of the lowest set bit of x != 0, finite. */
static int lsb_exp(double x)
{
    uint64_t u;
    int e;
    memcpy(&u, &x, sizeof u);
    e = (int)((u >> 52) & 0x7ff);
    u &= 0xfffffffffffffull;
    if (e == 0)
        return -1074 + __builtin_ctzll(u); /* subnormal, u != 0 */
    return e - 1075 + __builtin_ctzll(u | (1ull << 52));
}

typedef struct vstat {
    double q;  /* sum of squares, binary64 */
    double sq; /* sqrt of the exact sum of squares, rounded up */
    int ex;    /* sq < 2^ex (INT_MAX / 4 when sq is not finite) */
    int span;  /* ex - lsb: a quick form of the certificate */
    int lsb;   /* lowest set bit over the nonzero entries, NO_LSB if none */
    int ok;    /* every entry finite */
} vstat;

/* Statistics of nv vectors, entry l of vector v at x[v*vs + l*ls].  When
 * the vectors' own entries are far apart (a column of a row-major B), the
 * matrix is swept along its rows instead, so that each cache line is read
 * once; the sums of squares are then added in another order, which the
 * bound allows. */
static void vec_stats(const double *x, ptrdiff_t vs, ptrdiff_t ls, size_t nv, size_t k, vstat *out, int nt)
{
    long v;
    if ((ls < 0 ? -ls : ls) <= (vs < 0 ? -vs : vs) || nv < 8) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (v = 0; v < (long)nv; v++) {
            const double *p = x + v * vs;
            double q = 0;
            int lsb = NO_LSB, ok = 1;
            size_t l;
            for (l = 0; l < k; l++) {
                double e = p[(ptrdiff_t)l * ls];
                ok &= isfinite(e) != 0;
                if (e != 0 && isfinite(e)) {
                    int b = lsb_exp(e);
                    lsb = b < lsb ? b : lsb;
                    q += e * e;
                }
            }
            out[v].q = q;
            out[v].lsb = lsb;
            out[v].ok = ok;
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        size_t v0 = nv * (size_t)t / (size_t)n, v1 = nv * (size_t)(t + 1) / (size_t)n, l, u;
        for (u = v0; u < v1; u++) {
            out[u].q = 0;
            out[u].lsb = NO_LSB;
            out[u].ok = 1;
        }
        for (l = 0; l < k; l++) {
            const double *p = x + (ptrdiff_t)l * ls;
            for (u = v0; u < v1; u++) {
                double e = p[(ptrdiff_t)u * vs];
                vstat *o = &out[u];
                o->ok &= isfinite(e) != 0;
                if (e != 0 && isfinite(e)) {
                    int b = lsb_exp(e);
                    o->lsb = b < o->lsb ? b : o->lsb;
                    o->q += e * e;
                }
            }
        }
    }
}

/* ---- The decision --------------------------------------------------------------- */

int _qf_gemm_fast_usable(const qf_gemm_desc *d)
{
    return !d->exact_only && d->round != QF_ROUND_STOCHASTIC && !d->d_err && d->alpha != 0 && isfinite(d->alpha) &&
           isfinite(d->beta) && d->k > 0;
}

typedef struct ctx {
    const qf_gemm_desc *d;
    const qf_format *out;
    qf_encode_opts eo;
    int out64;     /* out is binary64: only exact elements are decided */
    int abs_exact; /* |alpha| = 1 and beta = 0: d_abs is T itself */
    double gk;     /* gamma_K, rounded up */
    double under;  /* K 2^-1074 */
    /* over the columns of op(B): all finite, the largest span and the
     * smallest lsb of those with a nonzero entry (whole-row certificates) */
    int cols_ok, cspan_max, clsb_min, cex_max;
    /* qf_format_split_codes of out: a code that numbers of both signs
     * round to (fnuz's NaN, e8m0's 0xFF) decides only an interval on one
     * side of 0 */
    int nsplit;
    uint64_t split[2];
} ctx;

/* 2^e for any int e (0 below the subnormals, Inf above the range). */
static double pow2(int e)
{
    uint64_t u;
    double r;
    if (e < -1022 || e > 1023)
        return ldexp(1.0, e < -2000 ? -2000 : e > 2000 ? 2000 : e);
    u = (uint64_t)(e + 1023) << 52;
    memcpy(&r, &u, sizeof r);
    return r;
}

enum { SLOW = 0, KNOWN, IVAL }; /* how an element is decided */

/* Element (i, j) of the row: s = C64, t64 = fl(|A||B|) (< 0: not
 * computed).  KNOWN: *v is the exact result; IVAL: [*v, *hi] holds it;
 * SLOW: the exact engine's. */
static int bound(const ctx *x, const _qf_gemm_prob *p, size_t i, size_t j, const vstat *ra, const vstat *cb,
                 double s, double t64, double *v, double *hi)
{
    const qf_gemm_desc *d = x->d;
    double T, e0, e, c = d->beta != 0 ? p->c[(ptrdiff_t)i * p->rsc + (ptrdiff_t)j * p->csc] : 0;
    int exact_sum;

    if (!ra->ok || !cb->ok || !isfinite(s) || !isfinite(c))
        return SLOW;
    if (ra->lsb == NO_LSB || cb->lsb == NO_LSB) {
        exact_sum = 1; /* every product is 0 */
        s = 0;
    } else {
        /* T <= sqrt(Qa) sqrt(Qb) (ra->sq, cb->sq, rounded up); the factor
         * covers the product's rounding, the last term its underflow */
        T = ra->sq * cb->sq * (1 + 0x1p-50) + 0x1p-1070;
        if (t64 >= 0) {
            double t2 = (t64 + x->under) * (1 + 2 * x->gk) * (1 + 0x1p-50);
            T = t2 < T ? t2 : T;
        }
        /* span_a + span_b <= 52: T <= sq_a sq_b < 2^(ex_a + ex_b) <=
         * 2^(52 + lsb_a + lsb_b), and ex_a + ex_b <= 1023 keeps every
         * partial sum finite */
        exact_sum = ra->lsb + cb->lsb >= -1074 && isfinite(T) &&
                    ((ra->span + cb->span <= 52 && ra->ex + cb->ex <= 1023) || T < pow2(53 + ra->lsb + cb->lsb));
    }
    if (d->d_abs && !(exact_sum && x->abs_exact && t64 >= 0))
        return SLOW; /* d_abs needs the exact magnitude */
    if (d->alpha == 1 && d->beta == 0) {
        if (exact_sum) {
            /* the exact engine's zero: +0, -0 when rounding down */
            *v = s != 0 ? s : d->round == QF_ROUND_DOWN ? -0.0 : 0.0;
            return KNOWN;
        }
        *v = s;
        e = (x->gk * T + x->under) * (1 + 0x1p-50);
    } else {
        /* t1 = alpha s, t2 = beta c, v = t1 + t2: each rounding within u of
         * its result, plus 2^-1075 for each product that underflows */
        double t1 = d->alpha * s, t2 = d->beta * c;
        e0 = exact_sum ? 0 : (x->gk * T + x->under) * (1 + 0x1p-50);
        *v = t1 + t2;
        e = (fabs(d->alpha) * e0 + 0x1p-53 * (fabs(t1) + fabs(t2) + fabs(*v)) + 0x1p-1073) * (1 + 0x1p-48);
    }
    if (x->out64 || !isfinite(*v) || !isfinite(e) || fabs(*v) < 0x1p-1000)
        return SLOW; /* binary64 cannot decide itself; relative models need the normal range */
    {
        /* the ends rounded outward (as refs/ref_core.c does) */
        double m = *v, e2 = (e + 0x1p-52 * fabs(m)) * (1 + 0x1p-50);
        if (e2 <= fabs(m)) {
            *v = m - e2;
            *hi = m + e2;
        } else {
            *v = nextafter(m - e, -INFINITY);
            *hi = nextafter(m + e, INFINITY);
        }
    }
    return IVAL;
}

/* Codes of the storage width of f (qf_format_encode_array) as uint64. */
static uint64_t code_at(const qf_format *f, const void *codes, size_t j)
{
    switch (f->storage_bits) {
    case 8: return ((const uint8_t *)codes)[j];
    case 16: return ((const uint16_t *)codes)[j];
    case 32: return ((const uint32_t *)codes)[j];
    default: return ((const uint64_t *)codes)[j];
    }
}

/* Row i: decide what can be decided, mark the rest.  w: 3 n doubles of
 * scratch, kind n bytes, c1 and c2 n codes each. */
static void decide_row(const ctx *x, const _qf_gemm_prob *p, size_t i, const vstat *ra, const vstat *cb,
                       const double *C, const double *T, double *w, unsigned char *kind, uint64_t *c1,
                       uint64_t *c2, unsigned char *mark)
{
    const qf_gemm_desc *d = x->d;
    double *lo = w, *hi = w + p->n;
    size_t j, niv = 0;
    int row = d->alpha == 1 && d->beta == 0 && !d->d_abs && ra->ok && x->cols_ok &&
              (ra->lsb == NO_LSB || x->clsb_min == NO_LSB ||
               (ra->lsb + x->clsb_min >= -1074 && ra->span + x->cspan_max <= 52 && ra->ex + x->cex_max <= 1023));
    if (row) {
        /* the certificate of bound() holds for every column at once: the
         * row is its exact sums (finite: checked again, cheaply) */
        double z = d->round == QF_ROUND_DOWN ? -0.0 : 0.0;
        for (j = 0; j < p->n; j++) {
            lo[j] = C[j] != 0 ? C[j] : z;
            kind[j] = KNOWN;
            row &= isfinite(C[j]) != 0;
        }
    }
    if (!row) {
        for (j = 0; j < p->n; j++) {
            kind[j] = (unsigned char)bound(x, p, i, j, ra, &cb[j], C[j], T ? T[j] : -1, &lo[j], &hi[j]);
            if (kind[j] == SLOW)
                lo[j] = 0;
            niv += kind[j] == IVAL;
        }
    }
    /* one array call per row: the vectorized encoder for RNE */
    qf_format_encode_array(x->out, lo, p->n, c1, &x->eo);
    if (niv) {
        for (j = 0; j < p->n; j++)
            if (kind[j] != IVAL)
                hi[j] = 0;
        qf_format_encode_array(x->out, hi, p->n, c2, &x->eo);
    }
    for (j = 0; j < p->n; j++) {
        ptrdiff_t o = p->off_d + (ptrdiff_t)i * p->rsd + (ptrdiff_t)j * p->csd;
        uint64_t code;
        double val = 0;
        int st;
        if (kind[j] == SLOW) {
            mark[j] = 1;
            continue;
        }
        code = code_at(x->out, c1, j);
        if (kind[j] == KNOWN) {
            if (d->d_value || d->d_status)
                val = qf_format_decode(x->out, code);
            st = val == lo[j] ? QF_REF_EXACT : QF_REF_ROUNDED;
        } else {
            /* every number of [lo, hi] rounds to one code, and no value of
             * out lies inside (it might be the exact result: status exact).
             * Equal codes at the ends say so unless the code is split and
             * the ends lie on both sides of 0: -overflow and +overflow both
             * give fnuz's NaN, and the numbers between them do not. */
            if (code != code_at(x->out, c2, j) ||
                (x->nsplit && (lo[j] > 0) != (hi[j] > 0) && (code == x->split[0] || code == x->split[1]))) {
                mark[j] = 1;
                continue;
            }
            val = qf_format_decode(x->out, code);
            if (val >= lo[j] && val <= hi[j]) {
                mark[j] = 1;
                continue;
            }
            st = QF_REF_ROUNDED;
        }
        if (d->d_code)
            d->d_code[o] = code;
        if (d->d_value)
            d->d_value[o] = val;
        if (d->d_status)
            d->d_status[o] = (uint8_t)st;
        if (d->d_abs)
            d->d_abs[o] = T[j]; /* exact: |alpha| = 1, beta = 0, T64 = T (bound) */
    }
}

/* Rows [0, p->m) of one problem (a slab of a larger one). */
static qf_status fast_slab(const qf_gemm_desc *d, const _qf_gemm_prob *p, size_t *n_exact)
{
    int nt = d->threads > 0 ? d->threads : omp_get_max_threads(), failed = 0;
    size_t mn = p->m * p->n, nslow = 0, q;
    /* The products straight into the caller's binary64 outputs when they
     * are dense rows of n (and no C operand shares them): decide_row reads
     * each element's products before it writes its result there, and the
     * exact engine writes every element left to it, so no m x n arrays of
     * the slab's own (docs/runner.md "Memory": 16 bytes an element). */
    int dense = d->beta == 0 && p->csd == 1 && p->rsd == (ptrdiff_t)p->n;
    double *C0 = dense && d->d_value ? d->d_value + p->off_d : NULL;
    double *T0 = dense && d->d_abs ? d->d_abs + p->off_d : NULL;
    double *C = C0 ? C0 : malloc((mn ? mn : 1) * sizeof *C), *T = NULL;
    vstat *ra = malloc((p->m + p->n) * sizeof *ra), *cb = ra + p->m;
    size_t *slow = NULL;
    unsigned char *mark = calloc(mn ? mn : 1, 1);
    qf_status st;
    ctx x;
    long r;

    if (mn == 0) { /* an empty group */
        if (C != C0)
            free(C);
        free(ra);
        free(mark);
        return QF_OK;
    }
    x.d = d;
    x.out = d->out ? d->out : qf_format_get(QF_FLOAT64);
    x.out64 = x.out->id == QF_FLOAT64;
    x.abs_exact = fabs(d->alpha) == 1 && d->beta == 0;
    x.eo = qf_encode_opts_default();
    x.eo.round = d->round;
    x.eo.saturate = d->saturate;
    x.nsplit = qf_format_split_codes(x.out, d->round, d->saturate, x.split);
    {
        double ku = (double)p->k * 0x1p-53;
        x.gk = ku < 0.25 ? ku / (1 - ku) * (1 + 0x1p-50) : INFINITY;
        x.under = (double)p->k * 0x1p-1074;
    }
    if (!C || !ra || !mark) {
        st = QF_ENOMEM;
        goto done;
    }
    st = product64(p, 0, C, p->n, nt);
    if (st == QF_OK && d->d_abs) {
        if (!(T = T0 ? T0 : malloc(mn * sizeof *T)))
            st = QF_ENOMEM;
        else
            st = product64(p, 1, T, p->n, nt);
    }
    if (st != QF_OK)
        goto done;
    vec_stats(p->a, p->rsa, p->csa, p->m, p->k, ra, nt);
    vec_stats(p->b, p->csb, p->rsb, p->n, p->k, cb, nt);
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *w = malloc(p->n * (2 * sizeof(double) + 2 * sizeof(uint64_t) + 1));
        uint64_t *c1 = (uint64_t *)(w + 2 * p->n), *c2 = c1 + p->n;
        unsigned char *kind = (unsigned char *)(c2 + p->n);
        if (!w)
            failed = 1;
#pragma omp for schedule(static)
        for (r = 0; r < (long)(p->m + p->n); r++) {
            /* Q <= (q + K 2^-1074)(1 + 2 gamma_K); sqrt and the products
             * round within u each, covered by the last factor */
            int ex;
            ra[r].sq = sqrt((ra[r].q + x.under) * (1 + 2 * x.gk)) * (1 + 0x1p-50);
            if (isfinite(ra[r].sq))
                (void)frexp(ra[r].sq, &ex);
            else
                ex = INT_MAX / 4;
            ra[r].ex = ex;
            ra[r].span = ra[r].lsb == NO_LSB || ex == INT_MAX / 4 ? INT_MAX / 4 : ex - ra[r].lsb;
        }
#pragma omp single
        {
            size_t j;
            x.cols_ok = 1;
            x.cspan_max = INT_MIN;
            x.clsb_min = NO_LSB;
            x.cex_max = INT_MIN;
            for (j = 0; j < p->n; j++) {
                x.cols_ok &= cb[j].ok;
                if (cb[j].lsb != NO_LSB) {
                    x.cex_max = cb[j].ex > x.cex_max ? cb[j].ex : x.cex_max;
                    x.cspan_max = cb[j].span > x.cspan_max ? cb[j].span : x.cspan_max;
                    x.clsb_min = cb[j].lsb < x.clsb_min ? cb[j].lsb : x.clsb_min;
                }
            }
        }
#pragma omp for schedule(dynamic, 16)
        for (r = 0; r < (long)p->m; r++)
            if (w)
                decide_row(&x, p, (size_t)r, &ra[r], cb, C + (size_t)r * p->n, T ? T + (size_t)r * p->n : NULL, w,
                           kind, c1, c2, mark + (size_t)r * p->n);
        free(w);
    }
    if (failed) {
        st = QF_ENOMEM;
        goto done;
    }
    for (q = 0; q < mn; q++)
        nslow += mark[q];
    *n_exact += nslow;
    if (nslow) {
        size_t t = 0;
        if (!(slow = malloc(nslow * sizeof *slow))) {
            st = QF_ENOMEM;
            goto done;
        }
        for (q = 0; q < mn; q++)
            if (mark[q])
                slow[t++] = q;
#pragma omp parallel num_threads(nt) reduction(| : failed)
        {
            qf_dot_acc *acc = malloc(2 * sizeof *acc);
            long e;
            if (!acc)
                failed = 1;
            else {
                qf_dot_acc_init(&acc[0]);
                qf_dot_acc_init(&acc[1]);
            }
#pragma omp for schedule(dynamic, 16)
            for (e = 0; e < (long)nslow; e++)
                if (acc)
                    _qf_gemm_exact_element(d, p, slow[e] / p->n, slow[e] % p->n, &acc[0], &acc[1]);
            free(acc);
        }
        if (failed)
            st = QF_ENOMEM;
    }
done:
    if (C != C0)
        free(C);
    if (T != T0)
        free(T);
    free(ra);
    free(mark);
    free(slow);
    return st;
}

/* The binary64 product of a slab of rows is held whole (and |A||B| when
 * d_abs is asked for): slabs of at most 2^25 doubles (256 MiB; the
 * debugging knob QF_GEMM_SLAB sets another count) bound the memory of a
 * large problem; the column statistics are taken per slab. */
qf_status _qf_gemm_fast(const qf_gemm_desc *d, const _qf_gemm_prob *p, size_t *n_exact)
{
    const char *env = getenv("QF_GEMM_SLAB");
    size_t limit = env && *env ? (size_t)strtoull(env, NULL, 0) : (size_t)1 << 25;
    size_t rows = limit / p->n, i0;
    qf_status st = QF_OK;
    if (rows < 1)
        rows = 1;
    for (i0 = 0; i0 < p->m && st == QF_OK; i0 += rows) {
        _qf_gemm_prob q = *p;
        q.m = p->m - i0 < rows ? p->m - i0 : rows;
        q.a = p->a + (ptrdiff_t)i0 * p->rsa;
        if (p->c)
            q.c = p->c + (ptrdiff_t)i0 * p->rsc;
        q.off_d = p->off_d + (ptrdiff_t)i0 * p->rsd;
        q.lin0 = p->lin0 + (uint64_t)i0 * p->n;
        st = fast_slab(d, &q, n_exact);
    }
    return st;
}
