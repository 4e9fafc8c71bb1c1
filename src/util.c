/* util.c - internal errors. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void nr_ice_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nereid: internal error at %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void nr_fatal_oom(void) {
    fputs("nereid: out of memory\n", stderr);
    abort();
}
