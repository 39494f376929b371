/* qf_cli_test.h: run the qualify CLI from a Check test, with stdout and
 * stderr captured apart (the CLI promises nothing on stdout when it
 * rejects input, so tests look at both). */
#ifndef QF_CLI_TEST_H
#define QF_CLI_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct qf_cli_result {
    int rc;    /* exit status, -1 when killed by a signal */
    char *out; /* stdout */
    char *err; /* stderr */
} qf_cli_result;

/* The whole file as a NUL-terminated string (asserts on failure). */
static inline char *qf_cli_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Run "BIN SUBCOMMAND ARGS" (ARGS as a shell would split them). */
static inline qf_cli_result qf_cli_run(const char *bin, const char *subcommand, const char *args)
{
    qf_cli_result r = {-1, NULL, NULL};
    char cmd[8192], out[128], err[128];
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

#endif
