/* t-array.c: the array paths against the scalar ones.
 *
 * qf_format_encode_array must equal qf_format_encode element by element
 * (t-encode checks the scalar encoder against MPFR) for every format, every
 * valid mode and both saturation settings; this exercises the branch-free
 * nearest-even path of the 8- and 16-bit float formats on its edges
 * (overflow thresholds and their ties, min subnormal / 2 ties, NaN, Inf,
 * +-0, binary64 subnormals).  qf_format_decode_array must equal
 * qf_format_decode; pack4/unpack4 round-trip with element 2i in the low
 * nibble and 2i+1 in the high nibble.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "qf_format.h"
#include "qf_test.h"
#include "_ref_format.h"

#define N_RANDOM   100000L
#define MAX_REPORT 12

static long n_checked, n_failed;

/* Element i of an unpacked code array. */
static uint64_t code_at(const qf_format *f, const void *codes, size_t i)
{
    switch (f->storage_bits) {
    case 8: return ((const uint8_t *)codes)[i];
    case 16: return ((const uint16_t *)codes)[i];
    case 32: return ((const uint32_t *)codes)[i];
    default: return ((const uint64_t *)codes)[i];
    }
}

static void put_code(const qf_format *f, void *codes, size_t i, uint64_t c)
{
    switch (f->storage_bits) {
    case 8: ((uint8_t *)codes)[i] = (uint8_t)c; break;
    case 16: ((uint16_t *)codes)[i] = (uint16_t)c; break;
    case 32: ((uint32_t *)codes)[i] = (uint32_t)c; break;
    default: ((uint64_t *)codes)[i] = c; break;
    }
}

/* Push v and its binary64 neighbours. */
static size_t push3(double *x, size_t n, double v)
{
    x[n++] = v;
    x[n++] = nextafter(v, INFINITY);
    x[n++] = nextafter(v, -INFINITY);
    return n;
}

/* The edge inputs of a format, both signs; x needs room for 256. */
static size_t edge_inputs(const qf_format *f, double *x)
{
    size_t n = 0, k;
    double ulp_top = f->kind == QF_KIND_FLOAT ? ldexp(1.0, f->emax - f->man_bits) : 1.0;
    const double base[] = {
        0.0,
        f->max,
        f->max + ulp_top / 2, /* the overflow tie */
        f->max + ulp_top,
        f->max * 2,
        f->min_subnormal,
        f->min_subnormal / 2, /* tie between 0 and the smallest subnormal */
        f->min_subnormal * 1.5,
        f->min_normal,
        f->min_normal - f->min_subnormal / 2,
        0x1p-1074, /* binary64 subnormals */
        0x1.fffffffffffffp-1023,
        0x1.8p-1060,
        DBL_MAX,
        1.0,
        0.5,
        1.5,
        2.5,
        (double)f->int_max + 0.5,
        (double)f->int_min - 0.5,
        0x1.8p127,
        0x1p-127,
        0x1.8p-128,
    };
    for (k = 0; k < sizeof base / sizeof base[0]; k++) {
        n = push3(x, n, base[k]);
        n = push3(x, n, -base[k]);
    }
    x[n++] = INFINITY;
    x[n++] = -INFINITY;
    x[n++] = NAN;
    x[n++] = -NAN;
    x[n++] = ref_bits_to_double(0x7FF0000000000001ull); /* signalling NaN */
    x[n++] = ref_bits_to_double(0xFFF8000000001234ull); /* negative NaN with a payload */
    x[n++] = -0.0;
    return n;
}

/* All inputs for one format: edges, every code's value and the midpoints
 * next to it (8-bit formats and less; 16-bit formats every 7th code),
 * and random values. */
static double *inputs_for(const qf_format *f, ref_rng *r, size_t *np)
{
    long nr = qf_test_iters(N_RANDOM);
    size_t cap = 256 + 3 * 65536 / 7 + 3 * 256 + (size_t)nr + 16, n;
    double *x = malloc(cap * sizeof *x);
    uint64_t c, step;
    long i;
    ck_assert_ptr_nonnull(x);
    n = edge_inputs(f, x);
    if (f->bits <= 16) {
        step = f->bits > 8 ? 7 : 1;
        for (c = 0; c < (1ull << f->bits); c += step) {
            double v = ref_decode_d(f, c), w;
            if (isnan(v) || isinf(v))
                continue;
            if (f->kind == QF_KIND_INT) {
                w = v + 0.5;
            } else if (f->kind == QF_KIND_SCALE) {
                w = 1.5 * v;
            } else {
                /* half an ulp above |v|: the midpoint to the next code */
                int e = v == 0 ? f->emin : ilogb(v);
                w = fabs(v) + ldexp(1.0, (e < f->emin ? f->emin : e) - f->man_bits - 1);
                w = signbit(v) ? -w : w;
            }
            x[n++] = v;
            x[n++] = w; /* a midpoint (ties) for normal values */
            x[n++] = nextafter(w, 0);
        }
    }
    for (i = 0; i < nr; i++)
        x[n++] = ref_random_double(r, f);
    ck_assert(n <= cap);
    *np = n;
    return x;
}

static void check_array(const qf_format *f, const double *x, size_t n, qf_encode_opts *o, uint64_t first)
{
    void *codes = calloc(n ? n : 1, 8);
    size_t i;
    qf_status st;
    ck_assert_ptr_nonnull(codes);
    st = first ? qf_format_encode_array_at(f, x, n, codes, o, first)
               : qf_format_encode_array(f, x, n, codes, o);
    ck_assert_int_eq(st, QF_OK);
    for (i = 0; i < n; i++) {
        uint64_t rnd = o->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(o->seed, first + i) : 0;
        uint64_t want = qf_format_encode(f, x[i], o->round, o->saturate, o->random_bits, rnd);
        uint64_t got = code_at(f, codes, i);
        n_checked++;
        if (got != want) {
            n_failed++;
            if (n_failed <= MAX_REPORT)
                fprintf(stderr,
                        "FAIL encode_array %s round=%s saturate=%d element %zu x=%a: got 0x%" PRIX64
                        " scalar 0x%" PRIX64 " [QF_SEED=%" PRIu64 " t-precision-array]\n",
                        f->name, qf_round_name(o->round), o->saturate, i, x[i], got, want, qf_test_seed());
        }
    }
    free(codes);
}

static void finish(const char *what)
{
    qf_test_tally(what, n_checked, n_failed);
}

START_TEST(test_encode_array)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x300u + (unsigned)_i)};
    size_t n;
    double *x = inputs_for(f, &r, &n);
    int m, sat;
    n_checked = n_failed = 0;
    for (m = 0; m < QF_ROUND_COUNT; m++) {
        if (!qf_round_valid(f, (qf_round)m))
            continue;
        for (sat = 0; sat <= 1; sat++) {
            qf_encode_opts o = qf_encode_opts_default();
            o.round = (qf_round)m;
            o.saturate = sat;
            o.seed = qf_test_seed() + (uint64_t)m;
            o.random_bits = 1 + (int)ref_rng_below(&r, 32);
            check_array(f, x, n, &o, 0);
            /* odd lengths and offsets: the vector loop's tail */
            check_array(f, x + 1, n > 40 ? 37 : 0, &o, 0);
        }
    }
    /* opts == NULL is the default: nearest-even, not saturating */
    {
        void *codes = calloc(n, 8);
        size_t i;
        ck_assert_int_eq(qf_format_encode_array(f, x, n, codes, NULL), QF_OK);
        for (i = 0; i < n; i++) {
            n_checked++;
            if (code_at(f, codes, i) != qf_format_encode(f, x[i], QF_ROUND_RNE, 0, 32, 0))
                n_failed++;
        }
        free(codes);
    }
    free(x);
    finish(f->name);
}
END_TEST

START_TEST(test_encode_array_args)
{
    const qf_format *e4 = qf_format_get(QF_FLOAT8_E4M3FN), *e8 = qf_format_get(QF_FLOAT8_E8M0FNU);
    qf_encode_opts o = qf_encode_opts_default();
    double x[2] = {1, 2};
    uint8_t c[2];
    int i;
    ck_assert_int_eq(qf_format_encode_array(NULL, x, 2, c, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_format_encode_array(e4, NULL, 2, c, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_format_encode_array(e4, x, 2, NULL, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_format_encode_array(e4, NULL, 0, NULL, NULL), QF_OK);
    ck_assert_int_eq(qf_format_encode_array(qf_format_get(QF_FLOAT64), NULL, 0, NULL, NULL), QF_OK);
    ck_assert_int_eq(qf_format_decode_array(e4, NULL, 0, NULL), QF_OK);
    ck_assert_int_eq(qf_format_decode_array(qf_format_get(QF_FLOAT64), NULL, 0, NULL), QF_OK);
    ck_assert_int_eq(qf_format_decode_array(e4, NULL, 2, (double *)x), QF_EINVAL);
    /* the scale rules belong to e8m0 only */
    o.round = QF_ROUND_FLOOR;
    ck_assert_int_eq(qf_format_encode_array(e4, x, 2, c, &o), QF_EINVAL);
    ck_assert_int_eq(qf_format_encode_array(e8, x, 2, c, &o), QF_OK);
    ck_assert_uint_eq(c[0], 127);
    ck_assert_uint_eq(c[1], 128);
    o.round = QF_ROUND_COUNT;
    ck_assert_int_eq(qf_format_encode_array(e4, x, 2, c, &o), QF_EINVAL);
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const qf_format *f = qf_format_get((qf_format_id)i);
        ck_assert_uint_eq(qf_format_array_bytes(f, 10), (size_t)(10 * f->storage_bits / 8));
    }
}
END_TEST

/* decode_array vs decode: every code (with junk above the width in the
 * storage word) for the narrow formats, random words for the wide ones
 * (tf32 containers with their low 13 bits set, which both ignore). */
START_TEST(test_decode_array)
{
    const qf_format *f = qf_format_get((qf_format_id)_i);
    ref_rng r = {qf_test_seed() ^ (0x400u + (unsigned)_i)};
    size_t n = f->storage_bits <= 16 ? ((size_t)1 << f->storage_bits) : (size_t)qf_test_iters(N_RANDOM), i;
    void *codes = malloc(n * 8);
    double *out = malloc(n * sizeof *out);
    n_checked = n_failed = 0;
    ck_assert_ptr_nonnull(codes);
    ck_assert_ptr_nonnull(out);
    for (i = 0; i < n; i++)
        put_code(f, codes, i, f->storage_bits <= 16 ? (uint64_t)i : ref_rng_next(&r));
    ck_assert_int_eq(qf_format_decode_array(f, codes, n, out), QF_OK);
    for (i = 0; i < n; i++) {
        uint64_t c = code_at(f, codes, i);
        double want = qf_format_decode(f, c);
        n_checked++;
        if (ref_double_to_bits(out[i]) != ref_double_to_bits(want) && !(isnan(out[i]) && isnan(want))) {
            n_failed++;
            if (n_failed <= MAX_REPORT)
                fprintf(stderr, "FAIL decode_array %s 0x%" PRIX64 ": got %a scalar %a\n", f->name, c, out[i],
                        want);
        }
    }
    free(codes);
    free(out);
    finish(f->name);
}
END_TEST

START_TEST(test_pack4)
{
    ref_rng r = {qf_test_seed() ^ 0x500u};
    const size_t lens[] = {0, 1, 2, 3, 4, 7, 8, 33, 64, 1001};
    size_t li, i;
    for (li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li], nb = (n + 1) / 2;
        uint8_t *codes = malloc(n + 1), *packed = malloc(nb + 1), *back = malloc(n + 1);
        ck_assert(codes && packed && back);
        for (i = 0; i < n; i++)
            codes[i] = (uint8_t)ref_rng_next(&r); /* high nibble junk: ignored */
        memset(packed, 0xAA, nb + 1);
        ck_assert_int_eq(qf_format_pack4(codes, n, packed), QF_OK);
        for (i = 0; i < n; i++) {
            uint8_t nib = (uint8_t)((i & 1) ? packed[i / 2] >> 4 : packed[i / 2] & 0xF);
            ck_assert_msg(nib == (codes[i] & 0xF), "n=%zu element %zu: nibble 0x%X, code 0x%X", n, i, nib,
                          codes[i]);
        }
        if (n & 1)
            ck_assert_msg((packed[n / 2] >> 4) == 0, "odd n=%zu: last high nibble 0x%X", n,
                          packed[n / 2] >> 4);
        ck_assert_msg(packed[nb] == 0xAA, "n=%zu: wrote past %zu bytes", n, nb);
        memset(back, 0xEE, n + 1);
        ck_assert_int_eq(qf_format_unpack4(packed, n, back), QF_OK);
        for (i = 0; i < n; i++)
            ck_assert_uint_eq(back[i], codes[i] & 0xF);
        ck_assert_uint_eq(back[n], 0xEE);
        free(codes);
        free(packed);
        free(back);
    }
    /* the layout by hand: e2m1 codes 1, 2, 3 -> 0x21, 0x03 */
    {
        const uint8_t c[3] = {1, 2, 3};
        uint8_t p[2];
        ck_assert_int_eq(qf_format_pack4(c, 3, p), QF_OK);
        ck_assert_uint_eq(p[0], 0x21);
        ck_assert_uint_eq(p[1], 0x03);
    }
    ck_assert_int_eq(qf_format_pack4(NULL, 2, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_format_unpack4(NULL, 2, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_format_pack4(NULL, 0, NULL), QF_OK);
}
END_TEST

int main(void)
{
    return qf_test_main_loops("precision/array", "array", 1800, NULL, NULL, QF_FORMAT_COUNT,
                              QF_TESTS(test_encode_array, test_decode_array),
                              QF_TESTS(test_encode_array_args, test_pack4));
}
