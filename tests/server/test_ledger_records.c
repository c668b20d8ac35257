/* test_ledger_records.c - the usage ledger's records, computed by hand.
 *
 * Each test drives the journal (server/journal.h) over a fresh SQLite
 * store in engine time -- tenants, nodes, submits, ticks and agent reports
 * at explicit `now` values, each in its own transaction as gpupoold does --
 * and then compares every record of the ledger, field by field, with the
 * record written out here by hand: the MIG milli-GPUs (floor(1000 x 1/7) =
 * 142), the time-slice share (floor(1000 / 3) = 333), the start and end,
 * the class and why the interval closed.  The chain is recomputed here too
 * (SHA-256 of each record's canonical text, prev = the hash before) and by
 * gp_store_ledger_verify.  Before the usage records come the capacity
 * record of each node add and the guarantee record of each tenant change
 * that moved a guarantee (ledger.h: gp_ledger_sync).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "world.h"

#include "server/ledger.h"

#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* Node h0 with one whole H100 (GPU-h0-0) and tenant lab (no guarantee), at t=0. */
static void one_h100_and_lab(world *w)
{
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 1, \"gpu_uuids\": [\"GPU-h0-0\"]}", 0);
    tenant(w, "lab", "{}", 0);
}

/* ---- the ledger against the records written by hand ---- */

static void sha256_hex(const char *text, char out[65])
{
    unsigned char digest[32];
    assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), digest), 0);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

/* Checks the ledger holds exactly `expected` (records without seq and
 * prev, which are filled in here: seq from 1, prev the hash of the record
 * before), that each stored hash is SHA-256 of the record's canonical
 * text, and that gp_store_ledger_verify finds the chain whole. */
static void assert_ledger(world *w, const char *const *expected, size_t n)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *page = NULL;
    check(gp_store_ledger_list(w->store, 0, 1000, &page, &err), &err, "ledger list");
    json_t *records = json_object_get(page, "records");
    assert_int_equal(json_array_size(records), n);
    char prev[65] = ZERO_HASH;
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(records, i);
        json_t *got = json_object_get(row, "record");
        json_t *want = parse(expected[i]);
        json_object_set_new(want, "seq", json_integer((json_int_t)i + 1));
        json_object_set_new(want, "prev", json_string(prev));
        if (!json_equal(got, want)) {
            char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
            char *x = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
            fail_msg("record %zu\n got  %s\n want %s", i + 1, g, x);
        }
        char *text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        sha256_hex(text, prev);
        free(text);
        assert_string_equal(json_string_value(json_object_get(row, "hash")), prev);
        json_decref(want);
    }
    json_decref(page);
    gp_store_ledger_check c;
    check(gp_store_ledger_verify(w->store, &c, &err), &err, "ledger verify");
    assert_int_equal(c.first_bad, 0);
    assert_int_equal(c.records, (int64_t)n);
    assert_int_equal(c.head_seq, (int64_t)n);
    assert_string_equal(c.head_hash, prev);
}

/* The ledger holds the capacity and guarantee records `before` (as the
 * node and tenant changes wrote them), then exactly one interval: its open
 * record with `fields` (JSON members, without kind, seq and prev) and its
 * close record, the same fields with end, why it closed and open_seq. */
static void assert_one_interval(world *w, const char *before, const char *fields, int64_t end, const char *closed)
{
    char open[2048], close[2048];
    json_t *pre = parse(before);
    size_t n = json_array_size(pre);
    snprintf(open, sizeof open, "{\"kind\": \"open\", %s}", fields);
    snprintf(close, sizeof close, "{\"kind\": \"close\", %s, \"end\": %lld, \"closed\": \"%s\", \"open_seq\": %zu}",
             fields, (long long)end, closed, n + 1);
    const char *expected[8];
    char *texts[8];
    for (size_t i = 0; i < n && i < 6; i++)
        expected[i] = texts[i] = json_dumps(json_array_get(pre, i), 0);
    expected[n] = open;
    expected[n + 1] = close;
    assert_ledger(w, expected, n + 2);
    for (size_t i = 0; i < n && i < 6; i++)
        free(texts[i]);
    json_decref(pre);
}

#define H100_1 "{\"kind\": \"capacity\", \"gpu_type\": \"H100\", \"milli_gpus\": 1000, \"start\": 0}"

/* vision holds one H100 as guarantee; alice's job takes a 1g.10gb slice of
 * the MIG H100 (1 of 7 compute slices: floor(1000 / 7) = 142 milli-GPUs,
 * within the guarantee) at t=1000 and exits 0 at t=6400: 90 minutes. */
static void mig_slice_held_90_minutes_is_142_milli_gpus_for_5400_seconds_finished(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"m0\", \"gpu_type\": \"H100\", \"gpu_count\": 1, \"gpu_mem_mib\": 81920,"
            " \"sharing\": \"mig\", \"gpu_uuids\": [\"GPU-m0-0\"]}", 1000);
    tenant(w, "vision", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", 1000);
    uint64_t id = submit(w, "{\"tenant\": \"vision\", \"user\": \"alice\", \"share\": {\"mig\": \"1g.10gb\"}}", 1000);
    assert_int_equal(id, 1);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    exit_ok(w, id, "m0", 1000 + 90 * 60);
    /* 1g.10gb may start at memory slices 0..6 (sharing_builder.h); an empty
     * GPU gives it the last, 6, keeping 0..5 whole for larger profiles. */
#define MIG_COMMON "\"class\": \"guaranteed\", \"gpu_type\": \"H100\", \"interval\": 1, \"job\": 1,"              \
                   " \"milli_gpus\": 142, \"placement\": [{\"node\": \"m0\", \"gpus\": [\"GPU-m0-0\"],"          \
                   " \"slice\": {\"kind\": \"mig\", \"milli_gpus\": 142, \"mig_profile\": \"1g.10gb\","         \
                   " \"mig_start\": 6}}], \"share\": \"mig\", \"start\": 1000, \"tenant\": \"vision\","         \
                   " \"topology\": \"any\", \"user\": \"alice\""
    assert_one_interval(w,
                        "[{\"kind\": \"capacity\", \"gpu_type\": \"H100\", \"milli_gpus\": 1000, \"start\": 1000},"
                        " {\"kind\": \"guarantee\", \"tenant\": \"vision\", \"gpu_type\": \"H100\","
                        " \"milli_gpus\": 1000, \"start\": 1000}]",
                        MIG_COMMON, 6400, "finished");
#undef MIG_COMMON
}

/* bob's job of lab (no guarantee) borrows owner's idle H100 at t=0 as
 * burstable; owner claims its guarantee at t=1800, half way through the
 * hour: bob's job (grace 0) is preempted and its interval closes at 1800,
 * owner's opens at 1800 as guaranteed. */
static void burst_job_preempted_mid_hour_closes_preempted_at_the_reclaim(void **state)
{
    world *w = *state;
    one_h100_and_lab(w);
    tenant(w, "owner", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", 0);
    uint64_t burst = submit(w, "{\"tenant\": \"lab\", \"user\": \"bob\", \"checkpoint_grace_s\": 0}", 0);
    assert_int_equal(job_state(w, burst), GP_JOB_RUNNING);
    uint64_t owner = submit(w, "{\"tenant\": \"owner\", \"user\": \"carol\", \"checkpoint_grace_s\": 0}", 1800);
    if (job_state(w, owner) != GP_JOB_RUNNING)
        tick(w, 1800);
    assert_int_equal(job_state(w, owner), GP_JOB_RUNNING);
    assert_int_equal(job_state(w, burst), GP_JOB_PENDING);
#define PLACED "\"gpu_type\": \"H100\", \"milli_gpus\": 1000, \"placement\": [{\"node\": \"h0\","                 \
               " \"gpus\": [\"GPU-h0-0\"]}], \"share\": \"whole\", \"topology\": \"any\""
#define BURST "\"class\": \"burstable\", \"interval\": 1, \"job\": 1, \"start\": 0, \"tenant\": \"lab\","        \
              " \"user\": \"bob\", " PLACED
    const char *const expected[] = {
        H100_1,
        "{\"kind\": \"guarantee\", \"tenant\": \"owner\", \"gpu_type\": \"H100\", \"milli_gpus\": 1000, \"start\": 0}",
        "{\"kind\": \"open\", " BURST "}",
        "{\"kind\": \"close\", " BURST ", \"end\": 1800, \"closed\": \"preempted\", \"open_seq\": 3}",
        "{\"kind\": \"open\", \"class\": \"guaranteed\", \"interval\": 2, \"job\": 2, \"start\": 1800,"
        " \"tenant\": \"owner\", \"user\": \"carol\", " PLACED "}",
    };
#undef BURST
#undef PLACED
    assert_ledger(w, expected, 5);
}

/* The default pool time-slices each GPU into 3 replicas: a replica holds
 * floor(1000 / 3) = 333 milli-GPUs, from t=50 until it exits at t=950. */
static void timeslice_replica_is_a_third_of_the_gpu_when_three_share_it(void **state)
{
    world *w = *state;
    pool(w, "{\"name\": \"default\", \"timeslice_replicas\": 3}", 0);
    tenant(w, "serve", "{}", 0);
    node(w, "{\"name\": \"t0\", \"gpu_type\": \"L40S\", \"gpu_count\": 1, \"sharing\": \"timeslice\","
            " \"gpu_uuids\": [\"GPU-t0-0\"]}", 0);
    uint64_t id = submit(w, "{\"tenant\": \"serve\", \"user\": \"dan\", \"kind\": \"inference\","
                            " \"share\": {\"timeslice\": true}}", 50);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    exit_ok(w, id, "t0", 950);
#define TS "\"class\": \"burstable\", \"gpu_type\": \"L40S\", \"interval\": 1, \"job\": 1, \"milli_gpus\": 333,"   \
           " \"placement\": [{\"node\": \"t0\", \"gpus\": [\"GPU-t0-0\"], \"slice\": {\"kind\": \"timeslice\","   \
           " \"milli_gpus\": 333}}], \"share\": \"timeslice\", \"start\": 50, \"tenant\": \"serve\","           \
           " \"topology\": \"any\", \"user\": \"dan\""
    assert_one_interval(w, "[{\"kind\": \"capacity\", \"gpu_type\": \"L40S\", \"milli_gpus\": 1000, \"start\": 0}]", TS,
                        950, "finished");
#undef TS
}

/* eve's 2-GPU job runs on n0 from t=10; n0 is lost at t=610: the interval
 * closes at 610, "node_lost", and the job waits again (no other node).
 * The placement lists the GPUs in the engine's order of choice. */
static void job_on_a_lost_node_closes_node_lost_when_the_node_is_lost(void **state)
{
    world *w = *state;
    tenant(w, "lab", "{}", 0);
    node(w, "{\"name\": \"n0\", \"gpu_type\": \"A100\", \"gpu_count\": 2, \"gpu_uuids\": [\"GPU-n0-0\", \"GPU-n0-1\"]}",
         0);
    uint64_t id = submit(w, "{\"tenant\": \"lab\", \"user\": \"eve\", \"gpus\": 2}", 10);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    node_lost(w, "n0", 610);
    assert_int_equal(job_state(w, id), GP_JOB_PENDING);
#define LOST "\"class\": \"burstable\", \"gpu_type\": \"A100\", \"interval\": 1, \"job\": 1, \"milli_gpus\": 2000," \
             " \"placement\": [{\"node\": \"n0\", \"gpus\": [\"GPU-n0-1\", \"GPU-n0-0\"]}], \"share\": \"whole\"," \
             " \"start\": 10, \"tenant\": \"lab\", \"topology\": \"any\", \"user\": \"eve\""
    assert_one_interval(w, "[{\"kind\": \"capacity\", \"gpu_type\": \"A100\", \"milli_gpus\": 2000, \"start\": 0}]", LOST,
                        610, "node_lost");
#undef LOST
}

/* frank's job (limit 600 s, grace 0) runs from t=100; the pass at t=700
 * finds it past its limit and stops it: closed "time_limit" at 700. */
static void job_past_its_time_limit_closes_time_limit_when_stopped(void **state)
{
    world *w = *state;
    one_h100_and_lab(w);
    uint64_t id = submit(w, "{\"tenant\": \"lab\", \"user\": \"frank\", \"time_limit_s\": 600,"
                            " \"checkpoint_grace_s\": 0}", 100);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    tick(w, 700);
    assert_int_equal(gp_engine_job_info(w->journal.engine, id, &(gp_job_info){0}, NULL), GP_ERR_NOT_FOUND);
#define LIMITED "\"class\": \"burstable\", \"gpu_type\": \"H100\", \"interval\": 1, \"job\": 1,"           \
                " \"milli_gpus\": 1000, \"placement\": [{\"node\": \"h0\", \"gpus\": [\"GPU-h0-0\"]}],"        \
                " \"share\": \"whole\", \"start\": 100, \"tenant\": \"lab\", \"topology\": \"any\", \"user\": \"frank\""
    assert_one_interval(w, "[" H100_1 "]", LIMITED, 700, "time_limit");
#undef LIMITED
}

/* grace's job runs on h0's only GPU from t=0; the GPU fails at t=300: the
 * interval closes "gpu_failed" and the job waits again. */
static void job_on_a_failed_gpu_closes_gpu_failed(void **state)
{
    world *w = *state;
    one_h100_and_lab(w);
    uint64_t id = submit(w, "{\"tenant\": \"lab\", \"user\": \"grace\"}", 0);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    gpu_failed(w, "h0", 0, 300);
    assert_int_equal(job_state(w, id), GP_JOB_PENDING);
#define FAILED "\"class\": \"burstable\", \"gpu_type\": \"H100\", \"interval\": 1, \"job\": 1,"            \
               " \"milli_gpus\": 1000, \"placement\": [{\"node\": \"h0\", \"gpus\": [\"GPU-h0-0\"]}],"         \
               " \"share\": \"whole\", \"start\": 0, \"tenant\": \"lab\", \"topology\": \"any\", \"user\": \"grace\""
    assert_one_interval(w, "[" H100_1 "]", FAILED, 300, "gpu_failed");
#undef FAILED
}

/* Guarantee records follow the tenant's own guarantee: set (1 H100 at
 * t=0), changed (2 at t=100), removed with the tenant (0 at t=200); a
 * change that moves no guarantee (a weight) and a start with nothing new
 * (gp_ledger_sync, as gpupoold runs it at start) write none. */
static void guarantee_records_follow_each_change_and_a_start_adds_none(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 2}", 0);
    tenant(w, "lab", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", 0);
    tenant(w, "lab", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}}", 100);
    tenant(w, "lab", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}, \"weight\": 3}", 150);
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_tenant_remove(&w->journal, "lab", 200, &err), &err, "tenant remove");
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_ledger_sync(w->store, w->journal.engine, true, true, 300, &err), &err, "sync");
#define G(m, t) "{\"kind\": \"guarantee\", \"tenant\": \"lab\", \"gpu_type\": \"H100\", \"milli_gpus\": " #m ", \"start\": " #t "}"
    const char *const expected[] = {
        "{\"kind\": \"capacity\", \"gpu_type\": \"H100\", \"milli_gpus\": 2000, \"start\": 0}",
        G(1000, 0), G(2000, 100), G(0, 200),
    };
#undef G
    assert_ledger(w, expected, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(mig_slice_held_90_minutes_is_142_milli_gpus_for_5400_seconds_finished,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(burst_job_preempted_mid_hour_closes_preempted_at_the_reclaim, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(timeslice_replica_is_a_third_of_the_gpu_when_three_share_it, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(job_on_a_lost_node_closes_node_lost_when_the_node_is_lost, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(job_past_its_time_limit_closes_time_limit_when_stopped, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(job_on_a_failed_gpu_closes_gpu_failed, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(guarantee_records_follow_each_change_and_a_start_adds_none, world_setup,
                                        world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
