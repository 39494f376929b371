/* t-model-vs-hw.c (HIP): the CPU models of kernels/models against the AMD
 * matrix cores, bit for bit (tests/common/qf_model_vs_hw.h).
 *
 * One MFMA instruction (qf_hip_mfma_probe: v_mfma_f32_16x16x16bf16_1k and
 * ..._16x16x16f16) on crafted and random inputs; each of the 256 results
 * against qf_model_dot of the preset for the device (mi250x.* on gfx90a;
 * mi300.* on gfx940, an MI300 target whose published facts are gfx942's,
 * and on gfx942, where the probe runs its clang-19 build, mfma_probe.hip;
 * on gfx940/gfx942 also v_mfma_f32_16x16x32_fp8_fp8 / ..._bf8_bf8 against
 * mi300.e4m3fnuz / mi300.e5m2fnuz;
 * docs/gpu.md).  Without a usable device, or on one no preset models:
 * exit 77 (skipped); a modelled device whose instruction this build has no
 * code for fails (QF_MVH_ALLOW_UNSUPPORTED=1 accepts it).
 */
#include "qf_backend_test.h"
#include "qf_hip.h"
#include "qf_model_vs_hw.h"

static char arch[32], devname[128];
static qf_mvh h;

/* The preset modelling instruction kind (0 bf16, 1 f16, 2 e4m3fnuz,
 * 3 e5m2fnuz) on this device; NULL: not compared (gfx90a has no FP8). */
static const char *preset_for(int kind)
{
    static const char *const fmt[] = {"bf16", "f16", "e4m3fnuz", "e5m2fnuz"};
    static char name[64];
    const char *gen = !strcmp(arch, "gfx90a") ? "mi250x" : !strncmp(arch, "gfx94", 5) ? "mi300" : NULL;
    if (!gen)
        return NULL;
    snprintf(name, sizeof name, "%s.%s", gen, fmt[kind]);
    return qf_model_preset(name) ? name : NULL;
}

START_TEST(test_bf16)
{
    ck_assert_int_eq(
        qf_mvh_run(&h, 0, 16, QF_BFLOAT16, 0x1p-12, 2, "mfma_f32_16x16x16bf16_1k", preset_for(0)), 0);
}
END_TEST

START_TEST(test_f16)
{
    ck_assert_int_eq(qf_mvh_run(&h, 1, 16, QF_FLOAT16, 0x1p-12, 2, "mfma_f32_16x16x16f16", preset_for(1)), 0);
}
END_TEST

/* FP8 fnuz, K = 32: 2^-6 is representable in both formats */
START_TEST(test_e4m3fnuz)
{
    ck_assert_int_eq(qf_mvh_run(&h, 2, 32, QF_FLOAT8_E4M3FNUZ, 0x1p-6, 8, "mfma_f32_16x16x32_fp8_fp8", preset_for(2)),
                     0);
}
END_TEST

START_TEST(test_e5m2fnuz)
{
    ck_assert_int_eq(qf_mvh_run(&h, 3, 32, QF_FLOAT8_E5M2FNUZ, 0x1p-6, 8, "mfma_f32_16x16x32_bf8_bf8", preset_for(3)),
                     0);
}
END_TEST

int main(void)
{
    qf_bt_require_device(qf_hip_device_count, "hip/model-vs-hw");
    if (qf_hip_device_arch(0, arch, sizeof arch, devname, sizeof devname) != QF_OK) {
        printf("SKIP hip/model-vs-hw: cannot read device 0's properties\n");
        return QF_TEST_SKIP;
    }
    printf("device 0: %s (%s)\n", devname, arch);
    if (!preset_for(0) && !preset_for(1)) {
        /* Nothing to compare with: not a pass. */
        printf("SKIP hip/model-vs-hw: no CPU model of %s's matrix unit\n", arch);
        return QF_TEST_SKIP;
    }
    h.arch = arch;
    h.probe = qf_hip_mfma_probe;
    h.n = 16;
    qf_mvh_report_header(devname, arch);
    return qf_test_main("hip/model-vs-hw", "mfma", 0, NULL, NULL, QF_TESTS(test_bf16, test_f16, test_e4m3fnuz, test_e5m2fnuz));
}
