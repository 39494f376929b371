/* t-families.c: the list of kernel families and back ends (kernels/
 * families.c, qualify/_families.h) through which qf_registry_add_builtins
 * registers the built-in kernels: its names and order, that every
 * family's kernels are in the registry in list order, and that the
 * registry itself names no family.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_families.h"
#include "qf_kernel.h"
#include "qf_test.h"

START_TEST(test_list)
{
    static const char *const want[] = {"cpu", "models", "bad", "cuda", "hip"};
    size_t i, j, n = 0;
    const _qf_family *f = _qf_families_get(&n);
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(n, sizeof want / sizeof want[0]);
    for (i = 0; i < n; i++) {
        ck_assert_str_eq(f[i].name, want[i]);
        for (j = 0; j < i; j++)
            ck_assert_str_ne(f[i].name, f[j].name);
    }
    /* The CPU families are static tables, always linked; the back ends
     * register at run time, or are absent (both NULL). */
    for (i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(f[i].table);
        ck_assert_ptr_null(f[i].add);
    }
    for (i = 3; i < n; i++)
        ck_assert_ptr_null(f[i].table);
    ck_assert_ptr_eq(_qf_families_get(NULL), f);
}
END_TEST

/* The next m kernels of the built-in registry, from *at on, must be the
 * kernels of ref (0..m-1), in that order. */
static void expect_run(const qf_registry *all, size_t *at, const qf_kernel *ref, size_t m, const char *family)
{
    size_t i;
    for (i = 0; i < m; i++) {
        const qf_kernel *k = qf_registry_get(all, *at + i);
        ck_assert_msg(k != NULL, "family %s: kernel %zu (%s) missing", family, i, ref[i].name);
        ck_assert_msg(!strcmp(k->name, ref[i].name), "family %s: kernel %zu is %s, expected %s", family, i,
                      k->name, ref[i].name);
        ck_assert_ptr_eq(k->run, ref[i].run);
        ck_assert_ptr_eq(k->dtypes, ref[i].dtypes);
        ck_assert_str_eq(qf_registry_origin(all, *at + i), "built-in");
    }
    *at += m;
}

START_TEST(test_every_family_registered_in_order)
{
    size_t i, n = 0, at = 0;
    const _qf_family *f = _qf_families_get(&n);
    qf_registry *all;
    ck_assert_int_eq(qf_registry_create(&all), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(all), QF_OK);
    for (i = 0; i < n; i++) {
        if (f[i].table) {
            size_t m = 0;
            const qf_kernel *t = f[i].table(&m);
            ck_assert_msg(m > 0, "family %s has no kernel", f[i].name);
            expect_run(all, &at, t, m, f[i].name);
        }
        if (f[i].add) {
            /* A back end registers into a registry of its own; the same
             * records must follow in the built-in one. */
            qf_registry *own;
            size_t m, j;
            ck_assert_int_eq(qf_registry_create(&own), QF_OK);
            ck_assert_int_eq(f[i].add(own), QF_OK);
            m = qf_registry_count(own);
            ck_assert_msg(m > 0, "back end %s registers no kernel", f[i].name);
            for (j = 0; j < m; j++) {
                const qf_kernel *k = qf_registry_get(all, at + j);
                ck_assert_ptr_nonnull(k);
                ck_assert_str_eq(k->name, qf_registry_get(own, j)->name);
                ck_assert_str_eq(k->backend, f[i].name);
            }
            at += m;
            qf_registry_free(own);
        }
    }
    /* Nothing registered outside the list. */
    ck_assert_uint_eq(at, qf_registry_count(all));
    qf_registry_free(all);
}
END_TEST

/* A back end that is not built registers nothing: no kernel claims its
 * back end.  A built one (its records are in libqualify; its module is
 * not loaded for this) registers some. */
START_TEST(test_backends_iff_linked)
{
    size_t i, j, n = 0;
    const _qf_family *f = _qf_families_get(&n);
    qf_registry *r;
    ck_assert_int_eq(qf_registry_create(&r), QF_OK);
    ck_assert_int_eq(qf_registry_add_builtins(r), QF_OK);
    for (i = 3; i < n; i++) {
        size_t on = 0;
        for (j = 0; j < qf_registry_count(r); j++)
            if (!strcmp(qf_registry_get(r, j)->backend, f[i].name))
                on++;
        if (f[i].add)
            ck_assert_msg(on > 0, "back end %s is linked but registered no kernel", f[i].name);
        else
            ck_assert_msg(on == 0, "back end %s is not linked but %zu kernels claim it", f[i].name, on);
    }
    qf_registry_free(r);
}
END_TEST

/* The point of the list: qualify/registry.c walks it and names no family,
 * so it includes no family header and calls no family's function. */
START_TEST(test_registry_names_no_family)
{
    static const char *const banned[] = {"qf_bad.h", "qf_model.h", "qf_kernels_cpu", "qf_kernels_models",
                                         "qf_kernels_bad", "qf_cuda_", "qf_hip_"};
    const char *src = getenv("QF_SOURCE_DIR");
    char path[4096], line[1024];
    FILE *fp;
    int no = 0;
    size_t i;
    if (!src || !*src) {
        fprintf(stderr, "QF_SOURCE_DIR is set by CTest: source check skipped\n");
        return;
    }
    snprintf(path, sizeof path, "%s/qualify/registry.c", src);
    fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    while (fgets(line, sizeof line, fp)) {
        no++;
        for (i = 0; i < sizeof banned / sizeof banned[0]; i++)
            ck_assert_msg(!strstr(line, banned[i]), "%s:%d names a kernel family (%s)", path, no, banned[i]);
    }
    fclose(fp);
    ck_assert_int_gt(no, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels/families");
    TCase *tc = tcase_create("families");
    tcase_add_test(tc, test_list);
    tcase_add_test(tc, test_every_family_registered_in_order);
    tcase_add_test(tc, test_backends_iff_linked);
    tcase_add_test(tc, test_registry_names_no_family);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
