/* util.h - internal-error channel and small helpers shared by every phase.
 *
 * User errors are diagnostics (diag.h).  Internal errors - a broken invariant
 * inside Nereid itself - abort with the C file and line via NR_ICE. */
#ifndef NR_UTIL_H
#define NR_UTIL_H

#include <stddef.h>
#include <stdint.h>

_Noreturn void nr_ice_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
_Noreturn void nr_fatal_oom(void);

#define NR_ICE(...) nr_ice_at(__FILE__, __LINE__, __VA_ARGS__)
#define NR_ASSERT(c) ((c) ? (void)0 : nr_ice_at(__FILE__, __LINE__, "assertion failed: %s", #c))
#define NR_UNREACHABLE() nr_ice_at(__FILE__, __LINE__, "unreachable")
#define NR_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

static inline int nr_is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
/* floor(log2(x)) for x >= 1; 0 for x <= 1. */
static inline int nr_log2_floor(int64_t x) {
    int k = 0;
    while (x > 1) x >>= 1, k++;
    return k;
}

#endif
