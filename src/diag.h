/* diag.h - user-facing diagnostics.
 *
 * Every user error is recorded as an NrDiag with a source location and
 * rendered as
 *     file:line:col: error: message
 *         source line
 *             ^
 * Diagnostics are collected, never printed by the library; the CLI prints
 * them and the Python layer raises them.  A location refers to an NrSource
 * registered in the NrSources table of the compilation. */
#ifndef NR_DIAG_H
#define NR_DIAG_H

#include "arena.h"

#include <stdint.h>

typedef struct NrLoc {
    uint32_t file;  /* index into NrSources; 0 = unknown */
    uint32_t line;  /* 1-based; 0 = unknown */
    uint32_t col;   /* 1-based */
} NrLoc;

typedef struct NrSource {
    const char *name;  /* file name as given by the user */
    const char *text;  /* whole text, NUL-terminated */
    size_t len;
    int line_offset;   /* added to every line number shown (for extracted snippets) */
} NrSource;

typedef struct NrSources {
    NrSource *v;  /* v[0] is the "unknown" file */
    int n, cap;
} NrSources;

typedef enum { NR_SEV_ERROR, NR_SEV_WARNING, NR_SEV_NOTE } NrSeverity;

typedef struct NrDiag {
    NrSeverity sev;
    NrLoc loc;
    const char *msg;
} NrDiag;

typedef struct NrDiags {
    NrArena *arena;
    NrSources *sources;
    NrDiag *v;
    int n, cap;
    int nerrors;
    int max_errors;  /* stop recording errors after this many (0 = 50) */
} NrDiags;

void nr_sources_init(NrSources *s, NrArena *a);
/* Register a source text; returns its file index (>= 1).  text is copied. */
uint32_t nr_sources_add(NrSources *s, NrArena *a, const char *name, const char *text, size_t len);

void nr_diags_init(NrDiags *d, NrArena *a, NrSources *s);
void nr_error(NrDiags *d, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nr_warning(NrDiags *d, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nr_note(NrDiags *d, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int nr_has_errors(const NrDiags *d) { return d->nerrors > 0; }

/* Render one diagnostic (with source line and caret) into the arena. */
char *nr_diag_render(NrArena *a, const NrSources *s, const NrDiag *dg);
/* Render all diagnostics, one after another. */
char *nr_diags_render(NrArena *a, const NrDiags *d);
/* Source line `line` of file `file` (without newline) into the arena, or "". */
char *nr_source_line(NrArena *a, const NrSources *s, NrLoc loc);

#endif
