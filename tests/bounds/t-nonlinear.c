/* t-nonlinear.c: plain float32 implementations of softmax, log-softmax,
 * RMSNorm, LayerNorm and attention stay inside the bounds derived in
 * docs/bounds.md (qf_bound_softmax, qf_bound_log_softmax, qf_bound_norm,
 * qf_bound_attention), against the MPFR references of refs/qf_ref.h; and
 * the bounds are not vacuous (some element uses a fair part of its bound).
 *
 * Log-softmax in the forms kernels use (tests test_log_softmax*):
 *   A    y = (z - m) - logf(s)               (ONNX Runtime's MLAS, JAX, the
 *                                             CUDA / HIP / CPU kernels here)
 *   B    y = z - (m + logf(s))               (PyTorch's CPU log_softmax)
 *   A8   form A with the sum in 8 lanes, then a tree (a vectorized order)
 *   E2   form A through exp2f(z log2e - m log2e) and log2f(s) ln 2
 *   ON   form A with an online sum (running max, rescaled l; claimed with
 *        attn_kv_tile = 1)
 * on normal rows of std 0.1 .. 100 (exp underflow at 100), mean 1000 with
 * std 1e-3 (nearly equal logits), logits around -10000, outliers, masked
 * entries (-inf), subnormal entries, rows of 1 .. 8192, scales 1, 0.3 and
 * 1/sqrt(96), float32 and bfloat16 outputs; and a sum rounded to bfloat16
 * at every addition leaves the bound. */
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
        double e = got[i] == exact[i] ? 0 : fabs(got[i] - exact[i]); /* -inf against -inf: 0 */
        t->n++;
        if (!(e <= bound[i])) {
            if (t->viol++ < 5)
                fprintf(stderr, "  %s (row %zu) elem %zu: got %.9g exact %.17g err %.3g > bound %.3g\n", what,
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

/* Gemma's RMSNorm, y = x / rms * (1 + w) with w near 0: a float32 kernel
 * forms g = fl(1 + w) and multiplies by it; inside qf_bound_norm_offset,
 * while the bound of the weights w alone (no offset) is exceeded. */
START_TEST(test_norm_offset)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    uint64_t seed = qf_test_seed() + 31;
    tally t = {0, 0, 0}, t_no = {0, 0, 0};
    size_t in, i;
    for (in = 0; in < NN; in++) {
        size_t n = NS[in];
        double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *b = malloc(n * sizeof *b);
        double *w = malloc(n * sizeof *w), *g = malloc(n * sizeof *g);
        qf_ref_out ref;
        qf_ref_norm_params p = {1, n, 1e-6, w, NULL, 1};
        ck_assert(x && y && b && w && g);
        for (i = 0; i < n; i++) {
            x[i] = q(f32, gauss(seed + in, i));
            w[i] = q(f32, 0.1 * gauss(seed + in + 5, i));
            g[i] = (float)(1 + w[i]);
        }
        ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
        ck_assert_int_eq(qf_ref_rmsnorm(NULL, &p, x, &ref), QF_OK);
        norm_f32(x, n, g, NULL, 1e-6, 0, y);
        ck_assert_int_eq(qf_bound_norm_offset(&c, f32, n, x, w, 1, NULL, 1e-6, 0, ref.value, b), QF_OK);
        check(&t, "rmsnorm offset 1", in, n, y, ref.value, b);
        ck_assert_int_eq(qf_bound_norm(&c, f32, n, x, w, NULL, 1e-6, 0, ref.value, b), QF_OK);
        for (i = 0; i < n; i++)
            t_no.viol += !(fabs(y[i] - ref.value[i]) <= b[i]);
        qf_ref_out_free(&ref);
        free(x), free(y), free(b), free(w), free(g);
    }
    fprintf(
        stderr,
        "  rmsnorm with weight_offset 1: max utilization %.3f; %zu elements outside the bound of w alone\n",
        t.max_util, t_no.viol);
    ck_assert_uint_eq(t.viol, 0);
    ck_assert(t.max_util > 0.02);
    ck_assert_uint_gt(t_no.viol, 0);
}
END_TEST

/* FlashAttention-style float32 attention for one query row: scores
 * accumulated in float32, exp in float32, P rounded to bfloat16 for P V,
 * the denominator from the float32 terms; online (tiled) when tile > 0;
 * lse = m + logf(l). */
static void attn_f32(const double *qv, const double *k, const double *v, size_t nk, size_t d, size_t dv,
                     float scale, size_t tile, double *out, double *lse)
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
    *lse = m + logf(l);
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
    tally tt = {0, 0, 0}, tl = {0, 0, 0};
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
                double got[DV], b[DV], lse, bl;
                qf_ref_out ref, rlse;
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
                ck_assert_int_eq(qf_ref_out_alloc(&rlse, SQ), QF_OK);
                ck_assert_int_eq(qf_ref_attention(NULL, &p, qm, k, v, &ref, &rlse), QF_OK);
                for (i = 0; i < SQ; i++) {
                    for (j = 0; j < nk; j++) {
                        qf_dot_acc ex, ab;
                        qf_dot_acc_init(&ex);
                        qf_dot_acc_init(&ab);
                        qf_dot_acc_add_dot(&ex, &ab, D, qm + i * D, 1, k + j * D, 1, NULL, NULL);
                        s[j] = scale * qf_dot_acc_get_d(&ex, QF_ROUND_RNE);
                        sa[j] = scale * qf_dot_acc_get_d(&ab, QF_ROUND_UP);
                    }
                    attn_f32(qm + i * D, k, v, nk, D, DV, scale, tiles[it], got, &lse);
                    ck_assert_int_eq(qf_bound_attention(&c, f32, nk, D, DV, s, sa, v, bf16, tiles[it],
                                                        ref.value + i * DV, b),
                                     QF_OK);
                    check(&tt, "attention", sd, DV, got, ref.value + i * DV, b);
                    for (t = 0; t < DV; t++)
                        ck_assert(isfinite(b[t]));
                    ck_assert_int_eq(
                        qf_bound_attention_lse(&c, f32, nk, D, s, sa, tiles[it], rlse.value[i], &bl), QF_OK);
                    check(&tl, "attention lse", sd, 1, &lse, rlse.value + i, &bl);
                }
                qf_ref_out_free(&ref);
                qf_ref_out_free(&rlse);
                free(qm), free(k), free(v), free(s), free(sa);
            }
    fprintf(stderr, "  attention: %zu elements, max utilization %.3f; lse: %zu rows, %.3f\n", tt.n,
            tt.max_util, tl.n, tl.max_util);
    ck_assert_uint_eq(tt.viol + tl.viol, 0);
    ck_assert(tt.max_util > 0.01 && tl.max_util > 0.01);
}
END_TEST

static float bf16(float v)
{
    return (float)q(qf_format_get(QF_BFLOAT16), v);
}

enum { FORM_A, FORM_B, FORM_A8, FORM_E2, FORM_ON, FORM_BF16_SUM, NFORM };
static const char *const form_name[NFORM] = {"A", "B", "A8", "E2", "online", "bf16-sum"};

/* One row in float32 in the given form. */
static void lsm_f32(int form, const double *x, size_t n, double scale, double *y)
{
    float *z = malloc((n + 1) * sizeof *z), m = -INFINITY, s = 0, l = 0, lg, lane[8] = {0};
    const float l2e = (float)1.4426950408889634, ln2 = (float)0.6931471805599453;
    size_t i;
    ck_assert(z);
    for (i = 0; i < n; i++) {
        z[i] = scale == 1 ? (float)x[i] : (float)(scale * x[i]);
        if (form == FORM_ON) {
            if (z[i] > m) {
                l = (m == -INFINITY ? 0.0f : l * expf(m - z[i])) + 1.0f;
                m = z[i];
            } else {
                l += expf(z[i] - m);
            }
        } else {
            m = fmaxf(m, z[i]);
        }
    }
    for (i = 0; form != FORM_ON && i < n; i++) {
        float e = form == FORM_E2 ? exp2f(z[i] * l2e - m * l2e) : expf(z[i] - m);
        if (form == FORM_A8)
            lane[i % 8] += e;
        else if (form == FORM_BF16_SUM)
            s = bf16(s + e);
        else
            s += e;
    }
    if (form == FORM_A8)
        s = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    if (form == FORM_ON)
        s = l;
    lg = form == FORM_E2 ? log2f(s) * ln2 : logf(s);
    for (i = 0; i < n; i++)
        y[i] = form == FORM_B ? z[i] - (m + lg) : (z[i] - m) - lg;
    free(z);
}

/* Row kinds: x_i of row `kind` with seed s. */
enum { R_NORMAL, R_MEAN1000, R_NEG10000, R_OUTLIERS, R_MASKED, R_SUBNORMAL, R_UNIFORM, NROW };
static const char *const row_name[NROW] = {"normal", "mean1000",  "neg10000",   "outliers",
                                           "masked", "subnormal", "uniform1000"};

static double draw(int kind, double sigma, uint64_t s, size_t i)
{
    double g = gauss(s, i);
    switch (kind) {
    case R_MEAN1000: return 1000 + 1e-3 * g;
    case R_NEG10000: return -10000 + g;
    case R_OUTLIERS: return unif(s ^ 7, i) < 0.01 ? 1e4 * g : g;
    case R_MASKED: return i > 0 && unif(s ^ 5, i) < 0.3 ? -INFINITY : sigma * g;
    case R_SUBNORMAL: return 1e-40 * g;
    case R_UNIFORM: return 2000 * unif(s, i) - 1000;
    default: return sigma * g;
    }
}

/* The row x of n in one form against its exact log-softmax: the bound of
 * claim c for output format f, the form's values (rounded to f when it is
 * not float32) into y, their errors tallied in t. */
static void lsm_check(tally *t, const char *what, size_t row, const qf_arith_claim *c, const qf_format *f,
                      int form, const double *x, size_t n, double scale, const double *exact, double *y,
                      double *b)
{
    size_t i;
    ck_assert_int_eq(qf_bound_log_softmax(c, f, n, x, scale, exact, b), QF_OK);
    lsm_f32(form, x, n, scale, y);
    for (i = 0; f->id != QF_FLOAT32 && i < n; i++)
        y[i] = q(f, y[i]);
    check(t, what, row, n, y, exact, b);
}

static const size_t LSM_NS[] = {1, 2, 7, 64, 1000, 8192};
#define LSM_NN (sizeof LSM_NS / sizeof LSM_NS[0])

START_TEST(test_log_softmax)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32), *fb = qf_format_get(QF_BFLOAT16);
    static const double sigmas[] = {0.1, 1, 10, 100};
    static const double scales[] = {1, 0.3, 0.10206207261596575 /* 1/sqrt(96) */};
    qf_arith_claim c = qf_arith_claim_default(), con = qf_arith_claim_default();
    uint64_t seed = qf_test_seed();
    tally t[NFORM] = {{0}}, tb = {0, 0, 0};
    size_t in, i;
    int kind, is, isc, form;
    char row[96];
    con.attn_kv_tile = 1;
    for (in = 0; in < LSM_NN; in++)
        for (kind = 0; kind < NROW; kind++)
            for (is = 0; is < (kind == R_NORMAL || kind == R_MASKED ? 4 : 1); is++)
                for (isc = 0; isc < 3; isc++) {
                    size_t n = LSM_NS[in];
                    uint64_t s =
                        seed + 100000 * in + 1000 * (uint64_t)kind + 10 * (uint64_t)is + (uint64_t)isc;
                    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *b = malloc(n * sizeof *b);
                    qf_ref_out ref;
                    ck_assert(x && y && b);
                    for (i = 0; i < n; i++)
                        x[i] = q(f32, draw(kind, sigmas[is], s, i));
                    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
                    ck_assert_int_eq(qf_ref_log_softmax(NULL, x, 1, n, scales[isc], &ref), QF_OK);
                    snprintf(row, sizeof row, "log_softmax %s n=%zu sigma=%g scale=%g", row_name[kind], n,
                             sigmas[is], scales[isc]);
                    for (form = 0; form < FORM_BF16_SUM; form++)
                        lsm_check(&t[form], row, (size_t)form, form == FORM_ON ? &con : &c, f32, form, x, n,
                                  scales[isc], ref.value, y, b);
                    /* rounded to a bfloat16 output */
                    lsm_check(&tb, row, FORM_A, &c, fb, FORM_A, x, n, scales[isc], ref.value, y, b);
                    qf_ref_out_free(&ref);
                    free(x), free(y), free(b);
                }
    for (form = 0; form < FORM_BF16_SUM; form++) {
        fprintf(stderr, "  log_softmax form %s: %zu elements, max utilization %.3f\n", form_name[form],
                t[form].n, t[form].max_util);
        ck_assert_uint_eq(t[form].viol, 0);
        ck_assert(t[form].max_util > 0.05);
    }
    fprintf(stderr, "  log_softmax form A, bfloat16 out: max utilization %.3f\n", tb.max_util);
    ck_assert_uint_eq(tb.viol, 0);
    ck_assert(tb.max_util > 0.3);
}
END_TEST

/* A sum in bfloat16 (2^-9 per addition) leaves the float32 bound on
 * random rows of 64, and the cancellation of form B on logits around 1000
 * is what the bound charges (u |lse|): inside, but using most of it. */
START_TEST(test_log_softmax_bf16_sum)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    uint64_t seed = qf_test_seed() + 77;
    size_t n = 64, i, rows = 0, r;
    double x[64], y[64], b[64];
    qf_ref_out ref;
    tally tb = {0, 0, 0}, t1 = {0, 0, 0};
    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
    for (r = 0; r < 8; r++) {
        size_t before = t1.viol;
        for (i = 0; i < n; i++)
            x[i] = q(f32, gauss(seed + r, i));
        ck_assert_int_eq(qf_ref_log_softmax(NULL, x, 1, n, 1, &ref), QF_OK);
        lsm_check(&t1, "bf16-sum (expected outside) n=64", r, &c, f32, FORM_BF16_SUM, x, n, 1, ref.value, y,
                  b);
        rows += t1.viol > before;
        for (i = 0; i < n; i++)
            x[i] = q(f32, 1000 + gauss(seed + r, i));
        ck_assert_int_eq(qf_ref_log_softmax(NULL, x, 1, n, 1, &ref), QF_OK);
        lsm_check(&tb, "log_softmax B mean 1000 n=64", r, &c, f32, FORM_B, x, n, 1, ref.value, y, b);
    }
    qf_ref_out_free(&ref);
    fprintf(stderr, "  bf16 sum: %zu of 8 rows outside; form B at mean 1000: max utilization %.3f\n", rows,
            tb.max_util);
    ck_assert_uint_ge(rows, 6);
    ck_assert_uint_eq(tb.viol, 0);
    ck_assert(tb.max_util > 0.1);
}
END_TEST

/* Exact rows: one entry (log_softmax 0 exactly), masked entries (-inf,
 * bound 0), special rows (the reference's specials decide), arguments. */
START_TEST(test_log_softmax_specials)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    double x[3] = {3, -INFINITY, 1}, y[3], b[3];
    qf_ref_out ref;
    ck_assert_int_eq(qf_ref_out_alloc(&ref, 3), QF_OK);
    /* cols = 1: y = 0 exactly; the bound is small and absolute */
    ck_assert_int_eq(qf_ref_log_softmax(NULL, x, 1, 1, 1, &ref), QF_OK);
    ck_assert(ref.value[0] == 0);
    ck_assert_int_eq(qf_bound_log_softmax(&c, f32, 1, x, 1, ref.value, b), QF_OK);
    ck_assert(b[0] > 0 && b[0] < 1e-5);
    lsm_f32(FORM_A, x, 1, 1, y);
    ck_assert(y[0] == 0);
    /* a masked entry is -inf exactly: bound 0 */
    ck_assert_int_eq(qf_ref_log_softmax(NULL, x, 1, 3, 1, &ref), QF_OK);
    ck_assert(ref.value[1] == -INFINITY);
    ck_assert_int_eq(qf_bound_log_softmax(&c, f32, 3, x, 1, ref.value, b), QF_OK);
    ck_assert(b[1] == 0 && b[0] > 0 && b[2] > 0);
    /* all masked: the reference's NaN, no rounding error to bound */
    x[0] = x[2] = -INFINITY;
    y[0] = y[1] = y[2] = NAN;
    ck_assert_int_eq(qf_bound_log_softmax(&c, f32, 3, x, 1, y, b), QF_OK);
    ck_assert(isinf(b[0]) && isinf(b[2]));
    ck_assert_int_eq(qf_bound_log_softmax(&c, f32, 0, x, 1, y, b), QF_EINVAL);
    ck_assert_int_eq(qf_bound_log_softmax(&c, f32, 3, NULL, 1, y, b), QF_EINVAL);
    qf_ref_out_free(&ref);
}
END_TEST

START_TEST(test_claimed_ulp_and_args)
{
    const qf_format *bf16 = qf_format_get(QF_BFLOAT16);
    qf_arith_claim c = qf_arith_claim_default();
    double x[3] = {0, 1, 2}, y[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, b[3],
           b0[3];
    /* a claimed max_ulp does not replace the derivation (docs/claims.md
     * "max_ulp": the ops that derive none read it) */
    ck_assert_int_eq(qf_bound_softmax(&c, bf16, 3, x, 1, y, b0), QF_OK);
    c.max_ulp = 2;
    ck_assert_int_eq(qf_bound_softmax(&c, bf16, 3, x, 1, y, b), QF_OK);
    ck_assert(b[0] == b0[0] && b[1] == b0[1] && b[2] == b0[2] && b[2] != 2 * qf_format_ulp(bf16, y[2]));
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
    return qf_test_main("bounds/nonlinear", "nonlinear", 300, NULL, NULL,
                        QF_TESTS(test_claimed_ulp_and_args, test_softmax, test_norms, test_norm_offset,
                                 test_attention, test_log_softmax, test_log_softmax_bf16_sum,
                                 test_log_softmax_specials));
}
