/* plugin_sandbox.c: kernels that attack qualify by name rather than through
 * what they inherit (issue 26; tests/security/t-sandbox.c,
 * docs/security.md "The sandbox").  Each is a float32 GEMM on row-major
 * operands; every one but shmem and disk writes 12345 everywhere, so that
 * a record that says QUALIFIED for it is a forgery:
 *   bypath  rewrites the journal, results.json by path, plants a FIFO, a
 *           symlink and a file in the output directory, and writes a file
 *           outside it (hostile_paths.h);
 *   linger  leaves a thread (and a double-forked process) that waits for
 *           results.json and rewrites it and junit.xml as all passing;
 *   stop    sends SIGSTOP to every ancestor that is a qualify process;
 *   shmem   takes 512 MiB as shared anonymous memory, a memfd and a
 *           /dev/shm file (none counted by RLIMIT_DATA): computes right
 *           when it got any of them, else fails;
 *   disk    writes 8 MiB files into $TMPDIR up to 2 GiB, then computes
 *           right. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile_paths.h"
#include "qf_kernel.h"

enum { BYPATH, LINGER, STOP, SHMEM, DISK, N_KERNELS };

static const char *const names[N_KERNELS] = {"gemm.sbx.bypath", "gemm.sbx.linger", "gemm.sbx.stop",
                                             "gemm.sbx.shmem", "gemm.sbx.disk"};

static void gemm(const qf_kernel_call *call, int fill)
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
            d[i * n + j] = fill ? 12345.0f : s;
        }
}

static void *linger_thread(void *arg)
{
    (void)arg;
    hp_linger();
    return NULL;
}

static void linger(void)
{
    static int started;
    pthread_t t;
    pid_t p;
    if (started++)
        return;
    if (!pthread_create(&t, NULL, linger_thread, NULL))
        pthread_detach(t);
    p = fork();
    if (p == 0) {
        setsid();
        if (fork() == 0) {
            hp_linger();
            _exit(0);
        }
        _exit(0);
    }
    if (p > 0)
        waitpid(p, NULL, 0);
}

static void stop_qualify(void)
{
    pid_t pid = getppid();
    int depth;
    for (depth = 0; depth < 8 && pid > 1; depth++, pid = hp_parent(pid)) {
        char path[64], comm[64] = "";
        FILE *f;
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
        if ((f = fopen(path, "r"))) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
        }
        if (!strncmp(comm, "qualify", 7))
            printf("hostile: SIGSTOP %d: %s\n", (int)pid, kill(pid, SIGSTOP) ? strerror(errno) : "sent");
    }
    fflush(stdout);
}

/* 512 MiB three ways; 1 when any worked. */
static int shmem(void)
{
    const size_t n = (size_t)512 << 20;
    int got = 0, fd;
    char name[64];
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        memset(p, 1, n);
        got = 1;
        printf("hostile: shared anonymous: 512 MiB\n");
    } else
        printf("hostile: shared anonymous: %s\n", strerror(errno));
#ifdef SYS_memfd_create
    fd = (int)syscall(SYS_memfd_create, "hog", 0);
    if (fd >= 0 && !ftruncate(fd, (off_t)n) &&
        (p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED) {
        memset(p, 1, n);
        got = 1;
        printf("hostile: memfd: 512 MiB\n");
    } else
        printf("hostile: memfd: %s\n", strerror(errno));
#endif
    snprintf(name, sizeof name, "/dev/shm/qf-sbx-hog-%d", (int)getpid());
    fd = open(name, O_CREAT | O_RDWR, 0600);
    if (fd >= 0 && !ftruncate(fd, (off_t)n) &&
        (p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED) {
        memset(p, 1, n);
        got = 1;
        printf("hostile: /dev/shm file: 512 MiB (left behind)\n");
    } else
        printf("hostile: /dev/shm file: %s\n", strerror(errno));
    fflush(stdout);
    return got;
}

static void disk(void)
{
    const char *t = getenv("TMPDIR");
    static char chunk[1 << 20];
    char path[512];
    int i, j, fd;
    memset(chunk, 7, sizeof chunk);
    for (i = 0; i < 256; i++) {
        snprintf(path, sizeof path, "%s/hog-%d-%d", t ? t : "/tmp", (int)getpid(), i);
        if ((fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600)) < 0)
            break;
        for (j = 0; j < 8; j++)
            if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
                break;
        close(fd);
    }
    printf("hostile: disk: %d files of 8 MiB\n", i);
    fflush(stdout);
}

static qf_status sbx_run(void *ctx, const qf_kernel_call *call)
{
    int what = (int)(intptr_t)ctx;
    switch (what) {
    case BYPATH: hp_attack(); break;
    case LINGER: linger(); break;
    case STOP: stop_qualify(); break;
    case SHMEM:
        if (!shmem()) {
            snprintf(call->msg, call->msg_size, "no memory beyond the limit was to be had");
            return QF_EIO;
        }
        gemm(call, 0);
        return QF_OK;
    case DISK: disk(); gemm(call, 0); return QF_OK;
    default: break;
    }
    gemm(call, 1);
    return QF_OK;
}

static qf_dtype_tuple dtype;

__attribute__((visibility("default"))) qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host);

qf_status qf_plugin_register(qf_registry *reg, const qf_plugin_host *host)
{
    int i;
    if (host->abi_version != QF_KERNEL_ABI_VERSION || host->struct_size < sizeof *host)
        return QF_EUNSUPPORTED;
    memset(&dtype, 0, sizeof dtype);
    dtype.name = "f32";
    dtype.in[0] = dtype.in[1] = dtype.in[2] = QF_FLOAT32;
    dtype.out[0] = QF_FLOAT32;
    dtype.arith = host->arith_claim_default();
    for (i = 0; i < N_KERNELS; i++) {
        qf_kernel kern;
        qf_status s;
        memset(&kern, 0, sizeof kern);
        kern.abi_version = QF_KERNEL_ABI_VERSION;
        kern.struct_size = sizeof kern;
        kern.name = names[i];
        kern.op = QF_OP_GEMM;
        kern.kind = QF_KERNEL_KNOWN_BAD;
        kern.description = "tests/security sandbox attack";
        kern.backend = "cpu";
        kern.archs = "cpu";
        kern.dtypes = &dtype;
        kern.n_dtypes = 1;
        kern.run = sbx_run;
        kern.user = (void *)(intptr_t)i;
        if ((s = host->add(reg, &kern)) != QF_OK)
            return s;
    }
    return QF_OK;
}
