/* _worker.h: what the runner needs of worker.c (private).
 *
 * The runner's parent process owns each worker instance; the pair's
 * process inherits the pipes and calls the kernel itself (no kernel
 * child).  The parent calls _qf_worker_before_pair right before forking a
 * pair's process (it starts the slot's instance when needed and tells the
 * pair's process which slot it runs in) and _qf_worker_after_pair once that process is reaped, before
 * the result is journaled (it reaps and restarts a faulty instance and
 * words the CRASHED reason with the worker's exit status). */
#ifndef QF__WORKER_H
#define QF__WORKER_H

#include <sys/types.h>

#include "qf_kernel.h"
#include "qf_result.h"

/* Exit status of a kernel child whose worker failed (died, broke the
 * protocol, given up): the reason is in the child's message. */
#define _QF_WORKER_EXIT 117

/* The protocol's lines, for both ends (worker.c, serve.c).  A reader
 * keeps what was read past the line; start it zeroed. */
typedef struct _qf_line_reader {
    char *buf;
    size_t len, cap;
} _qf_line_reader;

/* One line without its '\n' (into *line, valid until the next call): 1, or
 * 0 after timeout_ms (< 0: no limit), -1 at end of file or on an error,
 * -2 for a line over 1 MiB. */
int _qf_worker_read_line(_qf_line_reader *rd, int fd, int timeout_ms, char **line);
/* Write all of buf: 0, or -1 when the reader is gone (SIGPIPE is ignored
 * around the write). */
int _qf_worker_write_all(int fd, const char *buf, size_t n);

/* ---- Processes (worker_proc.c) ---- */

#define LINE_MAX_B (1u << 20) /* the longest protocol line */
#define LABEL_MAX  128        /* the name the relay prefixes, with its NUL */

/* The parent's view of one running instance (copied into its children). */
typedef struct instance {
    pid_t pid;   /* 0: not running */
    pid_t relay; /* the process prefixing its standard error, or 0 */
    int to, from;
    int err;   /* the read end of its stderr pipe, or -1: the relay reads it, a pair's process only
                  asks how much waits there (_qf_wcap) */
    int mem;   /* the slot's memfd, the instance's fd 3 (memfd_create(2)), or -1 */
    int takes_fd; /* its hello said "shm_fd": true: runs travel in mem, no name */
    int fails; /* faults in a row */
} instance;

/* Stop every worker and kernel server instance of this process (bye,
 * 5 s, then their sessions killed; strays reaped): before the reports of
 * a sweep are written, so that no kernel process is alive then. */
void _qf_worker_stop_everything(void);

/* ---- Outputs as they were at done (worker_held.c) ---- */

/* Keep base (total bytes, the run's mapping; mem: the instance's memfd
 * it maps, or -1) with a keyed hash of each of the n output regions
 * [off[i], off[i] + bytes[i]) named names[i]. */
void _qf_wheld_add(const instance *in, int mem, const qf_kernel *k, unsigned char *base, size_t total,
                   const size_t *off, const size_t *bytes, const char *const *names, size_t n);
/* Hash every kept region again (a difference is noted for its kernel),
 * then unmap them: before a slot's memory is reused. */
void _qf_wheld_check_release(void);
/* _qf_wheld_check_release, then 1 with the message in msg when an output
 * of a run of kernel k changed after its done, else 0 (the note is
 * cleared either way). */
int _qf_worker_recheck(const qf_kernel *k, char *msg, size_t size);

/* The descriptor number a worker finds its memfd at, and the variable
 * naming it in its environment (docs/workers.md). */
#define _QF_WORKER_SHM_FD     3
#define _QF_WORKER_SHM_FD_ENV "QUALIFY_WORKER_SHM_FD"

/* What an instance writes to its standard error while a run is in flight
 * goes to that pair's record, not to qualify's stderr (docs/workers.md
 * "Standard error").  One per job slot, in memory shared by the parent,
 * the pair's processes and the relay: the pair's process sets `on` around
 * its run, and the relay, which alone reads the pipe, puts what it reads
 * while `on` into text (the first 4 KiB; total counts all) instead of
 * prefixing it onto qualify's stderr.  `reading` is set from before the
 * relay's read until the bytes are placed, so that a pair's process can
 * tell when everything written before `done` has been placed.  `runs`
 * counts the runs begun (a relay tells the gaps between runs apart by
 * it), `relayed` the bytes the slot's relays wrote outside runs, over
 * every instance the slot started (the relay's caps, worker_proc.c). */
typedef struct _qf_wcap {
    volatile int on;
    volatile int reading;
    volatile size_t len, total;
    volatile unsigned long runs;
    volatile size_t relayed;
    char text[QF_RESULT_OUTPUT_MAX];
} _qf_wcap;

/* What a worker's relay writes to qualify's stderr outside runs
 * (docs/workers.md "Standard error"): at most _QF_WORKER_RELAY_GAP bytes
 * between two runs and _QF_WORKER_RELAY_TOTAL in all per worker and job
 * slot, prefixes and escapes counted; what is dropped is counted and said
 * in one line at the end of its gap. */
#define _QF_WORKER_RELAY_GAP   (64u << 10)
#define _QF_WORKER_RELAY_TOTAL (1u << 20)

void _qf_wproc_nap_ms(long ms);
/* Start CMD (/bin/sh -c, a session of its own, the protocol on its stdin
 * and stdout, its stderr through a relay prefixing "[worker NAME] " with
 * NAME read from the shared label at each line (or into cap while a run is
 * in flight; cap may be NULL), no other descriptor, the
 * kernel limits; for a kernel server (server 1) the memory limit is the
 * server's to set, since it knows whether it holds a GPU context): 0, or
 * -1 with the reason in err. */
int _qf_wproc_spawn(const char *cmd, const volatile char *label, _qf_wcap *cap, int server, instance *in,
                    char *err, size_t err_size);
/* Close the protocol's pipes and the memfd of an instance. */
void _qf_wproc_close_fds(instance *in);
/* Wait up to ms for pid, then kill it; then (always) its process group,
 * whatever it left there; its status. */
int _qf_wproc_reap(pid_t pid, long ms);
/* Reap the stderr relay of an instance (it ends when every writer closed
 * the pipe; killed after 500 ms otherwise). */
void _qf_wproc_relay_reap(instance *in);
/* Wait until the relay has placed what the instance wrote to its stderr so
 * far (the pipe is empty, no chunk in the relay's hands), at most 200 ms. */
void _qf_wproc_settle(const instance *in, const _qf_wcap *cap);

void _qf_worker_before_pair(const qf_kernel *k, int slot);
/* In the pair's process of slot, first thing: close every other slot's
 * pipes and memfds (only the slot's own are of use there). */
void _qf_worker_pair_child(int slot);

/* The record the runner calls for k: k itself, or, for a kernel routed to
 * a kernel server (qf_worker_route), a stand-in whose run sends the call
 * to the slot's server (no init, no fini: the server's).  The registry's
 * record stays k's, for its checks and results. */
const qf_kernel *_qf_worker_routed(const qf_kernel *k);

/* A worker kernel is called in the pair's own process, between these two
 * (no kernel child: the worker is the isolated process).  deadline: the
 * _qf_rp_now_s() time by which each done must have come.  _end returns 0,
 * 1 when the worker failed (died, broke the protocol, given up: the reason
 * is in the call's msg; CRASHED) or 2 when it timed out (TIMEOUT); in both
 * cases _qf_worker_after_pair replaces the instance. */
void _qf_worker_inline_begin(double deadline);
int _qf_worker_inline_end(void);
void _qf_worker_after_pair(const qf_kernel *k, int slot, qf_result *r);
/* Parent, between pairs: kill and reap the kernel server of slot (every
 * routing worker's), so that its next pair starts a fresh one (--devices
 * moved the slot to another device, or its device faulted).  Not counted
 * as a failure of the server. */
void _qf_worker_slot_stop(int slot);

/* The pids of every running worker and kernel server instance and of their
 * stderr relays (the children of this process that are not strays): up to
 * max into out; the count of all of them (> max: not all fit). */
size_t _qf_worker_pids(pid_t *out, size_t max);

/* What the kernels of a kernel server wrote to their standard output and
 * error during the runs since _qf_worker_inline_begin (the server sends it
 * in `done`): the first size - 1 bytes into buf, *total all of them. */
void _qf_worker_take_output(char *buf, size_t size, size_t *total);

/* A hello's dtype tuple (worker_hello.c): the formats of one direction's
 * nslots slots from the JSON list arr (an absent or null entry repeats the
 * previous one; *bad: the unknown name, or NULL), and the input scalings
 * of "in_scale" (per input slot {"kind", "format", "block"}; NULL: none)
 * into t.  0, or -1 for anything malformed. */
struct json_t;
int _qf_worker_tuple_slots(struct json_t *arr, int nslots, qf_format_id *out, const char **bad);
int _qf_worker_tuple_scales(struct json_t *arr, int nslots, qf_dtype_tuple *t);

#endif
