/* qf_status.h: status codes shared by every qualify module.
 *
 * Every library function that can fail returns one of these; the library
 * never calls exit().  The CLI maps them onto its documented exit codes
 * (docs/cli.md): QF_OK -> 0, input and usage errors -> 2.
 */
#ifndef QF_STATUS_H
#define QF_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qf_status {
    QF_OK = 0,
    QF_EINVAL,      /* an argument is out of its documented domain */
    QF_ENOMEM,      /* an allocation failed */
    QF_EFORMAT,     /* unknown format, or an operation the format lacks */
    QF_EIO,         /* a file could not be read or written */
    QF_EPARSE,      /* malformed input (file, number, option value) */
    QF_EUNSUPPORTED, /* valid request that this build cannot serve */
    QF_EDEVICE       /* the device is gone: lost, ECC error, reset (qf_backend.h) */
} qf_status;

/* A short English name of a status, for messages ("invalid argument"). */
const char *qf_status_str(qf_status s);

#ifdef __cplusplus
}
#endif

#endif /* QF_STATUS_H */
