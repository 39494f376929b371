/* _escape.h: one escaping helper per output language (not installed).
 *
 * Names of kernels, suites, tensors and files, and the messages kernels
 * write, come from outside qualify: a kernel under review, a suite or a
 * tensor file from anywhere.  Every writer that puts such text into a
 * report, a table, generated C or a terminal goes through these, so that
 * the text stays text in that language (docs/reports.md "Escaping").
 *
 * Control characters (C0, DEL, C1), the bidirectional formatting
 * characters (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C:
 * they reorder what a reader sees) and bytes that are not UTF-8 become
 * visible escapes in every form but C's (\n, \r, \t, \x1b, \u0085,
 * \u202e; HTML and XML keep tab and newline), so every output is valid
 * UTF-8 and reads in the order of its bytes; a backslash of the source is
 * left as it is, so the escaping is idempotent (escaping escaped text
 * changes nothing) and a reader cannot tell "\x1b" written by a kernel
 * from an escaped ESC (docs/security.md "Inputs and text"). */
#ifndef QF__ESCAPE_H
#define QF__ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Markdown text (CommonMark 0.31, GitHub Flavored Markdown tables):
 * safe in a table cell, a list item and a heading.  '|' is escaped (it
 * would end the cell), as are the characters that start emphasis, code
 * and headings (\ ` * ~ #, '_' at either end), a '(' after ']' (no link
 * or image) and HTML's < > & (as entities, which also stops autolinks);
 * control characters become visible escapes, so a newline never ends the
 * row or the heading. */
void _qf_esc_md(FILE *out, const char *s);

/* A Markdown code span of s, with a backtick fence longer than any run
 * inside it (CommonMark 6.1).  in_table: the span is inside a GFM table
 * cell, where '|' must be written \| even inside code (GFM 0.29 4.10). */
void _qf_esc_md_code(FILE *out, const char *s, int in_table);

/* HTML text or a quoted attribute value (HTML Living Standard 13.1):
 * < > & " ' as character references; control characters other than tab
 * and newline become visible escapes. */
void _qf_esc_html(FILE *out, const char *s);

/* When s starts with a C1 control or a bidi control in UTF-8 (above):
 * its length in bytes, and its code point in *cp (may be NULL); else 0.
 * For writers whose language has an escape of its own (JSON's \uXXXX). */
size_t _qf_esc_unseen(const char *s, unsigned *cp);

/* XML 1.0 character data, or an attribute value (attr 1) in double
 * quotes: & < > as entities, " and ' too in an attribute; tab, newline
 * and return kept in text, as character references in an attribute (so
 * that a parser does not fold them); every other control character (which
 * XML 1.0 cannot hold, or which a viewer would act on) and every bidi
 * control or byte that is not UTF-8 as a visible escape (junit.xml). */
void _qf_esc_xml(FILE *out, const char *s, int attr);

/* A C string literal with its quotes (C11 6.4.5): " and \ escaped, '?'
 * as \? (no trigraph, 5.2.1.1), bytes outside printable ASCII as octal
 * escapes, and a '*' next to a '/' as \052 so that no comment delimiter
 * appears anywhere in the generated file. */
void _qf_esc_c_string(FILE *out, const char *s);

/* Text inside a C block comment: no comment delimiter (star-slash becomes
 * "* /", slash-star "/ *"), '?' as "\?", and bytes outside printable
 * ASCII as visible \xNN, so the comment neither ends early nor nests. */
void _qf_esc_c_comment(FILE *out, const char *s);

/* Text for a terminal or a one-line field: nothing a terminal acts on
 * (ESC, CSI, CR, LF, BEL, DEL, C1 in UTF-8 or as raw bytes), no bidi
 * control and no line break goes through raw; valid UTF-8 of printable
 * characters is kept. */
void _qf_esc_term(FILE *out, const char *s);

/* The same into dst[size], always terminated, cut at a whole escape or
 * character; returns dst.  For the one-line reason of a result record
 * (docs/reports.md) and for lines built with printf. */
char *_qf_esc_line(char *dst, size_t size, const char *s);

/* A POSIX shell word (POSIX.1-2017 XCU 2.2.3): s as it is when it holds
 * only characters no shell treats specially, otherwise single-quoted with
 * each ' written '\''.  Inside single quotes every byte is literal, so
 * the word is s exactly, whatever it holds; for generated scripts (qualify
 * slurm) that run what the user named. */
void _qf_esc_sh(FILE *out, const char *s);

#endif
