/* t-memory.c: the HIP back end's memory, copies, memset, synchronization and
 * event timer on device 0 (kernels/hip/backend.hip; tests/common/qf_backend_test.h), and
 * its arch and describe answers.  Without a usable device: exit 77
 * (skipped); tests/hip/t-backend.c checks the no-device answer. */
#include "qf_backend_test.h"
#include "qf_hip.h"

START_TEST(test_roundtrip)
{
    qf_bt_roundtrip("hip", "gfx", "CUs");
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s;
    TCase *tc;
    if (qf_hip_device_count(why, sizeof why) == 0) {
        printf("SKIP hip/memory: %s\n", why);
        return QF_TEST_SKIP;
    }
    s = suite_create("hip/memory");
    tc = tcase_create("memory");
    tcase_add_test(tc, test_roundtrip);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
