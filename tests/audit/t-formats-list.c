/* t-formats-list.c: a --formats list that names a scheme twice gave two
 * rows with one label (the ranking and the summary are keyed by label).
 * Now QF_EPARSE from qf_audit_scheme_parse_list and exit 2 from 'qualify
 * audit', nothing on stdout.  Empty items stay tolerated (t-scheme.c:
 * "bf16,," is one scheme; "bf16,$EXTRA" with EXTRA empty in a script). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_audit.h"
#include "qf_cli_test.h"
#include "qf_npy.h"
#include "qf_test.h"

START_TEST(test_parse_list)
{
    static const char *const bad[] = {"bf16,bf16", "e4m3:tensor,bf16,e4m3:tensor", ",nvfp4,,nvfp4"};
    qf_audit_scheme *v = NULL;
    size_t n = 0, i;
    char err[256];
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(qf_audit_scheme_parse_list(bad[i], &v, &n, err, sizeof err) == QF_EPARSE, "%s accepted",
                      bad[i]);
        ck_assert_msg(err[0], "%s: no message", bad[i]);
    }
    /* The same format with another spelling is another label: allowed. */
    ck_assert_int_eq(qf_audit_scheme_parse_list("mxfp4,mxfp4:rule=rceil,bf16", &v, &n, err, sizeof err),
                     QF_OK);
    ck_assert_uint_eq(n, 3);
    free(v);
}
END_TEST

START_TEST(test_cli)
{
    const char *bin = getenv("QF_QUALIFY_BIN");
    char dir[128], p[256], args[1024], err[256];
    double w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t shape[1] = {8};
    qf_cli_result r;
    /* CTest sets it; a case that ran nothing must not pass. */
    ck_assert_msg(bin && *bin, "QF_QUALIFY_BIN is not set (run through ctest)");
    snprintf(dir, sizeof dir, "/tmp/qf-t-fl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/w.npy", dir);
    ck_assert(qf_npy_write_data(p, QF_NPY_FLOAT64, 1, shape, w, err, sizeof err) == QF_OK);
    snprintf(args, sizeof args, "%s --formats nvfp4,bf16,nvfp4", p);
    r = qf_cli_run(bin, "audit", args);
    ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.out);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strstr(r.err, "--formats") && strstr(r.err, "twice"), "%s", r.err);
    qf_cli_result_free(&r);
    snprintf(args, sizeof args, "%s --formats bf16,,nvfp4,", p);
    r = qf_cli_run(bin, "audit", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    qf_test_rmtree(dir);
}
END_TEST

int main(void)
{
    return qf_test_main("audit/formats-list", "list", 120, NULL, NULL, QF_TESTS(test_parse_list, test_cli));
}
