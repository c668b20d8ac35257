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
 * "Near" is the Damerau-Levenshtein distance (a swap of two neighbours
 * counts once), at most 1 for names of up to 4 characters, 2 up to 8,
 * else 3; ties go to the earlier name.  Pure functions; buffers are the
 * caller's.
 */
#ifndef GP_CLI_SUGGEST_H
#define GP_CLI_SUGGEST_H

#include <stddef.h>

/* The edit distance between a and b (optimal string alignment). */
size_t gp_edit_distance(const char *a, const char *b);

/* The nearest of names[0..n) to typed, or NULL when none is near. */
const char *gp_suggest(const char *typed, const char *const *names, size_t n);

/* The distinct "--flag" words of a usage text, in order of appearance,
 * into flags[0..cap) as pointers into buf (which holds their copies);
 * returns how many.  "--gpu-type T]..." gives "--gpu-type"; "[--lend yes|no]"
 * gives "--lend". */
size_t gp_usage_flags(const char *usage, char *buf, size_t buf_cap, const char **flags, size_t cap);

#endif
