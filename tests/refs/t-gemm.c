/* t-gemm.c: the exact GEMM / GEMV reference against MPFR, element by
 * element, and its determinism across thread counts.
 *
 * Each case draws a layout, transposes, leading dimensions with NaN
 * padding (a read outside the matrix shows), a batch with strides (0
 * broadcasts) or a grouped GEMM with per-group M (zeros included), alpha
 * and beta (0 with NaN in the unread operand, powers of two, arbitrary
 * doubles), input formats, the output format and rounding mode (stochastic
 * included).  Every element is checked against exact products (alpha a b
 * at 160 bits, beta c at 106) + mpfr_sum, rounded once by
 * qf_format_encode_mpfr; so are |alpha| sum |a b| + |beta c| rounded up,
 * the error of a candidate, the per-element status (exact iff the rounded
 * value equals the MPFR sum), qf_gemm_acc_element, and the outputs with 1,
 * 2 and 3 threads are the same bits.  Hand cases pin the statuses where a
 * binary64 error would mislead (a difference below 2^-1075), and the
 * special values.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

typedef struct rng {
    uint64_t seed, ctr;
} rng;

static uint64_t rnext(rng *r)
{
    return qf_rng_u64(r->seed, r->ctr++);
}

static double runif(rng *r)
{
    return (double)(rnext(r) >> 11) * 0x1p-53;
}

static int rbelow(rng *r, int n)
{
    return (int)(rnext(r) % (uint64_t)n);
}

static double rnorm(rng *r)
{
    double u = runif(r), v = runif(r);
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

static double quantize(const qf_format *f, double v)
{
    if (f->id == QF_FLOAT64)
        return v;
    return qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RNE, 1, 32, 0));
}

static long n_cases(long base)
{
    double s = qf_test_scale();
    long n = (long)(base * (s >= 10 ? s * 10 : s));
    return n < 1 ? 1 : n;
}

/* ---- The MPFR oracle for one element ------------------------------------------ */

typedef struct want {
    mpfr_t sum, abs;
} want;

static void oracle(want *w, size_t k, double alpha, const double *a, ptrdiff_t sa, const double *b,
                   ptrdiff_t sb, double beta, double c)
{
    size_t n = (alpha != 0 ? k : 0) + (beta != 0), i, t = 0;
    mpfr_t *p = malloc((n + 1) * sizeof *p), *q = malloc((n + 1) * sizeof *q);
    mpfr_ptr *pp = malloc((n + 1) * sizeof *pp), *qq = malloc((n + 1) * sizeof *qq);
    mpfr_exp_t emax = 0, emin = 0;
    int have = 0;
    if (alpha != 0)
        for (i = 0; i < k; i++, t++) {
            mpfr_init2(p[t], 160);
            mpfr_set_d(p[t], alpha, MPFR_RNDN);
            mpfr_mul_d(p[t], p[t], a[(ptrdiff_t)i * sa], MPFR_RNDN);
            mpfr_mul_d(p[t], p[t], b[(ptrdiff_t)i * sb], MPFR_RNDN);
        }
    if (beta != 0) {
        mpfr_init2(p[t], 160);
        mpfr_set_d(p[t], beta, MPFR_RNDN);
        mpfr_mul_d(p[t], p[t], c, MPFR_RNDN);
        t++;
    }
    for (i = 0; i < n; i++) {
        mpfr_init2(q[i], 160);
        mpfr_abs(q[i], p[i], MPFR_RNDN);
        pp[i] = p[i];
        qq[i] = q[i];
        if (mpfr_regular_p(p[i])) {
            mpfr_exp_t e = mpfr_get_exp(p[i]);
            if (!have || e > emax)
                emax = e;
            if (!have || e < emin)
                emin = e;
            have = 1;
        }
    }
    mpfr_init2(w->sum, have ? (mpfr_prec_t)(emax - emin) + 240 : 64);
    mpfr_init2(w->abs, have ? (mpfr_prec_t)(emax - emin) + 240 : 64);
    ck_assert(mpfr_sum(w->sum, pp, (unsigned long)n, MPFR_RNDN) == 0);
    ck_assert(mpfr_sum(w->abs, qq, (unsigned long)n, MPFR_RNDN) == 0);
    for (i = 0; i < n; i++) {
        mpfr_clear(p[i]);
        mpfr_clear(q[i]);
    }
    free(p);
    free(q);
    free(pp);
    free(qq);
}

static uint64_t expected_code(const qf_format *f, mpfr_srcptr v, qf_round m, int sat, int rb, uint64_t rw)
{
    if (mpfr_zero_p(v))
        return qf_format_encode_parts(f, m == QF_ROUND_DOWN, 0, 0, 0, m, sat, rb, rw);
    return qf_format_encode_mpfr(f, v, m, sat, rb, rw);
}

/* ---- Building a random problem --------------------------------------------------- */

typedef struct problem {
    qf_gemm_desc d;
    size_t mtot, nb;
    size_t *group_m;
    double *a, *b, *c, *cand;
    size_t na, nbm, nc, nd;
    const char *fa_name, *fb_name;
} problem;

static size_t stored_len(qf_layout lay, size_t rows, size_t cols, size_t ld)
{
    if (rows == 0 || cols == 0)
        return 0;
    return lay == QF_ROW_MAJOR ? (rows - 1) * ld + cols : (cols - 1) * ld + rows;
}

static double input_value(rng *r, const qf_format *f, double scale)
{
    if (rbelow(r, 40) == 0)
        return 0;
    if (rbelow(r, 60) == 0) /* rare wide values: the exact general path */
        return quantize(f, ldexp(rnorm(r), rbelow(r, 2 * (f->emax - f->emin > 200 ? 100 : 10)) -
                                               (f->emax - f->emin > 200 ? 100 : 10)));
    return quantize(f, rnorm(r) * scale);
}

/* Fill a stored rows x cols matrix (ld >= minimum) with format values,
 * NaN in the padding. */
static void fill(rng *r, double *m, size_t len, qf_layout lay, size_t rows, size_t cols, size_t ld,
                 const qf_format *f, double scale)
{
    size_t i, j;
    for (i = 0; i < len; i++)
        m[i] = NAN;
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++)
            m[lay == QF_ROW_MAJOR ? i * ld + j : i + j * ld] = input_value(r, f, scale);
}

static const char *const in_fmts[] = {"bfloat16", "float16", "float8_e4m3fn", "float8_e5m2",
                                      "float32",  "float64", "float4_e2m1fn", "int8"};
static const char *const out_fmts[] = {"float64",       "float32",     "bfloat16", "float16",
                                       "float8_e4m3fn", "float8_e5m2", "tf32",     "int8"};

static double pick_scalar(rng *r, int allow_zero)
{
    switch (rbelow(r, allow_zero ? 7 : 6)) {
    case 0: return 1;
    case 1: return -1;
    case 2: return ldexp(1.0, rbelow(r, 20) - 10);
    case 3: return rnorm(r); /* an arbitrary double */
    case 4: return quantize(qf_format_lookup("bfloat16"), rnorm(r) * 3);
    case 5: return 0.1; /* not exact in any binary format */
    default: return 0;
    }
}

static void problem_free(problem *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
    free(p->cand);
    free(p->group_m);
    free(p->d.d_code);
    free(p->d.d_value);
    free(p->d.d_abs);
    free(p->d.d_err);
    free(p->d.d_status);
}

static void make_problem(rng *r, problem *p, int big)
{
    qf_gemm_desc *d = &p->d;
    const qf_format *fa, *fb, *out;
    size_t ar, ac, br, bc, g, bstride_a, bstride_b, bstride_c, bstride_d;
    int grouped;
    memset(p, 0, sizeof *p);
    *d = qf_gemm_desc_default();
    d->layout = rbelow(r, 2) ? QF_ROW_MAJOR : QF_COL_MAJOR;
    d->trans_a = rbelow(r, 2) ? QF_TRANS : QF_NO_TRANS;
    d->trans_b = rbelow(r, 2) ? QF_TRANS : QF_NO_TRANS;
    if (big) {
        d->m = 20 + (size_t)rbelow(r, 30);
        d->n = 20 + (size_t)rbelow(r, 30);
        d->k = 1500 + (size_t)rbelow(r, 1000);
    } else {
        d->m = 1 + (size_t)rbelow(r, 9);
        d->n = 1 + (size_t)rbelow(r, 9);
        d->k = rbelow(r, 10) == 0  ? (size_t)rbelow(r, 3)
               : rbelow(r, 5) == 0 ? 256 + (size_t)rbelow(r, 400)
                                   : 1 + (size_t)rbelow(r, 60);
    }
    grouped = !big && rbelow(r, 4) == 0;
    p->nb = big ? 1 : 1 + (size_t)rbelow(r, 3);
    d->batch = p->nb;
    p->fa_name = in_fmts[rbelow(r, 8)];
    p->fb_name = rbelow(r, 3) ? p->fa_name : in_fmts[rbelow(r, 8)];
    fa = qf_format_lookup(p->fa_name);
    fb = qf_format_lookup(p->fb_name);
    d->fa = rbelow(r, 8) ? fa : NULL; /* sometimes no hint */
    d->fb = rbelow(r, 8) ? fb : NULL;
    out = qf_format_lookup(out_fmts[rbelow(r, 8)]);
    d->out = out;
    d->round = (qf_round)rbelow(r, 6);
    if (!qf_round_valid(out, d->round))
        d->round = QF_ROUND_RNE;
    d->saturate = rbelow(r, 2);
    d->random_bits = 1 + rbelow(r, 32);
    d->rnd_seed = rnext(r);
    d->alpha = pick_scalar(r, 1);
    d->beta = pick_scalar(r, 1);
    p->mtot = d->m;
    if (grouped) {
        p->group_m = malloc(p->nb * sizeof *p->group_m);
        p->mtot = 0;
        for (g = 0; g < p->nb; g++) {
            p->group_m[g] = (size_t)rbelow(r, 6); /* zero rows happen in MoE */
            p->mtot += p->group_m[g];
        }
        d->group_m = p->group_m;
        d->m = 12345; /* ignored */
    }
    ar = d->trans_a ? d->k : p->mtot;
    ac = d->trans_a ? p->mtot : d->k;
    br = d->trans_b ? d->n : d->k;
    bc = d->trans_b ? d->k : d->n;
    d->lda = (d->layout == QF_ROW_MAJOR ? ac : ar) + (size_t)rbelow(r, 3);
    d->ldb = (d->layout == QF_ROW_MAJOR ? bc : br) + (size_t)rbelow(r, 3);
    d->ldc = (d->layout == QF_ROW_MAJOR ? d->n : p->mtot) + (size_t)rbelow(r, 3);
    d->ldd = (d->layout == QF_ROW_MAJOR ? d->n : p->mtot) + (size_t)rbelow(r, 2);
    if (d->lda == 0)
        d->lda = 1;
    if (d->ldb == 0)
        d->ldb = 1;
    if (d->ldc == 0)
        d->ldc = 1;
    if (d->ldd == 0)
        d->ldd = 1;
    bstride_a = stored_len(d->layout, ar, ac, d->lda) + (size_t)rbelow(r, 4);
    bstride_b = stored_len(d->layout, br, bc, d->ldb) + (size_t)rbelow(r, 4);
    bstride_c = stored_len(d->layout, p->mtot, d->n, d->ldc) + (size_t)rbelow(r, 4);
    bstride_d = stored_len(d->layout, p->mtot, d->n, d->ldd) + (size_t)rbelow(r, 4);
    d->stride_a = grouped || rbelow(r, 5) == 0 ? 0 : (ptrdiff_t)bstride_a;
    d->stride_b = rbelow(r, 5) == 0 && !grouped ? 0 : (ptrdiff_t)bstride_b;
    d->stride_c = grouped || rbelow(r, 5) == 0 ? 0 : (ptrdiff_t)bstride_c;
    d->stride_d = grouped ? 0 : (ptrdiff_t)bstride_d;
    {
        size_t nmat_a = grouped || d->stride_a == 0 ? 1 : p->nb, nmat_b = d->stride_b == 0 ? 1 : p->nb;
        size_t nmat_c = grouped || d->stride_c == 0 ? 1 : p->nb, nmat_d = grouped ? 1 : p->nb;
        double sa = ldexp(1.0, rbelow(r, 7) - 3), sb = ldexp(1.0, rbelow(r, 7) - 3);
        p->na = nmat_a * bstride_a + 1;
        p->nbm = nmat_b * bstride_b + 1;
        p->nc = nmat_c * bstride_c + 1;
        p->nd = nmat_d * bstride_d + 1;
        p->a = malloc(p->na * sizeof *p->a);
        p->b = malloc(p->nbm * sizeof *p->b);
        p->c = malloc(p->nc * sizeof *p->c);
        p->cand = malloc(p->nd * sizeof *p->cand);
        for (g = 0; g < nmat_a; g++)
            fill(r, p->a + g * bstride_a, bstride_a, d->layout, ar, ac, d->lda, fa, sa);
        p->a[p->na - 1] = NAN;
        for (g = 0; g < nmat_b; g++)
            fill(r, p->b + g * bstride_b, bstride_b, d->layout, br, bc, d->ldb, fb, sb);
        p->b[p->nbm - 1] = NAN;
        for (g = 0; g < nmat_c; g++)
            fill(r, p->c + g * bstride_c, bstride_c, d->layout, p->mtot, d->n, d->ldc,
                 qf_format_get(QF_FLOAT64), 4);
        p->c[p->nc - 1] = NAN;
        if (d->alpha == 0 && rbelow(r, 2))
            p->a[0] = NAN; /* alpha = 0: A is not read */
        if (d->beta == 0 && rbelow(r, 2)) {
            free(p->c); /* beta = 0: C is not read (may be NULL) */
            p->c = NULL;
        }
        d->a = p->a;
        d->b = p->b;
        d->c = p->c;
        d->d_code = malloc(p->nd * sizeof *d->d_code);
        d->d_value = malloc(p->nd * sizeof *d->d_value);
        d->d_abs = malloc(p->nd * sizeof *d->d_abs);
        d->d_err = malloc(p->nd * sizeof *d->d_err);
        d->d_status = malloc(p->nd);
        for (g = 0; g < p->nd; g++) {
            p->cand[g] = rnorm(r);
            d->d_code[g] = 0xDEADull;
            d->d_status[g] = 0xEE;
            d->d_value[g] = d->d_abs[g] = d->d_err[g] = -777.0;
        }
        d->cand = p->cand;
    }
}

static void print_problem(const problem *p, uint64_t seed, long cs, size_t bi, size_t i, size_t j)
{
    const qf_gemm_desc *d = &p->d;
    fprintf(stderr,
            "  reproduce: QF_SEED=%llu case %ld; element batch/group %zu row %zu col %zu\n"
            "  %s trans_a=%d trans_b=%d M=%zu (total %zu) N=%zu K=%zu batch=%zu grouped=%d lda=%zu ldb=%zu "
            "ldc=%zu ldd=%zu\n"
            "  strides a=%td b=%td c=%td d=%td alpha=%a beta=%a inputs %s/%s (hints %s/%s) out %s %s sat=%d "
            "rbits=%d\n",
            (unsigned long long)seed, cs, bi, i, j, d->layout == QF_ROW_MAJOR ? "row-major" : "col-major",
            d->trans_a, d->trans_b, d->m, p->mtot, d->n, d->k, p->nb, d->group_m != NULL, d->lda, d->ldb,
            d->ldc, d->ldd, d->stride_a, d->stride_b, d->stride_c, d->stride_d, d->alpha, d->beta, p->fa_name,
            p->fb_name, d->fa ? d->fa->name : "-", d->fb ? d->fb->name : "-", d->out->name,
            qf_round_name(d->round), d->saturate, d->random_bits);
}

/* Check every element (or a sample of every 'step'-th) against MPFR. */
static long check_elements(const problem *p, uint64_t seed, long cs, size_t step)
{
    const qf_gemm_desc *d = &p->d;
    size_t g, i, j, r0 = 0, cnt = 0;
    long checked = 0;
    const qf_format *f64 = qf_format_get(QF_FLOAT64);
    for (g = 0; g < p->nb; g++) {
        size_t m = d->group_m ? d->group_m[g] : d->m;
        for (i = 0; i < m; i++)
            for (j = 0; j < d->n; j++) {
                size_t gi = d->group_m ? r0 + i : i; /* row in the stored matrices */
                const double *a, *b;
                ptrdiff_t sa, sb, od, oc;
                double c = 0;
                want w;
                uint64_t rw, code;
                if (cnt++ % step)
                    continue;
                a = p->a + (d->group_m ? 0 : (ptrdiff_t)g * d->stride_a);
                b = p->b + (ptrdiff_t)g * d->stride_b;
                /* op(A)(gi, l) and op(B)(l, j) in the stored layout */
                if ((d->layout == QF_ROW_MAJOR) != (d->trans_a == QF_TRANS)) {
                    a += (ptrdiff_t)(gi * d->lda);
                    sa = 1;
                } else {
                    a += (ptrdiff_t)gi;
                    sa = (ptrdiff_t)d->lda;
                }
                if ((d->layout == QF_ROW_MAJOR) != (d->trans_b == QF_TRANS)) {
                    b += (ptrdiff_t)j;
                    sb = (ptrdiff_t)d->ldb;
                } else {
                    b += (ptrdiff_t)(j * d->ldb);
                    sb = 1;
                }
                oc =
                    (d->group_m ? 0 : (ptrdiff_t)g * d->stride_c) +
                    (d->layout == QF_ROW_MAJOR ? (ptrdiff_t)(gi * d->ldc + j) : (ptrdiff_t)(gi + j * d->ldc));
                od =
                    (d->group_m ? 0 : (ptrdiff_t)g * d->stride_d) +
                    (d->layout == QF_ROW_MAJOR ? (ptrdiff_t)(gi * d->ldd + j) : (ptrdiff_t)(gi + j * d->ldd));
                if (d->beta != 0)
                    c = p->c[oc];
                oracle(&w, d->k, d->alpha, a, sa, b, sb, d->beta, c);
                rw =
                    d->round == QF_ROUND_STOCHASTIC
                        ? qf_rng_u64(d->rnd_seed, d->group_m ? gi * d->n + j : g * d->m * d->n + i * d->n + j)
                        : 0;
                code = expected_code(d->out, w.sum, d->round, d->saturate, d->random_bits, rw);
                if (d->d_code[od] != code) {
                    print_problem(p, seed, cs, g, i, j);
                    mpfr_fprintf(stderr, "  exact %.30Rg\n", w.sum);
                    ck_abort_msg("gemm code 0x%llx, want 0x%llx", (unsigned long long)d->d_code[od],
                                 (unsigned long long)code);
                }
                {
                    double v = qf_format_decode(d->out, code);
                    uint8_t ws;
                    ck_assert(d->d_value[od] == v || (isnan(v) && isnan(d->d_value[od])));
                    /* the inputs are finite: exact iff the value is the sum */
                    ws = isfinite(v) && mpfr_cmp_d(w.sum, v) == 0 ? QF_REF_EXACT : QF_REF_ROUNDED;
                    if (d->d_status[od] != ws) {
                        print_problem(p, seed, cs, g, i, j);
                        ck_abort_msg("gemm status %u, want %u", d->d_status[od], ws);
                    }
                }
                {
                    double au =
                        qf_format_decode(f64, qf_format_encode_mpfr(f64, w.abs, QF_ROUND_UP, 0, 32, 0));
                    if (!(d->d_abs[od] == au)) {
                        print_problem(p, seed, cs, g, i, j);
                        ck_abort_msg("gemm abs %a, want %a", d->d_abs[od], au);
                    }
                }
                if (mpfr_number_p(w.sum)) {
                    mpfr_t e;
                    double ew;
                    mpfr_init2(e, mpfr_get_prec(w.sum) + 2300);
                    mpfr_set_d(e, p->cand[od], MPFR_RNDN);
                    ck_assert(mpfr_sub(e, e, w.sum, MPFR_RNDN) == 0);
                    ew = qf_format_decode(f64, qf_format_encode_mpfr(f64, e, QF_ROUND_RNE, 0, 32, 0));
                    mpfr_clear(e);
                    if (!(d->d_err[od] == ew)) {
                        print_problem(p, seed, cs, g, i, j);
                        ck_abort_msg("gemm err %a, want %a", d->d_err[od], ew);
                    }
                }
                if (cnt % 7 == 1) { /* the single-element entry point */
                    qf_dot_acc acc, abs;
                    qf_dot_acc_init(&acc);
                    qf_dot_acc_init(&abs);
                    ck_assert_int_eq(qf_gemm_acc_element(d, g, i, j, &acc, &abs), QF_OK);
                    ck_assert_uint_eq(
                        qf_dot_acc_round(&acc, d->out, d->round, d->saturate, d->random_bits, rw), code);
                }
                mpfr_clear(w.sum);
                mpfr_clear(w.abs);
                checked++;
            }
        r0 += m;
    }
    return checked;
}

/* Same bits with 1, 2 and 3 threads. */
static void check_threads(problem *p, uint64_t seed, long cs)
{
    qf_gemm_desc d2 = p->d;
    int t;
    uint64_t *code = malloc(p->nd * sizeof *code);
    double *val = malloc(p->nd * sizeof *val), *abs = malloc(p->nd * sizeof *abs),
           *err = malloc(p->nd * sizeof *err);
    for (t = 2; t <= 3; t++) {
        size_t i;
        memcpy(code, p->d.d_code, p->nd * sizeof *code);
        memcpy(val, p->d.d_value, p->nd * sizeof *val);
        memcpy(abs, p->d.d_abs, p->nd * sizeof *abs);
        memcpy(err, p->d.d_err, p->nd * sizeof *err);
        d2.d_code = code;
        d2.d_value = val;
        d2.d_abs = abs;
        d2.d_err = err;
        d2.threads = t;
        ck_assert_int_eq(qf_gemm(&d2), QF_OK);
        for (i = 0; i < p->nd; i++)
            if (code[i] != p->d.d_code[i] || memcmp(&val[i], &p->d.d_value[i], sizeof(double)) ||
                memcmp(&abs[i], &p->d.d_abs[i], sizeof(double)) ||
                memcmp(&err[i], &p->d.d_err[i], sizeof(double))) {
                print_problem(p, seed, cs, 0, 0, 0);
                ck_abort_msg("threads=%d differs from threads=1 at output offset %zu", t, i);
            }
    }
    free(code);
    free(val);
    free(abs);
    free(err);
}

START_TEST(test_gemm_random)
{
    uint64_t seed = qf_test_seed();
    long cs, n = n_cases(300), elements = 0;
    for (cs = 0; cs < n; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x67656d6d, (uint64_t)cs), 0};
        problem p;
        make_problem(&r, &p, 0);
        p.d.threads = 1;
        if (qf_gemm(&p.d) != QF_OK) {
            print_problem(&p, seed, cs, 0, 0, 0);
            ck_abort_msg("qf_gemm failed");
        }
        elements += check_elements(&p, seed, cs, 1);
        if (cs % 4 == 0)
            check_threads(&p, seed, cs);
        problem_free(&p);
    }
    fprintf(stderr, "gemm: %ld cases, %ld elements checked against MPFR\n", n, elements);
}
END_TEST

/* Several tiles (K near 2048 gives 16 x 16 tiles), packing, 1/2/3 threads,
 * a sample of the elements against MPFR. */
START_TEST(test_gemm_tiles)
{
    uint64_t seed = qf_test_seed();
    long cs, n = n_cases(3);
    for (cs = 0; cs < n; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x74696c65, (uint64_t)cs), 0};
        problem p;
        make_problem(&r, &p, 1);
        p.d.threads = 1;
        ck_assert_int_eq(qf_gemm(&p.d), QF_OK);
        check_threads(&p, seed, cs);
        check_elements(&p, seed, cs, 37);
        problem_free(&p);
    }
}
END_TEST

START_TEST(test_gemv)
{
    uint64_t seed = qf_test_seed();
    long cs, n = n_cases(100);
    for (cs = 0; cs < n; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x67656d76, (uint64_t)cs), 0};
        qf_gemm_desc d = qf_gemm_desc_default();
        size_t m = 1 + (size_t)rbelow(&r, 12), k = (size_t)rbelow(&r, 700), i, l, ar, ac;
        ptrdiff_t incx = rbelow(&r, 3) ? 1 : (rbelow(&r, 2) ? 3 : -2), incy = rbelow(&r, 2) ? 1 : 2;
        const qf_format *f = qf_format_lookup(in_fmts[rbelow(&r, 8)]);
        double *a, *x, *y0;
        uint64_t *code;
        double *abs;
        d.layout = rbelow(&r, 2) ? QF_ROW_MAJOR : QF_COL_MAJOR;
        d.trans_a = rbelow(&r, 2) ? QF_TRANS : QF_NO_TRANS;
        d.m = m;
        d.k = k;
        d.alpha = pick_scalar(&r, 0);
        d.beta = pick_scalar(&r, 1);
        d.fa = d.fb = f;
        d.out = qf_format_lookup(out_fmts[rbelow(&r, 4)]);
        d.round = (qf_round)rbelow(&r, 5);
        ar = d.trans_a ? k : m;
        ac = d.trans_a ? m : k;
        d.lda = (d.layout == QF_ROW_MAJOR ? ac : ar) + 1;
        a = malloc((stored_len(d.layout, ar, ac, d.lda) + 1) * sizeof *a);
        fill(&r, a, stored_len(d.layout, ar, ac, d.lda) + 1, d.layout, ar, ac, d.lda, f, 1);
        x = malloc((k * 3 + 1) * sizeof *x);
        for (l = 0; l < k * 3 + 1; l++)
            x[l] = quantize(f, rnorm(&r));
        y0 = malloc((m * 2 + 1) * sizeof *y0);
        for (i = 0; i < m * 2 + 1; i++)
            y0[i] = rnorm(&r);
        d.a = a;
        d.ldd = 2;
        code = malloc(2 * m * sizeof *code);
        abs = malloc(2 * m * sizeof *abs);
        d.d_code = code;
        d.d_abs = abs;
        {
            const double *xs = incx < 0 ? x + (k ? (k - 1) * 2 : 0) : x; /* first term; walks backwards */
            ck_assert_int_eq(qf_gemv(&d, xs, incx, y0, incy), QF_OK);
            for (i = 0; i < m; i++) {
                want w;
                const double *ai =
                    (d.layout == QF_ROW_MAJOR) != (d.trans_a == QF_TRANS) ? a + i * d.lda : a + i;
                ptrdiff_t sa = (d.layout == QF_ROW_MAJOR) != (d.trans_a == QF_TRANS) ? 1 : (ptrdiff_t)d.lda;
                oracle(&w, k, d.alpha, ai, sa, xs, incx, d.beta, y0[(ptrdiff_t)i * incy]);
                if (code[i * 2] != expected_code(d.out, w.sum, d.round, 0, 32, 0))
                    ck_abort_msg("gemv case %ld row %zu (QF_SEED=%llu)", cs, i, (unsigned long long)seed);
                mpfr_clear(w.sum);
                mpfr_clear(w.abs);
            }
        }
        free(a);
        free(x);
        free(y0);
        free(code);
        free(abs);
    }
}
END_TEST

/* One 1 x 1 x k GEMM into out with mode m: the status of its element. */
static uint8_t status_of(const double *a, const double *b, size_t k, const char *out, qf_round m, int sat)
{
    qf_gemm_desc d = qf_gemm_desc_default();
    double v = -777.0;
    uint8_t st = 0xEE;
    d.m = d.n = 1;
    d.k = k;
    d.a = a;
    d.lda = k ? k : 1;
    d.b = b;
    d.ldb = 1;
    d.ldd = 1;
    d.out = qf_format_lookup(out);
    d.round = m;
    d.saturate = sat;
    d.d_status = &st;
    ck_assert_int_eq(qf_gemm(&d), QF_OK);
    /* the same status when values are asked for too */
    d.d_value = &v;
    st = 0xEE;
    ck_assert_int_eq(qf_gemm(&d), QF_OK);
    return st;
}

START_TEST(test_gemm_status)
{
    /* 1*1 + 2^-600 * 2^-600: rounds to 1 in every nearest mode, but the
     * binary64 error 1 - exact = -2^-1200 reads as 0. */
    static const double tiny[2] = {1, 0x1p-600}, one[2] = {1, 1}, third[1] = {0x1.5555555555555p-2};
    static const double ex_a[3] = {1.5, -2, 0.25}, ex_b[3] = {4, 0.5, 8}; /* 6 - 1 + 2 = 7 */
    static const double k1024[1] = {1024}, big[1] = {1e6}, inf1[2] = {INFINITY, 1};
    static const double inf2[2] = {INFINITY, -INFINITY}, opp[2] = {1, -1};
    static const struct {
        const double *a, *b;
        size_t k;
        const char *out;
        qf_round m;
        int sat;
        uint8_t want;
    } cs[] = {
        {ex_a, ex_b, 3, "float64", QF_ROUND_RNE, 0, QF_REF_EXACT},
        {ex_a, ex_b, 3, "float8_e4m3fn", QF_ROUND_RTZ, 0, QF_REF_EXACT},
        {tiny, tiny, 2, "float64", QF_ROUND_RNE, 0, QF_REF_ROUNDED},
        {tiny, tiny, 2, "float64", QF_ROUND_UP, 0, QF_REF_ROUNDED},
        {tiny, tiny, 1, "float64", QF_ROUND_UP, 0, QF_REF_EXACT},
        /* the double nearest 1/3 is exact in float64, rounded in bfloat16 */
        {one, third, 1, "float64", QF_ROUND_RNE, 0, QF_REF_EXACT},
        {one, third, 1, "bfloat16", QF_ROUND_RNE, 0, QF_REF_ROUNDED},
        /* overflow: to Inf, to max, to NaN (e4m3fn has no Inf) */
        {k1024, one, 1, "float8_e5m2", QF_ROUND_RNE, 0, QF_REF_EXACT},
        {big, one, 1, "float8_e5m2", QF_ROUND_RNE, 0, QF_REF_ROUNDED},
        {big, one, 1, "float8_e4m3fn", QF_ROUND_RNE, 1, QF_REF_ROUNDED},
        {big, one, 1, "float8_e4m3fn", QF_ROUND_RNE, 0, QF_REF_ROUNDED},
        /* Inf is exact where the target holds it; Inf - Inf has no value */
        {inf1, one, 2, "float64", QF_ROUND_RNE, 0, QF_REF_EXACT},
        {inf1, one, 2, "float8_e4m3fn", QF_ROUND_RNE, 1, QF_REF_ROUNDED},
        {inf2, one, 2, "float64", QF_ROUND_RNE, 0, QF_REF_UNDEFINED},
        {inf2, one, 2, "float4_e2m1fn", QF_ROUND_RNE, 0, QF_REF_UNDEFINED},
        /* an exact zero, -0 in DOWN, and the empty sum */
        {opp, one, 2, "float64", QF_ROUND_DOWN, 0, QF_REF_EXACT},
        {opp, one, 0, "float64", QF_ROUND_RNE, 0, QF_REF_EXACT},
    };
    size_t c;
    for (c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        uint8_t got = status_of(cs[c].a, cs[c].b, cs[c].k, cs[c].out, cs[c].m, cs[c].sat);
        ck_assert_msg(got == cs[c].want, "status case %zu: %u, want %u", c, got, cs[c].want);
    }
    {
        /* GEMV fills its stride-2 vector too */
        qf_gemm_desc d = qf_gemm_desc_default();
        double A[2] = {1, 0x1p-600}, x[1] = {0x1p-600};
        uint8_t st[4] = {0xEE, 0xEE, 0xEE, 0xEE};
        d.m = 2;
        d.k = 1;
        d.a = A;
        d.lda = 1;
        d.ldd = 2;
        d.d_status = st;
        ck_assert_int_eq(qf_gemv(&d, x, 1, NULL, 1), QF_OK);
        ck_assert_uint_eq(st[0], QF_REF_EXACT);
        ck_assert_uint_eq(st[1], 0xEE);
        ck_assert_uint_eq(st[2], QF_REF_ROUNDED); /* 2^-1200 underflows */
        ck_assert_uint_eq(st[3], 0xEE);
    }
}
END_TEST

START_TEST(test_gemm_errors)
{
    qf_gemm_desc d = qf_gemm_desc_default();
    double a[4] = {1, 2, 3, 4}, out[4];
    d.m = d.n = d.k = 2;
    d.a = a;
    d.b = a;
    d.lda = 1; /* too small */
    d.ldb = 2;
    d.ldd = 2;
    d.d_value = out;
    ck_assert_int_eq(qf_gemm(&d), QF_EINVAL);
    d.lda = 2;
    d.beta = 1; /* C needed */
    ck_assert_int_eq(qf_gemm(&d), QF_EINVAL);
    d.beta = 0;
    d.out = qf_format_lookup("e8m0");
    d.round = QF_ROUND_RNE;
    if (!qf_round_valid(d.out, QF_ROUND_RNE))
        ck_assert_int_eq(qf_gemm(&d), QF_EFORMAT);
    d.out = NULL;
    d.d_err = out;
    ck_assert_int_eq(qf_gemm(&d), QF_EINVAL); /* no candidate */
    d.d_err = NULL;
    ck_assert_int_eq(qf_gemm(&d), QF_OK);
    ck_assert(out[0] == 7 && out[1] == 10 && out[2] == 15 && out[3] == 22);
    {
        qf_dot_acc acc;
        qf_gemm_desc e = d;
        ck_assert_int_eq(qf_gemm_acc_element(&d, 0, 2, 0, &acc, NULL), QF_EINVAL);
        /* no outputs and no ldd: one element still works */
        e.d_value = NULL;
        e.ldd = 0;
        qf_dot_acc_init(&acc);
        ck_assert_int_eq(qf_gemm_acc_element(&e, 0, 1, 1, &acc, NULL), QF_OK);
        ck_assert(qf_dot_acc_get_d(&acc, QF_ROUND_RNE) == 22);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/gemm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_gemm_errors);
    tcase_add_test(tc, test_gemm_status);
    tcase_add_test(tc, test_gemm_random);
    tcase_add_test(tc, test_gemm_tiles);
    tcase_add_test(tc, test_gemv);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
