/* baseline.h - each tenant's usual GPU use for this hour of the week,
 * from the usage intervals the store keeps, for GET /metrics
 * (gpupool_tenant_gpu_baseline{tenant, stat="mean|p90"}) and the alert on
 * a tenant far outside its usual hours.
 *
 * How it is computed.  The hour of the week is UTC's (the hour that
 * starts at now - now % 3600, seen 1, 2, 3 and 4 weeks back).  Each of
 * those four past hours is cut into six 10-minute slices; a slice's
 * sample is the tenant's average GPUs in use during it (the GPU-seconds
 * its subtree's usage intervals overlap the slice with, over 600 s; all
 * GPU models and classes together, as gpupool_tenant_usage_gpus summed
 * over gpu_model).  Up to 24 samples: `mean` is their average (the usual
 * use in that hour), `p90` their 90th percentile by nearest rank (the
 * 22nd of 24 sorted; the busy end of usual).
 *
 * Less history: a week counts only when its hour begins at or after the
 * tenant's first recorded use (the earliest start of a usage interval in
 * its subtree); a week before that would read as zero use, not as usual.
 * `weeks` (0-4) says how many counted; with none the tenant has no
 * baseline (no series) and the alert has nothing to compare with.  A
 * tenant that used GPUs six weeks ago and nothing since counts four weeks
 * of zeros: its usual use in this hour is none.
 *
 * Example: ml/nlp first used GPUs five weeks ago; at Tuesday 14:20 UTC the
 * Tuesday 14:00-15:00 hours of the last four weeks held 8 GPUs for the
 * whole hour in three of them and nothing in one: 18 samples of 8 and 6 of
 * 0: mean 6, p90 8, weeks 4.  Today it holds 40 GPUs at 14:20: the alert
 * (use above 2 x p90 + 4) fires after its `for`.
 *
 * When: recomputed by the first scrape of each hour, through a reader
 * connection: one pass over the usage table per past week (the intervals
 * that overlap its hour, raw: the slices are cut here) and one read of
 * the tenants' first uses (by the usage_by_tenant index); about a second
 * in all on SQLite with a million usage intervals.  Kept until the hour
 * ends; a scrape in the same hour reads what was kept.  Not stored: it is
 * derived from the store and made again after a restart.
 *
 * Threads: any (one mutex, held while a scrape recomputes, so a second
 * scrape of that hour waits for the first's result instead of redoing it).
 * Ownership: gp_baseline owns its JSON; stats are copied out.
 */
#ifndef GP_SERVER_BASELINE_H
#define GP_SERVER_BASELINE_H

#include "store/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum { GP_BASELINE_WEEKS = 4, GP_BASELINE_SLICES = 6, GP_BASELINE_SLICE_S = 600 };

typedef struct gp_baseline {
    pthread_mutex_t lock;
    int64_t hour;         /* the hour computed for (epoch s); -1 none */
    json_t *samples;      /* {"TENANT": [average GPUs of week w's slice s at w x SLICES + s, ...]}: the
                             tenant's own jobs, tenants with usage in those hours only */
    json_t *first_starts; /* {"TENANT": first usage start} */
} gp_baseline;

typedef struct gp_baseline_stat {
    int weeks;   /* weeks of history that counted, 0..GP_BASELINE_WEEKS */
    double mean; /* GPUs */
    double p90;  /* GPUs */
} gp_baseline_stat;

void gp_baseline_init(gp_baseline *b);
void gp_baseline_free(gp_baseline *b);
/* Computes the baseline of now's hour unless it is the one kept; on a
 * store error keeps nothing (the next scrape tries again). */
gp_err gp_baseline_refresh(gp_baseline *b, gp_store *reader, int64_t now, gp_error *err);
/* The baseline of tenant (its subtree) for the hour kept; false when it
 * has no week of history (or nothing is kept). */
bool gp_baseline_of(gp_baseline *b, const char *tenant, gp_baseline_stat *out);

#endif
