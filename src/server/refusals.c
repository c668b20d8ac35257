/* refusals.c - refused requests into the audit log, rate-limited (see
 * refusals.h for the rule and its bound). */
#include "server/refusals.h"

#include "util/text.h"

#include <stdio.h>
#include <string.h>

enum { WINDOW_MS = 60 * 1000, TOTAL_FACTOR = 20, FLUSH_CHUNK = 32, RESERVED = GP_REFUSAL_SOURCES + 1 };

void gp_refusals_init(gp_refusals *r, int per_min)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->per_min = per_min;
}

void gp_refusals_destroy(gp_refusals *r)
{
    pthread_mutex_destroy(&r->lock);
}

static bool same_source(const gp_refusal *a, const gp_refusal *b)
{
    return a->status == b->status && strcmp(a->source, b->source) == 0 && strcmp(a->actor, b->actor) == 0;
}

/* Under lock: a row to write (suppressed 0) or a summary of that many. */
static bool pending_add(gp_refusals *r, const gp_refusal *x, int64_t suppressed)
{
    if (r->n_pending == GP_REFUSAL_PENDING)
        return false;
    r->pending[r->n_pending] = *x;
    r->pending_suppressed[r->n_pending++] = suppressed;
    return true;
}

/* Under lock: the minute is over (or gpupoold stops): a summary per source
 * that lost refusals, then a fresh minute.  Rows leave room for the
 * summaries (RESERVED); a count that still finds no room (no flush for
 * minutes: a follower) goes on into the next minute's shared count. */
static void window_end(gp_refusals *r, int64_t now_ms)
{
    int64_t unsorted = r->suppressed_unsorted;
    for (int i = 0; i < r->n_sources; i++)
        if (r->sources[i].suppressed > 0 && !pending_add(r, &r->sources[i].last, r->sources[i].suppressed))
            unsorted += r->sources[i].suppressed;
    gp_refusal other = {.request_id = "-", .actor = "-", .role = "-", .source = "more sources", .target = "-"};
    if (unsorted > 0 && pending_add(r, &other, unsorted))
        unsorted = 0;
    r->n_sources = 0;
    r->recorded = 0;
    r->suppressed_unsorted = unsorted;
    r->window_ms = now_ms;
}

static gp_refusal_source *source_of(gp_refusals *r, const gp_refusal *x)
{
    for (int i = 0; i < r->n_sources; i++)
        if (same_source(&r->sources[i].last, x))
            return &r->sources[i];
    if (r->n_sources == GP_REFUSAL_SOURCES)
        return NULL;
    gp_refusal_source *s = &r->sources[r->n_sources++];
    memset(s, 0, sizeof *s);
    return s;
}

void gp_refusals_note(gp_refusals *r, const gp_refusal *x, int64_t now_ms)
{
    if (r->per_min <= 0)
        return;
    pthread_mutex_lock(&r->lock);
    if (now_ms - r->window_ms >= WINDOW_MS)
        window_end(r, now_ms);
    gp_refusal_source *s = source_of(r, x);
    if (!s) {
        r->suppressed_unsorted++;
    } else {
        s->last = *x;
        bool room = s->recorded < r->per_min && r->recorded < TOTAL_FACTOR * r->per_min &&
                    r->n_pending < GP_REFUSAL_PENDING - RESERVED;
        if (room && pending_add(r, x, 0)) {
            s->recorded++;
            r->recorded++;
        } else {
            s->suppressed++;
        }
    }
    pthread_mutex_unlock(&r->lock);
}

/* One audit row's result: "403 forbidden: role member may not ...; from
 * 10.0.0.9", or a summary: "401 unauthorized: 4990 more refusals
 * suppressed; from 10.0.0.9". */
static void result_text(const gp_refusal *x, int64_t suppressed, char *out, size_t cap)
{
    if (suppressed == 0)
        snprintf(out, cap, "%d %s; from %s", x->status, x->reason, x->source);
    else if (x->status)
        snprintf(out, cap, "%d %s: %lld more refusals suppressed; from %s", x->status,
                 x->status == 401 ? "unauthorized" : "forbidden", (long long)suppressed, x->source);
    else
        snprintf(out, cap, "%lld more refusals suppressed; from %s", (long long)suppressed, x->source);
}

static gp_err append(gp_store *s, const gp_refusal *x, int64_t suppressed, int64_t now, gp_error *err)
{
    char result[360], target[sizeof x->target];
    result_text(x, suppressed, result, sizeof result);
    snprintf(target, sizeof target, "%s", x->target);
    gp_utf8_scrub(result); /* a path or message quoting bytes a client sent */
    gp_utf8_scrub(target);
    gp_store_audit a = {.time = now,
                        .request_id = x->request_id,
                        .actor = x->actor,
                        .role = x->role,
                        .action = "request.refused",
                        .target = target,
                        .result = result};
    return gp_store_audit_append(s, &a, err);
}

gp_err gp_refusals_flush(gp_refusals *r, gp_store *s, int64_t now_ms, int64_t now, bool ending, gp_error *err)
{
    gp_refusal rows[FLUSH_CHUNK];
    int64_t suppressed[FLUSH_CHUNK];
    gp_err rc = GP_OK;
    int n;
    do { /* in chunks, the lock not held while the store writes */
        pthread_mutex_lock(&r->lock);
        if (ending || ((r->n_sources > 0 || r->suppressed_unsorted > 0) && now_ms - r->window_ms >= WINDOW_MS))
            window_end(r, now_ms);
        ending = false;
        n = r->n_pending < FLUSH_CHUNK ? r->n_pending : FLUSH_CHUNK;
        memcpy(rows, r->pending, (size_t)n * sizeof *rows);
        memcpy(suppressed, r->pending_suppressed, (size_t)n * sizeof *suppressed);
        r->n_pending -= n;
        memmove(r->pending, r->pending + n, (size_t)r->n_pending * sizeof *r->pending);
        memmove(r->pending_suppressed, r->pending_suppressed + n, (size_t)r->n_pending * sizeof *suppressed);
        pthread_mutex_unlock(&r->lock);
        for (int i = 0; rc == GP_OK && i < n; i++)
            rc = append(s, &rows[i], suppressed[i], now, err);
    } while (rc == GP_OK && n > 0);
    return rc;
}
