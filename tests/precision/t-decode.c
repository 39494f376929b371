/* t-decode.c: qf_format_decode, qf_format_decode_mpfr, qf_format_is_nan and
 * qf_format_is_inf against values MPFR builds from each code's sign,
 * exponent and fraction fields (_ref_format.h), and the format table
 * (precision/format.c) against a transcription of docs/numerics.md#number-formats.
 *
 * Every code of every format of 16 bits or less is checked; float32 and
 * tf32 get random codes plus their special codes; float64 random codes.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>

#include "qf_format.h"
#include "qf_test.h"
#include "_ref_format.h"

#define N_WIDE     200000L
#define MAX_REPORT 12

/* docs/numerics.md#number-formats, one row per format (IEEE 754 for float64 and
 * float32; the integer ranges by definition).  tf32: the table says "as
 * float32" for max and min subnormal; with 10 fraction bits (NVIDIA A100
 * whitepaper) the exact values are (2 - 2^-10) 2^127 and 2^-136. */
typedef struct facts_row {
    qf_format_id id;
    const char *name;
    qf_format_kind kind;
    int bits, exp_bits, man_bits, bias;
    double max, min_normal, min_subnormal;
    int has_inf;
    qf_nan_kind nan;
    int negzero;
    int64_t imin, imax;
} facts_row;

/* clang-format off */
static const facts_row facts[QF_FORMAT_COUNT] = {
    { QF_FLOAT64,         "float64",         QF_KIND_FLOAT, 64, 11, 52, 1023, DBL_MAX,      0x1p-1022, 0x1p-1074, 1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_FLOAT32,         "float32",         QF_KIND_FLOAT, 32,  8, 23,  127, FLT_MAX,      0x1p-126,  0x1p-149,  1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_TF32,            "tf32",            QF_KIND_FLOAT, 19,  8, 10,  127, 0x1.ffcp127,  0x1p-126,  0x1p-136,  1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_BFLOAT16,        "bfloat16",        QF_KIND_FLOAT, 16,  8,  7,  127, 0x1.FEp127,   0x1p-126,  0x1p-133,  1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_FLOAT16,         "float16",         QF_KIND_FLOAT, 16,  5, 10,   15, 65504,        0x1p-14,   0x1p-24,   1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_FLOAT8_E4M3FN,   "float8_e4m3fn",   QF_KIND_FLOAT,  8,  4,  3,    7, 448,          0x1p-6,    0x1p-9,    0, QF_NAN_FN,   1, 0, 0 },
    { QF_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", QF_KIND_FLOAT,  8,  4,  3,    8, 240,          0x1p-7,    0x1p-10,   0, QF_NAN_FNUZ, 0, 0, 0 },
    { QF_FLOAT8_E5M2,     "float8_e5m2",     QF_KIND_FLOAT,  8,  5,  2,   15, 57344,        0x1p-14,   0x1p-16,   1, QF_NAN_IEEE, 1, 0, 0 },
    { QF_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", QF_KIND_FLOAT,  8,  5,  2,   16, 57344,        0x1p-15,   0x1p-17,   0, QF_NAN_FNUZ, 0, 0, 0 },
    { QF_FLOAT8_E8M0FNU,  "float8_e8m0fnu",  QF_KIND_SCALE,  8,  8,  0,  127, 0x1p127,      0x1p-127,  0x1p-127,  0, QF_NAN_E8M0, 0, 0, 0 },
    { QF_FLOAT6_E2M3FN,   "float6_e2m3fn",   QF_KIND_FLOAT,  6,  2,  3,    1, 7.5,          1,         0.125,     0, QF_NAN_NONE, 1, 0, 0 },
    { QF_FLOAT6_E3M2FN,   "float6_e3m2fn",   QF_KIND_FLOAT,  6,  3,  2,    3, 28,           0.25,      0.0625,    0, QF_NAN_NONE, 1, 0, 0 },
    { QF_FLOAT4_E2M1FN,   "float4_e2m1fn",   QF_KIND_FLOAT,  4,  2,  1,    1, 6,            1,         0.5,       0, QF_NAN_NONE, 1, 0, 0 },
    { QF_INT8,            "int8",            QF_KIND_INT,    8,  0,  0,    0, 127,          1,         1,         0, QF_NAN_NONE, 0, -128, 127 },
    { QF_UINT8,           "uint8",           QF_KIND_INT,    8,  0,  0,    0, 255,          1,         1,         0, QF_NAN_NONE, 0, 0, 255 },
    { QF_INT4,            "int4",            QF_KIND_INT,    4,  0,  0,    0, 7,            1,         1,         0, QF_NAN_NONE, 0, -8, 7 },
    { QF_UINT4,           "uint4",           QF_KIND_INT,    4,  0,  0,    0, 15,           1,         1,         0, QF_NAN_NONE, 0, 0, 15 },
    { QF_INT32,           "int32",           QF_KIND_INT,   32,  0,  0,    0, 2147483647.0, 1,         1,         0, QF_NAN_NONE, 0, -2147483647 - 1, 2147483647 },
};
/* clang-format on */

START_TEST(test_table)
{
    const facts_row *w = &facts[_i];
    const qf_format *f = qf_format_get(w->id);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->id, w->id);
    ck_assert_str_eq(f->name, w->name);
    ck_assert_ptr_eq(qf_format_lookup(w->name), f);
    ck_assert_int_eq(f->kind, w->kind);
    ck_assert_int_eq(f->bits, w->bits);
    ck_assert_int_eq(f->storage_bits, w->bits <= 8 ? 8 : w->bits <= 16 ? 16 : w->bits <= 32 ? 32 : 64);
    ck_assert_msg(f->max == w->max, "%s max %a, FACTS %a", f->name, f->max, w->max);
    ck_assert_msg(f->min_normal == w->min_normal, "%s min_normal %a", f->name, f->min_normal);
    ck_assert_msg(f->min_subnormal == w->min_subnormal, "%s min_subnormal %a", f->name, f->min_subnormal);
    ck_assert_int_eq(f->has_inf, w->has_inf);
    ck_assert_int_eq(f->nan, w->nan);
    ck_assert_int_eq(f->has_negzero, w->negzero);
    if (w->kind == QF_KIND_INT) {
        ck_assert_int_eq(f->int_min, w->imin);
        ck_assert_int_eq(f->int_max, w->imax);
        ck_assert_int_eq(f->is_signed, w->imin < 0);
        ck_assert_uint_eq(f->max_code, (uint64_t)w->imax);
        return;
    }
    ck_assert_int_eq(f->is_signed, w->kind == QF_KIND_FLOAT);
    ck_assert_int_eq(f->exp_bits, w->exp_bits);
    ck_assert_int_eq(f->man_bits, w->man_bits);
    ck_assert_int_eq(f->bits, w->kind == QF_KIND_SCALE ? 8 : 1 + w->exp_bits + w->man_bits);
    ck_assert_int_eq(f->bias, w->bias);
    /* min normal 2^(1 - bias); e8m0 has no zero code, so 0x00 is 2^-bias */
    ck_assert_int_eq(f->emin, w->kind == QF_KIND_SCALE ? -w->bias : 1 - w->bias);
    ck_assert_msg(ldexp(1.0, f->emin) == w->min_normal, "%s emin", f->name);
    ck_assert_int_eq(f->emax, ilogb(w->max)); /* binade of max */
    ck_assert_msg(f->epsilon == ldexp(1.0, -w->man_bits), "%s epsilon", f->name);
    ck_assert_int_eq(f->has_subnormal, w->kind == QF_KIND_FLOAT);
    ck_assert_msg(ldexp(1.0, f->emin - f->man_bits) == w->min_subnormal || w->kind == QF_KIND_SCALE, "%s",
                  f->name);
    /* max_code decodes (from its fields) to max */
    {
        mpfr_t v;
        mpfr_init2(v, 64);
        ck_assert_int_eq(ref_decode_mpfr(f, f->max_code, v), 'v');
        ck_assert_msg(mpfr_cmp_d(v, w->max) == 0, "%s max_code 0x%" PRIX64, f->name, f->max_code);
        mpfr_clear(v);
    }
}
END_TEST

static long n_checked, n_failed;

/* One code: value (zero sign included), NaN/Inf class, decode_mpfr. */
static void check_code(const qf_format *f, uint64_t code)
{
    mpfr_t want, back;
    char k;
    double got = qf_format_decode(f, code);
    int bad = 0;
    mpfr_init2(want, 64);
    mpfr_init2(back, 64);
    k = ref_decode_mpfr(f, code, want);
    n_checked++;
    if (k == 'n') {
        bad = !isnan(got) || !qf_format_is_nan(f, code) || qf_format_is_inf(f, code);
    } else {
        bad = isnan(got) || mpfr_cmp_d(want, got) != 0 || (mpfr_signbit(want) != 0) != (signbit(got) != 0) ||
              qf_format_is_nan(f, code) || (k == 'i') != (qf_format_is_inf(f, code) != 0);
        if (!bad) {
            qf_format_decode_mpfr(f, code, back);
            bad = mpfr_cmp(back, want) != 0 || mpfr_signbit(back) != mpfr_signbit(want);
        }
    }
    if (bad) {
        n_failed++;
        if (n_failed <= MAX_REPORT)
            mpfr_fprintf(stderr,
                         "FAIL decode %s code 0x%" PRIX64 ": got %a (is_nan %d is_inf %d), from fields %Ra "
                         "[QF_SEED=%" PRIu64 " t-precision-decode]\n",
                         f->name, code, got, qf_format_is_nan(f, code), qf_format_is_inf(f, code), want,
                         qf_test_seed());
    }
    mpfr_clears(want, back, (mpfr_ptr)0);
}

static void finish(const char *what)
{
    qf_test_tally(what, n_checked, n_failed);
}

/* Every code of the formats of 16 bits or less; bits above the width are
 * ignored (qf_format.h). */
START_TEST(test_exhaustive)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (unsigned)_i};
    uint64_t c, n;
    n_checked = n_failed = 0;
    if (f->bits > 16)
        return;
    n = 1ull << f->bits;
    for (c = 0; c < n; c++) {
        double a, b;
        uint64_t junk = (ref_rng_next(&r) << f->bits) & 0xFFFFFFFFull;
        check_code(f, c);
        a = qf_format_decode(f, c);
        b = qf_format_decode(f, c | junk);
        n_checked++;
        if (!(a == b && signbit(a) == signbit(b)) && !(isnan(a) && isnan(b))) {
            n_failed++;
            fprintf(stderr,
                    "FAIL decode %s: 0x%" PRIX64 " and 0x%" PRIX64 " differ (high bits not ignored)\n",
                    f->name, c, c | junk);
        }
    }
    finish(f->name);
}
END_TEST

/* float32, tf32, float64: random codes and the special ones. */
START_TEST(test_wide)
{
    static const qf_format_id ids[] = {QF_FLOAT32, QF_TF32, QF_FLOAT64};
    ref_rng r = {qf_test_seed() ^ 0x77u};
    long i, n = qf_test_iters(N_WIDE);
    int k;
    n_checked = n_failed = 0;
    for (k = 0; k < 3; k++) {
        const qf_format *f = qf_format_get(ids[k]);
        const uint64_t sp32[] = {0,          0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                                 0x7F802000, 0x00002000, 0x80002000, 0x00800000, 0x7F7FE000, 0x00000001,
                                 0x007FE000, 0x7F7FFFFF, 0x3F800000, 0xBF800000};
        for (i = 0; i < (long)(sizeof sp32 / sizeof sp32[0]); i++)
            check_code(f, f->id == QF_FLOAT64 ? sp32[i] << 32 : sp32[i]);
        for (i = 0; i < n; i++) {
            uint64_t c = ref_rng_next(&r);
            if (f->id != QF_FLOAT64)
                c &= 0xFFFFFFFFull;
            if (f->id == QF_TF32)
                c &= 0xFFFFE000ull; /* tf32 codes: low 13 bits zero */
            if ((i & 3) == 0)       /* subnormals and small exponents more often */
                c &= f->id == QF_FLOAT64 ? 0x800FFFFFFFFFFFFFull : 0x807FFFFFull;
            check_code(f, c);
            if (f->id == QF_FLOAT64) {
                double d = qf_format_decode(f, c);
                n_checked++;
                if (ref_double_to_bits(d) != c && !isnan(d)) {
                    n_failed++;
                    fprintf(stderr, "FAIL decode float64 0x%016" PRIX64 " is not the identity\n", c);
                }
            }
        }
    }
    finish("float32/tf32/float64");
}
END_TEST

/* Known values, readable: OCP OFP8 table 1, MX v1.0 tables, ml_dtypes. */
START_TEST(test_known)
{
    const qf_format *e4 = qf_format_get(QF_FLOAT8_E4M3FN), *e5z = qf_format_get(QF_FLOAT8_E5M2FNUZ);
    const qf_format *fp4 = qf_format_get(QF_FLOAT4_E2M1FN), *e8 = qf_format_get(QF_FLOAT8_E8M0FNU);
    const qf_format *i4 = qf_format_get(QF_INT4), *tf = qf_format_get(QF_TF32);
    const double fp4_values[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    int i;
    ck_assert(qf_format_decode(e4, 0x7E) == 448);
    ck_assert(qf_format_decode(e4, 0x01) == 0x1p-9);
    ck_assert(isnan(qf_format_decode(e4, 0xFF)));
    ck_assert(!isnan(qf_format_decode(e4, 0x78))); /* 256: S.1111.000 is a number in E4M3 */
    ck_assert(isnan(qf_format_decode(e5z, 0x80)));
    ck_assert(qf_format_decode(e5z, 0x7F) == 57344);
    for (i = 0; i < 8; i++) {
        ck_assert(qf_format_decode(fp4, (uint64_t)i) == fp4_values[i]);
        ck_assert(qf_format_decode(fp4, (uint64_t)i | 8) == -fp4_values[i]);
    }
    ck_assert(signbit(qf_format_decode(fp4, 8)));
    ck_assert(qf_format_decode(e8, 0) == 0x1p-127);
    ck_assert(qf_format_decode(e8, 127) == 1);
    ck_assert(qf_format_decode(e8, 0xFE) == 0x1p127);
    ck_assert(isnan(qf_format_decode(e8, 0xFF)));
    ck_assert(qf_format_decode(i4, 0x8) == -8);
    ck_assert(qf_format_decode(i4, 0xF) == -1);
    ck_assert(qf_format_decode(tf, 0x3F802000) == 1 + 0x1p-10);
    ck_assert(qf_format_is_inf(tf, 0xFF800000));
    ck_assert(qf_format_is_nan(tf, 0x7F802000));
}
END_TEST

int main(void)
{
    return qf_test_main_loops("precision/decode", "decode", 1800, NULL, NULL, QF_FORMAT_COUNT,
                              QF_TESTS(test_table, test_exhaustive), QF_TESTS(test_known, test_wide));
}
