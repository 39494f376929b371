/* qf_claim.h: the claim language (docs/claims.md).
 *
 * A kernel's arithmetic claim (qf_arith_claim, qf_bound.h) can be stated
 * outside the kernel: in a YAML claim file (`qualify run --claim FILE`, a
 * suite's `claims:`, what `qualify probe -o claim.yaml` writes) or in the
 * JSON hello of a kernel worker (docs/workers.md).  Both spell the fields
 * with the same keys, parsed here by one function, so that a key means the
 * same thing wherever it is written.
 */
#ifndef QF_CLAIM_H
#define QF_CLAIM_H

#include <stddef.h>
#include <stdio.h>

#include "qf_bound.h"
#include "qf_kernel.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The claim file format this library reads and writes (claim_version). */
#define QF_CLAIM_VERSION 1

/* What a claim file may hold (docs/claims.md "Errors"): bytes, as a suite
 * file (QF_SUITE_FILE_MAX), and claims in all of its documents.  Flow
 * collections nest at most 64 deep and a file's walk takes at most a
 * million nodes, as a suite's. */
#define QF_CLAIM_FILE_MAX   (16u << 20)
#define QF_CLAIM_CLAIMS_MAX 1024

/* Set one arith key from its text ("13", "true", "rtz", "blocked(32,
 * sequential)").  QF_EPARSE for an unknown key or a malformed value; the
 * domain of the whole claim is qf_arith_claim_check's. */
qf_status qf_claim_set_key(qf_arith_claim *c, const char *key, const char *value);

/* The order of a claim as the `order` key spells it ("split(4)",
 * "varies(split(2), sequential)") into buf; returns buf. */
const char *qf_claim_order_str(const qf_arith_claim *c, char *buf, size_t size);

/* One claim of a file: the kernels (a glob) and dtype tuples (a glob of
 * tuple names; "" = every tuple) it replaces the arithmetic claim of, the
 * suite op it is stated for ("" = any: then every kernel of the glob; else
 * only the kernels that serve that op, docs/claims.md "op"), and the claim,
 * which starts from qf_arith_claim_default() and takes the keys the file
 * states. */
typedef struct qf_claim {
    char kernel[128];
    char dtype[64];
    char op[32];
    qf_arith_claim arith;
    int line; /* of the claim's mapping in the file */
    /* The optional `replay` section (docs/claims.md "Replay details"):
     * what a bit-exact replay needs beyond the bound's keys (which element
     * of which shape uses which order of a varies set, how a chain's first
     * term rounds), one "key: value" line each, in file order; read by
     * `qualify replay` (qf_probe_from_claim).  Empty: none. */
    char replay[2048];
} qf_claim;

typedef struct qf_claim_set {
    char *path;
    size_t n;
    qf_claim *claims;
} qf_claim_set;

/* Read a claim file: one claim per document, or a top-level list of
 * claims.  QF_EIO (unreadable), QF_EPARSE (bad YAML, a missing or unknown
 * key, a bad value, a claim out of its domain: err says
 * "FILE:LINE:COL: key 'K': why"). */
qf_status qf_claim_file_load(const char *path, qf_claim_set *out, char *err, size_t err_size);
void qf_claim_set_free(qf_claim_set *s);

/* Replace the arithmetic claim of the tuples c names in reg
 * (qf_registry_set_claim with c's kernel and dtype globs; with an op, only
 * the kernels whose kernel op is that suite op's), recording origin.
 * Returns the tuples replaced (0: none matched). */
size_t qf_claim_apply(qf_registry *reg, const qf_claim *c, const char *origin);

/* Write one claim as a claim file document (libyaml's emitter): every arith
 * key, and evidence lines when n_evidence > 0.  dtype may be NULL. */
qf_status qf_claim_write_yaml(FILE *f, const char *kernel, const char *dtype, const qf_arith_claim *c,
                              const char *const *evidence, size_t n_evidence);

#ifdef __cplusplus
}
#endif

#endif /* QF_CLAIM_H */
