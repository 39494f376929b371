/* _claim.h: the claim keys read from JSON (claim.c), for the kernel
 * worker protocol's hello (worker.c): one parser for every place a claim
 * is written (docs/claims.md). */
#ifndef QF__CLAIM_H
#define QF__CLAIM_H

#include <jansson.h>

#include "qf_bound.h"
#include "qf_format.h"

/* A JSON integer or boolean into *out; -1 for another type. */
int _qf_claim_int(json_t *v, int *out);
/* A JSON string naming a format; -1 when it is not one. */
int _qf_claim_format(json_t *v, qf_format_id *out);
/* One claim key (docs/claims.md: every key of the claim file's arith
 * mapping) from its JSON value: numbers for numeric keys, true/false for
 * flags, strings otherwise.  -1 when unknown or malformed. */
int _qf_claim_field(qf_arith_claim *c, const char *key, json_t *v);
/* Every claim key of c with its value, typed as _qf_claim_field reads
 * them back (a kernel server's hello, qualify/serve.c); NULL when out of
 * memory. */
json_t *_qf_claim_json(const qf_arith_claim *c);

#endif
