/* t-provenance.c: qf_provenance_collect finds the CPU, OS, compiler and
 * library versions; the git revision of QF_SOURCE_DIR (when git can tell)
 * or "unknown"; suite-file hashes; the GPU slots; and the provenance JSON
 * of results.json round-trips. */
#define _POSIX_C_SOURCE 200809L
#include <gmp.h>
#include <jansson.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_provenance.h"
#include "qf_report.h"
#include "qf_test.h"
#include "qf_version.h"

static int is_hex40(const char *s)
{
    size_t i;
    if (strlen(s) != 40)
        return 0;
    for (i = 0; i < 40; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return 0;
    return 1;
}

START_TEST(test_collect)
{
    qf_provenance p;
    ck_assert_int_eq(qf_provenance_collect(&p, NULL), QF_OK);
    ck_assert_msg(p.cpu_model[0] && p.cpu_vendor[0], "cpu '%s' '%s'", p.cpu_model, p.cpu_vendor);
    ck_assert_int_gt(p.cpu_count, 0);
    ck_assert_msg(!strncmp(p.os, "Linux ", 6), "os '%s'", p.os);
    ck_assert_msg(!strncmp(p.compiler, "gcc ", 4) || !strncmp(p.compiler, "clang ", 6), "%s", p.compiler);
    ck_assert_str_eq(p.version_mpfr, mpfr_get_version());
    ck_assert_str_eq(p.version_gmp, gmp_version);
    ck_assert_str_eq(p.qualify_version, QF_VERSION_STRING);
    /* NULL asks the tree libqualify was built from: a checkout here (a
     * revision), or gone (an installed copy: "unknown"). */
    ck_assert_msg(is_hex40(p.git_revision) || !strcmp(p.git_revision, "unknown"), "'%s'", p.git_revision);
    ck_assert_int_eq(qf_provenance_collect(&p, "/"), QF_OK);
#ifndef QF_GIT_REVISION
    ck_assert_str_eq(p.git_revision, "unknown");
#endif
    ck_assert_int_eq(p.git_dirty, -1);
    ck_assert_uint_eq(strlen(p.timestamp), 20);
    ck_assert_msg(p.gpu_name[0] == '\0' && p.gpu_arch[0] == '\0', "GPU slots are filled by the caller");
#if defined(__x86_64__)
    /* Every x86-64 this project targets has SSE4.2. */
    ck_assert_msg(strstr(p.cpu_isa, "sse4.2"), "isa '%s'", p.cpu_isa);
#endif
#if defined(__SANITIZE_ADDRESS__)
    ck_assert_msg(strstr(p.build_flags, "sanitize=address"), "flags '%s'", p.build_flags);
#endif
    ck_assert_uint_eq(p.nfiles, 0);
    ck_assert_int_eq(qf_provenance_collect(NULL, NULL), QF_EINVAL);
    qf_provenance_free(&p);
}
END_TEST

START_TEST(test_git)
{
    const char *src = getenv("QF_SOURCE_DIR");
    qf_provenance p;
    if (!src || !*src)
        return;
    ck_assert_int_eq(qf_provenance_collect(&p, src), QF_OK);
    /* git may be absent or refuse the checkout (safe.directory): then
     * "unknown", never garbage. */
    ck_assert_msg(is_hex40(p.git_revision) || !strcmp(p.git_revision, "unknown"), "'%s'", p.git_revision);
    if (is_hex40(p.git_revision))
        ck_assert(p.git_dirty == 0 || p.git_dirty == 1);
    qf_provenance_free(&p);
    ck_assert_int_eq(qf_provenance_collect(&p, "/nonexistent-dir-qf"), QF_OK);
#ifndef QF_GIT_REVISION
    ck_assert_str_eq(p.git_revision, "unknown");
#endif
    qf_provenance_free(&p);
}
END_TEST

START_TEST(test_files_gpu_json)
{
    qf_provenance p, q;
    char path[64], err[256] = "";
    json_t *j = NULL;
    snprintf(path, sizeof path, "/tmp/qf-t-prov-%d.yaml", (int)getpid());
    qf_test_write_file(path, "abc", 3, NULL);
    ck_assert_int_eq(qf_provenance_collect(&p, NULL), QF_OK);
    ck_assert_int_eq(qf_provenance_add_file(&p, path), QF_OK);
    ck_assert_int_eq(qf_provenance_add_file(&p, path), QF_OK); /* once only */
    ck_assert_uint_eq(p.nfiles, 1);
    ck_assert_str_eq(p.files[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    remove(path);
    ck_assert_int_eq(qf_provenance_add_file(&p, "/nonexistent-qf.yaml"), QF_EIO);
    ck_assert_uint_eq(p.nfiles, 1);
    qf_provenance_set_gpu(&p, "AMD Instinct MI300X", "gfx942", "HIP 6.0", NULL);
    ck_assert_str_eq(p.gpu_arch, "gfx942");
    ck_assert_str_eq(p.gpu_driver, "");

    ck_assert_int_eq(qf_report_provenance_to_json(&p, &j), QF_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "gpu"), "name")),
                     "AMD Instinct MI300X");
    ck_assert(json_is_null(json_object_get(json_object_get(j, "gpu"), "driver")));
    if (!strcmp(p.git_revision, "unknown"))
        ck_assert(json_is_null(json_object_get(j, "git_revision")));
    else
        ck_assert_str_eq(json_string_value(json_object_get(j, "git_revision")), p.git_revision);
    ck_assert(json_is_array(json_object_get(json_object_get(j, "cpu"), "isa")));
    ck_assert_msg(qf_report_provenance_from_json(j, &q, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_str_eq(q.cpu_model, p.cpu_model);
    ck_assert_str_eq(q.cpu_isa, p.cpu_isa);
    ck_assert_str_eq(q.build_flags, p.build_flags);
    ck_assert_str_eq(q.os_distro, p.os_distro);
    ck_assert_str_eq(q.gpu_arch, "gfx942");
    ck_assert_str_eq(q.git_revision, p.git_revision);
    ck_assert_int_eq(q.cpu_count, p.cpu_count);
    ck_assert_uint_eq(q.nfiles, 1);
    ck_assert_str_eq(q.files[0].path, path);
    qf_provenance_free(&q);
    json_object_set_new(json_object_get(j, "cpu"), "model", json_integer(3));
    ck_assert_int_eq(qf_report_provenance_from_json(j, &q, err, sizeof err), QF_EPARSE);
    ck_assert_msg(strstr(err, "cpu.model"), "%s", err);
    qf_provenance_free(&q);
    json_decref(j);
    qf_provenance_free(&p);
    qf_provenance_free(&p); /* twice is harmless */
}
END_TEST

int main(void)
{
    return qf_test_main("report/provenance", "provenance", 0, NULL, NULL,
                        QF_TESTS(test_collect, test_git, test_files_gpu_json));
}
