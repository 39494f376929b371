/* audit.c: quantization schemes for `qualify audit`, and the error they add
 * (qf_audit.h, docs/audit.md). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "_json.h"
#include "_status.h"
#include "qf_audit.h"
#include "qf_dot.h"
#include "qf_recipe.h"

static const char *const kind_names[QF_AUDIT_KIND_COUNT] = {"cast", "fp8", "mx", "nvfp4", "int"};

const char *qf_audit_kind_name(qf_audit_kind k)
{
    return (unsigned)k < QF_AUDIT_KIND_COUNT ? kind_names[k] : NULL;
}

/* Every audit refusal is a parse error of the scheme text. */
#define fail(err, size, ...) _qf_fail(err, size, QF_EPARSE, NULL, __VA_ARGS__)

/* MX element formats by the names the OCP spec and torchao use. */
static const struct {
    const char *name;
    qf_format_id elem;
} mx_names[] = {
    {"mxfp8", QF_FLOAT8_E4M3FN},      {"mxfp8_e4m3", QF_FLOAT8_E4M3FN},
    {"mxfp8_e5m2", QF_FLOAT8_E5M2},   {"mxfp6", QF_FLOAT6_E2M3FN},
    {"mxfp6_e2m3", QF_FLOAT6_E2M3FN}, {"mxfp6_e3m2", QF_FLOAT6_E3M2FN},
    {"mxfp4", QF_FLOAT4_E2M1FN},      {"mxint8", QF_INT8},
};

#define HEADS_HELP                                                                                           \
    "a format name (cast: bf16, f16, e4m3, ...), an FP8 format with :per_tensor or :per_channel (FP8 "       \
    "scaling), mxfp8, mxfp8_e5m2, mxfp6, mxfp6_e3m2, mxfp4, mxint8, nvfp4, int4, int8"

/* The recipe of each kind that has one (qf_recipe.h); FP8's follows its
 * granularity. */
static qf_scale_recipe kind_recipe(qf_audit_kind k)
{
    switch (k) {
    case QF_AUDIT_MX: return QF_SCALE_RECIPE_MX;
    case QF_AUDIT_NVFP4: return QF_SCALE_RECIPE_NVFP4;
    case QF_AUDIT_INT: return QF_SCALE_RECIPE_GROUP;
    default: return QF_SCALE_RECIPE_NONE;
    }
}

qf_scale_recipe qf_audit_recipe(const qf_audit_scheme *s)
{
    if (s->kind != QF_AUDIT_FP8)
        return kind_recipe(s->kind);
    return s->fp8.granularity == QF_BLOCK_FP8_TENSOR ? QF_SCALE_RECIPE_PER_TENSOR
                                                     : QF_SCALE_RECIPE_PER_CHANNEL;
}

/* A recipe word where the scheme takes none, or another one: name what the
 * scheme's head fixes instead of calling the word unknown. */
static qf_status wrong_recipe(const qf_audit_scheme *s, const char *spec, const char *tok, qf_scale_recipe r,
                              char *err, size_t size)
{
    const char *pt = qf_scale_recipe_name(QF_SCALE_RECIPE_PER_TENSOR),
               *pc = qf_scale_recipe_name(QF_SCALE_RECIPE_PER_CHANNEL);
    if (s->kind == QF_AUDIT_CAST || s->kind == QF_AUDIT_FP8)
        return fail(err, size,
                    "scheme '%s': recipe '%s' (%s) does not apply here: an 8-bit float format takes %s or %s",
                    spec, tok, qf_scale_recipe_name(r), pt, pc);
    return fail(err, size,
                "scheme '%s': recipe '%s' does not apply here: the head fixes the recipe %s (%s and %s "
                "take an 8-bit float format)",
                spec, tok, qf_scale_recipe_name(kind_recipe(s->kind)), pt, pc);
}

/* "g128" / "b32": a positive count after a one-letter prefix. */
static int parse_count(const char *tok, char prefix, size_t *out)
{
    char *end;
    unsigned long v;
    if (tok[0] != prefix || tok[1] < '0' || tok[1] > '9')
        return 0;
    v = strtoul(tok + 1, &end, 10);
    if (*end || v == 0 || v > (1ul << 20))
        return 0;
    *out = v;
    return 1;
}

/* One option of a scheme; *canon is its spelling in the label (a recipe
 * alias becomes the recipe's name, docs/audit.md "Recipe words"). */
static qf_status parse_option(qf_audit_scheme *s, const char *spec, const char *tok, const char **canon,
                              char *err, size_t size)
{
    const char *v = strchr(tok, '=');
    size_t count;
    qf_scale_recipe rec;
    int is_recipe = qf_scale_recipe_lookup_alias(tok, &rec) == QF_OK;
    *canon = tok;
    switch (s->kind) {
    case QF_AUDIT_CAST:
    case QF_AUDIT_FP8:
        if (!strcmp(tok, "sat") || !strcmp(tok, "nosat")) {
            s->saturate = s->fp8.saturate = tok[0] == 's';
            return QF_OK;
        }
        if (qf_format_get(s->cast)->bits == 8 && qf_format_get(s->cast)->kind == QF_KIND_FLOAT) {
            if (is_recipe && (rec == QF_SCALE_RECIPE_PER_TENSOR || rec == QF_SCALE_RECIPE_PER_CHANNEL)) {
                s->kind = QF_AUDIT_FP8;
                s->fp8.granularity =
                    rec == QF_SCALE_RECIPE_PER_TENSOR ? QF_BLOCK_FP8_TENSOR : QF_BLOCK_FP8_ROW;
                *canon = qf_scale_recipe_name(rec);
                return QF_OK;
            }
            if (!strcmp(tok, "mse") || !strcmp(tok, "amax")) {
                s->kind = QF_AUDIT_FP8;
                s->mse = tok[0] == 'm';
                return QF_OK;
            }
            if (!strcmp(tok, "pow2")) {
                s->kind = QF_AUDIT_FP8;
                s->fp8.pow2 = 1;
                return QF_OK;
            }
            if (!strncmp(tok, "margin=", 7)) {
                char *end;
                long m = strtol(tok + 7, &end, 10);
                if (*end || end == tok + 7 || m < 0 || m > 64)
                    return fail(err, size, "scheme '%s': margin '%s' is not an integer in 0..64", spec,
                                tok + 7);
                s->kind = QF_AUDIT_FP8;
                s->fp8.margin = (int)m;
                return QF_OK;
            }
            if (is_recipe)
                return wrong_recipe(s, spec, tok, rec, err, size);
            return fail(err, size,
                        "scheme '%s': unknown option '%s' for an FP8 format (valid: %s, %s, amax, mse, pow2, "
                        "margin=N, sat, nosat; older spellings tensor, channel, row)",
                        spec, tok, qf_scale_recipe_name(QF_SCALE_RECIPE_PER_TENSOR),
                        qf_scale_recipe_name(QF_SCALE_RECIPE_PER_CHANNEL));
        }
        if (is_recipe)
            return wrong_recipe(s, spec, tok, rec, err, size);
        return fail(err, size, "scheme '%s': unknown option '%s' for a cast (valid: sat, nosat)", spec, tok);
    case QF_AUDIT_MX:
        if (v && !strncmp(tok, "rule=", 5)) {
            if (qf_block_mx_rule_lookup(v + 1, &s->mx.rule) != QF_OK)
                return fail(err, size,
                            "scheme '%s': unknown MX scale rule '%s' (valid: floor, ceil, even, rceil)", spec,
                            v + 1);
            return QF_OK;
        }
        if (parse_count(tok, 'b', &count)) {
            s->mx.block = count;
            return QF_OK;
        }
        if (is_recipe)
            return wrong_recipe(s, spec, tok, rec, err, size);
        return fail(err, size, "scheme '%s': unknown option '%s' for MX (valid: rule=floor|ceil|even|rceil, bN)",
                    spec, tok);
    case QF_AUDIT_NVFP4:
        if (v && !strncmp(tok, "scale=", 6)) {
            if (!strcmp(v + 1, "rne"))
                s->nvfp4.scale_round = QF_ROUND_RNE;
            else if (!strcmp(v + 1, "up"))
                s->nvfp4.scale_round = QF_ROUND_UP;
            else
                return fail(err, size, "scheme '%s': unknown NVFP4 scale rounding '%s' (valid: rne, up)",
                            spec, v + 1);
            return QF_OK;
        }
        if (!strcmp(tok, "notensor")) {
            s->nvfp4.tensor_scale = 0;
            return QF_OK;
        }
        if (parse_count(tok, 'b', &count)) {
            s->nvfp4.block = count;
            return QF_OK;
        }
        if (is_recipe)
            return wrong_recipe(s, spec, tok, rec, err, size);
        return fail(err, size, "scheme '%s': unknown option '%s' for NVFP4 (valid: scale=rne|up, notensor, bN)",
                    spec, tok);
    case QF_AUDIT_INT:
        if (parse_count(tok, 'g', &count)) {
            s->group.group = count;
            return QF_OK;
        }
        if (!strcmp(tok, "sym") || !strcmp(tok, "asym")) {
            s->group.symmetric = tok[0] == 's';
            return QF_OK;
        }
        if (v && !strncmp(tok, "scale=", 6)) {
            const qf_format *f = qf_format_lookup(v + 1);
            if (!f || (f->id != QF_FLOAT16 && f->id != QF_BFLOAT16))
                return fail(err, size, "scheme '%s': scale format '%s' (valid: f16, bf16)", spec, v + 1);
            s->group.scale_format = f->id;
            return QF_OK;
        }
        if (is_recipe)
            return wrong_recipe(s, spec, tok, rec, err, size);
        return fail(err, size, "scheme '%s': unknown option '%s' for int (valid: gN, sym, asym, scale=f16|bf16)",
                    spec, tok);
    default:
        return fail(err, size, "scheme '%s': internal error", spec);
    }
}

qf_status qf_audit_scheme_parse(const char *spec, qf_audit_scheme *out, char *err, size_t err_size)
{
    char buf[128], *tok, *save = NULL;
    qf_audit_scheme s;
    size_t i;
    qf_status st;
    if (!spec || !out)
        return QF_EINVAL;
    if (!*spec)
        return fail(err, err_size, "empty scheme (expected " HEADS_HELP ")");
    if (strlen(spec) >= sizeof buf || strlen(spec) >= sizeof s.label)
        return fail(err, err_size, "scheme '%.40s...' is too long", spec);
    memset(&s, 0, sizeof s);
    s.fp8 = qf_block_fp8_params_default();
    s.mx = qf_block_mx_params_default();
    s.nvfp4 = qf_block_nvfp4_params_default();
    s.group = qf_block_group_params_default();
    s.saturate = 1;
    snprintf(buf, sizeof buf, "%s", spec);
    tok = strtok_r(buf, ":", &save);
    if (!tok)
        return fail(err, err_size, "scheme '%s': no format (expected " HEADS_HELP ")", spec);
    /* The label is the head as written and each option in its canonical
     * spelling, so e4m3:channel and e4m3:per_channel are one row. */
    snprintf(s.label, sizeof s.label, "%s", tok);
    s.kind = QF_AUDIT_KIND_COUNT;
    for (i = 0; i < sizeof mx_names / sizeof mx_names[0]; i++)
        if (!strcasecmp(tok, mx_names[i].name)) {
            s.kind = QF_AUDIT_MX;
            s.mx.elem = mx_names[i].elem;
        }
    if (!strcasecmp(tok, "nvfp4")) {
        s.kind = QF_AUDIT_NVFP4;
    } else if (!strcasecmp(tok, "int4") || !strcasecmp(tok, "int8")) {
        s.kind = QF_AUDIT_INT;
        s.group.elem = tok[3] == '4' ? QF_INT4 : QF_INT8;
    } else if (s.kind == QF_AUDIT_KIND_COUNT) {
        const qf_format *f = qf_format_lookup(tok);
        if (!f || f->kind != QF_KIND_FLOAT)
            return fail(err, err_size, "scheme '%s': unknown format '%s' (expected " HEADS_HELP ")", spec,
                        tok);
        s.kind = QF_AUDIT_CAST;
        s.cast = f->id;
        s.fp8.elem = f->id;
    }
    while ((tok = strtok_r(NULL, ":", &save)) != NULL) {
        const char *canon;
        size_t len = strlen(s.label);
        if ((st = parse_option(&s, spec, tok, &canon, err, err_size)) != QF_OK)
            return st;
        if ((size_t)snprintf(s.label + len, sizeof s.label - len, ":%s", canon) >= sizeof s.label - len)
            return fail(err, err_size, "scheme '%.40s...' is too long", spec);
    }
    if (s.kind == QF_AUDIT_INT && !s.group.symmetric)
        s.group.include_zero = 1;
    *out = s;
    return QF_OK;
}

qf_status qf_audit_scheme_parse_list(const char *list, qf_audit_scheme **out, size_t *n, char *err,
                                     size_t err_size)
{
    char *copy, *tok, *save = NULL;
    qf_audit_scheme *v = NULL;
    size_t count = 0, cap = 0;
    qf_status st = QF_OK;
    if (!list || !out || !n)
        return QF_EINVAL;
    copy = strdup(list);
    if (!copy)
        return QF_ENOMEM;
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (count == cap) {
            qf_audit_scheme *nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
            if (!nv) {
                st = QF_ENOMEM;
                break;
            }
            v = nv;
        }
        if ((st = qf_audit_scheme_parse(tok, &v[count], err, err_size)) != QF_OK)
            break;
        {
            /* Labels key the ranking and the summary: one row each. */
            size_t i;
            for (i = 0; i < count && strcmp(v[i].label, v[count].label); i++)
                ;
            if (i < count) {
                st = fail(err, err_size, "scheme '%s' is given twice (as '%s')", tok, v[i].label);
                break;
            }
        }
        count++;
    }
    free(copy);
    if (st == QF_OK && count == 0)
        st = fail(err, err_size, "no scheme in '%s'", list);
    if (st != QF_OK) {
        free(v);
        return st;
    }
    *out = v;
    *n = count;
    return QF_OK;
}

size_t qf_audit_block(const qf_audit_scheme *s)
{
    switch (s->kind) {
    case QF_AUDIT_MX: return s->mx.block;
    case QF_AUDIT_NVFP4: return s->nvfp4.block;
    case QF_AUDIT_INT: return s->group.group;
    default: return 32;
    }
}

static void set_range(double *lo, double *hi, size_t i, double l, double h)
{
    if (lo)
        lo[i] = l;
    if (hi)
        hi[i] = h;
}

/* One FP8 scale for x[0..n) from amax; writes y and returns the squared
 * error of the finite elements. */
static qf_status fp8_one(const qf_block_fp8_params *p, const double *x, size_t n, double amax, double *y,
                         uint8_t *codes, double *scale_out, double *sse)
{
    qf_block_fp8_params q = *p;
    uint32_t code;
    double scale;
    qf_status st;
    size_t i;
    long double acc = 0;
    q.granularity = QF_BLOCK_FP8_TENSOR;
    if ((st = qf_block_fp8_scale_from_amax(&q, amax, &code, &scale)) != QF_OK ||
        (st = qf_block_fp8_scale_encode(&q, x, 1, n, &code, codes)) != QF_OK ||
        (st = qf_block_fp8_scale_dequantize(&q, codes, &code, 1, n, y)) != QF_OK)
        return st;
    for (i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            acc += (long double)(y[i] - x[i]) * (y[i] - x[i]);
    *scale_out = scale;
    *sse = (double)acc;
    return QF_OK;
}

/* Clipping search: the amax used for the scale is c * amax for c on a grid
 * of 40 steps from 1 down to 0.22; the c with the least squared error wins
 * (c = 1, plain amax scaling, on ties).  Cost: 40 quantizations. */
#define MSE_STEPS 40
static qf_status fp8_group(const qf_audit_scheme *s, const double *x, size_t n, double *y, double *lo,
                           double *hi, uint8_t *codes, double *tmp)
{
    double amax = 0, best = INFINITY, best_scale = 1, scale, sse, emax = qf_format_get(s->fp8.elem)->max;
    size_t i;
    int j, steps = s->mse ? MSE_STEPS : 1;
    qf_status st;
    for (i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > amax)
            amax = fabs(x[i]);
    for (j = 0; j < steps; j++) {
        double c = 1.0 - 0.02 * j;
        if ((st = fp8_one(&s->fp8, x, n, amax * c, tmp, codes, &scale, &sse)) != QF_OK)
            return st;
        if (sse < best || j == 0) {
            best = sse;
            best_scale = scale;
            memcpy(y, tmp, n * sizeof *y);
        }
    }
    for (i = 0; i < n; i++)
        set_range(lo, hi, i, -emax / best_scale, emax / best_scale);
    return QF_OK;
}

qf_status qf_audit_apply(const qf_audit_scheme *s, const double *x, size_t rows, size_t cols, double *y,
                         double *lo, double *hi)
{
    size_t n = rows * cols, i, ns, nb;
    uint8_t *codes = NULL;
    void *scodes = NULL;
    double *scales = NULL, *tmp = NULL;
    qf_status st = QF_OK;
    if (!s || (!x && n) || (!y && n) || (cols && n / cols != rows))
        return QF_EINVAL;
    if (n == 0)
        return QF_OK;
    codes = malloc(n);
    if (!codes)
        return QF_ENOMEM;
    switch (s->kind) {
    case QF_AUDIT_CAST: {
        const qf_format *f = qf_format_get(s->cast);
        for (i = 0; i < n; i++) {
            y[i] = qf_format_decode(f, qf_format_encode(f, x[i], QF_ROUND_RNE, s->saturate, 0, 0));
            set_range(lo, hi, i, -f->max, f->max);
        }
        break;
    }
    case QF_AUDIT_FP8:
        if (!(tmp = malloc(n * sizeof *tmp))) {
            st = QF_ENOMEM;
            break;
        }
        if (s->fp8.granularity == QF_BLOCK_FP8_TENSOR)
            st = fp8_group(s, x, n, y, lo, hi, codes, tmp);
        else
            for (i = 0; i < rows && st == QF_OK; i++)
                st = fp8_group(s, x + i * cols, cols, y + i * cols, lo ? lo + i * cols : NULL,
                               hi ? hi + i * cols : NULL, codes, tmp);
        break;
    case QF_AUDIT_MX: {
        double emax = qf_block_mx_elem_max(s->mx.elem);
        ns = qf_block_scale_count(rows, cols, 1, s->mx.block);
        nb = (cols + s->mx.block - 1) / s->mx.block;
        scodes = malloc(ns);
        scales = malloc(ns * sizeof *scales);
        if (!scodes || !scales) {
            st = QF_ENOMEM;
            break;
        }
        if ((st = qf_block_mx_quantize(&s->mx, x, rows, cols, codes, scodes, scales)) != QF_OK ||
            (st = qf_block_mx_dequantize(&s->mx, codes, scodes, rows, cols, y)) != QF_OK)
            break;
        for (i = 0; i < n; i++) {
            double sc = scales[(i / cols) * nb + (i % cols) / s->mx.block];
            set_range(lo, hi, i, -emax * sc, emax * sc);
        }
        break;
    }
    case QF_AUDIT_NVFP4: {
        uint32_t tcode;
        double tscale;
        ns = qf_block_scale_count(rows, cols, 1, s->nvfp4.block);
        nb = (cols + s->nvfp4.block - 1) / s->nvfp4.block;
        scodes = malloc(ns);
        scales = malloc(ns * sizeof *scales);
        if (!scodes || !scales) {
            st = QF_ENOMEM;
            break;
        }
        if ((st = qf_block_nvfp4_quantize(&s->nvfp4, x, rows, cols, codes, scodes, scales, &tcode,
                                          &tscale)) != QF_OK ||
            (st = qf_block_nvfp4_dequantize(&s->nvfp4, codes, scodes, tcode, rows, cols, y)) != QF_OK)
            break;
        for (i = 0; i < n; i++) {
            /* 6 is the largest E2M1 value (docs/numerics.md#number-formats, float4_e2m1fn). */
            double sc = 6.0 * scales[(i / cols) * nb + (i % cols) / s->nvfp4.block] * tscale;
            set_range(lo, hi, i, -sc, sc);
        }
        break;
    }
    case QF_AUDIT_INT: {
        const qf_format *f = qf_format_get(s->group.elem);
        int16_t *zp;
        ns = qf_block_scale_count(rows, cols, 1, s->group.group);
        nb = (cols + s->group.group - 1) / s->group.group;
        scodes = malloc(ns * sizeof(uint16_t) + ns * sizeof(int16_t));
        scales = malloc(ns * sizeof *scales);
        if (!scodes || !scales) {
            st = QF_ENOMEM;
            break;
        }
        zp = (int16_t *)((uint16_t *)scodes + ns);
        if ((st = qf_block_group_quantize(&s->group, x, rows, cols, codes, scodes, scales, zp)) != QF_OK ||
            (st = qf_block_group_dequantize(&s->group, codes, scodes, zp, rows, cols, y)) != QF_OK)
            break;
        for (i = 0; i < n; i++) {
            size_t k = (i / cols) * nb + (i % cols) / s->group.group;
            double z = s->group.symmetric ? 0 : zp[k];
            /* Symmetric quantization uses [-qmax, qmax] (scale = amax / qmax). */
            double qlo = s->group.symmetric ? -(double)f->int_max : (double)f->int_min;
            set_range(lo, hi, i, (qlo - z) * scales[k], ((double)f->int_max - z) * scales[k]);
        }
        break;
    }
    default: st = QF_EINVAL;
    }
    free(codes);
    free(scodes);
    free(scales);
    free(tmp);
    return st;
}

const char *qf_audit_hist_label(int bin)
{
    static const char *const labels[QF_AUDIT_HIST] = {"0",           "(0,1e-6)",    "[1e-6,1e-5)",
                                                      "[1e-5,1e-4)", "[1e-4,1e-3)", "[1e-3,1e-2)",
                                                      "[1e-2,1e-1)", "[1e-1,1)",    "[1,inf)"};
    return bin >= 0 && bin < QF_AUDIT_HIST ? labels[bin] : NULL;
}

static double rel_of(double e2, double x2)
{
    if (e2 == 0)
        return 0;
    return x2 > 0 ? sqrt(e2 / x2) : INFINITY;
}

/* Keep the QF_AUDIT_TOP largest by key (insertion into a short sorted list). */
static void top_insert(qf_audit_offender *list, size_t *n, const qf_audit_offender *o, int by_rel)
{
    size_t i, at;
    double key = by_rel ? o->rel : o->err_norm;
    if (!(key > 0))
        return;
    for (at = 0; at < *n; at++)
        if (key > (by_rel ? list[at].rel : list[at].err_norm))
            break;
    if (at >= QF_AUDIT_TOP)
        return;
    if (*n < QF_AUDIT_TOP)
        (*n)++;
    for (i = *n - 1; i > at; i--)
        list[i] = list[i - 1];
    list[at] = *o;
}

qf_status qf_audit_measure(const double *x, const double *y, const double *lo, const double *hi, size_t rows,
                           size_t cols, size_t block, qf_audit_metrics *m)
{
    qf_dot_acc ax, ae, ad;
    size_t i, r, c0;
    double rms_x;
    if (!x || !y || !m || (cols && rows > SIZE_MAX / cols))
        return QF_EINVAL;
    memset(m, 0, sizeof *m);
    m->n = rows * cols;
    m->rows = rows;
    m->cols = cols;
    m->block = block ? block : 32;
    m->max_abs = m->max_rel = 0;
    qf_dot_acc_init(&ax);
    qf_dot_acc_init(&ae);
    qf_dot_acc_init(&ad);
    for (i = 0; i < m->n; i++) {
        double e, a;
        if (!isfinite(x[i])) {
            m->n_nonfinite_x++;
            continue;
        }
        if (!isfinite(y[i])) {
            m->n_nonfinite_y++;
            continue;
        }
        m->n_used++;
        /* y - x may round in binary64; the exact sums take both terms. */
        qf_dot_acc_add_product(&ax, x[i], x[i]);
        qf_dot_acc_add_d(&ad, y[i]);
        qf_dot_acc_sub_d(&ad, x[i]);
        e = y[i] - x[i];
        qf_dot_acc_add_product(&ae, e, e);
        a = fabs(e);
        if (a > m->max_abs) {
            m->max_abs = a;
            m->at_abs = i;
        }
        if (x[i] != 0 && a / fabs(x[i]) > m->max_rel) {
            m->max_rel = a / fabs(x[i]);
            m->at_rel = i;
        }
        if ((lo && x[i] < lo[i]) || (hi && x[i] > hi[i]))
            m->n_clipped++;
        if (x[i] != 0 && y[i] == 0)
            m->n_flushed++;
    }
    m->sum_x2 = qf_dot_acc_get_d(&ax, QF_ROUND_RNE);
    m->sum_e2 = qf_dot_acc_get_d(&ae, QF_ROUND_RNE);
    m->bias = m->n_used ? qf_dot_acc_get_d(&ad, QF_ROUND_RNE) / (double)m->n_used : 0;
    m->rms_err = m->n_used ? sqrt(m->sum_e2 / (double)m->n_used) : 0;
    if (m->n_nonfinite_y) {
        m->sqnr_db = -INFINITY;
        m->normwise = INFINITY;
    } else {
        m->sqnr_db = m->sum_e2 == 0   ? INFINITY
                     : m->sum_x2 == 0 ? -INFINITY
                                      : 10 * log10(m->sum_x2 / m->sum_e2);
        m->normwise = rel_of(m->sum_e2, m->sum_x2);
    }
    m->frac_clipped = m->n_used ? (double)m->n_clipped / (double)m->n_used : 0;
    m->frac_flushed = m->n_used ? (double)m->n_flushed / (double)m->n_used : 0;

    /* Histogram, relative to the rms of the original (a scale every scheme shares). */
    rms_x = m->n_used ? sqrt(m->sum_x2 / (double)m->n_used) : 0;
    for (i = 0; i < m->n; i++) {
        double e;
        int bin;
        if (!isfinite(x[i]) || !isfinite(y[i]))
            continue;
        e = fabs(y[i] - x[i]);
        if (e == 0)
            bin = 0;
        else if (!(rms_x > 0))
            bin = QF_AUDIT_HIST - 1;
        else {
            double t = log10(e / rms_x);
            bin = t < -6 ? 1 : t >= 0 ? QF_AUDIT_HIST - 1 : 2 + (int)floor(t + 6);
            if (bin > QF_AUDIT_HIST - 2 && t < 0)
                bin = QF_AUDIT_HIST - 2;
        }
        m->hist[bin]++;
    }

    /* Worst channels (by relative error) and blocks (by error norm). */
    for (r = 0; r < rows; r++) {
        long double rx = 0, re = 0;
        for (c0 = 0; c0 < cols; c0 += m->block) {
            size_t len = cols - c0 < m->block ? cols - c0 : m->block, j;
            long double bx = 0, be = 0;
            qf_audit_offender o;
            for (j = 0; j < len; j++) {
                double xv = x[r * cols + c0 + j], yv = y[r * cols + c0 + j];
                if (!isfinite(xv))
                    continue;
                if (!isfinite(yv)) {
                    be = INFINITY;
                    continue;
                }
                bx += (long double)xv * xv;
                be += (long double)(yv - xv) * (yv - xv);
            }
            rx += bx;
            re += be;
            o.row = r;
            o.col = c0;
            o.len = len;
            o.err_norm = sqrt((double)be);
            o.rel = rel_of((double)be, (double)bx);
            top_insert(m->worst_blocks, &m->n_worst_blocks, &o, 0);
        }
        {
            qf_audit_offender o = {r, 0, cols, sqrt((double)re), rel_of((double)re, (double)rx)};
            top_insert(m->worst_rows, &m->n_worst_rows, &o, 1);
        }
    }
    return QF_OK;
}

json_t *qf_audit_json_number(double x)
{
    return _qf_json_real(x);
}

double qf_audit_json_get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        return !strcmp(s, "Infinity") ? INFINITY : !strcmp(s, "-Infinity") ? -INFINITY : NAN;
    }
    return NAN;
}

#define jnum qf_audit_json_number

static json_t *offenders(const qf_audit_offender *o, size_t n, int blocks)
{
    json_t *a = json_array();
    size_t i;
    for (i = 0; a && i < n; i++) {
        json_t *e = json_object();
        json_object_set_new(e, blocks ? "row" : "channel", json_integer((json_int_t)o[i].row));
        if (blocks) {
            json_object_set_new(e, "col", json_integer((json_int_t)o[i].col));
            json_object_set_new(e, "len", json_integer((json_int_t)o[i].len));
        }
        json_object_set_new(e, "err_norm", jnum(o[i].err_norm));
        json_object_set_new(e, "rel_err", jnum(o[i].rel));
        json_array_append_new(a, e);
    }
    return a;
}

qf_status qf_audit_metrics_to_json(const qf_audit_metrics *m, json_t **out)
{
    json_t *o = json_object(), *h = json_array();
    int b;
    if (!o || !h) {
        json_decref(o);
        json_decref(h);
        return QF_ENOMEM;
    }
    json_object_set_new(o, "n", json_integer((json_int_t)m->n));
    json_object_set_new(o, "n_used", json_integer((json_int_t)m->n_used));
    json_object_set_new(o, "n_nonfinite_in", json_integer((json_int_t)m->n_nonfinite_x));
    json_object_set_new(o, "n_nonfinite_out", json_integer((json_int_t)m->n_nonfinite_y));
    json_object_set_new(o, "sqnr_db", jnum(m->sqnr_db));
    json_object_set_new(o, "normwise", jnum(m->normwise));
    json_object_set_new(o, "max_abs", jnum(m->max_abs));
    json_object_set_new(o, "max_abs_at", json_integer((json_int_t)m->at_abs));
    json_object_set_new(o, "max_rel", jnum(m->max_rel));
    json_object_set_new(o, "max_rel_at", json_integer((json_int_t)m->at_rel));
    json_object_set_new(o, "bias", jnum(m->bias));
    json_object_set_new(o, "rms_err", jnum(m->rms_err));
    json_object_set_new(o, "frac_clipped", jnum(m->frac_clipped));
    json_object_set_new(o, "n_clipped", json_integer((json_int_t)m->n_clipped));
    json_object_set_new(o, "frac_flushed", jnum(m->frac_flushed));
    json_object_set_new(o, "n_flushed", json_integer((json_int_t)m->n_flushed));
    json_object_set_new(o, "block", json_integer((json_int_t)m->block));
    json_object_set_new(o, "worst_channels", offenders(m->worst_rows, m->n_worst_rows, 0));
    json_object_set_new(o, "worst_blocks", offenders(m->worst_blocks, m->n_worst_blocks, 1));
    for (b = 0; b < QF_AUDIT_HIST; b++) {
        json_t *e = json_object();
        json_object_set_new(e, "bin", json_string(qf_audit_hist_label(b)));
        json_object_set_new(e, "count", json_integer((json_int_t)m->hist[b]));
        json_array_append_new(h, e);
    }
    json_object_set_new(o, "histogram", h);
    *out = o;
    return QF_OK;
}
