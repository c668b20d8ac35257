/* readers.h - the pool of store reader connections the API threads (and
 * the ledger's verification at a leader's start) read from, reused across
 * requests.  Any thread; the pool's lock guards the free list only.
 *
 * A connection is the taker's until it is given back; the pool owns the
 * free ones and closes them at gp_readers_close.  One the database broke
 * (PostgreSQL restarted) is closed when given back, not kept.
 */
#ifndef GP_SERVER_READERS_H
#define GP_SERVER_READERS_H

#include "store/store.h"

#include <pthread.h>

typedef struct gp_readers {
    pthread_mutex_t lock;
    gp_store *free_list[32];
    int n_free;
    const char *url;  /* the store's url: the caller's, outlives the pool */
} gp_readers;

void gp_readers_init(gp_readers *r, const char *url);
/* A reader connection for this thread's request (opened when none is
 * free); NULL with err when none can be opened.  Give it back after. */
gp_store *gp_readers_take(gp_readers *r, gp_error *err);
/* s may be NULL. */
void gp_readers_give(gp_readers *r, gp_store *s);
/* Closes the free connections (every taken one given back first). */
void gp_readers_close(gp_readers *r);

#endif
