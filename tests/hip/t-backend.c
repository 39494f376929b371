/* t-backend.c: the HIP back end behind qf_backend.h (kernels/hip/backend.hip),
 * with the checks of tests/common/qf_backend_test.h.  The table and the
 * no-device answer are checked everywhere (CI included); the device round
 * trip where there is a usable device (arch gfxNNN without its feature
 * suffixes). */
#include "qf_backend_test.h"
#include "qf_hip.h"

extern const char *qf_hip_last_error(void);

START_TEST(test_table)
{
    qf_bt_table("hip");
}
END_TEST

START_TEST(test_without_device)
{
    qf_bt_no_device("hip", qf_hip_last_error(), "hipGetDeviceCount");
}
END_TEST

START_TEST(test_device_roundtrip)
{
    qf_bt_roundtrip("hip", "gfx", "CUs");
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s = suite_create("hip/backend");
    TCase *tc = tcase_create("backend");
    int n;
    tcase_add_test(tc, test_table);
    n = qf_hip_device_count(why, sizeof why);
    if (n > 0)
        tcase_add_test(tc, test_device_roundtrip);
    else if (strstr(why, "hipGetDeviceCount")) {
        /* no device at all (a device of an unbuilt target is not "none") */
        printf("no HIP device (%s): the device round trip is not run\n", why);
        tcase_add_test(tc, test_without_device);
    } else
        printf("no usable HIP device (%s): the device round trip is not run\n", why);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
