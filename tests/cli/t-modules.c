/* t-modules.c: the GPU back ends are modules that qualify maps only when
 * a GPU kernel is to run (docs/gpu.md "How the back ends are loaded"):
 *
 * - `qualify --version` and `qualify list kernels` stay under 20 MB resident
 *   (ru_maxrss of the child; with CUDA and HIP linked in they were 226 MB),
 *   and the run-time linker's own log (LD_DEBUG=files) shows that they
 *   never load libqualify_cuda.so, libqualify_hip.so or a vendor library;
 * - in a build with CUDA or HIP: the GPU kernels are listed anyway; a sweep
 *   of one GPU and one CPU kernel without QF_MODULE_PATH finds the module
 *   next to the program (the GPU case's reason comes from the runtime, not
 *   from the loader), and the qualify process itself does not load it when
 *   there is no device (only the probe's child does);
 * - a broken module (garbage under the module's name in QF_MODULE_PATH) is
 *   a reason naming the .so and dlerror()'s text, said on stderr too, and
 *   the CPU kernel of the same sweep still QUALIFIES; a FIFO there is
 *   refused (not a regular file) instead of blocking dlopen.
 * Needs QF_QUALIFY_BIN (CTest); the RSS bound is skipped under sanitizers.
 */
#define _DEFAULT_SOURCE /* wait4 */
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

static const char *bin;
static char dir[512];

/* Peak resident set of `qualify ARGV...` in KiB (stdout to /dev/null). */
static long peak_rss_kb(char *const argv[])
{
    struct rusage ru;
    int st = 0;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execv(bin, argv);
        _exit(127);
    }
    ck_assert_int_eq(wait4(pid, &st, 0, &ru), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s: status %d", bin, argv[1], st);
    return ru.ru_maxrss;
}

START_TEST(test_small_resident_set)
{
    char *version[] = {(char *)bin, "--version", NULL};
    char *list[] = {(char *)bin, "list", "kernels", NULL};
    long v = peak_rss_kb(version), l = peak_rss_kb(list);
    printf("modules: qualify --version %ld KiB, qualify list kernels %ld KiB resident at most\n", v, l);
    if (qf_test_sanitized())
        return; /* the sanitizers' shadow memory is not qualify's */
    ck_assert_msg(v < 20 * 1024, "qualify --version: %ld KiB resident", v);
    ck_assert_msg(l < 20 * 1024, "qualify list kernels: %ld KiB resident", l);
}
END_TEST

/* Run a shell command, its stdout and stderr into dir/NAME.out/.err;
 * returns the exit status. */
static int sh(const char *name, const char *cmd)
{
    char full[8192];
    int st;
    snprintf(full, sizeof full, "cd '%s' && (%s) >%s.out 2>%s.err", dir, cmd, name, name);
    st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return qf_test_slurp(path, NULL);
}

/* Does an LD_DEBUG=files log show PID (0: any process) loading a GPU
 * module or vendor library?  The log's lines start with the PID. */
static const char *gpu_object_in(const char *log, long pid)
{
    static const char *const names[] = {"libqualify_cuda.so", "libqualify_hip.so", "libcudart", "libcublas",
                                        "libamdhip64"};
    const char *line = log;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line), i;
        long p = strtol(line, NULL, 10);
        if (pid == 0 || p == pid)
            for (i = 0; i < sizeof names / sizeof names[0]; i++) {
                const char *hit = strstr(line, names[i]);
                if (hit && hit < line + n && strstr(line, "file="))
                    return names[i];
            }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

START_TEST(test_list_maps_no_module)
{
    char cmd[2048];
    char *log;
    const char *hit;
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files '%s' list kernels", bin);
    ck_assert_int_eq(sh("ldlist", cmd), 0);
    log = slurp("ldlist.err");
    ck_assert_msg(strstr(log, "file=") != NULL, "LD_DEBUG gave no log: %.300s", log);
    hit = gpu_object_in(log, 0);
    ck_assert_msg(hit == NULL, "qualify list kernels loaded %s", hit);
    free(log);
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files '%s' --version", bin);
    ck_assert_int_eq(sh("ldversion", cmd), 0);
    log = slurp("ldversion.err");
    hit = gpu_object_in(log, 0);
    ck_assert_msg(hit == NULL, "qualify --version loaded %s", hit);
    free(log);
}
END_TEST

/* The GPU back ends this qualify has kernels of: the kernel to sweep and
 * the CPU kernel of the same op beside it. */
typedef struct gpu_case {
    const char *backend, *kernel, *op, *cpu_kernel, *dtype, *shape;
} gpu_case;

static const gpu_case cases[] = {
    {"cuda", "gemm.cublas.f32", "gemm", "gemm.cpu.naive.f32", "float32", "{M: 16, N: 16, K: 16}"},
    {"hip", "softmax.hip.f32", "softmax", "softmax.cpu.f32", "float32", "{rows: 2, cols: 64}"},
};

static int listed(const char *kernel)
{
    char cmd[1024], *out;
    int yes;
    snprintf(cmd, sizeof cmd, "'%s' list kernels", bin);
    ck_assert_int_eq(sh("list", cmd), 0);
    out = slurp("list.out");
    yes = strstr(out, kernel) != NULL;
    free(out);
    return yes;
}

/* Sweep c's GPU kernel and its CPU neighbour with ENV (a shell prefix);
 * the GPU case's verdict and reason into verdict/reason; returns the
 * CPU case's verdict (static storage). */
static const char *sweep(const gpu_case *c, const char *env, const char *name, char *verdict, char *reason,
                         size_t reason_size, long *qualify_pid)
{
    static char cpu_verdict[64];
    char suite[1024], cmd[4096], file[600], *pidtext;
    json_t *res, *arr, *r;
    json_error_t e;
    size_t i;
    snprintf(suite, sizeof suite,
             "suite: modules\nrefute: false\ninputs: [normal]\nseeds: 1\ngroups:\n  - name: g\n    op: %s\n    kernels: "
             "[%s, %s]\n"
             "    dtypes: [%s]\n    shapes: [%s]\n",
             c->op, c->kernel, c->cpu_kernel, c->dtype, c->shape);
    qf_test_write_text(dir, "s.yaml", suite);
    /* the shell's own pid is the qualify process's (exec) */
    snprintf(cmd, sizeof cmd, "echo $$ > %s.pid; exec env %s '%s' run s.yaml -q -j 1 -o %s", name, env, bin,
             name);
    ck_assert_int_eq(sh(name, cmd), 0);
    pidtext = slurp(strcat(strcpy(file, name), ".pid"));
    *qualify_pid = strtol(pidtext, NULL, 10);
    free(pidtext);
    snprintf(file, sizeof file, "%s/%s/results.json", dir, name);
    res = json_load_file(file, 0, &e);
    ck_assert_msg(res != NULL, "%s: %s", file, e.text);
    arr = json_object_get(res, "cases");
    ck_assert_msg(json_is_array(arr) && json_array_size(arr) == 2, "%s: two results expected", file);
    verdict[0] = reason[0] = cpu_verdict[0] = '\0';
    json_array_foreach(arr, i, r)
    {
        const char *k = json_string_value(json_object_get(r, "kernel"));
        const char *v = json_string_value(json_object_get(r, "verdict"));
        const char *why = json_string_value(json_object_get(r, "reason"));
        ck_assert_ptr_nonnull(k);
        ck_assert_ptr_nonnull(v);
        if (!strcmp(k, c->kernel)) {
            snprintf(verdict, 64, "%s", v);
            snprintf(reason, reason_size, "%s", why ? why : "");
        } else
            snprintf(cpu_verdict, sizeof cpu_verdict, "%s", v);
    }
    json_decref(res);
    return cpu_verdict;
}

START_TEST(test_gpu_module_found_and_lazy)
{
    size_t i;
    int any = 0;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gpu_case *c = &cases[i];
        char verdict[64], reason[2048], *log;
        long pid;
        const char *cpu, *hit;
        if (!listed(c->kernel))
            continue;
        any = 1;
        /* found beside the program, without QF_MODULE_PATH */
        cpu = sweep(c, "-u QF_MODULE_PATH LD_DEBUG=files", "found", verdict, reason, sizeof reason, &pid);
        printf("modules: %s without QF_MODULE_PATH: %s (%s)\n", c->kernel, verdict, reason);
        ck_assert_str_eq(cpu, "QUALIFIED");
        ck_assert_msg(!strstr(reason, "module"), "%s: the module was not found: %s", c->kernel, reason);
        log = slurp("found.err");
        /* someone loaded it (the probe's child) ... */
        ck_assert_msg(strstr(log, "libqualify_") != NULL, "%s: the module was never loaded", c->kernel);
        /* ... and without a device, never the qualify process itself */
        if (!strcmp(verdict, "UNSUPPORTED") && strstr(reason, "device")) {
            hit = gpu_object_in(log, pid);
            ck_assert_msg(hit == NULL, "%s: qualify (pid %ld) loaded %s without a device", c->kernel, pid,
                          hit);
        }
        free(log);
    }
    if (!any)
        printf("modules: no GPU back end built: nothing to sweep\n");
}
END_TEST

START_TEST(test_broken_module)
{
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gpu_case *c = &cases[i];
        char verdict[64], reason[2048], so[700], env[800], *err;
        const char *cpu, *dl;
        long pid;
        void *h;
        if (!listed(c->kernel))
            continue;
        snprintf(so, sizeof so, "%s/bad/libqualify_%s.so", dir, c->backend);
        ck_assert_int_eq(sh("mkbad", "mkdir -p bad"), 0);
        qf_test_write_file(so, "", 0, "this is not an ELF object\n");
        /* what dlopen says about that file, as the reason must */
        h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        ck_assert_ptr_null(h);
        dl = dlerror();
        ck_assert_ptr_nonnull(dl);
        snprintf(env, sizeof env, "QF_MODULE_PATH='%s/bad'", dir);
        cpu = sweep(c, env, "broken", verdict, reason, sizeof reason, &pid);
        printf("modules: %s with a broken module: %s (%s)\n", c->kernel, verdict, reason);
        ck_assert_str_eq(verdict, "UNSUPPORTED");
        ck_assert_msg(strstr(reason, so) && strstr(reason, dl), "reason lacks %s or '%s': %s", so, dl,
                      reason);
        ck_assert_str_eq(cpu, "QUALIFIED");
        err = slurp("broken.err");
        ck_assert_msg(strstr(err, so) != NULL, "stderr does not name %s: %s", so, err);
        free(err);
        /* A FIFO under the module's name is refused before dlopen would
         * block reading it (docs/security.md). */
        ck_assert_int_eq(unlink(so), 0);
        ck_assert_int_eq(mkfifo(so, 0600), 0);
        cpu = sweep(c, env, "fifo", verdict, reason, sizeof reason, &pid);
        printf("modules: %s with a FIFO as module: %s (%s)\n", c->kernel, verdict, reason);
        ck_assert_str_eq(verdict, "UNSUPPORTED");
        ck_assert_msg(strstr(reason, so) && strstr(reason, "not a regular file"), "reason: %s", reason);
        ck_assert_str_eq(cpu, "QUALIFIED");
    }
}
END_TEST

static void setup(void)
{
    qf_test_mkdtemp(dir, sizeof dir, "qf-modules");
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

int main(void)
{
    Suite *s = suite_create("cli/modules");
    TCase *tc = tcase_create("modules");
    bin = getenv("QF_QUALIFY_BIN");
    if (!bin || !*bin) {
        printf("SKIP cli/modules: QF_QUALIFY_BIN is not set\n");
        return QF_TEST_SKIP;
    }
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_small_resident_set);
    tcase_add_test(tc, test_list_maps_no_module);
    tcase_add_test(tc, test_gpu_module_found_and_lazy);
    tcase_add_test(tc, test_broken_module);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
