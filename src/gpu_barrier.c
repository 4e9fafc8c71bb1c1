/* gpu_barrier.c - placeholder */
#include "gpu_impl.h"
bool nr_gpu_barriers(NrModule *m, NrDiags *d) { (void)m, (void)d; return true; }
