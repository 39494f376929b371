/* _enable.h: helpers shared by enable.c and diff.c (internal). */
#ifndef QF__ENABLE_H
#define QF__ENABLE_H

#include <stdio.h>

/* Text from results in a Markdown table cell: '|', '<', '&', '`' and
 * control characters cannot break the table or its inline code. */
void qf__enable_md_cell(FILE *f, const char *s);

#endif
