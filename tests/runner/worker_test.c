/* worker_test.c: a kernel worker (docs/workers.md) for tests/runner/t-worker
 * and bench/bench_worker.  It serves float32 GEMM kernels that differ in
 * what they do on `run`:
 *
 *   gemm.w.good      computes d = alpha op(a) op(b) + beta c (binary64 sums,
 *                    one rounding: within any float32 claim)
 *   gemm.w.segv      dies of SIGSEGV
 *   gemm.w.hang      never answers
 *   gemm.w.exit      exits with status 3 (Python's os._exit(3))
 *   gemm.w.garbage   writes a line that is not JSON
 *   gemm.w.overrun   computes d and writes one element past its end
 *   gemm.w.noisy     computes d as good does, after writing a line to its
 *                    stderr with ESC sequences, a CR, a NUL and a byte
 *                    that is not UTF-8 (the pair's record must hold it)
 *   gemm.w.biased    only when QF_TEST_WORKER_BIAS is set in the worker's
 *                    environment: computes d as good does, then adds that
 *                    number to element (1, 2) (to d[0] when d is smaller):
 *                    a kernel whose failure needs the environment
 *                    (tests/runner/t-artifacts, reproducers carrying it)
 *
 * usage: worker_test [badversion|named|chatty|flood]  (badversion: a hello of
 * version 99; named: a worker of before the memfd, whose hello does not
 * declare "shm_fd", so its runs name a /dev/shm object; chatty: writes a
 * line to stderr before its hello and one after bye, outside any run;
 * flood: writes $QF_TEST_FLOOD_FIRST bytes of numbered lines to stderr
 * before its hello (the first with a bidi control in it),
 * $QF_TEST_FLOOD_GAP bytes after each answer (between runs, or in the
 * next run's record: the filing is by time) and $QF_TEST_FLOOD_BYE bytes
 * at bye: the relay's caps, docs/workers.md "Standard error").  Otherwise, when the host
 * says QUALIFY_WORKER_SHM_FD, the hello declares "shm_fd": true and runs
 * come in that descriptor (docs/workers.md).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../security/hostile_paths.h"

static const char *const kernels[] = {"good", "segv", "hang", "exit", "garbage", "overrun", "noisy", "biased"};
/* `worker_test hostile` (tests/security/t-sandbox, issue 26): wrong when it
 * says done and right 20 ms after (late), right and then zeros (changes),
 * 12345 and an attack on qualify's files by path (bypath), 12345 and a
 * process left after bye that rewrites the reports (afterbye). */
static const char *const hostile[] = {"good", "late", "changes", "bypath", "afterbye"}; /* changes: by hand */
static int hostile_mode;

/* What gemm.w.noisy writes to stderr during each run (t-worker checks it
 * in the record, with the NUL and the 0xff byte as '?'). */
static const char noisy_text[] = "noisy: \x1b[31mred\x1b[0m\r\0\xff end\n";

/* flood: $var bytes of 100-byte lines "flood gap G line L ..." to stderr. */
static void flood(const char *gap, const char *var)
{
    const char *v = getenv(var);
    long bytes = v ? atol(v) : 0, line;
    char buf[128];
    for (line = 0; line * 100 < bytes; line++) {
        int n = snprintf(buf, sizeof buf, "flood gap %s line %ld%s", gap, line,
                         !strcmp(gap, "0") && line == 0 ? " rlo\xe2\x80\xae" "evil" : "");
        memset(buf + n, '.', 99 - (size_t)n);
        buf[99] = '\n';
        fwrite(buf, 1, 100, stderr);
    }
    fflush(stderr);
}

static void hello(int version, int takes_fd)
{
    size_t i, n = hostile_mode ? sizeof hostile / sizeof hostile[0]
                               : sizeof kernels / sizeof kernels[0] - !getenv("QF_TEST_WORKER_BIAS");
    printf("{\"qualify_worker\": %d, \"name\": \"testw\", %s\"kernels\": [", version,
           takes_fd ? "\"shm_fd\": true, " : "");
    for (i = 0; i < n; i++)
        printf(
            "%s{\"name\": \"gemm.w.%s\", \"op\": \"gemm\", \"kind\": \"optimized\", "
            "\"description\": \"test worker\", \"archs\": \"cpu\", "
            "\"dtypes\": [{\"name\": \"f32\", \"in\": [\"f32\", \"f32\", \"f32\"], \"out\": [\"float32\"], "
            "\"claim\": {\"acc_format\": \"float32\", \"sum_order\": \"any\"}}], "
            "\"limits\": {\"M\": {\"min\": 1, \"max\": 4096, \"align\": 1}}, \"deterministic\": true}",
            i ? ", " : "", hostile_mode ? hostile[i] : kernels[i]);
    printf("]}\n");
    fflush(stdout);
}

/* The tensor of slot name in list, or NULL. */
static json_t *slot(json_t *list, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t)
    {
        const char *s = json_string_value(json_object_get(t, "slot"));
        if (s && !strcmp(s, name))
            return t;
    }
    return NULL;
}

/* Element (r, c) of a 2-d (or the last two dims of a 3-d) tensor. */
static float at(const unsigned char *base, json_t *t, size_t r, size_t c)
{
    json_t *st = json_object_get(t, "strides");
    size_t nd = json_array_size(st);
    long long s0 = json_integer_value(json_array_get(st, nd - 2)),
              s1 = json_integer_value(json_array_get(st, nd - 1));
    const float *p = (const float *)(base + json_integer_value(json_object_get(t, "offset")));
    return p[(long long)r * s0 + (long long)c * s1];
}

static void gemm(json_t *msg, unsigned char *base, int overrun, double bias)
{
    json_t *op = json_object_get(msg, "op"), *in = json_object_get(msg, "in"),
           *out = json_object_get(msg, "out");
    json_t *a = slot(in, "a"), *b = slot(in, "b"), *c = slot(in, "c"), *d = slot(out, "d");
    size_t m = (size_t)json_integer_value(json_object_get(op, "M"));
    size_t n = (size_t)json_integer_value(json_object_get(op, "N"));
    size_t k = (size_t)json_integer_value(json_object_get(op, "K"));
    int ta = json_is_true(json_object_get(op, "trans_a")), tb = json_is_true(json_object_get(op, "trans_b"));
    double alpha = json_number_value(json_object_get(op, "alpha"));
    double beta = json_number_value(json_object_get(op, "beta"));
    json_t *ds = json_object_get(d, "strides");
    long long d0 = json_integer_value(json_array_get(ds, json_array_size(ds) - 2));
    long long d1 = json_integer_value(json_array_get(ds, json_array_size(ds) - 1));
    float *dp = (float *)(base + json_integer_value(json_object_get(d, "offset")));
    size_t i, j, p;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0;
            for (p = 0; p < k; p++)
                s += (double)(ta ? at(base, a, p, i) : at(base, a, i, p)) *
                     (double)(tb ? at(base, b, j, p) : at(base, b, p, j));
            s *= alpha;
            if (c && beta != 0)
                s += beta * (double)at(base, c, i, j);
            dp[(long long)i * d0 + (long long)j * d1] = (float)s;
        }
    if (overrun)
        dp[m * n] = 1.0f;
    if (bias != 0)
        dp[m > 1 && n > 2 ? d0 + 2 * d1 : 0] += (float)bias;
}

/* The hostile kernels' run after d was computed right: says done itself. */
static void hostile_run(json_t *msg, unsigned char *base, const char *kern, long long id)
{
    json_t *d = slot(json_object_get(msg, "out"), "d"), *op = json_object_get(msg, "op");
    size_t n = (size_t)json_integer_value(json_object_get(op, "M")) * (size_t)json_integer_value(json_object_get(op, "N"));
    float *dp = (float *)(base + json_integer_value(json_object_get(d, "offset"))), *right = malloc(n * sizeof *dp);
    size_t i;
    if (right)
        memcpy(right, dp, n * sizeof *dp);
    if (!strcmp(kern, "late"))
        memset(dp, 0, n * sizeof *dp);
    if (!strcmp(kern, "bypath") || !strcmp(kern, "afterbye"))
        for (i = 0; i < n; i++)
            dp[i] = 12345.0f;
    if (!strcmp(kern, "bypath"))
        hp_attack();
    printf("{\"done\": %lld, \"status\": \"ok\"}\n", id);
    fflush(stdout);
    if (!strcmp(kern, "late") && right) {
        usleep(20000);
        memcpy(dp, right, n * sizeof *dp);
    }
    if (!strcmp(kern, "changes"))
        memset(dp, 0, n * sizeof *dp);
    free(right);
}

int main(int argc, char **argv)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    const char *fdv = getenv("QUALIFY_WORKER_SHM_FD");
    int named = argc > 1 && !strcmp(argv[1], "named"), mem = fdv && !named ? atoi(fdv) : -1;
    int chatty = argc > 1 && !strcmp(argv[1], "chatty"), floods = argc > 1 && !strcmp(argv[1], "flood");
    hostile_mode = argc > 1 && !strcmp(argv[1], "hostile");
    hp_out = stderr; /* stdout is the protocol */
    if (chatty) { /* outside any run: relayed with the command as name */
        fputs("testw: starting \x1b[1mup\r\n", stderr);
        fflush(stderr);
    }
    if (floods)
        flood("0", "QF_TEST_FLOOD_FIRST");
    if (mem >= 0) /* another process of the user cannot open it as /proc/PID/fd/3 (prctl(2)) */
        prctl(PR_SET_DUMPABLE, 0);
    hello(argc > 1 && !strcmp(argv[1], "badversion") ? 99 : 1, mem >= 0);
    while ((len = getline(&line, &cap, stdin)) > 0) {
        json_t *msg = json_loads(line, 0, NULL);
        const char *kern = json_string_value(json_object_get(msg, "kernel"));
        const char *name = json_string_value(json_object_get(msg, "shm"));
        size_t bytes = (size_t)json_integer_value(json_object_get(msg, "shm_bytes"));
        long long id = json_integer_value(json_object_get(msg, "run"));
        unsigned char *base;
        int fd;
        json_t *sfd = json_object_get(msg, "shm_fd");
        if (!msg || json_object_get(msg, "bye") || !kern || (!name && !sfd)) {
            if (hostile_mode && fork() == 0) { /* afterbye: a process that outlives the worker */
                setsid();
                hp_linger();
                _exit(0);
            }
            if (chatty) {
                fputs("testw: bye \x1b[0m\n", stderr);
                fflush(stderr);
            }
            if (floods)
                flood("bye", "QF_TEST_FLOOD_BYE");
            json_decref(msg);
            break;
        }
        kern += strlen("gemm.w.");
        if (!strcmp(kern, "segv")) {
            signal(SIGSEGV, SIG_DFL); /* not a sanitizer's handler: the signal itself */
            raise(SIGSEGV);
        }
        if (!strcmp(kern, "hang"))
            for (;;)
                pause();
        if (!strcmp(kern, "exit")) {
            /* Last words without a newline, with an ESC sequence and a CR:
             * the host's relay must still pass them on, prefixed, with no
             * control character of ours reaching its terminal
             * (docs/workers.md, docs/security.md). */
            fputs("testw: giving up, \x1b[2Jstatus 3\r", stderr);
            fflush(stderr);
            _exit(3);
        }
        if (!strcmp(kern, "noisy")) {
            /* Flushed before done: the bytes are in the pipe before the
             * answer (docs/workers.md "Standard error"). */
            fwrite(noisy_text, 1, sizeof noisy_text - 1, stderr);
            fflush(stderr);
        }
        if (!strcmp(kern, "garbage")) {
            printf("this is not JSON at all\n");
            fflush(stdout);
            json_decref(msg);
            continue;
        }
        if (sfd) /* the descriptor the host handed on: no name, nothing to open */
            fd = json_integer_value(sfd) == mem ? mem : -1;
        else
            fd = shm_open(name, O_RDWR, 0);
        base = fd < 0 ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fd >= 0 && !sfd)
            close(fd);
        if (base == MAP_FAILED) {
            printf("{\"done\": %lld, \"status\": \"error\", \"msg\": \"cannot map %s\"}\n", id,
                   name ? name : "the shm_fd");
        } else {
            const char *b = getenv("QF_TEST_WORKER_BIAS");
            gemm(msg, base, !strcmp(kern, "overrun"), !strcmp(kern, "biased") && b ? atof(b) : 0);
            if (hostile_mode)
                hostile_run(msg, base, kern, id);
            else
                printf("{\"done\": %lld, \"status\": \"ok\"}\n", id);
            munmap(base, bytes);
        }
        fflush(stdout);
        if (floods) /* after the answer: between this run and the next */
            flood("n", "QF_TEST_FLOOD_GAP");
        json_decref(msg);
    }
    free(line);
    return 0;
}
