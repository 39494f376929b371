/* _yaml_limits.h: the limits every YAML file qualify reads is held to
 * (not installed): suite files and their includes (suite.c) and claim
 * files (claim.c), so that neither kind of file can make qualify read,
 * allocate or compute more than the other (docs/suites.md "Errors",
 * docs/claims.md "Errors", docs/security.md "Inputs and text"). */
#ifndef QF__YAML_LIMITS_H
#define QF__YAML_LIMITS_H

#include <stddef.h>

#include "qf_status.h"

/* Bytes of one file (qf_suite.h's QF_SUITE_FILE_MAX, qf_claim.h's
 * QF_CLAIM_FILE_MAX). */
#define _QF_YAML_FILE_MAX (16u << 20)

/* libyaml's scanner takes time quadratic in the nesting depth of flow
 * collections ("[[[[...": 20000 levels take two seconds, 100000 more than
 * a minute), so the depth is bounded before libyaml sees the text.  A
 * suite's schema needs a depth of 4, a claim's 1. */
#define _QF_YAML_FLOW_DEPTH_MAX 64

/* Nodes a reader walks in one file, an alias counted at each use: a
 * billion-laughs file of a few hundred bytes cannot make the walk long. */
#define _QF_YAML_NODE_LIMIT 1000000ul

/* Where a flow collection went past the limit: its line and column (from
 * 1), and the plain key whose value the outermost collection is ("" when
 * the collection is not a plain key's value). */
typedef struct _qf_yaml_where {
    int line, col;
    char key[64];
} _qf_yaml_where;

/* 0 when the flow collections of buf[0..len) nest at most max deep, else
 * -1 with *at the bracket that went past.  The scan follows YAML's quoting
 * and comments closely enough that brackets inside strings or comments
 * neither hide nor fake nesting. */
int _qf_yaml_flow_depth(const char *buf, size_t len, int max, _qf_yaml_where *at);

/* The whole of the regular file path (_files.h: a FIFO or device is
 * refused unread) into a malloc'd buffer *buf of *len bytes plus a NUL,
 * when it holds at most max bytes.  QF_OK; else QF_EIO (cannot be read, or
 * not a regular file) or QF_EPARSE (larger than max) with "PATH: ..." in
 * err, or QF_ENOMEM.  The size is checked before anything is read, and a
 * file that grows while it is read is refused (QF_EIO). */
qf_status _qf_yaml_read_file(const char *path, size_t max, char **buf, size_t *len, char *err, size_t err_size);

#endif
