/* cli/sandbox.c: --require-sandbox, the warning when kernel processes run
 * less than fully confined, and the provenance's "sandbox" entries
 * (docs/security.md "The sandbox"). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_isolate.h"
#include "_runner_device.h"
#include "_sandbox.h"
#include "_worker.h"
#include "cli.h"
#include "qf_provenance.h"
#include "qf_result.h"
#include "qf_worker.h"

int qf_cli_sandbox_check(const char *cmd, int quiet)
{
    char why[512] = "";
    if (_qf_sbx_probe(why, sizeof why)) {
        fprintf(stderr, "qualify %s: %s\n", cmd, why);
        return QF_EXIT_USAGE;
    }
    if (!quiet && _qf_sbx_mode() == QF_SANDBOX_AUTO && !_qf_sbx_complete(QF_SBX_CHILD, 0, 1)) {
        _qf_sbx_describe(QF_SBX_CHILD, 0, 1, why, sizeof why);
        fprintf(stderr,
                "qualify %s: warning: kernel processes are not fully confined on this machine (%s); "
                "--require-sandbox refuses such a run (docs/security.md)\n",
                cmd, why);
    }
    return QF_EXIT_OK;
}

/* What confined the processes of kernel k in this run. */
static void describe(const qf_kernel *k, char *buf, size_t size)
{
    qf_sbx_kind kind = QF_SBX_CHILD;
    int device = _qf_rdev_is_device(k);
    if (qf_worker_kernel_is(k)) {
        kind = _qf_worker_routed(k) != k ? QF_SBX_SERVER : QF_SBX_WORKER;
        if (kind == QF_SBX_SERVER) {
            const char *d = getenv("QUALIFY_SERVER_DEVICE");
            device = !(d && !strcmp(d, "0"));
        }
    }
    _qf_sbx_describe(kind, device, _qf_iso_memory_limit(device) != 0, buf, size);
    if (kind == QF_SBX_SERVER)
        snprintf(buf + strlen(buf), size > strlen(buf) ? size - strlen(buf) : 0, " (kernel server)");
    else if (kind == QF_SBX_WORKER)
        snprintf(buf + strlen(buf), size > strlen(buf) ? size - strlen(buf) : 0, " (worker)");
}

void qf_cli_sandbox_provenance(const qf_registry *reg, const qf_result *r, size_t n, qf_provenance *prov)
{
    size_t i;
    char how[QF_PROV_LONG];
    for (i = 0; i < n; i++) {
        const qf_kernel *k = qf_registry_find(reg, r[i].kernel);
        if (!k || (i && !strcmp(r[i - 1].kernel, r[i].kernel)))
            continue;
        describe(k, how, sizeof how);
        if (qf_provenance_add_sandbox(prov, how, r[i].kernel) != QF_OK)
            break;
    }
}

/* Is b a or under a (resolved paths)? */
static int under(const char *a, const char *b)
{
    size_t n = strlen(a);
    return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/' || (n == 1 && a[0] == '/'));
}

int qf_cli_sandbox_outdir(const char *cmd, const char *outdir)
{
    char out[PATH_MAX];
    const char *w;
    size_t i;
    if (!realpath(outdir, out))
        return QF_EXIT_OK; /* its own error comes when it is written */
    for (i = 0; (w = _qf_sbx_writable(i)); i++)
        if (under(w, out) || under(out, w)) {
            fprintf(stderr,
                    "qualify %s: --kernel-writable %s: kernel processes may write there, and it %s the output "
                    "directory %s\n",
                    cmd, w, under(w, out) ? "holds" : "lies in", out);
            return QF_EXIT_USAGE;
        }
    return QF_EXIT_OK;
}

int qf_cli_sandbox_hide(const char *cmd, const char *outdir, const char *const *files, size_t n)
{
    size_t i;
    if (_qf_sbx_mode() == QF_SANDBOX_OFF)
        return QF_EXIT_OK;
    if (qf_cli_mkdir_p(outdir)) {
        fprintf(stderr, "qualify %s: cannot create the output directory %s: %s\n", cmd, outdir, strerror(errno));
        return QF_EXIT_USAGE;
    }
    if (_qf_sbx_hide(outdir)) {
        fprintf(stderr, "qualify %s: cannot hide the output directory %s from kernels: %s\n", cmd, outdir,
                strerror(errno));
        return QF_EXIT_USAGE;
    }
    for (i = 0; i < n; i++)
        if (files[i])
            (void)_qf_sbx_hide(files[i]); /* a relative include the suite resolves itself: best effort */
    return QF_EXIT_OK;
}
