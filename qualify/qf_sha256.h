/* qf_sha256.h: SHA-256 (FIPS 180-4), for the suite-file hashes of a
 * report's provenance (qf_provenance.h).  Small and dependency-free so the
 * library does not pull in a crypto library for one digest. */
#ifndef QF_SHA256_H
#define QF_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QF_SHA256_BYTES 32
#define QF_SHA256_HEX   65 /* 64 hex digits and the terminating NUL */

typedef struct qf_sha256_ctx {
    uint32_t h[8];
    uint64_t nbytes; /* message length so far */
    uint8_t buf[64]; /* pending partial block */
    size_t nbuf;
} qf_sha256_ctx;

void qf_sha256_init(qf_sha256_ctx *c);
void qf_sha256_update(qf_sha256_ctx *c, const void *data, size_t n);
void qf_sha256_final(qf_sha256_ctx *c, uint8_t digest[QF_SHA256_BYTES]);

/* One-shot digest of a buffer. */
void qf_sha256(const void *data, size_t n, uint8_t digest[QF_SHA256_BYTES]);

/* Lowercase hex of a digest into hex[QF_SHA256_HEX]. */
void qf_sha256_hex(const uint8_t digest[QF_SHA256_BYTES], char hex[QF_SHA256_HEX]);

/* Digest of a file's bytes as lowercase hex; QF_EIO when it cannot be
 * opened or read, QF_EINVAL for NULL arguments. */
qf_status qf_sha256_file(const char *path, char hex[QF_SHA256_HEX]);

#ifdef __cplusplus
}
#endif

#endif /* QF_SHA256_H */
