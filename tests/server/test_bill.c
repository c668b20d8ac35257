/* test_bill.c - bills computed by hand (metering/bill.h, docs/metering.md).
 *
 * Each test drives the journal (world.h) in engine time inside the month
 * 2026-11 (T0 = 2026-11-01T00:00:00Z), so the ledger holds the records
 * gpupoold writes (capacity, guarantee, open, close), then computes the
 * bill twice -- from the store's typed rows, as GET /v1/bill does, and
 * from the ledger's JSON records, as the offline `gpupool bill --ledger`
 * does -- requires both to be equal, and compares each amount, as a
 * string, with the one worked out in the comment.
 *
 * Prices unless a test says otherwise: H100 2.50 and L40S 0.90 per
 * GPU-hour from T0, premium nvlink 1.10.  A GPU-hour is 3,600,000
 * milli-GPU-seconds.
 */
#include "world.h"

#include "metering/bill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 INT64_C(1793491200) /* 2026-11-01T00:00:00Z */
#define TO (T0 + 30 * 86400)   /* 2026-12-01 */
#define HOUR 3600

#define PRICES(modes)                                                                                                \
    "{\"currency\": \"USD\", \"versions\": [{\"effective\": 1793491200, \"gpu_types\": {\"H100\": \"2.50\","      \
    " \"L40S\": \"0.90\"}, \"premium\": {\"nvlink\": \"1.10\"}}], \"modes\": " modes "}"

static gp_err feed(void *ctx, const gp_bill_record *r, gp_error *err)
{
    return gp_bill_add(ctx, r, err);
}

static gp_bill *bill_new(gp_price_table *table, const char *prices, int64_t as_of, const char *tenant)
{
    gp_error err;
    gp_error_clear(&err);
    json_t *p = parse(prices);
    check(gp_price_table_parse(p, table, &err), &err, "price table");
    json_decref(p);
    gp_bill *b;
    gp_bill_query q = {.period = "2026-11", .as_of = as_of, .tenant = tenant, .fleet = true};
    check(gp_bill_new(table, &q, &b, &err), &err, "bill");
    return b;
}

/* The bill from the ledger's JSON records (all of them, in order). */
static json_t *bill_from_records(world *w, const char *prices, int64_t as_of, const char *tenant, char **csv)
{
    gp_price_table table;
    gp_bill *b = bill_new(&table, prices, as_of, tenant);
    gp_error err;
    gp_error_clear(&err);
    json_t *page;
    check(gp_store_ledger_list(w->store, 0, 1000, &page, &err), &err, "ledger list");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(page, "records"), i, row) {
        gp_bill_record r;
        check(gp_bill_record_from_json(json_object_get(row, "record"), &r, &err), &err, "record");
        check(gp_bill_add(b, &r, &err), &err, "bill add");
    }
    json_t *out = gp_bill_json(b, &err);
    if (csv)
        *csv = gp_bill_csv(b, &err);
    gp_bill_free(b);
    gp_price_table_free(&table);
    json_decref(page);
    return out;
}

/* The bill of 2026-11 as of as_of: from the store's typed rows, checked
 * equal to the one from the JSON records. */
static json_t *bill_of(world *w, const char *prices, int64_t as_of, const char *tenant)
{
    gp_price_table table;
    gp_bill *b = bill_new(&table, prices, as_of, tenant);
    gp_error err;
    gp_error_clear(&err);
    int64_t from, until;
    gp_bill_window(b, &from, &until);
    check(gp_store_bill_records(w->store, from, until, feed, b, &err), &err, "bill records");
    json_t *out = gp_bill_json(b, &err);
    assert_non_null(out);
    gp_bill_free(b);
    gp_price_table_free(&table);
    json_t *again = bill_from_records(w, prices, as_of, tenant, NULL);
    if (!json_equal(out, again)) {
        char *x = json_dumps(out, JSON_INDENT(1)), *y = json_dumps(again, JSON_INDENT(1));
        fail_msg("the store's bill\n%s\ndiffers from the records' bill\n%s", x, y);
    }
    json_decref(again);
    return out;
}

static json_t *tenant_of(json_t *bill, const char *path)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(bill, "tenants"), i, t) {
        if (strcmp(json_string_value(json_object_get(t, "tenant")), path) == 0)
            return t;
    }
    char *text = json_dumps(bill, JSON_INDENT(1));
    fail_msg("no tenant %s in\n%s", path, text);
    return NULL;
}

/* The tenant's line of that kind, type and topology has exactly these
 * milli-GPU-seconds, GPU-hours and amount. */
static void assert_line(json_t *bill, const char *path, const char *kind, const char *type, const char *topo,
                        int64_t mgs, const char *hours, const char *amount)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(tenant_of(bill, path), "lines"), i, l) {
        if (strcmp(json_string_value(json_object_get(l, "kind")), kind) != 0 ||
            strcmp(json_string_value(json_object_get(l, "gpu_type")), type) != 0 ||
            strcmp(json_string_value(json_object_get(l, "topology")), topo) != 0)
            continue;
        assert_int_equal(json_integer_value(json_object_get(l, "milli_gpu_seconds")), mgs);
        assert_string_equal(json_string_value(json_object_get(l, "gpu_hours")), hours);
        assert_string_equal(json_string_value(json_object_get(l, "amount")), amount);
        return;
    }
    fail_msg("%s has no %s line of %s %s", path, kind, type, topo);
}

static void assert_lines(json_t *bill, const char *path, size_t n)
{
    assert_int_equal(json_array_size(json_object_get(tenant_of(bill, path), "lines")), n);
}

static void assert_money(json_t *bill, const char *path, const char *amount, const char *subtotal, const char *due)
{
    json_t *t = tenant_of(bill, path);
    assert_string_equal(json_string_value(json_object_get(t, "amount")), amount);
    assert_string_equal(json_string_value(json_object_get(t, "subtotal")), subtotal);
    assert_string_equal(json_string_value(json_object_get(t, "due")), due);
}

/* The fleet line of the type: physical, whole, mig, mps, timeslice,
 * idle_in_guarantees, idle_unowned. */
static void assert_fleet(json_t *bill, const char *type, const int64_t want[7])
{
    static const char *const fields[] = {"physical", "whole", "mig", "mps", "timeslice", "idle_in_guarantees",
                                         "idle_unowned"};
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(bill, "fleet"), i, f) {
        if (strcmp(json_string_value(json_object_get(f, "gpu_type")), type) != 0)
            continue;
        for (size_t k = 0; k < 7; k++)
            if (json_integer_value(json_object_get(f, fields[k])) != want[k])
                fail_msg("fleet %s %s: %lld, want %lld", type, fields[k],
                         (long long)json_integer_value(json_object_get(f, fields[k])), (long long)want[k]);
        return;
    }
    fail_msg("no fleet line for %s", type);
}

/* vision (no guarantee) holds a 1g.10gb slice of a MIG H100 (142
 * milli-GPUs) from T0 to T0 + 90 min: 142 x 5400 = 766,800 mgs = 0.213
 * GPU-hours x 2.50 = 0.532500, burst.  The fleet's one H100 for 30 days
 * is 2,592,000,000 mgs, of it mig 766,800, the rest unowned idle. */
static void mig_slice_for_90_minutes_bills_142_milli_gpus_as_burst(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"m0\", \"gpu_type\": \"H100\", \"gpu_count\": 1, \"gpu_mem_mib\": 81920,"
            " \"sharing\": \"mig\", \"gpu_uuids\": [\"GPU-m0-0\"]}", T0);
    tenant(w, "vision", "{}", T0);
    uint64_t id = submit(w, "{\"tenant\": \"vision\", \"user\": \"alice\", \"share\": {\"mig\": \"1g.10gb\"}}", T0);
    exit_ok(w, id, "m0", T0 + 90 * 60);
    json_t *bill = bill_of(w, PRICES("{}"), TO, NULL);
    assert_lines(bill, "vision", 1);
    assert_line(bill, "vision", "burst", "H100", "any", 766800, "0.213000", "0.532500");
    assert_money(bill, "vision", "0.532500", "0.532500", "0.000000");
    assert_string_equal(json_string_value(json_object_get(tenant_of(bill, "vision"), "mode")), "showback");
    const int64_t fleet[7] = {2592000000, 0, 766800, 0, 0, 0, 2592000000 - 766800};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
}

/* lab's burstable job holds the one H100 from T0; owner {guarantee 1}
 * claims it at T0 + 1800.  As of T0 + 3600:
 *     lab   burst       1000 x 1800 = 0.5 h x 2.50  = 1.250000
 *     owner floor       1000 x 3600 = 1 h x 2.50    = 2.500000
 *           guaranteed  1000 x 1800 = 0.5 h, topology any: surcharge 0
 * owner bills chargeback (due 2.500000), lab showback (due 0).  The GPU
 * was never idle: 3,600,000 whole, no idle. */
static void burst_job_preempted_mid_hour_pays_its_half_hour_and_the_owner_its_floor(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 1, \"gpu_uuids\": [\"GPU-h0-0\"]}", T0);
    tenant(w, "lab", "{}", T0);
    tenant(w, "owner", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", T0);
    uint64_t burst = submit(w, "{\"tenant\": \"lab\", \"user\": \"bob\", \"checkpoint_grace_s\": 0}", T0);
    assert_int_equal(job_state(w, burst), GP_JOB_RUNNING);
    uint64_t claim = submit(w, "{\"tenant\": \"owner\", \"user\": \"carol\", \"checkpoint_grace_s\": 0}", T0 + 1800);
    if (job_state(w, claim) != GP_JOB_RUNNING)
        tick(w, T0 + 1800);
    assert_int_equal(job_state(w, claim), GP_JOB_RUNNING);
    json_t *bill = bill_of(w, PRICES("{\"owner\": \"chargeback\"}"), T0 + HOUR, NULL);
    assert_line(bill, "lab", "burst", "H100", "any", 1800000, "0.500000", "1.250000");
    assert_money(bill, "lab", "1.250000", "1.250000", "0.000000");
    assert_line(bill, "owner", "floor", "H100", "any", 3600000, "1.000000", "2.500000");
    assert_line(bill, "owner", "guaranteed", "H100", "any", 1800000, "0.500000", "0.000000");
    assert_money(bill, "owner", "2.500000", "2.500000", "2.500000");
    const int64_t fleet[7] = {3600000, 3600000, 0, 0, 0, 0, 0};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
}

/* secure is dedicated: its 2-GPU job on an 8-GPU node from T0 to T0 + 1 h
 * keeps the other 6 GPUs idle (nobody else may use them), billed to it on
 * their own line at the price, no premium:
 *     secure  burst           2000 x 3600 = 2 h x 2.50  =  5.000000
 *             dedicated_idle  6000 x 3600 = 6 h x 2.50  = 15.000000
 * In the fleet section those 6 GPU-hours are idle all the same. */
static void dedicated_tenant_pays_the_gpus_its_exclusivity_keeps_idle(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"d0\", \"gpu_type\": \"H100\", \"gpu_count\": 8}", T0);
    tenant(w, "secure", "{\"nodes\": \"dedicated\"}", T0);
    uint64_t id = submit(w, "{\"tenant\": \"secure\", \"user\": \"alice\", \"gpus\": 2}", T0);
    assert_int_equal(job_state(w, id), GP_JOB_RUNNING);
    exit_ok(w, id, "d0", T0 + HOUR);
    tick(w, T0 + HOUR);
    json_t *bill = bill_of(w, PRICES("{}"), TO, NULL);
    assert_lines(bill, "secure", 2);
    assert_line(bill, "secure", "burst", "H100", "any", 7200000, "2.000000", "5.000000");
    assert_line(bill, "secure", "dedicated_idle", "H100", "any", 21600000, "6.000000", "15.000000");
    assert_money(bill, "secure", "20.000000", "20.000000", "0.000000");
    int64_t month = INT64_C(8000) * 720 * HOUR;
    const int64_t fleet[7] = {month, 7200000, 0, 0, 0, 0, month - 7200000};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
}

/* research {guarantee 2 H100} on a fleet of 4, nothing ever runs: the
 * floor is billed all month, 2 x 720 h x 2.50 = 3600.000000, due in
 * chargeback.  Idle: 4 x 720 h, half of it inside the guarantee. */
static void guarantee_never_used_is_billed_as_floor_in_chargeback(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 4}", T0);
    tenant(w, "research", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}}", T0);
    json_t *bill = bill_of(w, PRICES("{\"research\": \"chargeback\"}"), TO, NULL);
    assert_lines(bill, "research", 1);
    assert_line(bill, "research", "floor", "H100", "any", INT64_C(2000) * 720 * HOUR, "1440.000000", "3600.000000");
    assert_money(bill, "research", "3600.000000", "3600.000000", "3600.000000");
    int64_t month = INT64_C(1000) * 720 * HOUR;
    const int64_t fleet[7] = {4 * month, 0, 0, 0, 0, 2 * month, 2 * month};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
    json_t *shown = bill_of(w, PRICES("{}"), TO, NULL); /* the same lines in showback, nothing due */
    assert_money(shown, "research", "3600.000000", "3600.000000", "0.000000");
    json_decref(shown);
}

/* The booking records gpupoold writes (server/ledger.c, one per change). */
static void booking_record(world *w, const char *name, int64_t milli, int64_t start, int64_t end)
{
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:s}", "kind", "booking", "booking", name,
                            "tenant", "research", "user", "alice", "gpu_type", "H100", "milli_gpus", (json_int_t)milli,
                            "topology", "block", "start", (json_int_t)start, "end", (json_int_t)end, "state", "planned");
    commit(w, gp_store_ledger_append(w->store, rec, &err), &err, "booking record");
    json_decref(rec);
}

/* research {guarantee 2 H100} books 4 H100 for T0+10h..T0+20h, 2 of them
 * beyond its guarantee (its org's allowance), then cancels at T0+15h: the
 * newest record of "surge" holds 2000 milli-GPUs for 5 h = 36,000,000 mgs
 * = 10 GPU-hours x 2.50 = 25.000000 on its own "booked" line, beside the
 * floor of 1440 GPU-hours.  "gone" was cancelled before its start (its
 * newest record ends at its start): nothing.  "inside" is all within the
 * guarantee (0 beyond it): free, no line.  A booking is not use: the
 * fleet's whole and idle figures do not count it. */
static void booking_beyond_the_guarantee_bills_its_newest_window_as_its_own_line(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 4}", T0);
    tenant(w, "research", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}}", T0);
    booking_record(w, "surge", 2000, T0 + 10 * HOUR, T0 + 20 * HOUR);
    booking_record(w, "gone", 2000, T0 + 100 * HOUR, T0 + 110 * HOUR);
    booking_record(w, "inside", 0, T0 + 30 * HOUR, T0 + 40 * HOUR);
    booking_record(w, "surge", 2000, T0 + 10 * HOUR, T0 + 15 * HOUR);
    booking_record(w, "gone", 2000, T0 + 100 * HOUR, T0 + 100 * HOUR);
    json_t *bill = bill_of(w, PRICES("{\"research\": \"chargeback\"}"), TO, NULL);
    assert_lines(bill, "research", 2);
    assert_line(bill, "research", "booked", "H100", "block", INT64_C(2000) * 5 * HOUR, "10.000000", "25.000000");
    assert_line(bill, "research", "floor", "H100", "any", INT64_C(2000) * 720 * HOUR, "1440.000000", "3600.000000");
    assert_money(bill, "research", "3625.000000", "3625.000000", "3625.000000");
    int64_t month = INT64_C(1000) * 720 * HOUR;
    const int64_t fleet[7] = {4 * month, 0, 0, 0, 0, 2 * month, 2 * month};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
    char *csv = NULL;
    json_decref(bill_from_records(w, PRICES("{}"), TO, NULL, &csv));
    if (!strstr(csv, ",booking,research,,alice,H100,whole,booked,block,2.000000,2026-11-01T10:00:00Z,"
                     "2026-11-01T15:00:00Z,2026-11-01T10:00:00Z,2026-11-01T15:00:00Z,10.000000,36000000,2.500000,"
                     "1.000000,25.000000\n"))
        fail_msg("no booking row in\n%s", csv);
    free(csv);
}

/* A tenant is listed only for usage or a guarantee > 0 in force during
 * the period: "old", given 1 H100 in September and removed in October,
 * is not in November's bill (it was, with no lines and 0.000000); a
 * guarantee that ends inside the period still lists its tenant. */
static void tenant_removed_before_the_period_is_not_listed(void **state)
{
    world *w = *state;
    const int64_t day = 86400;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 4}", T0 - 60 * day);
    tenant(w, "old", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", T0 - 60 * day);
    gp_error err;
    gp_error_clear(&err);
    check(gp_store_begin(w->store, &err), &err, "begin");
    commit(w, gp_journal_tenant_remove(&w->journal, "old", T0 - 30 * day, &err), &err, "tenant remove");
    tenant(w, "research", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}}", T0 - 30 * day);
    tenant(w, "brief", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", T0 - 30 * day);
    tenant(w, "brief", "{}", T0 + HOUR); /* in force for the month's first hour */
    json_t *bill = bill_of(w, PRICES("{}"), TO, NULL);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(bill, "tenants"), i, t)
        assert_string_not_equal(json_string_value(json_object_get(t, "tenant")), "old");
    assert_lines(bill, "research", 1);
    assert_line(bill, "brief", "floor", "H100", "any", INT64_C(1000) * HOUR, "1.000000", "2.500000");
    json_decref(bill);
}

/* H100 2.50 from T0, 3.00 from T0 + 15 days.  lab's job holds one H100
 * from 1 h before the change to 1 h after: 1 h x 2.50 + 1 h x 3.00 =
 * 5.500000 on one line; the CSV has two lines of the same close record. */
static void price_change_mid_month_bills_each_second_at_the_price_in_force(void **state)
{
    world *w = *state;
    const int64_t change = T0 + 15 * 86400;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 1}", T0);
    tenant(w, "lab", "{}", T0);
    uint64_t id = submit(w, "{\"tenant\": \"lab\", \"user\": \"dan\"}", change - HOUR);
    exit_ok(w, id, "h0", change + HOUR);
    const char *prices = "{\"currency\": \"USD\", \"versions\": [{\"effective\": 1793491200, \"gpu_types\":"
                         " {\"H100\": \"2.50\"}}, {\"effective\": 1794787200, \"gpu_types\": {\"H100\": \"3.00\"}}]}";
    json_t *bill = bill_of(w, prices, TO, NULL);
    assert_lines(bill, "lab", 1);
    assert_line(bill, "lab", "burst", "H100", "any", 7200000, "2.000000", "5.500000");
    json_decref(bill);
    char *csv = NULL;
    json_decref(bill_from_records(w, prices, TO, NULL, &csv));
    assert_non_null(strstr(csv, ",2026-11-15T23:00:00Z,2026-11-16T00:00:00Z,1.000000,3600000,2.500000,1.000000,"
                                "2.500000\n"));
    assert_non_null(strstr(csv, ",2026-11-16T00:00:00Z,2026-11-16T01:00:00Z,1.000000,3600000,3.000000,1.000000,"
                                "3.000000\n"));
    assert_non_null(strstr(csv, ",H100,whole,burstable,any,1.000000,2026-11-15T23:00:00Z,")); /* gpus, ISO start */
    free(csv);
}

/* Three time-slice replicas share an L40S: serve's replica holds 333
 * milli-GPUs from T0 + 50 to T0 + 950: 299,700 mgs = 0.08325 h x 0.90 =
 * 0.074925; in the fleet it is timeslice. */
static void timeslice_replica_bills_its_third_of_the_gpu(void **state)
{
    world *w = *state;
    pool(w, "{\"name\": \"default\", \"timeslice_replicas\": 3}", T0);
    tenant(w, "serve", "{}", T0);
    node(w, "{\"name\": \"t0\", \"gpu_type\": \"L40S\", \"gpu_count\": 1, \"sharing\": \"timeslice\"}", T0);
    uint64_t id = submit(w, "{\"tenant\": \"serve\", \"user\": \"dan\", \"kind\": \"inference\","
                            " \"share\": {\"timeslice\": true}}", T0 + 50);
    exit_ok(w, id, "t0", T0 + 950);
    json_t *bill = bill_of(w, PRICES("{}"), TO, NULL);
    assert_line(bill, "serve", "burst", "L40S", "any", 299700, "0.083250", "0.074925");
    const int64_t fleet[7] = {2592000000, 0, 0, 0, 299700, 0, 2592000000 - 299700};
    assert_fleet(bill, "L40S", fleet);
    json_decref(bill);
}

/* The worked example of bill.c and docs/metering.md: 4 H100; research
 * {guarantee 2}, research/nlp {guarantee 1} all month; nlp runs a
 * guaranteed nvlink job on 1 H100 for 10 h, lab a burstable nvlink job on
 * 1 H100 for 2 h (lab borrows research's idle floor):
 *     research/nlp  floor 1 x 720 h = 1800.000000; guaranteed 10 h x 2.50 x 0.10 = 2.500000
 *     research      own floor (2 - 1) x 720 h = 1800.000000; subtotal 3602.500000
 *     lab           burst 2 h x 2.50 x 1.10 = 5.500000
 * Fleet: 2880 GPU-h physical, 12 whole; inside guarantees research held
 * 2 x 720 and used 10: 1430; unowned 2880 - 12 - 1430 = 1438. */
static void nested_guarantee_bills_each_tenant_its_own_floor(void **state)
{
    world *w = *state;
    node(w, "{\"name\": \"h0\", \"gpu_type\": \"H100\", \"gpu_count\": 4}", T0);
    tenant(w, "research", "{\"guarantee\": {\"gpu\": {\"H100\": 2}}}", T0);
    tenant(w, "research/nlp", "{\"guarantee\": {\"gpu\": {\"H100\": 1}}}", T0);
    tenant(w, "lab", "{}", T0);
    uint64_t nlp = submit(w, "{\"tenant\": \"research/nlp\", \"user\": \"ann\", \"topology\": \"nvlink\"}", T0);
    uint64_t lab = submit(w, "{\"tenant\": \"lab\", \"user\": \"bo\", \"topology\": \"nvlink\"}", T0);
    assert_int_equal(job_state(w, nlp), GP_JOB_RUNNING);
    assert_int_equal(job_state(w, lab), GP_JOB_RUNNING);
    exit_ok(w, lab, "h0", T0 + 2 * HOUR);
    exit_ok(w, nlp, "h0", T0 + 10 * HOUR);
    json_t *bill = bill_of(w, PRICES("{}"), TO, NULL);
    const int64_t gpu_month = INT64_C(1000) * 720 * HOUR;
    assert_line(bill, "research/nlp", "floor", "H100", "any", gpu_month, "720.000000", "1800.000000");
    assert_line(bill, "research/nlp", "guaranteed", "H100", "nvlink", 36000000, "10.000000", "2.500000");
    assert_money(bill, "research/nlp", "1802.500000", "1802.500000", "0.000000");
    assert_lines(bill, "research", 1);
    assert_line(bill, "research", "floor", "H100", "any", gpu_month, "720.000000", "1800.000000");
    assert_money(bill, "research", "1800.000000", "3602.500000", "0.000000");
    assert_line(bill, "lab", "burst", "H100", "nvlink", 7200000, "2.000000", "5.500000");
    const int64_t h = INT64_C(1000) * HOUR;
    const int64_t fleet[7] = {4 * gpu_month, 12 * h, 0, 0, 0, 1430 * h, 1438 * h};
    assert_fleet(bill, "H100", fleet);
    json_decref(bill);
    json_t *scoped = bill_of(w, PRICES("{}"), TO, "research/nlp"); /* a subtree: no ancestors, no others */
    assert_int_equal(json_array_size(json_object_get(scoped, "tenants")), 1);
    tenant_of(scoped, "research/nlp");
    json_decref(scoped);
}

/* Records fed by hand (as the offline bill reads a file), H100 at
 * "0.000100" per GPU-hour: org/a and org/b each hold 1 GPU for 18 s
 * (0.005 h x 0.0001 = 0.0000005: half, rounded to even -> 0.000000); the
 * org's subtotal is the exact 0.000001, not the sum of the rounded lines;
 * lab/c holds one for 54 s (0.0000015 -> 0.000002: the 1 is odd). */
static void amounts_round_half_even_once_at_the_sixth_decimal(void **state)
{
    (void)state;
    gp_price_table table;
    gp_bill *b = bill_new(&table, "{\"versions\": [{\"effective\": 0, \"gpu_types\": {\"H100\": \"0.000100\"}}]}",
                          TO, NULL);
    gp_error err;
    gp_error_clear(&err);
    static const char *const tenants[] = {"org/a", "org/b", "lab/c"};
    static const int64_t seconds[] = {18, 18, 54};
    for (int i = 0; i < 3; i++) {
        gp_bill_record r = {.seq = i + 1, .kind = "close", .interval = i + 1, .job = i + 1, .tenant = tenants[i],
                            .gpu_type = "H100", .cls = "burstable", .topology = "any", .milli_gpus = 1000,
                            .start = T0, .end = T0 + seconds[i]};
        check(gp_bill_add(b, &r, &err), &err, "add");
    }
    json_t *bill = gp_bill_json(b, &err);
    assert_line(bill, "org/a", "burst", "H100", "any", 18000, "0.005000", "0.000000");
    assert_line(bill, "org/b", "burst", "H100", "any", 18000, "0.005000", "0.000000");
    assert_line(bill, "lab/c", "burst", "H100", "any", 54000, "0.015000", "0.000002");
    assert_money(bill, "org", "0.000000", "0.000001", "0.000000"); /* 0.0000005 + 0.0000005 */
    json_decref(bill);
    gp_bill_free(b);
    gp_price_table_free(&table);
    char buf[48];
    assert_string_equal(gp_money_format(30000005, 10, buf), "3.000000");  /* 3.0000005 */
    assert_string_equal(gp_money_format(30000015, 10, buf), "3.000002");  /* 3.0000015 */
    assert_string_equal(gp_money_format(30000016, 10, buf), "3.000002");  /* 3.0000016 */
    assert_string_equal(gp_money_format(-30000015, 10, buf), "-3.000002");
}

/* Prices are exact decimals: more than 6 decimals, a negative price, a
 * number instead of a string and an unknown topology are refused naming
 * the field; an unknown GPU model is allowed (future hardware). */
static void price_versions_refuse_what_is_not_an_exact_price_naming_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"effective\": 0, \"gpu_types\": {\"H100\": \"2.5000001\"}}", "gpu_types.H100"},
        {"{\"effective\": 0, \"gpu_types\": {\"H100\": \"-1\"}}", "gpu_types.H100"},
        {"{\"effective\": 0, \"gpu_types\": {\"H100\": 2.5}}", "gpu_types.H100"},
        {"{\"effective\": 0, \"gpu_types\": {}, \"premium\": {\"zone\": \"1.5\"}}", "premium.zone"},
        {"{\"effective\": \"2026-11-31T00:00:00Z\", \"gpu_types\": {}}", "effective"},
        {"{\"gpu_types\": {}}", "effective"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_price_version v;
        gp_error err;
        json_t *body = parse(bad[i].body);
        assert_int_equal(gp_price_version_parse(body, &v, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, bad[i].field);
        json_decref(body);
    }
    gp_price_version v;
    gp_error err;
    json_t *body = parse("{\"effective\": \"2026-11-01T00:00:00Z\", \"gpu_types\": {\"B300\": \"12.345678\"},"
                         " \"premium\": {\"block\": \"1.25\"}}");
    check(gp_price_version_parse(body, &v, &err), &err, "version");
    assert_int_equal(v.effective, T0);
    assert_int_equal(gp_price_of(&v, "B300"), 12345678);
    assert_int_equal(gp_price_premium(&v, "block"), 1250000);
    assert_int_equal(gp_price_premium(&v, "nvlink"), 1000000);
    gp_price_version_free(&v);
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(mig_slice_for_90_minutes_bills_142_milli_gpus_as_burst, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(burst_job_preempted_mid_hour_pays_its_half_hour_and_the_owner_its_floor,
                                        world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(dedicated_tenant_pays_the_gpus_its_exclusivity_keeps_idle, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(guarantee_never_used_is_billed_as_floor_in_chargeback, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(price_change_mid_month_bills_each_second_at_the_price_in_force, world_setup,
                                        world_teardown),
        cmocka_unit_test_setup_teardown(timeslice_replica_bills_its_third_of_the_gpu, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(nested_guarantee_bills_each_tenant_its_own_floor, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(tenant_removed_before_the_period_is_not_listed, world_setup, world_teardown),
        cmocka_unit_test_setup_teardown(booking_beyond_the_guarantee_bills_its_newest_window_as_its_own_line,
                                        world_setup, world_teardown),
        cmocka_unit_test(amounts_round_half_even_once_at_the_sixth_decimal),
        cmocka_unit_test(price_versions_refuse_what_is_not_an_exact_price_naming_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
