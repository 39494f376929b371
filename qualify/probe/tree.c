/* tree.c: the summation tree of a dot product by FPRev, and its name.
 *
 * FPRev (Xie, Gao, Xue, "Revealing floating-point accumulation orders in
 * software/hardware implementations", 2024/2025): with x_i = +M, x_j = -M
 * and every other term 1 (M large enough that M + any partial sum of ones
 * rounds back to M), the ones inside the subtree of LCA(i, j) are swamped
 * and cancel with M, the others are added exactly afterwards: the output
 * counts the leaves outside that subtree, so K - output is the size of
 * LCA(i, j)'s subtree.  With a pivot i, the sizes L(i, j) for every j group
 * the leaves by the ancestor of i where they join; each group is one or
 * more child subtrees of that ancestor (more than one: a fused node of a
 * matrix unit), told apart by L(j0, j') < L(ancestor), and revealed in
 * turn.  The queries of one round are independent, so they go into one
 * kernel call: query (i, j) is one row of A, and every column of the call
 * answers it for its own output element (the trees of all columns at once).
 *
 * Naming: the revealed tree is compared with the trees each named order
 * (sequential, pairwise, split(S), blocked(B, inner), with fused nodes and
 * the odd/even grouping) builds over K leaves, as sets of leaf sets.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_probe.h"

/* ---- Trees ------------------------------------------------------------------ */

void _qf_tree_free(_qf_tree *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->ch[i]);
    free(t->leaf);
    free(t->nch);
    free(t->ch);
    free(t->size);
    memset(t, 0, sizeof *t);
}

static int tree_init(_qf_tree *t, int K)
{
    memset(t, 0, sizeof *t);
    t->K = K;
    t->cap = 2 * K + 8;
    t->leaf = malloc((size_t)t->cap * sizeof *t->leaf);
    t->nch = calloc((size_t)t->cap, sizeof *t->nch);
    t->ch = calloc((size_t)t->cap, sizeof *t->ch);
    t->size = malloc((size_t)t->cap * sizeof *t->size);
    if (!t->leaf || !t->nch || !t->ch || !t->size)
        return -1;
    for (int i = 0; i < K; i++) {
        t->leaf[i] = i;
        t->size[i] = 1;
    }
    t->n = K;
    t->root = K == 1 ? 0 : -1;
    return 0;
}

static int new_node(_qf_tree *t)
{
    if (t->n == t->cap) {
        int c = 2 * t->cap;
        int *l = realloc(t->leaf, (size_t)c * sizeof *l), *nc, **ch, *sz;
        if (!l)
            return -1;
        t->leaf = l;
        if (!(nc = realloc(t->nch, (size_t)c * sizeof *nc)))
            return -1;
        t->nch = nc;
        if (!(ch = realloc(t->ch, (size_t)c * sizeof *ch)))
            return -1;
        t->ch = ch;
        if (!(sz = realloc(t->size, (size_t)c * sizeof *sz)))
            return -1;
        t->size = sz;
        t->cap = c;
    }
    t->leaf[t->n] = -1;
    t->nch[t->n] = 0;
    t->ch[t->n] = NULL;
    t->size[t->n] = 0;
    return t->n++;
}

static int add_child(_qf_tree *t, int v, int c)
{
    int *n = realloc(t->ch[v], (size_t)(t->nch[v] + 1) * sizeof *n);
    if (!n)
        return -1;
    t->ch[v] = n;
    n[t->nch[v]++] = c;
    /* A child not made yet (a copy made in index order reaches parents
     * first) has no size: the copy's fix_sizes sums them afterwards. */
    if (c < t->n)
        t->size[v] += t->size[c];
    return 0;
}

int _qf_tree_min_leaf(const _qf_tree *t, int v)
{
    int m = t->K;
    if (t->leaf[v] >= 0)
        return t->leaf[v];
    for (int i = 0; i < t->nch[v]; i++) {
        int x = _qf_tree_min_leaf(t, t->ch[v][i]);
        if (x < m)
            m = x;
    }
    return m;
}

int _qf_tree_top_node(const _qf_tree *t, int min_children)
{
    int best = -1;
    for (int v = t->K; v < t->n; v++)
        if (t->nch[v] >= min_children && (best < 0 || t->size[v] > t->size[best]))
            best = v;
    return best;
}

int _qf_tree_leafy_node(const _qf_tree *t)
{
    /* the highest node with a leaf child: its value reaches the root through additions of zeros */
    int best = -1;
    for (int v = t->K; v < t->n; v++)
        for (int i = 0; i < t->nch[v]; i++)
            if (t->leaf[t->ch[v][i]] >= 0 && (best < 0 || t->size[v] > t->size[best]))
                best = v;
    return best;
}

/* ---- Builders of named orders --------------------------------------------- */

/* A node over items (node ids); one item is returned as is. */
static int node_of(_qf_tree *t, const int *items, int n)
{
    int v;
    if (n == 1)
        return items[0];
    if ((v = new_node(t)) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (add_child(t, v, items[i]))
            return -1;
    return v;
}

/* Running sum over items, f items per fused node (f = 1: two-term additions). */
static int gen_seq(_qf_tree *t, const int *items, int n, int f)
{
    int first = f > 1 ? f : 2, acc, i;
    int buf[1025];
    if (n <= 0 || f > 1024)
        return -1;
    acc = node_of(t, items, n < first ? n : first);
    for (i = n < first ? n : first; i < n && acc >= 0; i += f) {
        int m = n - i < f ? n - i : f;
        buf[0] = acc;
        memcpy(buf + 1, items + i, (size_t)m * sizeof *items);
        acc = node_of(t, buf, m + 1);
    }
    return acc;
}

/* Pairwise: variant 0 pairs neighbours level by level (an odd last item
 * moves up), variant 1 halves recursively (left half n / 2). */
static int gen_pair(_qf_tree *t, const int *items, int n, int variant)
{
    if (n == 1)
        return items[0];
    if (variant == 1) {
        int h = n / 2, l = gen_pair(t, items, h, 1), r = gen_pair(t, items + h, n - h, 1), two[2];
        two[0] = l;
        two[1] = r;
        return l < 0 || r < 0 ? -1 : node_of(t, two, 2);
    }
    int *w = malloc((size_t)n * sizeof *w), m = n, v;
    if (!w)
        return -1;
    memcpy(w, items, (size_t)n * sizeof *w);
    while (m > 1) {
        for (int i = 0; i < m / 2; i++)
            if ((w[i] = node_of(t, w + 2 * i, 2)) < 0) {
                free(w);
                return -1;
            }
        if (m % 2)
            w[m / 2] = w[m - 1];
        m = (m + 1) / 2;
    }
    v = w[0];
    free(w);
    return v;
}

/* The inner order of a block (or the whole): SEQ with o->fused, odd/even, pairwise. */
static int gen_inner(_qf_tree *t, const qf_probe_order *o, qf_probe_order_kind kind, int *items, int n)
{
    if (kind == QF_PROBE_ORDER_PAIRWISE)
        return gen_pair(t, items, n, o->lanes_pairwise > 1);
    if (o->odd_even && o->fused > 1) {
        /* each group of 2f: its even-indexed items, then its odd ones */
        int g = 2 * o->fused, tmp[2048];
        if (g > 2048)
            return -1;
        for (int s = 0; s < n; s += g) {
            int m = n - s < g ? n - s : g, c = 0;
            for (int i = 0; i < m; i += 2)
                tmp[c++] = items[s + i];
            for (int i = 1; i < m; i += 2)
                tmp[c++] = items[s + i];
            memcpy(items + s, tmp, (size_t)m * sizeof *items);
        }
    }
    return gen_seq(t, items, n, o->fused > 0 ? o->fused : 1);
}

int _qf_tree_of_order(const qf_probe_order *o, int K, _qf_tree *t)
{
    int *items, r = -1;
    if (tree_init(t, K))
        return -1;
    if (K == 1)
        return 0;
    items = malloc((size_t)K * sizeof *items);
    if (!items)
        return -1;
    for (int i = 0; i < K; i++)
        items[i] = i;
    switch (o->kind) {
    case QF_PROBE_ORDER_SEQUENTIAL:
    case QF_PROBE_ORDER_PAIRWISE: r = gen_inner(t, o, o->kind, items, K); break;
    case QF_PROBE_ORDER_SPLIT: {
        int S = o->split, nl = 0, *lanes = malloc((size_t)S * sizeof *lanes), *li = malloc((size_t)K * sizeof *li);
        if (!lanes || !li || S < 2) {
            free(lanes);
            free(li);
            break;
        }
        for (int s = 0; s < S && s < K; s++) {
            int m = 0;
            for (int l = s; l < K; l += S)
                li[m++] = l;
            lanes[nl++] = gen_seq(t, li, m, 1);
        }
        r = o->lanes_pairwise ? gen_pair(t, lanes, nl, 0) : gen_seq(t, lanes, nl, 1);
        free(lanes);
        free(li);
        break;
    }
    case QF_PROBE_ORDER_BLOCKED: {
        int B = o->block, nb = 0, *blocks = malloc((size_t)(K / (B > 0 ? B : 1) + 2) * sizeof *blocks);
        if (!blocks || B < 1)
            break;
        for (int s = 0; s < K; s += B)
            blocks[nb++] = gen_inner(t, o, o->inner, items + s, K - s < B ? K - s : B);
        r = gen_seq(t, blocks, nb, 1);
        free(blocks);
        break;
    }
    default: break;
    }
    free(items);
    t->root = r;
    return r < 0 ? -1 : 0;
}

/* ---- Comparing trees ------------------------------------------------------- */

static uint64_t zob(int leaf)
{
    uint64_t z = (uint64_t)leaf * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t sig_node(const _qf_tree *t, int v, uint64_t *out, int *n)
{
    uint64_t h = 0;
    if (t->leaf[v] >= 0)
        return zob(t->leaf[v]);
    for (int i = 0; i < t->nch[v]; i++)
        h += sig_node(t, t->ch[v][i], out, n);
    out[(*n)++] = h * 31 + (uint64_t)t->nch[v] * 0x100000001B3ull;
    return h;
}

/* Sorted signatures of the internal nodes reachable from the root (count in *n). */
static uint64_t *signature(const _qf_tree *t, int *n)
{
    uint64_t *s = malloc((size_t)(t->n + 1) * sizeof *s);
    *n = 0;
    if (!s || t->root < 0)
        return s;
    sig_node(t, t->root, s, n);
    qsort(s, (size_t)*n, sizeof *s, cmp_u64);
    return s;
}

static int same_as(const uint64_t *sig, int n, const qf_probe_order *o, int K)
{
    _qf_tree c;
    int m, eq = 0;
    uint64_t *s;
    if (_qf_tree_of_order(o, K, &c)) {
        _qf_tree_free(&c);
        return 0;
    }
    s = signature(&c, &m);
    eq = s && m == n && !memcmp(s, sig, (size_t)n * sizeof *s);
    free(s);
    _qf_tree_free(&c);
    return eq;
}

static void order_text(qf_probe_order *o)
{
    const char *in = o->inner == QF_PROBE_ORDER_PAIRWISE ? "pairwise" : "sequential";
    switch (o->kind) {
    case QF_PROBE_ORDER_SEQUENTIAL: snprintf(o->text, sizeof o->text, "sequential"); break;
    case QF_PROBE_ORDER_PAIRWISE: snprintf(o->text, sizeof o->text, "pairwise"); break;
    case QF_PROBE_ORDER_SPLIT: snprintf(o->text, sizeof o->text, "split(%d)", o->split); break;
    case QF_PROBE_ORDER_BLOCKED: snprintf(o->text, sizeof o->text, "blocked(%d, %s)", o->block, in); break;
    default: snprintf(o->text, sizeof o->text, "any"); break;
    }
}

void _qf_tree_classify(const _qf_tree *t, qf_probe_order *out)
{
    int n, K = t->K, fs[4] = {1, 0, 0, 0}, nf = 1, mlc = 0;
    uint64_t *sig = signature(t, &n);
    qf_probe_order o;
    memset(out, 0, sizeof *out);
    out->kind = QF_PROBE_ORDER_UNKNOWN;
    out->fused = 1;
    snprintf(out->text, sizeof out->text, "any");
    if (!sig)
        return;
    /* fused widths to try: the most leaf children of a node, and one less */
    for (int v = K; v < t->n; v++) {
        int lc = 0;
        for (int i = 0; i < t->nch[v]; i++)
            lc += t->leaf[t->ch[v][i]] >= 0;
        if (lc > mlc)
            mlc = lc;
    }
    if (mlc > 2)
        fs[nf++] = mlc;
    if (mlc > 3)
        fs[nf++] = mlc - 1;
#define TRY(...)                                                                                             \
    do {                                                                                                     \
        memset(&o, 0, sizeof o);                                                                             \
        o = (qf_probe_order){__VA_ARGS__};                                                                   \
        if (same_as(sig, n, &o, K)) {                                                                        \
            *out = o;                                                                                        \
            order_text(out);                                                                                 \
            free(sig);                                                                                       \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)
    for (int i = 0; i < nf; i++)
        TRY(.kind = QF_PROBE_ORDER_SEQUENTIAL, .fused = fs[i]);
    for (int i = 1; i < nf; i++)
        if (fs[i] % 2 == 0 || 1)
            TRY(.kind = QF_PROBE_ORDER_SEQUENTIAL, .fused = fs[i], .odd_even = 1);
    TRY(.kind = QF_PROBE_ORDER_PAIRWISE, .fused = 1);
    TRY(.kind = QF_PROBE_ORDER_PAIRWISE, .fused = 1, .lanes_pairwise = 2);
    for (int S = 2; S < K && S <= 256; S *= 2) {
        TRY(.kind = QF_PROBE_ORDER_SPLIT, .split = S, .fused = 1);
        TRY(.kind = QF_PROBE_ORDER_SPLIT, .split = S, .fused = 1, .lanes_pairwise = 1);
    }
    for (int B = 2; B < K; B++) {
        for (int i = 0; i < nf; i++) {
            TRY(.kind = QF_PROBE_ORDER_BLOCKED, .block = B, .inner = QF_PROBE_ORDER_SEQUENTIAL, .fused = fs[i]);
            if (i)
                TRY(.kind = QF_PROBE_ORDER_BLOCKED, .block = B, .inner = QF_PROBE_ORDER_SEQUENTIAL,
                    .fused = fs[i], .odd_even = 1);
        }
        TRY(.kind = QF_PROBE_ORDER_BLOCKED, .block = B, .inner = QF_PROBE_ORDER_PAIRWISE, .fused = 1);
    }
#undef TRY
    free(sig);
}

/* ---- Text ------------------------------------------------------------------- */

static void text_node(const _qf_tree *t, int v, int depth, char *buf, size_t size, size_t *pos)
{
#define OUT(...)                                                                                             \
    do {                                                                                                     \
        if (*pos < size) {                                                                                   \
            int w_ = snprintf(buf + *pos, size - *pos, __VA_ARGS__);                                         \
            *pos += w_ > 0 ? (size_t)w_ : 0;                                                                 \
        }                                                                                                    \
    } while (0)
    int lo = _qf_tree_min_leaf(t, v);
    if (t->leaf[v] >= 0) {
        OUT("%d", t->leaf[v]);
        return;
    }
    if (depth >= 3) {
        OUT("{%d leaves from %d}", t->size[v], lo);
        return;
    }
    OUT("(");
    for (int i = 0; i < t->nch[v]; i++) {
        if (i)
            OUT(" ");
        if (i >= 6 && t->nch[v] > 8) {
            OUT("... %d more", t->nch[v] - i);
            break;
        }
        text_node(t, t->ch[v][i], depth + 1, buf, size, pos);
    }
    OUT(")");
#undef OUT
}

void _qf_tree_text(const _qf_tree *t, char *buf, size_t size)
{
    size_t pos = 0;
    buf[0] = 0;
    if (t->root >= 0)
        text_node(t, t->root, 0, buf, size, &pos);
}

/* ---- FPRev ------------------------------------------------------------------- */

/* Answers by pair (p < q): index into vals (cols per answer), -1 pending. */
typedef struct cache {
    uint64_t *keys;
    long *idx;
    size_t cap, n;
    double *vals;
    size_t nvals, capvals;
} cache;

static long *slot(cache *c, int p, int q, int insert)
{
    uint64_t key = ((uint64_t)(unsigned)(p < q ? p : q) << 32 | (unsigned)(p < q ? q : p)) + 1, h;
    if (insert && 2 * (c->n + 1) > c->cap) {
        cache nc = {0};
        nc.cap = c->cap ? 2 * c->cap : 1024;
        nc.keys = calloc(nc.cap, sizeof *nc.keys);
        nc.idx = calloc(nc.cap, sizeof *nc.idx);
        if (!nc.keys || !nc.idx) {
            free(nc.keys);
            free(nc.idx);
            return NULL;
        }
        for (size_t i = 0; i < c->cap; i++)
            if (c->keys[i]) {
                uint64_t hh = c->keys[i] * 0x9E3779B97F4A7C15ull;
                size_t s = (size_t)(hh >> 20) & (nc.cap - 1);
                while (nc.keys[s])
                    s = (s + 1) & (nc.cap - 1);
                nc.keys[s] = c->keys[i];
                nc.idx[s] = c->idx[i];
            }
        free(c->keys);
        free(c->idx);
        c->keys = nc.keys;
        c->idx = nc.idx;
        c->cap = nc.cap;
    }
    if (!c->cap)
        return NULL;
    h = key * 0x9E3779B97F4A7C15ull;
    for (size_t s = (size_t)(h >> 20) & (c->cap - 1);; s = (s + 1) & (c->cap - 1)) {
        if (c->keys[s] == key)
            return &c->idx[s];
        if (!c->keys[s]) {
            if (!insert)
                return NULL;
            c->keys[s] = key;
            c->idx[s] = -1;
            c->n++;
            return &c->idx[s];
        }
    }
}

typedef struct task {
    int partition; /* 0: reveal set (pivot its min); 1: split a group at level `level` */
    int *set, n;
    int parent; /* node to append the result to; -1: the root */
    int level;
} task;

typedef struct fprev {
    _qf_pb *p;
    qf_probe_result *r;
    cache c;
    int *pend; /* pairs to ask this round: p, q */
    size_t npend, cappend;
    /* the design */
    int shared;
    double big_a, s_a, big_b, s_b, u;
} fprev;

/* L(p, q) in column col, or -1 when not asked yet (queued), -2 on a bad answer. */
static int L_of(fprev *f, int p, int q, int col)
{
    long *s = slot(&f->c, p, q, 1);
    if (!s)
        return -2;
    if (*s >= 0) {
        double v = f->c.vals[(size_t)*s * f->p->cols + (size_t)col] / f->u;
        int K = (int)f->p->K;
        if (!(v >= 0 && v <= K - 2 && v == floor(v)))
            return -3;
        return K - (int)v;
    }
    if (*s == -1) {
        if (f->npend + 2 > f->cappend) {
            size_t nc = f->cappend ? 2 * f->cappend : 1024;
            int *np = realloc(f->pend, nc * sizeof *np);
            if (!np)
                return -2;
            f->pend = np;
            f->cappend = nc;
        }
        f->pend[f->npend++] = p;
        f->pend[f->npend++] = q;
        *s = -2; /* queued */
    }
    return -1;
}

static int ask_round(fprev *f)
{
    size_t nq = f->npend / 2, K = f->p->K;
    double *a = malloc(nq * K * sizeof *a), *b = malloc((f->shared ? 1 : nq) * K * sizeof *b), *res;
    int rc;
    res = malloc(nq * f->p->cols * sizeof *res);
    if (!a || !b || !res) {
        free(a);
        free(b);
        free(res);
        return -1;
    }
    for (size_t q = 0; q < nq; q++) {
        int i = f->pend[2 * q], j = f->pend[2 * q + 1];
        for (size_t l = 0; l < K; l++)
            a[q * K + l] = f->s_a;
        a[q * K + (size_t)i] = f->big_a;
        a[q * K + (size_t)j] = -f->big_a;
        if (!f->shared) {
            for (size_t l = 0; l < K; l++)
                b[q * K + l] = f->s_b;
            b[q * K + (size_t)i] = b[q * K + (size_t)j] = f->big_b;
        }
    }
    if (f->shared)
        for (size_t l = 0; l < K; l++)
            b[l] = f->s_b;
    rc = _qf_pb_eval(f->p, nq, a, b, f->shared, f->p->threads, res);
    if (rc == 0) {
        size_t need = f->c.nvals + nq;
        if (need > f->c.capvals) {
            size_t nc = need * 2;
            double *nv = realloc(f->c.vals, nc * f->p->cols * sizeof *nv);
            if (!nv)
                rc = -1;
            else {
                f->c.vals = nv;
                f->c.capvals = nc;
            }
        }
        for (size_t q = 0; q < nq && rc == 0; q++) {
            long *s = slot(&f->c, f->pend[2 * q], f->pend[2 * q + 1], 0);
            memcpy(f->c.vals + f->c.nvals * f->p->cols, res + q * f->p->cols, f->p->cols * sizeof *res);
            *s = (long)f->c.nvals++;
        }
    }
    f->npend = 0;
    free(a);
    free(b);
    free(res);
    return rc;
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static int bad_answer(fprev *f, int p, int q, int col)
{
    long *s = slot(&f->c, p, q, 0);
    double v = s && *s >= 0 ? f->c.vals[(size_t)*s * f->p->cols + (size_t)col] : NAN;
    snprintf(f->p->err, sizeof f->p->err,
             "FPRev: x_%d = +M, x_%d = -M, others %g gave %.9g in column %d, not a count of the other terms: "
             "M does not swamp the partial sums here (accumulator wider than the inputs' range allows, or "
             "a kernel that is not a summation tree)",
             p, q, f->u, v, col);
    return -1;
}

/* Try to finish task tk in column col: 1 done, 0 waiting for answers, -1 error. */
static int run_task(fprev *f, _qf_tree *t, task *tk, int col, task **tasks, size_t *ntasks, size_t *captasks)
{
    int i = tk->set[0], waiting = 0;
    int (*pl)[2] = NULL;
#define PUSH(PART, SET, N, PARENT, LEVEL)                                                                    \
    do {                                                                                                     \
        if (*ntasks == *captasks) {                                                                          \
            size_t nc_ = *captasks ? 2 * *captasks : 64;                                                     \
            task *nt_ = realloc(*tasks, nc_ * sizeof *nt_);                                                  \
            if (!nt_)                                                                                        \
                return -1;                                                                                   \
            *tasks = nt_;                                                                                    \
            *captasks = nc_;                                                                                 \
        }                                                                                                    \
        (*tasks)[(*ntasks)++] = (task){.partition = PART, .set = SET, .n = N, .parent = PARENT, .level = LEVEL}; \
    } while (0)
    if (!tk->partition && tk->n == 1) {
        if (tk->parent < 0)
            t->root = i;
        else if (add_child(t, tk->parent, i))
            return -1;
        return 1;
    }
    for (int s = 1; s < tk->n; s++)
        if (tk->set[s] < i)
            i = tk->set[s];
    pl = malloc((size_t)tk->n * sizeof *pl);
    if (!pl)
        return -1;
    int m = 0;
    for (int s = 0; s < tk->n; s++) {
        int j = tk->set[s], L;
        if (j == i)
            continue;
        L = L_of(f, i, j, col);
        if (L == -1)
            waiting = 1;
        else if (L < -1) {
            free(pl);
            return L == -2 ? -1 : bad_answer(f, i, j, col);
        } else {
            pl[m][0] = L;
            pl[m][1] = j;
            m++;
        }
    }
    if (waiting) {
        free(pl);
        return 0;
    }
    qsort(pl, (size_t)m, sizeof *pl, cmp_pair);
    if (tk->partition) {
        /* the part of pivot i: L < level; the rest joins the node at level */
        int *part = malloc((size_t)tk->n * sizeof *part), *rest = malloc((size_t)tk->n * sizeof *rest), np = 0,
            nr = 0;
        if (!part || !rest) {
            free(part);
            free(rest);
            free(pl);
            return -1;
        }
        part[np++] = i;
        for (int s = 0; s < m; s++) {
            if (pl[s][0] > tk->level) {
                int j = pl[s][1]; /* read before the free below */
                free(part);
                free(rest);
                free(pl);
                return bad_answer(f, i, j, col);
            }
            if (pl[s][0] < tk->level)
                part[np++] = pl[s][1];
            else
                rest[nr++] = pl[s][1];
        }
        free(pl);
        PUSH(0, part, np, tk->parent, 0);
        if (nr)
            PUSH(1, rest, nr, tk->parent, tk->level);
        else
            free(rest);
        return 1;
    }
    /* reveal: the ancestors of i by size */
    int cur = i, s = 0;
    while (s < m) {
        int lv = pl[s][0], e = s, v;
        while (e < m && pl[e][0] == lv)
            e++;
        if (lv != e + 1) {
            /* the ancestor at this level must hold i and every leaf with a smaller or equal L */
            int bi = pl[s][1];
            free(pl);
            return bad_answer(f, i, bi, col);
        }
        if ((v = new_node(t)) < 0 || add_child(t, v, cur)) {
            free(pl);
            return -1;
        }
        if (e - s == 1) {
            if (add_child(t, v, pl[s][1])) {
                free(pl);
                return -1;
            }
        } else {
            int *g = malloc((size_t)(e - s) * sizeof *g);
            if (!g) {
                free(pl);
                return -1;
            }
            for (int x = s; x < e; x++)
                g[x - s] = pl[x][1];
            PUSH(1, g, e - s, v, lv);
        }
        cur = v;
        s = e;
    }
    free(pl);
    if (m + 1 != tk->n)
        return -1;
    if (tk->parent < 0)
        t->root = cur;
    else if (add_child(t, tk->parent, cur))
        return -1;
    return 1;
#undef PUSH
}

/* Sizes are filled as children are added; a child added before its own
 * children were complete has a stale size, so recompute them. */
static int fix_sizes(_qf_tree *t, int v)
{
    if (t->leaf[v] >= 0)
        return t->size[v] = 1;
    t->size[v] = 0;
    for (int i = 0; i < t->nch[v]; i++)
        t->size[v] += fix_sizes(t, t->ch[v][i]);
    return t->size[v];
}

static int reveal_col(fprev *f, _qf_tree *t, int col, size_t *rounds)
{
    int K = (int)f->p->K, rc = 0;
    task *tasks = NULL;
    size_t nt = 0, capt = 0;
    int *all = malloc((size_t)K * sizeof *all);
    if (!all || tree_init(t, K)) {
        free(all);
        return -1;
    }
    for (int i = 0; i < K; i++)
        all[i] = i;
    tasks = malloc(sizeof *tasks);
    if (!tasks) {
        free(all);
        return -1;
    }
    capt = 1;
    tasks[nt++] = (task){.set = all, .n = K, .parent = -1};
    while (nt && rc == 0) {
        size_t w = 0;
        for (size_t k = 0; k < nt && rc == 0; k++) {
            task tk = tasks[k];
            int d = run_task(f, t, &tk, col, &tasks, &nt, &capt);
            if (d < 0)
                rc = -1;
            else if (d == 1)
                free(tk.set);
            else
                tasks[w++] = tasks[k]; /* waiting; tasks pushed in this pass run in it too */
        }
        nt = w;
        if (rc == 0 && nt) {
            if (!f->npend) {
                rc = -1;
                snprintf(f->p->err, sizeof f->p->err, "FPRev: no progress (probe bug)");
            } else {
                rc = ask_round(f);
                (*rounds)++;
            }
        }
    }
    for (size_t k = 0; k < nt; k++)
        free(tasks[k].set);
    free(tasks);
    if (rc == 0 && t->root >= 0)
        fix_sizes(t, t->root);
    return rc;
}

static double pow2_floor(double x)
{
    int e;
    frexp(x, &e);
    return ldexp(1.0, e - 1);
}

/* The smallest positive value of f the probe may use as "1" (normal when
 * its subnormals are flushed), not below 2^-40 (products stay normal in
 * float32 accumulators). */
static double small_of(const qf_format *f, int flushed)
{
    double s = flushed || !f->has_subnormal ? f->min_normal : f->min_subnormal;
    return s < 0x1p-40 ? 0x1p-40 : s;
}

/* The design: M and the ones, on A alone when its range suffices (every
 * query a row of one call), else on both operands (one call per query). */
static void fprev_design(fprev *f, _qf_pb *p, qf_probe_result *r, int say)
{
    int K = (int)p->K, need = 26, flushed = r->flush_in == 1;
    double ra;
    memset(f, 0, sizeof *f);
    f->p = p;
    f->r = r;
    while ((1 << (need - 26)) < K)
        need++;
    /* One operand's range is enough when A alone can carry M and the ones
     * (every query a row of one call); otherwise both operands carry them,
     * one call per query (FP8). */
    f->s_a = small_of(p->fa, flushed);
    ra = log2(pow2_floor(p->fa->max) / f->s_a);
    if (ra >= need + 2) {
        f->shared = 1;
        f->big_a = ldexp(f->s_a, need + 2);
        f->s_b = 1;
        while (_qf_pb_split(p, f->s_b, &(double){0}, &(double){0}) && f->s_b < 2)
            f->s_b *= 2;
        f->big_b = f->s_b;
    } else {
        f->big_a = pow2_floor(p->fa->max);
        f->s_b = small_of(p->fb, flushed);
        f->big_b = pow2_floor(p->fb->max);
        if (say && log2(f->big_a * f->big_b / (f->s_a * f->s_b)) < need)
            _qf_pb_evidence(r, "FPRev: the inputs span only 2^%.0f between M and the ones (2^%d wanted at K = %d): "
                               "a wide accumulator could make the order unrevealable",
                            log2(f->big_a * f->big_b / (f->s_a * f->s_b)), need, K);
    }
    f->u = f->s_a * f->s_b;
}

int _qf_tree_ask(_qf_pb *p, qf_probe_result *r, size_t nq, const int *pairs, int *L)
{
    fprev f;
    int rc = 0, K = (int)p->K;
    fprev_design(&f, p, r, 0);
    for (size_t q = 0; q < nq && rc == 0; q++)
        if (L_of(&f, pairs[2 * q], pairs[2 * q + 1], 0) < -1)
            rc = -1;
    if (rc == 0 && f.npend)
        rc = ask_round(&f);
    for (size_t q = 0; q < nq && rc == 0; q++) {
        long *s = slot(&f.c, pairs[2 * q], pairs[2 * q + 1], 0);
        for (size_t c = 0; c < p->cols; c++) {
            double v = s && *s >= 0 ? f.c.vals[(size_t)*s * p->cols + c] / f.u : NAN;
            L[q * p->cols + c] = v >= 0 && v <= K - 2 && v == floor(v) ? K - (int)v : -1;
        }
    }
    free(f.c.keys);
    free(f.c.idx);
    free(f.c.vals);
    free(f.pend);
    return rc;
}

int _qf_tree_design(_qf_pb *p, qf_probe_result *r, size_t nq, const int *pairs, double *a, double *b)
{
    fprev f;
    size_t K = p->K;
    fprev_design(&f, p, r, 0);
    for (size_t q = 0; q < nq; q++) {
        for (size_t l = 0; l < K; l++)
            a[q * K + l] = f.s_a, b[q * K + l] = f.s_b;
        a[q * K + (size_t)pairs[2 * q]] = f.big_a;
        a[q * K + (size_t)pairs[2 * q + 1]] = -f.big_a;
        b[q * K + (size_t)pairs[2 * q]] = b[q * K + (size_t)pairs[2 * q + 1]] = f.big_b;
    }
    return 0;
}

int _qf_tree_lca_size(const _qf_tree *t, int i, int j)
{
    int *par = malloc((size_t)t->n * sizeof *par), v, size = -1;
    char *mark = calloc((size_t)t->n, 1);
    if (!par || !mark || t->root < 0) {
        free(par);
        free(mark);
        return -1;
    }
    for (v = 0; v < t->n; v++)
        par[v] = -1;
    for (v = t->K; v < t->n; v++)
        for (int c = 0; c < t->nch[v]; c++)
            par[t->ch[v][c]] = v;
    for (v = i; v >= 0; v = par[v])
        mark[v] = 1;
    for (v = j; v >= 0 && !mark[v]; v = par[v])
        ;
    if (v >= 0)
        size = t->size[v];
    free(par);
    free(mark);
    return size;
}

int _qf_tree_reveal(_qf_pb *p, qf_probe_result *r, _qf_tree *trees)
{
    fprev f;
    int K = (int)p->K, rc = 0;
    size_t rounds = 0, col, ncls = 0;
    int *cls = calloc(p->cols, sizeof *cls);
    if (!cls)
        return -1;
    fprev_design(&f, p, r, 1);
    /* column 0 first; every other column either answers column 0's queries
     * the same way (the same tree: the reveal is a function of the answers)
     * or gets its own reveal */
    for (col = 0; col < p->cols && rc == 0; col++) {
        size_t c2;
        int same = -1;
        for (c2 = 0; c2 < col && same < 0; c2++) {
            int ok = 1;
            if (cls[c2] != (int)c2)
                continue;
            for (size_t i = 0; i < f.c.nvals && ok; i++)
                ok = f.c.vals[i * p->cols + c2] == f.c.vals[i * p->cols + col] ||
                     (isnan(f.c.vals[i * p->cols + c2]) && isnan(f.c.vals[i * p->cols + col]));
            if (ok)
                same = (int)c2;
        }
        if (same >= 0) {
            /* the answers matched for the queries already asked; confirm the
             * reveal asks nothing more (it asks the same queries) */
            cls[col] = same;
            continue;
        }
        cls[col] = (int)col;
        ncls++;
        rc = reveal_col(&f, &trees[col], (int)col, &rounds);
    }
    if (rc == 0) {
        /* columns that copied another's tree */
        for (col = 0; col < p->cols; col++)
            if (cls[col] != (int)col) {
                _qf_tree *src = &trees[cls[col]];
                _qf_tree *dst = &trees[col];
                if (tree_init(dst, K)) {
                    rc = -1;
                    break;
                }
                for (int v = K; v < src->n; v++) {
                    int nv = new_node(dst);
                    if (nv < 0) {
                        rc = -1;
                        break;
                    }
                    for (int i = 0; i < src->nch[v]; i++)
                        add_child(dst, nv, src->ch[v][i]);
                }
                dst->root = src->root;
                if (dst->root >= 0)
                    fix_sizes(dst, dst->root);
            }
        _qf_pb_evidence(r,
                        "FPRev: x_i = %s%g, x_j = -%g, other terms %g (%s); %zu queries in %zu rounds, "
                        "%zu distinct tree(s) over %zu columns",
                        "+", f.big_a * f.big_b, f.big_a * f.big_b, f.u,
                        f.shared ? "one row of A per query" : "one call per query", f.c.nvals, rounds, ncls,
                        p->cols);
        /* one decisive answer for the evidence: pivot 0 against the last leaf */
        {
            long *s = slot(&f.c, 0, K - 1, 0);
            if (s && *s >= 0)
                _qf_pb_evidence(r, "FPRev: x_0 = +M, x_%d = -M -> %g = %g ones after LCA(0, %d): its subtree has %d leaves",
                                K - 1, f.c.vals[(size_t)*s * p->cols], f.c.vals[(size_t)*s * p->cols] / f.u, K - 1,
                                K - (int)(f.c.vals[(size_t)*s * p->cols] / f.u));
            s = slot(&f.c, 0, 1, 0);
            if (s && *s >= 0)
                _qf_pb_evidence(r, "FPRev: x_0 = +M, x_1 = -M -> %g ones counted: LCA(0, 1) has %d leaves",
                                f.c.vals[(size_t)*s * p->cols] / f.u, K - (int)(f.c.vals[(size_t)*s * p->cols] / f.u));
        }
    }
    free(f.c.keys);
    free(f.c.idx);
    free(f.c.vals);
    free(f.pend);
    free(cls);
    return rc;
}
