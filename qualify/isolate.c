/* isolate.c: what a process that runs kernel code keeps of qualify's
 * (_isolate.h, docs/security.md): no shared mapping nor descriptor it does
 * not need, a session of its own killed whole, resource limits, and its
 * standard output and error captured apart from qualify's. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "_isolate.h"

#if defined(__SANITIZE_ADDRESS__)
#define ISO_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ISO_SANITIZED 1
#endif
#endif
#ifndef ISO_SANITIZED
#define ISO_SANITIZED 0
#endif

static int limits_set;
static qf_kernel_limits limits;

qf_kernel_limits qf_kernel_limits_default(void)
{
    qf_kernel_limits l;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    unsigned long long ram = pages > 0 && psz > 0 ? (unsigned long long)pages * (unsigned long long)psz : 0;
    memset(&l, 0, sizeof l);
    l.memory = ram / 2;
    if (!l.memory || l.memory > (16ull << 30))
        l.memory = 16ull << 30;
    l.cpu_s = 600;
    l.procs = 256;
    l.fsize = 1ull << 30;
    l.disk = 1ull << 30;
    return l;
}

void qf_runner_set_kernel_limits(const qf_kernel_limits *l)
{
    limits = l ? *l : qf_kernel_limits_default();
    limits_set = 1;
}

const qf_kernel_limits *_qf_iso_limits(void)
{
    if (!limits_set)
        qf_runner_set_kernel_limits(NULL);
    return &limits;
}

/* Lower a limit to v (never raise one the caller was given lower). */
static void lower(int what, rlim_t soft, rlim_t hard)
{
    struct rlimit cur, nl;
    if (getrlimit(what, &cur))
        return;
    nl.rlim_cur = cur.rlim_cur != RLIM_INFINITY && cur.rlim_cur < soft ? cur.rlim_cur : soft;
    nl.rlim_max = cur.rlim_max != RLIM_INFINITY && cur.rlim_max < hard ? cur.rlim_max : hard;
    if (nl.rlim_cur > nl.rlim_max)
        nl.rlim_cur = nl.rlim_max;
    setrlimit(what, &nl);
}

/* Processes the real user has now (RLIMIT_NPROC counts them all). */
static unsigned long long user_procs(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    unsigned long long n = 0;
    uid_t me = getuid();
    if (!d)
        return 0;
    while ((e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
            char path[300];
            struct stat st;
            snprintf(path, sizeof path, "/proc/%s", e->d_name);
            if (!stat(path, &st) && st.st_uid == me)
                n++;
        }
    closedir(d);
    return n;
}

void _qf_iso_cpu_window(void)
{
    const qf_kernel_limits *l = _qf_iso_limits();
    struct rusage ru;
    struct rlimit cur;
    double used = 0;
    if (!(l->cpu_s > 0) || getrlimit(RLIMIT_CPU, &cur))
        return;
    /* From the CPU time used so far (a server's whole life): SIGXCPU at
     * the soft limit.  The hard limit stays, so that a server can move
     * the window before its next run. */
    if (!getrusage(RUSAGE_SELF, &ru))
        used = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec;
    cur.rlim_cur = (rlim_t)(used + l->cpu_s + 1);
    if (cur.rlim_max != RLIM_INFINITY && cur.rlim_cur > cur.rlim_max)
        cur.rlim_cur = cur.rlim_max;
    setrlimit(RLIMIT_CPU, &cur);
}

void _qf_iso_apply_limits(int device)
{
    const qf_kernel_limits *l = _qf_iso_limits();
    if (l->memory && !device && !ISO_SANITIZED)
        lower(RLIMIT_DATA, (rlim_t)l->memory, (rlim_t)l->memory);
    _qf_iso_cpu_window();
    if (l->procs) {
        rlim_t n = (rlim_t)(user_procs() + l->procs);
        lower(RLIMIT_NPROC, n, n);
    }
    if (l->fsize)
        lower(RLIMIT_FSIZE, (rlim_t)l->fsize, (rlim_t)l->fsize);
}

static int kept(int fd, const int *keep, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (keep[i] == fd)
            return 1;
    return 0;
}

void _qf_iso_close_fds(const int *keep, size_t n)
{
    DIR *d;
    struct dirent *e;
    int fds[1024], nfd = 0, i, dfd;
#if defined(__linux__) && defined(SYS_close_range)
    {
        /* Close [3, max] around the kept descriptors, range by range. */
        unsigned lo = 3;
        int ok = 1;
        for (;;) {
            unsigned hi = ~0u;
            size_t k;
            for (k = 0; k < n; k++)
                if (keep[k] >= (int)lo && (unsigned)keep[k] - 1 < hi)
                    hi = (unsigned)keep[k] - 1;
            if (hi >= lo && syscall(SYS_close_range, lo, hi, 0) != 0) {
                ok = 0;
                break;
            }
            if (hi == ~0u)
                break;
            lo = hi + 2;
        }
        if (ok)
            return;
    }
#endif
    /* Read the list first: closing while reading the directory would skip
     * entries. */
    d = opendir("/proc/self/fd");
    if (!d) {
        for (i = 3; i < 65536; i++)
            if (!kept(i, keep, n))
                close(i);
        return;
    }
    dfd = dirfd(d);
    while ((e = readdir(d)) && nfd < (int)(sizeof fds / sizeof fds[0])) {
        int fd = atoi(e->d_name);
        if (fd >= 3 && fd != dfd && !kept(fd, keep, n))
            fds[nfd++] = fd;
    }
    closedir(d);
    for (i = 0; i < nfd; i++)
        close(fds[i]);
}

/* The whole of a small /proc file (malloc'ed, NUL-terminated), or NULL. */
static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 65536;
    char *buf;
    if (fd < 0)
        return NULL;
    buf = malloc(cap);
    while (buf) {
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

void _qf_iso_unmap_shared(void *const *keep, const size_t *len, size_t n)
{
    char *maps = slurp("/proc/self/maps"), *line, *save = NULL;
    if (!maps)
        return;
    /* The list is read whole before the first munmap changes it. */
    for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long lo, hi;
        char perms[8];
        size_t k;
        int keepit = 0;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || strlen(perms) < 4 || perms[3] != 's')
            continue;
        for (k = 0; k < n && !keepit; k++) {
            unsigned long a = (unsigned long)keep[k], b = a + (unsigned long)len[k];
            keepit = keep[k] && a < hi && b > lo;
        }
        if (!keepit)
            munmap((void *)lo, hi - lo);
    }
    free(maps);
}

void _qf_iso_own_session(void)
{
    setsid();
#ifdef PR_SET_PDEATHSIG
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
}

void _qf_iso_subreaper(void)
{
#ifdef PR_SET_CHILD_SUBREAPER
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
}

/* The children of this process: /proc/self/task/TID/children of each
 * thread, else a scan of every /proc/PID/stat for our pid as parent.  Up
 * to max into out; the count. */
static size_t children(pid_t *out, size_t max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t n = 0;
    int any = 0;
    pid_t me = getpid();
    while (d && (e = readdir(d))) {
        char path[300], *s, *p, *end;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        if (!(s = slurp(path)))
            continue;
        any = 1;
        for (p = s; n < max; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            out[n++] = (pid_t)v;
        }
        free(s);
    }
    if (d)
        closedir(d);
    if (any)
        return n;
    d = opendir("/proc");
    while (d && (e = readdir(d)) && n < max) {
        char path[300], *s, *rp;
        int ppid;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (!(s = slurp(path)))
            continue;
        rp = strrchr(s, ')'); /* the command may hold spaces and parentheses */
        if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == (int)me)
            out[n++] = (pid_t)atoi(e->d_name);
        free(s);
    }
    if (d)
        closedir(d);
    return n;
}

/* Children the caller had before: never strays. */
static pid_t noted[256];
static size_t nnoted;

void _qf_iso_note_children(void)
{
    pid_t kids[256];
    size_t i, j, nk = children(kids, sizeof kids / sizeof kids[0]);
    for (i = 0; i < nk && nnoted < sizeof noted / sizeof noted[0]; i++) {
        for (j = 0; j < nnoted && noted[j] != kids[i]; j++)
            ;
        if (j == nnoted)
            noted[nnoted++] = kids[i];
    }
}

size_t _qf_iso_reap_strays(const pid_t *keep, size_t n)
{
    pid_t kids[256];
    size_t killed = 0;
    int pass;
    /* A killed child's orphans come to us (subreaper): a few passes. */
    for (pass = 0; pass < 64; pass++) {
        size_t i, j, nk = children(kids, sizeof kids / sizeof kids[0]), found = 0;
        for (i = 0; i < nk; i++) {
            int known = 0;
            for (j = 0; j < n && !known; j++)
                known = keep[j] == kids[i];
            for (j = 0; j < nnoted && !known; j++)
                known = noted[j] == kids[i];
            if (known)
                continue;
            found++;
            kill(kids[i], SIGKILL);
            while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
                ;
        }
        killed += found;
        if (!found)
            break;
    }
    return killed;
}

int _qf_iso_reap_group(pid_t pid, long ms)
{
    siginfo_t si;
    int st = 0;
    long waited = 0;
    for (;;) {
        int rc;
        memset(&si, 0, sizeof si);
        rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if (rc == 0 && si.si_pid == pid)
            break;
        if (rc < 0 && errno == ECHILD)
            return 0;
        if (ms >= 0 && waited >= ms) {
            kill(pid, SIGKILL);
            ms = -1;
        }
        usleep(2000);
        waited += 2;
    }
    /* Still a zombie: its pid, and so its group's id, cannot be reused. */
    kill(-pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return st;
}

int _qf_iso_capture_open(void)
{
#if defined(__linux__) && defined(SYS_memfd_create)
    int fd = (int)syscall(SYS_memfd_create, "qualify-kernel-output", 1u /* MFD_CLOEXEC */);
    if (fd >= 0)
        return fd;
#endif
    {
        /* $TMPDIR: in a sandboxed kernel server (no memfd there), its
         * scratch directory, the one place it may create a file */
        const char *t = getenv("TMPDIR");
        char path[600];
        int fd;
        snprintf(path, sizeof path, "%s/qualify-out-XXXXXX", t && *t && strlen(t) < 500 ? t : "/tmp");
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
        return fd;
    }
}

void _qf_iso_text_clean(char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        size_t k;
        int ok = len && i + len <= n && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
        for (k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (!ok || c == 0) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
}

void _qf_iso_capture_take(int fd, char *buf, size_t size, size_t *total)
{
    struct stat st;
    ssize_t r = 0;
    *total = 0;
    if (size)
        buf[0] = '\0';
    if (fd < 0 || fstat(fd, &st))
        return;
    *total = (size_t)st.st_size;
    if (size > 1 && st.st_size > 0)
        r = pread(fd, buf, size - 1, 0);
    if (size) {
        buf[r > 0 ? r : 0] = '\0';
        _qf_iso_text_clean(buf, r > 0 ? (size_t)r : 0);
    }
    if (ftruncate(fd, 0) == 0)
        lseek(fd, 0, SEEK_SET);
}

unsigned long long _qf_iso_memory_limit(int device)
{
    const qf_kernel_limits *l = _qf_iso_limits();
    return device || ISO_SANITIZED ? 0 : l->memory;
}

void _qf_iso_limit_note(char *reason, size_t size, int device)
{
    unsigned long long m = _qf_iso_memory_limit(device);
    size_t len = strlen(reason);
    if (m && len + 1 < size)
        snprintf(reason + len, size - len,
                 "; the kernel process ran under a memory limit of %llu MiB (--kernel-memory): an allocation "
                 "past it fails, which may be the cause",
                 m >> 20);
}
