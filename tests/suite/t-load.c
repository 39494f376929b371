/* t-load.c: loading suite files: the shipped suites, a fixture using every
 * key, and one malformed input per error class, each checked for the
 * "FILE:LINE:COL: field 'F': ..." message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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

static qf_suite *load_ok(const char *path)
{
    qf_suite *s = NULL;
    qf_status st = qf_suite_load(path, &s, errbuf, sizeof errbuf);
    ck_assert_msg(st == QF_OK, "%s: %s", path, errbuf);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(test_quick)
{
    static const qf_suite_op ops[] = {QF_SUITE_OP_GEMM, QF_SUITE_OP_GEMM, QF_SUITE_OP_SOFTMAX, QF_SUITE_OP_RMSNORM};
    static const char *const kernel[] = {"gemm.cpu.naive.f32", "gemm.cpu.bf16_f32acc", "softmax.cpu.f32",
                                         "rmsnorm.cpu.f32"};
    qf_suite *s = load_ok(src_path("shapes/quick.yaml"));
    ck_assert_str_eq(s->name, "quick");
    /* the four pre-merge groups of the reference kernels come first; the
     * candidate kernels, the matrix-unit models, the quantized GEMMs and
     * issue 5's flash attention, Welford and RoPE groups and l2norm follow */
    ck_assert_uint_eq(s->ngroups, 35);
    for (size_t i = 0; i < 4; i++) {
        const qf_suite_group *g = &s->groups[i];
        const char *const *roles;
        size_t nr = qf_suite_op_roles(g->op, &roles);
        ck_assert_int_eq(g->op, ops[i]);
        ck_assert_uint_eq(g->nkernels, 1);
        ck_assert(qf_suite_glob_match(g->kernels[0], kernel[i]));
        ck_assert_uint_eq(g->ndtypes, 1);
        ck_assert_str_eq(roles[nr - 2], "acc");
        /* bfloat16 inputs with a float32 accumulator in the second group,
         * float32 everywhere else */
        ck_assert_int_eq(g->dtypes[0].role[0]->id, i == 1 ? QF_BFLOAT16 : QF_FLOAT32);
        ck_assert_int_eq(g->dtypes[0].role[nr - 2]->id, QF_FLOAT32);
        ck_assert_uint_eq(g->ninputs, 2);
        ck_assert_uint_eq(g->nseeds, 1);
    }
    ck_assert_str_eq(s->groups[1].dtypes[0].label, "bf16.bf16.f32.bf16");
    qf_suite_free(s);
}
END_TEST

/* Distribution parameters as the input generator (qf_dist_set) reads them. */
START_TEST(test_inputs_texts)
{
    const char *y =
        "op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n"
        "inputs: [{name: heavy_tail, tail: lognormal, sigma: 2}, {name: outliers, per_channel: true,\n"
        "          fraction: 1.0e-3}, {name: special, sign: -1, rate_inf: 0}, small_int]\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(y, strlen(y), "m.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s",
                  errbuf);
    const qf_suite_input *in = s->groups[0].inputs;
    ck_assert_str_eq(in[0].label, "heavy_tail:tail=lognormal,sigma=2");
    ck_assert_uint_eq(in[0].nparams, 2);
    ck_assert_str_eq(in[0].keys[0], "tail");
    ck_assert_str_eq(in[0].texts[0], "lognormal");
    ck_assert(in[0].values[0] != in[0].values[0]); /* NaN: not a number */
    ck_assert_str_eq(in[1].label, "outliers:fraction=0.001,per_channel=true");
    ck_assert_str_eq(in[1].keys[1], "per_channel");
    ck_assert_str_eq(in[1].texts[1], "1");
    ck_assert_str_eq(in[2].label, "special:rate_inf=0,sign=-1");
    ck_assert_str_eq(in[2].texts[1], "-1");
    ck_assert_str_eq(in[3].label, "small_int");
    ck_assert_uint_eq(in[3].nparams, 0);
    qf_suite_free(s);
}
END_TEST

/* log_softmax and glu kernels register as softmax and activation kernels
 * (qf_kernel.h), so their globs start with those ops. */
START_TEST(test_baseline_policy)
{
    const char *y = "op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n"
                    "policy: {baseline: gemm.cpu.naive.f32, baseline_factor: 3, baseline_metric: rms,\n"
                    "         baseline_tol: 1.0e-6}\n";
    const char *bad = "op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {baseline_metric: rms}\n";
    const char *bad2 = "op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n"
                       "policy: {baseline: gemm.x, baseline_metric: l2}\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(y, strlen(y), "m.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s",
                  errbuf);
    ck_assert_int_eq(s->groups[0].policy.baseline_rms, 1);
    ck_assert(s->groups[0].policy.baseline_tol == 1.0e-6);
    ck_assert(s->groups[0].policy.baseline_factor == 3);
    qf_suite_free(s);
    s = NULL;
    ck_assert_int_eq(qf_suite_load_mem(bad, strlen(bad), "m.yaml", &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "field 'policy.baseline_metric': 'baseline_metric' needs 'baseline'"), "%s",
                  errbuf);
    ck_assert_int_eq(qf_suite_load_mem(bad2, strlen(bad2), "m.yaml", &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "unknown value 'l2' (valid: max_abs, rms)"), "%s", errbuf);
}
END_TEST

/* max_zero_frac (docs/suites.md#policy): a fraction in [0, 1], both ends
 * allowed (0 refuses any zero, 1 accepts all-zero references). */
START_TEST(test_max_zero_frac)
{
    const char *ok =
        "groups:\n"
        "  - {op: gemm, dtypes: f32, shapes: {M: 1, N: 1, K: 1}, policy: {max_zero_frac: 1}}\n"
        "  - {name: z, op: gemm, dtypes: f32, shapes: {M: 1, N: 1, K: 1}, policy: {max_zero_frac: 0}}\n"
        "  - {name: d, op: gemm, dtypes: f32, shapes: {M: 1, N: 1, K: 1}}\n";
    const char *bad = "op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {max_zero_frac: 1.5}\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(ok, strlen(ok), "m.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s",
                  errbuf);
    ck_assert_uint_eq(s->groups[0].policy.set, QF_POLICY_MAX_ZERO_FRAC);
    ck_assert(s->groups[0].policy.max_zero_frac == 1);
    ck_assert_uint_eq(s->groups[1].policy.set, QF_POLICY_MAX_ZERO_FRAC);
    ck_assert(s->groups[1].policy.max_zero_frac == 0);
    ck_assert_uint_eq(s->groups[2].policy.set, 0);
    qf_suite_free(s);
    s = NULL;
    ck_assert_int_eq(qf_suite_load_mem(bad, strlen(bad), "m.yaml", &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "m.yaml:4:25: field 'policy.max_zero_frac': 1.5 is out of range [0, 1]"),
                  "%s", errbuf);
}
END_TEST

/* Per-slot inputs (docs/suites.md#inputs): the op's input slots as keys,
 * each with its own distribution, in slot order in the label. */
START_TEST(test_slot_inputs)
{
    const char *y = "op: attention\ndtypes: f32\n"
                    "shapes: {heads: 1, seq_q: 2, seq_k: 3, head_dim: 4}\n"
                    "inputs: [{v: uniform, q: {name: file, path: q.npy}}, normal]\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(y, strlen(y), "dir/m.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s",
                  errbuf);
    const qf_suite_input *in = &s->groups[0].inputs[0];
    ck_assert_uint_eq(s->groups[0].ninputs, 2);
    ck_assert_uint_eq(in->nslots, 2);
    ck_assert_str_eq(in->slot_names[0], "q");
    ck_assert_str_eq(in->slot_names[1], "v");
    ck_assert_str_eq(in->slots[0].path, "dir/q.npy");
    ck_assert_str_eq(in->slots[1].name, "uniform");
    ck_assert_str_eq(in->name, "normal");
    ck_assert_str_eq(in->label, "q=file:path=q.npy+v=uniform");
    ck_assert_uint_eq(s->groups[0].inputs[1].nslots, 0);
    qf_suite_free(s);
}
END_TEST

START_TEST(test_kernel_op_prefix)
{
    const char *y = "groups:\n"
                    "  - {op: log_softmax, dtypes: f32, shapes: {rows: 1, cols: 2}}\n"
                    "  - {op: glu, params: {fn: silu}, dtypes: f32, shapes: {rows: 1, cols: 2}}\n"
                    "  - {op: log_softmax, kernels: [softmax.cpu.*], dtypes: f32, shapes: {rows: 1, cols: 2}}\n";
    const char *bad = "op: glu\nparams: {fn: silu}\nkernels: [glu.cpu.*]\ndtypes: f32\nshapes: {rows: 1, cols: 2}\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(y, strlen(y), "m.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s",
                  errbuf);
    ck_assert_uint_eq(s->ngroups, 3);
    ck_assert_str_eq(s->groups[0].kernels[0], "softmax.*");
    ck_assert_str_eq(s->groups[1].kernels[0], "activation.*");
    ck_assert_str_eq(s->groups[2].kernels[0], "softmax.cpu.*");
    qf_suite_free(s);
    s = NULL;
    ck_assert_int_eq(qf_suite_load_mem(bad, strlen(bad), "m.yaml", &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "kernel names start with 'activation.'"), "%s", errbuf);
}
END_TEST

START_TEST(test_diamond)
{
    qf_suite *s = load_ok(src_path("tests/suite/data/diamond.yaml"));
    ck_assert_uint_eq(s->nworkloads, 2);
    ck_assert_str_eq(s->workloads[0], "lib.small");
    ck_assert_str_eq(s->workloads[1], "lib.two");
    ck_assert_uint_eq(s->ngroups, 1);
    ck_assert_uint_eq(s->groups[0].nsets, 1);
    qf_suite_free(s);
}
END_TEST

START_TEST(test_workloads_file)
{
    qf_suite *s = load_ok(src_path("shapes/workloads.yaml"));
    ck_assert_uint_eq(s->ngroups, 0);
    const char *want[] = {"llama3-8b.qkv", "llama3-70b.down", "mixtral-8x7b.router", "deepseek-v3.router"};
    for (size_t w = 0; w < 4; w++) {
        size_t i;
        for (i = 0; i < s->nworkloads; i++)
            if (!strcmp(s->workloads[i], want[w]))
                break;
        ck_assert_msg(i < s->nworkloads, "workload %s missing", want[w]);
    }
    qf_suite_free(s);
}
END_TEST

START_TEST(test_full)
{
    qf_suite *s = load_ok(src_path("tests/suite/data/good_full.yaml"));
    ck_assert_str_eq(s->name, "good-full");
    ck_assert_str_eq(s->description, "fixture with every key");
    ck_assert_uint_eq(s->ngroups, 2);
    ck_assert_uint_eq(s->nworkloads, 1);
    const qf_suite_group *g = &s->groups[0];
    ck_assert_str_eq(g->name, "g1");
    ck_assert_uint_eq(g->nkernels, 2);
    ck_assert_str_eq(g->kernels[1], "*.naive");
    ck_assert_uint_eq(g->ndtypes, 3);
    ck_assert_str_eq(g->dtypes[0].label, "f32.f32.f32.f32");
    ck_assert_str_eq(g->dtypes[1].label, "bf16.bf16.f32.bf16");
    ck_assert_str_eq(g->dtypes[2].label, "e4m3.e5m2.f32.bf16+per_tensor");
    ck_assert_str_eq(g->dtypes[2].scale, "per_tensor");
    /* shapes: one literal set, then the workload's */
    ck_assert_uint_eq(g->nsets, 2);
    ck_assert_uint_eq(g->sets[0].nvalues[0], 2);
    ck_assert_uint_eq(g->sets[0].nvalues[1], 4);
    ck_assert_uint_eq(g->sets[0].values[1][3], 256);
    ck_assert_uint_eq(g->sets[0].nvalues[2], 4);
    ck_assert_uint_eq(g->sets[0].values[2][3], 8);
    ck_assert_uint_eq(g->sets[0].values[3][0], 1); /* batch default */
    ck_assert_uint_eq(g->sets[1].values[3][0], 2);
    ck_assert_str_eq(g->sets[1].where.file, src_path("tests/suite/data/sub/lib.yaml"));
    ck_assert_int_eq(g->sets[1].where.line, 6);
    /* params in table order (trans_b before alpha), lists kept */
    ck_assert_uint_eq(g->nparams, 2);
    ck_assert_str_eq(g->params[0].key, "trans_b");
    ck_assert_uint_eq(g->params[0].nvalues, 2);
    ck_assert_int_eq(g->params[0].values[1].i, 1);
    ck_assert_str_eq(g->params[1].key, "alpha");
    ck_assert(g->params[1].values[0].r == 0.5);
    ck_assert_uint_eq(g->ninputs, 3);
    ck_assert_str_eq(g->inputs[1].label, "uniform:lo=-2,hi=3");
    ck_assert_uint_eq(g->inputs[1].nparams, 2);
    ck_assert_str_eq(g->inputs[1].keys[1], "hi");
    ck_assert_str_eq(g->inputs[1].texts[1], "3");
    ck_assert(g->inputs[1].values[0] == -2);
    ck_assert_str_eq(g->inputs[2].label, "file:path=x.npy,tensor=model.layers.0.w");
    ck_assert_str_eq(g->inputs[2].tensor, "model.layers.0.w");
    ck_assert_uint_eq(g->inputs[2].nparams, 1); /* tensor; path has its own field */
    ck_assert_str_eq(g->inputs[2].keys[0], "tensor");
    ck_assert_str_eq(g->inputs[2].path, src_path("tests/suite/data/tensors/x.npy"));
    ck_assert_uint_eq(g->nseeds, 2);
    ck_assert_uint_eq(g->seeds[0], 7);
    ck_assert_uint_eq(g->sampling.max_elements, 4096);
    ck_assert_uint_eq(g->sampling.tile, 64);
    ck_assert_uint_eq(g->policy.set, QF_POLICY_MAX_ULP | QF_POLICY_MAX_NORMWISE | QF_POLICY_MIN_SQNR_DB |
                                         QF_POLICY_BASELINE | QF_POLICY_FALSE_FAILURE);
    ck_assert(g->policy.baseline_factor == 3);
    ck_assert_str_eq(g->policy.baseline, "gemm.cpu.naive.f32");
    ck_assert_uint_eq(g->narch, 2);
    const qf_suite_group *a = &s->groups[1];
    ck_assert_int_eq(a->op, QF_SUITE_OP_ATTENTION);
    ck_assert_str_eq(a->kernels[0], "attention.*");
    ck_assert_uint_eq(a->nseeds, 2);
    ck_assert_uint_eq(a->seeds[1], 1);
    ck_assert_uint_eq(a->ninputs, 1);
    ck_assert_str_eq(a->inputs[0].name, "normal");
    ck_assert_uint_eq(a->policy.set, 0);
    ck_assert_uint_eq(a->sampling.max_elements, 0);
    qf_suite_free(s);
}
END_TEST

/* ---- Errors ----------------------------------------------------------------- */

typedef struct bad {
    const char *yaml;
    const char *want; /* the message must start with this */
    const char *also; /* and contain this (or NULL) */
} bad;

/* clang-format off */
static const bad bads[] = {
    /* syntax and structure */
    {"op: gemm\n  x: [1, 2\n", "m.yaml:2:4: YAML syntax", NULL},
    {"op: [gemm\n", "m.yaml:2:1: YAML syntax", NULL},
    {"", "m.yaml:1:1: empty suite file", NULL},
    {"- 1\n- 2\n", "m.yaml:1:1: expected a mapping", NULL},
    {"op: gemm\n---\nop: gemm\n", "m.yaml:3:1: more than one YAML document", NULL},
    {"op: gemm\nop: gemm\n", "m.yaml:2:1: field 'op': duplicate key 'op' (first at line 1, column 1)", NULL},
    {"opp: gemm\n", "m.yaml:1:1: field 'opp': unknown key 'opp' (valid keys: suite, description, include, workloads, groups, op,", NULL},
    {"? [a]\n: 1\n", "m.yaml:1:3: a key must be a scalar", NULL},
    {"suite: \"a\\0b\"\n", "m.yaml:1:8: field 'suite': contains a NUL byte", NULL},
    /* op */
    {"dtypes: [f32]\nshapes: {rows: 1, cols: 1}\n", "m.yaml:1:1: missing 'op'", "valid: gemm, attention"},
    {"op: gemmm\n", "m.yaml:1:5: field 'op': unknown op 'gemmm' (valid: gemm, attention, softmax", NULL},
    {"op: [gemm]\n", "m.yaml:1:5: field 'op': expected a scalar, got a list", NULL},
    /* dtypes */
    {"op: gemm\nshapes: {M: 1, N: 1, K: 1}\n", "m.yaml:1:1: missing 'dtypes'", NULL},
    {"op: gemm\ndtypes: [f32, fp77]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:15: field 'dtypes[1]': unknown format 'fp77' (valid: float64, float32,", NULL},
    {"op: gemm\ndtypes: [{a: f32, acc: e4m3}]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:24: field 'dtypes[0].acc': accumulator float8_e4m3fn must be a floating-point format", NULL},
    {"op: gemm\ndtypes: [{a: f32, q: f32}]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:19: field 'dtypes[0].q': unknown key 'q' (valid keys: a, b, acc, out, in, scale)", NULL},
    {"op: gemm\ndtypes: [{a: f32, scale: weird}]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:26: field 'dtypes[0].scale': unknown scale 'weird' (valid: none, per_tensor", "mx, nvfp4, group)"},
    {"op: gemm\ndtypes: [{a: bf16, b: int4, scale: group}]\nshapes: {M: 1, N: 1, K: 1}\nparams: {group_size: 0}\n",
     "m.yaml:4:22: field 'params.group_size'", NULL},
    {"op: gemm\ndtypes: [{a: int8, acc: int32}]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:25: field 'dtypes[0].acc': accumulator int32 must be a floating-point format", NULL},
    {"op: softmax\ndtypes: [e8m0]\nshapes: {rows: 1, cols: 1}\n",
     "m.yaml:2:10: field 'dtypes[0]': float8_e8m0fnu is a scale format", NULL},
    {"op: softmax\ndtypes: [int8]\nshapes: {rows: 1, cols: 1}\n",
     "m.yaml:2:10: field 'dtypes[0]': integer format int8 not valid for role 'in' of softmax", NULL},
    {"op: quantize\ndtypes: [f32]\nshapes: {rows: 1, cols: 1}\nparams: {family: mx}\n",
     "m.yaml:2:10: field 'dtypes[0]': the tuple needs 'out' for quantize", NULL},
    {"op: gemm\ndtypes: [f32, float32]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:15: field 'dtypes[1]': dtype tuple f32.f32.f32.f32 appears twice", NULL},
    {"op: gemm\ndtypes: [{in: f32, a: bf16}]\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:23: field 'dtypes[0].a': 'a' and 'in' both set the input format", NULL},
    /* shapes */
    {"op: gemm\ndtypes: f32\n", "m.yaml:1:1: missing 'shapes' or 'workload'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1}\n",
     "m.yaml:3:9: field 'shapes': missing dimension 'K' (gemm shapes need M, N, K)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1, Q: 2}\n",
     "m.yaml:3:28: field 'shapes.Q': unknown key 'Q' (valid keys: M, N, K, batch, workload)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 0, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': 0 is out of range [1, 2147483647]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: -4, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': expected a non-negative integer, got '-4'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 99999999999999999999999, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': integer '99999999999999999999999' overflows", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 4294967296, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': 4294967296 is out of range", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: \"16\", N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': expected an integer, got the quoted string \"16\"", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1.5, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': expected a non-negative integer, got '1.5'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: [1, 2, 1], N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': value 1 appears twice", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: [], N: 1, K: 1}\n", "m.yaml:3:13: field 'shapes.M': empty list", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 8, to: 4}, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': a range needs exactly one of 'step' and 'mul'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 8, to: 4, step: 1}, N: 1, K: 1}\n",
     "m.yaml:3:27: field 'shapes.M.to': 'to' (4) is below 'from' (8)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 1, to: 100000, step: 1}, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': range gives more than 4096 values", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 1, to: 8, mul: 1}, N: 1, K: 1}\n",
     "m.yaml:3:35: field 'shapes.M.mul': 1 is out of range [2, 2147483647]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {to: 8, mul: 2}, N: 1, K: 1}\n",
     "m.yaml:3:13: field 'shapes.M': a range needs 'from' and 'to'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: {from: 1, to: 8, by: 2}, N: 1, K: 1}\n",
     "m.yaml:3:30: field 'shapes.M.by': unknown key 'by' (valid keys: from, to, step, mul)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {workload: x, M: 1}\n",
     "m.yaml:3:9: field 'shapes': 'workload' cannot be mixed with dimensions", NULL},
    {"op: gemm\ndtypes: f32\nworkload: nope\n", "m.yaml:3:11: field 'workload': unknown workload 'nope'", NULL},
    {"workloads:\n  w: {op: softmax, shapes: {rows: 1, cols: 1}}\nop: gemm\ndtypes: f32\nworkload: w\n",
     "m.yaml:5:11: field 'workload': workload 'w' is a softmax shape set, not gemm", NULL},
    {"workloads:\n  w: {op: gemm, shapes: {workload: v}}\n  v: {op: gemm, shapes: [{workload: w}]}\n",
     "m.yaml:", "refers to itself (cycle)"},
    {"workloads:\n  w: {op: gemm}\n", "m.yaml:2:6: field 'workloads.w': a workload needs 'shapes'", NULL},
    {"workloads:\n  w: {op: gemm, shapes: {M: 1, N: 1, K: 1}, size: 3}\n",
     "m.yaml:2:45: field 'workloads.w.size': unknown key 'size' (valid keys: op, shapes, source, description)",
     NULL},
    {"workloads:\n  w/x: {op: gemm, shapes: {M: 1, N: 1, K: 1}}\n",
     "m.yaml:2:3: field 'workloads.w/x': character '/' (0x2f) not allowed", NULL},
    /* kernels */
    {"op: gemm\nkernels: [softmax.cpu.*]\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:11: field 'kernels[0]': kernel glob 'softmax.cpu.*' cannot match a gemm kernel", NULL},
    {"op: gemm\nkernels: [\"gemm cpu\"]\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:11: field 'kernels[0]': character ' ' (0x20) not allowed", NULL},
    {"op: gemm\nkernels: {a: 1}\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:2:10: field 'kernels': expected a name or a list of names, got a mapping", NULL},
    /* params */
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams: {trans_c: true}\n",
     "m.yaml:4:10: field 'params.trans_c': unknown key 'trans_c' (valid keys: trans_a, trans_b, alpha, beta, group_size)",
     NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams: {trans_a: yes}\n",
     "m.yaml:4:19: field 'params.trans_a': expected true or false, got 'yes'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams: {alpha: nan}\n",
     "m.yaml:4:17: field 'params.alpha': 'nan' is not a finite number", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams: {alpha: 1e999}\n",
     "m.yaml:4:17: field 'params.alpha': '1e999' is not a finite number", NULL},
    {"op: rmsnorm\ndtypes: f32\nshapes: {rows: 1, cols: 1}\nparams: {eps: 0}\n",
     "m.yaml:4:15: field 'params.eps': 0 is out of range (0, 1]", NULL},
    {"op: softmax\ndtypes: f32\nshapes: {rows: 1, cols: 1}\nparams: {eps: 1e-6}\n",
     "m.yaml:4:10: field 'params.eps': unknown key 'eps' (valid keys: none)", NULL},
    {"op: activation\ndtypes: f32\nshapes: {rows: 1, cols: 1}\n",
     "m.yaml:1:1: field 'params': activation needs parameter 'fn' (no 'params' given)", NULL},
    {"op: activation\ndtypes: f32\nshapes: {rows: 1, cols: 1}\nparams: {fn: swish}\n",
     "m.yaml:4:14: field 'params.fn': unknown value 'swish' (valid: gelu, gelu_erf", NULL},
    {"op: attention\ndtypes: f32\nshapes: {heads: 1, seq_q: 1, head_dim: 8}\nparams: {window: -2}\n",
     "m.yaml:4:18: field 'params.window': -2 is out of range [-1, 2147483647]", NULL},
    {"op: attention\ndtypes: f32\nshapes: {heads: 1, seq_q: 1, head_dim: 8}\nparams: {causal: [true, true]}\n",
     "m.yaml:4:25: field 'params.causal[1]': value appears twice", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams: {alpha: {x: 1}}\n",
     "m.yaml:4:17: field 'params.alpha': expected a value or a list of values, got a mapping", NULL},
    /* inputs */
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [gaussian]\n",
     "m.yaml:4:10: field 'inputs[0]': unknown distribution 'gaussian' (valid: normal, uniform, small_int", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: outliers, fraction: 2}]\n",
     "m.yaml:4:37: field 'inputs[0].fraction': 2 is out of range [0, 1]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: normal, sigma: 2}]\n",
     "m.yaml:4:25: field 'inputs[0].sigma': unknown key 'sigma' (valid keys: name, mean, std)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{fraction: 2}]\n",
     "m.yaml:4:10: field 'inputs[0]': an input mapping needs 'name'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: uniform, lo: 1, hi: 1}]\n",
     "m.yaml:4:10: field 'inputs[0]': uniform needs lo < hi (lo 1, hi 1)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: near_saturation, lo: 0.9, hi: 0.5}]\n",
     "m.yaml:4:10: field 'inputs[0]': near_saturation needs lo <= hi (lo 0.9, hi 0.5)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: special, rate_nan: 0.5, rate_zero: 0.5}]\n",
     "m.yaml:4:10: field 'inputs[0]': rate_nan + rate_inf + rate_zero = 1.01 exceeds 1", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: heavy_tail, tail: cauchy}]\n",
     "m.yaml:4:35: field 'inputs[0].tail': unknown value 'cauchy' (valid: student_t, lognormal)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: small_int, int_max: 0}]\n",
     "m.yaml:4:37: field 'inputs[0].int_max': 0 is out of range", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{name: file}]\n",
     "m.yaml:4:10: field 'inputs[0]': distribution 'file' needs 'path'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [normal, normal]\n",
     "m.yaml:4:18: field 'inputs[1]': input 'normal' appears twice", NULL},
    /* threads */
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nthreads: [1, 0]\n",
     "m.yaml:4:14: field 'threads[1]': 0 is out of range [1, 1024]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nthreads: [2, 2]\n",
     "m.yaml:4:14: field 'threads[1]': thread count 2 appears twice", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nthreads: {n: 2}\n",
     "m.yaml:4:10: field 'threads': expected a thread count or a list of them, got a mapping", NULL},
    /* per-slot inputs */
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{a: normal, z: normal}]\n",
     "m.yaml:4:22: field 'inputs[0].z': unknown key 'z' (valid keys: a, b, c)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{mean: 1}]\n",
     "m.yaml:4:10: field 'inputs[0]': an input mapping needs 'name' (a distribution) or gemm's input slots as "
     "keys (a, b, c)",
     NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{a: {mean: 1}}]\n",
     "m.yaml:4:14: field 'inputs[0].a': the input of slot 'a' needs 'name' (a distribution)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\ninputs: [{a: {name: normal, std: -1}}]\n",
     "m.yaml:4:34: field 'inputs[0].a.std': -1 is out of range", NULL},
    /* seeds, sampling, policy, arch */
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nseeds: 0\n",
     "m.yaml:4:8: field 'seeds': 0 is out of range [1, 65536]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nseeds: [1, 1]\n",
     "m.yaml:4:12: field 'seeds[1]': seed 1 appears twice", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nseeds: {n: 1}\n",
     "m.yaml:4:8: field 'seeds': expected a count or a list of seeds, got a mapping", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nsampling: {max_elements: 0}\n",
     "m.yaml:4:26: field 'sampling.max_elements': 0 is out of range", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nsampling: {max: 5}\n",
     "m.yaml:4:12: field 'sampling.max': unknown key 'max' (valid keys: max_elements, edges, tile)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {max_ulp: -1}\n",
     "m.yaml:4:19: field 'policy.max_ulp': -1 is out of range [0, 1e+30]", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {false_failure: 1}\n",
     "m.yaml:4:25: field 'policy.false_failure': 1 is out of range (0, 1)", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {baseline_factor: 2}\n",
     "m.yaml:4:27: field 'policy.baseline_factor': 'baseline_factor' needs 'baseline'", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: {max_ulps: 2}\n",
     "m.yaml:4:10: field 'policy.max_ulps': unknown key 'max_ulps' (valid keys: max_ulp,", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\npolicy: 2\n",
     "m.yaml:4:9: field 'policy': expected a mapping, got a scalar", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\nparams:\n",
     "m.yaml:4:8: field 'params': expected a mapping, got an empty value", NULL},
    {"op: gemm\ndtypes: f32\nshapes: {M: 1, N: 1, K: 1}\narch: [sm_90, sm_90]\n",
     "m.yaml:4:15: field 'arch[1]': 'sm_90' appears twice", NULL},
    /* groups */
    {"groups: {op: gemm}\n", "m.yaml:1:9: field 'groups': expected a list of groups, got a mapping", NULL},
    {"groups:\n  - op: gemm\n    dtypes: f32\n    shapes: {M: 1, N: 1, K: 1}\n    suite: x\n",
     "m.yaml:5:5: field 'groups[0].suite': unknown key 'suite' (valid keys: name, op,", NULL},
    {"dtypes: f32\ngroups:\n  - op: gemm\n    shapes: {M: 1, N: 1, K: 0}\n",
     "m.yaml:4:29: field 'groups[0].shapes.K': 0 is out of range", NULL},
    {"dtypes: [f32]\ngroups:\n  - op: gemm\n    shapes: {M: 1, N: 1, K: 1}\n    dtypes: [f32, f32]\n",
     "m.yaml:5:19: field 'groups[0].dtypes[1]': dtype tuple f32.f32.f32.f32 appears twice", NULL},
    {"dtypes: [f33]\ngroups:\n  - op: gemm\n    shapes: {M: 1, N: 1, K: 1}\n",
     "m.yaml:1:10: field 'dtypes[0]': unknown format 'f33'", NULL},
    /* include */
    {"include: {a: 1}\n", "m.yaml:1:10: field 'include': expected a path or a list of paths, got a mapping", NULL},
    {"include: \"\"\n", "m.yaml:1:10: field 'include': empty include path", NULL},
    {"include: /dev/null\n", "m.yaml:1:10: field 'include': '/dev/null' is not a regular file", NULL},
};
/* clang-format on */

START_TEST(test_bad)
{
    const bad *b = &bads[_i];
    qf_suite *s = (qf_suite *)1;
    errbuf[0] = 0;
    qf_status st = qf_suite_load_mem(b->yaml, strlen(b->yaml), "m.yaml", &s, errbuf, sizeof errbuf);
    ck_assert_msg(st == QF_EPARSE, "case %d: status %d, message '%s' for:\n%s", _i, st, errbuf, b->yaml);
    ck_assert_ptr_null(s);
    ck_assert_msg(strncmp(errbuf, b->want, strlen(b->want)) == 0,
                  "case %d:\n  got  '%s'\n  want '%s...'\nfor:\n%s", _i, errbuf, b->want, b->yaml);
    if (b->also)
        ck_assert_msg(strstr(errbuf, b->also) != NULL, "case %d: '%s' lacks '%s'", _i, errbuf, b->also);
    ck_assert(strchr(errbuf, '\n') == NULL);
}
END_TEST

/* Errors in files: included files, cycles, missing files. */
START_TEST(test_bad_files)
{
    qf_suite *s;
    const char *p = src_path("tests/suite/data/cycle_a.yaml");
    ck_assert_int_eq(qf_suite_load(p, &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "cycle_b.yaml:1:10: field 'include': include cycle: ") != NULL, "%s",
                  errbuf);
    ck_assert_msg(strstr(errbuf, "cycle_a.yaml -> ") && strstr(errbuf, "cycle_b.yaml -> "), "%s", errbuf);

    p = src_path("tests/suite/data/include_missing.yaml");
    ck_assert_int_eq(qf_suite_load(p, &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "include_missing.yaml:2:10: field 'include': cannot open '") &&
                      strstr(errbuf, "no_such_file.yaml': No such file"),
                  "%s", errbuf);

    p = src_path("tests/suite/data/bad_include_inner.yaml");
    ck_assert_int_eq(qf_suite_load(p, &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "sub/bad_inner.yaml:4:29: field 'workloads.w.shapes.K': 0 is out of range"),
                  "%s", errbuf);

    p = src_path("tests/suite/data/dup_workload.yaml");
    ck_assert_int_eq(qf_suite_load(p, &s, errbuf, sizeof errbuf), QF_EPARSE);
    ck_assert_msg(strstr(errbuf, "dup_workload.yaml:3:3: field 'workloads.lib.small': workload 'lib.small' "
                                 "already defined at ") &&
                      strstr(errbuf, "sub/lib.yaml:3:3"),
                  "%s", errbuf);

    ck_assert_int_eq(qf_suite_load(src_path("tests/suite/data/none.yaml"), &s, errbuf, sizeof errbuf),
                     QF_EIO);
    ck_assert_msg(strstr(errbuf, "none.yaml': No such file"), "%s", errbuf);
    ck_assert_int_eq(qf_suite_load("/", &s, errbuf, sizeof errbuf), QF_EIO);
    ck_assert_int_eq(qf_suite_load(NULL, &s, errbuf, sizeof errbuf), QF_EINVAL);
}
END_TEST

/* Hostile inputs: deep nesting, alias bombs, huge mappings, truncation of a
 * good file at every byte.  None may crash, leak or hang. */
START_TEST(test_hostile)
{
    qf_suite *s;
    size_t n = 200000;
    char *buf = malloc(2 * n + 64);
    ck_assert_ptr_nonnull(buf);
    strcpy(buf, "op: ");
    memset(buf + 4, '[', n);
    memset(buf + 4 + n, ']', n);
    buf[4 + 2 * n] = 0;
    qf_status st = qf_suite_load_mem(buf, strlen(buf), "deep.yaml", &s, errbuf, sizeof errbuf);
    ck_assert_int_eq(st, QF_EPARSE);
    ck_assert_str_eq(errbuf, "deep.yaml:1:69: collections nested deeper than 64 levels");
    /* brackets inside quotes and comments are not nesting */
    {
        char q[512] = "description: \"";
        memset(q + 14, '[', 100);
        strcpy(q + 114, "\" # ");
        memset(q + 118, '{', 100);
        strcpy(q + 218, "\nworkloads:\n  w: {op: gemm, source: 'it''s "
                        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[', "
                        "shapes: {M: 1, N: 1, K: 1}}\n");
        st = qf_suite_load_mem(q, strlen(q), "q.yaml", &s, errbuf, sizeof errbuf);
    }
    ck_assert_msg(st == QF_OK, "%s", errbuf);
    qf_suite_free(s);
    free(buf);

    /* billion laughs: each level doubles; walking it would explode without
     * the node limit */
    char bomb[4096];
    size_t u = (size_t)snprintf(bomb, sizeof bomb, "a0: &a0 [1, 2]\n");
    for (int i = 1; i < 40; i++)
        u += (size_t)snprintf(bomb + u, sizeof bomb - u, "a%d: &a%d [*a%d, *a%d]\n", i, i, i - 1, i - 1);
    snprintf(bomb + u, sizeof bomb - u, "op: gemm\ndtypes: f32\nshapes: {M: *a39, N: 1, K: 1}\n");
    st = qf_suite_load_mem(bomb, strlen(bomb), "bomb.yaml", &s, errbuf, sizeof errbuf);
    ck_assert_int_eq(st, QF_EPARSE);

    /* a wide list aliased into many groups stops at the node limit */
    {
        size_t cap = 1 << 20, w = 0;
        char *big = malloc(cap);
        ck_assert_ptr_nonnull(big);
        w += (size_t)snprintf(big + w, cap - w, "dtypes: f32\ngroups:\n- &g {op: gemm, shapes: {M: &x [1");
        for (int i = 2; i <= 4096; i++)
            w += (size_t)snprintf(big + w, cap - w, ",%d", i);
        w += (size_t)snprintf(big + w, cap - w, "], N: *x, K: *x}}\n");
        for (int i = 0; i < 200; i++)
            w += (size_t)snprintf(big + w, cap - w, "- *g\n");
        st = qf_suite_load_mem(big, w, "wide.yaml", &s, errbuf, sizeof errbuf);
        ck_assert_int_eq(st, QF_EPARSE);
        ck_assert_msg(strstr(errbuf, "document too large"), "%s", errbuf);
        free(big);
    }
    /* 'x' is an unknown key, found before anything expands */
    st = qf_suite_load_mem("x: &x [1]\n", 10, "m.yaml", &s, errbuf, sizeof errbuf);
    ck_assert_int_eq(st, QF_EPARSE);

    st = qf_suite_load_mem(NULL, 0, "empty.yaml", &s, errbuf, sizeof errbuf);
    ck_assert_int_eq(st, QF_EPARSE);

    /* every prefix of a good file: an error or a suite, never a crash */
    FILE *f = fopen(src_path("tests/suite/data/good_full.yaml"), "rb");
    ck_assert_ptr_nonnull(f);
    char text[8192];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    const char *name = src_path("tests/suite/data/good_full.yaml");
    for (size_t k = 0; k < len; k += 1) {
        st = qf_suite_load_mem(text, k, name, &s, errbuf, sizeof errbuf);
        if (st == QF_OK)
            qf_suite_free(s);
        else
            ck_assert_msg(strncmp(errbuf, name, strlen(name)) == 0, "prefix %zu: %s", k, errbuf);
    }
    /* a tiny error buffer truncates but never overflows */
    char small[8];
    st = qf_suite_load_mem("op: x\n", 6, "m.yaml", &s, small, sizeof small);
    ck_assert_int_eq(st, QF_EPARSE);
    ck_assert_str_eq(small, "m.yaml:");
}
END_TEST

/* Quantized GEMM tuples (issue 5): int8 in with int32 out, whose default
 * accumulator is float64 (exact for integer sums); group scaling with its
 * group size parameter. */
START_TEST(test_quant_tuples)
{
    static const char y[] = "op: gemm\n"
                            "dtypes:\n"
                            "  - {a: int8, b: int8, out: int32}\n"
                            "  - {a: bf16, b: int4, out: bf16, scale: group}\n"
                            "  - {a: e2m1, b: e2m1, out: f32, scale: nvfp4}\n"
                            "shapes: {M: 1, N: 1, K: 1}\n"
                            "params: {group_size: 64}\n";
    qf_suite *s = NULL;
    ck_assert_msg(qf_suite_load_mem(y, strlen(y), "q.yaml", &s, errbuf, sizeof errbuf) == QF_OK, "%s", errbuf);
    const qf_suite_group *g = &s->groups[0];
    ck_assert_uint_eq(g->ndtypes, 3);
    ck_assert_str_eq(g->dtypes[0].label, "i8.i8.f64.i32");
    ck_assert_str_eq(g->dtypes[1].label, "bf16.i4.f32.bf16+group");
    ck_assert_str_eq(g->dtypes[2].label, "fp4.fp4.f32.f32+nvfp4");
    qf_suite_free(s);
}
END_TEST

START_TEST(test_ops)
{
    for (int i = 0; i < qf_suite_op_count(); i++) {
        qf_suite_op op;
        ck_assert_int_eq(qf_suite_op_lookup(qf_suite_op_name((qf_suite_op)i), &op), QF_OK);
        ck_assert_int_eq(op, i);
        const char *const *dn;
        size_t nd = qf_suite_op_dims(op, &dn);
        ck_assert_uint_gt(nd, 0);
        ck_assert_uint_le(nd, QF_SUITE_MAX_DIMS);
        /* the name table agrees with the schema: a case answers by each name */
        qf_suite_case k;
        memset(&k, 0, sizeof k);
        k.op = op;
        for (size_t d = 0; d < nd; d++) {
            uint64_t v;
            k.dims[d] = d + 1;
            ck_assert_int_eq(qf_suite_case_dim(&k, dn[d], &v), QF_OK);
            ck_assert_uint_eq(v, d + 1);
        }
        ck_assert_ptr_null(nd < QF_SUITE_MAX_DIMS ? dn[nd] : NULL);
        ck_assert_uint_gt(qf_suite_op_roles(op, NULL), 0);
    }
    qf_suite_op op;
    ck_assert_int_eq(qf_suite_op_lookup("GEMM", &op), QF_EPARSE);
    ck_assert_ptr_null(qf_suite_op_name((qf_suite_op)qf_suite_op_count()));
    const char *const *names;
    ck_assert_uint_eq(qf_suite_op_dims(QF_SUITE_OP_ATTENTION, &names), 7);
    ck_assert_str_eq(names[2], "kv_heads");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("suite/load");
    TCase *tc = tcase_create("load");
    tcase_add_test(tc, test_quick);
    tcase_add_test(tc, test_workloads_file);
    tcase_add_test(tc, test_baseline_policy);
    tcase_add_test(tc, test_max_zero_frac);
    tcase_add_test(tc, test_slot_inputs);
    tcase_add_test(tc, test_kernel_op_prefix);
    tcase_add_test(tc, test_diamond);
    tcase_add_test(tc, test_inputs_texts);
    tcase_add_test(tc, test_full);
    tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof bads / sizeof bads[0]));
    tcase_add_test(tc, test_bad_files);
    tcase_add_test(tc, test_hostile);
    tcase_add_test(tc, test_ops);
    tcase_add_test(tc, test_quant_tuples);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
