/* t-backend.c: the CUDA back end behind qf_backend.h (kernels/cuda/backend.cu).
 *
 * Always: the table is linked in and listed (libqualify finds it through
 * its weak reference), and its answers without a device are the documented
 * ones (open fails with QF_EUNSUPPORTED and the CUDA error is kept for the
 * runner's reason).  With a device: arch "sm_XY", describe, allocation,
 * copies both ways and device to device, memset, synchronize and an event
 * timer. */
#include <string.h>

#include "qf_backend.h"
#include "qf_cuda.h"
#include "qf_test.h"

extern const char *qf_cuda_last_error(void);

static int have_device;

START_TEST(test_table)
{
    const qf_backend *be = qf_backend_get("cuda");
    char names[256];
    ck_assert_ptr_nonnull(be);
    ck_assert_str_eq(be->name, "cuda");
    ck_assert_uint_eq(be->abi_version, QF_BACKEND_ABI_VERSION);
    qf_backend_list_names(names, sizeof names);
    ck_assert_msg(strstr(names, "cuda") != NULL, "%s", names);
    ck_assert_int_eq(qf_backend_select("cuda", &be), QF_OK);
}
END_TEST

START_TEST(test_without_device)
{
    qf_device dev;
    if (have_device)
        return;
    ck_assert_int_eq(qf_device_open(qf_backend_get("cuda"), 0, &dev), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(qf_cuda_last_error(), "cudaGetDeviceCount") != NULL, "%s", qf_cuda_last_error());
}
END_TEST

START_TEST(test_device_roundtrip)
{
    const qf_backend *be = qf_backend_get("cuda");
    qf_device dev;
    char arch[32], desc[512];
    unsigned char host[1000], back[1000];
    void *a, *b;
    qf_timer t;
    double s = -1;
    int i;
    ck_assert_int_eq(qf_device_open(be, 0, &dev), QF_OK);
    ck_assert_int_eq(be->arch(dev.state, arch, sizeof arch), QF_OK);
    ck_assert_msg(!strncmp(arch, "sm_", 3), "%s", arch);
    ck_assert_int_eq(be->describe(dev.state, desc, sizeof desc), QF_OK);
    ck_assert_msg(strstr(desc, arch) != NULL && strstr(desc, "SMs") != NULL, "%s", desc);
    for (i = 0; i < 1000; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    ck_assert_int_eq(qf_device_alloc(&dev, sizeof host, &a), QF_OK);
    ck_assert_int_eq(qf_device_alloc(&dev, sizeof host, &b), QF_OK);
    ck_assert_int_eq(be->timer_start(dev.state, &t), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, a, host, sizeof host, QF_COPY_HOST_TO_DEVICE), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, b, a, sizeof host, QF_COPY_DEVICE_TO_DEVICE), QF_OK);
    ck_assert_int_eq(be->timer_stop(dev.state, &t, &s), QF_OK);
    ck_assert(s >= 0);
    ck_assert_int_eq(qf_device_copy(&dev, back, b, sizeof back, QF_COPY_DEVICE_TO_HOST), QF_OK);
    ck_assert(memcmp(host, back, sizeof host) == 0);
    ck_assert_int_eq(be->memset(dev.state, b, 0xA5, 10), QF_OK);
    ck_assert_int_eq(qf_device_synchronize(&dev), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, back, b, 11, QF_COPY_DEVICE_TO_HOST), QF_OK);
    for (i = 0; i < 10; i++)
        ck_assert_uint_eq(back[i], 0xA5);
    ck_assert_uint_eq(back[10], host[10]);
    qf_device_free(&dev, a);
    qf_device_free(&dev, b);
    qf_device_close(&dev);
}
END_TEST

int main(void)
{
    char why[256] = "";
    Suite *s = suite_create("cuda/backend");
    TCase *tc = tcase_create("backend");
    have_device = qf_cuda_device_count(why, sizeof why) > 0;
    if (!have_device)
        printf("no CUDA device (%s): the device round trip is not run\n", why);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_without_device);
    if (have_device)
        tcase_add_test(tc, test_device_roundtrip);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
