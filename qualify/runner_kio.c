/* runner_kio.c: what the pair's process hands a kernel (_runner.h):
 * shared copies of the case's inputs, checked after the kernel ran ("input
 * a modified by the kernel"), the capture file of the kernel's standard
 * output and error, the kernel child's entry, which drops everything
 * else of qualify's before any kernel code runs (docs/security.md), and
 * the kernel's calls themselves: in that child, or inline for a worker
 * kernel (_qf_kio_run). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "_isolate.h"
#include "_sandbox.h"
#include "_runner.h"
#include "_runner_device.h"
#include "_worker.h"
#include "qf_worker.h"

/* What the pair's process hands its kernel calls (one pair per process):
 * the inputs in one shared mapping per input tensor (data, then scale
 * codes, then zero points, each part at a 64-byte boundary as a kernel
 * may load a part in its element type: 3 bytes of int4 codes must not
 * leave the bfloat16 scales misaligned), copies of the case's, so that bytes a kernel
 * writes into them are seen here after it ran ("input a modified by the
 * kernel") while the reference keeps reading the case's own; and the
 * capture file of the kernel's standard output and error. */
static struct {
    qf_tensor in[QF_KERNEL_MAX_IN];
    unsigned char *map[QF_KERNEL_MAX_IN];
    size_t bytes[QF_KERNEL_MAX_IN];
    int ready, capfd;
} kio = {.capfd = -1};

static size_t scale_bytes(const qf_tensor_scale *s)
{
    const qf_format *f = s->data ? qf_format_get(s->format) : NULL;
    return f ? qf_format_array_bytes(f, s->count) : 0;
}

/* The input copies are read back once, by _qf_kio_check after the
 * kernel's run: released then, so that they are not resident beside the
 * reference and the metrics (docs/runner.md "Memory"); a later call (the
 * baseline's, the timing run) maps fresh copies (_qf_kio_restore). */
void _qf_kio_release_inputs(void)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++)
        if (kio.map[i])
            munmap(kio.map[i], kio.bytes[i]);
    memset(kio.map, 0, sizeof kio.map);
    memset(kio.bytes, 0, sizeof kio.bytes);
    if (kio.ready)
        kio.ready = 2; /* released: restored before the next call */
}

void _qf_kio_free(void)
{
    _qf_kio_release_inputs();
    memset(kio.in, 0, sizeof kio.in);
    kio.ready = 0;
    if (kio.capfd >= 0)
        close(kio.capfd);
    kio.capfd = -1;
}

/* The parts of t (data, scale codes, zero points: NULL where absent), their
 * sizes and offsets in its copy; returns the copy's size. */
static size_t parts_of(const qf_tensor *t, const unsigned char *part[3], size_t size[3], size_t off[3])
{
    size_t k, end = 0;
    part[0] = t->data;
    part[1] = t->scale.data;
    part[2] = (const void *)t->scale.zero_point;
    size[0] = t->bytes;
    size[1] = scale_bytes(&t->scale);
    size[2] = t->scale.zero_point ? t->scale.count * sizeof(int16_t) : 0;
    for (k = 0; k < 3; k++) {
        if (!part[k])
            size[k] = 0;
        off[k] = (end + 63) & ~(size_t)63;
        end = off[k] + size[k];
    }
    return end;
}

static int map_inputs(const _qf_case *p)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        const qf_tensor *t = &p->in[i];
        const unsigned char *part[3];
        size_t size[3], off[3];
        unsigned char *m;
        kio.in[i] = *t;
        if (!t->data)
            continue;
        kio.bytes[i] = parts_of(t, part, size, off);
        if (!(m = kio.map[i] = _qf_rp_shm_alloc(kio.bytes[i])))
            return -1;
        memcpy(m, t->data, t->bytes);
        kio.in[i].data = m;
        if (size[1]) {
            memcpy(m + off[1], part[1], size[1]);
            kio.in[i].scale.data = m + off[1];
        }
        if (size[2]) {
            memcpy(m + off[2], part[2], size[2]);
            kio.in[i].scale.zero_point = (void *)(m + off[2]);
        }
    }
    kio.ready = 1;
    return 0;
}

int _qf_kio_setup(const _qf_case *p)
{
    _qf_kio_free();
    kio.capfd = _qf_iso_capture_open();
    return map_inputs(p);
}

int _qf_kio_restore(const _qf_case *p)
{
    return kio.ready == 2 ? map_inputs(p) : 0;
}

int _qf_kio_check(const _qf_case *p, qf_result *r, const char *who)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        const qf_tensor *t = &p->in[i];
        const unsigned char *part[3];
        size_t size[3], off[3], k, b, nbad = 0, first = 0, kfirst = 0;
        static const char *const where[3] = {"", ", in its scales", ", in its zero points"};
        if (!kio.map[i])
            continue;
        parts_of(t, part, size, off);
        for (k = 0; k < 3; k++)
            for (b = 0; b < size[k]; b++)
                if (kio.map[i][off[k] + b] != part[k][b] && nbad++ == 0) {
                    first = b;
                    kfirst = k;
                }
        if (nbad)
            return _qf_say(r, QF_CAUSE_BAD_WRITE,
                           "input %s modified by %s: %zu byte(s) differ from what it was given (first at byte %zu%s)",
                           qf_op_slot_name(p->op.op, 0, i), who, nbad, first, where[kfirst]),
                   -1;
    }
    return 0;
}

/* The kernel child, before any kernel code: a session of its own, its
 * standard output and error into the pair's capture file, and nothing
 * else of qualify's: no descriptor beyond 0-2, no shared mapping but its
 * report, its outputs and its inputs (not the records of other pairs, not
 * the worker slots' state), and the kernel limits (docs/security.md). */
void _qf_kio_child_enter(const _qf_case *p, void *rep, size_t rep_bytes)
{
    void *keep[4 + 2 * QF_KERNEL_MAX_IN];
    size_t len[4 + 2 * QF_KERNEL_MAX_IN], n = 0;
    int i, nul, capfd = kio.capfd;
    _qf_iso_own_session();
    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0)
        dup2(nul, 0);
    if (capfd >= 0 || nul >= 0) {
        dup2(capfd >= 0 ? capfd : nul, 1);
        dup2(capfd >= 0 ? capfd : nul, 2);
    }
    _qf_iso_close_fds(NULL, 0);
    keep[n] = rep;
    len[n++] = rep_bytes;
    for (i = 0; i < 2; i++) {
        keep[n] = p->g[i].map;
        len[n++] = p->g[i].map_bytes;
        keep[n] = p->g1[i].map;
        len[n++] = p->g1[i].map_bytes;
    }
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        keep[n] = kio.map[i];
        len[n++] = kio.bytes[i];
    }
    _qf_iso_unmap_shared(keep, len, n);
    _qf_iso_apply_limits(_qf_rdev_is_device(p->k));
    /* Last: the sandbox (docs/security.md "The sandbox"); a child that
     * cannot enter it runs no kernel code. */
    {
        int dev = _qf_rdev_is_device(p->k);
        _qf_child_report *r = rep;
        if (_qf_sbx_enter(QF_SBX_CHILD, dev, _qf_iso_memory_limit(dev) != 0, r->msg, sizeof r->msg))
            _exit(_QF_SBX_EXIT);
    }
}

int _qf_kio_recheck(const _qf_case *p, qf_result *r)
{
    /* A kernel child has ended, with all it started, before its outputs
     * are read: they cannot change.  A worker's or server's can (they
     * stay mapped in its process): checked against the snapshot taken
     * at done (worker_held.c). */
    char msg[256];
    if (qf_worker_kernel_is(p->k) && _qf_worker_recheck(p->k, msg, sizeof msg))
        return _qf_say(r, QF_CAUSE_BAD_WRITE, "%s", msg), -1;
    return 0;
}

const qf_tensor *_qf_kio_inputs(const _qf_case *p)
{
    return kio.ready ? kio.in : p->in;
}

void _qf_kio_take_output(const _qf_case *p, qf_result *r)
{
    /* A worker or kernel server sent it in its done lines; a kernel child
     * wrote it into the capture file. */
    if (qf_worker_kernel_is(p->k))
        _qf_worker_take_output(r->kernel_output, sizeof r->kernel_output, &r->kernel_output_bytes);
    else
        _qf_iso_capture_take(kio.capfd, r->kernel_output, sizeof r->kernel_output, &r->kernel_output_bytes);
}

/* ---- The kernel child ------------------------------------------------------ */

static void child_reset_signals(void)
{
    /* Sanitizer runtimes catch SEGV and turn it into an exit status; the
     * runner wants the signal itself. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
    size_t i;
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

/* The kernel's calls (init, the runs, fini) into rep: in the kernel child,
 * or for a worker kernel in the pair's process (_qf_kio_run). */
static void child_run(_qf_case *p, _qf_child_report *rep, int timing, size_t warmup, size_t reps)
{
    qf_kernel_call call;
    qf_device dev;
    const qf_kernel *k = _qf_worker_routed(p->k); /* a kernel server's stand-in, or p->k */
    void *ctx = k->user;
    qf_status s = QF_OK;
    int run;
    memset(&call, 0, sizeof call);
    memset(&dev, 0, sizeof dev);
    dev.backend = qf_backend_cpu();
    /* GPU kernels: device 0 of their back end, tensors staged per run
     * (runner_device.c) */
    if (_qf_rdev_is_device(p->k) && !qf_worker_kernel_is(p->k) && /* a server holds its device */
        (s = _qf_rdev_open(p->k, &dev, rep->msg, sizeof rep->msg)) != QF_OK) {
        rep->status = s;
        rep->done = 1;
        return;
    }
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = p->k;
    call.dtype = p->t;
    call.op = &p->op;
    call.in = _qf_kio_inputs(p);
    call.out = p->out;
    call.device = &dev;
    call.seed = p->seed;
    call.threads = (int)p->c->threads;
    call.msg = rep->msg;
    call.msg_size = sizeof rep->msg;
    if (k->init && (s = k->init(k, &ctx)) != QF_OK) {
        rep->status = s;
        rep->done = 1;
        return;
    }
    if (!timing) {
        for (run = 0; run < 2 && s == QF_OK; run++) {
            p->out[0].data = p->g[run].data;
            if (p->out1_n && p->out1_is_scale)
                p->out[0].scale.data = p->g1[run].data;
            else if (p->out1_n)
                p->out[1].data = p->g1[run].data;
            /* A kernel that claims the same bits whatever the thread
             * count gets one thread more the second time (the case's
             * count, then that + 1), so the comparison of the two runs
             * checks that claim too. */
            call.threads = (int)p->c->threads + (run == 1 && p->t->arith.deterministic_threads);
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, NULL) : k->run(ctx, &call);
            rep->global_code[run] = p->out[0].scale.global_code;
        }
    } else {
        size_t i;
        p->out[0].data = p->g[0].data;
        if (p->out1_n && p->out1_is_scale)
            p->out[0].scale.data = p->g1[0].data;
        else if (p->out1_n)
            p->out[1].data = p->g1[0].data;
        for (i = 0; i < warmup && s == QF_OK; i++)
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, NULL) : k->run(ctx, &call);
        for (i = 0; i < reps && s == QF_OK && i < sizeof rep->times / sizeof rep->times[0]; i++) {
            double t0 = _qf_rp_now_s(), kt = 0;
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, &kt) : k->run(ctx, &call);
            rep->times[i] =
                dev.state ? kt : _qf_rp_now_s() - t0; /* GPU: device events around the run alone */
            rep->ntimes = i + 1;
        }
    }
    if (k->fini)
        k->fini(ctx);
    if (dev.state)
        qf_device_close(&dev);
    rep->status = s;
    rep->done = 1;
}

/* A worker kernel: its worker is a process of its own (worker.c), so the
 * calls are made here, without a kernel child; same verdicts. */
/* Kill the kernel child pid and all it started, remove its scratch,
 * close fd. */
static void kill_child(pid_t pid, int fd)
{
    kill(pid, SIGKILL);
    _qf_iso_reap_group(pid, -1);
    _qf_iso_reap_strays(NULL, 0);
    _qf_sbx_scratch_remove(pid);
    if (fd >= 0)
        close(fd);
}

/* A kernel process over --kernel-disk: CRASHED, as for the other limits. */
static void disk_say(qf_result *r, unsigned long long used)
{
    _qf_say(r, QF_CAUSE_CRASH,
            "crashed: the kernel process wrote %llu MiB into its scratch directory, over the %llu MiB cap "
            "(--kernel-disk), and was killed",
            used >> 20, _qf_iso_limits()->disk >> 20);
}

static int run_inline(_qf_case *p, _qf_child_report *rep, qf_result *r, double timeout_s, int timing, size_t warmup,
                      size_t reps)
{
    _qf_worker_inline_begin(_qf_rp_now_s() + timeout_s);
    child_run(p, rep, timing, warmup, reps);
    switch (_qf_worker_inline_end()) {
    case 2:
        _qf_say(r, QF_CAUSE_TIMEOUT, "timed out: the kernel ran past the %.3g s limit and was killed",
                timeout_s);
        return -1;
    case 1:
        _qf_say(r, QF_CAUSE_CRASH, "crashed: %s", rep->msg);
        return -1;
    }
    return 0;
}

int _qf_kio_run(_qf_case *p, _qf_child_report *rep, qf_result *r, double timeout_s, int timing,
                     size_t warmup, size_t reps)
{
    pid_t pid;
    int st = 0, fd;
    double t0 = _qf_rp_now_s(), nap = 0.0005, t_disk = t0;
    unsigned long long disk_cap = _qf_iso_limits()->disk ? _qf_iso_limits()->disk : ~0ull;
    memset(rep, 0, sizeof *rep);
    if (_qf_kio_restore(p)) { /* the inputs released after the first call's check */
        _qf_say(r, QF_CAUSE_HARNESS, "cannot map the kernel's inputs: %s", strerror(errno));
        return -1;
    }
    if (qf_worker_kernel_is(p->k))
        return run_inline(p, rep, r, timeout_s, timing, warmup, reps);
    fflush(NULL);
    _qf_sbx_probe(NULL, 0); /* the scratch root, made here before the fork */
    pid = fork();
    if (pid < 0) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot fork the kernel child: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        _qf_kio_child_enter(p, rep, sizeof *rep);
        child_reset_signals();
        child_run(p, rep, timing, warmup, reps);
        _exit(0);
    }
    fd = _qf_rp_child_fd(pid);
    for (;;) {
        siginfo_t si;
        int wr;
        unsigned long long used;
        memset(&si, 0, sizeof si);
        /* Not reaped yet (WNOWAIT): while the child is a zombie its pid
         * cannot be reused, so its process group is killed safely. */
        wr = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if (wr == 0 && si.si_pid == pid)
            break;
        if (wr < 0 && errno == ECHILD) {
            if (fd >= 0)
                close(fd);
            _qf_say(r, QF_CAUSE_HARNESS, "lost the kernel child: %s", strerror(errno));
            return -1;
        }
        if (_qf_rp_now_s() - t0 > timeout_s) {
            kill_child(pid, fd);
            _qf_say(r, QF_CAUSE_TIMEOUT, "timed out: the kernel ran past the %.3g s limit and was killed",
                    timeout_s);
            return -1;
        }
        /* the disk cap, while it runs (every 50 ms) */
        if (_qf_rp_now_s() - t_disk > 0.05) {
            t_disk = _qf_rp_now_s();
            if ((used = _qf_sbx_scratch_bytes(pid)) > disk_cap)
                return kill_child(pid, fd), disk_say(r, used), -1;
        }
        _qf_rp_wait_children(&fd, 1, timeout_s - (_qf_rp_now_s() - t0), &nap, 0.01);
    }
    /* The kernel's whole session, then any process it left (orphans come
     * to this process, a subreaper): none outlives its pair. */
    st = _qf_iso_reap_group(pid, -1);
    _qf_iso_reap_strays(NULL, 0);
    {
        unsigned long long used = _qf_sbx_scratch_bytes(pid);
        _qf_sbx_scratch_remove(pid);
        if (used > disk_cap) {
            if (fd >= 0)
                close(fd);
            return disk_say(r, used), -1;
        }
    }
    if (fd >= 0)
        close(fd);
    if (WIFSIGNALED(st)) {
        r->signal = WTERMSIG(st);
        _qf_say(r, QF_CAUSE_CRASH, "crashed: signal %d (%s)", r->signal, strsignal(r->signal));
        return -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == _QF_SBX_EXIT && rep->msg[0]) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot confine the kernel process: %s", rep->msg);
        return -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == _QF_WORKER_EXIT && rep->msg[0]) {
        /* A worker kernel whose worker failed (worker.c): its reason. */
        _qf_say(r, QF_CAUSE_CRASH, "crashed: %s", rep->msg);
        return -1;
    }
    if (!rep->done || (WIFEXITED(st) && WEXITSTATUS(st) != 0)) {
        r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        _qf_say(r, QF_CAUSE_CRASH, "crashed: the kernel process exited with status %d before finishing",
                r->exit_code);
        return -1;
    }
    return 0;
}
