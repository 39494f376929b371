/* t-fast_rows.c: the binary64 fast path of the row references (softmax,
 * log-softmax, RMSNorm, LayerNorm, L2 normalization; refs/_fast.h,
 * docs/refs.md "Fast path").
 *
 *   - helpers: the exp table, _qf_fast_exp_dd, _qf_fast_log1p, Sum2 and
 *     _qf_fast_expsum hold their stated bounds against MPFR at 256 bits;
 *   - rows: each op with the fast path gives the same codes, values and
 *     statuses as with every element through MPFR (opts.slow_only), on
 *     random rows and hard ones: values within an ulp of each other
 *     (ties-close), huge and tiny ranges (rows past exp's range go to
 *     MPFR), rows of one element, log-softmax of a largest entry far above
 *     the rest (-log1p of a tiny sum), constant rows (LayerNorm: the bias
 *     exactly; softmax: 1/n), subnormal results, masked entries (-inf:
 *     weight 0) and undefined rows (NaN, +inf), a scale, weights and
 *     biases, float32 (the inline decision) and other formats and modes;
 *   - l2norm_hard: L2 normalization's own hard rows (exact results, huge,
 *     tiny and subnormal entries, the clamp at eps, results next to a
 *     float32 midpoint), fast = MPFR-only;
 *   - fraction: on N(0, 1)-like rows into float32 the fast path decides
 *     all but a few elements (the bench's slow-path fraction, issue 15:
 *     at most 1e-4), and the counts add up.
 * QF_SEED reseeds, QF_TEST_SCALE scales the random sweeps.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "_fast.h"
#include "qf_format.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 256
#define U  0x1p-53

static double unif(uint64_t *st, double a)
{
    return a * (2 * qf_test_unif01(st) - 1);
}

/* roughly N(0, 1): a sum of three uniforms, scaled */
static double normalish(uint64_t *st)
{
    return (unif(st, 1) + unif(st, 1) + unif(st, 1));
}

/* |v - exact| <= rel |exact| + abs; prints and returns 0 when not. */
static int within(const char *what, double arg, double v, mpfr_srcptr exact, double rel, double abs)
{
    mpfr_t d, b;
    int ok;
    mpfr_inits2(OP, d, b, (mpfr_ptr)0);
    mpfr_sub_d(d, exact, v, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    mpfr_abs(b, exact, MPFR_RNDN);
    mpfr_mul_d(b, b, rel, MPFR_RNDD);
    mpfr_add_d(b, b, abs, MPFR_RNDD);
    ok = mpfr_cmp(d, b) <= 0;
    if (!ok)
        mpfr_printf("%s(%a): v = %a, |v - exact| = %.5Re > bound %.5Re\n", what, arg, v, d, b);
    mpfr_clears(d, b, (mpfr_ptr)0);
    return ok;
}

START_TEST(helpers)
{
    uint64_t st = qf_test_seed() ^ 0x10a5;
    long n = qf_test_iters(qf_test_sanitized() ? 2000 : 10000), i, bad = 0, used = 0;
    const double *T = _qf_fast_exp2_table();
    mpfr_t r, t;
    int j;
    mpfr_inits2(OP, r, t, (mpfr_ptr)0);
    /* the table: RN(2^(j/32)), within half an ulp (2^-53 in [1, 2)) */
    for (j = 0; j < 32; j++, used++) {
        mpfr_set_si(t, j, MPFR_RNDN);
        mpfr_div_ui(t, t, 32, MPFR_RNDN);
        mpfr_exp2(r, t, MPFR_RNDN);
        bad += !within("2^(j/32)", j, T[j], r, 0, 0x1p-53);
    }
    /* the rounded constants of fast.c, at the relative errors its
     * comments count: 1/sqrt 2 (0.62 u), 2 sqrt(2/pi) (0.57 u), 0.044715
     * (0.45 u), 2/sqrt(pi) (0.13 u) */
    mpfr_sqrt_ui(r, 2, MPFR_RNDN);
    mpfr_ui_div(r, 1, r, MPFR_RNDN);
    bad += !within("1/sqrt2", 0, 0x1.6a09e667f3bcdp-1, r, 0.62 * U, 0);
    mpfr_const_pi(t, MPFR_RNDN);
    mpfr_ui_div(r, 2, t, MPFR_RNDN);
    mpfr_sqrt(r, r, MPFR_RNDN);
    mpfr_mul_2ui(r, r, 1, MPFR_RNDN);
    bad += !within("2sqrt(2/pi)", 0, 0x1.9884533d43651p+0, r, 0.57 * U, 0);
    mpfr_sqrt(r, t, MPFR_RNDN);
    mpfr_ui_div(r, 2, r, MPFR_RNDN);
    bad += !within("2/sqrt(pi)", 0, 0x1.20dd750429b6dp+0, r, 0.13 * U, 0);
    mpfr_set_str(r, "0.044715", 10, MPFR_RNDN);
    bad += !within("0.044715", 0, 0.044715, r, 0.45 * U, 0);
    used += 4;
    /* exp of a double-double argument, across the reduction's seams */
    for (i = 0; i < n; i++, used++) {
        double hi = i % 3 == 0 ? unif(&st, 700) : i % 3 == 1 ? unif(&st, 1) : (double)(i % 2000 - 1000) * 0.0216608493924983,
               lo = unif(&st, 0x1p-10) * (i % 5 == 0 ? 1 : i % 5 == 1 ? 0 : 0x1p-40), v;
        if (i % 3 == 2)
            hi = nextafter(hi, i % 2 ? 1000 : -1000);
        v = _qf_fast_exp_dd(hi, lo);
        mpfr_set_d(t, hi, MPFR_RNDN);
        mpfr_add_d(t, t, lo, MPFR_RNDN); /* exact at 256 bits */
        mpfr_exp(r, t, MPFR_RNDN);
        bad += !within("exp_dd", hi, v, r, _QF_FAST_EXP_REL + 0x1p-62, 0);
    }
    /* log1p: tiny, the seam at 1/2, large */
    for (i = 0; i < n; i++) {
        double x, v;
        switch (i % 4) {
        case 0: x = ldexp(qf_test_unif01(&st) + 0.5, -(int)(i % 1000)); break;
        case 1: x = 0.5 + unif(&st, 0x1p-20); break;
        case 2: x = qf_test_unif01(&st) * 4; break;
        default: x = ldexp(qf_test_unif01(&st), (int)(i % 50)); break;
        }
        if (!_qf_fast_log1p(x, &v)) {
            bad++;
            printf("log1p(%a) declined\n", x);
            continue;
        }
        used++;
        mpfr_set_d(t, x, MPFR_RNDN);
        mpfr_log1p(r, t, MPFR_RNDN);
        bad += !within("log1p", x, v, r, _QF_FAST_LOG1P_REL, 0);
    }
    {
        double v;
        ck_assert(_qf_fast_log1p(0, &v) && v == 0);
        ck_assert(!_qf_fast_log1p(-1e-300, &v));
        ck_assert(!_qf_fast_log1p(0x1p51, &v));
    }
    /* Sum2 of mixed signs and of squares, against the exact sums */
    for (i = 0; i < 200; i++, used++) {
        double x[300], s, b;
        size_t m = 1 + (size_t)(qf_test_unif01(&st) * 299), k;
        int sq = (int)(i % 2);
        mpfr_set_zero(r, 1);
        for (k = 0; k < m; k++) {
            x[k] = ldexp(unif(&st, 1), (int)(qf_test_unif01(&st) * 60) - 30);
            mpfr_set_d(t, x[k], MPFR_RNDN);
            if (sq)
                mpfr_set_d(t, x[k] * x[k], MPFR_RNDN); /* the rounded squares */
            mpfr_add(r, r, t, MPFR_RNDN);          /* exact: 256 bits span the range */
        }
        s = _qf_fast_sum2(x, m, sq, &b);
        bad += !within("sum2", (double)m, s, r, 0, b);
    }
    mpfr_clears(r, t, (mpfr_ptr)0);
    qf_test_tally("fast row helpers", used, bad);
}
END_TEST

/* _qf_fast_expsum: every E[j] within eta of exp(a_j - a_m), with a_m the
 * exact largest product, d + dlo within lo_err of a_j - a_m, S1 and S
 * within their bounds of the sums of the E[j]. */
START_TEST(expsum)
{
    static const double scales[] = {1, 0.125, 0x1.6a09e667f3bcdp-2, -3.7, 10};
    uint64_t st = qf_test_seed() ^ 0xe59;
    long bad = 0, used = 0;
    size_t trial, j;
    double x[200], E[200], d[200], dlo[200];
    mpfr_t a, am, r, s, sum;
    mpfr_inits2(OP, a, am, r, s, sum, (mpfr_ptr)0);
    for (trial = 0; trial < 100; trial++) {
        size_t n = 1 + trial % 199, jm = 0;
        double scale = scales[trial % 5];
        _qf_fast_row fr;
        for (j = 0; j < n; j++)
            x[j] = (double)(float)(trial % 7 == 0 ? 3.0 + 0x1p-20 * (double)(j % 3) : normalish(&st) * (trial % 3 + 1));
        if (!_qf_fast_expsum(x, n, scale, E, d, dlo, &fr)) {
            bad++;
            printf("expsum declined trial %zu\n", trial);
            continue;
        }
        for (j = 1; j < n; j++)
            if (scale * x[j] > scale * x[jm])
                jm = j;
        mpfr_set_d(am, x[jm], MPFR_RNDN);
        mpfr_mul_d(am, am, scale, MPFR_RNDN); /* exact */
        mpfr_set_zero(sum, 1);
        for (j = 0; j < n; j++, used++) {
            mpfr_set_d(a, x[j], MPFR_RNDN);
            mpfr_mul_d(a, a, scale, MPFR_RNDN);
            mpfr_sub(a, a, am, MPFR_RNDN);
            mpfr_set_d(s, d[j], MPFR_RNDN);
            mpfr_add_d(s, s, dlo[j], MPFR_RNDN); /* exact at 256 bits */
            mpfr_sub(s, s, a, MPFR_RNDN);
            mpfr_abs(s, s, MPFR_RNDN);
            if (mpfr_cmp_d(s, fr.lo_err) > 0) {
                bad++;
                mpfr_printf("d + dlo (x = %a, scale %a) off by %.5Re, lo_err %a\n", x[j], scale, s, fr.lo_err);
            }
            mpfr_exp(r, a, MPFR_RNDN);
            bad += !within("E", x[j], E[j], r, fr.eta, 0);
            if (!(d[j] == 0 && dlo[j] == 0)) {
                mpfr_set_d(s, E[j], MPFR_RNDN);
                mpfr_add(sum, sum, s, MPFR_RNDN);
            }
        }
        bad += !within("S1", (double)n, fr.S1, sum, fr.rel_S1, 0);
        mpfr_add_ui(sum, sum, (unsigned long)fr.k, MPFR_RNDN);
        bad += !within("S", (double)n, fr.S, sum, fr.rel_S, 0);
        ck_assert_uint_ge(fr.k, 1);
    }
    /* declined: an entry 700 below the largest, an overflowing product */
    {
        _qf_fast_row fr;
        double y[2] = {0, -701};
        ck_assert(!_qf_fast_expsum(y, 2, 1, E, NULL, NULL, &fr));
        y[1] = 1e308;
        ck_assert(!_qf_fast_expsum(y, 2, 10, E, NULL, NULL, &fr));
        /* masked entries (scale x = -inf) weigh 0; +inf, NaN and a row of
         * masked entries only are declined */
        {
            double z[3] = {0, INFINITY, 1};
            ck_assert(_qf_fast_expsum(z, 3, -2, E, d, dlo, &fr));
            ck_assert(E[1] == 0 && d[1] == -INFINITY && fr.nfin == 2 && fr.k == 1 && E[0] == 1);
            ck_assert(!_qf_fast_expsum(z, 3, 2, E, NULL, NULL, &fr));
            z[1] = NAN;
            ck_assert(!_qf_fast_expsum(z, 3, 1, E, NULL, NULL, &fr));
            z[0] = z[1] = z[2] = -INFINITY;
            ck_assert(!_qf_fast_expsum(z, 3, 1, E, NULL, NULL, &fr));
        }
    }
    mpfr_clears(a, am, r, s, sum, (mpfr_ptr)0);
    qf_test_tally("fast expsum", used, bad);
}
END_TEST

enum { OP_SOFTMAX, OP_LOG_SOFTMAX, OP_RMSNORM, OP_LAYERNORM, OP_L2NORM, OP_N };
static const char *const op_names[OP_N] = {"softmax", "log_softmax", "rmsnorm", "layernorm", "l2norm"};

static qf_status run_op(int op, const qf_ref_opts *o, const double *x, size_t rows, size_t cols, double scale,
                        const qf_ref_norm_params *np, qf_ref_out *y)
{
    switch (op) {
    case OP_SOFTMAX: return qf_ref_softmax(o, x, rows, cols, scale, y);
    case OP_LOG_SOFTMAX: return qf_ref_log_softmax(o, x, rows, cols, scale, y);
    case OP_RMSNORM: return qf_ref_rmsnorm(o, np, x, y);
    case OP_LAYERNORM: return qf_ref_layernorm(o, np, x, y);
    default: {
        qf_ref_l2norm_params lp = {rows, cols, np ? np->eps : 1e-12};
        return qf_ref_l2norm(o, &lp, x, y);
    }
    }
}

#define COLS 64
#define ROWS 52

/* Row r of the hard set (COLS wide; the first entries of rows 0..2 make
 * rows of one element through cols = 1 separately). */
static void hard_row(uint64_t *st, size_t r, double *x)
{
    size_t j;
    double base = normalish(st);
    for (j = 0; j < COLS; j++) {
        double v;
        switch (r % 13) {
        case 0: v = normalish(st); break;
        case 1: v = (double)(float)(base + 0x1p-20 * (double)(j % 4)); break; /* ties-close */
        case 2: v = j == 0 ? 0 : -50 - 10 * qf_test_unif01(st); break;   /* log-softmax: -log1p(tiny) */
        case 3: v = 0.75; break;                                          /* constant */
        case 4: v = j % 2 ? -95 - qf_test_unif01(st) : 0; break;          /* softmax: subnormal float32 */
        case 5: v = ldexp(unif(st, 1), (int)(j % 40) - 20); break;       /* wide magnitudes */
        case 6: v = j == 5 ? 0 : -800 * qf_test_unif01(st); break;        /* past exp's range: MPFR */
        case 7: v = 1e4 + unif(st, 8); break;                             /* large mean, small spread */
        case 8: v = ldexp(normalish(st), -140); break;                    /* tiny: norms' underflow edge */
        case 9: v = unif(st, 30); break;
        case 10: v = j % 3 ? normalish(st) : -INFINITY; break; /* masked entries */
        case 11: v = j == 7 ? 1.5 : -INFINITY; break;           /* one entry left */
        default: v = j == 9 ? NAN : j == 4 ? INFINITY : 0.5; break; /* undefined */
        }
        x[j] = (double)(float)v;
    }
}

static int same(const qf_ref_out *a, const qf_ref_out *b, size_t i)
{
    return a->code[i] == b->code[i] && a->status[i] == b->status[i] &&
           (a->value[i] == b->value[i] || (isnan(a->value[i]) && isnan(b->value[i])));
}

/* The options of a fast run (o) and of its MPFR-only twin (os). */
static void two_opts(qf_format_id fmt, qf_round rnd, qf_ref_opts *o, qf_ref_opts *os)
{
    *o = qf_ref_opts_default();
    o->format = qf_format_get(fmt);
    o->round = rnd;
    o->threads = 1;
    *os = *o;
    os->slow_only = 1;
}

/* Fast and MPFR-only references agree element by element. */
START_TEST(rows)
{
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP};
    static const double scales[] = {1, 0x1.6a09e667f3bcdp-3};
    uint64_t st = qf_test_seed() ^ 0x2049;
    size_t n = ROWS * COLS, i, bad = 0, checked = 0, fast = 0;
    double *x = malloc(n * sizeof *x), w[COLS], b[COLS];
    int op, f, r, v;
    ck_assert_ptr_nonnull(x);
    for (i = 0; i < ROWS; i++)
        hard_row(&st, i, x + i * COLS);
    for (i = 0; i < COLS; i++) {
        w[i] = (double)(float)unif(&st, 2);
        b[i] = (double)(float)unif(&st, 0.5);
    }
    for (op = 0; op < OP_N; op++)
        for (f = 0; f < 3; f++)
            for (r = 0; r < 3; r++)
                for (v = 0; v < 3; v++) {
                    /* v: 0 plain, 1 scale / weights and bias, 2 rows of one element */
                    size_t cols = v == 2 ? 1 : COLS, rows = v == 2 ? 6 : ROWS, m = rows * cols;
                    qf_ref_opts o, os;
                    qf_ref_norm_params np = {rows, cols, v == 0 ? 0 : v == 1 ? 1e-6 : 1e-5, v == 1 ? w : NULL, v == 1 ? b : NULL, v == 1};
                    qf_ref_out a, bb;
                    two_opts(fmts[f], rnds[r], &o, &os);
                    ck_assert_int_eq(qf_ref_out_alloc(&a, m), QF_OK);
                    ck_assert_int_eq(qf_ref_out_alloc(&bb, m), QF_OK);
                    ck_assert_int_eq(run_op(op, &o, x, rows, cols, scales[v == 1], &np, &a), QF_OK);
                    ck_assert_int_eq(run_op(op, &os, x, rows, cols, scales[v == 1], &np, &bb), QF_OK);
                    ck_assert_uint_eq(bb.n_fast, 0);
                    for (i = 0; i < m; i++, checked++)
                        if (!same(&a, &bb, i) && bad++ < 10)
                            printf("%s %s round %d variant %d [%zu] x = %a: fast %llx (%a) status %d, MPFR %llx (%a) "
                                   "status %d\n",
                                   op_names[op], o.format->name, (int)rnds[r], v, i, x[i],
                                   (unsigned long long)a.code[i], a.value[i], a.status[i],
                                   (unsigned long long)bb.code[i], bb.value[i], bb.status[i]);
                    ck_assert_uint_eq(a.n_exact + a.n_rounded + a.n_undecided + a.n_undefined, m);
                    ck_assert_uint_le(a.n_fast, a.n_rounded);
                    fast += a.n_fast;
                    qf_ref_out_free(&a);
                    qf_ref_out_free(&bb);
                }
    free(x);
    printf("rows: %zu of %zu elements decided by the fast path\n", fast, checked);
    qf_test_tally("fast rows = MPFR rows", (long)checked, (long)bad);
    /* most rows of the hard set are ordinary enough for the fast path */
    ck_assert_msg(fast > checked / 2, "the fast path decided only %zu of %zu", fast, checked);
}
END_TEST

/* The fast path's share on N(0, 1)-like rows into float32 (RNE): what the
 * bench's slow-path fraction measures, on a smaller sample; and the
 * elements it leaves agree with MPFR (rows above). */
START_TEST(fraction)
{
    uint64_t st = qf_test_seed() ^ 0xf4ac;
    size_t rows = 16, cols = 1024, n = rows * cols, i;
    double *x = malloc(n * sizeof *x);
    int op;
    ck_assert_ptr_nonnull(x);
    for (i = 0; i < n; i++)
        x[i] = (double)(float)normalish(&st);
    for (op = 0; op < OP_N; op++) {
        qf_ref_opts o = qf_ref_opts_default();
        qf_ref_norm_params np = {rows, cols, 1e-6, NULL, NULL, 0};
        qf_ref_out a;
        o.format = qf_format_get(QF_FLOAT32);
        o.threads = 1;
        ck_assert_int_eq(qf_ref_out_alloc(&a, n), QF_OK);
        ck_assert_int_eq(run_op(op, &o, x, rows, cols, 1.0, &np, &a), QF_OK);
        printf("%s: %zu of %zu fast\n", op_names[op], a.n_fast, n);
        {
            /* two threads: the same elements, the same count (each row
             * adds its count to the sink once) */
            qf_ref_out a2;
            o.threads = 2;
            ck_assert_int_eq(qf_ref_out_alloc(&a2, n), QF_OK);
            ck_assert_int_eq(run_op(op, &o, x, rows, cols, 1.0, &np, &a2), QF_OK);
            ck_assert_uint_eq(a2.n_fast, a.n_fast);
            for (i = 0; i < n; i++)
                ck_assert_msg(same(&a, &a2, i), "%s [%zu]: 1 and 2 threads differ", op_names[op], i);
            qf_ref_out_free(&a2);
        }
        /* the bound is about 2^-48 relative, float32 spacing 2^-24: an
         * element is undecided with probability near 2^-23; allow 1e-3 */
        ck_assert_msg((double)(n - a.n_fast) <= 1e-3 * (double)n, "%s: %zu of %zu needed MPFR", op_names[op],
                      n - a.n_fast, n);
        ck_assert_uint_eq(a.n_undefined, 0);
        qf_ref_out_free(&a);
    }
    free(x);
}
END_TEST

/* Enclosures that hold a target value which cannot be the exact result
 * (docs/refs.md "Fast path": Lindemann-Weierstrass): the log-softmax of
 * integers far below the largest (-50 - 2e-22), the softmax of 4 largest
 * entries beside tiny ones (1/4 - 1e-42): decided by the fast path, the
 * same as MPFR's, in round to nearest; a constant row's exact 1/8 still
 * goes to MPFR (status exact). */
START_TEST(near_exact)
{
    static const double x[3][8] = {{0, -50, -55, -60, -52, -51, -58, -59},
                                   {0, -95, 0, -95.5, 0, -96, 0, -95.25},
                                   {2, 2, 2, 2, 2, 2, 2, 2}};
    static const size_t want_fast[2][3] = {{8, 8, 0}, {8, 8, 8}};
    int op, r;
    size_t i;
    for (op = 0; op < 2; op++)
        for (r = 0; r < 3; r++) {
            qf_ref_opts o = qf_ref_opts_default(), os;
            qf_ref_out a, b;
            o.format = qf_format_get(QF_FLOAT32);
            o.threads = 1;
            os = o;
            os.slow_only = 1;
            ck_assert_int_eq(qf_ref_out_alloc(&a, 8), QF_OK);
            ck_assert_int_eq(qf_ref_out_alloc(&b, 8), QF_OK);
            ck_assert_int_eq(run_op(op, &o, x[r], 1, 8, 1.0, NULL, &a), QF_OK);
            ck_assert_int_eq(run_op(op, &os, x[r], 1, 8, 1.0, NULL, &b), QF_OK);
            for (i = 0; i < 8; i++)
                ck_assert_msg(same(&a, &b, i), "%s row %d [%zu]: fast %a status %d, MPFR %a status %d", op_names[op], r,
                              i, a.value[i], a.status[i], b.value[i], b.status[i]);
            ck_assert_msg(a.n_fast == want_fast[op][r], "%s row %d: %zu fast, %zu expected", op_names[op], r,
                          a.n_fast, want_fast[op][r]);
            if (op == OP_SOFTMAX && r == 2)
                ck_assert_uint_eq(a.n_exact, 8); /* 1/8 */
            qf_ref_out_free(&a);
            qf_ref_out_free(&b);
        }
}
END_TEST

/* L2 normalization's own hard rows (refs/ref_l2norm.c): one nonzero entry
 * (+-1 and zeros, exact), equal entries (1/2, 1/4: exact), a Pythagorean
 * row (0.6, 0.8), huge and tiny magnitudes (squares that overflow or
 * underflow: MPFR), subnormal entries beside normal ones (subnormal
 * results: MPFR), a zero row (eps > 0: zeros), rows whose norm sits at the
 * clamp eps, rows of 4^m entries 1 but one 1 + k 2^-23, whose first
 * result lies within about 2^-50 of a float32 midpoint (0.5 - 2^-26, to
 * first order), and random rows at four scales: fast = MPFR-only in
 * codes, values and statuses (and the approximation of the zeros the fast
 * path writes), in float32, bfloat16 and float16 under RNE, RTZ and UP;
 * and each approximation within its bound of MPFR's (both hold the exact
 * value). */
#define L2C 64
#define L2R 20
static void l2_hard_row(uint64_t *st, int r, double *x, size_t *cols, double *eps)
{
    size_t j, n = L2C;
    *eps = 1e-12;
    for (j = 0; j < L2C; j++)
        x[j] = 0;
    switch (r) {
    case 0: x[5] = -3.5, x[7] = -0.0; break; /* a negative zero too */
    case 1:
        n = 16;
        for (j = 0; j < n; j++)
            x[j] = j % 2 ? 0.75 : -0.75;
        break;
    case 2:
        n = 2;
        x[0] = 3 * 0x1p-30;
        x[1] = -4 * 0x1p-30;
        break;
    case 3:
        for (j = 0; j < n; j++)
            x[j] = ldexp(unif(st, 1), 600);
        break;
    case 4:
        for (j = 0; j < n; j++)
            x[j] = ldexp(unif(st, 1), -600);
        break;
    case 5:
        for (j = 0; j < n; j++)
            x[j] = j % 4 ? normalish(st) : 0x1p-1070 * (double)(j + 1);
        break;
    case 6: break; /* zeros */
    case 7:
        n = 2;
        x[0] = 0.006;
        x[1] = 0.008;
        *eps = 0.01;
        break; /* sqrt q next to eps */
    case 8:
        n = 3;
        x[0] = 0.006;
        x[1] = 0.008;
        x[2] = 1e-9;
        *eps = 0.01;
        break;
    case 9:
        for (j = 0; j < n; j++)
            x[j] = ldexp(normalish(st), -20);
        *eps = 0.5;
        break; /* clamped */
    case 16:
    case 17:
    case 18:
    case 19: /* random, at four scales */
        for (j = 0; j < n; j++)
            x[j] = ldexp(normalish(st), 40 * (r - 17));
        break;
    default: {
        /* 4^m entries 1, the first 1 + k 2^-23 (k = 1..6, m = 1..3) */
        int k = r - 9, m = 1 + r % 3;
        n = (size_t)1 << (2 * m);
        for (j = 0; j < n; j++)
            x[j] = 1;
        x[0] = 1 + k * 0x1p-23;
        break;
    }
    }
    for (j = 0; j < n; j++)
        x[j] = (double)(float)x[j];
    *cols = n;
}

START_TEST(l2norm_hard)
{
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP};
    uint64_t st = qf_test_seed() ^ 0x12a0;
    size_t checked = 0, bad = 0, fast = 0, i;
    double x[L2C];
    int r, f, m;
    for (r = 0; r < L2R; r++)
        for (f = 0; f < 3; f++)
            for (m = 0; m < 3; m++) {
                size_t n;
                qf_ref_l2norm_params lp;
                qf_ref_opts o, os;
                qf_ref_out a, b;
                double ax[L2C], ae[L2C], bx[L2C], be[L2C];
                l2_hard_row(&st, r, x, &n, &lp.eps);
                lp.rows = 1;
                lp.cols = n;
                two_opts(fmts[f], rnds[m], &o, &os);
                ck_assert_int_eq(qf_ref_out_alloc(&a, n), QF_OK);
                ck_assert_int_eq(qf_ref_out_alloc(&b, n), QF_OK);
                a.approx = ax, a.approx_err = ae, b.approx = bx, b.approx_err = be;
                ck_assert_int_eq(qf_ref_l2norm(&o, &lp, x, &a), QF_OK);
                ck_assert_int_eq(qf_ref_l2norm(&os, &lp, x, &b), QF_OK);
                for (i = 0; i < n; i++, checked++) {
                    int ok = same(&a, &b, i);
                    if (x[i] == 0) /* the zeros the fast path writes, as MPFR's */
                        ok = ok && memcmp(&ax[i], &bx[i], sizeof ax[i]) == 0 && ae[i] == be[i];
                    /* the fast approximation's bound holds: both enclose the exact value */
                    if (a.status[i] != QF_REF_UNDEFINED)
                        ok = ok && fabs(ax[i] - bx[i]) <= (ae[i] + be[i]) * (1 + 0x1p-50);
                    if (!ok && bad++ < 10)
                        printf("l2norm row %d %s round %d [%zu] x = %a: fast %a status %d approx %a, MPFR %a "
                               "status %d approx %a\n",
                               r, o.format->name, (int)rnds[m], i, x[i], a.value[i], a.status[i], ax[i],
                               b.value[i], b.status[i], bx[i]);
                }
                fast += a.n_fast;
                a.approx = a.approx_err = b.approx = b.approx_err = NULL;
                qf_ref_out_free(&a);
                qf_ref_out_free(&b);
            }
    printf("l2norm_hard: %zu of %zu elements decided by the fast path\n", fast, checked);
    qf_test_tally("l2norm fast = MPFR (hard rows)", (long)checked, (long)bad);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {helpers, expsum, rows, fraction, near_exact, l2norm_hard, NULL};
    return qf_test_main("refs/fast_rows", "fast_rows", 600, NULL, NULL, tests);
}
