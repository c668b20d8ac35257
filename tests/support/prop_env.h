/* prop_env.h - the property tests' knobs from the environment
 * (GP_PROPERTY_SEQUENCES, GP_PROPERTY_SEED, ...): one reader for all.
 *
 *   uint64_t n = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", 1000);
 *
 * A variable that is unset, empty or not a number (decimal, 0x hex or 0
 * octal, as strtoull reads it) gives the default. */
#ifndef GP_TESTS_PROP_ENV_H
#define GP_TESTS_PROP_ENV_H

#include <stdint.h>

uint64_t gp_prop_env_u64(const char *name, uint64_t dflt);

#endif
