/* cli/diff.c: 'qualify diff BASE.json NEW.json': pre-merge gating
 * (docs/diff.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qf_diff.h"
#include "qf_report.h"

static const char *help_text = "usage: qualify diff BASE.json NEW.json [options]\n"
                               "\n"
                               "Compare two sweeps (results.json or journals) case by case, matched by\n"
                               "architecture, kernel and case id, and print a Markdown report fit for a\n"
                               "pull-request comment: new failures, verdicts that got worse, error\n"
                               "growth, qualified shapes lost, slowdowns (when both were run with\n"
                               "--time), and verdicts that got better.\n"
                               "\n"
                               "  --ulp-factor F   error growth when NEW max ulp > F x BASE (default 2)\n"
                               "  --ulp-floor U    ... and exceeds BASE by more than U ulp (default 0.5)\n"
                               "  --slowdown S     slowdown when NEW median > BASE median x (1 + S +\n"
                               "                   the larger measured spread) (default 0.10)\n"
                               "  -h, --help       this text\n"
                               "\n"
                               "Exit codes: 0 nothing regressed; 1 something regressed; 2 bad usage, or\n"
                               "a file that is unreadable, corrupt or not a report (named).\n";

static int positive(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return *end || !isfinite(*v) || *v < 0 ? -1 : 0;
}

int qf_cli_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"ulp-factor", required_argument, NULL, 'u'},
        {"ulp-floor", required_argument, NULL, 'l'},
        {"slowdown", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qf_diff_options o = qf_diff_options_default();
    qf_result *r[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    qf_diff_counts counts;
    char err[2048] = "";
    int c, k;
    qf_status st;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'u':
            if (positive(optarg, &o.ulp_factor) || o.ulp_factor < 1)
                return qf_cli_usage_error("diff", "--ulp-factor: a number >= 1 expected, got '%s'", optarg);
            break;
        case 'l':
            if (positive(optarg, &o.ulp_floor))
                return qf_cli_usage_error("diff", "--ulp-floor: a number >= 0 expected, got '%s'", optarg);
            break;
        case 's':
            if (positive(optarg, &o.slow_factor))
                return qf_cli_usage_error("diff", "--slowdown: a number >= 0 expected, got '%s'", optarg);
            break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        case ':': return qf_cli_usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
        default:
            return qf_cli_usage_error("diff", "unknown option '%s'; see 'qualify diff --help'",
                                      argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return qf_cli_usage_error("diff",
                                  "two reports expected (BASE.json NEW.json); see 'qualify diff --help'");
    for (k = 0; k < 2; k++) {
        const char *path = argv[optind + k];
        st = qf_report_read(path, &r[k], &n[k], NULL, err, sizeof err);
        if (st != QF_OK) {
            free(r[0]);
            if (!strstr(err, path))
                return qf_cli_usage_error("diff", "%s: %s", path, err[0] ? err : qf_status_str(st));
            return qf_cli_usage_error("diff", "%s", err);
        }
        if (err[0])
            qf_cli_error("diff", "%s", err);
        for (size_t i = 0; i < n[k]; i++)
            if (!r[k][i].kernel[0] || !r[k][i].op[0]) {
                /* Matching is by kernel; a case without one would be
                 * reported as lost or new for no reason. */
                int rc = qf_cli_usage_error("diff", "%s: case %zu (%s): no '%s'", path, i,
                                            r[k][i].case_id[0] ? r[k][i].case_id : "no case_id",
                                            r[k][i].kernel[0] ? "op" : "kernel");
                free(r[0]);
                free(r[1]);
                return rc;
            }
    }
    st = qf_diff_markdown(stdout, r[0], n[0], r[1], n[1], argv[optind], argv[optind + 1], &o, &counts);
    free(r[0]);
    free(r[1]);
    if (st != QF_OK)
        return qf_cli_usage_error("diff", "%s", qf_status_str(st));
    return counts.regressions ? QF_EXIT_FAIL : QF_EXIT_OK;
}
