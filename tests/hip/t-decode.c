/* t-decode.c: the HIP device's FP8 decode agrees with precision/'s
 * exact decode on all 256 codes of the OCP and FNUZ FP8 formats.
 * Without a device the test exits 77 (CTest: skipped), never passed. */
#include "qf_hip.h"
#include "qf_backend_test.h"
#include "qf_format.h"
#include "qf_test.h"

static void check_format(qf_format_id id)
{
    qf_bt_decode(qf_hip_decode_fp8, id);
}

START_TEST(test_e4m3)
{
    check_format(QF_FLOAT8_E4M3FN);
}
END_TEST

START_TEST(test_e5m2)
{
    check_format(QF_FLOAT8_E5M2);
}
END_TEST

START_TEST(test_fnuz)
{
    check_format(QF_FLOAT8_E4M3FNUZ);
    check_format(QF_FLOAT8_E5M2FNUZ);
}
END_TEST

int main(void)
{
    char arch[32], name[128];
    qf_bt_require_device(qf_hip_device_count, "hip/decode");
    if (qf_hip_device_arch(0, arch, sizeof arch, name, sizeof name) == QF_OK)
        printf("device 0: %s (%s)\n", name, arch);
    return qf_test_main("hip/decode", "fp8", 0, NULL, NULL, QF_TESTS(test_e4m3, test_e5m2, test_fnuz));
}
