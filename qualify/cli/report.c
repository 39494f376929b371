/* cli/report.c: 'qualify report RESULTS.json... -o report.html': one
 * self-contained HTML page with plots drawn by PLplot's SVG driver and
 * inlined (docs/report.md).  Only the CLI links PLplot, so users of
 * libqualify are not made to; a build without it keeps the subcommand and
 * says what is missing. */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_escape.h"
#include "_files.h"
#include "cli.h"
#include "qf_audit.h"
#include "qf_report.h"
#include "qf_version.h"

static const char *help_text =
    "usage: qualify report FILE... -o report.html [--title TEXT]\n"
    "\n"
    "Write one self-contained HTML page (no network needed: the plots are\n"
    "inline SVG drawn with PLplot) from sweep reports (results.json or a run's\n"
    "journal.jsonl) and quantization audits (audit.json):\n"
    "  - max error against K, log-log, with the derived bound, per kernel, op\n"
    "    and dtype (cases that have a K dimension);\n"
    "  - verdict maps over the two shape dimensions with the most values;\n"
    "  - SQNR of each audited scheme, pooled and per tensor.\n"
    "\n"
    "  -o FILE       the HTML file to write (required)\n"
    "  --title TEXT  page title (default 'qualify report')\n"
    "  -h, --help    this text\n"
    "\n"
    "Exit codes: 0 written; 2 bad usage, an unreadable, corrupt or truncated\n"
    "input (named), or a qualify built without PLplot.\n";

#ifndef QF_HAVE_PLPLOT

int qf_cli_report(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(help_text, stdout);
        return QF_EXIT_OK;
    }
    return qf_cli_usage_error("report", "this qualify was built without PLplot (install libplplot-dev, "
                                        "docs/building.md, and rebuild)");
}

#else

#include <plplot.h>

/* ---- Text helpers ----------------------------------------------------------- */

/* The one HTML escaping (_escape.h): names and paths are text. */
#define html_esc _qf_esc_html

/* PLplot treats '#' as its escape character: double it. */
static const char *pl_text(const char *s, char *buf, size_t size)
{
    size_t j = 0;
    for (; *s && j + 3 < size; s++) {
        if (*s == '#')
            buf[j++] = '#';
        buf[j++] = *s;
    }
    buf[j] = '\0';
    return buf;
}

/* ---- Plot framing: one PLplot SVG file per plot, inlined ------------------- */

static char plot_path[64];

enum { C_BG = 0, C_FG, C_RED, C_BLUE, C_GREEN, C_ORANGE, C_PURPLE, C_GRAY, C_DARKRED, C_TEAL, C_LIGHT, C_WHITE };

static void plot_begin(int w, int h)
{
    plsdev("svg");
    plsfnam(plot_path);
    plspage(0, 0, w, h, 0, 0);
    plscol0(C_BG, 255, 255, 255);
    plscol0(C_FG, 0, 0, 0);
    plscol0(C_RED, 200, 40, 40);
    plscol0(C_BLUE, 40, 80, 200);
    plscol0(C_GREEN, 60, 160, 70);
    plscol0(C_ORANGE, 240, 160, 30);
    plscol0(C_PURPLE, 130, 60, 170);
    plscol0(C_GRAY, 150, 150, 150);
    plscol0(C_DARKRED, 120, 0, 0);
    plscol0(C_TEAL, 40, 150, 160);
    plscol0(C_LIGHT, 225, 225, 225);
    plscol0(C_WHITE, 255, 255, 255);
    plinit();
    plschr(0, 0.85);
    plcol0(C_FG);
}

/* End the plot and copy its <svg> element into out inside a <figure>. */
static int plot_count;

static int plot_end(FILE *out, const char *caption)
{
    FILE *f;
    char *buf, *svg, *p;
    long n;
    plend();
    f = fopen(plot_path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[n] = '\0';
    svg = strstr(buf, "<svg");
    fputs("<figure>\n", out);
    /* PLplot numbers its clip paths from 1 in every file; inline SVGs share
     * the page's id space, so each plot's ids get a prefix of their own. */
    plot_count++;
    for (p = svg; p && *p; p++) {
        if (!strncmp(p, "text-clipping", 13))
            fprintf(out, "p%d-", plot_count);
        fputc(*p, out);
    }
    fputs("<figcaption>", out);
    html_esc(out, caption);
    fputs("</figcaption></figure>\n", out);
    free(buf);
    return svg ? 0 : -1;
}

/* ---- Sweep results ------------------------------------------------------------ */

/* One kernel, op and dtype tuple: the suite's op (log_softmax apart from
 * softmax, though both run on softmax kernels), as in report.md. */
typedef struct group {
    const char *kernel, *op, *dtype;
    size_t *idx; /* result indices */
    size_t n;
} group;

static int find_k(const qf_result *r, double *k)
{
    size_t d;
    for (d = 0; d < r->ndims; d++)
        if (!strcmp(r->dims[d].name, "K") || !strcmp(r->dims[d].name, "k")) {
            *k = (double)r->dims[d].value;
            return 1;
        }
    return 0;
}

static group *make_groups(const qf_result *r, size_t n, size_t *ng)
{
    group *g = NULL;
    size_t i, j, cap = 0;
    *ng = 0;
    for (i = 0; i < n; i++) {
        for (j = 0; j < *ng; j++)
            if (!strcmp(g[j].kernel, r[i].kernel) && !strcmp(g[j].op, r[i].op) &&
                !strcmp(g[j].dtype, r[i].dtype))
                break;
        if (j == *ng) {
            if (*ng == cap) {
                group *ng_ = realloc(g, (cap = cap ? 2 * cap : 8) * sizeof *g);
                if (!ng_)
                    break;
                g = ng_;
            }
            g[j].kernel = r[i].kernel;
            g[j].op = r[i].op;
            g[j].dtype = r[i].dtype;
            g[j].idx = malloc(n * sizeof *g[j].idx);
            g[j].n = 0;
            (*ng)++;
        }
        if (g[j].idx)
            g[j].idx[g[j].n++] = i;
    }
    return g;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Max error and max bound against K for one group; 0 when nothing to plot. */
static int plot_k(FILE *out, const qf_result *r, const group *g)
{
    double *ks = malloc(g->n * sizeof *ks), *err = malloc(g->n * sizeof *err), *bnd = malloc(g->n * sizeof *bnd);
    PLFLT *x = malloc(g->n * sizeof *x), *ye = malloc(g->n * sizeof *ye), *xb = malloc(g->n * sizeof *xb),
          *yb = malloc(g->n * sizeof *yb);
    size_t i, j, nk = 0, ne = 0, nb = 0, zeros = 0;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    char cap[512], t1[256], t2[256];
    int rc = 0;
    if (!ks || !err || !bnd || !x || !ye || !xb || !yb)
        goto done;
    for (i = 0; i < g->n; i++) {
        const qf_result *c = &r[g->idx[i]];
        double k;
        if (!c->has_metrics || !find_k(c, &k))
            continue;
        for (j = 0; j < nk && ks[j] != k; j++)
            ;
        if (j == nk) {
            ks[nk] = k;
            err[nk] = -1;
            bnd[nk] = -1;
            nk++;
        }
        if (isfinite(c->metrics.max_abs) && c->metrics.max_abs > err[j])
            err[j] = c->metrics.max_abs;
        if (isfinite(c->bound.max_bound) && c->bound.max_bound > bnd[j])
            bnd[j] = c->bound.max_bound;
    }
    if (nk == 0)
        goto done;
    /* sort by K (K, error and bound move together) */
    for (i = 1; i < nk; i++)
        for (j = i; j > 0 && ks[j - 1] > ks[j]; j--) {
            double t;
            t = ks[j], ks[j] = ks[j - 1], ks[j - 1] = t;
            t = err[j], err[j] = err[j - 1], err[j - 1] = t;
            t = bnd[j], bnd[j] = bnd[j - 1], bnd[j - 1] = t;
        }
    for (i = 0; i < nk; i++) {
        double lk = log10(ks[i] > 0 ? ks[i] : 1);
        xmin = fmin(xmin, lk), xmax = fmax(xmax, lk);
        if (err[i] > 0) {
            x[ne] = lk, ye[ne++] = log10(err[i]);
            ymin = fmin(ymin, log10(err[i])), ymax = fmax(ymax, log10(err[i]));
        } else if (err[i] == 0)
            zeros++;
        if (bnd[i] > 0) {
            xb[nb] = lk, yb[nb++] = log10(bnd[i]);
            ymin = fmin(ymin, log10(bnd[i])), ymax = fmax(ymax, log10(bnd[i]));
        }
    }
    if (ne == 0 && nb == 0)
        goto done;
    plot_begin(640, 400);
    plenv(xmin - 0.15, xmax + 0.15, floor(ymin - 0.3), ceil(ymax + 0.3), 0, 30);
    snprintf(t2, sizeof t2, "%s  %s  %s", g->kernel, g->op, g->dtype);
    pllab("K", "max |error|", pl_text(t2, t1, sizeof t1));
    plwidth(2);
    if (nb) {
        plcol0(C_BLUE);
        pllsty(2);
        plline((PLINT)nb, xb, yb);
        pllsty(1);
    }
    if (ne) {
        plcol0(C_RED);
        plline((PLINT)ne, x, ye);
        plpoin((PLINT)ne, x, ye, 9);
    }
    {
        PLINT opt[2] = {PL_LEGEND_LINE | PL_LEGEND_SYMBOL, PL_LEGEND_LINE};
        PLINT tcol[2] = {C_FG, C_FG}, lcol[2] = {C_RED, C_BLUE}, lsty[2] = {1, 2}, scol[2] = {C_RED, C_BLUE},
              snum[2] = {1, 1}, bcol[2] = {0, 0}, bpat[2] = {0, 0};
        PLFLT lw[2] = {2, 2}, ss[2] = {1, 1}, bsc[2] = {0, 0}, blw[2] = {0, 0}, lwid, lht;
        const char *text[2] = {"max error (measured)", "derived bound (largest)"}, *sym[2] = {"#(728)", ""};
        plwidth(1);
        pllegend(&lwid, &lht, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, PL_POSITION_TOP | PL_POSITION_LEFT |
                 PL_POSITION_INSIDE, 0.02, 0.02, 0.08, C_BG, C_FG, 1, 0, 0, 2, opt, 1.0, 0.8, 2.0, 0.0, tcol, text,
                 bcol, bpat, bsc, blw, lcol, lsty, lw, scol, ss, snum, sym);
    }
    snprintf(cap, sizeof cap,
             "%s, %s, %s: the largest |error| of the cases at each K (red) and the largest per-element "
             "derived bound (blue, dashed); %zu K values%s.",
             g->kernel, g->op, g->dtype, nk,
             zeros ? "; K values whose error was exactly 0 are not drawn (log axis)" : "");
    rc = plot_end(out, cap) == 0;
done:
    free(ks), free(err), free(bnd), free(x), free(ye), free(xb), free(yb);
    return rc;
}

static int verdict_rank(qf_verdict v)
{
    static const int rank[QF_VERDICT_COUNT] = {3, 4, 8, 7, 6, 5, 1, 0, 2};
    return (unsigned)v < QF_VERDICT_COUNT ? rank[v] : 0;
}

static int verdict_color(qf_verdict v)
{
    static const int col[QF_VERDICT_COUNT] = {C_GREEN, C_ORANGE, C_RED,   C_DARKRED, C_PURPLE,
                                              C_TEAL,  C_GRAY,   C_LIGHT, C_BLUE};
    return (unsigned)v < QF_VERDICT_COUNT ? col[v] : C_WHITE;
}

/* Distinct values of dimension `name` in the group, sorted. */
static size_t dim_values(const qf_result *r, const group *g, const char *name, double *vals)
{
    size_t i, d, j, nv = 0;
    for (i = 0; i < g->n; i++) {
        const qf_result *c = &r[g->idx[i]];
        for (d = 0; d < c->ndims; d++)
            if (!strcmp(c->dims[d].name, name)) {
                for (j = 0; j < nv && vals[j] != (double)c->dims[d].value; j++)
                    ;
                if (j == nv)
                    vals[nv++] = (double)c->dims[d].value;
            }
    }
    qsort(vals, nv, sizeof *vals, cmp_double);
    return nv;
}

static int plot_verdicts(FILE *out, const qf_result *r, const group *g)
{
    const qf_result *first = &r[g->idx[0]];
    double *vals[2] = {NULL, NULL}, *tmp = malloc(g->n * sizeof *tmp);
    size_t nv[2] = {0, 0}, i, d, best[2] = {0, 0}, nx, ny, cx, cy;
    int *cell = NULL, rc = 0, present[QF_VERDICT_COUNT] = {0};
    const char *dn[2] = {NULL, NULL};
    char cap[512], t1[256], t2[256];
    if (!tmp)
        return 0;
    /* the two dimensions with the most distinct values (at least 2 each) */
    for (d = 0; d < first->ndims; d++) {
        size_t n = dim_values(r, g, first->dims[d].name, tmp);
        if (n >= 2 && n > best[0]) {
            best[1] = best[0], dn[1] = dn[0];
            best[0] = n, dn[0] = first->dims[d].name;
        } else if (n >= 2 && n > best[1]) {
            best[1] = n, dn[1] = first->dims[d].name;
        }
    }
    if (!dn[0] || !dn[1])
        goto done;
    for (i = 0; i < 2; i++) {
        vals[i] = malloc(g->n * sizeof *vals[i]);
        if (!vals[i])
            goto done;
        nv[i] = dim_values(r, g, dn[i], vals[i]);
    }
    nx = nv[0], ny = nv[1];
    cell = malloc(nx * ny * sizeof *cell);
    if (!cell)
        goto done;
    for (i = 0; i < nx * ny; i++)
        cell[i] = -1;
    for (i = 0; i < g->n; i++) {
        const qf_result *c = &r[g->idx[i]];
        double v[2] = {NAN, NAN};
        size_t k;
        for (d = 0; d < c->ndims; d++)
            for (k = 0; k < 2; k++)
                if (!strcmp(c->dims[d].name, dn[k]))
                    v[k] = (double)c->dims[d].value;
        for (cx = 0; cx < nx && vals[0][cx] != v[0]; cx++)
            ;
        for (cy = 0; cy < ny && vals[1][cy] != v[1]; cy++)
            ;
        if (cx == nx || cy == ny)
            continue;
        if (cell[cy * nx + cx] < 0 || verdict_rank(c->verdict) > verdict_rank((qf_verdict)cell[cy * nx + cx]))
            cell[cy * nx + cx] = (int)c->verdict;
    }
    plot_begin(640, 440);
    pladv(0);
    plvpor(0.14, 0.72, 0.14, 0.84);
    plwind(0, (PLFLT)nx, 0, (PLFLT)ny);
    for (cy = 0; cy < ny; cy++)
        for (cx = 0; cx < nx; cx++) {
            PLFLT px[4] = {(PLFLT)cx, (PLFLT)cx + 1, (PLFLT)cx + 1, (PLFLT)cx},
                  py[4] = {(PLFLT)cy, (PLFLT)cy, (PLFLT)cy + 1, (PLFLT)cy + 1};
            int v = cell[cy * nx + cx];
            plcol0(v < 0 ? C_WHITE : verdict_color((qf_verdict)v));
            plfill(4, px, py);
            plcol0(C_BG);
            plline(4, px, py);
            if (v >= 0)
                present[v] = 1;
        }
    plcol0(C_FG);
    plbox("bc", 0, 0, "bc", 0, 0);
    for (cx = 0; cx < nx; cx++) {
        char lab[32];
        snprintf(lab, sizeof lab, "%.0f", vals[0][cx]);
        plmtex(nx > 8 ? "bv" : "b", nx > 8 ? 0.5 : 1.2, ((double)cx + 0.5) / (double)nx, nx > 8 ? 1.0 : 0.5, lab);
    }
    for (cy = 0; cy < ny; cy++) {
        char lab[32];
        snprintf(lab, sizeof lab, "%.0f", vals[1][cy]);
        plmtex("lv", 0.5, ((double)cy + 0.5) / (double)ny, 1.0, lab);
    }
    plmtex("b", nx > 8 ? 4.0 : 3.0, 0.5, 0.5, pl_text(dn[0], t1, sizeof t1));
    plmtex("l", 4.0, 0.5, 0.5, pl_text(dn[1], t1, sizeof t1));
    snprintf(t2, sizeof t2, "%s  %s  %s", g->kernel, g->op, g->dtype);
    plmtex("t", 2.0, 0.5, 0.5, pl_text(t2, t1, sizeof t1));
    /* the legend: a square and the name of each verdict present */
    {
        int v, row = 0;
        plvpor(0.76, 0.98, 0.14, 0.88);
        plwind(0, 1, 0, 1);
        for (v = 0; v < QF_VERDICT_COUNT; v++)
            if (present[v]) {
                double y0 = 1 - 0.09 * (row + 1);
                PLFLT px[4] = {0.02, 0.14, 0.14, 0.02}, py[4] = {y0, y0, y0 + 0.06, y0 + 0.06};
                plcol0(verdict_color((qf_verdict)v));
                plfill(4, px, py);
                plcol0(C_FG);
                plline(4, px, py);
                plptex(0.2, y0 + 0.015, 1, 0, 0, qf_verdict_name((qf_verdict)v));
                row++;
            }
    }
    snprintf(cap, sizeof cap,
             "%s, %s, %s: verdict per (%s, %s), the worst over the other dimensions, inputs and seeds "
             "(FAILED > CRASHED > TIMEOUT > MISTRUSTED > MARGINAL > QUALIFIED > UNSUPPORTED > SKIPPED); "
             "white: no case.",
             g->kernel, g->op, g->dtype, dn[0], dn[1]);
    rc = plot_end(out, cap) == 0;
done:
    free(tmp), free(vals[0]), free(vals[1]), free(cell);
    return rc;
}

/* ---- Audits ---------------------------------------------------------------------- */

/* Bars of SQNR (dB) per scheme; values[i] may be +-Inf. */
static int plot_bars(FILE *out, const char *title, const char *const *labels, const double *values, size_t n,
                     const char *caption)
{
    double ymax = 10, ymin = 0;
    size_t i;
    char t1[256];
    for (i = 0; i < n; i++)
        if (isfinite(values[i])) {
            ymax = fmax(ymax, values[i]);
            ymin = fmin(ymin, values[i]);
        }
    ymax = ceil((ymax + 10) / 10) * 10;
    ymin = ymin < 0 ? floor(ymin / 10) * 10 : 0;
    plot_begin(640, 420);
    pladv(0);
    plvpor(0.1, 0.95, 0.32, 0.9);
    plwind(0, (PLFLT)n, ymin, ymax);
    plcol0(C_LIGHT);
    plbox("", 0, 0, "g", 0, 0);
    for (i = 0; i < n; i++) {
        double top = isinf(values[i]) ? (values[i] > 0 ? ymax : ymin) : isnan(values[i]) ? 0 : values[i];
        PLFLT px[4] = {(PLFLT)i + 0.15, (PLFLT)i + 0.85, (PLFLT)i + 0.85, (PLFLT)i + 0.15},
              py[4] = {0, 0, top, top};
        plcol0(isinf(values[i]) && values[i] > 0 ? C_GREEN : isinf(values[i]) ? C_RED : C_BLUE);
        plfill(4, px, py);
        plcol0(C_FG);
        if (isinf(values[i]))
            plptex((PLFLT)i + 0.5, values[i] > 0 ? ymax - (ymax - ymin) * 0.05 : (ymax - ymin) * 0.03, 0, 1, 0.5,
                   values[i] > 0 ? "exact" : "overflow");
        else if (isfinite(values[i])) {
            char v[32];
            snprintf(v, sizeof v, "%.1f", values[i]);
            plptex((PLFLT)i + 0.5, top + (ymax - ymin) * 0.02, 1, 0, 0.5, v);
        }
        plmtex("bv", 0.5, ((double)i + 0.5) / (double)n, 1.0, pl_text(labels[i], t1, sizeof t1));
    }
    plcol0(C_FG);
    plbox("bc", 0, 0, "bcnt", 0, 0);
    plmtex("l", 3.0, 0.5, 0.5, "SQNR (dB)");
    plmtex("t", 1.5, 0.5, 0.5, pl_text(title, t1, sizeof t1));
    return plot_end(out, caption) == 0;
}

static qf_status audit_check(const char *path, const json_t *doc, char *err, size_t size)
{
    const json_t *tensors = json_object_get(doc, "tensors"), *summary = json_object_get(doc, "summary");
    const json_t *version = json_object_get(doc, "version");
    size_t i, j;
    /* cli/audit.c writes version 1; a later version may change what the
     * keys mean, so it is refused rather than drawn wrongly. */
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        snprintf(err, size, "%s: audit: 'version' must be the integer 1 (this qualify reads audit version 1)",
                 path);
        return QF_EUNSUPPORTED;
    }
    if (!json_is_array(tensors) || !json_is_array(summary)) {
        snprintf(err, size, "%s: audit: 'tensors' and 'summary' must be arrays", path);
        return QF_EPARSE;
    }
    if (!json_array_size(tensors) || !json_array_size(summary)) {
        snprintf(err, size, "%s: audit: no tensors or no summary: nothing to plot", path);
        return QF_EPARSE;
    }
    for (i = 0; i < json_array_size(summary); i++)
        if (!json_is_string(json_object_get(json_array_get(summary, i), "scheme"))) {
            snprintf(err, size, "%s: audit: summary[%zu]: 'scheme' missing", path, i);
            return QF_EPARSE;
        }
    for (i = 0; i < json_array_size(tensors); i++) {
        const json_t *t = json_array_get(tensors, i), *res = json_object_get(t, "results");
        if (!json_is_string(json_object_get(t, "name")) || !json_is_array(res)) {
            snprintf(err, size, "%s: audit: tensors[%zu]: 'name' or 'results' missing", path, i);
            return QF_EPARSE;
        }
        for (j = 0; j < json_array_size(res); j++)
            if (!json_is_string(json_object_get(json_array_get(res, j), "scheme"))) {
                snprintf(err, size, "%s: audit: tensors[%zu].results[%zu]: 'scheme' missing", path, i, j);
                return QF_EPARSE;
            }
    }
    return QF_OK;
}

#define AUDIT_MAX_TENSOR_PLOTS 24

static int plot_audit(FILE *out, const char *path, const json_t *doc)
{
    const json_t *tensors = json_object_get(doc, "tensors"), *summary = json_object_get(doc, "summary");
    size_t n = json_array_size(summary), i, j, plots = 0;
    const char **labels = calloc(n + 1, sizeof *labels);
    double *vals = calloc(n + 1, sizeof *vals);
    char cap[1024], title[256];
    if (!labels || !vals) {
        free(labels), free(vals);
        return 0;
    }
    for (i = 0; i < n; i++) {
        labels[i] = json_string_value(json_object_get(json_array_get(summary, i), "scheme"));
        vals[i] = qf_audit_json_get(json_array_get(summary, i), "sqnr_db");
    }
    snprintf(title, sizeof title, "all tensors of %s", path);
    snprintf(cap, sizeof cap,
             "%s: SQNR of each scheme pooled over its %zu tensors (total signal over total error energy; "
             "docs/audit.md). Higher is better; green 'exact': no error at all.",
             path, json_array_size(tensors));
    plots += plot_bars(out, title, labels, vals, n, cap);
    free(labels), free(vals);
    for (i = 0; i < json_array_size(tensors) && i < AUDIT_MAX_TENSOR_PLOTS; i++) {
        const json_t *t = json_array_get(tensors, i), *res = json_object_get(t, "results");
        size_t m = json_array_size(res);
        if (json_is_false(json_object_get(t, "usable"))) {
            /* Nothing measured (docs/audit.md "No usable value"): the note. */
            fputs("<p>Tensor ", out);
            html_esc(out, json_string_value(json_object_get(t, "name")));
            fputs(": ", out);
            html_esc(out, json_string_value(json_object_get(t, "note")));
            fputs(" (not plotted).</p>\n", out);
            continue;
        }
        labels = calloc(m + 1, sizeof *labels);
        vals = calloc(m + 1, sizeof *vals);
        if (!labels || !vals) {
            free(labels), free(vals);
            break;
        }
        for (j = 0; j < m; j++) {
            labels[j] = json_string_value(json_object_get(json_array_get(res, j), "scheme"));
            vals[j] = qf_audit_json_get(json_array_get(res, j), "sqnr_db");
        }
        snprintf(title, sizeof title, "%s (%s)", json_string_value(json_object_get(t, "name")),
                 json_is_string(json_object_get(t, "dtype")) ? json_string_value(json_object_get(t, "dtype")) : "?");
        snprintf(cap, sizeof cap, "Tensor %s of %s: SQNR per scheme.", json_string_value(json_object_get(t, "name")),
                 path);
        plots += plot_bars(out, title, labels, vals, m, cap);
        free(labels), free(vals);
    }
    if (json_array_size(tensors) > AUDIT_MAX_TENSOR_PLOTS) {
        fprintf(out, "<p>%zu more tensors are in ", json_array_size(tensors) - AUDIT_MAX_TENSOR_PLOTS);
        html_esc(out, path);
        fputs(" (not plotted).</p>\n", out);
    }
    return (int)plots;
}

/* ---- The page ------------------------------------------------------------------------ */

static const char *page_head =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"generator\" content=\"qualify " QF_VERSION_STRING " (PLplot SVG)\">\n"
    "<style>\n"
    "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}\n"
    "figure{display:inline-block;margin:0 1em 1.5em 0;vertical-align:top;max-width:660px}\n"
    "figure svg{width:100%;height:auto;border:1px solid #ddd}\n"
    "figcaption{font-size:0.85em;color:#555}\n"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\n"
    "</style>\n"
    /* Errors while the page loads are recorded in the DOM, so a headless
     * browser's --dump-dom shows them (tests/htmlreport). */
    "<script>\n"
    "window.qfErrors=0;\n"
    "window.addEventListener('error',function(){window.qfErrors++;},true);\n"
    "(function(){var e=console.error;console.error=function(){window.qfErrors++;e.apply(console,arguments);};})();\n"
    "</script>\n";

static const char *page_tail =
    "<script>\n"
    "window.addEventListener('load',function(){\n"
    "  var s=document.querySelectorAll('figure > svg'),v=0,i;\n"
    "  for(i=0;i<s.length;i++){var r=s[i].getBoundingClientRect();if(r.width>0&&r.height>0&&s[i].childElementCount>0)v++;}\n"
    "  document.body.setAttribute('data-svg-count',String(s.length));\n"
    "  document.body.setAttribute('data-svg-visible',String(v));\n"
    "  document.body.setAttribute('data-errors',String(window.qfErrors));\n"
    "  document.body.setAttribute('data-loaded','ok');\n"
    "});\n"
    "</script>\n</body>\n</html>\n";

typedef struct input {
    const char *path;
    json_t *audit;     /* an audit document, or */
    qf_result *results; /* sweep results */
    size_t n;
} input;

/* One plot per kernel, op and dtype of every sweep input; the plots drawn. */
static size_t plot_sweeps(FILE *out, const input *in, int nin, int (*plot)(FILE *, const qf_result *, const group *))
{
    size_t plots = 0, ng, i;
    int a;
    for (a = 0; a < nin; a++) {
        group *g;
        if (in[a].audit || !in[a].n)
            continue;
        g = make_groups(in[a].results, in[a].n, &ng);
        for (i = 0; i < ng; i++)
            plots += (size_t)plot(out, in[a].results, &g[i]);
        for (i = 0; i < ng; i++)
            free(g[i].idx);
        free(g);
    }
    return plots;
}

int qf_cli_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"title", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *outpath = NULL, *title = "qualify report";
    input *in = NULL;
    int c, rc = QF_EXIT_OK, nin = 0, a, fd;
    FILE *out = NULL;
    _qf_out outf;
    size_t total = 0, plots_k = 0, plots_v = 0, plots_a = 0;
    char err[1024] = "";
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': outpath = optarg; break;
        case 't': title = optarg; break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        case ':': return qf_cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
        default: return qf_cli_usage_error("report", "unknown option '%s' (see qualify report --help)", argv[optind - 1]);
        }
    }
    if (!outpath)
        return qf_cli_usage_error("report", "-o report.html is required");
    if (optind >= argc)
        return qf_cli_usage_error("report", "no input (results.json, journal.jsonl or audit.json)");
    in = calloc((size_t)(argc - optind), sizeof *in);
    if (!in)
        return QF_EXIT_FAIL;
    for (a = optind; a < argc && rc == QF_EXIT_OK; a++, nin++) {
        json_error_t je;
        json_t *j = NULL;
        /* A FIFO or device is refused before it is read (qualify/_files.h). */
        FILE *jf = _qf_fopen_read(argv[a], err, sizeof err, NULL);
        if (!jf) {
            qf_cli_error("report", "%s", err);
            rc = QF_EXIT_USAGE;
            break;
        }
        j = json_loadf(jf, JSON_REJECT_DUPLICATES, &je);
        fclose(jf);
        in[nin].path = argv[a];
        if (j && json_is_object(j) && json_is_string(json_object_get(j, "format")) &&
            !strcmp(json_string_value(json_object_get(j, "format")), "qualify-audit")) {
            if (audit_check(argv[a], j, err, sizeof err) != QF_OK) {
                qf_cli_error("report", "%s", err);
                json_decref(j);
                rc = QF_EXIT_USAGE;
                break;
            }
            in[nin].audit = j;
            total++;
            continue;
        }
        json_decref(j);
        if (qf_report_read(argv[a], &in[nin].results, &in[nin].n, NULL, err, sizeof err) != QF_OK) {
            qf_cli_error("report", "%s", err);
            rc = QF_EXIT_USAGE;
            break;
        }
        if (err[0])
            qf_cli_error("report", "%s", err);
        if (!in[nin].n) {
            /* An empty sweep (a --kernel filter that matched nothing) has
             * nothing to plot; a page saying so would look like success. */
            fprintf(stderr, "qualify report: %s: no cases: nothing to plot\n", argv[a]);
            rc = QF_EXIT_USAGE;
            nin++;
            break;
        }
        total += in[nin].n;
    }
    if (rc != QF_EXIT_OK)
        goto done;
    snprintf(plot_path, sizeof plot_path, "/tmp/qf-report-XXXXXX");
    fd = mkstemp(plot_path);
    if (fd < 0) {
        fprintf(stderr, "qualify report: cannot create a temporary file in /tmp\n");
        rc = QF_EXIT_FAIL;
        goto done;
    }
    close(fd);
    /* beside outpath, renamed over it when complete (_files.h) */
    if (!(out = _qf_out_open(&outf, outpath, _QF_OUT_SYNC, err, sizeof err))) {
        fprintf(stderr, "qualify report: %s\n", err);
        remove(plot_path);
        rc = QF_EXIT_USAGE;
        goto done;
    }
    fputs(page_head, out);
    fputs("<title>", out);
    html_esc(out, title);
    fputs("</title>\n</head>\n<body data-loaded=\"no\">\n<h1>", out);
    html_esc(out, title);
    fputs("</h1>\n<p>Written by qualify " QF_VERSION_STRING " from:</p>\n<table><tr><th>input</th><th>kind</th>"
          "<th>cases / tensors</th></tr>\n",
          out);
    for (a = 0; a < nin; a++) {
        fputs("<tr><td>", out);
        html_esc(out, in[a].path);
        if (in[a].audit)
            fprintf(out, "</td><td>quantization audit</td><td>%zu</td></tr>\n",
                    json_array_size(json_object_get(in[a].audit, "tensors")));
        else
            fprintf(out, "</td><td>sweep results</td><td>%zu</td></tr>\n", in[a].n);
    }
    fputs("</table>\n<p>Definitions: docs/report.md, "
          "docs/reports.md (sweeps), docs/audit.md (audits), docs/bounds.md (bounds).</p>\n",
          out);
    /* sweeps */
    fputs("<h2>Max error against K</h2>\n", out);
    plots_k = plot_sweeps(out, in, nin, plot_k);
    if (!plots_k)
        fputs("<p>No case with a K dimension and measured errors.</p>\n", out);
    fputs("<h2>Verdict maps</h2>\n", out);
    plots_v = plot_sweeps(out, in, nin, plot_verdicts);
    if (!plots_v)
        fputs("<p>No kernel, op and dtype with two shape dimensions of at least two values each.</p>\n", out);
    fputs("<h2>Quantization audit: formats compared</h2>\n", out);
    for (a = 0; a < nin; a++)
        if (in[a].audit)
            plots_a += (size_t)plot_audit(out, in[a].path, in[a].audit);
    if (!plots_a)
        fputs("<p>No audit input (qualify audit ... -o DIR writes DIR/audit.json).</p>\n", out);
    fputs(page_tail, out);
    if (_qf_out_commit(&outf, err, sizeof err) != QF_OK) {
        fprintf(stderr, "qualify report: %s\n", err);
        rc = QF_EXIT_USAGE;
    }
    remove(plot_path);
    if (rc == QF_EXIT_OK)
        fprintf(stderr, "qualify report: %s: %zu plots (%zu error/K, %zu verdict maps, %zu audit)\n", outpath,
                plots_k + plots_v + plots_a, plots_k, plots_v, plots_a);
done:
    for (a = 0; a < nin; a++) {
        json_decref(in[a].audit);
        free(in[a].results);
    }
    free(in);
    (void)total;
    return rc;
}

#endif /* QF_HAVE_PLPLOT */
