/* t-decode.c: the HIP device's FP8 decode agrees with precision/'s
 * exact decode on all 256 codes of the OCP and FNUZ FP8 formats.
 * Without a device the test exits 77 (CTest: skipped), never passed. */
#include <math.h>

#include "qf_hip.h"
#include "qf_format.h"
#include "qf_test.h"

static void check_format(qf_format_id id)
{
    const qf_format *f = qf_format_get(id);
    uint8_t codes[256];
    float out[256];
    char err[256] = "";
    int i;
    qf_status st;
    for (i = 0; i < 256; i++)
        codes[i] = (uint8_t)i;
    st = qf_hip_decode_fp8(id, codes, 256, out, err, sizeof err);
    ck_assert_msg(st == QF_OK, "%s: %s", f->name, err);
    for (i = 0; i < 256; i++) {
        double want = qf_format_decode(f, (uint64_t)i);
        if (isnan(want))
            ck_assert_msg(isnan(out[i]), "%s code 0x%02X: device %a, expected nan", f->name, i, (double)out[i]);
        else
            ck_assert_msg((double)out[i] == want && signbit(out[i]) == signbit(want),
                          "%s code 0x%02X: device %a, expected %a", f->name, i, (double)out[i], want);
    }
}

START_TEST(test_e4m3) { check_format(QF_FLOAT8_E4M3FN); }
END_TEST

START_TEST(test_e5m2) { check_format(QF_FLOAT8_E5M2); }
END_TEST

START_TEST(test_fnuz)
{
    check_format(QF_FLOAT8_E4M3FNUZ);
    check_format(QF_FLOAT8_E5M2FNUZ);
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s;
    TCase *tc;
    char arch[32], name[128];
    if (qf_hip_device_count(why, sizeof why) == 0) {
        printf("SKIP hip/decode: %s\n", why);
        return QF_TEST_SKIP;
    }
    if (qf_hip_device_arch(0, arch, sizeof arch, name, sizeof name) == QF_OK)
        printf("device 0: %s (%s)\n", name, arch);
    s = suite_create("hip/decode");
    tc = tcase_create("fp8");
    tcase_add_test(tc, test_e4m3);
    tcase_add_test(tc, test_e5m2);
    tcase_add_test(tc, test_fnuz);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
