/* t-gemm_fast.c: qf_gemm's certified fast path against its exact engine
 * (qf_gemm_desc.exact_only = 1), element for element: codes, values (bit
 * patterns, signed zeros included), statuses and d_abs, over random
 * shapes, input formats (float32, bfloat16, float16, e4m3, e5m2, int8,
 * float64), output formats, rounding modes, saturation, alpha/beta,
 * layouts, transposes, batches and thread counts, with special values
 * (NaN, Inf), rows that cancel exactly (to 0 and to a target value), and
 * inputs in the underflow and overflow ranges.  It also checks that the
 * fast path did decide most elements of ordinary data (or the comparison
 * would prove nothing) and that what it left to the exact engine is
 * counted.  Seeds are printed (QF_SEED).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_format.h"
#include "qf_test.h"

typedef struct gen {
    uint64_t st;
} gen;

static uint64_t g_u64(gen *g) { return qf_test_splitmix(&g->st); }
static double g_unif(gen *g) { return qf_test_unif01(&g->st); }
static size_t g_int(gen *g, size_t lo, size_t hi) { return lo + (size_t)(g_u64(g) % (hi - lo + 1)); }
static double g_norm(gen *g)
{
    double u = g_unif(g), v = g_unif(g);
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

/* A value of format f (NULL: binary64) near x. */
static double q(const qf_format *f, double x)
{
    if (!f)
        return x;
    return qf_format_decode(f, qf_format_encode(f, x, QF_ROUND_RNE, 1, 32, 0));
}

typedef struct kase {
    qf_gemm_desc d;
    double *a, *b, *c;
    size_t na, nb, nc, nd;
    const char *in, *out, *pattern;
} kase;

static const char *const IN[] = {"float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "int8", "float64"};
static const char *const OUT_F[] = {"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "float64"};
static const char *const OUT_I[] = {"int32", "float32", "bfloat16", "float64"};
static const double ALPHA[] = {1, 1, 1, -1, 0.5, 3, 0x1.5555555555555p-2};
static const double BETA[] = {0, 0, 0, 1, -0.75, 0x1p-3};

static void fill(gen *g, kase *k, int pattern, const qf_format *fi)
{
    const qf_gemm_desc *d = &k->d;
    size_t i, bt = d->batch, M = d->m, N = d->n, K = d->k;
    double sa = 1, sb = 1;
    int is_int = fi && fi->kind == QF_KIND_INT;
    if (pattern == 3 && !fi) { /* binary64 inputs in the underflow / overflow ranges */
        /* products near 2^-1080 (underflow), 2^1010 or past 2^1024 (overflow) */
        int e = (g_u64(g) & 1) ? -540 : (g_u64(g) & 1) ? 505 : 513;
        sa = ldexp(1.0, e);
        sb = ldexp(1.0, e + (int)g_int(g, 0, 8) - 4);
    }
    for (i = 0; i < k->na; i++)
        k->a[i] = is_int ? (double)((int)g_int(g, 0, 255) - 128) : q(fi, g_norm(g) * sa);
    for (i = 0; i < k->nb; i++)
        k->b[i] = is_int ? (double)((int)g_int(g, 0, 255) - 128) : q(fi, g_norm(g) * sb);
    for (i = 0; i < k->nc; i++)
        k->c[i] = g_norm(g);
    if (pattern == 1 && K >= 3 && !is_int) {
        /* wide range within rows: some entries scaled far apart */
        for (i = 0; i < k->na; i++)
            if (g_u64(g) % 7 == 0)
                k->a[i] = q(fi, k->a[i] * ldexp(1.0, (int)g_int(g, 0, 40) - 20));
    }
    if (pattern == 2 && K >= 4) {
        /* cancellation: op(A) row i = (x, -x, t, 0...) against op(B) column j
         * = (y, y, 1, 0...) gives t exactly: 0 for some rows, a small
         * value of the inputs' format (often one of the output's) else */
        size_t p, r, l, j;
        for (p = 0; p < bt; p++)
            for (r = 0; r < M; r += 2) {
                double x = q(fi, g_norm(g)), t = (r % 4 == 0) ? 0 : q(fi, ldexp(1.0, -(int)g_int(g, 0, 3)));
                if (is_int) {
                    x = (double)g_int(g, 1, 100);
                    t = (r % 4 == 0) ? 0 : (double)g_int(g, 1, 3);
                }
                for (l = 0; l < K; l++) {
                    double v = l == 0 ? x : l == 1 ? -x : l == 2 ? t : 0;
                    /* element (r, l) of op(A): stored A(r, l) or A(l, r) */
                    size_t row = d->trans_a ? l : r, col = d->trans_a ? r : l;
                    size_t ia = d->layout == QF_ROW_MAJOR ? row * d->lda + col : col * d->lda + row;
                    k->a[p * (size_t)d->stride_a + ia] = v;
                }
            }
        for (j = 0; j < N; j++) {
            double y = is_int ? (double)g_int(g, 1, 9) : q(fi, g_norm(g));
            if (y == 0)
                y = 1;
            for (l = 0; l < 3; l++) {
                size_t row = d->trans_b ? j : l, col = d->trans_b ? l : j;
                size_t ib = d->layout == QF_ROW_MAJOR ? row * d->ldb + col : col * d->ldb + row;
                size_t p;
                for (p = 0; p < bt; p++)
                    k->b[p * (size_t)d->stride_b + ib] = l < 2 ? y : 1;
            }
        }
    }
    if (pattern == 4) { /* special values */
        size_t n = g_int(g, 1, 3);
        while (n--) {
            double s = (g_u64(g) & 1) ? NAN : (g_u64(g) & 1) ? INFINITY : -INFINITY;
            if (g_u64(g) & 1)
                k->a[g_int(g, 0, k->na - 1)] = s;
            else
                k->b[g_int(g, 0, k->nb - 1)] = s;
        }
    }
}

/* Draw case cs: dimensions, formats, storage, inputs. */
static int draw(gen *g, kase *k)
{
    qf_gemm_desc *d = &k->d;
    const qf_format *fi;
    size_t M, N, K, ar, ac, br, bc, bt;
    int pattern;
    memset(k, 0, sizeof *k);
    *d = qf_gemm_desc_default();
    k->in = IN[g_int(g, 0, sizeof IN / sizeof IN[0] - 1)];
    fi = strcmp(k->in, "float64") ? qf_format_lookup(k->in) : NULL;
    k->out = fi && fi->kind == QF_KIND_INT ? OUT_I[g_int(g, 0, 3)] : OUT_F[g_int(g, 0, 5)];
    d->out = qf_format_lookup(k->out);
    d->fa = d->fb = fi;
    d->round = (qf_round)g_int(g, 0, 4);
    d->saturate = (int)(g_u64(g) & 1);
    d->layout = (g_u64(g) & 1) ? QF_COL_MAJOR : QF_ROW_MAJOR;
    d->trans_a = (g_u64(g) & 1) ? QF_TRANS : QF_NO_TRANS;
    d->trans_b = (g_u64(g) & 1) ? QF_TRANS : QF_NO_TRANS;
    M = g_int(g, 1, 23);
    N = g_int(g, 1, 19);
    K = g_u64(g) % 5 == 0 ? g_int(g, 200, 700) : g_int(g, 1, 70);
    bt = g_int(g, 1, 2);
    d->m = M;
    d->n = N;
    d->k = K;
    d->batch = bt;
    d->alpha = ALPHA[g_int(g, 0, sizeof ALPHA / sizeof ALPHA[0] - 1)];
    d->beta = BETA[g_int(g, 0, sizeof BETA / sizeof BETA[0] - 1)];
    ar = d->trans_a ? K : M;
    ac = d->trans_a ? M : K;
    br = d->trans_b ? N : K;
    bc = d->trans_b ? K : N;
    d->lda = (d->layout == QF_ROW_MAJOR ? ac : ar) + g_int(g, 0, 2);
    d->ldb = (d->layout == QF_ROW_MAJOR ? bc : br) + g_int(g, 0, 2);
    d->ldc = d->ldd = (d->layout == QF_ROW_MAJOR ? N : M) + g_int(g, 0, 1);
    d->stride_a = (ptrdiff_t)(d->lda * (d->layout == QF_ROW_MAJOR ? ar : ac));
    d->stride_b = (ptrdiff_t)(d->ldb * (d->layout == QF_ROW_MAJOR ? br : bc));
    d->stride_c = d->stride_d = (ptrdiff_t)(d->ldd * (d->layout == QF_ROW_MAJOR ? M : N));
    if (bt > 1 && (g_u64(g) & 3) == 0)
        d->stride_b = 0; /* one B for the batch */
    k->na = (size_t)d->stride_a * bt;
    k->nb = d->stride_b ? (size_t)d->stride_b * bt : d->ldb * (d->layout == QF_ROW_MAJOR ? br : bc);
    k->nc = k->nd = (size_t)d->stride_d * bt;
    k->a = malloc(k->na * sizeof *k->a);
    k->b = malloc(k->nb * sizeof *k->b);
    k->c = malloc(k->nc * sizeof *k->c);
    d->a = k->a;
    d->b = k->b;
    d->c = k->c;
    d->threads = (int)g_int(g, 1, 2);
    pattern = (int)g_int(g, 0, 5); /* 0, 5: plain; 1 wide; 2 cancel; 3 range; 4 special */
    if (pattern == 3 && fi)
        pattern = 0;
    if (pattern == 2 && d->stride_b == 0)
        pattern = 0; /* the cancelling rows need their own B per problem */
    k->pattern = pattern == 1 ? "wide" : pattern == 2 ? "cancel" : pattern == 3 ? "range" : pattern == 4 ? "special" : "plain";
    fill(g, k, pattern, fi);
    return k->a && k->b && k->c;
}

typedef struct outs {
    uint64_t *code;
    double *value, *abs;
    uint8_t *status;
} outs;

static void run(qf_gemm_desc d, size_t nd, int exact_only, int want_abs, outs *o, qf_gemm_stats *s)
{
    size_t i;
    o->code = malloc(nd * sizeof *o->code);
    o->value = malloc(nd * sizeof *o->value);
    o->abs = malloc(nd * sizeof *o->abs);
    o->status = malloc(nd);
    for (i = 0; i < nd; i++) { /* poison: gaps must stay as they were */
        o->code[i] = 0xDEADull;
        o->value[i] = -1234.5;
        o->abs[i] = -1234.5;
        o->status[i] = 0xEE;
    }
    d.d_code = o->code;
    d.d_value = o->value;
    d.d_status = o->status;
    d.d_abs = want_abs ? o->abs : NULL;
    d.exact_only = exact_only;
    d.stats = s;
    ck_assert_int_eq(qf_gemm(&d), QF_OK);
}

static void free_outs(outs *o)
{
    free(o->code);
    free(o->value);
    free(o->abs);
    free(o->status);
}

/* Does element e differ between the paths (d_abs compared when want_abs)? */
static int differs(const outs *f, const outs *x, size_t e, int want_abs)
{
    return f->code[e] != x->code[e] || memcmp(&f->value[e], &x->value[e], sizeof(double)) ||
           f->status[e] != x->status[e] || (want_abs && memcmp(&f->abs[e], &x->abs[e], sizeof(double)));
}

/* Element e of both paths, after the caller's description of the case. */
static void print_elem(const outs *f, const outs *x, size_t e)
{
    fprintf(stderr, " element %zu: fast code %#llx value %a status %u abs %a, exact code %#llx value %a status %u abs %a\n",
            e, (unsigned long long)f->code[e], f->value[e], f->status[e], f->abs[e], (unsigned long long)x->code[e],
            x->value[e], x->status[e], x->abs[e]);
}

START_TEST(test_fast_equals_exact)
{
    uint64_t seed = qf_test_seed();
    long cs, ncase = qf_test_iters(600) / (long)qf_test_stride(6), failed = 0, checked = 0;
    size_t fast = 0, slow = 0, special_slow = 0, cancel_slow = 0;
    for (cs = 0; cs < ncase; cs++) {
        gen g = {seed ^ (0x66617374ull * (uint64_t)(cs + 1))};
        kase k;
        outs f, x;
        qf_gemm_stats sf, sx;
        size_t e;
        int want_abs;
        if (!draw(&g, &k))
            ck_abort_msg("out of memory");
        want_abs = (int)(g_u64(&g) & 1);
        run(k.d, k.nd, 0, want_abs, &f, &sf);
        run(k.d, k.nd, 1, want_abs, &x, &sx);
        ck_assert_uint_eq(sf.n_fast + sf.n_exact, sf.n_elements);
        ck_assert_uint_eq(sx.n_fast, 0);
        ck_assert_uint_eq(sx.n_elements, sf.n_elements);
        fast += sf.n_fast;
        slow += sf.n_exact;
        if (!strcmp(k.pattern, "special"))
            special_slow += sf.n_exact;
        if (!strcmp(k.pattern, "cancel"))
            cancel_slow += sf.n_exact;
        for (e = 0; e < k.nd; e++) {
            checked++;
            if (differs(&f, &x, e, want_abs) && failed++ < 8) {
                fprintf(stderr,
                        "case %ld (QF_SEED=%llu): %s -> %s %s, %s M=%zu N=%zu K=%zu batch=%zu ta=%d tb=%d %s "
                        "alpha=%a beta=%a round=%d sat=%d threads=%d abs=%d, D offset",
                        cs, (unsigned long long)seed, k.in, k.out, k.pattern,
                        k.d.layout == QF_ROW_MAJOR ? "row" : "col", k.d.m, k.d.n, k.d.k, k.d.batch, k.d.trans_a,
                        k.d.trans_b, k.d.stride_b ? "" : "shared-B", k.d.alpha, k.d.beta, (int)k.d.round,
                        k.d.saturate, k.d.threads, want_abs);
                print_elem(&f, &x, e);
            }
        }
        free_outs(&f);
        free_outs(&x);
        free(k.a);
        free(k.b);
        free(k.c);
    }
    fprintf(stderr, "gemm_fast: %ld cases, %zu elements decided fast, %zu by the exact engine (%zu special, %zu "
                    "cancelling)\n",
            ncase, fast, slow, special_slow, cancel_slow);
    qf_test_tally("gemm fast == exact", checked, failed);
    /* the comparison proves something only if both paths ran */
    ck_assert_msg(fast > (fast + slow) / 4, "the fast path decided too few elements: %zu fast, %zu exact", fast,
                  slow);
    ck_assert_msg(special_slow > 0 && cancel_slow > 0, "special values and cancelling rows must reach the exact engine");
}
END_TEST

/* Ordinary data is decided without the exact engine: narrow products are
 * certified exact (almost every element, any target, binary64 included),
 * float32 products are within a bound far below a bfloat16 or float32
 * rounding step (but never decide a binary64 rounding). */
START_TEST(test_fast_fraction)
{
    static const char *const in[] = {"bfloat16", "float8_e4m3fn", "float32", "int8"};
    size_t M = 96, N = 80, K = 2048 / qf_test_stride(4), i, c;
    double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b), *v = malloc(M * N * sizeof *v);
    uint8_t *st = malloc(M * N);
    gen g = {qf_test_seed() ^ 0x66726163ull};
    for (c = 0; c < sizeof in / sizeof in[0]; c++) {
        const qf_format *fi = qf_format_lookup(in[c]);
        int is_int = fi->kind == QF_KIND_INT;
        const char *outs[3] = {is_int ? "int32" : "bfloat16", "float32", "float64"};
        size_t o;
        for (i = 0; i < M * K; i++)
            a[i] = is_int ? (double)((int)g_int(&g, 0, 255) - 128) : q(fi, g_norm(&g));
        for (i = 0; i < K * N; i++)
            b[i] = is_int ? (double)((int)g_int(&g, 0, 255) - 128) : q(fi, g_norm(&g));
        for (o = 0; o < 3; o++) {
            qf_gemm_desc d = qf_gemm_desc_default();
            qf_gemm_stats s;
            d.m = M;
            d.n = N;
            d.k = K;
            d.a = a;
            d.b = b;
            d.lda = K;
            d.ldb = d.ldd = N;
            d.fa = d.fb = fi;
            d.out = qf_format_lookup(outs[o]);
            d.d_value = v;
            d.d_status = st;
            d.stats = &s;
            ck_assert_int_eq(qf_gemm(&d), QF_OK);
            fprintf(stderr, "%s -> %s, %zu x %zu x %zu: %zu of %zu by the exact engine\n", in[c], outs[o], M, N, K,
                    s.n_exact, s.n_elements);
            if (fi->id != QF_FLOAT32 && o == 2) /* the rows' smallest entries limit the certificate */
                ck_assert_msg(s.n_exact * 10 < s.n_elements, "%s -> %s: %zu of %zu elements needed the engine",
                              in[c], outs[o], s.n_exact, s.n_elements);
            else if (fi->id != QF_FLOAT32 || o < 2)
                ck_assert_msg(s.n_exact * 100 < s.n_elements, "%s -> %s: %zu of %zu elements needed the engine",
                              in[c], outs[o], s.n_exact, s.n_elements);
            else
                ck_assert_msg(s.n_exact == s.n_elements, "float32 -> float64: cannot be decided in binary64");
        }
    }
    {
        /* stochastic rounding: every element by the exact engine */
        qf_gemm_desc d = qf_gemm_desc_default();
        qf_gemm_stats s;
        d.m = 4;
        d.n = 4;
        d.k = 8;
        d.a = a;
        d.b = b;
        d.lda = 8;
        d.ldb = d.ldd = 4;
        d.out = qf_format_lookup("bfloat16");
        d.round = QF_ROUND_STOCHASTIC;
        d.d_value = v;
        d.stats = &s;
        ck_assert_int_eq(qf_gemm(&d), QF_OK);
        ck_assert_uint_eq(s.n_exact, 16);
    }
    free(a);
    free(b);
    free(v);
    free(st);
}
END_TEST

/* Shapes past the kernel's blocks (72 rows, 256 terms, 2048 columns),
 * two threads, against the exact engine. */
START_TEST(test_fast_large)
{
    static const struct {
        size_t m, n, k;
        int col, ta, tb;
        const char *in, *out;
    } sh[] = {
        {150, 2053, 40, 0, 0, 0, "bfloat16", "bfloat16"},
        {77, 130, 600, 1, 1, 0, "float32", "float32"},
        {145, 33, 513, 0, 0, 1, "float8_e5m2", "float64"},
    };
    size_t c;
    long failed = 0, checked = 0;
    gen g = {qf_test_seed() ^ 0x6c617267ull};
    for (c = 0; c < sizeof sh / sizeof sh[0]; c += qf_test_stride(2)) {
        const qf_format *fi = qf_format_lookup(sh[c].in);
        size_t M = sh[c].m, N = sh[c].n, K = sh[c].k, i;
        qf_gemm_desc d = qf_gemm_desc_default();
        qf_gemm_stats s1, s2;
        outs f, x;
        double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
        for (i = 0; i < M * K; i++)
            a[i] = q(fi, g_norm(&g));
        for (i = 0; i < K * N; i++)
            b[i] = q(fi, g_norm(&g));
        d.layout = sh[c].col ? QF_COL_MAJOR : QF_ROW_MAJOR;
        d.trans_a = sh[c].ta ? QF_TRANS : QF_NO_TRANS;
        d.trans_b = sh[c].tb ? QF_TRANS : QF_NO_TRANS;
        d.m = M;
        d.n = N;
        d.k = K;
        d.a = a;
        d.b = b;
        /* leading dimension: the stored matrix's row (row-major) or column length */
        d.lda = (sh[c].col == sh[c].ta) ? K : M;
        d.ldb = (sh[c].col == sh[c].tb) ? N : K;
        d.ldd = sh[c].col ? M : N;
        d.fa = d.fb = fi;
        d.out = qf_format_lookup(sh[c].out);
        d.threads = 2;
        /* d_abs needs exact magnitudes, which float32 products are not */
        int wabs = fi->id != QF_FLOAT32;
        run(d, M * N, 0, wabs, &f, &s1);
        run(d, M * N, 1, wabs, &x, &s2);
        if (c == 0) {
            /* the plain C kernel too (the FMA one where the CPU has it) */
            outs f2;
            qf_gemm_stats s3;
            ck_assert_int_eq(qf_dot_set_isa("scalar"), QF_OK);
            run(d, M * N, 0, wabs, &f2, &s3);
            ck_assert_int_eq(qf_dot_set_isa(NULL), QF_OK);
            ck_assert_msg(!memcmp(f2.code, x.code, M * N * sizeof *x.code) && !memcmp(f2.status, x.status, M * N),
                          "plain C kernel: codes or statuses differ from the exact engine's");
            free_outs(&f2);
            /* slabs of two rows (the memory bound of large problems) */
            setenv("QF_GEMM_SLAB", "5000", 1);
            run(d, M * N, 0, wabs, &f2, &s3);
            unsetenv("QF_GEMM_SLAB");
            for (i = 0; i < M * N; i++)
                if (differs(&f2, &x, i, wabs) && failed++ < 8) {
                    fprintf(stderr, "slabs of 2 rows, %zux%zux%zu", M, N, K);
                    print_elem(&f2, &x, i);
                }
            ck_assert_uint_eq(s3.n_exact, s1.n_exact);
            free_outs(&f2);
        }
        for (i = 0; i < M * N; i++) {
            checked++;
            if (differs(&f, &x, i, wabs) && failed++ < 8) {
                fprintf(stderr, "large %s -> %s %zux%zux%zu", sh[c].in, sh[c].out, M, N, K);
                print_elem(&f, &x, i);
            }
        }
        fprintf(stderr, "large %s -> %s %zu x %zu x %zu (d_abs %d): %zu of %zu by the exact engine\n", sh[c].in,
                sh[c].out, M, N, K, wabs, s1.n_exact, s1.n_elements);
        ck_assert_msg(s1.n_fast > 0, "the fast path decided nothing");
        free_outs(&f);
        free_outs(&x);
        free(a);
        free(b);
    }
    qf_test_tally("gemm fast == exact, large shapes", checked, failed);
}
END_TEST

/* Sums past binary64's range and in its subnormal range (alpha = 1, beta =
 * 0, the whole-row certificate's case), every deterministic mode: the
 * statuses of overflow (rounded) and of tiny exact sums must not move. */
START_TEST(test_fast_range)
{
    static const int ea[] = {513, 505, -540, -530};
    static const char *const outs_[] = {"float64", "bfloat16", "float8_e5m2"};
    size_t M = 9, N = 10, K = 17, i, e, o;
    int m;
    long failed = 0, checked = 0;
    gen g = {qf_test_seed() ^ 0x72616e67ull};
    double *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
    for (e = 0; e < sizeof ea / sizeof ea[0]; e++)
        for (o = 0; o < 3; o++)
            for (m = 0; m < 5; m++) {
                qf_gemm_desc d = qf_gemm_desc_default();
                qf_gemm_stats s1, s2;
                outs f, x;
                for (i = 0; i < M * K; i++) /* bfloat16 significands: the exact-sum certificate applies */
                    a[i] = ldexp(q(qf_format_lookup("bfloat16"), g_norm(&g)), ea[e]);
                for (i = 0; i < K * N; i++)
                    b[i] = ldexp(q(qf_format_lookup("bfloat16"), g_norm(&g)), ea[e] > 0 ? ea[e] : -520);
                d.m = M;
                d.n = N;
                d.k = K;
                d.a = a;
                d.b = b;
                d.lda = K;
                d.ldb = d.ldd = N;
                d.out = qf_format_lookup(outs_[o]);
                d.round = (qf_round)m;
                run(d, M * N, 0, 0, &f, &s1);
                run(d, M * N, 1, 0, &x, &s2);
                for (i = 0; i < M * N; i++) {
                    checked++;
                    if (differs(&f, &x, i, 0) && failed++ < 8) {
                        fprintf(stderr, "range 2^%d -> %s mode %d", ea[e], outs_[o], m);
                        print_elem(&f, &x, i);
                    }
                }
                free_outs(&f);
                free_outs(&x);
            }
    free(a);
    free(b);
    qf_test_tally("gemm fast == exact, overflow and underflow ranges", checked, failed);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/gemm_fast");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fast_equals_exact);
    tcase_add_test(tc, test_fast_fraction);
    tcase_add_test(tc, test_fast_large);
    tcase_add_test(tc, test_fast_range);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
