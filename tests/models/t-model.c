/* t-model.c: the block-FMA model (kernels/models/qf_model.h) on crafted
 * inputs that pin each preset's behaviour to the published findings:
 * truncation instead of rounding (Fasi, Higham, Mikaitis, Pranesh 2021),
 * no guard bits or sticky bit at alignment, the bits each generation
 * keeps (Khattak and Mikaitis; docs/numerics.md#matrix-units), block boundaries, the
 * 13 bits of Hopper FP8 and DeepSeek-V3's promotion, MI250X's float32
 * tree and flushing, MI300's "rounds down" and odd/even halves.
 * Every expected value is written as an exact binary64 constant and
 * derived in the comment next to it.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/qf_model.h"
#include "qf_dot.h"
#include "qf_kernel.h"
#include "qf_test.h"

static const qf_model_params *preset(const char *name)
{
    const qf_model_params *p = qf_model_preset(name);
    ck_assert_msg(p != NULL, "preset %s missing", name);
    return p;
}

/* The model's dot product of n terms (a, b exact input values). */
static double mdot(const qf_model_params *p, size_t n, const double *a, const double *b)
{
    double r = NAN;
    ck_assert_int_eq(qf_model_dot(p, n, a, 1, b, 1, &r), QF_OK);
    return r;
}

/* Check that every input value is representable in the preset's format,
 * so the crafted cases are real inputs. */
static void representable(const qf_model_params *p, size_t n, const double *a, const double *b)
{
    const qf_format *fa = qf_format_get(p->in_a), *fb = qf_format_get(p->in_b);
    size_t i;
    for (i = 0; i < n; i++) {
        ck_assert_msg(qf_format_decode(fa, qf_format_encode(fa, a[i], QF_ROUND_RNE, 0, 0, 0)) == a[i],
                      "%s: a[%zu] = %a not representable", p->name, i, a[i]);
        ck_assert_msg(qf_format_decode(fb, qf_format_encode(fb, b[i], QF_ROUND_RNE, 0, 0, 0)) == b[i],
                      "%s: b[%zu] = %a not representable", p->name, i, b[i]);
    }
}

#define EXPECT(P, N, A, B, WANT)                                                                             \
    do {                                                                                                     \
        double got_ = (representable(P, N, A, B), mdot(P, N, A, B));                                         \
        ck_assert_msg(got_ == (WANT), "%s: got %a, expected %a", (P)->name, got_, (double)(WANT));           \
    } while (0)

/* ---- NVIDIA: kept bits, truncation, no guard bits -------------------------- */

/* 1 + 3 * 2^-24 in one block of fp16 products (2^-12 * 2^-12 = 2^-24).
 * V100 keeps 23 fraction bits below 2^0: each 2^-24 is dropped -> 1.
 * A100 (24) and H100 (25) keep them: 1 + 3*2^-24, normalized to float32
 * toward zero -> 1 + 2^-23 (nearest would give 1 + 2^-22). */
START_TEST(kept_bits_fp16)
{
    double a[4] = {1, 0x1p-12, 0x1p-12, 0x1p-12}, b[4] = {1, 0x1p-12, 0x1p-12, 0x1p-12};
    qf_model_params rne;
    EXPECT(preset("v100.f16"), 4, a, b, 1.0);
    EXPECT(preset("a100.f16"), 4, a, b, 1 + 0x1p-23);
    EXPECT(preset("h100.f16"), 4, a, b, 1 + 0x1p-23);
    EXPECT(preset("b200.f16"), 4, a, b, 1 + 0x1p-23);
    /* The same arithmetic normalizing to nearest: the tie 1 + 1.5 ulp goes
     * to even, 1 + 2^-22. */
    rne = *preset("h100.f16");
    rne.acc_round = QF_ROUND_RNE;
    EXPECT(&rne, 4, a, b, 1 + 0x1p-22);
}
END_TEST

/* Normalization truncates: 3 * 1.75 + 3 * 2^-23 = 5.25 + 0.75 ulp(4..8)
 * (ulp 2^-21); all terms keep their bits at alignment (E = 0, 23 bits),
 * the sum has exponent 2, RTZ drops the 0.75 ulp -> 5.25; RNE gives
 * 5.25 + 2^-21. */
START_TEST(normalize_rtz)
{
    double a[4] = {1.75, 1.75, 1.75, 0x1.8p-11}, b[4] = {1, 1, 1, 0x1p-11};
    qf_model_params rne = *preset("v100.f16");
    EXPECT(preset("v100.f16"), 4, a, b, 5.25);
    rne.acc_round = QF_ROUND_RNE;
    EXPECT(&rne, 4, a, b, 5.25 + 0x1p-21);
}
END_TEST

/* No guard bits, no sticky: 1 - 2^-26 (fp16 2^-13 * -2^-13).  H100 keeps
 * 25 fraction bits: -2^-26 is -0.5 unit, truncated toward zero -> 0, the
 * result is 1.0, although the exact value rounded toward zero is
 * 1 - 2^-24.  MI300 rounds down at alignment (24 bits): -0.25 unit floors
 * to -1 unit -> 1 - 2^-24, exact in float32. */
START_TEST(no_guard_bits)
{
    double a[2] = {1, 0x1p-13}, b[2] = {1, -0x1p-13};
    const qf_format *f = qf_format_get(QF_FLOAT32);
    double exact_rtz = qf_format_decode(f, qf_format_encode(f, 1 - 0x1p-26, QF_ROUND_RTZ, 0, 0, 0));
    ck_assert(exact_rtz == 1 - 0x1p-24);
    EXPECT(preset("h100.f16"), 2, a, b, 1.0);
    EXPECT(preset("a100.f16"), 2, a, b, 1.0);
    EXPECT(preset("v100.f16"), 2, a, b, 1.0);
    EXPECT(preset("mi300.f16"), 2, a, b, 1 - 0x1p-24);
}
END_TEST

/* Block boundaries (V100, blocks of 4): four 2^-24 then 1 -> block 0 sums
 * the small terms exactly (2^-22), block 1 keeps it next to 1 -> 1 +
 * 2^-22.  In the other order block 0 aligns the small terms to 1 and
 * drops them, and block 1 drops the last one: 1. */
START_TEST(block_boundaries)
{
    double s = 0x1p-12;
    double a1[5] = {s, s, s, s, 1}, a2[5] = {1, s, s, s, s};
    const qf_model_params *v = preset("v100.f16");
    qf_model_params b8 = *v;
    EXPECT(v, 5, a1, a1, 1 + 0x1p-22);
    EXPECT(v, 5, a2, a2, 1.0);
    /* With blocks of 8 both orders are one block: every 2^-24 dropped. */
    b8.block = 8;
    EXPECT(&b8, 5, a1, a1, 1.0);
    /* A100 (blocks of 8, 24 bits): one block, 4 * 2^-24 kept: 1 + 2^-22. */
    EXPECT(preset("a100.f16"), 5, a2, a2, 1 + 0x1p-22);
}
END_TEST

/* bf16 and tf32 go through the same arithmetic: bf16 2^-12 squared. */
START_TEST(kept_bits_bf16_tf32)
{
    double a[4] = {1, 0x1p-12, 0x1p-12, 0x1p-12};
    EXPECT(preset("a100.bf16"), 4, a, a, 1 + 0x1p-23);
    EXPECT(preset("a100.tf32"), 4, a, a, 1 + 0x1p-23);
    EXPECT(preset("h100.bf16"), 4, a, a, 1 + 0x1p-23);
    EXPECT(preset("h100.tf32"), 4, a, a, 1 + 0x1p-23);
    EXPECT(preset("b200.tf32"), 4, a, a, 1 + 0x1p-23);
}
END_TEST

/* ---- Hopper FP8: 13 bits, promotion ---------------------------------------- */

/* 1 + 2^-13 + 2^-14 (e4m3: 2^-6 * 2^-7, 2^-7 * 2^-7; 2^-7 is an e4m3
 * subnormal): H100 keeps 13 fraction bits -> 1 + 2^-13; B200 keeps 25 ->
 * the exact value. */
START_TEST(fp8_13_bits)
{
    double a[3] = {1, 0x1p-6, 0x1p-7}, b[3] = {1, 0x1p-7, 0x1p-7};
    double e5a[3] = {1, 0x1p-6, 0x1p-7};
    EXPECT(preset("h100.e4m3"), 3, a, b, 1 + 0x1p-13);
    EXPECT(preset("l40s.e4m3"), 3, a, b, 1 + 0x1p-13);
    EXPECT(preset("b200.e4m3"), 3, a, b, 1 + 0x1p-13 + 0x1p-14);
    EXPECT(preset("h100.e5m2"), 3, e5a, b, 1 + 0x1p-13);
    EXPECT(preset("b200.e5m2"), 3, e5a, b, 1 + 0x1p-13 + 0x1p-14);
}
END_TEST

/* Swamping and promotion: 1, then 255 products 2^-14 (K = 256).
 * No promotion: the accumulator holds 1, each 2^-14 is below its 13 kept
 * bits -> 1 (exact: 1 + 255 * 2^-14).  Promotion every 128: segment 0
 * gives 1 (its 127 small terms are swamped by the 1 in their blocks),
 * segment 1 sums 128 * 2^-14 = 2^-7 exactly from zero, and float32 adds
 * it: 1 + 2^-7. */
START_TEST(fp8_promotion)
{
    double a[256], b[256];
    size_t i;
    for (i = 0; i < 256; i++) {
        a[i] = i ? 0x1p-7 : 1;
        b[i] = a[i];
    }
    EXPECT(preset("h100.e4m3"), 256, a, b, 1.0);
    EXPECT(preset("h100_promote128.e4m3"), 256, a, b, 1 + 0x1p-7);
    EXPECT(preset("b200.e4m3"), 256, a, b, 1 + 255 * 0x1p-14);
    /* Block boundary of 32: the first block (1 and 31 small terms) is
     * swamped, the next 32 small terms of block 1 too (aligned to the
     * accumulator's 1).  With the 1 last, blocks 0..6 sum 224 * 2^-14
     * exactly and the last block aligns 31 * 2^-14 + ... to 1: the
     * accumulator 224 * 2^-14 = 0x1.cp-7 keeps its bits (13 bits below
     * 2^0 reach 2^-13), the block's 31 terms 2^-14 are dropped. */
    for (i = 0; i < 256; i++)
        a[i] = b[i] = i == 255 ? 1 : 0x1p-7;
    EXPECT(preset("h100.e4m3"), 256, a, b, 1 + 224 * 0x1p-14);
}
END_TEST

/* ---- AMD ---------------------------------------------------------------- */

/* MI250X: float32 pairwise tree in groups of 4: 1 + 2^-24 -> 1 (tie to
 * even), 2^-24 + 2^-24 = 2^-23, 1 + 2^-23 exact.  A sequential float32
 * sum gives 1; the exact value 1 + 3 * 2^-24 rounds to 1 + 2^-22. */
START_TEST(mi250x_tree)
{
    double a[4] = {1, 0x1p-12, 0x1p-12, 0x1p-12};
    EXPECT(preset("mi250x.f16"), 4, a, a, 1 + 0x1p-23);
    EXPECT(preset("mi250x.bf16"), 4, a, a, 1 + 0x1p-23);
}
END_TEST

/* MI250X flushes subnormal inputs: fp16 2^-24 (the smallest subnormal)
 * times 1 gives 0; A100 keeps it. */
START_TEST(mi250x_flush)
{
    double a[1] = {0x1p-24}, b[1] = {1};
    double c[2] = {0x1p-14, 0x1p-14}, d[2] = {0x1p-14, 0x1p-100 * 0};
    EXPECT(preset("mi250x.f16"), 1, a, b, 0.0);
    EXPECT(preset("a100.f16"), 1, a, b, 0x1p-24);
    /* Normal fp16 inputs whose product is a normal float32: kept. */
    EXPECT(preset("mi250x.f16"), 2, c, d, 0x1p-28);
}
END_TEST

/* MI300 fp8: groups of 16 as the even half then the odd half.  Even
 * indices: 2^-20 * -1 each (e4m3fnuz 2^-10 squared) eight times; index 1:
 * 128 * 128 = 2^14.  Even step: -8 * 2^-20 = -2^-17 exactly.  Odd step:
 * -2^-17 aligned below 2^14 with 24 bits (unit 2^-10) rounds down to one
 * unit: 2^14 - 2^-10.  One block of 16 would floor each -2^-20 to a unit:
 * 2^14 - 8 * 2^-10. */
START_TEST(mi300_fp8_halves)
{
    double a[16], b[16];
    qf_model_params one = *preset("mi300.e4m3fnuz");
    size_t i;
    for (i = 0; i < 16; i++) {
        a[i] = i % 2 ? 0 : -0x1p-10;
        b[i] = i % 2 ? 0 : 0x1p-10;
    }
    a[1] = b[1] = 128;
    EXPECT(preset("mi300.e4m3fnuz"), 16, a, b, 0x1p14 - 0x1p-10);
    one.sum = QF_MODEL_SUM_BLOCK;
    EXPECT(&one, 16, a, b, 0x1p14 - 8 * 0x1p-10);
}
END_TEST

/* MI300 fp16: nearest-even final rounding.  1 + 2^-24 * 3 (kept: 24 bits)
 * normalized to float32 nearest even: the tie 1 + 1.5 ulp -> 1 + 2^-22. */
START_TEST(mi300_rne)
{
    double a[4] = {1, 0x1p-12, 0x1p-12, 0x1p-12};
    EXPECT(preset("mi300.f16"), 4, a, a, 1 + 0x1p-22);
    EXPECT(preset("mi300.bf16"), 4, a, a, 1 + 0x1p-22);
}
END_TEST

/* ---- Specials, parameters, the kernel ABI ---------------------------------- */

START_TEST(specials_and_params)
{
    double a[3] = {1, INFINITY, 2}, b[3] = {1, 1, 1}, r;
    qf_model_params bad = *preset("h100.f16");
    EXPECT(preset("h100.f16"), 3, a, b, INFINITY);
    a[2] = NAN;
    ck_assert(isnan(mdot(preset("h100.f16"), 3, a, b)));
    ck_assert(mdot(preset("h100.f16"), 0, a, b) == 0.0);
    bad.block = 0;
    ck_assert_int_eq(qf_model_check(&bad), QF_EINVAL);
    ck_assert_int_eq(qf_model_dot(&bad, 1, a, 1, b, 1, &r), QF_EINVAL);
    bad = *preset("h100_promote128.e4m3");
    bad.promote_interval = 100; /* not a multiple of 32 */
    ck_assert_int_eq(qf_model_check(&bad), QF_EINVAL);
    ck_assert_int_eq(qf_model_check(NULL), QF_EINVAL);
    ck_assert_ptr_null(qf_model_preset("no.such"));
}
END_TEST

/* The registered kernel computes what qf_model_gemm computes, through the
 * ABI (codes in, codes out), with a transposed b and beta != 0. */
START_TEST(kernel_abi)
{
    enum { M = 3, N = 4, KK = 70 };
    qf_registry *reg;
    const qf_kernel *k;
    const qf_format *f8 = qf_format_get(QF_FLOAT8_E4M3FN), *f32 = qf_format_get(QF_FLOAT32);
    uint8_t ca[M * KK], cb[N * KK];
    uint32_t cc[M * N], cd[M * N];
    double a[M * KK], bt[N * KK], b[KK * N], c[M * N], want[M * N];
    qf_tensor in[3], out[1];
    int64_t sa[2] = {M, KK}, sb[2] = {N, KK}, sc[2] = {M, N};
    qf_op_desc op;
    qf_kernel_call call;
    char msg[256];
    qf_model_gemm_desc d;
    size_t i, j;
    uint64_t seed = qf_test_seed();

    ck_assert_int_eq(qf_registry_create(&reg), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(reg), QF_OK);
    k = qf_registry_find(reg, "gemm.model.h100.e4m3");
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->kind, QF_KERNEL_MODEL);
    ck_assert_str_eq(k->simulates, "sm_90");
    ck_assert(qf_kernel_arch_ok(k, "sim:sm_90"));
    ck_assert(!qf_kernel_arch_ok(k, "sim:sm_80"));
    ck_assert_ptr_nonnull(qf_registry_find(reg, "gemm.model.h100_promote128.e4m3"));
    ck_assert_ptr_nonnull(qf_registry_find(reg, "gemm.model.mi300.e4m3fnuz"));
    ck_assert_uint_eq(qf_registry_match(reg, "gemm.model.*", NULL, 0), 23);

    for (i = 0; i < M * KK; i++) {
        ca[i] = (uint8_t)(qf_rng_u64(seed, i) & 0x7e); /* finite, positive e4m3 codes */
        a[i] = qf_format_decode(f8, ca[i]);
    }
    for (i = 0; i < N * KK; i++) {
        cb[i] = (uint8_t)(qf_rng_u64(seed + 1, i) & 0xfe);
        if ((cb[i] & 0x7f) == 0x7f)
            cb[i] = 0;
        bt[i] = qf_format_decode(f8, cb[i]);
    }
    for (i = 0; i < KK; i++)
        for (j = 0; j < N; j++)
            b[i * N + j] = bt[j * KK + i];
    for (i = 0; i < M * N; i++) {
        c[i] = (double)(float)(i * 0.25 - 1);
        cc[i] = (uint32_t)qf_format_encode(f32, c[i], QF_ROUND_RNE, 0, 0, 0);
    }
    memset(&op, 0, sizeof op);
    op.op = QF_OP_GEMM;
    op.u.gemm.m = M;
    op.u.gemm.n = N;
    op.u.gemm.k = KK;
    op.u.gemm.trans_b = 1;
    op.u.gemm.alpha = 2;
    op.u.gemm.beta = 0.5;
    ck_assert_int_eq(qf_tensor_init(&in[0], QF_FLOAT8_E4M3FN, 2, sa), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&in[1], QF_FLOAT8_E4M3FN, 2, sb), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&in[2], QF_FLOAT32, 2, sc), QF_OK);
    ck_assert_int_eq(qf_tensor_init(&out[0], QF_FLOAT32, 2, sc), QF_OK);
    in[0].data = ca;
    in[1].data = cb;
    in[2].data = cc;
    out[0].data = cd;
    memset(&call, 0, sizeof call);
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = k;
    call.dtype = qf_kernel_dtype(k, "e4m3_e4m3_f32");
    ck_assert_ptr_nonnull(call.dtype);
    call.op = &op;
    call.in = in;
    call.out = out;
    call.threads = 1;
    call.msg = msg;
    call.msg_size = sizeof msg;
    msg[0] = 0;
    ck_assert_int_eq(qf_kernel_check(k, &op, call.dtype, msg, sizeof msg), QF_OK);
    ck_assert_msg(k->run(k->user, &call) == QF_OK, "run: %s", msg);

    memset(&d, 0, sizeof d);
    d.m = M;
    d.n = N;
    d.k = KK;
    d.a = a;
    d.lda = KK;
    d.b = b;
    d.ldb = N;
    d.c = c;
    d.ldc = N;
    d.alpha = 2;
    d.beta = 0.5;
    d.d_value = want;
    d.ldd = N;
    ck_assert_int_eq(qf_model_gemm(preset("h100.e4m3"), &d), QF_OK);
    for (i = 0; i < M * N; i++)
        ck_assert_msg(qf_format_decode(f32, cd[i]) == want[i], "element %zu: kernel %a, model %a", i,
                      qf_format_decode(f32, cd[i]), want[i]);

    /* MI300 fp8 claims whole groups of 16 only. */
    k = qf_registry_find(reg, "gemm.model.mi300.e4m3fnuz");
    ck_assert_int_eq(qf_kernel_check(k, &op, &k->dtypes[0], msg, sizeof msg), QF_EUNSUPPORTED);
    qf_registry_free(reg);
}
END_TEST

int main(void)
{
    return qf_test_main("models/model", "crafted", 0, NULL, NULL,
                        QF_TESTS(kept_bits_fp16, normalize_rtz, no_guard_bits, block_boundaries,
                                 kept_bits_bf16_tf32, fp8_13_bits, fp8_promotion, mi250x_tree, mi250x_flush,
                                 mi300_fp8_halves, mi300_rne, specials_and_params, kernel_abi));
}
