/* aot_tools.c - the CUDA toolkit programs Nereid runs at build time: ptxas
 * (PTX -> cubin, and the resource use it reports with -v) and cuobjdump or
 * nvdisasm (cubin -> SASS).  Neither is needed to run kernels: the driver
 * compiles PTX itself.  Programs run with posix_spawn, their output going to
 * a file in a private temporary directory. */
#include "aot.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { MAX_OUTPUT = 64 << 20 };

static bool is_exec(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* dir/name when it is an executable file. */
static const char *try_dir(NrArena *a, const char *dir, size_t dlen, const char *name) {
    if (dlen == 0) return NULL;
    const char *path = nr_sprintf(a, "%.*s/%s", (int)dlen, dir, name);
    return is_exec(path) ? path : NULL;
}

const char *nr_tool_find(NrArena *a, const char *name) {
    const char *found = NULL;
    const char *path = getenv("PATH");
    while (path && *path && !found) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        found = try_dir(a, path, n, name);
        path = colon ? colon + 1 : NULL;
    }
    static const char *const homes[] = {"CUDA_HOME", "CUDA_PATH"};
    for (size_t i = 0; i < NR_COUNTOF(homes) && !found; i++) {
        const char *h = getenv(homes[i]);
        if (h && *h) found = try_dir(a, nr_sprintf(a, "%s/bin", h), strlen(h) + 4, name);
    }
    if (!found) found = try_dir(a, "/usr/local/cuda/bin", strlen("/usr/local/cuda/bin"), name);
    return found;
}

bool nr_aot_parse_arch(const char *s, int *sm, bool *arch_specific) {
    static const struct {
        const char *name;
        int sm;
        bool a;
    } archs[] = {{"sm_80", 80, false}, {"sm_86", 86, false}, {"sm_89", 89, false}, {"sm_90", 90, false},
                 {"sm_90a", 90, true}};
    for (size_t i = 0; i < NR_COUNTOF(archs); i++)
        if (strcmp(s, archs[i].name) == 0) {
            *sm = archs[i].sm;
            *arch_specific = archs[i].a;
            return true;
        }
    return false;
}

/* ---- temporary files ---- */

const char *nr_tmpdir_open(NrArena *a, NrTmpDir *t) {
    memset(t, 0, sizeof *t);
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    if (snprintf(t->path, sizeof t->path, "%s/nereid-XXXXXX", base) >= (int)sizeof t->path)
        return "the temporary directory's path is too long";
    if (!mkdtemp(t->path)) {
        const char *msg = nr_sprintf(a, "cannot create a temporary directory in '%s': %s", base, strerror(errno));
        t->path[0] = 0;
        return msg;
    }
    return NULL;
}

const char *nr_tmpdir_path(NrArena *a, NrTmpDir *t, const char *name) {
    char *p = nr_sprintf(a, "%s/%s", t->path, name);
    *NR_PUSH(a, t->files, t->nfiles, t->capfiles) = p;
    return p;
}

const char *nr_tmpdir_write(NrArena *a, NrTmpDir *t, const char *name, const void *data, size_t len,
                            const char **err) {
    const char *path = nr_tmpdir_path(a, t, name);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        *err = nr_sprintf(a, "cannot write '%s': %s", path, strerror(errno));
        return NULL;
    }
    return path;
}

void nr_tmpdir_close(NrTmpDir *t) {
    for (int i = 0; i < t->nfiles; i++) unlink(t->files[i]);
    if (t->path[0]) rmdir(t->path);
    t->path[0] = 0;
    t->nfiles = 0;
}

/* The whole content of a file into the arena (NUL-terminated), at most max bytes. */
static char *slurp(NrArena *a, const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = nr_alloc(a, cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) break;
            size_t ncap = cap * 2 > max ? max : cap * 2;
            buf = nr_arena_grow(a, buf, cap + 1, ncap + 1);
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

int nr_tool_run(NrArena *a, NrTmpDir *t, const char *const *argv, char **output) {
    const char *log = nr_tmpdir_path(a, t, nr_sprintf(a, "log%d.txt", t->nfiles));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *output = nr_sprintf(a, "cannot run '%s': %s", argv[0], strerror(rc));
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            *output = nr_sprintf(a, "cannot wait for '%s': %s", argv[0], strerror(errno));
            return -1;
        }
    }
    size_t len;
    *output = slurp(a, log, MAX_OUTPUT, &len);
    if (!*output) *output = nr_strdup(a, "");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
}

/* ---- ptxas ---- */

/* The number before `what` in "..., 12 bytes smem, ..." or after "Used " in
 * "Used 26 registers"; -1 when absent. */
static int number_before(const char *s, const char *what) {
    const char *p = strstr(s, what);
    if (!p) return -1;
    const char *q = p;
    while (q > s && q[-1] == ' ') q--;
    const char *end = q;
    while (q > s && q[-1] >= '0' && q[-1] <= '9') q--;
    if (q == end) return -1;
    long v = strtol(q, NULL, 10);
    return v > INT_MAX ? INT_MAX : (int)v;
}

void nr_ptxas_parse_info(const char *log, NrAsmInfo *info) {
    static const struct {
        const char *what;
        size_t offset;
    } fields[] = {
        {" registers", offsetof(NrAsmInfo, num_regs)},
        {" bytes spill stores", offsetof(NrAsmInfo, spill_store_bytes)},
        {" bytes spill loads", offsetof(NrAsmInfo, spill_load_bytes)},
        {" bytes stack frame", offsetof(NrAsmInfo, stack_bytes)},
        {" bytes smem", offsetof(NrAsmInfo, static_shared_bytes)},
        {" bytes cmem[0]", offsetof(NrAsmInfo, const_bytes)},
        {" barriers", offsetof(NrAsmInfo, barriers)},
    };
    for (size_t i = 0; i < NR_COUNTOF(fields); i++) {
        int v = number_before(log, fields[i].what);
        if (v < 0) v = 0;
        memcpy((char *)info + fields[i].offset, &v, sizeof v);
    }
}

const char *nr_ptxas_assemble(NrArena *a, const char *ptxas, const char *ptx, const char *arch, const void **cubin,
                              size_t *size, NrAsmInfo *info) {
    *cubin = NULL;
    *size = 0;
    if (!ptxas) ptxas = nr_tool_find(a, "ptxas");
    if (!ptxas)
        return "ptxas not found (looked " NR_TOOL_SEARCH_TEXT "); install the CUDA toolkit, or set CUDA_HOME";
    NrTmpDir t;
    const char *err = nr_tmpdir_open(a, &t);
    if (err) return err;
    const char *in = nr_tmpdir_write(a, &t, "kernel.ptx", ptx, strlen(ptx), &err);
    const char *out = nr_tmpdir_path(a, &t, "kernel.cubin");
    if (in) {
        const char *archopt = nr_sprintf(a, "-arch=%s", arch);
        const char *argv[] = {ptxas, archopt, "-v", "-o", out, in, NULL};
        char *log;
        int rc = nr_tool_run(a, &t, argv, &log);
        if (rc != 0) {
            err = rc < 0 ? log : nr_sprintf(a, "ptxas -arch=%s failed (exit status %d):\n%s", arch, rc, log);
        } else {
            size_t n;
            char *bin = slurp(a, out, (size_t)1 << 30, &n);
            if (!bin || n == 0) {
                err = nr_sprintf(a, "ptxas -arch=%s produced no cubin", arch);
            } else {
                *cubin = bin;
                *size = n;
                if (info) {
                    nr_ptxas_parse_info(log, info);
                    snprintf(info->arch, sizeof info->arch, "%s", arch);
                }
            }
        }
    }
    nr_tmpdir_close(&t);
    return err;
}

/* ---- SASS ---- */

const char *nr_disassemble(NrArena *a, const void *cubin, size_t size, char **sass) {
    *sass = NULL;
    const char *tool = nr_tool_find(a, "cuobjdump");
    bool objdump = tool != NULL;
    if (!tool) tool = nr_tool_find(a, "nvdisasm");
    if (!tool)
        return "cuobjdump not found (looked " NR_TOOL_SEARCH_TEXT ", for nvdisasm too); SASS needs the CUDA "
               "toolkit's cuobjdump";
    NrTmpDir t;
    const char *err = nr_tmpdir_open(a, &t);
    if (err) return err;
    const char *in = nr_tmpdir_write(a, &t, "kernel.cubin", cubin, size, &err);
    if (in) {
        const char *argv_objdump[] = {tool, "-sass", in, NULL};
        const char *argv_disasm[] = {tool, "-c", in, NULL};
        char *out;
        int rc = nr_tool_run(a, &t, objdump ? argv_objdump : argv_disasm, &out);
        if (rc != 0)
            err = rc < 0 ? out : nr_sprintf(a, "%s failed (exit status %d):\n%s", tool, rc, out);
        else
            *sass = out;
    }
    nr_tmpdir_close(&t);
    return err;
}
