/* _files.h: opening the files qualify reads and writes (not installed).
 *
 * Every reader of an input file (suites and includes, .npy, .safetensors,
 * results and journals, claim files, enablement tables, plugins) opens it
 * through these helpers, which refuse anything but a regular file BEFORE
 * reading from it: open(2) of a FIFO with no writer blocks forever, a
 * character device may never end, and neither is a file a user meant to
 * give (docs/cli.md "Files qualify reads").  The check is stat(2) first
 * (so a device is never even opened: opening some has side effects), then
 * open with O_NONBLOCK and fstat(2) on the descriptor (so a path swapped
 * for a FIFO between the two is still refused), then back to blocking. */
#ifndef QF__FILES_H
#define QF__FILES_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "qf_status.h"

/* "a FIFO", "a directory", "a character device", "a block device",
 * "a socket", "a symbolic link" or "not a regular file" for a st_mode. */
const char *_qf_file_kind(mode_t mode);

/* A descriptor of PATH opened with FLAGS (O_CLOEXEC added; MODE for
 * O_CREAT) when PATH is a regular file, else -1.  When PATH exists but is
 * not a regular file, *kind (may be NULL) is its _qf_file_kind and errno is
 * EINVAL; on any other failure *kind is NULL and errno is open's. */
int _qf_open_regular(const char *path, int flags, mode_t mode, const char **kind);

/* The same as a stdio stream for reading ("r" or "rb"); NULL with the
 * message "PATH: not a regular file (a FIFO)" or "PATH: cannot open:
 * REASON" in err, and QF_EIO (the readers' status for a file that cannot
 * be read) in *st (may be NULL). */
FILE *_qf_fopen_read(const char *path, char *err, size_t err_size, qf_status *st);

/* 0 when PATH names a regular file (stat(2), following links), else -1
 * with "PATH: not a regular file (...)" or "PATH: cannot open: REASON" in
 * err: for loaders that open the file themselves (dlopen). */
int _qf_check_regular(const char *path, char *err, size_t err_size);

/* ---- Files qualify owns: outputs, and the journal it appends to ----------
 *
 * A kernel under test runs as the same user as qualify and may plant
 * entries in the output directory while a sweep runs: a FIFO (an open for
 * writing waits for a reader, forever), a symbolic link (a write through it
 * lands outside the directory, in ~/.bashrc), a file at a temporary name
 * qualify would use.  So no output file is ever opened by its final name:
 * it is written into a fresh private directory made inside the output
 * directory (mkdirat(2) 0700 under a random name: nothing of anyone else's
 * can be in it), as a new file (O_CREAT | O_EXCL | O_NOFOLLOW), and
 * renamed over its name when complete: rename(2) replaces the directory
 * entry itself, whatever it is (a link or a FIFO there is replaced, never
 * followed nor opened), and a reader never sees half a file.  The
 * directory part of a path is followed once (a user may give a link) and
 * used by descriptor from then on (docs/security.md "Output files"). */

/* _qf_out_open's flags. */
enum {
    _QF_OUT_SYNC = 1,   /* fsync(2) the file before the rename and the directory after it */
    _QF_OUT_REFUSE = 2, /* refuse (not replace) a name held by anything but a regular file */
};

/* One output file being written. */
typedef struct _qf_out {
    FILE *f;           /* write the contents here */
    int dir;           /* the directory the file goes into (owned) */
    int tmp;           /* the private temporary directory in it; -1 for a stream (below) */
    int flags;         /* _QF_OUT_* */
    char tmpname[32];  /* tmp's name in dir */
    char name[256];    /* the file's name in dir */
    const char *shown; /* the path for messages (the caller's string) */
} _qf_out;

/* Start writing PATH (mode "w" or "wb": the same on POSIX).  NULL with
 * "PATH: cannot create: REASON" in err.  The stream names /dev/stdout,
 * /dev/stderr, /dev/null, /dev/fd/N and /proc/self/fd/N are opened as
 * given (-o /dev/stdout): no kernel can plant an entry there, and no
 * directory there can take a temporary one. */
FILE *_qf_out_open(_qf_out *o, const char *path, int flags, char *err, size_t err_size);

/* The same for the entry NAME of the directory descriptor DIR (not taken
 * over: it is duplicated); shown names the file in messages. */
FILE *_qf_out_openat(_qf_out *o, int dir, const char *name, const char *shown, int flags, char *err,
                     size_t err_size);

/* Finish: flush (fsync with _QF_OUT_SYNC), close, rename into place,
 * remove the temporary directory.  QF_OK, or QF_EIO with "PATH: REASON" in
 * err and nothing left behind (the earlier file at the name untouched). */
qf_status _qf_out_commit(_qf_out *o, char *err, size_t err_size);

/* Give up: close and remove the temporary file and directory. */
void _qf_out_abort(_qf_out *o);

/* A descriptor of the directory PATH (made when missing, as mkdir -p with
 * mode 0755), following a link in it this once; -1 with the reason in err. */
int _qf_out_dir(const char *path, char *err, size_t err_size);

/* An existing file of qualify's own to read and append to (the journal on
 * --resume): opened with FLAGS without following a link (O_NOFOLLOW) and
 * without waiting on a FIFO (O_NONBLOCK, then cleared), a regular file
 * only.  -1 otherwise: *kind (may be NULL) says what it is ("a symbolic
 * link", "a FIFO", ...; errno EINVAL), or is NULL with open's errno
 * (ENOENT: there is none). */
int _qf_open_own(const char *path, int flags, const char **kind);

/* The same as a stdio stream for reading, with _qf_fopen_read's messages
 * ("PATH: not a regular file (a symbolic link, not followed)"). */
FILE *_qf_fopen_own(const char *path, char *err, size_t err_size, qf_status *st);

#endif
