/* suite_expand.c: expanding a loaded suite into cases (counts, shape
 * checks, case ids) and reading a case's dimensions, parameters and
 * formats back.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_suite.h"

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
    const op_schema *os = _qf_suite_op_schema(g->op);
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
    k = mul_cap(k, g->nthreads, QF_SUITE_CASES_MAX);
    k = mul_cap(k, g->nlayouts, QF_SUITE_CASES_MAX);
    k = mul_cap(k, mul_cap(g->ninputs, g->nseeds, QF_SUITE_CASES_MAX) +
                       (g->refute && g->nseeds ? _qf_suite_op_refute(g->op, NULL) : 0),
                QF_SUITE_CASES_MAX);
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

/* The case's value of a parameter, for a schema's check. */
struct pctx {
    const qf_suite_group *g;
    const uint8_t *ch;
};

static const qf_suite_value *param_of(const void *p, const char *key)
{
    const struct pctx *pc = p;
    return choice(pc->g, pc->ch, key);
}

/* Checks of one shape across dimensions (and parameters that depend on a
 * dimension).  dims are resolved. */
static qf_status check_shape(ctx *c, const qf_suite_group *g, const qf_suite_shape_set *ss,
                             const uint64_t *dims, const uint8_t *ch)
{
    const op_schema *os = _qf_suite_op_schema(g->op);
    const qf_suite_where *w = &ss->where;
    uint64_t work = 1;
    for (size_t d = 0; d < os->ndims; d++)
        work = mul_cap(work, dims[d], QF_SUITE_WORK_MAX);
    if (work > QF_SUITE_WORK_MAX) {
        char sh[256];
        size_t used = 0;
        for (size_t d = 0; d < os->ndims && used < sizeof sh; d++)
            used += (size_t)snprintf(sh + used, sizeof sh - used, "%s%s=%llu", d ? "," : "", os->dim_names[d],
                                     (unsigned long long)dims[d]);
        return fail_at(c, w->file, w->line, w->col, "shapes",
                       "shape %s is too large (product of dimensions above 2^56)", sh);
    }
    if (os->check) {
        const char *field = "shapes";
        char msg[256];
        struct pctx pc = {g, ch};
        if (os->check(dims, param_of, &pc, &field, msg, sizeof msg))
            return fail_at(c, w->file, w->line, w->col, field, "%s", msg);
    }
    return QF_OK;
}

static void value_text(char *buf, size_t size, const qf_suite_value *v)
{
    switch (v->type) {
    case QF_PARAM_BOOL: snprintf(buf, size, "%s", v->i ? "true" : "false"); break;
    case QF_PARAM_INT: snprintf(buf, size, "%lld", (long long)v->i); break;
    case QF_PARAM_REAL: _qf_suite_fmt_real(buf, size, v->r); break;
    case QF_PARAM_ENUM: snprintf(buf, size, "%s", v->s); break;
    }
}

static size_t make_id(char *buf, size_t size, const qf_suite_group *g, const uint64_t *dims,
                      const qf_suite_dtype *dt, const uint8_t *ch, uint32_t threads,
                      const qf_suite_layout *lay, const qf_suite_input *in, uint64_t seed)
{
    const op_schema *os = _qf_suite_op_schema(g->op);
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
        ADD("%s%s=%llu", first ? "" : ",", os->dim_names[d], (unsigned long long)dims[d]);
        first = 0;
    }
    ADD("/%s", dt->label);
    for (size_t i = 0; i < g->nparams; i++) {
        char v[64];
        value_text(v, sizeof v, &g->params[i].values[ch[i]]);
        ADD("%s%s=%s", i ? "," : "/", g->params[i].key, v);
    }
    /* Like a parameter, after the op's; one thread (the default) is left
     * out, so ids of suites that do not sweep threads stay the same. */
    if (threads != 1)
        ADD("%sthreads=%u", g->nparams ? "," : "/", threads);
    /* The layout likewise, after the thread count; dense is left out. */
    if (lay->needs)
        ADD("%slayout=%s", g->nparams || threads != 1 ? "," : "/", lay->label);
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
                      const uint8_t *ch, uint32_t threads, const qf_suite_layout *lay, const qf_suite_input *in,
                      uint64_t seed)
{
    if (!e->out) {
        e->n++;
        return QF_OK;
    }
    char id[1024];
    size_t len = make_id(id, sizeof id, g, dims, dt, ch, threads, lay, in, seed);
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
    k->ndims = _qf_suite_op_schema(g->op)->ndims;
    memcpy(k->dims, dims, sizeof k->dims);
    k->dtype = dt;
    memcpy(k->param_choice, ch, sizeof k->param_choice);
    k->input = in;
    k->seed = seed;
    k->threads = threads;
    k->layout = lay;
    k->id = (const char *)(uintptr_t)e->ids_used; /* offset until ids stop moving */
    e->ids_used += len + 1;
    return QF_OK;
}

static qf_status walk(expander *e, const qf_suite *s)
{
    ctx *c = e->c;
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const qf_suite_group *g = &s->groups[gi];
        const op_schema *os = _qf_suite_op_schema(g->op);
        const qf_suite_input *refute = NULL;
        size_t nrefute = g->refute && g->nseeds ? _qf_suite_op_refute(g->op, &refute) : 0;
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
                        for (size_t ti = 0; ti < g->nthreads; ti++)
                            for (size_t li = 0; li < g->nlayouts; li++) {
                                for (size_t ii = 0; ii < g->ninputs; ii++)
                                    for (size_t k = 0; k < g->nseeds; k++)
                                        if (emit(e, g, dims, &g->dtypes[di], ch, g->threads[ti],
                                                 &g->layouts[li], &g->inputs[ii], g->seeds[k]))
                                            return c->st;
                                /* The op's refuting inputs, after the group's, once (docs/refute.md). */
                                for (size_t ri = 0; ri < nrefute; ri++)
                                    if (emit(e, g, dims, &g->dtypes[di], ch, g->threads[ti], &g->layouts[li],
                                             &refute[ri], g->seeds[0]))
                                        return c->st;
                            }
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

/* A context for reporting against suite s into err[errsize]. */
static void ctx_for(ctx *c, const qf_suite *s, char *err, size_t errsize)
{
    memset(c, 0, sizeof *c);
    c->err = err;
    c->errsize = errsize;
    c->file = s ? s->path : "suite";
    if (err && errsize)
        err[0] = 0;
}

qf_status qf_suite_count(const qf_suite *s, uint64_t *n, char *err, size_t errsize)
{
    ctx c;
    ctx_for(&c, s, err, errsize);
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
    ctx_for(&c, s, err, errsize);
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
    if (!c || !name || !out || (int)c->op >= qf_suite_op_count())
        return QF_EINVAL;
    const op_schema *os = _qf_suite_op_schema(c->op);
    for (size_t d = 0; d < os->ndims; d++)
        if (!strcmp(os->dim_names[d], name)) {
            *out = c->dims[d];
            return QF_OK;
        }
    return QF_EINVAL;
}

qf_status qf_suite_case_param(const qf_suite_case *c, const char *key, qf_suite_value *out, int *is_default)
{
    if (!c || !key || !out || (int)c->op >= qf_suite_op_count())
        return QF_EINVAL;
    const qf_suite_value *v = choice(c->group, c->param_choice, key);
    if (v) {
        *out = *v;
        if (is_default)
            *is_default = 0;
        return QF_OK;
    }
    for (const pspec *ps = _qf_suite_op_schema(c->op)->params; ps->key; ps++) {
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
    if (!c || !role || !c->dtype || (int)c->op >= qf_suite_op_count())
        return NULL;
    const op_schema *os = _qf_suite_op_schema(c->op);
    for (size_t r = 0; r < os->nroles; r++)
        if (!strcmp(os->roles[r], role))
            return c->dtype->role[r];
    return NULL;
}
