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
    json_decref(b->samples);
    json_decref(b->first_starts);
    b->samples = b->first_starts = NULL;
    b->hour = -1;
}

void gp_baseline_free(gp_baseline *b)
{
    clear(b);
    pthread_mutex_destroy(&b->lock);
}

/* One past week's hour being read from the store. */
typedef struct week_pass {
    json_t *samples;
    int week;      /* 0 = one week back */
    int64_t begin; /* its hour's start */
} week_pass;

/* The tenant's samples, all 0 the first time it is met. */
static json_t *samples_of(json_t *samples, const char *tenant)
{
    json_t *a = json_object_get(samples, tenant);
    if (a)
        return a;
    a = json_array();
    for (int i = 0; i < SAMPLES; i++)
        json_array_append_new(a, json_real(0));
    json_object_set_new(samples, tenant, a);
    return a;
}

/* One usage interval: its GPUs x the part of each slice it covers. */
static gp_err add_interval(void *ctx, const char *tenant, int64_t start, int64_t end, int64_t milli_gpus,
                           gp_error *err)
{
    (void)err;
    week_pass *p = ctx;
    json_t *a = samples_of(p->samples, tenant);
    for (int s = 0; s < GP_BASELINE_SLICES; s++) {
        int64_t from = p->begin + (int64_t)s * GP_BASELINE_SLICE_S, to = from + GP_BASELINE_SLICE_S;
        int64_t overlap = (end < to ? end : to) - (start > from ? start : from);
        json_t *v = json_array_get(a, (size_t)(p->week * GP_BASELINE_SLICES + s));
        if (overlap > 0)
            json_real_set(v, json_real_value(v) + (double)overlap * (double)milli_gpus / 1000.0 / GP_BASELINE_SLICE_S);
    }
    return GP_OK;
}

gp_err gp_baseline_refresh(gp_baseline *b, gp_store *reader, int64_t now, gp_error *err)
{
    int64_t hour = now - now % HOUR_S;
    gp_err rc = GP_OK;
    pthread_mutex_lock(&b->lock);
    if (b->hour != hour) {
        clear(b);
        b->samples = json_object();
        rc = gp_store_usage_first_starts(reader, &b->first_starts, err);
        for (int w = 0; rc == GP_OK && w < GP_BASELINE_WEEKS; w++) {
            week_pass p = {.samples = b->samples, .week = w, .begin = hour - (int64_t)(w + 1) * WEEK_S};
            rc = gp_store_usage_scan(reader, p.begin, p.begin + HOUR_S, now, add_interval, &p, err);
        }
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

/* The subtree's samples summed into out (SAMPLES of them). */
static void subtree_samples(const json_t *samples, const char *tenant, double *out)
{
    const char *path;
    json_t *a;
    memset(out, 0, SAMPLES * sizeof *out);
    json_object_foreach((json_t *)samples, path, a) {
        for (int i = 0; gp_scope_covers(tenant, path) && i < SAMPLES; i++)
            out[i] += json_real_value(json_array_get(a, (size_t)i));
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

bool gp_baseline_of(gp_baseline *b, const char *tenant, gp_baseline_stat *out)
{
    double all[SAMPLES], samples[SAMPLES], sum = 0;
    int n = 0;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&b->lock);
    int64_t first = b->hour >= 0 ? subtree_first_start(b->first_starts, tenant) : INT64_MAX;
    if (first != INT64_MAX)
        subtree_samples(b->samples, tenant, all);
    for (int w = 0; first != INT64_MAX && w < GP_BASELINE_WEEKS; w++) {
        if (first > b->hour - (int64_t)(w + 1) * WEEK_S)
            continue; /* before its first use: no history, not zero use */
        out->weeks++;
        for (int s = 0; s < GP_BASELINE_SLICES; s++) {
            samples[n] = all[w * GP_BASELINE_SLICES + s];
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
