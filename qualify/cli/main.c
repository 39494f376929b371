/* main.c: the qualify command line; dispatches to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "_escape.h"
#include "cli.h"
#include "qf_version.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

/* clang-format off */
static const subcommand commands[] = {
    { "formats", qf_cli_formats, "number formats: table, JSON, code dumps, encoding" },
    { "ref",     qf_cli_ref,     "exact or correctly rounded references from .npy files" },
    { "list",    qf_cli_list,    "registered kernels, ops and formats (text or JSON)" },
    { "run",     qf_cli_run,     "sweep a suite: isolated runs, journal, verdicts, reports" },
    { "merge",   qf_cli_merge,   "join the shards of one sweep (run --shard I/N) into one result" },
    { "show",    qf_cli_show,    "print a report (results.json): summary, failures, provenance" },
    { "enable",  qf_cli_enable,  "enablement tables per architecture from results (md, json, C)" },
    { "guard",   qf_cli_guard,   "ask an enablement table whether a kernel may run for a shape" },
    { "diff",    qf_cli_diff,    "compare two sweeps for pre-merge gating (exit 1 on regression)" },
    { "audit",   qf_cli_audit,   "quantization error of .npy/.safetensors tensors per scheme" },
    { "workload", qf_cli_workload, "transformer forward from kernels vs the exact path: KL, top-1" },
    { "report",  qf_cli_report,  "one self-contained HTML page with plots from results/audit JSON" },
    { "probe",   qf_cli_probe,   "reveal a GEMM kernel's summation order and arithmetic by designed inputs" },
    { "replay",  qf_cli_replay,  "replay a GEMM kernel's claim bit for bit and compare it with the kernel" },
    { "slurm",   qf_cli_slurm,   "a sharded sweep as a Slurm job array plus a merge job" },
    /* Hidden (no summary): started by `qualify run --isolate server`. */
    { "kernel-server", qf_cli_kernel_server, NULL },
};
/* clang-format on */

#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* "qualify CMD: MESSAGE" on stderr, the message escaped for a terminal:
 * it may quote a suite, claim file, kernel or worker (_escape.h). */
static void vsay(const char *cmd, const char *fmt, va_list ap)
{
    char msg[8192];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "qualify %s: ", cmd);
    _qf_esc_term(stderr, msg);
    fputc('\n', stderr);
}

void qf_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(cmd, fmt, ap);
    va_end(ap);
}

int qf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(cmd, fmt, ap);
    va_end(ap);
    return QF_EXIT_USAGE;
}

static void usage(FILE *out)
{
    size_t i;
    fprintf(out,
            "usage: qualify [--help] [--version] <command> [options]\n"
            "\n"
            "Numerical qualification of accelerator kernels against exact references.\n"
            "\n"
            "commands:\n");
    for (i = 0; i < N_COMMANDS; i++)
        if (commands[i].summary)
            fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "Run 'qualify <command> --help' for the options of a command.\n"
            "Exit codes: 0 success, 1 numerical failure, 2 bad usage or bad input,\n"
            "3 nothing ran (every pair UNSUPPORTED or SKIPPED: not a pass) (docs/cli.md).\n");
}

int main(int argc, char **argv)
{
    size_t i;
    if (argc < 2) {
        usage(stderr);
        return QF_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return QF_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("qualify %s\n", QF_VERSION_STRING);
        return QF_EXIT_OK;
    }
    for (i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "qualify: unknown command '%s'; valid commands:", argv[1]);
    for (i = 0; i < N_COMMANDS; i++)
        if (commands[i].summary)
            fprintf(stderr, " %s", commands[i].name);
    fputc('\n', stderr);
    return QF_EXIT_USAGE;
}
