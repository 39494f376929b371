/* qf_runner.h: the isolated runner of a suite (docs/runner.md).
 *
 * A sweep pairs every case of an expanded suite (qf_suite.h) with every
 * registered kernel (qf_kernel.h) matching one of its group's globs, and for
 * each pair:
 *   1. checks the claim (dtype tuple, shape, architecture): else UNSUPPORTED;
 *   2. draws the inputs from the case's distribution and seed and quantizes
 *      them into the tuple's input formats (qf_inputs.h);
 *   3. runs the kernel in a child process with a time limit, into output
 *      buffers in shared memory that are poisoned before the run and guarded
 *      by canaries on both sides: a signal is CRASHED, the limit TIMEOUT, a
 *      canary hit or an element left unwritten FAILED;
 *   4. computes the reference (exact GEMM engine, MPFR references) for every
 *      output element or a seeded sample that always holds the first and
 *      last rows and columns and the tile edges; metrics, bound, verdict;
 *   5. appends the qf_result to the journal (qf_result.h) at once.
 * Every pair runs in its own worker process (forked from the caller), so
 * `jobs` workers run side by side and the results do not depend on jobs.
 */
#ifndef QF_RUNNER_H
#define QF_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "qf_provenance.h"
#include "qf_result.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared in qf_suite.h and qf_kernel.h (repeated typedefs are C11). */
typedef struct qf_suite qf_suite;
typedef struct qf_registry qf_registry;

/* Called in the calling process after each finished pair (also for pairs
 * restored from the journal when resuming, with resumed = 1). */
typedef void (*qf_runner_progress_fn)(void *user, const qf_result *r, size_t done, size_t total, int resumed);

typedef struct qf_runner_opts {
    const char *suite_arg;      /* the suite as the user named it (reproducers); NULL: suite->path */
    const char *const *plugins; /* plugin paths, for reproducers */
    size_t nplugins;
    const char *reproducer_args; /* appended to every reproducer (" --seed 5"), or NULL */
    const char *kernel_glob;     /* only kernels matching this glob; NULL: all */
    const char *case_id;         /* only this case id; NULL: all */
    const char *journal_path;    /* NULL: no journal */
    int resume;                  /* keep finished records of journal_path and skip their pairs */
    int jobs;                    /* worker processes at once; < 1: 1 */
    double timeout_s;            /* kernel time limit per run; <= 0: 60 s */
    int time;                    /* --time: measure QUALIFIED / MARGINAL cases */
    size_t warmup, reps;         /* timing: 0 gives 3 and 10 */
    const char *arch;            /* architecture name; NULL: "cpu" */
    const struct json_t *header; /* extra journal header members (argv ...), or NULL */
    qf_runner_progress_fn progress;
    void *progress_user;
    int no_refute; /* --no-refute: leave out the refuting inputs' pairs (docs/refute.md) */
    /* --max-case-memory: a case whose estimated buffers exceed this many
     * bytes is UNSUPPORTED before anything is mapped, never attempted;
     * 0: qf_runner_default_case_memory().  Per case, not per sweep, so a
     * verdict never depends on --jobs (docs/runner.md "Memory"). */
    size_t max_case_bytes;
    /* --devices: "all" or a list of device indices ("0,1,3"); NULL: device
     * 0 only, as before.  One kernel server per listed device at least
     * (jobs is raised to the count); GPU pairs are spread over the
     * devices and a failing device leaves the rotation, its pairs retried
     * on the others (docs/runner.md "Devices"). */
    const char *devices;
    /* --shard I/N (docs/cluster.md): run only the pairs that
     * qf_runner_shard_assign gives shard shard_index of shard_count; 0
     * shards: every pair.  The journal header then gets "shard" (header's
     * "shard" object, which the caller fills with the sweep's identity,
     * plus "plan_pairs" and "pairs": [[plan index, kernel, case id], ...]),
     * and --resume refuses a journal of another shard or sweep. */
    unsigned shard_index, shard_count;
    /* Plan (and shard) only: sum->results hold each planned pair's
     * identity (kernel, case id, reproducer), nothing runs and no journal
     * is opened (qualify run --list --shard I/N). */
    int list_only;
    /* --save-failing (docs/runner.md "Failing pairs' tensors"): the output
     * directory under whose failing/ the inputs, outputs and references of
     * every FAILED, MARGINAL or MISTRUSTED pair are written as .npy files,
     * with a suite that reruns the pair from them; NULL: nothing is saved.
     * save_pair_max: the most bytes one pair writes (a pair over it writes
     * nothing and says so in its record); save_total_max: the most bytes
     * written under DIR/failing in all, counted since it was created or
     * last cleared (qf_runner_artifacts_clear); 0: no limit. */
    const char *save_dir;
    size_t save_pair_max, save_total_max;
} qf_runner_opts;

/* qualify run's default limits of --save-failing: 64 MiB per pair, 1 GiB
 * under DIR/failing in all. */
#define QF_RUNNER_SAVE_PAIR_DEFAULT  ((size_t)64 << 20)
#define QF_RUNNER_SAVE_TOTAL_DEFAULT ((size_t)1 << 30)

/* Remove DIR/failing, the tensors of an earlier sweep's failing pairs,
 * when it is qualify's (it holds the marker --save-failing writes); no
 * link is followed, a link is removed as a link.  A DIR/failing that is
 * not qualify's (no marker, or not a directory) is left as it is: *kept
 * = 1 (kept may be NULL).  QF_OK, or QF_EIO with the reason in err. */
qf_status qf_runner_artifacts_clear(const char *dir, int *kept, char *err, size_t err_size);

/* The directory under DIR/failing that --save-failing writes r's pair to
 * ("<case id>--<kernel>-<hash>", cut and sanitized; docs/runner.md), into
 * buf[size]: the same for every attempt of the pair. */
void qf_runner_artifacts_dir(const qf_result *r, char *buf, size_t size);

/* A device of a --devices sweep, as the summary and the provenance
 * record it (qf_provenance.h). */
#define QF_RUNNER_DEVICES_MAX QF_PROV_DEVICES
typedef qf_provenance_device qf_runner_device;

/* Parse a --devices value: "all" gives *all = 1 and n 0; else up to max
 * distinct indices 0..QF_RUNNER_DEVICES_MAX-1 separated by commas.  0, or
 * -1 with the reason in err. */
int qf_runner_parse_devices(const char *s, int *idx, size_t max, size_t *n, int *all, char *err,
                            size_t err_size);

/* The default case budget: a quarter of the physical memory (or of the
 * cgroup's memory.max when lower), 4 GiB when neither can be read. */
size_t qf_runner_default_case_memory(void);
/* A size as `--max-case-memory` takes it: a positive byte count, or a
 * number with K, M, G or T (powers of 1024; an optional trailing B, i or
 * iB: 512M, 1.5G, 4GiB).  0 with *out set, or -1 when malformed. */
int qf_runner_parse_bytes(const char *s, size_t *out);
/* "34.4 GiB", "512.0 MiB", "900 bytes" into buf. */
void qf_runner_format_bytes(uint64_t b, char *buf, size_t size);

/* The GPU this process's sweeps ran on (probed by the runner for GPU
 * kernels), into p's GPU slots: 1 when there was one, 0 otherwise. */
struct qf_provenance;
int qf_runner_gpu_provenance(struct qf_provenance *p);

/* Resource limits of every process that runs kernel code (a kernel
 * child, a kernel server, a kernel worker), set with setrlimit before any
 * kernel code runs, so that a kernel that leaks memory, spins, forks or
 * fills the disk ends as a verdict instead of taking the machine
 * (docs/security.md).  0 means no limit of that kind. */
typedef struct qf_kernel_limits {
    unsigned long long memory; /* RLIMIT_DATA bytes (not applied to GPU kernels nor in sanitizer builds) */
    double cpu_s;              /* RLIMIT_CPU seconds of CPU time */
    unsigned long long procs;  /* RLIMIT_NPROC: processes of the user, counted from the current count */
    unsigned long long fsize;  /* RLIMIT_FSIZE bytes of any file written */
    unsigned long long disk;   /* bytes all files of a kernel process's scratch directory may take (0: none) */
} qf_kernel_limits;

/* The defaults: memory the smaller of half the physical memory and 16
 * GiB, CPU time 600 s, 256 more processes than the user has now, files 1
 * GiB, scratch 1 GiB. */
qf_kernel_limits qf_kernel_limits_default(void);

/* The limits for every kernel process started from now on in this
 * process (the CLI sets them before it starts servers and workers). */
void qf_runner_set_kernel_limits(const qf_kernel_limits *l);

/* jobs 1, timeout 60 s, everything else zero / NULL. */
qf_runner_opts qf_runner_opts_default(void);

/* The cores this process may use: the CPUs of its affinity mask, limited
 * by its cgroup's CPU quota (rounded up), at least 1 and at most 1024.
 * `qualify run`'s default --jobs: results never depend on jobs, so the
 * default can be the machine's width. */
int qf_usable_cores(void);

/* The results of a sweep, in plan order (case order, then kernel
 * registration order), resumed ones included. */
typedef struct qf_runner_summary {
    qf_result *results;
    size_t n;
    size_t count[QF_VERDICT_COUNT]; /* per verdict */
    size_t resumed;                 /* taken from the journal */
    int journal_torn;               /* what --resume repaired: QF_JOURNAL_* bits (qf_result.h) */
    /* --devices: the devices listed, in order (0 without the option, or
     * when no device of the sweep's GPU back end was found), and how many
     * pairs were run again after a device fault. */
    size_t ndevices;
    qf_runner_device devices[QF_RUNNER_DEVICES_MAX];
    size_t device_retries;
    size_t plan_pairs;              /* pairs of the whole sweep (n, unless sharded) */
    /* Private: results is a mapping of this many bytes that forked pair
     * processes do not inherit (qf_runner_summary_free unmaps it). */
    size_t results_bytes;
} qf_runner_summary;

void qf_runner_summary_free(qf_runner_summary *s);

/* Run the sweep.  QF_EPARSE: the suite does not expand (err has
 * FILE:LINE:COL) or --case names no case; QF_EINVAL: no (case, kernel) pair
 * is selected; QF_EIO: the journal cannot be written or read back.
 * Verdicts are never statuses: a sweep whose every case FAILED is QF_OK. */
qf_status qf_runner_run(const qf_suite *suite, const qf_registry *reg, const qf_runner_opts *opts,
                        qf_runner_summary *sum, char *err, size_t err_size);

/* ---- Shards (runner_shard.c, docs/cluster.md) ---- */
#define QF_RUNNER_MAX_SHARDS 65536
struct qf_suite_case;
/* A pair's estimated cost in integer units (about a microsecond): a fixed
 * cost per pair plus the product of the case's dimensions weighted by its
 * op class.  Depends on the case alone, never on the machine. */
uint64_t qf_runner_pair_cost(const struct qf_suite_case *c);
/* Balance n pairs (cost[i] in plan order) over nshards shards: dearest
 * first (a fixed scramble of the plan index among equals), each to the
 * least loaded shard (the lowest index among equals).  shard_of[i] receives pair i's shard; load
 * (nshards entries, may be NULL) each shard's summed cost.  QF_EINVAL,
 * QF_ENOMEM. */
qf_status qf_runner_shard_assign(const uint64_t *cost, size_t n, unsigned nshards, unsigned *shard_of,
                                 uint64_t *load);
/* "I/N" with 0 <= I < N <= QF_RUNNER_MAX_SHARDS: 0, or -1 when malformed. */
int qf_runner_parse_shard(const char *s, unsigned *index, unsigned *count);

/* Sampling (docs/runner.md "Sampling"): the sorted, distinct indices of the
 * rows (or columns) of an extent of n that a sample must hold: 0, n - 1,
 * and t - 1, t, t + 1 for every multiple t of 16, 32, 64, 128 and of tile
 * (0: none) below n.  Writes up to max into out, returns the count. */
size_t qf_runner_edges(uint64_t n, uint64_t tile, uint64_t *out, size_t max);

/* A seeded sample of a rows x cols output: every element of the first and
 * last rows and columns, every (edge row, edge column) pair, then uniformly
 * drawn elements until `target` (when target exceeds the edges).  *idx
 * (malloc'ed, sorted, distinct row-major indices), *n its length.  target
 * 0 or >= rows * cols gives every element. */
qf_status qf_runner_sample(uint64_t rows, uint64_t cols, uint64_t target, uint64_t tile, uint64_t seed,
                           uint64_t **idx, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* QF_RUNNER_H */
