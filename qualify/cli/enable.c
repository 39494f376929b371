/* cli/enable.c: 'qualify enable RESULTS.json... -o DIR': enablement tables
 * per architecture (docs/enable.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "qf_enable.h"
#include "qf_report.h"

static const char *help_text =
    "usage: qualify enable RESULTS.json... -o DIR [--name IDENT]\n"
    "\n"
    "Merge the results of one or more sweeps (results.json or journals, of\n"
    "any architectures: cpu, sm_90, gfx942, or simulated sim:sm_90 ...) into\n"
    "per-architecture enablement tables: per kernel and dtype tuple the\n"
    "qualified region (intervals per dimension with an alignment class,\n"
    "spanning swept points only), the failed regions with their reasons, and\n"
    "the swept values.  Writes into DIR (created if missing):\n"
    "  enable.md            one table per architecture, for people\n"
    "  enable.json          for programs and the guard (qf_guard_open_json)\n"
    "  IDENT.h, IDENT.c     the table as constant data (qf_guard_table IDENT)\n"
    "\n"
    "  -o, --output DIR     output directory (required)\n"
    "  --name IDENT         C name of the compiled-in table (default qf_enable_table)\n"
    "  -h, --help           this text\n"
    "\n"
    "The region rule: docs/enable.md.  Exit codes: 0 tables written (failed\n"
    "regions are data, not an error); 2 bad usage, or a results file that is\n"
    "unreadable or not a report (named in the message).\n";

int qf_cli_enable(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"name", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *name = "qf_enable_table";
    qf_enable_table t;
    char err[2048] = "", path[4096];
    int c, i;
    qf_status st;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': name = optarg; break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        case ':': return qf_cli_usage_error("enable", "option '%s' needs a value", argv[optind - 1]);
        default:
            return qf_cli_usage_error("enable", "unknown option '%s'; see 'qualify enable --help'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return qf_cli_usage_error("enable", "no results file given; see 'qualify enable --help'");
    if (!out)
        return qf_cli_usage_error("enable", "the output directory is missing (-o DIR)");
    if (qf_enable_c_name_check(name, err, sizeof err) != QF_OK)
        return qf_cli_usage_error("enable", "--name: %s", err); /* before anything is written */
    qf_enable_init(&t);
    for (i = optind; i < argc; i++) {
        qf_result *r = NULL;
        size_t n = 0;
        qf_provenance prov;
        st = qf_report_read(argv[i], &r, &n, &prov, err, sizeof err);
        if (st != QF_OK) {
            qf_enable_free(&t);
            if (!strstr(err, argv[i]))
                return qf_cli_usage_error("enable", "%s: %s", argv[i], err[0] ? err : qf_status_str(st));
            return qf_cli_usage_error("enable", "%s", err);
        }
        if (err[0])
            qf_cli_error("enable", "%s", err);
        st = qf_enable_add(&t, r, n, &prov, argv[i], err, sizeof err);
        free(r);
        qf_provenance_free(&prov);
        if (st != QF_OK) {
            qf_enable_free(&t);
            return qf_cli_usage_error("enable", "%s", err[0] ? err : qf_status_str(st));
        }
    }
    if (mkdir(out, 0755) && errno != EEXIST) {
        qf_enable_free(&t);
        return qf_cli_usage_error("enable", "%s: cannot create the directory: %s", out, strerror(errno));
    }
    st = qf_enable_finish(&t);
    if (st == QF_OK) {
        snprintf(path, sizeof path, "%s/enable.md", out);
        st = qf_enable_write_markdown(&t, path, err, sizeof err);
    }
    if (st == QF_OK) {
        snprintf(path, sizeof path, "%s/enable.json", out);
        st = qf_enable_write_json(&t, path, err, sizeof err);
    }
    if (st == QF_OK)
        st = qf_enable_write_c(&t, out, name, err, sizeof err);
    if (st != QF_OK) {
        qf_enable_free(&t);
        return qf_cli_usage_error("enable", "%s", err[0] ? err : qf_status_str(st));
    }
    printf("%zu architecture%s, %zu entries (kernel, op, dtype, parameters): %s/enable.md, %s/enable.json, %s/%s.{h,c}\n",
           t.narchs, t.narchs == 1 ? "" : "s", t.nentries, out, out, out, name);
    qf_enable_free(&t);
    return QF_EXIT_OK;
}
