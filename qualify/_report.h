/* _report.h: what report.c shares with enable.c and report_junit.c
 * (internal). */
#ifndef QF__REPORT_H
#define QF__REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "qf_provenance.h"
#include "qf_result.h"

/* qf_verdict_name, never NULL ("?"). */
const char *_qf_report_verdict_name(qf_verdict v);
/* The reproducer of a case: the runner's, or the documented form
 * (qualify run SUITE --case ID --kernel K) for a record without one. */
void _qf_report_reproducer(const qf_result *r, char *buf, size_t n);
/* Does the provenance say anything (a report built from a journal has
 * none)? */
struct qf_provenance;
int _qf_report_prov_known(const struct qf_provenance *p);

/* One row a Markdown table leaves out because none of its pairs ran for
 * want of a dtype tuple (qf_report_no_tuple): a summary group of report.md,
 * an entry of enable.md. */
typedef struct _qf_not_run {
    const char *kernel, *op, *dtype;
    size_t pairs;
} _qf_not_run;

/* The rows as one line per kernel, in order of first appearance, after
 * the intro line and a blank line (nothing at all when n is 0):
 *   - K: 40 pairs not run: no dtype tuple for f32.f32.f32.f32 (UNSUPPORTED)
 * each dtype tuple once, followed by its op when the kernel's rows span
 * several ops; text escaped for Markdown. */
void _qf_report_md_not_run(FILE *out, const _qf_not_run *rows, size_t n, const char *intro);

/* The provenance's lists (report_prov.c): a space-separated list as a
 * JSON array of strings; --devices' record and the sandbox's, to JSON and
 * back (members of the wrong type are skipped: a record of the run, not an
 * input of any verdict). */
struct json_t;
struct json_t *_qf_report_words_json(const char *list);
struct json_t *_qf_report_devices_json(const qf_provenance *p);
void _qf_report_devices_from_json(const struct json_t *v, qf_provenance *p);
struct json_t *_qf_report_sandbox_json(const qf_provenance *p);
void _qf_report_sandbox_from_json(const struct json_t *v, qf_provenance *p);

#endif
