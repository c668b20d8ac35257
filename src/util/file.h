/* file.h - reading a whole file into memory.
 *
 * The config readers (fleet and tenant files), the daemon (TLS certificate
 * and key) and the CLI (job and tenant files, or stdin) all read a file
 * whole before they parse it; this is the one reader they share.
 *
 * Ownership: on success *text is a malloc'd buffer the caller frees, NUL
 * terminated (one byte past *len) so it may be handed to a parser as a C
 * string; the file may itself contain NUL bytes, *len counts them.  On
 * failure nothing is allocated and err names the field "file" and the path.
 */
#ifndef GP_UTIL_FILE_H
#define GP_UTIL_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

/* The whole of the file at path: GP_ERR_NOT_FOUND when it cannot be opened
 * ("PATH: No such file or directory"), GP_ERR_INVALID on a read error,
 * GP_ERR_NOMEM when out of memory. */
gp_err gp_file_read_all(const char *path, char **text, size_t *len, gp_error *err);

/* The rest of an open stream (stdin for "-"), read to its end; name is
 * what messages call it.  The stream is left open. */
gp_err gp_file_read_stream(FILE *f, const char *name, char **text, size_t *len, gp_error *err);

#endif
