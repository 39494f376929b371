/* t-devices.c: `qualify run --devices` (qualify/runner_devices.c,
 * docs/runner.md "Devices") on plugin_vdev's three virtual devices, which
 * take the runner's device path as CUDA and HIP do:
 *   - healthy: no --devices, --devices 0, --devices 0,1,2 (under server
 *     and pair isolation) give the same verdicts and figures; every record
 *     names its device (index, UUID, name) and the three devices each ran
 *     some pairs;
 *   - device 1 fails mid-sweep (its kernel server dies; or its back end
 *     reports the device lost): no pair is lost or judged differently, the
 *     faulted pairs ran again elsewhere, device 1 is out of the rotation
 *     and the event names it in results.json and on stderr;
 *   - device 1 hangs: taken out at its second timeout, results unchanged;
 *   - a kernel that crashes by itself (on every device) is CRASHED with
 *     three devices as with one, and takes no device out;
 *   - bad values exit 2 with the reason; `all` lists every device.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_result.h"
#include "qf_test.h"

#define NPAIRS 48 /* 2 kernels x 8 shapes x 3 seeds */

static char dir[128];
static size_t npairs = NPAIRS;

static void write_suite_of(const char *kernels, size_t n)
{
    char path[256];
    FILE *f;
    snprintf(dir, sizeof dir, "/tmp/qf-t-devices-%d", (int)getpid());
    snprintf(path, sizeof path, "%s.yaml", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "suite: devices\nrefute: false\nop: gemm\nkernels: [%s]\ndtypes: [float32]\n"
               "shapes: {M: [3, 8], N: [4, 16], K: [5, 32]}\nseeds: [1, 2, 3]\n",
            kernels);
    fclose(f);
    npairs = n;
}

static void write_suite(void)
{
    write_suite_of("gemm.vdev.naive, gemm.vdev.second", NPAIRS);
}

/* Run the suite with env and args into DIR/name; the exit status.  Its
 * standard error goes to DIR/name.err. */
static int run(const char *name, const char *env, const char *args)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_VDEV_PLUGIN");
    char cmd[2048];
    int rc;
    ck_assert_msg(bin && plugin, "QF_QUALIFY_BIN and QF_VDEV_PLUGIN come from CTest");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && %s '%s' run '%s.yaml' --plugin '%s' -q -o '%s/%s' %s 2>'%s/%s.err'",
             dir, env, bin, dir, plugin, dir, name, args, dir, name);
    rc = system(cmd);
    ck_assert_msg(WIFEXITED(rc), "%s", cmd);
    return WEXITSTATUS(rc);
}

/* The run's records, sorted by kernel and case. */
static qf_result *records(const char *name, size_t *n)
{
    char path[512], err[256];
    qf_result *r = NULL;
    snprintf(path, sizeof path, "%s/%s/journal.jsonl", dir, name);
    ck_assert_msg(qf_journal_read(path, &r, n, NULL, NULL, err, sizeof err) == QF_OK, "%s", err);
    ck_assert_uint_eq(*n, npairs);
    return r;
}

/* What must not depend on the devices: the record without the device, its
 * times, its memory and its date. */
static char *fingerprint(const qf_result *r)
{
    json_t *o = NULL;
    char *s;
    static const char *const drop[] = {"device", "wall_s", "started", "peak_rss_bytes", "timing"};
    size_t i;
    ck_assert_int_eq(qf_result_to_json(r, &o), QF_OK);
    for (i = 0; i < sizeof drop / sizeof drop[0]; i++)
        json_object_del(o, drop[i]);
    s = json_dumps(o, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

/* Every record of run `name` has the fingerprint of the same pair in
 * run `ref`. */
static void same_results(const char *ref, const char *name)
{
    size_t na, nb, i, j;
    qf_result *a = records(ref, &na), *b = records(name, &nb);
    for (i = 0; i < na; i++) {
        char *fa = fingerprint(&a[i]);
        int found = 0;
        for (j = 0; j < nb && !found; j++)
            if (!strcmp(a[i].kernel, b[j].kernel) && !strcmp(a[i].case_id, b[j].case_id)) {
                char *fb = fingerprint(&b[j]);
                ck_assert_msg(!strcmp(fa, fb), "%s vs %s:\n%s\n%s", ref, name, fa, fb);
                free(fb);
                found = 1;
            }
        ck_assert_msg(found, "%s: no record of %s %s", name, a[i].kernel, a[i].case_id);
        ck_assert_int_eq(a[i].verdict, a[i].seed == 2 && strstr(a[i].kernel, "crashy") ? QF_VERDICT_CRASHED
                                                                                    : QF_VERDICT_QUALIFIED);
        free(fa);
    }
    free(a);
    free(b);
}

/* Records per device index (0..2) of run name; each names its device. */
static void per_device(const char *name, size_t count[3])
{
    size_t n, i;
    qf_result *r = records(name, &n);
    count[0] = count[1] = count[2] = 0;
    for (i = 0; i < n; i++) {
        char uuid[64], dname[64];
        int d = r[i].device_index;
        ck_assert_msg(d >= 0 && d < 3, "%s: %s %s ran on device %d", name, r[i].kernel, r[i].case_id, d);
        snprintf(uuid, sizeof uuid, "VDEV-00000000-0000-0000-0000-0000000000%02d", d);
        snprintf(dname, sizeof dname, "qualify virtual device %d", d);
        ck_assert_str_eq(r[i].device_uuid, uuid);
        ck_assert_str_eq(r[i].device_name, dname);
        count[d]++;
    }
    free(r);
}

/* results.json's provenance.devices of run name (a new reference). */
static json_t *devices_of(const char *name)
{
    char path[512];
    json_t *doc, *d;
    snprintf(path, sizeof path, "%s/%s/results.json", dir, name);
    doc = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(doc);
    d = json_object_get(json_object_get(doc, "provenance"), "devices");
    json_incref(d);
    json_decref(doc);
    return d;
}

static int file_has(const char *name, const char *what)
{
    char path[512], *buf = malloc(1 << 20);
    size_t n;
    int has;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(buf);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    has = strstr(buf, what) != NULL;
    free(buf);
    return has;
}

static void cleanup(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.yaml'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(healthy_spread)
{
    size_t c[3];
    json_t *d;
    write_suite();
    ck_assert_int_eq(run("none", "", ""), 0);
    ck_assert_int_eq(run("one", "", "--devices 0"), 0);
    ck_assert_int_eq(run("three", "", "--devices 0,1,2"), 0);
    ck_assert_int_eq(run("pair", "", "--devices 0,1,2 --isolate pair"), 0);
    same_results("none", "one");
    same_results("none", "three");
    same_results("none", "pair");
    /* without --devices: device 0, as before, and no device list */
    per_device("none", c);
    ck_assert_uint_eq(c[0], NPAIRS);
    d = devices_of("none");
    ck_assert_ptr_null(d);
    per_device("one", c);
    ck_assert_uint_eq(c[0], NPAIRS);
    per_device("three", c);
    ck_assert_msg(c[0] && c[1] && c[2], "pairs per device %zu %zu %zu", c[0], c[1], c[2]);
    per_device("pair", c);
    ck_assert_msg(c[0] && c[1] && c[2], "pairs per device %zu %zu %zu", c[0], c[1], c[2]);
    d = devices_of("three");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "list")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "retries")), 0);
    json_decref(d);
    cleanup();
}
END_TEST

/* Device 1 fails after `after` runs in a process in mode. */
static void one_fails(const char *mode, int after, const char *args)
{
    char env[256], all[128];
    json_t *d, *d1;
    size_t c[3];
    write_suite();
    ck_assert_int_eq(run("healthy", "", "--devices 0,1,2"), 0);
    snprintf(env, sizeof env, "QF_VDEV_FAIL=1 QF_VDEV_FAIL_MODE=%s QF_VDEV_FAIL_AFTER=%d%s", mode, after,
             !strcmp(mode, "hang") ? " QF_VDEV_DELAY_MS=100" : "");
    snprintf(all, sizeof all, "--devices 0,1,2 %s", args);
    ck_assert_int_eq(run("failing", env, all), 0);
    same_results("healthy", "failing");
    per_device("failing", c);
    d = devices_of("failing");
    d1 = json_array_get(json_object_get(d, "list"), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d1, "index")), 1);
    ck_assert_msg(json_is_true(json_object_get(d1, "out")), "device 1 still in the rotation (%s)", mode);
    ck_assert_msg(json_integer_value(json_object_get(d, "retries")) >= 1, "no pair was run again");
    ck_assert_uint_eq((size_t)json_integer_value(json_object_get(d1, "pairs")), c[1]);
    /* device 1 ran fewer than its share: it left the rotation early */
    ck_assert_msg(c[1] < NPAIRS / 3, "pairs per device %zu %zu %zu", c[0], c[1], c[2]);
    ck_assert_msg(file_has("failing.err", "device 1 (VDEV-00000000-0000-0000-0000-000000000001, qualify virtual "
                                          "device 1) taken out of the rotation"),
                  "stderr does not name the device (%s)", mode);
    ck_assert_msg(file_has("failing/report.md", "| device 1 | qualify virtual device 1 "), "report.md (%s)", mode);
    ck_assert(file_has("failing/report.md", "out of the rotation: "));
    printf("t-devices: %s: %lld pair(s) run again\n", mode, (long long)json_integer_value(json_object_get(d, "retries")));
    json_decref(d);
    cleanup();
}

START_TEST(device_crashes)
{
    one_fails("crash", 2, "");
}
END_TEST

START_TEST(device_lost)
{
    one_fails("lost", 2, "");
}
END_TEST

/* Hung at once: out at its second timeout (two pairs faulted).  The
 * timeout is 3 s, so that a loaded machine does not time out the healthy
 * devices' pairs; a pair takes about 0.2 s (QF_VDEV_DELAY_MS=100 per
 * synchronize), so that when device 1 times out the first time (3 s) the
 * other two still have pairs to run (about 20 of 47) and it is given a
 * second pair to hang on (with 50 ms they are all done by then, and
 * device 1 is never taken out).  About 6.7 s in all: the two timeouts and
 * a pair run again (was 3.8 s). */
START_TEST(device_hangs)
{
    one_fails("hang", 0, "--timeout 3");
}
END_TEST

START_TEST(kernel_fault_is_not_the_device)
{
    json_t *d;
    size_t i;
    write_suite_of("gemm.vdev.crashy", NPAIRS / 2);
    ck_assert_int_eq(run("one", "", "--devices 0"), 1);
    ck_assert_int_eq(run("three", "", "--devices 0,1,2"), 1);
    same_results("one", "three");
    d = devices_of("three");
    /* each of the 8 crashing pairs ran twice, on two devices */
    ck_assert_int_eq(json_integer_value(json_object_get(d, "retries")), NPAIRS / 6);
    for (i = 0; i < 3; i++)
        ck_assert(!json_is_true(json_object_get(json_array_get(json_object_get(d, "list"), i), "out")));
    json_decref(d);
    cleanup();
}
END_TEST

/* A kernel whose error message says "device lost" (status QF_EIO): its
 * pairs are FAILED with cause kernel_error, never run again, and no device
 * leaves the rotation (the cause decides, never the reason text). */
START_TEST(kernel_words_are_not_the_device)
{
    json_t *d;
    qf_result *r;
    size_t i, n, lied = 0;
    write_suite();
    ck_assert_int_eq(run("liar", "QF_VDEV_LIAR=1", "--devices 0,1,2"), 1);
    d = devices_of("liar");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "retries")), 0);
    for (i = 0; i < 3; i++)
        ck_assert(!json_is_true(json_object_get(json_array_get(json_object_get(d, "list"), i), "out")));
    json_decref(d);
    r = records("liar", &n);
    for (i = 0; i < n; i++) {
        if (r[i].seed != 3) {
            ck_assert_msg(r[i].verdict == QF_VERDICT_QUALIFIED, "%s: %s", r[i].case_id, r[i].reason);
            continue;
        }
        ck_assert_msg(r[i].verdict == QF_VERDICT_FAILED && r[i].cause == QF_CAUSE_KERNEL_ERROR &&
                          strstr(r[i].reason, "device lost"),
                      "%s: %s (%s): %s", r[i].case_id, qf_verdict_name(r[i].verdict), qf_cause_name(r[i].cause),
                      r[i].reason);
        lied++;
    }
    ck_assert_uint_eq(lied, NPAIRS / 3);
    free(r);
    cleanup();
}
END_TEST

START_TEST(bad_values)
{
    write_suite();
    ck_assert_int_eq(run("seven", "", "--devices 7"), 2);
    ck_assert(file_has("seven.err", "there is no vdev device 7 (devices 0 to 2 exist)"));
    {
        char path[512];
        snprintf(path, sizeof path, "%s/seven/journal.jsonl", dir);
        ck_assert_msg(access(path, F_OK) != 0, "a journal was written before --devices was refused");
    }
    ck_assert_int_eq(run("letters", "", "--devices a,b"), 2);
    ck_assert(file_has("letters.err", "--devices 'a,b': 'all' or device indices"));
    ck_assert_int_eq(run("twice", "", "--devices 0,2,0"), 2);
    ck_assert(file_has("twice.err", "device 0 is listed twice"));
    ck_assert_int_eq(run("empty", "", "--devices 0,"), 2);
    cleanup();
}
END_TEST

START_TEST(all_lists_every_device)
{
    json_t *d;
    size_t c[3], i;
    write_suite();
    ck_assert_int_eq(run("all", "", "--devices all"), 0);
    d = devices_of("all");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "list")), 3);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(d, "list"), i), "index")),
                         (json_int_t)i);
    json_decref(d);
    per_device("all", c);
    ck_assert_msg(c[0] && c[1] && c[2], "pairs per device %zu %zu %zu", c[0], c[1], c[2]);
    cleanup();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/devices");
    TCase *tc = tcase_create("devices");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, healthy_spread);
    tcase_add_test(tc, device_crashes);
    tcase_add_test(tc, device_lost);
    tcase_add_test(tc, device_hangs);
    tcase_add_test(tc, kernel_fault_is_not_the_device);
    tcase_add_test(tc, kernel_words_are_not_the_device);
    tcase_add_test(tc, bad_values);
    tcase_add_test(tc, all_lists_every_device);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
