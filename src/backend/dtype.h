/* Element types of kernel tensors: sizes, names, conversion to and from
 * double (f16 and bf16 by round-to-nearest-even), and poison values that
 * mark an output element as not yet written. */
#ifndef KV_BACKENDS_DTYPE_H
#define KV_BACKENDS_DTYPE_H

#include <kevolve/bf16.h>
#include <kevolve/task.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

size_t kv_dtype_size(kv_dtype t);
const char *kv_dtype_name(kv_dtype t);

uint16_t kv_f32_to_f16(float f);
float kv_f16_to_f32(uint16_t h);
/* Stores V as element I of the DT array P (rounded to the dtype). */
void kv_dtype_store(kv_dtype dt, void *p, size_t i, double v);
/* Element I of the DT array P as a double. */
double kv_dtype_load(kv_dtype dt, const void *p, size_t i);

/* Poison: a NaN with a non-zero payload drawn from SEED for floats (a NaN a
 * computation produces has a zero payload), a random word for i32. The
 * value's bits are written to OUT (element size bytes). */
void kv_dtype_poison(kv_dtype dt, uint64_t seed, void *out);
/* 1 when element I of P has exactly the bits of POISON. */
int kv_dtype_is_poison(kv_dtype dt, const void *p, size_t i, const void *poison);
/* Fills N elements of P with POISON. */
void kv_dtype_fill(kv_dtype dt, void *p, size_t n, const void *poison);

#endif
