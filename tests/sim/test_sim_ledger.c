/* test_sim_ledger.c - gpupool-sim's usage ledger (sim/ledger.h) on a tiny
 * world, checked record by record.
 *
 * Fleet: one node of 8 H100, one node of 8 A100 partitioned by MIG.  Teams
 * a and b are guaranteed 4 H100 each.  Trace (policy gpupool, no grace, no
 * checkpoints): b submits two 4-GPU jobs of 100 s at t=0 (the second
 * borrows a's idle guarantee: burstable); a submits 4 GPUs for 50 s at
 * t=10 and reclaims: b's second job is preempted at 10 and runs again
 * 60..160; b submits a MIG 1g.10gb service of 30 s at t=5.  Epoch 1,000,000:
 * every time in the ledger is 1,000,000 + simulated seconds.
 *
 * Expected: capacity H100 8000 and A100 8000 at 1,000,000, guarantees a and
 * b 4000 at 1,000,000, then opens and closes; b's borrowed job closes
 * "preempted" at 1,000,010; the MIG job's records say share "mig", 142
 * milli-GPUs and the instance; the chain verifies from the zero hash; and
 * the simulation's results are the same with and without the ledger.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "eventlog/ledger_record.h"
#include "sim/simulator.h"

#define EPOCH 1000000

typedef struct world {
    gp_fleet_file fleet;
    gp_tenant_file tenants;
    gp_trace trace;
    char path[64];
    json_t **recs;   /* the ledger's records, parsed */
    size_t n;
} world;

static void add_job(world *w, const char *tenant, int64_t submit, int gpus, int64_t duration, const char *mig)
{
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    assert_true(gp_trace_tenant(&w->trace, tenant, &j.tenant));
    j.submit = submit;
    j.duration = duration;
    j.replicas = 1;
    j.gpus = gpus;
    j.cpu_millis = 1000;
    j.mem_mib = 1024;
    j.type_mask = (uint8_t)(1u << gp_trace_type(&w->trace, mig ? "A100" : "H100"));
    if (mig) {
        j.isolation = GP_ISO_MIG;
        j.gpu_milli = 142;
        snprintf(j.mig_profile, sizeof j.mig_profile, "%s", mig);
    }
    assert_int_equal(gp_trace_add(&w->trace, &j, NULL), GP_OK);
}

static void world_init(world *w)
{
    memset(w, 0, sizeof *w);
    const char *fleet = "nodes:\n"
                        "  - {name: h, gpu_type: H100, gpus: 8, gpu_mem_mib: 81920, cpu_millis: 64000, mem_mib: 65536}\n"
                        "  - {name: m, gpu_type: A100, gpus: 8, gpu_mem_mib: 81920, cpu_millis: 64000, mem_mib: 65536,"
                        " sharing: mig}\n";
    const char *tenants = "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4}}}\n  - {path: b, guarantee: {gpu: {H100: 4}}}\n";
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w->fleet, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(tenants, strlen(tenants), "tenants", &w->tenants, &err), GP_OK);
    gp_trace_init(&w->trace);
    add_job(w, "b", 0, 4, 100, NULL);
    add_job(w, "b", 0, 4, 100, NULL);
    add_job(w, "b", 5, 1, 30, "1g.10gb");
    add_job(w, "a", 10, 4, 50, NULL);
}

static void run(world *w, bool with_ledger, gp_sim_result *r)
{
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("gpupool", &p));
    gp_sim_options o = gp_sim_options_default();
    o.checkpoint_interval_s = 0;
    gp_error err;
    if (with_ledger) {
        snprintf(w->path, sizeof w->path, "/tmp/test_sim_ledger_XXXXXX");
        int fd = mkstemp(w->path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(gp_sim_ledger_open(w->path, EPOCH, &o.ledger, &err), GP_OK);
    }
    gp_sim_setup s = {.fleet = &w->fleet, .tenants = &w->tenants, .trace = &w->trace};
    assert_int_equal(gp_sim_run(&s, &p, &o, r, &err), GP_OK);
    if (with_ledger)
        assert_int_equal(gp_sim_ledger_close(o.ledger, &err), GP_OK);
}

/* Reads the ledger file, checking the chain line by line. */
static void read_ledger(world *w)
{
    FILE *f = fopen(w->path, "r");
    assert_non_null(f);
    char line[8192], prev[65];
    memcpy(prev, GP_LEDGER_ZERO_HASH, sizeof prev);
    w->recs = calloc(64, sizeof *w->recs);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        json_t *rec = json_loads(line, 0, NULL);
        assert_non_null(rec);
        assert_int_equal(json_integer_value(json_object_get(rec, "seq")), (json_int_t)w->n + 1);
        assert_string_equal(json_string_value(json_object_get(rec, "prev")), prev);
        char *canonical = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(canonical, line);
        free(canonical);
        gp_ledger_sha256_hex(line, strlen(line), prev);
        assert_true(w->n < 64);
        w->recs[w->n++] = rec;
    }
    fclose(f);
}

static void world_free(world *w)
{
    for (size_t i = 0; i < w->n; i++)
        json_decref(w->recs[i]);
    free(w->recs);
    if (w->path[0])
        unlink(w->path);
    gp_fleet_file_free(&w->fleet);
    gp_tenant_file_free(&w->tenants);
    gp_trace_free(&w->trace);
}

static const char *str(const json_t *rec, const char *key)
{
    const char *s = json_string_value(json_object_get(rec, key));
    return s ? s : "";
}

static int64_t num(const json_t *rec, const char *key)
{
    return json_integer_value(json_object_get(rec, key));
}

static void ledger_of_the_tiny_world(world *w)
{
    world_init(w);
    gp_sim_result r;
    run(w, true, &r);
    gp_sim_result_free(&r);
    read_ledger(w);
}

static void the_ledger_chains_from_the_zero_hash_in_canonical_text(void **state)
{
    (void)state;
    world w;
    ledger_of_the_tiny_world(&w); /* read_ledger checks seq, prev and text */
    assert_true(w.n >= 4 + 2 * 5);    /* baseline + open/close of 4 jobs and b's second run */
    world_free(&w);
}

static void the_baseline_is_the_fleet_and_the_guarantees_at_the_epoch(void **state)
{
    (void)state;
    world w;
    ledger_of_the_tiny_world(&w);
    const char *want[4][3] = {{"capacity", "H100", ""}, {"capacity", "A100", ""}, {"guarantee", "H100", "a"},
                              {"guarantee", "H100", "b"}};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(str(w.recs[i], "kind"), want[i][0]);
        assert_string_equal(str(w.recs[i], "gpu_type"), want[i][1]);
        assert_string_equal(str(w.recs[i], "tenant"), want[i][2]);
        assert_int_equal(num(w.recs[i], "start"), EPOCH);
    }
    assert_int_equal(num(w.recs[0], "milli_gpus"), 8000);
    assert_int_equal(num(w.recs[2], "milli_gpus"), 4000);
    world_free(&w);
}

static void a_reclaimed_borrowed_job_closes_as_preempted_at_epoch_plus_its_time(void **state)
{
    (void)state;
    world w;
    ledger_of_the_tiny_world(&w);
    int preempted = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (strcmp(str(w.recs[i], "kind"), "close") != 0 || strcmp(str(w.recs[i], "closed"), "preempted") != 0)
            continue;
        preempted++;
        assert_string_equal(str(w.recs[i], "tenant"), "b");
        assert_string_equal(str(w.recs[i], "class"), "burstable");
        assert_int_equal(num(w.recs[i], "end"), EPOCH + 10);
        const json_t *open = w.recs[num(w.recs[i], "open_seq") - 1];
        assert_string_equal(str(open, "kind"), "open");
        assert_int_equal(num(open, "interval"), num(w.recs[i], "interval"));
        assert_true(json_equal(json_object_get(open, "placement"), json_object_get(w.recs[i], "placement")));
        assert_true(json_is_null(json_object_get(w.recs[i], "user")));
    }
    assert_int_equal(preempted, 1);
    world_free(&w);
}

static void a_mig_job_records_its_compute_share_and_its_instance(void **state)
{
    (void)state;
    world w;
    ledger_of_the_tiny_world(&w);
    int seen = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (strcmp(str(w.recs[i], "gpu_type"), "A100") != 0 || strcmp(str(w.recs[i], "kind"), "open") != 0)
            continue;
        seen++;
        assert_string_equal(str(w.recs[i], "share"), "mig");
        assert_int_equal(num(w.recs[i], "milli_gpus"), 142);
        assert_int_equal(num(w.recs[i], "start"), EPOCH + 5);
        json_t *slice = json_object_get(json_array_get(json_object_get(w.recs[i], "placement"), 0), "slice");
        assert_string_equal(str(slice, "mig_profile"), "1g.10gb");
        assert_string_equal(str(json_array_get(json_object_get(w.recs[i], "placement"), 0), "node"), "m");
    }
    assert_int_equal(seen, 1);
    world_free(&w);
}

static void writing_the_ledger_changes_no_result_of_the_simulation(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    gp_sim_result with, without;
    run(&w, true, &with);
    run(&w, false, &without);
    assert_int_equal(with.n_jobs, without.n_jobs);
    assert_memory_equal(with.jobs, without.jobs, with.n_jobs * sizeof *with.jobs);
    assert_int_equal(with.events, without.events);
    assert_int_equal(with.preemptions, 1);
    gp_sim_result_free(&with);
    gp_sim_result_free(&without);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_ledger_chains_from_the_zero_hash_in_canonical_text),
        cmocka_unit_test(the_baseline_is_the_fleet_and_the_guarantees_at_the_epoch),
        cmocka_unit_test(a_reclaimed_borrowed_job_closes_as_preempted_at_epoch_plus_its_time),
        cmocka_unit_test(a_mig_job_records_its_compute_share_and_its_instance),
        cmocka_unit_test(writing_the_ledger_changes_no_result_of_the_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
