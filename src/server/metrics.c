/* metrics.c - gpupoold's counters and histograms between scrapes (see
 * metrics.h).
 *
 * Every update is a few additions under one mutex; a scrape copies the
 * whole struct under the same mutex (a few hundred KiB at most), so a
 * scrape never holds up a request or the engine thread for longer than a
 * memcpy.
 */
#include "server/metrics.h"

#include <stdio.h>
#include <string.h>

const double gp_metrics_bounds[GP_METRICS_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    2.5};

const char *const gp_preempt_reason_names[GP_PREEMPT_REASONS] = {"reclaim", "untrusted", "time_limit"};

void gp_metrics_init(gp_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
}

void gp_metrics_destroy(gp_metrics *m)
{
    pthread_mutex_destroy(&m->lock);
}

void gp_histogram_observe(gp_histogram *h, double seconds)
{
    for (int i = 0; i < GP_METRICS_BUCKETS; i++)
        if (seconds <= gp_metrics_bounds[i])
            h->bucket[i]++;
    h->count++;
    h->sum += seconds;
}

static const char *method_label(const char *method)
{
    static const char *const known[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(method, known[i]) == 0)
            return known[i];
    return "other";
}

/* The series of (route, method, status); the last slot, route "other",
 * takes everything once the table is full. */
static gp_request_series *series_for(gp_metrics *m, const char *route, const char *method, int status)
{
    for (size_t i = 0; i < m->n_requests; i++) {
        gp_request_series *s = &m->requests[i];
        if (s->status == status && strcmp(s->route, route) == 0 && strcmp(s->method, method) == 0)
            return s;
    }
    if (m->n_requests == GP_METRICS_SERIES - 1) {
        route = "other";
        method = "other";
        status = 0;
        for (size_t i = 0; i < m->n_requests; i++)
            if (strcmp(m->requests[i].route, "other") == 0 && m->requests[i].status == 0)
                return &m->requests[i];
    }
    gp_request_series *s = &m->requests[m->n_requests++];
    s->route = route;
    snprintf(s->method, sizeof s->method, "%s", method);
    s->status = status;
    return s;
}

void gp_metrics_request(gp_metrics *m, const char *route, const char *method, int status, double seconds)
{
    pthread_mutex_lock(&m->lock);
    gp_histogram_observe(&series_for(m, route, method_label(method), status)->seconds, seconds);
    pthread_mutex_unlock(&m->lock);
}

void gp_metrics_pass(gp_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->lock);
    gp_histogram_observe(&m->pass_seconds, seconds);
    pthread_mutex_unlock(&m->lock);
}

void gp_metrics_commit(gp_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->lock);
    gp_histogram_observe(&m->commit_seconds, seconds);
    pthread_mutex_unlock(&m->lock);
}

/* A job that ran and is pending again: restarted after a failure or requeued. */
static bool sent_back(const gp_decision *d)
{
    return d->kind == GP_DEC_TRANSITION && d->to == GP_JOB_PENDING &&
           (d->from == GP_JOB_RUNNING || d->from == GP_JOB_ADMITTED || d->from == GP_JOB_PREEMPTING);
}

/* Under lock: job id was sent back at time; a new id takes the oldest slot. */
static void restarted_note(gp_metrics *m, uint64_t id, int64_t time)
{
    size_t slot = m->n_restarted;
    for (size_t i = 0; i < m->n_restarted; i++)
        if (m->restarted[i] == id) {
            slot = i;
            break;
        }
    if (slot == GP_METRICS_RESTARTED_JOBS) {
        slot = 0;
        for (size_t i = 1; i < m->n_restarted; i++)
            if (m->restarted_at[i] < m->restarted_at[slot])
                slot = i;
    } else if (slot == m->n_restarted) {
        m->n_restarted++;
    }
    m->restarted[slot] = id;
    m->restarted_at[slot] = time;
}

void gp_metrics_observe(gp_metrics *m, const gp_engine *e)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(e, &n);
    uint64_t add[GP_PREEMPT_REASONS] = {0}, booked[GP_METRICS_BOOKING_KINDS] = {0};
    for (size_t i = 0; i < n; i++) {
        if (ds[i].kind == GP_DEC_BOOKING && ds[i].booking_to >= 0 && ds[i].booking_to < GP_METRICS_BOOKING_NOTE)
            booked[ds[i].booking_from == ds[i].booking_to ? GP_METRICS_BOOKING_NOTE : ds[i].booking_to]++;
        else if (ds[i].kind == GP_DEC_PREEMPT)
            add[ds[i].by_job ? GP_PREEMPT_RECLAIM : GP_PREEMPT_UNTRUSTED]++;
        else if (ds[i].kind == GP_DEC_STOP && strcmp(ds[i].reason, "time_limit") == 0)
            add[GP_PREEMPT_TIME_LIMIT]++;
    }
    pthread_mutex_lock(&m->lock);
    for (int r = 0; r < GP_PREEMPT_REASONS; r++)
        m->preemptions[r] += add[r];
    for (int k = 0; k < GP_METRICS_BOOKING_KINDS; k++)
        m->booking_changes[k] += booked[k];
    for (size_t i = 0; i < n; i++)
        if (sent_back(&ds[i]))
            restarted_note(m, ds[i].job_id, ds[i].time);
    pthread_mutex_unlock(&m->lock);
}

size_t gp_metrics_restarted(gp_metrics *m, uint64_t *ids)
{
    pthread_mutex_lock(&m->lock);
    size_t n = m->n_restarted;
    memcpy(ids, m->restarted, n * sizeof *ids);
    pthread_mutex_unlock(&m->lock);
    return n;
}

void gp_metrics_copy(gp_metrics *m, gp_metrics *out)
{
    pthread_mutex_lock(&m->lock);
    memcpy(out->requests, m->requests, m->n_requests * sizeof *m->requests);
    out->n_requests = m->n_requests;
    out->pass_seconds = m->pass_seconds;
    out->commit_seconds = m->commit_seconds;
    memcpy(out->preemptions, m->preemptions, sizeof out->preemptions);
    memcpy(out->booking_changes, m->booking_changes, sizeof out->booking_changes);
    pthread_mutex_unlock(&m->lock);
}
