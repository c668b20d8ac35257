/* store_ledger.c - the usage ledger: append-only, hash-chained records.
 *
 * Every usage interval the engine opens or closes leaves one record,
 * written in the transaction of the decision (server/ledger.c builds the
 * fields).  A closed interval is a new record of kind "close", never an
 * update of its "open" one.  Rows are only ever inserted.
 *
 * The record is canonical JSON text: compact, keys sorted, integers and
 * strings only (no floating point), with the store's two chain fields
 * added to the caller's:
 *
 *     "seq"   its place in the ledger, consecutive from 1
 *     "prev"  the hash of record seq - 1 (64 zeros for the first)
 *
 * and hash = SHA-256 of exactly that text, as lowercase hex, stored beside
 * it.  So record n commits to its own content, to its position and, via
 * prev, to every record before it.
 *
 * Example: the first two records of a fresh store
 *     seq 1  {"class":"burstable",...,"kind":"open","prev":"0000...0000","seq":1,...}
 *            hash 3f1c...
 *     seq 2  {...,"kind":"close","prev":"3f1c...","seq":2,...}
 *
 * Verify walks the rows in seq order and names the first bad one: a gap in
 * seq (a deleted record), text that does not parse or is not canonical, a
 * record whose own "seq" is not its row's (reordered), a "prev" that is not
 * the previous hash, a hash that is not SHA-256 of the text (edited).
 * Deleting the newest records leaves a shorter chain that still verifies:
 * the head the daemon logs every hour (seq and hash) is what an outside
 * copy compares against.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEDGER_JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS)

/* The typed columns (6..15): the record's own fields, NULL where it has none. */
static void bind_typed(gp_db_stmt *st, const json_t *record)
{
    static const char *const fields[] = {"job", "tenant", "user", "gpu_type", "milli_gpus", "share", "class",
                                         "topology", "start", "end"};
    for (int i = 0; i < (int)(sizeof fields / sizeof fields[0]); i++) {
        json_t *v = json_object_get(record, fields[i]);
        if (json_is_integer(v))
            gp_db_bind_int64(st, 6 + i, json_integer_value(v));
        else
            gp_db_bind_text(st, 6 + i, json_string_value(v));
    }
}

/* ---- the levels in force (gp_store_ledger_levels) ----
 *
 * The newest guarantee record of each (tenant, type) and capacity record
 * of each type.  PostgreSQL has no loose index scan: the query reads every
 * such record, and a first start that adds 12,500 nodes appends a capacity
 * record per node, in one transaction, and asks for the levels before
 * each.  So a transaction reads them once and its own appends keep them
 * current (the writer is the only one appending: the lease fences it);
 * commit and rollback forget them. */

static bool is_level(const char *kind)
{
    return kind && (strcmp(kind, "guarantee") == 0 || strcmp(kind, "capacity") == 0);
}

static void levels_put(json_t *levels, const char *kind, const char *tenant, const char *type, int64_t milli)
{
    char key[600];
    snprintf(key, sizeof key, "%s\t%s\t%s", kind, tenant ? tenant : "", type ? type : "");
    json_object_set_new(levels, key, json_pack("[s, s?, s?, I]", kind, tenant, type, (json_int_t)milli));
}

static void levels_update(gp_store *s, const json_t *record)
{
    const char *kind = json_string_value(json_object_get(record, "kind"));
    if (s->levels && is_level(kind))
        levels_put(s->levels, kind, json_string_value(json_object_get(record, "tenant")),
                   json_string_value(json_object_get(record, "gpu_type")),
                   json_integer_value(json_object_get(record, "milli_gpus")));
}

gp_err gp_store_ledger_append(gp_store *s, json_t *record, gp_error *err)
{
    gp_err rc = gp__store_head_load(s, GP__ST_LEDGER_LAST, &s->ledger, err);
    if (rc)
        return rc;
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_LEDGER_APPEND, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int64_t seq = s->ledger.seq + 1;
    json_object_set_new(record, "seq", json_integer(seq));
    json_object_set_new(record, "prev", json_string(s->ledger.hash));
    char *text = json_dumps(record, LEDGER_JSON_FLAGS);
    if (!text)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    char hash[65];
    gp__store_sha256_hex(text, strlen(text), hash);
    gp_db_bind_int64(st, 1, seq);
    gp_db_bind_int64(st, 2, json_integer_value(json_object_get(record, "interval")));
    gp_db_bind_text(st, 3, json_string_value(json_object_get(record, "kind")));
    gp_db_bind_text(st, 4, text);
    gp_db_bind_text(st, 5, hash);
    bind_typed(st, record);
    rc = gp__store_exec_stmt(st, "ledger append", err);
    free(text);
    if (rc == GP_OK) {
        s->ledger.seq = seq;
        memcpy(s->ledger.hash, hash, sizeof hash);
        levels_update(s, record);
    }
    return rc;
}

gp_err gp_store_ledger_open_get(gp_store *s, uint64_t interval, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_LEDGER_OPEN_GET, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, (int64_t)interval);
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW)
        *out = json_loads(gp_db_column_text(st, 0), 0, NULL);
    gp_err rc = step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "ledger read");
    gp_db_reset(st);
    return rc;
}

gp_err gp_store_ledger_head(gp_store *s, int64_t *seq, char hash[65], gp_error *err)
{
    gp_err rc = gp__store_head_load(s, GP__ST_LEDGER_LAST, &s->ledger, err);
    if (rc == GP_OK) {
        *seq = s->ledger.seq;
        memcpy(hash, s->ledger.hash, 65);
    }
    return rc;
}

gp_err gp_store_ledger_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT seq, record, hash FROM ledger WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                                       0, "ledger list", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, after);
    gp_db_bind_int64(st, 2, limit);
    json_t *records = json_array();
    int64_t last = 0;
    int n = 0;
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        json_t *rec = json_loads(gp_db_column_text(st, 1), 0, NULL);
        json_array_append_new(records, json_pack("{s:I, s:o, s:s}", "seq", (json_int_t)gp_db_column_int64(st, 0),
                                                 "record", rec ? rec : json_null(), "hash", gp_db_column_text(st, 2)));
        last = gp_db_column_int64(st, 0);
        n++;
    }
    gp_db_finalize(st);
    *out = json_pack("{s:o, s:o}", "records", records, "next", n == limit ? json_integer(last) : json_null());
    return GP_OK;
}

/* ---- verify ---- */

static bool check_fail(gp_store_ledger_check *c, int64_t seq, const char *why)
{
    c->first_bad = seq;
    snprintf(c->why, sizeof c->why, "%s", why);
    return false;
}

/* One row against the chain so far (c->head_*): true when it holds. */
static bool check_row(gp_store_ledger_check *c, int64_t seq, const char *text, const char *hash)
{
    char why[160];
    if (seq != c->head_seq + 1) {
        snprintf(why, sizeof why, "record %lld is missing (the next is %lld)", (long long)c->head_seq + 1,
                 (long long)seq);
        return check_fail(c, c->head_seq + 1, why);
    }
    json_t *rec = text ? json_loads(text, 0, NULL) : NULL;
    char *canon = json_is_object(rec) ? json_dumps(rec, LEDGER_JSON_FLAGS) : NULL;
    bool canonical = canon && strcmp(canon, text) == 0;
    json_int_t own_seq = json_integer_value(json_object_get(rec, "seq"));
    const char *prev = json_string_value(json_object_get(rec, "prev"));
    bool prev_ok = prev && strcmp(prev, c->head_hash) == 0;
    free(canon);
    json_decref(rec);
    char recomputed[65];
    gp__store_sha256_hex(text ? text : "", text ? strlen(text) : 0, recomputed);
    if (!canonical)
        return check_fail(c, seq, "its text is not the canonical JSON of a record");
    if (own_seq != seq) {
        snprintf(why, sizeof why, "it says it is record %lld: records were reordered", (long long)own_seq);
        return check_fail(c, seq, why);
    }
    if (!prev_ok)
        return check_fail(c, seq, "its prev is not the hash of the record before it");
    if (!hash || strcmp(hash, recomputed) != 0)
        return check_fail(c, seq, "its hash is not the SHA-256 of its text: it was edited");
    c->head_seq = seq;
    memcpy(c->head_hash, recomputed, sizeof recomputed);
    return true;
}

gp_err gp_store_ledger_verify(gp_store *s, gp_store_ledger_check *c, gp_error *err)
{
    memset(c, 0, sizeof *c);
    memcpy(c->head_hash, GP__ZERO_HASH, sizeof GP__ZERO_HASH);
    gp_db_stmt *st = gp__store_prepare(s, "SELECT seq, record, hash FROM ledger ORDER BY seq", GP_DB_STREAM,
                                       "ledger verify", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW) {
        c->records++;
        if (!check_row(c, gp_db_column_int64(st, 0), gp_db_column_text(st, 1), gp_db_column_text(st, 2)))
            break;
    }
    gp_err rc = step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "ledger verify");
    gp_db_finalize(st);
    return rc;
}

/* ---- typed reads: what a bill and the guarantee/capacity records need ---- */

#define BILL_COLUMNS                                                                                             \
    "seq, kind, interval_id, job, tenant, \"user\", gpu_type, share, class, topology, milli_gpus, start, end_time"

/* The records a bill of [from, as_of) needs: usage that overlaps it (a
 * close that ends after from: the covering index ledger_bill; an open with
 * no close yet: its interval's usage row is still open, written in the
 * same transactions as the ledger), every guarantee and capacity record
 * before as_of, every booking record of a window that starts before as_of.  ?1 is as_of, ?2 from (only the closes need it: a
 * parameter a statement does not use has no type on PostgreSQL). */
static const struct bill_query {
    const char *sql;
    bool from;
    bool booking; /* the record's text follows the columns: its "booking" is the name */
} BILL_QUERIES[] = {
    {"SELECT " BILL_COLUMNS " FROM ledger WHERE kind = 'close' AND start < ?1 AND end_time > ?2", true, false},
    {"SELECT " BILL_COLUMNS " FROM ledger WHERE kind = 'open' AND start < ?1 AND interval_id IN"
     " (SELECT interval_id FROM usage WHERE end_time IS NULL)",
     false, false},
    {"SELECT " BILL_COLUMNS " FROM ledger WHERE kind IN ('guarantee', 'capacity') AND start < ?1", false, false},
    /* every record of a booking that started before as_of: the newest one counts, wherever its end */
    {"SELECT " BILL_COLUMNS ", record FROM ledger WHERE kind = 'booking' AND start < ?1", false, true},
};

static gp_err bill_query(gp_store *s, const struct bill_query *q, int64_t from, int64_t as_of, gp_store_bill_fn fn,
                         void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, q->sql, GP_DB_STREAM, "bill records", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, as_of);
    if (q->from)
        gp_db_bind_int64(st, 2, from);
    gp_err rc = GP_OK;
    int step = GP_DB_DONE;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_bill_record r = {
            .seq = gp_db_column_int64(st, 0),
            .kind = gp_db_column_text(st, 1),
            .interval = gp_db_column_int64(st, 2),
            .job = gp_db_column_int64(st, 3),
            .tenant = gp_db_column_text(st, 4),
            .user = gp_db_column_text(st, 5),
            .gpu_type = gp_db_column_text(st, 6),
            .share = gp_db_column_text(st, 7),
            .cls = gp_db_column_text(st, 8),
            .topology = gp_db_column_text(st, 9),
            .milli_gpus = gp_db_column_int64(st, 10),
            .start = gp_db_column_int64(st, 11),
            .end = gp__store_int_or_none(st, 12),
        };
        json_t *record = q->booking ? json_loads(gp_db_column_text(st, 13), 0, NULL) : NULL;
        r.booking = json_string_value(json_object_get(record, "booking"));
        rc = fn(ctx, &r, err);
        json_decref(record);
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "bill records");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_bill_records(gp_store *s, int64_t from, int64_t as_of, gp_store_bill_fn fn, void *ctx, gp_error *err)
{
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < sizeof BILL_QUERIES / sizeof BILL_QUERIES[0]; i++)
        rc = bill_query(s, &BILL_QUERIES[i], from, as_of, fn, ctx, err);
    return rc;
}

static gp_err levels_read(gp_store *s, json_t *levels, gp_error *err)
{
    /* the newest record of each (kind, tenant, gpu_type) */
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT l.kind, l.tenant, l.gpu_type, l.milli_gpus FROM ledger l JOIN"
                                       " (SELECT max(seq) AS seq FROM ledger WHERE kind IN ('guarantee', 'capacity')"
                                       " GROUP BY kind, tenant, gpu_type) newest ON l.seq = newest.seq",
                                       GP_DB_STREAM, "ledger levels", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW)
        levels_put(levels, gp_db_column_text(st, 0), gp_db_column_text(st, 1), gp_db_column_text(st, 2),
                   gp_db_column_int64(st, 3));
    gp_err rc = step == GP_DB_DONE ? GP_OK : gp__store_failed(err, "ledger levels");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_ledger_levels(gp_store *s, gp_store_level_fn fn, void *ctx, gp_error *err)
{
    json_t *levels = s->levels ? json_incref(s->levels) : json_object();
    gp_err rc = s->levels ? GP_OK : levels_read(s, levels, err);
    if (rc == GP_OK && s->in_tx && !s->levels)
        s->levels = json_incref(levels);
    const char *key;
    json_t *row;
    json_object_foreach(levels, key, row) {
        if (rc == GP_OK)
            fn(ctx, json_string_value(json_array_get(row, 0)), json_string_value(json_array_get(row, 1)),
               json_string_value(json_array_get(row, 2)), json_integer_value(json_array_get(row, 3)));
    }
    json_decref(levels);
    return rc;
}
