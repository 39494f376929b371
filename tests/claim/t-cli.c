/* t-cli.c: claim files through the CLI (docs/claims.md): `qualify probe -o`
 * writes one, `qualify run --claim FILE` and a suite's `claims:` apply it,
 * results record where the claim came from, and a claim that is tighter
 * than what the kernel does fails.  Bad claim files and paths are exit 2
 * naming the file and the field; so is a claim nested past the suites'
 * limit (tests/claim/t-limits.c has the others). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_test.h"

static char dir[128];

static const char *bin(void)
{
    const char *b = getenv("QF_QUALIFY_BIN");
    ck_assert_msg(b != NULL, "QF_QUALIFY_BIN comes from CTest");
    return b;
}

static void setup(void)
{
    char cmd[512];
    snprintf(dir, sizeof dir, "/tmp/qf-t-claim-cli-%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *suite_text = "suite: claimed\n"
                                "refute: false\n" /* the cases counted are the normal ones */
                                "inputs: [normal]\n"
                                "seeds: 2\n"
                                "groups:\n"
                                "  - op: gemm\n"
                                "    kernels: [gemm.cpu.naive.f32]\n"
                                "    dtypes: [float32]\n"
                                "    shapes: {M: [4], N: [5], K: [300]}\n";

/* The cases of OUT/results.json (a new reference), asserting n of them. */
static json_t *cases_of(const char *out, size_t n)
{
    char path[512];
    json_error_t je;
    json_t *root, *cases;
    snprintf(path, sizeof path, "%s/results.json", out);
    root = json_load_file(path, 0, &je);
    ck_assert_msg(root != NULL, "%s: %s", path, je.text);
    cases = json_incref(json_object_get(root, "cases"));
    json_decref(root);
    ck_assert_uint_eq(json_array_size(cases), n);
    return cases;
}

/* Every case has this verdict and claim_origin (NULL: none). */
static void expect_all(json_t *cases, const char *verdict, const char *origin_has)
{
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *v = json_string_value(json_object_get(c, "verdict"));
        const char *o = json_string_value(json_object_get(c, "claim_origin"));
        ck_assert_msg(v && !strcmp(v, verdict), "case %zu: verdict %s, not %s", i, v ? v : "?", verdict);
        if (origin_has)
            ck_assert_msg(o && strstr(o, origin_has), "case %zu: claim_origin %s lacks %s", i, o ? o : "(none)",
                          origin_has);
        else
            ck_assert_msg(o == NULL, "case %zu: claim_origin %s without a claim file", i, o);
    }
    json_decref(cases);
}

/* The probe's claim file, applied from the command line and from the
 * suite; a tighter claim (a binary64 accumulator) fails. */
START_TEST(probe_claim_run)
{
    char out[512], claim[512], tight[512];
    qf_cli_result r;
    char *text, *p;
    qf_test_write_text(dir, "suite.yaml", suite_text);
    snprintf(claim, sizeof claim, "%s/naive.yaml", dir);
    r = qf_cli_expectf(bin(), "probe", 0, NULL, "gemm.cpu.naive.f32 -o '%s'", claim);
    qf_cli_result_free(&r);

    snprintf(out, sizeof out, "%s/plain", dir);
    r = qf_cli_expectf(bin(), "run", 0, NULL, "'%s/suite.yaml' -q -o '%s'", dir, out);
    qf_cli_result_free(&r);
    expect_all(cases_of(out, 2), "QUALIFIED", NULL);

    snprintf(out, sizeof out, "%s/cli", dir);
    r = qf_cli_expectf(bin(), "run", 0, NULL, "'%s/suite.yaml' -q --claim '%s' -o '%s'", dir, claim, out);
    qf_cli_result_free(&r);
    expect_all(cases_of(out, 2), "QUALIFIED", "naive.yaml");

    /* A suite's claims: resolve beside the suite file. */
    {
        char s2[4096];
        snprintf(s2, sizeof s2, "claims: [naive.yaml]\n%s", suite_text);
        qf_test_write_text(dir, "suite2.yaml", s2);
    }
    snprintf(out, sizeof out, "%s/suite", dir);
    r = qf_cli_expectf(bin(), "run", 0, NULL, "'%s/suite2.yaml' -q -o '%s'", dir, out);
    qf_cli_result_free(&r);
    expect_all(cases_of(out, 2), "QUALIFIED", "naive.yaml");

    /* The same kernel claimed to keep 40 fraction bits (the accumulator
     * format, and so the tuple it matches, unchanged): its float32 sums
     * of 300 terms break that bound. */
    text = qf_test_slurp(claim, NULL);
    p = strstr(text, "acc_frac_bits: 0\n");
    ck_assert_ptr_nonnull(p);
    {
        char *t2 = malloc(strlen(text) + 8);
        ck_assert_ptr_nonnull(t2);
        sprintf(t2, "%.*sacc_frac_bits: 40\n%s", (int)(p - text), text, p + strlen("acc_frac_bits: 0\n"));
        free(text);
        text = t2;
    }
    snprintf(tight, sizeof tight, "%s/tight.yaml", dir);
    qf_test_write_file(tight, "", 0, text);
    free(text);
    snprintf(out, sizeof out, "%s/tight", dir);
    r = qf_cli_expectf(bin(), "run", 1, NULL, "'%s/suite.yaml' -q --claim '%s' -o '%s'", dir, tight, out);
    qf_cli_result_free(&r);
    expect_all(cases_of(out, 2), "FAILED", "tight.yaml");
}
END_TEST

START_TEST(bad_claims)
{
    char args[1024], s2[4096];
    /* A claim file that does not exist, named by a suite. */
    snprintf(s2, sizeof s2, "claims: [missing.yaml]\n%s", suite_text);
    qf_test_write_text(dir, "s-missing.yaml", s2);
    snprintf(args, sizeof args, "'%s/s-missing.yaml' -q -o '%s/o1'", dir, dir);
    qf_cli_expect_reject(bin(), "run", args, "missing.yaml", "a missing claim file");
    /* A malformed one: file, line and key. */
    qf_test_write_text(dir, "bad.yaml",
                       "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith:\n  order: blocked(32)\n");
    snprintf(args, sizeof args, "'%s/suite.yaml' -q --claim '%s/bad.yaml' -o '%s/o2'", dir, dir, dir);
    qf_test_write_text(dir, "suite.yaml", suite_text);
    qf_cli_expect_reject(bin(), "run", args, "bad.yaml:4", "a malformed claim file");
    /* claims: in an included file. */
    qf_test_write_text(dir, "inc.yaml", "claims: [bad.yaml]\n");
    snprintf(s2, sizeof s2, "include: [inc.yaml]\n%s", suite_text);
    qf_test_write_text(dir, "s-inc.yaml", s2);
    snprintf(args, sizeof args, "'%s/s-inc.yaml' -q -o '%s/o3'", dir, dir);
    qf_cli_expect_reject(bin(), "run", args, "claims", "claims: in an included file");
    /* A mapping instead of a list. */
    snprintf(s2, sizeof s2, "claims: {a: b}\n%s", suite_text);
    qf_test_write_text(dir, "s-map.yaml", s2);
    snprintf(args, sizeof args, "'%s/s-map.yaml' -q -o '%s/o4'", dir, dir);
    qf_cli_expect_reject(bin(), "run", args, "claims", "claims: as a mapping");
    /* Nested 100000 deep (over a minute in libyaml before the limit):
     * refused at once, naming the file, line and key, from the command
     * line and from a suite's claims:. */
    {
        static char deep[200100];
        size_t n = (size_t)snprintf(deep, sizeof deep, "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith: ");
        memset(deep + n, '{', 100000);
        deep[n + 100000] = '\0';
        qf_test_write_text(dir, "deep.yaml", deep);
    }
    snprintf(args, sizeof args, "'%s/suite.yaml' -q --claim '%s/deep.yaml' -o '%s/o5'", dir, dir, dir);
    qf_cli_expect_reject(bin(), "run", args, "deep.yaml:3:72: key 'arith': collections nested deeper than 64",
                         "a claim nested 100000 deep");
    snprintf(s2, sizeof s2, "claims: [deep.yaml]\n%s", suite_text);
    qf_test_write_text(dir, "s-deep.yaml", s2);
    snprintf(args, sizeof args, "'%s/s-deep.yaml' -q -o '%s/o6'", dir, dir);
    qf_cli_expect_reject(bin(), "run", args, "deep.yaml:3:72", "a suite's claim nested 100000 deep");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("claim/cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, probe_claim_run);
    tcase_add_test(tc, bad_claims);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
