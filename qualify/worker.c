/* worker.c: kernel workers (qf_worker.h, docs/workers.md).
 *
 * Who does what.  The runner's parent process starts every instance of a
 * worker and is the only one that reaps it.  A pair's process (the runner
 * calls a worker kernel without a kernel child: _qf_worker_inline_begin)
 * talks to the instance of its job slot through the inherited pipes: it
 * writes `run`, reads `done`, and records what went wrong in a slot_state
 * that lives in shared memory, because the parent cannot see the pair
 * process's variables.  After the pair the parent reads that state and kills,
 * reaps and forgets a faulty instance; the next pair of the slot starts a
 * new one.  One instance per job slot means a hanging worker delays no
 * other slot's pairs, whose time limits would otherwise run while they
 * waited for a shared worker.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "_claim.h"
#include "_escape.h"
#include "_isolate.h"
#include "_registry.h"
#include "_runner.h"
#include "_status.h"
#include "_sandbox.h"
#include "_worker.h"
#include "ops/_ops.h"
#include "qf_ref.h"
#include "qf_worker.h"

#define SLOTS_MAX    1024 /* --jobs is at most 1024 */
#define RESTARTS_MAX 5
#define HELLO_MS     30000
#define PAGE         4096u
#define FILL_BYTE    0xCD

/* Per job slot, shared between the parent and the kernel children. */
typedef struct slot_state {
    volatile int busy;   /* a run was sent and its done not read: a killed child left it so */
    volatile int broken; /* the child found the worker dead or breaking the protocol */
    volatile int gone;   /* ... dead: its output was closed */
    volatile int down;   /* parent: no instance for this pair (reason in why) */
    volatile uint64_t next_id;
    char why[256];
    char shm_name[64]; /* the object of the run in flight (the parent unlinks a leftover) */
    _qf_wcap cap;      /* the instance's stderr during a run (_worker.h) */
} slot_state;

typedef struct worker worker;

typedef struct wkernel {
    worker *w;
    char *name, *desc, *archs;
    qf_dtype_tuple *dtypes;
    char **dtype_names;
    size_t ndtypes;
} wkernel;

struct worker {
    char *cmd, *name;
    int serves;  /* a kernel server (qf_worker_route): its kernels are the registry's own */
    wkernel swk; /* the routed kernels' handle (swk.w is this worker) */
    instance inst[SLOTS_MAX];
    slot_state *shared; /* [SLOTS_MAX], MAP_SHARED */
    char *label;        /* [LABEL_MAX], MAP_SHARED: the name, for the relays */
    wkernel *k;
    size_t nk;
};

/* Set by the parent right before it forks a pair: the child inherits it. */
static int cur_slot;

/* Every worker of this process, so that the runner can tell its instances
 * from strays (_qf_worker_pids). */
static worker **all;
static size_t nall;

static int all_add(worker *w)
{
    worker **na = realloc(all, (nall + 1) * sizeof *na);
    if (!na)
        return -1;
    all = na;
    all[nall++] = w;
    return 0;
}

size_t _qf_worker_pids(pid_t *out, size_t max)
{
    size_t i, s, n = 0;
    for (i = 0; i < nall; i++)
        for (s = 0; s < SLOTS_MAX; s++) {
            const instance *in = &all[i]->inst[s];
            if (in->pid && n++ < max)
                out[n - 1] = in->pid;
            if (in->relay > 0 && n++ < max)
                out[n - 1] = in->relay;
        }
    return n;
}

/* What a kernel server's kernels printed during this pair's runs (its
 * done's "output"), for the record (_qf_worker_take_output). */
static struct {
    char text[QF_RESULT_OUTPUT_MAX];
    size_t len, total;
} wout;

void _qf_worker_take_output(char *buf, size_t size, size_t *total)
{
    if (size) {
        size_t n = wout.len < size - 1 ? wout.len : size - 1;
        memcpy(buf, wout.text, n);
        buf[n] = '\0';
    }
    *total = wout.total;
    wout.len = wout.total = 0;
}

static void wout_add(const char *s, size_t total)
{
    size_t n = strlen(s), room = sizeof wout.text - 1 - wout.len;
    if (n > room)
        n = room;
    memcpy(wout.text + wout.len, s, n);
    wout.len += n;
    wout.total += total > n ? total : n;
}

/* Registry kernels whose calls go to a kernel server (qf_worker_route).
 * Their records stay as they are (a supports callback may read user, or
 * compare run with its own function); the runner calls through the
 * stand-in instead (_qf_worker_routed), whose run is served_run. */
typedef struct route {
    const qf_kernel *k;
    qf_kernel stand_in;
    wkernel *wk;
} route;
static route **routes;
static size_t nroutes;

static wkernel *route_of(const qf_kernel *k)
{
    size_t i;
    for (i = 0; i < nroutes; i++)
        if (routes[i]->k == k || &routes[i]->stand_in == k)
            return routes[i]->wk;
    return NULL;
}

const qf_kernel *_qf_worker_routed(const qf_kernel *k)
{
    size_t i;
    for (i = 0; i < nroutes; i++)
        if (routes[i]->k == k)
            return &routes[i]->stand_in;
    return k;
}

/* In-process calls (_qf_worker_inline_begin): the pair's process itself
 * talks to the worker, which is a process of its own, so the kernel child
 * would only add a fork per pair.  A failure then returns (failed, with
 * the reason in call->msg) instead of ending a child, and the wait for
 * done has the pair's deadline (timed_out). */
static struct {
    int on, failed, timed_out;
    double deadline; /* _qf_rp_now_s() clock */
} inl;

void _qf_worker_inline_begin(double deadline)
{
    wout.len = wout.total = 0;
    inl.on = 1;
    inl.failed = inl.timed_out = 0;
    inl.deadline = deadline;
}

int _qf_worker_inline_end(void)
{
    int r = inl.timed_out ? 2 : inl.failed ? 1 : 0;
    inl.on = 0;
    return r;
}

/* A message into err[size] (when there is room). */
#define say(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

typedef _qf_line_reader reader;

#define read_line _qf_worker_read_line
#define write_all _qf_worker_write_all

/* Up to 80 bytes of a line, control characters as '?', for messages. */
static void quote80(const char *s, char *out, size_t size)
{
    size_t i, n = strlen(s);
    if (size < 2)
        return;
    for (i = 0; i < n && i < 80 && i + 1 < size; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    out[i] = '\0';
}

/* Start an instance and read its hello (parsed into *hello when asked, else
 * only checked).  0, or -1 with the reason in err. */
static int inst_start(worker *w, instance *in, json_t **hello, char *err, size_t err_size)
{
    reader rd = {NULL, 0, 0};
    char *line = NULL, q[96];
    json_t *root, *v;
    json_error_t je;
    int rc;
    if (_qf_wproc_spawn(w->cmd, w->label, w->shared ? &w->shared[in - w->inst].cap : NULL, w->serves, in, err,
                        err_size))
        return -1;
    rc = read_line(&rd, in->from, HELLO_MS, &line);
    if (rc != 1) {
        free(rd.buf);
        if (rc == 0)
            say(err, err_size, "no hello within %d s", HELLO_MS / 1000);
        else if (rc == -2)
            say(err, err_size, "hello longer than %u bytes", LINE_MAX_B);
        else {
            int st;
            _qf_wproc_close_fds(in);
            st = _qf_wproc_reap(in->pid, 1000);
            in->pid = 0;
            _qf_wproc_relay_reap(in);
            if (WIFSIGNALED(st))
                say(err, err_size, "no hello: it died of signal %d (%s)", WTERMSIG(st),
                    strsignal(WTERMSIG(st)));
            else
                say(err, err_size, "no hello: it exited with status %d", WEXITSTATUS(st));
            return -1;
        }
        goto fail;
    }
    free(rd.buf);
    root = json_loads(line, 0, &je);
    if (!root || !json_is_object(root)) {
        quote80(line, q, sizeof q);
        say(err, err_size, "the hello is not a JSON object: '%s'", q);
        json_decref(root);
        goto fail;
    }
    v = json_object_get(root, "qualify_worker");
    if (!json_is_integer(v) || json_integer_value(v) != 1) {
        char ver[32];
        if (json_is_integer(v))
            snprintf(ver, sizeof ver, "%lld", (long long)json_integer_value(v));
        else
            snprintf(ver, sizeof ver, "%s", v ? "not an integer" : "missing");
        say(err, err_size, "it speaks protocol version %s; this qualify speaks version 1", ver);
        json_decref(root);
        goto fail;
    }
    /* A worker that takes the memfd on its fd 3 gets no object with a
     * name (docs/workers.md "run"); one that does not, a named one. */
    in->takes_fd = json_is_true(json_object_get(root, "shm_fd"));
    if (hello)
        *hello = root;
    else
        json_decref(root);
    return 0;
fail:
    _qf_wproc_close_fds(in);
    _qf_wproc_reap(in->pid, 0);
    in->pid = 0;
    _qf_wproc_relay_reap(in);
    return -1;
}

/* Send bye to every instance, then give each 5 s to exit. */
static void worker_stop_all(worker *w)
{
    static const char bye[] = "{\"bye\": true}\n";
    double t0;
    size_t i;
    for (i = 0; i < SLOTS_MAX; i++)
        if (w->inst[i].pid) {
            write_all(w->inst[i].to, bye, sizeof bye - 1);
            _qf_wproc_close_fds(&w->inst[i]);
        }
    t0 = _qf_rp_now_s();
    for (i = 0; i < SLOTS_MAX; i++)
        if (w->inst[i].pid) {
            long left = 5000 - (long)((_qf_rp_now_s() - t0) * 1000);
            _qf_wproc_reap(w->inst[i].pid, left > 0 ? left : 0);
            w->inst[i].pid = 0;
            _qf_wproc_relay_reap(&w->inst[i]);
        }
    {
        /* What a kernel of these instances left behind and that escaped
         * their sessions came here (the runner is a subreaper). */
        static pid_t keep[8192];
        size_t n = _qf_worker_pids(keep, sizeof keep / sizeof keep[0]);
        if (n <= sizeof keep / sizeof keep[0])
            _qf_iso_reap_strays(keep, n);
    }
}

void _qf_worker_stop_everything(void)
{
    size_t i;
    for (i = 0; i < nall; i++)
        worker_stop_all(all[i]);
}

static void worker_free(worker *w)
{
    size_t i, j;
    if (!w)
        return;
    for (i = j = 0; i < nall; i++)
        if (all[i] != w)
            all[j++] = all[i];
    nall = j;
    if (!nall) {
        free(all);
        all = NULL;
    }
    for (i = j = 0; i < nroutes; i++)
        if (routes[i]->wk->w != w)
            routes[j++] = routes[i];
        else
            free(routes[i]);
    nroutes = j;
    if (!nroutes) {
        free(routes);
        routes = NULL;
    }
    for (i = 0; i < w->nk; i++) {
        free(w->k[i].name);
        free(w->k[i].desc);
        free(w->k[i].archs);
        for (j = 0; j < w->k[i].ndtypes; j++)
            free(w->k[i].dtype_names[j]);
        free(w->k[i].dtype_names);
        free(w->k[i].dtypes);
    }
    free(w->k);
    if (w->shared) {
        for (i = 0; i < SLOTS_MAX; i++)
            if (w->shared[i].shm_name[0])
                shm_unlink(w->shared[i].shm_name);
        munmap(w->shared, SLOTS_MAX * sizeof *w->shared);
    }
    if (w->label)
        munmap(w->label, LABEL_MAX);
    free(w->cmd);
    free(w->name);
    free(w);
}

/* The registry's close function. */
static void worker_close(void *h)
{
    worker *w = h;
    if (!w)
        return;
    worker_stop_all(w);
    worker_free(w);
}

/* ---- The hello's kernel records -------------------------------------------- */

static char *dup_str(json_t *v, const char *dflt)
{
    const char *s = json_is_string(v) ? json_string_value(v) : dflt;
    return s ? strdup(s) : NULL;
}

static qf_status worker_run(void *ctx, const qf_kernel_call *call);

/* A routed kernel's run function: its server's instance does the call. */
static qf_status served_run(void *ctx, const qf_kernel_call *call)
{
    wkernel *wk = call && call->kernel ? route_of(call->kernel) : NULL;
    (void)ctx;
    return wk ? worker_run(wk, call) : QF_EINVAL;
}

static worker *worker_of(const qf_kernel *k)
{
    wkernel *wk = !k ? NULL : k->run == worker_run ? k->user : route_of(k);
    return wk ? wk->w : NULL;
}

static int parse_kernel(worker *w, json_t *j, wkernel *wk, qf_kernel *k, char *err, size_t err_size)
{
    json_t *v, *dts = json_object_get(j, "dtypes"), *lim = json_object_get(j, "limits");
    const char *kname = json_string_value(json_object_get(j, "name")), *key, *bad = NULL;
    const char *opname = json_string_value(json_object_get(j, "op"));
    size_t i;
    int det = -1;
    memset(k, 0, sizeof *k);
    wk->w = w;
    if (!kname)
        return say(err, err_size, "a kernel has no \"name\""), -1;
    if (!opname || qf_op_lookup(opname, &k->op) != QF_OK)
        return say(err, err_size, "kernel %s: unknown op '%s' (qualify list ops)", kname,
                   opname ? opname : "?"),
               -1;
    if (strncmp(kname, opname, strlen(opname)) || kname[strlen(opname)] != '.')
        return say(err, err_size, "kernel %s: the name must start with its op, '%s.'", kname, opname), -1;
    k->kind = QF_KERNEL_OPTIMIZED;
    if ((v = json_object_get(j, "kind")) &&
        (!json_is_string(v) || qf_kernel_kind_lookup(json_string_value(v), &k->kind) != QF_OK))
        return say(err, err_size, "kernel %s: unknown kind (reference, optimized, model, known-bad)", kname),
               -1;
    if ((v = json_object_get(j, "deterministic")) && _qf_claim_int(v, &det))
        return say(err, err_size, "kernel %s: \"deterministic\" must be true or false", kname), -1;
    wk->name = dup_str(json_object_get(j, "name"), NULL);
    wk->desc = dup_str(json_object_get(j, "description"), "");
    wk->archs = dup_str(json_object_get(j, "archs"), "cpu");
    if (!json_is_array(dts) || json_array_size(dts) == 0)
        return say(err, err_size, "kernel %s: \"dtypes\" must be a non-empty list", kname), -1;
    wk->ndtypes = json_array_size(dts);
    wk->dtypes = calloc(wk->ndtypes, sizeof *wk->dtypes);
    wk->dtype_names = calloc(wk->ndtypes, sizeof *wk->dtype_names);
    if (!wk->name || !wk->desc || !wk->archs || !wk->dtypes || !wk->dtype_names)
        return say(err, err_size, "out of memory"), -1;
    for (i = 0; i < wk->ndtypes; i++) {
        json_t *d = json_array_get(dts, i), *cl = json_object_get(d, "claim"), *cv;
        qf_dtype_tuple *t = &wk->dtypes[i];
        const char *dn = json_string_value(json_object_get(d, "name"));
        if (!dn)
            return say(err, err_size, "kernel %s: dtypes[%zu] has no \"name\"", kname, i), -1;
        wk->dtype_names[i] = strdup(dn);
        if (!wk->dtype_names[i])
            return say(err, err_size, "out of memory"), -1;
        t->name = wk->dtype_names[i];
        t->arith = qf_arith_claim_default();
        if (_qf_worker_tuple_slots(json_object_get(d, "in"), qf_op_slot_count(k->op, 0), t->in, &bad) ||
            _qf_worker_tuple_slots(json_object_get(d, "out"), qf_op_slot_count(k->op, 1), t->out, &bad))
            return say(err, err_size,
                       "kernel %s: dtype %s: \"in\" and \"out\" must list formats of the op's slots%s%s",
                       kname, dn, bad ? "; unknown format " : "", bad ? bad : ""),
                   -1;
        if (cl && !json_is_object(cl))
            return say(err, err_size, "kernel %s: dtype %s: \"claim\" must be an object", kname, dn), -1;
        json_object_foreach(cl, key, cv)
        {
            if (_qf_claim_field(&t->arith, key, cv))
                return say(err, err_size, "kernel %s: dtype %s: claim field '%s' is unknown or malformed",
                           kname, dn, key),
                       -1;
        }
        if (_qf_worker_tuple_scales(json_object_get(d, "in_scale"), qf_op_slot_count(k->op, 0), t))
            return say(err, err_size,
                       "kernel %s: dtype %s: \"in_scale\" must list {kind, format, block} per input slot",
                       kname, dn),
                   -1;
        if (det >= 0)
            t->arith.deterministic = det;
        if (qf_arith_claim_check(&t->arith) != QF_OK)
            return say(err, err_size, "kernel %s: dtype %s: the claim is out of its domain (docs/bounds.md)",
                       kname, dn),
                   -1;
    }
    /* "layouts": the operand layouts it takes beyond dense (docs/workers.md);
     * absent: dense row-major only. */
    if ((v = json_object_get(j, "layouts"))) {
        size_t li;
        if (!json_is_array(v))
            return say(err, err_size, "kernel %s: \"layouts\" must be a list of names", kname), -1;
        for (li = 0; li < json_array_size(v); li++) {
            const char *ln = json_string_value(json_array_get(v, li));
            uint32_t bit;
            if (!ln || qf_layout_lookup(ln, &bit) != QF_OK)
                return say(err, err_size, "kernel %s: unknown layout '%s' (dense, ld, col, batch)", kname,
                           ln ? ln : "?"),
                       -1;
            k->layouts |= bit;
        }
    }
    if (lim && !json_is_object(lim))
        return say(err, err_size, "kernel %s: \"limits\" must be an object", kname), -1;
    json_object_foreach(lim, key, v)
    {
        int d, nd = qf_op_dim_count(k->op), found = -1;
        for (d = 0; d < nd; d++)
            if (!strcasecmp(qf_op_dim_name(k->op, d), key))
                found = d;
        if (found < 0 || !json_is_object(v))
            return say(err, err_size, "kernel %s: limits: '%s' is not a dimension of %s", kname, key, opname),
                   -1;
        if (json_is_integer(json_object_get(v, "min")))
            k->limits.min[found] = json_integer_value(json_object_get(v, "min"));
        if (json_is_integer(json_object_get(v, "max")))
            k->limits.max[found] = json_integer_value(json_object_get(v, "max"));
        if (json_is_integer(json_object_get(v, "align")))
            k->limits.multiple_of[found] = json_integer_value(json_object_get(v, "align"));
    }
    k->abi_version = QF_KERNEL_ABI_VERSION;
    k->struct_size = (uint32_t)sizeof *k;
    k->name = wk->name;
    k->description = wk->desc;
    k->backend = "cpu";
    k->archs = wk->archs;
    k->dtypes = wk->dtypes;
    k->n_dtypes = wk->ndtypes;
    k->run = worker_run;
    k->user = wk;
    return 0;
}

int qf_worker_kernel_is(const qf_kernel *k)
{
    return k && (k->run == worker_run || route_of(k));
}

/* A worker for cmd (a kernel server when serves) with its first instance
 * started and its hello read. */
static qf_status worker_new(const char *cmd, int serves, worker **out, json_t **hello, char *err,
                            size_t err_size)
{
    worker *w = calloc(1, sizeof *w);
    char why[512];
    size_t i;
    *out = NULL;
    if (!w)
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    w->serves = serves;
    _qf_iso_note_children(); /* the caller's, before any of ours */
    if (all_add(w)) {
        free(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    for (i = 0; i < SLOTS_MAX; i++)
        w->inst[i].to = w->inst[i].from = w->inst[i].mem = w->inst[i].err = -1;
    w->cmd = strdup(cmd);
    w->shared =
        mmap(NULL, SLOTS_MAX * sizeof *w->shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w->shared == MAP_FAILED)
        w->shared = NULL;
    w->label = mmap(NULL, LABEL_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w->label == MAP_FAILED)
        w->label = NULL;
    if (!w->cmd || !w->shared || !w->label) {
        worker_free(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    if (inst_start(w, &w->inst[0], hello, why, sizeof why)) {
        say(err, err_size, "worker '%s': %s", cmd, why);
        worker_free(w);
        return strstr(why, "protocol version") || strstr(why, "JSON") ? QF_EPARSE : QF_EIO;
    }
    *out = w;
    return QF_OK;
}

qf_status qf_worker_start(qf_registry *r, const char *cmd, char *err, size_t err_size)
{
    worker *w;
    json_t *hello = NULL, *ks, *nm;
    char why[512];
    size_t i;
    int pl;
    qf_status s = QF_OK;
    if (!r || !cmd || !*cmd)
        return say(err, err_size, "no worker command given"), QF_EINVAL;
    if ((s = worker_new(cmd, 0, &w, &hello, err, err_size)) != QF_OK)
        return s;
    nm = json_object_get(hello, "name");
    w->name = strdup(json_is_string(nm) ? json_string_value(nm) : cmd);
    if (w->name)
        snprintf(w->label, LABEL_MAX, "%s", w->name);
    ks = json_object_get(hello, "kernels");
    if (!w->name || !json_is_array(ks) || json_array_size(ks) == 0) {
        qf_status bad = w->name ? QF_EPARSE : QF_ENOMEM;
        say(err, err_size, "worker %s: the hello lists no kernels", w->name ? w->name : cmd);
        json_decref(hello);
        worker_close(w);
        return bad;
    }
    w->nk = json_array_size(ks);
    w->k = calloc(w->nk, sizeof *w->k);
    if (!w->k) {
        json_decref(hello);
        worker_close(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    {
        char origin[600];
        snprintf(origin, sizeof origin, "worker:%s", cmd);
        pl = _qf_registry_owner_begin(r, origin, w, worker_close);
    }
    if (pl < 0) {
        json_decref(hello);
        worker_close(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    for (i = 0; i < w->nk && s == QF_OK; i++) {
        qf_kernel k;
        if (parse_kernel(w, json_array_get(ks, i), &w->k[i], &k, why, sizeof why)) {
            say(err, err_size, "worker %s: %s", w->name, why);
            s = QF_EINVAL;
        } else if ((s = qf_registry_add(r, &k)) != QF_OK) {
            say(err, err_size, "worker %s: kernel %s: %s", w->name, k.name, qf_registry_error(r));
        }
    }
    json_decref(hello);
    /* On failure this removes the kernels added and closes the worker. */
    _qf_registry_plugin_end(r, pl, s == QF_OK);
    return s;
}

/* Does the hello's record j describe kernel k: the same op and the same
 * dtype tuples by name, in order?  (The server built its registry from the
 * same sources; a mismatch means it did not, and k stays in-process.) */
static int same_kernel(json_t *j, const qf_kernel *k)
{
    json_t *dts = json_object_get(j, "dtypes");
    const char *op = json_string_value(json_object_get(j, "op"));
    size_t i;
    if (!op || !qf_op_name(k->op) || strcmp(op, qf_op_name(k->op)) || json_array_size(dts) != k->n_dtypes)
        return 0;
    for (i = 0; i < k->n_dtypes; i++) {
        const char *n = json_string_value(json_object_get(json_array_get(dts, i), "name"));
        if (!n || strcmp(n, k->dtypes[i].name ? k->dtypes[i].name : ""))
            return 0;
    }
    return 1;
}

qf_status qf_worker_route(qf_registry *r, const char *cmd, size_t *n_routed, char *err, size_t err_size)
{
    worker *w;
    json_t *hello = NULL, *ks, *nm, *by = NULL;
    size_t i, n = qf_registry_count(r), nr = 0;
    route **nrts;
    int pl;
    qf_status s;
    if (n_routed)
        *n_routed = 0;
    if (!r || !cmd || !*cmd)
        return say(err, err_size, "no kernel server command given"), QF_EINVAL;
    if ((s = worker_new(cmd, 1, &w, &hello, err, err_size)) != QF_OK)
        return s;
    w->swk.w = w;
    nm = json_object_get(hello, "name");
    w->name = strdup(json_is_string(nm) ? json_string_value(nm) : cmd);
    if (w->name)
        snprintf(w->label, LABEL_MAX, "%s", w->name);
    ks = json_object_get(hello, "kernels");
    by = json_object();
    nrts = realloc(routes, (nroutes + n + 1) * sizeof *routes);
    if (!w->name || !by || !nrts) {
        json_decref(hello);
        json_decref(by);
        worker_close(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    routes = nrts;
    for (i = 0; i < json_array_size(ks); i++) {
        json_t *j = json_array_get(ks, i);
        if (json_is_string(json_object_get(j, "name")))
            json_object_set(by, json_string_value(json_object_get(j, "name")), j);
    }
    pl = _qf_registry_owner_begin(r, "kernel-server", w, worker_close);
    if (pl < 0) {
        json_decref(hello);
        json_decref(by);
        worker_close(w);
        return say(err, err_size, "out of memory"), QF_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        const qf_kernel *k = qf_registry_get(r, i);
        json_t *j = json_object_get(by, k->name);
        route *rt;
        if (qf_worker_kernel_is(k) || !j || !same_kernel(j, k) || !(rt = calloc(1, sizeof *rt)))
            continue;
        rt->k = k;
        rt->wk = &w->swk;
        rt->stand_in = *k;
        rt->stand_in.run = served_run;
        rt->stand_in.init = NULL;
        rt->stand_in.fini = NULL;
        routes[nroutes++] = rt;
        nr++;
    }
    json_decref(hello);
    json_decref(by);
    _qf_registry_plugin_end(r, pl, 1);
    if (n_routed)
        *n_routed = nr;
    return QF_OK;
}

/* ---- The runner's hooks (parent) ----------------------------------------------- */

void _qf_worker_before_pair(const qf_kernel *k, int slot)
{
    worker *w;
    instance *in;
    slot_state *st;
    char why[200];
    cur_slot = slot;
    if (!(w = worker_of(k)) || slot < 0 || slot >= SLOTS_MAX)
        return;
    in = &w->inst[slot];
    st = &w->shared[slot];
    if (in->pid || st->down)
        return;
    if (in->fails > RESTARTS_MAX) {
        snprintf(st->why, sizeof st->why, "worker %s given up after %d restarts", w->name, RESTARTS_MAX);
        st->down = 2; /* for good */
        return;
    }
    if (inst_start(w, in, NULL, why, sizeof why)) {
        snprintf(st->why, sizeof st->why, "worker %s could not be started: %s", w->name, why);
        st->down = 1;
        in->fails++;
    }
}

void _qf_worker_pair_child(int slot)
{
    size_t i, s;
    for (i = 0; i < nall; i++)
        for (s = 0; s < SLOTS_MAX; s++)
            if ((int)s != slot)
                _qf_wproc_close_fds(&all[i]->inst[s]);
}

/* A pair's process that died inside a run left its capture on: what was
 * captured has no record to go to, so it goes where output outside a run
 * goes, prefixed and escaped. */
static void cap_orphan(const worker *w, _qf_wcap *cap)
{
    __atomic_store_n(&cap->on, 0, __ATOMIC_SEQ_CST);
    if (!cap->len)
        return;
    _qf_iso_text_clean(cap->text, cap->len);
    fputs("[worker ", stderr);
    _qf_esc_term(stderr, w->name ? w->name : w->cmd);
    fputs("] ", stderr);
    _qf_esc_term(stderr, cap->text);
    fputc('\n', stderr);
    cap->len = cap->total = 0;
}

void _qf_worker_after_pair(const qf_kernel *k, int slot, qf_result *r)
{
    worker *w;
    instance *in;
    slot_state *st;
    int ws = 0, fault, exited = 0, in_run;
    if (!(w = worker_of(k)) || slot < 0 || slot >= SLOTS_MAX)
        return;
    in = &w->inst[slot];
    st = &w->shared[slot];
    if (st->shm_name[0]) { /* a child killed mid-run leaves its object */
        shm_unlink(st->shm_name);
        st->shm_name[0] = '\0';
    }
    if (in->mem >= 0) /* ... or its memfd's pages */
        (void)!ftruncate(in->mem, 0);
    if (st->cap.on)
        cap_orphan(w, &st->cap);
    if (st->down == 1)
        st->down = 0; /* try again on the next pair */
    if (!in->pid)
        return;
    fault = st->busy || st->broken;
    in_run = st->busy;
    if (!fault) {
        pid_t p = waitpid(in->pid, &ws, WNOHANG);
        exited = p == in->pid;
        if (!exited) {
            in->fails = 0;
            return;
        }
    }
    _qf_wproc_close_fds(in);
    if (!exited)
        /* A worker whose output closed is exiting: a moment to learn its
         * status.  A hung or babbling one is killed at once. */
        ws = _qf_wproc_reap(in->pid, st->gone ? 2000 : 0);
    in->pid = 0;
    _qf_wproc_relay_reap(in);
    /* A kernel server that dies or hangs inside a run was taken down by the
     * kernel it ran: that pair's verdict, not a fault of the server, so
     * only a server failing outside a run (at start, between runs) counts
     * towards giving it up. */
    in->fails = w->serves && in_run ? 0 : in->fails + 1;
    if (st->gone && r && r->verdict == QF_VERDICT_CRASHED && w->serves) {
        int sig = WIFSIGNALED(ws)                                                ? WTERMSIG(ws)
                  : WIFEXITED(ws) && WEXITSTATUS(ws) > 128 && WEXITSTATUS(ws) < 160 ? WEXITSTATUS(ws) - 128
                                                                                  : 0;
        /* The words of a kernel child's crash (runner.c run_child). */
        if (sig) {
            r->signal = sig;
            snprintf(r->reason, sizeof r->reason, "crashed: signal %d (%s) in the kernel server", sig,
                     strsignal(sig));
        } else if (WIFEXITED(ws)) {
            r->exit_code = WEXITSTATUS(ws);
            snprintf(r->reason, sizeof r->reason,
                     "crashed: the kernel server exited with status %d before finishing", r->exit_code);
        }
    } else if (st->gone && r && r->verdict == QF_VERDICT_CRASHED) {
        if (WIFSIGNALED(ws)) {
            r->signal = WTERMSIG(ws);
            snprintf(r->reason, sizeof r->reason, "crashed: worker %s died of signal %d (%s)", w->name,
                     r->signal, strsignal(r->signal));
        } else if (WIFEXITED(ws) && WEXITSTATUS(ws) > 128 && WEXITSTATUS(ws) < 128 + 32) {
            /* /bin/sh -c may run the command as its child, and a shell
             * reports a child's death by signal N as status 128 + N. */
            r->exit_code = WEXITSTATUS(ws);
            snprintf(r->reason, sizeof r->reason,
                     "crashed: worker %s died of signal %d (%s; shell status %d)", w->name,
                     r->exit_code - 128, strsignal(r->exit_code - 128), r->exit_code);
        } else if (WIFEXITED(ws)) {
            r->exit_code = WEXITSTATUS(ws);
            snprintf(r->reason, sizeof r->reason, "crashed: worker %s exited with status %d", w->name,
                     r->exit_code);
        }
    }
    st->busy = st->broken = st->gone = 0;
}

void _qf_worker_slot_stop(int slot)
{
    size_t i;
    if (slot < 0 || slot >= SLOTS_MAX)
        return;
    for (i = 0; i < nall; i++) {
        instance *in = &all[i]->inst[slot];
        if (!all[i]->serves || !in->pid)
            continue;
        _qf_wproc_close_fds(in);
        _qf_wproc_reap(in->pid, 0);
        in->pid = 0;
        _qf_wproc_relay_reap(in);
        all[i]->shared[slot].busy = all[i]->shared[slot].broken = all[i]->shared[slot].gone = 0;
    }
}

/* ---- The run function (kernel child) ------------------------------------------------ */

typedef struct region {
    const void *src; /* the runner's buffer */
    void *dst;       /* outputs: where the codes go back */
    size_t off, bytes;
    int is_out;
} region;

#define REGIONS_MAX (3 * (QF_KERNEL_MAX_IN + QF_KERNEL_MAX_OUT)) /* data, scales, zero points */

static size_t round_page(size_t n)
{
    return (n + PAGE - 1) / PAGE * PAGE;
}

/* Place a region: a fill page before each one and at least a page after,
 * so that an output's guard windows lie inside the object. */
static size_t place(region *rg, size_t *nrg, size_t *cur, const void *src, void *dst, size_t bytes,
                    int is_out)
{
    region *g = &rg[(*nrg)++];
    g->src = src;
    g->dst = dst;
    g->bytes = bytes;
    g->is_out = is_out;
    g->off = *cur;
    *cur = round_page(g->off + bytes) + PAGE;
    return g->off;
}

/* Where a tensor's parts lie in the run's shared memory. */
typedef struct placed {
    size_t off, soff, sbytes, zoff, zbytes;
} placed;

static json_t *tensor_json(const qf_tensor *t, const char *slot, int is_out, const placed *pl)
{
    json_t *o = json_object(), *sh = json_array(), *sd = json_array();
    const qf_format *f = qf_format_get(t->format);
    int d;
    for (d = 0; d < t->ndim; d++) {
        json_array_append_new(sh, json_integer(t->shape[d]));
        json_array_append_new(sd, json_integer(t->stride[d]));
    }
    json_object_set_new(o, "slot", json_string(slot));
    json_object_set_new(o, "format", json_string(f ? f->name : "?"));
    if (t->index_bits)
        json_object_set_new(o, "index_bits", json_integer(t->index_bits));
    if (t->packed)
        json_object_set_new(o, "packed", json_true());
    json_object_set_new(o, "shape", sh);
    json_object_set_new(o, "strides", sd);
    json_object_set_new(o, "offset", json_integer((json_int_t)pl->off));
    json_object_set_new(o, "bytes", json_integer((json_int_t)t->bytes));
    if (t->scale.kind != QF_SCALE_NONE && t->scale.data) {
        const qf_format *sf = qf_format_get(t->scale.format);
        json_t *s = json_object();
        json_object_set_new(s, "kind", json_string(qf_scale_kind_name(t->scale.kind)));
        json_object_set_new(s, "format", json_string(sf ? sf->name : "?"));
        json_object_set_new(s, "offset", json_integer((json_int_t)pl->soff));
        json_object_set_new(s, "bytes", json_integer((json_int_t)pl->sbytes));
        json_object_set_new(s, "count", json_integer((json_int_t)t->scale.count));
        json_object_set_new(s, "axis", json_integer(t->scale.axis));
        json_object_set_new(s, "block", json_integer((json_int_t)t->scale.block));
        if (pl->zbytes) {
            json_t *z = json_object();
            json_object_set_new(z, "offset", json_integer((json_int_t)pl->zoff));
            json_object_set_new(z, "bytes", json_integer((json_int_t)pl->zbytes));
            json_object_set_new(s, "zero_point", z);
        }
        /* NVFP4's second level: an input's tensor scale is given; an
         * output's is the kernel's to set (done's "global_codes"). */
        if (t->scale.has_global && !is_out)
            json_object_set_new(s, "global_code", json_integer((json_int_t)t->scale.global_code));
        else if (t->scale.has_global)
            json_object_set_new(s, "global", json_true());
        json_object_set_new(o, "scale", s);
    }
    return o;
}

/* The kernel child's way out when the worker failed: the reason goes to
 * the runner in the message, the state to the parent. */
static qf_status child_fail(const qf_kernel_call *call, slot_state *st, int broken, int gone, const char *fmt,
                            ...) __attribute__((format(printf, 5, 6)));
static qf_status child_fail(const qf_kernel_call *call, slot_state *st, int broken, int gone, const char *fmt,
                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (call->msg && call->msg_size)
        vsnprintf(call->msg, call->msg_size, fmt, ap);
    va_end(ap);
    if (st->shm_name[0]) {
        shm_unlink(st->shm_name);
        st->shm_name[0] = '\0';
    }
    st->gone = gone;
    st->broken = broken;
    if (!inl.on)
        _exit(_QF_WORKER_EXIT);
    inl.failed = 1;
    return QF_EIO;
}

static size_t scale_bytes(const qf_tensor_scale *s)
{
    const qf_format *f = qf_format_get(s->format);
    return f ? qf_format_array_bytes(f, s->count) : 0;
}

static void snapshot(const instance *in, const qf_kernel *k, unsigned char *base, size_t total, const region *rg,
                     size_t nrg);

/* The status of an "error" done: a kernel server's "code" names the
 * kernel's own (qf_status_str: "out of memory" ...); any other worker's
 * error is QF_EIO, which the runner words as the kernel reporting one. */
static qf_status served_status(const worker *w, json_t *code)
{
    qf_status s;
    for (s = QF_EINVAL; w->serves && json_is_string(code) && s <= QF_EDEVICE; s++)
        if (!strcmp(json_string_value(code), qf_status_str(s)))
            return s;
    return QF_EIO;
}

static qf_status worker_exchange(void *ctx, const qf_kernel_call *call)
{
    static reader rd;       /* the child's, kept across the runs of one child */
    static unsigned serial; /* objects made by this child */
    wkernel *wk = ctx;
    worker *w = wk->w;
    instance *in;
    slot_state *st;
    region rg[REGIONS_MAX];
    size_t nrg = 0, cur = PAGE, i, total;
    int nin = qf_op_slot_count(call->kernel->op, 0), nout = qf_op_slot_count(call->kernel->op, 1), s;
    json_t *msg, *ins, *outs, *done = NULL, *v;
    char *text, *line = NULL, q[96], seed[32];
    unsigned char *base;
    uint64_t id;
    int fd;
    if (cur_slot < 0 || cur_slot >= SLOTS_MAX)
        return QF_EINVAL;
    in = &w->inst[cur_slot];
    st = &w->shared[cur_slot];
    /* the last runs' outputs checked before the memory is reused (worker_held.c) */
    _qf_wheld_check_release();
    if (st->down)
        return child_fail(call, st, 0, 0, "%s", st->why);
    if (!in->pid)
        return child_fail(call, st, 0, 0, "worker %s is not running in this job slot", w->name);
    ins = json_array();
    outs = json_array();
    for (s = 0; s < nin + nout; s++) {
        int is_out = s >= nin, sl = is_out ? s - nin : s;
        const qf_tensor *t = is_out ? &call->out[sl] : &call->in[sl];
        placed pl = {0, 0, 0, 0, 0};
        if (!t->data)
            continue;
        pl.off = place(rg, &nrg, &cur, t->data, is_out ? t->data : NULL, t->bytes, is_out);
        if (t->scale.kind != QF_SCALE_NONE && t->scale.data) {
            pl.sbytes = scale_bytes(&t->scale);
            pl.soff = place(rg, &nrg, &cur, t->scale.data, is_out ? t->scale.data : NULL, pl.sbytes, is_out);
            if (t->scale.zero_point && is_out) {
                /* No op writes zero points yet; the copy back would need
                 * them in a guarded buffer like the codes. */
                json_decref(ins);
                json_decref(outs);
                snprintf(call->msg, call->msg_size, "output zero points are not in worker protocol 1");
                return QF_EUNSUPPORTED;
            }
            if (t->scale.zero_point) {
                pl.zbytes = t->scale.count * sizeof(int16_t);
                pl.zoff = place(rg, &nrg, &cur, t->scale.zero_point, NULL, pl.zbytes, 0);
            }
        }
        json_array_append_new(is_out ? outs : ins,
                              tensor_json(t, qf_op_slot_name(call->kernel->op, is_out, sl), is_out, &pl));
    }
    total = cur;
    base = MAP_FAILED;
    if (in->takes_fd && in->mem >= 0) {
        /* The slot's memfd, emptied and sized to this run: no name ever
         * exists, and only this process and the slot's instance hold it. */
        if (!ftruncate(in->mem, 0) && !ftruncate(in->mem, (off_t)total))
            base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, in->mem, 0);
    } else {
        /* A worker that did not take the descriptor: a named object, open
         * to the user's processes until it is unlinked (docs/security.md). */
        snprintf(st->shm_name, sizeof st->shm_name, "/qf-w-%d-%u", (int)getpid(), serial++);
        fd = shm_open(st->shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0 && !ftruncate(fd, (off_t)total))
            base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fd >= 0) {
            int e = errno;
            close(fd);
            errno = e;
        }
    }
    if (base == MAP_FAILED) {
        int e = errno;
        if (st->shm_name[0])
            shm_unlink(st->shm_name);
        st->shm_name[0] = '\0';
        json_decref(ins);
        json_decref(outs);
        snprintf(call->msg, call->msg_size, "cannot make the shared memory: %s", strerror(e));
        return QF_EIO;
    }
    /* Outputs carry the runner's poison and its guard windows, so that the
     * runner's own checks (canary, unwritten) see what the worker did. */
    memset(base, FILL_BYTE, total);
    for (i = 0; i < nrg; i++) {
        memcpy(base + rg[i].off, rg[i].src, rg[i].bytes);
        if (rg[i].is_out) {
            memcpy(base + rg[i].off - PAGE, (const unsigned char *)rg[i].src - PAGE, PAGE);
            memcpy(base + rg[i].off + rg[i].bytes, (const unsigned char *)rg[i].src + rg[i].bytes, PAGE);
        }
    }
    id = ++st->next_id;
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)call->seed);
    msg = json_object();
    json_object_set_new(msg, "run", json_integer((json_int_t)id));
    json_object_set_new(msg, "kernel", json_string(call->kernel->name));
    json_object_set_new(msg, "dtype", json_string(call->dtype->name));
    json_object_set_new(msg, "threads", json_integer(call->threads));
    json_object_set_new(msg, "seed", json_string(seed));
    json_object_set_new(msg, "op", _qf_op_json(call->op));
    if (st->shm_name[0])
        json_object_set_new(msg, "shm", json_string(st->shm_name));
    else
        json_object_set_new(msg, "shm_fd", json_integer(_QF_WORKER_SHM_FD));
    json_object_set_new(msg, "shm_bytes", json_integer((json_int_t)total));
    json_object_set_new(msg, "in", ins);
    json_object_set_new(msg, "out", outs);
    text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(msg);
    if (!text) {
        munmap(base, total);
        return child_fail(call, st, 0, 0, "out of memory writing the run message");
    }
    {
        /* Anything the worker said unasked is a protocol break. */
        struct pollfd pf = {in->from, POLLIN, 0};
        if (rd.len || (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLIN | POLLHUP)))) {
            int rc = read_line(&rd, in->from, 0, &line);
            if ((rc == -1 && !rd.len) || (rc != 1 && !rd.len && !(pf.revents & POLLIN)))
                return child_fail(call, st, 1, 1, "worker %s exited before this run was sent", w->name);
            if (rc != 1)
                rd.buf[rd.len < rd.cap ? rd.len : rd.cap - 1] = '\0'; /* what it has sent so far */
            quote80(rc == 1 ? line : rd.buf ? rd.buf : "", q, sizeof q);
            return child_fail(call, st, 1, 0, "worker %s broke the protocol: output before a run: '%s'", w->name, q);
        }
    }
    st->busy = 1;
    {
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps's terminator becomes the line's end */
        if (write_all(in->to, text, n + 1)) {
            free(text);
            return child_fail(call, st, 1, 1, "worker %s exited", w->name);
        }
        free(text);
    }
    /* The answer, in steps of 50 ms: between them, the disk cap of the
     * instance's scratch directory (_sandbox.h). */
    for (;;) {
        double left = inl.on ? inl.deadline - _qf_rp_now_s() : 1e9;
        unsigned long long used, cap = _qf_iso_limits()->disk;
        s = read_line(&rd, in->from, left < 0.05 ? (int)(left * 1000) + 1 : 50, &line);
        if (s != 0 || left < 0.05)
            break;
        if (cap && (used = _qf_sbx_scratch_bytes(in->pid)) > cap)
            return child_fail(call, st, 1, 0,
                              "the kernel process wrote %llu MiB into its scratch directory, over the %llu MiB cap "
                              "(--kernel-disk), and was killed",
                              used >> 20, cap >> 20);
    }
    if (s == 0) {
        /* In-process only (a kernel child is killed at the limit): busy
         * stays set, so the parent kills and restarts the worker. */
        inl.timed_out = 1;
        snprintf(call->msg, call->msg_size, "timed out");
        return QF_EIO;
    }
    if (s == -1)
        return child_fail(call, st, 1, 1, "worker %s exited", w->name);
    if (s == -2)
        return child_fail(call, st, 1, 0, "worker %s broke the protocol: a line over %u bytes", w->name, LINE_MAX_B);
    snapshot(in, call->kernel, base, total, rg, nrg);
    {
        unsigned long long used, cap = _qf_iso_limits()->disk;
        if (cap && (used = _qf_sbx_scratch_bytes(in->pid)) > cap)
            return child_fail(call, st, 1, 0,
                              "the kernel process wrote %llu MiB into its scratch directory, over the %llu MiB cap "
                              "(--kernel-disk), and was killed",
                              used >> 20, cap >> 20);
    }
    done = json_loads(line, 0, NULL);
    v = json_object_get(done, "done");
    if (!json_is_object(done) || !json_is_integer(v) || (uint64_t)json_integer_value(v) != id ||
        !json_is_string(json_object_get(done, "status"))) {
        quote80(line, q, sizeof q);
        return child_fail(call, st, 1, 0,
                   "worker %s broke the protocol: expected {\"done\": %llu, \"status\": ...}, got '%s'",
                   w->name, (unsigned long long)id, q);
    }
    st->busy = 0;
    {
        const char *status = json_string_value(json_object_get(done, "status"));
        const char *why = json_string_value(json_object_get(done, "msg"));
        qf_status ret = QF_OK;
        if (!strcmp(status, "unsupported"))
            ret = QF_EUNSUPPORTED;
        else if (!strcmp(status, "error"))
            ret = served_status(w, json_object_get(done, "code"));
        else if (!strcmp(status, "device_lost"))
            ret = QF_EDEVICE;
        else if (strcmp(status, "ok")) {
            quote80(line, q, sizeof q);
            return child_fail(call, st, 1, 0, "worker %s broke the protocol: unknown status in '%s'", w->name, q);
        }
        if (ret != QF_OK)
            snprintf(call->msg, call->msg_size, "%s", why ? why : "");
        if ((v = json_object_get(done, "output")) && json_is_string(v)) {
            json_t *ob = json_object_get(done, "output_bytes");
            wout_add(json_string_value(v), json_is_integer(ob) && json_integer_value(ob) > 0
                                               ? (size_t)json_integer_value(ob)
                                               : 0);
        }
        for (s = 0; s < nout && ret == QF_OK; s++) {
            /* Outputs with a second-level scale: the kernel's choice. */
            qf_tensor *t = &call->out[s];
            json_t *g = json_object_get(json_object_get(done, "global_codes"), qf_op_slot_name(call->kernel->op, 1, s));
            if (!t->data || !t->scale.has_global)
                continue;
            if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > 0xFFFFFFFFll) {
                /* The kernel's omission, not a protocol break. */
                snprintf(call->msg, call->msg_size,
                         "the run gave no global scale for output %s (done's \"global_codes\": {\"%s\": float32 bits})",
                         qf_op_slot_name(call->kernel->op, 1, s), qf_op_slot_name(call->kernel->op, 1, s));
                ret = QF_EIO;
                break;
            }
            t->scale.global_code = (uint32_t)json_integer_value(g);
        }
        json_decref(done);
        /* Bytes the kernel wrote into an input go back into the runner's
         * copy of it, whose check names the input (runner.c kio_check):
         * only for the runner, which hands this call copies. */
        for (i = 0; inl.on && i < nrg; i++)
            if (!rg[i].is_out && memcmp(base + rg[i].off, rg[i].src, rg[i].bytes))
                memcpy((void *)(uintptr_t)rg[i].src, base + rg[i].off, rg[i].bytes);
        /* The outputs were copied at done (snapshot); the mapping stays
         * until they are checked again (worker_held.c). */
        if (st->shm_name[0])
            shm_unlink(st->shm_name);
        st->shm_name[0] = '\0';
        return ret;
    }
}

/* The outputs as they are at done, before anything else (the JSON of the
 * done line is parsed after): into the runner's buffers, guard bytes
 * included (a changed one goes back too: the runner's canary check
 * reports it like any kernel's overrun); then the mapping is kept with a
 * hash of each output region (worker_held.c). */
static void snapshot(const instance *in, const qf_kernel *k, unsigned char *base, size_t total, const region *rg,
                     size_t nrg)
{
    size_t off[REGIONS_MAX], bytes[REGIONS_MAX], n = 0, i, b;
    const char *names[REGIONS_MAX];
    static const char *const label[] = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"};
    for (i = 0; i < nrg; i++) {
        unsigned char *dst = rg[i].dst, *sh = base + rg[i].off;
        if (!rg[i].is_out)
            continue;
        memcpy(dst, sh, rg[i].bytes);
        for (b = 0; b < PAGE; b++) {
            if (sh[b - PAGE] != dst[b - PAGE])
                dst[b - PAGE] = sh[b - PAGE];
            if (sh[rg[i].bytes + b] != dst[rg[i].bytes + b])
                dst[rg[i].bytes + b] = sh[rg[i].bytes + b];
        }
        off[n] = rg[i].off;
        bytes[n] = rg[i].bytes;
        names[n] = n < sizeof label / sizeof label[0] ? label[n] : "?";
        n++;
    }
    _qf_wheld_add(in, in->takes_fd ? in->mem : -1, k, base, total, off, bytes, names, n);
}

/* What the instance writes to its standard error during the run is the
 * pair's (docs/workers.md "Standard error"): what it wrote before is
 * relayed first (settle), and what it wrote before its done is in the pipe
 * before the done, so settling after the exchange collects it. */
static qf_status worker_run(void *ctx, const qf_kernel_call *call)
{
    wkernel *wk = ctx;
    instance *in;
    _qf_wcap *cap;
    qf_status ret;
    if (cur_slot < 0 || cur_slot >= SLOTS_MAX)
        return QF_EINVAL;
    in = &wk->w->inst[cur_slot];
    cap = &wk->w->shared[cur_slot].cap;
    _qf_wproc_settle(in, cap);
    cap->len = cap->total = 0;
    cap->text[0] = '\0';
    __atomic_add_fetch(&cap->runs, 1, __ATOMIC_SEQ_CST); /* a new gap for the relay */
    __atomic_store_n(&cap->on, 1, __ATOMIC_SEQ_CST);
    ret = worker_exchange(ctx, call);
    _qf_wproc_settle(in, cap);
    __atomic_store_n(&cap->on, 0, __ATOMIC_SEQ_CST);
    if (cap->total) {
        /* As a kernel child's capture: NULs and bytes that are not UTF-8
         * as '?', control characters kept (JSON escapes them). */
        _qf_iso_text_clean(cap->text, cap->len);
        wout_add(cap->text, cap->total);
    }
    return ret;
}
