/* dot_fast.c: the fast path of the exact dot product (qf_dot_acc_add_dot).
 *
 * Terms go in blocks of up to QF_DOT_BLOCK.  A block kernel multiplies and sums
 * in binary64 and records what it needs to PROVE afterwards that nothing
 * was rounded; a block without that proof is redone term by term with
 * exact integer products (qf_dot_acc_add_product).  So the result is exact
 * for any input, and the kernels only decide how fast.
 *
 * The proof, for a block of n <= 2^lb terms (x_l, y_l), from
 *   ka, kb   the most significant bits any x (y) has: 53 - ctz of the OR of
 *            their fraction fields (with the hidden bit),
 *   ex, ey   the exponents of the smallest nonzero |x|, |y| (normal),
 *   a        sum |x_l y_l| computed in binary64, lane by lane beside the
 *            signed sum:
 * every x is a multiple of 2^(ex - ka + 1) and every y of 2^(ey - kb + 1),
 * so every exact product is a multiple of 2^L, L = ex + ey - ka - kb + 2,
 * with at most ka + kb bits.  ka + kb <= 53 and L >= -1074 make every
 * product representable, hence computed exactly.
 *  - One level: if a < 2^(53 + L), no partial sum of |p| was rounded (a
 *    rounded one would be >= 2^(53 + L), and so would every later one), and
 *    each signed partial sum, at most the abs partial sum of the same terms
 *    in the same lane, is a multiple of 2^L below 2^(53 + L): representable,
 *    hence exact.  a itself is then the exact magnitude sum.
 *  - Two levels (Rump, Ogita, Oishi, "Accurate floating-point summation
 *    part I", SIAM J. Sci. Comput. 31(1), 2008, ExtractScalar): with
 *    sigma = 2^ks >= |p|, q = fl(fl(sigma + p) - sigma) is exact, a
 *    multiple of 2^(ks-53), and r = p - q is exact with |r| <= 2^(ks-53).
 *    ks >= e(a) + 2 keeps sum |p| (a is within a relative 2^-41 of it) below
 *    2^(ks-1), so |p| <= sigma and the q partial sums stay below 2^ks,
 *    multiples of 2^(ks-53): exact.  The r sum (multiples of 2^min(L, ks-53),
 *    below n 2^(ks-53)) is exact when L >= ks - 53 or lb + ks - 53 <= 53 + L.
 *    sigma is chosen before the block from the previous block's a (the
 *    first block: one pass of sum |p|), one binade higher; a block that
 *    outgrows it is redone once with its own.
 * Any NaN or Inf makes a block sum non-finite, which fails the proof.
 * The smallest nonzero |x| is found without a compare-and-select: as
 * integers, bits(|x|) - 1 maps 0 to all ones, a NaN that MINPD ignores.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QF_DOT_X86 1
#else
#define QF_DOT_X86 0
#endif

#define MANT_MASK 0xFFFFFFFFFFFFFull
#define ABS_MASK  0x7FFFFFFFFFFFFFFFull
#define INF_BITS  0x7FF0000000000000ull

/* What a block kernel returns. */
typedef struct blk {
    double s1, s2;     /* level sums (s2 = 0 for one level) */
    double asum;       /* sum |p| in binary64 (exact in a proven one-level block) */
    double e1, e2;     /* two levels, when asked: sum |p| by levels, exactly */
    double mnx, mny;   /* smallest bits(|x|) - 1 as a double (INF: none) */
    uint64_t orx, ory; /* OR of the bit patterns of |x|, |y| */
} blk;

static inline uint64_t d2u(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double u2d(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- Scalar kernels (any target; also the tails of the vector ones) -------- */

static inline __attribute__((always_inline)) void scalar_terms(const double *x, const double *y, size_t i,
                                                               size_t n, double sigma, int two, int want_abs,
                                                               blk *b)
{
    for (; i < n; i++) {
        double p = x[i] * y[i], ap = fabs(p);
        uint64_t ax = d2u(x[i]) & ABS_MASK, ay = d2u(y[i]) & ABS_MASK;
        double tx = u2d(ax - 1), ty = u2d(ay - 1);
        if (two) {
            double q = (sigma + p) - sigma;
            b->s1 += q;
            b->s2 += p - q;
            if (want_abs) {
                double qa = (sigma + ap) - sigma;
                b->e1 += qa;
                b->e2 += ap - qa;
            }
        } else {
            b->s1 += p;
        }
        b->asum += ap;
        b->mnx = tx < b->mnx ? tx : b->mnx; /* false for NaN: ignored, as MINPD does */
        b->mny = ty < b->mny ? ty : b->mny;
        b->orx |= ax;
        b->ory |= ay;
    }
}

static void blk_init(blk *b)
{
    b->s1 = b->s2 = b->asum = b->e1 = b->e2 = 0;
    b->mnx = b->mny = INFINITY;
    b->orx = b->ory = 0;
}

static void k_scalar(const double *x, const double *y, size_t n, double sigma, int two, int want_abs, blk *b)
{
    blk_init(b);
    if (two)
        want_abs ? scalar_terms(x, y, 0, n, sigma, 1, 1, b) : scalar_terms(x, y, 0, n, sigma, 1, 0, b);
    else
        scalar_terms(x, y, 0, n, sigma, 0, 0, b);
}

static double kabs_scalar(const double *x, const double *y, size_t n)
{
    double a = 0;
    size_t i;
    for (i = 0; i < n; i++)
        a += fabs(x[i] * y[i]);
    return a;
}

/* The smallest nonzero |x y| as bits - 1 (INF: none), for a second look
 * at a block the one-level proof refused (products known exact). */
static double kpmin_scalar(const double *x, const double *y, size_t n)
{
    double m = INFINITY;
    size_t i;
    for (i = 0; i < n; i++) {
        double t = u2d((d2u(x[i] * y[i]) & ABS_MASK) - 1);
        m = t < m ? t : m;
    }
    return m;
}

#if QF_DOT_X86
/* ---- SSE2 (every x86-64) --------------------------------------------------- */

#define SSE2_STEP(XV, YV, S, R, A, G, C)                                                                     \
    do {                                                                                                     \
        __m128d xv_ = (XV), yv_ = (YV), p_ = _mm_mul_pd(xv_, yv_), ap_ = _mm_and_pd(p_, absm);               \
        __m128i ax_ = _mm_castpd_si128(_mm_and_pd(xv_, absm));                                               \
        __m128i ay_ = _mm_castpd_si128(_mm_and_pd(yv_, absm));                                               \
        if (two) {                                                                                           \
            __m128d q_ = _mm_sub_pd(_mm_add_pd(sg, p_), sg);                                                 \
            S = _mm_add_pd(S, q_);                                                                           \
            R = _mm_add_pd(R, _mm_sub_pd(p_, q_));                                                           \
            if (want_abs) {                                                                                  \
                __m128d g_ = _mm_sub_pd(_mm_add_pd(sg, ap_), sg);                                            \
                G = _mm_add_pd(G, g_);                                                                       \
                C = _mm_add_pd(C, _mm_sub_pd(ap_, g_));                                                      \
            }                                                                                                \
        } else {                                                                                             \
            S = _mm_add_pd(S, p_);                                                                           \
        }                                                                                                    \
        /* the abs sums follow the signed sums lane by lane: the proof                                       \
         * bounds every signed partial sum by the abs partial sum beside it */                               \
        A = _mm_add_pd(A, ap_);                                                                              \
        ox = _mm_or_si128(ox, ax_);                                                                          \
        oy = _mm_or_si128(oy, ay_);                                                                          \
        /* MINPD returns its second operand when either is NaN */                                            \
        mnx = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(ax_, one)), mnx);                                    \
        mny = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(ay_, one)), mny);                                    \
    } while (0)

static inline __attribute__((always_inline)) void sse2_body(const double *x, const double *y, size_t n,
                                                            double sigma, int two, int want_abs, blk *b)
{
    const __m128d absm = _mm_castsi128_pd(_mm_set1_epi64x((long long)ABS_MASK));
    const __m128i one = _mm_set1_epi64x(1);
    const __m128d sg = _mm_set1_pd(sigma);
    __m128d s0 = _mm_setzero_pd(), s1 = s0, r0 = s0, r1 = s0, a0 = s0, a1 = s0;
    __m128d g0 = s0, g1 = s0, c0 = s0, c1 = s0, mnx = _mm_set1_pd(INFINITY), mny = mnx;
    __m128i ox = _mm_setzero_si128(), oy = ox;
    double t[2];
    uint64_t u[2];
    size_t i;

    for (i = 0; i + 4 <= n; i += 4) {
        SSE2_STEP(_mm_loadu_pd(x + i), _mm_loadu_pd(y + i), s0, r0, a0, g0, c0);
        SSE2_STEP(_mm_loadu_pd(x + i + 2), _mm_loadu_pd(y + i + 2), s1, r1, a1, g1, c1);
    }
    _mm_storeu_pd(t, _mm_add_pd(s0, s1));
    b->s1 = t[0] + t[1];
    _mm_storeu_pd(t, _mm_add_pd(a0, a1));
    b->asum = t[0] + t[1];
    if (two) {
        _mm_storeu_pd(t, _mm_add_pd(r0, r1));
        b->s2 = t[0] + t[1];
        if (want_abs) {
            _mm_storeu_pd(t, _mm_add_pd(g0, g1));
            b->e1 = t[0] + t[1];
            _mm_storeu_pd(t, _mm_add_pd(c0, c1));
            b->e2 = t[0] + t[1];
        }
    }
    _mm_storeu_pd(t, mnx);
    b->mnx = t[0] < t[1] ? t[0] : t[1];
    _mm_storeu_pd(t, mny);
    b->mny = t[0] < t[1] ? t[0] : t[1];
    _mm_storeu_si128((__m128i *)u, ox);
    b->orx = u[0] | u[1];
    _mm_storeu_si128((__m128i *)u, oy);
    b->ory = u[0] | u[1];
    scalar_terms(x, y, i, n, sigma, two, want_abs, b);
}

static void k_sse2(const double *x, const double *y, size_t n, double sigma, int two, int want_abs, blk *b)
{
    blk_init(b);
    if (two)
        want_abs ? sse2_body(x, y, n, sigma, 1, 1, b) : sse2_body(x, y, n, sigma, 1, 0, b);
    else
        sse2_body(x, y, n, sigma, 0, 0, b);
}

static double kabs_sse2(const double *x, const double *y, size_t n)
{
    const __m128d absm = _mm_castsi128_pd(_mm_set1_epi64x((long long)ABS_MASK));
    __m128d m0 = _mm_setzero_pd(), m1 = m0;
    double t[2], a;
    size_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        m0 = _mm_add_pd(_mm_and_pd(_mm_mul_pd(_mm_loadu_pd(x + i), _mm_loadu_pd(y + i)), absm), m0);
        m1 = _mm_add_pd(_mm_and_pd(_mm_mul_pd(_mm_loadu_pd(x + i + 2), _mm_loadu_pd(y + i + 2)), absm), m1);
    }
    _mm_storeu_pd(t, _mm_add_pd(m0, m1));
    a = t[0] + t[1];
    for (; i < n; i++)
        a += fabs(x[i] * y[i]);
    return a;
}

static double kpmin_sse2(const double *x, const double *y, size_t n)
{
    const __m128d absm = _mm_castsi128_pd(_mm_set1_epi64x((long long)ABS_MASK));
    const __m128i one = _mm_set1_epi64x(1);
    __m128d m0 = _mm_set1_pd(INFINITY), m1 = m0;
    double t[2], m;
    size_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        __m128i pa = _mm_castpd_si128(_mm_and_pd(_mm_mul_pd(_mm_loadu_pd(x + i), _mm_loadu_pd(y + i)), absm));
        __m128i pb =
            _mm_castpd_si128(_mm_and_pd(_mm_mul_pd(_mm_loadu_pd(x + i + 2), _mm_loadu_pd(y + i + 2)), absm));
        m0 = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(pa, one)), m0);
        m1 = _mm_min_pd(_mm_castsi128_pd(_mm_sub_epi64(pb, one)), m1);
    }
    _mm_storeu_pd(t, _mm_min_pd(m0, m1));
    m = t[0] < t[1] ? t[0] : t[1];
    for (; i < n; i++) {
        double v = u2d((d2u(x[i] * y[i]) & ABS_MASK) - 1);
        m = v < m ? v : m;
    }
    return m;
}

/* ---- AVX2 (picked at run time; the build stays generic x86-64) -------------- */

#define QF_AVX2 __attribute__((target("avx2")))

static inline __attribute__((always_inline)) QF_AVX2 double hsum256(__m256d v)
{
    double t[4];
    _mm256_storeu_pd(t, v);
    return (t[0] + t[1]) + (t[2] + t[3]);
}

static inline __attribute__((always_inline)) QF_AVX2 double hmin256(__m256d v)
{
    double t[4], m;
    int j;
    _mm256_storeu_pd(t, v);
    m = t[0];
    for (j = 1; j < 4; j++)
        m = t[j] < m ? t[j] : m;
    return m;
}

static inline __attribute__((always_inline)) QF_AVX2 uint64_t hor256(__m256i v)
{
    uint64_t u[4];
    _mm256_storeu_si256((__m256i *)u, v);
    return u[0] | u[1] | u[2] | u[3];
}

/* One vector of four terms; kept small so that the live vectors fit the
 * sixteen registers (two of these per loop iteration). */
#define AVX2_STEP(XV, YV, S, R, A, G, C)                                                                     \
    do {                                                                                                     \
        __m256d xv_ = (XV), yv_ = (YV), p_ = _mm256_mul_pd(xv_, yv_), ap_ = _mm256_and_pd(p_, absm);         \
        __m256i ax_ = _mm256_castpd_si256(_mm256_and_pd(xv_, absm));                                         \
        __m256i ay_ = _mm256_castpd_si256(_mm256_and_pd(yv_, absm));                                         \
        if (two) {                                                                                           \
            __m256d q_ = _mm256_sub_pd(_mm256_add_pd(sg, p_), sg);                                           \
            S = _mm256_add_pd(S, q_);                                                                        \
            R = _mm256_add_pd(R, _mm256_sub_pd(p_, q_));                                                     \
            if (want_abs) {                                                                                  \
                __m256d g_ = _mm256_sub_pd(_mm256_add_pd(sg, ap_), sg);                                      \
                G = _mm256_add_pd(G, g_);                                                                    \
                C = _mm256_add_pd(C, _mm256_sub_pd(ap_, g_));                                                \
            }                                                                                                \
        } else {                                                                                             \
            S = _mm256_add_pd(S, p_);                                                                        \
        }                                                                                                    \
        A = _mm256_add_pd(A, ap_);                                                                           \
        ox = _mm256_or_si256(ox, ax_);                                                                       \
        oy = _mm256_or_si256(oy, ay_);                                                                       \
        mnx = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(ax_, one)), mnx);                           \
        mny = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(ay_, one)), mny);                           \
    } while (0)

static inline __attribute__((always_inline)) QF_AVX2 void
avx2_body(const double *x, const double *y, size_t n, double sigma, int two, int want_abs, blk *b)
{
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)ABS_MASK));
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256d sg = _mm256_set1_pd(sigma);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, r0 = s0, r1 = s0, a0 = s0, a1 = s0;
    __m256d g0 = s0, g1 = s0, c0 = s0, c1 = s0, mnx = _mm256_set1_pd(INFINITY), mny = mnx;
    __m256i ox = _mm256_setzero_si256(), oy = ox;
    size_t i;

    for (i = 0; i + 8 <= n; i += 8) {
        AVX2_STEP(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i), s0, r0, a0, g0, c0);
        AVX2_STEP(_mm256_loadu_pd(x + i + 4), _mm256_loadu_pd(y + i + 4), s1, r1, a1, g1, c1);
    }
    b->s1 = hsum256(_mm256_add_pd(s0, s1));
    b->asum = hsum256(_mm256_add_pd(a0, a1));
    if (two) {
        b->s2 = hsum256(_mm256_add_pd(r0, r1));
        if (want_abs) {
            b->e1 = hsum256(_mm256_add_pd(g0, g1));
            b->e2 = hsum256(_mm256_add_pd(c0, c1));
        }
    }
    b->mnx = hmin256(mnx);
    b->mny = hmin256(mny);
    b->orx = hor256(ox);
    b->ory = hor256(oy);
    scalar_terms(x, y, i, n, sigma, two, want_abs, b);
}

static QF_AVX2 void k_avx2(const double *x, const double *y, size_t n, double sigma, int two, int want_abs,
                           blk *b)
{
    blk_init(b);
    if (two)
        want_abs ? avx2_body(x, y, n, sigma, 1, 1, b) : avx2_body(x, y, n, sigma, 1, 0, b);
    else
        avx2_body(x, y, n, sigma, 0, 0, b);
}

static QF_AVX2 double kabs_avx2(const double *x, const double *y, size_t n)
{
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)ABS_MASK));
    __m256d m0 = _mm256_setzero_pd(), m1 = m0;
    double a;
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        m0 = _mm256_add_pd(_mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i)), absm),
                           m0);
        m1 = _mm256_add_pd(
            _mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + i + 4), _mm256_loadu_pd(y + i + 4)), absm), m1);
    }
    a = hsum256(_mm256_add_pd(m0, m1));
    for (; i < n; i++)
        a += fabs(x[i] * y[i]);
    return a;
}
static QF_AVX2 double kpmin_avx2(const double *x, const double *y, size_t n)
{
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)ABS_MASK));
    const __m256i one = _mm256_set1_epi64x(1);
    __m256d m0 = _mm256_set1_pd(INFINITY), m1 = m0;
    double m;
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        __m256i pa = _mm256_castpd_si256(
            _mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i)), absm));
        __m256i pb = _mm256_castpd_si256(
            _mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + i + 4), _mm256_loadu_pd(y + i + 4)), absm));
        m0 = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(pa, one)), m0);
        m1 = _mm256_min_pd(_mm256_castsi256_pd(_mm256_sub_epi64(pb, one)), m1);
    }
    m = hmin256(_mm256_min_pd(m0, m1));
    for (; i < n; i++) {
        double v = u2d((d2u(x[i] * y[i]) & ABS_MASK) - 1);
        m = v < m ? v : m;
    }
    return m;
}
#endif /* QF_DOT_X86 */

/* ---- Kernel selection (BLIS-style: once, env override, debug log) ------------ */

typedef void (*kernel_fn)(const double *, const double *, size_t, double, int, int, blk *);
typedef double (*kabs_fn)(const double *, const double *, size_t);
typedef double (*kpmin_fn)(const double *, const double *, size_t);

enum { ISA_SCALAR = 0, ISA_SSE2, ISA_AVX2, ISA_COUNT };
static const char *const isa_names[ISA_COUNT] = {"scalar", "sse2", "avx2"};
static const kernel_fn kernels[ISA_COUNT] = {k_scalar,
#if QF_DOT_X86
                                             k_sse2, k_avx2
#else
                                              NULL, NULL
#endif
};
static const kabs_fn kabses[ISA_COUNT] = {kabs_scalar,
#if QF_DOT_X86
                                          kabs_sse2, kabs_avx2
#else
                                           NULL, NULL
#endif
};

static const kpmin_fn kpmins[ISA_COUNT] = {kpmin_scalar,
#if QF_DOT_X86
                                           kpmin_sse2, kpmin_avx2
#else
                                            NULL, NULL
#endif
};

static atomic_int g_isa = -1;

static int isa_available(int isa)
{
#if QF_DOT_X86
    __builtin_cpu_init();
    if (isa == ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    return 1;
#else
    return isa == ISA_SCALAR;
#endif
}

static int isa_best(void)
{
    int i;
    for (i = ISA_COUNT - 1; i > 0; i--)
        if (isa_available(i))
            return i;
    return ISA_SCALAR;
}

static int isa_current(void)
{
    int isa = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (isa < 0) {
        const char *env = getenv("QF_DOT_ISA"), *dbg = getenv("QF_DOT_DEBUG");
        int i, from_env = 0;
        isa = isa_best();
        if (env && *env) {
            for (i = 0; i < ISA_COUNT; i++)
                if (strcmp(env, isa_names[i]) == 0 && isa_available(i)) {
                    isa = i;
                    from_env = 1;
                }
            if (!from_env && dbg && *dbg && *dbg != '0')
                fprintf(stderr, "qualify dot: QF_DOT_ISA=%s is unknown or unsupported here\n", env);
        }
        if (dbg && *dbg && *dbg != '0')
            fprintf(stderr, "qualify dot: block kernels %s (%s)\n", isa_names[isa],
                    from_env ? "QF_DOT_ISA" : "best for this CPU");
        atomic_store_explicit(&g_isa, isa, memory_order_relaxed);
    }
    return isa;
}

const char *qf_dot_isa(void)
{
    return isa_names[isa_current()];
}

qf_status qf_dot_set_isa(const char *name)
{
    int i;
    if (!name) {
        atomic_store_explicit(&g_isa, isa_best(), memory_order_relaxed);
        return QF_OK;
    }
    for (i = 0; i < ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            if (!isa_available(i))
                return QF_EUNSUPPORTED;
            atomic_store_explicit(&g_isa, i, memory_order_relaxed);
            return QF_OK;
        }
    return QF_EINVAL;
}

static _Thread_local qf_dot_counts tl_counts;

qf_dot_counts qf_dot_get_counts(void)
{
    return tl_counts;
}

void qf_dot_reset_counts(void)
{
    memset(&tl_counts, 0, sizeof tl_counts);
}

/* ---- The proof ------------------------------------------------------------------ */

typedef struct proof {
    int zero; /* every product is exactly zero */
    int L;    /* every product is a multiple of 2^L */
    int kp;   /* and has at most kp significant bits */
} proof;

/* Exponent of the smallest nonzero |v| from the kernel's min (bits - 1):
 * 1 and *e when normal, 0 when there is none, -1 when subnormal. */
static int min_exponent(double m, int *e)
{
    uint64_t bits = d2u(m) + 1, be;
    if (bits >= INF_BITS)
        return 0;
    be = bits >> 52;
    if (be == 0)
        return -1;
    *e = (int)be - 1023;
    return 1;
}

static int sig_bits(uint64_t orbits)
{
    return 53 - __builtin_ctzll((orbits & MANT_MASK) | (1ull << 52));
}

/* floor(log2 v) for finite v > 0 (subnormals: -1023, an upper bound). */
static int exponent_of(double v)
{
    uint64_t be = d2u(v) >> 52 & 0x7FF;
    return be == 0 ? -1023 : (int)be - 1023;
}

/* Are all products exact, and on what grid? */
static int prove_products(const blk *b, proof *pf)
{
    int ex = 0, ey = 0, hx, hy, ka, kb;
    hx = min_exponent(b->mnx, &ex);
    hy = min_exponent(b->mny, &ey);
    pf->zero = hx == 0 || hy == 0; /* not asum == 0: products may underflow */
    if (pf->zero)
        return 1;
    if (hx < 0 || hy < 0)
        return 0;
    ka = sig_bits(b->orx);
    kb = sig_bits(b->ory);
    pf->L = ex + ey - ka - kb + 2;
    pf->kp = ka + kb;
    return ka + kb <= 53 && pf->L >= -1074;
}

/* One level: the computed sum of |p| below 2^(53 + L) proves every abs
 * partial sum exact (a rounded one would have been >= 2^(53 + L), and the
 * later ones, sums of nonnegative terms, no smaller), so every signed
 * partial sum, bounded by the abs partial sum of the same terms in the same
 * lane, is a multiple of 2^L below 2^(53 + L): exact too. */
static int prove_one_level(const blk *b, const proof *pf)
{
    if (!isfinite(b->s1) || !isfinite(b->asum))
        return 0;
    if (pf->zero)
        return 1;
    return b->asum == 0 || (exponent_of(b->asum) < 53 + pf->L && exponent_of(b->asum) < 1023);
}

/* Two levels with sigma = 2^ks.  The computed sum of |p|, a, may be
 * rounded; the true one is below a (1 + 2n u) <= a (1 + 2^-41) for
 * n <= 2^11, so below 2^(ks - 1) when ks >= e(a) + 2: then |p| <= sigma,
 * and the q partial sums stay below sum |p| + n 2^(ks-53) < 2^ks. */
static int prove_two_level(const blk *b, int lb, int ks, int want_abs, const proof *pf)
{
    if (!isfinite(b->s1) || !isfinite(b->s2) || !isfinite(b->asum) ||
        (want_abs && (!isfinite(b->e1) || !isfinite(b->e2))))
        return 0;
    if (pf->zero)
        return 1;
    if (b->asum != 0 && ks < exponent_of(b->asum) + 2)
        return 0;
    if (ks > 1023 || ks - 53 < -1022)
        return 0;
    return pf->L >= ks - 53 || lb + ks - 53 <= 53 + pf->L;
}

/* A second look: with exact products of at most kp bits, each p is a
 * multiple of 2^(e(p) - kp + 1), so of 2^(e(min |p|) - kp + 1), often far
 * finer a bound than the input minimums give (a tiny x meets a normal y). */
static void refine_with_min_product(proof *pf, double pmin)
{
    uint64_t bits = d2u(pmin) + 1;
    int e, lp;
    if (bits >= INF_BITS)
        return;
    e = exponent_of(u2d(bits));
    lp = e - pf->kp + 1;
    if (lp > pf->L)
        pf->L = lp;
}

static int ceil_log2(size_t n)
{
    int lb = 0;
    while (((size_t)1 << lb) < n)
        lb++;
    return lb;
}

/* ---- The driver -------------------------------------------------------------------- */

static int hint_bits(const qf_format *f)
{
    if (!f)
        return 53;
    switch (f->kind) {
    case QF_KIND_FLOAT: return f->man_bits + 1;
    case QF_KIND_SCALE: return 1;
    case QF_KIND_INT: return f->bits;
    }
    return 53;
}

static void block_general(qf_dot_acc *acc, qf_dot_acc *abs, const double *x, const double *y, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        qf_dot_acc_add_product(acc, x[i], y[i]);
    if (abs)
        for (i = 0; i < n; i++)
            qf_dot_acc_add_product(abs, fabs(x[i]), fabs(y[i]));
}

static void add_sums(qf_dot_acc *acc, qf_dot_acc *abs, const blk *b, int two)
{
    qf_dot_acc_add_d(acc, b->s1);
    if (two)
        qf_dot_acc_add_d(acc, b->s2);
    if (abs) {
        if (two) {
            qf_dot_acc_add_d(abs, b->e1);
            qf_dot_acc_add_d(abs, b->e2);
        } else {
            qf_dot_acc_add_d(abs, b->asum);
        }
    }
}

/* Try the two-level kernel with sigma = 2^ks; when sigma was too small for
 * this block, retry once with the block's own sum of |p|.  *ea: e(sum |p|)
 * of the block, for the next prediction. */
static int try_two(kernel_fn k, const double *x, const double *y, size_t n, int lb, int ks, int want_abs,
                   blk *b, int *ea)
{
    proof pf;
    int tries;
    for (tries = 0; tries < 2; tries++) {
        if (ks > 1023 || ks - 53 < -1022)
            return 0;
        k(x, y, n, ldexp(1.0, ks), 1, want_abs, b);
        if (!prove_products(b, &pf) || !isfinite(b->asum))
            return 0;
        if (b->asum != 0)
            *ea = exponent_of(b->asum);
        if (prove_two_level(b, lb, ks, want_abs, &pf))
            return 1;
        if (pf.zero || b->asum == 0 || ks >= *ea + 2)
            return 0; /* not a sigma problem: the range is too wide */
        ks = *ea + 2;
    }
    return 0;
}

void qf_dot_acc_add_dot(qf_dot_acc *acc, qf_dot_acc *abs, size_t n, const double *x, ptrdiff_t incx,
                        const double *y, ptrdiff_t incy, const qf_format *fx, const qf_format *fy)
{
    double xb[QF_DOT_BLOCK], yb[QF_DOT_BLOCK];
    int isa = isa_current(), bits = hint_bits(fx) + hint_bits(fy), ea = 0, have_ea = 0;
    kernel_fn k = kernels[isa];
    kabs_fn kabs = kabses[isa];
    kpmin_fn kpmin = kpmins[isa];
    int plan = bits <= 32 ? 1 : bits <= 53 ? 2 : 0;
    int want_abs = abs != NULL;
    size_t start, i;

    /* Blocks as long as the proof usually allows: long blocks spread the
     * per-block work (reductions, proof, one superaccumulator addition),
     * but one level has 53 - kp bits for the range of the products and
     * log2(length): 1024 terms for products of more than 16 bits. */
    size_t bs = plan == 1 && bits > 16 ? QF_DOT_BLOCK / 2 : QF_DOT_BLOCK;

    for (start = 0; start < n; start += bs) {
        size_t m = n - start < bs ? n - start : bs;
        const double *px = x + (ptrdiff_t)start * incx, *py = y + (ptrdiff_t)start * incy;
        int lb = ceil_log2(m);
        blk b;
        proof pf;

        if (incx != 1) {
            for (i = 0; i < m; i++)
                xb[i] = px[(ptrdiff_t)i * incx];
            px = xb;
        }
        if (incy != 1) {
            for (i = 0; i < m; i++)
                yb[i] = py[(ptrdiff_t)i * incy];
            py = yb;
        }
        if (plan == 1) {
            k(px, py, m, 0.0, 0, 0, &b);
            if (prove_products(&b, &pf) && prove_one_level(&b, &pf)) {
                add_sums(acc, abs, &b, 0);
                tl_counts.one_level++;
                continue;
            }
            if (prove_products(&b, &pf) && !pf.zero && isfinite(b.s1) && isfinite(b.asum)) {
                refine_with_min_product(&pf, kpmin(px, py, m));
                if (prove_one_level(&b, &pf)) {
                    add_sums(acc, abs, &b, 0);
                    tl_counts.one_level++;
                    continue;
                }
            }
            tl_counts.rejected++;
            /* products exact but the range too wide for one level: two */
            if (prove_products(&b, &pf) && !pf.zero && isfinite(b.asum) && b.asum != 0 &&
                try_two(k, px, py, m, lb, exponent_of(b.asum) + 2, want_abs, &b, &ea)) {
                add_sums(acc, abs, &b, 1);
                tl_counts.two_level++;
                continue;
            }
        } else if (plan == 2) {
            if (!have_ea) {
                double a = kabs(px, py, m);
                ea = a == 0 || !isfinite(a) ? 0 : exponent_of(a);
                have_ea = 1;
            }
            /* sigma one binade above the last block's need: room to grow */
            if (try_two(k, px, py, m, lb, ea + 3, want_abs, &b, &ea)) {
                add_sums(acc, abs, &b, 1);
                tl_counts.two_level++;
                continue;
            }
            tl_counts.rejected++;
        }
        block_general(acc, abs, px, py, m);
        tl_counts.general++;
    }
}
