/* files.c: opening input files, regular files only, and writing output
 * files without following or opening what a kernel planted (_files.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "_files.h"
#include "_status.h"

const char *_qf_file_kind(mode_t mode)
{
    /* S_ISxxx are macros, so a table of tests cannot hold them. */
    return S_ISFIFO(mode)  ? "a FIFO"
           : S_ISDIR(mode) ? "a directory"
           : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a regular file";
}

/* nofollow: the last component is not followed (lstat, O_NOFOLLOW). */
static int open_regular(const char *path, int flags, mode_t mode, const char **kind, int nofollow)
{
    struct stat sb;
    int fd, fl;
    if (kind)
        *kind = NULL;
    if (!path) {
        errno = EINVAL;
        return -1;
    }
    /* A path that does not exist yet is for open to judge (O_CREAT). */
    if ((nofollow ? lstat(path, &sb) : stat(path, &sb)) == 0 && !S_ISREG(sb.st_mode)) {
        if (kind)
            *kind = _qf_file_kind(sb.st_mode);
        errno = EINVAL;
        return -1;
    }
    /* O_NONBLOCK: if the path became a FIFO since the stat, open returns
     * at once instead of waiting for a writer; fstat then refuses it. */
    fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0), mode);
    if (fd < 0) {
        if (errno == ELOOP && nofollow) { /* a link put there since the lstat */
            if (kind)
                *kind = "a symbolic link";
            errno = EINVAL;
        }
        return -1;
    }
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        if (kind)
            *kind = _qf_file_kind(sb.st_mode);
        errno = EINVAL;
        return -1;
    }
    if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int _qf_open_regular(const char *path, int flags, mode_t mode, const char **kind)
{
    return open_regular(path, flags, mode, kind, 0);
}

int _qf_open_own(const char *path, int flags, const char **kind)
{
    return open_regular(path, flags & ~O_CREAT, 0, kind, 1);
}

static FILE *fopen_read(const char *path, char *err, size_t err_size, qf_status *st, int nofollow)
{
    const char *kind;
    FILE *f;
    int fd = open_regular(path, O_RDONLY, 0, &kind, nofollow);
    if (st)
        *st = QF_OK;
    if (fd < 0) {
        qf_status s = QF_EIO;
        if (kind)
            _qf_fail(err, err_size, s, path, "not a regular file (%s%s)", kind,
                     nofollow && !strcmp(kind, "a symbolic link") ? ", not followed" : "");
        else
            _qf_fail(err, err_size, s, path, "cannot open: %s", strerror(errno));
        if (st)
            *st = s;
        return NULL;
    }
    if (!(f = fdopen(fd, "r"))) {
        _qf_fail(err, err_size, QF_EIO, path, "cannot open: %s", strerror(errno));
        close(fd);
        if (st)
            *st = QF_EIO;
    }
    return f;
}

FILE *_qf_fopen_read(const char *path, char *err, size_t err_size, qf_status *st)
{
    return fopen_read(path, err, err_size, st, 0);
}

FILE *_qf_fopen_own(const char *path, char *err, size_t err_size, qf_status *st)
{
    return fopen_read(path, err, err_size, st, 1);
}

int _qf_check_regular(const char *path, char *err, size_t err_size)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        _qf_fail(err, err_size, QF_EIO, path, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        _qf_fail(err, err_size, QF_EINVAL, path, "not a regular file (%s)", _qf_file_kind(sb.st_mode));
        return -1;
    }
    return 0;
}

/* ---- Output files -------------------------------------------------------- */

/* Names a user may give to write to a stream (-o /dev/stdout): opened as
 * given.  Nothing else under /dev: /dev/shm is a directory anyone can
 * plant in. */
static int is_stream(const char *path)
{
    static const char *const exact[] = {"/dev/stdout", "/dev/stderr", "/dev/null"};
    static const char *const prefix[] = {"/dev/fd/", "/proc/self/fd/"};
    size_t i;
    for (i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(path, exact[i]))
            return 1;
    for (i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        if (!strncmp(path, prefix[i], strlen(prefix[i])) && !strchr(path + strlen(prefix[i]), '/'))
            return 1;
    return 0;
}

/* mkdtemp(3) relative to a directory descriptor: a new directory, mode
 * 0700, under a random name in dir.  mkdirat(2) never follows nor reuses
 * an entry, so a name someone took (guessed or planted) only costs a try. */
static int mkdtempat(int dir, char name[32])
{
    static unsigned long count;
    int tries;
    for (tries = 0; tries < 64; tries++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ ++count;
        }
        snprintf(name, 32, ".qualify-tmp-%012llx", (unsigned long long)(r & 0xffffffffffffull));
        if (mkdirat(dir, name, 0700) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    name[0] = '\0'; /* not ours */
    return -1;
}

static void out_close(_qf_out *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp >= 0)
        close(o->tmp);
    if (o->dir >= 0)
        close(o->dir);
    o->f = NULL;
    o->tmp = o->dir = -1;
}

FILE *_qf_out_openat(_qf_out *o, int dir, const char *name, const char *shown, int flags, char *err,
                     size_t err_size)
{
    int fd = -1;
    memset(o, 0, sizeof *o);
    o->dir = o->tmp = -1;
    o->flags = flags;
    o->shown = shown ? shown : name;
    if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
        strlen(name) >= sizeof o->name) {
        _qf_fail(err, err_size, QF_EINVAL, o->shown, "cannot create: not a file name");
        return NULL;
    }
    snprintf(o->name, sizeof o->name, "%s", name);
    if ((o->dir = fcntl(dir, F_DUPFD_CLOEXEC, 0)) < 0 || mkdtempat(o->dir, o->tmpname) ||
        (o->tmp = openat(o->dir, o->tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        int e = errno;
        if (o->tmpname[0])
            unlinkat(o->dir, o->tmpname, AT_REMOVEDIR);
        out_close(o);
        _qf_fail(err, err_size, QF_EIO, o->shown, "cannot create a temporary directory beside it: %s",
                 strerror(e));
        return NULL;
    }
    /* O_EXCL: a new file, never an entry that was there (none can be). */
    fd = openat(o->tmp, o->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        _qf_out_abort(o);
        _qf_fail(err, err_size, QF_EIO, shown ? shown : name, "cannot create: %s", strerror(e));
        return NULL;
    }
    return o->f;
}

/* The directory of path and its last component (dir "." when it has no
 * slash); -1 when path ends in a slash. */
static int split_path(const char *path, char *dir, size_t dir_size, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dir_size, ".");
        *name = path;
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= dir_size)
            return -1;
        memcpy(dir, path, n);
        dir[n] = '\0';
        *name = slash + 1;
    }
    return **name ? 0 : -1;
}

FILE *_qf_out_open(_qf_out *o, const char *path, int flags, char *err, size_t err_size)
{
    char dir[4096];
    const char *name;
    int dfd, fd;
    memset(o, 0, sizeof *o);
    o->dir = o->tmp = -1;
    o->shown = path;
    if (!path || split_path(path, dir, sizeof dir, &name)) {
        _qf_fail(err, err_size, QF_EINVAL, path, "cannot create: not a file name");
        return NULL;
    }
    if (is_stream(path)) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            _qf_fail(err, err_size, QF_EIO, path, "cannot create: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
        }
        return o->f;
    }
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        _qf_fail(err, err_size, QF_EIO, path, "cannot create: %s: %s", dir, strerror(errno));
        return NULL;
    }
    _qf_out_openat(o, dfd, name, path, flags, err, err_size);
    close(dfd);
    return o->f;
}

qf_status _qf_out_commit(_qf_out *o, char *err, size_t err_size)
{
    const char *why = NULL;
    struct stat st;
    int e = 0;
    if (!o->f)
        return _qf_fail(err, err_size, QF_EIO, o->shown, "not open");
    if (fflush(o->f) || ferror(o->f) || ((o->flags & _QF_OUT_SYNC) && o->tmp >= 0 && fsync(fileno(o->f))))
        e = errno ? errno : EIO;
    if (fclose(o->f) && !e)
        e = errno ? errno : EIO;
    o->f = NULL;
    if (o->tmp < 0) { /* a stream */
        out_close(o);
        return e ? _qf_fail(err, err_size, QF_EIO, o->shown, "write failed: %s", strerror(e)) : QF_OK;
    }
    if (!e && (o->flags & _QF_OUT_REFUSE) && fstatat(o->dir, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(st.st_mode))
        why = _qf_file_kind(st.st_mode);
    if (!e && !why && renameat(o->tmp, o->name, o->dir, o->name))
        e = errno;
    if (e || why) {
        _qf_out_abort(o);
        if (why)
            return _qf_fail(err, err_size, QF_EIO, NULL, "%s is %s: refused, not followed", o->shown, why);
        return _qf_fail(err, err_size, QF_EIO, o->shown, "write failed: %s", strerror(e));
    }
    /* The rename is durable once the directory is (fsync(2)). */
    if (o->flags & _QF_OUT_SYNC)
        (void)fsync(o->dir);
    (void)unlinkat(o->dir, o->tmpname, AT_REMOVEDIR);
    out_close(o);
    return QF_OK;
}

void _qf_out_abort(_qf_out *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp >= 0) {
        (void)unlinkat(o->tmp, o->name, 0);
        (void)unlinkat(o->dir, o->tmpname, AT_REMOVEDIR);
    }
    out_close(o);
}

int _qf_out_dir(const char *path, char *err, size_t err_size)
{
    char tmp[4096], *p;
    int fd;
    if (!path || !*path || snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        _qf_fail(err, err_size, QF_EINVAL, path, "cannot create the directory: name too long");
        return -1;
    }
    for (p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) && errno != EEXIST) {
                _qf_fail(err, err_size, QF_EIO, path, "cannot create the directory: %s", strerror(errno));
                return -1;
            }
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST) {
        _qf_fail(err, err_size, QF_EIO, path, "cannot create the directory: %s", strerror(errno));
        return -1;
    }
    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        _qf_fail(err, err_size, QF_EIO, path, "cannot open the directory: %s", strerror(errno));
    return fd;
}
