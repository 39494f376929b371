/* _isolate.h: what a process that runs kernel code may keep of qualify's
 * (private; isolate.c, docs/security.md).
 *
 * A kernel child is forked from the pair's process and a kernel server or
 * worker from qualify's; before any kernel code runs, each one drops what
 * would let a hostile kernel reach another pair's verdict: shared mappings
 * (other pairs' records, the worker slots' state), descriptors (the
 * journal, other workers' pipes, the terminal), its place in qualify's
 * process group (a session of its own, killed whole), and it takes the
 * resource limits of --kernel-memory / --kernel-cpu / --kernel-procs /
 * --kernel-fsize. */
#ifndef QF__ISOLATE_H
#define QF__ISOLATE_H

#include <stddef.h>
#include <sys/types.h>

#include "qf_runner.h"

/* The limits in force (qf_runner_set_kernel_limits, or the defaults). */
const qf_kernel_limits *_qf_iso_limits(void);

/* The memory limit a kernel process gets (0: none; device: a GPU
 * kernel's). */
unsigned long long _qf_iso_memory_limit(int device);

/* Append to a CRASHED or kernel-error reason that the kernel ran under a
 * memory limit (when it did): a failed allocation often ends as a crash
 * or an error, and the reader should know the limit was there. */
void _qf_iso_limit_note(char *reason, size_t size, int device);

/* In a process about to run kernel code: setrlimit of the limits in force
 * (the memory limit left out when device is 1, where a CUDA / HIP context
 * reserves more address space than any limit worth setting, and in a
 * sanitizer build, whose shadow memory does the same).  Best effort. */
void _qf_iso_apply_limits(int device);

/* The CPU-time limit as a window from the CPU time used so far (soft
 * limit, SIGXCPU): a kernel server moves it before each run. */
void _qf_iso_cpu_window(void);

/* Close every descriptor >= 3 except the n in keep (close_range where the
 * kernel has it, else one close per open descriptor of /proc/self/fd). */
void _qf_iso_close_fds(const int *keep, size_t n);

/* Unmap every MAP_SHARED mapping of this process that does not overlap
 * one of the n ranges [keep[i], keep[i] + len[i]). */
void _qf_iso_unmap_shared(void *const *keep, const size_t *len, size_t n);

/* A session of its own (its process group is then killed whole) and
 * SIGKILL when the parent dies. */
void _qf_iso_own_session(void);

/* Make this process the reaper of the orphans of its descendants, so that
 * a double fork cannot escape _qf_iso_reap_strays. */
void _qf_iso_subreaper(void);

/* Remember the children this process has now (the caller's own, before
 * any kernel process): _qf_iso_reap_strays never takes them. */
void _qf_iso_note_children(void);

/* SIGKILL and reap every child of this process (an orphan reparented here
 * included) whose pid is not one of the n in keep, until none is left;
 * returns how many were killed. */
size_t _qf_iso_reap_strays(const pid_t *keep, size_t n);

/* Wait (without reaping) until child pid has exited, then SIGKILL its
 * process group (the pid cannot be reused while it is a zombie), then reap
 * it; its wait status.  ms < 0: wait for ever; else after ms the child is
 * killed too. */
int _qf_iso_reap_group(pid_t pid, long ms);

/* A memfd (or an unlinked temporary file) for a kernel process's standard
 * output and error; -1 when none can be made. */
int _qf_iso_capture_open(void);

/* Up to size - 1 bytes of what fd captured into buf (NUL-terminated,
 * the first bytes, NUL bytes and invalid UTF-8 as '?', so that it is one
 * valid JSON string), *total the bytes written in all; then fd is
 * emptied. */
void _qf_iso_capture_take(int fd, char *buf, size_t size, size_t *total);
/* The same text rule for bytes a kernel sent otherwise (a server's done):
 * NUL and invalid UTF-8 become '?', in place over n bytes. */
void _qf_iso_text_clean(char *s, size_t n);

#endif
