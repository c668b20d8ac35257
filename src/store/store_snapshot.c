/* store_snapshot.c - the snapshots tables: sealed engine snapshots (store.h).
 *
 * A snapshot of 100,000 live jobs is tens of MiB; written in one
 * transaction it would hold SQLite's write lock for as long and stall the
 * engine thread's commits.  So it goes in parts of 1 MiB, one short
 * transaction each, under a snapshots row that says complete only once
 * the last part is in.  A crash halfway leaves an incomplete row that no
 * start reads and the next put deletes.
 *
 * Example: seq 5000, 2.5 MiB -> snapshots(5000, created, 2621440, 3, 0),
 * parts 0, 1, 2, then complete = 1 and the complete ones older than the
 * newest two are deleted with their parts.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PART_BYTES = 1 << 20 };

static gp_err run(gp_store *s, const char *sql, int64_t a, int64_t b, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, sql, 0, "snapshot", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, a);
    gp_db_bind_int64(st, 2, b);
    return gp__store_exec_once(st, "snapshot", err);
}

/* One part in a transaction of its own.  The statement is kept: on
 * PostgreSQL a statement prepared afresh is planned for its parameters
 * every time, and planning copies the 1 MiB part (8 ms each, measured);
 * a kept one is planned generically after its first few runs. */
static gp_err part_put(gp_store *s, int64_t seq, int64_t part, const void *blob, size_t len, gp_error *err)
{
    gp_err rc = gp_store_begin(s, err);
    if (rc)
        return rc;
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_SNAPSHOT_PART, err);
    if (st) {
        gp_db_bind_int64(st, 1, seq);
        gp_db_bind_int64(st, 2, part);
        gp_db_bind_blob(st, 3, blob, len);
        rc = gp__store_exec_stmt(st, "snapshot part", err);
    } else {
        rc = err ? err->code : GP_ERR_INVALID;
    }
    if (rc == GP_OK)
        return gp_store_commit(s, err);
    gp_store_rollback(s);
    return rc;
}

/* Drops incomplete snapshots other than seq, and complete ones beyond the
 * newest keep (those with keep or more complete ones newer). */
static gp_err prune(gp_store *s, int64_t seq, int keep, gp_error *err)
{
    const char *doomed = "SELECT o.seq FROM snapshots o WHERE (o.complete = 0 AND o.seq <> ?1) OR (o.complete = 1 AND"
                         " (SELECT count(*) FROM snapshots n WHERE n.complete = 1 AND n.seq > o.seq) >= ?2)";
    char sql[512];
    snprintf(sql, sizeof sql, "DELETE FROM snapshot_parts WHERE seq IN (%s)", doomed);
    gp_err rc = run(s, sql, seq, keep, err);
    snprintf(sql, sizeof sql, "DELETE FROM snapshots WHERE seq IN (%s)", doomed);
    return rc ? rc : run(s, sql, seq, keep, err);
}

gp_err gp_store_snapshot_put(gp_store *s, int64_t seq, int64_t created, const unsigned char *bytes, size_t len,
                             int keep, gp_error *err)
{
    int64_t parts = (int64_t)((len + PART_BYTES - 1) / PART_BYTES);
    gp_err rc = gp_store_begin(s, err);
    if (rc)
        return rc;
    rc = run(s, "DELETE FROM snapshot_parts WHERE seq = ?1", seq, 0, err);
    if (rc == GP_OK)
        rc = run(s, "INSERT INTO snapshots(seq, created, bytes, parts, complete) VALUES (?1, ?2, 0, 0, 0)"
                    " ON CONFLICT(seq) DO UPDATE SET created = excluded.created, bytes = 0, parts = 0, complete = 0",
                 seq, created, err);
    if (rc == GP_OK)
        rc = gp_store_commit(s, err);
    else
        gp_store_rollback(s);
    for (int64_t p = 0; rc == GP_OK && p < parts; p++) {
        size_t off = (size_t)p * PART_BYTES, n = len - off < PART_BYTES ? len - off : PART_BYTES;
        rc = part_put(s, seq, p, bytes + off, n, err);
    }
    if (rc)
        return rc;
    rc = gp_store_begin(s, err);
    if (rc)
        return rc;
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE snapshots SET bytes = %zu, parts = ?2, complete = 1 WHERE seq = ?1", len);
    rc = run(s, sql, seq, parts, err);
    if (rc == GP_OK)
        rc = prune(s, seq, keep, err);
    if (rc == GP_OK)
        return gp_store_commit(s, err);
    gp_store_rollback(s);
    return rc;
}

gp_err gp_store_snapshots_list(gp_store *s, int64_t *seqs, size_t cap, size_t *n, gp_error *err)
{
    *n = 0;
    if (s->schema < 8)
        return GP_OK; /* a reader of an older store: none */
    gp_db_stmt *st = gp__store_prepare(s, "SELECT seq FROM snapshots WHERE complete = 1 ORDER BY seq DESC", 0,
                                       "snapshots list", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW && *n < cap)
        seqs[(*n)++] = gp_db_column_int64(st, 0);
    gp_err rc = step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "snapshots list");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_snapshot_get(gp_store *s, int64_t seq, unsigned char **bytes, size_t *len, gp_error *err)
{
    *bytes = NULL;
    *len = 0;
    const char *sql = "SELECT s.bytes, p.data FROM snapshots s JOIN snapshot_parts p ON p.seq = s.seq"
                      " WHERE s.seq = ?1 ORDER BY p.part";
    gp_db_stmt *st = gp__store_prepare(s, sql, GP_DB_STREAM, "snapshot get", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, seq);
    gp_err rc = GP_OK;
    size_t total = 0;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        size_t n;
        const void *part = gp_db_column_blob(st, 1, &n);
        if (!*bytes) {
            total = (size_t)gp_db_column_int64(st, 0);
            *bytes = malloc(total ? total : 1);
            if (!*bytes)
                rc = gp_error_set(err, GP_ERR_NOMEM, "snapshot", "out of memory");
        }
        if (rc == GP_OK && n > total - *len)
            n = total - *len; /* more than the row says: the seal's check refuses it */
        if (rc == GP_OK) {
            memcpy(*bytes + *len, part, n);
            *len += n;
        }
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "snapshot get");
    gp_db_finalize(st);
    if (rc == GP_OK && !*bytes)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "snapshot", "no snapshot of event %lld", (long long)seq);
    if (rc) {
        free(*bytes);
        *bytes = NULL;
        *len = 0;
    }
    return rc;
}
