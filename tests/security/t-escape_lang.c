/* t-escape_lang.c: the escaping helpers of qualify/_escape.h, one output
 * language each (docs/reports.md "Escaping"): what each must neutralize,
 * that printable UTF-8 stays, that the one-line form is cut at a whole
 * escape, and that escaping is idempotent. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "qf_test.h"

typedef void (*writer)(FILE *, const char *);

/* w(s) into a malloc'd string. */
static char *esc(writer w, const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_ptr_nonnull(f);
    w(f, s);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static void md_code_table(FILE *f, const char *s)
{
    _qf_esc_md_code(f, s, 1);
}

static void md_code_text(FILE *f, const char *s)
{
    _qf_esc_md_code(f, s, 0);
}

/* No byte below 0x20, no DEL and no UTF-8 C1 (U+0080..U+009F) in s. */
static int no_controls(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
            return 0;
    return 1;
}

static void expect(writer w, const char *in, const char *want)
{
    char *got = esc(w, in);
    ck_assert_msg(!strcmp(got, want), "'%s' -> '%s', expected '%s'", in, got, want);
    free(got);
}

START_TEST(terminal)
{
    char buf[64];
    expect(_qf_esc_term, "a\x1b[2Jb\rc\nd\te\x7f\x07", "a\\x1b[2Jb\\rc\\nd\\te\\x7f\\x07");
    /* C1 CSI as UTF-8, and as a raw byte (not UTF-8) */
    expect(_qf_esc_term, "x\xc2\x9b" "31m y\x9b" "z", "x\\u009b31m y\\x9bz");
    /* printable UTF-8 stays; overlong and surrogate forms do not (RFC 3629) */
    expect(_qf_esc_term, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    expect(_qf_esc_term, "\xc0\xaf\xed\xa0\x80", "\\xc0\\xaf\\xed\\xa0\\x80");
    /* a truncated sequence at the end */
    expect(_qf_esc_term, "a\xe2\x82", "a\\xe2\\x82");
    /* the one-line form: cut before an escape that does not fit whole */
    _qf_esc_line(buf, 8, "abcd\x1b[0m");
    ck_assert_str_eq(buf, "abcd");
    _qf_esc_line(buf, 9, "abcd\x1b[0m");
    ck_assert_str_eq(buf, "abcd\\x1b");
    _qf_esc_line(buf, 3, "a\xc3\xa9");
    ck_assert_str_eq(buf, "a");
    /* idempotent: the escaped text escapes to itself */
    _qf_esc_line(buf, sizeof buf, "r\r\n\x1b");
    {
        char again[64];
        _qf_esc_line(again, sizeof again, buf);
        ck_assert_str_eq(again, buf);
        ck_assert(no_controls(buf));
    }
}
END_TEST

START_TEST(markdown)
{
    expect(_qf_esc_md, "a|b", "a\\|b");
    expect(_qf_esc_md, "<script>&", "&lt;script&gt;&amp;");
    expect(_qf_esc_md, "x\ny\r", "x\\ny\\r");
    expect(_qf_esc_md, "*em* `c` ~s~ #h \\", "\\*em\\* \\`c\\` \\~s\\~ \\#h \\\\");
    /* a link or image needs "](": its '(' is escaped; brackets alone stay */
    expect(_qf_esc_md, "[x](javascript:1) [16, 64]", "[x]\\(javascript:1) [16, 64]");
    /* '_' only at the ends of the text (inside a word it is not emphasis) */
    expect(_qf_esc_md, "_gemm_fp8_", "\\_gemm_fp8\\_");
    expect(_qf_esc_md, "c1\xc2\x9bz", "c1\\u009bz");
    /* not UTF-8: a visible byte (the file stays UTF-8); UTF-8 text stays */
    expect(_qf_esc_md, "a\x9b" "b \xc3\xa9", "a\\x9bb \xc3\xa9");
    expect(_qf_esc_html, "a\xff", "a\\xff");
    /* code spans: a longer fence than any backtick run, '|' in a table */
    expect(md_code_text, "a`b", "`` a`b ``");
    expect(md_code_text, "p|q", "`p|q`");
    expect(md_code_table, "p|q\n", "`p\\|q\\n`");
}
END_TEST

START_TEST(html)
{
    expect(_qf_esc_html, "<a href=\"x\" onclick='y'>&</a>",
           "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    expect(_qf_esc_html, "t\tn\n\x1b\xc2\x85", "t\tn\n\\x1b\\u0085");
}
END_TEST

START_TEST(c_text)
{
    char *s;
    expect(_qf_esc_c_string, "a\"b\\c", "\"a\\\"b\\\\c\"");
    /* no trigraph (??/ is a backslash in C11 translation phase 1) */
    expect(_qf_esc_c_string, "?\?/", "\"\\?\\?/\"");
    /* no comment delimiter, either way round */
    expect(_qf_esc_c_string, "*/x/*", "\"\\052/x/\\052\"");
    /* octal escapes always three digits: a digit after one stays a digit */
    expect(_qf_esc_c_string, "\n1\xc3\xa9", "\"\\0121\\303\\251\"");
    s = esc(_qf_esc_c_comment, "end */ start /* ?\?/ \xc3\xa9\n");
    ck_assert_msg(!strstr(s, "*/") && !strstr(s, "/*") && !strstr(s, "?\?") && no_controls(s), "%s", s);
    ck_assert_str_eq(s, "end * / start / * \\?\\?/ \\xc3\\xa9\\n");
    free(s);
}
END_TEST

int main(void)
{
    return qf_test_main("security", "escape_lang", 0, NULL, NULL, QF_TESTS(terminal, markdown, html, c_text));
}
