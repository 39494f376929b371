/* cli/shard.c: what 'qualify run' and 'qualify merge' share: the sweep's
 * identity that a shard records and a merge checks, the output directory,
 * --fail-on, and the reports of a finished set of results
 * (docs/cluster.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "qf_kernel.h"
#include "qf_report.h"
#include "qf_sha256.h"
#include "qf_version.h"

int qf_cli_mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    char *p;
    snprintf(tmp, sizeof tmp, "%s", path);
    for (p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return -1;
    return 0;
}

json_t *qf_cli_argv_json(int argc, char **argv)
{
    json_t *av = json_array();
    int i;
    for (i = 0; av && i < argc; i++)
        json_array_append_new(av, json_string(argv[i]));
    return av;
}

int qf_cli_parse_fail_on(const char *s, unsigned *mask)
{
    char buf[256], *tok, *save = NULL;
    snprintf(buf, sizeof buf, "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        qf_verdict v;
        if (qf_verdict_lookup(tok, &v) != QF_OK || (v != QF_VERDICT_MARGINAL && v != QF_VERDICT_MISTRUSTED && v != QF_VERDICT_UNCHECKED))
            return -1;
        *mask |= 1u << v;
    }
    return 0;
}

/* The registered kernels, by name and label in registration order: the
 * plan pairs cases with them in this order, so two shards whose lists
 * differ would slice different plans. */
static void kernels_hash(const struct qf_registry *reg, char hex[QF_SHA256_HEX])
{
    qf_sha256_ctx c;
    uint8_t d[QF_SHA256_BYTES];
    size_t i;
    qf_sha256_init(&c);
    for (i = 0; i < qf_registry_count(reg); i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        const char *kind = qf_kernel_kind_name(k->kind);
        qf_sha256_update(&c, k->name, strlen(k->name));
        qf_sha256_update(&c, "\t", 1);
        qf_sha256_update(&c, kind, strlen(kind));
        qf_sha256_update(&c, "\n", 1);
    }
    qf_sha256_final(&c, d);
    qf_sha256_hex(d, hex);
}

json_t *qf_cli_sweep_identity(const char *suite_path, const char *suite_name, const struct qf_registry *reg,
                              json_t *options)
{
    char suite_hex[QF_SHA256_HEX], kern_hex[QF_SHA256_HEX];
    if (qf_sha256_file(suite_path, suite_hex) != QF_OK) {
        json_decref(options);
        return NULL;
    }
    kernels_hash(reg, kern_hex);
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "suite", suite_name ? suite_name : "", "suite_sha256", suite_hex,
                     "kernels_sha256", kern_hex, "qualify_version", QF_VERSION_STRING, "options", options);
}

json_t *qf_cli_shard_identity(unsigned index, unsigned count, const char *suite_path, const char *suite_name,
                              const struct qf_registry *reg, json_t *options)
{
    json_t *sweep = qf_cli_sweep_identity(suite_path, suite_name, reg, options);
    return sweep ? json_pack("{s:I, s:I, s:o}", "index", (json_int_t)index, "count", (json_int_t)count, "sweep",
                             sweep)
                 : NULL;
}

int qf_cli_write_reports(const char *cmd, const char *outdir, const qf_result *r, size_t n,
                         const qf_provenance *prov, const char *title, unsigned fail_mask,
                         const json_t *extra)
{
    qf_report_options ropt;
    char err[1024];
    size_t i;
    memset(&ropt, 0, sizeof ropt);
    ropt.strict =
        (fail_mask & ((1u << QF_VERDICT_MARGINAL) | (1u << QF_VERDICT_MISTRUSTED) | (1u << QF_VERDICT_UNCHECKED))) != 0;
    ropt.title = title;
    ropt.extra = extra;
    if (qf_report_write_all(outdir, r, n, prov, &ropt, err, sizeof err) != QF_OK) {
        qf_cli_error(cmd, "reports: %s", err);
        return QF_EXIT_FAIL;
    }
    for (i = 0; i < n; i++)
        if (fail_mask & (1u << r[i].verdict))
            return QF_EXIT_FAIL;
    return QF_EXIT_OK;
}

int qf_cli_nothing_ran(const char *cmd, const qf_result *r, size_t n, int rc, int shard)
{
    if (qf_report_ran(r, n) || (shard && !n))
        return rc;
    if (n)
        fprintf(stderr,
                "qualify %s: nothing ran: %s%zu pair(s) UNSUPPORTED or SKIPPED (their reasons say why), so nothing "
                "was checked: not a pass%s\n",
                cmd, n > 1 ? "all " : "", n,
                shard ? " (a shard: its exit status is its pairs'; the merge judges the sweep)" : " (exit status 3)");
    else
        fprintf(stderr, "qualify %s: nothing ran: no pair at all, so nothing was checked: not a pass (exit status 3)\n",
                cmd);
    return rc == QF_EXIT_OK && !shard ? QF_EXIT_NOTHING : rc;
}
