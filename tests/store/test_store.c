/* test_store.c - the shared store suite: store.h's promises, on either database.
 *
 * Everything here goes through store.h (db.h only to reach under the
 * store where a case must: raising the schema version, tampering with a
 * chained row).  The database comes from GP_TEST_STORE_URL: unset, a new
 * temporary SQLite file per case (ctest store_sqlite); a PostgreSQL URL,
 * whose public schema is dropped and made again before each case (ctest
 * store_postgres: run_with_pg.py starts a throw-away cluster).
 *
 * Example: three events appended come back in order from scan, scan_after
 * and list (two per page, then the rest); a job of tenant "a/b" is listed
 * under scope "a" but not under "ab"; an audit row edited afterwards is
 * the first broken link verify names.
 */
#include "dbtest.h"
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

typedef struct fixture {
    char url[512];
    char dir[64]; /* SQLite: the case's temporary directory, "" on PostgreSQL */
    gp_store *s;
} fixture;

static bool on_postgres(const fixture *f) { return strncmp(f->url, "sqlite:", 7) != 0; }

/* db.h under the store, for what store.h does not offer. */
static void raw_exec(const fixture *f, const char *sql)
{
    gp_db *db = dbtest_open(f->url, false);
    dbtest_exec(db, sql);
    gp_db_close(db);
}

static gp_store *open_store(const fixture *f, bool readonly)
{
    gp_store *s = NULL;
    gp_error err = {0};
    if (gp_store_open(f->url, readonly, &s, &err) != GP_OK)
        fail_msg("store open %s: %s", f->url, err.message);
    return s;
}

static int fresh_store(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *url = getenv("GP_TEST_STORE_URL");
    if (url && *url && strncmp(url, "sqlite:", 7) != 0) {
        snprintf(f->url, sizeof f->url, "%s", url);
        raw_exec(f, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    } else {
        snprintf(f->dir, sizeof f->dir, "/tmp/gp-test-store-XXXXXX");
        if (!mkdtemp(f->dir))
            return -1;
        snprintf(f->url, sizeof f->url, "sqlite:%s/store.db", f->dir);
    }
    f->s = open_store(f, false);
    *state = f;
    return 0;
}

static int close_store(void **state)
{
    fixture *f = *state;
    gp_store_close(f->s);
    if (f->dir[0]) {
        const char *suffixes[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            char path[600];
            snprintf(path, sizeof path, "%s%s", f->url + 7, suffixes[i]);
            remove(path);
        }
        remove(f->dir);
    }
    free(f);
    return 0;
}

/* OK(call): the call (which passes &e_ as its gp_error) must succeed;
 * else the case fails with the store's message. */
#define OK(call)                                                                                                  \
    do {                                                                                                          \
        gp_error e_ = {0};                                                                                        \
        if ((call) != GP_OK)                                                                                      \
            fail_msg("%s: %s", #call, e_.message);                                                                \
    } while (0)

/* ---- open, schema, meta ---- */

static void a_store_keeps_its_meta_across_reopening(void **state)
{
    fixture *f = *state;
    gp_error err = {0};
    assert_int_equal(gp_store_meta_get(f->s, "next_job_id", -7), -7);
    assert_int_equal(gp_store_meta_set(f->s, "next_job_id", 42, &err), GP_OK);
    assert_int_equal(gp_store_meta_set(f->s, "next_job_id", INT64_MAX, &err), GP_OK);
    gp_store_close(f->s);
    f->s = open_store(f, false);
    assert_true(gp_store_meta_get(f->s, "next_job_id", 0) == INT64_MAX);
    gp_store *reader = open_store(f, true);
    assert_true(gp_store_meta_get(reader, "next_job_id", 0) == INT64_MAX);
    gp_store_close(reader);
}

static void a_newer_schema_is_refused(void **state)
{
    fixture *f = *state;
    gp_store_close(f->s);
    f->s = NULL;
    raw_exec(f, on_postgres(f) ? "UPDATE meta SET value = 999 WHERE key = 'schema_version'"
                               : "PRAGMA user_version = 999");
    for (int readonly = 0; readonly <= 1; readonly++) {
        gp_store *s = NULL;
        gp_error err = {0};
        assert_int_equal(gp_store_open(f->url, readonly, &s, &err), GP_ERR_CONFLICT);
        assert_null(s);
        assert_string_equal(err.field, "store");
        assert_non_null(strstr(err.message, "999"));
    }
}

/* Set in a transaction: read back in it, written once by its commit,
 * forgotten by its rollback. */
static void meta_set_in_a_transaction_is_kept_until_its_end(void **state)
{
    fixture *f = *state;
    gp_error err;
    OK(gp_store_begin(f->s, &err));
    for (int64_t id = 2; id <= 30; id++)
        OK(gp_store_meta_set(f->s, "next_job_id", id, &err));
    assert_int_equal(gp_store_meta_get(f->s, "next_job_id", -1), 30);
    OK(gp_store_commit(f->s, &err));
    gp_store *reader = open_store(f, true);
    assert_int_equal(gp_store_meta_get(reader, "next_job_id", -1), 30);
    OK(gp_store_begin(f->s, &err));
    OK(gp_store_meta_set(f->s, "next_job_id", 31, &err));
    gp_store_rollback(f->s);
    assert_int_equal(gp_store_meta_get(f->s, "next_job_id", -1), 30);
    assert_int_equal(gp_store_meta_get(reader, "next_job_id", -1), 30);
    gp_store_close(reader);
}

static void a_reader_cannot_write(void **state)
{
    fixture *f = *state;
    gp_store *reader = open_store(f, true);
    gp_error err = {0};
    assert_int_not_equal(gp_store_meta_set(reader, "x", 1, &err), GP_OK);
    assert_string_equal(err.field, "store");
    gp_store_close(reader);
    assert_int_equal(gp_store_meta_get(f->s, "x", -1), -1);
}

/* ---- event log ---- */

static gp_store_event event(const char *kind, int64_t time, int64_t decisions, const char *digest)
{
    return (gp_store_event){.time = time, .kind = kind, .payload = "{\"a\": 1}", .version = 2,
                            .decisions = decisions, .digest = digest};
}

typedef struct seen_events {
    int n;
    int64_t seq[8];
    char kind[8][16];
    int64_t decisions[8];
    bool digest_null[8];
    int stop_at; /* fail on this call (1-based), 0 = never */
} seen_events;

static gp_err collect_event(void *ctx, const gp_store_event *ev, gp_error *err)
{
    seen_events *seen = ctx;
    if (++seen->n == seen->stop_at)
        return gp_error_set(err, GP_ERR_INVALID, "test", "stop");
    int i = seen->n - 1;
    seen->seq[i] = ev->seq;
    snprintf(seen->kind[i], sizeof seen->kind[i], "%s", ev->kind);
    seen->decisions[i] = ev->decisions;
    seen->digest_null[i] = ev->digest == NULL;
    assert_string_equal(ev->payload, "{\"a\": 1}");
    assert_int_equal(ev->version, 2);
    return GP_OK;
}

static void append_three_events(gp_store *s)
{
    OK(gp_store_begin(s, &e_));
    gp_store_event a = event("submit", 10, 2, "ab12"), b = event("tick", 11, -1, NULL), c = event("cancel", 12, 0, "cd");
    OK(gp_store_event_append(s, &a, &e_));
    OK(gp_store_event_append(s, &b, &e_));
    OK(gp_store_event_append(s, &c, &e_));
    OK(gp_store_commit(s, &e_));
}

static void events_come_back_in_order_from_scan_and_scan_after(void **state)
{
    fixture *f = *state;
    assert_int_equal(gp_store_last_seq(f->s), 0);
    append_three_events(f->s);
    assert_int_equal(gp_store_last_seq(f->s), 3);
    seen_events seen = {0};
    OK(gp_store_events_scan(f->s, collect_event, &seen, &e_));
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.seq[0], 1);
    assert_int_equal(seen.seq[2], 3);
    assert_string_equal(seen.kind[1], "tick");
    assert_int_equal(seen.decisions[0], 2);
    assert_int_equal(seen.decisions[1], -1); /* not recorded */
    assert_true(seen.digest_null[1]);
    assert_false(seen.digest_null[0]);

    seen_events tail = {0};
    OK(gp_store_events_scan_after(f->s, 1, collect_event, &tail, &e_));
    assert_int_equal(tail.n, 2);
    assert_int_equal(tail.seq[0], 2);
}

static void a_failing_callback_stops_the_scan(void **state)
{
    fixture *f = *state;
    append_three_events(f->s);
    seen_events seen = {.stop_at = 2};
    gp_error err = {0};
    assert_int_equal(gp_store_events_scan(f->s, collect_event, &seen, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "test");
    assert_int_equal(seen.n, 2);
    assert_int_equal(gp_store_last_seq(f->s), 3); /* the connection still works */
}

static void events_list_pages_with_next(void **state)
{
    fixture *f = *state;
    append_three_events(f->s);
    json_t *page = NULL;
    OK(gp_store_events_list(f->s, 0, 2, &page, &e_));
    json_t *events = json_object_get(page, "events");
    assert_int_equal(json_array_size(events), 2);
    assert_int_equal(json_integer_value(json_object_get(page, "next")), 2);
    json_t *first = json_array_get(events, 0);
    assert_int_equal(json_integer_value(json_object_get(first, "seq")), 1);
    assert_string_equal(json_string_value(json_object_get(first, "kind")), "submit");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(first, "payload"), "a")), 1);
    assert_int_equal(json_integer_value(json_object_get(first, "decisions")), 2);
    assert_true(json_is_null(json_object_get(json_array_get(events, 1), "decisions")));
    json_decref(page);
    OK(gp_store_events_list(f->s, 2, 2, &page, &e_));
    assert_int_equal(json_array_size(json_object_get(page, "events")), 1);
    assert_true(json_is_null(json_object_get(page, "next")));
    json_decref(page);
}

/* ---- jobs ---- */

static void insert_job(gp_store *s, uint64_t id, const char *tenant, const char *user, const char *state)
{
    gp_store_job j = {.id = id, .tenant = tenant, .user = user, .name = "train", .state = state, .cls = NULL,
                      .reason = "", .submit_time = 100 + (int64_t)id, .bind_time = -1, .end_time = -1,
                      .updated = -1, .spec_json = "{\"gpus\": 1}", .placement_json = NULL};
    OK(gp_store_job_insert(s, &j, &e_));
}

static void a_job_is_inserted_updated_and_read_with_its_history(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 7, "a/b", "ann", "pending");
    OK(gp_store_history_add(f->s, 7, 107, "submit", NULL, "pending", "submitted", &e_));
    gp_store_job up = {.id = 7, .tenant = "a/b", .state = "running", .cls = "guaranteed", .reason = "placed",
                       .submit_time = 107, .bind_time = 110, .end_time = -1, .updated = 110,
                       .placement_json = "[{\"node\": \"n1\", \"gpus\": [0]}]"};
    OK(gp_store_job_update(f->s, &up, &e_));
    OK(gp_store_history_add(f->s, 7, 110, "bind", "pending", "running", "placed", &e_));

    json_t *job = NULL;
    OK(gp_store_job_get(f->s, 7, &job, &e_));
    assert_non_null(job);
    assert_int_equal(json_integer_value(json_object_get(job, "id")), 7);
    assert_string_equal(json_string_value(json_object_get(job, "tenant")), "a/b");
    assert_string_equal(json_string_value(json_object_get(job, "user")), "ann");
    assert_string_equal(json_string_value(json_object_get(job, "state")), "running");
    assert_string_equal(json_string_value(json_object_get(job, "class")), "guaranteed");
    assert_int_equal(json_integer_value(json_object_get(job, "bind_time")), 110);
    assert_true(json_is_null(json_object_get(job, "end_time")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "spec"), "gpus")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(job, "placement"), 0), "node")),
                        "n1");
    json_t *history = json_object_get(job, "history");
    assert_int_equal(json_array_size(history), 2);
    assert_true(json_is_null(json_object_get(json_array_get(history, 0), "from")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(history, 1), "from")), "pending");
    assert_string_equal(json_string_value(json_object_get(json_array_get(history, 1), "to")), "running");
    json_decref(job);

    OK(gp_store_job_get(f->s, 8, &job, &e_));
    assert_null(job);
}

/* The engine forgets a finished job's class, placement and bind time: the
 * row keeps its last ones and its first end time; a requeue (not final)
 * still clears them.  The newest exit report is the row's last_exit, and a
 * window lists the jobs alive in it. */
static void a_finished_job_keeps_what_it_ran_with(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 7, "a/b", "ann", "pending");
    gp_store_job run = {.id = 7, .state = "running", .cls = "guaranteed", .reason = "placed", .bind_time = 110,
                        .end_time = -1, .updated = 110, .placement_json = "[{\"node\": \"n1\", \"gpus\": [0]}]"};
    OK(gp_store_job_update(f->s, &run, &e_));
    OK(gp_store_history_add(f->s, 7, 150, "exit", NULL, NULL, "replica 0 on n1: exit code 3 (exited)", &e_));
    gp_store_job end = {.id = 7, .state = "failed", .reason = "failed", .bind_time = -1, .end_time = 150, .updated = 150};
    OK(gp_store_job_update(f->s, &end, &e_));
    end.end_time = end.updated = 160; /* touched again: the end stays the first */
    OK(gp_store_job_update(f->s, &end, &e_));
    json_t *job = NULL;
    OK(gp_store_job_get(f->s, 7, &job, &e_));
    assert_string_equal(json_string_value(json_object_get(job, "class")), "guaranteed");
    assert_int_equal(json_integer_value(json_object_get(job, "bind_time")), 110);
    assert_int_equal(json_integer_value(json_object_get(job, "end_time")), 150);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(job, "placement"), 0), "node")),
                        "n1");
    assert_string_equal(json_string_value(json_object_get(job, "last_exit")), "replica 0 on n1: exit code 3 (exited)");
    json_decref(job);
    insert_job(f->s, 8, "a/b", "ann", "pending");
    run.id = 8;
    OK(gp_store_job_update(f->s, &run, &e_));
    gp_store_job requeued = {.id = 8, .state = "pending", .reason = "requeued", .bind_time = -1, .end_time = -1,
                             .updated = 170};
    OK(gp_store_job_update(f->s, &requeued, &e_));
    OK(gp_store_job_get(f->s, 8, &job, &e_));
    assert_true(json_is_null(json_object_get(job, "class")) && json_is_null(json_object_get(job, "bind_time")));
    assert_true(!json_is_array(json_object_get(job, "placement")) && json_is_null(json_object_get(job, "last_exit")));
    json_decref(job);
    /* job 7: submitted 107, ended 150; job 8 (submitted 108) still live */
    json_t *out = NULL;
    gp_store_job_filter after = {.from = 151, .limit = 10}, before = {.to = 108, .limit = 10};
    OK(gp_store_jobs_list(f->s, &after, &out, &e_));
    assert_int_equal(json_array_size(json_object_get(out, "jobs")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(out, "jobs"), 0), "id")), 8);
    json_decref(out);
    OK(gp_store_jobs_list(f->s, &before, &out, &e_));
    assert_int_equal(json_array_size(json_object_get(out, "jobs")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(out, "jobs"), 0), "id")), 7);
    json_decref(out);
}

/* The ids a listing returned, newest first, into ids; how many. */
static size_t list_ids(gp_store *s, const gp_store_job_filter *filter, uint64_t *ids, size_t cap, int64_t *next)
{
    json_t *out = NULL;
    OK(gp_store_jobs_list(s, filter, &out, &e_));
    json_t *jobs = json_object_get(out, "jobs");
    size_t n = json_array_size(jobs);
    for (size_t i = 0; i < n && i < cap; i++)
        ids[i] = (uint64_t)json_integer_value(json_object_get(json_array_get(jobs, i), "id"));
    json_t *nx = json_object_get(out, "next");
    *next = json_is_null(nx) ? -1 : json_integer_value(nx);
    json_decref(out);
    return n;
}

static void job_lists_follow_scopes_filters_and_pages(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 1, "a", "ann", "pending");
    insert_job(f->s, 2, "a/b", "bob", "running");
    insert_job(f->s, 3, "a/b/c", "ann", "completed");
    insert_job(f->s, 4, "ab", "ann", "pending");
    insert_job(f->s, 5, "c", "cy", "failed");
    uint64_t ids[8];
    int64_t next;
    const char *scope_a[] = {"a"};

    gp_store_job_filter all = {.limit = 100};
    assert_int_equal(list_ids(f->s, &all, ids, 8, &next), 5);
    assert_int_equal(ids[0], 5);
    assert_int_equal(next, -1);

    gp_store_job_filter subtree = {.scopes = scope_a, .n_scopes = 1, .limit = 100};
    assert_int_equal(list_ids(f->s, &subtree, ids, 8, &next), 3); /* a, a/b, a/b/c; not ab */
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[2], 1);

    gp_store_job_filter below = {.scopes = scope_a, .n_scopes = 1, .tenant = "a/b", .limit = 100};
    assert_int_equal(list_ids(f->s, &below, ids, 8, &next), 2);

    gp_store_job_filter outside = {.scopes = scope_a, .n_scopes = 1, .tenant = "c", .limit = 100};
    assert_int_equal(list_ids(f->s, &outside, ids, 8, &next), 0);

    gp_store_job_filter live = {.state = "live", .limit = 100};
    assert_int_equal(list_ids(f->s, &live, ids, 8, &next), 3); /* 1, 2, 4 */

    gp_store_job_filter state_user = {.state = "pending", .user = "ann", .limit = 100};
    assert_int_equal(list_ids(f->s, &state_user, ids, 8, &next), 2); /* 4, 1 */
    assert_int_equal(ids[0], 4);

    gp_store_job_filter page = {.limit = 2};
    assert_int_equal(list_ids(f->s, &page, ids, 8, &next), 2);
    assert_int_equal(next, 4);
    page.before = (uint64_t)next;
    assert_int_equal(list_ids(f->s, &page, ids, 8, &next), 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(next, 2);

    const char *two[] = {"a", "c"};
    gp_store_job_filter bad = {.scopes = two, .n_scopes = 2, .limit = 10};
    json_t *out = NULL;
    gp_error err = {0};
    assert_int_equal(gp_store_jobs_list(f->s, &bad, &out, &err), GP_ERR_INVALID);
    assert_null(out);
}

typedef struct live_seen {
    int n;
    uint64_t ids[8];
} live_seen;

static gp_err collect_live(void *ctx, uint64_t id, const char *st, const char *placement, gp_error *err)
{
    (void)st, (void)placement, (void)err;
    live_seen *seen = ctx;
    seen->ids[seen->n++] = id;
    return GP_OK;
}

static void the_live_scan_sees_only_unfinished_jobs(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 1, "a", NULL, "running");
    insert_job(f->s, 2, "a", NULL, "completed");
    insert_job(f->s, 3, "a", NULL, "preempting");
    live_seen seen = {0};
    OK(gp_store_live_jobs_scan(f->s, collect_live, &seen, &e_));
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.ids[0], 1);
    assert_int_equal(seen.ids[1], 3);
}

static void runs_remember_where_each_replica_ran(void **state)
{
    fixture *f = *state;
    OK(gp_store_run_add(f->s, 9, 100, 0, "n1", &e_));
    OK(gp_store_run_add(f->s, 9, 100, 1, "n2", &e_));
    OK(gp_store_run_add(f->s, 9, 200, 0, "n3", &e_));
    OK(gp_store_run_add(f->s, 9, 200, 0, "n4", &e_)); /* the same run placed again: replaced */
    bool first = false;
    OK(gp_store_run_started(f->s, 9, 100, 0, 4242, &first, &e_));
    assert_true(first);
    OK(gp_store_run_started(f->s, 9, 100, 0, 4242, &first, &e_));
    assert_false(first);
    OK(gp_store_run_started(f->s, 9, 300, 0, 1, &first, &e_));
    assert_false(first);
    char node[16];
    OK(gp_store_run_node(f->s, 9, 200, 0, node, sizeof node, &e_));
    assert_string_equal(node, "n4");
    OK(gp_store_run_node(f->s, 9, 999, 0, node, sizeof node, &e_));
    assert_string_equal(node, "");
    int64_t times[4];
    assert_int_equal(gp_store_runs_list(f->s, 9, 0, times, 4), 2);
    assert_int_equal(times[0], 200);
    assert_int_equal(times[1], 100);
}

/* ---- usage, preemptions ---- */

static void usage_sums_gpu_seconds_in_the_window_by_scope(void **state)
{
    fixture *f = *state;
    gp_store_usage a = {.interval_id = 1, .job_id = 1, .tenant = "a/x", .gpu_type = "H100", .cls = "guaranteed",
                        .topology = "", .milli_gpus = 2000, .start = 0};
    gp_store_usage b = {.interval_id = 2, .job_id = 2, .tenant = "b", .gpu_type = "H100", .cls = "burstable",
                        .topology = "", .milli_gpus = 500, .start = 50};
    OK(gp_store_usage_open(f->s, &a, &e_));
    OK(gp_store_usage_open(f->s, &b, &e_));
    OK(gp_store_usage_close(f->s, 1, 100, &e_));
    json_t *out = NULL;
    OK(gp_store_usage_query(f->s, NULL, 0, NULL, false, 0, 1000, 150, &out, &e_));
    json_t *rows = json_object_get(out, "usage");
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "tenant")), "a/x");
    assert_true(json_real_value(json_object_get(json_array_get(rows, 0), "gpu_seconds")) == 200.0);
    assert_true(json_real_value(json_object_get(json_array_get(rows, 1), "gpu_seconds")) == 50.0); /* open: to now */
    json_decref(out);
    const char *scope[] = {"a"};
    OK(gp_store_usage_query(f->s, scope, 1, NULL, false, 50, 1000, 150, &out, &e_));
    rows = json_object_get(out, "usage");
    assert_int_equal(json_array_size(rows), 1);
    assert_true(json_real_value(json_object_get(json_array_get(rows, 0), "gpu_seconds")) == 100.0);
    json_decref(out);
}

static void preemptions_are_listed_newest_first_in_scope(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 1, "a", NULL, "pending");
    insert_job(f->s, 2, "b", NULL, "pending");
    OK(gp_store_history_add(f->s, 1, 10, "preempt", "running", "pending", "reclaimed", &e_));
    OK(gp_store_history_add(f->s, 2, 11, "preempt", "running", "pending", "reclaimed", &e_));
    OK(gp_store_history_add(f->s, 1, 12, "preempt", "running", "pending", "priority", &e_));
    OK(gp_store_history_add(f->s, 1, 13, "bind", "pending", "running", "", &e_));
    json_t *out = NULL;
    const char *scope[] = {"a"};
    OK(gp_store_preemptions_list(f->s, scope, 1, 10, &out, &e_));
    json_t *rows = json_object_get(out, "preemptions");
    assert_int_equal(json_array_size(rows), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 0), "time")), 12);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "reason")), "priority");
    json_decref(out);
}

/* ---- tenants, tokens ---- */

static void tenants_are_put_replaced_and_deleted(void **state)
{
    fixture *f = *state;
    OK(gp_store_tenant_put(f->s, "a", "{\"weight\": 1}", 1, &e_));
    OK(gp_store_tenant_put(f->s, "a/b", "{\"weight\": 2}", 1, &e_));
    OK(gp_store_tenant_put(f->s, "a", "{\"weight\": 3}", 2, &e_));
    json_t *all = NULL;
    OK(gp_store_tenants_get(f->s, &all, &e_));
    assert_int_equal(json_object_size(all), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(all, "a"), "weight")), 3);
    json_decref(all);
    OK(gp_store_tenant_delete(f->s, "a/b", &e_));
    OK(gp_store_tenants_get(f->s, &all, &e_));
    assert_int_equal(json_object_size(all), 1);
    assert_null(json_object_get(all, "a/b"));
    json_decref(all);
}

typedef struct seen_tokens {
    int n;
    char id[4][16];
    int64_t revoked[4], expires[4], last_used[4];
    bool single_use[4];
} seen_tokens;

static gp_err collect_token(void *ctx, const gp_store_token *t, gp_error *err)
{
    (void)err;
    seen_tokens *seen = ctx;
    int i = seen->n++;
    snprintf(seen->id[i], sizeof seen->id[i], "%s", t->id);
    seen->revoked[i] = t->revoked;
    seen->expires[i] = t->expires;
    seen->last_used[i] = t->last_used;
    seen->single_use[i] = t->single_use;
    return GP_OK;
}

static void tokens_are_inserted_touched_revoked_and_scanned(void **state)
{
    fixture *f = *state;
    gp_store_token t1 = {.id = "tk1", .hash_hex = "aa", .name = "ci", .role = "user", .scope = "a", .user = "ann",
                         .created = 10, .revoked = -1, .expires = -1, .created_by = "admin"};
    gp_store_token t2 = {.id = "tk2", .hash_hex = "bb", .name = "ops", .role = "admin", .scope = "", .user = "",
                         .created = 20, .revoked = -1, .expires = 5000, .created_by = "admin"};
    OK(gp_store_token_insert(f->s, &t1, &e_));
    OK(gp_store_token_insert(f->s, &t2, &e_));
    gp_error err = {0};
    gp_store_token dup = t1;
    dup.id = "tk3"; /* the same hash */
    assert_int_not_equal(gp_store_token_insert(f->s, &dup, &err), GP_OK);
    OK(gp_store_token_touch(f->s, "tk1", 300, &e_));
    OK(gp_store_token_touch(f->s, "tk1", 200, &e_)); /* late and older: kept at 300 */
    OK(gp_store_token_revoke(f->s, "tk2", 400, &e_));
    assert_int_equal(gp_store_token_revoke(f->s, "tk2", 401, &err), GP_ERR_NOT_FOUND);
    assert_int_equal(gp_store_token_revoke(f->s, "nope", 401, &err), GP_ERR_NOT_FOUND);
    seen_tokens seen = {0};
    OK(gp_store_tokens_scan(f->s, collect_token, &seen, &e_));
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.id[0], "tk1");
    assert_int_equal(seen.last_used[0], 300);
    assert_int_equal(seen.revoked[0], -1);
    assert_int_equal(seen.expires[0], -1);
    assert_int_equal(seen.revoked[1], 400);
    assert_int_equal(seen.expires[1], 5000);
    assert_int_equal(seen.last_used[1], -1);
}

/* ---- job users ---- */

static gp_err collect_user(void *ctx, const gp_store_user *u, gp_error *err)
{
    (void)err;
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 256 - len, "%s=%s@%lld/%s;", u->name, u->tenant, (long long)u->bound, u->bound_by);
    return GP_OK;
}

static void users_are_bound_moved_listed_and_unbound(void **state)
{
    fixture *f = *state;
    char tenant[64];
    OK(gp_store_user_tenant(f->s, "alice", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "");
    OK(gp_store_user_bind(f->s, "alice", "research/nlp", 10, "tk1", &e_));
    OK(gp_store_user_bind(f->s, "bob", "product", 11, "tk2", &e_));
    OK(gp_store_user_bind(f->s, "alice", "product/ads", 12, "tk3", &e_)); /* moved */
    OK(gp_store_user_tenant(f->s, "alice", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "product/ads");
    char seen[256] = "";
    OK(gp_store_users_scan(f->s, collect_user, seen, &e_));
    assert_string_equal(seen, "alice=product/ads@12/tk3;bob=product@11/tk2;");
    OK(gp_store_user_unbind(f->s, "bob", &e_));
    gp_error err = {0};
    assert_int_equal(gp_store_user_unbind(f->s, "bob", &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "user");
    OK(gp_store_user_tenant(f->s, "bob", tenant, sizeof tenant, &e_));
    assert_string_equal(tenant, "");
}

/* GPU types declared before their nodes arrive (schema 11), on both backends. */
static void gpu_types_are_declared_listed_and_undeclared(void **state)
{
    fixture *f = *state;
    json_t *list = NULL;
    bool found = true;
    OK(gp_store_gpu_type_declare(f->s, "H200", 10, "tk1", &e_));
    OK(gp_store_gpu_type_declare(f->s, "B200", 11, "tk2", &e_));
    OK(gp_store_gpu_type_declare(f->s, "H200", 12, "tk3", &e_)); /* the first declaration stays */
    OK(gp_store_gpu_types_declared(f->s, &list, &e_));
    assert_int_equal(json_array_size(list), 2);
    json_t *h200 = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(h200, "name")), "H200");
    assert_int_equal(json_integer_value(json_object_get(h200, "declared")), 10);
    assert_string_equal(json_string_value(json_object_get(h200, "declared_by")), "tk1");
    json_decref(list);
    OK(gp_store_gpu_type_undeclare(f->s, "B200", &found, &e_));
    assert_true(found);
    OK(gp_store_gpu_type_undeclare(f->s, "B200", &found, &e_));
    assert_false(found);
    OK(gp_store_gpu_types_declared(f->s, &list, &e_));
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
}

/* OIDC role bindings (schema 12), on both backends: ids given in order, a
 * duplicate refused, one or all scanned, a delete of nothing NOT_FOUND. */
static gp_err binding_seen(void *ctx, const gp_store_rolebinding *b, gp_error *err)
{
    (void)err;
    json_array_append_new(ctx, json_pack("{s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)b->id, "kind", b->kind,
                                         "subject", b->subject, "role", b->role, "scope", b->scope));
    return GP_OK;
}

static void rolebindings_are_added_scanned_and_deleted(void **state)
{
    fixture *f = *state;
    gp_store_rolebinding a = {.kind = "group", .subject = "ml-admins", .role = "tenant-admin", .scope = "research",
                              .created = 10, .created_by = "tk1"};
    gp_store_rolebinding b = {.kind = "user", .subject = "alice", .role = "admin", .scope = "", .created = 11,
                              .created_by = "tk1"};
    OK(gp_store_rolebinding_add(f->s, &a, &e_));
    OK(gp_store_rolebinding_add(f->s, &b, &e_));
    assert_int_equal(a.id, 1);
    assert_int_equal(b.id, 2);
    gp_store_rolebinding again = a;
    gp_error err;
    assert_int_equal(gp_store_rolebinding_add(f->s, &again, &err), GP_ERR_EXISTS);
    json_t *all = json_array();
    OK(gp_store_rolebindings_scan(f->s, 0, binding_seen, all, &e_));
    assert_int_equal(json_array_size(all), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "subject")), "ml-admins");
    json_decref(all);
    json_t *one = json_array();
    OK(gp_store_rolebindings_scan(f->s, 2, binding_seen, one, &e_));
    assert_int_equal(json_array_size(one), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(one, 0), "role")), "admin");
    json_decref(one);
    OK(gp_store_rolebinding_delete(f->s, 1, &e_));
    assert_int_equal(gp_store_rolebinding_delete(f->s, 1, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "id");
}

static void a_join_tokens_single_use_and_node_approvals_are_kept(void **state)
{
    fixture *f = *state;
    gp_store_token t = {.id = "tj", .hash_hex = "cc", .name = "rack", .role = "join", .scope = "h100-*", .user = "",
                        .created = 10, .revoked = -1, .expires = -1, .created_by = "admin", .single_use = true};
    OK(gp_store_token_insert(f->s, &t, &e_));
    seen_tokens seen = {0};
    OK(gp_store_tokens_scan(f->s, collect_token, &seen, &e_));
    assert_int_equal(seen.n, 1);
    assert_true(seen.single_use[0]);
    char state_[16];
    int64_t when = 0;
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "");
    assert_int_equal(when, -1);
    OK(gp_store_node_approval_set(f->s, "n1", "awaiting", 10, "tj", &e_));
    OK(gp_store_node_approval_set(f->s, "n1", "approved", 20, "admin", &e_));
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "approved");
    assert_int_equal(when, 20);
    OK(gp_store_node_approval_clear(f->s, "n1", &e_));
    OK(gp_store_node_approval_get(f->s, "n1", state_, sizeof state_, &when, &e_));
    assert_string_equal(state_, "");
}

static void secrets_are_put_replaced_listed_and_deleted_per_tenant(void **state)
{
    fixture *f = *state;
    gp_store_secret a = {.tenant = "research", .name = "hf", .sealed = "v1:AAA", .bytes = 3, .set_by = "t1",
                         .updated = 10};
    gp_store_secret b = {.tenant = "research/nlp", .name = "hf", .sealed = "v1:BBB", .bytes = 5, .set_by = "t2",
                         .updated = 11};
    OK(gp_store_secret_put(f->s, &a, &e_));
    OK(gp_store_secret_put(f->s, &b, &e_));
    a.sealed = "v1:CCC";
    a.updated = 12;
    OK(gp_store_secret_put(f->s, &a, &e_)); /* replaced */
    char *sealed = NULL;
    OK(gp_store_secret_get(f->s, "research", "hf", &sealed, &e_));
    assert_string_equal(sealed, "v1:CCC");
    free(sealed);
    OK(gp_store_secret_get(f->s, "product", "hf", &sealed, &e_));
    assert_null(sealed);
    json_t *list = NULL;
    OK(gp_store_secrets_list(f->s, "research", &list, &e_));
    assert_int_equal(json_array_size(list), 1);
    json_t *row = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(row, "name")), "hf");
    assert_int_equal(json_integer_value(json_object_get(row, "bytes")), 3);
    assert_int_equal(json_integer_value(json_object_get(row, "updated")), 12);
    assert_null(json_object_get(row, "sealed"));
    json_decref(list);
    OK(gp_store_secret_delete(f->s, "research", "hf", &e_));
    gp_error err = {0};
    assert_int_equal(gp_store_secret_delete(f->s, "research", "hf", &err), GP_ERR_NOT_FOUND);
    OK(gp_store_secret_get(f->s, "research/nlp", "hf", &sealed, &e_));
    assert_string_equal(sealed, "v1:BBB");
    free(sealed);
    OK(gp_store_tenant_put(f->s, "research/nlp", "{}", 13, &e_));
    OK(gp_store_tenant_delete(f->s, "research/nlp", &e_)); /* its secrets go with it */
    OK(gp_store_secret_get(f->s, "research/nlp", "hf", &sealed, &e_));
    assert_null(sealed);
}

/* ---- audit ---- */

static void append_audit(gp_store *s, const char *action)
{
    gp_store_audit a = {.time = 100, .request_id = "r1", .actor = "ann", .role = "admin", .action = action,
                        .target = "job 1", .result = "ok"};
    OK(gp_store_audit_append(s, &a, &e_));
}

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

static void append_record(gp_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *rec = json_vpack_ex(NULL, 0, fmt, ap);
    va_end(ap);
    assert_non_null(rec);
    OK(gp_store_ledger_append(s, rec, &e_));
    json_decref(rec);
}

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

/* ---- snapshots ---- */

static unsigned char *snapshot_bytes(size_t len, unsigned seed)
{
    unsigned char *b = malloc(len);
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)((i * 31 + seed) % 251); /* zero bytes included */
    return b;
}

static void snapshots_are_stored_in_parts_and_the_newest_kept(void **state)
{
    fixture *f = *state;
    size_t len = (5u << 20) / 2; /* 2.5 MiB: three parts */
    for (unsigned k = 1; k <= 3; k++) {
        unsigned char *b = snapshot_bytes(len, k);
        OK(gp_store_snapshot_put(f->s, 1000 * k, k, b, len, GP_STORE_SNAPSHOTS_KEPT, &e_));
        free(b);
    }
    int64_t seqs[4];
    size_t n = 0;
    OK(gp_store_snapshots_list(f->s, seqs, 4, &n, &e_));
    assert_int_equal(n, 2);
    assert_int_equal(seqs[0], 3000);
    assert_int_equal(seqs[1], 2000);
    unsigned char *got = NULL;
    size_t got_len = 0;
    OK(gp_store_snapshot_get(f->s, 2000, &got, &got_len, &e_));
    assert_int_equal(got_len, len);
    unsigned char *want = snapshot_bytes(len, 2);
    assert_memory_equal(got, want, len);
    free(want);
    free(got);
    gp_error err = {0};
    got = NULL;
    assert_int_not_equal(gp_store_snapshot_get(f->s, 1000, &got, &got_len, &err), GP_OK);
    free(got);
}

/* What a crash in the middle of a put leaves (a row not complete, some
 * parts) is never offered to a start, and the next put removes it. */
static void a_snapshot_left_half_written_is_never_listed_and_the_next_put_drops_it(void **state)
{
    fixture *f = *state;
    size_t len = 1000;
    unsigned char *b = snapshot_bytes(len, 1);
    OK(gp_store_snapshot_put(f->s, 1000, 1, b, len, GP_STORE_SNAPSHOTS_KEPT, &e_));
    raw_exec(f, "INSERT INTO snapshots(seq, created, bytes, parts, complete) VALUES (2000, 2, 0, 0, 0);"
                "INSERT INTO snapshot_parts(seq, part, data) VALUES (2000, 0, 'half')");
    int64_t seqs[4];
    size_t n = 0;
    OK(gp_store_snapshots_list(f->s, seqs, 4, &n, &e_));
    assert_int_equal(n, 1);
    assert_int_equal(seqs[0], 1000);
    OK(gp_store_snapshot_put(f->s, 3000, 3, b, len, GP_STORE_SNAPSHOTS_KEPT, &e_));
    free(b);
    gp_db *db = dbtest_open(f->url, true);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM snapshots WHERE seq = 2000", NULL, NULL), 0);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM snapshot_parts WHERE seq = 2000", NULL, NULL), 0);
    gp_db_close(db);
}

/* ---- transactions ---- */

static void a_rollback_leaves_nothing_behind(void **state)
{
    fixture *f = *state;
    append_audit(f->s, "first");
    OK(gp_store_begin(f->s, &e_));
    gp_store_event ev = event("submit", 1, 1, "aa");
    OK(gp_store_event_append(f->s, &ev, &e_));
    insert_job(f->s, 1, "a", NULL, "pending");
    OK(gp_store_tenant_put(f->s, "a", "{}", 1, &e_));
    append_audit(f->s, "rolled back");
    append_record(f->s, "{s:I, s:s, s:s, s:s, s:I, s:I}", "interval", (json_int_t)0, "kind", "capacity", "gpu_type",
                  "H100", "tenant", "a", "milli_gpus", (json_int_t)1, "start", (json_int_t)1);
    gp_store_rollback(f->s);

    assert_int_equal(gp_store_last_seq(f->s), 0);
    json_t *out = NULL;
    OK(gp_store_job_get(f->s, 1, &out, &e_));
    assert_null(out);
    OK(gp_store_tenants_get(f->s, &out, &e_));
    assert_int_equal(json_object_size(out), 0);
    json_decref(out);
    int64_t seq = -1;
    char hash[65];
    OK(gp_store_ledger_head(f->s, &seq, hash, &e_));
    assert_int_equal(seq, 0);

    append_audit(f->s, "second"); /* the chain goes on from the committed head */
    int64_t checked = 0, broken = -1;
    OK(gp_store_audit_verify(f->s, &checked, &broken, &e_));
    assert_int_equal(checked, 2);
    assert_int_equal(broken, 0);
}

/* The fence (store.h, gp_store_fence) on the database's clock.  On
 * PostgreSQL a fenced transaction holds no lock on the lease row until its
 * commit, so a takeover does not wait behind a long batch, and the commit
 * after it fails naming "lease" and leaves nothing.  (On SQLite BEGIN
 * IMMEDIATE excludes the takeover for the whole transaction instead:
 * test_store_lease covers that.) */
static void a_takeover_during_a_fenced_transaction_fails_its_commit(void **state)
{
    fixture *f = *state;
    if (!on_postgres(f))
        skip();
    gp_store *b = open_store(f, false);
    int64_t ea = 0, eb = 0;
    OK(gp_store_lease_acquire(f->s, "a", "http://a", 200, 0, &ea, &e_));
    OK(gp_store_fence(f->s, ea, 5000, &e_));
    OK(gp_store_begin(f->s, &e_));
    OK(gp_store_meta_set(f->s, "written_by_a", 1, &e_));
    struct timespec wait = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&wait, NULL); /* a's lease expires while its transaction is open */
    OK(gp_store_lease_acquire(b, "b", "http://b", 3000, 0, &eb, &e_));
    assert_int_equal(eb, ea + 1);
    gp_error err = {0};
    assert_int_equal(gp_store_commit(f->s, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    assert_int_equal(gp_store_meta_get(b, "written_by_a", 0), 0);
    gp_store_close(b);
}

/* ---- commits that do not wait (gp_store_commit_send) ---- */

/* Polls gp_store_commit_ready for up to 10 s. */
static bool commit_arrives(gp_store *s)
{
    struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000 * 1000};
    for (int i = 0; i < 10000; i++) {
        if (gp_store_commit_ready(s))
            return true;
        nanosleep(&ms, NULL);
    }
    return false;
}

static void one_event(gp_store *s, const char *kind, int64_t time)
{
    gp_store_event ev = event(kind, time, 0, NULL);
    OK(gp_store_event_append(s, &ev, &e_));
}

/* Batch 1 is sent to commit; batch 2 begins and queues its writes while
 * batch 1's commit is in flight; each commits in turn. */
static void a_sent_commit_lets_the_next_transaction_begin_behind_it(void **state)
{
    fixture *f = *state;
    gp_store *reader = open_store(f, true);
    OK(gp_store_begin(f->s, &e_));
    one_event(f->s, "submit", 10);
    OK(gp_store_commit_send(f->s, &e_));
    OK(gp_store_begin(f->s, &e_));
    one_event(f->s, "cancel", 11);
    one_event(f->s, "tick", 12);
    assert_true(commit_arrives(f->s));
    OK(gp_store_commit_wait(f->s, &e_));
    assert_int_equal(gp_store_last_seq(reader), 1); /* batch 2 is not committed */
    OK(gp_store_commit_send(f->s, &e_));
    OK(gp_store_commit_wait(f->s, &e_));
    assert_int_equal(gp_store_last_seq(reader), 3);
    OK(gp_store_commit_wait(f->s, &e_)); /* nothing in flight */
    gp_store_close(reader);
}

/* A read behind a commit in flight waits for it and sees its writes; the
 * commit's outcome is kept for the wait. */
static void a_read_behind_a_sent_commit_sees_it(void **state)
{
    fixture *f = *state;
    OK(gp_store_begin(f->s, &e_));
    one_event(f->s, "submit", 10);
    OK(gp_store_meta_set(f->s, "next_job_id", 7, &e_));
    OK(gp_store_commit_send(f->s, &e_));
    assert_int_equal(gp_store_meta_get(f->s, "next_job_id", -1), 7);
    assert_int_equal(gp_store_last_seq(f->s), 1);
    assert_true(gp_store_commit_ready(f->s));
    OK(gp_store_commit_wait(f->s, &e_));
}

/* The fence is checked on the server with the commit: a takeover while
 * the transaction was open fails the sent commit at its wait (field
 * "lease"), and the transaction begun behind it commits nothing either. */
static void a_takeover_fails_a_sent_commit_and_what_was_begun_behind_it(void **state)
{
    fixture *f = *state;
    if (!on_postgres(f))
        skip(); /* SQLite fences at BEGIN IMMEDIATE: test_store_lease */
    gp_store *b = open_store(f, false);
    int64_t ea = 0, eb = 0;
    OK(gp_store_lease_acquire(f->s, "a", "http://a", 200, 0, &ea, &e_));
    OK(gp_store_fence(f->s, ea, 5000, &e_));
    OK(gp_store_begin(f->s, &e_));
    one_event(f->s, "submit", 10);
    struct timespec wait = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&wait, NULL); /* a's lease expires while its transaction is open */
    OK(gp_store_lease_acquire(b, "b", "http://b", 3000, 0, &eb, &e_));
    OK(gp_store_commit_send(f->s, &e_)); /* sent: the server has not answered yet */
    OK(gp_store_begin(f->s, &e_));
    one_event(f->s, "cancel", 11);
    gp_error err = {0};
    assert_int_equal(gp_store_commit_wait(f->s, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    assert_non_null(strstr(err.message, "the lease moved to epoch"));
    assert_int_equal(gp_store_last_seq(b), 0);
    gp_store_close(b);
}

#define CASE(name) cmocka_unit_test_setup_teardown(name, fresh_store, close_store)

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(a_store_keeps_its_meta_across_reopening),
        CASE(a_newer_schema_is_refused),
        CASE(gpu_types_are_declared_listed_and_undeclared),
        CASE(meta_set_in_a_transaction_is_kept_until_its_end),
        CASE(a_reader_cannot_write),
        CASE(events_come_back_in_order_from_scan_and_scan_after),
        CASE(a_failing_callback_stops_the_scan),
        CASE(events_list_pages_with_next),
        CASE(a_job_is_inserted_updated_and_read_with_its_history),
        CASE(a_finished_job_keeps_what_it_ran_with),
        CASE(job_lists_follow_scopes_filters_and_pages),
        CASE(the_live_scan_sees_only_unfinished_jobs),
        CASE(runs_remember_where_each_replica_ran),
        CASE(usage_sums_gpu_seconds_in_the_window_by_scope),
        CASE(preemptions_are_listed_newest_first_in_scope),
        CASE(tenants_are_put_replaced_and_deleted),
        CASE(tokens_are_inserted_touched_revoked_and_scanned),
        CASE(users_are_bound_moved_listed_and_unbound),
        CASE(a_join_tokens_single_use_and_node_approvals_are_kept),
        CASE(rolebindings_are_added_scanned_and_deleted),
        CASE(secrets_are_put_replaced_listed_and_deleted_per_tenant),
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
        CASE(snapshots_are_stored_in_parts_and_the_newest_kept),
        CASE(a_snapshot_left_half_written_is_never_listed_and_the_next_put_drops_it),
        CASE(a_rollback_leaves_nothing_behind),
        CASE(a_takeover_during_a_fenced_transaction_fails_its_commit),
        CASE(a_sent_commit_lets_the_next_transaction_begin_behind_it),
        CASE(a_read_behind_a_sent_commit_sees_it),
        CASE(a_takeover_fails_a_sent_commit_and_what_was_begun_behind_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
