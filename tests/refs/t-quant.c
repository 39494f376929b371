/* t-quant.c: qf_ref_quantize / qf_ref_dequantize and the block-format
 * wrappers qf_ref_block_quantize / qf_ref_block_dequantize.
 *
 * Oracle: x / scale at 2048 bits (exact products for dequantize) rounded
 * into the format; for blocks, the block module's own exact dequantization
 * and FP8's correctly rounded division.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>

#include "qf_format_mpfr.h"
#include "qf_ref.h"
#include "qf_test.h"

static double unif(uint64_t seed, uint64_t i, double a)
{
    return a * (2.0 * (double)(qf_rng_u64(seed, i) >> 11) * 0x1p-53 - 1.0);
}

START_TEST(test_plain)
{
    static const qf_format_id fmts[] = {QF_FLOAT8_E4M3FN, QF_FLOAT8_E5M2, QF_FLOAT4_E2M1FN,
                                        QF_INT8,          QF_BFLOAT16,    QF_FLOAT6_E3M2FN};
    uint64_t seed = qf_test_seed();
    size_t n = 300, i, f;
    double x[300], sc[10];
    mpfr_t t;
    mpfr_init2(t, 2048);
    for (i = 0; i < n; i++)
        x[i] = unif(seed, i, 20.0);
    x[0] = 448, x[1] = 0.5, x[2] = 1e6, x[3] = NAN, x[4] = -INFINITY, x[5] = 0;
    for (i = 0; i < 10; i++)
        sc[i] = i % 2 ? 0.75 + i : ldexp(1.0, (int)i - 3);
    for (f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        qf_ref_opts o = qf_ref_opts_default();
        qf_ref_out y, z;
        uint64_t codes[300];
        o.format = qf_format_get(fmts[f]);
        o.saturate = f % 2;
        ck_assert_int_eq(qf_ref_out_alloc(&y, n), QF_OK);
        ck_assert_int_eq(qf_ref_quantize(&o, x, n, sc, 30, &y), QF_OK);
        for (i = 0; i < n; i++) {
            double want;
            if (isnan(x[i])) {
                ck_assert_int_eq(y.status[i], QF_REF_UNDEFINED);
                continue;
            }
            mpfr_set_d(t, x[i], MPFR_RNDN);
            mpfr_div_d(t, t, sc[i / 30], MPFR_RNDN);
            want = qf_format_decode(o.format, qf_format_encode_mpfr(o.format, t, o.round, o.saturate, 32, 0));
            ck_assert_msg(want == y.value[i] || (isnan(want) && isnan(y.value[i])),
                          "quantize %s x %a / %a: got %a want %a", o.format->name, x[i], sc[i / 30],
                          y.value[i], want);
            ck_assert_int_ne(y.status[i], QF_REF_UNDECIDED);
            if (y.status[i] == QF_REF_EXACT)
                ck_assert(mpfr_cmp_d(t, y.value[i]) == 0);
            codes[i] = y.code[i];
        }
        ck_assert_uint_eq(y.n_undecided, 0);
        /* dequantize the codes back into float32 */
        o.format = qf_format_get(QF_FLOAT32);
        ck_assert_int_eq(qf_ref_out_alloc(&z, n), QF_OK);
        ck_assert_int_eq(qf_ref_dequantize(&o, qf_format_get(fmts[f]), codes, n, sc, 30, &z), QF_OK);
        for (i = 0; i < n; i++) {
            double v =
                qf_format_decode(qf_format_get(fmts[f]), codes[i]) * sc[i / 30]; /* exact in binary64 */
            if (isnan(v)) {
                ck_assert_int_eq(z.status[i], QF_REF_UNDEFINED);
                continue;
            }
            ck_assert(z.value[i] == (double)(float)v);
            ck_assert_int_eq(z.status[i], (double)(float)v == v ? QF_REF_EXACT : QF_REF_ROUNDED);
        }
        qf_ref_out_free(&y);
        qf_ref_out_free(&z);
    }
    mpfr_clear(t);
    {
        qf_ref_out y;
        double bad = 0;
        ck_assert_int_eq(qf_ref_out_alloc(&y, 1), QF_OK);
        ck_assert_int_eq(qf_ref_quantize(NULL, x, 1, &bad, 0, &y), QF_EINVAL);
        qf_ref_out_free(&y);
    }
}
END_TEST

static void check_block(const qf_ref_block_params *p, const double *x, size_t rows, size_t cols,
                        const char *tag)
{
    size_t n = rows * cols, ns = qf_ref_block_scale_count(p, rows, cols), i;
    qf_ref_out q, d;
    qf_ref_block_scales sc;
    uint8_t *codes = malloc(n);
    double *dq = malloc(n * sizeof *dq);
    sc.codes = malloc((ns + 1) * sizeof *sc.codes);
    sc.values = malloc((ns + 1) * sizeof *sc.values);
    sc.zero_points = malloc((ns + 1) * sizeof *sc.zero_points);
    ck_assert_int_eq(qf_ref_out_alloc(&q, n), QF_OK);
    ck_assert_int_eq(qf_ref_out_alloc(&d, n), QF_OK);
    ck_assert_int_eq(qf_ref_block_quantize(NULL, p, x, rows, cols, &q, &sc), QF_OK);
    for (i = 0; i < n; i++)
        codes[i] = (uint8_t)q.code[i];
    ck_assert_int_eq(qf_ref_block_dequantize(NULL, p, codes, &sc, rows, cols, &d), QF_OK);
    /* the block module's own dequantization */
    switch (p->family) {
    case QF_REF_BLOCK_MX: {
        uint8_t *s8 = malloc(ns);
        for (i = 0; i < ns; i++)
            s8[i] = (uint8_t)sc.codes[i];
        ck_assert_int_eq(qf_block_mx_dequantize(&p->mx, codes, s8, rows, cols, dq), QF_OK);
        free(s8);
        break;
    }
    case QF_REF_BLOCK_NVFP4: {
        uint8_t *s8 = malloc(ns);
        for (i = 0; i < ns; i++)
            s8[i] = (uint8_t)sc.codes[i];
        ck_assert_int_eq(
            qf_block_nvfp4_dequantize(&p->nvfp4, codes, s8, sc.tensor_scale_code, rows, cols, dq), QF_OK);
        free(s8);
        break;
    }
    case QF_REF_BLOCK_GROUP: {
        uint16_t *s16 = malloc(ns * sizeof *s16);
        for (i = 0; i < ns; i++)
            s16[i] = (uint16_t)sc.codes[i];
        ck_assert_int_eq(qf_block_group_dequantize(&p->group, codes, s16, sc.zero_points, rows, cols, dq),
                         QF_OK);
        free(s16);
        break;
    }
    case QF_REF_BLOCK_FP8: {
        uint32_t *s32 = malloc(ns * sizeof *s32);
        for (i = 0; i < ns; i++)
            s32[i] = (uint32_t)sc.codes[i];
        ck_assert_int_eq(qf_block_fp8_scale_dequantize(&p->fp8, codes, s32, rows, cols, dq), QF_OK);
        free(s32);
        break;
    }
    }
    for (i = 0; i < n; i++) {
        ck_assert_msg(q.value[i] == dq[i] || (isnan(q.value[i]) && isnan(dq[i])), "%s element %zu: %a vs %a",
                      tag, i, q.value[i], dq[i]);
        ck_assert(d.value[i] == q.value[i] || (isnan(d.value[i]) && isnan(q.value[i])));
        if (isnan(dq[i]))
            ck_assert_int_eq(q.status[i], QF_REF_UNDEFINED);
        else if (p->family != QF_REF_BLOCK_FP8)
            ck_assert_int_eq(q.status[i], dq[i] == x[i] ? QF_REF_EXACT : QF_REF_ROUNDED);
        ck_assert_int_ne(d.status[i], QF_REF_UNDECIDED);
    }
    qf_ref_out_free(&q);
    qf_ref_out_free(&d);
    free(codes), free(dq), free(sc.codes), free(sc.values), free(sc.zero_points);
}

START_TEST(test_blocks)
{
    size_t rows = 4, cols = 96, i;
    double *x = malloc(rows * cols * sizeof *x), *p2 = malloc(rows * cols * sizeof *p2);
    qf_ref_block_params p;
    for (i = 0; i < rows * cols; i++) {
        x[i] = unif(qf_test_seed(), i, 5.0);
        p2[i] = ldexp(i % 2 ? -1.0 : 1.0, (int)(i % 5)); /* representable in every element format: lossless */
    }
    x[40] = NAN; /* one NaN block */
    qf_ref_block_params_init(&p, QF_REF_BLOCK_MX);
    check_block(&p, x, rows, cols, "mx e4m3");
    p.mx.elem = QF_FLOAT4_E2M1FN;
    check_block(&p, x, rows, cols, "mx e2m1");
    qf_ref_block_params_init(&p, QF_REF_BLOCK_NVFP4);
    check_block(&p, x, rows, cols, "nvfp4");
    qf_ref_block_params_init(&p, QF_REF_BLOCK_GROUP);
    p.group.group = 32;
    check_block(&p, x, rows, cols, "group int4");
    p.group.symmetric = 0, p.group.elem = QF_UINT4, p.group.include_zero = 1;
    check_block(&p, x, rows, cols, "group uint4 asym");
    qf_ref_block_params_init(&p, QF_REF_BLOCK_FP8);
    check_block(&p, x, rows, cols, "fp8 div");
    p.fp8.dequant = QF_BLOCK_FP8_SCALE_INV, p.fp8.granularity = QF_BLOCK_FP8_ROW;
    check_block(&p, x, rows, cols, "fp8 scale_inv");
    /* powers of two quantize losslessly under MX */
    {
        qf_ref_out q;
        qf_ref_block_params_init(&p, QF_REF_BLOCK_MX);
        ck_assert_int_eq(qf_ref_out_alloc(&q, rows * cols), QF_OK);
        ck_assert_int_eq(qf_ref_block_quantize(NULL, &p, p2, rows, cols, &q, NULL), QF_OK);
        ck_assert_uint_eq(q.n_exact, rows * cols);
        qf_ref_out_free(&q);
    }
    free(x), free(p2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs/quant");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_blocks);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
