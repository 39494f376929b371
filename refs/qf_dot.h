/* qf_dot.h: the exact dot-product engine and the exact GEMM / GEMV reference.
 *
 * WHAT IS EXACT
 *   Every value this module returns is computed from the EXACT sum
 *       alpha * sum_l a_l * b_l  +  beta * c
 *   of the binary64 inputs, held in a fixed-point superaccumulator, and is
 *   rounded ONCE, directly from that exact value, into the requested format
 *   and rounding mode (qf_format_encode_parts).  Never exact -> binary64 ->
 *   target: that double rounding can be wrong (docs/numerics.md#exact-references).  This holds for ANY finite binary64 inputs:
 *   products of full 53-bit significands are formed as exact 106-bit
 *   integers, subnormals included, and alpha * (sum) is an exact scaling of
 *   the accumulator, so alpha, beta, A, B and C may be any doubles.
 *
 * THE ACCUMULATOR (Neal, "Fast exact summation using small and large
 * superaccumulators", 2015, small superaccumulator)
 *   An array of signed 64-bit chunks, chunk i weighing 2^(32 i + QF_DOT_LSB):
 *   each addition adds one signed 32-bit digit per chunk, and a carry pass
 *   every 2^29 additions keeps the chunks far from overflow.  It covers
 *   2^-3264 .. 2^3264, enough for any product of three binary64 values
 *   (alpha * a * b, down to 2^-3222) summed over any count of terms.  Only
 *   the chunks touched are cleared and normalized.  NaN and infinities are
 *   kept aside as flags (Inf - Inf and 0 * Inf give NaN, as IEEE 754 does).
 *
 * THE FAST PATH (qf_dot_acc_add_dot), exact by construction and checked
 *   Terms are processed in blocks of up to QF_DOT_BLOCK.  For each block the
 *   kernel multiplies in binary64 and sums in plain doubles (vectorized
 *   accumulators, SSE2 or AVX2 picked at run time), while it records: the
 *   OR of the input bit patterns (-> the most significant bits ka, kb any
 *   input has), the smallest nonzero |a| and |b|, and sum |a*b| lane by
 *   lane beside the signed sum.  From these it proves, after the block,
 *   that every product was exact (ka + kb <= 53, no underflow) and that
 *   every partial sum was a multiple of the smallest product's last bit
 *   and stayed below 2^53 of those units, so every floating-point addition
 *   was exact (the full argument is in dot_fast.c).  Two variants:
 *     - one level (tried first when the input formats' precisions add up
 *       to <= 32 bits: bfloat16, float16, tf32, FP8/FP6/FP4, int8/int4, in
 *       blocks of 2048 terms, 1024 when the products have more than 16
 *       bits): block sum = one double; a block refused on the input
 *       minimums gets a second look with the smallest product;
 *     - two levels (tried first for <= 53 bits: float32, float32 x bf16 ...;
 *       and for a one-level block whose range is too wide): each product is split
 *       error-free (Rump-Ogita-Oishi ExtractScalar, sigma a power of two
 *       above the block's sum of |a*b|) into a high part on a fixed grid
 *       and a low part, summed in two sets of doubles.
 *   A block that fails its proof (too wide a dynamic range, more bits than
 *   the hint said, NaN/Inf, underflow) is redone term by term with exact
 *   106-bit integer products into the superaccumulator, so the result is
 *   exact for any input; the format hint only chooses which kernel to try
 *   first (NULL or binary64 hints go term by term directly).  The block
 *   sums, exact doubles, enter the superaccumulator.
 *
 * ZERO
 *   An exact zero result is +0 in every mode except QF_ROUND_DOWN, where it
 *   is -0 (IEEE 754 rule for a sum of opposite terms), whatever the signs of
 *   the zero products (an empty dot is +0 too).  The magnitude sum of an
 *   all-zero dot is +0.
 *
 * DETERMINISM
 *   The exact sum does not depend on the order of the terms, so the result
 *   is the same bit pattern for any blocking, vector width and OpenMP
 *   thread count.  Stochastic rounding draws its bits from the caller's
 *   word (GEMM: qf_rng_u64(seed, linear element index)).
 *
 * MAGNITUDE
 *   On request, sum |a_l b_l| (GEMM: |alpha| sum |a b| + |beta c|) is
 *   accumulated exactly as well and returned rounded once UPWARD to binary64
 *   (an upper bound, as error bounds need it).
 *
 * LIMITS
 *   Up to 2^62 terms per accumulator.  Inputs are binary64 values; values
 *   of narrower formats are passed as their exact binary64 decodings
 *   (qf_format_decode_array).  Speed (bench/bench_dot.c, docs/bench.md):
 *   the fast path needs data whose products span a moderate range within
 *   a block (true of real tensors); adversarial ranges fall back to about
 *   10-20 ns per term, still exact.  Binary64 inputs (hint NULL) always go
 *   term by term.
 */
#ifndef QF_DOT_H
#define QF_DOT_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_ref.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The exact accumulator ---------------------------------------------- */

#define QF_DOT_LSB    (-3264) /* weight of bit 0 of chunk 0: 2^QF_DOT_LSB */
#define QF_DOT_CHUNKS 204     /* 32-bit digits: up to 2^3264 (carry room included) */
#define QF_DOT_BLOCK  2048    /* most terms per fast-path block */

/* Public so that it can live on the stack or in an array (one per output
 * element); its fields are internal: use the functions below. */
typedef struct qf_dot_acc {
    int64_t _chunk[QF_DOT_CHUNKS];
    int _lo, _hi;      /* chunks [_lo, _hi] may be nonzero; _lo > _hi: none */
    int64_t _pending;  /* additions since the last carry pass */
    unsigned _special; /* NaN, +Inf and -Inf terms seen (bit flags) */
} qf_dot_acc;

/* Kind of the exact value. */
typedef enum qf_dot_class {
    QF_DOT_ZERO = 0, /* exactly zero */
    QF_DOT_FINITE,   /* finite, nonzero */
    QF_DOT_POS_INF,  /* some term was +Inf, none -Inf or NaN */
    QF_DOT_NEG_INF,
    QF_DOT_NAN /* a NaN term, Inf - Inf, or 0 * Inf */
} qf_dot_class;

/* Set to zero.  init and clear are the same operation; clear is cheap
 * (only the touched chunks are written). */
void qf_dot_acc_init(qf_dot_acc *acc);
void qf_dot_acc_clear(qf_dot_acc *acc);

/* acc += x, exactly (x any double, NaN and +-Inf included). */
void qf_dot_acc_add_d(qf_dot_acc *acc, double x);
/* acc -= x, exactly: "negate-add" a candidate. */
void qf_dot_acc_sub_d(qf_dot_acc *acc, double x);
/* acc += a * b, exactly (106-bit integer product, any doubles). */
void qf_dot_acc_add_product(qf_dot_acc *acc, double a, double b);
/* acc += x, acc -= x for another accumulator, exactly (aliasing allowed). */
void qf_dot_acc_add_acc(qf_dot_acc *acc, const qf_dot_acc *x);
void qf_dot_acc_sub_acc(qf_dot_acc *acc, const qf_dot_acc *x);
/* acc *= s, exactly (s any double; 0 * Inf gives NaN; s = 0 gives +0).
 * QF_EINVAL, acc unchanged, when the exact product would leave the
 * accumulator's range (never for alpha * (a sum of products of two
 * doubles), as GEMM uses it). */
qf_status qf_dot_acc_scale(qf_dot_acc *acc, double s);

/* acc += sum_{l<n} x[l*incx] * y[l*incy], exactly, with the fast path
 * described above.  fx, fy: the formats the values belong to (a hint that
 * picks the kernel; NULL = unknown, binary64; a wrong hint costs time,
 * never exactness).  abs: when not NULL, abs += sum |x_l * y_l| exactly as
 * well.  Negative increments walk
 * backwards from x[0] (not BLAS's convention: x points at the first term). */
void qf_dot_acc_add_dot(qf_dot_acc *acc, qf_dot_acc *abs, size_t n, const double *x, ptrdiff_t incx,
                        const double *y, ptrdiff_t incy, const qf_format *fx, const qf_format *fy);

/* Which block kernels are in use: "avx2", "sse2" or "scalar" (picked once
 * from the CPU; the environment variable QF_DOT_ISA overrides it, and
 * QF_DOT_DEBUG=1 logs the choice to stderr).  qf_dot_set_isa forces one
 * (QF_EUNSUPPORTED if this CPU or build lacks it; NULL: back to the CPU's
 * best).  The results are the same bits whatever the ISA. */
const char *qf_dot_isa(void);
qf_status qf_dot_set_isa(const char *name);

/* How the blocks of the calling thread's qf_dot_acc_add_dot calls were
 * summed since the last reset, for tests and benchmarks: one level, two
 * levels, exact term by term (fallback or binary64 inputs), and blocks a
 * fast kernel tried and could not prove exact. */
typedef struct qf_dot_counts {
    uint64_t one_level, two_level, general, rejected;
} qf_dot_counts;
qf_dot_counts qf_dot_get_counts(void);
void qf_dot_reset_counts(void);

/* -1, 0, +1: sign of the exact value (specials: sign of the Inf, 0 for NaN). */
int qf_dot_acc_sign(const qf_dot_acc *acc);

/* The exact value as rounding input: (-1)^sign * sig * 2^(exp - 63) with
 * bit 63 of sig set, sticky != 0 when nonzero bits lie below sig.  For
 * ZERO, sig = 0 and sign = 0; for specials, sign is the Inf's sign. */
qf_dot_class qf_dot_acc_parts(const qf_dot_acc *acc, int *sign, int *exp, uint64_t *sig, int *sticky);

/* The exact value rounded once into f (same arguments and rules as
 * qf_format_encode_parts; NaN and Inf encode as qf_format_encode does). */
uint64_t qf_dot_acc_round(const qf_dot_acc *acc, const qf_format *f, qf_round round, int saturate,
                          int random_bits, uint64_t rnd_word);
/* The exact value rounded once to binary64 in mode `round` (deterministic
 * modes only; QF_ROUND_UP gives an upper bound of the exact value). */
double qf_dot_acc_get_d(const qf_dot_acc *acc, qf_round round);
/* candidate - exact, computed exactly inside the accumulator and rounded
 * once to nearest-even binary64.  acc is left unchanged (the subtraction is
 * undone exactly).  Specials follow IEEE 754: NaN on either side or
 * Inf - Inf gives NaN, an infinite side gives that Inf. */
double qf_dot_acc_error(qf_dot_acc *acc, double candidate);

/* Convenience: one exact dot product rounded once into `out` (may be NULL
 * when only values are wanted).  Any of code, value, abs_up may be NULL:
 *   code   = the result's code in `out`,
 *   value  = that code decoded (binary64; the exact rounded value),
 *   abs_up = sum |x_l y_l| rounded once upward to binary64. */
typedef struct qf_dot_round {
    const qf_format *out; /* NULL: binary64 */
    qf_round round;       /* deterministic modes, or stochastic with rnd_word */
    int saturate;
    int random_bits;
    uint64_t rnd_word;
} qf_dot_round;

qf_status qf_dot(size_t n, const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy,
                 const qf_format *fx, const qf_format *fy, const qf_dot_round *r, uint64_t *code,
                 double *value, double *abs_up);

/* ---- GEMM, GEMV ------------------------------------------------------------
 *
 *   D = alpha * op(A) * op(B) + beta * C, per output element exactly, then
 *   rounded once into `out` with `round`.
 *
 * op(A) is M x K, op(B) is K x N, C and D are M x N.  Storage follows CBLAS:
 * `layout` row- or column-major for every matrix, lda/ldb/ldc/ldd the
 * leading dimensions of the STORED matrices (row-major: row stride).
 * BLAS conventions: beta == 0 means C is not read (may be NULL); alpha == 0
 * means A and B are not read (the result is beta * C exactly).
 *
 * Batches: `batch` independent problems, matrix p at base + p * stride_X
 * (stride_X in elements; 0 broadcasts one matrix to all problems).
 *
 * Grouped GEMM (mixture of experts): when group_m != NULL, there are
 * `batch` groups; group g has group_m[g] rows, its rows of op(A), C and D
 * are stacked after those of groups 0..g-1 in ONE matrix each (so A, C, D
 * are (sum group_m) x K / x N, and stride_a, stride_c, stride_d are
 * ignored), and group g uses B at b + g * stride_b.  M is ignored.
 *
 * Outputs (each may be NULL; laid out like D: layout, ldd, stride_d, or
 * stacked rows when grouped):
 *   d_code  the code of the correctly rounded result in `out`,
 *   d_value that code decoded (binary64: exact value of the rounded result),
 *   d_abs   |alpha| sum |a_il b_lj| + |beta c_ij|, exact then rounded UP to
 *           binary64 (an upper bound, as the error bounds need),
 *   d_err   cand - exact, for the candidate matrix `cand` (same layout as
 *           D), exact inside the accumulator then rounded to nearest even.
 *   d_status the qf_ref_status of each element (qf_ref.h), one byte each:
 *           QF_REF_EXACT when the rounded value (d_value) equals the exact
 *           result (an infinite exact result, from an Inf input, is exact
 *           when `out` holds that Inf), QF_REF_ROUNDED otherwise (overflow
 *           to Inf, NaN or max included), QF_REF_UNDEFINED when the exact
 *           result is NaN (a NaN input, Inf - Inf, 0 * Inf).  Decided from
 *           the exact accumulator, so never QF_REF_UNDECIDED.
 * Stochastic rounding of element (p, i, j) uses
 * qf_rng_u64(rnd_seed, linear index of the element in D's logical order
 * p*M*N + i*N + j), so it is deterministic too.
 *
 * threads: OpenMP threads (0: the OpenMP default).  Elements are computed
 * independently, so the bits do not depend on it.
 *
 * FAST PATH (qf_gemm, not qf_gemv; off with exact_only = 1).  The product
 * is first computed in binary64 by a blocked kernel (any summation order,
 * FMA or not), with a per-element bound proven for any such order:
 *   |C64 - sum a b| <= gamma_K (|A||B|)_ij + K 2^-1074     (Higham 3.1, 3.5)
 * with (|A||B|)_ij bounded by Cauchy-Schwarz (the rows' and columns' sums of
 * squares, enlarged for their own rounding).  When every product is a
 * multiple of a unit 2^(lsb row i + lsb column j) >= 2^-1074 and that bound
 * is below 2^53 units, every partial sum was exact: C64 IS the exact sum
 * (narrow inputs: bf16, fp16, FP8, int8 ... on real data).  An element is
 * written from C64 when it is exact (alpha = 1, beta = 0), or when every
 * number of [v - e, v + e] rounds to one code of `out` and that interval
 * holds no value of `out` (which might be the exact result, status exact);
 * every other element (NaN or Inf inputs, cancellation, binary64 targets
 * of inexact sums, d_abs without an exact magnitude) is computed by the
 * exact engine alone.  Stochastic rounding, d_err, alpha = 0 and K = 0
 * use the exact engine for every element.  Codes, values, statuses and
 * d_abs are the same bits as without the fast path (docs/refs.md "Fast
 * GEMM" has the derivation).
 */
typedef enum qf_layout { QF_ROW_MAJOR = 0, QF_COL_MAJOR = 1 } qf_layout;
typedef enum qf_trans { QF_NO_TRANS = 0, QF_TRANS = 1 } qf_trans;

/* How qf_gemm decided its elements (the certified fast path, docs/refs.md
 * "Fast GEMM"): every element is counted once, in n_fast when the binary64
 * product and its rigorous error bound decided it, in n_exact when the
 * exact engine computed it.  The results are the same bits either way; the
 * counts say what it cost. */
typedef struct qf_gemm_stats {
    size_t n_elements, n_fast, n_exact;
} qf_gemm_stats;

typedef struct qf_gemm_desc {
    qf_layout layout;
    qf_trans trans_a, trans_b;
    size_t m, n, k;
    double alpha;
    const double *a;
    size_t lda;
    const double *b;
    size_t ldb;
    double beta;
    const double *c; /* may be NULL when beta == 0 */
    size_t ldc;
    size_t batch;                           /* 0 is taken as 1 */
    ptrdiff_t stride_a, stride_b, stride_c; /* batched: elements */
    const size_t *group_m;                  /* grouped GEMM, or NULL */
    const qf_format *fa, *fb;               /* input format hints (NULL: binary64) */
    /* rounding of the outputs */
    const qf_format *out; /* NULL: binary64 */
    qf_round round;
    int saturate;
    int random_bits;
    uint64_t rnd_seed;
    /* outputs */
    size_t ldd;
    ptrdiff_t stride_d;
    uint64_t *d_code;
    double *d_value;
    double *d_abs;
    double *d_err;
    const double *cand; /* candidate for d_err, laid out like D */
    int threads;        /* 0: OpenMP default */
    uint8_t *d_status;  /* qf_ref_status per element, laid out like D */
    /* 1: no fast path, every element from the exact engine (as
     * qf_ref_opts.slow_only; the tests compare both paths bit for bit). */
    int exact_only;
    qf_gemm_stats *stats; /* when not NULL: filled in (qf_gemm; qf_gemv: all exact) */
} qf_gemm_desc;

/* A desc with every field zero or NULL, except batch = 1, round = RNE,
 * alpha = 1, beta = 0, random_bits = 32. */
qf_gemm_desc qf_gemm_desc_default(void);

/* Check the description (dimensions, leading dimensions, NULL pointers,
 * rounding mode valid for out): QF_EINVAL / QF_EFORMAT with nothing
 * written; otherwise compute every requested output. */
qf_status qf_gemm(const qf_gemm_desc *d);

/* The qf_ref_status (qf_ref.h) of an element whose exact value is in acc
 * and whose rounded value is v, as d_status gives it: exactness is the
 * sign of acc - v formed exactly (acc keeps its value).  For callers that
 * round sampled elements themselves (qf_gemm_acc_element), so they judge
 * exactness as qf_gemm does. */
qf_ref_status qf_dot_acc_status(qf_dot_acc *acc, double v);

/* The exact accumulator of one element (problem p, row i, column j; for a
 * grouped GEMM p is the group and i the row inside it), for callers that
 * check a sample of elements.  abs may be NULL. */
qf_status qf_gemm_acc_element(const qf_gemm_desc *d, size_t p, size_t i, size_t j, qf_dot_acc *acc,
                              qf_dot_acc *abs);

/* GEMV: y = alpha * op(A) x + beta * y0, op(A) m x k (d->m, d->k, d->a,
 * d->lda, d->trans_a, d->layout, alpha, beta, rounding fields as for
 * GEMM; d->b, d->c, n, batch and groups are ignored).  x has k elements at
 * stride incx, y0 (read when beta != 0) m elements at stride incy; the
 * outputs d_code, d_value, d_abs, d_err, d_status and cand are vectors of m elements
 * at stride d->ldd (>= 1). */
qf_status qf_gemv(const qf_gemm_desc *d, const double *x, ptrdiff_t incx, const double *y0, ptrdiff_t incy);

#ifdef __cplusplus
}
#endif

#endif /* QF_DOT_H */
