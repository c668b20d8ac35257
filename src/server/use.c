/* use.c - allocated vs used: the per-job counters (see use.h). */
#include "server/use.h"

#include "util/grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gp__use_job {
    gp_store_job_use c;
    bool dirty;
};

void gp_use_init(gp_use *u, int64_t cap_s)
{
    memset(u, 0, sizeof *u);
    pthread_mutex_init(&u->lock, NULL);
    u->cap_s = cap_s > 0 ? cap_s : 60;
}

void gp_use_free(gp_use *u)
{
    gp_u64map_free(&u->job_index);
    gp_strmap_free(&u->node_index);
    free(u->jobs);
    free(u->node_last_ms);
    pthread_mutex_destroy(&u->lock);
}

/* The job's entry, added when new; NULL when out of memory.  Under lock. */
static gp__use_job *job_entry(gp_use *u, uint64_t id)
{
    uint32_t i;
    if (gp_u64map_get(&u->job_index, id, &i))
        return &u->jobs[i];
    gp__use_job *p = gp_grow(u->jobs, &u->cap_jobs, u->n_jobs + 1, sizeof *p);
    if (!p)
        return NULL;
    u->jobs = p;
    if (!gp_u64map_put(&u->job_index, id, (uint32_t)u->n_jobs))
        return NULL;
    gp__use_job *j = &u->jobs[u->n_jobs++];
    memset(j, 0, sizeof *j);
    j->c.job_id = id;
    return j;
}

static void loaded(void *ctx, const gp_store_job_use *c)
{
    gp__use_job *j = job_entry(ctx, c->job_id);
    if (j)
        j->c = *c;
}

gp_err gp_use_load(gp_use *u, gp_store *store, gp_error *err)
{
    pthread_mutex_lock(&u->lock);
    gp_err rc = gp_store_job_use_scan(store, loaded, u, err);
    pthread_mutex_unlock(&u->lock);
    return rc;
}

/* Seconds since the node's previous beat, capped; 0 for its first.  Under lock. */
static double beat_seconds(gp_use *u, const char *node, int64_t now_ms)
{
    uint32_t i;
    if (!gp_strmap_get(&u->node_index, node, &i)) {
        int64_t *p = gp_grow(u->node_last_ms, &u->cap_nodes, u->n_nodes + 1, sizeof *p);
        if (!p)
            return 0;
        u->node_last_ms = p;
        if (!gp_strmap_put(&u->node_index, node, (uint32_t)u->n_nodes))
            return 0;
        u->node_last_ms[u->n_nodes++] = now_ms;
        return 0;
    }
    int64_t dt_ms = now_ms - u->node_last_ms[i];
    u->node_last_ms[i] = now_ms;
    if (dt_ms <= 0)
        return 0;
    return dt_ms > u->cap_s * 1000 ? (double)u->cap_s : (double)dt_ms / 1000.0;
}

/* One GPU's sample: sm percent (0..100), memory, over dt seconds ending at now_s. */
static void sample(gp__use_job *j, double sm, int64_t mem, double dt, int64_t now_s)
{
    sm = sm < 0 ? 0 : sm > 100 ? 100 : sm;
    int level = (int)ceil(sm);
    j->c.busy_gpu_s += sm / 100.0 * dt;
    j->c.peak_sm = level > j->c.peak_sm ? level : j->c.peak_sm;
    j->c.peak_memory_mib = mem > j->c.peak_memory_mib ? mem : j->c.peak_memory_mib;
    int64_t from = now_s - (int64_t)dt;
    for (int l = 1; l < GP_STORE_USE_LEVELS; l++) {
        if (sm >= l)
            j->c.below_since[l] = 0;
        else if (j->c.below_since[l] == 0)
            j->c.below_since[l] = from;
    }
    j->c.updated = now_s;
    j->dirty = true;
}

void gp_use_beat(gp_use *u, const char *node, const json_t *running, int64_t now_ms)
{
    pthread_mutex_lock(&u->lock);
    double dt = beat_seconds(u, node, now_ms);
    size_t i, k;
    json_t *r, *g;
    json_array_foreach(running, i, r) {
        json_t *gpus = json_object_get(r, "gpus");
        json_int_t id = json_integer_value(json_object_get(r, "job"));
        gp__use_job *j = id > 0 && json_array_size(gpus) ? job_entry(u, (uint64_t)id) : NULL;
        json_array_foreach(gpus, k, g) {
            json_t *sm = json_object_get(g, "sm_active_pct"), *mem = json_object_get(g, "memory_used_mib");
            if (j && json_is_number(sm))
                sample(j, json_number_value(sm), (int64_t)json_number_value(mem), dt, now_ms / 1000);
        }
    }
    pthread_mutex_unlock(&u->lock);
}

/* Forgets entry i (swapped with the last).  Under lock. */
static void job_forget(gp_use *u, size_t i)
{
    gp_u64map_remove(&u->job_index, u->jobs[i].c.job_id);
    if (i + 1 < u->n_jobs) {
        u->jobs[i] = u->jobs[u->n_jobs - 1];
        gp_u64map_put(&u->job_index, u->jobs[i].c.job_id, (uint32_t)i);
    }
    u->n_jobs--;
}

gp_err gp_use_flush(gp_use *u, gp_store *store, int64_t now_ms, bool force, gp_error *err)
{
    if (!force && now_ms - u->last_flush_ms < GP_USE_FLUSH_MS)
        return GP_OK;
    u->last_flush_ms = now_ms;
    gp_err rc = GP_OK;
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->n_jobs && rc == GP_OK; i++) {
        if (u->jobs[i].dirty) {
            rc = gp_store_job_use_sample(store, &u->jobs[i].c, err);
            u->jobs[i].dirty = false;
        } else if (u->jobs[i].c.updated < now_ms / 1000 - GP_USE_FORGET_S) {
            job_forget(u, i--); /* ended long ago: its row keeps the counters */
        }
    }
    pthread_mutex_unlock(&u->lock);
    return rc;
}

void gp_use_each(gp_use *u, void (*fn)(void *ctx, const gp_store_job_use *c), void *ctx)
{
    pthread_mutex_lock(&u->lock);
    for (size_t i = 0; i < u->n_jobs; i++)
        fn(ctx, &u->jobs[i].c);
    pthread_mutex_unlock(&u->lock);
}
