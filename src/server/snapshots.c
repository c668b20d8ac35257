/* snapshots.c - when to snapshot, and the writer thread (see snapshots.h). */
#include "server/snapshots.h"

#include "server/log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Seals and stores one copy; logs it (write_ms from t0, the child's start). */
static void write_one(gp_snapshots *sn, gp_snapshot_parts *p, int64_t t0)
{
    unsigned char *sealed = NULL;
    size_t len = 0;
    gp_error err;
    gp_err rc = gp_snapshot_seal(p, &sealed, &len, &err);
    if (rc == GP_OK)
        rc = gp_store_snapshot_put(sn->store, p->seq, time(NULL), sealed, len, GP_STORE_SNAPSHOTS_KEPT, &err);
    free(sealed);
    if (rc != GP_OK) {
        gp_log(GP_LOG_WARN, "snapshot_failed", "seq=%lld error=\"%s\"", (long long)p->seq, err.message);
        return;
    }
    atomic_store(&sn->last_bytes, len);
    atomic_fetch_add(&sn->written, 1);
    gp_log(GP_LOG_INFO, "snapshot_written", "seq=%lld bytes=%zu write_ms=%lld", (long long)p->seq, len,
           (long long)(mono_ms() - t0));
}

/* Reads the child's parts, then seals and stores them. */
static void collect_one(gp_snapshots *sn, gp_snapshot_child *c, int64_t seq)
{
    int64_t t0 = mono_ms();
    gp_snapshot_parts p;
    gp_error err;
    if (gp_snapshot_child_collect(c, &p, &err) != GP_OK) {
        gp_log(GP_LOG_WARN, "snapshot_failed", "seq=%lld error=\"%s\"", (long long)seq, err.message);
        return;
    }
    write_one(sn, &p, t0);
    gp_snapshot_parts_free(&p);
}

static void *writer_thread(void *arg)
{
    gp_snapshots *sn = arg;
    pthread_mutex_lock(&sn->lock);
    for (;;) {
        while (!sn->busy && !sn->stopping)
            pthread_cond_wait(&sn->wake, &sn->lock);
        if (!sn->busy)
            break;
        gp_snapshot_child c = sn->child;
        int64_t seq = sn->child_seq;
        pthread_mutex_unlock(&sn->lock);
        collect_one(sn, &c, seq);
        pthread_mutex_lock(&sn->lock);
        sn->busy = false;
    }
    pthread_mutex_unlock(&sn->lock);
    return NULL;
}

gp_err gp_snapshots_start(gp_snapshots *sn, const char *store_url, int64_t every_events, int64_t every_s,
                          int64_t covered, gp_error *err)
{
    memset(sn, 0, sizeof *sn);
    sn->every_events = every_events;
    sn->every_ms = every_s * 1000;
    sn->last_seq = covered;
    sn->last_ms = mono_ms();
    sn->seq_read = -1;
    if (every_events <= 0)
        return GP_OK;
    gp_err rc = gp_store_open(store_url, false, &sn->store, err);
    if (rc)
        return rc;
    pthread_mutex_init(&sn->lock, NULL);
    pthread_cond_init(&sn->wake, NULL);
    if (pthread_create(&sn->thread, NULL, writer_thread, sn) != 0) {
        gp_store_close(sn->store);
        return gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the snapshot writer");
    }
    sn->started = true;
    return GP_OK;
}

int64_t gp_snapshots_events_between(int64_t every_events, uint64_t last_bytes)
{
    int64_t by_size = (int64_t)(last_bytes / GP_SNAPSHOT_BYTES_PER_EVENT);
    return by_size > every_events ? by_size : every_events;
}

static bool due(const gp_snapshots *sn, int64_t seq, int64_t now_ms)
{
    int64_t events = seq - sn->last_seq;
    return events >= gp_snapshots_events_between(sn->every_events, atomic_load(&sn->last_bytes)) ||
           (events > 0 && now_ms - sn->last_ms >= sn->every_ms);
}

bool gp_snapshots_maybe_due(gp_snapshots *sn, int64_t logged)
{
    if (!sn->started)
        return false;
    pthread_mutex_lock(&sn->lock);
    bool busy = sn->busy;
    pthread_mutex_unlock(&sn->lock);
    if (busy)
        return false; /* the previous one is still being written: a later commit asks again */
    return sn->seq_read < 0 || due(sn, sn->seq_read + (logged - sn->logged_read), mono_ms());
}

void gp_snapshots_after_commit(gp_snapshots *sn, gp_store *store, const gp_replayer *r, int64_t logged,
                               json_t *(*daemon)(void *ctx), void *ctx)
{
    if (!gp_snapshots_maybe_due(sn, logged))
        return;
    int64_t now_ms = mono_ms(), seq = gp_store_last_seq(store);
    sn->seq_read = seq;
    sn->logged_read = logged;
    if (!due(sn, seq, now_ms))
        return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *extra = daemon ? daemon(ctx) : NULL;
    gp_snapshot_child c;
    gp_error err;
    gp_err rc = gp_replayer_snapshot_fork(r, seq, extra, &c, &err);
    json_decref(extra);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sn->last_ms = now_ms; /* after a failure too: not again at once */
    if (rc != GP_OK) {
        gp_log(GP_LOG_WARN, "snapshot_failed", "seq=%lld error=\"%s\"", (long long)seq, err.message);
        return;
    }
    gp_log(GP_LOG_INFO, "snapshot", "seq=%lld child=%d stall_us=%lld", (long long)seq, (int)c.pid,
           (long long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
    sn->last_seq = seq;
    pthread_mutex_lock(&sn->lock);
    sn->child = c;
    sn->child_seq = seq;
    sn->busy = true;
    pthread_cond_signal(&sn->wake);
    pthread_mutex_unlock(&sn->lock);
}

void gp_snapshots_stop(gp_snapshots *sn)
{
    if (!sn->started)
        return;
    pthread_mutex_lock(&sn->lock);
    sn->stopping = true;
    pthread_cond_signal(&sn->wake);
    pthread_mutex_unlock(&sn->lock);
    pthread_join(sn->thread, NULL);
    gp_store_close(sn->store);
    pthread_mutex_destroy(&sn->lock);
    pthread_cond_destroy(&sn->wake);
    sn->started = false;
}
