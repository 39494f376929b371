/* t-reject-empty.c: 'qualify report' refuses inputs it cannot plot
 * honestly: an audit.json of another version (the keys may mean something
 * else), an audit with no tensors (before: a PLplot "Invalid window limits"
 * warning and an empty plot), and a results.json without cases (before: a
 * page of 0 plots, exit 0).  Exit 2 naming the file; no page written.
 * Skipped (77) without QF_QUALIFY_BIN or PLplot. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"
#include "common.h"

static void expect_rejected(const char *file, const char *word)
{
    char args[1024], page[300];
    qf_cli_result r;
    snprintf(page, sizeof page, "%s/rejected.html", dir);
    remove(page);
    snprintf(args, sizeof args, "%s -o %s", file, page);
    r = qf_cli_run(bin, "report", args);
    ck_assert_msg(r.rc == 2, "report %s: rc %d: %s", file, r.rc, r.err);
    ck_assert_msg(strstr(r.err, file) && strstr(r.err, word), "%s", r.err);
    ck_assert_msg(!strstr(r.err, "PLPLOT"), "%s", r.err);
    ck_assert_int_eq(access(page, F_OK), -1);
    qf_cli_result_free(&r);
}

/* audit.json edited: key set to value (deleted when NULL). */
static void audit_variant(const char *name, const char *key, json_t *value, char *path, size_t size)
{
    json_error_t je;
    json_t *j = json_load_file(audit, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", audit, je.text);
    if (value)
        json_object_set_new(j, key, value);
    else
        json_object_del(j, key);
    snprintf(path, size, "%s/%s", dir, name);
    ck_assert_int_eq(json_dump_file(j, path, 0), 0);
    json_decref(j);
}

START_TEST(test_reject)
{
    char p[300];
    json_error_t je;
    json_t *j;
    audit_variant("v9.json", "version", json_integer(9), p, sizeof p);
    expect_rejected(p, "version");
    audit_variant("nov.json", "version", NULL, p, sizeof p);
    expect_rejected(p, "version");
    audit_variant("notensors.json", "tensors", json_array(), p, sizeof p);
    expect_rejected(p, "nothing to plot");
    /* results.json with the cases removed */
    j = json_load_file(results, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", results, je.text);
    json_object_set_new(j, "cases", json_array());
    snprintf(p, sizeof p, "%s/nocases.json", dir);
    ck_assert_int_eq(json_dump_file(j, p, 0), 0);
    json_decref(j);
    expect_rejected(p, "no cases");
}
END_TEST

START_TEST(test_unchanged_inputs_still_plot)
{
    char args[1024], page[300];
    qf_cli_result r;
    snprintf(page, sizeof page, "%s/ok.html", dir);
    snprintf(args, sizeof args, "%s %s -o %s", results, audit, page);
    r = qf_cli_run(bin, "report", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    ck_assert_int_eq(access(page, F_OK), 0);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    require_report();
    return qf_test_main("htmlreport/reject-empty", "cli", 300, inputs_make, inputs_remove,
                        QF_TESTS(test_reject, test_unchanged_inputs_still_plot));
}
