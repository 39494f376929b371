/* t-rope.c: qf_ref_rope.
 *
 * Oracle: theta^(-2i/d) by mpfr_pow, the angle, cos and sin at 2048 bits
 * (round to nearest), the rotation, rounded into the target.  Also: position
 * 0 is the identity (EXACT), the half-split layout is the interleaved one
 * permuted, positions[] agrees with pos_offset, partial rotary_dim passes
 * the tail through, explicit inv_freq, special values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static qf_ref_out run(const qf_ref_opts *o, const qf_ref_rope_params *p, const double *x)
{
    qf_ref_out y;
    size_t n = p->tokens * p->heads * p->head_dim;
    ck_assert_int_eq(qf_ref_out_alloc(&y, n), QF_OK);
    ck_assert_int_eq(qf_ref_rope(o, p, x, &y), QF_OK);
    ck_assert_uint_eq(y.n_exact + y.n_rounded + y.n_undecided + y.n_undefined, n);
    return y;
}

static size_t check_oracle(const qf_ref_opts *o, const qf_ref_rope_params *p, const double *x,
                           const qf_ref_out *y)
{
    const qf_format *f = o->format ? o->format : qf_format_get(QF_FLOAT64);
    size_t rd = p->rotary_dim ? p->rotary_dim : p->head_dim, half = rd / 2, t, h, i, und = 0;
    mpfr_t fr, ang, c, s, u, v, e;
    mpfr_inits2(OP, fr, ang, c, s, u, v, e, (mpfr_ptr)0);
    for (t = 0; t < p->tokens; t++) {
        int64_t pos = p->positions ? p->positions[t] : p->pos_offset + (int64_t)t;
        for (i = 0; i < half; i++) {
            if (p->inv_freq)
                mpfr_set_d(fr, p->inv_freq[i], MPFR_RNDN);
            else {
                mpfr_set_si(e, -2 * (long)i, MPFR_RNDN);
                mpfr_div_ui(e, e, (unsigned long)rd, MPFR_RNDN);
                mpfr_set_d(fr, p->theta, MPFR_RNDN);
                mpfr_pow(fr, fr, e, MPFR_RNDN);
            }
            mpfr_mul_si(ang, fr, (long)pos, MPFR_RNDN);
            mpfr_sin_cos(s, c, ang, MPFR_RNDN);
            for (h = 0; h < p->heads; h++) {
                size_t base = (t * p->heads + h) * p->head_dim;
                size_t ia = p->layout == QF_REF_ROPE_HALF ? i : 2 * i;
                size_t ib = p->layout == QF_REF_ROPE_HALF ? i + half : 2 * i + 1;
                int side;
                for (side = 0; side < 2; side++) {
                    size_t oi = base + (side ? ib : ia);
                    double want;
                    if (y->status[oi] == QF_REF_UNDECIDED) {
                        und++;
                        continue;
                    }
                    if (side == 0) {
                        mpfr_mul_d(u, c, x[base + ia], MPFR_RNDN);
                        mpfr_mul_d(v, s, x[base + ib], MPFR_RNDN);
                        mpfr_sub(u, u, v, MPFR_RNDN);
                    } else {
                        mpfr_mul_d(u, s, x[base + ia], MPFR_RNDN);
                        mpfr_mul_d(v, c, x[base + ib], MPFR_RNDN);
                        mpfr_add(u, u, v, MPFR_RNDN);
                    }
                    want = qf_format_decode(f, qf_format_encode_mpfr(f, u, o->round, o->saturate, 32, 0));
                    if (!same(want, y->value[oi]))
                        ck_abort_msg(
                            "rope token %zu head %zu pair %zu side %d pos %lld (%s, %s): got %a want %a "
                            "x = (%a, %a) (QF_SEED=%llu)",
                            t, h, i, side, (long long)pos, f->name, qf_round_name(o->round), y->value[oi],
                            want, x[base + ia], x[base + ib], (unsigned long long)qf_test_seed());
                }
            }
        }
    }
    mpfr_clears(fr, ang, c, s, u, v, e, (mpfr_ptr)0);
    return und;
}

START_TEST(test_identity)
{
    qf_ref_rope_params p;
    double x[2 * 3 * 8];
    size_t i;
    qf_ref_out y;
    qf_ref_rope_params_init(&p);
    p.tokens = 1, p.heads = 3, p.head_dim = 8;
    for (i = 0; i < 24; i++)
        x[i] = unif(1, i, 5.0);
    y = run(NULL, &p, x);
    for (i = 0; i < 24; i++)
        ck_assert(y.value[i] == x[i] && y.status[i] == QF_REF_EXACT);
    qf_ref_out_free(&y);
    /* a position offset moves token 0 away from the identity; positions[]
     * equal to 0 brings it back */
    {
        int64_t pos[2] = {0, 0};
        p.tokens = 2;
        for (i = 0; i < 48; i++)
            x[i % 24] = unif(1, i, 5.0);
        memcpy(x + 24, x, 24 * sizeof *x);
        p.positions = pos;
        p.pos_offset = 1000;
        y = run(NULL, &p, x);
        ck_assert_uint_eq(y.n_exact, 48);
        qf_ref_out_free(&y);
    }
}
END_TEST

START_TEST(test_layouts)
{
    /* half-split(x) == P^-1 interleaved(P x), P pairing (i, i + d/2) -> (2i, 2i+1) */
    qf_ref_rope_params p;
    double xh[4 * 2 * 16], xi[4 * 2 * 16];
    size_t t, i, n = 4 * 2 * 16, half = 6; /* rotary_dim 12 of 16 */
    qf_ref_out yh, yi;
    qf_ref_rope_params_init(&p);
    p.tokens = 4, p.heads = 2, p.head_dim = 16, p.rotary_dim = 12, p.pos_offset = 37;
    for (i = 0; i < n; i++)
        xh[i] = unif(2, i, 3.0);
    memcpy(xi, xh, sizeof xi);
    for (t = 0; t < 8; t++)
        for (i = 0; i < half; i++) {
            xi[t * 16 + 2 * i] = xh[t * 16 + i];
            xi[t * 16 + 2 * i + 1] = xh[t * 16 + i + half];
        }
    p.layout = QF_REF_ROPE_HALF;
    yh = run(NULL, &p, xh);
    p.layout = QF_REF_ROPE_INTERLEAVED;
    yi = run(NULL, &p, xi);
    for (t = 0; t < 8; t++) {
        for (i = 0; i < half; i++) {
            ck_assert(yh.value[t * 16 + i] == yi.value[t * 16 + 2 * i]);
            ck_assert(yh.value[t * 16 + i + half] == yi.value[t * 16 + 2 * i + 1]);
        }
        for (i = 12; i < 16; i++) { /* pass-through */
            ck_assert(yh.value[t * 16 + i] == xh[t * 16 + i] && yh.status[t * 16 + i] == QF_REF_EXACT);
        }
    }
    qf_ref_out_free(&yh);
    qf_ref_out_free(&yi);
}
END_TEST

START_TEST(test_random_oracle)
{
    static const qf_format_id fmts[] = {QF_FLOAT64, QF_FLOAT32, QF_BFLOAT16, QF_FLOAT16};
    static const qf_round rnds[] = {QF_ROUND_RNE, QF_ROUND_RTZ, QF_ROUND_UP, QF_ROUND_DOWN};
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(16);
    size_t und = 0, total = 0;
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    for (it = 0; it < iters; it++) {
        qf_ref_rope_params p;
        qf_ref_opts o = qf_ref_opts_default();
        double *x, fq[32];
        int64_t pos[5];
        size_t n, i;
        qf_ref_out y;
        qf_ref_rope_params_init(&p);
        p.tokens = 5, p.heads = 2, p.head_dim = 2 * (1 + qf_rng_u64(seed, it) % 16);
        p.rotary_dim = it % 3 == 2 ? p.head_dim / 2 + (p.head_dim / 2) % 2 : 0;
        p.layout = it % 2 ? QF_REF_ROPE_HALF : QF_REF_ROPE_INTERLEAVED;
        p.theta = it % 4 == 1 ? 500000.0 : 10000.0;
        p.pos_offset = it % 5 == 3 ? 1000000 : (int64_t)(qf_rng_u64(seed, it + 99) % 4096);
        if (it % 6 == 4) {
            for (i = 0; i < 5; i++)
                pos[i] = (int64_t)(qf_rng_u64(seed, it * 10 + i) % 100000);
            p.positions = pos;
        }
        if (it % 4 == 2) { /* a float32 frequency table, as a kernel holds it */
            size_t rd = p.rotary_dim ? p.rotary_dim : p.head_dim;
            for (i = 0; i < rd / 2; i++)
                fq[i] = (double)(float)pow(p.theta, -2.0 * (double)i / (double)rd);
            p.inv_freq = fq;
        }
        n = p.tokens * p.heads * p.head_dim;
        x = malloc(n * sizeof *x);
        for (i = 0; i < n; i++)
            x[i] = unif(seed, 1000 * it + i, it % 3 == 0 ? 1e3 : 1.0);
        o.format = qf_format_get(fmts[it % 4]);
        o.round = rnds[(it / 4) % 4];
        y = run(&o, &p, x);
        und += check_oracle(&o, &p, x, &y);
        total += n;
        qf_ref_out_free(&y);
        free(x);
    }
    fprintf(stderr, "refs/rope random: %zu elements, %zu undecided\n", total, und);
    ck_assert_uint_le(und, total / 1000);
    mpfr_free_cache();
}
END_TEST

START_TEST(test_special)
{
    qf_ref_rope_params p;
    double x[8] = {1, NAN, 2, 3, INFINITY, 0, 5, 6};
    qf_ref_out y;
    qf_ref_rope_params_init(&p);
    p.tokens = 1, p.heads = 1, p.head_dim = 8, p.rotary_dim = 4, p.pos_offset = 3;
    y = run(NULL, &p, x);
    ck_assert(y.status[0] == QF_REF_UNDEFINED && y.status[1] == QF_REF_UNDEFINED);
    ck_assert(y.status[2] != QF_REF_UNDEFINED && y.status[3] != QF_REF_UNDEFINED);
    ck_assert(y.value[4] == INFINITY && y.status[4] == QF_REF_EXACT); /* pass-through */
    qf_ref_out_free(&y);
    p.rotary_dim = 3;
    ck_assert_int_eq(qf_ref_rope(NULL, &p, x, &y), QF_EINVAL);
    p.rotary_dim = 0, p.theta = -1;
    ck_assert_int_eq(qf_ref_rope(NULL, &p, x, &y), QF_EINVAL);
}
END_TEST

START_TEST(test_precisions)
{
    qf_ref_rope_params p;
    double x[3 * 4 * 32];
    size_t i;
    qf_ref_opts a = qf_ref_opts_default(), b = qf_ref_opts_default();
    qf_ref_out ya, yb;
    qf_ref_rope_params_init(&p);
    p.tokens = 3, p.heads = 4, p.head_dim = 32, p.pos_offset = 4000;
    for (i = 0; i < 3 * 4 * 32; i++)
        x[i] = unif(qf_test_seed(), i, 2.0);
    a.prec_extra = 0;
    a.threads = 1;
    b.prec_extra = 181;
    ya = run(&a, &p, x);
    yb = run(&b, &p, x);
    for (i = 0; i < 3 * 4 * 32; i++)
        ck_assert_uint_eq(ya.code[i], yb.code[i]);
    qf_ref_out_free(&ya);
    qf_ref_out_free(&yb);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/rope");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_identity);
    tcase_add_test(tc, test_layouts);
    tcase_add_test(tc, test_random_oracle);
    tcase_add_test(tc, test_special);
    tcase_add_test(tc, test_precisions);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
