/* plugin_planter.c: a kernel plugin whose one GEMM kernel computes right
 * and, on every call, plants entries in the directory $QF_PLANT_DIR (the
 * sweep's output directory; nothing when unset): a regular file `planted`,
 * FIFOs at `results.json.tmp` and `journal.jsonl.tmp` (the temporary names
 * qualify once wrote through) and a symbolic link `report.md` to
 * $QF_PLANT_VICTIM (a file outside the directory), all before qualify
 * writes its reports.  tests/security/t-files-out.c runs it: the sweep
 * must finish, write every result, leave the victim alone and name what
 * was planted (docs/security.md "Output files"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_kernel.h"

static void plant(void)
{
    const char *dir = getenv("QF_PLANT_DIR"), *victim = getenv("QF_PLANT_VICTIM");
    char path[4096];
    FILE *f;
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/planted", dir);
    if ((f = fopen(path, "a"))) {
        fputs("planted by gemm.planter\n", f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/results.json.tmp", dir);
    (void)mkfifo(path, 0600);
    snprintf(path, sizeof path, "%s/journal.jsonl.tmp", dir);
    (void)mkfifo(path, 0600);
    if (victim) {
        snprintf(path, sizeof path, "%s/report.md", dir);
        (void)unlink(path);
        (void)!symlink(victim, path);
    }
}

static qf_status planter_run(void *ctx, const qf_kernel_call *call)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const float *a = call->in[0].data, *b = call->in[1].data;
    float *d = call->out[0].data;
    size_t i, j, l, m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    (void)ctx;
    plant();
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float s = 0.0f;
            for (l = 0; l < k; l++)
                s = s + a[i * k + l] * b[l * n + j];
            d[i * n + j] = s;
        }
    return QF_OK;
}

static qf_dtype_tuple tuple;

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg,
                                                                    const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    qf_kernel kern;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    tuple = (qf_dtype_tuple){.name = "f32",
                             .in = {QF_FLOAT32, QF_FLOAT32, QF_FLOAT32},
                             .out = {QF_FLOAT32},
                             .arith = host->arith_claim_default()};
    memset(&kern, 0, sizeof kern);
    kern.abi_version = QF_KERNEL_ABI_VERSION;
    kern.struct_size = sizeof kern;
    kern.name = "gemm.planter";
    kern.op = QF_OP_GEMM;
    kern.kind = QF_KERNEL_OPTIMIZED;
    kern.description = "tests/security kernel that plants entries in the output directory";
    kern.backend = "cpu";
    kern.archs = "cpu";
    kern.dtypes = &tuple;
    kern.n_dtypes = 1;
    kern.run = planter_run;
    return host->add(reg, &kern);
}
