/* test_event_codec.c - the event log's codec (src/eventlog/event.c).
 *
 * Semantics under test (event.h, docs/event-log.md):
 *   - every kind round-trips (the node agents' replica_exit, checkpointed
 *     and gpu_health included): decode(encode(event)) gives back the very
 *     values the engine was given (specs compared field by field, a
 *     tenant's weight to the last bit), so the live run and a replay feed
 *     the engine the same values;
 *   - version-1 payloads, as gpupoold wrote them before the codec existed
 *     (copied from tests/fixtures/store_v1.sql), decode;
 *   - a payload version this build does not know, an unknown kind, text
 *     that is not JSON, unknown, missing or mistyped fields are errors
 *     naming the field; nothing crashes and nothing is left to free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eventlog/event.h"

/* encode, then decode with this build's version */
static void round_trip(const gp_event *in, gp_event *out)
{
    char *text = gp_event_encode(in);
    assert_non_null(text);
    gp_error err = {0};
    assert_int_equal(gp_event_decode(gp_event_kind_name(in->kind), GP_EVENT_VERSION, text, in->time, out, &err), GP_OK);
    assert_int_equal(out->kind, in->kind);
    assert_int_equal(out->time, in->time);
    free(text);
}

static void assert_same_string(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* ---- round trips ---- */

static void job_request(gp_job_request *r, gp_isolation iso)
{
    memset(r, 0, sizeof *r);
    gp_job_spec *s = &r->spec;
    s->id = 42;
    s->name = "train";
    s->tenant = "research/nlp";
    s->user = "alice";
    s->kind = GP_KIND_INFERENCE;
    s->replicas = iso == GP_ISO_EXCLUSIVE ? 2 : 3;
    s->gpus = iso == GP_ISO_EXCLUSIVE ? 8 : 1;
    s->n_gpu_types = 2;
    s->gpu_types[0] = "H100";
    s->gpu_types[1] = "A100";
    s->cpu_millis = 16000;
    s->mem_mib = 65536;
    s->topology = iso == GP_ISO_EXCLUSIVE ? GP_TOPO_BLOCK : GP_TOPO_ANY;
    s->isolation = iso;
    if (iso == GP_ISO_MIG)
        strcpy(s->share.mig_profile, "1g.10gb");
    if (iso == GP_ISO_MPS)
        s->share.mps_milli = 250;
    s->priority = -7;
    s->checkpoint_grace_s = 45;
    s->expected_runtime_s = 3600;
    s->time_limit_s = 7200;
    static const gp_restart_policy POLICIES[] = {GP_RESTART_DEFAULT, GP_RESTART_ON_FAILURE, GP_RESTART_NEVER,
                                                 GP_RESTART_ON_FAILURE};
    s->restart_policy = POLICIES[iso];
    s->max_restarts = iso == GP_ISO_MIG ? 5 : 0;
    r->command = json_pack("[ss]", "python3", "train.py");
    r->env = json_pack("{ss}", "SEED", "1");
}

static void assert_same_job(const gp_job_request *a, const gp_job_request *b)
{
    const gp_job_spec *x = &a->spec, *y = &b->spec;
    assert_int_equal(x->id, y->id);
    assert_same_string(x->name, y->name);
    assert_same_string(x->tenant, y->tenant);
    assert_same_string(x->user, y->user);
    assert_int_equal(x->kind, y->kind);
    assert_int_equal(x->replicas, y->replicas);
    assert_int_equal(x->gpus, y->gpus);
    assert_int_equal(x->n_gpu_types, y->n_gpu_types);
    for (int i = 0; i < x->n_gpu_types; i++)
        assert_string_equal(x->gpu_types[i], y->gpu_types[i]);
    assert_int_equal(x->cpu_millis, y->cpu_millis);
    assert_int_equal(x->mem_mib, y->mem_mib);
    assert_int_equal(x->topology, y->topology);
    assert_int_equal(x->isolation, y->isolation);
    assert_string_equal(x->share.mig_profile, y->share.mig_profile);
    assert_int_equal(x->share.mps_milli, y->share.mps_milli);
    assert_int_equal(x->share.gpu_mem_mib, y->share.gpu_mem_mib);
    assert_int_equal(x->priority, y->priority);
    assert_int_equal(x->checkpoint_grace_s, y->checkpoint_grace_s);
    assert_int_equal(x->expected_runtime_s, y->expected_runtime_s);
    assert_int_equal(x->time_limit_s, y->time_limit_s);
    assert_int_equal(x->restart_policy, y->restart_policy);
    assert_int_equal(x->max_restarts, y->max_restarts);
    assert_true(json_equal(a->command, b->command));
    assert_true(json_equal(a->env, b->env));
}

static void a_submit_round_trips_for_every_isolation(void **state)
{
    (void)state;
    gp_isolation isos[] = {GP_ISO_EXCLUSIVE, GP_ISO_MIG, GP_ISO_MPS, GP_ISO_TIMESLICE};
    for (int i = 0; i < 4; i++) {
        gp_job_request req;
        job_request(&req, isos[i]);
        gp_event in = {.kind = GP_EV_SUBMIT, .time = 100, .job = &req}, out;
        round_trip(&in, &out);
        assert_same_job(&req, out.job);
        gp_event_free(&out);
        gp_job_request_free(&req);
    }
}

/* A job that says nothing of restarts encodes as before the fields
 * existed; bad values are refused naming the field. */
static void restart_fields_are_left_out_by_default_and_checked(void **state)
{
    (void)state;
    gp_job_request req;
    job_request(&req, GP_ISO_EXCLUSIVE);
    json_t *o = gp_job_request_to_json(&req);
    assert_null(json_object_get(o, "restart_policy"));
    assert_null(json_object_get(o, "max_restarts"));
    json_object_set_new(o, "restart_policy", json_string("on-failure"));
    json_object_set_new(o, "max_restarts", json_integer(4));
    gp_job_request back;
    gp_error err = {0};
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_OK);
    assert_int_equal(back.spec.restart_policy, GP_RESTART_ON_FAILURE);
    assert_int_equal(back.spec.max_restarts, 4);
    gp_job_request_free(&back);
    json_object_set_new(o, "restart_policy", json_string("always"));
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "restart_policy");
    gp_job_request_free(&back);
    json_object_set_new(o, "restart_policy", json_string("never"));
    json_object_set_new(o, "max_restarts", json_integer(0));
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "max_restarts");
    gp_job_request_free(&back);
    json_decref(o);
    gp_job_request_free(&req);
}

/* A job of no array encodes as before arrays; a member's array and
 * index round-trip, and only the log (allow_id) may set them. */
static void array_membership_is_left_out_by_default_and_round_trips(void **state)
{
    (void)state;
    gp_job_request req;
    job_request(&req, GP_ISO_EXCLUSIVE);
    json_t *o = gp_job_request_to_json(&req);
    assert_null(json_object_get(o, "array_id"));
    assert_null(json_object_get(o, "array_index"));
    json_decref(o);
    req.array_id = 13;
    req.array_index = 4;
    gp_event in = {.kind = GP_EV_SUBMIT, .time = 100, .job = &req}, out;
    round_trip(&in, &out);
    assert_int_equal(out.job->array_id, 13);
    assert_int_equal(out.job->array_index, 4);
    gp_event_free(&out);
    o = gp_job_request_to_json(&req);
    gp_job_request back;
    gp_error err = {0};
    assert_int_equal(gp_job_request_parse(o, false, &back, &err), GP_ERR_INVALID); /* a caller's body */
    gp_job_request_free(&back);
    json_object_set_new(o, "array_index", json_integer(10000));
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "array_index");
    gp_job_request_free(&back);
    json_decref(o);
    gp_job_request_free(&req);
}

static void the_stop_signal_is_left_out_by_default_and_round_trips(void **state)
{
    (void)state;
    gp_job_request req;
    job_request(&req, GP_ISO_EXCLUSIVE);
    json_t *o = gp_job_request_to_json(&req);
    assert_null(json_object_get(o, "stop_signal")); /* SIGTERM: older encodings stay as they were */
    json_object_set_new(o, "stop_signal", json_string("SIGUSR1"));
    gp_job_request back;
    gp_error err = {0};
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_OK);
    assert_int_equal(back.spec.stop_signal, GP_STOP_SIGUSR1);
    json_t *again = gp_job_request_to_json(&back);
    assert_string_equal(json_string_value(json_object_get(again, "stop_signal")), "SIGUSR1");
    json_decref(again);
    gp_job_request_free(&back);
    json_object_set_new(o, "stop_signal", json_string("SIGKILL")); /* no grace with a signal nobody can catch */
    assert_int_equal(gp_job_request_parse(o, true, &back, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "stop_signal");
    gp_job_request_free(&back);
    json_decref(o);
    gp_job_request_free(&req);
}

static void quota(gp_quota *q, int64_t h100_milli, int64_t cpu)
{
    q->set = true;
    q->n_gpu = 2;
    strcpy(q->gpu[0].type, "A100");
    q->gpu[0].milli = 1500;
    strcpy(q->gpu[1].type, "H100");
    q->gpu[1].milli = h100_milli;
    q->cpu_millis = cpu;
    q->mem_mib = GP_UNLIMITED;
}

static void assert_same_quota(const gp_quota *a, const gp_quota *b)
{
    assert_int_equal(a->set, b->set);
    assert_int_equal(a->n_gpu, b->n_gpu);
    for (int i = 0; i < a->n_gpu; i++) {
        assert_string_equal(a->gpu[i].type, b->gpu[i].type);
        assert_int_equal(a->gpu[i].milli, b->gpu[i].milli);
    }
    if (a->set) {
        assert_int_equal(a->cpu_millis, b->cpu_millis);
        assert_int_equal(a->mem_mib, b->mem_mib);
    }
}

static void a_tenant_set_round_trips_to_the_last_bit_of_its_weight(void **state)
{
    (void)state;
    gp_tenant_spec spec;
    memset(&spec, 0, sizeof spec);
    quota(&spec.guarantee, 16000, 64000);
    quota(&spec.limit, 24125, GP_UNLIMITED);
    spec.user_limit.cpu_millis = spec.user_limit.mem_mib = GP_UNLIMITED;
    spec.weight = 1.0 / 3.0; /* 0.333333333333 (12 digits) would decode to another double */
    spec.lend = 0;
    spec.trust = GP_TRUST_UNTRUSTED;
    spec.time_limit_s[GP_KIND_TRAINING] = 259200;
    spec.time_limit_s[GP_KIND_INTERACTIVE] = 28800;
    gp_event in = {.kind = GP_EV_TENANT_SET, .time = 7, .path = "research/nlp", .tenant = &spec}, out;
    round_trip(&in, &out);
    assert_string_equal(out.path, "research/nlp");
    assert_same_quota(&spec.guarantee, &out.tenant->guarantee);
    assert_same_quota(&spec.limit, &out.tenant->limit);
    assert_false(out.tenant->user_limit.set);
    assert_true(out.tenant->weight == spec.weight);
    assert_int_equal(out.tenant->lend, 0);
    assert_int_equal(out.tenant->trust, GP_TRUST_UNTRUSTED);
    for (int k = 0; k < 3; k++)
        assert_int_equal(out.tenant->time_limit_s[k], spec.time_limit_s[k]);
    gp_event_free(&out);
}

static void a_node_add_round_trips_with_uuids_and_per_gpu_sharing(void **state)
{
    (void)state;
    const char *uuids[] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    const gp_sharing modes[] = {GP_SHARING_MIG, GP_SHARING_MPS, GP_SHARING_EXCLUSIVE, GP_SHARING_TIMESLICE};
    gp_node_spec spec = {.name = "n0", .zone = "z1", .block = "blk-a", .gpu_type = "A100", .gpu_count = 4,
                         .nvlink_domains = 2, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 524288,
                         .gpu_uuids = uuids, .sharing = GP_SHARING_MIG, .gpu_sharing = modes, .pool = "shared"};
    gp_event in = {.kind = GP_EV_NODE_ADD, .time = 1, .node = &spec}, out;
    round_trip(&in, &out);
    const gp_node_spec *n = out.node;
    assert_string_equal(n->name, "n0");
    assert_string_equal(n->zone, "z1");
    assert_string_equal(n->block, "blk-a");
    assert_string_equal(n->gpu_type, "A100");
    assert_string_equal(n->pool, "shared");
    assert_int_equal(n->gpu_count, 4);
    assert_int_equal(n->nvlink_domains, 2);
    assert_int_equal(n->gpu_mem_mib, 81920);
    assert_int_equal(n->cpu_millis, 64000);
    assert_int_equal(n->mem_mib, 524288);
    assert_int_equal(n->sharing, GP_SHARING_MIG);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(n->gpu_uuids[i], uuids[i]);
        assert_int_equal(n->gpu_sharing[i], modes[i]);
    }
    gp_event_free(&out);
    spec.gpu_uuids = NULL; /* optional parts stay absent */
    spec.gpu_sharing = NULL;
    spec.pool = NULL;
    round_trip(&in, &out);
    assert_null(out.node->gpu_uuids);
    assert_null(out.node->gpu_sharing);
    /* the codec fills the default pool in: what the engine reads a NULL as */
    assert_string_equal(out.node->pool, "default");
    gp_event_free(&out);
}

static void a_pool_set_round_trips(void **state)
{
    (void)state;
    gp_pool_spec spec = {.score = GP_SCORE_FGD, .timeslice_replicas = 6, .seed = 123456789};
    gp_event in = {.kind = GP_EV_POOL_SET, .time = 3, .name = "default", .pool = &spec}, out;
    round_trip(&in, &out);
    assert_string_equal(out.name, "default");
    assert_int_equal(out.pool->score, GP_SCORE_FGD);
    assert_int_equal(out.pool->timeslice_replicas, 6);
    assert_int_equal(out.pool->seed, 123456789);
    gp_event_free(&out);
}

static void the_small_kinds_round_trip(void **state)
{
    (void)state;
    gp_event cases[] = {
        {.kind = GP_EV_CANCEL, .time = 5, .job_id = 9},
        {.kind = GP_EV_TENANT_REMOVE, .time = 6, .path = "product/ads"},
        {.kind = GP_EV_NODE_LOST, .time = 7, .name = "h100-a-0"},
        {.kind = GP_EV_NODE_DRAIN, .time = 8, .name = "h100-a-1", .drain = true},
        {.kind = GP_EV_NODE_DRAIN, .time = 9, .name = "h100-a-1", .drain = false},
        {.kind = GP_EV_TICK, .time = 10},
        {.kind = GP_EV_CLOCK_RESOLUTION, .time = 11, .seconds = 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gp_event out;
        round_trip(&cases[i], &out);
        assert_int_equal(out.job_id, cases[i].job_id);
        assert_same_string(out.path, cases[i].path);
        assert_same_string(out.name, cases[i].name);
        assert_int_equal(out.drain, cases[i].drain);
        assert_int_equal(out.seconds, cases[i].seconds);
        gp_event_free(&out);
    }
}

/* ---- the node agents' kinds ---- */

static void a_replica_exit_round_trips_with_every_reason(void **state)
{
    (void)state;
    for (int r = 0; r < GP_EXIT_REASONS; r++) {
        gp_replica_exit x = {.job_id = 7, .replica = 3, .bind_time = 1795517790, .exit_code = 137, .signal = 9,
                             .reason = (gp_exit_reason)r};
        if (r == GP_EXIT_REASON_GPU_MEMORY) {
            x.gpu_memory_mib = 9000;
            x.gpu_memory_share_mib = 8192;
        }
        strcpy(x.node, "h100-a-0");
        gp_event in = {.kind = GP_EV_REPLICA_EXIT, .time = 12, .exit = &x}, out;
        round_trip(&in, &out);
        assert_int_equal(out.exit->job_id, 7);
        assert_int_equal(out.exit->replica, 3);
        assert_int_equal(out.exit->bind_time, 1795517790);
        assert_string_equal(out.exit->node, "h100-a-0");
        assert_int_equal(out.exit->exit_code, 137);
        assert_int_equal(out.exit->signal, 9);
        assert_int_equal(out.exit->reason, r);
        assert_int_equal(out.exit->gpu_memory_mib, x.gpu_memory_mib);
        assert_int_equal(out.exit->gpu_memory_share_mib, x.gpu_memory_share_mib);
        gp_event_free(&out);
    }
}

static void checkpointed_and_gpu_health_round_trip(void **state)
{
    (void)state;
    gp_event cases[] = {
        {.kind = GP_EV_CHECKPOINTED, .time = 13, .job_id = 9},
        {.kind = GP_EV_GPU_HEALTH, .time = 14, .name = "h100-a-0", .gpu_index = 7, .healthy = false},
        {.kind = GP_EV_GPU_HEALTH, .time = 15, .name = "h100-a-0", .gpu_index = 0, .healthy = true},
        {.kind = GP_EV_GPU_TYPE_DECLARE, .time = 16, .name = "H200"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gp_event out;
        round_trip(&cases[i], &out);
        assert_int_equal(out.job_id, cases[i].job_id);
        assert_same_string(out.name, cases[i].name);
        assert_int_equal(out.gpu_index, cases[i].gpu_index);
        assert_int_equal(out.healthy, cases[i].healthy);
        gp_event_free(&out);
    }
}

static void booking_events_round_trip(void **state)
{
    (void)state;
    gp_booking_spec b = {.name = "pretrain", .tenant = "research/nlp", .made_by = "alice", .n_gpu_types = 1,
                         .gpu_types = {"H100"}, .replicas = 32, .gpus = 8, .topology = GP_TOPO_BLOCK,
                         .start = 1795517790, .end = 1795690590, .lend = 0, .no_show_s = 600,
                         .recurrence = GP_RECUR_WEEKDAYS, .until = 1796000000};
    gp_event in = {.kind = GP_EV_BOOKING_ADD, .time = 20, .booking = &b}, out;
    round_trip(&in, &out);
    assert_string_equal(out.booking->name, "pretrain");
    assert_string_equal(out.booking->tenant, "research/nlp");
    assert_string_equal(out.booking->gpu_types[0], "H100");
    assert_int_equal(out.booking->n_gpu_types, 1);
    assert_int_equal(out.booking->replicas, 32);
    assert_int_equal(out.booking->topology, GP_TOPO_BLOCK);
    assert_int_equal(out.booking->end, b.end);
    assert_int_equal(out.booking->lend, 0);
    assert_int_equal(out.booking->recurrence, GP_RECUR_WEEKDAYS);
    assert_int_equal(out.booking->until, b.until);
    gp_event_free(&out);
    gp_booking_change c = {.has_end = true, .end = 1795600000};
    in = (gp_event){.kind = GP_EV_BOOKING_CHANGE, .time = 21, .name = "pretrain", .booking_change = &c};
    round_trip(&in, &out);
    assert_true(out.booking_change->has_end && !out.booking_change->has_start && !out.booking_change->has_lend);
    assert_int_equal(out.booking_change->end, c.end);
    gp_event_free(&out);
    in = (gp_event){.kind = GP_EV_BOOKING_ALLOWANCE, .time = 22, .name = "research", .seconds = 2000};
    round_trip(&in, &out);
    assert_string_equal(out.name, "research");
    assert_int_equal(out.seconds, 2000);
    gp_event_free(&out);
    in = (gp_event){.kind = GP_EV_BOOKING_CANCEL, .time = 23, .name = "pretrain"};
    round_trip(&in, &out);
    assert_string_equal(out.name, "pretrain");
    gp_event_free(&out);
    gp_error err;
    assert_int_equal(gp_event_decode("booking_change", 1, "{\"name\":\"x\"}", 1, &out, &err), GP_ERR_INVALID);
    assert_int_equal(gp_event_decode("booking_cancel", 1, "{\"name\":\"x\",\"extra\":1}", 1, &out, &err),
                     GP_ERR_INVALID);
}

static void a_job_update_round_trips_only_what_it_changes(void **state)
{
    (void)state;
    gp_job_update hold = {.has_hold = true, .hold = true, .by = "alice", .has_priority = true, .priority = -7},
                  release = {.has_hold = true, .hold = false, .has_time_limit = true, .time_limit_s = 7200};
    const gp_job_update *cases[] = {&hold, &release};
    for (size_t i = 0; i < 2; i++) {
        gp_event in = {.kind = GP_EV_JOB_UPDATE, .time = 16, .job_id = 9, .update = cases[i]}, out;
        round_trip(&in, &out);
        assert_int_equal(out.job_id, 9);
        assert_int_equal(out.update->has_hold, cases[i]->has_hold);
        assert_int_equal(out.update->hold, cases[i]->hold);
        assert_string_equal(out.update->by, cases[i]->hold ? "alice" : "");
        assert_int_equal(out.update->has_priority, cases[i]->has_priority);
        assert_int_equal(out.update->priority, cases[i]->priority);
        assert_int_equal(out.update->has_time_limit, cases[i]->has_time_limit);
        assert_int_equal(out.update->time_limit_s, cases[i]->time_limit_s);
        gp_event_free(&out);
    }
    /* a release names nobody; a hold must; an update changes something */
    const char *bad[][2] = {{"{\"id\":9,\"hold\":false,\"by\":\"alice\"}", "by"},
                            {"{\"id\":9,\"hold\":true}", "by"},
                            {"{\"id\":9}", "payload"},
                            {"{\"id\":9,\"priority\":5000}", "priority"},
                            {"{\"id\":9,\"gpus\":2}", "payload.gpus"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_event out;
        gp_error err = {0};
        assert_int_equal(gp_event_decode("job_update", GP_EVENT_VERSION, bad[i][0], 1, &out, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, bad[i][1]);
    }
}

/* ---- version 1 as written before the codec ---- */

static void version_1_payloads_from_an_old_store_decode(void **state)
{
    (void)state;
    gp_error err = {0};
    gp_event ev;
    assert_int_equal(gp_event_decode("submit", 1,
                                     "{\"checkpoint_grace_s\":30,\"command\":[],\"cpu_millis\":0,\"env\":{},"
                                     "\"expected_runtime_s\":0,\"gpu_types\":[\"A100\"],\"gpus\":1,\"id\":8,"
                                     "\"isolation\":\"mig\",\"kind\":\"training\",\"mem_mib\":0,\"name\":\"mig\","
                                     "\"priority\":0,\"replicas\":1,\"share\":{\"mig\":\"1g.10gb\"},"
                                     "\"tenant\":\"research/nlp\",\"time_limit_s\":0,\"topology\":\"any\"}",
                                     1795517785, &ev, &err),
                     GP_OK);
    assert_int_equal(ev.job->spec.id, 8);
    assert_int_equal(ev.job->spec.isolation, GP_ISO_MIG);
    assert_string_equal(ev.job->spec.share.mig_profile, "1g.10gb");
    gp_event_free(&ev);
    assert_int_equal(gp_event_decode("tenant_set", 1,
                                     "{\"path\":\"research/nlp\",\"spec\":{\"guarantee\":{\"gpu\":{\"H100\":16}},"
                                     "\"time_limit\":{\"interactive\":28800,\"training\":259200}}}",
                                     1795517783, &ev, &err),
                     GP_OK);
    assert_int_equal(ev.tenant->guarantee.gpu[0].milli, 16000);
    assert_int_equal(ev.tenant->time_limit_s[GP_KIND_TRAINING], 259200);
    gp_event_free(&ev);
    assert_int_equal(gp_event_decode("node_add", 1,
                                     "{\"block\":\"blk-a\",\"cpu_millis\":192000,\"gpu_count\":8,\"gpu_mem_mib\":81920,"
                                     "\"gpu_type\":\"H100\",\"mem_mib\":2097152,\"name\":\"h100-a-0\","
                                     "\"nvlink_domains\":1,\"pool\":\"default\",\"sharing\":\"exclusive\","
                                     "\"zone\":\"us-east-1a\"}",
                                     1795517783, &ev, &err),
                     GP_OK);
    assert_string_equal(ev.node->name, "h100-a-0");
    gp_event_free(&ev);
    assert_int_equal(gp_event_decode("pool_set", 1, "{\"name\":\"default\",\"score\":\"default\",\"seed\":0,"
                                     "\"timeslice_replicas\":0}", 1, &ev, &err), GP_OK);
    gp_event_free(&ev);
    assert_int_equal(gp_event_decode("clock_resolution", 1, "{\"seconds\":1}", 1, &ev, &err), GP_OK);
    assert_int_equal(ev.seconds, 1);
    gp_event_free(&ev);
}

/* ---- bad payloads ---- */

static void assert_refused(const char *kind, int version, const char *payload, const char *field)
{
    gp_error err = {0};
    gp_event ev;
    assert_int_not_equal(gp_event_decode(kind, version, payload, 1, &ev, &err), GP_OK);
    assert_string_equal(err.field, field);
    assert_null(ev.storage);
}

static void bad_payloads_are_errors_naming_the_field(void **state)
{
    (void)state;
    assert_refused("submit", 2, "{}", "version");
    assert_refused("submit", 0, "{}", "version");
    assert_refused("reboot", 1, "{}", "kind");
    assert_refused(NULL, 1, "{}", "kind");
    assert_refused("cancel", 1, "{\"id\":", "payload");
    assert_refused("cancel", 1, NULL, "payload");
    assert_refused("cancel", 1, "[7]", "payload");
    assert_refused("cancel", 1, "{\"id\":\"seven\"}", "id");
    assert_refused("cancel", 1, "{\"id\":0}", "id");
    assert_refused("cancel", 1, "{}", "id");
    assert_refused("cancel", 1, "{\"id\":7,\"why\":\"x\"}", "payload.why");
    assert_refused("tick", 1, "{\"now\":1}", "payload.now");
    assert_refused("tick", 1, "7", "payload");
    assert_refused("node_drain", 1, "{\"name\":\"n\",\"drain\":\"yes\"}", "drain");
    assert_refused("node_lost", 1, "{\"name\":\"\"}", "name");
    assert_refused("tenant_set", 1, "{\"path\":\"a\"}", "spec");
    assert_refused("tenant_set", 1, "{\"path\":\"a\",\"spec\":{\"weight\":-1}}", "weight");
    assert_refused("tenant_remove", 1, "{\"path\":5}", "path");
    assert_refused("clock_resolution", 1, "{\"seconds\":-1}", "seconds");
    assert_refused("submit", 1, "{\"tenant\":\"a\"}", "id");
    assert_refused("submit", 1, "{\"id\":3,\"tenant\":\"a\",\"gpus\":\"all\",\"command\":[\"x\"]}", "gpus");
    assert_refused("node_add", 1, "{\"name\":\"n\",\"gpu_count\":99}", "gpu_count");
    assert_refused("pool_set", 1, "{\"score\":\"default\"}", "name");
    assert_refused("checkpointed", 1, "{\"id\":-1}", "id");
    assert_refused("gpu_health", 1, "{\"name\":\"n\",\"gpu\":16,\"healthy\":true}", "gpu");
    assert_refused("gpu_health", 1, "{\"name\":\"n\",\"gpu\":1}", "healthy");
    assert_refused("replica_exit", 1,
                   "{\"id\":7,\"replica\":0,\"bind_time\":1,\"node\":\"n\",\"exit_code\":0,\"signal\":0,"
                   "\"reason\":\"crashed\"}",
                   "reason");
    assert_refused("replica_exit", 1,
                   "{\"id\":7,\"replica\":0,\"bind_time\":1,\"node\":\"n\",\"exit_code\":256,\"signal\":0,"
                   "\"reason\":\"exited\"}",
                   "exit_code");
    assert_refused("replica_exit", 1, "{\"id\":7}", "replica");
    assert_refused("replica_exit", 1,
                   "{\"id\":7,\"replica\":0,\"bind_time\":1,\"node\":\"n\",\"exit_code\":0,\"signal\":9,"
                   "\"reason\":\"gpu_memory\",\"gpu_memory_mib\":9000}",
                   "gpu_memory_share_mib");
    assert_refused("replica_exit", 1,
                   "{\"id\":7,\"replica\":0,\"bind_time\":1,\"node\":\"n\",\"exit_code\":0,\"signal\":0,"
                   "\"reason\":\"exited\",\"gpu_memory_mib\":9000}",
                   "gpu_memory_mib");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_submit_round_trips_for_every_isolation),
        cmocka_unit_test(restart_fields_are_left_out_by_default_and_checked),
        cmocka_unit_test(the_stop_signal_is_left_out_by_default_and_round_trips),
        cmocka_unit_test(array_membership_is_left_out_by_default_and_round_trips),
        cmocka_unit_test(a_tenant_set_round_trips_to_the_last_bit_of_its_weight),
        cmocka_unit_test(a_node_add_round_trips_with_uuids_and_per_gpu_sharing),
        cmocka_unit_test(a_pool_set_round_trips),
        cmocka_unit_test(the_small_kinds_round_trip),
        cmocka_unit_test(a_replica_exit_round_trips_with_every_reason),
        cmocka_unit_test(checkpointed_and_gpu_health_round_trip),
        cmocka_unit_test(a_job_update_round_trips_only_what_it_changes),
        cmocka_unit_test(booking_events_round_trip),
        cmocka_unit_test(version_1_payloads_from_an_old_store_decode),
        cmocka_unit_test(bad_payloads_are_errors_naming_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
