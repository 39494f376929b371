/* cli/kernels.c: the registry a subcommand works with: the built-in
 * kernels, then those of the plugins, adapters and workers its command line
 * (and, for `qualify run`, its suite) names, each source through its one
 * loader, so every subcommand reports a bad source the same way. */
#include <stdio.h>

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
        fprintf(stderr, "qualify %s: cannot register the built-in kernels: %s\n", cmd,
                reg ? qf_registry_error(reg) : "out of memory");
        qf_registry_free(reg);
        return QF_EXIT_FAIL;
    }
    for (i = 0; i < src->nplugins; i++)
        if (qf_registry_load_plugin(reg, src->plugins[i]) != QF_OK) {
            fprintf(stderr, "qualify %s: --plugin %s: %s\n", cmd, src->plugins[i], qf_registry_error(reg));
            goto bad;
        }
    for (i = 0; i < src->nadapters; i++)
        if (qf_adapter_load(reg, src->adapters[i], err, sizeof err) != QF_OK) {
            fprintf(stderr, "qualify %s: --adapter %s: %s\n", cmd, src->adapters[i], err);
            goto bad;
        }
    for (i = 0; i < src->nworkers; i++)
        if (qf_worker_start(reg, src->workers[i], err, sizeof err) != QF_OK) {
            fprintf(stderr, "qualify %s: %s\n", cmd, err);
            goto bad;
        }
    for (i = 0; i < src->nclaims; i++) {
        qf_claim_set set;
        size_t j;
        if (qf_claim_file_load(src->claims[i], &set, err, sizeof err) != QF_OK) {
            fprintf(stderr, "qualify %s: --claim %s\n", cmd, err);
            goto bad;
        }
        for (j = 0; j < set.n; j++)
            if (!qf_registry_set_claim(reg, set.claims[j].kernel, set.claims[j].dtype, &set.claims[j].arith,
                                       set.path)) {
                fprintf(stderr, "qualify %s: --claim %s:%d: kernel '%s'%s%s matches no registered kernel tuple\n",
                        cmd, set.path, set.claims[j].line, set.claims[j].kernel, set.claims[j].dtype[0] ? " dtype " : "",
                        set.claims[j].dtype);
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
