/* t-fast_attn.c: the binary64 fast path of RoPE, attention and the MoE
 * router (refs/_fast_attn.h).
 *
 *   - enclosures: sin and cos of pos f (f a double, or a double-double
 *     with a bound) and log x hold the real value within their bounds
 *     (MPFR at 320 bits), and the bounds are small enough to decide;
 *   - decisions: qf_ref_rope, qf_ref_moe_router and qf_ref_attention give
 *     the same codes, values and statuses (and indices and tie marks) with
 *     the fast path as with every element through MPFR (opts.slow_only),
 *     for several target formats and rounding modes, on random cases and
 *     hard ones: RoPE at positions up to 2^24 / f and at position 0, zero
 *     pairs; router near-ties (logits one ulp apart, equal logits, keys
 *     within and around tie_tol, masked experts); attention with causal
 *     and windowed masks, long rows, a dominant key, constant rows (exact
 *     outputs); and the fast path decides almost every element (n_fast).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "_fast_attn.h"
#include "qf_format.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 320

/* Uniform on [-a, a), rounded to float32. */
static double unif(uint64_t *st, double a)
{
    return (double)(float)(a * (2 * qf_test_unif01(st) - 1));
}

/* |v - x| <= e for the real x in r? */
static int within(double v, double e, mpfr_srcptr x)
{
    mpfr_t d;
    int ok;
    mpfr_init2(d, OP);
    mpfr_sub_d(d, x, v, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDU);
    ok = mpfr_cmp_d(d, e) <= 0;
    mpfr_clear(d);
    return ok;
}

/* sin/cos of pos f with f = fh + fl: the enclosures hold, are below 2^-44
 * for angles up to 2^20, and the domain edges refuse. */
START_TEST(sincos)
{
    uint64_t st = qf_test_seed() ^ 0x51c0;
    long n = qf_test_iters(qf_test_sanitized() ? 3000 : 20000), i, bad = 0;
    mpfr_t a, s, c, t;
    double sv, cv, es, ec;
    mpfr_inits2(OP, a, s, c, t, (mpfr_ptr)0);
    for (i = 0; i < n; i++) {
        double pos, fh, fl = 0, lim;
        int kind = (int)(i % 4);
        pos = kind == 3 ? floor(qf_test_unif01(&st) * 0x1p24) : floor(qf_test_unif01(&st) * 1.2e6);
        if (qf_test_unif01(&st) < 0.3)
            pos = -pos;
        fh = kind == 0 ? 1.0 : pow(10000.0, -qf_test_unif01(&st)) * (kind == 3 ? 0.9 : 1);
        if (kind == 1) {
            fh = (double)(float)fh; /* a float32 inv_freq table */
        } else if (kind == 2) {
            fl = fh * 0x1p-54 * (2 * qf_test_unif01(&st) - 1); /* a double-double frequency */
        }
        lim = fabs(pos * fh) <= 0x1p20 ? 0x1p-44 : 0x1p-40;
        if (!_qf_fast_sincos_pos(pos, fh, fl, 0, &sv, &cv, &es, &ec)) {
            ck_assert_msg(fabs(pos * fh) > 0x1p24 || pos == 0, "refused pos %.17g f %a", pos, fh);
            continue;
        }
        mpfr_set_d(a, fh, MPFR_RNDN);
        mpfr_add_d(a, a, fl, MPFR_RNDN);
        mpfr_mul_d(a, a, pos, MPFR_RNDN); /* exact at 320 bits */
        mpfr_sin_cos(s, c, a, MPFR_RNDN);
        if ((!within(sv, es, s) || !within(cv, ec, c) || es > lim || ec > lim) && bad++ < 10)
            mpfr_printf("pos %.17g f %a + %a: sin %a +- %a cos %a +- %a; exact %.20Rg %.20Rg\n", pos, fh, fl, sv,
                        es, cv, ec, s, c);
    }
    /* hard angles: close to multiples of pi/2 (the reduction's cancellation) */
    for (i = 1; i < 2000; i++) {
        double pos = (double)i, fh;
        mpfr_const_pi(t, MPFR_RNDN);
        mpfr_mul_si(t, t, (long)(i * 7919 % 100000), MPFR_RNDN);
        mpfr_div_ui(t, t, 2 * (unsigned long)i, MPFR_RNDN); /* f = k pi / (2 pos) */
        fh = mpfr_get_d(t, MPFR_RNDN);
        if (!_qf_fast_sincos_pos(pos, fh, 0, 0, &sv, &cv, &es, &ec))
            continue;
        mpfr_set_d(a, fh, MPFR_RNDN);
        mpfr_mul_d(a, a, pos, MPFR_RNDN);
        mpfr_sin_cos(s, c, a, MPFR_RNDN);
        if ((!within(sv, es, s) || !within(cv, ec, c)) && bad++ < 10)
            mpfr_printf("pos %.17g f %a: sin %a +- %a cos %a +- %a; exact %.20Rg %.20Rg\n", pos, fh, sv, es, cv,
                        ec, s, c);
    }
    ck_assert(!_qf_fast_sincos_pos(0x1p25, 1.0, 0, 0, &sv, &cv, &es, &ec));
    ck_assert(!_qf_fast_sincos_pos(0.5, 1.0, 0, 0, &sv, &cv, &es, &ec));
    mpfr_clears(a, s, c, t, (mpfr_ptr)0);
    qf_test_tally("sincos", n + 1999, bad);
}
END_TEST

START_TEST(logs)
{
    uint64_t st = qf_test_seed() ^ 0x1060;
    long n = qf_test_iters(qf_test_sanitized() ? 3000 : 20000), i, bad = 0;
    mpfr_t x, r;
    _qf_fenc f;
    mpfr_inits2(OP, x, r, (mpfr_ptr)0);
    for (i = 0; i < n; i++) {
        double v = i % 3 == 0 ? 1 + (2 * qf_test_unif01(&st) - 1) * ldexp(1, -(int)(i % 60))
                              : ldexp(0.5 + qf_test_unif01(&st), (int)(qf_test_unif01(&st) * 200) - 100);
        ck_assert(_qf_fast_log(v, &f));
        mpfr_set_d(x, v, MPFR_RNDN);
        mpfr_log(r, x, MPFR_RNDN);
        if ((!within(f.v, f.e, r) || f.e > 0x1p-46 * fabs(f.v) + 0x1p-1000) && bad++ < 10)
            mpfr_printf("log %a: %a +- %a, exact %.20Rg\n", v, f.v, f.e, r);
    }
    ck_assert(_qf_fast_log(1.0, &f) && f.v == 0);
    ck_assert(!_qf_fast_log(0.0, &f) && !_qf_fast_log(0x1p-1020, &f) && !_qf_fast_log(INFINITY, &f));
    mpfr_clears(x, r, (mpfr_ptr)0);
    qf_test_tally("log", n, bad);
}
END_TEST

/* _qf_fast_attn_row's enclosures against MPFR at 320 bits (the exact dot
 * products, exp, tanh, log at 320 bits: far below the bounds), for random
 * rows with and without softcap, additive masks and an explicit scale; the
 * bounds stay below 2^-40 relative to the row's scale. */
START_TEST(attn_row)
{
    enum { D = 24, DV = 6, NK = 40 };
    uint64_t st = qf_test_seed() ^ 0xa70e;
    long n = qf_test_iters(qf_test_sanitized() ? 60 : 400), it, bad = 0;
    double q[D], k[NK * D], v[NK * DV], madd[NK], work[2 * NK + 2 * DV];
    size_t keep[NK], j, t, e;
    _qf_fenc out[DV], lse;
    mpfr_t L[NK], x, S, y, c;
    for (j = 0; j < NK; j++)
        mpfr_init2(L[j], OP);
    mpfr_inits2(OP, x, S, y, c, (mpfr_ptr)0);
    for (it = 0; it < n; it++) {
        size_t nk = 1 + (size_t)(qf_test_unif01(&st) * NK);
        double scale = it % 3 == 0 ? 0 : unif(&st, 0.5), cap = it % 4 == 1 ? 2 + 10 * qf_test_unif01(&st) : 0;
        double amp = it % 5 == 0 ? 6 : 1.5;
        for (t = 0; t < D; t++)
            q[t] = unif(&st, amp);
        for (j = 0; j < NK * D; j++)
            k[j] = unif(&st, 1.5);
        for (j = 0; j < NK * DV; j++)
            v[j] = unif(&st, 2);
        for (j = 0; j < nk; j++) {
            keep[j] = (j * 7 + (size_t)it) % NK; /* distinct keys: 7 is prime to NK */
            madd[j] = it % 2 ? unif(&st, 3) : 0;
        }
        if (!_qf_fast_attn_row(q, k, v, D, DV, keep, madd, nk, scale, cap, work, out, &lse))
            continue;
        /* logits */
        for (j = 0; j < nk; j++) {
            mpfr_set_zero(L[j], 1);
            for (t = 0; t < D; t++) {
                mpfr_set_d(x, q[t], MPFR_RNDN);
                mpfr_mul_d(x, x, k[keep[j] * D + t], MPFR_RNDN);
                mpfr_add(L[j], L[j], x, MPFR_RNDN);
            }
            if (scale == 0) {
                mpfr_set_ui(x, D, MPFR_RNDN);
                mpfr_rec_sqrt(x, x, MPFR_RNDN);
                mpfr_mul(L[j], L[j], x, MPFR_RNDN);
            } else {
                mpfr_mul_d(L[j], L[j], scale, MPFR_RNDN);
            }
            if (cap > 0) {
                mpfr_div_d(L[j], L[j], cap, MPFR_RNDN);
                mpfr_tanh(L[j], L[j], MPFR_RNDN);
                mpfr_mul_d(L[j], L[j], cap, MPFR_RNDN);
            }
            mpfr_add_d(L[j], L[j], madd[j], MPFR_RNDN);
        }
        mpfr_set_zero(S, 1);
        for (j = 0; j < nk; j++) {
            mpfr_exp(x, L[j], MPFR_RNDN);
            mpfr_add(S, S, x, MPFR_RNDN);
        }
        mpfr_log(y, S, MPFR_RNDN);
        if ((!within(lse.v, lse.e, y) || lse.e > 0x1p-40 * (1 + fabs(lse.v))) && bad++ < 10)
            mpfr_printf("attn row %ld: lse %a +- %a, exact %.20Rg\n", it, lse.v, lse.e, y);
        for (e = 0; e < DV; e++) {
            mpfr_set_zero(y, 1);
            for (j = 0; j < nk; j++) {
                mpfr_exp(x, L[j], MPFR_RNDN);
                mpfr_mul_d(x, x, v[keep[j] * DV + e], MPFR_RNDN);
                mpfr_add(y, y, x, MPFR_RNDN);
            }
            mpfr_div(y, y, S, MPFR_RNDN);
            if ((!within(out[e].v, out[e].e, y) || out[e].e > 0x1p-40 * 2) && bad++ < 10)
                mpfr_printf("attn row %ld out %zu: %a +- %a, exact %.20Rg\n", it, e, out[e].v, out[e].e, y);
        }
    }
    for (j = 0; j < NK; j++)
        mpfr_clear(L[j]);
    mpfr_clears(x, S, y, c, (mpfr_ptr)0);
    qf_test_tally("attention rows (out and lse)", n * (DV + 1), bad);
}
END_TEST

/* One comparison: the same call with the fast path (y[0]) and with
 * every element through MPFR (y[1], opts.slow_only), one thread. */
typedef struct pair {
    qf_ref_opts o[2];
    qf_ref_out y[2];
    size_t n;
} pair;

/* Variant v of 12: a target format (float32, bfloat16, float16) and a
 * rounding mode (RNE, RTZ, UP, DOWN); under the sanitizers the nearest
 * and toward-zero ones only.  0 when skipped. */
static int pair_open(pair *p, int v, size_t n)
{
    static const qf_format_id fmts[] = {QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    int k;
    if (qf_test_sanitized() && v % 4 > 1)
        return 0;
    for (k = 0; k < 2; k++) {
        p->o[k] = qf_ref_opts_default();
        p->o[k].format = qf_format_get(fmts[v / 4]);
        p->o[k].round = rnds[v % 4];
        p->o[k].threads = 1;
        p->o[k].slow_only = k;
        ck_assert_int_eq(qf_ref_out_alloc(&p->y[k], n), QF_OK);
    }
    p->n = n;
    return 1;
}

/* The number of elements whose code, value or status differ (the first
 * ones printed, with what); the MPFR-only call decided nothing fast. */
static size_t pair_check(const pair *p, const char *what, size_t *printed)
{
    const qf_ref_out *a = &p->y[0], *b = &p->y[1];
    size_t i, d = 0;
    for (i = 0; i < p->n; i++) {
        int same = a->code[i] == b->code[i] && a->status[i] == b->status[i] &&
                   (a->value[i] == b->value[i] || (isnan(a->value[i]) && isnan(b->value[i])));
        if (same)
            continue;
        d++;
        if ((*printed)++ < 10)
            printf("%s %s round %d [%zu]: fast code %llx status %d, slow %llx status %d\n", what,
                   p->o[0].format->name, (int)p->o[0].round, i, (unsigned long long)a->code[i], a->status[i],
                   (unsigned long long)b->code[i], b->status[i]);
    }
    ck_assert_uint_eq(b->n_fast, 0);
    ck_assert_uint_eq(a->n_undecided, b->n_undecided);
    return d;
}

/* The end of a comparison sweep: no difference, and the fast path decided
 * at least the fraction min of the elements it could. */
static void fast_tally(const char *what, size_t bad, size_t fast, size_t of, double min)
{
    printf("%s: %zu of %zu elements decided without MPFR, %zu differences\n", what, fast, of, bad);
    ck_assert_uint_eq(bad, 0);
    ck_assert_msg((double)fast >= min * (double)of, "%s: the fast path decided only %zu of %zu", what, fast, of);
}

static void pair_close(pair *p)
{
    qf_ref_out_free(&p->y[0]);
    qf_ref_out_free(&p->y[1]);
}

/* RoPE: both layouts, theta and inv_freq tables, positions 0 .. 2^24 / f. */
START_TEST(rope)
{
    enum { T = 20, H = 2, D = 16 };
    uint64_t st = qf_test_seed() ^ 0x20be;
    size_t n = T * H * D, i, bad = 0, printed = 0, fast = 0, nonspecial = 0;
    double *x = malloc(n * sizeof *x), inv[D / 2];
    int64_t pos[T];
    int cfg, v;
    ck_assert_ptr_nonnull(x);
    for (i = 0; i < n; i++)
        x[i] = unif(&st, 4);
    x[3 * H * D + 0] = x[3 * H * D + 1] = 0; /* a zero pair (interleaved) */
    x[4 * H * D + 2] = 0;
    x[5 * H * D + 5] = NAN;
    x[6 * H * D + 7] = 1e-30;
    for (i = 0; i < T; i++)
        pos[i] = (int64_t)floor(qf_test_unif01(&st) * (i % 3 == 0 ? 1.0e6 : 4096));
    pos[0] = 0;
    pos[1] = 16777215; /* 2^24 - 1: at frequency 1 the widest reduction */
    pos[2] = -1000000;
    pos[7] = 33554432; /* 2^25: past the fast domain at frequency 1 */
    pos[8] = ((int64_t)1 << 53) + 1; /* not a double: MPFR (tiny inv_freq aside) */
    pos[9] = ((int64_t)1 << 40) + 3; /* inside the domain only at small frequencies */
    for (i = 0; i < D / 2; i++)
        inv[i] = (double)(float)pow(500000.0, -2.0 * (double)i / D);
    inv[3] = 0; /* a zero frequency: the identity, EXACT */
    for (cfg = 0; cfg < 4; cfg++)
        for (v = 0; v < 12; v++) {
            qf_ref_rope_params p;
            pair pr;
            if (!pair_open(&pr, v, n))
                continue;
            qf_ref_rope_params_init(&p);
            p.tokens = T;
            p.heads = H;
            p.head_dim = D;
            p.rotary_dim = cfg == 3 ? D - 4 : 0;
            p.theta = cfg == 3 ? 1e12 : 10000; /* frequencies down to 1e-10: positions past 2^40 in range */
            p.layout = cfg & 1 ? QF_REF_ROPE_HALF : QF_REF_ROPE_INTERLEAVED;
            p.positions = pos;
            p.inv_freq = cfg == 2 ? inv : NULL;
            ck_assert_int_eq(qf_ref_rope(&pr.o[0], &p, x, &pr.y[0]), QF_OK);
            ck_assert_int_eq(qf_ref_rope(&pr.o[1], &p, x, &pr.y[1]), QF_OK);
            bad += pair_check(&pr, "rope", &printed);
            fast += pr.y[0].n_fast;
            /* the others: pass-through copies, position 0, the zero frequency
             * and the zero pair (EXACT or rounded copies), the NaN pair, 2^25 */
            nonspecial += n - pr.y[0].n_undefined - pr.y[0].n_exact;
            pair_close(&pr);
        }
    free(x);
    /* tokens 7, 8 and 9 lie (mostly) past the fast domain: 3 of 20 */
    fast_tally("rope (neither exact nor undefined)", bad, fast, nonspecial, 0.75);
}
END_TEST

/* The router: softmax and sigmoid, with and without renormalization and a
 * selection bias, tie_tol 0 and 1e-3, on tokens built to be hard. */
START_TEST(router)
{
    enum { T = 64, E = 16, K = 4 };
    uint64_t st = qf_test_seed() ^ 0x30e7;
    size_t i, bad = 0, printed = 0, fast = 0, total = 0, e;
    double *l = malloc(T * E * sizeof *l), bias[E];
    int32_t idx[2][T * E];
    uint8_t tie[2][T * E];
    int cfg, v;
    ck_assert_ptr_nonnull(l);
    for (i = 0; i < T * E; i++)
        l[i] = unif(&st, 3);
    for (e = 0; e < E; e++)
        bias[e] = unif(&st, 0.02);
    for (i = 0; i < T; i++) {
        double *row = l + i * E;
        switch (i % 8) {
        case 1: row[5] = nextafter(row[2], INFINITY); break;  /* one ulp apart */
        case 2: row[5] = row[2]; row[9] = row[2]; break;    /* equal logits */
        case 3: row[1] = row[4] = -INFINITY; break;         /* masked experts */
        case 4: for (e = 0; e < E; e++) row[e] = 0.5; break;  /* all equal */
        case 5: row[7] = row[3] + 1e-3; break;             /* near tie_tol */
        case 6: row[0] = 40; break;                          /* a dominant expert */
        case 7: /* the k-th and (k+1)-th one ulp apart: the selection's edge */
            row[0] = 3.9, row[1] = 3.8, row[2] = 3.7, row[11] = 3.5, row[3] = nextafter(3.5, INFINITY);
            break;
        default: break;
        }
    }
    for (cfg = 0; cfg < 12; cfg++)
        for (v = 0; v < 12; v++) {
            qf_ref_moe_params p;
            pair pr;
            size_t m = T * (cfg == 11 ? E : K);
            if (!pair_open(&pr, v, m))
                continue;
            qf_ref_moe_params_init(&p);
            p.tokens = T;
            p.experts = E;
            p.top_k = cfg == 11 ? E : K;
            p.score = cfg & 1 ? QF_REF_ROUTER_SIGMOID : QF_REF_ROUTER_SOFTMAX;
            p.renormalize = (cfg >> 1) & 1;
            p.sel_bias = (cfg >> 2) & 1 ? bias : NULL;
            p.tie_tol = cfg >= 8 ? 1e-3 : 0;
            p.route_scale = cfg == 10 ? 2.5 : 1;
            ck_assert_int_eq(qf_ref_moe_router(&pr.o[0], &p, l, idx[0], &pr.y[0], tie[0]), QF_OK);
            ck_assert_int_eq(qf_ref_moe_router(&pr.o[1], &p, l, idx[1], &pr.y[1], tie[1]), QF_OK);
            bad += pair_check(&pr, "router weights", &printed);
            for (i = 0; i < m; i++)
                if ((idx[0][i] != idx[1][i] || tie[0][i] != tie[1][i]) && bad++ < 10)
                    printf("router cfg %d token %zu slot %zu: fast index %d ties %d, slow %d ties %d\n", cfg,
                           i / p.top_k, i % p.top_k, idx[0][i], tie[0][i], idx[1][i], tie[1][i]);
            fast += pr.y[0].n_fast;
            total += m;
            pair_close(&pr);
        }
    free(l);
    fast_tally("router weights", bad, fast, total, 0.6);
}
END_TEST

/* Attention: GQA, causal (bottom-right), a window with an additive mask
 * (-inf entries included), softcap, a boolean mask with a query of zeros
 * (equal logits) and a dominant key, and long rows; out and lse both. */
START_TEST(attention)
{
    enum { B = 1, HQ = 2, HK = 1, D = 16, DV = 8 };
    uint64_t st = qf_test_seed() ^ 0xa77e;
    size_t bad = 0, printed = 0, fast = 0, of = 0, i;
    int cfg, v;
    for (cfg = 0; cfg < 6; cfg++) {
        size_t SQ = cfg == 5 ? 3 : 10, SK = cfg == 5 ? 200 : 24, nq = B * HQ * SQ * D, nk = B * HK * SK * D;
        size_t nv = B * HK * SK * DV, no = B * HQ * SQ * DV, nl = B * HQ * SQ;
        double *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *vv = malloc(nv * sizeof *vv);
        double *madd = malloc(SQ * SK * sizeof *madd);
        uint8_t *mb = malloc(SQ * SK);
        qf_ref_attn_params p;
        ck_assert(q && k && vv && madd && mb);
        for (i = 0; i < nq; i++)
            q[i] = unif(&st, 1.5);
        for (i = 0; i < nk; i++)
            k[i] = unif(&st, 1.5);
        for (i = 0; i < nv; i++)
            vv[i] = unif(&st, 2);
        for (i = 0; i < SQ * SK; i++) {
            madd[i] = i % 7 == 3 ? -INFINITY : unif(&st, 1);
            mb[i] = i % 5 != 2;
        }
        if (cfg == 4) {
            for (i = 0; i < D; i++) {
                q[i] = 0;          /* row 0: equal logits, out = the mean of v */
                q[D + i] = 6;      /* row 1: key 0 dominates */
                k[i] = 3;
            }
        }
        qf_ref_attn_params_init(&p);
        p.batch = B, p.heads = HQ, p.kv_heads = HK, p.seq_q = SQ, p.seq_k = SK;
        p.head_dim = D, p.head_dim_v = DV;
        p.causal = cfg == 1;
        p.align_bottom_right = cfg == 1;
        p.window_left = cfg == 2 ? 5 : -1;
        p.mask_add = cfg == 2 ? madd : NULL;
        p.mask_bool = cfg == 4 ? mb : NULL;
        p.softcap = cfg == 3 ? 5 : 0;
        p.scale = cfg == 3 ? 0.3 : 0;
        for (v = 0; v < 12; v++) {
            pair po, pl;
            int t;
            if (!pair_open(&po, v, no))
                continue;
            pair_open(&pl, v, nl);
            for (t = 0; t < 2; t++)
                ck_assert_int_eq(qf_ref_attention(&po.o[t], &p, q, k, vv, &po.y[t], &pl.y[t]), QF_OK);
            bad += pair_check(&po, "attention out", &printed);
            bad += pair_check(&pl, "attention lse", &printed);
            if (v == 0) {
                /* two threads: the same elements, decided the same way */
                qf_ref_out o2, l2;
                qf_ref_opts ot = po.o[0];
                ot.threads = 2;
                ck_assert_int_eq(qf_ref_out_alloc(&o2, no), QF_OK);
                ck_assert_int_eq(qf_ref_out_alloc(&l2, nl), QF_OK);
                ck_assert_int_eq(qf_ref_attention(&ot, &p, q, k, vv, &o2, &l2), QF_OK);
                ck_assert_uint_eq(o2.n_fast, po.y[0].n_fast);
                ck_assert_uint_eq(l2.n_fast, pl.y[0].n_fast);
                for (i = 0; i < no; i++)
                    ck_assert(o2.code[i] == po.y[0].code[i] && o2.status[i] == po.y[0].status[i]);
                qf_ref_out_free(&o2);
                qf_ref_out_free(&l2);
            }
            fast += po.y[0].n_fast + pl.y[0].n_fast;
            of += no + nl - po.y[0].n_undefined - pl.y[0].n_undefined - pl.y[0].n_exact;
            pair_close(&po);
            pair_close(&pl);
        }
        free(q), free(k), free(vv), free(madd), free(mb);
    }
    fast_tally("attention out and lse (not undefined)", bad, fast, of, 0.85);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/fast_attn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, sincos);
    tcase_add_test(tc, logs);
    tcase_add_test(tc, attn_row);
    tcase_add_test(tc, rope);
    tcase_add_test(tc, router);
    tcase_add_test(tc, attention);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
