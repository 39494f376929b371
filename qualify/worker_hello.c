/* worker_hello.c: the dtype tuples of a worker's hello (docs/workers.md
 * "hello"): each direction's slot formats and the input scalings, read
 * into a qf_dtype_tuple for qf_registry_add (worker.c's parse_kernel). */
#include <string.h>

#include <jansson.h>

#include "_claim.h"
#include "_worker.h"
#include "qf_kernel.h"

/* Format names of one direction's slots; an absent or null entry repeats
 * the previous one (a slot the op does not use keeps whatever value). */
int _qf_worker_tuple_slots(json_t *arr, int nslots, qf_format_id *out, const char **bad)
{
    size_t i;
    qf_format_id last = QF_FLOAT32;
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > (size_t)nslots)
        return *bad = NULL, -1;
    for (i = 0; i < (size_t)nslots; i++) {
        json_t *v = json_array_get(arr, i);
        if (v && !json_is_null(v)) {
            if (_qf_claim_format(v, &last)) {
                *bad = json_is_string(v) ? json_string_value(v) : NULL;
                return -1;
            }
        }
        out[i] = last;
    }
    return 0;
}

/* A tuple's input scalings (a kernel server's scaled GEMM tuples): per
 * input slot {"kind": NAME, "format": NAME, "block": N}; absent: none. */
int _qf_worker_tuple_scales(json_t *arr, int nslots, qf_dtype_tuple *t)
{
    size_t i;
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > (size_t)nslots)
        return -1;
    for (i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i), *b = json_object_get(e, "block");
        const char *kind = json_string_value(json_object_get(e, "kind"));
        int k;
        for (k = 0; k < QF_SCALE_COUNT; k++)
            if (kind && !strcmp(kind, qf_scale_kind_name((qf_scale_kind)k)))
                break;
        if (k == QF_SCALE_COUNT)
            return -1;
        t->in_scale[i] = (qf_scale_kind)k;
        if (k == QF_SCALE_NONE)
            continue;
        if (_qf_claim_format(json_object_get(e, "format"), &t->in_scale_format[i]) ||
            (b && (!json_is_integer(b) || json_integer_value(b) < 0)))
            return -1;
        t->in_scale_block[i] = b ? (size_t)json_integer_value(b) : 0;
    }
    return 0;
}
