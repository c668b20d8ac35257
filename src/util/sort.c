/* sort.c - stable merge sort of index arrays (see sort.h). */
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

static void merge_sort(uint32_t *a, uint32_t *tmp, size_t n, gp_index_cmp cmp, const void *ctx)
{
    if (n < 2)
        return;
    size_t mid = n / 2;
    merge_sort(a, tmp, mid, cmp, ctx);
    merge_sort(a + mid, tmp, n - mid, cmp, ctx);
    if (cmp(a[mid - 1], a[mid], ctx) <= 0)
        return; /* already in order */
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n)
        tmp[k++] = cmp(a[j], a[i], ctx) < 0 ? a[j++] : a[i++];
    while (i < mid)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

bool gp_sort_indexes(uint32_t *idx, size_t n, gp_index_cmp cmp, const void *ctx)
{
    if (n < 2)
        return true;
    uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return false;
    merge_sort(idx, tmp, n, cmp, ctx);
    free(tmp);
    return true;
}
