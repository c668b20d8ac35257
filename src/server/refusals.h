/* refusals.h - refused requests (401, 403) into the hash-chained audit
 * log, rate-limited so that a flood cannot grow it without bound.
 *
 * A connection thread notes a refusal (gp_refusals_note: a lock, a copy,
 * never the store); the engine thread writes what was noted as audit rows
 * (action "request.refused") in the batch it is about to commit
 * (gp_refusals_flush, beside the tokens' last uses), so a refusal costs
 * the serving thread a mutex and never waits for a commit.
 *
 * Rate: per source -- the remote address, the status and the token id
 * ("-" unknown) -- at most per_min rows per minute, and at most 20 x
 * per_min rows a minute in all; past that a refusal is counted, and when
 * the minute ends (or gpupoold stops) one row per source says how many:
 * "401 unauthorized: 4990 more refusals suppressed".  At most 64 sources
 * are told apart in a minute; the rest share one count.  So a minute adds
 * at most 20 x per_min + 65 rows, whatever comes in, and every refusal
 * is a row or counted in one.  Example, per_min 10,
 * 5,000 bad tokens from 10.0.0.9 in one minute: 10 rows "401
 * unauthorized: unknown or revoked token ...; from 10.0.0.9", then one
 * "401 unauthorized: 4990 more refusals suppressed; from 10.0.0.9".
 *
 * Ownership: gp_refusals is embedded in the server (fixed arrays, no
 * allocation); gp_refusals_note copies what it is given.
 */
#ifndef GP_SERVER_REFUSALS_H
#define GP_SERVER_REFUSALS_H

#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum { GP_REFUSAL_SOURCES = 64, GP_REFUSAL_PENDING = 256 };

/* One refusal as the audit row will show it. */
typedef struct gp_refusal {
    char request_id[48];
    char actor[24];   /* the token id, "-" when none is known */
    char role[16];    /* its role, "-" */
    char source[48];  /* the remote address */
    int status;       /* 401, 403 */
    char target[160]; /* "METHOD PATH" */
    char reason[240]; /* "forbidden: role member may not ..." */
} gp_refusal;

typedef struct gp_refusal_source {
    gp_refusal last;    /* the last refusal seen: a summary row names its source */
    int recorded;       /* rows this minute */
    int64_t suppressed; /* refusals past the limit this minute */
} gp_refusal_source;

typedef struct gp_refusals {
    pthread_mutex_t lock;
    int per_min;           /* 0: refusals are not audited */
    int64_t window_ms;     /* when this minute began (wall-clock ms) */
    int recorded;          /* rows this minute, every source */
    int64_t suppressed_unsorted; /* past the 64 sources told apart */
    gp_refusal_source sources[GP_REFUSAL_SOURCES];
    int n_sources;
    gp_refusal pending[GP_REFUSAL_PENDING]; /* rows to write, summaries too */
    int64_t pending_suppressed[GP_REFUSAL_PENDING]; /* 0: the refusal itself; N: a summary of N */
    int n_pending;
} gp_refusals;

void gp_refusals_init(gp_refusals *r, int per_min);
void gp_refusals_destroy(gp_refusals *r);
/* Any thread: a refusal, kept for the next flush or counted. */
void gp_refusals_note(gp_refusals *r, const gp_refusal *x, int64_t now_ms);
/* The engine thread (or the stop, ending: every count written now): the
 * rows noted so far, appended to the audit chain in s's open transaction. */
gp_err gp_refusals_flush(gp_refusals *r, gp_store *s, int64_t now_ms, int64_t now, bool ending, gp_error *err);

#endif
