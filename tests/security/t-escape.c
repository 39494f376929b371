/* t-escape.c: hostile text from a kernel, a suite path, a tensor file or a
 * results file stays text in every output (issue 17: D9, D10, D11, D13,
 * generated C; docs/reports.md "Escaping", docs/audit.md "No usable
 * value").  Everything goes through the CLI (QF_QUALIFY_BIN), so pointing
 * that at an older qualify shows which of these it gets wrong. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qf_cli_test.h"
#include "qf_report.h"
#include "qf_test_seal.h"
#include "qf_result.h"

static char dir[256];
static const char *bin;

static void setup(void)
{
    bin = getenv("QF_QUALIFY_BIN");
    ck_assert_msg(bin != NULL, "QF_QUALIFY_BIN comes from CTest");
    qf_test_mkdtemp(dir, sizeof dir, "qf-t-escape");
}

static void teardown(void)
{
    qf_test_rmtree(dir);
}

/* The first byte of s[0..n) a terminal would act on, or -1: C0 controls
 * but for none (not even LF when one_line; tab when allow_lf, as XML and
 * JSON indentation have it), DEL, C1 in UTF-8, and the bidi controls
 * that reorder what a reader sees (U+202A..U+202E, U+2066..U+2069,
 * U+200E, U+200F, U+061C). */
static long control_at(const char *s, size_t n, int allow_lf)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i], d = i + 1 < n ? (unsigned char)s[i + 1] : 0,
                      e = i + 2 < n ? (unsigned char)s[i + 2] : 0;
        if ((c < 0x20 && !(allow_lf && (c == '\n' || c == '\t'))) || c == 0x7f)
            return (long)i;
        if ((c == 0xc2 && d >= 0x80 && d < 0xa0) || (c == 0xd8 && d == 0x9c))
            return (long)i;
        if (c == 0xe2 && ((d == 0x80 && (e == 0x8e || e == 0x8f || (e >= 0xaa && e <= 0xae))) ||
                          (d == 0x81 && e >= 0xa6 && e <= 0xa9)))
            return (long)i;
    }
    return -1;
}

static const char *gemm_suite = "suite: escape\n"
                                "refute: false\n" /* the counts are of these inputs alone (docs/refute.md) */
                                "op: gemm\n"
                                "kernels: [%s]\n"
                                "dtypes: [float32]\n"
                                "shapes: {M: [4], N: [4], K: [4]}\n";

/* D9: a kernel's message with ESC, BEL, CR, LF, DEL, C1 CSI and the bidi
 * controls RLO and LRI: visible escapes on the terminal, in results.json,
 * the journal, report.md and junit.xml (issue 26). */
START_TEST(kernel_message)
{
    const char *plugin = getenv("QF_HOSTILE_MSG_PLUGIN");
    char suite[512], text[512], out[512], *s;
    size_t n;
    json_t *root, *c;
    json_error_t je;
    const char *reason;
    qf_cli_result r;
    ck_assert_msg(plugin != NULL, "QF_HOSTILE_MSG_PLUGIN comes from CTest");
    snprintf(suite, sizeof suite, "%s/s.yaml", dir);
    snprintf(text, sizeof text, gemm_suite, "gemm.hostile.msg");
    qf_test_write_text(dir, "s.yaml", text);
    snprintf(out, sizeof out, "%s/out", dir);
    /* Not quiet: the per-case lines with the reason are what a CI log shows. */
    r = qf_cli_expectf(bin, "run", 1, NULL, "'%s' --plugin '%s' -o '%s'", suite, plugin, out);
    ck_assert_msg(strstr(r.out, "gemm.hostile.msg"), "%s", r.out);
    ck_assert_msg(control_at(r.out, strlen(r.out), 1) < 0, "raw control byte on stdout: %s", r.out);
    ck_assert_msg(control_at(r.err, strlen(r.err), 1) < 0, "raw control byte on stderr: %s", r.err);
    ck_assert_msg(strstr(r.out, "\\x1b[2J"), "the message is shown escaped: %s", r.out);
    qf_cli_result_free(&r);

    root = json_load_file(qf_test_path(out, "results.json"), 0, &je);
    ck_assert_msg(root != NULL, "%s", je.text);
    c = json_array_get(json_object_get(root, "cases"), 0);
    reason = json_string_value(json_object_get(c, "reason"));
    ck_assert_ptr_nonnull(reason);
    ck_assert_msg(control_at(reason, strlen(reason), 0) < 0, "results.json reason is not one line: %s", reason);
    ck_assert_msg(strstr(reason, "\\x1b]0;owned\\x07 cr\\rlf\\nde\\x7fl c1\\u009b31m end rlo\\u202e1 lri\\u20662"), "%s",
                  reason);
    json_decref(root);

    s = qf_test_slurp(qf_test_path(out, "report.md"), &n);
    ck_assert_msg(control_at(s, n, 1) < 0, "raw control byte in report.md");
    free(s);
    s = qf_test_slurp(qf_test_path(out, "journal.jsonl"), &n);
    ck_assert_msg(control_at(s, n, 1) < 0, "raw control byte in the journal");
    free(s);
    s = qf_test_slurp(qf_test_path(out, "results.json"), &n);
    ck_assert_msg(control_at(s, n, 1) < 0, "raw control byte in results.json");
    free(s);
    s = qf_test_slurp(qf_test_path(out, "junit.xml"), &n);
    ck_assert_msg(control_at(s, n, 1) < 0, "raw control byte in junit.xml");
    ck_assert_msg(strstr(s, "rlo\\u202e1 lri\\u20662"), "junit.xml lacks the escaped reason");
    free(s);

    r = qf_cli_expectf(bin, "show", 1, NULL, "'%s/results.json' --failed", out);
    ck_assert_msg(strstr(r.out, "gemm.hostile.msg"), "%s", r.out);
    ck_assert_msg(control_at(r.out, strlen(r.out), 1) < 0, "raw control byte from show: %s", r.out);
    qf_cli_result_free(&r);
}
END_TEST

/* Cells of a GFM table row: the '|' not escaped by a backslash, less one
 * (a row "| a | b |" has 3 pipes and 2 cells). */
static int cells(const char *line, size_t n)
{
    size_t i;
    int pipes = 0;
    for (i = 0; i < n; i++) {
        if (line[i] == '\\') {
            i++;
            continue;
        }
        pipes += line[i] == '|';
    }
    return pipes - 1;
}

/* D11: a '|' in the suite path must not split report.md's provenance row. */
START_TEST(suite_path_pipe)
{
    char sub[512], suite[600], text[512], out[512], *md, *row, *eol;
    qf_cli_result r;
    snprintf(sub, sizeof sub, "%s/a|b", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(suite, sizeof suite, "%s/s|uite.yaml", sub);
    snprintf(text, sizeof text, gemm_suite, "gemm.cpu.naive.f32");
    qf_test_write_text(sub, "s|uite.yaml", text);
    snprintf(out, sizeof out, "%s/out", dir);
    r = qf_cli_expectf(bin, "run", 0, NULL, "'%s' -q -o '%s'", suite, out);
    qf_cli_result_free(&r);
    md = qf_test_slurp(qf_test_path(out, "report.md"), NULL);
    row = strstr(md, "| suite file |");
    ck_assert_msg(row != NULL, "%s", md);
    eol = strchr(row, '\n');
    ck_assert_ptr_nonnull(eol);
    ck_assert_msg(cells(row, (size_t)(eol - row)) == 2, "the provenance row has %d cells: %.*s",
                  cells(row, (size_t)(eol - row)), (int)(eol - row), row);
    free(md);
}
END_TEST

/* A safetensors file of float32 [2, 2] tensors named names[0..n). */
static void write_safetensors(const char *path, const char *const *names, size_t n, float fill)
{
    json_t *h = json_object();
    char *hdr;
    size_t len, i, j;
    uint64_t len64;
    FILE *f;
    for (i = 0; i < n; i++)
        json_object_set_new(h, names[i],
                            json_pack("{s:s, s:[i,i], s:[I,I]}", "dtype", "F32", "shape", 2, 2, "data_offsets",
                                      (json_int_t)(16 * i), (json_int_t)(16 * i + 16)));
    hdr = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    len = strlen(hdr);
    len64 = len;
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (j = 0; j < 8; j++) /* little-endian u64 header size */
        fputc((int)((len64 >> (8 * j)) & 0xff), f);
    fwrite(hdr, 1, len, f);
    for (i = 0; i < 4 * n; i++) {
        float v = fill * (float)(i + 1) / 3.0f;
        fwrite(&v, sizeof v, 1, f);
    }
    ck_assert_int_eq(fclose(f), 0);
    free(hdr);
}

/* D10: tensor names with HTML, a cell separator and a newline. */
START_TEST(audit_names)
{
    static const char *const names[] = {"<script>alert(1)</script>", "a|b", "x\ny"};
    char path[512], out[512], *md, *p;
    qf_cli_result r;
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    write_safetensors(path, names, 3, 1.0f);
    snprintf(out, sizeof out, "%s/aud", dir);
    r = qf_cli_expectf(bin, "audit", 0, NULL, "'%s' --formats bf16,e4m3:per_tensor -o '%s'", path, out);
    qf_cli_result_free(&r);
    md = qf_test_slurp(qf_test_path(out, "audit.md"), NULL);
    ck_assert_msg(!strstr(md, "<script>") && strstr(md, "&lt;script&gt;"), "%s", md);
    ck_assert_msg(!strstr(md, "a|b") && strstr(md, "a\\|b"), "%s", md);
    ck_assert_msg(!strstr(md, "x\ny") && strstr(md, "x\\ny"), "%s", md);
    /* every heading is one line that names one tensor: "## x\ny" stays whole */
    for (p = strstr(md, "\n## "); p; p = strstr(p + 1, "\n## ")) {
        char *eol = strchr(p + 1, '\n');
        ck_assert_ptr_nonnull(eol);
        ck_assert_msg(eol[1] == '\n', "a heading runs on: %.*s", 80, p + 1);
    }
    /* every table row has the cells of its header (summary: 5, per tensor: 11) */
    for (p = md; (p = strstr(p, "\n|")) != NULL; p++) {
        char *eol = strchr(p + 1, '\n');
        int k;
        ck_assert_ptr_nonnull(eol);
        k = cells(p + 1, (size_t)(eol - p - 1));
        ck_assert_msg(k == 5 || k == 11 || k == 10 /* the overflow note row */, "a row of %d cells: %.*s", k,
                      (int)(eol - p - 1), p + 1);
    }
    free(md);
}
END_TEST

/* A .npy of float32 values (NumPy format 1.0: magic, header padded to 64). */
static void write_npy(const char *path, const float *x, size_t rows, size_t cols)
{
    char hdr[128];
    size_t hl;
    FILE *f;
    snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }", rows, cols);
    hl = strlen(hdr);
    while ((10 + hl + 1) % 64)
        hdr[hl++] = ' ';
    hdr[hl++] = '\n';
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(hl & 0xff), f);
    fputc((int)(hl >> 8), f);
    fwrite(hdr, 1, hl, f);
    fwrite(x, sizeof *x, rows * cols, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* D13: an all-NaN tensor has no SQNR and no rank, and says so. */
START_TEST(audit_all_nan)
{
    float *x = malloc(4096 * sizeof *x), good[64];
    char nanp[512], goodp[512], out[512], *md;
    size_t i;
    json_t *doc, *t, *sum;
    json_error_t je;
    qf_cli_result r;
    ck_assert_ptr_nonnull(x);
    for (i = 0; i < 4096; i++)
        x[i] = NAN;
    for (i = 0; i < 64; i++)
        good[i] = (float)i / 7.0f - 3.0f;
    snprintf(nanp, sizeof nanp, "%s/allnan.npy", dir);
    snprintf(goodp, sizeof goodp, "%s/good.npy", dir);
    write_npy(nanp, x, 64, 64);
    write_npy(goodp, good, 8, 8);
    free(x);
    snprintf(out, sizeof out, "%s/nan", dir);
    /* exit 1: a finding (docs/audit.md), the reports still written */
    r = qf_cli_expectf(bin, "audit", 1, "no usable value", "'%s' '%s' --formats bf16,e4m3:per_tensor -o '%s'", nanp,
                       goodp, out);
    qf_cli_result_free(&r);
    doc = json_load_file(qf_test_path(out, "audit.json"), 0, &je);
    ck_assert_msg(doc != NULL, "%s", je.text);
    t = json_array_get(json_object_get(doc, "tensors"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(t, "name")), "allnan");
    ck_assert_msg(json_is_false(json_object_get(t, "usable")), "usable: false");
    ck_assert_str_eq(json_string_value(json_object_get(t, "note")), "no usable value: 4096 of 4096 elements are NaN");
    ck_assert_uint_eq(json_array_size(json_object_get(t, "results")), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(t, "ranking")), 0);
    /* the summary is over the one usable tensor: it ranked first for one scheme */
    sum = json_object_get(doc, "summary");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "tensors")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "wins")) +
                         json_integer_value(json_object_get(json_array_get(sum, 1), "wins")),
                     1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(sum, 0), "min_tensor")), "good");
    json_decref(doc);
    md = qf_test_slurp(qf_test_path(out, "audit.md"), NULL);
    ck_assert_msg(strstr(md, "no usable value: 4096 of 4096 elements are NaN"), "%s", md);
    free(md);
}
END_TEST

/* Generated C and the guard: a results file whose kernel name and reason
 * carry a comment end, a quote, a trigraph, ESC and a newline; the table
 * still compiles, no comment delimiter of theirs is in it, and `qualify
 * guard` shows the name without obeying it. */
START_TEST(guard_c_hostile_name)
{
    static const char *kname = "k*/ \"q\" ?\?/ /*x\x1b[2J";
    qf_result res[2];
    char path[512], out[512], cmd[2048], err[256], *c;
    const char *src = getenv("QF_SOURCE_DIR");
    int i;
    qf_cli_result r;
    for (i = 0; i < 2; i++) {
        qf_result_init(&res[i]);
        snprintf(res[i].arch, sizeof res[i].arch, "cpu");
        snprintf(res[i].kernel, sizeof res[i].kernel, "%s", kname);
        snprintf(res[i].kernel_kind, sizeof res[i].kernel_kind, "optimized");
        snprintf(res[i].op, sizeof res[i].op, "gemm");
        snprintf(res[i].dtype, sizeof res[i].dtype, "f32.f32.f32.f32");
        snprintf(res[i].case_id, sizeof res[i].case_id, "gemm/M=%d", 16 << i);
        snprintf(res[i].reason, sizeof res[i].reason, "%s", i ? "bad */ line\nnext ?\?/" : "");
        res[i].ndims = 1;
        snprintf(res[i].dims[0].name, sizeof res[i].dims[0].name, "M");
        res[i].dims[0].value = 16u << i;
        res[i].verdict = i ? QF_VERDICT_FAILED : QF_VERDICT_QUALIFIED;
        qf_test_seal(&res[i]);
    }
    snprintf(path, sizeof path, "%s/results.json", dir);
    ck_assert_int_eq(qf_report_write_json(path, res, 2, NULL, err, sizeof err), QF_OK);
    snprintf(out, sizeof out, "%s/en", dir);
    r = qf_cli_expectf(bin, "enable", 0, NULL, "'%s' -o '%s' --name tbl", path, out);
    qf_cli_result_free(&r);
    /* the guard's answer and its decision log (QF_GUARD_LOG) show the
     * kernel name without its ESC */
    setenv("QF_GUARD_LOG", "1", 1);
    r = qf_cli_expectf(bin, "guard", 0, NULL, "'%s/enable.json' --kernel '%s' --dtype f32.f32.f32.f32 --shape M=16",
                       out, kname);
    unsetenv("QF_GUARD_LOG");
    ck_assert_msg(strstr(r.out, "allowed k*/") && strstr(r.err, "kernel=k*/"), "%s%s", r.out, r.err);
    ck_assert_msg(control_at(r.out, strlen(r.out), 1) < 0, "raw control byte from guard: %s", r.out);
    ck_assert_msg(control_at(r.err, strlen(r.err), 1) < 0, "raw control byte in the guard's log: %s", r.err);
    qf_cli_result_free(&r);
    c = qf_test_slurp(qf_test_path(out, "tbl.c"), NULL);
    ck_assert_msg(!strstr(c, "k*/") && !strstr(c, "/*x") && !strstr(c, "bad */"), "%s", c);
    ck_assert_msg(!strstr(c, "?\?/"), "a trigraph: %s", c);
    free(c);
    if (!src || system("cc --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "guard_c_hostile_name: no cc or QF_SOURCE_DIR; the compile step is not run\n");
        return;
    }
    /* -std=c11 reads trigraphs: a "?\?/" would be a backslash there */
    snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Werror -fsyntax-only -I'%s' -I'%s/qualify' '%s/tbl.c'", out, src,
             out);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
}
END_TEST

/* A claim file's and a suite's text quoted in an error message: escaped on
 * the terminal like a kernel's (issue 26: they were printed raw). */
START_TEST(claim_and_suite_text)
{
    static const struct {
        const char *file, *text, *shown;
    } bad[] = {
        /* a glob that matches nothing: the message quotes it */
        {"c1.yaml", "claim_version: 1\nkernel: \"gemm.\\e]0;t\\a\\u202Ex\"\n", "kernel 'gemm.\\x1b]0;t\\x07\\u202ex'"},
        /* a bad value, with a C1 CSI and an isolate */
        {"c2.yaml", "claim_version: 1\nkernel: gemm.cpu.naive.f32\narith: {order: \"any\\u009B31m\\u2067\"}\n",
         "bad value 'any\\u009b31m\\u2067'"},
    };
    size_t i;
    qf_cli_result r;
    qf_test_write_text(dir, "s.yaml", "suite: s\nop: gemm\nkernels: [gemm.cpu.naive.f32]\ndtypes: [float32]\n"
                                      "shapes: {M: [2], N: [2], K: [2]}\n");
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qf_test_write_text(dir, bad[i].file, bad[i].text);
        r = qf_cli_expectf(bin, "run", 2, bad[i].shown, "'%s/s.yaml' -q -o '%s/o' --claim '%s/%s'", dir, dir, dir,
                           bad[i].file);
        ck_assert_msg(control_at(r.err, strlen(r.err), 1) < 0, "raw control byte on stderr: %s", r.err);
        qf_cli_result_free(&r);
    }
    /* a suite's unknown key: ESC and an override */
    qf_test_write_text(dir, "bad.yaml", "suite: s\nop: gemm\n\"x\\e[2J\\u202Ey\": 1\n");
    r = qf_cli_expectf(bin, "run", 2, "unknown key 'x\\x1b[2J\\u202ey'", "'%s/bad.yaml' -q -o '%s/o'", dir, dir);
    ck_assert_msg(control_at(r.err, strlen(r.err), 1) < 0, "raw control byte on stderr: %s", r.err);
    qf_cli_result_free(&r);
}
END_TEST

int main(void)
{
    return qf_test_main("security", "escape", 300, setup, teardown,
                        QF_TESTS(kernel_message, suite_path_pipe, audit_names, audit_all_nan, guard_c_hostile_name,
                                 claim_and_suite_text));
}
