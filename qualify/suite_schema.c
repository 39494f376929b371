/* suite_schema.c: the per-op schema of suite files (op dimensions, dtype
 * roles, op parameters, input distributions) and the functions that only
 * read it.  The rest of the suite code reaches it through _suite.h.
 */
#include <string.h>

#include "_suite.h"

#define REAL_ANY -1e30, 1e30, 0, 0
#define BIG      ((double)QF_SUITE_DIM_MAX)

static const char *const act_names[] = {"gelu", "gelu_erf", "gelu_tanh", "silu", "sigmoid", "relu", NULL};
static const char *const rope_layouts[] = {"interleaved", "half", NULL};
static const char *const router_scores[] = {"softmax", "sigmoid", NULL};
static const char *const quant_families[] = {"mx", "nvfp4", "group", "fp8", NULL};
/* The MX scale rules of docs/numerics.md#block-scaled-formats: floor is the
 * OCP reference rule, rceil the cuBLAS one. */
static const char *const scale_rules[] = {"floor", "ceil", "even", "rceil", NULL};
static const char *const round_modes[] = {"rne", "rna", "rtz", "up", "down", "stochastic", NULL};
static const char *const gemm_scales[] = {"none",      "per_tensor", "per_channel", "per_token",
                                          "per_block", "mx",         "nvfp4",       "group",     NULL};

/* clang-format off */
static const pspec gemm_params[] = {
    {"trans_a", PT_BOOL, 0, 0, 0, 0, NULL, 0, 0, NULL},
    {"trans_b", PT_BOOL, 0, 0, 0, 0, NULL, 0, 0, NULL},
    {"alpha",   PT_REAL, REAL_ANY,         NULL, 0, 1, NULL},
    {"beta",    PT_REAL, REAL_ANY,         NULL, 0, 0, NULL},
    {"group_size", PT_INT, 1, 65536, 0, 0, NULL, 0, 128, NULL}, /* scale: group (W4A16) */
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec attn_params[] = {
    {"causal",             PT_BOOL, 0, 0, 0, 0,       NULL, 0, 0, NULL},
    {"window",             PT_INT,  -1, BIG, 0, 0,    NULL, 0, -1, NULL}, /* left window; -1: none */
    {"softcap",            PT_REAL, 0, 1e6, 0, 0,     NULL, 0, 0, NULL},  /* 0: none */
    {"scale",              PT_REAL, 0, 1e6, 0, 0,     NULL, 0, 0, NULL},  /* 0: 1/sqrt(head_dim) */
    {"align_bottom_right", PT_BOOL, 0, 0, 0, 0,       NULL, 0, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec no_params[] = {{NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec rms_params[] = {
    {"eps",           PT_REAL, 0, 1, 1, 0,       NULL, 0, 1e-6, NULL},
    {"weight",        PT_BOOL, 0, 0, 0, 0,       NULL, 0, 1, NULL},
    {"weight_offset", PT_REAL, -1e6, 1e6, 0, 0,  NULL, 0, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec ln_params[] = {
    {"eps",    PT_REAL, 0, 1, 1, 0, NULL, 0, 1e-5, NULL},
    {"weight", PT_BOOL, 0, 0, 0, 0, NULL, 0, 1, NULL},
    {"bias",   PT_BOOL, 0, 0, 0, 0, NULL, 0, 1, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec act_params[] = {
    {"fn", PT_ENUM, 0, 0, 0, 0, act_names, 1, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec rope_params[] = {
    {"theta",      PT_REAL, 0, 1e12, 1, 0,   NULL, 0, 10000, NULL},
    {"layout",     PT_ENUM, 0, 0, 0, 0,      rope_layouts, 0, 0, "interleaved"},
    {"rotary_dim", PT_INT,  0, BIG, 0, 0,    NULL, 0, 0, NULL}, /* 0: head_dim */
    {"pos_offset", PT_INT,  0, 1099511627776.0, 0, 0, NULL, 0, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec moe_params[] = {
    {"top_k",       PT_INT,  1, 4096, 0, 0, NULL, 1, 0, NULL},
    {"score",       PT_ENUM, 0, 0, 0, 0,    router_scores, 0, 0, "softmax"},
    {"renormalize", PT_BOOL, 0, 0, 0, 0,    NULL, 0, 0, NULL},
    {"route_scale", PT_REAL, 0, 1e6, 1, 0,  NULL, 0, 1, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};
static const pspec quant_params[] = {
    {"family",     PT_ENUM, 0, 0, 0, 0,       quant_families, 1, 0, NULL},
    {"block",      PT_INT,  0, 1048576, 0, 0, NULL, 0, 0, NULL}, /* 0: the family's default */
    {"scale_rule", PT_ENUM, 0, 0, 0, 0,       scale_rules, 0, 0, "floor"},
    {"round",      PT_ENUM, 0, 0, 0, 0,       round_modes, 0, 0, "rne"},
    {"saturate",   PT_BOOL, 0, 0, 0, 0,       NULL, 0, 1, NULL},
    {"symmetric",  PT_BOOL, 0, 0, 0, 0,       NULL, 0, 1, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}};

#define ROWS_COLS 2, {{"rows", 1, 0, -1}, {"cols", 1, 0, -1}}, "rows, cols"
#define IAO 3, {"in", "acc", "out"}, {ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL
#define IWAO 4, {"in", "weight", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL

static const op_schema op_schemas[QF_SUITE_OP_COUNT] = {
    {"gemm", 4, {{"M", 1, 0, -1}, {"N", 1, 0, -1}, {"K", 1, 0, -1}, {"batch", 0, 1, -1}}, "M, N, K",
     4, {"a", "b", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 11u, gemm_scales, gemm_params},
    {"attention", 7, {{"batch", 0, 1, -1}, {"heads", 1, 0, -1}, {"kv_heads", 0, 0, 1}, {"seq_q", 1, 0, -1},
                      {"seq_k", 0, 0, 3}, {"head_dim", 1, 0, -1}, {"head_dim_v", 0, 0, 5}},
     "heads, seq_q, head_dim",
     5, {"q", "k", "v", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL, attn_params},
    {"softmax",     ROWS_COLS, IAO,  no_params},
    {"log_softmax", ROWS_COLS, IAO,  no_params},
    {"rmsnorm",     ROWS_COLS, IWAO, rms_params},
    {"layernorm",   ROWS_COLS, IWAO, ln_params},
    {"activation",  ROWS_COLS, IAO,  act_params},
    {"glu",         ROWS_COLS, IAO,  act_params},
    {"rope", 3, {{"tokens", 1, 0, -1}, {"heads", 1, 0, -1}, {"head_dim", 1, 0, -1}}, "tokens, heads, head_dim",
     IAO, rope_params},
    {"moe_router", 2, {{"tokens", 1, 0, -1}, {"experts", 1, 0, -1}}, "tokens, experts", IAO, moe_params},
    {"quantize", ROWS_COLS, 2, {"in", "out"}, {ROLE_IN, ROLE_REQUIRED}, 2u, NULL, quant_params},
};

/* The distributions and parameters of the input generator (qf_inputs.h,
 * docs/inputs.md): the same names, so the runner hands them on as they
 * are; the ranges here are those the generator checks (qf_dist_check),
 * less the ones that depend on the format. */
static const char *const tails[] = {"student_t", "lognormal", NULL};

#define P_MEAN {"mean", PT_REAL, REAL_ANY, NULL, 0, 0, NULL}
#define P_STD  {"std", PT_REAL, 0, 1e30, 0, 0, NULL, 0, 1, NULL}
#define P_FRAC(d) {"fraction", PT_REAL, 0, 1, 0, 0, NULL, 0, d, NULL}
#define P_RATE(k, d) {k, PT_REAL, 0, 1, 0, 0, NULL, 0, d, NULL}
#define P_END  {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}

static const dist_schema dist_schemas[] = {
    {"normal",          {P_MEAN, P_STD, P_END}},
    {"uniform",         {{"lo", PT_REAL, REAL_ANY, NULL, 0, -1, NULL}, {"hi", PT_REAL, REAL_ANY, NULL, 0, 1, NULL}, P_END}},
    {"small_int",       {{"int_max", PT_INT, 1, 9007199254740992.0, 0, 0, NULL, 0, 4, NULL}, P_END}},
    {"outliers",        {P_MEAN, P_STD, P_FRAC(0.01), {"scale", PT_REAL, REAL_ANY, NULL, 0, 100, NULL},
                         {"per_channel", PT_BOOL, 0, 0, 0, 0, NULL, 0, 0, NULL}, P_END}},
    {"heavy_tail",      {P_MEAN, P_STD, {"tail", PT_ENUM, 0, 0, 0, 0, tails, 0, 0, "student_t"},
                         {"dof", PT_REAL, 0, 1e6, 1, 0, NULL, 0, 3, NULL},
                         {"sigma", PT_REAL, 0, 20, 0, 0, NULL, 0, 1, NULL}, P_END}},
    {"near_saturation", {{"lo", PT_REAL, 0, 2, 0, 0, NULL, 0, 0.5, NULL}, {"hi", PT_REAL, 0, 2, 0, 0, NULL, 0, 1, NULL}, P_END}},
    {"subnormal",       {P_MEAN, P_STD, P_FRAC(0.5), P_END}},
    {"ill_conditioned", {{"cond", PT_REAL, 1, 1e300, 0, 0, NULL, 0, 1e6, NULL}, P_END}},
    {"special",         {P_MEAN, P_STD, P_RATE("rate_nan", 0.01), P_RATE("rate_inf", 0.01), P_RATE("rate_zero", 0.01),
                         {"sign", PT_INT, -1, 1, 0, 0, NULL, 0, 0, NULL}, P_END}},
    {"file",            {{"path", PT_PATH, 0, 0, 0, 0, NULL, 1, 0, NULL}, {"tensor", PT_TEXT, 0, 0, 0, 0, NULL, 0, 0, NULL}, P_END}},
    {NULL, {P_END}},
};
/* clang-format on */

const char *_qf_suite_op_list_text(void)
{
    return "gemm, attention, softmax, log_softmax, rmsnorm, layernorm, activation, glu, rope, moe_router, "
           "quantize";
}

/* ---- Ops ------------------------------------------------------------------------------------ */

const char *qf_suite_op_name(qf_suite_op op)
{
    return (unsigned)op < QF_SUITE_OP_COUNT ? op_schemas[op].name : NULL;
}

qf_status qf_suite_op_lookup(const char *name, qf_suite_op *out)
{
    for (int i = 0; name && i < QF_SUITE_OP_COUNT; i++)
        if (!strcmp(name, op_schemas[i].name)) {
            *out = (qf_suite_op)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

/* The dimension names again, as arrays the public interface can point
 * into (t-load.c checks that they match op_schemas). */
static const char *const dim_names[QF_SUITE_OP_COUNT][QF_SUITE_MAX_DIMS] = {
    {"M", "N", "K", "batch"},
    {"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "head_dim_v"},
    {"rows", "cols"},
    {"rows", "cols"},
    {"rows", "cols"},
    {"rows", "cols"},
    {"rows", "cols"},
    {"rows", "cols"},
    {"tokens", "heads", "head_dim"},
    {"tokens", "experts"},
    {"rows", "cols"},
};

size_t qf_suite_op_dims(qf_suite_op op, const char *const **names)
{
    if ((unsigned)op >= QF_SUITE_OP_COUNT)
        return 0;
    if (names)
        *names = dim_names[op];
    return op_schemas[op].ndims;
}

size_t qf_suite_op_roles(qf_suite_op op, const char *const **names)
{
    if ((unsigned)op >= QF_SUITE_OP_COUNT)
        return 0;
    if (names)
        *names = op_schemas[op].roles;
    return op_schemas[op].nroles;
}


const op_schema *_qf_suite_op_schema(qf_suite_op op)
{
    return &op_schemas[op];
}

const dist_schema *_qf_suite_dist_schemas(void)
{
    return dist_schemas;
}
