/* baseline.c - a tenant's usual GPU use for this hour of the week (see
 * baseline.h for how it is computed and what less history does). */
#include "server/baseline.h"

#include "server/auth.h"

#include <stdlib.h>
#include <string.h>

enum { WEEK_S = 7 * 24 * 3600, HOUR_S = 3600, SAMPLES = GP_BASELINE_WEEKS * GP_BASELINE_SLICES };

void gp_baseline_init(gp_baseline *b)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    b->hour = -1;
}

/* Under lock: forget what is kept. */
static void clear(gp_baseline *b)
{
    for (int w = 0; w < GP_BASELINE_WEEKS; w++)
        for (int s = 0; s < GP_BASELINE_SLICES; s++) {
            json_decref(b->slices[w][s]);
            b->slices[w][s] = NULL;
        }
    json_decref(b->first_starts);
    b->first_starts = NULL;
    b->hour = -1;
}

void gp_baseline_free(gp_baseline *b)
{
    clear(b);
    pthread_mutex_destroy(&b->lock);
}

/* One slice: {"TENANT": average GPUs} from the store's GPU-seconds by
 * tenant, GPU type and class in [from, from + slice). */
static gp_err slice_query(gp_store *reader, int64_t from, int64_t now, json_t **out, gp_error *err)
{
    json_t *usage = NULL;
    gp_err rc = gp_store_usage_query(reader, NULL, 0, NULL, false, from, from + GP_BASELINE_SLICE_S, now, &usage, err);
    if (rc != GP_OK)
        return rc;
    json_t *gpus = json_object(), *row;
    size_t i;
    json_array_foreach(json_object_get(usage, "usage"), i, row) {
        const char *tenant = json_string_value(json_object_get(row, "tenant"));
        double add = json_number_value(json_object_get(row, "gpu_seconds")) / GP_BASELINE_SLICE_S;
        if (tenant)
            json_object_set_new(gpus, tenant, json_real(json_number_value(json_object_get(gpus, tenant)) + add));
    }
    json_decref(usage);
    *out = gpus;
    return GP_OK;
}

gp_err gp_baseline_refresh(gp_baseline *b, gp_store *reader, int64_t now, gp_error *err)
{
    int64_t hour = now - now % HOUR_S;
    gp_err rc = GP_OK;
    pthread_mutex_lock(&b->lock);
    if (b->hour != hour) {
        clear(b);
        rc = gp_store_usage_first_starts(reader, &b->first_starts, err);
        for (int w = 0; rc == GP_OK && w < GP_BASELINE_WEEKS; w++)
            for (int s = 0; rc == GP_OK && s < GP_BASELINE_SLICES; s++)
                rc = slice_query(reader, hour - (int64_t)(w + 1) * WEEK_S + (int64_t)s * GP_BASELINE_SLICE_S, now,
                                 &b->slices[w][s], err);
        if (rc == GP_OK)
            b->hour = hour;
        else
            clear(b);
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* The earliest first use in tenant's subtree; INT64_MAX when none. */
static int64_t subtree_first_start(const json_t *firsts, const char *tenant)
{
    int64_t first = INT64_MAX;
    const char *path;
    json_t *v;
    json_object_foreach((json_t *)firsts, path, v) {
        if (gp_scope_covers(tenant, path) && json_integer_value(v) < first)
            first = json_integer_value(v);
    }
    return first;
}

static double subtree_gpus(const json_t *slice, const char *tenant)
{
    double gpus = 0;
    const char *path;
    json_t *v;
    json_object_foreach((json_t *)slice, path, v) {
        if (gp_scope_covers(tenant, path))
            gpus += json_number_value(v);
    }
    return gpus;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

bool gp_baseline_of(gp_baseline *b, const char *tenant, gp_baseline_stat *out)
{
    double samples[SAMPLES], sum = 0;
    int n = 0;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&b->lock);
    int64_t first = b->hour >= 0 ? subtree_first_start(b->first_starts, tenant) : INT64_MAX;
    for (int w = 0; w < GP_BASELINE_WEEKS; w++) {
        if (first > b->hour - (int64_t)(w + 1) * WEEK_S)
            continue; /* before its first use: no history, not zero use */
        out->weeks++;
        for (int s = 0; s < GP_BASELINE_SLICES; s++) {
            samples[n] = subtree_gpus(b->slices[w][s], tenant);
            sum += samples[n++];
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (n == 0)
        return false;
    qsort(samples, (size_t)n, sizeof *samples, by_value);
    int rank = (9 * n + 9) / 10; /* nearest rank: ceil(0.9 n) */
    out->mean = sum / n;
    out->p90 = samples[rank - 1];
    return true;
}
