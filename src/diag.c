/* diag.c - recording and rendering diagnostics; see diag.h. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void nr_sources_init(NrSources *s, NrArena *a) {
    memset(s, 0, sizeof *s);
    NrSource *u = NR_PUSH(a, s->v, s->n, s->cap);
    u->name = "<unknown>";
    u->text = "";
}

uint32_t nr_sources_add(NrSources *s, NrArena *a, const char *name, const char *text, size_t len) {
    NrSource *src = NR_PUSH(a, s->v, s->n, s->cap);
    src->name = nr_strdup(a, name ? name : "<input>");
    src->text = nr_strndup(a, text, len);
    src->len = len;
    return (uint32_t)(s->n - 1);
}

void nr_diags_init(NrDiags *d, NrArena *a, NrSources *s) {
    memset(d, 0, sizeof *d);
    d->arena = a;
    d->sources = s;
}

static void vadd(NrDiags *d, NrSeverity sev, NrLoc loc, const char *fmt, va_list ap) {
    int limit = d->max_errors ? d->max_errors : 50;
    if (sev == NR_SEV_ERROR) {
        d->nerrors++;
        if (d->nerrors > limit) return;
    } else if (d->nerrors > limit) {
        return;
    }
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *msg = nr_alloc(d->arena, (size_t)(n > 0 ? n : 0) + 1);
    vsnprintf(msg, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    NrDiag *dg = NR_PUSH(d->arena, d->v, d->n, d->cap);
    dg->sev = sev;
    dg->loc = loc;
    dg->msg = msg;
}

void nr_error(NrDiags *d, NrLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, NR_SEV_ERROR, loc, fmt, ap);
    va_end(ap);
}

void nr_warning(NrDiags *d, NrLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, NR_SEV_WARNING, loc, fmt, ap);
    va_end(ap);
}

void nr_note(NrDiags *d, NrLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, NR_SEV_NOTE, loc, fmt, ap);
    va_end(ap);
}

char *nr_source_line(NrArena *a, const NrSources *s, NrLoc loc) {
    if (!s || loc.file == 0 || (int)loc.file >= s->n || loc.line == 0) return nr_strdup(a, "");
    const NrSource *src = &s->v[loc.file];
    const char *p = src->text, *end = src->text + src->len;
    /* Lines end at "\n", "\r\n" or a lone "\r", as the tokenizer counts them. */
    for (uint32_t l = 1; l < loc.line && p < end; p++)
        if (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] != '\n'))) l++;
    const char *q = p;
    while (q < end && *q != '\n' && *q != '\r') q++;
    return nr_strndup(a, p, (size_t)(q - p));
}

static const char *sev_name(NrSeverity s) {
    switch (s) {
    case NR_SEV_ERROR: return "error";
    case NR_SEV_WARNING: return "warning";
    case NR_SEV_NOTE: return "note";
    }
    return "error";
}

char *nr_diag_render(NrArena *a, const NrSources *s, const NrDiag *dg) {
    const char *file = "<unknown>";
    int line_off = 0;
    if (s && dg->loc.file > 0 && (int)dg->loc.file < s->n) {
        file = s->v[dg->loc.file].name;
        line_off = s->v[dg->loc.file].line_offset;
    }
    if (dg->loc.line == 0) return nr_sprintf(a, "%s: %s: %s\n", file, sev_name(dg->sev), dg->msg);
    char *line = nr_source_line(a, s, dg->loc);
    size_t len = strlen(line);
    /* Caret line: keep tabs so the caret lines up under tab-indented source. */
    size_t col = dg->loc.col ? dg->loc.col - 1 : 0;
    if (col > len) col = len;
    char *caret = nr_alloc(a, col + 2);
    for (size_t i = 0; i < col; i++) caret[i] = line[i] == '\t' ? '\t' : ' ';
    caret[col] = '^';
    return nr_sprintf(a, "%s:%u:%u: %s: %s\n    %s\n    %s\n", file, dg->loc.line + (unsigned)line_off,
                      dg->loc.col, sev_name(dg->sev), dg->msg, line, caret);
}

char *nr_diags_render(NrArena *a, const NrDiags *d) {
    size_t total = 1;
    char **parts = nr_alloc(a, sizeof(char *) * (size_t)(d->n + 1));
    for (int i = 0; i < d->n; i++) {
        parts[i] = nr_diag_render(a, d->sources, &d->v[i]);
        total += strlen(parts[i]);
    }
    char *out = nr_alloc(a, total), *p = out;
    for (int i = 0; i < d->n; i++) {
        size_t l = strlen(parts[i]);
        memcpy(p, parts[i], l);
        p += l;
    }
    *p = 0;
    return out;
}
