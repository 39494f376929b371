/* provenance.c: collect the identity of the machine and the build
 * (qf_provenance.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gmp.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "_cpu_isa.h"
#include "qf_provenance.h"
#include "qf_version.h"

void qf_provenance_set(char *slot, size_t n, const char *s)
{
    if (!slot || !n)
        return;
    snprintf(slot, n, "%s", s ? s : "unknown");
}

/* Append " word" (or "word" when empty) to a space-separated list. */
static void add_word(char *list, size_t n, const char *w)
{
    _qf_cpu_add_word(list, n, w);
}

static void trim(char *s)
{
    size_t n = strlen(s);
    char *p = s;
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    if (p != s)
        memmove(s, p, strlen(p) + 1);
}

/* The value of the first "key: value" line of /proc/cpuinfo, or 0. */
static int cpuinfo_value(const char *key, char *out, size_t n)
{
    return _qf_cpuinfo_value(NULL, key, out, n);
}

/* This machine's ISA features are made by the helper the guard uses too
 * (_cpu_isa.h): the guard allows a cpu entry only where every feature
 * recorded here is present. */
void _qf_provenance_cpu_isa(unsigned builtin, const char *flags, char *out, size_t n)
{
    _qf_cpu_isa_list(builtin, flags, out, n);
}

static void collect_cpu(qf_provenance *p)
{
    char flags[8192];
    if (!cpuinfo_value("model name", p->cpu_model, sizeof p->cpu_model)) {
        char impl[64] = "", part[64] = "";
        if (cpuinfo_value("CPU implementer", impl, sizeof impl) &&
            cpuinfo_value("CPU part", part, sizeof part))
            snprintf(p->cpu_model, sizeof p->cpu_model, "implementer %s part %s", impl, part);
        else
            qf_provenance_set(p->cpu_model, sizeof p->cpu_model, NULL);
    }
    if (!cpuinfo_value("vendor_id", p->cpu_vendor, sizeof p->cpu_vendor)) {
        char impl[32];
        if (cpuinfo_value("CPU implementer", impl, sizeof impl))
            snprintf(p->cpu_vendor, sizeof p->cpu_vendor, "implementer %s", impl);
        else
            qf_provenance_set(p->cpu_vendor, sizeof p->cpu_vendor, NULL);
    }
    _qf_cpu_flags(NULL, flags, sizeof flags);
    _qf_provenance_cpu_isa(_qf_cpu_builtin(), flags, p->cpu_isa, sizeof p->cpu_isa);
    {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        p->cpu_count = n > 0 ? (int)n : 0;
    }
}

static void collect_os(qf_provenance *p)
{
    struct utsname u;
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    if (uname(&u) == 0) {
        snprintf(p->os, sizeof p->os, "%s %s %s", u.sysname, u.release, u.machine);
        qf_provenance_set(p->os_version, sizeof p->os_version, u.version);
    } else {
        qf_provenance_set(p->os, sizeof p->os, NULL);
        qf_provenance_set(p->os_version, sizeof p->os_version, NULL);
    }
    qf_provenance_set(p->os_distro, sizeof p->os_distro, NULL);
    f = fopen("/etc/os-release", "r");
    if (!f)
        return;
    while (getline(&line, &cap, f) > 0) {
        char *v;
        size_t n;
        if (strncmp(line, "PRETTY_NAME=", 12))
            continue;
        v = line + 12;
        trim(v);
        n = strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
            v[n - 1] = '\0';
            v++;
        }
        qf_provenance_set(p->os_distro, sizeof p->os_distro, v);
        break;
    }
    free(line);
    fclose(f);
}

static void collect_build(qf_provenance *p)
{
#if defined(__clang__)
    snprintf(p->compiler, sizeof p->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(p->compiler, sizeof p->compiler, "gcc %s", __VERSION__);
#else
    qf_provenance_set(p->compiler, sizeof p->compiler, NULL);
#endif
    trim(p->compiler);
    p->build_flags[0] = '\0';
    /* The build system may pass the real flag line (QF_BUILD_FLAGS); the
     * predefined macros below say what the compiler itself knows. */
#ifdef QF_BUILD_FLAGS
    add_word(p->build_flags, sizeof p->build_flags, QF_BUILD_FLAGS);
#endif
#if defined(__OPTIMIZE__)
    add_word(p->build_flags, sizeof p->build_flags, "optimize");
#else
    add_word(p->build_flags, sizeof p->build_flags, "no-optimize");
#endif
#if defined(__OPTIMIZE_SIZE__)
    add_word(p->build_flags, sizeof p->build_flags, "optimize-size");
#endif
#if defined(__NO_INLINE__)
    add_word(p->build_flags, sizeof p->build_flags, "no-inline");
#endif
#if defined(__FAST_MATH__)
    add_word(p->build_flags, sizeof p->build_flags, "fast-math");
#endif
#if defined(__FP_FAST_FMA)
    add_word(p->build_flags, sizeof p->build_flags, "fast-fma");
#endif
#if defined(__SANITIZE_ADDRESS__)
    add_word(p->build_flags, sizeof p->build_flags, "sanitize=address");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    add_word(p->build_flags, sizeof p->build_flags, "sanitize=address");
#endif
#endif
#if defined(__AVX512F__)
    add_word(p->build_flags, sizeof p->build_flags, "target=avx512f");
#elif defined(__AVX2__)
    add_word(p->build_flags, sizeof p->build_flags, "target=avx2");
#elif defined(__AVX__)
    add_word(p->build_flags, sizeof p->build_flags, "target=avx");
#endif
#if defined(NDEBUG)
    add_word(p->build_flags, sizeof p->build_flags, "NDEBUG");
#endif
#if defined(_OPENMP)
    {
        char w[32];
        snprintf(w, sizeof w, "openmp=%d", (int)_OPENMP);
        add_word(p->build_flags, sizeof p->build_flags, w);
    }
#endif
    qf_provenance_set(p->version_mpfr, sizeof p->version_mpfr, mpfr_get_version());
    qf_provenance_set(p->version_gmp, sizeof p->version_gmp, gmp_version);
    qf_provenance_set(p->qualify_version, sizeof p->qualify_version, QF_VERSION_STRING);
}

/* Run git with argv (NULL-terminated, argv[0] = "git") without a shell, so
 * a directory name needs no quoting; stdout into out (trimmed), stderr
 * discarded.  Returns the exit status, -1 when git could not be run. */
static int run_git(char *const argv[], char *out, size_t n)
{
    int fd[2], st;
    pid_t pid;
    size_t len = 0;
    if (pipe(fd) != 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(fd[1], 1);
        if (dn >= 0) {
            dup2(dn, 2);
            dup2(dn, 0);
        }
        close(fd[0]);
        close(fd[1]);
        execvp("git", argv);
        _exit(127);
    }
    close(fd[1]);
    out[0] = '\0';
    for (;;) {
        char buf[512];
        ssize_t r = read(fd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (len + 1 < n) {
            size_t take = (size_t)r < n - 1 - len ? (size_t)r : n - 1 - len;
            memcpy(out + len, buf, take);
            len += take;
            out[len] = '\0';
        }
    }
    close(fd[0]);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    trim(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void collect_git(qf_provenance *p, const char *dir)
{
    char out[4096];
    /* A revision recorded at build time (QF_GIT_REVISION, when the build
     * defines it) stands when git cannot be asked at run time: an
     * installed qualify has no source tree next to it. */
#ifdef QF_GIT_REVISION
    qf_provenance_set(p->git_revision, sizeof p->git_revision, QF_GIT_REVISION);
#else
    qf_provenance_set(p->git_revision, sizeof p->git_revision, NULL);
#endif
    p->git_dirty = -1;
#ifdef QF_SOURCE_DIR_DEFAULT
    /* No directory given: qualify's own checkout, where it was built. */
    if (!dir || !*dir)
        dir = QF_SOURCE_DIR_DEFAULT;
#endif
    if (!dir || !*dir)
        return;
    {
        char *argv[] = {"git", "-C", (char *)dir, "rev-parse", "HEAD", NULL};
        size_t i, n;
        if (run_git(argv, out, sizeof out) != 0)
            return;
        n = strlen(out);
        /* Anything but a hash (a warning on stdout, say) is not a revision. */
        if (n < 40 || n > 64)
            return;
        for (i = 0; i < n; i++)
            if (!strchr("0123456789abcdef", out[i]))
                return;
        qf_provenance_set(p->git_revision, sizeof p->git_revision, out);
    }
    {
        char *argv[] = {"git", "-C", (char *)dir, "status", "--porcelain", "--untracked-files=no", NULL};
        if (run_git(argv, out, sizeof out) == 0)
            p->git_dirty = out[0] != '\0';
    }
}

qf_status qf_provenance_collect(qf_provenance *p, const char *source_dir)
{
    time_t now;
    struct tm tm;
    if (!p)
        return QF_EINVAL;
    memset(p, 0, sizeof *p);
    now = time(NULL);
    if (gmtime_r(&now, &tm))
        strftime(p->timestamp, sizeof p->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    collect_cpu(p);
    collect_os(p);
    collect_build(p);
    collect_git(p, source_dir);
    return QF_OK;
}

qf_status qf_provenance_add_file(qf_provenance *p, const char *path)
{
    char hex[QF_SHA256_HEX];
    qf_provenance_file *f;
    qf_status st;
    size_t i;
    if (!p || !path)
        return QF_EINVAL;
    for (i = 0; i < p->nfiles; i++)
        if (!strcmp(p->files[i].path, path))
            return QF_OK;
    st = qf_sha256_file(path, hex);
    if (st != QF_OK)
        return st;
    f = realloc(p->files, (p->nfiles + 1) * sizeof *f);
    if (!f)
        return QF_ENOMEM;
    p->files = f;
    f = &p->files[p->nfiles];
    f->path = strdup(path);
    if (!f->path)
        return QF_ENOMEM;
    memcpy(f->sha256, hex, sizeof hex);
    p->nfiles++;
    return QF_OK;
}

void qf_provenance_set_gpu(qf_provenance *p, const char *name, const char *arch, const char *runtime,
                           const char *driver)
{
    if (!p)
        return;
    if (name)
        qf_provenance_set(p->gpu_name, sizeof p->gpu_name, name);
    if (arch)
        qf_provenance_set(p->gpu_arch, sizeof p->gpu_arch, arch);
    if (runtime)
        qf_provenance_set(p->gpu_runtime, sizeof p->gpu_runtime, runtime);
    if (driver)
        qf_provenance_set(p->gpu_driver, sizeof p->gpu_driver, driver);
}

qf_status qf_provenance_add_sandbox(qf_provenance *p, const char *how, const char *kernel)
{
    qf_provenance_sandbox *g = NULL;
    size_t i, have, add;
    char *k;
    if (!p || !how || !kernel)
        return QF_EINVAL;
    for (i = 0; i < p->nsandbox; i++)
        if (!strcmp(p->sandbox[i].how, how))
            g = &p->sandbox[i];
    if (!g) {
        if (p->nsandbox == QF_PROV_SANDBOX)
            return QF_EUNSUPPORTED;
        g = &p->sandbox[p->nsandbox++];
        memset(g, 0, sizeof *g);
        snprintf(g->how, sizeof g->how, "%s", how);
    }
    have = g->kernels ? strlen(g->kernels) : 0;
    add = strlen(kernel);
    for (i = 0; g->kernels && i + add <= have; i++) /* already there: a whole word */
        if ((i == 0 || g->kernels[i - 1] == ' ') && !strncmp(g->kernels + i, kernel, add) &&
            (g->kernels[i + add] == ' ' || g->kernels[i + add] == '\0'))
            return QF_OK;
    if (!(k = realloc(g->kernels, have + add + 2)))
        return QF_ENOMEM;
    if (have)
        k[have++] = ' ';
    memcpy(k + have, kernel, add + 1);
    g->kernels = k;
    return QF_OK;
}

void qf_provenance_free(qf_provenance *p)
{
    size_t i;
    if (!p)
        return;
    for (i = 0; i < p->nsandbox; i++)
        free(p->sandbox[i].kernels);
    p->nsandbox = 0;
    for (i = 0; i < p->nfiles; i++)
        free(p->files[i].path);
    free(p->files);
    p->files = NULL;
    p->nfiles = 0;
}
