/* cli.h: the subcommands of the qualify CLI (not installed).
 * Each returns the process exit code documented in docs/cli.md. */
#ifndef QF_CLI_H
#define QF_CLI_H

#include <stddef.h>
#include <stdio.h>

/* docs/cli.md "Exit codes"; QF_EXIT_NOTHING: no pair ran (every one
 * UNSUPPORTED or SKIPPED), so nothing was checked: not a pass. */
enum { QF_EXIT_OK = 0, QF_EXIT_FAIL = 1, QF_EXIT_USAGE = 2, QF_EXIT_NOTHING = 3 };

int qf_cli_formats(int argc, char **argv);
int qf_cli_ref(int argc, char **argv);
int qf_cli_list(int argc, char **argv);
int qf_cli_run(int argc, char **argv);
int qf_cli_merge(int argc, char **argv);
int qf_cli_show(int argc, char **argv);
int qf_cli_enable(int argc, char **argv);
int qf_cli_guard(int argc, char **argv);
int qf_cli_diff(int argc, char **argv);
int qf_cli_audit(int argc, char **argv);
int qf_cli_workload(int argc, char **argv);
int qf_cli_report(int argc, char **argv);
int qf_cli_probe(int argc, char **argv);
int qf_cli_replay(int argc, char **argv);
int qf_cli_slurm(int argc, char **argv);
int qf_cli_kernel_server(int argc, char **argv);

/* Where a subcommand's kernels come from besides the built-in ones. */
typedef struct qf_cli_sources {
    const char *const *plugins; /* --plugin LIB.so */
    size_t nplugins;
    const char *const *adapters; /* --adapter cblas:LIB.so[:symbol] */
    size_t nadapters;
    const char *const *workers; /* --worker CMD (and a suite's workers:) */
    size_t nworkers;
    const char *const *claims; /* --claim FILE: applied after every source (docs/claims.md) */
    size_t nclaims;
    /* A claim that matches none of these kernels is skipped, not an error:
     * a kernel server's, which holds the run's in-process kernels but not
     * its workers' (the run checked every claim against all of them). */
    int claims_partial;
} qf_cli_sources;

/* A new registry with the built-in kernels and those of src, in that order
 * (cli/kernels.c): QF_EXIT_OK with *out, or, with "qualify CMD: ..." on
 * stderr naming the source, QF_EXIT_USAGE for a source that cannot be
 * loaded (QF_EXIT_FAIL when the built-ins cannot be registered). */
struct qf_registry;
int qf_cli_registry(const char *cmd, const qf_cli_sources *src, struct qf_registry **out);
/* One getopt result c of the kernel-source options ('P' --plugin, 'A'
 * --adapter, 'W' --worker) into src's arrays (plugins, adapters, workers,
 * max entries each, owned by the caller): 1 when c was one of them, 0 when
 * not, -1 (a usage error printed for cmd) past max. */
int qf_cli_source_opt(const char *cmd, int c, const char *arg, qf_cli_sources *src, const char **plugins,
                      const char **adapters, const char **workers, size_t max);

/* `--isolate server` (cli/kernels.c): start the kernel server (`qualify
 * kernel-server` with src's plugins, adapters and claims) and route reg's
 * in-process kernels through it (qf_worker_route).  QF_EXIT_OK, or
 * QF_EXIT_FAIL with "qualify CMD: ..." on stderr. */
int qf_cli_route_servers(const char *cmd, const qf_cli_sources *src, struct qf_registry *reg);

/* Print "qualify CMD: message" to stderr; returns QF_EXIT_USAGE. */
/* ---- Shared by run and merge (cli/shard.c, docs/cluster.md) ---- */
struct json_t;
struct qf_result;
struct qf_provenance;
/* argv as a JSON array of strings (the journal header's "argv"); call it
 * before getopt_long permutes argv. */
struct json_t *qf_cli_argv_json(int argc, char **argv);
/* mkdir -p: 0, or -1 with errno. */
int qf_cli_mkdir_p(const char *path);
/* --fail-on marginal,mistrusted into *mask (bits 1 << verdict): 0, or -1
 * naming anything else. */
int qf_cli_parse_fail_on(const char *s, unsigned *mask);
/* The identity of a sweep: {"suite", "suite_sha256", "kernels_sha256"
 * (names and labels of reg's kernels in registration order),
 * "qualify_version", "options"}; options (the options that change
 * results) is taken over.  NULL when the suite file cannot be read or out
 * of memory.  An unsharded journal's header holds it as "sweep", --resume
 * compares it (docs/cli.md "--resume"). */
struct json_t *qf_cli_sweep_identity(const char *suite_path, const char *suite_name, const struct qf_registry *reg,
                                     struct json_t *options);
/* The shard identity: {"index", "count", "sweep": the sweep's identity}. */
struct json_t *qf_cli_shard_identity(unsigned index, unsigned count, const char *suite_path,
                                     const char *suite_name, const struct qf_registry *reg,
                                     struct json_t *options);
/* results.json (with extra's members at its top level; extra may be
 * NULL), report.md and junit.xml into outdir.  QF_EXIT_FAIL when they
 * cannot be written (the message starts "qualify CMD: ") or a result's
 * verdict is in fail_mask, else QF_EXIT_OK. */
int qf_cli_write_reports(const char *cmd, const char *outdir, const struct qf_result *r, size_t n,
                         const struct qf_provenance *prov, const char *title, unsigned fail_mask,
                         const struct json_t *extra);
/* The sandbox of kernel processes (cli/sandbox.c): probe it; with
 * --require-sandbox and a mechanism missing, "qualify CMD: why" on stderr
 * and QF_EXIT_USAGE; else QF_EXIT_OK, with a warning (unless quiet) when
 * kernel processes will not be fully confined. */
int qf_cli_sandbox_check(const char *cmd, int quiet);

/* Before any kernel process starts: make the output directory and cover
 * it and the n files (the suite) from kernel processes
 * (_qf_sbx_hide).  QF_EXIT_USAGE with "qualify CMD: ..." when the
 * directory cannot be made, else QF_EXIT_OK. */
int qf_cli_sandbox_hide(const char *cmd, const char *outdir, const char *const *files, size_t n);

/* QF_EXIT_USAGE with "qualify CMD: ..." when a --kernel-writable
 * directory holds the output directory or lies in it (kernel processes
 * would reach qualify's files), else QF_EXIT_OK. */
int qf_cli_sandbox_outdir(const char *cmd, const char *outdir);

/* The provenance's "sandbox" entries: what confined each kernel of the n
 * results (docs/security.md). */
struct qf_registry;
void qf_cli_sandbox_provenance(const struct qf_registry *reg, const struct qf_result *r, size_t n,
                               struct qf_provenance *prov);

/* ---- What run finds in its output directory (cli/outdir.c) ---- */
/* The entries of an output directory: its own and those under failing/,
 * as paths relative to it, sorted. */
typedef struct qf_cli_outdir {
    char **names;
    size_t n, cap;
} qf_cli_outdir;
/* List outdir into *d (empty when it does not exist yet): before any kernel
 * code runs.  0, or -1 (errno) when it cannot be read. */
int qf_cli_outdir_note(qf_cli_outdir *d, const char *outdir);
/* Drop name and everything under it from d (removed by qualify itself). */
void qf_cli_outdir_forget(qf_cli_outdir *d, const char *name);
/* After the reports: name on stderr ("qualify CMD: DIR/NAME: ...") every
 * entry of outdir that is not in before and not one qualify writes (its
 * four files; with save, failing/ and the directories of r's pairs), and
 * any of its four files that is no longer a regular file.  Their count
 * (1 when outdir cannot be listed). */
size_t qf_cli_outdir_foreign(const qf_cli_outdir *before, const char *cmd, const char *outdir,
                             const struct qf_result *r, size_t n, int save);
void qf_cli_outdir_free(qf_cli_outdir *d);

/* A sweep's exit status once rc (QF_EXIT_OK or QF_EXIT_FAIL) is known:
 * when no pair of r[0..n) ran (qf_report_ran), "qualify CMD: nothing
 * ran: ..." on stderr and QF_EXIT_NOTHING in place of QF_EXIT_OK, except
 * for a shard (shard 1), whose merge judges the sweep (docs/cli.md "Exit
 * codes"). */
int qf_cli_nothing_ran(const char *cmd, const struct qf_result *r, size_t n, int rc, int shard);
/* Print "qualify CMD: MESSAGE" to stderr, MESSAGE (printf style) with
 * every control character, bidi control and byte that is not UTF-8 as a
 * visible escape (_escape.h): error messages quote suites, claim files,
 * kernels' names and workers' words.  qf_cli_usage_error does the same
 * and returns QF_EXIT_USAGE. */
void qf_cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int qf_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
