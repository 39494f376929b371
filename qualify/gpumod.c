/* gpumod.c: find and load the GPU back-end modules (_gpumod.h).
 *
 * Where a module is looked for, in order (docs/gpu.md "How the back ends
 * are loaded"):
 *   1. already mapped in this process (a test links it; dlopen RTLD_NOLOAD);
 *   2. each directory of QF_MODULE_PATH (colon-separated);
 *   3. the directory of libqualify.so, when this code runs from it;
 *   4. the directory of the running program, then PROGRAM_DIR/../LIBDIR
 *      (the build tree puts the modules next to `qualify`; an install puts
 *      them next to libqualify, bin/../lib);
 *   5. the install's libdir (QF_MODULE_INSTALL_DIR, set by CMake).
 * The first file that exists is loaded; if it does not load, that is the
 * answer (a broken module is reported, not skipped over).  Each module is
 * loaded at most once per process and the outcome, success or failure, is
 * kept.
 */
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD */

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_files.h"
#include "_gpumod.h"
#include "_registry.h"
#include "qf_version.h"

#ifndef QF_MODULE_INSTALL_DIR
#define QF_MODULE_INSTALL_DIR ""
#endif
#ifndef QF_MODULE_LIBDIR_REL
#define QF_MODULE_LIBDIR_REL "lib"
#endif

#define MAX_MODULES 8

typedef struct module {
    char name[16];
    int tried;
    void *handle;
    const _qf_gpu_module *mod;
    char path[PATH_MAX];
    char why[PATH_MAX + 1024];
} module;

static module modules[MAX_MODULES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The host table must outlive the module: it is handed over once. */
static qf_plugin_host host;

int _qf_gpumod_built(const char *name)
{
    if (!name)
        return 0;
#if defined(QF_HAVE_CUDA)
    if (!strcmp(name, "cuda"))
        return 1;
#endif
#if defined(QF_HAVE_HIP)
    if (!strcmp(name, "hip"))
        return 1;
#endif
    return 0;
}

static module *slot(const char *name, int create)
{
    int i;
    for (i = 0; i < MAX_MODULES; i++)
        if (modules[i].name[0] && !strcmp(modules[i].name, name))
            return &modules[i];
    if (!create)
        return NULL;
    for (i = 0; i < MAX_MODULES; i++)
        if (!modules[i].name[0]) {
            snprintf(modules[i].name, sizeof modules[i].name, "%s", name);
            return &modules[i];
        }
    return NULL;
}

/* dir/file when it exists: into out, 1. */
static int try_dir(const char *dir, size_t dlen, const char *file, char *out, size_t size, char *looked,
                   size_t looked_size)
{
    size_t used = strlen(looked);
    if (dlen == 0)
        return 0;
    if (snprintf(out, size, "%.*s/%s", (int)dlen, dir, file) >= (int)size)
        return 0;
    if (access(out, F_OK) == 0)
        return 1;
    if (used < looked_size)
        snprintf(looked + used, looked_size - used, "%s%.*s", used ? ", " : "", (int)dlen, dir);
    return 0;
}

/* The directory part of path (without the last '/'), its length. */
static size_t dir_len(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? (size_t)(s - path) : 0;
}

static int find(const char *file, char *out, size_t size, char *looked, size_t looked_size)
{
    const char *env = getenv("QF_MODULE_PATH");
    char buf[PATH_MAX];
    Dl_info info;
    ssize_t n;
    looked[0] = '\0';
    if (env && *env) {
        const char *p = env;
        while (*p) {
            size_t len = strcspn(p, ":");
            if (try_dir(p, len, file, out, size, looked, looked_size))
                return 1;
            p += len;
            if (*p == ':')
                p++;
        }
    }
    /* libqualify.so's own directory (not the program's: see below). */
    if (dladdr((void *)&_qf_gpumod_load, &info) && info.dli_fname && strstr(info.dli_fname, ".so") &&
        info.dli_fname[0] == '/' &&
        try_dir(info.dli_fname, dir_len(info.dli_fname), file, out, size, looked, looked_size))
        return 1;
    n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        char up[PATH_MAX];
        size_t d;
        buf[n] = '\0';
        d = dir_len(buf);
        if (try_dir(buf, d, file, out, size, looked, looked_size))
            return 1;
        if (snprintf(up, sizeof up, "%.*s/../%s", (int)d, buf, QF_MODULE_LIBDIR_REL) < (int)sizeof up &&
            try_dir(up, strlen(up), file, out, size, looked, looked_size))
            return 1;
    }
    return try_dir(QF_MODULE_INSTALL_DIR, strlen(QF_MODULE_INSTALL_DIR), file, out, size, looked,
                   looked_size);
}

static void load(module *m)
{
    char file[64], entry[64], looked[2048];
    _qf_gpu_module_fn fn;
    const _qf_gpu_module *mod;
    m->tried = 1;
    snprintf(file, sizeof file, "libqualify_%s.so", m->name);
    snprintf(entry, sizeof entry, "qf_gpu_module_%s", m->name);
    m->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (m->handle)
        snprintf(m->path, sizeof m->path, "%s (already loaded)", file);
    else if (!find(file, m->path, sizeof m->path, looked, sizeof looked)) {
        snprintf(m->why, sizeof m->why,
                 "the %s module %s was not found (looked in %s; QF_MODULE_PATH adds directories)", m->name,
                 file, looked[0] ? looked : "no directory");
        return;
    } else if (_qf_check_regular(m->path, looked, sizeof looked)) {
        /* a FIFO there would block dlopen's read (docs/security.md) */
        snprintf(m->why, sizeof m->why, "cannot load the %s module: %s", m->name, looked);
        return;
    } else if (!(m->handle = dlopen(m->path, RTLD_NOW | RTLD_LOCAL))) {
        const char *e = dlerror();
        snprintf(m->why, sizeof m->why, "cannot load the %s module %s: %s", m->name, m->path,
                 e ? e : "dlopen failed");
        return;
    }
    dlerror();
    *(void **)&fn = dlsym(m->handle, entry);
    if (!fn) {
        const char *e = dlerror();
        snprintf(m->why, sizeof m->why, "the %s module %s has no entry point %s (%s)", m->name, m->path,
                 entry, e ? e : "not found");
        goto fail;
    }
    if (!host.abi_version)
        _qf_plugin_host_fill(&host, NULL);
    mod = fn(&host);
    if (!mod || mod->abi_version != QF_GPU_MODULE_ABI || mod->struct_size < sizeof *mod) {
        snprintf(m->why, sizeof m->why, "the %s module %s has module ABI %u, this qualify needs %u", m->name,
                 m->path, mod ? mod->abi_version : 0u, QF_GPU_MODULE_ABI);
        goto fail;
    }
    if (!mod->version || strcmp(mod->version, QF_VERSION_STRING) != 0) {
        snprintf(m->why, sizeof m->why, "the %s module %s is from qualify %s, this is qualify %s", m->name,
                 m->path, mod->version ? mod->version : "(unknown)", QF_VERSION_STRING);
        goto fail;
    }
    if (!mod->backend || mod->backend->abi_version != QF_BACKEND_ABI_VERSION || !mod->backend->name ||
        strcmp(mod->backend->name, m->name) != 0) {
        snprintf(m->why, sizeof m->why, "the %s module %s has no usable '%s' back-end table", m->name,
                 m->path, m->name);
        goto fail;
    }
    m->mod = mod;
    return;
fail:
    dlclose(m->handle);
    m->handle = NULL;
}

const _qf_gpu_module *_qf_gpumod_load(const char *name, char *why, size_t why_size)
{
    module *m;
    const _qf_gpu_module *mod = NULL;
    if (why && why_size)
        why[0] = '\0';
    if (!name || !*name || strlen(name) >= sizeof modules[0].name || strchr(name, '/')) {
        if (why && why_size)
            snprintf(why, why_size, "no GPU module is called '%s'", name ? name : "(null)");
        return NULL;
    }
    pthread_mutex_lock(&lock);
    m = slot(name, 1);
    if (m && !m->tried)
        load(m);
    if (m && m->mod)
        mod = m->mod;
    else if (why && why_size)
        snprintf(why, why_size, "%s", m ? m->why : "too many GPU modules");
    pthread_mutex_unlock(&lock);
    return mod;
}

int _qf_gpumod_loaded(const char *name)
{
    module *m;
    int r;
    if (!name)
        return 0;
    pthread_mutex_lock(&lock);
    m = slot(name, 0);
    r = m && m->mod;
    pthread_mutex_unlock(&lock);
    return r;
}

void *_qf_gpumod_fn(const char *name, const char *sym, char *why, size_t why_size)
{
    void *f;
    module *m;
    if (!_qf_gpumod_load(name, why, why_size))
        return NULL;
    pthread_mutex_lock(&lock);
    m = slot(name, 0);
    f = dlsym(m->handle, sym);
    pthread_mutex_unlock(&lock);
    if (!f && why && why_size)
        snprintf(why, why_size, "the %s module %s has no function %s", name, m->path, sym);
    return f;
}

const char *_qf_gpumod_error(const char *name)
{
    module *m;
    const char *e = "";
    if (!name)
        return e;
    pthread_mutex_lock(&lock);
    m = slot(name, 0);
    if (m && m->mod && m->mod->last_error)
        e = m->mod->last_error();
    else if (m && m->tried && !m->mod)
        e = m->why;
    pthread_mutex_unlock(&lock);
    return e ? e : "";
}
