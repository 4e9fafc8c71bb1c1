/* test_ptx_kernels.h - kernels emitted and assembled (part of test_ptx.c). */

/* Interns layouts 1..n for a kernel whose text names #L1..#Ln: the default
 * blocked layout of each shape (shapes[i], rank ranks[i]). */
static void lay_defaults(Kern *k, int n, const int32_t (*shapes)[NR_MAX_RANK], const int *ranks) {
    for (int i = 0; i < n; i++) {
        int32_t id = nr_layout_default_blocked(k->m, ranks[i], shapes[i], k->m->num_warps);
        CHECK(id == i + 1, "layout id %d, expected %d (shapes must differ)", id, i + 1);
    }
}

/* An elementwise kernel of every op and dtype, 1-D, default layout. */
static void kern_elementwise(void) {
    static const struct {
        const char *name;
        int nin;
        bool ints, floats;
        const char *attrs;
    } ops[] = {
        {"add", 2, true, true, ""},   {"sub", 2, true, true, ""},    {"mul", 2, true, true, ""},
        {"div", 2, true, true, ""},   {"div_rn", 2, false, true, ""}, {"rem", 2, true, false, ""},
        {"and", 2, true, false, ""},  {"or", 2, true, false, ""},    {"xor", 2, true, false, ""},
        {"shl", 2, true, false, ""},  {"shr", 2, true, false, ""},   {"max", 2, true, true, ""},
        {"min", 2, true, true, "nan = \"all\""}, {"umulhi", 2, true, false, ""}, {"neg", 1, true, true, ""},
        {"abs", 1, true, true, ""},   {"fma", 3, false, true, ""},   {"exp", 1, false, true, ""},
        {"exp2", 1, false, true, ""}, {"log", 1, false, true, ""},   {"log2", 1, false, true, ""},
        {"sqrt", 1, false, true, ""}, {"sqrt_rn", 1, false, true, ""}, {"rsqrt", 1, false, true, ""},
        {"floor", 1, false, true, ""}, {"ceil", 1, false, true, ""}, {"max", 2, false, true, "nan = \"all\""},
    };
    for (size_t d = 0; d < NR_COUNTOF(all_dts); d++) {
        NrDtype dt = all_dts[d];
        bool flt = nr_dt_is_float(dt);
        Txt t = {0};
        int n = 256, nw = 4;
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}, %%o: ptr<%s> {divisibility = 16}) kernel {\n",
           dn(dt), dn(dt));
        tx(&t, "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n", n, n);
        tx(&t, "    %%pa = splat %%a : tensor<%dxptr<%s>, #L1>\n", n, dn(dt));
        tx(&t, "    %%qa = addptr %%pa, %%i : tensor<%dxptr<%s>, #L1>\n", n, dn(dt));
        tx(&t, "    %%x = load %%qa, _, _ : tensor<%dx%s, #L1>\n", n, dn(dt));
        tx(&t, "    %%po = splat %%o : tensor<%dxptr<%s>, #L1>\n", n, dn(dt));
        tx(&t, "    %%qo = addptr %%po, %%i : tensor<%dxptr<%s>, #L1>\n", n, dn(dt));
        int id = 0;
        for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
            if (flt ? !ops[i].floats : !ops[i].ints) continue;
            if (dt == NR_DT_I1 && (strcmp(ops[i].name, "neg") == 0 || strcmp(ops[i].name, "abs") == 0)) continue;
            tx(&t, "    %%r%d = %s %%x", id, ops[i].name);
            for (int j = 1; j < ops[i].nin; j++) tx(&t, ", %%x");
            if (*ops[i].attrs && flt) tx(&t, " {%s}", ops[i].attrs);
            tx(&t, " : tensor<%dx%s, #L1>\n", n, dn(dt));
            tx(&t, "    store %%qo, %%r%d, _\n", id++);
        }
        static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        for (int pr = 0; pr < 6; pr++) {
            tx(&t, "    %%c%d = cmp %%x, %%r0 {pred = \"%s\"} : tensor<%dxi1, #L1>\n", pr, preds[pr], n);
            tx(&t, "    %%s%d = select %%c%d, %%x, %%r0 : tensor<%dx%s, #L1>\n", pr, pr, n, dn(dt));
            tx(&t, "    store %%qo, %%s%d, %%c%d\n", pr, pr);
        }
        tx(&t, "    return\n  }\n}\n");
        Kern k;
        if (kern_parse(&k, t.s, nw)) {
            int32_t shapes[1][NR_MAX_RANK] = {{n}};
            int ranks[1] = {1};
            lay_defaults(&k, 1, shapes, ranks);
            char what[64];
            snprintf(what, sizeof what, "elementwise_%s", dn(dt));
            emit_check(&k, what, true);
        }
        kern_free(&k);
        free(t.s);
    }
}

/* Every cast pair, both roundings. */
static void kern_casts(void) {
    for (size_t a = 0; a < NR_COUNTOF(all_dts); a++) {
        NrDtype from = all_dts[a];
        Txt t = {0};
        int n = 128;
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}", dn(from));
        for (size_t b = 0; b < NR_COUNTOF(all_dts); b++) tx(&t, ", %%o%zu: ptr<%s>", b, dn(all_dts[b]));
        tx(&t, ") kernel {\n");
        tx(&t, "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n", n, n);
        tx(&t, "    %%pa = splat %%a : tensor<%dxptr<%s>, #L1>\n", n, dn(from));
        tx(&t, "    %%qa = addptr %%pa, %%i : tensor<%dxptr<%s>, #L1>\n", n, dn(from));
        tx(&t, "    %%x = load %%qa, _, _ : tensor<%dx%s, #L1>\n", n, dn(from));
        for (size_t b = 0; b < NR_COUNTOF(all_dts); b++) {
            NrDtype to = all_dts[b];
            const char *tn = dn(to);
            tx(&t, "    %%p%zu = splat %%o%zu : tensor<%dxptr<%s>, #L1>\n", b, b, n, tn);
            tx(&t, "    %%q%zu = addptr %%p%zu, %%i : tensor<%dxptr<%s>, #L1>\n", b, b, n, tn);
            tx(&t, "    %%c%zu = cast %%x : tensor<%dx%s, #L1>\n", b, n, tn);
            tx(&t, "    store %%q%zu, %%c%zu, _\n", b, b);
            if (nr_dt_is_float(to)) {
                tx(&t, "    %%z%zu = cast %%x {rounding = \"rtz\"} : tensor<%dx%s, #L1>\n", b, n, tn);
                tx(&t, "    store %%q%zu, %%z%zu, _\n", b, b);
            }
            if (nr_dtype_info[to].bits == nr_dtype_info[from].bits && to != NR_DT_I1 && from != NR_DT_I1) {
                tx(&t, "    %%b%zu = bitcast %%x : tensor<%dx%s, #L1>\n", b, n, tn);
                tx(&t, "    store %%q%zu, %%b%zu, _\n", b, b);
            }
        }
        tx(&t, "    return\n  }\n}\n");
        Kern k;
        if (kern_parse(&k, t.s, 4)) {
            int32_t shapes[1][NR_MAX_RANK] = {{n}};
            int ranks[1] = {1};
            lay_defaults(&k, 1, shapes, ranks);
            char what[64];
            snprintf(what, sizeof what, "casts_from_%s", dn(from));
            emit_check(&k, what, true);
        }
        kern_free(&k);
        free(t.s);
    }
}

/* Vector add with masks, for each num_warps and a few block sizes, with
 * the default layout and with 4 elements per thread. */
static void kern_vadd(void) {
    static const int sizes[] = {16, 32, 64, 128, 1024, 4096};
    for (int nw = 1; nw <= 16; nw *= 2)
        for (size_t si = 0; si < NR_COUNTOF(sizes); si++)
            for (int spt = 1; spt <= 4; spt *= 4) {
                int n = sizes[si];
                Txt t = {0};
                tx(&t,
                   "module {\n  func @vadd(%%x: ptr<f32> {divisibility = 16}, %%y: ptr<f32> {divisibility = 16}, "
                   "%%out: ptr<f32> {divisibility = 16}, %%n: i32 {divisibility = 16}) kernel {\n"
                   "    %%pid = program_id {axis = 0} : i32\n"
                   "    %%bs = const {value = %d} : i32\n"
                   "    %%start = mul %%pid, %%bs : i32\n"
                   "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n"
                   "    %%s = splat %%start : tensor<%dxi32, #L1>\n"
                   "    %%offs = add %%s, %%i : tensor<%dxi32, #L1>\n"
                   "    %%ns = splat %%n : tensor<%dxi32, #L1>\n"
                   "    %%m = cmp %%offs, %%ns {pred = \"lt\"} : tensor<%dxi1, #L1>\n"
                   "    %%px = splat %%x : tensor<%dxptr<f32>, #L1>\n"
                   "    %%qx = addptr %%px, %%offs : tensor<%dxptr<f32>, #L1>\n"
                   "    %%a = load %%qx, %%m, _ : tensor<%dxf32, #L1>\n"
                   "    %%py = splat %%y : tensor<%dxptr<f32>, #L1>\n"
                   "    %%qy = addptr %%py, %%offs : tensor<%dxptr<f32>, #L1>\n"
                   "    %%b = load %%qy, %%m, _ : tensor<%dxf32, #L1>\n"
                   "    %%c = add %%a, %%b : tensor<%dxf32, #L1>\n"
                   "    %%po = splat %%out : tensor<%dxptr<f32>, #L1>\n"
                   "    %%qo = addptr %%po, %%offs : tensor<%dxptr<f32>, #L1>\n"
                   "    store %%qo, %%c, %%m\n"
                   "    return\n  }\n}\n",
                   n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n);
                Kern k;
                if (kern_parse(&k, t.s, nw)) {
                    int32_t id;
                    if (spt == 1) {
                        int32_t sh[1] = {n};
                        id = nr_layout_default_blocked(k.m, 1, sh, nw);
                    } else {
                        int s1[1] = {spt}, t1[1] = {32}, w1[1] = {nw}, o1[1] = {0};
                        id = mk_blocked(k.m, 1, s1, t1, w1, o1);
                    }
                    CHECK(id == 1, "layout id");
                    char what[64];
                    snprintf(what, sizeof what, "vadd_n%d_w%d_spt%d", n, nw, spt);
                    char *ptx = emit_check(&k, what, true);
                    if (ptx && spt == 4 && n >= 4 * 32 * nw)
                        CHECK(count_of(ptx, "ld.global.v4.b32") == 2 * (n / (128 * nw)) &&
                                  count_of(ptx, "st.global.v4.b32") == n / (128 * nw),
                              "%s: expected v4 loads and stores:\n%s", what, ptx);
                    if (ptx && spt == 1) CHECK(!strstr(ptx, ".v4"), "%s: no vectors with one element per thread", what);
                    if (ptx && n < 32 * nw) /* replicated: only owners store */
                        CHECK(strstr(ptx, "@%p") != NULL, "%s: predicated stores", what);
                }
                kern_free(&k);
                free(t.s);
            }
}

/* --- layouts by description -------------------------------------------------------------------------- */
typedef struct LaySpec {
    char kind;                 /* 'd' default blocked, 'b' blocked, 's' slice, 't' 2-D blocked parent transposed,
                                  'o' dot operand dim of parent (its width from nr_gpu_k_width for dtype spt[0]) */
    int rank;
    int32_t shape[NR_MAX_RANK]; /* 'd' */
    int spt[NR_MAX_RANK], tpw[NR_MAX_RANK], wpc[NR_MAX_RANK], order[NR_MAX_RANK];
    int parent, dim;           /* 's': parent layout number (1-based) */
} LaySpec;

static int32_t lay_one(NrModule *m, const LaySpec *L, const int32_t *ids) {
    if (L->kind == 'd') return nr_layout_default_blocked(m, L->rank, L->shape, m->num_warps);
    if (L->kind == 'b') return mk_blocked(m, L->rank, L->spt, L->tpw, L->wpc, L->order);
    if (L->kind == 't') {
        NrLayout l = *nr_layout(m, ids[L->parent - 1]);
        int32_t spt[2] = {l.size_per_thread[1], l.size_per_thread[0]}, tpw[2] = {l.threads_per_warp[1], l.threads_per_warp[0]},
                wpc[2] = {l.warps_per_cta[1], l.warps_per_cta[0]}, order[2] = {1 - l.order[0], 1 - l.order[1]};
        return shim_blocked(m, 2, spt, tpw, wpc, order);
    }
    if (L->kind == 'o') return nr_layout_dot_op(m, ids[L->parent - 1], L->dim, nr_gpu_k_width(m, ids[L->parent - 1], (NrDtype)L->spt[0]));
    return nr_layout_slice(m, ids[L->parent - 1], L->dim);
}

/* Parses, lays out, emits for sm_80 and sm_90 and assembles.  The text
 * names layouts #L1..#Ln after the specs; equal layouts share one id, so
 * the numbers are rewritten to the ids the layouts get. */
static char *kern_go(const char *what, const char *text, int nw, const LaySpec *ls, int nls) {
    int32_t ids[16];
    NrModule *tmp = nr_module_new(NULL);
    tmp->num_warps = nw;
    for (int i = 0; i < nls && i < 16; i++) ids[i] = lay_one(tmp, &ls[i], ids);
    nr_module_free(tmp);
    Txt t = {0};
    for (const char *c = text; *c;) {
        if (c[0] == '#' && c[1] == 'L' && c[2] >= '0' && c[2] <= '9') {
            int k = (int)strtol(c + 2, (char **)&c, 10);
            tx(&t, "#L%d", k >= 1 && k <= nls ? ids[k - 1] : k);
            continue;
        }
        tx(&t, "%c", *c++);
    }
    Kern k;
    char *ptx = NULL;
    if (kern_parse(&k, t.s, nw)) {
        int32_t got[16];
        for (int i = 0; i < nls && i < 16; i++) {
            got[i] = lay_one(k.m, &ls[i], got);
            CHECK(got[i] == ids[i], "%s: layout %d got id %d, expected %d", what, i + 1, got[i], ids[i]);
        }
        char *p = emit_check(&k, what, true);
        if (p) ptx = strdup(p);
    }
    kern_free(&k);
    free(t.s);
    return ptx;
}

static LaySpec lay_d1(int n) { return (LaySpec){'d', 1, {n}, {0}, {0}, {0}, {0}, 0, 0}; }
static LaySpec lay_d2(int m, int n) { return (LaySpec){'d', 2, {m, n}, {0}, {0}, {0}, {0}, 0, 0}; }
static LaySpec lay_b2(int s0, int s1, int t0, int t1, int w0, int w1, int o0, int o1) {
    return (LaySpec){'b', 2, {0}, {s0, s1}, {t0, t1}, {w0, w1}, {o0, o1}, 0, 0};
}
static LaySpec lay_s(int parent, int dim) { return (LaySpec){'s', 0, {0}, {0}, {0}, {0}, {0}, parent, dim}; }

/* The head of a 2-D kernel: %x loaded as MxN of dt with layout #L1 from
 * pointer %a (row-major), %o an output pointer. */
static void head2(Txt *t, const char *dt, int M, int N, int lay) {
    tx(t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}, %%o: ptr<%s> {divisibility = 16}, %%oi: ptr<i32>, %%n: i32) kernel {\n", dt, dt);
    tx(t, "    %%r = arange {end = %d, start = 0} : tensor<%dxi32, #L%d>\n", M, M, lay + 1);
    tx(t, "    %%c = arange {end = %d, start = 0} : tensor<%dxi32, #L%d>\n", N, N, lay + 2);
    tx(t, "    %%r2 = expand_dims %%r {axis = 1} : tensor<%dx1xi32, #L%d>\n", M, lay);
    tx(t, "    %%c2 = expand_dims %%c {axis = 0} : tensor<1x%dxi32, #L%d>\n", N, lay);
    tx(t, "    %%ns = const {value = %d} : tensor<%dx1xi32, #L%d>\n", N, M, lay);
    tx(t, "    %%rs = mul %%r2, %%ns : tensor<%dx1xi32, #L%d>\n", M, lay);
    tx(t, "    %%rb = broadcast %%rs : tensor<%dx%dxi32, #L%d>\n", M, N, lay);
    tx(t, "    %%cb = broadcast %%c2 : tensor<%dx%dxi32, #L%d>\n", M, N, lay);
    tx(t, "    %%off = add %%rb, %%cb : tensor<%dx%dxi32, #L%d>\n", M, N, lay);
    tx(t, "    %%pa = splat %%a : tensor<%dx%dxptr<%s>, #L%d>\n", M, N, dt, lay);
    tx(t, "    %%qa = addptr %%pa, %%off : tensor<%dx%dxptr<%s>, #L%d>\n", M, N, dt, lay);
    tx(t, "    %%x = load %%qa, _, _ : tensor<%dx%dx%s, #L%d>\n", M, N, dt, lay);
}

/* Reductions along each axis, every kind, with the result in the slice
 * layout (registers and shuffles) and in a blocked layout of its own
 * (shared memory), for several warp counts and shapes. */
static void kern_reductions(void) {
    static const struct {
        const char *dt;
        bool flt;
    } dts[] = {{"f32", true}, {"f16", true}, {"bf16", true}, {"f64", true}, {"f8e4nv", true}, {"i32", false},
               {"u8", false}, {"i64", false}, {"i1", false}, {"u16", false}};
    static const int shapes[][2] = {{32, 32}, {16, 64}, {64, 8}, {4, 4}, {128, 16}};
    for (int nw = 1; nw <= 8; nw *= 2)
        for (size_t si = 0; si < NR_COUNTOF(shapes); si++)
            for (size_t di = 0; di < NR_COUNTOF(dts); di++) {
                if (nw != 4 && di > 1) continue; /* every dtype at 4 warps, two at the others */
                int M = shapes[si][0], N = shapes[si][1];
                for (int axis = 0; axis < 2; axis++) {
                    int R = axis ? M : N; /* result length */
                    Txt t = {0};
                    /* #L1: the 2-D layout; #L2, #L3: its slices (dims 1, 0); #L4: blocked 1-D of length R */
                    head2(&t, dts[di].dt, M, N, 1);
                    const char *kinds[] = {"add", "max", "min", "xor", "and", "or"};
                    int nk = dts[di].flt ? 3 : 6;
                    int sl = axis ? 2 : 3;
                    tx(&t, "    %%idx = arange {end = %d, start = 0} : tensor<%dxi32, #L%d>\n", R, R, sl);
                    tx(&t, "    %%po = splat %%o : tensor<%dxptr<%s>, #L%d>\n", R, dts[di].dt, sl);
                    tx(&t, "    %%qo = addptr %%po, %%idx : tensor<%dxptr<%s>, #L%d>\n", R, dts[di].dt, sl);
                    tx(&t, "    %%idx4 = arange {end = %d, start = 0} : tensor<%dxi32, #L4>\n", R, R);
                    tx(&t, "    %%po4 = splat %%o : tensor<%dxptr<%s>, #L4>\n", R, dts[di].dt);
                    tx(&t, "    %%qo4 = addptr %%po4, %%idx4 : tensor<%dxptr<%s>, #L4>\n", R, dts[di].dt);
                    for (int ki = 0; ki < nk; ki++) {
                        tx(&t, "    %%s%d = reduce %%x {axis = %d, kind = \"%s\"} : tensor<%dx%s, #L%d>\n", ki, axis,
                           kinds[ki], R, dts[di].dt, sl);
                        tx(&t, "    store %%qo, %%s%d, _\n", ki);
                        tx(&t, "    %%t%d = convert_layout %%s%d : tensor<%dx%s, #L4>\n", ki, ki, R, dts[di].dt);
                        tx(&t, "    store %%qo4, %%t%d, _\n", ki);
                    }
                    if (strcmp(dts[di].dt, "i1") != 0) {
                        tx(&t, "    %%av, %%ai = argreduce %%x {axis = %d, kind = \"max\"} : tensor<%dx%s, #L%d>, tensor<%dxi32, #L%d>\n",
                           axis, R, dts[di].dt, sl, R, sl);
                        tx(&t, "    store %%qo, %%av, _\n");
                        tx(&t, "    %%bv, %%bi = argreduce %%x {axis = %d, kind = \"min\", nan = \"all\"} : tensor<%dx%s, #L%d>, tensor<%dxi32, #L%d>\n",
                           axis, R, dts[di].dt, sl, R, sl);
                        tx(&t, "    %%bw = convert_layout %%bv : tensor<%dx%s, #L4>\n", R, dts[di].dt);
                        tx(&t, "    store %%qo4, %%bw, _\n");
                    }
                    /* a whole-block reduction to a scalar */
                    tx(&t, "    %%w = reduce %%s0 {axis = 0, kind = \"%s\"} : %s\n", dts[di].flt ? "max" : "add", dts[di].dt);
                    tx(&t, "    store %%o, %%w, _\n    return\n  }\n}\n");
                    LaySpec ls[4] = {lay_d2(M, N), lay_s(1, 1), lay_s(1, 0), lay_d1(R)};
                    char what[96];
                    snprintf(what, sizeof what, "reduce_%s_%dx%d_axis%d_w%d", dts[di].dt, M, N, axis, nw);
                    char *ptx = kern_go(what, t.s, nw, ls, 4);
                    if (ptx && M >= 32 && N >= 32 && axis == 1)
                        CHECK(strstr(ptx, "shfl.sync.bfly") != NULL, "%s: lane reduction by shuffles", what);
                    free(ptx);
                    free(t.s);
                }
            }
}

/* Shape ops and conversions: expand_dims, broadcast, trans, reshape,
 * between layouts that agree (no data movement) and that do not. */
static void kern_shapes(void) {
    for (int nw = 1; nw <= 16; nw *= 4) {
        int M = 32, N = 64;
        Txt t = {0};
        head2(&t, "f32", M, N, 1);
        /* trans to [N, M] in the same blocked layout (#L1) and in a transposed one (#L4) */
        tx(&t, "    %%tp = trans %%x {order = [1, 0]} : tensor<%dx%dxf32, #L7>\n", N, M);
        tx(&t, "    %%tr = convert_layout %%tp : tensor<%dx%dxf32, #L1>\n", N, M);
        tx(&t, "    %%tr2 = convert_layout %%tp : tensor<%dx%dxf32, #L4>\n", N, M);
        tx(&t, "    %%f1 = reshape %%x : tensor<%dxf32, #L5>\n", M * N);
        tx(&t, "    %%f2 = reshape %%x {can_reorder = true} : tensor<%dxf32, #L5>\n", M * N);
        tx(&t, "    %%i6 = arange {end = %d, start = 0} : tensor<%dxi32, #L5>\n", M * N, M * N);
        tx(&t, "    %%p6 = splat %%o : tensor<%dxptr<f32>, #L5>\n", M * N);
        tx(&t, "    %%q6 = addptr %%p6, %%i6 : tensor<%dxptr<f32>, #L5>\n", M * N);
        tx(&t, "    store %%q6, %%f1, _\n    store %%q6, %%f2, _\n");
        tx(&t, "    %%b1 = reshape %%tr : tensor<%dxf32, #L5>\n    store %%q6, %%b1, _\n", M * N);
        tx(&t, "    %%b2 = reshape %%tr2 : tensor<%dxf32, #L5>\n    store %%q6, %%b2, _\n", M * N);
        /* a row reduced, expanded back and broadcast (softmax's pattern) */
        tx(&t, "    %%mx = reduce %%x {axis = 1, kind = \"max\"} : tensor<%dxf32, #L2>\n", M);
        tx(&t, "    %%me = expand_dims %%mx {axis = 1} : tensor<%dx1xf32, #L1>\n", M);
        tx(&t, "    %%mb = broadcast %%me : tensor<%dx%dxf32, #L1>\n", M, N);
        tx(&t, "    %%d = sub %%x, %%mb : tensor<%dx%dxf32, #L1>\n", M, N);
        tx(&t, "    %%e = exp %%d : tensor<%dx%dxf32, #L1>\n", M, N);
        tx(&t, "    %%pa2 = splat %%o : tensor<%dx%dxptr<f32>, #L1>\n", M, N);
        tx(&t, "    %%qa2 = addptr %%pa2, %%off : tensor<%dx%dxptr<f32>, #L1>\n", M, N);
        tx(&t, "    store %%qa2, %%e, _\n");
        /* the same in a layout the reduction does not produce (shared memory) */
        tx(&t, "    %%mx6 = convert_layout %%mx : tensor<%dxf32, #L6>\n", M);
        tx(&t, "    %%mx7 = convert_layout %%mx6 : tensor<%dxf32, #L2>\n", M);
        tx(&t, "    %%me7 = expand_dims %%mx7 {axis = 1} : tensor<%dx1xf32, #L1>\n", M);
        tx(&t, "    %%mb7 = broadcast %%me7 : tensor<%dx%dxf32, #L1>\n", M, N);
        tx(&t, "    store %%qa2, %%mb7, _\n    return\n  }\n}\n");
        LaySpec ls[7] = {lay_d2(M, N), lay_s(1, 1), lay_s(1, 0), lay_b2(1, 1, 1, 32, nw, 1, 0, 1), lay_d1(M * N),
                         {'b', 1, {0}, {2}, {32}, {nw}, {0}, 0, 0}, {'t', 2, {0}, {0}, {0}, {0}, {0}, 1, 0}};
        char what[64];
        snprintf(what, sizeof what, "shapes_w%d", nw);
        char *ptx = kern_go(what, t.s, nw, ls, 7);
        if (ptx) CHECK(strstr(ptx, "bar.sync") != NULL && strstr(ptx, "st.shared") != NULL, "%s: conversions through shared memory", what);
        free(ptx);
        free(t.s);
    }
    /* A layout change within warps: shuffles, no shared memory.  [32] over
     * one warp: lane-major (#L1) to a layout with the lane bits permuted (#L2). */
    {
        Txt t = {0};
        tx(&t, "module {\n  func @k(%%a: ptr<f32> {divisibility = 16}, %%o: ptr<f32> {divisibility = 16}) kernel {\n");
        tx(&t, "    %%i = arange {end = 32, start = 0} : tensor<32xi32, #L1>\n");
        tx(&t, "    %%p = splat %%a : tensor<32xptr<f32>, #L1>\n");
        tx(&t, "    %%q = addptr %%p, %%i : tensor<32xptr<f32>, #L1>\n");
        tx(&t, "    %%x = load %%q, _, _ : tensor<32xf32, #L1>\n");
        tx(&t, "    %%x2 = reshape %%x : tensor<4x8xf32, #L2>\n");
        tx(&t, "    %%yt = trans %%x2 {order = [1, 0]} : tensor<8x4xf32, #L4>\n");
        tx(&t, "    %%y = convert_layout %%yt : tensor<8x4xf32, #L3>\n");
        tx(&t, "    %%y1 = reshape %%y : tensor<32xf32, #L1>\n");
        tx(&t, "    %%po = splat %%o : tensor<32xptr<f32>, #L1>\n");
        tx(&t, "    %%qo = addptr %%po, %%i : tensor<32xptr<f32>, #L1>\n");
        tx(&t, "    store %%qo, %%y1, _\n    return\n  }\n}\n");
        LaySpec ls[4] = {lay_d1(32), lay_b2(1, 1, 4, 8, 1, 1, 1, 0), lay_b2(1, 1, 8, 4, 1, 1, 1, 0),
                         {'t', 2, {0}, {0}, {0}, {0}, {0}, 2, 0}};
        char *ptx = kern_go("shuffle_transpose", t.s, 1, ls, 4);
        if (ptx) CHECK(strstr(ptx, "shfl.sync.idx") != NULL && !strstr(ptx, "st.shared"), "transpose in a warp by shuffles:\n%s", ptx);
        free(ptx);
        free(t.s);
    }
}

/* for, while, if (with results), nested, early return. */
static void kern_control(void) {
    static const char *const text =
        "module {\n"
        "  func @k(%a: ptr<f32> {divisibility = 16}, %o: ptr<f32> {divisibility = 16}, %n: i32, %m: i64, %u: u32) kernel {\n"
        "    %i = arange {end = 256, start = 0} : tensor<256xi32, #L1>\n"
        "    %pa = splat %a : tensor<256xptr<f32>, #L1>\n"
        "    %zero = const {value = 0.0} : tensor<256xf32, #L1>\n"
        "    %c0 = const {value = 0} : i32\n"
        "    %c1 = const {value = 1} : i32\n"
        "    %c256 = const {value = 256} : i32\n"
        "    %acc, %cnt = for %c0, %n, %c256, %zero, %c0 : tensor<256xf32, #L1>, i32 {\n"
        "    ^(%k: i32, %s: tensor<256xf32, #L1>, %j: i32):\n"
        "      %ks = splat %k : tensor<256xi32, #L1>\n"
        "      %off = add %ks, %i : tensor<256xi32, #L1>\n"
        "      %ns = splat %n : tensor<256xi32, #L1>\n"
        "      %msk = cmp %off, %ns {pred = \"lt\"} : tensor<256xi1, #L1>\n"
        "      %q = addptr %pa, %off : tensor<256xptr<f32>, #L1>\n"
        "      %x = load %q, %msk, %zero : tensor<256xf32, #L1>\n"
        "      %s2 = add %s, %x : tensor<256xf32, #L1>\n"
        "      %j2 = add %j, %c1 : i32\n"
        "      yield %s2, %j2\n"
        "    }\n"
        "    %l0 = const {value = 0} : i64\n"
        "    %l1 = const {value = 1} : i64\n"
        "    %big = for %l0, %m, %l1, %l0 : i64 {\n"
        "    ^(%kk: i64, %t: i64):\n"
        "      %t2 = add %t, %kk : i64\n"
        "      yield %t2\n"
        "    }\n"
        "    %u0 = const {value = 0} : u32\n"
        "    %u3 = const {value = 3} : u32\n"
        "    %uu = for %u0, %u, %u3, %u0 : u32 {\n"
        "    ^(%ku: u32, %tu: u32):\n"
        "      %tu2 = xor %tu, %ku : u32\n"
        "      yield %tu2\n"
        "    }\n"
        "    %w1, %w2 = while %c0, %zero : i32, tensor<256xf32, #L1> {\n"
        "    ^(%v: i32, %acc2: tensor<256xf32, #L1>):\n"
        "      %go = cmp %v, %n {pred = \"lt\"} : i1\n"
        "      condition %go, %v, %acc2\n"
        "    } {\n"
        "    ^(%v1: i32, %acc3: tensor<256xf32, #L1>):\n"
        "      %v2 = add %v1, %c1 : i32\n"
        "      %acc4 = add %acc3, %acc : tensor<256xf32, #L1>\n"
        "      yield %v2, %acc4\n"
        "    }\n"
        "    %pos = cmp %cnt, %c0 {pred = \"gt\"} : i1\n"
        "    %sel = if %pos : tensor<256xf32, #L1> {\n"
        "      %neg = neg %w2 : tensor<256xf32, #L1>\n"
        "      yield %neg\n"
        "    } {\n"
        "      yield %acc\n"
        "    }\n"
        "    %po = splat %o : tensor<256xptr<f32>, #L1>\n"
        "    %qo = addptr %po, %i : tensor<256xptr<f32>, #L1>\n"
        "    store %qo, %sel, _\n"
        "    %bf = cast %big : f32\n"
        "    store %o, %bf, _\n"
        "    %uf = cast %uu : f32\n"
        "    store %o, %uf, _\n"
        "    return\n"
        "  }\n"
        "}\n";
    for (int nw = 1; nw <= 16; nw *= 2) {
        LaySpec ls[1] = {lay_d1(256)};
        char what[32];
        snprintf(what, sizeof what, "control_w%d", nw);
        char *ptx = kern_go(what, text, nw, ls, 1);
        if (ptx) CHECK(count_of(ptx, "bra.uni") >= 8, "%s: structured branches", what);
        free(ptx);
    }
}

/* Atomics of every kind and dtype, block (masked, replicated) and scalar. */
static void kern_atomics(void) {
    static const char *const dts[] = {"i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16", "i8", "u16", "i1", "f8e5"};
    static const char *const kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
    static const char *const sems[] = {"relaxed", "acquire", "release", "acq_rel"};
    static const char *const scopes[] = {"gpu", "cta", "sys"};
    for (size_t d = 0; d < NR_COUNTOF(dts); d++)
        for (int n = 16; n <= 256; n *= 16) {
            bool flt = dts[d][0] == 'f' || dts[d][0] == 'b';
            Txt t = {0};
            tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}, %%o: ptr<%s>, %%v: %s) kernel {\n", dts[d], dts[d], dts[d]);
            tx(&t, "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n", n, n);
            tx(&t, "    %%p = splat %%a : tensor<%dxptr<%s>, #L1>\n", n, dts[d]);
            tx(&t, "    %%q = addptr %%p, %%i : tensor<%dxptr<%s>, #L1>\n", n, dts[d]);
            tx(&t, "    %%x = load %%q, _, _ : tensor<%dx%s, #L1>\n", n, dts[d]);
            tx(&t, "    %%c8 = const {value = 8} : tensor<%dxi32, #L1>\n", n);
            tx(&t, "    %%m = cmp %%i, %%c8 {pred = \"lt\"} : tensor<%dxi1, #L1>\n", n);
            tx(&t, "    %%po = splat %%o : tensor<%dxptr<%s>, #L1>\n", n, dts[d]);
            tx(&t, "    %%qo = addptr %%po, %%i : tensor<%dxptr<%s>, #L1>\n", n, dts[d]);
            for (size_t k = 0; k < NR_COUNTOF(kinds); k++) {
                if (flt && k >= 3 && k <= 5) continue;
                tx(&t, "    %%r%zu = atomic_rmw %%q, %%x, %%m {kind = \"%s\", scope = \"%s\", sem = \"%s\"} : tensor<%dx%s, #L1>\n",
                   k, kinds[k], scopes[k % 3], sems[k % 4], n, dts[d]);
                tx(&t, "    store %%qo, %%r%zu, _\n", k);
                tx(&t, "    %%s%zu = atomic_rmw %%a, %%v, _ {kind = \"%s\"} : %s\n", k, kinds[k], dts[d]);
                tx(&t, "    store %%o, %%s%zu, _\n", k);
            }
            tx(&t, "    %%cs = atomic_cas %%q, %%x, %%r0 {sem = \"acq_rel\"} : tensor<%dx%s, #L1>\n", n, dts[d]);
            tx(&t, "    store %%qo, %%cs, _\n");
            tx(&t, "    %%ss = atomic_cas %%a, %%v, %%v : %s\n    store %%o, %%ss, _\n", dts[d]);
            tx(&t, "    return\n  }\n}\n");
            LaySpec ls[1] = {lay_d1(n)};
            char what[64];
            snprintf(what, sizeof what, "atomics_%s_n%d", dts[d], n);
            char *ptx = kern_go(what, t.s, 4, ls, 1);
            if (ptx && !strcmp(dts[d], "f32")) CHECK(strstr(ptx, "atom.acq_rel.gpu.global.add.f32") || strstr(ptx, ".add.f32"), "%s: native f32 add", what);
            free(ptx);
            free(t.s);
        }
}

/* print (no operand, scalars, blocks, several operands, hex) and assert. */
static void kern_debug(void) {
    static const char *const text =
        "module {\n"
        "  func @k(%a: ptr<f32> {divisibility = 16}, %n: i32, %h: f16, %p: ptr<i64>) kernel {\n"
        "    %i = arange {end = 64, start = 0} : tensor<64xi32, #L1>\n"
        "    %pa = splat %a : tensor<64xptr<f32>, #L1>\n"
        "    %q = addptr %pa, %i : tensor<64xptr<f32>, #L1>\n"
        "    %x = load %q, _, _ : tensor<64xf32, #L1>\n"
        "    print {prefix = \"hello 100%\"}\n"
        "    print %n {prefix = \"n = \"}\n"
        "    print %x, %i {prefix = \"x, i: \"}\n"
        "    print %h, %p {hex = true, prefix = \"bits \"}\n"
        "    %b = cmp %i, %i {pred = \"eq\"} : tensor<64xi1, #L1>\n"
        "    print %b\n"
        "    %ns = splat %n : tensor<64xi32, #L1>\n"
        "    %ok = cmp %i, %ns {pred = \"lt\"} : tensor<64xi1, #L1>\n"
        "    assert %ok {msg = \"i < n\"}\n"
        "    return\n"
        "  }\n"
        "}\n";
    LaySpec ls[1] = {lay_d1(64)};
    char *ptx = kern_go("debug", text, 4, ls, 1);
    if (ptx) CHECK(strstr(ptx, "vprintf") && strstr(ptx, "__assertfail"), "print and assert calls");
    free(ptx);
}

/* dot on FMA units: f32 (tf32 and ieee), f16 -> f32, i8 -> i32, batched. */
static void kern_dots(void) {
    static const struct {
        const char *a, *acc, *prec;
        int M, N, K, B;
    } cases[] = {{"f32", "f32", "tf32", 32, 32, 16, 0}, {"f32", "f32", "ieee", 16, 64, 32, 0},
                 {"f16", "f32", "", 64, 32, 16, 0},      {"bf16", "f32", "", 16, 16, 16, 0},
                 {"i8", "i32", "", 32, 16, 32, 0},        {"f16", "f16", "", 16, 32, 64, 0},
                 {"f8e4nv", "f32", "", 16, 16, 32, 0},    {"f32", "f32", "ieee", 16, 32, 16, 2}};
    for (size_t i = 0; i < NR_COUNTOF(cases); i++) {
        int M = cases[i].M, N = cases[i].N, K = cases[i].K, B = cases[i].B;
        int32_t shp[3][NR_MAX_RANK] = {{M, K}, {K, N}, {M, N}};
        if (B)
            for (int j = 0; j < 3; j++) shp[j][2] = shp[j][1], shp[j][1] = shp[j][0], shp[j][0] = B;
        int rank = B ? 3 : 2;
        /* one layout number per distinct shape */
        int lid[3], nls = 0;
        LaySpec ls[5];
        for (int j = 0; j < 3; j++) {
            lid[j] = 0;
            for (int q = 0; q < j; q++)
                if (!memcmp(shp[q], shp[j], sizeof shp[j])) lid[j] = lid[q];
            if (!lid[j]) {
                ls[nls] = (LaySpec){'d', rank, {0}, {0}, {0}, {0}, {0}, 0, 0};
                memcpy(ls[nls].shape, shp[j], sizeof shp[j]);
                lid[j] = ++nls;
            }
        }
        /* the operands as the dot takes them: dot_op layouts of the result's */
        NrDtype adt = !strcmp(cases[i].a, "f32") ? NR_DT_F32 : !strcmp(cases[i].a, "f16") ? NR_DT_F16
                      : !strcmp(cases[i].a, "bf16") ? NR_DT_BF16 : !strcmp(cases[i].a, "i8") ? NR_DT_I8 : NR_DT_F8E4NV;
        int opl[2];
        for (int j = 0; j < 2; j++) {
            ls[nls] = (LaySpec){'o', rank, {0}, {(int)adt}, {0}, {0}, {0}, lid[2], j};
            opl[j] = ++nls;
        }
        char st[3][32];
        for (int j = 0; j < 3; j++) {
            if (B) snprintf(st[j], sizeof st[j], "%dx%dx%d", shp[j][0], shp[j][1], shp[j][2]);
            else snprintf(st[j], sizeof st[j], "%dx%d", shp[j][0], shp[j][1]);
        }
        Txt t = {0};
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}, %%o: ptr<%s> {divisibility = 16}) kernel {\n", cases[i].a, cases[i].acc);
        tx(&t, "    %%pa = splat %%a : tensor<%sxptr<%s>, #L%d>\n", st[0], cases[i].a, lid[0]);
        tx(&t, "    %%x = load %%pa, _, _ : tensor<%sx%s, #L%d>\n", st[0], cases[i].a, lid[0]);
        tx(&t, "    %%pb = splat %%a : tensor<%sxptr<%s>, #L%d>\n", st[1], cases[i].a, lid[1]);
        tx(&t, "    %%y = load %%pb, _, _ : tensor<%sx%s, #L%d>\n", st[1], cases[i].a, lid[1]);
        tx(&t, "    %%z = const {value = %s} : tensor<%sx%s, #L%d>\n", cases[i].acc[0] == 'f' ? "0.0" : "0", st[2], cases[i].acc, lid[2]);
        tx(&t, "    %%xo = convert_layout %%x : tensor<%sx%s, #L%d>\n", st[0], cases[i].a, opl[0]);
        tx(&t, "    %%yo = convert_layout %%y : tensor<%sx%s, #L%d>\n", st[1], cases[i].a, opl[1]);
        if (*cases[i].prec)
            tx(&t, "    %%d = dot %%xo, %%yo, %%z {input_precision = \"%s\"} : tensor<%sx%s, #L%d>\n", cases[i].prec, st[2], cases[i].acc, lid[2]);
        else tx(&t, "    %%d = dot %%xo, %%yo, %%z : tensor<%sx%s, #L%d>\n", st[2], cases[i].acc, lid[2]);
        tx(&t, "    %%po = splat %%o : tensor<%sxptr<%s>, #L%d>\n", st[2], cases[i].acc, lid[2]);
        tx(&t, "    store %%po, %%d, _\n    return\n  }\n}\n");
        char what[64];
        snprintf(what, sizeof what, "dot_%s_%s_%s", cases[i].a, cases[i].acc, st[2]);
        char *ptx = kern_go(what, t.s, 4, ls, nls);
        if (ptx && !strcmp(cases[i].prec, "tf32")) CHECK(strstr(ptx, "cvt.rna.tf32.f32") != NULL, "%s: tf32 rounding", what);
        free(ptx);
        free(t.s);
    }
}

/* Loads and stores: vector widths by dtype and layout, alignment, masks
 * with other, cache modifiers, volatile, scalars, pointers to pointers. */
static void kern_memory(void) {
    static const struct {
        const char *dt;
        int spt, div;
        const char *want; /* a pattern the PTX must contain ("" none) */
        const char *reject;
    } cases[] = {
        {"f32", 4, 16, ".v4.b32", ""}, {"f32", 2, 16, ".v2.b32", ".v4."}, {"f32", 4, 4, "", ".v2."},
        {"f16", 8, 16, ".v4.b32", ""}, {"f16", 4, 16, ".v4.b16", ""}, {"i8", 16, 16, ".v4.b32", ""},
        {"i8", 4, 16, ".v4.s8", ""},   {"f64", 2, 16, ".v2.b64", ""}, {"f64", 4, 16, ".v2.b64", ""},
        {"i1", 4, 16, ".v4.u8", ""},   {"f8e5", 16, 16, ".v4.b32", ""}, {"u16", 2, 4, ".v2.u16", ""},
        {"f16", 8, 2, "", ".v2."},
    };
    for (size_t i = 0; i < NR_COUNTOF(cases); i++) {
        int n = 32 * 4 * cases[i].spt * 2;
        Txt t = {0};
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = %d}, %%o: ptr<%s> {divisibility = %d}, %%n: i32 {divisibility = 16}, %%pp: ptr<ptr<f32>>) kernel {\n",
           cases[i].dt, cases[i].div, cases[i].dt, cases[i].div);
        tx(&t, "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n", n, n);
        tx(&t, "    %%ns = splat %%n : tensor<%dxi32, #L1>\n", n);
        tx(&t, "    %%m = cmp %%i, %%ns {pred = \"lt\"} : tensor<%dxi1, #L1>\n", n);
        tx(&t, "    %%p = splat %%a : tensor<%dxptr<%s>, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%q = addptr %%p, %%i : tensor<%dxptr<%s>, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%x = load %%q, %%m, _ {cache = \".cg\"} : tensor<%dx%s, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%y = load %%q, %%m, %%x {evict = \"evict_last\"} : tensor<%dx%s, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%z = load %%q, _, _ {volatile = true} : tensor<%dx%s, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%po = splat %%o : tensor<%dxptr<%s>, #L1>\n", n, cases[i].dt);
        tx(&t, "    %%qo = addptr %%po, %%i : tensor<%dxptr<%s>, #L1>\n", n, cases[i].dt);
        tx(&t, "    store %%qo, %%x, %%m {cache = \".cs\"}\n    store %%qo, %%y, _ {evict = \"evict_first\"}\n    store %%qo, %%z, _\n");
        tx(&t, "    %%s = load %%a, _, _ : %s\n    store %%o, %%s, _\n", cases[i].dt);
        tx(&t, "    %%fp = load %%pp, _, _ : ptr<f32>\n    %%fv = load %%fp, _, _ : f32\n    store %%fp, %%fv, _\n");
        tx(&t, "    return\n  }\n}\n");
        LaySpec ls[1] = {{'b', 1, {0}, {cases[i].spt}, {32}, {4}, {0}, 0, 0}};
        char what[64];
        snprintf(what, sizeof what, "memory_%s_spt%d_div%d", cases[i].dt, cases[i].spt, cases[i].div);
        char *ptx = kern_go(what, t.s, 4, ls, 1);
        if (ptx && *cases[i].want) CHECK(strstr(ptx, cases[i].want) != NULL, "%s: expected %s", what, cases[i].want);
        if (ptx && *cases[i].reject) CHECK(strstr(ptx, cases[i].reject) == NULL, "%s: unexpected %s", what, cases[i].reject);
        if (ptx) CHECK(strstr(ptx, "ld.global.cg") && strstr(ptx, "ld.volatile.global") && strstr(ptx, "L1::evict_last") &&
                           strstr(ptx, "st.global.cs"),
                       "%s: cache operators", what);
        free(ptx);
        free(t.s);
    }
}

/* The math op family through ptxas, f32, f64 and f16. */
static void kern_math(void) {
    static const char *const dts[] = {"f32", "f64", "f16"};
    for (int d = 0; d < 3; d++) {
        Txt t = {0};
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}) kernel {\n", dts[d]);
        tx(&t, "    %%i = arange {end = 128, start = 0} : tensor<128xi32, #L1>\n");
        tx(&t, "    %%p = splat %%a : tensor<128xptr<%s>, #L1>\n", dts[d]);
        tx(&t, "    %%q = addptr %%p, %%i : tensor<128xptr<%s>, #L1>\n", dts[d]);
        tx(&t, "    %%x = load %%q, _, _ : tensor<128x%s, #L1>\n", dts[d]);
        int id = 0;
        for (int i = 0; nr_pm_names[i]; i++) {
            NrArena ea;
            nr_arena_init(&ea);
            NrPtx *p = nr_ptx_eval_new(&ea, 80);
            NrPv in[4] = {nr_pv_f32(0.5f), nr_pv_f32(0.5f), nr_pv_f32(0.5f), nr_pv_f32(0.5f)}, out;
            int nin = 1;
            while (nin <= 4 && !nr_pm_call(p, nr_pm_names[i], NR_PK_F32, nin, in, &out)) nin++;
            nr_arena_free(&ea);
            if (nin > 4) continue;
            tx(&t, "    %%m%d = math %%x", id);
            for (int j = 1; j < nin; j++) tx(&t, ", %%x");
            tx(&t, " {fn = \"%s\"} : tensor<128x%s, #L1>\n    store %%q, %%m%d, _\n", nr_pm_names[i], dts[d], id);
            id++;
        }
        for (int j = 0; j < 3; j++) {
            static const char *const ops[] = {"sin", "cos", "erf"};
            tx(&t, "    %%o%d = %s %%x : tensor<128x%s, #L1>\n    store %%q, %%o%d, _\n", j, ops[j], dts[d], j);
        }
        tx(&t, "    return\n  }\n}\n");
        LaySpec ls[1] = {lay_d1(128)};
        char what[32];
        snprintf(what, sizeof what, "math_%s", dts[d]);
        free(kern_go(what, t.s, 4, ls, 1));
        free(t.s);
    }
}

/* The whole sem x scope matrix for every kind and the dtypes Triton allows
 * (fp16 / bf16 only add), block and scalar, with their PTX forms. */
static void kern_atomic_matrix(void) {
    static const char *const dts[] = {"i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16"};
    static const char *const kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
    static const char *const sems[] = {"relaxed", "acquire", "release", "acq_rel"};
    static const char *const scopes[] = {"gpu", "cta", "sys"};
    for (size_t d = 0; d < NR_COUNTOF(dts); d++) {
        bool flt = dts[d][0] == 'f' || dts[d][0] == 'b', half = !strcmp(dts[d], "f16") || !strcmp(dts[d], "bf16");
        Txt t = {0};
        tx(&t, "module {\n  func @k(%%a: ptr<%s> {divisibility = 16}, %%o: ptr<%s>, %%v: %s) kernel {\n", dts[d], dts[d], dts[d]);
        tx(&t, "    %%i = arange {end = 128, start = 0} : tensor<128xi32, #L1>\n");
        tx(&t, "    %%p = splat %%a : tensor<128xptr<%s>, #L1>\n", dts[d]);
        tx(&t, "    %%q = addptr %%p, %%i : tensor<128xptr<%s>, #L1>\n", dts[d]);
        tx(&t, "    %%x = load %%q, _, _ : tensor<128x%s, #L1>\n", dts[d]);
        tx(&t, "    %%po = splat %%o : tensor<128xptr<%s>, #L1>\n", dts[d]);
        tx(&t, "    %%qo = addptr %%po, %%i : tensor<128xptr<%s>, #L1>\n", dts[d]);
        int id = 0;
        for (size_t k = 0; k < NR_COUNTOF(kinds) + 1; k++) {
            if (k < NR_COUNTOF(kinds) && ((flt && k >= 3 && k <= 5) || (half && k != 0))) continue;
            if (k == NR_COUNTOF(kinds) && half) continue;
            for (int sm = 0; sm < 4; sm++)
                for (int sc = 0; sc < 3; sc++, id++) {
                    if (k < NR_COUNTOF(kinds))
                        tx(&t, "    %%r%d = atomic_rmw %%q, %%x, _ {kind = \"%s\", scope = \"%s\", sem = \"%s\"} : tensor<128x%s, #L1>\n",
                           id, kinds[k], scopes[sc], sems[sm], dts[d]);
                    else
                        tx(&t, "    %%r%d = atomic_cas %%q, %%x, %%x {scope = \"%s\", sem = \"%s\"} : tensor<128x%s, #L1>\n", id,
                           scopes[sc], sems[sm], dts[d]);
                    tx(&t, "    store %%qo, %%r%d, _\n", id);
                }
        }
        tx(&t, "    return\n  }\n}\n");
        LaySpec ls[1] = {lay_d1(128)};
        char what[64];
        snprintf(what, sizeof what, "atomic_matrix_%s", dts[d]);
        char *ptx = kern_go(what, t.s, 4, ls, 1);
        if (ptx) {
            for (int sm = 0; sm < 4; sm++)
                for (int sc = 0; sc < 3; sc++) {
                    char want[64];
                    snprintf(want, sizeof want, "atom.%s.%s.global.", sems[sm], scopes[sc]);
                    CHECK(strstr(ptx, want) != NULL, "%s: no %s", what, want);
                }
            if (!strcmp(dts[d], "u32")) CHECK(strstr(ptx, "atom.release.cta.global.add.u32") != NULL, "%s: add.u32", what);
            if (!strcmp(dts[d], "i64")) CHECK(strstr(ptx, "atom.relaxed.sys.global.max.s64") != NULL, "%s: max.s64", what);
            if (!strcmp(dts[d], "f16")) CHECK(strstr(ptx, "atom.acquire.gpu.global.add.noftz.f16") != NULL, "%s: f16", what);
        }
        free(ptx);
        free(t.s);
    }
}

/* program_id / num_programs on each axis; 2-D layouts of several orders;
 * blocks smaller than a warp; an error for a block without a layout. */
static void kern_misc(void) {
    {
        static const char *const text =
            "module {\n"
            "  func @k(%o: ptr<i32> {divisibility = 16}) kernel {\n"
            "    %x = program_id {axis = 0} : i32\n    %y = program_id {axis = 1} : i32\n    %z = program_id {axis = 2} : i32\n"
            "    %nx = num_programs {axis = 0} : i32\n    %ny = num_programs {axis = 1} : i32\n    %nz = num_programs {axis = 2} : i32\n"
            "    %a = add %x, %y : i32\n    %b = add %z, %nx : i32\n    %c = mul %ny, %nz : i32\n    %d = add %a, %b : i32\n    %e = add %d, %c : i32\n"
            "    store %o, %e, _\n    return\n  }\n}\n";
        free(kern_go("grid", text, 1, NULL, 0));
    }
    static const int orders[][2] = {{1, 0}, {0, 1}};
    for (int o = 0; o < 2; o++)
        for (int nw = 1; nw <= 8; nw *= 2) {
            Txt t = {0};
            head2(&t, "f16", 16, 16, 1);
            tx(&t, "    %%y = mul %%x, %%x : tensor<16x16xf16, #L1>\n");
            tx(&t, "    %%po = splat %%o : tensor<16x16xptr<f16>, #L1>\n");
            tx(&t, "    %%qo = addptr %%po, %%off : tensor<16x16xptr<f16>, #L1>\n");
            tx(&t, "    store %%qo, %%y, _\n    return\n  }\n}\n");
            LaySpec ls[3] = {lay_b2(2, 2, 4, 8, nw, 1, orders[o][0], orders[o][1]), lay_s(1, 1), lay_s(1, 0)};
            if (o == 1) ls[0] = lay_b2(2, 2, 8, 4, 1, nw, orders[o][0], orders[o][1]);
            char what[64];
            snprintf(what, sizeof what, "layout2d_o%d_w%d", o, nw);
            char *ptx = kern_go(what, t.s, nw, ls, 3);
            if (ptx) CHECK(strstr(ptx, "mul.f16x2") != NULL, "%s: packed f16x2", what);
            free(ptx);
            free(t.s);
        }
    { /* no layout: a diagnostic, not a crash */
        static const char *const text =
            "module {\n  func @k(%o: ptr<i32>) kernel {\n    %i = arange {end = 16, start = 0} : tensor<16xi32>\n"
            "    %p = splat %o : tensor<16xptr<i32>>\n    %q = addptr %p, %i : tensor<16xptr<i32>>\n    store %q, %i, _\n"
            "    return\n  }\n}\n";
        Kern k;
        if (kern_parse(&k, text, 4)) {
            emit_check(&k, "nolayout", false);
            CHECK(strstr(nr_diags_render(&k.a, &k.d), "has no layout") != NULL, "no-layout message: %s",
                  nr_diags_render(&k.a, &k.d));
        }
        kern_free(&k);
    }
}

static void run_kernel_tests(void) {
    kern_vadd();
    kern_elementwise();
    kern_casts();
    kern_reductions();
    kern_shapes();
    kern_control();
    kern_atomics();
    kern_atomic_matrix();
    kern_debug();
    kern_dots();
    kern_memory();
    kern_math();
    kern_misc();
}
