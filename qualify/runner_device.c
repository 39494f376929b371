/* runner_device.c: driving kernels whose tensors live on a GPU back end
 * (_runner_device.h says what each function does; docs/runner.md
 * "GPU kernels").
 *
 * The runner's checks stay the same for every back end: the host output
 * buffers (poisoned, between canary pages) are what the verdict reads.  A
 * GPU call stages them: each output gets a device buffer of
 * [guard][data][guard], the guards filled with GUARD_BYTE by memset, the
 * data with the host buffer's poison (copied, so both runs keep their
 * different poison), and after the run the data comes back and the guards
 * are compared byte by byte.  A CUDA or HIP driver is never touched in the
 * calling process: the probe and the kernel runs are child processes, since
 * a driver initialized before fork() is unusable in the child.  The
 * back end's module (libqualify_cuda.so, libqualify_hip.so: qualify/
 * gpumod.c) is loaded first by the probe's child; the calling process
 * loads it only once the probe found a device, so a sweep on a machine
 * without one never maps the vendor libraries outside that child.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "_escape.h"
#include "_gpumod.h"
#include "_runner.h"
#include "_runner_device.h"
#include "qf_provenance.h"
#include "qf_runner.h"

#define GUARD       256u /* device guard bytes on each side (keeps 256-byte alignment) */
#define GUARD_BYTE  0xCD
#define PROBE_LIMIT 120.0 /* seconds a device probe may take (driver start-up) */

static const char *vendor(const char *name)
{
    return !strcmp(name, "cuda") ? "CUDA" : !strcmp(name, "hip") ? "HIP" : name;
}

int _qf_rdev_is_device(const qf_kernel *k)
{
    return k && k->backend && strcmp(k->backend, "cpu") != 0;
}

/* ---- The probe ----------------------------------------------------------- */

typedef struct probe {
    char backend[16];
    int done, ok;
    int no_module; /* the module did not load: why says so */
    char arch[64];
    char describe[512];
    char why[1024];
    int ndev; /* devices found (1 unless every device was asked for) */
    _qf_rdev_info dev[_QF_RDEV_MAX];
} probe;

#define MAX_PROBES 4
static probe probes[MAX_PROBES];
/* _qf_rdev_enumerate: the probe names every device, not device 0 only. */
static int enumerate;
/* The device a kernel child or server opens (_qf_rdev_use). */
static int current;

void _qf_rdev_enumerate(int all)
{
    enumerate = all;
}

void _qf_rdev_use(int index)
{
    current = index < 0 ? 0 : index;
}

int _qf_rdev_current(void)
{
    return current;
}

/* In the probe's child: device i's architecture and identity. */
static int probe_one(const qf_backend *be, int i, _qf_rdev_info *d)
{
    qf_device dev;
    int ok;
    if (qf_device_open(be, i, &dev) != QF_OK)
        return 0;
    ok = be->arch(dev.state, d->arch, sizeof d->arch) == QF_OK;
    if (ok && be->identity)
        (void)be->identity(dev.state, d->uuid, sizeof d->uuid, d->name, sizeof d->name);
    qf_device_close(&dev);
    return ok;
}

/* In the probe's child, device 0 open: count and name the others. */
static void probe_devices(const qf_backend *be, probe *sh)
{
    int n = 1, i;
    if (enumerate && be->count && be->count(&n) != QF_OK)
        n = 1;
    if (n > _QF_RDEV_MAX)
        n = _QF_RDEV_MAX;
    sh->ndev = n;
    for (i = 1; i < n; i++)
        if (!probe_one(be, i, &sh->dev[i]))
            snprintf(sh->dev[i].arch, sizeof sh->dev[i].arch, "?");
}

/* Load the back end and open its device 0 in a child process; report arch
 * and describe. */
static void run_probe(probe *pr, const char *name)
{
    probe *sh;
    pid_t pid;
    int st = 0;
    double t0;
    snprintf(pr->backend, sizeof pr->backend, "%s", name);
    pr->done = 1;
    pr->ok = 0;
    /* qf_backend_get loads nothing for a name that is no GPU module: a
     * plugin's stand-in back end (qf_backend_add) is probed as a GPU's. */
    if (!_qf_gpumod_built(name) && !qf_backend_get(name)) {
        snprintf(pr->why, sizeof pr->why, "the %s back end is not built into this qualify", name);
        return;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        snprintf(pr->why, sizeof pr->why, "cannot map the probe's report: %s", strerror(errno));
        return;
    }
    memset(sh, 0, sizeof *sh);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(pr->why, sizeof pr->why, "cannot fork the device probe: %s", strerror(errno));
        munmap(sh, sizeof *sh);
        return;
    }
    if (pid == 0) {
        const qf_backend *be = qf_backend_get(name);
        qf_device dev;
        qf_status s = be ? qf_device_open(be, 0, &dev) : QF_EUNSUPPORTED;
        if (!be) {
            snprintf(sh->why, sizeof sh->why, "%s", qf_backend_error(name));
            sh->no_module = 1;
        } else if (s != QF_OK) {
            const char *e = qf_backend_error(name);
            snprintf(sh->why, sizeof sh->why, "no %s device (%s)", vendor(name), *e ? e : qf_status_str(s));
        } else {
            if (be->arch(dev.state, sh->arch, sizeof sh->arch) == QF_OK &&
                be->describe(dev.state, sh->describe, sizeof sh->describe) == QF_OK) {
                sh->ok = 1;
                snprintf(sh->dev[0].arch, sizeof sh->dev[0].arch, "%s", sh->arch);
                if (be->identity)
                    (void)be->identity(dev.state, sh->dev[0].uuid, sizeof sh->dev[0].uuid, sh->dev[0].name,
                                       sizeof sh->dev[0].name);
                probe_devices(be, sh);
            }
            else
                snprintf(sh->why, sizeof sh->why, "the %s device did not say its architecture (%s)",
                         vendor(name), qf_backend_error(name));
            qf_device_close(&dev);
        }
        sh->done = 1;
        _exit(0);
    }
    t0 = _qf_rp_now_s();
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if ((w < 0 && errno != EINTR) || _qf_rp_now_s() - t0 > PROBE_LIMIT) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            snprintf(pr->why, sizeof pr->why, "no %s device (the probe did not answer within %.0f s)",
                     vendor(name), PROBE_LIMIT);
            munmap(sh, sizeof *sh);
            return;
        }
        {
            struct timespec ts = {0, 5000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!sh->done)
        snprintf(pr->why, sizeof pr->why, "no %s device (the probe %s %d)", vendor(name),
                 WIFSIGNALED(st) ? "died of signal" : "exited with status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    else {
        pr->ok = sh->ok;
        pr->no_module = sh->no_module;
        snprintf(pr->arch, sizeof pr->arch, "%s", sh->arch);
        snprintf(pr->describe, sizeof pr->describe, "%s", sh->describe);
        snprintf(pr->why, sizeof pr->why, "%s", sh->why);
        pr->ndev = sh->ndev;
        memcpy(pr->dev, sh->dev, sizeof pr->dev);
    }
    munmap(sh, sizeof *sh);
    /* A missing or broken module is the installation's fault, not the
     * machine's: said once on stderr as well as in every case's reason. */
    if (pr->no_module) {
        fputs("qualify: ", stderr);
        _qf_esc_term(stderr, pr->why); /* a loader's words: text, never terminal controls */
        fputs("; its kernels are UNSUPPORTED, the CPU ones run\n", stderr);
    }
    /* A device is there: map the module now, before the workers fork, so
     * that every kernel child inherits it instead of loading it again.  It
     * initializes no driver (only the children open the device). */
    if (pr->ok && !qf_backend_get(name)) {
        pr->ok = 0;
        snprintf(pr->why, sizeof pr->why, "%s", qf_backend_error(name));
    }
}

static probe *get_probe(const char *name)
{
    int i;
    for (i = 0; i < MAX_PROBES; i++)
        if (probes[i].done && !strcmp(probes[i].backend, name))
            return &probes[i];
    for (i = 0; i < MAX_PROBES; i++)
        if (!probes[i].done) {
            run_probe(&probes[i], name);
            return &probes[i];
        }
    return NULL;
}

void _qf_rdev_prepare(const qf_kernel *k)
{
    if (_qf_rdev_is_device(k))
        (void)get_probe(k->backend);
}

int _qf_rdev_probe(const qf_kernel *k, char *arch, size_t arch_size, char *why, size_t why_size)
{
    probe *pr;
    if (!_qf_rdev_is_device(k)) {
        snprintf(why, why_size, "%s is not a GPU kernel", k ? k->name : "(null)");
        return -1;
    }
    pr = get_probe(k->backend);
    if (!pr) {
        snprintf(why, why_size, "too many back ends to probe");
        return -1;
    }
    if (!pr->ok) {
        snprintf(why, why_size, "%s", pr->why);
        return -1;
    }
    snprintf(arch, arch_size, "%s", pr->arch);
    if (!qf_kernel_arch_ok(k, pr->arch)) {
        snprintf(why, why_size, "architecture %s not in the kernel's archs %s", pr->arch,
                 k->archs ? k->archs : "(none)");
        return -1;
    }
    return 0;
}

const char *_qf_rdev_backend(void)
{
    int i;
    for (i = 0; i < MAX_PROBES; i++)
        if (probes[i].done && probes[i].ok)
            return probes[i].backend;
    return NULL;
}

int _qf_rdev_count(const char *backend)
{
    int i;
    for (i = 0; backend && i < MAX_PROBES; i++)
        if (probes[i].done && probes[i].ok && !strcmp(probes[i].backend, backend))
            return probes[i].ndev;
    return 0;
}

const _qf_rdev_info *_qf_rdev_info_of(const char *backend, int index)
{
    int i;
    for (i = 0; backend && i < MAX_PROBES; i++)
        if (probes[i].done && probes[i].ok && !strcmp(probes[i].backend, backend))
            return index >= 0 && index < probes[i].ndev ? &probes[i].dev[index] : NULL;
    return NULL;
}

/* "cuda: NAME; sm_90; ...; driver CUDA 13.0; runtime 13.0": the field
 * starting with key (key "" gives the name after "backend: "). */
static void describe_field(const char *d, const char *key, char *out, size_t size)
{
    const char *p = strchr(d, ':');
    out[0] = '\0';
    if (!p)
        return;
    p++;
    while (*p) {
        size_t n;
        while (*p == ' ' || *p == ';')
            p++;
        n = strcspn(p, ";");
        if (!*key || !strncmp(p, key, strlen(key))) {
            size_t skip = *key ? strlen(key) : 0;
            snprintf(out, size, "%.*s", (int)(n - skip), p + skip);
            return;
        }
        p += n;
    }
}

int qf_runner_gpu_provenance(qf_provenance *p)
{
    int i;
    for (i = 0; i < MAX_PROBES; i++)
        if (probes[i].done && probes[i].ok) {
            char name[256], drv[64], rt[64], rt2[80];
            describe_field(probes[i].describe, "", name, sizeof name);
            describe_field(probes[i].describe, "driver ", drv, sizeof drv);
            describe_field(probes[i].describe, "runtime ", rt, sizeof rt);
            snprintf(rt2, sizeof rt2, "%s %s", vendor(probes[i].backend), rt);
            qf_provenance_set_gpu(p, name, probes[i].arch, rt2, drv);
            return 1;
        }
    return 0;
}

/* ---- Kernel child -------------------------------------------------------- */

qf_status _qf_rdev_open(const qf_kernel *k, qf_device *dev, char *msg, size_t msg_size)
{
    const qf_backend *be = _qf_rdev_is_device(k) ? qf_backend_get(k->backend) : NULL;
    qf_status s;
    if (!be) {
        if (msg && msg_size) {
            if (k && _qf_gpumod_built(k->backend))
                snprintf(msg, msg_size, "%s", qf_backend_error(k->backend));
            else
                snprintf(msg, msg_size, "the %s back end is not built into this qualify",
                         k ? k->backend : "?");
        }
        return QF_EUNSUPPORTED;
    }
    s = qf_device_open(be, current, dev);
    if (s != QF_OK) {
        const char *e = qf_backend_error(k->backend);
        if (msg && msg_size)
            snprintf(msg, msg_size, "no %s device (%s)", vendor(k->backend), *e ? e : qf_status_str(s));
        return QF_EUNSUPPORTED;
    }
    return QF_OK;
}

static size_t tensor_bytes(const qf_tensor *t)
{
    return t->bytes ? t->bytes : qf_tensor_dense_bytes(t);
}

static size_t scale_bytes(const qf_tensor *t)
{
    const qf_format *f;
    if (t->scale.kind == QF_SCALE_NONE || !t->scale.data)
        return 0;
    f = qf_format_get(t->scale.format);
    return f ? qf_format_array_bytes(f, t->scale.count) : 0;
}

/* One staged buffer: the host pointer it mirrors, its device allocation
 * (guard + data + guard for outputs) and the data's device address. */
typedef struct staged {
    void *host;
    unsigned char *alloc, *data;
    size_t bytes;
    int output;
} staged;

#define MAX_STAGED (2 * (QF_KERNEL_MAX_IN + QF_KERNEL_MAX_OUT))

static void fail_msg(qf_kernel_call *call, const qf_device *dev, const char *what, size_t bytes, qf_status st)
{
    if (call->msg && call->msg_size) {
        const char *e = qf_backend_error(dev->backend->name);
        snprintf(call->msg, call->msg_size, "%s%s back end: %s (%zu bytes)%s%s", st == QF_EDEVICE ? "device lost: " : "",
                 dev->backend->name, what, bytes, *e ? ": " : "", e);
    }
}

static qf_status stage(qf_device *dev, qf_kernel_call *call, staged *s, void *host, size_t bytes, int output)
{
    const qf_backend *be = dev->backend;
    qf_status st;
    s->host = host;
    s->bytes = bytes;
    s->output = output;
    st = be->alloc(dev->state, bytes + (output ? 2 * GUARD : 0), (void **)&s->alloc);
    if (st != QF_OK) {
        s->alloc = NULL;
        fail_msg(call, dev, "allocation", bytes, st);
        return st;
    }
    s->data = s->alloc + (output ? GUARD : 0);
    if (output && (st = be->memset(dev->state, s->alloc, GUARD_BYTE, bytes + 2 * GUARD)) != QF_OK) {
        fail_msg(call, dev, "memset of the guards", bytes, st);
        return st;
    }
    /* inputs: the codes; outputs: the host buffer's poison */
    if ((st = be->copy(dev->state, s->data, host, bytes, QF_COPY_HOST_TO_DEVICE)) != QF_OK)
        fail_msg(call, dev, "copy to the device", bytes, st);
    return st;
}

/* Copy an output back and mirror clobbered guard bytes into the host
 * canaries (the host buffer has a canary page on each side). */
static qf_status unstage(qf_device *dev, qf_kernel_call *call, staged *s)
{
    const qf_backend *be = dev->backend;
    unsigned char guard[2][GUARD];
    unsigned char *h = s->host;
    size_t i;
    qf_status st = be->copy(dev->state, s->host, s->data, s->bytes, QF_COPY_DEVICE_TO_HOST);
    if (st != QF_OK) {
        fail_msg(call, dev, "copy back to the host", s->bytes, st);
        return st;
    }
    if ((st = be->copy(dev->state, guard[0], s->alloc, GUARD, QF_COPY_DEVICE_TO_HOST)) != QF_OK ||
        (st = be->copy(dev->state, guard[1], s->data + s->bytes, GUARD, QF_COPY_DEVICE_TO_HOST)) != QF_OK) {
        fail_msg(call, dev, "copy of the guards", GUARD, st);
        return st;
    }
    for (i = 0; i < GUARD; i++) {
        if (guard[0][i] != GUARD_BYTE)
            h[-(ptrdiff_t)(GUARD - i)] ^= 0xFF;
        if (guard[1][i] != GUARD_BYTE)
            h[s->bytes + i] ^= 0xFF;
    }
    return QF_OK;
}

/* Outputs are judged as they were when the kernel returned and the
 * device was synchronized (docs/security.md "Outputs as they were"): a
 * second copy after a synchronization must equal the first, else work of
 * the kernel's was still running (a stream it did not wait for).  The
 * copy is the back end's, synchronous as for unstage. */
static qf_status recheck(qf_device *dev, qf_kernel_call *call, const staged *s)
{
    const qf_backend *be = dev->backend;
    unsigned char *again;
    qf_status st;
    if (!s->bytes)
        return QF_OK;
    if (!(again = malloc(s->bytes)))
        return QF_OK; /* no memory for the check: the first copy stands */
    st = be->copy(dev->state, again, s->data, s->bytes, QF_COPY_DEVICE_TO_HOST);
    if (st == QF_OK && memcmp(again, s->host, s->bytes)) {
        size_t i = 0;
        while (((unsigned char *)s->host)[i] == again[i])
            i++;
        snprintf(call->msg, call->msg_size,
                 "outputs changed after the kernel returned: a second copy from the device after the "
                 "synchronization differs (first at byte %zu of %zu): the kernel left work running",
                 i, s->bytes);
        st = QF_EIO;
    } else if (st != QF_OK) {
        fail_msg(call, dev, "second copy back to the host", s->bytes, st);
    }
    free(again);
    return st;
}

qf_status _qf_rdev_run(qf_device *dev, void *ctx, qf_kernel_call *call, double *kernel_s)
{
    const qf_backend *be = dev->backend;
    qf_kernel_call dc = *call;
    qf_tensor din[QF_KERNEL_MAX_IN], dout[QF_KERNEL_MAX_OUT];
    staged sg[MAX_STAGED];
    int nin = qf_op_slot_count(call->op->op, 0), nout = qf_op_slot_count(call->op->op, 1), i, ns = 0;
    qf_status st = QF_OK, st2;
    qf_timer tm;
    memset(sg, 0, sizeof sg);
    if (kernel_s)
        *kernel_s = 0;
    for (i = 0; i < nin && st == QF_OK; i++) {
        din[i] = call->in[i];
        if (din[i].data) {
            st = stage(dev, call, &sg[ns], din[i].data, tensor_bytes(&din[i]), 0);
            din[i].data = sg[ns++].data;
        }
        if (st == QF_OK && scale_bytes(&din[i])) {
            st = stage(dev, call, &sg[ns], din[i].scale.data, scale_bytes(&din[i]), 0);
            din[i].scale.data = sg[ns++].data;
        }
    }
    for (i = 0; i < nout && st == QF_OK; i++) {
        dout[i] = call->out[i];
        if (dout[i].data) {
            st = stage(dev, call, &sg[ns], dout[i].data, tensor_bytes(&dout[i]), 1);
            dout[i].data = sg[ns++].data;
        }
        if (st == QF_OK && dout[i].scale.data && scale_bytes(&dout[i])) {
            st = stage(dev, call, &sg[ns], dout[i].scale.data, scale_bytes(&dout[i]), 1);
            dout[i].scale.data = sg[ns++].data;
        }
    }
    if (st == QF_OK) {
        dc.in = din;
        dc.out = dout;
        dc.device = dev;
        if ((st = be->timer_start(dev->state, &tm)) != QF_OK)
            fail_msg(call, dev, "timer start", 0, st);
        else {
            st = call->kernel->run(ctx, &dc);
            /* the run's own status first; then the device must be clean */
            st2 = be->timer_stop(dev->state, &tm, kernel_s ? kernel_s : &(double){0});
            if (st == QF_OK && st2 != QF_OK) {
                fail_msg(call, dev, "synchronize after the kernel", 0, st2);
                st = st2;
            }
        }
    }
    if (st == QF_OK) {
        for (i = 0; i < ns && st == QF_OK; i++)
            if (sg[i].output)
                st = unstage(dev, call, &sg[i]);
        if (st == QF_OK && (st = be->synchronize ? be->synchronize(dev->state) : QF_OK) != QF_OK)
            fail_msg(call, dev, "synchronize after the copy back", 0, st);
        for (i = 0; i < ns && st == QF_OK; i++)
            if (sg[i].output)
                st = recheck(dev, call, &sg[i]);
        for (i = 0; i < nout; i++)
            call->out[i].scale.global_code = dout[i].scale.global_code;
    }
    for (i = 0; i < ns; i++)
        if (sg[i].alloc)
            be->free(dev->state, sg[i].alloc);
    return st;
}
