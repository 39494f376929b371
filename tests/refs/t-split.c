/* t-split.c: references into the formats whose NaN code is reached from
 * two separate sets of numbers (a split code, qf_format_split_codes):
 * float8_e4m3fnuz and float8_e5m2fnuz, whose one NaN 0x80 is what both
 * +overflow and -overflow give in rne and rna, and float8_e8m0fnu, whose
 * 0xFF is every number <= 0 and, in rne, rna and up, the overflow.  Both
 * ends of an enclosure rounding to that code decide nothing when they lie
 * on both sides of 0 (docs/refs.md "Decided means one value"): an
 * enclosure from -overflow to +overflow holds every target value.
 *
 * The inputs make the binary64 fast paths cancel: huge terms whose exact
 * sum is moderate, so the fast enclosure straddles both overflows (fnuz)
 * or a negative value and the overflow (e8m0), while the exact result is
 * an ordinary target value.  Each op runs in the three formats, the five
 * deterministic modes, with the fast path and without it (slow_only; for
 * GEMM, exact_only), and every element is checked against a value worked
 * out independently: with mpmath at 400 bits and Python fractions (the
 * LayerNorm rows' mean and variance exactly), rounded by a rounding
 * function written from the formats' definitions ([FNUZ], [MX] in
 * docs/numerics.md), never from this library's output.  The tables are
 * indexed [format][mode] in the order of FMT and MODE.  Also checked:
 * enclosures wholly past one overflow, or wholly negative in e8m0, stay
 * decided as the NaN of that one rule (log-softmax, activations, GEMM).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_ref.h"
#include "qf_test.h"

#define N NAN

static const char *const FMT[3] = {"float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"};
static const qf_round MODE[5] = {QF_ROUND_RNE, QF_ROUND_RNA, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};

/* LN8_LAST = 2.645751311064590590501616 */
static const double LN8_LAST[3][5] = {{0x1.6p+1, 0x1.6p+1, 0x1.4p+1, 0x1.6p+1, 0x1.4p+1},
                                      {0x1.4p+1, 0x1.4p+1, 0x1.4p+1, 0x1.8p+1, 0x1.4p+1},
                                      {0x1p+1, 0x1p+1, 0x1p+1, 0x1p+2, 0x1p+1}};
/* LN8_OTHER = -0.3779644730092272272145165 */
static const double LN8_OTHER[3][5] = {{-0x1.8p-2, -0x1.8p-2, -0x1.8p-2, -0x1.8p-2, -0x1.ap-2},
                                       {-0x1.8p-2, -0x1.8p-2, -0x1.8p-2, -0x1.8p-2, -0x1.cp-2},
                                       {N, N, N, N, N}};
/* LN1024_LAST = 31.98437118343895157966607 */
static const double LN1024_LAST[3][5] = {{0x1p+5, 0x1p+5, 0x1.ep+4, 0x1p+5, 0x1.ep+4},
                                         {0x1p+5, 0x1p+5, 0x1.cp+4, 0x1p+5, 0x1.cp+4},
                                         {0x1p+5, 0x1p+5, 0x1p+4, 0x1p+5, 0x1p+4}};
/* LN1024_OTHER = -0.0312652699740361208012376 */
static const double LN1024_OTHER[3][5] = {{-0x1p-5, -0x1p-5, -0x1p-5, -0x1p-5, -0x1.2p-5},
                                          {-0x1p-5, -0x1p-5, -0x1p-5, -0x1p-5, -0x1.4p-5},
                                          {N, N, N, N, N}};
/* LNW_LAST = 4.151808750449548382799801e+34 */
static const double LNW_LAST[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                      {0x1p+115, 0x1p+115, 0x1p+114, 0x1p+115, 0x1p+114}};
/* LNW_OTHER = -4.058464076685775545258848e+31 */
static const double LNW_OTHER[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {N, N, -0x1.cp+15, -0x1.cp+15, N}, {N, N, N, N, N}};
/* k=60 bias -0x1.43d136248490ep+59 -0x1.43d136248491p+60 */
/* RMS60_Y0 = 109.6072432640055378522979 */
static const double RMS60_Y0[3][5] = {{0x1.cp+6, 0x1.cp+6, 0x1.ap+6, 0x1.cp+6, 0x1.ap+6},
                                      {0x1.cp+6, 0x1.cp+6, 0x1.8p+6, 0x1.cp+6, 0x1.8p+6},
                                      {0x1p+7, 0x1p+7, 0x1p+6, 0x1p+7, 0x1p+6}};
/* RMS60_Y1 = -292.7855134719889242954042 */
static const double RMS60_Y1[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {-0x1.4p+8, -0x1.4p+8, -0x1p+8, -0x1p+8, -0x1.4p+8}, {N, N, N, N, N}};
/* k=68 bias -0x1.43d136248490ep+67 -0x1.43d136248491p+68 */
/* RMS68_Y0 = 28059.45427558541769018826 */
static const double RMS68_Y0[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {0x1.cp+14, 0x1.cp+14, 0x1.8p+14, 0x1.cp+14, 0x1.8p+14},
                                      {0x1p+15, 0x1p+15, 0x1p+14, 0x1p+15, 0x1p+14}};
/* RMS68_Y1 = -74953.09144882916461962347 */
static const double RMS68_Y1[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {N, N, -0x1.cp+15, -0x1.cp+15, N}, {N, N, N, N, N}};
/* k=180 bias -0x1.43d136248490ep+179 -0x1.43d136248491p+180 */
/* RMS180_Y0 = 1.456930162873238017714534e+38 */
static const double RMS180_Y0[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                       {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                       {0x1p+127, 0x1p+127, 0x1p+126, 0x1p+127, 0x1p+126}};
/* RMS180_Y1 = -3.891787012672293233838424e+38 */
static const double RMS180_Y1[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {N, N, -0x1.cp+15, -0x1.cp+15, N}, {N, N, N, N, N}};
/* ATTN = 22.26266626487643200880397 */
static const double ATTN[3][5] = {{0x1.6p+4, 0x1.6p+4, 0x1.6p+4, 0x1.8p+4, 0x1.6p+4},
                                  {0x1.8p+4, 0x1.8p+4, 0x1.4p+4, 0x1.8p+4, 0x1.4p+4},
                                  {0x1p+4, 0x1p+4, 0x1p+4, 0x1p+5, 0x1p+4}};
/* rope k=58 xa 0x1.8eb245cbee3a8p+58 xb 0x1p+58 */
/* ROPE58_A = 78.7929708895117912491341 */
static const double ROPE58_A[3][5] = {{0x1.4p+6, 0x1.4p+6, 0x1.2p+6, 0x1.4p+6, 0x1.2p+6},
                                      {0x1.4p+6, 0x1.4p+6, 0x1p+6, 0x1.4p+6, 0x1p+6},
                                      {0x1p+6, 0x1p+6, 0x1p+6, 0x1p+7, 0x1p+6}};
/* ROPE58_B = 533461310494673641.9435033 */
static const double ROPE58_B[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                      {0x1p+59, 0x1p+59, 0x1p+58, 0x1p+59, 0x1p+58}};
/* rope k=66 xa 0x1.8eb245cbee3a8p+66 xb 0x1p+66 */
/* ROPE66_A = 20171.00054771501855977833 */
static const double ROPE66_A[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {0x1.4p+14, 0x1.4p+14, 0x1p+14, 0x1.4p+14, 0x1p+14},
                                      {0x1p+14, 0x1p+14, 0x1p+14, 0x1p+15, 0x1p+14}};
/* ROPE66_B = 136566095486636452337.5369 */
static const double ROPE66_B[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                      {0x1p+67, 0x1p+67, 0x1p+66, 0x1p+67, 0x1p+66}};
/* rope k=178 xa 0x1.8eb245cbee3a8p+178 xb 0x1p+178 */
/* ROPE178_A = 1.047338227774049783353705e+38 */
static const double ROPE178_A[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                       {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                       {0x1p+126, 0x1p+126, 0x1p+126, 0x1p+127, 0x1p+126}};
/* ROPE178_B = 7.090917085776297534472465e+53 */
static const double ROPE178_B[3][5] = {
    {N, N, 0x1.ep+7, N, 0x1.ep+7}, {N, N, 0x1.cp+15, N, 0x1.cp+15}, {N, N, 0x1p+127, N, 0x1p+127}};
/* GEMM_100 = 100 exactly (a tie in float8_e4m3fnuz: 96 and 104) */
static const double GEMM_100[3][5] = {{0x1.8p+6, 0x1.ap+6, 0x1.8p+6, 0x1.ap+6, 0x1.8p+6},
                                      {0x1.8p+6, 0x1.8p+6, 0x1.8p+6, 0x1.cp+6, 0x1.8p+6},
                                      {0x1p+7, 0x1p+7, 0x1p+6, 0x1p+7, 0x1p+6}};
/* GEMM_P2E60 = 2 RN(1e60) = 1.999999999999999898774271e+60 */
static const double GEMM_P2E60[3][5] = {
    {N, N, 0x1.ep+7, N, 0x1.ep+7}, {N, N, 0x1.cp+15, N, 0x1.cp+15}, {N, N, 0x1p+127, N, 0x1p+127}};
/* GEMM_M2E60 = -2 RN(1e60) */
static const double GEMM_M2E60[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {N, N, -0x1.cp+15, -0x1.cp+15, N}, {N, N, N, N, N}};
/* LSM_0 = -2.650396553004310816338679e-261 */
static const double LSM_0[3][5] = {{0, 0, 0, 0, -0x1p-10}, {0, 0, 0, 0, -0x1p-17}, {N, N, N, N, N}};
/* LSM_1 = -600 - 2.650396553004310816338679e-261 */
static const double LSM_1[3][5] = {
    {N, N, -0x1.ep+7, -0x1.ep+7, N}, {-0x1.4p+9, -0x1.4p+9, -0x1p+9, -0x1p+9, -0x1.4p+9}, {N, N, N, N, N}};
/* SILU_BIG = 1e6 (1 - 2^-1442695) */
static const double SILU_BIG[3][5] = {{N, N, 0x1.ep+7, N, 0x1.ep+7},
                                      {N, N, 0x1.cp+15, N, 0x1.cp+15},
                                      {0x1p+20, 0x1p+20, 0x1p+19, 0x1p+20, 0x1p+19}};
/* SILU_M1 = -0.2689414213699951207488408 */
static const double SILU_M1[3][5] = {{-0x1.2p-2, -0x1.2p-2, -0x1p-2, -0x1p-2, -0x1.2p-2},
                                     {-0x1p-2, -0x1p-2, -0x1p-2, -0x1p-2, -0x1.4p-2},
                                     {N, N, N, N, N}};

static qf_ref_opts opts(int fi, int mi, int slow)
{
    qf_ref_opts o = qf_ref_opts_default();
    o.format = qf_format_lookup(FMT[fi]);
    ck_assert_ptr_nonnull(o.format);
    o.round = MODE[mi];
    o.slow_only = slow;
    o.threads = 1;
    return o;
}

/* Element i of y (code, value, status) against want: every value here is
 * inexact in the target (or past its range), so the status is ROUNDED. */
static void expect(const char *op, int fi, int mi, int slow, const qf_ref_out *y, size_t i, double want)
{
    const qf_format *f = qf_format_lookup(FMT[fi]);
    double got = y->value[i];
    int ok = isnan(want) ? isnan(got) && qf_format_is_nan(f, y->code[i])
                         : got == want && qf_format_decode(f, y->code[i]) == want;
    if (!ok || y->status[i] != QF_REF_ROUNDED)
        ck_abort_msg("%s into %s, %s, %s: element %zu = %a (code 0x%llx, %s), want %a (rounded)", op, FMT[fi],
                     qf_round_name(MODE[mi]), slow ? "slow_only" : "fast path on", i, got,
                     (unsigned long long)y->code[i], qf_ref_status_name((qf_ref_status)y->status[i]), want);
}

/* n - 1 copies of 1e4, then the next binary64 up (1e4 + 2^-39): the exact
 * mean is 1e4 + 2^-39 / n, so y_last = sqrt(n - 1) and the others
 * -1 / sqrt(n - 1) (times the weight).  The binary64 mean rounds to 1e4,
 * one ulp from every deviation it is subtracted from: the fast enclosure
 * of y_last is hundreds of times wider than y_last. */
static void layernorm_case(size_t n, double w, const double want_last[3][5], const double want_other[3][5])
{
    double x[1024], wt[1024];
    size_t j;
    for (j = 0; j + 1 < n; j++)
        x[j] = 1e4, wt[j] = w;
    x[n - 1] = nextafter(1e4, INFINITY);
    wt[n - 1] = w;
    ck_assert(x[n - 1] == 1e4 + 0x1p-39);
    for (int fi = 0; fi < 3; fi++)
        for (int mi = 0; mi < 5; mi++)
            for (int slow = 0; slow < 2; slow++) {
                qf_ref_opts o = opts(fi, mi, slow);
                qf_ref_norm_params p = {1, n, 0.0, w != 1 ? wt : NULL, NULL, 0.0};
                qf_ref_out y;
                ck_assert_int_eq(qf_ref_out_alloc(&y, n), QF_OK);
                ck_assert_int_eq(qf_ref_layernorm(&o, &p, x, &y), QF_OK);
                for (j = 0; j < n; j++)
                    expect("layernorm", fi, mi, slow, &y, j,
                           j + 1 < n ? want_other[fi][mi] : want_last[fi][mi]);
                qf_ref_out_free(&y);
            }
}

/* The example of the report: 1e4 seven times, then its successor, eps 0,
 * into float8_e4m3fnuz: element 7 is sqrt(7) exactly, 2.75 in rne (it
 * was NaN: the fast enclosure ran from below -248 to above +248). */
START_TEST(test_layernorm)
{
    layernorm_case(8, 1, LN8_LAST, LN8_OTHER);
    layernorm_case(1024, 1, LN1024_LAST, LN1024_OTHER); /* wide enough for e5m2fnuz */
    layernorm_case(1024, 0x1p110, LNW_LAST, LNW_OTHER); /* and for e8m0 */
}
END_TEST

/* RMSNorm of x = [1, 2], eps 0, weight 2^k: x / rms = sqrt(2/5), sqrt(8/5);
 * the bias takes off all but a few units: b0 = -(RN(2^k sqrt(2/5)) - ulp),
 * b1 = -(RN(2^k sqrt(8/5)) + ulp), so y0 > 0 and y1 < 0 are a few hundred
 * units of the last place of 2^k against an enclosure about ten times as
 * wide.  k = 60, 68, 180: wide enough for each format. */
START_TEST(test_rmsnorm)
{
    static const int K[3] = {60, 68, 180};
    static const double B0[3] = {-0x1.43d136248490ep+59, -0x1.43d136248490ep+67, -0x1.43d136248490ep+179};
    static const double B1[3] = {-0x1.43d136248491p+60, -0x1.43d136248491p+68, -0x1.43d136248491p+180};
    const double(*Y0[3])[5] = {RMS60_Y0, RMS68_Y0, RMS180_Y0};
    const double(*Y1[3])[5] = {RMS60_Y1, RMS68_Y1, RMS180_Y1};
    static const double x[2] = {1, 2};
    for (int c = 0; c < 3; c++) {
        double w[2] = {ldexp(1, K[c]), ldexp(1, K[c])}, b[2] = {B0[c], B1[c]};
        for (int fi = 0; fi < 3; fi++)
            for (int mi = 0; mi < 5; mi++)
                for (int slow = 0; slow < 2; slow++) {
                    qf_ref_opts o = opts(fi, mi, slow);
                    qf_ref_norm_params p = {1, 2, 0.0, w, b, 0.0};
                    qf_ref_out y;
                    ck_assert_int_eq(qf_ref_out_alloc(&y, 2), QF_OK);
                    ck_assert_int_eq(qf_ref_rmsnorm(&o, &p, x, &y), QF_OK);
                    expect("rmsnorm", fi, mi, slow, &y, 0, Y0[c][fi][mi]);
                    expect("rmsnorm", fi, mi, slow, &y, 1, Y1[c][fi][mi]);
                    qf_ref_out_free(&y);
                }
    }
}
END_TEST

/* One query row over four keys, head_dim 1, scale 1: q = 1, k = (1, 1, 0,
 * 1/2), v = (1e60, -1e60, 180, 0).  The two equal logits weigh +-1e60
 * alike, so out = 180 / (2e + 1 + sqrt e); the fast path's numerator
 * bound is about 1e45, past every overflow. */
START_TEST(test_attention)
{
    static const double q[1] = {1}, k[4] = {1, 1, 0, 0.5}, v[4] = {1e60, -1e60, 180, 0};
    for (int fi = 0; fi < 3; fi++)
        for (int mi = 0; mi < 5; mi++)
            for (int slow = 0; slow < 2; slow++) {
                qf_ref_opts o = opts(fi, mi, slow);
                qf_ref_attn_params p;
                qf_ref_out y;
                qf_ref_attn_params_init(&p);
                p.batch = p.heads = p.kv_heads = p.seq_q = 1;
                p.seq_k = 4;
                p.head_dim = 1;
                p.scale = 1;
                ck_assert_int_eq(qf_ref_out_alloc(&y, 1), QF_OK);
                ck_assert_int_eq(qf_ref_attention(&o, &p, q, k, v, &y, NULL), QF_OK);
                expect("attention", fi, mi, slow, &y, 0, ATTN[fi][mi]);
                qf_ref_out_free(&y);
            }
}
END_TEST

/* One rotary pair per token, angle 1 (position 1, inv_freq 1): x_b = 2^k,
 * x_a = RN(2^k tan 1) + 2 ulp, so y_a = x_a cos 1 - x_b sin 1 is about one
 * ulp of x_a (x_a / x_b misses tan 1 by about 2^-52) while the fast bound
 * is about 14 u |x|; y_b is past every overflow but fnuz's and e8m0's
 * rtz/down (decided there by the one rule of +overflow).  k = 58, 66,
 * 178: one token for each format. */
START_TEST(test_rope)
{
    static const double x[6] = {0x1.8eb245cbee3a8p+58,  0x1p+58, 0x1.8eb245cbee3a8p+66, 0x1p+66,
                                0x1.8eb245cbee3a8p+178, 0x1p+178};
    static const double inv_freq[1] = {1};
    const double(*YA[3])[5] = {ROPE58_A, ROPE66_A, ROPE178_A};
    const double(*YB[3])[5] = {ROPE58_B, ROPE66_B, ROPE178_B};
    for (int fi = 0; fi < 3; fi++)
        for (int mi = 0; mi < 5; mi++)
            for (int slow = 0; slow < 2; slow++) {
                qf_ref_opts o = opts(fi, mi, slow);
                qf_ref_rope_params p;
                qf_ref_out y;
                qf_ref_rope_params_init(&p);
                p.tokens = 3;
                p.heads = 1;
                p.head_dim = 2;
                p.layout = QF_REF_ROPE_INTERLEAVED;
                p.inv_freq = inv_freq;
                p.positions = (const int64_t[]){1, 1, 1};
                ck_assert_int_eq(qf_ref_out_alloc(&y, 6), QF_OK);
                ck_assert_int_eq(qf_ref_rope(&o, &p, x, &y), QF_OK);
                for (int t = 0; t < 3; t++) {
                    expect("rope", fi, mi, slow, &y, 2 * (size_t)t, YA[t][fi][mi]);
                    expect("rope", fi, mi, slow, &y, 2 * (size_t)t + 1, YB[t][fi][mi]);
                }
                qf_ref_out_free(&y);
            }
}
END_TEST

/* D = A B, B = ones(5, 1): rows [1e18, 100, -1e18, 2^-80, -2^-80] (the
 * report's example), [big, -big, 100, 2^-80, -2^-80] (big = 1e30, 1e60)
 * sum to exactly 100 (big is a binary64 number and cancels exactly); the
 * tiny entries keep the rows off the exact-sum certificate, so the fast
 * path bounds them by about gamma_5 sqrt(2) big sqrt(5).  (In the first
 * row binary64 gives 128, 1e18 + 100 rounding to 1e18 + 128; the others
 * put 100 after the cancellation, so that binary64 keeps it rather than
 * give 0, which the fast path leaves alone.)  Rows [1e60, 1e60, 0, 0, 0]
 * and their negation lie wholly past one overflow: NaN by that rule, or
 * +-max toward zero. */
START_TEST(test_gemm)
{
    static const double a[5][5] = {{1e18, 100, -1e18, 0x1p-80, -0x1p-80},
                                   {1e30, -1e30, 100, 0x1p-80, -0x1p-80},
                                   {1e60, -1e60, 100, 0x1p-80, -0x1p-80},
                                   {1e60, 1e60, 0, 0, 0},
                                   {-1e60, -1e60, 0, 0, 0}};
    static const double b[5] = {1, 1, 1, 1, 1};
    for (int fi = 0; fi < 3; fi++)
        for (int mi = 0; mi < 5; mi++)
            for (int exact = 0; exact < 2; exact++) {
                qf_gemm_desc d = qf_gemm_desc_default();
                qf_gemm_stats st;
                uint64_t code[5];
                double val[5];
                uint8_t status[5];
                qf_ref_out y;
                d.m = 5, d.n = 1, d.k = 5;
                d.a = &a[0][0], d.lda = 5, d.b = b, d.ldb = 1, d.ldd = 1;
                d.out = qf_format_lookup(FMT[fi]);
                d.round = MODE[mi];
                d.d_code = code, d.d_value = val, d.d_status = status;
                d.exact_only = exact;
                d.threads = 1;
                d.stats = &st;
                ck_assert_int_eq(qf_gemm(&d), QF_OK);
                ck_assert_uint_eq(st.n_fast + st.n_exact, 5);
                memset(&y, 0, sizeof y);
                y.value = val, y.code = code, y.status = status;
                for (size_t i = 0; i < 3; i++)
                    expect(exact ? "gemm (exact engine)" : "gemm", fi, mi, !!exact, &y, i, GEMM_100[fi][mi]);
                expect(exact ? "gemm (exact engine)" : "gemm", fi, mi, !!exact, &y, 3, GEMM_P2E60[fi][mi]);
                expect(exact ? "gemm (exact engine)" : "gemm", fi, mi, !!exact, &y, 4, GEMM_M2E60[fi][mi]);
            }
}
END_TEST

/* Enclosures on one side: log-softmax of [0, -600] is -log1p(e^-600)
 * (tiny, negative: NaN in e8m0 by the rule for numbers <= 0) and -600 -
 * that (past -overflow in e4m3fnuz); silu(1e6) past +overflow, silu(-1)
 * negative.  These stay decided (and the fast path decides them). */
START_TEST(test_one_side)
{
    static const double xs[2] = {0, -600}, xa[2] = {1e6, -1};
    for (int fi = 0; fi < 3; fi++)
        for (int mi = 0; mi < 5; mi++)
            for (int slow = 0; slow < 2; slow++) {
                qf_ref_opts o = opts(fi, mi, slow);
                qf_ref_out y;
                ck_assert_int_eq(qf_ref_out_alloc(&y, 2), QF_OK);
                ck_assert_int_eq(qf_ref_log_softmax(&o, xs, 1, 2, 1.0, &y), QF_OK);
                expect("log-softmax", fi, mi, slow, &y, 0, LSM_0[fi][mi]);
                expect("log-softmax", fi, mi, slow, &y, 1, LSM_1[fi][mi]);
                ck_assert_int_eq(qf_ref_activation(&o, QF_REF_ACT_SILU, xa, 2, &y), QF_OK);
                expect("silu", fi, mi, slow, &y, 0, SILU_BIG[fi][mi]);
                expect("silu", fi, mi, slow, &y, 1, SILU_M1[fi][mi]);
                if (!slow)
                    ck_assert_uint_eq(y.n_fast, 2);
                qf_ref_out_free(&y);
            }
}
END_TEST

int main(void)
{
    return qf_test_main(
        "refs/split", "core", 600, NULL, NULL,
        QF_TESTS(test_layernorm, test_rmsnorm, test_attention, test_rope, test_gemm, test_one_side));
}
