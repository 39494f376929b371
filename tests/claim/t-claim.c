/* t-claim.c: the claim language (qf_claim.h, docs/claims.md): every key
 * read from a YAML claim file, written back with the emitter and read
 * again to the same claim; several documents and a top-level list; every
 * error names the file, line and key; the JSON reader of workers takes the
 * same keys.
 *
 * A claim's max_ulp bounds only what no derivation bounds, and a claim's
 * `op` limits it to the kernels that serve that op (docs/claims.md "op",
 * "max_ulp"):
 *   - the `op` key is read, and an op the table does not know is an error
 *     naming the file, line and key;
 *   - qf_claim_apply with an op replaces the claim of the glob's kernels
 *     that serve the op and of no other (kernel "*", op moe_router: the
 *     router's tuples only);
 *   - through the runner, softmax.cpu.f32 with a claimed max_ulp of 0.001
 *     (for log_softmax, with and without `op`) keeps both derived bounds:
 *     softmax and log_softmax QUALIFY under bound kinds "softmax" and
 *     "log_softmax" (the claimed ulp would fail both); the same max_ulp
 *     claimed for moe_router's weights, which derive none, is their bound
 *     and FAILS them. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_claim.h"
#include "qf_claim.h"
#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner_test.h"
#include "qf_test.h"

static char *write_tmp(const char *text)
{
    static char path[64];
    int fd;
    FILE *f;
    snprintf(path, sizeof path, "/tmp/qf-claim-XXXXXX");
    fd = mkstemp(path);
    ck_assert(fd >= 0);
    f = fdopen(fd, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *full =
    "claim_version: 1\n"
    "kernel: gemm.cblas.*\n"
    "dtype: f32\n"
    "arith:\n"
    "  acc_format: float32\n"
    "  acc_frac_bits: 0\n"
    "  block_fma: 1\n"
    "  acc_round: rne\n"
    "  align_truncates: true\n"
    "  guard_bits: 3\n"
    "  promote_interval: 0\n"
    "  out_round: rtz\n"
    "  max_ulp: 0\n"
    "  elem_ulp: 1.5\n"
    "  flush_subnormals: false\n"
    "  attn_kv_tile: 64\n"
    "  attn_p_format: bf16\n"
    "  var_algo: welford\n"
    "  fma: unfused\n"
    "  order: varies(split(2), blocked(320, pairwise), sequential)\n"
    "  product_frac_bits: 10\n"
    "  align_round: nearest\n"
    "  accumulator: float\n"
    "  overflow: saturate\n"
    "  activation: gelu_tanh\n"
    "  math_abs_err: 1e-7\n"
    "  math_rel_err: 2e-7\n"
    "  determinism: thread-count-invariant\n"
    "evidence:\n"
    "  - \"probe: 2-way split seen in tiles 0..3\"\n";

START_TEST(every_key_round_trips)
{
    qf_claim_set s, s2;
    char err[512], *p = write_tmp(full), order[128];
    const qf_arith_claim *a;
    FILE *f;
    ck_assert_msg(qf_claim_file_load(p, &s, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq((int)s.n, 1);
    a = &s.claims[0].arith;
    ck_assert_str_eq(s.claims[0].kernel, "gemm.cblas.*");
    ck_assert_str_eq(s.claims[0].dtype, "f32");
    ck_assert(a->align_truncates == 1 && a->guard_bits == 3 && a->out_round == QF_ROUND_RTZ && a->elem_ulp == 1.5);
    ck_assert(a->attn_kv_tile == 64 && a->attn_p_format == QF_BFLOAT16 && a->var_algo == QF_VAR_WELFORD);
    ck_assert(a->fma == QF_FMA_UNFUSED && a->sum_order == QF_SUM_VARIES && a->n_varies == 3);
    ck_assert(a->sum_varies[0].order == QF_SUM_SPLITK && a->sum_varies[0].param == 2);
    ck_assert(a->sum_varies[1].order == QF_SUM_BLOCKED && a->sum_varies[1].param == 320 &&
              a->sum_varies[1].inner == QF_SUM_PAIRWISE);
    ck_assert(a->sum_varies[2].order == QF_SUM_SEQUENTIAL);
    ck_assert(a->product_frac_bits == 10 && a->align_round == QF_ALIGN_NEAREST && a->acc_overflow == QF_OVERFLOW_SATURATE);
    ck_assert(a->act_formula == QF_ACT_FORMULA_GELU_TANH && a->math_abs_err == 1e-7 && a->math_rel_err == 2e-7);
    ck_assert(a->determinism == QF_DET_THREAD_INVARIANT && a->deterministic == 1 && a->deterministic_threads == 1);
    ck_assert_str_eq(qf_claim_order_str(a, order, sizeof order),
                     "varies(split(2), blocked(320, pairwise), sequential)");
    /* written and read again: the same claim, field for field */
    f = fopen(p, "w");
    ck_assert(f != NULL);
    {
        const char *ev[] = {"written by t-claim"};
        ck_assert_int_eq(qf_claim_write_yaml(f, "gemm.cblas.*", "f32", a, ev, 1), QF_OK);
    }
    fclose(f);
    ck_assert_msg(qf_claim_file_load(p, &s2, err, sizeof err) == QF_OK, "%s", err);
    ck_assert(memcmp(&s2.claims[0].arith, a, sizeof *a) == 0);
    qf_claim_set_free(&s);
    qf_claim_set_free(&s2);
    unlink(p);
}
END_TEST

START_TEST(documents_and_lists)
{
    qf_claim_set s;
    char err[512], *p;
    p = write_tmp("claim_version: 1\nkernel: a.*\narith: {order: any}\n---\n"
                  "- claim_version: 1\n  kernel: b.x\n  arith: {accumulator: int32, overflow: wrap}\n"
                  "- claim_version: 1\n  kernel: c.x\n  arith: {order: 'split(4)'}\n");
    ck_assert_msg(qf_claim_file_load(p, &s, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_int_eq((int)s.n, 3);
    ck_assert(s.claims[0].arith.sum_order == QF_SUM_ANY);
    ck_assert(s.claims[1].arith.acc_kind == QF_ACC_INT32 && s.claims[1].arith.acc_overflow == QF_OVERFLOW_WRAP);
    ck_assert(s.claims[2].arith.sum_order == QF_SUM_SPLITK && s.claims[2].arith.split_k == 4);
    ck_assert_str_eq(s.claims[2].kernel, "c.x");
    qf_claim_set_free(&s);
    unlink(p);
}
END_TEST

/* Each malformed file: the message names the file, the line and the key. */
START_TEST(errors_name_file_line_key)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"claim_version: 1\nkernel: k\narith:\n  order: blocked(32)\n", ":4:10: key 'order': bad value"},
        {"claim_version: 1\nkernel: k\narith:\n  acc_fromat: float32\n", ":4:3: key 'acc_fromat': unknown claim key"},
        {"claim_version: 2\nkernel: k\n", ":1:16: key 'claim_version'"},
        {"kernel: k\narith: {}\n", ":1:1: key 'claim_version': missing"},
        {"claim_version: 1\narith: {}\n", "key 'kernel': missing"},
        {"claim_version: 1\nkernel: k\nfoo: 1\n", ":3:1: key 'foo': unknown key"},
        {"claim_version: 1\nkernel: k\narith:\n  block_fma: 0\n", ":4:3: key 'arith': the claim is out of its domain"},
        {"claim_version: 1\nkernel: k\narith:\n  determinism: none\n  deterministic: true\n", "out of its domain"},
        {"claim_version: 1\nkernel: k\narith:\n  order: varies(varies(any))\n", "key 'order'"},
        {"claim_version: 1\nkernel: [\n", ":3:1:"},
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qf_claim_set s;
        char err[512], *p = write_tmp(bad[i].text);
        ck_assert_int_eq(qf_claim_file_load(p, &s, err, sizeof err), QF_EPARSE);
        ck_assert_msg(strstr(err, p) && strstr(err, bad[i].want), "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
        unlink(p);
    }
}
END_TEST

START_TEST(json_keys)
{
    qf_arith_claim c = qf_arith_claim_default();
    json_t *j = json_loads("{\"order\": \"blocked(64, sequential)\", \"fma\": \"unfused\", \"acc_frac_bits\": 13,"
                           " \"deterministic\": false, \"math_rel_err\": 1e-6, \"accumulator\": \"int64\"}",
                           0, NULL);
    const char *k;
    json_t *v;
    ck_assert(j != NULL);
    json_object_foreach(j, k, v) ck_assert_msg(_qf_claim_field(&c, k, v) == 0, "key %s", k);
    ck_assert(c.sum_order == QF_SUM_BLOCKED && c.sum_block == 64 && c.fma == QF_FMA_UNFUSED);
    ck_assert(c.acc_frac_bits == 13 && c.deterministic == 0 && c.math_rel_err == 1e-6 && c.acc_kind == QF_ACC_INT64);
    /* wrong JSON types and unknown keys (the values freed: a sanitizer
     * build checks for leaks) */
    {
        json_t *s13 = json_string("13"), *i1 = json_integer(1), *any = json_string("any");
        ck_assert(_qf_claim_field(&c, "acc_frac_bits", s13) == -1);
        ck_assert(_qf_claim_field(&c, "fma", i1) == -1);
        ck_assert(_qf_claim_field(&c, "no_such_key", i1) == -1);
        ck_assert(_qf_claim_field(&c, "sum_order", any) == 0 && c.sum_order == QF_SUM_SEQUENTIAL);
        json_decref(s13);
        json_decref(i1);
        json_decref(any);
    }
    json_decref(j);
}
END_TEST

/* The claims of text applied to a registry of the built-in kernels. */
static qf_registry *with_claims(const char *text, size_t *replaced)
{
    qf_registry *r = NULL;
    qf_claim_set s;
    char err[512], *p = write_tmp(text);
    size_t i;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    ck_assert_msg(qf_claim_file_load(p, &s, err, sizeof err) == QF_OK, "%s", err);
    *replaced = 0;
    for (i = 0; i < s.n; i++)
        *replaced += qf_claim_apply(r, &s.claims[i], p);
    qf_claim_set_free(&s);
    unlink(p);
    return r;
}

START_TEST(op_key_read_and_checked)
{
    qf_claim_set s;
    char err[512],
        *p = write_tmp("claim_version: 1\nkernel: softmax.*\nop: log_softmax\narith: {max_ulp: 4}\n");
    ck_assert_msg(qf_claim_file_load(p, &s, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_str_eq(s.claims[0].op, "log_softmax");
    ck_assert(s.claims[0].arith.max_ulp == 4);
    qf_claim_set_free(&s);
    unlink(p);
    p = write_tmp("claim_version: 1\nkernel: softmax.*\nop: logsoftmax\n");
    ck_assert_int_eq(qf_claim_file_load(p, &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, p) && strstr(err, ":3:5: key 'op'"), "%s", err);
    unlink(p);
}
END_TEST

START_TEST(op_limits_the_kernels)
{
    size_t n, i, j;
    qf_registry *r = with_claims("claim_version: 1\nkernel: '*'\nop: moe_router\narith: {max_ulp: 64}\n", &n);
    size_t moe = 0;
    for (i = 0; i < qf_registry_count(r); i++) {
        const qf_kernel *k = qf_registry_get(r, i);
        for (j = 0; j < k->n_dtypes; j++) {
            ck_assert_msg((k->dtypes[j].arith.max_ulp == 64) == (k->op == QF_OP_MOE_ROUTER),
                          "%s %s: max_ulp %g", k->name, k->dtypes[j].name, k->dtypes[j].arith.max_ulp);
            moe += k->op == QF_OP_MOE_ROUTER;
        }
        ck_assert((qf_registry_claim_origin(r, i) != NULL) == (k->op == QF_OP_MOE_ROUTER));
    }
    ck_assert_uint_gt(moe, 0);
    ck_assert_uint_eq(n, moe);
    qf_registry_free(r);
    /* an op none of the glob's kernels serve: nothing replaced */
    r = with_claims("claim_version: 1\nkernel: gemm.*\nop: softmax\narith: {max_ulp: 64}\n", &n);
    ck_assert_uint_eq(n, 0);
    qf_registry_free(r);
}
END_TEST

static const char suite[] = "suite: claimed-ulp\n"
                            "groups:\n"
                            "  - op: softmax\n"
                            "    kernels: [softmax.cpu.f32]\n"
                            "    dtypes: [float32]\n"
                            "    shapes: {rows: [4], cols: [64]}\n"
                            "  - op: log_softmax\n"
                            "    kernels: [softmax.cpu.f32]\n"
                            "    dtypes: [float32]\n"
                            "    shapes: {rows: [4], cols: [64]}\n"
                            "  - op: moe_router\n"
                            "    kernels: [moe_router.cpu.softmax_topk]\n"
                            "    dtypes: [float32]\n"
                            "    shapes: {tokens: [16], experts: [8]}\n"
                            "    params: {top_k: 2}\n";

static void run_claimed(const char *claims, qf_verdict moe_verdict)
{
    size_t n, i;
    qf_registry *r = with_claims(claims, &n);
    qf_runner_summary sum;
    ck_assert_uint_gt(n, 0);
    qf_test_run_yaml(suite, "claimed-ulp.yaml", r, &sum);
    ck_assert_uint_eq(sum.n, 3);
    for (i = 0; i < sum.n; i++) {
        const qf_result *x = &sum.results[i];
        int moe = !strcmp(x->op, "moe_router");
        ck_assert_msg(x->verdict == (moe ? moe_verdict : QF_VERDICT_QUALIFIED) &&
                          !strcmp(x->bound.kind, moe ? "ulp" : x->op) && x->metrics.n_bound > 0,
                      "%s: %s (%s), bound '%s'", x->case_id, qf_verdict_name(x->verdict), x->reason,
                      x->bound.kind);
        if (moe && moe_verdict == QF_VERDICT_FAILED)
            ck_assert_msg(strstr(x->reason, "outside the bound derived from the claim"), "%s", x->reason);
    }
    qf_runner_summary_free(&sum);
    qf_registry_free(r);
}

START_TEST(max_ulp_never_replaces_a_derived_bound)
{
    /* stated for log_softmax, with op: softmax keeps its bound, and so does
     * log_softmax; the router keeps its own claim (256 ulps) */
    run_claimed("claim_version: 1\nkernel: softmax.cpu.f32\nop: log_softmax\narith: {max_ulp: 0.001}\n",
                QF_VERDICT_QUALIFIED);
    /* without op: the same, by the rule */
    run_claimed("claim_version: 1\nkernel: softmax.cpu.f32\narith: {max_ulp: 0.001}\n", QF_VERDICT_QUALIFIED);
    /* for the router's weights, which derive none, the claimed ulp is the
     * bound: 0.001 ulp fails them */
    run_claimed("claim_version: 1\nkernel: '*'\nop: moe_router\narith: {max_ulp: 0.001}\n",
                QF_VERDICT_FAILED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("claim");
    TCase *tc = tcase_create("claim");
    tcase_add_test(tc, every_key_round_trips);
    tcase_add_test(tc, documents_and_lists);
    tcase_add_test(tc, errors_name_file_line_key);
    tcase_add_test(tc, json_keys);
    tcase_add_test(tc, op_key_read_and_checked);
    tcase_add_test(tc, op_limits_the_kernels);
    tcase_add_test(tc, max_ulp_never_replaces_a_derived_bound);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
