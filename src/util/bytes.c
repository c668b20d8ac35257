/* bytes.c - the growing byte buffer (bytes.h). */
#include "util/bytes.h"

#include <stdlib.h>
#include <string.h>

bool gp_bytes_append(char **data, size_t *len, size_t *cap, const void *bytes, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t bigger = *cap ? *cap : 4096;
        while (bigger < *len + n + 1)
            bigger *= 2;
        char *d = realloc(*data, bigger);
        if (!d)
            return false;
        *data = d;
        *cap = bigger;
    }
    if (n > 0)
        memcpy(*data + *len, bytes, n);
    *len += n;
    (*data)[*len] = '\0';
    return true;
}
