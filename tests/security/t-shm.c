/* t-shm.c: no run's tensors are ever open to other processes by a name
 * (issue 17, docs/security.md "Per back end").  With `--jobs 2`, a kernel
 * of the hostile plugin (gemm.hostile.shmscan, tests/security/
 * plugin_hostile.c) watches /dev/shm for 2 s during its first call for an
 * object of its own qualify run, while the other job slot runs pair after
 * pair, and prints what it saw into its record (kernel_output):
 *
 *   server_no_name   --isolate server: kernel servers get each run in the
 *                    slot's memfd; the scan finds nothing (before: the
 *                    /qf-w-PID-N object between the host's shm_open and the
 *                    server's unlink, opened read-write);
 *   worker_no_name   the same with a --worker (the C test worker, whose
 *                    hello declares "shm_fd") in the other slot;
 *   named_worker     the control: a worker whose hello does not declare
 *                    "shm_fd" still gets a named object, and the scan sees
 *                    it (the window docs/workers.md states for such
 *                    workers; it also shows the scan can see one).
 *
 * QF_QUALIFY_BIN may name another qualify to check it fails there. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_test.h"

#define NSWEEP 3
static char dirs[NSWEEP][256];

static const char *const kernels[NSWEEP] = {"gemm.hostile.good, gemm.cpu.naive.f32", "gemm.w.good", "gemm.w.good"};
static const char *const workers[NSWEEP] = {"", "", " named"};

static void sweep(int i)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_HOSTILE_PLUGIN"),
               *worker = getenv("QF_TEST_WORKER");
    char suite[300], wopt[600] = "", cmd[4096];
    FILE *f;
    int m;
    snprintf(dirs[i], sizeof dirs[i], "/tmp/qf-t-shm-%d-%d", (int)getpid(), i);
    snprintf(suite, sizeof suite, "%s.yaml", dirs[i]);
    /* The kernel's token goes into scan/, the one directory it may write
     * besides its scratch (--kernel-writable; docs/security.md). */
    snprintf(cmd, sizeof cmd, "%s/scan", dirs[i]);
    if (mkdir(dirs[i], 0700) || mkdir(cmd, 0700) || !(f = fopen(suite, "w")))
        return;
    /* The scanning kernel first: its first pair starts in slot 0 while
     * slot 1 goes on through its other pairs and the other kernels'. */
    fprintf(f, "suite: shm\nrefute: false\nop: gemm\nkernels: [gemm.hostile.shmscan, %s]\n"
               "dtypes: [float32]\nshapes: {M: [", kernels[i]);
    for (m = 1; m <= 60; m++)
        fprintf(f, "%s%d", m > 1 ? ", " : "", m);
    fprintf(f, "], N: [3], K: [4]}\n");
    fclose(f);
    if (i)
        snprintf(wopt, sizeof wopt, "--worker '%s%s'", worker ? worker : "/nonexistent", workers[i]);
    snprintf(cmd, sizeof cmd,
             "QF_SHMSCAN_DIR='%s/scan' timeout -k 5 120 '%s' run '%s' --plugin '%s' %s --isolate server --jobs 2 "
             "--timeout 20 --kernel-writable '%s/scan' -o '%s/out' > '%s/log' 2>&1",
             dirs[i], bin, suite, plugin, wopt, dirs[i], dirs[i], dirs[i]);
    if (system(cmd) == -1)
        fprintf(stderr, "t-shm: cannot run %s\n", cmd);
}

/* What the scanning kernel printed in sweep i (every record's
 * kernel_output, joined), into buf. */
static void scan_output(int i, char *buf, size_t size)
{
    char path[320];
    json_error_t e;
    json_t *root, *c;
    size_t k, n = 0;
    snprintf(path, sizeof path, "%s/out/results.json", dirs[i]);
    root = json_load_file(path, 0, &e);
    ck_assert_msg(root, "%s: no results (%s): the sweep did not finish", path, e.text);
    buf[0] = '\0';
    json_array_foreach(json_object_get(root, "cases"), k, c)
    {
        const char *kn = json_string_value(json_object_get(c, "kernel"));
        const char *out = json_string_value(json_object_get(c, "kernel_output"));
        if (kn && !strcmp(kn, "gemm.hostile.shmscan") && out && n + strlen(out) + 1 < size)
            n += (size_t)snprintf(buf + n, size - n, "%s", out);
    }
    json_decref(root);
    ck_assert_msg(strstr(buf, "shmscan: scanned"), "sweep %d: the scanning kernel never scanned: '%s'", i, buf);
}

START_TEST(server_no_name)
{
    char out[65536];
    scan_output(0, out, sizeof out);
    ck_assert_msg(!strstr(out, "saw "), "a kernel saw another pair's tensors by name: %s", out);
}
END_TEST

START_TEST(worker_no_name)
{
    char out[65536];
    scan_output(1, out, sizeof out);
    ck_assert_msg(!strstr(out, "saw "), "a kernel saw a worker's tensors by name: %s", out);
}
END_TEST

START_TEST(named_worker)
{
    char out[65536];
    scan_output(2, out, sizeof out);
    ck_assert_msg(strstr(out, "saw /dev/shm/qf-w-"), "the scan saw no named object of a worker without shm_fd: %s",
                  out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("security/shm");
    TCase *tc = tcase_create("shm");
    char cmd[2048];
    int i, rc;
    if (!getenv("QF_QUALIFY_BIN") || !getenv("QF_HOSTILE_PLUGIN") || !getenv("QF_TEST_WORKER")) {
        fprintf(stderr, "QF_QUALIFY_BIN, QF_HOSTILE_PLUGIN and QF_TEST_WORKER come from CTest\n");
        return EXIT_FAILURE;
    }
    for (i = 0; i < NSWEEP; i++)
        sweep(i);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, server_no_name);
    tcase_add_test(tc, worker_no_name);
    tcase_add_test(tc, named_worker);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    for (i = 0; i < NSWEEP; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.yaml'", dirs[i], dirs[i]);
        if (system(cmd) != 0)
            rc = EXIT_FAILURE;
    }
    return rc;
}
