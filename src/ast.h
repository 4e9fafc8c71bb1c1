/* ast.h - the syntax tree of a kernel module (the Triton dialect of Python).
 *
 * The parser (parse.c) reads a whole Python file.  Only these parts become
 * AST: the top-level `def`s whose decorator's last name is `jit` (kernels and
 * their helpers), top-level imports, and top-level assignments that parse as
 * kernel-language expressions (candidate constexpr globals).  All other
 * top-level code is skipped by indentation.  Every node carries a location. */
#ifndef NR_AST_H
#define NR_AST_H

#include "arena.h"
#include "diag.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct NrExpr NrExpr;
typedef struct NrStmt NrStmt;

typedef enum NrExprKind {
    NR_E_NAME,      /* name.id */
    NR_E_INT,       /* integer literal: lit.u (always >= 0; unary minus is separate) */
    NR_E_FLOAT,     /* float literal: lit.f */
    NR_E_BOOL,      /* True / False: lit.b */
    NR_E_NONE,      /* None */
    NR_E_STR,       /* string literal (adjacent literals concatenated): str */
    NR_E_ATTR,      /* attr.value . attr.name */
    NR_E_SUBSCRIPT, /* sub.value [ sub.idx... ] ; each index an expr, a NR_E_SLICE or NR_E_NONE */
    NR_E_CALL,      /* call.func ( call.args..., call.kw... ) */
    NR_E_BINOP,     /* bin.l bin.op bin.r, op an NrBinOp */
    NR_E_UNARY,     /* un.op un.x, op an NrUnOp */
    NR_E_BOOLOP,    /* bin.l and/or bin.r, op NR_BOOL_AND / NR_BOOL_OR */
    NR_E_COMPARE,   /* bin.l op bin.r, op an NrCmpOp (chains are rejected by the parser) */
    NR_E_IFEXP,     /* ifexp.then if ifexp.cond else ifexp.els */
    NR_E_TUPLE,     /* ( seq.v... ) or bare a, b */
    NR_E_LIST,      /* [ seq.v... ] */
    NR_E_SLICE,     /* slice.lo : slice.hi : slice.step, each may be NULL (only `:` is meaningful in kernels) */
    NR_E_ELLIPSIS,  /* ... */
} NrExprKind;

typedef enum NrBinOp {
    NR_BIN_ADD, NR_BIN_SUB, NR_BIN_MUL, NR_BIN_DIV, NR_BIN_FLOORDIV, NR_BIN_MOD, NR_BIN_POW,
    NR_BIN_LSHIFT, NR_BIN_RSHIFT, NR_BIN_BITAND, NR_BIN_BITOR, NR_BIN_BITXOR, NR_BIN_MATMUL,
} NrBinOp;

typedef enum NrUnOp { NR_UN_NEG, NR_UN_POS, NR_UN_INVERT, NR_UN_NOT } NrUnOp;
typedef enum NrBoolOp { NR_BOOL_AND, NR_BOOL_OR } NrBoolOp;
typedef enum NrCmpOp {
    NR_CMP_LT, NR_CMP_LE, NR_CMP_GT, NR_CMP_GE, NR_CMP_EQ, NR_CMP_NE,
    NR_CMP_IS, NR_CMP_ISNOT, NR_CMP_IN, NR_CMP_NOTIN,
} NrCmpOp;

typedef struct NrKwarg {
    const char *name;
    NrExpr *value;
    NrLoc loc;
} NrKwarg;

struct NrExpr {
    NrExprKind kind;
    NrLoc loc;
    union {
        struct { const char *id; } name;
        union { uint64_t u; double f; bool b; } lit;
        struct { const char *s; size_t len; } str;
        struct { NrExpr *value; const char *name; NrLoc name_loc; } attr;
        struct { NrExpr *value; NrExpr **idx; int nidx; } sub;
        struct { NrExpr *func; NrExpr **args; int nargs; NrKwarg *kw; int nkw; } call;
        struct { int op; NrExpr *l, *r; } bin;
        struct { int op; NrExpr *x; } un;
        struct { NrExpr *cond, *then, *els; } ifexp;
        struct { NrExpr **v; int n; } seq;
        struct { NrExpr *lo, *hi, *step; } slice;
    };
};

typedef struct NrStmtList {
    NrStmt **v;
    int n;
} NrStmtList;

typedef enum NrStmtKind {
    NR_S_EXPR,      /* expr */
    NR_S_ASSIGN,    /* assign.targets[0] = ... = assign.value ; a target may be a tuple/list, name, attr or subscript */
    NR_S_AUGASSIGN, /* aug.target aug.op= aug.value */
    NR_S_ANNASSIGN, /* ann.target : ann.annotation [= ann.value] */
    NR_S_IF,        /* if_.cond: if_.body else: if_.orelse (elif is an orelse holding one NR_S_IF) */
    NR_S_FOR,       /* for for_.target in for_.iter: for_.body */
    NR_S_WHILE,     /* while while_.cond: while_.body */
    NR_S_RETURN,    /* return [ret.value] (a tuple for several values) */
    NR_S_PASS,
    NR_S_ASSERT,    /* assert assert_.cond [, assert_.msg] */
} NrStmtKind;

struct NrStmt {
    NrStmtKind kind;
    NrLoc loc;
    union {
        NrExpr *expr;
        struct { NrExpr **targets; int ntargets; NrExpr *value; } assign;
        struct { NrExpr *target; int op; NrExpr *value; } aug;
        struct { NrExpr *target; NrExpr *annotation; NrExpr *value; } ann;
        struct { NrExpr *cond; NrStmtList body, orelse; } if_;
        struct { NrExpr *target; NrExpr *iter; NrStmtList body; } for_;
        struct { NrExpr *cond; NrStmtList body; } while_;
        struct { NrExpr *value; } ret;
        struct { NrExpr *cond, *msg; } assert_;
    };
};

typedef struct NrParamDecl {
    const char *name;
    NrExpr *annotation;   /* may be NULL; `tl.constexpr` marks a constexpr parameter */
    NrExpr *dflt;         /* default value, may be NULL */
    NrLoc loc;
} NrParamDecl;

typedef struct NrFuncDecl {
    const char *name;
    NrLoc loc;            /* of the name after `def` */
    NrParamDecl *params;
    int nparams;
    NrStmtList body;
    /* From the jit decorator's arguments, when given: */
    bool noinline;
    const char **do_not_specialize;  /* parameter names */
    int ndo_not_specialize;
} NrFuncDecl;

/* A top-level `NAME = value` or `NAME: annotation = value` whose value parsed. */
typedef struct NrGlobal {
    const char *name;
    NrExpr *annotation;   /* may be NULL */
    NrExpr *value;
    NrLoc loc;
} NrGlobal;

/* A top-level `import a.b.c as x` (module = "a.b.c", name = NULL, alias = "x"),
 * or `from a.b import c as x` (module = "a.b", name = "c", alias = "x").
 * alias is filled in with the bound name when there is no `as`. */
typedef struct NrImport {
    const char *module;
    const char *name;
    const char *alias;
    NrLoc loc;
} NrImport;

/* A top-level name bound by host code that is not a kernel, constexpr global or
 * import (another def, a class, an assignment that did not parse); kept so that
 * a kernel using it gets a precise error. */
typedef struct NrHostName {
    const char *name;
    NrLoc loc;
    const char *what;     /* "function", "class", "variable" */
} NrHostName;

typedef struct NrAstModule {
    uint32_t file;        /* NrSources index of the text */
    NrFuncDecl **funcs;  int nfuncs, capfuncs;
    NrGlobal *globals;   int nglobals, capglobals;
    NrImport *imports;   int nimports, capimports;
    NrHostName *hosts;   int nhosts, caphosts;
} NrAstModule;

/* Parse a whole Python file that was registered as source `file`.  Returns
 * NULL (and records diagnostics) if a kernel is malformed; host code never
 * produces errors. */
NrAstModule *nr_parse_module(NrArena *a, NrSources *src, uint32_t file, NrDiags *d);
NrFuncDecl *nr_ast_find_func(const NrAstModule *m, const char *name);
/* Debug dump of a module's AST as S-expressions (tests of the parser). */
char *nr_ast_dump(NrArena *a, const NrAstModule *m);

#endif
