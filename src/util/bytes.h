/* bytes.h - a growing, NUL-terminated byte buffer: what an HTTP body or
 * answer is read into, chunk by chunk (gpupoold's request bodies, the
 * agent's and the CLI's libcurl answers).
 *
 *   char *data = NULL; size_t len = 0, cap = 0;
 *   gp_bytes_append(&data, &len, &cap, "abc", 3);   // data "abc", len 3
 *
 * The capacity at least doubles on growth (4 KiB first), so appending n
 * bytes in chunks costs O(n).  Bytes may hold NULs; data[len] is always 0.
 *
 * Ownership: *data is the caller's (free() it); on out of memory false is
 * returned and the buffer is left as it was.
 */
#ifndef GP_UTIL_BYTES_H
#define GP_UTIL_BYTES_H

#include <stdbool.h>
#include <stddef.h>

bool gp_bytes_append(char **data, size_t *len, size_t *cap, const void *bytes, size_t n);

#endif
