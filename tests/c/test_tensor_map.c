/* test_tensor_map.c - the tensor maps of a launch without a GPU (tensor_map.c).
 *
 *  1. Hand-written descriptors: cuTensorMapEncodeTiled's arguments (types,
 *     dimensions and strides reversed, strides in bytes, box, swizzle, fill)
 *     from runtime arguments packed at their parameter sizes, each value in
 *     its own allocation of exactly that size (ASan sees any overread).
 *  2. Random descriptors of every rank and element size against the same
 *     rules written out directly.
 *  3. Every value the driver would refuse gives a message naming the
 *     descriptor and the size or stride at fault.
 *  4. Compiled kernels: the maps nr_kernel_tensor_map_info reports for a
 *     TMA kernel on sm_90a are encodable from a launch's arguments, and
 *     match the kernel's `_tmap_` parameters; kernels without descriptors,
 *     descriptor kernels on sm_90 and with no_tma take none, so they launch
 *     exactly as before. */
#include "nereid.h"
#include "tensor_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(c, ...)                                                      \
    do {                                                                   \
        if (!(c)) {                                                        \
            failures++;                                                    \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);            \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

static unsigned seed;

/* ---- packed launch arguments ---- */

enum { MAX_ARGS = 64 };

/* A launch's runtime arguments, each value in a malloc'd block of its
 * parameter size. */
typedef struct Params {
    void *p[MAX_ARGS];
    int n;
} Params;

static void *push(Params *ps, const void *v, size_t size) {
    void *m = malloc(size);
    if (!m) abort();
    memcpy(m, v, size);
    ps->p[ps->n++] = m;
    return m;
}

static void push_u64(Params *ps, uint64_t v) { push(ps, &v, 8); }
static void push_i32(Params *ps, int32_t v) { push(ps, &v, 4); }
static void push_i64(Params *ps, int64_t v) { push(ps, &v, 8); }

/* A descriptor's arguments: base, sizes, strides (outermost first). */
static void push_desc(Params *ps, uint64_t base, int rank, const int32_t *sizes, const int64_t *strides) {
    push_u64(ps, base);
    for (int d = 0; d < rank; d++) push_i32(ps, sizes[d]);
    for (int d = 0; d < rank; d++) push_i64(ps, strides[d]);
}

static void params_free(Params *ps) {
    for (int i = 0; i < ps->n; i++) free(ps->p[i]);
    ps->n = 0;
}

static NrTensorMapInfo info_of(int base_arg, int rank, const char *dtype, int elem_bytes, const int *box, int swizzle,
                               int nan_fill) {
    NrTensorMapInfo t;
    memset(&t, 0, sizeof t);
    t.base_arg = base_arg;
    t.rank = rank;
    t.dtype = dtype;
    t.elem_bytes = elem_bytes;
    for (int d = 0; d < rank; d++) t.box[d] = box[d];
    t.swizzle = swizzle;
    t.nan_fill = nan_fill;
    return t;
}

/* ---- 1. hand-written descriptors ---- */

static void test_dtypes(void) {
    static const struct {
        const char *name;
        int type;
    } cases[] = {
        {"fp16", 6},    {"bf16", 9},  {"fp32", 7},    {"fp64", 8},  {"fp8e4nv", 0}, {"fp8e5", 0},
        {"i8", 0},      {"u8", 0},    {"i1", 0},      {"i16", 1},   {"u16", 1},     {"i32", 3},
        {"u32", 2},     {"i64", 5},   {"u64", 4},     {"f16", -1},  {"", -1},       {"fp", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(nr_tensor_map_dtype(cases[i].name) == cases[i].type, "%s -> %d", cases[i].name,
              nr_tensor_map_dtype(cases[i].name));
    CHECK(nr_tensor_map_dtype(NULL) == -1, "NULL dtype");
    char buf[64];
    CHECK(strcmp(nr_tensor_map_desc_name("a_desc.base", buf, sizeof buf), "a_desc") == 0, "%s", buf);
    CHECK(strcmp(nr_tensor_map_desc_name("t.1.base", buf, sizeof buf), "t.1") == 0, "%s", buf);
    CHECK(strcmp(nr_tensor_map_desc_name("x", buf, sizeof buf), "x") == 0, "%s", buf);
    CHECK(strcmp(nr_tensor_map_desc_name(NULL, buf, sizeof buf), "") == 0, "%s", buf);
    CHECK(strcmp(nr_tensor_map_desc_name("a_desc.base", buf, 3), "a_") == 0, "short buffer: %s", buf);
}

/* An fp16 matrix after another argument: a [300, 200] tensor with rows of
 * 208 elements (padded), boxes of 128 x 64, 128-byte swizzle. */
static void test_matrix(void) {
    Params ps = {{0}, 0};
    push_u64(&ps, 0xdead0000); /* an unrelated pointer argument */
    int32_t sizes[2] = {300, 200};
    int64_t strides[2] = {208, 1};
    push_desc(&ps, 0x7f0000012340ull, 2, sizes, strides);
    push_i32(&ps, 7);
    int box[2] = {128, 64};
    NrTensorMapInfo info = info_of(1, 2, "fp16", 2, box, 128, 0);
    NrTensorMapArgs t;
    char why[256];
    CHECK(nr_tensor_map_from_params(&info, "a_desc", ps.p, ps.n, &t, why, sizeof why), "%s", why);
    CHECK(t.dtype == NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t.rank == 2 && t.base == 0x7f0000012340ull, "dtype %d rank %u",
          t.dtype, t.rank);
    CHECK(t.dims[0] == 200 && t.dims[1] == 300, "dims %llu %llu", (unsigned long long)t.dims[0],
          (unsigned long long)t.dims[1]);
    CHECK(t.strides[0] == 416, "stride %llu bytes", (unsigned long long)t.strides[0]);
    CHECK(t.box[0] == 64 && t.box[1] == 128, "box %u %u", t.box[0], t.box[1]);
    CHECK(t.elem_strides[0] == 1 && t.elem_strides[1] == 1, "element strides");
    CHECK(t.interleave == 0 && t.swizzle == NR_CU_TENSOR_MAP_SWIZZLE_128B && t.l2_promotion == 2 && t.oob_fill == 0,
          "interleave %d swizzle %d l2 %d fill %d", t.interleave, t.swizzle, t.l2_promotion, t.oob_fill);
    CHECK(t.dims[2] == 0 && t.box[2] == 0 && t.strides[1] == 0, "unused entries set");
    CHECK(nr_tensor_map_check(&t, why, sizeof why), "driver check: %s", why);

    /* The key: base, sizes, strides; sizes sign-extended. */
    uint64_t key[NR_TENSOR_MAP_KEY_WORDS];
    CHECK(nr_tensor_map_key(&info, ps.p, key), "key");
    CHECK(key[0] == 0x7f0000012340ull && key[1] == 300 && key[2] == 200 && key[3] == 0 && key[6] == 208 &&
              key[7] == 1 && key[8] == 0,
          "key %llx %llu %llu %llu %llu", (unsigned long long)key[0], (unsigned long long)key[1],
          (unsigned long long)key[2], (unsigned long long)key[6], (unsigned long long)key[7]);
    void *saved = ps.p[3];
    ps.p[3] = NULL;
    CHECK(!nr_tensor_map_key(&info, ps.p, key), "a missing value was read");
    CHECK(!nr_tensor_map_from_params(&info, "a_desc", ps.p, ps.n, &t, why, sizeof why) &&
              strcmp(why, "tensor descriptor 'a_desc': its arguments 1 to 5 are not all given") == 0,
          "%s", why);
    ps.p[3] = saved;
    params_free(&ps);
}

/* A 3-D bf16 tensor padded with NaN; a 1-D fp32 vector; fp8 rows of one
 * 64-byte swizzle; the same values packed in 8-byte slots (the Python
 * extension's packing). */
static void test_shapes(void) {
    Params ps = {{0}, 0};
    int32_t s3[3] = {4, 50, 64};
    int64_t t3[3] = {50 * 64, 64, 1};
    push_desc(&ps, 0x10000, 3, s3, t3);
    int32_t s1[1] = {1000};
    int64_t t1[1] = {1};
    push_desc(&ps, 0x20000, 1, s1, t1);
    int32_t s2[2] = {33, 96};
    int64_t t2[2] = {96, 1};
    push_desc(&ps, 0x30010, 2, s2, t2);
    char why[256];
    NrTensorMapArgs t;

    int box3[3] = {1, 16, 64};
    NrTensorMapInfo i3 = info_of(0, 3, "bf16", 2, box3, 128, 1);
    CHECK(nr_tensor_map_from_params(&i3, "q", ps.p, ps.n, &t, why, sizeof why), "%s", why);
    CHECK(t.dtype == 9 && t.rank == 3 && t.dims[0] == 64 && t.dims[1] == 50 && t.dims[2] == 4, "3-D dims");
    CHECK(t.strides[0] == 128 && t.strides[1] == 50 * 64 * 2, "3-D strides %llu %llu", (unsigned long long)t.strides[0],
          (unsigned long long)t.strides[1]);
    CHECK(t.box[0] == 64 && t.box[1] == 16 && t.box[2] == 1 && t.oob_fill == 1 && t.swizzle == 3, "3-D box, fill");

    int box1[1] = {256};
    NrTensorMapInfo i1 = info_of(7, 1, "fp32", 4, box1, 0, 0);
    CHECK(nr_tensor_map_from_params(&i1, "v", ps.p, ps.n, &t, why, sizeof why), "%s", why);
    CHECK(t.dtype == 7 && t.rank == 1 && t.dims[0] == 1000 && t.box[0] == 256 && t.swizzle == 0 && t.strides[0] == 0,
          "1-D");

    int box2[2] = {32, 64};
    NrTensorMapInfo i2 = info_of(10, 2, "fp8e4nv", 1, box2, 64, 0);
    CHECK(nr_tensor_map_from_params(&i2, "w", ps.p, ps.n, &t, why, sizeof why), "%s", why);
    CHECK(t.dtype == 0 && t.dims[0] == 96 && t.dims[1] == 33 && t.strides[0] == 96 && t.box[0] == 64 && t.swizzle == 2,
          "fp8");

    /* 8-byte slots, as the Python extension packs every value */
    uint64_t slots[15];
    void *sp[15];
    for (int i = 0; i < ps.n; i++) {
        slots[i] = 0;
        memcpy(&slots[i], ps.p[i], i == 0 || i == 7 || i == 10 || (i >= 4 && i <= 6) || i == 9 || i >= 13 ? 8 : 4);
        sp[i] = &slots[i];
    }
    NrTensorMapArgs u;
    CHECK(nr_tensor_map_from_params(&i3, "q", sp, ps.n, &u, why, sizeof why), "%s", why);
    nr_tensor_map_from_params(&i3, "q", ps.p, ps.n, &t, why, sizeof why);
    CHECK(memcmp(&t, &u, sizeof t) == 0, "slots and exact sizes differ");
    params_free(&ps);
}

/* ---- 2. random descriptors ---- */

static void test_random(void) {
    static const struct {
        const char *name;
        int bytes, type;
    } types[] = {{"fp16", 2, 6}, {"bf16", 2, 9}, {"fp32", 4, 7}, {"fp64", 8, 8}, {"fp8e5", 1, 0},
                 {"i32", 4, 3},  {"u16", 2, 1},  {"i64", 8, 5},  {"u32", 4, 2}};
    for (int iter = 0; iter < 2000; iter++) {
        int ti = rand_r(&seed) % (int)(sizeof types / sizeof types[0]);
        int es = types[ti].bytes, rank = 1 + rand_r(&seed) % 5;
        int32_t sizes[5];
        int64_t strides[5];
        int box[5];
        for (int d = 0; d < rank; d++) {
            sizes[d] = 1 + rand_r(&seed) % (d == rank - 1 ? 3000 : 40);
            box[d] = 1 << (rand_r(&seed) % 9); /* 1 .. 256 */
        }
        /* rows padded to 16 bytes, outer dimensions packed on them */
        strides[rank - 1] = 1;
        int64_t row = ((int64_t)sizes[rank - 1] * es + 15) / 16 * 16 / es + 16 / es * (rand_r(&seed) % 3);
        for (int d = rank - 2; d >= 0; d--) strides[d] = d == rank - 2 ? row : strides[d + 1] * sizes[d + 1];
        /* the inner box: a multiple of 16 bytes within the swizzle (0: up to 256 elements) */
        static const int swizzles[4] = {0, 32, 64, 128};
        int sw = swizzles[rand_r(&seed) % 4];
        int limit = sw ? sw / es : 256, least = 16 / es;
        box[rank - 1] = least << (rand_r(&seed) % 4);
        if (box[rank - 1] > limit) box[rank - 1] = limit;
        int base_arg = rand_r(&seed) % 3;
        Params ps = {{0}, 0};
        for (int i = 0; i < base_arg; i++) push_u64(&ps, 0x1234);
        uint64_t base = ((uint64_t)(rand_r(&seed) % 100000) + 1) * 16;
        push_desc(&ps, base, rank, sizes, strides);
        int nan = types[ti].type >= 6 && rand_r(&seed) % 2;
        NrTensorMapInfo info = info_of(base_arg, rank, types[ti].name, es, box, sw, nan);
        NrTensorMapArgs t;
        char why[256];
        bool ok = nr_tensor_map_from_params(&info, "r", ps.p, ps.n, &t, why, sizeof why);
        CHECK(ok, "iteration %d: %s", iter, why);
        if (ok) {
            bool same = t.dtype == types[ti].type && t.rank == (unsigned)rank && t.base == base &&
                        t.oob_fill == nan && t.swizzle == (sw ? (sw == 32 ? 1 : sw == 64 ? 2 : 3) : 0);
            for (int i = 0; i < rank; i++) {
                same = same && t.dims[i] == (uint64_t)sizes[rank - 1 - i] && t.box[i] == (unsigned)box[rank - 1 - i] &&
                       t.elem_strides[i] == 1;
                if (i > 0) same = same && t.strides[i - 1] == (uint64_t)strides[rank - 1 - i] * (uint64_t)es;
            }
            CHECK(same, "iteration %d: rank %d %s: the arguments differ", iter, rank, types[ti].name);
        }
        params_free(&ps);
        if (failures > 20) return;
    }
}

/* ---- 3. what TMA cannot take ---- */

typedef struct Case {
    const char *what;
    uint64_t base;
    int32_t sizes[2];
    int64_t strides[2];
    int box[2];
    const char *dtype;
    int elem_bytes, swizzle, nan;
    const char *message;
} Case;

static void test_errors(void) {
    static const Case cases[] = {
        {"stride", 0x1000, {64, 100}, {100, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': stride 0 (100 elements of 2 bytes) is not a multiple of 16 bytes"},
        {"fp32 stride", 0x1000, {64, 100}, {102, 1}, {64, 32}, "fp32", 4, 128, 0,
         "tensor descriptor 'a_desc': stride 0 (102 elements of 4 bytes) is not a multiple of 16 bytes"},
        {"misaligned base", 0x1008, {64, 64}, {64, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': base address 0x1008 is not 16-byte aligned"},
        {"null base", 0, {64, 64}, {64, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': its base address is null"},
        {"empty", 0x1000, {0, 64}, {64, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': size 0 is 0 (TMA needs sizes of at least 1)"},
        {"negative size", 0x1000, {64, -3}, {64, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': size 1 is -3 (TMA needs sizes of at least 1)"},
        {"strided rows", 0x1000, {64, 64}, {128, 2}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': stride 1 is 2; the last dimension must be contiguous (stride 1)"},
        {"negative stride", 0x1000, {64, 64}, {-64, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': stride 0 is negative (-64)"},
        {"huge stride", 0x1000, {64, 64}, {(int64_t)1 << 39, 1}, {64, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': stride 0 (549755813888 elements of 2 bytes) is 2^40 bytes or more"},
        {"overflowing stride", 0x1000, {64, 64}, {INT64_MAX - 15, 1}, {64, 64}, "fp64", 8, 0, 0,
         "tensor descriptor 'a_desc': stride 0 (9223372036854775792 elements of 8 bytes) is 2^40 bytes or more"},
        {"big box", 0x1000, {64, 64}, {64, 1}, {512, 64}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': its TMA box has 512 elements along dimension 0 (1 to 256)"},
        {"empty box", 0x1000, {64, 64}, {64, 1}, {64, 0}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': its TMA box has 0 elements along dimension 1 (1 to 256)"},
        {"narrow box", 0x1000, {64, 64}, {64, 1}, {64, 12}, "fp16", 2, 0, 0,
         "tensor descriptor 'a_desc': its TMA box rows of 24 bytes are not a multiple of 16"},
        {"wide box", 0x1000, {64, 256}, {256, 1}, {64, 128}, "fp16", 2, 128, 0,
         "tensor descriptor 'a_desc': its TMA box rows of 256 bytes are wider than the 128-byte swizzle"},
        {"swizzle", 0x1000, {64, 64}, {64, 1}, {64, 16}, "fp16", 2, 48, 0,
         "tensor descriptor 'a_desc': swizzle of 48 bytes (0, 32, 64 or 128)"},
        {"fp8 NaN", 0x1000, {64, 64}, {64, 1}, {64, 64}, "fp8e4nv", 1, 64, 1,
         "tensor descriptor 'a_desc': TMA cannot pad fp8e4nv elements with NaN (the driver fills fp16, bf16, fp32 and "
         "fp64 alone)"},
        {"int NaN", 0x1000, {64, 64}, {64, 1}, {64, 16}, "i32", 4, 64, 1,
         "tensor descriptor 'a_desc': TMA cannot pad i32 elements with NaN (the driver fills fp16, bf16, fp32 and fp64 "
         "alone)"},
        {"unknown dtype", 0x1000, {64, 64}, {64, 1}, {64, 64}, "fp12", 2, 128, 0,
         "tensor descriptor 'a_desc': TMA has no data type for 2-byte fp12 elements"},
        {"size mismatch", 0x1000, {64, 64}, {64, 1}, {64, 64}, "fp16", 4, 128, 0,
         "tensor descriptor 'a_desc': TMA has no data type for 4-byte fp16 elements"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const Case *c = &cases[i];
        Params ps = {{0}, 0};
        push_desc(&ps, c->base, 2, c->sizes, c->strides);
        NrTensorMapInfo info = info_of(0, 2, c->dtype, c->elem_bytes, c->box, c->swizzle, c->nan);
        NrTensorMapArgs t;
        char why[256] = "";
        bool ok = nr_tensor_map_from_params(&info, "a_desc", ps.p, ps.n, &t, why, sizeof why);
        CHECK(!ok && strcmp(why, c->message) == 0, "%s: got '%s'", c->what, why);
        /* without a message buffer: refused all the same, nothing written */
        CHECK(!nr_tensor_map_from_params(&info, "a_desc", ps.p, ps.n, &t, NULL, 0), "%s: accepted silently", c->what);
        params_free(&ps);
    }

    /* The arguments themselves. */
    Params ps = {{0}, 0};
    int32_t sizes[2] = {64, 64};
    int64_t strides[2] = {64, 1};
    push_desc(&ps, 0x1000, 2, sizes, strides);
    int box[2] = {64, 64};
    NrTensorMapInfo info = info_of(1, 2, "fp16", 2, box, 128, 0);
    NrTensorMapArgs t;
    char why[256];
    CHECK(!nr_tensor_map_from_params(&info, "b", ps.p, ps.n, &t, why, sizeof why) &&
              strcmp(why, "tensor descriptor 'b': its 5 arguments from argument 1 are not all among the launch's 5") == 0,
          "past the end: %s", why);
    info.base_arg = -1;
    CHECK(!nr_tensor_map_from_params(&info, "b", ps.p, ps.n, &t, why, sizeof why) && strstr(why, "argument -1"),
          "negative: %s", why);
    info.base_arg = 0;
    info.rank = 6;
    CHECK(!nr_tensor_map_from_params(&info, "b", ps.p, ps.n, &t, why, sizeof why) &&
              strcmp(why, "tensor descriptor 'b': rank 6 (TMA maps 1 to 5 dimensions)") == 0,
          "rank 6: %s", why);
    info.rank = 2;
    CHECK(!nr_tensor_map_from_params(&info, "b", NULL, ps.n, &t, why, sizeof why), "no parameters");
    CHECK(nr_tensor_map_from_params(&info, NULL, ps.p, ps.n, &t, why, sizeof why), "no name: %s", why);
    char tiny[8];
    CHECK(!nr_tensor_map_from_params(&info, "b", ps.p, 3, &t, tiny, sizeof tiny) && strlen(tiny) == 7,
          "a short message buffer: '%s'", tiny);
    params_free(&ps);
}

/* The driver's own rules, on arguments made directly. */
static void test_driver_check(void) {
    NrTensorMapArgs good;
    memset(&good, 0, sizeof good);
    good.dtype = 6;
    good.rank = 2;
    good.base = 0x1000;
    good.dims[0] = 64, good.dims[1] = 64;
    good.strides[0] = 128;
    good.box[0] = 64, good.box[1] = 64;
    good.elem_strides[0] = good.elem_strides[1] = 1;
    good.swizzle = 3;
    good.l2_promotion = 2;
    char why[256];
    CHECK(nr_tensor_map_check(&good, why, sizeof why), "%s", why);
    static const struct {
        int field;
        const char *message;
    } cases[] = {
        {0, "a tensor map has 1 to 5 dimensions, not 0"},
        {1, "tensor map data type 10 is not one Nereid uses (0 to 9)"},
        {2, "the tensor's address 0x1004 is not 16-byte aligned"},
        {3, "dimension 1 has 4294967297 elements (1 to 2^32)"},
        {4, "the stride of dimension 1, 1099511627776 bytes, is not a multiple of 16 below 2^40"},
        {5, "element stride 9 along dimension 0 (1 to 8)"},
        {6, "interleave 1 (only non-interleaved maps are made)"},
        {7, "swizzle mode 4 (0 to 3)"},
        {8, "L2 promotion 4 (0 to 3)"},
        {9, "out-of-bounds fill 1 of data type 3 (NaN fill needs a float type)"},
        {10, "the box has 257 elements along dimension 1 (1 to 256)"},
        {11, "the box's rows of 256 bytes are wider than the 128-byte swizzle"},
        {12, "the tensor's address is null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        NrTensorMapArgs t = good;
        switch (cases[i].field) {
        case 0: t.rank = 0; break;
        case 1: t.dtype = 10; break;
        case 2: t.base = 0x1004; break;
        case 3: t.dims[1] = ((uint64_t)1 << 32) + 1; break;
        case 4: t.strides[0] = (uint64_t)1 << 40; break;
        case 5: t.elem_strides[0] = 9; break;
        case 6: t.interleave = 1; break;
        case 7: t.swizzle = 4; break;
        case 8: t.l2_promotion = 4; break;
        case 9: t.dtype = 3, t.oob_fill = 1; break;
        case 10: t.box[1] = 257; break;
        case 11: t.box[0] = 128; break;
        case 12: t.base = 0; break;
        }
        why[0] = 0;
        CHECK(!nr_tensor_map_check(&t, why, sizeof why) && strcmp(why, cases[i].message) == 0, "case %d: '%s'",
              cases[i].field, why);
    }
    NrTensorMapArgs t = good;
    t.dims[1] = (uint64_t)1 << 32;
    CHECK(nr_tensor_map_check(&t, why, sizeof why), "2^32 elements: %s", why);
    static const int bytes[10] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
    for (int dt = 0; dt <= 9; dt++) CHECK(nr_tensor_map_elem_bytes(dt) == bytes[dt], "type %d", dt);
    CHECK(nr_tensor_map_elem_bytes(-1) == 0 && nr_tensor_map_elem_bytes(10) == 0, "unknown types have a size");
}

/* nr_tensor_map_encode_with hands every argument over. */
static NrTensorMapArgs seen;
static int seen_aligned;

static NrCuResult record_encode(NrCuTensorMap *map, int dtype, unsigned rank, void *base, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box, const unsigned *elem_strides,
                                int interleave, int swizzle, int l2_promotion, int oob_fill) {
    seen_aligned = (uintptr_t)map % 64 == 0;
    memset(&seen, 0, sizeof seen);
    seen.dtype = dtype, seen.rank = rank, seen.base = (uint64_t)(uintptr_t)base;
    for (unsigned i = 0; i < rank; i++) {
        seen.dims[i] = dims[i], seen.box[i] = box[i], seen.elem_strides[i] = elem_strides[i];
        if (i + 1 < rank) seen.strides[i] = strides[i];
    }
    seen.interleave = interleave, seen.swizzle = swizzle, seen.l2_promotion = l2_promotion, seen.oob_fill = oob_fill;
    map->opaque[15] = 42;
    return 0;
}

static void test_encode_with(void) {
    Params ps = {{0}, 0};
    int32_t sizes[3] = {3, 40, 64};
    int64_t strides[3] = {40 * 64, 64, 1};
    push_desc(&ps, 0x4000, 3, sizes, strides);
    int box[3] = {2, 8, 32};
    NrTensorMapInfo info = info_of(0, 3, "fp32", 4, box, 128, 1);
    NrTensorMapArgs t;
    char why[256];
    CHECK(nr_tensor_map_from_params(&info, "x", ps.p, ps.n, &t, why, sizeof why), "%s", why);
    NrCuTensorMap maps[2];
    CHECK(nr_tensor_map_encode_with(record_encode, &t, &maps[1]) == 0 && seen_aligned && maps[1].opaque[15] == 42,
          "encode");
    CHECK(memcmp(&seen, &t, sizeof t) == 0, "the encoder got other arguments");
    params_free(&ps);
}

/* ---- 4. compiled kernels ---- */

static const char *KERNELS =
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "@triton.jit\n"
    "def desc_mm(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    pid_m = tl.program_id(0)\n"
    "    pid_n = tl.program_id(1)\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in tl.range(0, tl.cdiv(K, BK)):\n"
    "        a = a_desc.load([pid_m * BM, k * BK])\n"
    "        b = b_desc.load([k * BK, pid_n * BN])\n"
    "        acc = tl.dot(a, b, acc)\n"
    "    offs_m = pid_m * BM + tl.arange(0, BM)\n"
    "    offs_n = pid_n * BN + tl.arange(0, BN)\n"
    "    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)\n"
    "    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16), mask=mask)\n"
    "\n"
    "@triton.jit\n"
    "def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n";

static const char *MM_SIG = "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, "
                            "128, 64";

static NrKernel *compile(NrContext *ctx, const char *kernel, const char *sig, const char *arch, int no_tma) {
    NrOptions o;
    nr_options_default(&o);
    o.arch = arch;
    o.no_tma = no_tma;
    NrKernel *k = NULL;
    if (nr_compile(ctx, KERNELS, strlen(KERNELS), "kernels.py", kernel, sig, &o, &k) != NR_OK) {
        CHECK(0, "compile %s for %s: %s", kernel, arch, nr_error_text(ctx));
        return NULL;
    }
    return k;
}

/* The kernel's `.param .align 64 .b8 <name>_tmap_<j>[128]` parameters, and
 * whether they come last and in order. */
static int ptx_tmaps(const NrKernel *k, int *in_order) {
    const char *ptx = nr_kernel_ptx(k), *name = nr_kernel_name(k);
    char want[160];
    int n = 0;
    *in_order = 1;
    for (;; n++) {
        snprintf(want, sizeof want, ".param .align 64 .b8 %s_tmap_%d[128]", name, n);
        const char *at = strstr(ptx, want);
        if (!at) break;
        snprintf(want, sizeof want, "%s_param_", name);
        const char *close = strchr(at, ')');
        const char *later = strstr(at, want);
        if (later && close && later < close) *in_order = 0; /* a runtime argument after the map */
    }
    return n;
}

static void test_kernels(void) {
    NrContext *ctx = nr_context_create();
    NrKernel *k = compile(ctx, "desc_mm", MM_SIG, "sm_90a", 0);
    if (k) {
        int order, n = nr_kernel_num_tensor_maps(k);
        CHECK(n == 2 && ptx_tmaps(k, &order) == 2 && order, "%d maps, %d in the PTX", n, ptx_tmaps(k, &order));
        /* A launch: A is 300 x 200 (rows of 208), B 200 x 256. */
        Params ps = {{0}, 0};
        int32_t sa[2] = {300, 200}, sb[2] = {200, 256};
        int64_t ta[2] = {208, 1}, tb[2] = {256, 1};
        push_desc(&ps, 0x100000, 2, sa, ta);
        push_desc(&ps, 0x200000, 2, sb, tb);
        push_u64(&ps, 0x300000);
        push_i32(&ps, 300), push_i32(&ps, 256), push_i32(&ps, 200);
        CHECK(ps.n == nr_kernel_num_args(k), "%d arguments, the kernel %d", ps.n, nr_kernel_num_args(k));
        for (int j = 0; j < n; j++) {
            NrTensorMapInfo info;
            NrArgInfo ai;
            char name[64], why[256];
            NrTensorMapArgs t;
            CHECK(nr_kernel_tensor_map_info(k, j, &info) == 0 && nr_kernel_arg_info(k, info.base_arg, &ai) == 0,
                  "map %d", j);
            nr_tensor_map_desc_name(ai.name, name, sizeof name);
            CHECK(strcmp(name, j ? "b_desc" : "a_desc") == 0, "map %d is of '%s'", j, name);
            CHECK(nr_tensor_map_from_params(&info, name, ps.p, ps.n, &t, why, sizeof why), "map %d: %s", j, why);
            uint64_t base = j ? 0x200000 : 0x100000, rows = j ? 200 : 300, cols = j ? 256 : 200;
            uint64_t pitch = j ? 512 : 416;
            CHECK(t.dtype == NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t.rank == 2 && t.base == base && t.dims[0] == cols &&
                      t.dims[1] == rows && t.strides[0] == pitch && t.swizzle == NR_CU_TENSOR_MAP_SWIZZLE_128B,
                  "map %d: dims %llu x %llu, stride %llu, swizzle %d", j, (unsigned long long)t.dims[1],
                  (unsigned long long)t.dims[0], (unsigned long long)t.strides[0], t.swizzle);
            /* the box: rows of the block, at most one 128-byte swizzle wide */
            CHECK(t.box[1] == (unsigned)(j ? 64 : 128) && t.box[0] * 2 <= 128 && t.box[0] * 2 % 16 == 0,
                  "map %d: box %u x %u", j, t.box[1], t.box[0]);
        }
        /* Rows of 204 fp16 (408 bytes) are not TMA's. */
        *(int64_t *)ps.p[3] = 204;
        NrTensorMapInfo info;
        NrTensorMapArgs t;
        char why[256];
        nr_kernel_tensor_map_info(k, 0, &info);
        CHECK(!nr_tensor_map_from_params(&info, "a_desc", ps.p, ps.n, &t, why, sizeof why) &&
                  strcmp(why, "tensor descriptor 'a_desc': stride 0 (204 elements of 2 bytes) is not a multiple of 16 "
                              "bytes") == 0,
              "%s", why);
        CHECK(nr_kernel_tensor_map_info(k, 2, &info) != 0 && nr_kernel_tensor_map_info(k, -1, &info) != 0 &&
                  nr_kernel_tensor_map_info(k, 0, NULL) != 0,
              "maps out of range");
        params_free(&ps);
        nr_kernel_destroy(k);
    }
    /* No maps: no descriptors, sm_90 (no TMA), no_tma, the interpreter. */
    struct {
        const char *kernel, *sig, *arch;
        int no_tma;
    } none[] = {
        {"copy", "*fp32:16, *fp32:16, i32, 256", "sm_90a", 0},
        {"desc_mm", MM_SIG, "sm_90", 0},
        {"desc_mm", MM_SIG, "sm_90a", 1},
        {"desc_mm", MM_SIG, "sm_80", 0},
        {"desc_mm", MM_SIG, NULL, 0},
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        k = compile(ctx, none[i].kernel, none[i].sig, none[i].arch, none[i].no_tma);
        if (!k) continue;
        int order;
        CHECK(nr_kernel_num_tensor_maps(k) == 0 && ptx_tmaps(k, &order) == 0, "%s on %s (no_tma %d): %d maps",
              none[i].kernel, none[i].arch ? none[i].arch : "the interpreter", none[i].no_tma,
              nr_kernel_num_tensor_maps(k));
        nr_kernel_destroy(k);
    }
    CHECK(nr_kernel_num_tensor_maps(NULL) == 0, "a NULL kernel has maps");
    nr_context_destroy(ctx);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *env = getenv("NEREID_TEST_SEED");
    seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    test_dtypes();
    test_matrix();
    test_shapes();
    test_random();
    test_errors();
    test_driver_check();
    test_encode_with();
    test_kernels();
    if (failures) printf("test_tensor_map: %d checks FAILED (seed %u)\n", failures, seed);
    else printf("test_tensor_map: OK\n");
    return failures ? 1 : 0;
}
