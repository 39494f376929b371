/* escape.c: one escaping helper per output language (_escape.h,
 * docs/reports.md "Escaping"). */
#include <stdio.h>
#include <string.h>

#include "_escape.h"

/* Length of the valid UTF-8 sequence at s (RFC 3629 section 4: no
 * overlong form, no surrogate, nothing above U+10FFFF), 0 when s does not
 * start one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n, i;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* Is the UTF-8 character at s[0..n) a bidirectional formatting character
 * (Unicode UAX #9, 2.1-2.6: the embeddings and overrides U+202A..U+202E,
 * the isolates U+2066..U+2069, the marks U+200E, U+200F and U+061C)?
 * Shown raw they reorder the text around them, so that what a reader sees
 * is not what the bytes say (CVE-2021-42574, "Trojan Source"). */
static int bidi_control(const unsigned char *s, size_t n)
{
    if (n == 2)
        return s[0] == 0xd8 && s[1] == 0x9c;
    if (n != 3 || s[0] != 0xe2)
        return 0;
    return (s[1] == 0x80 && (s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xaa && s[2] <= 0xae))) ||
           (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9);
}

/* The code point of the 2- or 3-byte UTF-8 character at s. */
static unsigned code_point(const unsigned char *s, size_t n)
{
    return n == 2 ? ((s[0] & 0x1fu) << 6) | (s[1] & 0x3fu)
                  : ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
}

size_t _qf_esc_unseen(const char *s, unsigned *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = p[0] >= 0x80 ? utf8_len(p) : 0;
    if (!n || !((p[0] == 0xc2 && p[1] < 0xa0) || bidi_control(p, n)))
        return 0;
    if (cp)
        *cp = code_point(p, n);
    return n;
}

/* The next unit of s (one byte, or one UTF-8 character) in the terminal's
 * form into out[16]; returns its length, *used the bytes of s it took. */
static size_t term_unit(const unsigned char *s, char *out, size_t *used)
{
    unsigned char c = s[0];
    size_t n;
    *used = 1;
    switch (c) {
    case '\n': return (size_t)snprintf(out, 16, "\\n");
    case '\r': return (size_t)snprintf(out, 16, "\\r");
    case '\t': return (size_t)snprintf(out, 16, "\\t");
    default: break;
    }
    if (c < 0x20 || c == 0x7f)
        return (size_t)snprintf(out, 16, "\\x%02x", c);
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    n = utf8_len(s);
    if (!n)
        return (size_t)snprintf(out, 16, "\\x%02x", c);
    /* U+0080..U+009F, the C1 controls (ECMA-48 5.3: CSI is U+009B), and
     * the bidirectional controls. */
    if ((c == 0xc2 && s[1] < 0xa0) || bidi_control(s, n)) {
        *used = n;
        return (size_t)snprintf(out, 16, "\\u%04x", code_point(s, n));
    }
    memcpy(out, s, n);
    *used = n;
    return n;
}

void _qf_esc_term(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char u[16];
    size_t used, n;
    while (*p) {
        n = term_unit(p, u, &used);
        fwrite(u, 1, n, out);
        p += used;
    }
}

char *_qf_esc_line(char *dst, size_t size, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char u[16];
    size_t used, n, len = 0;
    if (!dst || !size)
        return dst;
    while (*p) {
        n = term_unit(p, u, &used);
        if (len + n >= size)
            break;
        memcpy(dst + len, u, n);
        len += n;
        p += used;
    }
    dst[len] = '\0';
    return dst;
}

/* Control characters and non-ASCII in text that is not for a terminal:
 * the terminal's form (a newline would end a Markdown row or heading; a C1
 * control in UTF-8, or a byte that is not UTF-8 (0x9b is CSI to a terminal
 * that reads bytes), is as much a terminal's command as ESC when the file
 * is shown), and a valid UTF-8 character whole.  Returns the bytes of p
 * taken, 0 when p is printable ASCII (the caller's to escape). */
static size_t put_control(FILE *out, const unsigned char *p)
{
    char u[16];
    size_t used;
    if (*p >= 0x20 && *p < 0x7f)
        return 0;
    fwrite(u, 1, term_unit(p, u, &used), out);
    return used;
}

void _qf_esc_md(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t k;
    for (; *p; p++) {
        if ((k = put_control(out, p)) != 0) {
            p += k - 1;
            continue;
        }
        switch (*p) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        /* CommonMark 2.4: any ASCII punctuation may be backslash-escaped. */
        case '|':
        case '\\':
        case '`':
        case '*':
        case '~':
        case '#':
            fputc('\\', out);
            fputc(*p, out);
            break;
        case '(':
            /* "](" would make a link or an image of the text before it
             * (CommonMark 6.3); brackets alone stay, "[1, 64]" reads as is. */
            if (p > (const unsigned char *)s && p[-1] == ']')
                fputc('\\', out);
            fputc('(', out);
            break;
        case '_':
            /* Inside a word '_' starts no emphasis (CommonMark 6.2); at
             * either end of the text it could. */
            if (p == (const unsigned char *)s || !p[1])
                fputc('\\', out);
            fputc('_', out);
            break;
        default: fputc(*p, out);
        }
    }
}

void _qf_esc_md_code(FILE *out, const char *s, int in_table)
{
    const unsigned char *p;
    size_t run = 0, longest = 0, i;
    if (!s)
        s = "";
    for (p = (const unsigned char *)s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    for (i = 0; i <= longest; i++)
        fputc('`', out);
    /* CommonMark strips one space on each side, needed only next to a
     * backtick of the content. */
    if (longest)
        fputc(' ', out);
    for (p = (const unsigned char *)s; *p; p++) {
        size_t k = put_control(out, p);
        if (k) {
            p += k - 1;
            continue;
        }
        if (*p == '|' && in_table)
            fputs("\\|", out);
        else
            fputc(*p, out);
    }
    if (longest)
        fputc(' ', out);
    for (i = 0; i <= longest; i++)
        fputc('`', out);
}

void _qf_esc_html(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (; *p; p++) {
        switch (*p) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        case '\t':
        case '\n': fputc(*p, out); break;
        default: {
            size_t k = put_control(out, p);
            if (k)
                p += k - 1;
            else
                fputc(*p, out);
        }
        }
    }
}

void _qf_esc_xml(FILE *out, const char *s, int attr)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t k;
    for (; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs(attr ? "&quot;" : "\"", out); break;
        case '\'': fputs(attr ? "&apos;" : "'", out); break;
        case '\n': fputs(attr ? "&#10;" : "\n", out); break;
        case '\r': fputs("&#13;", out); break;
        case '\t': fputs(attr ? "&#9;" : "\t", out); break;
        default:
            if ((k = put_control(out, p)) != 0)
                p += k - 1;
            else
                fputc(*p, out);
        }
    }
}

void _qf_esc_c_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', out);
    for (; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '?')
            fprintf(out, "\\%c", *p);
        else if (*p == '*' && (p[1] == '/' || (p > (const unsigned char *)s && p[-1] == '/')))
            fputs("\\052", out);
        else if (*p < 0x20 || *p >= 0x7f)
            /* Three digits always: a digit after it stays a character. */
            fprintf(out, "\\%03o", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void _qf_esc_c_comment(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (; *p; p++) {
        if (*p == '*' && p[1] == '/')
            fputs("* ", out);
        else if (*p == '/' && p[1] == '*')
            fputs("/ ", out);
        else if (*p == '?')
            fputs("\\?", out);
        else if (*p >= 0x80)
            fprintf(out, "\\x%02x", *p);
        else if (!put_control(out, p))
            fputc(*p, out);
    }
}

void _qf_esc_sh(FILE *out, const char *s)
{
    const char *q;
    int plain = s && *s;
    for (q = s ? s : ""; *q && plain; q++)
        plain = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
                strchr("/._-=,:+@%", *q) != NULL;
    if (plain) {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (q = s ? s : ""; *q; q++) {
        if (*q == '\'')
            fputs("'\\''", out);
        else
            fputc(*q, out);
    }
    fputc('\'', out);
}
