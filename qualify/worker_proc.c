/* worker_proc.c: the processes of a kernel worker (worker.c, _worker.h):
 * starting an instance (/bin/sh -c CMD in a process group of its own, its
 * stdin and stdout the protocol's pipes), the relay that prefixes its
 * standard error with its name, reaping and killing, and the protocol's
 * line I/O that both ends use (serve.c is the other).  worker.c keeps the
 * protocol and the bookkeeping of instances per job slot. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "_escape.h"
#include "_isolate.h"
#include "_sandbox.h"
#include "_runner.h"
#include "_status.h"
#include "_runner_device.h"
#include "_worker.h"

/* A message into err[size] (when there is room). */
#define say(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

void _qf_wproc_nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- Lines -------------------------------------------------------------- */

typedef _qf_line_reader reader;

#define write_all _qf_worker_write_all

/* timeout_ms < 0 waits for ever (the runner's time limit kills a kernel
 * child that waits too long). */
int _qf_worker_read_line(reader *rd, int fd, int timeout_ms, char **line)
{
    double t0 = _qf_rp_now_s();
    for (;;) {
        char *nl = rd->len ? memchr(rd->buf, '\n', rd->len) : NULL;
        struct pollfd pf;
        ssize_t n;
        int wait = timeout_ms;
        if (nl) {
            size_t used = (size_t)(nl - rd->buf) + 1;
            static char *out;
            static size_t outcap;
            if (outcap < used) {
                char *o = realloc(out, used);
                if (!o)
                    return -1;
                out = o;
                outcap = used;
            }
            memcpy(out, rd->buf, used - 1);
            out[used - 1] = '\0';
            memmove(rd->buf, rd->buf + used, rd->len - used);
            rd->len -= used;
            *line = out;
            return 1;
        }
        if (rd->len > LINE_MAX_B)
            return -2;
        if (rd->cap - rd->len < 65536) {
            size_t nc = rd->cap ? 2 * rd->cap : 65536;
            char *b = realloc(rd->buf, nc);
            if (!b)
                return -1;
            rd->buf = b;
            rd->cap = nc;
        }
        if (timeout_ms >= 0) {
            wait = timeout_ms - (int)((_qf_rp_now_s() - t0) * 1000);
            if (wait <= 0)
                return 0;
        }
        pf.fd = fd;
        pf.events = POLLIN;
        pf.revents = 0;
        if (poll(&pf, 1, wait) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (!pf.revents)
            continue;
        n = read(fd, rd->buf + rd->len, rd->cap - rd->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        rd->len += (size_t)n;
    }
}

/* Write all of buf; -1 (errno EPIPE) when the reader is gone.  SIGPIPE is
 * ignored around the write so that a dead worker is an error, not the
 * death of the writer. */
int _qf_worker_write_all(int fd, const char *buf, size_t n)
{
    struct sigaction ign, old;
    int rc = 0;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        buf += w;
        n -= (size_t)w;
    }
    sigaction(SIGPIPE, &old, NULL);
    return rc;
}

/* ---- Instances ------------------------------------------------------------ */

void _qf_wproc_close_fds(instance *in)
{
    if (in->to >= 0)
        close(in->to);
    if (in->from >= 0)
        close(in->from);
    if (in->mem >= 0)
        close(in->mem);
    if (in->err >= 0)
        close(in->err);
    in->to = in->from = in->mem = in->err = -1;
}


/* The relay ends once the worker (and all it started) closed its standard
 * error; one that outlives that (a worker's daemonized grandchild holding
 * the pipe) is killed after a short wait. */
void _qf_wproc_relay_reap(instance *in)
{
    if (in->relay > 0)
        _qf_wproc_reap(in->relay, 500);
    in->relay = 0;
}

/* Wait up to ms for pid, then kill it; its wait status.  The whole
 * process group (its session) is killed in any case, before pid is reaped
 * so that the group's id cannot have been reused: /bin/sh may run the
 * command as its own child, and a worker or a kernel a server ran may
 * have left processes that would otherwise live on (holding our pipes and
 * the caller's stderr) after it is gone. */
int _qf_wproc_reap(pid_t pid, long ms)
{
    int st = _qf_iso_reap_group(pid, ms);
    _qf_sbx_scratch_remove(pid); /* its scratch directory (_sandbox.h), if any */
    return st;
}

/* The relay: copies the worker's standard error (the pipe on fd 0) to
 * ours line by line, each line prefixed with "[worker NAME] ", so that a
 * worker's messages (a Python traceback) are told apart from qualify's and
 * from other workers'.  NAME is the hello's name, read from shared memory
 * at each line (the parent learns it after the relay started); until the
 * hello, the command.  While a run is in flight (cap->on) what it reads
 * goes into cap, for the pair's record, instead.  It runs until every
 * writer has closed the pipe, so the last words of a worker that died are
 * not lost.  Outside runs it writes at most _QF_WORKER_RELAY_GAP bytes
 * between two runs and _QF_WORKER_RELAY_TOTAL in all for the slot
 * (_worker.h); it reads and counts the rest, so a worker that floods its
 * stderr neither floods qualify's nor blocks on a full pipe. */
static void relay_run(const volatile char *label, const char *cmd, _qf_wcap *cap) __attribute__((noreturn));

typedef struct relay_budget {
    _qf_wcap *cap;              /* the slot's runs and relayed bytes; NULL: counted here alone */
    unsigned long runs;         /* cap->runs when this gap began */
    size_t gap, total;          /* bytes written in this gap; in all, without cap */
    unsigned long long dropped; /* bytes read and not written in this gap */
} relay_budget;

/* The worker's name as the relay shows it, escaped, into ename. */
static void relay_name(const volatile char *label, const char *cmd, char *ename, size_t size)
{
    char name[LABEL_MAX];
    size_t i;
    for (i = 0; i + 1 < sizeof name && label[i]; i++)
        name[i] = label[i];
    name[i] = '\0';
    _qf_esc_line(ename, size, name[0] ? name : cmd);
}

static void relay_write(struct iovec *iov, int n)
{
    if (writev(2, iov, n) < 0 && errno != EINTR)
        _exit(0);
}

/* "[worker NAME] 140.0 MiB more of stderr dropped (...)" for what this gap
 * dropped, if anything; then a new gap's budget when runs moved on. */
static void relay_gap_end(const volatile char *label, const char *cmd, relay_budget *b, unsigned long runs)
{
    if (b->dropped) {
        char ename[LABEL_MAX], msg[LABEL_MAX + 256];
        struct iovec iov;
        double v = (double)b->dropped;
        const char *unit = v >= 1048576.0 ? "MiB" : v >= 1024.0 ? "KiB" : "bytes";
        relay_name(label, cmd, ename, sizeof ename);
        iov.iov_base = msg;
        iov.iov_len = (size_t)snprintf(msg, sizeof msg,
                                       "[worker %s] %.*f %s more of stderr dropped (at most %u KiB between two runs "
                                       "and %u KiB in all are shown; docs/workers.md \"Standard error\")\n",
                                       ename, *unit == 'b' ? 0 : 1,
                                       v / (*unit == 'M' ? 1048576.0 : *unit == 'K' ? 1024.0 : 1.0), unit,
                                       _QF_WORKER_RELAY_GAP >> 10, _QF_WORKER_RELAY_TOTAL >> 10);
        if (iov.iov_len >= sizeof msg)
            iov.iov_len = sizeof msg - 1;
        relay_write(&iov, 1);
        b->dropped = 0;
    }
    if (runs != b->runs) {
        b->runs = runs;
        b->gap = 0;
    }
}

static void relay_flush(const volatile char *label, const char *cmd, relay_budget *b, char *line, size_t len)
{
    /* The worker's name and line reach the terminal with no control
     * character of theirs (ESC, CR, a second LF, bidi controls:
     * docs/security.md).  A byte escapes to at most 6 (\u009b for a C1
     * pair), so no line is cut; a name is, at a whole character. */
    char ename[LABEL_MAX], pre[LABEL_MAX + 16], text[4096 * 6 + 2];
    struct iovec iov[2];
    size_t i, total = b->cap ? __atomic_load_n(&b->cap->relayed, __ATOMIC_SEQ_CST) : b->total;
    if (b->dropped) { /* once over, the rest of the gap is dropped too: no holes in what is shown */
        b->dropped += len;
        return;
    }
    /* The line ends with its '\n': escape what is before it, NULs as '?'. */
    for (i = 0; i + 1 < len; i++)
        if (!line[i])
            line[i] = '?';
    line[len - 1] = '\0';
    _qf_esc_line(text, sizeof text - 1, line);
    iov[1].iov_len = strlen(text);
    text[iov[1].iov_len++] = '\n';
    relay_name(label, cmd, ename, sizeof ename);
    iov[0].iov_base = pre;
    iov[0].iov_len = (size_t)snprintf(pre, sizeof pre, "[worker %s] ", ename);
    if (iov[0].iov_len >= sizeof pre)
        iov[0].iov_len = sizeof pre - 1;
    iov[1].iov_base = text;
    if (b->gap + iov[0].iov_len + iov[1].iov_len > _QF_WORKER_RELAY_GAP ||
        total + iov[0].iov_len + iov[1].iov_len > _QF_WORKER_RELAY_TOTAL) {
        b->dropped += len;
        return;
    }
    b->gap += iov[0].iov_len + iov[1].iov_len;
    if (b->cap)
        __atomic_add_fetch(&b->cap->relayed, iov[0].iov_len + iov[1].iov_len, __ATOMIC_SEQ_CST);
    else
        b->total += iov[0].iov_len + iov[1].iov_len;
    relay_write(iov, 2);
}

/* A chunk read while a run is in flight: the pair's record's (the first
 * 4 KiB; the total counts all). */
static void cap_put(_qf_wcap *cap, const char *buf, size_t n)
{
    size_t room = sizeof cap->text - 1 - cap->len;
    memcpy(cap->text + cap->len, buf, n < room ? n : room);
    cap->len += n < room ? n : room;
    cap->text[cap->len] = '\0';
    cap->total += n;
}

static void relay_run(const volatile char *label, const char *cmd, _qf_wcap *cap)
{
    char buf[4096], line[4096];
    size_t len = 0;
    ssize_t n;
    relay_budget b = {cap, cap ? __atomic_load_n(&cap->runs, __ATOMIC_SEQ_CST) : 0, 0, 0, 0};
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        struct pollfd pf = {0, POLLIN, 0};
        ssize_t i;
        if (poll(&pf, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        /* Set before the bytes leave the pipe (_qf_wproc_settle). */
        if (cap)
            __atomic_store_n(&cap->reading, 1, __ATOMIC_SEQ_CST);
        n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            if (cap)
                __atomic_store_n(&cap->reading, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        if (n <= 0)
            break;
        if (cap && __atomic_load_n(&cap->on, __ATOMIC_SEQ_CST)) {
            if (len) { /* a line begun outside the run ends there */
                line[len++] = '\n';
                relay_flush(label, cmd, &b, line, len);
                len = 0;
            }
            cap_put(cap, buf, (size_t)n);
            n = 0;
        }
        /* A run began since the last read: the gap before it is over. */
        if (cap && __atomic_load_n(&cap->runs, __ATOMIC_SEQ_CST) != b.runs)
            relay_gap_end(label, cmd, &b, __atomic_load_n(&cap->runs, __ATOMIC_SEQ_CST));
        for (i = 0; i < n; i++) {
            line[len++] = buf[i];
            if (buf[i] == '\n' || len == sizeof line - 1) {
                if (buf[i] != '\n')
                    line[len++] = '\n';
                relay_flush(label, cmd, &b, line, len);
                len = 0;
            }
        }
        if (cap)
            __atomic_store_n(&cap->reading, 0, __ATOMIC_SEQ_CST);
    }
    if (cap)
        __atomic_store_n(&cap->reading, 0, __ATOMIC_SEQ_CST);
    if (len) {
        line[len++] = '\n';
        relay_flush(label, cmd, &b, line, len);
    }
    relay_gap_end(label, cmd, &b, b.runs);
    _exit(0);
}

void _qf_wproc_settle(const instance *in, const _qf_wcap *cap)
{
    double t0 = _qf_rp_now_s();
    if (!cap || in->err < 0 || !in->relay)
        return;
    for (;;) {
        int waiting = 0;
        /* The pipe first, then the flag: the relay sets it before it
         * reads, so bytes are always seen in one place or the other. */
        if (ioctl(in->err, FIONREAD, &waiting))
            waiting = 0;
        if (!waiting && !__atomic_load_n(&cap->reading, __ATOMIC_SEQ_CST))
            return;
        if (_qf_rp_now_s() - t0 > 0.2)
            return;
        _qf_wproc_nap_ms(1);
    }
}

/* Start the relay of a worker; its pid, its pipe's write end in *wr and
 * read end in *rd, or -1 (the worker then writes to our standard error
 * directly). */
static pid_t relay_start(const volatile char *label, const char *cmd, _qf_wcap *cap, int *wr, int *rd)
{
    int ep[2];
    pid_t pid;
    *wr = *rd = -1;
    if (pipe2(ep, O_CLOEXEC))
        return -1;
    pid = fork();
    if (pid == 0) {
        /* Nothing of ours but the pipe and stderr: an inherited end of a
         * worker's stdin would keep that worker from seeing EOF. */
        if (dup2(ep[0], 0) < 0)
            _exit(0);
        {
            long fd, max = sysconf(_SC_OPEN_MAX);
            for (fd = 3; fd < (max > 0 ? max : 1024); fd++)
                close((int)fd);
        }
        relay_run(label, cmd, cap);
    }
    if (pid < 0) {
        close(ep[0]);
        close(ep[1]);
        return -1;
    }
    *wr = ep[1];
    *rd = ep[0]; /* close-on-exec; for _qf_wproc_settle */
    return pid;
}

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U /* memfd_create(2); older C libraries lack the name */
#endif

/* The instance's memfd: a file with no name (memfd_create(2)), so no
 * other process can open it by one; close-on-exec, and above 3 so that
 * the child's dup2 onto 3 always clears that.  -1 where there is none
 * (not Linux, a seccomp filter): the instance then gets names. */
static int mem_create(void)
{
#ifdef SYS_memfd_create
    int fd = (int)syscall(SYS_memfd_create, "qualify-worker", MFD_CLOEXEC), hi;
#else
    int fd = -1, hi;
#endif
    if (fd < 0 || fd > _QF_WORKER_SHM_FD)
        return fd;
    hi = fcntl(fd, F_DUPFD_CLOEXEC, _QF_WORKER_SHM_FD + 1);
    close(fd);
    return hi;
}

int _qf_wproc_spawn(const char *cmd, const volatile char *label, _qf_wcap *cap, int server, instance *in,
                    char *err, size_t err_size)
{
    int tw[2], fr[2], ew, er, mem;
    pid_t pid;
    mem = mem_create();
    if (pipe2(tw, O_CLOEXEC)) {
        if (mem >= 0)
            close(mem);
        return say(err, err_size, "cannot create a pipe: %s", strerror(errno)), -1;
    }
    if (pipe2(fr, O_CLOEXEC)) {
        if (mem >= 0)
            close(mem);
        close(tw[0]);
        close(tw[1]);
        return say(err, err_size, "cannot create a pipe: %s", strerror(errno)), -1;
    }
    fflush(NULL);
    _qf_sbx_probe(NULL, 0); /* the scratch root, made here before the fork */
    in->relay = relay_start(label, cmd, cap, &ew, &er);
    if (in->relay < 0)
        in->relay = 0;
    pid = fork();
    if (pid < 0) {
        say(err, err_size, "cannot fork: %s", strerror(errno));
        if (ew >= 0)
            close(ew);
        if (er >= 0)
            close(er);
        _qf_wproc_relay_reap(in);
        if (mem >= 0)
            close(mem);
        close(tw[0]);
        close(tw[1]);
        close(fr[0]);
        close(fr[1]);
        return -1;
    }
    if (pid == 0) {
        /* dup2 clears close-on-exec on 0, 1 and the memfd's 3 (mem is
         * above 3, so dup2 always copies); every other descriptor of ours
         * (other workers' pipes and memfds) closes below or at exec. */
        static const int keep[] = {_QF_WORKER_SHM_FD};
        if (dup2(tw[0], 0) < 0 || dup2(fr[1], 1) < 0 || (ew >= 0 && dup2(ew, 2) < 0) ||
            (mem >= 0 && dup2(mem, _QF_WORKER_SHM_FD) < 0))
            _exit(127);
        /* A session of its own, so that killing the worker kills
         * everything the shell or its kernels started (reap); nothing of
         * ours beyond 0-2 (the journal, other workers' pipes), whether or
         * not it was opened close-on-exec; the kernel limits, which exec
         * keeps. */
        /* The sandbox's memory rules where RLIMIT_DATA will be set: in a
         * server holding no GPU kernel, in every worker. */
        const char *sdev = getenv("QUALIFY_SERVER_DEVICE");
        int dev = server && !(sdev && !strcmp(sdev, "0")), lim = !dev && _qf_iso_memory_limit(0) != 0;
        char why[512];
        _qf_iso_own_session();
        _qf_iso_close_fds(keep, mem >= 0);
        if (server) {
            qf_kernel_limits l = *_qf_iso_limits();
            char v[32];
            snprintf(v, sizeof v, "%llu", l.memory);
            setenv("QUALIFY_KERNEL_MEMORY", v, 1);
            snprintf(v, sizeof v, "%.17g", l.cpu_s);
            setenv("QUALIFY_KERNEL_CPU", v, 1);
            l.memory = 0;
            qf_runner_set_kernel_limits(&l);
            /* the device its slot is bound to (--devices; 0 otherwise) */
            snprintf(v, sizeof v, "%d", _qf_rdev_current());
            setenv("QUALIFY_DEVICE", v, 1);
        }
        _qf_iso_apply_limits(0);
        /* Last before exec: the sandbox, which exec and every descendant
         * keep (docs/security.md "The sandbox"). */
        if (_qf_sbx_enter(server ? QF_SBX_SERVER : QF_SBX_WORKER, dev, lim, why, sizeof why)) {
            dprintf(2, "cannot confine the %s: %s\n", server ? "kernel server" : "worker", why);
            _exit(_QF_SBX_EXIT);
        }
        signal(SIGPIPE, SIG_DFL);
        setenv("QUALIFY_WORKER_PROTOCOL", "1", 1);
        if (mem >= 0)
            setenv(_QF_WORKER_SHM_FD_ENV, "3", 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    if (ew >= 0)
        close(ew);
    close(tw[0]);
    close(fr[1]);
    in->pid = pid;
    in->to = tw[1];
    in->from = fr[0];
    in->mem = mem;
    in->err = er;
    in->takes_fd = 0; /* until its hello says so */
    return 0;
}

