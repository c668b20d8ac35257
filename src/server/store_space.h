/* store_space.h - room for writes on the store's filesystem (--store-reserve).
 *
 * Before the engine thread runs a group of writes it asks whether the
 * SQLite file's filesystem has at least the reserve free (statvfs, a few
 * microseconds).  While it has not, every write is answered 503 with
 * code store_full and changes nothing (not the engine, not the store);
 * reads go on, and so do the daemon's own small writes (the lease, the
 * scheduling pass, agents' heartbeats are not writes): they live off the
 * reserve.  Writes resume by themselves at the first check that finds the
 * reserve free again.  Each turn is logged once (event=store_full,
 * event=store_space_back).  PostgreSQL stores are not checked: the
 * database server's disk is its own.
 *
 * Threads: the engine thread only.  The struct is its owner's (gp_server).
 */
#ifndef GP_SERVER_STORE_SPACE_H
#define GP_SERVER_STORE_SPACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct gp_store_space {
    char dir[4096];   /* the SQLite file's folder; "" = not checked */
    int64_t reserve;  /* bytes */
    int64_t free;     /* bytes free at the last check */
    bool low;         /* the last check found less than reserve free */
} gp_store_space;

/* store_url as --store takes it; reserve 0 turns the check off. */
void gp_store_space_init(gp_store_space *s, const char *store_url, int64_t reserve);
/* Checks now; true while writes must be refused. */
bool gp_store_space_low(gp_store_space *s);
/* A new reference: the 503 body a refused write gets. */
json_t *gp_store_space_refusal(const gp_store_space *s);

#endif
