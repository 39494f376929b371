/* t-model-vs-hw.c: the CPU models of kernels/models against the NVIDIA
 * tensor cores themselves, bit for bit (tests/common/qf_model_vs_hw.h).
 *
 * One mma.sync instruction (qf_cuda_mma_probe: m16n8k16 bf16 and f16 on
 * sm_80+, m16n8k32 e4m3 on sm_89+) on crafted and random inputs; each of
 * the 128 results against qf_model_dot of the preset for the device's
 * architecture (a100.* for sm_80, h100.* for sm_90, l40s.e4m3
 * for sm_89, b200.* for sm_100), and on sm_90 one wgmma.mma_async m64n8k16
 * bf16 (qf_cuda_wgmma_probe, 512 results) against h100.bf16.  The e4m3 instruction is mma.sync, while
 * the published H100 FP8 facts are for wgmma: agreement or disagreement
 * there is itself the evidence.  Without a device: exit 77 (skipped).
 */
#include "qf_backend_test.h"
#include "qf_cuda.h"
#include "qf_model_vs_hw.h"

static char arch[32], devname[128];
static qf_mvh h;

/* The preset modelling instruction kind (0 bf16, 1 f16, 2 e4m3) here. */
static const char *preset_for(int kind)
{
    static const char *const fmt[] = {"bf16", "f16", "e4m3"};
    static char name[64];
    int cc = atoi(arch + 3);
    const char *gen;
    if (kind < 2)
        gen = cc >= 100 ? "b200" : cc >= 90 ? "h100" : cc == 80 ? "a100" : NULL;
    else
        gen = cc >= 100 ? "b200" : cc >= 90 ? "h100" : cc == 89 ? "l40s" : NULL;
    if (!gen)
        return NULL;
    snprintf(name, sizeof name, "%s.%s", gen, fmt[kind]);
    return qf_model_preset(name) ? name : NULL;
}

START_TEST(test_bf16)
{
    ck_assert_int_eq(qf_mvh_run(&h, 0, 16, QF_BFLOAT16, 0x1p-12, 2, "mma.m16n8k16.bf16", preset_for(0)), 0);
}
END_TEST

START_TEST(test_f16)
{
    ck_assert_int_eq(qf_mvh_run(&h, 1, 16, QF_FLOAT16, 0x1p-12, 2, "mma.m16n8k16.f16", preset_for(1)), 0);
}
END_TEST

/* e4m3: 2^-6 squared is 2^-12, at the last of the 13 kept bits next to 1 */
START_TEST(test_e4m3)
{
    ck_assert_int_eq(qf_mvh_run(&h, 2, 32, QF_FLOAT8_E4M3FN, 0x1p-6, 8, "mma.m16n8k32.e4m3", preset_for(2)),
                     0);
}
END_TEST

/* wgmma (sm_90a): one m64n8k16 bf16 instruction, 512 results against the
 * H100 model; "not run" on other architectures or builds without sm_90a. */
static qf_status wgmma(int kind, const float *a, const float *b, float *d, char *err, size_t err_size)
{
    (void)kind;
    return qf_cuda_wgmma_probe(a, b, d, err, err_size);
}

START_TEST(test_wgmma_bf16)
{
    qf_mvh w = {arch, wgmma, 8, 64};
    const char *pname = atoi(arch + 3) == 90 ? "h100.bf16" : NULL;
    ck_assert_int_eq(qf_mvh_run(&w, 0, 16, QF_BFLOAT16, 0x1p-12, 2, "wgmma.m64n8k16.bf16", pname), 0);
}
END_TEST

int main(void)
{
    qf_bt_require_device(qf_cuda_device_count, "cuda/model-vs-hw");
    if (qf_cuda_device_arch(0, arch, sizeof arch, devname, sizeof devname) != QF_OK) {
        printf("SKIP cuda/model-vs-hw: cannot read device 0's properties\n");
        return QF_TEST_SKIP;
    }
    printf("device 0: %s (%s)\n", devname, arch);
    if (!preset_for(0) && !preset_for(1) && !preset_for(2)) {
        /* Nothing to compare with: not a pass. */
        printf("SKIP cuda/model-vs-hw: no CPU model of %s's matrix unit\n", arch);
        return QF_TEST_SKIP;
    }
    h.arch = arch;
    h.probe = qf_cuda_mma_probe;
    h.n = 8;
    qf_mvh_report_header(devname, arch);
    return qf_test_main("cuda/model-vs-hw", "mma", 0, NULL, NULL,
                        QF_TESTS(test_bf16, test_f16, test_e4m3, test_wgmma_bf16));
}
