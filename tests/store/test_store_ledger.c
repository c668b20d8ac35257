/* test_store_ledger.c - the store suite's chained and accounting
 * records: the audit chain, the usage ledger and its levels, the bill's
 * records, prices and billing modes, GPU checks and health, and
 * allocated-vs-used per job, on either database (store_fixture.h; ctest
 * store_ledger_sqlite and store_ledger_postgres).  db.h reaches under the
 * store only to tamper with a chained row.
 *
 * Example: an audit row edited afterwards is the first broken link verify
 * names; a ledger record forged with its own hash breaks the next link.
 */
#include "dbtest.h"
#include "store_fixture.h"
#include "store/db.h"
#include "store/store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <gnutls/crypto.h>

static void the_audit_chain_lists_verifies_and_names_a_tampered_row(void **state)
{
    fixture *f = *state;
    append_audit(f->s, "submit");
    append_audit(f->s, "cancel");
    append_audit(f->s, "token.create");
    json_t *out = NULL;
    OK(gp_store_audit_list(f->s, 1, 10, &out, &e_));
    json_t *rows = json_object_get(out, "audit");
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "action")), "cancel");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 0), "seq")), 2);
    json_decref(out);
    int64_t checked = 0, broken = -1;
    OK(gp_store_audit_verify(f->s, &checked, &broken, &e_));
    assert_int_equal(checked, 3);
    assert_int_equal(broken, 0);

    raw_exec(f, "UPDATE audit SET actor = 'mallory' WHERE seq = 2");
    OK(gp_store_audit_verify(f->s, &checked, &broken, &e_));
    assert_int_equal(broken, 2);
}

/* Removing the row that records an action (what someone covering their
 * tracks would do) leaves a gap verify names, though every row left is
 * intact. */
static void an_audit_row_deleted_is_named_as_the_first_broken(void **state)
{
    fixture *f = *state;
    append_audit(f->s, "submit");
    append_audit(f->s, "token.create");
    append_audit(f->s, "cancel");
    raw_exec(f, "DELETE FROM audit WHERE seq = 2");
    int64_t checked = 0, broken = 0;
    OK(gp_store_audit_verify(f->s, &checked, &broken, &e_));
    assert_int_equal(broken, 2);
}

/* ---- ledger, bills ---- */

static void append_usage_records(gp_store *s)
{
    gp_store_usage open = {.interval_id = 1, .job_id = 1, .tenant = "a", .gpu_type = "H100", .cls = "guaranteed",
                           .topology = "", .milli_gpus = 1000, .start = 150};
    OK(gp_store_usage_open(s, &open, &e_));
    append_record(s, "{s:I, s:s, s:I, s:s, s:s, s:s, s:I, s:s, s:s, s:I}", "interval", (json_int_t)1, "kind",
                  "open", "job", (json_int_t)1, "tenant", "a", "user", "ann", "gpu_type", "H100", "milli_gpus",
                  (json_int_t)1000, "class", "guaranteed", "topology", "", "start", (json_int_t)150);
    append_record(s, "{s:I, s:s, s:I, s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}", "interval", (json_int_t)2, "kind",
                  "close", "job", (json_int_t)2, "tenant", "b", "user", "bob", "gpu_type", "H100", "milli_gpus",
                  (json_int_t)500, "class", "burstable", "topology", "", "start", (json_int_t)50, "end",
                  (json_int_t)150);
    append_record(s, "{s:I, s:s, s:s, s:s, s:I, s:I}", "interval", (json_int_t)0, "kind", "guarantee", "tenant", "a",
                  "gpu_type", "H100", "milli_gpus", (json_int_t)8000, "start", (json_int_t)10);
}

static void the_ledger_chains_lists_and_verifies(void **state)
{
    fixture *f = *state;
    int64_t seq = -1;
    char hash[65];
    OK(gp_store_ledger_head(f->s, &seq, hash, &e_));
    assert_int_equal(seq, 0);
    append_usage_records(f->s);
    OK(gp_store_ledger_head(f->s, &seq, hash, &e_));
    assert_int_equal(seq, 3);
    assert_int_equal(strlen(hash), 64);

    json_t *out = NULL;
    OK(gp_store_ledger_list(f->s, 0, 2, &out, &e_));
    json_t *records = json_object_get(out, "records");
    assert_int_equal(json_array_size(records), 2);
    assert_int_equal(json_integer_value(json_object_get(out, "next")), 2);
    json_t *second = json_object_get(json_array_get(records, 1), "record");
    assert_string_equal(json_string_value(json_object_get(second, "kind")), "close");
    assert_int_equal(json_integer_value(json_object_get(second, "seq")), 2);
    json_decref(out);

    OK(gp_store_ledger_open_get(f->s, 1, &out, &e_));
    assert_non_null(out);
    assert_string_equal(json_string_value(json_object_get(out, "tenant")), "a");
    json_decref(out);
    OK(gp_store_ledger_open_get(f->s, 2, &out, &e_));
    assert_null(out);

    gp_store_ledger_check check;
    OK(gp_store_ledger_verify(f->s, &check, &e_));
    assert_int_equal(check.records, 3);
    assert_int_equal(check.first_bad, 0);
    assert_string_equal(check.head_hash, hash);

    raw_exec(f, "UPDATE ledger SET record = replace(record, '\"bob\"', '\"eve\"') WHERE seq = 2");
    OK(gp_store_ledger_verify(f->s, &check, &e_));
    assert_int_equal(check.first_bad, 2);
}

/* The text of ledger record seq with `from` replaced by `to`, written back
 * with its hash recomputed: a forgery that passes the record's own check. */
static void forge_ledger_record(const fixture *f, int64_t seq, const char *from, const char *to)
{
    gp_db *db = dbtest_open(f->url, false);
    gp_db_stmt *st = dbtest_prepare(db, "SELECT record FROM ledger WHERE seq = ?1", 0);
    gp_db_bind_int64(st, 1, seq);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    char text[1024];
    const char *old = gp_db_column_text(st, 0), *at = strstr(old, from);
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - old), old, to, at + strlen(from));
    gp_db_finalize(st);
    unsigned char digest[32];
    char hash[65];
    assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), digest), 0);
    for (int i = 0; i < 32; i++)
        snprintf(hash + 2 * i, 3, "%02x", digest[i]);
    st = dbtest_prepare(db, "UPDATE ledger SET record = ?1, hash = ?2 WHERE seq = ?3", 0);
    gp_db_bind_text(st, 1, text);
    gp_db_bind_text(st, 2, hash);
    gp_db_bind_int64(st, 3, seq);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_DONE);
    gp_db_finalize(st);
    gp_db_close(db);
}

/* verify stops at record seq (the records before it hold) and says why. */
static void assert_ledger_breaks_at(const fixture *f, int64_t seq, const char *why)
{
    gp_store_ledger_check check;
    OK(gp_store_ledger_verify(f->s, &check, &e_));
    assert_int_equal(check.first_bad, seq);
    assert_int_equal(check.head_seq, seq - 1);
    assert_non_null(strstr(check.why, why));
}

/* A record rewritten with a hash that matches its new text holds on its
 * own: the chain breaks at the next record, whose prev names the old hash. */
static void a_ledger_record_forged_with_its_hash_breaks_the_next_link(void **state)
{
    fixture *f = *state;
    append_usage_records(f->s);
    forge_ledger_record(f, 2, "\"milli_gpus\":500", "\"milli_gpus\":50");
    assert_ledger_breaks_at(f, 3, "its prev is not the hash");
}

/* A record whose text is not what the writer would write (a space added,
 * its hash recomputed) is refused: the hash covers one text per record. */
static void a_ledger_record_in_other_json_is_refused(void **state)
{
    fixture *f = *state;
    append_usage_records(f->s);
    forge_ledger_record(f, 3, "\"kind\":", "\"kind\": ");
    assert_ledger_breaks_at(f, 3, "not the canonical JSON");
}

typedef struct seen_bill {
    int n;
    int64_t seq[8];
    char kind[8][16];
    int64_t end[8];
} seen_bill;

static gp_err collect_bill(void *ctx, const gp_bill_record *r, gp_error *err)
{
    (void)err;
    seen_bill *seen = ctx;
    int i = seen->n++;
    seen->seq[i] = r->seq;
    snprintf(seen->kind[i], sizeof seen->kind[i], "%s", r->kind);
    seen->end[i] = r->end;
    return GP_OK;
}

static void level_seen(void *ctx, const char *kind, const char *tenant, const char *gpu_type, int64_t milli)
{
    int64_t *got = ctx;
    if (strcmp(kind, "guarantee") == 0 && tenant && strcmp(tenant, "a") == 0 && strcmp(gpu_type, "H100") == 0)
        *got = milli;
}

static void bill_records_come_from_the_typed_columns(void **state)
{
    fixture *f = *state;
    append_usage_records(f->s);
    seen_bill seen = {0};
    OK(gp_store_bill_records(f->s, 100, 200, collect_bill, &seen, &e_));
    assert_int_equal(seen.n, 3);
    assert_string_equal(seen.kind[0], "close");
    assert_int_equal(seen.end[0], 150);
    assert_string_equal(seen.kind[1], "open");
    assert_int_equal(seen.end[1], -1);
    assert_string_equal(seen.kind[2], "guarantee");

    seen_bill later = {0};
    OK(gp_store_bill_records(f->s, 160, 200, collect_bill, &later, &e_)); /* the close ended before 160 */
    assert_int_equal(later.n, 2);

    int64_t level = -1;
    OK(gp_store_ledger_levels(f->s, level_seen, &level, &e_));
    assert_int_equal(level, 8000);
}

static void append_guarantee(gp_store *s, int64_t milli)
{
    append_record(s, "{s:I, s:s, s:s, s:s, s:I, s:I}", "interval", (json_int_t)0, "kind", "guarantee", "tenant", "a",
                  "gpu_type", "H100", "milli_gpus", (json_int_t)milli, "start", (json_int_t)10);
}

static int64_t level_of_a(gp_store *s)
{
    int64_t level = -1;
    OK(gp_store_ledger_levels(s, level_seen, &level, &e_));
    return level;
}

/* A transaction reads the levels once and its appends keep them current
 * (the first start asks before each of thousands of capacity records);
 * what a rollback undid is not in force afterwards. */
static void ledger_levels_follow_the_transactions_appends_and_its_rollback(void **state)
{
    fixture *f = *state;
    OK(gp_store_begin(f->s, &e_));
    assert_int_equal(level_of_a(f->s), -1);
    append_guarantee(f->s, 1000);
    assert_int_equal(level_of_a(f->s), 1000);
    append_guarantee(f->s, 2000);
    assert_int_equal(level_of_a(f->s), 2000);
    OK(gp_store_commit(f->s, &e_));
    assert_int_equal(level_of_a(f->s), 2000);
    OK(gp_store_begin(f->s, &e_));
    assert_int_equal(level_of_a(f->s), 2000);
    append_guarantee(f->s, 5000);
    assert_int_equal(level_of_a(f->s), 5000);
    gp_store_rollback(f->s);
    assert_int_equal(level_of_a(f->s), 2000);
}

static void prices_and_billing_modes_are_kept(void **state)
{
    fixture *f = *state;
    int64_t effective = 0;
    char currency[8];
    OK(gp_store_price_latest(f->s, &effective, currency, sizeof currency, &e_));
    assert_int_equal(effective, -1);
    assert_string_equal(currency, "");
    OK(gp_store_price_add(f->s, 100, "EUR", "{\"effective\": 100}", 1, &e_));
    OK(gp_store_price_add(f->s, 50, "EUR", "{\"effective\": 50}", 1, &e_));
    gp_error err = {0};
    assert_int_equal(gp_store_price_add(f->s, 100, "EUR", "{}", 2, &err), GP_ERR_EXISTS);
    OK(gp_store_price_latest(f->s, &effective, currency, sizeof currency, &e_));
    assert_int_equal(effective, 100);
    assert_string_equal(currency, "EUR");
    OK(gp_store_bill_mode_set(f->s, "a", "showback", 1, &e_));
    OK(gp_store_bill_mode_set(f->s, "a", "chargeback", 2, &e_));
    json_t *table = NULL;
    OK(gp_store_prices_get(f->s, &table, &e_));
    assert_string_equal(json_string_value(json_object_get(table, "currency")), "EUR");
    json_t *versions = json_object_get(table, "versions");
    assert_int_equal(json_array_size(versions), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(versions, 0), "effective")), 50);
    assert_string_equal(json_string_value(json_object_get(json_object_get(table, "modes"), "a")), "chargeback");
    json_decref(table);
}

/* ---- GPU health ---- */

static void gpu_checks_health_and_drains_are_kept(void **state)
{
    fixture *f = *state;
    gp_store_gpu_check ok = {.node = "n1", .gpu = 0, .at = 10, .check = "sim", .passed = true, .duration_ms = -1};
    gp_store_gpu_check xid = {.node = "n1", .gpu = 1, .at = 11, .check = "xid", .passed = false,
                              .detail = "Xid 79", .xid = 79, .action = "reset", .duration_ms = 5};
    gp_store_gpu_check later = ok;
    later.at = 12;
    OK(gp_store_gpu_check_add(f->s, &ok, &e_));
    OK(gp_store_gpu_check_add(f->s, &xid, &e_));
    OK(gp_store_gpu_check_add(f->s, &later, &e_));
    json_t *out = NULL;
    OK(gp_store_gpu_checks_list(f->s, "n1", -1, 10, &out, &e_));
    json_t *checks = json_object_get(out, "checks");
    assert_int_equal(json_array_size(checks), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(checks, 0), "at")), 12);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(checks, 1), "xid")), 79);
    json_decref(out);
    OK(gp_store_gpu_checks_list(f->s, "n1", 1, 10, &out, &e_));
    assert_int_equal(json_array_size(json_object_get(out, "checks")), 1);
    json_decref(out);

    OK(gp_store_gpu_health_set(f->s, "n1", 1, false, 11, "Xid 79: reset", &e_));
    OK(gp_store_gpu_health_view(f->s, "n1", 2, &out, &e_));
    assert_int_equal(json_array_size(out), 2);
    json_t *g1 = json_array_get(out, 1);
    assert_int_equal(json_integer_value(json_object_get(g1, "since")), 11);
    assert_string_equal(json_string_value(json_object_get(g1, "reason")), "Xid 79: reset");
    assert_int_equal(json_array_size(json_object_get(g1, "xids")), 1);
    assert_true(json_is_null(json_object_get(json_array_get(out, 0), "since")));
    json_decref(out);

    bool drained = true;
    OK(gp_store_health_drain_get(f->s, "n1", &drained, &e_));
    assert_false(drained);
    OK(gp_store_health_drain_set(f->s, "n1", true, 20, &e_));
    OK(gp_store_health_drain_set(f->s, "n1", true, 21, &e_)); /* again: still one drain */
    OK(gp_store_health_drain_get(f->s, "n1", &drained, &e_));
    assert_true(drained);
    OK(gp_store_health_drain_set(f->s, "n1", false, 30, &e_));
    OK(gp_store_health_drain_get(f->s, "n1", &drained, &e_));
    assert_false(drained);
}

/* ---- allocated vs used ---- */

typedef struct seen_use {
    int n;
    gp_store_job_use last;
} seen_use;

static void collect_use(void *ctx, const gp_store_job_use *u)
{
    seen_use *seen = ctx;
    seen->n++;
    seen->last = *u;
}

static void job_use_counters_are_kept_and_summed(void **state)
{
    fixture *f = *state;
    OK(gp_store_job_use_open(f->s, 5, "a/x", "H100", 500, &e_));
    OK(gp_store_job_use_lost(f->s, 5, 30, &e_));
    gp_store_job_use u = {.job_id = 5, .busy_gpu_s = 12.5, .peak_sm = 97, .peak_memory_mib = 40000, .updated = 77};
    u.below_since[0] = 0;
    u.below_since[50] = 1234567890123LL;
    u.below_since[100] = -5;
    OK(gp_store_job_use_sample(f->s, &u, &e_));
    gp_store_job_use ghost = {.job_id = 6, .busy_gpu_s = 1};
    OK(gp_store_job_use_sample(f->s, &ghost, &e_)); /* no row: nothing */
    seen_use seen = {0};
    OK(gp_store_job_use_scan(f->s, collect_use, &seen, &e_));
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.last.job_id, 5);
    assert_true(seen.last.busy_gpu_s == 12.5);
    assert_int_equal(seen.last.peak_sm, 97);
    assert_int_equal(seen.last.peak_memory_mib, 40000);
    assert_int_equal(seen.last.updated, 77);
    assert_memory_equal(seen.last.below_since, u.below_since, sizeof u.below_since);

    json_t *out = NULL;
    const char *scope[] = {"a"};
    OK(gp_store_use_query(f->s, scope, 1, NULL, &out, &e_));
    json_t *pair = json_object_get(json_object_get(out, "a/x"), "H100");
    assert_true(json_real_value(json_array_get(pair, 0)) == 6.25); /* 12.5 busy x 0.5 GPU */
    assert_int_equal(json_integer_value(json_array_get(pair, 1)), 30);
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(the_audit_chain_lists_verifies_and_names_a_tampered_row),
        CASE(an_audit_row_deleted_is_named_as_the_first_broken),
        CASE(the_ledger_chains_lists_and_verifies),
        CASE(a_ledger_record_forged_with_its_hash_breaks_the_next_link),
        CASE(a_ledger_record_in_other_json_is_refused),
        CASE(bill_records_come_from_the_typed_columns),
        CASE(ledger_levels_follow_the_transactions_appends_and_its_rollback),
        CASE(prices_and_billing_modes_are_kept),
        CASE(gpu_checks_health_and_drains_are_kept),
        CASE(job_use_counters_are_kept_and_summed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
