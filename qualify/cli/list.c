/* cli/list.c: 'qualify list kernels|ops|formats': what is registered. */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "_json.h"
#include "_runner_device.h"
#include "cli.h"
#include "qf_claim.h"
#include "qf_suite.h"
#include "qf_format.h"
#include "qf_kernel.h"

static const char *help_text =
    "usage: qualify list kernels [--json] [--plugin PATH]... [--adapter SPEC]... [--worker CMD]... [--claim FILE]...\n"
    "                            [--kind KIND] [--op OP] [--status] [GLOB]\n"
    "       qualify list ops [--json]\n"
    "       qualify list formats [--json]\n"
    "\n"
    "List the registered kernels (built-in, and those of the plugins named),\n"
    "the ops a kernel can compute, or the number formats.\n"
    "\n"
    "  --json          print a JSON array instead of a table\n"
    "  --plugin PATH   load the kernels of a plugin shared object (repeatable;\n"
    "                  a PATH without '/' is taken in the current directory)\n"
    "  --adapter SPEC  list the kernels of a standard-signature library too\n"
    "                  (cblas:LIB.so[:symbol]; repeatable; docs/third-party.md)\n"
    "  --worker CMD    start the kernel worker CMD (/bin/sh -c) and list its\n"
    "                  kernels too (repeatable; docs/workers.md)\n"
    "  --claim FILE    show the claims of a claim file in place of the kernels'\n"
    "                  (repeatable; docs/claims.md)\n"
    "  --kind KIND     only kernels of this kind: reference, optimized, model,\n"
    "                  known-bad\n"
    "  --op OP         only kernels of this op (see 'qualify list ops')\n"
    "  --status        whether each kernel can run on this machine: GPU\n"
    "                  kernels probe their back end (loading its module, in a\n"
    "                  child process) and show the device's architecture or\n"
    "                  UNSUPPORTED with the reason a sweep would give\n"
    "  GLOB            only kernels whose name matches (gemm.cpu.*)\n"
    "  -h, --help      this text\n"
    "\n"
    "Exit codes: 0 success, 2 bad usage, or a plugin, adapter or worker that cannot be loaded.\n";

static json_t *fmt_json(qf_format_id id)
{
    const qf_format *f = qf_format_get(id);
    return json_string(f ? f->name : "?");
}

static const char *round_name(qf_round r)
{
    const char *n = qf_round_name(r);
    return n ? n : "?";
}

static json_t *arith_json(const qf_arith_claim *a)
{
    json_t *o = json_object();
    const char *order = a->sum_order == QF_SUM_PAIRWISE ? "pairwise"
                        : a->sum_order == QF_SUM_SPLITK ? "split_k"
                                                        : "sequential";
    json_object_set_new(o, "acc_format", fmt_json(a->acc_format));
    json_object_set_new(o, "acc_frac_bits", json_integer(a->acc_frac_bits));
    json_object_set_new(o, "block_fma", json_integer(a->block_fma));
    json_object_set_new(o, "acc_round", json_string(round_name(a->acc_round)));
    json_object_set_new(o, "align_truncates", json_boolean(a->align_truncates));
    json_object_set_new(o, "guard_bits", json_integer(a->guard_bits));
    json_object_set_new(o, "promote_interval", json_integer(a->promote_interval));
    if (a->promote_interval > 0)
        json_object_set_new(o, "promote_format", fmt_json(a->promote_format));
    json_object_set_new(o, "sum_order", json_string(order));
    if (a->sum_order == QF_SUM_SPLITK)
        json_object_set_new(o, "split_k", json_integer(a->split_k));
    json_object_set_new(o, "out_round", json_string(round_name(a->out_round)));
    json_object_set_new(o, "max_ulp", json_real(a->max_ulp));
    json_object_set_new(o, "elem_ulp", json_real(a->elem_ulp));
    json_object_set_new(o, "deterministic", json_boolean(a->deterministic));
    json_object_set_new(o, "deterministic_threads", json_boolean(a->deterministic_threads));
    json_object_set_new(o, "attn_kv_tile", json_integer(a->attn_kv_tile));
    json_object_set_new(o, "attn_p_format",
                        qf_arith_claim_p_format(a) ? fmt_json(a->attn_p_format) : json_string("none"));
    json_object_set_new(o, "var_algo", json_string(a->var_algo == QF_VAR_WELFORD ? "welford" : "two_pass"));
    json_object_set_new(o, "flush_subnormals", json_boolean(a->flush_subnormals));
    {
        /* ABI 3 keys, spelled as in a claim file (docs/claims.md). */
        static const char *const det[] = {"none", "none", "run-to-run", "thread-count-invariant"};
        static const char *const acc[] = {"float", "int32", "int64"};
        char buf[160];
        json_object_set_new(o, "fma", json_string(a->fma == QF_FMA_UNFUSED ? "unfused" : "fused"));
        json_object_set_new(o, "order", json_string(qf_claim_order_str(a, buf, sizeof buf)));
        json_object_set_new(o, "product_frac_bits", json_integer(a->product_frac_bits));
        json_object_set_new(o, "accumulator", json_string(acc[a->acc_kind]));
        if (a->acc_kind != QF_ACC_FLOAT)
            json_object_set_new(o, "overflow",
                                json_string(a->acc_overflow == QF_OVERFLOW_SATURATE ? "saturate" : "wrap"));
        json_object_set_new(o, "determinism", json_string(det[qf_arith_claim_determinism(a)]));
    }
    return o;
}

static json_t *kernel_json(const qf_kernel *k, const char *origin, const char *claim_origin)
{
    json_t *o = json_object(), *dts = json_array(), *lim = json_object();
    size_t i;
    int d, nd = qf_op_dim_count(k->op), det = 1;
    json_object_set_new(o, "name", json_string(k->name));
    json_object_set_new(o, "kind", json_string(qf_kernel_kind_name(k->kind)));
    json_object_set_new(o, "op", json_string(qf_op_name(k->op)));
    json_object_set_new(o, "description", k->description ? json_string(k->description) : json_null());
    json_object_set_new(o, "origin", json_string(origin));
    if (claim_origin) /* the claim came from a claim file (--claim) */
        json_object_set_new(o, "claim_origin", json_string(claim_origin));
    json_object_set_new(o, "backend", json_string(k->backend));
    json_object_set_new(o, "archs", json_string(k->archs));
    json_object_set_new(o, "simulates", k->simulates ? json_string(k->simulates) : json_null());
    for (i = 0; i < k->n_dtypes; i++) {
        const qf_dtype_tuple *t = &k->dtypes[i];
        json_t *to = json_object(), *in = json_object(), *out = json_object();
        int s;
        for (s = 0; s < qf_op_slot_count(k->op, 0); s++) {
            if (t->in_scale[s] != QF_SCALE_NONE) {
                json_t *so = json_object();
                json_object_set_new(so, "format", fmt_json(t->in[s]));
                json_object_set_new(so, "scale", json_string(qf_scale_kind_name(t->in_scale[s])));
                json_object_set_new(so, "scale_format", fmt_json(t->in_scale_format[s]));
                if (t->in_scale_block[s])
                    json_object_set_new(so, "block", json_integer((json_int_t)t->in_scale_block[s]));
                json_object_set_new(in, qf_op_slot_name(k->op, 0, s), so);
            } else {
                json_object_set_new(in, qf_op_slot_name(k->op, 0, s), fmt_json(t->in[s]));
            }
        }
        for (s = 0; s < qf_op_slot_count(k->op, 1); s++)
            json_object_set_new(out, qf_op_slot_name(k->op, 1, s), fmt_json(t->out[s]));
        json_object_set_new(to, "name", json_string(t->name));
        json_object_set_new(to, "in", in);
        json_object_set_new(to, "out", out);
        json_object_set_new(to, "arith", arith_json(&t->arith));
        json_array_append_new(dts, to);
        det = det && t->arith.deterministic;
    }
    json_object_set_new(o, "deterministic", json_boolean(det));
    json_object_set_new(o, "dtypes", dts);
    for (d = 0; d < nd; d++) {
        json_t *c;
        if (!k->limits.min[d] && !k->limits.max[d] && k->limits.multiple_of[d] <= 1)
            continue;
        c = json_object();
        if (k->limits.min[d])
            json_object_set_new(c, "min", json_integer(k->limits.min[d]));
        if (k->limits.max[d])
            json_object_set_new(c, "max", json_integer(k->limits.max[d]));
        if (k->limits.multiple_of[d] > 1)
            json_object_set_new(c, "multiple_of", json_integer(k->limits.multiple_of[d]));
        json_object_set_new(lim, qf_op_dim_name(k->op, d), c);
    }
    if (k->limits.align_bytes)
        json_object_set_new(lim, "align_bytes", json_integer((json_int_t)k->limits.align_bytes));
    json_object_set_new(o, "limits", lim);
    {
        /* Operand layouts: dense, then those it declares (docs/kernels.md). */
        json_t *lay = json_array();
        uint32_t b;
        json_array_append_new(lay, json_string("dense"));
        for (b = 1; b & QF_LAYOUT_ALL; b <<= 1)
            if (k->layouts & b)
                json_array_append_new(lay, json_string(qf_layout_name(b)));
        json_object_set_new(o, "layouts", lay);
    }
    return o;
}

/* Whether k can run here, as `qualify run` would decide before running
 * it: CPU kernels always; a GPU kernel when its back end finds a device
 * of an architecture it claims (qualify/runner_device.c).  0 with the
 * architecture in what, -1 with the reason. */
static int kernel_status(const qf_kernel *k, char *what, size_t size)
{
    char arch[64], why[512];
    if (!_qf_rdev_is_device(k)) {
        snprintf(what, size, "cpu");
        return 0;
    }
    if (_qf_rdev_probe(k, arch, sizeof arch, why, sizeof why)) {
        snprintf(what, size, "%s", why);
        return -1;
    }
    snprintf(what, size, "%s", arch);
    return 0;
}

static int dump_json(json_t *arr)
{
    char *s = _qf_json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(arr);
    if (!s)
        return QF_EXIT_FAIL;
    puts(s);
    free(s);
    return QF_EXIT_OK;
}

static int list_kernels(qf_registry *r, int json, int status, int have_kind, qf_kernel_kind kind, int have_op,
                        qf_op op, const char *glob)
{
    size_t i, n = qf_registry_count(r);
    json_t *arr = json ? json_array() : NULL;
    char st[512];
    if (!json)
        printf("%-28s %-10s %-10s %-14s %-8s %s%s\n", "name", "kind", "op", "dtypes", "archs", "origin",
               status ? " | status" : "");
    for (i = 0; i < n; i++) {
        const qf_kernel *k = qf_registry_get(r, i);
        if ((have_kind && k->kind != kind) || (have_op && k->op != op) ||
            (glob && !qf_kernel_glob(glob, k->name)))
            continue;
        if (json) {
            json_t *o = kernel_json(k, qf_registry_origin(r, i), qf_registry_claim_origin(r, i));
            if (status) {
                int ok = kernel_status(k, st, sizeof st) == 0;
                json_object_set_new(o, "status", json_string(ok ? "ready" : "UNSUPPORTED"));
                json_object_set_new(o, ok ? "status_arch" : "status_reason", json_string(st));
            }
            json_array_append_new(arr, o);
        } else {
            char dts[256] = "";
            size_t j, len = 0;
            for (j = 0; j < k->n_dtypes && len < sizeof dts; j++) {
                int w = snprintf(dts + len, sizeof dts - len, "%s%s", j ? "," : "", k->dtypes[j].name);
                if (w < 0)
                    break;
                len += (size_t)w;
            }
            {
                /* A plugin's or worker's names are shown, never obeyed by
                 * the terminal (_escape.h). */
                char name[512], tuples[sizeof dts * 4], archs[512];
                printf("%-28s %-10s %-10s %-14s %-8s ", _qf_esc_line(name, sizeof name, k->name),
                       qf_kernel_kind_name(k->kind), qf_op_name(k->op), _qf_esc_line(tuples, sizeof tuples, dts),
                       _qf_esc_line(archs, sizeof archs, k->archs));
                _qf_esc_term(stdout, qf_registry_origin(r, i));
                if (qf_registry_claim_origin(r, i)) {
                    fputs("; claim from ", stdout);
                    _qf_esc_term(stdout, qf_registry_claim_origin(r, i));
                }
                if (status) {
                    int ok = kernel_status(k, st, sizeof st) == 0;
                    fputs(ok ? " | ready on " : " | UNSUPPORTED: ", stdout);
                    _qf_esc_term(stdout, st);
                }
                putchar('\n');
            }
        }
    }
    return json ? dump_json(arr) : QF_EXIT_OK;
}

static json_t *names_json(qf_op op, int is_output)
{
    json_t *a = json_array();
    int s;
    for (s = 0; s < qf_op_slot_count(op, is_output); s++)
        json_array_append_new(a, json_string(qf_op_slot_name(op, is_output, s)));
    return a;
}

static void join(char *buf, size_t size, qf_op op, int what)
{
    int i, n = what == 2 ? qf_op_dim_count(op) : qf_op_slot_count(op, what);
    size_t len = 0;
    buf[0] = '\0';
    for (i = 0; i < n && len < size; i++) {
        const char *s = what == 2 ? qf_op_dim_name(op, i) : qf_op_slot_name(op, what, i);
        int w = snprintf(buf + len, size - len, "%s%s", i ? "," : "", s);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* The ops suites name (the op table, qualify/ops/) that run on ABI op
 * `op`: name, dimensions, parameters and the bound each derives. */
static json_t *suite_ops_json(qf_op op)
{
    json_t *a = json_array();
    for (int i = 0; i < qf_suite_op_count(); i++) {
        qf_suite_op so = (qf_suite_op)i;
        const char *const *dn;
        const char *b = qf_suite_op_bound(so);
        json_t *o, *dims, *params;
        size_t d, n;
        if (qf_suite_op_kernel_op(so) != op)
            continue;
        o = json_object();
        dims = json_array();
        params = json_array();
        n = qf_suite_op_dims(so, &dn);
        for (d = 0; d < n; d++)
            json_array_append_new(dims, json_string(dn[d]));
        for (d = 0; qf_suite_op_param(so, d); d++)
            json_array_append_new(params, json_string(qf_suite_op_param(so, d)));
        json_object_set_new(o, "name", json_string(qf_suite_op_name(so)));
        json_object_set_new(o, "dimensions", dims);
        json_object_set_new(o, "parameters", params);
        json_object_set_new(o, "bound", b ? json_string(b) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

static void print_suite_ops(void)
{
    printf("\n%-12s %-11s %-42s %-46s %s\n", "suite op", "kernels", "dimensions", "parameters", "bound");
    for (int i = 0; i < qf_suite_op_count(); i++) {
        qf_suite_op so = (qf_suite_op)i;
        const char *const *dn;
        const char *b = qf_suite_op_bound(so);
        char dims[160] = "", params[256] = "";
        size_t d, n = qf_suite_op_dims(so, &dn), len = 0;
        for (d = 0; d < n && len < sizeof dims; d++)
            len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%s", d ? "," : "", dn[d]);
        for (d = 0, len = 0; qf_suite_op_param(so, d) && len < sizeof params; d++)
            len += (size_t)snprintf(params + len, sizeof params - len, "%s%s", d ? "," : "",
                                    qf_suite_op_param(so, d));
        printf("%-12s %-11s %-50s %-48s %s\n", qf_suite_op_name(so), qf_op_name(qf_suite_op_kernel_op(so)),
               dims, params[0] ? params : "-", b ? b : "none (a claimed max_ulp only)");
    }
}

static int list_ops(int json)
{
    int i;
    json_t *arr = json ? json_array() : NULL;
    if (!json)
        printf("%-11s %-20s %-16s %s\n", "op", "inputs", "outputs", "dimensions");
    for (i = 0; i < QF_OP_COUNT; i++) {
        qf_op op = (qf_op)i;
        if (json) {
            json_t *o = json_object(), *dims = json_array();
            int d;
            for (d = 0; d < qf_op_dim_count(op); d++)
                json_array_append_new(dims, json_string(qf_op_dim_name(op, d)));
            json_object_set_new(o, "name", json_string(qf_op_name(op)));
            json_object_set_new(o, "summary", json_string(qf_op_summary(op)));
            json_object_set_new(o, "inputs", names_json(op, 0));
            json_object_set_new(o, "outputs", names_json(op, 1));
            json_object_set_new(o, "dimensions", dims);
            json_object_set_new(o, "suite_ops", suite_ops_json(op));
            json_array_append_new(arr, o);
        } else {
            char in[128], out[128], dims[160];
            join(in, sizeof in, op, 0);
            join(out, sizeof out, op, 1);
            join(dims, sizeof dims, op, 2);
            printf("%-11s %-20s %-16s %s\n", qf_op_name(op), in, out, dims);
        }
    }
    if (!json)
        print_suite_ops();
    return json ? dump_json(arr) : QF_EXIT_OK;
}

static int list_formats(int json)
{
    int i;
    json_t *arr = json ? json_array() : NULL;
    if (!json)
        printf("%-20s %4s  %s\n", "name", "bits", "aliases");
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const qf_format *f = qf_format_get((qf_format_id)i);
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(f->name));
            json_object_set_new(o, "bits", json_integer(f->bits));
            json_object_set_new(o, "aliases", json_string(f->aliases ? f->aliases : ""));
            json_array_append_new(arr, o);
        } else {
            printf("%-20s %4d  %s\n", f->name, f->bits, f->aliases ? f->aliases : "");
        }
    }
    return json ? dump_json(arr) : QF_EXIT_OK;
}

int qf_cli_list(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"plugin", required_argument, NULL, 'p'},
        {"kind", required_argument, NULL, 'k'},
        {"op", required_argument, NULL, 'o'},
        {"worker", required_argument, NULL, 'w'},
        {"claim", required_argument, NULL, 'c'},
        {"adapter", required_argument, NULL, 'a'},
        {"status", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char **plugins = NULL, **workers, **adapters;
    int json = 0, status = 0, have_kind = 0, have_op = 0, c, rc;
    qf_cli_sources src;
    qf_kernel_kind kind = QF_KERNEL_REFERENCE;
    qf_op op = QF_OP_GEMM;
    const char *what, *glob = NULL;
    qf_registry *reg = NULL;

    /* One allocation: plugins, workers, adapters and claims in quarters. */
    plugins = calloc(4 * ((size_t)argc + 1), sizeof *plugins);
    if (!plugins) {
        fprintf(stderr, "qualify list: out of memory\n");
        return QF_EXIT_FAIL;
    }
    workers = plugins + argc + 1;
    adapters = workers + argc + 1;
    memset(&src, 0, sizeof src);
    src.plugins = plugins;
    src.workers = workers;
    src.adapters = adapters;
    src.claims = adapters + argc + 1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 's': status = 1; break;
        case 'p': plugins[src.nplugins++] = optarg; break;
        case 'w': workers[src.nworkers++] = optarg; break;
        case 'a': adapters[src.nadapters++] = optarg; break;
        case 'c': ((const char **)src.claims)[src.nclaims++] = optarg; break;
        case 'k':
            if (qf_kernel_kind_lookup(optarg, &kind) != QF_OK) {
                free(plugins);
                return qf_cli_usage_error("list",
                                          "unknown kernel kind '%s'; valid kinds: reference optimized "
                                          "model known-bad",
                                          optarg);
            }
            have_kind = 1;
            break;
        case 'o':
            if (qf_op_lookup(optarg, &op) != QF_OK) {
                char ops[256] = "";
                int i;
                for (i = 0; i < QF_OP_COUNT; i++) {
                    strcat(ops, " ");
                    strcat(ops, qf_op_name((qf_op)i));
                }
                free(plugins);
                return qf_cli_usage_error("list", "unknown op '%s'; valid ops:%s", optarg, ops);
            }
            have_op = 1;
            break;
        case 'h':
            fputs(help_text, stdout);
            free(plugins);
            return QF_EXIT_OK;
        case ':':
            free(plugins);
            return qf_cli_usage_error("list", "option '%s' needs a value", argv[optind - 1]);
        default:
            free(plugins);
            return qf_cli_usage_error("list", "unknown option '%s'; see 'qualify list --help'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        free(plugins);
        return qf_cli_usage_error("list", "what to list is missing: kernels, ops or formats");
    }
    what = argv[optind++];
    if (strcmp(what, "kernels") && strcmp(what, "ops") && strcmp(what, "formats")) {
        free(plugins);
        return qf_cli_usage_error("list", "unknown list '%s'; valid: kernels ops formats", what);
    }
    if (optind < argc) {
        /* 'list kernels' takes one GLOB; nothing else takes an operand. */
        int extra = strcmp(what, "kernels") ? optind : optind + 1;
        if (extra < argc) {
            free(plugins);
            return qf_cli_usage_error("list", "unexpected argument '%s'", argv[extra]);
        }
        glob = argv[optind];
    }
    if (strcmp(what, "kernels") &&
        (src.nplugins || src.nworkers || src.nadapters || src.nclaims || have_kind || have_op || status)) {
        free(plugins);
        return qf_cli_usage_error(
            "list", "--plugin, --adapter, --worker, --kind, --op and --status apply to 'list kernels' only");
    }
    if (!strcmp(what, "ops")) {
        free(plugins);
        return list_ops(json);
    }
    if (!strcmp(what, "formats")) {
        free(plugins);
        return list_formats(json);
    }

    if ((rc = qf_cli_registry("list", &src, &reg)) != QF_EXIT_OK) {
        free(plugins);
        return rc;
    }
    rc = list_kernels(reg, json, status, have_kind, kind, have_op, op, glob);
    qf_registry_free(reg);
    free(plugins);
    return rc;
}
