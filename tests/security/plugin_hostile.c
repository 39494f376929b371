/* plugin_hostile.c: a kernel plugin whose GEMM kernels attack the runner
 * instead of computing (tests/security/t-isolation*.c, docs/security.md).
 * Each is a float32 GEMM on row-major operands (the tests' suites ask for
 * nothing else):
 *   good     computes right (the control);
 *   forge    writes 12345 everywhere, then, from itself and from a
 *            double-forked grandchild that lives on, rewrites every result
 *            record it finds in any shared mapping it holds to QUALIFIED
 *            and every "FAILED" in any regular file open on one of its
 *            descriptors (the journal) to "QUALIFIED" (D1, D1b, D2);
 *   leak     computes right and leaves a double-forked `sleep 25` (D4);
 *   killpg   sends SIGTERM to its process group, then computes right;
 *   hog      leaks 1 GiB per call, touching every page;
 *   chatty   writes ESC sequences and newlines to stdout and stderr, then
 *            computes right;
 *   zeros2   right in odd calls, zeros in even ones (run 2 of a pair),
 *            and claims no determinism (D3);
 *   inputs   computes right, then adds 1 to a[0] (its input a);
 *   shmscan  computes right; the first call of the sweep (a token file in
 *            $QF_SHMSCAN_DIR) first watches /dev/shm for up to 2 s for an
 *            object of this qualify run (/qf-w-PID-N, PID a child of an
 *            ancestor of this process: another job slot's pair) and prints
 *            what it saw and could open (tests/security/t-shm, issue 17).
 * Processes it starts carry QF_HOSTILE_MARKER from the environment, so a
 * test finds any that outlived qualify. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile_paths.h"
#include "qf_kernel.h"
#include "qf_result.h"

enum { GOOD, FORGE, LEAK, KILLPG, HOG, CHATTY, ZEROS2, INPUTS, SHMSCAN, N_KERNELS };

static const char *const names[N_KERNELS] = {"gemm.hostile.good",   "gemm.hostile.forge",  "gemm.hostile.leak",
                                             "gemm.hostile.killpg", "gemm.hostile.hog",    "gemm.hostile.chatty",
                                             "gemm.hostile.zeros2", "gemm.hostile.inputs",
                                             "gemm.hostile.shmscan"};

/* A runner's result slot as it was laid out ({int done; qf_result r;}):
 * a record is recognised by its kernel name. */
typedef struct slot_view {
    volatile int done;
    qf_result r;
} slot_view;

/* Rewrite every record found in [lo, hi) to QUALIFIED. */
static void forge_range(unsigned char *lo, unsigned char *hi)
{
    unsigned char *p;
    if (hi - lo < (ptrdiff_t)sizeof(slot_view))
        return;
    for (p = lo; p + sizeof(slot_view) <= hi; p += 8) {
        slot_view *s = (slot_view *)(void *)p;
        if (strncmp(s->r.kernel, "gemm.", 5) || !memchr(s->r.kernel, 0, sizeof s->r.kernel))
            continue;
        if (s->r.verdict != QF_VERDICT_QUALIFIED) {
            s->r.verdict = QF_VERDICT_QUALIFIED;
            snprintf(s->r.reason, sizeof s->r.reason, "forged by gemm.hostile.forge");
        }
    }
}

/* Every shared mapping this process holds. */
static void forge_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[3] == 's' && perms[1] == 'w')
            forge_range((unsigned char *)lo, (unsigned char *)hi);
    }
    fclose(f);
}

/* Every regular file open on a descriptor: "FAILED" becomes "QUALIFIED"
 * (the file is rewritten whole, so the lengths need not match). */
static void forge_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        struct stat st;
        char *buf, *out;
        size_t i, o = 0;
        ssize_t n;
        if (fd < 3 || fd == dirfd(d) || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
            st.st_size > (1 << 24))
            continue;
        buf = malloc((size_t)st.st_size);
        out = malloc((size_t)st.st_size * 2);
        if (buf && out && (n = pread(fd, buf, (size_t)st.st_size, 0)) == st.st_size) {
            for (i = 0; i < (size_t)n; i++) {
                if (i + 8 <= (size_t)n && !memcmp(buf + i, "\"FAILED\"", 8)) {
                    memcpy(out + o, "\"QUALIFIED\"", 11);
                    o += 11;
                    i += 7;
                } else {
                    out[o++] = buf[i];
                }
            }
            if (o != (size_t)n && pwrite(fd, out, o, 0) == (ssize_t)o)
                (void)!ftruncate(fd, (off_t)o);
        }
        free(buf);
        free(out);
    }
    closedir(d);
}

/* A grandchild that outlives the kernel: a session of its own, so that a
 * process-group kill does not reach it. */
static pid_t double_fork(void)
{
    pid_t p = fork();
    if (p != 0) {
        if (p > 0)
            waitpid(p, NULL, 0);
        return 1; /* the kernel */
    }
    setsid();
    if (fork() != 0)
        _exit(0);
    return 0; /* the grandchild */
}

static void gemm(const qf_kernel_call *call, float fill, int use_fill)
{
    const qf_op_gemm *g = &call->op->u.gemm;
    const float *a = call->in[0].data, *b = call->in[1].data;
    float *d = call->out[0].data;
    size_t i, j, l, m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float s = 0.0f;
            for (l = 0; l < k; l++)
                s = s + a[i * k + l] * b[l * n + j];
            d[i * n + j] = use_fill ? fill : s;
        }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void shm_scan(void)
{
    const char *dir = getenv("QF_SHMSCAN_DIR");
    char path[512];
    pid_t anc[4];
    long scans = 0;
    int fd, a, seen = 0;
    double t0 = now_s();
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/token", dir);
    if ((fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600)) < 0)
        return; /* another call scans */
    close(fd);
    anc[0] = getppid();
    for (a = 1; a < 4; a++)
        anc[a] = anc[a - 1] > 1 ? hp_parent(anc[a - 1]) : 0;
    while (!seen && now_s() - t0 < 2.0) {
        DIR *d = opendir("/dev/shm");
        struct dirent *e;
        scans++;
        while (d && (e = readdir(d))) {
            pid_t pid, pp;
            if (strncmp(e->d_name, "qf-", 3))
                continue;
            pid = (pid_t)strtol(e->d_name + (strncmp(e->d_name, "qf-w-", 5) ? 3 : 5), NULL, 10);
            pp = pid > 0 ? hp_parent(pid) : 0;
            /* In the sandbox's PID namespace no ancestor is visible (the
             * parent is the namespace's init): any object of a worker. */
            for (a = 0; a < 4 && anc[0] > 1; a++)
                if (anc[a] > 1 && (pp == anc[a] || pid == anc[a]))
                    break;
            if (a == 4 || (anc[0] <= 1 && strncmp(e->d_name, "qf-w-", 5)))
                continue; /* another run's (another test on this machine) */
            snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
            fd = open(path, O_RDWR);
            printf("shmscan: saw %s%s\n", path, fd >= 0 ? " and opened it read-write" : "");
            if (fd >= 0)
                close(fd);
            seen = 1;
        }
        if (d)
            closedir(d);
    }
    printf("shmscan: scanned /dev/shm %ld times in %.2f s\n", scans, now_s() - t0);
    fflush(stdout);
}

static qf_status hostile_run(void *ctx, const qf_kernel_call *call)
{
    static unsigned calls;
    int what = (int)(intptr_t)ctx;
    calls++;
    switch (what) {
    case FORGE:
        gemm(call, 12345.0f, 1);
        forge_maps();
        forge_fds();
        if (double_fork() == 0) {
            int t;
            for (t = 0; t < 20000; t++) { /* 20 s: past the pair, into the next ones */
                forge_maps();
                if (t % 50 == 0)
                    forge_fds();
                usleep(1000);
            }
            _exit(0);
        }
        return QF_OK;
    case LEAK:
        if (double_fork() == 0) {
            execl("/bin/sleep", "sleep", "25", (char *)NULL);
            _exit(127);
        }
        break;
    case KILLPG: kill(0, SIGTERM); break;
    case SHMSCAN: shm_scan(); break;
    case HOG: {
        unsigned char *p = malloc((size_t)1 << 30);
        size_t i;
        for (i = 0; i < ((size_t)1 << 30); i += 4096)
            p[i] = 1; /* no check: a NULL from a memory limit crashes here */
        break;
    }
    case CHATTY:
        printf("\033[2J\033[31mHOSTILE-STDOUT\r\nsecond line\n");
        fflush(stdout);
        fprintf(stderr, "\033]0;title\007HOSTILE-STDERR\n");
        break;
    case ZEROS2:
        if (calls % 2 == 0) {
            gemm(call, 0.0f, 1);
            return QF_OK;
        }
        break;
    default: break;
    }
    gemm(call, 0, 0);
    if (what == INPUTS)
        ((float *)(uintptr_t)call->in[0].data)[0] += 1.0f;
    return QF_OK;
}

static qf_dtype_tuple dtypes[2];

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(dtypes, 0, sizeof dtypes);
    for (i = 0; i < 2; i++) {
        dtypes[i].name = "f32";
        dtypes[i].in[0] = dtypes[i].in[1] = dtypes[i].in[2] = QF_FLOAT32;
        dtypes[i].out[0] = QF_FLOAT32;
        dtypes[i].arith = host->arith_claim_default(); /* float32, sequential, RNE */
    }
    dtypes[1].arith.deterministic = 0; /* zeros2: its runs may differ */
    for (i = 0; i < N_KERNELS; i++) {
        qf_kernel kern;
        qf_status s;
        memset(&kern, 0, sizeof kern);
        kern.abi_version = QF_KERNEL_ABI_VERSION;
        kern.struct_size = sizeof kern;
        kern.name = names[i];
        kern.op = QF_OP_GEMM;
        kern.kind = i == GOOD || i == SHMSCAN ? QF_KERNEL_OPTIMIZED : QF_KERNEL_KNOWN_BAD;
        kern.description = "tests/security hostile kernel";
        kern.backend = "cpu";
        kern.archs = "cpu";
        kern.dtypes = &dtypes[i == ZEROS2];
        kern.n_dtypes = 1;
        kern.run = hostile_run;
        kern.user = (void *)(intptr_t)i;
        if ((s = host->add(reg, &kern)) != QF_OK)
            return s;
    }
    return QF_OK;
}
