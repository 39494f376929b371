/* files.c: opening input files, regular files only (_files.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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

int _qf_open_regular(const char *path, int flags, mode_t mode, const char **kind)
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
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        if (kind)
            *kind = _qf_file_kind(sb.st_mode);
        errno = EINVAL;
        return -1;
    }
    /* O_NONBLOCK: if the path became a FIFO since the stat, open returns
     * at once instead of waiting for a writer; fstat then refuses it. */
    fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
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

FILE *_qf_fopen_read(const char *path, char *err, size_t err_size, qf_status *st)
{
    const char *kind;
    FILE *f;
    int fd = _qf_open_regular(path, O_RDONLY, 0, &kind);
    if (st)
        *st = QF_OK;
    if (fd < 0) {
        qf_status s = QF_EIO;
        if (kind)
            _qf_fail(err, err_size, s, path, "not a regular file (%s)", kind);
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
