/* t-cpu.c: the built-in CPU kernels compute what they claim.
 *
 * GEMM kernels: bit for bit against an independent model of the claimed
 * arithmetic (float32 products and sums, each rounded once to nearest even;
 * the model forms each exact product or sum in binary64 and rounds it to
 * float32, which gives the correctly rounded result: a binary64 sum of two
 * floats rounded again to float32 is innocuous double rounding since
 * 53 >= 2 * 24 + 2, Figueroa 1995), and inside the error bound that
 * qf_bound.h derives from the claim, against the exact reference qf_gemm.
 * Softmax and RMSNorm: inside the qf_bound.h bound against the MPFR
 * references (qf_ref.h), plus special rows with exactly known results.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_kernel.h"
#include "qf_ref.h"
#include "qf_test.h"

static qf_registry *reg;

static const qf_kernel *kernel(const char *name)
{
    const qf_kernel *k = qf_registry_find(reg, name);
    ck_assert_msg(k != NULL, "kernel %s not registered", name);
    return k;
}

/* Uniform in [-1, 1) times 2^e, e in [-4, 4]: a float32 value. */
static float draw(uint64_t seed, uint64_t i)
{
    uint64_t w = qf_rng_u64(seed, i);
    double u = (double)(w >> 11) * 0x1p-53 * 2 - 1;
    int e = (int)((w & 0xf) % 9) - 4;
    return (float)ldexp(u, e);
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void tensor3(qf_tensor *t, qf_format_id f, int64_t b, int64_t r, int64_t c, void *data)
{
    int64_t shape[3] = {b, r, c};
    ck_assert_int_eq(qf_tensor_init(t, f, 3, shape), QF_OK);
    t->data = data;
}

static void tensor2(qf_tensor *t, qf_format_id f, int64_t r, int64_t c, void *data)
{
    int64_t shape[2] = {r, c};
    ck_assert_int_eq(qf_tensor_init(t, f, 2, shape), QF_OK);
    t->data = data;
}

static qf_status call(const qf_kernel *k, const qf_op_desc *op, const qf_tensor *in, qf_tensor *out,
                      char *msg, size_t msg_size)
{
    qf_kernel_call c;
    qf_status s;
    memset(&c, 0, sizeof c);
    c.abi_version = QF_KERNEL_ABI_VERSION;
    c.kernel = k;
    c.dtype = &k->dtypes[0];
    c.op = op;
    c.in = in;
    c.out = out;
    c.threads = 1;
    c.msg = msg;
    c.msg_size = msg_size;
    msg[0] = '\0';
    s = qf_kernel_check(k, op, c.dtype, msg, msg_size);
    if (s != QF_OK)
        return s;
    return k->run(k->user, &c);
}

/* ---- GEMM ---------------------------------------------------------------- */

/* round to float32 once, from an exact or innocuously double-rounded value */
static float r32(double x)
{
    return (float)x;
}

typedef struct gemm_case {
    int bf16;
    int64_t batch, m, n, k;
    int trans_a, trans_b;
    double alpha, beta;
    int pad; /* extra elements per row of a (a leading dimension > cols) */
} gemm_case;

/* Runs one case: kernel vs model (bitwise) and vs exact + bound. */
static void gemm_check(const gemm_case *gc, uint64_t seed)
{
    const qf_kernel *k = kernel(gc->bf16 ? "gemm.cpu.bf16_f32acc" : "gemm.cpu.naive.f32");
    const qf_format *fin = qf_format_get(gc->bf16 ? QF_BFLOAT16 : QF_FLOAT32);
    int64_t B = gc->batch, M = gc->m, N = gc->n, K = gc->k;
    int64_t ar = gc->trans_a ? K : M, ac = gc->trans_a ? M : K, lda = ac + gc->pad;
    int64_t br = gc->trans_b ? N : K, bc = gc->trans_b ? K : N;
    size_t na = (size_t)(B * ar * lda), nb = (size_t)(B * br * bc), nc = (size_t)(B * M * N);
    double *a = calloc(na, sizeof *a), *b = calloc(nb, sizeof *b), *c = calloc(nc, sizeof *c);
    double *exact = calloc(nc, sizeof *exact), *dabs = calloc(nc, sizeof *dabs),
           *bound = calloc(nc, sizeof *bound);
    uint32_t *a32 = calloc(na, 4), *b32 = calloc(nb, 4), *c32 = calloc(nc, 4), *d32 = calloc(nc, 4);
    uint16_t *a16 = calloc(na, 2), *b16 = calloc(nb, 2), *c16 = calloc(nc, 2), *d16 = calloc(nc, 2);
    qf_tensor in[3], out[1];
    qf_op_desc op;
    char msg[256];
    size_t i;
    int64_t p, r, j, l;
    int epi = (gc->alpha != 1) + 2 * (gc->beta != 0);

    /* Inputs: values of the input format, as codes and as doubles. */
    for (i = 0; i < na; i++) {
        uint64_t code = qf_format_encode(fin, draw(seed, i), QF_ROUND_RNE, 0, 0, 0);
        a[i] = qf_format_decode(fin, code);
        a32[i] = bits_of((float)a[i]);
        a16[i] = (uint16_t)code;
    }
    for (i = 0; i < nb; i++) {
        uint64_t code = qf_format_encode(fin, draw(seed + 1, i), QF_ROUND_RNE, 0, 0, 0);
        b[i] = qf_format_decode(fin, code);
        b32[i] = bits_of((float)b[i]);
        b16[i] = (uint16_t)code;
    }
    for (i = 0; i < nc; i++) {
        uint64_t code = qf_format_encode(fin, draw(seed + 2, i), QF_ROUND_RNE, 0, 0, 0);
        c[i] = qf_format_decode(fin, code);
        c32[i] = bits_of((float)c[i]);
        c16[i] = (uint16_t)code;
    }
    memset(&op, 0, sizeof op);
    op.op = QF_OP_GEMM;
    op.u.gemm.m = (size_t)M;
    op.u.gemm.n = (size_t)N;
    op.u.gemm.k = (size_t)K;
    op.u.gemm.batch = (size_t)B;
    op.u.gemm.trans_a = gc->trans_a;
    op.u.gemm.trans_b = gc->trans_b;
    op.u.gemm.alpha = gc->alpha;
    op.u.gemm.beta = gc->beta;
    tensor3(&in[0], fin->id, B, ar, ac, gc->bf16 ? (void *)a16 : (void *)a32);
    in[0].stride[1] = lda;
    in[0].stride[0] = ar * lda;
    tensor3(&in[1], fin->id, B, br, bc, gc->bf16 ? (void *)b16 : (void *)b32);
    tensor3(&in[2], fin->id, B, M, N, gc->bf16 ? (void *)c16 : (void *)c32);
    if (gc->beta == 0)
        in[2].data = NULL;
    tensor3(&out[0], fin->id, B, M, N, gc->bf16 ? (void *)d16 : (void *)d32);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s: %s", k->name, msg);

    /* The exact result and sum |a||b| (qf_dot.h), and the claimed bound. */
    {
        qf_gemm_desc gd = qf_gemm_desc_default();
        qf_bound_coef coef;
        gd.trans_a = gc->trans_a ? QF_TRANS : QF_NO_TRANS;
        gd.trans_b = gc->trans_b ? QF_TRANS : QF_NO_TRANS;
        gd.m = (size_t)M;
        gd.n = (size_t)N;
        gd.k = (size_t)K;
        gd.alpha = gc->alpha;
        gd.beta = gc->beta;
        gd.a = a;
        gd.lda = (size_t)lda;
        gd.b = b;
        gd.ldb = (size_t)bc;
        gd.c = c;
        gd.ldc = (size_t)N;
        gd.batch = (size_t)B;
        gd.stride_a = (ptrdiff_t)(ar * lda);
        gd.stride_b = (ptrdiff_t)(br * bc);
        gd.stride_c = (ptrdiff_t)(M * N);
        gd.ldd = (size_t)N;
        gd.stride_d = (ptrdiff_t)(M * N);
        gd.d_value = exact;
        gd.d_abs = dabs;
        gd.threads = 1;
        ck_assert_int_eq(qf_gemm(&gd), QF_OK);
        ck_assert_int_eq(qf_bound_gemm_coef(&k->dtypes[0].arith, (size_t)K, epi, fin, 0, &coef), QF_OK);
        qf_bound_apply(&coef, nc, dabs, exact, bound);
    }

    for (p = 0; p < B; p++)
        for (r = 0; r < M; r++)
            for (j = 0; j < N; j++) {
                size_t o = (size_t)(p * M * N + r * N + j);
                float acc = 0.0f;
                double got, want;
                for (l = 0; l < K; l++) {
                    double x = a[p * ar * lda + (gc->trans_a ? l * lda + r : r * lda + l)];
                    double y = b[p * br * bc + (gc->trans_b ? j * bc + l : l * bc + j)];
                    acc = r32((double)acc + (double)r32(x * y));
                }
                if (gc->alpha != 1)
                    acc = r32(gc->alpha * (double)acc);
                if (gc->beta != 0)
                    acc = r32((double)acc + (double)r32(gc->beta * c[o]));
                if (gc->bf16) {
                    uint64_t want_code = qf_format_encode(fin, acc, QF_ROUND_RNE, 0, 0, 0);
                    ck_assert_msg(d16[o] == want_code,
                                  "%s seed %llu case b%lld m%lld n%lld k%lld ta%d tb%d alpha %g beta %g: "
                                  "d[%lld][%lld][%lld] = 0x%04x, model 0x%04llx",
                                  k->name, (unsigned long long)seed, (long long)B, (long long)M, (long long)N,
                                  (long long)K, gc->trans_a, gc->trans_b, gc->alpha, gc->beta, (long long)p,
                                  (long long)r, (long long)j, d16[o], (unsigned long long)want_code);
                    got = qf_format_decode(fin, d16[o]);
                } else {
                    ck_assert_msg(d32[o] == bits_of(acc),
                                  "%s seed %llu case b%lld m%lld n%lld k%lld ta%d tb%d alpha %g beta %g: "
                                  "d[%lld][%lld][%lld] = %a, model %a",
                                  k->name, (unsigned long long)seed, (long long)B, (long long)M, (long long)N,
                                  (long long)K, gc->trans_a, gc->trans_b, gc->alpha, gc->beta, (long long)p,
                                  (long long)r, (long long)j, (double)f32_of(d32[o]), (double)acc);
                    got = f32_of(d32[o]);
                }
                want = exact[o];
                ck_assert_msg(fabs(got - want) <= bound[o],
                              "%s seed %llu: |%a - %a| = %g above the claimed bound %g (k %lld)", k->name,
                              (unsigned long long)seed, got, want, fabs(got - want), bound[o], (long long)K);
            }
    free(a), free(b), free(c), free(exact), free(dabs), free(bound);
    free(a32), free(b32), free(c32), free(d32), free(a16), free(b16), free(c16), free(d16);
}

START_TEST(test_gemm_random)
{
    uint64_t seed = qf_test_seed();
    long it, iters = qf_test_iters(40);
    static const double alphas[] = {1, 1, 0.5, -3};
    static const double betas[] = {0, 0, 1, 0.25};
    for (it = 0; it < iters; it++) {
        uint64_t w = qf_rng_u64(seed ^ 0x9e3779b97f4a7c15ull, (uint64_t)it);
        gemm_case gc;
        gc.bf16 = (int)(it & 1);
        gc.batch = 1 + (int64_t)(w % 3);
        gc.m = 1 + (int64_t)((w >> 4) % 9);
        gc.n = 1 + (int64_t)((w >> 10) % 9);
        gc.k = 1 + (int64_t)((w >> 16) % 150);
        gc.trans_a = (int)((w >> 24) & 1);
        gc.trans_b = (int)((w >> 25) & 1);
        gc.alpha = alphas[(w >> 26) & 3];
        gc.beta = betas[(w >> 28) & 3];
        gc.pad = (int)((w >> 30) % 3);
        gemm_check(&gc, seed + (uint64_t)it * 16);
    }
}
END_TEST

START_TEST(test_gemm_long_k)
{
    /* Long K: the sequential float32 sum drifts; still bitwise the model
     * and inside gamma_K. */
    gemm_case gc = {0, 1, 2, 3, 4096, 0, 1, 1, 0, 0};
    gemm_check(&gc, qf_test_seed() + 7);
    gc.bf16 = 1;
    gemm_check(&gc, qf_test_seed() + 8);
}
END_TEST

START_TEST(test_gemm_grouped_and_specials)
{
    const qf_kernel *k = kernel("gemm.cpu.naive.f32");
    size_t gm[3] = {2, 0, 3};
    float a[5][4], b[3][4][2], d[5][2];
    qf_tensor in[3], out[1];
    qf_op_desc op;
    char msg[256];
    int g, i, j, l, row = 0;
    for (i = 0; i < 5; i++)
        for (l = 0; l < 4; l++)
            a[i][l] = draw(11, (uint64_t)(i * 4 + l));
    for (g = 0; g < 3; g++)
        for (l = 0; l < 4; l++)
            for (j = 0; j < 2; j++)
                b[g][l][j] = draw(12, (uint64_t)(g * 8 + l * 2 + j));
    memset(&op, 0, sizeof op);
    op.op = QF_OP_GEMM;
    op.u.gemm.n = 2;
    op.u.gemm.k = 4;
    op.u.gemm.groups = 3;
    op.u.gemm.group_m = gm;
    op.u.gemm.alpha = 1;
    tensor2(&in[0], QF_FLOAT32, 5, 4, a);
    tensor3(&in[1], QF_FLOAT32, 3, 4, 2, b);
    tensor2(&in[2], QF_FLOAT32, 5, 2, NULL);
    in[2].data = NULL;
    tensor2(&out[0], QF_FLOAT32, 5, 2, d);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    for (g = 0; g < 3; g++)
        for (i = 0; i < (int)gm[g]; i++, row++)
            for (j = 0; j < 2; j++) {
                float acc = 0;
                for (l = 0; l < 4; l++)
                    acc = r32((double)acc + (double)r32((double)a[row][l] * b[g][l][j]));
                ck_assert_msg(bits_of(d[row][j]) == bits_of(acc), "grouped d[%d][%d] = %a, model %a", row, j,
                              (double)d[row][j], (double)acc);
            }

    /* A NaN in a row of a: NaN in that row of d only. */
    op.u.gemm.groups = 0;
    op.u.gemm.group_m = NULL;
    op.u.gemm.m = 5;
    tensor2(&in[1], QF_FLOAT32, 4, 2, b[0]);
    a[1][2] = NAN;
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    ck_assert(isnan(d[1][0]) && isnan(d[1][1]));
    ck_assert(!isnan(d[0][0]) && !isnan(d[2][1]));

    /* Claims the kernel declines, with a reason. */
    op.u.gemm.alpha = 0.1;
    ck_assert_int_eq(call(k, &op, in, out, msg, sizeof msg), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(msg, "float32") != NULL, "%s", msg);
    op.u.gemm.alpha = 1;
    /* Wrong tensor format: the run function refuses, with a message. */
    in[0].format = QF_BFLOAT16;
    ck_assert_int_ne(call(k, &op, in, out, msg, sizeof msg), QF_OK);
    ck_assert_msg(strstr(msg, "tensor a") != NULL, "%s", msg);
    in[0].format = QF_FLOAT32;
    /* Shape mismatch. */
    op.u.gemm.k = 3;
    ck_assert_int_eq(call(k, &op, in, out, msg, sizeof msg), QF_EINVAL);
    ck_assert_msg(strstr(msg, "shape") != NULL, "%s", msg);
}
END_TEST

START_TEST(test_bf16_rounding)
{
    /* The bf16 output rounding on ties and overflow: 1 x (1 + 2^-8) is a tie
     * between 1 and 1 + 2^-7 in bfloat16: nearest even gives 1; 3 * 2^-9
     * above gives 1 + 2^-7; float32 max overflows to +inf. */
    const qf_kernel *k = kernel("gemm.cpu.bf16_f32acc");
    const qf_format *bf = qf_format_get(QF_BFLOAT16);
    uint16_t a[2], b[2], d[1];
    qf_tensor in[3], out[1];
    qf_op_desc op;
    char msg[256];
    memset(&op, 0, sizeof op);
    op.op = QF_OP_GEMM;
    op.u.gemm.m = 1;
    op.u.gemm.n = 1;
    op.u.gemm.k = 2;
    op.u.gemm.alpha = 1;
    tensor2(&in[0], QF_BFLOAT16, 1, 2, a);
    tensor2(&in[1], QF_BFLOAT16, 2, 1, b);
    tensor2(&in[2], QF_BFLOAT16, 1, 1, NULL);
    tensor2(&out[0], QF_BFLOAT16, 1, 1, d);
    a[0] = (uint16_t)qf_format_encode(bf, 1.0, QF_ROUND_RNE, 0, 0, 0);
    a[1] = (uint16_t)qf_format_encode(bf, 0x1p-8, QF_ROUND_RNE, 0, 0, 0);
    b[0] = b[1] = (uint16_t)qf_format_encode(bf, 1.0, QF_ROUND_RNE, 0, 0, 0);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    ck_assert_double_eq(qf_format_decode(bf, d[0]), 1.0);
    a[1] = (uint16_t)qf_format_encode(bf, 0x1.8p-8, QF_ROUND_RNE, 0, 0, 0);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    ck_assert_double_eq(qf_format_decode(bf, d[0]), 1 + 0x1p-7);
    a[0] = a[1] = (uint16_t)qf_format_encode(bf, 0x1.fep127, QF_ROUND_RNE, 0, 0, 0);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    ck_assert(isinf(qf_format_decode(bf, d[0])));
}
END_TEST

/* ---- Softmax and RMSNorm ------------------------------------------------------ */

START_TEST(test_softmax)
{
    const qf_kernel *k = kernel("softmax.cpu.f32");
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    static const int64_t colss[] = {1, 2, 7, 33, 100};
    static const double scales[] = {1, 0.125, 0.3};
    uint64_t seed = qf_test_seed() + 100;
    size_t ci, si, nc = sizeof colss / sizeof colss[0];
    /* softmax, then log_softmax (docs/bounds.md "Log-softmax") */
    for (ci = 0; ci < 2 * nc; ci++)
        for (si = 0; si < 3; si++) {
            int64_t rows = 3, cols = colss[ci % nc], r, j;
            int lg = ci >= nc;
            size_t n = (size_t)(rows * cols);
            float *x = malloc(n * 4), *y = malloc(n * 4);
            double *xd = malloc(n * 8), *bound = malloc(n * 8);
            qf_ref_out ref;
            qf_tensor in[1], out[1];
            qf_op_desc op;
            char msg[256];
            for (j = 0; j < (int64_t)n; j++) {
                x[j] = draw(seed + ci * 8 + si, (uint64_t)j) * 4;
                xd[j] = x[j];
            }
            memset(&op, 0, sizeof op);
            op.op = QF_OP_SOFTMAX;
            op.u.softmax.rows = (size_t)rows;
            op.u.softmax.cols = (size_t)cols;
            op.u.softmax.scale = scales[si];
            op.u.softmax.log = lg;
            tensor2(&in[0], QF_FLOAT32, rows, cols, x);
            tensor2(&out[0], QF_FLOAT32, rows, cols, y);
            ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
            ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
            ck_assert_int_eq((lg ? qf_ref_log_softmax : qf_ref_softmax)(NULL, xd, (size_t)rows, (size_t)cols,
                                                                        scales[si], &ref),
                             QF_OK);
            for (r = 0; r < rows; r++) {
                ck_assert_int_eq((lg ? qf_bound_log_softmax : qf_bound_softmax)(
                                     &k->dtypes[0].arith, f32, (size_t)cols, xd + r * cols, scales[si],
                                     ref.value + r * cols, bound + r * cols),
                                 QF_OK);
                for (j = 0; j < cols; j++) {
                    size_t o = (size_t)(r * cols + j);
                    ck_assert_msg(fabs((double)y[o] - ref.value[o]) <= bound[o],
                                  "%s cols %lld scale %g row %lld col %lld: %a vs exact %a, bound %g",
                                  lg ? "log_softmax" : "softmax", (long long)cols, scales[si], (long long)r,
                                  (long long)j, (double)y[o], ref.value[o], bound[o]);
                }
            }
            qf_ref_out_free(&ref);
            free(x), free(y), free(xd), free(bound);
        }
}
END_TEST

START_TEST(test_softmax_specials)
{
    const qf_kernel *k = kernel("softmax.cpu.f32");
    float x[3][4] = {
        {5, 5, 5, 5}, {1, -INFINITY, 1, -INFINITY}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY}};
    float y[3][4];
    qf_tensor in[1], out[1];
    qf_op_desc op;
    char msg[256];
    int j;
    memset(&op, 0, sizeof op);
    op.op = QF_OP_SOFTMAX;
    op.u.softmax.rows = 3;
    op.u.softmax.cols = 4;
    op.u.softmax.scale = 1;
    tensor2(&in[0], QF_FLOAT32, 3, 4, x);
    tensor2(&out[0], QF_FLOAT32, 3, 4, y);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    for (j = 0; j < 4; j++) {
        ck_assert_float_eq(y[0][j], 0.25f);
        ck_assert_float_eq(y[1][j], (j & 1) ? 0.0f : 0.5f);
        ck_assert(isnan(y[2][j])); /* the reference's UNDEFINED row */
    }
    /* log_softmax: -log 4; -log 2 and -inf exactly at the masked entries;
     * NaN for the row of -inf only */
    op.u.softmax.log = 1;
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    for (j = 0; j < 4; j++) {
        ck_assert_float_eq(y[0][j], -logf(4.0f));
        ck_assert_float_eq(y[1][j], (j & 1) ? -INFINITY : -logf(2.0f));
        ck_assert(isnan(y[2][j]));
    }
}
END_TEST

START_TEST(test_rmsnorm)
{
    const qf_kernel *k = kernel("rmsnorm.cpu.f32");
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    static const int64_t colss[] = {1, 5, 64, 257};
    uint64_t seed = qf_test_seed() + 200;
    size_t ci;
    int wb;
    for (ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (wb = 0; wb < 3; wb++) {
            int64_t rows = 4, cols = colss[ci], r, j;
            size_t n = (size_t)(rows * cols);
            float *x = malloc(n * 4), *y = malloc(n * 4), *w = malloc((size_t)cols * 4),
                  *b = malloc((size_t)cols * 4);
            double *xd = malloc(n * 8), *wd = malloc((size_t)cols * 8), *bd = malloc((size_t)cols * 8);
            double *bound = malloc(n * 8);
            qf_ref_out ref;
            qf_ref_norm_params np;
            qf_tensor in[3], out[1];
            int64_t vshape[1] = {cols};
            qf_op_desc op;
            char msg[256];
            for (j = 0; j < (int64_t)n; j++) {
                x[j] = draw(seed + ci * 4 + (uint64_t)wb, (uint64_t)j);
                xd[j] = x[j];
            }
            for (j = 0; j < cols; j++) {
                w[j] = 1 + draw(seed + 50, (uint64_t)j) / 64;
                b[j] = draw(seed + 51, (uint64_t)j) / 64;
                wd[j] = w[j];
                bd[j] = b[j];
            }
            memset(&op, 0, sizeof op);
            op.op = QF_OP_RMSNORM;
            op.u.norm.rows = (size_t)rows;
            op.u.norm.cols = (size_t)cols;
            op.u.norm.eps = 1e-6;
            tensor2(&in[0], QF_FLOAT32, rows, cols, x);
            ck_assert_int_eq(qf_tensor_init(&in[1], QF_FLOAT32, 1, vshape), QF_OK);
            ck_assert_int_eq(qf_tensor_init(&in[2], QF_FLOAT32, 1, vshape), QF_OK);
            in[1].data = wb >= 1 ? w : NULL;
            in[2].data = wb >= 2 ? b : NULL;
            tensor2(&out[0], QF_FLOAT32, rows, cols, y);
            ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
            memset(&np, 0, sizeof np);
            np.rows = (size_t)rows;
            np.cols = (size_t)cols;
            np.eps = 1e-6;
            np.weight = wb >= 1 ? wd : NULL;
            np.bias = wb >= 2 ? bd : NULL;
            ck_assert_int_eq(qf_ref_out_alloc(&ref, n), QF_OK);
            ck_assert_int_eq(qf_ref_rmsnorm(NULL, &np, xd, &ref), QF_OK);
            for (r = 0; r < rows; r++) {
                ck_assert_int_eq(qf_bound_norm(&k->dtypes[0].arith, f32, (size_t)cols, xd + r * cols,
                                               np.weight, np.bias, np.eps, 0, ref.value + r * cols,
                                               bound + r * cols),
                                 QF_OK);
                for (j = 0; j < cols; j++) {
                    size_t o = (size_t)(r * cols + j);
                    ck_assert_msg(fabs((double)y[o] - ref.value[o]) <= bound[o],
                                  "rmsnorm cols %lld wb %d row %lld col %lld: %a vs exact %a, bound %g",
                                  (long long)cols, wb, (long long)r, (long long)j, (double)y[o], ref.value[o],
                                  bound[o]);
                }
            }
            qf_ref_out_free(&ref);
            free(x), free(y), free(w), free(b), free(xd), free(wd), free(bd), free(bound);
        }
}
END_TEST

START_TEST(test_rmsnorm_specials)
{
    /* A constant row of 2s with eps = 0: q = 16, v = 4, r = 0.5: y = 1
     * exactly; a zero row with eps = 0 is 0/0: NaN (the reference's
     * UNDEFINED). */
    const qf_kernel *k = kernel("rmsnorm.cpu.f32");
    float x[2][4] = {{2, -2, 2, 2}, {0, 0, 0, 0}}, y[2][4];
    qf_tensor in[3], out[1];
    qf_op_desc op;
    char msg[256];
    int j;
    memset(&op, 0, sizeof op);
    memset(in, 0, sizeof in);
    op.op = QF_OP_RMSNORM;
    op.u.norm.rows = 2;
    op.u.norm.cols = 4;
    tensor2(&in[0], QF_FLOAT32, 2, 4, x);
    tensor2(&out[0], QF_FLOAT32, 2, 4, y);
    ck_assert_msg(call(k, &op, in, out, msg, sizeof msg) == QF_OK, "%s", msg);
    for (j = 0; j < 4; j++) {
        ck_assert_float_eq(y[0][j], j == 1 ? -1.0f : 1.0f);
        ck_assert(isnan(y[1][j]));
    }
    op.u.norm.weight_offset = 1;
    ck_assert_int_eq(call(k, &op, in, out, msg, sizeof msg), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(msg, "weight_offset") != NULL, "%s", msg);
}
END_TEST

START_TEST(test_claims_listed)
{
    /* Every built-in kernel: reference kind, cpu, deterministic, a valid
     * claim, and a name that starts with its op. */
    size_t i, n = 0;
    const qf_kernel *t = qf_kernels_cpu(&n);
    ck_assert_uint_ge(n, 4);
    for (i = 0; i < n; i++) {
        size_t j;
        /* reference, or the optimized candidates of gemm_fast.c (t-cpu2) */
        ck_assert(t[i].kind == QF_KERNEL_REFERENCE || t[i].kind == QF_KERNEL_OPTIMIZED);
        ck_assert(qf_kernel_arch_ok(&t[i], "cpu"));
        ck_assert(!qf_kernel_arch_ok(&t[i], "sm_90"));
        for (j = 0; j < t[i].n_dtypes; j++) {
            ck_assert_int_eq(qf_arith_claim_check(&t[i].dtypes[j].arith), QF_OK);
            ck_assert(t[i].dtypes[j].arith.deterministic);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/cpu");
    TCase *tc = tcase_create("cpu");
    int rc;
    if (qf_registry_create(&reg) != QF_OK || qf_registry_add_builtins(reg) != QF_OK) {
        fprintf(stderr, "cannot register the built-in kernels: %s\n", reg ? qf_registry_error(reg) : "");
        return 1;
    }
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gemm_random);
    tcase_add_test(tc, test_gemm_long_k);
    tcase_add_test(tc, test_gemm_grouped_and_specials);
    tcase_add_test(tc, test_bf16_rounding);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_softmax_specials);
    tcase_add_test(tc, test_rmsnorm);
    tcase_add_test(tc, test_rmsnorm_specials);
    tcase_add_test(tc, test_claims_listed);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    qf_registry_free(reg);
    return rc;
}
