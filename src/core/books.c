/* books.c - the small books every file of src/core keeps alike: growable
 * arrays (gp__grow), placement's scratch space (e->scratch: the chosen GPUs
 * and MIG starts of a look; its undo log is fleet.c's) and how many
 * entries a job's placement has (gp__placed_count).
 *
 * The lowest layer of the engine (internal.h, "Layers"): it calls no other
 * file of src/core, so every file may call it.
 *
 * Example: GP__GROW(f->nodes, f->n_nodes, f->cap_nodes) makes room for one
 * more node (16, then doubling, the new part zeroed); a 2x8 whole-GPU job
 * has 16 placed entries, a 2-replica MPS job 2.
 */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

bool gp__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return false;
    memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
    *arr = p;
    *cap = ncap;
    return true;
}

bool gp__scratch_reserve(gp_engine *e, size_t gpus)
{
    gp__scratch *s = &e->scratch;
    if (gpus <= s->cap_out)
        return true;
    size_t cap = s->cap_out ? s->cap_out : 1024;
    while (cap < gpus)
        cap *= 2;
    uint32_t *p = realloc(s->out, cap * sizeof *p);
    if (!p)
        return false;
    s->out = p;
    int8_t *slot = realloc(s->slot, cap * sizeof *slot);
    if (!slot)
        return false;
    s->slot = slot;
    s->cap_out = cap;
    return true;
}

void gp__scratch_free(gp__scratch *s)
{
    free(s->out);
    free(s->slot);
    free(s->saved_gpus);
    free(s->saved_nodes);
    memset(s, 0, sizeof *s);
}

size_t gp__placed_count(const gp__job *j)
{
    if (gp__job_shared(j) || j->gpus == 0)
        return (size_t)j->replicas;
    return (size_t)j->replicas * j->gpus;
}
