/* rng.c - SplitMix64 and the few distributions the simulator draws from.
 *
 * See rng.h.  Normal deviates use the Box-Muller transform (one of the two
 * values is discarded: simplicity over speed; workload generation is a
 * small part of a simulation's time).
 */
#include "sim/rng.h"

#include <math.h>

gp_rng gp_rng_new(uint64_t seed)
{
    gp_rng r = {.state = seed};
    return r;
}

uint64_t gp_rng_next(gp_rng *r)
{
    uint64_t z = (r->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

uint64_t gp_rng_derive(uint64_t seed, uint64_t stream)
{
    gp_rng r = gp_rng_new(seed ^ (stream * UINT64_C(0xD1B54A32D192ED03)));
    gp_rng_next(&r);
    return gp_rng_next(&r);
}

double gp_rng_uniform(gp_rng *r)
{
    return (double)(gp_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t gp_rng_below(gp_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = gp_rng_next(r);
    while (x >= limit);
    return x % n;
}

double gp_rng_exponential(gp_rng *r, double mean)
{
    return -mean * log(1.0 - gp_rng_uniform(r));
}

double gp_rng_lognormal(gp_rng *r, double mu, double sigma)
{
    double u1 = 1.0 - gp_rng_uniform(r), u2 = gp_rng_uniform(r);
    double normal = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return exp(mu + sigma * normal);
}

void gp_rng_shuffle_u32(gp_rng *r, uint32_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)gp_rng_below(r, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
