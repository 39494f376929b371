/* status.c: names of the shared status codes. */
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
    }
    return "unknown status";
}
