/* checkpointer.h - the thread that checkpoints the store's WAL every
 * 500 ms on a connection of its own (store.h, gp_store_checkpoint), so
 * the writer's commits never stall on one for long.  It keeps the WAL file
 * near wal_limit bytes (emptied when larger and the readers allow), and
 * its first checkpoint, at once when started (after the leader's replay),
 * empties the file whatever its size.  Started by the leader's start,
 * stopped at shut-down; the struct is its owner's (gp_server), zeroed
 * before gp_checkpointer_start.
 */
#ifndef GP_SERVER_CHECKPOINTER_H
#define GP_SERVER_CHECKPOINTER_H

#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct gp_checkpointer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool started, stopping;
    int64_t wal_limit; /* bytes */
    gp_store *store;  /* its own connection, opened by start, closed by stop */
} gp_checkpointer;

/* Opens the connection to url and starts the thread. */
gp_err gp_checkpointer_start(gp_checkpointer *c, const char *url, int64_t wal_limit, gp_error *err);
/* Stops the thread (when started) and closes the connection. */
void gp_checkpointer_stop(gp_checkpointer *c);

#endif
