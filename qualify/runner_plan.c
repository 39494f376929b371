/* runner_plan.c: what a sweep's plan must offer before anything runs
 * (_runner.h; docs/cli.md "Nothing to run").  A pair whose kernel claims
 * no dtype tuple for its case is UNSUPPORTED, which a suite's broad globs
 * (gemm.cpu.*) make routine; but a claim file that takes every pair from
 * a kernel the sweep plans, or a --kernel or --case filter that leaves the
 * sweep no pair at all, would make a sweep that checks nothing and passes.
 * Both are errors of the input, named here before any pair runs. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_registry.h"
#include "_runner.h"
#include "qf_format.h"

/* Does one of the tuples t[0..nt) serve case c (its formats and the
 * accumulator of its claim; _qf_tuple_serves)? */
static int serves(const qf_suite_case *c, const qf_dtype_tuple *t, size_t nt)
{
    const _qf_opclass *cls = _qf_opclass_get(c->op);
    size_t i;
    for (i = 0; cls && t && i < nt; i++)
        if (_qf_tuple_serves(c, cls, &t[i]))
            return 1;
    return 0;
}

typedef struct kplan {
    size_t planned, now, registered; /* pairs: planned, servable now, servable without claim files */
    size_t first;                    /* the first planned pair's index */
} kplan;

static void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    if (n + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
}

static const char *fmt_name(qf_format_id id)
{
    const qf_format *f = qf_format_get(id);
    return f ? f->name : "?";
}

/* "the claim says acc_format X" and the first case's dtypes, for k. */
static void why_claim(char *buf, size_t size, const qf_kernel *k, const qf_suite_case *c)
{
    const qf_format *acc = qf_suite_case_format(c, "acc");
    size_t j;
    add(buf, size, "its tuples' accumulator%s now ", k->n_dtypes == 1 ? " is" : "s are");
    for (j = 0; j < k->n_dtypes && j < 4; j++)
        add(buf, size, "%s%s", j ? ", " : "", fmt_name(k->dtypes[j].arith.acc_format));
    add(buf, size, "%s; its first case, %s, has dtypes %s", k->n_dtypes > 4 ? ", ..." : "", c->id,
        c->dtype && c->dtype->label ? c->dtype->label : "?");
    if (acc)
        add(buf, size, " with accumulator %s", acc->name);
}

/* The claim files' kernels: 0, or -1 with the first such kernel in err. */
static int claims_ok(const qf_suite_cases *cs, const _qf_plan_pair *pairs, const kplan *kp, size_t nk,
                     const qf_registry *reg, char *err, size_t err_size)
{
    size_t i;
    for (i = 0; i < nk; i++) {
        const char *origin = qf_registry_claim_origin(reg, i);
        const qf_kernel *k;
        if (!kp[i].planned || kp[i].now || !kp[i].registered || !origin)
            continue;
        k = pairs[kp[i].first].k;
        snprintf(err, err_size,
                 "kernel %s: the claim from %s leaves it no pair to run: none of the %zu case(s) the suite "
                 "plans for it has a dtype tuple it serves under that claim (",
                 k->name, origin, kp[i].planned);
        why_claim(err, err_size, k, &cs->cases[pairs[kp[i].first].ci]);
        add(err, err_size,
            "); with its own claim it would run %zu. Narrow the claim's kernel, dtype or op glob, or claim the "
            "accumulator the kernel has (docs/claims.md)",
            kp[i].registered);
        return -1;
    }
    return 0;
}

/* The filters: 0, or -1 naming the kernels left (up to 4) in err. */
static int filters_ok(const qf_suite_cases *cs, const _qf_plan_pair *pairs, const kplan *kp, size_t nk,
                      const qf_runner_opts *o, char *err, size_t err_size)
{
    size_t i, shown = 0, runnable = 0;
    for (i = 0; i < nk; i++)
        runnable += kp[i].now;
    if (runnable || (!o->kernel_glob && !o->case_id))
        return 0;
    snprintf(err, err_size, "%s%s%s%s%s leave%s no pair to run: ", o->kernel_glob ? "--kernel " : "",
             o->kernel_glob ? o->kernel_glob : "", o->kernel_glob && o->case_id ? " and " : "",
             o->case_id ? "--case " : "", o->case_id ? o->case_id : "", o->kernel_glob && o->case_id ? "" : "s");
    for (i = 0; i < nk; i++) {
        const qf_suite_case *c;
        if (!kp[i].planned)
            continue;
        if (shown++ == 4) {
            add(err, err_size, "; ...");
            break;
        }
        c = &cs->cases[pairs[kp[i].first].ci];
        add(err, err_size, "%s%s claims no dtype tuple for %s %s", shown > 1 ? "; " : "", pairs[kp[i].first].k->name,
            kp[i].planned == 1 ? "its case's dtypes" : "the dtypes of any of its cases, such as",
            c->dtype && c->dtype->label ? c->dtype->label : "?");
    }
    add(err, err_size, " (qualify list kernels shows each kernel's tuples); nothing would be checked");
    return -1;
}

qf_status _qf_plan_check(const qf_suite_cases *cs, const _qf_plan_pair *pairs, size_t n, const qf_registry *reg,
                         const qf_runner_opts *o, char *err, size_t err_size)
{
    size_t nk = qf_registry_count(reg), i;
    kplan *kp = calloc(nk ? nk : 1, sizeof *kp);
    int bad;
    if (!kp)
        return QF_ENOMEM;
    for (i = 0; i < n; i++) {
        const qf_suite_case *c = &cs->cases[pairs[i].ci];
        kplan *p = &kp[pairs[i].kidx];
        if (!p->planned++)
            p->first = i;
        p->now += (size_t)serves(c, pairs[i].k->dtypes, pairs[i].k->n_dtypes);
        p->registered +=
            (size_t)serves(c, _qf_registry_registered_tuples(reg, pairs[i].kidx), pairs[i].k->n_dtypes);
    }
    bad = claims_ok(cs, pairs, kp, nk, reg, err, err_size) || filters_ok(cs, pairs, kp, nk, o, err, err_size);
    free(kp);
    return bad ? QF_EINVAL : QF_OK;
}
