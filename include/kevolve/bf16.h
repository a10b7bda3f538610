/* bf16 as C code sees it: a value travels as its 16-bit pattern (the top
 * half of a float's), widened exactly and rounded back to nearest, ties to
 * even. C has no bf16 type (OpenCL and CUDA candidates have their own);
 * the judge and C candidates share these. Inline: input fills run them
 * billions of times. */
#ifndef KEVOLVE_BF16_H
#define KEVOLVE_BF16_H

#include <stdint.h>
#include <string.h>

/* NaN stays NaN (its top bits kept, made quiet); everything else rounds. */
static inline uint16_t kv_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float kv_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#endif
