/* t-list.c: 'qualify list kernels|ops|formats', run as a separate process
 * (QF_QUALIFY_BIN), text and JSON, with the example plugin
 * (QF_EXAMPLE_PLUGIN), and its usage errors (exit 2, a message naming the
 * bad input, nothing on stdout).  Without QF_QUALIFY_BIN: skipped (77).
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_cli_json.h"
#include "qf_test.h"

static const char *bin;

typedef qf_cli_result run_result;

/* Run "qualify list ARGS", stdout and stderr kept apart. */
static run_result run(const char *args)
{
    return qf_cli_run(bin, "list", args);
}

static void done(run_result *r)
{
    qf_cli_result_free(r);
}

START_TEST(test_kernels_text)
{
    run_result r = run("kernels");
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "gemm.cpu.naive.f32") && strstr(r.out, "gemm.cpu.bf16_f32acc") &&
                      strstr(r.out, "softmax.cpu.f32") && strstr(r.out, "rmsnorm.cpu.f32"),
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "reference") && strstr(r.out, "built-in"), "%s", r.out);
    done(&r);
    r = run("kernels 'gemm.*'");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_msg(strstr(r.out, "gemm.cpu.naive.f32") && !strstr(r.out, "softmax"), "%s", r.out);
    done(&r);
}
END_TEST

START_TEST(test_kernels_json)
{
    run_result r = run("kernels --json");
    json_error_t e;
    json_t *arr, *o;
    size_t i;
    int seen = 0;
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    arr = json_loads(r.out, 0, &e);
    ck_assert_msg(arr && json_is_array(arr), "not a JSON array (%s): %s", e.text, r.out);
    ck_assert_uint_ge(json_array_size(arr), 4);
    json_array_foreach(arr, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *kind = json_string_value(json_object_get(o, "kind"));
        qf_kernel_kind kk;
        ck_assert_ptr_nonnull(name);
        ck_assert_msg(kind && qf_kernel_kind_lookup(kind, &kk) == QF_OK, "kind %s", kind ? kind : "(none)");
        ck_assert(json_is_array(json_object_get(o, "dtypes")));
        if (!strcmp(name, "gemm.cpu.bf16_f32acc")) {
            json_t *t = json_array_get(json_object_get(o, "dtypes"), 0);
            json_t *ar = json_object_get(t, "arith");
            seen = 1;
            ck_assert_str_eq(kind, "reference");
            ck_assert_str_eq(json_string_value(json_object_get(o, "op")), "gemm");
            ck_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "in"), "a")), "bfloat16");
            ck_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "out"), "d")), "bfloat16");
            ck_assert_str_eq(json_string_value(json_object_get(ar, "acc_format")), "float32");
            ck_assert_int_eq(json_integer_value(json_object_get(ar, "block_fma")), 1);
            ck_assert(json_is_true(json_object_get(o, "deterministic")));
            /* dense only (ABI 3 layouts) */
            ck_assert_uint_eq(json_array_size(json_object_get(o, "layouts")), 1);
        }
        if (!strcmp(name, "gemm.cpu.naive.f32")) {
            json_t *lay = json_object_get(o, "layouts");
            ck_assert_uint_eq(json_array_size(lay), 4);
            ck_assert_str_eq(json_string_value(json_array_get(lay, 0)), "dense");
            ck_assert_str_eq(json_string_value(json_array_get(lay, 2)), "col");
        }
    }
    ck_assert(seen);
    json_decref(arr);
    done(&r);
    /* kernels/models: the 23 gemm.model.* presets (docs/models.md). */
    json_decref(qf_cli_json_array(bin, "list", "kernels --json --kind model", 23));
    arr = qf_cli_json(bin, "list", "kernels --json --op softmax");
    /* softmax.cpu.f32, softmax.cpu.online.f32, softmax.bad.nomax and
     * softmax.bad.bf16_sum (kernels/bad), plus softmax.cuda.f32 /
     * softmax.hip.f32 where those back ends are built. */
    {
        size_t i, ncpu = 0;
        for (i = 0; i < json_array_size(arr); i++)
            ncpu += !strcmp(json_string_value(json_object_get(json_array_get(arr, i), "backend")), "cpu");
        ck_assert_uint_eq(ncpu, 4);
    }
    json_decref(arr);
    /* kernels/bad: the 20 known-bad kernels (docs/kernels.md). */
    json_decref(qf_cli_json_array(bin, "list", "kernels --json --kind known-bad", 20));
}
END_TEST

START_TEST(test_plugin)
{
    const char *plugin = getenv("QF_EXAMPLE_PLUGIN");
    char args[4096];
    if (!plugin || !*plugin)
        return; /* the example plugin is not built: covered by kernels/plugin's skip */
    /* 'gemm.user.*': the built-in optimized CPU candidates aside */
    snprintf(args, sizeof args, "kernels --plugin '%s' --kind optimized --json 'gemm.user.*'", plugin);
    {
        json_t *arr = qf_cli_json_array(bin, "list", args, 1), *o;
        o = json_array_get(arr, 0);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "gemm.user.acc4.f32");
        ck_assert_str_eq(json_string_value(json_object_get(o, "kind")), "optimized");
        ck_assert_str_eq(json_string_value(json_object_get(o, "origin")), plugin);
        json_decref(arr);
    }
    qf_cli_expect_reject(bin, "list", "kernels --plugin /nonexistent/libx.so", "/nonexistent/libx.so",
                         "a missing plugin");
}
END_TEST

/* --status: a CPU kernel is ready on cpu; a GPU kernel without its back
 * end or device is UNSUPPORTED with the reason a sweep gives (the GPU
 * stand-in plugin of tests/enable: HIP gfx942 and CUDA sm_90 kernels). */
START_TEST(test_status)
{
    const char *plugin = getenv("QF_GPU_STANDIN_PLUGIN");
    char args[4096];
    json_t *arr;
    size_t i;
    run_result r = run("kernels --status 'gemm.cpu.naive.f32'");
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "| status") && strstr(r.out, "| ready on cpu"), "%s", r.out);
    done(&r);
    ck_assert_msg(plugin && *plugin, "QF_GPU_STANDIN_PLUGIN not set");
    snprintf(args, sizeof args, "kernels --status --json --plugin '%s' 'gemm.standin.*'", plugin);
    arr = qf_cli_json_array(bin, "list", args, 2);
    for (i = 0; i < 2; i++) {
        json_t *o = json_array_get(arr, i);
        const char *why = json_string_value(json_object_get(o, "status_reason"));
        /* No CI machine has a GPU; a machine with one answers for its own
         * architecture, which the stand-ins may or may not claim. */
        if (json_object_get(o, "status_arch"))
            continue;
        ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "UNSUPPORTED");
        ck_assert_msg(why && (strstr(why, "device") || strstr(why, "not built") || strstr(why, "architecture")),
                      "reason: %s", why ? why : "(none)");
    }
    json_decref(arr);
    snprintf(args, sizeof args, "kernels --status --plugin '%s' 'gemm.standin.hip'", plugin);
    r = run(args);
    ck_assert_msg(r.rc == 0 && strstr(r.out, "gfx942") && (strstr(r.out, "| UNSUPPORTED: ") || strstr(r.out, "| ready on ")),
                  "%s", r.out);
    done(&r);
}
END_TEST

START_TEST(test_ops_formats)
{
    run_result r;
    json_t *arr = qf_cli_json_array(bin, "list", "ops --json", QF_OP_COUNT);
    int i;
    for (i = 0; i < QF_OP_COUNT; i++) {
        json_t *o = json_array_get(arr, (size_t)i);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), qf_op_name((qf_op)i));
        ck_assert(json_is_array(json_object_get(o, "inputs")));
        ck_assert(json_is_array(json_object_get(o, "dimensions")));
        /* The suite ops that run on it, from the op table. */
        ck_assert(json_is_array(json_object_get(o, "suite_ops")));
        if ((qf_op)i == QF_OP_SOFTMAX) {
            json_t *so = json_object_get(o, "suite_ops");
            ck_assert_uint_eq(json_array_size(so), 2);
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(so, 1), "name")), "log_softmax");
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(so, 1), "bound")),
                             "log_softmax");
        }
    }
    json_decref(arr);
    r = run("ops");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_msg(strstr(r.out, "moe_router") && strstr(r.out, "attention"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "log_softmax  softmax") && strstr(r.out, "trans_a,trans_b,alpha,beta"), "%s", r.out);
    done(&r);
    json_decref(qf_cli_json_array(bin, "list", "formats --json", QF_FORMAT_COUNT));
    r = run("formats");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_msg(strstr(r.out, "float8_e4m3fn") != NULL, "%s", r.out);
    done(&r);
}
END_TEST

START_TEST(test_usage_errors)
{
    static const struct {
        const char *args, *needle;
    } cases[] = {
        {"", "kernels, ops or formats"},
        {"widgets", "widgets"},
        {"kernels --kind bogus", "bogus"},
        {"kernels --op gemv", "gemv"},
        {"kernels --frobnicate", "--frobnicate"},
        {"ops --plugin x.so", "--plugin"},
        {"formats --status", "--status"},
        {"kernels a b", "'b'"},
        {"kernels --plugin", "needs a value"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qf_cli_expect_reject(bin, "list", cases[i].args, cases[i].needle, cases[i].args);
    }
    {
        run_result r = run("--help");
        ck_assert_int_eq(r.rc, 0);
        ck_assert_msg(strstr(r.out, "usage: qualify list") != NULL, "%s", r.out);
        done(&r);
    }
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main(
        "cli/list", "list", 0, NULL, NULL,
        QF_TESTS(test_kernels_text, test_kernels_json, test_plugin, test_status, test_ops_formats, test_usage_errors));
}
