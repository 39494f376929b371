/* t-threads.c: the kernel thread count as a sweep axis (docs/suites.md
 * "Threads", docs/runner.md): each case's count reaches the kernel as
 * call.threads, is keyed like a parameter, and a kernel claiming the same
 * bits across thread counts is rerun with one thread more than the case's.
 * Two test kernels: one that declines, saying the count it saw; one that
 * computes relu exactly but writes its zeros as -0 from 3 threads on. */
#include <stdio.h>
#include <string.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_runner_test.h"
#include "qf_suite.h"
#include "qf_test.h"

enum { DECLINE, BITS3 };

static qf_status run_act(void *ctx, const qf_kernel_call *call)
{
    const float *x = call->in[0].data;
    float *y = call->out[0].data;
    size_t i, n = (size_t)call->op->u.activation.n;
    if ((int)(intptr_t)ctx == DECLINE) {
        snprintf(call->msg, call->msg_size, "saw %d threads", call->threads);
        return QF_EUNSUPPORTED;
    }
    for (i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : call->threads >= 3 ? -0.0f : 0.0f;
    return QF_OK;
}

static qf_registry *test_registry(void)
{
    static const char *const names[] = {"activation.test.decline", "activation.test.bits3"};
    static qf_dtype_tuple t[1];
    qf_registry *r = NULL;
    size_t i;
    t[0].name = "f32";
    t[0].in[0] = t[0].in[1] = QF_FLOAT32;
    t[0].out[0] = QF_FLOAT32;
    t[0].arith = qf_arith_claim_default();
    t[0].arith.acc_format = QF_FLOAT32;
    t[0].arith.deterministic_threads = 1;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    for (i = 0; i < 2; i++) {
        qf_kernel k;
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = sizeof k;
        k.name = names[i];
        k.op = QF_OP_ACTIVATION;
        k.kind = QF_KERNEL_REFERENCE;
        k.description = "test kernel";
        k.backend = "cpu";
        k.archs = "cpu";
        k.dtypes = t;
        k.n_dtypes = 1;
        k.run = run_act;
        k.user = (void *)(intptr_t)i;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    return r;
}

/* The result of kernel at this thread count (ids say "threads=N" unless
 * N is 1). */
static const qf_result *find(const qf_runner_summary *s, const char *kernel, unsigned threads)
{
    size_t i;
    char tag[32];
    snprintf(tag, sizeof tag, "threads=%u/", threads);
    for (i = 0; i < s->n; i++) {
        const char *id = s->results[i].case_id;
        if (!strcmp(s->results[i].kernel, kernel) &&
            (threads == 1 ? !strstr(id, "threads=") : !!strstr(id, tag)))
            return &s->results[i];
    }
    ck_abort_msg("no result for %s at %u threads", kernel, threads);
    return NULL;
}

START_TEST(thread_axis)
{
    qf_registry *reg = test_registry();
    qf_runner_summary sum;
    const qf_result *r;
    qf_test_run_yaml("suite: threads\n"
                     "op: activation\n"
                     "kernels: [activation.test.*]\n"
                     "dtypes: [float32]\n"
                     "params: {fn: relu}\n"
                     "shapes: {rows: 4, cols: 32}\n"
                     "threads: [1, 2, 3]\n",
                     "threads.yaml", reg, &sum);
    ck_assert_uint_eq(sum.n, 6);
    r = find(&sum, "activation.test.decline", 1);
    ck_assert_str_eq(r->case_id, "activation/rows=4,cols=32/f32.f32.f32/fn=relu/normal/seed=0");
    ck_assert_msg(strstr(r->reason, "saw 1 threads"), "%s", r->reason);
    ck_assert_uint_eq(r->nparams, 1); /* one thread is the default: not keyed */
    r = find(&sum, "activation.test.decline", 3);
    ck_assert_str_eq(r->case_id, "activation/rows=4,cols=32/f32.f32.f32/fn=relu,threads=3/normal/seed=0");
    ck_assert_msg(strstr(r->reason, "saw 3 threads"), "%s", r->reason);
    ck_assert_uint_eq(r->nparams, 2);
    ck_assert_str_eq(r->params[1].key, "threads");
    ck_assert_str_eq(r->params[1].value, "3");
    /* runs at 1 and 2 threads: the same bits */
    r = find(&sum, "activation.test.bits3", 1);
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "%s %s", qf_verdict_name(r->verdict), r->reason);
    /* runs at 2 and 3 threads (the case's count and one more): -0 against +0 */
    r = find(&sum, "activation.test.bits3", 2);
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && strstr(r->reason, "thread counts"), "%s %s",
                  qf_verdict_name(r->verdict), r->reason);
    qf_runner_summary_free(&sum);
    qf_registry_free(reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, thread_axis);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
