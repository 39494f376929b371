/* t-l2norm.c: qf_bound_l2norm against the built-in kernels
 * (docs/bounds.md "L2 normalization").
 *   - l2norm.cpu.f32, called through its run function as the runner
 *     calls it, stays inside the bound derived from its own claim against
 *     the MPFR reference, for both of its tuples (float32; bfloat16 with
 *     float32 compute), on adversarial rows: random rows up to n = 2^17,
 *     constant rows, one huge element among ordinary ones, subnormal rows,
 *     rows whose norm is just below, at and above eps, zero rows; and the
 *     bound is not vacuous (some element uses more than 1% of it).
 *   - Detection: l2norm.bad.f16_sumsq (kernels/bad) under the same claim
 *     leaves the bound on random rows of 256.
 *   - Arguments: QF_EINVAL, QF_EUNSUPPORTED; a claimed max_ulp is not read. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad/qf_bad.h"
#include "qf_bound.h"
#include "qf_kernel.h"
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

static const qf_kernel *find(const qf_kernel *ks, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ks[i].name, name))
            return &ks[i];
    ck_abort_msg("no kernel %s", name);
    return NULL;
}

static const qf_kernel *good(void)
{
    size_t n;
    const qf_kernel *ks = qf_kernels_cpu(&n);
    return find(ks, n, "l2norm.cpu.f32");
}

static const qf_kernel *bad(void)
{
    size_t n;
    const qf_kernel *ks = qf_kernels_bad(&n);
    return find(ks, n, "l2norm.bad.f16_sumsq");
}

/* Kinds of adversarial rows. */
typedef enum rowkind {
    R_NORMAL,   /* N(0, 1) */
    R_CONST,    /* every entry 0.1 (not a float32 value: rounded) */
    R_HUGE_ONE, /* N(0, 1) with one entry 1e18 */
    R_SUBNORM,  /* entries of about 1e-41 (float32 subnormals) */
    R_NEAR_EPS, /* ||x|| about eps (1e-2), just below, at and above it */
    R_ZERO,     /* a zero row: 0 / eps */
    R_KINDS
} rowkind;

static double entry(rowkind kd, size_t n, size_t j, uint64_t seed)
{
    switch (kd) {
    case R_CONST: return 0.1;
    case R_HUGE_ONE: return j == n / 2 ? 1e18 : gauss(seed, j);
    case R_SUBNORM: return 1e-41 * gauss(seed, j);
    case R_NEAR_EPS: return 1e-2 / sqrt((double)n) * (0.9 + 0.2 * unif(seed, j));
    case R_ZERO: return 0;
    default: return gauss(seed, j);
    }
}

/* One row of n through kernel k with tuple ti: the worst error / bound
 * ratio; elements outside the bound are counted in *viol. */
static double row(const qf_kernel *k, int ti, rowkind kd, size_t n, double eps, uint64_t seed, size_t *viol)
{
    const qf_dtype_tuple *t = &k->dtypes[ti];
    const qf_format *f = qf_format_get(t->in[0]);
    int64_t shape[2] = {1, (int64_t)n};
    size_t eb = (size_t)f->storage_bits / 8, j;
    double *x = malloc(n * sizeof *x), *b = malloc(n * sizeof *b), worst = 0;
    unsigned char *xc = malloc(n * eb), *yc = malloc(n * eb);
    qf_tensor in, out;
    qf_op_desc op;
    qf_kernel_call call;
    qf_ref_out ref;
    qf_ref_opts o = qf_ref_opts_default();
    qf_ref_l2norm_params p = {1, n, eps};
    char msg[256] = "";
    ck_assert(x && b && xc && yc);
    /* The input quantized into the tuple's format, as the runner does. */
    for (j = 0; j < n; j++) {
        uint64_t c = qf_format_encode(f, entry(kd, n, j, seed), QF_ROUND_RNE, 0, 0, 0);
        x[j] = qf_format_decode(f, c);
        if (eb == 4)
            ((uint32_t *)xc)[j] = (uint32_t)c;
        else
            ((uint16_t *)xc)[j] = (uint16_t)c;
    }
    ck_assert_int_eq(qf_tensor_init(&in, f->id, 2, shape), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&out, f->id, 2, shape), QF_OK);
    in.data = xc;
    in.bytes = n * eb;
    out.data = yc;
    out.bytes = n * eb;
    memset(&op, 0, sizeof op);
    op.op = QF_OP_L2NORM;
    op.u.norm.rows = 1;
    op.u.norm.cols = n;
    op.u.norm.eps = eps;
    memset(&call, 0, sizeof call);
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = k;
    call.dtype = t;
    call.op = &op;
    call.in = &in;
    call.out = &out;
    call.threads = 1;
    call.msg = msg;
    call.msg_size = sizeof msg;
    ck_assert_msg(k->run(k->user, &call) == QF_OK, "%s: %s", k->name, msg);
    /* binary64 reference (the bound's exact) */
    ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
    o.threads = 1;
    ck_assert_int_eq(qf_ref_l2norm(&o, &p, x, &ref), QF_OK);
    ck_assert_int_eq(qf_bound_l2norm(&t->arith, f, n, x, eps, ref.value, b), QF_OK);
    for (j = 0; j < n; j++) {
        uint64_t c = eb == 4 ? ((uint32_t *)yc)[j] : ((uint16_t *)yc)[j];
        double got = qf_format_decode(f, c), e = fabs(got - ref.value[j]);
        ck_assert_msg(isfinite(got), "%s: non-finite output", k->name);
        if (!(e <= b[j])) {
            if (*viol == 0)
                fprintf(stderr, "  %s %s kind %d n %zu eps %g: element %zu error %a > bound %a\n", k->name,
                        t->name, (int)kd, n, eps, j, e, b[j]);
            (*viol)++;
        }
        if (b[j] > 0 && e / b[j] > worst)
            worst = e / b[j];
    }
    qf_ref_out_free(&ref);
    free(x), free(b), free(xc), free(yc);
    return worst;
}

START_TEST(test_inside)
{
    static const size_t ns[] = {1, 2, 7, 64, 1000, 4096, 131072};
    static const double epss[] = {1e-12, 1e-2};
    const qf_kernel *k = good();
    uint64_t seed = qf_test_seed();
    size_t in, ie, viol = 0, rows = 0;
    double util[2] = {0, 0};
    int kd, ti;
    ck_assert_int_eq(k->n_dtypes, 2);
    for (ti = 0; ti < 2; ti++)
        for (in = 0; in < sizeof ns / sizeof ns[0]; in++)
            for (ie = 0; ie < 2; ie++)
                for (kd = 0; kd < R_KINDS; kd++) {
                    double u =
                        row(k, ti, (rowkind)kd, ns[in], epss[ie], seed + 100 * in + 10 * ie + kd, &viol);
                    rows++;
                    if (u > util[ti])
                        util[ti] = u;
                }
    fprintf(stderr, "  l2norm.cpu.f32: %zu rows, max utilization f32 %.3f, bf16 %.3f\n", rows, util[0],
            util[1]);
    ck_assert_uint_eq(viol, 0);
    ck_assert(util[0] > 0.01 && util[1] > 0.01);
}
END_TEST

START_TEST(test_detects)
{
    size_t viol = 0, i;
    for (i = 0; i < 4; i++)
        row(bad(), 0, R_NORMAL, 256, 1e-12, qf_test_seed() + i, &viol);
    fprintf(stderr, "  l2norm.bad.f16_sumsq: %zu of 1024 elements outside the bound\n", viol);
    ck_assert_uint_gt(viol, 0);
}
END_TEST

START_TEST(test_args)
{
    qf_arith_claim c = qf_arith_claim_default();
    const qf_format *f = qf_format_get(QF_FLOAT32);
    double x[2] = {3, 4}, y[2] = {0.6, 0.8}, b[2];
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 0, x, 1e-12, y, b), QF_EINVAL);
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, -1, y, b), QF_EINVAL);
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, INFINITY, y, b), QF_EINVAL);
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, NULL, 1e-12, y, b), QF_EINVAL);
    /* Non-finite rows: the reference's specials decide. */
    x[1] = NAN;
    y[0] = y[1] = NAN;
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, 1e-12, y, b), QF_OK);
    ck_assert(isinf(b[0]) && isinf(b[1]));
    x[1] = 4, y[0] = 0.6, y[1] = 0.8;
    /* A claimed max_ulp does not replace the derivation (docs/claims.md
     * "max_ulp"). */
    {
        double b0[2];
        ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, 1e-12, y, b0), QF_OK);
        c.max_ulp = 2;
        ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, 1e-12, y, b), QF_OK);
        ck_assert(b[0] == b0[0] && b[1] == b0[1]);
    }
    c = qf_arith_claim_default();
    c.block_fma = 16;
    c.align_truncates = 1;
    ck_assert_int_eq(qf_bound_l2norm(&c, f, 2, x, 1e-12, y, b), QF_EUNSUPPORTED);
    /* A pairwise claim has a shorter chain: a smaller bound at large n. */
    {
        enum { N = 1024 };
        static double xs[N], ys[N], bs[N], bp[N];
        qf_arith_claim s = qf_arith_claim_default(), pw = s;
        size_t j;
        for (j = 0; j < N; j++)
            xs[j] = 1, ys[j] = 1.0 / 32;
        pw.sum_order = QF_SUM_PAIRWISE;
        ck_assert_int_eq(qf_bound_l2norm(&s, f, N, xs, 1e-12, ys, bs), QF_OK);
        ck_assert_int_eq(qf_bound_l2norm(&pw, f, N, xs, 1e-12, ys, bp), QF_OK);
        ck_assert(bp[0] < bs[0]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bounds/l2norm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_inside);
    tcase_add_test(tc, test_detects);
    tcase_add_test(tc, test_args);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
