/* t-cli.c: 'qualify audit' on .npy and .safetensors files written here:
 * the JSON document (tensors, ranking, summary), Markdown on stdout,
 * --tensors, and the rejections (exit 2, a message naming the file, nothing
 * on stdout): truncated and corrupt .npy and .safetensors files, a bad
 * --formats list, no input.  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_format.h"
#include "qf_npy.h"
#include "qf_safetensors.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static void setup(void)
{
    enum { R = 8, C = 64 };
    static float w[R * C];
    static uint16_t b[R * C];
    static uint8_t e[R * C];
    static int32_t ids[4] = {1, 2, 3, 4};
    size_t shape[2] = {R, C}, ishape[1] = {4}, i;
    char err[256] = "", p[256];
    qf_st_write_tensor t[4];
    bin = getenv("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-audit-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (i = 0; i < R * C; i++) {
        w[i] = (float)((double)(qf_rng_u64(qf_test_seed(), i) >> 40) * 0x1p-24 - 0.5);
        b[i] = (uint16_t)qf_format_encode(qf_format_get(QF_BFLOAT16), w[i], QF_ROUND_RNE, 0, 0, 0);
        e[i] = (uint8_t)qf_format_encode(qf_format_get(QF_FLOAT8_E4M3FN), 8 * w[i], QF_ROUND_RNE, 1, 0, 0);
    }
    path_of(p, sizeof p, "w.npy");
    ck_assert_msg(qf_npy_write_data(p, QF_NPY_FLOAT32, 2, shape, w, err, sizeof err) == QF_OK, "%s", err);
    /* raw elements, as np.save writes ml_dtypes arrays */
    path_of(p, sizeof p, "bf.npy");
    ck_assert_msg(qf_npy_write_data(p, QF_NPY_RAW16, 2, shape, b, err, sizeof err) == QF_OK, "%s", err);
    path_of(p, sizeof p, "f8.npy");
    ck_assert_msg(qf_npy_write_data(p, QF_NPY_RAW8, 2, shape, e, err, sizeof err) == QF_OK, "%s", err);
    t[0] = (qf_st_write_tensor){"model.w", QF_ST_F32, 2, shape, w};
    t[1] = (qf_st_write_tensor){"model.bf", QF_ST_BF16, 2, shape, b};
    t[2] = (qf_st_write_tensor){"model.fp8", QF_ST_F8_E4M3, 2, shape, e};
    t[3] = (qf_st_write_tensor){"model.ids", QF_ST_I32, 1, ishape, ids};
    path_of(p, sizeof p, "m.safetensors");
    ck_assert_msg(qf_safetensors_write(p, t, 4, NULL, NULL, 0, err, sizeof err) == QF_OK, "%s", err);
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static json_t *find_result(json_t *tensor, const char *scheme)
{
    json_t *res = json_object_get(tensor, "results");
    size_t i;
    for (i = 0; i < json_array_size(res); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(res, i), "scheme")), scheme))
            return json_array_get(res, i);
    return NULL;
}

START_TEST(test_json_output)
{
    char p[256];
    qf_cli_result r;
    json_t *doc, *tensors, *t, *res;
    json_error_t je;
    /* the integer tensor is skipped, by name */
    r = qf_cli_expectf(bin, "audit", 0, "model.ids",
                       "%s/w.npy %s/m.safetensors --formats bf16,e4m3:tensor,mxfp4,int4:g32:asym -o %s/out",
                       dir, dir, dir);
    qf_cli_result_free(&r);
    path_of(p, sizeof p, "out/audit.json");
    doc = json_load_file(p, 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "format")), "qualify-audit");
    tensors = json_object_get(doc, "tensors");
    ck_assert_uint_eq(json_array_size(tensors), 4); /* w, model.w, model.bf, model.fp8 */
    t = json_array_get(tensors, 2);
    ck_assert_str_eq(json_string_value(json_object_get(t, "name")), "model.bf");
    /* a bf16 tensor cast to bf16 is exact, and ranks first */
    res = find_result(t, "bf16");
    ck_assert_ptr_nonnull(res);
    ck_assert_str_eq(json_string_value(json_object_get(res, "sqnr_db")), "Infinity");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(t, "ranking"), 0)), "bf16");
    /* an e4m3 tensor cast (a scale by a power of two keeps it exact) */
    t = json_array_get(tensors, 3);
    ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "F8_E4M3");
    res = find_result(json_array_get(tensors, 0), "mxfp4");
    ck_assert_ptr_nonnull(res);
    ck_assert(json_real_value(json_object_get(res, "sqnr_db")) > 5);
    ck_assert(json_real_value(json_object_get(res, "sqnr_db")) < 30);
    ck_assert_uint_eq(json_array_size(json_object_get(res, "worst_blocks")), 5);
    ck_assert_str_eq(json_string_value(json_object_get(res, "recipe")), "mx");
    /* e4m3:tensor, the older word, is labelled with the recipe's one
     * spelling (qf_recipe.h) */
    ck_assert_ptr_null(find_result(json_array_get(tensors, 0), "e4m3:tensor"));
    res = find_result(json_array_get(tensors, 0), "e4m3:per_tensor");
    ck_assert_ptr_nonnull(res);
    ck_assert_str_eq(json_string_value(json_object_get(res, "recipe")), "per_tensor");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "schemes"), 1)),
                     "e4m3:per_tensor");
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "summary")), 4);
    json_decref(doc);
    path_of(p, sizeof p, "out/audit.md");
    {
        char *md = qf_cli_slurp(p);
        ck_assert_ptr_nonnull(strstr(md, "| 1 | bf16 | inf |"));
        ck_assert_ptr_nonnull(strstr(md, "## Summary"));
        free(md);
    }
}
END_TEST

START_TEST(test_markdown_and_glob)
{
    qf_cli_result r = qf_cli_expectf(
        bin, "audit", 0, NULL, "%s/m.safetensors --tensors 'model.b*' --formats e4m3:channel:mse,nvfp4", dir);
    ck_assert_ptr_nonnull(strstr(r.out, "## model.bf"));
    ck_assert_ptr_null(strstr(r.out, "## model.w"));
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "audit", 2, "nothing*", "%s/m.safetensors --tensors 'nothing*' --formats bf16",
                       dir);
    qf_cli_result_free(&r);
}
END_TEST

/* One file through 'audit --json': its only tensor has the dtype, and the
 * cast to scheme is exact. */
static void expect_exact(const char *args, const char *dtype, const char *scheme)
{
    qf_cli_result r = qf_cli_expectf(bin, "audit", 0, NULL, "%s --json", args);
    json_error_t je;
    json_t *doc = json_loads(r.out, 0, &je), *t;
    ck_assert_ptr_nonnull(doc);
    t = json_array_get(json_object_get(doc, "tensors"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")), dtype);
    ck_assert_str_eq(json_string_value(json_object_get(find_result(t, scheme), "sqnr_db")), "Infinity");
    json_decref(doc);
    qf_cli_result_free(&r);
}

START_TEST(test_npy_raw)
{
    char args[1024];
    qf_cli_result r;
    snprintf(args, sizeof args, "%s/bf.npy --formats bf16,e4m3", dir);
    expect_exact(args, "bfloat16", "bf16");
    /* one-byte raw elements need --npy-format */
    r = qf_cli_expectf(bin, "audit", 2, "--npy-format", "%s/f8.npy --formats bf16", dir);
    qf_cli_result_free(&r);
    snprintf(args, sizeof args, "%s/f8.npy --npy-format e4m3 --formats e4m3,e5m2", dir);
    expect_exact(args, "float8_e4m3fn", "e4m3");
    r = qf_cli_expectf(bin, "audit", 2, NULL, "%s/f8.npy --npy-format f32 --formats e4m3", dir);
    qf_cli_result_free(&r);
}
END_TEST

/* Exit 2, the file named on stderr, nothing on stdout. */
static void expect_reject(const char *file, const char *what)
{
    char args[1024];
    snprintf(args, sizeof args, "%s --formats bf16", file);
    qf_cli_expect_reject(bin, "audit", args, file, what);
}

START_TEST(test_corrupt_files)
{
    char src[256], dst[256];
    path_of(src, sizeof src, "w.npy");
    path_of(dst, sizeof dst, "trunc.npy");
    qf_test_copy_prefix(src, dst, 200, NULL); /* header complete, data cut */
    expect_reject(dst, "truncated npy data");
    path_of(dst, sizeof dst, "head.npy");
    qf_test_copy_prefix(src, dst, 30, NULL); /* header cut */
    expect_reject(dst, "truncated npy header");
    path_of(src, sizeof src, "m.safetensors");
    path_of(dst, sizeof dst, "trunc.safetensors");
    qf_test_copy_prefix(src, dst, 500, NULL);
    expect_reject(dst, "truncated safetensors");
    path_of(dst, sizeof dst, "short.safetensors");
    qf_test_copy_prefix(src, dst, 5, NULL);
    expect_reject(dst, "safetensors shorter than its length field");
    path_of(dst, sizeof dst, "json.safetensors");
    qf_test_write_file(dst, "\x10\0\0\0\0\0\0\0{\"a\": {\"dtype\":", 8 + 15, " ");
    expect_reject(dst, "safetensors with broken JSON");
    path_of(dst, sizeof dst, "missing.npy");
    expect_reject(dst, "missing file");
}
END_TEST

START_TEST(test_usage)
{
    qf_cli_result r = qf_cli_expectf(bin, "audit", 2, "bogus", "%s/w.npy --formats e4m3:bogus", dir);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "audit", 2, "--formats", "%s/w.npy", dir);
    qf_cli_result_free(&r);
    r = qf_cli_expect(bin, "audit", "--formats bf16", 2, NULL);
    qf_cli_result_free(&r);
    r = qf_cli_expectf(bin, "audit", 2, "w.txt", "%s/w.txt --formats bf16", dir);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main(
        "audit/cli", "cli", 120, setup, teardown,
        QF_TESTS(test_json_output, test_markdown_and_glob, test_npy_raw, test_corrupt_files, test_usage));
}
