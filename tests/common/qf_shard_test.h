/* qf_shard_test.h: what the shard tests (tests/cli/t-shard.c,
 * tests/cluster/t-slurm.c) share: the scratch folder, a small suite, a run that
 * must succeed, and the comparison of a merged sweep with an unsharded
 * one (docs/cluster.md). */
#ifndef QF_SHARD_TEST_H
#define QF_SHARD_TEST_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_cli_test.h"

/* QF_QUALIFY_BIN and the scratch folder, set by main(). */
static const char *bin;
static char dir[256];

/* A small suite (gemm and softmax, 256 pairs); tag makes another suite. */
static inline const char *small_suite(const char *name, const char *tag)
{
    char text[1024];
    snprintf(text, sizeof text,
             "suite: small%s\n"
             "inputs: [normal, uniform]\n"
             "seeds: 1\n"
             "groups:\n"
             "  - op: gemm\n"
             "    kernels: [gemm.cpu.*]\n"
             "    dtypes: [float32, {in: bfloat16, acc: float32}]\n"
             "    shapes: {M: [3, 17], N: [5], K: [9, 33]}\n"
             "  - op: softmax\n"
             "    kernels: [softmax.cpu.*]\n"
             "    dtypes: [float32]\n"
             "    shapes: {rows: [2], cols: [7, 65]}\n",
             tag);
    qf_test_write_text(dir, name, text);
    return qf_test_path(dir, name);
}

/* qualify run SUITE -o dir/OUT -q ARGS, which must exit 0. */
static inline void run(const char *suite, const char *out, const char *args)
{
    qf_cli_result r = qf_cli_expectf(bin, "run", 0, NULL, "'%s' -o '%s/%s' -q %s", suite, dir, out, args);
    qf_cli_result_free(&r);
}

/* What must equal in a record of the merged and the unsharded run: all but
 * the run's own measurements (times, start, memory reached). */
static inline json_t *comparable(const json_t *c)
{
    static const char *const run_specific[] = {"wall_s", "started", "peak_rss_bytes", "timing"};
    json_t *o = json_deep_copy(c);
    size_t i;
    for (i = 0; i < sizeof run_specific / sizeof run_specific[0]; i++)
        json_object_del(o, run_specific[i]);
    return o;
}

/* OUT/results.json of the merge equals that of the unsharded run: the
 * cases in the same order, equal but for run-specific members; the
 * summary's verdicts and groups. */
static inline void same_results(const char *unsharded, const char *merged)
{
    json_error_t je;
    json_t *a = json_load_file(qf_test_path(dir, unsharded), 0, &je);
    json_t *b = json_load_file(qf_test_path(dir, merged), 0, &je);
    const json_t *ca, *cb;
    size_t i;
    ck_assert_msg(a && b, "results.json unreadable: %s", je.text);
    ca = json_object_get(a, "cases");
    cb = json_object_get(b, "cases");
    ck_assert_uint_eq(json_array_size(ca), json_array_size(cb));
    for (i = 0; i < json_array_size(ca); i++) {
        json_t *x = comparable(json_array_get(ca, i)), *y = comparable(json_array_get(cb, i));
        ck_assert_msg(json_equal(x, y), "case %zu differs: %s %s vs %s %s", i,
                      json_string_value(json_object_get(x, "kernel")),
                      json_string_value(json_object_get(x, "case_id")),
                      json_string_value(json_object_get(y, "kernel")),
                      json_string_value(json_object_get(y, "case_id")));
        json_decref(x);
        json_decref(y);
    }
    ck_assert(json_equal(json_object_get(json_object_get(a, "summary"), "verdicts"),
                         json_object_get(json_object_get(b, "summary"), "verdicts")));
    ck_assert(json_equal(json_object_get(json_object_get(a, "summary"), "groups"),
                         json_object_get(json_object_get(b, "summary"), "groups")));
    ck_assert_uint_eq(json_array_size(json_object_get(b, "shards")), 3);
    json_decref(a);
    json_decref(b);
}

#endif
