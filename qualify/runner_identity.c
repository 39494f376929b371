/* runner_identity.c: what identifies a (case, kernel) pair in its
 * result, with the command that reproduces it (_runner.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_runner.h"

void _qf_shell_quote(char *dst, size_t size, const char *s)
{
    size_t o = 0;
    int plain = *s != '\0';
    const char *q;
    for (q = s; *q; q++)
        if (!(('a' <= *q && *q <= 'z') || ('A' <= *q && *q <= 'Z') || ('0' <= *q && *q <= '9') ||
              strchr("/._-=,:+@%", *q)))
            plain = 0;
    if (plain) {
        snprintf(dst, size, "%s", s);
        return;
    }
    if (size < 3) {
        if (size)
            dst[0] = '\0';
        return;
    }
    dst[o++] = '\'';
    for (q = s; *q && o + 5 < size; q++) {
        if (*q == '\'') {
            memcpy(dst + o, "'\\''", 4);
            o += 4;
        } else
            dst[o++] = *q;
    }
    dst[o++] = '\'';
    dst[o] = '\0';
}

static void append(char *dst, size_t size, const char *s)
{
    size_t n = strlen(dst);
    if (n < size)
        snprintf(dst + n, size - n, "%s", s);
}

/* "NAME=VALUE " (shell-quoted) of the set variable name[0..len) onto
 * env, when env stays within room bytes. */
static void env_one(char *env, size_t room, const char *name, size_t len)
{
    char nm[128], word[4096], q[8192];
    const char *v;
    size_t n = strlen(env);
    if (!len || len >= sizeof nm)
        return;
    memcpy(nm, name, len);
    nm[len] = '\0';
    /* a name the shell takes as one: letters, digits, _, not a digit first */
    if (strspn(nm, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != len ||
        (nm[0] >= '0' && nm[0] <= '9') || !(v = getenv(nm)) || len + strlen(v) + 2 > sizeof word)
        return;
    snprintf(word, sizeof word, " %s=", nm); /* named twice: once */
    if (strstr(env, word) || (snprintf(word, sizeof word, " '%s=", nm), strstr(env, word)))
        return;
    snprintf(word, sizeof word, "%s=%s", nm, v);
    _qf_shell_quote(q, sizeof q, word);
    if (n + strlen(q) + 1 <= room)
        snprintf(env + n, room + 1 - n, "%s ", q);
}

void _qf_repro_env_prefix(char *cmd, size_t size)
{
    static const char *const fixed[] = {"PYTHONPATH",          "PYTHONHOME",         "VIRTUAL_ENV",
                                        "CONDA_PREFIX",        "LD_LIBRARY_PATH",    "CUDA_VISIBLE_DEVICES",
                                        "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"};
    const char *extra = getenv("QUALIFY_REPRO_ENV");
    size_t i, n = strlen(cmd), room = n + 1 < size ? size - n - 1 : 0, e;
    char *env;
    if (strncmp(cmd, "qualify ", 8) || room <= 4 || !(env = calloc(1, room + 1)))
        return; /* prefixed already, not a command of ours, or no room */
    strcpy(env, "env ");
    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        env_one(env, room, fixed[i], strlen(fixed[i]));
    while (extra && *extra) { /* names separated by commas or spaces */
        size_t k = strcspn(extra, ", ");
        env_one(env, room, extra, k);
        extra += k;
        extra += strspn(extra, ", ");
    }
    env_one(env, room, "PATH", 4);
    if ((e = strlen(env)) > 4) {
        memmove(cmd + e, cmd, n + 1);
        memcpy(cmd, env, e);
    }
    free(env);
}

void _qf_runner_identity(qf_result *r, const qf_suite *suite, const qf_suite_case *c, const qf_kernel *k,
                         size_t kidx, const qf_registry *reg, const qf_runner_opts *o)
{
    const char *const *names;
    size_t i, n;
    char q[1024];
    struct tm tm;
    time_t now = time(NULL);
    const char *suite_arg = o->suite_arg ? o->suite_arg : suite->path;
    qf_result_init(r);
    snprintf(r->case_id, sizeof r->case_id, "%s", c->id);
    snprintf(r->suite, sizeof r->suite, "%s", suite_arg ? suite_arg : "");
    snprintf(r->op, sizeof r->op, "%s", qf_suite_op_name(c->op));
    snprintf(r->kernel, sizeof r->kernel, "%s", k->name);
    snprintf(r->kernel_kind, sizeof r->kernel_kind, "%s", qf_kernel_kind_name(k->kind));
    snprintf(r->kernel_origin, sizeof r->kernel_origin, "%s", qf_registry_origin(reg, kidx));
    {
        const char *co = qf_registry_claim_origin(reg, kidx);
        snprintf(r->claim_origin, sizeof r->claim_origin, "%s", co ? co : "");
    }
    snprintf(r->dtype, sizeof r->dtype, "%s", c->dtype->label);
    n = qf_suite_op_roles(c->op, &names);
    for (i = 0; i < n && i < QF_RESULT_MAX_ROLES; i++) {
        snprintf(r->roles[i].role, sizeof r->roles[i].role, "%s", names[i]);
        snprintf(r->roles[i].format, sizeof r->roles[i].format, "%s",
                 c->dtype->role[i] ? c->dtype->role[i]->name : "");
    }
    r->nroles = i;
    n = qf_suite_op_dims(c->op, &names);
    for (i = 0; i < n && i < c->ndims && i < QF_RESULT_MAX_DIMS; i++) {
        snprintf(r->dims[i].name, sizeof r->dims[i].name, "%s", names[i]);
        r->dims[i].value = c->dims[i];
    }
    r->ndims = i;
    for (i = 0; i < c->group->nparams && i < QF_RESULT_MAX_PARAMS; i++) {
        const qf_suite_param *pa = &c->group->params[i];
        const qf_suite_value *v = &pa->values[c->param_choice[i]];
        snprintf(r->params[i].key, sizeof r->params[i].key, "%s", pa->key);
        switch (v->type) {
        case QF_PARAM_BOOL:
            snprintf(r->params[i].value, sizeof r->params[i].value, "%s", v->i ? "true" : "false");
            break;
        case QF_PARAM_INT:
            snprintf(r->params[i].value, sizeof r->params[i].value, "%lld", (long long)v->i);
            break;
        case QF_PARAM_REAL: snprintf(r->params[i].value, sizeof r->params[i].value, "%.17g", v->r); break;
        default: snprintf(r->params[i].value, sizeof r->params[i].value, "%s", v->s ? v->s : ""); break;
        }
    }
    /* The thread count is keyed like a parameter (results.json, enablement
     * tables) when the case sets one other than the default 1. */
    if (c->threads != 1 && i < QF_RESULT_MAX_PARAMS) {
        snprintf(r->params[i].key, sizeof r->params[i].key, "threads");
        snprintf(r->params[i].value, sizeof r->params[i].value, "%u", c->threads);
        i++;
    }
    /* So is a layout other than dense (docs/suites.md#layouts). */
    if (c->layout && c->layout->needs && i < QF_RESULT_MAX_PARAMS) {
        snprintf(r->params[i].key, sizeof r->params[i].key, "layout");
        snprintf(r->params[i].value, sizeof r->params[i].value, "%s", c->layout->label);
        i++;
    }
    r->nparams = i;
    snprintf(r->input, sizeof r->input, "%s", c->input->label ? c->input->label : c->input->name);
    r->seed = c->seed;
    /* A model kernel runs on the CPU but stands for the matrix unit it
     * models: its results are labelled "sim:<arch>" (docs/enable.md). */
    if (k->simulates && strncmp(o->arch ? o->arch : "cpu", "sim:", 4))
        snprintf(r->arch, sizeof r->arch, "sim:%s", k->simulates);
    else
        snprintf(r->arch, sizeof r->arch, "%s", o->arch ? o->arch : "cpu");
    gmtime_r(&now, &tm);
    strftime(r->started, sizeof r->started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* The reproducer: the same suite, this case, this kernel. */
    snprintf(r->reproducer, sizeof r->reproducer, "qualify run ");
    _qf_shell_quote(q, sizeof q, suite_arg ? suite_arg : "");
    append(r->reproducer, sizeof r->reproducer, q);
    append(r->reproducer, sizeof r->reproducer, " --case ");
    _qf_shell_quote(q, sizeof q, c->id);
    append(r->reproducer, sizeof r->reproducer, q);
    append(r->reproducer, sizeof r->reproducer, " --kernel ");
    _qf_shell_quote(q, sizeof q, k->name);
    append(r->reproducer, sizeof r->reproducer, q);
    for (i = 0; i < o->nplugins; i++) {
        append(r->reproducer, sizeof r->reproducer, " --plugin ");
        _qf_shell_quote(q, sizeof q, o->plugins[i]);
        append(r->reproducer, sizeof r->reproducer, q);
    }
    if (o->reproducer_args)
        append(r->reproducer, sizeof r->reproducer, o->reproducer_args);
    /* A worker runs in qualify's environment: the variables it reads come along. */
    if (!strncmp(r->kernel_origin, "worker:", 7))
        _qf_repro_env_prefix(r->reproducer, sizeof r->reproducer);
}
