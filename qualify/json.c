/* json.c: the internal Jansson helpers of _json.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "_json.h"

char *_qf_json_dumps(const json_t *j, size_t flags)
{
    char *s = json_dumps(j, flags), *t;
    size_t n = 0, extra = 0, i, o = 0, k;
    unsigned cp;
    if (!s)
        return NULL;
    /* Outside strings JSON is ASCII: every such character is in one. */
    for (i = 0; s[i]; i++)
        if ((k = _qf_esc_unseen(s + i, NULL)) != 0)
            extra += 6 - k, i += k - 1;
    if (!extra)
        return s;
    n = i;
    if (!(t = malloc(n + extra + 1))) {
        free(s);
        return NULL;
    }
    for (i = 0; i < n;) {
        if ((k = _qf_esc_unseen(s + i, &cp)) != 0) {
            snprintf(t + o, 7, "\\u%04x", cp);
            o += 6;
            i += k;
        } else
            t[o++] = s[i++];
    }
    t[o] = '\0';
    free(s);
    return t;
}

int _qf_json_dumpf(const json_t *j, FILE *f, size_t flags)
{
    char *s = _qf_json_dumps(j, flags);
    int rc = s && fputs(s, f) != EOF ? 0 : -1;
    free(s);
    return rc;
}

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
