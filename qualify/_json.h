/* _json.h: internal Jansson helpers shared by the journal, the reports and
 * the audit (not installed).  Doubles that are NaN or infinite travel as
 * the strings "NaN", "Infinity" and "-Infinity", which JSON has no
 * numbers for. */
#ifndef QF__JSON_H
#define QF__JSON_H

#include <jansson.h>

/* x as a JSON real, or as its string when NaN or infinite; NULL when out
 * of memory. */
json_t *_qf_json_real(double x);

/* A JSON real, integer or one of the three strings into *out: 0, or -1
 * for anything else. */
int _qf_json_get_real(const json_t *v, double *out);

/* json_dumps(j, flags) with every C1 control (U+0080..U+009F) and bidi
 * control (_escape.h) written as its \uXXXX escape: the same JSON value,
 * and no raw character in the text that a terminal acts on or that
 * reorders what a reader sees (results.json, the journal, --json
 * outputs; docs/security.md "Inputs and text").  NULL when out of
 * memory.  _qf_json_dumpf writes it to f: 0, or -1. */
char *_qf_json_dumps(const json_t *j, size_t flags);
int _qf_json_dumpf(const json_t *j, FILE *f, size_t flags);

/* Set o[key] to v, taking v's reference; -1 when v is NULL (an allocation
 * failed further in) or the set fails. */
int _qf_json_set_new(json_t *o, const char *key, json_t *v);

#endif
