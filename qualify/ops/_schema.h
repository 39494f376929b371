/* _schema.h: how a suite file states a case of an op (private): its
 * dimensions (names, which are required, defaults), its dtype roles, its
 * scalings and its parameters (types, ranges, choices, defaults).  Each op
 * class (_ops.h) owns one; the suite parser (qualify/suite*.c) checks files
 * against it and docs/suites.md describes it. */
#ifndef QF__SCHEMA_H
#define QF__SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "qf_suite.h"

typedef enum ptype { PT_BOOL = 0, PT_INT, PT_REAL, PT_ENUM, PT_PATH, PT_TEXT } ptype;

typedef struct pspec {
    const char *key;
    ptype type;
    double lo, hi; /* INT and REAL */
    int lo_open, hi_open;
    const char *const *choices; /* ENUM, NULL-terminated */
    int required;
    double def;        /* BOOL, INT, REAL default */
    const char *def_s; /* ENUM default */
} pspec;

typedef struct dim_spec {
    int required;
    uint64_t def; /* default value; 0: the value of dimension `follows` */
    int follows;
} dim_spec;

enum { ROLE_IN = 0, ROLE_ACC, ROLE_OUT, ROLE_REQUIRED };

/* A shape check across dimensions and parameters that a schema's ranges
 * cannot state (heads a multiple of kv_heads ...): 0 when the shape is
 * valid, else -1 with the field ("shapes.kv_heads", "params.top_k") and
 * the message.  param(key) is the case's value of a parameter, NULL when
 * the group does not set it. */
typedef int (*_qf_schema_check)(const uint64_t *dims,
                                const qf_suite_value *(*param)(const void *, const char *), const void *pctx,
                                const char **field, char *msg, size_t size);

typedef struct op_schema {
    const char *name;
    size_t ndims;
    const char *dim_names[QF_SUITE_MAX_DIMS]; /* canonical (case id) order */
    dim_spec dims[QF_SUITE_MAX_DIMS];
    const char *required_dims;
    size_t nroles;
    const char *roles[QF_SUITE_MAX_ROLES];
    int role_kind[QF_SUITE_MAX_ROLES];
    unsigned int_roles; /* bit r: role r may be an integer format */
    const char *const *scales;
    const pspec *params;
    _qf_schema_check check; /* NULL: no check beyond the ranges */
    /* QF_LAYOUT_* the runner can lay the op's matrix operands out in (the
     * suite's `layout`, docs/suites.md#layouts); 0: dense only. */
    uint32_t layouts;
} op_schema;

/* Helpers for writing schemas. */
#define QF_SCHEMA_REAL_ANY -1e30, 1e30, 0, 0
#define QF_SCHEMA_BIG      ((double)QF_SUITE_DIM_MAX)
#define QF_SCHEMA_END                                                                                        \
    {                                                                                                        \
        NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL                                                                \
    }
/* rows x cols, both required; roles in, acc, out (and weight). */
#define QF_SCHEMA_ROWS_COLS 2, {"rows", "cols"}, {{1, 0, -1}, {1, 0, -1}}, "rows, cols"
#define QF_SCHEMA_IAO       3, {"in", "acc", "out"}, {ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL
#define QF_SCHEMA_IWAO      4, {"in", "weight", "acc", "out"}, {ROLE_IN, ROLE_IN, ROLE_ACC, ROLE_OUT}, 0, NULL

#endif
