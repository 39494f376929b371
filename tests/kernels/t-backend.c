/* t-backend.c: the back-end interface (qf_backend.h) and its CPU back end:
 * selection (argument, QF_BACKEND, default), allocation, copies, timers,
 * architecture identity.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qf_backend.h"
#include "qf_test.h"

START_TEST(test_select)
{
    const qf_backend *be = NULL;
    char names[128];
    unsetenv("QF_BACKEND");
    ck_assert_int_eq(qf_backend_select(NULL, &be), QF_OK);
    ck_assert_ptr_eq(be, qf_backend_cpu());
    ck_assert_str_eq(be->name, "cpu");
    ck_assert_int_eq(qf_backend_select("cpu", &be), QF_OK);
    ck_assert_int_eq(qf_backend_select("tpu", &be), QF_EUNSUPPORTED);
    ck_assert_ptr_null(be);
    setenv("QF_BACKEND", "nonexistent", 1);
    ck_assert_int_eq(qf_backend_select(NULL, &be), QF_EUNSUPPORTED);
    setenv("QF_BACKEND", "cpu", 1);
    ck_assert_int_eq(qf_backend_select(NULL, &be), QF_OK);
    unsetenv("QF_BACKEND");
    ck_assert_ptr_null(qf_backend_get("cuda_not_built"));
    qf_backend_list_names(names, sizeof names);
    ck_assert_msg(strstr(names, "cpu") != NULL, "%s", names);
}
END_TEST

START_TEST(test_cpu_device)
{
    qf_device dev;
    void *a = NULL, *b = NULL;
    char arch[64], desc[512];
    uint32_t host[100], back[100];
    qf_timer t;
    double sec = -1;
    int i;
    const qf_backend *be = qf_backend_cpu();
    ck_assert_int_eq(qf_device_open(be, 1, &dev), QF_EINVAL);
    ck_assert_int_eq(qf_device_open(be, 0, &dev), QF_OK);
    ck_assert_int_eq(be->arch(dev.state, arch, sizeof arch), QF_OK);
    ck_assert_str_eq(arch, "cpu");
    ck_assert_int_eq(be->describe(dev.state, desc, sizeof desc), QF_OK);
    ck_assert_msg(!strncmp(desc, "cpu: ", 5), "%s", desc);
    for (i = 0; i < 100; i++)
        host[i] = (uint32_t)i * 2654435761u;
    ck_assert_int_eq(qf_device_alloc(&dev, sizeof host, &a), QF_OK);
    ck_assert_int_eq(qf_device_alloc(&dev, sizeof host, &b), QF_OK);
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    ck_assert_int_eq(be->timer_start(dev.state, &t), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, a, host, sizeof host, QF_COPY_HOST_TO_DEVICE), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, b, a, sizeof host, QF_COPY_DEVICE_TO_DEVICE), QF_OK);
    ck_assert_int_eq(be->memset(dev.state, a, 0, sizeof host), QF_OK);
    ck_assert_int_eq(qf_device_copy(&dev, back, b, sizeof host, QF_COPY_DEVICE_TO_HOST), QF_OK);
    ck_assert_int_eq(qf_device_synchronize(&dev), QF_OK);
    ck_assert_int_eq(be->timer_stop(dev.state, &t, &sec), QF_OK);
    ck_assert(sec >= 0 && sec < 10);
    ck_assert_int_eq(memcmp(host, back, sizeof host), 0);
    ck_assert_int_eq(((uint32_t *)a)[7], 0);
    ck_assert_int_eq(qf_device_copy(&dev, NULL, host, 4, QF_COPY_HOST_TO_DEVICE), QF_EINVAL);
    qf_device_free(&dev, a);
    qf_device_free(&dev, b);
    /* Zero bytes: a real (freeable) pointer, so "absent" stays NULL. */
    ck_assert_int_eq(qf_device_alloc(&dev, 0, &a), QF_OK);
    ck_assert_ptr_nonnull(a);
    qf_device_free(&dev, a);
    ck_assert_int_eq(qf_device_alloc(&dev, SIZE_MAX, &a), QF_ENOMEM);
    qf_device_close(&dev);
    ck_assert_int_eq(qf_device_alloc(&dev, 4, &a), QF_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/backend");
    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_cpu_device);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
