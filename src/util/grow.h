/* grow.h - the growable array: room for one more item in a heap array
 * that doubles, written once for every folder outside src/core (the
 * engine keeps its own private gp__grow in core/books.c).
 *
 *   gp_trace_job *jobs = gp_grow(t->jobs, &t->cap_jobs, t->n_jobs + 1, sizeof *jobs);
 *   if (!jobs)
 *       return out_of_memory;          // t->jobs and t->cap_jobs as they were
 *   t->jobs = jobs;
 *   t->jobs[t->n_jobs++] = *job;
 *
 * The capacity doubles (16 items first) until it holds `need`, so n
 * appends cost O(n).  As with realloc, the new items are not initialised
 * (a caller that needs them zeroed clears them: zeroing here would make
 * every unused tail resident, 6 MiB more in bench_sim's week).  The array
 * comes back as a plain pointer, which C converts to the caller's type
 * without a cast: no (void **) pun and no macro.
 *
 * Ownership: `items` is a heap array the caller owns (NULL when empty, or
 * from malloc, calloc, realloc or gp_grow).  On success the returned
 * pointer replaces it (the old one may be dead) and is the caller's to
 * free().  On failure (out of memory, or need * item_size overflows)
 * NULL is returned and items and *cap are left as they were, still the
 * caller's.
 */
#ifndef GP_UTIL_GROW_H
#define GP_UTIL_GROW_H

#include <stddef.h>

/* items with room for at least `need` items of item_size bytes (*cap
 * updated), or NULL as above.  need <= *cap returns items unchanged. */
void *gp_grow(void *items, size_t *cap, size_t need, size_t item_size);

#endif
