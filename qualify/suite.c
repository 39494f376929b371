/* suite.c: loading and validating suite files (YAML, through libyaml's
 * document API so every node keeps its line and column): files and
 * includes, workloads, groups and their shapes, the public entry points.
 *
 * Reading single nodes (keys, values, dtypes, inputs, policy) lives in
 * suite_parse.c, the schema they are checked against (op dimensions, dtype
 * roles, op parameters, input distributions; docs/suites.md documents the
 * same tables) in suite_schema.c, expansion into cases in suite_expand.c.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "_files.h"
#include "_suite.h"

/* Every chunk of a suite's arena, then the arena (a failed load,
 * qf_suite_free). */
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
    if (_qf_suite_as_list(c, n, field, QF_SUITE_VALUES_MAX, &items, &k))
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
            if (_qf_suite_parse_u64(c, it, f, 1, QF_SUITE_DIM_MAX, &tmp[m]))
                goto out;
            m++;
            continue;
        }
        static const char *const rkeys[] = {"from", "to", "step", "mul"};
        if (_qf_suite_check_map(c, it, f, rkeys, 4))
            goto out;
        yaml_node_t *nf = _qf_suite_map_get(c, it, "from"), *nt = _qf_suite_map_get(c, it, "to");
        yaml_node_t *ns = _qf_suite_map_get(c, it, "step"), *nm = _qf_suite_map_get(c, it, "mul");
        uint64_t from, to, step = 0, mul = 0;
        if (!nf || !nt) {
            fail(c, it, f, "a range needs 'from' and 'to'");
            goto out;
        }
        if (!ns == !nm) {
            fail(c, it, f, "a range needs exactly one of 'step' and 'mul'");
            goto out;
        }
        if (_qf_suite_parse_u64(c, nf, pjoin(q, sizeof q, f, "from"), 1, QF_SUITE_DIM_MAX, &from) ||
            _qf_suite_parse_u64(c, nt, pjoin(q, sizeof q, f, "to"), 1, QF_SUITE_DIM_MAX, &to))
            goto out;
        if (to < from) {
            fail(c, nt, pjoin(q, sizeof q, f, "to"), "'to' (%llu) is below 'from' (%llu)",
                 (unsigned long long)to, (unsigned long long)from);
            goto out;
        }
        if (ns && _qf_suite_parse_u64(c, ns, pjoin(q, sizeof q, f, "step"), 1, QF_SUITE_DIM_MAX, &step))
            goto out;
        if (nm && _qf_suite_parse_u64(c, nm, pjoin(q, sizeof q, f, "mul"), 2, QF_SUITE_DIM_MAX, &mul))
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
    if (_qf_suite_parse_name(c, n, field, NULL, &name) || sets_push(c, s, &r))
        return c->st;
    r->ref = name;
    r->set.where = where_of(c, n);
    return QF_OK;
}

/* One shape mapping: dimension -> values, or {workload: NAME}. */
static qf_status parse_shape_map(ctx *c, yaml_node_t *n, const char *field, qf_suite_op op, raw_sets *s)
{
    const op_schema *os = _qf_suite_op_schema(op);
    const char *keys[QF_SUITE_MAX_DIMS + 1];
    size_t nk = 0;
    for (size_t d = 0; d < os->ndims; d++)
        keys[nk++] = os->dim_names[d];
    keys[nk++] = "workload";
    if (_qf_suite_check_map(c, n, field, keys, nk))
        return c->st;
    yaml_node_t *w = _qf_suite_map_get(c, n, "workload");
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
        yaml_node_t *v = _qf_suite_map_get(c, n, os->dim_names[d]);
        if (!v) {
            if (os->dims[d].required)
                return fail(c, n, field, "missing dimension '%s' (%s shapes need %s)", os->dim_names[d],
                            os->name, os->required_dims);
            r->set.values[d] = arena_alloc(c->A, sizeof(uint64_t));
            if (!r->set.values[d])
                return oom(c);
            r->set.values[d][0] = os->dims[d].def; /* 0: follows another dimension */
            r->set.nvalues[d] = 1;
            continue;
        }
        if (dim_values(c, v, pjoin(p, sizeof p, field, os->dim_names[d]), &r->set.values[d],
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
            if (_qf_suite_as_list(c, shapes, p, QF_SUITE_VALUES_MAX, &items, &k))
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
        if (_qf_suite_as_list(c, wref, p, QF_SUITE_VALUES_MAX, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++)
            if (parse_workload_ref(c, items[i],
                                   wref->type == YAML_SEQUENCE_NODE ? pindex(q, sizeof q, p, i) : p, s))
                return c->st;
    }
    return QF_OK;
}

/* ---- Groups ----------------------------------------------------------------------------- */

static const char *const group_keys[] = {"name",     "op",     "kernels", "dtypes", "shapes",
                                         "workload", "params", "inputs",  "seeds",  "sampling",
                                         "policy",   "arch",   "threads", "layout", "refute"};
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
    (_qf_suite_map_get(c, gm, key)                                                                           \
         ? (pjoin(pathvar, sizeof pathvar, gp, key), _qf_suite_map_get(c, gm, key))                          \
         : (pjoin(pathvar, sizeof pathvar, "", key), _qf_suite_map_get(c, tm, key)))
    char pop[PATHSZ];
    yaml_node_t *nop = PICK("op", pop);
    yaml_node_t *at = gm ? gm : tm;
    if (!nop)
        return fail(c, at, gp, "missing 'op' (valid: %s)", _qf_suite_op_list_text());
    const char *ops;
    if (_qf_suite_scalar_text(c, nop, pop, &ops))
        return c->st;
    qf_suite_op op;
    if (qf_suite_op_lookup(ops, &op))
        return fail(c, nop, pop, "unknown op '%.40s' (valid: %s)", ops, _qf_suite_op_list_text());
    const op_schema *os = _qf_suite_op_schema(op);
    if (add_group(c, &gr))
        return c->st;
    qf_suite_group *g = &gr->g;
    g->op = op;
    g->where = where_of(c, at);
    yaml_node_t *v;
    if (gm && (v = _qf_suite_map_get(c, gm, "name")) &&
        _qf_suite_parse_name(c, v, pjoin(p, sizeof p, gp, "name"), NULL, &g->name))
        return c->st;
    v = PICK("kernels", p);
    if (_qf_suite_parse_kernels(c, v, p, os, g))
        return c->st;
    v = PICK("dtypes", p);
    if (!v)
        return fail(c, at, gp, "missing 'dtypes' (one or more dtype tuples)");
    if (_qf_suite_parse_dtypes(c, v, p, os, g))
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
    if (_qf_suite_parse_params(c, v, p, os, g))
        return c->st;
    v = PICK("inputs", p);
    if (_qf_suite_parse_inputs(c, v, p, g))
        return c->st;
    v = PICK("seeds", p);
    if (_qf_suite_parse_seeds(c, v, p, g))
        return c->st;
    v = PICK("sampling", p);
    if (_qf_suite_parse_sampling(c, v, p, &g->sampling))
        return c->st;
    v = PICK("policy", p);
    if (_qf_suite_parse_policy(c, v, p, &g->policy))
        return c->st;
    v = PICK("arch", p);
    if (v && _qf_suite_parse_names(c, v, p, "*?", &g->arch, &g->narch))
        return c->st;
    v = PICK("threads", p);
    if (_qf_suite_parse_threads(c, v, p, g))
        return c->st;
    v = PICK("layout", p);
    if (_qf_suite_parse_layouts(c, v, p, os, g))
        return c->st;
    /* Refuting inputs (docs/refute.md): on unless the group turns them off. */
    v = PICK("refute", p);
    g->refute = 1;
    if (v && _qf_suite_parse_bool(c, v, p, &g->refute))
        return c->st;
#undef PICK
    return QF_OK;
}

/* ---- Workloads ---------------------------------------------------------------------------- */

static qf_status parse_workloads(ctx *c, yaml_node_t *n)
{
    if (_qf_suite_check_map(c, n, "workloads", NULL, 0))
        return c->st;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = get(c, pr->key), *v = get(c, pr->value);
        char p[PATHSZ], q[PATHSZ];
        const char *name;
        snprintf(p, sizeof p, "workloads.%.100s", (const char *)k->data.scalar.value);
        if (_qf_suite_parse_name(c, k, p, NULL, &name))
            return c->st;
        for (size_t i = 0; i < c->nwl; i++)
            if (!strcmp(c->wl[i].name, name))
                return fail(c, k, p, "workload '%s' already defined at %s:%d:%d", name, c->wl[i].where.file,
                            c->wl[i].where.line, c->wl[i].where.col);
        static const char *const keys[] = {"op", "shapes", "source", "description"};
        if (_qf_suite_check_map(c, v, p, keys, 4))
            return c->st;
        yaml_node_t *nop = _qf_suite_map_get(c, v, "op"), *sh = _qf_suite_map_get(c, v, "shapes");
        if (!nop)
            return fail(c, v, p, "a workload needs 'op'");
        if (!sh)
            return fail(c, v, p, "a workload needs 'shapes'");
        const char *ops, *txt;
        if (_qf_suite_scalar_text(c, nop, pjoin(q, sizeof q, p, "op"), &ops))
            return c->st;
        qf_suite_op op;
        if (qf_suite_op_lookup(ops, &op))
            return fail(c, nop, q, "unknown op '%.40s' (valid: %s)", ops, _qf_suite_op_list_text());
        yaml_node_t *t;
        if ((t = _qf_suite_map_get(c, v, "source")) &&
            _qf_suite_parse_text(c, t, pjoin(q, sizeof q, p, "source"), 4096, &txt))
            return c->st;
        if ((t = _qf_suite_map_get(c, v, "description")) &&
            _qf_suite_parse_text(c, t, pjoin(q, sizeof q, p, "description"), 4096, &txt))
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
    /* A FIFO or device is refused before it is opened for reading: open(2)
     * of a FIFO waits for a writer forever (_files.h). */
    const char *kind = NULL;
    int fd = _qf_open_regular(path, O_RDONLY, 0, &kind);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    struct stat sb;
    char msg[512];
    if (fd >= 0 && !f)
        close(fd);
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (off_t)QF_SUITE_FILE_MAX) {
        if (kind)
            snprintf(msg, sizeof msg, from ? "'%s' is not a regular file (%s)" : "%s: not a regular file (%s)",
                     shown, kind);
        else if (!f)
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

/* A path named in the current file: relative to its folder (absolute
 * paths as they are); in the arena, NULL when out of memory. */
static char *beside(ctx *c, const char *rel)
{
    char *path = arena_alloc(c->A, strlen(c->dir) + strlen(rel) + 2);
    if (!path)
        return NULL;
    if (rel[0] == '/' || !*c->dir)
        strcpy(path, rel);
    else
        sprintf(path, "%s/%s", c->dir, rel);
    return path;
}

static qf_status do_include(ctx *c, yaml_node_t *n, const char *field)
{
    const char *rel;
    if (_qf_suite_parse_text(c, n, field, 4096, &rel))
        return c->st;
    if (!*rel)
        return fail(c, n, field, "empty include path");
    char *path = beside(c, rel);
    if (!path)
        return oom(c);
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

/* claims: claim files (docs/claims.md), relative to this suite file's
 * folder like include: paths.  Only the top file: a claim changes what a
 * kernel is held to, which an included file should not do unseen. */
static qf_status parse_claims(ctx *c, yaml_node_t *n, qf_suite *s)
{
    yaml_node_t **items;
    size_t k;
    char p[64];
    if (c->depth > 0)
        return fail(c, n, "claims", "only the top suite file may name claim files");
    if (n->type == YAML_MAPPING_NODE)
        return fail(c, n, "claims", "expected a claim file path or a list of them, got a mapping");
    if (_qf_suite_as_list(c, n, "claims", QF_SUITE_MAX_CLAIMS, &items, &k))
        return c->st;
    s->claims = arena_alloc(c->A, k * sizeof *s->claims);
    if (!s->claims)
        return oom(c);
    for (size_t i = 0; i < k; i++) {
        const char *rel, *field = n->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, "claims", i) : "claims";
        char *path;
        if (_qf_suite_parse_text(c, items[i], field, 4096, &rel))
            return c->st;
        if (!*rel)
            return fail(c, items[i], field, "empty claim file path");
        if (!(path = beside(c, rel)))
            return oom(c);
        s->claims[i] = path;
    }
    s->nclaims = k;
    return QF_OK;
}

static qf_status process_root(ctx *c, yaml_node_t *root, qf_suite *s)
{
    const char *keys[NGROUP_KEYS + 7];
    size_t nk = 0;
    keys[nk++] = "suite";
    keys[nk++] = "description";
    keys[nk++] = "include";
    keys[nk++] = "workloads";
    keys[nk++] = "groups";
    for (size_t i = 1; i < NGROUP_KEYS; i++) /* "name" is per group; the suite's is 'suite' */
        keys[nk++] = group_keys[i];
    keys[nk++] = "workers";
    keys[nk++] = "claims";
    if (_qf_suite_check_map(c, root, "", keys, nk))
        return c->st;
    yaml_node_t *v;
    const char *txt;
    char p[PATHSZ];
    if ((v = _qf_suite_map_get(c, root, "suite")) && _qf_suite_parse_name(c, v, "suite", NULL, &txt))
        return c->st;
    if (v && c->depth == 0)
        s->name = txt;
    if ((v = _qf_suite_map_get(c, root, "description")) &&
        _qf_suite_parse_text(c, v, "description", 4096, &txt))
        return c->st;
    if (v && c->depth == 0)
        s->description = txt;
    if ((v = _qf_suite_map_get(c, root, "include"))) {
        yaml_node_t **items;
        size_t k;
        if (v->type == YAML_MAPPING_NODE)
            return fail(c, v, "include", "expected a path or a list of paths, got a mapping");
        if (_qf_suite_as_list(c, v, "include", 256, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++)
            if (do_include(c, items[i],
                           v->type == YAML_SEQUENCE_NODE ? pindex(p, sizeof p, "include", i) : "include"))
                return c->st;
    }
    if ((v = _qf_suite_map_get(c, root, "workloads")) && parse_workloads(c, v))
        return c->st;
    if ((v = _qf_suite_map_get(c, root, "workers")) && _qf_suite_parse_workers(c, v, s))
        return c->st;
    if ((v = _qf_suite_map_get(c, root, "claims")) && parse_claims(c, v, s))
        return c->st;
    yaml_node_t *groups = _qf_suite_map_get(c, root, "groups");
    if (groups) {
        yaml_node_t **items;
        size_t k;
        if (_qf_suite_expect(c, groups, YAML_SEQUENCE_NODE, "groups", "a list of groups"))
            return c->st;
        if (_qf_suite_as_list(c, groups, "groups", 4096, &items, &k))
            return c->st;
        for (size_t i = 0; i < k; i++) {
            pindex(p, sizeof p, "groups", i);
            if (_qf_suite_check_map(c, items[i], p, group_keys, NGROUP_KEYS) ||
                parse_group(c, items[i], root, p))
                return c->st;
        }
        return QF_OK;
    }
    /* Without 'groups', top-level group keys make the file one group. */
    for (size_t i = 1; i < NGROUP_KEYS; i++)
        if (_qf_suite_map_get(c, root, group_keys[i]))
            return parse_group(c, NULL, root, "");
    return QF_OK;
}

/* The flow depth is bounded before libyaml sees the text
 * (_yaml_limits.h: its scanner is quadratic in it). */
static qf_status flow_depth_check(ctx *c, const char *buf, size_t len)
{
    _qf_yaml_where at;
    if (_qf_yaml_flow_depth(buf, len, _QF_YAML_FLOW_DEPTH_MAX, &at))
        return fail_at(c, c->file, at.line, at.col, NULL, "collections nested deeper than %d levels",
                       _QF_YAML_FLOW_DEPTH_MAX);
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
