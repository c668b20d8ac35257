/* metrics.h - gpupoold's own measurements for GET /metrics: API requests
 * and latency by route, scheduling pass and store commit durations,
 * preemptions by reason.
 *
 * What the fleet, the tenants and the agents look like is not kept here:
 * a scrape reads it from the engine on the engine thread (api_metrics.c
 * copies a snapshot there and formats it on the API thread).  What is
 * kept here is what happens between scrapes: counters and histograms
 * that API threads (requests) and the engine thread (passes, commits,
 * preemptions) add to under one mutex, and that a scrape copies.
 *
 * Histograms use Prometheus' cumulative buckets (GP_METRICS_BUCKETS upper
 * bounds in seconds, then +Inf): a request of 3 ms adds one to every
 * bucket from le="0.005" up, to _count, and 0.003 to _sum.
 *
 * Request series are bounded: the route is the router's pattern
 * ("/v1/jobs/{id}", never the raw path), the method one of the few the API
 * takes (else "other"), the status a number; at most GP_METRICS_SERIES
 * (route, method, status) series, later ones fold into route "other".
 *
 * Restarted jobs: the GP_METRICS_RESTARTED_JOBS (64) jobs most recently
 * sent back to pending after they ran (a restart after a failure, or a
 * requeue: preempted, node lost, GPU failed), by id, from the same
 * decisions; a scrape reads their counts from the engine (api_metrics.c:
 * gpupool_job_restarts_total).  A job that crash-loops comes back every
 * few minutes at most (the back-off stops at 5), so it stays among the
 * newest unless 64 others were sent back since.
 *
 * Ownership: gp_metrics owns nothing on the heap; copies are the caller's.
 */
#ifndef GP_SERVER_METRICS_H
#define GP_SERVER_METRICS_H

#include "core/engine.h"

#include <pthread.h>
#include <stdint.h>

enum { GP_METRICS_BUCKETS = 12, GP_METRICS_SERIES = 256, GP_METRICS_RESTARTED_JOBS = 64 };

/* The buckets' upper bounds, seconds (the last bucket, +Inf, is implied). */
extern const double gp_metrics_bounds[GP_METRICS_BUCKETS];

typedef struct gp_histogram {
    uint64_t bucket[GP_METRICS_BUCKETS]; /* cumulative: observations <= bound */
    uint64_t count;
    double sum;
} gp_histogram;

typedef struct gp_request_series {
    const char *route;  /* a static pattern (router.c) */
    char method[8];
    int status;
    gp_histogram seconds;
} gp_request_series;

/* Why jobs were preempted: a guarantee reclaimed, the tenant became
 * untrusted, a time limit passed. */
typedef enum gp_preempt_reason {
    GP_PREEMPT_RECLAIM = 0,
    GP_PREEMPT_UNTRUSTED,
    GP_PREEMPT_TIME_LIMIT,
    GP_PREEMPT_REASONS
} gp_preempt_reason;

extern const char *const gp_preempt_reason_names[GP_PREEMPT_REASONS];

/* Bookings' state changes by the state they went to (gp_booking_state),
 * and the notes that change no state (a substitution, a shortage) last. */
#define GP_METRICS_BOOKING_NOTE (GP_BOOKING_REFUSED + 1)
#define GP_METRICS_BOOKING_KINDS (GP_METRICS_BOOKING_NOTE + 1)

typedef struct gp_metrics {
    pthread_mutex_t lock;
    gp_request_series requests[GP_METRICS_SERIES];
    size_t n_requests;
    gp_histogram pass_seconds, commit_seconds;
    uint64_t preemptions[GP_PREEMPT_REASONS];
    uint64_t booking_changes[GP_METRICS_BOOKING_KINDS];
    uint64_t restarted[GP_METRICS_RESTARTED_JOBS]; /* job ids, see "Restarted jobs" */
    int64_t restarted_at[GP_METRICS_RESTARTED_JOBS];
    size_t n_restarted;
} gp_metrics;

void gp_metrics_init(gp_metrics *m);
void gp_metrics_destroy(gp_metrics *m);

void gp_histogram_observe(gp_histogram *h, double seconds);

/* Any thread. */
void gp_metrics_request(gp_metrics *m, const char *route, const char *method, int status, double seconds);
/* The engine thread. */
void gp_metrics_pass(gp_metrics *m, double seconds);
void gp_metrics_commit(gp_metrics *m, double seconds);
/* Counts the preemptions among the engine's pending decisions and notes
 * the jobs sent back to pending after they ran (called for each live
 * event, as the journal's observer). */
void gp_metrics_observe(gp_metrics *m, const gp_engine *e);
/* The restarted jobs' ids (up to GP_METRICS_RESTARTED_JOBS into ids);
 * returns how many. */
size_t gp_metrics_restarted(gp_metrics *m, uint64_t *ids);

/* A consistent copy of everything, for a scrape. */
void gp_metrics_copy(gp_metrics *m, gp_metrics *out);

#endif
