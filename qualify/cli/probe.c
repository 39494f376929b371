/* cli/probe.c: `qualify probe KERNEL` reveals a GEMM kernel's summation
 * order and matrix-unit arithmetic by running it on designed inputs
 * (qf_probe.h, docs/probe.md), and writes what it found as a claim file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qf_kernel.h"
#include "qf_probe.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: qualify probe KERNEL [--dtype TUPLE] [--k K] [--cols N] [--threads T] [--seed S]\n"
            "                     [--timeout SECONDS] [-o claim.yaml] [--json]\n"
            "                     [--plugin LIB.so] [--adapter cblas:LIB.so] [--worker CMD]\n"
            "\n"
            "Reveal a GEMM kernel's arithmetic by numerical tests on designed inputs:\n"
            "the summation tree of a K-term dot product (FPRev), alignment, accumulator\n"
            "width and rounding, products, subnormal flushing, specials, determinism.\n"
            "The kernel runs in a child process with a time limit (docs/probe.md).\n"
            "  --dtype TUPLE   the kernel's dtype tuple (default: the widest output)\n"
            "  --k K           terms of the probed dot product (default 256)\n"
            "  --cols N        output columns probed at once, for per-column orders (default 8)\n"
            "  -o FILE         write the claim file (YAML)\n"
            "  --json          print the result as JSON instead of text\n");
}

int qf_cli_probe(int argc, char **argv)
{
    static const struct option lo[] = {{"dtype", required_argument, 0, 'd'},  {"k", required_argument, 0, 'k'},
                                       {"cols", required_argument, 0, 'c'},   {"threads", required_argument, 0, 't'},
                                       {"seed", required_argument, 0, 's'},   {"timeout", required_argument, 0, 'T'},
                                       {"json", no_argument, 0, 'j'},         {"plugin", required_argument, 0, 'P'},
                                       {"adapter", required_argument, 0, 'A'}, {"worker", required_argument, 0, 'W'},
                                       {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *plugins[16], *adapters[16], *workers[16], *out = NULL;
    qf_cli_sources src = {plugins, 0, adapters, 0, workers, 0, NULL, 0, 0};
    qf_probe_opts o = {0};
    qf_probe_result *r;
    qf_registry *reg = NULL;
    int json = 0, c, rc;
    char err[1024];
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd': o.dtype = optarg; break;
        case 'k':
            o.k = strtoul(optarg, &end, 10);
            if (!*optarg || *end || o.k < 2)
                return qf_cli_usage_error("probe", "--k %s: a whole number >= 2 is wanted", optarg);
            break;
        case 'c':
            o.cols = strtoul(optarg, &end, 10);
            if (!*optarg || *end || o.cols < 1 || o.cols > 64)
                return qf_cli_usage_error("probe", "--cols %s: 1 to 64", optarg);
            break;
        case 't': o.threads = atoi(optarg); break;
        case 's': o.seed = strtoull(optarg, NULL, 0); break;
        case 'T': o.timeout_s = strtod(optarg, NULL); break;
        case 'j': json = 1; break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return QF_EXIT_OK;
        default: {
            int h = qf_cli_source_opt("probe", c, optarg, &src, plugins, adapters, workers, 16);
            if (h < 0)
                return QF_EXIT_USAGE;
            if (h == 0) {
                usage(stderr);
                return QF_EXIT_USAGE;
            }
            break;
        }
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return QF_EXIT_USAGE;
    }
    if ((rc = qf_cli_registry("probe", &src, &reg)) != QF_EXIT_OK)
        return rc;
    r = malloc(sizeof *r);
    if (!r) {
        qf_registry_free(reg);
        return QF_EXIT_FAIL;
    }
    if (qf_probe_gemm(reg, argv[optind], &o, r, err, sizeof err) != QF_OK) {
        rc = qf_registry_find(reg, argv[optind]) ? QF_EXIT_FAIL : QF_EXIT_USAGE;
        qf_cli_error("probe", "%s: %s", argv[optind], err);
        free(r);
        qf_registry_free(reg);
        return rc;
    }
    if (json) {
        char *s = qf_probe_json(r);
        if (s)
            puts(s);
        free(s);
    } else
        qf_probe_print(stdout, r);
    rc = QF_EXIT_OK;
    if (out && qf_probe_write_claim(r, out, err, sizeof err) != QF_OK) {
        qf_cli_error("probe", "%s", err);
        rc = QF_EXIT_FAIL;
    }
    free(r);
    qf_registry_free(reg);
    return rc;
}
