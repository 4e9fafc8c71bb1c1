/* _C.c - the CPython extension over Nereid's C API (include/nereid.h).
 *
 *   compile(source, filename, kernel, signature, num_warps, num_stages, stop_after) -> Kernel
 *   check(source, filename) -> None
 *   Kernel.name, Kernel.ir, Kernel.args  ((kind, name, dtype, param_index), ...)
 *   Kernel.launch_interp(grid, args)     args: (address, nbytes) for buffers, int, float
 *
 * Compile errors raise CompileError(text, diagnostics) where diagnostics is a
 * list of (severity, file, line, col, message, source_line); launch faults
 * raise LaunchError(text, diagnostics). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "nereid.h"

#include <pthread.h>
#include <string.h>

static PyObject *CompileError;
static PyObject *LaunchError;

typedef struct {
    PyObject_HEAD
    NrKernel *k;
    PyObject *args;  /* cached tuple */
} KernelObject;

static PyObject *diag_list(NrContext *ctx) {
    int n = nr_error_count(ctx);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; i++) {
        NrDiagnostic d;
        nr_error_get(ctx, i, &d);
        PyObject *t = Py_BuildValue("(ssiiss)", d.severity, d.file, d.line, d.col, d.message, d.source_line);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static void raise_with_diags(PyObject *type, NrContext *ctx) {
    PyObject *diags = diag_list(ctx);
    if (!diags) return;
    PyObject *exc_args = Py_BuildValue("(sO)", nr_error_text(ctx), diags);
    Py_DECREF(diags);
    if (!exc_args) return;
    PyErr_SetObject(type, exc_args);
    Py_DECREF(exc_args);
}

static void Kernel_dealloc(KernelObject *self) {
    nr_kernel_destroy(self->k);
    Py_XDECREF(self->args);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Kernel_get_name(KernelObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(nr_kernel_name(self->k));
}

static PyObject *Kernel_get_ir(KernelObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(nr_kernel_ir(self->k));
}

static PyObject *Kernel_get_args(KernelObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->args);
    return self->args;
}

static int grid_from(PyObject *grid, unsigned g[3]) {
    g[0] = g[1] = g[2] = 1;
    PyObject *seq = PySequence_Fast(grid, "grid must be a tuple of 1 to 3 integers");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 3) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "grid must have 1 to 3 dimensions");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < 0 || v > 0x7fffffffLL) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "grid dimension %zd is %lld; it must be between 0 and 2^31-1", i, v);
            return -1;
        }
        g[i] = (unsigned)v;
    }
    Py_DECREF(seq);
    return 0;
}

/* Python values to NrArgs per the kernel's argument table; -1 with an exception set. */
static int convert_args(KernelObject *self, PyObject *seq, NrArg *cargs, Py_ssize_t n) {
    int want = nr_kernel_num_args(self->k);
    if (n != want) {
        PyErr_Format(PyExc_TypeError, "kernel '%s' takes %d runtime arguments, got %zd", nr_kernel_name(self->k),
                     want, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        NrArgInfo ai;
        nr_kernel_arg_info(self->k, (int)i, &ai);
        cargs[i].kind = ai.kind;
        if (ai.kind == NR_ARG_BUFFER) {
            unsigned long long addr, nbytes;
            if (!PyArg_ParseTuple(o, "KK", &addr, &nbytes)) return -1;
            cargs[i].data = (void *)(uintptr_t)addr;
            cargs[i].bytes = (size_t)nbytes;
        } else if (ai.kind == NR_ARG_INT) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow > 0) {
                unsigned long long u = PyLong_AsUnsignedLongLong(o);
                if (PyErr_Occurred()) return -1;
                v = (long long)u;
            } else if (overflow < 0 || (v == -1 && PyErr_Occurred())) {
                if (!PyErr_Occurred()) PyErr_Format(PyExc_OverflowError, "argument '%s' does not fit in 64 bits", ai.name);
                return -1;
            }
            cargs[i].i = v;
        } else {
            double v = PyFloat_AsDouble(o);
            if (v == -1.0 && PyErr_Occurred()) return -1;
            cargs[i].f = v;
        }
    }
    return 0;
}

/* One NrContext per thread, kept for the thread's life (contexts hold the
 * driver handles, so they are not created per launch). */
static void destroy_context(void *p) { nr_context_destroy(p); }
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static void make_key(void) { pthread_key_create(&ctx_key, destroy_context); }
static NrContext *thread_context(void) {
    pthread_once(&ctx_once, make_key);
    NrContext *c = pthread_getspecific(ctx_key);
    if (!c) {
        c = nr_context_create();
        pthread_setspecific(ctx_key, c);
    }
    return c;
}

static PyObject *Kernel_launch_interp(KernelObject *self, PyObject *a) {
    PyObject *grid, *args;
    if (!PyArg_ParseTuple(a, "OO", &grid, &args)) return NULL;
    unsigned g[3];
    if (grid_from(grid, g)) return NULL;
    PyObject *seq = PySequence_Fast(args, "args must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int want = nr_kernel_num_args(self->k);
    if (n != want) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_TypeError, "kernel '%s' takes %d runtime arguments, got %zd", nr_kernel_name(self->k),
                     want, n);
        return NULL;
    }
    NrArg *cargs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(NrArg));
    if (!cargs) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    if (convert_args(self, seq, cargs, n)) goto bad;
    Py_DECREF(seq);
    NrContext *ctx = nr_context_create();
    NrStatus st;
    Py_BEGIN_ALLOW_THREADS
    st = nr_launch_interp(ctx, self->k, g, cargs, (int)n);
    Py_END_ALLOW_THREADS
    PyMem_Free(cargs);
    if (st != NR_OK) {
        raise_with_diags(st == NR_ERR_LAUNCH ? LaunchError : PyExc_ValueError, ctx);
        nr_context_destroy(ctx);
        return NULL;
    }
    /* device_print output and warnings are written by the interpreter itself. */
    nr_context_destroy(ctx);
    Py_RETURN_NONE;
bad:
    Py_DECREF(seq);
    PyMem_Free(cargs);
    return NULL;
}

/* launch_gpu(grid, args, stream, device, sync): buffers are (device address, nbytes). */
static PyObject *Kernel_launch_gpu(KernelObject *self, PyObject *a) {
    PyObject *grid, *args;
    unsigned long long stream = 0;
    int device = 0, sync = 0;
    if (!PyArg_ParseTuple(a, "OO|Kip", &grid, &args, &stream, &device, &sync)) return NULL;
    NrLaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    if (grid_from(grid, lc.grid)) return NULL;
    lc.stream = (void *)(uintptr_t)stream;
    lc.device = device;
    lc.sync = sync;
    PyObject *seq = PySequence_Fast(args, "args must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    NrArg *cargs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(NrArg));
    if (!cargs) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    if (convert_args(self, seq, cargs, n)) {
        Py_DECREF(seq);
        PyMem_Free(cargs);
        return NULL;
    }
    Py_DECREF(seq);
    NrContext *ctx = thread_context();
    if (!ctx) {
        PyMem_Free(cargs);
        return PyErr_NoMemory();
    }
    NrStatus st;
    Py_BEGIN_ALLOW_THREADS
    st = nr_launch_gpu(ctx, self->k, &lc, cargs, (int)n);
    Py_END_ALLOW_THREADS
    PyMem_Free(cargs);
    if (st != NR_OK) {
        raise_with_diags(st == NR_ERR_LAUNCH ? LaunchError : PyExc_ValueError, ctx);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Kernel_gpu_info(KernelObject *self, PyObject *a) {
    int device = 0;
    if (!PyArg_ParseTuple(a, "|i", &device)) return NULL;
    NrContext *ctx = thread_context();
    if (!ctx) return PyErr_NoMemory();
    NrGpuKernelInfo gi;
    NrStatus st;
    Py_BEGIN_ALLOW_THREADS
    st = nr_kernel_gpu_info(ctx, self->k, device, &gi);
    Py_END_ALLOW_THREADS
    if (st != NR_OK) {
        raise_with_diags(st == NR_ERR_LAUNCH ? LaunchError : PyExc_ValueError, ctx);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:i,s:i,s:i}", "n_regs", gi.num_regs, "n_spills",
                         gi.spill_bytes, "static_shared", gi.static_shared_bytes, "shared", gi.dynamic_shared_bytes,
                         "max_threads", gi.max_threads_per_block, "threads", gi.threads, "device_name",
                         gi.device_name, "sm", gi.sm, "sm_count", gi.sm_count, "max_shared_optin", gi.max_shared_optin);
}

static PyObject *Kernel_get_ptx(KernelObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(nr_kernel_ptx(self->k));
}

static PyObject *Kernel_get_num_warps(KernelObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(nr_kernel_num_warps(self->k));
}

static PyObject *Kernel_get_shared(KernelObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(nr_kernel_shared_bytes(self->k));
}

static PyGetSetDef Kernel_getset[] = {
    {"ptx", (getter)Kernel_get_ptx, NULL, "PTX text (GPU kernels)", NULL},
    {"num_warps", (getter)Kernel_get_num_warps, NULL, "warps per program (GPU kernels)", NULL},
    {"shared", (getter)Kernel_get_shared, NULL, "dynamic shared memory per launch (GPU kernels)", NULL},
    {"name", (getter)Kernel_get_name, NULL, "kernel name", NULL},
    {"ir", (getter)Kernel_get_ir, NULL, "block IR after the pipeline", NULL},
    {"args", (getter)Kernel_get_args, NULL, "runtime arguments: (kind, name, dtype, param_index)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Kernel_methods[] = {
    {"launch_interp", (PyCFunction)Kernel_launch_interp, METH_VARARGS, "run on the reference interpreter"},
    {"launch_gpu", (PyCFunction)Kernel_launch_gpu, METH_VARARGS, "launch_gpu(grid, args, stream=0, device=0, sync=False)"},
    {"gpu_info", (PyCFunction)Kernel_gpu_info, METH_VARARGS, "gpu_info(device=0) -> dict"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nereid._C.Kernel",
    .tp_basicsize = sizeof(KernelObject),
    .tp_dealloc = (destructor)Kernel_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a compiled Nereid kernel",
    .tp_methods = Kernel_methods,
    .tp_getset = Kernel_getset,
};

static PyObject *build_args_tuple(NrKernel *k) {
    int n = nr_kernel_num_args(k);
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    static const char *const kinds[] = {"buffer", "int", "float"};
    for (int i = 0; i < n; i++) {
        NrArgInfo ai;
        nr_kernel_arg_info(k, i, &ai);
        PyObject *e = Py_BuildValue("(sssi)", kinds[ai.kind], ai.name, ai.dtype, ai.param_index);
        if (!e) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, e);
    }
    return t;
}

static PyObject *py_compile(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"source", "filename", "kernel", "signature", "num_warps", "num_stages", "stop_after",
                             "verify_each", "arch", NULL};
    const char *src, *filename, *kernel, *sig, *stop_after = NULL, *arch = NULL;
    Py_ssize_t len;
    int num_warps = 4, num_stages = 3, verify_each = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#sss|iizpz", kwlist, &src, &len, &filename, &kernel, &sig,
                                     &num_warps, &num_stages, &stop_after, &verify_each, &arch))
        return NULL;
    NrOptions o;
    nr_options_default(&o);
    o.num_warps = num_warps;
    o.num_stages = num_stages;
    o.stop_after = stop_after;
    o.verify_each = verify_each;
    o.arch = arch;
    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrStatus st;
    Py_BEGIN_ALLOW_THREADS
    st = nr_compile(ctx, src, (size_t)len, filename, kernel, sig, &o, &k);
    Py_END_ALLOW_THREADS
    if (st != NR_OK) {
        raise_with_diags(st == NR_ERR_COMPILE ? CompileError : PyExc_ValueError, ctx);
        nr_context_destroy(ctx);
        return NULL;
    }
    PyObject *notes = diag_list(ctx);
    nr_context_destroy(ctx);
    KernelObject *ko = PyObject_New(KernelObject, &KernelType);
    if (!ko) {
        Py_XDECREF(notes);
        nr_kernel_destroy(k);
        return NULL;
    }
    ko->k = k;
    ko->args = build_args_tuple(k);
    if (!ko->args) {
        Py_XDECREF(notes);
        Py_DECREF(ko);
        return NULL;
    }
    PyObject *r = Py_BuildValue("(NN)", (PyObject *)ko, notes ? notes : PyList_New(0));
    return r;
}

static PyObject *py_check(PyObject *mod, PyObject *args) {
    (void)mod;
    const char *src, *filename;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#s", &src, &len, &filename)) return NULL;
    NrContext *ctx = nr_context_create();
    NrStatus st = nr_check_source(ctx, src, (size_t)len, filename);
    if (st != NR_OK) {
        raise_with_diags(CompileError, ctx);
        nr_context_destroy(ctx);
        return NULL;
    }
    nr_context_destroy(ctx);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))py_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, filename, kernel, signature, num_warps=4, num_stages=3, stop_after=None, verify_each=False)"
     " -> (Kernel, notes)"},
    {"check", py_check, METH_VARARGS, "check(source, filename): parse and check a module"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "nereid._C", "Nereid's compiler, in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) {
    if (PyType_Ready(&KernelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    CompileError = PyErr_NewException("nereid._C.CompileError", PyExc_Exception, NULL);
    LaunchError = PyErr_NewException("nereid._C.LaunchError", PyExc_RuntimeError, NULL);
    if (!CompileError || !LaunchError) return NULL;
    Py_INCREF(CompileError);
    Py_INCREF(LaunchError);
    PyModule_AddObject(m, "CompileError", CompileError);
    PyModule_AddObject(m, "LaunchError", LaunchError);
    Py_INCREF(&KernelType);
    PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType);
    PyModule_AddStringConstant(m, "VERSION", NEREID_VERSION);
    return m;
}
