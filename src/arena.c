/* arena.c - bump allocator; see arena.h. */
#include "arena.h"
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct NrArenaChunk {
    NrArenaChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { NR_CHUNK_MIN = 64 * 1024 };

void nr_arena_init(NrArena *a) { memset(a, 0, sizeof *a); }

/* Each thread keeps up to NR_CACHE_MAX freed chunks of the standard size for
 * its next arenas.  A compilation creates and frees a dozen scratch arenas and
 * a program compiles kernel after kernel; without the cache every one of them
 * takes fresh pages from the system (malloc gives the top of its heap back
 * once a chunk is freed), and those page faults cost as much as a third of a
 * compilation.  The chunks are freed when their thread exits. */
enum { NR_CACHE_MAX = 128 }; /* 8 MiB */

static _Thread_local NrArenaChunk *cache_head;
static _Thread_local int cache_count;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_key_ok;

static void cache_release(void *unused) {
    (void)unused;
    while (cache_head) {
        NrArenaChunk *next = cache_head->next;
        free(cache_head);
        cache_head = next;
    }
    cache_count = 0;
}

static void cache_key_create(void) { cache_key_ok = pthread_key_create(&cache_key, cache_release) == 0; }

/* Keep c for this thread's next arena, or free it. */
static void chunk_release(NrArenaChunk *c) {
    if (c->cap == NR_CHUNK_MIN && cache_count < NR_CACHE_MAX) {
        if (!cache_head) { /* arm the thread-exit release (the key's value only has to be non-NULL) */
            pthread_once(&cache_once, cache_key_create);
            if (!cache_key_ok || pthread_setspecific(cache_key, &cache_head) != 0) {
                free(c);
                return;
            }
        }
        c->next = cache_head;
        cache_head = c;
        cache_count++;
        return;
    }
    free(c);
}

void nr_arena_free(NrArena *a) {
    NrArenaChunk *c = a->head;
    while (c) {
        NrArenaChunk *next = c->next;
        chunk_release(c);
        c = next;
    }
    memset(a, 0, sizeof *a);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* size bytes (a multiple of 16), not cleared. */
static void *alloc_raw(NrArena *a, size_t size) {
    NrArenaChunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > NR_CHUNK_MIN ? size : NR_CHUNK_MIN;
        if (cap == NR_CHUNK_MIN && cache_head) {
            c = cache_head;
            cache_head = c->next;
            cache_count--;
        } else {
            c = malloc(sizeof *c + cap);
            if (!c) nr_fatal_oom();
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->last = p;
    a->last_size = size;
    a->total += size;
    return p;
}

void *nr_alloc(NrArena *a, size_t size) {
    size = align16(size ? size : 1);
    void *p = alloc_raw(a, size);
    memset(p, 0, size);
    return p;
}

void *nr_alloc_uninit(NrArena *a, size_t size) { return alloc_raw(a, align16(size ? size : 1)); }

void *nr_arena_grow(NrArena *a, void *p, size_t old_size, size_t new_size) {
    if (!p) return nr_alloc(a, new_size);
    if (new_size <= old_size) return p;
    NrArenaChunk *c = a->head;
    if (p == a->last && c) {
        size_t need = align16(new_size) - a->last_size;
        if (c->cap - c->used >= need) {
            memset((unsigned char *)p + old_size, 0, align16(new_size) - old_size);
            c->used += need;
            a->last_size += need;
            a->total += need;
            return p;
        }
    }
    size_t size = align16(new_size);
    unsigned char *q = alloc_raw(a, size);
    memcpy(q, p, old_size);
    memset(q + old_size, 0, size - old_size);
    return q;
}

char *nr_strndup(NrArena *a, const char *s, size_t n) {
    char *p = nr_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *nr_strdup(NrArena *a, const char *s) { return nr_strndup(a, s, strlen(s)); }

char *nr_sprintf(NrArena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = nr_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *nr_arena_reserve(NrArena *a, void *p, int n, int *cap, size_t elem) {
    if (n < *cap) return p;
    int nc = *cap ? 2 * *cap : 8;
    p = nr_arena_grow(a, p, elem * (size_t)*cap, elem * (size_t)nc);
    *cap = nc;
    return p;
}
