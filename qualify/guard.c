/* guard.c: decisions over an enablement table (qf_guard.h, docs/guards.md).
 * Part of libqualify_guard, which links Jansson and libdl only. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "qf_guard.h"

struct qf_guard {
    const qf_guard_table *table;
    char arch[64];
    char force[128]; /* "" | "off" | kernel name */
    char isa[1024];  /* this CPU's ISA features (qf_guard_cpu_identity) */
    int log;
    /* Owned storage when opened from JSON. */
    qf_guard_table own;
    qf_guard_entry *entries;
    char **strings;
    size_t nstrings;
};

const char *qf_guard_answer_name(qf_guard_answer a)
{
    switch (a) {
    case QF_GUARD_QUALIFIED: return "qualified";
    case QF_GUARD_FORCED: return "forced";
    case QF_GUARD_OFF: return "guard-off";
    case QF_GUARD_FAILED: return "failed";
    case QF_GUARD_NOT_QUALIFIED: return "not-qualified";
    case QF_GUARD_NOT_SWEPT: return "not-swept";
    case QF_GUARD_UNKNOWN_ARCH: return "unknown-arch";
    case QF_GUARD_NOT_FORCED: return "not-forced";
    case QF_GUARD_ISA_MISSING: return "isa-missing";
    }
    return "?";
}

int qf_guard_shape_parse(char *text, qf_guard_shape *s)
{
    char *p = text;
    memset(s, 0, sizeof *s);
    while (p && *p) {
        char *comma = strchr(p, ','), *eq, *end;
        unsigned long long v;
        if (comma)
            *comma = '\0';
        eq = strchr(p, '=');
        if (!eq || eq == p || s->ndims == QF_GUARD_MAX_DIMS)
            return -1;
        *eq = '\0';
        if (!isdigit((unsigned char)eq[1]))
            return -1;
        errno = 0;
        v = strtoull(eq + 1, &end, 10);
        if (errno || *end)
            return -1;
        for (size_t i = 0; i < s->ndims; i++)
            if (!strcmp(s->names[i], p))
                return -1; /* M=16,...,M=4: which one is meant? */
        s->names[s->ndims] = p;
        s->values[s->ndims] = (uint64_t)v;
        s->ndims++;
        p = comma ? comma + 1 : NULL;
    }
    return s->ndims ? 0 : -1;
}

static void read_env(qf_guard *g)
{
    const char *f = getenv("QF_GUARD_FORCE"), *l = getenv("QF_GUARD_LOG"), *a = getenv("QF_GUARD_ARCH");
    snprintf(g->force, sizeof g->force, "%s", f ? f : "");
    g->log = l && *l && strcmp(l, "0") != 0;
    char vendor[64], model[256];
    if (a && *a)
        snprintf(g->arch, sizeof g->arch, "%s", a);
    else
        qf_guard_detect_arch(g->arch, sizeof g->arch);
    qf_guard_cpu_identity(vendor, sizeof vendor, model, sizeof model, g->isa, sizeof g->isa);
}

int qf_guard_open_table(const qf_guard_table *t, qf_guard **out)
{
    qf_guard *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g || !t) {
        free(g);
        return -1;
    }
    g->table = t;
    read_env(g);
    *out = g;
    return 0;
}

void qf_guard_close(qf_guard *g)
{
    size_t i;
    if (!g)
        return;
    for (i = 0; i < g->own.nentries; i++)
        free((void *)g->entries[i].regions);
    free(g->entries);
    for (i = 0; i < g->nstrings; i++)
        free(g->strings[i]);
    free(g->strings);
    free(g);
}

const char *qf_guard_arch(const qf_guard *g)
{
    return g->arch;
}

void qf_guard_set_arch(qf_guard *g, const char *arch)
{
    snprintf(g->arch, sizeof g->arch, "%s", arch);
}

const char *qf_guard_isa(const qf_guard *g)
{
    return g->isa;
}

void qf_guard_set_isa(qf_guard *g, const char *isa)
{
    snprintf(g->isa, sizeof g->isa, "%s", isa ? isa : "");
}

/* The first feature of need (space-separated) that have lacks, into
 * missing; 0 when have has them all.  "unknown" needs nothing. */
static int isa_missing(const char *need, const char *have, char *missing, size_t size)
{
    const char *p = need;
    if (!need || !strcmp(need, "unknown"))
        return 0;
    while (*p) {
        const char *q, *h = have;
        size_t n;
        int found = 0;
        while (*p == ' ')
            p++;
        for (q = p; *q && *q != ' '; q++)
            ;
        n = (size_t)(q - p);
        while (n && *h && !found) {
            const char *r;
            while (*h == ' ')
                h++;
            for (r = h; *r && *r != ' '; r++)
                ;
            found = (size_t)(r - h) == n && !strncmp(h, p, n);
            h = r;
        }
        if (n && !found) {
            snprintf(missing, size, "%.*s", (int)n, p);
            return 1;
        }
        p = q;
    }
    return 0;
}

/* ---- Loading enable.json ------------------------------------------------------------ */

static const char *keep(qf_guard *g, const char *s)
{
    char **n = realloc(g->strings, (g->nstrings + 1) * sizeof *n);
    char *c = strdup(s ? s : "");
    if (!n || !c) {
        free(c);
        if (n)
            g->strings = n;
        return NULL;
    }
    g->strings = n;
    g->strings[g->nstrings++] = c;
    return c;
}

static int errf(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && size)
        vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* An object {dim: integer} into v[], in the order of dims. */
static int get_dims(const json_t *o, const qf_guard_entry *e, uint64_t *v)
{
    size_t d;
    if (!json_is_object(o))
        return -1;
    for (d = 0; d < e->ndims; d++) {
        json_t *x = json_object_get(o, e->dims[d]);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return -1;
        v[d] = (uint64_t)json_integer_value(x);
    }
    return 0;
}

static int load_regions(qf_guard *g, const json_t *arr, int failed, qf_guard_entry *e, qf_guard_region *out,
                        size_t *k)
{
    size_t i, d;
    json_t *r;
    json_array_foreach(arr, i, r)
    {
        qf_guard_region *x = &out[(*k)++];
        x->failed = failed;
        if (get_dims(json_object_get(r, "lo"), e, x->lo) || get_dims(json_object_get(r, "hi"), e, x->hi))
            return -1;
        if (failed) {
            for (d = 0; d < e->ndims; d++)
                x->align[d] = 1;
        } else if (get_dims(json_object_get(r, "align"), e, x->align)) {
            return -1;
        }
        for (d = 0; d < e->ndims; d++)
            if (x->align[d] == 0 || x->lo[d] > x->hi[d])
                return -1;
        x->verdict = keep(g, json_string_value(json_object_get(r, "verdict")));
        x->reason = keep(g, json_string_value(json_object_get(r, "reason")));
        if (!x->verdict || !x->reason)
            return -1;
    }
    return 0;
}

/* The ISA features recorded for architecture "cpu" in the table
 * ("architectures": [{"arch": "cpu", "cpu": {"isa": ...}}]), or NULL. */
static const char *table_cpu_isa(const json_t *root)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(root, "architectures"), i, a)
    {
        const char *name = json_string_value(json_object_get(a, "arch"));
        if (name && !strcmp(name, "cpu"))
            return json_string_value(json_object_get(json_object_get(a, "cpu"), "isa"));
    }
    return NULL;
}

int qf_guard_open_json(const char *path, qf_guard **out, char *err, size_t err_size)
{
    json_error_t je;
    json_t *root, *entries, *e;
    qf_guard *g;
    size_t i;
    *out = NULL;
    root = json_load_file(path, 0, &je);
    if (!root)
        return errf(err, err_size, "%s:%d:%d: not a JSON enablement table: %s", path, je.line, je.column,
                    je.text);
    if (!json_is_object(root) || !json_is_string(json_object_get(root, "format")) ||
        strcmp(json_string_value(json_object_get(root, "format")), "qualify-enable") ||
        !json_is_array(entries = json_object_get(root, "entries"))) {
        json_decref(root);
        return errf(err, err_size,
                    "%s: not an enablement table (expected \"format\": \"qualify-enable\" and "
                    "\"entries\"; write one with qualify enable)",
                    path);
    }
    if (json_integer_value(json_object_get(root, "version")) != 2) {
        /* Version 1 keyed entries by kernel and dtype only: one failure
         * under one parameter (relu) blanked every other (gelu), and
         * failures under alpha = 2 sat in the alpha = 1 regions.  Its
         * regions cannot be split after the fact. */
        json_int_t v = json_integer_value(json_object_get(root, "version"));
        json_decref(root);
        if (v == 1)
            return errf(err, err_size,
                        "%s: enablement table version 1 merged the op parameters of each kernel; "
                        "regenerate it with this qualify enable (version 2)",
                        path);
        return errf(err, err_size, "%s: enablement table version %" JSON_INTEGER_FORMAT " is not 2", path, v);
    }
    g = calloc(1, sizeof *g);
    if (!g || !(g->entries = calloc(json_array_size(entries) + 1, sizeof *g->entries))) {
        free(g);
        json_decref(root);
        return errf(err, err_size, "%s: out of memory", path);
    }
    json_array_foreach(entries, i, e)
    {
        qf_guard_entry *x = &g->entries[i];
        json_t *dims = json_object_get(e, "dims"), *q = json_object_get(e, "qualified"),
               *f = json_object_get(e, "failed"), *sw = json_object_get(e, "swept"), *d;
        qf_guard_region *regs;
        size_t j, k = 0;
        g->own.nentries = i + 1;
        if (!json_is_array(dims) || json_array_size(dims) > QF_GUARD_MAX_DIMS || !json_is_array(q) ||
            !json_is_array(f) || !json_is_object(sw))
            goto bad;
        x->arch = keep(g, json_string_value(json_object_get(e, "arch")));
        x->kernel = keep(g, json_string_value(json_object_get(e, "kernel")));
        x->dtype = keep(g, json_string_value(json_object_get(e, "dtype")));
        x->params = keep(g, json_string_value(json_object_get(e, "params")));
        x->param_defaults = keep(g, json_string_value(json_object_get(e, "param_defaults")));
        if (!x->arch || !x->kernel || !x->dtype || !*x->arch || !*x->kernel ||
            !json_is_string(json_object_get(e, "params")) ||
            !json_is_string(json_object_get(e, "param_defaults")) || !x->params || !x->param_defaults)
            goto bad;
        if (!strcmp(x->arch, "cpu") && table_cpu_isa(root) && !(x->isa = keep(g, table_cpu_isa(root))))
            goto bad;
        json_array_foreach(dims, j, d)
        {
            json_t *vals = json_object_get(sw, json_string_value(d));
            if (!json_is_string(d) || !json_is_array(vals) || !(x->dims[j] = keep(g, json_string_value(d))))
                goto bad;
            /* Values ascend; none (no evidence at all) is an empty range. */
            x->swept_lo[j] =
                json_array_size(vals) ? (uint64_t)json_integer_value(json_array_get(vals, 0)) : UINT64_MAX;
            x->swept_hi[j] =
                json_array_size(vals)
                    ? (uint64_t)json_integer_value(json_array_get(vals, json_array_size(vals) - 1))
                    : 0;
        }
        x->ndims = json_array_size(dims);
        regs = calloc(json_array_size(q) + json_array_size(f) + 1, sizeof *regs);
        if (!regs)
            goto bad;
        x->regions = regs;
        if (load_regions(g, q, 0, x, regs, &k) || load_regions(g, f, 1, x, regs, &k))
            goto bad;
        x->nregions = k;
        continue;
    bad:
        qf_guard_close(g);
        json_decref(root);
        return errf(err, err_size,
                    "%s: entries[%zu]: malformed entry (arch, kernel, dtype, params, param_defaults, dims, swept, "
                    "qualified and failed regions with lo/hi/align per dimension expected)",
                    path, i);
    }
    g->own.entries = g->entries;
    g->table = &g->own;
    json_decref(root);
    read_env(g);
    *out = g;
    return 0;
}

/* ---- Decisions -------------------------------------------------------------------- */

static int shape_get(const qf_guard_shape *s, const char *name, uint64_t *v)
{
    size_t i;
    for (i = 0; i < s->ndims; i++)
        if (!strcmp(s->names[i], name)) {
            *v = s->values[i];
            return 0;
        }
    return -1;
}

static void region_text(const qf_guard_entry *e, const qf_guard_region *r, char *buf, size_t size)
{
    size_t d, n = 0;
    buf[0] = '\0';
    for (d = 0; d < e->ndims && n < size; d++) {
        int w = r->lo[d] == r->hi[d]
                    ? snprintf(buf + n, size - n, "%s%s = %" PRIu64, d ? ", " : "", e->dims[d], r->lo[d])
                    : snprintf(buf + n, size - n, "%s%s in [%" PRIu64 ", %" PRIu64 "]", d ? ", " : "",
                               e->dims[d], r->lo[d], r->hi[d]);
        if (w > 0)
            n += (size_t)w;
        if (r->align[d] > 1 && r->lo[d] != r->hi[d] && n < size) {
            w = snprintf(buf + n, size - n, " %% %" PRIu64, r->align[d]);
            if (w > 0)
                n += (size_t)w;
        }
    }
}

/* ---- Parameters ------------------------------------------------------------------- */

#define MAX_PARAMS 16

/* NAME=VALUE,... as pairs pointing into text (modified).  0, or -1 on bad
 * text: no '=', an empty name, a name given twice (which one is meant?),
 * more than MAX_PARAMS.  "" is no pairs. */
typedef struct plist {
    size_t n;
    const char *key[MAX_PARAMS], *value[MAX_PARAMS];
} plist;

static int plist_parse(char *text, plist *l)
{
    char *p = text;
    l->n = 0;
    while (p && *p) {
        char *comma = strchr(p, ','), *eq;
        size_t i;
        if (comma)
            *comma = '\0';
        eq = strchr(p, '=');
        if (!eq || eq == p || l->n == MAX_PARAMS)
            return -1;
        *eq = '\0';
        for (i = 0; i < l->n; i++)
            if (!strcmp(l->key[i], p))
                return -1;
        l->key[l->n] = p;
        l->value[l->n++] = eq + 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

static const char *plist_get(const plist *l, const char *key)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        if (!strcmp(l->key[i], key))
            return l->value[i];
    return NULL;
}

/* One value, two spellings: the table writes numbers in their shortest
 * form (alpha=1), a caller may write alpha=1.0 or trans_a=0. */
static int value_eq(const char *a, const char *b)
{
    double x, y;
    char *ea, *eb;
    if (!strcmp(a, b))
        return 1;
    a = !strcmp(a, "true") ? "1" : !strcmp(a, "false") ? "0" : a;
    b = !strcmp(b, "true") ? "1" : !strcmp(b, "false") ? "0" : b;
    if (!*a || !*b)
        return 0;
    x = strtod(a, &ea);
    y = strtod(b, &eb);
    return !*ea && !*eb && x == y;
}

/* Does entry e hold the parameters q (a parameter q leaves out at its
 * default)?  1 yes, 0 no; *unknown is set to a name of q the entry's op
 * does not have. */
static int params_match(const qf_guard_entry *e, const plist *q, const char **unknown)
{
    char pb[1024], db[1024];
    plist p, dl;
    size_t i;
    snprintf(pb, sizeof pb, "%s", e->params ? e->params : "");
    snprintf(db, sizeof db, "%s", e->param_defaults ? e->param_defaults : "");
    if (plist_parse(pb, &p) || plist_parse(db, &dl))
        return 0;
    for (i = 0; i < q->n; i++)
        if (!plist_get(&p, q->key[i])) {
            *unknown = q->key[i];
            return 0;
        }
    for (i = 0; i < p.n; i++) {
        const char *want = plist_get(q, p.key[i]);
        if (!want)
            want = plist_get(&dl, p.key[i]);
        /* A parameter without a default (fn of an activation) must be named. */
        if (!want || !value_eq(want, p.value[i]))
            return 0;
    }
    return 1;
}

/* ---- Decisions -------------------------------------------------------------------- */

/* The decision of one entry for shape s. */
static void decide_entry(const qf_guard *g, const qf_guard_entry *e, const char *kernel, const qf_guard_shape *s,
                         qf_guard_decision *d)
{
    uint64_t x[QF_GUARD_MAX_DIMS];
    size_t i, k;
    int inside = 1;
    const qf_guard_region *q = NULL; /* the first qualified region covering the shape */
    char rt[256];
    memset(d, 0, sizeof *d);
    if (!strcmp(e->arch, "cpu") && e->isa && isa_missing(e->isa, g->isa, rt, sizeof rt)) {
        d->answer = QF_GUARD_ISA_MISSING;
        snprintf(d->reason, sizeof d->reason,
                 "this CPU lacks %s, which the CPU %s qualified on had (%s)", rt, kernel, e->isa);
        return;
    }
    for (k = 0; k < e->ndims; k++) {
        /* batch defaults to 1, as in the op descriptors (qf_kernel.h: "0 is
         * taken as 1"), so a caller of a plain GEMM need not name it. */
        if (shape_get(s, e->dims[k], &x[k])) {
            if (strcmp(e->dims[k], "batch") != 0) {
                d->answer = QF_GUARD_NOT_SWEPT;
                snprintf(d->reason, sizeof d->reason, "the shape has no dimension %s", e->dims[k]);
                return;
            }
            x[k] = 1;
        }
        if (x[k] < e->swept_lo[k] || x[k] > e->swept_hi[k])
            inside = 0;
    }
    for (k = 0; k < s->ndims; k++) {
        /* A dimension the entry does not have (a typo, or B=8 meant as the
         * batch) would otherwise be ignored and the answer given for
         * another shape than the caller's. */
        size_t m;
        for (m = 0; m < e->ndims && strcmp(s->names[k], e->dims[m]); m++)
            ;
        if (m == e->ndims) {
            d->answer = QF_GUARD_NOT_SWEPT;
            snprintf(d->reason, sizeof d->reason, "the shape has dimension %s, which %s does not have",
                     s->names[k], kernel);
            return;
        }
    }
    /* One pass: a failed region that covers the shape decides at once (a
     * failure is never enabled); else the first qualified one does. */
    for (i = 0; i < e->nregions; i++) {
        const qf_guard_region *r = &e->regions[i];
        int in = 1;
        for (k = 0; k < e->ndims && in; k++)
            in = x[k] >= r->lo[k] && x[k] <= r->hi[k] && x[k] % r->align[k] == 0;
        if (!in)
            continue;
        if (r->failed) {
            region_text(e, r, rt, sizeof rt);
            d->answer = QF_GUARD_FAILED;
            snprintf(d->reason, sizeof d->reason, "failed region %s: %s: %s", rt, r->verdict, r->reason);
            return;
        }
        if (!q)
            q = r;
    }
    if (q) {
        region_text(e, q, rt, sizeof rt);
        d->allowed = 1;
        d->answer = QF_GUARD_QUALIFIED;
        snprintf(d->reason, sizeof d->reason, "qualified region %s", rt);
        return;
    }
    d->answer = inside ? QF_GUARD_NOT_QUALIFIED : QF_GUARD_NOT_SWEPT;
    snprintf(d->reason, sizeof d->reason, "%s",
             inside ? "inside the swept range but in no qualified region (between swept points that did not "
                      "all qualify, or off the alignment class)"
                    : "outside the swept range");
}

static void decide(const qf_guard *g, const char *kernel, const char *dtype, const char *params,
                   const qf_guard_shape *s, qf_guard_decision *d)
{
    const qf_guard_table *t = g->table;
    size_t i;
    int arch_known = 0, matched = 0, seen = 0;
    const char *unknown = NULL;
    char qb[1024];
    plist q;
    qf_guard_decision one;
    memset(d, 0, sizeof *d);
    if (!strcmp(g->force, "off")) {
        d->allowed = 1;
        d->answer = QF_GUARD_OFF;
        snprintf(d->reason, sizeof d->reason, "guarding is off (QF_GUARD_FORCE=off)");
        return;
    }
    if (g->force[0]) {
        int me = !strcmp(g->force, kernel);
        d->allowed = me;
        d->answer = me ? QF_GUARD_FORCED : QF_GUARD_NOT_FORCED;
        snprintf(d->reason, sizeof d->reason, "QF_GUARD_FORCE=%s", g->force);
        return;
    }
    snprintf(qb, sizeof qb, "%s", params ? params : "");
    if (strlen(params ? params : "") >= sizeof qb || plist_parse(qb, &q)) {
        d->answer = QF_GUARD_NOT_SWEPT;
        snprintf(d->reason, sizeof d->reason,
                 "parameters '%.200s': expected NAME=VALUE,... with each NAME once", params);
        return;
    }
    /* Every entry of the kernel, dtype and parameters decides (glu and
     * activation may share a kernel): the first that denies wins, as a
     * failure is never enabled. */
    for (i = 0; i < t->nentries; i++) {
        const qf_guard_entry *c = &t->entries[i];
        if (strcmp(c->arch, g->arch))
            continue;
        arch_known = 1;
        if (strcmp(c->kernel, kernel) || strcmp(c->dtype, dtype))
            continue;
        seen = 1;
        if (!params_match(c, &q, &unknown))
            continue;
        decide_entry(g, c, kernel, s, &one);
        if (!matched || (d->allowed && !one.allowed))
            *d = one;
        matched = 1;
    }
    if (!arch_known) {
        d->answer = QF_GUARD_UNKNOWN_ARCH;
        snprintf(d->reason, sizeof d->reason, "the table has no entry for architecture %s", g->arch);
        return;
    }
    if (matched)
        return;
    d->answer = QF_GUARD_NOT_SWEPT;
    if (seen && unknown)
        snprintf(d->reason, sizeof d->reason, "%s has no parameter %s", kernel, unknown);
    else if (seen)
        snprintf(d->reason, sizeof d->reason, "%s was not swept for %s on %s with parameters %.200s", kernel,
                 dtype, g->arch, params && *params ? params : "at their defaults");
    else
        snprintf(d->reason, sizeof d->reason, "%s was not swept for %s on %s", kernel, dtype, g->arch);
}

static void log_decision(const qf_guard *g, const char *kernel, const char *dtype, const char *params,
                         const qf_guard_shape *s, const qf_guard_decision *d)
{
    size_t i;
    if (!g->log)
        return;
    /* Names come from the caller and the table, the reason from results:
     * shown on the terminal, never obeyed (_escape.h). */
    fputs("qualify-guard: arch=", stderr);
    _qf_esc_term(stderr, g->arch);
    fputs(" kernel=", stderr);
    _qf_esc_term(stderr, kernel);
    fputs(" dtype=", stderr);
    _qf_esc_term(stderr, dtype);
    fputs(" params=", stderr);
    _qf_esc_term(stderr, params && *params ? params : "(defaults)");
    fputs(" shape=", stderr);
    for (i = 0; i < s->ndims; i++) {
        fputs(i ? "," : "", stderr);
        _qf_esc_term(stderr, s->names[i]);
        fprintf(stderr, "=%" PRIu64, s->values[i]);
    }
    fprintf(stderr, ": %s (%s): ", d->allowed ? "allowed" : "denied", qf_guard_answer_name(d->answer));
    _qf_esc_term(stderr, d->reason);
    fputc('\n', stderr);
}

int qf_guard_may_run_params(const qf_guard *g, const char *kernel, const char *dtype, const char *params,
                            const qf_guard_shape *shape, qf_guard_decision *d)
{
    qf_guard_decision tmp;
    if (!d)
        d = &tmp;
    decide(g, kernel, dtype, params, shape, d);
    log_decision(g, kernel, dtype, params, shape, d);
    return d->allowed;
}

int qf_guard_may_run(const qf_guard *g, const char *kernel, const char *dtype, const qf_guard_shape *shape,
                     qf_guard_decision *d)
{
    return qf_guard_may_run_params(g, kernel, dtype, NULL, shape, d);
}

const char *qf_guard_select_params(const qf_guard *g, const char *const *kernels, size_t n,
                                   const char *fallback, const char *dtype, const char *params,
                                   const qf_guard_shape *shape, qf_guard_decision *d)
{
    qf_guard_decision tmp;
    size_t i;
    if (!d)
        d = &tmp;
    if (g->force[0] && strcmp(g->force, "off")) {
        decide(g, g->force, dtype, params, shape, d);
        log_decision(g, g->force, dtype, params, shape, d);
        return g->force;
    }
    for (i = 0; i < n; i++)
        if (qf_guard_may_run_params(g, kernels[i], dtype, params, shape, d))
            return kernels[i];
    if (g->log) {
        fputs("qualify-guard: arch=", stderr);
        _qf_esc_term(stderr, g->arch);
        fputs(" dtype=", stderr);
        _qf_esc_term(stderr, dtype);
        fprintf(stderr, ": no kernel of %zu allowed, fallback ", n);
        _qf_esc_term(stderr, fallback ? fallback : "(none)");
        fputc('\n', stderr);
    }
    return fallback;
}

const char *qf_guard_select(const qf_guard *g, const char *const *kernels, size_t n, const char *fallback,
                            const char *dtype, const qf_guard_shape *shape, qf_guard_decision *d)
{
    return qf_guard_select_params(g, kernels, n, fallback, dtype, NULL, shape, d);
}
