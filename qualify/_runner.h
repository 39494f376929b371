/* _runner.h: the runner's own helpers shared by its files (private). */
#ifndef QF__RUNNER_H
#define QF__RUNNER_H

#include <stddef.h>

#include "qf_kernel.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_suite.h"

/* One (case, kernel) pair of the plan: the case's index in the expanded
 * suite, the kernel and its registration index. */
typedef struct _qf_plan_pair {
    size_t ci;
    const qf_kernel *k;
    size_t kidx;
} _qf_plan_pair;

/* ---- Shards (runner_shard.c) -------------------------------------------- */

struct json_t;
/* qf_journal_read of the journal a resume continues: never through a link
 * (journal.c; a planted link or FIFO is exit 2, docs/cli.md). */
qf_status _qf_journal_read_own(const char *path, qf_result **results, size_t *n, int *torn,
                               struct json_t **header, char *err, size_t err_size);

/* Keep only the pairs of shard o->shard_index of o->shard_count, in plan
 * order (*npairs shrinks).  *hdr: a new journal header, o->header with its
 * "shard" object given "plan_pairs" (the plan's size) and "pairs"
 * ([[plan index, kernel, case id], ...]).  QF_ENOMEM. */
qf_status _qf_shard_select(const qf_suite_cases *cs, _qf_plan_pair *pairs, size_t *npairs,
                           const qf_runner_opts *o, struct json_t **hdr);
/* May a journal whose header is old be resumed by a sweep whose header is
 * hdr?  Their "shard" objects must be equal; unsharded, both absent and
 * their "sweep" identities equal (a journal without one is refused when
 * hdr has one; hdr without one checks nothing).  0, or -1 with a message
 * naming path and what differs in err. */
int _qf_shard_resume_ok(const struct json_t *old, const struct json_t *hdr, const char *path, char *err,
                        size_t err_size);

/* ---- The plan (runner_plan.c) ------------------------------------------ */

/* Before anything runs: a kernel of the plan whose claim a claim file
 * replaced so that it serves none of its planned cases (and would serve
 * one with its own claim), or a --kernel / --case filter (o) after which
 * no planned pair is served at all, is QF_EINVAL with a message naming
 * the kernel, the claim file or filter, and why (docs/cli.md "Nothing to
 * run"); QF_ENOMEM. */
qf_status _qf_plan_check(const qf_suite_cases *cs, const _qf_plan_pair *pairs, size_t n, const qf_registry *reg,
                         const qf_runner_opts *o, char *err, size_t err_size);

/* Fill what identifies a (case, kernel) pair in r (case id, suite, op,
 * kernel, dtypes, dimensions, parameters, input, seed, architecture, start
 * time) and its one-line reproducer; r is initialized first. */
void _qf_runner_identity(qf_result *r, const qf_suite *suite, const qf_suite_case *c, const qf_kernel *k,
                         size_t kidx, const qf_registry *reg, const qf_runner_opts *o);

/* ---- Reproducers (runner_identity.c) ------------------------------------ */

/* s as one word of /bin/sh into dst: as it is when it holds only
 * letters, digits and / . _ - = , : + @ %, else single-quoted. */
void _qf_shell_quote(char *dst, size_t size, const char *s);
/* Put "env NAME=VALUE ... " in front of the command in cmd[size], for a
 * kernel served by a worker, which inherits qualify's environment: the
 * variables that choose its code and libraries (PYTHONPATH, PYTHONHOME,
 * VIRTUAL_ENV, CONDA_PREFIX, LD_LIBRARY_PATH, the GPU selections
 * CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, the
 * names listed in $QUALIFY_REPRO_ENV, then PATH) that are set, each one
 * only if it still fits (docs/workers.md "Reproducers"). */
void _qf_repro_env_prefix(char *cmd, size_t size);

/* ---- Process and memory plumbing (runner_proc.c) ---------------------- */

#include <sys/types.h>

#include "ops/_ops.h"

/* Seconds on the monotonic clock. */
double _qf_rp_now_s(void);
/* Shared anonymous memory (survives fork in both processes), or NULL. */
void *_qf_rp_shm_alloc(size_t bytes);
/* One output buffer between canary pages, its data filled with fill; 0,
 * or -1 when out of memory. */
int _qf_rp_guarded_alloc(_qf_guarded *g, size_t bytes, unsigned char fill);
void _qf_rp_guarded_free(_qf_guarded *g);
/* Offset of the first clobbered canary byte: < 0 before the data, > 0
 * past its end (1-based), 0 when intact. */
long _qf_rp_guarded_check(const _qf_guarded *g);
/* A descriptor readable when child pid exits (pidfd), or -1 where there is
 * none: the caller then naps. */
int _qf_rp_child_fd(pid_t pid);
/* Block until one of n child descriptors is readable or timeout_s passes;
 * without any, nap *nap seconds and double it up to cap. */
void _qf_rp_wait_children(const int *fds, size_t n, double timeout_s, double *nap, double cap);

/* ---- What a kernel is handed (runner_kio.c) ------------------------------ */

/* Shared copies of p's inputs (one mapping per input tensor: data, scale
 * codes, zero points) for the kernel calls of this pair's process, and
 * the capture file of its output; 0, or -1 when out of memory. */
int _qf_kio_setup(const _qf_case *p);
/* The input copies unmapped after _qf_kio_check, and mapped afresh
 * (copies of the case's again) before a later kernel call. */
void _qf_kio_release_inputs(void);
int _qf_kio_restore(const _qf_case *p);
/* Unmap the copies, close the capture file. */
void _qf_kio_free(void);
/* The inputs a kernel call gets: the copies once set up, else p's own. */
const qf_tensor *_qf_kio_inputs(const _qf_case *p);
/* Did a kernel (who: "the kernel") write into its inputs?  0, or -1 with
 * FAILED in r naming the input, how many bytes and the first one. */
int _qf_kio_check(const _qf_case *p, qf_result *r, const char *who);
/* What the kernel printed, into r->kernel_output / kernel_output_bytes
 * (a kernel child's capture file, or a worker's or server's done lines);
 * the capture is emptied. */
void _qf_kio_take_output(const _qf_case *p, qf_result *r);
/* What the kernel's calls report back (in shared memory when they run in
 * the kernel child). */
typedef struct _qf_child_report {
    volatile int done;
    int status; /* qf_status of the run function */
    char msg[256];
    uint32_t global_code[2]; /* quantize: the tensor's global scale code after each run */
    double times[1024];
    size_t ntimes;
} _qf_child_report;
/* The kernel's calls (init, the two runs or the timed ones, fini) into
 * rep: in a kernel child forked here and waited for with the time limit,
 * or inline for a worker kernel (its worker is a process of its own).  0
 * when the calls reported, else -1 with the verdict (CRASHED, TIMEOUT,
 * MISTRUSTED) said in r. */
int _qf_kio_run(_qf_case *p, _qf_child_report *rep, qf_result *r, double timeout_s, int timing, size_t warmup,
                size_t reps);
/* In the kernel child, before any kernel code: a session of its own,
 * stdin /dev/null, stdout and stderr the capture file, no other
 * descriptor, no shared mapping but rep, p's outputs and the input copies,
 * the kernel limits. */
void _qf_kio_child_enter(const _qf_case *p, void *rep, size_t rep_bytes);
/* After the pair's evidence is gathered: -1 (FAILED, said in r) when an
 * output of a worker's or kernel server's run changed after its done
 * (docs/security.md "Outputs as they were"), else 0. */
int _qf_kio_recheck(const _qf_case *p, qf_result *r);

/* ---- Memory (runner_memory.c) -------------------------------------------- */

/* The bytes the case will allocate (*need: inputs, outputs with guards and
 * their shared-memory copy, reference and metrics working memory) and its
 * tensors (*tensors: inputs and outputs in their formats, one binary64
 * reference value per checked element), from p->op and p->t alone (after
 * the class's build, before its inputs); -1 when the op has no elems
 * hook. */
int _qf_case_memory(const _qf_case *p, uint64_t *need, uint64_t *tensors);
/* Record the estimate in r and hold it to o's budget: 0, or -1 with
 * UNSUPPORTED and the estimate and budget in r's reason. */
int _qf_case_memory_check(const _qf_case *p, const qf_runner_opts *o, qf_result *r);
/* The pair process's peak resident set and its reaped children's (the
 * kernel child) into r->peak_rss_bytes. */
void _qf_case_peak_rss(qf_result *r);
/* Large allocations of the pair's process returned to the system when freed. */
void _qf_case_malloc_policy(void);

/* ---- Operand layouts (runner_layout.c) ---------------------------------- */

/* The case's layout, or NULL when it is dense row-major. */
const qf_suite_layout *_qf_layout_of(const _qf_case *p);
/* Lay the op class's layout_in inputs out strided (gaps hold a NaN code,
 * or the largest finite code of a format without NaN); 0, or -1 with the
 * verdict said in r. */
int _qf_layout_inputs(_qf_case *p, qf_result *r);
/* Output 0's strides and the bytes of its allocation (p->out_bytes; the
 * dense size for a dense case); 0, or -1 with the verdict said in r. */
int _qf_layout_output(_qf_case *p, qf_result *r);
/* After a run into g, filled with `fill` before it: every byte of output
 * 0's allocation outside its elements must still hold fill; then the
 * elements are gathered in row-major order to the front of g->data, where
 * the dense checks read them.  0, or -1 with "padding: output d written
 * into its padding at row R, col C (ld L, ...)" in why. */
int _qf_layout_gather(const _qf_case *p, _qf_guarded *g, unsigned char fill, char *why, size_t why_size);

/* ---- Failing pairs' tensors (runner_artifacts.c) ------------------------ */

/* --save-failing (docs/runner.md "Failing pairs' tensors"), once the
 * pair's verdict is final: for a FAILED, MARGINAL or MISTRUSTED pair, its
 * inputs, its outputs (when they passed the buffer checks) and the
 * reference of its checked elements (ck, ck1: outputs 0 and 1; n 0 when
 * no reference ran) as .npy files under o->save_dir/failing/, with a
 * suite that reruns the pair from them, within o's limits; r's artifacts
 * members say what was written, what not and why, and the command.
 * Nothing without o->save_dir or for another verdict. */
void _qf_artifacts_save(const _qf_case *p, const _qf_checked *ck, const _qf_checked *ck1, const qf_suite *suite,
                        const qf_runner_opts *o, qf_result *r);

#endif
