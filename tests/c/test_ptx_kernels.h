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

static void run_kernel_tests(void) {
    kern_vadd();
    kern_elementwise();
    kern_casts();
}
