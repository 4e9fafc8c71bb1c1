/* example.h - what the C examples share: checking driver calls, the device,
 * random numbers, fp16 on the host, timing.  Plain C99 over the CUDA driver
 * API (cuda.h, libcuda); no runtime library, no Python. */
#ifndef EXAMPLE_H
#define EXAMPLE_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stop with a clear message when a driver call fails. */
#define CHECK(call) example_check((call), #call, __FILE__, __LINE__)

static inline void example_check(CUresult r, const char *what, const char *file, int line) {
    const char *name = NULL, *text = NULL;
    if (r == CUDA_SUCCESS) return;
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, name ? name : "unknown CUresult",
            text ? text : "no description");
    exit(1);
}

/* The primary context of device 0, made current. */
static inline CUcontext example_init(void) {
    CUdevice dev;
    CUcontext ctx;
    char name[256];
    int major = 0, minor = 0;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuDeviceGetName(name, (int)sizeof name, dev));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    printf("device: %s (compute capability %d.%d)\n", name, major, minor);
    return ctx;
}

static inline void example_finish(void) {
    CHECK(cuCtxSetCurrent(NULL));
    CHECK(cuDevicePrimaryCtxRelease(0));
}

/* xorshift64*: uniform in [lo, hi). */
static uint64_t example_rng = 0x9e3779b97f4a7c15ull;

static inline double example_uniform(double lo, double hi) {
    example_rng ^= example_rng >> 12;
    example_rng ^= example_rng << 25;
    example_rng ^= example_rng >> 27;
    return lo + (hi - lo) * (double)((example_rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static inline void *example_alloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    return p;
}

/* fp16 <-> float on the host, rounding to nearest even. */
static inline uint16_t example_to_half(float f) {
    uint32_t u, sign, mant;
    int exp;
    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000u;
    exp = (int)((u >> 23) & 0xff) - 127 + 15;
    mant = u & 0x7fffffu;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        uint32_t m, shift, q, rem, half;
        if (exp < -10) return (uint16_t)sign;
        m = mant | 0x800000u;
        shift = (uint32_t)(14 - exp);
        q = m >> shift;
        rem = m & ((1u << shift) - 1);
        half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    } else {
        uint32_t q = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
}

static inline float example_from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
    float f;
    if (exp == 0) {
        f = (float)mant * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    u = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
    memcpy(&f, &u, 4);
    return f;
}

/* Milliseconds a launch takes on the stream, on average over `reps` runs of run(arg). */
static inline float example_time(CUstream stream, void (*run)(void *), void *arg, int reps) {
    CUevent start, stop;
    float ms = 0.0f;
    int i;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    run(arg);
    CHECK(cuEventRecord(start, stream));
    for (i = 0; i < reps; i++) run(arg);
    CHECK(cuEventRecord(stop, stream));
    CHECK(cuEventSynchronize(stop));
    CHECK(cuEventElapsedTime(&ms, start, stop));
    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    return ms / (float)reps;
}

#endif
