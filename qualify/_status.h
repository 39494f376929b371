/* _status.h: internal helpers the library's readers share for error
 * messages and name lists (not installed). */
#ifndef QF__STATUS_H
#define QF__STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "qf_status.h"

/* Write "NAME: message" (or just the message when name is NULL) into
 * err[size], truncating; returns st so that a caller can
 * `return _qf_fail(...)`.  err may be NULL or size 0 (no message). */
qf_status _qf_fail(char *err, size_t size, qf_status st, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* The same with a va_list, for helpers that set more than a message. */
qf_status _qf_vfail(char *err, size_t size, qf_status st, const char *name, const char *fmt, va_list ap);

/* "a, b, c": the names name(0) .. name(count - 1) joined into buf[size];
 * a list that does not fit stops at the last whole name. */
void _qf_join_names(char *buf, size_t size, int count, const char *(*name)(int));

#endif
