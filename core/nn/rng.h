/* rng.h — small deterministic random numbers, identical in C and CUDA.
 *
 * splitmix64 for sequential streams (initialization) and a stateless hash
 * of (seed, counter, layer, element) for dropout masks, so a mask depends
 * only on those four numbers: the same on cpu and cuda, and reproducible
 * after a resume from (seed, counter). */
#ifndef DT_NN_RNG_H
#define DT_NN_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define DT_HOST_DEVICE __host__ __device__
#else
#define DT_HOST_DEVICE
#endif

DT_HOST_DEVICE static inline uint64_t dt_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Next value of a splitmix64 stream. */
static inline uint64_t dt_splitmix64(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ULL;
    return dt_mix64(*state);
}

/* Uniform in [0, 1) with 24 random bits (exact in float). */
DT_HOST_DEVICE static inline float dt_u64_to_unit(uint64_t x)
{
    return (float)(x >> 40) * (1.0f / 16777216.0f);
}

/* The dropout stream of one layer for one forward pass. */
DT_HOST_DEVICE static inline uint64_t dt_dropout_key(uint64_t seed,
                                                     uint64_t counter,
                                                     int layer)
{
    return dt_mix64(dt_mix64(seed ^ 0x5851f42d4c957f2dULL) +
                    dt_mix64(counter) + (uint64_t)layer);
}

DT_HOST_DEVICE static inline float dt_dropout_uniform(uint64_t key, uint64_t i)
{
    return dt_u64_to_unit(dt_mix64(key + i * 0x9e3779b97f4a7c15ULL));
}

#endif /* DT_NN_RNG_H */
