/* aot_occupancy.c - the per-SM limits of the GPUs Nereid targets, and the
 * occupancy a kernel reaches on them.
 *
 * The limits are those of the CUDA C++ Programming Guide's "technical
 * specifications per compute capability" (and of cuda_occupancy.h, which
 * implements the same rules):
 *
 *              threads  warps  blocks  regs   shared/SM  opt-in/block  GPUs
 *     sm_80    2048     64     32      64K    164 KB     163 KB        A100, A30
 *     sm_86    1536     48     16      64K    100 KB      99 KB        A10, A40, RTX 30xx
 *     sm_89    1536     48     24      64K    100 KB      99 KB        L4, L40, RTX 40xx
 *     sm_90    2048     64     32      64K    228 KB     227 KB        H100, H200, GH200
 *
 * Every one: at most 1024 threads and 64K registers per block, 255 registers
 * per thread, registers given to warps in units of 256, shared memory given
 * to blocks in units of 128 bytes, and 1 KB of shared memory per resident
 * block kept by the driver.
 *
 * The number of blocks resident on one SM is the smallest of what each
 * resource allows:
 *   warps:     max_warps_per_sm / warps per block
 *   blocks:    max_blocks_per_sm
 *   registers: warps per SM that the register file holds / warps per block,
 *              a warp taking roundup(regs * 32, 256) registers, the file
 *              split evenly among the SM's 4 schedulers
 *   shared:    shared_per_sm / roundup(shared + 1 KB, 128)
 * The shared-memory carveout is taken at its largest, as the driver chooses
 * it for a kernel that needs the shared memory. */
#include "nereid.h"

#include "util.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SCHEDULERS_PER_SM = 4 };

static const NrSmLimits LIMITS[] = {
    {80, "A100, A30", 2048, 64, 32, 1024, 65536, 65536, 255, 256, 167936, 166912, 1024, 128},
    {86, "A10, A40, RTX 3090", 1536, 48, 16, 1024, 65536, 65536, 255, 256, 102400, 101376, 1024, 128},
    {89, "L4, L40, RTX 4090", 1536, 48, 24, 1024, 65536, 65536, 255, 256, 102400, 101376, 1024, 128},
    {90, "H100, H200, GH200", 2048, 64, 32, 1024, 65536, 65536, 255, 256, 233472, 232448, 1024, 128},
};

/* Product names and the architecture they are. */
static const struct {
    const char *name;
    int sm;
} GPUS[] = {
    {"a100", 80}, {"a30", 80},     {"a800", 80},    {"a10", 86},     {"a10g", 86},    {"a40", 86},
    {"a16", 86},  {"a2", 86},      {"rtx3090", 86}, {"rtx3080", 86}, {"rtxa6000", 86}, {"l4", 89},
    {"l40", 89},  {"l40s", 89},    {"rtx4090", 89}, {"rtx4080", 89}, {"rtx6000ada", 89}, {"h100", 90},
    {"h200", 90}, {"gh200", 90},   {"h800", 90},    {"h20", 90},
};

const NrSmLimits *nr_sm_limits(int sm) {
    for (size_t i = 0; i < NR_COUNTOF(LIMITS); i++)
        if (LIMITS[i].sm == sm) return &LIMITS[i];
    return NULL;
}

const NrSmLimits *nr_sm_limits_table(int *count) {
    *count = (int)NR_COUNTOF(LIMITS);
    return LIMITS;
}

static const NrSmLimits *by_product(const char *s) {
    for (size_t i = 0; i < NR_COUNTOF(GPUS); i++)
        if (strcmp(s, GPUS[i].name) == 0) return nr_sm_limits(GPUS[i].sm);
    return NULL;
}

/* "sm_90a", "sm80", "H100", "NVIDIA H100 80GB HBM3", "a100-sxm4-40gb",
 * "GeForce RTX 4090": case and separators do not matter; a product name is
 * its first word, or first two ("RTX 4090"), after "NVIDIA", "GeForce" and
 * "Tesla". */
const NrSmLimits *nr_sm_limits_by_name(const char *name) {
    if (!name) return NULL;
    char words[4][32];
    int n = 0;
    size_t k = 0;
    for (const char *p = name;; p++) {
        bool sep = !*p || isspace((unsigned char)*p) || *p == '-' || *p == '_';
        if (!sep && k + 1 < sizeof words[0] && n < 4) words[n][k++] = (char)tolower((unsigned char)*p);
        if (sep && k) {
            words[n][k] = 0;
            k = 0;
            if (strcmp(words[n], "nvidia") && strcmp(words[n], "geforce") && strcmp(words[n], "tesla") && n < 4) n++;
        }
        if (!*p) break;
    }
    if (n == 0) return NULL;
    /* sm_90a, sm90 */
    const char *num = strcmp(words[0], "sm") == 0 && n > 1 ? words[1]
                      : strncmp(words[0], "sm", 2) == 0    ? words[0] + 2
                                                           : NULL;
    if (num && isdigit((unsigned char)num[0])) {
        char *end;
        long v = strtol(num, &end, 10);
        if (*end == 'a') end++;
        return *end ? NULL : nr_sm_limits((int)v);
    }
    const NrSmLimits *l = by_product(words[0]);
    if (!l && n > 1) {
        char two[64];
        snprintf(two, sizeof two, "%s%s", words[0], words[1]);
        l = by_product(two);
    }
    return l;
}

static int roundup(int x, int unit) { return (x + unit - 1) / unit * unit; }

int nr_occupancy(const NrSmLimits *lim, int threads, int regs, int shared_bytes, NrOccupancy *out) {
    if (!lim || !out || threads < 1 || regs < 0 || shared_bytes < 0) return -1;
    memset(out, 0, sizeof *out);
    int warps = (threads + 31) / 32;
    out->limit_warps = threads > lim->max_threads_per_block ? 0 : lim->max_warps_per_sm / warps;
    out->limit_blocks = lim->max_blocks_per_sm;
    /* Registers: per warp, then per scheduler's share of the file. */
    int per_warp = roundup(regs * 32, lim->reg_alloc_unit);
    if (regs > lim->max_regs_per_thread || (long)per_warp * roundup(warps, SCHEDULERS_PER_SM) > lim->regs_per_block)
        out->limit_regs = 0;
    else if (per_warp == 0)
        out->limit_regs = INT_MAX;
    else
        out->limit_regs = (lim->regs_per_sm / SCHEDULERS_PER_SM / per_warp) * SCHEDULERS_PER_SM / warps;
    /* Shared memory, with the driver's reserve. */
    if (shared_bytes > lim->shared_per_block_optin) {
        out->limit_shared = 0;
    } else {
        long per_block = roundup(shared_bytes + lim->shared_reserved_per_block, lim->shared_alloc_unit);
        out->limit_shared = (int)(lim->shared_per_sm / per_block);
    }
    static const char *const names[] = {"warps", "blocks", "registers", "shared memory"};
    const int limits[] = {out->limit_warps, out->limit_blocks, out->limit_regs, out->limit_shared};
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (limits[i] < limits[best]) best = i;
    out->blocks_per_sm = limits[best];
    out->limiter = names[best];
    out->warps_per_sm = out->blocks_per_sm * warps;
    out->occupancy = (double)out->warps_per_sm / lim->max_warps_per_sm;
    return 0;
}
