/* trace.c - the in-memory trace: jobs, tenants, GPU type names.
 *
 * See trace.h.  Growth is by doubling; tenant lookup is linear, which is
 * fine for the few hundred tenants a trace has (the readers intern one
 * tenant per file; the synthetic generator interns each team once).
 */
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

void gp_trace_init(gp_trace *t)
{
    memset(t, 0, sizeof *t);
}

void gp_trace_free(gp_trace *t)
{
    free(t->jobs);
    free(t->tenants);
    gp_trace_init(t);
}

gp_err gp_trace_add(gp_trace *t, const gp_trace_job *job, gp_error *err)
{
    gp_trace_job *jobs = gp_grow(t->jobs, &t->cap_jobs, t->n_jobs + 1, sizeof *jobs);
    if (!jobs)
        return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory at job %zu", t->n_jobs + 1);
    t->jobs = jobs;
    t->jobs[t->n_jobs] = *job;
    t->jobs[t->n_jobs].id = t->n_jobs + 1;
    t->n_jobs++;
    return GP_OK;
}

bool gp_trace_tenant(gp_trace *t, const char *path, uint16_t *index)
{
    for (size_t i = 0; i < t->n_tenants; i++)
        if (strcmp(t->tenants[i], path) == 0) {
            *index = (uint16_t)i;
            return true;
        }
    if (t->n_tenants >= UINT16_MAX || strlen(path) >= GP_PATH_MAX)
        return false;
    char(*tenants)[GP_PATH_MAX] = gp_grow(t->tenants, &t->cap_tenants, t->n_tenants + 1, sizeof *tenants);
    if (!tenants)
        return false;
    t->tenants = tenants;
    strcpy(t->tenants[t->n_tenants], path);
    *index = (uint16_t)t->n_tenants++;
    return true;
}

int gp_trace_type(gp_trace *t, const char *name)
{
    for (int i = 0; i < t->n_types; i++)
        if (strcmp(t->types[i], name) == 0)
            return i;
    if (t->n_types == GP_MAX_GPU_TYPES || strlen(name) >= GP_NAME_MAX)
        return -1;
    strcpy(t->types[t->n_types], name);
    return t->n_types++;
}

int64_t gp_trace_job_milli(const gp_trace_job *j)
{
    int64_t per = j->gpu_milli > 0 ? j->gpu_milli : (int64_t)j->gpus * 1000;
    return per * j->replicas;
}

static int by_submit(const void *a, const void *b)
{
    const gp_trace_job *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

gp_err gp_trace_sort(gp_trace *t, gp_error *err)
{
    (void)err;
    /* ids are unique and in trace order, so this order is total: qsort's
     * instability cannot show */
    qsort(t->jobs, t->n_jobs, sizeof *t->jobs, by_submit);
    for (size_t i = 0; i < t->n_jobs; i++)
        t->jobs[i].id = i + 1;
    return GP_OK;
}
