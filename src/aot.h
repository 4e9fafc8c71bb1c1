/* aot.h - ahead-of-time compilation of kernels to C (`nereid aot`), and the
 * CUDA toolkit programs around it (ptxas, cuobjdump).
 *
 *   kernel source + signatures + configs + targets
 *     -> nr_compile per (config, specialization, target)          PTX
 *     -> ptxas per target                                        cubins, resource use
 *     -> C text: embedded cubins and PTX, a loader choosing the binary for the device,
 *        a dispatcher choosing the specialization (and config) for the arguments,
 *        typed launchers computing the grid from the grid expression
 *
 * The generated C needs only <cuda.h> and libcuda; docs/aot.md describes its
 * interface.  Nothing here prints: results and rendered diagnostics are
 * returned as text. */
#ifndef NR_AOT_H
#define NR_AOT_H

#include "arena.h"
#include "diag.h"
#include "nereid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- CUDA toolkit programs ---- */

/* Where nr_tool_find looks, in order, for messages. */
#define NR_TOOL_SEARCH_TEXT "on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin"

/* The path of toolkit program `name` ("ptxas", "cuobjdump", ...), searched
 * NR_TOOL_SEARCH_TEXT; NULL when absent. */
const char *nr_tool_find(NrArena *a, const char *name);

/* A private temporary directory and the files made in it. */
typedef struct NrTmpDir {
    char path[4096];
    char **files;
    int nfiles, capfiles;
} NrTmpDir;

/* Create a temporary directory under $TMPDIR (else /tmp).  Returns NULL or
 * an error message. */
const char *nr_tmpdir_open(NrArena *a, NrTmpDir *t);
/* Write bytes to a new file `name` of t; returns its path, or NULL with *err. */
const char *nr_tmpdir_write(NrArena *a, NrTmpDir *t, const char *name, const void *data, size_t len, const char **err);
/* The path of `name` in t, registered for removal. */
const char *nr_tmpdir_path(NrArena *a, NrTmpDir *t, const char *name);
/* Remove every registered file and the directory. */
void nr_tmpdir_close(NrTmpDir *t);

/* Run argv[0] (a path) with argv, stdout and stderr together into *output
 * (NUL-terminated, at most 64 MiB kept).  Returns the exit status (128 + n
 * for signal n), or -1 with *output holding why it could not run. */
int nr_tool_run(NrArena *a, NrTmpDir *t, const char *const *argv, char **output);

/* Assemble PTX with ptxas (NULL: nr_tool_find) for `arch` ("sm_90a") with -v,
 * returning the cubin and the resource use ptxas reports.  Returns NULL, or
 * an error message (ptxas missing, or its log when it failed). */
const char *nr_ptxas_assemble(NrArena *a, const char *ptxas, const char *ptx, const char *arch, const void **cubin,
                              size_t *size, NrAsmInfo *info);
/* Read `ptxas -v` output (the first kernel in it) into info's resource fields. */
void nr_ptxas_parse_info(const char *log, NrAsmInfo *info);

/* SASS of a cubin, through cuobjdump -sass (else nvdisasm).  Returns NULL,
 * or an error message. */
const char *nr_disassemble(NrArena *a, const void *cubin, size_t size, char **sass);

/* "sm_90a" -> 90, *arch_specific = true.  False when not a target Nereid
 * emits PTX for (sm_80, sm_86, sm_89, sm_90, sm_90a). */
bool nr_aot_parse_arch(const char *s, int *sm, bool *arch_specific);

/* ---- grid and condition expressions ----
 *
 *   cond    := and_ (('or' | '||') and_)*
 *   and_    := not_ (('and' | '&&') not_)*
 *   not_    := ('not' | '!') not_ | cmp
 *   cmp     := sum [('<' | '<=' | '>' | '>=' | '==' | '!=') sum]
 *   sum     := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '//' | '%') unary)*
 *   unary   := '-' unary | atom
 *   atom    := INT | NAME | NAME '(' cond (',' cond)* ')' | '(' cond ')'
 *   NAME    := identifier, dotted prefixes of functions allowed (triton.cdiv)
 *
 * Integers are int64; '/' and '//' divide rounding toward negative infinity
 * and '%' takes the divisor's sign, as in Python.  Functions: cdiv(a, b),
 * min(a, b, ...), max(a, b, ...), next_power_of_2(a).  Overflow and division
 * by zero make the whole evaluation fail (the generated launcher then returns
 * CUDA_ERROR_INVALID_VALUE). */
typedef enum NrAotExprKind {
    NR_AE_INT,
    NR_AE_NAME,
    NR_AE_NEG,
    NR_AE_NOT,
    NR_AE_BINARY,   /* op: + - * // % < <= > >= == != and or */
    NR_AE_CALL,     /* name: cdiv, min, max, next_power_of_2 */
} NrAotExprKind;

typedef struct NrAotExpr NrAotExpr;
struct NrAotExpr {
    NrAotExprKind kind;
    NrLoc loc;
    bool is_bool;         /* a comparison or logical result */
    int64_t value;        /* NR_AE_INT */
    const char *name;     /* NR_AE_NAME, NR_AE_CALL */
    const char *op;       /* NR_AE_BINARY */
    NrAotExpr **args;     /* operands */
    int nargs;
};

/* Parse the expression text[start, end) of source `file` (registered in
 * d->sources; columns count from the start of text).  Returns NULL with
 * diagnostics on a syntax or type error. */
NrAotExpr *nr_aot_parse_expr(NrArena *a, NrDiags *d, uint32_t file, const char *text, size_t start, size_t end);

/* How a name of an expression is bound: to a runtime integer argument (its C
 * name) or to a constant. */
typedef struct NrAotBinding {
    const char *c_name;   /* NULL for a constant */
    int64_t value;
} NrAotBinding;

/* Resolves a name; returns false (having reported why) when it cannot be used. */
typedef bool (*NrAotResolver)(void *user, const NrAotExpr *name, NrAotBinding *out, NrDiags *d);

/* C99 text of e: an int64_t (or int, for booleans) expression that calls the
 * helpers <prefix>add, sub, mul, div, mod, cdiv, min, max and npow2 with
 * `ok`, an int *, cleared on overflow (min and max take no `ok`).  NULL after
 * reporting an unresolvable name. */
char *nr_aot_expr_to_c(NrArena *a, const NrAotExpr *e, const char *prefix, NrAotResolver resolve, void *user,
                       NrDiags *d);

/* ---- generation ---- */

typedef struct NrAotRequest {
    const char *src;          /* the kernel module's text */
    size_t len;
    const char *filename;
    const char *kernel;
    const char **sigs;        /* one or more specializations */
    int nsigs;
    const char **archs;       /* targets of the cubins: "sm_80", "sm_90a", ... */
    int narchs;
    const char *ptx_arch;     /* target of the fallback PTX; NULL: the highest listed (without 'a'); "none" */
    bool ptx_only;            /* embed PTX for each target instead of cubins (no ptxas needed) */
    const char *grid;         /* "cdiv(n, 1024)", up to three comma-separated expressions; NULL: none */
    const char **configs;     /* "BLOCK=64, num_warps=4 [if COND]"; none: one config */
    int nconfigs;
    const char *key;          /* "M, N, K": tune among configs per value of these arguments; NULL: no tuning */
    int num_warps, num_stages;/* defaults of every config (0: 4 and 3) */
    const char *name;         /* identifier prefix of the generated functions, and file base name */
    const char *ptxas;        /* NULL: nr_tool_find("ptxas") */
    const char *command;      /* the command line, quoted into the generated files (may be NULL) */
} NrAotRequest;

/* One embedded binary, for reports. */
typedef struct NrAotBinary {
    int variant;              /* config * nsigs + specialization */
    const char *arch;         /* "sm_90a" */
    bool is_ptx;
    size_t bytes;
    int threads;
    int shared_bytes;         /* dynamic shared memory per launch */
    NrAsmInfo info;           /* from ptxas (cubins) */
} NrAotBinary;

typedef struct NrAotResult {
    char *header;             /* NAME.h */
    char *source;             /* NAME.c */
    const char *messages;     /* rendered errors, or warnings on success; "" if none */
    NrAotBinary *bins;
    int nbins;
    int nvariants;
} NrAotResult;

/* Generate NAME.h and NAME.c.  Returns false with out->messages on error. */
bool nr_aot_generate(NrArena *a, const NrAotRequest *req, NrAotResult *out);

#endif
