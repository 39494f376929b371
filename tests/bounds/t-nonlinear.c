/* t-nonlinear.c: plain float32 implementations of softmax, RMSNorm,
 * LayerNorm and attention stay inside the bounds derived in
 * docs/bounds.md (qf_bound_softmax, qf_bound_norm, qf_bound_attention),
 * against the MPFR references of refs/qf_ref.h; and the bounds are not
 * vacuous (some element uses a fair part of its bound). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_ref.h"
#include "qf_test.h"

static double unif(uint64_t seed, uint64_t i)
{
    return (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53;
}

static double gauss(uint64_t seed, uint64_t i)
{
    double u1 = unif(seed, 2 * i) + 0x1p-54, u2 = unif(seed, 2 * i + 1);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static double q(const qf_format *f, double x)
{
    return qf_format_decode(f, qf_format_encode(f, x, QF_ROUND_RNE, 1, 0, 0));
}

typedef struct tally {
    size_t n, viol;
    double max_util;
} tally;

static void check(tally *t, const char *what, size_t row, size_t n, const double *got, const double *exact,
                  const double *bound)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double e = fabs(got[i] - exact[i]);
        t->n++;
        if (!(e <= bound[i])) {
            if (t->viol++ < 5)
                fprintf(stderr, "  %s row %zu elem %zu: got %.9g exact %.17g err %.3g > bound %.3g\n", what,
                        row, i, got[i], exact[i], e, bound[i]);
        }
        if (bound[i] > 0 && e / bound[i] > t->max_util)
            t->max_util = e / bound[i];
    }
}

static void softmax_f32(const double *x, size_t n, float scale, double *y)
{
    float m = -INFINITY, s = 0, *t = malloc(n * sizeof *t);
    size_t i;
    ck_assert(t);
    for (i = 0; i < n; i++)
        m = fmaxf(m, scale * (float)x[i]);
    for (i = 0; i < n; i++) {
        t[i] = expf(scale * (float)x[i] - m);
        s += t[i];
    }
    for (i = 0; i < n; i++)
        y[i] = t[i] / s;
    free(t);
}

static const size_t NS[] = {1, 2, 5, 16, 100, 1000};
#define NN (sizeof NS / sizeof NS[0])

START_TEST(test_softmax)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *bf16 = qf_format_get(QF_BFLOAT16);
    qf_arith_claim c = qf_arith_claim_default();
    uint64_t seed = qf_test_seed();
    static const double sigmas[] = {0.1, 1, 10, 100};
    static const float scales[] = {1.0f, 0.3f};
    tally t = {0, 0, 0}, tb = {0, 0, 0};
    long reps = qf_test_iters(2), r;
    size_t in, is, isc, i;
    for (in = 0; in < NN; in++)
        for (is = 0; is < 4; is++)
            for (isc = 0; isc < 2; isc++)
                for (r = 0; r < reps; r++) {
                    size_t n = NS[in];
                    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *b = malloc(n * sizeof *b);
                    double *yb = malloc(n * sizeof *yb);
                    qf_ref_out ref;
                    uint64_t s = seed + 1000 * in + 100 * is + 10 * isc + (uint64_t)r;
                    ck_assert(x && y && b && yb);
                    for (i = 0; i < n; i++)
                        x[i] = q(f32, sigmas[is] * gauss(s, i) + (r & 1) * 50);
                    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
                    ck_assert_int_eq(qf_ref_softmax(NULL, x, 1, n, (double)scales[isc], &ref), QF_OK);
                    softmax_f32(x, n, scales[isc], y);
                    ck_assert_int_eq(qf_bound_softmax(&c, f32, n, x, (double)scales[isc], ref.value, b),
                                     QF_OK);
                    check(&t, "softmax", s, n, y, ref.value, b);
                    /* rounded to a bfloat16 output */
                    for (i = 0; i < n; i++)
                        yb[i] = q(bf16, y[i]);
                    ck_assert_int_eq(qf_bound_softmax(&c, bf16, n, x, (double)scales[isc], ref.value, b),
                                     QF_OK);
                    check(&tb, "softmax->bf16", s, n, yb, ref.value, b);
                    qf_ref_out_free(&ref);
                    free(x), free(y), free(b), free(yb);
                }
    fprintf(stderr, "  softmax: %zu elements, max utilization %.3f (bf16 out %.3f)\n", t.n, t.max_util,
            tb.max_util);
    ck_assert_uint_eq(t.viol, 0);
    ck_assert_uint_eq(tb.viol, 0);
    ck_assert(t.max_util > 0.01);
    ck_assert(tb.max_util > 0.2);
}
END_TEST

static void norm_f32(const double *x, size_t n, const double *w, const double *bias, double eps, int center,
                     double *y)
{
    float mu = 0, ss = 0, r;
    size_t i;
    if (center) {
        for (i = 0; i < n; i++)
            mu += (float)x[i];
        mu /= (float)n;
    }
    for (i = 0; i < n; i++) {
        float d = (float)x[i] - mu;
        ss += d * d;
    }
    r = 1.0f / sqrtf(ss / (float)n + (float)eps);
    for (i = 0; i < n; i++) {
        float v = ((float)x[i] - mu) * r * (float)w[i];
        if (bias)
            v += (float)bias[i];
        y[i] = v;
    }
}

START_TEST(test_norms)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *bf16 = qf_format_get(QF_BFLOAT16);
    qf_arith_claim c = qf_arith_claim_default();
    uint64_t seed = qf_test_seed();
    static const double offsets[] = {0, 3, 1000};
    static const double epss[] = {0x1p-20, 0x1p-10}; /* exact in float32 */
    tally t[2] = {{0, 0, 0}, {0, 0, 0}};
    long reps = qf_test_iters(2), r;
    size_t in, io, ie, i;
    int center;
    for (center = 0; center < 2; center++)
        for (in = 0; in < NN; in++)
            for (io = 0; io < 3; io++)
                for (ie = 0; ie < 2; ie++)
                    for (r = 0; r < reps; r++) {
                        size_t n = NS[in];
                        double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y),
                               *b = malloc(n * sizeof *b);
                        double *w = malloc(n * sizeof *w), *bias = malloc(n * sizeof *bias);
                        qf_ref_out ref;
                        qf_ref_norm_params p = {1, n, epss[ie], w, center ? bias : NULL, 0};
                        uint64_t s =
                            seed + 7 * in + 1000 * io + 100 * ie + (uint64_t)r + 99999 * (uint64_t)center;
                        ck_assert(x && y && b && w && bias);
                        for (i = 0; i < n; i++) {
                            x[i] = q(bf16, offsets[io] + gauss(s, i) * (r & 1 ? 10 : 1));
                            w[i] = q(bf16, 1 + 0.1 * gauss(s + 5, i));
                            bias[i] = q(bf16, 0.1 * gauss(s + 9, i));
                        }
                        ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
                        if (center)
                            ck_assert_int_eq(qf_ref_layernorm(NULL, &p, x, &ref), QF_OK);
                        else
                            ck_assert_int_eq(qf_ref_rmsnorm(NULL, &p, x, &ref), QF_OK);
                        norm_f32(x, n, w, center ? bias : NULL, epss[ie], center, y);
                        ck_assert_int_eq(qf_bound_norm(&c, f32, n, x, w, center ? bias : NULL, epss[ie],
                                                       center, ref.value, b),
                                         QF_OK);
                        check(&t[center], center ? "layernorm" : "rmsnorm", s, n, y, ref.value, b);
                        qf_ref_out_free(&ref);
                        free(x), free(y), free(b), free(w), free(bias);
                    }
    fprintf(stderr, "  rmsnorm: %zu elements, max utilization %.3f; layernorm: %zu, %.3f\n", t[0].n,
            t[0].max_util, t[1].n, t[1].max_util);
    ck_assert_uint_eq(t[0].viol + t[1].viol, 0);
    ck_assert(t[0].max_util > 0.02 && t[1].max_util > 0.01);
}
END_TEST

/* FlashAttention-style float32 attention for one query row: scores
 * accumulated in float32, exp in float32, P rounded to bfloat16 for P V,
 * the denominator from the float32 terms; online (tiled) when tile > 0. */
static void attn_f32(const double *qv, const double *k, const double *v, size_t nk, size_t d, size_t dv,
                     float scale, size_t tile, double *out)
{
    const qf_format *bf16 = qf_format_get(QF_BFLOAT16);
    float m = -INFINITY, l = 0, *o = calloc(dv, sizeof *o), *sc = malloc(nk * sizeof *sc);
    size_t j, t, l0;
    ck_assert(o && sc);
    for (j = 0; j < nk; j++) {
        float s = 0;
        for (t = 0; t < d; t++)
            s += (float)qv[t] * (float)k[j * d + t];
        sc[j] = s * scale;
    }
    if (!tile)
        tile = nk;
    for (l0 = 0; l0 < nk; l0 += tile) {
        size_t e = l0 + tile < nk ? l0 + tile : nk;
        float mt = m, alpha;
        for (j = l0; j < e; j++)
            mt = fmaxf(mt, sc[j]);
        alpha = expf(m - mt);
        l *= alpha;
        for (t = 0; t < dv; t++)
            o[t] *= alpha;
        m = mt;
        for (j = l0; j < e; j++) {
            float p = expf(sc[j] - m), pb = (float)q(bf16, p);
            l += p;
            for (t = 0; t < dv; t++)
                o[t] += pb * (float)v[j * dv + t];
        }
    }
    for (t = 0; t < dv; t++)
        out[t] = o[t] / l;
    free(o), free(sc);
}

START_TEST(test_attention)
{
    enum { SQ = 4, D = 64, DV = 32 };
    static const size_t nks[] = {1, 17, 128, 600};
    static const size_t tiles[] = {0, 16, 64};
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *bf16 = qf_format_get(QF_BFLOAT16);
    qf_arith_claim c = qf_arith_claim_default();
    uint64_t seed = qf_test_seed();
    tally tt = {0, 0, 0};
    size_t ik, it, i, j, t;
    long reps = qf_test_iters(1), r;
    const float scale = 0.125f; /* 1/sqrt(64), exact */
    for (ik = 0; ik < 4; ik++)
        for (it = 0; it < 3; it++)
            for (r = 0; r < reps; r++) {
                size_t nk = nks[ik];
                double *qm = malloc(SQ * D * sizeof *qm), *k = malloc(nk * D * sizeof *k);
                double *v = malloc(nk * DV * sizeof *v), *s = malloc(nk * sizeof *s),
                       *sa = malloc(nk * sizeof *sa);
                double got[DV], b[DV];
                qf_ref_out ref;
                qf_ref_attn_params p;
                uint64_t sd = seed + 31 * ik + 7 * it + (uint64_t)r;
                double amp = (r & 1) ? 3 : 1.5; /* sharper or flatter softmax */
                ck_assert(qm && k && v && s && sa);
                for (i = 0; i < SQ * D; i++)
                    qm[i] = q(bf16, amp * gauss(sd, i));
                for (i = 0; i < nk * D; i++)
                    k[i] = q(bf16, gauss(sd + 1, i));
                for (i = 0; i < nk * DV; i++)
                    v[i] = q(bf16, gauss(sd + 2, i));
                qf_ref_attn_params_init(&p);
                p.batch = p.heads = p.kv_heads = 1;
                p.seq_q = SQ, p.seq_k = nk, p.head_dim = D, p.head_dim_v = DV, p.scale = scale;
                ck_assert_int_eq(qf_ref_out_alloc(&ref, SQ * DV), QF_OK);
                ck_assert_int_eq(qf_ref_attention(NULL, &p, qm, k, v, &ref, NULL), QF_OK);
                for (i = 0; i < SQ; i++) {
                    for (j = 0; j < nk; j++) {
                        qf_dot_acc ex, ab;
                        qf_dot_acc_init(&ex);
                        qf_dot_acc_init(&ab);
                        qf_dot_acc_add_dot(&ex, &ab, D, qm + i * D, 1, k + j * D, 1, NULL, NULL);
                        s[j] = scale * qf_dot_acc_get_d(&ex, QF_ROUND_RNE);
                        sa[j] = scale * qf_dot_acc_get_d(&ab, QF_ROUND_UP);
                    }
                    attn_f32(qm + i * D, k, v, nk, D, DV, scale, tiles[it], got);
                    ck_assert_int_eq(qf_bound_attention(&c, f32, nk, D, DV, s, sa, v, bf16, tiles[it],
                                                        ref.value + i * DV, b),
                                     QF_OK);
                    check(&tt, "attention", sd, DV, got, ref.value + i * DV, b);
                    for (t = 0; t < DV; t++)
                        ck_assert(isfinite(b[t]));
                }
                qf_ref_out_free(&ref);
                free(qm), free(k), free(v), free(s), free(sa);
            }
    fprintf(stderr, "  attention: %zu elements, max utilization %.3f\n", tt.n, tt.max_util);
    ck_assert_uint_eq(tt.viol, 0);
    ck_assert(tt.max_util > 0.01);
}
END_TEST

START_TEST(test_claimed_ulp_and_args)
{
    const qf_format *bf16 = qf_format_get(QF_BFLOAT16);
    qf_arith_claim c = qf_arith_claim_default();
    double x[3] = {0, 1, 2}, y[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, b[3];
    c.max_ulp = 2;
    ck_assert_int_eq(qf_bound_softmax(&c, bf16, 3, x, 1, y, b), QF_OK);
    ck_assert(b[2] == 2 * qf_format_ulp(bf16, y[2]));
    ck_assert_int_eq(qf_bound_softmax(&c, bf16, 0, x, 1, y, b), QF_EINVAL);
    ck_assert_int_eq(qf_bound_norm(&c, bf16, 3, x, NULL, NULL, -1, 0, y, b), QF_EINVAL);
    /* masked entries: exactly zero, bound 0 */
    c.max_ulp = 0;
    x[0] = -INFINITY;
    y[0] = 0;
    ck_assert_int_eq(qf_bound_softmax(&c, bf16, 3, x, 1, y, b), QF_OK);
    ck_assert(b[0] == 0);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/nonlinear", "nonlinear", 120, NULL, NULL,
                        QF_TESTS(test_claimed_ulp_and_args, test_softmax, test_norms, test_attention));
}
