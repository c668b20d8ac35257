/* store_audit.c - the hash-chained audit table.
 *
 * Every mutating API request leaves one row, written in the transaction of
 * the change it made.  Row n carries hash_n = SHA-256(record_n), where
 * record_n is the length-prefixed concatenation ("<len>:<bytes>", so no
 * field can run into the next) of
 *
 *     hash_{n-1} (64 hex chars, 64 zeros for the first row), seq, time,
 *     request_id, actor, role, action, target, result
 *
 * Changing, inserting or deleting any row breaks the link at that row (or
 * the next), and verify names the first seq where the recomputed hash or
 * the stored prev_hash disagrees.  seq are consecutive from 1: a gap is a
 * deleted row and counts as a broken link too.
 *
 * The writer caches the head (last seq and hash) so appending costs one
 * hash and one insert.  The chain helpers (the zero hash, SHA-256 as hex,
 * the cached head) live here and serve the ledger too (store_ledger.c).
 */
#include "store/store_internal.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <string.h>

const char GP__ZERO_HASH[65] = "0000000000000000000000000000000000000000000000000000000000000000";

void gp__store_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char digest[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, digest);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

typedef struct record {
    char buf[4096];
    size_t len;
} record;

static void record_add(record *r, const char *field)
{
    size_t flen = strlen(field);
    int n = snprintf(r->buf + r->len, sizeof r->buf - r->len, "%zu:", flen);
    if (n < 0 || (size_t)n >= sizeof r->buf - r->len)
        return;
    r->len += (size_t)n;
    if (flen > sizeof r->buf - r->len)
        flen = sizeof r->buf - r->len; /* fields are bounded well below this */
    memcpy(r->buf + r->len, field, flen);
    r->len += flen;
}

static void record_add_int(record *r, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    record_add(r, num);
}

static void chain_hash(const char *prev, int64_t seq, const gp_store_audit *a, char out[65])
{
    record r = {.len = 0};
    record_add(&r, prev);
    record_add_int(&r, seq);
    record_add_int(&r, a->time);
    record_add(&r, a->request_id);
    record_add(&r, a->actor);
    record_add(&r, a->role);
    record_add(&r, a->action);
    record_add(&r, a->target);
    record_add(&r, a->result);
    gp__store_sha256_hex(r.buf, r.len, out);
}

gp_err gp__store_head_load(gp_store *s, gp__stmt_id last, gp__chain_head *h, gp_error *err)
{
    if (h->loaded)
        return GP_OK;
    gp_db_stmt *st = gp__store_stmt(s, last, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    h->seq = 0;
    memcpy(h->hash, GP__ZERO_HASH, sizeof GP__ZERO_HASH);
    if (gp_db_step(st, NULL) == GP_DB_ROW) {
        h->seq = gp_db_column_int64(st, 0);
        snprintf(h->hash, sizeof h->hash, "%s", gp_db_column_text(st, 1));
    }
    gp_db_reset(st);
    h->loaded = true;
    return GP_OK;
}

gp_err gp_store_audit_append(gp_store *s, const gp_store_audit *a, gp_error *err)
{
    gp_err rc = gp__store_head_load(s, GP__ST_AUDIT_LAST, &s->audit, err);
    if (rc)
        return rc;
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_AUDIT_APPEND, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int64_t seq = s->audit.seq + 1;
    char hash[65];
    chain_hash(s->audit.hash, seq, a, hash);
    gp_db_bind_int64(st, 1, seq);
    gp_db_bind_int64(st, 2, a->time);
    gp_db_bind_text(st, 3, a->request_id);
    gp_db_bind_text(st, 4, a->actor);
    gp_db_bind_text(st, 5, a->role);
    gp_db_bind_text(st, 6, a->action);
    gp_db_bind_text(st, 7, a->target);
    gp_db_bind_text(st, 8, a->result);
    gp_db_bind_text(st, 9, s->audit.hash);
    gp_db_bind_text(st, 10, hash);
    rc = gp__store_exec_stmt(st, "audit append", err);
    if (rc == GP_OK) {
        s->audit.seq = seq;
        memcpy(s->audit.hash, hash, sizeof hash);
    }
    return rc;
}

gp_err gp_store_audit_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err)
{
    *out = NULL;
    if (limit < 1 || limit > 1000)
        limit = 1000;
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT seq, time, request_id, actor, role, action, target, result, hash"
                                       " FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                                       0, "audit list", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, after);
    gp_db_bind_int64(st, 2, limit + 1);
    json_t *rows = json_array();
    json_t *next = json_null();
    int n = 0;
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        if (n++ == limit) {
            json_decref(next);
            next = json_integer(json_integer_value(json_object_get(json_array_get(rows, limit - 1), "seq")));
            break;
        }
        json_array_append_new(rows, gp__store_row_json(st));
    }
    gp_db_finalize(st);
    *out = json_pack("{s:o, s:o}", "audit", rows, "next", next);
    return GP_OK;
}

static const char *col(gp_db_stmt *st, int i)
{
    const char *t = gp_db_column_text(st, i);
    return t ? t : "";
}

gp_err gp_store_audit_verify(gp_store *s, int64_t *checked, int64_t *first_broken, gp_error *err)
{
    *checked = 0;
    *first_broken = 0;
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT seq, time, request_id, actor, role, action, target, result, prev_hash,"
                                       " hash FROM audit ORDER BY seq",
                                       GP_DB_STREAM, "audit verify", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    char prev[65];
    memcpy(prev, GP__ZERO_HASH, sizeof GP__ZERO_HASH);
    int64_t expect_seq = 1;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW) {
        int64_t seq = gp_db_column_int64(st, 0);
        gp_store_audit a = {.time = gp_db_column_int64(st, 1),
                            .request_id = col(st, 2),
                            .actor = col(st, 3),
                            .role = col(st, 4),
                            .action = col(st, 5),
                            .target = col(st, 6),
                            .result = col(st, 7)};
        char hash[65];
        chain_hash(prev, seq, &a, hash);
        (*checked)++;
        if (seq != expect_seq || strcmp(col(st, 8), prev) != 0 || strcmp(col(st, 9), hash) != 0) {
            *first_broken = seq != expect_seq && seq > expect_seq ? expect_seq : seq;
            break;
        }
        memcpy(prev, hash, sizeof hash);
        expect_seq++;
    }
    gp_err rc = step == GP_DB_ERROR ? gp__store_failed(err, "audit verify") : GP_OK;
    gp_db_finalize(st);
    return rc;
}
