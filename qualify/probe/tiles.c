/* tiles.c: the order of every output element at a few shapes (rows, register
 * tiles, and whether the order changes with M, N or K).
 *
 * The column reveal of tree.c puts each FPRev query in one row, so it sees
 * how the order varies with the column only.  Here each query is its own
 * call in which every row of A is the query's a and every column of B its
 * b ("broadcast"), so every element of the m x n output answers the same
 * query.  A short fingerprint of queries (pivot 0 against its first
 * neighbours and powers of two, and a few pairs elsewhere) is asked at each
 * shape; an element whose answers are those the tree of an order already
 * found predicts (the size of LCA(i, j)'s subtree) uses that order, and the
 * elements no known tree explains are grouped by fingerprint and revealed
 * by FPRev, one representative per group, in the same broadcast calls.
 * The random replay at each shape (probe.c) then checks every element.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_probe.h"

/* The fingerprint queries at k terms: (0, j) for j = 1..8 and powers of
 * two, (0, k-1), and neighbours at 1, k/3, k/2 and the end. */
static size_t fingerprint(int k, int *pairs)
{
    size_t n = 0;
    int cand[64][2], nc = 0;
    for (int j = 1; j <= 8 && j < k; j++)
        cand[nc][0] = 0, cand[nc++][1] = j;
    for (int j = 16; j < k; j *= 2)
        cand[nc][0] = 0, cand[nc++][1] = j;
    cand[nc][0] = 0, cand[nc++][1] = k - 1;
    cand[nc][0] = 1, cand[nc++][1] = 2;
    cand[nc][0] = k / 3, cand[nc++][1] = k / 3 + 1;
    cand[nc][0] = k / 2 - 1, cand[nc++][1] = k / 2;
    cand[nc][0] = k / 2, cand[nc++][1] = k / 2 + 1;
    cand[nc][0] = k - 2, cand[nc++][1] = k - 1;
    for (int c = 0; c < nc; c++) {
        int dup = cand[c][0] >= cand[c][1] || cand[c][1] >= k;
        for (size_t d = 0; d < n && !dup; d++)
            dup = pairs[2 * d] == cand[c][0] && pairs[2 * d + 1] == cand[c][1];
        if (!dup) {
            pairs[2 * n] = cand[c][0];
            pairs[2 * n + 1] = cand[c][1];
            n++;
        }
    }
    return n;
}

/* Runs of equal values of v[0 .. n) that equal `want`, as "a-b,c,d-e". */
static void ranges(const int *v, size_t n, int want, char *buf, size_t size)
{
    size_t pos = 0, i = 0;
    buf[0] = 0;
    while (i < n && pos < size) {
        size_t e;
        int w;
        if (v[i] != want) {
            i++;
            continue;
        }
        for (e = i; e + 1 < n && v[e + 1] == want; e++)
            ;
        w = e > i ? snprintf(buf + pos, size - pos, "%s%zu-%zu", pos ? "," : "", i, e)
                  : snprintf(buf + pos, size - pos, "%s%zu", pos ? "," : "", i);
        pos += w > 0 ? (size_t)w : 0;
        i = e + 1;
    }
}

void _qf_tiles_text(const qf_probe_result *r, qf_probe_shape *s)
{
    size_t m = s->m, n = s->n, pos = 0, i, j, g, ng = 0;
    int *rowcls = malloc(m * sizeof *rowcls), *colv = malloc(n * sizeof *colv);
    size_t *rep = malloc(m * sizeof *rep);
    s->text[0] = 0;
    if (!rowcls || !rep || !colv)
        goto out;
    /* rows with the same order in every column form a class */
    for (i = 0; i < m; i++) {
        for (g = 0; g < ng; g++)
            if (!memcmp(s->map + rep[g] * n, s->map + i * n, n))
                break;
        if (g == ng)
            rep[ng++] = i;
        rowcls[i] = (int)g;
    }
    for (g = 0; g < ng; g++) {
        char rows[200], cols[200];
        int uniform = 1;
        ranges(rowcls, m, (int)g, rows, sizeof rows);
        for (j = 0; j < n; j++)
            colv[j] = s->map[rep[g] * n + j], uniform &= colv[j] == colv[0];
        for (j = 0; j < n; j++) {
            int w, seen = 0;
            for (size_t j2 = 0; j2 < j; j2++)
                seen |= colv[j2] == colv[j];
            if (seen)
                continue;
            ranges(colv, n, colv[j], cols, sizeof cols);
            if (ng == 1 && uniform)
                w = snprintf(s->text + pos, sizeof s->text - pos, "all: %s", r->orders[colv[j]].text);
            else if (uniform)
                w = snprintf(s->text + pos, sizeof s->text - pos, "%srows %s: %s", pos ? "; " : "", rows,
                             r->orders[colv[j]].text);
            else
                w = snprintf(s->text + pos, sizeof s->text - pos, "%srows %s cols %s: %s", pos ? "; " : "", rows,
                             cols, r->orders[colv[j]].text);
            pos += w > 0 ? (size_t)w : 0;
            if (pos >= sizeof s->text)
                pos = sizeof s->text - 1;
        }
    }
out:
    free(rowcls);
    free(rep);
    free(colv);
}

/* The index of order o in r->orders (appended when new; -1 when full). */
static int order_index(qf_probe_result *r, const qf_probe_order *o)
{
    size_t m;
    for (m = 0; m < r->n_orders; m++)
        if (!memcmp(&r->orders[m], o, sizeof *o))
            return (int)m;
    if (m == QF_PROBE_MAX_ORDERS)
        return -1;
    r->orders[r->n_orders++] = *o;
    return (int)m;
}

static int one_shape(_qf_pb *p, qf_probe_result *r, const _qf_tree *col_trees, qf_probe_shape *s)
{
    _qf_pb q = *p;
    size_t E = s->m * s->n, nf, e, g, ngroups = 0, no = r->n_orders;
    int k = (int)s->k, rc = -1;
    int *pairs = malloc(128 * sizeof *pairs), *L = NULL, *pred = NULL, *grp = NULL;
    size_t *reps = NULL;
    _qf_tree *trees = NULL;
    if (!pairs)
        return -1;
    q.K = s->k;
    q.bm = s->m;
    q.bn = s->n;
    q.cols = E;
    q.sel = NULL;
    nf = fingerprint(k, pairs);
    L = malloc(nf * E * sizeof *L);
    pred = malloc(nf * (no + 1) * sizeof *pred);
    grp = malloc(E * sizeof *grp);
    reps = malloc(E * sizeof *reps);
    if (!L || !pred || !grp || !reps)
        goto out;
    if (_qf_tree_ask(&q, r, nf, pairs, L))
        goto fail;
    /* what each order found so far predicts at k */
    for (size_t o = 0; o < no; o++) {
        _qf_tree t;
        const _qf_tree *tp = NULL;
        int built = 0;
        if (r->orders[o].kind != QF_PROBE_ORDER_UNKNOWN) {
            built = _qf_tree_of_order(&r->orders[o], k, &t) == 0;
            tp = built ? &t : NULL;
            if (!built)
                _qf_tree_free(&t);
        } else if (s->k == p->K)
            for (size_t c = 0; c < p->cols && !tp; c++)
                if (r->col_order[c] == o)
                    tp = &col_trees[c];
        for (size_t f = 0; f < nf; f++)
            pred[o * nf + f] = tp ? _qf_tree_lca_size(tp, pairs[2 * f], pairs[2 * f + 1]) : -2;
        if (built)
            _qf_tree_free(&t);
    }
    for (e = 0; e < E; e++) {
        size_t o, f;
        for (o = 0; o < no; o++) {
            for (f = 0; f < nf && L[f * E + e] == pred[o * nf + f]; f++)
                ;
            if (f == nf)
                break;
        }
        if (o < no) {
            s->map[e] = (unsigned char)o;
            grp[e] = -1;
            continue;
        }
        /* a group of elements with this fingerprint */
        for (g = 0; g < ngroups; g++) {
            for (f = 0; f < nf && L[f * E + e] == L[f * E + reps[g]]; f++)
                ;
            if (f == nf)
                break;
        }
        if (g == ngroups)
            reps[ngroups++] = e;
        grp[e] = (int)g;
    }
    s->revealed = ngroups;
    if (ngroups) {
        trees = calloc(ngroups, sizeof *trees);
        q.cols = ngroups;
        q.sel = reps;
        if (!trees)
            goto out;
        if (_qf_tree_reveal(&q, r, trees))
            goto fail;
        for (g = 0; g < ngroups; g++) {
            qf_probe_order ord;
            int idx;
            _qf_tree_classify(&trees[g], &ord);
            if ((idx = order_index(r, &ord)) < 0) {
                snprintf(p->err, sizeof p->err, "more than %d distinct orders", QF_PROBE_MAX_ORDERS);
                goto fail;
            }
            for (e = 0; e < E; e++)
                if (grp[e] == (int)g)
                    s->map[e] = (unsigned char)idx;
        }
    }
    _qf_tiles_text(r, s);
    rc = 0;
    goto out;
fail:
    if (q.err[0])
        snprintf(p->err, sizeof p->err, "shape %zu x %zu x %zu: %.400s", s->m, s->n, s->k, q.err);
out:
    p->calls = q.calls;
    if (trees)
        for (g = 0; g < ngroups; g++)
            _qf_tree_free(&trees[g]);
    free(trees);
    free(pairs);
    free(L);
    free(pred);
    free(grp);
    free(reps);
    return rc;
}

int _qf_tiles_probe(_qf_pb *p, qf_probe_result *r, const qf_probe_opts *o, const _qf_tree *col_trees)
{
    size_t n = 0, i;
    size_t def[4][3] = {{1, p->cols, p->K}, {32, p->cols, p->K}, {96, p->cols, p->K}, {32, p->cols, 2 * p->K}};
    size_t (*sh)[3] = o->n_shapes ? (size_t(*)[3])o->shapes : def;
    size_t nsh = o->n_shapes ? o->n_shapes : (2 * p->K <= 4096 ? 4 : 3);
    for (i = 0; i < nsh && n < QF_PROBE_MAX_SHAPES; i++) {
        qf_probe_shape *s = &r->shapes[n];
        memset(s, 0, sizeof *s);
        s->m = sh[i][0];
        s->n = sh[i][1];
        s->k = sh[i][2];
        if (!s->m || !s->n || s->k < 2 || s->k > 4096 || s->m * s->n > QF_PROBE_MAX_ELEMS) {
            snprintf(p->err, sizeof p->err, "shape %zu x %zu x %zu: 1 <= M x N <= %d and 2 <= K <= 4096 are wanted",
                     s->m, s->n, s->k, QF_PROBE_MAX_ELEMS);
            return -1;
        }
        if (one_shape(p, r, col_trees, s))
            return -1;
        n++;
        r->n_shapes = n;
    }
    /* tiles: elements of one shape with different orders; shapes: the set
     * of orders used changes from one shape to another */
    for (i = 0; i < n; i++) {
        unsigned used[QF_PROBE_MAX_ORDERS] = {0}, used0[QF_PROBE_MAX_ORDERS] = {0};
        size_t nu = 0;
        for (size_t e = 0; e < r->shapes[i].m * r->shapes[i].n; e++)
            used[r->shapes[i].map[e]] = 1;
        for (size_t e = 0; e < r->shapes[0].m * r->shapes[0].n; e++)
            used0[r->shapes[0].map[e]] = 1;
        for (size_t k = 0; k < QF_PROBE_MAX_ORDERS; k++)
            nu += used[k];
        r->tile_varies |= nu > 1;
        r->shape_varies |= memcmp(used, used0, sizeof used) != 0 || strcmp(r->shapes[i].text, r->shapes[0].text);
    }
    _qf_pb_evidence(r, "shapes: broadcast calls (every element answers each query), %zu fingerprint queries at "
                       "K = %zu, each element matched to the tree of a known order or revealed",
                    fingerprint((int)p->K, (int[128]){0}), p->K);
    for (i = 0; i < n; i++)
        _qf_pb_evidence(r, "shape %zu x %zu x %zu: %.160s%s", r->shapes[i].m, r->shapes[i].n, r->shapes[i].k,
                        r->shapes[i].text, r->shapes[i].revealed ? " (classes revealed here by FPRev)" : "");
    if (r->shape_varies)
        _qf_pb_evidence(r, "the order changes with the shape: the claim's order_map holds each probed shape; "
                           "other shapes are replayed against each order of the set");
    return 0;
}
