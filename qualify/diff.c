/* diff.c: compare two sweeps (qf_diff.h, docs/diff.md). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_enable.h"
#include "qf_diff.h"
#include "qf_enable.h"
#include "qf_report.h"
#include "qf_verdict.h"

qf_diff_options qf_diff_options_default(void)
{
    qf_diff_options o;
    o.ulp_factor = 2.0;
    o.ulp_floor = 0.5;
    o.slow_factor = 0.10;
    return o;
}

/* Fitness rank: higher is worse; -1 is no evidence (UNSUPPORTED, SKIPPED),
 * which is compared through the qualified shapes instead. */
static int rank(qf_verdict v)
{
    switch (v) {
    case QF_VERDICT_QUALIFIED: return 0;
    case QF_VERDICT_UNCHECKED: /* checked against nothing: evidence lost, as MISTRUSTED */
    case QF_VERDICT_MISTRUSTED: return 1;
    case QF_VERDICT_MARGINAL: return 2;
    case QF_VERDICT_TIMEOUT:
    case QF_VERDICT_CRASHED:
    case QF_VERDICT_FAILED: return 3;
    default: return -1;
    }
}

static const char *arch_of(const qf_result *r)
{
    return r->arch[0] ? r->arch : "cpu";
}

static int same_case(const qf_result *a, const qf_result *b)
{
    return !strcmp(a->case_id, b->case_id) && !strcmp(a->kernel, b->kernel) &&
           !strcmp(arch_of(a), arch_of(b));
}

static void shape_text(const qf_result *r, char *buf, size_t size)
{
    size_t d, n = 0;
    buf[0] = '\0';
    for (d = 0; d < r->ndims && n < size; d++) {
        int w = snprintf(buf + n, size - n, "%s%s=%llu", d ? "," : "", r->dims[d].name,
                         (unsigned long long)r->dims[d].value);
        if (w > 0)
            n += (size_t)w;
    }
}

/* The same (kernel, arch, op, dtype, op parameters, dims): the identity
 * of a shape as qualify enable keys it, so a relu failure is not a lost
 * gelu shape.  Parameters compare by their key (qf_enable_param_key), in
 * which a default spelled out in one suite and left out in another are
 * the same. */
static int same_shape(const qf_result *a, const qf_result *b)
{
    size_t d;
    char ka[QF_ENABLE_PARAMS_MAX], kb[QF_ENABLE_PARAMS_MAX];
    if (strcmp(a->kernel, b->kernel) || strcmp(arch_of(a), arch_of(b)) || strcmp(a->op, b->op) ||
        strcmp(a->dtype, b->dtype) || a->ndims != b->ndims)
        return 0;
    for (d = 0; d < a->ndims; d++)
        if (strcmp(a->dims[d].name, b->dims[d].name) || a->dims[d].value != b->dims[d].value)
            return 0;
    qf_enable_param_key(a, ka, sizeof ka, NULL, 0);
    qf_enable_param_key(b, kb, sizeof kb, NULL, 0);
    return !strcmp(ka, kb);
}

/* All cases of r's shape (kernel, arch, op, dtype, parameters, dims) in set are QUALIFIED;
 * *any receives whether there is one at all. */
static int shape_qualified(const qf_result *set, size_t n, const qf_result *r, int *any)
{
    size_t i;
    int all = 1;
    *any = 0;
    for (i = 0; i < n; i++)
        if (same_shape(&set[i], r)) {
            *any = 1;
            all &= set[i].verdict == QF_VERDICT_QUALIFIED;
        }
    return *any && all;
}

#define cell qf__enable_md_cell

/* A row "| kernel | arch | case | base | new | detail |". */
static void row(FILE *f, const qf_result *b, const qf_result *n, const char *detail)
{
    const qf_result *x = n ? n : b;
    if (!f)
        return;
    fputs("| `", f);
    cell(f, x->kernel);
    fputs("` | ", f);
    cell(f, arch_of(x));
    fputs(" | ", f);
    cell(f, x->case_id);
    fprintf(f, " | %s | %s | ", b ? qf_verdict_name(b->verdict) : "-", n ? qf_verdict_name(n->verdict) : "-");
    cell(f, detail);
    fputs(" |\n", f);
}

static void header(FILE *f, const char *title, size_t count)
{
    if (f && count)
        fprintf(
            f,
            "\n### %s (%zu)\n\n| kernel | arch | case | base | new | detail |\n|---|---|---|---|---|---|\n",
            title, count);
}

/* The qualified regions of every entry (qf_enable.h) into buf, joined. */
static void regions_text(const qf_enable_entry *e, char *buf, size_t size)
{
    size_t i, n = 0;
    char one[512];
    buf[0] = '\0';
    for (i = 0; e && i < e->nregions && n < size; i++) {
        int w;
        if (e->regions[i].failed)
            continue;
        qf_enable_region_text(e, &e->regions[i], one, sizeof one);
        w = snprintf(buf + n, size - n, "%s%s", n ? "; " : "", one);
        if (w > 0)
            n += (size_t)w;
    }
    if (!buf[0])
        snprintf(buf, size, "none");
}

/* When shapes were lost, the enablement regions before and after (the
 * rule of docs/enable.md) of each entry whose regions changed. */
static void region_changes(FILE *f, const qf_result *base, size_t nb, const qf_result *cur, size_t nn)
{
    qf_enable_table tb, tn;
    size_t i, j;
    char rb[2048], rn[2048];
    qf_enable_init(&tb);
    qf_enable_init(&tn);
    if (qf_enable_add(&tb, base, nb, NULL, "base", NULL, 0) ||
        qf_enable_add(&tn, cur, nn, NULL, "new", NULL, 0) || qf_enable_finish(&tb) || qf_enable_finish(&tn)) {
        qf_enable_free(&tb);
        qf_enable_free(&tn);
        return;
    }
    fputs("\nQualified regions before and after (docs/enable.md):\n\n"
          "| kernel | arch | op | dtype | parameters | base | new |\n|---|---|---|---|---|---|---|\n",
          f);
    for (i = 0; i < tb.nentries; i++) {
        const qf_enable_entry *e = &tb.entries[i], *x = NULL;
        for (j = 0; j < tn.nentries && !x; j++)
            if (!strcmp(tn.entries[j].arch, e->arch) && !strcmp(tn.entries[j].kernel, e->kernel) &&
                !strcmp(tn.entries[j].op, e->op) && !strcmp(tn.entries[j].dtype, e->dtype) &&
                !strcmp(tn.entries[j].params, e->params))
                x = &tn.entries[j];
        regions_text(e, rb, sizeof rb);
        regions_text(x, rn, sizeof rn);
        if (!strcmp(rb, rn))
            continue;
        fputs("| `", f);
        cell(f, e->kernel);
        fputs("` | ", f);
        cell(f, e->arch);
        fputs(" | ", f);
        cell(f, e->op);
        fputs(" | ", f);
        cell(f, e->dtype);
        fputs(" | ", f);
        cell(f, e->params[0] ? e->params : "none");
        fputs(" | ", f);
        cell(f, rb);
        fputs(" | ", f);
        cell(f, rn);
        fputs(" |\n", f);
    }
    qf_enable_free(&tb);
    qf_enable_free(&tn);
}

qf_status qf_diff_markdown(FILE *out, const qf_result *base, size_t nb, const qf_result *cur, size_t nn,
                           const char *base_name, const char *new_name, const qf_diff_options *opt,
                           qf_diff_counts *counts)
{
    qf_diff_options o = opt ? *opt : qf_diff_options_default();
    qf_diff_counts c;
    const qf_result **match_of_new; /* base record of each new one */
    const qf_result **match_of_base;
    size_t i, j, pass;
    char detail[1024], shape[256], pkey[QF_ENABLE_PARAMS_MAX];
    memset(&c, 0, sizeof c);
    match_of_new = calloc(nn + 1, sizeof *match_of_new);
    match_of_base = calloc(nb + 1, sizeof *match_of_base);
    if (!match_of_new || !match_of_base) {
        free(match_of_new);
        free(match_of_base);
        return QF_ENOMEM;
    }
    for (j = 0; j < nn; j++)
        for (i = 0; i < nb; i++)
            if (!match_of_base[i] && same_case(&base[i], &cur[j])) {
                match_of_new[j] = &base[i];
                match_of_base[i] = &cur[j];
                c.matched++;
                break;
            }
    for (i = 0; i < nb; i++)
        c.only_base += !match_of_base[i];
    c.only_new = nn - c.matched;

    /* Pass 0 counts, pass 1 writes (a header needs its count). */
    for (pass = 0; pass < 2; pass++) {
        FILE *f = pass ? out : NULL;
        qf_diff_counts k;
        memset(&k, 0, sizeof k);
        if (pass && out) {
            fprintf(out, "## qualify diff: %s\n\n", c.regressions ? "REGRESSED" : "no regressions");
            fputs("BASE `", out);
            cell(out, base_name);
            fprintf(out, "` (%zu cases) vs NEW `", nb);
            cell(out, new_name);
            fprintf(out, "` (%zu cases): %zu matched, %zu only in base, %zu only in new.\n", nn, c.matched,
                    c.only_base, c.only_new);
            if (c.regressions)
                fprintf(out,
                        "\n**%zu regression%s**: %zu new failures, %zu verdicts worse, %zu error growth, "
                        "%zu qualified shapes lost, %zu slowdowns.\n",
                        c.regressions, c.regressions == 1 ? "" : "s", c.new_failures, c.verdict_worse,
                        c.error_growth, c.shapes_lost, c.slowdowns);
        }
        /* New failures: failing in NEW, not failing in BASE (or new). */
        header(f, "New failures", c.new_failures);
        for (j = 0; j < nn; j++) {
            const qf_result *b = match_of_new[j];
            if (!qf_report_is_failure(cur[j].verdict, 0) || (b && qf_report_is_failure(b->verdict, 0)))
                continue;
            k.new_failures++;
            row(f, b, &cur[j], cur[j].reason);
        }
        /* Other verdicts that got worse (QUALIFIED -> MARGINAL ...). */
        header(f, "Verdicts worse", c.verdict_worse);
        for (j = 0; j < nn; j++) {
            const qf_result *b = match_of_new[j];
            if (!b || (qf_report_is_failure(cur[j].verdict, 0) && !qf_report_is_failure(b->verdict, 0)))
                continue;
            if (rank(b->verdict) < 0 || rank(cur[j].verdict) < 0 || rank(cur[j].verdict) <= rank(b->verdict))
                continue;
            k.verdict_worse++;
            row(f, b, &cur[j], cur[j].reason);
        }
        header(f, "Error growth", c.error_growth);
        for (j = 0; j < nn; j++) {
            const qf_result *b = match_of_new[j];
            double eb, en;
            if (!b || !b->has_metrics || !cur[j].has_metrics)
                continue;
            eb = b->metrics.max_ulp;
            en = cur[j].metrics.max_ulp;
            if (!isfinite(eb))
                continue;
            /* A non-finite error where there was a finite one is growth. */
            if (isfinite(en) && !(en > o.ulp_factor * eb && en - eb > o.ulp_floor))
                continue;
            k.error_growth++;
            snprintf(detail, sizeof detail, "max error %.4g -> %.4g ulp (x%.3g > x%g)", eb, en,
                     eb > 0 ? en / eb : INFINITY, o.ulp_factor);
            row(f, b, &cur[j], detail);
        }
        /* Qualified shapes lost: every base case of the shape QUALIFIED,
         * and in NEW one is not, or the shape is gone.  Reported once per
         * shape (at its first base case). */
        header(f, "Qualified shapes lost", c.shapes_lost);
        for (i = 0; i < nb; i++) {
            int any_b, any_n, first = 1;
            size_t p;
            for (p = 0; p < i && first; p++)
                first = !same_shape(&base[p], &base[i]);
            if (!first || !shape_qualified(base, nb, &base[i], &any_b))
                continue;
            if (shape_qualified(cur, nn, &base[i], &any_n))
                continue;
            k.shapes_lost++;
            shape_text(&base[i], shape, sizeof shape);
            qf_enable_param_key(&base[i], pkey, sizeof pkey, NULL, 0);
            snprintf(detail, sizeof detail, "%s %s%s%.200s: %s", base[i].dtype, shape, pkey[0] ? " " : "", pkey,
                     any_n ? "no longer QUALIFIED in every case" : "no longer swept");
            row(f, &base[i], match_of_base[i], detail);
        }
        if (f && c.shapes_lost)
            region_changes(f, base, nb, cur, nn);
        /* Slowdowns: both timed; the threshold is widened by the larger
         * of the two measured spreads ((max - min) / median). */
        header(f, "Slowdowns", c.slowdowns);
        for (j = 0; j < nn; j++) {
            const qf_result *b = match_of_new[j];
            double ratio, noise;
            if (!b || !b->timing.measured || !cur[j].timing.measured || !(b->timing.median_s > 0))
                continue;
            ratio = cur[j].timing.median_s / b->timing.median_s;
            noise = fmax(isfinite(b->timing.spread) ? b->timing.spread : 0,
                         isfinite(cur[j].timing.spread) ? cur[j].timing.spread : 0);
            if (!(ratio > 1.0 + o.slow_factor + noise))
                continue;
            k.slowdowns++;
            snprintf(detail, sizeof detail, "median %.3g s -> %.3g s (x%.3f > 1 + %g + spread %.3g)",
                     b->timing.median_s, cur[j].timing.median_s, ratio, o.slow_factor, noise);
            row(f, b, &cur[j], detail);
        }
        if (pass == 0) {
            k.matched = c.matched;
            k.only_base = c.only_base;
            k.only_new = c.only_new;
            k.regressions = k.new_failures + k.verdict_worse + k.error_growth + k.shapes_lost + k.slowdowns;
            c = k;
        } else if (f) {
            size_t better = 0;
            for (j = 0; j < nn; j++) {
                const qf_result *b = match_of_new[j];
                better += b && rank(b->verdict) >= 0 && rank(cur[j].verdict) >= 0 &&
                          rank(cur[j].verdict) < rank(b->verdict);
            }
            c.verdict_better = better;
            if (better) {
                header(f, "Verdicts better", better);
                for (j = 0; j < nn; j++) {
                    const qf_result *b = match_of_new[j];
                    if (b && rank(b->verdict) >= 0 && rank(cur[j].verdict) >= 0 &&
                        rank(cur[j].verdict) < rank(b->verdict))
                        row(f, b, &cur[j], cur[j].reason);
                }
            }
            fprintf(f,
                    "\nRules: docs/diff.md (error growth: x%g and +%g ulp; slowdown: x(1 + %g + spread)).\n",
                    o.ulp_factor, o.ulp_floor, o.slow_factor);
        }
    }
    free(match_of_new);
    free(match_of_base);
    if (counts)
        *counts = c;
    return QF_OK;
}
