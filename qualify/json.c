/* json.c: the internal Jansson helpers of _json.h. */
#include <math.h>
#include <string.h>

#include "_json.h"

json_t *_qf_json_real(double x)
{
    if (isnan(x))
        return json_string("NaN");
    if (isinf(x))
        return json_string(x > 0 ? "Infinity" : "-Infinity");
    return json_real(x);
}

int _qf_json_get_real(const json_t *v, double *out)
{
    const char *s;
    if (json_is_real(v)) {
        *out = json_real_value(v);
        return 0;
    }
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return -1;
    s = json_string_value(v);
    if (!strcmp(s, "NaN"))
        *out = NAN;
    else if (!strcmp(s, "Infinity"))
        *out = INFINITY;
    else if (!strcmp(s, "-Infinity"))
        *out = -INFINITY;
    else
        return -1;
    return 0;
}

int _qf_json_set_new(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : -1;
}
