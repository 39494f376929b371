/* _evidence.h: a record's evidence and policy as JSON (evidence.c), for
 * the record writer and reader (journal.c).  Internal. */
#ifndef QF__EVIDENCE_H
#define QF__EVIDENCE_H

#include <jansson.h>

#include "qf_verdict.h"

/* New objects, or NULL when out of memory. */
json_t *_qf_evidence_to_json(const qf_evidence *e);
json_t *_qf_policy_to_json(const qf_policy *p);
/* QF_EPARSE with a message naming the member. */
qf_status _qf_evidence_from_json(const json_t *o, qf_evidence *e, char *err, size_t err_size);
qf_status _qf_policy_from_json(const json_t *o, qf_policy *p, char *err, size_t err_size);

#endif
