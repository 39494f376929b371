/* t-table.c: the op table (qualify/ops/, docs/architecture.md) is whole
 * and consistent: every class has a schema of its own name and the hooks
 * the runner calls; every kernel ABI op has exactly one owning class whose
 * ABI names stay within the ABI's limits; the public views (qf_suite_op_*,
 * qf_op_*) answer from it. */
#include <jansson.h>
#include <string.h>

#include "ops/_ops.h"
#include "qf_suite.h"
#include "qf_test.h"

START_TEST(classes_are_whole)
{
    int n = qf_suite_op_count();
    ck_assert_int_ge(n, 12);
    ck_assert_ptr_null(_qf_opclass_get((qf_suite_op)n));
    ck_assert_ptr_null(_qf_opclass_get((qf_suite_op)-1));
    for (int i = 0; i < n; i++) {
        const _qf_opclass *k = _qf_opclass_get((qf_suite_op)i);
        qf_suite_op back;
        ck_assert_ptr_nonnull(k);
        ck_assert_ptr_nonnull(k->schema);
        ck_assert_str_eq(k->schema->name, k->name);
        ck_assert_msg(k->build && k->tuple_matches && k->inputs, "%s lacks a hook", k->name);
        ck_assert_msg((k->reference != NULL) != (k->rows != NULL), "%s: reference or rows, exactly one",
                      k->name);
        ck_assert_msg(!k->mark_overflow || k->acc_max, "%s: an overflow check needs acc_max", k->name);
        ck_assert_msg(k->schema->ndims >= 1 && k->schema->ndims <= QF_SUITE_MAX_DIMS, "%s", k->name);
        for (size_t d = 0; d < k->schema->ndims; d++)
            ck_assert_ptr_nonnull(k->schema->dim_names[d]);
        ck_assert_msg(k->schema->nroles >= 2 && k->schema->nroles <= QF_SUITE_MAX_ROLES, "%s", k->name);
        /* The public views read the same class. */
        ck_assert_str_eq(qf_suite_op_name((qf_suite_op)i), k->name);
        ck_assert_int_eq(qf_suite_op_lookup(k->name, &back), QF_OK);
        ck_assert_int_eq(back, i);
        ck_assert_int_eq(qf_suite_op_kernel_op((qf_suite_op)i), k->abi);
        ck_assert_ptr_nonnull(qf_op_name(k->abi));
        if (k->bound)
            ck_assert_str_eq(qf_suite_op_bound((qf_suite_op)i), k->bound);
        else
            ck_assert_ptr_null(qf_suite_op_bound((qf_suite_op)i));
    }
}
END_TEST

START_TEST(abi_ops_have_one_owner)
{
    for (int op = 0; op < QF_OP_COUNT; op++) {
        int owners = 0;
        for (int i = 0; i < qf_suite_op_count(); i++) {
            const _qf_opclass *k = _qf_opclass_get((qf_suite_op)i);
            if (k->abi == (qf_op)op && k->abi_info) {
                owners++;
                ck_assert_str_eq(qf_op_name((qf_op)op), k->name);
                ck_assert_ptr_nonnull(k->abi_info->dims_of);
            }
        }
        ck_assert_msg(owners == 1, "ABI op %d has %d owning classes", op, owners);
        ck_assert_int_ge(qf_op_slot_count((qf_op)op, 0), 1);
        ck_assert_int_le(qf_op_slot_count((qf_op)op, 0), QF_KERNEL_MAX_IN);
        ck_assert_int_ge(qf_op_slot_count((qf_op)op, 1), 1);
        ck_assert_int_le(qf_op_slot_count((qf_op)op, 1), QF_KERNEL_MAX_OUT);
        ck_assert_int_le(qf_op_dim_count((qf_op)op), QF_OP_MAX_DIMS);
    }
    ck_assert_ptr_null(qf_op_name(QF_OP_COUNT));
}
END_TEST

/* One spelling per concept: where the ABI counts a suite dimension, it
 * spells it the suite's way (gemm M N K batch; the row ops rows cols). */
START_TEST(dimension_names_are_the_suites)
{
    for (int i = 0; i < qf_suite_op_count(); i++) {
        const _qf_opclass *k = _qf_opclass_get((qf_suite_op)i);
        const char *const *names;
        size_t n = qf_suite_op_dims((qf_suite_op)i, &names);
        if (!k->abi_info || k->abi == QF_OP_ACTIVATION) /* activation: n = rows x cols (documented) */
            continue;
        for (size_t d = 0; d < n; d++)
            ck_assert_msg(d < (size_t)qf_op_dim_count(k->abi) &&
                              !strcmp(qf_op_dim_name(k->abi, (int)d), names[d]),
                          "%s: suite dimension %s is ABI dimension %s", k->name, names[d],
                          qf_op_dim_name(k->abi, (int)d));
    }
}
END_TEST

/* The worker protocol's `op` comes from the owning class: the ABI
 * dimensions by name and the op's fields (docs/workers.md). */
START_TEST(op_json_from_the_class)
{
    qf_op_desc d;
    json_t *o;
    memset(&d, 0, sizeof d);
    d.op = QF_OP_GEMM;
    d.u.gemm.m = 7;
    d.u.gemm.n = 9;
    d.u.gemm.k = 40;
    d.u.gemm.trans_b = 1;
    d.u.gemm.alpha = 0.5;
    o = _qf_op_json(&d);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(json_string_value(json_object_get(o, "op")), "gemm");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "M")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "K")), 40);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "batch")), 1);
    ck_assert(json_is_true(json_object_get(o, "trans_b")));
    ck_assert(json_real_value(json_object_get(o, "alpha")) == 0.5);
    json_decref(o);
    memset(&d, 0, sizeof d);
    d.op = QF_OP_L2NORM;
    d.u.norm.rows = 3;
    d.u.norm.cols = 5;
    d.u.norm.eps = 1e-12;
    o = _qf_op_json(&d);
    ck_assert_str_eq(json_string_value(json_object_get(o, "op")), "l2norm");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "cols")), 5);
    ck_assert(json_real_value(json_object_get(o, "eps")) == 1e-12);
    json_decref(o);
    for (int op = 0; op < QF_OP_COUNT; op++) {
        memset(&d, 0, sizeof d);
        d.op = (qf_op)op;
        o = _qf_op_json(&d);
        ck_assert_msg(o != NULL, "ABI op %d has no JSON form", op);
        json_decref(o);
    }
    d.op = QF_OP_COUNT;
    ck_assert_ptr_null(_qf_op_json(&d));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops/table");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, classes_are_whole);
    tcase_add_test(tc, abi_ops_have_one_owner);
    tcase_add_test(tc, dimension_names_are_the_suites);
    tcase_add_test(tc, op_json_from_the_class);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
