/* sema_desc.c - tensor descriptors: tl.make_tensor_descriptor, host
 * descriptor arguments ("tensordesc<fp16[64, 64]>" in the signature),
 * desc.load / desc.store / desc.atomic_*, tl.load_tensor_descriptor and
 * tl.store_tensor_descriptor.
 *
 * A descriptor is its base pointer, sizes and strides (a tuple tagged with
 * the dtype, block shape and padding, so that it passes through calls, ifs
 * and loops like any tuple), and each access is an ordinary masked load or
 * store of the block
 *     base + sum_d (offset_d + arange(block_d)) * stride_d
 * whose mask keeps 0 <= offset_d + i < size_d in every dimension, so that
 * out-of-bounds elements read as zero (or NaN with padding "nan") and are
 * not written, as TMA does.  The rules Triton checks for a descriptor hold
 * here too: 1 to 5 dimensions, a last stride of 1, blocks of at least 16
 * bytes along it.  A host descriptor's loads and stores also name its base
 * and the block's coordinates, for TMA on sm_90a (docs/gpu.md). */
#include "sema_impl.h"

#include <math.h>
#include <string.h>

#define BN(c) nr_sm_builtin_name(s, (c)->bi)

static const SmDesc *desc_of(Val v) { return v.k == V_TUPLE ? v.tup.desc : NULL; }

Val nr_sm_desc_new(Sema *s, NrLoc loc, const SmDesc *d, Val base, const Val *shape, const Val *strides) {
    int r = d->rank;
    Val t = nr_sm_tuple(s, 1 + 2 * r);
    t.tup.desc = d;
    t.tup.v[0] = base;
    int es = nr_dt_bits(d->dt) / 8;
    for (int i = 0; i < r; i++) {
        t.tup.v[1 + i] = shape[i];
        Val st = strides[i];
        /* leading strides are multiples of 16 bytes (Triton requires it of every descriptor) */
        if (st.k == V_IR && i < r - 1 && es > 0 && es < 16) {
            int64_t m = 16 / es;
            NrOpId op = nr_sm_emit_op(s, loc, NR_OP_HINT, 1, &st.ir, 1, (NrTypeId[]){nr_sm_tid(s, st.ir)}, 0);
            nr_op_set_str(s->fn->f, op, NR_A_KIND, "multiple_of");
            nr_op_set_ints(s->fn->f, op, NR_A_VALUES, 1, &m);
            st = v_ir(nr_op_result(s->fn->f, op, 0));
        }
        t.tup.v[1 + r + i] = st;
    }
    return t;
}

/* --- building blocks through the library --------------------------------------------------------- */
static Val call_tl(Sema *s, NrLoc loc, const char *name, int n, const Val *args, int nkw, const char *const *kw,
                   const Val *kwv) {
    const Builtin *bi = nr_sm_find_builtin(name, SM_IN_TL);
    NR_ASSERT(bi);
    return nr_sm_call_builtin(s, loc, bi, NULL, n, args, NULL, nkw, kw, kwv, NULL);
}

static Val cint(int64_t i) { return v_const(nr_cv_int(i)); }

/* An int32 value (IR scalar or constexpr int) from an offset or size. */
static Val as_i32(Sema *s, NrLoc loc, Val v, const char *what) {
    if (v.k == V_CONST && (v.c.kind == NR_CV_INT || v.c.kind == NR_CV_BOOL)) return v;
    if (v.k != V_IR || nr_sm_type(s, v.ir)->rank != 0 || nr_sm_type(s, v.ir)->ptr ||
        !nr_dt_is_int((NrDtype)nr_sm_type(s, v.ir)->dtype))
        nr_sm_fail(s, loc, "%s must be an integer scalar, got %s", what, nr_sm_val_kind(s, v));
    return v_ir(nr_sm_cast(s, loc, v.ir, NR_DT_I32, 0, NULL));
}

/* The pointers of the block at `offsets` and the mask of its in-bounds elements. */
static void block_access(Sema *s, NrLoc loc, Val desc, Val offsets, const char *fn, Val *ptr, Val *mask) {
    const SmDesc *d = desc_of(desc);
    int r = d->rank;
    if (offsets.k != V_TUPLE || offsets.tup.desc)
        nr_sm_fail(s, loc, "%s: the offsets must be a list or tuple of %d integers, got %s", fn, r,
                   nr_sm_val_kind(s, offsets));
    if (offsets.tup.n != r)
        nr_sm_fail(s, loc, "%s: expected %d offsets for a %d-dimensional descriptor, got %d", fn, r, r, offsets.tup.n);
    Val p = desc.tup.v[0], m = nr_sm_none();
    for (int i = 0; i < r; i++) {
        Val off = as_i32(s, loc, offsets.tup.v[i], nr_sprintf(s->a, "offset %d of %s", i, fn));
        Val ar = call_tl(s, loc, "arange", 2, (Val[]){cint(0), cint(d->block[i])}, 0, NULL, NULL);
        int32_t shape[NR_MAX_RANK];
        for (int j = 0; j < r; j++) shape[j] = j == i ? (int32_t)d->block[i] : 1;
        Val idx = v_ir(nr_sm_reshape(s, loc, ar.ir, r, shape, false));
        if (!(off.k == V_CONST && off.c.i == 0)) idx = nr_sm_binop(s, loc, NR_BIN_ADD, idx, off);
        Val st = desc.tup.v[1 + r + i];
        Val term = st.k == V_CONST && st.c.kind == NR_CV_INT && st.c.i == 1 ? idx : nr_sm_binop(s, loc, NR_BIN_MUL, idx, st);
        p = nr_sm_binop(s, loc, NR_BIN_ADD, p, term);
        Val lo = nr_sm_compare(s, loc, NR_CMP_GE, idx, cint(0));
        Val hi = nr_sm_compare(s, loc, NR_CMP_LT, idx, desc.tup.v[1 + i]);
        Val in = nr_sm_binop(s, loc, NR_BIN_BITAND, lo, hi);
        m = m.k == V_CONST ? in : nr_sm_binop(s, loc, NR_BIN_BITAND, m, in);
    }
    *ptr = p;
    *mask = m;
}

static void check_value_shape(Sema *s, NrLoc loc, Val desc, Val v, const char *fn) {
    const SmDesc *d = desc_of(desc);
    if (v.k != V_IR) return; /* numbers broadcast */
    const NrType *t = nr_sm_type(s, v.ir);
    bool ok = t->rank == d->rank;
    for (int i = 0; ok && i < d->rank; i++) ok = t->shape[i] == d->block[i];
    if (!ok) {
        const char *bs = "";
        for (int i = 0; i < d->rank; i++) bs = nr_sprintf(s->a, "%s%s%lld", bs, i ? ", " : "", (long long)d->block[i]);
        nr_sm_fail(s, loc, "%s: the value has shape %s, but the descriptor's block is [%s]", fn, nr_sm_shape_str(s, t),
                   bs);
    }
}

/* A host descriptor's block load also names the descriptor's base and the
 * block's coordinates (load operands 3...), so that the GPU may load it
 * with TMA from the tensor map the launch encodes; the masked load is its
 * meaning everywhere.  The coordinates are made before the load (coords),
 * then added to it (tma_operands). */
static bool tma_coords(Sema *s, NrLoc loc, Val desc, Val offsets, NrValId *coords) {
    const SmDesc *d = desc_of(desc);
    if (!d->host || desc.tup.v[0].k != V_IR || offsets.k != V_TUPLE || offsets.tup.desc || offsets.tup.n != d->rank)
        return false;
    for (int i = 0; i < d->rank; i++) {
        Val off = as_i32(s, loc, offsets.tup.v[i], "a descriptor offset");
        coords[i] = off.k == V_IR ? off.ir : nr_sm_const(s, loc, nr_type_scalar(s->m, NR_DT_I32), &off.c);
    }
    return true;
}

static void tma_operands(Sema *s, Val desc, const NrValId *coords, NrOpId op) {
    const SmDesc *d = desc_of(desc);
    NrFunc *f = s->fn->f;
    if (!op || (f->ops[op].opc != NR_OP_LOAD && f->ops[op].opc != NR_OP_STORE) || f->ops[op].nopnds != 3) return;
    NrValId ops[4 + NR_MAX_RANK];
    for (int i = 0; i < 3; i++) ops[i] = f->ops[op].opnds[i];
    ops[3] = desc.tup.v[0].ir;
    for (int i = 0; i < d->rank; i++) ops[4 + i] = coords[i];
    nr_op_set_operands(f, op, 4 + d->rank, ops);
}

static Val desc_load(Sema *s, NrLoc loc, Val desc, Val offsets, const char *fn) {
    const SmDesc *d = desc_of(desc);
    Val p, m;
    block_access(s, loc, desc, offsets, fn, &p, &m);
    NrValId coords[NR_MAX_RANK];
    bool tma = tma_coords(s, loc, desc, offsets, coords);
    Val other = d->nan_pad ? v_const(nr_cv_float(NAN)) : cint(0);
    Val r = call_tl(s, loc, "load", 1, &p, 2, (const char *[]){"mask", "other"}, (Val[]){m, other});
    if (tma) tma_operands(s, desc, coords, r.k == V_IR ? s->fn->f->vals[r.ir].def : NR_NONE);
    return r;
}

static Val desc_store(Sema *s, NrLoc loc, Val desc, Val offsets, Val value, const char *fn) {
    Val p, m;
    check_value_shape(s, loc, desc, value, fn);
    block_access(s, loc, desc, offsets, fn, &p, &m);
    NrValId coords[NR_MAX_RANK];
    bool tma = tma_coords(s, loc, desc, offsets, coords);
    NrFunc *f = s->fn->f;
    NrOpId first = f->nops; /* ops are numbered as they are made: tl.store's is among the next */
    call_tl(s, loc, "store", 2, (Val[]){p, value}, 1, (const char *[]){"mask"}, &m);
    if (tma)
        for (NrOpId op = f->nops - 1; op >= first && op > 0; op--)
            if (f->ops[op].opc == NR_OP_STORE) {
                tma_operands(s, desc, coords, op);
                break;
            }
    return nr_sm_none();
}

/* desc.atomic_KIND(offsets, value): an atomic of the block, in bounds only (no result, as Triton). */
static Val desc_atomic(Sema *s, NrLoc loc, Val desc, Val offsets, Val value, const char *kind, const char *fn) {
    const SmDesc *d = desc_of(desc);
    NrDtype dt = d->dt;
    bool ok;
    if (!strcmp(kind, "add"))
        ok = dt == NR_DT_U32 || dt == NR_DT_I32 || dt == NR_DT_U64 || dt == NR_DT_F32 || dt == NR_DT_F16 || dt == NR_DT_BF16;
    else if (!strcmp(kind, "min") || !strcmp(kind, "max"))
        ok = dt == NR_DT_U32 || dt == NR_DT_I32 || dt == NR_DT_U64 || dt == NR_DT_I64;
    else
        ok = dt == NR_DT_U32 || dt == NR_DT_I32 || dt == NR_DT_U64 || dt == NR_DT_I64;
    if (!ok) nr_sm_fail(s, loc, "%s does not support %s descriptors", fn, nr_dt_name(s->a, dt, 0));
    Val p, m;
    check_value_shape(s, loc, desc, value, fn);
    block_access(s, loc, desc, offsets, fn, &p, &m);
    call_tl(s, loc, nr_sprintf(s->a, "atomic_%s", kind), 2, (Val[]){p, value}, 1, (const char *[]){"mask"}, &m);
    return nr_sm_none();
}

/* --- methods ------------------------------------------------------------------------------------------ */
static Val h_m_load(Sema *s, const SmCall *c) { return desc_load(s, c->loc, c->arg[0], c->arg[1], "desc.load"); }
static Val h_m_store(Sema *s, const SmCall *c) {
    return desc_store(s, c->loc, c->arg[0], c->arg[1], c->arg[2], "desc.store");
}
static Val h_m_atomic(Sema *s, const SmCall *c) {
    return desc_atomic(s, c->loc, c->arg[0], c->arg[1], c->arg[2], c->bi->str, BN(c));
}
static Val h_m_unsupported(Sema *s, const SmCall *c) {
    nr_sm_fail(s, c->loc, "desc.%s (TMA gather and scatter) is not supported by Nereid", c->bi->name);
}

static const Builtin methods[] = {
    {"load", 0, "self, offsets", h_m_load, 0, NULL},
    {"store", 0, "self, offsets, value", h_m_store, 0, NULL},
    {"atomic_add", 0, "self, offsets, value", h_m_atomic, 0, "add"},
    {"atomic_min", 0, "self, offsets, value", h_m_atomic, 0, "min"},
    {"atomic_max", 0, "self, offsets, value", h_m_atomic, 0, "max"},
    {"atomic_and", 0, "self, offsets, value", h_m_atomic, 0, "and"},
    {"atomic_or", 0, "self, offsets, value", h_m_atomic, 0, "or"},
    {"atomic_xor", 0, "self, offsets, value", h_m_atomic, 0, "xor"},
    {"gather", 0, "self, *args", h_m_unsupported, 0, NULL},
    {"scatter", 0, "self, *args", h_m_unsupported, 0, NULL},
};

Val nr_sm_desc_attr(Sema *s, NrLoc loc, Val desc, const char *name) {
    const SmDesc *d = desc_of(desc);
    int r = d->rank;
    for (size_t i = 0; i < NR_COUNTOF(methods); i++)
        if (strcmp(methods[i].name, name) == 0) {
            Val *self = nr_alloc(s->a, sizeof(Val));
            *self = desc;
            Val v;
            v.k = V_BUILTIN;
            v.bi.bi = &methods[i];
            v.bi.self = self;
            return v;
        }
    if (!strcmp(name, "block_shape")) {
        Val t = nr_sm_tuple(s, r);
        for (int i = 0; i < r; i++) t.tup.v[i] = cint(d->block[i]);
        return t;
    }
    if (!strcmp(name, "dtype")) return v_const(nr_cv_dtype(d->dt, 0));
    if (!strcmp(name, "shape") || !strcmp(name, "strides")) {
        Val t = nr_sm_tuple(s, r);
        for (int i = 0; i < r; i++) t.tup.v[i] = desc.tup.v[(name[1] == 'h' ? 1 : 1 + r) + i];
        return t;
    }
    if (!strcmp(name, "block_type")) {
        int32_t sh[NR_MAX_RANK];
        for (int i = 0; i < r; i++) sh[i] = (int32_t)d->block[i];
        Val v;
        v.k = V_TYPE;
        v.type = nr_type_block(s->m, nr_type_scalar(s->m, d->dt), r, sh);
        return v;
    }
    nr_sm_fail(s, loc, "a tensor descriptor has no attribute '%s'", name);
}

/* --- tl functions ------------------------------------------------------------------------------------- */
static Val seq_arg(Sema *s, const SmCall *c, int i, const char *what) {
    Val v = c->arg[i];
    if (v.k != V_TUPLE || v.tup.desc)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a list or tuple, got %s", what, BN(c), nr_sm_val_kind(s, v));
    return v;
}

static Val h_make(Sema *s, const SmCall *c) {
    Val base = c->arg[0];
    if (base.k != V_IR || nr_sm_type(s, base.ir)->rank != 0 || nr_sm_type(s, base.ir)->ptr != 1)
        nr_sm_fail(s, c->argloc[0], "'base' of %s must be a pointer to a number (a scalar), got %s", BN(c),
                   nr_sm_val_kind(s, base));
    Val shape = seq_arg(s, c, 1, "shape"), strides = seq_arg(s, c, 2, "strides"), block = seq_arg(s, c, 3, "block_shape");
    int r = shape.tup.n;
    if (r < 1 || r > 5) nr_sm_fail(s, c->argloc[1], "%s: expected 1 to 5 dimensions, got %d", BN(c), r);
    if (strides.tup.n != r) nr_sm_fail(s, c->argloc[2], "%s: expected %d strides, got %d", BN(c), r, strides.tup.n);
    if (block.tup.n != r)
        nr_sm_fail(s, c->argloc[3], "%s: expected block_shape to have %d dimensions, got %d", BN(c), r, block.tup.n);
    SmDesc *d = nr_alloc(s->a, sizeof *d);
    memset(d, 0, sizeof *d);
    d->dt = (NrDtype)nr_sm_type(s, base.ir)->dtype;
    d->rank = r;
    for (int i = 0; i < r; i++) {
        Val b = block.tup.v[i];
        if (b.k != V_CONST || b.c.kind != NR_CV_INT || b.c.i < 1 || b.c.i > (1 << 20) || (b.c.i & (b.c.i - 1)))
            nr_sm_fail(s, c->argloc[3], "%s: block dimension %d must be a constexpr power of two, got %s", BN(c), i,
                       nr_sm_val_kind(s, b));
        d->block[i] = b.c.i;
    }
    int es = nr_dt_bits(d->dt) / 8;
    if (d->block[r - 1] * es < 16)
        nr_sm_fail(s, c->argloc[3],
                   "%s: the block must have at least 16 bytes in the last dimension, got %lld * %d = %lld bytes", BN(c),
                   (long long)d->block[r - 1], es, (long long)(d->block[r - 1] * es));
    Val last = strides.tup.v[r - 1];
    if (!(last.k == V_CONST && (last.c.kind == NR_CV_INT || last.c.kind == NR_CV_BOOL) &&
          (last.c.kind == NR_CV_BOOL ? last.c.b : last.c.i) == 1))
        nr_sm_fail(s, c->argloc[2], "%s: the last stride must be the constant 1 (rows are contiguous), got %s", BN(c),
                   nr_sm_val_kind(s, last));
    const char *pad = c->arg[4].k == V_CONST && c->arg[4].c.kind == NR_CV_STR ? c->arg[4].c.str.s : NULL;
    if (!pad || (strcmp(pad, "zero") && strcmp(pad, "nan")))
        nr_sm_fail(s, c->argloc[4], "%s: padding_option must be 'zero' or 'nan'", BN(c));
    d->nan_pad = pad[0] == 'n';
    if (d->nan_pad && !nr_dt_is_float(d->dt))
        nr_sm_fail(s, c->argloc[4], "%s: padding 'nan' needs a floating-point tensor", BN(c));
    Val sh[5], st[5];
    for (int i = 0; i < r; i++) {
        sh[i] = as_i32(s, c->argloc[1], shape.tup.v[i], nr_sprintf(s->a, "dimension %d of the shape", i));
        Val v = strides.tup.v[i];
        if (v.k == V_IR) {
            if (nr_sm_type(s, v.ir)->rank != 0 || nr_sm_type(s, v.ir)->ptr || !nr_dt_is_int((NrDtype)nr_sm_type(s, v.ir)->dtype))
                nr_sm_fail(s, c->argloc[2], "stride %d of %s must be an integer scalar, got %s", i, BN(c),
                           nr_sm_val_kind(s, v));
            v = v_ir(nr_sm_cast(s, c->loc, v.ir, NR_DT_I64, 0, NULL));
        } else if (v.k != V_CONST || (v.c.kind != NR_CV_INT && v.c.kind != NR_CV_BOOL)) {
            nr_sm_fail(s, c->argloc[2], "stride %d of %s must be an integer, got %s", i, BN(c), nr_sm_val_kind(s, v));
        }
        st[i] = v;
    }
    return nr_sm_desc_new(s, c->loc, d, base, sh, st);
}

static Val desc_arg(Sema *s, const SmCall *c) {
    if (!desc_of(c->arg[0]))
        nr_sm_fail(s, c->argloc[0], "'desc' of %s must be a tensor descriptor, got %s", BN(c),
                   nr_sm_val_kind(s, c->arg[0]));
    return c->arg[0];
}

static Val h_load_desc(Sema *s, const SmCall *c) { return desc_load(s, c->loc, desc_arg(s, c), c->arg[1], BN(c)); }
static Val h_store_desc(Sema *s, const SmCall *c) {
    return desc_store(s, c->loc, desc_arg(s, c), c->arg[1], c->arg[2], BN(c));
}

static const Builtin functions[] = {
    {"make_tensor_descriptor", SM_IN_TL, "base, shape, strides, block_shape, padding_option='zero'", h_make, 0, NULL},
    {"load_tensor_descriptor", SM_IN_TL, "desc, offsets", h_load_desc, 0, NULL},
    {"store_tensor_descriptor", SM_IN_TL, "desc, offsets, value", h_store_desc, 0, NULL},
};

const Builtin *nr_sm_find_desc_builtin(const char *name) {
    for (size_t i = 0; i < NR_COUNTOF(functions); i++)
        if (strcmp(functions[i].name, name) == 0) return &functions[i];
    return NULL;
}
