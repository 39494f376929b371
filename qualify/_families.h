/* _families.h: the kernel families and back ends built into this program
 * (private).
 *
 * The registry adds built-in kernels by walking this list and never names
 * a family: kernels/families.c is the one place that does, the way BLIS's
 * config_registry file is the one place that maps its configuration
 * families to their kernel sets (github.com/flame/blis, config_registry
 * and docs/ConfigurationHowTo.md).  A new family is one line there and
 * no edit of qualify/registry.c.
 */
#ifndef QF__FAMILIES_H
#define QF__FAMILIES_H

#include <stddef.h>

#include "qf_kernel.h"

/* One family.  It contributes kernels either as a static table (table:
 * n entries, added one by one in table order) or by registering them
 * itself (add: a back end whose records are built at run time).  A back
 * end that is not linked into this program has neither: its entry stays
 * in the list so that the order is fixed, and the registry skips it. */
typedef struct _qf_family {
    const char *name;                     /* "cpu", "models", "bad", "cuda", "hip" */
    const qf_kernel *(*table)(size_t *n); /* NULL: none */
    qf_status (*add)(qf_registry *r);     /* NULL: none */
} _qf_family;

/* The families in registration order (kernels/families.c); *n entries. */
const _qf_family *_qf_families_get(size_t *n);

#endif
