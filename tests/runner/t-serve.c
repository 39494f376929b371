/* t-serve.c: kernel servers (qualify/serve.c, docs/runner.md "Kernel
 * servers").
 *   - every op's problem survives its `op` object: _qf_op_json then
 *     _qf_op_from_json gives the same object again, arrays (grouped GEMM's
 *     group_m, RoPE positions) and quantize's stochastic stream included;
 *   - a server's hello is a valid worker hello: registered into an empty
 *     registry through qf_worker_start, every built-in kernel comes back
 *     with its op, kind, tuples (formats, scales, claim), limits and
 *     layouts;
 *   - init runs once per kernel per server (plugin_slowinit counts its
 *     calls): at most one per job slot with --isolate server, one per pair
 *     with --isolate pair; a kernel that crashes on chosen seeds gets
 *     CRASHED for those pairs only under both, each crash costing one
 *     restart (one more init). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops/_ops.h"
#include "qf_claim.h"
#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_test.h"
#include "qf_worker.h"

/* _qf_op_json(d) read back and written again is the same object. */
static void round_trip(const qf_op_desc *d)
{
    json_t *a = _qf_op_json(d), *b;
    qf_op_desc back;
    void *owned = NULL;
    char err[256] = "", *ta, *tb;
    ck_assert_ptr_nonnull(a);
    ck_assert_msg(_qf_op_from_json(a, &back, &owned, err, sizeof err) == 0, "%s: %s", qf_op_name(d->op), err);
    ck_assert_int_eq(back.op, d->op);
    b = _qf_op_json(&back);
    ta = json_dumps(a, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    tb = json_dumps(b, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    ck_assert_msg(!strcmp(ta, tb), "%s:\n %s\n %s", qf_op_name(d->op), ta, tb);
    free(ta);
    free(tb);
    json_decref(a);
    json_decref(b);
    free(owned);
}

START_TEST(op_round_trip)
{
    static const size_t gm[3] = {3, 0, 5};
    static const int64_t pos[4] = {7, 3, 100000, 2};
    qf_op_desc d;
    int fam;
    char err[256];
    void *owned;
    json_t *o;

    memset(&d, 0, sizeof d);
    d.op = QF_OP_GEMM;
    d.u.gemm = (qf_op_gemm){5, 7, 9, 1, 0, 0.1, -2.5, 3, 0, NULL};
    round_trip(&d);
    d.u.gemm = (qf_op_gemm){0, 7, 9, 0, 1, 1.0, 0.0, 1, 3, gm};
    round_trip(&d);
    /* group_m comes back as an array, not as the sum alone */
    o = _qf_op_json(&d);
    {
        qf_op_desc back;
        ck_assert_int_eq(_qf_op_from_json(o, &back, &owned, err, sizeof err), 0);
        ck_assert_ptr_nonnull(back.u.gemm.group_m);
        ck_assert_uint_eq(back.u.gemm.group_m[2], 5);
        ck_assert_uint_eq(back.u.gemm.m, 8);
        free(owned);
    }
    json_decref(o);

    memset(&d, 0, sizeof d);
    d.op = QF_OP_ATTENTION;
    d.u.attention = (qf_op_attention){2, 4, 2, 5, 33, 16, 8, 0.125, 30.0, QF_MASK_WINDOW, 1, 17, -1};
    round_trip(&d);
    d.op = QF_OP_SOFTMAX;
    d.u.softmax = (qf_op_softmax){3, 11, 0.5, 1};
    round_trip(&d);
    d.op = QF_OP_RMSNORM;
    d.u.norm = (qf_op_norm){3, 11, 1e-6, 1.0};
    round_trip(&d);
    d.op = QF_OP_LAYERNORM;
    round_trip(&d);
    d.op = QF_OP_L2NORM;
    round_trip(&d);
    d.op = QF_OP_ACTIVATION;
    d.u.activation = (qf_op_activation){77, QF_REF_ACT_SILU, 1};
    round_trip(&d);
    d.op = QF_OP_ROPE;
    d.u.rope = (qf_op_rope){4, 2, 16, 8, QF_REF_ROPE_HALF, 500000.0, 9, pos};
    round_trip(&d);
    d.op = QF_OP_MOE_ROUTER;
    d.u.moe_router = (qf_op_moe_router){6, 16, 2, QF_REF_ROUTER_SIGMOID, 1, 2.5};
    round_trip(&d);
    for (fam = 0; fam < 4; fam++) {
        memset(&d, 0, sizeof d);
        d.op = QF_OP_QUANTIZE;
        d.u.quantize.rows = 4;
        d.u.quantize.cols = 64;
        qf_ref_block_params_init(&d.u.quantize.block, (qf_ref_block_family)fam);
        round_trip(&d);
        /* a stochastic stream travels too */
        d.u.quantize.block.mx.round = d.u.quantize.block.nvfp4.round = d.u.quantize.block.group.round =
            d.u.quantize.block.fp8.round = QF_ROUND_STOCHASTIC;
        d.u.quantize.block.mx.seed = d.u.quantize.block.nvfp4.seed = d.u.quantize.block.group.seed =
            d.u.quantize.block.fp8.seed = 0xFEDCBA9876543210ull;
        d.u.quantize.block.mx.random_bits = d.u.quantize.block.nvfp4.random_bits =
            d.u.quantize.block.group.random_bits = d.u.quantize.block.fp8.random_bits = 13;
        round_trip(&d);
    }
    /* every ABI op has its hook (a new op fails here until it has one) */
    for (int op = 0; op < QF_OP_COUNT; op++) {
        json_t *bad = json_pack("{s:s}", "op", qf_op_name((qf_op)op));
        qf_op_desc back;
        ck_assert_int_eq(_qf_op_from_json(bad, &back, &owned, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "missing") != NULL, "%s: %s", qf_op_name((qf_op)op), err);
        json_decref(bad);
    }
}
END_TEST

static char *claim_text(const char *kernel, const char *dtype, const qf_arith_claim *c)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(qf_claim_write_yaml(f, kernel, dtype, c, NULL, 0), QF_OK);
    fclose(f);
    return buf;
}

START_TEST(hello_registers)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    qf_registry *served = NULL, *builtin = NULL;
    char cmd[4096], err[1024];
    size_t i, j;
    ck_assert_msg(bin != NULL, "QF_QUALIFY_BIN comes from CTest");
    snprintf(cmd, sizeof cmd, "exec '%s' kernel-server --name t-serve", bin);
    ck_assert_int_eq(qf_registry_create(&served), QF_OK);
    ck_assert_int_eq(qf_registry_create(&builtin), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(builtin), QF_OK);
    ck_assert_msg(qf_worker_start(served, cmd, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(qf_registry_count(served), qf_registry_count(builtin));
    for (i = 0; i < qf_registry_count(builtin); i++) {
        const qf_kernel *k = qf_registry_get(builtin, i), *w = qf_registry_find(served, k->name);
        ck_assert_msg(w != NULL, "%s is not in the hello", k->name);
        ck_assert_msg(qf_worker_kernel_is(w), "%s", k->name);
        ck_assert_int_eq(w->op, k->op);
        ck_assert_int_eq(w->kind, k->kind);
        ck_assert_str_eq(w->archs, k->archs);
        ck_assert_str_eq(w->description, k->description);
        ck_assert_uint_eq(w->layouts, k->layouts);
        ck_assert_msg(!memcmp(w->limits.min, k->limits.min, sizeof k->limits.min) &&
                          !memcmp(w->limits.max, k->limits.max, sizeof k->limits.max),
                      "%s: limits", k->name);
        for (j = 0; j < QF_OP_MAX_DIMS; j++)
            ck_assert_int_eq(w->limits.multiple_of[j] > 1 ? w->limits.multiple_of[j] : 1,
                             k->limits.multiple_of[j] > 1 ? k->limits.multiple_of[j] : 1);
        ck_assert_uint_eq(w->n_dtypes, k->n_dtypes);
        for (j = 0; j < k->n_dtypes; j++) {
            const qf_dtype_tuple *a = &k->dtypes[j], *b = &w->dtypes[j];
            char *ta = claim_text(k->name, a->name, &a->arith), *tb = claim_text(k->name, b->name, &b->arith);
            int s;
            ck_assert_str_eq(a->name, b->name);
            for (s = 0; s < qf_op_slot_count(k->op, 0); s++) {
                ck_assert_msg(a->in[s] == b->in[s], "%s %s: in[%d]", k->name, a->name, s);
                ck_assert_msg(a->in_scale[s] == b->in_scale[s], "%s %s: in_scale[%d]", k->name, a->name, s);
                if (a->in_scale[s] != QF_SCALE_NONE)
                    ck_assert_msg(a->in_scale_format[s] == b->in_scale_format[s] &&
                                      a->in_scale_block[s] == b->in_scale_block[s],
                                  "%s %s: in_scale[%d]", k->name, a->name, s);
            }
            for (s = 0; s < qf_op_slot_count(k->op, 1); s++)
                ck_assert_msg(a->out[s] == b->out[s], "%s %s: out[%d]", k->name, a->name, s);
            ck_assert_msg(!strcmp(ta, tb), "%s %s: the claim differs:\n%s\n%s", k->name, a->name, ta, tb);
            free(ta);
            free(tb);
        }
    }
    qf_registry_free(served);
    qf_registry_free(builtin);
}
END_TEST

/* `qualify run` of gemm.slowinit.KERNEL over seeds[n] under mode: each
 * seed's verdict into v[] (Q QUALIFIED, S CRASHED by SIGSEGV, x other);
 * returns the init calls counted. */
static int run_slowinit(const char *kernel, const unsigned *seeds, size_t n, const char *mode, int jobs, char *v)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_SLOWINIT_PLUGIN");
    char dir[128], suite[256], cmd[4096], path[512], log[256], logdir[192], line[512];
    qf_result *r = NULL;
    size_t nr = 0, i, k;
    struct stat sb;
    FILE *f;
    int rc;
    ck_assert_msg(bin && plugin, "QF_QUALIFY_BIN and QF_SLOWINIT_PLUGIN come from CTest");
    snprintf(dir, sizeof dir, "/tmp/qf-t-serve-%d", (int)getpid());
    snprintf(suite, sizeof suite, "%s.yaml", dir);
    /* the kernels' log in a directory of its own, which they may write
     * (--kernel-writable; docs/security.md) */
    snprintf(logdir, sizeof logdir, "%s.initd", dir);
    mkdir(logdir, 0700);
    snprintf(log, sizeof log, "%s/init", logdir);
    unlink(log);
    f = fopen(suite, "w");
    ck_assert_ptr_nonnull(f);
    /* refute: false: the counts are of these seeds alone (docs/refute.md) */
    fprintf(f, "suite: serve\nrefute: false\nop: gemm\nkernels: [gemm.slowinit.%s]\ndtypes: [float32]\n"
               "shapes: {M: [3], N: [4], K: [5]}\nseeds: [",
            kernel);
    for (i = 0; i < n; i++)
        fprintf(f, "%s%u", i ? ", " : "", seeds[i]);
    fprintf(f, "]\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "QF_INIT_LOG='%s' '%s' run '%s' --plugin '%s' --isolate %s --jobs %d -q --kernel-writable '%s' "
             "-o '%s' >/dev/null 2>&1",
             log, bin, suite, plugin, mode, jobs, logdir, dir);
    rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1, "exit %d: %s", rc, cmd);
    snprintf(path, sizeof path, "%s/journal.jsonl", dir);
    ck_assert_msg(qf_journal_read(path, &r, &nr, NULL, NULL, line, sizeof line) == QF_OK, "%s", line);
    ck_assert_uint_eq(nr, n);
    memset(v, '?', n);
    for (i = 0; i < nr; i++) /* the journal is in completion order */
        for (k = 0; k < n; k++)
            if (r[i].seed == seeds[k])
                v[k] = r[i].verdict == QF_VERDICT_QUALIFIED                    ? 'Q'
                       : r[i].verdict == QF_VERDICT_CRASHED && r[i].signal == 11 ? 'S'
                                                                                 : 'x';
    free(r);
    rc = stat(log, &sb) ? 0 : (int)sb.st_size;
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", dir, suite, logdir);
    ck_assert_int_eq(system(cmd), 0);
    return rc;
}

START_TEST(init_once_per_server)
{
    unsigned seeds[20];
    char v[20];
    int inits, i;
    for (i = 0; i < 20; i++)
        seeds[i] = (unsigned)i;
    inits = run_slowinit("good", seeds, 20, "server", 2, v);
    ck_assert_msg(!memcmp(v, "QQQQQQQQQQQQQQQQQQQQ", 20), "%.20s", v);
    ck_assert_msg(inits >= 1 && inits <= 2, "server: %d init calls for 20 pairs on 2 slots", inits);
    inits = run_slowinit("good", seeds, 20, "pair", 2, v);
    ck_assert_msg(!memcmp(v, "QQQQQQQQQQQQQQQQQQQQ", 20), "%.20s", v);
    ck_assert_int_eq(inits, 20);
}
END_TEST

START_TEST(crash_restarts_one_pair)
{
    /* seeds 199, 399 and 599 crash (plugin_slowinit) */
    static const unsigned seeds[10] = {1, 198, 199, 200, 201, 399, 400, 599, 600, 601};
    static const char *expect = "QQSQQSQSQQ";
    char v[10];
    int inits, jobs;
    for (jobs = 1; jobs <= 2; jobs++) {
        inits = run_slowinit("crashy", seeds, 10, "server", jobs, v);
        ck_assert_msg(!memcmp(v, expect, 10), "server, --jobs %d: %.10s, expected %s", jobs, v, expect);
        /* one init per slot, and one after each crash's restart (a crash
         * followed by no pair in its slot costs none) */
        ck_assert_msg(inits >= 3 && inits <= jobs + 3, "server --jobs %d: %d init calls", jobs, inits);
        inits = run_slowinit("crashy", seeds, 10, "pair", jobs, v);
        ck_assert_msg(!memcmp(v, expect, 10), "pair, --jobs %d: %.10s, expected %s", jobs, v, expect);
        ck_assert_int_eq(inits, 10);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/serve");
    TCase *tc = tcase_create("serve");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, op_round_trip);
    tcase_add_test(tc, hello_registers);
    tcase_add_test(tc, init_once_per_server);
    tcase_add_test(tc, crash_restarts_one_pair);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
