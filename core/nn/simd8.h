/* simd8.h — 8-lane float and int vectors in GCC vector extensions (gcc
 * and clang), loaded and stored at any float's alignment, and a
 * two-vector shuffle. Lowered to SSE in a baseline build, one register
 * in a function built for AVX2 or AVX-512 (coll/simd_clones.h). */
#ifndef DT_NN_SIMD8_H
#define DT_NN_SIMD8_H

#include <stdint.h>

typedef float v8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4), may_alias));

/* A two-vector shuffle: element k of the result is element i_k of a:b */
#if defined(__clang__)
#define SHUF8(a, b, i0, i1, i2, i3, i4, i5, i6, i7)                          \
    __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define SHUF8(a, b, i0, i1, i2, i3, i4, i5, i6, i7)                          \
    __builtin_shuffle(a, b, (v8i){i0, i1, i2, i3, i4, i5, i6, i7})
#endif

#endif /* DT_NN_SIMD8_H */
