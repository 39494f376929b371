/* t-fp8scale.c: FP8 per-tensor / per-row / per-column scaling
 * (qf_block_fp8_scale_*) against an MPFR reference written from the
 * definition (Transformer Engine's recipe, docs/block.md):
 *   S = RN32(fp8_max / (max(amax, eps) * 2^margin)), 1 when amax is 0, NaN
 *       or Inf, FLT_MAX on overflow, 2^-149 on underflow; pow2 clears S's
 *       float32 fraction bits;
 *   q = round_fp8(x * S) from the exact product (or from RN32(x * S) with
 *       fp32_product);
 *   dequantize RN64(decode(q) / S), or decode(q) * RN32(1 / S) exactly.
 * Plus hard cases: x = RN64(m / S) for an fp8 midpoint m, where binary64
 * rounds x * S to m exactly and only the exact product decides the code.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "qf_block.h"
#include "qf_format_mpfr.h"
#include "qf_test.h"
#include "_block.h" /* the exact-parts helpers, tested directly below */

#define MAX_REPORT 10
#define MAXN       800

static long n_failed, n_scales, n_elems, n_undecided, n_hard;
static uint64_t rng_state;
static const qf_format *F32;

static double f32_of(uint32_t c)
{
    float f;
    memcpy(&f, &c, 4);
    return f;
}

static void report(const char *what, const qf_block_fp8_params *p, size_t rows, size_t cols, size_t idx,
                   double v, double got, double want)
{
    static const char *gran[] = {"tensor", "row", "col"};
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(
        stderr,
        "FAIL %s fp8scale elem=%s granularity=%s margin=%d pow2=%d saturate=%d fp32_product=%d "
        "dequant=%d round=%s shape=%zux%zu index=%zu x=%a: got %a expected %a [reproduce: QF_SEED=%" PRIu64
        " t-precision-fp8scale]\n",
        what, qf_format_get(p->elem)->name, gran[p->granularity], p->margin, p->pow2, p->saturate,
        p->fp32_product, (int)p->dequant, qf_round_name(p->round), rows, cols, idx, v, got, want,
        qf_test_seed());
}

static void report_parts(const char *what, const qf_format *f, qf_round r, double x, double y, uint64_t got,
                         uint64_t want)
{
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(stderr,
            "FAIL %s into %s round=%s x=%a y=%a: got 0x%" PRIX64 " expected 0x%" PRIX64
            " [reproduce: QF_SEED=%" PRIu64 " t-precision-fp8scale]\n",
            what, f->name, qf_round_name(r), x, y, got, want, qf_test_seed());
}

static uint32_t ref_scale(const qf_block_fp8_params *p, double amax)
{
    mpfr_t lo, hi, a;
    uint64_t c;
    if (amax < p->amax_epsilon)
        amax = p->amax_epsilon;
    if (amax == 0 || !isfinite(amax))
        return 0x3F800000u;
    mpfr_inits2(256, lo, hi, a, (mpfr_ptr)0);
    mpfr_set_d(a, amax, MPFR_RNDN);
    mpfr_mul_2si(a, a, p->margin, MPFR_RNDN);
    mpfr_set_d(lo, qf_format_get(p->elem)->max, MPFR_RNDN);
    mpfr_div(hi, lo, a, MPFR_RNDU);
    mpfr_div(lo, lo, a, MPFR_RNDD);
    if (!qf_format_encode_interval(F32, lo, hi, QF_ROUND_RNE, 1, &c))
        n_undecided++;
    mpfr_clears(lo, hi, a, (mpfr_ptr)0);
    if (c == 0)
        c = 1;
    if (p->pow2 && c >= 0x00800000u)
        c &= 0xFF800000u; /* TE force_pow_2_scales: keep the exponent bits */
    return (uint32_t)c;
}

/* The code of x * S; *alt: the other neighbour (stochastic). */
static uint8_t ref_elem(const qf_block_fp8_params *p, double x, double S, uint8_t *alt)
{
    const qf_format *f = qf_format_get(p->elem);
    mpfr_t y;
    uint64_t c, c2;
    mpfr_init2(y, 128);
    mpfr_set_d(y, x, MPFR_RNDN);
    mpfr_mul_d(y, y, S, MPFR_RNDN); /* exact: 53 + 24 bits */
    if (p->fp32_product && isfinite(x)) {
        double y32 = f32_of((uint32_t)qf_format_encode_mpfr(F32, y, QF_ROUND_RNE, 0, 0, 0));
        mpfr_set_d(y, y32, MPFR_RNDN);
    }
    if (p->round == QF_ROUND_STOCHASTIC) {
        c = qf_format_encode_mpfr(f, y, QF_ROUND_RTZ, p->saturate, 0, 0);
        c2 = qf_format_encode_mpfr(f, y, mpfr_signbit(y) ? QF_ROUND_DOWN : QF_ROUND_UP, p->saturate, 0, 0);
    } else {
        c = c2 = qf_format_encode_mpfr(f, y, p->round, p->saturate, 0, 0);
    }
    mpfr_clear(y);
    *alt = (uint8_t)c2;
    return (uint8_t)c;
}

static int ref_dequant_ok(const qf_block_fp8_params *p, uint8_t code, uint32_t sc, double d)
{
    double v = qf_format_decode(qf_format_get(p->elem), code);
    mpfr_t y, lo, hi;
    int ok;
    if (isnan(v))
        return isnan(d);
    mpfr_inits2(256, y, lo, hi, (mpfr_ptr)0);
    mpfr_set_d(y, v, MPFR_RNDN);
    if (p->dequant == QF_BLOCK_FP8_DIV) {
        mpfr_div_d(y, y, f32_of(sc), MPFR_RNDN);
        ok = mpfr_get_d(y, MPFR_RNDN) == d || (isinf(v) && d == v);
    } else {
        uint64_t inv = 0;
        mpfr_set_ui(lo, 1, MPFR_RNDN);
        mpfr_div_d(hi, lo, f32_of(sc), MPFR_RNDU);
        mpfr_div_d(lo, lo, f32_of(sc), MPFR_RNDD);
        ck_assert(qf_format_encode_interval(F32, lo, hi, QF_ROUND_RNE, 1, &inv));
        mpfr_mul_d(y, y, f32_of((uint32_t)inv), MPFR_RNDN); /* exact */
        ok = mpfr_cmp_d(y, d) == 0;
    }
    mpfr_clears(y, lo, hi, (mpfr_ptr)0);
    return ok;
}

static void fill(int kind, double *x, size_t rows, size_t cols)
{
    size_t i, n = rows * cols;
    int base = (int)(qf_test_splitmix(&rng_state) % 40) - 20;
    for (i = 0; i < n; i++) {
        double sg = (qf_test_splitmix(&rng_state) & 1) ? -1 : 1, v;
        switch (kind) {
        case 0:
            v = (qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) - 1.5) *
                ldexp(1.0, base);
            break;
        case 1:
            v = sg * ldexp(qf_test_unif01(&rng_state),
                           base + (int)((i / cols) * 5 % 30) - 15 + (int)((i % cols) % 3));
            break;
        case 2:
            v = sg * ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 61) - 30);
            break;
        default:
            v = (double)(float)(sg * ldexp(1.0 + qf_test_unif01(&rng_state), base));
            if (qf_test_splitmix(&rng_state) % 40 == 0)
                v = (qf_test_splitmix(&rng_state) & 1) ? NAN : sg * INFINITY;
            break;
        }
        if (kind != 2)
            v = (double)(float)v;
        if (qf_test_splitmix(&rng_state) % 37 == 0)
            v = 0;
        x[i] = v;
    }
}

START_TEST(test_sweep)
{
    static const qf_format_id elems[] = {QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_FLOAT8_E4M3FNUZ,
                                         QF_FLOAT8_E5M2FNUZ};
    static const qf_round rounds[] = {QF_ROUND_RNE, QF_ROUND_RNE, QF_ROUND_RNE,  QF_ROUND_RNA,
                                      QF_ROUND_RTZ, QF_ROUND_UP,  QF_ROUND_DOWN, QF_ROUND_STOCHASTIC};
    static double x[MAXN], deq[MAXN], sv[MAXN];
    static uint8_t codes[MAXN];
    static uint32_t sc[MAXN];
    long it, iters = qf_test_iters(1500);
    rng_state = qf_test_seed() * 17 + 3;
    n_failed = n_scales = n_elems = n_undecided = 0;
    for (it = 0; it < iters; it++) {
        qf_block_fp8_params p = qf_block_fp8_params_default();
        size_t rows = 1 + qf_test_splitmix(&rng_state) % 12, cols = 1 + qf_test_splitmix(&rng_state) % 60, ns,
               s, i;
        p.elem = elems[qf_test_splitmix(&rng_state) % 4];
        p.granularity = (qf_block_fp8_granularity)(it % 3);
        p.margin = (int)(qf_test_splitmix(&rng_state) % 6) - 1;
        p.pow2 = qf_test_splitmix(&rng_state) % 4 == 0;
        p.saturate = qf_test_splitmix(&rng_state) % 5 != 0;
        p.fp32_product = qf_test_splitmix(&rng_state) % 4 == 0;
        p.dequant = (qf_block_fp8_dequant)(qf_test_splitmix(&rng_state) % 2);
        p.round = rounds[qf_test_splitmix(&rng_state) % 8];
        p.seed = qf_test_splitmix(&rng_state);
        if (qf_test_splitmix(&rng_state) % 8 == 0)
            p.amax_epsilon = 1e-3;
        fill((int)((it / 3) % 4), x, rows, cols);
        ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, x, rows, cols, codes, sc, sv), QF_OK);
        ck_assert_int_eq(qf_block_fp8_scale_dequantize(&p, codes, sc, rows, cols, deq), QF_OK);
        ns = p.granularity == QF_BLOCK_FP8_TENSOR ? 1 : p.granularity == QF_BLOCK_FP8_ROW ? rows : cols;
        ck_assert_uint_eq(qf_block_fp8_scale_count(&p, rows, cols), ns);
        for (s = 0; s < ns; s++) {
            double amax = 0;
            uint32_t want;
            for (i = 0; i < rows * cols; i++) {
                size_t r = i / cols, c = i % cols;
                if ((p.granularity == QF_BLOCK_FP8_ROW && r != s) ||
                    (p.granularity == QF_BLOCK_FP8_COL && c != s))
                    continue;
                amax = isnan(x[i]) || isnan(amax) ? NAN : fmax(amax, fabs(x[i]));
            }
            want = ref_scale(&p, amax);
            n_scales++;
            if (sc[s] != want || sv[s] != f32_of(want))
                report("scale", &p, rows, cols, s, amax, f32_of(sc[s]), f32_of(want));
        }
        for (i = 0; i < rows * cols; i++) {
            size_t s = p.granularity == QF_BLOCK_FP8_TENSOR ? 0
                       : p.granularity == QF_BLOCK_FP8_ROW  ? i / cols
                                                            : i % cols;
            uint8_t alt, want = ref_elem(&p, x[i], f32_of(sc[s]), &alt);
            n_elems++;
            if (codes[i] != want && codes[i] != alt)
                report("element", &p, rows, cols, i, x[i], codes[i], want);
            if (!ref_dequant_ok(&p, codes[i], sc[s], deq[i]))
                report("dequantize", &p, rows, cols, i, x[i], deq[i], 0);
        }
    }
    fprintf(stderr, "fp8scale: %ld scales, %ld elements, %ld undecided, %ld failures\n", n_scales, n_elems,
            n_undecided, n_failed);
    ck_assert_int_eq(n_undecided, 0);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_hard_products)
{
    /* x = RN64(m / S) with m an e4m3 midpoint and S a float32 with a full
     * significand: x * S is within binary64's half ulp of m, so a product
     * rounded to binary64 first would be the tie m itself. */
    const qf_format *e4 = qf_format_get(QF_FLOAT8_E4M3FN);
    qf_block_fp8_params p = qf_block_fp8_params_default();
    long it, iters = qf_test_iters(20000);
    rng_state = qf_test_seed() * 19 + 7;
    n_failed = n_hard = 0;
    for (it = 0; it < iters; it++) {
        uint32_t sc = 0x3F800000u | (uint32_t)(qf_test_splitmix(&rng_state) & 0x7FFFFF);
        uint64_t k = 0x08 + qf_test_splitmix(&rng_state) % (0x7D - 0x08); /* normal codes below max */
        double S = f32_of(sc), m = (qf_format_decode(e4, k) + qf_format_decode(e4, k + 1)) / 2, x = m / S;
        uint8_t code, alt, want;
        mpfr_t y;
        mpfr_init2(y, 128);
        mpfr_set_d(y, x, MPFR_RNDN);
        mpfr_mul_d(y, y, S, MPFR_RNDN);
        if (x * S == m && mpfr_cmp_d(y, m) != 0)
            n_hard++;
        mpfr_clear(y);
        ck_assert_int_eq(qf_block_fp8_scale_encode(&p, &x, 1, 1, &sc, &code), QF_OK);
        want = ref_elem(&p, x, S, &alt);
        if (code != want)
            report("hard product", &p, 1, 1, 0, x, code, want);
    }
    fprintf(stderr, "fp8scale hard products: %ld of %ld round to the binary64 midpoint; %ld failures\n",
            n_hard, iters, n_failed);
    ck_assert(n_hard > iters / 10);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_hard_scales)
{
    /* amax = RN64(448 / m) with m a float32 midpoint: 448 / amax lies within
     * binary64's half ulp of m, so only the exact quotient decides S. */
    qf_block_fp8_params p = qf_block_fp8_params_default();
    long it, iters = qf_test_iters(5000), hard = 0;
    rng_state = qf_test_seed() * 23 + 11;
    n_failed = 0;
    for (it = 0; it < iters; it++) {
        double m = ldexp((double)((0x800000u | (qf_test_splitmix(&rng_state) & 0x7FFFFF)) * 2 + 1),
                         -24 + (int)(qf_test_splitmix(&rng_state) % 20) - 10);
        double amax = 448.0 / m, S;
        uint32_t sc, want;
        if (448.0 / amax == m)
            hard++;
        p.margin = (int)(qf_test_splitmix(&rng_state) % 3);
        ck_assert_int_eq(qf_block_fp8_scale_from_amax(&p, amax, &sc, &S), QF_OK);
        want = ref_scale(&p, amax);
        if (sc != want)
            report("hard scale", &p, 1, 1, 0, amax, f32_of(sc), f32_of(want));
    }
    fprintf(stderr, "fp8scale hard scales: %ld of %ld divide to the binary64 midpoint; %ld failures\n", hard,
            iters, n_failed);
    ck_assert(hard > iters / 10);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_parts)
{
    /* The exact-parts helpers (_block.h) rounded into float32 and bfloat16
     * in every deterministic mode, against MPFR enclosures of the exact
     * quotient and product; operands with 53-bit significands, their
     * results often next to a rounding boundary of the target. */
    static const qf_round modes[] = {QF_ROUND_RNE, QF_ROUND_RNA, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    const qf_format *fs[2];
    long it, iters = qf_test_iters(20000);
    mpfr_t lo, hi, a, b;
    fs[0] = F32;
    fs[1] = qf_format_get(QF_BFLOAT16);
    rng_state = qf_test_seed() * 29 + 13;
    n_failed = 0;
    mpfr_inits2(256, lo, hi, a, b, (mpfr_ptr)0);
    for (it = 0; it < iters; it++) {
        const qf_format *f = fs[it & 1];
        qf_round r = modes[qf_test_splitmix(&rng_state) % 5];
        double x, y, t;
        _qf_parts pq, pp;
        uint64_t want, got;
        y = ((qf_test_splitmix(&rng_state) & 1) ? -1 : 1) *
            ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 40) - 20);
        /* x near t * y for a target value or midpoint t */
        t = ldexp((double)(qf_test_splitmix(&rng_state) % (1u << (f->man_bits + 2))) +
                      (1u << (f->man_bits + 2)),
                  -(f->man_bits + 2));
        if (qf_test_splitmix(&rng_state) % 4 == 0)
            t = ldexp(1.0, (int)(qf_test_splitmix(&rng_state) % 5) - 2); /* the binade edge */
        t *= (qf_test_splitmix(&rng_state) & 1) ? -1 : 1;
        x = t * y;
        if (qf_test_splitmix(&rng_state) & 1)
            x = nextafter(x, (qf_test_splitmix(&rng_state) & 1) ? INFINITY : -INFINITY);
        if (qf_test_splitmix(&rng_state) % 8 == 0)
            x = ldexp(qf_test_unif01(&rng_state) - 0.5, (int)(qf_test_splitmix(&rng_state) % 60) - 30);
        mpfr_set_d(a, x, MPFR_RNDN);
        mpfr_set_d(b, y, MPFR_RNDN);
        _qf_parts_of_quotient(x, y, &pq);
        mpfr_div(lo, a, b, MPFR_RNDD);
        mpfr_div(hi, a, b, MPFR_RNDU);
        ck_assert(qf_format_encode_interval(f, lo, hi, r, 0, &want));
        got = _qf_parts_encode(f, &pq, r, 0, 0, 0);
        if (got != want)
            report_parts("parts quotient", f, r, x, y, got, want);
        /* product x * (1 / t-ish): x * y' with y' = 1 / y rounded */
        _qf_parts_of_product(x, 1.0 / y, &pp);
        mpfr_set_d(b, 1.0 / y, MPFR_RNDN);
        mpfr_mul(lo, a, b, MPFR_RNDN); /* exact at 256 bits */
        want = qf_format_encode_mpfr(f, lo, r, 0, 0, 0);
        got = _qf_parts_encode(f, &pp, r, 0, 0, 0);
        if (got != want)
            report_parts("parts product", f, r, x, 1.0 / y, got, want);
    }
    mpfr_clears(lo, hi, a, b, (mpfr_ptr)0);
    fprintf(stderr, "fp8scale parts: %ld quotients and products; %ld failures\n", iters, n_failed);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_known)
{
    qf_block_fp8_params p = qf_block_fp8_params_default();
    double x[4] = {448, 1, -3, 0.5}, d[4], s;
    uint8_t c[4];
    uint32_t sc, sc2[2];
    /* amax 448: S = 1, the plain e4m3 codes */
    ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, x, 1, 4, c, &sc, &s), QF_OK);
    ck_assert_uint_eq(sc, 0x3F800000u);
    ck_assert_uint_eq(c[0], 0x7E);
    ck_assert_uint_eq(c[1], 0x38);
    ck_assert_uint_eq(c[2], 0xC4);
    ck_assert_uint_eq(c[3], 0x30);
    ck_assert_int_eq(qf_block_fp8_scale_dequantize(&p, c, &sc, 1, 4, d), QF_OK);
    ck_assert(d[0] == 448 && d[2] == -3);
    /* amax 1: S = 448; margin 1: 224; pow2 on 448 / 3 = 149.33: 128 */
    ck_assert_int_eq(qf_block_fp8_scale_from_amax(&p, 1.0, &sc, &s), QF_OK);
    ck_assert(s == 448);
    p.margin = 1;
    ck_assert_int_eq(qf_block_fp8_scale_from_amax(&p, 1.0, &sc, &s), QF_OK);
    ck_assert(s == 224);
    p.margin = 0;
    p.pow2 = 1;
    ck_assert_int_eq(qf_block_fp8_scale_from_amax(&p, 3.0, &sc, &s), QF_OK);
    ck_assert(s == 128);
    p.pow2 = 0;
    /* fallbacks: 0, NaN, Inf -> 1; overflow -> FLT_MAX; underflow -> 2^-149 */
    qf_block_fp8_scale_from_amax(&p, 0.0, &sc, &s);
    ck_assert_uint_eq(sc, 0x3F800000u);
    qf_block_fp8_scale_from_amax(&p, NAN, &sc, &s);
    ck_assert_uint_eq(sc, 0x3F800000u);
    qf_block_fp8_scale_from_amax(&p, INFINITY, &sc, &s);
    ck_assert_uint_eq(sc, 0x3F800000u);
    qf_block_fp8_scale_from_amax(&p, 1e-45, &sc, &s);
    ck_assert_uint_eq(sc, 0x7F7FFFFFu);
    qf_block_fp8_scale_from_amax(&p, 1e300, &sc, &s);
    ck_assert_uint_eq(sc, 1u);
    p.amax_epsilon = 1.0;
    qf_block_fp8_scale_from_amax(&p, 0.0, &sc, &s);
    ck_assert(s == 448);
    p.amax_epsilon = 0;
    /* scale_inv of 448: RN32(1 / 448) = 2^-9 * 8/7 rounded */
    ck_assert_uint_eq(qf_block_fp8_scale_inv(0x43E00000u),
                      (uint32_t)qf_format_encode(F32, 1.0 / 448, QF_ROUND_RNE, 0, 0, 0));
    /* per-row: a NaN row falls back to S = 1 and keeps its NaN; an Inf
     * saturates (e4m3 saturating) or becomes NaN (e4m3 has no Inf) */
    {
        double y[4] = {NAN, 2, INFINITY, 1};
        uint8_t cy[4];
        p.granularity = QF_BLOCK_FP8_ROW;
        ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, y, 2, 2, cy, sc2, NULL), QF_OK);
        ck_assert_uint_eq(sc2[0], 0x3F800000u);
        ck_assert_uint_eq(sc2[1], 0x3F800000u);
        ck_assert(qf_format_is_nan(qf_format_get(QF_FLOAT8_E4M3FN), cy[0]));
        ck_assert_uint_eq(cy[2], 0x7E);
        p.saturate = 0;
        ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, y, 2, 2, cy, sc2, NULL), QF_OK);
        ck_assert_uint_eq(cy[2], 0x7F);
        p.elem = QF_FLOAT8_E5M2;
        ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, y, 2, 2, cy, sc2, NULL), QF_OK);
        ck_assert_uint_eq(cy[2], 0x7C);
    }
}
END_TEST

START_TEST(test_invalid)
{
    qf_block_fp8_params p = qf_block_fp8_params_default();
    double x[4] = {1, 2, 3, 4};
    uint8_t c[4];
    uint32_t s[4];
    p.elem = QF_FLOAT16;
    ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, x, 1, 4, c, s, NULL), QF_EINVAL);
    p = qf_block_fp8_params_default();
    p.granularity = (qf_block_fp8_granularity)7;
    ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, x, 1, 4, c, s, NULL), QF_EINVAL);
    p = qf_block_fp8_params_default();
    ck_assert_int_eq(qf_block_fp8_scale_quantize(&p, x, 1, 4, NULL, s, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_block_fp8_scale_from_amax(&p, 1.0, NULL, NULL), QF_EINVAL);
    p.round = QF_ROUND_CEIL;
    ck_assert_int_eq(qf_block_fp8_scale_encode(&p, x, 1, 4, s, c), QF_EINVAL);
}
END_TEST

int main(void)
{
    F32 = qf_format_get(QF_FLOAT32);
    return qf_test_main(
        "precision/fp8scale", "core", 600, NULL, NULL,
        QF_TESTS(test_sweep, test_hard_products, test_hard_scales, test_parts, test_known, test_invalid));
}
