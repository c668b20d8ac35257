/* prop_env.c - the property tests' knobs from the environment (prop_env.h). */
#include "prop_env.h"

#include <stdlib.h>

uint64_t gp_prop_env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 0);
    return end == v ? dflt : (uint64_t)x;
}
