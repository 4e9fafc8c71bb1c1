/* fp.h - conversions between f32/f64 and the narrow float formats (fp16,
 * bf16, fp8 e4m3fn, fp8 e5m2), bit-exact with the GPU: round to nearest even,
 * NaN kept as NaN, fp8 saturating to the largest finite value as the
 * ".satfinite" conversions do.  Shared by the interpreter and constant folding. */
#ifndef NR_FP_H
#define NR_FP_H

#include <stdbool.h>
#include <stdint.h>

uint16_t nr_f32_to_f16(float x);          /* RNE; overflow -> inf */
float nr_f16_to_f32(uint16_t h);
uint16_t nr_f32_to_bf16(float x);         /* RNE; overflow -> inf */
float nr_bf16_to_f32(uint16_t h);
uint8_t nr_f32_to_f8e4nv(float x);        /* RNE, satfinite (|x| > 448 -> 448), NaN -> 0x7f */
float nr_f8e4nv_to_f32(uint8_t b);
uint8_t nr_f32_to_f8e5(float x);          /* RNE, satfinite (|x| > 57344 -> 57344, inf too), NaN -> 0x7f */
float nr_f8e5_to_f32(uint8_t b);
/* Rounding toward zero variants (cast rounding="rtz"). */
uint16_t nr_f32_to_f16_rtz(float x);
uint16_t nr_f32_to_bf16_rtz(float x);
/* Round an f32 to tf32 (10 explicit mantissa bits), as cvt.rna.tf32.f32. */
float nr_f32_round_tf32(float x);
/* Double to the narrow formats directly (single rounding). */
uint16_t nr_f64_to_f16(double x);
uint16_t nr_f64_to_bf16(double x);
float nr_f64_to_f32(double x);

/* Every format by number, for the general conversion below. */
typedef enum NrFpFormat { NR_FPF_F8E4NV, NR_FPF_F8E5, NR_FPF_F16, NR_FPF_BF16, NR_FPF_F32 } NrFpFormat;
/* Round x once to `fmt` and return its bits: to nearest even, or toward zero
 * when rtz; fp8 saturates (satfinite), the others overflow to inf (rtz: to the
 * largest finite).  Exact for every double, so also for f32 and int inputs. */
uint32_t nr_fp_round(double x, NrFpFormat fmt, bool rtz);

#endif
