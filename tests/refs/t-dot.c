/* t-dot.c: the exact dot engine against exact products + mpfr_sum.
 *
 * Oracle: every product in MPFR at 106 bits (exact), mpfr_sum at a
 * precision wide enough for the exact sum (its ternary value must be 0),
 * then qf_format_encode_mpfr into each target.  The engine must give the
 * same code in every format of precision/, every deterministic mode and
 * with and without saturation; the magnitude sum rounded up, the error of
 * a candidate, and the convenience qf_dot must agree too.
 *
 * Cases (each under every block-kernel ISA this CPU has): random inputs of
 * each input format (random codes: every binade; and normal data: the fast
 * paths); GenDot ill-conditioned dot products (Ogita, Rump, Oishi 2005,
 * algorithm 6.1) up to condition 1e30 (binary64) and as far as each
 * format's range allows; exact cancellation to zero; sums that are a
 * midpoint of the target format, and sums a hair off a midpoint that
 * binary64 rounds onto it; subnormal results; results at the overflow
 * threshold; NaN and Inf.
 *
 * About 10^4 cases by default; QF_TEST_SCALE multiplies, and QF_TEST_LONG=1
 * runs 100 times as many (10^6).  A failure prints the seed, the case
 * number (QF_DOT_CASE=k reruns that one case), the formats and the inputs.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h> /* before mpfr.h: mpfr_fprintf */
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_format_mpfr.h"
#include "qf_test.h"

/* ---- Random numbers (counter based: reproducible per case) ---------------- */

typedef struct rng {
    uint64_t seed, ctr;
} rng;

static uint64_t rnext(rng *r)
{
    return qf_rng_u64(r->seed, r->ctr++);
}

static double runif(rng *r) /* [0, 1) */
{
    return (double)(rnext(r) >> 11) * 0x1p-53;
}

static int rint_below(rng *r, int n)
{
    return (int)(rnext(r) % (uint64_t)n);
}

static double rnorm(rng *r)
{
    double u = runif(r), v = runif(r);
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

static long long_factor(void)
{
    /* qf_test_scale() is 10 in long mode: 100x as many cases there */
    double s = qf_test_scale();
    return s >= 10 ? (long)(s * 10) : (long)s;
}

static long n_cases(long base)
{
    long n = base * long_factor();
    return n < 1 ? 1 : n;
}

static const char *case_only(void)
{
    const char *s = getenv("QF_DOT_CASE");
    return s && *s ? s : NULL;
}

/* ---- Values of an input format -------------------------------------------- */

static double quantize(const qf_format *f, double v)
{
    if (!f || f->id == QF_FLOAT64)
        return v;
    return qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RNE, 1, 32, 0));
}

/* A random finite value of f from a random code (every binade alike). */
static double random_code_value(const qf_format *f, rng *r)
{
    for (;;) {
        uint64_t c = rnext(r);
        double v;
        if (f->id == QF_FLOAT64) {
            memcpy(&v, &c, sizeof v);
        } else {
            c &= f->storage_bits >= 64 ? ~0ull : ((1ull << f->storage_bits) - 1);
            if (f->id == QF_TF32)
                c &= ~0x1FFFull;
            v = qf_format_decode(f, c);
        }
        if (isfinite(v))
            return v;
    }
}

/* Normal data at a random scale, quantized into f. */
static double random_normal_value(const qf_format *f, rng *r, double scale)
{
    return quantize(f, rnorm(r) * scale);
}

/* ---- The oracle ------------------------------------------------------------ */

typedef struct oracle {
    mpfr_t sum, abs;
} oracle;

static void exact_dot(size_t n, const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy, oracle *o)
{
    mpfr_t *p = malloc((n ? n : 1) * sizeof *p), *q = malloc((n ? n : 1) * sizeof *q);
    mpfr_ptr *pp = malloc((n ? n : 1) * sizeof *pp), *qq = malloc((n ? n : 1) * sizeof *qq);
    mpfr_exp_t emax = 0, emin = 0;
    int have = 0, t1, t2;
    size_t i;
    mpfr_prec_t prec;

    for (i = 0; i < n; i++) {
        mpfr_init2(p[i], 106);
        mpfr_init2(q[i], 106);
        mpfr_set_d(p[i], x[(ptrdiff_t)i * incx], MPFR_RNDN);
        mpfr_mul_d(p[i], p[i], y[(ptrdiff_t)i * incy], MPFR_RNDN); /* exact: 53 x 53 bits */
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
    prec = have ? (mpfr_prec_t)(emax - emin) + 106 + 80 : 64;
    mpfr_init2(o->sum, prec);
    mpfr_init2(o->abs, prec);
    t1 = mpfr_sum(o->sum, pp, (unsigned long)n, MPFR_RNDN);
    t2 = mpfr_sum(o->abs, qq, (unsigned long)n, MPFR_RNDN);
    ck_assert_msg(t1 == 0 && t2 == 0, "oracle: mpfr_sum not exact at precision %ld", (long)prec);
    for (i = 0; i < n; i++) {
        mpfr_clear(p[i]);
        mpfr_clear(q[i]);
    }
    free(p);
    free(q);
    free(pp);
    free(qq);
}

static void oracle_clear(oracle *o)
{
    mpfr_clear(o->sum);
    mpfr_clear(o->abs);
}

static uint64_t expected_code(const qf_format *f, mpfr_srcptr v, qf_round m, int sat)
{
    if (mpfr_zero_p(v)) /* the engine's rule: +0, -0 when rounding down */
        return qf_format_encode_parts(f, m == QF_ROUND_DOWN, 0, 0, 0, m, sat, 32, 0);
    return qf_format_encode_mpfr(f, v, m, sat, 32, 0);
}

/* ---- Comparing ------------------------------------------------------------- */

static const qf_round modes[] = {QF_ROUND_RNE, QF_ROUND_RNA, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};

typedef struct ctx {
    uint64_t seed;
    long case_no;
    const char *kind;
    const qf_format *fx, *fy;
    size_t n;
    const double *x, *y;
    ptrdiff_t incx, incy;
    const char *isa;
} ctx;

static void print_case(const ctx *c)
{
    size_t i;
    fprintf(stderr,
            "  reproduce: QF_SEED=%llu QF_DOT_CASE=%ld (kind %s, isa %s)\n  inputs %s x %s, n=%zu, incx=%td, "
            "incy=%td\n",
            (unsigned long long)c->seed, c->case_no, c->kind, c->isa, c->fx ? c->fx->name : "float64",
            c->fy ? c->fy->name : "float64", c->n, c->incx, c->incy);
    for (i = 0; i < c->n && i < 40; i++)
        fprintf(stderr, "    x[%zu] = %a  y[%zu] = %a\n", i, c->x[(ptrdiff_t)i * c->incx], i,
                c->y[(ptrdiff_t)i * c->incy]);
    if (c->n > 40)
        fprintf(stderr, "    ... (%zu more terms; rerun the case to regenerate them)\n", c->n - 40);
}

static long total_checks, total_cases;

/* Every format, mode and saturation: engine vs oracle.  Returns mismatches. */
static int compare_acc(const ctx *c, qf_dot_acc *acc, const oracle *o)
{
    int fi, mi, sat, bad = 0;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        for (mi = 0; mi < (int)(sizeof modes / sizeof modes[0]); mi++) {
            if (!qf_round_valid(f, modes[mi]))
                continue;
            for (sat = 0; sat < 2; sat++) {
                uint64_t got = qf_dot_acc_round(acc, f, modes[mi], sat, 32, 0);
                uint64_t want = expected_code(f, o->sum, modes[mi], sat);
                total_checks++;
                if (got != want) {
                    if (!bad) {
                        mpfr_fprintf(
                            stderr,
                            "MISMATCH dot -> %s %s sat=%d: got 0x%llx (%a) want 0x%llx (%a); exact %.40Rg\n",
                            f->name, qf_round_name(modes[mi]), sat, (unsigned long long)got,
                            qf_format_decode(f, got), (unsigned long long)want, qf_format_decode(f, want),
                            o->sum);
                        print_case(c);
                    }
                    bad++;
                }
            }
        }
    }
    return bad;
}

/* The whole check of one dot product. */
static void check_dot(ctx *c, rng *r)
{
    qf_dot_acc acc, abs;
    oracle o;
    int bad;
    uint64_t code, want;
    double value, abs_up, cand, err, err_want, want_abs;
    qf_dot_round dr;
    const qf_format *f64 = qf_format_get(QF_FLOAT64);

    c->isa = qf_dot_isa();
    total_cases++;
    exact_dot(c->n, c->x, c->incx, c->y, c->incy, &o);
    qf_dot_acc_init(&acc);
    qf_dot_acc_init(&abs);
    qf_dot_acc_add_dot(&acc, &abs, c->n, c->x, c->incx, c->y, c->incy, c->fx, c->fy);
    bad = compare_acc(c, &acc, &o);
    ck_assert_msg(bad == 0, "%d mismatches (case %ld, %s)", bad, c->case_no, c->kind);

    /* magnitude: exact, then rounded up */
    want_abs = qf_format_decode(f64, qf_format_encode_mpfr(f64, o.abs, QF_ROUND_UP, 0, 32, 0));
    abs_up = qf_dot_acc_get_d(&abs, QF_ROUND_UP);
    if (!(abs_up == want_abs || (isnan(abs_up) && isnan(want_abs)))) {
        print_case(c);
        ck_abort_msg("abs sum %a, want %a", abs_up, want_abs);
    }

    /* the same through the accumulator without abs, and through qf_dot */
    {
        qf_dot_acc a2;
        qf_dot_acc_init(&a2);
        qf_dot_acc_add_dot(&a2, NULL, c->n, c->x, c->incx, c->y, c->incy, c->fx, c->fy);
        ck_assert_int_eq(compare_acc(c, &a2, &o), 0);
    }
    dr.out = qf_format_get((qf_format_id)rint_below(r, QF_FORMAT_COUNT));
    dr.round = modes[rint_below(r, 5)];
    if (!qf_round_valid(dr.out, dr.round))
        dr.out = qf_format_get(QF_BFLOAT16);
    dr.saturate = rint_below(r, 2);
    dr.random_bits = 32;
    dr.rnd_word = 0;
    ck_assert_int_eq(qf_dot(c->n, c->x, c->incx, c->y, c->incy, c->fx, c->fy, &dr, &code, &value, &abs_up),
                     QF_OK);
    want = expected_code(dr.out, o.sum, dr.round, dr.saturate);
    if (code != want) {
        print_case(c);
        ck_abort_msg("qf_dot -> %s %s: 0x%llx want 0x%llx", dr.out->name, qf_round_name(dr.round),
                     (unsigned long long)code, (unsigned long long)want);
    }
    ck_assert(value == qf_format_decode(dr.out, code) ||
              (isnan(value) && isnan(qf_format_decode(dr.out, code))));

    /* the error of a candidate near the exact value */
    if (mpfr_number_p(o.sum)) {
        mpfr_t d;
        double ex = mpfr_get_d(o.sum, MPFR_RNDN);
        int k = rint_below(r, 4);
        cand = k == 0   ? ex
               : k == 1 ? nextafter(ex, INFINITY)
               : k == 2 ? (double)(float)ex
                        : ex * (1 + 0x1p-20);
        if (!isfinite(cand))
            cand = ex;
        if (isfinite(cand)) {
            mpfr_init2(d, mpfr_get_prec(o.sum) + 1100);
            mpfr_set_d(d, cand, MPFR_RNDN);
            ck_assert(mpfr_sub(d, d, o.sum, MPFR_RNDN) == 0);
            err_want = qf_format_decode(f64, qf_format_encode_mpfr(f64, d, QF_ROUND_RNE, 0, 32, 0));
            err = qf_dot_acc_error(&acc, cand);
            if (!(err == err_want && signbit(err) == signbit(err_want)) && !(err == 0 && err_want == 0)) {
                print_case(c);
                ck_abort_msg("error of %a: %a, want %a", cand, err, err_want);
            }
            mpfr_clear(d);
            /* and the accumulator is unchanged */
            ck_assert_int_eq(compare_acc(c, &acc, &o), 0);
        }
    }
    oracle_clear(&o);
}

/* ---- Input formats ----------------------------------------------------------- */

static const char *const input_names[] = {"float64",
                                          "float32",
                                          "tf32",
                                          "bfloat16",
                                          "float16",
                                          "float8_e4m3fn",
                                          "float8_e5m2",
                                          "float8_e4m3fnuz",
                                          "float8_e5m2fnuz",
                                          "float6_e2m3fn",
                                          "float6_e3m2fn",
                                          "float4_e2m1fn",
                                          "int8",
                                          "int4"};
#define N_INPUTS ((int)(sizeof input_names / sizeof input_names[0]))

static const qf_format *input_format(int i)
{
    const qf_format *f = qf_format_lookup(input_names[i]);
    ck_assert_msg(f != NULL, "no format %s", input_names[i]);
    return f;
}

static size_t random_length(rng *r)
{
    switch (rint_below(r, 8)) {
    case 0: return (size_t)rint_below(r, 5); /* 0..4 */
    case 1: return (size_t)rint_below(r, 40);
    case 2: return 1024 * (1 + (size_t)rint_below(r, 4)) + (size_t)rint_below(r, 3) - 1; /* block edges */
    case 3: return 512 + (size_t)rint_below(r, 20);
    default: return 1 + (size_t)rint_below(r, 300);
    }
}

/* Fill x, y (stride 1 storage of n * |inc| entries) with values. */
typedef enum { GEN_CODES, GEN_NORMAL, GEN_MIXED } gen_kind;

static void gen_random(rng *r, gen_kind kind, const qf_format *fx, const qf_format *fy, size_t n, double *x,
                       double *y)
{
    size_t i;
    double sx = ldexp(1.0, rint_below(r, 21) - 10), sy = ldexp(1.0, rint_below(r, 21) - 10);
    if (fx->kind == QF_KIND_INT)
        sx = ldexp(1.0, rint_below(r, 5));
    if (fy->kind == QF_KIND_INT)
        sy = ldexp(1.0, rint_below(r, 5));
    for (i = 0; i < n; i++) {
        gen_kind k = kind == GEN_MIXED ? (rint_below(r, 50) == 0 ? GEN_CODES : GEN_NORMAL) : kind;
        x[i] = k == GEN_CODES ? random_code_value(fx, r) : random_normal_value(fx, r, sx);
        y[i] = k == GEN_CODES ? random_code_value(fy, r) : random_normal_value(fy, r, sy);
        if (rint_below(r, 16) == 0)
            x[i] = 0; /* zeros are common in quantized data */
    }
}

/* Spread n values at stride inc (|inc| >= 1) into buf; returns the pointer
 * to pass with inc (at the end for a negative inc). */
static const double *strided(const double *v, size_t n, ptrdiff_t inc, double *buf, rng *r)
{
    size_t i, m = n * (size_t)(inc < 0 ? -inc : inc);
    for (i = 0; i < m; i++)
        buf[i] = (double)rint_below(r, 7) - 3; /* garbage between the terms */
    if (inc > 0) {
        for (i = 0; i < n; i++)
            buf[i * (size_t)inc] = v[i];
        return buf;
    }
    for (i = 0; i < n; i++)
        buf[m - 1 - i * (size_t)(-inc)] = v[i];
    return buf + (m - 1);
}

/* ---- Random inputs of every format ------------------------------------------- */

static void run_random(uint64_t seed, long ncases, long first_case)
{
    double *x = malloc(3 * QF_DOT_BLOCK * sizeof *x), *y = malloc(3 * QF_DOT_BLOCK * sizeof *y);
    double *bx = malloc(9 * QF_DOT_BLOCK * sizeof *bx), *by = malloc(9 * QF_DOT_BLOCK * sizeof *by);
    long cs;
    const char *only = case_only();
    for (cs = first_case; cs < first_case + ncases; cs++) {
        rng r = {qf_rng_u64(seed, (uint64_t)cs), 0};
        ctx c;
        int ix = rint_below(&r, N_INPUTS), iy = rint_below(&r, 3) ? ix : rint_below(&r, N_INPUTS);
        gen_kind k = (gen_kind)rint_below(&r, 3);
        if (only && atol(only) != cs)
            continue;
        memset(&c, 0, sizeof c);
        c.seed = seed;
        c.case_no = cs;
        c.kind = k == GEN_CODES ? "random codes" : k == GEN_NORMAL ? "normal" : "normal+codes";
        c.fx = input_format(ix);
        c.fy = input_format(iy);
        c.n = random_length(&r);
        gen_random(&r, k, c.fx, c.fy, c.n, x, y);
        c.incx = rint_below(&r, 6) == 0 ? (rint_below(&r, 2) ? 3 : -2) : 1;
        c.incy = rint_below(&r, 6) == 0 ? (rint_below(&r, 2) ? 2 : -1) : 1;
        c.x = strided(x, c.n, c.incx, bx, &r);
        c.y = strided(y, c.n, c.incy, by, &r);
        check_dot(&c, &r);
    }
    free(x);
    free(y);
    free(bx);
    free(by);
}

static void for_each_isa(void (*fn)(uint64_t, long, long), long base, const char *what)
{
    static const char *const isas[] = {"avx2", "sse2", "scalar"};
    const char *best;
    long first = 0;
    int i;
    qf_dot_set_isa(NULL);
    best = qf_dot_isa();
    for (i = 0; i < 3; i++) {
        long n;
        if (qf_dot_set_isa(isas[i]) != QF_OK)
            continue;
        /* the full count on the ISA in use, a quarter on the others */
        n = strcmp(isas[i], best) == 0 ? n_cases(base) : n_cases(base) / 4;
        fn(qf_test_seed(), n, first);
        first += n;
    }
    qf_dot_set_isa(NULL);
    fprintf(stderr, "%s: %ld dot products checked, %ld (format, mode, saturation) roundings compared\n", what,
            total_cases, total_checks);
}

START_TEST(test_random_inputs)
{
    for_each_isa(run_random, 4000, "random inputs");
}
END_TEST

/* ---- Ill-conditioned dot products (GenDot) ---------------------------------- */

/* Dot2 of Ogita, Rump and Oishi: accurate enough to steer the generator. */
static double dot2(size_t n, const double *x, const double *y)
{
    double s = 0, c = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double p = x[i] * y[i], e = fma(x[i], y[i], -p);
        double t = s + p, z = t - s, err = (s - (t - z)) + (p - z);
        s = t;
        c += err + e;
    }
    return s + c;
}

static double achieved_cond[N_INPUTS];

static void gendot(rng *r, const qf_format *f, size_t n, double logc, double *x, double *y)
{
    size_t n2 = n / 2, i, j;
    double b = logc;
    for (i = 0; i < n2; i++) {
        int e = i == 0 ? (int)lround(b / 2) + 1 : i == n2 - 1 ? 0 : (int)lround(runif(r) * b / 2);
        x[i] = quantize(f, (2 * runif(r) - 1) * ldexp(1.0, e));
        y[i] = quantize(f, (2 * runif(r) - 1) * ldexp(1.0, e));
    }
    for (i = n2; i < n; i++) {
        double t = n - n2 > 1 ? (double)(i - n2) / (double)(n - n2 - 1) : 1;
        int e = (int)lround(b / 2 * (1 - t));
        x[i] = quantize(f, (2 * runif(r) - 1) * ldexp(1.0, e));
        if (x[i] == 0)
            x[i] = quantize(f, ldexp(1.0, e));
        y[i] = x[i] == 0 ? 0 : quantize(f, ((2 * runif(r) - 1) * ldexp(1.0, e) - dot2(i, x, y)) / x[i]);
    }
    for (i = n - 1; i > 0; i--) { /* shuffle the pairs */
        double t;
        j = (size_t)rint_below(r, (int)i + 1);
        t = x[i];
        x[i] = x[j];
        x[j] = t;
        t = y[i];
        y[i] = y[j];
        y[j] = t;
    }
}

static void run_gendot(uint64_t seed, long ncases, long first_case)
{
    double x[700], y[700];
    long cs;
    const char *only = case_only();
    for (cs = first_case; cs < first_case + ncases; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x6e6d, (uint64_t)cs), 0};
        ctx c;
        int ix = rint_below(&r, N_INPUTS - 2); /* floats only */
        const qf_format *f = input_format(ix);
        /* the largest exponent range the format allows, capped at 1e30 */
        double logc = f->id == QF_FLOAT64 ? 100 : fmin(100, 2.0 * f->emax - 2);
        if (only && atol(only) != cs)
            continue;
        logc *= 0.2 + 0.8 * runif(&r);
        memset(&c, 0, sizeof c);
        c.seed = seed;
        c.case_no = cs;
        c.kind = "gendot";
        c.fx = c.fy = f;
        c.n = 6 + (size_t)rint_below(&r, 600);
        gendot(&r, f, c.n, logc, x, y);
        c.x = x;
        c.y = y;
        c.incx = c.incy = 1;
        check_dot(&c, &r);
        {
            qf_dot_acc a, m;
            double s, mg, cond;
            qf_dot_acc_init(&a);
            qf_dot_acc_init(&m);
            qf_dot_acc_add_dot(&a, &m, c.n, x, 1, y, 1, f, f);
            s = fabs(qf_dot_acc_get_d(&a, QF_ROUND_RNE));
            mg = qf_dot_acc_get_d(&m, QF_ROUND_RNE);
            cond = s > 0 ? 2 * mg / s : INFINITY;
            if (isfinite(cond) && cond > achieved_cond[ix])
                achieved_cond[ix] = cond;
        }
    }
}

START_TEST(test_gendot)
{
    int i;
    for_each_isa(run_gendot, 1500, "gendot");
    for (i = 0; i < N_INPUTS - 2; i++)
        fprintf(stderr, "gendot: largest condition number reached with %s inputs: %.3g\n", input_names[i],
                achieved_cond[i]);
    ck_assert(achieved_cond[0] > 1e25);
}
END_TEST

/* ---- Constructed sums: ties, cancellation, subnormal, overflow ---------------- */

/* Write v exactly as a sum of values of f (times 1.0): greedy, toward zero.
 * Returns the count, or 0 if f cannot (range, pieces). */
static size_t split_into(const qf_format *f, double v, double *out, size_t max)
{
    size_t k = 0;
    while (v != 0) {
        double a;
        if (k == max)
            return 0;
        a = qf_format_decode(f, qf_format_encode(f, v, QF_ROUND_RTZ, 1, 32, 0));
        if (a == 0 || !isfinite(a))
            return 0;
        out[k++] = a;
        v -= a; /* exact: a is v truncated */
    }
    return k;
}

/* The hazard counter: cases where rounding exact -> binary64 -> target
 * differs from the correct rounding (shows the tie cases bite). */
static long double_round_hazards;

/* Build a dot whose exact value is hi + lo + tiny (hi + lo exact in
 * double-double, tiny a product of two small values of f), plus pairs that
 * cancel exactly; then check it. */
static void constructed(ctx *c, rng *r, const qf_format *f, double hi, double lo, double tx, double ty,
                        double *x, double *y)
{
    size_t n = 0, k, i, j;
    double parts[64];
    k = split_into(f, hi, parts, 24);
    if (hi != 0 && k == 0)
        return;
    for (i = 0; i < k; i++) {
        x[n] = parts[i];
        y[n++] = 1;
    }
    k = split_into(f, lo, parts, 24);
    if (lo != 0 && k == 0)
        return;
    for (i = 0; i < k; i++) {
        x[n] = parts[i];
        y[n++] = 1;
    }
    if (tx != 0) {
        x[n] = tx;
        y[n++] = ty;
    }
    /* exactly cancelling pairs, some as different products */
    k = (size_t)rint_below(r, 30);
    for (i = 0; i < k; i++) {
        double a = random_normal_value(f, r, 8), b = random_normal_value(f, r, 8);
        x[n] = a;
        y[n++] = b;
        if (rint_below(r, 2) && quantize(f, 2 * a) == 2 * a && quantize(f, b / 2) == b / 2) {
            x[n] = -2 * a;
            y[n++] = b / 2;
        } else {
            x[n] = b;
            y[n++] = -a;
        }
    }
    for (i = n; i > 1; i--) {
        double t;
        j = (size_t)rint_below(r, (int)i);
        t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
        t = y[i - 1];
        y[i - 1] = y[j];
        y[j] = t;
    }
    for (i = 0; i < n; i++) { /* the pieces must be values of f */
        if (quantize(f, x[i]) != x[i] || quantize(f, y[i]) != y[i])
            return;
    }
    c->n = n;
    c->x = x;
    c->y = y;
    c->incx = c->incy = 1;
    c->fx = c->fy = f;
    check_dot(c, r);
}

/* A midpoint of target t (or its overflow threshold max + ulp/2) that
 * input format f can write as a short sum: hi + lo, a double-double for a
 * binary64 target, lo = 0 otherwise.  0 if there is none. */
static int target_value(rng *r, const qf_format *t, const qf_format *f, int where, double *hi, double *lo)
{
    int p = t->man_bits + 1, e, elo, ehi;
    double ulp, base;
    if (where == 2) {
        ulp = ldexp(1.0, t->emax - p + 1);
        *hi = t->max;
        *lo = ulp / 2;
    } else {
        if (where == 1) { /* subnormal range of t */
            e = t->emin - 1 - rint_below(r, t->man_bits);
        } else {
            elo = t->emin > f->emin + p + 1 ? t->emin : f->emin + p + 1;
            ehi = t->emax < f->emax ? t->emax : f->emax;
            if (elo > ehi)
                return 0;
            e = elo + rint_below(r, ehi - elo + 1);
        }
        ulp = ldexp(1.0, (e < t->emin ? t->emin : e) - p + 1);
        if (e < t->emin)
            base = ulp * (double)(rnext(r) % (1ull << (t->emin - e > 50 ? 50 : t->emin - e)));
        else
            base = ldexp(1.0, e) + ulp * (double)(rnext(r) % (1ull << (p - 1 > 50 ? 50 : p - 1)));
        *hi = base;
        *lo = ulp / 2;
    }
    if (t->id != QF_FLOAT64) {
        *hi += *lo; /* exact in binary64: t is narrower */
        *lo = 0;
    }
    return 1;
}

static void run_constructed(uint64_t seed, long ncases, long first_case)
{
    static const char *const targets[] = {"float64",       "float32",       "tf32",           "bfloat16",
                                          "float16",       "float8_e4m3fn", "float8_e5m2",    "float6_e2m3fn",
                                          "float6_e3m2fn", "float4_e2m1fn", "float8_e4m3fnuz"};
    static const char *const inputs[] = {"float64", "float32",       "bfloat16",
                                         "float16", "float8_e4m3fn", "float8_e5m2"};
    double x[200], y[200];
    long cs;
    const char *only = case_only();
    for (cs = first_case; cs < first_case + ncases; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x7469, (uint64_t)cs), 0};
        ctx c;
        const qf_format *t = qf_format_lookup(targets[rint_below(&r, 11)]);
        const qf_format *f = qf_format_lookup(inputs[rint_below(&r, 6)]);
        int where = rint_below(&r, 4), sgn = rint_below(&r, 2) ? -1 : 1, off = rint_below(&r, 3);
        double hi, lo, tx = 0, ty = 0;
        if (only && atol(only) != cs)
            continue;
        memset(&c, 0, sizeof c);
        c.seed = seed;
        c.case_no = cs;
        if (where == 3) { /* exact cancellation to zero */
            c.kind = "cancel to zero";
            constructed(&c, &r, f, 0, 0, 0, 0, x, y);
            continue;
        }
        c.kind = where == 2 ? "overflow threshold" : where == 1 ? "subnormal tie" : "tie";
        if (!target_value(&r, t, f, where, &hi, &lo) || (hi == 0 && lo == 0))
            continue;
        /* off = 0: exactly the midpoint; 1, 2: a tiny term above / below,
         * far under binary64's precision at that magnitude */
        if (off) {
            if (f->id == QF_FLOAT64) {
                tx = ldexp(1.0, ilogb(hi) - 80);
                ty = 1;
            } else {
                tx = ty = f->min_subnormal;
            }
            if (!(tx * ty > 0 && fabs(tx * ty) < ldexp(fabs(hi), -60)))
                continue; /* this input format cannot hide a term there */
            if (off == 2)
                tx = -tx;
        }
        if (sgn < 0) {
            hi = -hi;
            lo = -lo;
            tx = -tx;
        }
        {
            /* does exact -> binary64 -> target get it wrong in some mode? */
            mpfr_t v, p;
            int m;
            mpfr_init2(v, 4000);
            mpfr_init2(p, 120);
            mpfr_set_d(v, hi, MPFR_RNDN);
            mpfr_add_d(v, v, lo, MPFR_RNDN);
            mpfr_set_d(p, tx, MPFR_RNDN);
            mpfr_mul_d(p, p, ty, MPFR_RNDN);
            mpfr_add(v, v, p, MPFR_RNDN);
            for (m = 0; m < 5; m++)
                if (qf_format_encode(t, mpfr_get_d(v, MPFR_RNDN), modes[m], 0, 32, 0) !=
                    qf_format_encode_mpfr(t, v, modes[m], 0, 32, 0))
                    double_round_hazards++;
            mpfr_clear(v);
            mpfr_clear(p);
        }
        constructed(&c, &r, f, hi, lo, tx, ty, x, y);
    }
}

START_TEST(test_constructed)
{
    for_each_isa(run_constructed, 4000, "constructed");
    fprintf(stderr, "constructed: %ld (case, mode) pairs where exact -> binary64 -> target is wrong\n",
            double_round_hazards);
    if (!case_only())
        ck_assert_msg(double_round_hazards > 100, "the tie cases do not exercise double rounding");
}
END_TEST

/* ---- Blocks at the edge of the fast paths' proofs ------------------------------
 *
 * n - 1 large products of one sign plus one small product whose last bit
 * sits delta bits below (delta > 0) or on/above (delta <= 0) the finest
 * grid the block proof allows: a proof loosened by one bit accepts a block
 * whose binary64 sum is inexact, and these cases catch it (mutation-tested:
 * loosening either bound by a bit, or miscounting the significant bits or
 * the smallest exponent, fails here).  One level: bfloat16, float16, tf32
 * (bound: sum |p| < 2^(53 + L)); two levels: float32 (bound on the low
 * parts: L >= lb + ks - 106, sigma = 2^ks from the block's sum |p|). */
static int near_binade_edge(double a)
{
    double m = frexp(a, &(int){0}); /* a = m 2^e, m in [0.5, 1) */
    return m < 0.5 + 0x1p-30 || m > 1 - 0x1p-30;
}

static void run_boundary(uint64_t seed, long ncases, long first_case)
{
    static const char *const fmts[] = {"bfloat16", "float16", "tf32", "float32"};
    double x[QF_DOT_BLOCK], y[QF_DOT_BLOCK];
    long cs;
    const char *only = case_only();
    for (cs = first_case; cs < first_case + ncases; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x6564, (uint64_t)cs), 0};
        ctx c;
        int fi = rint_below(&r, 4), two = fi == 3, delta = rint_below(&r, 5) - 1, p, E, L, ex, ey, ks, lb;
        const qf_format *f = qf_format_lookup(fmts[fi]);
        size_t i, j, n = rint_below(&r, 2) ? 256 : 1024; /* one block of each plan */
        double u, a = 0;
        if (only && atol(only) != cs)
            continue;
        lb = n == 256 ? 8 : 10;
        p = f->man_bits + 1;
        u = ldexp(1.0, 1 - p);
        E = f->emax - 1 - rint_below(&r, f->emax - f->emin > 60 ? 40 : 4);
        for (i = 0; i + 1 < n; i++) {
            for (;;) {
                /* significands in [1.5, 2): the product's binade is 2E + 1 */
                double xa = quantize(f, ldexp(1.5 + 0.5 * runif(&r), E));
                double yb = quantize(f, ldexp(1.5 + 0.5 * runif(&r), E));
                if (xa >= ldexp(2.0, E))
                    xa = ldexp(2 - u, E);
                if (yb >= ldexp(2.0, E))
                    yb = ldexp(2 - u, E);
                if (two) {
                    /* large positive low parts: the r sum near its bound
                     * (sigma as the engine will take it: 2^(e(a) + 3)) */
                    double sg = ldexp(1.0, 2 * E + 1 + lb + 3), pr = xa * yb, q = (sg + pr) - sg;
                    if (pr - q < 0.3 * ldexp(sg, -53) && rint_below(&r, 8))
                        continue;
                }
                x[i] = xa;
                y[i] = yb;
                a += xa * yb;
                break;
            }
        }
        if (near_binade_edge(a))
            continue;
        if (two) {
            ks = ilogb(a) + 3;
            L = lb + ks - 106 - delta;
        } else {
            L = ilogb(a) - 52 - delta;
        }
        ex = (int)floor((L + 2 * p - 2) / 2.0);
        ey = L + 2 * p - 2 - ex;
        if (ex < f->emin || ey < f->emin || ex >= E || ey >= E)
            continue;
        x[n - 1] = ldexp(1 + u, ex); /* last bit set: lsb 2^(ex - p + 1) */
        y[n - 1] = ldexp(1 + u, ey);
        if (rint_below(&r, 2))
            x[n - 1] = -x[n - 1];
        for (i = n - 1; i > 0; i--) {
            double t;
            j = (size_t)rint_below(&r, (int)i + 1);
            t = x[i];
            x[i] = x[j];
            x[j] = t;
            t = y[i];
            y[i] = y[j];
            y[j] = t;
        }
        memset(&c, 0, sizeof c);
        c.seed = seed;
        c.case_no = cs;
        c.kind = "proof boundary";
        c.fx = c.fy = f;
        c.n = n;
        c.x = x;
        c.y = y;
        c.incx = c.incy = 1;
        check_dot(&c, &r);
    }
}

START_TEST(test_boundary)
{
    for_each_isa(run_boundary, 1500, "proof boundary");
}
END_TEST

/* ---- Specials ----------------------------------------------------------------- */

START_TEST(test_specials)
{
    const double inf = INFINITY;
    struct {
        double x[3], y[3];
        qf_dot_class want;
    } t[] = {
        {{1, inf, 2}, {1, 1, 1}, QF_DOT_POS_INF},
        {{1, inf, 2}, {1, -1, 1}, QF_DOT_NEG_INF},
        {{inf, inf, 0}, {1, -1, 0}, QF_DOT_NAN},
        {{0, 1, 1}, {inf, 1, 1}, QF_DOT_NAN},
        {{NAN, 1, 1}, {0, 1, 1}, QF_DOT_NAN},
        {{1e308, 1e308, 0}, {10, 10, 0}, QF_DOT_FINITE}, /* products overflow binary64, not the engine */
        {{1e308, 1e308, -1e308}, {10, 10, 20}, QF_DOT_ZERO},
        {{0x1p-1074, 0x1p-1074, 0}, {0x1p-1074, 0.5, 0}, QF_DOT_FINITE}, /* products below binary64 */
    };
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        qf_dot_acc a;
        int s, e, st;
        uint64_t sig;
        qf_dot_class k;
        const char *isas[] = {"avx2", "sse2", "scalar"};
        int j;
        for (j = 0; j < 3; j++) {
            if (qf_dot_set_isa(isas[j]) != QF_OK)
                continue;
            qf_dot_acc_init(&a);
            qf_dot_acc_add_dot(&a, NULL, 3, t[i].x, 1, t[i].y, 1, qf_format_get(QF_BFLOAT16),
                               qf_format_get(QF_BFLOAT16));
            k = qf_dot_acc_parts(&a, &s, &e, &sig, &st);
            ck_assert_msg(k == t[i].want, "special case %zu (%s): class %d want %d", i, isas[j], k,
                          t[i].want);
        }
    }
    qf_dot_set_isa(NULL);
    {
        /* NaN and Inf into formats: as qf_format_encode does */
        qf_dot_acc a;
        const qf_format *e4 = qf_format_lookup("e4m3");
        qf_dot_acc_init(&a);
        qf_dot_acc_add_d(&a, inf);
        ck_assert_uint_eq(qf_dot_acc_round(&a, e4, QF_ROUND_RNE, 0, 32, 0),
                          qf_format_encode(e4, inf, QF_ROUND_RNE, 0, 32, 0));
        ck_assert_uint_eq(qf_dot_acc_round(&a, e4, QF_ROUND_RNE, 1, 32, 0), 0x7E);
        ck_assert(qf_dot_acc_error(&a, 1.0) == -inf);
        ck_assert(isnan(qf_dot_acc_error(&a, inf)));
        qf_dot_acc_sub_d(&a, inf);
        ck_assert(isnan(qf_dot_acc_get_d(&a, QF_ROUND_RNE)));
    }
}
END_TEST

/* ---- The accumulator API: add/sub accumulators, scale, clear, carries ---------- */

static void acc_to_mpfr(mpfr_t v, const double *terms, size_t n)
{
    size_t i;
    mpfr_set_zero(v, 1);
    for (i = 0; i < n; i++)
        ck_assert(mpfr_add_d(v, v, terms[i], MPFR_RNDN) == 0);
}

static int same_value(qf_dot_acc *a, mpfr_srcptr v)
{
    int fi, mi;
    for (fi = 0; fi < QF_FORMAT_COUNT; fi++) {
        const qf_format *f = qf_format_get((qf_format_id)fi);
        for (mi = 0; mi < 5; mi++)
            if (qf_round_valid(f, modes[mi]) &&
                qf_dot_acc_round(a, f, modes[mi], 0, 32, 0) != expected_code(f, v, modes[mi], 0))
                return 0;
    }
    return 1;
}

START_TEST(test_accumulator_ops)
{
    uint64_t seed = qf_test_seed();
    long cs, n = n_cases(300);
    mpfr_t va, vb, w;
    mpfr_inits2(20000, va, vb, w, (mpfr_ptr)0);
    for (cs = 0; cs < n; cs++) {
        rng r = {qf_rng_u64(seed ^ 0x616363, (uint64_t)cs), 0};
        qf_dot_acc a, b;
        double ta[40], tb[40], s;
        size_t na = (size_t)rint_below(&r, 40), nb = (size_t)rint_below(&r, 40), i;
        int op = rint_below(&r, 6);
        qf_dot_acc_init(&a);
        qf_dot_acc_init(&b);
        for (i = 0; i < na; i++) {
            ta[i] = random_code_value(qf_format_get(QF_FLOAT64), &r);
            qf_dot_acc_add_d(&a, ta[i]);
        }
        for (i = 0; i < nb; i++) {
            tb[i] = ldexp(rnorm(&r), rint_below(&r, 200) - 100);
            qf_dot_acc_add_d(&b, tb[i]);
        }
        acc_to_mpfr(va, ta, na);
        acc_to_mpfr(vb, tb, nb);
        switch (op) {
        case 0: /* a += b */
            qf_dot_acc_add_acc(&a, &b);
            mpfr_add(w, va, vb, MPFR_RNDN);
            break;
        case 1: /* a -= b */
            qf_dot_acc_sub_acc(&a, &b);
            mpfr_sub(w, va, vb, MPFR_RNDN);
            break;
        case 2: /* aliasing: a += a, then a -= a */
            qf_dot_acc_add_acc(&a, &a);
            mpfr_mul_2ui(w, va, 1, MPFR_RNDN);
            ck_assert_msg(same_value(&a, w), "a + a (case %ld)", cs);
            qf_dot_acc_sub_acc(&a, &a);
            mpfr_set_zero(w, 1);
            break;
        case 3: /* scale by a double of any size, undone, within range */
            s = ldexp(1 + runif(&r), rint_below(&r, 400) - 200) * (rint_below(&r, 2) ? -1 : 1);
            qf_dot_acc_clear(&a);
            for (i = 0; i < nb; i++)
                qf_dot_acc_add_d(&a, tb[i]);
            ck_assert_int_eq(qf_dot_acc_scale(&a, s), QF_OK);
            mpfr_mul_d(w, vb, s, MPFR_RNDN);
            break;
        case 4: /* clear, then reuse */
            qf_dot_acc_clear(&a);
            for (i = 0; i < nb; i++)
                qf_dot_acc_sub_d(&a, tb[i]);
            mpfr_neg(w, vb, MPFR_RNDN);
            break;
        default: /* products of any doubles, subnormal included */
            qf_dot_acc_clear(&a);
            mpfr_set_zero(w, 1);
            for (i = 0; i < nb; i++) {
                double u = random_code_value(qf_format_get(QF_FLOAT64), &r);
                double v = random_code_value(qf_format_get(QF_FLOAT64), &r);
                mpfr_t p;
                mpfr_init2(p, 106);
                qf_dot_acc_add_product(&a, u, v);
                mpfr_set_d(p, u, MPFR_RNDN);
                mpfr_mul_d(p, p, v, MPFR_RNDN);
                ck_assert(mpfr_add(w, w, p, MPFR_RNDN) == 0);
                mpfr_clear(p);
            }
            break;
        }
        ck_assert_msg(same_value(&a, w), "accumulator op %d (case %ld, QF_SEED=%llu)", op, cs,
                      (unsigned long long)seed);
        ck_assert_int_eq(qf_dot_acc_sign(&a), mpfr_sgn(w) > 0 ? 1 : mpfr_sgn(w) < 0 ? -1 : 0);
    }
    mpfr_clears(va, vb, w, (mpfr_ptr)0);
}
END_TEST

START_TEST(test_scale_range_and_zero)
{
    qf_dot_acc a;
    int s, e, st;
    uint64_t sig;
    qf_dot_acc_init(&a);
    /* alpha * (product of two tiny doubles) stays in range */
    qf_dot_acc_add_product(&a, 0x1p-1074, 0x1p-1074);
    ck_assert_int_eq(qf_dot_acc_scale(&a, 0x1p-1074), QF_OK);
    ck_assert_int_eq(qf_dot_acc_parts(&a, &s, &e, &sig, &st), QF_DOT_FINITE);
    ck_assert_int_eq(e, -3222);
    ck_assert(sig == 1ull << 63 && st == 0 && s == 0);
    /* once more leaves the range: refused, unchanged */
    ck_assert_int_eq(qf_dot_acc_scale(&a, 0x1p-1074), QF_EINVAL);
    ck_assert_int_eq(qf_dot_acc_parts(&a, &s, &e, &sig, &st), QF_DOT_FINITE);
    ck_assert_int_eq(e, -3222);
    /* the top: (2^1023)^3 */
    qf_dot_acc_clear(&a);
    qf_dot_acc_add_product(&a, 0x1p1023, -0x1p1023);
    ck_assert_int_eq(qf_dot_acc_scale(&a, 0x1p1023), QF_OK);
    ck_assert_int_eq(qf_dot_acc_parts(&a, &s, &e, &sig, &st), QF_DOT_FINITE);
    ck_assert_int_eq(e, 3069);
    ck_assert_int_eq(s, 1);
    ck_assert(isinf(qf_dot_acc_get_d(&a, QF_ROUND_RNE)));
    ck_assert(qf_dot_acc_get_d(&a, QF_ROUND_UP) == -0x1.fffffffffffffp1023);
    /* scale by 0 and by Inf */
    ck_assert_int_eq(qf_dot_acc_scale(&a, 0.0), QF_OK);
    ck_assert_int_eq(qf_dot_acc_parts(&a, &s, &e, &sig, &st), QF_DOT_ZERO);
    ck_assert_int_eq(qf_dot_acc_scale(&a, INFINITY), QF_OK);
    ck_assert_int_eq(qf_dot_acc_parts(&a, &s, &e, &sig, &st), QF_DOT_NAN);
    /* the sign of an exact zero: +0, -0 when rounding down */
    qf_dot_acc_clear(&a);
    qf_dot_acc_add_product(&a, 3, 2);
    qf_dot_acc_add_product(&a, -2, 3);
    ck_assert(qf_dot_acc_get_d(&a, QF_ROUND_RNE) == 0 && !signbit(qf_dot_acc_get_d(&a, QF_ROUND_RNE)));
    ck_assert(signbit(qf_dot_acc_get_d(&a, QF_ROUND_DOWN)));
    ck_assert(!signbit(qf_dot_acc_get_d(&a, QF_ROUND_UP)));
    {
        double z[2] = {-0.0, 0.0}, o[2] = {1, -1};
        qf_dot_acc_clear(&a);
        qf_dot_acc_add_dot(&a, NULL, 2, z, 1, o, 1, NULL, NULL);
        ck_assert(!signbit(qf_dot_acc_get_d(&a, QF_ROUND_RNE)));
        ck_assert(qf_dot_acc_error(&a, -0.0) == 0 && !signbit(qf_dot_acc_error(&a, -0.0)));
    }
}
END_TEST

/* Carry passes: many additions into the same chunks; add_acc forces a
 * carry pass before the next addition, so the default run passes through
 * it thousands of times; the long run also crosses the periodic one. */
START_TEST(test_carries)
{
    qf_dot_acc a, one;
    long n = qf_test_scale() >= 10 ? (1l << 31) + 12345 : (1l << 22) + 17, i, k = 0;
    mpfr_t w;
    qf_dot_acc_init(&a);
    qf_dot_acc_init(&one);
    qf_dot_acc_add_d(&one, 1.0);
    for (i = 0; i < n; i++) {
        qf_dot_acc_add_d(&a, -0x1.fffffffffffffp+31); /* every digit near 2^32 - 1 */
        if ((i & 4095) == 0 && n < (1l << 30)) {
            qf_dot_acc_add_acc(&a, &one);
            k++;
        }
    }
    mpfr_init2(w, 200);
    mpfr_set_d(w, -0x1.fffffffffffffp+31, MPFR_RNDN);
    mpfr_mul_si(w, w, n, MPFR_RNDN);
    mpfr_add_si(w, w, k, MPFR_RNDN);
    ck_assert(same_value(&a, w));
    qf_dot_acc_add_acc(&a, &a);
    qf_dot_acc_add_d(&a, 1.0);
    mpfr_mul_2ui(w, w, 1, MPFR_RNDN);
    mpfr_add_d(w, w, 1.0, MPFR_RNDN);
    ck_assert(same_value(&a, w));
    mpfr_clear(w);
}
END_TEST

/* The fast paths are really taken on the data they are meant for. */
START_TEST(test_paths_taken)
{
    enum { NB = 8, N = NB * QF_DOT_BLOCK };
    static double x[N], y[N];
    rng r = {qf_test_seed(), 0};
    qf_dot_acc a;
    qf_dot_counts k;
    size_t i;
    const qf_format *bf = qf_format_lookup("bfloat16"), *f32 = qf_format_lookup("float32");
    qf_dot_acc_init(&a);
    for (i = 0; i < N; i++) {
        x[i] = random_normal_value(bf, &r, 1);
        y[i] = random_normal_value(bf, &r, 1);
    }
    qf_dot_reset_counts();
    qf_dot_acc_add_dot(&a, NULL, N, x, 1, y, 1, bf, bf);
    k = qf_dot_get_counts();
    fprintf(stderr, "paths bf16 normal: one %llu two %llu general %llu rejected %llu (isa %s)\n",
            (unsigned long long)k.one_level, (unsigned long long)k.two_level, (unsigned long long)k.general,
            (unsigned long long)k.rejected, qf_dot_isa());
    ck_assert(k.one_level == NB && k.general == 0);
    for (i = 0; i < N; i++) {
        x[i] = random_normal_value(f32, &r, 1);
        y[i] = random_normal_value(f32, &r, 1);
    }
    qf_dot_reset_counts();
    qf_dot_acc_add_dot(&a, NULL, N, x, 1, y, 1, f32, f32);
    k = qf_dot_get_counts();
    ck_assert(k.two_level == NB && k.general == 0);
    /* a binary64 value hiding in "bfloat16" data: caught, still exact */
    x[100] = 1.0 + 0x1p-50;
    qf_dot_reset_counts();
    qf_dot_acc_add_dot(&a, NULL, N, x, 1, y, 1, bf, bf);
    k = qf_dot_get_counts();
    ck_assert(k.rejected >= 1 && k.general >= 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/dot");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, test_specials);
    tcase_add_test(tc, test_scale_range_and_zero);
    tcase_add_test(tc, test_accumulator_ops);
    tcase_add_test(tc, test_carries);
    tcase_add_test(tc, test_paths_taken);
    tcase_add_test(tc, test_random_inputs);
    tcase_add_test(tc, test_gendot);
    tcase_add_test(tc, test_constructed);
    tcase_add_test(tc, test_boundary);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
