/* t-rope.c: qf_bound_rope (docs/bounds.md "RoPE").
 *   - A float32 RoPE computed the way rope.cpu.f32 does it (float32
 *     exponent, powf, reciprocal, angle, cosf / sinf, products and sums)
 *     stays inside the bound against the MPFR reference, for both layouts,
 *     partial rotary_dim, theta 10000, 500000 and a theta that is not a
 *     float32 number, positions from 0 to 100000 and one past 2^25 (not a
 *     float32 integer); the bound is not vacuous.
 *   - The same with the angle rounded to float16 leaves the bound (at
 *     positions 1 to 1000, where float16 still holds the angle).
 *   - The bound grows with the position (the float32 angle's error). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qf_bound.h"
#include "qf_ref.h"
#include "qf_test.h"

static double gauss(uint64_t seed, uint64_t i)
{
    double u1 = (double)(qf_rng_u64(seed, 2 * i) >> 11) * 0x1p-53 + 0x1p-54;
    double u2 = (double)(qf_rng_u64(seed, 2 * i + 1) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static void rope_f32(const double *x, size_t d, size_t rd, int half_layout, double theta, int64_t pos,
                     int f16_angle, double *y)
{
    const qf_format *f16 = qf_format_get(QF_FLOAT16);
    size_t h = rd / 2, i;
    float th = (float)theta;
    for (i = rd; i < d; i++)
        y[i] = x[i];
    for (i = 0; i < h; i++) {
        size_t ia = half_layout ? i : 2 * i, ib = half_layout ? i + h : 2 * i + 1;
        float e = (float)(2 * i) / (float)rd, inv = 1.0f / powf(th, e), ang = (float)pos * inv, c, s, p1, p2;
        if (f16_angle)
            ang = (float)qf_format_decode(f16, qf_format_encode(f16, ang, QF_ROUND_RNE, 0, 0, 0));
        c = cosf(ang);
        s = sinf(ang);
        p1 = (float)x[ia] * c;
        p2 = (float)x[ib] * s;
        y[ia] = p1 - p2;
        p1 = (float)x[ia] * s;
        p2 = (float)x[ib] * c;
        y[ib] = p1 + p2;
    }
}

/* One head at one position: returns the worst error / bound, counts
 * violations; *maxb: the largest bound. */
static double one(size_t d, size_t rd, int half_layout, double theta, int64_t pos, int f16, uint64_t s,
                  size_t *viol, double *maxb)
{
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    qf_arith_claim c = qf_arith_claim_default();
    double x[256], y[256], b[256], worst = 0;
    qf_ref_rope_params p;
    qf_ref_out ref;
    size_t i;
    ck_assert(d <= 256);
    for (i = 0; i < d; i++)
        x[i] = (float)gauss(s, i);
    qf_ref_rope_params_init(&p);
    p.tokens = 1;
    p.heads = 1;
    p.head_dim = d;
    p.rotary_dim = rd;
    p.layout = half_layout ? QF_REF_ROPE_HALF : QF_REF_ROPE_INTERLEAVED;
    p.theta = theta;
    p.positions = &pos;
    ck_assert_int_eq(qf_ref_out_alloc(&ref, d), QF_OK);
    ck_assert_int_eq(qf_ref_rope(NULL, &p, x, &ref), QF_OK);
    rope_f32(x, d, rd, half_layout, theta, pos, f16, y);
    ck_assert_int_eq(qf_bound_rope(&c, f32, d, rd, half_layout, theta, (double)pos, x, ref.value, b), QF_OK);
    for (i = 0; i < d; i++) {
        double e = fabs(y[i] - ref.value[i]);
        if (!(e <= b[i])) {
            if (!f16 && *viol < 5)
                fprintf(stderr, "  pos %lld theta %g elem %zu: got %.9g exact %.17g err %.3g > bound %.3g\n",
                        (long long)pos, theta, i, y[i], ref.value[i], e, b[i]);
            (*viol)++;
        }
        if (b[i] > 0 && e / b[i] > worst)
            worst = e / b[i];
        if (b[i] > *maxb)
            *maxb = b[i];
    }
    qf_ref_out_free(&ref);
    return worst;
}

static const int64_t POS[] = {0, 1, 7, 100, 1000, 4097, 100000, 33554433};
#define NPOS (sizeof POS / sizeof POS[0])

START_TEST(test_rope_inside)
{
    static const double thetas[] = {10000, 500000, 1000000.3};
    static const size_t dims[][2] = {{16, 16}, {64, 32}, {128, 128}};
    uint64_t seed = qf_test_seed();
    size_t viol = 0, it, id, ip, n = 0;
    double util = 0, maxb_pos[NPOS] = {0};
    long reps = qf_test_iters(2), r;
    int hl;
    for (it = 0; it < 3; it++)
        for (id = 0; id < 3; id++)
            for (ip = 0; ip < NPOS; ip++)
                for (hl = 0; hl < 2; hl++)
                    for (r = 0; r < reps; r++) {
                        double u =
                            one(dims[id][0], dims[id][1], hl, thetas[it], POS[ip], 0,
                                seed + 1000 * it + 100 * id + 10 * ip + (uint64_t)hl + 7919 * (uint64_t)r,
                                &viol, &maxb_pos[ip]);
                        n++;
                        if (u > util)
                            util = u;
                    }
    fprintf(stderr,
            "  rope: %zu rows, max utilization %.3f; largest bound at position 1: %.3g, 1000: %.3g, "
            "100000: %.3g\n",
            n, util, maxb_pos[1], maxb_pos[4], maxb_pos[6]);
    ck_assert_uint_eq(viol, 0);
    ck_assert(util > 0.05);
    /* The angle's error grows with the position, and the bound with it. */
    ck_assert(maxb_pos[6] > 100 * maxb_pos[1]);
}
END_TEST

START_TEST(test_rope_f16_angle_detected)
{
    uint64_t seed = qf_test_seed();
    size_t ip, viol, caught = 0;
    double maxb = 0;
    for (ip = 1; ip <= 4; ip++) {
        viol = 0;
        one(64, 64, 1, 10000, POS[ip], 1, seed + ip, &viol, &maxb);
        if (viol)
            caught++;
    }
    ck_assert_uint_eq(caught, 4);
}
END_TEST

int main(void)
{
    return qf_test_main("bounds/rope", "rope", 120, NULL, NULL,
                        QF_TESTS(test_rope_inside, test_rope_f16_angle_detected));
}
