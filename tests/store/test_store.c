/* test_store.c - the store suite's core: open, schema and meta; the event
 * log; jobs, runs, usage and preemptions; tenants; snapshots; and
 * transactions (rollback, the leader's fence, commits sent behind).
 * The accounts of who and which nodes are in test_store_access.c; the
 * chained records (audit, ledger, bill, prices, health, use) in
 * test_store_ledger.c.  Each runs on either database (store_fixture.h):
 * ctest store_sqlite and store_postgres.
 *
 * Everything here goes through store.h (db.h only to reach under the
 * store where a case must: raising the schema version).
 *
 * Example: three events appended come back in order from scan, scan_after
 * and list (two per page, then the rest); a job of tenant "a/b" is listed
 * under scope "a" but not under "ab".
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

/* A job array's members (schema 14) come back by index, with their
 * state; a job of no array and another array are not among them. */
static void an_arrays_members_are_listed_by_index(void **state)
{
    fixture *f = *state;
    insert_job(f->s, 20, "a/b", "ann", "pending");
    for (uint64_t i = 0; i < 3; i++) {
        gp_store_job j = {.id = 21 + i, .tenant = "a/b", .user = "ann", .state = i == 1 ? "running" : "pending",
                          .reason = "", .submit_time = 100, .bind_time = -1, .end_time = -1, .updated = -1,
                          .spec_json = "{}", .array_id = 21, .array_index = (int64_t)(2 - i)};
        OK(gp_store_job_insert(f->s, &j, &e_));
    }
    gp_store_job other = {.id = 24, .tenant = "a/b", .state = "pending", .reason = "", .submit_time = 100,
                          .bind_time = -1, .end_time = -1, .updated = -1, .spec_json = "{}", .array_id = 24};
    OK(gp_store_job_insert(f->s, &other, &e_));
    json_t *members = NULL;
    OK(gp_store_array_members(f->s, 21, &members, &e_));
    assert_int_equal(json_array_size(members), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *m = json_array_get(members, i);
        assert_int_equal(json_integer_value(json_object_get(m, "array_index")), (json_int_t)i);
        assert_int_equal(json_integer_value(json_object_get(m, "id")), (json_int_t)(23 - i));
        assert_string_equal(json_string_value(json_object_get(m, "tenant")), "a/b");
        assert_string_equal(json_string_value(json_object_get(m, "state")), i == 1 ? "running" : "pending");
    }
    json_decref(members);
    OK(gp_store_array_members(f->s, 20, &members, &e_));
    assert_int_equal(json_array_size(members), 0);
    json_decref(members);
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

typedef struct scanned {
    char tenant[4][16];
    int64_t start[4], end[4], milli[4];
    int n;
} scanned;

static gp_err note_interval(void *ctx, const char *tenant, int64_t start, int64_t end, int64_t milli_gpus,
                            gp_error *err)
{
    (void)err;
    scanned *x = ctx;
    if (x->n == 4)
        return GP_OK;
    snprintf(x->tenant[x->n], sizeof x->tenant[x->n], "%s", tenant);
    x->start[x->n] = start;
    x->end[x->n] = end;
    x->milli[x->n++] = milli_gpus;
    return GP_OK;
}

/* server/baseline.c's reads: the raw intervals over a window, the tenants' first uses. */
static void usage_scan_and_first_starts_read_the_raw_intervals(void **state)
{
    fixture *f = *state;
    gp_store_usage a = {.interval_id = 1, .job_id = 1, .tenant = "a/x", .gpu_type = "H100", .cls = "guaranteed",
                        .topology = "", .milli_gpus = 2000, .start = 0};
    gp_store_usage b = {.interval_id = 2, .job_id = 2, .tenant = "b", .gpu_type = "H100", .cls = "burstable",
                        .topology = "", .milli_gpus = 500, .start = 50};
    gp_store_usage c = {.interval_id = 3, .job_id = 3, .tenant = "a/x", .gpu_type = "A100", .cls = "guaranteed",
                        .topology = "", .milli_gpus = 1000, .start = 300};
    OK(gp_store_usage_open(f->s, &a, &e_));
    OK(gp_store_usage_open(f->s, &b, &e_));
    OK(gp_store_usage_open(f->s, &c, &e_));
    OK(gp_store_usage_close(f->s, 1, 100, &e_));
    OK(gp_store_usage_close(f->s, 3, 400, &e_));
    scanned x = {0};
    OK(gp_store_usage_scan(f->s, 80, 200, 150, note_interval, &x, &e_)); /* a ends at 100; b open: to now */
    assert_int_equal(x.n, 2);
    int ia = strcmp(x.tenant[0], "a/x") == 0 ? 0 : 1, ib = 1 - ia;
    assert_string_equal(x.tenant[ia], "a/x");
    assert_true(x.start[ia] == 0 && x.end[ia] == 100 && x.milli[ia] == 2000);
    assert_string_equal(x.tenant[ib], "b");
    assert_true(x.start[ib] == 50 && x.end[ib] == 150 && x.milli[ib] == 500);
    x.n = 0;
    OK(gp_store_usage_scan(f->s, 100, 300, 500, note_interval, &x, &e_)); /* [0,100) and [300,400) touch, no more */
    assert_int_equal(x.n, 1);
    assert_string_equal(x.tenant[0], "b");
    json_t *firsts = NULL;
    OK(gp_store_usage_first_starts(f->s, &firsts, &e_));
    assert_int_equal(json_object_size(firsts), 2);
    assert_int_equal(json_integer_value(json_object_get(firsts, "a/x")), 0);
    assert_int_equal(json_integer_value(json_object_get(firsts, "b")), 50);
    json_decref(firsts);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(a_store_keeps_its_meta_across_reopening),
        CASE(a_newer_schema_is_refused),
        CASE(meta_set_in_a_transaction_is_kept_until_its_end),
        CASE(a_reader_cannot_write),
        CASE(events_come_back_in_order_from_scan_and_scan_after),
        CASE(a_failing_callback_stops_the_scan),
        CASE(events_list_pages_with_next),
        CASE(an_arrays_members_are_listed_by_index),
        CASE(a_job_is_inserted_updated_and_read_with_its_history),
        CASE(a_finished_job_keeps_what_it_ran_with),
        CASE(job_lists_follow_scopes_filters_and_pages),
        CASE(the_live_scan_sees_only_unfinished_jobs),
        CASE(runs_remember_where_each_replica_ran),
        CASE(usage_sums_gpu_seconds_in_the_window_by_scope),
        CASE(usage_scan_and_first_starts_read_the_raw_intervals),
        CASE(preemptions_are_listed_newest_first_in_scope),
        CASE(tenants_are_put_replaced_and_deleted),
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
