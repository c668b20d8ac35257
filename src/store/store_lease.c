/* store_lease.c - the leader lease and the fence of a leader's writes
 * (store.h has the rules and a worked example).
 *
 * The row leader_lease(id = 1) is read and written through db.h only, in
 * SQL both databases run.  The clock: on PostgreSQL every call reads the
 * database's clock (so replicas on several hosts agree on expiry), on
 * SQLite it takes the caller's now_ms (all replicas on one host).  The
 * row is locked for the call's transaction: SQLite's BEGIN IMMEDIATE
 * takes the write lock; PostgreSQL's SELECT ... FOR UPDATE locks the row.
 *
 * The fence: once per transaction of a fenced connection, where the
 * database holds the lease row against a takeover until the commit, the
 * row's epoch must still be the one the connection was fenced at.  SQLite:
 * right after BEGIN IMMEDIATE, whose write lock excludes the takeover's
 * transaction to the end.  PostgreSQL: just before COMMIT, reading the
 * row FOR SHARE, so a takeover's UPDATE waits for that commit and the
 * commit fails if a takeover came first; the row is locked only for the
 * commit, so the lease thread's renew and a follower's look never wait
 * behind a long batch.  Either way a transaction commits only while its
 * epoch is the lease's, and none after a takeover.  The check is one
 * statement prepared once (gp_store_fence).  On PostgreSQL the server
 * makes it: the statement calls pg_temp.gp_fence(epoch), a PL/pgSQL
 * function of the session that raises SQLSTATE GPL01 when the epoch moved,
 * which aborts the transaction (db_pg.c reports it with field "lease"), so
 * the check is sent with the writes and the COMMIT and costs no round trip.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

/* The fence on PostgreSQL (see the top): temporary, so each connection
 * makes its own, and nothing is left in the database. */
static const char PG_FENCE_FUNCTION[] =
    "CREATE OR REPLACE FUNCTION pg_temp.gp_fence(mine bigint) RETURNS void LANGUAGE plpgsql AS $fence$\n"
    "DECLARE held bigint;\n"
    "BEGIN\n"
    "  SELECT epoch INTO held FROM leader_lease WHERE id = 1 FOR SHARE;\n"
    "  IF held IS DISTINCT FROM mine THEN\n"
    "    RAISE EXCEPTION 'the lease moved to epoch %; this leader''s is %', held, mine USING ERRCODE = 'GPL01';\n"
    "  END IF;\n"
    "END $fence$";

static bool on_pg(const gp_store *s)
{
    return gp_db_dialect_of(s->conn) == GP_DB_POSTGRES;
}

/* Runs sql (no parameters) and reads one integer column of its one row. */
static gp_err query_int(gp_store *s, const char *sql, int64_t *out, gp_error *err)
{
    gp_db_stmt *st;
    gp_err rc = gp_db_prepare(s->conn, sql, 0, &st, err);
    if (rc)
        return rc;
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW)
        *out = gp_db_column_int64(st, 0);
    else if (step == GP_DB_DONE)
        rc = gp_error_set(err, GP_ERR_INVALID, "lease", "the leader_lease row is missing");
    else
        rc = err ? err->code : GP_ERR_INVALID;
    gp_db_finalize(st);
    return rc;
}

/* The lease's clock: the database's on PostgreSQL, now_ms on SQLite. */
static gp_err lease_now(gp_store *s, int64_t now_ms, int64_t *out, gp_error *err)
{
    *out = now_ms;
    if (!on_pg(s))
        return GP_OK;
    return query_int(s, "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint", out, err);
}

/* Reads the row (in the caller's transaction, locked FOR UPDATE on
 * PostgreSQL when lock). */
static gp_err row_read(gp_store *s, bool lock, gp_store_lease *out, gp_error *err)
{
    const char *sql = lock && on_pg(s)
                          ? "SELECT holder, url, epoch, expires_ms FROM leader_lease WHERE id = 1 FOR UPDATE"
                          : "SELECT holder, url, epoch, expires_ms FROM leader_lease WHERE id = 1";
    gp_db_stmt *st;
    gp_err rc = gp_db_prepare(s->conn, sql, 0, &st, err);
    if (rc)
        return rc;
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW) {
        const char *holder = gp_db_column_text(st, 0), *url = gp_db_column_text(st, 1);
        snprintf(out->holder, sizeof out->holder, "%s", holder ? holder : "");
        snprintf(out->url, sizeof out->url, "%s", url ? url : "");
        out->epoch = gp_db_column_int64(st, 2);
        out->expires_ms = gp_db_column_int64(st, 3);
    } else if (step == GP_DB_DONE) {
        rc = gp_error_set(err, GP_ERR_INVALID, "lease", "the leader_lease row is missing");
    } else {
        rc = err ? err->code : GP_ERR_INVALID;
    }
    gp_db_finalize(st);
    return rc;
}

/* Steps a bound UPDATE and finalizes it; *changed: rows it changed. */
static gp_err step_update(gp_store *s, gp_db_stmt *st, int64_t *changed, gp_error *err)
{
    gp_err rc = GP_OK;
    if (gp_db_step(st, err) == GP_DB_ERROR)
        rc = err ? err->code : GP_ERR_INVALID;
    else
        *changed = gp_db_changes(s->conn);
    gp_db_finalize(st);
    return rc;
}

static gp_err finish(gp_store *s, gp_err rc, gp_error *err)
{
    if (rc != GP_OK) {
        gp_db_rollback(s->conn);
        return rc;
    }
    return gp_db_commit(s->conn, err);
}

static gp_err check_holder(const char *holder, gp_error *err)
{
    if (!holder || !holder[0] || strlen(holder) >= sizeof((gp_store_lease *)0)->holder)
        return gp_error_set(err, GP_ERR_INVALID, "holder", "a lease holder is 1..255 characters");
    return GP_OK;
}

gp_err gp_store_lease_acquire(gp_store *s, const char *holder, const char *url, int64_t ttl_ms, int64_t now_ms,
                              int64_t *epoch, gp_error *err)
{
    gp_err rc = check_holder(holder, err);
    if (rc)
        return rc;
    gp_store_lease row;
    int64_t now = 0, changed = 0;
    rc = gp_db_begin(s->conn, true, err);
    if (rc)
        return rc;
    rc = row_read(s, true, &row, err);
    if (rc == GP_OK)
        rc = lease_now(s, now_ms, &now, err);
    if (rc == GP_OK && row.expires_ms > now && row.holder[0] && strcmp(row.holder, holder) != 0)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "lease", "%s holds the lease for %lld ms more", row.holder,
                          (long long)(row.expires_ms - now));
    gp_db_stmt *st = NULL;
    if (rc == GP_OK)
        rc = gp_db_prepare(s->conn, "UPDATE leader_lease SET holder = ?1, url = ?2, epoch = ?3, expires_ms = ?4"
                           " WHERE id = 1", 0, &st, err);
    if (rc == GP_OK) {
        gp_db_bind_text(st, 1, holder);
        gp_db_bind_text(st, 2, url ? url : "");
        gp_db_bind_int64(st, 3, row.epoch + 1);
        gp_db_bind_int64(st, 4, now + ttl_ms);
        rc = step_update(s, st, &changed, err);
    }
    if (rc == GP_OK && changed != 1)
        rc = gp_error_set(err, GP_ERR_INVALID, "lease", "the leader_lease row is missing");
    rc = finish(s, rc, err);
    if (rc == GP_OK)
        *epoch = row.epoch + 1;
    return rc;
}

gp_err gp_store_lease_renew(gp_store *s, const char *holder, int64_t epoch, int64_t ttl_ms, int64_t now_ms,
                            gp_error *err)
{
    gp_err rc = check_holder(holder, err);
    if (rc)
        return rc;
    int64_t now = 0, changed = 0;
    bool own = !s->in_tx; /* else inside the caller's transaction (a leader's batch) */
    if (own && (rc = gp_db_begin(s->conn, true, err)) != GP_OK)
        return rc;
    rc = lease_now(s, now_ms, &now, err);
    gp_db_stmt *st = NULL;
    if (rc == GP_OK)
        rc = gp_db_prepare(s->conn, "UPDATE leader_lease SET expires_ms = ?1 WHERE id = 1 AND holder = ?2 AND epoch = ?3",
                           0, &st, err);
    if (rc == GP_OK) {
        gp_db_bind_int64(st, 1, now + ttl_ms);
        gp_db_bind_text(st, 2, holder);
        gp_db_bind_int64(st, 3, epoch);
        rc = step_update(s, st, &changed, err);
    }
    if (rc == GP_OK && changed != 1)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "lease", "the lease of %s at epoch %lld was taken", holder,
                          (long long)epoch);
    return own ? finish(s, rc, err) : rc;
}

gp_err gp_store_lease_release(gp_store *s, const char *holder, int64_t epoch, gp_error *err)
{
    gp_err rc = check_holder(holder, err);
    if (rc)
        return rc;
    int64_t changed = 0;
    gp_db_stmt *st;
    rc = gp_db_prepare(s->conn, "UPDATE leader_lease SET expires_ms = 0 WHERE id = 1 AND holder = ?1 AND epoch = ?2",
                       0, &st, err);
    if (rc == GP_OK) {
        gp_db_bind_text(st, 1, holder);
        gp_db_bind_int64(st, 2, epoch);
        rc = step_update(s, st, &changed, err);
    }
    return rc;
}

gp_err gp_store_lease_get(gp_store *s, int64_t now_ms, gp_store_lease *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    gp_err rc = row_read(s, false, out, err);
    if (rc == GP_OK)
        rc = lease_now(s, now_ms, &out->now_ms, err);
    return rc;
}

gp_err gp_store_fence(gp_store *s, int64_t epoch, int64_t ttl_ms, gp_error *err)
{
    if (epoch <= 0)
        return gp_error_set(err, GP_ERR_INVALID, "epoch", "a fence needs an epoch > 0");
    if (on_pg(s)) {
        char sql[96];
        snprintf(sql, sizeof sql, "SET idle_in_transaction_session_timeout = %lld", (long long)ttl_ms);
        gp_err rc = gp_db_exec(s->conn, sql, err);
        if (rc == GP_OK)
            rc = gp_db_exec(s->conn, PG_FENCE_FUNCTION, err);
        if (rc)
            return rc;
    }
    if (!s->fence) {
        gp_err rc = on_pg(s) ? gp_db_prepare(s->conn, "SELECT pg_temp.gp_fence(?1)", GP_DB_DEFER, &s->fence, err)
                             : gp_db_prepare(s->conn, "SELECT epoch FROM leader_lease WHERE id = 1", 0, &s->fence, err);
        if (rc)
            return rc;
    }
    s->fence_epoch = epoch;
    return GP_OK;
}

gp_err gp__store_fence_check(gp_store *s, gp_error *err)
{
    if (on_pg(s)) { /* deferred: the server raises, the commit fails */
        gp_db_bind_int64(s->fence, 1, s->fence_epoch);
        int step = gp_db_step(s->fence, err);
        gp_db_reset(s->fence);
        return step == GP_DB_ERROR ? (err ? err->code : GP_ERR_INVALID) : GP_OK;
    }
    int step = gp_db_step(s->fence, err);
    int64_t epoch = step == GP_DB_ROW ? gp_db_column_int64(s->fence, 0) : 0;
    gp_db_reset(s->fence);
    if (step == GP_DB_ERROR)
        return err ? err->code : GP_ERR_INVALID;
    if (epoch != s->fence_epoch)
        return gp_error_set(err, GP_ERR_CONFLICT, "lease", "the lease moved to epoch %lld; this leader's is %lld",
                            (long long)epoch, (long long)s->fence_epoch);
    return GP_OK;
}
