/* runner_shard.c: the slice of a sweep's pairs that one shard runs
 * (qualify run --shard I/N; docs/cluster.md).  The slice is a pure
 * function of the plan: the pairs' estimated costs (integers, from the
 * case alone) and a longest-processing-time assignment with a stable
 * tiebreak, so every machine, every --jobs and every shard of the same
 * sweep computes the same partition. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_runner.h"

/* Fixed cost of any pair, in the cost unit (a microsecond of one pair's
 * wall time on the machine the weights were fitted on): the pair's
 * process, the kernel server round trip, the inputs and the record. */
#define PAIR_BASE 15000u

/* Cost units per unit of work (the product of the case's dimensions:
 * multiply-adds for GEMM and attention, elements for the row ops), in
 * 1/1024.  Least-squares fits of wall_s = base + weight * work per op over
 * the 2007 pairs of shapes/kernels.yaml at --jobs 2 (docs/cluster.md "How
 * the slice is chosen"): the MPFR row references cost microseconds per
 * element, the exact GEMM engine a fraction of one per multiply-add. */
static uint64_t op_weight(qf_suite_op op)
{
    /* By name: an op newer than the enum's constants has none. */
    static const struct {
        const char *op;
        uint64_t w;
    } table[] = {
        {"gemm", 208},         /* 0.20 us per multiply-add */
        {"attention", 44},     /* 0.043 us (references on sampled rows) */
        {"l2norm", 15700},     /* 15 us per element */
        {"moe_router", 40000}, /* 39 us per token x expert */
    };
    const char *name = qf_suite_op_name(op);
    size_t i;
    for (i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(name, table[i].op))
            return table[i].w;
    return 5120; /* 5 us per element: the other row ops */
}

uint64_t qf_runner_pair_cost(const qf_suite_case *c)
{
    uint64_t work = 1, w;
    size_t i;
    for (i = 0; i < c->ndims; i++) {
        uint64_t d = c->dims[i] ? c->dims[i] : 1;
        work = work > UINT64_MAX / d ? UINT64_MAX : work * d;
    }
    w = op_weight(c->op);
    work = work > UINT64_MAX / w ? UINT64_MAX / 1024 : work * w / 1024;
    return work > UINT64_MAX - PAIR_BASE ? UINT64_MAX : work + PAIR_BASE;
}

typedef struct by_cost {
    uint64_t cost, tie;
    size_t idx;
} by_cost;

/* SplitMix64's finalizer (Steele, Lea, Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014): a fixed scramble of the
 * plan index. */
static uint64_t scramble(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Dearest first.  Equal costs (the same case with each of its kernels)
 * in a scrambled but fixed order: in plan order they would go round the
 * shards in step, and kernel k of every case would land on shard k mod N,
 * so one shard would get every slow kernel the estimate cannot see. */
static int cost_cmp(const void *a, const void *b)
{
    const by_cost *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? 1 : -1;
    if (x->tie != y->tie)
        return x->tie < y->tie ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

qf_status qf_runner_shard_assign(const uint64_t *cost, size_t n, unsigned nshards, unsigned *shard_of,
                                 uint64_t *load)
{
    by_cost *order;
    uint64_t *ld;
    size_t i;
    unsigned s;
    if ((!cost && n) || (!shard_of && n) || nshards == 0)
        return QF_EINVAL;
    order = malloc((n ? n : 1) * sizeof *order);
    ld = calloc(nshards, sizeof *ld);
    if (!order || !ld) {
        free(order);
        free(ld);
        return QF_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        order[i].cost = cost[i];
        order[i].tie = scramble(i);
        order[i].idx = i;
    }
    qsort(order, n, sizeof *order, cost_cmp);
    /* Greedy LPT: each pair to the least loaded shard, the lowest index
     * among equals.  Within 4/3 of the best partition (Graham 1969). */
    for (i = 0; i < n; i++) {
        unsigned best = 0;
        for (s = 1; s < nshards; s++)
            if (ld[s] < ld[best])
                best = s;
        shard_of[order[i].idx] = best;
        ld[best] = ld[best] > UINT64_MAX - order[i].cost ? UINT64_MAX : ld[best] + order[i].cost;
    }
    if (load)
        memcpy(load, ld, nshards * sizeof *ld);
    free(order);
    free(ld);
    return QF_OK;
}

int qf_runner_parse_shard(const char *s, unsigned *index, unsigned *count)
{
    unsigned long i, n;
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    i = strtoul(s, &end, 10);
    if (errno || *end != '/' || end[1] < '0' || end[1] > '9')
        return -1;
    n = strtoul(end + 1, &end, 10);
    if (errno || *end || n < 1 || n > QF_RUNNER_MAX_SHARDS || i >= n)
        return -1;
    *index = (unsigned)i;
    *count = (unsigned)n;
    return 0;
}

qf_status _qf_shard_select(const qf_suite_cases *cs, _qf_plan_pair *pairs, size_t *npairs,
                           const qf_runner_opts *o, json_t **hdr)
{
    size_t n = *npairs, i, kept = 0;
    uint64_t *cost = malloc((n ? n : 1) * sizeof *cost);
    unsigned *shard_of = malloc((n ? n : 1) * sizeof *shard_of);
    json_t *list = json_array(), *shard;
    qf_status st = QF_ENOMEM;
    *hdr = json_is_object(o->header) ? json_deep_copy(o->header) : json_object();
    if (!cost || !shard_of || !list || !*hdr)
        goto out;
    for (i = 0; i < n; i++)
        cost[i] = qf_runner_pair_cost(&cs->cases[pairs[i].ci]);
    if ((st = qf_runner_shard_assign(cost, n, o->shard_count, shard_of, NULL)) != QF_OK)
        goto out;
    st = QF_ENOMEM;
    /* The shard's pairs by plan index, so that a merge restores plan order
     * and finds the pairs a killed shard never finished. */
    for (i = 0; i < n; i++) {
        if (shard_of[i] != o->shard_index)
            continue;
        if (json_array_append_new(
                list, json_pack("[I, s, s]", (json_int_t)i, pairs[i].k->name, cs->cases[pairs[i].ci].id)))
            goto out;
        pairs[kept++] = pairs[i];
    }
    shard = json_object_get(*hdr, "shard");
    if (!json_is_object(shard)) {
        shard =
            json_pack("{s:I, s:I}", "index", (json_int_t)o->shard_index, "count", (json_int_t)o->shard_count);
        if (json_object_set_new(*hdr, "shard", shard))
            goto out;
    }
    if (json_object_set_new(shard, "plan_pairs", json_integer((json_int_t)n)) ||
        json_object_set(shard, "pairs", list))
        goto out;
    *npairs = kept;
    st = QF_OK;
out:
    json_decref(list);
    free(cost);
    free(shard_of);
    if (st != QF_OK) {
        json_decref(*hdr);
        *hdr = NULL;
    }
    return st;
}

/* One member's value for a message: a string as it is (a SHA-256 cut to
 * its first 12 digits, a list of them as their count and the first),
 * null as "none", anything else as compact JSON. */
static void value_text(const json_t *v, int hash, char *buf, size_t size)
{
    char *j;
    if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v)))
        snprintf(buf, size, "none");
    else if (hash && json_is_array(v))
        snprintf(buf, size, "%zu file(s): %.12s...%s", json_array_size(v),
                 json_string_value(json_array_get(v, 0)) ? json_string_value(json_array_get(v, 0)) : "?",
                 json_array_size(v) > 1 ? ", ..." : "");
    else if (json_is_string(v))
        snprintf(buf, size, hash ? "%.12s..." : "'%s'", json_string_value(v));
    else if ((j = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)) != NULL) {
        snprintf(buf, size, "%s", j);
        free(j);
    } else
        snprintf(buf, size, "?");
}

/* What differs between the sweep identities a (the journal's) and b (this
 * run's), "; "-separated into buf. */
static void sweep_diff(const json_t *a, const json_t *b, char *buf, size_t size)
{
    static const struct {
        const char *key, *what;
        int option, hash;
    } m[] = {
        {"suite", "the suite's name", 0, 0},
        {"suite_sha256", "the suite file (SHA-256)", 0, 1},
        {"kernels_sha256", "the registered kernels (built-ins, plugins, adapters, workers; SHA-256 of their names)",
         0, 1},
        {"qualify_version", "qualify's version", 0, 0},
        {"claims", "the claim files (--claim and the suite's claims:, SHA-256 of each)", 1, 1},
        {"seed", "--seed", 1, 0},
        {"kernel", "--kernel", 1, 0},
        {"case", "--case", 1, 0},
        {"no_refute", "--no-refute", 1, 0},
        {"timeout_s", "--timeout", 1, 0},
        {"max_case_memory", "--max-case-memory", 1, 0},
    };
    size_t i, n = 0;
    buf[0] = '\0';
    for (i = 0; i < sizeof m / sizeof m[0]; i++) {
        const json_t *x = json_object_get(m[i].option ? json_object_get(a, "options") : a, m[i].key);
        const json_t *y = json_object_get(m[i].option ? json_object_get(b, "options") : b, m[i].key);
        char vx[96], vy[96];
        size_t len = strlen(buf);
        if ((!x && !y) || (x && y && json_equal((json_t *)x, (json_t *)y)))
            continue;
        value_text(x, m[i].hash, vx, sizeof vx);
        value_text(y, m[i].hash, vy, sizeof vy);
        if (len + 1 < size)
            snprintf(buf + len, size - len, "%s%s: %s in the journal, %s now", n++ ? "; " : "", m[i].what, vx, vy);
    }
    if (!n)
        snprintf(buf, size, "its identity differs");
}

int _qf_shard_resume_ok(const json_t *old, const json_t *hdr, const char *path, char *err, size_t err_size)
{
    const json_t *a = json_object_get(old, "shard"), *b = json_object_get(hdr, "shard");
    const json_t *sa = a ? json_object_get(a, "sweep") : json_object_get(old, "sweep");
    const json_t *sb = b ? json_object_get(b, "sweep") : json_object_get(hdr, "sweep");
    char diff[1024] = "";
    if (!a && !b) {
        /* an unsharded sweep: the same identity, when this run states one */
        if (!sb || (sa && json_equal((json_t *)sa, (json_t *)sb)))
            return 0;
        if (!sa)
            snprintf(err, err_size,
                     "%s: the journal names no sweep (a journal of an older qualify, or not one qualify run "
                     "wrote): resuming it could mix two sweeps' records; run without --resume to start afresh",
                     path);
        else {
            sweep_diff(sa, sb, diff, sizeof diff);
            snprintf(err, err_size,
                     "%s: the journal is of another sweep: %s; resume it with the same suite, kernels, claim files "
                     "and options, or run without --resume to start afresh",
                     path, diff);
        }
        return -1;
    }
    if (a && b && json_equal((json_t *)a, (json_t *)b))
        return 0;
    if (a && b)
        sweep_diff(sa, sb, diff, sizeof diff);
    if (!b)
        snprintf(err, err_size,
                 "%s: the journal is shard %lld/%lld of a sweep; resume it with the same --shard", path,
                 (long long)json_integer_value(json_object_get(a, "index")),
                 (long long)json_integer_value(json_object_get(a, "count")));
    else if (!a)
        snprintf(err, err_size, "%s: the journal is of an unsharded sweep; resume it without --shard", path);
    else
        snprintf(err, err_size,
                 "%s: the journal is shard %lld/%lld of a sweep, not this shard %lld/%lld of this sweep "
                 "(suite, kernels, qualify version and the options that change results must be the same%s%s)",
                 path, (long long)json_integer_value(json_object_get(a, "index")),
                 (long long)json_integer_value(json_object_get(a, "count")),
                 (long long)json_integer_value(json_object_get(b, "index")),
                 (long long)json_integer_value(json_object_get(b, "count")), json_equal((json_t *)sa, (json_t *)sb) ? "" : ": ",
                 json_equal((json_t *)sa, (json_t *)sb) ? "" : diff);
    return -1;
}
