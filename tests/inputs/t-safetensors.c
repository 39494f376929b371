/* t-safetensors.c: .safetensors round trips through the writer (every
 * dtype, metadata, scalars, empty tensors, file and memory), and every
 * class of corrupt or hostile file, each with a message naming the file
 * and the field. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_format.h"
#include "qf_safetensors.h"
#include "qf_test.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    qf_test_mkdtemp(tmpdir, sizeof tmpdir, "qf-st");
}

static void remove_tmpdir(void)
{
    qf_test_rmtree(tmpdir);
}

static const char *tpath(const char *name)
{
    return qf_test_path(tmpdir, name);
}

/* A file image: 8-byte length, header as given (no padding), data. */
static size_t build(unsigned char *out, const char *hdr, const void *data, size_t dlen)
{
    size_t h = strlen(hdr);
    int i;
    for (i = 0; i < 8; i++)
        out[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(out + 8, hdr, h);
    if (dlen)
        memcpy(out + 8 + h, data, dlen);
    return 8 + h + dlen;
}

/* Open from memory and from a file: both must give the same status, and
 * on failure a message that starts with the name and contains `want`. */
static qf_status open_both(const unsigned char *img, size_t len, const char *want)
{
    qf_safetensors a, b;
    char e1[512] = "", e2[512] = "";
    const char *p = tpath("x.safetensors");
    qf_status s1, s2;
    qf_test_write_file(p, img, len, NULL);
    s1 = qf_safetensors_read_mem(img, len, "mem.safetensors", &a, e1, sizeof e1);
    s2 = qf_safetensors_open(p, &b, e2, sizeof e2);
    ck_assert_int_eq(s1, s2);
    if (s1 == QF_OK) {
        qf_safetensors_close(&a);
        qf_safetensors_close(&b);
        ck_assert_ptr_null(want);
        return s1;
    }
    ck_assert_ptr_null(a.tensors);
    ck_assert_msg(strncmp(e1, "mem.safetensors: ", 17) == 0, "message: %s", e1);
    ck_assert_msg(strncmp(e2, p, strlen(p)) == 0, "message: %s", e2);
    if (want)
        ck_assert_msg(strstr(e1, want) != NULL, "want '%s' in: %s", want, e1);
    return s1;
}

static unsigned char img[1 << 16];

START_TEST(test_round_trip)
{
    double f64[6] = {1.5, -0.0, 1e300, -2.25, 0x1p-1074, INFINITY};
    float f32[3] = {1.0f, -3.5f, 0x1p-149f};
    uint16_t f16[2] = {0x3C00, 0xFC00}, bf16[2] = {0x3F80, 0xC0A0};
    uint8_t e4[4] = {0x38, 0x7F, 0x7E, 0x80}, e5[2] = {0x3C, 0x7C};
    int8_t i8[3] = {-128, 0, 127};
    uint8_t u8[2] = {0, 255}, bl[3] = {0, 1, 1};
    int16_t i16[2] = {-32768, 5};
    uint16_t u16[1] = {65535};
    int32_t i32[2] = {-7, 1 << 30};
    uint32_t u32[1] = {4000000000u};
    int64_t i64[2] = {-(1ll << 53), 42};
    uint64_t u64[1] = {1ull << 53};
    size_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, s4[2] = {2, 2}, s1[1] = {1}, s0[2] = {0, 5};
    qf_st_write_tensor t[] = {
        {"f64", QF_ST_F64, 2, s23, f64},   {"f32", QF_ST_F32, 1, s3, f32},
        {"f16", QF_ST_F16, 1, s2, f16},    {"bf16", QF_ST_BF16, 1, s2, bf16},
        {"e4", QF_ST_F8_E4M3, 2, s4, e4},  {"e5", QF_ST_F8_E5M2, 1, s2, e5},
        {"i8", QF_ST_I8, 1, s3, i8},       {"u8", QF_ST_U8, 1, s2, u8},
        {"bool", QF_ST_BOOL, 1, s3, bl},   {"i16", QF_ST_I16, 1, s2, i16},
        {"u16", QF_ST_U16, 1, s1, u16},    {"i32", QF_ST_I32, 1, s2, i32},
        {"u32", QF_ST_U32, 1, s1, u32},    {"i64", QF_ST_I64, 1, s2, i64},
        {"u64", QF_ST_U64, 1, s1, u64},    {"scalar", QF_ST_F32, 0, NULL, f32},
        {"empty", QF_ST_F16, 2, s0, NULL},
    };
    const char *mk[] = {"format", "note"}, *mv[] = {"pt", "qualify test"};
    size_t n = sizeof t / sizeof t[0], i, k, len;
    unsigned char *buf;
    char err[512];
    qf_safetensors st;
    double v[8];
    uint64_t bits[8];
    const qf_format *fmt;
    double *vals;

    ck_assert_int_eq(qf_safetensors_write_mem(t, n, mk, mv, 2, &buf, &len, err, sizeof err), QF_OK);
    ck_assert_uint_eq((buf[0] | buf[1] << 8) % 8, 0); /* header padded to 8 */
    ck_assert_int_eq(qf_safetensors_write(tpath("rt.safetensors"), t, n, mk, mv, 2, err, sizeof err), QF_OK);
    for (k = 0; k < 2; k++) {
        if (k == 0)
            ck_assert_int_eq(qf_safetensors_read_mem(buf, len, "rt", &st, err, sizeof err), QF_OK);
        else
            ck_assert_msg(qf_safetensors_open(tpath("rt.safetensors"), &st, err, sizeof err) == QF_OK, "%s",
                          err);
        ck_assert_uint_eq(st.ntensors, n);
        ck_assert_str_eq(qf_safetensors_meta(&st, "note"), "qualify test");
        ck_assert_str_eq(qf_safetensors_meta(&st, "format"), "pt");
        ck_assert_ptr_null(qf_safetensors_meta(&st, "absent"));
        /* data order = write order */
        for (i = 0; i < n; i++)
            ck_assert_str_eq(st.tensors[i].name, t[i].name);

        ck_assert_int_eq(qf_safetensors_find(&st, "f64", &i, err, sizeof err), QF_OK);
        ck_assert_int_eq(qf_safetensors_get_f64(&st, i, v, err, sizeof err), QF_OK);
        ck_assert_mem_eq(v, f64, sizeof f64);
        ck_assert_uint_eq(st.tensors[i].ndim, 2);
        ck_assert_uint_eq(st.tensors[i].shape[1], 3);

        ck_assert_int_eq(qf_safetensors_load_f64(&st, "f32", &vals, &i, &fmt, err, sizeof err), QF_OK);
        ck_assert_uint_eq(i, 3);
        ck_assert_ptr_eq(fmt, qf_format_get(QF_FLOAT32));
        ck_assert(vals[0] == 1 && vals[1] == -3.5 && vals[2] == 0x1p-149);
        free(vals);

#define GET(name)                                                                                            \
    do {                                                                                                     \
        ck_assert_int_eq(qf_safetensors_find(&st, name, &i, err, sizeof err), QF_OK);                        \
        ck_assert_msg(qf_safetensors_get_f64(&st, i, v, err, sizeof err) == QF_OK, "%s", err);               \
    } while (0)
        GET("f16");
        ck_assert(v[0] == 1 && v[1] == -INFINITY);
        GET("bf16");
        ck_assert(v[0] == 1 && v[1] == -5);
        GET("e4");
        ck_assert(v[0] == 1 && isnan(v[1]) && v[2] == 448 && v[3] == 0 && signbit(v[3]));
        ck_assert_ptr_eq(qf_st_dtype_format(st.tensors[i].dtype), qf_format_get(QF_FLOAT8_E4M3FN));
        GET("e5");
        ck_assert(v[0] == 1 && v[1] == INFINITY);
        GET("i8");
        ck_assert(v[0] == -128 && v[1] == 0 && v[2] == 127);
        ck_assert_int_eq(qf_safetensors_get_bits(&st, i, bits, err, sizeof err), QF_OK);
        ck_assert_uint_eq(bits[0], 0x80);
        GET("u8");
        ck_assert(v[0] == 0 && v[1] == 255);
        GET("bool");
        ck_assert(v[0] == 0 && v[1] == 1 && v[2] == 1);
        GET("i16");
        ck_assert(v[0] == -32768 && v[1] == 5);
        GET("u16");
        ck_assert(v[0] == 65535);
        GET("i32");
        ck_assert(v[0] == -7 && v[1] == 0x1p30);
        GET("u32");
        ck_assert(v[0] == 4e9);
        GET("i64");
        ck_assert(v[0] == -0x1p53 && v[1] == 42);
        GET("u64");
        ck_assert(v[0] == 0x1p53);
        GET("scalar");
        ck_assert_int_eq(st.tensors[i].ndim, 0);
        ck_assert_uint_eq(st.tensors[i].count, 1);
        ck_assert(v[0] == 1);
        GET("empty");
        ck_assert_uint_eq(st.tensors[i].count, 0);
#undef GET
        ck_assert_int_eq(qf_safetensors_find(&st, "nope", &i, err, sizeof err), QF_EINVAL);
        ck_assert_msg(strstr(err, "no tensor 'nope'") && strstr(err, "f64, f32"), "%s", err);
        qf_safetensors_close(&st);
    }
    free(buf);
}
END_TEST

/* Integers beyond 2^53 cannot be binary64 values: an error naming the
 * element, not a rounded number. */
START_TEST(test_inexact_int)
{
    int64_t i64[2] = {1, (1ll << 53) + 1};
    uint64_t u64[1] = {~0ull};
    size_t s2[1] = {2}, s1[1] = {1}, len, i;
    qf_st_write_tensor t[] = {{"a", QF_ST_I64, 1, s2, i64}, {"b", QF_ST_U64, 1, s1, u64}};
    unsigned char *buf;
    char err[512];
    double v[2];
    qf_safetensors st;
    ck_assert_int_eq(qf_safetensors_write_mem(t, 2, NULL, NULL, 0, &buf, &len, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_safetensors_read_mem(buf, len, "big", &st, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_safetensors_find(&st, "a", &i, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_safetensors_get_f64(&st, i, v, err, sizeof err), QF_EINVAL);
    ck_assert_msg(strstr(err, "tensor 'a': element 1") != NULL, "%s", err);
    ck_assert_int_eq(qf_safetensors_find(&st, "b", &i, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_safetensors_get_f64(&st, i, v, err, sizeof err), QF_EINVAL);
    qf_safetensors_close(&st);
    free(buf);
}
END_TEST

START_TEST(test_writer_rejects)
{
    size_t s1[1] = {1}, len;
    float f = 1;
    unsigned char *buf;
    char err[512];
    qf_st_write_tensor dup[] = {{"a", QF_ST_F32, 1, s1, &f}, {"a", QF_ST_F32, 1, s1, &f}};
    qf_st_write_tensor meta[] = {{"__metadata__", QF_ST_F32, 1, s1, &f}};
    ck_assert_int_eq(qf_safetensors_write_mem(dup, 2, NULL, NULL, 0, &buf, &len, err, sizeof err), QF_EINVAL);
    ck_assert_int_eq(qf_safetensors_write_mem(meta, 1, NULL, NULL, 0, &buf, &len, err, sizeof err),
                     QF_EINVAL);
    ck_assert_int_eq(
        qf_safetensors_write(tpath("no/such/dir.safetensors"), dup, 1, NULL, NULL, 0, err, sizeof err),
        QF_EIO);
}
END_TEST

/* One entry per class of corrupt file: header text, data bytes, the
 * phrase the message must contain. */
START_TEST(test_corrupt)
{
    static const unsigned char d24[24];
    static const struct {
        const char *hdr;
        size_t dlen;
        const char *want;
    } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24, NULL},   /* valid */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}  ", 24, NULL}, /* padded */
        {"{}", 0, NULL},
        {"{\"__metadata__\":{\"k\":\"v\"}}", 0, NULL},
        /* invalid JSON, with line and column */
        {"{\"a\":{\"dtype\":\"F32\",\n\"shape\":[2,3],,}}", 24, "invalid JSON at line 2, column"},
        {"[1, 2]", 0, "must be a JSON object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}}",
         24, "duplicate"},
        /* dtype */
        {"{\"a\":{\"dtype\":\"C64\",\"shape\":[3],\"data_offsets\":[0,24]}}", 24,
         "tensor 'a': dtype 'C64' not supported (supported: F64, F32"},
        {"{\"a\":{\"dtype\":7,\"shape\":[3],\"data_offsets\":[0,24]}}", 24,
         "tensor 'a': 'dtype' must be a string"},
        {"{\"a\":{\"shape\":[3],\"data_offsets\":[0,24]}}", 24, "tensor 'a': missing field 'dtype'"},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,24]}}", 24, "tensor 'a': missing field 'shape'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6]}}", 24, "tensor 'a': missing field 'data_offsets'"},
        {"{\"a\":[1]}", 0, "tensor 'a': entry must be a JSON object"},
        /* shapes */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,24]}}", 24,
         "'shape'[0] must be a nonnegative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,24]}}", 24,
         "'shape'[0] must be a nonnegative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,24]}}", 24, "'shape' must be an array"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,24]}}",
         24, "element count overflows"},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,24]}}", 24,
         "byte size overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
         "1,1],"
         "\"data_offsets\":[0,4]}}",
         24, "33 dimensions"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,24]}}", 24,
         "invalid JSON"},
        /* offsets */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0]}}", 24, "'data_offsets' must be two"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,-24]}}", 24,
         "'data_offsets' must be two"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[24,0]}}", 24, "end before begin"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}}", 20, "beyond the data section"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24,
         "tensor 'a': 'data_offsets' [0, 20] hold 20 bytes, shape [2, 3] of F32 needs 24"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
         24, "overlap tensor 'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}",
         24, "tensor 'b': 'data_offsets' [16, 24] leave a hole"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 24, "trailing bytes"},
        /* metadata */
        {"{\"__metadata__\":{\"k\":1}}", 0, "'__metadata__': value of 'k' must be a string"},
        {"{\"__metadata__\":[]}", 0, "'__metadata__' must be an object"},
        /* JSON oddities */
        {"{\"a\\u0000b\":{}}", 0, "invalid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}} x", 24, "invalid JSON"},
        {" ", 0, "too short"},
    };
    size_t i, len;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qf_status s;
        len = build(img, cases[i].hdr, d24, cases[i].dlen);
        s = open_both(img, len, cases[i].want);
        ck_assert_msg((s == QF_OK) == (cases[i].want == NULL), "case %zu", i);
        if (s != QF_OK)
            ck_assert_int_eq(s, QF_EPARSE);
    }
}
END_TEST

/* The length field and truncation. */
START_TEST(test_length_field)
{
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}}";
    static const unsigned char d24[24];
    size_t len = build(img, hdr, d24, 24), cut;
    /* every truncation fails cleanly */
    for (cut = 0; cut < len; cut++)
        ck_assert_int_eq(open_both(img, cut, ""), QF_EPARSE);
    open_both(img, 4, "too short for the 8-byte header length");
    /* length beyond the file */
    img[0] = 0xFF;
    open_both(img, len, "beyond the end of the file");
    /* absurd length */
    memset(img, 0xFF, 8);
    open_both(img, len, "exceeds the limit");
    img[0] = 0;
    img[1] = 0;
    img[2] = 0;
    img[3] = 0x10; /* 256 MiB, the other bytes 0 */
    memset(img + 4, 0, 4);
    open_both(img, len, "exceeds the limit");
}
END_TEST

START_TEST(test_open_errors)
{
    qf_safetensors st;
    char err[512];
    ck_assert_int_eq(qf_safetensors_open(tpath("absent.safetensors"), &st, err, sizeof err), QF_EIO);
    ck_assert_msg(strstr(err, "absent.safetensors: cannot open") != NULL, "%s", err);
    ck_assert_int_eq(qf_safetensors_open(tmpdir, &st, err, sizeof err), QF_EIO);
    ck_assert_int_eq(qf_safetensors_read_mem(NULL, 0, "n", &st, err, sizeof err), QF_EPARSE);
}
END_TEST

/* A file truncated after it was opened: loading reports it. */
START_TEST(test_truncated_after_open)
{
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]}}";
    static const unsigned char d24[24];
    size_t len = build(img, hdr, d24, 24);
    const char *p = tpath("shrink.safetensors");
    qf_safetensors st;
    char err[512];
    double v[6];
    qf_test_write_file(p, img, len, NULL);
    ck_assert_int_eq(qf_safetensors_open(p, &st, err, sizeof err), QF_OK);
    ck_assert_int_eq(truncate(p, (off_t)(len - 4)), 0);
    ck_assert_int_eq(qf_safetensors_get_f64(&st, 0, v, err, sizeof err), QF_EIO);
    ck_assert_msg(strstr(err, "tensor 'a': data could not be read") != NULL, "%s", err);
    ck_assert_int_eq(qf_safetensors_get_f64(&st, 5, v, err, sizeof err), QF_EINVAL);
    qf_safetensors_close(&st);
}
END_TEST

/* Random byte flips of a valid file never crash or leak; whatever opens
 * loads every tensor. */
START_TEST(test_mutations)
{
    size_t s23[2] = {2, 3}, s2[1] = {2}, len, it, n = (size_t)qf_test_iters(3000);
    float f[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[2] = {1, 2};
    qf_st_write_tensor t[] = {{"w", QF_ST_F32, 2, s23, f}, {"b", QF_ST_BF16, 1, s2, h}};
    unsigned char *buf, *m;
    char err[512];
    uint64_t seed = qf_test_seed();
    double v[8];
    ck_assert_int_eq(qf_safetensors_write_mem(t, 2, NULL, NULL, 0, &buf, &len, err, sizeof err), QF_OK);
    m = malloc(len);
    for (it = 0; it < n; it++) {
        qf_safetensors st;
        uint64_t w = qf_rng_u64(seed, it);
        size_t i;
        memcpy(m, buf, len);
        m[w % len] ^= (unsigned char)(1u << ((w >> 32) % 8));
        if (qf_safetensors_read_mem(m, (w >> 40) % 4 ? len : (w >> 20) % len, "mut", &st, err, sizeof err) ==
            QF_OK) {
            for (i = 0; i < st.ntensors; i++)
                if (st.tensors[i].count <= 8)
                    qf_safetensors_get_f64(&st, i, v, err, sizeof err);
            qf_safetensors_close(&st);
        }
    }
    free(m);
    free(buf);
}
END_TEST

int main(void)
{
    return qf_test_main("safetensors", "core", 0, make_tmpdir, remove_tmpdir,
                        QF_TESTS(test_round_trip, test_inexact_int, test_writer_rejects, test_corrupt,
                                 test_length_field, test_open_errors, test_truncated_after_open,
                                 test_mutations));
}
