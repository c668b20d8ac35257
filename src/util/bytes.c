/* bytes.c - the growing byte buffer (bytes.h). */
#include "util/bytes.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* The first capacity: most bodies and answers fit in one page. */
#define GP__BYTES_FIRST 4096

bool gp_bytes_append(char **data, size_t *len, size_t *cap, const void *bytes, size_t n)
{
    size_t need = *len + n + 1;
    char *d = gp_grow(*data, cap, need < GP__BYTES_FIRST ? GP__BYTES_FIRST : need, 1);
    if (!d)
        return false;
    *data = d;
    if (n > 0)
        memcpy(*data + *len, bytes, n);
    *len += n;
    (*data)[*len] = '\0';
    return true;
}
