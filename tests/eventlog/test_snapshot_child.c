/* test_snapshot_child.c - a snapshot taken by a forked child
 * (gp_replayer_snapshot_fork, gp_snapshot_child_collect in
 * src/eventlog/snapshot.c), as gpupoold takes them without stalling its
 * engine thread.
 *
 * Semantics under test (snapshot.h):
 *   - the child's snapshot is the replayer as it was at the fork, whatever
 *     the parent did after it: restored, it holds the jobs bound then, the
 *     next job id and the caller's object, not the job submitted later;
 *   - restored, it goes on deciding as the parent would have: the same
 *     tick gives the same digest in both;
 *   - a child that cannot take one (decisions pending) fails, and collect
 *     says so (GP_ERR_CONFLICT, "decisions") with nothing returned.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eventlog/snapshot.h"

static void apply_settled(gp_replayer *r, const gp_event *ev)
{
    gp_error err = {0};
    bool logged;
    assert_int_equal(gp_replayer_apply(r, ev, GP_APPLY_LIVE, &logged, &err), GP_OK);
    gp_replayer_settle(r);
}

/* one 8 x H100 node, tenant "t" without limits */
static void setup_fleet(gp_replayer *r)
{
    gp_error err = {0};
    assert_int_equal(gp_replayer_init(r, NULL, &err), GP_OK);
    gp_node_spec node = {.name = "n0", .zone = "z", .block = "b0", .gpu_type = "H100", .gpu_count = 8,
                         .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 1 << 20};
    gp_tenant_spec t = {.lend = -1};
    t.limit.cpu_millis = t.limit.mem_mib = t.user_limit.cpu_millis = t.user_limit.mem_mib = GP_UNLIMITED;
    gp_event evs[] = {{.kind = GP_EV_NODE_ADD, .time = 0, .node = &node},
                      {.kind = GP_EV_TENANT_SET, .time = 0, .path = "t", .tenant = &t}};
    for (size_t i = 0; i < 2; i++)
        apply_settled(r, &evs[i]);
}

static gp_event submit_event(gp_job_request *req, uint64_t id, int gpus, int64_t now)
{
    memset(req, 0, sizeof *req);
    req->spec = (gp_job_spec){.id = id, .tenant = "t", .replicas = 1, .gpus = gpus};
    return (gp_event){.kind = GP_EV_SUBMIT, .time = now, .job = req};
}

static void submit_and_tick(gp_replayer *r, uint64_t id, int gpus, int64_t now)
{
    gp_job_request req;
    gp_event sub = submit_event(&req, id, gpus, now), tick = {.kind = GP_EV_TICK, .time = now};
    apply_settled(r, &sub);
    apply_settled(r, &tick);
}

/* Collects c's parts, seals them and restores them into a fresh replayer. */
static void restore_child(gp_snapshot_child *c, gp_replayer *into, int64_t *seq, json_t **daemon)
{
    gp_snapshot_parts p;
    unsigned char *sealed;
    size_t len;
    gp_error err = {0};
    assert_int_equal(gp_snapshot_child_collect(c, &p, &err), GP_OK);
    assert_int_equal(gp_snapshot_seal(&p, &sealed, &len, &err), GP_OK);
    assert_int_equal(gp_replayer_init(into, NULL, &err), GP_OK);
    assert_int_equal(gp_replayer_snapshot_restore(into, sealed, len, NULL, seq, daemon, &err), GP_OK);
    free(sealed);
    gp_snapshot_parts_free(&p);
}

static gp_job_state state_of(const gp_replayer *r, uint64_t id)
{
    gp_job_info info;
    gp_error err = {0};
    if (gp_engine_job_info(r->engine, id, &info, &err) != GP_OK)
        return (gp_job_state)-1;
    return info.state;
}

static void the_childs_snapshot_is_the_replayer_at_the_fork(void **state)
{
    (void)state;
    gp_replayer r, back;
    setup_fleet(&r);
    submit_and_tick(&r, 1, 4, 10);
    json_t *daemon = json_pack("{s:i}", "agents", 3);
    gp_snapshot_child c;
    gp_error err = {0};
    assert_int_equal(gp_replayer_snapshot_fork(&r, 7, daemon, &c, &err), GP_OK);
    submit_and_tick(&r, 2, 4, 20); /* after the fork: not in the snapshot */
    assert_int_equal(state_of(&r, 2), GP_JOB_RUNNING);
    int64_t seq;
    json_t *saved;
    restore_child(&c, &back, &seq, &saved);
    assert_int_equal(seq, 7);
    assert_true(json_equal(saved, daemon));
    assert_int_equal(state_of(&back, 1), GP_JOB_RUNNING);
    assert_int_equal(state_of(&back, 2), (gp_job_state)-1);
    assert_int_equal(back.next_job_id, 2);
    json_decref(saved);
    json_decref(daemon);
    gp_replayer_free(&back);
    gp_replayer_free(&r);
}

static void the_restored_child_snapshot_decides_as_the_parent(void **state)
{
    (void)state;
    gp_replayer r, back;
    setup_fleet(&r);
    submit_and_tick(&r, 1, 4, 10);
    gp_snapshot_child c;
    gp_error err = {0};
    assert_int_equal(gp_replayer_snapshot_fork(&r, 3, NULL, &c, &err), GP_OK);
    int64_t seq;
    json_t *saved;
    restore_child(&c, &back, &seq, &saved);
    assert_null(saved);
    char want[65], got[65];
    int64_t n_want, n_got;
    gp_replayer *both[] = {&r, &back};
    for (int i = 0; i < 2; i++) {
        gp_job_request req;
        gp_event sub = submit_event(&req, 2, 4, 20), tick = {.kind = GP_EV_TICK, .time = 20};
        bool logged;
        assert_int_equal(gp_replayer_apply(both[i], &sub, GP_APPLY_LIVE, &logged, &err), GP_OK);
        assert_int_equal(gp_replayer_apply(both[i], &tick, GP_APPLY_LIVE, &logged, &err), GP_OK);
        assert_int_equal(gp_replayer_digest(both[i], i ? &n_got : &n_want, i ? got : want, &err), GP_OK);
    }
    assert_true(n_want > 0);
    assert_int_equal(n_got, n_want);
    assert_string_equal(got, want);
    gp_replayer_free(&back);
    gp_replayer_free(&r);
}

static void a_child_that_cannot_take_one_fails_and_collect_says_so(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    gp_job_request req;
    gp_event sub = submit_event(&req, 1, 4, 10), tick = {.kind = GP_EV_TICK, .time = 10};
    bool logged;
    gp_error err = {0};
    apply_settled(&r, &sub);
    assert_int_equal(gp_replayer_apply(&r, &tick, GP_APPLY_LIVE, &logged, &err), GP_OK); /* the bind, not settled */
    gp_snapshot_child c;
    assert_int_equal(gp_replayer_snapshot_fork(&r, 2, NULL, &c, &err), GP_OK);
    gp_snapshot_parts p;
    assert_int_equal(gp_snapshot_child_collect(&c, &p, &err), GP_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "decisions"));
    assert_null(p.engine);
    assert_null(p.extras);
    gp_replayer_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_childs_snapshot_is_the_replayer_at_the_fork),
        cmocka_unit_test(the_restored_child_snapshot_decides_as_the_parent),
        cmocka_unit_test(a_child_that_cannot_take_one_fails_and_collect_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
