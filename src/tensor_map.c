/* tensor_map.c - the TMA tensor maps of a launch, from its arguments; see tensor_map.h.
 *
 *   descriptor order (outermost first)       driver order (fastest first)
 *   sizes[0..rank)       (i32, elements)  -> dims[i]    = sizes[rank-1-i]
 *   strides[0..rank-1)   (i64, elements)  -> strides[i] = strides[rank-2-i] * elem_bytes
 *   strides[rank-1] = 1  (contiguous rows)   (implied)
 *   box[0..rank)         (compiled)       -> box[i]     = box[rank-1-i]
 *
 * Checks run in the descriptor's order, so that messages name the size or
 * stride the caller wrote; nr_tensor_map_check then checks the result
 * against the driver's rules as a last guard. */
#include "tensor_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int type;
} MAP_TYPES[] = {
    {"i1", NR_CU_TENSOR_MAP_DATA_TYPE_UINT8},       {"i8", NR_CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {"u8", NR_CU_TENSOR_MAP_DATA_TYPE_UINT8},       {"fp8e4nv", NR_CU_TENSOR_MAP_DATA_TYPE_UINT8},
    {"fp8e5", NR_CU_TENSOR_MAP_DATA_TYPE_UINT8},    {"i16", NR_CU_TENSOR_MAP_DATA_TYPE_UINT16},
    {"u16", NR_CU_TENSOR_MAP_DATA_TYPE_UINT16},     {"fp16", NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
    {"bf16", NR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},  {"i32", NR_CU_TENSOR_MAP_DATA_TYPE_INT32},
    {"u32", NR_CU_TENSOR_MAP_DATA_TYPE_UINT32},     {"fp32", NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
    {"i64", NR_CU_TENSOR_MAP_DATA_TYPE_INT64},      {"u64", NR_CU_TENSOR_MAP_DATA_TYPE_UINT64},
    {"fp64", NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
};

int nr_tensor_map_dtype(const char *name) {
    for (size_t i = 0; name && i < sizeof MAP_TYPES / sizeof MAP_TYPES[0]; i++)
        if (strcmp(MAP_TYPES[i].name, name) == 0) return MAP_TYPES[i].type;
    return -1;
}

const char *nr_tensor_map_desc_name(const char *base_arg_name, char *buf, size_t size) {
    const char *s = base_arg_name ? base_arg_name : "";
    size_t len = strlen(s);
    if (len > 5 && strcmp(s + len - 5, ".base") == 0) len -= 5;
    if (size) snprintf(buf, size, "%.*s", (int)(len < 1000 ? len : 1000), s);
    return buf;
}

/* Each value is read at its parameter size: u64, i32, i64. */
static uint64_t read_u64(const void *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int32_t read_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int64_t read_i64(const void *p) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

bool nr_tensor_map_key(const NrTensorMapInfo *info, void *const *params, uint64_t key[NR_TENSOR_MAP_KEY_WORDS]) {
    int r = info->rank, b = info->base_arg;
    memset(key, 0, sizeof(uint64_t) * NR_TENSOR_MAP_KEY_WORDS);
    for (int i = b; i <= b + 2 * r; i++)
        if (!params[i]) return false;
    key[0] = read_u64(params[b]);
    for (int d = 0; d < r; d++) {
        key[1 + d] = (uint64_t)(int64_t)read_i32(params[b + 1 + d]);
        key[1 + 5 + d] = (uint64_t)read_i64(params[b + 1 + r + d]);
    }
    return true;
}

static bool refuse(char *why, size_t n, const char *name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool refuse(char *why, size_t n, const char *name, const char *fmt, ...) {
    if (!n) return false;
    int k = snprintf(why, n, "tensor descriptor '%s': ", name);
    if (k >= 0 && (size_t)k < n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why + k, n - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* The compiled part: element type, box, swizzle, fill. */
static bool check_layout(const NrTensorMapInfo *info, const char *name, int type, char *why, size_t n) {
    int esize = info->elem_bytes, sw = info->swizzle;
    if (sw != 0 && sw != 32 && sw != 64 && sw != 128)
        return refuse(why, n, name, "swizzle of %d bytes (0, 32, 64 or 128)", sw);
    for (int d = 0; d < info->rank; d++)
        if (info->box[d] < 1 || info->box[d] > 256)
            return refuse(why, n, name, "its TMA box has %d elements along dimension %d (1 to 256)", info->box[d], d);
    long inner = (long)info->box[info->rank - 1] * esize;
    if (inner % 16) return refuse(why, n, name, "its TMA box rows of %ld bytes are not a multiple of 16", inner);
    if (sw && inner > sw)
        return refuse(why, n, name, "its TMA box rows of %ld bytes are wider than the %d-byte swizzle", inner, sw);
    if (info->nan_fill && (type < NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 || type > NR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16))
        return refuse(why, n, name, "TMA cannot pad %s elements with NaN (the driver fills fp16, bf16, fp32 and fp64 "
                                    "alone)",
                      info->dtype);
    return true;
}

/* The launch's part: base, sizes, strides (descriptor order). */
static bool check_values(const NrTensorMapInfo *info, const char *name, const uint64_t *key, char *why, size_t n) {
    int r = info->rank, esize = info->elem_bytes;
    uint64_t base = key[0];
    if (!base) return refuse(why, n, name, "its base address is null");
    if (base % 16) return refuse(why, n, name, "base address 0x%llx is not 16-byte aligned", (unsigned long long)base);
    for (int d = 0; d < r; d++) {
        int64_t size = (int64_t)key[1 + d];
        if (size < 1) return refuse(why, n, name, "size %d is %lld (TMA needs sizes of at least 1)", d, (long long)size);
    }
    int64_t last = (int64_t)key[1 + 5 + r - 1];
    if (last != 1)
        return refuse(why, n, name, "stride %d is %lld; the last dimension must be contiguous (stride 1)", r - 1,
                      (long long)last);
    for (int d = 0; d + 1 < r; d++) {
        int64_t st = (int64_t)key[1 + 5 + d];
        if (st < 0) return refuse(why, n, name, "stride %d is negative (%lld)", d, (long long)st);
        /* (st * esize) mod 16 without the product, which may not fit */
        if ((uint64_t)st % 16 * (uint64_t)esize % 16)
            return refuse(why, n, name, "stride %d (%lld elements of %d bytes) is not a multiple of 16 bytes", d,
                          (long long)st, esize);
        if ((uint64_t)st >= ((uint64_t)1 << 40) / (uint64_t)esize)
            return refuse(why, n, name, "stride %d (%lld elements of %d bytes) is 2^40 bytes or more", d,
                          (long long)st, esize);
    }
    return true;
}

bool nr_tensor_map_from_params(const NrTensorMapInfo *info, const char *name, void *const *params, int nparams,
                               NrTensorMapArgs *out, char *why, size_t n) {
    if (n) why[0] = 0;
    name = name ? name : "?";
    int r = info->rank, b = info->base_arg;
    if (r < 1 || r > 5) return refuse(why, n, name, "rank %d (TMA maps 1 to 5 dimensions)", r);
    if (b < 0 || b > nparams - 1 - 2 * r)
        return refuse(why, n, name, "its %d arguments from argument %d are not all among the launch's %d", 1 + 2 * r,
                      b, nparams);
    int type = nr_tensor_map_dtype(info->dtype);
    if (type < 0 || nr_tensor_map_elem_bytes(type) != info->elem_bytes)
        return refuse(why, n, name, "TMA has no data type for %d-byte %s elements", info->elem_bytes,
                      info->dtype ? info->dtype : "?");
    uint64_t key[NR_TENSOR_MAP_KEY_WORDS];
    if (!params || !nr_tensor_map_key(info, params, key))
        return refuse(why, n, name, "its arguments %d to %d are not all given", b, b + 2 * r);
    if (!check_layout(info, name, type, why, n) || !check_values(info, name, key, why, n)) return false;

    memset(out, 0, sizeof *out);
    out->dtype = type;
    out->rank = (unsigned)r;
    out->base = key[0];
    for (int i = 0; i < r; i++) {
        int d = r - 1 - i; /* the descriptor's dimension of driver dimension i */
        out->dims[i] = key[1 + d];
        out->box[i] = (unsigned)info->box[d];
        out->elem_strides[i] = 1;
        if (i > 0) out->strides[i - 1] = key[1 + 5 + d] * (uint64_t)info->elem_bytes;
    }
    out->interleave = NR_CU_TENSOR_MAP_INTERLEAVE_NONE;
    out->swizzle = info->swizzle == 128 ? NR_CU_TENSOR_MAP_SWIZZLE_128B
                   : info->swizzle == 64 ? NR_CU_TENSOR_MAP_SWIZZLE_64B
                   : info->swizzle == 32 ? NR_CU_TENSOR_MAP_SWIZZLE_32B
                                         : NR_CU_TENSOR_MAP_SWIZZLE_NONE;
    out->l2_promotion = NR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    out->oob_fill = info->nan_fill ? NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                   : NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    char driver_why[256];
    if (!nr_tensor_map_check(out, driver_why, sizeof driver_why)) return refuse(why, n, name, "%s", driver_why);
    return true;
}
