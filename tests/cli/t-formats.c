/* t-formats.c: the 'qualify formats' command, run as a separate process
 * (the binary CTest names in QF_QUALIFY_BIN), end to end: the table, its
 * JSON, code dumps, encoding, and the usage errors (exit code 2, a message
 * naming the bad input).  Without QF_QUALIFY_BIN the test is skipped
 * (exit 77), never passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "qf_cli_test.h"
#include "qf_format.h"
#include "qf_test.h"

static const char *bin;

typedef struct run_result {
    int rc;    /* exit status, -1 if it did not exit normally */
    char *out; /* stdout and stderr together */
    size_t len;
    int lines; /* newline count */
} run_result;

/* Run "qualify formats ARGS", stderr appended to stdout. */
static run_result run(const char *args)
{
    qf_cli_result c = qf_cli_run(bin, "formats", args);
    size_t no = strlen(c.out), ne = strlen(c.err), n;
    run_result r = {c.rc, realloc(c.out, no + ne + 1), no + ne, 0};
    ck_assert_ptr_nonnull(r.out);
    memcpy(r.out + no, c.err, ne + 1);
    free(c.err);
    for (n = 0; n < r.len; n++)
        r.lines += r.out[n] == '\n';
    return r;
}

/* The line of a dump that starts with "0xCODE ". */
static const char *dump_line(const run_result *r, const char *code_prefix, char *buf, size_t size)
{
    const char *s = r->out;
    size_t k = strlen(code_prefix);
    while (s && *s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > k && !strncmp(s, code_prefix, k) && s[k] == ' ') {
            snprintf(buf, size, "%.*s", (int)len, s);
            return buf;
        }
        s = e ? e + 1 : NULL;
    }
    return NULL;
}

START_TEST(test_table)
{
    run_result r = run("");
    int i;
    ck_assert_msg(r.rc == 0, "qualify formats: exit %d\n%s", r.rc, r.out);
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const char *name = qf_format_get((qf_format_id)i)->name;
        ck_assert_msg(strstr(r.out, name) != NULL, "table lacks %s:\n%s", name, r.out);
    }
    ck_assert_int_eq(QF_FORMAT_COUNT, 18); /* int32 appended last (issue 5) */
    free(r.out);
}
END_TEST

START_TEST(test_json)
{
    run_result r = run("--json");
    json_error_t err;
    json_t *root;
    size_t i;
    ck_assert_msg(r.rc == 0, "--json: exit %d\n%s", r.rc, r.out);
    root = json_loads(r.out, 0, &err);
    ck_assert_msg(root != NULL, "--json does not parse: line %d: %s", err.line, err.text);
    ck_assert(json_is_array(root));
    ck_assert_int_eq(json_array_size(root), 18);
    for (i = 0; i < json_array_size(root); i++) {
        json_t *o = json_array_get(root, i), *name = json_object_get(o, "name");
        ck_assert(json_is_string(name));
        ck_assert_str_eq(json_string_value(name), qf_format_get((qf_format_id)i)->name);
        ck_assert(json_is_integer(json_object_get(o, "bits")));
    }
    json_decref(root);
    free(r.out);
}
END_TEST

START_TEST(test_dump)
{
    char buf[128];
    run_result r = run("--dump float8_e4m3fn");
    ck_assert_msg(r.rc == 0, "--dump: exit %d\n%s", r.rc, r.out);
    ck_assert_int_eq(r.lines, 256);
    ck_assert_ptr_nonnull(dump_line(&r, "0x7E", buf, sizeof buf));
    ck_assert_str_eq(buf, "0x7E 0x1.cp+8"); /* 448, OCP OFP8 E4M3 max */
    ck_assert_ptr_nonnull(dump_line(&r, "0x7F", buf, sizeof buf));
    ck_assert_str_eq(buf, "0x7F nan");
    ck_assert_ptr_nonnull(dump_line(&r, "0x00", buf, sizeof buf));
    ck_assert_str_eq(buf, "0x00 0x0p+0");
    free(r.out);
    r = run("--dump e2m1");
    ck_assert_msg(r.rc == 0, "--dump e2m1: exit %d\n%s", r.rc, r.out);
    ck_assert_int_eq(r.lines, 16);
    ck_assert_ptr_nonnull(dump_line(&r, "0x7", buf, sizeof buf));
    ck_assert_str_eq(buf, "0x7 0x1.8p+2"); /* 6 */
    free(r.out);
}
END_TEST

START_TEST(test_encode)
{
    static const struct {
        const char *args, *out;
    } cases[] = {
        {"--encode e4m3 --round rtz 500", "0x7E\n"},
        {"--encode e5m2 1e6", "0x7C\n"},
        {"--encode e5m2 --saturate 1e6", "0x7B\n"},
        /* 464: tie to even 448; -4.5 * 2^-9: tie to -4 * 2^-9 */
        {"--encode e4m3 464 465 -0x1.2p-7 nan", "0x7E\n0x7F\n0x84\n0x7F\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r = run(cases[i].args);
        ck_assert_msg(r.rc == 0 && !strcmp(r.out, cases[i].out), "%s: exit %d, '%s'", cases[i].args, r.rc,
                      r.out);
        free(r.out);
    }
}
END_TEST

START_TEST(test_errors)
{
    run_result r = run("--encode float8_e9m9 1");
    ck_assert_msg(r.rc == 2, "unknown format: exit %d", r.rc);
    ck_assert_msg(strstr(r.out, "float8_e9m9") != NULL, "message does not name the format: %s", r.out);
    ck_assert_msg(strstr(r.out, "float8_e4m3fn") && strstr(r.out, "uint4"), "valid formats not listed: %s",
                  r.out);
    free(r.out);
    r = run("--dump nosuch");
    ck_assert_msg(r.rc == 2 && strstr(r.out, "nosuch"), "unknown --dump format: exit %d, %s", r.rc, r.out);
    free(r.out);
    r = run("--encode e4m3 --round sideways 1");
    ck_assert_msg(r.rc == 2, "unknown --round: exit %d", r.rc);
    ck_assert_msg(strstr(r.out, "sideways") != NULL, "message does not name the mode: %s", r.out);
    free(r.out);
    r = run("--encode e4m3 --round floor 1"); /* e8m0 only */
    ck_assert_msg(r.rc == 2, "--round floor for e4m3: exit %d", r.rc);
    free(r.out);
    r = run("--encode e4m3 1.5x");
    ck_assert_msg(r.rc == 2 && strstr(r.out, "1.5x"), "bad value: exit %d, %s", r.rc, r.out);
    free(r.out);
    r = run("--dump tf32");
    ck_assert_msg(r.rc == 2, "--dump tf32: exit %d", r.rc);
    ck_assert_msg(r.lines < 5, "--dump tf32 printed a dump: %d lines", r.lines);
    free(r.out);
}
END_TEST

int main(void)
{
    bin = qf_test_require_env("QF_QUALIFY_BIN");
    return qf_test_main("cli/formats", "formats", 120, NULL, NULL,
                        QF_TESTS(test_table, test_json, test_dump, test_encode, test_errors));
}
