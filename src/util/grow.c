/* grow.c - the growable array (see grow.h). */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>

#define GP__GROW_FIRST 16

void *gp_grow(void *items, size_t *cap, size_t need, size_t item_size)
{
    if (need <= *cap && items)
        return items;
    size_t ncap = *cap ? *cap : GP__GROW_FIRST;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return NULL;
        ncap *= 2;
    }
    if (item_size == 0 || ncap > SIZE_MAX / item_size)
        return NULL;
    void *grown = realloc(items, ncap * item_size);
    if (!grown)
        return NULL;
    *cap = ncap;
    return grown;
}
