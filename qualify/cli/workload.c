/* cli/workload.c: 'qualify workload': a small transformer forward pass from
 * registered kernels against the exact path (qf_workload.h,
 * docs/workload.md). */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_files.h"
#include "cli.h"
#include "qf_audit.h"
#include "qf_kernel.h"
#include "qf_recipe.h"
#include "qf_safetensors.h"
#include "qf_version.h"
#include "qf_workload.h"

static const char *help_text =
    "usage: qualify workload [--weights FILE.safetensors | --seed S] [sizes] [kernels]\n"
    "                        [--exact] [--tokens LIST] [--json] [-o FILE.json]\n"
    "                        [--save-weights FILE.safetensors] [--max-kl X] [--min-top1 F]\n"
    "\n"
    "Runs a Llama-style forward pass (embedding; per layer RMSNorm, attention\n"
    "with RoPE and GQA, RMSNorm, SwiGLU MLP; final norm; logits) twice: through\n"
    "registered kernels on float32 activations, and through the exact path\n"
    "(every op correctly rounded to binary64 from its binary64 inputs).\n"
    "Reports the error per layer, at the final norm and the logits, the KL\n"
    "divergence of the next-token distributions and the top-1 agreement.\n"
    "\n"
    "sizes (synthetic weights; a weights file sets them but --heads):\n"
    "  --layers N (2) --dim N (128) --heads N (4) --kv-heads N (2) --ffn N (256)\n"
    "  --vocab N (256) --seq N (16)\n"
    "kernels (a registered name, or 'fallback': the reference rounded to float32):\n"
    "  --gemm K[:TUPLE]  (gemm.cpu.naive.f32), e.g. gemm.model.h100.e4m3\n"
    "  --scale per_tensor|per_channel   scales of 8-bit GEMM inputs (per_tensor)\n"
    "  --rmsnorm K (rmsnorm.cpu.f32) --attention K (attention.cpu.naive.f32)\n"
    "  --activation K (activation.cpu.f32) --rope K (rope.cpu.f32)\n"
    "  --plugin LIB.so   load kernels from a plugin (repeatable)\n"
    "  --exact           compare the exact path with itself (KL 0, top-1 1)\n"
    "  --tokens LIST     comma-separated token ids (default: seeded random)\n"
    "  --seed S          weights and tokens seed (1)\n"
    "  --save-weights F  write the weights used as F32 .safetensors\n"
    "  --max-kl X, --min-top1 F   exit 1 when the mean KL exceeds X or the\n"
    "                    top-1 agreement is below F\n"
    "  --json, -o FILE   the result as JSON on stdout / into FILE\n"
    "\n"
    "Exit codes: 0 done (and within --max-kl / --min-top1); 1 outside them;\n"
    "2 bad usage, an unknown kernel, a bad or corrupt weights file.\n";

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v == 0 || v > (1ull << 24))
        return 0;
    *out = (size_t)v;
    return 1;
}

static json_t *err_json(const qf_workload_err *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "normwise", qf_audit_json_number(e->normwise));
    json_object_set_new(o, "max_abs", qf_audit_json_number(e->max_abs));
    return o;
}

/* -o FILE: written beside it and renamed over it (_files.h); 0 or -1. */
static int write_json(const char *path, const json_t *doc)
{
    _qf_out o;
    if (!_qf_out_open(&o, path, _QF_OUT_SYNC, NULL, 0))
        return -1;
    if (json_dumpf(doc, o.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))) {
        _qf_out_abort(&o);
        return -1;
    }
    return _qf_out_commit(&o, NULL, 0) == QF_OK ? 0 : -1;
}

int qf_cli_workload(int argc, char **argv)
{
    enum { O_LAYERS = 256, O_DIM, O_HEADS, O_KV, O_FFN, O_VOCAB, O_SEQ, O_SEED, O_TOKENS, O_WEIGHTS, O_SAVE,
           O_GEMM, O_SCALE, O_RMS, O_ATT, O_ACT, O_ROPE, O_PLUGIN, O_EXACT, O_JSON, O_MAXKL, O_MINTOP };
    static const struct option longopts[] = {
        {"layers", 1, NULL, O_LAYERS}, {"dim", 1, NULL, O_DIM},         {"heads", 1, NULL, O_HEADS},
        {"kv-heads", 1, NULL, O_KV},   {"ffn", 1, NULL, O_FFN},         {"vocab", 1, NULL, O_VOCAB},
        {"seq", 1, NULL, O_SEQ},       {"seed", 1, NULL, O_SEED},       {"tokens", 1, NULL, O_TOKENS},
        {"weights", 1, NULL, O_WEIGHTS}, {"save-weights", 1, NULL, O_SAVE}, {"gemm", 1, NULL, O_GEMM},
        {"scale", 1, NULL, O_SCALE},   {"rmsnorm", 1, NULL, O_RMS},     {"attention", 1, NULL, O_ATT},
        {"activation", 1, NULL, O_ACT}, {"rope", 1, NULL, O_ROPE},      {"plugin", 1, NULL, O_PLUGIN},
        {"exact", 0, NULL, O_EXACT},   {"json", 0, NULL, O_JSON},       {"max-kl", 1, NULL, O_MAXKL},
        {"min-top1", 1, NULL, O_MINTOP}, {"help", 0, NULL, 'h'},        {NULL, 0, NULL, 0}};
    qf_workload_config cfg = qf_workload_config_default();
    const char *names[QF_WL_OP_COUNT] = {"gemm.cpu.naive.f32", "rmsnorm.cpu.f32", "attention.cpu.naive.f32",
                                         "activation.cpu.f32", "rope.cpu.f32"};
    const char *weights = NULL, *save = NULL, *outfile = NULL, *tokens_arg = NULL, *scale = "per_tensor";
    qf_scale_recipe recipe = QF_SCALE_RECIPE_PER_TENSOR;
    char **plugins = calloc((size_t)argc + 1, sizeof *plugins), err[1024] = "", gemm_name[128] = "";
    const char *gemm_tuple = NULL;
    size_t nplugins = 0, i, *sz;
    uint64_t seed = 1;
    int c, json = 0, exact = 0, rc = QF_EXIT_OK, op;
    double max_kl = INFINITY, min_top1 = 0;
    qf_registry *reg = NULL;
    qf_workload_plan ref_plan, plan;
    qf_workload_weights w;
    qf_workload_trace ref, got;
    qf_workload_cmp cmp;
    int64_t *tokens = NULL;
    memset(&w, 0, sizeof w);
    if (!plugins)
        return QF_EXIT_FAIL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        char *end;
        sz = NULL;
        switch (c) {
        case O_LAYERS: sz = &cfg.layers; break;
        case O_DIM: sz = &cfg.dim; break;
        case O_HEADS: sz = &cfg.heads; break;
        case O_KV: sz = &cfg.kv_heads; break;
        case O_FFN: sz = &cfg.ffn; break;
        case O_VOCAB: sz = &cfg.vocab; break;
        case O_SEQ: sz = &cfg.seq; break;
        case O_SEED:
            seed = strtoull(optarg, &end, 0);
            if (!*optarg || *end) {
                free(plugins);
                return qf_cli_usage_error("workload", "--seed '%s' is not an integer", optarg);
            }
            break;
        case O_TOKENS: tokens_arg = optarg; break;
        case O_WEIGHTS: weights = optarg; break;
        case O_SAVE: save = optarg; break;
        case O_GEMM: names[QF_WL_OP_GEMM] = optarg; break;
        case O_SCALE: scale = optarg; break;
        case O_RMS: names[QF_WL_OP_RMSNORM] = optarg; break;
        case O_ATT: names[QF_WL_OP_ATTENTION] = optarg; break;
        case O_ACT: names[QF_WL_OP_ACTIVATION] = optarg; break;
        case O_ROPE: names[QF_WL_OP_ROPE] = optarg; break;
        case O_PLUGIN: plugins[nplugins++] = optarg; break;
        case O_EXACT: exact = 1; break;
        case O_JSON: json = 1; break;
        case 'o': outfile = optarg; break;
        case O_MAXKL:
        case O_MINTOP: {
            double v = strtod(optarg, &end);
            if (!*optarg || *end || !(v >= 0)) {
                free(plugins);
                return qf_cli_usage_error("workload", "%s '%s' is not a number >= 0", argv[optind - 2], optarg);
            }
            if (c == O_MAXKL)
                max_kl = v;
            else
                min_top1 = v;
            break;
        }
        case 'h':
            fputs(help_text, stdout);
            free(plugins);
            return QF_EXIT_OK;
        case ':':
            free(plugins);
            return qf_cli_usage_error("workload", "option '%s' needs a value", argv[optind - 1]);
        default:
            free(plugins);
            return qf_cli_usage_error("workload", "unknown option '%s' (see qualify workload --help)",
                                      argv[optind - 1]);
        }
        if (sz && !parse_size(optarg, sz)) {
            free(plugins);
            return qf_cli_usage_error("workload", "%s '%s' is not a positive integer", argv[optind - 2], optarg);
        }
    }
    if (optind < argc) {
        free(plugins);
        return qf_cli_usage_error("workload", "unexpected argument '%s'", argv[optind]);
    }
    if (qf_scale_recipe_lookup(scale, &recipe) != QF_OK ||
        (recipe != QF_SCALE_RECIPE_PER_TENSOR && recipe != QF_SCALE_RECIPE_PER_CHANNEL)) {
        free(plugins);
        return qf_cli_usage_error("workload", "--scale '%s' (valid: %s, %s)", scale,
                                  qf_scale_recipe_name(QF_SCALE_RECIPE_PER_TENSOR),
                                  qf_scale_recipe_name(QF_SCALE_RECIPE_PER_CHANNEL));
    }
    /* The kernels. */
    {
        qf_cli_sources src = {(const char *const *)plugins, nplugins, NULL, 0, NULL, 0, NULL, 0, 0};
        if ((rc = qf_cli_registry("workload", &src, &reg)) != QF_EXIT_OK)
            goto out;
    }
    memset(&plan, 0, sizeof plan);
    memset(&ref_plan, 0, sizeof ref_plan);
    ref_plan.exact = 1;
    plan.exact = exact;
    plan.fp8_granularity = recipe == QF_SCALE_RECIPE_PER_TENSOR ? QF_BLOCK_FP8_TENSOR : QF_BLOCK_FP8_ROW;
    {
        const char *colon = strchr(names[QF_WL_OP_GEMM], ':');
        snprintf(gemm_name, sizeof gemm_name, "%.*s",
                 colon ? (int)(colon - names[QF_WL_OP_GEMM]) : (int)strlen(names[QF_WL_OP_GEMM]),
                 names[QF_WL_OP_GEMM]);
        gemm_tuple = colon ? colon + 1 : NULL;
        names[QF_WL_OP_GEMM] = gemm_name;
    }
    for (op = 0; op < QF_WL_OP_COUNT; op++) {
        qf_op kop = qf_workload_op_kernel_op((qf_workload_op)op);
        const qf_kernel *k;
        if (!strcmp(names[op], "fallback"))
            continue;
        k = qf_registry_find(reg, names[op]);
        if (!k) {
            rc = qf_cli_usage_error("workload", "--%s: no kernel '%s' (qualify list kernels --op %s)",
                                    qf_workload_op_name((qf_workload_op)op), names[op], qf_op_name(kop));
            goto out;
        }
        if (k->op != kop || strcmp(k->backend, "cpu")) {
            rc = qf_cli_usage_error("workload", "--%s: kernel '%s' is not a CPU %s kernel",
                                    qf_workload_op_name((qf_workload_op)op), names[op], qf_op_name(kop));
            goto out;
        }
        plan.kernel[op] = k;
    }
    if (gemm_tuple) {
        if (!plan.kernel[QF_WL_OP_GEMM] || !(plan.gemm_dtype = qf_kernel_dtype(plan.kernel[QF_WL_OP_GEMM], gemm_tuple))) {
            rc = qf_cli_usage_error("workload", "--gemm: kernel '%s' has no dtype tuple '%s'", gemm_name, gemm_tuple);
            goto out;
        }
    }
    /* The weights. */
    if (weights) {
        qf_safetensors st;
        if (qf_safetensors_open(weights, &st, err, sizeof err) != QF_OK ||
            (qf_workload_weights_load(&st, &cfg, &w, err, sizeof err) != QF_OK && (qf_safetensors_close(&st), 1))) {
            qf_cli_error("workload", "%s", err);
            rc = QF_EXIT_USAGE;
            goto out;
        }
        qf_safetensors_close(&st);
    } else {
        if (qf_workload_config_check(&cfg, err, sizeof err) != QF_OK) {
            rc = qf_cli_usage_error("workload", "%s", err);
            goto out;
        }
        if (qf_workload_weights_synthetic(&cfg, seed, &w) != QF_OK) {
            fprintf(stderr, "qualify workload: out of memory\n");
            rc = QF_EXIT_FAIL;
            goto out;
        }
    }
    if (save && qf_workload_weights_save(save, &cfg, &w, err, sizeof err) != QF_OK) {
        qf_cli_error("workload", "%s", err);
        rc = QF_EXIT_USAGE;
        goto out;
    }
    tokens = calloc(cfg.seq, sizeof *tokens);
    if (!tokens) {
        rc = QF_EXIT_FAIL;
        goto out;
    }
    if (tokens_arg) {
        const char *p = tokens_arg;
        size_t n = 0;
        while (*p) {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p || (*end && *end != ',') || n >= cfg.seq || v < 0 || (unsigned long long)v >= cfg.vocab) {
                rc = qf_cli_usage_error("workload", "--tokens: '%s': expected %zu comma-separated ids in [0, %zu)",
                                        tokens_arg, cfg.seq, cfg.vocab);
                goto out;
            }
            tokens[n++] = v;
            p = *end ? end + 1 : end;
        }
        if (n != cfg.seq) {
            rc = qf_cli_usage_error("workload", "--tokens: %zu ids given, --seq is %zu", n, cfg.seq);
            goto out;
        }
    } else {
        for (i = 0; i < cfg.seq; i++)
            tokens[i] = (int64_t)(qf_rng_u64(seed ^ 0x746F6B656E73ull, i) % cfg.vocab);
    }
    /* The two passes. */
    if (qf_workload_run(&cfg, &w, tokens, &ref_plan, &ref, err, sizeof err) != QF_OK) {
        qf_cli_error("workload", "exact path: %s", err);
        rc = QF_EXIT_FAIL;
        goto out;
    }
    if (qf_workload_run(&cfg, &w, tokens, &plan, &got, err, sizeof err) != QF_OK) {
        qf_cli_error("workload", "kernel path: %s", err);
        qf_workload_trace_free(&ref);
        rc = QF_EXIT_FAIL;
        goto out;
    }
    if (qf_workload_compare(&ref, &got, &cmp) != QF_OK) {
        rc = QF_EXIT_FAIL;
    } else {
        json_t *doc = json_object(), *jc = json_object(), *jops = json_object(), *jl = json_array(),
               *jt = json_array();
        char wdesc[1100];
        if (weights)
            snprintf(wdesc, sizeof wdesc, "%s", weights);
        else
            snprintf(wdesc, sizeof wdesc, "synthetic:seed=%llu", (unsigned long long)seed);
        json_object_set_new(jc, "layers", json_integer((json_int_t)cfg.layers));
        json_object_set_new(jc, "dim", json_integer((json_int_t)cfg.dim));
        json_object_set_new(jc, "heads", json_integer((json_int_t)cfg.heads));
        json_object_set_new(jc, "kv_heads", json_integer((json_int_t)cfg.kv_heads));
        json_object_set_new(jc, "ffn", json_integer((json_int_t)cfg.ffn));
        json_object_set_new(jc, "vocab", json_integer((json_int_t)cfg.vocab));
        json_object_set_new(jc, "seq", json_integer((json_int_t)cfg.seq));
        for (op = 0; op < QF_WL_OP_COUNT; op++) {
            json_t *e = json_object();
            json_object_set_new(e, "by", json_string(got.used[op]));
            json_object_set_new(e, "local_error", qf_audit_json_number(got.local[op]));
            json_object_set_new(jops, qf_workload_op_name((qf_workload_op)op), e);
        }
        for (i = 0; i < cfg.seq; i++)
            json_array_append_new(jt, json_integer((json_int_t)tokens[i]));
        for (i = 0; i < cmp.layers; i++) {
            json_t *e = err_json(&cmp.layer[i]);
            json_object_set_new(e, "layer", json_integer((json_int_t)i));
            json_array_append_new(jl, e);
        }
        json_object_set_new(doc, "format", json_string("qualify-workload"));
        json_object_set_new(doc, "version", json_integer(1));
        json_object_set_new(doc, "generator", json_string("qualify " QF_VERSION_STRING));
        json_object_set_new(doc, "config", jc);
        json_object_set_new(doc, "weights", json_string(wdesc));
        json_object_set_new(doc, "tokens", jt);
        json_object_set_new(doc, "ops", jops);
        json_object_set_new(doc, "scale", json_string(scale));
        json_object_set_new(doc, "layers", jl);
        json_object_set_new(doc, "final", err_json(&cmp.final));
        json_object_set_new(doc, "logits", err_json(&cmp.logits));
        json_object_set_new(doc, "kl_mean", qf_audit_json_number(cmp.kl_mean));
        json_object_set_new(doc, "kl_max", qf_audit_json_number(cmp.kl_max));
        json_object_set_new(doc, "top1", qf_audit_json_number(cmp.top1));
        if (outfile && write_json(outfile, doc)) {
            fprintf(stderr, "qualify workload: cannot write %s\n", outfile);
            rc = QF_EXIT_USAGE;
        }
        if (json) {
            json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
            putchar('\n');
        } else {
            printf("workload: %zu layers, dim %zu, heads %zu (kv %zu), ffn %zu, vocab %zu, seq %zu; weights %s\n",
                   cfg.layers, cfg.dim, cfg.heads, cfg.kv_heads, cfg.ffn, cfg.vocab, cfg.seq, wdesc);
            printf("kernel path (against the exact path, docs/workload.md):\n");
            for (op = 0; op < QF_WL_OP_COUNT; op++) {
                printf("  %-10s %s", qf_workload_op_name((qf_workload_op)op), got.used[op]);
                if (!isnan(got.local[op]))
                    printf("; local error %.3g", got.local[op]);
                putchar('\n');
            }
            printf("  8-bit GEMM input scales: %s\n\n", scale);
            printf("%-12s %-12s %-12s\n", "after", "normwise", "max abs");
            for (i = 0; i < cmp.layers; i++) {
                char lab[32];
                snprintf(lab, sizeof lab, "layer %zu", i);
                printf("%-12s %-12.4g %-12.4g\n", lab, cmp.layer[i].normwise, cmp.layer[i].max_abs);
            }
            printf("%-12s %-12.4g %-12.4g\n", "final norm", cmp.final.normwise, cmp.final.max_abs);
            printf("%-12s %-12.4g %-12.4g\n", "logits", cmp.logits.normwise, cmp.logits.max_abs);
            printf("\nKL divergence (nats, mean / max over positions): %.4g / %.4g\n", cmp.kl_mean, cmp.kl_max);
            printf("top-1 agreement: %.4g (%zu of %zu positions)\n", cmp.top1,
                   (size_t)llround(cmp.top1 * (double)cfg.seq), cfg.seq);
        }
        json_decref(doc);
        if (rc == QF_EXIT_OK && (!(cmp.kl_mean <= max_kl) || cmp.top1 < min_top1)) {
            fprintf(stderr, "qualify workload: KL %.4g (limit %g), top-1 %.4g (limit %g): outside the limits\n",
                    cmp.kl_mean, max_kl, cmp.top1, min_top1);
            rc = QF_EXIT_FAIL;
        }
        qf_workload_cmp_free(&cmp);
    }
    qf_workload_trace_free(&ref);
    qf_workload_trace_free(&got);
out:
    free(tokens);
    qf_workload_weights_free(&w);
    qf_registry_free(reg);
    free(plugins);
    return rc;
}
