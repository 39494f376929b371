/* t-npy.c: .npy reading and writing: round trips of every dtype, headers
 * written by hand (versions 1.0, 2.0, 3.0, byte orders, Fortran order,
 * Python 2 spellings), and every kind of corrupt file. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_format.h"
#include "qf_npy.h"
#include "qf_test.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    qf_test_mkdtemp(tmpdir, sizeof tmpdir, "qf-npy");
}

static void remove_tmpdir(void)
{
    qf_test_rmtree(tmpdir);
}

static const char *tpath(const char *name)
{
    return qf_test_path(tmpdir, name);
}

/* A file image: magic, version, header padded to 64 bytes, data. */
static size_t build(unsigned char *out, int major, const char *dict, const void *data, size_t data_len)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict), total = (pre + dl + 1 + 63) / 64 * 64,
           h = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)(h & 0xFF);
    out[9] = (unsigned char)(h >> 8);
    if (major != 1) {
        out[10] = (unsigned char)(h >> 16);
        out[11] = (unsigned char)(h >> 24);
    }
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', h - dl - 1);
    out[total - 1] = '\n';
    if (data_len)
        memcpy(out + total, data, data_len);
    return total + data_len;
}

/* Read from memory and from a file; both must agree on status. */
static qf_status read_both(const unsigned char *img, size_t len, qf_npy *a, char *err, size_t es)
{
    qf_npy b;
    char err2[512];
    qf_status s1, s2;
    const char *p = tpath("img.npy");
    qf_test_write_file(p, img, len, NULL);
    s1 = qf_npy_read(p, a, err, es);
    s2 = qf_npy_read_mem(img, len, "img.npy", &b, err2, sizeof err2);
    ck_assert_msg(s1 == s2, "file %d vs memory %d: %s / %s", s1, s2, s1 ? err : "", s2 ? err2 : "");
    if (s1 == QF_OK) {
        ck_assert_int_eq(a->ndim, b.ndim);
        ck_assert_uint_eq(a->count, b.count);
        ck_assert(!memcmp(a->data, b.data, a->count * qf_npy_dtype_size(a->dtype)));
        qf_npy_free(&b);
    } else {
        ck_assert_ptr_null(a->data);
        /* Same message except the leading path. */
        ck_assert_msg(strstr(err, strchr(err2, ':')) != NULL, "'%s' vs '%s'", err, err2);
    }
    return s1;
}

static void expect_error(const unsigned char *img, size_t len, qf_status want, const char *needle)
{
    qf_npy a;
    char err[512] = "";
    qf_status st = read_both(img, len, &a, err, sizeof err);
    ck_assert_msg(st == want, "status %d, want %d (%s)", st, want, err);
    ck_assert_msg(strstr(err, "img.npy") != NULL, "message does not name the file: %s", err);
    ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

START_TEST(test_roundtrip_all_dtypes)
{
    static const size_t shapes[][3] = {{0, 0, 0}, {0, 0, 0}, {5, 0, 0}, {2, 3, 0}, {2, 3, 4}};
    static const int ndims[] = {0, 1, 1, 2, 3};
    int t, s;
    make_tmpdir();
    for (t = 0; t < QF_NPY_DTYPE_COUNT; t++)
        for (s = 0; s < 5; s++) {
            qf_npy a, b;
            char err[512];
            size_t i, size = qf_npy_dtype_size((qf_npy_dtype)t);
            unsigned char *p;
            const char *path = tpath("rt.npy");
            ck_assert_int_eq(qf_npy_alloc(&a, (qf_npy_dtype)t, ndims[s], shapes[s]), QF_OK);
            p = a.data;
            for (i = 0; i < a.count * size; i++)
                p[i] = (unsigned char)(i * 37 + 11);
            if (t == QF_NPY_BOOL)
                for (i = 0; i < a.count; i++)
                    p[i] &= 1;
            ck_assert_int_eq(qf_npy_write(path, &a, err, sizeof err), QF_OK);
            ck_assert_msg(qf_npy_read(path, &b, err, sizeof err) == QF_OK, "%s", err);
            ck_assert_int_eq(b.dtype, t);
            ck_assert_int_eq(b.ndim, ndims[s]);
            ck_assert_uint_eq(b.count, a.count);
            ck_assert(!memcmp(a.shape, b.shape, (size_t)a.ndim * sizeof a.shape[0]));
            ck_assert(!memcmp(a.data, b.data, a.count * size));
            {
                /* numpy's layout: 64-byte aligned data, header ends in '\n' */
                struct stat sb;
                FILE *fp = fopen(path, "rb");
                unsigned char pre[10];
                ck_assert_int_eq(stat(path, &sb), 0);
                ck_assert_uint_eq(fread(pre, 1, 10, fp), 10);
                fclose(fp);
                ck_assert_int_eq(pre[6], 1);
                ck_assert_uint_eq((10 + pre[8] + 256 * pre[9]) % 64, 0);
                ck_assert_uint_eq((size_t)sb.st_size, 10 + pre[8] + 256u * pre[9] + a.count * size);
            }
            qf_npy_free(&a);
            qf_npy_free(&b);
        }
    remove_tmpdir();
}
END_TEST

START_TEST(test_header_written)
{
    double v[2] = {1.5, -2};
    size_t shape[1] = {2};
    char err[256], buf[200];
    FILE *fp;
    size_t n;
    make_tmpdir();
    ck_assert_int_eq(qf_npy_write_data(tpath("h.npy"), QF_NPY_FLOAT64, 1, shape, v, err, sizeof err), QF_OK);
    fp = fopen(tpath("h.npy"), "rb");
    n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    ck_assert_uint_eq(n, 144);
    ck_assert(!memcmp(
        buf, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 10 + 55));
    ck_assert_int_eq(buf[127], '\n');
    remove_tmpdir();
}
END_TEST

START_TEST(test_hand_made_headers)
{
    unsigned char img[1024];
    float f[3] = {1.0f, -0.5f, 3.25f};
    double d[3];
    qf_npy a;
    char err[512];
    size_t len;
    int major;
    make_tmpdir();
    for (major = 1; major <= 3; major++) {
        len = build(img, major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f, sizeof f);
        ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
        ck_assert_int_eq(a.dtype, QF_NPY_FLOAT32);
        ck_assert_int_eq(a.ndim, 1);
        ck_assert_uint_eq(a.shape[0], 3);
        ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
        ck_assert(d[0] == 1.0 && d[1] == -0.5 && d[2] == 3.25);
        qf_npy_free(&a);
    }
    /* Key order, double quotes, no trailing comma, Python 2 longs, spacing,
     * no final newline (header padded with NULs). */
    len = build(img, 1, "{ \"shape\" : (1L, 3L) ,\"fortran_order\":False,'descr':\"<f4\"}", f, sizeof f);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(a.ndim, 2);
    ck_assert_uint_eq(a.shape[0], 1);
    ck_assert_uint_eq(a.shape[1], 3);
    qf_npy_free(&a);
    {
        unsigned char raw[10 + 64 + 12];
        const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}";
        memcpy(raw, "\x93NUMPY\x01\x00\x40\x00", 10);
        memset(raw + 10, 0, 64);
        memcpy(raw + 10, dict, strlen(dict));
        memcpy(raw + 74, f, 12);
        ck_assert_msg(read_both(raw, sizeof raw, &a, err, sizeof err) == QF_OK, "%s", err);
        qf_npy_free(&a);
    }
    /* Scalar and empty arrays. */
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", d, 8);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(a.ndim, 0);
    ck_assert_uint_eq(a.count, 1);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 0), }", NULL, 0);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(a.count, 0);
    ck_assert_ptr_nonnull(a.data);
    qf_npy_free(&a);
    remove_tmpdir();
}
END_TEST

START_TEST(test_byte_orders_and_types)
{
    unsigned char img[1024], data[64];
    double d[4];
    uint64_t bits[4];
    qf_npy a;
    char err[512];
    size_t len, bad = 99;
    make_tmpdir();
    /* >f8 1.0 and -2.0 */
    memcpy(data, "\x3f\xf0\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00", 16);
    len = build(img, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", data, 16);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
    ck_assert(d[0] == 1.0 && d[1] == -2.0);
    qf_npy_free(&a);
    /* >u2 0x1234, <u2 0x1234 */
    len = build(img, 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (1,), }", "\x12\x34", 2);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_OK);
    ck_assert_uint_eq(bits[0], 0x1234);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", "\x12\x34", 2);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_OK);
    ck_assert_uint_eq(bits[0], 0x3412);
    qf_npy_free(&a);
    /* >i4 -2 */
    len = build(img, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", "\xff\xff\xff\xfe", 4);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
    ck_assert(d[0] == -2.0);
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_OK);
    ck_assert_uint_eq(bits[0], 0xFFFFFFFEu);
    qf_npy_free(&a);
    /* <f2 decoded exactly: 1, 2^-24, -0, inf, nan, 65504 */
    memcpy(data, "\x00\x3c\x01\x00\x00\x80\x00\x7c\x00\xfe\xff\x7b", 12);
    len = build(img, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (6,), }", data, 12);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    {
        double h[6];
        ck_assert_int_eq(qf_npy_get_f64(&a, h, NULL), QF_OK);
        ck_assert(h[0] == 1.0 && h[1] == ldexp(1, -24) && h[2] == 0 && signbit(h[2]) && isinf(h[3]) &&
                  isnan(h[4]) && h[5] == 65504.0);
    }
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_EFORMAT);
    qf_npy_free(&a);
    /* |b1, |i1, |V2 (ml_dtypes bfloat16), <f1 (ml_dtypes float8_e5m2) */
    len = build(img, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x00", 2);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(a.dtype, QF_NPY_BOOL);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "\xff\x7f", 2);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
    ck_assert(d[0] == -1 && d[1] == 127);
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_OK);
    ck_assert_uint_eq(bits[0], 0xFF);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }", "\x80\x3f", 2);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(a.dtype, QF_NPY_RAW16);
    ck_assert_int_eq(qf_npy_get_bits(&a, bits), QF_OK);
    ck_assert_uint_eq(bits[0], 0x3F80);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_EFORMAT);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '<f1', 'fortran_order': False, 'shape': (1,), }", "\x3c", 1);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    ck_assert_int_eq(a.dtype, QF_NPY_RAW8);
    qf_npy_free(&a);
    /* int64 / uint64 beyond 2^53: the first offender's index */
    {
        int64_t iv[3] = {1, -(1ll << 53) - 2, (1ll << 53) + 1};
        uint64_t uv[3] = {1ull << 63, 3, ~0ull};
        len = build(img, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", iv, sizeof iv);
        ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
        ck_assert_int_eq(qf_npy_get_f64(&a, d, &bad), QF_EINVAL);
        ck_assert_uint_eq(bad, 2);
        qf_npy_free(&a);
        iv[2] = INT64_MAX;
        len = build(img, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", iv, sizeof iv);
        ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
        ck_assert_int_eq(qf_npy_get_f64(&a, d, &bad), QF_EINVAL);
        ck_assert_uint_eq(bad, 2);
        qf_npy_free(&a);
        iv[2] = INT64_MIN;
        len = build(img, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", iv, sizeof iv);
        ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
        ck_assert_int_eq(qf_npy_get_f64(&a, d, &bad), QF_OK);
        ck_assert(d[1] == -9007199254740994.0 && d[2] == -9223372036854775808.0);
        qf_npy_free(&a);
        len = build(img, 1, "{'descr': '<u8', 'fortran_order': False, 'shape': (3,), }", uv, sizeof uv);
        ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
        ck_assert_int_eq(qf_npy_get_f64(&a, d, &bad), QF_EINVAL);
        ck_assert_uint_eq(bad, 2);
        qf_npy_free(&a);
    }
    remove_tmpdir();
}
END_TEST

START_TEST(test_fortran_order)
{
    unsigned char img[1024];
    /* A 2 x 3 matrix [[0 1 2] [3 4 5]] stored column by column. */
    double f2[6] = {0, 3, 1, 4, 2, 5}, d[24];
    double f3[24];
    qf_npy a;
    char err[512];
    size_t len, i, j, k;
    make_tmpdir();
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f2, sizeof f2);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
    for (i = 0; i < 6; i++)
        ck_assert(d[i] == (double)i);
    qf_npy_free(&a);
    /* 2 x 3 x 4: value = C-order index; Fortran offset i + 2 j + 6 k. */
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            for (k = 0; k < 4; k++)
                f3[i + 2 * j + 6 * k] = (double)(i * 12 + j * 4 + k);
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4), }", f3, sizeof f3);
    ck_assert_msg(read_both(img, len, &a, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq(qf_npy_get_f64(&a, d, NULL), QF_OK);
    for (i = 0; i < 24; i++)
        ck_assert_msg(d[i] == (double)i, "element %zu is %g", i, d[i]);
    qf_npy_free(&a);
    /* 1-d and empty Fortran arrays are the same as C order. */
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", f2, 24);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    qf_npy_free(&a);
    len = build(img, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 3), }", NULL, 0);
    ck_assert(read_both(img, len, &a, err, sizeof err) == QF_OK);
    qf_npy_free(&a);
    remove_tmpdir();
}
END_TEST

START_TEST(test_corrupt_files)
{
    unsigned char img[4096], good[256];
    double d[2] = {1, 2};
    size_t len, glen, cut;
    char dict[512];
    int i;
    make_tmpdir();
    glen = build(good, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d, 16);

    /* Missing file, directory. */
    {
        qf_npy a;
        char err[512];
        ck_assert_int_eq(qf_npy_read(tpath("nope.npy"), &a, err, sizeof err), QF_EIO);
        ck_assert_msg(strstr(err, "nope.npy") && strstr(err, "cannot open"), "%s", err);
        ck_assert_int_eq(qf_npy_read(tmpdir, &a, err, sizeof err), QF_EIO);
        ck_assert_msg(strstr(err, "directory"), "%s", err);
    }
    /* Every truncation of a good file is an error, never a crash. */
    for (cut = 0; cut < glen; cut++) {
        qf_npy a;
        char err[512];
        ck_assert_int_ne(read_both(good, cut, &a, err, sizeof err), QF_OK);
        ck_assert_msg(strstr(err, cut < 6 ? "bad magic" : "truncated"), "cut %zu: %s", cut, err);
    }
    expect_error(good, 6, QF_EPARSE, "truncated header");
    expect_error(good, 40, QF_EPARSE, "truncated header: expected 118 header bytes, found 30");
    expect_error(good, glen - 3, QF_EPARSE, "truncated data: shape (2,) of float64 needs 16 bytes");
    /* Extra data. */
    memcpy(img, good, glen);
    memset(img + glen, 0, 8);
    expect_error(img, glen + 8, QF_EPARSE, "size mismatch");
    /* Bad magic, bad version. */
    memcpy(img, good, glen);
    img[1] = 'X';
    expect_error(img, glen, QF_EPARSE, "bad magic");
    memcpy(img, good, glen);
    img[6] = 4;
    expect_error(img, glen, QF_EPARSE, "unsupported .npy version 4.0");
    img[6] = 1;
    img[7] = 1;
    expect_error(img, glen, QF_EPARSE, "unsupported .npy version 1.1");
    /* Header length over the limit (v2), and a v1 length past the end. */
    memcpy(img, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
    expect_error(img, 12, QF_EPARSE, "exceeds the limit");
    memcpy(img, "\x93NUMPY\x01\x00\xff\xff{", 11);
    expect_error(img, 11, QF_EPARSE, "truncated header");

    /* Header contents. */
    {
        static const struct {
            const char *dict;
            qf_status st;
            const char *needle;
        } cases[] = {
            {"{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT,
             "descr '<c16' not supported"},
            {"{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT,
             "descr '<f16' not supported"},
            {"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT,
             "descr '|O' not supported"},
            {"{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT,
             "descr '<U8' not supported"},
            {"{'descr': [('x', '<f8')], 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT, "structured"},
            {"{'fortran_order': False, 'shape': (2,), }", QF_EPARSE, "missing key 'descr'"},
            {"{'descr': '<f8', 'shape': (2,), }", QF_EPARSE, "missing key 'fortran_order'"},
            {"{'descr': '<f8', 'fortran_order': False, }", QF_EPARSE, "missing key 'shape'"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}", QF_EPARSE,
             "unexpected key 'x'"},
            {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", QF_EPARSE,
             "duplicate key 'descr'"},
            {"{'descr': '<f8', 'fortran_order': false, 'shape': (2,), }", QF_EPARSE,
             "'fortran_order' must be True or False"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (2), }", QF_EPARSE, "is not a tuple"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': [2], }", QF_EPARSE,
             "'shape' must be a tuple"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", QF_EPARSE,
             "expected a non-negative integer in 'shape'"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), ", QF_EPARSE,
             "expected a quoted string"},
            {"{'descr': '<f8' 'fortran_order': False, 'shape': (2,), }", QF_EPARSE, "expected ',' or '}'"},
            {"{'descr' '<f8', 'fortran_order': False, 'shape': (2,), }", QF_EPARSE,
             "expected ':' after key 'descr'"},
            {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,), }", QF_EFORMAT,
             "descr '<f8, ' not supported"},
            {"['descr', '<f8']", QF_EPARSE, "expected '{'"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), } x", QF_EPARSE, "unexpected text"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", QF_EPARSE,
             "too large"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", QF_EPARSE,
             "overflows"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", QF_EPARSE,
             "truncated data: shape (1000000000000,) of float64 needs 8000000000000 bytes"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", QF_EPARSE, "truncated data"},
            {"{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", QF_EPARSE, "size mismatch"},
            {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", QF_EPARSE, "size mismatch"},
        };
        for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            len = build(img, 1, cases[i].dict, d, 16);
            expect_error(img, len, cases[i].st, cases[i].needle);
            len = build(img, 2, cases[i].dict, d, 16);
            expect_error(img, len, cases[i].st, cases[i].needle);
        }
    }
    /* Too many dimensions. */
    strcpy(dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (");
    for (i = 0; i <= QF_NPY_MAX_DIMS; i++)
        strcat(dict, "1, ");
    strcat(dict, "), }");
    len = build(img, 1, dict, d, 8);
    expect_error(img, len, QF_EPARSE, "more than 32 dimensions");
    remove_tmpdir();
}
END_TEST

/* Every single-byte change of a good file's first 128 bytes reads as a
 * consistent array or fails with a message, never crashes (ASan build). */
START_TEST(test_byte_corruption)
{
    unsigned char good[256], img[256];
    double d[6] = {1, 2, 3, 4, 5, 6};
    static const unsigned char vals[] = {0x00, 0x01, 0x20, 0x27, 0x28, 0x29, 0x2C, 0x30, 0x39, 0x3A,
                                         0x7B, 0x7D, 0x80, 0xFF, '<',  '>',  'f',  'i',  'T',  'L'};
    size_t glen = build(good, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d);
    size_t pos, v, ok = 0, bad = 0;
    uint64_t seed = qf_test_seed();
    long it, n = qf_test_iters(2000);
    for (pos = 0; pos < 128; pos++)
        for (v = 0; v < sizeof vals; v++) {
            qf_npy a;
            char err[512];
            memcpy(img, good, glen);
            img[pos] = vals[v];
            if (qf_npy_read_mem(img, glen, "c.npy", &a, err, sizeof err) == QF_OK) {
                ck_assert_uint_eq(a.count * qf_npy_dtype_size(a.dtype), 48);
                qf_npy_free(&a);
                ok++;
            } else {
                ck_assert_msg(!strncmp(err, "c.npy: ", 7), "%s", err);
                ck_assert_ptr_null(a.data);
                bad++;
            }
        }
    /* random multi-byte damage, seeded (QF_SEED) */
    for (it = 0; it < n; it++) {
        qf_npy a;
        char err[512];
        int k;
        memcpy(img, good, glen);
        for (k = 0; k < 3; k++) {
            uint64_t w = qf_rng_u64(seed, (uint64_t)it * 3 + (uint64_t)k);
            img[(w >> 8) % 128] = (unsigned char)w;
        }
        if (qf_npy_read_mem(img, glen, "c.npy", &a, err, sizeof err) == QF_OK) {
            ck_assert_uint_eq(a.count * qf_npy_dtype_size(a.dtype), 48);
            qf_npy_free(&a);
        }
    }
    ck_assert_uint_gt(ok, 0);
    ck_assert_uint_gt(bad, 0);
}
END_TEST

START_TEST(test_write_errors_and_helpers)
{
    double v = 1;
    size_t shape[3] = {64, 32, 0};
    char err[512], buf[64];
    qf_npy a;
    make_tmpdir();
    ck_assert_int_eq(
        qf_npy_write_data(tpath("no/such/dir/x.npy"), QF_NPY_FLOAT64, 0, NULL, &v, err, sizeof err), QF_EIO);
    ck_assert_msg(strstr(err, "no/such/dir/x.npy") && strstr(err, "cannot create"), "%s", err);
    ck_assert_int_eq(qf_npy_write_data(tpath("x.npy"), QF_NPY_FLOAT64, 1, shape, NULL, err, sizeof err),
                     QF_EINVAL);
    ck_assert_int_eq(qf_npy_write_data(tpath("x.npy"), QF_NPY_FLOAT64, 40, shape, &v, err, sizeof err),
                     QF_EINVAL);
    qf_npy_shape_str(2, shape, buf, sizeof buf);
    ck_assert_str_eq(buf, "(64, 32)");
    qf_npy_shape_str(1, shape, buf, sizeof buf);
    ck_assert_str_eq(buf, "(64,)");
    qf_npy_shape_str(0, shape, buf, sizeof buf);
    ck_assert_str_eq(buf, "()");
    qf_npy_shape_str(3, shape, buf, 5);
    ck_assert_uint_le(strlen(buf), 4);
    ck_assert_str_eq(qf_npy_dtype_descr(QF_NPY_UINT16), "<u2");
    ck_assert_str_eq(qf_npy_dtype_name(QF_NPY_BOOL), "bool");
    ck_assert_int_eq(qf_npy_dtype_kind(QF_NPY_RAW16), 'V');
    ck_assert_int_eq(qf_npy_alloc(&a, QF_NPY_FLOAT64, 3, shape), QF_OK);
    ck_assert_uint_eq(a.count, 0);
    qf_npy_free(&a);
    qf_npy_free(&a); /* twice is harmless */
    {
        size_t huge[2] = {SIZE_MAX / 2, 3};
        ck_assert_int_eq(qf_npy_alloc(&a, QF_NPY_FLOAT64, 2, huge), QF_EINVAL);
    }
    remove_tmpdir();
}
END_TEST

int main(void)
{
    return qf_test_main("npy", "core", 0, NULL, NULL,
                        QF_TESTS(test_roundtrip_all_dtypes, test_header_written, test_hand_made_headers,
                                 test_byte_orders_and_types, test_fortran_order, test_corrupt_files,
                                 test_byte_corruption, test_write_errors_and_helpers));
}
