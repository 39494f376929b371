/* _probe.h: the probe's internal pieces (qualify/probe/, docs/probe.md). */
#ifndef QF__PROBE_H
#define QF__PROBE_H

#include <stdarg.h>
#include <stddef.h>

#include "qf_probe.h"

/* ---- Harness (probe.c): the kernel in a forked child --------------------- */

typedef struct _qf_pb {
    const qf_kernel *k;
    const qf_dtype_tuple *t;
    const qf_format *fa, *fb, *fo;
    size_t K, cols;
    /* Broadcast mode (tiles.c): bm > 0 runs each query as its own bm x bn
     * call in which every element answers it; the "columns" of an answer
     * are the elements sel[0 .. cols) (row-major; NULL: all bm * bn). */
    size_t bm, bn;
    const size_t *sel;
    double timeout_s;
    int threads;
    size_t calls;
    char err[512];
} _qf_pb;

/* nq dot products of K terms: query q is a[q*K ..] with b[q*K ..] (or b[0
 * .. K) for every query when b_shared), every value exact in its format.
 * b_shared: the queries are the rows of one M x cols call (B's columns all
 * the vector b); otherwise one 1 x cols call per query, all in one child.
 * res[q * cols + j]: the output of column j.  0, or -1 with p->err. */
int _qf_pb_eval(_qf_pb *p, size_t nq, const double *a, const double *b, int b_shared, int threads, double *res);

/* p->k, p->t and the formats for kernel `name`, tuple dtype (NULL: the
 * widest output without input scales); QF_OK or a status with p->err. */
qf_status _qf_pb_open(_qf_pb *p, const qf_registry *reg, const char *name, const char *dtype);

/* nc calls of m[c] x n x K: A = a[c] (m[c] x K), B = b[c] (K x n), all in
 * one child; res[c] (m[c] x n) the outputs.  0, or -1 with p->err. */
int _qf_pb_full(_qf_pb *p, size_t nc, const size_t *m, size_t n, const double *const *a, const double *const *b,
                int threads, double *const *res);

/* a * b == v with a, b exact in the tuple's input formats (a carries v's
 * significand): 0, or -1 when no such pair exists. */
int _qf_pb_split(const _qf_pb *p, double v, double *a, double *b);

/* Subnormal inputs of format f zeroed when r says inputs are flushed (the
 * replay's view of the kernel's inputs). */
void _qf_pb_flush_in(const qf_probe_result *r, const qf_format *f, double *v, size_t n);

/* Append an evidence line to r. */
void _qf_pb_evidence(qf_probe_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- Trees (tree.c) --------------------------------------------------------- */

typedef struct _qf_tree {
    int n, cap, K;
    int *leaf; /* leaf index, or -1 for an internal node */
    int *nch;
    int **ch;
    int *size; /* leaves below */
    int root;
} _qf_tree;

void _qf_tree_free(_qf_tree *t);
/* The tree an order describes over K leaves (0, or -1 for UNKNOWN). */
int _qf_tree_of_order(const qf_probe_order *o, int K, _qf_tree *t);
/* FPRev: reveal the trees of every column (trees[cols]); 0 or -1 with p->err. */
int _qf_tree_reveal(_qf_pb *p, qf_probe_result *r, _qf_tree *trees);
/* Ask FPRev queries (pairs[2q], pairs[2q+1]) with the reveal's design;
 * L[q * p->cols + c]: the size of LCA's subtree in column c (-1: the
 * answer is no count).  0, or -1 with p->err. */
int _qf_tree_ask(_qf_pb *p, qf_probe_result *r, size_t nq, const int *pairs, int *L);
/* The query vectors (a, b: nq x K) of those pairs, one call per query. */
int _qf_tree_design(_qf_pb *p, qf_probe_result *r, size_t nq, const int *pairs, double *a, double *b);
/* Leaves below LCA(i, j) in t (-1 on error): what the query (i, j) answers. */
int _qf_tree_lca_size(const _qf_tree *t, int i, int j);
/* Name the tree (kind UNKNOWN when no order fits). */
void _qf_tree_classify(const _qf_tree *t, qf_probe_order *o);
/* Nested text of the tree, truncated to size. */
void _qf_tree_text(const _qf_tree *t, char *buf, size_t size);
/* The internal node with the most leaves among those with at least
 * min_children children (-1 if none), and one with a leaf child (-1). */
int _qf_tree_top_node(const _qf_tree *t, int min_children);
int _qf_tree_leafy_node(const _qf_tree *t);
/* Smallest leaf below node v. */
int _qf_tree_min_leaf(const _qf_tree *t, int v);

/* ---- Rows, tiles and shapes (tiles.c) --------------------------------------- */

/* The element maps of r->shapes (o's shapes or the default ones); the
 * column trees explain the elements they can.  0, or -1 with p->err. */
int _qf_tiles_probe(_qf_pb *p, qf_probe_result *r, const qf_probe_opts *o, const _qf_tree *col_trees);
/* s->text from s->map (the claim's order_map spelling). */
void _qf_tiles_text(const qf_probe_result *r, qf_probe_shape *s);

/* ---- Node arithmetic (mma.c) ------------------------------------------------ */

/* One candidate arithmetic of a node. */
typedef struct _qf_arith {
    int F;          /* kept fraction bits at alignment; _QF_F_EXACT: none dropped */
    qf_probe_align align;
    int acc;        /* fraction bits of the normalized result */
    qf_round round; /* RTZ or RNE */
    int pf;         /* products: 0 exact, else rounded to pf fraction bits */
    qf_round pround;
    int flush_out;
    int leaf_round; /* qf_probe_result.leaf_round */
} _qf_arith;

#define _QF_F_EXACT 62

/* The node's result from its children's values (NaN/Inf: IEEE sum). */
double _qf_arith_node(const _qf_arith *h, const double *v, int n);
double _qf_arith_product(const _qf_arith *h, double a, double b);
/* The matrix-unit tests on column 0's tree; fills r's node fields. */
int _qf_mma_probe(_qf_pb *p, qf_probe_result *r, const _qf_tree *tree);
/* Evaluate a whole tree on products a[l] b[l] with h (the replay); outer,
 * when not NULL, for its two-term nodes. */
double _qf_arith_tree(const _qf_arith *h, const _qf_arith *outer, const _qf_tree *t, const double *a,
                      const double *b);
/* The arithmetic r describes. */
_qf_arith _qf_arith_of(const qf_probe_result *r);

#endif
