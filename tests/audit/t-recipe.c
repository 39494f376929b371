/* t-recipe.c: one spelling per scaling recipe (qualify/qf_recipe.h).
 * Name and lookup round trip over every recipe, the older audit words as
 * aliases that only qf_scale_recipe_lookup_alias accepts, and `qualify
 * audit`'s schemes: an alias parses as the recipe and the label shows the
 * canonical spelling, so both spellings are one row; a recipe word a head
 * does not take is an error naming the valid spellings. */
#include <stdlib.h>
#include <string.h>

#include "qf_audit.h"
#include "qf_recipe.h"
#include "qf_test.h"

START_TEST(test_round_trip)
{
    int i;
    qf_scale_recipe r;
    for (i = 0; i < QF_SCALE_RECIPE_COUNT; i++) {
        const char *name = qf_scale_recipe_name((qf_scale_recipe)i);
        ck_assert_ptr_nonnull(name);
        ck_assert_str_eq(name, qf_scale_recipe_names[i]);
        ck_assert_int_eq(qf_scale_recipe_lookup(name, &r), QF_OK);
        ck_assert_int_eq(r, i);
        ck_assert_int_eq(qf_scale_recipe_lookup_alias(name, &r), QF_OK);
        ck_assert_int_eq(r, i);
    }
    ck_assert_ptr_null(qf_scale_recipe_names[QF_SCALE_RECIPE_COUNT]);
    ck_assert_ptr_null(qf_scale_recipe_name(QF_SCALE_RECIPE_COUNT));
    ck_assert_ptr_null(qf_scale_recipe_name((qf_scale_recipe)-1));
    /* The suites' order (docs/suites.md): none first, group last. */
    ck_assert_str_eq(qf_scale_recipe_name(QF_SCALE_RECIPE_NONE), "none");
    ck_assert_str_eq(qf_scale_recipe_name(QF_SCALE_RECIPE_PER_CHANNEL), "per_channel");
    ck_assert_str_eq(qf_scale_recipe_name(QF_SCALE_RECIPE_GROUP), "group");
    ck_assert_int_eq(qf_scale_recipe_lookup("PER_TENSOR", &r), QF_EPARSE);
    ck_assert_int_eq(qf_scale_recipe_lookup("", &r), QF_EPARSE);
    ck_assert_int_eq(qf_scale_recipe_lookup(NULL, &r), QF_EINVAL);
    ck_assert_int_eq(qf_scale_recipe_lookup("mx", NULL), QF_EINVAL);
}
END_TEST

START_TEST(test_aliases)
{
    static const struct {
        const char *alias;
        qf_scale_recipe r;
    } a[] = {{"tensor", QF_SCALE_RECIPE_PER_TENSOR},
             {"channel", QF_SCALE_RECIPE_PER_CHANNEL},
             {"row", QF_SCALE_RECIPE_PER_CHANNEL}};
    size_t i;
    qf_scale_recipe r;
    for (i = 0; i < sizeof a / sizeof a[0]; i++) {
        /* Not a spelling of its own: the strict lookup refuses it. */
        ck_assert_int_eq(qf_scale_recipe_lookup(a[i].alias, &r), QF_EPARSE);
        ck_assert_int_eq(qf_scale_recipe_lookup_alias(a[i].alias, &r), QF_OK);
        ck_assert_int_eq(r, a[i].r);
    }
    ck_assert_int_eq(qf_scale_recipe_lookup_alias("token", &r), QF_EPARSE);
    ck_assert_int_eq(qf_scale_recipe_lookup_alias(NULL, &r), QF_EINVAL);
}
END_TEST

START_TEST(test_audit_labels)
{
    static const struct {
        const char *spec, *label;
        qf_scale_recipe r;
    } c[] = {
        {"e4m3:tensor", "e4m3:per_tensor", QF_SCALE_RECIPE_PER_TENSOR},
        {"e4m3:per_tensor", "e4m3:per_tensor", QF_SCALE_RECIPE_PER_TENSOR},
        {"e4m3:channel:mse", "e4m3:per_channel:mse", QF_SCALE_RECIPE_PER_CHANNEL},
        {"e5m2:row:margin=2", "e5m2:per_channel:margin=2", QF_SCALE_RECIPE_PER_CHANNEL},
        {"e4m3:mse", "e4m3:mse", QF_SCALE_RECIPE_PER_TENSOR},
        {"bf16", "bf16", QF_SCALE_RECIPE_NONE},
        {"mxfp4:rule=rceil", "mxfp4:rule=rceil", QF_SCALE_RECIPE_MX},
        {"nvfp4", "nvfp4", QF_SCALE_RECIPE_NVFP4},
        {"int4:g128:asym", "int4:g128:asym", QF_SCALE_RECIPE_GROUP},
    };
    qf_audit_scheme s, *v = NULL;
    size_t i, n = 0;
    char err[512];
    for (i = 0; i < sizeof c / sizeof c[0]; i++) {
        ck_assert_msg(qf_audit_scheme_parse(c[i].spec, &s, err, sizeof err) == QF_OK, "%s: %s", c[i].spec,
                      err);
        ck_assert_str_eq(s.label, c[i].label);
        ck_assert_int_eq(qf_audit_recipe(&s), c[i].r);
    }
    /* The alias and the canonical spelling are the same scheme: one row. */
    err[0] = '\0';
    ck_assert_int_eq(qf_audit_scheme_parse_list("e4m3:channel,e4m3:per_channel", &v, &n, err, sizeof err),
                     QF_EPARSE);
    ck_assert_ptr_nonnull(strstr(err, "twice"));
    /* A label too long once the aliases are spelled out is an error. */
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:row:row:row:row:row:row:row:row:row:row:row:row:row", &s,
                                           err, sizeof err),
                     QF_EPARSE);
}
END_TEST

START_TEST(test_audit_errors)
{
    qf_audit_scheme s;
    char err[512];
    /* An unknown word lists the valid spellings, canonical first. */
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:chanel", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "'chanel'") && strstr(err, "per_tensor, per_channel"), "%s", err);
    /* Recipe words the head does not take name what applies. */
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:mx", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "'mx'") && strstr(err, "per_channel"), "%s", err);
    ck_assert_int_eq(qf_audit_scheme_parse("e4m3:per_token", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "per_tensor or per_channel"), "%s", err);
    ck_assert_int_eq(qf_audit_scheme_parse("bf16:per_channel", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "8-bit float"), "%s", err);
    ck_assert_int_eq(qf_audit_scheme_parse("int4:per_channel", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "recipe group"), "%s", err);
    ck_assert_int_eq(qf_audit_scheme_parse("mxfp4:tensor", &s, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "recipe mx"), "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("audit/recipe");
    TCase *tc = tcase_create("recipe");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_aliases);
    tcase_add_test(tc, test_audit_labels);
    tcase_add_test(tc, test_audit_errors);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
