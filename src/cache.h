/* cache.h - the on-disk cache of compiled artifacts (cubins, PTX, metadata).
 *
 * An entry is an opaque byte string stored under a 32-byte key.  The key is a
 * SHA-256 over everything the artifact depends on (source, specialization,
 * options, target, compiler version), built with nr_cache_key() from
 * length-prefixed parts so that different part lists never collide by
 * concatenation.
 *
 * Layout: <dir>/<first two hex digits of the key>/<64 hex digits>.nrc, where
 * <dir> is the argument of nr_cache_open(), else $NEREID_CACHE_DIR, else
 * $XDG_CACHE_HOME/nereid, else $HOME/.cache/nereid.
 *
 * Guarantees:
 *  - nr_cache_get() never returns corrupt data: the entry's magic, format
 *    version, key, length and payload checksum are all verified; anything
 *    else (short file, garbage, wrong key) is a miss and the file is removed.
 *  - nr_cache_put() is atomic: the entry is written to a unique temporary
 *    file in the same directory, fsync'ed and renamed over the final name, so
 *    readers see either no entry or a whole one.  Several processes and
 *    threads may share a directory; concurrent writers of one key all
 *    succeed and the last rename wins.
 *  - Problems (unwritable directory, disk full) never fail a compilation:
 *    the cache degrades to "no cache" (or read-only) and records a warning.
 *
 * An NrCache holds no open files; it is used by one thread at a time, and any
 * number of NrCache objects may share a directory. */
#ifndef NR_CACHE_H
#define NR_CACHE_H

#include "arena.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    NR_CACHE_KEY_BYTES = 32,
    NR_CACHE_FORMAT_VERSION = 1,
};

/* Largest payload stored or accepted on read (1 GiB): a bound for garbage. */
#define NR_CACHE_MAX_PAYLOAD ((uint64_t)1 << 30)

typedef struct NrCacheKey {
    uint8_t bytes[NR_CACHE_KEY_BYTES];
} NrCacheKey;

/* One input of a key: any bytes (need not be text). */
typedef struct NrCachePart {
    const void *data;
    size_t len;
} NrCachePart;

#define NR_CACHE_STR(s) ((NrCachePart){(s), strlen(s)})
#define NR_CACHE_BYTES(p, n) ((NrCachePart){(p), (size_t)(n)})

/* SHA-256 over a domain tag, the number of parts, and each part as its 64-bit
 * little-endian length followed by its bytes. */
NrCacheKey nr_cache_key(const NrCachePart *parts, int nparts);
/* 64 lowercase hex digits and a NUL. */
void nr_cache_key_hex(const NrCacheKey *key, char out[2 * NR_CACHE_KEY_BYTES + 1]);

typedef struct NrCache NrCache;

typedef enum NrCacheMode {
    NR_CACHE_DISABLED = 0,   /* every get misses, every put is skipped */
    NR_CACHE_READ_ONLY = 1,  /* the directory exists but cannot be written */
    NR_CACHE_READ_WRITE = 2,
} NrCacheMode;

/* Open the cache in dir (NULL: from the environment, see above; the cache is
 * disabled without a warning when NEREID_NO_CACHE is set to a non-empty value
 * other than "0").  The directory is created with mkdir -p semantics.
 * *out is always set to a usable cache object (abort on out of memory).
 * Returns the mode; when it is not NR_CACHE_READ_WRITE, nr_cache_warning()
 * says why (unless the cache was disabled on purpose). */
NrCacheMode nr_cache_open(const char *dir, NrCache **out);
void nr_cache_close(NrCache *c);

NrCacheMode nr_cache_mode(const NrCache *c);
/* The cache directory ("" when none could be determined). */
const char *nr_cache_dir(const NrCache *c);
/* The last problem met ("" if none): why the cache is disabled or read-only,
 * a put that failed, a corrupt entry that was removed. */
const char *nr_cache_warning(const NrCache *c);

/* Look key up.  On a hit returns 1 and sets *data (allocated from a, with a
 * NUL byte after the payload for the convenience of text payloads) and *len;
 * on a miss returns 0 and sets *data = NULL, *len = 0. */
int nr_cache_get(NrCache *c, const NrCacheKey *key, NrArena *a, const void **data, size_t *len);

/* Store data under key, replacing any entry.  Returns 0 when stored, -1 when
 * not (the cache is disabled or read-only, or writing failed; see
 * nr_cache_warning).  A failure is never fatal to the caller. */
int nr_cache_put(NrCache *c, const NrCacheKey *key, const void *data, size_t len);

/* The path of key's entry file into buf (for tests and tools); returns 0, or
 * -1 when the cache has no directory or buf is too small. */
int nr_cache_entry_path(const NrCache *c, const NrCacheKey *key, char *buf, size_t size);

#endif
