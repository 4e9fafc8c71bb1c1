/* cache.c - the on-disk cache of compiled artifacts; see cache.h.
 *
 * Entry file format (all integers little-endian):
 *
 *     offset  size  field
 *          0     8  magic "NRCACHE\n"
 *          8     4  format version (NR_CACHE_FORMAT_VERSION)
 *         12     4  header size (HEADER_BYTES)
 *         16    32  key, echoed so that a misplaced file is detected
 *         48     8  payload length
 *         56    32  SHA-256 of the payload
 *         88     n  payload
 *
 * The file is exactly HEADER_BYTES + n bytes long; anything else is garbage. */
#include "cache.h"

#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum {
    HEADER_BYTES = 88,
    OFF_VERSION = 8,
    OFF_HEADER_SIZE = 12,
    OFF_KEY = 16,
    OFF_LEN = 48,
    OFF_SUM = 56,
    DIR_MAX = PATH_MAX - 160,  /* room for "/ab/<64 hex>.nrc" and temp-file suffixes */
    WARNING_MAX = PATH_MAX + 512,
};

static const uint8_t MAGIC[8] = {'N', 'R', 'C', 'A', 'C', 'H', 'E', '\n'};
static const char KEY_DOMAIN[] = "nereid cache key v1";

struct NrCache {
    NrCacheMode mode;
    char dir[PATH_MAX];
    char warning[WARNING_MAX];
};

/* ---- keys ---- */

static void put_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t get_le32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

NrCacheKey nr_cache_key(const NrCachePart *parts, int nparts) {
    NrSha256 s;
    uint8_t n[8];
    nr_sha256_init(&s);
    nr_sha256_update(&s, KEY_DOMAIN, sizeof KEY_DOMAIN);
    put_le64(n, (uint64_t)(nparts > 0 ? nparts : 0));
    nr_sha256_update(&s, n, 8);
    for (int i = 0; i < nparts; i++) {
        put_le64(n, (uint64_t)parts[i].len);
        nr_sha256_update(&s, n, 8);
        if (parts[i].len) nr_sha256_update(&s, parts[i].data, parts[i].len);
    }
    NrCacheKey k;
    nr_sha256_final(&s, k.bytes);
    return k;
}

void nr_cache_key_hex(const NrCacheKey *key, char out[2 * NR_CACHE_KEY_BYTES + 1]) {
    nr_sha256_hex(key->bytes, out);
}

/* ---- opening ---- */

static void warn(NrCache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(NrCache *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->warning, sizeof c->warning, fmt, ap);
    va_end(ap);
}

static const char *env_nonempty(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Choose the directory from the environment.  Returns 0, or -1 with a warning. */
static int dir_from_env(NrCache *c) {
    const char *v;
    int n;
    if ((v = env_nonempty("NEREID_CACHE_DIR")))
        n = snprintf(c->dir, sizeof c->dir, "%s", v);
    else if ((v = env_nonempty("XDG_CACHE_HOME")) && v[0] == '/')  /* XDG: relative paths are ignored */
        n = snprintf(c->dir, sizeof c->dir, "%s/nereid", v);
    else if ((v = env_nonempty("HOME")))
        n = snprintf(c->dir, sizeof c->dir, "%s/.cache/nereid", v);
    else {
        c->dir[0] = 0;
        warn(c, "no cache directory (none of NEREID_CACHE_DIR, XDG_CACHE_HOME, HOME is set); caching disabled");
        return -1;
    }
    if (n < 0 || n >= DIR_MAX) {
        c->dir[0] = 0;
        warn(c, "cache directory path is too long; caching disabled");
        return -1;
    }
    return 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p: create path and its missing parents.  Returns 0 or -1 with errno set. */
static int mkdir_p(const char *path) {
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char saved = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        if (!is_dir(buf)) {
            errno = ENOTDIR;
            return -1;
        }
        buf[i] = saved;
    }
    return 0;
}

/* Whether a file can be created in dir, tried for real (permission bits lie
 * for root, read-only mounts and full disks). */
static int probe_writable(const char *dir) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/.probe-XXXXXX", dir) >= (int)sizeof path) return 0;
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return 0;
    close(fd);
    unlink(path);
    return 1;
}

static int env_disables_cache(void) {
    const char *v = env_nonempty("NEREID_NO_CACHE");
    return v && strcmp(v, "0") != 0;
}

NrCacheMode nr_cache_open(const char *dir, NrCache **out) {
    NrCache *c = calloc(1, sizeof *c);
    if (!c) nr_fatal_oom();
    *out = c;
    c->mode = NR_CACHE_DISABLED;
    if (!dir && env_disables_cache()) return c->mode;
    if (dir) {
        if (!*dir || strlen(dir) >= DIR_MAX) {
            warn(c, "invalid cache directory '%s'; caching disabled", dir);
            return c->mode;
        }
        snprintf(c->dir, sizeof c->dir, "%s", dir);
    } else if (dir_from_env(c) != 0) {
        return c->mode;
    }
    /* Trailing slashes would double up in entry paths. */
    for (size_t n = strlen(c->dir); n > 1 && c->dir[n - 1] == '/'; n--) c->dir[n - 1] = 0;
    if (mkdir_p(c->dir) != 0) {
        warn(c, "cannot create cache directory '%s': %s; caching disabled", c->dir, strerror(errno));
        return c->mode;
    }
    if (!probe_writable(c->dir)) {
        warn(c, "cache directory '%s' is not writable: %s; compiled kernels will not be stored", c->dir,
             strerror(errno));
        c->mode = NR_CACHE_READ_ONLY;
        return c->mode;
    }
    c->mode = NR_CACHE_READ_WRITE;
    return c->mode;
}

void nr_cache_close(NrCache *c) { free(c); }

NrCacheMode nr_cache_mode(const NrCache *c) { return c->mode; }
const char *nr_cache_dir(const NrCache *c) { return c->dir; }
const char *nr_cache_warning(const NrCache *c) { return c->warning; }

/* ---- paths ---- */

int nr_cache_entry_path(const NrCache *c, const NrCacheKey *key, char *buf, size_t size) {
    char hex[2 * NR_CACHE_KEY_BYTES + 1];
    if (!c->dir[0]) return -1;
    nr_cache_key_hex(key, hex);
    int n = snprintf(buf, size, "%s/%.2s/%s.nrc", c->dir, hex, hex);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int fanout_dir(const NrCache *c, const NrCacheKey *key, char *buf, size_t size) {
    char hex[2 * NR_CACHE_KEY_BYTES + 1];
    nr_cache_key_hex(key, hex);
    int n = snprintf(buf, size, "%s/%.2s", c->dir, hex);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* ---- reading ---- */

/* Read exactly n bytes.  Returns 0, or -1 on error or end of file. */
static int read_full(int fd, void *buf, size_t n) {
    uint8_t *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Remove a bad entry, unless the name now refers to another file (a writer
 * may have renamed a fresh entry over it since we opened it). */
static void remove_bad(NrCache *c, const char *path, const struct stat *opened, const char *why) {
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == opened->st_dev && now.st_ino == opened->st_ino &&
        c->mode == NR_CACHE_READ_WRITE)
        unlink(path);
    warn(c, "corrupt cache entry '%s' (%s) ignored", path, why);
}

/* Validate an entry header against key and the file's size; returns NULL if
 * good, else what is wrong. */
static const char *check_header(const uint8_t *h, const NrCacheKey *key, uint64_t file_size, uint64_t *len) {
    if (memcmp(h, MAGIC, sizeof MAGIC) != 0) return "bad magic";
    if (get_le32(h + OFF_VERSION) != NR_CACHE_FORMAT_VERSION) return "unknown format version";
    if (get_le32(h + OFF_HEADER_SIZE) != HEADER_BYTES) return "bad header size";
    if (memcmp(h + OFF_KEY, key->bytes, NR_CACHE_KEY_BYTES) != 0) return "key mismatch";
    *len = get_le64(h + OFF_LEN);
    if (*len > NR_CACHE_MAX_PAYLOAD) return "payload too large";
    if (*len != file_size - HEADER_BYTES) return "length mismatch";
    return NULL;
}

int nr_cache_get(NrCache *c, const NrCacheKey *key, NrArena *a, const void **data, size_t *len) {
    char path[PATH_MAX];
    *data = NULL;
    *len = 0;
    if (c->mode == NR_CACHE_DISABLED || nr_cache_entry_path(c, key, path, sizeof path) != 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;  /* usually ENOENT: a plain miss */
    struct stat st;
    uint8_t h[HEADER_BYTES];
    const char *bad = NULL;
    uint64_t n = 0;
    uint8_t *payload = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    if (st.st_size < HEADER_BYTES) bad = "truncated header";
    else if (read_full(fd, h, HEADER_BYTES) != 0) bad = "unreadable header";
    else bad = check_header(h, key, (uint64_t)st.st_size, &n);
    if (!bad) {
        payload = nr_alloc(a, (size_t)n + 1);
        uint8_t sum[NR_SHA256_BYTES];
        if (read_full(fd, payload, (size_t)n) != 0) bad = "truncated payload";
        else {
            nr_sha256(payload, (size_t)n, sum);
            if (memcmp(sum, h + OFF_SUM, NR_SHA256_BYTES) != 0) bad = "checksum mismatch";
        }
    }
    close(fd);
    if (bad) {
        remove_bad(c, path, &st, bad);
        return 0;
    }
    *data = payload;
    *len = (size_t)n;
    return 1;
}

/* ---- writing ---- */

static int write_full(int fd, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* fsync a directory so that a rename into it survives a crash; best effort. */
static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int nr_cache_put(NrCache *c, const NrCacheKey *key, const void *data, size_t len) {
    char sub[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
    if (c->mode != NR_CACHE_READ_WRITE) return -1;
    if ((uint64_t)len > NR_CACHE_MAX_PAYLOAD) {
        warn(c, "cache entry of %zu bytes is too large to store", len);
        return -1;
    }
    if (fanout_dir(c, key, sub, sizeof sub) != 0 || nr_cache_entry_path(c, key, path, sizeof path) != 0 ||
        snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", sub) >= (int)sizeof tmp)
        return -1;
    if (mkdir(sub, 0777) != 0 && errno != EEXIST) {
        warn(c, "cannot create cache directory '%s': %s", sub, strerror(errno));
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        warn(c, "cannot create a file in cache directory '%s': %s", sub, strerror(errno));
        return -1;
    }
    uint8_t h[HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, MAGIC, sizeof MAGIC);
    put_le32(h + OFF_VERSION, NR_CACHE_FORMAT_VERSION);
    put_le32(h + OFF_HEADER_SIZE, HEADER_BYTES);
    memcpy(h + OFF_KEY, key->bytes, NR_CACHE_KEY_BYTES);
    put_le64(h + OFF_LEN, (uint64_t)len);
    nr_sha256(data, len, h + OFF_SUM);
    int ok = write_full(fd, h, sizeof h) == 0 && (len == 0 || write_full(fd, data, len) == 0) && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        warn(c, "cannot write cache entry '%s': %s", path, strerror(saved));
        return -1;
    }
    sync_dir(sub);
    return 0;
}
