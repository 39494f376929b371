/* t-nvfp4.c: NVFP4 quantization (qf_block_nvfp4_*) against an MPFR
 * reference written from the definition (docs/numerics.md#block-scaled-formats):
 *   ts = RN32(tensor_amax / (448 * 6)) (1.0 without a tensor scale or for
 *        an all-zero tensor),
 *   s  = (block_amax / 6) / ts clamped to [scale_min, 448], then rounded
 *        into E4M3 in the scale rounding mode (nearest-even or up),
 *   q  = v / (s * ts) rounded into E2M1, saturating,
 * every quotient enclosed by MPFR at 256 bits and rounded only when the
 * enclosure decides it.  Dequantize must equal q * s * ts exactly.
 *
 * Data: normal, wide dynamic range across blocks, subnormal-heavy, random
 * shapes with tail blocks, both axes, with and without the tensor scale
 * (from the data or a given amax), scale rounding rne / up / rtz, element
 * rounding in every mode; specials (NaN/Inf blocks, zero blocks, a zero
 * tensor, the scale clamps) and a hand-computed example.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "qf_block.h"
#include "qf_format_mpfr.h"
#include "qf_test.h"

#define MAX_REPORT 10
#define MAXN       600

static long n_failed, n_blocks, n_elems, n_undecided;
static uint64_t rng_state;

static const qf_format *E4M3, *E2M1, *F32;

static void report(const char *what, const qf_block_nvfp4_params *p, size_t rows, size_t cols, size_t idx,
                   double v, double got, double want)
{
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(stderr,
            "FAIL %s nvfp4 shape=%zux%zu block=%zu axis=%d tensor_scale=%d tensor_amax=%a scale_round=%s "
            "round=%s index=%zu x=%a: got %a expected %a [reproduce: QF_SEED=%" PRIu64
            " t-precision-nvfp4]\n",
            what, rows, cols, p->block, p->axis, p->tensor_scale, p->tensor_amax,
            qf_round_name(p->scale_round), qf_round_name(p->round), idx, v, got, want, qf_test_seed());
}

static double f32_of(uint32_t c)
{
    float f;
    memcpy(&f, &c, 4);
    return f;
}

/* RN32(a / 2688), saturating */
static uint32_t ref_tensor_scale(double amax)
{
    mpfr_t lo, hi;
    uint64_t c;
    if (amax == 0)
        return 0x3F800000u;
    mpfr_inits2(256, lo, hi, (mpfr_ptr)0);
    mpfr_set_d(lo, amax, MPFR_RNDN);
    mpfr_div_ui(hi, lo, 2688, MPFR_RNDU);
    mpfr_div_ui(lo, lo, 2688, MPFR_RNDD);
    ck_assert(qf_format_encode_interval(F32, lo, hi, QF_ROUND_RNE, 1, &c));
    mpfr_clears(lo, hi, (mpfr_ptr)0);
    return c == 0 ? 1u : (uint32_t)c;
}

/* The E4M3 block scale code. */
static uint8_t ref_block_scale(const qf_block_nvfp4_params *p, double amax, double ts)
{
    mpfr_t a, b, lo, hi;
    uint64_t c = 0;
    mpfr_inits2(256, a, b, lo, hi, (mpfr_ptr)0);
    mpfr_set_d(a, amax, MPFR_RNDN);
    mpfr_set_d(b, ts, MPFR_RNDN);
    mpfr_mul_ui(b, b, 6, MPFR_RNDN); /* exact */
    /* clamp first, comparing exactly: amax vs bound * 6 ts */
    mpfr_set_d(lo, p->scale_min, MPFR_RNDN);
    mpfr_mul(lo, lo, b, MPFR_RNDN); /* exact at 256 bits */
    mpfr_set_d(hi, 448.0, MPFR_RNDN);
    mpfr_mul(hi, hi, b, MPFR_RNDN);
    if (mpfr_cmp(a, lo) < 0)
        c = qf_format_encode(E4M3, p->scale_min, QF_ROUND_RNE, 0, 0, 0);
    else if (mpfr_cmp(a, hi) > 0)
        c = 0x7E;
    else {
        mpfr_div(lo, a, b, MPFR_RNDD);
        mpfr_div(hi, a, b, MPFR_RNDU);
        if (!qf_format_encode_interval(E4M3, lo, hi, p->scale_round, 1, &c))
            n_undecided++;
    }
    mpfr_clears(a, b, lo, hi, (mpfr_ptr)0);
    return (uint8_t)c;
}

/* The E2M1 code of v / d; *alt: the other neighbour for stochastic. */
static uint8_t ref_elem(const qf_block_nvfp4_params *p, double v, double d, uint8_t *alt)
{
    mpfr_t a, lo, hi;
    uint64_t c = 0, c2;
    mpfr_inits2(256, a, lo, hi, (mpfr_ptr)0);
    mpfr_set_d(a, v, MPFR_RNDN);
    mpfr_div_d(lo, a, d, MPFR_RNDD);
    mpfr_div_d(hi, a, d, MPFR_RNDU);
    if (p->round == QF_ROUND_STOCHASTIC) {
        mpfr_div_d(lo, a, d, MPFR_RNDZ);
        c = qf_format_encode_mpfr(E2M1, lo, QF_ROUND_RTZ, 1, 0, 0);
        c2 = qf_format_encode_mpfr(E2M1, lo, v < 0 ? QF_ROUND_DOWN : QF_ROUND_UP, 1, 0, 0);
    } else {
        if (!qf_format_encode_interval(E2M1, lo, hi, p->round, 1, &c))
            n_undecided++;
        c2 = c;
    }
    mpfr_clears(a, lo, hi, (mpfr_ptr)0);
    *alt = (uint8_t)c2;
    return (uint8_t)c;
}

/* Is d exactly e2m1(code) * s * ts? */
static int ref_dequant_ok(uint8_t code, double s, double ts, double d)
{
    mpfr_t y;
    int ok;
    mpfr_init2(y, 256);
    mpfr_set_d(y, qf_format_decode(E2M1, code), MPFR_RNDN);
    mpfr_mul_d(y, y, s, MPFR_RNDN);
    mpfr_mul_d(y, y, ts, MPFR_RNDN);
    ok = mpfr_cmp_d(y, d) == 0;
    mpfr_clear(y);
    return ok;
}

static void fill(int kind, double *x, size_t rows, size_t cols)
{
    size_t i, n = rows * cols;
    int base = (int)(qf_test_splitmix(&rng_state) % 60) - 30;
    for (i = 0; i < n; i++) {
        double sg = (qf_test_splitmix(&rng_state) & 1) ? -1.0 : 1.0, v;
        switch (kind) {
        case 0:
            v = (qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) - 1.5) *
                ldexp(1.0, base / 3);
            break;
        case 1: /* each row (and so each block) at its own magnitude */
            v = sg * ldexp(0.5 + qf_test_unif01(&rng_state),
                           base + (int)((i / cols) * 7 % 40) - 20 + (int)(qf_test_splitmix(&rng_state) % 3));
            break;
        case 2:
            v = sg * ldexp(1.0 + qf_test_unif01(&rng_state),
                           base - (i % 5 == 0 ? 0 : 3 + (int)(qf_test_splitmix(&rng_state) % 12)));
            break;
        default:
            v = sg * ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 81) - 40);
            break;
        }
        if (kind != 3)
            v = (double)(float)v;
        if (qf_test_splitmix(&rng_state) % 29 == 0)
            v = 0;
        x[i] = v;
    }
}

START_TEST(test_sweep)
{
    static const qf_round srounds[] = {QF_ROUND_RNE, QF_ROUND_UP, QF_ROUND_RTZ};
    static const qf_round rounds[] = {QF_ROUND_RNE, QF_ROUND_RNE,  QF_ROUND_RNA,       QF_ROUND_RTZ,
                                      QF_ROUND_UP,  QF_ROUND_DOWN, QF_ROUND_STOCHASTIC};
    static const size_t blocks[] = {16, 16, 16, 32, 5};
    static double x[MAXN], deq[MAXN], sv[MAXN];
    static uint8_t codes[MAXN], sc[MAXN];
    long it, iters = qf_test_iters(1500);
    rng_state = qf_test_seed() * 7 + 1;
    n_failed = n_blocks = n_elems = n_undecided = 0;
    for (it = 0; it < iters; it++) {
        qf_block_nvfp4_params p = qf_block_nvfp4_params_default();
        size_t rows = 1 + qf_test_splitmix(&rng_state) % 5, cols = 1 + qf_test_splitmix(&rng_state) % 110, B,
               nb, r0, c0, i;
        uint32_t tsc, want_tsc;
        double ts, tamax = 0;
        p.block = B = blocks[qf_test_splitmix(&rng_state) % 5];
        p.axis = (int)(qf_test_splitmix(&rng_state) & 1);
        p.tensor_scale = (int)(it % 3 != 0);
        if (p.tensor_scale && qf_test_splitmix(&rng_state) % 4 == 0)
            p.tensor_amax =
                ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 20) - 10);
        p.scale_round = srounds[qf_test_splitmix(&rng_state) % 3];
        p.round = rounds[qf_test_splitmix(&rng_state) % 7];
        if (qf_test_splitmix(&rng_state) % 5 == 0)
            p.scale_min = 0x1p-9; /* the smallest E4M3 subnormal */
        p.seed = qf_test_splitmix(&rng_state);
        fill((int)(it % 4), x, rows, cols);
        ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, rows, cols, codes, sc, sv, &tsc, &ts), QF_OK);
        ck_assert_int_eq(qf_block_nvfp4_dequantize(&p, codes, sc, tsc, rows, cols, deq), QF_OK);
        /* the tensor scale */
        if (p.tensor_scale) {
            tamax = p.tensor_amax;
            if (tamax == 0)
                for (i = 0; i < rows * cols; i++)
                    tamax = fmax(tamax, fabs(x[i]));
            want_tsc = ref_tensor_scale(tamax);
        } else {
            want_tsc = 0x3F800000u;
        }
        if (tsc != want_tsc || ts != f32_of(tsc))
            report("tensor scale", &p, rows, cols, 0, tamax, f32_of(tsc), f32_of(want_tsc));
        ts = f32_of(want_tsc);
        nb = p.axis == 1 ? (cols + B - 1) / B : (rows + B - 1) / B;
        for (r0 = 0; r0 < (p.axis == 1 ? rows : nb); r0++)
            for (c0 = 0; c0 < (p.axis == 1 ? nb : cols); c0++) {
                size_t si = r0 * (p.axis == 1 ? nb : cols) + c0, len = 0, idx[32];
                double amax = 0, s;
                uint8_t ws;
                for (i = 0; i < B; i++) {
                    size_t r = p.axis == 1 ? r0 : r0 * B + i, c = p.axis == 1 ? c0 * B + i : c0;
                    if (r >= rows || c >= cols)
                        break;
                    idx[len++] = r * cols + c;
                }
                for (i = 0; i < len; i++)
                    amax = fmax(amax, fabs(x[idx[i]]));
                ws = ref_block_scale(&p, amax, ts);
                s = qf_format_decode(E4M3, ws);
                n_blocks++;
                if (sc[si] != ws || sv[si] != s)
                    report("block scale", &p, rows, cols, si, amax, qf_format_decode(E4M3, sc[si]), s);
                for (i = 0; i < len; i++) {
                    size_t k = idx[i];
                    uint8_t alt, want = ref_elem(&p, x[k], s * ts, &alt);
                    n_elems++;
                    if (codes[k] != want && codes[k] != alt)
                        report("element", &p, rows, cols, k, x[k], qf_format_decode(E2M1, codes[k]),
                               qf_format_decode(E2M1, want));
                    if (!ref_dequant_ok(codes[k], s, ts, deq[k]))
                        report("dequantize", &p, rows, cols, k, x[k], deq[k], 0);
                    /* rounding the scale up keeps every element within +-6
                     * (no saturation) unless the scale clamped at 448 */
                    if (p.scale_round == QF_ROUND_UP && s < 448 &&
                        fabs(x[k]) / (s * ts) > 6.0 * (1 + 0x1p-50))
                        report("scale up saturates", &p, rows, cols, k, x[k], fabs(x[k]) / (s * ts), 6);
                }
            }
    }
    fprintf(stderr, "nvfp4: %ld blocks, %ld elements, %ld undecided, %ld failures\n", n_blocks, n_elems,
            n_undecided, n_failed);
    ck_assert_int_eq(n_undecided, 0);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

START_TEST(test_specials)
{
    qf_block_nvfp4_params p = qf_block_nvfp4_params_default();
    double x[64], d[64], sv[4], ts;
    uint8_t c[64], s[4];
    uint32_t tsc;
    int i;
    for (i = 0; i < 64; i++)
        x[i] = 0.25 * (i % 9) - 1;
    x[3] = NAN;       /* block 0 */
    x[20] = INFINITY; /* block 1 */
    for (i = 32; i < 48; i++)
        x[i] = 0; /* block 2: zero */
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 64, c, s, sv, &tsc, &ts), QF_OK);
    ck_assert_int_eq(qf_block_nvfp4_dequantize(&p, c, s, tsc, 1, 64, d), QF_OK);
    ck_assert_uint_eq(s[0], 0x7F);
    ck_assert_uint_eq(s[1], 0x7F);
    ck_assert_uint_eq(s[2], 0x08); /* zero block: the clamp, 2^-6 */
    ck_assert(sv[2] == 0x1p-6);
    for (i = 0; i < 32; i++)
        ck_assert(isnan(d[i]));
    for (i = 32; i < 48; i++)
        ck_assert(d[i] == 0);
    /* the tensor amax ignores NaN and Inf: max finite |x| = 1 */
    ck_assert_uint_eq(tsc, ref_tensor_scale(1.0));
    /* an all-zero tensor: tensor scale 1 */
    for (i = 0; i < 64; i++)
        x[i] = 0;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 64, c, s, NULL, &tsc, NULL), QF_OK);
    ck_assert_uint_eq(tsc, 0x3F800000u);
}
END_TEST

START_TEST(test_known)
{
    /* Without a tensor scale: amax 6 -> s = 1, codes are e2m1 codes:
     * 6 = 0x7, 3 = 0x5, -1.5 = 0xB, 0.5 = 0x1, 0.25 -> 0 (tie to even),
     * 0.75 -> 1 (tie to even), 5 -> 4 (tie to even), 7 -> 6 (saturates) */
    qf_block_nvfp4_params p = qf_block_nvfp4_params_default();
    double x[8] = {6, 3, -1.5, 0.5, 0.25, 0.75, 5, -6}, d[8], ts;
    uint8_t c[8], s;
    uint32_t tsc;
    p.tensor_scale = 0;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 8, c, &s, NULL, &tsc, &ts), QF_OK);
    ck_assert_uint_eq(s, 0x38); /* e4m3 1.0 */
    ck_assert(ts == 1.0);
    ck_assert_uint_eq(c[0], 0x7);
    ck_assert_uint_eq(c[1], 0x5);
    ck_assert_uint_eq(c[2], 0xB);
    ck_assert_uint_eq(c[3], 0x1);
    ck_assert_uint_eq(c[4], 0x0);
    ck_assert_uint_eq(c[5], 0x2);
    ck_assert_uint_eq(c[6], 0x6);
    ck_assert_uint_eq(c[7], 0xF);
    /* amax 12: s = 2, 3 -> 1.5 (0x3) */
    x[0] = 12;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 8, c, &s, NULL, &tsc, NULL), QF_OK);
    ck_assert(qf_format_decode(E4M3, s) == 2.0);
    ck_assert_uint_eq(c[1], 0x3);
    ck_assert_int_eq(qf_block_nvfp4_dequantize(&p, c, &s, tsc, 1, 8, d), QF_OK);
    ck_assert(d[0] == 12 && d[1] == 3);
    /* amax 6 * 1.05: s = 1.05 -> 1.0 (rne; the E4M3 midpoint is 1.0625,
     * and 6.3 then saturates to 6) or 1.125 (up) */
    x[0] = 6 * 1.05;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 8, c, &s, NULL, &tsc, NULL), QF_OK);
    ck_assert(qf_format_decode(E4M3, s) == 1.0);
    ck_assert_uint_eq(c[0], 0x7);
    p.scale_round = QF_ROUND_UP;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 8, c, &s, NULL, &tsc, NULL), QF_OK);
    ck_assert(qf_format_decode(E4M3, s) == 1.125);
    /* With the tensor scale: amax 6 -> ts = RN32(6 / 2688); s = 6 / (6 ts)
     * = 1 / ts ~ 448 -> 448; 6 / (448 ts) rounds back to 6. */
    p = qf_block_nvfp4_params_default();
    x[0] = 6;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 8, c, &s, NULL, &tsc, &ts), QF_OK);
    ck_assert_uint_eq(tsc, ref_tensor_scale(6.0));
    ck_assert_uint_eq(s, 0x7E);
    ck_assert_uint_eq(c[0], 0x7);
    /* a block far below the tensor amax clamps its scale at 2^-6 */
    {
        double y[32];
        uint8_t cy[32], sy[2];
        double svy[2];
        int i;
        for (i = 0; i < 32; i++)
            y[i] = i < 16 ? 1000.0 : 1e-6;
        ck_assert_int_eq(qf_block_nvfp4_quantize(&p, y, 1, 32, cy, sy, svy, &tsc, &ts), QF_OK);
        ck_assert(svy[1] == 0x1p-6);
        p.scale_min = 0x1p-9;
        ck_assert_int_eq(qf_block_nvfp4_quantize(&p, y, 1, 32, cy, sy, svy, &tsc, &ts), QF_OK);
        ck_assert(svy[1] == 0x1p-9);
    }
}
END_TEST

START_TEST(test_invalid)
{
    qf_block_nvfp4_params p = qf_block_nvfp4_params_default();
    double x[4] = {1, 2, 3, 4};
    uint8_t c[4], s[4];
    uint32_t t;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 4, NULL, s, NULL, &t, NULL), QF_EINVAL);
    p.scale_min = 0.3; /* not an E4M3 value */
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 4, c, s, NULL, &t, NULL), QF_EINVAL);
    p = qf_block_nvfp4_params_default();
    p.scale_round = QF_ROUND_STOCHASTIC;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 4, c, s, NULL, &t, NULL), QF_EINVAL);
    p = qf_block_nvfp4_params_default();
    p.block = 0;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 4, c, s, NULL, &t, NULL), QF_EINVAL);
    p = qf_block_nvfp4_params_default();
    p.tensor_amax = -1;
    ck_assert_int_eq(qf_block_nvfp4_quantize(&p, x, 1, 4, c, s, NULL, &t, NULL), QF_EINVAL);
}
END_TEST

int main(void)
{
    E4M3 = qf_format_get(QF_FLOAT8_E4M3FN);
    E2M1 = qf_format_get(QF_FLOAT4_E2M1FN);
    F32 = qf_format_get(QF_FLOAT32);
    return qf_test_main("precision/nvfp4", "core", 600, NULL, NULL,
                        QF_TESTS(test_sweep, test_specials, test_known, test_invalid));
}
