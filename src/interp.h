/* interp.h - the reference interpreter: runs a kernel's block IR for every
 * program of a grid on host memory.  It defines Nereid's semantics.
 *
 * Pointers are virtual: buffer i (0-based) occupies addresses
 * [NR_INTERP_BASE(i), NR_INTERP_BASE(i) + bytes), so pointer arithmetic is
 * plain integer arithmetic and every access is checked against the buffers.
 * The low bits of each buffer's host address are kept in its virtual base so
 * that alignment facts hold.  A bad access stops the launch with an error
 * naming the kernel's source line, the program id and the element index. */
#ifndef NR_INTERP_H
#define NR_INTERP_H

#include "ir.h"

#define NR_INTERP_SHIFT 40
#define NR_INTERP_BASE(i) (((uint64_t)(i) + 1) << NR_INTERP_SHIFT)

typedef enum NrInterpArgKind { NR_IA_BUFFER, NR_IA_INT, NR_IA_FLOAT } NrInterpArgKind;

/* One runtime argument: one per argument of the kernel function, in order. */
typedef struct NrInterpArg {
    NrInterpArgKind kind;
    void *data;      /* NR_IA_BUFFER: host memory, may be NULL when bytes == 0 */
    size_t bytes;
    const char *name;/* for messages; may be NULL */
    int64_t i;       /* NR_IA_INT: the value, sign- or zero-extended per the param's dtype */
    double f;        /* NR_IA_FLOAT */
} NrInterpArg;

typedef struct NrInterpOptions {
    FILE *print_out;       /* device_print output; NULL = stdout */
    uint64_t max_steps;    /* 0 = unlimited; otherwise stop after this many ops (hang guard) */
} NrInterpOptions;

/* Run kernel `f` (a module function with no remaining calls) on grid[0..2].
 * Returns false with diagnostics if the kernel faults or an assert fails. */
bool nr_interp_launch(NrFunc *f, const uint32_t grid[3], const NrInterpArg *args, int nargs,
                      const NrInterpOptions *opt, NrDiags *d);

#endif
