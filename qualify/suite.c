/* suite.c: loading and validating suite files (YAML, through libyaml's
 * document API so every node keeps its line and column).
 *
 * The tables at the top (op dimensions, dtype roles, op parameters, input
 * distributions) are the schema; docs/suites.md documents the same tables.
 * Expansion into cases lives in suite_expand.c.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "qf_format.h"
#include "qf_suite.h"

/* ---- Schema -------------------------------------------------------------------
 * Keep in step with docs/suites.md. */

typedef enum ptype { PT_BOOL = 0, PT_INT, PT_REAL, PT_ENUM, PT_PATH, PT_TEXT } ptype;

typedef struct pspec {
    const char *key;
    ptype type;
    double lo, hi; /* INT and REAL */
    int lo_open, hi_open;
    const char *const *choices; /* ENUM, NULL-terminated */
    int required;
    double def;        /* BOOL, INT, REAL default */
    const char *def_s; /* ENUM default */
} pspec;

typedef struct dim_spec {
    const char *name;
    int required;
    uint64_t def; /* default value; 0: the value of dimension `follows` */
    int follows;
} dim_spec;

enum { ROLE_IN = 0, ROLE_ACC, ROLE_OUT, ROLE_REQUIRED };

typedef struct op_schema {
    const char *name;
    size_t ndims;
    dim_spec dims[QF_SUITE_MAX_DIMS];
    const char *required_dims;
    size_t nroles;
    const char *roles[QF_SUITE_MAX_ROLES];
    int role_kind[QF_SUITE_MAX_ROLES];
    unsigned int_roles; /* bit r: role r may be an integer format */
    const char *const *scales;
    const pspec *params;
} op_schema;

#define REAL_ANY -1e30, 1e30, 0, 0
#define BIG      ((double)QF_SUITE_DIM_MAX)

static const char *const act_names[] = {"gelu", "gelu_erf", "gelu_tanh", "silu", "sigmoid", "relu", NULL};
static const char *const rope_layouts[] = {"interleaved", "half", NULL};
static const char *const router_scores[] = {"softmax", "sigmoid", NULL};
static const char *const quant_families[] = {"mx", "nvfp4", "group", "fp8", NULL};
/* The MX scale rules of FACTS.md ("Block-scaled formats"): floor is the
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
typedef struct dist_schema {
    const char *name;
    pspec params[7];
} dist_schema;

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

static const char *op_list_text(void)
{
    return "gemm, attention, softmax, log_softmax, rmsnorm, layernorm, activation, glu, rope, moe_router, "
           "quantize";
}

/* ---- Arena: every allocation of a suite lives here, so a failed load and
 * qf_suite_free() release everything in one walk (the fuzzer checks it). */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

typedef struct arena {
    chunk *head;
} arena;

static void *arena_alloc(arena *a, size_t size)
{
    size_t al = sizeof(max_align_t);
    size = (size + al - 1) / al * al;
    if (size == 0)
        size = al;
    if (!a->head || a->head->cap - a->head->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        chunk *c = malloc(sizeof(chunk) + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += size;
    memset(p, 0, size);
    return p;
}

static void arena_free(arena *a)
{
    chunk *c = a ? a->head : NULL;
    while (c) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
    free(a);
}

static char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static char *arena_strdup(arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

/* ---- Loading context ------------------------------------------------------- */

/* A shape entry before workload references are resolved. */
typedef struct raw_set {
    const char *ref; /* workload name, or NULL for a literal set */
    qf_suite_shape_set set;
} raw_set;

typedef struct raw_sets {
    size_t n, cap;
    raw_set *v;
} raw_sets;

typedef struct workload {
    const char *name;
    qf_suite_op op;
    qf_suite_where where;
    raw_sets sets;
    int state; /* 0 unresolved, 1 resolving (cycle), 2 resolved */
} workload;

typedef struct group_raw {
    qf_suite_group g;
    raw_sets sets;
} group_raw;

typedef struct ctx {
    arena *A;
    char *err;
    size_t errsize;
    qf_status st;
    const char *file; /* current file, as named (arena) */
    const char *dir;  /* its directory, for includes and input files */
    yaml_document_t *doc;
    unsigned long nodes;
    const char *chain[QF_SUITE_INCLUDE_DEPTH + 2]; /* include chain, names */
    const char *keys[QF_SUITE_INCLUDE_DEPTH + 2];  /* and real paths */
    int depth;
    qf_suite *out;
    group_raw *groups;
    size_t ngroups, capgroups;
    workload *wl;
    size_t nwl, capwl;
    const char **loaded; /* real paths of the files read so far */
    size_t nloaded, caploaded;
} ctx;

#define NODE_LIMIT 1000000ul /* YAML nodes walked, aliases counted each time */

static qf_status vfail_at(ctx *c, const char *file, int line, int col, const char *field, const char *fmt,
                          va_list ap)
{
    if (c->err && c->errsize) {
        int n;
        if (field && *field)
            n = snprintf(c->err, c->errsize, "%s:%d:%d: field '%s': ", file, line, col, field);
        else
            n = snprintf(c->err, c->errsize, "%s:%d:%d: ", file, line, col);
        if (n >= 0 && (size_t)n < c->errsize)
            vsnprintf(c->err + n, c->errsize - (size_t)n, fmt, ap);
    }
    return c->st = QF_EPARSE;
}

static qf_status fail_at(ctx *c, const char *file, int line, int col, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(c, file, line, col, field, fmt, ap);
    va_end(ap);
    return QF_EPARSE;
}

static qf_status fail(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(c, c->file, n ? (int)n->start_mark.line + 1 : 1, n ? (int)n->start_mark.column + 1 : 1, field,
             fmt, ap);
    va_end(ap);
    return QF_EPARSE;
}

static qf_status oom(ctx *c)
{
    if (c->err && c->errsize)
        snprintf(c->err, c->errsize, "%s: out of memory", c->file ? c->file : "suite");
    return c->st = QF_ENOMEM;
}

static qf_suite_where where_of(ctx *c, const yaml_node_t *n)
{
    qf_suite_where w = {c->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
    return w;
}

/* "parent.key" / "parent[i]" into buf, truncated to fit (paths only label
 * messages). */
static const char *pcat(char *buf, size_t size, const char *a, const char *sep, const char *b)
{
    size_t n = 0;
    const char *parts[3] = {a, sep, b};
    for (int k = 0; k < 3; k++)
        for (const char *s = parts[k]; s && *s && n + 1 < size; s++)
            buf[n++] = *s;
    buf[n] = 0;
    return buf;
}

static const char *pjoin(char *buf, size_t size, const char *parent, const char *key)
{
    return pcat(buf, size, parent, parent && *parent ? "." : "", key);
}

static const char *pindex(char *buf, size_t size, const char *parent, size_t i)
{
    char ix[32];
    int k = snprintf(ix, sizeof ix, "[%zu]", i);
    (void)k;
    return pcat(buf, size, parent, "", ix);
}

#define PATHSZ 256

static yaml_node_t *get(ctx *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

static const char *kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return n->data.scalar.length == 0 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
                   ? "an empty value"
                   : "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static qf_status count_node(ctx *c, const yaml_node_t *n, const char *field)
{
    if (++c->nodes > NODE_LIMIT)
        return fail(c, n, field, "document too large (more than %lu nodes, aliases counted at each use)",
                    NODE_LIMIT);
    return QF_OK;
}

static qf_status expect(ctx *c, const yaml_node_t *n, yaml_node_type_t t, const char *field, const char *what)
{
    if (count_node(c, n, field))
        return c->st;
    if (n->type != t)
        return fail(c, n, field, "expected %s, got %s", what, kind_name(n));
    return QF_OK;
}

static size_t seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(ctx *c, const yaml_node_t *n, size_t i)
{
    return get(c, n->data.sequence.items.start[i]);
}

/* A scalar's text, rejecting embedded NUL bytes (possible through "\0"). */
static qf_status scalar_text(ctx *c, const yaml_node_t *n, const char *field, const char **out)
{
    if (expect(c, n, YAML_SCALAR_NODE, field, "a scalar"))
        return c->st;
    const char *s = (const char *)n->data.scalar.value;
    if (strlen(s) != n->data.scalar.length)
        return fail(c, n, field, "contains a NUL byte");
    *out = s;
    return QF_OK;
}

/* Checks a mapping: every key a scalar, known and not repeated.
 * Sizes are small (the schema has at most a few dozen keys per mapping, the
 * rest is rejected), so the pairwise duplicate check stays cheap. */
#define MAP_MAX 4096

static void list_keys(char *buf, size_t size, const char *const *keys, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && used < size; i++) {
        int k = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", keys[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    if (n == 0)
        snprintf(buf, size, "none");
}

static qf_status check_map(ctx *c, const yaml_node_t *m, const char *field, const char *const *keys,
                           size_t nkeys)
{
    if (expect(c, m, YAML_MAPPING_NODE, field, "a mapping"))
        return c->st;
    size_t n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    if (n > MAP_MAX)
        return fail(c, m, field, "mapping too large (%zu keys, at most %d)", n, MAP_MAX);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = get(c, m->data.mapping.pairs.start[i].key);
        const char *ks;
        char p[PATHSZ];
        if (count_node(c, k, field))
            return c->st;
        if (k->type != YAML_SCALAR_NODE)
            return fail(c, k, field, "a key must be a scalar, got %s", kind_name(k));
        if (scalar_text(c, k, field, &ks))
            return c->st;
        if (keys) {
            size_t j;
            for (j = 0; j < nkeys; j++)
                if (strcmp(ks, keys[j]) == 0)
                    break;
            if (j == nkeys) {
                char valid[1024];
                list_keys(valid, sizeof valid, keys, nkeys);
                return fail(c, k, pjoin(p, sizeof p, field, ks), "unknown key '%s' (valid keys: %s)", ks,
                            valid);
            }
        }
        for (size_t j = 0; j < i; j++) {
            yaml_node_t *k2 = get(c, m->data.mapping.pairs.start[j].key);
            if (k2->type == YAML_SCALAR_NODE && strcmp((const char *)k2->data.scalar.value, ks) == 0)
                return fail(c, k, pjoin(p, sizeof p, field, ks),
                            "duplicate key '%s' (first at line %d, column %d)", ks,
                            (int)k2->start_mark.line + 1, (int)k2->start_mark.column + 1);
        }
    }
    return QF_OK;
}

/* The value of key in a checked mapping, or NULL. */
static yaml_node_t *map_get(ctx *c, const yaml_node_t *m, const char *key)
{
    if (!m)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = get(c, p->key);
        if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return get(c, p->value);
    }
    return NULL;
}

/* ---- Scalars ----------------------------------------------------------------- */

static int is_plain(const yaml_node_t *n)
{
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

static qf_status parse_i64(ctx *c, const yaml_node_t *n, const char *field, int64_t lo, int64_t hi,
                           int64_t *out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    if (!is_plain(n))
        return fail(c, n, field, "expected an integer, got the quoted string \"%.40s\"", s);
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!*p)
        return fail(c, n, field, "expected an integer, got '%.40s'", s);
    uint64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return fail(c, n, field, "expected an integer, got '%.40s'", s);
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return fail(c, n, field, "integer '%.40s' overflows", s);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if ((!neg && v > (uint64_t)hi) || (neg && (lo >= 0 ? v != 0 : v > (uint64_t)(-(lo + 1)) + 1)))
        return fail(c, n, field, "%.40s is out of range [%lld, %lld]", s, (long long)lo, (long long)hi);
    int64_t r = neg ? (v == 0 ? 0 : -(int64_t)(v - 1) - 1) : (int64_t)v;
    if (r < lo || r > hi)
        return fail(c, n, field, "%.40s is out of range [%lld, %lld]", s, (long long)lo, (long long)hi);
    *out = r;
    return QF_OK;
}

static qf_status parse_u64(ctx *c, const yaml_node_t *n, const char *field, uint64_t lo, uint64_t hi,
                           uint64_t *out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    if (!is_plain(n))
        return fail(c, n, field, "expected an integer, got the quoted string \"%.40s\"", s);
    const char *p = s;
    if (*p == '+')
        p++;
    if (!*p)
        return fail(c, n, field, "expected an integer, got '%.40s'", s);
    uint64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return fail(c, n, field, "expected a non-negative integer, got '%.40s'", s);
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return fail(c, n, field, "integer '%.40s' overflows", s);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < lo || v > hi)
        return fail(c, n, field, "%.40s is out of range [%llu, %llu]", s, (unsigned long long)lo,
                    (unsigned long long)hi);
    *out = v;
    return QF_OK;
}

/* Ranges of real parameters: [lo, hi], with open ends when *_open. */
typedef struct rrange {
    double lo, hi;
    int lo_open, hi_open;
} rrange;

static qf_status parse_real(ctx *c, const yaml_node_t *n, const char *field, rrange r, double *out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    if (!is_plain(n))
        return fail(c, n, field, "expected a number, got the quoted string \"%.40s\"", s);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !*s || s[0] == ' ')
        return fail(c, n, field, "expected a number, got '%.40s'", s);
    if (!isfinite(v) || errno == ERANGE)
        return fail(c, n, field, "'%.40s' is not a finite number in range", s);
    if (v < r.lo || v > r.hi || (r.lo_open && v == r.lo) || (r.hi_open && v == r.hi))
        return fail(c, n, field, "%.40s is out of range %c%g, %g%c", s, r.lo_open ? '(' : '[', r.lo, r.hi,
                    r.hi_open ? ')' : ']');
    *out = v;
    return QF_OK;
}

static qf_status parse_bool(ctx *c, const yaml_node_t *n, const char *field, int *out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    if (is_plain(n)) {
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
            *out = 1;
            return QF_OK;
        }
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
            *out = 0;
            return QF_OK;
        }
    }
    return fail(c, n, field, "expected true or false, got '%.40s'", s);
}

/* Names: kernel globs, workload names, enum values.  A restricted alphabet
 * keeps case ids and messages unambiguous. */
#define NAME_MAX_LEN 128

static qf_status parse_name(ctx *c, const yaml_node_t *n, const char *field, const char *extra,
                            const char **out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    size_t len = strlen(s);
    if (len == 0)
        return fail(c, n, field, "empty name");
    if (len > NAME_MAX_LEN)
        return fail(c, n, field, "name longer than %d characters", NAME_MAX_LEN);
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == '-' || (extra && strchr(extra, ch))))
            return fail(c, n, field,
                        "character '%c' (0x%02x) not allowed in '%.40s' (letters, digits, _ . -%s%s)",
                        ch >= 32 && ch < 127 ? ch : '?', ch, s, extra ? " " : "", extra ? extra : "");
    }
    *out = arena_strdup(c->A, s);
    return *out ? QF_OK : oom(c);
}

static qf_status parse_text(ctx *c, const yaml_node_t *n, const char *field, size_t maxlen, const char **out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    if (strlen(s) > maxlen)
        return fail(c, n, field, "longer than %zu characters", maxlen);
    *out = arena_strdup(c->A, s);
    return *out ? QF_OK : oom(c);
}

/* A scalar or a list of scalars, as a list. */
static qf_status as_list(ctx *c, yaml_node_t *n, const char *field, size_t max, yaml_node_t ***items,
                         size_t *count)
{
    if (count_node(c, n, field))
        return c->st;
    if (n->type == YAML_SEQUENCE_NODE) {
        size_t k = seq_len(n);
        if (k == 0)
            return fail(c, n, field, "empty list");
        if (k > max)
            return fail(c, n, field, "list too long (%zu items, at most %zu)", k, max);
        yaml_node_t **v = arena_alloc(c->A, k * sizeof *v);
        if (!v)
            return oom(c);
        for (size_t i = 0; i < k; i++)
            v[i] = seq_at(c, n, i);
        *items = v;
        *count = k;
        return QF_OK;
    }
    if (n->type != YAML_SCALAR_NODE && n->type != YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a value or a list, got %s", kind_name(n));
    yaml_node_t **v = arena_alloc(c->A, sizeof *v);
    if (!v)
        return oom(c);
    v[0] = n;
    *items = v;
    *count = 1;
    return QF_OK;
}

/* ---- Shapes ------------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static qf_status dim_values(ctx *c, yaml_node_t *n, const char *field, uint64_t **out, size_t *count)
{
    yaml_node_t **items;
    size_t k, m = 0;
    uint64_t *tmp = malloc(QF_SUITE_VALUES_MAX * sizeof *tmp);
    if (!tmp)
        return oom(c);
    if (as_list(c, n, field, QF_SUITE_VALUES_MAX, &items, &k))
        goto out;
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *it = items[i];
        char p[PATHSZ], q[PATHSZ];
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (it->type == YAML_SCALAR_NODE) {
            if (m == QF_SUITE_VALUES_MAX) {
                fail(c, it, f, "more than %d values", QF_SUITE_VALUES_MAX);
                goto out;
            }
            if (parse_u64(c, it, f, 1, QF_SUITE_DIM_MAX, &tmp[m]))
                goto out;
            m++;
            continue;
        }
        static const char *const rkeys[] = {"from", "to", "step", "mul"};
        if (check_map(c, it, f, rkeys, 4))
            goto out;
        yaml_node_t *nf = map_get(c, it, "from"), *nt = map_get(c, it, "to");
        yaml_node_t *ns = map_get(c, it, "step"), *nm = map_get(c, it, "mul");
        uint64_t from, to, step = 0, mul = 0;
        if (!nf || !nt) {
            fail(c, it, f, "a range needs 'from' and 'to'");
            goto out;
        }
        if (!ns == !nm) {
            fail(c, it, f, "a range needs exactly one of 'step' and 'mul'");
            goto out;
        }
        if (parse_u64(c, nf, pjoin(q, sizeof q, f, "from"), 1, QF_SUITE_DIM_MAX, &from) ||
            parse_u64(c, nt, pjoin(q, sizeof q, f, "to"), 1, QF_SUITE_DIM_MAX, &to))
            goto out;
        if (to < from) {
            fail(c, nt, pjoin(q, sizeof q, f, "to"), "'to' (%llu) is below 'from' (%llu)",
                 (unsigned long long)to, (unsigned long long)from);
            goto out;
        }
        if (ns && parse_u64(c, ns, pjoin(q, sizeof q, f, "step"), 1, QF_SUITE_DIM_MAX, &step))
            goto out;
        if (nm && parse_u64(c, nm, pjoin(q, sizeof q, f, "mul"), 2, QF_SUITE_DIM_MAX, &mul))
            goto out;
        /* to <= 2^31, so v + step and v * mul cannot overflow 64 bits. */
        for (uint64_t v = from; v <= to; v = step ? v + step : v * mul) {
            if (m == QF_SUITE_VALUES_MAX) {
                fail(c, it, f, "range gives more than %d values", QF_SUITE_VALUES_MAX);
                goto out;
            }
            tmp[m++] = v;
        }
    }
    /* Repeated values would give repeated cases; sorting a copy keeps the
     * check O(m log m) for hostile lists. */
    if (m > 1) {
        uint64_t *srt = malloc(m * sizeof *srt);
        if (!srt) {
            oom(c);
            goto out;
        }
        memcpy(srt, tmp, m * sizeof *srt);
        qsort(srt, m, sizeof *srt, cmp_u64);
        for (size_t i = 1; i < m; i++)
            if (srt[i] == srt[i - 1]) {
                uint64_t dup = srt[i];
                free(srt);
                fail(c, n, field, "value %llu appears twice", (unsigned long long)dup);
                goto out;
            }
        free(srt);
    }
    *out = arena_alloc(c->A, m * sizeof **out);
    if (!*out) {
        oom(c);
        goto out;
    }
    memcpy(*out, tmp, m * sizeof **out);
    *count = m;
    free(tmp);
    return QF_OK;
out:
    free(tmp);
    return c->st;
}

static qf_status sets_push(ctx *c, raw_sets *s, raw_set **out)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        raw_set *v = arena_alloc(c->A, cap * sizeof *v);
        if (!v)
            return oom(c);
        if (s->n)
            memcpy(v, s->v, s->n * sizeof *v);
        s->v = v;
        s->cap = cap;
    }
    *out = &s->v[s->n++];
    memset(*out, 0, sizeof **out);
    return QF_OK;
}

static qf_status parse_workload_ref(ctx *c, yaml_node_t *n, const char *field, raw_sets *s)
{
    raw_set *r;
    const char *name;
    if (parse_name(c, n, field, NULL, &name) || sets_push(c, s, &r))
        return c->st;
    r->ref = name;
    r->set.where = where_of(c, n);
    return QF_OK;
}

/* One shape mapping: dimension -> values, or {workload: NAME}. */
static qf_status parse_shape_map(ctx *c, yaml_node_t *n, const char *field, qf_suite_op op, raw_sets *s)
{
    const op_schema *os = &op_schemas[op];
    const char *keys[QF_SUITE_MAX_DIMS + 1];
    size_t nk = 0;
    for (size_t d = 0; d < os->ndims; d++)
        keys[nk++] = os->dims[d].name;
    keys[nk++] = "workload";
    if (check_map(c, n, field, keys, nk))
        return c->st;
    yaml_node_t *w = map_get(c, n, "workload");
    char p[PATHSZ];
    if (w) {
        if (n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1)
            return fail(c, n, field, "'workload' cannot be mixed with dimensions in one shape set");
        return parse_workload_ref(c, w, pjoin(p, sizeof p, field, "workload"), s);
    }
    raw_set *r;
    if (sets_push(c, s, &r))
        return c->st;
    r->set.where = where_of(c, n);
    for (size_t d = 0; d < os->ndims; d++) {
        yaml_node_t *v = map_get(c, n, os->dims[d].name);
        if (!v) {
            if (os->dims[d].required)
                return fail(c, n, field, "missing dimension '%s' (%s shapes need %s)", os->dims[d].name,
                            os->name, os->required_dims);
            r->set.values[d] = arena_alloc(c->A, sizeof(uint64_t));
            if (!r->set.values[d])
                return oom(c);
            r->set.values[d][0] = os->dims[d].def; /* 0: follows another dimension */
            r->set.nvalues[d] = 1;
            continue;
        }
        if (dim_values(c, v, pjoin(p, sizeof p, field, os->dims[d].name), &r->set.values[d],
                       &r->set.nvalues[d]))
            return c->st;
    }
    return QF_OK;
}

/* shapes: a mapping, or a list of mappings; workload: a name or a list. */
static qf_status parse_shapes(ctx *c, yaml_node_t *shapes, yaml_node_t *wref, const char *prefix,
                              qf_suite_op op, raw_sets *s)
{
    char p[PATHSZ], q[PATHSZ];
    if (shapes) {
        pjoin(p, sizeof p, prefix, "shapes");
        if (shapes->type == YAML_SEQUENCE_NODE) {
            yaml_node_t **items;
            size_t k;
            if (as_list(c, shapes, p, QF_SUITE_VALUES_MAX, &items, &k))
                return c->st;
            for (size_t i = 0; i < k; i++)
                if (parse_shape_map(c, items[i], pindex(q, sizeof q, p, i), op, s))
                    return c->st;
        } else if (parse_shape_map(c, shapes, p, op, s)) {
            return c->st;
        }
    }
    if (wref) {
        yaml_node_t **items;
        size_t k;
        pjoin(p, sizeof p, prefix, "workload");
        if (as_list(c, wref, p, QF_SUITE_VALUES_MAX, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++)
            if (parse_workload_ref(c, items[i],
                                   wref->type == YAML_SEQUENCE_NODE ? pindex(q, sizeof q, p, i) : p, s))
                return c->st;
    }
    return QF_OK;
}

/* ---- Dtype tuples -------------------------------------------------------------- */

/* The shortest spelling of a format (name or alias): ids stay readable and
 * qf_format_lookup() reads it back. */
static const char *short_name(const qf_format *f, char *buf, size_t size)
{
    const char *best = f->name;
    size_t bl = strlen(best);
    const char *a = f->aliases;
    while (a && *a) {
        while (*a == ' ')
            a++;
        size_t l = strcspn(a, " ");
        if (l && l < bl) {
            best = a;
            bl = l;
        }
        a += l;
    }
    snprintf(buf, size, "%.*s", (int)bl, best);
    return buf;
}

static qf_status lookup_format(ctx *c, yaml_node_t *n, const char *field, const qf_format **out)
{
    const char *s;
    if (scalar_text(c, n, field, &s))
        return c->st;
    const qf_format *f = qf_format_lookup(s);
    if (!f) {
        char names[1024];
        qf_format_list_names(names, sizeof names);
        return fail(c, n, field, "unknown format '%.40s' (valid: %s)", s, names);
    }
    *out = f;
    return QF_OK;
}

static qf_status check_role(ctx *c, yaml_node_t *n, const char *field, const op_schema *os, int role,
                            const qf_format *f)
{
    const char *rn = os->roles[role];
    if (f->kind == QF_KIND_SCALE)
        return fail(c, n, field, "%s is a scale format, not valid for role '%s'", f->name, rn);
    if (!strcmp(rn, "acc")) {
        if (f->kind != QF_KIND_FLOAT || f->bits < 16)
            return fail(c, n, field, "accumulator %s must be a floating-point format of 16 bits or more",
                        f->name);
    } else if (f->kind == QF_KIND_INT && !(os->int_roles & (1u << role))) {
        return fail(c, n, field, "integer format %s not valid for role '%s' of %s", f->name, rn, os->name);
    }
    return QF_OK;
}

static qf_status parse_dtype(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                             qf_suite_dtype *d)
{
    const qf_format *given[QF_SUITE_MAX_ROLES] = {0};
    yaml_node_t *at[QF_SUITE_MAX_ROLES] = {0};
    char p[PATHSZ];
    d->scale = "none";
    if (n->type == YAML_SCALAR_NODE) {
        if (lookup_format(c, n, field, &given[0]))
            return c->st;
        at[0] = n;
        for (size_t r = 1; r < os->nroles; r++)
            if (os->role_kind[r] == ROLE_IN) {
                given[r] = given[0];
                at[r] = n;
            }
    } else {
        const char *keys[QF_SUITE_MAX_ROLES + 2];
        size_t nk = 0;
        for (size_t r = 0; r < os->nroles; r++)
            keys[nk++] = os->roles[r];
        if (strcmp(os->roles[0], "in") != 0)
            keys[nk++] = "in";
        if (os->scales)
            keys[nk++] = "scale";
        if (check_map(c, n, field, keys, nk))
            return c->st;
        yaml_node_t *in = strcmp(os->roles[0], "in") != 0 ? map_get(c, n, "in") : NULL;
        const qf_format *fin = NULL;
        if (in && lookup_format(c, in, pjoin(p, sizeof p, field, "in"), &fin))
            return c->st;
        for (size_t r = 0; r < os->nroles; r++) {
            yaml_node_t *v = map_get(c, n, os->roles[r]);
            if (v) {
                if (in && os->role_kind[r] == ROLE_IN)
                    return fail(c, v, pjoin(p, sizeof p, field, os->roles[r]),
                                "'%s' and 'in' both set the input format", os->roles[r]);
                if (lookup_format(c, v, pjoin(p, sizeof p, field, os->roles[r]), &given[r]))
                    return c->st;
                at[r] = v;
            } else if (in && os->role_kind[r] == ROLE_IN) {
                given[r] = fin;
                at[r] = in;
            }
        }
        yaml_node_t *sc = os->scales ? map_get(c, n, "scale") : NULL;
        if (sc) {
            const char *s;
            if (scalar_text(c, sc, pjoin(p, sizeof p, field, "scale"), &s))
                return c->st;
            size_t i;
            for (i = 0; os->scales[i]; i++)
                if (!strcmp(s, os->scales[i]))
                    break;
            if (!os->scales[i]) {
                char valid[512];
                size_t ns = 0;
                while (os->scales[ns])
                    ns++;
                list_keys(valid, sizeof valid, os->scales, ns);
                return fail(c, sc, p, "unknown scale '%.40s' (valid: %s)", s, valid);
            }
            d->scale = os->scales[i];
        }
        if (!given[0])
            return fail(c, n, field, "the tuple needs '%s' (or 'in')", os->roles[0]);
    }
    /* Defaults: inputs follow the first input, acc is float32 (float64
     * when the inputs are), out follows the first input. */
    for (size_t r = 0; r < os->nroles; r++) {
        if (!given[r]) {
            if (os->role_kind[r] == ROLE_REQUIRED)
                return fail(c, n, field, "the tuple needs '%s' for %s", os->roles[r], os->name);
            if (os->role_kind[r] == ROLE_ACC)
                /* Integer inputs: an exact accumulator (int32 sums of
                 * int8 products are exact in float64 too). */
                given[r] = qf_format_get(given[0]->id == QF_FLOAT64 || given[0]->kind == QF_KIND_INT
                                             ? QF_FLOAT64
                                             : QF_FLOAT32);
            else
                given[r] = given[0];
            at[r] = n;
        }
        if (check_role(c, at[r], at[r] == n ? field : pjoin(p, sizeof p, field, os->roles[r]), os, (int)r,
                       given[r]))
            return c->st;
        d->role[r] = given[r];
    }
    char label[256];
    size_t used = 0;
    for (size_t r = 0; r < os->nroles; r++) {
        char b[32];
        used += (size_t)snprintf(label + used, sizeof label - used, "%s%s", r ? "." : "",
                                 short_name(given[r], b, sizeof b));
    }
    if (strcmp(d->scale, "none") != 0)
        snprintf(label + used, sizeof label - used, "+%s", d->scale);
    d->label = arena_strdup(c->A, label);
    return d->label ? QF_OK : oom(c);
}

static qf_status parse_dtypes(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                              qf_suite_group *g)
{
    yaml_node_t **items;
    size_t k;
    char p[PATHSZ];
    if (as_list(c, n, field, 256, &items, &k))
        return c->st;
    g->dtypes = arena_alloc(c->A, k * sizeof *g->dtypes);
    if (!g->dtypes)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        if (parse_dtype(c, items[i], n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field,
                        os, &g->dtypes[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(g->dtypes[j].label, g->dtypes[i].label))
                return fail(c, items[i], p, "dtype tuple %s appears twice", g->dtypes[i].label);
    }
    g->ndtypes = k;
    return QF_OK;
}

/* ---- Typed key/value parameters (op parameters, distribution parameters) ---- */

static void spec_range_text(const pspec *ps, char *buf, size_t size)
{
    if (ps->type == PT_ENUM) {
        size_t n = 0;
        while (ps->choices[n])
            n++;
        list_keys(buf, size, ps->choices, n);
    } else {
        snprintf(buf, size, "%s", "");
    }
}

static qf_status parse_pvalue(ctx *c, yaml_node_t *n, const char *field, const pspec *ps, qf_suite_value *v)
{
    int b;
    const char *s;
    switch (ps->type) {
    case PT_BOOL:
        if (parse_bool(c, n, field, &b))
            return c->st;
        v->type = QF_PARAM_BOOL;
        v->i = b;
        v->r = b;
        return QF_OK;
    case PT_INT:
        if (parse_i64(c, n, field, (int64_t)ps->lo, (int64_t)ps->hi, &v->i))
            return c->st;
        v->type = QF_PARAM_INT;
        v->r = (double)v->i;
        return QF_OK;
    case PT_REAL: {
        rrange r = {ps->lo, ps->hi, ps->lo_open, ps->hi_open};
        v->type = QF_PARAM_REAL;
        return parse_real(c, n, field, r, &v->r);
    }
    case PT_ENUM:
        if (scalar_text(c, n, field, &s))
            return c->st;
        for (size_t i = 0; ps->choices[i]; i++)
            if (!strcmp(s, ps->choices[i])) {
                v->type = QF_PARAM_ENUM;
                v->s = ps->choices[i];
                return QF_OK;
            }
        {
            char valid[512];
            spec_range_text(ps, valid, sizeof valid);
            return fail(c, n, field, "unknown value '%.40s' (valid: %s)", s, valid);
        }
    case PT_PATH:
    case PT_TEXT: return fail(c, n, field, "internal: text parameter");
    }
    return QF_OK;
}

static void spec_keys(const pspec *specs, const char **keys, size_t *nk)
{
    *nk = 0;
    for (size_t i = 0; specs && specs[i].key; i++)
        keys[(*nk)++] = specs[i].key;
}

static qf_status parse_params(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                              qf_suite_group *g)
{
    const char *keys[QF_SUITE_MAX_PARAMS + 1];
    size_t nk;
    char p[PATHSZ], q[PATHSZ];
    spec_keys(os->params, keys, &nk);
    if (n && check_map(c, n, field, keys, nk))
        return c->st;
    g->params = arena_alloc(c->A, (nk ? nk : 1) * sizeof *g->params);
    if (!g->params)
        return oom(c);
    g->nparams = 0;
    for (size_t i = 0; i < nk; i++) {
        const pspec *ps = &os->params[i];
        yaml_node_t *v = map_get(c, n, ps->key);
        if (!v) {
            if (ps->required)
                return fail(c, n, n ? field : "params", "%s needs parameter '%s'%s", os->name, ps->key,
                            n ? "" : " (no 'params' given)");
            continue;
        }
        yaml_node_t **items;
        size_t k;
        pjoin(p, sizeof p, field, ps->key);
        if (v->type == YAML_MAPPING_NODE)
            return fail(c, v, p, "expected a value or a list of values, got a mapping");
        if (as_list(c, v, p, 255, &items, &k))
            return c->st;
        qf_suite_param *pp = &g->params[g->nparams++];
        pp->key = ps->key;
        pp->where = where_of(c, v);
        pp->nvalues = k;
        pp->values = arena_alloc(c->A, k * sizeof *pp->values);
        if (!pp->values)
            return oom(c);
        for (size_t j = 0; j < k; j++) {
            const char *f = v->type == YAML_SEQUENCE_NODE ? pindex(q, sizeof q, p, j) : p;
            if (parse_pvalue(c, items[j], f, ps, &pp->values[j]))
                return c->st;
            for (size_t m = 0; m < j; m++)
                if (pp->values[m].i == pp->values[j].i && pp->values[m].r == pp->values[j].r &&
                    pp->values[m].s == pp->values[j].s)
                    return fail(c, items[j], f, "value appears twice");
        }
    }
    return QF_OK;
}

/* ---- Input distributions -------------------------------------------------------- */

static void fmt_real(char *buf, size_t size, double v)
{
    /* Integers as integers, else the shortest %g that reads back to the
     * same double: stable, readable ids. */
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, size, "%.0f", v == 0 ? 0.0 : v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static qf_status parse_input(ctx *c, yaml_node_t *n, const char *field, qf_suite_input *in)
{
    const char *s;
    char p[PATHSZ];
    yaml_node_t *nn = n;
    if (n->type == YAML_MAPPING_NODE) {
        /* The keys are checked below, once the distribution is known. */
        if (expect(c, n, YAML_MAPPING_NODE, field, "a mapping"))
            return c->st;
        nn = map_get(c, n, "name");
        if (!nn)
            return fail(c, n, field, "an input mapping needs 'name'");
    }
    if (scalar_text(c, nn, n == nn ? field : pjoin(p, sizeof p, field, "name"), &s))
        return c->st;
    const dist_schema *ds = NULL;
    for (size_t i = 0; dist_schemas[i].name; i++)
        if (!strcmp(s, dist_schemas[i].name))
            ds = &dist_schemas[i];
    if (!ds) {
        char valid[512];
        const char *names[32];
        size_t k = 0;
        for (size_t i = 0; dist_schemas[i].name; i++)
            names[k++] = dist_schemas[i].name;
        list_keys(valid, sizeof valid, names, k);
        return fail(c, nn, n == nn ? field : p, "unknown distribution '%.40s' (valid: %s)", s, valid);
    }
    in->name = ds->name;
    const char *keys[16];
    size_t nk = 0;
    keys[nk++] = "name";
    for (size_t i = 0; ds->params[i].key; i++)
        keys[nk++] = ds->params[i].key;
    if (n->type == YAML_MAPPING_NODE && check_map(c, n, field, keys, nk))
        return c->st;
    in->keys = arena_alloc(c->A, nk * sizeof *in->keys);
    in->values = arena_alloc(c->A, nk * sizeof *in->values);
    in->texts = arena_alloc(c->A, nk * sizeof *in->texts);
    if (!in->keys || !in->values || !in->texts)
        return oom(c);
    char label[512];
    size_t used = (size_t)snprintf(label, sizeof label, "%s", ds->name);
    double lo = NAN, hi = NAN, rates = 0;
    for (size_t i = 0; ds->params[i].key; i++) {
        const pspec *ps = &ds->params[i];
        yaml_node_t *v = n->type == YAML_MAPPING_NODE ? map_get(c, n, ps->key) : NULL;
        pjoin(p, sizeof p, field, ps->key);
        if (!strncmp(ps->key, "rate_", 5) && !v)
            rates += ps->def;
        if (!v) {
            if (ps->required)
                return fail(c, n, field, "distribution '%s' needs '%s'", ds->name, ps->key);
            continue;
        }
        char vb[64];
        const char *text;
        double num = NAN;
        if (ps->type == PT_PATH || ps->type == PT_TEXT) {
            if (parse_text(c, v, p, ps->type == PT_PATH ? 1000 : 255, &text))
                return c->st;
            if (!*text)
                return fail(c, v, p, "empty %s", ps->key);
            if (ps->type == PT_PATH && text[0] != '/' && c->dir && *c->dir) {
                char *full = arena_alloc(c->A, strlen(c->dir) + strlen(text) + 2);
                if (!full)
                    return oom(c);
                sprintf(full, "%s/%s", c->dir, text);
                text = full;
            }
            const char *base = ps->type == PT_PATH ? strrchr(text, '/') : NULL;
            base = base ? base + 1 : text;
            snprintf(vb, sizeof vb, "%.48s", base);
            /* '/', ',', ':' and '=' would break the id's structure */
            for (char *q = vb; *q; q++)
                if (*q == ',' || *q == '/' || *q == ':' || *q == '=' || *q == ' ')
                    *q = '_';
            if (ps->type == PT_PATH) {
                in->path = text;
            } else {
                in->tensor = text;
            }
        } else {
            qf_suite_value val;
            if (parse_pvalue(c, v, p, ps, &val))
                return c->st;
            if (ps->type == PT_ENUM) {
                snprintf(vb, sizeof vb, "%s", val.s);
            } else if (ps->type == PT_BOOL) {
                snprintf(vb, sizeof vb, "%s", val.i ? "true" : "false");
                num = val.r;
            } else {
                fmt_real(vb, sizeof vb, val.r);
                num = val.r;
            }
            if (!strcmp(ps->key, "lo"))
                lo = val.r;
            if (!strcmp(ps->key, "hi"))
                hi = val.r;
            if (!strncmp(ps->key, "rate_", 5))
                rates += val.r;
            /* the generator reads booleans as 0/1 */
            char tb[64];
            if (ps->type == PT_BOOL)
                snprintf(tb, sizeof tb, "%d", (int)val.i);
            else
                snprintf(tb, sizeof tb, "%s", vb);
            text = arena_strdup(c->A, tb);
            if (!text)
                return oom(c);
        }
        if (ps->type != PT_PATH) {
            /* path has its own field; the runner resolves it */
            in->keys[in->nparams] = ps->key;
            in->values[in->nparams] = num;
            in->texts[in->nparams++] = text;
        }
        if (used < sizeof label)
            used += (size_t)snprintf(label + used, sizeof label - used, "%s%s=%s",
                                     used == strlen(ds->name) ? ":" : ",", ps->key, vb);
    }
    if (!strcmp(ds->name, "uniform") || !strcmp(ds->name, "near_saturation")) {
        int u = ds->name[0] == 'u';
        double l = isnan(lo) ? (u ? -1 : 0.5) : lo, h = isnan(hi) ? 1 : hi;
        if (u ? !(l < h) : !(l <= h))
            return fail(c, n, field, "%s needs lo %s hi (lo %g, hi %g)", ds->name, u ? "<" : "<=", l, h);
    }
    if (rates > 1)
        return fail(c, n, field,
                    "rate_nan + rate_inf + rate_zero = %g exceeds 1 (an absent rate counts 0.01)", rates);
    in->label = arena_strdup(c->A, label);
    return in->label ? QF_OK : oom(c);
}

static qf_status parse_inputs(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g)
{
    static qf_suite_input def = {"normal", 0, NULL, NULL, NULL, "normal", NULL, NULL};
    char p[PATHSZ];
    if (!n) {
        g->inputs = &def;
        g->ninputs = 1;
        return QF_OK;
    }
    yaml_node_t **items;
    size_t k;
    if (as_list(c, n, field, 256, &items, &k))
        return c->st;
    g->inputs = arena_alloc(c->A, k * sizeof *g->inputs);
    if (!g->inputs)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (parse_input(c, items[i], f, &g->inputs[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(g->inputs[j].label, g->inputs[i].label))
                return fail(c, items[i], f, "input '%s' appears twice", g->inputs[i].label);
    }
    g->ninputs = k;
    return QF_OK;
}

/* ---- Seeds, sampling, policy, arch, kernels --------------------------------------- */

#define SEEDS_MAX 65536

static qf_status parse_seeds(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g)
{
    char p[PATHSZ];
    if (!n) {
        g->seeds = arena_alloc(c->A, sizeof *g->seeds);
        if (!g->seeds)
            return oom(c);
        g->nseeds = 1;
        return QF_OK;
    }
    if (n->type == YAML_SCALAR_NODE) {
        uint64_t k;
        if (parse_u64(c, n, field, 1, SEEDS_MAX, &k))
            return c->st;
        g->seeds = arena_alloc(c->A, k * sizeof *g->seeds);
        if (!g->seeds)
            return oom(c);
        for (uint64_t i = 0; i < k; i++)
            g->seeds[i] = i;
        g->nseeds = (size_t)k;
        return QF_OK;
    }
    if (expect(c, n, YAML_SEQUENCE_NODE, field, "a count or a list of seeds"))
        return c->st;
    yaml_node_t **items;
    size_t k;
    if (as_list(c, n, field, QF_SUITE_VALUES_MAX, &items, &k))
        return c->st;
    g->seeds = arena_alloc(c->A, k * sizeof *g->seeds);
    if (!g->seeds)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        if (parse_u64(c, items[i], pindex(p, sizeof p, field, i), 0, UINT64_MAX, &g->seeds[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (g->seeds[j] == g->seeds[i])
                return fail(c, items[i], p, "seed %llu appears twice", (unsigned long long)g->seeds[i]);
    }
    g->nseeds = k;
    return QF_OK;
}

static qf_status parse_sampling(ctx *c, yaml_node_t *n, const char *field, qf_suite_sampling *s)
{
    static const char *const keys[] = {"max_elements", "edges", "tile"};
    char p[PATHSZ];
    s->max_elements = 0;
    s->edges = 1;
    s->tile = 0;
    if (!n)
        return QF_OK;
    if (check_map(c, n, field, keys, 3))
        return c->st;
    yaml_node_t *v;
    if ((v = map_get(c, n, "max_elements")) &&
        parse_u64(c, v, pjoin(p, sizeof p, field, "max_elements"), 1, UINT64_MAX, &s->max_elements))
        return c->st;
    if ((v = map_get(c, n, "edges")) && parse_bool(c, v, pjoin(p, sizeof p, field, "edges"), &s->edges))
        return c->st;
    if ((v = map_get(c, n, "tile")) &&
        parse_u64(c, v, pjoin(p, sizeof p, field, "tile"), 1, QF_SUITE_DIM_MAX, &s->tile))
        return c->st;
    return QF_OK;
}

static qf_status parse_policy(ctx *c, yaml_node_t *n, const char *field, qf_suite_policy *pol)
{
    static const char *const keys[] = {"max_ulp",  "max_normwise",    "max_componentwise", "min_sqnr_db",
                                       "baseline", "baseline_factor", "false_failure",     "baseline_metric",
                                       "baseline_tol"};
    static const char *const metrics[] = {"max_abs", "rms", NULL};
    char p[PATHSZ];
    memset(pol, 0, sizeof *pol);
    pol->baseline_factor = 2;
    if (!n)
        return QF_OK;
    if (check_map(c, n, field, keys, 9))
        return c->st;
    static const struct {
        const char *key;
        unsigned bit;
        rrange r;
        size_t off;
    } reals[] = {
        {"max_ulp", QF_POLICY_MAX_ULP, {0, 1e30, 0, 0}, offsetof(qf_suite_policy, max_ulp)},
        {"max_normwise", QF_POLICY_MAX_NORMWISE, {0, 1e30, 0, 0}, offsetof(qf_suite_policy, max_normwise)},
        {"max_componentwise",
         QF_POLICY_MAX_COMPONENTWISE,
         {0, 1e30, 0, 0},
         offsetof(qf_suite_policy, max_componentwise)},
        {"min_sqnr_db", QF_POLICY_MIN_SQNR_DB, {-1000, 1000, 0, 0}, offsetof(qf_suite_policy, min_sqnr_db)},
        {"baseline_factor", QF_POLICY_BASELINE, {0, 1e6, 1, 0}, offsetof(qf_suite_policy, baseline_factor)},
        {"false_failure", QF_POLICY_FALSE_FAILURE, {0, 1, 1, 1}, offsetof(qf_suite_policy, false_failure)},
        {"baseline_tol", 0, {0, 1e30, 0, 0}, offsetof(qf_suite_policy, baseline_tol)},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        yaml_node_t *v = map_get(c, n, reals[i].key);
        if (!v)
            continue;
        if (parse_real(c, v, pjoin(p, sizeof p, field, reals[i].key), reals[i].r,
                       (double *)((char *)pol + reals[i].off)))
            return c->st;
        pol->set |= reals[i].bit;
    }
    yaml_node_t *bm = map_get(c, n, "baseline_metric");
    if (bm) {
        const char *sv = NULL;
        size_t i;
        if (scalar_text(c, bm, pjoin(p, sizeof p, field, "baseline_metric"), &sv))
            return c->st;
        for (i = 0; metrics[i] && strcmp(sv, metrics[i]); i++)
            ;
        if (!metrics[i])
            return fail(c, bm, pjoin(p, sizeof p, field, "baseline_metric"),
                        "unknown value '%s' (valid: max_abs, rms)", sv);
        pol->baseline_rms = i == 1;
    }
    yaml_node_t *b = map_get(c, n, "baseline");
    if (!b && (bm || map_get(c, n, "baseline_tol"))) {
        yaml_node_t *at = bm ? bm : map_get(c, n, "baseline_tol");
        return fail(c, at, pjoin(p, sizeof p, field, bm ? "baseline_metric" : "baseline_tol"),
                    "'%s' needs 'baseline' (the kernel to compare with)", bm ? "baseline_metric" : "baseline_tol");
    }
    if (b) {
        if (parse_name(c, b, pjoin(p, sizeof p, field, "baseline"), NULL, &pol->baseline))
            return c->st;
        pol->set |= QF_POLICY_BASELINE;
    } else if (map_get(c, n, "baseline_factor")) {
        return fail(c, map_get(c, n, "baseline_factor"), pjoin(p, sizeof p, field, "baseline_factor"),
                    "'baseline_factor' needs 'baseline' (the kernel to compare with)");
    }
    return QF_OK;
}

static qf_status parse_names(ctx *c, yaml_node_t *n, const char *field, const char *extra, const char ***out,
                             size_t *count)
{
    yaml_node_t **items;
    size_t k;
    char p[PATHSZ];
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a name or a list of names, got a mapping");
    if (as_list(c, n, field, 256, &items, &k))
        return c->st;
    *out = arena_alloc(c->A, k * sizeof **out);
    if (!*out)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (parse_name(c, items[i], f, extra, &(*out)[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp((*out)[i], (*out)[j]))
                return fail(c, items[i], f, "'%s' appears twice", (*out)[i]);
    }
    *count = k;
    return QF_OK;
}

/* The first component of the names of the kernels that compute a suite
 * op: kernels register under the ABI's ops (qf_kernel.h), where
 * log_softmax is a softmax and glu an activation. */
static const char *kernel_op_prefix(const char *suite_op)
{
    if (!strcmp(suite_op, "log_softmax"))
        return "softmax";
    if (!strcmp(suite_op, "glu"))
        return "activation";
    return suite_op;
}

static qf_status parse_kernels(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                               qf_suite_group *g)
{
    char p[PATHSZ];
    if (!n) {
        const char *kop = kernel_op_prefix(os->name);
        const char **k = arena_alloc(c->A, sizeof *k);
        char *s = arena_alloc(c->A, strlen(kop) + 3);
        if (!k || !s)
            return oom(c);
        sprintf(s, "%s.*", kop);
        k[0] = s;
        g->kernels = k;
        g->nkernels = 1;
        return QF_OK;
    }
    if (parse_names(c, n, field, "*?", &g->kernels, &g->nkernels))
        return c->st;
    /* Kernel names start with their kernel op ("gemm.cpu.naive.f32"), so a
     * glob whose literal first component names another op can never match. */
    for (size_t i = 0; i < g->nkernels; i++) {
        const char *k = g->kernels[i], *kop = kernel_op_prefix(os->name);
        size_t l = strcspn(k, ".");
        if (strcspn(k, "*?") >= l && (l != strlen(kop) || strncmp(k, kop, l) != 0)) {
            yaml_node_t *at = n->type == YAML_SEQUENCE_NODE ? seq_at(c, n, i) : n;
            return fail(c, at, n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field,
                        "kernel glob '%s' cannot match a %s kernel (kernel names start with '%s.')", k,
                        os->name, kop);
        }
    }
    return QF_OK;
}

/* ---- Groups ----------------------------------------------------------------------------- */

static const char *const group_keys[] = {"name",   "op",     "kernels", "dtypes",   "shapes", "workload",
                                         "params", "inputs", "seeds",   "sampling", "policy", "arch"};
#define NGROUP_KEYS (sizeof group_keys / sizeof group_keys[0])

static qf_status add_group(ctx *c, group_raw **out)
{
    if (c->ngroups == c->capgroups) {
        size_t cap = c->capgroups ? c->capgroups * 2 : 8;
        group_raw *v = realloc(c->groups, cap * sizeof *v);
        if (!v)
            return oom(c);
        c->groups = v;
        c->capgroups = cap;
    }
    *out = &c->groups[c->ngroups++];
    memset(*out, 0, sizeof **out);
    return QF_OK;
}

/* A group from its own mapping gm (NULL for the top-level group) with the
 * top-level mapping tm supplying the keys it does not set. */
static qf_status parse_group(ctx *c, yaml_node_t *gm, yaml_node_t *tm, const char *gpath)
{
    char p[PATHSZ];
    group_raw *gr = NULL;
    const char *gp = gm ? gpath : "";
#define PICK(key, pathvar)                                                                                   \
    (map_get(c, gm, key) ? (pjoin(pathvar, sizeof pathvar, gp, key), map_get(c, gm, key))                    \
                         : (pjoin(pathvar, sizeof pathvar, "", key), map_get(c, tm, key)))
    char pop[PATHSZ];
    yaml_node_t *nop = PICK("op", pop);
    yaml_node_t *at = gm ? gm : tm;
    if (!nop)
        return fail(c, at, gp, "missing 'op' (valid: %s)", op_list_text());
    const char *ops;
    if (scalar_text(c, nop, pop, &ops))
        return c->st;
    qf_suite_op op;
    if (qf_suite_op_lookup(ops, &op))
        return fail(c, nop, pop, "unknown op '%.40s' (valid: %s)", ops, op_list_text());
    const op_schema *os = &op_schemas[op];
    if (add_group(c, &gr))
        return c->st;
    qf_suite_group *g = &gr->g;
    g->op = op;
    g->where = where_of(c, at);
    yaml_node_t *v;
    if (gm && (v = map_get(c, gm, "name")) &&
        parse_name(c, v, pjoin(p, sizeof p, gp, "name"), NULL, &g->name))
        return c->st;
    v = PICK("kernels", p);
    if (parse_kernels(c, v, p, os, g))
        return c->st;
    v = PICK("dtypes", p);
    if (!v)
        return fail(c, at, gp, "missing 'dtypes' (one or more dtype tuples)");
    if (parse_dtypes(c, v, p, os, g))
        return c->st;
    char ps[PATHSZ], pw[PATHSZ];
    yaml_node_t *sh = PICK("shapes", ps), *wl = PICK("workload", pw);
    if (!sh && !wl)
        return fail(c, at, gp, "missing 'shapes' or 'workload'");
    /* Both come from the same mapping level or the paths would mislead. */
    if (sh && parse_shapes(c, sh, NULL, strrchr(ps, '.') ? gp : "", op, &gr->sets))
        return c->st;
    if (wl && parse_shapes(c, NULL, wl, strrchr(pw, '.') ? gp : "", op, &gr->sets))
        return c->st;
    v = PICK("params", p);
    if (parse_params(c, v, p, os, g))
        return c->st;
    v = PICK("inputs", p);
    if (parse_inputs(c, v, p, g))
        return c->st;
    v = PICK("seeds", p);
    if (parse_seeds(c, v, p, g))
        return c->st;
    v = PICK("sampling", p);
    if (parse_sampling(c, v, p, &g->sampling))
        return c->st;
    v = PICK("policy", p);
    if (parse_policy(c, v, p, &g->policy))
        return c->st;
    v = PICK("arch", p);
    if (v && parse_names(c, v, p, "*?", &g->arch, &g->narch))
        return c->st;
#undef PICK
    return QF_OK;
}

/* ---- Workloads ---------------------------------------------------------------------------- */

static qf_status parse_workloads(ctx *c, yaml_node_t *n)
{
    if (check_map(c, n, "workloads", NULL, 0))
        return c->st;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = get(c, pr->key), *v = get(c, pr->value);
        char p[PATHSZ], q[PATHSZ];
        const char *name;
        snprintf(p, sizeof p, "workloads.%.100s", (const char *)k->data.scalar.value);
        if (parse_name(c, k, p, NULL, &name))
            return c->st;
        for (size_t i = 0; i < c->nwl; i++)
            if (!strcmp(c->wl[i].name, name))
                return fail(c, k, p, "workload '%s' already defined at %s:%d:%d", name, c->wl[i].where.file,
                            c->wl[i].where.line, c->wl[i].where.col);
        static const char *const keys[] = {"op", "shapes", "source", "description"};
        if (check_map(c, v, p, keys, 4))
            return c->st;
        yaml_node_t *nop = map_get(c, v, "op"), *sh = map_get(c, v, "shapes");
        if (!nop)
            return fail(c, v, p, "a workload needs 'op'");
        if (!sh)
            return fail(c, v, p, "a workload needs 'shapes'");
        const char *ops, *txt;
        if (scalar_text(c, nop, pjoin(q, sizeof q, p, "op"), &ops))
            return c->st;
        qf_suite_op op;
        if (qf_suite_op_lookup(ops, &op))
            return fail(c, nop, q, "unknown op '%.40s' (valid: %s)", ops, op_list_text());
        yaml_node_t *t;
        if ((t = map_get(c, v, "source")) && parse_text(c, t, pjoin(q, sizeof q, p, "source"), 4096, &txt))
            return c->st;
        if ((t = map_get(c, v, "description")) &&
            parse_text(c, t, pjoin(q, sizeof q, p, "description"), 4096, &txt))
            return c->st;
        if (c->nwl == c->capwl) {
            size_t cap = c->capwl ? c->capwl * 2 : 16;
            workload *w = realloc(c->wl, cap * sizeof *w);
            if (!w)
                return oom(c);
            c->wl = w;
            c->capwl = cap;
        }
        workload *w = &c->wl[c->nwl++];
        memset(w, 0, sizeof *w);
        w->name = name;
        w->op = op;
        w->where = where_of(c, k);
        if (parse_shapes(c, sh, NULL, p, op, &w->sets))
            return c->st;
    }
    return QF_OK;
}

/* Flattens references: dst gets src's literal sets, references replaced by
 * the sets of the workload they name (recursively, cycles reported). */
static qf_status resolve(ctx *c, const raw_sets *src, qf_suite_op op, raw_sets *dst, int depth);

static qf_status resolve_ref(ctx *c, const raw_set *r, qf_suite_op op, raw_sets *dst, int depth)
{
    const qf_suite_where *w = &r->set.where;
    workload *wl = NULL;
    for (size_t i = 0; i < c->nwl; i++)
        if (!strcmp(c->wl[i].name, r->ref))
            wl = &c->wl[i];
    if (!wl) {
        char names[1024];
        size_t used = 0;
        names[0] = 0;
        for (size_t i = 0; i < c->nwl && used + 2 < sizeof names; i++) {
            int k = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", c->wl[i].name);
            used += k > 0 ? (size_t)k : 0;
        }
        return fail_at(c, w->file, w->line, w->col, "workload", "unknown workload '%s' (defined: %s)", r->ref,
                       c->nwl ? names : "none; define them under 'workloads:' or include a file that does");
    }
    if (wl->op != op)
        return fail_at(c, w->file, w->line, w->col, "workload", "workload '%s' is a %s shape set, not %s",
                       wl->name, qf_suite_op_name(wl->op), qf_suite_op_name(op));
    if (wl->state == 1 || depth > 64)
        return fail_at(c, w->file, w->line, w->col, "workload", "workload '%s' refers to itself (cycle)",
                       wl->name);
    wl->state = 1;
    qf_status st = resolve(c, &wl->sets, op, dst, depth + 1);
    wl->state = 0;
    return st;
}

static qf_status resolve(ctx *c, const raw_sets *src, qf_suite_op op, raw_sets *dst, int depth)
{
    for (size_t i = 0; i < src->n; i++) {
        const raw_set *r = &src->v[i];
        if (r->ref) {
            if (resolve_ref(c, r, op, dst, depth))
                return c->st;
            continue;
        }
        raw_set *o;
        if (dst->n >= QF_SUITE_VALUES_MAX)
            return fail_at(c, r->set.where.file, r->set.where.line, r->set.where.col, "shapes",
                           "more than %d shape sets", QF_SUITE_VALUES_MAX);
        if (sets_push(c, dst, &o))
            return c->st;
        *o = *r;
    }
    return QF_OK;
}

/* ---- Files and includes ------------------------------------------------------------------ */

static qf_status load_doc(ctx *c, const char *buf, size_t len, const char *name, const char *key);

static qf_status read_file(ctx *c, const char *path, const char *shown, char **buf, size_t *len,
                           const yaml_node_t *from, const char *field)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    char msg[512];
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (off_t)QF_SUITE_FILE_MAX) {
        if (!f)
            snprintf(msg, sizeof msg, "cannot open '%s': %s", shown, strerror(errno));
        else if (!S_ISREG(sb.st_mode))
            snprintf(msg, sizeof msg, "'%s' is not a regular file", shown);
        else
            snprintf(msg, sizeof msg, "'%s' is larger than %u bytes", shown, QF_SUITE_FILE_MAX);
        if (f)
            fclose(f);
        if (from)
            return fail(c, from, field, "%s", msg);
        if (c->err && c->errsize)
            snprintf(c->err, c->errsize, "%s", msg);
        return c->st = QF_EIO;
    }
    *len = (size_t)sb.st_size;
    *buf = malloc(*len + 1);
    if (!*buf) {
        fclose(f);
        return oom(c);
    }
    if (fread(*buf, 1, *len, f) != *len) {
        free(*buf);
        fclose(f);
        if (from)
            return fail(c, from, field, "cannot read '%s'", shown);
        if (c->err && c->errsize)
            snprintf(c->err, c->errsize, "%s: read error", shown);
        return c->st = QF_EIO;
    }
    fclose(f);
    return QF_OK;
}

static const char *dir_of(ctx *c, const char *path)
{
    const char *sl = strrchr(path, '/');
    if (!sl)
        return "";
    if (sl == path)
        return "/";
    return arena_strndup(c->A, path, (size_t)(sl - path));
}

static qf_status do_include(ctx *c, yaml_node_t *n, const char *field)
{
    const char *rel;
    if (parse_text(c, n, field, 4096, &rel))
        return c->st;
    if (!*rel)
        return fail(c, n, field, "empty include path");
    char *path = arena_alloc(c->A, strlen(c->dir) + strlen(rel) + 2);
    if (!path)
        return oom(c);
    if (rel[0] == '/' || !*c->dir)
        strcpy(path, rel);
    else
        sprintf(path, "%s/%s", c->dir, rel);
    if (c->depth >= QF_SUITE_INCLUDE_DEPTH)
        return fail(c, n, field, "includes nested deeper than %d", QF_SUITE_INCLUDE_DEPTH);
    char *real = realpath(path, NULL);
    const char *key = real ? arena_strdup(c->A, real) : path;
    free(real);
    if (!key)
        return oom(c);
    for (int i = 0; i <= c->depth; i++) {
        if (c->keys[i] && !strcmp(c->keys[i], key)) {
            char chain[1024];
            size_t used = 0;
            for (int j = i; j <= c->depth && used < sizeof chain; j++)
                used += (size_t)snprintf(chain + used, sizeof chain - used, "%s -> ", c->chain[j]);
            if (used < sizeof chain)
                snprintf(chain + used, sizeof chain - used, "%s", path);
            return fail(c, n, field, "include cycle: %s", chain);
        }
    }
    /* A file reached twice without a cycle (two files both including
     * workloads.yaml) is read once, as C's include guards would have it. */
    for (size_t i = 0; i < c->nloaded; i++)
        if (!strcmp(c->loaded[i], key))
            return QF_OK;
    char *buf;
    size_t len;
    if (read_file(c, path, path, &buf, &len, n, field))
        return c->st;
    /* Save the including file's position; the include runs in a nested
     * document of its own. */
    const char *sfile = c->file, *sdir = c->dir;
    yaml_document_t *sdoc = c->doc;
    c->depth++;
    qf_status st = load_doc(c, buf, len, path, key);
    c->depth--;
    c->file = sfile;
    c->dir = sdir;
    c->doc = sdoc;
    free(buf);
    return st;
}

static qf_status process_root(ctx *c, yaml_node_t *root, qf_suite *s)
{
    const char *keys[NGROUP_KEYS + 6];
    size_t nk = 0;
    keys[nk++] = "suite";
    keys[nk++] = "description";
    keys[nk++] = "include";
    keys[nk++] = "workloads";
    keys[nk++] = "groups";
    for (size_t i = 1; i < NGROUP_KEYS; i++) /* "name" is per group; the suite's is 'suite' */
        keys[nk++] = group_keys[i];
    if (check_map(c, root, "", keys, nk))
        return c->st;
    yaml_node_t *v;
    const char *txt;
    char p[PATHSZ];
    if ((v = map_get(c, root, "suite")) && parse_name(c, v, "suite", NULL, &txt))
        return c->st;
    if (v && c->depth == 0)
        s->name = txt;
    if ((v = map_get(c, root, "description")) && parse_text(c, v, "description", 4096, &txt))
        return c->st;
    if (v && c->depth == 0)
        s->description = txt;
    if ((v = map_get(c, root, "include"))) {
        yaml_node_t **items;
        size_t k;
        if (v->type == YAML_MAPPING_NODE)
            return fail(c, v, "include", "expected a path or a list of paths, got a mapping");
        if (as_list(c, v, "include", 256, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++)
            if (do_include(c, items[i],
                           v->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, "include", i) : "include"))
                return c->st;
    }
    if ((v = map_get(c, root, "workloads")) && parse_workloads(c, v))
        return c->st;
    yaml_node_t *groups = map_get(c, root, "groups");
    if (groups) {
        yaml_node_t **items;
        size_t k;
        if (expect(c, groups, YAML_SEQUENCE_NODE, "groups", "a list of groups"))
            return c->st;
        if (as_list(c, groups, "groups", 4096, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++) {
            pindex(p, sizeof p, "groups", i);
            if (check_map(c, items[i], p, group_keys, NGROUP_KEYS) || parse_group(c, items[i], root, p))
                return c->st;
        }
        return QF_OK;
    }
    /* Without 'groups', top-level group keys make the file one group. */
    for (size_t i = 1; i < NGROUP_KEYS; i++)
        if (map_get(c, root, group_keys[i]))
            return parse_group(c, NULL, root, "");
    return QF_OK;
}

/* libyaml's scanner takes time quadratic in the nesting depth of flow
 * collections ("[[[[...": 20000 levels take a second), so the depth is
 * bounded before libyaml sees the text.  The scan follows YAML's quoting
 * and comments closely enough that brackets inside strings neither hide
 * nor fake nesting; the schema needs a depth of 4. */
#define FLOW_DEPTH_MAX 64

static qf_status flow_depth_check(ctx *c, const char *buf, size_t len)
{
    int depth = 0, line = 1, col = 1;
    char prev = '\n';
    for (size_t i = 0; i < len; i++, col++) {
        char ch = buf[i];
        int token_start = prev == '\n' || prev == ' ' || prev == '\t' || prev == '[' || prev == '{' ||
                          prev == ',' || prev == ':';
        if (ch == '\n') {
            line++;
            col = 0;
        } else if (ch == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
            while (i + 1 < len && buf[i + 1] != '\n')
                i++;
        } else if ((ch == '"' || ch == '\'') && token_start) {
            /* skip the quoted scalar (it may span lines) */
            for (i++; i < len; i++) {
                col++;
                if (buf[i] == '\n') {
                    line++;
                    col = 0;
                } else if (ch == '"' && buf[i] == '\\') {
                    i++;
                    col++;
                } else if (buf[i] == ch) {
                    if (ch == '\'' && i + 1 < len && buf[i + 1] == '\'') {
                        i++;
                        col++;
                        continue;
                    }
                    break;
                }
            }
        } else if (ch == '[' || ch == '{') {
            if (++depth > FLOW_DEPTH_MAX)
                return fail_at(c, c->file, line, col, NULL, "collections nested deeper than %d levels",
                               FLOW_DEPTH_MAX);
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
        prev = i < len ? buf[i] : 0;
    }
    return QF_OK;
}

static qf_status load_doc(ctx *c, const char *buf, size_t len, const char *name, const char *key)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    qf_status st = QF_OK;
    c->file = arena_strdup(c->A, name);
    c->dir = c->file ? dir_of(c, c->file) : NULL;
    if (!c->file || !c->dir)
        return oom(c);
    c->chain[c->depth] = c->file;
    c->keys[c->depth] = key;
    if (c->nloaded == c->caploaded) {
        size_t cap = c->caploaded ? c->caploaded * 2 : 8;
        const char **v = realloc(c->loaded, cap * sizeof *v);
        if (!v)
            return oom(c);
        c->loaded = v;
        c->caploaded = cap;
    }
    c->loaded[c->nloaded++] = key;
    if (len > QF_SUITE_FILE_MAX) {
        if (c->err && c->errsize)
            snprintf(c->err, c->errsize, "%s: larger than %u bytes", name, QF_SUITE_FILE_MAX);
        return c->st = QF_EPARSE;
    }
    if (flow_depth_check(c, buf, len))
        return c->st;
    if (!yaml_parser_initialize(&parser))
        return oom(c);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, &doc)) {
        const char *what = parser.problem ? parser.problem : "malformed YAML";
        fail_at(c, c->file, (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1, NULL,
                "YAML syntax: %s%s%s", what, parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return c->st;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        st = fail_at(c, c->file, 1, 1, NULL, "empty suite file (expected a mapping)");
    } else {
        /* A second document in the stream is a mistake, not something to ignore. */
        yaml_document_t doc2;
        if (!yaml_parser_load(&parser, &doc2)) {
            st = fail_at(c, c->file, (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
                         NULL, "YAML syntax: %s", parser.problem ? parser.problem : "malformed YAML");
        } else {
            if (yaml_document_get_root_node(&doc2)) {
                yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
                st = fail_at(c, c->file, (int)r2->start_mark.line + 1, (int)r2->start_mark.column + 1, NULL,
                             "more than one YAML document (a suite file holds one)");
            }
            yaml_document_delete(&doc2);
        }
    }
    yaml_parser_delete(&parser);
    if (st == QF_OK) {
        c->doc = &doc;
        st = process_root(c, root, c->out);
    }
    yaml_document_delete(&doc);
    return st;
}

/* ---- Loading: the entry points ------------------------------------------------------------ */

static qf_status finish(ctx *c, qf_suite *s)
{
    /* Resolve every group's workload references, then move the groups and
     * the workload names into the arena. */
    s->groups = arena_alloc(c->A, (c->ngroups ? c->ngroups : 1) * sizeof *s->groups);
    s->workloads = arena_alloc(c->A, (c->nwl ? c->nwl : 1) * sizeof *s->workloads);
    if (!s->groups || !s->workloads)
        return oom(c);
    for (size_t i = 0; i < c->nwl; i++) {
        raw_sets flat = {0, 0, NULL};
        /* Resolving each workload once reports unknown or cyclic references
         * even when no group uses the workload. */
        c->wl[i].state = 1;
        if (resolve(c, &c->wl[i].sets, c->wl[i].op, &flat, 0))
            return c->st;
        c->wl[i].state = 0;
        s->workloads[i] = c->wl[i].name;
    }
    s->nworkloads = c->nwl;
    for (size_t i = 0; i < c->ngroups; i++) {
        raw_sets flat = {0, 0, NULL};
        qf_suite_group *g = &c->groups[i].g;
        if (resolve(c, &c->groups[i].sets, g->op, &flat, 0))
            return c->st;
        g->nsets = flat.n;
        g->sets = arena_alloc(c->A, (flat.n ? flat.n : 1) * sizeof *g->sets);
        if (!g->sets)
            return oom(c);
        for (size_t k = 0; k < flat.n; k++)
            g->sets[k] = flat.v[k].set;
        s->groups[i] = *g;
    }
    s->ngroups = c->ngroups;
    return QF_OK;
}

static qf_status load_common(const char *buf, size_t len, const char *name, const char *path, qf_suite **out,
                             char *err, size_t errsize)
{
    if (err && errsize)
        err[0] = 0;
    if (!out || !name || (!buf && !path))
        return QF_EINVAL;
    *out = NULL;
    ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.errsize = errsize;
    c.file = name;
    c.A = calloc(1, sizeof *c.A);
    if (!c.A)
        return oom(&c);
    qf_suite *s = arena_alloc(c.A, sizeof *s);
    if (!s) {
        arena_free(c.A);
        return oom(&c);
    }
    s->_arena = c.A;
    c.out = s;
    char *fbuf = NULL;
    qf_status st = QF_OK;
    if (path) {
        st = read_file(&c, path, name, &fbuf, &len, NULL, NULL);
        buf = fbuf;
    }
    if (st == QF_OK) {
        char *real = realpath(name, NULL);
        const char *key = real ? arena_strdup(c.A, real) : arena_strdup(c.A, name);
        free(real);
        st = key ? load_doc(&c, buf, len, name, key) : oom(&c);
    }
    free(fbuf);
    if (st == QF_OK)
        st = finish(&c, s);
    if (st == QF_OK) {
        s->path = arena_strdup(c.A, name);
        if (!s->name)
            s->name = s->path;
        if (!s->path)
            st = oom(&c);
    }
    free(c.groups);
    free(c.wl);
    free(c.loaded);
    if (st != QF_OK) {
        arena_free(c.A);
        return st;
    }
    *out = s;
    return QF_OK;
}

qf_status qf_suite_load(const char *path, qf_suite **out, char *err, size_t errsize)
{
    if (!path)
        return QF_EINVAL;
    return load_common(NULL, 0, path, path, out, err, errsize);
}

qf_status qf_suite_load_mem(const char *buf, size_t len, const char *name, qf_suite **out, char *err,
                            size_t errsize)
{
    if (!buf && len)
        return QF_EINVAL;
    return load_common(buf ? buf : "", len, name ? name : "<memory>", NULL, out, err, errsize);
}

void qf_suite_free(qf_suite *s)
{
    if (s)
        arena_free(s->_arena);
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

/* ---- Expansion --------------------------------------------------------------------------------- */

/* a * b, saturating at limit + 1 (products only need to be compared with
 * limits far below 2^64). */
static uint64_t mul_cap(uint64_t a, uint64_t b, uint64_t limit)
{
    if (a == 0 || b == 0)
        return 0;
    if (a > (limit + 1) / b + 1)
        return limit + 1;
    uint64_t r = a * b;
    return r > limit ? limit + 1 : r;
}

static qf_status set_count(ctx *c, const qf_suite_shape_set *ss, const op_schema *os, uint64_t *n)
{
    uint64_t k = 1;
    for (size_t d = 0; d < os->ndims; d++)
        k = mul_cap(k, ss->nvalues[d], QF_SUITE_CASES_MAX);
    *n = k;
    return QF_OK;
}

static qf_status group_count(ctx *c, const qf_suite_group *g, uint64_t *n)
{
    const op_schema *os = &op_schemas[g->op];
    uint64_t shapes = 0, k;
    for (size_t i = 0; i < g->nsets; i++) {
        set_count(c, &g->sets[i], os, &k);
        shapes += k;
        if (shapes > QF_SUITE_CASES_MAX)
            shapes = (uint64_t)QF_SUITE_CASES_MAX + 1;
    }
    k = mul_cap(shapes, g->ndtypes, QF_SUITE_CASES_MAX);
    for (size_t i = 0; i < g->nparams; i++)
        k = mul_cap(k, g->params[i].nvalues, QF_SUITE_CASES_MAX);
    k = mul_cap(k, g->ninputs, QF_SUITE_CASES_MAX);
    k = mul_cap(k, g->nseeds, QF_SUITE_CASES_MAX);
    *n = k;
    return QF_OK;
}

static qf_status total_count(ctx *c, const qf_suite *s, uint64_t *n)
{
    uint64_t t = 0, k;
    for (size_t i = 0; i < s->ngroups; i++) {
        group_count(c, &s->groups[i], &k);
        t += k;
        if (t > QF_SUITE_CASES_MAX) {
            const qf_suite_where *w = &s->groups[i].where;
            return fail_at(c, w->file, w->line, w->col, "shapes",
                           "the suite expands to more than %u cases (the limit; split the suite or use fewer "
                           "shapes, dtypes, inputs or seeds)",
                           QF_SUITE_CASES_MAX);
        }
    }
    *n = t;
    return QF_OK;
}

static const qf_suite_value *choice(const qf_suite_group *g, const uint8_t *ch, const char *key)
{
    for (size_t i = 0; i < g->nparams; i++)
        if (!strcmp(g->params[i].key, key))
            return &g->params[i].values[ch[i]];
    return NULL;
}

/* Checks of one shape across dimensions (and parameters that depend on a
 * dimension).  dims are resolved. */
static qf_status check_shape(ctx *c, const qf_suite_group *g, const qf_suite_shape_set *ss,
                             const uint64_t *dims, const uint8_t *ch)
{
    const op_schema *os = &op_schemas[g->op];
    const qf_suite_where *w = &ss->where;
    uint64_t work = 1;
    for (size_t d = 0; d < os->ndims; d++)
        work = mul_cap(work, dims[d], QF_SUITE_WORK_MAX);
    if (work > QF_SUITE_WORK_MAX) {
        char sh[256];
        size_t used = 0;
        for (size_t d = 0; d < os->ndims && used < sizeof sh; d++)
            used += (size_t)snprintf(sh + used, sizeof sh - used, "%s%s=%llu", d ? "," : "", os->dims[d].name,
                                     (unsigned long long)dims[d]);
        return fail_at(c, w->file, w->line, w->col, "shapes",
                       "shape %s is too large (product of dimensions above 2^56)", sh);
    }
    if (g->op == QF_SUITE_OP_ATTENTION) {
        if (dims[2] > dims[1] || dims[1] % dims[2] != 0)
            return fail_at(c, w->file, w->line, w->col, "shapes.kv_heads",
                           "heads (%llu) must be a multiple of kv_heads (%llu)", (unsigned long long)dims[1],
                           (unsigned long long)dims[2]);
    } else if (g->op == QF_SUITE_OP_ROPE) {
        const qf_suite_value *rd = choice(g, ch, "rotary_dim");
        if (dims[2] % 2)
            return fail_at(c, w->file, w->line, w->col, "shapes.head_dim",
                           "head_dim (%llu) must be even for rope", (unsigned long long)dims[2]);
        if (rd && ((uint64_t)rd->i > dims[2] || rd->i % 2))
            return fail_at(c, w->file, w->line, w->col, "params.rotary_dim",
                           "rotary_dim (%lld) must be even and at most head_dim (%llu)", (long long)rd->i,
                           (unsigned long long)dims[2]);
    } else if (g->op == QF_SUITE_OP_MOE_ROUTER) {
        const qf_suite_value *tk = choice(g, ch, "top_k");
        if (tk && (uint64_t)tk->i > dims[1])
            return fail_at(c, w->file, w->line, w->col, "params.top_k", "top_k (%lld) exceeds experts (%llu)",
                           (long long)tk->i, (unsigned long long)dims[1]);
    }
    return QF_OK;
}

static void value_text(char *buf, size_t size, const qf_suite_value *v)
{
    switch (v->type) {
    case QF_PARAM_BOOL: snprintf(buf, size, "%s", v->i ? "true" : "false"); break;
    case QF_PARAM_INT: snprintf(buf, size, "%lld", (long long)v->i); break;
    case QF_PARAM_REAL: fmt_real(buf, size, v->r); break;
    case QF_PARAM_ENUM: snprintf(buf, size, "%s", v->s); break;
    }
}

static size_t make_id(char *buf, size_t size, const qf_suite_group *g, const uint64_t *dims,
                      const qf_suite_dtype *dt, const uint8_t *ch, const qf_suite_input *in, uint64_t seed)
{
    const op_schema *os = &op_schemas[g->op];
    size_t u = 0;
#define ADD(...)                                                                                             \
    do {                                                                                                     \
        if (u < size)                                                                                        \
            u += (size_t)snprintf(buf + u, size - u, __VA_ARGS__);                                           \
    } while (0)
    if (g->name)
        ADD("%s:", g->name);
    ADD("%s/", os->name);
    int first = 1;
    for (size_t d = 0; d < os->ndims; d++) {
        const dim_spec *ds = &os->dims[d];
        /* An optional dimension at its default is left out, so adding a
         * dimension to the schema keeps old ids. */
        if (!ds->required && dims[d] == (ds->follows >= 0 ? dims[ds->follows] : ds->def))
            continue;
        ADD("%s%s=%llu", first ? "" : ",", ds->name, (unsigned long long)dims[d]);
        first = 0;
    }
    ADD("/%s", dt->label);
    for (size_t i = 0; i < g->nparams; i++) {
        char v[64];
        value_text(v, sizeof v, &g->params[i].values[ch[i]]);
        ADD("%s%s=%s", i ? "," : "/", g->params[i].key, v);
    }
    ADD("/%s/seed=%llu", in->label, (unsigned long long)seed);
#undef ADD
    return u;
}

typedef struct id_ref {
    const char *id;
    size_t group;
} id_ref;

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const id_ref *)a)->id, ((const id_ref *)b)->id);
}

/* Visits every case in the documented order; emit(NULL case) counts only. */
typedef struct expander {
    ctx *c;
    qf_suite_cases *out; /* NULL: check only */
    size_t n;
    char *ids;
    size_t ids_used, ids_cap;
} expander;

static qf_status emit(expander *e, const qf_suite_group *g, const uint64_t *dims, const qf_suite_dtype *dt,
                      const uint8_t *ch, const qf_suite_input *in, uint64_t seed)
{
    if (!e->out) {
        e->n++;
        return QF_OK;
    }
    char id[1024];
    size_t len = make_id(id, sizeof id, g, dims, dt, ch, in, seed);
    if (len >= sizeof id)
        len = sizeof id - 1;
    if (e->ids_used + len + 1 > e->ids_cap) {
        size_t cap = e->ids_cap ? e->ids_cap * 2 : 65536;
        while (cap < e->ids_used + len + 1)
            cap *= 2;
        char *v = realloc(e->ids, cap);
        if (!v)
            return oom(e->c);
        e->ids = v;
        e->ids_cap = cap;
    }
    memcpy(e->ids + e->ids_used, id, len + 1);
    qf_suite_case *k = &e->out->cases[e->n++];
    k->group = g;
    k->op = g->op;
    k->ndims = op_schemas[g->op].ndims;
    memcpy(k->dims, dims, sizeof k->dims);
    k->dtype = dt;
    memcpy(k->param_choice, ch, sizeof k->param_choice);
    k->input = in;
    k->seed = seed;
    k->id = (const char *)(uintptr_t)e->ids_used; /* offset until ids stop moving */
    e->ids_used += len + 1;
    return QF_OK;
}

static qf_status walk(expander *e, const qf_suite *s)
{
    ctx *c = e->c;
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const qf_suite_group *g = &s->groups[gi];
        const op_schema *os = &op_schemas[g->op];
        for (size_t di = 0; di < g->ndtypes; di++) {
            for (size_t si = 0; si < g->nsets; si++) {
                const qf_suite_shape_set *ss = &g->sets[si];
                size_t idx[QF_SUITE_MAX_DIMS] = {0};
                for (;;) {
                    uint64_t dims[QF_SUITE_MAX_DIMS] = {0};
                    for (size_t d = 0; d < os->ndims; d++)
                        dims[d] = ss->values[d][idx[d]];
                    for (size_t d = 0; d < os->ndims; d++)
                        if (dims[d] == 0 && os->dims[d].follows >= 0)
                            dims[d] = dims[os->dims[d].follows];
                    uint8_t ch[QF_SUITE_MAX_PARAMS] = {0};
                    for (;;) {
                        if (check_shape(c, g, ss, dims, ch))
                            return c->st;
                        for (size_t ii = 0; ii < g->ninputs; ii++)
                            for (size_t k = 0; k < g->nseeds; k++)
                                if (emit(e, g, dims, &g->dtypes[di], ch, &g->inputs[ii], g->seeds[k]))
                                    return c->st;
                        /* next parameter combination, last fastest */
                        size_t p = g->nparams;
                        while (p > 0) {
                            p--;
                            if (++ch[p] < g->params[p].nvalues)
                                break;
                            ch[p] = 0;
                            if (p == 0) {
                                p = SIZE_MAX;
                                break;
                            }
                        }
                        if (g->nparams == 0 || p == SIZE_MAX)
                            break;
                    }
                    /* next shape in the set, last dimension fastest */
                    size_t d = os->ndims;
                    int done = 1;
                    while (d > 0) {
                        d--;
                        if (++idx[d] < ss->nvalues[d]) {
                            done = 0;
                            break;
                        }
                        idx[d] = 0;
                    }
                    if (done)
                        break;
                }
            }
        }
    }
    return QF_OK;
}

qf_status qf_suite_count(const qf_suite *s, uint64_t *n, char *err, size_t errsize)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.errsize = errsize;
    c.file = s ? s->path : "suite";
    if (err && errsize)
        err[0] = 0;
    if (!s || !n)
        return QF_EINVAL;
    uint64_t t;
    if (total_count(&c, s, &t))
        return c.st;
    expander e = {&c, NULL, 0, NULL, 0, 0};
    if (walk(&e, s))
        return c.st;
    *n = e.n;
    return QF_OK;
}

qf_status qf_suite_expand(const qf_suite *s, qf_suite_cases *out, char *err, size_t errsize)
{
    ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.errsize = errsize;
    c.file = s ? s->path : "suite";
    if (err && errsize)
        err[0] = 0;
    if (!s || !out)
        return QF_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t t;
    if (total_count(&c, s, &t))
        return c.st;
    out->cases = calloc(t ? t : 1, sizeof *out->cases);
    if (!out->cases)
        return oom(&c);
    expander e = {&c, out, 0, NULL, 0, 0};
    id_ref *refs = NULL;
    if (walk(&e, s))
        goto fail;
    out->n = e.n;
    out->_ids = e.ids;
    e.ids = NULL;
    for (size_t i = 0; i < out->n; i++)
        out->cases[i].id = out->_ids + (uintptr_t)out->cases[i].id;
    /* Ids name cases in reproducers, so two cases must never share one. */
    refs = malloc((out->n ? out->n : 1) * sizeof *refs);
    if (!refs) {
        oom(&c);
        goto fail;
    }
    for (size_t i = 0; i < out->n; i++) {
        refs[i].id = out->cases[i].id;
        refs[i].group = (size_t)(out->cases[i].group - s->groups);
    }
    qsort(refs, out->n, sizeof *refs, cmp_id);
    for (size_t i = 1; i < out->n; i++)
        if (!strcmp(refs[i].id, refs[i - 1].id)) {
            size_t a = refs[i - 1].group < refs[i].group ? refs[i - 1].group : refs[i].group;
            size_t b = refs[i - 1].group < refs[i].group ? refs[i].group : refs[i - 1].group;
            const qf_suite_where *wa = &s->groups[a].where, *wb = &s->groups[b].where;
            fail_at(&c, wb->file, wb->line, wb->col, a == b ? "groups" : "name",
                    "duplicate case id '%s' (also from the group at %s:%d:%d)%s", refs[i].id, wa->file,
                    wa->line, wa->col, a == b ? "" : "; give the groups distinct 'name's");
            goto fail;
        }
    free(refs);
    return QF_OK;
fail:
    free(refs);
    free(e.ids);
    qf_suite_cases_free(out);
    return c.st;
}

const qf_suite_case *qf_suite_cases_find(const qf_suite_cases *c, const char *id)
{
    if (!c || !id)
        return NULL;
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->cases[i].id, id))
            return &c->cases[i];
    return NULL;
}

void qf_suite_cases_free(qf_suite_cases *c)
{
    if (!c)
        return;
    free(c->cases);
    free(c->_ids);
    memset(c, 0, sizeof *c);
}

/* ---- Case accessors ------------------------------------------------------------------------ */

qf_status qf_suite_case_dim(const qf_suite_case *c, const char *name, uint64_t *out)
{
    if (!c || !name || !out || (unsigned)c->op >= QF_SUITE_OP_COUNT)
        return QF_EINVAL;
    const op_schema *os = &op_schemas[c->op];
    for (size_t d = 0; d < os->ndims; d++)
        if (!strcmp(os->dims[d].name, name)) {
            *out = c->dims[d];
            return QF_OK;
        }
    return QF_EINVAL;
}

qf_status qf_suite_case_param(const qf_suite_case *c, const char *key, qf_suite_value *out, int *is_default)
{
    if (!c || !key || !out || (unsigned)c->op >= QF_SUITE_OP_COUNT)
        return QF_EINVAL;
    const qf_suite_value *v = choice(c->group, c->param_choice, key);
    if (v) {
        *out = *v;
        if (is_default)
            *is_default = 0;
        return QF_OK;
    }
    for (const pspec *ps = op_schemas[c->op].params; ps->key; ps++) {
        if (strcmp(ps->key, key) != 0)
            continue;
        if (ps->required)
            return QF_EINVAL;
        memset(out, 0, sizeof *out);
        out->type = (qf_suite_ptype)ps->type;
        out->r = ps->def;
        out->i = (int64_t)ps->def;
        out->s = ps->def_s;
        if (is_default)
            *is_default = 1;
        return QF_OK;
    }
    return QF_EINVAL;
}

const qf_format *qf_suite_case_format(const qf_suite_case *c, const char *role)
{
    if (!c || !role || !c->dtype || (unsigned)c->op >= QF_SUITE_OP_COUNT)
        return NULL;
    const op_schema *os = &op_schemas[c->op];
    for (size_t r = 0; r < os->nroles; r++)
        if (!strcmp(os->roles[r], role))
            return c->dtype->role[r];
    return NULL;
}

/* Iterative glob with single backtracking point: linear in practice and
 * never exponential on hostile patterns like "a*a*a*a*b". */
int qf_suite_glob_match(const char *glob, const char *name)
{
    const char *g = glob, *n = name, *star = NULL, *mark = NULL;
    if (!glob || !name)
        return 0;
    while (*n) {
        if (*g == '*') {
            star = g++;
            mark = n;
        } else if (*g == '?' || *g == *n) {
            g++;
            n++;
        } else if (star) {
            g = star + 1;
            n = ++mark;
        } else {
            return 0;
        }
    }
    while (*g == '*')
        g++;
    return *g == 0;
}
