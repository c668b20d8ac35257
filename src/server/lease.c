/* lease.c - the lease thread: renew while leading, watch and take over
 * while following, step down when the lead is lost (rules in lease.h).
 */
#include "server/lease.h"

#include "server/clock.h"
#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **saved_argv;
static int kept_fd = -1;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gp_lease_set_argv(char **argv)
{
    saved_argv = argv;
}

void gp_lease_keep_fd(int fd)
{
    kept_fd = fd;
}

/* The listening socket stays open across the execv (GP_LISTEN_FD names it
 * to the next image, http.c): the port stays, and connections that arrive
 * meanwhile wait in its backlog instead of being refused. */
static void keep_listening(void)
{
    char text[16];
    if (kept_fd < 0 || fcntl(kept_fd, F_SETFD, 0) != 0)
        return;
    snprintf(text, sizeof text, "%d", kept_fd);
    setenv("GP_LISTEN_FD", text, 1);
}

_Noreturn void gp_lease_step_down(const char *why)
{
    char q[400];
    gp_log(GP_LOG_WARN, "step_down", "reason=%s action=reexec", gp_log_quote(why, q, sizeof q));
    keep_listening();
    if (saved_argv)
        execv("/proc/self/exe", saved_argv);
    gp_log(GP_LOG_ERROR, "step_down", "error=\"cannot re-execute: %s\" action=exit", strerror(errno));
    _exit(70);
}

gp_err gp_lease_open(gp_lease *l, const char *store_url, const char *holder, const char *self_url, int64_t ttl_ms,
                     gp_error *err)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    if (ttl_ms < 300)
        return gp_error_set(err, GP_ERR_INVALID, "lease_ms", "--lease-ms must be at least 300, got %lld",
                            (long long)ttl_ms);
    l->ttl_ms = ttl_ms;
    if (holder && holder[0]) {
        snprintf(l->holder, sizeof l->holder, "%s", holder);
    } else {
        char host[200] = "";
        gethostname(host, sizeof host - 1);
        snprintf(l->holder, sizeof l->holder, "%s:%ld", host, (long)getpid());
    }
    snprintf(l->self_url, sizeof l->self_url, "%s", self_url);
    char app[300]; /* the PostgreSQL driver names every connection of this process so */
    snprintf(app, sizeof app, "gpupoold-%s", l->holder);
    setenv("GP_PG_APPNAME", app, 1);
    return gp_store_open(store_url, false, &l->store, err);
}

/* A holder named HOST:PID on this host whose process is gone: its lease
 * is over whatever its expiry says.  Only SQLite takes it (its lease
 * clock is the caller's: the row is taken at its expiry); on PostgreSQL
 * the database's clock decides. */
static bool holder_gone(const char *holder)
{
    char host[200] = "";
    gethostname(host, sizeof host - 1);
    size_t n = strlen(host);
    if (strncmp(holder, host, n) != 0 || holder[n] != ':')
        return false;
    char *end;
    long pid = strtol(holder + n + 1, &end, 10);
    return *end == '\0' && pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Reads the row; fills the leader seen (none while the lease is free). */
static gp_err watch(gp_lease *l, gp_store_lease *row, gp_error *err)
{
    gp_err rc = gp_store_lease_get(l->store, gp_wall_ms(), row, err);
    if (rc)
        return rc;
    bool live = row->holder[0] && row->expires_ms > row->now_ms && !holder_gone(row->holder);
    pthread_mutex_lock(&l->lock);
    snprintf(l->leader_url, sizeof l->leader_url, "%s", live ? row->url : "");
    l->leader_epoch = row->epoch;
    pthread_mutex_unlock(&l->lock);
    return GP_OK;
}

/* Takes the lease when the row read allows it. */
static gp_err take(gp_lease *l, const gp_store_lease *row, gp_error *err)
{
    int64_t epoch, sent = mono_ms(), now = gp_wall_ms();
    if (holder_gone(row->holder) && row->expires_ms > now)
        now = row->expires_ms;
    gp_err rc = gp_store_lease_acquire(l->store, l->holder, l->self_url, l->ttl_ms, now, &epoch, err);
    if (rc)
        return rc;
    gp_lease_renewed(l, sent);
    atomic_store(&l->epoch, epoch);
    atomic_store(&l->won, true);
    pthread_mutex_lock(&l->lock);
    snprintf(l->leader_url, sizeof l->leader_url, "%s", l->self_url);
    l->leader_epoch = epoch;
    pthread_mutex_unlock(&l->lock);
    gp_log(GP_LOG_INFO, "lease", "role=leader holder=%s epoch=%lld", l->holder, (long long)epoch);
    return GP_OK;
}

gp_err gp_lease_try(gp_lease *l, gp_error *err)
{
    gp_store_lease row;
    gp_err rc = watch(l, &row, err);
    if (rc == GP_OK)
        rc = take(l, &row, err);
    if (rc == GP_ERR_CONFLICT)
        gp_log(GP_LOG_INFO, "lease", "role=follower holder=%s leader=%s epoch=%lld", l->holder, row.holder,
               (long long)row.epoch);
    return rc;
}

gp_err gp_lease_renew_now(gp_lease *l, gp_store *writer, gp_error *err)
{
    int64_t sent = mono_ms();
    gp_err rc = gp_store_lease_renew(writer, l->holder, atomic_load(&l->epoch), l->ttl_ms, gp_wall_ms(), err);
    if (rc == GP_ERR_CONFLICT && strcmp(err->field, "lease") == 0)
        gp_lease_step_down(err->message);
    if (rc == GP_OK)
        gp_lease_renewed(l, sent);
    return rc;
}

bool gp_lease_trusted(gp_lease *l)
{
    return atomic_load(&l->won) && mono_ms() < atomic_load(&l->trusted_until);
}

void gp_lease_leader(gp_lease *l, char *url, size_t cap, int64_t *epoch)
{
    bool self_starting = atomic_load(&l->won) && !atomic_load(&l->leading);
    pthread_mutex_lock(&l->lock);
    snprintf(url, cap, "%s", self_starting ? "" : l->leader_url);
    *epoch = l->leader_epoch;
    pthread_mutex_unlock(&l->lock);
}

bool gp_lease_renew_due(gp_lease *l, int64_t *sent)
{
    *sent = mono_ms();
    return atomic_load(&l->won) && *sent - atomic_load(&l->renew_sent) >= l->ttl_ms / 4;
}

/* *v = max(*v, x): a renew that waited long (for the write lock) must
 * not move the trust back behind a later one's. */
static void store_max(atomic_int_least64_t *v, int64_t x)
{
    int64_t old = atomic_load(v);
    while (old < x && !atomic_compare_exchange_weak(v, &old, x))
        ;
}

void gp_lease_renewed(gp_lease *l, int64_t sent)
{
    store_max(&l->renew_sent, sent);
    store_max(&l->trusted_until, sent + l->ttl_ms - l->ttl_ms / 5);
}

static void renew(gp_lease *l)
{
    gp_error err;
    char q[400];
    int64_t sent = mono_ms();
    if (sent - atomic_load(&l->renew_sent) < l->ttl_ms / 3)
        return; /* the engine thread renewed it lately */
    gp_err rc = gp_store_lease_renew(l->store, l->holder, atomic_load(&l->epoch), l->ttl_ms, gp_wall_ms(), &err);
    if (rc == GP_OK) {
        gp_lease_renewed(l, sent);
        return;
    }
    if (rc == GP_ERR_CONFLICT && strcmp(err.field, "lease") == 0)
        gp_lease_step_down(err.message);
    if (gp_store_broken(l->store))
        gp_lease_step_down("the lease's database connection was lost");
    gp_log(GP_LOG_WARN, "lease_renew", "error=%s", gp_log_quote(err.message, q, sizeof q));
    if (atomic_load(&l->leading) && mono_ms() >= atomic_load(&l->trusted_until))
        gp_lease_step_down("the lease could not be renewed in time");
}

static void follow(gp_lease *l)
{
    gp_error err;
    char q[400];
    gp_store_lease row;
    gp_err rc = watch(l, &row, &err);
    if (rc == GP_OK && l->leader_url[0] == '\0') {
        rc = take(l, &row, &err);
        if (rc == GP_OK) {
            l->on_won(l->ctx);
            return;
        }
    }
    if (rc != GP_OK && rc != GP_ERR_CONFLICT)
        gp_log(GP_LOG_WARN, "lease_watch", "error=%s", gp_log_quote(err.message, q, sizeof q));
    if (rc != GP_OK && gp_store_broken(l->store)) /* it would watch nothing again: start over */
        gp_lease_step_down("the lease's database connection was lost");
}

static void *lease_thread(void *arg)
{
    gp_lease *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->stopping) {
        struct timespec ts = gp_deadline_after(CLOCK_REALTIME, l->ttl_ms / 3);
        pthread_cond_timedwait(&l->wake, &l->lock, &ts);
        if (l->stopping)
            break;
        pthread_mutex_unlock(&l->lock);
        if (atomic_load(&l->won))
            renew(l);
        else
            follow(l);
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

gp_err gp_lease_start(gp_lease *l, void (*on_won)(void *ctx), void *ctx, gp_error *err)
{
    l->on_won = on_won;
    l->ctx = ctx;
    if (pthread_create(&l->thread, NULL, lease_thread, l) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the lease thread");
    l->started = true;
    return GP_OK;
}

void gp_lease_stop(gp_lease *l)
{
    if (!l->started)
        return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    l->started = false;
}

void gp_lease_close(gp_lease *l)
{
    gp_lease_stop(l);
    gp_error err;
    if (l->store && atomic_load(&l->won) &&
        gp_store_lease_release(l->store, l->holder, atomic_load(&l->epoch), &err) != GP_OK)
        gp_log(GP_LOG_WARN, "lease_release", "error=\"%s\"", err.message);
    gp_store_close(l->store);
    l->store = NULL;
}
