/* sha256.h - SHA-256 (FIPS 180-4), used for disk-cache keys and checksums.
 *
 * A streaming interface (init, update..., final) and a one-shot helper.  The
 * state is a plain value owned by the caller; no global state. */
#ifndef NR_SHA256_H
#define NR_SHA256_H

#include <stddef.h>
#include <stdint.h>

enum { NR_SHA256_BYTES = 32 };

typedef struct NrSha256 {
    uint32_t h[8];      /* chaining value */
    uint64_t nbytes;    /* message bytes consumed so far */
    uint8_t buf[64];    /* pending partial block */
    size_t nbuf;
} NrSha256;

void nr_sha256_init(NrSha256 *s);
void nr_sha256_update(NrSha256 *s, const void *data, size_t len);
/* Write the digest to out; s must be re-initialised before reuse. */
void nr_sha256_final(NrSha256 *s, uint8_t out[NR_SHA256_BYTES]);
void nr_sha256(const void *data, size_t len, uint8_t out[NR_SHA256_BYTES]);
/* Lowercase hex of a digest: 64 characters and a NUL. */
void nr_sha256_hex(const uint8_t digest[NR_SHA256_BYTES], char out[2 * NR_SHA256_BYTES + 1]);

#endif
