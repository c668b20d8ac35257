/* index_set.h - which members of a job array, as people type them: "0-19", "1,3,5-7".
 *
 * One parser for the CLI's handles (`gpupool cancel 13_[1,3,5-7]`,
 * cli/job_handle.h) and gpupoold's `?index=` of /v1/arrays/{id}
 * (server/api_arrays.c), so both refuse the same text with the same words:
 *
 *     gp_index_set_parse("0-19")      {0-19}
 *     gp_index_set_parse("7,1,3,5-7") {1, 3, 5-7}   (sorted; overlaps merged)
 *     gp_index_set_parse("4-5,6")     {4-6}         (neighbours merged)
 *     gp_index_set_parse("5-3")       false: "5-3: the range ends before it starts"
 *     gp_index_set_parse("1,,2")      false: "an empty item between commas"
 *     gp_index_set_format({1, 3, 5-7}) "1,3,5-7"
 *
 * Items are whole numbers 0..GP_INDEX_MAX (an array holds at most 10,000
 * members, server/api_jobs_batch.c) or ranges LO-HI with LO <= HI,
 * separated by commas; no spaces, signs, brackets (the CLI takes those
 * off), steps (Slurm's 1-7:2) or throttles (Slurm's %4).  At most
 * GP_INDEX_RANGES_MAX ranges after merging.
 *
 * Ownership: nothing is allocated; every buffer is the caller's.
 */
#ifndef GP_UTIL_INDEX_SET_H
#define GP_UTIL_INDEX_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_INDEX_MAX 9999
#define GP_INDEX_RANGES_MAX 64

typedef struct gp_index_range {
    uint32_t lo, hi; /* inclusive */
} gp_index_range;

typedef struct gp_index_set {
    int n;                                   /* ranges, sorted, apart by at least one */
    gp_index_range r[GP_INDEX_RANGES_MAX];
} gp_index_set;

/* False with why[cap] naming the bad text when text is not an index set. */
bool gp_index_set_parse(const char *text, gp_index_set *out, char *why, size_t cap);
/* Adds lo..hi (lo <= hi <= GP_INDEX_MAX); false, s unchanged, when s would
 * need more than GP_INDEX_RANGES_MAX ranges. */
bool gp_index_set_add(gp_index_set *s, uint32_t lo, uint32_t hi);
bool gp_index_set_has(const gp_index_set *s, uint32_t i);
/* How many indexes the set holds. */
uint32_t gp_index_set_count(const gp_index_set *s);
/* "1,3,5-7" into buf[cap] (truncated to fit); returns buf. */
char *gp_index_set_format(const gp_index_set *s, char *buf, size_t cap);

#endif
