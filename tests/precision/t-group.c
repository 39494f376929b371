/* t-group.c: group-wise integer quantization (qf_block_group_*) against an
 * MPFR reference written from the definition:
 *   symmetric   s = RN_sf(amax / qmax), q = clamp(round(v / s), -qmax, qmax)
 *   asymmetric  s = RN_sf((max - min) / (qmax - qmin)) with [min, max]
 *               widened to hold 0 (unless include_zero is 0),
 *               zp = clamp(qmin - rint(min / s), qmin, qmax),
 *               q = clamp(round(v / s) + zp, qmin, qmax)
 * with s raised to the smallest allowed scale; max - min is computed
 * exactly in MPFR (2200 bits), every quotient is enclosed at 256 bits and
 * rounded only when decided.  Dequantize must be (q - zp) * s exactly.
 *
 * Error bound (nearest-even elements, [min, max] holding 0), derived in
 * docs/block.md: with s_exact the unrounded scale and k = qmax - qmin,
 *   symmetric   |v - deq| <= max(s/2, qmax (s_exact - s))
 *   asymmetric  |v - deq| <= s/2 + k max(0, s_exact - s)
 * and so, when s_exact is a normal number of the scale format (unit
 * roundoff u = 2^-11 fp16, 2^-8 bf16), |v - deq| <= s/2 + R u with
 * R = amax (symmetric) or max - min (asymmetric): half a quantization step
 * plus the effect of rounding the scale.  Both are checked.
 *
 * Sweep: int4/int8 symmetric, int4/int8/uint4/uint8 asymmetric, groups of
 * 32/64/128 with tail groups, both axes, fp16 and bf16 scales, every
 * element rounding mode.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "qf_block.h"
#include "qf_format_mpfr.h"
#include "qf_test.h"

#define MAX_REPORT 10
#define MAXN       1200

static long n_failed, n_groups, n_elems, n_undecided;
static uint64_t rng_state;

static void report(const char *what, const qf_block_group_params *p, size_t rows, size_t cols, size_t idx,
                   double v, double got, double want)
{
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(stderr,
            "FAIL %s group elem=%s scale=%s group=%zu axis=%d symmetric=%d include_zero=%d round=%s "
            "shape=%zux%zu index=%zu x=%a: got %a expected %a [reproduce: QF_SEED=%" PRIu64
            " t-precision-group]\n",
            what, qf_format_get(p->elem)->name, qf_format_get(p->scale_format)->name, p->group, p->axis,
            p->symmetric, p->include_zero, qf_round_name(p->round), rows, cols, idx, v, got, want,
            qf_test_seed());
}

static mpfr_rnd_t mpfr_mode(qf_round r)
{
    switch (r) {
    case QF_ROUND_RTZ: return MPFR_RNDZ;
    case QF_ROUND_UP: return MPFR_RNDU;
    case QF_ROUND_DOWN: return MPFR_RNDD;
    default: return MPFR_RNDN;
    }
}

/* round(a / s) in mode r from an enclosure; stochastic: *alt is the
 * other neighbour.  Values are clamped to +-10^6 (beyond every range). */
static long ref_round_div(double a, double s, qf_round r, long *alt)
{
    mpfr_t lo, hi, t;
    long k1, k2;
    mpfr_inits2(256, lo, hi, t, (mpfr_ptr)0);
    mpfr_set_d(t, a, MPFR_RNDN);
    mpfr_div_d(lo, t, s, MPFR_RNDD);
    mpfr_div_d(hi, t, s, MPFR_RNDU);
    if (mpfr_cmp_si(hi, 1000000) > 0)
        mpfr_set_si(lo, 1000000, MPFR_RNDN), mpfr_set_si(hi, 1000000, MPFR_RNDN);
    if (mpfr_cmp_si(lo, -1000000) < 0)
        mpfr_set_si(lo, -1000000, MPFR_RNDN), mpfr_set_si(hi, -1000000, MPFR_RNDN);
    if (r == QF_ROUND_STOCHASTIC) {
        mpfr_floor(t, lo);
        k1 = mpfr_get_si(t, MPFR_RNDN);
        mpfr_ceil(t, hi);
        k2 = mpfr_get_si(t, MPFR_RNDN);
        mpfr_clears(lo, hi, t, (mpfr_ptr)0);
        *alt = k2;
        return k1;
    }
    if (r == QF_ROUND_RNA) {
        mpfr_round(lo, lo);
        mpfr_round(hi, hi);
    } else {
        mpfr_rint(lo, lo, mpfr_mode(r));
        mpfr_rint(hi, hi, mpfr_mode(r));
    }
    if (mpfr_cmp(lo, hi) != 0)
        n_undecided++;
    k1 = mpfr_get_si(lo, MPFR_RNDN);
    mpfr_clears(lo, hi, t, (mpfr_ptr)0);
    *alt = k1;
    return k1;
}

/* The scale code: RN_sf(exact), saturating, raised to the smallest scale.
 * exact = amax / qmax, or (mx - mn) / k.  *s_exact: the exact scale to
 * double precision, rounded up (for the error bounds). */
static uint64_t ref_scale(const qf_block_group_params *p, double a, double b, long k, double *s_exact)
{
    const qf_format *sf = qf_format_get(p->scale_format);
    mpfr_t d, lo, hi;
    uint64_t c = 0, cmin;
    mpfr_init2(d, 2200);
    mpfr_inits2(2300, lo, hi, (mpfr_ptr)0);
    mpfr_set_d(d, a, MPFR_RNDN);
    mpfr_sub_d(d, d, b, MPFR_RNDN); /* exact at 2200 bits */
    mpfr_div_si(lo, d, k, MPFR_RNDD);
    mpfr_div_si(hi, d, k, MPFR_RNDU);
    if (!qf_format_encode_interval(sf, lo, hi, QF_ROUND_RNE, 1, &c))
        n_undecided++;
    *s_exact = mpfr_get_d(hi, MPFR_RNDU);
    mpfr_clears(d, lo, hi, (mpfr_ptr)0);
    cmin = p->scale_min > 0 ? qf_format_encode(sf, p->scale_min, QF_ROUND_UP, 1, 0, 0)
                            : 1; /* code 1: min subnormal */
    if (qf_format_decode(sf, c) < qf_format_decode(sf, cmin))
        c = cmin;
    return c;
}

enum { D_NORMAL, D_WIDE, D_TINY, D_POSITIVE, D_CONST, D_KINDS };

static void fill(int kind, double *x, size_t rows, size_t cols)
{
    size_t i, n = rows * cols;
    int base = (int)(qf_test_splitmix(&rng_state) % 20) - 10;
    double c = ldexp(1.0 + qf_test_unif01(&rng_state), base);
    for (i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case D_NORMAL:
            v = (qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) - 1.5) *
                ldexp(1.0, base);
            break;
        case D_WIDE:
            v = ((qf_test_splitmix(&rng_state) & 1) ? -1 : 1) *
                ldexp(qf_test_unif01(&rng_state), base + (int)(qf_test_splitmix(&rng_state) % 24) - 12);
            break;
        case D_TINY: /* scales in and below fp16's subnormal range */
            v = ((qf_test_splitmix(&rng_state) & 1) ? -1 : 1) *
                ldexp(qf_test_unif01(&rng_state), -18 - (int)(qf_test_splitmix(&rng_state) % 16));
            break;
        case D_POSITIVE: v = c + ldexp(qf_test_unif01(&rng_state), base - 3); break;
        default: v = c; break;
        }
        if (kind != D_WIDE)
            v = (double)(float)v;
        if (kind != D_CONST && kind != D_POSITIVE && qf_test_splitmix(&rng_state) % 31 == 0)
            v = 0;
        x[i] = v;
    }
}

static void sweep_case(const qf_block_group_params *p, int kind, size_t rows, size_t cols)
{
    static double x[MAXN], deq[MAXN], sv[MAXN];
    static uint8_t codes[MAXN];
    static uint16_t sc[MAXN];
    static int16_t zp[MAXN];
    const qf_format *ef = qf_format_get(p->elem), *sf = qf_format_get(p->scale_format);
    size_t G = p->group, nb, r0, c0, i;
    long qmax = (long)ef->int_max, qmin = p->symmetric ? -qmax : (long)ef->int_min, k = qmax - qmin;
    double u = p->scale_format == QF_FLOAT16 ? 0x1p-11 : 0x1p-8;
    fill(kind, x, rows, cols);
    ck_assert_int_eq(qf_block_group_quantize(p, x, rows, cols, codes, sc, sv, zp), QF_OK);
    ck_assert_int_eq(qf_block_group_dequantize(p, codes, sc, zp, rows, cols, deq), QF_OK);
    nb = p->axis == 1 ? (cols + G - 1) / G : (rows + G - 1) / G;
    ck_assert_uint_eq(qf_block_scale_count(rows, cols, p->axis, G), p->axis == 1 ? rows * nb : nb * cols);
    for (r0 = 0; r0 < (p->axis == 1 ? rows : nb); r0++)
        for (c0 = 0; c0 < (p->axis == 1 ? nb : cols); c0++) {
            size_t si = r0 * (p->axis == 1 ? nb : cols) + c0, len = 0, idx[128];
            double mn = INFINITY, mx = -INFINITY, amax = 0, s, s_exact, range;
            uint64_t wsc;
            long wzp = 0;
            for (i = 0; i < G; i++) {
                size_t r = p->axis == 1 ? r0 : r0 * G + i, c = p->axis == 1 ? c0 * G + i : c0;
                if (r >= rows || c >= cols)
                    break;
                idx[len++] = r * cols + c;
            }
            for (i = 0; i < len; i++) {
                double v = x[idx[i]];
                mn = fmin(mn, v);
                mx = fmax(mx, v);
                amax = fmax(amax, fabs(v));
            }
            if (p->symmetric) {
                wsc = ref_scale(p, amax, 0.0, qmax, &s_exact);
                range = amax;
            } else {
                if (p->include_zero) {
                    mn = fmin(mn, 0.0);
                    mx = fmax(mx, 0.0);
                }
                wsc = ref_scale(p, mx, mn, k, &s_exact);
                range = mx - mn;
            }
            s = qf_format_decode(sf, wsc);
            if (!p->symmetric) {
                long dummy;
                wzp = qmin - ref_round_div(mn, s, QF_ROUND_RNE, &dummy);
                wzp = wzp < qmin ? qmin : wzp > qmax ? qmax : wzp;
            }
            n_groups++;
            if (sc[si] != wsc || sv[si] != s)
                report("scale", p, rows, cols, si, amax, sv[si], s);
            if (!p->symmetric && zp[si] != wzp)
                report("zero point", p, rows, cols, si, mn, zp[si], (double)wzp);
            for (i = 0; i < len; i++) {
                size_t j = idx[i];
                long alt, q = ref_round_div(x[j], s, p->round, &alt), got;
                double err;
                mpfr_t y;
                q += wzp;
                alt += wzp;
                q = q < qmin ? qmin : q > qmax ? qmax : q;
                alt = alt < qmin ? qmin : alt > qmax ? qmax : alt;
                n_elems++;
                got = (long)qf_format_decode(ef, codes[j]);
                if (got != q && got != alt)
                    report("element", p, rows, cols, j, x[j], (double)got, (double)q);
                /* dequantize: (q - zp) * s exactly */
                mpfr_init2(y, 128);
                mpfr_set_si(y, got - wzp, MPFR_RNDN);
                mpfr_mul_d(y, y, s, MPFR_RNDN);
                if (mpfr_cmp_d(y, deq[j]) != 0)
                    report("dequantize", p, rows, cols, j, x[j], deq[j], mpfr_get_d(y, MPFR_RNDN));
                mpfr_clear(y);
                if (p->round != QF_ROUND_RNE || (!p->symmetric && !p->include_zero))
                    continue;
                /* the error bounds (double arithmetic, 2^-40 relative slack
                 * for its own roundings) */
                err = fabs(x[j] - deq[j]);
                {
                    double tight = p->symmetric ? fmax(s / 2, (double)qmax * (s_exact - s))
                                                : s / 2 + (double)k * fmax(0.0, s_exact - s);
                    if (err > tight * (1 + 0x1p-40))
                        report("error bound", p, rows, cols, j, x[j], err, tight);
                    if (s_exact >= sf->min_normal && s_exact <= sf->max &&
                        err > (s / 2 + range * u) * (1 + 0x1p-40))
                        report("a priori bound", p, rows, cols, j, x[j], err, s / 2 + range * u);
                }
            }
        }
}

START_TEST(test_sweep)
{
    static const qf_format_id sym_elems[] = {QF_INT4, QF_INT8};
    static const qf_format_id asym_elems[] = {QF_INT4, QF_INT8, QF_UINT4, QF_UINT8};
    static const size_t groups[] = {32, 64, 128};
    static const qf_round rounds[] = {QF_ROUND_RNE, QF_ROUND_RNE, QF_ROUND_RNE,  QF_ROUND_RNA,
                                      QF_ROUND_RTZ, QF_ROUND_UP,  QF_ROUND_DOWN, QF_ROUND_STOCHASTIC};
    long it, iters = qf_test_iters(2000);
    rng_state = qf_test_seed() * 13 + 5;
    n_failed = n_groups = n_elems = n_undecided = 0;
    for (it = 0; it < iters; it++) {
        qf_block_group_params p = qf_block_group_params_default();
        size_t rows, cols;
        p.symmetric = (int)(it & 1);
        p.elem = p.symmetric ? sym_elems[qf_test_splitmix(&rng_state) % 2]
                             : asym_elems[qf_test_splitmix(&rng_state) % 4];
        p.group = groups[qf_test_splitmix(&rng_state) % 3];
        p.axis = (int)((it >> 1) & 1);
        p.scale_format = (it >> 2) & 1 ? QF_BFLOAT16 : QF_FLOAT16;
        p.include_zero = qf_test_splitmix(&rng_state) % 6 != 0;
        p.round = rounds[qf_test_splitmix(&rng_state) % 8];
        p.seed = qf_test_splitmix(&rng_state);
        if (qf_test_splitmix(&rng_state) % 8 == 0)
            p.scale_min = 1e-5; /* AWQ's clamp, not an fp16 value: rounded up */
        /* up to ~3 groups along the axis, with a tail */
        if (p.axis == 1) {
            rows = 1 + qf_test_splitmix(&rng_state) % 3;
            cols = 1 + qf_test_splitmix(&rng_state) % (3 * p.group);
        } else {
            rows = 1 + qf_test_splitmix(&rng_state) % (3 * p.group);
            cols = 1 + qf_test_splitmix(&rng_state) % 3;
        }
        if (rows * cols > MAXN)
            rows = MAXN / cols;
        sweep_case(&p, (int)((it >> 3) % D_KINDS), rows, cols);
    }
    fprintf(stderr, "group: %ld groups, %ld elements, %ld undecided, %ld failures\n", n_groups, n_elems,
            n_undecided, n_failed);
    ck_assert_int_eq(n_undecided, 0);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_known)
{
    qf_block_group_params p = qf_block_group_params_default();
    double x[6] = {7, -3.5, 1, 0.49, -7, 2.5}, d[6], s;
    uint8_t c[6];
    uint16_t sc;
    int16_t zp = 99;
    int i;
    /* int4 symmetric: amax 7 -> s = 1; -3.5 and 2.5 are ties to even */
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 6, c, &sc, &s, &zp), QF_OK);
    ck_assert(s == 1.0);
    ck_assert_uint_eq(sc, 0x3C00);
    ck_assert_int_eq(zp, 0);
    ck_assert_uint_eq(c[0], 0x7);
    ck_assert_uint_eq(c[1], 0xC); /* -4 */
    ck_assert_uint_eq(c[2], 0x1);
    ck_assert_uint_eq(c[3], 0x0);
    ck_assert_uint_eq(c[4], 0x9); /* -7 */
    ck_assert_uint_eq(c[5], 0x2);
    ck_assert_int_eq(qf_block_group_dequantize(&p, c, &sc, NULL, 1, 6, d), QF_OK);
    ck_assert(d[1] == -4 && d[5] == 2);
    /* uint4 asymmetric on [-1, 14]: s = 15 / 15 = 1, zp = 0 - rint(-1) = 1 */
    p.elem = QF_UINT4;
    p.symmetric = 0;
    x[0] = -1;
    x[1] = 14;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 2, c, &sc, &s, &zp), QF_OK);
    ck_assert(s == 1.0);
    ck_assert_int_eq(zp, 1);
    ck_assert_uint_eq(c[0], 0);
    ck_assert_uint_eq(c[1], 15);
    /* all positive [2, 3.5] with include_zero: range [0, 3.5], s = 3.5/15
     * rounded to fp16, zp = 0; without it: range [2, 3.5], s = 0.1, zp =
     * -rint(2 / s) = -20 clamped to 0 */
    x[0] = 2;
    x[1] = 3.5;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 2, c, &sc, &s, &zp), QF_OK);
    ck_assert_int_eq(zp, 0);
    ck_assert_uint_eq(sc, qf_format_encode(qf_format_get(QF_FLOAT16), 3.5 / 15, QF_ROUND_RNE, 0, 0, 0));
    /* Hard cases for max - min: binary64 rounds 15 m + 2^-70 to 15 m, whose
     * quotient by 15 is the fp16 midpoint m = 1 + 2^-11 exactly (a tie, to
     * even: 1.0); the exact scale is just above m: 1 + 2^-10 (0x3C01). */
    p.elem = QF_INT4;
    x[0] = 15 * (1 + 0x1p-11);
    x[1] = -0x1p-70;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 2, c, &sc, &s, &zp), QF_OK);
    ck_assert_uint_eq(sc, 0x3C01);
    /* and just below the midpoint 1 + 3 * 2^-11 (the tie would go up to
     * even 1 + 2^-9): 1 + 2^-10 */
    p.include_zero = 0;
    x[0] = 15 * (1 + 3 * 0x1p-11);
    x[1] = 0x1p-70;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 2, c, &sc, &s, &zp), QF_OK);
    ck_assert_uint_eq(sc, 0x3C01);
    /* a zero group: the smallest scale (fp16 2^-24), codes 0 (sym) */
    p = qf_block_group_params_default();
    for (i = 0; i < 6; i++)
        x[i] = 0;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 6, c, &sc, &s, NULL), QF_OK);
    ck_assert_uint_eq(sc, 0x0001);
    ck_assert(s == 0x1p-24);
    for (i = 0; i < 6; i++)
        ck_assert_uint_eq(c[i], 0);
    /* a NaN group: NaN scale, NaN on dequantize */
    x[2] = NAN;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 6, c, &sc, &s, NULL), QF_OK);
    ck_assert(isnan(s));
    ck_assert_int_eq(qf_block_group_dequantize(&p, c, &sc, NULL, 1, 6, d), QF_OK);
    for (i = 0; i < 6; i++)
        ck_assert(isnan(d[i]));
    /* bf16 scale: amax 1 / 7 -> bf16 0x3E12 (0.142578125) */
    p.scale_format = QF_BFLOAT16;
    x[0] = 1;
    x[2] = 0;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 6, c, &sc, &s, NULL), QF_OK);
    ck_assert_uint_eq(sc, 0x3E12);
    ck_assert_uint_eq(c[0], 7);
}
END_TEST

START_TEST(test_invalid)
{
    qf_block_group_params p = qf_block_group_params_default();
    double x[4] = {1, 2, 3, 4};
    uint8_t c[4];
    uint16_t s[4];
    int16_t z[4];
    p.elem = QF_UINT4; /* symmetric unsigned */
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 4, c, s, NULL, z), QF_EINVAL);
    p = qf_block_group_params_default();
    p.scale_format = QF_FLOAT32;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 4, c, s, NULL, z), QF_EINVAL);
    p = qf_block_group_params_default();
    p.symmetric = 0;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 4, c, s, NULL, NULL), QF_EINVAL);
    p = qf_block_group_params_default();
    p.group = 0;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 4, c, s, NULL, z), QF_EINVAL);
    p = qf_block_group_params_default();
    p.elem = QF_FLOAT8_E4M3FN;
    ck_assert_int_eq(qf_block_group_quantize(&p, x, 1, 4, c, s, NULL, z), QF_EINVAL);
}
END_TEST

int main(void)
{
    return qf_test_main("precision/group", "core", 600, NULL, NULL,
                        QF_TESTS(test_sweep, test_known, test_invalid));
}
