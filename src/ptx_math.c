/* ptx_math.c - Nereid's math library on the scalar layer (stub). */
#include "ptx.h"

#include <string.h>

const char *const nr_pm_names[] = {NULL};

bool nr_pm_call(NrPtx *p, const char *name, NrPk k, int n, const NrPv *x, NrPv *out) {
    (void)p, (void)name, (void)k, (void)n, (void)x, (void)out;
    return false;
}
