/* t-order.c: the ABI 3 claim fields of qf_arith_claim (docs/claims.md) and
 * their bounds (docs/bounds.md "Orders", "Rounded products", "Integer
 * accumulators").
 *
 * Each order is evaluated here exactly as the claim states it, in a
 * low-precision accumulator (bfloat16 or float16, so that the rounding
 * errors are large and the chains long in relative terms): every addition
 * of two values is formed exactly (refs/qf_dot.h) and rounded once into the
 * accumulator format.  Products are exact (fused), rounded to the
 * accumulator first (unfused), or rounded to a product format
 * (product_frac_bits).  `any` is checked on random summation trees,
 * `varies` by giving each element one member of the set.  For every order:
 * the error is within the bound on random and adversarial inputs, and on
 * the adversarial ones (positive terms, truncating accumulator: every
 * rounding loses in one direction) the largest error reaches at least
 * QF_TIGHT of the bound, so the bound is not grossly loose.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_test.h"

/* The largest error of the adversarial inputs at K >= 320 must reach this
 * fraction of the bound (a bound at most 1 / QF_TIGHT times the worst case
 * seen, where the chains are long). */
#define QF_TIGHT 0.1

typedef struct sim {
    const qf_format *acc;
    qf_round rnd;
    const qf_format *prod; /* products rounded (nearest) into this, or NULL: exact */
    uint64_t tree_seed;    /* QF_SUM_ANY: the random tree; 0: the sequential chain */
} sim;

static double round_acc(const sim *s, const qf_dot_acc *t)
{
    return qf_format_decode(s->acc, qf_dot_acc_round(t, s->acc, s->rnd, 0, 0, 0));
}

static double add2(const sim *s, double x, double y)
{
    qf_dot_acc t;
    qf_dot_acc_init(&t);
    qf_dot_acc_add_d(&t, x);
    qf_dot_acc_add_d(&t, y);
    return round_acc(s, &t);
}

/* A leaf: fl(0 + p), p exact or already rounded. */
static double leaf(const sim *s, double p)
{
    return add2(s, 0, p);
}

static double seq(const sim *s, const double *p, size_t n)
{
    double acc = 0;
    size_t i;
    for (i = 0; i < n; i++)
        acc = add2(s, acc, p[i]);
    return acc;
}

static double pairwise(const sim *s, const double *p, size_t n)
{
    size_t h = (n + 1) / 2;
    if (n == 1)
        return leaf(s, p[0]);
    return add2(s, pairwise(s, p, h), pairwise(s, p + h, n - h));
}

static double inner(const sim *s, qf_sum_order o, const double *p, size_t n)
{
    return o == QF_SUM_PAIRWISE ? pairwise(s, p, n) : seq(s, p, n);
}

/* A random binary tree: two random items of the list are replaced by their
 * rounded sum until one is left. */
static double any_tree(const sim *s, const double *p, size_t n, double *work)
{
    size_t i, m = n, step = 0;
    if (!s->tree_seed) /* the worst tree of all: the sequential chain */
        return seq(s, p, n);
    for (i = 0; i < n; i++)
        work[i] = leaf(s, p[i]);
    while (m > 1) {
        size_t x = (size_t)(qf_rng_u64(s->tree_seed, step++) % m), y;
        double v = work[x];
        work[x] = work[--m];
        y = (size_t)(qf_rng_u64(s->tree_seed, step++) % m);
        work[y] = add2(s, work[y], v);
    }
    return work[0];
}

static double eval(const sim *s, const qf_sum_spec *o, const double *p, size_t n, double *work)
{
    size_t i, per;
    double tot = 0;
    switch (o->order) {
    case QF_SUM_PAIRWISE: return pairwise(s, p, n);
    case QF_SUM_ANY: return any_tree(s, p, n, work);
    case QF_SUM_SPLITK:
        per = (n + (size_t)o->param - 1) / (size_t)o->param;
        for (i = 0; i < n; i += per)
            tot = i == 0 ? seq(s, p, per) : add2(s, tot, seq(s, p + i, n - i < per ? n - i : per));
        return tot;
    case QF_SUM_BLOCKED:
        per = (size_t)o->param;
        for (i = 0; i < n; i += per) {
            double part = inner(s, o->inner, p + i, n - i < per ? n - i : per);
            tot = i == 0 ? part : add2(s, tot, part);
        }
        return tot;
    default: return seq(s, p, n);
    }
}

static double unif(uint64_t seed, uint64_t i)
{
    return (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53;
}

/* Random inputs: signed bfloat16 of a few binades.  Adversarial: positive
 * terms in [1, 2) with every float32 fraction bit random (a float32, b =
 * 1), so that each truncating addition loses about half an ulp and all
 * losses have one sign.  Products are exact in binary64. */
static void gen(uint64_t seed, size_t k, int adversarial, double *a, double *b)
{
    const qf_format *in = qf_format_get(QF_BFLOAT16), *ina = adversarial ? qf_format_get(QF_FLOAT32) : in;
    size_t i;
    for (i = 0; i < k; i++) {
        double x = adversarial ? 1 + unif(seed, 2 * i) : 2 * unif(seed, 2 * i) - 1;
        double y = adversarial ? 1 : ldexp(2 * unif(seed, 2 * i + 1) - 1, (int)(i % 7) - 3);
        a[i] = qf_format_decode(ina, qf_format_encode(ina, x, QF_ROUND_RNE, 1, 0, 0));
        b[i] = qf_format_decode(in, qf_format_encode(in, y, QF_ROUND_RNE, 1, 0, 0));
    }
}

typedef struct tally {
    double util_adv, util_rand;
    double util_adv_long; /* adversarial, K >= 320: where chains are long */
    long checks, bad;
} tally;

/* One claim, checked against its simulation over sizes and seeds.  The
 * claim's sum_order (with varies' members) is what the simulation runs. */
static tally check_claim(const char *what, const qf_arith_claim *c, sim s, const size_t *ks, size_t nk)
{
    tally t = {0, 0, 0, 0, 0};
    uint64_t seed = qf_test_seed();
    long reps = qf_test_iters(20), r;
    size_t ik;
    double *a = malloc(8192 * sizeof *a), *b = malloc(8192 * sizeof *b), *p = malloc(8192 * sizeof *p);
    double *w = malloc(8192 * sizeof *w);
    ck_assert(a && b && p && w);
    for (ik = 0; ik < nk; ik++) {
        size_t k = ks[ik], l;
        qf_bound_coef coef;
        ck_assert_int_eq(qf_bound_gemm_coef(c, k, 0, s.acc, 0, &coef), QF_OK);
        for (r = 0; r < 2 * reps; r++) {
            int adv = (int)(r & 1);
            uint64_t cs = seed ^ (k * 1000003u + (uint64_t)r * 7919u);
            qf_dot_acc ex, ab;
            qf_sum_spec o;
            double v, err, bnd, absu, util, exv;
            gen(cs, k, adv, a, b);
            for (l = 0; l < k; l++) {
                p[l] = a[l] * b[l]; /* exact: at most 24 x 8 significant bits */
                if (s.prod)
                    p[l] = qf_format_decode(s.prod, qf_format_encode(s.prod, p[l], QF_ROUND_RNE, 0, 0, 0));
                if (c->fma == QF_FMA_UNFUSED)
                    p[l] = qf_format_decode(s.acc, qf_format_encode(s.acc, p[l], s.rnd, 0, 0, 0));
            }
            if (c->sum_order == QF_SUM_VARIES) {
                o = c->sum_varies[(size_t)r % (size_t)c->n_varies];
            } else {
                o.order = c->sum_order;
                o.param = c->sum_order == QF_SUM_SPLITK ? c->split_k : c->sum_block;
                o.inner = c->sum_inner;
            }
            s.tree_seed = adv ? 0 : (cs ^ 0x5eed) | 1;
            v = eval(&s, &o, p, k, w);
            qf_dot_acc_init(&ex);
            qf_dot_acc_init(&ab);
            qf_dot_acc_add_dot(&ex, &ab, k, a, 1, b, 1, NULL, NULL);
            err = fabs(qf_dot_acc_error(&ex, v));
            absu = qf_dot_acc_get_d(&ab, QF_ROUND_UP);
            exv = qf_dot_acc_get_d(&ex, QF_ROUND_RNE);
            qf_bound_apply(&coef, 1, &absu, &exv, &bnd);
            util = err / bnd;
            t.checks++;
            if (!(err <= bnd)) {
                if (t.bad++ < 5)
                    fprintf(stderr, "%s: K=%zu rep %ld: error %.6g > bound %.6g (seed %llu)\n", what, k, r, err,
                            bnd, (unsigned long long)seed);
            }
            if (adv && util > t.util_adv)
                t.util_adv = util;
            if (adv && k >= 320 && util > t.util_adv_long)
                t.util_adv_long = util;
            if (!adv && util > t.util_rand)
                t.util_rand = util;
        }
    }
    fprintf(stderr, "%-40s max utilization: adversarial %.3f (K >= 320: %.3f), random %.3f (%ld checks)\n", what,
            t.util_adv, t.util_adv_long, t.util_rand, t.checks);
    free(a);
    free(b);
    free(p);
    free(w);
    return t;
}

static const size_t KS[] = {1, 2, 3, 7, 31, 64, 100, 320, 1000};
#define NKS (sizeof KS / sizeof KS[0])

static sim sim_of(qf_format_id acc, qf_round rnd)
{
    sim s = {qf_format_get(acc), rnd, NULL, 0};
    return s;
}

static qf_arith_claim claim_of(qf_format_id acc, qf_round rnd)
{
    qf_arith_claim c = qf_arith_claim_default();
    c.acc_format = acc;
    c.acc_round = rnd;
    return c;
}

/* Soundness always; tightness where it is meaningful: a truncating float32
 * accumulator (K u << 1; with bfloat16, K u reaches 4 and the sum of
 * positive terms stagnates, far below the exponential form of the bound). */
static void expect(const char *what, const qf_arith_claim *c, sim s)
{
    tally t = check_claim(what, c, s, KS, NKS);
    ck_assert_msg(t.bad == 0, "%s: %ld of %ld errors above the bound", what, t.bad, t.checks);
    if (s.rnd == QF_ROUND_RTZ && s.acc->man_bits == 23)
        ck_assert_msg(t.util_adv_long >= QF_TIGHT,
                      "%s: the bound is loose: adversarial utilization at K >= 320 %.3f < %g", what, t.util_adv_long,
                      QF_TIGHT);
}

/* Every order, both accumulator roundings. */
START_TEST(orders_hold_and_are_tight)
{
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_RTZ};
    static const qf_format_id accs[] = {QF_BFLOAT16, QF_BFLOAT16, QF_FLOAT32};
    int ir;
    for (ir = 0; ir < 3; ir++) {
        qf_round rd = rnds[ir];
        sim s = sim_of(accs[ir], rd);
        qf_arith_claim c = claim_of(accs[ir], rd);
        char name[96], rn[32];
        snprintf(rn, sizeof rn, "%s %s", rd == QF_ROUND_RNE ? "rne" : "rtz", s.acc->name);
        snprintf(name, sizeof name, "sequential %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_PAIRWISE;
        snprintf(name, sizeof name, "pairwise %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_SPLITK;
        c.split_k = 4;
        snprintf(name, sizeof name, "split(4) %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_BLOCKED;
        c.sum_block = 32;
        c.sum_inner = QF_SUM_SEQUENTIAL;
        snprintf(name, sizeof name, "blocked(32, sequential) %s", rn);
        expect(name, &c, s);
        c.sum_inner = QF_SUM_PAIRWISE;
        snprintf(name, sizeof name, "blocked(32, pairwise) %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_ANY;
        snprintf(name, sizeof name, "any (random trees) %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_VARIES;
        c.n_varies = 2;
        c.sum_varies[0].order = QF_SUM_SPLITK; /* OpenBLAS: 2-way even/odd-K split in some tiles */
        c.sum_varies[0].param = 2;
        c.sum_varies[1].order = QF_SUM_SEQUENTIAL; /* one FMA chain in others */
        snprintf(name, sizeof name, "varies(split(2), sequential) %s", rn);
        expect(name, &c, s);
        c = claim_of(accs[ir], rd);
        c.fma = QF_FMA_UNFUSED;
        snprintf(name, sizeof name, "unfused sequential %s", rn);
        expect(name, &c, s);
        c.sum_order = QF_SUM_BLOCKED;
        c.sum_block = 16;
        snprintf(name, sizeof name, "unfused blocked(16, sequential) %s", rn);
        expect(name, &c, s);
    }
}
END_TEST

/* Products rounded to 10 fraction bits (float16) before a float32 sum:
 * the extra factor (1 + 2^-11) is needed (the exact-product claim fails on
 * the same evaluation) and sufficient. */
START_TEST(product_rounding)
{
    sim s = sim_of(QF_FLOAT32, QF_ROUND_RNE);
    qf_arith_claim c = claim_of(QF_FLOAT32, QF_ROUND_RNE);
    tally t;
    static const size_t k1[] = {1, 2, 5, 64};
    s.prod = qf_format_get(QF_FLOAT16);
    c.product_frac_bits = 10;
    expect("product_frac_bits 10, float32 acc", &c, s);
    c.product_frac_bits = 0;
    t = check_claim("same, claimed exact products", &c, s, k1, 4);
    ck_assert_msg(t.bad > 0, "rounded products went unnoticed by an exact-product claim");
}
END_TEST

/* The chain lengths of docs/bounds.md "Orders". */
START_TEST(chain_lengths)
{
    qf_arith_claim c = qf_arith_claim_default();
    qf_bound_coef f, g;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 320, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 320);
    c.sum_order = QF_SUM_ANY;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 320, 0, NULL, 0, &g), QF_OK);
    ck_assert(g.chain == 320 && g.rel_abs == f.rel_abs);
    c.sum_order = QF_SUM_BLOCKED;
    c.sum_block = 32;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 320, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 32 + 9); /* B + K/B - 1 */
    c.sum_inner = QF_SUM_PAIRWISE;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 320, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 1 + 5 + 9); /* leaf + log2 32 + K/B - 1 */
    c.block_fma = 4;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 320, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 1 + 3 + 9); /* 8 block steps per partial */
    c = qf_arith_claim_default();
    c.sum_order = QF_SUM_SPLITK;
    c.split_k = 4;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 100, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 25 + 3);
    c.sum_order = QF_SUM_VARIES;
    c.n_varies = 2;
    c.sum_varies[0].order = QF_SUM_SPLITK;
    c.sum_varies[0].param = 2;
    c.sum_varies[1].order = QF_SUM_PAIRWISE;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 100, 0, NULL, 0, &f), QF_OK);
    ck_assert(f.chain == 50 + 1); /* max(split(2): 51, pairwise: 1 + 7) */
    c = qf_arith_claim_default();
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 100, 0, NULL, 0, &f), QF_OK);
    c.fma = QF_FMA_UNFUSED;
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 100, 0, NULL, 0, &g), QF_OK);
    /* gamma_{n+1}: one more factor (1 + u), off the chain */
    ck_assert(g.chain == f.chain);
    ck_assert(fabs(g.rel_abs / f.rel_abs - 101.0 / 100.0) < 1e-3);
}
END_TEST

/* Integer accumulators: no rounding before the output conversion, and
 * the overflow behaviour decides the expected result. */
START_TEST(integer_accumulator)
{
    qf_arith_claim c = qf_arith_claim_default();
    qf_bound_coef f;
    double e;
    c.acc_kind = QF_ACC_INT32;
    ck_assert_int_eq(qf_arith_claim_check(&c), QF_OK);
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 140000, 0, qf_format_get(QF_INT32), 0, &f), QF_OK);
    ck_assert(f.rel_abs == 0 && f.rel_out == 0 && f.abs_min == 0 && f.chain == 0);
    /* int32 into float32: the conversion's relative rounding only */
    ck_assert_int_eq(qf_bound_gemm_coef(&c, 140000, 0, qf_format_get(QF_FLOAT32), 0, &f), QF_OK);
    ck_assert(f.rel_abs == 0 && f.rel_out > 0x1p-24 && f.rel_out < 0x1p-23);
    /* wrap: 140000 products of 2^14 = 2293760000 -> 2293760000 - 2^32 */
    ck_assert(qf_bound_int_acc_expected(&c, 140000.0 * 16384, 140000.0 * 16384, &e) == 1);
    ck_assert(e == 140000.0 * 16384 - 0x1p32);
    ck_assert(qf_bound_int_acc_expected(&c, -0x1p31 - 5, 0x1p40, &e) == 1 && e == 0x1p31 - 5);
    ck_assert(qf_bound_int_acc_expected(&c, 12345, 0x1p40, &e) == 1 && e == 12345);
    c.acc_overflow = QF_OVERFLOW_SATURATE;
    ck_assert(qf_bound_int_acc_expected(&c, 0x1p32, 0x1p32, &e) == 1 && e == 0x1p31 - 1);
    ck_assert(qf_bound_int_acc_expected(&c, -0x1p32, 0x1p32, &e) == 1 && e == -0x1p31);
    /* mixed signs beyond the range: the order decides */
    ck_assert(qf_bound_int_acc_expected(&c, 0x1p32, 0x1p33, &e) == 0);
    ck_assert(qf_bound_int_acc_expected(&c, 7, 0x1p33, &e) == 0);
    ck_assert(qf_bound_int_acc_expected(&c, 7, 100, &e) == 1 && e == 7);
    c.acc_kind = QF_ACC_INT64;
    ck_assert(qf_bound_int_acc_expected(&c, 0x1p40, 0x1p41, &e) == 1 && e == 0x1p40);
    c.acc_kind = QF_ACC_FLOAT;
    ck_assert(qf_bound_int_acc_expected(&c, 1, 1, &e) == 0);
}
END_TEST

/* Every new field is validated; determinism scope and ints agree. */
START_TEST(check_fields)
{
    qf_arith_claim c = qf_arith_claim_default(), d;
    qf_arith_claim z;
    ck_assert_int_eq(qf_arith_claim_check(&c), QF_OK);
    ck_assert_int_eq(qf_arith_claim_determinism(&c), QF_DET_RUN_TO_RUN);
#define BAD(stmt)                                                                                            \
    do {                                                                                                     \
        d = c;                                                                                               \
        stmt;                                                                                                \
        ck_assert_msg(qf_arith_claim_check(&d) == QF_EINVAL, "accepted: %s", #stmt);                         \
    } while (0)
    BAD(d.fma = (qf_fma_kind)2);
    BAD(d.align_round = (qf_align_round)3);
    BAD(d.acc_kind = (qf_acc_kind)3);
    BAD(d.acc_overflow = (qf_overflow)2);
    BAD(d.act_formula = QF_ACT_FORMULA_COUNT);
    BAD(d.determinism = (qf_determinism)4);
    BAD(d.product_frac_bits = 53);
    BAD(d.product_frac_bits = -1);
    BAD(d.math_abs_err = -1);
    BAD(d.math_rel_err = NAN);
    BAD(d.math_abs_err = INFINITY);
    BAD((d.sum_order = QF_SUM_BLOCKED, d.sum_block = 0));
    BAD((d.sum_order = QF_SUM_BLOCKED, d.sum_inner = QF_SUM_SPLITK));
    BAD((d.sum_order = QF_SUM_VARIES, d.n_varies = 0));
    BAD((d.sum_order = QF_SUM_VARIES, d.n_varies = QF_SUM_VARIES_MAX + 1));
    BAD((d.sum_order = QF_SUM_VARIES, d.n_varies = 1, d.sum_varies[0].order = QF_SUM_VARIES));
    BAD((d.sum_order = QF_SUM_VARIES, d.n_varies = 1, d.sum_varies[0].order = QF_SUM_SPLITK,
         d.sum_varies[0].param = 0));
    BAD((d.sum_order = (qf_sum_order)(QF_SUM_ANY + 1)));
    /* a scope that contradicts the ints */
    BAD((d.determinism = QF_DET_THREAD_INVARIANT, d.deterministic_threads = 0));
    BAD((d.determinism = QF_DET_NONE));
#undef BAD
    d = c;
    qf_arith_claim_set_determinism(&d, QF_DET_THREAD_INVARIANT);
    ck_assert(d.deterministic == 1 && d.deterministic_threads == 1);
    ck_assert_int_eq(qf_arith_claim_check(&d), QF_OK);
    qf_arith_claim_set_determinism(&d, QF_DET_NONE);
    ck_assert(d.deterministic == 0 && d.deterministic_threads == 0);
    ck_assert_int_eq(qf_arith_claim_check(&d), QF_OK);
    /* A zeroed ABI 3 tail is the ABI 2 meaning: same bound as before. */
    z = c;
    z.sum_order = QF_SUM_SPLITK;
    z.split_k = 4;
    memset(&z.fma, 0, sizeof z - offsetof(qf_arith_claim, fma));
    ck_assert_int_eq(qf_arith_claim_check(&z), QF_OK);
    ck_assert_int_eq(qf_arith_claim_determinism(&z), QF_DET_RUN_TO_RUN);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bounds/order");
    TCase *tc = tcase_create("order");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, check_fields);
    tcase_add_test(tc, chain_lengths);
    tcase_add_test(tc, integer_accumulator);
    tcase_add_test(tc, product_rounding);
    tcase_add_test(tc, orders_hold_and_are_tight);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
