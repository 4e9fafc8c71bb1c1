/* test_parse.c - tests of the tokenizer (lex.c) and the parser (parse*.c):
 * snippets are parsed and their AST dump, token stream or first diagnostic
 * compared with the expected text.  Prints one line per failing check and
 * exits non-zero if any failed. */
#include "ast.h"
#include "lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

static void fail(int line, const char *what, const char *src, const char *want, const char *got) {
    failures++;
    printf("FAIL test_parse.c:%d: %s\n--- source:\n%s\n--- expected:\n%s\n--- got:\n%s\n", line, what, src, want, got);
}

/* Parse src as file "t.py": the dump (or "NULL") and the rendered diagnostics. */
typedef struct Result {
    char *dump;
    char *diags;
    int nerrors;
} Result;

static Result parse_len(const char *src, size_t len) {
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    uint32_t file = nr_sources_add(&s, &a, "t.py", src, len);
    NrDiags d;
    nr_diags_init(&d, &a, &s);
    NrAstModule *m = nr_parse_module(&a, &s, file, &d);
    Result r;
    r.dump = strdup(m ? nr_ast_dump(&a, m) : "NULL");
    r.diags = strdup(nr_diags_render(&a, &d));
    r.nerrors = d.nerrors;
    nr_arena_free(&a);
    return r;
}

static Result parse(const char *src) { return parse_len(src, strlen(src)); }

static void free_result(Result *r) {
    free(r->dump);
    free(r->diags);
}

/* The whole dump of a module. */
static void check_dump(int line, const char *src, const char *want) {
    checks++;
    Result r = parse(src);
    if (strcmp(r.dump, want) != 0 || r.nerrors) {
        char *got = malloc(strlen(r.dump) + strlen(r.diags) + 2);
        sprintf(got, "%s%s", r.dump, r.diags);
        fail(line, "dump", src, want, got);
        free(got);
    }
    free_result(&r);
}
#define DUMP(src, want) check_dump(__LINE__, src, want)

/* The body of `@jit def f(): <body>` (body lines indented by 4), dumped. */
static void check_body(int line, const char *body, const char *want_stmts) {
    char src[4096], want[4096];
    snprintf(src, sizeof src, "@jit\ndef f():\n%s", body);
    snprintf(want, sizeof want, "(def f ()\n%s)\n", want_stmts);
    check_dump(line, src, want);
}
#define BODY(body, want) check_body(__LINE__, body, want)

/* One expression: `return <expr>`. */
static void check_expr(int line, const char *expr, const char *want) {
    char src[4096], w[4096];
    snprintf(src, sizeof src, "@jit\ndef f():\n    return %s\n", expr);
    snprintf(w, sizeof w, "(def f ()\n  (return %s))\n", want);
    check_dump(line, src, w);
}
#define EXPR(expr, want) check_expr(__LINE__, expr, want)

/* The first rendered diagnostic must start with `want` ("t.py:3:5: error: ..."). */
static void check_error(int line, const char *src, const char *want) {
    checks++;
    Result r = parse(src);
    if (strncmp(r.diags, want, strlen(want)) != 0 || strcmp(r.dump, "NULL") != 0) {
        char *got = malloc(strlen(r.dump) + strlen(r.diags) + 2);
        sprintf(got, "%s%s", r.dump, r.diags);
        fail(line, "error", src, want, got);
        free(got);
    }
    free_result(&r);
}
#define ERROR(src, want) check_error(__LINE__, src, want)

/* A kernel body with one error; want is "line:col: message". */
static void check_body_error(int line, const char *body, const char *want) {
    char src[4096], w[4096];
    snprintf(src, sizeof src, "@jit\ndef f():\n%s", body);
    snprintf(w, sizeof w, "t.py:%s", want);
    check_error(line, src, w);
}
#define BODY_ERROR(body, want) check_body_error(__LINE__, body, want)

/* The whole rendered diagnostics text. */
static void check_diags(int line, const char *src, const char *want) {
    checks++;
    Result r = parse(src);
    if (strcmp(r.diags, want) != 0) fail(line, "diagnostics", src, want, r.diags);
    free_result(&r);
}
#define DIAGS(src, want) check_diags(__LINE__, src, want)

/* --- tokens ---------------------------------------------------------------------------------- */

static const char *const kind_names[] = {
#define X(id, s) #id,
    NR_TOKEN_LIST(X)
#undef X
};

/* The token stream of src, one word per token: NAME:x INT:5 FLOAT:0.5 STR:"..." ERR:msg, else the kind. */
static char *lex_string(const char *src, size_t len) {
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    uint32_t file = nr_sources_add(&s, &a, "t.py", src, len);
    NrTokens t = nr_lex(&a, &a, &s, file);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    out[0] = 0;
    for (int i = 0; i < t.n; i++) {
        const NrToken *k = &t.v[i];
        char w[512];
        switch (k->kind) {
        case NR_T_NAME: snprintf(w, sizeof w, "NAME:%s", k->v.str.s); break;
        case NR_T_INT:
            if (k->flags & NR_TF_OVERFLOW) snprintf(w, sizeof w, "INT:overflow");
            else snprintf(w, sizeof w, "INT:%llu", (unsigned long long)k->v.u);
            break;
        case NR_T_FLOAT: snprintf(w, sizeof w, "FLOAT:%g", k->v.f); break;
        case NR_T_IMAG: snprintf(w, sizeof w, "IMAG:%g", k->v.f); break;
        case NR_T_STRING: {
            int o = snprintf(w, sizeof w, "STR%s%s%s:", k->flags & NR_TF_BYTES ? "b" : "",
                             k->flags & NR_TF_RAW ? "r" : "", k->flags & NR_TF_FSTRING ? "f" : "");
            for (size_t j = 0; j < k->v.str.n && o < 480; j++) {
                unsigned char c = (unsigned char)k->v.str.s[j];
                if (c < 0x20 || c >= 0x7f || c == ' ') o += snprintf(w + o, sizeof w - (size_t)o, "\\x%02x", c);
                else w[o++] = (char)c, w[o] = 0;
            }
            break;
        }
        case NR_T_ERROR: snprintf(w, sizeof w, "ERR(%s)", k->v.msg); break;
        default: snprintf(w, sizeof w, "%s", kind_names[k->kind]); break;
        }
        size_t l = strlen(w);
        if (n + l + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
        }
        if (n) out[n++] = ' ';
        memcpy(out + n, w, l + 1);
        n += l;
    }
    nr_arena_free(&a);
    return out;
}

static void check_lex(int line, const char *src, size_t len, const char *want) {
    checks++;
    char *got = lex_string(src, len);
    if (strcmp(got, want) != 0) fail(line, "tokens", src, want, got);
    free(got);
}
#define LEX(src, want) check_lex(__LINE__, src, strlen(src), want)
#define LEXN(src, want) check_lex(__LINE__, src, sizeof(src) - 1, want)

/* Location and length of token i of src: "line:col+len". */
static void check_loc(int line, const char *src, int i, const char *want) {
    checks++;
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    uint32_t file = nr_sources_add(&s, &a, "t.py", src, strlen(src));
    NrTokens t = nr_lex(&a, &a, &s, file);
    char got[64] = "no such token";
    if (i < t.n)
        snprintf(got, sizeof got, "%u:%u+%zu", t.v[i].loc.line, t.v[i].loc.col, t.v[i].len);
    if (strcmp(got, want) != 0) fail(line, "location", src, want, got);
    nr_arena_free(&a);
}
#define LOC(src, i, want) check_loc(__LINE__, src, i, want)

static void test_lexer(void) {
    LEX("", "EOF");
    LEX("\n\n  \n# c\n", "EOF");
    LEX("x = 1\n", "NAME:x ASSIGN INT:1 NEWLINE EOF");
    LEX("x = 1", "NAME:x ASSIGN INT:1 NEWLINE EOF");
    LEX("if x:\n    y\nz\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE DEDENT NAME:z NEWLINE EOF");
    LEX("if x:\n    if y:\n        z\n", "KW_IF NAME:x COLON NEWLINE INDENT KW_IF NAME:y COLON NEWLINE INDENT NAME:z "
                                          "NEWLINE DEDENT DEDENT EOF");
    /* Comments and blank lines at any indentation produce nothing. */
    LEX("if x:\n    y\n  # c\n\n        \n    z\n",
        "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE NAME:z NEWLINE DEDENT EOF");
    /* Tabs advance to multiples of 8; a tab and 8 spaces are the same level. */
    LEX("if x:\n\ty\n        z\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE ERR(inconsistent use of tabs "
                                  "and spaces in indentation) NAME:z NEWLINE DEDENT EOF");
    LEX("if x:\n\ty\n\tz\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE NAME:z NEWLINE DEDENT EOF");
    LEX("if x:\n  \ty\n\tz\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE ERR(inconsistent use of tabs and "
                               "spaces in indentation) NAME:z NEWLINE DEDENT EOF");
    /* CRLF and CR line ends, form feed. */
    LEX("if x:\r\n    y\r\nz\r\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE DEDENT NAME:z NEWLINE EOF");
    LEX("if x:\r    y\rz\r", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE DEDENT NAME:z NEWLINE EOF");
    LEX("\fx\n", "NAME:x NEWLINE EOF");
    LEX("if x:\n    \fy\n", "KW_IF NAME:x COLON NEWLINE NAME:y NEWLINE EOF");
    /* Implicit and explicit line joining. */
    LEX("f(a,\n  b)\n", "NAME:f LPAR NAME:a COMMA NAME:b RPAR NEWLINE EOF");
    LEX("x = [\n1,\n        2]\n", "NAME:x ASSIGN LSQB INT:1 COMMA INT:2 RSQB NEWLINE EOF");
    LEX("x = 1 + \\\n    2\n", "NAME:x ASSIGN INT:1 PLUS INT:2 NEWLINE EOF");
    LEX("x = 1 + \\\r\n    2\n", "NAME:x ASSIGN INT:1 PLUS INT:2 NEWLINE EOF");
    LEX("x \\ y\n", "NAME:x ERR(unexpected character after line continuation character) NAME:y NEWLINE EOF");
    LEX("x \\", "NAME:x ERR(unexpected end of file after line continuation character) NEWLINE EOF");
    /* Bad dedent: the error comes before the DEDENTs. */
    LEX("if x:\n    y\n  z\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:y NEWLINE ERR(unindent does not match any "
                               "outer indentation level) DEDENT INDENT NAME:z NEWLINE DEDENT EOF");
    /* Integers. */
    LEX("0 7 1_000 0x_1F 0o17 0b1010 0XFF 00 0_0", "INT:0 INT:7 INT:1000 INT:31 INT:15 INT:10 INT:255 INT:0 INT:0 "
                                                   "NEWLINE EOF");
    LEX("18446744073709551615 18446744073709551616 0xffffffffffffffff 0x10000000000000000",
        "INT:18446744073709551615 INT:overflow INT:18446744073709551615 INT:overflow NEWLINE EOF");
    LEX("012", "ERR(leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
               "integers) NEWLINE EOF");
    LEX("1__0 1_ 0x 0b2 0o8 0x1g 1abc", "ERR(invalid decimal literal) ERR(invalid decimal literal) "
                                        "ERR(invalid hexadecimal literal) ERR(invalid digit '2' in binary literal) "
                                        "ERR(invalid digit '8' in octal literal) ERR(invalid hexadecimal literal) "
                                        "ERR(invalid decimal literal) NEWLINE EOF");
    LEX("1if x else 2", "INT:1 KW_IF NAME:x KW_ELSE INT:2 NEWLINE EOF");
    /* Floats and imaginary numbers. */
    LEX("1. .5 1.5 1e3 1E-3 1.5e+2 1_0.2_5 0.0 00.5 1e1_0", "FLOAT:1 FLOAT:0.5 FLOAT:1.5 FLOAT:1000 FLOAT:0.001 "
                                                          "FLOAT:150 FLOAT:10.25 FLOAT:0 FLOAT:0.5 FLOAT:1e+10 NEWLINE EOF");
    LEX("1j 2.5J .5j", "IMAG:1 IMAG:2.5 IMAG:0.5 NEWLINE EOF");
    LEX("1e 1.e5 x.y", "ERR(invalid decimal literal) FLOAT:100000 NAME:x DOT NAME:y NEWLINE EOF");
    LEX("a[1:2]", "NAME:a LSQB INT:1 COLON INT:2 RSQB NEWLINE EOF");
    /* Operators, longest match. */
    LEX("+ += - -= -> * *= ** **= / /= // //= % %= @ @= & &= | |= ^ ^= ~ << <<= >> >>= < <= > >= == != = := : . "
        "... , ;",
        "PLUS PLUSEQ MINUS MINUSEQ ARROW STAR STAREQ DSTAR DSTAREQ SLASH SLASHEQ DSLASH DSLASHEQ PERCENT PERCENTEQ "
        "AT ATEQ AMP AMPEQ VBAR VBAREQ CIRC CIRCEQ TILDE LSHIFT LSHIFTEQ RSHIFT RSHIFTEQ LT LE GT GE EQ NE ASSIGN "
        "WALRUS COLON DOT ELLIPSIS COMMA SEMI NEWLINE EOF");
    LEX("a..b", "NAME:a DOT DOT NAME:b NEWLINE EOF");
    /* Keywords and soft keywords. */
    LEX("if elif else for while def return pass True False None and or not in is match type _",
        "KW_IF KW_ELIF KW_ELSE KW_FOR KW_WHILE KW_DEF KW_RETURN KW_PASS KW_TRUE KW_FALSE KW_NONE KW_AND KW_OR "
        "KW_NOT KW_IN KW_IS NAME:match NAME:type NAME:_ NEWLINE EOF");
    /* UTF-8 in names. */
    LEX("\xc3\xa9t\xc3\xa9 = 1", "NAME:\xc3\xa9t\xc3\xa9 ASSIGN INT:1 NEWLINE EOF");
    /* Strings: quotes, prefixes, escapes. */
    LEX("'a' \"b\" '''c\nd''' \"\"\"e\"\"\"", "STR:a STR:b STR:c\\x0ad STR:e NEWLINE EOF");
    LEX("'\\n\\t\\\\\\'\\\"\\x41\\101\\u00e9\\q'", "STR:\\x0a\\x09\\'\"AA\\xc3\\xa9\\q NEWLINE EOF");
    LEX("r'\\n' R\"\\\"\" b'\\xff' rb'\\x' Br'a' u'x' U'y'",
        "STRr:\\n STRr:\\\" STRb:\\xff STRbr:\\x STRbr:a STR:x STR:y NEWLINE EOF");
    LEX("'a\\\nb'", "STR:ab NEWLINE EOF");
    LEX("'''a\r\nb'''", "STR:a\\x0ab NEWLINE EOF");
    LEX("'\\N{DASH}' '\\x4' '\\U0010FFFF'", "STR:\\N{DASH} STR:\\x4 STR:\\xf4\\x8f\\xbf\\xbf NEWLINE EOF");
    LEX("f'{x}' F\"{y!r:>{w}}\" rf'{z}' f'{{}}'", "STRf:f'{x}' STRf:F\"{y!r:>{w}}\" STRrf:rf'{z}' STRf:f'{{}}' NEWLINE "
                                                "EOF");
    /* Python 3.12 f-strings: nested quotes and nested f-strings. */
    LEX("f\"{x[\"a\"]}\" f'{f'{1}'}' f'''{\n1}'''", "STRf:f\"{x[\"a\"]}\" STRf:f'{f'{1}'}' STRf:f'''{\\x0a1}''' NEWLINE EOF");
    LEX("f'{x:{'a'}}' y", "STRf:f'{x:{'a'}}' NAME:y NEWLINE EOF");
    /* Unterminated strings. */
    LEX("x = 'abc\ny = 1\n", "NAME:x ASSIGN ERR(unterminated string literal) NEWLINE NAME:y ASSIGN INT:1 NEWLINE EOF");
    LEX("x = '''abc\ny = 1\n", "NAME:x ASSIGN ERR(unterminated triple-quoted string literal) NEWLINE EOF");
    LEX("x = f'{abc\n", "NAME:x ASSIGN ERR(unterminated f-string literal) NEWLINE EOF");
    LEX("x = f'{a:b'", "NAME:x ASSIGN ERR(f-string: expecting '}') NEWLINE EOF");
    LEX("x = 'abc\\", "NAME:x ASSIGN ERR(unterminated string literal) NEWLINE EOF");
    /* Brackets. */
    LEX("f(a]\n", "NAME:f LPAR NAME:a ERR(closing parenthesis ']' does not match opening parenthesis '(') NEWLINE EOF");
    LEX(")\n", "ERR(unmatched ')') NEWLINE EOF");
    LEX("f(a,\n", "NAME:f LPAR NAME:a COMMA ERR('(' was never closed) NEWLINE EOF");
    LEX("if x:\n    f(\n", "KW_IF NAME:x COLON NEWLINE INDENT NAME:f LPAR ERR('(' was never closed) NEWLINE DEDENT EOF");
    /* Invalid characters. */
    LEX("a $ b ? `", "NAME:a ERR(invalid character '$' (U+0024)) NAME:b ERR(invalid character '?' (U+003F)) "
                     "ERR(invalid character '`' (U+0060)) NEWLINE EOF");
    LEXN("a\0b\x01", "NAME:a ERR(source code cannot contain null bytes) NAME:b ERR(invalid non-printable character "
                     "U+0001) NEWLINE EOF");
    LEX("a ! b", "NAME:a ERR(invalid character '!' (U+0021)) NAME:b NEWLINE EOF");
    /* A byte order mark is skipped. */
    LEX("\xef\xbb\xbfx", "NAME:x NEWLINE EOF");

    /* Locations: 1-based byte columns, a tab is one column. */
    LOC("x = 1", 0, "1:1+1");
    LOC("x = 1", 2, "1:5+1");
    LOC("x = 1", 3, "1:6+0");  /* NEWLINE at the end of the last token */
    LOC("\tx", 0, "1:2+0");    /* INDENT, at the first token */
    LOC("\tx", 1, "1:2+1");
    LOC("a\r\nbc", 2, "2:1+2");
    LOC("a\rbc", 2, "2:1+2");
    LOC("'''a\nb''' c", 0, "1:1+9");
    LOC("'''a\nb''' c", 1, "2:6+1");
    LOC("(a,\n b)", 3, "2:2+1");
    LOC("x = 'abc\n", 2, "1:5+4");
}

/* --- expressions ----------------------------------------------------------------------------- */

static void test_expressions(void) {
    EXPR("x", "x");
    EXPR("42", "42");
    EXPR("0x10", "16");
    EXPR("18446744073709551615", "18446744073709551615");
    EXPR("1.5", "1.5");
    EXPR("1.", "1.0");
    EXPR("1e300", "1e+300");
    EXPR("0.1", "0.1");
    EXPR("2.5e2", "250.0");
    EXPR("1e-3", "0.001");
    EXPR("1e-5", "1e-05");
    EXPR("1.5e16", "1.5e+16");
    EXPR("123456789.125", "123456789.125");
    EXPR("1e400", "inf");
    EXPR("0.30000000000000004", "0.30000000000000004");
    EXPR("True", "True");
    EXPR("False", "False");
    EXPR("None", "None");
    EXPR("...", "...");
    EXPR("'a' \"b\" '''c'''", "\"abc\"");
    EXPR("'a\\n\"'", "\"a\\n\\\"\"");
    EXPR("float('inf')", "(call float \"inf\")");
    /* Precedence. */
    EXPR("a + b * c", "(+ a (* b c))");
    EXPR("a * b + c", "(+ (* a b) c)");
    EXPR("a - b - c", "(- (- a b) c)");
    EXPR("a / b // c % d @ e", "(@ (% (// (/ a b) c) d) e)");
    EXPR("a << b + c", "(<< a (+ b c))");
    EXPR("a >> b << c", "(<< (>> a b) c)");
    EXPR("a & b << c", "(& a (<< b c))");
    EXPR("a ^ b & c", "(^ a (& b c))");
    EXPR("a | b ^ c", "(| a (^ b c))");
    EXPR("a | b & c ^ d", "(| a (^ (& b c) d))");
    EXPR("a < b | c", "(< a (| b c))");
    EXPR("not a < b", "(not (< a b))");
    EXPR("not not a", "(not (not a))");
    EXPR("a and b or c and d", "(or (and a b) (and c d))");
    EXPR("a or b or c", "(or (or a b) c)");
    EXPR("a and not b", "(and a (not b))");
    EXPR("a if b else c", "(ifexp b a c)");
    EXPR("a if b else c if d else e", "(ifexp b a (ifexp d c e))");
    EXPR("a or b if c and d else e", "(ifexp (and c d) (or a b) e)");
    EXPR("(a + b) * c", "(* (+ a b) c)");
    EXPR("((a))", "a");
    /* Comparisons. */
    EXPR("a < b", "(< a b)");
    EXPR("a <= b", "(<= a b)");
    EXPR("a > b", "(> a b)");
    EXPR("a >= b", "(>= a b)");
    EXPR("a == b", "(== a b)");
    EXPR("a != b", "(!= a b)");
    EXPR("a is None", "(is a None)");
    EXPR("a is not None", "(is-not a None)");
    EXPR("a in b", "(in a b)");
    EXPR("a not in b", "(not-in a b)");
    EXPR("(a < b) & (b < c)", "(& (< a b) (< b c))");
    EXPR("(a < b) < c", "(< (< a b) c)");
    /* Unary and power. */
    EXPR("-x", "(neg x)");
    EXPR("+x", "(pos x)");
    EXPR("~x", "(~ x)");
    EXPR("- -x", "(neg (neg x))");
    EXPR("-1", "(neg 1)");
    EXPR("-x**2", "(neg (** x 2))");
    EXPR("2**-1", "(** 2 (neg 1))");
    EXPR("a**b**c", "(** a (** b c))");
    EXPR("-a * b", "(* (neg a) b)");
    EXPR("~a + b", "(+ (~ a) b)");
    EXPR("a ** -b ** c", "(** a (neg (** b c)))");
    EXPR("x.y ** 2", "(** (. x y) 2)");
    /* Primaries. */
    EXPR("a.b.c", "(. (. a b) c)");
    EXPR("f()", "(call f)");
    EXPR("f(a, b)", "(call f a b)");
    EXPR("f(a, b,)", "(call f a b)");
    EXPR("f(a, k=1, j=x + 1)", "(call f a (kw k 1) (kw j (+ x 1)))");
    EXPR("f(\n    a,\n    k=1,\n)", "(call f a (kw k 1))");
    EXPR("tl.load(p + offs, mask=m, other=0.0)", "(call (. tl load) (+ p offs) (kw mask m) (kw other 0.0))");
    EXPR("f(a)(b)", "(call (call f a) b)");
    EXPR("x.to(tl.float16)", "(call (. x to) (. tl float16))");
    EXPR("a[i]", "([] a i)");
    EXPR("a[i, j]", "([] a i j)");
    EXPR("a[:, None]", "([] a (slice _ _ _) None)");
    EXPR("a[None, :]", "([] a None (slice _ _ _))");
    EXPR("a[1:2:3]", "([] a (slice 1 2 3))");
    EXPR("a[1:]", "([] a (slice 1 _ _))");
    EXPR("a[:2]", "([] a (slice _ 2 _))");
    EXPR("a[::2]", "([] a (slice _ _ 2))");
    EXPR("a[1:2:]", "([] a (slice 1 2 _))");
    EXPR("a[...]", "([] a ...)");
    EXPR("a[..., None]", "([] a ... None)");
    EXPR("a[i,]", "([] a i)");
    EXPR("a[i][j]", "([] ([] a i) j)");
    EXPR("a[i].b(c)[d]", "([] (call (. ([] a i) b) c) d)");
    EXPR("a[x + 1 : y]", "([] a (slice (+ x 1) y _))");
    /* Tuples and lists. */
    EXPR("()", "(tuple)");
    EXPR("(x,)", "(tuple x)");
    EXPR("(x, y)", "(tuple x y)");
    EXPR("(x, y,)", "(tuple x y)");
    EXPR("x, y", "(tuple x y)");
    EXPR("x,", "(tuple x)");
    EXPR("[]", "(list)");
    EXPR("[a, b]", "(list a b)");
    EXPR("[a, b,]", "(list a b)");
    EXPR("[[1, 2], (3,)]", "(list (list 1 2) (tuple 3))");
    EXPR("tl.zeros((M, N), dtype=tl.float32)", "(call (. tl zeros) (tuple M N) (kw dtype (. tl float32)))");
    /* Continuation lines and comments inside brackets. */
    EXPR("(a +  # comment\n        b)", "(+ a b)");
    EXPR("a + \\\n        b", "(+ a b)");
}

/* --- statements ------------------------------------------------------------------------------ */

static void test_statements(void) {
    BODY("    x\n", "  (expr x)");
    BODY("    \"\"\"Docstring.\"\"\"\n    pass\n", "  (expr \"Docstring.\")\n  (pass)");
    BODY("    x = 1\n", "  (= x 1)");
    BODY("    x = y = 1\n", "  (= x y 1)");
    BODY("    a, b = f()\n", "  (= (tuple a b) (call f))");
    BODY("    (a, b) = c, d\n", "  (= (tuple a b) (tuple c d))");
    BODY("    [a, b] = c\n", "  (= (list a b) c)");
    BODY("    a, (b, c) = x\n", "  (= (tuple a (tuple b c)) x)");
    BODY("    x.y = 1\n    x[i] = 2\n", "  (= (. x y) 1)\n  (= ([] x i) 2)");
    BODY("    x += 1\n    x -= 1\n    x *= 1\n    x /= 1\n    x //= 1\n    x %= 1\n    x **= 1\n"
         "    x <<= 1\n    x >>= 1\n    x &= 1\n    x |= 1\n    x ^= 1\n    x @= 1\n",
         "  (+= x 1)\n  (-= x 1)\n  (*= x 1)\n  (/= x 1)\n  (//= x 1)\n  (%= x 1)\n  (**= x 1)\n"
         "  (<<= x 1)\n  (>>= x 1)\n  (&= x 1)\n  (|= x 1)\n  (^= x 1)\n  (@= x 1)");
    BODY("    p += 1, 2\n", "  (+= p (tuple 1 2))");
    BODY("    x: tl.constexpr = 3\n", "  (ann x (. tl constexpr) 3)");
    BODY("    x: int\n", "  (ann x int)");
    BODY("    return\n", "  (return)");
    BODY("    return a, b\n", "  (return (tuple a b))");
    BODY("    return (a, b)\n", "  (return (tuple a b))");
    BODY("    pass\n", "  (pass)");
    BODY("    assert x\n    assert x > 0, 'msg'\n", "  (assert x)\n  (assert (> x 0) \"msg\")");
    BODY("    a = 1; b = 2\n", "  (= a 1)\n  (= b 2)");
    BODY("    a = 1;\n", "  (= a 1)");
    BODY("    if x:\n        a\n", "  (if x\n    (expr a))");
    BODY("    if x: return\n", "  (if x\n    (return))");
    BODY("    if x: a; b\n", "  (if x\n    (expr a)\n    (expr b))");
    BODY("    if x:\n        a\n    else:\n        b\n", "  (if x\n    (expr a)\n    (else\n      (expr b)))");
    BODY("    if x:\n        a\n    elif y:\n        b\n    elif z:\n        c\n    else:\n        d\n",
         "  (if x\n    (expr a)\n    (else\n      (if y\n        (expr b)\n        (else\n          (if z\n"
         "            (expr c)\n            (else\n              (expr d)))))))");
    BODY("    for i in range(10):\n        x += i\n", "  (for i (call range 10)\n    (+= x i))");
    BODY("    for i in tl.static_range(0, 4, 2): pass\n", "  (for i (call (. tl static_range) 0 4 2)\n    (pass))");
    BODY("    for i, j in x:\n        pass\n", "  (for (tuple i j) x\n    (pass))");
    BODY("    for i in a, b:\n        pass\n", "  (for i (tuple a b)\n    (pass))");
    BODY("    while x < 10:\n        x += 1\n", "  (while (< x 10)\n    (+= x 1))");
    BODY("    while True: x = f(x)\n", "  (while True\n    (= x (call f x)))");
    BODY("    if a:\n        if b:\n            c\n        d\n    e\n",
         "  (if a\n    (if b\n      (expr c))\n    (expr d))\n  (expr e)");
    BODY("    match = 1\n    match.x = 2\n    match(x)\n    type = 3\n",
         "  (= match 1)\n  (= (. match x) 2)\n  (expr (call match x))\n  (= type 3)");
    BODY("    # comment\n    x = 1  # trailing\n\n    # another\n    y = 2\n", "  (= x 1)\n  (= y 2)");
    BODY("    x = (1 +\n         2)\n    y = 3\n", "  (= x (+ 1 2))\n  (= y 3)");
    BODY("    x = 1 + \\\n        2\n", "  (= x (+ 1 2))");
    BODY("    tl.device_print('x', x)\n", "  (expr (call (. tl device_print) \"x\" x))");
    /* Tabs and mixed line ends. */
    BODY("\tx = 1\n\tif x:\n\t\ty = 2\n", "  (= x 1)\n  (if x\n    (= y 2))");
    BODY("    x = 1\r\n    if x:\r\n        y = 2\r\n", "  (= x 1)\n  (if x\n    (= y 2))");
    BODY("    x = 1\r    y = 2\r", "  (= x 1)\n  (= y 2)");
}

/* --- the module level ------------------------------------------------------------------------ */

static void test_module(void) {
    /* Kernels: decorators whose last name is jit. */
    DUMP("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n"
         "    pid = tl.program_id(0)\n",
         "(import triton _ triton)\n(import triton.language _ tl)\n"
         "(def k (x_ptr n (BLOCK : (. tl constexpr)))\n  (= pid (call (. tl program_id) 0)))\n");
    DUMP("@jit\ndef a():\n    pass\n@nereid.jit\ndef b():\n    pass\n@triton.jit()\ndef c():\n    pass\n",
         "(def a ()\n  (pass))\n(def b ()\n  (pass))\n(def c ()\n  (pass))\n");
    DUMP("@triton.jit(noinline=True)\ndef h(x):\n    return x\n", "(def h (x) noinline\n  (return x))\n");
    DUMP("@triton.jit(noinline=False, debug=True, other=lambda: 1)\ndef h(x):\n    return x\n",
         "(def h (x)\n  (return x))\n");
    DUMP("@triton.jit(do_not_specialize=['n', 0])\ndef h(x, n):\n    pass\n",
         "(def h (x n) (do_not_specialize n x)\n  (pass))\n");
    DUMP("@triton.jit(do_not_specialize=(\"n\",), noinline=True)\ndef h(x, n):\n    pass\n",
         "(def h (x n) noinline (do_not_specialize n)\n  (pass))\n");
    /* Other decorators are skipped without being parsed. */
    DUMP("@triton.autotune(configs=[triton.Config({'BLOCK': b}, num_warps=4) for b in [64, 128]],\n"
         "                 key=['n'])\n@triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})\n"
         "@triton.jit\ndef k(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):\n    pass\n",
         "(def k (x n (BLOCK : (. tl constexpr)) (EVEN : (. tl constexpr)))\n  (pass))\n");
    DUMP("@functools.lru_cache(maxsize=None)\ndef host(x):\n    return {k: v for k, v in x}\n",
         "(host host function)\n");
    DUMP("@property\n@jit.thing\ndef not_a_kernel():\n    pass\n", "(host not_a_kernel function)\n");
    DUMP("@jit\nclass C:\n    pass\n", "(host C class)\n");
    /* Parameters. */
    DUMP("@jit\ndef k(a, b: int, c=1, d: tl.constexpr = 2,) -> None:\n    pass\n",
         "(def k (a (b : int) (c = 1) (d : (. tl constexpr) = 2))\n  (pass))\n");
    DUMP("@jit\ndef k(\n    a,\n    b,\n):\n    pass\n", "(def k (a b)\n  (pass))\n");
    /* Imports. */
    DUMP("import a\nimport b.c.d\nimport e.f as g, h\nfrom i.j import k as l, m\nfrom . import n\n"
         "from .. import o\nfrom .p import q\nfrom r import (s,\n t as u,)\nfrom v import *\nimport w; import x\n"
         "from ...y import z\n",
         "(import a _ a)\n(import b.c.d _ b)\n(import e.f _ g)\n(import h _ h)\n(import i.j k l)\n(import i.j m m)\n"
         "(import . n n)\n(import .. o o)\n(import .p q q)\n(import r s s)\n(import r t u)\n(import v * *)\n"
         "(import w _ w)\n(import x _ x)\n(import ...y z z)\n");
    DUMP("import triton\nimport triton.language\n", "(import triton.language _ triton)\n");
    DUMP("import\nfrom import x\nfrom a import\n", "");
    /* Globals. */
    DUMP("N = 3\nM: tl.constexpr = 4\nK = tl.constexpr(5)\nS = 'str'\nT = (1, 2)\nU = -1.5\n",
         "(global N 3)\n(global M : (. tl constexpr) 4)\n(global K (call (. tl constexpr) 5))\n"
         "(global S \"str\")\n(global T (tuple 1 2))\n(global U (neg 1.5))\n");
    DUMP("X = lambda: 1\nY = {1: 2}\nZ = [i for i in range(3)]\nW = (yield)\nA = f'{x}'\nB: int\n",
         "(host X variable)\n(host Y variable)\n(host Z variable)\n(host W variable)\n(host A variable)\n");
    DUMP("a, b = 1, 2\nc = d = 3\ne += 1\nf.x = 1\ng[0] = 2\n",
         "(host a variable)\n(host b variable)\n(host c variable)\n(host d variable)\n(host e variable)\n");
    /* A later binding of a name wins; a kernel's name stays the kernel. */
    DUMP("N = 1\nN = 2\n", "(global N 2)\n");
    DUMP("N = 1\nN = {}\n", "(host N variable)\n");
    DUMP("N = {}\nN = 1\n", "(global N 1)\n");
    DUMP("import numpy as np\nnp = 3\n", "(global np 3)\n");
    DUMP("def f(): pass\nf = 1\nclass f: pass\n", "(host f class)\n");
    DUMP("@jit\ndef k():\n    pass\nk = wrap(k, {})\n", "(def k ()\n  (pass))\n");
    DUMP("k = 1\n@jit\ndef k():\n    pass\n", "(def k ()\n  (pass))\n");
    DUMP("@jit\ndef k():\n    return 1\n@jit\ndef k():\n    return 2\n", "(def k ()\n  (return 2))\n");
    /* Host code of every kind is skipped without errors. */
    DUMP("class A:\n    @triton.jit\n    def inner(x):\n        break\n    y = {\n  1: 2}\n\n"
         "def host(x):\n    @triton.jit\n    def nested():\n        pass\n    return [i for i in x]\n"
         "async def g():\n    await x\n"
         "if __name__ == \"__main__\":\n    import sys\n    main(sys.argv)\nelse:\n    pass\n"
         "for i in range(3):\n    print(i)\nelse:\n    pass\n"
         "while False: pass\n"
         "try:\n    import torch\nexcept ImportError:\n    torch = None\nfinally:\n    pass\n"
         "with open('f') as f:\n    f.read()\n"
         "match x:\n    case 1:\n        pass\n"
         "print(f\"{x!r:>10}\")\n{1: 2}\n[x for x in y]\n(lambda: 0)()\n(y := 3)\n"
         "del x\nglobal q\nraise SystemExit\n@dec\n# comment\n\n@jit\ndef k():\n    pass\n",
         "(host A class)\n(host host function)\n(host g function)\n(def k ()\n  (pass))\n");
    /* A string that looks like a kernel is not one. */
    DUMP("doc = \"\"\"\n@jit\ndef k():\n    break\n\"\"\"\n@jit\ndef real():\n    pass\n",
         "(global doc \"\\n@jit\\ndef k():\\n    break\\n\")\n(def real ()\n  (pass))\n");
    DUMP("s = '''\n@triton.jit\ndef k(): pass'''\n", "(global s \"\\n@triton.jit\\ndef k(): pass\")\n");
    /* Malformed host code never produces errors. */
    DUMP("x = $\ny = 'abc\nz = (1,\n", "(host x variable)\n(host y variable)\n(host z variable)\n");
    DUMP("  indented = 1\nok = 2\n", "(global ok 2)\n");
    DUMP("def f(x):\n    return 0123 + 1abc + `\nclass C(\n", "(host f function)\n(host C class)\n");
    DUMP("if x:\n        a\n    b\nc = 1\n", "(global c 1)\n");
    DUMP("x = 1; y = 2\n", "(global x 1)\n");
    DUMP("async with a as b:\n    pass\nasync for x in y:\n    pass\nasync def g(): pass\n", "(host g function)\n");
    DUMP("'''unterminated\n@jit\ndef k():\n    pass\n", "");
    /* Nested kernels are host code. */
    DUMP("def outer():\n    @triton.jit\n    def k():\n        pass\n", "(host outer function)\n");
    /* CRLF, CR and tabs at the module level. */
    DUMP("import triton\r\n@triton.jit\r\ndef k(x):\r\n\treturn x\r\n",
         "(import triton _ triton)\n(def k (x)\n  (return x))\n");
    DUMP("N = 1\r@jit\rdef k():\r    return N\r", "(global N 1)\n(def k ()\n  (return N))\n");
    /* A file ending without a newline, inside a kernel. */
    DUMP("@jit\ndef k():\n    return 1", "(def k ()\n  (return 1))\n");
    DUMP("@jit\ndef k(): return 1", "(def k ()\n  (return 1))\n");
    /* Tabs and spaces mixed consistently. */
    DUMP("@jit\ndef k():\n\tif x:\n\t    y = 1\n\treturn y\n", "(def k ()\n  (if x\n    (= y 1))\n  (return y))\n");
}

/* --- errors ---------------------------------------------------------------------------------- */

static void test_errors(void) {
    /* Unsupported statements. */
    BODY_ERROR("    break\n", "3:5: error: 'break' is not supported in kernels");
    BODY_ERROR("    for i in x:\n        continue\n", "4:9: error: 'continue' is not supported in kernels");
    BODY_ERROR("    try:\n        pass\n    except E:\n        pass\n", "3:5: error: 'try' is not supported in kernels");
    BODY_ERROR("    with a:\n        pass\n", "3:5: error: 'with' is not supported in kernels");
    BODY_ERROR("    def g():\n        pass\n", "3:5: error: nested 'def' is not supported in kernels");
    BODY_ERROR("    @jit\n    def g():\n        pass\n", "3:5: error: decorators and nested functions are not");
    BODY_ERROR("    class C:\n        pass\n", "3:5: error: 'class' is not supported in kernels");
    BODY_ERROR("    global x\n", "3:5: error: 'global' is not supported in kernels");
    BODY_ERROR("    nonlocal x\n", "3:5: error: 'nonlocal' is not supported in kernels");
    BODY_ERROR("    del x\n", "3:5: error: 'del' is not supported in kernels");
    BODY_ERROR("    raise ValueError()\n", "3:5: error: 'raise' is not supported in kernels");
    BODY_ERROR("    import math\n", "3:5: error: 'import' is not supported in kernels");
    BODY_ERROR("    from math import sin\n", "3:5: error: 'from ... import' is not supported in kernels");
    BODY_ERROR("    yield x\n", "3:5: error: 'yield' is not supported in kernels");
    BODY_ERROR("    x = yield\n", "3:9: error: 'yield' is not supported in kernels");
    BODY_ERROR("    await x\n", "3:5: error: 'await' is not supported in kernels");
    BODY_ERROR("    x = await y\n", "3:9: error: 'await' is not supported in kernels");
    BODY_ERROR("    async for x in y:\n        pass\n", "3:5: error: 'async' is not supported in kernels");
    BODY_ERROR("    match x:\n        case 1:\n            pass\n",
               "3:5: error: 'match' statements are not supported in kernels");
    BODY_ERROR("    type T = int\n", "3:5: error: 'type' alias statements are not supported in kernels");
    BODY_ERROR("    x = 1\n    else:\n        pass\n", "4:5: error: 'else' without a matching 'if'");
    BODY_ERROR("    for i in x:\n        pass\n    else:\n        pass\n",
               "5:5: error: 'else' on a 'for' loop is not supported in kernels");
    BODY_ERROR("    while x:\n        pass\n    else:\n        pass\n",
               "5:5: error: 'else' on a 'while' loop is not supported in kernels");
    /* Unsupported expressions. */
    BODY_ERROR("    f = lambda x: x\n", "3:9: error: 'lambda' is not supported in kernels");
    BODY_ERROR("    a, *b = x\n", "3:8: error: starred expressions are not supported in kernels");
    BODY_ERROR("    x = [*a]\n", "3:10: error: starred expressions are not supported in kernels");
    BODY_ERROR("    x = (a, *b)\n", "3:13: error: starred expressions are not supported in kernels");
    BODY_ERROR("    x = a[*b]\n", "3:11: error: starred expressions are not supported in kernels");
    BODY_ERROR("    for *a in b:\n        pass\n", "3:9: error: starred expressions are not supported in kernels");
    BODY_ERROR("    x = a + *b\n", "3:13: error: expected an expression");
    BODY_ERROR("    x = [i for i in y]\n", "3:9: error: list comprehensions are not supported in kernels");
    BODY_ERROR("    x = {i for i in y}\n", "3:9: error: set comprehensions are not supported in kernels");
    BODY_ERROR("    x = {i: 1 for i in y}\n", "3:9: error: dict comprehensions are not supported in kernels");
    BODY_ERROR("    x = (i for i in y)\n", "3:10: error: generator expressions are not supported in kernels");
    BODY_ERROR("    x = sum(i for i in y)\n", "3:13: error: generator expressions are not supported in kernels");
    BODY_ERROR("    x = {}\n", "3:9: error: dict literals are not supported in kernels");
    BODY_ERROR("    x = {'a': 1}\n", "3:9: error: dict literals are not supported in kernels");
    BODY_ERROR("    x = {**a}\n", "3:9: error: dict literals are not supported in kernels");
    BODY_ERROR("    x = {1, 2}\n", "3:9: error: set literals are not supported in kernels");
    BODY_ERROR("    if (n := 4) > 2:\n        pass\n",
               "3:11: error: assignment expressions (':=') are not supported in kernels");
    BODY_ERROR("    x := 1\n", "3:7: error: assignment expressions (':=') are not supported in kernels");
    BODY_ERROR("    tl.device_print(f'{x}')\n", "3:21: error: f-strings are not supported in kernels");
    BODY_ERROR("    x = 'a' f'b'\n", "3:13: error: f-strings are not supported in kernels");
    BODY_ERROR("    x = b'a'\n", "3:9: error: bytes literals are not supported in kernels");
    BODY_ERROR("    f(*args)\n", "3:7: error: '*' argument unpacking is not supported in kernels");
    BODY_ERROR("    f(**kw)\n", "3:7: error: '**' argument unpacking is not supported in kernels");
    BODY_ERROR("    x = a < b < c\n", "3:15: error: chained comparisons such as 'a < b < c' are rejected by Triton; "
                                      "use '(a < b) & (b < c)'");
    BODY_ERROR("    x = 0 <= i == j\n", "3:16: error: chained comparisons");
    BODY_ERROR("    f(a=1, a=2)\n", "3:12: error: repeated keyword argument 'a'");
    BODY_ERROR("    f(a=1, b)\n", "3:12: error: positional argument follows keyword argument");
    BODY_ERROR("    f(a.b=1)\n", "3:7: error: a keyword argument must be a plain name before '='");
    BODY_ERROR("    x = 1j\n", "3:9: error: imaginary literals are not supported in kernels");
    BODY_ERROR("    x = 18446744073709551616\n", "3:9: error: integer literal is too large (the limit is 2**64-1)");
    BODY_ERROR("    x = 0xfffffffffffffffff\n", "3:9: error: integer literal is too large");
    /* Parameters. */
    ERROR("@jit\ndef k(*args):\n    pass\n", "t.py:2:7: error: variadic parameter '*args' is not supported in kernels");
    ERROR("@jit\ndef k(a, **kw):\n    pass\n",
          "t.py:2:10: error: variadic parameter '**kw' is not supported in kernels");
    ERROR("@jit\ndef k(a, *, b):\n    pass\n",
          "t.py:2:10: error: keyword-only parameters ('*') are not supported in kernels");
    ERROR("@jit\ndef k(a, /, b):\n    pass\n",
          "t.py:2:10: error: positional-only parameters ('/') are not supported in kernels");
    ERROR("@jit\ndef k(a=1, b):\n    pass\n",
          "t.py:2:12: error: parameter without a default follows parameter with a default");
    ERROR("@jit\ndef k(a, a):\n    pass\n", "t.py:2:10: error: duplicate parameter 'a'");
    ERROR("@jit\ndef k(a 1):\n    pass\n", "t.py:2:9: error: expected ',' or ')' after a parameter");
    ERROR("@jit\ndef k(1):\n    pass\n", "t.py:2:7: error: expected a parameter name");
    ERROR("@jit\ndef (a):\n    pass\n", "t.py:2:5: error: expected a name after 'def'");
    ERROR("@jit\ndef k:\n    pass\n", "t.py:2:6: error: expected '(' after the function name");
    ERROR("@jit\ndef k()\n    pass\n", "t.py:2:8: error: expected ':' after the function signature");
    ERROR("@jit\nasync def k():\n    pass\n", "t.py:2:1: error: 'async def' is not supported for kernels");
    ERROR("@triton.jit(do_not_specialize=['m'])\ndef k(n):\n    pass\n",
          "t.py:1:32: error: do_not_specialize names 'm', which is not a parameter of 'k'");
    ERROR("@triton.jit(do_not_specialize=[1])\ndef k(n):\n    pass\n",
          "t.py:1:32: error: do_not_specialize index 1 is out of range: 'k' has 1 parameters");
    /* Syntax errors. */
    BODY_ERROR("    if x\n        pass\n", "3:9: error: expected ':' after the if condition");
    BODY_ERROR("    if x = 1:\n        pass\n",
               "3:10: error: expected ':' after the if condition ('=' assigns; use '==' to compare)");
    BODY_ERROR("    if x:\n        pass\n    elif y\n        pass\n", "5:11: error: expected ':' after the elif condition");
    BODY_ERROR("    if x:\n        pass\n    else\n        pass\n", "5:9: error: expected ':' after 'else'");
    BODY_ERROR("    while x\n        pass\n", "3:12: error: expected ':' after the while condition");
    BODY_ERROR("    for i range(3):\n        pass\n", "3:11: error: expected 'in' after the for loop variable");
    BODY_ERROR("    for i in x\n        pass\n", "3:15: error: expected ':' after the for loop header");
    BODY_ERROR("    for f() in x:\n        pass\n", "3:9: error: cannot assign to function call");
    BODY_ERROR("    if x:\n    pass\n", "4:5: error: expected an indented block");
    BODY_ERROR("    if x:\n", "3:10: error: expected an indented block");
    ERROR("@jit\ndef k():\n", "t.py:2:9: error: expected an indented block");
    ERROR("@jit\ndef k():\nreturn 1\n", "t.py:3:1: error: expected an indented block");
    BODY_ERROR("    x = 1\n        y = 2\n", "4:9: error: unexpected indent");
    BODY_ERROR("    if x:\n        y = 1\n      z = 2\n",
               "5:7: error: unindent does not match any outer indentation level");
    BODY_ERROR("    x = 'abc\n", "3:9: error: unterminated string literal");
    BODY_ERROR("    x = '''abc\n", "3:9: error: unterminated triple-quoted string literal");
    BODY_ERROR("    x = f(a))\n", "3:13: error: unmatched ')'");
    BODY_ERROR("    x = f(a]\n", "3:12: error: closing parenthesis ']' does not match opening parenthesis '('");
    BODY_ERROR("    x = f(a,\n    y = 2\n", "3:10: error: '(' was never closed");
    BODY_ERROR("    x = [a,\n", "3:9: error: '[' was never closed");
    BODY_ERROR("    x =\n", "3:8: error: expected an expression");
    BODY_ERROR("    x = )\n", "3:9: error: unmatched ')'");
    BODY_ERROR("    x = 1 +\n", "3:12: error: expected an expression");
    BODY_ERROR("    x = a b\n", "3:11: error: unexpected 'b' after the statement");
    BODY_ERROR("    return x y\n", "3:14: error: unexpected 'y' after the statement");
    BODY_ERROR("    print 'x'\n", "3:11: error: unexpected string literal after the statement");
    BODY_ERROR("    x = 1 if\n", "3:13: error: expected an expression");
    BODY_ERROR("    x = 1 (\n", "3:11: error: '(' was never closed");
    BODY_ERROR("    x = 1 99999999999999999999999999\n",
               "3:11: error: unexpected '99999999999999999999...' after the statement");
    BODY_ERROR("    f(a b)\n", "3:9: error: expected ',' or ')' after a call argument");
    BODY_ERROR("    x = (a b)\n", "3:12: error: expected ',' or ')'");
    BODY_ERROR("    x = [a b]\n", "3:12: error: expected ',' or ']'");
    BODY_ERROR("    x = a[]\n", "3:11: error: expected an index");
    BODY_ERROR("    x = a[1 2]\n", "3:13: error: expected ',' or ']' after an index");
    BODY_ERROR("    x = a.\n", "3:11: error: expected a name after '.'");
    BODY_ERROR("    x = a.1\n", "3:10: error: unexpected '.1' after the statement");
    BODY_ERROR("    x = a if b\n", "3:15: error: expected 'else' in the conditional expression");
    BODY_ERROR("    x = $\n", "3:9: error: invalid character '$' (U+0024)");
    BODY_ERROR("    x = 1 ? 2 : 3\n", "3:11: error: invalid character '?' (U+003F)");
    BODY_ERROR("    x = 0123\n", "3:9: error: leading zeros in decimal integer literals are not permitted");
    BODY_ERROR("    f(x) = 1\n", "3:5: error: cannot assign to function call");
    BODY_ERROR("    1 = x\n", "3:5: error: cannot assign to literal");
    BODY_ERROR("    None = x\n", "3:5: error: cannot assign to None");
    BODY_ERROR("    True = x\n", "3:5: error: cannot assign to True");
    BODY_ERROR("    a + b = x\n", "3:7: error: cannot assign to expression");
    BODY_ERROR("    a < b = x\n", "3:7: error: cannot assign to comparison");
    BODY_ERROR("    a, b += 1\n", "3:5: error: 'tuple' is an illegal expression for augmented assignment");
    BODY_ERROR("    a, b: int = 1, 2\n", "3:5: error: only single target (not tuple) can be annotated");
    BODY_ERROR("    x = 1 \\ 2\n", "3:11: error: unexpected character after line continuation character");
    BODY_ERROR("    x = 1\n\ty = 2\n", "4:2: error: inconsistent use of tabs and spaces in indentation");
    BODY_ERROR("    elif x:\n        pass\n", "3:5: error: 'elif' without a matching 'if'");
    ERROR("@jit\ndef k(): return 1\n    x = 2\n", "t.py:3:5: error: unexpected indent");
    ERROR("@jit\ndef k(a,\n", "t.py:2:6: error: '(' was never closed");


    /* The whole rendered message: caret under the column, tabs kept. */
    DIAGS("@jit\ndef k():\n    break\n",
          "t.py:3:5: error: 'break' is not supported in kernels\n    " "    break\n    " "    ^\n");
    DIAGS("@jit\ndef k():\n\tx = a < b < c\n",
          "t.py:3:12: error: chained comparisons such as 'a < b < c' are rejected by Triton; use '(a < b) & (b < c)'\n"
          "    \tx = a < b < c\n    \t          ^\n");
    DIAGS("@jit\r\ndef k():\r\n    x = $\r\n", "t.py:3:9: error: invalid character '$' (U+0024)\n        x = $\n"
                                               "            ^\n");
    DIAGS("@jit\rdef k():\r    x = $\r", "t.py:3:9: error: invalid character '$' (U+0024)\n        x = $\n"
                                          "            ^\n");

    /* One error per kernel, no cascades; the next kernel is still parsed. */
    DIAGS("@jit\ndef a():\n    x = (\n      1 2)\n@jit\ndef b():\n    break\n@jit\ndef c():\n    pass\n"
          "@jit\ndef d():\n    x = 1 +\n    continue\n",
          "t.py:4:9: error: expected ',' or ')'\n          1 2)\n            ^\n"
          "t.py:7:5: error: 'break' is not supported in kernels\n        break\n        ^\n"
          "t.py:13:12: error: expected an expression\n        x = 1 +\n               ^\n");
    /* Errors in host code are never reported. */
    DIAGS("def host():\n    break\n    x = $\nclass C:\n    @jit\n    def k(): break\n", "");
    DIAGS("@jit\ndef k():\n    return 1\n$x = 1\n", "");
    DIAGS("@jit\ndef k(): return 1\n$x = 1\n", "");
}

/* --- limits ---------------------------------------------------------------------------------- */

static char *repeat(const char *head, const char *s, int n, const char *tail) {
    size_t hl = strlen(head), l = strlen(s), tl = strlen(tail);
    char *out = malloc(hl + l * (size_t)n + tl + 1), *o = out;
    memcpy(o, head, hl);
    o += hl;
    for (int i = 0; i < n; i++, o += l) memcpy(o, s, l);
    memcpy(o, tail, tl + 1);
    return out;
}

static void test_limits(void) {
    char *s;
    s = repeat("@jit\ndef k():\n    x = ", "(", 100, "1");
    char *t = repeat(s, ")", 100, "\n");
    Result r = parse(t);
    checks++;
    if (r.nerrors) fail(__LINE__, "100 nested parentheses", "", "", r.diags);
    free_result(&r);
    free(s);
    free(t);

    s = repeat("@jit\ndef k():\n    x = ", "(", 100000, "\n");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "expression nested too deeply")) fail(__LINE__, "deep parentheses", "", "", r.diags);
    free_result(&r);
    free(s);

    s = repeat("@jit\ndef k():\n    x = ", "-", 100000, "1\n");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "expression nested too deeply")) fail(__LINE__, "deep unary", "", "", r.diags);
    free_result(&r);
    free(s);

    s = repeat("@jit\ndef k():\n    x = 1", "+1", 100000, "\n");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "expression nested too deeply")) fail(__LINE__, "long chain", "", "", r.diags);
    free_result(&r);
    free(s);

    s = repeat("@jit\ndef k():\n    x = 1", "**1", 100000, "\n");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "expression nested too deeply")) fail(__LINE__, "power chain", "", "", r.diags);
    free_result(&r);
    free(s);

    s = repeat("@jit\ndef k():\n    x = 1", " if 1 else 1", 100000, "\n");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "expression nested too deeply")) fail(__LINE__, "conditional chain", "", "", r.diags);
    free_result(&r);
    free(s);

    /* 300 nested ifs, each indented one more space. */
    size_t cap = 300 * 320 + 100, n = 0;
    s = malloc(cap);
    n += (size_t)sprintf(s, "@jit\ndef k():\n");
    for (int i = 1; i <= 300; i++) n += (size_t)sprintf(s + n, "%*sif x:\n", i, "");
    sprintf(s + n, "%*spass\n", 301, "");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "statements nested too deeply")) fail(__LINE__, "deep blocks", "", "", r.diags);
    free_result(&r);
    free(s);

    s = repeat("@jit\ndef k():\n    if x:\n        pass\n", "    elif x:\n        pass\n", 1000, "");
    r = parse(s);
    checks++;
    if (!strstr(r.diags, "statements nested too deeply")) fail(__LINE__, "long elif chain", "", "", r.diags);
    free_result(&r);
    free(s);

    /* Host code may nest without limit. */
    s = repeat("x = ", "(", 100000, "\n");
    r = parse(s);
    checks++;
    if (r.nerrors || strcmp(r.dump, "(host x variable)\n") != 0) fail(__LINE__, "deep host code", "", "", r.dump);
    free_result(&r);
    free(s);
    s = repeat("x = ", "f'{", 1000, "\n");
    r = parse(s);
    checks++;
    if (r.nerrors || strcmp(r.dump, "(host x variable)\n") != 0) fail(__LINE__, "deep f-strings", "", "", r.dump);
    free_result(&r);
    free(s);

    /* Long flat lists are fine. */
    s = repeat("@jit\ndef k():\n    x = f(", "1, ", 5000, "1)\n");
    r = parse(s);
    checks++;
    if (r.nerrors) fail(__LINE__, "5000 arguments", "", "", r.diags);
    free_result(&r);
    free(s);
    s = repeat("@jit\ndef k():\n", "    x = 1\n", 20000, "");
    r = parse(s);
    checks++;
    if (r.nerrors || strncmp(r.dump, "(def k ()\n  (= x 1)", 18) != 0) fail(__LINE__, "20000 statements", "", "", r.diags);
    free_result(&r);
    free(s);

    /* NUL bytes. */
    static const char nul[] = "@jit\ndef k():\n    x = 1\0\n";
    r = parse_len(nul, sizeof nul - 1);
    checks++;
    if (!strstr(r.diags, "t.py:3:10: error: source code cannot contain null bytes"))
        fail(__LINE__, "NUL byte", nul, "", r.diags);
    free_result(&r);

    /* Every prefix of a kernel parses without crashing. */
    const char *k = "import triton.language as tl\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
                    "    offs = tl.program_id(0) * B + tl.arange(0, B)\n    if n > 0:\n"
                    "        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n    else:\n        x = 1.5e3\n"
                    "    tl.store(x_ptr + offs, -x ** 2, mask=offs < n)\n    s = '''a\nb'''\n";
    for (size_t i = 0; i <= strlen(k); i++) {
        r = parse_len(k, i);
        free_result(&r);
    }
}

/* Every keyword lexes as itself; names that start, end or nearly match one
 * stay names (the lookup stops early by length and first byte). */
static void test_keywords(void) {
    static const char *const names[] = {"a", "z", "_", "Fals", "Falsey", "NONE", "true", "an", "andx", "asser",
                                        "continues", "nonlocals", "yiel", "yields", "x_if", "If", "zz", "elsewhere"};
    for (int k = NR_T_KW_FALSE; k <= NR_T_KW_YIELD; k++) {
        const char *kw = nr_tok_spelling((NrTokKind)k);
        checks++;
        NrArena a;
        nr_arena_init(&a);
        NrSources s;
        nr_sources_init(&s, &a);
        NrTokens t = nr_lex(&a, &a, &s, nr_sources_add(&s, &a, "t.py", kw, strlen(kw)));
        if (t.n < 1 || t.v[0].kind != k) fail(__LINE__, "keyword", kw, kw, "another token");
        nr_arena_free(&a);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        checks++;
        NrArena a;
        nr_arena_init(&a);
        NrSources s;
        nr_sources_init(&s, &a);
        NrTokens t = nr_lex(&a, &a, &s, nr_sources_add(&s, &a, "t.py", names[i], strlen(names[i])));
        if (t.n < 1 || t.v[0].kind != NR_T_NAME) fail(__LINE__, "name", names[i], "NAME", "a keyword");
        nr_arena_free(&a);
    }
}

int main(void) {
    test_lexer();
    test_keywords();
    test_expressions();
    test_statements();
    test_module();
    test_errors();
    test_limits();
    if (failures) {
        printf("test_parse: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_parse: %d checks passed\n", checks);
    return 0;
}
