/* cli/audit.c: 'qualify audit FILE... --formats LIST': the error that
 * quantization schemes add to the tensors of .npy and .safetensors files
 * (qf_audit.h, docs/audit.md). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_escape.h"
#include "_files.h"
#include "cli.h"
#include "qf_audit.h"
#include "qf_npy.h"
#include "qf_safetensors.h"
#include "qf_version.h"

static const char *help_text =
    "usage: qualify audit FILE... --formats LIST [--tensors GLOB] [-o DIR] [--json]\n"
    "                    [--npy-format F]\n"
    "\n"
    "Quantize every floating-point tensor of the .npy and .safetensors FILEs\n"
    "with each scheme of LIST, dequantize, and measure the error against the\n"
    "exact original values: SQNR, normwise relative error, max abs/rel error,\n"
    "bias, fractions clipped and flushed to zero, worst channels and blocks,\n"
    "an error histogram; a ranking of the schemes per tensor and a summary.\n"
    "\n"
    "  --formats LIST  comma-separated schemes (docs/audit.md), e.g.\n"
    "                  bf16,e4m3:per_tensor,e4m3:per_channel:mse,mxfp4:rule=floor,nvfp4,int4:g128:asym\n"
    "  --tensors GLOB  only tensors whose name matches (a .npy file's name is\n"
    "                  its file name without .npy); default all\n"
    "  -o DIR          write DIR/audit.json and DIR/audit.md (DIR is created)\n"
    "  --json          print the JSON document instead of the Markdown\n"
    "  --npy-format F  what raw .npy elements are (ml_dtypes saves bfloat16 as\n"
    "                  'V2', FP8 as 'V1'/'f1'): bf16 (the default for 2 bytes),\n"
    "                  e4m3, e5m2, ...; needed for 1-byte elements\n"
    "  -h, --help      this text\n"
    "\n"
    "Exit codes: 0 done; 1 a tensor has no usable value (all NaN or infinite,\n"
    "or empty: noted in the reports, not ranked) or out of memory; 2 bad usage,\n"
    "an unreadable, corrupt or truncated file, or no tensor to audit.\n";

typedef struct audit_ctx {
    const qf_audit_scheme *schemes;
    size_t nschemes;
    const char *glob;
    const qf_format *npy_format; /* --npy-format: what raw .npy elements are */
    json_t *tensors;   /* array of tensor objects */
    double *sum_x2;    /* per scheme, over all tensors */
    double *sum_e2;
    double *min_sqnr;
    size_t *min_at;    /* tensor index of the minimum */
    size_t *wins;      /* tensors where the scheme ranked first */
    int *nonfinite;    /* some tensor overflowed to NaN/Inf */
    size_t nusable;    /* tensors with a finite value: measured and ranked */
    size_t nunusable;  /* tensors with none (all NaN/Inf, or empty): noted only */
} audit_ctx;

#define jnum qf_audit_json_number
#define jget qf_audit_json_get

static json_t *ranking_order;
static int rank_cmp(const void *a, const void *b)
{
    const json_t *x = json_array_get(ranking_order, *(const size_t *)a);
    const json_t *y = json_array_get(ranking_order, *(const size_t *)b);
    double sx = jget(x, "sqnr_db"), sy = jget(y, "sqnr_db");
    if (sx != sy)
        return sx > sy ? -1 : 1;
    sx = jget(x, "max_abs");
    sy = jget(y, "max_abs");
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* "qualify audit: FILE: tensor 'NAME'" on stderr, the caller ending the
 * line: a tensor's name is shown, never obeyed by the terminal. */
static void say_tensor(const char *file, const char *name)
{
    fputs("qualify audit: ", stderr);
    _qf_esc_term(stderr, file);
    fputs(": tensor '", stderr);
    _qf_esc_term(stderr, name);
    fputc('\'', stderr);
}

/* Does x[0..n) hold a finite value?  Sets t's "usable", and when it has
 * none its "note": "no usable value: 4096 of 4096 elements are NaN". */
static int usable_note(const double *x, size_t n, json_t *t)
{
    size_t i, nan = 0, inf = 0;
    char note[160];
    for (i = 0; i < n; i++) {
        if (isfinite(x[i])) {
            json_object_set_new(t, "usable", json_true());
            return 1;
        }
        if (isnan(x[i]))
            nan++;
        else
            inf++;
    }
    if (n == 0)
        snprintf(note, sizeof note, "no usable value: the tensor has no element");
    else if (!inf)
        snprintf(note, sizeof note, "no usable value: %zu of %zu elements are NaN", nan, n);
    else if (!nan)
        snprintf(note, sizeof note, "no usable value: %zu of %zu elements are infinite", inf, n);
    else
        snprintf(note, sizeof note, "no usable value: %zu of %zu elements are NaN or infinite (%zu NaN, %zu infinite)",
                 n, n, nan, inf);
    json_object_set_new(t, "usable", json_false());
    json_object_set_new(t, "note", json_string(note));
    return 0;
}

/* Audit one tensor of values x with shape; appends to ctx->tensors. */
static int audit_tensor(audit_ctx *ctx, const char *file, const char *name, const char *dtype, int ndim,
                        const size_t *shape, const double *x, size_t n)
{
    size_t rows = 1, cols = 1, i, *order;
    double *y = malloc((n ? n : 1) * sizeof *y), *lo = malloc((n ? n : 1) * sizeof *lo),
           *hi = malloc((n ? n : 1) * sizeof *hi), amax = 0;
    json_t *t = json_object(), *results = json_array(), *jshape = json_array(), *rank = json_array();
    int d;
    order = malloc(ctx->nschemes * sizeof *order);
    if (!y || !lo || !hi || !t || !results || !jshape || !rank || !order) {
        fprintf(stderr, "qualify audit: out of memory\n");
        free(y), free(lo), free(hi), free(order);
        json_decref(t), json_decref(results), json_decref(jshape), json_decref(rank);
        return QF_EXIT_FAIL;
    }
    if (ndim >= 1) {
        cols = shape[ndim - 1];
        for (d = 0; d < ndim - 1; d++)
            rows *= shape[d];
    }
    for (d = 0; d < ndim; d++)
        json_array_append_new(jshape, json_integer((json_int_t)shape[d]));
    for (i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > amax)
            amax = fabs(x[i]);
    json_object_set_new(t, "file", json_string(file));
    json_object_set_new(t, "name", json_string(name));
    json_object_set_new(t, "dtype", json_string(dtype));
    json_object_set_new(t, "shape", jshape);
    json_object_set_new(t, "rows", json_integer((json_int_t)rows));
    json_object_set_new(t, "cols", json_integer((json_int_t)cols));
    json_object_set_new(t, "amax", jnum(amax));
    if (!usable_note(x, n, t)) {
        /* Nothing to measure: an SQNR of nothing against nothing would be
         * inf and rank the tensor first (docs/audit.md "No usable value"). */
        json_object_set_new(t, "results", results);
        json_object_set_new(t, "ranking", rank);
        json_array_append_new(ctx->tensors, t);
        ctx->nunusable++;
        say_tensor(file, name);
        fputs(": ", stderr);
        _qf_esc_term(stderr, json_string_value(json_object_get(t, "note")));
        fputs("; not ranked\n", stderr);
        free(y), free(lo), free(hi), free(order);
        return QF_EXIT_OK;
    }
    for (i = 0; i < ctx->nschemes; i++) {
        const qf_audit_scheme *s = &ctx->schemes[i];
        qf_audit_metrics m;
        json_t *jm = NULL;
        qf_status st = qf_audit_apply(s, x, rows, cols, y, lo, hi);
        if (st == QF_OK)
            st = qf_audit_measure(x, y, lo, hi, rows, cols, qf_audit_block(s), &m);
        if (st == QF_OK)
            st = qf_audit_metrics_to_json(&m, &jm);
        if (st != QF_OK) {
            say_tensor(file, name);
            fprintf(stderr, ": scheme '%s': %s\n", s->label, qf_status_str(st));
            free(y), free(lo), free(hi), free(order);
            json_decref(t), json_decref(results), json_decref(rank);
            return QF_EXIT_USAGE;
        }
        json_object_set_new(jm, "scheme", json_string(s->label));
        json_object_set_new(jm, "kind", json_string(qf_audit_kind_name(s->kind)));
        json_object_set_new(jm, "recipe", json_string(qf_scale_recipe_name(qf_audit_recipe(s))));
        json_array_append_new(results, jm);
        ctx->sum_x2[i] += m.sum_x2;
        ctx->sum_e2[i] += m.sum_e2;
        if (m.n_nonfinite_y)
            ctx->nonfinite[i] = 1;
        if (ctx->nusable == 0 || m.sqnr_db < ctx->min_sqnr[i]) {
            ctx->min_sqnr[i] = m.sqnr_db;
            ctx->min_at[i] = json_array_size(ctx->tensors);
        }
        order[i] = i;
    }
    ranking_order = results;
    qsort(order, ctx->nschemes, sizeof *order, rank_cmp);
    for (i = 0; i < ctx->nschemes; i++) {
        json_object_set_new(json_array_get(results, order[i]), "rank", json_integer((json_int_t)i + 1));
        json_array_append_new(rank, json_string(ctx->schemes[order[i]].label));
    }
    ctx->wins[order[0]]++;
    ctx->nusable++;
    json_object_set_new(t, "results", results);
    json_object_set_new(t, "ranking", rank);
    json_array_append_new(ctx->tensors, t);
    free(y), free(lo), free(hi), free(order);
    return QF_EXIT_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int selected(const audit_ctx *ctx, const char *name)
{
    return !ctx->glob || fnmatch(ctx->glob, name, 0) == 0;
}

static int audit_npy(audit_ctx *ctx, const char *path, size_t *found)
{
    qf_npy a;
    char err[512] = "", name[256];
    const char *base = strrchr(path, '/'), *dtype;
    const qf_format *fmt = NULL;
    double *x;
    int rc;
    base = base ? base + 1 : path;
    snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 4), base);
    if (!selected(ctx, name))
        return QF_EXIT_OK;
    if (qf_npy_read(path, &a, err, sizeof err) != QF_OK) {
        qf_cli_error("audit", "%s", err);
        return QF_EXIT_USAGE;
    }
    x = malloc((a.count ? a.count : 1) * sizeof *x);
    if (!x) {
        qf_npy_free(&a);
        return QF_EXIT_FAIL;
    }
    if (a.dtype == QF_NPY_FLOAT64 || a.dtype == QF_NPY_FLOAT32 || a.dtype == QF_NPY_FLOAT16) {
        dtype = qf_npy_dtype_name(a.dtype);
        if (qf_npy_get_f64(&a, x, NULL) != QF_OK) {
            fprintf(stderr, "qualify audit: %s: cannot decode the elements\n", path);
            free(x);
            qf_npy_free(&a);
            return QF_EXIT_USAGE;
        }
    } else if ((a.dtype == QF_NPY_RAW16 || a.dtype == QF_NPY_RAW8) &&
               (fmt = ctx->npy_format ? ctx->npy_format
                      : a.dtype == QF_NPY_RAW16 ? qf_format_get(QF_BFLOAT16) : NULL) != NULL &&
               fmt->storage_bits == (a.dtype == QF_NPY_RAW16 ? 16 : 8)) {
        /* ml_dtypes saves bfloat16 as '<V2' and its FP8 types as 'V1' / 'f1'
         * (github.com/jax-ml/ml_dtypes): the bits are codes of a format the file does not name. */
        uint64_t *bits = malloc((a.count ? a.count : 1) * sizeof *bits);
        size_t i;
        if (!bits || qf_npy_get_bits(&a, bits) != QF_OK) {
            free(bits), free(x);
            qf_npy_free(&a);
            return QF_EXIT_FAIL;
        }
        for (i = 0; i < a.count; i++)
            x[i] = qf_format_decode(fmt, bits[i]);
        free(bits);
        dtype = fmt->name;
    } else {
        fprintf(stderr,
                "qualify audit: %s: dtype %s is not a float tensor (.npy: float64, float32, float16, raw "
                "2-byte elements as bfloat16, raw 1-byte elements with --npy-format e4m3 or e5m2); skipped\n",
                path, qf_npy_dtype_name(a.dtype));
        free(x);
        qf_npy_free(&a);
        return QF_EXIT_OK;
    }
    (*found)++;
    rc = audit_tensor(ctx, path, name, dtype, a.ndim, a.shape, x, a.count);
    free(x);
    qf_npy_free(&a);
    return rc;
}

static int audit_safetensors(audit_ctx *ctx, const char *path, size_t *found)
{
    qf_safetensors st;
    char err[512] = "";
    size_t i;
    int rc = QF_EXIT_OK;
    if (qf_safetensors_open(path, &st, err, sizeof err) != QF_OK) {
        qf_cli_error("audit", "%s", err);
        return QF_EXIT_USAGE;
    }
    for (i = 0; i < st.ntensors && rc == QF_EXIT_OK; i++) {
        const qf_st_tensor *t = &st.tensors[i];
        double *x;
        if (!selected(ctx, t->name))
            continue;
        switch (t->dtype) {
        case QF_ST_F64:
        case QF_ST_F32:
        case QF_ST_F16:
        case QF_ST_BF16:
        case QF_ST_F8_E4M3:
        case QF_ST_F8_E5M2:
            break;
        default:
            say_tensor(path, t->name);
            fprintf(stderr, ": dtype %s is not a float tensor; skipped\n", qf_st_dtype_name(t->dtype));
            continue;
        }
        x = malloc((t->count ? t->count : 1) * sizeof *x);
        if (!x) {
            fprintf(stderr, "qualify audit: out of memory\n");
            rc = QF_EXIT_FAIL;
            break;
        }
        if (qf_safetensors_get_f64(&st, i, x, err, sizeof err) != QF_OK) {
            qf_cli_error("audit", "%s", err);
            free(x);
            rc = QF_EXIT_USAGE;
            break;
        }
        (*found)++;
        rc = audit_tensor(ctx, path, t->name, qf_st_dtype_name(t->dtype), t->ndim, t->shape, x, t->count);
        free(x);
    }
    qf_safetensors_close(&st);
    return rc;
}

static void md_num(FILE *f, double x, const char *fmt)
{
    if (isnan(x))
        fputs(" NaN |", f);
    else if (isinf(x))
        fputs(x > 0 ? " inf |" : " -inf |", f);
    else {
        fputc(' ', f);
        fprintf(f, fmt, x);
        fputs(" |", f);
    }
}

/* A string member of a JSON object as Markdown text (names, files and
 * schemes come from the input files and the command line: _escape.h). */
static void md_text(FILE *f, const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    _qf_esc_md(f, v ? v : "-");
}

static void write_markdown(FILE *f, const json_t *doc)
{
    const json_t *tensors = json_object_get(doc, "tensors"), *summary = json_object_get(doc, "summary");
    size_t i, j, k, nunusable = 0;
    fprintf(f, "# Quantization audit\n\n");
    fprintf(f, "Errors against the exact original values (docs/audit.md). Schemes ranked by SQNR.\n\n");
    fprintf(f, "## Summary\n\n");
    fprintf(f, "| scheme | SQNR dB (all tensors) | worst SQNR dB | worst tensor | ranked first |\n");
    fprintf(f, "|---|---|---|---|---|\n");
    for (i = 0; i < json_array_size(summary); i++) {
        const json_t *s = json_array_get(summary, i);
        fputs("| ", f);
        md_text(f, s, "scheme");
        fputs(" |", f);
        md_num(f, jget(s, "sqnr_db"), "%.2f");
        md_num(f, jget(s, "min_sqnr_db"), "%.2f");
        fputc(' ', f);
        md_text(f, s, "min_tensor");
        fprintf(f, " | %lld |\n", (long long)json_integer_value(json_object_get(s, "wins")));
    }
    for (i = 0; i < json_array_size(tensors); i++)
        nunusable += json_is_false(json_object_get(json_array_get(tensors, i), "usable"));
    if (nunusable)
        fprintf(f, "\n%zu tensor%s with no usable value (all NaN or infinite, or empty): not measured, not "
                   "ranked, not in the summary.\n",
                nunusable, nunusable == 1 ? "" : "s");
    for (i = 0; i < json_array_size(tensors); i++) {
        const json_t *t = json_array_get(tensors, i), *res = json_object_get(t, "results"),
                     *shape = json_object_get(t, "shape"), *rank = json_object_get(t, "ranking");
        fputs("\n## ", f);
        md_text(f, t, "name");
        fputs(" (", f);
        md_text(f, t, "dtype");
        for (j = 0; j < json_array_size(shape); j++)
            fprintf(f, "%s%lld", j ? "x" : " ", (long long)json_integer_value(json_array_get(shape, j)));
        fputs(", ", f);
        md_text(f, t, "file");
        fputs(")\n\n", f);
        if (json_is_false(json_object_get(t, "usable"))) {
            md_text(f, t, "note");
            fputs(". Not measured, not ranked.\n", f);
            continue;
        }
        fprintf(f, "| rank | scheme | SQNR dB | normwise | max abs | max rel | bias | clipped | flushed | "
                   "worst channel (rel) | worst block (row, col) |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (k = 0; k < json_array_size(rank); k++) {
            const char *label = json_string_value(json_array_get(rank, k));
            for (j = 0; j < json_array_size(res); j++) {
                const json_t *r = json_array_get(res, j), *wc, *wb;
                if (strcmp(json_string_value(json_object_get(r, "scheme")), label))
                    continue;
                wc = json_array_get(json_object_get(r, "worst_channels"), 0);
                wb = json_array_get(json_object_get(r, "worst_blocks"), 0);
                fprintf(f, "| %zu | ", k + 1);
                _qf_esc_md(f, label);
                fputs(" |", f);
                md_num(f, jget(r, "sqnr_db"), "%.2f");
                md_num(f, jget(r, "normwise"), "%.3g");
                md_num(f, jget(r, "max_abs"), "%.3g");
                md_num(f, jget(r, "max_rel"), "%.3g");
                md_num(f, jget(r, "bias"), "%.3g");
                md_num(f, 100 * jget(r, "frac_clipped"), "%.3g%%");
                md_num(f, 100 * jget(r, "frac_flushed"), "%.3g%%");
                if (wc)
                    fprintf(f, " %lld (%.3g) |", (long long)json_integer_value(json_object_get(wc, "channel")),
                            jget(wc, "rel_err"));
                else
                    fputs(" - |", f);
                if (wb)
                    fprintf(f, " (%lld, %lld) |\n", (long long)json_integer_value(json_object_get(wb, "row")),
                            (long long)json_integer_value(json_object_get(wb, "col")));
                else
                    fputs(" - |\n", f);
                if (jget(r, "n_nonfinite_out") > 0)
                    fprintf(f, "|  | ^ %lld finite values overflowed to NaN/Inf (a cast without saturation) "
                               "|||||||||\n",
                            (long long)jget(r, "n_nonfinite_out"));
            }
        }
    }
}

/* name in the directory dir (a descriptor: the -o DIR the user gave,
 * followed once), written beside it and renamed over it (_files.h). */
static int write_file(int dir, const char *dirname, const char *name, const json_t *doc, int json)
{
    char path[4096], err[4200];
    _qf_out o;
    snprintf(path, sizeof path, "%s/%s", dirname, name);
    if (!_qf_out_openat(&o, dir, name, path, _QF_OUT_SYNC, err, sizeof err)) {
        fprintf(stderr, "qualify audit: %s\n", err);
        return QF_EXIT_USAGE;
    }
    if (json)
        json_dumpf(doc, o.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    else
        write_markdown(o.f, doc);
    if (json)
        fputc('\n', o.f);
    if (_qf_out_commit(&o, err, sizeof err) != QF_OK) {
        fprintf(stderr, "qualify audit: %s\n", err);
        return QF_EXIT_USAGE;
    }
    return QF_EXIT_OK;
}

int qf_cli_audit(int argc, char **argv)
{
    static const struct option longopts[] = {{"formats", required_argument, NULL, 'f'},
                                             {"tensors", required_argument, NULL, 't'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"npy-format", required_argument, NULL, 'n'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *formats = NULL, *outdir = NULL;
    int c, json = 0, rc = QF_EXIT_OK, a;
    qf_audit_scheme *schemes = NULL;
    size_t nschemes = 0, found = 0, i;
    char err[512] = "";
    audit_ctx ctx;
    json_t *doc, *files, *summary, *jschemes;
    memset(&ctx, 0, sizeof ctx);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': formats = optarg; break;
        case 't': ctx.glob = optarg; break;
        case 'o': outdir = optarg; break;
        case 'j': json = 1; break;
        case 'n':
            ctx.npy_format = qf_format_lookup(optarg);
            if (!ctx.npy_format || ctx.npy_format->kind != QF_KIND_FLOAT ||
                (ctx.npy_format->storage_bits != 8 && ctx.npy_format->storage_bits != 16))
                return qf_cli_usage_error("audit", "--npy-format '%s': expected an 8- or 16-bit float format "
                                                   "(bf16, e4m3, e5m2, ...)", optarg);
            break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        case ':': return qf_cli_usage_error("audit", "option '%s' needs a value", argv[optind - 1]);
        default: return qf_cli_usage_error("audit", "unknown option '%s' (see qualify audit --help)", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return qf_cli_usage_error("audit", "no input file (.npy or .safetensors); see qualify audit --help");
    if (!formats)
        return qf_cli_usage_error(
            "audit", "--formats is required, e.g. --formats bf16,e4m3:per_tensor,mxfp4,int4:g128");
    if (qf_audit_scheme_parse_list(formats, &schemes, &nschemes, err, sizeof err) != QF_OK)
        return qf_cli_usage_error("audit", "--formats: %s", err);
    for (a = optind; a < argc; a++)
        if (!ends_with(argv[a], ".npy") && !ends_with(argv[a], ".safetensors")) {
            free(schemes);
            return qf_cli_usage_error("audit", "%s: not a .npy or .safetensors file (by its name)", argv[a]);
        }
    ctx.schemes = schemes;
    ctx.nschemes = nschemes;
    ctx.tensors = json_array();
    ctx.sum_x2 = calloc(nschemes, sizeof(double));
    ctx.sum_e2 = calloc(nschemes, sizeof(double));
    ctx.min_sqnr = calloc(nschemes, sizeof(double));
    ctx.min_at = calloc(nschemes, sizeof(size_t));
    ctx.wins = calloc(nschemes, sizeof(size_t));
    ctx.nonfinite = calloc(nschemes, sizeof(int));
    files = json_array();
    if (!ctx.tensors || !ctx.sum_x2 || !ctx.sum_e2 || !ctx.min_sqnr || !ctx.min_at || !ctx.wins ||
        !ctx.nonfinite || !files) {
        fprintf(stderr, "qualify audit: out of memory\n");
        rc = QF_EXIT_FAIL;
    }
    for (a = optind; a < argc && rc == QF_EXIT_OK; a++) {
        json_array_append_new(files, json_string(argv[a]));
        rc = ends_with(argv[a], ".npy") ? audit_npy(&ctx, argv[a], &found) : audit_safetensors(&ctx, argv[a], &found);
    }
    if (rc == QF_EXIT_OK && found == 0) {
        /* Name every file read: with several inputs "the input files"
         * alone does not say which were looked at. */
        fprintf(stderr, "qualify audit: no float tensor%s%s%s in ", ctx.glob ? " matches '" : "",
                ctx.glob ? ctx.glob : "", ctx.glob ? "'" : "");
        for (a = optind; a < argc; a++)
            fprintf(stderr, "%s%s", a == optind ? "" : a + 1 < argc ? ", " : " or ", argv[a]);
        fputc('\n', stderr);
        rc = QF_EXIT_USAGE;
    }
    if (rc == QF_EXIT_OK) {
        doc = json_object();
        summary = json_array();
        jschemes = json_array();
        for (i = 0; i < nschemes; i++) {
            json_t *s = json_object();
            const json_t *t = json_array_get(ctx.tensors, ctx.min_at[i]);
            /* Over the usable tensors only; none: no number at all. */
            double total = !ctx.nusable         ? NAN
                           : ctx.nonfinite[i]   ? -INFINITY
                           : ctx.sum_e2[i] == 0 ? INFINITY
                                                : 10 * log10(ctx.sum_x2[i] / ctx.sum_e2[i]);
            json_array_append_new(jschemes, json_string(schemes[i].label));
            json_object_set_new(s, "scheme", json_string(schemes[i].label));
            json_object_set_new(s, "kind", json_string(qf_audit_kind_name(schemes[i].kind)));
            json_object_set_new(s, "recipe", json_string(qf_scale_recipe_name(qf_audit_recipe(&schemes[i]))));
            json_object_set_new(s, "tensors", json_integer((json_int_t)ctx.nusable));
            json_object_set_new(s, "sqnr_db", ctx.nusable ? jnum(total) : json_null());
            json_object_set_new(s, "min_sqnr_db", ctx.nusable ? jnum(ctx.min_sqnr[i]) : json_null());
            json_object_set_new(s, "min_tensor", ctx.nusable ? json_incref(json_object_get(t, "name")) : json_null());
            json_object_set_new(s, "wins", json_integer((json_int_t)ctx.wins[i]));
            json_array_append_new(summary, s);
        }
        json_object_set_new(doc, "format", json_string("qualify-audit"));
        json_object_set_new(doc, "version", json_integer(1));
        json_object_set_new(doc, "generator", json_string("qualify " QF_VERSION_STRING));
        json_object_set_new(doc, "files", files);
        files = NULL;
        json_object_set_new(doc, "schemes", jschemes);
        json_object_set_new(doc, "tensors", json_incref(ctx.tensors));
        json_object_set_new(doc, "summary", summary);
        json_object_set_new(doc, "unusable_tensors", json_integer((json_int_t)ctx.nunusable));
        if (outdir) {
            char derr[4200];
            int dfd = _qf_out_dir(outdir, derr, sizeof derr);
            if (dfd < 0) {
                fprintf(stderr, "qualify audit: %s\n", derr);
                rc = QF_EXIT_USAGE;
            }
            if (rc == QF_EXIT_OK)
                rc = write_file(dfd, outdir, "audit.json", doc, 1);
            if (rc == QF_EXIT_OK)
                rc = write_file(dfd, outdir, "audit.md", doc, 0);
            if (dfd >= 0)
                close(dfd);
        } else if (json) {
            json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
            putchar('\n');
        } else {
            write_markdown(stdout, doc);
        }
        json_decref(doc);
        /* A tensor with no usable value is a finding, not a result: the
         * reports say so and the exit status does (docs/audit.md). */
        if (rc == QF_EXIT_OK && ctx.nunusable)
            rc = QF_EXIT_FAIL;
    }
    json_decref(files);
    json_decref(ctx.tensors);
    free(ctx.sum_x2), free(ctx.sum_e2), free(ctx.min_sqnr), free(ctx.min_at), free(ctx.wins), free(ctx.nonfinite);
    free(schemes);
    return rc;
}
