/* t-expand.c: expanding suites into cases: the documented order, stable
 * ids and their round trip, defaults, workloads, cross-field checks and
 * limits. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_suite.h"
#include "qf_test.h"

static char errbuf[4096];

static const char *src_path(const char *rel)
{
    static char buf[4][1024];
    static int k;
    const char *root = getenv("QF_SOURCE_DIR");
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root && *root ? root : ".", rel);
    return buf[k];
}

static qf_suite *mem(const char *yaml)
{
    qf_suite *s = NULL;
    qf_status st =
        qf_suite_load_mem(yaml, strlen(yaml), src_path("tests/suite/data/m.yaml"), &s, errbuf, sizeof errbuf);
    ck_assert_msg(st == QF_OK, "%s\nfor:\n%s", errbuf, yaml);
    return s;
}

static void expand_ok(const qf_suite *s, qf_suite_cases *c)
{
    qf_status st = qf_suite_expand(s, c, errbuf, sizeof errbuf);
    ck_assert_msg(st == QF_OK, "%s", errbuf);
    uint64_t n = 0;
    ck_assert_int_eq(qf_suite_count(s, &n, errbuf, sizeof errbuf), QF_OK);
    ck_assert_uint_eq(n, c->n);
}

START_TEST(test_order)
{
    qf_suite *s = mem("refute: false\n" /* counted apart in test_refute */
                      "op: gemm\n"
                      "dtypes: [f32, bf16]\n"
                      "shapes: {M: [1, 2], N: 3, K: [4, 5]}\n"
                      "params: {trans_a: [false, true]}\n"
                      "inputs: [normal, small_int]\n"
                      "seeds: [9, 4]\n");
    qf_suite_cases c;
    expand_ok(s, &c);
    ck_assert_uint_eq(c.n, 2 * 4 * 2 * 2 * 2);
    /* dtype outermost, then shape (last dimension fastest), params, input, seed */
    static const char *const first[] = {
        "gemm/M=1,N=3,K=4/f32.f32.f32.f32/trans_a=false/normal/seed=9",
        "gemm/M=1,N=3,K=4/f32.f32.f32.f32/trans_a=false/normal/seed=4",
        "gemm/M=1,N=3,K=4/f32.f32.f32.f32/trans_a=false/small_int/seed=9",
        "gemm/M=1,N=3,K=4/f32.f32.f32.f32/trans_a=false/small_int/seed=4",
        "gemm/M=1,N=3,K=4/f32.f32.f32.f32/trans_a=true/normal/seed=9",
    };
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(c.cases[i].id, first[i]);
    ck_assert_str_eq(c.cases[8].id, "gemm/M=1,N=3,K=5/f32.f32.f32.f32/trans_a=false/normal/seed=9");
    ck_assert_str_eq(c.cases[16].id, "gemm/M=2,N=3,K=4/f32.f32.f32.f32/trans_a=false/normal/seed=9");
    ck_assert_str_eq(c.cases[32].id, "gemm/M=1,N=3,K=4/bf16.bf16.f32.bf16/trans_a=false/normal/seed=9");
    ck_assert_str_eq(c.cases[63].id, "gemm/M=2,N=3,K=5/bf16.bf16.f32.bf16/trans_a=true/small_int/seed=4");
    /* fields of a case */
    const qf_suite_case *k = &c.cases[63];
    ck_assert_int_eq(k->op, QF_SUITE_OP_GEMM);
    ck_assert_uint_eq(k->ndims, 4);
    ck_assert_uint_eq(k->dims[0], 2);
    ck_assert_uint_eq(k->dims[3], 1);
    ck_assert_uint_eq(k->seed, 4);
    ck_assert_str_eq(k->input->name, "small_int");
    uint64_t v;
    ck_assert_int_eq(qf_suite_case_dim(k, "K", &v), QF_OK);
    ck_assert_uint_eq(v, 5);
    ck_assert_int_eq(qf_suite_case_dim(k, "batch", &v), QF_OK);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(qf_suite_case_dim(k, "rows", &v), QF_EINVAL);
    qf_suite_value pv;
    int def = -1;
    ck_assert_int_eq(qf_suite_case_param(k, "trans_a", &pv, &def), QF_OK);
    ck_assert_int_eq(pv.type, QF_PARAM_BOOL);
    ck_assert_int_eq(pv.i, 1);
    ck_assert_int_eq(def, 0);
    ck_assert_int_eq(qf_suite_case_param(k, "alpha", &pv, &def), QF_OK);
    ck_assert(pv.r == 1.0);
    ck_assert_int_eq(def, 1);
    ck_assert_int_eq(qf_suite_case_param(k, "causal", &pv, &def), QF_EINVAL);
    ck_assert_int_eq(qf_suite_case_format(k, "a")->id, QF_BFLOAT16);
    ck_assert_int_eq(qf_suite_case_format(k, "acc")->id, QF_FLOAT32);
    ck_assert_int_eq(qf_suite_case_format(k, "out")->id, QF_BFLOAT16);
    ck_assert_ptr_null(qf_suite_case_format(k, "q"));
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

/* Every id of the shipped suites selects its own case; ids are unique and
 * the same on a second expansion (stable order). */
static void roundtrip(const char *path, size_t want_min, size_t want_max)
{
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load(path, &s, errbuf, sizeof errbuf) == QF_OK, "%s", errbuf);
    qf_suite_cases a, b;
    expand_ok(s, &a);
    expand_ok(s, &b);
    ck_assert_msg(a.n >= want_min && a.n <= want_max, "%s: %zu cases", path, a.n);
    for (size_t i = 0; i < a.n; i++) {
        ck_assert_str_eq(a.cases[i].id, b.cases[i].id);
        ck_assert_ptr_eq(qf_suite_cases_find(&a, a.cases[i].id), &a.cases[i]);
        ck_assert(strchr(a.cases[i].id, ' ') == NULL);
    }
    ck_assert_ptr_null(qf_suite_cases_find(&a, "gemm/M=0"));
    qf_suite_cases_free(&a);
    qf_suite_cases_free(&b);
    qf_suite_free(s);
}

START_TEST(test_quick_roundtrip)
{
    /* small enough for a pre-merge run */
    roundtrip(src_path("shapes/quick.yaml"), 50, 2000); /* 562 + 4 refuting inputs per gemm dtype, shape, params */
    roundtrip(src_path("tests/suite/data/good_full.yaml"), 1, 10000);
}
END_TEST

START_TEST(test_defaults_and_follows)
{
    qf_suite *s = mem("op: attention\n"
                      "dtypes: [{q: bf16, out: f32}]\n"
                      "shapes: {heads: 8, kv_heads: [2, 8], seq_q: 4, seq_k: [4, 9], head_dim: 64}\n");
    qf_suite_cases c;
    expand_ok(s, &c);
    ck_assert_uint_eq(c.n, 4);
    /* kv_heads = heads and seq_k = seq_q are left out of the id */
    ck_assert_str_eq(c.cases[0].id,
                     "attention/heads=8,kv_heads=2,seq_q=4,head_dim=64/bf16.bf16.bf16.f32.f32/normal/seed=0");
    ck_assert_str_eq(
        c.cases[1].id,
        "attention/heads=8,kv_heads=2,seq_q=4,seq_k=9,head_dim=64/bf16.bf16.bf16.f32.f32/normal/seed=0");
    ck_assert_str_eq(c.cases[2].id,
                     "attention/heads=8,seq_q=4,head_dim=64/bf16.bf16.bf16.f32.f32/normal/seed=0");
    uint64_t v;
    ck_assert_int_eq(qf_suite_case_dim(&c.cases[2], "kv_heads", &v), QF_OK);
    ck_assert_uint_eq(v, 8);
    ck_assert_int_eq(qf_suite_case_dim(&c.cases[2], "head_dim_v", &v), QF_OK);
    ck_assert_uint_eq(v, 64);
    ck_assert_int_eq(qf_suite_case_dim(&c.cases[2], "batch", &v), QF_OK);
    ck_assert_uint_eq(v, 1);
    qf_suite_value pv;
    int def;
    ck_assert_int_eq(qf_suite_case_param(&c.cases[0], "window", &pv, &def), QF_OK);
    ck_assert_int_eq(pv.i, -1);
    ck_assert_int_eq(def, 1);
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

START_TEST(test_workloads)
{
    qf_suite *s = mem("include: ../../../shapes/workloads.yaml\n"
                      "refute: false\n"
                      "op: gemm\n"
                      "dtypes: f32\n"
                      "workload: [llama3-8b.gemm, deepseek-v3.expert_down]\n"
                      "shapes: {M: 1, N: 2, K: 3}\n");
    qf_suite_cases c;
    expand_ok(s, &c);
    /* literal shapes first, then qkv 4 + out 4 + gate_up 8 + down 4, then 4 */
    ck_assert_uint_eq(c.n, 1 + 20 + 4);
    ck_assert_str_eq(c.cases[0].id, "gemm/M=1,N=2,K=3/f32.f32.f32.f32/normal/seed=0");
    ck_assert_str_eq(c.cases[1].id, "gemm/M=1,N=6144,K=4096/f32.f32.f32.f32/normal/seed=0");
    ck_assert_str_eq(c.cases[24].id, "gemm/M=64,N=7168,K=2048/f32.f32.f32.f32/normal/seed=0");
    qf_suite_cases_free(&c);
    qf_suite_free(s);

    s = mem("include: ../../../shapes/workloads.yaml\n"
            "groups:\n"
            "  - {op: moe_router, dtypes: f32, workload: deepseek-v3.router, params: {top_k: 8, score: "
            "sigmoid}}\n"
            "  - {op: attention, dtypes: bf16, workload: llama3-70b.attn_decode}\n"
            "  - {op: rmsnorm, dtypes: bf16, workload: llama3-8b.rmsnorm}\n");
    expand_ok(s, &c);
    ck_assert_uint_eq(c.n, 4 + 6 + 4);
    ck_assert_str_eq(c.cases[0].id,
                     "moe_router/tokens=1,experts=256/f32.f32.f32/top_k=8,score=sigmoid/normal/seed=0");
    ck_assert_str_eq(
        c.cases[4].id,
        "attention/heads=64,kv_heads=8,seq_q=1,seq_k=128,head_dim=128/bf16.bf16.bf16.f32.bf16/normal/seed=0");
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

typedef struct bad {
    const char *yaml;
    const char *want; /* after "<path>/m.yaml:" */
} bad;

/* clang-format off */
static const bad bads[] = {
    {"op: attention\ndtypes: f32\nshapes: {heads: 6, kv_heads: 4, seq_q: 1, head_dim: 8}\n",
     "3:9: field 'shapes.kv_heads': heads (6) must be a multiple of kv_heads (4)"},
    {"op: attention\ndtypes: f32\nshapes: {heads: 2, kv_heads: 4, seq_q: 1, head_dim: 8}\n",
     "3:9: field 'shapes.kv_heads': heads (2) must be a multiple of kv_heads (4)"},
    {"op: rope\ndtypes: f32\nshapes: {tokens: 1, heads: 1, head_dim: 7}\n",
     "3:9: field 'shapes.head_dim': head_dim (7) must be even for rope"},
    {"op: rope\ndtypes: f32\nshapes: {tokens: 1, heads: 1, head_dim: 8}\nparams: {rotary_dim: [4, 16]}\n",
     "3:9: field 'params.rotary_dim': rotary_dim (16) must be even and at most head_dim (8)"},
    {"op: moe_router\ndtypes: f32\nshapes: {tokens: 1, experts: [8, 4]}\nparams: {top_k: 6}\n",
     "3:9: field 'params.top_k': top_k (6) exceeds experts (4)"},
    {"op: gemm\ndtypes: f32\nshapes: {M: 16777216, N: 16777216, K: [1, 2147483647]}\n",
     "3:9: field 'shapes': shape M=16777216,N=16777216,K=2147483647,batch=1 is too large (product of dimensions above 2^56)"},
    {"op: gemm\ndtypes: [f32, bf16, f16]\nshapes: {M: {from: 1, to: 4096, step: 1}, N: {from: 1, to: 64, step: 1}, K: 1}\n",
     "1:1: field 'shapes': the suite expands to more than 262144 cases"},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 1, to: 4096, step: 1}, N: {from: 1, to: 4096, step: 1}, K: {from: 1, to: 4096, step: 1}, batch: {from: 1, to: 4096, step: 1}}\nseeds: 65536\n",
     "1:1: field 'shapes': the suite expands to more than 262144 cases"},
    {"dtypes: f32\ngroups:\n  - {op: gemm, shapes: {M: 1, N: 1, K: 1}}\n  - {op: gemm, shapes: {M: [2, 1], N: 1, K: 1}}\n",
     "4:5: field 'name': duplicate case id 'gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0' (also from the group at "},
    {"dtypes: f32\nop: gemm\nshapes: [{M: 1, N: 1, K: 1}, {M: 1, N: 1, K: 1}]\n",
     "1:1: field 'groups': duplicate case id 'gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0'"},
};
/* clang-format on */

START_TEST(test_bad)
{
    const bad *b = &bads[_i];
    qf_suite *s = mem(b->yaml);
    qf_suite_cases c = {5, (qf_suite_case *)8, NULL};
    qf_status st = qf_suite_expand(s, &c, errbuf, sizeof errbuf);
    ck_assert_msg(st == QF_EPARSE, "case %d: status %d", _i, st);
    ck_assert_uint_eq(c.n, 0);
    ck_assert_ptr_null(c.cases);
    char want[1024];
    snprintf(want, sizeof want, "%s:%s", src_path("tests/suite/data/m.yaml"), b->want);
    ck_assert_msg(strncmp(errbuf, want, strlen(want)) == 0, "case %d:\n  got  '%s'\n  want '%s...'", _i,
                  errbuf, want);
    qf_suite_free(s);
}
END_TEST

/* Distinct group names make otherwise equal cases distinct. */
START_TEST(test_names)
{
    qf_suite *s =
        mem("dtypes: f32\nrefute: false\n"
            "groups:\n"
            "  - {name: naive, op: gemm, kernels: gemm.cpu.naive*, shapes: {M: 1, N: 1, K: 1}}\n"
            "  - {name: blocked, op: gemm, kernels: gemm.cpu.blocked*, shapes: {M: 1, N: 1, K: 1},\n"
            "     policy: {max_ulp: 1}}\n");
    qf_suite_cases c;
    expand_ok(s, &c);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.cases[0].id, "naive:gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0");
    ck_assert_str_eq(c.cases[1].id, "blocked:gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0");
    ck_assert_str_eq(c.cases[1].group->kernels[0], "gemm.cpu.blocked*");
    ck_assert_uint_eq(c.cases[1].group->policy.set, QF_POLICY_MAX_ULP);
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

/* threads (docs/suites.md#threads): a sweep axis after the parameters;
 * one thread, the default, stays out of ids. */
START_TEST(test_threads)
{
    qf_suite *s = mem("dtypes: f32\nrefute: false\n"
                      "groups:\n"
                      "  - {op: gemm, shapes: {M: 1, N: 1, K: 1}, threads: [1, 4], seeds: 2}\n"
                      "  - {name: p, op: gemm, shapes: {M: 1, N: 1, K: 1}, params: {alpha: 2}, threads: 8}\n"
                      "  - {name: d, op: gemm, shapes: {M: 1, N: 1, K: 1}}\n");
    qf_suite_cases c;
    expand_ok(s, &c);
    ck_assert_uint_eq(c.n, 6);
    ck_assert_str_eq(c.cases[0].id, "gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0");
    ck_assert_uint_eq(c.cases[0].threads, 1);
    ck_assert_str_eq(c.cases[1].id, "gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=1");
    ck_assert_str_eq(c.cases[2].id, "gemm/M=1,N=1,K=1/f32.f32.f32.f32/threads=4/normal/seed=0");
    ck_assert_uint_eq(c.cases[2].threads, 4);
    ck_assert_str_eq(c.cases[4].id, "p:gemm/M=1,N=1,K=1/f32.f32.f32.f32/alpha=2,threads=8/normal/seed=0");
    ck_assert_str_eq(c.cases[5].id, "d:gemm/M=1,N=1,K=1/f32.f32.f32.f32/normal/seed=0");
    ck_assert_uint_eq(c.cases[5].threads, 1);
    ck_assert_ptr_eq(qf_suite_cases_find(&c, c.cases[2].id), &c.cases[2]);
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

/* Refuting inputs (docs/refute.md): four per gemm dtype, shape, params and
 * thread count, after the group's inputs, with the first seed; none for
 * other ops or with refute: false; qf_suite_count agrees. */
START_TEST(test_refute)
{
    qf_suite *s = mem("dtypes: f32\n"
                      "groups:\n"
                      "  - {op: gemm, shapes: {M: 1, N: 1, K: [8, 9]}, seeds: [3, 5], threads: [1, 2]}\n"
                      "  - {name: off, op: gemm, shapes: {M: 1, N: 1, K: 8}, refute: false}\n"
                      "  - {name: sm, op: softmax, shapes: {rows: 1, cols: 8}}\n");
    qf_suite_cases c;
    uint64_t n = 0;
    expand_ok(s, &c);
    /* 2 K x 2 threads x (2 seeds + 4 refute) + 1 + 1 */
    ck_assert_uint_eq(c.n, 2 * 2 * (2 + 4) + 1 + 1);
    ck_assert_int_eq(qf_suite_count(s, &n, errbuf, sizeof errbuf), QF_OK);
    ck_assert_uint_eq(n, c.n);
    ck_assert_str_eq(c.cases[1].id, "gemm/M=1,N=1,K=8/f32.f32.f32.f32/normal/seed=5");
    ck_assert_str_eq(c.cases[2].id, "gemm/M=1,N=1,K=8/f32.f32.f32.f32/refute:stagnation/seed=3");
    ck_assert_str_eq(c.cases[5].id, "gemm/M=1,N=1,K=8/f32.f32.f32.f32/refute:ties/seed=3");
    ck_assert_str_eq(c.cases[8].id, "gemm/M=1,N=1,K=8/f32.f32.f32.f32/threads=2/refute:stagnation/seed=3");
    ck_assert_str_eq(c.cases[24].id, "off:gemm/M=1,N=1,K=8/f32.f32.f32.f32/normal/seed=0");
    ck_assert_ptr_eq(qf_suite_cases_find(&c, c.cases[5].id), &c.cases[5]);
    qf_suite_cases_free(&c);
    qf_suite_free(s);
}
END_TEST

START_TEST(test_glob)
{
    ck_assert(qf_suite_glob_match("gemm.cpu.*", "gemm.cpu.naive.f32"));
    ck_assert(qf_suite_glob_match("*", ""));
    ck_assert(qf_suite_glob_match("*.f32", "gemm.cpu.naive.f32"));
    ck_assert(qf_suite_glob_match("gemm.?pu.*", "gemm.gpu.x"));
    ck_assert(qf_suite_glob_match("sm_9*", "sm_90a"));
    ck_assert(!qf_suite_glob_match("gemm.cpu.*", "gemm.cuda.x"));
    ck_assert(!qf_suite_glob_match("gemm", "gemm.cpu"));
    ck_assert(!qf_suite_glob_match("a*b", "aaaac"));
    ck_assert(qf_suite_glob_match("a*b*c", "axxbyyc"));
    ck_assert(!qf_suite_glob_match(NULL, "x"));
    /* no exponential backtracking */
    char name[4001];
    memset(name, 'a', 4000);
    name[4000] = 0;
    ck_assert(!qf_suite_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", name));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("suite/expand");
    TCase *tc = tcase_create("expand");
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_refute);
    tcase_add_test(tc, test_quick_roundtrip);
    tcase_add_test(tc, test_defaults_and_follows);
    tcase_add_test(tc, test_workloads);
    tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof bads / sizeof bads[0]));
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_glob);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
