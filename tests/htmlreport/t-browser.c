/* t-browser.c: the report page in a real browser (headless Chromium, as
 * Debian packages it): it loads, no script error or console error is
 * recorded (the page counts them into <body data-errors>), every plot is
 * an SVG element with content and a nonzero size.  A copy of the page with
 * a deliberate script error must be caught, so the check can fail.  A PNG
 * screenshot is left in $QF_BINARY_DIR/htmlreport.png for people to look
 * at.  Skipped (77) without chromium or without PLplot. */
#include "common.h"

static const char *browser;
static char html[256];

static void setup(void)
{
    char args[1024];
    qf_cli_result r;
    inputs_make();
    snprintf(html, sizeof html, "%s/report.html", dir);
    snprintf(args, sizeof args, "%s %s -o %s", results, audit, html);
    r = qf_cli_run(bin, "report", args);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    qf_cli_result_free(&r);
}

static void teardown(void)
{
    inputs_remove();
}

/* The <body ...> tag of the DOM after load, malloc'ed. */
static char *dump_body(const char *file, char **log)
{
    char cmd[2048], out[256], err[256], *dom, *b, *e, *body;
    int st;
    snprintf(out, sizeof out, "%s/dom.html", dir);
    snprintf(err, sizeof err, "%s/chromium.log", dir);
    snprintf(cmd, sizeof cmd,
             "HOME='%s' timeout 120 '%s' --headless --disable-gpu --no-sandbox --user-data-dir='%s/chrome' "
             "--enable-logging=stderr --v=0 --dump-dom 'file://%s' >'%s' 2>'%s'",
             dir, browser, dir, file, out, err);
    st = system(cmd);
    ck_assert_msg(st == 0, "chromium failed (%d): see %s", st, err);
    dom = qf_cli_slurp(out);
    *log = qf_cli_slurp(err);
    b = strstr(dom, "<body");
    ck_assert_msg(b != NULL, "no <body> in the DOM");
    e = strchr(b, '>');
    ck_assert_ptr_nonnull(e);
    body = strndup(b, (size_t)(e - b + 1));
    free(dom);
    return body;
}

START_TEST(test_loads_with_plots)
{
    char *log, *body = dump_body(html, &log), *page = qf_cli_slurp(html), want[64];
    size_t figures = 0;
    const char *s;
    for (s = strstr(page, "<figure>"); s; s = strstr(s + 1, "<figure>"))
        figures++;
    ck_assert_uint_eq(figures, 8);
    ck_assert_msg(strstr(body, "data-loaded=\"ok\""), "not loaded: %s", body);
    ck_assert_msg(strstr(body, "data-errors=\"0\""), "script errors: %s\n%s", body, log);
    snprintf(want, sizeof want, "data-svg-count=\"%zu\"", figures);
    ck_assert_msg(strstr(body, want), "%s: %s", want, body);
    snprintf(want, sizeof want, "data-svg-visible=\"%zu\"", figures);
    ck_assert_msg(strstr(body, want), "%s: %s", want, body);
    ck_assert_msg(!strstr(log, "Uncaught"), "%s", log);
    free(body), free(log), free(page);
}
END_TEST

START_TEST(test_error_is_caught)
{
    char bad[256], *page = qf_cli_slurp(html), *at, *log, *body;
    FILE *f;
    snprintf(bad, sizeof bad, "%s/broken.html", dir);
    at = strstr(page, "</body>");
    ck_assert_ptr_nonnull(at);
    f = fopen(bad, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(page, 1, (size_t)(at - page), f);
    fputs("<script>qf_no_such_function();</script>", f);
    fputs(at, f);
    fclose(f);
    body = dump_body(bad, &log);
    ck_assert_msg(strstr(body, "data-errors=\"1\""), "the error went unseen: %s", body);
    free(body), free(log), free(page);
}
END_TEST

START_TEST(test_screenshot)
{
    char cmd[2048], png[512];
    const char *bdir = getenv("QF_BINARY_DIR");
    FILE *f;
    snprintf(png, sizeof png, "%s/htmlreport.png", bdir && *bdir ? bdir : dir);
    snprintf(cmd, sizeof cmd,
             "HOME='%s' timeout 120 '%s' --headless --disable-gpu --no-sandbox --user-data-dir='%s/chrome' "
             "--window-size=1400,3000 --screenshot='%s' 'file://%s' >/dev/null 2>&1",
             dir, browser, dir, png, html);
    ck_assert_int_eq(system(cmd), 0);
    f = fopen(png, "rb");
    ck_assert_ptr_nonnull(f);
    {
        unsigned char sig[8];
        ck_assert_uint_eq(fread(sig, 1, 8, f), 8);
        ck_assert(sig[1] == 'P' && sig[2] == 'N' && sig[3] == 'G');
    }
    fclose(f);
}
END_TEST

int main(void)
{
    static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
    static char found[512];
    Suite *s = suite_create("htmlreport/browser");
    TCase *tc = tcase_create("browser");
    size_t i;
    require_report();
    for (i = 0; i < 3 && !browser; i++) {
        char cmd[128];
        FILE *p;
        snprintf(cmd, sizeof cmd, "command -v %s 2>/dev/null", names[i]);
        p = popen(cmd, "r");
        if (p && fgets(found, sizeof found, p) && found[0] == '/') {
            found[strcspn(found, "\n")] = '\0';
            browser = found;
        }
        if (p)
            pclose(p);
    }
    if (!browser) {
        fprintf(stderr, "no chromium (apt-get install chromium; scripts/install-deps does): skipped\n");
        return QF_TEST_SKIP;
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_loads_with_plots);
    tcase_add_test(tc, test_error_is_caught);
    tcase_add_test(tc, test_screenshot);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
