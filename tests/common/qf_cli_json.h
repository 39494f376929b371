/* qf_cli_json.h: run the qualify CLI for its JSON on stdout (tests that
 * link Jansson). */
#ifndef QF_CLI_JSON_H
#define QF_CLI_JSON_H

#include <jansson.h>

#include "qf_cli_test.h"

/* "BIN SUBCOMMAND ARGS" must exit 0 and print one JSON document: it is
 * returned (the caller decrefs it). */
static inline json_t *qf_cli_json(const char *bin, const char *subcommand, const char *args)
{
    qf_cli_result r = qf_cli_expect(bin, subcommand, args, 0, NULL);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    ck_assert_msg(doc != NULL, "%s %s: not JSON (%s): %s", subcommand, args, e.text, r.out);
    qf_cli_result_free(&r);
    return doc;
}

/* The same where the document must be an array of n elements. */
static inline json_t *qf_cli_json_array(const char *bin, const char *subcommand, const char *args, size_t n)
{
    json_t *arr = qf_cli_json(bin, subcommand, args);
    ck_assert_msg(json_is_array(arr), "%s %s: not an array", subcommand, args);
    ck_assert_uint_eq(json_array_size(arr), n);
    return arr;
}

#endif
