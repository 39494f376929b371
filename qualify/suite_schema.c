/* suite_schema.c: the schema of suite files: the ops' come from their op
 * classes (qualify/ops/, _schema.h), the input distributions' are here.
 * The rest of the suite code reaches both through _suite.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "_suite.h"
#include "ops/_ops.h"

#define REAL_ANY QF_SCHEMA_REAL_ANY

/* The distributions and parameters of the input generator (qf_inputs.h,
 * docs/inputs.md): the same names, so the runner hands them on as they
 * are; the ranges here are those the generator checks (qf_dist_check),
 * less the ones that depend on the format. */
static const char *const tails[] = {"student_t", "lognormal", NULL};

#define P_MEAN                                                                                               \
    {                                                                                                        \
        "mean", PT_REAL, REAL_ANY, NULL, 0, 0, NULL                                                          \
    }
#define P_STD                                                                                                \
    {                                                                                                        \
        "std", PT_REAL, 0, 1e30, 0, 0, NULL, 0, 1, NULL                                                      \
    }
#define P_FRAC(d)                                                                                            \
    {                                                                                                        \
        "fraction", PT_REAL, 0, 1, 0, 0, NULL, 0, d, NULL                                                    \
    }
#define P_RATE(k, d)                                                                                         \
    {                                                                                                        \
        k, PT_REAL, 0, 1, 0, 0, NULL, 0, d, NULL                                                             \
    }
#define P_END                                                                                                \
    {                                                                                                        \
        NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL                                                                \
    }

static const dist_schema dist_schemas[] = {
    {"normal", {P_MEAN, P_STD, P_END}},
    {"uniform",
     {{"lo", PT_REAL, REAL_ANY, NULL, 0, -1, NULL}, {"hi", PT_REAL, REAL_ANY, NULL, 0, 1, NULL}, P_END}},
    {"small_int", {{"int_max", PT_INT, 1, 9007199254740992.0, 0, 0, NULL, 0, 4, NULL}, P_END}},
    {"outliers",
     {P_MEAN,
      P_STD,
      P_FRAC(0.01),
      {"scale", PT_REAL, REAL_ANY, NULL, 0, 100, NULL},
      {"per_channel", PT_BOOL, 0, 0, 0, 0, NULL, 0, 0, NULL},
      P_END}},
    {"heavy_tail",
     {P_MEAN,
      P_STD,
      {"tail", PT_ENUM, 0, 0, 0, 0, tails, 0, 0, "student_t"},
      {"dof", PT_REAL, 0, 1e6, 1, 0, NULL, 0, 3, NULL},
      {"sigma", PT_REAL, 0, 20, 0, 0, NULL, 0, 1, NULL},
      P_END}},
    {"near_saturation",
     {{"lo", PT_REAL, 0, 2, 0, 0, NULL, 0, 0.5, NULL}, {"hi", PT_REAL, 0, 2, 0, 0, NULL, 0, 1, NULL}, P_END}},
    {"subnormal", {P_MEAN, P_STD, P_FRAC(0.5), P_END}},
    {"ill_conditioned", {{"cond", PT_REAL, 1, 1e300, 0, 0, NULL, 0, 1e6, NULL}, P_END}},
    {"special",
     {P_MEAN,
      P_STD,
      P_RATE("rate_nan", 0.01),
      P_RATE("rate_inf", 0.01),
      P_RATE("rate_zero", 0.01),
      {"sign", PT_INT, -1, 1, 0, 0, NULL, 0, 0, NULL},
      P_END}},
    {"file",
     {{"path", PT_PATH, 0, 0, 0, 0, NULL, 1, 0, NULL},
      {"tensor", PT_TEXT, 0, 0, 0, 0, NULL, 0, 0, NULL},
      P_END}},
    {NULL, {P_END}},
};
/* clang-format on */

static char op_list[512];

static void op_list_make(void)
{
    size_t n = 0;
    for (int i = 0; i < qf_suite_op_count(); i++)
        n += (size_t)snprintf(op_list + n, n < sizeof op_list ? sizeof op_list - n : 0, "%s%s", i ? ", " : "",
                              _qf_opclass_get((qf_suite_op)i)->name);
}

const char *_qf_suite_op_list_text(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, op_list_make);
    return op_list;
}

/* ---- Ops: the op classes (qualify/ops/) ------------------------------------------------ */

const char *qf_suite_op_name(qf_suite_op op)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    return k ? k->name : NULL;
}

qf_status qf_suite_op_lookup(const char *name, qf_suite_op *out)
{
    for (int i = 0; name && i < qf_suite_op_count(); i++)
        if (!strcmp(name, _qf_opclass_get((qf_suite_op)i)->name)) {
            *out = (qf_suite_op)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

size_t qf_suite_op_dims(qf_suite_op op, const char *const **names)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    if (!k)
        return 0;
    if (names)
        *names = k->schema->dim_names;
    return k->schema->ndims;
}

size_t qf_suite_op_roles(qf_suite_op op, const char *const **names)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    if (!k)
        return 0;
    if (names)
        *names = k->schema->roles;
    return k->schema->nroles;
}

const char *qf_suite_op_param(qf_suite_op op, size_t i)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    const pspec *ps;
    if (!k)
        return NULL;
    for (ps = k->schema->params; ps->key && i; ps++, i--)
        ;
    return ps->key;
}

qf_op qf_suite_op_kernel_op(qf_suite_op op)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    return k ? k->abi : QF_OP_COUNT;
}

const char *qf_suite_op_bound(qf_suite_op op)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    return k ? k->bound : NULL;
}

const char *_qf_suite_op_kernels(qf_suite_op op)
{
    return qf_op_name(_qf_opclass_get(op)->abi);
}

const op_schema *_qf_suite_op_schema(qf_suite_op op)
{
    return _qf_opclass_get(op)->schema;
}

size_t _qf_suite_op_refute(qf_suite_op op, const qf_suite_input **inputs)
{
    const _qf_opclass *k = _qf_opclass_get(op);
    if (inputs)
        *inputs = k ? k->refute_inputs : NULL;
    return k ? k->n_refute : 0;
}

const dist_schema *_qf_suite_dist_schemas(void)
{
    return dist_schemas;
}
