/* t-nodevice.c: GPU kernels swept on a machine without their device are
 * filed under the architectures they claim, so `qualify enable` names
 * those architectures with the kernels disabled and the reason
 * (docs/enable.md "Kernels without a device"; issue 18).
 *
 * Every build: the stand-in plugin tests/enable/plugin_gpu_standin.c (a
 * HIP kernel claiming gfx942, a CUDA one claiming sm_90 and sm_90a) swept
 * with a CPU kernel: the CPU case stays under cpu, the stand-ins go under
 * gfx942 and "sm_90 sm_90a", and the table has sections gfx942, sm_90 and
 * sm_90a whose rows are disabled with the reason.  A device run of the
 * same kernel (the results file edited to what a gfx942 machine writes)
 * merged with it, in either order, is enabled and names the device: no
 * evidence never outweighs evidence.
 *
 * A build with the GPU back ends (gemm.hip.mfma_gfx942.bf16 registered):
 * a subset of shapes/gpu.yaml; without a device the table names gfx942
 * and sm_90 with the kernels disabled, "no HIP device" / "no CUDA device";
 * a kernel whose device answered is filed under the device's arch. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static const char *bin;
static char dir[128];

static void setup(void)
{
    bin = getenv("QF_QUALIFY_BIN");
    snprintf(dir, sizeof dir, "/tmp/qf-t-nodevice-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* The first object of arr whose member k1 is v1 (and k2 is v2, when k2
 * is not NULL), or NULL. */
static json_t *find(json_t *arr, const char *k1, const char *v1, const char *k2, const char *v2)
{
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        const char *a = json_string_value(json_object_get(o, k1));
        const char *b = k2 ? json_string_value(json_object_get(o, k2)) : NULL;
        if (a && !strcmp(a, v1) && (!k2 || (b && !strcmp(b, v2))))
            return o;
    }
    return NULL;
}

static json_t *case_of(json_t *results, const char *kernel)
{
    json_t *c = find(json_object_get(results, "cases"), "kernel", kernel, NULL, NULL);
    ck_assert_msg(c != NULL, "no case of %s", kernel);
    return c;
}

static json_t *entry_of(json_t *table, const char *arch, const char *kernel)
{
    return find(json_object_get(table, "entries"), "arch", arch, "kernel", kernel);
}

static json_t *arch_of(json_t *table, const char *arch)
{
    return find(json_object_get(table, "architectures"), "arch", arch, NULL, NULL);
}

/* `qualify enable FILES -o dir/out`; its enable.json. */
static json_t *enable(const char *files, const char *out)
{
    char args[2048], path[512];
    qf_cli_result r;
    snprintf(args, sizeof args, "%s -o %s/%s", files, dir, out);
    r = qf_cli_run(bin, "enable", args);
    ck_assert_msg(r.rc == 0, "enable %s: rc %d: %s", args, r.rc, r.err);
    qf_cli_result_free(&r);
    snprintf(path, sizeof path, "%s/%s/enable.json", dir, out);
    return load(path);
}

/* The entry is disabled: no qualified shape, its one shape without
 * evidence, and the Markdown row says why (reason_part). */
static void expect_disabled(json_t *table, const char *arch, const char *kernel)
{
    json_t *e = entry_of(table, arch, kernel);
    ck_assert_msg(e != NULL, "no entry of %s under %s", kernel, arch);
    ck_assert_msg(arch_of(table, arch) != NULL, "no architecture %s in the table", arch);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "shapes_qualified")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "shapes_failed")), 0);
    ck_assert_int_ge(json_integer_value(json_object_get(e, "shapes_unsupported")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(e, "qualified")), 0);
}

static void md_has(const char *out, const char *part)
{
    char path[512];
    char *text;
    snprintf(path, sizeof path, "%s/%s/enable.md", dir, out);
    text = qf_cli_slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, part), "%s lacks '%s':\n%s", path, part, text);
    free(text);
}

static void sweep_standins(void)
{
    char args[2048];
    const char *plugin = getenv("QF_GPU_STANDIN_PLUGIN");
    qf_cli_result r;
    ck_assert_msg(bin && plugin, "QF_QUALIFY_BIN and QF_GPU_STANDIN_PLUGIN come from CTest");
    write_file("standin.yaml", "suite: standin\n"
                               "refute: false\n"
                               "op: gemm\n"
                               "kernels: [gemm.standin.*, gemm.cpu.naive.f32]\n"
                               "dtypes: [float32]\n"
                               "shapes: {M: [16], N: [16], K: [16]}\n");
    snprintf(args, sizeof args, "%s/standin.yaml --plugin '%s' -q -o %s/sweep", dir, plugin, dir);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == 0, "run: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
}

START_TEST(standins_filed_under_claims)
{
    char path[512];
    json_t *res, *table, *c;
    sweep_standins();
    snprintf(path, sizeof path, "%s/sweep/results.json", dir);
    res = load(path);
    /* The CPU kernel is where it always was; the stand-ins are under the
     * architectures they claim, UNSUPPORTED with the probe's reason. */
    c = case_of(res, "gemm.cpu.naive.f32");
    ck_assert_str_eq(json_string_value(json_object_get(c, "arch")), "cpu");
    ck_assert_str_eq(json_string_value(json_object_get(c, "verdict")), "QUALIFIED");
    c = case_of(res, "gemm.standin.hip");
    ck_assert_str_eq(json_string_value(json_object_get(c, "arch")), "gfx942");
    ck_assert_str_eq(json_string_value(json_object_get(c, "verdict")), "UNSUPPORTED");
    ck_assert_msg(strstr(json_string_value(json_object_get(c, "reason")), "hip") ||
                      strstr(json_string_value(json_object_get(c, "reason")), "HIP"),
                  "reason: %s", json_string_value(json_object_get(c, "reason")));
    c = case_of(res, "gemm.standin.cuda");
    ck_assert_str_eq(json_string_value(json_object_get(c, "arch")), "sm_90 sm_90a");
    json_decref(res);

    table = enable(path, "t");
    expect_disabled(table, "gfx942", "gemm.standin.hip");
    expect_disabled(table, "sm_90", "gemm.standin.cuda");
    expect_disabled(table, "sm_90a", "gemm.standin.cuda");
    ck_assert_ptr_null(entry_of(table, "cpu", "gemm.standin.hip"));
    ck_assert_ptr_nonnull(entry_of(table, "cpu", "gemm.cpu.naive.f32"));
    ck_assert_ptr_null(entry_of(table, "sm_90 sm_90a", "gemm.standin.cuda"));
    json_decref(table);
    md_has("t", "\n## gfx942\n");
    md_has("t", "\n## sm_90\n");
    md_has("t", "nothing with evidence: unsupported: ");
}
END_TEST

/* The sweep's results as a gfx942 machine would write them: the HIP
 * stand-in QUALIFIED there, the provenance naming the device. */
static void write_device_results(void)
{
    char path[512];
    json_t *res, *c, *keep = json_array(), *gpu;
    snprintf(path, sizeof path, "%s/sweep/results.json", dir);
    res = load(path);
    c = case_of(res, "gemm.standin.hip");
    /* with evidence that gives it (an empty output: docs/verdicts.md
     * rule 3): readers decide again and refuse a bare verdict edit */
    json_object_set_new(c, "verdict", json_string("QUALIFIED"));
    json_object_set_new(c, "cause", json_string("empty"));
    json_object_set_new(json_object_get(c, "evidence"), "outcome", json_string("none"));
    json_object_set_new(c, "metrics", json_pack("{s:i}", "n", 0));
    json_object_set_new(c, "reason", json_string(""));
    json_array_append(keep, c);
    json_object_set_new(res, "cases", keep);
    gpu = json_pack("{s:s, s:s, s:s, s:s}", "name", "AMD Instinct MI300X", "arch", "gfx942", "runtime",
                    "HIP 6.2", "driver", "6.8");
    json_object_set_new(json_object_get(res, "provenance"), "gpu", gpu);
    snprintf(path, sizeof path, "%s/device.json", dir);
    ck_assert_int_eq(json_dump_file(res, path, 0), 0);
    json_decref(res);
}

/* A "disabled: no device" entry never overrides a device's evidence,
 * whichever file comes first, and the section names the device. */
START_TEST(device_evidence_wins)
{
    char files[1024];
    json_t *t1, *t2, *e, *a;
    int i;
    sweep_standins();
    write_device_results();
    snprintf(files, sizeof files, "%s/sweep/results.json %s/device.json", dir, dir);
    t1 = enable(files, "t1");
    snprintf(files, sizeof files, "%s/device.json %s/sweep/results.json", dir, dir);
    t2 = enable(files, "t2");
    for (i = 0; i < 2; i++) {
        json_t *t = i ? t2 : t1;
        e = entry_of(t, "gfx942", "gemm.standin.hip");
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "shapes_qualified")), 1);
        ck_assert_uint_eq(json_array_size(json_object_get(e, "qualified")), 1);
        a = arch_of(t, "gfx942");
        ck_assert_ptr_nonnull(a);
        ck_assert_str_eq(json_string_value(json_object_get(a, "gpu")), "AMD Instinct MI300X");
        ck_assert_msg(strstr(json_string_value(json_object_get(a, "source")), "device.json"), "source %s",
                      json_string_value(json_object_get(a, "source")));
    }
    json_decref(t1);
    json_decref(t2);
}
END_TEST

/* A GPU kernel's case: without its device, disabled under the arch it
 * claims with the probe's reason ("no HIP device", "no CUDA device"); on
 * a machine with a device (a lent GPU machine), under the device's own
 * arch (one name, not cpu), whatever its verdict. */
static void expect_filed(json_t *res, json_t *table, const char *kernel, const char *claimed)
{
    json_t *c = case_of(res, kernel);
    const char *arch = json_string_value(json_object_get(c, "arch"));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    if (strstr(reason, "no HIP device") || strstr(reason, "no CUDA device")) {
        expect_disabled(table, claimed, kernel);
        return;
    }
    ck_assert_msg(strcmp(arch, "cpu") && !strchr(arch, ' '), "%s ran on a device but is filed under '%s' (%s)",
                  kernel, arch, reason);
    ck_assert_ptr_nonnull(entry_of(table, arch, kernel));
}

static const struct {
    const char *kernel, *claimed;
} gpu_kernels[] = {
    {"gemm.hip.mfma_gfx942.bf16", "gfx942"},
    {"gemm.hip.mfma_fp8_gfx942", "gfx942"},
    {"gemm.hip.mfma_gfx90a.bf16", "gfx90a"},
    {"gemm.cuda.wmma.bf16.sm90", "sm_90"},
};

/* The GPU build: shapes/gpu.yaml's bf16 and FP8 fnuz GEMM groups (their
 * kernels, one small shape); the tables of CI's machine (no device) name
 * gfx942 and sm_90. */
START_TEST(gpu_suite_without_device)
{
    char args[2048];
    qf_cli_result r;
    json_t *table, *res;
    size_t i;
    ck_assert_ptr_nonnull(bin);
    r = qf_cli_run(bin, "list", "kernels 'gemm.hip.mfma_gfx942.bf16'");
    if (r.rc != 0 || !strstr(r.out, "gemm.hip.mfma_gfx942.bf16")) {
        qf_cli_result_free(&r);
        return; /* a build without the GPU back ends: the stand-ins above cover it */
    }
    qf_cli_result_free(&r);
    write_file("gpu.yaml", "suite: gpu-subset\n"
                           "refute: false\n"
                           "inputs: [normal]\n"
                           "seeds: 1\n"
                           "groups:\n"
                           "  - op: gemm\n"
                           "    kernels: [gemm.cuda.wmma.bf16.*, gemm.hip.*.bf16, gemm.cpu.bf16_f32acc]\n"
                           "    dtypes: [{in: bfloat16, acc: float32}]\n"
                           "    shapes: {M: [16], N: [16], K: [32]}\n"
                           "  - op: gemm\n"
                           "    kernels: [gemm.hip.mfma_fp8_*]\n"
                           "    dtypes: [{a: float8_e4m3fnuz, b: float8_e4m3fnuz, out: float32, scale: "
                           "per_tensor}]\n"
                           "    shapes: {M: [16], N: [16], K: [32]}\n");
    snprintf(args, sizeof args, "%s/gpu.yaml -q -o %s/gpu", dir, dir);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == 0 || r.rc == 1, "run: rc %d: %s", r.rc, r.err); /* 1: a device's failure */
    qf_cli_result_free(&r);
    snprintf(args, sizeof args, "%s/gpu/results.json", dir);
    res = load(args);
    table = enable(args, "gpu-t");
    for (i = 0; i < sizeof gpu_kernels / sizeof gpu_kernels[0]; i++)
        expect_filed(res, table, gpu_kernels[i].kernel, gpu_kernels[i].claimed);
    ck_assert_ptr_nonnull(entry_of(table, "cpu", "gemm.cpu.bf16_f32acc"));
    json_decref(table);
    /* The Markdown's sections and reasons, for the back ends with no device. */
    for (i = 0; i < 2; i++) {
        const char *k = i ? "gemm.cuda.wmma.bf16.sm90" : "gemm.hip.mfma_gfx942.bf16";
        const char *why = i ? "no CUDA device" : "no HIP device";
        if (strstr(json_string_value(json_object_get(case_of(res, k), "reason")), why)) {
            md_has("gpu-t", i ? "\n## sm_90\n" : "\n## gfx942\n");
            md_has("gpu-t", why);
        }
    }
    json_decref(res);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("enable/nodevice");
    TCase *tc = tcase_create("nodevice");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, standins_filed_under_claims);
    tcase_add_test(tc, device_evidence_wins);
    tcase_add_test(tc, gpu_suite_without_device);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
