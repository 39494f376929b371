/* t-mvh.c: the model-vs-hardware comparison (tests/common/qf_model_vs_hw.h)
 * without hardware: a probe that computes with one model preset stands in
 * for the instruction.  It must agree with its own preset on the crafted
 * and random inputs, and the crafted inputs must tell the presets apart
 * (A100 vs H100 bf16, H100 vs L40S e4m3, MI250X vs MI300 f16), so that a
 * GPU run of tests/cuda|hip/t-model-vs-hw can show which model the
 * hardware follows.
 */
#define _POSIX_C_SOURCE 200809L

#include "qf_model_vs_hw.h"

static const qf_model_params *fake;
static int fake_n, fake_m = 16;

/* D = A B with the fake preset, A [16][K], B [K][n]. */
static qf_status fake_probe(int kind, const float *a, const float *b, float *d, char *err, size_t err_size)
{
    int K = fake->block >= 32 ? 32 : 16, i, j, l;
    double ar[64], br[64], v;
    (void)kind;
    (void)err;
    (void)err_size;
    for (i = 0; i < fake_m; i++)
        for (j = 0; j < fake_n; j++) {
            for (l = 0; l < K; l++) {
                ar[l] = a[i * K + l];
                br[l] = b[l * fake_n + j];
            }
            if (qf_model_dot(fake, (size_t)K, ar, 1, br, 1, &v) != QF_OK)
                return QF_EINVAL;
            d[i * fake_n + j] = (float)v;
        }
    return QF_OK;
}

static int run(const char *hw, const char *model, int n, int K, qf_format_id f, double tiny, double range)
{
    qf_mvh h = {"fake", fake_probe, n, 0};
    fake = qf_model_preset(hw);
    fake_n = n;
    ck_assert_ptr_nonnull(fake);
    return qf_mvh_run(&h, 0, K, f, tiny, range, hw, model);
}

START_TEST(test_agrees_with_itself)
{
    ck_assert_int_eq(run("h100.bf16", "h100.bf16", 8, 16, QF_BFLOAT16, 0x1p-12, 2), 0);
    ck_assert_int_eq(run("a100.f16", "a100.f16", 8, 16, QF_FLOAT16, 0x1p-12, 2), 0);
    ck_assert_int_eq(run("h100.e4m3", "h100.e4m3", 8, 32, QF_FLOAT8_E4M3FN, 0x1p-6, 8), 0);
    ck_assert_int_eq(run("mi250x.bf16", "mi250x.bf16", 16, 16, QF_BFLOAT16, 0x1p-12, 2), 0);
    /* 64 rows, as the wgmma m64n8k16 probe */
    {
        qf_mvh h = {"fake", fake_probe, 8, 64};
        fake = qf_model_preset("h100.bf16");
        fake_n = 8;
        fake_m = 64;
        ck_assert_int_eq(qf_mvh_run(&h, 0, 16, QF_BFLOAT16, 0x1p-12, 2, "m64", "h100.bf16"), 0);
        fake_m = 16;
    }
}
END_TEST

START_TEST(test_crafted_inputs_discriminate)
{
    float a[16 * 32], b[32 * 16];
    qf_mvh h = {"fake", fake_probe, 8, 0};
    /* A100 keeps 24 fraction bits, H100 25: the crafted rows differ */
    fake = qf_model_preset("a100.bf16");
    fake_n = 8;
    qf_mvh_crafted(16, 16, 8, 0x1p-12, a, b);
    ck_assert_int_gt(qf_mvh_compare(&h, 0, 16, "h100.bf16", "a100 as h100", a, b), 0);
    h.n = 16;
    fake_n = 16;
    /* MI250X (fp32 tree of 4, nearest) vs MI300 (blocks of 8, 24 bits, floor) */
    fake = qf_model_preset("mi250x.f16");
    qf_mvh_crafted(16, 16, 16, 0x1p-12, a, b);
    ck_assert_int_gt(qf_mvh_compare(&h, 1, 16, "mi300.f16", "mi250x as mi300", a, b), 0);
}
END_TEST

int main(void)
{
    unsetenv("QF_MODEL_VS_HW_REPORT");
    return qf_test_main("models/mvh", "compare", 0, NULL, NULL,
                        QF_TESTS(test_agrees_with_itself, test_crafted_inputs_discriminate));
}
