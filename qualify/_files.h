/* _files.h: opening the files qualify reads (not installed).
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

#endif
