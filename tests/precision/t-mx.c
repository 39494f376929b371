/* t-mx.c: MX block quantization (qf_block_mx_*) against independent
 * references.
 *
 * The expected shared exponent of each block is computed here, not by the
 * library: FLOOR and EVEN from the binary64 bit pattern of amax (and, for
 * float32 data, from its float32 bits exactly as torchao's to_mx does);
 * CEIL from the exponent of an MPFR quotient; RCEIL by rounding the exact
 * quotient to float32 with MPFR and taking the next power of two.  The
 * expected element is v / 2^X computed exactly in MPFR and rounded by the
 * format library's MPFR entry point (MXINT8: mpfr_rint and a clamp to
 * +-127).  Dequantize must equal decode(code) * 2^X exactly.
 *
 * Data: normal, wide dynamic range, subnormal-heavy (elements in the
 * element format's subnormal range and below), extreme exponents (the E8M0
 * clamps), and binary64 values with 53-bit significands; random shapes,
 * both axes, block sizes 32, 16, 7 and 1 (tail blocks), every element
 * format, every scale rule, every deterministic rounding mode, and
 * stochastic rounding (which must pick a neighbour).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "qf_block.h"
#include "qf_format_mpfr.h"
#include "qf_test.h"

#define MAX_REPORT 10

static const qf_format_id elems[] = {QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2,   QF_FLOAT6_E2M3FN,
                                     QF_FLOAT6_E3M2FN, QF_FLOAT4_E2M1FN, QF_INT8};
/* OCP MX v1.0 / docs/numerics.md#block-scaled-formats: emax_elem, fraction bits, largest element */
static const int ref_emax[] = {8, 15, 2, 4, 2, 0};
static const int ref_mbits[] = {3, 2, 3, 2, 1, 6};
static const double ref_max[] = {448.0, 57344.0, 7.5, 28.0, 6.0, 1.984375};
#define N_ELEMS 6

static long n_failed, n_blocks, n_elems;

static uint64_t rng_state;

static int clampi(int k, int lo, int hi)
{
    return k < lo ? lo : k > hi ? hi : k;
}

/* ---- Independent expected shared exponents ------------------------------ */

static int ref_floor(int ei, double amax)
{
    uint64_t b;
    memcpy(&b, &amax, 8);
    if (amax == 0)
        return -127;
    return clampi((int)(b >> 52) - 1023 - ref_emax[ei], -127, 127);
}

static int ref_even(int ei, double amax)
{
    uint64_t b;
    memcpy(&b, &amax, 8);
    b = (b + (1ull << (52 - ref_mbits[ei] - 1))) & 0x7FF0000000000000ull;
    return clampi((int)(b >> 52) - 1023 - ref_emax[ei], -127, 127);
}

/* torchao to_mx on float32 bits (FLOOR: even = 0; EVEN: even = 1) */
static int ref_torchao_f32(int ei, float amax, int even)
{
    uint32_t b;
    memcpy(&b, &amax, 4);
    if (even)
        b = (b + (1u << (23 - ref_mbits[ei] - 1))) & 0x7F800000u;
    return clampi((int)((b >> 23) & 0xFF) - 127 - ref_emax[ei], -127, 127);
}

static int ref_ceil(int ei, double amax)
{
    mpfr_t q, m;
    mpfr_exp_t e;
    int k;
    if (amax == 0)
        return -127;
    mpfr_inits2(256, q, m, (mpfr_ptr)0);
    mpfr_set_d(m, ref_max[ei], MPFR_RNDN);
    mpfr_set_d(q, amax, MPFR_RNDN);
    /* amax / max has at most 60 significant bits of numerator and
     * denominator, so at 256 bits the rounded-up quotient is a power of two
     * only if the exact one is */
    mpfr_div(q, q, m, MPFR_RNDU);
    e = mpfr_get_exp(q); /* q in [2^(e-1), 2^e) */
    k = mpfr_cmp_ui_2exp(q, 1, e - 1) == 0 ? (int)e - 1 : (int)e;
    mpfr_clears(q, m, (mpfr_ptr)0);
    return clampi(k, -127, 127);
}

static int ref_rceil(int ei, double amax)
{
    mpfr_t lo, hi, m;
    uint64_t c;
    float q;
    uint32_t qb;
    int e, k;
    if (amax == 0)
        return -127;
    mpfr_inits2(256, lo, hi, m, (mpfr_ptr)0);
    mpfr_set_d(m, ref_max[ei], MPFR_RNDN);
    mpfr_set_d(lo, amax, MPFR_RNDN);
    mpfr_div(hi, lo, m, MPFR_RNDU);
    mpfr_div(lo, lo, m, MPFR_RNDD);
    ck_assert(qf_format_encode_interval(qf_format_get(QF_FLOAT32), lo, hi, QF_ROUND_RNE, 0, &c));
    mpfr_clears(lo, hi, m, (mpfr_ptr)0);
    qb = (uint32_t)c;
    memcpy(&q, &qb, 4);
    /* cvt.rp.satfinite.ue8m0: up to a power of two, Inf -> 2^127 */
    if (q == 0)
        return -127;
    if (isinf(q))
        return 127;
    frexp(q, &e);
    k = ldexp(1.0, e - 1) == q ? e - 1 : e;
    return clampi(k, -127, 127);
}

static int ref_exponent(int ei, qf_block_mx_rule rule, double amax)
{
    switch (rule) {
    case QF_BLOCK_MX_FLOOR: return ref_floor(ei, amax);
    case QF_BLOCK_MX_CEIL: return ref_ceil(ei, amax);
    case QF_BLOCK_MX_EVEN: return ref_even(ei, amax);
    case QF_BLOCK_MX_RCEIL: return ref_rceil(ei, amax);
    default: return 0;
    }
}

/* ---- Independent expected elements --------------------------------------- */

static mpfr_rnd_t mpfr_mode(qf_round r)
{
    switch (r) {
    case QF_ROUND_RTZ: return MPFR_RNDZ;
    case QF_ROUND_UP: return MPFR_RNDU;
    case QF_ROUND_DOWN: return MPFR_RNDD;
    default: return MPFR_RNDN;
    }
}

/* The element code of v in a block of exponent X; for stochastic rounding
 * *alt receives the other neighbour (the code may be either). */
static uint8_t ref_elem(int ei, int X, double v, qf_round r, uint8_t *alt)
{
    mpfr_t y;
    uint8_t c, c2;
    mpfr_init2(y, 64);
    mpfr_set_d(y, v, MPFR_RNDN);
    if (elems[ei] == QF_INT8) {
        long k, k2;
        mpfr_t t;
        mpfr_init2(t, 64);
        mpfr_mul_2si(y, y, 6 - X, MPFR_RNDN); /* exact */
        if (r == QF_ROUND_RNA)
            mpfr_round(t, y);
        else if (r == QF_ROUND_STOCHASTIC)
            mpfr_rint(t, y, MPFR_RNDZ);
        else
            mpfr_rint(t, y, mpfr_mode(r));
        k = mpfr_cmp_si(t, 1000) > 0 ? 1000 : mpfr_cmp_si(t, -1000) < 0 ? -1000 : mpfr_get_si(t, MPFR_RNDN);
        mpfr_rint(t, y, mpfr_sgn(y) < 0 ? MPFR_RNDD : MPFR_RNDU);
        k2 = mpfr_cmp_si(t, 1000) > 0 ? 1000 : mpfr_cmp_si(t, -1000) < 0 ? -1000 : mpfr_get_si(t, MPFR_RNDN);
        mpfr_clear(t);
        k = clampi((int)k, -127, 127);
        k2 = clampi((int)k2, -127, 127);
        c = (uint8_t)(k & 0xFF);
        c2 = (uint8_t)(k2 & 0xFF);
    } else {
        const qf_format *f = qf_format_get(elems[ei]);
        mpfr_mul_2si(y, y, -X, MPFR_RNDN); /* exact */
        if (r == QF_ROUND_STOCHASTIC) {
            c = (uint8_t)qf_format_encode_mpfr(f, y, QF_ROUND_RTZ, 1, 0, 0);
            c2 = (uint8_t)qf_format_encode_mpfr(f, y, mpfr_sgn(y) < 0 ? QF_ROUND_DOWN : QF_ROUND_UP, 1, 0, 0);
        } else {
            c = (uint8_t)qf_format_encode_mpfr(f, y, r, 1, 0, 0);
            c2 = c;
        }
    }
    mpfr_clear(y);
    if (alt)
        *alt = c2;
    return c;
}

/* decode(code) * 2^X, exact, via MPFR; 1 if the binary64 d equals it. */
static int ref_dequant_ok(int ei, uint8_t code, int X, double d)
{
    mpfr_t y;
    double v;
    int ok;
    if (elems[ei] == QF_INT8) {
        int k = code >= 128 ? (int)code - 256 : (int)code;
        v = (double)k;
        X -= 6;
    } else {
        v = qf_format_decode(qf_format_get(elems[ei]), code);
        if (isnan(v))
            return isnan(d);
    }
    mpfr_init2(y, 64);
    mpfr_set_d(y, v, MPFR_RNDN);
    mpfr_mul_2si(y, y, X, MPFR_RNDN);
    ok = mpfr_cmp_d(y, d) == 0 && (mpfr_zero_p(y) || mpfr_get_exp(y) > -1021);
    mpfr_clear(y);
    return ok;
}

static void report(const char *what, int ei, qf_block_mx_rule rule, qf_round r, size_t rows, size_t cols,
                   size_t block, int axis, size_t idx, double v, long got, long want)
{
    n_failed++;
    if (n_failed > MAX_REPORT)
        return;
    fprintf(stderr,
            "FAIL %s mx elem=%s rule=%s round=%s shape=%zux%zu block=%zu axis=%d index=%zu x=%a: got %ld "
            "expected %ld [reproduce: QF_SEED=%" PRIu64 " t-precision-mx]\n",
            what, qf_format_get(elems[ei])->name, qf_block_mx_rule_name(rule), qf_round_name(r), rows, cols,
            block, axis, idx, v, got, want, qf_test_seed());
}

/* ---- Data ----------------------------------------------------------------- */

enum { D_NORMAL, D_WIDE, D_SUBNORMAL, D_EXTREME, D_DOUBLE, D_EDGE, D_EDGE32, D_KINDS };

/* A magnitude at or next to a boundary of some scale rule: max_elem * 2^k
 * (CEIL), the float32 tie max_elem * 2^k * (1 + 2^-24) (RCEIL), the
 * significand 2 - 2^-(mbits+1) (EVEN), a power of two (FLOOR), moved by
 * -2..2 binary64 or float32 ulps. */
static double edge_value(int ei, int f32)
{
    int k = (int)(qf_test_splitmix(&rng_state) % 41) - 20, j,
        steps = (int)(qf_test_splitmix(&rng_state) % 5) - 2;
    double v;
    switch (qf_test_splitmix(&rng_state) % 4) {
    case 0: v = ldexp(ref_max[ei], k); break;
    case 1: v = ldexp(ref_max[ei], k) * (1.0 + 0x1p-24); break;
    case 2: v = ldexp(2.0 - ldexp(1.0, -(ref_mbits[ei] + 1)), k); break;
    default: v = ldexp(1.0, k); break;
    }
    if (f32) {
        float fv = (float)v;
        for (j = 0; j < steps; j++)
            fv = nextafterf(fv, INFINITY);
        for (j = 0; j > steps; j--)
            fv = nextafterf(fv, 0);
        return fv;
    }
    for (j = 0; j < steps; j++)
        v = nextafter(v, INFINITY);
    for (j = 0; j > steps; j--)
        v = nextafter(v, 0);
    return v;
}

static void fill(int kind, int ei, double *x, size_t n)
{
    size_t i;
    int big = (int)(qf_test_splitmix(&rng_state) % 40) - 20;
    if (kind == D_EDGE || kind == D_EDGE32) {
        /* every element at a boundary: each block's amax is one */
        for (i = 0; i < n; i++)
            x[i] = ((qf_test_splitmix(&rng_state) & 1) ? -1.0 : 1.0) * edge_value(ei, kind == D_EDGE32);
        return;
    }
    for (i = 0; i < n; i++) {
        double s = (qf_test_splitmix(&rng_state) & 1) ? -1.0 : 1.0, v;
        switch (kind) {
        case D_NORMAL:
            v = (qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) + qf_test_unif01(&rng_state) - 1.5) *
                ldexp(1.0, big / 4);
            break;
        case D_WIDE:
            v = s * ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 81) - 40);
            break;
        case D_SUBNORMAL:
            /* one large element, the rest 2^-8 .. 2^-24 of it: they fall in
             * (and below) every element format's subnormal range */
            v = s * ldexp(1.0 + qf_test_unif01(&rng_state),
                          big - (i % 7 == 0 ? 0 : 8 + (int)(qf_test_splitmix(&rng_state) % 17)));
            break;
        case D_EXTREME:
            v = s *
                ldexp(1.0 + qf_test_unif01(&rng_state), (qf_test_splitmix(&rng_state) & 1)
                                                            ? -149 + (int)(qf_test_splitmix(&rng_state) % 30)
                                                            : 100 + (int)(qf_test_splitmix(&rng_state) % 28));
            break;
        default:
            v = s * ldexp(1.0 + qf_test_unif01(&rng_state), (int)(qf_test_splitmix(&rng_state) % 41) - 20);
            if (qf_test_splitmix(&rng_state) % 16 == 0)
                v = s * ldexp(1.0 + qf_test_unif01(&rng_state),
                              128 + (int)(qf_test_splitmix(&rng_state) % 80)); /* beyond E8M0 */
            break;
        }
        if (kind != D_DOUBLE)
            v = (double)(float)v; /* float32 data, as a kernel sees it */
        if (qf_test_splitmix(&rng_state) % 23 == 0)
            v = 0.0;
        x[i] = v;
    }
}

/* ---- The random sweep -------------------------------------------------------- */

#define MAXN 400

static void sweep(int ei, qf_block_mx_rule rule, long iters)
{
    static const size_t blocks[] = {32, 32, 32, 16, 7, 1};
    static const qf_round rounds[] = {QF_ROUND_RNE, QF_ROUND_RNE, QF_ROUND_RNE,  QF_ROUND_RNA,
                                      QF_ROUND_RTZ, QF_ROUND_UP,  QF_ROUND_DOWN, QF_ROUND_STOCHASTIC};
    double x[MAXN], deq[MAXN], sc[MAXN];
    uint8_t codes[MAXN], scodes[MAXN], codes2[MAXN];
    long it;
    for (it = 0; it < iters; it++) {
        qf_block_mx_params p = qf_block_mx_params_default();
        size_t rows = 1 + qf_test_splitmix(&rng_state) % 3, cols = 1 + qf_test_splitmix(&rng_state) % 100, B,
               nb, r0, c0, i;
        int kind = (int)(it % D_KINDS);
        p.elem = elems[ei];
        p.rule = rule;
        p.block = B = blocks[qf_test_splitmix(&rng_state) % 6];
        p.axis = (int)(qf_test_splitmix(&rng_state) & 1);
        p.round = rounds[qf_test_splitmix(&rng_state) % 8];
        p.seed = qf_test_splitmix(&rng_state);
        fill(kind, ei, x, rows * cols);
        ck_assert_int_eq(qf_block_mx_quantize(&p, x, rows, cols, codes, scodes, sc), QF_OK);
        ck_assert_int_eq(qf_block_mx_dequantize(&p, codes, scodes, rows, cols, deq), QF_OK);
        nb = p.axis == 1 ? (cols + B - 1) / B : (rows + B - 1) / B;
        ck_assert_uint_eq(qf_block_scale_count(rows, cols, p.axis, B), p.axis == 1 ? rows * nb : nb * cols);
        /* Walk the blocks with the test's own indexing. */
        for (r0 = 0; r0 < (p.axis == 1 ? rows : nb); r0++)
            for (c0 = 0; c0 < (p.axis == 1 ? nb : cols); c0++) {
                size_t si = r0 * (p.axis == 1 ? nb : cols) + c0, len, idx[64];
                double amax = 0;
                int X;
                len = 0;
                for (i = 0; i < B; i++) {
                    size_t r = p.axis == 1 ? r0 : r0 * B + i, c = p.axis == 1 ? c0 * B + i : c0;
                    if (r >= rows || c >= cols)
                        break;
                    idx[len++] = r * cols + c;
                }
                for (i = 0; i < len; i++)
                    amax = fmax(amax, fabs(x[idx[i]]));
                X = ref_exponent(ei, rule, amax);
                n_blocks++;
                if (kind != D_DOUBLE && kind != D_EDGE &&
                    (rule == QF_BLOCK_MX_FLOOR || rule == QF_BLOCK_MX_EVEN) &&
                    (amax == 0 || amax >= 0x1p-126)) {
                    /* float32 data: torchao's bit formula agrees (for a
                     * float32-subnormal amax its EVEN rounds the raw
                     * fraction field, at a coarser position: it can differ
                     * for MXINT8, the only format whose X does not clamp
                     * there; docs/block.md) */
                    int t = ref_torchao_f32(ei, (float)amax, rule == QF_BLOCK_MX_EVEN);
                    if (t != X)
                        report("torchao-f32", ei, rule, p.round, rows, cols, B, p.axis, si, amax, t, X);
                }
                if (scodes[si] != X + 127)
                    report("scale", ei, rule, p.round, rows, cols, B, p.axis, si, amax, scodes[si], X + 127);
                if (sc[si] != ldexp(1.0, X))
                    report("scale value", ei, rule, p.round, rows, cols, B, p.axis, si, amax, 0, X);
                for (i = 0; i < len; i++) {
                    size_t k = idx[i];
                    uint8_t alt, want = ref_elem(ei, X, x[k], p.round, &alt);
                    n_elems++;
                    if (codes[k] != want && codes[k] != alt)
                        report("element", ei, rule, p.round, rows, cols, B, p.axis, k, x[k], codes[k], want);
                    if (!ref_dequant_ok(ei, codes[k], X, deq[k]))
                        report("dequantize", ei, rule, p.round, rows, cols, B, p.axis, k, x[k], codes[k],
                               want);
                }
            }
        if (p.round == QF_ROUND_STOCHASTIC) {
            /* the same seed gives the same codes */
            ck_assert_int_eq(qf_block_mx_quantize(&p, x, rows, cols, codes2, scodes, NULL), QF_OK);
            ck_assert_mem_eq(codes, codes2, rows * cols);
        }
    }
}

START_TEST(test_sweep)
{
    int ei = _i / QF_BLOCK_MX_RULE_COUNT;
    qf_block_mx_rule rule = (qf_block_mx_rule)(_i % QF_BLOCK_MX_RULE_COUNT);
    rng_state = qf_test_seed() * 1000 + (uint64_t)_i;
    n_failed = n_blocks = n_elems = 0;
    sweep(ei, rule, qf_test_iters(300));
    fprintf(stderr, "mx %s %s: %ld blocks, %ld elements, %ld failures\n", qf_format_get(elems[ei])->name,
            qf_block_mx_rule_name(rule), n_blocks, n_elems, n_failed);
    ck_assert_int_eq(n_failed, 0);
}
END_TEST

/* ---- Special values ------------------------------------------------------------ */

static qf_block_mx_params params(qf_format_id e, qf_block_mx_rule rule)
{
    qf_block_mx_params p = qf_block_mx_params_default();
    p.elem = e;
    p.rule = rule;
    return p;
}

START_TEST(test_nan_inf_zero)
{
    int ei, rule;
    for (ei = 0; ei < N_ELEMS; ei++)
        for (rule = 0; rule < QF_BLOCK_MX_RULE_COUNT; rule++) {
            qf_block_mx_params p = params(elems[ei], (qf_block_mx_rule)rule);
            double x[96], d[96];
            uint8_t c[96], s[3];
            int i;
            for (i = 0; i < 96; i++)
                x[i] = 1.0 + i;
            x[5] = NAN;        /* block 0: NaN */
            x[40] = -INFINITY; /* block 1: Inf */
            for (i = 64; i < 96; i++)
                x[i] = (i & 1) ? -0.0 : 0.0; /* block 2: zeros */
            ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 96, c, s, NULL), QF_OK);
            ck_assert_int_eq(qf_block_mx_dequantize(&p, c, s, 1, 96, d), QF_OK);
            ck_assert_uint_eq(s[0], 0xFF);
            ck_assert_uint_eq(s[1], 0xFF);
            ck_assert_uint_eq(s[2], 0x00); /* documented: an all-zero block has scale 2^-127 */
            for (i = 0; i < 64; i++)
                ck_assert(isnan(d[i]));
            for (i = 64; i < 96; i++)
                ck_assert(d[i] == 0);
        }
}
END_TEST

START_TEST(test_power_of_two)
{
    /* amax = 2^E exactly: every rule gives X = E - emax_elem (2^E / max_elem
     * lies in (2^(E-emax-1), 2^(E-emax)] for every element format) and the
     * largest element is exactly 2^emax_elem. */
    static const int Es[] = {0, -10, 7, 100, -100};
    int ei, rule, j;
    for (ei = 0; ei < N_ELEMS; ei++)
        for (rule = 0; rule < QF_BLOCK_MX_RULE_COUNT; rule++)
            for (j = 0; j < 5; j++) {
                qf_block_mx_params p = params(elems[ei], (qf_block_mx_rule)rule);
                double x[32], d[32];
                uint8_t c[32], s;
                int i, X = Es[j] - ref_emax[ei];
                for (i = 0; i < 32; i++)
                    x[i] = ldexp(i % 5 == 0 ? 1.0 : 0.25 * (i % 4), Es[j]);
                x[7] = -ldexp(1.0, Es[j]);
                ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 32, c, &s, NULL), QF_OK);
                ck_assert_int_eq(qf_block_mx_dequantize(&p, c, &s, 1, 32, d), QF_OK);
                ck_assert_int_eq((int)s - 127, X);
                for (i = 0; i < 32; i++)
                    ck_assert_msg(d[i] == x[i], "elem %s rule %d E %d i %d: %a != %a",
                                  qf_format_get(elems[ei])->name, rule, Es[j], i, d[i], x[i]);
            }
}
END_TEST

START_TEST(test_rules_differ)
{
    /* e4m3 (max 448 = 1.75 * 2^8, 3 fraction bits) */
    qf_block_mx_params p = params(QF_FLOAT8_E4M3FN, QF_BLOCK_MX_FLOOR);
    uint8_t s;
    double a;
    /* amax = 1.9375 * 2^4: FLOOR 4 - 8 = -4; EVEN rounds 1.1111b to 10.000b:
     * -3; CEIL: 31 / 448 in (2^-4, 2^-3]: -3; RCEIL: -3 */
    a = 31.0;
    ck_assert_int_eq(qf_block_mx_scale(&p, a, &s), QF_OK);
    ck_assert_int_eq((int)s - 127, -4);
    p.rule = QF_BLOCK_MX_EVEN;
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, -3);
    p.rule = QF_BLOCK_MX_CEIL;
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, -3);
    /* 1.875 * 2^4 = 30: EVEN keeps 1.111b (no carry): -4 like FLOOR */
    p.rule = QF_BLOCK_MX_EVEN;
    qf_block_mx_scale(&p, 30.0, &s);
    ck_assert_int_eq((int)s - 127, -4);
    /* amax = 448 * 2^3 * (1 + 2^-30): CEIL goes to 4; the float32 quotient
     * rounds to 2^3, so RCEIL stays at 3 */
    a = 448.0 * 8.0 * (1.0 + 0x1p-30);
    p.rule = QF_BLOCK_MX_CEIL;
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, 4);
    p.rule = QF_BLOCK_MX_RCEIL;
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, 3);
    /* just past the float32 tie (2^3 (1 + 2^-24) is the tie; ties to 2^3) */
    a = 448.0 * 8.0 * (1.0 + 0x1p-24);
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, 3);
    a = 448.0 * 8.0 * (1.0 + 0x1p-24 + 0x1p-40);
    qf_block_mx_scale(&p, a, &s);
    ck_assert_int_eq((int)s - 127, 4);
    /* the E8M0 clamps */
    p.rule = QF_BLOCK_MX_FLOOR;
    qf_block_mx_scale(&p, 0x1p200, &s);
    ck_assert_uint_eq(s, 0xFE);
    qf_block_mx_scale(&p, 0x1p-140, &s);
    ck_assert_uint_eq(s, 0x00);
    p.rule = QF_BLOCK_MX_RCEIL;
    qf_block_mx_scale(&p, 0x1p-1074, &s);
    ck_assert_uint_eq(s, 0x00);
    qf_block_mx_scale(&p, 1e300, &s);
    ck_assert_uint_eq(s, 0xFE);
}
END_TEST

START_TEST(test_clamp_at_max)
{
    /* FLOOR with amax = 1.99 * 2^E: amax / 2^X = 1.99 * 2^emax is beyond
     * every element format's max (or rounds past it), so it clamps to +-max */
    int ei;
    for (ei = 0; ei < N_ELEMS; ei++) {
        qf_block_mx_params p = params(elems[ei], QF_BLOCK_MX_FLOOR);
        double x[32], d[32];
        uint8_t c[32], s;
        int i;
        for (i = 0; i < 32; i++)
            x[i] = 0.01 * i;
        x[3] = 1.99 * 16;
        x[9] = -1.99 * 16;
        ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 32, c, &s, NULL), QF_OK);
        ck_assert_int_eq(qf_block_mx_dequantize(&p, c, &s, 1, 32, d), QF_OK);
        ck_assert_int_eq((int)s - 127, 4 - ref_emax[ei]);
        ck_assert(d[3] == ldexp(ref_max[ei], 4 - ref_emax[ei]));
        ck_assert(d[9] == -ldexp(ref_max[ei], 4 - ref_emax[ei]));
        if (elems[ei] == QF_INT8) {
            ck_assert_uint_eq(c[3], 0x7F);
            ck_assert_uint_eq(c[9], 0x81); /* -127, never -128 */
        }
    }
}
END_TEST

START_TEST(test_tail_and_layout)
{
    /* 2 x 70 with blocks of 32 along rows: 3 blocks per row, the last of 6
     * elements; its scale comes from its own elements only. */
    qf_block_mx_params p = params(QF_FLOAT8_E4M3FN, QF_BLOCK_MX_FLOOR);
    double x[140], d[140], sv[6];
    uint8_t c[140], s[6], c0[140], s0[6];
    int i;
    for (i = 0; i < 140; i++)
        x[i] = (i % 70) < 64 ? 1000.0 : 0.5;
    ck_assert_uint_eq(qf_block_scale_count(2, 70, 1, 32), 6);
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 2, 70, c, s, sv), QF_OK);
    ck_assert_int_eq((int)s[0] - 127, 9 - 8);
    ck_assert_int_eq((int)s[2] - 127, -1 - 8);
    ck_assert_int_eq((int)s[5] - 127, -1 - 8);
    ck_assert(sv[2] == 0x1p-9);
    ck_assert_int_eq(qf_block_mx_dequantize(&p, c, s, 2, 70, d), QF_OK);
    ck_assert(d[69] == 0.5 && d[139] == 0.5);
    /* axis 0 of the transpose gives the transposed result */
    {
        double xt[140], dt[140];
        uint8_t ct[140], st[6];
        int r, k;
        for (r = 0; r < 2; r++)
            for (k = 0; k < 70; k++)
                xt[k * 2 + r] = x[r * 70 + k];
        p.axis = 0;
        ck_assert_uint_eq(qf_block_scale_count(70, 2, 0, 32), 6);
        ck_assert_int_eq(qf_block_mx_quantize(&p, xt, 70, 2, ct, st, NULL), QF_OK);
        ck_assert_int_eq(qf_block_mx_dequantize(&p, ct, st, 70, 2, dt), QF_OK);
        /* scales are 3 x 2 (block row, column) against 2 x 3 */
        for (r = 0; r < 2; r++)
            for (k = 0; k < 3; k++)
                ck_assert_uint_eq(st[k * 2 + r], s[r * 3 + k]);
        for (r = 0; r < 2; r++)
            for (k = 0; k < 70; k++) {
                ck_assert_uint_eq(ct[k * 2 + r], c[r * 70 + k]);
                ck_assert(dt[k * 2 + r] == d[r * 70 + k]);
            }
    }
    /* 4-bit codes pack two per byte, element 2i in the low nibble */
    {
        uint8_t packed[70], un[140];
        p = params(QF_FLOAT4_E2M1FN, QF_BLOCK_MX_FLOOR);
        for (i = 0; i < 140; i++)
            x[i] = (i % 13) * 0.5 - 3;
        ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 140, c0, s0, NULL), QF_OK);
        ck_assert_int_eq(qf_format_pack4(c0, 140, packed), QF_OK);
        ck_assert_uint_eq(packed[0] & 0xF, c0[0]);
        ck_assert_uint_eq(packed[0] >> 4, c0[1]);
        ck_assert_int_eq(qf_format_unpack4(packed, 140, un), QF_OK);
        ck_assert_mem_eq(un, c0, 140);
    }
}
END_TEST

START_TEST(test_known_values)
{
    /* [1, 0.5, -3, 448, ...] in e4m3, FLOOR: amax 448 -> X = 8 - 8 = 0,
     * codes are the plain e4m3 codes: 1 = 0x38, 0.5 = 0x30, -3 = 0xC4, 448 = 0x7E */
    qf_block_mx_params p = params(QF_FLOAT8_E4M3FN, QF_BLOCK_MX_FLOOR);
    double x[4] = {1.0, 0.5, -3.0, 448.0};
    uint8_t c[4], s;
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 4, c, &s, NULL), QF_OK);
    ck_assert_uint_eq(s, 127);
    ck_assert_uint_eq(c[0], 0x38);
    ck_assert_uint_eq(c[1], 0x30);
    ck_assert_uint_eq(c[2], 0xC4);
    ck_assert_uint_eq(c[3], 0x7E);
    /* MXINT8: [1, -0.5] -> X = 0, codes 64 and -32 */
    p = params(QF_INT8, QF_BLOCK_MX_FLOOR);
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 2, c, &s, NULL), QF_OK);
    ck_assert_uint_eq(s, 127);
    ck_assert_uint_eq(c[0], 64);
    ck_assert_uint_eq(c[1], 32);
    x[1] = -0.5;
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 2, c, &s, NULL), QF_OK);
    ck_assert_uint_eq(c[1], 0xE0);
}
END_TEST

START_TEST(test_invalid)
{
    qf_block_mx_params p = qf_block_mx_params_default();
    double x[4] = {1, 2, 3, 4}, d[4];
    uint8_t c[4], s[4];
    qf_block_mx_rule r;
    ck_assert_int_eq(qf_block_mx_quantize(&p, NULL, 1, 4, c, s, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 4, NULL, s, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 0, 4, NULL, NULL, NULL), QF_OK); /* empty */
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, (size_t)-1, 4, c, s, NULL), QF_EINVAL);
    p.block = 0;
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 4, c, s, NULL), QF_EINVAL);
    p = qf_block_mx_params_default();
    p.elem = QF_FLOAT16;
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 4, c, s, NULL), QF_EINVAL);
    p = qf_block_mx_params_default();
    p.round = QF_ROUND_FLOOR;
    ck_assert_int_eq(qf_block_mx_quantize(&p, x, 1, 4, c, s, NULL), QF_EINVAL);
    p = qf_block_mx_params_default();
    p.axis = 2;
    ck_assert_int_eq(qf_block_mx_dequantize(&p, c, s, 1, 4, d), QF_EINVAL);
    ck_assert_int_eq(qf_block_mx_rule_lookup("RCEIL", &r), QF_OK);
    ck_assert_int_eq(r, QF_BLOCK_MX_RCEIL);
    ck_assert_int_eq(qf_block_mx_rule_lookup("round", &r), QF_EPARSE);
    ck_assert_str_eq(qf_block_mx_rule_name(QF_BLOCK_MX_EVEN), "even");
    ck_assert_int_eq(qf_block_mx_emax(QF_FLOAT6_E3M2FN), 4);
    ck_assert(qf_block_mx_elem_max(QF_INT8) == 1.984375);
}
END_TEST

int main(void)
{
    return qf_test_main_loops(
        "precision/mx", "core", 600, NULL, NULL, N_ELEMS * QF_BLOCK_MX_RULE_COUNT, QF_TESTS(test_sweep),
        QF_TESTS(test_nan_inf_zero, test_power_of_two, test_rules_differ, test_clamp_at_max,
                 test_tail_and_layout, test_known_values, test_invalid));
}
