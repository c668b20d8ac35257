/* db_pg.c - db.h on PostgreSQL, through libpq.
 *
 * What the driver does to make PostgreSQL look like db.h:
 *
 *   placeholders  ?N is rewritten to $N when a statement is prepared
 *                 (outside '...' literals and "..." identifiers), then the
 *                 statement is prepared once on the server under a name of
 *                 this connection's ("gp1", "gp2", ...) and deallocated by
 *                 gp_db_finalize.
 *   parameters    sent as text (integers and doubles printed here), except
 *                 blobs, sent in binary so zero bytes pass as they are; the
 *                 server infers each parameter's type from the statement.
 *   rows          asked for in text; a column's type comes from its OID
 *                 (int2/4/8, oid, bool -> INT; float4/8, numeric -> REAL;
 *                 bytea -> BLOB, unescaped from hex; anything else TEXT).
 *   stepping      the first gp_db_step executes the statement and fetches
 *                 all its rows; with GP_DB_STREAM it sends the query in
 *                 single-row mode instead and each step fetches one row
 *                 (reset or finalize before the end drains the rest, so a
 *                 transaction around it stays usable).
 *   errors        SQLSTATE 40001 (serialization), 40P01 (deadlock), 55P03
 *                 (lock not available) -> GP_ERR_CONFLICT; 53200 -> NOMEM;
 *                 a connection gone (status bad, SQLSTATE 08xxx or 57P0x:
 *                 a backend terminated, the server shutting down) marks
 *                 the connection broken (gp_db_broken) -> GP_ERR_INVALID,
 *                 field "store_connection" (so is a connection that cannot
 *                 be opened): gpupoold waits for the database or steps
 *                 down and reconnects instead of exiting.
 *                 COMMIT of a transaction a failed statement aborted (which
 *                 PostgreSQL answers with "ROLLBACK", no error) fails too.
 *   deferring     a GP_DB_DEFER statement stepped inside a transaction is
 *                 sent in libpq's pipeline mode and not waited for: its
 *                 step answers DONE at once.  The answers of the queued
 *                 statements are read at the connection's next call that
 *                 waits for the server (a step of any other statement,
 *                 exec, COMMIT/ROLLBACK, prepare, finalize), after a
 *                 Sync: one round trip for the whole queue.  The first
 *                 error among them fails that call (PostgreSQL has aborted
 *                 the transaction, so COMMIT fails too and nothing of it is
 *                 kept); a call that cannot report it (finalize) leaves it
 *                 for the next one that can; ROLLBACK forgets it.  A
 *                 writer's BEGIN is queued the same way.  At most
 *                 GP__PG_MAX_QUEUED answers wait unread at a time (the
 *                 queue's and a commit's in flight): a bound on what libpq
 *                 buffers, not a deadlock guard (libpq reads the server's
 *                 answers while a send of its own is blocked; a queue of
 *                 200,000 inserts was tried).
 *   committing    gp_db_commit_send queues COMMIT behind the queue and
 *                 sends a Sync; the next transaction's BEGIN and deferred
 *                 statements queue behind it; gp_db_commit_ready reads
 *                 what has arrived (PQconsumeInput, then results while
 *                 PQisBusy says they are there); anything that waits reads
 *                 the commit's answers first and keeps its outcome for
 *                 gp_db_commit_wait.  Example: BEGIN, INSERT (queued),
 *                 commit_send -> [BEGIN, INSERT, COMMIT, Sync] on the wire;
 *                 BEGIN, INSERT of the next batch -> buffered behind it;
 *                 commit_ready -> false, later true; commit_wait -> GP_OK.
 *
 * Every connection runs with synchronous_commit = on (a COMMIT returns
 * once the WAL is flushed: as durable as SQLite's synchronous=FULL) and
 * application_name = $GP_PG_APPNAME (else "gpupool" unless the URL names
 * one), so an operator or a test can find gpupoold's backends in
 * pg_stat_activity.  A readonly connection sets
 * default_transaction_read_only = on.
 *
 * Example: gp_db_prepare(db, "SELECT name FROM tenants WHERE path = ?1 AND
 * note <> '?2'", ...) prepares "SELECT name FROM tenants WHERE path = $1
 * AND note <> '?2'" as "gp7" with one parameter.
 */
#include "store/db_internal.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PostgreSQL's type OIDs (pg_type.dat), stable across versions. */
#define GP__OID_BOOL 16
#define GP__OID_BYTEA 17
#define GP__OID_INT8 20
#define GP__OID_INT2 21
#define GP__OID_INT4 23
#define GP__OID_OID 26
#define GP__OID_FLOAT4 700
#define GP__OID_FLOAT8 701
#define GP__OID_NUMERIC 1700

#define GP__PG_MAX_PARAMS 1000
#define GP__PG_MAX_QUEUED 8192

/* The example of the header, deferred: BEGIN; step "INSERT INTO jobs ..."
 * (sent, DONE), step "INSERT INTO job_scope ..." (sent, DONE), step
 * "SELECT \"user\" FROM jobs WHERE id = 7" (Sync sent, the two inserts'
 * answers read, then the SELECT run as always); COMMIT. */

/* The answers of one stretch of the pipeline being read: n statements,
 * then the Sync. */
struct gp__pg_segment {
    int n;
    int ends;              /* statements whose answers were read in full */
    PGresult *last;        /* keep_last: the last statement's result */
    bool keep_last;
    bool has_error;
    gp_error error;        /* the first error in it */
};

struct gp__db_pg {
    gp_db base;
    PGconn *conn;
    int64_t changes;
    unsigned next_name;
    int queued;            /* deferred statements sent, their answers not read, no Sync yet */
    bool has_deferred_error;
    gp_error deferred_error; /* the first error of the queue, not yet reported */
    /* gp_db_commit_send: the queue and COMMIT sent with a Sync (commit, its
     * answers not all read); then its outcome until gp_db_commit_wait takes
     * it (commit_known).  Pipeline mode while queued > 0 or committing. */
    bool committing, commit_known;
    struct gp__pg_segment commit;
    gp_err commit_rc;
    gp_error commit_err;
};

/* A bytea column's bytes (PQunescapeBytea's, freed with PQfreemem). */
struct gp__pg_blob {
    unsigned char *bytes;
    size_t len;
};

/* A parameter: text points at the caller's text or at num. */
struct gp__pg_param {
    const char *value;
    int length;
    int format; /* 0 text, 1 binary */
    char num[32];
};

struct gp__stmt_pg {
    gp_db_stmt base;
    char name[16];
    unsigned flags;
    int n_params;
    struct gp__pg_param *params;
    PGresult *res;        /* the rows fetched (all, or the current one when streaming) */
    int row;              /* the current row of res */
    bool executed;        /* stepped since the last reset */
    bool streaming;       /* a GP_DB_STREAM query is still sending rows */
    struct gp__pg_blob *blobs; /* per column: the current row's bytea, unescaped when read */
};

static PGconn *conn_of(gp_db *db) { return ((struct gp__db_pg *)db)->conn; }
static struct gp__stmt_pg *pg_st(gp_db_stmt *st) { return (struct gp__stmt_pg *)st; }

/* ---- errors ---- */

static bool sqlstate_is(const char *state, const char *prefix)
{
    return state && strncmp(state, prefix, strlen(prefix)) == 0;
}

/* The error of res (or of the connection when res is NULL) into err. */
static gp_err fail(gp_db *db, const PGresult *res, const char *what, gp_error *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(conn_of(db));
    if (PQstatus(conn_of(db)) == CONNECTION_BAD || sqlstate_is(state, "08") || sqlstate_is(state, "57P0"))
        db->broken = true;
    gp_err rc = GP_ERR_INVALID;
    int len = (int)strcspn(msg, "\n"); /* libpq's messages end in a newline, some have a DETAIL line */
    if (sqlstate_is(state, GP_DB_PG_LEASE_SQLSTATE))
        return gp_error_set(err, GP_ERR_CONFLICT, "lease", "%s: %.*s", what, len, msg);
    if (sqlstate_is(state, "40001") || sqlstate_is(state, "40P01") || sqlstate_is(state, "55P03"))
        rc = GP_ERR_CONFLICT;
    else if (sqlstate_is(state, "53200"))
        rc = GP_ERR_NOMEM;
    if (db->broken)
        return gp_error_set(err, rc, GP_DB_CONNECTION_FIELD, "%s: connection to PostgreSQL lost: %.*s", what, len,
                            msg);
    return gp_error_set(err, rc, "store", "%s: %.*s", what, len, msg);
}

static bool result_ok(const PGresult *res)
{
    ExecStatusType s = PQresultStatus(res);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_SINGLE_TUPLE;
}

/* ---- the queue of deferred statements ---- */

static struct gp__db_pg *pg_db(gp_db *db) { return (struct gp__db_pg *)db; }

/* Reads a segment's answers up to its Sync; with poll, only those that
 * have arrived (the caller ran PQconsumeInput).  True once the Sync was
 * read or the connection is gone.  Each statement's answer ends with a
 * NULL result, the Sync is PGRES_PIPELINE_SYNC; after an error the rest
 * up to the Sync come as PGRES_PIPELINE_ABORTED. */
static bool read_segment(struct gp__db_pg *db, struct gp__pg_segment *seg, bool poll)
{
    for (;;) {
        if (poll && PQisBusy(db->conn))
            return false;
        PGresult *res = PQgetResult(db->conn);
        if (!res) {
            if (PQstatus(db->conn) == CONNECTION_BAD || ++seg->ends > seg->n)
                return true;
            continue;
        }
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            return true;
        }
        if (seg->keep_last && seg->ends == seg->n - 1 && s != PGRES_PIPELINE_ABORTED && !seg->last) {
            seg->last = res;
            continue;
        }
        if (s != PGRES_PIPELINE_ABORTED && !result_ok(res) && !seg->has_error) {
            fail(&db->base, res, "deferred statement", &seg->error);
            seg->has_error = true;
        }
        PQclear(res);
    }
}

/* Pipeline mode ends once nothing is in it; failing that, the connection
 * is unusable. */
static void leave_pipeline(struct gp__db_pg *db)
{
    if (db->queued > 0 || db->committing || PQpipelineStatus(db->conn) == PQ_PIPELINE_OFF)
        return;
    if (PQexitPipelineMode(db->conn) != 1 && !db->has_deferred_error) {
        fail(&db->base, NULL, "deferred statement", &db->deferred_error);
        db->has_deferred_error = true;
        db->base.broken = true;
    }
}

/* Statements sent whose answers are not read (the queue's and a commit's
 * in flight): at most GP__PG_MAX_QUEUED. */
static int unread(const struct gp__db_pg *db)
{
    return db->queued + (db->committing ? db->commit.n - db->commit.ends : 0);
}

/* The commit in flight's outcome, from its segment (the COMMIT is its
 * last statement; PostgreSQL answers the COMMIT of a transaction an error
 * aborted with "ROLLBACK", no error). */
static void commit_outcome(struct gp__db_pg *db)
{
    struct gp__pg_segment *seg = &db->commit;
    db->commit_rc = GP_OK;
    if (seg->has_error) {
        db->commit_err = seg->error;
        db->commit_rc = seg->error.code;
    } else if (!seg->last || !result_ok(seg->last)) {
        db->commit_rc = fail(&db->base, seg->last, "commit", &db->commit_err);
    } else if (strcmp(PQcmdStatus(seg->last), "ROLLBACK") == 0) {
        db->commit_rc = gp_error_set(&db->commit_err, GP_ERR_INVALID, "store",
                                     "commit: PostgreSQL rolled the transaction back (a statement in it failed)");
    }
    PQclear(seg->last);
    seg->last = NULL;
    db->committing = false;
    db->commit_known = true;
}

/* Reads the commit in flight to its end (blocking), keeps its outcome. */
static void settle_commit(struct gp__db_pg *db)
{
    if (!db->committing)
        return;
    read_segment(db, &db->commit, false);
    commit_outcome(db);
}

/* Ends the queue (one round trip) and reports its first error, or one an
 * earlier call could not report.  A commit in flight is read first (its
 * answers come first); while a failed commit is not yet taken by
 * gp_db_commit_wait, its error is the one reported (the queue's
 * statements failed behind it).  err may be NULL: the error
 * waits.  last: where the queue's last statement's result goes (a
 * statement that waits, sent behind the queue), or NULL. */
static gp_err end_queue(gp_db *base, PGresult **last, gp_error *err)
{
    struct gp__db_pg *db = pg_db(base);
    if (db->queued > 0) {
        struct gp__pg_segment seg = {.n = db->queued, .keep_last = last != NULL};
        bool synced = PQpipelineSync(db->conn) == 1;
        settle_commit(db);
        if (synced)
            read_segment(db, &seg, false);
        if (last)
            *last = seg.last;
        if (seg.has_error && !db->has_deferred_error) {
            db->deferred_error = seg.error;
            db->has_deferred_error = true;
        }
        db->queued = 0;
    }
    settle_commit(db);
    if (db->commit_known && db->commit_rc != GP_OK) {
        db->deferred_error = db->commit_err; /* the cause of whatever failed behind it */
        db->has_deferred_error = true;
    }
    leave_pipeline(db);
    if (!db->has_deferred_error || !err)
        return db->has_deferred_error ? db->deferred_error.code : GP_OK;
    *err = db->deferred_error;
    db->has_deferred_error = false;
    return err->code;
}

static gp_err flush_queue(gp_db *base, gp_error *err) { return end_queue(base, NULL, err); }

/* ---- the connection ---- */

static gp_err pg_exec(gp_db *db, const char *sql, gp_error *err)
{
    bool rollback = strcmp(sql, "ROLLBACK") == 0;
    gp_err queued = flush_queue(db, rollback ? NULL : err);
    if (rollback) { /* what the rollback discards */
        pg_db(db)->has_deferred_error = false;
        pg_db(db)->commit_known = false;
    }
    else if (queued != GP_OK)
        return queued;
    PGresult *res = PQexec(conn_of(db), sql);
    gp_err rc = res && result_ok(res) ? GP_OK : fail(db, res, "exec", err);
    /* COMMIT of a transaction an error aborted answers "ROLLBACK", not an error */
    if (rc == GP_OK && strcmp(sql, "COMMIT") == 0 && strcmp(PQcmdStatus(res), "ROLLBACK") == 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "store",
                          "commit: PostgreSQL rolled the transaction back (a statement in it failed)");
    PQclear(res);
    return rc;
}

static void pg_close(gp_db *db)
{
    PQfinish(conn_of(db));
    free(db);
}

/* Sends sql (no parameters) into the pipeline without waiting: one more
 * queued statement. */
static gp_err send_queued(struct gp__db_pg *db, const char *sql, gp_error *err)
{
    if (PQenterPipelineMode(db->conn) != 1 || PQsendQueryParams(db->conn, sql, 0, NULL, NULL, NULL, NULL, 0) != 1) {
        gp_err rc = fail(&db->base, NULL, sql, err);
        flush_queue(&db->base, NULL);
        return rc;
    }
    db->queued++;
    return GP_OK;
}

/* A writer's transaction is READ COMMITTED (the default; the lease fences
 * writers) and its BEGIN is queued like a deferred statement (nothing of
 * it is read before the first statement that waits); a reader's sees one
 * snapshot, as a SQLite read transaction does. */
static gp_err pg_begin(gp_db *db, bool write, gp_error *err)
{
    if (!write)
        return pg_exec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ", err);
    return send_queued(pg_db(db), "BEGIN", err);
}

/* The queue, COMMIT and a Sync go out; the answers are read later. */
static gp_err pg_commit_send(gp_db *base, gp_error *err)
{
    struct gp__db_pg *db = pg_db(base);
    settle_commit(db); /* one commit in flight at a time */
    if (db->commit_known && db->commit_rc != GP_OK) {
        if (err)
            *err = db->commit_err;
        return db->commit_rc; /* the transaction failed behind it */
    }
    if (db->has_deferred_error) { /* one a call that could not report it (finalize) kept */
        if (err)
            *err = db->deferred_error;
        db->has_deferred_error = false;
        return db->deferred_error.code;
    }
    gp_err rc = send_queued(db, "COMMIT", err);
    if (rc != GP_OK)
        return rc;
    if (PQpipelineSync(db->conn) != 1) {
        rc = fail(base, NULL, "commit", err);
        flush_queue(base, NULL);
        return rc;
    }
    db->commit = (struct gp__pg_segment){.n = db->queued, .keep_last = true};
    db->queued = 0;
    db->committing = true;
    db->commit_known = false;
    return GP_OK;
}

static bool pg_commit_ready(gp_db *base)
{
    struct gp__db_pg *db = pg_db(base);
    if (!db->committing)
        return true;
    if (PQconsumeInput(db->conn) != 1 || read_segment(db, &db->commit, true)) {
        commit_outcome(db); /* a connection gone: its error, read now */
        leave_pipeline(db);
    }
    return !db->committing;
}

static int pg_commit_fd(gp_db *base)
{
    struct gp__db_pg *db = pg_db(base);
    return db->committing ? PQsocket(db->conn) : -1;
}

static gp_err pg_commit_wait(gp_db *base, gp_error *err)
{
    struct gp__db_pg *db = pg_db(base);
    settle_commit(db);
    leave_pipeline(db);
    if (!db->commit_known)
        return GP_OK;
    db->commit_known = false;
    if (db->commit_rc != GP_OK && err)
        *err = db->commit_err;
    return db->commit_rc;
}

static int64_t pg_changes(gp_db *db) { return ((struct gp__db_pg *)db)->changes; }

static gp_err pg_checkpoint(gp_db *db, int64_t wal_limit, gp_error *err)
{
    (void)db; /* PostgreSQL checkpoints by itself */
    (void)wal_limit;
    (void)err;
    return GP_OK;
}

/* ---- statements ---- */

/* sql with ?N -> $N outside quotes into a new string; *n_params = the
 * highest N.  NULL when out of memory or N is out of range. */
static char *rewrite_placeholders(const char *sql, int *n_params)
{
    size_t len = strlen(sql);
    char *out = malloc(len + 1); /* "$N" is as long as "?N" */
    if (!out)
        return NULL;
    char quote = 0;
    size_t o = 0;
    *n_params = 0;
    for (size_t i = 0; i < len; i++) {
        char c = sql[i];
        if (quote) {
            if (c == quote)
                quote = 0; /* '' and "" re-enter at once: same result */
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '?' && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
            long n = strtol(sql + i + 1, NULL, 10);
            if (n < 1 || n > GP__PG_MAX_PARAMS) {
                free(out);
                return NULL;
            }
            if (n > *n_params)
                *n_params = (int)n;
            c = '$';
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

static void clear_blobs(struct gp__stmt_pg *st)
{
    if (!st->res || !st->blobs)
        return;
    for (int c = 0; c < PQnfields(st->res); c++) {
        PQfreemem(st->blobs[c].bytes);
        st->blobs[c] = (struct gp__pg_blob){0};
    }
}

static void clear_result(struct gp__stmt_pg *st)
{
    clear_blobs(st);
    free(st->blobs);
    st->blobs = NULL;
    PQclear(st->res);
    st->res = NULL;
}

/* Reads what is left of a streaming query, so the connection is free. */
static void drain(struct gp__stmt_pg *st)
{
    PGresult *res;
    while (st->streaming && (res = PQgetResult(conn_of(st->base.db))) != NULL)
        PQclear(res);
    st->streaming = false;
}

static gp_err pg_prepare(gp_db *db, const char *sql, unsigned flags, gp_db_stmt **out, gp_error *err)
{
    struct gp__db_pg *pdb = (struct gp__db_pg *)db;
    int n = 0;
    char *text = rewrite_placeholders(sql, &n);
    if (!text)
        return gp_error_set(err, GP_ERR_INVALID, "store", "prepare: placeholders must be ?1..?%d (or out of memory)",
                            GP__PG_MAX_PARAMS);
    struct gp__stmt_pg *st = calloc(1, sizeof *st);
    if (st && n > 0 && !(st->params = calloc((size_t)n, sizeof *st->params))) {
        free(st);
        st = NULL;
    }
    if (!st) {
        free(text);
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    }
    st->base.db = db;
    st->flags = flags;
    st->n_params = n;
    snprintf(st->name, sizeof st->name, "gp%u", ++pdb->next_name);
    gp_err queued = flush_queue(db, err);
    PGresult *res = queued == GP_OK ? PQprepare(pdb->conn, st->name, text, 0, NULL) : NULL;
    free(text);
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
        gp_err rc = queued != GP_OK ? queued : fail(db, res, "prepare", err);
        PQclear(res);
        free(st->params);
        free(st);
        return rc;
    }
    PQclear(res);
    *out = &st->base;
    return GP_OK;
}

static void pg_reset(gp_db_stmt *base)
{
    struct gp__stmt_pg *st = pg_st(base);
    drain(st);
    clear_result(st);
    if (st->n_params > 0)
        memset(st->params, 0, (size_t)st->n_params * sizeof *st->params);
    st->executed = false;
    st->row = 0;
}

static void pg_finalize(gp_db_stmt *base)
{
    struct gp__stmt_pg *st = pg_st(base);
    pg_reset(base);
    flush_queue(st->base.db, NULL); /* an error waits for the next call that can report it */
    if (!st->base.db->broken) {
        char sql[40];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
        PQclear(PQexec(conn_of(st->base.db), sql)); /* fails only in an aborted transaction: it goes with the connection */
    }
    free(st->params);
    free(st);
}

static struct gp__pg_param *param(gp_db_stmt *base, int i)
{
    struct gp__stmt_pg *st = pg_st(base);
    return i >= 1 && i <= st->n_params ? &st->params[i - 1] : NULL;
}

static void pg_bind_int64(gp_db_stmt *st, int i, int64_t v)
{
    struct gp__pg_param *p = param(st, i);
    if (p) {
        *p = (struct gp__pg_param){.format = 0};
        snprintf(p->num, sizeof p->num, "%lld", (long long)v);
        p->value = p->num;
    }
}

static void pg_bind_double(gp_db_stmt *st, int i, double v)
{
    struct gp__pg_param *p = param(st, i);
    if (p) {
        *p = (struct gp__pg_param){.format = 0};
        snprintf(p->num, sizeof p->num, "%.17g", v);
        p->value = p->num;
    }
}

static void pg_bind_text(gp_db_stmt *st, int i, const char *text)
{
    struct gp__pg_param *p = param(st, i);
    if (p)
        *p = (struct gp__pg_param){.value = text, .format = 0};
}

static void pg_bind_blob(gp_db_stmt *st, int i, const void *data, size_t len)
{
    struct gp__pg_param *p = param(st, i);
    if (p)
        *p = (struct gp__pg_param){.value = data ? data : "", .length = (int)len, .format = 1};
}

static void pg_bind_null(gp_db_stmt *st, int i)
{
    struct gp__pg_param *p = param(st, i);
    if (p)
        *p = (struct gp__pg_param){0};
}

/* Sends (send: *sent says whether it went; a stream is put in single-row
 * mode) or runs the statement with its parameters. */
static PGresult *execute(struct gp__stmt_pg *st, bool send, bool *sent)
{
    const char *values[GP__PG_MAX_PARAMS];
    int lengths[GP__PG_MAX_PARAMS], formats[GP__PG_MAX_PARAMS];
    for (int i = 0; i < st->n_params; i++) {
        values[i] = st->params[i].value;
        lengths[i] = st->params[i].length;
        formats[i] = st->params[i].format;
    }
    PGconn *conn = conn_of(st->base.db);
    if (send) {
        *sent = PQsendQueryPrepared(conn, st->name, st->n_params, values, lengths, formats, 0) == 1;
        if (*sent && (st->flags & GP_DB_STREAM))
            PQsetSingleRowMode(conn);
        return NULL;
    }
    return PQexecPrepared(conn, st->name, st->n_params, values, lengths, formats, 0);
}

static int step_error(struct gp__stmt_pg *st, const char *what, gp_error *err)
{
    fail(st->base.db, st->res, what, err);
    drain(st);
    return GP_DB_ERROR;
}

/* Streaming: the next single-row result, or the end. */
static int step_stream(struct gp__stmt_pg *st, gp_error *err)
{
    clear_result(st);
    st->res = PQgetResult(conn_of(st->base.db));
    if (!st->res) {
        st->streaming = false;
        return GP_DB_DONE;
    }
    ExecStatusType s = PQresultStatus(st->res);
    if (s == PGRES_SINGLE_TUPLE)
        return GP_DB_ROW;
    if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
        clear_result(st);
        drain(st);
        return GP_DB_DONE;
    }
    return step_error(st, "step", err);
}

/* A command whose row count is db.h's "changes" (a SELECT's is not). */
static bool changes_rows(const char *status)
{
    return strncmp(status, "INSERT ", 7) == 0 || strncmp(status, "UPDATE ", 7) == 0 ||
           strncmp(status, "DELETE ", 7) == 0 || strncmp(status, "MERGE ", 6) == 0;
}

/* A GP_DB_DEFER statement inside a transaction (or behind others already
 * queued) is queued instead of run. */
static bool deferrable(struct gp__stmt_pg *st)
{
    struct gp__db_pg *db = pg_db(st->base.db);
    return (st->flags & GP_DB_DEFER) &&
           (db->queued > 0 || PQtransactionStatus(db->conn) == PQTRANS_INTRANS);
}

/* Queues the statement (pipeline mode from the first one on): DONE without
 * waiting, unless the queue is full and its answers say otherwise. */
static int step_deferred(struct gp__stmt_pg *st, gp_error *err)
{
    struct gp__db_pg *db = pg_db(st->base.db);
    bool sent = false;
    st->executed = true;
    if (PQenterPipelineMode(db->conn) != 1) /* already in it: nothing to do */
        return step_error(st, "step", err);
    execute(st, true, &sent);
    if (!sent) {
        int rc = step_error(st, "step", err);
        flush_queue(&db->base, NULL); /* the queue's own error, if any, waits */
        return rc;
    }
    db->queued++;
    if (unread(db) >= GP__PG_MAX_QUEUED && flush_queue(&db->base, err) != GP_OK)
        return GP_DB_ERROR;
    return GP_DB_DONE;
}

/* A statement that waits, behind a queue: sent after it, before the Sync,
 * so the queue and the statement take one round trip together.  GP_OK and
 * st->res its result (an error result included), or the queue's error. */
static gp_err run_behind_queue(struct gp__stmt_pg *st, gp_error *err)
{
    struct gp__db_pg *db = pg_db(st->base.db);
    bool sent = false;
    execute(st, true, &sent);
    if (!sent)
        return flush_queue(&db->base, err); /* then it runs alone, as always */
    db->queued++;
    gp_err rc = end_queue(&db->base, &st->res, err);
    if (rc == GP_OK && !st->res)
        rc = fail(&db->base, NULL, "step", err);
    return rc;
}

/* The first step's answer from a statement's result. */
static int finish_first(struct gp__stmt_pg *st, gp_error *err)
{
    struct gp__db_pg *db = pg_db(st->base.db);
    if (!st->res || !result_ok(st->res))
        return step_error(st, "step", err);
    if (changes_rows(PQcmdStatus(st->res)))
        db->changes = strtoll(PQcmdTuples(st->res), NULL, 10);
    return PQntuples(st->res) > 0 ? GP_DB_ROW : GP_DB_DONE;
}

static int step_first(struct gp__stmt_pg *st, gp_error *err)
{
    struct gp__db_pg *db = (struct gp__db_pg *)st->base.db;
    bool sent = false;
    if (deferrable(st))
        return step_deferred(st, err);
    st->executed = true;
    if (db->queued > 0 && !(st->flags & GP_DB_STREAM)) {
        if (run_behind_queue(st, err) != GP_OK) {
            clear_result(st);
            return GP_DB_ERROR;
        }
        if (!st->res)
            st->res = execute(st, false, &sent);
        return finish_first(st, err);
    }
    if (flush_queue(&db->base, err) != GP_OK)
        return GP_DB_ERROR;
    st->res = execute(st, (st->flags & GP_DB_STREAM) != 0, &sent);
    if (st->flags & GP_DB_STREAM) {
        if (!sent)
            return step_error(st, "step", err);
        st->streaming = true;
        return step_stream(st, err);
    }
    return finish_first(st, err);
}

static int pg_step(gp_db_stmt *base, gp_error *err)
{
    struct gp__stmt_pg *st = pg_st(base);
    if (!st->executed)
        return step_first(st, err);
    if (st->flags & GP_DB_STREAM)
        return st->streaming ? step_stream(st, err) : GP_DB_DONE;
    clear_blobs(st);
    if (!st->res || st->row + 1 >= PQntuples(st->res))
        return GP_DB_DONE;
    st->row++;
    return GP_DB_ROW;
}

/* ---- columns ---- */

static bool has_value(struct gp__stmt_pg *st, int c)
{
    return st->res && c >= 0 && c < PQnfields(st->res) && st->row < PQntuples(st->res) &&
           !PQgetisnull(st->res, st->row, c);
}

static int pg_column_count(gp_db_stmt *base)
{
    struct gp__stmt_pg *st = pg_st(base);
    return st->res ? PQnfields(st->res) : 0;
}

static const char *pg_column_name(gp_db_stmt *base, int c)
{
    struct gp__stmt_pg *st = pg_st(base);
    return st->res ? PQfname(st->res, c) : NULL;
}

static gp_db_type pg_column_type(gp_db_stmt *base, int c)
{
    struct gp__stmt_pg *st = pg_st(base);
    if (!has_value(st, c))
        return GP_DB_NULL;
    switch (PQftype(st->res, c)) {
    case GP__OID_BOOL:
    case GP__OID_INT2:
    case GP__OID_INT4:
    case GP__OID_INT8:
    case GP__OID_OID: return GP_DB_INT;
    case GP__OID_FLOAT4:
    case GP__OID_FLOAT8:
    case GP__OID_NUMERIC: return GP_DB_REAL;
    case GP__OID_BYTEA: return GP_DB_BLOB;
    default: return GP_DB_TEXT;
    }
}

static const char *pg_column_text(gp_db_stmt *base, int c)
{
    struct gp__stmt_pg *st = pg_st(base);
    return has_value(st, c) ? PQgetvalue(st->res, st->row, c) : NULL;
}

static int64_t pg_column_int64(gp_db_stmt *base, int c)
{
    const char *text = pg_column_text(base, c);
    if (!text)
        return 0;
    if (PQftype(pg_st(base)->res, c) == GP__OID_BOOL)
        return text[0] == 't';
    return strtoll(text, NULL, 10);
}

static double pg_column_double(gp_db_stmt *base, int c)
{
    const char *text = pg_column_text(base, c);
    return text ? strtod(text, NULL) : 0.0;
}

static const void *pg_column_blob(gp_db_stmt *base, int c, size_t *len)
{
    struct gp__stmt_pg *st = pg_st(base);
    const char *text = pg_column_text(base, c);
    *len = 0;
    if (!text)
        return NULL;
    if (PQftype(st->res, c) != GP__OID_BYTEA) {
        *len = strlen(text);
        return *len ? text : NULL;
    }
    if (!st->blobs && !(st->blobs = calloc((size_t)PQnfields(st->res), sizeof *st->blobs)))
        return NULL;
    struct gp__pg_blob *b = &st->blobs[c];
    if (!b->bytes && !(b->bytes = PQunescapeBytea((const unsigned char *)text, &b->len)))
        return NULL;
    *len = b->len;
    return b->len ? b->bytes : NULL;
}

static const gp__db_ops PG_OPS = {
    .close = pg_close,
    .exec = pg_exec,
    .begin = pg_begin,
    .commit_send = pg_commit_send,
    .commit_ready = pg_commit_ready,
    .commit_fd = pg_commit_fd,
    .commit_wait = pg_commit_wait,
    .changes = pg_changes,
    .checkpoint = pg_checkpoint,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .bind_int64 = pg_bind_int64,
    .bind_double = pg_bind_double,
    .bind_text = pg_bind_text,
    .bind_blob = pg_bind_blob,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .reset = pg_reset,
    .column_count = pg_column_count,
    .column_name = pg_column_name,
    .column_type = pg_column_type,
    .column_int64 = pg_column_int64,
    .column_double = pg_column_double,
    .column_text = pg_column_text,
    .column_blob = pg_column_blob,
};

/* ---- open ---- */

/* NOTICEs ("table t does not exist, skipping") are not errors and not
 * ours to print: libpq's default writes them to stderr. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* The session settings every connection runs with (see the header). */
static gp_err configure(gp_db *db, bool readonly, gp_error *err)
{
    gp_err rc = pg_exec(db, "SET synchronous_commit = on", err);
    if (rc == GP_OK && readonly)
        rc = pg_exec(db, "SET default_transaction_read_only = on", err);
    return rc;
}

gp_err gp__db_open_pg(const char *conninfo, bool readonly, gp_db **out, gp_error *err)
{
    struct gp__db_pg *db = calloc(1, sizeof *db);
    if (!db)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    const char *appname = getenv("GP_PG_APPNAME");
    /* later keywords win over what the connection string says */
    const char *keys[] = {"fallback_application_name", "dbname", "client_encoding",
                          appname && *appname ? "application_name" : NULL, NULL};
    const char *values[] = {"gpupool", conninfo, "UTF8", appname, NULL};
    db->conn = PQconnectdbParams(keys, values, 1);
    db->base.ops = &PG_OPS;
    db->base.dialect = GP_DB_POSTGRES;
    if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
        const char *msg = db->conn ? PQerrorMessage(db->conn) : "out of memory";
        gp_err rc = gp_error_set(err, GP_ERR_INVALID, GP_DB_CONNECTION_FIELD, "cannot connect to PostgreSQL: %.*s",
                                 (int)strcspn(msg, "\n"), msg);
        pg_close(&db->base);
        return rc;
    }
    PQsetNoticeProcessor(db->conn, ignore_notice, NULL);
    gp_err rc = configure(&db->base, readonly, err);
    if (rc != GP_OK) {
        pg_close(&db->base);
        return rc;
    }
    *out = &db->base;
    return GP_OK;
}
