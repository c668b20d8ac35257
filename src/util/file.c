/* file.c - reading a whole file into memory (see file.h).
 *
 * The buffer doubles from 4 KiB while the stream has more, keeping one
 * byte for the terminating NUL.  Example: a 10,000-byte file grows the
 * buffer 4096 -> 8192 -> 16384 and returns len 10000, text[10000] == 0.
 */
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

gp_err gp_file_read_stream(FILE *f, const char *name, char **text, size_t *len, gp_error *err)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *grown = gp_grow(buf, &cap, cap + 1, 1);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
    }
    if (!buf)
        return gp_error_set(err, GP_ERR_NOMEM, "file", "%s: out of memory", name);
    if (ferror(f)) {
        free(buf);
        return gp_error_set(err, GP_ERR_INVALID, "file", "%s: read error", name);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return GP_OK;
}

gp_err gp_file_read_all(const char *path, char **text, size_t *len, gp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "file", "%s: %s", path, strerror(errno));
    gp_err rc = gp_file_read_stream(f, path, text, len, err);
    fclose(f);
    return rc;
}
