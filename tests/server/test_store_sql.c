/* test_store_sql.c - the store's statements that portable SQL rewrote
 * (db.h: no two-argument MAX/MIN, no INSERT OR REPLACE, no LIMIT -1, no
 * bare columns beside max() in a GROUP BY, no constraint error as an
 * answer) still answer what the SQLite-only ones did, on a fresh store
 * (world.h) through store.h alone.
 *
 * Example: an interval [50, 250) of 500 milli-GPUs counts 0.5 x 100 =
 * 50 GPU-seconds in the window [100, 200).
 */
#include "world.h"

#include <string.h>

static gp_error err;

static void in_tx(world *w, gp_err rc, const char *what)
{
    commit(w, rc, &err, what);
}

static void begin(world *w)
{
    check(gp_store_begin(w->store, &err), &err, "begin");
}

/* ---- usage: each interval's overlap with the window ---- */

static void usage(world *w, uint64_t id, const char *tenant, int64_t milli, int64_t start, int64_t end)
{
    gp_store_usage u = {.interval_id = id, .job_id = id, .tenant = tenant, .gpu_type = "H100", .cls = "burstable",
                        .topology = "any", .milli_gpus = milli, .start = start, .end = -1};
    begin(w);
    gp_err rc = gp_store_usage_open(w->store, &u, &err);
    if (rc == GP_OK && end >= 0)
        rc = gp_store_usage_close(w->store, id, end, &err);
    in_tx(w, rc, "usage");
}

static double gpu_seconds(json_t *answer, const char *tenant)
{
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(answer, "usage"), i, row) {
        if (strcmp(json_string_value(json_object_get(row, "tenant")), tenant) == 0)
            return json_real_value(json_object_get(row, "gpu_seconds"));
    }
    return -1;
}

static void usage_counts_only_each_intervals_overlap_with_the_window(void **state)
{
    world *w = *state;
    usage(w, 1, "lab", 500, 50, 250);  /* straddles both ends: 100 s x 0.5 */
    usage(w, 2, "lab", 1000, 120, 130); /* inside: 10 s x 1 */
    usage(w, 3, "ops", 1000, 10, 90);   /* before the window: nothing, no row */
    usage(w, 4, "web", 2000, 150, -1);  /* open: up to now (180), 30 s x 2 */
    json_t *answer = NULL;
    check(gp_store_usage_query(w->store, NULL, 0, NULL, false, 100, 200, 180, &answer, &err), &err, "usage query");
    assert_true(gpu_seconds(answer, "lab") == 60.0);
    assert_true(gpu_seconds(answer, "web") == 60.0);
    assert_true(gpu_seconds(answer, "ops") == -1);
    json_decref(answer);
}

/* ---- the ledger's levels: the newest record of each key ---- */

static void level(world *w, uint64_t interval, const char *kind, const char *tenant, int64_t milli)
{
    json_t *r = json_pack("{s:I, s:s, s:s, s:I, s:I}", "interval", (json_int_t)interval, "kind", kind, "gpu_type",
                          "H100", "milli_gpus", (json_int_t)milli, "start", (json_int_t)interval);
    if (tenant)
        json_object_set_new(r, "tenant", json_string(tenant));
    begin(w);
    in_tx(w, gp_store_ledger_append(w->store, r, &err), "ledger append");
    json_decref(r);
}

static void seen(void *ctx, const char *kind, const char *tenant, const char *gpu_type, int64_t milli)
{
    char line[128];
    snprintf(line, sizeof line, "%s %s %s %lld;", kind, tenant ? tenant : "-", gpu_type, (long long)milli);
    strncat(ctx, line, 1023 - strlen(ctx));
}

static void ledger_levels_are_the_newest_record_of_each_key(void **state)
{
    world *w = *state;
    char got[1024] = "";
    check(gp_store_ledger_levels(w->store, seen, got, &err), &err, "levels before");
    level(w, 1, "guarantee", "lab", 4000);
    level(w, 2, "capacity", NULL, 8000);
    level(w, 3, "guarantee", "lab", 2000);
    level(w, 4, "guarantee", "ops", 1000);
    level(w, 5, "capacity", NULL, 16000);
    got[0] = '\0';
    check(gp_store_ledger_levels(w->store, seen, got, &err), &err, "levels");
    assert_non_null(strstr(got, "guarantee lab H100 2000;"));
    assert_non_null(strstr(got, "guarantee ops H100 1000;"));
    assert_non_null(strstr(got, "capacity - H100 16000;"));
    assert_null(strstr(got, "4000;"));
    assert_null(strstr(got, "8000;"));
}

/* ---- snapshots: the newest two complete ones are kept ---- */

static void snapshots_keep_the_newest_two_and_a_rewrite_replaces(void **state)
{
    world *w = *state;
    unsigned char bytes[3] = {1, 0, 2};
    for (int64_t seq = 10; seq <= 40; seq += 10)
        check(gp_store_snapshot_put(w->store, seq, seq, bytes, sizeof bytes, GP_STORE_SNAPSHOTS_KEPT, &err), &err,
              "snapshot put");
    bytes[2] = 9; /* seq 40 written again: its row is replaced */
    check(gp_store_snapshot_put(w->store, 40, 41, bytes, sizeof bytes, GP_STORE_SNAPSHOTS_KEPT, &err), &err,
          "snapshot put again");
    int64_t seqs[8];
    size_t n;
    check(gp_store_snapshots_list(w->store, seqs, 8, &n, &err), &err, "snapshots list");
    assert_int_equal(n, 2);
    assert_int_equal(seqs[0], 40);
    assert_int_equal(seqs[1], 30);
    unsigned char *got;
    size_t len;
    check(gp_store_snapshot_get(w->store, 40, &got, &len, &err), &err, "snapshot get");
    assert_int_equal(len, 3);
    assert_memory_equal(got, bytes, 3);
    free(got);
    assert_int_equal(gp_store_snapshot_get(w->store, 10, &got, &len, &err), GP_ERR_NOT_FOUND);
}

/* ---- upserts that were INSERT OR REPLACE ---- */

static bool started(world *w, int64_t pid)
{
    bool first;
    begin(w);
    in_tx(w, gp_store_run_started(w->store, 7, 100, 0, pid, &first, &err), "run started");
    return first;
}

static void a_run_placed_again_forgets_its_pid(void **state)
{
    world *w = *state;
    begin(w);
    in_tx(w, gp_store_run_add(w->store, 7, 100, 0, "n1", &err), "run add");
    assert_true(started(w, 41));
    assert_false(started(w, 42));
    begin(w);
    in_tx(w, gp_store_run_add(w->store, 7, 100, 0, "n2", &err), "run add again");
    char node_name[32];
    check(gp_store_run_node(w->store, 7, 100, 0, node_name, sizeof node_name, &err), &err, "run node");
    assert_string_equal(node_name, "n2");
    assert_true(started(w, 43));
    int64_t times[4];
    assert_int_equal(gp_store_runs_list(w->store, 7, 0, times, 4), 1);
}

static void a_health_drain_set_twice_is_one_drain(void **state)
{
    world *w = *state;
    bool drained;
    begin(w);
    gp_err rc = gp_store_health_drain_set(w->store, "n1", true, 5, &err);
    if (rc == GP_OK)
        rc = gp_store_health_drain_set(w->store, "n1", true, 6, &err);
    in_tx(w, rc, "drain");
    check(gp_store_health_drain_get(w->store, "n1", &drained, &err), &err, "drain get");
    assert_true(drained);
    begin(w);
    in_tx(w, gp_store_health_drain_set(w->store, "n1", false, 7, &err), "undrain");
    check(gp_store_health_drain_get(w->store, "n1", &drained, &err), &err, "drain get");
    assert_false(drained);
}

static void a_price_effective_at_a_taken_time_is_refused_and_the_first_kept(void **state)
{
    world *w = *state;
    begin(w);
    in_tx(w, gp_store_price_add(w->store, 1000, "USD", "{\"v\": 1}", 1, &err), "price add");
    begin(w);
    assert_int_equal(gp_store_price_add(w->store, 1000, "EUR", "{\"v\": 2}", 2, &err), GP_ERR_EXISTS);
    assert_string_equal(err.field, "effective");
    gp_store_rollback(w->store);
    json_t *table = NULL;
    check(gp_store_prices_get(w->store, &table, &err), &err, "prices");
    assert_string_equal(json_string_value(json_object_get(table, "currency")), "USD");
    assert_int_equal(json_array_size(json_object_get(table, "versions")), 1);
    json_decref(table);
}

/* ---- a GPU's health: since moves only when healthy changes ---- */

static void gpu_health_since_moves_only_on_a_change(void **state)
{
    world *w = *state;
    int64_t times[] = {10, 20, 30};
    bool healthy[] = {false, false, true};
    for (int i = 0; i < 3; i++) {
        begin(w);
        in_tx(w, gp_store_gpu_health_set(w->store, "n1", 0, healthy[i], times[i], "x", &err), "health");
        json_t *views = NULL;
        check(gp_store_gpu_health_view(w->store, "n1", 1, &views, &err), &err, "health view");
        json_int_t since = json_integer_value(json_object_get(json_array_get(views, 0), "since"));
        assert_int_equal(since, i == 2 ? 30 : 10);
        json_decref(views);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(usage_counts_only_each_intervals_overlap_with_the_window, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(ledger_levels_are_the_newest_record_of_each_key, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(snapshots_keep_the_newest_two_and_a_rewrite_replaces, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(a_run_placed_again_forgets_its_pid, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(a_health_drain_set_twice_is_one_drain, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(a_price_effective_at_a_taken_time_is_refused_and_the_first_kept, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(gpu_health_since_moves_only_on_a_change, world_setup, world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
