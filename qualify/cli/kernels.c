/* cli/kernels.c: the registry a subcommand works with: the built-in
 * kernels, then those of the plugins, adapters and workers its command line
 * (and, for `qualify run`, its suite) names, each source through its one
 * loader, so every subcommand reports a bad source the same way. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "qf_adapter.h"
#include "qf_claim.h"
#include "qf_kernel.h"
#include "qf_worker.h"

int qf_cli_registry(const char *cmd, const qf_cli_sources *src, qf_registry **out)
{
    qf_registry *reg = NULL;
    char err[1024];
    size_t i;
    *out = NULL;
    if (qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK) {
        qf_cli_error(cmd, "cannot register the built-in kernels: %s", reg ? qf_registry_error(reg) : "out of memory");
        qf_registry_free(reg);
        return QF_EXIT_FAIL;
    }
    for (i = 0; i < src->nplugins; i++)
        if (qf_registry_load_plugin(reg, src->plugins[i]) != QF_OK) {
            qf_cli_error(cmd, "--plugin %s: %s", src->plugins[i], qf_registry_error(reg));
            goto bad;
        }
    for (i = 0; i < src->nadapters; i++)
        if (qf_adapter_load(reg, src->adapters[i], err, sizeof err) != QF_OK) {
            qf_cli_error(cmd, "--adapter %s: %s", src->adapters[i], err);
            goto bad;
        }
    for (i = 0; i < src->nworkers; i++)
        if (qf_worker_start(reg, src->workers[i], err, sizeof err) != QF_OK) {
            qf_cli_error(cmd, "%s", err);
            goto bad;
        }
    for (i = 0; i < src->nclaims; i++) {
        qf_claim_set set;
        size_t j;
        if (qf_claim_file_load(src->claims[i], &set, err, sizeof err) != QF_OK) {
            qf_cli_error(cmd, "--claim %s", err);
            goto bad;
        }
        for (j = 0; j < set.n; j++)
            if (!qf_claim_apply(reg, &set.claims[j], set.path) && !src->claims_partial) {
                qf_cli_error(cmd, "--claim %s:%d: kernel '%s'%s%s%s%s matches no registered kernel tuple", set.path,
                             set.claims[j].line, set.claims[j].kernel, set.claims[j].dtype[0] ? " dtype " : "",
                             set.claims[j].dtype, set.claims[j].op[0] ? " op " : "", set.claims[j].op);
                qf_claim_set_free(&set);
                goto bad;
            }
        qf_claim_set_free(&set);
    }
    *out = reg;
    return QF_EXIT_OK;
bad:
    qf_registry_free(reg);
    return QF_EXIT_USAGE;
}

/* Append " OPT 'ARG'" to cmd (a /bin/sh command line), ARG single-quoted
 * with each quote written '\\''; -1 when it does not fit. */
static int append_arg(char *cmd, size_t size, const char *opt, const char *arg)
{
    size_t n = strlen(cmd);
    const char *p;
    if (n + strlen(opt) + 4 >= size)
        return -1;
    n += (size_t)snprintf(cmd + n, size - n, " %s%s'", opt, opt[0] ? " " : "");
    for (p = arg; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t len = piece ? 4 : 1;
        if (n + len + 2 >= size)
            return -1;
        if (piece)
            memcpy(cmd + n, piece, len);
        else
            cmd[n] = *p;
        n += len;
    }
    cmd[n++] = '\'';
    cmd[n] = '\0';
    return 0;
}

int qf_cli_route_servers(const char *cmd, const qf_cli_sources *src, qf_registry *reg)
{
    char exe[PATH_MAX], line[16384] = "exec", err[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t i;
    int bad = 0;
    if (n <= 0) {
        fprintf(stderr, "qualify %s: --isolate server: cannot find this qualify executable\n", cmd);
        return QF_EXIT_FAIL;
    }
    exe[n] = '\0';
    /* exec: the server is the worker process itself, so its death by a
     * signal is reported as such, not through a shell's status. */
    bad |= append_arg(line, sizeof line, "", exe);
    strcat(line, " kernel-server");
    for (i = 0; i < src->nplugins; i++)
        bad |= append_arg(line, sizeof line, "--plugin", src->plugins[i]);
    for (i = 0; i < src->nadapters; i++)
        bad |= append_arg(line, sizeof line, "--adapter", src->adapters[i]);
    for (i = 0; i < src->nclaims; i++)
        bad |= append_arg(line, sizeof line, "--claim", src->claims[i]);
    if (bad) {
        fprintf(stderr, "qualify %s: --isolate server: the kernel server's command line is too long\n", cmd);
        return QF_EXIT_FAIL;
    }
    if (qf_worker_route(reg, line, NULL, err, sizeof err) != QF_OK) {
        qf_cli_error(cmd, "--isolate server: %s", err);
        return QF_EXIT_FAIL;
    }
    return QF_EXIT_OK;
}

int qf_cli_source_opt(const char *cmd, int c, const char *arg, qf_cli_sources *src, const char **plugins,
                      const char **adapters, const char **workers, size_t max)
{
    const char **arr = c == 'P' ? plugins : c == 'A' ? adapters : c == 'W' ? workers : NULL;
    size_t *n = c == 'P' ? &src->nplugins : c == 'A' ? &src->nadapters : &src->nworkers;
    if (!arr)
        return 0;
    if (*n >= max)
        return qf_cli_usage_error(cmd, "at most %zu --%s options", max,
                                  c == 'P' ? "plugin" : c == 'A' ? "adapter" : "worker"),
               -1;
    arr[(*n)++] = arg;
    return 1;
}
