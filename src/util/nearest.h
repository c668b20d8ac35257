/* nearest.h - the nearest known name to a mistyped one ("did you mean ...?").
 *
 * One home for the rule, shared by the CLI (commands, flags, tenant paths)
 * and gpupoold (a tenant path that does not exist):
 *
 *     gp_suggest("jbos", {"submit", "jobs", "job", ...})    -> "jobs"
 *     gp_suggest("--tenat", {"--tenant", "--state", ...})     -> "--tenant"
 *     gp_suggest("ml/trian", {"ml", "ml/train", "ml/eval"}) -> "ml/train"
 *     gp_suggest("frobnicate", ...)                           -> NULL (nothing close)
 *
 * "Near" is the Damerau-Levenshtein distance (a swap of two neighbours
 * counts once), at most 1 for names of up to 4 characters, 2 up to 8,
 * else 3 (leading dashes of a flag not counted); ties go to the earlier
 * name.  Pure functions; nothing is allocated, the answer points into names.
 */
#ifndef GP_UTIL_NEAREST_H
#define GP_UTIL_NEAREST_H

#include <stddef.h>

/* The edit distance between a and b (optimal string alignment). */
size_t gp_edit_distance(const char *a, const char *b);

/* The nearest of names[0..n) to typed, or NULL when none is near. */
const char *gp_suggest(const char *typed, const char *const *names, size_t n);

#endif
