/* qf_backend_test.h: the checks of a GPU back end's table shared by
 * tests/cuda/t-backend.c and tests/hip/t-backend.c.
 *
 * qf_bt_table: the table is linked in, listed and selectable.
 * qf_bt_no_device: without a device, open fails with QF_EUNSUPPORTED and the
 *   driver's error (naming count_call) is kept for the runner's reason.
 * qf_bt_decode: a device's FP8 decode agrees with precision/ on all codes.
 * qf_bt_require_device: main()'s skip without a device.
 * qf_bt_roundtrip: with a device, arch starts with arch_prefix and has no
 *   feature suffix, describe names it and unit_word, allocation, copies in
 *   all three directions, memset, synchronize and the event timer work. */
#ifndef QF_BACKEND_TEST_H
#define QF_BACKEND_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_backend.h"
#include "qf_format.h"
#include "qf_test.h"

static inline void qf_bt_table(const char *name)
{
    const qf_backend *be = qf_backend_get(name);
    char names[256];
    ck_assert_ptr_nonnull(be);
    ck_assert_str_eq(be->name, name);
    ck_assert_uint_eq(be->abi_version, QF_BACKEND_ABI_VERSION);
    qf_backend_list_names(names, sizeof names);
    ck_assert_msg(strstr(names, name) != NULL, "%s", names);
    ck_assert_int_eq(qf_backend_select(name, &be), QF_OK);
}

static inline void qf_bt_no_device(const char *name, const char *last_error, const char *count_call)
{
    qf_device dev;
    ck_assert_int_eq(qf_device_open(qf_backend_get(name), 0, &dev), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(last_error, count_call) != NULL, "%s", last_error);
}

static inline void qf_bt_roundtrip(const char *name, const char *arch_prefix, const char *unit_word)
{
    const qf_backend *be = qf_backend_get(name);
    qf_device dev;
    char arch[32], desc[512];
    unsigned char host[1000], back[1000];
    void *a, *b;
    qf_timer t;
    double s = -1;
    int i;
    ck_assert_int_eq(qf_device_open(be, 0, &dev), QF_OK);
    ck_assert_int_eq(be->arch(dev.state, arch, sizeof arch), QF_OK);
    ck_assert_msg(!strncmp(arch, arch_prefix, strlen(arch_prefix)) && !strchr(arch, ':'), "%s", arch);
    ck_assert_int_eq(be->describe(dev.state, desc, sizeof desc), QF_OK);
    ck_assert_msg(strstr(desc, arch) != NULL && strstr(desc, unit_word) != NULL, "%s", desc);
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

/* A device's FP8 decode: qf_cuda_decode_fp8, qf_hip_decode_fp8. */
typedef qf_status (*qf_bt_decode_fn)(qf_format_id fmt, const uint8_t *codes, size_t n, float *out, char *err,
                                     size_t err_size);

/* The device's reading of all 256 codes of format id agrees with
 * precision/'s exact decode: NaN for NaN, otherwise the same value with
 * the same sign (zeros included). */
static inline void qf_bt_decode(qf_bt_decode_fn decode, qf_format_id id)
{
    const qf_format *f = qf_format_get(id);
    uint8_t codes[256];
    float out[256];
    char err[256] = "";
    int i;
    qf_status st;
    for (i = 0; i < 256; i++)
        codes[i] = (uint8_t)i;
    st = decode(id, codes, 256, out, err, sizeof err);
    ck_assert_msg(st == QF_OK, "%s: %s", f->name, err);
    for (i = 0; i < 256; i++) {
        double want = qf_format_decode(f, (uint64_t)i);
        if (isnan(want))
            ck_assert_msg(isnan(out[i]), "%s code 0x%02X: device %a, expected nan", f->name, i,
                          (double)out[i]);
        else
            ck_assert_msg((double)out[i] == want && signbit(out[i]) == signbit(want),
                          "%s code 0x%02X: device %a, expected %a", f->name, i, (double)out[i], want);
    }
}

/* For main(): exit 77 (skipped, never passed) when count (the back end's
 * qf_*_device_count) finds no device, saying why. */
static inline void qf_bt_require_device(int (*count)(char *why, size_t why_size), const char *test)
{
    char why[256] = "";
    if (count(why, sizeof why) == 0) {
        printf("SKIP %s: %s\n", test, why);
        exit(QF_TEST_SKIP);
    }
}

#endif