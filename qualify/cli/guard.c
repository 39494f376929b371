/* cli/guard.c: 'qualify guard TABLE.json ...': ask the guard library
 * from the shell (docs/guards.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "cli.h"
#include "qf_guard.h"

static const char *help_text = "usage: qualify guard TABLE.json --kernel K [--kernel K2 ...] --dtype T\n"
                               "                     --shape M=16,N=4096,K=128 [--param NAME=VALUE ...]\n"
                               "                     [--arch A] [--fallback F]\n"
                               "\n"
                               "Ask an enablement table (enable.json from 'qualify enable') whether a\n"
                               "kernel may run for a dtype tuple, op parameters and shape, with the reason.  With one\n"
                               "--kernel and no --fallback: one decision.  With several kernels or a\n"
                               "--fallback: the first allowed kernel in the order given, else the fallback.\n"
                               "\n"
                               "  --arch A        architecture (default: QF_GUARD_ARCH, else detected:\n"
                               "                  cpu, sm_XY, gfxNNN); sim:sm_90 for a simulated one\n"
                               "  --kernel K      kernel name (repeatable: the priority list)\n"
                               "  --dtype T       dtype tuple label as in the results (bf16.bf16.f32.bf16)\n"
                               "  --shape S       NAME=VALUE,... for the kernel's dimensions\n"
                               "  --param P       NAME=VALUE of an op parameter (repeatable, or several\n"
                               "                  comma-separated: fn=relu, alpha=2,beta=1); a parameter\n"
                               "                  left out is taken at its default\n"
                               "  --fallback F    kernel to use when none is allowed\n"
                               "  --detect        print the detected architecture and CPU identity, exit\n"
                               "  -h, --help      this text\n"
                               "\n"
                               "QF_GUARD_FORCE=off|NAME and QF_GUARD_LOG=1 apply as in the library.\n"
                               "Output: 'allowed KERNEL (ANSWER): REASON' or 'denied ...' per decision;\n"
                               "with a priority list, 'selected KERNEL' last.\n"
                               "Exit codes: 0 allowed (or a kernel of the list selected); 1 denied (or\n"
                               "the fallback selected); 2 bad usage or an unreadable or malformed table.\n";

#define MAX_KERNELS 32

/* One decision line; the kernel name and the table's reason are text, never
 * terminal controls (a table can come from anywhere: _escape.h). */
static void say(int allowed, const char *kernel, const qf_guard *g, const qf_guard_decision *d)
{
    fputs(allowed ? "allowed " : "denied ", stdout);
    _qf_esc_term(stdout, kernel);
    fputs(" on ", stdout);
    _qf_esc_term(stdout, qf_guard_arch(g));
    printf(" (%s): ", qf_guard_answer_name(d->answer));
    _qf_esc_term(stdout, d->reason);
    putchar('\n');
}

int qf_cli_guard(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"arch", required_argument, NULL, 'a'},     {"kernel", required_argument, NULL, 'k'},
        {"dtype", required_argument, NULL, 't'},    {"shape", required_argument, NULL, 's'},
        {"fallback", required_argument, NULL, 'f'}, {"detect", no_argument, NULL, 'd'},
        {"param", required_argument, NULL, 'p'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *arch = NULL, *dtype = NULL, *fallback = NULL, *kernels[MAX_KERNELS], *chosen;
    char *shape_text = NULL, err[2048], params[1024] = "";
    size_t plen = 0;
    size_t nk = 0, i;
    qf_guard_shape shape;
    qf_guard *g;
    qf_guard_decision d;
    int c, allowed, detect = 0;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': arch = optarg; break;
        case 'k':
            if (nk == MAX_KERNELS)
                return qf_cli_usage_error("guard", "at most %d kernels", MAX_KERNELS);
            kernels[nk++] = optarg;
            break;
        case 't': dtype = optarg; break;
        case 's': shape_text = optarg; break;
        case 'p': {
            /* Joined as the library reads them: NAME=VALUE,NAME=VALUE. */
            int w = snprintf(params + plen, sizeof params - plen, "%s%s", plen ? "," : "", optarg);
            if (!strchr(optarg, '=') || w < 0 || (size_t)w >= sizeof params - plen)
                return qf_cli_usage_error("guard", "--param: expected NAME=VALUE, got '%s'", optarg);
            plen += (size_t)w;
            break;
        }
        case 'f': fallback = optarg; break;
        case 'd': detect = 1; break;
        case 'h': fputs(help_text, stdout); return QF_EXIT_OK;
        case ':': return qf_cli_usage_error("guard", "option '%s' needs a value", argv[optind - 1]);
        default:
            return qf_cli_usage_error("guard", "unknown option '%s'; see 'qualify guard --help'",
                                      argv[optind - 1]);
        }
    }
    if (detect) {
        /* What this machine is, as the guard sees it. */
        char a[64], v[64], m[256], isa[1024];
        qf_guard_detect_arch(a, sizeof a);
        qf_guard_cpu_identity(v, sizeof v, m, sizeof m, isa, sizeof isa);
        printf("arch: %s\ncpu: %s, %s\nisa: %s\n", a, v, m, isa);
        return QF_EXIT_OK;
    }
    if (optind >= argc)
        return qf_cli_usage_error("guard", "the table is missing (enable.json); see 'qualify guard --help'");
    if (optind + 1 < argc)
        return qf_cli_usage_error("guard", "one table expected, got also '%s'", argv[optind + 1]);
    if (!nk || !dtype || !shape_text)
        return qf_cli_usage_error("guard", "--kernel, --dtype and --shape are required");
    if (qf_guard_shape_parse(shape_text, &shape))
        return qf_cli_usage_error("guard",
                                  "--shape: expected NAME=VALUE,... with unsigned integers, each NAME once");
    if (qf_guard_open_json(argv[optind], &g, err, sizeof err))
        return qf_cli_usage_error("guard", "%s", err);
    if (arch)
        qf_guard_set_arch(g, arch);
    if (nk == 1 && !fallback) {
        allowed = qf_guard_may_run_params(g, kernels[0], dtype, params, &shape, &d);
        say(allowed, kernels[0], g, &d);
        qf_guard_close(g);
        return allowed ? QF_EXIT_OK : QF_EXIT_FAIL;
    }
    /* The priority list as qf_guard_select walks it, each decision shown;
     * a forced kernel (QF_GUARD_FORCE=NAME) is the library's to choose. */
    chosen = NULL;
    {
        const char *force = getenv("QF_GUARD_FORCE");
        if (force && *force && strcmp(force, "off"))
            chosen = qf_guard_select_params(g, kernels, nk, fallback, dtype, params, &shape, &d);
    }
    for (i = 0; i < nk && !chosen; i++) {
        int ok = qf_guard_may_run_params(g, kernels[i], dtype, params, &shape, &d);
        say(ok, kernels[i], g, &d);
        if (ok)
            chosen = kernels[i];
    }
    if (!chosen)
        chosen = fallback;
    allowed = 0;
    for (i = 0; i < nk; i++)
        if (chosen && !strcmp(chosen, kernels[i]))
            allowed = 1;
    if (d.answer == QF_GUARD_FORCED || d.answer == QF_GUARD_NOT_FORCED)
        allowed = 1;
    fputs("selected ", stdout);
    _qf_esc_term(stdout, chosen ? chosen : "(none)");
    printf("%s\n",
           d.answer == QF_GUARD_FORCED || d.answer == QF_GUARD_NOT_FORCED ? " (QF_GUARD_FORCE)"
           : allowed                                                      ? ""
                                                                          : " (fallback)");
    qf_guard_close(g);
    return allowed ? QF_EXIT_OK : QF_EXIT_FAIL;
}
