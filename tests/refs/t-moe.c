/* t-moe.c: qf_ref_moe_router.
 *
 * Oracle: scores and keys at 2048 bits; the reference's selection must be
 * the oracle's top-k in order, except where it marks a tie, and it must mark
 * a tie exactly where two relevant keys are within tie_tol.  Weights are
 * compared with the oracle's rounding.  Hand cases: exact ties (lower index
 * first, marked), near ties, bias-steered selection (DeepSeek-V3 style),
 * masked experts, NaN tokens.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

#define OP 2048

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

typedef struct res {
    int32_t *idx;
    uint8_t *ties;
    qf_ref_out w;
} res;

static res run(const qf_ref_opts *o, const qf_ref_moe_params *p, const double *l)
{
    res r;
    size_t n = p->tokens * p->top_k;
    r.idx = malloc((n + 1) * sizeof *r.idx);
    r.ties = malloc(n + 1);
    ck_assert_int_eq(qf_ref_out_alloc(&r.w, n), QF_OK);
    ck_assert_int_eq(qf_ref_moe_router(o, p, l, r.idx, &r.w, r.ties), QF_OK);
    ck_assert_uint_eq(r.w.n_exact + r.w.n_rounded + r.w.n_undecided + r.w.n_undefined, n);
    return r;
}

static void res_free(res *r)
{
    free(r->idx);
    free(r->ties);
    qf_ref_out_free(&r->w);
}

START_TEST(test_hand)
{
    double l[4] = {1, 3, 2, 3};
    qf_ref_moe_params p;
    res r;
    qf_ref_moe_params_init(&p);
    p.tokens = 1, p.experts = 4, p.top_k = 2, p.renormalize = 1;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.idx[1] == 3);
    ck_assert(r.ties[0] == QF_REF_TIE_ORDER && r.ties[1] == QF_REF_TIE_ORDER);
    ck_assert(r.w.value[0] == 0.5 && r.w.value[1] == 0.5 && r.w.n_exact == 2);
    res_free(&r);
    /* top-1 of an exact tie: the lower index, marked as a set tie */
    p.top_k = 1;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.ties[0] == QF_REF_TIE_SET);
    ck_assert(r.w.value[0] == 1.0 && r.w.status[0] == QF_REF_EXACT);
    res_free(&r);
    /* without renormalization the weight is the softmax score */
    p.renormalize = 0, p.top_k = 3;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.idx[1] == 3 && r.idx[2] == 2);
    ck_assert(r.ties[2] == 0 && r.ties[0] == (QF_REF_TIE_ORDER | 0));
    ck_assert(fabs(r.w.value[0] - exp(3.0) / (exp(1.0) + 2 * exp(3.0) + exp(2.0))) < 1e-16);
    res_free(&r);
    /* k = E: no set ties possible */
    p.top_k = 4;
    r = run(NULL, &p, l);
    ck_assert(r.idx[3] == 0 && !(r.ties[3] & QF_REF_TIE_SET));
    res_free(&r);
}
END_TEST

START_TEST(test_near_tie)
{
    double l[3] = {1.0, 1.0 + 1e-12, 0};
    qf_ref_moe_params p;
    res r;
    qf_ref_moe_params_init(&p);
    p.tokens = 1, p.experts = 3, p.top_k = 1;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.ties[0] == 0); /* provably ordered, tol 0 */
    res_free(&r);
    p.tie_tol = 1e-9;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.ties[0] == QF_REF_TIE_SET);
    res_free(&r);
    /* sigmoid scores: the same */
    p.score = QF_REF_ROUTER_SIGMOID;
    r = run(NULL, &p, l);
    ck_assert(r.idx[0] == 1 && r.ties[0] == QF_REF_TIE_SET);
    ck_assert(fabs(r.w.value[0] - 1 / (1 + exp(-l[1]))) < 2e-16);
    res_free(&r);
}
END_TEST

START_TEST(test_bias_and_specials)
{
    double l[2 * 4] = {2, 1, 0, -1, 0, NAN, 1, 2}, bias[4] = {0, 0, 0, 5};
    double m[4] = {-INFINITY, 0, -INFINITY, -INFINITY};
    qf_ref_moe_params p;
    res r;
    qf_ref_moe_params_init(&p);
    p.tokens = 2, p.experts = 4, p.top_k = 2, p.score = QF_REF_ROUTER_SIGMOID;
    p.sel_bias = bias, p.renormalize = 1, p.route_scale = 2.5;
    r = run(NULL, &p, l);
    /* bias steers selection to expert 3; weights from the unbiased scores */
    ck_assert(r.idx[0] == 3 && r.idx[1] == 0);
    {
        double s3 = 1 / (1 + exp(1.0)), s0 = 1 / (1 + exp(-2.0));
        ck_assert(fabs(r.w.value[0] - 2.5 * s3 / (s3 + s0)) < 1e-15);
    }
    ck_assert(r.idx[2] == -1 && r.idx[3] == -1 && r.w.status[2] == QF_REF_UNDEFINED && isnan(r.w.value[3]));
    ck_assert_uint_eq(r.w.n_undefined, 2);
    res_free(&r);
    /* masked experts (-inf logits) under softmax: weight 0 exactly */
    qf_ref_moe_params_init(&p);
    p.tokens = 1, p.experts = 4, p.top_k = 2;
    r = run(NULL, &p, m);
    ck_assert(r.idx[0] == 1 && r.w.value[0] == 1.0 && r.w.status[0] == QF_REF_EXACT);
    ck_assert(r.idx[1] == 0 && r.w.value[1] == 0.0 && r.w.status[1] == QF_REF_EXACT);
    ck_assert(r.ties[1] & QF_REF_TIE_SET); /* experts 0, 2, 3 are equal (-inf) */
    res_free(&r);
    p.top_k = 5;
    {
        int32_t idx[5];
        qf_ref_out w;
        ck_assert_int_eq(qf_ref_out_alloc(&w, 5), QF_OK);
        ck_assert_int_eq(qf_ref_moe_router(NULL, &p, m, idx, &w, NULL), QF_EINVAL);
        qf_ref_out_free(&w);
    }
}
END_TEST

START_TEST(test_random_oracle)
{
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(40);
    size_t und = 0, total = 0, tied = 0;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    for (it = 0; it < iters; it++) {
        qf_ref_moe_params p;
        qf_ref_opts o = qf_ref_opts_default();
        size_t E = 4 + qf_rng_u64(seed, it) % 60, T = 4, t, e, i;
        double *l = malloc(T * E * sizeof *l), *bias = malloc(E * sizeof *bias);
        mpfr_t *key = malloc(E * sizeof *key), *sc = malloc(E * sizeof *sc), S, tmp;
        res r;
        qf_ref_moe_params_init(&p);
        p.tokens = T, p.experts = E, p.top_k = 1 + qf_rng_u64(seed, it + 5) % (E < 8 ? E : 8);
        p.score = it % 2 ? QF_REF_ROUTER_SIGMOID : QF_REF_ROUTER_SOFTMAX;
        p.renormalize = it % 3 != 0;
        p.route_scale = it % 4 == 1 ? 2.5 : 1.0;
        p.tie_tol = it % 5 == 2 ? 1e-3 : 0.0;
        for (i = 0; i < T * E; i++) {
            l[i] = unif(seed, it * 10000 + i, 4.0);
            if (i % 13 == 7)
                l[i] = l[i - 1]; /* exact ties */
        }
        for (e = 0; e < E; e++)
            bias[e] = unif(seed, 777 + e, 0.1);
        p.sel_bias = it % 4 == 3 ? bias : NULL;
        o.format = qf_format_get(it % 3 == 2 ? QF_BFLOAT16 : QF_FLOAT32);
        r = run(&o, &p, l);
        for (e = 0; e < E; e++) {
            mpfr_init2(key[e], OP);
            mpfr_init2(sc[e], OP);
        }
        mpfr_inits2(OP, S, tmp, (mpfr_ptr)0);
        for (t = 0; t < T; t++) {
            const double *lt = l + t * E;
            const int32_t *ix = r.idx + t * p.top_k;
            const uint8_t *tf = r.ties + t * p.top_k;
            char *sel = calloc(E, 1);
            mpfr_set_zero(S, 1);
            for (e = 0; e < E; e++) {
                mpfr_set_d(sc[e], p.score == QF_REF_ROUTER_SIGMOID ? -lt[e] : lt[e], MPFR_RNDN);
                mpfr_exp(sc[e], sc[e], MPFR_RNDN);
                if (p.score == QF_REF_ROUTER_SIGMOID) {
                    mpfr_add_ui(sc[e], sc[e], 1, MPFR_RNDN);
                    mpfr_ui_div(sc[e], 1, sc[e], MPFR_RNDN);
                }
                mpfr_add(S, S, sc[e], MPFR_RNDN);
            }
            for (e = 0; e < E; e++) {
                if (p.score == QF_REF_ROUTER_SOFTMAX)
                    mpfr_div(key[e], sc[e], S, MPFR_RNDN);
                else
                    mpfr_set(key[e], sc[e], MPFR_RNDN);
                if (p.sel_bias)
                    mpfr_add_d(key[e], key[e], bias[e], MPFR_RNDN);
            }
            for (i = 0; i < p.top_k; i++)
                sel[ix[i]] = 1;
            for (i = 0; i < p.top_k; i++) {
                size_t a = (size_t)ix[i];
                uint8_t want = 0;
                /* order within the selection; ties within tie_tol are marked */
                if (i + 1 < p.top_k) {
                    mpfr_sub(tmp, key[a], key[ix[i + 1]], MPFR_RNDN);
                    ck_assert_msg(mpfr_sgn(tmp) >= 0, "token %zu: slots %zu, %zu out of order", t, i, i + 1);
                    if (mpfr_cmp_d(tmp, p.tie_tol) <= 0)
                        want |= QF_REF_TIE_ORDER;
                }
                if (i > 0) {
                    mpfr_sub(tmp, key[ix[i - 1]], key[a], MPFR_RNDN);
                    if (mpfr_cmp_d(tmp, p.tie_tol) <= 0)
                        want |= QF_REF_TIE_ORDER;
                }
                /* against every unselected expert */
                for (e = 0; e < E; e++) {
                    if (sel[e])
                        continue;
                    mpfr_sub(tmp, key[a], key[e], MPFR_RNDN);
                    ck_assert_msg(mpfr_sgn(tmp) >= 0, "token %zu slot %zu (expert %zu) below unselected %zu",
                                  t, i, a, e);
                    if (mpfr_cmp_d(tmp, p.tie_tol) <= 0)
                        want |= QF_REF_TIE_SET;
                }
                ck_assert_msg(tf[i] == want, "token %zu slot %zu: tie flags %u, want %u (QF_SEED=%llu)", t, i,
                              tf[i], want, (unsigned long long)qf_test_seed());
                tied += tf[i] != 0;
                /* the weight */
                if (r.w.status[t * p.top_k + i] == QF_REF_UNDECIDED) {
                    und++;
                    continue;
                }
                if (p.renormalize) {
                    size_t j;
                    mpfr_set_zero(tmp, 1);
                    for (j = 0; j < p.top_k; j++)
                        mpfr_add(tmp, tmp, sc[ix[j]], MPFR_RNDN);
                    mpfr_div(tmp, sc[a], tmp, MPFR_RNDN);
                } else if (p.score == QF_REF_ROUTER_SOFTMAX)
                    mpfr_div(tmp, sc[a], S, MPFR_RNDN);
                else
                    mpfr_set(tmp, sc[a], MPFR_RNDN);
                mpfr_mul_d(tmp, tmp, p.route_scale, MPFR_RNDN);
                ck_assert_msg(
                    r.w.value[t * p.top_k + i] ==
                        qf_format_decode(o.format, qf_format_encode_mpfr(o.format, tmp, o.round, 0, 32, 0)),
                    "weight token %zu slot %zu (QF_SEED=%llu)", t, i, (unsigned long long)qf_test_seed());
            }
            total += p.top_k;
            free(sel);
        }
        for (e = 0; e < E; e++) {
            mpfr_clear(key[e]);
            mpfr_clear(sc[e]);
        }
        mpfr_clears(S, tmp, (mpfr_ptr)0);
        free(key), free(sc), free(l), free(bias);
        res_free(&r);
    }
    fprintf(stderr, "refs/moe random: %zu weights, %zu undecided, %zu slots marked as ties\n", total, und,
            tied);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/moe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_near_tie);
    tcase_add_test(tc, test_bias_and_specials);
    tcase_add_test(tc, test_random_oracle);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
