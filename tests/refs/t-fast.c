/* t-fast.c: the binary64 fast path of the references (refs/_fast.h).
 *
 * Two kinds of checks:
 *   - enclosure: for many arguments, |v - f(x)| <= e for the real f(x),
 *     computed by MPFR at 256 bits in forms that do not cancel (erfc for
 *     GELU; exp(-x) for the sigmoids), and the bound is not vacuous (e is
 *     below a stated fraction of |v|, so that the path decides elements);
 *   - decisions: qf_ref_activation / qf_ref_glu with the fast path give the
 *     same codes, values and statuses as with every element through MPFR
 *     (opts.slow_only), for four target formats and four rounding modes,
 *     and the fast path decides almost every element (n_fast); the same
 *     for softmax and RMSNorm rows (constant rows, whose results are
 *     exact, included).
 * Arguments: uniform on +-40 and on +-2.5 (erf's series range and its
 * seam at |z| = 2), normal-like, log-uniform magnitudes 2^-30 .. 2^6, and
 * the edges of every domain.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "_fast.h"
#include "qf_format.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 256

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

/* The i-th argument of the mixed set: uniform +-40, +-2.5, log-uniform,
 * then a sum of uniforms (roughly normal). */
static double arg(uint64_t seed, uint64_t i)
{
    double s;
    switch (i % 4) {
    case 0: return unif(seed, i, 40);
    case 1: return unif(seed, i, 2.5);
    case 2: s = unif(seed, i, 1) < 0 ? -1 : 1; return s * ldexp(1.0 + fabs(unif(seed ^ 7, i, 1)), (int)unif(seed ^ 9, i, 30) - 24);
    default: return unif(seed, i, 1) + unif(seed ^ 1, i, 1) + unif(seed ^ 2, i, 1);
    }
}

/* f(x) into r at OP bits: -1 relu, 0 exp, 1 erfc, else 2 + activation. */
static void exact(int fn, double x, mpfr_t r)
{
    mpfr_t t, u;
    mpfr_inits2(OP, t, u, (mpfr_ptr)0);
    mpfr_set_d(t, x, MPFR_RNDN);
    if (fn == -1) { /* relu */
        mpfr_set_d(r, x > 0 ? x : 0.0, MPFR_RNDN);
    } else if (fn == 0) {
        mpfr_exp(r, t, MPFR_RNDN);
    } else if (fn == 1) {
        mpfr_erfc(r, t, MPFR_RNDN);
    } else {
        qf_ref_act act = (qf_ref_act)(fn - 2);
        switch (act) {
        case QF_REF_ACT_GELU_ERF: /* x/2 erfc(-x / sqrt 2) */
            mpfr_sqrt_ui(u, 2, MPFR_RNDN);
            mpfr_div(u, t, u, MPFR_RNDN);
            mpfr_neg(u, u, MPFR_RNDN);
            mpfr_erfc(u, u, MPFR_RNDN);
            mpfr_mul(r, u, t, MPFR_RNDN);
            mpfr_div_2ui(r, r, 1, MPFR_RNDN);
            break;
        case QF_REF_ACT_GELU_TANH: /* x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))) */
            mpfr_pow_ui(u, t, 3, MPFR_RNDN);
            mpfr_set_str(r, "0.044715", 10, MPFR_RNDN);
            mpfr_mul(u, u, r, MPFR_RNDN);
            mpfr_add(u, u, t, MPFR_RNDN);
            mpfr_const_pi(r, MPFR_RNDN);
            mpfr_ui_div(r, 2, r, MPFR_RNDN);
            mpfr_sqrt(r, r, MPFR_RNDN);
            mpfr_mul(u, u, r, MPFR_RNDN);
            mpfr_mul_si(u, u, -2, MPFR_RNDN);
            mpfr_exp(u, u, MPFR_RNDN);
            mpfr_add_ui(u, u, 1, MPFR_RNDN);
            mpfr_div(r, t, u, MPFR_RNDN);
            break;
        default: /* silu, sigmoid: num / (1 + exp(-x)) */
            mpfr_neg(u, t, MPFR_RNDN);
            mpfr_exp(u, u, MPFR_RNDN);
            mpfr_add_ui(u, u, 1, MPFR_RNDN);
            if (act == QF_REF_ACT_SILU)
                mpfr_div(r, t, u, MPFR_RNDN);
            else
                mpfr_ui_div(r, 1, u, MPFR_RNDN);
            break;
        }
    }
    mpfr_clears(t, u, (mpfr_ptr)0);
}

/* One enclosure check; returns 1 when it holds (or the path declined). */
static int check_one(int fn, double x, double max_rel, long *used)
{
    _qf_fenc f;
    mpfr_t r, d;
    int ok = 1, got = fn == 0 ? _qf_fast_exp(x, &f) : fn == 1 ? _qf_fast_erfc(x, &f) : _qf_fast_act((qf_ref_act)(fn - 2), x, &f);
    if (!got)
        return 1;
    (*used)++;
    mpfr_inits2(OP, r, d, (mpfr_ptr)0);
    exact(fn, x, r);
    mpfr_sub_d(d, r, f.v, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    if (mpfr_cmp_d(d, f.e) > 0) {
        ok = 0;
        mpfr_printf("fn %d x = %a: v = %a, bound %a, but |v - f(x)| = %.6Re\n", fn, x, f.v, f.e, d);
    }
    if (!(f.e <= max_rel * fabs(f.v))) {
        ok = 0;
        printf("fn %d x = %a: bound %a is %g of |v|, more than the %g expected\n", fn, x, f.e, f.e / fabs(f.v),
               max_rel);
    }
    mpfr_clears(r, d, (mpfr_ptr)0);
    return ok;
}

START_TEST(enclosures)
{
    uint64_t seed = qf_test_seed();
    long n = qf_test_iters(qf_test_sanitized() ? 2000 : 8000), i, bad = 0, used = 0;
    int fn;
    static const double edges[] = {0, 0x1p-1000, -0x1p-1000, 1e-300, 0.3465735902799726, -0.3465735902799726, 0.5,
                                   -0.5, 1, -1, 2, -2, 0x1.fffffffffffffp+0, 0x1.0000000000001p+1, 2.5, -2.5, 5,
                                   -5, 20, -20, 25.9, -25.9, 26, -26, 36, -36, 699.9, -699.9, 700, -700};
    /* exp: the reduction's seams (k changes at odd multiples of ln2/2). */
    for (i = -2020; i <= 2020; i++) {
        double x = i * 0.34657359027997264;
        bad += !check_one(0, x, 0x1p-46, &used);
        bad += !check_one(0, nextafter(x, 1000), 0x1p-46, &used);
        bad += !check_one(0, nextafter(x, -1000), 0x1p-46, &used);
    }
    for (fn = 0; fn < 2 + QF_REF_ACT_COUNT; fn++) {
        /* erfc loses up to 2^15 at z = 2 (1 - erf), the GELUs through it
         * too; every other bound is near 2^-40. */
        double max_rel = fn == 0 ? 0x1p-46 : fn == 1 || fn == 2 + QF_REF_ACT_GELU_ERF ? 0x1p-34 : 0x1p-38;
        size_t j;
        if (fn == 2 + QF_REF_ACT_RELU)
            continue;
        for (j = 0; j < sizeof edges / sizeof edges[0]; j++)
            bad += !check_one(fn, edges[j], max_rel, &used);
        for (i = 0; i < n; i++)
            bad += !check_one(fn, fn == 0 ? unif(seed, (uint64_t)i, 700) : arg(seed + (uint64_t)fn, (uint64_t)i),
                              max_rel, &used);
    }
    qf_test_tally("fast enclosures", used, bad);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(used, 5 * n);
}
END_TEST

static int same_out(const qf_ref_out *a, const qf_ref_out *b, size_t i)
{
    return a->code[i] == b->code[i] && a->status[i] == b->status[i] &&
           (a->value[i] == b->value[i] || (isnan(a->value[i]) && isnan(b->value[i])));
}

/* The options of one comparison: fast (o) and MPFR only (os), one thread,
 * and the two outputs allocated. */
static void pair_setup(qf_format_id fmt, qf_round rnd, size_t n, qf_ref_opts *o, qf_ref_opts *os, qf_ref_out *a,
                       qf_ref_out *b)
{
    *o = qf_ref_opts_default();
    o->format = qf_format_get(fmt);
    o->round = rnd;
    o->threads = 1;
    *os = *o;
    os->slow_only = 1;
    ck_assert_int_eq(qf_ref_out_alloc(a, n), QF_OK);
    ck_assert_int_eq(qf_ref_out_alloc(b, n), QF_OK);
}

/* Fast and slow references agree, element by element. */
START_TEST(decisions)
{
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16, QF_FLOAT8_E4M3FN};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    uint64_t seed = qf_test_seed() ^ 0x5eed;
    size_t n = (size_t)qf_test_iters(qf_test_sanitized() ? 400 : 1500), i, f, r, bad = 0, fast = 0, total = 0;
    double *x = malloc(n * sizeof *x), *up = malloc(n * sizeof *up);
    int act, glu;
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(up);
    for (i = 0; i < n; i++) {
        x[i] = arg(seed, i);
        up[i] = unif(seed ^ 3, i, 4);
    }
    x[0] = 0;
    x[1] = INFINITY;
    x[2] = -INFINITY;
    x[3] = NAN;
    up[4] = 0;
    up[5] = INFINITY;
    for (act = 0; act < QF_REF_ACT_COUNT; act++)
        for (glu = 0; glu < 2; glu++)
            for (f = 0; f < 4; f++)
                for (r = 0; r < 4; r++) {
                    qf_ref_opts o, os;
                    qf_ref_out a, b;
                    double *ap = f == 0 && r == 0 && !glu ? malloc(2 * n * sizeof *ap) : NULL;
                    pair_setup(fmts[f], rnds[r], n, &o, &os, &a, &b);
                    if (ap) {
                        a.approx = ap;
                        a.approx_err = ap + n;
                    }
                    if (glu) {
                        ck_assert_int_eq(qf_ref_glu(&o, (qf_ref_act)act, x, up, n, &a), QF_OK);
                        ck_assert_int_eq(qf_ref_glu(&os, (qf_ref_act)act, x, up, n, &b), QF_OK);
                    } else {
                        ck_assert_int_eq(qf_ref_activation(&o, (qf_ref_act)act, x, n, &a), QF_OK);
                        ck_assert_int_eq(qf_ref_activation(&os, (qf_ref_act)act, x, n, &b), QF_OK);
                    }
                    ck_assert_uint_eq(b.n_fast, 0);
                    for (i = 0; i < n; i++)
                        if (!same_out(&a, &b, i) && bad++ < 10)
                            printf("%s%s %s round %d x = %a up = %a: fast code %llx status %d, slow %llx status %d\n",
                                   glu ? "glu " : "", qf_ref_act_name((qf_ref_act)act), o.format->name, (int)rnds[r],
                                   x[i], up[i], (unsigned long long)a.code[i], a.status[i],
                                   (unsigned long long)b.code[i], b.status[i]);
                    ck_assert_uint_eq(a.n_undecided, b.n_undecided);
                    if (ap) {
                        /* qf_ref_out.approx: within approx_err of the exact value */
                        mpfr_t ex, d;
                        mpfr_inits2(OP, ex, d, (mpfr_ptr)0);
                        for (i = 0; i < n; i++) {
                            if (!isfinite(x[i]) || !isfinite(ap[i]))
                                continue;
                            exact(act == QF_REF_ACT_RELU ? -1 : 2 + act, x[i], ex);
                            mpfr_sub_d(d, ex, ap[i], MPFR_RNDN);
                            mpfr_abs(d, d, MPFR_RNDU);
                            if (mpfr_cmp_d(d, ap[n + i]) > 0 && bad++ < 10)
                                mpfr_printf("%s x = %a: approx %a err %a but |approx - exact| = %.5Re\n",
                                            qf_ref_act_name((qf_ref_act)act), x[i], ap[i], ap[n + i], d);
                        }
                        mpfr_clears(ex, d, (mpfr_ptr)0);
                        a.approx = a.approx_err = NULL;
                        free(ap);
                    }
                    if (getenv("QF_TEST_VERBOSE"))
                        printf("%s%s %s round %d: %zu of %zu fast\n", glu ? "glu " : "", qf_ref_act_name((qf_ref_act)act),
                               o.format->name, (int)rnds[r], a.n_fast, n);
                    if (act != QF_REF_ACT_RELU) {
                        fast += a.n_fast;
                        total += n;
                    }
                    qf_ref_out_free(&a);
                    qf_ref_out_free(&b);
                }
    free(x);
    free(up);
    printf("fast path: %zu of %zu elements decided without MPFR (%.4f%%)\n", fast, total, 100.0 * fast / total);
    ck_assert_uint_eq(bad, 0);
    /* Arguments past a domain's edge go to MPFR (gelu_tanh below about
     * -20.7, where exp(-2u) overflows; |x| > 36.7 for the erf GELU, x <
     * -700 for the sigmoids): 6 % of the +-40 quarter of the arguments,
     * under 2.5 % of all. */
    ck_assert_msg(fast > total * 0.95, "the fast path decided only %zu of %zu", fast, total);
}
END_TEST

/* Rows: softmax and RMSNorm with and without the fast path agree element
 * for element; rows include constant ones (exact results: +-1, 1/n),
 * repeated maxima, wide and narrow ranges, weights and biases. */
START_TEST(rows)
{
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    uint64_t seed = qf_test_seed() ^ 0x7077;
    size_t rows = 24, cols = 96, n = rows * cols, i, f, r, bad = 0, fast = 0, total = 0;
    double *x = malloc(n * sizeof *x), w[96], b[96];
    int op, wb;
    ck_assert_ptr_nonnull(x);
    for (i = 0; i < n; i++) {
        size_t row = i / cols;
        double a = row % 6 == 0 ? 0.01 : row % 6 == 1 ? 30 : 3;
        x[i] = (double)(float)unif(seed, i, a);
        if (row == 2)
            x[i] = 0.75; /* constant: softmax 1/96, rmsnorm +-1 */
        if (row == 3 && i % 5 == 0)
            x[i] = 2.5; /* repeated maxima */
    }
    for (i = 0; i < cols; i++) {
        w[i] = (double)(float)unif(seed ^ 5, i, 2);
        b[i] = (double)(float)unif(seed ^ 6, i, 0.5);
    }
    for (op = 0; op < 2; op++)
        for (wb = 0; wb < (op ? 2 : 1); wb++)
            for (f = 0; f < 3; f++)
                for (r = 0; r < 4; r++) {
                    qf_ref_opts o, os;
                    qf_ref_norm_params np = {rows, cols, wb ? 1e-6 : 0, wb ? w : NULL, wb ? b : NULL, wb ? 1 : 0};
                    qf_ref_out a, bb;
                    pair_setup(fmts[f], rnds[r], n, &o, &os, &a, &bb);
                    if (op == 0) {
                        ck_assert_int_eq(qf_ref_softmax(&o, x, rows, cols, 1.0, &a), QF_OK);
                        ck_assert_int_eq(qf_ref_softmax(&os, x, rows, cols, 1.0, &bb), QF_OK);
                    } else {
                        ck_assert_int_eq(qf_ref_rmsnorm(&o, &np, x, &a), QF_OK);
                        ck_assert_int_eq(qf_ref_rmsnorm(&os, &np, x, &bb), QF_OK);
                    }
                    for (i = 0; i < n; i++)
                        if (!same_out(&a, &bb, i) && bad++ < 10)
                            printf("%s %s round %d [%zu] x = %a: fast code %llx status %d, slow %llx status %d\n",
                                   op ? "rmsnorm" : "softmax", o.format->name, (int)rnds[r], i, x[i],
                                   (unsigned long long)a.code[i], a.status[i], (unsigned long long)bb.code[i],
                                   bb.status[i]);
                    fast += a.n_fast;
                    total += n;
                    qf_ref_out_free(&a);
                    qf_ref_out_free(&bb);
                }
    free(x);
    printf("rows: %zu of %zu elements decided without MPFR\n", fast, total);
    ck_assert_uint_eq(bad, 0);
    ck_assert_msg(fast > total * 0.9, "the fast path decided only %zu of %zu", fast, total);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/fast");
    TCase *tc = tcase_create("fast");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, enclosures);
    tcase_add_test(tc, decisions);
    tcase_add_test(tc, rows);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
