/* qf_probe.h: reveal a GEMM kernel's arithmetic by running it on designed
 * inputs (`qualify probe`, docs/probe.md).
 *
 * Why: a kernel's claim (qf_arith_claim) is what its author believes; the
 * probe measures what the kernel does, so a claim can be written for a
 * library that documents none (OpenBLAS, a vendor GEMM) and checked for one
 * that does.  Nothing is read from the kernel's claim or a model's
 * parameters: every field below comes from kernel outputs.
 *
 * Methods: the summation tree of one K-term dot product by FPRev (Xie, Gao,
 * Xue, "Revealing floating-point accumulation orders in software/hardware
 * implementations", 2024/2025); the arithmetic of one node of that tree
 * (alignment, accumulator width and rounding, product rounding, flushing)
 * by designed inputs in the manner of Fasi, Higham, Mikaitis and Pranesh
 * ("Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021) and MMA-Sim
 * (Xie et al. 2025), decided by elimination among candidate arithmetics.
 */
#ifndef QF_PROBE_H
#define QF_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qf_format.h"
#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Summation orders the probe names (docs/probe.md "Orders"). */
typedef enum qf_probe_order_kind {
    QF_PROBE_ORDER_UNKNOWN = 0, /* a tree none of the names below describes */
    QF_PROBE_ORDER_SEQUENTIAL,  /* one running sum (of fused nodes of `fused` leaves) */
    QF_PROBE_ORDER_PAIRWISE,    /* balanced binary tree over the K terms */
    QF_PROBE_ORDER_SPLIT,       /* `split` strided lanes (l mod S), each sequential, then the lanes */
    QF_PROBE_ORDER_BLOCKED      /* contiguous blocks of `block`, `inner` order inside, blocks in sequence */
} qf_probe_order_kind;

typedef struct qf_probe_order {
    qf_probe_order_kind kind;
    int split;          /* SPLIT: lanes */
    int lanes_pairwise; /* SPLIT: lanes combined by a pairwise tree (0: lane 0, then 1, ...) */
    int block;          /* BLOCKED: terms per block */
    qf_probe_order_kind inner; /* BLOCKED: SEQUENTIAL or PAIRWISE */
    int fused;          /* leaves per fused node of a sequential chain (1: two-term additions) */
    int odd_even;       /* fused nodes take a group's even-indexed terms, then its odd ones */
    char text[64];      /* "blocked(128, sequential)", the claim file's spelling */
} qf_probe_order;

/* Alignment of the terms of a fused node: what happens to bits below the
 * kept ones (QF_PROBE_ALIGN_EXACT: none are dropped within the tested range). */
typedef enum qf_probe_align { QF_PROBE_ALIGN_EXACT = 0, QF_PROBE_ALIGN_TRUNCATE, QF_PROBE_ALIGN_FLOOR,
                              QF_PROBE_ALIGN_NEAREST } qf_probe_align;

#define QF_PROBE_UNOBSERVABLE (-1) /* a field the inputs of these formats cannot reveal */
#define QF_PROBE_MAX_EVIDENCE 48
#define QF_PROBE_MAX_ORDERS   8
#define QF_PROBE_MAX_SHAPES   6
#define QF_PROBE_MAX_ELEMS    1024 /* m * n of a probed shape */

/* One probed shape and which order each of its output elements uses
 * (docs/probe.md "Rows, tiles and shapes"): the order of a blocked GEMM's
 * element depends on the register tile it falls in, and the tiling on M, N
 * and K (OpenBLAS), so the map is per shape. */
typedef struct qf_probe_shape {
    size_t m, n, k;
    unsigned char map[QF_PROBE_MAX_ELEMS]; /* index into qf_probe_result.orders[] of element i * n + j */
    char text[512];  /* "rows 0-23: sequential; rows 24-31: split(2)" (the claim's order_map entry) */
    size_t revealed; /* element classes the fingerprint did not place, revealed by FPRev here */
    size_t validated, validated_ok; /* random elements of one call at this shape, replayed */
} qf_probe_shape;

typedef struct qf_probe_opts {
    const char *dtype; /* tuple name; NULL: the kernel's tuple with the widest output */
    size_t k;          /* terms of the probed dot product; 0: 256 */
    size_t cols;       /* output columns probed at once (per-column orders); 0: 8 */
    double timeout_s;  /* per batch of kernel calls in the child; 0: 60 */
    int threads;       /* call.threads of the probing calls; 0: 1 */
    uint64_t seed;     /* random inputs (determinism, validation) */
    /* Shapes probed element by element (rows and tiles, and whether the
     * order changes with the shape): n_shapes 0 takes the default (M = 1,
     * 32 and 96 at N = cols and K, and M = 32 at 2K when 2K <= 4096);
     * no_shapes skips the pass (orders per column only). */
    size_t n_shapes;
    size_t shapes[QF_PROBE_MAX_SHAPES][3];
    int no_shapes;
} qf_probe_opts;

typedef struct qf_probe_result {
    char kernel[160], dtype[64];
    size_t k, cols;
    /* Order of column 0; when columns differ, orders[] and order_cols[]
     * give each distinct order and the columns (of 0..cols-1) that use it. */
    qf_probe_order order;
    int varies;
    size_t n_orders;
    qf_probe_order orders[QF_PROBE_MAX_ORDERS];
    char order_cols[QF_PROBE_MAX_ORDERS][96];
    unsigned char col_order[64]; /* index into orders[] of each column (cols <= 64) */
    char order_claim[256]; /* "split(16)", "varies(split(2), sequential)" */
    char tree[512];        /* column 0's tree, nested, truncated */

    /* Node arithmetic (the top fused node, or the root of a scalar tree). */
    int block;           /* leaves per fused node (1: two-term additions) */
    int sum_tree;        /* the order is blocked(B, pairwise) of two-term additions (MI250X-style) */
    int promote_interval;/* blocked(B, sequential) over fused nodes: B; else 0 */
    int align_frac_bits; /* fraction bits kept below the largest exponent; 0 with ALIGN_EXACT */
    qf_probe_align align;
    int acc_frac_bits, acc_frac_min; /* largest and smallest width consistent with every output */
    qf_round acc_round;  /* RTZ or RNE */
    int acc_round_known; /* 0: both roundings fit every output (unobservable here) */
    int outer;           /* 1: the two-term additions above fused nodes round differently: */
    int outer_acc;       /*    fraction bits, */
    qf_round outer_round;/*    and rounding of those (promotion into float32) */
    int leaf_round;      /* a two-leaf node rounds its first term alone first (1: acc = 0 + x_0,
                          * sequential chains) or both (2); chosen by the validation */
    int product_frac_bits; /* 0: exact products */
    int fma;             /* 1 fused multiply-add, 0 product rounded first, QF_PROBE_UNOBSERVABLE */
    int flush_in, flush_out; /* 1 / 0 / QF_PROBE_UNOBSERVABLE */
    char specials[256];  /* NaN / Inf propagation, one phrase per test */
    int deterministic, deterministic_threads;
    size_t validated, validated_ok; /* random dot products replayed by the revealed arithmetic */
    size_t n_shapes;  /* the element maps (when the shape pass ran; validated then sums theirs) */
    qf_probe_shape shapes[QF_PROBE_MAX_SHAPES];
    int tile_varies;  /* elements of one shape use different orders */
    int shape_varies; /* the orders used change with the shape */

    size_t n_evidence;
    char evidence[QF_PROBE_MAX_EVIDENCE][240];
    size_t kernel_calls;
    double seconds;
    uint64_t seed;
} qf_probe_result;

/* Probe GEMM kernel `name` of reg.  QF_OK with *r filled; otherwise the
 * reason in err (the kernel crashed, timed out, refused the shapes, or its
 * outputs fit no summation tree). */
qf_status qf_probe_gemm(const qf_registry *reg, const char *name, const qf_probe_opts *o, qf_probe_result *r,
                        char *err, size_t err_size);

/* Human-readable report, with the evidence. */
void qf_probe_print(FILE *out, const qf_probe_result *r);
/* The result as a JSON document (malloc'ed; NULL when out of memory). */
char *qf_probe_json(const qf_probe_result *r);
/* The claim file (YAML, docs/probe.md "The claim file"). */
qf_status qf_probe_write_claim(const qf_probe_result *r, const char *path, char *err, size_t err_size);

/* One dot product sum a[l] b[l], l < r->k, evaluated by the revealed order
 * of column col and the revealed node arithmetic (the replay of
 * docs/probe.md): for a kernel the probe describes exactly, this is the
 * kernel's output bit for bit.  a, b: exact input values. */
double qf_probe_replay_dot(const qf_probe_result *r, size_t col, const double *a, const double *b);

/* Element (i, j) of an m x n x k GEMM: a is row i of A, b column j of B
 * (k exact values).  The order is the shape's map when (m, n, k) was
 * probed, else column j's order built at k.  NaN when no order is known. */
double qf_probe_replay_elem(const qf_probe_result *r, size_t m, size_t n, size_t k, size_t i, size_t j,
                            const double *a, const double *b);
/* The shape of r->shapes[] that is m x n x k, or NULL. */
const qf_probe_shape *qf_probe_find_shape(const qf_probe_result *r, size_t m, size_t n, size_t k);

/* ---- Replay of a claim (`qualify replay`, docs/probe.md "Replay") ---- */

struct qf_claim;

/* The replay a claim describes: its arith keys (order, block, alignment,
 * accumulator bits and rounding, products, fma, flushing, promotion) and
 * its `replay` section (order_map, first_term, odd_even, pairwise,
 * split_lanes; docs/claims.md "Replay details") into r, for
 * qf_probe_replay_elem.  QF_EPARSE with err for a map that does not parse
 * or cover every element. */
qf_status qf_probe_from_claim(const struct qf_claim *c, qf_probe_result *r, char *err, size_t err_size);

typedef struct qf_probe_replay_report {
    size_t checked, failed, calls;
    int any_of;      /* no order_map for the shape: an element passes under any order of the set */
    char first[640]; /* the first differing element: inputs' bits (short), got, expected */
} qf_probe_replay_report;

/* Run kernel (tuple dtype, NULL: widest output) at m x n x k on `cases`
 * random inputs (seed, seed + 1, ...) and on designed inputs (FPRev
 * queries answered by every element), in a child process with a time
 * limit, and compare every element with the replay of r, bit for bit. */
qf_status qf_probe_replay_check(const qf_registry *reg, const char *kernel, const char *dtype,
                                const qf_probe_result *r, size_t m, size_t n, size_t k, uint64_t seed, size_t cases,
                                qf_probe_replay_report *rep, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_PROBE_H */
