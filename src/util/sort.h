/* sort.h - a stable sort with a context argument.
 *
 * qsort() has no context pointer (qsort_r is a GNU extension), and the
 * engine must stay reentrant: two engines may sort on two threads.  This is
 * a plain top-down merge sort of an array of uint32_t indexes, stable, so
 * equal keys keep their order and results are deterministic.
 *
 * Ownership: sorts in place; allocates a temporary buffer of n elements and
 * frees it before returning.  Returns false (array untouched) when that
 * allocation fails.
 */
#ifndef GP_UTIL_SORT_H
#define GP_UTIL_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* cmp returns < 0 when a must come before b. */
typedef int (*gp_index_cmp)(uint32_t a, uint32_t b, const void *ctx);

bool gp_sort_indexes(uint32_t *idx, size_t n, gp_index_cmp cmp, const void *ctx);

#endif
