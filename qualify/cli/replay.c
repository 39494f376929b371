/* cli/replay.c: `qualify replay KERNEL --claim FILE` computes the kernel's
 * expected output bit for bit from a claim (qf_probe_from_claim) and
 * compares it with the kernel's on fresh random inputs and on the probe's
 * designed inputs (qf_probe_replay_check, docs/probe.md "Replay"). */
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qf_claim.h"
#include "qf_kernel.h"
#include "qf_probe.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: qualify replay KERNEL --claim FILE [--shape M,N,K] [--seed S] [--n CASES] [--dtype TUPLE]\n"
                 "                      [--plugin LIB.so] [--adapter cblas:LIB.so] [--worker CMD]\n"
                 "\n"
                 "Replay a GEMM kernel's claim bit for bit on the CPU and compare it with the kernel:\n"
                 "QUALIFIED (bit-exact) or FAILED with the first differing element.  Shapes: --shape,\n"
                 "else every shape of the claim's replay order_map, else 32,8,256.\n");
}

int qf_cli_replay(int argc, char **argv)
{
    static const struct option lo[] = {{"claim", required_argument, 0, 'C'},  {"shape", required_argument, 0, 'S'},
                                       {"seed", required_argument, 0, 's'},   {"n", required_argument, 0, 'n'},
                                       {"dtype", required_argument, 0, 'd'},  {"plugin", required_argument, 0, 'P'},
                                       {"adapter", required_argument, 0, 'A'}, {"worker", required_argument, 0, 'W'},
                                       {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *plugins[16], *adapters[16], *workers[16], *file = NULL, *dtype = NULL;
    qf_cli_sources src = {plugins, 0, adapters, 0, workers, 0, NULL, 0, 0};
    size_t shapes[QF_PROBE_MAX_SHAPES][3], nsh = 0, cases = 4;
    unsigned long long seed = 20261129ull;
    qf_claim_set set;
    const qf_claim *cl = NULL;
    qf_probe_result *r;
    qf_registry *reg = NULL;
    int c, rc = QF_EXIT_OK, failed = 0;
    char err[1024];
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'C': file = optarg; break;
        case 'S':
            if (sscanf(optarg, "%zu,%zu,%zu", &shapes[0][0], &shapes[0][1], &shapes[0][2]) != 3 || !shapes[0][0] ||
                !shapes[0][1] || shapes[0][2] < 2 || shapes[0][2] > 4096 || shapes[0][0] * shapes[0][1] > 1 << 20)
                return qf_cli_usage_error("replay", "--shape %s: M,N,K with M, N >= 1 and 2 <= K <= 4096", optarg);
            nsh = 1;
            break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'n':
            cases = strtoul(optarg, NULL, 10);
            if (!cases)
                return qf_cli_usage_error("replay", "--n %s: at least 1 case", optarg);
            break;
        case 'd': dtype = optarg; break;
        case 'h': usage(stdout); return QF_EXIT_OK;
        default: {
            int h = qf_cli_source_opt("replay", c, optarg, &src, plugins, adapters, workers, 16);
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
    if (optind != argc - 1 || !file) {
        usage(stderr);
        return QF_EXIT_USAGE;
    }
    if (qf_claim_file_load(file, &set, err, sizeof err) != QF_OK) {
        qf_cli_error("replay", "%s", err);
        return QF_EXIT_USAGE;
    }
    for (size_t i = 0; i < set.n && !cl; i++)
        if (!fnmatch(set.claims[i].kernel, argv[optind], 0) &&
            (!dtype || !set.claims[i].dtype[0] || !fnmatch(set.claims[i].dtype, dtype, 0)))
            cl = &set.claims[i];
    r = malloc(sizeof *r);
    if (!cl || !r) {
        if (!cl)
            fprintf(stderr, "qualify replay: %s: no claim in %s names this kernel\n", argv[optind], file);
        free(r);
        qf_claim_set_free(&set);
        return cl ? QF_EXIT_FAIL : QF_EXIT_USAGE;
    }
    if (qf_probe_from_claim(cl, r, err, sizeof err) != QF_OK) {
        qf_cli_error("replay", "%s: %s", file, err);
        free(r);
        qf_claim_set_free(&set);
        return QF_EXIT_USAGE;
    }
    if (!dtype && cl->dtype[0] && !strpbrk(cl->dtype, "*?["))
        dtype = cl->dtype;
    if (!nsh)
        for (size_t i = 0; i < r->n_shapes && nsh < QF_PROBE_MAX_SHAPES; i++, nsh++)
            shapes[nsh][0] = r->shapes[i].m, shapes[nsh][1] = r->shapes[i].n, shapes[nsh][2] = r->shapes[i].k;
    if (!nsh)
        shapes[0][0] = 32, shapes[0][1] = 8, shapes[0][2] = 256, nsh = 1;
    if ((rc = qf_cli_registry("replay", &src, &reg)) != QF_EXIT_OK) {
        free(r);
        qf_claim_set_free(&set);
        return rc;
    }
    printf("replay %s, claim %s (order %s), seed %llu, %zu random case(s) per shape\n", argv[optind], file,
           r->varies ? "varies" : r->order.text, seed, cases);
    for (size_t i = 0; i < nsh && rc == QF_EXIT_OK; i++) {
        qf_probe_replay_report rep;
        if (qf_probe_replay_check(reg, argv[optind], dtype, r, shapes[i][0], shapes[i][1], shapes[i][2], seed, cases,
                                  &rep, err, sizeof err) != QF_OK) {
            qf_cli_error("replay", "%s: %s", argv[optind], err);
            rc = qf_registry_find(reg, argv[optind]) ? QF_EXIT_FAIL : QF_EXIT_USAGE;
            break;
        }
        if (rep.failed) {
            printf("  %zu x %zu x %zu: FAILED: %zu of %zu elements differ; first: %s\n", shapes[i][0], shapes[i][1],
                   shapes[i][2], rep.failed, rep.checked, rep.first);
            failed = 1;
        } else
            printf("  %zu x %zu x %zu: QUALIFIED (bit-exact): %zu of %zu elements%s\n", shapes[i][0], shapes[i][1],
                   shapes[i][2], rep.checked, rep.checked,
                   rep.any_of ? " (no order_map for this shape: each element matched one order of the set)" : "");
    }
    if (rc == QF_EXIT_OK) {
        printf("%s\n", failed ? "FAILED" : "QUALIFIED");
        rc = failed ? QF_EXIT_FAIL : QF_EXIT_OK;
    }
    free(r);
    qf_registry_free(reg);
    qf_claim_set_free(&set);
    return rc;
}
