/* t-scheme.c: qf_audit_scheme_parse (the --formats syntax of docs/audit.md),
 * qf_audit_apply and qf_audit_measure on values whose answers are known by
 * hand: exact casts, clipping, flushing to zero, the MSE clipping search
 * never losing to plain amax scaling. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qf_audit.h"
#include "qf_test.h"

START_TEST(test_parse)
{
    qf_audit_scheme s, *v = NULL;
    size_t n = 0;
    char err[256] = "";
    ck_assert_int_eq(qf_audit_scheme_parse("bf16", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.kind, QF_AUDIT_CAST);
    ck_assert_int_eq(s.cast, QF_BFLOAT16);
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:channel:mse", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.kind, QF_AUDIT_FP8);
    ck_assert_int_eq(s.fp8.granularity, QF_BLOCK_FP8_ROW);
    ck_assert_int_eq(s.mse, 1);
    ck_assert_int_eq(qf_audit_scheme_parse("e5m2:tensor", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.fp8.elem, QF_FLOAT8_E5M2);
    ck_assert_int_eq(s.fp8.granularity, QF_BLOCK_FP8_TENSOR);
    ck_assert_int_eq(qf_audit_scheme_parse("mxfp4:rule=rceil", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.kind, QF_AUDIT_MX);
    ck_assert_int_eq(s.mx.elem, QF_FLOAT4_E2M1FN);
    ck_assert_int_eq(s.mx.rule, QF_BLOCK_MX_RCEIL);
    ck_assert_uint_eq(s.mx.block, 32);
    ck_assert_int_eq(qf_audit_scheme_parse("nvfp4:scale=up", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.nvfp4.scale_round, QF_ROUND_UP);
    ck_assert_int_eq(qf_audit_scheme_parse("int4:g64:asym", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.kind, QF_AUDIT_INT);
    ck_assert_uint_eq(s.group.group, 64);
    ck_assert_int_eq(s.group.symmetric, 0);
    ck_assert_int_eq(qf_audit_scheme_parse("int8", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(s.group.elem, QF_INT8);
    ck_assert_int_eq(s.group.symmetric, 1);

    ck_assert_int_eq(qf_audit_scheme_parse("e9m9", &s, err, sizeof err), QF_EPARSE);
    ck_assert_ptr_nonnull(strstr(err, "'e9m9'"));
    ck_assert_int_eq(qf_audit_scheme_parse("mxfp4:rule=round", &s, err, sizeof err), QF_EPARSE);
    ck_assert_ptr_nonnull(strstr(err, "rceil"));
    ck_assert_int_eq(qf_audit_scheme_parse("bf16:channel", &s, err, sizeof err), QF_EPARSE);
    ck_assert_int_eq(qf_audit_scheme_parse("int4:g0", &s, err, sizeof err), QF_EPARSE);
    ck_assert_int_eq(qf_audit_scheme_parse_list("bf16,e4m3:tensor,nvfp4", &v, &n, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[2].label, "nvfp4");
    free(v);
    ck_assert_int_eq(qf_audit_scheme_parse_list("bf16,,", &v, &n, err, sizeof err), QF_OK);
    ck_assert_uint_eq(n, 1);
    free(v);
    ck_assert_int_eq(qf_audit_scheme_parse_list("bf16,nope", &v, &n, err, sizeof err), QF_EPARSE);
}
END_TEST

START_TEST(test_measure_by_hand)
{
    const double x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 5};
    qf_audit_metrics m;
    ck_assert_int_eq(qf_audit_measure(x, y, NULL, NULL, 1, 4, 2, &m), QF_OK);
    ck_assert_double_eq(m.sum_x2, 30);
    ck_assert_double_eq(m.sum_e2, 1);
    ck_assert_double_eq_tol(m.sqnr_db, 10 * log10(30.0), 1e-12);
    ck_assert_double_eq_tol(m.normwise, sqrt(1 / 30.0), 1e-15);
    ck_assert_double_eq(m.max_abs, 1);
    ck_assert_uint_eq(m.at_abs, 3);
    ck_assert_double_eq(m.max_rel, 0.25);
    ck_assert_double_eq(m.bias, 0.25);
    ck_assert_uint_eq(m.hist[0], 3);
    /* |e| / rms(x) = 1 / sqrt(7.5) = 0.365: bin [1e-1, 1) */
    ck_assert_uint_eq(m.hist[7], 1);
    ck_assert_uint_eq(m.n_worst_blocks, 1);
    ck_assert_uint_eq(m.worst_blocks[0].col, 2);
    ck_assert_uint_eq(m.n_worst_rows, 1);
}
END_TEST

START_TEST(test_cast)
{
    /* 448 is the e4m3fn max (docs/numerics.md#number-formats); 2^-12 is below half its smallest
     * subnormal 2^-9, so it flushes to zero; 1000 saturates. */
    const double x[4] = {1.5, 1000, 0x1p-12, -448};
    double y[4], lo[4], hi[4];
    qf_audit_scheme s;
    qf_audit_metrics m;
    char err[256];
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_audit_apply(&s, x, 1, 4, y, lo, hi), QF_OK);
    ck_assert_double_eq(y[0], 1.5);
    ck_assert_double_eq(y[1], 448);
    ck_assert_double_eq(y[2], 0);
    ck_assert_double_eq(hi[0], 448);
    ck_assert_int_eq(qf_audit_measure(x, y, lo, hi, 1, 4, 0, &m), QF_OK);
    ck_assert_uint_eq(m.n_clipped, 1);
    ck_assert_uint_eq(m.n_flushed, 1);
    ck_assert_double_eq(m.max_abs, 552);
    /* Without saturation 1000 overflows to NaN: SQNR -inf, counted. */
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:nosat", &s, err, sizeof err), QF_OK);
    ck_assert_int_eq(qf_audit_apply(&s, x, 1, 4, y, lo, hi), QF_OK);
    ck_assert(isnan(y[1]));
    ck_assert_int_eq(qf_audit_measure(x, y, lo, hi, 1, 4, 0, &m), QF_OK);
    ck_assert_uint_eq(m.n_nonfinite_y, 1);
    ck_assert(isinf(m.sqnr_db) && m.sqnr_db < 0);
}
END_TEST

static void fill(double *x, size_t n, uint64_t seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        /* sum of uniforms: roughly normal, with a heavy outlier per row */
        double u = 0;
        int k;
        for (k = 0; k < 4; k++)
            u += (double)(qf_rng_u64(seed, 4 * i + k) >> 11) * 0x1p-53;
        x[i] = u - 2;
        if (i % 97 == 5)
            x[i] *= 30;
    }
}

START_TEST(test_schemes_exact_and_ordered)
{
    enum { R = 16, C = 128 };
    static double x[R * C], y[R * C], lo[R * C], hi[R * C];
    const char *specs[] = {"bf16",  "e4m3:tensor", "e4m3:channel", "e4m3:channel:mse", "mxfp8",
                           "mxfp4", "nvfp4",       "int8:g32",     "int4:g32:asym",    "e5m2:tensor:mse"};
    double sqnr[10];
    size_t i, j;
    fill(x, R * C, qf_test_seed());
    for (i = 0; i < 10; i++) {
        qf_audit_scheme s;
        qf_audit_metrics m;
        char err[256];
        ck_assert_int_eq(qf_audit_scheme_parse(specs[i], &s, err, sizeof err), QF_OK);
        ck_assert_int_eq(qf_audit_apply(&s, x, R, C, y, lo, hi), QF_OK);
        ck_assert_int_eq(qf_audit_measure(x, y, lo, hi, R, C, qf_audit_block(&s), &m), QF_OK);
        sqnr[i] = m.sqnr_db;
        ck_assert_msg(isfinite(m.sqnr_db) && m.sqnr_db > 5, "%s: sqnr %g", specs[i], m.sqnr_db);
        for (j = 0; j < R * C; j++)
            ck_assert_msg(lo[j] <= hi[j], "%s: range at %zu", specs[i], j);
    }
    /* The MSE search includes the amax threshold, so it never loses. */
    ck_assert_msg(sqnr[3] >= sqnr[2], "mse %g < amax %g", sqnr[3], sqnr[2]);
    /* 8 significand bits beat 4, and 4-bit formats lose to 8-bit ones. */
    ck_assert(sqnr[0] > sqnr[1] && sqnr[4] > sqnr[5] && sqnr[7] > sqnr[8]);
    /* Every element of an exactly representable tensor comes back as is. */
    for (j = 0; j < R * C; j++)
        x[j] = (double)((int)j % 9 - 4) * 0.5;
    {
        qf_audit_scheme s;
        qf_audit_metrics m;
        char err[256];
        ck_assert_int_eq(qf_audit_scheme_parse("bf16", &s, err, sizeof err), QF_OK);
        ck_assert_int_eq(qf_audit_apply(&s, x, R, C, y, lo, hi), QF_OK);
        ck_assert_int_eq(qf_audit_measure(x, y, lo, hi, R, C, 32, &m), QF_OK);
        ck_assert(isinf(m.sqnr_db) && m.sqnr_db > 0);
        ck_assert_double_eq(m.max_abs, 0);
        ck_assert_uint_eq(m.hist[0], (size_t)R * C);
    }
}
END_TEST

START_TEST(test_json)
{
    const double x[2] = {1, 2}, y[2] = {1, 2};
    qf_audit_metrics m;
    json_t *j = NULL;
    ck_assert_int_eq(qf_audit_measure(x, y, NULL, NULL, 1, 2, 0, &m), QF_OK);
    ck_assert_int_eq(qf_audit_metrics_to_json(&m, &j), QF_OK);
    ck_assert_str_eq(json_string_value(json_object_get(j, "sqnr_db")), "Infinity");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "histogram")), QF_AUDIT_HIST);
    json_decref(j);
}
END_TEST

int main(void)
{
    return qf_test_main(
        "audit/scheme", "scheme", 0, NULL, NULL,
        QF_TESTS(test_parse, test_measure_by_hand, test_cast, test_schemes_exact_and_ordered, test_json));
}
