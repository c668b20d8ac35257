/* checkpointer.c - the WAL checkpoint thread (checkpointer.h). */
#include "server/checkpointer.h"

#include "server/clock.h"
#include "server/log.h"

enum { CHECKPOINT_EVERY_MS = 500 };

static void checkpoint(gp_checkpointer *c, int64_t wal_limit)
{
    gp_error err;
    if (gp_store_checkpoint(c->store, wal_limit, &err) != GP_OK)
        gp_log(GP_LOG_WARN, "checkpoint", "error=\"%s\"", err.message);
}

static void *checkpoint_thread(void *arg)
{
    gp_checkpointer *c = arg;
    checkpoint(c, 0); /* at start: what a crash or the replay left goes */
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec ts = gp_deadline_after(CLOCK_REALTIME, CHECKPOINT_EVERY_MS);
        pthread_cond_timedwait(&c->wake, &c->lock, &ts);
        if (c->stopping)
            break;
        pthread_mutex_unlock(&c->lock);
        checkpoint(c, c->wal_limit);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

gp_err gp_checkpointer_start(gp_checkpointer *c, const char *url, int64_t wal_limit, gp_error *err)
{
    c->wal_limit = wal_limit;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    gp_err rc = gp_store_open(url, false, &c->store, err);
    if (rc == GP_OK && pthread_create(&c->thread, NULL, checkpoint_thread, c) != 0)
        rc = gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the checkpoint thread");
    c->started = rc == GP_OK;
    return rc;
}

void gp_checkpointer_stop(gp_checkpointer *c)
{
    if (c->started) {
        pthread_mutex_lock(&c->lock);
        c->stopping = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        c->started = false;
    }
    gp_store_close(c->store);
    c->store = NULL;
}
