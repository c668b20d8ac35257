/* auth_failures.h - failed sign-ins by remote address and by user name,
 * counted over the last ten minutes in two small tables, for GET /metrics
 * (gpupool_signin_failures_by_address, _by_user) and the alerts on
 * repeated failures (examples/prometheus/alerts.yml).
 *
 * A failed sign-in is a credential that was presented and refused: an
 * unknown or revoked token, an expired one, an Authorization header of
 * another kind ("Basic": a password tried; http.c), and whatever refusal
 * of a provider token a caller notes here.  A request with no
 * Authorization at all is not one (nothing was guessed).
 *
 * Bounded: each table tells GP_AUTH_FAILURE_KEYS (64) keys apart.  Every
 * key counts its failures per minute in GP_AUTH_FAILURE_MINUTES (10)
 * buckets, so its count is the failures of the current minute and the nine
 * before (a minute older drops out whole: no decay to reason about).  A
 * key not in a full table takes the slot of the key with the fewest
 * failures in the window (the least recently failed among equals), and
 * starts at 1.  So a key with more failures than the table's smallest is
 * never pushed out: a spray from thousands of addresses, one try each,
 * churns the low slots while one address trying 50 passwords keeps its
 * row.  Every failure also adds to a plain counter (total), whatever the
 * tables keep.
 *
 * Example: 12 unknown tokens from 10.0.0.9 at 10:00-10:02 and an expired
 * token of alice's at 10:05: at 10:06 a scrape shows
 * by_address{address="10.0.0.9"} 13 (the expired one came from there too),
 * by_user{user="alice"} 1, total 13; at 10:13 the twelve have left the
 * window (10:04-10:13): 10.0.0.9 shows 1.
 *
 * The user name is the one the refused credential names: a static token's
 * user (else its name), a provider token's claimed user.  It is only as
 * true as the credential: a forged token can name anyone, so a count by
 * user says "somebody failed as alice", not that alice did.
 *
 * Threads: any (one mutex).  Ownership: fixed arrays, nothing allocated;
 * gp_auth_failures_copy fills the caller's struct.
 */
#ifndef GP_SERVER_AUTH_FAILURES_H
#define GP_SERVER_AUTH_FAILURES_H

#include <pthread.h>
#include <stdint.h>

enum { GP_AUTH_FAILURE_KEYS = 64, GP_AUTH_FAILURE_MINUTES = 10, GP_AUTH_FAILURE_KEY_MAX = 64 };

typedef struct gp_auth_failure_key {
    char key[GP_AUTH_FAILURE_KEY_MAX]; /* an address or a user name */
    uint32_t count[GP_AUTH_FAILURE_MINUTES];
    int64_t minute[GP_AUTH_FAILURE_MINUTES]; /* which minute (epoch minutes) count[i] holds */
    int64_t last_ms;
} gp_auth_failure_key;

typedef struct gp_auth_failure_table {
    gp_auth_failure_key keys[GP_AUTH_FAILURE_KEYS];
    int n;
} gp_auth_failure_table;

typedef struct gp_auth_failures {
    pthread_mutex_t lock;
    gp_auth_failure_table by_address, by_user;
    uint64_t total;
} gp_auth_failures;

/* One key and its failures in the window, for a scrape. */
typedef struct gp_auth_failure_count {
    char key[GP_AUTH_FAILURE_KEY_MAX];
    uint32_t failures;
} gp_auth_failure_count;

typedef struct gp_auth_failure_counts {
    gp_auth_failure_count by_address[GP_AUTH_FAILURE_KEYS], by_user[GP_AUTH_FAILURE_KEYS];
    int n_address, n_user; /* keys with at least one failure in the window */
    uint64_t total;
} gp_auth_failure_counts;

void gp_auth_failures_init(gp_auth_failures *f);
void gp_auth_failures_destroy(gp_auth_failures *f);
/* A refused credential from address (the remote address, "-" unknown)
 * naming user (NULL or "" when it names nobody).  Longer keys are cut at
 * GP_AUTH_FAILURE_KEY_MAX - 1 bytes. */
void gp_auth_failure_note(gp_auth_failures *f, const char *address, const char *user, int64_t now_ms);
/* The keys with failures in the window ending at now_ms, and the total. */
void gp_auth_failures_copy(gp_auth_failures *f, int64_t now_ms, gp_auth_failure_counts *out);

#endif
