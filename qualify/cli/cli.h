/* cli.h: the subcommands of the qualify CLI (not installed).
 * Each returns the process exit code documented in docs/cli.md. */
#ifndef QF_CLI_H
#define QF_CLI_H

#include <stdio.h>

enum { QF_EXIT_OK = 0, QF_EXIT_FAIL = 1, QF_EXIT_USAGE = 2 };

int qf_cli_formats(int argc, char **argv);
int qf_cli_ref(int argc, char **argv);
int qf_cli_list(int argc, char **argv);
int qf_cli_run(int argc, char **argv);
int qf_cli_show(int argc, char **argv);
int qf_cli_enable(int argc, char **argv);
int qf_cli_guard(int argc, char **argv);
int qf_cli_diff(int argc, char **argv);
int qf_cli_audit(int argc, char **argv);
int qf_cli_workload(int argc, char **argv);
int qf_cli_report(int argc, char **argv);

/* Print "qualify CMD: message" to stderr; returns QF_EXIT_USAGE. */
int qf_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
