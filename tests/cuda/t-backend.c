/* t-backend.c: the CUDA back end behind qf_backend.h (kernels/cuda/backend.cu),
 * with the checks of tests/common/qf_backend_test.h.  The table and the
 * no-device answer are checked everywhere (CI included); the device round
 * trip where there is a device. */
#include "qf_backend_test.h"
#include "qf_cuda.h"

extern const char *qf_cuda_last_error(void);

START_TEST(test_table)
{
    qf_bt_table("cuda");
}
END_TEST

START_TEST(test_without_device)
{
    qf_bt_no_device("cuda", qf_cuda_last_error(), "cudaGetDeviceCount");
}
END_TEST

START_TEST(test_device_roundtrip)
{
    qf_bt_roundtrip("cuda", "sm_", "SMs");
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s = suite_create("cuda/backend");
    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, test_table);
    if (qf_cuda_device_count(why, sizeof why) > 0)
        tcase_add_test(tc, test_device_roundtrip);
    else {
        printf("no CUDA device (%s): the device round trip is not run\n", why);
        tcase_add_test(tc, test_without_device);
    }
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
