/* suite_parse.c: reading suite YAML nodes: mappings and their keys,
 * scalars (integers, reals, booleans, names, text), dtype tuples, typed
 * parameters, input distributions, seeds, sampling, policy and kernels.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_suite.h"
#include "qf_inputs.h" /* QF_DIST_PATH_MAX */

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

qf_status _qf_suite_expect(ctx *c, const yaml_node_t *n, yaml_node_type_t t, const char *field,
                           const char *what)
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
qf_status _qf_suite_scalar_text(ctx *c, const yaml_node_t *n, const char *field, const char **out)
{
    if (_qf_suite_expect(c, n, YAML_SCALAR_NODE, field, "a scalar"))
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

qf_status _qf_suite_check_map(ctx *c, const yaml_node_t *m, const char *field, const char *const *keys,
                              size_t nkeys)
{
    if (_qf_suite_expect(c, m, YAML_MAPPING_NODE, field, "a mapping"))
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
        if (_qf_suite_scalar_text(c, k, field, &ks))
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
yaml_node_t *_qf_suite_map_get(ctx *c, const yaml_node_t *m, const char *key)
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

/* The decimal digits at p (the text s after its sign) into *v; an empty
 * or non-digit text is "expected WHAT", a value past 2^64 - 1 overflows. */
static qf_status digits(ctx *c, const yaml_node_t *n, const char *field, const char *s, const char *p,
                        const char *what, uint64_t *v)
{
    if (!*p)
        return fail(c, n, field, "expected an integer, got '%.40s'", s);
    for (*v = 0; *p; p++) {
        if (*p < '0' || *p > '9')
            return fail(c, n, field, "expected %s, got '%.40s'", what, s);
        if (*v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return fail(c, n, field, "integer '%.40s' overflows", s);
        *v = *v * 10 + (uint64_t)(*p - '0');
    }
    return QF_OK;
}

static qf_status parse_i64(ctx *c, const yaml_node_t *n, const char *field, int64_t lo, int64_t hi,
                           int64_t *out)
{
    const char *s;
    if (_qf_suite_scalar_text(c, n, field, &s))
        return c->st;
    if (!is_plain(n))
        return fail(c, n, field, "expected an integer, got the quoted string \"%.40s\"", s);
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    uint64_t v;
    if (digits(c, n, field, s, p, "an integer", &v))
        return c->st;
    if ((!neg && v > (uint64_t)hi) || (neg && (lo >= 0 ? v != 0 : v > (uint64_t)(-(lo + 1)) + 1)))
        return fail(c, n, field, "%.40s is out of range [%lld, %lld]", s, (long long)lo, (long long)hi);
    int64_t r = neg ? (v == 0 ? 0 : -(int64_t)(v - 1) - 1) : (int64_t)v;
    if (r < lo || r > hi)
        return fail(c, n, field, "%.40s is out of range [%lld, %lld]", s, (long long)lo, (long long)hi);
    *out = r;
    return QF_OK;
}

qf_status _qf_suite_parse_u64(ctx *c, const yaml_node_t *n, const char *field, uint64_t lo, uint64_t hi,
                              uint64_t *out)
{
    const char *s;
    if (_qf_suite_scalar_text(c, n, field, &s))
        return c->st;
    if (!is_plain(n))
        return fail(c, n, field, "expected an integer, got the quoted string \"%.40s\"", s);
    const char *p = s;
    if (*p == '+')
        p++;
    uint64_t v;
    if (digits(c, n, field, s, p, "a non-negative integer", &v))
        return c->st;
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
    if (_qf_suite_scalar_text(c, n, field, &s))
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

qf_status _qf_suite_parse_bool(ctx *c, const yaml_node_t *n, const char *field, int *out)
{
    const char *s;
    if (_qf_suite_scalar_text(c, n, field, &s))
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

qf_status _qf_suite_parse_name(ctx *c, const yaml_node_t *n, const char *field, const char *extra,
                               const char **out)
{
    const char *s;
    if (_qf_suite_scalar_text(c, n, field, &s))
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

qf_status _qf_suite_parse_text(ctx *c, const yaml_node_t *n, const char *field, size_t maxlen,
                               const char **out)
{
    const char *s;
    if (_qf_suite_scalar_text(c, n, field, &s))
        return c->st;
    if (strlen(s) > maxlen)
        return fail(c, n, field, "longer than %zu characters", maxlen);
    *out = arena_strdup(c->A, s);
    return *out ? QF_OK : oom(c);
}

/* workers: command lines, resolved by nothing (run with /bin/sh -c in the
 * current directory, docs/workers.md).  Only the top file may start
 * processes: an included file naming workers is an error, not a surprise. */
qf_status _qf_suite_parse_workers(ctx *c, yaml_node_t *n, qf_suite *s)
{
    yaml_node_t **items;
    size_t k;
    char p[64];
    if (c->depth > 0)
        return fail(c, n, "workers", "only the top suite file may name workers");
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, "workers", "expected a command line or a list of them, got a mapping");
    if (_qf_suite_as_list(c, n, "workers", QF_SUITE_MAX_WORKERS, &items, &k))
        return c->st;
    s->workers = arena_alloc(c->A, k * sizeof *s->workers);
    if (!s->workers)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        snprintf(p, sizeof p, "workers[%zu]", i);
        if (_qf_suite_parse_text(c, items[i], n->type == YAML_SEQUENCE_NODE ? p : "workers", 4096,
                                 &s->workers[i]))
            return c->st;
    }
    s->nworkers = k;
    return QF_OK;
}

/* A scalar or a list of scalars, as a list. */
qf_status _qf_suite_as_list(ctx *c, yaml_node_t *n, const char *field, size_t max, yaml_node_t ***items,
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
    if (_qf_suite_scalar_text(c, n, field, &s))
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
        if (_qf_suite_check_map(c, n, field, keys, nk))
            return c->st;
        yaml_node_t *in = strcmp(os->roles[0], "in") != 0 ? _qf_suite_map_get(c, n, "in") : NULL;
        const qf_format *fin = NULL;
        if (in && lookup_format(c, in, pjoin(p, sizeof p, field, "in"), &fin))
            return c->st;
        for (size_t r = 0; r < os->nroles; r++) {
            yaml_node_t *v = _qf_suite_map_get(c, n, os->roles[r]);
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
        yaml_node_t *sc = os->scales ? _qf_suite_map_get(c, n, "scale") : NULL;
        if (sc) {
            const char *s;
            if (_qf_suite_scalar_text(c, sc, pjoin(p, sizeof p, field, "scale"), &s))
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

qf_status _qf_suite_parse_dtypes(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                 qf_suite_group *g)
{
    yaml_node_t **items;
    size_t k;
    char p[PATHSZ];
    if (_qf_suite_as_list(c, n, field, 256, &items, &k))
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
        if (_qf_suite_parse_bool(c, n, field, &b))
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
        if (_qf_suite_scalar_text(c, n, field, &s))
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

qf_status _qf_suite_parse_params(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                 qf_suite_group *g)
{
    /* Zeroed: gcc 12 cannot see that spec_keys fills what check_map reads. */
    const char *keys[QF_SUITE_MAX_PARAMS + 1] = {0};
    size_t nk;
    char p[PATHSZ], q[PATHSZ];
    spec_keys(os->params, keys, &nk);
    if (n && _qf_suite_check_map(c, n, field, keys, nk))
        return c->st;
    g->params = arena_alloc(c->A, (nk ? nk : 1) * sizeof *g->params);
    if (!g->params)
        return oom(c);
    g->nparams = 0;
    for (size_t i = 0; i < nk; i++) {
        const pspec *ps = &os->params[i];
        yaml_node_t *v = _qf_suite_map_get(c, n, ps->key);
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
        if (_qf_suite_as_list(c, v, p, 255, &items, &k))
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

void _qf_suite_fmt_real(char *buf, size_t size, double v)
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

static qf_status parse_input(ctx *c, yaml_node_t *n, const char *field, qf_suite_op op, qf_suite_input *in);

/* The input slot names of op, comma-separated, for messages. */
static void slot_list(char *buf, size_t size, qf_op kop)
{
    const char *names[QF_KERNEL_MAX_IN];
    size_t k = 0;
    while (k < QF_KERNEL_MAX_IN && qf_op_slot_name(kop, 0, (int)k)) {
        names[k] = qf_op_slot_name(kop, 0, (int)k);
        k++;
    }
    list_keys(buf, size, names, k);
}

/* A mapping of the op's input slot names to distributions: each slot has
 * its own (file inputs of different shapes, a and b of a non-square
 * GEMM); the slots not named draw `normal`.  The label lists the named
 * slots in slot order, "a=file:path=A.npy+b=normal". */
static qf_status parse_slot_inputs(ctx *c, yaml_node_t *n, const char *field, qf_suite_op op,
                                   qf_suite_input *in)
{
    qf_op kop = qf_suite_op_kernel_op(op);
    const char *names[QF_KERNEL_MAX_IN];
    size_t k = 0, used = 0;
    char p[PATHSZ], label[1024];
    while (k < QF_KERNEL_MAX_IN && qf_op_slot_name(kop, 0, (int)k)) {
        names[k] = qf_op_slot_name(kop, 0, (int)k);
        k++;
    }
    if (_qf_suite_check_map(c, n, field, names, k))
        return c->st;
    qf_suite_input *slots = arena_alloc(c->A, k * sizeof *slots);
    in->slot_names = arena_alloc(c->A, k * sizeof *in->slot_names);
    if (!slots || !in->slot_names)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        yaml_node_t *v = _qf_suite_map_get(c, n, names[i]);
        if (!v)
            continue;
        pjoin(p, sizeof p, field, names[i]);
        if (v->type == YAML_MAPPING_NODE && !_qf_suite_map_get(c, v, "name"))
            return fail(c, v, p, "the input of slot '%s' needs 'name' (a distribution)", names[i]);
        if (parse_input(c, v, p, op, &slots[in->nslots]))
            return c->st;
        in->slot_names[in->nslots] = names[i];
        if (used < sizeof label)
            used += (size_t)snprintf(label + used, sizeof label - used, "%s%s=%s", in->nslots ? "+" : "",
                                     names[i], slots[in->nslots].label);
        in->nslots++;
    }
    if (!in->nslots)
        return fail(c, n, field, "an input mapping needs 'name' or the op's input slots as keys");
    if (used >= sizeof label)
        return fail(c, n, field, "the input's label is longer than %zu characters", sizeof label - 1);
    in->slots = slots;
    in->name = "normal"; /* what the slots not named draw */
    in->label = arena_strdup(c->A, label);
    return in->label ? QF_OK : oom(c);
}

static qf_status parse_input(ctx *c, yaml_node_t *n, const char *field, qf_suite_op op, qf_suite_input *in)
{
    const char *s;
    char p[PATHSZ];
    yaml_node_t *nn = n;
    if (n->type == YAML_MAPPING_NODE) {
        /* The keys are checked below, once the distribution is known. */
        if (_qf_suite_expect(c, n, YAML_MAPPING_NODE, field, "a mapping"))
            return c->st;
        nn = _qf_suite_map_get(c, n, "name");
        if (!nn && _qf_suite_check_map(c, n, field, NULL, 0))
            return c->st;
        if (!nn && n->data.mapping.pairs.start < n->data.mapping.pairs.top) {
            qf_op kop = qf_suite_op_kernel_op(op);
            const char *k0 = (const char *)get(c, n->data.mapping.pairs.start->key)->data.scalar.value;
            for (int i = 0; qf_op_slot_name(kop, 0, i); i++)
                if (!strcmp(k0, qf_op_slot_name(kop, 0, i)))
                    return parse_slot_inputs(c, n, field, op, in);
        }
        if (!nn) {
            char valid[256];
            slot_list(valid, sizeof valid, qf_suite_op_kernel_op(op));
            return fail(c, n, field,
                        "an input mapping needs 'name' (a distribution) or %s's input slots as keys (%s)",
                        qf_suite_op_name(op), valid);
        }
    }
    if (_qf_suite_scalar_text(c, nn, n == nn ? field : pjoin(p, sizeof p, field, "name"), &s))
        return c->st;
    const dist_schema *dists = _qf_suite_dist_schemas(), *ds = NULL;
    for (size_t i = 0; dists[i].name; i++)
        if (!strcmp(s, dists[i].name))
            ds = &dists[i];
    if (!ds) {
        char valid[512];
        const char *names[32];
        size_t k = 0;
        for (size_t i = 0; dists[i].name; i++)
            names[k++] = dists[i].name;
        list_keys(valid, sizeof valid, names, k);
        return fail(c, nn, n == nn ? field : p, "unknown distribution '%.40s' (valid: %s)", s, valid);
    }
    in->name = ds->name;
    const char *keys[16];
    size_t nk = 0;
    keys[nk++] = "name";
    for (size_t i = 0; ds->params[i].key; i++)
        keys[nk++] = ds->params[i].key;
    if (n->type == YAML_MAPPING_NODE && _qf_suite_check_map(c, n, field, keys, nk))
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
        yaml_node_t *v = n->type == YAML_MAPPING_NODE ? _qf_suite_map_get(c, n, ps->key) : NULL;
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
            if (_qf_suite_parse_text(c, v, p, ps->type == PT_PATH ? 1000 : 255, &text))
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
            /* The runner keeps it in qf_dist.path: refused, never cut (a cut
             * path would name another file). */
            if (ps->type == PT_PATH && strlen(text) >= QF_DIST_PATH_MAX)
                return fail(c, v, p, "the path is %zu bytes once resolved against the suite's folder, longer than %d",
                            strlen(text), QF_DIST_PATH_MAX - 1);
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
                _qf_suite_fmt_real(vb, sizeof vb, val.r);
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

qf_status _qf_suite_parse_inputs(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g)
{
    static qf_suite_input def = {.name = "normal", .label = "normal"};
    char p[PATHSZ];
    if (!n) {
        g->inputs = &def;
        g->ninputs = 1;
        return QF_OK;
    }
    yaml_node_t **items;
    size_t k;
    if (_qf_suite_as_list(c, n, field, 256, &items, &k))
        return c->st;
    g->inputs = arena_alloc(c->A, k * sizeof *g->inputs);
    if (!g->inputs)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (parse_input(c, items[i], f, g->op, &g->inputs[i]))
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

qf_status _qf_suite_parse_seeds(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g)
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
        if (_qf_suite_parse_u64(c, n, field, 1, SEEDS_MAX, &k))
            return c->st;
        g->seeds = arena_alloc(c->A, k * sizeof *g->seeds);
        if (!g->seeds)
            return oom(c);
        for (uint64_t i = 0; i < k; i++)
            g->seeds[i] = i;
        g->nseeds = (size_t)k;
        return QF_OK;
    }
    if (_qf_suite_expect(c, n, YAML_SEQUENCE_NODE, field, "a count or a list of seeds"))
        return c->st;
    yaml_node_t **items;
    size_t k;
    if (_qf_suite_as_list(c, n, field, QF_SUITE_VALUES_MAX, &items, &k))
        return c->st;
    g->seeds = arena_alloc(c->A, k * sizeof *g->seeds);
    if (!g->seeds)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        if (_qf_suite_parse_u64(c, items[i], pindex(p, sizeof p, field, i), 0, UINT64_MAX, &g->seeds[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (g->seeds[j] == g->seeds[i])
                return fail(c, items[i], p, "seed %llu appears twice", (unsigned long long)g->seeds[i]);
    }
    g->nseeds = k;
    return QF_OK;
}

/* Kernel thread counts (docs/suites.md#threads): a count or a list, each
 * in [1, QF_SUITE_THREADS_MAX], no repeats; default [1]. */
qf_status _qf_suite_parse_threads(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g)
{
    char p[PATHSZ];
    yaml_node_t **items;
    size_t k;
    if (!n) {
        if (!(g->threads = arena_alloc(c->A, sizeof *g->threads)))
            return oom(c);
        g->threads[0] = 1;
        g->nthreads = 1;
        return QF_OK;
    }
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a thread count or a list of them, got a mapping");
    if (_qf_suite_as_list(c, n, field, 64, &items, &k))
        return c->st;
    if (!(g->threads = arena_alloc(c->A, k * sizeof *g->threads)))
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        uint64_t v;
        if (_qf_suite_parse_u64(c, items[i], f, 1, QF_SUITE_THREADS_MAX, &v))
            return c->st;
        g->threads[i] = (uint32_t)v;
        for (size_t j = 0; j < i; j++)
            if (g->threads[j] == g->threads[i])
                return fail(c, items[i], f, "thread count %u appears twice", g->threads[i]);
    }
    g->nthreads = k;
    return QF_OK;
}

/* One pad of a layout token: "ld+N" or "batch+N" after its prefix. */
static int layout_pad(const char *t, uint32_t *pad)
{
    char *end;
    unsigned long v;
    if (*t < '1' || *t > '9')
        return -1;
    v = strtoul(t, &end, 10);
    if (*end || v > QF_SUITE_LAYOUT_PAD_MAX)
        return -1;
    *pad = (uint32_t)v;
    return 0;
}

/* One layout: "dense", or comma-separated tokens "col", "ld+N", "batch+N",
 * each at most once, in any order; the label is written in canonical order
 * (col, ld, batch). */
static qf_status parse_layout(ctx *c, yaml_node_t *n, const char *f, const op_schema *os, qf_suite_layout *L)
{
    const char *text, *t;
    char lab[64], tok[32], drives[64];
    memset(L, 0, sizeof *L);
    if (_qf_suite_scalar_text(c, n, f, &text))
        return c->st;
    if (!strcmp(text, "dense")) {
        L->label = "dense";
        return QF_OK;
    }
    for (t = text; *t;) {
        size_t k = strcspn(t, ",");
        uint32_t bit = 0;
        if (k == 0 || k >= sizeof tok)
            return fail(c, n, f, "malformed layout '%.40s' (dense, or col, ld+N, batch+N joined by ',')", text);
        memcpy(tok, t, k);
        tok[k] = '\0';
        if (!strcmp(tok, "col"))
            bit = QF_LAYOUT_COL, L->col = 1;
        else if (!strncmp(tok, "ld+", 3) && !layout_pad(tok + 3, &L->ld_pad))
            bit = QF_LAYOUT_LD;
        else if (!strncmp(tok, "batch+", 6) && !layout_pad(tok + 6, &L->batch_pad))
            bit = QF_LAYOUT_BATCH;
        else
            return fail(c, n, f,
                        "unknown layout part '%s' (valid: dense, or col, ld+N, batch+N joined by ','; N in "
                        "1..%u)",
                        tok, QF_SUITE_LAYOUT_PAD_MAX);
        if (L->needs & bit)
            return fail(c, n, f, "layout '%.40s' names %s twice", text, qf_layout_name(bit));
        L->needs |= bit;
        t += k;
        if (*t == ',' && !*++t)
            return fail(c, n, f, "malformed layout '%.40s' (a trailing ',')", text);
    }
    if (L->needs & ~os->layouts)
        return fail(c, n, f, "op %s lays out its operands %s%s; layout '%.40s' is not driven for it", os->name,
                    os->layouts ? "as " : "", qf_layout_text(os->layouts, drives, sizeof drives), text);
    snprintf(lab, sizeof lab, "%s%s", L->col ? "col" : "", L->ld_pad && L->col ? "," : "");
    if (L->ld_pad)
        snprintf(lab + strlen(lab), sizeof lab - strlen(lab), "ld+%u", L->ld_pad);
    if (L->batch_pad)
        snprintf(lab + strlen(lab), sizeof lab - strlen(lab), "%sbatch+%u", L->col || L->ld_pad ? "," : "",
                 L->batch_pad);
    if (!(L->label = arena_strdup(c->A, lab)))
        return oom(c);
    return QF_OK;
}

/* Operand layouts (docs/suites.md#layouts): one or a list, no two the
 * same; default [dense]. */
qf_status _qf_suite_parse_layouts(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                  qf_suite_group *g)
{
    char p[PATHSZ];
    yaml_node_t **items;
    size_t k;
    if (!n) {
        if (!(g->layouts = arena_alloc(c->A, sizeof *g->layouts)))
            return oom(c);
        memset(g->layouts, 0, sizeof *g->layouts);
        g->layouts[0].label = "dense";
        g->nlayouts = 1;
        return QF_OK;
    }
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a layout or a list of them, got a mapping");
    if (_qf_suite_as_list(c, n, field, 64, &items, &k))
        return c->st;
    if (!(g->layouts = arena_alloc(c->A, k * sizeof *g->layouts)))
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (parse_layout(c, items[i], f, os, &g->layouts[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(g->layouts[j].label, g->layouts[i].label))
                return fail(c, items[i], f, "layout %s appears twice", g->layouts[i].label);
    }
    g->nlayouts = k;
    return QF_OK;
}

qf_status _qf_suite_parse_sampling(ctx *c, yaml_node_t *n, const char *field, qf_suite_sampling *s)
{
    static const char *const keys[] = {"max_elements", "edges", "tile"};
    char p[PATHSZ];
    s->max_elements = 0;
    s->edges = 1;
    s->tile = 0;
    if (!n)
        return QF_OK;
    if (_qf_suite_check_map(c, n, field, keys, 3))
        return c->st;
    yaml_node_t *v;
    if ((v = _qf_suite_map_get(c, n, "max_elements")) &&
        _qf_suite_parse_u64(c, v, pjoin(p, sizeof p, field, "max_elements"), 1, UINT64_MAX, &s->max_elements))
        return c->st;
    if ((v = _qf_suite_map_get(c, n, "edges")) &&
        _qf_suite_parse_bool(c, v, pjoin(p, sizeof p, field, "edges"), &s->edges))
        return c->st;
    if ((v = _qf_suite_map_get(c, n, "tile")) &&
        _qf_suite_parse_u64(c, v, pjoin(p, sizeof p, field, "tile"), 1, QF_SUITE_DIM_MAX, &s->tile))
        return c->st;
    return QF_OK;
}

qf_status _qf_suite_parse_policy(ctx *c, yaml_node_t *n, const char *field, qf_suite_policy *pol)
{
    static const char *const keys[] = {
        "max_ulp",         "max_normwise",  "max_componentwise", "min_sqnr_db",  "baseline",
        "baseline_factor", "false_failure", "baseline_metric",   "baseline_tol", "max_zero_frac"};
    static const char *const metrics[] = {"max_abs", "rms", NULL};
    char p[PATHSZ];
    memset(pol, 0, sizeof *pol);
    pol->baseline_factor = 2;
    if (!n)
        return QF_OK;
    if (_qf_suite_check_map(c, n, field, keys, sizeof keys / sizeof keys[0]))
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
        {"max_zero_frac", QF_POLICY_MAX_ZERO_FRAC, {0, 1, 0, 0}, offsetof(qf_suite_policy, max_zero_frac)},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        yaml_node_t *v = _qf_suite_map_get(c, n, reals[i].key);
        if (!v)
            continue;
        if (parse_real(c, v, pjoin(p, sizeof p, field, reals[i].key), reals[i].r,
                       (double *)((char *)pol + reals[i].off)))
            return c->st;
        pol->set |= reals[i].bit;
    }
    yaml_node_t *bm = _qf_suite_map_get(c, n, "baseline_metric");
    if (bm) {
        const char *sv = NULL;
        size_t i;
        if (_qf_suite_scalar_text(c, bm, pjoin(p, sizeof p, field, "baseline_metric"), &sv))
            return c->st;
        for (i = 0; metrics[i] && strcmp(sv, metrics[i]); i++)
            ;
        if (!metrics[i])
            return fail(c, bm, pjoin(p, sizeof p, field, "baseline_metric"),
                        "unknown value '%s' (valid: max_abs, rms)", sv);
        pol->baseline_rms = i == 1;
    }
    yaml_node_t *b = _qf_suite_map_get(c, n, "baseline");
    if (!b && (bm || _qf_suite_map_get(c, n, "baseline_tol"))) {
        yaml_node_t *at = bm ? bm : _qf_suite_map_get(c, n, "baseline_tol");
        return fail(c, at, pjoin(p, sizeof p, field, bm ? "baseline_metric" : "baseline_tol"),
                    "'%s' needs 'baseline' (the kernel to compare with)",
                    bm ? "baseline_metric" : "baseline_tol");
    }
    if (b) {
        if (_qf_suite_parse_name(c, b, pjoin(p, sizeof p, field, "baseline"), NULL, &pol->baseline))
            return c->st;
        pol->set |= QF_POLICY_BASELINE;
    } else if (_qf_suite_map_get(c, n, "baseline_factor")) {
        return fail(c, _qf_suite_map_get(c, n, "baseline_factor"),
                    pjoin(p, sizeof p, field, "baseline_factor"),
                    "'baseline_factor' needs 'baseline' (the kernel to compare with)");
    }
    return QF_OK;
}

qf_status _qf_suite_parse_names(ctx *c, yaml_node_t *n, const char *field, const char *extra,
                                const char ***out, size_t *count)
{
    yaml_node_t **items;
    size_t k;
    char p[PATHSZ];
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a name or a list of names, got a mapping");
    if (_qf_suite_as_list(c, n, field, 256, &items, &k))
        return c->st;
    *out = arena_alloc(c->A, k * sizeof **out);
    if (!*out)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *f = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, field, i) : field;
        if (_qf_suite_parse_name(c, items[i], f, extra, &(*out)[i]))
            return c->st;
        for (size_t j = 0; j < i; j++)
            if (!strcmp((*out)[i], (*out)[j]))
                return fail(c, items[i], f, "'%s' appears twice", (*out)[i]);
    }
    *count = k;
    return QF_OK;
}

qf_status _qf_suite_parse_kernels(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                  qf_suite_group *g)
{
    char p[PATHSZ];
    if (!n) {
        const char *kop = _qf_suite_op_kernels(g->op);
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
    if (_qf_suite_parse_names(c, n, field, "*?", &g->kernels, &g->nkernels))
        return c->st;
    /* Kernel names start with their kernel op ("gemm.cpu.naive.f32"), so a
     * glob whose literal first component names another op can never match. */
    for (size_t i = 0; i < g->nkernels; i++) {
        const char *k = g->kernels[i], *kop = _qf_suite_op_kernels(g->op);
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

