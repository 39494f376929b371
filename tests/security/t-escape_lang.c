/* t-escape_lang.c: the escaping helpers of qualify/_escape.h, one output
 * language each (docs/reports.md "Escaping"): what each must neutralize,
 * that printable UTF-8 stays, that the one-line form is cut at a whole
 * escape, and that escaping is idempotent.  The bidirectional controls
 * (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C), which reorder
 * what a reader sees, are escaped in every language as the C1 controls
 * are, their neighbours are not, junit.xml's XML escaper does the same,
 * and the JSON writer puts both as \u escapes (the same JSON value). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "_escape.h"
#include "_json.h"
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

static void xml_attr(FILE *f, const char *s)
{
    _qf_esc_xml(f, s, 1);
}

static void xml_body(FILE *f, const char *s)
{
    _qf_esc_xml(f, s, 0);
}

/* Every bidi control in UTF-8, then the same with the code points their
 * escapes name. */
#define BIDI_RAW                                                                                                   \
    "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9"  \
    "\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c"
#define BIDI_ESC                                                                                                   \
    "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c"
/* Their neighbours, which stay: U+2029 (paragraph separator is not a
 * formatting control here), U+202F, U+2065, U+206A, U+200D (joiner),
 * U+2010, U+061B, U+00A0. */
#define NEIGHBOURS "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xe2\x80\x8d\xe2\x80\x90\xd8\x9b\xc2\xa0"

/* No bidi control in UTF-8 in s. */
static int no_bidi(const char *s)
{
    for (; *s; s++)
        if (_qf_esc_unseen(s, NULL))
            return 0;
    return 1;
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

START_TEST(bidi)
{
    static const writer every[] = {_qf_esc_term, _qf_esc_md, md_code_text, md_code_table, _qf_esc_html,
                                   xml_attr,     xml_body,   _qf_esc_c_comment};
    size_t i;
    char buf[512];
    expect(_qf_esc_term, "a" BIDI_RAW "z", "a" BIDI_ESC "z");
    expect(_qf_esc_term, NEIGHBOURS, NEIGHBOURS);
    /* "Trojan source": text that shows in another order than its bytes */
    expect(_qf_esc_md, "ok\xe2\x80\xae)1(tixe\xe2\x81\xa6", "ok\\u202e)1(tixe\\u2066");
    for (i = 0; i < sizeof every / sizeof every[0]; i++) {
        char *s = esc(every[i], "x" BIDI_RAW "\xc2\x85\xc2\x9b" NEIGHBOURS "y");
        ck_assert_msg(no_bidi(s) && no_controls(s), "writer %zu: %s", i, s);
        free(s);
    }
    {
        char *s = esc(_qf_esc_c_string, "x" BIDI_RAW "y");
        ck_assert_msg(no_bidi(s) && !strstr(s, "\xe2"), "%s", s);
        free(s);
    }
    /* the one-line form: idempotent, cut at a whole escape */
    _qf_esc_line(buf, sizeof buf, "r" BIDI_RAW);
    ck_assert_str_eq(buf, "r" BIDI_ESC);
    _qf_esc_line(buf, 7, "ab\xe2\x80\xae");
    ck_assert_str_eq(buf, "ab");
    {
        char again[512];
        _qf_esc_line(again, sizeof again, buf);
        ck_assert_str_eq(again, buf);
    }
}
END_TEST

START_TEST(xml)
{
    expect(xml_attr, "<a b=\"c\" d='e'>&", "&lt;a b=&quot;c&quot; d=&apos;e&apos;&gt;&amp;");
    expect(xml_body, "\"q\" 'a'", "\"q\" 'a'");
    expect(xml_attr, "t\tn\nr\r", "t&#9;n&#10;r&#13;");
    expect(xml_body, "t\tn\nr\r", "t\tn\nr&#13;");
    /* XML 1.0 holds no C0 but tab, newline, return: visible, as C1, DEL,
     * bidi and bytes that are not UTF-8 (the file stays well-formed) */
    expect(xml_body, "e\x1b[1m\x7f\xc2\x9b\xe2\x80\xae\xff\xc3\xa9", "e\\x1b[1m\\x7f\\u009b\\u202e\\xff\xc3\xa9");
}
END_TEST

/* Raw C1 and bidi controls in JSON strings become \u escapes: the same
 * value for a parser, nothing raw for a terminal or a reader. */
START_TEST(json_text)
{
    json_t *o = json_pack("{s:s, s:s}", "name", "k" BIDI_RAW "\xc2\x9b" NEIGHBOURS, "plain", "caf\xc3\xa9");
    json_t *back;
    char *s;
    ck_assert_ptr_nonnull(o);
    s = _qf_json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(no_bidi(s) && no_controls(s), "%s", s);
    ck_assert_msg(strstr(s, "\"k" BIDI_ESC "\\u009b" NEIGHBOURS "\"") && strstr(s, "caf\xc3\xa9"), "%s", s);
    back = json_loads(s, 0, NULL);
    ck_assert_ptr_nonnull(back);
    ck_assert(json_equal(o, back));
    json_decref(back);
    json_decref(o);
    free(s);
}
END_TEST

int main(void)
{
    return qf_test_main("security", "escape_lang", 0, NULL, NULL,
                        QF_TESTS(terminal, markdown, html, c_text, bidi, xml, json_text));
}
