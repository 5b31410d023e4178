/* simd_clones.h — DT_SIMD_CLONES builds a hot loop for AVX-512 and AVX2 as
 * well as the baseline; the loader picks the best at start-up (ifunc), so
 * the library itself stays baseline x86-64. Off where ifuncs or the
 * attribute are unavailable, and under ASan or TSan (whose instrumentation
 * of target_clones resolvers is unreliable: under TSan the resolver runs
 * during relocation, before the runtime is up, and the program crashes
 * before main). */
#ifndef DT_SIMD_CLONES_H
#define DT_SIMD_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define DT_SIMD_CLONES                                                        \
    __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DT_SIMD_CLONES
#endif

#endif /* DT_SIMD_CLONES_H */
