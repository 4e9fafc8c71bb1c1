/* ir_print.c - the IR's text form, written out (docs/ir.md).
 *
 * The printer is generic: every op is printed from its op-table row and its
 * fields alone, as
 *     [%r0, %r1 =] name [operand, ...] [{attr = value, ...}] [: type, ...] [region ...] [loc(L:C)]
 * Values are numbered %0, %1, ... in the order their definitions appear in
 * the text (op results before the arguments of the op's regions); function
 * parameters keep their name hint when it is a usable identifier.  The output
 * is deterministic and reads back (ir_parse.c) to a module that prints the
 * same text byte for byte.
 *
 * The printer never fails on malformed IR: a value that has no number yet (a
 * use before its definition, an out-of-range id) prints as %<undef:ID>, which
 * the parser rejects, so broken IR cannot silently read back as valid. */
#include "gpu.h"
#include "ir.h"
#include "util.h"

#include <math.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

typedef struct Printer {
    const NrModule *m;
    const NrFunc *f;
    FILE *out;
    bool locs;
    int32_t *num;         /* per value: its number, or -1 while unnumbered */
    const char **pname;   /* per value: a parameter's printed name, or NULL */
    int32_t next;         /* next value number */
} Printer;

/* --- scalars ----------------------------------------------------------------------------------- */
/* The shortest %g form of v that reads back to exactly v, always marked as a
 * float: it contains '.' or 'e', or is nan, inf or -inf.  NaN payloads and
 * signs are not kept.  buf must hold 40 bytes. */
static void format_double(double v, char *buf) {
    if (isnan(v)) {
        strcpy(buf, "nan");
        return;
    }
    if (isinf(v)) {
        strcpy(buf, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (memcmp(&back, &v, sizeof v) == 0) break;
    }
    /* The text always uses '.', whatever the C locale's decimal point. */
    for (char *c = buf; *c; c++)
        if (!strchr("0123456789e+-", *c)) *c = '.';
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
}

static void print_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (*p < 0x20 || *p >= 0x7f) fprintf(out, "\\x%02x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* [A-Za-z_][A-Za-z0-9_]* */
static bool is_ident(const char *s) {
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
    for (const char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

/* A function name prints bare when it is made of [A-Za-z0-9_.$] (and not
 * empty), else quoted. */
static void print_func_name(FILE *out, const char *s) {
    bool bare = s && *s;
    for (const char *p = s; bare && *p; p++)
        bare = *p == '_' || *p == '.' || *p == '$' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
               (*p >= '0' && *p <= '9');
    fputc('@', out);
    if (bare) fputs(s, out);
    else print_string(out, s ? s : "");
}

static void print_attr_value(FILE *out, const NrAttr *a) {
    char buf[40];
    switch ((NrAttrKind)a->kind) {
    case NR_AK_INT: fprintf(out, "%lld", (long long)a->v.i); return;
    case NR_AK_BOOL: fputs(a->v.i ? "true" : "false", out); return;
    case NR_AK_FLOAT:
        format_double(a->v.f, buf);
        fputs(buf, out);
        return;
    case NR_AK_STR: print_string(out, a->v.s ? a->v.s : ""); return;
    case NR_AK_INTS:
        fputc('[', out);
        for (int i = 0; i < a->n; i++) fprintf(out, "%s%lld", i ? ", " : "", (long long)a->v.ints[i]);
        fputc(']', out);
        return;
    }
    fputs("<bad attribute>", out);
}

static const char *attr_name(const NrAttr *a) { return a->name < NR_A_COUNT ? nr_attr_names[a->name] : "invalid"; }

/* Attributes sorted by name; the op has few, so an insertion pass will do. */
static void print_attrs(FILE *out, const NrOp *op) {
    if (op->nattrs <= 0) return;
    const NrAttr *sorted[64];
    int n = op->nattrs < 64 ? op->nattrs : 64;
    for (int i = 0; i < n; i++) {
        const NrAttr *a = &op->attrs[i];
        int j = i;
        while (j > 0 && strcmp(attr_name(sorted[j - 1]), attr_name(a)) > 0) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = a;
    }
    fputs(" {", out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s%s = ", i ? ", " : "", attr_name(sorted[i]));
        print_attr_value(out, sorted[i]);
    }
    fputc('}', out);
}

static void print_type(const Printer *p, NrTypeId t) {
    if (t <= 0 || t >= p->m->ntypes) fprintf(p->out, "<invalid type %d>", t);
    else nr_type_print(p->m, t, p->out);
}

/* --- values ------------------------------------------------------------------------------------ */
static bool valid_val(const Printer *p, NrValId v) { return v > 0 && v < p->f->nvals; }

static void define(Printer *p, NrValId v) {
    if (valid_val(p, v) && !p->pname[v] && p->num[v] < 0) p->num[v] = p->next++;
}

/* "%" and a non-negative number (the common case, without fprintf). */
static void put_numbered(FILE *out, int32_t n) {
    char d[16];
    int k = (int)sizeof d;
    d[--k] = 0;
    uint32_t u = (uint32_t)n;
    do {
        d[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    d[--k] = '%';
    fputs(d + k, out);
}

static void print_val(const Printer *p, NrValId v) {
    if (v == NR_NONE) fputc('_', p->out);
    else if (!valid_val(p, v)) fprintf(p->out, "%%<undef:%d>", v);
    else if (p->pname[v]) fprintf(p->out, "%%%s", p->pname[v]);
    else if (p->num[v] >= 0) put_numbered(p->out, p->num[v]);
    else fprintf(p->out, "%%<undef:%d>", v);
}

/* Parameter i prints as its name hint if that is an identifier used by no
 * other parameter and not of the form argK for another index K (argK is the
 * fallback of parameter K); else as %argI. */
static bool usable_param_name(const NrFunc *f, const NrBlock *body, int i) {
    const char *s = f->vals[body->args[i]].name;
    if (!is_ident(s)) return false;
    for (int j = 0; j < body->nargs; j++)
        if (j != i && f->vals[body->args[j]].name && strcmp(f->vals[body->args[j]].name, s) == 0) return false;
    if (strncmp(s, "arg", 3) == 0 && s[3]) {
        const char *q = s + 3;
        while (*q >= '0' && *q <= '9') q++;
        if (*q == 0) {
            char own[24];
            snprintf(own, sizeof own, "arg%d", i);
            return strcmp(s, own) == 0;
        }
    }
    return true;
}

/* --- ops and regions --------------------------------------------------------------------------- */
static void indent(FILE *out, int n) {
    for (int i = 0; i < n; i++) fputc(' ', out);
}

static void print_block(Printer *p, NrBlockId b, int ind);

/* region := '{' ['^(' args '):'] op* '}' ; opened on the op's line, closed at its indent */
static void print_region(Printer *p, NrBlockId b, int ind) {
    fputs(" {\n", p->out);
    if (b > 0 && b < p->f->nblocks) {
        const NrBlock *blk = &p->f->blocks[b];
        if (blk->nargs > 0) {
            for (int i = 0; i < blk->nargs; i++) define(p, blk->args[i]);
            indent(p->out, ind);
            fputs("^(", p->out);
            for (int i = 0; i < blk->nargs; i++) {
                fputs(i ? ", " : "", p->out);
                print_val(p, blk->args[i]);
                fputs(": ", p->out);
                print_type(p, valid_val(p, blk->args[i]) ? p->f->vals[blk->args[i]].type : 0);
            }
            fputs("):\n", p->out);
        }
        print_block(p, b, ind + 2);
    }
    indent(p->out, ind);
    fputc('}', p->out);
}

static void print_op(Printer *p, NrOpId id, int ind) {
    const NrOp *op = &p->f->ops[id];
    FILE *out = p->out;
    indent(out, ind);
    for (int i = 0; i < op->nresults; i++) define(p, op->results[i]);
    for (int i = 0; i < op->nresults; i++) {
        fputs(i ? ", " : "", out);
        print_val(p, op->results[i]);
    }
    if (op->nresults > 0) fputs(" = ", out);
    fputs(op->opc < NR_OP_COUNT ? nr_op_info[op->opc].name : "invalid", out);
    for (int i = 0; i < op->nopnds; i++) {
        fputs(i ? ", " : " ", out);
        print_val(p, op->opnds[i]);
    }
    print_attrs(out, op);
    for (int i = 0; i < op->nresults; i++) {
        fputs(i ? ", " : " : ", out);
        print_type(p, valid_val(p, op->results[i]) ? p->f->vals[op->results[i]].type : 0);
    }
    for (int r = 0; r < op->nregions; r++) print_region(p, op->regions[r], ind);
    if (p->locs) fprintf(out, " loc(%u:%u)", op->loc.line, op->loc.col);
    fputc('\n', out);
}

/* Prints the ops of block b at indent ind.  The op count bounds the walk so
 * that a corrupted (cyclic) op list cannot hang the printer. */
static void print_block(Printer *p, NrBlockId b, int ind) {
    int32_t steps = 0;
    for (NrOpId o = p->f->blocks[b].first; o > 0 && o < p->f->nops && steps < p->f->nops; o = p->f->ops[o].next) {
        print_op(p, o, ind);
        steps++;
    }
}

/* --- functions and modules --------------------------------------------------------------------- */
static void print_params(Printer *p) {
    const NrFunc *f = p->f;
    const NrBlock *body = &f->blocks[f->body];
    FILE *out = p->out;
    fputc('(', out);
    for (int i = 0; i < body->nargs; i++) {
        NrValId v = body->args[i];
        fputs(i ? ", " : "", out);
        print_val(p, v);
        fputs(": ", out);
        print_type(p, valid_val(p, v) ? f->vals[v].type : 0);
        const NrParam *pa = &f->params[i];
        int nfacts = 0;
        if (pa->divisibility != 1) fprintf(out, "%sdivisibility = %d", nfacts++ ? ", " : " {", pa->divisibility);
        if (pa->equal_to_1) fprintf(out, "%sequal_to_1", nfacts++ ? ", " : " {");
        if (pa->is_constexpr) fprintf(out, "%sconstexpr", nfacts++ ? ", " : " {");
        if (pa->tensordesc) fprintf(out, "%stensordesc = %d", nfacts++ ? ", " : " {", pa->tensordesc);
        if (nfacts) fputc('}', out);
    }
    fputc(')', out);
}

static void print_func(const NrFunc *f, bool locs, FILE *out, int ind) {
    NrArena scratch;
    nr_arena_init(&scratch);
    Printer p = {f->mod, f, out, locs, NULL, NULL, 0};
    size_t nv = (size_t)(f->nvals > 0 ? f->nvals : 1);
    p.num = nr_alloc(&scratch, sizeof(int32_t) * nv);
    p.pname = nr_alloc(&scratch, sizeof(char *) * nv);
    for (size_t i = 0; i < nv; i++) p.num[i] = -1;
    const NrBlock *body = &f->blocks[f->body];
    for (int i = 0; i < body->nargs; i++) {
        NrValId v = body->args[i];
        if (!valid_val(&p, v)) continue;
        p.pname[v] = usable_param_name(f, body, i) ? f->vals[v].name : nr_sprintf(&scratch, "arg%d", i);
    }

    indent(out, ind);
    fputs("func ", out);
    print_func_name(out, f->name);
    print_params(&p);
    if (f->nrtypes > 0) {
        fputs(" -> (", out);
        for (int i = 0; i < f->nrtypes; i++) {
            fputs(i ? ", " : "", out);
            print_type(&p, f->rtypes[i]);
        }
        fputc(')', out);
    }
    if (f->is_kernel) fputs(" kernel", out);
    if (f->noinline) fputs(" noinline", out);
    if (f->smem_bytes > 0) fprintf(out, " smem = %lld", (long long)f->smem_bytes);
    fputs(" {\n", out);
    print_block(&p, f->body, ind + 2);
    indent(out, ind);
    fputs("}\n", out);
    nr_arena_free(&scratch);
}

void nr_func_print(const NrFunc *f, const NrPrintOptions *opt, FILE *out) {
    print_func(f, opt && opt->locs, out, 0);
}

/* module := 'module' ['attributes' '{' 'num_warps' '=' INT ',' 'sm' '=' INT ['a'] '}'] '{' layoutdef* func* '}'
 * GPU IR: the target's attributes, then the layout table, one `#Ln = layout`
 * line per id (gpu.h), then a blank line. */
void nr_module_print(const NrModule *m, const NrPrintOptions *opt, FILE *out) {
    if (m->num_warps > 0 || m->sm > 0)
        fprintf(out, "module attributes {num_warps = %d, sm = %d%s} {\n", m->num_warps, m->sm, m->sm_a ? "a" : "");
    else fputs("module {\n", out);
    for (int32_t l = 1; l < m->nlayouts; l++) {
        fprintf(out, "  #L%d = ", l);
        nr_layout_print(m, l, out);
        fputc('\n', out);
    }
    for (int i = 0; i < m->nfuncs; i++) {
        if (i || m->nlayouts > 1) fputc('\n', out);
        print_func(m->funcs[i], opt && opt->locs, out, 2);
    }
    fputs("}\n", out);
}

char *nr_module_to_string(const NrModule *m, const NrPrintOptions *opt) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) nr_fatal_oom();
    __fsetlocking(f, FSETLOCKING_BYCALLER); /* the stream is this thread's alone: no locking per call */
    nr_module_print(m, opt, f);
    fclose(f);
    char *s = nr_strndup(m->arena, buf ? buf : "", buf ? len : 0);
    free(buf);
    return s;
}
