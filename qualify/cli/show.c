/* cli/show.c: 'qualify show RESULTS.json': print a report (docs/reports.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "_json.h"
#include "cli.h"
#include "qf_report.h"

static const char *help_text = "usage: qualify show RESULTS.json [--failed] [--strict] [--json]\n"
                               "\n"
                               "Print a report written by 'qualify run' (results.json, or the run's\n"
                               "journal): the Markdown summary per kernel, op and dtype tuple, the\n"
                               "failures with their reasons and reproducers, and the provenance.\n"
                               "\n"
                               "  --failed    print only the failing cases, one block each: verdict,\n"
                               "              kernel, case id, reason and the command that reruns it\n"
                               "  --strict    MARGINAL, MISTRUSTED and UNCHECKED count as failures too (listing\n"
                               "              and exit code)\n"
                               "  --json      print the cases (all, or the failing ones with --failed)\n"
                               "              as a JSON array of results.json case objects\n"
                               "  -h, --help  this text\n"
                               "\n"
                               "Exit codes: 0 no case FAILED, CRASHED or TIMEOUT (with --strict, nor\n"
                               "MARGINAL, MISTRUSTED or UNCHECKED); 1 otherwise; 2 bad usage or a file that is not\n"
                               "a readable report; 3 no pair ran (every one UNSUPPORTED or SKIPPED): not a pass.\n";

static int print_json(const qf_result *r, size_t n, int failed_only, int strict)
{
    json_t *arr = json_array();
    size_t i;
    char *s;
    if (!arr)
        return -1;
    for (i = 0; i < n; i++) {
        json_t *c = NULL;
        if (failed_only && !qf_report_is_failure(r[i].verdict, strict))
            continue;
        if (qf_report_case_to_json(&r[i], &c) != QF_OK || json_array_append_new(arr, c)) {
            json_decref(arr);
            return -1;
        }
    }
    s = _qf_json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(arr);
    if (!s)
        return -1;
    puts(s);
    free(s);
    return 0;
}

/* One line of text: a reason or reproducer with a newline or a control
 * character would break the one-block-per-case layout (and a terminal);
 * they are shown as visible escapes (_escape.h). */
static void put_line(const char *label, const char *s)
{
    fputs(label, stdout);
    _qf_esc_term(stdout, s);
    putchar('\n');
}

static void print_failed(const qf_result *r, size_t n, int strict)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++) {
        const qf_result *x = &r[i];
        if (!qf_report_is_failure(x->verdict, strict))
            continue;
        printf("%s%s ", k++ ? "\n" : "", qf_verdict_name(x->verdict));
        _qf_esc_term(stdout, x->kernel);
        putchar(' ');
        put_line("", x->case_id);
        put_line("  reason: ", x->reason[0] ? x->reason : "(none given)");
        if (x->has_metrics) {
            char e[256];
            qf_report_error_text(x, e, sizeof e);
            printf("  max error: %s, bound utilization %.4g, %zu violations\n", e, x->metrics.max_util,
                   x->metrics.n_violations);
        }
        if (x->reproducer[0])
            put_line("  reproduce: ", x->reproducer);
        else if (x->suite[0])
        {
            fputs("  reproduce: qualify run '", stdout);
            _qf_esc_term(stdout, x->suite);
            fputs("' --case '", stdout);
            _qf_esc_term(stdout, x->case_id);
            fputs("' --kernel '", stdout);
            _qf_esc_term(stdout, x->kernel);
            fputs("'\n", stdout);
        }
        if (x->nartifacts) /* --save-failing: relative to the run's output directory */
            put_line("  tensors: ", x->artifacts_dir);
        if (x->artifacts_reproducer[0])
            put_line("  reproduce from them: ", x->artifacts_reproducer);
    }
    if (!k)
        printf("no failing cases among %zu\n", n);
}

int qf_cli_show(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"failed", no_argument, NULL, 'f'},
        {"strict", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int failed_only = 0, strict = 0, json = 0, c, rc;
    const char *path;
    qf_result *r = NULL;
    qf_provenance prov;
    qf_report_options opt = {0, NULL, NULL};
    size_t n = 0;
    char err[1024] = "";
    qf_status st;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': failed_only = 1; break;
        case 's': strict = 1; break;
        case 'j': json = 1; break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        default:
            return qf_cli_usage_error("show", "unknown option '%s'; see 'qualify show --help'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return qf_cli_usage_error("show",
                                  "the report file is missing (RESULTS.json); see 'qualify show --help'");
    if (optind + 1 < argc)
        return qf_cli_usage_error("show", "one report file expected, got also '%s'", argv[optind + 1]);
    path = argv[optind];
    st = qf_report_read(path, &r, &n, &prov, err, sizeof err);
    if (st != QF_OK) {
        /* The reader's messages start with the path; make sure it is named. */
        if (!strstr(err, path))
            return qf_cli_usage_error("show", "%s: %s", path, err[0] ? err : qf_status_str(st));
        return qf_cli_usage_error("show", "%s", err);
    }
    if (err[0])
        qf_cli_error("show", "%s", err);
    opt.strict = strict;
    if (json) {
        if (print_json(r, n, failed_only, strict)) {
            fprintf(stderr, "qualify show: out of memory\n");
            free(r);
            qf_provenance_free(&prov);
            return QF_EXIT_USAGE;
        }
    } else if (failed_only) {
        print_failed(r, n, strict);
    } else if (qf_report_markdown_file(stdout, r, n, &prov, &opt) != QF_OK) {
        fprintf(stderr, "qualify show: cannot write to stdout\n");
        free(r);
        qf_provenance_free(&prov);
        return QF_EXIT_USAGE;
    }
    rc = qf_cli_nothing_ran("show", r, n, qf_report_failed(r, n, strict) ? QF_EXIT_FAIL : QF_EXIT_OK, 0);
    free(r);
    qf_provenance_free(&prov);
    return rc;
}
