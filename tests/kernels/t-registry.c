/* t-registry.c: the kernel registry (qf_kernel.h): op tables, tensors,
 * registration checks (duplicate names, ABI version, malformed records),
 * lookup by name and glob, claims checks (limits, supports, architecture).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_kernel.h"
#include "qf_test.h"

static qf_status dummy_run(void *ctx, const qf_kernel_call *call)
{
    (void)ctx;
    (void)call;
    return QF_OK;
}

static qf_dtype_tuple dummy_dtypes[2];

/* A minimal valid gemm kernel record. */
static qf_kernel dummy_kernel(const char *name)
{
    qf_kernel k;
    memset(&k, 0, sizeof k);
    memset(dummy_dtypes, 0, sizeof dummy_dtypes);
    dummy_dtypes[0].name = "f32";
    dummy_dtypes[0].in[0] = dummy_dtypes[0].in[1] = QF_FLOAT32;
    dummy_dtypes[0].out[0] = QF_FLOAT32;
    dummy_dtypes[0].arith = qf_arith_claim_default();
    dummy_dtypes[1] = dummy_dtypes[0];
    dummy_dtypes[1].name = "bf16";
    k.abi_version = QF_KERNEL_ABI_VERSION;
    k.struct_size = sizeof k;
    k.name = name;
    k.op = QF_OP_GEMM;
    k.kind = QF_KERNEL_OPTIMIZED;
    k.backend = "cpu";
    k.archs = "cpu";
    k.dtypes = dummy_dtypes;
    k.n_dtypes = 2;
    k.run = dummy_run;
    return k;
}

START_TEST(test_ops)
{
    int i;
    qf_op op;
    ck_assert_int_eq(QF_OP_COUNT, 10);
    for (i = 0; i < QF_OP_COUNT; i++) {
        const char *n = qf_op_name((qf_op)i);
        ck_assert_ptr_nonnull(n);
        ck_assert_int_eq(qf_op_lookup(n, &op), QF_OK);
        ck_assert_int_eq(op, i);
        ck_assert_int_ge(qf_op_slot_count((qf_op)i, 0), 1);
        ck_assert_int_ge(qf_op_slot_count((qf_op)i, 1), 1);
        ck_assert_int_le(qf_op_slot_count((qf_op)i, 0), QF_KERNEL_MAX_IN);
        ck_assert_int_le(qf_op_slot_count((qf_op)i, 1), QF_KERNEL_MAX_OUT);
        ck_assert_int_le(qf_op_dim_count((qf_op)i), QF_OP_MAX_DIMS);
        ck_assert_ptr_nonnull(qf_op_summary((qf_op)i));
    }
    ck_assert_int_eq(qf_op_lookup("gemv", &op), QF_EPARSE);
    ck_assert_ptr_null(qf_op_name(QF_OP_COUNT));
    ck_assert_str_eq(qf_op_slot_name(QF_OP_GEMM, 0, 2), "c");
    ck_assert_str_eq(qf_op_slot_name(QF_OP_ATTENTION, 1, 1), "lse");
    ck_assert_ptr_null(qf_op_slot_name(QF_OP_GEMM, 0, 3));
    ck_assert_str_eq(qf_op_dim_name(QF_OP_GEMM, 2), "K");
    ck_assert_ptr_null(qf_op_dim_name(QF_OP_SOFTMAX, 2));
    for (i = 0; i < QF_KERNEL_KIND_COUNT; i++) {
        qf_kernel_kind k;
        ck_assert_int_eq(qf_kernel_kind_lookup(qf_kernel_kind_name((qf_kernel_kind)i), &k), QF_OK);
        ck_assert_int_eq(k, i);
    }
    ck_assert_str_eq(qf_kernel_kind_name(QF_KERNEL_KNOWN_BAD), "known-bad");
    ck_assert_str_eq(qf_mask_kind_name(QF_MASK_CAUSAL_BOTTOM_RIGHT), "causal_bottom_right");
    ck_assert_str_eq(qf_scale_kind_name(QF_SCALE_BLOCK), "block");
}
END_TEST

START_TEST(test_op_dims)
{
    qf_op_desc d;
    int64_t dims[QF_OP_MAX_DIMS];
    size_t gm[3] = {5, 0, 7};
    memset(&d, 0, sizeof d);
    d.op = QF_OP_GEMM;
    d.u.gemm.m = 3;
    d.u.gemm.n = 4;
    d.u.gemm.k = 5;
    ck_assert_int_eq(qf_op_dims(&d, dims), 5);
    ck_assert_int_eq(dims[0], 3);
    ck_assert_int_eq(dims[2], 5);
    ck_assert_int_eq(dims[3], 1); /* batch 0 is 1 */
    d.u.gemm.groups = 3;
    d.u.gemm.group_m = gm;
    qf_op_dims(&d, dims);
    ck_assert_int_eq(dims[0], 12);
    ck_assert_int_eq(dims[4], 3);
    memset(&d, 0, sizeof d);
    d.op = QF_OP_ATTENTION;
    d.u.attention.head_dim = 64;
    ck_assert_int_eq(qf_op_dims(&d, dims), 7);
    ck_assert_int_eq(dims[6], 64); /* head_dim_v 0: head_dim */
    d.op = QF_OP_COUNT;
    ck_assert_int_eq(qf_op_dims(&d, dims), 0);
}
END_TEST

START_TEST(test_tensor)
{
    qf_tensor t;
    int64_t shape[3] = {2, 3, 5};
    ck_assert_int_eq(qf_tensor_init(&t, QF_BFLOAT16, 3, shape), QF_OK);
    ck_assert_int_eq(t.stride[2], 1);
    ck_assert_int_eq(t.stride[1], 5);
    ck_assert_int_eq(t.stride[0], 15);
    ck_assert_uint_eq(qf_tensor_numel(&t), 30);
    ck_assert_uint_eq(qf_tensor_dense_bytes(&t), 60);
    ck_assert_int_eq(qf_tensor_init(&t, QF_FLOAT4_E2M1FN, 3, shape), QF_OK);
    ck_assert_uint_eq(qf_tensor_dense_bytes(&t), 30);
    t.packed = 1;
    ck_assert_uint_eq(qf_tensor_dense_bytes(&t), 15);
    t.packed = 0;
    t.index_bits = 32;
    ck_assert_uint_eq(qf_tensor_dense_bytes(&t), 120);
    shape[1] = -1;
    ck_assert_int_eq(qf_tensor_init(&t, QF_FLOAT32, 3, shape), QF_EINVAL);
    ck_assert_int_eq(qf_tensor_init(&t, QF_FORMAT_COUNT, 1, shape), QF_EINVAL);
    ck_assert_int_eq(qf_tensor_init(&t, QF_FLOAT32, QF_TENSOR_MAX_DIMS + 1, shape), QF_EINVAL);
}
END_TEST

START_TEST(test_builtins_and_lookup)
{
    qf_registry *r;
    const qf_kernel *found[8];
    size_t i, n;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_uint_eq(qf_registry_count(r), 0);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    n = qf_registry_count(r);
    ck_assert_uint_ge(n, 4);
    for (i = 0; i < n; i++)
        ck_assert_str_eq(qf_registry_origin(r, i), "built-in");
    ck_assert_ptr_nonnull(qf_registry_find(r, "gemm.cpu.naive.f32"));
    ck_assert_ptr_nonnull(qf_registry_find(r, "gemm.cpu.bf16_f32acc"));
    ck_assert_ptr_nonnull(qf_registry_find(r, "softmax.cpu.f32"));
    ck_assert_ptr_nonnull(qf_registry_find(r, "rmsnorm.cpu.f32"));
    ck_assert_ptr_null(qf_registry_find(r, "gemm.cpu.naive"));
    ck_assert_ptr_null(qf_registry_get(r, n));

    /* the two reference GEMMs first, then the 6 candidates of gemm_fast.c
     * and the 6 of gemm_quant.c */
    ck_assert_uint_eq(qf_registry_match(r, "gemm.cpu.*", found, 8), 14);
    ck_assert_str_eq(found[0]->name, "gemm.cpu.naive.f32");
    ck_assert_str_eq(found[1]->name, "gemm.cpu.bf16_f32acc");
    /* the four reference kernels (gemm, softmax, rmsnorm, l2norm) and nine
     * CPU candidates (blocked, splitk4, attention naive and flash,
     * layernorm twopass and welford, softmax online, activation, rope);
     * the CUDA and HIP kernels (*.cuda.*f32) join where those back ends
     * are built */
    ck_assert_uint_eq(qf_registry_match(r, "*.cpu.*.f32", NULL, 0) + qf_registry_match(r, "*.cpu.f32", NULL, 0), 13);
    ck_assert_uint_eq(qf_registry_match(r, "gemm.cpu.[b]f16*", found, 1), 1);
    ck_assert_uint_eq(qf_registry_match(r, "softmax.?pu.f32", found, 8), 1);
    /* A glob that matches no kernel (attention.* would match
     * kernels/bad's attention.bad.drop_tail). */
    ck_assert_uint_eq(qf_registry_match(r, "attention.nosuch.*", found, 8), 0);
    /* max smaller than the count: the count is still the full count. */
    ck_assert_uint_eq(qf_registry_match(r, "*", found, 1), n);

    /* Registering the built-ins twice: each name is already taken. */
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "already registered") != NULL, "%s", qf_registry_error(r));
    ck_assert_uint_eq(qf_registry_count(r), n);
    qf_registry_free(r);
    qf_registry_free(NULL);
}
END_TEST

START_TEST(test_add_checks)
{
    qf_registry *r;
    qf_kernel k;
    const qf_kernel *p;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    k = dummy_kernel("gemm.test.one.f32");
    ck_assert_int_eq(qf_registry_add(r, &k), QF_OK);
    p = qf_registry_find(r, "gemm.test.one.f32");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_ne(p, &k); /* copied */

    /* Pointers stay valid while more kernels are added. */
    {
        char names[40][32];
        int i;
        for (i = 0; i < 40; i++) {
            snprintf(names[i], sizeof names[i], "gemm.test.more%d", i);
            k = dummy_kernel(names[i]);
            ck_assert_int_eq(qf_registry_add(r, &k), QF_OK);
        }
        ck_assert_str_eq(p->name, "gemm.test.one.f32");
        ck_assert_ptr_eq(qf_registry_find(r, "gemm.test.one.f32"), p);
        /* names[] dies here: remove nothing, just stop using them */
        qf_registry_free(r);
        ck_assert_int_eq(qf_registry_create(&r), QF_OK);
        k = dummy_kernel("gemm.test.one.f32");
        ck_assert_int_eq(qf_registry_add(r, &k), QF_OK);
    }

    /* Duplicate name. */
    k = dummy_kernel("gemm.test.one.f32");
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "'gemm.test.one.f32' is already registered (by built-in)"),
                  "%s", qf_registry_error(r));

    /* ABI version and record size. */
    k = dummy_kernel("gemm.test.abi.f32");
    k.abi_version = QF_KERNEL_ABI_VERSION + 1;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(qf_registry_error(r), "ABI version") != NULL, "%s", qf_registry_error(r));
    k = dummy_kernel("gemm.test.abi.f32");
    k.struct_size = sizeof k - 8;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(qf_registry_error(r), "bytes") != NULL, "%s", qf_registry_error(r));

    /* Operand layouts (ABI 3): only the named bits. */
    k = dummy_kernel("gemm.test.layouts.f32");
    k.layouts = QF_LAYOUT_ALL + 1;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "layouts 0x8 has bits no layout names"), "%s",
                  qf_registry_error(r));
    {
        uint32_t bit = 99;
        char buf[64];
        ck_assert_int_eq(qf_layout_lookup("dense", &bit), QF_OK);
        ck_assert_uint_eq(bit, 0);
        ck_assert_int_eq(qf_layout_lookup("col", &bit), QF_OK);
        ck_assert_uint_eq(bit, QF_LAYOUT_COL);
        ck_assert_int_eq(qf_layout_lookup("rowmajor", &bit), QF_EPARSE);
        ck_assert_str_eq(qf_layout_name(QF_LAYOUT_BATCH), "batch");
        ck_assert_ptr_null(qf_layout_name(QF_LAYOUT_LD | QF_LAYOUT_COL));
        ck_assert_str_eq(qf_layout_text(QF_LAYOUT_LD | QF_LAYOUT_BATCH, buf, sizeof buf), "ld, batch");
        ck_assert_str_eq(qf_layout_text(0, buf, sizeof buf), "dense only");
    }

    /* Names: op prefix, parts, characters. */
    {
        static const char *bad[] = {"softmax.cpu.f32", "gemm",     "gemm.", ".gemm.x",  "gemm..x",
                                    "gemm.a b",        "gemm.a/b", "",      "gemmx.cpu"};
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            k = dummy_kernel(bad[i]);
            ck_assert_msg(qf_registry_add(r, &k) == QF_EINVAL, "name '%s' accepted", bad[i]);
            ck_assert_str_ne(qf_registry_error(r), "");
        }
        k = dummy_kernel(NULL);
        ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    }
    /* Missing pieces and out-of-range fields. */
    k = dummy_kernel("gemm.test.norun");
    k.run = NULL;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "run function") != NULL, "%s", qf_registry_error(r));
    k = dummy_kernel("gemm.test.nodtypes");
    k.n_dtypes = 0;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    k = dummy_kernel("gemm.test.kind");
    k.kind = QF_KERNEL_KIND_COUNT;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    k = dummy_kernel("gemm.test.op");
    k.op = QF_OP_COUNT;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    k = dummy_kernel("gemm.test.noarch");
    k.archs = NULL;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    k = dummy_kernel("gemm.test.dupdtype");
    dummy_dtypes[1].name = "f32";
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "listed twice") != NULL, "%s", qf_registry_error(r));
    k = dummy_kernel("gemm.test.format");
    dummy_dtypes[0].out[0] = QF_FORMAT_COUNT;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EFORMAT);
    k = dummy_kernel("gemm.test.claim");
    dummy_dtypes[1].arith.block_fma = 0;
    ck_assert_int_ne(qf_registry_add(r, &k), QF_OK);
    ck_assert_msg(strstr(qf_registry_error(r), "arithmetic claim") != NULL, "%s", qf_registry_error(r));
    k = dummy_kernel("gemm.test.limits");
    k.limits.min[2] = 64;
    k.limits.max[2] = 32;
    ck_assert_int_eq(qf_registry_add(r, &k), QF_EINVAL);
    ck_assert_msg(strstr(qf_registry_error(r), "dimension K") != NULL, "%s", qf_registry_error(r));
    ck_assert_int_eq(qf_registry_add(r, NULL), QF_EINVAL);
    ck_assert_int_eq(qf_registry_add(NULL, &k), QF_EINVAL);

    /* Nothing rejected got in. */
    ck_assert_uint_eq(qf_registry_count(r), 1);
    qf_registry_free(r);
}
END_TEST

static qf_status no_transposes(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                               char *why, size_t why_size)
{
    (void)k;
    (void)dtype;
    if (op->u.gemm.trans_a || op->u.gemm.trans_b) {
        snprintf(why, why_size, "no transposes");
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

START_TEST(test_check_and_arch)
{
    qf_kernel k = dummy_kernel("gemm.test.limits.f32");
    qf_op_desc d;
    char why[256];
    memset(&d, 0, sizeof d);
    d.op = QF_OP_GEMM;
    d.u.gemm.m = 16;
    d.u.gemm.n = 16;
    d.u.gemm.k = 24;
    k.limits.multiple_of[2] = 8;
    k.limits.min[2] = 16;
    k.limits.max[0] = 4096;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_OK);
    ck_assert_str_eq(why, "");
    d.u.gemm.k = 7;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[1], why, sizeof why), QF_EUNSUPPORTED);
    ck_assert_str_eq(why, "K = 7 is below the minimum 16");
    d.u.gemm.k = 20;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_EUNSUPPORTED);
    ck_assert_str_eq(why, "K = 20 is not a multiple of 8");
    d.u.gemm.k = 32;
    d.u.gemm.m = 5000;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_EUNSUPPORTED);
    ck_assert_str_eq(why, "M = 5000 is above the maximum 4096");
    d.u.gemm.m = 16;
    k.supports = no_transposes;
    d.u.gemm.trans_b = 1;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_EUNSUPPORTED);
    ck_assert_str_eq(why, "no transposes");
    d.u.gemm.trans_b = 0;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_OK);
    /* A tuple of another kernel, another op. */
    {
        qf_dtype_tuple other = k.dtypes[0];
        ck_assert_int_eq(qf_kernel_check(&k, &d, &other, why, sizeof why), QF_EUNSUPPORTED);
    }
    d.op = QF_OP_SOFTMAX;
    ck_assert_int_eq(qf_kernel_check(&k, &d, &k.dtypes[0], why, sizeof why), QF_EUNSUPPORTED);
    ck_assert_msg(strstr(why, "not softmax") != NULL, "%s", why);
    ck_assert_ptr_eq(qf_kernel_dtype(&k, "bf16"), &k.dtypes[1]);
    ck_assert_ptr_null(qf_kernel_dtype(&k, "e4m3"));

    ck_assert(qf_kernel_arch_ok(&k, "cpu"));
    ck_assert(!qf_kernel_arch_ok(&k, "sm_90"));
    ck_assert(!qf_kernel_arch_ok(&k, "sim:sm_90"));
    k.archs = "sm_9* gfx942";
    ck_assert(qf_kernel_arch_ok(&k, "sm_90"));
    ck_assert(qf_kernel_arch_ok(&k, "gfx942"));
    ck_assert(!qf_kernel_arch_ok(&k, "gfx90a"));
    ck_assert(!qf_kernel_arch_ok(&k, "cpu"));
    k.archs = "cpu";
    k.simulates = "sm_90";
    ck_assert(qf_kernel_arch_ok(&k, "sim:sm_90"));
    ck_assert(!qf_kernel_arch_ok(&k, "sim:sm_100"));
    ck_assert(qf_kernel_arch_ok(&k, "cpu"));
    k.archs = "  any ";
    ck_assert(qf_kernel_arch_ok(&k, "gfx90a"));
    ck_assert(qf_kernel_glob("gemm.*.e4m3", "gemm.model.h100.e4m3"));
    ck_assert(!qf_kernel_glob("gemm.*.e4m3", "gemm.model.h100.e5m2"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/registry");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_ops);
    tcase_add_test(tc, test_op_dims);
    tcase_add_test(tc, test_tensor);
    tcase_add_test(tc, test_builtins_and_lookup);
    tcase_add_test(tc, test_add_checks);
    tcase_add_test(tc, test_check_and_arch);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
