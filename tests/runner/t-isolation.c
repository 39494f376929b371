/* t-isolation.c: the runner turns misbehaving kernels into verdicts while
 * the sweep goes on.  A test-only registry holds a good GEMM and kernels
 * that segfault, abort, hang, write past their output, leave an element
 * unwritten and return NaN; each must get its verdict (CRASHED with the
 * signal, TIMEOUT, FAILED with reason canary / unwritten / NaN) and the
 * good one QUALIFIED, with two workers at once and a short time limit. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"
#include "qf_test.h"

enum { GOOD, SEGV, ABRT, HANG, OVERRUN, UNWRITTEN, NAN_OUT, THREADS };

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static qf_status run_gemm(void *ctx, const qf_kernel_call *call)
{
    int what = (int)(intptr_t)ctx;
    const qf_op_gemm *g = &call->op->u.gemm;
    const uint32_t *a = call->in[0].data, *b = call->in[1].data;
    uint32_t *d = call->out[0].data;
    size_t i, j, l, m = g->m, n = g->n, k = g->k;
    volatile int spin = 1;
    switch (what) {
    case SEGV: raise(SIGSEGV); break;
    case ABRT: abort();
    case HANG:
        while (spin)
            ;
        break;
    default: break;
    }
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float s = 0.0f;
            for (l = 0; l < k; l++) {
                float p = f32(a[i * k + l]) * f32(b[l * n + j]);
                s = s + p;
            }
            if (what == UNWRITTEN && i == m - 1 && j == n - 1)
                continue;
            d[i * n + j] = bits(s);
        }
    if (what == OVERRUN)
        d[m * n] = 0;
    if (what == NAN_OUT)
        d[n + 1] = bits(NAN);
    /* Claims the same bits for any thread count, but its last ulp depends
     * on it (as a reduction split by thread would). */
    if (what == THREADS && call->threads > 1)
        d[0] ^= 1;
    return QF_OK;
}

static const qf_dtype_tuple *tuple(int threads_claim)
{
    static qf_dtype_tuple t[2];
    int i;
    for (i = 0; i < 2; i++) {
        t[i].name = "f32";
        t[i].in[0] = t[i].in[1] = t[i].in[2] = QF_FLOAT32;
        t[i].out[0] = QF_FLOAT32;
        t[i].arith = qf_arith_claim_default();
        t[i].arith.deterministic_threads = i;
    }
    return &t[threads_claim];
}

static const char *const names[] = {"gemm.test.good", "gemm.test.segv",    "gemm.test.abort",
                                    "gemm.test.hang", "gemm.test.overrun", "gemm.test.unwritten",
                                    "gemm.test.nan",  "gemm.test.threads"};

static qf_registry *test_registry(void)
{
    qf_registry *r = NULL;
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        qf_kernel k;
        memset(&k, 0, sizeof k);
        k.abi_version = QF_KERNEL_ABI_VERSION;
        k.struct_size = sizeof k;
        k.name = names[i];
        k.op = QF_OP_GEMM;
        k.kind = i == 0 ? QF_KERNEL_REFERENCE : QF_KERNEL_KNOWN_BAD;
        k.description = "test kernel";
        k.backend = "cpu";
        k.archs = "cpu";
        k.dtypes = tuple(i == GOOD || i == THREADS);
        k.n_dtypes = 1;
        k.run = run_gemm;
        k.user = (void *)(intptr_t)i;
        ck_assert_msg(qf_registry_add(r, &k) == QF_OK, "%s", qf_registry_error(r));
    }
    return r;
}

static const qf_result *find(const qf_runner_summary *s, const char *kernel)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        if (!strcmp(s->results[i].kernel, kernel))
            return &s->results[i];
    ck_abort_msg("no result for %s", kernel);
    return NULL;
}

START_TEST(bad_kernels_get_verdicts)
{
    char suite_path[128], journal[128], err[512];
    FILE *f;
    qf_suite *suite = NULL;
    qf_registry *reg = test_registry();
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    const qf_result *r;
    qf_result *back = NULL;
    size_t nback = 0;
    snprintf(suite_path, sizeof suite_path, "/tmp/qf-t-isolation-%d.yaml", (int)getpid());
    snprintf(journal, sizeof journal, "/tmp/qf-t-isolation-%d.jsonl", (int)getpid());
    f = fopen(suite_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: isolation\n"
          "refute: false\n" /* the counts below are of these inputs alone (docs/refute.md) */
          "groups:\n"
          "  - op: gemm\n"
          "    kernels: [gemm.test.*]\n"
          "    dtypes: [float32]\n"
          "    shapes: {M: [5], N: [8], K: [6]}\n",
          f);
    fclose(f);
    ck_assert_msg(qf_suite_load(suite_path, &suite, err, sizeof err) == QF_OK, "%s", err);
    o.journal_path = journal;
    o.jobs = 2;
    o.timeout_s = 5.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, &sum, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(sum.n, 8);

    r = find(&sum, "gemm.test.good");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "good: %s", r->reason);
    ck_assert_int_eq(r->has_metrics, 1);
    ck_assert_uint_eq(r->n_checked, 40);
    ck_assert_int_eq(r->sampled, 0);
    ck_assert_int_eq(r->det_checked, 1);
    ck_assert_int_eq(r->det_equal, 1);
    ck_assert_ptr_nonnull(strstr(r->reproducer, "--case"));
    ck_assert_ptr_nonnull(strstr(r->reproducer, "gemm.test.good"));

    r = find(&sum, "gemm.test.segv");
    ck_assert_msg(r->verdict == QF_VERDICT_CRASHED && r->signal == SIGSEGV, "segv: %s", r->reason);
    ck_assert_ptr_nonnull(strstr(r->reason, "signal 11"));
    r = find(&sum, "gemm.test.abort");
    ck_assert_msg(r->verdict == QF_VERDICT_CRASHED && r->signal == SIGABRT, "abort: %s", r->reason);
    r = find(&sum, "gemm.test.hang");
    ck_assert_msg(r->verdict == QF_VERDICT_TIMEOUT, "hang: %s", r->reason);
    r = find(&sum, "gemm.test.overrun");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && !strncmp(r->reason, "canary", 6), "overrun: %s",
                  r->reason);
    r = find(&sum, "gemm.test.unwritten");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && !strncmp(r->reason, "unwritten: 1 of 40", 18),
                  "unwritten: %s", r->reason);
    ck_assert_ptr_nonnull(strstr(r->reason, "(4, 7)"));
    r = find(&sum, "gemm.test.nan");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && strstr(r->reason, "NaN") && strstr(r->reason, "(1, 1)"),
                  "nan: %s", r->reason);
    r = find(&sum, "gemm.test.threads");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && strstr(r->reason, "thread counts"), "threads: %s",
                  r->reason);
    ck_assert_uint_eq(sum.count[QF_VERDICT_FAILED], 4);
    ck_assert_uint_eq(sum.count[QF_VERDICT_CRASHED], 2);

    /* Every pair is in the journal. */
    ck_assert_msg(qf_journal_read(journal, &back, &nback, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(nback, 8);
    free(back);

    qf_runner_summary_free(&sum);
    qf_suite_free(suite);
    qf_registry_free(reg);
    remove(suite_path);
    remove(journal);
}
END_TEST

/* A large output is checked on a sample (first and last rows and columns,
 * tile edges, seeded fill); poison and canaries still cover every element. */
START_TEST(sampled_case)
{
    char suite_path[128], err[512];
    FILE *f;
    qf_suite *suite = NULL;
    qf_registry *reg = test_registry();
    qf_runner_opts o = qf_runner_opts_default();
    qf_runner_summary sum;
    const qf_result *r;
    snprintf(suite_path, sizeof suite_path, "/tmp/qf-t-isolation-s-%d.yaml", (int)getpid());
    f = fopen(suite_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("suite: sampled\n"
          "refute: false\n"
          "groups:\n"
          "  - op: gemm\n"
          "    kernels: [gemm.test.good, gemm.test.unwritten, gemm.test.overrun]\n"
          "    dtypes: [float32]\n"
          "    shapes: {M: [70], N: [150], K: [8]}\n"
          "    sampling: {max_elements: 1000}\n",
          f);
    fclose(f);
    ck_assert_msg(qf_suite_load(suite_path, &suite, err, sizeof err) == QF_OK, "%s", err);
    o.timeout_s = 5.0;
    ck_assert_msg(qf_runner_run(suite, reg, &o, &sum, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(sum.n, 3);
    r = find(&sum, "gemm.test.good");
    ck_assert_msg(r->verdict == QF_VERDICT_QUALIFIED, "good: %s", r->reason);
    ck_assert_int_eq(r->sampled, 1);
    ck_assert_uint_eq(r->n_elements, 70 * 150);
    ck_assert_uint_ge(r->n_checked, 1000);
    ck_assert_uint_lt(r->n_checked, 70 * 150);
    ck_assert_uint_eq(r->metrics.n, r->n_checked);
    r = find(&sum, "gemm.test.unwritten");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && strstr(r->reason, "(69, 149)"), "unwritten: %s",
                  r->reason);
    r = find(&sum, "gemm.test.overrun");
    ck_assert_msg(r->verdict == QF_VERDICT_FAILED && !strncmp(r->reason, "canary", 6), "overrun: %s",
                  r->reason);
    qf_runner_summary_free(&sum);
    qf_suite_free(suite);
    qf_registry_free(reg);
    remove(suite_path);
}
END_TEST

START_TEST(sampling_keeps_edges)
{
    uint64_t *idx = NULL, e[64];
    size_t n = 0, i, ne;
    const uint64_t rows = 200, cols = 300;
    int have[6] = {0};
    ck_assert_int_eq(qf_runner_sample(rows, cols, 2000, 0, 7, &idx, &n), QF_OK);
    ck_assert_uint_ge(n, 2000);
    ck_assert_uint_lt(n, rows * cols);
    for (i = 0; i < n; i++) {
        uint64_t r = idx[i] / cols, c = idx[i] % cols;
        if (i)
            ck_assert_uint_gt(idx[i], idx[i - 1]); /* sorted, distinct */
        have[0] += r == 0;
        have[1] += r == rows - 1;
        have[2] += c == 0;
        have[3] += c == cols - 1;
        have[4] |= r == 127 && c == 129; /* 128 - 1, 128 + 1 */
        have[5] |= r == 33 && c == 31;
    }
    ck_assert_int_eq(have[0], (int)cols);
    ck_assert_int_eq(have[1], (int)cols);
    ck_assert_int_eq(have[2], (int)rows);
    ck_assert_int_eq(have[3], (int)rows);
    ck_assert(have[4] && have[5]);
    free(idx);
    /* The same seed gives the same sample. */
    {
        uint64_t *again = NULL;
        size_t n2 = 0;
        ck_assert_int_eq(qf_runner_sample(rows, cols, 2000, 0, 7, &idx, &n), QF_OK);
        ck_assert_int_eq(qf_runner_sample(rows, cols, 2000, 0, 7, &again, &n2), QF_OK);
        ck_assert_uint_eq(n, n2);
        ck_assert(memcmp(idx, again, n * sizeof *idx) == 0);
        free(again);
        free(idx);
    }
    /* target 0: everything. */
    ck_assert_int_eq(qf_runner_sample(3, 5, 0, 0, 1, &idx, &n), QF_OK);
    ck_assert_uint_eq(n, 15);
    free(idx);
    ne = qf_runner_edges(40, 0, e, 64);
    /* 0, 15, 16, 17, 31, 32, 33, 39 */
    ck_assert_uint_eq(ne, 8);
    ck_assert_uint_eq(e[0], 0);
    ck_assert_uint_eq(e[1], 15);
    ck_assert_uint_eq(e[7], 39);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/isolation");
    TCase *tc = tcase_create("isolation");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bad_kernels_get_verdicts);
    tcase_add_test(tc, sampled_case);
    tcase_add_test(tc, sampling_keeps_edges);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
