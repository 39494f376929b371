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
    qf_bt_require_device(qf_cuda_device_count, "cuda/memory");
    return qf_test_main("cuda/memory", "memory", 0, NULL, NULL, QF_TESTS(test_roundtrip));
}
