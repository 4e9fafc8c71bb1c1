/* _C.c - the CPython extension over Nereid's C API (include/nereid.h).
 *
 *   compile(source, filename, kernel, signature, num_warps, num_stages, stop_after, verify_each, arch,
 *           maxnreg=0, fp_fusion=True, no_tma=False) -> (Kernel, notes)
 *   check(source, filename) -> None
 *   Kernel.name, Kernel.ir, Kernel.args  ((kind, name, dtype, param_index), ...)
 *   Kernel.tensor_maps                   [{base_arg, rank, dtype, elem_bytes, box, swizzle, nan_fill}, ...]
 *   Kernel.launch_interp(grid, args)     args: (address, nbytes) for buffers, int, float
 *   Kernel.launch_gpu(grid, args, stream, device, sync)
 *   Dispatcher                           base class of nereid.JITFunction: the launch fast path, warmup()
 *   set_api(...), register_dtype(...)    what the fast path knows of torch (types, dtypes, the stream)
 *   fast_path_info() -> dict             how it reads tensors and gets the stream
 *   device_properties(device) -> dict    what the driver says of a CUDA device
 *
 * Compile errors raise CompileError(text, diagnostics) where diagnostics is a
 * list of (severity, file, line, col, message, source_line); launch faults
 * raise LaunchError(text, diagnostics).
 *
 * The launch fast path.  `kernel[grid](*args, **kw)` is a Launcher call: in C
 * it binds the arguments to the kernel's parameters, computes the
 * specialization key (per argument its kind: torch tensor, numpy or CUDA array
 * interface, int, float, bool, None or a constexpr value, host tensor
 * descriptor, tuple; pointer dtypes, 16-byte alignment of data pointers,
 * integers equal to 1 or divisible by 16 and their range, constexpr values,
 * a descriptor's class, base dtype, rank, block shape and padding, a tuple's
 * elements; then num_warps, num_stages, maxnreg), looks it up in the
 * Dispatcher's table and, on a hit, packs the parameters (the runtime values
 * of descriptors and tuples too: base, sizes, strides; elements) and
 * launches on the tensors' device and current stream.  Everything else
 * (the first launch of a key, the interpreter, errors, hooks that replace
 * JITFunction.run) goes to the Python method `run`, which compiles, launches
 * and registers the key (Dispatcher._register) for the next call.  Warmups
 * (Dispatcher.warmup) look up the same key in a table of their own, filled
 * by run (_register_warmup), and return the CompiledKernel made then. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "nereid.h"
#include "cuda_rt.h"
#include "fp.h"

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

/* The tensor maps a launch encodes (NrTensorMapInfo), one dict each in
 * parameter order: base_arg (runtime-argument index of the descriptor's base;
 * its sizes and strides follow), rank, dtype, elem_bytes, box (rank entries,
 * outermost first), swizzle (bytes), nan_fill (bool).  Empty for kernels
 * without TMA. */
static PyObject *Kernel_get_tensor_maps(KernelObject *self, void *closure) {
    (void)closure;
    int n = nr_kernel_num_tensor_maps(self->k);
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; i++) {
        NrTensorMapInfo ti;
        if (nr_kernel_tensor_map_info(self->k, i, &ti) != 0 || ti.rank < 1 || ti.rank > 5) {
            Py_DECREF(list);
            PyErr_Format(PyExc_RuntimeError, "kernel '%s': no description of tensor map %d", nr_kernel_name(self->k),
                         i);
            return NULL;
        }
        PyObject *box = PyList_New(ti.rank);
        if (!box) {
            Py_DECREF(list);
            return NULL;
        }
        for (int d = 0; d < ti.rank; d++) {
            PyObject *v = PyLong_FromLong(ti.box[d]);
            if (!v) {
                Py_DECREF(box);
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(box, d, v);
        }
        PyObject *e = Py_BuildValue("{s:i,s:i,s:s,s:i,s:N,s:i,s:O}", "base_arg", ti.base_arg, "rank", ti.rank, "dtype",
                                    ti.dtype, "elem_bytes", ti.elem_bytes, "box", box, "swizzle", ti.swizzle,
                                    "nan_fill", ti.nan_fill ? Py_True : Py_False);
        if (!e) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, e);
    }
    return list;
}

static PyGetSetDef Kernel_getset[] = {
    {"ptx", (getter)Kernel_get_ptx, NULL, "PTX text (GPU kernels)", NULL},
    {"num_warps", (getter)Kernel_get_num_warps, NULL, "warps per program (GPU kernels)", NULL},
    {"shared", (getter)Kernel_get_shared, NULL, "dynamic shared memory per launch (GPU kernels)", NULL},
    {"name", (getter)Kernel_get_name, NULL, "kernel name", NULL},
    {"ir", (getter)Kernel_get_ir, NULL, "block IR after the pipeline", NULL},
    {"args", (getter)Kernel_get_args, NULL, "runtime arguments: (kind, name, dtype, param_index)", NULL},
    {"tensor_maps", (getter)Kernel_get_tensor_maps, NULL,
     "tensor maps the launch passes after the runtime arguments (GPU kernels using TMA): list of dicts", NULL},
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
                             "verify_each", "arch", "maxnreg", "fp_fusion", "no_tma", NULL};
    const char *src, *filename, *kernel, *sig, *stop_after = NULL, *arch = NULL;
    Py_ssize_t len;
    int num_warps = 4, num_stages = 3, verify_each = 0, maxnreg = 0, fp_fusion = 1, no_tma = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#sss|iizpzipp", kwlist, &src, &len, &filename, &kernel, &sig,
                                     &num_warps, &num_stages, &stop_after, &verify_each, &arch, &maxnreg,
                                     &fp_fusion, &no_tma))
        return NULL;
    NrOptions o;
    nr_options_default(&o);
    o.num_warps = num_warps;
    o.num_stages = num_stages;
    o.stop_after = stop_after;
    o.verify_each = verify_each;
    o.arch = arch;
    o.maxnreg = maxnreg;
    o.fp_fusion = fp_fusion;
    o.no_tma = no_tma;
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

/* ==== the launch fast path ============================================================================ */

/* MAX_LEAVES: runtime values of aggregate arguments (tensor descriptors and
 * tuples), kept after the parameters' own in the value array (PV_SLOTS).
 * KEY_RESERVE: words left after the arguments' for the options word and a
 * warmup's two.  SIG_MAX: the longest signature entry the C path writes. */
enum {
    MAX_PARAMS = 64,
    MAX_LEAVES = 128,
    PV_SLOTS = MAX_PARAMS + MAX_LEAVES,
    MAX_RT = PV_SLOTS,
    MAX_KEY_WORDS = 4 * MAX_PARAMS + 8,
    KEY_RESERVE = 3,
    MAX_DTYPES = 64,
    SIG_MAX = 256,
    MAX_NEST = 8,
};

/* Parameter flags, set by JITFunction. */
enum { PF_CONSTEXPR = 1, PF_NOSPEC = 2, PF_NOSPEC_ALIGN = 4 };

/* Key words: a tag in the top byte, its data below. */
enum {
    KT_NONE = 1,   /* None (a constexpr literal) */
    KT_BOOL,       /* runtime bool: i1 */
    KT_INT,        /* runtime int: range class (0 i32, 1 i64, 2 u64) << 4 | 1 equal to 1, 2 divisible by 16 */
    KT_FLOAT,      /* runtime float: fp32 */
    KT_TENSOR,     /* torch tensor: dtype << 24 | aligned << 20 | (device + 1) */
    KT_ARRAY,      /* __array_interface__ (host): dtype << 24 | aligned << 20 */
    KT_CAI,        /* __cuda_array_interface__: dtype << 24 | aligned << 20 */
    KT_CBOOL,      /* constexpr bool: value */
    KT_CINT,       /* constexpr int: the next word is its value */
    KT_CFLOAT,     /* constexpr float: the next word is its bits */
    KT_COBJ,       /* another constexpr value (str, dtype...): hash; compared by ==  */
    KT_OPTS,       /* the last word: num_warps | num_stages << 8 | maxnreg << 16 | aggregate leaves << 32 */
    KT_WARM,       /* warmup keys (after KT_OPTS): interpreter | stand-in << 1; the next word is the target */
    KT_DESC,       /* host tensor descriptor: rank | nan padding << 3 | log2 of block dim d << (4 + 5d);
                      the next word is its class, then its base's KT_TENSOR word */
    KT_TUPLE,      /* tuple of runtime arguments: its length; its elements' words follow */
};
#define KW(tag, data) (((uint64_t)(tag) << 56) | (uint64_t)(data))
#define KTAG(w) ((int)((w) >> 56))

/* Pack codes of runtime arguments: how a value becomes its kernel parameter. */
enum { PK_PTR, PK_I1, PK_I8, PK_I16, PK_I32, PK_I64, PK_F8E4, PK_F8E5, PK_F16, PK_BF16, PK_F32, PK_F64 };

/* What the fast path knows of the host program: set from Python (set_api). */
static struct {
    PyTypeObject *tensor_type;  /* torch.Tensor (or a stand-in) */
    PyObject *get_stream;       /* device -> current raw CUDA stream (an int) */
    PyTypeObject *constexpr_type;
    PyTypeObject *literal_type; /* nereid.language.dtype: passed as constexpr literals */
    PyTypeObject *array_type;   /* numpy.ndarray: read through the buffer protocol */
    PyObject *plain_run;        /* JITFunction.run: another run (a test hook) takes every launch */
    PyObject *no_default;       /* marks parameters without a default */
    int ndtypes;
    PyObject *dtype_obj[MAX_DTYPES];  /* dtype objects seen (torch or numpy), index = key code - 1 */
    PyObject *dtype_sig[MAX_DTYPES];  /* their signature names ("fp32") as str */
    int dtype_key[MAX_DTYPES];        /* the key code of each: the first registered of its signature name */
    int dtype_dl[MAX_DTYPES];         /* the DLPack type of that name: code << 8 | bits; -1 none */
    int stand_in_device;        /* tests and benchmarks without a GPU: host tensors count as on this device; -1 */
} api = {.stand_in_device = -1};

/* How the fast path reads one attribute of a tensor of exactly api.tensor_type:
 * the type's own descriptor, called without looking it up again (torch's
 * data_ptr and get_device are C methods without arguments, dtype a C getter).
 * Valid while the type's version tag is the one they were resolved at
 * (assigning to an attribute of the type or of a base changes it). */
enum { RD_GETATTR, RD_GETSET, RD_NOARGS, RD_CALL };
typedef struct Reader {
    int kind;          /* RD_GETATTR: PyObject_GetAttr (an instance attribute, or no descriptor) */
    PyObject *descr;   /* the descriptor found on the type (owned) */
    PyObject *name;
    int call;          /* a method: call it with no arguments */
} Reader;

/* The DLPack C exchange API (DLPack 1.2 and later): a table of C functions
 * that a tensor type publishes as the capsule `__dlpack_c_exchange_api__` on
 * the type.  One call fills a DLTensor view of a tensor (data, device,
 * dtype) without going through Python, and another gives the current stream
 * of a device.  Declared here as the ABI the specification fixes; only the
 * members the fast path reads are named. */
typedef struct DlVersion {
    uint32_t major, minor;
} DlVersion;
typedef struct DlDevice {
    int32_t type, id;           /* type: DL_CPU, DL_CUDA... */
} DlDevice;
typedef struct DlDataType {
    uint8_t code, bits;         /* code: DL_INT, DL_FLOAT... */
    uint16_t lanes;
} DlDataType;
typedef struct DlTensor {
    void *data;
    DlDevice device;
    int32_t ndim;
    DlDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DlTensor;
typedef struct DlExchangeHeader {
    DlVersion version;
    struct DlExchangeHeader *prev;
} DlExchangeHeader;
typedef struct DlExchange {
    DlExchangeHeader header;
    void *managed_tensor_allocator, *managed_tensor_from_py_object, *managed_tensor_to_py_object;
    int (*dltensor_from_py_object)(void *obj, DlTensor *out);         /* 0, or -1 with an exception; may be NULL */
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **stream); /* 0, or -1 likewise */
} DlExchange;
enum { DL_CPU = 1, DL_CUDA = 2 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6, DL_F8E4M3FN = 10, DL_F8E5M2 = 12 };

static struct {
    PyTypeObject *type;         /* api.tensor_type when resolved */
    unsigned int version;       /* its tp_version_tag then */
    Reader dtype, data_ptr, get_device;
    PyCFunction stream_fn;      /* api.get_stream when a C function of one argument (METH_O) */
    PyObject *stream_self;
    int dl_level;               /* set_api's exchange: 0 off, 1 tensors, 2 tensors and stream */
    const DlExchange *dl;       /* api.tensor_type's DLPack exchange table, when it has one and it is used */
    PyObject *dl_capsule;       /* the capsule that holds it */
    int dl_stream;              /* the stream comes from dl->current_work_stream instead of api.get_stream */
} fast;

static PyObject *s_dl_exchange, *s_data_ptr, *s_dtype, *s_get_device, *s_run, *s_value, *s_array_interface, *s_cai, *s_num_warps,
    *s_num_stages, *s_maxnreg, *s_grid, *s_data, *s_num_ctas, *s_warmup, *s_strides, *s_base, *s_shape,
    *s_block_shape, *s_padding;

typedef union PVal {
    uint64_t ptr;
    int64_t i;
    double f;
} PVal;

typedef struct Key {
    uint64_t w[MAX_KEY_WORDS];
    int n;
    PyObject *objs[MAX_PARAMS]; /* owned references of KT_COBJ values (one per parameter at most) */
    int nobjs;
    int device;                 /* the CUDA device of the tensors; -1 none yet; -2 host arrays or mixed */
    int fast;                   /* every pointer argument is a CUDA torch tensor */
    int stand_in;               /* a host tensor counted as on api.stand_in_device */
    PVal *leaves;               /* the runtime values of aggregate arguments, in the order of the kernel's */
    int nleaves;                /* arguments (a descriptor's base, sizes, strides; a tuple's elements) */
    int depth;                  /* nesting of the tuple being keyed */
} Key;

static void key_release(Key *k) {
    for (int i = 0; i < k->nobjs; i++) Py_DECREF(k->objs[i]);
    k->nobjs = 0;
}

static uint64_t key_hash(const Key *k) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < k->n; i++) {
        h ^= k->w[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

/* v.name into *out: 1 found, 0 not (no exception), -1 error; without the
 * cost of raising AttributeError for a missing attribute. */
static int lookup_attr(PyObject *v, PyObject *name, PyObject **out) {
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(v, name, out);
#else
    return _PyObject_LookupAttr(v, name, out);
#endif
}

/* The key code of a dtype object (1-based), or 0 when not registered yet.
 * Dtype objects of one signature name (torch.float32, numpy.float32) share
 * the code of the first registered, so that a tensor keys alike whichever
 * way its dtype was read. */
static int dtype_code(PyObject *dt) {
    for (int i = 0; i < api.ndtypes; i++)
        if (api.dtype_obj[i] == dt) return api.dtype_key[i];
    return 0;
}

/* The key code of a DLPack data type, or 0 when no dtype of that type is registered. */
static int dtype_code_dl(DlDataType t) {
    if (t.lanes != 1) return 0;
    int dl = t.code << 8 | t.bits;
    for (int i = 0; i < api.ndtypes; i++)
        if (api.dtype_dl[i] == dl) return api.dtype_key[i];
    return 0;
}

/* The DLPack data type (code << 8 | bits) of a signature dtype name, or -1. */
static int sig_dl_type(const char *sig) {
    static const struct {
        const char *name;
        int code, bits;
    } t[] = {{"i1", DL_BOOL, 8},       {"i8", DL_INT, 8},      {"i16", DL_INT, 16},    {"i32", DL_INT, 32},
             {"i64", DL_INT, 64},      {"u8", DL_UINT, 8},     {"u16", DL_UINT, 16},   {"u32", DL_UINT, 32},
             {"u64", DL_UINT, 64},     {"fp16", DL_FLOAT, 16}, {"fp32", DL_FLOAT, 32}, {"fp64", DL_FLOAT, 64},
             {"bf16", DL_BFLOAT, 16},  {"fp8e4nv", DL_F8E4M3FN, 8}, {"fp8e5", DL_F8E5M2, 8}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, sig) == 0) return t[i].code << 8 | t[i].bits;
    return -1;
}

static void sig_put(char *sig, const char *s) {
    if (sig) snprintf(sig, SIG_MAX, "%s", s);
}

/* A constexpr literal: append its words.  0, or 1 when Python must handle it. */
static int key_literal(Key *k, PyObject *v) {
    if (k->n + 2 > MAX_KEY_WORDS - KEY_RESERVE) return 1;
    if (v == Py_None) {
        k->w[k->n++] = KW(KT_NONE, 0);
    } else if (PyBool_Check(v)) {
        k->w[k->n++] = KW(KT_CBOOL, v == Py_True);
    } else if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 1;
        }
        k->w[k->n++] = KW(KT_CINT, 0);
        k->w[k->n++] = (uint64_t)x;
    } else if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        k->w[k->n++] = KW(KT_CFLOAT, 0);
        k->w[k->n++] = bits;
    } else {
        if (k->nobjs >= MAX_PARAMS) return 1;
        Py_hash_t h = PyObject_Hash(v);
        if (h == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        k->w[k->n++] = KW(KT_COBJ, ((uint64_t)h ^ (uint64_t)(uintptr_t)Py_TYPE(v)) & 0xffffffffffffull);
        Py_INCREF(v);
        k->objs[k->nobjs++] = v;
    }
    return 0;
}

static void note_device(Key *k, int dev) {
    if (k->device == -1) k->device = dev;
    else if (k->device != dev) k->device = -2;
}

/* Resolve the reader of attribute `name` (call: a method called without
 * arguments) on type t.  Only a type with the generic attribute lookup has its
 * descriptors read directly: its getset descriptors win over the instance
 * dict, as they do there; an attribute set on one instance that shadows a
 * method of its type is not seen (tensors do not have those). */
static void reader_resolve(Reader *r, PyTypeObject *t, PyObject *name, int call) {
    Py_CLEAR(r->descr);
    r->name = name;
    r->call = call;
    r->kind = RD_GETATTR;
    if (t->tp_getattro != PyObject_GenericGetAttr) return;
    PyObject *d = _PyType_Lookup(t, name);
    if (!d) return;
    if (!call && Py_IS_TYPE(d, &PyGetSetDescr_Type) && ((PyGetSetDescrObject *)d)->d_getset->get &&
        PyType_IsSubtype(t, PyDescr_TYPE(d))) {
        r->kind = RD_GETSET;
    } else if (call && Py_IS_TYPE(d, &PyMethodDescr_Type) &&
               (((PyMethodDescrObject *)d)->d_method->ml_flags & ~METH_COEXIST) == METH_NOARGS &&
               PyType_IsSubtype(t, PyDescr_TYPE(d))) {
        r->kind = RD_NOARGS;
    } else if (call && PyFunction_Check(d)) {
        r->kind = RD_CALL; /* a Python method (stand-in tensors) */
    } else {
        return;
    }
    Py_INCREF(d);
    r->descr = d;
}

/* The DLPack exchange table that type t publishes, or NULL (an exception
 * only for an error other than its absence).  *capsule gets the capsule that
 * owns it.  A table of a newer major version is followed down its chain of
 * older ones to version 1.2 or later (the first with the non-owning view). */
static const DlExchange *exchange_table(PyTypeObject *t, PyObject **capsule) {
    PyObject *c = NULL;
    if (lookup_attr((PyObject *)t, s_dl_exchange, &c) <= 0) return NULL;
    if (!PyCapsule_IsValid(c, "dlpack_exchange_api")) {
        Py_DECREF(c);
        return NULL;
    }
    const DlExchangeHeader *h = PyCapsule_GetPointer(c, "dlpack_exchange_api");
    while (h && h->version.major > 1) h = h->prev;
    if (!h || h->version.major != 1 || h->version.minor < 2) {
        Py_DECREF(c);
        return NULL;
    }
    *capsule = c;
    return (const DlExchange *)h;
}

/* The exchange table of type t, as set_api asked (fast.dl_level). */
static void exchange_resolve(PyTypeObject *t) {
    fast.dl = NULL;
    fast.dl_stream = 0;
    Py_CLEAR(fast.dl_capsule);
    if (fast.dl_level <= 0) return;
    const DlExchange *x = exchange_table(t, &fast.dl_capsule);
    PyErr_Clear();
    if (x && x->dltensor_from_py_object) {
        fast.dl = x;
        fast.dl_stream = fast.dl_level == 2 && x->current_work_stream;
    }
}

/* The readers of api.tensor_type, resolved again when the type changed; 0 when they cannot be used. */
static int readers_ready(PyTypeObject *t) {
    if (fast.type == t && t->tp_version_tag == fast.version && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) return 1;
    fast.type = NULL;
    reader_resolve(&fast.dtype, t, s_dtype, 0);
    reader_resolve(&fast.data_ptr, t, s_data_ptr, 1);
    reader_resolve(&fast.get_device, t, s_get_device, 1);
    exchange_resolve(t);
    if (!(t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) return 0; /* (_PyType_Lookup assigns one when it can) */
    fast.type = t;
    fast.version = t->tp_version_tag;
    return 1;
}

/* Read an attribute (or call a method without arguments) of tensor v; a new reference or NULL. */
static PyObject *reader_get(const Reader *r, PyObject *v) {
    switch (r->kind) {
    case RD_GETSET: {
        PyGetSetDef *gs = ((PyGetSetDescrObject *)r->descr)->d_getset;
        return gs->get(v, gs->closure);
    }
    case RD_NOARGS: return ((PyMethodDescrObject *)r->descr)->d_method->ml_meth(v, NULL);
    case RD_CALL: return PyObject_Vectorcall(r->descr, &v, 1, NULL);
    default: return r->call ? PyObject_CallMethodNoArgs(v, r->name) : PyObject_GetAttr(v, r->name);
    }
}

/* An int as 64 bits unsigned; (unsigned long long)-1 with an exception when
 * it does not fit.  PyLong_AsUnsignedLong reads the digits directly, where
 * the long long form goes through a byte array. */
static unsigned long long as_u64(PyObject *p) {
#if ULONG_MAX == 0xffffffffffffffffUL
    return PyLong_AsUnsignedLong(p);
#else
    return PyLong_AsUnsignedLongLong(p);
#endif
}

/* A torch tensor: its data pointer, dtype and device.  exact: v is exactly
 * of api.tensor_type and the readers are resolved for it. */
static int key_tensor(Key *k, uint8_t flags, PyObject *v, PVal *pv, char *sig, int exact) {
    int code;
    unsigned long long addr;
    long dev;
    DlTensor dt_view;
    /* One C call of the tensor type's exchange table reads all three; a
     * tensor it refuses (no storage, a device DLPack has no name for) is
     * read through its methods, which say why if Python must. */
    if (exact && fast.dl && fast.dl->dltensor_from_py_object(v, &dt_view) == 0 &&
        (dt_view.device.type == DL_CUDA || dt_view.device.type == DL_CPU)) {
        code = dtype_code_dl(dt_view.dtype);
        if (!code) return 1;
        addr = (unsigned long long)(uintptr_t)dt_view.data + dt_view.byte_offset;
        dev = dt_view.device.type == DL_CUDA ? dt_view.device.id : -1;
    } else {
        PyErr_Clear();
        PyObject *dt = exact ? reader_get(&fast.dtype, v) : PyObject_GetAttr(v, s_dtype);
        if (!dt) goto python;
        code = dtype_code(dt);
        Py_DECREF(dt);
        if (!code) return 1;
        PyObject *p = exact ? reader_get(&fast.data_ptr, v) : PyObject_CallMethodNoArgs(v, s_data_ptr);
        if (!p) goto python;
        addr = as_u64(p);
        Py_DECREF(p);
        if (addr == (unsigned long long)-1 && PyErr_Occurred()) goto python;
        PyObject *d = exact ? reader_get(&fast.get_device, v) : PyObject_CallMethodNoArgs(v, s_get_device);
        if (!d) goto python;
        dev = PyLong_AsLong(d);
        Py_DECREF(d);
        if (dev == -1 && PyErr_Occurred()) goto python;
    }
    if (dev < -1 || dev > 0xffff) return 1;
    if (dev < 0 && api.stand_in_device >= 0) {
        dev = api.stand_in_device;
        k->stand_in = 1;
    }
    int aligned = !(flags & (PF_NOSPEC | PF_NOSPEC_ALIGN)) && addr % 16 == 0;
    k->w[k->n++] = KW(KT_TENSOR, (uint64_t)code << 24 | (uint64_t)aligned << 20 | (uint64_t)(dev + 1));
    pv->ptr = addr;
    if (dev < 0) k->fast = 0;
    note_device(k, dev < 0 ? -2 : (int)dev);
    if (sig) snprintf(sig, SIG_MAX, "*%s%s", PyUnicode_AsUTF8(api.dtype_sig[code - 1]), aligned ? ":16" : "");
    return 0;
python:
    PyErr_Clear();
    return 1;
}

static int key_array_at(Key *k, uint8_t flags, PyObject *v, unsigned long long addr, int tag, PVal *pv, char *sig);

/* Whether the interface's strides (None: C order) are all non-negative: run refuses the others. */
static int strides_ok(PyObject *iface) {
    PyObject *st = PyDict_GetItemWithError(iface, s_strides);
    if (!st || st == Py_None) return !PyErr_Occurred();
    if (!PyTuple_Check(st)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(st); i++) {
        PyObject *x = PyTuple_GET_ITEM(st, i);
        if (!PyLong_Check(x) || PyLong_AsLongLong(x) < 0) return 0;
    }
    return 1;
}

/* An object with __array_interface__ (host) or __cuda_array_interface__: slow, for the interpreter. */
static int key_array(Key *k, uint8_t flags, PyObject *v, PyObject *iface, int tag, PVal *pv, char *sig) {
    PyObject *data = PyDict_Check(iface) ? PyDict_GetItemWithError(iface, s_data) : NULL;
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1 || !strides_ok(iface)) goto python;
    unsigned long long addr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) goto python;
    return key_array_at(k, flags, v, addr, tag, pv, sig);
python:
    PyErr_Clear();
    return 1;
}

/* A numpy.ndarray (exactly api.array_type): its address and strides read
 * through the buffer protocol, much cheaper than building its
 * __array_interface__.  -1 when it exports no buffer (the caller reads the
 * interface), else as key_param. */
static int key_ndarray(Key *k, uint8_t flags, PyObject *v, PVal *pv, char *sig) {
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_STRIDES) < 0) {
        PyErr_Clear();
        return -1;
    }
    unsigned long long addr = (unsigned long long)(uintptr_t)view.buf;
    int ok = 1;
    for (int i = 0; view.strides && i < view.ndim; i++)
        if (view.strides[i] < 0) ok = 0; /* (run refuses negative strides) */
    PyBuffer_Release(&view);
    return ok ? key_array_at(k, flags, v, addr, KT_ARRAY, pv, sig) : 1;
}

/* The words of an array at addr (a host array, or one of the CUDA array interface). */
static int key_array_at(Key *k, uint8_t flags, PyObject *v, unsigned long long addr, int tag, PVal *pv, char *sig) {
    PyObject *dt = PyObject_GetAttr(v, s_dtype);
    if (!dt) goto python;
    int code = dtype_code(dt);
    Py_DECREF(dt);
    if (!code) return 1;
    int aligned = !(flags & (PF_NOSPEC | PF_NOSPEC_ALIGN)) && addr % 16 == 0;
    k->w[k->n++] = KW(tag, (uint64_t)code << 24 | (uint64_t)aligned << 20);
    pv->ptr = addr;
    k->fast = 0;
    note_device(k, -2);
    if (sig) snprintf(sig, SIG_MAX, "*%s%s", PyUnicode_AsUTF8(api.dtype_sig[code - 1]), aligned ? ":16" : "");
    return 0;
python:
    PyErr_Clear();
    return 1;
}

/* A runtime int: its range class and, unless PF_NOSPEC, ==1 or divisible by 16.  0, or 1 for Python. */
static int key_int(Key *k, uint8_t flags, PyObject *v, PVal *pv, char *sig) {
    int overflow = 0, cls = 0, f = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    uint64_t u;
    if (overflow > 0) {
        u = PyLong_AsUnsignedLongLong(v);
        if (u == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1; /* does not fit in 64 bits: Python says so */
        }
        cls = 2;
    } else if (overflow < 0 || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 1;
    } else {
        u = (uint64_t)x;
        cls = (x >= -2147483648LL && x <= 2147483647LL) ? 0 : 1;
    }
    if (!(flags & PF_NOSPEC)) f = u == 1 ? 1 : u % 16 == 0 ? 2 : 0;
    k->w[k->n++] = KW(KT_INT, cls << 4 | f);
    pv->i = (int64_t)u;
    if (sig) {
        static const char *const cn[] = {"i32", "i64", "u64"};
        snprintf(sig, SIG_MAX, "%s%s", cn[cls], f == 1 ? ":1" : f == 2 ? ":16" : "");
    }
    return 0;
}

static int key_float(Key *k, PyObject *v, PVal *pv, char *sig) {
    k->w[k->n++] = KW(KT_FLOAT, 0);
    pv->f = PyFloat_AsDouble(v);
    sig_put(sig, "fp32");
    return 0;
}

static int key_tuple(Key *k, PyObject *v, char *sig);
static int key_desc(Key *k, PyObject *v, char *sig);

/* Whether objects of type t are host tensor descriptors by their class's name,
 * as JITFunction.run tells them (Nereid's and Triton's TensorDescriptor, and
 * look-alikes); run also wants a block_shape, which key_desc reads. */
static int is_descriptor_type(PyTypeObject *t) {
    const char *name = t->tp_name, *dot = strrchr(name, '.');
    return strcmp(dot ? dot + 1 : name, "TensorDescriptor") == 0;
}

/* Append the key words of one argument and keep its runtime value in pv
 * (aggregates: their values in k->leaves); sig (SIG_MAX bytes, may be NULL)
 * gets its signature entry, or "" for literals.
 * Returns 0, or 1 when the argument is one that Python must look at. */
static int key_param(Key *k, uint8_t flags, PyObject *v, PVal *pv, char *sig) {
    if (sig) sig[0] = 0;
    if (k->n + 2 > MAX_KEY_WORDS - KEY_RESERVE) return 1;
    /* The common runtime arguments first, by exact type: tensors, ints, floats. */
    PyTypeObject *t = Py_TYPE(v);
    if (!(flags & PF_CONSTEXPR)) {
        if (t == api.tensor_type) return key_tensor(k, flags, v, pv, sig, readers_ready(t));
        if (t == &PyLong_Type) return key_int(k, flags, v, pv, sig);
        if (t == &PyFloat_Type) return key_float(k, v, pv, sig);
    }
    if (api.constexpr_type && PyObject_TypeCheck(v, api.constexpr_type)) {
        PyObject *unwrapped = PyObject_GetAttr(v, s_value);
        if (!unwrapped) {
            PyErr_Clear();
            return 1;
        }
        int r = key_literal(k, unwrapped);
        Py_DECREF(unwrapped);
        return r;
    }
    if ((flags & PF_CONSTEXPR) || v == Py_None || PyUnicode_Check(v) ||
        (api.literal_type && PyObject_TypeCheck(v, api.literal_type)))
        return key_literal(k, v);
    if (PyBool_Check(v)) {
        k->w[k->n++] = KW(KT_BOOL, 0);
        pv->i = v == Py_True;
        sig_put(sig, "i1");
        return 0;
    }
    if (PyLong_Check(v)) return key_int(k, flags, v, pv, sig);
    if (PyFloat_Check(v)) return key_float(k, v, pv, sig);
    if (api.tensor_type && PyObject_TypeCheck(v, api.tensor_type)) return key_tensor(k, flags, v, pv, sig, 0);
    if (t == api.array_type) {
        int r = key_ndarray(k, flags, v, pv, sig);
        if (r >= 0) return r;
    }
    /* Aggregates: what run specializes element by element (tensor_descriptor.is_aggregate). */
    if (PyTuple_Check(v)) return key_tuple(k, v, sig);
    if (is_descriptor_type(t)) return key_desc(k, v, sig);
    /* Arrays seen through their interfaces: CUDA first (torch tensors have both when torch is not known yet). */
    PyObject *iface = NULL;
    int tag = KT_CAI;
    if (lookup_attr(v, s_cai, &iface) == 0) {
        tag = KT_ARRAY;
        lookup_attr(v, s_array_interface, &iface);
    }
    if (!iface) {
        PyErr_Clear();
        return 1;
    }
    int r = key_array(k, flags, v, iface, tag, pv, sig);
    Py_DECREF(iface);
    return r;
}

/* ---- aggregate arguments: host tensor descriptors and tuples ----
 * Their runtime values are the kernel's arguments NAME.base, NAME.shape.i,
 * NAME.strides.i (descriptors) and NAME.i (tuples), consecutive and in this
 * order among the kernel's arguments; they are appended to k->leaves in the
 * same order, so that the n-th leaf of a key is the n-th argument of the
 * kernel that is not a parameter of its own (Dispatcher._register).  What run
 * would refuse or report (bases that are not torch tensors, sizes over i32,
 * negative strides, a padding other than "zero" or "nan", literals inside
 * tuples) is left to run. */

/* len(o) of a list or tuple (subclasses too: torch.Size), else -1. */
static Py_ssize_t seq_size(PyObject *o) {
    if (PyList_Check(o)) return PyList_GET_SIZE(o);
    if (PyTuple_Check(o)) return PyTuple_GET_SIZE(o);
    return -1;
}

static PyObject *seq_item(PyObject *o, Py_ssize_t i) {
    return PyList_Check(o) ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
}

/* An int item of a list or tuple within [lo, hi] into *out: 0, or 1 when it is not one. */
static int seq_int(PyObject *o, Py_ssize_t i, long long lo, long long hi, long long *out) {
    PyObject *x = seq_item(o, i);
    if (!PyLong_Check(x)) return 1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
        PyErr_Clear();
        return 1;
    }
    *out = v;
    return 0;
}

/* A host tensor descriptor: its words (KT_DESC with rank, padding and block
 * shape; its class; its base's KT_TENSOR word: dtype and device) and its
 * leaves (base, sizes, strides).  The signature entry is run's
 * (tensor_descriptor.signature_entry): tensordesc<DTYPE[b0, b1, ...]> with
 * ", nan" before the '>' for NaN padding.  The base must be a torch tensor;
 * the last stride must be 1 (the kernel is compiled for it). */
static int key_desc(Key *k, PyObject *v, char *sig) {
    PyObject *block = NULL, *base = NULL, *shape = NULL, *strides = NULL, *pad = NULL;
    int r = 1;
    if (k->n + 3 > MAX_KEY_WORDS - KEY_RESERVE || !api.tensor_type) return 1;
    if (lookup_attr(v, s_block_shape, &block) <= 0 || lookup_attr(v, s_base, &base) <= 0 ||
        lookup_attr(v, s_shape, &shape) <= 0 || lookup_attr(v, s_strides, &strides) <= 0 ||
        lookup_attr(v, s_padding, &pad) < 0)
        goto done;
    Py_ssize_t rank = seq_size(block);
    if (rank < 1 || rank > 5 || seq_size(shape) != rank || seq_size(strides) != rank) goto done;
    if (k->nleaves + 1 + 2 * rank > MAX_LEAVES || !PyObject_TypeCheck(base, api.tensor_type)) goto done;
    int nan = 0;
    if (pad && PyUnicode_Check(pad) && PyUnicode_CompareWithASCIIString(pad, "nan") == 0) nan = 1;
    else if (pad && (!PyUnicode_Check(pad) || PyUnicode_CompareWithASCIIString(pad, "zero") != 0)) goto done;
    uint64_t data = (uint64_t)rank | (uint64_t)nan << 3;
    long long b[5];
    for (Py_ssize_t d = 0; d < rank; d++) {
        if (seq_int(block, d, 1, 1LL << 30, &b[d]) || (b[d] & (b[d] - 1))) goto done;
        int lg = 0;
        while ((1LL << lg) < b[d]) lg++;
        data |= (uint64_t)lg << (4 + 5 * d);
    }
    PVal *x = k->leaves + k->nleaves;
    for (Py_ssize_t d = 0; d < rank; d++) {
        long long size, stride;
        if (seq_int(shape, d, 1, 0x7fffffffLL, &size) || seq_int(strides, d, 0, INT64_MAX, &stride)) goto done;
        if (d == rank - 1 && stride != 1) goto done;
        x[1 + d].i = size;
        x[1 + rank + d].i = stride;
    }
    k->w[k->n++] = KW(KT_DESC, data);
    /* (the class identifies the key alone: every value is read from the object at each launch) */
    k->w[k->n++] = (uint64_t)(uintptr_t)Py_TYPE(v);
    char bsig[SIG_MAX];
    PyTypeObject *bt = Py_TYPE(base);
    if (key_tensor(k, PF_NOSPEC_ALIGN, base, &x[0], sig ? bsig : NULL, bt == api.tensor_type && readers_ready(bt)))
        goto done;
    k->nleaves += (int)(1 + 2 * rank);
    if (sig) {
        int len = snprintf(sig, SIG_MAX, "tensordesc<%s[", bsig + 1); /* ("*fp16": no alignment, PF_NOSPEC_ALIGN) */
        for (Py_ssize_t d = 0; d < rank; d++)
            len += snprintf(sig + len, (size_t)(SIG_MAX - len), "%s%lld", d ? ", " : "", b[d]);
        snprintf(sig + len, (size_t)(SIG_MAX - len), "]%s>", nan ? ", nan" : "");
    }
    r = 0;
done:
    if (r) PyErr_Clear();
    Py_XDECREF(block);
    Py_XDECREF(base);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(pad);
    return r;
}

/* A tuple of runtime arguments: KT_TUPLE (its length), then each element's
 * words, keyed like an argument that may be specialized; its leaves are its
 * elements' values.  The signature entry is run's: "(e0, e1)", "(e0,)".
 * Empty tuples and literal elements (None, str, constexpr: no runtime value)
 * are left to run. */
static int key_tuple(Key *k, PyObject *v, char *sig) {
    Py_ssize_t n = PyTuple_GET_SIZE(v);
    if (n < 1 || k->depth >= MAX_NEST || k->n + 1 > MAX_KEY_WORDS - KEY_RESERVE) return 1;
    k->w[k->n++] = KW(KT_TUPLE, (uint64_t)n);
    size_t len = 0;
    if (sig) sig[len++] = '(';
    char esig[SIG_MAX];
    k->depth++;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k->nleaves >= MAX_LEAVES) return 1;
        int at = k->n, before = k->nleaves;
        /* (a plain element's value goes to the next leaf; an aggregate appends its own) */
        if (key_param(k, 0, PyTuple_GET_ITEM(v, i), &k->leaves[k->nleaves], sig ? esig : NULL)) return 1;
        int tag = KTAG(k->w[at]);
        if (tag == KT_NONE || tag == KT_CBOOL || tag == KT_CINT || tag == KT_CFLOAT || tag == KT_COBJ) return 1;
        if (k->nleaves == before) k->nleaves++;
        if (sig) {
            size_t el = strlen(esig);
            if (len + el + 4 > SIG_MAX) return 1;
            if (i) {
                memcpy(sig + len, ", ", 2);
                len += 2;
            }
            memcpy(sig + len, esig, el);
            len += el;
        }
    }
    k->depth--;
    if (sig) {
        if (n == 1) sig[len++] = ',';
        sig[len++] = ')';
        sig[len] = 0;
    }
    return 0;
}

/* The key of bound argument values vals[nparams] and the launch options. */
static int key_build(Key *k, int nparams, const uint8_t *flags, PyObject *const *vals, const int opts[3], PVal *pv,
                     char (*sigs)[SIG_MAX]) {
    k->n = 0;
    k->nobjs = 0;
    k->device = -1;
    k->fast = 1;
    k->stand_in = 0;
    k->leaves = pv + MAX_PARAMS;
    k->nleaves = 0;
    k->depth = 0;
    for (int i = 0; i < nparams; i++) {
        int r = key_param(k, flags[i], vals[i], &pv[i], sigs ? sigs[i] : NULL);
        if (r) return r;
    }
    if (opts[0] < 0 || opts[0] > 255 || opts[1] < 0 || opts[1] > 255 || opts[2] < 0 || opts[2] > 65535) return 1;
    k->w[k->n++] = KW(KT_OPTS, (uint64_t)opts[0] | (uint64_t)opts[1] << 8 | (uint64_t)opts[2] << 16 |
                                   (uint64_t)k->nleaves << 32);
    if (k->device < 0) k->fast = 0;
    return 0;
}

/* One registered specialization: a compiled kernel, ready to launch on one device. */
typedef struct Entry {
    uint64_t hash;
    int nwords;
    uint64_t *words;
    int nobjs;
    PyObject **objs;
    PyObject *kernel;           /* the KernelObject (keeps the NrKernel alive) */
    PyObject *result;           /* what a launch returns (the CompiledKernel) */
    int device;
    PyObject *dev_obj;          /* device as an int object, the argument of api.get_stream */
    const NrGpuEntry *ge;       /* NULL: a stand-in launch that only records (tests, benchmarks) */
    unsigned max_grid[3];
    int nrt;
    int16_t *rt_param;          /* per runtime argument: its parameter index */
    uint8_t *rt_pack;           /* and its pack code */
} Entry;

static void entry_free(Entry *e) {
    if (!e) return;
    for (int i = 0; i < e->nobjs; i++) Py_XDECREF(e->objs[i]);
    Py_XDECREF(e->kernel);
    Py_XDECREF(e->result);
    Py_XDECREF(e->dev_obj);
    PyMem_Free(e->words);
    PyMem_Free(e->objs);
    PyMem_Free(e->rt_param);
    PyMem_Free(e->rt_pack);
    PyMem_Free(e);
}

/* Entries by key: open addressing, linear probing. */
typedef struct Table {
    Entry **slots;
    size_t cap, count;
} Table;

/* What the stand-in launch recorded last. */
typedef struct FakeLaunch {
    unsigned long long count;
    unsigned grid[3];
    int device;
    unsigned long long stream;
    int nparams;
    uint64_t params[MAX_RT];
} FakeLaunch;

typedef struct {
    PyObject_HEAD
    int nparams;
    PyObject *names;            /* tuple of str */
    PyObject *defaults;         /* tuple: the default or api.no_default */
    uint8_t flags[MAX_PARAMS];
    int opt_param[3];           /* the parameter named num_warps, num_stages, maxnreg, or -1 */
    int slow_only;              /* more parameters than the fast path takes */
    PyObject *meta;             /* the meta dict of callable grids, kept for reuse */
    PyObject *launcher;         /* the last kernel[grid], reused when nobody else holds it */
    Table launches;             /* keys registered for fast launches (Dispatcher._register) */
    Table warm;                 /* keys of warmups made by run: their CompiledKernel (_register_warmup) */
    unsigned long long hits;    /* launches made by the fast path */
    unsigned long long warm_hits; /* warmups answered from D->warm */
    int stop_after;             /* benchmarks: end a hit after this stage (STAGE_*), returning None; 0: launch */
    FakeLaunch fake;
} DispatcherObject;

/* The stages of a fast launch, for measuring what each costs (_fast_stop_after). */
enum { STAGE_LAUNCH, STAGE_BIND, STAGE_KEY, STAGE_LOOKUP, STAGE_GRID, STAGE_STREAM, STAGE_PACK, STAGE_COUNT };
static const char *const stage_names[STAGE_COUNT] = {"launch", "bind", "key", "lookup", "grid", "stream", "pack"};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    DispatcherObject *d;
    PyObject *grid;
    int grid_known;             /* the grid is a tuple of ints (or an int), evaluated once: g */
    unsigned g[3];
    int preset;                 /* a compiled kernel's launcher: its options are popts unless given */
    int popts[3];               /* num_warps, num_stages, maxnreg (0: none) */
} LauncherObject;

static Entry *table_find(const Table *T, const Key *k, uint64_t h) {
    if (!T->cap) return NULL;
    size_t mask = T->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        Entry *e = T->slots[i];
        if (!e) return NULL;
        if (e->hash != h || e->nwords != k->n || e->nobjs != k->nobjs ||
            memcmp(e->words, k->w, sizeof(uint64_t) * (size_t)k->n) != 0)
            continue;
        int same = 1;
        for (int j = 0; j < k->nobjs && same; j++) {
            if (Py_TYPE(e->objs[j]) != Py_TYPE(k->objs[j])) same = 0;
            else {
                int c = PyObject_RichCompareBool(e->objs[j], k->objs[j], Py_EQ);
                if (c < 0) PyErr_Clear();
                same = c == 1;
            }
        }
        if (same) return e;
    }
}

/* Insert e (replacing an equal key); 0, or -1 with an exception. */
static int table_put(Table *T, Entry *e) {
    if ((T->count + 1) * 2 > T->cap) {
        size_t ncap = T->cap ? T->cap * 2 : 16;
        Entry **nt = PyMem_Calloc(ncap, sizeof(Entry *));
        if (!nt) return PyErr_NoMemory(), -1;
        for (size_t i = 0; i < T->cap; i++) {
            Entry *x = T->slots[i];
            if (!x) continue;
            size_t j = x->hash & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = x;
        }
        PyMem_Free(T->slots);
        T->slots = nt;
        T->cap = ncap;
    }
    size_t mask = T->cap - 1;
    for (size_t i = e->hash & mask;; i = (i + 1) & mask) {
        Entry *x = T->slots[i];
        if (!x) {
            T->slots[i] = e;
            T->count++;
            return 0;
        }
        if (x->hash == e->hash && x->nwords == e->nwords &&
            memcmp(x->words, e->words, sizeof(uint64_t) * (size_t)e->nwords) == 0 && x->nobjs == e->nobjs) {
            int same = 1;
            for (int j = 0; j < e->nobjs && same; j++) {
                int c = PyObject_RichCompareBool(x->objs[j], e->objs[j], Py_EQ);
                if (c < 0) PyErr_Clear();
                same = c == 1 && Py_TYPE(x->objs[j]) == Py_TYPE(e->objs[j]);
            }
            if (same) {
                T->slots[i] = e;
                entry_free(x);
                return 0;
            }
        }
    }
}

static void table_clear(Table *T) {
    for (size_t i = 0; i < T->cap; i++) entry_free(T->slots[i]);
    PyMem_Free(T->slots);
    T->slots = NULL;
    T->cap = T->count = 0;
}

/* Pack one runtime argument's value at its parameter size (little-endian, like the driver reads it). */
static uint64_t pack_value(int pk, const PVal *v) {
    switch (pk) {
    case PK_PTR: return v->ptr;
    case PK_I1: return v->i != 0;
    case PK_I8: return (uint8_t)v->i;
    case PK_I16: return (uint16_t)v->i;
    case PK_I32: return (uint32_t)v->i;
    case PK_I64: return (uint64_t)v->i;
    case PK_F8E4: return nr_f32_to_f8e4nv((float)v->f);
    case PK_F8E5: return nr_f32_to_f8e5((float)v->f);
    case PK_F16: return nr_f64_to_f16(v->f);
    case PK_BF16: return nr_f64_to_bf16(v->f);
    case PK_F32: {
        float f = (float)v->f;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    default: {
        uint64_t u;
        memcpy(&u, &v->f, sizeof u);
        return u;
    }
    }
}

static int pack_code(const NrArgInfo *ai) {
    if (ai->kind == NR_ARG_BUFFER) return PK_PTR;
    static const struct {
        const char *name;
        int code;
    } t[] = {{"i1", PK_I1},      {"i8", PK_I8},      {"u8", PK_I8},        {"i16", PK_I16},  {"u16", PK_I16},
             {"i32", PK_I32},    {"u32", PK_I32},    {"i64", PK_I64},      {"u64", PK_I64},  {"fp8e4nv", PK_F8E4},
             {"fp8e5", PK_F8E5}, {"fp16", PK_F16},   {"bf16", PK_BF16},    {"fp32", PK_F32}, {"fp64", PK_F64}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, ai->dtype) == 0) return t[i].code;
    return -1;
}

/* A grid item: a positive int (an object with __index__ too).  0, or 1 when Python must say why not. */
static int grid_item(PyObject *o, unsigned *out) {
    long long v;
    if (PyLong_CheckExact(o)) {
        v = PyLong_AsLongLong(o);
    } else {
        PyObject *i = PyNumber_Index(o);
        if (!i) {
            PyErr_Clear();
            return 1;
        }
        v = PyLong_AsLongLong(i);
        Py_DECREF(i);
    }
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    if (v <= 0 || v > 0x7fffffffLL) return 1;
    *out = (unsigned)v;
    return 0;
}

static int grid_seq(PyObject *g, unsigned out[3]) {
    out[0] = out[1] = out[2] = 1;
    if (PyLong_Check(g)) return grid_item(g, &out[0]);
    if (!PyTuple_Check(g) && !PyList_Check(g)) return 1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(g);
    if (n < 1 || n > 3) return 1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (grid_item(PySequence_Fast_GET_ITEM(g, i), &out[i])) return 1;
    return 0;
}

/* The grid of a launch: a tuple (list, int) or a callable taking the meta dict. */
static int grid_eval(DispatcherObject *D, PyObject *grid, PyObject *const *vals, const int opts[3], unsigned out[3]) {
    if (PyTuple_CheckExact(grid) || PyLong_CheckExact(grid)) return grid_seq(grid, out);
    if (!PyCallable_Check(grid)) return grid_seq(grid, out);
    /* The meta dict of the last call is reused when nobody kept it (most grids only read it). */
    PyObject *meta = D->meta;
    if (meta && Py_REFCNT(meta) == 1 && PyDict_GET_SIZE(meta) == D->nparams + 2) {
        D->meta = NULL;
    } else {
        meta = PyDict_New();
        if (!meta) goto python;
    }
    for (int i = 0; i < D->nparams; i++)
        if (PyDict_SetItem(meta, PyTuple_GET_ITEM(D->names, i), vals[i])) goto python_meta;
    PyObject *nw = PyLong_FromLong(opts[0]), *ns = PyLong_FromLong(opts[1]);
    int bad = !nw || !ns || PyDict_SetItem(meta, s_num_warps, nw) || PyDict_SetItem(meta, s_num_stages, ns);
    Py_XDECREF(nw);
    Py_XDECREF(ns);
    if (bad) goto python_meta;
    PyObject *g = PyObject_CallOneArg(grid, meta);
    if (!D->meta && Py_REFCNT(meta) == 1) D->meta = meta;
    else Py_DECREF(meta);
    if (!g) goto python;
    int r = grid_seq(g, out);
    Py_DECREF(g);
    return r;
python_meta:
    Py_DECREF(meta);
python:
    PyErr_Clear();
    return 1;
}

static int same_name(PyObject *a, PyObject *b) { return a == b || PyUnicode_Compare(a, b) == 0; }

/* Bind positional and keyword arguments to vals[] and the options; 0, or 1 for
 * Python.  base: the options when neither a keyword nor a parameter named like
 * one gives them (NULL: num_warps 4, num_stages 3, no maxnreg).  skip: a
 * keyword that is not an argument (warmup's grid), or NULL. */
static int bind_args(DispatcherObject *D, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyObject **vals, int opts[3], const int base[3], PyObject *skip) {
    if (D->slow_only || nargs > D->nparams) return 1;
    int n = D->nparams;
    for (int i = 0; i < n; i++) vals[i] = i < nargs ? args[i] : NULL;
    opts[0] = base ? base[0] : 4;
    opts[1] = base ? base[1] : 3;
    opts[2] = base ? base[2] : 0;
    int opt_given[3] = {0, 0, 0};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j), *v = args[nargs + j];
        if (skip && same_name(name, skip)) continue;
        int found = -1;
        for (int i = 0; i < n; i++)
            if (PyTuple_GET_ITEM(D->names, i) == name) {
                found = i;
                break;
            }
        if (found < 0)
            for (int i = 0; i < n; i++)
                if (PyUnicode_Compare(PyTuple_GET_ITEM(D->names, i), name) == 0) {
                    found = i;
                    break;
                }
        if (found >= 0) {
            if (vals[found]) return 1;
            vals[found] = v;
            continue;
        }
        int o = PyUnicode_Compare(name, s_num_warps) == 0    ? 0
                : PyUnicode_Compare(name, s_num_stages) == 0 ? 1
                : PyUnicode_Compare(name, s_maxnreg) == 0    ? 2
                                                             : -1;
        if (o < 0 || !PyLong_CheckExact(v)) {
            if (o == 2 && v == Py_None) continue;
            /* num_ctas=1 (Triton's tutorials pass it): one program is one CTA anyway */
            if (o < 0 && PyUnicode_Compare(name, s_num_ctas) == 0 && PyLong_CheckExact(v) && PyLong_AsLong(v) == 1)
                continue;
            PyErr_Clear();
            return 1;
        }
        long x = PyLong_AsLong(v);
        if (x < 0 || x > 65535) {
            PyErr_Clear();
            return 1;
        }
        opts[o] = (int)x;
        opt_given[o] = 1;
    }
    for (int i = 0; i < n; i++) {
        if (vals[i]) continue;
        PyObject *d = PyTuple_GET_ITEM(D->defaults, i);
        if (d == api.no_default) return 1;
        vals[i] = d;
    }
    /* A parameter named like a launch option (num_stages: tl.constexpr) is
     * that option too, unless the option was given on its own. */
    for (int o = 0; o < 3; o++) {
        int i = D->opt_param[o];
        if (i < 0 || opt_given[o]) continue;
        if (!PyLong_CheckExact(vals[i])) return 1;
        long x = PyLong_AsLong(vals[i]);
        if (x < 0 || x > 65535) {
            PyErr_Clear();
            return 1;
        }
        opts[o] = (int)x;
    }
    return 0;
}

/* The switches of the launch path, read at every launch (programs and tests
 * change them at run time):
 *   NEREID_INTERPRET=1     every launch runs on the interpreter: through JITFunction.run
 *   NEREID_FAST_LAUNCH=0   every launch goes through JITFunction.run (for
 *                          debugging the launch path; the results are the
 *                          same, only slower)
 *   NEREID_DEFAULT_FP_FUSION=0 (or false, False): kernels compiled without
 *                          fma contraction; the registered ones have it:
 *                          every launch goes through JITFunction.run
 * getenv compares the names of every variable; instead the launch compares
 * the environment's array of pointers with the one the switches were last
 * read from, and reads them again only when it differs.  setenv, putenv and
 * unsetenv change that array: a variable set anew gets a new string (glibc
 * never frees them, so one address is one text), an added one a new slot, a
 * removed one a shifted array.  Other C libraries may reuse the address of a
 * freed value: there getenv is called every time.  The copy is the one state
 * the fast path keeps outside its objects.
 *
 * A warmup's result also depends on the GPU target that run picks for CUDA
 * tensors: NEREID_ARCH and NEREID_DISABLE_HOPPER, on NEREID_DISABLE_TMA
 * (sm_90a code without TMA) and on NEREID_DEFAULT_FP_FUSION, read at the
 * same time into `target` (a hash of their texts; unset and empty differ),
 * which is part of the key of a warmup. */
enum { SW_INTERPRET = 1, SW_NO_FAST = 2, SW_NO_FUSION = 4 };

typedef struct Switches {
    int bits;          /* SW_* */
    uint64_t target;   /* hash of NEREID_ARCH, NEREID_DISABLE_HOPPER, NEREID_DISABLE_TMA, NEREID_DEFAULT_FP_FUSION */
} Switches;

extern char **environ;

static struct {
    char **env;        /* environ when read */
    char **copy;       /* its pointers then, with the terminating NULL */
    size_t n, cap;     /* variables, and room in copy */
    Switches sw;
    int valid;
} envc;

static uint64_t hash_env_text(uint64_t h, const char *s) {
    h = (h ^ (s ? 1u : 2u)) * 1099511628211ull;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static Switches read_switches(void) {
    Switches sw;
    const char *e = getenv("NEREID_INTERPRET");
    sw.bits = e && *e && strcmp(e, "0") != 0 ? SW_INTERPRET : 0;
    e = getenv("NEREID_FAST_LAUNCH");
    if (e && strcmp(e, "0") == 0) sw.bits |= SW_NO_FAST;
    e = getenv("NEREID_DEFAULT_FP_FUSION");
    if (e && (strcmp(e, "0") == 0 || strcmp(e, "false") == 0 || strcmp(e, "False") == 0)) sw.bits |= SW_NO_FUSION;
    sw.target = hash_env_text(1469598103934665603ull, getenv("NEREID_ARCH"));
    sw.target = hash_env_text(sw.target, getenv("NEREID_DISABLE_HOPPER"));
    sw.target = hash_env_text(sw.target, getenv("NEREID_DISABLE_TMA"));
    sw.target = hash_env_text(sw.target, e);
    return sw;
}

static Switches fast_env(void) {
#ifndef __GLIBC__
    return read_switches();
#endif
    char **env = environ;
    if (!env) return read_switches();
    if (envc.valid && env == envc.env) {
        size_t i = 0;
        while (i < envc.n && env[i] == envc.copy[i]) i++;
        if (i == envc.n && env[i] == NULL) return envc.sw;
    }
    size_t n = 0;
    while (env[n]) n++;
    envc.valid = 0;
    if (n + 1 > envc.cap) {
        char **c = PyMem_RawRealloc(envc.copy, (n + 1) * sizeof *c);
        if (!c) return read_switches(); /* (no copy: read every time) */
        envc.copy = c;
        envc.cap = n + 1;
    }
    memcpy(envc.copy, env, (n + 1) * sizeof *env);
    envc.env = env;
    envc.n = n;
    envc.sw = read_switches();
    envc.valid = 1;
    return envc.sw;
}

static int fast_switches(void) { return fast_env().bits; }

/* The launch itself, after a hit: 0, 1 for Python, -1 with an exception, 2
 * stopped at the stage D->stop_after. */
static int fast_launch(DispatcherObject *D, Entry *e, const unsigned g[3], const PVal *pv, int switches) {
    if (e->ge && (switches & SW_NO_FAST)) return 1;
    void *stream = NULL;
    if (fast.dl_stream) {
        if (fast.dl->current_work_stream(DL_CUDA, e->device, &stream) != 0) return -1;
    } else if (api.get_stream) {
        /* torch._C._cuda_getCurrentRawStream is a C function of one argument: called directly */
        PyObject *s = fast.stream_fn ? fast.stream_fn(fast.stream_self, e->dev_obj)
                                     : PyObject_CallOneArg(api.get_stream, e->dev_obj);
        if (!s) return -1;
        stream = PyLong_AsVoidPtr(s);
        Py_DECREF(s);
        if (stream == NULL && PyErr_Occurred()) return -1;
    }
    if (D->stop_after == STAGE_STREAM) return 2;
    uint64_t slots[MAX_RT];
    void *params[MAX_RT];
    for (int i = 0; i < e->nrt; i++) {
        slots[i] = pack_value(e->rt_pack[i], &pv[e->rt_param[i]]);
        params[i] = &slots[i];
    }
    if (D->stop_after == STAGE_PACK) return 2;
    if (!e->ge) {
        FakeLaunch *f = &D->fake;
        f->count++;
        memcpy(f->grid, g, sizeof f->grid);
        f->device = e->device;
        f->stream = (unsigned long long)(uintptr_t)stream;
        f->nparams = e->nrt;
        memcpy(f->params, slots, sizeof(uint64_t) * (size_t)e->nrt);
        return 0;
    }
    return nr_gpu_entry_launch(e->ge, g, stream, params) == 0 ? 0 : 1;
}

/* The options of a compiled kernel's launcher as keywords of run, where
 * neither a keyword nor a parameter named like the option gives them (a
 * parameter named like an option is that option). */
static int add_preset(DispatcherObject *D, PyObject *kw, const int preset[3]) {
    PyObject *names[3] = {s_num_warps, s_num_stages, s_maxnreg};
    for (int o = 0; o < 3; o++) {
        if (D->opt_param[o] >= 0 || (o == 2 && preset[o] == 0)) continue;
        int has = PyDict_Contains(kw, names[o]);
        if (has) {
            if (has < 0) return -1;
            continue;
        }
        PyObject *v = PyLong_FromLong(preset[o]);
        if (!v || PyDict_SetItem(kw, names[o], v)) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

/* Everything the fast path does not: self.run(*args, grid=grid, **kwargs).
 * preset (or NULL): the options of a compiled kernel's launcher (add_preset).
 * warmup: self.run(*args, grid=grid, warmup=True, **kwargs), where the keyword
 * `grid` of the call is the grid, not an argument. */
static PyObject *call_run(DispatcherObject *D, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames, const int *preset, int warmup) {
    PyObject *run = PyObject_GetAttr((PyObject *)D, s_run);
    if (!run) return NULL;
    PyObject *pos = PyTuple_New(nargs);
    PyObject *kw = PyDict_New();
    PyObject *r = NULL;
    if (!pos || !kw) goto done;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(pos, i, args[i]);
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        if (warmup && same_name(name, s_grid)) continue;
        if (warmup && same_name(name, s_warmup)) {
            PyErr_SetString(PyExc_TypeError, "warmup() got multiple values for keyword argument 'warmup'");
            goto done;
        }
        if (PyDict_SetItem(kw, name, args[nargs + j])) goto done;
    }
    if (preset && add_preset(D, kw, preset)) goto done;
    if (PyDict_SetItem(kw, s_grid, grid)) goto done;
    if (warmup && PyDict_SetItem(kw, s_warmup, Py_True)) goto done;
    r = PyObject_Call(run, pos, kw);
done:
    Py_DECREF(run);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    return r;
}

static PyObject *Launcher_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    LauncherObject *L = (LauncherObject *)self;
    DispatcherObject *D = L->d;
    if (!D) {
        PyErr_SetString(PyExc_RuntimeError, "this launcher's kernel was released");
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *vals[MAX_PARAMS];
    PVal pv[PV_SLOTS];
    int opts[3], stop = D->stop_after;
    Key k;
    k.nobjs = 0;
    if (!api.plain_run || _PyType_Lookup(Py_TYPE(D), s_run) != api.plain_run) goto python;
    if (!D->launches.count || bind_args(D, args, nargs, kwnames, vals, opts, L->preset ? L->popts : NULL, NULL))
        goto python;
    if (stop == STAGE_BIND) goto stopped;
    if (key_build(&k, D->nparams, D->flags, vals, opts, pv, NULL) || !k.fast) goto python;
    if (stop == STAGE_KEY) goto stopped;
    Entry *e = table_find(&D->launches, &k, key_hash(&k));
    if (!e || (k.stand_in && e->ge)) goto python;
    int switches = fast_switches();
    if (switches & (SW_INTERPRET | SW_NO_FUSION)) goto python;
    if (stop == STAGE_LOOKUP) goto stopped;
    unsigned gbuf[3];
    const unsigned *g = L->g;
    if (!L->grid_known) {
        if (grid_eval(D, L->grid, vals, opts, gbuf)) goto python;
        g = gbuf;
    }
    if (g[0] > e->max_grid[0] || g[1] > e->max_grid[1] || g[2] > e->max_grid[2]) goto python;
    if (stop == STAGE_GRID) goto stopped;
    int r = fast_launch(D, e, g, pv, switches);
    if (r == 2) goto stopped;
    if (r < 0) PyErr_Clear();
    if (r) goto python; /* Python launches again and reports the problem */
    D->hits++;
    key_release(&k);
    Py_INCREF(e->result);
    return e->result;
stopped:
    key_release(&k);
    Py_RETURN_NONE;
python:
    key_release(&k);
    return call_run(D, L->grid, args, nargs, kwnames, L->preset ? L->popts : NULL, 0);
}

static int Launcher_traverse(LauncherObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->d);
    Py_VISIT(self->grid);
    return 0;
}

static int Launcher_clear(LauncherObject *self) {
    Py_CLEAR(self->d);
    Py_CLEAR(self->grid);
    self->grid_known = 0;
    return 0;
}

static void Launcher_dealloc(LauncherObject *self) {
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *Launcher_get_grid(LauncherObject *self, void *closure) {
    (void)closure;
    PyObject *g = self->grid ? self->grid : Py_None;
    Py_INCREF(g);
    return g;
}

static PyObject *Launcher_get_fn(LauncherObject *self, void *closure) {
    (void)closure;
    PyObject *d = self->d ? (PyObject *)self->d : Py_None;
    Py_INCREF(d);
    return d;
}

static PyGetSetDef Launcher_getset[] = {
    {"grid", (getter)Launcher_get_grid, NULL, "the launch grid", NULL},
    {"fn", (getter)Launcher_get_fn, NULL, "the kernel", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nereid._C.Launcher",
    .tp_basicsize = sizeof(LauncherObject),
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_vectorcall_offset = offsetof(LauncherObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Launcher_traverse,
    .tp_clear = (inquiry)Launcher_clear,
    .tp_doc = "kernel[grid]: call it with the kernel's arguments to launch",
    .tp_getset = Launcher_getset,
};

/* A grid that cannot change (a tuple of ints, an int): evaluated once, when the launcher is made. */
static void launcher_set_grid(LauncherObject *L, PyObject *grid) {
    L->grid = grid;
    L->grid_known = 0;
    if (PyLong_CheckExact(grid) || PyTuple_CheckExact(grid)) {
        if (PyTuple_CheckExact(grid))
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(grid); i++)
                if (!PyLong_CheckExact(PyTuple_GET_ITEM(grid, i))) return;
        L->grid_known = grid_seq(grid, L->g) == 0;
    }
}

static void launcher_set_preset(LauncherObject *L, const int *preset) {
    L->preset = preset != NULL;
    for (int o = 0; o < 3; o++) L->popts[o] = preset ? preset[o] : 0;
}

/* kernel[grid]: a launcher; preset: the options of a compiled kernel's
 * launcher, or NULL.  The one made last is made again in place when only the
 * kernel holds it (the launch `kernel[grid](...)` drops it at once): no
 * allocation, and the same grid object is not evaluated again. */
static PyObject *make_launcher(DispatcherObject *self, PyObject *grid, const int *preset) {
    LauncherObject *L = (LauncherObject *)self->launcher;
    if (L && Py_REFCNT(L) == 1 && L->d == self) {
        Py_INCREF(L);
        launcher_set_preset(L, preset);
        if (L->grid != grid) {
            PyObject *old = L->grid;
            Py_INCREF(grid);
            launcher_set_grid(L, grid);
            Py_XDECREF(old); /* (after L is held: code run by the old grid's release does not see L free) */
        }
        return (PyObject *)L;
    }
    L = PyObject_GC_New(LauncherObject, &LauncherType);
    if (!L) return NULL;
    L->vectorcall = Launcher_vectorcall;
    Py_INCREF(self);
    L->d = self;
    Py_INCREF(grid);
    launcher_set_grid(L, grid);
    launcher_set_preset(L, preset);
    PyObject_GC_Track(L);
    if (!self->launcher || Py_REFCNT(self->launcher) > 1) {
        Py_INCREF(L);
        Py_XSETREF(self->launcher, (PyObject *)L);
    }
    return (PyObject *)L;
}

static PyObject *Dispatcher_subscript(DispatcherObject *self, PyObject *grid) {
    return make_launcher(self, grid, NULL);
}

/* An option of _launcher: an int from 0 to 65535 (maxnreg: None is 0). */
static int option_arg(PyObject *v, const char *name, int none_ok, int *out) {
    if (none_ok && v == Py_None) {
        *out = 0;
        return 0;
    }
    long x = PyLong_Check(v) && !PyBool_Check(v) ? PyLong_AsLong(v) : -1;
    if (x == -1 && PyErr_Occurred()) return -1;
    if (x < 0 || x > 65535) {
        PyErr_Format(PyExc_ValueError, "_launcher: %s must be an int from 0 to 65535", name);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* _launcher(grid, num_warps, num_stages, maxnreg): compiled[grid], a launcher
 * whose options are these unless the call gives them (a keyword, or a
 * parameter named like the option). */
static PyObject *Dispatcher_launcher(DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_launcher(grid, num_warps, num_stages, maxnreg) takes 4 arguments");
        return NULL;
    }
    int preset[3];
    if (option_arg(args[1], "num_warps", 0, &preset[0]) || option_arg(args[2], "num_stages", 0, &preset[1]) ||
        option_arg(args[3], "maxnreg", 1, &preset[2]))
        return NULL;
    return make_launcher(self, args[0], preset);
}

static PyMappingMethods Dispatcher_as_mapping = {NULL, (binaryfunc)Dispatcher_subscript, NULL};

static int Dispatcher_traverse(DispatcherObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->names);
    Py_VISIT(self->defaults);
    Py_VISIT(self->meta);
    Py_VISIT(self->launcher);
    const Table *tables[2] = {&self->launches, &self->warm};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < tables[t]->cap; i++) {
            Entry *e = tables[t]->slots[i];
            if (!e) continue;
            Py_VISIT(e->kernel);
            Py_VISIT(e->result);
            for (int j = 0; j < e->nobjs; j++) Py_VISIT(e->objs[j]);
        }
    return 0;
}

static int Dispatcher_clear(DispatcherObject *self) {
    Py_CLEAR(self->names);
    Py_CLEAR(self->defaults);
    Py_CLEAR(self->meta);
    Py_CLEAR(self->launcher);
    table_clear(&self->launches);
    table_clear(&self->warm);
    return 0;
}

static void Dispatcher_dealloc(DispatcherObject *self) {
    PyObject_GC_UnTrack(self);
    Dispatcher_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* _setup(names, flags, defaults): the parameters (flags: bytes of PF_* per parameter). */
static PyObject *Dispatcher_setup(DispatcherObject *self, PyObject *a) {
    PyObject *names, *flags, *defaults;
    if (!PyArg_ParseTuple(a, "O!SO!", &PyTuple_Type, &names, &flags, &PyTuple_Type, &defaults)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (PyBytes_GET_SIZE(flags) != n || PyTuple_GET_SIZE(defaults) != n) {
        PyErr_SetString(PyExc_ValueError, "_setup: names, flags and defaults differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "_setup: parameter names must be str");
            return NULL;
        }
    table_clear(&self->launches);
    table_clear(&self->warm);
    Py_INCREF(names);
    Py_XSETREF(self->names, names);
    Py_INCREF(defaults);
    Py_XSETREF(self->defaults, defaults);
    self->slow_only = n > MAX_PARAMS;
    self->nparams = self->slow_only ? 0 : (int)n;
    memset(self->flags, 0, sizeof self->flags);
    if (!self->slow_only) memcpy(self->flags, PyBytes_AS_STRING(flags), (size_t)n);
    PyObject *optnames[3] = {s_num_warps, s_num_stages, s_maxnreg};
    for (int o = 0; o < 3; o++) {
        self->opt_param[o] = -1;
        for (Py_ssize_t i = 0; i < n; i++) /* (every parameter: compiled[grid] of a slow-only kernel reads it) */
            if (PyUnicode_Compare(PyTuple_GET_ITEM(names, i), optnames[o]) == 0) self->opt_param[o] = (int)i;
    }
    Py_RETURN_NONE;
}

/* Parse the values tuple and options of _specialize / _register. */
static int parse_values(DispatcherObject *D, PyObject *values, int opts[3], PyObject **vals) {
    if (!D->names) {
        PyErr_SetString(PyExc_RuntimeError, "Dispatcher._setup was not called");
        return -1;
    }
    if (!PyTuple_Check(values) || PyTuple_GET_SIZE(values) != D->nparams || D->slow_only) {
        PyErr_Format(PyExc_ValueError, "expected a tuple of %d values", D->nparams);
        return -1;
    }
    for (int i = 0; i < D->nparams; i++) vals[i] = PyTuple_GET_ITEM(values, i);
    (void)opts;
    return 0;
}

static PyObject *key_to_bytes(const Key *k) {
    return PyBytes_FromStringAndSize((const char *)k->w, (Py_ssize_t)(sizeof(uint64_t) * (size_t)k->n));
}

static PyObject *key_objs_tuple(const Key *k) {
    PyObject *t = PyTuple_New(k->nobjs);
    if (!t) return NULL;
    for (int i = 0; i < k->nobjs; i++) {
        Py_INCREF(k->objs[i]);
        PyTuple_SET_ITEM(t, i, k->objs[i]);
    }
    return t;
}

/* _specialize(values, num_warps, num_stages, maxnreg) -> (key, objs, sigs, device, fast):
 * key (bytes) is None when some argument needs Python's attention (an unknown
 * dtype, an unsupported object, an int over 64 bits); sigs[i] is the
 * signature entry of a runtime argument, or None for constexpr literals;
 * device is the CUDA device of the tensors (-1 none, -2 host arrays or mixed). */
static PyObject *Dispatcher_specialize(DispatcherObject *self, PyObject *a) {
    PyObject *values;
    int opts[3] = {4, 3, 0};
    if (!PyArg_ParseTuple(a, "O|iii", &values, &opts[0], &opts[1], &opts[2])) return NULL;
    PyObject *vals[MAX_PARAMS];
    if (parse_values(self, values, opts, vals)) return NULL;
    Key k;
    PVal pv[PV_SLOTS];
    char sigs[MAX_PARAMS][SIG_MAX];
    int r = key_build(&k, self->nparams, self->flags, vals, opts, pv, sigs);
    if (r) {
        key_release(&k);
        if (PyErr_Occurred()) return NULL;
        return Py_BuildValue("(OOOiO)", Py_None, Py_None, Py_None, -2, Py_False);
    }
    PyObject *sl = PyList_New(self->nparams);
    if (!sl) {
        key_release(&k);
        return NULL;
    }
    for (int i = 0; i < self->nparams; i++) {
        PyObject *s = sigs[i][0] ? PyUnicode_FromString(sigs[i]) : (Py_INCREF(Py_None), Py_None);
        if (!s) {
            Py_DECREF(sl);
            key_release(&k);
            return NULL;
        }
        PyList_SET_ITEM(sl, i, s);
    }
    PyObject *res = Py_BuildValue("(NNNiO)", key_to_bytes(&k), key_objs_tuple(&k), sl, k.device,
                                  k.fast ? Py_True : Py_False);
    key_release(&k);
    return res;
}

/* A new entry for key k (its hash, words and objects) with room for nrt
 * runtime arguments; NULL with an exception. */
static Entry *entry_new(const Key *k, int nrt) {
    Entry *e = PyMem_Calloc(1, sizeof *e);
    if (!e) return (Entry *)PyErr_NoMemory();
    e->hash = key_hash(k);
    e->nwords = k->n;
    e->words = PyMem_Malloc(sizeof(uint64_t) * (size_t)(k->n ? k->n : 1));
    e->nobjs = k->nobjs;
    e->objs = PyMem_Calloc((size_t)(e->nobjs ? e->nobjs : 1), sizeof(PyObject *));
    e->rt_param = PyMem_Calloc((size_t)(nrt ? nrt : 1), sizeof(int16_t));
    e->rt_pack = PyMem_Calloc((size_t)(nrt ? nrt : 1), 1);
    if (!e->words || !e->objs || !e->rt_param || !e->rt_pack) {
        entry_free(e);
        return (Entry *)PyErr_NoMemory();
    }
    memcpy(e->words, k->w, sizeof(uint64_t) * (size_t)k->n);
    for (int i = 0; i < e->nobjs; i++) {
        e->objs[i] = k->objs[i];
        Py_INCREF(e->objs[i]);
    }
    return e;
}

/* Where each runtime argument of kernel kn takes its value from: an argument
 * named like its parameter from that parameter's slot, the others (NAME.base,
 * NAME.0, ...: aggregates) from the leaves, in order, which must be as many
 * as the key has (the count in its options word).  0, or -1 with an exception. */
static int map_args(DispatcherObject *D, const NrKernel *kn, const Key *k, Entry *e) {
    uint64_t last = k->w[k->n - 1];
    int leaves = 0, want = KTAG(last) == KT_OPTS ? (int)((last >> 32) & 0xffffff) : -1;
    for (int i = 0; i < e->nrt; i++) {
        NrArgInfo ai;
        nr_kernel_arg_info(kn, i, &ai);
        int pk = pack_code(&ai);
        if (pk < 0 || ai.param_index < 0 || ai.param_index >= D->nparams) {
            PyErr_Format(PyExc_ValueError, "_register: argument '%s' (%s) cannot be packed", ai.name, ai.dtype);
            return -1;
        }
        const char *pname = PyUnicode_AsUTF8(PyTuple_GET_ITEM(D->names, ai.param_index));
        if (!pname) return -1;
        size_t pl = strlen(pname);
        if (strcmp(ai.name, pname) == 0) {
            e->rt_param[i] = (int16_t)ai.param_index;
        } else if (strncmp(ai.name, pname, pl) == 0 && ai.name[pl] == '.' && leaves < MAX_LEAVES) {
            e->rt_param[i] = (int16_t)(MAX_PARAMS + leaves++);
        } else {
            PyErr_Format(PyExc_ValueError, "_register: argument '%s' is not parameter '%s' nor one of its leaves",
                         ai.name, pname);
            return -1;
        }
        e->rt_pack[i] = (uint8_t)pk;
    }
    if (leaves != want) {
        PyErr_Format(PyExc_ValueError, "_register: the kernel has %d aggregate leaves, the key %d", leaves, want);
        return -1;
    }
    return 0;
}

/* _register(key, objs, kernel, device, fake=False, result=None): launch
 * `kernel` directly for arguments of this key from now on, returning
 * `result`.  fake: record launches instead of making them (tests and the
 * dispatch benchmark; the kernel need not be a GPU kernel). */
static PyObject *Dispatcher_register(DispatcherObject *self, PyObject *a) {
    PyObject *key, *objs, *result = Py_None;
    KernelObject *ko;
    int device, fake = 0;
    if (!PyArg_ParseTuple(a, "SO!O!i|pO", &key, &PyTuple_Type, &objs, &KernelType, &ko, &device, &fake, &result))
        return NULL;
    Py_ssize_t nbytes = PyBytes_GET_SIZE(key);
    if (nbytes % 8 || nbytes / 8 > MAX_KEY_WORDS || nbytes == 0 || PyTuple_GET_SIZE(objs) > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "_register: not a key of _specialize");
        return NULL;
    }
    int nrt = nr_kernel_num_args(ko->k);
    if (nrt > MAX_RT) {
        PyErr_SetString(PyExc_ValueError, "_register: too many runtime arguments for the fast path");
        return NULL;
    }
    Key k; /* (its objects borrowed from objs) */
    k.n = (int)(nbytes / 8);
    memcpy(k.w, PyBytes_AS_STRING(key), (size_t)nbytes);
    k.nobjs = (int)PyTuple_GET_SIZE(objs);
    for (int i = 0; i < k.nobjs; i++) k.objs[i] = PyTuple_GET_ITEM(objs, i);
    Entry *e = entry_new(&k, nrt);
    if (!e) return NULL;
    Py_INCREF(ko);
    e->kernel = (PyObject *)ko;
    Py_INCREF(result);
    e->result = result;
    e->device = device;
    e->dev_obj = PyLong_FromLong(device);
    if (!e->dev_obj) {
        entry_free(e);
        return NULL;
    }
    e->nrt = nrt;
    if (map_args(self, ko->k, &k, e)) {
        entry_free(e);
        return NULL;
    }
    if (fake) {
        e->max_grid[0] = 0x7fffffffu;
        e->max_grid[1] = e->max_grid[2] = 65535;
    } else {
        NrContext *ctx = thread_context();
        if (!ctx) {
            entry_free(e);
            return PyErr_NoMemory();
        }
        NrStatus st;
        Py_BEGIN_ALLOW_THREADS
        st = nr_kernel_gpu_entry(ctx, ko->k, device, &e->ge);
        Py_END_ALLOW_THREADS
        if (st != NR_OK) {
            raise_with_diags(st == NR_ERR_LAUNCH ? LaunchError : PyExc_ValueError, ctx);
            entry_free(e);
            return NULL;
        }
        nr_gpu_entry_max_grid(e->ge, e->max_grid);
    }
    if (table_put(&self->launches, e)) {
        entry_free(e);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Dispatcher_clear_entries(DispatcherObject *self, PyObject *unused) {
    (void)unused;
    table_clear(&self->launches);
    table_clear(&self->warm);
    Py_RETURN_NONE;
}

/* ---- warmups ----------------------------------------------------------------------------------------
 *
 * kernel.warmup(*args, grid=(1,), **kwargs) compiles without launching and
 * returns the CompiledKernel.  run makes it, then registers the key of the
 * call here (_register_warmup); the next warmup with a key equal to it
 * returns the same CompiledKernel without going through run.  The key is the
 * launch key (arguments and options, bound like a launch) with two more
 * words: whether the kernels run on the interpreter and whether host tensors
 * stood in for CUDA ones, then the GPU target switches (Switches.target).
 * Keys that do not say everything run looks at are not registered: arrays of
 * the CUDA array interface (their device is not in the key) and torch tensors
 * in host memory (other devices than the CPU read as host memory too). */

/* Append the words of a warmup key. */
static void key_warm(Key *k, Switches sw) {
    k->w[k->n++] = KW(KT_WARM, (uint64_t)((sw.bits & SW_INTERPRET) != 0) | (uint64_t)k->stand_in << 1);
    k->w[k->n++] = sw.target;
}

/* Whether a key (before key_warm) says everything run looks at (see above). */
static int key_warmable(const Key *k) {
    for (int i = 0; i < k->n; i++) {
        int tag = KTAG(k->w[i]);
        if (tag == KT_CINT || tag == KT_CFLOAT || tag == KT_DESC) i++; /* (the next word is a value, a class) */
        else if (tag == KT_CAI) return 0;
        else if (tag == KT_TENSOR && (k->w[i] & 0xfffff) == 0 && !k->stand_in) return 0; /* (device + 1 == 0) */
    }
    return 1;
}

/* _register_warmup(values, num_warps, num_stages, maxnreg, result) -> bool:
 * warmups whose key is that of these bound values and options, under the
 * present switches, return `result` from now on.  False when the key is not
 * one the C path builds or registers. */
static PyObject *Dispatcher_register_warmup(DispatcherObject *self, PyObject *a) {
    PyObject *values, *result;
    int opts[3];
    if (!PyArg_ParseTuple(a, "OiiiO", &values, &opts[0], &opts[1], &opts[2], &result)) return NULL;
    PyObject *vals[MAX_PARAMS];
    if (parse_values(self, values, opts, vals)) return NULL;
    Key k;
    PVal pv[PV_SLOTS];
    if (key_build(&k, self->nparams, self->flags, vals, opts, pv, NULL) || !key_warmable(&k)) {
        key_release(&k);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_FALSE;
    }
    key_warm(&k, fast_env());
    Entry *e = entry_new(&k, 0);
    key_release(&k);
    if (!e) return NULL;
    Py_INCREF(result);
    e->result = result;
    if (table_put(&self->warm, e)) {
        entry_free(e);
        return NULL;
    }
    Py_RETURN_TRUE;
}

/* warmup(*args, grid=(1,), **kwargs): the CompiledKernel of a registered
 * warmup key, else self.run(*args, grid=grid, warmup=True, **kwargs). */
static PyObject *Dispatcher_warmup(DispatcherObject *D, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *vals[MAX_PARAMS];
    PVal pv[PV_SLOTS];
    int opts[3];
    Key k;
    k.nobjs = 0;
    if (D->warm.count && api.plain_run && _PyType_Lookup(Py_TYPE(D), s_run) == api.plain_run &&
        !bind_args(D, args, nargs, kwnames, vals, opts, NULL, s_grid)) {
        Switches sw = fast_env();
        if (!(sw.bits & SW_NO_FAST) && !key_build(&k, D->nparams, D->flags, vals, opts, pv, NULL)) {
            key_warm(&k, sw);
            Entry *e = table_find(&D->warm, &k, key_hash(&k));
            if (e) {
                D->warm_hits++;
                key_release(&k);
                Py_INCREF(e->result);
                return e->result;
            }
        }
        key_release(&k);
    }
    PyErr_Clear();
    PyObject *grid = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++)
        if (same_name(PyTuple_GET_ITEM(kwnames, j), s_grid)) grid = args[nargs + j];
    if (grid) return call_run(D, grid, args, nargs, kwnames, NULL, 1);
    PyObject *one = Py_BuildValue("(i)", 1);
    if (!one) return NULL;
    PyObject *r = call_run(D, one, args, nargs, kwnames, NULL, 1);
    Py_DECREF(one);
    return r;
}

static PyObject *Dispatcher_fake_launch(DispatcherObject *self, PyObject *unused) {
    (void)unused;
    FakeLaunch *f = &self->fake;
    PyObject *params = PyTuple_New(f->nparams);
    if (!params) return NULL;
    for (int i = 0; i < f->nparams; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(f->params[i]);
        if (!v) {
            Py_DECREF(params);
            return NULL;
        }
        PyTuple_SET_ITEM(params, i, v);
    }
    return Py_BuildValue("{s:K,s:(III),s:i,s:K,s:N}", "count", f->count, "grid", f->grid[0], f->grid[1], f->grid[2],
                         "device", f->device, "stream", f->stream, "params", params);
}

static PyObject *Dispatcher_get_entries(DispatcherObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->launches.count);
}

static PyMethodDef Dispatcher_methods[] = {
    {"_setup", (PyCFunction)Dispatcher_setup, METH_VARARGS, "_setup(names, flags, defaults)"},
    {"_specialize", (PyCFunction)Dispatcher_specialize, METH_VARARGS,
     "_specialize(values, num_warps, num_stages, maxnreg) -> (key, objs, sigs, device, fast)"},
    {"_register", (PyCFunction)Dispatcher_register, METH_VARARGS, "_register(key, objs, kernel, device, fake=False, result=None)"},
    {"_clear_fast_path", (PyCFunction)Dispatcher_clear_entries, METH_NOARGS,
     "forget every registered key (launches and warmups)"},
    {"_register_warmup", (PyCFunction)Dispatcher_register_warmup, METH_VARARGS,
     "_register_warmup(values, num_warps, num_stages, maxnreg, result) -> bool"},
    {"_launcher", (PyCFunction)(void (*)(void))Dispatcher_launcher, METH_FASTCALL,
     "_launcher(grid, num_warps, num_stages, maxnreg): compiled[grid], launching with these options"},
    {"warmup", (PyCFunction)(void (*)(void))Dispatcher_warmup, METH_FASTCALL | METH_KEYWORDS,
     "warmup(*args, grid=(1,), **kwargs) -> CompiledKernel: compile for these arguments without launching"},
    {"_fake_launch", (PyCFunction)Dispatcher_fake_launch, METH_NOARGS, "what the stand-in launch recorded last"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Dispatcher_get_hits(DispatcherObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->hits);
}

static PyObject *Dispatcher_get_warm_entries(DispatcherObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->warm.count);
}

static PyObject *Dispatcher_get_warm_hits(DispatcherObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->warm_hits);
}

static PyObject *Dispatcher_get_stop(DispatcherObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->stop_after);
}

static int Dispatcher_set_stop(DispatcherObject *self, PyObject *v, void *closure) {
    (void)closure;
    long x = v ? PyLong_AsLong(v) : 0;
    if (x == -1 && PyErr_Occurred()) return -1;
    if (x < 0 || x >= STAGE_COUNT) {
        PyErr_Format(PyExc_ValueError, "_fast_stop_after must be 0 to %d", STAGE_COUNT - 1);
        return -1;
    }
    self->stop_after = (int)x;
    return 0;
}

static PyGetSetDef Dispatcher_getset[] = {
    {"_fast_stop_after", (getter)Dispatcher_get_stop, (setter)Dispatcher_set_stop,
     "benchmarks: end fast launches after this stage (an index of nereid._C.FAST_STAGES), returning None; "
     "0 launches", NULL},
    {"_fast_entries", (getter)Dispatcher_get_entries, NULL, "keys registered for the fast path", NULL},
    {"_fast_hits", (getter)Dispatcher_get_hits, NULL, "launches made by the fast path", NULL},
    {"_warm_entries", (getter)Dispatcher_get_warm_entries, NULL, "warmup keys registered", NULL},
    {"_warm_hits", (getter)Dispatcher_get_warm_hits, NULL, "warmups answered without run", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DispatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nereid._C.Dispatcher",
    .tp_basicsize = sizeof(DispatcherObject),
    .tp_dealloc = (destructor)Dispatcher_dealloc,
    .tp_as_mapping = &Dispatcher_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "the launch fast path of a kernel (the base class of JITFunction)",
    .tp_traverse = (traverseproc)Dispatcher_traverse,
    .tp_clear = (inquiry)Dispatcher_clear,
    .tp_methods = Dispatcher_methods,
    .tp_getset = Dispatcher_getset,
    .tp_new = PyType_GenericNew,
};

/* set_api(tensor_type=..., get_stream=..., constexpr_type=..., literal_type=..., plain_run=..., no_default=...,
 * array_type=..., stand_in_device=..., exchange=...): what the fast path knows of the program (array_type:
 * numpy.ndarray); arguments left out keep their value, None clears.  stand_in_device (tests, benchmarks): host
 * tensors of tensor_type count as on this CUDA device, so that stand-in launches can be made for them; -1 turns
 * it off.  exchange: whether tensors of tensor_type are read through the DLPack exchange table of their type,
 * when it has one: 0 no, 1 yes, 2 and the stream too (instead of get_stream).  A new tensor_type turns it to 1
 * unless given, a get_stream given alone from 2 to 1.  Returns the old values. */
static PyObject *py_set_api(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"tensor_type", "get_stream", "constexpr_type", "literal_type", "plain_run", "no_default",
                             "array_type", "stand_in_device", "exchange", NULL};
    PyObject *v[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    int stand_in = -2, exchange = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOii", kwlist, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                                     &v[6], &stand_in, &exchange))
        return NULL;
    if (exchange < -1 || exchange > 2) {
        PyErr_SetString(PyExc_ValueError, "set_api: exchange must be 0 (off), 1 (tensors) or 2 (tensors and stream)");
        return NULL;
    }
    for (int i = 0; i < 7; i++)
        if (v[i] && v[i] != Py_None && (i == 0 || i == 2 || i == 3 || i == 6) && !PyType_Check(v[i])) {
            PyErr_Format(PyExc_TypeError, "set_api: %s must be a type", kwlist[i]);
            return NULL;
        }
    if (stand_in < -2 || stand_in > 0xffff) {
        PyErr_SetString(PyExc_ValueError, "set_api: stand_in_device must be -1 or a device number");
        return NULL;
    }
    PyObject *old = Py_BuildValue("{s:O,s:O,s:O,s:O,s:i,s:i}", "tensor_type",
                                  api.tensor_type ? (PyObject *)api.tensor_type : Py_None, "get_stream",
                                  api.get_stream ? api.get_stream : Py_None, "plain_run",
                                  api.plain_run ? api.plain_run : Py_None, "array_type",
                                  api.array_type ? (PyObject *)api.array_type : Py_None, "stand_in_device",
                                  api.stand_in_device, "exchange", fast.dl_level);
    if (!old) return NULL;
    PyObject **slot[7] = {(PyObject **)&api.tensor_type, &api.get_stream, (PyObject **)&api.constexpr_type,
                          (PyObject **)&api.literal_type, &api.plain_run, &api.no_default,
                          (PyObject **)&api.array_type};
    for (int i = 0; i < 7; i++) {
        if (!v[i]) continue;
        PyObject *nv = v[i] == Py_None ? NULL : v[i];
        Py_XINCREF(nv);
        Py_XSETREF(*slot[i], nv);
    }
    if (stand_in != -2) api.stand_in_device = stand_in;
    fast.type = NULL; /* the readers are resolved again at the next launch */
    fast.stream_fn = NULL;
    fast.stream_self = NULL;
    PyObject *gs = api.get_stream;
    if (gs && PyCFunction_Check(gs) && (PyCFunction_GET_FLAGS(gs) & ~METH_COEXIST) == METH_O) {
        fast.stream_fn = PyCFunction_GET_FUNCTION(gs);
        fast.stream_self = PyCFunction_GET_SELF(gs); /* (borrowed: the function keeps it) */
    }
    /* The exchange table: on by default for a new tensor type that has one; the
     * stream from it only when asked (a get_stream given alone turns it off). */
    if (exchange >= 0) fast.dl_level = exchange;
    else if (v[0]) fast.dl_level = 1;
    else if (v[1] && fast.dl_level == 2) fast.dl_level = 1;
    fast.dl = NULL; /* found again with the readers */
    fast.dl_stream = 0;
    return old;
}

/* fast_path_info() -> dict: how the fast path reads tensors of api.tensor_type
 * and gets the stream (for tests, and for checking a torch version). */
static PyObject *py_fast_path_info(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    static const char *const kinds[] = {"getattr", "getset", "c-method", "python-method"};
    int ready = api.tensor_type && readers_ready(api.tensor_type);
    const char *stream = fast.dl_stream ? "dlpack-exchange" : fast.stream_fn ? "c-function" : api.get_stream ? "call"
                                                                                                          : "none";
    const char *tensors = fast.dl ? "dlpack-exchange" : "methods";
    if (!ready)
        return Py_BuildValue("{s:O,s:s,s:s}", "tensor_type", api.tensor_type ? (PyObject *)api.tensor_type : Py_None,
                             "stream", stream, "tensors", tensors);
    return Py_BuildValue("{s:O,s:s,s:s,s:s,s:s,s:s}", "tensor_type", (PyObject *)api.tensor_type, "dtype",
                         kinds[fast.dtype.kind], "data_ptr", kinds[fast.data_ptr.kind], "get_device",
                         kinds[fast.get_device.kind], "stream", stream, "tensors", tensors);
}

/* register_dtype(dtype_object, signature_name) */
static PyObject *py_register_dtype(PyObject *mod, PyObject *a) {
    (void)mod;
    PyObject *obj, *sig;
    if (!PyArg_ParseTuple(a, "OU", &obj, &sig)) return NULL;
    if (dtype_code(obj)) Py_RETURN_TRUE;
    if (api.ndtypes >= MAX_DTYPES) Py_RETURN_FALSE; /* the fast path leaves the rest to Python */
    const char *name = PyUnicode_AsUTF8(sig);
    if (!name) return NULL;
    int key = api.ndtypes + 1;
    for (int i = 0; i < api.ndtypes; i++)
        if (PyUnicode_Compare(api.dtype_sig[i], sig) == 0) {
            key = api.dtype_key[i];
            break;
        }
    Py_INCREF(obj);
    Py_INCREF(sig);
    api.dtype_obj[api.ndtypes] = obj;
    api.dtype_sig[api.ndtypes] = sig;
    api.dtype_key[api.ndtypes] = key;
    api.dtype_dl[api.ndtypes] = sig_dl_type(name);
    api.ndtypes++;
    Py_RETURN_TRUE;
}

/* device_properties(device) -> dict: what the driver says of a CUDA device. */
static PyObject *py_device_properties(PyObject *mod, PyObject *a) {
    (void)mod;
    int device = 0;
    if (!PyArg_ParseTuple(a, "|i", &device)) return NULL;
    NrCudaConfig cfg;
    nr_cuda_config_default(&cfg);
    cfg.device = device;
    NrCuda *cu = NULL;
    char err[512] = "";
    NrCudaStatus st;
    Py_BEGIN_ALLOW_THREADS
    st = nr_cuda_open(&cfg, &cu, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (st != NR_CUDA_OK) {
        PyErr_SetString(PyExc_RuntimeError, err);
        return NULL;
    }
    const NrCudaDeviceInfo *d = nr_cuda_device_info(cu);
    PyObject *r = Py_BuildValue(
        "{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:n,s:i,s:(iii),s:(iii)}", "name",
        d->name, "major", d->cc_major, "minor", d->cc_minor, "multiprocessor_count", d->sm_count, "warp_size",
        d->warp_size, "max_threads_per_block", d->max_threads_per_block, "max_shared_mem",
        d->max_shared_per_block_optin, "max_shared_mem_default", d->max_shared_per_block, "max_shared_mem_per_sm",
        d->max_shared_per_sm, "max_num_regs", d->regs_per_block, "max_regs_per_sm", d->regs_per_sm,
        "max_threads_per_sm", d->max_threads_per_sm, "l2_cache_size", d->l2_bytes, "sm_clock_rate", d->clock_khz,
        "mem_clock_rate", d->mem_clock_khz, "mem_bus_width", d->mem_bus_width_bits, "driver_version",
        d->driver_version, "total_memory", (Py_ssize_t)d->total_mem_bytes, "reserved_shared_mem",
        d->reserved_shared_per_block, "max_grid", d->max_grid_dim[0], d->max_grid_dim[1], d->max_grid_dim[2],
        "max_block", d->max_block_dim[0], d->max_block_dim[1], d->max_block_dim[2]);
    nr_cuda_close(cu);
    return r;
}

static int init_fast_path(PyObject *m) {
    struct {
        PyObject **slot;
        const char *s;
    } names[] = {{&s_dl_exchange, "__dlpack_c_exchange_api__"}, {&s_data_ptr, "data_ptr"},
                 {&s_dtype, "dtype"},
                 {&s_get_device, "get_device"},
                 {&s_run, "run"},
                 {&s_value, "value"},
                 {&s_array_interface, "__array_interface__"},
                 {&s_cai, "__cuda_array_interface__"},
                 {&s_num_warps, "num_warps"},
                 {&s_num_stages, "num_stages"},
                 {&s_maxnreg, "maxnreg"},
                 {&s_grid, "grid"},
                 {&s_data, "data"},
                 {&s_num_ctas, "num_ctas"},
                 {&s_warmup, "warmup"},
                 {&s_strides, "strides"},
                 {&s_base, "base"},
                 {&s_shape, "shape"},
                 {&s_block_shape, "block_shape"},
                 {&s_padding, "padding"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].s);
        if (!*names[i].slot) return -1;
    }
    if (PyType_Ready(&DispatcherType) < 0 || PyType_Ready(&LauncherType) < 0) return -1;
    Py_INCREF(&DispatcherType);
    PyModule_AddObject(m, "Dispatcher", (PyObject *)&DispatcherType);
    Py_INCREF(&LauncherType);
    PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType);
    PyModule_AddIntConstant(m, "PF_CONSTEXPR", PF_CONSTEXPR);
    PyModule_AddIntConstant(m, "PF_NOSPEC", PF_NOSPEC);
    PyModule_AddIntConstant(m, "PF_NOSPEC_ALIGN", PF_NOSPEC_ALIGN);
    PyModule_AddIntConstant(m, "MAX_FAST_PARAMS", MAX_PARAMS);
    PyObject *stages = PyTuple_New(STAGE_COUNT);
    if (!stages) return -1;
    for (int i = 0; i < STAGE_COUNT; i++) {
        PyObject *n = PyUnicode_FromString(stage_names[i]);
        if (!n) {
            Py_DECREF(stages);
            return -1;
        }
        PyTuple_SET_ITEM(stages, i, n);
    }
    if (PyModule_AddObject(m, "FAST_STAGES", stages) < 0) {
        Py_DECREF(stages);
        return -1;
    }
    return 0;
}

/* _stand_in_exchange(major=1, minor=3) -> capsule: a DLPack exchange table for
 * stand-in tensors (tests without torch), to be set on their type as
 * __dlpack_c_exchange_api__.  A stand-in is an int v: data v, byte_offset
 * 0x10 (so that a launch shows which way it was read), on the CPU when v is
 * odd else on CUDA device v.bit_length(); fp16 when v & 2 else fp32; 0 has
 * no storage (BufferError).  The current stream of device d is 0x7000 + d,
 * and device 63 has none (RuntimeError). */
static void stand_in_exchange_free(PyObject *c) { PyMem_RawFree(PyCapsule_GetPointer(c, "dlpack_exchange_api")); }

static int stand_in_dltensor(void *obj, DlTensor *out) {
    unsigned long long v = PyLong_AsUnsignedLongLong((PyObject *)obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (v == 0) {
        PyErr_SetString(PyExc_BufferError, "stand-in tensor without storage");
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->data = (void *)(uintptr_t)v;
    out->byte_offset = 0x10;
    out->device.type = v & 1 ? DL_CPU : DL_CUDA;
    out->device.id = 0;
    if (out->device.type == DL_CUDA)
        for (unsigned long long x = v; x; x >>= 1) out->device.id++; /* v.bit_length() */
    out->dtype.code = DL_FLOAT;
    out->dtype.bits = v & 2 ? 16 : 32;
    out->dtype.lanes = 1;
    return 0;
}

static int stand_in_stream(int32_t type, int32_t id, void **stream) {
    if (type != DL_CUDA || id == 63) {
        PyErr_SetString(PyExc_RuntimeError, "stand-in device without a stream");
        return -1;
    }
    *stream = (void *)(uintptr_t)(0x7000 + id);
    return 0;
}

static PyObject *py_stand_in_exchange(PyObject *mod, PyObject *a) {
    (void)mod;
    unsigned major = 1, minor = 3;
    if (!PyArg_ParseTuple(a, "|II", &major, &minor)) return NULL;
    DlExchange *x = PyMem_RawCalloc(1, sizeof *x);
    if (!x) return PyErr_NoMemory();
    x->header.version.major = major;
    x->header.version.minor = minor;
    x->dltensor_from_py_object = stand_in_dltensor;
    x->current_work_stream = stand_in_stream;
    PyObject *c = PyCapsule_New(x, "dlpack_exchange_api", stand_in_exchange_free);
    if (!c) PyMem_RawFree(x);
    return c;
}

static PyMethodDef module_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))py_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, filename, kernel, signature, num_warps=4, num_stages=3, stop_after=None, verify_each=False, "
     "arch=None, maxnreg=0, fp_fusion=True, no_tma=False) -> (Kernel, notes)"},
    {"check", py_check, METH_VARARGS, "check(source, filename): parse and check a module"},
    {"set_api", (PyCFunction)(void (*)(void))py_set_api, METH_VARARGS | METH_KEYWORDS,
     "set_api(tensor_type, get_stream, constexpr_type, literal_type, plain_run, no_default, array_type, "
     "stand_in_device, exchange) -> old values"},
    {"register_dtype", py_register_dtype, METH_VARARGS, "register_dtype(dtype_object, signature_name)"},
    {"fast_path_info", py_fast_path_info, METH_NOARGS,
     "fast_path_info() -> how the launch fast path reads tensors and gets the current stream"},
    {"device_properties", py_device_properties, METH_VARARGS, "device_properties(device=0) -> dict"},
    {"_stand_in_exchange", py_stand_in_exchange, METH_VARARGS,
     "_stand_in_exchange(major=1, minor=3) -> a DLPack exchange table for stand-in tensors (tests)"},
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
    if (init_fast_path(m) < 0) return NULL;
    return m;
}
