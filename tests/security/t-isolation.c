/* t-isolation.c: hostile kernels (tests/security/plugin_hostile.c) against
 * `qualify run`, in one sweep with a good kernel and known-bad ones, under
 * --isolate server and pair, --jobs 1 and 2 (docs/security.md).  Each
 * test below is one defect of issue 17 and fails on the runner before it
 * was closed:
 *   forge_records   D1/D1b: a kernel rewriting records through inherited
 *                   shared memory changes no verdict, its own nor others';
 *   forge_journal   D2: nor through the journal's descriptor;
 *   run2_judged     D3: a run 2 of zeros is FAILED;
 *   no_leak_no_hang D4: no process of the sweep outlives `qualify run`,
 *                   and `qualify run | cat` returns;
 *   signal_group    kill(0, SIGTERM) from a kernel ends that pair only;
 *   memory_limit    a kernel leaking 1 GiB a call is not QUALIFIED and
 *                   the reason names the limit (not in sanitizer builds,
 *                   where the limit cannot apply);
 *   output_captured what a kernel prints is in its record, never in
 *                   qualify's output;
 *   inputs_modified a kernel writing into its input is FAILED;
 *   limit_options   a malformed limit option is exit 2 naming it.
 * The sweeps run once, before the tests (each test reads their files);
 * QF_QUALIFY_BIN may name another qualify to check it fails there (with
 * QF_T_SECURITY_OLD=1 for one without --kernel-memory). */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

/* Each configuration sweeps twice: the hostile kernels, then killpg with
 * the good ones (a runner that lets kill(0, SIGTERM) reach qualify loses
 * that sweep only, so the other defects still show one by one). */
#define NCONF 4
#define NSWEEP (2 * NCONF)
static const char *const modes[NCONF] = {"server", "pair", "server", "pair"};
static const int jobs[NCONF] = {1, 1, 2, 2};
static char dirs[NSWEEP][256], markers[NSWEEP][96];
static int status[NSWEEP]; /* the sh's wait status: timeout's 124 is a hang */
static int sanitized;

/* The verdicts every sweep must give, whatever the hostile kernels did. */
static const struct {
    const char *kernel, *verdict, *reason;
} expected[] = {
    {"gemm.cpu.naive.f32", "QUALIFIED", NULL},
    {"gemm.bad.racy_order", "FAILED", "determinism"},
    {"gemm.bad.overrun", "FAILED", "canary"},
    {"gemm.bad.unwritten", "FAILED", "unwritten"},
    {"gemm.hostile.good", "QUALIFIED", NULL},
    {"gemm.hostile.forge", "FAILED", "bound"},
    {"gemm.hostile.leak", "QUALIFIED", NULL},
    {"gemm.hostile.chatty", "QUALIFIED", NULL},
    {"gemm.hostile.zeros2", "FAILED", "run 2"},
    {"gemm.hostile.inputs", "FAILED", "input a modified by the kernel"},
    {"gemm.hostile.hog", NULL, NULL}, /* memory_limit */
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

/* Sweep i: configuration i % NCONF, the killpg set when i >= NCONF. */
static void sweep(int i)
{
    const char *bin = getenv("QF_QUALIFY_BIN"), *plugin = getenv("QF_HOSTILE_PLUGIN");
    char suite[300], cmd[8192];
    FILE *f;
    snprintf(dirs[i], sizeof dirs[i], "/tmp/qf-t-security-%d-%d", (int)getpid(), i);
    snprintf(markers[i], sizeof markers[i], "QF_HOSTILE_MARKER=qf-t-security-%d-%d", (int)getpid(), i);
    snprintf(suite, sizeof suite, "%s.yaml", dirs[i]);
    if (!bin || !plugin || !(f = fopen(suite, "w"))) {
        status[i] = -1;
        return;
    }
    if (i >= NCONF)
        fprintf(f, "suite: hostile-killpg\n"
                   "refute: false\n"
                   "op: gemm\n"
                   "kernels: [gemm.cpu.naive.f32, gemm.hostile.good, gemm.hostile.killpg, gemm.bad.overrun]\n"
                   "dtypes: [float32]\n"
                   "shapes: {M: [5], N: [7], K: [6]}\n");
    else
        fprintf(f,
            "suite: hostile\n"
            "refute: false\n" /* these inputs alone (docs/refute.md) */
            "op: gemm\n"
            "kernels: [gemm.cpu.naive.f32, gemm.bad.racy_order, gemm.bad.overrun, gemm.bad.unwritten, "
            "gemm.hostile.good, gemm.hostile.forge, gemm.hostile.leak, gemm.hostile.killpg, "
            "gemm.hostile.chatty, gemm.hostile.zeros2, gemm.hostile.inputs%s]\n"
            "dtypes: [float32]\n"
            "shapes: {M: [5], N: [7], K: [6]}\n",
            sanitized ? "" : ", gemm.hostile.hog");
    fclose(f);
    /* A session of its own (setsid): on a runner where a kernel's
     * kill(0, SIGTERM) reaches qualify's group, it must not reach this
     * test.  `| cat` waits for every holder of the pipe; timeout turns a
     * hang into status 124. */
    snprintf(cmd, sizeof cmd,
             "setsid -w timeout -k 5 40 sh -c '( %s \"%s\" run \"%s\" --plugin \"%s\" --isolate %s --jobs %d "
             "--timeout 10 %s -o \"%s\"; echo $? > \"%s/rc\" ) 2>&1 | cat > \"%s.log\"'",
             markers[i], bin, suite, plugin, modes[i % NCONF], jobs[i % NCONF], getenv("QF_T_SECURITY_OLD") ? "" : "--kernel-memory 512M",
             dirs[i], dirs[i], dirs[i]);
    status[i] = system(cmd);
}

static json_t *load_cases(int i, json_t **root)
{
    char path[320];
    json_error_t e;
    snprintf(path, sizeof path, "%s/results.json", dirs[i]);
    *root = json_load_file(path, 0, &e);
    ck_assert_msg(*root, "%s %s jobs %d: no results.json (%s): the sweep did not finish", path, modes[i % NCONF], jobs[i % NCONF],
                  e.text);
    return json_object_get(*root, "cases");
}

static json_t *find(json_t *cases, const char *kernel)
{
    size_t k;
    json_t *c;
    json_array_foreach(cases, k, c)
    {
        const char *n = json_string_value(json_object_get(c, "kernel"));
        if (n && !strcmp(n, kernel))
            return c;
    }
    return NULL;
}

/* The verdict (and reason part) of kernel in sweep i. */
static void expect(int i, json_t *cases, const char *kernel, const char *verdict, const char *part)
{
    json_t *c = find(cases, kernel);
    const char *v, *r;
    ck_assert_msg(c, "%s jobs %d: no record of %s", modes[i], jobs[i], kernel);
    v = json_string_value(json_object_get(c, "verdict"));
    r = json_string_value(json_object_get(c, "reason"));
    ck_assert_msg(v && !strcmp(v, verdict), "%s jobs %d: %s is %s, expected %s (%s)", modes[i], jobs[i], kernel,
                  v ? v : "?", verdict, r ? r : "");
    if (part)
        ck_assert_msg(r && strstr(r, part), "%s jobs %d: %s: reason '%s' lacks '%s'", modes[i], jobs[i], kernel,
                      r ? r : "", part);
}

START_TEST(forge_records)
{
    int i = _i;
    size_t k;
    json_t *root, *cases = load_cases(i, &root);
    for (k = 0; k < NEXPECTED; k++)
        if (expected[k].verdict)
            expect(i, cases, expected[k].kernel, expected[k].verdict, expected[k].reason);
    for (k = 0; k < json_array_size(cases); k++) {
        const char *r = json_string_value(json_object_get(json_array_get(cases, k), "reason"));
        ck_assert_msg(!r || !strstr(r, "forged"), "%s jobs %d: a forged record: %s", modes[i], jobs[i], r);
    }
    json_decref(root);
}
END_TEST

START_TEST(forge_journal)
{
    int i = _i;
    char path[320], *line = NULL;
    size_t cap = 0, n = 0;
    json_t *root, *cases = load_cases(i, &root);
    FILE *f;
    snprintf(path, sizeof path, "%s/journal.jsonl", dirs[i]);
    f = fopen(path, "r");
    ck_assert_msg(f, "%s: missing", path);
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL), *c;
        const char *k = json_string_value(json_object_get(j, "kernel"));
        ck_assert_msg(j, "%s: a line that is not JSON: %.80s", path, line);
        if (k) {
            c = find(cases, k);
            ck_assert_msg(c, "%s: %s has no record in results.json", path, k);
            ck_assert_msg(json_equal(json_object_get(j, "verdict"), json_object_get(c, "verdict")),
                          "%s jobs %d: the journal says %s is %s, results.json %s", modes[i], jobs[i], k,
                          json_string_value(json_object_get(j, "verdict")),
                          json_string_value(json_object_get(c, "verdict")));
            n++;
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    ck_assert_uint_eq(n, json_array_size(cases));
    json_decref(root);
}
END_TEST

START_TEST(run2_judged)
{
    json_t *root, *cases = load_cases(_i, &root);
    expect(_i, cases, "gemm.hostile.zeros2", "FAILED", "run 2");
    json_decref(root);
}
END_TEST

START_TEST(no_leak_no_hang)
{
    int i = _i;
    DIR *d;
    struct dirent *e;
    size_t found = 0;
    int sw;
    for (sw = i; sw < NSWEEP; sw += NCONF)
        ck_assert_msg(WIFEXITED(status[sw]) && WEXITSTATUS(status[sw]) != 124,
                      "%s jobs %d: `qualify run | cat` did not return (status %d)", modes[i], jobs[i], status[sw]);
    d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        char path[300], buf[65536];
        FILE *f;
        size_t len, k;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (k = 0; k < len; k += strlen(buf + k) + 1) {
            buf[len] = '\0';
            if (!strcmp(buf + k, markers[i]) || !strcmp(buf + k, markers[i + NCONF])) {
                fprintf(stderr, "leaked: pid %s\n", e->d_name);
                found++;
                break;
            }
        }
    }
    closedir(d);
    ck_assert_msg(found == 0, "%s jobs %d: %zu process(es) of the sweep outlived qualify", modes[i], jobs[i], found);
}
END_TEST

START_TEST(signal_group)
{
    int i = _i;
    char path[320];
    FILE *f;
    int rc = -1;
    json_t *root, *cases = load_cases(i + NCONF, &root);
    snprintf(path, sizeof path, "%s/rc", dirs[i + NCONF]);
    f = fopen(path, "r");
    ck_assert_msg(f && fscanf(f, "%d", &rc) == 1, "%s jobs %d: qualify's exit status was not written", modes[i],
                  jobs[i]);
    fclose(f);
    ck_assert_msg(rc == 1, "%s jobs %d: qualify exited %d, expected 1 (some pairs FAILED)", modes[i], jobs[i], rc);
    expect(i, cases, "gemm.hostile.killpg", "CRASHED", "signal 15");
    expect(i, cases, "gemm.hostile.good", "QUALIFIED", NULL);
    expect(i, cases, "gemm.cpu.naive.f32", "QUALIFIED", NULL);
    expect(i, cases, "gemm.bad.overrun", "FAILED", "canary");
    json_decref(root);
}
END_TEST

START_TEST(memory_limit)
{
    int i = _i;
    json_t *root, *cases, *c;
    const char *v, *r;
    if (sanitized)
        return; /* the memory limit is not applied under ASan (docs/security.md) */
    cases = load_cases(i, &root);
    c = find(cases, "gemm.hostile.hog");
    ck_assert_msg(c, "no record of gemm.hostile.hog");
    v = json_string_value(json_object_get(c, "verdict"));
    r = json_string_value(json_object_get(c, "reason"));
    ck_assert_msg(v && (!strcmp(v, "CRASHED") || !strcmp(v, "FAILED")), "%s jobs %d: hog is %s (%s)", modes[i],
                  jobs[i], v ? v : "?", r ? r : "");
    ck_assert_msg(r && strstr(r, "memory limit of 512 MiB"), "%s jobs %d: hog's reason '%s' names no limit",
                  modes[i], jobs[i], r ? r : "");
    json_decref(root);
}
END_TEST

START_TEST(output_captured)
{
    int i = _i;
    char path[320], buf[1 << 16];
    size_t n;
    FILE *f;
    json_t *root, *cases = load_cases(i, &root), *c = find(cases, "gemm.hostile.chatty");
    const char *out;
    ck_assert_msg(c, "no record of gemm.hostile.chatty");
    out = json_string_value(json_object_get(c, "kernel_output"));
    ck_assert_msg(out && strstr(out, "HOSTILE-STDOUT") && strstr(out, "HOSTILE-STDERR") && strchr(out, '\033'),
                  "%s jobs %d: kernel_output '%s' lacks what the kernel wrote", modes[i], jobs[i], out ? out : "(none)");
    ck_assert_msg(json_integer_value(json_object_get(c, "kernel_output_bytes")) >= (json_int_t)strlen(out),
                  "kernel_output_bytes below the text kept");
    snprintf(path, sizeof path, "%s.log", dirs[i]);
    f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    ck_assert_msg(!memchr(buf, '\033', n) && !strstr(buf, "HOSTILE-STD"),
                  "%s jobs %d: a kernel's output reached qualify's: %s", modes[i], jobs[i], buf);
    json_decref(root);
}
END_TEST

START_TEST(inputs_modified)
{
    json_t *root, *cases = load_cases(_i, &root);
    expect(_i, cases, "gemm.hostile.inputs", "FAILED", "input a modified by the kernel");
    json_decref(root);
}
END_TEST

START_TEST(limit_options)
{
    static const char *const bad[] = {"--kernel-memory 12Q", "--kernel-memory -1", "--kernel-cpu x",
                                      "--kernel-procs 1G", "--kernel-fsize ''"};
    const char *bin = getenv("QF_QUALIFY_BIN");
    char cmd[1024], out[4096];
    size_t k, n;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        FILE *p;
        int st;
        snprintf(cmd, sizeof cmd, "'%s' run %s 2>&1", bin, bad[k]);
        p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        st = pclose(p);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d, expected exit 2 (%s)", bad[k], st, out);
        ck_assert_msg(strstr(out, "--kernel-"), "%s: the message does not name the option: %s", bad[k], out);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("security/isolation");
    TCase *tc = tcase_create("hostile");
    const char *san = getenv("QF_SANITIZED");
    int i, rc;
    char cmd[8192];
    if (!getenv("QF_QUALIFY_BIN") || !getenv("QF_HOSTILE_PLUGIN")) {
        fprintf(stderr, "QF_QUALIFY_BIN and QF_HOSTILE_PLUGIN come from CTest\n");
        return EXIT_FAILURE;
    }
    sanitized = san && (!strcmp(san, "ON") || !strcmp(san, "1") || !strcmp(san, "TRUE"));
    for (i = 0; i < NSWEEP; i++)
        sweep(i);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, forge_records, 0, NCONF);
    tcase_add_loop_test(tc, forge_journal, 0, NCONF);
    tcase_add_loop_test(tc, run2_judged, 0, NCONF);
    tcase_add_loop_test(tc, no_leak_no_hang, 0, NCONF);
    tcase_add_loop_test(tc, signal_group, 0, NCONF);
    tcase_add_loop_test(tc, memory_limit, 0, NCONF);
    tcase_add_loop_test(tc, output_captured, 0, NCONF);
    tcase_add_loop_test(tc, inputs_modified, 0, NCONF);
    tcase_add_test(tc, limit_options);
    suite_add_tcase(s, tc);
    rc = qf_test_run(s);
    for (i = 0; i < NSWEEP; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf \"%s\" \"%s.yaml\" \"%s.log\"", dirs[i], dirs[i], dirs[i]);
        if (system(cmd) != 0)
            rc = EXIT_FAILURE;
    }
    return rc;
}
