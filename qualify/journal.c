/* journal.c: result records as JSON, and the JSON Lines journal
 * (qf_result.h, docs/runner.md "Journal"). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "_escape.h"
#include "_evidence.h"
#include "_files.h"
#include "_json.h"
#include "_runner.h"
#include "_status.h"
#include "qf_result.h"

/* A message without a status (the callers return their own). */
#define errf(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

void qf_result_init(qf_result *r)
{
    memset(r, 0, sizeof *r);
    r->verdict = QF_VERDICT_SKIPPED;
    r->bound.rel_abs = r->bound.rel_out = r->bound.abs_min = NAN;
    r->bound.chain = r->bound.eta = r->bound.prob = NAN;
    r->bound.claimed_ulp = r->bound.max_bound = r->bound.max_bound_ulp = NAN;
    r->timing.median_s = r->timing.min_s = r->timing.max_s = r->timing.spread = NAN;
    r->wall_s = NAN;
    r->device_index = -1;
    r->metrics.max_ulp_nonzero = r->metrics.max_abs_zero = NAN; /* not in a record of an older qualify */
    r->cause = QF_CAUSE_SKIPPED;
    r->ev = qf_evidence_default();
    r->ev.outcome = QF_CAUSE_SKIPPED;
    r->policy = qf_policy_default(0);
}

void qf_result_key(const qf_result *r, char *buf, size_t size)
{
    snprintf(buf, size, "%s %s", r->kernel, r->case_id);
}

/* ---- qf_metrics --------------------------------------------------------- */

/* One table drives both directions, so writer and reader cannot drift. */
typedef enum { F_SIZE, F_REAL } ftype;
typedef struct mfield {
    const char *name;
    ftype type;
    size_t off;
} mfield;

#define MS(f)                                                                                                \
    {                                                                                                        \
#f, F_SIZE, offsetof(qf_metrics, f)                                                                  \
    }
#define MR(f)                                                                                                \
    {                                                                                                        \
#f, F_REAL, offsetof(qf_metrics, f)                                                                  \
    }
/* clang-format off */
static const mfield metric_fields[] = {
    MS(n), MS(n_checked), MS(n_undecided), MS(n_undefined),
    MR(max_ulp), MR(max_abs), MR(max_rel), MR(max_util),
    MS(at_ulp), MS(at_abs), MS(at_rel), MS(at_util),
    MR(normwise), MR(bias), MR(bias_ulp), MR(rms), MR(sqnr_db), MR(cosine), MR(diff_dg),
    MS(nan_mismatch), MS(inf_mismatch), MS(nonfinite_bad), MS(at_nonfinite_bad), MS(finite_bad),
    MS(at_finite_bad), MS(signed_zero_mismatch),
    MS(n_exact_rounded), MR(frac_exact_rounded), MS(n_zero_ref), MR(frac_zero_ref),
    MS(n_bound), MS(n_violations), MS(at_violation), MR(viol_err), MR(viol_bound),
    MR(viol_err_ulp), MR(viol_bound_ulp), MS(cols),
    MR(max_ulp_nonzero), MS(at_ulp_nonzero), MS(n_zero_checked), MS(n_zero_inexact), MR(max_abs_zero),
    MS(at_abs_zero),
};
/* clang-format on */
#define N_METRIC_FIELDS (sizeof metric_fields / sizeof metric_fields[0])

static json_t *jsize(size_t v)
{
    /* SIZE_MAX ("no such element") goes out as -1 and comes back. */
    return json_integer((json_int_t)(long long)v);
}

static json_t *jarray_reals(const double *v, size_t n)
{
    json_t *a = json_array();
    size_t i;
    for (i = 0; a && i < n; i++)
        if (json_array_append_new(a, _qf_json_real(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

qf_status qf_metrics_to_json(const qf_metrics *m, json_t **out)
{
    json_t *o = json_object();
    size_t i;
    int bad = !o;
    for (i = 0; !bad && i < N_METRIC_FIELDS; i++) {
        const char *p = (const char *)m + metric_fields[i].off;
        if (metric_fields[i].type == F_SIZE)
            bad |= _qf_json_set_new(o, metric_fields[i].name, jsize(*(const size_t *)(const void *)p));
        else
            bad |=
                _qf_json_set_new(o, metric_fields[i].name, _qf_json_real(*(const double *)(const void *)p));
    }
    if (!bad)
        bad |= _qf_json_set_new(o, "pct_ulp", jarray_reals(m->pct_ulp, QF_METRICS_NPCT)) |
               _qf_json_set_new(o, "pct_abs", jarray_reals(m->pct_abs, QF_METRICS_NPCT)) |
               _qf_json_set_new(o, "pct_rel", jarray_reals(m->pct_rel, QF_METRICS_NPCT)) |
               _qf_json_set_new(o, "pct_util", jarray_reals(m->pct_util, QF_METRICS_NPCT));
    if (bad) {
        json_decref(o);
        return QF_ENOMEM;
    }
    *out = o;
    return QF_OK;
}

static int get_reals(const json_t *o, const char *key, double *v, size_t n)
{
    const json_t *a = json_object_get(o, key);
    size_t i;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) != n)
        return -1;
    for (i = 0; i < n; i++)
        if (_qf_json_get_real(json_array_get(a, i), &v[i]))
            return -1;
    return 0;
}

qf_status qf_metrics_from_json(const json_t *j, qf_metrics *m, char *err, size_t err_size)
{
    size_t i;
    if (!json_is_object(j)) {
        errf(err, err_size, "metrics: an object expected");
        return QF_EPARSE;
    }
    memset(m, 0, sizeof *m);
    for (i = 0; i < N_METRIC_FIELDS; i++) {
        const json_t *v = json_object_get(j, metric_fields[i].name);
        char *p = (char *)m + metric_fields[i].off;
        if (metric_fields[i].type == F_SIZE) {
            if (!v)
                continue;
            if (!json_is_integer(v)) {
                errf(err, err_size, "metrics.%s: an integer expected", metric_fields[i].name);
                return QF_EPARSE;
            }
            *(size_t *)(void *)p = (size_t)(long long)json_integer_value(v);
        } else {
            double d = NAN;
            if (v && _qf_json_get_real(v, &d)) {
                errf(err, err_size, "metrics.%s: a number expected", metric_fields[i].name);
                return QF_EPARSE;
            }
            *(double *)(void *)p = d;
        }
    }
    for (i = 0; i < QF_METRICS_NPCT; i++)
        m->pct_ulp[i] = m->pct_abs[i] = m->pct_rel[i] = m->pct_util[i] = NAN;
    if (get_reals(j, "pct_ulp", m->pct_ulp, QF_METRICS_NPCT) ||
        get_reals(j, "pct_abs", m->pct_abs, QF_METRICS_NPCT) ||
        get_reals(j, "pct_rel", m->pct_rel, QF_METRICS_NPCT) ||
        get_reals(j, "pct_util", m->pct_util, QF_METRICS_NPCT)) {
        errf(err, err_size, "metrics.pct_*: an array of %d numbers expected", QF_METRICS_NPCT);
        return QF_EPARSE;
    }
    return QF_OK;
}

/* ---- qf_result ------------------------------------------------------------ */
static int artifacts_to_json(const qf_result *r, json_t *o);


qf_status qf_result_to_json(const qf_result *r, json_t **out)
{
    json_t *o = json_object(), *a, *x;
    size_t i;
    int bad = !o;
    if (bad)
        return QF_ENOMEM;
    bad |= _qf_json_set_new(o, "record", json_string("case"));
    bad |= _qf_json_set_new(o, "case_id", json_string(r->case_id));
    bad |= _qf_json_set_new(o, "suite", json_string(r->suite));
    bad |= _qf_json_set_new(o, "op", json_string(r->op));
    bad |= _qf_json_set_new(o, "kernel", json_string(r->kernel));
    bad |= _qf_json_set_new(o, "kernel_kind", json_string(r->kernel_kind));
    bad |= _qf_json_set_new(o, "kernel_origin", json_string(r->kernel_origin));
    if (r->claim_origin[0]) /* only when a claim file replaced the kernel's claim */
        bad |= _qf_json_set_new(o, "claim_origin", json_string(r->claim_origin));
    bad |= _qf_json_set_new(o, "dtype", json_string(r->dtype));
    bad |= _qf_json_set_new(o, "dtype_tuple", json_string(r->dtype_tuple));
    x = json_object();
    for (i = 0; x && i < r->nroles && i < QF_RESULT_MAX_ROLES; i++)
        bad |= _qf_json_set_new(x, r->roles[i].role, json_string(r->roles[i].format));
    bad |= _qf_json_set_new(o, "roles", x);
    /* Shapes and parameters as arrays of pairs: the order is the op's. */
    a = json_array();
    for (i = 0; a && i < r->ndims && i < QF_RESULT_MAX_DIMS; i++)
        bad |= json_array_append_new(a, json_pack("[s, I]", r->dims[i].name, (json_int_t)r->dims[i].value));
    bad |= _qf_json_set_new(o, "dims", a);
    a = json_array();
    for (i = 0; a && i < r->nparams && i < QF_RESULT_MAX_PARAMS; i++)
        bad |= json_array_append_new(a, json_pack("[s, s]", r->params[i].key, r->params[i].value));
    bad |= _qf_json_set_new(o, "params", a);
    bad |= _qf_json_set_new(o, "input", json_string(r->input));
    /* A uint64 seed may exceed json_int_t: text keeps every bit. */
    {
        char s[32];
        snprintf(s, sizeof s, "%llu", (unsigned long long)r->seed);
        bad |= _qf_json_set_new(o, "seed", json_string(s));
    }
    bad |= _qf_json_set_new(o, "arch", json_string(r->arch));
    if (r->device_index >= 0)
        bad |= _qf_json_set_new(o, "device", json_pack("{s:i, s:s, s:s}", "index", r->device_index, "uuid",
                                                       r->device_uuid, "name", r->device_name));
    bad |= _qf_json_set_new(o, "verdict", json_string(qf_verdict_name(r->verdict)));
    /* One line (docs/reports.md): a kernel's message may carry ESC, CR,
     * LF or bytes that are not UTF-8; they are stored as visible escapes,
     * cut to the field's size. */
    {
        char line[QF_RESULT_TEXT_MAX];
        bad |= _qf_json_set_new(o, "reason", json_string(_qf_esc_line(line, sizeof line, r->reason)));
    }
    /* What the verdict was decided from (docs/verdicts.md "Evidence"):
     * readers decide again and refuse a record that does not follow. */
    bad |= _qf_json_set_new(o, "cause", json_string(qf_cause_name(r->cause)));
    bad |= _qf_json_set_new(o, "evidence", _qf_evidence_to_json(&r->ev));
    bad |= _qf_json_set_new(o, "policy", _qf_policy_to_json(&r->policy));
    bad |= _qf_json_set_new(o, "signal", json_integer(r->signal));
    bad |= _qf_json_set_new(o, "exit_code", json_integer(r->exit_code));
    if (r->kernel_output_bytes) {
        bad |= _qf_json_set_new(o, "kernel_output", json_string(r->kernel_output));
        bad |= _qf_json_set_new(o, "kernel_output_bytes", jsize(r->kernel_output_bytes));
    }
    if (r->has_metrics) {
        json_t *m = NULL;
        if (qf_metrics_to_json(&r->metrics, &m) != QF_OK)
            bad = 1;
        else
            bad |= _qf_json_set_new(o, "metrics", m);
    } else {
        bad |= _qf_json_set_new(o, "metrics", json_null());
    }
    x = json_object();
    if (x) {
        bad |= _qf_json_set_new(x, "kind", json_string(r->bound.kind));
        bad |= _qf_json_set_new(x, "rel_abs", _qf_json_real(r->bound.rel_abs));
        bad |= _qf_json_set_new(x, "rel_out", _qf_json_real(r->bound.rel_out));
        bad |= _qf_json_set_new(x, "abs_min", _qf_json_real(r->bound.abs_min));
        bad |= _qf_json_set_new(x, "chain", _qf_json_real(r->bound.chain));
        bad |= _qf_json_set_new(x, "eta", _qf_json_real(r->bound.eta));
        bad |= _qf_json_set_new(x, "prob", _qf_json_real(r->bound.prob));
        bad |= _qf_json_set_new(x, "claimed_ulp", _qf_json_real(r->bound.claimed_ulp));
        bad |= _qf_json_set_new(x, "max_bound", _qf_json_real(r->bound.max_bound));
        bad |= _qf_json_set_new(x, "max_bound_ulp", _qf_json_real(r->bound.max_bound_ulp));
    }
    bad |= _qf_json_set_new(o, "bound", x);
    bad |= _qf_json_set_new(o, "n_elements", jsize(r->n_elements));
    bad |= _qf_json_set_new(o, "n_checked", jsize(r->n_checked));
    bad |= _qf_json_set_new(o, "sampled", json_boolean(r->sampled));
    bad |= _qf_json_set_new(o, "ref_status",
                            json_pack("{s:I, s:I, s:I, s:I}", "exact", (json_int_t)r->ref_exact, "rounded",
                                      (json_int_t)r->ref_rounded, "undecided", (json_int_t)r->ref_undecided,
                                      "undefined", (json_int_t)r->ref_undefined));
    bad |= _qf_json_set_new(o, "ref_exact_engine", jsize(r->ref_exact_engine));
    bad |= _qf_json_set_new(o, "determinism",
                            json_pack("{s:b, s:b, s:o}", "checked", r->det_checked, "equal", r->det_equal,
                                      "first_diff", jsize(r->det_first_diff)));
    if (r->timing.measured) {
        x = json_object();
        if (x) {
            bad |= _qf_json_set_new(x, "warmup", jsize(r->timing.warmup));
            bad |= _qf_json_set_new(x, "reps", jsize(r->timing.reps));
            bad |= _qf_json_set_new(x, "median_s", _qf_json_real(r->timing.median_s));
            bad |= _qf_json_set_new(x, "min_s", _qf_json_real(r->timing.min_s));
            bad |= _qf_json_set_new(x, "max_s", _qf_json_real(r->timing.max_s));
            bad |= _qf_json_set_new(x, "spread", _qf_json_real(r->timing.spread));
        }
        bad |= _qf_json_set_new(o, "timing", x);
    } else {
        bad |= _qf_json_set_new(o, "timing", json_null());
    }
    bad |= _qf_json_set_new(o, "case_bytes", jsize(r->case_bytes));
    bad |= _qf_json_set_new(o, "tensor_bytes", jsize(r->tensor_bytes));
    bad |= _qf_json_set_new(o, "peak_rss_bytes", jsize(r->peak_rss_bytes));
    bad |= _qf_json_set_new(o, "wall_s", _qf_json_real(r->wall_s));
    bad |= _qf_json_set_new(o, "started", json_string(r->started));
    bad |= artifacts_to_json(r, o);
    bad |= _qf_json_set_new(o, "reproducer", json_string(r->reproducer));
    if (bad) {
        json_decref(o);
        return QF_ENOMEM;
    }
    *out = o;
    return QF_OK;
}

/* Copy a string member into a fixed buffer; absent: keep; wrong type: -1;
 * longer than the buffer holds: -2.  A long string is refused, never cut:
 * a kernel name or case id cut short is another kernel's or case's, and
 * show, diff, report and enable would silently merge or misname them. */
static int get_str(const json_t *o, const char *key, char *dst, size_t size)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return -1;
    if (json_string_length(v) >= size)
        return -2;
    snprintf(dst, size, "%s", json_string_value(v));
    return 0;
}

/* QF_EPARSE, "member 'WHAT' is N bytes long, longer than the MAX a result
 * holds" (the caller adds the file and the record). */
static qf_status too_long(char *err, size_t err_size, const char *what, size_t len, size_t size)
{
    errf(err, err_size, "member '%s' is %zu bytes long, longer than the %zu a result holds", what, len,
         size - 1);
    return QF_EPARSE;
}

/* Copy S into dst[size] unless it does not fit (then -1). */
static int put_str(char *dst, size_t size, const json_t *s)
{
    if (json_string_length(s) >= size)
        return -1;
    snprintf(dst, size, "%s", json_string_value(s));
    return 0;
}

static int get_size(const json_t *o, const char *key, size_t *dst)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return -1;
    *dst = (size_t)(long long)json_integer_value(v);
    return 0;
}

static int get_int(const json_t *o, const char *key, int *dst)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (json_is_boolean(v)) {
        *dst = json_is_true(v);
        return 0;
    }
    if (!json_is_integer(v))
        return -1;
    *dst = (int)json_integer_value(v);
    return 0;
}

static int get_dbl(const json_t *o, const char *key, double *dst)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    return _qf_json_get_real(v, dst);
}

/* ---- --save-failing's members (runner_artifacts.c) ----------------------- */

void qf_result_artifact_file(const char *key, char *buf, size_t size)
{
    size_t i, n = 0;
    if (!size)
        return;
    if (!strcmp(key, "suite")) {
        snprintf(buf, size, "repro.yaml");
        return;
    }
    for (i = 0; key[i] && n + 1 < size; i++)
        buf[n++] = key[i] == ':' ? '.' : key[i];
    snprintf(buf + n, size - n, ".npy");
}

/* "artifacts" (key -> path relative to the output directory),
 * "artifacts_note", "artifacts_reproducer", each only when there is one;
 * nonzero when out of memory. */
static int artifacts_to_json(const qf_result *r, json_t *o)
{
    int bad = 0;
    size_t i;
    if (r->nartifacts) {
        json_t *a = json_object();
        for (i = 0; a && i < r->nartifacts && i < QF_RESULT_MAX_ARTIFACTS; i++) {
            char file[QF_RESULT_ARTIFACT_KEY + 16];
            qf_result_artifact_file(r->artifacts[i], file, sizeof file);
            bad |= _qf_json_set_new(a, r->artifacts[i], json_sprintf("%s/%s", r->artifacts_dir, file));
        }
        bad |= _qf_json_set_new(o, "artifacts", a);
    }
    if (r->artifacts_note[0])
        bad |= _qf_json_set_new(o, "artifacts_note", json_string(r->artifacts_note));
    if (r->artifacts_reproducer[0])
        bad |= _qf_json_set_new(o, "artifacts_reproducer", json_string(r->artifacts_reproducer));
    return bad;
}

/* The inverse: every path must be one directory and its key's file name
 * (qf_result_artifact_file), which is all a record keeps.  0, or -1 with
 * the message in err. */
static int artifacts_from_json(const json_t *j, qf_result *r, char *err, size_t err_size)
{
    const json_t *x = json_object_get(j, "artifacts"), *v;
    const char *key, *m = NULL;
    if (get_str(j, "artifacts_note", r->artifacts_note, sizeof r->artifacts_note))
        m = "artifacts_note";
    else if (get_str(j, "artifacts_reproducer", r->artifacts_reproducer, sizeof r->artifacts_reproducer))
        m = "artifacts_reproducer";
    if (m) {
        errf(err, err_size, "member '%s': a string of at most %d bytes expected", m,
             !strcmp(m, "artifacts_note") ? QF_RESULT_TEXT_MAX - 1 : QF_RESULT_CMD_MAX - 1);
        return -1;
    }
    if (!x)
        return 0;
    if (!json_is_object(x) || json_object_size(x) > QF_RESULT_MAX_ARTIFACTS) {
        errf(err, err_size, "member 'artifacts': an object of at most %d paths expected", QF_RESULT_MAX_ARTIFACTS);
        return -1;
    }
    json_object_foreach((json_t *)x, key, v)
    {
        char file[QF_RESULT_ARTIFACT_KEY + 16];
        const char *path = json_string_value(v);
        size_t plen = path ? strlen(path) : 0, flen, dlen;
        if (strlen(key) >= QF_RESULT_ARTIFACT_KEY) {
            errf(err, err_size, "member 'artifacts': key '%.40s' is longer than the %d bytes a result holds", key,
                 QF_RESULT_ARTIFACT_KEY - 1);
            return -1;
        }
        qf_result_artifact_file(key, file, sizeof file);
        flen = strlen(file);
        dlen = plen > flen + 1 ? plen - flen - 1 : 0;
        if (!dlen || path[dlen] != '/' || strcmp(path + dlen + 1, file) || dlen >= sizeof r->artifacts_dir ||
            (r->nartifacts && (strlen(r->artifacts_dir) != dlen || strncmp(path, r->artifacts_dir, dlen)))) {
            errf(err, err_size, "member 'artifacts': '%s' must be DIR/%s, DIR the same for every file", key,
                 file);
            return -1;
        }
        snprintf(r->artifacts_dir, sizeof r->artifacts_dir, "%.*s", (int)dlen, path);
        snprintf(r->artifacts[r->nartifacts++], QF_RESULT_ARTIFACT_KEY, "%s", key);
    }
    return 0;
}

#define BAD(what)                                                                                            \
    do {                                                                                                     \
        errf(err, err_size, "member '%s': %s", what, "wrong type or value");                                 \
        return QF_EPARSE;                                                                                    \
    } while (0)

qf_status qf_result_from_json(const json_t *j, qf_result *r, char *err, size_t err_size)
{
    const json_t *v, *x;
    const char *key;
    size_t i;
    qf_result_init(r);
    if (!json_is_object(j)) {
        errf(err, err_size, "a JSON object expected");
        return QF_EPARSE;
    }
    v = json_object_get(j, "record");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), "case")))
        BAD("record");
    if (!json_is_string(json_object_get(j, "case_id")))
        BAD("case_id");
    {
        /* Each string member by name, so a wrong type names the member. */
        struct {
            const char *key;
            char *dst;
            size_t size;
        } const strs[] = {
            {"case_id", r->case_id, sizeof r->case_id},
            {"suite", r->suite, sizeof r->suite},
            {"op", r->op, sizeof r->op},
            {"kernel", r->kernel, sizeof r->kernel},
            {"kernel_kind", r->kernel_kind, sizeof r->kernel_kind},
            {"kernel_origin", r->kernel_origin, sizeof r->kernel_origin},
            {"claim_origin", r->claim_origin, sizeof r->claim_origin},
            {"dtype", r->dtype, sizeof r->dtype},
            {"dtype_tuple", r->dtype_tuple, sizeof r->dtype_tuple},
            {"input", r->input, sizeof r->input},
            {"arch", r->arch, sizeof r->arch},
            {"reason", r->reason, sizeof r->reason},
            {"kernel_output", r->kernel_output, sizeof r->kernel_output},
            {"started", r->started, sizeof r->started},
            {"reproducer", r->reproducer, sizeof r->reproducer},
        };
        for (i = 0; i < sizeof strs / sizeof strs[0]; i++) {
            int g = get_str(j, strs[i].key, strs[i].dst, strs[i].size);
            if (g == -2)
                return too_long(err, err_size, strs[i].key,
                                json_string_length(json_object_get(j, strs[i].key)), strs[i].size);
            if (g) {
                errf(err, err_size, "member '%s': a string expected", strs[i].key);
                return QF_EPARSE;
            }
        }
    }
    x = json_object_get(j, "roles");
    if (x) {
        if (!json_is_object(x))
            BAD("roles");
        json_object_foreach((json_t *)x, key, v)
        {
            if (r->nroles >= QF_RESULT_MAX_ROLES || !json_is_string(v))
                BAD("roles");
            if (strlen(key) >= sizeof r->roles[0].role)
                return too_long(err, err_size, "roles (a role name)", strlen(key), sizeof r->roles[0].role);
            if (put_str(r->roles[r->nroles].format, sizeof r->roles[0].format, v))
                return too_long(err, err_size, "roles (a format)", json_string_length(v),
                                sizeof r->roles[0].format);
            snprintf(r->roles[r->nroles].role, sizeof r->roles[0].role, "%s", key);
            r->nroles++;
        }
    }
    x = json_object_get(j, "dims");
    if (x) {
        if (!json_is_array(x) || json_array_size(x) > QF_RESULT_MAX_DIMS)
            BAD("dims");
        json_array_foreach(x, i, v)
        {
            const json_t *n = json_array_get(v, 0), *val = json_array_get(v, 1);
            if (!json_is_string(n) || !json_is_integer(val))
                BAD("dims");
            if (put_str(r->dims[i].name, sizeof r->dims[i].name, n))
                return too_long(err, err_size, "dims (a name)", json_string_length(n), sizeof r->dims[i].name);
            r->dims[i].value = (uint64_t)json_integer_value(val);
        }
        r->ndims = json_array_size(x);
    }
    x = json_object_get(j, "params");
    if (x) {
        if (!json_is_array(x) || json_array_size(x) > QF_RESULT_MAX_PARAMS)
            BAD("params");
        json_array_foreach(x, i, v)
        {
            const json_t *n = json_array_get(v, 0), *val = json_array_get(v, 1);
            if (!json_is_string(n) || !json_is_string(val))
                BAD("params");
            if (put_str(r->params[i].key, sizeof r->params[i].key, n))
                return too_long(err, err_size, "params (a name)", json_string_length(n),
                                sizeof r->params[i].key);
            if (put_str(r->params[i].value, sizeof r->params[i].value, val))
                return too_long(err, err_size, "params (a value)", json_string_length(val),
                                sizeof r->params[i].value);
        }
        r->nparams = json_array_size(x);
    }
    v = json_object_get(j, "seed");
    if (v) {
        char *end;
        if (json_is_integer(v))
            r->seed = (uint64_t)json_integer_value(v);
        else if (json_is_string(v)) {
            errno = 0;
            r->seed = strtoull(json_string_value(v), &end, 10);
            if (errno || *end)
                BAD("seed");
        } else
            BAD("seed");
    }
    v = json_object_get(j, "verdict");
    if (!json_is_string(v) || qf_verdict_lookup(json_string_value(v), &r->verdict) != QF_OK)
        BAD("verdict");
    v = json_object_get(j, "cause");
    if (v && (!json_is_string(v) || qf_cause_lookup(json_string_value(v), &r->cause) != QF_OK))
        BAD("cause");
    /* No evidence (a record of a qualify before journal version 2): an
     * outcome no rule knows, so qf_result_recheck says so. */
    r->ev.outcome = QF_CAUSE_COUNT;
    x = json_object_get(j, "evidence");
    if (x) {
        char sub[256];
        if (_qf_evidence_from_json(x, &r->ev, sub, sizeof sub) != QF_OK ||
            _qf_policy_from_json(json_object_get(j, "policy"), &r->policy, sub, sizeof sub) != QF_OK) {
            errf(err, err_size, "%s", sub);
            return QF_EPARSE;
        }
    }
    if (get_int(j, "signal", &r->signal) || get_int(j, "exit_code", &r->exit_code))
        BAD("signal");
    x = json_object_get(j, "device");
    if (x && (!json_is_object(x) || get_int(x, "index", &r->device_index) ||
              get_str(x, "uuid", r->device_uuid, sizeof r->device_uuid) ||
              get_str(x, "name", r->device_name, sizeof r->device_name)))
        BAD("device");
    if (get_size(j, "kernel_output_bytes", &r->kernel_output_bytes))
        BAD("kernel_output_bytes");
    x = json_object_get(j, "metrics");
    if (x && !json_is_null(x)) {
        char sub[256];
        if (qf_metrics_from_json(x, &r->metrics, sub, sizeof sub) != QF_OK) {
            errf(err, err_size, "member 'metrics': %s", sub);
            return QF_EPARSE;
        }
        r->has_metrics = 1;
    }
    x = json_object_get(j, "bound");
    if (x) {
        if (json_is_object(x) && get_str(x, "kind", r->bound.kind, sizeof r->bound.kind) == -2)
            return too_long(err, err_size, "bound.kind", json_string_length(json_object_get(x, "kind")),
                            sizeof r->bound.kind);
        if (!json_is_object(x) || get_str(x, "kind", r->bound.kind, sizeof r->bound.kind) ||
            get_dbl(x, "rel_abs", &r->bound.rel_abs) || get_dbl(x, "rel_out", &r->bound.rel_out) ||
            get_dbl(x, "abs_min", &r->bound.abs_min) || get_dbl(x, "chain", &r->bound.chain) ||
            get_dbl(x, "eta", &r->bound.eta) || get_dbl(x, "prob", &r->bound.prob) ||
            get_dbl(x, "claimed_ulp", &r->bound.claimed_ulp) ||
            get_dbl(x, "max_bound", &r->bound.max_bound) ||
            get_dbl(x, "max_bound_ulp", &r->bound.max_bound_ulp))
            BAD("bound");
    }
    if (get_size(j, "n_elements", &r->n_elements) || get_size(j, "n_checked", &r->n_checked) ||
        get_int(j, "sampled", &r->sampled))
        BAD("n_elements");
    x = json_object_get(j, "ref_status");
    if (x && (!json_is_object(x) || get_size(x, "exact", &r->ref_exact) ||
              get_size(x, "rounded", &r->ref_rounded) || get_size(x, "undecided", &r->ref_undecided) ||
              get_size(x, "undefined", &r->ref_undefined)))
        BAD("ref_status");
    if (get_size(j, "ref_exact_engine", &r->ref_exact_engine))
        BAD("ref_exact_engine");
    x = json_object_get(j, "determinism");
    if (x && (!json_is_object(x) || get_int(x, "checked", &r->det_checked) ||
              get_int(x, "equal", &r->det_equal) || get_size(x, "first_diff", &r->det_first_diff)))
        BAD("determinism");
    x = json_object_get(j, "timing");
    if (x && !json_is_null(x)) {
        if (!json_is_object(x) || get_size(x, "warmup", &r->timing.warmup) ||
            get_size(x, "reps", &r->timing.reps) || get_dbl(x, "median_s", &r->timing.median_s) ||
            get_dbl(x, "min_s", &r->timing.min_s) || get_dbl(x, "max_s", &r->timing.max_s) ||
            get_dbl(x, "spread", &r->timing.spread))
            BAD("timing");
        r->timing.measured = 1;
    }
    if (get_size(j, "case_bytes", &r->case_bytes) || get_size(j, "tensor_bytes", &r->tensor_bytes) ||
        get_size(j, "peak_rss_bytes", &r->peak_rss_bytes))
        BAD("peak_rss_bytes");
    if (get_dbl(j, "wall_s", &r->wall_s))
        BAD("wall_s");
    if (artifacts_from_json(j, r, err, err_size))
        return QF_EPARSE;
    return QF_OK;
}

/* ---- The journal --------------------------------------------------------- */

struct qf_journal {
    int fd;
    char *path;
    size_t count;
    int batch; /* qf_journal_set_batch: fsync at close only */
};

/* Write all of buf (one record line), retrying short writes. */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_line(int fd, const json_t *o, int sync)
{
    /* JSON_COMPACT keeps one record on one line; 17 digits round-trip. */
    char *s = _qf_json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    size_t n;
    int rc;
    if (!s)
        return -1;
    n = strlen(s);
    s[n] = '\n'; /* overwrite the NUL: the line goes out in one write */
    rc = write_all(fd, s, n + 1);
    free(s);
    if (rc == 0 && sync)
        rc = fsync(fd);
    return rc;
}

/* 1 when LINE (LEN bytes, its newline left out) is a line the reader
 * accepts: the header or a case record qf_result_from_json takes. */
static int line_is_record(const char *line, size_t len)
{
    json_error_t je;
    json_t *o = json_loadb(line, len, 0, &je);
    const json_t *rec;
    qf_result *r;
    int ok = 0;
    if (!o)
        return 0;
    rec = json_object_get(o, "record");
    if (json_is_string(rec) && !strcmp(json_string_value(rec), "header"))
        ok = 1;
    else if ((r = malloc(sizeof *r)) != NULL) {
        ok = qf_result_from_json(o, r, NULL, 0) == QF_OK;
        free(r);
    } else {
        ok = -1;
    }
    json_decref(o);
    return ok;
}

/* Where the line that ends before END starts: just after the last '\n'
 * before END, or 0.  Read backwards in blocks (a torn or garbage line may
 * be megabytes; a byte per pread(2) took 30 s for 17 MiB).  -1 on error. */
static off_t line_start(int fd, off_t end)
{
    char buf[65536];
    while (end > 0) {
        size_t n = end < (off_t)sizeof buf ? (size_t)end : sizeof buf;
        ssize_t i;
        if (pread(fd, buf, n, end - (off_t)n) != (ssize_t)n)
            return -1;
        for (i = (ssize_t)n - 1; i >= 0; i--)
            if (buf[i] == '\n')
                return end - (off_t)n + i + 1;
        end -= (off_t)n;
    }
    return 0;
}

/* Repair the end of a journal before a resume appends to it, the same way
 * qf_journal_read judges it: a last line without its newline (a torn
 * write) is cut off (QF_JOURNAL_TORN); a complete last line that is not a
 * record (garbage, a record cut and then terminated) is cut off too
 * (QF_JOURNAL_DROPPED): left in place it would sit in the middle of the
 * file once a record is appended, and every later read would refuse the
 * journal.  Only the last line: a bad line before it is refused by the
 * reader.  Returns -1 on an I/O error, else 0 with *torn set. */
static int repair_tail(int fd, int *torn)
{
    off_t size = lseek(fd, 0, SEEK_END), start;
    char c, *line;
    int ok;
    *torn = 0;
    if (size <= 0)
        return size < 0 ? -1 : 0;
    if (pread(fd, &c, 1, size - 1) != 1)
        return -1;
    if (c != '\n') {
        if ((start = line_start(fd, size)) < 0)
            return -1;
        *torn = QF_JOURNAL_TORN;
        if (ftruncate(fd, start) || fsync(fd))
            return -1;
        return 0;
    }
    if ((start = line_start(fd, size - 1)) < 0)
        return -1;
    /* A record line is a few KiB (qf_result's strings are bounded); one of
     * over 16 MiB cannot be one, and is not read into memory to find out. */
    if (size - 1 - start > ((off_t)16 << 20)) {
        *torn = QF_JOURNAL_DROPPED;
        return ftruncate(fd, start) || fsync(fd) ? -1 : 0;
    }
    if (!(line = malloc((size_t)(size - 1 - start) + 1)))
        return -1;
    if (pread(fd, line, (size_t)(size - 1 - start), start) != size - 1 - start) {
        free(line);
        return -1;
    }
    ok = line_is_record(line, (size_t)(size - 1 - start));
    free(line);
    if (ok < 0)
        return -1;
    if (!ok) {
        *torn = QF_JOURNAL_DROPPED;
        if (ftruncate(fd, start) || fsync(fd))
            return -1;
    }
    return 0;
}

/* The header line: the format's members, then header's own. */
static json_t *header_line(const json_t *header)
{
    json_t *h = json_pack("{s:s, s:s, s:i}", "record", "header", "format", "qualify-journal", "version",
                          QF_RESULT_JOURNAL_VERSION);
    const char *k;
    json_t *v;
    if (h && json_is_object(header)) {
        json_object_foreach((json_t *)header, k, v)
        {
            if (!json_object_get(h, k))
                json_object_set(h, k, v);
        }
    }
    return h;
}

/* A new journal at path holding the header line h: written beside it and
 * renamed over it (_files.h: whatever a kernel planted at the name, a link
 * or a FIFO, is replaced, never written through); a descriptor of the new
 * file, or -1 with the message in err. */
static int create_journal(const char *path, const json_t *h, char *err, size_t err_size)
{
    _qf_out o;
    int fd;
    if (!_qf_out_open(&o, path, _QF_OUT_SYNC, err, err_size))
        return -1;
    if ((fd = fcntl(fileno(o.f), F_DUPFD_CLOEXEC, 0)) < 0 || write_line(fd, h, 0)) {
        errf(err, err_size, "%s: cannot write the journal header: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        _qf_out_abort(&o);
        return -1;
    }
    if (_qf_out_commit(&o, err, err_size) != QF_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

qf_status qf_journal_open(const char *path, int resume, const json_t *header, qf_journal **out, int *torn,
                          char *err, size_t err_size)
{
    qf_journal *j;
    int fd = -1, t = 0;
    off_t end = 0;
    struct stat st;
    json_t *h;
    if (!path || !out)
        return QF_EINVAL;
    *out = NULL;
    if (torn)
        *torn = 0;
    /* The journal of a resume is read back and cut: it must be a regular
     * file, and is never reached through a link (_qf_open_own; a FIFO's
     * writes would block). */
    if (resume) {
        const char *kind;
        fd = _qf_open_own(path, O_RDWR, &kind);
        if (fd < 0 && kind) {
            errf(err, err_size, "%s: not a regular file (%s%s); the journal must be one", path, kind,
                 strcmp(kind, "a symbolic link") ? "" : ", not followed");
            return QF_EINVAL;
        }
        if (fd < 0 && errno != ENOENT) {
            errf(err, err_size, "%s: cannot open the journal: %s", path, strerror(errno));
            return QF_EIO;
        }
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0) {
            close(fd); /* an empty journal: begun afresh */
            fd = -1;
        }
    }
    if (fd >= 0 && repair_tail(fd, &t)) {
        errf(err, err_size, "%s: cannot repair the journal's last line: %s", path, strerror(errno));
        close(fd);
        return QF_EIO;
    }
    if (fd >= 0 && (end = lseek(fd, 0, SEEK_END)) < 0) {
        close(fd);
        return QF_EIO;
    }
    if (!(h = header_line(header))) {
        if (fd >= 0)
            close(fd);
        return QF_ENOMEM;
    }
    if (fd < 0) {
        fd = create_journal(path, h, err, err_size);
    } else if (end == 0) {
        /* A journal torn inside its header line is empty once repaired: it
         * gets a new header, so the file stays a journal. */
        if (t)
            t |= QF_JOURNAL_REHEADED;
        if (write_line(fd, h, 1)) {
            errf(err, err_size, "%s: cannot write the journal header: %s", path, strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    json_decref(h);
    if (fd < 0)
        return QF_EIO;
    j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        close(fd);
        return QF_ENOMEM;
    }
    j->fd = fd;
    if (torn)
        *torn = t;
    *out = j;
    return QF_OK;
}

qf_status qf_journal_append(qf_journal *j, const qf_result *r)
{
    json_t *o = NULL;
    qf_status s;
    if (!j || !r)
        return QF_EINVAL;
    s = qf_result_to_json(r, &o);
    if (s != QF_OK)
        return s;
    if (write_line(j->fd, o, !j->batch)) {
        json_decref(o);
        return QF_EIO;
    }
    json_decref(o);
    j->count++;
    return QF_OK;
}

void qf_journal_set_batch(qf_journal *j, int batch)
{
    if (j)
        j->batch = batch;
}

size_t qf_journal_count(const qf_journal *j)
{
    return j ? j->count : 0;
}

qf_status qf_journal_close(qf_journal *j)
{
    qf_status s = QF_OK;
    if (!j)
        return QF_OK;
    if (fsync(j->fd) && errno != EINVAL)
        s = QF_EIO;
    if (close(j->fd))
        s = QF_EIO;
    free(j->path);
    free(j);
    return s;
}

/* nofollow: the journal qualify resumes, never read through a link
 * (_qf_fopen_own). */
static qf_status journal_read(const char *path, int nofollow, qf_result **results, size_t *n, int *torn,
                              json_t **header, char *err, size_t err_size)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0, count = 0, alloc = 0, lineno = 0;
    ssize_t len;
    qf_result *res = NULL;
    qf_status st = QF_OK;
    if (!path || !results || !n)
        return QF_EINVAL;
    *results = NULL;
    *n = 0;
    if (torn)
        *torn = 0;
    if (header)
        *header = NULL;
    /* A FIFO or device is refused before it is read (_files.h). */
    f = nofollow ? _qf_fopen_own(path, err, err_size, &st) : _qf_fopen_read(path, err, err_size, &st);
    if (!f) {
        struct stat sb;
        /* bad input (exit 2), not an I/O failure */
        return (nofollow ? lstat(path, &sb) : stat(path, &sb)) == 0 && !S_ISREG(sb.st_mode) ? QF_EINVAL : st;
    }
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *o;
        json_error_t je;
        int complete = line[len - 1] == '\n';
        const json_t *rec;
        lineno++;
        o = json_loadb(line, (size_t)len, 0, &je);
        if (!complete || !o) {
            /* A line cut short, or garbage, at the very end is a torn write. */
            int c = fgetc(f);
            if (!complete || c == EOF) {
                json_decref(o);
                if (torn)
                    *torn = complete ? QF_JOURNAL_DROPPED : QF_JOURNAL_TORN;
                break;
            }
            errf(err, err_size, "%s:%zu: not a JSON record: %s", path, lineno, je.text);
            st = QF_EPARSE;
            break;
        }
        rec = json_object_get(o, "record");
        if (json_is_string(rec) && !strcmp(json_string_value(rec), "header")) {
            if (header && !*header)
                *header = json_incref(o);
            json_decref(o);
            continue;
        }
        if (count == alloc) {
            size_t na = alloc ? 2 * alloc : 64;
            qf_result *nr = realloc(res, na * sizeof *nr);
            if (!nr) {
                json_decref(o);
                st = QF_ENOMEM;
                break;
            }
            res = nr;
            alloc = na;
        }
        {
            char sub[256];
            if (qf_result_from_json(o, &res[count], sub, sizeof sub) != QF_OK) {
                int c = fgetc(f);
                json_decref(o);
                if (c == EOF) {
                    if (torn)
                        *torn = QF_JOURNAL_DROPPED;
                    break;
                }
                errf(err, err_size, "%s:%zu: %s", path, lineno, sub);
                st = QF_EPARSE;
                break;
            }
            /* fgetc above may have consumed a byte only on the error path. */
            if (qf_result_recheck(&res[count], sub, sizeof sub)) {
                json_decref(o);
                errf(err, err_size, "%s:%zu: %s %s: %s", path, lineno, res[count].kernel, res[count].case_id, sub);
                st = QF_EPARSE;
                break;
            }
        }
        json_decref(o);
        count++;
    }
    free(line);
    fclose(f);
    if (st != QF_OK) {
        free(res);
        if (header && *header) {
            json_decref(*header);
            *header = NULL;
        }
        return st;
    }
    *results = res;
    *n = count;
    return QF_OK;
}

qf_status qf_journal_read(const char *path, qf_result **results, size_t *n, int *torn, json_t **header,
                          char *err, size_t err_size)
{
    return journal_read(path, 0, results, n, torn, header, err, err_size);
}

qf_status _qf_journal_read_own(const char *path, qf_result **results, size_t *n, int *torn, json_t **header,
                               char *err, size_t err_size)
{
    return journal_read(path, 1, results, n, torn, header, err, err_size);
}
