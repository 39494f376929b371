/* t-render.c: 'qualify report' writes one self-contained HTML page with an
 * inline SVG per plot (error against K for each kernel, op and dtype, verdict
 * maps, audit comparisons), nothing fetched from the network, unique SVG
 * ids; corrupt, truncated and foreign inputs are rejected with exit 2 and
 * a message naming the file. */
#include "common.h"

static void setup(void)
{
    inputs_make();
}

static void teardown(void)
{
    inputs_remove();
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (s = strstr(s, what); s; s = strstr(s + 1, what))
        n++;
    return n;
}

START_TEST(test_page)
{
    char args[1024], out[256];
    qf_cli_result r;
    char *html;
    snprintf(out, sizeof out, "%s/report.html", dir);
    snprintf(args, sizeof args, "%s %s -o %s --title 'K <sweep>'", results, audit, out);
    r = qf_cli_run(bin, "report", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    html = qf_cli_slurp(out);
    /* 3 kernels x (error/K + verdict map) + audit: pooled + 1 tensor */
    ck_assert_uint_eq(count(html, "<figure>"), 8);
    ck_assert_uint_eq(count(html, "<svg"), 8);
    ck_assert_ptr_nonnull(
        strstr(html, "gemm.model.h100_promote128.e4m3, gemm, e4m3.e4m3.f32.f32: the largest"));
    ck_assert_ptr_nonnull(strstr(html, "verdict per (K, M)"));
    ck_assert_ptr_nonnull(strstr(html, "<title>K &lt;sweep&gt;</title>"));
    /* self-contained: no external resource of any kind */
    ck_assert_ptr_null(strstr(html, "src=\""));
    ck_assert_ptr_null(strstr(html, "<link"));
    ck_assert_ptr_null(strstr(html, "href=\"http"));
    ck_assert_ptr_null(strstr(html, "url(http"));
    /* clip-path ids are made unique per plot */
    ck_assert_ptr_nonnull(strstr(html, "id=\"p1-text-clipping1\""));
    ck_assert_ptr_nonnull(strstr(html, "id=\"p2-text-clipping1\""));
    ck_assert_ptr_null(strstr(html, "id=\"text-clipping"));
    free(html);
}
END_TEST

START_TEST(test_journal_input)
{
    char args[1024], out[256];
    qf_cli_result r;
    char *html;
    snprintf(out, sizeof out, "%s/j.html", dir);
    snprintf(args, sizeof args, "%s/sweep/journal.jsonl -o %s", dir, out);
    r = qf_cli_run(bin, "report", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
    html = qf_cli_slurp(out);
    ck_assert_uint_eq(count(html, "<svg"), 6);
    ck_assert_ptr_nonnull(strstr(html, "No audit input"));
    free(html);
}
END_TEST

static void expect_reject(const char *input, const char *what)
{
    char args[1024];
    snprintf(args, sizeof args, "%s -o %s/bad.html", input, dir);
    qf_cli_expect_reject(bin, "report", args, input, what);
}

START_TEST(test_bad_inputs)
{
    char p[256];
    qf_cli_result r;
    snprintf(p, sizeof p, "%s/trunc.json", dir);
    qf_test_copy_prefix(results, p, 700, NULL);
    expect_reject(p, "truncated results.json");
    snprintf(p, sizeof p, "%s/trunc-audit.json", dir);
    qf_test_copy_prefix(audit, p, 300, NULL);
    expect_reject(p, "truncated audit.json");
    snprintf(p, sizeof p, "%s/noaudit.json", dir);
    qf_test_copy_prefix(audit, p, 0, "{\"format\": \"qualify-audit\", \"tensors\": 3, \"summary\": []}");
    expect_reject(p, "audit.json with tensors not an array");
    snprintf(p, sizeof p, "%s/other.json", dir);
    qf_test_copy_prefix(audit, p, 0, "[1, 2, 3]");
    expect_reject(p, "a JSON array");
    snprintf(p, sizeof p, "%s/none.json", dir);
    expect_reject(p, "a missing file");
    r = qf_cli_run(bin, "report", results);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "-o"));
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    require_report();
    return qf_test_main("htmlreport/render", "render", 300, setup, teardown,
                        QF_TESTS(test_page, test_journal_input, test_bad_inputs));
}
