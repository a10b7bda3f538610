/* Element types: conversions and poison values (see dtype.h). */
#include "backend/dtype.h"

#include <math.h>
#include <string.h>

size_t kv_dtype_size(kv_dtype t)
{
    return t == KV_F16 || t == KV_BF16 ? 2 : 4;
}

const char *kv_dtype_name(kv_dtype t)
{
    switch (t) {
    case KV_F32:
        return "f32";
    case KV_F16:
        return "f16";
    case KV_BF16:
        return "bf16";
    case KV_I32:
        return "i32";
    default:
        return "?";
    }
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16 from binary32, round to nearest even, with subnormals. */
uint16_t kv_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into inf: right */
    return (uint16_t)(sign | h);
}

float kv_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) return bits_f32(sign) + (sign ? -1.0f : 1.0f) * ldexpf((float)man, -24);
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

void kv_dtype_store(kv_dtype dt, void *p, size_t i, double v)
{
    switch (dt) {
    case KV_F32:
        ((float *)p)[i] = (float)v;
        break;
    case KV_F16:
        ((uint16_t *)p)[i] = kv_f32_to_f16((float)v);
        break;
    case KV_BF16:
        ((uint16_t *)p)[i] = kv_f32_to_bf16((float)v);
        break;
    case KV_I32:
        ((int32_t *)p)[i] = (int32_t)llround(v);
        break;
    default:
        break;
    }
}

double kv_dtype_load(kv_dtype dt, const void *p, size_t i)
{
    switch (dt) {
    case KV_F32:
        return ((const float *)p)[i];
    case KV_F16:
        return kv_f16_to_f32(((const uint16_t *)p)[i]);
    case KV_BF16:
        return kv_bf16_to_f32(((const uint16_t *)p)[i]);
    case KV_I32:
        return ((const int32_t *)p)[i];
    default:
        return NAN;
    }
}

void kv_dtype_poison(kv_dtype dt, uint64_t seed, void *out)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e5ull;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 29;
    if (dt == KV_F32) {
        uint32_t v = 0x7fc00000u | (uint32_t)(z & 0x3fffffu);
        if ((v & 0x3fffffu) == 0) v |= 1;
        memcpy(out, &v, 4);
    } else if (dt == KV_F16) {
        uint16_t v = (uint16_t)(0x7e00u | (z & 0x1ffu));
        if ((v & 0x1ffu) == 0) v |= 1;
        memcpy(out, &v, 2);
    } else if (dt == KV_BF16) {
        uint16_t v = (uint16_t)(0x7fc0u | (z & 0x3fu));
        if ((v & 0x3fu) == 0) v |= 1;
        memcpy(out, &v, 2);
    } else {
        uint32_t v = (uint32_t)(z >> 7);
        memcpy(out, &v, 4);
    }
}

int kv_dtype_is_poison(kv_dtype dt, const void *p, size_t i, const void *poison)
{
    size_t s = kv_dtype_size(dt);
    return memcmp((const char *)p + i * s, poison, s) == 0;
}

void kv_dtype_fill(kv_dtype dt, void *p, size_t n, const void *poison)
{
    size_t s = kv_dtype_size(dt);
    for (size_t i = 0; i < n; i++)
        memcpy((char *)p + i * s, poison, s);
}
