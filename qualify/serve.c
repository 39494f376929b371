/* serve.c: a kernel server, qualify's own kernels behind the kernel-worker
 * protocol (docs/workers.md; qf_worker.h, qf_kernel_serve).
 *
 * Why.  A pair run with `--isolate pair` forks a kernel child that calls
 * the kernel's init, creates a device context for a GPU kernel and exits
 * after two runs; a server does each of those once for its whole life
 * (one per job slot, `--isolate server`, docs/runner.md "Kernel
 * servers").  The host side is the worker host of worker.c, unchanged: the
 * runner's canaries, poison, time limit, restart after a crash and
 * verdicts are those of any worker kernel.
 *
 * What it does.  The hello lists every in-process kernel of the registry
 * (built-ins, plugins, adapters; a worker's kernels are not served again)
 * as worker kernel records.  A `run` is turned back into the qf_kernel_call
 * the kernel child would have made: the op from its "op" object through
 * the op class's from_json hook (so a new op needs nothing here), the
 * tensors pointing into the mapped shared-memory object (the kernel writes
 * its outputs there, the host copies them back), the dtype tuple by name,
 * threads and seed.  init runs on a kernel's first run and its context is
 * kept until bye; a GPU kernel's device is opened once per back end and
 * its tensors staged per run by runner_device.c, as in a kernel child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_claim.h"
#include "_isolate.h"
#include "_runner_device.h"
#include "_worker.h"
#include "ops/_ops.h"
#include "qf_backend.h"
#include "qf_worker.h"

#define DEVS_MAX 4

typedef struct served {
    const qf_kernel *k;
    void *ctx;
    int inited;
} served;

typedef struct server {
    const qf_registry *reg;
    served *s; /* [qf_registry_count], by registry index */
    struct {
        const char *backend;
        qf_device dev;
    } devs[DEVS_MAX];
    int ndevs;
    int cap, err_fd; /* the kernels' capture file; the server's own stderr */
    int mem;         /* the slot's memfd the host handed on (fd 3), or -1 */
} server;

/* ---- The hello ------------------------------------------------------------ */

static json_t *formats_json(const qf_format_id *ids, int n)
{
    json_t *a = json_array();
    int i;
    for (i = 0; i < n; i++) {
        const qf_format *f = qf_format_get(ids[i]);
        json_array_append_new(a, f ? json_string(f->name) : json_null());
    }
    return a;
}

/* The claim keys whose value differs from qf_arith_claim_default()'s:
 * the protocol fills the others with the default, and a hello of every
 * key of every tuple of every built-in kernel would pass the 1 MiB line. */
static json_t *claim_json(const qf_arith_claim *c)
{
    qf_arith_claim d0 = qf_arith_claim_default();
    json_t *all = _qf_claim_json(c), *dflt = _qf_claim_json(&d0), *o = json_object(), *v;
    const char *key;
    json_object_foreach(all, key, v)
    {
        if (!json_equal(v, json_object_get(dflt, key)))
            json_object_set(o, key, v);
    }
    json_decref(all);
    json_decref(dflt);
    return o;
}

static json_t *kernel_json(const qf_kernel *k)
{
    json_t *o = json_object(), *dts = json_array(), *lim = json_object(), *lay = json_array();
    int nin = qf_op_slot_count(k->op, 0), nout = qf_op_slot_count(k->op, 1), d, det = -1;
    size_t i;
    uint32_t bit;
    json_object_set_new(o, "name", json_string(k->name));
    json_object_set_new(o, "op", json_string(qf_op_name(k->op)));
    json_object_set_new(o, "kind", json_string(qf_kernel_kind_name(k->kind)));
    json_object_set_new(o, "description", json_string(k->description ? k->description : ""));
    json_object_set_new(o, "archs", json_string(k->archs ? k->archs : "cpu"));
    /* Beyond a worker's record (docs/workers.md "Kernel servers"). */
    json_object_set_new(o, "backend", json_string(k->backend ? k->backend : "cpu"));
    if (k->simulates)
        json_object_set_new(o, "simulates", json_string(k->simulates));
    for (i = 0; i < k->n_dtypes; i++) {
        const qf_dtype_tuple *t = &k->dtypes[i];
        json_t *dt = json_object();
        int s, scaled = 0;
        json_object_set_new(dt, "name", json_string(t->name ? t->name : ""));
        json_object_set_new(dt, "in", formats_json(t->in, nin));
        json_object_set_new(dt, "out", formats_json(t->out, nout));
        json_object_set_new(dt, "claim", claim_json(&t->arith));
        for (s = 0; s < nin; s++)
            scaled |= t->in_scale[s] != QF_SCALE_NONE;
        if (scaled) {
            json_t *sc = json_array();
            for (s = 0; s < nin; s++) {
                json_t *e = json_object();
                const qf_format *f = qf_format_get(t->in_scale_format[s]);
                json_object_set_new(e, "kind", json_string(qf_scale_kind_name(t->in_scale[s])));
                if (t->in_scale[s] != QF_SCALE_NONE) {
                    json_object_set_new(e, "format", json_string(f ? f->name : "?"));
                    json_object_set_new(e, "block", json_integer((json_int_t)t->in_scale_block[s]));
                }
                json_array_append_new(sc, e);
            }
            json_object_set_new(dt, "in_scale", sc);
        }
        json_array_append_new(dts, dt);
        det = det < 0 || det == t->arith.deterministic ? t->arith.deterministic : 2;
    }
    json_object_set_new(o, "dtypes", dts);
    for (d = 0; d < qf_op_dim_count(k->op); d++) {
        json_t *l;
        if (!k->limits.min[d] && !k->limits.max[d] && !k->limits.multiple_of[d])
            continue;
        l = json_object();
        if (k->limits.min[d])
            json_object_set_new(l, "min", json_integer(k->limits.min[d]));
        if (k->limits.max[d])
            json_object_set_new(l, "max", json_integer(k->limits.max[d]));
        if (k->limits.multiple_of[d])
            json_object_set_new(l, "align", json_integer(k->limits.multiple_of[d]));
        json_object_set_new(lim, qf_op_dim_name(k->op, d), l);
    }
    json_object_set_new(o, "limits", lim);
    if (det == 0 || det == 1) /* the same for every tuple: else each claim says it */
        json_object_set_new(o, "deterministic", json_boolean(det));
    for (bit = 1; bit & QF_LAYOUT_ALL; bit <<= 1)
        if (k->layouts & bit)
            json_array_append_new(lay, json_string(qf_layout_name(bit)));
    json_object_set_new(o, "layouts", lay);
    return o;
}

/* ---- A run ---------------------------------------------------------------- */

static int slot_index(qf_op op, int is_out, const char *name)
{
    int i, n = qf_op_slot_count(op, is_out);
    for (i = 0; name && i < n; i++)
        if (!strcmp(qf_op_slot_name(op, is_out, i), name))
            return i;
    return -1;
}

/* A region [off, off + bytes) of the object, or NULL. */
static void *region(unsigned char *base, size_t total, json_t *o, const char *what, char *err, size_t es)
{
    json_t *off = json_object_get(o, "offset"), *by = json_object_get(o, "bytes");
    if (!json_is_integer(off) || !json_is_integer(by) || json_integer_value(off) < 0 || json_integer_value(by) < 0 ||
        (uint64_t)json_integer_value(off) + (uint64_t)json_integer_value(by) > total) {
        snprintf(err, es, "%s: offset and bytes must lie inside the shared memory (%zu bytes)", what, total);
        return NULL;
    }
    return base + json_integer_value(off);
}

static int tensor_from_json(json_t *j, qf_tensor *t, unsigned char *base, size_t total, int is_out, char *err,
                            size_t es)
{
    const char *fmt = json_string_value(json_object_get(j, "format"));
    const qf_format *f = fmt ? qf_format_lookup(fmt) : NULL;
    json_t *sh = json_object_get(j, "shape"), *sd = json_object_get(j, "strides"), *sc, *v;
    size_t d;
    memset(t, 0, sizeof *t);
    if (!f)
        return snprintf(err, es, "tensor: unknown format '%s'", fmt ? fmt : "?"), -1;
    t->format = f->id;
    if (!json_is_array(sh) || !json_is_array(sd) || json_array_size(sh) != json_array_size(sd) ||
        json_array_size(sh) > QF_TENSOR_MAX_DIMS)
        return snprintf(err, es, "tensor: shape and strides must be lists of one length"), -1;
    t->ndim = (int)json_array_size(sh);
    for (d = 0; d < json_array_size(sh); d++) {
        t->shape[d] = (int64_t)json_integer_value(json_array_get(sh, d));
        t->stride[d] = (int64_t)json_integer_value(json_array_get(sd, d));
    }
    if ((v = json_object_get(j, "index_bits")))
        t->index_bits = (int)json_integer_value(v);
    t->packed = json_is_true(json_object_get(j, "packed"));
    if (!(t->data = region(base, total, j, "tensor", err, es)))
        return -1;
    t->bytes = (size_t)json_integer_value(json_object_get(j, "bytes"));
    t->scale.kind = QF_SCALE_NONE;
    if ((sc = json_object_get(j, "scale"))) {
        const char *kind = json_string_value(json_object_get(sc, "kind"));
        const char *sf = json_string_value(json_object_get(sc, "format"));
        const qf_format *sff = sf ? qf_format_lookup(sf) : NULL;
        json_t *z = json_object_get(sc, "zero_point"), *g = json_object_get(sc, "global_code");
        int k;
        for (k = 1; k < QF_SCALE_COUNT; k++)
            if (kind && !strcmp(kind, qf_scale_kind_name((qf_scale_kind)k)))
                break;
        if (k == QF_SCALE_COUNT || !sff)
            return snprintf(err, es, "tensor: scale kind '%s' or format '%s' unknown", kind ? kind : "?",
                            sf ? sf : "?"),
                   -1;
        t->scale.kind = (qf_scale_kind)k;
        t->scale.format = sff->id;
        t->scale.count = (size_t)json_integer_value(json_object_get(sc, "count"));
        t->scale.axis = (int)json_integer_value(json_object_get(sc, "axis"));
        t->scale.block = (size_t)json_integer_value(json_object_get(sc, "block"));
        if (!(t->scale.data = region(base, total, sc, "scale", err, es)))
            return -1;
        if (z && !(t->scale.zero_point = region(base, total, z, "zero_point", err, es)))
            return -1;
        if (json_is_integer(g)) {
            t->scale.has_global = 1;
            t->scale.global_code = (uint32_t)json_integer_value(g);
        } else if (is_out && json_is_true(json_object_get(sc, "global"))) {
            t->scale.has_global = 1;
        }
    }
    return 0;
}

/* The device of a GPU kernel's back end, opened on its first run. */
static qf_device *device_for(server *S, const qf_kernel *k, char *msg, size_t ms, qf_status *st)
{
    int i;
    *st = QF_OK;
    for (i = 0; i < S->ndevs; i++)
        if (!strcmp(S->devs[i].backend, k->backend))
            return &S->devs[i].dev;
    if (S->ndevs == DEVS_MAX) {
        *st = QF_EUNSUPPORTED;
        snprintf(msg, ms, "kernel server: more than %d back ends", DEVS_MAX);
        return NULL;
    }
    memset(&S->devs[S->ndevs].dev, 0, sizeof S->devs[S->ndevs].dev);
    if ((*st = _qf_rdev_open(k, &S->devs[S->ndevs].dev, msg, ms)) != QF_OK)
        return NULL;
    S->devs[S->ndevs].backend = k->backend;
    return &S->devs[S->ndevs++].dev;
}

/* on: the kernels' standard output and error into the capture file;
 * off: back to the server's standard error (the host's relay). */
static void capture(server *S, int on)
{
    int to = on ? S->cap : S->err_fd;
    fflush(stdout);
    fflush(stderr);
    if (S->cap < 0 || S->err_fd < 0)
        return;
    dup2(to, 1);
    dup2(to, 2);
}

/* Serve one run: the done object's status, msg and global_codes into
 * done. */
static void serve_run(server *S, json_t *m, json_t *done)
{
    const char *kname = json_string_value(json_object_get(m, "kernel"));
    const char *dname = json_string_value(json_object_get(m, "dtype"));
    const char *shm = json_string_value(json_object_get(m, "shm"));
    const char *seed = json_string_value(json_object_get(m, "seed"));
    json_t *ins = json_object_get(m, "in"), *outs = json_object_get(m, "out"), *t;
    char msg[1024] = "", err[512] = "";
    qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
    qf_kernel_call call;
    qf_op_desc op;
    qf_device host, *dev = NULL;
    qf_status st = QF_EINVAL;
    void *owned = NULL;
    unsigned char *base = MAP_FAILED;
    size_t total = (size_t)json_integer_value(json_object_get(m, "shm_bytes")), ki, i;
    served *sv = NULL;
    int fd, pass;
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    memset(&op, 0, sizeof op);
    memset(&call, 0, sizeof call);
    for (ki = 0; kname && ki < qf_registry_count(S->reg); ki++)
        if (S->s[ki].k && !strcmp(S->s[ki].k->name, kname))
            sv = &S->s[ki];
    if (!sv) {
        snprintf(err, sizeof err, "kernel server: no kernel '%s'", kname ? kname : "?");
        goto out;
    }
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = sv->k;
    if (!(call.dtype = dname ? qf_kernel_dtype(sv->k, dname) : NULL)) {
        snprintf(err, sizeof err, "kernel server: %s has no dtype tuple '%s'", kname, dname ? dname : "?");
        goto out;
    }
    if (_qf_op_from_json(json_object_get(m, "op"), &op, &owned, err, sizeof err))
        goto out;
    if (op.op != sv->k->op) {
        snprintf(err, sizeof err, "kernel server: the run's op is %s, %s computes %s", qf_op_name(op.op), kname,
                 qf_op_name(sv->k->op));
        goto out;
    }
    if (json_is_integer(json_object_get(m, "shm_fd"))) {
        /* The slot's memfd, which has no name (docs/workers.md "run"). */
        struct stat sb;
        if (S->mem < 0 || json_integer_value(json_object_get(m, "shm_fd")) != _QF_WORKER_SHM_FD) {
            snprintf(err, sizeof err, "kernel server: the run's shm_fd is not the descriptor it was given");
            goto out;
        }
        if (fstat(S->mem, &sb) || (uint64_t)sb.st_size < (uint64_t)total) {
            snprintf(err, sizeof err, "kernel server: the memfd is smaller than shm_bytes %zu", total);
            goto out;
        }
        shm = "the slot's memfd";
        base = mmap(NULL, total ? total : 1, PROT_READ | PROT_WRITE, MAP_SHARED, S->mem, 0);
    } else {
        if (!shm || (fd = shm_open(shm, O_RDWR, 0)) < 0) {
            snprintf(err, sizeof err, "kernel server: cannot open the shared memory %s: %s", shm ? shm : "(none)",
                     strerror(errno));
            goto out;
        }
        base = mmap(NULL, total ? total : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        /* A host that names the object (one without the memfd): the name
         * goes at once, since while it is listed in /dev/shm any process
         * of the user could open it (docs/security.md).  The host's own
         * unlink then finds nothing, which it ignores. */
        shm_unlink(shm);
    }
    if (base == MAP_FAILED) {
        snprintf(err, sizeof err, "kernel server: cannot map %s: %s", shm, strerror(errno));
        goto out;
    }
    for (pass = 0; pass < 2; pass++) {
        json_array_foreach(pass ? outs : ins, i, t)
        {
            int sl = slot_index(op.op, pass, json_string_value(json_object_get(t, "slot")));
            if (sl < 0) {
                snprintf(err, sizeof err, "kernel server: unknown %s slot '%s'", pass ? "output" : "input",
                         json_string_value(json_object_get(t, "slot")) ? json_string_value(json_object_get(t, "slot"))
                                                                       : "?");
                goto out;
            }
            if (tensor_from_json(t, pass ? &out[sl] : &in[sl], base, total, pass, err, sizeof err))
                goto out;
        }
    }
    memset(&host, 0, sizeof host);
    host.backend = qf_backend_cpu();
    call.op = &op;
    call.in = in;
    call.out = out;
    call.device = &host;
    call.seed = seed ? strtoull(seed, NULL, 10) : 0;
    call.threads = (int)json_integer_value(json_object_get(m, "threads"));
    call.msg = msg;
    call.msg_size = sizeof msg;
    /* As a kernel child: the device first, then init (once per server);
     * what they print goes into the capture file, sent back in done. */
    _qf_iso_cpu_window();
    capture(S, 1);
    if (_qf_rdev_is_device(sv->k) && !(dev = device_for(S, sv->k, msg, sizeof msg, &st))) {
        capture(S, 0);
        goto out;
    }
    if (!sv->inited) {
        sv->ctx = sv->k->user;
        if (sv->k->init && (st = sv->k->init(sv->k, &sv->ctx)) != QF_OK) {
            capture(S, 0);
            goto out;
        }
        sv->inited = 1;
    }
    st = dev ? _qf_rdev_run(dev, sv->ctx, &call, NULL) : sv->k->run(sv->ctx, &call);
    capture(S, 0);
out:
    {
        char text[QF_RESULT_OUTPUT_MAX];
        size_t total = 0;
        _qf_iso_capture_take(S->cap, text, sizeof text, &total);
        if (total) {
            json_object_set_new(done, "output", json_string(text));
            json_object_set_new(done, "output_bytes", json_integer((json_int_t)total));
        }
        /* Processes a kernel left die with its run (orphans come here). */
        _qf_iso_reap_strays(NULL, 0);
    }
    if (err[0]) {
        json_object_set_new(done, "status", json_string("error"));
        json_object_set_new(done, "msg", json_string(err));
    } else if (st == QF_OK) {
        json_t *g = NULL;
        json_object_set_new(done, "status", json_string("ok"));
        for (i = 0; i < QF_KERNEL_MAX_OUT; i++)
            if (out[i].data && out[i].scale.has_global) {
                if (!g)
                    g = json_object();
                json_object_set_new(g, qf_op_slot_name(op.op, 1, (int)i), json_integer(out[i].scale.global_code));
            }
        if (g)
            json_object_set_new(done, "global_codes", g);
    } else {
        /* The status, not the message, says the device is gone: the
         * runner rotates devices on it (runner_devices.c). */
        json_object_set_new(done, "status", json_string(st == QF_EUNSUPPORTED ? "unsupported"
                                                        : st == QF_EDEVICE    ? "device_lost"
                                                                              : "error"));
        json_object_set_new(done, "msg", json_string(msg[0] ? msg : qf_status_str(st)));
        /* which error: an allocation that failed is worth a hint */
        if (st != QF_EUNSUPPORTED && st != QF_EDEVICE)
            json_object_set_new(done, "code", json_string(qf_status_str(st)));
    }
    if (base != MAP_FAILED)
        munmap(base, total ? total : 1);
    free(owned);
}

/* ---- The loop -------------------------------------------------------------- */

static int say_line(int fd, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    int rc;
    size_t n;
    if (!text)
        return -1;
    n = strlen(text);
    text[n] = '\n'; /* the terminator becomes the line's end */
    rc = _qf_worker_write_all(fd, text, n + 1);
    free(text);
    return rc;
}

int qf_kernel_serve(const qf_registry *reg, const char *name, int in_fd, int out_fd)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
    server S;
    _qf_line_reader rd = {NULL, 0, 0};
    json_t *hello, *ks;
    char *line;
    size_t i, n = qf_registry_count(reg);
    int rc = 0;
    memset(&S, 0, sizeof S);
    S.reg = reg;
    S.s = calloc(n ? n : 1, sizeof *S.s);
    if (!S.s)
        return 1;
    /* As in a kernel child: a crash is a signal the host reports, never a
     * sanitizer's or the caller's handler. */
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    /* The slot's memfd, when the host handed one on (worker_proc.c): kept
     * out of whatever a kernel execs. */
    S.mem = -1;
    {
        const char *e = getenv(_QF_WORKER_SHM_FD_ENV);
        if (e && atoi(e) == _QF_WORKER_SHM_FD && fcntl(_QF_WORKER_SHM_FD, F_SETFD, FD_CLOEXEC) == 0)
            S.mem = _QF_WORKER_SHM_FD;
        unsetenv(_QF_WORKER_SHM_FD_ENV);
    }
    S.cap = _qf_iso_capture_open();
    S.err_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    /* Orphans of the kernels' processes come to the server, which kills
     * them after each run; the kernel limits the host left to it (the
     * memory limit, not for a server holding GPU kernels, whose contexts
     * reserve more address space than any such limit). */
    _qf_iso_subreaper();
    {
        const char *mem = getenv("QUALIFY_KERNEL_MEMORY"), *cpu = getenv("QUALIFY_KERNEL_CPU");
        qf_kernel_limits l;
        int device = 0;
        memset(&l, 0, sizeof l);
        l.memory = mem ? strtoull(mem, NULL, 10) : 0;
        l.cpu_s = cpu ? strtod(cpu, NULL) : 0;
        /* `qualify run` says whether its sweep plans a GPU kernel; without
         * the word, any GPU kernel registered here counts. */
        const char *dv = getenv("QUALIFY_SERVER_DEVICE");
        if (dv && (!strcmp(dv, "0") || !strcmp(dv, "1")))
            device = dv[0] == '1';
        else
            for (i = 0; i < n; i++)
                device |= _qf_rdev_is_device(qf_registry_get(reg, i));
        unsetenv("QUALIFY_SERVER_DEVICE");
        /* The device of its job slot (qualify run --devices). */
        if ((dv = getenv("QUALIFY_DEVICE")) && dv[0] >= '0' && dv[0] <= '9')
            _qf_rdev_use(atoi(dv));
        unsetenv("QUALIFY_DEVICE");
        qf_runner_set_kernel_limits(&l);
        _qf_iso_apply_limits(device);
    }
    hello = json_object();
    ks = json_array();
    json_object_set_new(hello, "qualify_worker", json_integer(1));
    json_object_set_new(hello, "name", json_string(name ? name : "qualify-kernel-server"));
    json_object_set_new(hello, "server", json_integer(QF_KERNEL_SERVER_VERSION));
    if (S.mem >= 0) /* runs come in the memfd, never by a name */
        json_object_set_new(hello, "shm_fd", json_true());
    for (i = 0; i < n; i++) {
        const qf_kernel *k = qf_registry_get(reg, i);
        if (qf_worker_kernel_is(k))
            continue;
        S.s[i].k = k;
        json_array_append_new(ks, kernel_json(k));
    }
    json_object_set_new(hello, "kernels", ks);
    if (say_line(out_fd, hello)) {
        json_decref(hello);
        free(S.s);
        return 1;
    }
    json_decref(hello);
    for (;;) {
        json_t *m, *done;
        int r = _qf_worker_read_line(&rd, in_fd, -1, &line);
        if (r != 1) {
            rc = r == -1 ? 0 : 1; /* end of input: the host is gone */
            break;
        }
        m = json_loads(line, 0, NULL);
        if (json_is_true(json_object_get(m, "bye"))) {
            json_decref(m);
            break;
        }
        if (!json_is_integer(json_object_get(m, "run"))) {
            fprintf(stderr, "kernel server: not a run message: %.80s\n", line);
            json_decref(m);
            rc = 1;
            break;
        }
        done = json_object();
        json_object_set(done, "done", json_object_get(m, "run"));
        serve_run(&S, m, done);
        json_decref(m);
        r = say_line(out_fd, done);
        json_decref(done);
        if (r) {
            rc = 1;
            break;
        }
    }
    for (i = 0; i < n; i++)
        if (S.s[i].inited && S.s[i].k->fini)
            S.s[i].k->fini(S.s[i].ctx);
    for (i = 0; i < (size_t)S.ndevs; i++)
        qf_device_close(&S.devs[i].dev);
    free(rd.buf);
    free(S.s);
    if (S.cap >= 0)
        close(S.cap);
    if (S.err_fd >= 0)
        close(S.err_fd);
    return rc;
}
