/* t-replay.c: `qualify replay` from the claims `qualify probe -o` writes.
 * Every model preset and the CPU kernels replay bit-exact (QUALIFIED) from
 * their own claim; a claim with one wrong field (accumulator rounding,
 * accumulator bits, block) FAILS with the first differing element (exit 1).
 * OpenBLAS sgemm's claim replays in t-openblas.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_model.h"
#include "qf_test.h"

static char dir[] = "/tmp/qf-replay-XXXXXX";

/* probe KERNEL -o claim (extra: adapter), then replay; returns the claim path */
static void probe_claim(const char *bin, const char *kernel, const char *extra, char *path, size_t size)
{
    char args[900];
    qf_cli_result res;
    snprintf(path, size, "%s/%s.yaml", dir, kernel);
    snprintf(args, sizeof args, "%s %s -o %s", kernel, extra, path);
    res = qf_cli_expect(bin, "probe", args, 0, NULL);
    qf_cli_result_free(&res);
}

static void replay_expect(const char *bin, const char *kernel, const char *extra, const char *claim, int rc,
                          const char *want)
{
    char args[1600];
    qf_cli_result res;
    snprintf(args, sizeof args, "%s %s --claim %s --n 1", kernel, extra, claim);
    res = qf_cli_expect(bin, "replay", args, rc, NULL);
    fprintf(stderr, "%s", res.out);
    ck_assert_msg(strstr(res.out, want), "replay %s: '%s' wanted in:\n%s", args, want, res.out);
    qf_cli_result_free(&res);
}

/* the claim with `key: old` replaced by `key: new` */
static void edit(const char *src, const char *dst, const char *from, const char *to)
{
    char *y = qf_cli_slurp(src), *at;
    FILE *f = fopen(dst, "w");
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_nonnull(f);
    at = strstr(y, from);
    ck_assert_msg(at != NULL, "%s has no '%s'", src, from);
    fwrite(y, 1, (size_t)(at - y), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(y);
}

/* KERNEL's claim from the probe replays bit-exact. */
static void probe_replay(const char *bin, const char *kernel, char *path, size_t size)
{
    fprintf(stderr, "replay: %s\n", kernel);
    probe_claim(bin, kernel, "", path, size);
    replay_expect(bin, kernel, "", path, 0, "QUALIFIED (bit-exact)");
}

START_TEST(presets_and_cpu)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    static const char *const cpu[] = {"gemm.cpu.naive.f32", "gemm.cpu.blocked.f32", "gemm.cpu.splitk4.f32",
                                      "gemm.cpu.f16acc"};
    size_t n;
    const qf_model_params *ps = qf_model_presets(&n);
    char path[600], kernel[128];
    if (!bin || !*bin)
        return;
    /* Under the sanitizers every 6th preset and every other CPU kernel
     * (naive, splitk4): the normal build replays them all. */
    for (size_t i = 0; i < n; i += qf_test_stride(6)) {
        snprintf(kernel, sizeof kernel, "gemm.model.%s", ps[i].name);
        probe_replay(bin, kernel, path, sizeof path);
    }
    for (size_t i = 0; i < 4; i += qf_test_stride(2))
        probe_replay(bin, cpu[i], path, sizeof path);
}
END_TEST

START_TEST(wrong_fields_fail)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char path[600], bad[700];
    if (!bin || !*bin)
        return;
    probe_claim(bin, "gemm.cpu.naive.f32", "", path, sizeof path);
    snprintf(bad, sizeof bad, "%s/rtz.yaml", dir);
    edit(path, bad, "acc_round: rne", "acc_round: rtz");
    replay_expect(bin, "gemm.cpu.naive.f32", "", bad, 1, "FAILED: ");
    edit(path, bad, "acc_frac_bits: 0", "acc_frac_bits: 20");
    replay_expect(bin, "gemm.cpu.naive.f32", "", bad, 1, "element (0, 0)");
    probe_claim(bin, "gemm.model.h100.e4m3", "", path, sizeof path);
    edit(path, bad, "block_fma: 32", "block_fma: 16");
    replay_expect(bin, "gemm.model.h100.e4m3", "", bad, 1, "got ");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe/replay");
    TCase *tc = tcase_create("replay");
    int rc;
    if (!mkdtemp(dir))
        return 1;
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, presets_and_cpu);
    tcase_add_test(tc, wrong_fields_fail);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    return rc;
}
