/* qf_report.h: reports of a sweep (docs/runner.md "Data flow of one case", step 8).
 *
 * From the results of a sweep (qf_result.h) and its provenance
 * (qf_provenance.h) this module writes three outputs, documented key by key
 * in docs/reports.md:
 *   results.json  {schema_version, generator, provenance, cases, summary};
 *                 docs/schema/results.schema.json is its JSON Schema.  Each
 *                 case is the journal record (qf_result_to_json) plus the
 *                 report keys dtypes, shape and reproduce.
 *   report.md     Markdown: per kernel, op and dtype tuple the verdict counts,
 *                 worst error in ulps where the exact value is not zero,
 *                 exact zeros missed, worst bound utilization and the growth
 *                 exponent of a K sweep; pairs not run for want of a dtype
 *                 tuple as one line per kernel; a failures section with
 *                 reasons and reproducers; the provenance.
 *   junit.xml     one <testsuite> per kernel, one <testcase> per case, a
 *                 <failure> carrying the reason and the reproducer for
 *                 FAILED, CRASHED, TIMEOUT (and MARGINAL, MISTRUSTED when
 *                 strict), <skipped> for UNSUPPORTED and SKIPPED.
 * and reads results.json back (qualify show, and later tools).
 */
#ifndef QF_REPORT_H
#define QF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "qf_provenance.h"
#include "qf_result.h"
#include "qf_status.h"
#include "qf_verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* results.json schema version: raised when a key changes meaning or is
 * removed; added keys keep it (readers ignore keys they do not know).
 * qf_report_read refuses a higher version. */
#define QF_REPORT_SCHEMA_VERSION 1

typedef struct qf_report_options {
    /* 1: MARGINAL and MISTRUSTED count as failures (JUnit <failure>, the
     * failures section, qf_report_failed).  Default 0. */
    int strict;
    /* Title of report.md; NULL: "qualify report". */
    const char *title;
    /* Members added to results.json's top level by qf_report_write_all
     * (a shard's "shard", a merge's "shards"; docs/cluster.md), or NULL. */
    const struct json_t *extra;
} qf_report_options;

/* Is this verdict a failure for CI?  FAILED, CRASHED, TIMEOUT always;
 * MARGINAL and MISTRUSTED when strict. */
int qf_report_is_failure(qf_verdict v, int strict);

/* Number of results that are failures (qf_report_is_failure). */
size_t qf_report_failed(const qf_result *r, size_t n, int strict);

/* Number of results whose kernel ran: every verdict but UNSUPPORTED and
 * SKIPPED.  A sweep where none ran checked nothing and is not a pass
 * (docs/verdicts.md "A sweep where nothing ran"). */
size_t qf_report_ran(const qf_result *r, size_t n);

/* Is r a pair the runner did not run because its kernel claims no dtype
 * tuple for the case's dtypes (a kernel glob that matched kernels of
 * other dtypes)?  UNSUPPORTED with cause QF_CAUSE_NO_TUPLE (qf_verdict.h):
 * the record's cause, never its reason text.  The reports fold such pairs
 * into one line per kernel (docs/reports.md "Pairs not run"). */
int qf_report_no_tuple(const qf_result *r);

/* One row of the summary: a kernel, an op and a dtype tuple.  The op is
 * the suite's (qf_result.op: log_softmax, glu), not the kernel ABI op it
 * runs on (softmax, activation): two ops served by one kernel are two
 * rows. */
typedef struct qf_report_group {
    char kernel[QF_RESULT_NAME_MAX];
    char kernel_kind[16];
    char op[QF_RESULT_NAME_MAX];
    char dtype[QF_RESULT_NAME_MAX];
    size_t n;                       /* cases */
    size_t count[QF_VERDICT_COUNT]; /* per verdict */
    size_t n_no_tuple;              /* cases not run: no dtype tuple (qf_report_no_tuple) */
    size_t n_metrics;               /* cases with metrics */
    double worst_ulp;               /* max of metrics.max_ulp; NaN without metrics */
    double worst_util;              /* max of metrics.max_util; NaN without bounds */
    /* The ulp headline of report.md: the largest qf_report_ulp_nonzero of
     * the group's cases (the ulp error where the exact value is not zero),
     * NaN when none has one; ulp_unsure: it comes from a record that does
     * not separate its exact zeros and missed one (it may count a result
     * at an exact zero in ulps of zero).  Over the cases that do separate
     * them: exact zeros checked, those returned as nonzero, the largest
     * |result| there (NaN when none was checked); zeros_unsure: some case
     * had exact zeros but does not say how they went. */
    double worst_ulp_nonzero;
    int ulp_unsure;
    size_t n_zero_checked, n_zero_inexact;
    double worst_abs_zero;
    int zeros_unsure;
    /* Growth exponent (qf_metrics_growth) of the error against K: one
     * point per distinct K (the largest metrics.max_abs of the group's
     * cases at that K), when there are at least two (a K sweep); NaN
     * otherwise.  growth_points: the number of K values fitted. */
    double growth, growth_r2;
    size_t growth_points;
} qf_report_group;

/* The ulp error of a case where its exact value is not zero
 * (metrics.max_ulp_nonzero, docs/verdicts.md "Exact zeros").  A record
 * without the exact-zero figures (n_zero_checked 0: a record read back
 * from a journal that does not carry them) gives metrics.max_ulp, which
 * is the same number unless an exact zero was missed (its relative error,
 * max_rel, is then infinite): *unsure (may be NULL) is 1 then.  NaN
 * without metrics or without a nonzero exact value. */
double qf_report_ulp_nonzero(const qf_result *r, int *unsure);

/* The error of a case in ulps, as report.md's failures and qualify show
 * --failed print it: "2.5 ulp"; with exact zeros apart, "2.5 ulp where the
 * exact value is not 0; 3 of 40 exact zeros returned nonzero (max abs
 * 0.25)"; from a record that does not separate a missed exact zero,
 * "7.136e+44 ulp (may count a result at an exact zero in ulps of zero)".
 * Into buf (cut to size). */
void qf_report_error_text(const qf_result *r, char *buf, size_t size);

/* Groups in order of first appearance.  *groups is malloc'ed (free()). */
qf_status qf_report_summarize(const qf_result *r, size_t n, qf_report_group **groups, size_t *ngroups);

/* The whole results.json document (a new reference).  prov may be NULL
 * (provenance: null).  QF_ENOMEM. */
qf_status qf_report_to_json(const qf_result *r, size_t n, const qf_provenance *prov, struct json_t **out);

/* One case object of results.json (the journal record without "record",
 * plus dtypes, shape, reproduce); a new reference.  QF_ENOMEM. */
qf_status qf_report_case_to_json(const qf_result *r, struct json_t **out);

/* Writers.  The *_file variants write to an open stream (stdout for
 * qualify show); the path variants create or truncate the file and return
 * QF_EIO with a message naming it.  opt may be NULL (defaults). */
qf_status qf_report_write_json(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                               char *err, size_t err_size);
qf_status qf_report_markdown_file(FILE *out, const qf_result *r, size_t n, const qf_provenance *prov,
                                  const qf_report_options *opt);
qf_status qf_report_write_markdown(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                                   const qf_report_options *opt, char *err, size_t err_size);
qf_status qf_report_junit_file(FILE *out, const qf_result *r, size_t n, const qf_provenance *prov,
                               const qf_report_options *opt);
qf_status qf_report_write_junit(const char *path, const qf_result *r, size_t n, const qf_provenance *prov,
                                const qf_report_options *opt, char *err, size_t err_size);

/* results.json, report.md and junit.xml into the existing directory dir. */
qf_status qf_report_write_all(const char *dir, const qf_result *r, size_t n, const qf_provenance *prov,
                              const qf_report_options *opt, char *err, size_t err_size);

/* Provenance as the "provenance" object of results.json, and back.
 * from_json fills what is present and "unknown" elsewhere; a NULL or JSON
 * null j (no provenance recorded) leaves every string empty.  p must not
 * hold files (it is overwritten); release with qf_provenance_free. */
qf_status qf_report_provenance_to_json(const qf_provenance *p, struct json_t **out);
qf_status qf_report_provenance_from_json(const struct json_t *j, qf_provenance *p, char *err,
                                         size_t err_size);

/* Read a results.json written by qf_report_write_json, or a journal (JSON
 * Lines, qf_result.h), into *results (malloc'ed, free()) and *n.  prov
 * (may be NULL) receives the provenance (a journal has none: every string
 * empty, and the writers then leave the provenance out).  QF_EIO when the
 * file cannot be read or is a directory, QF_EPARSE with
 * "PATH: message" (naming the case index and member) when it is not a
 * report, QF_EUNSUPPORTED for a newer schema_version.  On QF_OK, err is
 * empty, or holds a warning to show (a journal whose last line is cut
 * short: that case is left out). */
qf_status qf_report_read(const char *path, qf_result **results, size_t *n, qf_provenance *prov, char *err,
                         size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_REPORT_H */
