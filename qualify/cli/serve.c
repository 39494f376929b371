/* cli/serve.c: 'qualify kernel-server', the process behind `qualify run
 * --isolate server` (not listed in `qualify --help`: the runner starts it).
 * It builds the registry from the same sources as the run (built-ins,
 * --plugin, --adapter, --claim) and serves it over the kernel-worker
 * protocol on its standard input and output (qf_kernel_serve,
 * docs/workers.md "Kernel servers"). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>

#include "cli.h"
#include "qf_kernel.h"
#include "qf_worker.h"

#define SOURCES_MAX 64

int qf_cli_kernel_server(int argc, char **argv)
{
    static const struct option longopts[] = {{"plugin", required_argument, NULL, 'p'},
                                             {"adapter", required_argument, NULL, 'a'},
                                             {"claim", required_argument, NULL, 'c'},
                                             {"name", required_argument, NULL, 'n'},
                                             {NULL, 0, NULL, 0}};
    const char *plugins[SOURCES_MAX], *adapters[SOURCES_MAX], *claims[SOURCES_MAX], *name = "kernel-server";
    qf_cli_sources src;
    qf_registry *reg = NULL;
    int c, rc, in, out, nul;
    memset(&src, 0, sizeof src);
    src.plugins = plugins;
    src.adapters = adapters;
    src.claims = claims;
    /* First of all: exec made this process dumpable again, and a kernel
     * in another server of the same user could otherwise ptrace it or
     * write its /proc/PID/mem (docs/security.md). */
#ifdef PR_SET_DUMPABLE
    prctl(PR_SET_DUMPABLE, 0);
#endif
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char **list = c == 'p' ? plugins : c == 'a' ? adapters : claims;
        size_t *n = c == 'p' ? &src.nplugins : c == 'a' ? &src.nadapters : &src.nclaims;
        if (c == 'n') {
            name = optarg;
            continue;
        }
        if (c == '?' || c == ':')
            return qf_cli_usage_error("kernel-server", "unknown option or missing value: %s", argv[optind - 1]);
        if (*n == SOURCES_MAX)
            return qf_cli_usage_error("kernel-server", "at most %d sources of a kind", SOURCES_MAX);
        list[(*n)++] = optarg;
    }
    /* The run hands on every claim file, some of whose claims may name its
     * workers' kernels: those are not this server's to apply (the run
     * applied them, and refused a claim that names no kernel at all). */
    src.claims_partial = 1;
    if ((rc = qf_cli_registry("kernel-server", &src, &reg)) != QF_EXIT_OK)
        return rc;
    /* The protocol keeps the descriptors it came on; a kernel that prints
     * to standard output then writes to standard error (relayed by the
     * host with the server's name) instead of into the protocol. */
    fflush(stdout);
    in = dup(0);
    out = dup(1);
    nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || out < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(2, 1) < 0) {
        perror("qualify kernel-server");
        qf_registry_free(reg);
        return QF_EXIT_FAIL;
    }
    close(nul);
    fcntl(in, F_SETFD, FD_CLOEXEC);
    fcntl(out, F_SETFD, FD_CLOEXEC);
    rc = qf_kernel_serve(reg, name, in, out);
    qf_registry_free(reg);
    return rc ? QF_EXIT_FAIL : QF_EXIT_OK;
}
