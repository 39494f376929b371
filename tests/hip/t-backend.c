/* t-backend.c: the HIP back end's table behind qf_backend.h, with the
 * checks of tests/common/qf_backend_test.h: the module is linked in (and
 * libqualify's loader finds it mapped), listed and selectable everywhere, CI included;
 * without any device, open fails with QF_EUNSUPPORTED and the driver's
 * error is kept for the runner's reason.  tests/hip/t-memory.c runs the
 * device side. */
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

int main(void)
{
    char why[256] = "";
    Suite *s = suite_create("hip/backend");
    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, test_table);
    /* the no-device answer where there is none at all; tests/hip/t-memory.c
     * runs the device side (skipped without one) */
    if (qf_hip_device_count(why, sizeof why) == 0 && strstr(why, "hipGetDeviceCount"))
        tcase_add_test(tc, test_without_device);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
