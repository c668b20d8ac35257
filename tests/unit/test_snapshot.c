/* test_snapshot.c - engine snapshots: a restored engine holds the same
 * jobs and placements and goes on deciding; a buffer of another version or
 * layout, a truncated or over-long one, one taken under other settings and
 * one taken with decisions pending are refused with a clear error.
 * (tests/property proves the exact decisions after a restore.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "support/fleet_builder.h"

/* Two 8-GPU nodes, one tenant, job 1 (8 GPUs) running, job 2 (16) pending. */
static tb_world *busy_world(void)
{
    tb_world *w = tb_new();
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "acme", "H100", 8, -1);
    tb_submit(w, 1, "acme", 1, 8, 10);
    tb_tick(w, 10, GP_DEC_BIND);
    tb_submit(w, 2, "acme", 2, 8, 20);
    tb_tick(w, 20, GP_DEC_BIND);
    gp_engine_decisions_clear(w->e);
    return w;
}

static void snapshot_of(tb_world *w, unsigned char **buf, size_t *len)
{
    gp_error err;
    assert_int_equal(gp_engine_snapshot_write(w->e, buf, len, &err), GP_OK);
    assert_true(*len > 24);
}

static gp_err read_back(const unsigned char *buf, size_t len, gp_engine **out, gp_error *err)
{
    gp_engine_config cfg = gp_engine_config_default();
    return gp_engine_snapshot_read(buf, len, &cfg, out, err);
}

static void test_restored_engine_holds_the_same_jobs_and_goes_on(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    gp_engine *r;
    gp_error err;
    assert_int_equal(read_back(buf, len, &r, &err), GP_OK);
    free(buf);
    assert_int_equal(gp_engine_check_invariants(r, &err), GP_OK);
    gp_job_info a, b;
    assert_int_equal(gp_engine_job_info(r, 1, &b, &err), GP_OK);
    a = tb_info(w, 1);
    assert_int_equal(b.state, GP_JOB_RUNNING);
    assert_int_equal(b.bind_time, a.bind_time);
    uint32_t ga[8], gb[8];
    assert_int_equal(gp_engine_job_gpus(r, 1, gb, 8), 8);
    assert_int_equal(gp_engine_job_gpus(w->e, 1, ga, 8), 8);
    assert_memory_equal(ga, gb, sizeof ga);
    assert_int_equal(gp_engine_job_info(r, 2, &b, &err), GP_OK);
    assert_int_equal(b.state, GP_JOB_PENDING);
    assert_int_equal(gp_engine_now(r), gp_engine_now(w->e));
    assert_int_equal(gp_engine_changes(r), gp_engine_changes(w->e));
    /* it goes on: job 1 ends, job 2 binds on the whole fleet, in both */
    assert_int_equal(gp_engine_job_finished(r, 1, GP_EXIT_SUCCEEDED, 30, &err), GP_OK);
    assert_int_equal(gp_engine_tick(r, 30, &err), GP_OK);
    assert_int_equal(gp_engine_job_info(r, 2, &b, &err), GP_OK);
    assert_int_equal(b.state, GP_JOB_RUNNING);
    /* the id map was rebuilt: a taken id is refused, a new one taken */
    gp_job_spec dup = tb_job(2, "acme", 0);
    assert_int_equal(gp_engine_job_submit(r, &dup, 30, &err), GP_ERR_EXISTS);
    gp_job_spec fresh = tb_job(3, "acme", 0);
    assert_int_equal(gp_engine_job_submit(r, &fresh, 30, &err), GP_OK);
    gp_engine_free(r);
    tb_free(w);
}

/* Job 3 fails and restarts four times: more history lines than the ring
 * keeps, so it has wrapped. */
static tb_world *restart_often(void)
{
    tb_world *w = tb_new();
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "acme", "H100", 8, -1);
    gp_job_spec s = tb_job(3, "acme", 0);
    s.replicas = 1;
    s.gpus = 8;
    s.restart_policy = GP_RESTART_ON_FAILURE;
    s.max_restarts = 10;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_OK);
    for (int64_t t = 100; t <= 4100; t += 1000) {
        tb_tick(w, t, GP_DEC_BIND);
        assert_int_equal(gp_engine_job_finished(w->e, 3, GP_EXIT_FAILED, t + 10, &err), GP_OK);
    }
    gp_engine_decisions_clear(w->e);
    return w;
}

static void expect_same_history(const gp_engine *a, const gp_engine *b, uint64_t id)
{
    gp_history_entry ha[8], hb[8];
    size_t n = gp_engine_job_history(a, id, ha, 8);
    assert_true(n > 0);
    assert_int_equal(gp_engine_job_history(b, id, hb, 8), n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(hb[i].time, ha[i].time);
        assert_int_equal(hb[i].from, ha[i].from);
        assert_int_equal(hb[i].to, ha[i].to);
        assert_string_equal(hb[i].reason, ha[i].reason);
    }
    char wa[256], wb[256];
    gp_engine_why(a, id, wa, sizeof wa);
    gp_engine_why(b, id, wb, sizeof wb);
    assert_string_equal(wb, wa);
}

static void test_restored_engine_keeps_each_jobs_history_lines(void **state)
{
    (void)state;
    tb_world *w = restart_often();
    gp_history_entry h[8];
    assert_int_equal(gp_engine_job_history(w->e, 3, h, 8), 6); /* the ring is full */
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    gp_engine *r;
    gp_error err;
    assert_int_equal(read_back(buf, len, &r, &err), GP_OK);
    free(buf);
    expect_same_history(w->e, r, 3);
    gp_engine_free(r);
    tb_free(w);
}

/* The history lines are packed: each job costs the snapshot less than
 * the six 192-byte reasons its ring holds (they were two thirds of it). */
static void test_a_jobs_history_costs_the_snapshot_only_its_lines(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t before, after;
    snapshot_of(w, &buf, &before);
    free(buf);
    for (uint64_t id = 10; id < 110; id++)
        tb_submit(w, id, "acme", 1, 8, 30);
    assert_int_equal(gp_engine_tick(w->e, 30, &(gp_error){0}), GP_OK);
    gp_engine_decisions_clear(w->e);
    snapshot_of(w, &buf, &after);
    free(buf);
    assert_true((after - before) / 100 < 6 * GP_REASON_MAX);
    tb_free(w);
}

static void test_snapshot_with_pending_decisions_is_refused(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    tb_submit(w, 3, "acme", 1, 1, 30); /* its "submitted" transition is pending */
    unsigned char *buf;
    size_t len;
    gp_error err;
    assert_int_equal(gp_engine_snapshot_write(w->e, &buf, &len, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "decisions");
    assert_null(buf);
    tb_free(w);
}

/* The buffer with 4 bytes at `at` replaced by v is refused naming field. */
static void expect_refused_with_word(size_t at, uint32_t v, const char *field)
{
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    memcpy(buf + at, &v, sizeof v);
    gp_engine *r = (gp_engine *)buf;
    gp_error err;
    assert_int_equal(read_back(buf, len, &r, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, field);
    assert_null(r);
    free(buf);
    tb_free(w);
}

static void test_snapshot_of_another_version_is_refused(void **state)
{
    (void)state;
    expect_refused_with_word(8, GP_ENGINE_SNAPSHOT_VERSION + 1, "version");
}

static void test_snapshot_of_another_layout_is_refused(void **state)
{
    (void)state;
    expect_refused_with_word(12, 0xdeadbeef, "layout");
}

static void test_truncated_snapshot_is_refused(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    gp_engine *r;
    gp_error err;
    size_t cuts[] = {0, 7, 24, len / 2, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        assert_int_equal(read_back(buf, cuts[i], &r, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "snapshot");
        assert_null(r);
    }
    assert_non_null(strstr(err.message, "truncated"));
    /* a body cut short with a header that agrees: malformed, not a crash */
    uint64_t body = len / 2 - 24;
    memcpy(buf + 16, &body, sizeof body);
    assert_int_equal(read_back(buf, len / 2, &r, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "snapshot");
    free(buf);
    tb_free(w);
}

static void test_over_long_snapshot_is_refused(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    unsigned char *longer = calloc(len + 8, 1);
    assert_non_null(longer);
    memcpy(longer, buf, len);
    gp_engine *r;
    gp_error err;
    assert_int_equal(read_back(longer, len + 8, &r, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "too long"));
    free(longer);
    free(buf);
    tb_free(w);
}

static void test_snapshot_under_other_settings_is_refused(void **state)
{
    (void)state;
    tb_world *w = busy_world();
    unsigned char *buf;
    size_t len;
    snapshot_of(w, &buf, &len);
    gp_engine_config cfg = gp_engine_config_default();
    cfg.preempt_cooldown_s += 60;
    gp_engine *r;
    gp_error err;
    assert_int_equal(gp_engine_snapshot_read(buf, len, &cfg, &r, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "config");
    assert_null(r);
    free(buf);
    tb_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restored_engine_holds_the_same_jobs_and_goes_on),
        cmocka_unit_test(test_restored_engine_keeps_each_jobs_history_lines),
        cmocka_unit_test(test_a_jobs_history_costs_the_snapshot_only_its_lines),
        cmocka_unit_test(test_snapshot_with_pending_decisions_is_refused),
        cmocka_unit_test(test_snapshot_of_another_version_is_refused),
        cmocka_unit_test(test_snapshot_of_another_layout_is_refused),
        cmocka_unit_test(test_truncated_snapshot_is_refused),
        cmocka_unit_test(test_over_long_snapshot_is_refused),
        cmocka_unit_test(test_snapshot_under_other_settings_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
