/* t-memory.c: the CUDA back end's memory, copies, memset, synchronization and
 * event timer on device 0 (kernels/cuda/backend.cu; tests/common/qf_backend_test.h), and
 * its arch and describe answers.  Without a usable device: exit 77
 * (skipped); tests/cuda/t-backend.c checks the no-device answer. */
#include "qf_backend_test.h"
#include "qf_cuda.h"

START_TEST(test_roundtrip)
{
    qf_bt_roundtrip("cuda", "sm_", "SMs");
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s;
    TCase *tc;
    if (qf_cuda_device_count(why, sizeof why) == 0) {
        printf("SKIP cuda/memory: %s\n", why);
        return QF_TEST_SKIP;
    }
    s = suite_create("cuda/memory");
    tc = tcase_create("memory");
    tcase_add_test(tc, test_roundtrip);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
