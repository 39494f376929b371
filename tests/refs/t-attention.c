/* t-attention.c: qf_ref_attention.
 *
 * Oracle: the textbook formula evaluated naively in MPFR at 2048 bits
 * (round to nearest), rounded into the target; every decided output and
 * lse element must agree with it.  Hand-checked masks (causal top-left and
 * bottom-right, sliding window, boolean, additive -inf), GQA/MQA head
 * mapping, fully masked rows, huge logits, the doubled-precision check and
 * a timing of a seq 128 / head_dim 64 head.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpfr.h>

#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 2048

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

typedef struct prob {
    qf_ref_attn_params p;
    double *q, *k, *v;
} prob;

static size_t dvof(const qf_ref_attn_params *p)
{
    return p->head_dim_v ? p->head_dim_v : p->head_dim;
}

static void prob_alloc(prob *x, uint64_t seed, double amp)
{
    const qf_ref_attn_params *p = &x->p;
    size_t nq = p->batch * p->heads * p->seq_q * p->head_dim;
    size_t nk = p->batch * p->kv_heads * p->seq_k * p->head_dim;
    size_t nv = p->batch * p->kv_heads * p->seq_k * dvof(p), i;
    x->q = malloc((nq + 1) * sizeof(double));
    x->k = malloc((nk + 1) * sizeof(double));
    x->v = malloc((nv + 1) * sizeof(double));
    for (i = 0; i < nq; i++)
        x->q[i] = unif(seed, i, amp);
    for (i = 0; i < nk; i++)
        x->k[i] = unif(seed, 1000000 + i, amp);
    for (i = 0; i < nv; i++)
        x->v[i] = unif(seed, 2000000 + i, 1.0);
}

static void prob_free(prob *x)
{
    free(x->q), free(x->k), free(x->v);
}

static int kept(const qf_ref_attn_params *p, size_t b, size_t h, size_t i, size_t j, double *madd)
{
    long long pos = (long long)i + (p->align_bottom_right ? (long long)p->seq_k - (long long)p->seq_q : 0);
    long wr = p->causal ? 0 : p->window_right;
    size_t off = b * p->mask_stride_b + h * p->mask_stride_h + i * p->seq_k + j;
    *madd = 0;
    if (p->window_left >= 0 && (long long)j < pos - p->window_left)
        return 0;
    if (wr >= 0 && (long long)j > pos + wr)
        return 0;
    if (p->mask_bool && !p->mask_bool[off])
        return 0;
    if (p->mask_add) {
        *madd = p->mask_add[off];
        if (*madd == -INFINITY)
            return 0;
    }
    return 1;
}

/* Checks the decided elements against the oracle; returns undecided count. */
static size_t check_oracle(const qf_ref_opts *o, const prob *x, const qf_ref_out *out, const qf_ref_out *lse,
                           const char *tag)
{
    const qf_ref_attn_params *p = &x->p;
    const qf_format *f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    const qf_format *fl = p->lse_format ? p->lse_format : f;
    size_t D = p->head_dim, dv = dvof(p), b, h, i, j, t, e, und = 0, group = p->heads / p->kv_heads;
    mpfr_t sc, s, m, S, N, tt, *sj;
    mpfr_prec_t op;
    double bound = 0;
    /* working bits: OP plus the logits' dynamic range (exp(-range) must
     * still register next to 1 for the directed rounding modes) */
    for (i = 0; i < p->batch * p->heads * p->seq_q; i++)
        for (j = 0; j < p->batch * p->kv_heads * p->seq_k; j++) {
            double d = 0;
            for (t = 0; t < D; t++)
                d += fabs(x->q[i * D + t] * x->k[j * D + t]);
            bound = fmax(bound, d);
        }
    op = OP + (mpfr_prec_t)(3.0 * (bound * (p->scale == 0 ? 1.0 : fabs(p->scale)) +
                                   2.0 * (p->mask_add ? 4.0 : 0.0)));
    sj = malloc(p->seq_k * sizeof *sj);
    for (j = 0; j < p->seq_k; j++)
        mpfr_init2(sj[j], op);
    mpfr_inits2(op, sc, s, m, S, N, tt, (mpfr_ptr)0);
    if (p->scale == 0) {
        mpfr_set_ui(sc, (unsigned long)D, MPFR_RNDN);
        mpfr_rec_sqrt(sc, sc, MPFR_RNDN);
    } else
        mpfr_set_d(sc, p->scale, MPFR_RNDN);
    for (b = 0; b < p->batch; b++)
        for (h = 0; h < p->heads; h++)
            for (i = 0; i < p->seq_q; i++) {
                size_t r = (b * p->heads + h) * p->seq_q + i, kvh = h / group;
                const double *qr = x->q + r * D;
                int any = 0;
                char *keep = calloc(p->seq_k, 1);
                for (j = 0; j < p->seq_k; j++) {
                    double madd;
                    const double *kr = x->k + ((b * p->kv_heads + kvh) * p->seq_k + j) * D;
                    if (!kept(p, b, h, i, j, &madd))
                        continue;
                    keep[j] = 1;
                    mpfr_set_zero(s, 1);
                    for (t = 0; t < D; t++) {
                        mpfr_set_d(tt, qr[t], MPFR_RNDN);
                        mpfr_mul_d(tt, tt, kr[t], MPFR_RNDN);
                        mpfr_add(s, s, tt, MPFR_RNDN);
                    }
                    mpfr_mul(s, s, sc, MPFR_RNDN);
                    if (p->softcap > 0) {
                        mpfr_div_d(s, s, p->softcap, MPFR_RNDN);
                        mpfr_tanh(s, s, MPFR_RNDN);
                        mpfr_mul_d(s, s, p->softcap, MPFR_RNDN);
                    }
                    mpfr_add_d(sj[j], s, madd, MPFR_RNDN);
                    if (!any || mpfr_cmp(sj[j], m) > 0)
                        mpfr_set(m, sj[j], MPFR_RNDN);
                    any = 1;
                }
                if (!any) {
                    for (e = 0; e < dv; e++)
                        ck_assert_int_eq(out->status[r * dv + e], QF_REF_UNDEFINED);
                    if (lse)
                        ck_assert(lse->value[r] == -INFINITY);
                    free(keep);
                    continue;
                }
                mpfr_set_zero(S, 1);
                for (j = 0; j < p->seq_k; j++) {
                    if (!keep[j])
                        continue;
                    mpfr_sub(sj[j], sj[j], m, MPFR_RNDN);
                    mpfr_exp(sj[j], sj[j], MPFR_RNDN);
                    mpfr_add(S, S, sj[j], MPFR_RNDN);
                }
                if (lse) {
                    if (lse->status[r] == QF_REF_UNDECIDED)
                        und++;
                    else {
                        double want;
                        mpfr_log(tt, S, MPFR_RNDN);
                        mpfr_add(tt, tt, m, MPFR_RNDN);
                        want =
                            qf_format_decode(fl, qf_format_encode_mpfr(fl, tt, o->round, o->saturate, 32, 0));
                        if (!same(want, lse->value[r])) {
                            fprintf(stderr, "%s lse row %zu: got %a want %a\n", tag, r, lse->value[r], want);
                            ck_abort_msg("lse disagrees with the oracle");
                        }
                    }
                }
                for (e = 0; e < dv; e++) {
                    size_t oi = r * dv + e;
                    double want;
                    if (out->status[oi] == QF_REF_UNDECIDED) {
                        und++;
                        continue;
                    }
                    mpfr_set_zero(N, 1);
                    for (j = 0; j < p->seq_k; j++) {
                        if (!keep[j])
                            continue;
                        mpfr_mul_d(tt, sj[j], x->v[((b * p->kv_heads + kvh) * p->seq_k + j) * dv + e],
                                   MPFR_RNDN);
                        mpfr_add(N, N, tt, MPFR_RNDN);
                    }
                    mpfr_div(N, N, S, MPFR_RNDN);
                    want = qf_format_decode(f, qf_format_encode_mpfr(f, N, o->round, o->saturate, 32, 0));
                    if (!same(want, out->value[oi])) {
                        fprintf(stderr,
                                "%s out b %zu h %zu i %zu e %zu (%s, round %s): got %a want %a status %s; "
                                "seq_q %zu seq_k %zu D %zu causal %d br %d window %ld,%ld softcap %g\n",
                                tag, b, h, i, e, f->name, qf_round_name(o->round), out->value[oi], want,
                                qf_ref_status_name((qf_ref_status)out->status[oi]), p->seq_q, p->seq_k, D,
                                p->causal, p->align_bottom_right, p->window_left, p->window_right,
                                p->softcap);
                        ck_abort_msg("attention output disagrees with the oracle (QF_SEED=%llu)",
                                     (unsigned long long)qf_test_seed());
                    }
                }
                free(keep);
            }
    for (j = 0; j < p->seq_k; j++)
        mpfr_clear(sj[j]);
    free(sj);
    mpfr_clears(sc, s, m, S, N, tt, (mpfr_ptr)0);
    return und;
}

static void run(const qf_ref_opts *o, const prob *x, qf_ref_out *out, qf_ref_out *lse)
{
    const qf_ref_attn_params *p = &x->p;
    size_t rows = p->batch * p->heads * p->seq_q;
    ck_assert_int_eq(qf_ref_out_alloc(out, rows * dvof(p)), QF_OK);
    ck_assert_int_eq(qf_ref_out_alloc(lse, rows), QF_OK);
    ck_assert_int_eq(qf_ref_attention(o, p, x->q, x->k, x->v, out, lse), QF_OK);
    ck_assert_uint_eq(out->n_exact + out->n_rounded + out->n_undecided + out->n_undefined, rows * dvof(p));
}

START_TEST(test_random_oracle)
{
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(14);
    size_t und = 0, total = 0;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    for (it = 0; it < iters; it++) {
        prob x;
        qf_ref_opts o = qf_ref_opts_default();
        qf_ref_out out, lse;
        double *madd = NULL;
        uint8_t *mb = NULL;
        size_t i;
        qf_ref_attn_params_init(&x.p);
        x.p.batch = 1 + it % 2;
        x.p.kv_heads = 1 + it % 2;
        x.p.heads = x.p.kv_heads * (1 + it % 3);
        x.p.seq_q = 1 + qf_rng_u64(seed, it * 7 + 1) % 9;
        x.p.seq_k = 1 + qf_rng_u64(seed, it * 7 + 2) % 12;
        x.p.head_dim = 1 + qf_rng_u64(seed, it * 7 + 3) % 16;
        x.p.head_dim_v = it % 4 == 1 ? 3 : 0;
        x.p.causal = it % 3 == 0;
        x.p.align_bottom_right = it % 2;
        x.p.window_left = it % 5 == 2 ? 2 : -1;
        x.p.window_right = it % 5 == 3 ? 1 : -1;
        x.p.softcap = it % 4 == 2 ? 5.0 : 0.0;
        x.p.scale = it % 3 == 1 ? 0.25 : 0.0;
        x.p.lse_format = it % 2 ? qf_format_get(QF_FLOAT32) : NULL;
        if (it % 6 == 4) {
            madd = malloc(x.p.seq_q * x.p.seq_k * sizeof *madd);
            for (i = 0; i < x.p.seq_q * x.p.seq_k; i++)
                madd[i] = i % 5 == 1 ? -INFINITY : unif(seed, 9000000 + i, 2.0);
            x.p.mask_add = madd; /* strides 0: broadcast */
        }
        if (it % 6 == 5) {
            mb = malloc(x.p.heads * x.p.seq_q * x.p.seq_k);
            for (i = 0; i < x.p.heads * x.p.seq_q * x.p.seq_k; i++)
                mb[i] = qf_rng_u64(seed, 8000000 + i) % 4 != 0;
            x.p.mask_bool = mb;
            x.p.mask_stride_h = x.p.seq_q * x.p.seq_k;
        }
        prob_alloc(&x, seed + (uint64_t)it, it % 7 == 6 ? 20.0 : 1.5);
        o.format = qf_format_get(it % 3 == 0 ? QF_FLOAT64 : it % 3 == 1 ? QF_FLOAT32 : QF_BFLOAT16);
        o.round = it % 4 == 3 ? QF_ROUND_RTZ : QF_ROUND_RNE;
        run(&o, &x, &out, &lse);
        und += check_oracle(&o, &x, &out, &lse, "random");
        total +=
            out.n_exact + out.n_rounded + out.n_undecided + lse.n_rounded + lse.n_exact + lse.n_undecided;
        qf_ref_out_free(&out);
        qf_ref_out_free(&lse);
        prob_free(&x);
        free(madd);
        free(mb);
    }
    fprintf(stderr, "refs/attention random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

/* q = 0: every kept key has weight 1 / (number kept); v_j = e_j shows which. */
static void uniform_case(qf_ref_attn_params *p, qf_ref_out *out, qf_ref_out *lse, double **vv)
{
    size_t j, nq = p->heads * p->seq_q * p->head_dim;
    double *q = calloc(nq, sizeof *q), *k = malloc(p->seq_k * p->head_dim * sizeof *k);
    double *v = calloc(p->seq_k * p->seq_k, sizeof *v);
    for (j = 0; j < p->seq_k * p->head_dim; j++)
        k[j] = unif(3, j, 1.0);
    for (j = 0; j < p->seq_k; j++)
        v[j * p->seq_k + j] = 1.0;
    p->head_dim_v = p->seq_k;
    ck_assert_int_eq(qf_ref_out_alloc(out, p->heads * p->seq_q * p->seq_k), QF_OK);
    ck_assert_int_eq(qf_ref_out_alloc(lse, p->heads * p->seq_q), QF_OK);
    ck_assert_int_eq(qf_ref_attention(NULL, p, q, k, v, out, lse), QF_OK);
    free(q), free(k);
    *vv = v;
}

static void expect_row(const qf_ref_out *out, const qf_ref_out *lse, size_t r, size_t sk, size_t lo,
                       size_t hi)
{
    size_t j, n = hi - lo + 1;
    for (j = 0; j < sk; j++) {
        double want = j >= lo && j <= hi ? 1.0 / (double)n : 0.0;
        ck_assert_msg(out->value[r * sk + j] == want, "row %zu key %zu: %a, want %a", r, j,
                      out->value[r * sk + j], want);
        if (want == 0 || n == 1 || n == 2 || n == 4)
            ck_assert_int_eq(out->status[r * sk + j], QF_REF_EXACT);
    }
    ck_assert(fabs(lse->value[r] - log((double)n)) < 1e-15);
    if (n == 1)
        ck_assert_int_eq(lse->status[r], QF_REF_EXACT);
}

START_TEST(test_masks)
{
    qf_ref_attn_params p;
    qf_ref_out out, lse;
    double *v;
    size_t i;
    /* causal, square */
    qf_ref_attn_params_init(&p);
    p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = 4, p.seq_k = 4, p.head_dim = 3, p.causal = 1;
    uniform_case(&p, &out, &lse, &v);
    for (i = 0; i < 4; i++)
        expect_row(&out, &lse, i, 4, 0, i);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    /* causal, seq_q < seq_k: top-left (PyTorch) and bottom-right (FlashAttention) */
    p.seq_q = 2, p.seq_k = 4, p.align_bottom_right = 0;
    uniform_case(&p, &out, &lse, &v);
    expect_row(&out, &lse, 0, 4, 0, 0);
    expect_row(&out, &lse, 1, 4, 0, 1);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    p.align_bottom_right = 1;
    uniform_case(&p, &out, &lse, &v);
    expect_row(&out, &lse, 0, 4, 0, 2);
    expect_row(&out, &lse, 1, 4, 0, 3);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    /* sliding window (left 1) with causal: keys i-1..i */
    p.seq_q = 5, p.seq_k = 5, p.align_bottom_right = 0, p.window_left = 1;
    uniform_case(&p, &out, &lse, &v);
    expect_row(&out, &lse, 0, 5, 0, 0);
    for (i = 1; i < 5; i++)
        expect_row(&out, &lse, i, 5, i - 1, i);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    /* window both sides, not causal: keys i-1..i+2 */
    p.causal = 0, p.window_left = 1, p.window_right = 2;
    uniform_case(&p, &out, &lse, &v);
    expect_row(&out, &lse, 0, 5, 0, 2);
    expect_row(&out, &lse, 1, 5, 0, 3);
    expect_row(&out, &lse, 2, 5, 1, 4);
    expect_row(&out, &lse, 4, 5, 3, 4);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    /* bottom-right causal with seq_q > seq_k: the first rows see nothing */
    qf_ref_attn_params_init(&p);
    p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = 4, p.seq_k = 2, p.head_dim = 2, p.causal = 1;
    p.align_bottom_right = 1;
    p.masked_row_value = 0.0;
    uniform_case(&p, &out, &lse, &v);
    for (i = 0; i < 2; i++) {
        ck_assert_int_eq(out.status[i * 2], QF_REF_UNDEFINED);
        ck_assert(out.value[i * 2] == 0.0);
        ck_assert(lse.value[i] == -INFINITY && lse.status[i] == QF_REF_EXACT);
    }
    expect_row(&out, &lse, 2, 2, 0, 0);
    expect_row(&out, &lse, 3, 2, 0, 1);
    ck_assert_uint_eq(out.n_undefined, 4);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
}
END_TEST

START_TEST(test_bool_add_masks)
{
    qf_ref_attn_params p;
    qf_ref_out out, lse;
    double *v, madd[9] = {0, -INFINITY, 0, 0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    uint8_t mb[9] = {1, 1, 0, 0, 1, 1, 0, 0, 0};
    qf_ref_attn_params_init(&p);
    p.batch = 1, p.heads = 1, p.kv_heads = 1, p.seq_q = 3, p.seq_k = 3, p.head_dim = 2;
    p.mask_add = madd;
    p.masked_row_value = NAN;
    uniform_case(&p, &out, &lse, &v);
    /* row 0 keeps keys 0 and 2, row 1 keys 0 and 1, row 2 none */
    ck_assert(out.value[0] == 0.5 && out.value[1] == 0 && out.value[2] == 0.5);
    ck_assert_uint_eq(out.n_exact, 6);
    expect_row(&out, &lse, 1, 3, 0, 1);
    ck_assert(isnan(out.value[6]) && out.status[6] == QF_REF_UNDEFINED);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
    p.mask_add = NULL;
    p.mask_bool = mb;
    uniform_case(&p, &out, &lse, &v);
    expect_row(&out, &lse, 0, 3, 0, 1);
    expect_row(&out, &lse, 1, 3, 1, 2);
    ck_assert(isnan(out.value[6]) && out.status[6] == QF_REF_UNDEFINED); /* row 2 fully masked */
    ck_assert(lse.value[2] == -INFINITY);
    qf_ref_out_free(&out), qf_ref_out_free(&lse), free(v);
}
END_TEST

START_TEST(test_gqa)
{
    /* kv head g has v = g + 1 everywhere: query head h must give h / group + 1 */
    qf_ref_attn_params p;
    prob x;
    qf_ref_out out, lse;
    size_t g, j, h, n;
    qf_ref_attn_params_init(&p);
    p.batch = 2, p.heads = 6, p.kv_heads = 3, p.seq_q = 3, p.seq_k = 5, p.head_dim = 4;
    x.p = p;
    prob_alloc(&x, 5, 1.0);
    for (g = 0; g < p.batch * p.kv_heads; g++)
        for (j = 0; j < p.seq_k * p.head_dim; j++)
            x.v[g * p.seq_k * p.head_dim + j] = (double)(g % p.kv_heads) + 1;
    run(NULL, &x, &out, &lse);
    n = p.seq_q * p.head_dim;
    for (h = 0; h < p.batch * p.heads; h++)
        for (j = 0; j < n; j++)
            ck_assert(out.value[h * n + j] == (double)((h % p.heads) / 2) + 1);
    qf_ref_out_free(&out), qf_ref_out_free(&lse);
    /* MQA, and heads not a multiple of kv_heads is refused */
    x.p.kv_heads = 1;
    for (j = 0; j < p.batch * p.seq_k * p.head_dim; j++)
        x.v[j] = 2.5;
    run(NULL, &x, &out, &lse);
    for (j = 0; j < p.batch * p.heads * n; j++)
        ck_assert(out.value[j] == 2.5);
    x.p.kv_heads = 4;
    ck_assert_int_eq(qf_ref_attention(NULL, &x.p, x.q, x.k, x.v, &out, &lse), QF_EINVAL);
    qf_ref_out_free(&out), qf_ref_out_free(&lse);
    prob_free(&x);
}
END_TEST

START_TEST(test_special)
{
    prob x;
    qf_ref_out out, lse;
    size_t j;
    qf_ref_attn_params_init(&x.p);
    x.p.batch = 1, x.p.heads = 1, x.p.kv_heads = 1, x.p.seq_q = 2, x.p.seq_k = 3, x.p.head_dim = 2;
    x.p.scale = 1.0;
    prob_alloc(&x, 9, 1.0);
    /* logits of 1e300 overflow a naive exp; the largest one wins outright */
    x.q[0] = 1e150, x.q[1] = 0;
    x.k[0] = 1e150, x.k[2] = -1e150, x.k[4] = 0.5e150;
    x.q[2] = NAN; /* row 1 is undefined */
    run(NULL, &x, &out, &lse);
    for (j = 0; j < 2; j++) {
        ck_assert(out.value[j] == x.v[j]);
        ck_assert_int_eq(out.status[j], QF_REF_ROUNDED);
    }
    ck_assert(lse.value[0] == 1e300 + x.q[1] * x.k[1] || fabs(lse.value[0] / 1e300 - 1) < 1e-15);
    ck_assert(out.status[2] == QF_REF_UNDEFINED && isnan(out.value[2]) && isnan(lse.value[1]));
    ck_assert_uint_eq(out.n_undecided + lse.n_undecided, 0);
    qf_ref_out_free(&out), qf_ref_out_free(&lse);
    /* exact zeros: v = 0 gives 0 exactly */
    for (j = 0; j < 6; j++)
        x.v[j] = 0, x.q[j % 4] = 1;
    run(NULL, &x, &out, &lse);
    ck_assert_uint_eq(out.n_exact, 4);
    qf_ref_out_free(&out), qf_ref_out_free(&lse);
    prob_free(&x);
}
END_TEST

START_TEST(test_precisions)
{
    prob x;
    qf_ref_opts a = qf_ref_opts_default(), b = qf_ref_opts_default();
    qf_ref_out oa, la, ob, lb;
    size_t i;
    qf_ref_attn_params_init(&x.p);
    x.p.batch = 1, x.p.heads = 4, x.p.kv_heads = 2, x.p.seq_q = 6, x.p.seq_k = 9, x.p.head_dim = 8;
    x.p.causal = 1, x.p.softcap = 3.0;
    prob_alloc(&x, qf_test_seed() + 77, 2.0);
    a.prec_extra = 2;
    a.threads = 1;
    b.prec_extra = 2 * 64 + 53;
    run(&a, &x, &oa, &la);
    run(&b, &x, &ob, &lb);
    ck_assert_int_gt(oa.max_prec, 55);
    for (i = 0; i < oa.n_exact + oa.n_rounded + oa.n_undecided + oa.n_undefined; i++) {
        ck_assert_int_eq(oa.status[i], ob.status[i]);
        ck_assert_uint_eq(oa.code[i], ob.code[i]);
    }
    for (i = 0; i < 24; i++)
        ck_assert_uint_eq(la.code[i], lb.code[i]);
    qf_ref_out_free(&oa), qf_ref_out_free(&la), qf_ref_out_free(&ob), qf_ref_out_free(&lb);
    prob_free(&x);
}
END_TEST

START_TEST(test_timing)
{
    prob x;
    qf_ref_out out, lse;
    struct timespec t0, t1;
    double secs;
    qf_ref_attn_params_init(&x.p);
    x.p.batch = 1, x.p.heads = 2, x.p.kv_heads = 1, x.p.seq_q = 128, x.p.seq_k = 128, x.p.head_dim = 64;
    x.p.causal = 1;
    prob_alloc(&x, 1, 1.0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run(NULL, &x, &out, &lse);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr,
            "refs/attention: 2 heads x seq 128 x head_dim 64, causal: %.2f s, max precision %d, "
            "%zu undecided\n",
            secs, out.max_prec, out.n_undecided + lse.n_undecided);
    ck_assert_uint_eq(out.n_undecided + lse.n_undecided, 0);
    qf_ref_out_free(&out), qf_ref_out_free(&lse);
    prob_free(&x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/attention");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_masks);
    tcase_add_test(tc, test_bool_add_masks);
    tcase_add_test(tc, test_gqa);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_precisions);
    tcase_add_test(tc, test_timing);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
