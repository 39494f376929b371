/* qf_diff.h: compare two sweeps for pre-merge gating (docs/diff.md).
 *
 * BASE and NEW results are matched by (architecture, kernel, case id).  A
 * regression is any of: a verdict that got worse, a new failure, error
 * growth beyond a factor in max ulp, a qualified shape lost, or (when both
 * sides were timed) a slowdown beyond a threshold widened by the measured
 * spread.  The rules are stated in docs/diff.md; the Markdown report is
 * meant for a pull-request comment.
 */
#ifndef QF_DIFF_H
#define QF_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "qf_result.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qf_diff_options {
    double ulp_factor;  /* error growth: new max_ulp > factor * base max_ulp (default 2) */
    double ulp_floor;   /* ... and new - base > floor ulp (default 0.5) */
    double slow_factor; /* slowdown: new median > base median * (1 + slow + noise) (default 0.10) */
} qf_diff_options;

qf_diff_options qf_diff_options_default(void);

typedef struct qf_diff_counts {
    size_t verdict_worse, verdict_better, new_failures, error_growth, shapes_lost, slowdowns;
    size_t matched, only_base, only_new;
    size_t regressions; /* verdict_worse + new_failures + error_growth + shapes_lost + slowdowns */
} qf_diff_counts;

/* Compare and write the Markdown report to out (may be NULL: counts only).
 * base_name / new_name label the two sides. */
qf_status qf_diff_markdown(FILE *out, const qf_result *base, size_t nb, const qf_result *cur, size_t nn,
                           const char *base_name, const char *new_name, const qf_diff_options *opt,
                           qf_diff_counts *counts);

#ifdef __cplusplus
}
#endif

#endif /* QF_DIFF_H */
