/* rng.h - the simulator's deterministic random numbers.
 *
 * Every random choice of the simulator (synthetic workloads, the FGD
 * inflation sampler, shuffles) draws from a gp_rng seeded explicitly, so a
 * run is reproduced by its seed alone, on any machine and libc.  The
 * generator is SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good
 * enough for simulation; independent streams are made by seeding with
 * gp_rng_derive(seed, stream).
 *
 * Ownership: a gp_rng is a plain value owned by the caller.
 */
#ifndef GP_SIM_RNG_H
#define GP_SIM_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp_rng {
    uint64_t state;
} gp_rng;

gp_rng gp_rng_new(uint64_t seed);
/* A seed for an independent stream `stream` of `seed`. */
uint64_t gp_rng_derive(uint64_t seed, uint64_t stream);
uint64_t gp_rng_next(gp_rng *r);
/* Uniform in [0, 1). */
double gp_rng_uniform(gp_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t gp_rng_below(gp_rng *r, uint64_t n);
/* Exponential with the given mean. */
double gp_rng_exponential(gp_rng *r, double mean);
/* Log-normal whose underlying normal has mean mu and deviation sigma. */
double gp_rng_lognormal(gp_rng *r, double mu, double sigma);
/* Fisher-Yates shuffle of n uint32_t. */
void gp_rng_shuffle_u32(gp_rng *r, uint32_t *a, size_t n);

#endif
