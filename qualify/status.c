/* status.c: names of the shared status codes, and the internal message
 * helpers of _status.h. */
#include <stdio.h>

#include "_status.h"
#include "qf_status.h"

const char *qf_status_str(qf_status s)
{
    switch (s) {
    case QF_OK: return "ok";
    case QF_EINVAL: return "invalid argument";
    case QF_ENOMEM: return "out of memory";
    case QF_EFORMAT: return "unknown or unsuitable format";
    case QF_EIO: return "input/output error";
    case QF_EPARSE: return "malformed input";
    case QF_EUNSUPPORTED: return "not supported by this build";
    case QF_EDEVICE: return "device lost";
    }
    return "unknown status";
}

qf_status _qf_vfail(char *err, size_t size, qf_status st, const char *name, const char *fmt, va_list ap)
{
    int n = 0;
    if (err == NULL || size == 0)
        return st;
    if (name != NULL)
        n = snprintf(err, size, "%s: ", name);
    if (n >= 0 && (size_t)n < size)
        vsnprintf(err + n, size - (size_t)n, fmt, ap);
    return st;
}

qf_status _qf_fail(char *err, size_t size, qf_status st, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = _qf_vfail(err, size, st, name, fmt, ap);
    va_end(ap);
    return st;
}

void _qf_join_names(char *buf, size_t size, int count, const char *(*name)(int))
{
    size_t used = 0;
    int i, n;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (i = 0; i < count; i++) {
        n = snprintf(buf + used, size - used, i ? ", %s" : "%s", name(i));
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
}
