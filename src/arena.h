/* arena.h - one bump allocator per compilation.
 *
 * Everything a compilation allocates (AST, IR, diagnostics, strings) comes
 * from one NrArena and is released by one nr_arena_free() (its standard-size
 * chunks to the calling thread's cache, which the thread's next arenas use).  Allocations are
 * zeroed and 16-byte aligned.  Growable arrays use nr_arena_grow(), which
 * extends the newest allocation in place and otherwise copies. */
#ifndef NR_ARENA_H
#define NR_ARENA_H

#include <stddef.h>

typedef struct NrArenaChunk NrArenaChunk;
typedef struct NrArena {
    NrArenaChunk *head;   /* newest chunk first */
    void *last;           /* most recent allocation, for in-place growth */
    size_t last_size;
    size_t total;         /* bytes handed out, for statistics */
} NrArena;

void nr_arena_init(NrArena *a);
void nr_arena_free(NrArena *a);
void *nr_alloc(NrArena *a, size_t size);
/* nr_alloc without the zeroing, for buffers written before they are read
 * (large text and token arrays, whose clearing would be pure cost). */
void *nr_alloc_uninit(NrArena *a, size_t size);
/* Resize p (allocated from a with old_size bytes) to new_size bytes. */
void *nr_arena_grow(NrArena *a, void *p, size_t old_size, size_t new_size);
char *nr_strndup(NrArena *a, const char *s, size_t n);
char *nr_strdup(NrArena *a, const char *s);
/* printf into the arena. */
char *nr_sprintf(NrArena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Make room for element n of an array with capacity *cap (doubling). */
void *nr_arena_reserve(NrArena *a, void *p, int n, int *cap, size_t elem);

/* Append to a growable array of T in an arena (ptr, int count, int capacity);
 * evaluates to a pointer to the new, zeroed element. */
#define NR_PUSH(arena, ptr, n, cap) \
    ((ptr) = nr_arena_reserve((arena), (ptr), (n), &(cap), sizeof(*(ptr))), &(ptr)[(n)++])

#endif
