/* claim.c: the claim language (qf_claim.h, docs/claims.md): one table of
 * keys, read from the JSON of kernel workers and from YAML claim files,
 * and written back as YAML. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "_claim.h"
#include "_files.h"
#include "_yaml_limits.h"
#include "qf_claim.h"
#include "qf_format.h"
#include "qf_suite.h"

/* ---- Keys ------------------------------------------------------------------ */

typedef enum { K_INT, K_BOOL, K_REAL, K_FORMAT, K_ROUND, K_WORD, K_ORDER } key_type;

/* Words of the enumerated keys, in enum order ("" for values without a name). */
static const char *const w_fma[] = {"fused", "unfused", NULL};
static const char *const w_align[] = {"truncate", "floor", "nearest", NULL};
static const char *const w_acc[] = {"float", "int32", "int64", NULL};
static const char *const w_overflow[] = {"wrap", "saturate", NULL};
static const char *const w_act[] = {"op", "gelu_erf", "gelu_tanh", "silu_exp", "silu_sigmoid", NULL};
static const char *const w_det[] = {"flags", "none", "run-to-run", "thread-count-invariant", NULL};
static const char *const w_var[] = {"two_pass", "welford", NULL};
/* sum_order, the ABI 1 key: "any" was read as sequential (its bound). */
static const char *const w_sum[] = {"sequential", "pairwise", "splitk", NULL};
static const char *const w_order[] = {"sequential", "pairwise", "split", "blocked", "varies", "any", NULL};

typedef struct key_def {
    const char *name;
    key_type type;
    size_t off;
    const char *const *words;
} key_def;

#define F(field) offsetof(qf_arith_claim, field)
/* clang-format off */
static const key_def keys[] = {
    {"acc_format",            K_FORMAT, F(acc_format),            NULL},
    {"acc_frac_bits",         K_INT,    F(acc_frac_bits),         NULL},
    {"block_fma",             K_INT,    F(block_fma),             NULL},
    {"acc_round",             K_ROUND,  F(acc_round),             NULL},
    {"align_truncates",       K_BOOL,   F(align_truncates),       NULL},
    {"guard_bits",            K_INT,    F(guard_bits),            NULL},
    {"promote_interval",      K_INT,    F(promote_interval),      NULL},
    {"promote_format",        K_FORMAT, F(promote_format),        NULL},
    {"sum_order",             K_WORD,   F(sum_order),             w_sum},
    {"split_k",               K_INT,    F(split_k),               NULL},
    {"out_round",             K_ROUND,  F(out_round),             NULL},
    {"max_ulp",               K_REAL,   F(max_ulp),               NULL},
    {"elem_ulp",              K_REAL,   F(elem_ulp),              NULL},
    {"flush_subnormals",      K_BOOL,   F(flush_subnormals),      NULL},
    {"deterministic",         K_BOOL,   F(deterministic),         NULL},
    {"deterministic_threads", K_BOOL,   F(deterministic_threads), NULL},
    {"attn_kv_tile",          K_INT,    F(attn_kv_tile),          NULL},
    {"attn_p_format",         K_FORMAT, F(attn_p_format),         NULL},
    {"var_algo",              K_WORD,   F(var_algo),              w_var},
    /* ABI 3 */
    {"fma",                   K_WORD,   F(fma),                   w_fma},
    {"order",                 K_ORDER,  0,                        NULL},
    {"product_frac_bits",     K_INT,    F(product_frac_bits),     NULL},
    {"align_round",           K_WORD,   F(align_round),           w_align},
    {"accumulator",           K_WORD,   F(acc_kind),              w_acc},
    {"overflow",              K_WORD,   F(acc_overflow),          w_overflow},
    {"activation",            K_WORD,   F(act_formula),           w_act},
    {"math_abs_err",          K_REAL,   F(math_abs_err),          NULL},
    {"math_rel_err",          K_REAL,   F(math_rel_err),          NULL},
    {"determinism",           K_WORD,   F(determinism),           w_det},
};
/* clang-format on */
#undef F
#define NKEYS (sizeof keys / sizeof keys[0])

static const key_def *find_key(const char *name)
{
    size_t i;
    for (i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

static int word_index(const char *const *words, const char *s, size_t len)
{
    int i;
    for (i = 0; words[i]; i++)
        if (strlen(words[i]) == len && !strncasecmp(words[i], s, len))
            return i;
    return -1;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    long v;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "false")) {
        *out = !strcasecmp(s, "true");
        return 0;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < -1000000000L || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

/* ---- The order grammar: sequential | pairwise | any | split(S) |
 *      blocked(B, sequential|pairwise) | varies(ORDER, ...) ---------------- */

static const char *skip_ws(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* One order (no varies) at *pp; advances *pp. */
static int parse_one(const char **pp, qf_sum_spec *o, int allow_varies)
{
    const char *p = skip_ws(*pp), *w = p;
    int idx;
    while (isalpha((unsigned char)*p) || *p == '_' || *p == '-')
        p++;
    idx = word_index(w_order, w, (size_t)(p - w));
    if (idx < 0 || (idx == QF_SUM_VARIES && !allow_varies))
        return -1;
    o->order = (qf_sum_order)idx;
    o->param = 1;
    o->inner = QF_SUM_SEQUENTIAL;
    p = skip_ws(p);
    if (o->order == QF_SUM_SPLITK || o->order == QF_SUM_BLOCKED) {
        char *end;
        long v;
        if (*p++ != '(')
            return -1;
        v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1000000000L)
            return -1;
        o->param = (int)v;
        p = skip_ws(end);
        if (o->order == QF_SUM_BLOCKED) {
            const char *w2;
            if (*p++ != ',')
                return -1;
            p = skip_ws(p);
            w2 = p;
            while (isalpha((unsigned char)*p))
                p++;
            idx = word_index(w_order, w2, (size_t)(p - w2));
            if (idx != QF_SUM_SEQUENTIAL && idx != QF_SUM_PAIRWISE)
                return -1;
            o->inner = (qf_sum_order)idx;
            p = skip_ws(p);
        }
        if (*p++ != ')')
            return -1;
    }
    *pp = p;
    return 0;
}

static int parse_order(qf_arith_claim *c, const char *s)
{
    const char *p = s;
    qf_sum_spec o;
    if (parse_one(&p, &o, 1))
        return -1;
    if (o.order == QF_SUM_VARIES) {
        int n = 0;
        p = skip_ws(p);
        if (*p++ != '(')
            return -1;
        for (;;) {
            if (n == QF_SUM_VARIES_MAX || parse_one(&p, &c->sum_varies[n], 0))
                return -1;
            n++;
            p = skip_ws(p);
            if (*p == ')')
                break;
            if (*p++ != ',')
                return -1;
        }
        p++;
        c->n_varies = n;
    } else if (o.order == QF_SUM_SPLITK) {
        c->split_k = o.param;
    } else if (o.order == QF_SUM_BLOCKED) {
        c->sum_block = o.param;
        c->sum_inner = o.inner;
    }
    if (*skip_ws(p))
        return -1;
    c->sum_order = o.order;
    return 0;
}

static int spec_str(const qf_sum_spec *o, char *buf, size_t size)
{
    switch (o->order) {
    case QF_SUM_SPLITK: return snprintf(buf, size, "split(%d)", o->param);
    case QF_SUM_BLOCKED: return snprintf(buf, size, "blocked(%d, %s)", o->param, w_order[o->inner]);
    default: return snprintf(buf, size, "%s", (unsigned)o->order <= QF_SUM_ANY ? w_order[o->order] : "?");
    }
}

const char *qf_claim_order_str(const qf_arith_claim *c, char *buf, size_t size)
{
    qf_sum_spec o;
    size_t len;
    int i;
    if (!buf || !size)
        return buf;
    buf[0] = '\0';
    if (!c)
        return buf;
    if (c->sum_order != QF_SUM_VARIES) {
        o.order = c->sum_order;
        o.param = c->sum_order == QF_SUM_SPLITK ? c->split_k : c->sum_block;
        o.inner = c->sum_inner;
        spec_str(&o, buf, size);
        return buf;
    }
    snprintf(buf, size, "varies(");
    for (i = 0; i < c->n_varies && i < QF_SUM_VARIES_MAX; i++) {
        len = strlen(buf);
        if (i && len + 2 < size)
            strcat(buf, ", "), len += 2;
        spec_str(&c->sum_varies[i], buf + len, size - len);
    }
    len = strlen(buf);
    if (len + 1 < size)
        strcat(buf, ")");
    return buf;
}

/* ---- One key --------------------------------------------------------------- */

static int set_key(qf_arith_claim *c, const key_def *k, const char *v)
{
    char *base = (char *)c + k->off, *end;
    const qf_format *f;
    int i;
    switch (k->type) {
    case K_INT:
    case K_BOOL:
        if (parse_int(v, &i) || (k->type == K_BOOL && i != 0 && i != 1))
            return -1;
        *(int *)base = i;
        return 0;
    case K_REAL: {
        double d;
        errno = 0;
        d = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(d))
            return -1;
        *(double *)base = d;
        return 0;
    }
    case K_FORMAT:
        /* attn_p_format: "none" keeps P in the compute format (float64). */
        f = !strcmp(v, "none") && k->off == offsetof(qf_arith_claim, attn_p_format) ? qf_format_get(QF_FLOAT64)
                                                                                      : qf_format_lookup(v);
        if (!f)
            return -1;
        *(qf_format_id *)base = f->id;
        return 0;
    case K_ROUND: return qf_round_lookup(v, (qf_round *)base) == QF_OK ? 0 : -1;
    case K_WORD:
        if (k->words == w_sum && !strcmp(v, "any"))
            i = QF_SUM_SEQUENTIAL;
        else if (k->words == w_sum && !strcmp(v, "split_k"))
            i = QF_SUM_SPLITK;
        else if ((i = word_index(k->words, v, strlen(v))) < 0)
            return -1;
        if (k->words == w_det)
            qf_arith_claim_set_determinism(c, (qf_determinism)i);
        else
            *(int *)base = i; /* every enum of the claim is int-sized */
        return 0;
    case K_ORDER: return parse_order(c, v);
    }
    return -1;
}

qf_status qf_claim_set_key(qf_arith_claim *c, const char *key, const char *value)
{
    const key_def *k = key ? find_key(key) : NULL;
    if (!c || !value)
        return QF_EINVAL;
    return k && !set_key(c, k, value) ? QF_OK : QF_EPARSE;
}

/* ---- JSON (kernel workers) --------------------------------------------------- */

int _qf_claim_int(json_t *v, int *out)
{
    if (json_is_boolean(v))
        *out = json_is_true(v);
    else if (json_is_integer(v))
        *out = (int)json_integer_value(v);
    else
        return -1;
    return 0;
}

int _qf_claim_format(json_t *v, qf_format_id *out)
{
    const qf_format *f = json_is_string(v) ? qf_format_lookup(json_string_value(v)) : NULL;
    if (!f)
        return -1;
    *out = f->id;
    return 0;
}

int _qf_claim_field(qf_arith_claim *c, const char *key, json_t *v)
{
    const key_def *k = find_key(key);
    char buf[64];
    int i;
    if (!k)
        return -1;
    /* JSON types: numbers for numeric keys, strings for the others. */
    switch (k->type) {
    case K_INT:
    case K_BOOL:
        if (_qf_claim_int(v, &i) || (k->type == K_BOOL && i != 0 && i != 1))
            return -1;
        *(int *)((char *)c + k->off) = i;
        return 0;
    case K_REAL:
        if (!json_is_number(v))
            return -1;
        snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
        return set_key(c, k, buf);
    default: return json_is_string(v) ? set_key(c, k, json_string_value(v)) : -1;
    }
}

/* ---- YAML claim files ------------------------------------------------------- */

typedef struct rd {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t err_size;
    unsigned long nodes; /* walked in the file, an alias at each use */
} rd;

_Static_assert(QF_CLAIM_FILE_MAX == _QF_YAML_FILE_MAX, "a claim file may be as large as a suite file");

static qf_status fail(const rd *r, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->err && r->err_size)
        snprintf(r->err, r->err_size, "%s:%lu:%lu: %s%s%s%s", r->path, n ? (unsigned long)n->start_mark.line + 1 : 0,
                 n ? (unsigned long)n->start_mark.column + 1 : 0, key ? "key '" : "", key ? key : "",
                 key ? "': " : "", msg);
    return QF_EPARSE;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Count k more nodes walked; QF_OK, or the failure at n (the suites' limit,
 * _yaml_limits.h: aliases make a short file a long walk). */
static qf_status walked(rd *r, const yaml_node_t *n, const char *key, size_t k)
{
    r->nodes += k;
    if (r->nodes > _QF_YAML_NODE_LIMIT)
        return fail(r, n, key, "document too large (more than %lu nodes, aliases counted at each use)",
                    _QF_YAML_NODE_LIMIT);
    return QF_OK;
}

/* replay: "key: value" lines into out->replay (docs/claims.md "Replay
 * details"). */
static qf_status read_replay(rd *r, yaml_node_t *vn, qf_claim *out)
{
    static const char *const rk[] = {"first_term", "odd_even", "pairwise", "split_lanes", "order_map", NULL};
    yaml_node_pair_t *q;
    size_t pos = 0;
    if (vn->type != YAML_MAPPING_NODE)
        return fail(r, vn, "replay", "a mapping of %s, %s, %s, %s, %s", rk[0], rk[1], rk[2], rk[3], rk[4]);
    for (q = vn->data.mapping.pairs.start; q < vn->data.mapping.pairs.top; q++) {
        yaml_node_t *an = yaml_document_get_node(r->doc, q->key), *av = yaml_document_get_node(r->doc, q->value);
        const char *ak = scalar(an);
        yaml_node_item_t *it, one = q->value;
        int known = 0, many = av->type == YAML_SEQUENCE_NODE;
        for (size_t w = 0; ak && rk[w]; w++)
            known |= !strcmp(ak, rk[w]);
        if (!known)
            return fail(r, an, ak, "unknown replay key (docs/claims.md \"Replay details\")");
        for (it = many ? av->data.sequence.items.start : &one; it < (many ? av->data.sequence.items.top : &one + 1);
             it++) {
            const char *iv = scalar(yaml_document_get_node(r->doc, *it));
            int w = iv ? snprintf(out->replay + pos, sizeof out->replay - pos, "%s: %s\n", ak, iv) : -1;
            if (walked(r, av, ak, 1))
                return QF_EPARSE;
            if (w < 0 || (size_t)w >= sizeof out->replay - pos)
                return fail(r, av, ak, "a string (or a list of strings), %zu characters in all at most",
                            sizeof out->replay - 1);
            pos += (size_t)w;
        }
    }
    return QF_OK;
}

/* evidence: a list of strings, for humans. */
static qf_status read_evidence(rd *r, yaml_node_t *vn)
{
    yaml_node_item_t *it;
    if (vn->type != YAML_SEQUENCE_NODE)
        return fail(r, vn, "evidence", "a list of strings");
    for (it = vn->data.sequence.items.start; it < vn->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(r->doc, *it);
        if (walked(r, e, "evidence", 1))
            return QF_EPARSE;
        if (!scalar(e))
            return fail(r, e, "evidence", "a list of strings (this item is not a string)");
    }
    return QF_OK;
}

static qf_status read_claim(rd *r, yaml_node_t *m, qf_claim *out)
{
    yaml_node_pair_t *p;
    int have_version = 0;
    memset(out, 0, sizeof *out);
    out->arith = qf_arith_claim_default();
    out->line = (int)m->start_mark.line + 1;
    if (m->type != YAML_MAPPING_NODE)
        return fail(r, m, NULL,
                    "a claim must be a mapping (claim_version, kernel, dtype, op, arith, evidence)");
    for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(r->doc, p->key), *vn = yaml_document_get_node(r->doc, p->value);
        const char *k = scalar(kn), *v = scalar(vn);
        if (walked(r, kn, k, 2))
            return QF_EPARSE;
        if (!k)
            return fail(r, kn, NULL, "keys must be plain words");
        if (!strcmp(k, "claim_version")) {
            if (!v || strcmp(v, "1"))
                return fail(r, vn, k, "this qualify reads claim_version 1 (docs/claims.md \"Versioning\")");
            have_version = 1;
        } else if (!strcmp(k, "kernel") || !strcmp(k, "dtype")) {
            char *dst = !strcmp(k, "kernel") ? out->kernel : out->dtype;
            size_t size = !strcmp(k, "kernel") ? sizeof out->kernel : sizeof out->dtype;
            if (!v || !*v || strlen(v) >= size)
                return fail(r, vn, k, "a name or glob of fewer than %zu characters", size);
            strcpy(dst, v);
        } else if (!strcmp(k, "op")) {
            qf_suite_op op;
            if (!v || qf_suite_op_lookup(v, &op) != QF_OK)
                return fail(r, vn, k, "not an op of the op table (qualify list ops)");
            snprintf(out->op, sizeof out->op, "%s", v);
        } else if (!strcmp(k, "evidence")) {
            if (read_evidence(r, vn))
                return QF_EPARSE;
        } else if (!strcmp(k, "replay")) {
            if (read_replay(r, vn, out))
                return QF_EPARSE;
        } else if (!strcmp(k, "arith")) {
            yaml_node_pair_t *q;
            if (vn->type != YAML_MAPPING_NODE)
                return fail(r, vn, k, "a mapping of claim keys (docs/claims.md)");
            for (q = vn->data.mapping.pairs.start; q < vn->data.mapping.pairs.top; q++) {
                yaml_node_t *an = yaml_document_get_node(r->doc, q->key), *av = yaml_document_get_node(r->doc, q->value);
                const char *ak = scalar(an), *aval = scalar(av);
                const key_def *kd = ak ? find_key(ak) : NULL;
                if (walked(r, an, ak, 2))
                    return QF_EPARSE;
                if (!kd)
                    return fail(r, an, ak, "unknown claim key (docs/claims.md lists them)");
                if (!aval || set_key(&out->arith, kd, aval))
                    return fail(r, av, ak, "bad value '%s'", aval ? aval : "(not a scalar)");
            }
            if (qf_arith_claim_check(&out->arith) != QF_OK)
                return fail(r, vn, k, "the claim is out of its domain (qf_arith_claim_check, docs/claims.md)");
        } else {
            return fail(r, kn, k, "unknown key (claim_version, kernel, dtype, op, arith, replay, evidence)");
        }
    }
    if (!have_version)
        return fail(r, m, "claim_version", "missing (claim_version: 1)");
    if (!out->kernel[0])
        return fail(r, m, "kernel", "missing");
    return QF_OK;
}

size_t qf_claim_apply(qf_registry *reg, const qf_claim *c, const char *origin)
{
    qf_suite_op op;
    size_t i, n = 0;
    if (!c || !c->op[0])
        return c ? qf_registry_set_claim(reg, c->kernel, c->dtype, &c->arith, origin) : 0;
    if (qf_suite_op_lookup(c->op, &op) != QF_OK)
        return 0;
    /* Kernel names hold no glob characters (qf_registry_add): each one
     * names itself alone. */
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        if (k->op == qf_suite_op_kernel_op(op) && qf_kernel_glob(c->kernel, k->name))
            n += qf_registry_set_claim(reg, k->name, c->dtype, &c->arith, origin);
    }
    return n;
}

static qf_status add_claims(rd *r, yaml_node_t *root, qf_claim_set *out)
{
    yaml_node_item_t *it;
    size_t n = root->type == YAML_SEQUENCE_NODE
                   ? (size_t)(root->data.sequence.items.top - root->data.sequence.items.start)
                   : 1;
    qf_claim *c;
    qf_status s;
    if (n > QF_CLAIM_CLAIMS_MAX - out->n)
        return fail(r, root, NULL, "more than %d claims in the file (docs/claims.md \"Errors\")",
                    QF_CLAIM_CLAIMS_MAX);
    if (!(c = realloc(out->claims, (out->n + n) * sizeof *c)))
        return QF_ENOMEM;
    out->claims = c;
    if (root->type != YAML_SEQUENCE_NODE) {
        if ((s = read_claim(r, root, &c[out->n])) == QF_OK)
            out->n++;
        return s;
    }
    for (it = root->data.sequence.items.start; it < root->data.sequence.items.top; it++) {
        if ((s = read_claim(r, yaml_document_get_node(r->doc, *it), &c[out->n])) != QF_OK)
            return s;
        out->n++;
    }
    return QF_OK;
}

qf_status qf_claim_file_load(const char *path, qf_claim_set *out, char *err, size_t err_size)
{
    yaml_parser_t parser;
    qf_status s;
    rd r = {path, NULL, err, err_size, 0};
    char *buf;
    size_t len;
    _qf_yaml_where at;
    if (!path || !out)
        return QF_EINVAL;
    memset(out, 0, sizeof *out);
    /* A FIFO or device is refused before it is read (_files.h); the
     * limits of a suite file hold (_yaml_limits.h), the size before
     * anything is read, the depth before libyaml sees the text. */
    if ((s = _qf_yaml_read_file(path, QF_CLAIM_FILE_MAX, &buf, &len, err, err_size)) != QF_OK)
        return s;
    if (_qf_yaml_flow_depth(buf, len, _QF_YAML_FLOW_DEPTH_MAX, &at)) {
        if (err && err_size)
            snprintf(err, err_size, "%s:%d:%d: %s%s%scollections nested deeper than %d levels", path, at.line,
                     at.col, at.key[0] ? "key '" : "", at.key, at.key[0] ? "': " : "", _QF_YAML_FLOW_DEPTH_MAX);
        free(buf);
        return QF_EPARSE;
    }
    if (!(out->path = strdup(path)) || !yaml_parser_initialize(&parser)) {
        free(buf);
        free(out->path);
        out->path = NULL;
        return QF_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    while (s == QF_OK) {
        yaml_document_t doc;
        yaml_node_t *root;
        if (!yaml_parser_load(&parser, &doc)) {
            snprintf(err, err_size, "%s:%lu:%lu: %s", path, (unsigned long)parser.problem_mark.line + 1,
                     (unsigned long)parser.problem_mark.column + 1, parser.problem ? parser.problem : "bad YAML");
            s = QF_EPARSE;
            break;
        }
        root = yaml_document_get_root_node(&doc);
        if (!root) {
            yaml_document_delete(&doc);
            break; /* end of the stream */
        }
        r.doc = &doc;
        s = add_claims(&r, root, out);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(buf);
    if (s == QF_OK && out->n == 0) {
        snprintf(err, err_size, "%s: no claim in the file", path);
        s = QF_EPARSE;
    }
    if (s != QF_OK)
        qf_claim_set_free(out);
    return s;
}

void qf_claim_set_free(qf_claim_set *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->claims);
    memset(s, 0, sizeof *s);
}

/* ---- Writing ------------------------------------------------------------------ */

static int emit_scalar(yaml_emitter_t *e, const char *s)
{
    yaml_event_t ev;
    return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                        YAML_ANY_SCALAR_STYLE) &&
           yaml_emitter_emit(e, &ev);
}

static int emit_pair(yaml_emitter_t *e, const char *k, const char *v)
{
    return emit_scalar(e, k) && emit_scalar(e, v);
}

static int emit_start(yaml_emitter_t *e, int mapping)
{
    yaml_event_t ev;
    return (mapping ? yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE)
                    : yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE)) &&
           yaml_emitter_emit(e, &ev);
}

static int emit_end(yaml_emitter_t *e, int mapping)
{
    yaml_event_t ev;
    return (mapping ? yaml_mapping_end_event_initialize(&ev) : yaml_sequence_end_event_initialize(&ev)) &&
           yaml_emitter_emit(e, &ev);
}

/* The text of one key's value in c. */
static void key_text(const qf_arith_claim *c, const key_def *k, char *buf, size_t size)
{
    const char *base = (const char *)c + k->off;
    const qf_format *f;
    int i;
    switch (k->type) {
    case K_INT: snprintf(buf, size, "%d", *(const int *)base); break;
    case K_BOOL: snprintf(buf, size, "%s", *(const int *)base ? "true" : "false"); break;
    case K_REAL: snprintf(buf, size, "%.17g", *(const double *)base); break;
    case K_FORMAT:
        f = qf_format_get(*(const qf_format_id *)base);
        snprintf(buf, size, "%s", f ? f->name : "?");
        break;
    case K_ROUND: snprintf(buf, size, "%s", qf_round_name(*(const qf_round *)base)); break;
    case K_WORD:
        i = k->words == w_det ? (int)qf_arith_claim_determinism(c) : *(const int *)base;
        if (k->words == w_sum && c->sum_order > QF_SUM_SPLITK)
            i = QF_SUM_SEQUENTIAL; /* the ABI 1 key cannot say it: `order` does */
        {
            int nw = 0;
            while (k->words[nw])
                nw++;
            snprintf(buf, size, "%s", i >= 0 && i < nw ? k->words[i] : "?");
        }
        break;
    case K_ORDER: qf_claim_order_str(c, buf, size); break;
    }
}

json_t *_qf_claim_json(const qf_arith_claim *c)
{
    json_t *o = json_object();
    char buf[128];
    size_t i;
    for (i = 0; o && i < NKEYS; i++) {
        const key_def *k = &keys[i];
        const char *base = (const char *)c + k->off;
        json_t *v;
        switch (k->type) {
        case K_INT: v = json_integer(*(const int *)base); break;
        case K_BOOL: v = json_boolean(*(const int *)base); break;
        case K_REAL: v = json_real(*(const double *)base); break;
        default: key_text(c, k, buf, sizeof buf); v = json_string(buf);
        }
        if (!v || json_object_set_new(o, k->name, v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static int yaml_out(void *data, unsigned char *buffer, size_t size)
{
    return fwrite(buffer, 1, size, (FILE *)data) == size;
}

qf_status qf_claim_write_yaml(FILE *f, const char *kernel, const char *dtype, const qf_arith_claim *c,
                              const char *const *evidence, size_t n_evidence)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    char buf[160];
    size_t i;
    int ok;
    if (!f || !kernel || !c || qf_arith_claim_check(c) != QF_OK)
        return QF_EINVAL;
    if (!yaml_emitter_initialize(&e))
        return QF_ENOMEM;
    yaml_emitter_set_output(&e, yaml_out, f);
    ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&e, &ev) &&
         yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0) && yaml_emitter_emit(&e, &ev) &&
         emit_start(&e, 1) && emit_pair(&e, "claim_version", "1") && emit_pair(&e, "kernel", kernel);
    if (ok && dtype && *dtype)
        ok = emit_pair(&e, "dtype", dtype);
    ok = ok && emit_scalar(&e, "arith") && emit_start(&e, 1);
    for (i = 0; ok && i < NKEYS; i++) {
        /* split_k says nothing apart from sum_order splitk; `order` says both. */
        key_text(c, &keys[i], buf, sizeof buf);
        ok = emit_pair(&e, keys[i].name, buf);
    }
    ok = ok && emit_end(&e, 1);
    if (ok && n_evidence) {
        ok = emit_scalar(&e, "evidence") && emit_start(&e, 0);
        for (i = 0; ok && i < n_evidence; i++)
            ok = emit_scalar(&e, evidence[i]);
        ok = ok && emit_end(&e, 0);
    }
    ok = ok && emit_end(&e, 1) && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
         yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev);
    yaml_emitter_delete(&e);
    return ok ? QF_OK : QF_EIO;
}
