/* test_cache.c - SHA-256 and the on-disk cache: standard vectors, keys, round
 * trips, corruption of every kind, concurrent writers in several processes,
 * directory selection from the environment, and graceful degradation. */
#include "cache.h"
#include "sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
            failures++;                                            \
        }                                                          \
    } while (0)

static char root[64];  /* scratch directory of this run */

/* ---- helpers ---- */

static uint64_t rng_state;

static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static void fill_random(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng();
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    chmod(path, 0700);
    return remove(path);
}

static void rm_rf(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return;
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* Read a whole file into a malloc'd buffer. */
static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)len + 1);
    *n = fread(buf, 1, (size_t)len, f);
    fclose(f);
    return buf;
}

static NrCacheKey key_of(const char *s) {
    NrCachePart p = NR_CACHE_STR(s);
    return nr_cache_key(&p, 1);
}

/* Count files whose name starts with prefix anywhere under dir. */
static int count_prefix(const char *dir, const char *prefix) {
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) n += count_prefix(path, prefix);
        else if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    }
    closedir(d);
    return n;
}

/* ---- SHA-256 ---- */

static void check_digest(const void *msg, size_t len, const char *want, const char *what) {
    uint8_t d[NR_SHA256_BYTES];
    char hex[65];
    nr_sha256(msg, len, d);
    nr_sha256_hex(d, hex);
    CHECK(strcmp(hex, want) == 0, "sha256(%s) = %s, want %s", what, hex, want);
    /* The same through the streaming interface in uneven pieces. */
    NrSha256 s;
    nr_sha256_init(&s);
    const uint8_t *p = msg;
    size_t done = 0, step = 1;
    while (done < len) {
        size_t take = step < len - done ? step : len - done;
        nr_sha256_update(&s, p + done, take);
        done += take;
        step = step * 3 % 131 + 1;
    }
    nr_sha256_final(&s, d);
    nr_sha256_hex(d, hex);
    CHECK(strcmp(hex, want) == 0, "streamed sha256(%s) = %s, want %s", what, hex, want);
}

static void test_sha256(void) {
    check_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
    check_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_digest(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448 bits");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmno"
                       "pqrstnopqrstu";
    check_digest(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", "896 bits");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    check_digest(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                 "a million a");
    free(million);
    /* Lengths around the padding boundaries. */
    static const struct {
        size_t n;
        const char *hex;
    } edges[] = {
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {127, "a8d23e75d936f303d248888d9b165ee543f4cbafcad3c9dd2a79bd84faa11d07"},
        {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
    };
    uint8_t buf[128];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "%zu bytes", edges[i].n);
        check_digest(buf, edges[i].n, edges[i].hex, what);
    }
}

/* ---- keys ---- */

static void test_keys(void) {
    NrCachePart ab_c[2] = {NR_CACHE_STR("ab"), NR_CACHE_STR("c")};
    NrCachePart a_bc[2] = {NR_CACHE_STR("a"), NR_CACHE_STR("bc")};
    NrCachePart abc[1] = {NR_CACHE_STR("abc")};
    NrCachePart abc_empty[2] = {NR_CACHE_STR("abc"), NR_CACHE_STR("")};
    NrCachePart c_ab[2] = {NR_CACHE_STR("c"), NR_CACHE_STR("ab")};
    NrCacheKey k1 = nr_cache_key(ab_c, 2), k2 = nr_cache_key(a_bc, 2), k3 = nr_cache_key(abc, 1);
    NrCacheKey k4 = nr_cache_key(abc_empty, 2), k5 = nr_cache_key(c_ab, 2), k6 = nr_cache_key(ab_c, 2);
    CHECK(memcmp(&k1, &k2, sizeof k1) != 0, "('ab','c') and ('a','bc') collide");
    CHECK(memcmp(&k1, &k3, sizeof k1) != 0, "('ab','c') and ('abc') collide");
    CHECK(memcmp(&k3, &k4, sizeof k1) != 0, "('abc') and ('abc','') collide");
    CHECK(memcmp(&k1, &k5, sizeof k1) != 0, "part order ignored");
    CHECK(memcmp(&k1, &k6, sizeof k1) == 0, "keys are not deterministic");
    /* Binary parts with NUL bytes count in full. */
    uint8_t b1[4] = {1, 0, 2, 0}, b2[4] = {1, 0, 3, 0};
    NrCachePart p1 = NR_CACHE_BYTES(b1, 4), p2 = NR_CACHE_BYTES(b2, 4);
    NrCacheKey kb1 = nr_cache_key(&p1, 1), kb2 = nr_cache_key(&p2, 1);
    CHECK(memcmp(&kb1, &kb2, sizeof kb1) != 0, "bytes after a NUL ignored");
    /* Lengths, not separators: ("a", 8 NULs "b") and ("a" 8 NULs, "b") differ. */
    uint8_t z1[9] = {0, 0, 0, 0, 0, 0, 0, 0, 'b'}, z2[9] = {'a', 0, 0, 0, 0, 0, 0, 0, 0};
    NrCachePart s1[2] = {NR_CACHE_BYTES("a", 1), NR_CACHE_BYTES(z1, 9)};
    NrCachePart s2[2] = {NR_CACHE_BYTES(z2, 9), NR_CACHE_BYTES("b", 1)};
    NrCacheKey ks1 = nr_cache_key(s1, 2), ks2 = nr_cache_key(s2, 2);
    CHECK(memcmp(&ks1, &ks2, sizeof ks1) != 0, "parts are not length-prefixed");
    char hex[65];
    nr_cache_key_hex(&k1, hex);
    CHECK(strlen(hex) == 64 && strspn(hex, "0123456789abcdef") == 64, "bad hex %s", hex);
}

/* ---- round trips ---- */

static NrCache *open_dir(const char *sub) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    NrCache *c;
    NrCacheMode m = nr_cache_open(dir, &c);
    CHECK(m == NR_CACHE_READ_WRITE, "open %s: mode %d: %s", dir, m, nr_cache_warning(c));
    CHECK(strcmp(nr_cache_dir(c), dir) == 0, "dir %s, want %s", nr_cache_dir(c), dir);
    return c;
}

static void test_round_trip(void) {
    NrCache *c = open_dir("rt/a/b");  /* nested: mkdir -p */
    NrArena a;
    nr_arena_init(&a);
    static const size_t sizes[] = {0, 1, 87, 88, 4096, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        uint8_t *buf = malloc(n + 1);
        fill_random(buf, n);
        char name[32];
        snprintf(name, sizeof name, "round trip %zu", n);
        NrCacheKey k = key_of(name);
        const void *data = (const void *)1;
        size_t len = 99;
        CHECK(nr_cache_get(c, &k, &a, &data, &len) == 0 && data == NULL && len == 0, "hit before put (%zu)", n);
        CHECK(nr_cache_put(c, &k, buf, n) == 0, "put %zu: %s", n, nr_cache_warning(c));
        int hit = nr_cache_get(c, &k, &a, &data, &len);
        CHECK(hit == 1 && len == n && memcmp(data, buf, n) == 0, "round trip of %zu bytes", n);
        if (hit) CHECK(((const char *)data)[n] == 0, "no NUL after the payload");
        /* Replacing an entry works and returns the new data. */
        fill_random(buf, n);
        CHECK(nr_cache_put(c, &k, buf, n) == 0, "second put %zu", n);
        hit = nr_cache_get(c, &k, &a, &data, &len);
        CHECK(hit == 1 && len == n && memcmp(data, buf, n) == 0, "replaced entry of %zu bytes", n);
        free(buf);
    }
    /* Fan-out: the entry lives under the first two hex digits of its key. */
    NrCacheKey k = key_of("round trip 1");
    char hex[65], path[1024], want[1024];
    nr_cache_key_hex(&k, hex);
    CHECK(nr_cache_entry_path(c, &k, path, sizeof path) == 0, "entry path");
    snprintf(want, sizeof want, "%s/rt/a/b/%.2s/%s.nrc", root, hex, hex);
    CHECK(strcmp(path, want) == 0, "entry path %s, want %s", path, want);
    CHECK(file_exists(path), "no file at %s", path);
    char small[16];
    CHECK(nr_cache_entry_path(c, &k, small, sizeof small) == -1, "entry path overflow not reported");
    /* Unknown keys miss. */
    const void *data;
    size_t len;
    NrCacheKey unknown = key_of("never stored");
    CHECK(nr_cache_get(c, &unknown, &a, &data, &len) == 0, "unknown key hit");
    CHECK(count_prefix(nr_cache_dir(c), ".tmp-") == 0, "temporary files left behind");
    CHECK(count_prefix(nr_cache_dir(c), ".probe-") == 0, "probe files left behind");
    /* Trailing slashes in the directory are dropped. */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/rt/a/b//", root);
    NrCache *c2;
    nr_cache_open(dir, &c2);
    CHECK(nr_cache_get(c2, &k, &a, &data, &len) == 1, "same directory with trailing slashes misses");
    nr_cache_close(c2);
    nr_arena_free(&a);
    nr_cache_close(c);
}

/* ---- corruption ---- */

enum CorruptKind {
    FLIP_PAYLOAD, FLIP_HEADER_KEY, FLIP_CHECKSUM, FLIP_LENGTH, TRUNCATE_PAYLOAD, TRUNCATE_HEADER, EMPTY_FILE,
    GARBAGE, WRONG_MAGIC, WRONG_VERSION, WRONG_KEY, TRAILING_BYTES, HUGE_LENGTH, NKINDS
};

static const char *const corrupt_names[NKINDS] = {
    "flipped payload byte", "flipped key byte", "flipped checksum byte", "changed length", "truncated payload",
    "truncated header", "empty file", "garbage", "wrong magic", "wrong version", "another key's entry",
    "trailing bytes", "huge length",
};

static void corrupt(const char *path, enum CorruptKind kind, const char *other_path) {
    size_t n;
    uint8_t *b = read_file(path, &n);
    CHECK(b != NULL && n > 100, "cannot read entry %s", path);
    if (!b || n <= 100) {
        free(b);
        return;
    }
    switch (kind) {
    case FLIP_PAYLOAD: b[88 + (n - 88) / 2] ^= 0x10; break;
    case FLIP_HEADER_KEY: b[20] ^= 1; break;
    case FLIP_CHECKSUM: b[60] ^= 0x80; break;
    case FLIP_LENGTH: b[48] ^= 1; break;
    case TRUNCATE_PAYLOAD: n -= 1; break;
    case TRUNCATE_HEADER: n = 40; break;
    case EMPTY_FILE: n = 0; break;
    case GARBAGE: fill_random(b, n); break;
    case WRONG_MAGIC: b[0] = 'X'; break;
    case WRONG_VERSION: b[8] = 99; break;
    case WRONG_KEY: {
        free(b);
        b = read_file(other_path, &n);
        break;
    }
    case TRAILING_BYTES: {
        uint8_t *nb = realloc(b, n + 5);
        b = nb;
        memcpy(b + n, "extra", 5);
        n += 5;
        break;
    }
    case HUGE_LENGTH: b[55] = 0x7f; break;
    case NKINDS: break;
    }
    write_file(path, b, n);
    free(b);
}

static void test_corruption(void) {
    NrCache *c = open_dir("corrupt");
    NrArena a;
    nr_arena_init(&a);
    uint8_t payload[300];
    for (int kind = 0; kind < NKINDS; kind++) {
        char name[64], path[1024], other_path[1024];
        snprintf(name, sizeof name, "corrupt %d", kind);
        NrCacheKey k = key_of(name), other = key_of("the other entry");
        fill_random(payload, sizeof payload);
        CHECK(nr_cache_put(c, &k, payload, sizeof payload) == 0, "put");
        CHECK(nr_cache_put(c, &other, "another payload that is long enough to read back, more than 100 bytes "
                                      "in total so that the file is as large as the other one",
                           120) == 0,
              "put other");
        nr_cache_entry_path(c, &k, path, sizeof path);
        nr_cache_entry_path(c, &other, other_path, sizeof other_path);
        corrupt(path, (enum CorruptKind)kind, other_path);
        const void *data = NULL;
        size_t len = 0;
        int hit = nr_cache_get(c, &k, &a, &data, &len);
        CHECK(hit == 0 && data == NULL, "%s: corrupt entry returned", corrupt_names[kind]);
        CHECK(!file_exists(path), "%s: corrupt entry not removed", corrupt_names[kind]);
        CHECK(strstr(nr_cache_warning(c), "corrupt cache entry") != NULL, "%s: no warning: '%s'",
              corrupt_names[kind], nr_cache_warning(c));
        /* Rebuilt: the next put and get work again. */
        CHECK(nr_cache_put(c, &k, payload, sizeof payload) == 0, "%s: re-put", corrupt_names[kind]);
        hit = nr_cache_get(c, &k, &a, &data, &len);
        CHECK(hit == 1 && len == sizeof payload && memcmp(data, payload, len) == 0, "%s: not rebuilt",
              corrupt_names[kind]);
        /* The other entry was never touched. */
        hit = nr_cache_get(c, &other, &a, &data, &len);
        CHECK(hit == 1 && len == 120, "%s: other entry lost", corrupt_names[kind]);
    }
    /* A directory where an entry should be is a miss, not a crash. */
    NrCacheKey k = key_of("a directory");
    char path[1024];
    nr_cache_entry_path(c, &k, path, sizeof path);
    char sub[1024];
    snprintf(sub, sizeof sub, "%.*s", (int)(strrchr(path, '/') - path), path);
    mkdir(sub, 0777);
    mkdir(path, 0777);
    const void *data;
    size_t len;
    CHECK(nr_cache_get(c, &k, &a, &data, &len) == 0, "directory entry hit");
    CHECK(nr_cache_put(c, &k, "x", 1) == -1, "put over a directory claimed success");
    CHECK(count_prefix(nr_cache_dir(c), ".tmp-") == 0, "temporary file left after a failed put");
    nr_arena_free(&a);
    nr_cache_close(c);
}

/* ---- concurrency ---- */

enum { WRITERS = 6, ITERS = 150, SHARED_KEYS = 3 };

/* A payload that proves its own integrity: header words (key id, writer,
 * length) and bytes derived from them. */
static size_t make_payload(uint8_t *buf, uint32_t key_id, uint32_t writer, uint32_t iter) {
    uint32_t len = 12 + (key_id * 977 + writer * 131 + iter * 17) % 20000;
    memcpy(buf, &key_id, 4);
    memcpy(buf + 4, &writer, 4);
    memcpy(buf + 8, &len, 4);
    for (uint32_t i = 12; i < len; i++) buf[i] = (uint8_t)(key_id * 31 + writer * 7 + i);
    return len;
}

static int payload_valid(const uint8_t *buf, size_t n, uint32_t key_id) {
    uint32_t k, w, len;
    if (n < 12) return 0;
    memcpy(&k, buf, 4);
    memcpy(&w, buf + 4, 4);
    memcpy(&len, buf + 8, 4);
    if (k != key_id || len != n || w >= WRITERS) return 0;
    for (uint32_t i = 12; i < len; i++)
        if (buf[i] != (uint8_t)(k * 31 + w * 7 + i)) return 0;
    return 1;
}

static int writer_process(const char *dir, uint32_t writer) {
    NrCache *c;
    if (nr_cache_open(dir, &c) != NR_CACHE_READ_WRITE) return 2;
    uint8_t *buf = malloc(20100);
    int bad = 0;
    for (uint32_t it = 0; it < ITERS; it++) {
        NrArena a;
        nr_arena_init(&a);
        /* Alternate shared keys (contended) with keys of this writer alone. */
        uint32_t key_id = it % 2 ? it % SHARED_KEYS : 100 + writer * 1000 + it;
        char name[32];
        snprintf(name, sizeof name, "concurrent %u", key_id);
        NrCacheKey k = key_of(name);
        size_t n = make_payload(buf, key_id, writer, it);
        if (nr_cache_put(c, &k, buf, n) != 0) bad++;
        const void *data;
        size_t len;
        int hit = nr_cache_get(c, &k, &a, &data, &len);
        /* Another writer may replace a shared key, never remove it. */
        if (!hit || !payload_valid(data, len, key_id)) bad++;
        nr_arena_free(&a);
    }
    free(buf);
    nr_cache_close(c);
    return bad ? 1 : 0;
}

static void test_concurrency(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/concurrent", root);
    pid_t pids[WRITERS];
    fflush(stdout);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) _exit(writer_process(dir, (uint32_t)w));
        CHECK(pids[w] > 0, "fork failed");
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        if (pids[w] <= 0) continue;
        waitpid(pids[w], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", w, status);
    }
    /* Afterwards every shared key holds one writer's whole payload. */
    NrCache *c;
    nr_cache_open(dir, &c);
    NrArena a;
    nr_arena_init(&a);
    for (uint32_t key_id = 0; key_id < SHARED_KEYS; key_id++) {
        char name[32];
        snprintf(name, sizeof name, "concurrent %u", key_id);
        NrCacheKey k = key_of(name);
        const void *data;
        size_t len;
        int hit = nr_cache_get(c, &k, &a, &data, &len);
        CHECK(hit && payload_valid(data, len, key_id), "shared key %u invalid after the race", key_id);
    }
    CHECK(count_prefix(dir, ".tmp-") == 0, "temporary files left behind by concurrent writers");
    nr_arena_free(&a);
    nr_cache_close(c);
}

/* ---- environment and degradation ---- */

static void test_environment(void) {
    char want[1024];
    NrCache *c;
    unsetenv("NEREID_NO_CACHE");

    snprintf(want, sizeof want, "%s/env/explicit/dir", root);
    setenv("NEREID_CACHE_DIR", want, 1);
    setenv("XDG_CACHE_HOME", "/nonexistent-xdg", 1);
    CHECK(nr_cache_open(NULL, &c) == NR_CACHE_READ_WRITE, "NEREID_CACHE_DIR: %s", nr_cache_warning(c));
    CHECK(strcmp(nr_cache_dir(c), want) == 0, "dir %s, want %s", nr_cache_dir(c), want);
    CHECK(file_exists(want), "NEREID_CACHE_DIR not created");
    NrCacheKey k = key_of("env");
    CHECK(nr_cache_put(c, &k, "v", 1) == 0, "put in NEREID_CACHE_DIR");
    nr_cache_close(c);

    /* An explicit directory wins over the environment. */
    char expl[512];
    snprintf(expl, sizeof expl, "%s/env/argument", root);
    nr_cache_open(expl, &c);
    CHECK(strcmp(nr_cache_dir(c), expl) == 0, "argument ignored: %s", nr_cache_dir(c));
    nr_cache_close(c);

    unsetenv("NEREID_CACHE_DIR");
    char xdg[512];
    snprintf(xdg, sizeof xdg, "%s/env/xdg", root);
    setenv("XDG_CACHE_HOME", xdg, 1);
    snprintf(want, sizeof want, "%s/nereid", xdg);
    nr_cache_open(NULL, &c);
    CHECK(strcmp(nr_cache_dir(c), want) == 0, "XDG: dir %s, want %s", nr_cache_dir(c), want);
    nr_cache_close(c);

    setenv("NEREID_CACHE_DIR", "", 1);  /* empty counts as unset */
    setenv("XDG_CACHE_HOME", "relative/xdg", 1);  /* relative XDG paths are ignored */
    char home[512];
    snprintf(home, sizeof home, "%s/env/home", root);
    setenv("HOME", home, 1);
    snprintf(want, sizeof want, "%s/.cache/nereid", home);
    nr_cache_open(NULL, &c);
    CHECK(strcmp(nr_cache_dir(c), want) == 0, "HOME: dir %s, want %s", nr_cache_dir(c), want);
    nr_cache_close(c);

    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK(nr_cache_open(NULL, &c) == NR_CACHE_DISABLED, "no directory at all not disabled");
    CHECK(strstr(nr_cache_warning(c), "no cache directory") != NULL, "warning: %s", nr_cache_warning(c));
    nr_cache_close(c);

    setenv("HOME", home, 1);
    setenv("NEREID_NO_CACHE", "1", 1);
    CHECK(nr_cache_open(NULL, &c) == NR_CACHE_DISABLED && nr_cache_warning(c)[0] == 0,
          "NEREID_NO_CACHE=1 did not disable quietly");
    nr_cache_close(c);
    setenv("NEREID_NO_CACHE", "0", 1);
    CHECK(nr_cache_open(NULL, &c) == NR_CACHE_READ_WRITE, "NEREID_NO_CACHE=0 disabled the cache");
    nr_cache_close(c);
    unsetenv("NEREID_NO_CACHE");
    unsetenv("HOME");
}

static void test_unwritable(void) {
    NrArena a;
    nr_arena_init(&a);
    const void *data;
    size_t len;
    NrCacheKey k = key_of("unwritable");

    /* A directory that cannot be created (a file is in the way). */
    char file[512], dir[600];
    snprintf(file, sizeof file, "%s/a-file", root);
    write_file(file, "x", 1);
    snprintf(dir, sizeof dir, "%s/sub/cache", file);
    NrCache *c;
    CHECK(nr_cache_open(dir, &c) == NR_CACHE_DISABLED, "cache under a file not disabled");
    CHECK(strstr(nr_cache_warning(c), "cannot create cache directory") != NULL, "warning: %s",
          nr_cache_warning(c));
    CHECK(nr_cache_put(c, &k, "x", 1) == -1, "put into a disabled cache succeeded");
    CHECK(nr_cache_get(c, &k, &a, &data, &len) == 0, "get from a disabled cache hit");
    nr_cache_close(c);

    /* The directory disappears after open: put fails, get misses, no crash. */
    char gone[512];
    snprintf(gone, sizeof gone, "%s/gone", root);
    nr_cache_open(gone, &c);
    rm_rf(gone);
    CHECK(nr_cache_put(c, &k, "x", 1) == -1, "put into a removed directory succeeded");
    CHECK(nr_cache_warning(c)[0] != 0, "no warning after a failed put");
    CHECK(nr_cache_get(c, &k, &a, &data, &len) == 0, "get from a removed directory hit");
    nr_cache_close(c);

    /* Permission bits do not stop root; check them only as another user. */
    if (geteuid() != 0) {
        char ro[512];
        snprintf(ro, sizeof ro, "%s/readonly", root);
        NrCache *w;
        nr_cache_open(ro, &w);
        CHECK(nr_cache_put(w, &k, "stored", 6) == 0, "put before chmod");
        nr_cache_close(w);
        chmod(ro, 0555);
        CHECK(nr_cache_open(ro, &c) == NR_CACHE_READ_ONLY, "read-only directory not detected");
        CHECK(strstr(nr_cache_warning(c), "not writable") != NULL, "warning: %s", nr_cache_warning(c));
        CHECK(nr_cache_get(c, &k, &a, &data, &len) == 1 && len == 6, "read-only cache does not read");
        NrCacheKey k2 = key_of("new");
        CHECK(nr_cache_put(c, &k2, "x", 1) == -1, "put into a read-only cache succeeded");
        nr_cache_close(c);
        char below[600];
        snprintf(below, sizeof below, "%s/below", ro);
        CHECK(nr_cache_open(below, &c) == NR_CACHE_DISABLED, "directory under a read-only one not disabled");
        nr_cache_close(c);
        chmod(ro, 0755);
    }
    nr_arena_free(&a);
}

int main(void) {
    rng_state = (uint64_t)time(NULL) * 6364136223846793005u + (uint64_t)getpid();
    snprintf(root, sizeof root, "/tmp/nereid-test-cache-XXXXXX");
    if (!mkdtemp(root)) {
        printf("FAIL cannot create a scratch directory\n");
        return 1;
    }
    test_sha256();
    test_keys();
    test_round_trip();
    test_corruption();
    test_concurrency();
    test_environment();
    test_unwritable();
    rm_rf(root);
    if (failures) printf("test_cache: %d checks FAILED\n", failures);
    else printf("test_cache: OK\n");
    return failures ? 1 : 0;
}
