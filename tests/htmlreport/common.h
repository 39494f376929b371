/* common.h: inputs for the tests of 'qualify report' (tests/htmlreport): a
 * K sweep run with 'qualify run' (ksweep.yaml) and an audit of a small
 * tensor, in a fresh directory.  Exits 77 (skipped) when QF_QUALIFY_BIN is
 * not set or qualify was built without PLplot. */
#ifndef QF_TEST_HTMLREPORT_COMMON_H
#define QF_TEST_HTMLREPORT_COMMON_H

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_format.h"
#include "qf_npy.h"
#include "qf_test.h"

static const char *bin;
static char dir[128], results[256], audit[256];

static void inputs_make(void)
{
    char args[1024], p[256], err[256];
    static float w[16 * 64];
    size_t shape[2] = {16, 64}, i;
    const char *src = getenv("QF_SOURCE_DIR");
    qf_cli_result r;
    ck_assert_ptr_nonnull(src);
    snprintf(dir, sizeof dir, "/tmp/qf-t-html-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof args, "'%s/tests/htmlreport/ksweep.yaml' -o %s/sweep -q", src, dir);
    r = qf_cli_run(bin, "run", args);
    ck_assert_msg(r.rc == 0, "qualify run: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    snprintf(results, sizeof results, "%s/sweep/results.json", dir);
    for (i = 0; i < 16 * 64; i++)
        w[i] = (float)((double)(qf_rng_u64(qf_test_seed(), i) >> 40) * 0x1p-24 - 0.5);
    snprintf(p, sizeof p, "%s/w.npy", dir);
    ck_assert(qf_npy_write_data(p, QF_NPY_FLOAT32, 2, shape, w, err, sizeof err) == QF_OK);
    snprintf(args, sizeof args, "%s --formats bf16,e4m3:tensor,mxfp4,nvfp4,int4:g32 -o %s/aud", p, dir);
    r = qf_cli_run(bin, "audit", args);
    ck_assert_msg(r.rc == 0, "qualify audit: rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    snprintf(audit, sizeof audit, "%s/aud/audit.json", dir);
}

static void inputs_remove(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* 77 unless the CLI is there and has PLplot (outside Check: no asserts). */
static void require_report(void)
{
    char cmd[1024];
    bin = getenv("QF_QUALIFY_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "QF_QUALIFY_BIN is not set: skipped\n");
        exit(QF_TEST_SKIP);
    }
    snprintf(cmd, sizeof cmd, "'%s' report -o /dev/null /nonexistent.json 2>&1 | grep -q 'built without PLplot'",
             bin);
    if (system(cmd) == 0) {
        fprintf(stderr, "qualify was built without PLplot: skipped\n");
        exit(QF_TEST_SKIP);
    }
}

#endif
