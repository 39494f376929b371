/* cli/outdir.c: entries of qualify run's output directory that qualify did
 * not write.  A kernel runs as the same user and can create files there
 * (a FIFO or a link waiting for the next command that writes or reads that
 * name, a file that looks like one of qualify's); each output is written
 * so that such an entry cannot hurt the sweep (qualify/_files.h), and this
 * says that one appeared: the directory is listed before any kernel code
 * runs and again after the reports are written, and what is new and not
 * qualify's is named on stderr (docs/security.md "Output files").
 *
 * Listed: the directory itself and failing/ (--save-failing) two levels
 * down, never through a link.  Whatever appears deeper does so under an
 * entry listed here that is itself new, or inside a directory that was
 * already there before the sweep (not looked into: the user's). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "_escape.h"
#include "_files.h"
#include "cli.h"
#include "qf_result.h"
#include "qf_runner.h"

/* At most this many entries are listed (a huge -o . stops being read). */
#define MAX_ENTRIES 200000
/* At most this many foreign entries are named, one line each. */
#define MAX_NAMED 20

static const char *const own_files[] = {"journal.jsonl", "results.json", "report.md", "junit.xml"};

static int add(qf_cli_outdir *d, const char *path)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        char **p = realloc(d->names, cap * sizeof *p);
        if (!p)
            return -1;
        d->names = p;
        d->cap = cap;
    }
    if (!(d->names[d->n] = strdup(path)))
        return -1;
    d->n++;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int has(const qf_cli_outdir *d, const char *path)
{
    return d->n && bsearch(&path, d->names, d->n, sizeof *d->names, cmp) != NULL;
}

/* The entries of the directory dfd (prefix: its path relative to the
 * output directory, "" at the top) into d, and below it while depth > 0
 * into failing/ and its subdirectories only.  -1 out of memory. */
static int walk(qf_cli_outdir *d, int dfd, const char *prefix, int depth)
{
    struct dirent *e;
    DIR *dir;
    int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0), rc = 0;
    if (fd < 0 || !(dir = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return 0; /* unreadable: nothing to compare */
    }
    while (rc == 0 && d->n < MAX_ENTRIES && (e = readdir(dir))) {
        char path[4096];
        struct stat st;
        int sub;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s%s", prefix, e->d_name);
        rc = add(d, path);
        if (rc || depth <= 0 || (!prefix[0] && strcmp(e->d_name, "failing")))
            continue;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
            continue;
        if ((sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            continue;
        strcat(path, "/");
        rc = walk(d, sub, path, depth - 1);
        close(sub);
    }
    closedir(dir);
    return rc;
}

static int list(qf_cli_outdir *d, const char *outdir)
{
    int dfd = open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
    if (dfd < 0)
        return errno == ENOENT ? 0 : -1;
    rc = walk(d, dfd, "", 2);
    close(dfd);
    if (d->n) /* an empty directory has no array to sort */
        qsort(d->names, d->n, sizeof *d->names, cmp);
    return rc;
}

void qf_cli_outdir_free(qf_cli_outdir *d)
{
    size_t i;
    for (i = 0; i < d->n; i++)
        free(d->names[i]);
    free(d->names);
    memset(d, 0, sizeof *d);
}

int qf_cli_outdir_note(qf_cli_outdir *d, const char *outdir)
{
    memset(d, 0, sizeof *d);
    return list(d, outdir);
}

void qf_cli_outdir_forget(qf_cli_outdir *d, const char *name)
{
    size_t i, k = 0, len = strlen(name);
    for (i = 0; i < d->n; i++) {
        if (!strncmp(d->names[i], name, len) && (d->names[i][len] == '\0' || d->names[i][len] == '/'))
            free(d->names[i]);
        else
            d->names[k++] = d->names[i];
    }
    d->n = k;
}

/* The entries qualify writes: its four files, and with save failing/, its
 * marker and the directory of every pair of the sweep (whatever is in it:
 * a pair run again on another device, --devices, may leave the files of
 * its first attempt there). */
static int expected(qf_cli_outdir *x, const qf_result *r, size_t n, int save)
{
    char path[QF_RESULT_ARTIFACT_DIR + 16];
    size_t i;
    int rc = 0;
    for (i = 0; rc == 0 && i < sizeof own_files / sizeof own_files[0]; i++)
        rc = add(x, own_files[i]);
    if (save && rc == 0)
        rc = add(x, "failing") || add(x, "failing/.qualify-failing");
    for (i = 0; save && rc == 0 && i < n; i++) {
        memcpy(path, "failing/", 8);
        qf_runner_artifacts_dir(&r[i], path + 8, sizeof path - 8);
        rc = add(x, path);
        if (rc == 0 && r[i].artifacts_dir[0] && strcmp(r[i].artifacts_dir, path))
            rc = add(x, r[i].artifacts_dir); /* a record of another qualify's */
    }
    if (x->n)
        qsort(x->names, x->n, sizeof *x->names, cmp);
    return rc;
}

/* path is one of qualify's: in x, or under a pair's directory in x
 * ("failing/DIR/FILE"). */
static int is_expected(const qf_cli_outdir *x, const char *path)
{
    char parent[4096];
    const char *slash;
    if (has(x, path))
        return 1;
    if (strncmp(path, "failing/", 8) || !(slash = strchr(path + 8, '/')) ||
        (size_t)(slash - path) >= sizeof parent)
        return 0;
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    return has(x, parent);
}

/* "a FIFO", "a symbolic link", ... of path in outdir ("gone" when it is). */
static const char *kind_of(const char *outdir, const char *path)
{
    char full[8192];
    struct stat st;
    snprintf(full, sizeof full, "%s/%s", outdir, path);
    if (lstat(full, &st))
        return "gone";
    return S_ISREG(st.st_mode) ? "a regular file" : _qf_file_kind(st.st_mode);
}

static void name_one(const char *cmd, const char *outdir, const char *path, const char *kind, const char *why)
{
    fprintf(stderr, "qualify %s: ", cmd);
    _qf_esc_term(stderr, outdir);
    fputc('/', stderr);
    _qf_esc_term(stderr, path);
    fprintf(stderr, ": %s %s\n", kind, why);
}

size_t qf_cli_outdir_foreign(const qf_cli_outdir *before, const char *cmd, const char *outdir,
                             const qf_result *r, size_t n, int save)
{
    qf_cli_outdir now, x;
    size_t i, found = 0;
    memset(&x, 0, sizeof x);
    if (qf_cli_outdir_note(&now, outdir) || expected(&x, r, n, save)) {
        fprintf(stderr, "qualify %s: cannot list the output directory %s: %s\n", cmd, outdir,
                strerror(errno));
        qf_cli_outdir_free(&now);
        qf_cli_outdir_free(&x);
        return 1; /* unchecked counts as found: the caller's exit status says so */
    }
    for (i = 0; i < now.n; i++) {
        const char *p = now.names[i];
        if (has(before, p) || is_expected(&x, p))
            continue;
        if (++found <= MAX_NAMED)
            name_one(cmd, outdir, p, kind_of(outdir, p),
                     "that qualify did not write appeared during the sweep (a kernel may have planted it)");
    }
    /* qualify's own files are regular files: one that is not was replaced. */
    for (i = 0; i < sizeof own_files / sizeof own_files[0]; i++) {
        const char *k = kind_of(outdir, own_files[i]);
        if (has(&now, own_files[i]) && strcmp(k, "a regular file") && ++found <= MAX_NAMED)
            name_one(cmd, outdir, own_files[i], k, "where qualify writes a regular file");
    }
    if (found > MAX_NAMED)
        fprintf(stderr, "qualify %s: ... and %zu more such entries\n", cmd, found - MAX_NAMED);
    if (found)
        fprintf(stderr,
                "qualify %s: %zu entr%s in the output directory that qualify did not write: a kernel of this "
                "sweep may have reached the file system (docs/security.md \"Output files\")\n",
                cmd, found, found == 1 ? "y" : "ies");
    qf_cli_outdir_free(&now);
    qf_cli_outdir_free(&x);
    return found;
}
