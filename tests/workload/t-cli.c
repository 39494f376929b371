/* t-cli.c: 'qualify workload': the exact path against itself through the
 * CLI (KL 0, top-1 1), JSON keys, --max-kl, a weights file written with
 * --save-weights and read back, and the rejections (exit 2, the file or
 * tensor named): truncated and corrupt weights, a missing tensor, unknown
 * kernels, bad sizes.  Without QF_QUALIFY_BIN: skipped (77). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_safetensors.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

static void setup(void)
{
    bin = getenv("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-wl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static json_t *run_json(const char *args)
{
    qf_cli_result r = qf_cli_run(bin, "workload", args);
    json_error_t je;
    json_t *j;
    ck_assert_msg(r.rc == 0, "workload %s: rc %d: %s", args, r.rc, r.err);
    j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "not JSON: %s", je.text);
    qf_cli_result_free(&r);
    return j;
}

START_TEST(test_exact_and_kernels)
{
    json_t *j = run_json("--exact --json --seq 8");
    ck_assert_str_eq(json_string_value(json_object_get(j, "format")), "qualify-workload");
    ck_assert_double_eq(json_real_value(json_object_get(j, "kl_mean")), 0);
    ck_assert_double_eq(json_real_value(json_object_get(j, "top1")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "layers")), 2);
    json_decref(j);
    j = run_json("--gemm gemm.model.h100.e4m3:e4m3_e4m3_f32 --scale per_channel --json --seq 8");
    ck_assert_ptr_nonnull(
        strstr(json_string_value(json_object_get(json_object_get(json_object_get(j, "ops"), "gemm"), "by")),
               "gemm.model.h100.e4m3 (e4m3_e4m3_f32)"));
    ck_assert(json_real_value(json_object_get(json_object_get(j, "logits"), "normwise")) > 1e-3);
    ck_assert(json_real_value(json_object_get(j, "kl_mean")) > 0);
    json_decref(j);
}
END_TEST

START_TEST(test_text_and_limits)
{
    qf_cli_result r = qf_cli_run(bin, "workload", "--seq 8 --rmsnorm fallback");
    ck_assert_msg(r.rc == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "KL divergence"));
    ck_assert_ptr_nonnull(strstr(r.out, "rmsnorm    fallback"));
    ck_assert_ptr_nonnull(strstr(r.out, "rope       rope.cpu.f32")); /* the default rope kernel */
    qf_cli_result_free(&r);
    /* FP8 GEMMs cannot meet a KL limit of 0 */
    r = qf_cli_run(bin, "workload", "--seq 8 --gemm gemm.model.h100.e4m3 --max-kl 0");
    ck_assert_int_eq(r.rc, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "outside the limits"));
    qf_cli_result_free(&r);
}
END_TEST

/* Exit 2 with `what` in the message and nothing on stdout. */
static void expect_usage(const char *args, const char *what)
{
    qf_cli_result r = qf_cli_run(bin, "workload", args);
    ck_assert_msg(r.rc == 2, "%s: rc %d", args, r.rc);
    ck_assert_msg(strstr(r.err, what) != NULL, "%s: '%s' not in: %s", args, what, r.err);
    ck_assert_str_eq(r.out, "");
    qf_cli_result_free(&r);
}

START_TEST(test_weights_file)
{
    char args[1024], file[256], bad[256];
    json_t *a, *b;
    FILE *in, *out;
    char buf[4096];
    size_t n;
    snprintf(file, sizeof file, "%s/w.safetensors", dir);
    snprintf(args, sizeof args, "--exact --json --seq 8 --dim 32 --ffn 64 --vocab 32 --save-weights %s",
             file);
    a = run_json(args);
    snprintf(args, sizeof args, "--exact --json --seq 8 --weights %s", file);
    b = run_json(args);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "config"), "dim")), 32);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "config"), "ffn")), 64);
    ck_assert_str_eq(json_string_value(json_object_get(b, "weights")), file);
    json_decref(a);
    json_decref(b);
    /* truncated: the first 4096 bytes */
    snprintf(bad, sizeof bad, "%s/trunc.safetensors", dir);
    in = fopen(file, "rb");
    out = fopen(bad, "wb");
    ck_assert(in && out);
    n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    snprintf(args, sizeof args, "--weights %s", bad);
    expect_usage(args, bad);
    /* the heads do not divide dim 32 */
    snprintf(args, sizeof args, "--weights %s --heads 5", file);
    expect_usage(args, "heads");
    /* a file without the model's tensors */
    {
        float v[4] = {1, 2, 3, 4};
        size_t shape[1] = {4};
        qf_st_write_tensor t = {"something.else", QF_ST_F32, 1, shape, v};
        char err[256];
        snprintf(bad, sizeof bad, "%s/other.safetensors", dir);
        ck_assert(qf_safetensors_write(bad, &t, 1, NULL, NULL, 0, err, sizeof err) == QF_OK);
        snprintf(args, sizeof args, "--weights %s", bad);
        expect_usage(args, "model.embed_tokens.weight");
    }
    snprintf(args, sizeof args, "--weights %s/missing.safetensors", dir);
    expect_usage(args, "missing.safetensors");
}
END_TEST

START_TEST(test_usage)
{
    expect_usage("--gemm gemm.nope", "gemm.nope");
    expect_usage("--gemm rmsnorm.cpu.f32", "not a CPU gemm kernel");
    expect_usage("--gemm gemm.model.h100.e4m3:f32", "no dtype tuple");
    expect_usage("--heads 4 --kv-heads 3", "kv heads");
    expect_usage("--seq 0", "--seq");
    expect_usage("--scale per_block", "per_block");
    expect_usage("--seq 2 --tokens 1,999", "--tokens");
}
END_TEST

int main(void)
{
    qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main(
        "workload/cli", "cli", 300, setup, teardown,
        QF_TESTS(test_exact_and_kernels, test_text_and_limits, test_weights_file, test_usage));
}
