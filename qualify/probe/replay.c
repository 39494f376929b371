/* replay.c: a claim replayed bit for bit (`qualify replay`, docs/probe.md
 * "Replay").  qf_probe_from_claim turns a claim (its arith keys and its
 * `replay` section) into the description the probe's replay evaluates;
 * qf_probe_replay_check runs the kernel on fresh random inputs and on the
 * probe's designed inputs (FPRev queries answered by every element) and
 * compares every element with that replay.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_probe.h"
#include "qf_claim.h"

/* A claim order (one qf_sum_spec, through the claim's own grammar) as the
 * probe's order; the replay details say what the claim spelling leaves out. */
static int order_of_text(const char *text, const qf_arith_claim *c, int odd_even, int halving, int lanes,
                         qf_probe_order *o)
{
    qf_arith_claim t = *c;
    int f = c->block_fma > 1 ? c->block_fma : 1;
    memset(o, 0, sizeof *o);
    if (!strcmp(text, "any")) {
        o->kind = QF_PROBE_ORDER_UNKNOWN;
        snprintf(o->text, sizeof o->text, "any");
        return 0;
    }
    if (qf_claim_set_key(&t, "order", text) != QF_OK || t.sum_order == QF_SUM_VARIES)
        return -1;
    o->fused = odd_even && f > 1 ? f / 2 : f;
    o->odd_even = odd_even && f > 1;
    switch (t.sum_order) {
    case QF_SUM_SEQUENTIAL: o->kind = QF_PROBE_ORDER_SEQUENTIAL; break;
    case QF_SUM_PAIRWISE:
        o->kind = QF_PROBE_ORDER_PAIRWISE;
        o->fused = 1;
        o->lanes_pairwise = halving ? 2 : 0;
        break;
    case QF_SUM_SPLITK:
        o->kind = QF_PROBE_ORDER_SPLIT;
        o->split = t.split_k;
        o->fused = 1;
        o->lanes_pairwise = lanes;
        break;
    case QF_SUM_BLOCKED:
        o->kind = QF_PROBE_ORDER_BLOCKED;
        o->block = t.sum_block;
        o->inner = t.sum_inner == QF_SUM_PAIRWISE ? QF_PROBE_ORDER_PAIRWISE : QF_PROBE_ORDER_SEQUENTIAL;
        if (o->inner == QF_PROBE_ORDER_PAIRWISE)
            o->fused = 1, o->odd_even = 0, o->lanes_pairwise = halving ? 2 : 0;
        break;
    default: return -1;
    }
    qf_claim_order_str(&t, o->text, sizeof o->text);
    return 0;
}

static int add_order(qf_probe_result *r, const qf_probe_order *o)
{
    for (size_t m = 0; m < r->n_orders; m++)
        if (!memcmp(&r->orders[m], o, sizeof *o))
            return (int)m;
    if (r->n_orders == QF_PROBE_MAX_ORDERS)
        return -1;
    r->orders[r->n_orders] = *o;
    return (int)r->n_orders++;
}

/* "a-b,c" into [lo, hi] runs; mark[i] = 1 for each listed i < n. */
static int parse_ranges(const char *s, const char *end, size_t n, unsigned char *mark)
{
    while (s < end) {
        char *e;
        unsigned long lo = strtoul(s, &e, 10), hi = lo;
        if (e == s)
            return -1;
        s = e;
        if (*s == '-') {
            hi = strtoul(s + 1, &e, 10);
            if (e == s + 1)
                return -1;
            s = e;
        }
        if (hi < lo || hi >= n)
            return -1;
        for (unsigned long i = lo; i <= hi; i++)
            mark[i] = 1;
        if (s < end && *s != ',')
            return -1;
        if (s < end)
            s++;
    }
    return 0;
}

/* One order_map entry: "MxNxK: all: ORDER" or "MxNxK: rows R [cols C]: ORDER; ...". */
static int parse_map(qf_probe_result *r, const qf_arith_claim *c, const char *entry, int oe, int hv, int ln)
{
    qf_probe_shape *s;
    char *e, buf[640];
    size_t m, n, k, E;
    if (r->n_shapes == QF_PROBE_MAX_SHAPES)
        return -1;
    s = &r->shapes[r->n_shapes];
    memset(s, 0, sizeof *s);
    if (sscanf(entry, "%zux%zux%zu", &m, &n, &k) != 3 || !m || !n || k < 2 || m * n > QF_PROBE_MAX_ELEMS ||
        !(e = strchr(entry, ':')))
        return -1;
    s->m = m, s->n = n, s->k = k;
    E = m * n;
    memset(s->map, 0xff, E);
    snprintf(buf, sizeof buf, "%s", e + 1);
    snprintf(s->text, sizeof s->text, "%s", e[1] == ' ' ? e + 2 : e + 1);
    for (char *item = strtok(buf, ";"); item; item = strtok(NULL, ";")) {
        unsigned char rows[QF_PROBE_MAX_ELEMS] = {0}, cols[QF_PROBE_MAX_ELEMS] = {0};
        char *colon = strrchr(item, ':'), *p = item;
        qf_probe_order o;
        int idx;
        if (!colon)
            return -1;
        *colon = 0;
        while (*p == ' ')
            p++;
        while (colon[1] == ' ')
            colon++;
        if (order_of_text(colon + 1, c, oe, hv, ln, &o) || (idx = add_order(r, &o)) < 0)
            return -1;
        if (!strncmp(p, "all", 3))
            memset(rows, 1, m), memset(cols, 1, n);
        else {
            char *cs = strstr(p, " cols ");
            if (strncmp(p, "rows ", 5) || parse_ranges(p + 5, cs ? cs : p + strlen(p), m, rows))
                return -1;
            if (cs ? parse_ranges(cs + 6, cs + strlen(cs), n, cols) : (memset(cols, 1, n), 0))
                return -1;
        }
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                if (rows[i] && cols[j])
                    s->map[i * n + j] = (unsigned char)idx;
    }
    for (size_t i = 0; i < E; i++)
        if (s->map[i] == 0xff)
            return -1; /* every element needs an order */
    r->n_shapes++;
    return 0;
}

qf_status qf_probe_from_claim(const qf_claim *cl, qf_probe_result *r, char *err, size_t err_size)
{
    const qf_arith_claim *c = &cl->arith;
    const qf_format *acc = qf_format_get(c->acc_format), *pro = qf_format_get(c->promote_format);
    int accbits = c->acc_frac_bits > 0 ? c->acc_frac_bits : acc ? acc->man_bits : 23;
    int oe = 0, hv = 0, ln = 0, lr = 0;
    char line[640];
    const char *p;
    qf_probe_order o;
    memset(r, 0, sizeof *r);
    snprintf(r->kernel, sizeof r->kernel, "%s", cl->kernel);
    snprintf(r->dtype, sizeof r->dtype, "%s", cl->dtype);
    /* the replay details */
    for (p = cl->replay; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p += len + (nl != NULL);
        if (!strncmp(line, "first_term: ", 12))
            lr = !strcmp(line + 12, "rounded") ? 1 : !strcmp(line + 12, "both_rounded") ? 2 : 0;
        else if (!strncmp(line, "odd_even: ", 10))
            oe = atoi(line + 10);
        else if (!strncmp(line, "pairwise: ", 10))
            hv = !strcmp(line + 10, "halving");
        else if (!strncmp(line, "split_lanes: ", 13))
            ln = !strcmp(line + 13, "pairwise");
    }
    /* the claim's orders first (order_map entries may add `any`) */
    if (c->sum_order == QF_SUM_VARIES) {
        for (int i = 0; i < c->n_varies; i++) {
            qf_arith_claim one = *c;
            char t[64];
            one.sum_order = c->sum_varies[i].order;
            one.split_k = c->sum_varies[i].param;
            one.sum_block = c->sum_varies[i].param;
            one.sum_inner = c->sum_varies[i].inner;
            qf_claim_order_str(&one, t, sizeof t);
            if (order_of_text(t, c, oe, hv, ln, &o) || add_order(r, &o) < 0)
                goto bad;
        }
    } else {
        char t[64];
        qf_claim_order_str(c, t, sizeof t);
        if (order_of_text(c->sum_order == QF_SUM_ANY ? "any" : t, c, oe, hv, ln, &o) || add_order(r, &o) < 0)
            goto bad;
    }
    for (p = cl->replay; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p += len + (nl != NULL);
        if (!strncmp(line, "order_map: ", 11) && parse_map(r, c, line + 11, oe, hv, ln)) {
            snprintf(err, err_size, "replay order_map '%s': not 'MxNxK: rows R[ cols C]: ORDER; ...' covering every "
                                    "element (docs/claims.md \"Replay details\")",
                     line + 11);
            return QF_EPARSE;
        }
    }
    r->order = r->orders[0];
    r->varies = r->n_orders > 1;
    /* the arithmetic (docs/claims.md "Replay details": with truncating
     * alignment, acc_frac_bits + guard_bits is the alignment width and the
     * block's sum rounds to the accumulator format) */
    if (c->align_truncates && c->block_fma > 1) {
        r->align = c->align_round == QF_ALIGN_FLOOR     ? QF_PROBE_ALIGN_FLOOR
                   : c->align_round == QF_ALIGN_NEAREST ? QF_PROBE_ALIGN_NEAREST
                                                        : QF_PROBE_ALIGN_TRUNCATE;
        r->align_frac_bits = accbits + c->guard_bits;
        r->acc_frac_bits = acc ? acc->man_bits : 23;
    } else
        r->acc_frac_bits = accbits;
    r->acc_frac_min = r->acc_frac_bits;
    r->acc_round = c->acc_round;
    r->acc_round_known = 1;
    r->product_frac_bits = c->product_frac_bits;
    r->fma = c->fma == QF_FMA_UNFUSED ? 0 : 1;
    r->flush_in = r->flush_out = c->flush_subnormals;
    r->leaf_round = lr;
    if (c->promote_interval > 0) {
        r->outer = 1;
        r->outer_acc = pro ? pro->man_bits : 23;
        r->outer_round = QF_ROUND_RNE;
    }
    snprintf(r->order_claim, sizeof r->order_claim, "%s", r->order.text);
    return QF_OK;
bad:
    snprintf(err, err_size, "the claim's order cannot be replayed (more than %d orders, or a nested varies)",
             QF_PROBE_MAX_ORDERS);
    return QF_EPARSE;
}

static const char *bits_of(const qf_format *f, const double *v, size_t n, size_t stride, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = 0;
    for (size_t l = 0; l < n && l < 4 && pos < size; l++) {
        int w = snprintf(buf + pos, size - pos, "%s0x%0*llx", l ? " " : "", f->storage_bits / 4,
                         (unsigned long long)qf_format_encode(f, v[l * stride], QF_ROUND_RNE, 0, 0, 0));
        pos += w > 0 ? (size_t)w : 0;
    }
    if (n > 4 && pos < size)
        snprintf(buf + pos, size - pos, " ...");
    return buf;
}

/* Compare one call's outputs with the replay; 1 when every element matches. */
static int compare(const qf_probe_result *r, const _qf_pb *p, size_t m, size_t n, size_t k, const double *a,
                   const double *b, const double *got, int any_of, qf_probe_replay_report *rep, const char *what)
{
    double *col = malloc(k * sizeof *col);
    const qf_probe_shape *s = qf_probe_find_shape(r, m, n, k);
    if (!col)
        return 0;
    double *row = malloc(k * sizeof *row);
    if (!row) {
        free(col);
        return 0;
    }
    for (size_t j = 0; j < n; j++) {
        for (size_t l = 0; l < k; l++)
            col[l] = b[l * n + j];
        _qf_pb_flush_in(r, p->fb, col, k);
        for (size_t i = 0; i < m; i++) {
            double want = NAN, g = got[i * n + j];
            const double *ai = row;
            int ok = 0;
            memcpy(row, a + i * k, k * sizeof *row);
            _qf_pb_flush_in(r, p->fa, row, k);
            if (s || !any_of) {
                want = qf_probe_replay_elem(r, m, n, k, i, j, ai, col);
                want = qf_format_decode(p->fo, qf_format_encode(p->fo, want, QF_ROUND_RNE, 0, 0, 0));
                ok = want == g || (isnan(want) && isnan(g) && !isnan(qf_probe_replay_elem(r, m, n, k, i, j, ai, col)));
            } else
                for (size_t o = 0; o < r->n_orders && !ok; o++) {
                    qf_probe_result t = *r;
                    t.n_shapes = 0;
                    t.n_orders = 1;
                    t.orders[0] = r->orders[o];
                    memset(t.col_order, 0, sizeof t.col_order);
                    want = qf_probe_replay_elem(&t, m, n, k, i, j, ai, col);
                    want = qf_format_decode(p->fo, qf_format_encode(p->fo, want, QF_ROUND_RNE, 0, 0, 0));
                    ok = want == g;
                }
            rep->checked++;
            if (ok)
                continue;
            if (!rep->failed++) {
                char ab[96], bb[96];
                snprintf(rep->first, sizeof rep->first,
                         "%s %zu x %zu x %zu: element (%zu, %zu) (order %s): got %.9g, expected %.9g; row %zu of A: %s; "
                         "column %zu of B: %s",
                         what, m, n, k, i, j,
                         s ? r->orders[s->map[i * n + j]].text : any_of ? "each of the set" : r->orders[0].text, g,
                         want, i, bits_of(p->fa, a + i * k, k, 1, ab, sizeof ab), j,
                         bits_of(p->fb, col, k, 1, bb, sizeof bb));
            }
        }
    }
    free(col);
    free(row);
    return 1;
}

qf_status qf_probe_replay_check(const qf_registry *reg, const char *kernel, const char *dtype,
                                const qf_probe_result *r, size_t m, size_t n, size_t k, uint64_t seed, size_t cases,
                                qf_probe_replay_report *rep, char *err, size_t err_size)
{
    _qf_pb p;
    qf_status st;
    size_t E = m * n, q;
    double *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *got = malloc(E * sizeof *got);
    int any_of = !qf_probe_find_shape(r, m, n, k) && r->n_orders > 1;
    memset(rep, 0, sizeof *rep);
    memset(&p, 0, sizeof p);
    if (!a || !b || !got) {
        st = QF_ENOMEM;
        goto out;
    }
    if ((st = _qf_pb_open(&p, reg, kernel, dtype && *dtype ? dtype : NULL)) != QF_OK) {
        snprintf(err, err_size, "%s", p.err);
        goto out;
    }
    p.K = k;
    p.timeout_s = 60;
    p.threads = 1;
    rep->any_of = any_of;
    /* fresh random inputs: normal-ish values of mixed binades */
    for (q = 0; q < cases; q++) {
        double *pa = a, *pb = b, *pg = got;
        for (size_t i = 0; i < m * k; i++) {
            uint64_t u = qf_rng_u64(seed + q, i);
            double v = ldexp(((double)(u >> 11) * 0x1p-53) * 2 - 1, (int)(u % 7) - 3);
            a[i] = qf_format_decode(p.fa, qf_format_encode(p.fa, v, QF_ROUND_RNE, 1, 0, 0));
        }
        for (size_t i = 0; i < k * n; i++) {
            uint64_t u = qf_rng_u64((seed + q) ^ 0xb, i);
            double v = ldexp(((double)(u >> 11) * 0x1p-53) * 2 - 1, (int)(u % 5) - 2);
            b[i] = qf_format_decode(p.fb, qf_format_encode(p.fb, v, QF_ROUND_RNE, 1, 0, 0));
        }
        if (_qf_pb_full(&p, 1, &m, n, (const double *const *)&pa, (const double *const *)&pb, 1, &pg)) {
            snprintf(err, err_size, "%s", p.err);
            st = QF_EINVAL;
            goto out;
        }
        compare(r, &p, m, n, k, a, b, got, any_of, rep, "random");
        rep->calls++;
    }
    /* designed inputs: the FPRev queries (pivot 0 against 1, 2, k/2, k-1;
     * neighbours at k/2), answered by every element in broadcast calls */
    {
        int pairs[10] = {0, 1, 0, 2, 0, (int)k / 2, 0, (int)k - 1, (int)k / 2 - 1, (int)k / 2};
        qf_probe_result dummy;
        _qf_pb q2 = p;
        double *qa = malloc(5 * k * sizeof *qa), *qb = malloc(5 * k * sizeof *qb), *res = malloc(5 * E * sizeof *res);
        memset(&dummy, 0, sizeof dummy);
        q2.bm = m;
        q2.bn = n;
        q2.cols = E;
        q2.sel = NULL;
        if (qa && qb && res && k >= 4 && _qf_tree_design(&q2, &dummy, 5, pairs, qa, qb) == 0 &&
            _qf_pb_eval(&q2, 5, qa, qb, 0, 1, res) == 0) {
            for (size_t d = 0; d < 5; d++) {
                double *A = malloc(m * k * sizeof *A), *B = malloc(k * n * sizeof *B);
                if (!A || !B) {
                    free(A), free(B);
                    break;
                }
                for (size_t i = 0; i < m; i++)
                    memcpy(A + i * k, qa + d * k, k * sizeof *A);
                for (size_t l = 0; l < k; l++)
                    for (size_t j = 0; j < n; j++)
                        B[l * n + j] = qb[d * k + l];
                compare(r, &p, m, n, k, A, B, res + d * E, any_of, rep, "designed");
                free(A), free(B);
            }
            rep->calls += 5;
        } else if (q2.err[0]) {
            snprintf(err, err_size, "%s", q2.err);
            st = QF_EINVAL;
        }
        free(qa), free(qb), free(res);
    }
out:
    free(a), free(b), free(got);
    return st;
}
