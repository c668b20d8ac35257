/* suggest.h - "did you mean ...?" for mistyped commands and flags.
 *
 * The CLI's commands and their flags are written once, in each command's
 * usage text (main.c); these helpers read the flags out of that text (so
 * the typo check and `gpupool completion` never drift from --help) and
 * find the nearest known name to what was typed:
 *
 *     gp_suggest("jbos", {"submit", "jobs", "job", ...})   -> "jobs"
 *     gp_suggest("--tenat", {"--tenant", "--state", ...})    -> "--tenant"
 *     gp_suggest("frobnicate", ...)                          -> NULL (nothing close)
 *
 * "Near" and gp_suggest itself live in util/nearest.h, shared with
 * gpupoold.  Pure functions; buffers are the caller's.
 */
#ifndef GP_CLI_SUGGEST_H
#define GP_CLI_SUGGEST_H

#include "util/nearest.h"

#include <stddef.h>

/* The distinct "--flag" words of a usage text, in order of appearance,
 * into flags[0..cap) as pointers into buf (which holds their copies);
 * returns how many.  "--gpu-type T]..." gives "--gpu-type"; "[--lend yes|no]"
 * gives "--lend". */
size_t gp_usage_flags(const char *usage, char *buf, size_t buf_cap, const char **flags, size_t cap);

#endif
