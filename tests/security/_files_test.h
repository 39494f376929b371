/* _files_test.h: what the tests/security/t-files*.c programs share: run the
 * CLI under a time limit (a command that blocks on a FIFO, or a plugin that
 * hangs, must fail the test, not hang it), a scratch folder and a tiny
 * suite. */
#ifndef QF_FILES_TEST_H
#define QF_FILES_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

typedef struct ftr {
    int rc;    /* exit status; 124 when the time limit killed it, -1 for a signal */
    char *out; /* stdout */
    char *err; /* stderr */
} ftr;

/* Seconds a command may take before it counts as hung (QF_TEST_HANG_S; 60). */
static inline int ft_limit(void)
{
    const char *e = getenv("QF_TEST_HANG_S");
    return e && atoi(e) > 0 ? atoi(e) : 60;
}

/* Run "QUALIFY ARGS" (ARGS printf-style, split by the shell) in dir under
 * timeout(1). */
static inline ftr ft_run(const char *dir, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static inline ftr ft_run(const char *dir, const char *fmt, ...)
{
    char args[4096], cmd[8192];
    const char *bin = getenv("QF_QUALIFY_BIN");
    ftr r;
    va_list ap;
    int st;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "timeout -k 5 %d '%s' %s <'/dev/null' >'%s/cli.out' 2>'%s/cli.err'", ft_limit(),
             bin, args, dir, dir);
    st = system(cmd);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = qf_test_slurp(qf_test_path(dir, "cli.out"), NULL);
    r.err = qf_test_slurp(qf_test_path(dir, "cli.err"), NULL);
    return r;
}

static inline void ft_free(ftr *r)
{
    free(r->out);
    free(r->err);
}

/* Assert exit 2 (bad input) with every one of the NULL-terminated strings
 * in stderr; what names the check. */
static inline void ft_expect_2(ftr r, const char *what, ...)
{
    va_list ap;
    const char *s;
    ck_assert_msg(r.rc == 2, "%s: exit %d (124: it hung), not 2: %s", what, r.rc, r.err);
    va_start(ap, what);
    while ((s = va_arg(ap, const char *)) != NULL)
        ck_assert_msg(strstr(r.err, s) != NULL, "%s: stderr lacks '%s': %s", what, s, r.err);
    va_end(ap);
    ft_free(&r);
}

/* A suite of two softmax pairs that runs in well under a second. */
static inline const char *ft_tiny_suite(const char *dir)
{
    qf_test_write_text(dir, "tiny.yaml",
                       "suite: tiny\n"
                       "inputs: [normal]\n"
                       "seeds: 1\n"
                       "groups:\n"
                       "  - op: softmax\n"
                       "    kernels: [softmax.cpu.*]\n"
                       "    dtypes: [float32]\n"
                       "    shapes: {rows: [2], cols: [7, 9]}\n");
    return qf_test_path(dir, "tiny.yaml");
}

/* mkfifo dir/name (asserted); returns the path in a qf_test_path buffer. */
static inline const char *ft_fifo(const char *dir, const char *name)
{
    const char *p = qf_test_path(dir, name);
    ck_assert_msg(mkfifo(p, 0600) == 0, "mkfifo %s", p);
    return p;
}

#endif
