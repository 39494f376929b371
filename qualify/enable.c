/* enable.c: enablement tables from sweep results (qf_enable.h,
 * docs/enable.md "The region rule"). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_enable.h"
#include "_escape.h"
#include "_files.h"
#include "_report.h"
#include "qf_enable.h"
#include "qf_guard.h"
#include "qf_report.h"
#include "qf_suite.h"
#include "qf_verdict.h"
#include "qf_version.h"

#define ND QF_RESULT_MAX_DIMS

/* The generated C pair stores every dimension of a result. */
_Static_assert(QF_RESULT_MAX_DIMS <= QF_GUARD_MAX_DIMS, "qf_guard_entry holds fewer dimensions than qf_result");

void qf_enable_init(qf_enable_table *t)
{
    memset(t, 0, sizeof *t);
}

void qf_enable_free(qf_enable_table *t)
{
    size_t i, d;
    for (i = 0; i < t->nentries; i++) {
        free(t->entries[i].points);
        free(t->entries[i].regions);
        for (d = 0; d < ND; d++)
            free(t->entries[i].values[d]);
    }
    free(t->entries);
    free(t->archs);
    memset(t, 0, sizeof *t);
}

static void errf(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && size)
        vsnprintf(err, size, fmt, ap);
    va_end(ap);
}

/* Evidence class of a verdict: QUALIFIED enables; MARGINAL (fails the
 * fitness policy), MISTRUSTED (the check is doubtful), UNCHECKED (checked
 * against no bound: never enabled), FAILED, CRASHED and TIMEOUT block
 * enablement; UNSUPPORTED and SKIPPED are no evidence. */
static int verdict_class(qf_verdict v)
{
    switch (v) {
    case QF_VERDICT_QUALIFIED: return 'Q';
    case QF_VERDICT_UNSUPPORTED:
    case QF_VERDICT_SKIPPED: return 'U';
    default: return 'F';
    }
}

static qf_enable_arch *find_arch(qf_enable_table *t, const char *arch)
{
    size_t i;
    for (i = 0; i < t->narchs; i++)
        if (!strcmp(t->archs[i].arch, arch))
            return &t->archs[i];
    return NULL;
}

/* The machine an architecture's results came from. */
static void arch_fill(qf_enable_arch *a, const char *arch, const qf_provenance *prov, const char *source)
{
    memset(a, 0, sizeof *a);
    snprintf(a->arch, sizeof a->arch, "%s", arch);
    a->simulated = !strncmp(arch, "sim:", 4);
    snprintf(a->source, sizeof a->source, "%s", source ? source : "");
    if (prov && prov->cpu_vendor[0]) {
        snprintf(a->cpu_vendor, sizeof a->cpu_vendor, "%s", prov->cpu_vendor);
        snprintf(a->cpu_model, sizeof a->cpu_model, "%s", prov->cpu_model);
        snprintf(a->cpu_isa, sizeof a->cpu_isa, "%s", prov->cpu_isa);
    } else {
        snprintf(a->cpu_vendor, sizeof a->cpu_vendor, "unknown");
        snprintf(a->cpu_model, sizeof a->cpu_model, "unknown");
        snprintf(a->cpu_isa, sizeof a->cpu_isa, "unknown");
    }
    /* A GPU architecture's table names the device it ran on. */
    if (prov && prov->gpu_name[0] && !a->simulated && strcmp(arch, "cpu"))
        snprintf(a->gpu_name, sizeof a->gpu_name, "%s", prov->gpu_name);
}

static qf_status add_arch(qf_enable_table *t, const char *arch, const qf_provenance *prov, const char *source,
                          char *err, size_t err_size)
{
    qf_enable_arch *a = find_arch(t, arch), *n;
    if (a && strcmp(arch, "cpu") && !a->simulated && !a->gpu_name[0] && prov && prov->gpu_name[0]) {
        /* Results of a machine without the device came first (its GPU
         * kernels filed under the archs they claim): the device's
         * machine, whose evidence the section rests on, is the one to
         * name. */
        arch_fill(a, arch, prov, source);
        return QF_OK;
    }
    if (a) {
        /* One architecture, one kind of machine: the CPU results of an
         * AVX2 laptop and an AVX-512 server (or two GPU models reporting
         * one sm_XY) merged under one name would enable shapes measured on
         * the other machine.  Journals carry no provenance: not compared. */
        if (!prov || a->simulated || !strcmp(a->cpu_vendor, "unknown"))
            return QF_OK;
        if (!strcmp(arch, "cpu") && prov->cpu_vendor[0] &&
            (strcmp(a->cpu_vendor, prov->cpu_vendor) || strcmp(a->cpu_model, prov->cpu_model) ||
             strcmp(a->cpu_isa, prov->cpu_isa))) {
            errf(err, err_size,
                 "%s: architecture cpu ran on %s, %s (%s), but in %s on %s, %s (%s): results of different CPUs "
                 "cannot share one table; run qualify enable on each machine's results apart",
                 source ? source : "results", prov->cpu_vendor, prov->cpu_model, prov->cpu_isa, a->source,
                 a->cpu_vendor, a->cpu_model, a->cpu_isa);
            return QF_EINVAL;
        }
        if (strcmp(arch, "cpu") && prov->gpu_name[0] && a->gpu_name[0] && strcmp(a->gpu_name, prov->gpu_name)) {
            errf(err, err_size,
                 "%s: architecture %s ran on %s, but in %s on %s: results of different devices cannot share "
                 "one table; run qualify enable on each device's results apart",
                 source ? source : "results", arch, prov->gpu_name, a->source, a->gpu_name);
            return QF_EINVAL;
        }
        return QF_OK;
    }
    n = realloc(t->archs, (t->narchs + 1) * sizeof *n);
    if (!n)
        return QF_ENOMEM;
    t->archs = n;
    arch_fill(&t->archs[t->narchs++], arch, prov, source);
    return QF_OK;
}

/* ---- The parameter key ------------------------------------------------------------- */

/* One value as the key spells it: a whole number as an integer, another
 * number in the shortest %g form that reads back to the same double
 * ("1e-05", not the journal's "1.0000000000000001e-05"), so one value has
 * one spelling; anything else (true, false, relu) as it is. */
static void canon_value(const char *v, char *buf, size_t size)
{
    char *end;
    double x;
    int prec;
    if (*v && !isspace((unsigned char)*v) && strcmp(v, "true") && strcmp(v, "false")) {
        x = strtod(v, &end);
        if (!*end && x == x) {
            /* Whole numbers as integers (theta=10000, not 1e+04). */
            if (x > -1e15 && x < 1e15 && x == (double)(long long)x) {
                snprintf(buf, size, "%lld", (long long)x);
                return;
            }
            for (prec = 1; prec <= 17; prec++) {
                snprintf(buf, size, "%.*g", prec, x);
                if (strtod(buf, NULL) == x)
                    return;
            }
        }
    }
    snprintf(buf, size, "%s", v);
}

/* The default of KEY for OP as the runner writes a value (runner.c), or ""
 * when the parameter has none (a required one, always in the record). */
static void default_value(const char *op, const char *key, char *buf, size_t size)
{
    qf_suite_group g;
    qf_suite_case c;
    qf_suite_value v;
    int is_default = 0;
    char raw[64];
    buf[0] = '\0';
    memset(&g, 0, sizeof g);
    memset(&c, 0, sizeof c);
    if (qf_suite_op_lookup(op, &c.op) != QF_OK)
        return;
    /* A case whose group set no parameter: every answer is a default. */
    g.op = c.op;
    c.group = &g;
    if (qf_suite_case_param(&c, key, &v, &is_default) != QF_OK || !is_default)
        return;
    switch (v.type) {
    case QF_PARAM_BOOL: snprintf(raw, sizeof raw, "%s", v.i ? "true" : "false"); break;
    case QF_PARAM_INT: snprintf(raw, sizeof raw, "%lld", (long long)v.i); break;
    case QF_PARAM_REAL: snprintf(raw, sizeof raw, "%.17g", v.r); break;
    default: snprintf(raw, sizeof raw, "%s", v.s ? v.s : ""); break;
    }
    canon_value(raw, buf, size);
}

static void key_append(char *buf, size_t size, size_t *n, const char *key, const char *value)
{
    int w;
    if (*n >= size)
        return;
    w = snprintf(buf + *n, size - *n, "%s%s=%s", *n ? "," : "", key, value);
    if (w > 0)
        *n += (size_t)w;
}

void qf_enable_param_key(const qf_result *r, char *buf, size_t size, char *defaults, size_t dsize)
{
    /* Every parameter of the op's schema (qualify/ops/), in its order. */
    const char *keys[QF_SUITE_MAX_PARAMS + 1] = {NULL};
    qf_suite_op op;
    char v[64];
    size_t n = 0, nd = 0, i, p;
    if (qf_suite_op_lookup(r->op, &op) == QF_OK)
        for (i = 0; i < QF_SUITE_MAX_PARAMS && (keys[i] = qf_suite_op_param(op, i)); i++)
            ;
    if (size)
        buf[0] = '\0';
    if (defaults && dsize)
        defaults[0] = '\0';
    for (i = 0; keys[i]; i++) {
        char def[64];
        default_value(r->op, keys[i], def, sizeof def);
        if (defaults && def[0])
            key_append(defaults, dsize, &nd, keys[i], def);
        for (p = 0; p < r->nparams && strcmp(r->params[p].key, keys[i]); p++)
            ;
        if (p < r->nparams) {
            canon_value(r->params[p].value, v, sizeof v);
            key_append(buf, size, &n, keys[i], v);
        } else if (def[0]) {
            key_append(buf, size, &n, keys[i], def);
        }
    }
    /* A parameter this list does not know (an op or parameter newer than
     * it) still tells cases apart: appended in the record's order. */
    for (p = 0; p < r->nparams; p++) {
        for (i = 0; keys[i] && strcmp(keys[i], r->params[p].key); i++)
            ;
        if (!keys[i]) {
            canon_value(r->params[p].value, v, sizeof v);
            key_append(buf, size, &n, r->params[p].key, v);
        }
    }
}

/* arch: the case's architecture as entries store it (normalized); params:
 * its parameter key.  The op is part of the identity too: glu and
 * activation share a kernel and a parameter (fn) but not an arithmetic. */
static qf_enable_entry *find_entry(qf_enable_table *t, const qf_result *r, const char *arch, const char *params)
{
    size_t i;
    for (i = 0; i < t->nentries; i++) {
        qf_enable_entry *e = &t->entries[i];
        if (!strcmp(e->arch, arch) && !strcmp(e->kernel, r->kernel) && !strcmp(e->op, r->op) &&
            !strcmp(e->dtype, r->dtype) && !strcmp(e->params, params))
            return e;
    }
    return NULL;
}

/* Case c into the entry of (arch, its kernel, op, dtype, parameters). */
static qf_status add_case(qf_enable_table *t, const qf_result *c, const char *arch, const qf_provenance *prov,
                          const char *source, char *err, size_t err_size)
{
    size_t d, p;
    qf_enable_entry *e;
    qf_enable_point *pt = NULL;
    int cls = verdict_class(c->verdict);
    char params[QF_ENABLE_PARAMS_MAX], defaults[QF_ENABLE_PARAMS_MAX];
    qf_status st = add_arch(t, arch, prov, source, err, err_size);
    if (st != QF_OK)
        return st;
    qf_enable_param_key(c, params, sizeof params, defaults, sizeof defaults);
    e = find_entry(t, c, arch, params);
    if (!e) {
        qf_enable_entry *ne = realloc(t->entries, (t->nentries + 1) * sizeof *ne);
        if (!ne)
            return QF_ENOMEM;
        t->entries = ne;
        e = &t->entries[t->nentries++];
        memset(e, 0, sizeof *e);
        snprintf(e->arch, sizeof e->arch, "%s", arch);
        snprintf(e->kernel, sizeof e->kernel, "%s", c->kernel);
        snprintf(e->kernel_kind, sizeof e->kernel_kind, "%s", c->kernel_kind);
        snprintf(e->op, sizeof e->op, "%s", c->op);
        snprintf(e->dtype, sizeof e->dtype, "%s", c->dtype);
        snprintf(e->params, sizeof e->params, "%s", params);
        snprintf(e->param_defaults, sizeof e->param_defaults, "%s", defaults);
        e->ndims = c->ndims;
        for (d = 0; d < c->ndims; d++)
            snprintf(e->dims[d], sizeof e->dims[d], "%s", c->dims[d].name);
    }
    if (c->ndims != e->ndims) {
        errf(err, err_size, "%s: case %s: kernel %s has %zu dimensions here and %zu elsewhere",
             source ? source : "results", c->case_id, c->kernel, c->ndims, e->ndims);
        return QF_EINVAL;
    }
    for (d = 0; d < c->ndims; d++)
        if (strcmp(c->dims[d].name, e->dims[d])) {
            errf(err, err_size, "%s: case %s: dimension %zu of kernel %s is %s here and %s elsewhere",
                 source ? source : "results", c->case_id, d, c->kernel, c->dims[d].name, e->dims[d]);
            return QF_EINVAL;
        }
    e->cases++;
    e->no_tuple += (size_t)qf_report_no_tuple(c);
    for (p = 0; p < e->npoints && !pt; p++) {
        for (d = 0; d < e->ndims && e->points[p].x[d] == c->dims[d].value; d++)
            ;
        if (d == e->ndims)
            pt = &e->points[p];
    }
    if (!pt) {
        qf_enable_point *np = realloc(e->points, (e->npoints + 1) * sizeof *np);
        if (!np)
            return QF_ENOMEM;
        e->points = np;
        pt = &e->points[e->npoints++];
        memset(pt, 0, sizeof *pt);
        for (d = 0; d < e->ndims; d++)
            pt->x[d] = c->dims[d].value;
        pt->worst = c->verdict;
        pt->cls = cls;
        snprintf(pt->reason, sizeof pt->reason, "%s", c->reason);
        return QF_OK;
    }
    /* The worst verdict over inputs and seeds; no evidence never
     * outweighs evidence. */
    if ((pt->cls == 'U' && cls != 'U') ||
        (cls != 'U' && qf_verdict_severity(c->verdict) > qf_verdict_severity(pt->worst))) {
        pt->worst = c->verdict;
        pt->cls = cls;
        snprintf(pt->reason, sizeof pt->reason, "%s", c->reason);
    }
    return QF_OK;
}

qf_status qf_enable_add(qf_enable_table *t, const qf_result *r, size_t n, const qf_provenance *prov,
                        const char *source, char *err, size_t err_size)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const qf_result *c = &r[i];
        const char *arch = c->arch[0] ? c->arch : "cpu";
        char one[sizeof c->arch];
        if (!c->kernel[0] || !c->op[0]) {
            /* A case that names no kernel (or op) cannot go into any entry;
             * dropping it silently would hide evidence. */
            errf(err, err_size, "%s: case %zu (%s): no '%s'", source ? source : "results", i,
                 c->case_id[0] ? c->case_id : "no case_id", c->kernel[0] ? "op" : "kernel");
            return QF_EINVAL;
        }
        /* A GPU kernel run where there was no device is filed under every
         * architecture it claims ("gfx90a gfx940": runner.c
         * file_unrun_device), one entry each (docs/enable.md). */
        while (*arch) {
            size_t len;
            qf_status st;
            while (*arch == ' ')
                arch++;
            len = strcspn(arch, " ");
            if (!len)
                break;
            snprintf(one, sizeof one, "%.*s", (int)len, arch);
            st = add_case(t, c, one, prov, source, err, err_size);
            if (st != QF_OK)
                return st;
            arch += len;
        }
    }
    return QF_OK;
}

/* ---- The region rule ------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t index_of(const uint64_t *v, size_t n, uint64_t x)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (v[i] == x)
            return i;
    return n;
}

/* The point at grid index idx, or NULL when that combination was not
 * swept (or has no evidence). */
static const qf_enable_point *point_at(const qf_enable_entry *e, const size_t *idx)
{
    size_t p, d;
    for (p = 0; p < e->npoints; p++) {
        const qf_enable_point *pt = &e->points[p];
        if (pt->cls == 'U')
            continue;
        for (d = 0; d < e->ndims && pt->x[d] == e->values[d][idx[d]]; d++)
            ;
        if (d == e->ndims)
            return pt;
    }
    return NULL;
}

/* Every grid combination in the box [lo, hi] (indices) was swept and is of
 * class cls.  With mark: sets covered[] of those points. */
static int box_all(const qf_enable_entry *e, const size_t *lo, const size_t *hi, int cls,
                   unsigned char *covered)
{
    size_t idx[ND], d;
    for (d = 0; d < e->ndims; d++)
        idx[d] = lo[d];
    for (;;) {
        const qf_enable_point *pt = point_at(e, idx);
        if (!pt || pt->cls != cls)
            return 0;
        if (covered)
            covered[pt - e->points] = 1;
        for (d = 0; d < e->ndims; d++) {
            if (++idx[d] <= hi[d])
                break;
            idx[d] = lo[d];
        }
        if (d == e->ndims)
            return 1;
    }
}

static int lex_less(const qf_enable_point *a, const qf_enable_point *b, size_t nd)
{
    size_t d;
    for (d = 0; d < nd; d++)
        if (a->x[d] != b->x[d])
            return a->x[d] < b->x[d];
    return 0;
}

/* Largest power of two dividing every value (capped at 2^32; 0 divides
 * by anything). */
static uint64_t pow2_divisor(const uint64_t *v, size_t n)
{
    uint64_t a = (uint64_t)1 << 32;
    size_t i;
    for (i = 0; i < n; i++)
        while (v[i] && v[i] % a)
            a >>= 1;
    return a;
}

/* Greedy boxes over the points of class cls: from the smallest uncovered
 * point (lexicographic order of the dimensions), grow the box one swept
 * value at a time, dimension by dimension, while every grid combination
 * inside stays swept and of class cls. */
static qf_status build_boxes(qf_enable_entry *e, int cls)
{
    unsigned char *covered = calloc(e->npoints + 1, 1);
    if (!covered)
        return QF_ENOMEM;
    for (;;) {
        const qf_enable_point *start = NULL;
        size_t p, d, lo[ND], hi[ND];
        qf_enable_region *r, *nr;
        for (p = 0; p < e->npoints; p++)
            if (!covered[p] && e->points[p].cls == cls &&
                (!start || lex_less(&e->points[p], start, e->ndims)))
                start = &e->points[p];
        if (!start)
            break;
        for (d = 0; d < e->ndims; d++)
            lo[d] = hi[d] = index_of(e->values[d], e->nvalues[d], start->x[d]);
        for (d = 0; d < e->ndims; d++)
            while (hi[d] + 1 < e->nvalues[d]) {
                hi[d]++;
                if (!box_all(e, lo, hi, cls, NULL)) {
                    hi[d]--;
                    break;
                }
            }
        nr = realloc(e->regions, (e->nregions + 1) * sizeof *nr);
        if (!nr) {
            free(covered);
            return QF_ENOMEM;
        }
        e->regions = nr;
        r = &e->regions[e->nregions++];
        memset(r, 0, sizeof *r);
        r->failed = cls == 'F';
        r->verdict = cls == 'F' ? start->worst : QF_VERDICT_QUALIFIED;
        snprintf(r->reason, sizeof r->reason, "%s", cls == 'F' ? start->reason : "");
        for (d = 0; d < e->ndims; d++) {
            r->lo[d] = e->values[d][lo[d]];
            r->hi[d] = e->values[d][hi[d]];
            r->align[d] = cls == 'F' ? 1 : pow2_divisor(e->values[d] + lo[d], hi[d] - lo[d] + 1);
        }
        /* The worst verdict inside a failed box names the region. */
        for (p = 0; p < e->npoints; p++) {
            const qf_enable_point *pt = &e->points[p];
            int in = pt->cls == cls;
            for (d = 0; d < e->ndims && in; d++)
                in = pt->x[d] >= r->lo[d] && pt->x[d] <= r->hi[d];
            if (!in)
                continue;
            r->shapes++;
            if (cls == 'F' && qf_verdict_severity(pt->worst) > qf_verdict_severity(r->verdict)) {
                r->verdict = pt->worst;
                snprintf(r->reason, sizeof r->reason, "%s", pt->reason);
            }
        }
        box_all(e, lo, hi, cls, covered);
    }
    free(covered);
    return QF_OK;
}

qf_status qf_enable_finish(qf_enable_table *t)
{
    size_t i, d, p;
    for (i = 0; i < t->nentries; i++) {
        qf_enable_entry *e = &t->entries[i];
        qf_status s;
        for (p = 0; p < e->npoints; p++) {
            e->n_qualified += e->points[p].cls == 'Q';
            e->n_failed += e->points[p].cls == 'F';
            e->n_unsupported += e->points[p].cls == 'U';
        }
        for (d = 0; d < e->ndims; d++) {
            size_t k = 0;
            e->values[d] = malloc((e->npoints + 1) * sizeof(uint64_t));
            if (!e->values[d])
                return QF_ENOMEM;
            for (p = 0; p < e->npoints; p++)
                if (e->points[p].cls != 'U' && index_of(e->values[d], k, e->points[p].x[d]) == k)
                    e->values[d][k++] = e->points[p].x[d];
            qsort(e->values[d], k, sizeof(uint64_t), cmp_u64);
            e->nvalues[d] = k;
        }
        if ((s = build_boxes(e, 'Q')) || (s = build_boxes(e, 'F')))
            return s;
    }
    t->finished = 1;
    return QF_OK;
}

void qf_enable_region_text(const qf_enable_entry *e, const qf_enable_region *r, char *buf, size_t size)
{
    size_t d, n = 0;
    buf[0] = '\0';
    for (d = 0; d < e->ndims && n < size; d++) {
        int w;
        if (r->lo[d] == r->hi[d])
            w = snprintf(buf + n, size - n, "%s%s = %" PRIu64, d ? ", " : "", e->dims[d], r->lo[d]);
        else
            w = snprintf(buf + n, size - n, "%s%s in [%" PRIu64 ", %" PRIu64 "]%s", d ? ", " : "", e->dims[d],
                         r->lo[d], r->hi[d], "");
        if (w > 0)
            n += (size_t)w;
        if (r->align[d] > 1 && r->lo[d] != r->hi[d] && n < size) {
            w = snprintf(buf + n, size - n, " %% %" PRIu64, r->align[d]);
            if (w > 0)
                n += (size_t)w;
        }
    }
}

/* ---- JSON ---------------------------------------------------------------------------- */

static json_t *dims_obj(const qf_enable_entry *e, const uint64_t *v)
{
    json_t *o = json_object();
    size_t d;
    for (d = 0; o && d < e->ndims; d++)
        json_object_set_new(o, e->dims[d], json_integer((json_int_t)v[d]));
    return o;
}

qf_status qf_enable_to_json(const qf_enable_table *t, json_t **out)
{
    json_t *root = json_object(), *archs = json_array(), *entries = json_array();
    size_t i, d, k;
    *out = NULL;
    if (!root || !archs || !entries || !t->finished) {
        json_decref(root);
        json_decref(archs);
        json_decref(entries);
        return t->finished ? QF_ENOMEM : QF_EINVAL;
    }
    json_object_set_new(root, "format", json_string("qualify-enable"));
    json_object_set_new(root, "version", json_integer(QF_ENABLE_FORMAT_VERSION));
    json_object_set_new(root, "generator", json_string("qualify " QF_VERSION_STRING));
    for (i = 0; i < t->narchs; i++) {
        const qf_enable_arch *a = &t->archs[i];
        json_t *o = json_object(), *cpu = json_object();
        json_object_set_new(o, "arch", json_string(a->arch));
        json_object_set_new(o, "simulated", json_boolean(a->simulated));
        json_object_set_new(cpu, "vendor", json_string(a->cpu_vendor));
        json_object_set_new(cpu, "model", json_string(a->cpu_model));
        json_object_set_new(cpu, "isa", json_string(a->cpu_isa));
        json_object_set_new(o, a->simulated ? "host_cpu" : "cpu", cpu);
        json_object_set_new(o, "gpu", a->gpu_name[0] ? json_string(a->gpu_name) : json_null());
        json_object_set_new(o, "source", json_string(a->source));
        json_array_append_new(archs, o);
    }
    for (i = 0; i < t->nentries; i++) {
        const qf_enable_entry *e = &t->entries[i];
        json_t *o = json_object(), *dims = json_array(), *swept = json_object(), *q = json_array(),
               *f = json_array();
        json_object_set_new(o, "arch", json_string(e->arch));
        json_object_set_new(o, "kernel", json_string(e->kernel));
        json_object_set_new(o, "kernel_kind", json_string(e->kernel_kind));
        json_object_set_new(o, "op", json_string(e->op));
        json_object_set_new(o, "dtype", json_string(e->dtype));
        json_object_set_new(o, "params", json_string(e->params));
        json_object_set_new(o, "param_defaults", json_string(e->param_defaults));
        for (d = 0; d < e->ndims; d++) {
            json_t *v = json_array();
            json_array_append_new(dims, json_string(e->dims[d]));
            for (k = 0; k < e->nvalues[d]; k++)
                json_array_append_new(v, json_integer((json_int_t)e->values[d][k]));
            json_object_set_new(swept, e->dims[d], v);
        }
        json_object_set_new(o, "dims", dims);
        json_object_set_new(o, "swept", swept);
        json_object_set_new(o, "cases", json_integer((json_int_t)e->cases));
        json_object_set_new(o, "shapes_qualified", json_integer((json_int_t)e->n_qualified));
        json_object_set_new(o, "shapes_failed", json_integer((json_int_t)e->n_failed));
        json_object_set_new(o, "shapes_unsupported", json_integer((json_int_t)e->n_unsupported));
        for (k = 0; k < e->nregions; k++) {
            const qf_enable_region *r = &e->regions[k];
            json_t *x = json_object();
            char line[sizeof r->reason];
            json_object_set_new(x, "lo", dims_obj(e, r->lo));
            json_object_set_new(x, "hi", dims_obj(e, r->hi));
            if (!r->failed)
                json_object_set_new(x, "align", dims_obj(e, r->align));
            json_object_set_new(x, "verdict", json_string(qf_verdict_name(r->verdict)));
            /* one line, whatever the results file held (_escape.h) */
            json_object_set_new(x, "reason", json_string(_qf_esc_line(line, sizeof line, r->reason)));
            json_object_set_new(x, "shapes", json_integer((json_int_t)r->shapes));
            json_array_append_new(r->failed ? f : q, x);
        }
        json_object_set_new(o, "qualified", q);
        json_object_set_new(o, "failed", f);
        json_array_append_new(entries, o);
    }
    json_object_set_new(root, "architectures", archs);
    json_object_set_new(root, "entries", entries);
    *out = root;
    return QF_OK;
}

qf_status qf_enable_write_json(const qf_enable_table *t, const char *path, char *err, size_t err_size)
{
    json_t *j;
    _qf_out o;
    qf_status s = qf_enable_to_json(t, &j);
    if (s)
        return s;
    /* written beside path and renamed over it (_files.h) */
    if (!_qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size)) {
        json_decref(j);
        return QF_EIO;
    }
    if (json_dumpf(j, o.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) {
        json_decref(j);
        _qf_out_abort(&o);
        errf(err, err_size, "%s: cannot write", path);
        return QF_EIO;
    }
    json_decref(j);
    return _qf_out_commit(&o, err, err_size);
}

/* ---- Markdown ---------------------------------------------------------------------------- */

/* diff.md shares it; the one Markdown escaping (_escape.h). */
void qf__enable_md_cell(FILE *f, const char *s)
{
    _qf_esc_md(f, s);
}

#define md_cell qf__enable_md_cell

/* An entry whose every case was not run for want of a dtype tuple (a
 * kernel glob over kernels of other dtypes) holds no evidence at all: it
 * leaves the Markdown table for one line per kernel (md_not_run); it stays
 * in enable.json and the C pair, where it qualifies nothing. */
static int folded(const qf_enable_entry *e)
{
    return e->cases && e->no_tuple == e->cases;
}

/* The folded entries of arch, one line per kernel (_qf_report_md_not_run). */
static qf_status md_not_run(FILE *f, const qf_enable_table *t, const char *arch)
{
    _qf_not_run *rows = malloc((t->nentries ? t->nentries : 1) * sizeof *rows);
    size_t i, n = 0;
    if (!rows)
        return QF_ENOMEM;
    for (i = 0; i < t->nentries; i++) {
        const qf_enable_entry *e = &t->entries[i];
        if (strcmp(e->arch, arch) || !folded(e))
            continue;
        rows[n].kernel = e->kernel;
        rows[n].op = e->op;
        rows[n].dtype = e->dtype;
        rows[n++].pairs = e->cases;
    }
    if (n)
        fputc('\n', f);
    _qf_report_md_not_run(f, rows, n,
                          "Not run, one line per kernel (UNSUPPORTED: the kernel claims no dtype tuple for "
                          "the case's dtypes; no evidence, so no row):");
    free(rows);
    return QF_OK;
}

qf_status qf_enable_write_markdown(const qf_enable_table *t, const char *path, char *err, size_t err_size)
{
    _qf_out o; /* never through a planted link (_files.h) */
    FILE *f = _qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size);
    size_t a, i, k, d;
    char buf[1024];
    if (!f)
        return QF_EIO;
    fprintf(f,
            "# Enablement table\n\n"
            "Generated by qualify %s from %zu architecture%s. A shape inside a qualified region may run; "
            "a shape in a failed region must not; any other shape is *not qualified* (not swept, or "
            "between swept points that did not all qualify) and falls back. Rule: docs/enable.md.\n",
            QF_VERSION_STRING, t->narchs, t->narchs == 1 ? "" : "s");
    for (a = 0; a < t->narchs; a++) {
        const qf_enable_arch *ar = &t->archs[a];
        fputs("\n## ", f);
        md_cell(f, ar->arch);
        fprintf(f, "%s\n\n", ar->simulated ? " (simulated: CPU model of the matrix unit)" : "");
        fprintf(f, "- %s: ", ar->simulated ? "host CPU" : "CPU");
        md_cell(f, ar->cpu_vendor);
        fputs(", ", f);
        md_cell(f, ar->cpu_model);
        fputs("\n- ISA features: ", f);
        md_cell(f, ar->cpu_isa);
        fputc('\n', f);
        if (ar->gpu_name[0]) {
            fputs("- GPU: ", f);
            md_cell(f, ar->gpu_name);
            fputc('\n', f);
        }
        fputs("- results: ", f);
        md_cell(f, ar->source);
        fputs("\n\n| kernel | op | dtype | parameters | qualified region | failed regions | swept | shapes Q/F/U "
              "|\n|---|---|---|---|---|---|---|---|\n",
              f);
        for (i = 0; i < t->nentries; i++) {
            const qf_enable_entry *e = &t->entries[i];
            int first;
            if (strcmp(e->arch, ar->arch) || folded(e))
                continue;
            fputs("| ", f);
            md_cell(f, e->kernel);
            fputs(" | ", f);
            md_cell(f, e->op);
            fputs(" | ", f);
            md_cell(f, e->dtype);
            fputs(" | ", f);
            md_cell(f, e->params[0] ? e->params : "none");
            fputs(" | ", f);
            first = 1;
            for (k = 0; k < e->nregions; k++)
                if (!e->regions[k].failed) {
                    qf_enable_region_text(e, &e->regions[k], buf, sizeof buf);
                    fprintf(f, "%s", first ? "" : "<br>");
                    md_cell(f, buf);
                    first = 0;
                }
            fputs(first ? "none | " : " | ", f);
            first = 1;
            for (k = 0; k < e->nregions; k++)
                if (e->regions[k].failed) {
                    qf_enable_region_text(e, &e->regions[k], buf, sizeof buf);
                    fprintf(f, "%s", first ? "" : "<br>");
                    md_cell(f, buf);
                    fprintf(f, ": %s: ", qf_verdict_name(e->regions[k].verdict));
                    md_cell(f, e->regions[k].reason);
                    first = 0;
                }
            fputs(first ? "none | " : " | ", f);
            if (!e->n_qualified && !e->n_failed) {
                fputs("nothing with evidence: ", f);
                md_cell(f, e->npoints ? e->points[0].reason : "");
            }
            for (d = 0; d < e->ndims && (e->n_qualified || e->n_failed); d++) {
                fputs(d ? " " : "", f);
                md_cell(f, e->dims[d]);
                fputs(" {", f);
                for (k = 0; k < e->nvalues[d]; k++)
                    fprintf(f, "%s%" PRIu64, k ? "," : "", e->values[d][k]);
                fputc('}', f);
            }
            fprintf(f, " | %zu/%zu/%zu |\n", e->n_qualified, e->n_failed, e->n_unsupported);
        }
        if (md_not_run(f, t, ar->arch) != QF_OK) {
            _qf_out_abort(&o);
            errf(err, err_size, "%s: out of memory", path);
            return QF_ENOMEM;
        }
    }
    fputs("\nparameters: the op's parameters of the row (docs/enable.md \"The key\"), defaults spelled out; "
          "one parameter combination is one row, so a failure under one never blanks another.\n",
          f);
    fputs("\nQ/F/U: swept shapes that qualified / blocked enablement (FAILED, CRASHED, TIMEOUT, MARGINAL, "
          "MISTRUSTED, UNCHECKED) / had no evidence (UNSUPPORTED, SKIPPED). `% 16`: the alignment class, the value "
          "must be a multiple of 16.\n",
          f);
    return _qf_out_commit(&o, err, err_size);
}

/* ---- The C pair ---------------------------------------------------------------------- */

/* Names, reasons and ISA lists come from results files: C string
 * literals with no quote, comment delimiter or trigraph of theirs. */
#define c_string _qf_esc_c_string

static void c_u64s(FILE *f, const uint64_t *v, size_t n)
{
    size_t d;
    fputc('{', f);
    if (!n)
        fputc('0', f);
    for (d = 0; d < n; d++)
        fprintf(f, "%s%" PRIu64 "u", d ? ", " : "", v[d]);
    fputc('}', f);
}

qf_status qf_enable_c_name_check(const char *name, char *err, size_t err_size)
{
    /* C11 6.4.1 */
    static const char *const keywords[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary",
        "_Noreturn", "_Static_assert", "_Thread_local",
    };
    const char *p;
    size_t i;
    if (!name || !*name || isdigit((unsigned char)*name)) {
        errf(err, err_size, "'%s' is not a C identifier", name ? name : "");
        return QF_EINVAL;
    }
    for (p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') {
            errf(err, err_size, "'%s' is not a C identifier", name);
            return QF_EINVAL;
        }
    for (i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (!strcmp(name, keywords[i])) {
            errf(err, err_size, "'%s' is a C keyword, not a name for the table", name);
            return QF_EINVAL;
        }
    return QF_OK;
}

qf_status qf_enable_write_c(const qf_enable_table *t, const char *dir, const char *name, char *err,
                            size_t err_size)
{
    char path[4096];
    _qf_out o; /* each file written beside its name and renamed over it (_files.h) */
    FILE *f;
    size_t i, k, d;
    qf_status st = qf_enable_c_name_check(name, err, err_size);
    if (st != QF_OK)
        return st;
    snprintf(path, sizeof path, "%s/%s.h", dir, name);
    if (!(f = _qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size)))
        return QF_EIO;
    fprintf(f,
            "/* %s.h: enablement table generated by qualify %s (qualify enable).\n"
            " * Compile %s.c in and open it with qf_guard_open_table(&%s, &g);\n"
            " * link libqualify_guard (pkg-config qualify-guard). */\n"
            "#ifndef %s_H\n#define %s_H\n\n#include <qf_guard.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\nextern const qf_guard_table %s;\n\n"
            "#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
            name, QF_VERSION_STRING, name, name, name, name, name);
    if (_qf_out_commit(&o, err, err_size) != QF_OK)
        return QF_EIO;
    snprintf(path, sizeof path, "%s/%s.c", dir, name);
    if (!(f = _qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size)))
        return QF_EIO;
    fprintf(f, "/* %s.c: enablement table generated by qualify %s; do not edit. */\n#include \"%s.h\"\n\n",
            name, QF_VERSION_STRING, name);
    for (i = 0; i < t->nentries; i++) {
        const qf_enable_entry *e = &t->entries[i];
        fprintf(f, "static const qf_guard_region %s_r%zu[] = {\n", name, i);
        for (k = 0; k < e->nregions; k++) {
            const qf_enable_region *r = &e->regions[k];
            fprintf(f, "    {%d, ", r->failed);
            c_string(f, qf_verdict_name(r->verdict));
            fputs(", ", f);
            c_string(f, r->reason);
            fputs(",\n     ", f);
            c_u64s(f, r->lo, e->ndims);
            fputs(", ", f);
            c_u64s(f, r->hi, e->ndims);
            fputs(", ", f);
            c_u64s(f, r->align, e->ndims);
            fputs("},\n", f);
        }
        if (!e->nregions)
            fputs("    {0, \"\", \"\", {0}, {0}, {0}},\n", f);
        fputs("};\n", f);
    }
    fprintf(f, "\nstatic const qf_guard_entry %s_entries[] = {\n", name);
    for (i = 0; i < t->nentries; i++) {
        const qf_enable_entry *e = &t->entries[i];
        uint64_t lo[ND], hi[ND];
        /* Nothing swept with evidence: an empty range. */
        for (d = 0; d < e->ndims; d++) {
            lo[d] = UINT64_MAX;
            hi[d] = 0;
        }
        for (d = 0; d < e->ndims; d++)
            if (e->nvalues[d]) {
                lo[d] = e->values[d][0];
                hi[d] = e->values[d][e->nvalues[d] - 1];
            }
        fputs("    {", f);
        c_string(f, e->arch);
        fputs(", ", f);
        c_string(f, e->kernel);
        fputs(", ", f);
        c_string(f, e->dtype);
        fprintf(f, ", %zu, {%s", e->ndims, e->ndims ? "" : "0");
        for (d = 0; d < e->ndims; d++) {
            fputs(d ? ", " : "", f);
            c_string(f, e->dims[d]);
        }
        fputs("},\n     ", f);
        c_u64s(f, lo, e->ndims);
        fputs(", ", f);
        c_u64s(f, hi, e->ndims);
        fprintf(f, ", %zu, %s_r%zu, ", e->nregions, name, i);
        /* cpu entries carry the ISA features of the CPU they ran on. */
        for (k = 0; k < t->narchs; k++)
            if (!strcmp(e->arch, "cpu") && !strcmp(t->archs[k].arch, "cpu"))
                break;
        if (k < t->narchs)
            c_string(f, t->archs[k].cpu_isa);
        else
            fputs("0", f);
        fputs(",\n     ", f);
        c_string(f, e->params);
        fputs(", ", f);
        c_string(f, e->param_defaults);
        fputs("},\n", f);
    }
    if (!t->nentries)
        fputs("    {\"\", \"\", \"\", 0, {0}, {0}, {0}, 0, 0, 0, 0, 0},\n", f);
    fprintf(f, "};\n\nconst qf_guard_table %s = {%zu, %s_entries};\n", name, t->nentries, name);
    return _qf_out_commit(&o, err, err_size);
}
