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
    qf_bt_require_device(qf_hip_device_count, "hip/memory");
    return qf_test_main("hip/memory", "memory", 0, NULL, NULL, QF_TESTS(test_roundtrip));
}
