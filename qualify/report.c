/* report.c: results.json, report.md and junit.xml from the results of a
 * sweep, and reading results.json back (qf_report.h, docs/reports.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_escape.h"
#include "_files.h"
#include "_json.h"
#include "_report.h"
#include "_status.h"
#include "qf_metrics.h"
#include "qf_report.h"
#include "qf_version.h"

/* A message without a status (the callers return their own). */
#define errf(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

int qf_report_is_failure(qf_verdict v, int strict)
{
    switch (v) {
    case QF_VERDICT_FAILED:
    case QF_VERDICT_CRASHED:
    case QF_VERDICT_TIMEOUT: return 1;
    case QF_VERDICT_MARGINAL:
    case QF_VERDICT_MISTRUSTED:
    case QF_VERDICT_UNCHECKED: return strict != 0;
    default: return 0;
    }
}

size_t qf_report_failed(const qf_result *r, size_t n, int strict)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++)
        k += (size_t)qf_report_is_failure(r[i].verdict, strict);
    return k;
}

size_t qf_report_ran(const qf_result *r, size_t n)
{
    size_t i, k = 0;
    for (i = 0; r && i < n; i++)
        k += r[i].verdict != QF_VERDICT_UNSUPPORTED && r[i].verdict != QF_VERDICT_SKIPPED;
    return k;
}

const char *_qf_report_verdict_name(qf_verdict v)
{
    const char *s = qf_verdict_name(v);
    return s ? s : "?";
}

/* ---- Summary --------------------------------------------------------------- */

int qf_report_no_tuple(const qf_result *r)
{
    /* The record's cause (qf_cause), never its reason text. */
    return r && r->verdict == QF_VERDICT_UNSUPPORTED && r->cause == QF_CAUSE_NO_TUPLE;
}

/* The K of a case (a dimension named K or k), 0 when it has none. */
static uint64_t case_k(const qf_result *r)
{
    size_t i;
    for (i = 0; i < r->ndims && i < QF_RESULT_MAX_DIMS; i++)
        if (!strcmp(r->dims[i].name, "K") || !strcmp(r->dims[i].name, "k"))
            return r->dims[i].value;
    return 0;
}

/* max that lets a number win over NaN (NaN = nothing yet). */
static double nanmax(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    return a > b ? a : b;
}

/* Does result x belong to group g (its kernel, op and dtype tuple)? */
static int in_group(const qf_result *x, const qf_report_group *g)
{
    return !strcmp(x->kernel, g->kernel) && !strcmp(x->op, g->op) && !strcmp(x->dtype, g->dtype);
}

double qf_report_ulp_nonzero(const qf_result *r, int *unsure)
{
    const qf_metrics *m = &r->metrics;
    if (unsure)
        *unsure = 0;
    if (!r->has_metrics)
        return NAN;
    if (m->n_zero_checked)
        return m->max_ulp_nonzero;
    /* No exact zero among the checked elements, or a record that does not
     * say: max_ulp counts an exact zero only when one was missed, which
     * makes its relative error infinite. */
    if (unsure)
        *unsure = m->n_zero_ref > 0 && isinf(m->max_rel);
    return m->max_ulp;
}

void qf_report_error_text(const qf_result *r, char *buf, size_t size)
{
    const qf_metrics *m = &r->metrics;
    int unsure;
    double u = qf_report_ulp_nonzero(r, &unsure);
    char ulp[32], zabs[48] = "";
    if (!buf || !size)
        return;
    if (isnan(u))
        snprintf(ulp, sizeof ulp, "-");
    else
        snprintf(ulp, sizeof ulp, "%.4g", u);
    if (m->n_zero_checked && m->n_zero_inexact)
        snprintf(zabs, sizeof zabs, " (max abs %.4g)", m->max_abs_zero);
    if (m->n_zero_checked)
        snprintf(buf, size,
                 "%s ulp where the exact value is not 0; %zu of %zu exact zeros returned nonzero%s", ulp,
                 m->n_zero_inexact, m->n_zero_checked, zabs);
    else
        snprintf(buf, size, "%s ulp%s", ulp,
                 unsure ? " (may count a result at an exact zero in ulps of zero)" : "");
}

static void group_growth(const qf_result *r, size_t n, qf_report_group *g)
{
    double *k = malloc((n ? n : 1) * sizeof *k), *e = malloc((n ? n : 1) * sizeof *e);
    size_t i, j, m = 0;
    g->growth = g->growth_r2 = NAN;
    g->growth_points = 0;
    if (!k || !e)
        goto out;
    /* One point per K: the largest error at that K.  Cases of other M, N,
     * inputs and seeds at the same K would otherwise enter the fit as
     * scatter that has nothing to do with K. */
    for (i = 0; i < n; i++) {
        const qf_result *x = &r[i];
        uint64_t kk;
        if (!in_group(x, g) || !x->has_metrics)
            continue;
        kk = case_k(x);
        if (!kk || !isfinite(x->metrics.max_abs) || x->metrics.max_abs <= 0)
            continue;
        for (j = 0; j < m && k[j] != (double)kk; j++)
            ;
        if (j == m) {
            k[m] = (double)kk;
            e[m++] = x->metrics.max_abs;
        } else if (x->metrics.max_abs > e[j]) {
            e[j] = x->metrics.max_abs;
        }
    }
    /* Only a sweep over at least two K says how the error grows with K. */
    if (m >= 2 && qf_metrics_growth(m, k, e, &g->growth, NULL, &g->growth_r2) == QF_OK)
        g->growth_points = m;
    else
        g->growth = g->growth_r2 = NAN;
out:
    free(k);
    free(e);
}

qf_status qf_report_summarize(const qf_result *r, size_t n, qf_report_group **groups, size_t *ngroups)
{
    qf_report_group *g = NULL;
    size_t i, j, ng = 0;
    if ((!r && n) || !groups || !ngroups)
        return QF_EINVAL;
    g = calloc(n ? n : 1, sizeof *g);
    if (!g)
        return QF_ENOMEM;
    for (i = 0; i < n; i++) {
        const qf_result *x = &r[i];
        qf_report_group *y = NULL;
        for (j = 0; j < ng; j++)
            if (in_group(x, &g[j])) {
                y = &g[j];
                break;
            }
        if (!y) {
            y = &g[ng++];
            snprintf(y->kernel, sizeof y->kernel, "%s", x->kernel);
            snprintf(y->kernel_kind, sizeof y->kernel_kind, "%s", x->kernel_kind);
            snprintf(y->op, sizeof y->op, "%s", x->op);
            snprintf(y->dtype, sizeof y->dtype, "%s", x->dtype);
            y->worst_ulp = y->worst_util = y->worst_ulp_nonzero = y->worst_abs_zero = NAN;
        }
        y->n++;
        if ((unsigned)x->verdict < QF_VERDICT_COUNT)
            y->count[x->verdict]++;
        y->n_no_tuple += (size_t)qf_report_no_tuple(x);
        if (x->has_metrics) {
            y->n_metrics++;
            int unsure;
            double u = qf_report_ulp_nonzero(x, &unsure);
            y->worst_ulp = nanmax(y->worst_ulp, x->metrics.max_ulp);
            y->worst_util = nanmax(y->worst_util, x->metrics.max_util);
            if (u > y->worst_ulp_nonzero || (isnan(y->worst_ulp_nonzero) && !isnan(u)))
                y->ulp_unsure = unsure;
            else if (u == y->worst_ulp_nonzero)
                y->ulp_unsure |= unsure;
            y->worst_ulp_nonzero = nanmax(y->worst_ulp_nonzero, u);
            if (x->metrics.n_zero_checked) {
                y->n_zero_checked += x->metrics.n_zero_checked;
                y->n_zero_inexact += x->metrics.n_zero_inexact;
                y->worst_abs_zero = nanmax(y->worst_abs_zero, x->metrics.max_abs_zero);
            } else {
                y->zeros_unsure |= x->metrics.n_zero_ref > 0;
            }
        }
    }
    for (j = 0; j < ng; j++)
        group_growth(r, n, &g[j]);
    *groups = g;
    *ngroups = ng;
    return QF_OK;
}

/* ---- JSON -------------------------------------------------------------------- */

/* "unknown" and "" become null: absent information is not a value. */
static json_t *jstr_known(const char *s)
{
    return s && *s && strcmp(s, "unknown") ? json_string(s) : json_null();
}

json_t *_qf_report_words_json(const char *list)
{
    json_t *a = json_array();
    const char *p = list;
    while (a && p && *p) {
        const char *e = strchr(p, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && json_array_append_new(a, json_stringn(p, n))) {
            json_decref(a);
            return NULL;
        }
        p = e ? e + 1 : NULL;
    }
    return a;
}

qf_status qf_report_provenance_to_json(const qf_provenance *p, json_t **out)
{
    json_t *o = json_object(), *x, *files;
    size_t i;
    int bad = !o;
    if (!p || !out) {
        json_decref(o);
        return QF_EINVAL;
    }
    if (bad)
        return QF_ENOMEM;
    bad |= _qf_json_set_new(o, "timestamp", jstr_known(p->timestamp));
    bad |= _qf_json_set_new(o, "qualify_version", jstr_known(p->qualify_version));
    bad |= _qf_json_set_new(o, "git_revision", jstr_known(p->git_revision));
    bad |= _qf_json_set_new(o, "git_dirty", p->git_dirty < 0 ? json_null() : json_boolean(p->git_dirty));
    x = json_object();
    if (x) {
        bad |= _qf_json_set_new(x, "vendor", jstr_known(p->cpu_vendor));
        bad |= _qf_json_set_new(x, "model", jstr_known(p->cpu_model));
        bad |= _qf_json_set_new(x, "isa", _qf_report_words_json(p->cpu_isa));
        bad |= _qf_json_set_new(x, "count", json_integer(p->cpu_count));
    }
    bad |= _qf_json_set_new(o, "cpu", x);
    x = json_object();
    if (x) {
        bad |= _qf_json_set_new(x, "kernel", jstr_known(p->os));
        bad |= _qf_json_set_new(x, "version", jstr_known(p->os_version));
        bad |= _qf_json_set_new(x, "distro", jstr_known(p->os_distro));
    }
    bad |= _qf_json_set_new(o, "os", x);
    x = json_object();
    if (x) {
        bad |= _qf_json_set_new(x, "compiler", jstr_known(p->compiler));
        bad |= _qf_json_set_new(x, "flags", _qf_report_words_json(p->build_flags));
    }
    bad |= _qf_json_set_new(o, "build", x);
    x = json_object();
    if (x) {
        bad |= _qf_json_set_new(x, "mpfr", jstr_known(p->version_mpfr));
        bad |= _qf_json_set_new(x, "gmp", jstr_known(p->version_gmp));
    }
    bad |= _qf_json_set_new(o, "libraries", x);
    if (p->gpu_name[0] || p->gpu_arch[0]) {
        x = json_object();
        if (x) {
            bad |= _qf_json_set_new(x, "name", jstr_known(p->gpu_name));
            bad |= _qf_json_set_new(x, "arch", jstr_known(p->gpu_arch));
            bad |= _qf_json_set_new(x, "runtime", jstr_known(p->gpu_runtime));
            bad |= _qf_json_set_new(x, "driver", jstr_known(p->gpu_driver));
        }
        bad |= _qf_json_set_new(o, "gpu", x);
    } else {
        bad |= _qf_json_set_new(o, "gpu", json_null());
    }
    if (p->ndevices)
        bad |= _qf_json_set_new(o, "devices", _qf_report_devices_json(p));
    if (p->nsandbox)
        bad |= _qf_json_set_new(o, "sandbox", _qf_report_sandbox_json(p));
    files = json_array();
    for (i = 0; files && i < p->nfiles; i++)
        bad |= json_array_append_new(
            files, json_pack("{s:s, s:s}", "path", p->files[i].path, "sha256", p->files[i].sha256));
    bad |= _qf_json_set_new(o, "suite_files", files);
    if (bad) {
        json_decref(o);
        return QF_ENOMEM;
    }
    *out = o;
    return QF_OK;
}

/* A string member of o (or of o.sub) into slot; null or absent: "unknown";
 * another type: -1. */
static int get_slot(const json_t *o, const char *sub, const char *key, char *slot, size_t n)
{
    const json_t *v;
    if (sub)
        o = json_object_get(o, sub);
    v = o && json_is_object(o) ? json_object_get(o, key) : NULL;
    if (!v || json_is_null(v)) {
        qf_provenance_set(slot, n, NULL);
        return 0;
    }
    if (!json_is_string(v))
        return -1;
    qf_provenance_set(slot, n, json_string_value(v));
    return 0;
}

/* An array of strings (or one string) joined by spaces into slot. */
static int get_words(const json_t *o, const char *sub, const char *key, char *slot, size_t n)
{
    const json_t *a, *v;
    size_t i, len = 0;
    o = json_object_get(o, sub);
    a = o && json_is_object(o) ? json_object_get(o, key) : NULL;
    slot[0] = '\0';
    if (!a || json_is_null(a))
        return 0;
    if (json_is_string(a)) {
        qf_provenance_set(slot, n, json_string_value(a));
        return 0;
    }
    if (!json_is_array(a))
        return -1;
    json_array_foreach(a, i, v)
    {
        int w;
        if (!json_is_string(v))
            return -1;
        w = snprintf(slot + len, n - len, "%s%s", len ? " " : "", json_string_value(v));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    return 0;
}

qf_status qf_report_provenance_from_json(const json_t *j, qf_provenance *p, char *err, size_t err_size)
{
    const json_t *v, *f;
    size_t i;
    if (!p)
        return QF_EINVAL;
    memset(p, 0, sizeof *p);
    p->git_dirty = -1;
    if (!j || json_is_null(j))
        return QF_OK; /* no provenance: every slot empty */
    if (!json_is_object(j)) {
        errf(err, err_size, "provenance: an object expected");
        return QF_EPARSE;
    }
#define SLOT(sub, key, field)                                                                                \
    if (get_slot(j, sub, key, p->field, sizeof p->field)) {                                                  \
        errf(err, err_size, "provenance.%s%s%s: a string expected", sub ? sub : "", sub ? "." : "", key);    \
        return QF_EPARSE;                                                                                    \
    }
    SLOT(NULL, "timestamp", timestamp)
    SLOT(NULL, "qualify_version", qualify_version)
    SLOT(NULL, "git_revision", git_revision)
    SLOT("cpu", "vendor", cpu_vendor)
    SLOT("cpu", "model", cpu_model)
    SLOT("os", "kernel", os)
    SLOT("os", "version", os_version)
    SLOT("os", "distro", os_distro)
    SLOT("build", "compiler", compiler)
    SLOT("libraries", "mpfr", version_mpfr)
    SLOT("libraries", "gmp", version_gmp)
#undef SLOT
    if (get_words(j, "cpu", "isa", p->cpu_isa, sizeof p->cpu_isa) ||
        get_words(j, "build", "flags", p->build_flags, sizeof p->build_flags)) {
        errf(err, err_size, "provenance: cpu.isa and build.flags: arrays of strings expected");
        return QF_EPARSE;
    }
    v = json_object_get(j, "git_dirty");
    if (json_is_boolean(v))
        p->git_dirty = json_is_true(v);
    v = json_object_get(json_object_get(j, "cpu"), "count");
    if (json_is_integer(v))
        p->cpu_count = (int)json_integer_value(v);
    v = json_object_get(j, "gpu");
    if (v && json_is_object(v)) {
        char name[QF_PROV_STR], arch[64], rt[64], drv[64];
        if (get_slot(v, NULL, "name", name, sizeof name) || get_slot(v, NULL, "arch", arch, sizeof arch) ||
            get_slot(v, NULL, "runtime", rt, sizeof rt) || get_slot(v, NULL, "driver", drv, sizeof drv)) {
            errf(err, err_size, "provenance.gpu: string members expected");
            return QF_EPARSE;
        }
        qf_provenance_set_gpu(p, name, arch, rt, drv);
    } else if (v && !json_is_null(v)) {
        errf(err, err_size, "provenance.gpu: an object or null expected");
        return QF_EPARSE;
    }
    if (json_is_object(json_object_get(j, "devices")))
        _qf_report_devices_from_json(json_object_get(j, "devices"), p);
    if (json_is_array(json_object_get(j, "sandbox")))
        _qf_report_sandbox_from_json(json_object_get(j, "sandbox"), p);
    f = json_object_get(j, "suite_files");
    if (f && !json_is_array(f)) {
        errf(err, err_size, "provenance.suite_files: an array expected");
        return QF_EPARSE;
    }
    if (f && json_array_size(f)) {
        p->files = calloc(json_array_size(f), sizeof *p->files);
        if (!p->files)
            return QF_ENOMEM;
        json_array_foreach(f, i, v)
        {
            const char *path = json_string_value(json_object_get(v, "path"));
            const char *h = json_string_value(json_object_get(v, "sha256"));
            if (!path || !h) {
                errf(err, err_size, "provenance.suite_files[%zu]: path and sha256 strings expected", i);
                qf_provenance_free(p);
                return QF_EPARSE;
            }
            p->files[p->nfiles].path = strdup(path);
            if (!p->files[p->nfiles].path) {
                qf_provenance_free(p);
                return QF_ENOMEM;
            }
            snprintf(p->files[p->nfiles].sha256, sizeof p->files[0].sha256, "%s", h);
            p->nfiles++;
        }
    }
    return QF_OK;
}

/* The reproducer of a case; the runner writes one, and a record without
 * one gets the documented form so every case keeps a way back. */
void _qf_report_reproducer(const qf_result *r, char *buf, size_t n)
{
    if (r->reproducer[0])
        snprintf(buf, n, "%s", r->reproducer);
    else if (r->suite[0] && r->case_id[0] && r->kernel[0])
        snprintf(buf, n, "qualify run '%s' --case '%s' --kernel '%s'", r->suite, r->case_id, r->kernel);
    else
        buf[0] = '\0';
}

/* One case of results.json: the journal record plus the report keys. */
qf_status qf_report_case_to_json(const qf_result *r, json_t **out)
{
    json_t *o = NULL, *x;
    char rep[QF_RESULT_CMD_MAX];
    size_t i;
    int bad = 0;
    qf_status st;
    if (!r || !out)
        return QF_EINVAL;
    st = qf_result_to_json(r, &o);
    if (st != QF_OK)
        return st;
    json_object_del(o, "record");
    x = json_object();
    for (i = 0; x && i < r->nroles && i < QF_RESULT_MAX_ROLES; i++)
        bad |= _qf_json_set_new(x, r->roles[i].role, json_string(r->roles[i].format));
    bad |= _qf_json_set_new(o, "dtypes", x);
    x = json_object();
    for (i = 0; x && i < r->ndims && i < QF_RESULT_MAX_DIMS; i++)
        bad |= _qf_json_set_new(x, r->dims[i].name, json_integer((json_int_t)r->dims[i].value));
    bad |= _qf_json_set_new(o, "shape", x);
    /* An integer seed when it fits JSON's usual int64; text beyond. */
    if (r->seed <= (uint64_t)INT64_MAX)
        bad |= _qf_json_set_new(o, "seed", json_integer((json_int_t)r->seed));
    _qf_report_reproducer(r, rep, sizeof rep);
    bad |= _qf_json_set_new(o, "reproduce", json_string(rep));
    if (bad) {
        json_decref(o);
        return QF_ENOMEM;
    }
    *out = o;
    return QF_OK;
}

static json_t *summary_json(const qf_result *r, size_t n, const qf_report_group *g, size_t ng)
{
    json_t *o = json_object(), *counts = json_object(), *groups = json_array();
    size_t i, tot[QF_VERDICT_COUNT] = {0};
    int v, bad = !o || !counts || !groups;
    for (i = 0; i < n; i++)
        if ((unsigned)r[i].verdict < QF_VERDICT_COUNT)
            tot[r[i].verdict]++;
    for (v = 0; !bad && v < QF_VERDICT_COUNT; v++)
        bad |= _qf_json_set_new(counts, _qf_report_verdict_name((qf_verdict)v), json_integer((json_int_t)tot[v]));
    for (i = 0; !bad && i < ng; i++) {
        json_t *go = json_object(), *gc = json_object();
        bad |= !go || !gc;
        for (v = 0; !bad && v < QF_VERDICT_COUNT; v++)
            bad |= _qf_json_set_new(gc, _qf_report_verdict_name((qf_verdict)v), json_integer((json_int_t)g[i].count[v]));
        if (!bad) {
            bad |= _qf_json_set_new(go, "kernel", json_string(g[i].kernel));
            bad |= _qf_json_set_new(go, "kernel_kind", json_string(g[i].kernel_kind));
            bad |= _qf_json_set_new(go, "op", json_string(g[i].op));
            bad |= _qf_json_set_new(go, "dtype", json_string(g[i].dtype));
            bad |= _qf_json_set_new(go, "cases", json_integer((json_int_t)g[i].n));
            bad |= _qf_json_set_new(go, "no_tuple", json_integer((json_int_t)g[i].n_no_tuple));
            bad |= _qf_json_set_new(go, "verdicts", gc);
            gc = NULL;
            bad |= _qf_json_set_new(go, "worst_ulp", _qf_json_real(g[i].worst_ulp));
            bad |= _qf_json_set_new(go, "worst_bound_utilization", _qf_json_real(g[i].worst_util));
            bad |= _qf_json_set_new(go, "growth_exponent",
                                    isnan(g[i].growth) ? json_null() : _qf_json_real(g[i].growth));
            bad |= _qf_json_set_new(go, "growth_r2",
                                    isnan(g[i].growth_r2) ? json_null() : _qf_json_real(g[i].growth_r2));
            bad |= _qf_json_set_new(go, "growth_points", json_integer((json_int_t)g[i].growth_points));
            bad |= json_array_append(groups, go);
        }
        json_decref(go);
        json_decref(gc);
    }
    if (!bad) {
        bad |= _qf_json_set_new(o, "cases", json_integer((json_int_t)n));
        bad |= _qf_json_set_new(o, "verdicts", counts);
        counts = NULL;
        bad |= _qf_json_set_new(o, "failed", json_integer((json_int_t)qf_report_failed(r, n, 0)));
        bad |= _qf_json_set_new(o, "groups", groups);
        groups = NULL;
    }
    if (!bad) {
        /* The sweep's peak resident set against its largest case's tensors
         * (docs/runner.md "Memory"), over the cases that ran: a refused
         * (UNSUPPORTED) case's tensors were never allocated.  The ratio is
         * null when either is unknown (records of an older qualify, every
         * case refused). */
        size_t peak = 0, tens = 0;
        for (i = 0; i < n; i++) {
            peak = r[i].peak_rss_bytes > peak ? r[i].peak_rss_bytes : peak;
            if (r[i].verdict != QF_VERDICT_UNSUPPORTED && r[i].verdict != QF_VERDICT_SKIPPED)
                tens = r[i].tensor_bytes > tens ? r[i].tensor_bytes : tens;
        }
        bad |= _qf_json_set_new(o, "peak_rss_bytes", json_integer((json_int_t)peak));
        bad |= _qf_json_set_new(o, "largest_case_tensor_bytes", json_integer((json_int_t)tens));
        bad |= _qf_json_set_new(o, "peak_over_tensors",
                                peak && tens ? _qf_json_real((double)peak / (double)tens) : json_null());
    }
    json_decref(counts);
    json_decref(groups);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

qf_status qf_report_to_json(const qf_result *r, size_t n, const qf_provenance *prov, json_t **out)
{
    json_t *o, *cases, *p = NULL, *s;
    qf_report_group *g = NULL;
    size_t i, ng = 0;
    qf_status st;
    char gen[64];
    int bad;
    if ((!r && n) || !out)
        return QF_EINVAL;
    st = qf_report_summarize(r, n, &g, &ng);
    if (st != QF_OK)
        return st;
    o = json_object();
    cases = json_array();
    bad = !o || !cases;
    if (!bad && prov)
        bad |= qf_report_provenance_to_json(prov, &p) != QF_OK;
    snprintf(gen, sizeof gen, "qualify %s", QF_VERSION_STRING);
    if (!bad) {
        bad |= _qf_json_set_new(o, "schema_version", json_integer(QF_REPORT_SCHEMA_VERSION));
        bad |= _qf_json_set_new(o, "generator", json_string(gen));
        bad |= _qf_json_set_new(o, "provenance", p ? p : json_null());
        p = NULL;
    }
    for (i = 0; !bad && i < n; i++) {
        json_t *c = NULL;
        st = qf_report_case_to_json(&r[i], &c);
        bad |= st != QF_OK || json_array_append_new(cases, c);
    }
    if (!bad) {
        bad |= _qf_json_set_new(o, "cases", cases);
        cases = NULL;
        s = summary_json(r, n, g, ng);
        bad |= _qf_json_set_new(o, "summary", s);
    }
    free(g);
    json_decref(cases);
    json_decref(p);
    if (bad) {
        json_decref(o);
        return QF_ENOMEM;
    }
    *out = o;
    return QF_OK;
}

/* The JSON document onto a stream (the writer behind write_json). */
static qf_status json_file(FILE *f, const qf_result *r, size_t n, const qf_provenance *prov,
                           const qf_report_options *opt)
{
    json_t *o = NULL;
    qf_status st = qf_report_to_json(r, n, prov, &o);
    int bad;
    if (st != QF_OK)
        return st;
    if (opt && json_is_object(opt->extra) && json_object_update(o, (json_t *)opt->extra)) {
        json_decref(o);
        return QF_ENOMEM;
    }
    /* 17 significant digits: every binary64 comes back with the same bits. */
    bad = _qf_json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) != 0;
    bad |= fputc('\n', f) == EOF;
    json_decref(o);
    return bad ? QF_EIO : QF_OK;
}

/* ---- Markdown ------------------------------------------------------------------ */

/* Markdown text and code spans: the one escaping helper (_escape.h). */
#define md_cell _qf_esc_md
#define md_code(out, s) _qf_esc_md_code(out, s, 0)

static void md_num(FILE *out, double x, const char *fmt)
{
    if (isnan(x))
        fputs("-", out);
    else if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", out);
    else
        fprintf(out, fmt, x);
}

static void md_shape(FILE *out, const qf_result *r)
{
    size_t i;
    for (i = 0; i < r->ndims && i < QF_RESULT_MAX_DIMS; i++) {
        fputs(i ? "," : "", out);
        md_cell(out, r->dims[i].name);
        fprintf(out, "=%llu", (unsigned long long)r->dims[i].value);
    }
}

/* A provenance read from a report without one (a journal) is all empty. */
int _qf_report_prov_known(const qf_provenance *p)
{
    return p && (p->timestamp[0] || p->qualify_version[0] || p->cpu_model[0] || p->os[0]);
}

static void md_provenance(FILE *out, const qf_provenance *p)
{
    size_t i;
    fputs("## Provenance\n\n| | |\n|---|---|\n", out);
#define ROW(label, val)                                                                                      \
    do {                                                                                                     \
        fputs("| " label " | ", out);                                                                        \
        md_cell(out, (val)[0] ? (val) : "unknown");                                                          \
        fputs(" |\n", out);                                                                                  \
    } while (0)
    ROW("generated", p->timestamp);
    ROW("qualify", p->qualify_version);
    fputs("| git revision | ", out);
    md_cell(out, p->git_revision);
    fputs(p->git_dirty > 0 ? " (modified)" : "", out);
    fputs(" |\n", out);
    ROW("CPU", p->cpu_model);
    ROW("CPU vendor", p->cpu_vendor);
    ROW("ISA features", p->cpu_isa);
    fprintf(out, "| CPUs | %d |\n", p->cpu_count);
    ROW("OS", p->os);
    ROW("distribution", p->os_distro);
    ROW("compiler", p->compiler);
    ROW("build flags", p->build_flags);
    ROW("MPFR", p->version_mpfr);
    ROW("GMP", p->version_gmp);
    if (p->gpu_name[0] || p->gpu_arch[0]) {
        ROW("GPU", p->gpu_name);
        ROW("GPU architecture", p->gpu_arch);
        ROW("GPU runtime", p->gpu_runtime);
        ROW("GPU driver", p->gpu_driver);
    }
#undef ROW
    /* --devices: one row per device (docs/runner.md "Devices") */
    for (i = 0; i < p->ndevices && i < QF_PROV_DEVICES; i++) {
        const qf_provenance_device *d = &p->devices[i];
        fprintf(out, "| device %d | ", d->index);
        md_cell(out, d->name);
        fputs(" ", out);
        md_cell(out, d->uuid);
        fprintf(out, ": %zu pair(s), %zu fault(s)%s", d->pairs, d->faults, d->out ? ", out of the rotation: " : "");
        md_cell(out, d->out ? d->why : "");
        fputs(" |\n", out);
    }
    /* the confinement of the kernel processes (docs/security.md) */
    for (i = 0; i < p->nsandbox && i < QF_PROV_SANDBOX; i++) {
        fputs("| sandbox | ", out);
        md_cell(out, p->sandbox[i].how);
        fputs(": ", out);
        md_cell(out, p->sandbox[i].kernels ? p->sandbox[i].kernels : "");
        fputs(" |\n", out);
    }
    for (i = 0; i < p->nfiles; i++) {
        /* In a table cell '|' splits the row even inside a code span. */
        fputs("| suite file | ", out);
        _qf_esc_md_code(out, p->files[i].path, 1);
        fputs(" sha256 ", out);
        _qf_esc_md_code(out, p->files[i].sha256, 1);
        fputs(" |\n", out);
    }
    fputc('\n', out);
}

/* The verdict columns of report.md, worst first. */
static const qf_verdict order[] = {QF_VERDICT_FAILED,      QF_VERDICT_CRASHED,     QF_VERDICT_TIMEOUT,
                                   QF_VERDICT_MISTRUSTED,  QF_VERDICT_MARGINAL,    QF_VERDICT_UNCHECKED,
                                   QF_VERDICT_QUALIFIED,   QF_VERDICT_UNSUPPORTED, QF_VERDICT_SKIPPED};

/* Pairs not run for want of a dtype tuple (qf_report_no_tuple) are no
 * evidence about anything: a group made only of them leaves the table for
 * one line per kernel (md_not_run). */
static int folded(const qf_report_group *g)
{
    return g->n && g->n_no_tuple == g->n;
}

/* The exact-zero cell: "-" (none checked), "0 of 12", "2 of 12 (max abs
 * 1)"; a star when some case did not say. */
static void md_zeros(FILE *out, const qf_report_group *g)
{
    if (!g->n_zero_checked)
        fputs(g->zeros_unsure ? "?\\*" : "-", out);
    else {
        fprintf(out, "%zu of %zu", g->n_zero_inexact, g->n_zero_checked);
        if (g->n_zero_inexact) {
            fputs(" (max abs ", out);
            md_num(out, g->worst_abs_zero, "%.3g");
            fputc(')', out);
        }
        fputs(g->zeros_unsure ? "\\*" : "", out);
    }
}

static void md_summary_table(FILE *out, const qf_report_group *g, size_t ng)
{
    size_t i, j;
    int unsure = 0;
    fputs("| kernel | kind | op | dtypes | cases |", out);
    for (j = 0; j < sizeof order / sizeof order[0]; j++)
        fprintf(out, " %s |", _qf_report_verdict_name(order[j]));
    fputs(" worst ulp (exact ≠ 0) | exact zeros missed | worst bound util | growth exponent |\n"
          "|---|---|---|---|---:|",
          out);
    for (j = 0; j < sizeof order / sizeof order[0]; j++)
        fputs("---:|", out);
    fputs("---:|---:|---:|---:|\n", out);
    for (i = 0; i < ng; i++) {
        if (folded(&g[i]))
            continue;
        fputs("| ", out);
        md_cell(out, g[i].kernel);
        fputs(" | ", out);
        md_cell(out, g[i].kernel_kind[0] ? g[i].kernel_kind : "-");
        fputs(" | ", out);
        md_cell(out, g[i].op[0] ? g[i].op : "-");
        fputs(" | ", out);
        md_cell(out, g[i].dtype);
        fprintf(out, " | %zu |", g[i].n);
        for (j = 0; j < sizeof order / sizeof order[0]; j++)
            fprintf(out, " %zu |", g[i].count[order[j]]);
        fputc(' ', out);
        md_num(out, g[i].worst_ulp_nonzero, "%.3g");
        fputs(g[i].ulp_unsure ? "\\* | " : " | ", out);
        md_zeros(out, &g[i]);
        fputs(" | ", out);
        md_num(out, g[i].worst_util, "%.3g");
        fputs(" | ", out);
        if (g[i].growth_points) {
            md_num(out, g[i].growth, "%.2f");
            fprintf(out, " (R² %.2f, %zu pts)", g[i].growth_r2, g[i].growth_points);
        } else {
            fputs("-", out);
        }
        fputs(" |\n", out);
        unsure |= g[i].ulp_unsure || g[i].zeros_unsure;
    }
    fputc('\n', out);
    if (unsure)
        fputs("\\* from records that do not separate their exact zeros (read back from a journal or "
              "results.json without `n_zero_checked`): the ulp figure may count a result at an exact "
              "zero in ulps of zero, and the zeros' count is incomplete (docs/verdicts.md, \"Exact "
              "zeros\").\n\n",
              out);
}

static int same_kernel(const _qf_not_run *a, const _qf_not_run *b)
{
    return !strcmp(a->kernel, b->kernel);
}

void _qf_report_md_not_run(FILE *out, const _qf_not_run *rows, size_t n, const char *intro)
{
    size_t i, j, k, m, pairs;
    int ops;
    for (i = 0; i < n; i++) {
        for (j = 0; j < i && !same_kernel(&rows[j], &rows[i]); j++)
            ;
        if (j < i)
            continue; /* the kernel's line is written */
        if (i == 0)
            fprintf(out, "%s\n\n", intro);
        pairs = 0;
        ops = 0;
        for (j = i; j < n; j++)
            if (same_kernel(&rows[j], &rows[i])) {
                pairs += rows[j].pairs;
                ops |= strcmp(rows[j].op, rows[i].op) != 0;
            }
        fputs("- ", out);
        md_cell(out, rows[i].kernel);
        fprintf(out, ": %zu pair%s not run: no dtype tuple for ", pairs, pairs == 1 ? "" : "s");
        for (j = i, k = 0; j < n; j++) {
            if (!same_kernel(&rows[j], &rows[i]))
                continue;
            for (m = i; m < j; m++) /* each dtype tuple (and op) once */
                if (same_kernel(&rows[m], &rows[i]) && !strcmp(rows[m].op, rows[j].op) &&
                    !strcmp(rows[m].dtype, rows[j].dtype))
                    break;
            if (m < j)
                continue;
            fputs(k++ ? ", " : "", out);
            md_cell(out, rows[j].dtype);
            if (ops) {
                fputs(" (", out);
                md_cell(out, rows[j].op);
                fputc(')', out);
            }
        }
        fputs(" (UNSUPPORTED)\n", out);
    }
}

/* report.md's folded groups (md_not_run's rows). */
static qf_status md_not_run(FILE *out, const qf_report_group *g, size_t ng)
{
    _qf_not_run *rows = malloc((ng ? ng : 1) * sizeof *rows);
    size_t i, n = 0;
    if (!rows)
        return QF_ENOMEM;
    for (i = 0; i < ng; i++)
        if (folded(&g[i])) {
            rows[n].kernel = g[i].kernel;
            rows[n].op = g[i].op;
            rows[n].dtype = g[i].dtype;
            rows[n++].pairs = g[i].n;
        }
    _qf_report_md_not_run(out, rows, n,
                          "Not run, one line per kernel (UNSUPPORTED: the kernel claims no dtype tuple for "
                          "the case's dtypes; counted in the totals above, one record each in results.json "
                          "and junit.xml):");
    if (n)
        fputc('\n', out);
    free(rows);
    return QF_OK;
}

qf_status qf_report_markdown_file(FILE *out, const qf_result *r, size_t n, const qf_provenance *prov,
                                  const qf_report_options *opt)
{
    qf_report_options d = {0, NULL, NULL};
    qf_report_group *g = NULL;
    size_t i, j, ng = 0, tot[QF_VERDICT_COUNT] = {0}, nfail;
    qf_status st;
    if (!out || (!r && n))
        return QF_EINVAL;
    if (!opt)
        opt = &d;
    st = qf_report_summarize(r, n, &g, &ng);
    if (st != QF_OK)
        return st;
    for (i = 0; i < n; i++)
        if ((unsigned)r[i].verdict < QF_VERDICT_COUNT)
            tot[r[i].verdict]++;
    nfail = qf_report_failed(r, n, opt->strict);
    fputs("# ", out);
    md_cell(out, opt->title ? opt->title : "qualify report");
    fputs("\n\n", out);
    fprintf(out, "%zu case%s:", n, n == 1 ? "" : "s");
    for (j = 0; j < sizeof order / sizeof order[0]; j++)
        if (tot[order[j]])
            fprintf(out, " %zu %s,", tot[order[j]], _qf_report_verdict_name(order[j]));
    /* A sweep where no pair ran checked nothing: never "passing". */
    fprintf(out, " %s.\n\n",
            nfail ? "NOT PASSING" : qf_report_ran(r, n) ? "passing" : "NOTHING RAN (not a pass: nothing was checked)");

    fputs("## Summary per kernel, op and dtype tuple\n\n", out);
    for (i = 0, j = 0; i < ng; i++)
        j += !folded(&g[i]);
    if (!j && ng)
        fputs("No pair ran: no kernel claims a dtype tuple for its cases (below).\n\n", out);
    if (j || !ng)
        md_summary_table(out, g, ng);
    st = md_not_run(out, g, ng);
    free(g);
    if (st != QF_OK)
        return st;

    fputs("## Failures\n\n", out);
    if (!nfail)
        fputs("None.\n\n", out);
    for (i = 0; i < n; i++) {
        const qf_result *x = &r[i];
        char rep[QF_RESULT_CMD_MAX];
        if (!qf_report_is_failure(x->verdict, opt->strict))
            continue;
        fprintf(out, "### %s ", _qf_report_verdict_name(x->verdict));
        md_code(out, x->kernel);
        fputc(' ', out);
        md_code(out, x->case_id);
        fputs("\n\n- op: ", out);
        md_cell(out, x->op);
        fputs(", dtypes: ", out);
        md_cell(out, x->dtype);
        fputs(", shape: ", out);
        md_shape(out, x);
        fprintf(out, ", seed: %llu", (unsigned long long)x->seed);
        if (x->input[0]) {
            fputs(", input: ", out);
            md_cell(out, x->input);
        }
        /* A model kernel's arch is "sim:<arch>": say it was simulated. */
        fputs(", arch: ", out);
        md_cell(out, x->arch[0] ? x->arch : "cpu");
        if (!strncmp(x->arch, "sim:", 4))
            fputs(" (simulated on the CPU)", out);
        fputs("\n- reason: ", out);
        md_cell(out, x->reason[0] ? x->reason : "(none given)");
        if (x->has_metrics) {
            char e[256];
            qf_report_error_text(x, e, sizeof e);
            fputs("\n- max error: ", out);
            md_cell(out, e);
            fputs(", bound utilization ", out);
            md_num(out, x->metrics.max_util, "%.4g");
            fprintf(out, ", %zu violation%s", x->metrics.n_violations,
                    x->metrics.n_violations == 1 ? "" : "s");
        }
        _qf_report_reproducer(x, rep, sizeof rep);
        fputs("\n- reproduce: ", out);
        if (rep[0])
            md_code(out, rep);
        else
            fputs("(unknown)", out);
        if (x->nartifacts) { /* --save-failing */
            fputs("\n- tensors: ", out);
            md_code(out, x->artifacts_dir);
            if (x->artifacts_reproducer[0]) {
                fputs(", rerun from them: ", out);
                md_code(out, x->artifacts_reproducer);
            }
        }
        fputs("\n\n", out);
    }
    if (_qf_report_prov_known(prov))
        md_provenance(out, prov);
    return ferror(out) ? QF_EIO : QF_OK;
}

/* ---- Files -------------------------------------------------------------------- */

typedef qf_status (*stream_writer)(FILE *, const qf_result *, size_t, const qf_provenance *,
                                   const qf_report_options *);

/* Written into a private temporary directory beside PATH and renamed over
 * it when complete (_files.h: a link or FIFO a kernel planted at PATH is
 * replaced, never written through), so a reader (a CI step, qualify show)
 * never sees half a report.  dir >= 0: PATH is name's entry in it. */
static qf_status write_stream_at(int dir, const char *name, const char *path, stream_writer w,
                                 const qf_result *r, size_t n, const qf_provenance *prov,
                                 const qf_report_options *opt, char *err, size_t err_size)
{
    _qf_out o;
    qf_status st;
    if (!path)
        return QF_EINVAL;
    if (!(dir >= 0 ? _qf_out_openat(&o, dir, name, path, _QF_OUT_SYNC, err, err_size)
                   : _qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size)))
        return QF_EIO;
    st = w(o.f, r, n, prov, opt);
    if (st != QF_OK) {
        _qf_out_abort(&o);
        errf(err, err_size, "%s: %s", path, st == QF_EIO ? "write failed" : qf_status_str(st));
        return st;
    }
    return _qf_out_commit(&o, err, err_size);
}

static qf_status write_stream(const char *path, stream_writer w, const qf_result *r, size_t n,
                              const qf_provenance *prov, const qf_report_options *opt, char *err,
                              size_t err_size)
{
    return write_stream_at(-1, NULL, path, w, r, n, prov, opt, err, err_size);
}

qf_status qf_report_write_json(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                               char *err, size_t err_size)
{
    return write_stream(path, json_file, r, n, prov, NULL, err, err_size);
}

qf_status qf_report_write_markdown(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                                   const qf_report_options *opt, char *err, size_t err_size)
{
    return write_stream(path, qf_report_markdown_file, r, n, prov, opt, err, err_size);
}

qf_status qf_report_write_junit(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                                const qf_report_options *opt, char *err, size_t err_size)
{
    return write_stream(path, qf_report_junit_file, r, n, prov, opt, err, err_size);
}

qf_status qf_report_write_all(const char *dir, const qf_result *r, size_t n, const qf_provenance *prov,
                              const qf_report_options *opt, char *err, size_t err_size)
{
    static const struct {
        const char *name;
        stream_writer w;
    } files[] = {{"results.json", json_file},
                 {"report.md", qf_report_markdown_file},
                 {"junit.xml", qf_report_junit_file}};
    char *path;
    size_t len, i;
    qf_status st = QF_OK;
    int dfd;
    if (!dir)
        return QF_EINVAL;
    len = strlen(dir) + 32;
    path = malloc(len);
    if (!path)
        return QF_ENOMEM;
    /* The directory is followed once (it may be a link the user gave);
     * the three files are written relative to it. */
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        errf(err, err_size, "%s/results.json: cannot create: %s: %s", dir, dir, strerror(errno));
        free(path);
        return QF_EIO;
    }
    /* Each file whatever became of the one before (a directory planted at
     * report.md costs that file only); the first failure is the one said. */
    for (i = 0; i < sizeof files / sizeof files[0]; i++) {
        qf_status s;
        snprintf(path, len, "%s/%s", dir, files[i].name);
        s = write_stream_at(dfd, files[i].name, path, files[i].w, r, n, prov, opt, st == QF_OK ? err : NULL,
                            st == QF_OK ? err_size : 0);
        if (st == QF_OK)
            st = s;
    }
    close(dfd);
    free(path);
    return st;
}

/* ---- Reading back --------------------------------------------------------------- */

/* A journal starts with {"record": "header" ...} on its own line; a report
 * is one document.  Look at the first line to tell them apart without
 * parsing twice; f is left at its start. */
static int looks_like_journal(FILE *f)
{
    char buf[256];
    int is = 0;
    if (fgets(buf, sizeof buf, f) && strstr(buf, "\"record\""))
        is = 1;
    rewind(f);
    return is;
}

qf_status qf_report_read(const char *path, qf_result **results, size_t *n, qf_provenance *prov, char *err,
                         size_t err_size)
{
    json_t *doc, *cases, *v;
    json_error_t je;
    qf_result *rs;
    size_t i;
    qf_status st;
    FILE *f;
    if (!path || !results || !n)
        return QF_EINVAL;
    *results = NULL;
    *n = 0;
    if (prov)
        qf_report_provenance_from_json(NULL, prov, NULL, 0);
    /* Regular files only: a FIFO or device is refused before it is read
     * (_files.h). */
    f = _qf_fopen_read(path, err, err_size, &st);
    if (!f) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            errf(err, err_size, "%s: is a directory (a report is DIR/results.json)", path);
        return st;
    }
    if (err && err_size)
        err[0] = '\0';
    if (looks_like_journal(f)) {
        int torn = 0;
        fclose(f);
        st = qf_journal_read(path, results, n, &torn, NULL, err, err_size);
        /* A run killed mid-write leaves its last record cut short; the
         * cases before it are good, but the caller must be able to say the
         * input is incomplete. */
        if (st == QF_OK && torn == QF_JOURNAL_TORN)
            errf(err, err_size,
                 "%s: warning: the last line is cut short (an interrupted run?); that case is left out",
                 path);
        else if (st == QF_OK && torn)
            errf(err, err_size, "%s: warning: the last line is not a case record; it is left out", path);
        return st;
    }
    doc = json_loadf(f, 0, &je);
    fclose(f);
    if (!doc) {
        errf(err, err_size, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
        return QF_EPARSE;
    }
    if (!json_is_object(doc)) {
        errf(err, err_size, "%s: not a qualify report (a JSON object expected)", path);
        json_decref(doc);
        return QF_EPARSE;
    }
    v = json_object_get(doc, "schema_version");
    if (!json_is_integer(v)) {
        errf(err, err_size, "%s: not a qualify report (no integer 'schema_version')", path);
        json_decref(doc);
        return QF_EPARSE;
    }
    if (json_integer_value(v) > QF_REPORT_SCHEMA_VERSION || json_integer_value(v) < 1) {
        errf(err, err_size, "%s: schema_version %lld is not supported (this qualify reads 1..%d)", path,
             (long long)json_integer_value(v), QF_REPORT_SCHEMA_VERSION);
        json_decref(doc);
        return QF_EUNSUPPORTED;
    }
    cases = json_object_get(doc, "cases");
    if (!json_is_array(cases)) {
        errf(err, err_size, "%s: 'cases': an array expected", path);
        json_decref(doc);
        return QF_EPARSE;
    }
    rs = calloc(json_array_size(cases) ? json_array_size(cases) : 1, sizeof *rs);
    if (!rs) {
        json_decref(doc);
        return QF_ENOMEM;
    }
    json_array_foreach(cases, i, v)
    {
        char sub[384];
        st = qf_result_from_json(v, &rs[i], sub, sizeof sub);
        if (st != QF_OK) {
            errf(err, err_size, "%s: cases[%zu]: %s", path, i, sub);
            free(rs);
            json_decref(doc);
            return st;
        }
        /* Every verdict decided again from its evidence (docs/verdicts.md
         * "Evidence"): a report edited by hand is refused. */
        if (qf_result_recheck(&rs[i], sub, sizeof sub)) {
            errf(err, err_size, "%s: cases[%zu] (%s %s): %s", path, i, rs[i].kernel, rs[i].case_id, sub);
            free(rs);
            json_decref(doc);
            return QF_EPARSE;
        }
        /* The report's reproduce is what a reader sees; keep them equal. */
        if (!rs[i].reproducer[0] && json_is_string(json_object_get(v, "reproduce"))) {
            const json_t *rp = json_object_get(v, "reproduce");
            if (json_string_length(rp) >= sizeof rs[i].reproducer) { /* refused, never cut */
                errf(err, err_size, "%s: cases[%zu]: member 'reproduce' is %zu bytes long, longer than the %zu a "
                     "result holds", path, i, json_string_length(rp), sizeof rs[i].reproducer - 1);
                free(rs);
                json_decref(doc);
                return QF_EPARSE;
            }
            snprintf(rs[i].reproducer, sizeof rs[i].reproducer, "%s", json_string_value(rp));
        }
    }
    if (prov) {
        char sub[256];
        st = qf_report_provenance_from_json(json_object_get(doc, "provenance"), prov, sub, sizeof sub);
        if (st != QF_OK) {
            errf(err, err_size, "%s: %s", path, sub);
            free(rs);
            json_decref(doc);
            return st;
        }
    }
    *results = rs;
    *n = json_array_size(cases);
    json_decref(doc);
    return QF_OK;
}
