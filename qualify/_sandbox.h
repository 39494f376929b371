/* _sandbox.h: the OS confinement of every process that runs kernel code
 * (private; sandbox.c, docs/security.md "The sandbox").
 *
 * isolate.c takes away what a kernel process inherits from qualify
 * (descriptors, shared mappings, its place in qualify's process group);
 * this file takes away what any process of the same user could otherwise
 * do by name: open qualify's output files for writing, signal or trace
 * qualify's processes, create shared memory that no limit counts.  The
 * mechanisms are the kernel's own and need no privilege:
 *
 *   - Landlock (Documentation/userspace-api/landlock.rst): writes only
 *     under the process's scratch directory, to /dev/null and to the GPU
 *     device nodes; from ABI 6 on, no signal to and no abstract unix socket
 *     of a process outside its domain; ptrace of such a process is refused
 *     at every ABI;
 *   - seccomp (seccomp(2)), where a memory limit is in force: memfd_create,
 *     SysV shared memory and shared anonymous mappings refused, so that
 *     RLIMIT_DATA counts every page the process can allocate;
 *   - no_new_privs and, for a root qualify, no capabilities at all.
 *
 * Every mechanism the probe found is then required in the child: a child
 * in which one fails does not run the kernel. */
#ifndef QF__SANDBOX_H
#define QF__SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

/* The exit status of a kernel child that could not enter the sandbox
 * (its reason in its report's message). */
#define _QF_SBX_EXIT 116

/* --no-sandbox / default / --require-sandbox */
typedef enum { QF_SANDBOX_OFF, QF_SANDBOX_AUTO, QF_SANDBOX_REQUIRE } qf_sandbox_mode;

/* What a kernel process is: the confinement differs a little (a worker
 * may write the named shared-memory objects of the protocol's fallback;
 * a GPU kernel gets its device nodes and no memory rules). */
typedef enum { QF_SBX_CHILD, QF_SBX_SERVER, QF_SBX_WORKER } qf_sbx_kind;

/* --kernel-writable DIR: kernel processes may also write under DIR (a
 * cache a framework needs).  0, or -1 with errno (no such directory, more
 * than 16).  The i-th such directory (resolved), or NULL. */
int _qf_sbx_allow_write(const char *dir);
const char *_qf_sbx_writable(size_t i);

/* Cover path (the output directory, the suite file) from every
 * kernel process started from now on, where the sandbox has namespaces:
 * 0, or -1 with errno (no such path, more than 32). */
int _qf_sbx_hide(const char *path);

void _qf_sbx_set_mode(qf_sandbox_mode m);
qf_sandbox_mode _qf_sbx_mode(void);

/* Probe what this machine offers (once; cheap).  0, or -1 with the reason
 * in why when the mode is REQUIRE and something is missing. */
int _qf_sbx_probe(char *why, size_t why_size);

/* One line: what confines a kernel process of this kind here, e.g.
 * "landlock ABI 7: writes only its scratch, /dev/null and GPU nodes;
 * signals, ptrace and abstract sockets scoped; seccomp: no memfd, SysV or
 * shared anonymous memory; no_new_privs; no capabilities", or "none
 * (--no-sandbox)".  memory: a memory limit is in force for it. */
void _qf_sbx_describe(qf_sbx_kind kind, int device, int memory, char *buf, size_t size);

/* 1 when every mechanism is in force for such a process. */
int _qf_sbx_complete(qf_sbx_kind kind, int device, int memory);

/* The scratch directory of the kernel process pid (made by that process
 * in _qf_sbx_enter): its path in buf, "" when there is none. */
void _qf_sbx_scratch_path(pid_t pid, char *buf, size_t size);

/* Bytes (allocated blocks) under the scratch directory of pid; 0 when
 * there is none. */
unsigned long long _qf_sbx_scratch_bytes(pid_t pid);

/* Remove the scratch directory of pid and all it holds (never following a
 * link). */
void _qf_sbx_scratch_remove(pid_t pid);

/* In a freshly forked child, before any kernel code runs (and before exec
 * for a server or worker): make the scratch directory, set TMPDIR to it,
 * and confine this process and all it will start.  device: the process
 * runs GPU kernels; memory: a memory limit is in force.  0, or -1 with the
 * reason (the child must then not run the kernel). */
int _qf_sbx_enter(qf_sbx_kind kind, int device, int memory, char *why, size_t why_size);

/* Remove this run's scratch root (after every kernel process ended). */
void _qf_sbx_cleanup(void);

#endif
