/* qf_cli_test.h: run the qualify CLI from a Check test, with stdout and
 * stderr captured apart (the CLI promises nothing on stdout when it
 * rejects input, so tests look at both). */
#ifndef QF_CLI_TEST_H
#define QF_CLI_TEST_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qf_test.h"

typedef struct qf_cli_result {
    int rc;    /* exit status, -1 when killed by a signal */
    char *out; /* stdout */
    char *err; /* stderr */
} qf_cli_result;

/* The whole file as a NUL-terminated string (asserts on failure). */
static inline char *qf_cli_slurp(const char *path)
{
    return qf_test_slurp(path, NULL);
}

/* Run "BIN SUBCOMMAND ARGS" (ARGS as a shell would split them). */
static inline qf_cli_result qf_cli_run(const char *bin, const char *subcommand, const char *args)
{
    qf_cli_result r = {-1, NULL, NULL};
    char cmd[8192 + 1024], out[128], err[128]; /* room for qf_cli_expectf's arguments */
    int st;
    snprintf(out, sizeof out, "/tmp/qf-cli-%d-%s.out", (int)getpid(), subcommand);
    snprintf(err, sizeof err, "/tmp/qf-cli-%d-%s.err", (int)getpid(), subcommand);
    snprintf(cmd, sizeof cmd, "'%s' %s %s >%s 2>%s", bin, subcommand, args, out, err);
    st = system(cmd);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = qf_cli_slurp(out);
    r.err = qf_cli_slurp(err);
    remove(out);
    remove(err);
    return r;
}

static inline void qf_cli_result_free(qf_cli_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Run "BIN SUBCOMMAND ARGS" and assert the exit status rc and, when
 * err_has is not NULL, that stderr contains it; the caller frees the
 * result (and may look further). */
static inline qf_cli_result qf_cli_expect(const char *bin, const char *subcommand, const char *args, int rc,
                                          const char *err_has)
{
    qf_cli_result r = qf_cli_run(bin, subcommand, args);
    ck_assert_msg(r.rc == rc, "%s %s: exit %d, not %d: %s", subcommand, args, r.rc, rc, r.err);
    if (err_has)
        ck_assert_msg(strstr(r.err, err_has) != NULL, "%s %s: stderr lacks '%s': %s", subcommand, args,
                      err_has, r.err);
    return r;
}

/* qf_cli_expect with the arguments formatted printf-style. */
static inline qf_cli_result qf_cli_expectf(const char *bin, const char *subcommand, int rc,
                                           const char *err_has, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static inline qf_cli_result qf_cli_expectf(const char *bin, const char *subcommand, int rc,
                                           const char *err_has, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return qf_cli_expect(bin, subcommand, args, rc, err_has);
}

/* A rejected input: exit 2, stderr naming names, nothing on stdout; what
 * says which case failed. */
static inline void qf_cli_expect_reject(const char *bin, const char *subcommand, const char *args,
                                        const char *names, const char *what)
{
    qf_cli_result r = qf_cli_run(bin, subcommand, args);
    ck_assert_msg(r.rc == 2, "%s: rc %d", what, r.rc);
    ck_assert_msg(strstr(r.err, names) != NULL, "%s: the message does not name %s: %s", what, names, r.err);
    ck_assert_msg(r.out[0] == '\0', "%s: stdout is not empty: %s", what, r.out);
    qf_cli_result_free(&r);
}

/* After `qualify probe KERNEL SOURCE -o CLAIM` printed OUT: replay with
 * CLAIM every shape whose line ("   M x  N x  K: ... (R of T replayed)")
 * says the probe replayed all its elements, at most max of them, and
 * assert each is bit-exact: a probe's claim must hold wherever the probe
 * says it checked it, whatever path the library took on this CPU.
 * Returns how many shapes were replayed. */
static inline int qf_cli_replay_probed_shapes(const char *bin, const char *kernel, const char *source,
                                              const char *claim, const char *out, int max)
{
    const char *line = out;
    int done = 0;
    while (line && *line && done < max) {
        const char *eol = strchr(line, '\n'), *p;
        unsigned m, n, k, got, of;
        char text[512], args[4096];
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len < sizeof text && sscanf(line, " %u x %u x %u:", &m, &n, &k) == 3) {
            memcpy(text, line, len);
            text[len] = '\0';
            p = strrchr(text, '(');
            if (p && sscanf(p, "(%u of %u replayed)", &got, &of) == 2 && got == of && of > 0) {
                qf_cli_result r;
                snprintf(args, sizeof args, "%s %s --claim %s --shape %u,%u,%u --n 2", kernel, source, claim, m, n,
                         k);
                r = qf_cli_expect(bin, "replay", args, 0, NULL);
                fprintf(stderr, "%s", r.out);
                ck_assert_msg(strstr(r.out, "QUALIFIED (bit-exact)"), "%s: %u x %u x %u does not replay: %s", kernel,
                              m, n, k, r.out);
                qf_cli_result_free(&r);
                done++;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return done;
}

#endif