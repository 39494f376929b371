/* qf_guard.h: run-time guards over an enablement table (docs/guards.md).
 *
 * A dispatcher asks, before it launches a kernel, whether the kernel
 * qualified on this architecture for this dtype tuple, op parameters and
 * shape; the table comes from `qualify enable` (docs/enable.md), either as
 * its JSON file or
 * compiled in as the generated C pair.  Outside the qualified region the
 * answer is no, with the reason: a failed region (and why it failed), a
 * shape inside the swept range that no qualified region covers, a shape
 * outside the swept range, or an architecture the table does not know.
 *
 * libqualify_guard is linkable on its own: it needs Jansson (to read the
 * JSON table) and libdl (to ask the CUDA or HIP runtime for the device
 * architecture when built with QF_HAVE_CUDA / QF_HAVE_HIP), never MPFR or
 * GMP.  Environment:
 *   QF_GUARD_FORCE=off     every kernel is allowed (guarding off)
 *   QF_GUARD_FORCE=NAME    only NAME is allowed, and selection returns it
 *   QF_GUARD_LOG=1         every decision is printed to stderr
 *   QF_GUARD_ARCH=A        the architecture to assume instead of detecting
 * They are read when a guard is opened.
 */
#ifndef QF_GUARD_H
#define QF_GUARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QF_GUARD_MAX_DIMS 8

/* ---- The table as constant data (what `qualify enable` generates) ---------- */

/* A box of shapes: lo[d] <= x[d] <= hi[d] and x[d] % align[d] == 0 for
 * each dimension of the entry. */
typedef struct qf_guard_region {
    int failed;          /* 0: qualified region; 1: failed region */
    const char *verdict; /* QUALIFIED, or the worst verdict inside */
    const char *reason;  /* failed: the reason of the worst case; else "" */
    uint64_t lo[QF_GUARD_MAX_DIMS], hi[QF_GUARD_MAX_DIMS], align[QF_GUARD_MAX_DIMS];
} qf_guard_region;

/* One architecture, kernel, dtype tuple and parameter combination. */
typedef struct qf_guard_entry {
    const char *arch;   /* "cpu", "sm_90", "gfx942", "sim:sm_90" */
    const char *kernel; /* registered kernel name */
    const char *dtype;  /* the suite's dtype tuple label, "bf16.bf16.f32.bf16" */
    size_t ndims;
    const char *dims[QF_GUARD_MAX_DIMS];                               /* "M", "N", "K" */
    uint64_t swept_lo[QF_GUARD_MAX_DIMS], swept_hi[QF_GUARD_MAX_DIMS]; /* swept range */
    size_t nregions;
    const qf_guard_region *regions;
    /* Entries of architecture "cpu": the ISA features of the CPU the
     * results came from (space-separated, as the provenance records them);
     * a kernel may dispatch on them, so the guard allows the entry only on
     * a CPU that has every one.  NULL or "": no requirement (GPU and
     * simulated architectures, or an unknown CPU). */
    const char *isa;
    /* The op parameters of the entry: its parameter key
     * (docs/enable.md "The key"), "fn=relu" or
     * "trans_a=false,trans_b=false,alpha=1,beta=0,group_size=128", and the
     * defaults of the op in the same form (what a query leaves out).  NULL
     * is "" (a table generated before parameters were keyed: regenerate
     * it, docs/guards.md). */
    const char *params;
    const char *param_defaults;
} qf_guard_entry;

typedef struct qf_guard_table {
    size_t nentries;
    const qf_guard_entry *entries;
} qf_guard_table;

/* ---- Decisions ------------------------------------------------------------------ */

typedef enum qf_guard_answer {
    QF_GUARD_QUALIFIED = 0, /* inside a qualified region: may run */
    QF_GUARD_FORCED,        /* QF_GUARD_FORCE names this kernel: may run */
    QF_GUARD_OFF,           /* QF_GUARD_FORCE=off: may run */
    QF_GUARD_FAILED,        /* inside a failed region */
    QF_GUARD_NOT_QUALIFIED, /* inside the swept range, in no region */
    QF_GUARD_NOT_SWEPT,     /* outside the swept range, or no entry */
    QF_GUARD_UNKNOWN_ARCH,  /* the table has nothing for this architecture */
    QF_GUARD_NOT_FORCED,    /* QF_GUARD_FORCE names another kernel */
    QF_GUARD_ISA_MISSING    /* a cpu entry qualified on a CPU with ISA features this one lacks */
} qf_guard_answer;

/* "qualified", "failed", "not-qualified", ... */
const char *qf_guard_answer_name(qf_guard_answer a);

typedef struct qf_guard_decision {
    int allowed; /* 1: the kernel may run */
    qf_guard_answer answer;
    char reason[512]; /* one line, for logs and the CLI */
} qf_guard_decision;

/* A shape by dimension name; dimensions the entry does not have are
 * ignored, a dimension the entry has and the shape lacks is not swept. */
typedef struct qf_guard_shape {
    size_t ndims;
    const char *names[QF_GUARD_MAX_DIMS];
    uint64_t values[QF_GUARD_MAX_DIMS];
} qf_guard_shape;

/* Parse "M=16,N=4096,K=128" into s; names point into text, which is
 * modified and must outlive s.  0, or -1 on bad text (a name given twice
 * is bad text: the answer would depend on which one is read). */
int qf_guard_shape_parse(char *text, qf_guard_shape *s);

/* ---- The guard ------------------------------------------------------------------- */

typedef struct qf_guard qf_guard;

/* Open over a compiled-in table (not copied: it must outlive the guard). */
int qf_guard_open_table(const qf_guard_table *t, qf_guard **out);
/* Open over the JSON written by `qualify enable` (enable.json).  -1 with a
 * message naming the file (and the entry) in err on failure. */
int qf_guard_open_json(const char *path, qf_guard **out, char *err, size_t err_size);
void qf_guard_close(qf_guard *g);

/* The architecture decisions are made for: QF_GUARD_ARCH, else the
 * detected one (qf_guard_detect_arch); qf_guard_set_arch overrides it
 * (a simulated architecture such as "sim:sm_90", for example). */
const char *qf_guard_arch(const qf_guard *g);
void qf_guard_set_arch(qf_guard *g, const char *arch);
/* The ISA features of this CPU that cpu entries are checked against
 * (space-separated): detected when the guard is opened
 * (qf_guard_cpu_identity); qf_guard_set_isa overrides them (tests, or a
 * dispatcher that knows better). */
const char *qf_guard_isa(const qf_guard *g);
void qf_guard_set_isa(qf_guard *g, const char *isa);

/* May KERNEL run for DTYPE, op parameters PARAMS and SHAPE?  Returns
 * d->allowed.  params: "NAME=VALUE,..." (docs/guards.md "Parameters");
 * a parameter left out is taken at its default, NULL or "" means every
 * parameter at its default.  Values compare as numbers when both read as
 * numbers (alpha=1 is alpha=1.0), true/false also as 1/0.  Text that is
 * not NAME=VALUE,... with each NAME once, or a NAME the entry's op does
 * not have, is not allowed (answer not-swept, the reason says which). */
int qf_guard_may_run_params(const qf_guard *g, const char *kernel, const char *dtype, const char *params,
                            const qf_guard_shape *shape, qf_guard_decision *d);
/* The same with every parameter at its default (params NULL). */
int qf_guard_may_run(const qf_guard *g, const char *kernel, const char *dtype, const qf_guard_shape *shape,
                     qf_guard_decision *d);

/* The first of kernels[0..n) that may run, else fallback (which is not
 * checked: it is the kernel that is always safe).  With QF_GUARD_FORCE=NAME
 * it returns NAME.  d (may be NULL) receives the decision that chose. */
const char *qf_guard_select(const qf_guard *g, const char *const *kernels, size_t n, const char *fallback,
                            const char *dtype, const qf_guard_shape *shape, qf_guard_decision *d);
/* The same for op parameters params (as in qf_guard_may_run_params). */
const char *qf_guard_select_params(const qf_guard *g, const char *const *kernels, size_t n,
                                   const char *fallback, const char *dtype, const char *params,
                                   const qf_guard_shape *shape, qf_guard_decision *d);

/* ---- Architecture identity ----------------------------------------------------- */

/* The current architecture: the first GPU's "sm_XY" (CUDA, from the
 * compute capability) or gcnArchName "gfx942" (HIP) when built with the
 * back end and a device is present, else "cpu". */
void qf_guard_detect_arch(char *buf, size_t size);

/* The CPU: vendor, model name and ISA features usable here
 * (space-separated), "unknown" where not found. */
void qf_guard_cpu_identity(char *vendor, size_t vsize, char *model, size_t msize, char *isa, size_t isize);

#ifdef __cplusplus
}
#endif

#endif /* QF_GUARD_H */
