/* lease.h - this replica's part in the leader lease (store.h): whether it
 * leads, who does, and when it must stop trusting its own lead.
 *
 * Several gpupoold replicas share one store; the one holding the lease
 * row leads (schedules, writes), the others follow (tail the event log,
 * serve reads, send writers to the leader: api_leader.c).  A thread of
 * its own, on a store connection of its own, every ttl/3:
 *
 *   leading    renews the lease, unless the engine thread did in a
 *              batch less than ttl/3 ago.  The leader trusts its lead only until
 *              (monotonic time the last successful renew was sent) + ttl
 *              - ttl/5: the safety margin covers clocks that drift apart
 *              by up to a fifth of the lease.  gp_lease_trusted says so;
 *              the engine thread asks before every commit, and once the
 *              leader's start is done a renew that failed past that time
 *              steps down.  A renew that finds the lease taken steps down
 *              at once.
 *   following  reads the row (who leads, where), and takes the lease once
 *              it has expired; then calls `won` (the server finishes its
 *              leader's start on the engine thread, lead.c) and renews
 *              from then on.
 *
 * Stepping down (gp_lease_step_down): a leader that lost its lease, or
 * whose fenced commit failed, commits nothing more: it logs
 * event=step_down and re-executes itself (execv of /proc/self/exe with
 * the argv main gave gp_lease_set_argv), so it comes back as a follower
 * with an engine rebuilt from the durable log -- nothing of what it held
 * in memory survives.  A replica whose database connection is lost
 * (PostgreSQL restarted, its backend terminated, the primary gone) steps
 * down the same way, leader or follower: the new image waits for the
 * database (server.c, event=store_wait) and follows, or leads once the
 * lease is free.
 *
 * Example, --lease-ms 3000: renews every 1000 ms; a renew sent at
 * monotonic 50,000 ms that succeeds makes the lead trusted until 52,400;
 * if the process is stopped at 50,100 and continued at 60,000, its engine
 * thread finds the trust lapsed before its next commit and steps down,
 * while a follower took the lease at about 53,000 (epoch + 1).
 *
 * Threads: role, trust and the leader seen are read from any thread
 * (atomics and a mutex); the store connection is the lease thread's.
 * Ownership: gp_lease owns its connection and thread.
 */
#ifndef GP_SERVER_LEASE_H
#define GP_SERVER_LEASE_H

#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct gp_lease {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool started, stopping;
    gp_store *store;             /* the lease thread's connection */
    char holder[256];
    char self_url[1024];
    int64_t ttl_ms;
    atomic_bool leading;         /* set by the server once its leader's start is done */
    atomic_bool won;             /* this replica holds the lease (its start may not be done) */
    atomic_int_least64_t epoch;  /* ours once won */
    atomic_int_least64_t trusted_until; /* monotonic ms */
    atomic_int_least64_t renew_sent;    /* monotonic ms the last successful renew was sent */
    /* the leader as last read (under lock) */
    char leader_url[1024];
    int64_t leader_epoch;
    void (*on_won)(void *ctx);   /* a follower took the lease (lease thread) */
    void *ctx;
} gp_lease;

/* Opens the lease's connection; holder "" = host:pid.  Sets GP_PG_APPNAME
 * to gpupoold-HOLDER first, so that every PostgreSQL connection this
 * process opens after it carries that application_name (an operator or a
 * test finds them in pg_stat_activity).  Call it before any other
 * gp_store_open. */
gp_err gp_lease_open(gp_lease *l, const char *store_url, const char *holder, const char *self_url, int64_t ttl_ms,
                     gp_error *err);
/* One try at the lease now: GP_OK and l->won when taken, GP_ERR_CONFLICT
 * when another replica holds it (then the leader seen is filled). */
gp_err gp_lease_try(gp_lease *l, gp_error *err);
/* The thread (see the file header); on_won is called on it. */
gp_err gp_lease_start(gp_lease *l, void (*on_won)(void *ctx), void *ctx, gp_error *err);
void gp_lease_stop(gp_lease *l);
void gp_lease_close(gp_lease *l);

/* The engine thread renews in its batches (lease.h: a busy leader's
 * writer holds the write lock most of the time): due when ttl/4 passed
 * since the last renew (*sent: now, monotonic); gp_lease_renewed once the
 * batch with the renew committed. */
bool gp_lease_renew_due(gp_lease *l, int64_t *sent);
void gp_lease_renewed(gp_lease *l, int64_t sent);
/* The leader's start (fleet file, baselines: long transactions that may
 * keep the lease thread's renew waiting for the write lock past the
 * trusted time) is not held to the trusted time -- nothing is served yet,
 * and the fence checked each of its transactions under the lock -- but
 * ends with this renew on the writer: taken meanwhile, it steps down. */
gp_err gp_lease_renew_now(gp_lease *l, gp_store *writer, gp_error *err);
/* Leading and still inside the trusted time. */
bool gp_lease_trusted(gp_lease *l);
/* The leader as last seen: its URL into url ("" when none is known, or it
 * is this replica and its start is not done yet) and the epoch. */
void gp_lease_leader(gp_lease *l, char *url, size_t cap, int64_t *epoch);

/* main's argv, for the re-execution of a step-down (kept, not copied). */
void gp_lease_set_argv(char **argv);
/* The listening socket, kept open across that re-execution (http.c takes
 * it back from GP_LISTEN_FD): same port, and no connection refused. */
void gp_lease_keep_fd(int fd);
/* Logs event=step_down with why and re-executes this program; exits 70
 * when that fails. */
_Noreturn void gp_lease_step_down(const char *why);

#endif
