/* _suite.h: what the suite files share (private).
 *
 * suite.c loads (files, includes, workloads, groups, shapes), suite_parse.c
 * reads YAML nodes into values, dtype tuples, parameters, inputs and
 * policies, suite_expand.c turns a loaded suite into cases, and
 * suite_schema.c holds the schemas they check against (the ops' from their
 * op classes, qualify/ops/_schema.h; the input distributions').  The schema
 * is reached only through the three _qf_suite_*schema* / op_list
 * functions below, so its tables can be replaced without touching the
 * rest.
 */
#ifndef QF__SUITE_H
#define QF__SUITE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "qf_format.h"
#include "qf_suite.h"
#include "_yaml_limits.h"

#include "ops/_schema.h"

/* ---- Schema: the op classes own theirs (ops/_schema.h) ------------------------ */

/* The distributions and parameters of the input generator (suite_schema.c). */
typedef struct dist_schema {
    const char *name;
    pspec params[7];
} dist_schema;

/* The schema of op (a valid qf_suite_op): its op class's. */
const op_schema *_qf_suite_op_schema(qf_suite_op op);
/* The refuting inputs the op's class adds to every case (docs/refute.md):
 * their count, and the array in *inputs (may be NULL). */
size_t _qf_suite_op_refute(qf_suite_op op, const qf_suite_input **inputs);
/* The distributions, ended by an entry whose name is NULL. */
const dist_schema *_qf_suite_dist_schemas(void);
/* The first component of the names of op's kernels: the ABI op its
 * class runs on (qf_kernel.h), so log_softmax's kernels are softmax.* */
const char *_qf_suite_op_kernels(qf_suite_op op);
/* The op names, comma-separated, for messages. */
const char *_qf_suite_op_list_text(void);

/* The small helpers below (arena, failures, paths) are static inline so
 * that every suite file uses them and libqualify exports no symbol with
 * such short names. */

/* ---- Arena: every allocation of a suite lives here, so a failed load and
 * qf_suite_free() release everything in one walk (the fuzzer checks it). */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

typedef struct arena {
    chunk *head;
} arena;

static inline void *arena_alloc(arena *a, size_t size)
{
    size_t al = sizeof(max_align_t);
    size = (size + al - 1) / al * al;
    if (size == 0)
        size = al;
    if (!a->head || a->head->cap - a->head->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        chunk *c = malloc(sizeof(chunk) + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += size;
    memset(p, 0, size);
    return p;
}

static inline char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static inline char *arena_strdup(arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

/* ---- Loading context ------------------------------------------------------- */

/* A shape entry before workload references are resolved. */
typedef struct raw_set {
    const char *ref; /* workload name, or NULL for a literal set */
    qf_suite_shape_set set;
} raw_set;

typedef struct raw_sets {
    size_t n, cap;
    raw_set *v;
} raw_sets;

typedef struct workload {
    const char *name;
    qf_suite_op op;
    qf_suite_where where;
    raw_sets sets;
    int state; /* 0 unresolved, 1 resolving (cycle), 2 resolved */
} workload;

typedef struct group_raw {
    qf_suite_group g;
    raw_sets sets;
} group_raw;

typedef struct ctx {
    arena *A;
    char *err;
    size_t errsize;
    qf_status st;
    const char *file; /* current file, as named (arena) */
    const char *dir;  /* its directory, for includes and input files */
    yaml_document_t *doc;
    unsigned long nodes;
    const char *chain[QF_SUITE_INCLUDE_DEPTH + 2]; /* include chain, names */
    const char *keys[QF_SUITE_INCLUDE_DEPTH + 2];  /* and real paths */
    int depth;
    qf_suite *out;
    group_raw *groups;
    size_t ngroups, capgroups;
    workload *wl;
    size_t nwl, capwl;
    const char **loaded; /* real paths of the files read so far */
    size_t nloaded, caploaded;
} ctx;

#define NODE_LIMIT _QF_YAML_NODE_LIMIT /* YAML nodes walked, aliases counted each time */

/* ---- Failures: the message "file:line:col: field 'f': ..." goes to
 * c->err, the status to c->st (and is returned). */

static inline qf_status vfail_at(ctx *c, const char *file, int line, int col, const char *field,
                                 const char *fmt, va_list ap)
{
    if (c->err && c->errsize) {
        int n;
        if (field && *field)
            n = snprintf(c->err, c->errsize, "%s:%d:%d: field '%s': ", file, line, col, field);
        else
            n = snprintf(c->err, c->errsize, "%s:%d:%d: ", file, line, col);
        if (n >= 0 && (size_t)n < c->errsize)
            vsnprintf(c->err + n, c->errsize - (size_t)n, fmt, ap);
    }
    return c->st = QF_EPARSE;
}

static inline qf_status fail_at(ctx *c, const char *file, int line, int col, const char *field,
                                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(c, file, line, col, field, fmt, ap);
    va_end(ap);
    return QF_EPARSE;
}

static inline qf_status fail(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(c, c->file, n ? (int)n->start_mark.line + 1 : 1, n ? (int)n->start_mark.column + 1 : 1, field,
             fmt, ap);
    va_end(ap);
    return QF_EPARSE;
}

static inline qf_status oom(ctx *c)
{
    if (c->err && c->errsize)
        snprintf(c->err, c->errsize, "%s: out of memory", c->file ? c->file : "suite");
    return c->st = QF_ENOMEM;
}

static inline qf_suite_where where_of(ctx *c, const yaml_node_t *n)
{
    qf_suite_where w = {c->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
    return w;
}

/* "parent.key" / "parent[i]" into buf, truncated to fit (paths only label
 * messages). */
static inline const char *pcat(char *buf, size_t size, const char *a, const char *sep, const char *b)
{
    size_t n = 0;
    const char *parts[3] = {a, sep, b};
    for (int k = 0; k < 3; k++)
        for (const char *s = parts[k]; s && *s && n + 1 < size; s++)
            buf[n++] = *s;
    buf[n] = 0;
    return buf;
}

static inline const char *pjoin(char *buf, size_t size, const char *parent, const char *key)
{
    return pcat(buf, size, parent, parent && *parent ? "." : "", key);
}

static inline const char *pindex(char *buf, size_t size, const char *parent, size_t i)
{
    char ix[32];
    int k = snprintf(ix, sizeof ix, "[%zu]", i);
    (void)k;
    return pcat(buf, size, parent, "", ix);
}

#define PATHSZ 256

static inline yaml_node_t *get(ctx *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

/* ---- suite_parse.c: reading YAML nodes ------------------------------------------
 * Each returns QF_OK, or fails through c (message in c->err, status in
 * c->st); field is the path of the node in messages. */

/* n must be of type t; what names the expectation in the message. */
qf_status _qf_suite_expect(ctx *c, const yaml_node_t *n, yaml_node_type_t t, const char *field,
                           const char *what);
/* A scalar's text, without embedded NUL bytes. */
qf_status _qf_suite_scalar_text(ctx *c, const yaml_node_t *n, const char *field, const char **out);
/* A mapping whose keys are scalars, unique and among keys (keys NULL: any). */
qf_status _qf_suite_check_map(ctx *c, const yaml_node_t *m, const char *field, const char *const *keys,
                              size_t nkeys);
/* The value of key in a checked mapping m (NULL m: none), or NULL. */
yaml_node_t *_qf_suite_map_get(ctx *c, const yaml_node_t *m, const char *key);
/* A scalar or a list of at most max values, as a list (arena). */
qf_status _qf_suite_as_list(ctx *c, yaml_node_t *n, const char *field, size_t max, yaml_node_t ***items,
                            size_t *count);
qf_status _qf_suite_parse_u64(ctx *c, const yaml_node_t *n, const char *field, uint64_t lo, uint64_t hi,
                              uint64_t *out);
/* A name of letters, digits, _ . - and the characters of extra (arena copy). */
qf_status _qf_suite_parse_name(ctx *c, const yaml_node_t *n, const char *field, const char *extra,
                               const char **out);
/* Free text of at most maxlen characters (arena copy). */
/* The top file's `workers:` (a command line or a list of them) into s. */
qf_status _qf_suite_parse_workers(ctx *c, yaml_node_t *n, qf_suite *s);
qf_status _qf_suite_parse_text(ctx *c, const yaml_node_t *n, const char *field, size_t maxlen,
                               const char **out);
/* A name or a list of names (arena). */
qf_status _qf_suite_parse_names(ctx *c, yaml_node_t *n, const char *field, const char *extra,
                                const char ***out, size_t *count);
/* The shortest text of a real that reads back to it (case ids). */
void _qf_suite_fmt_real(char *buf, size_t size, double v);

/* A group's keys, each into g (n NULL: the key is absent, except for
 * dtypes, which the caller requires). */
qf_status _qf_suite_parse_kernels(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                  qf_suite_group *g);
qf_status _qf_suite_parse_dtypes(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                 qf_suite_group *g);
qf_status _qf_suite_parse_params(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                 qf_suite_group *g);
qf_status _qf_suite_parse_inputs(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g);
qf_status _qf_suite_parse_seeds(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g);
qf_status _qf_suite_parse_threads(ctx *c, yaml_node_t *n, const char *field, qf_suite_group *g);
qf_status _qf_suite_parse_layouts(ctx *c, yaml_node_t *n, const char *field, const op_schema *os,
                                  qf_suite_group *g);
/* true / false (also True, TRUE, False, FALSE; not yes / no). */
qf_status _qf_suite_parse_bool(ctx *c, const yaml_node_t *n, const char *field, int *out);
qf_status _qf_suite_parse_sampling(ctx *c, yaml_node_t *n, const char *field, qf_suite_sampling *s);
qf_status _qf_suite_parse_policy(ctx *c, yaml_node_t *n, const char *field, qf_suite_policy *pol);

#endif
