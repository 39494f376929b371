/* qf_enable.h: enablement tables from sweep results (docs/enable.md).
 *
 * Verdicts become decisions: per architecture, kernel, op, dtype tuple and
 * op parameters (the parameter key, qf_enable_param_key), the
 * shape region that qualified (boxes of intervals per dimension with an
 * alignment class, spanning swept points only), the regions that failed
 * with their reasons, and the swept range (outside it nothing is known: a
 * shape there is "not qualified", which is not "failed").  The rule that
 * turns points into regions is documented in docs/enable.md "The region
 * rule"; the guard library (qf_guard.h) evaluates the same regions.
 *
 * Outputs: Markdown (one table per architecture), JSON (read by
 * qf_guard_open_json) and a C source/header pair holding the table as a
 * constant qf_guard_table a dispatcher compiles in.
 */
#ifndef QF_ENABLE_H
#define QF_ENABLE_H

#include <stddef.h>
#include <stdint.h>

#include "qf_provenance.h"
#include "qf_result.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: entries carry their op parameters ("params", "param_defaults"); a
 * version 1 table merged every parameter combination of a kernel into one
 * entry and must be regenerated. */
#define QF_ENABLE_FORMAT_VERSION 2

/* Longest parameter key ("trans_a=false,trans_b=false,alpha=1,..."). */
#define QF_ENABLE_PARAMS_MAX 512

/* A box: lo[d] <= x[d] <= hi[d], x[d] % align[d] == 0. */
typedef struct qf_enable_region {
    int failed; /* 0 qualified, 1 failed */
    uint64_t lo[QF_RESULT_MAX_DIMS], hi[QF_RESULT_MAX_DIMS];
    uint64_t align[QF_RESULT_MAX_DIMS]; /* 1 for failed regions */
    qf_verdict verdict;                 /* QUALIFIED, or the worst inside */
    char reason[QF_RESULT_TEXT_MAX];    /* failed: reason of the worst case */
    size_t shapes;                      /* swept shapes inside */
} qf_enable_region;

/* One swept shape of an entry and what all its cases said. */
typedef struct qf_enable_point {
    uint64_t x[QF_RESULT_MAX_DIMS];
    qf_verdict worst;                /* over inputs and seeds (see docs/enable.md) */
    int cls;                         /* 'Q' qualified, 'F' blocks enablement, 'U' no evidence */
    char reason[QF_RESULT_TEXT_MAX]; /* reason of the worst case */
} qf_enable_point;

typedef struct qf_enable_entry {
    char arch[64];
    char kernel[QF_RESULT_NAME_MAX];
    char kernel_kind[16];
    char op[QF_RESULT_NAME_MAX];
    char dtype[QF_RESULT_NAME_MAX];
    char params[QF_ENABLE_PARAMS_MAX];         /* the parameter key (qf_enable_param_key) */
    char param_defaults[QF_ENABLE_PARAMS_MAX]; /* the op's defaults, in the same form */
    size_t ndims;
    char dims[QF_RESULT_MAX_DIMS][32];
    size_t cases;
    size_t no_tuple; /* cases not run: the kernel claims no dtype tuple (qf_report_no_tuple) */
    size_t npoints;
    qf_enable_point *points;
    /* Filled by qf_enable_finish: the distinct swept values per dimension
     * (of points with evidence, ascending) and the regions. */
    size_t nvalues[QF_RESULT_MAX_DIMS];
    uint64_t *values[QF_RESULT_MAX_DIMS];
    size_t nregions;
    qf_enable_region *regions;
    size_t n_qualified, n_failed, n_unsupported; /* points per class */
} qf_enable_entry;

/* The identity of one architecture of the table. */
typedef struct qf_enable_arch {
    char arch[64];
    int simulated; /* "sim:..." : a CPU model of a matrix unit */
    char cpu_vendor[64], cpu_model[QF_PROV_STR], cpu_isa[QF_PROV_LONG]; /* host CPU */
    char gpu_name[QF_PROV_STR];                                         /* "" without a GPU */
    char source[QF_RESULT_TEXT_MAX];                                    /* first results file of this arch */
} qf_enable_arch;

typedef struct qf_enable_table {
    size_t narchs;
    qf_enable_arch *archs;
    size_t nentries;
    qf_enable_entry *entries;
    int finished;
} qf_enable_table;

void qf_enable_init(qf_enable_table *t);
void qf_enable_free(qf_enable_table *t);

/* Add the results of one file (source: its path, for the table; prov may
 * be NULL).  QF_EINVAL with a message when a kernel's cases disagree on
 * the dimension names.  QF_ENOMEM. */
qf_status qf_enable_add(qf_enable_table *t, const qf_result *r, size_t n, const qf_provenance *prov,
                        const char *source, char *err, size_t err_size);

/* Build the regions of every entry (after the last qf_enable_add). */
qf_status qf_enable_finish(qf_enable_table *t);

/* Outputs (the table must be finished).  QF_EIO naming the file. */
qf_status qf_enable_to_json(const qf_enable_table *t, struct json_t **out);
qf_status qf_enable_write_json(const qf_enable_table *t, const char *path, char *err, size_t err_size);
qf_status qf_enable_write_markdown(const qf_enable_table *t, const char *path, char *err, size_t err_size);
/* QF_OK when name can name the table in C: an identifier that is not a C11
 * keyword (`--name int` would write a pair no compiler accepts); else
 * QF_EINVAL with the reason.  Checked before any output is written. */
qf_status qf_enable_c_name_check(const char *name, char *err, size_t err_size);
/* NAME.h and NAME.c in dir; the table is `const qf_guard_table NAME`.
 * name must pass qf_enable_c_name_check (QF_EINVAL). */
qf_status qf_enable_write_c(const qf_enable_table *t, const char *dir, const char *name, char *err,
                            size_t err_size);

/* The parameter key of a case: NAME=VALUE for every parameter of its op,
 * comma-separated, in the op's parameter order (docs/suites.md), with the
 * parameters the suite left at their defaults spelled out, so that one
 * parameter combination has one key whichever file swept it:
 * "fn=relu", "trans_a=false,trans_b=false,alpha=2,beta=0,group_size=128".
 * Numbers in the shortest form that reads back to the same double.
 * defaults (may be NULL) receives the op's defaults in the same form (the
 * parameters that have one).  Truncated to size. */
void qf_enable_param_key(const qf_result *r, char *buf, size_t size, char *defaults, size_t dsize);

/* "M in [1, 33], K in [16, 128] % 16" into buf. */
void qf_enable_region_text(const qf_enable_entry *e, const qf_enable_region *r, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* QF_ENABLE_H */
