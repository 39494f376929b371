/* plugin.c: load kernels from a shared object (qf_registry_load_plugin).
 *
 * The plugin exports one function, QF_PLUGIN_ENTRY, and reaches the host
 * only through the qf_plugin_host table it is given: the qualify binary
 * links libqualify statically, so a plugin cannot count on resolving
 * libqualify's symbols against it.
 *
 * Loading runs first in a forked child (_qf_load_trial): a plugin whose
 * constructors or registration crash, exit or hang is refused with a
 * message naming it, instead of taking qualify down (docs/kernels.md
 * "Loading in a child first").
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "_files.h"
#include "_sandbox.h"
#include "_registry.h"
#include "qf_backend.h"
#include "qf_kernel.h"

/* 1 inside a trial child: a load there runs for real, with no trial of its own. */
static int in_trial;

static int trial_seconds(void)
{
    const char *e = getenv("QF_PLUGIN_LOAD_TIMEOUT");
    char *end;
    long v;
    if (!e || !*e)
        return QF_PLUGIN_TRIAL_S;
    v = strtol(e, &end, 10);
    return *end || v < 1 || v > 3600 ? QF_PLUGIN_TRIAL_S : (int)v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int _qf_load_trial(const char *what, int (*body)(void *), void *ctx, char *msg, size_t msg_size)
{
    int p[2], status = 0, limit = trial_seconds();
    char answer = 0;
    ssize_t got = -1;
    double end;
    pid_t pid;
    if (in_trial)
        return 0;
    if (pipe(p)) {
        snprintf(msg, msg_size, "%s: cannot load it in a child first: pipe: %s", what, strerror(errno));
        return -1;
    }
    fflush(NULL); /* nothing buffered is written twice by a child that exits */
    _qf_sbx_probe(NULL, 0); /* the scratch root, made here before the fork */
    pid = fork();
    if (pid < 0) {
        snprintf(msg, msg_size, "%s: cannot load it in a child first: fork: %s", what, strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        /* Its own process group, so that whatever it starts dies with it;
         * its output goes nowhere: qualify loads it again and shows that. */
        int nul = open("/dev/null", O_RDWR);
        setpgid(0, 0);
        close(p[0]);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            dup2(nul, STDOUT_FILENO);
            dup2(nul, STDERR_FILENO);
        }
        in_trial = 1;
        {
            /* confined as a kernel process is (_sandbox.h): a GPU plugin's
             * constructors may open its device */
            char why[256];
            if (_qf_sbx_enter(QF_SBX_CHILD, 1, 0, why, sizeof why))
                _exit(_QF_SBX_EXIT);
        }
        answer = body(ctx) == 0 ? 'y' : 'n';
        if (write(p[1], &answer, 1) != 1)
            _exit(3);
        _exit(0);
    }
    setpgid(pid, pid); /* also here: no window in which a kill(-pid) misses it */
    close(p[1]);
    end = now_s() + limit;
    for (;;) {
        struct pollfd pf = {p[0], POLLIN, 0};
        double left = end - now_s();
        int r;
        if (left <= 0) {
            got = -2;
            break;
        }
        r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            got = r == 0 ? -2 : -1;
            break;
        }
        do
            got = read(p[0], &answer, 1);
        while (got < 0 && errno == EINTR);
        break;
    }
    close(p[0]);
    /* The child ends at once after answering; anything it started, or the
     * child itself when it hangs, goes with its process group.  At the end
     * of the pipe without an answer the child is ending: its own status is
     * awaited for a moment (the sandbox's relay hands it on). */
    if (got == 0) {
        int t;
        for (t = 0; t < 200 && waitpid(pid, &status, WNOHANG) == 0; t++)
            nanosleep(&(struct timespec){0, 5000000L}, NULL);
        if (t < 200) {
            kill(-pid, SIGKILL);
            _qf_sbx_scratch_remove(pid);
            goto ended;
        }
    }
    if (got != 1)
        kill(pid, SIGKILL);
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    _qf_sbx_scratch_remove(pid);
ended:
    if (got == 1)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == _QF_SBX_EXIT) {
        snprintf(msg, msg_size, "%s: cannot load it in a confined child (the sandbox could not be entered)", what);
        return -1;
    }
    if (got == -2)
        snprintf(msg, msg_size, "%s: loading it did not finish within %d s (a hang in its constructors or its "
                 "registration?); killed (QF_PLUGIN_LOAD_TIMEOUT sets the limit)", what, limit);
    else if (WIFSIGNALED(status))
        snprintf(msg, msg_size, "%s: loading it crashed the process (signal %d, %s) in its constructors or its "
                 "registration", what, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(msg, msg_size, "%s: loading it ended the process (exit status %d) in its constructors or its "
                 "registration", what, WEXITSTATUS(status));
    else
        snprintf(msg, msg_size, "%s: loading it failed in a child: %s", what, strerror(errno));
    return -1;
}

void _qf_plugin_close(void *handle)
{
    if (handle)
        dlclose(handle);
}

/* The table handed to the entry point.  It is on the loader's stack: the
 * same object loaded twice shares its statics, so a table owned per load
 * could be freed under a plugin that kept it.  Plugins copy what they
 * keep; the function pointers are valid for the life of the process.
 * The GPU modules get the same table (qualify/gpumod.c). */
void _qf_plugin_host_fill(qf_plugin_host *h, const char *path)
{
    memset(h, 0, sizeof *h);
    h->abi_version = QF_KERNEL_ABI_VERSION;
    h->struct_size = (uint32_t)sizeof *h;
    h->add = qf_registry_add;
    h->arith_claim_default = qf_arith_claim_default;
    h->format_get = qf_format_get;
    h->plugin_path = path;
    h->format_lookup = qf_format_lookup;
    h->format_decode = qf_format_decode;
    h->format_encode = qf_format_encode;
    h->format_decode_array = qf_format_decode_array;
    h->format_encode_array = qf_format_encode_array;
    h->format_array_bytes = qf_format_array_bytes;
    h->format_pack4 = qf_format_pack4;
    h->format_unpack4 = qf_format_unpack4;
    h->encode_opts_default = qf_encode_opts_default;
    h->rng_u64 = qf_rng_u64;
    h->block_scale_count = qf_block_scale_count;
    h->tensor_init = qf_tensor_init;
    h->tensor_numel = qf_tensor_numel;
    h->tensor_dense_bytes = qf_tensor_dense_bytes;
    h->op_name = qf_op_name;
    h->op_slot_count = qf_op_slot_count;
    h->op_slot_name = qf_op_slot_name;
    h->op_dims = qf_op_dims;
    h->kernel_check = qf_kernel_check;
    h->kernel_dtype = qf_kernel_dtype;
    h->status_str = qf_status_str;
    h->backend_add = qf_backend_add;
}

typedef struct plugin_load {
    qf_registry *r;
    const char *path, *open_path;
} plugin_load;

/* dlopen, find the entry point, register: in the trial child, then here. */
static qf_status load_in_process(qf_registry *r, const char *path, const char *open_path)
{
    void *h, *sym;
    qf_plugin_register_fn fn;
    qf_plugin_host host;
    size_t before;
    int pl;
    qf_status s;

    dlerror();
    h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        _qf_registry_set_error(r, "cannot load plugin %s: %s", path, e ? e : "unknown error");
        return QF_EIO;
    }
    dlerror();
    sym = dlsym(h, QF_PLUGIN_ENTRY);
    if (!sym) {
        dlclose(h);
        _qf_registry_set_error(r, "plugin %s does not export %s() (docs/kernels.md, \"Writing a plugin\")",
                               path, QF_PLUGIN_ENTRY);
        return QF_EIO;
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function
     * pointer; copying the bits avoids the ISO C cast warning. */
    memcpy(&fn, &sym, sizeof fn);

    pl = _qf_registry_plugin_begin(r, path, h);
    if (pl < 0) {
        dlclose(h);
        _qf_registry_set_error(r, "out of memory loading plugin %s", path);
        return QF_ENOMEM;
    }
    _qf_plugin_host_fill(&host, path);

    before = qf_registry_count(r);
    s = fn(r, &host);
    if (s == QF_OK && qf_registry_count(r) == before) {
        _qf_registry_set_error(r, "%s() registered no kernel", QF_PLUGIN_ENTRY);
        s = QF_EINVAL;
    } else if (s != QF_OK && !qf_registry_error(r)[0]) {
        _qf_registry_set_error(r, "%s() failed: %s", QF_PLUGIN_ENTRY, qf_status_str(s));
    }
    _qf_registry_plugin_end(r, pl, s == QF_OK);
    return s;
}

static int trial_body(void *ctx)
{
    const plugin_load *l = ctx;
    return load_in_process(l->r, l->path, l->open_path) == QF_OK ? 0 : 1;
}

qf_status qf_registry_load_plugin(qf_registry *r, const char *path)
{
    char buf[4096], msg[1024];
    const char *open_path = path;
    plugin_load l;

    if (!r)
        return QF_EINVAL;
    if (!path || !*path) {
        _qf_registry_set_error(r, "no plugin path given");
        return QF_EINVAL;
    }
    /* dlopen searches the library path for a name without a slash; a user
     * who writes --plugin libmine.so means the file in this directory. */
    if (!strchr(path, '/')) {
        if (snprintf(buf, sizeof buf, "./%s", path) >= (int)sizeof buf) {
            _qf_registry_set_error(r, "plugin path '%.64s...' is too long", path);
            return QF_EINVAL;
        }
        open_path = buf;
    }
    /* dlopen would block on a FIFO like any read. */
    if (_qf_check_regular(open_path, msg, sizeof msg)) {
        struct stat sb;
        int missing = stat(open_path, &sb) != 0;
        _qf_registry_set_error(r, "cannot load plugin %s: %s", path, msg);
        return missing ? QF_EIO : QF_EINVAL;
    }
    /* A crash, exit or hang while loading is caught in a child first. */
    l.r = r;
    l.path = path;
    l.open_path = open_path;
    if (_qf_load_trial(path, trial_body, &l, msg, sizeof msg)) {
        _qf_registry_set_error(r, "plugin %s", msg);
        return QF_EINVAL;
    }
    return load_in_process(r, path, open_path);
}
