/* t-device.c: the staging of GPU kernel calls (qualify/runner_device.c),
 * run here through the CPU back end standing in for a device, so the
 * logic is tested without a GPU: inputs reach the kernel, outputs come
 * back, the poison in the host buffer reaches the device and comes back
 * where the kernel wrote nothing, and a write past either end of an
 * output lands in the device guard and is mirrored into the host canary.
 * Also the probe's answers for kernels that are not GPU kernels or whose
 * back end is not built.
 */
#include <string.h>

#include "_runner_device.h"
#include "qf_backend.h"
#include "qf_kernel.h"
#include "qf_test.h"

#define N      8
#define CANARY 4096
#define FILL   0xCD

static unsigned char inbuf[N * 4], outmap[CANARY + N * 4 + CANARY];

/* y = 2 x; user 1: also writes one element past the end, 2: one before
 * the start, 3: writes nothing. */
static qf_status fake_run(void *ctx, const qf_kernel_call *call)
{
    const float *x = call->in[0].data;
    float *y = call->out[0].data;
    int mode = (int)(intptr_t)ctx, i;
    if (mode == 3)
        return QF_OK;
    for (i = 0; i < N; i++)
        y[i] = 2 * x[i];
    if (mode == 1)
        y[N] = 1;
    if (mode == 2)
        y[-1] = 1;
    return QF_OK;
}

static qf_status run_mode(int mode)
{
    static qf_kernel k;
    qf_op_desc op;
    qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
    qf_kernel_call call;
    qf_device dev;
    int64_t shape[2] = {1, N};
    float *x = (float *)inbuf;
    int i;
    double t = -1;
    qf_status s;
    char msg[256] = "";
    memset(&k, 0, sizeof k);
    k.name = "softmax.test.staging";
    k.backend = "cpu";
    k.run = fake_run;
    memset(&op, 0, sizeof op);
    op.op = QF_OP_SOFTMAX;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    qf_tensor_init(&in[0], QF_FLOAT32, 2, shape);
    qf_tensor_init(&out[0], QF_FLOAT32, 2, shape);
    for (i = 0; i < N; i++)
        x[i] = (float)(i + 1);
    in[0].data = inbuf;
    in[0].bytes = sizeof inbuf;
    memset(outmap, FILL, sizeof outmap);
    memset(outmap + CANARY, 0xA5, N * 4); /* the poison */
    out[0].data = outmap + CANARY;
    out[0].bytes = N * 4;
    memset(&call, 0, sizeof call);
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = &k;
    call.op = &op;
    call.in = in;
    call.out = out;
    call.msg = msg;
    call.msg_size = sizeof msg;
    ck_assert_int_eq(qf_device_open(qf_backend_cpu(), 0, &dev), QF_OK);
    s = _qf_rdev_run(&dev, (void *)(intptr_t)mode, &call, &t);
    qf_device_close(&dev);
    ck_assert_msg(s == QF_OK, "%s", msg);
    ck_assert(t >= 0);
    return s;
}

static int canary_clean(size_t *where)
{
    size_t i;
    for (i = 0; i < sizeof outmap; i++) {
        if (i >= CANARY && i < CANARY + N * 4)
            continue;
        if (outmap[i] != FILL) {
            *where = i;
            return 0;
        }
    }
    return 1;
}

START_TEST(test_clean)
{
    const float *y = (const float *)(outmap + CANARY);
    size_t where = 0;
    int i;
    run_mode(0);
    for (i = 0; i < N; i++)
        ck_assert_msg(y[i] == (float)(2 * (i + 1)), "y[%d] = %g", i, (double)y[i]);
    ck_assert_msg(canary_clean(&where), "canary byte %zu changed by a clean kernel", where);
}
END_TEST

START_TEST(test_overrun)
{
    size_t where = 0;
    run_mode(1);
    ck_assert(!canary_clean(&where));
    /* the first byte past the data (the device guard's offset 0) */
    ck_assert_uint_eq(where, CANARY + N * 4);
}
END_TEST

START_TEST(test_underrun)
{
    size_t where = 0;
    run_mode(2);
    ck_assert(!canary_clean(&where));
    /* the element before the data: 4 bytes before it */
    ck_assert_uint_eq(where, CANARY - 4);
}
END_TEST

START_TEST(test_unwritten_keeps_poison)
{
    size_t where = 0;
    int i;
    run_mode(3);
    for (i = 0; i < N * 4; i++)
        ck_assert_uint_eq(outmap[CANARY + i], 0xA5);
    ck_assert(canary_clean(&where));
}
END_TEST

START_TEST(test_probe_reasons)
{
    qf_kernel k;
    char arch[64], why[256];
    memset(&k, 0, sizeof k);
    k.name = "x.cpu";
    k.backend = "cpu";
    ck_assert_int_eq(_qf_rdev_is_device(&k), 0);
    ck_assert_int_eq(_qf_rdev_probe(&k, arch, sizeof arch, why, sizeof why), -1);
    k.backend = "nosuch";
    k.archs = "sm_90";
    ck_assert_int_eq(_qf_rdev_is_device(&k), 1);
    ck_assert_int_eq(_qf_rdev_probe(&k, arch, sizeof arch, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "nosuch back end is not built") != NULL, "%s", why);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/device");
    TCase *tc = tcase_create("staging");
    tcase_add_test(tc, test_clean);
    tcase_add_test(tc, test_overrun);
    tcase_add_test(tc, test_underrun);
    tcase_add_test(tc, test_unwritten_keeps_poison);
    tcase_add_test(tc, test_probe_reasons);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
