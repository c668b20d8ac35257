/* test_reprofile.c - MIG re-profiling by demand: reuse, create, destroy, rate limit.
 *
 * Semantics under test (src/core/sharing.c, docs/sharing.md "Re-profiling
 * by demand"): a replica reuses an idle instance of its profile (no
 * change), else creates one in free memory slices, else destroys idle
 * instances in the way; running instances are never touched.  A GPU's
 * layout changes at most once per mig_reconfigure_interval_s (default 60),
 * several changes at the same `now` counting as one; every change is a
 * RECONFIGURE (node, GPU, layout after) before the BIND that uses it.
 * Among GPUs: the cheapest change (reuse < create < destroy), then the
 * fullest GPU (best fit), then the start that keeps the most instances of
 * every profile placeable (strands the least).
 *
 * All on H100-80GB (profiles 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb,
 * 7g.80gb; see tests/support/sharing_builder.h for the placements).  The
 * rate limit is also used to steer a job to a chosen GPU: a GPU changed
 * less than 60 s ago can only reuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"
#include "support/sharing_builder.h"

static const sb_mig_model *h100(void)
{
    return sb_mig_model_of("H100", SB_H100_MIB);
}

static void mig_fleet(tb_world *w, int gpus)
{
    sb_add_node(w, "m0", "H100", gpus, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
}

static void submit_mig(tb_world *w, uint64_t id, const char *profile, int64_t now)
{
    gp_job_spec s = sb_mig_job(id, "org", profile);
    sb_submit(w, &s, now);
}

static const char *layout(const tb_world *w, uint32_t gpu)
{
    static char buf[GP_REASON_MAX];
    gp_gpu_info g = tb_gpu(w, gpu);
    memcpy(buf, g.mig_layout, sizeof buf);
    return buf;
}

/* ---- reuse ---- */

static void a_finished_job_leaves_its_instance_idle(void **state)
{
    tb_world *w = *state;
    mig_fleet(w, 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_string_equal(layout(w, 0), "1g.10gb@6");
    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_string_equal(layout(w, 0), "1g.10gb@6"); /* still there, idle */
    assert_int_equal(tb_gpu(w, 0).used_milli, 0);
    assert_int_equal(tb_gpu(w, 0).jobs, 0);
    assert_int_equal(tb_tick(w, 500, GP_DEC_RECONFIGURE), 0); /* nobody tears it down */
    assert_string_equal(layout(w, 0), "1g.10gb@6");
}

static void an_idle_instance_is_reused_without_reconfigure(void **state)
{
    tb_world *w = *state;
    /* t=0 change; t=20 is inside the 60 s limit, but a reuse is no change */
    mig_fleet(w, 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    submit_mig(w, 2, "1g.10gb", 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_int_equal(sb_slice(w, 2).mig_start, 6);
    assert_string_equal(layout(w, 0), "1g.10gb@6");
    assert_int_equal(tb_gpu(w, 0).used_milli, 142);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void a_reconfigure_comes_before_the_bind_that_uses_it(void **state)
{
    tb_world *w = *state;
    mig_fleet(w, 1);
    submit_mig(w, 1, "2g.20gb", 0);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 0);
    size_t bind_at = 0, count = 0;
    assert_non_null(tb_find_from(w, 1, GP_DEC_BIND, 0, &bind_at));
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    size_t reconf_at = count;
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_RECONFIGURE && reconf_at == count)
            reconf_at = i;
    assert_true(reconf_at < bind_at);
    assert_string_equal(d[reconf_at].mig_layout, "2g.20gb@4");
}

/* ---- destroying idle instances ---- */

static void a_new_profile_destroys_only_the_idle_instance_in_its_way(void **state)
{
    tb_world *w = *state;
    /* t=0: A 3g@4 and B 3g@0 (one change, same now).  t=10: B ends, 3g@0
     * idle.  t=20: C asks 2g: its starts are 0, 2 (in the idle 3g) and 4
     * (A's, running).  Destroying is a change: it waits for t=60.  Then
     * 2g@0 and 2g@2 keep the same (1g: 2, 1g.20gb: 1, 2g: 1 = 4 each), the
     * lower start wins: layout {3g.40gb@4, 2g.20gb@0}; A untouched. */
    mig_fleet(w, 1);
    submit_mig(w, 1, "3g.40gb", 0);
    submit_mig(w, 2, "3g.40gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(sb_slice(w, 1).mig_start, 4);
    assert_int_equal(sb_slice(w, 2).mig_start, 0);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    submit_mig(w, 3, "2g.20gb", 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 59, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
    const gp_decision *rc = sb_reconfigure(w, 0);
    assert_int_equal(rc->time, 60);
    char why[256];
    assert_int_equal(sb_mig_layout_parse(h100(), rc->mig_layout, NULL, 0, NULL, why, sizeof why), 2);
    assert_true(sb_mig_layout_has(rc->mig_layout, "3g.40gb", 4));
    assert_true(sb_mig_layout_has(rc->mig_layout, "2g.20gb", 0));
    assert_int_equal(sb_slice(w, 3).mig_start, 0);
    /* the running job: same slice, same bind, still running */
    assert_int_equal(sb_slice(w, 1).mig_start, 4);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_equal(tb_info(w, 1).bind_time, 0);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_STOP), 0);
    assert_int_equal(tb_gpu(w, 0).used_milli, 428 + 285);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void creating_in_free_slices_beats_destroying_an_idle_instance(void **state)
{
    tb_world *w = *state;
    /* A 3g@4 runs; B's 1g (somewhere in 0-3, slot b) ended and is idle.
     * C asks 1g.20gb (starts 0, 2; 4 and 6 are A's): one of the two pairs
     * is free of b, so C is created there and the idle 1g@b stays. */
    mig_fleet(w, 1);
    submit_mig(w, 1, "3g.40gb", 0);
    submit_mig(w, 2, "1g.10gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    int b = sb_slice(w, 2).mig_start;
    assert_true(b >= 0 && b < 4);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    submit_mig(w, 3, "1g.20gb", 60);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
    int c = sb_slice(w, 3).mig_start;
    assert_int_equal(c, b < 2 ? 2 : 0);
    assert_true(sb_mig_layout_has(layout(w, 0), "1g.10gb", b));
    assert_true(sb_mig_layout_has(layout(w, 0), "3g.40gb", 4));
    assert_int_equal(sb_assert_mig_layout_valid(w, 0, h100()), 3);
}

static void a_4g_destroys_the_idle_1g_in_its_slices(void **state)
{
    tb_world *w = *state;
    /* as above, but C asks 4g (only at 0, slices 0-3): the idle 1g@b goes */
    mig_fleet(w, 1);
    submit_mig(w, 1, "3g.40gb", 0);
    submit_mig(w, 2, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    submit_mig(w, 3, "4g.40gb", 60);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
    assert_int_equal(sb_assert_mig_layout_valid(w, 0, h100()), 2);
    assert_true(sb_mig_layout_has(layout(w, 0), "3g.40gb", 4));
    assert_true(sb_mig_layout_has(layout(w, 0), "4g.40gb", 0));
    assert_int_equal(tb_gpu(w, 0).used_milli, 428 + 571);
}

/* ---- the rate limit ---- */

static void a_second_change_waits_for_the_reconfigure_interval(void **state)
{
    tb_world *w = *state;
    /* change at t=0 (A's 1g); B needs another 1g created: not before t=60 */
    mig_fleet(w, 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "1g.10gb", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 59, GP_DEC_BIND), 0);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
    assert_int_equal(sb_reconfigure(w, 0)->time, 60);
}

static void changes_at_the_same_now_count_as_one(void **state)
{
    tb_world *w = *state;
    /* three 1g at t=0: three creations, all at t=0, the last RECONFIGURE
     * lists all three; a fourth at t=30 still waits for t=60 */
    mig_fleet(w, 1);
    for (uint64_t id = 1; id <= 3; id++)
        submit_mig(w, id, "1g.10gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    size_t n = tb_count(w, GP_DEC_RECONFIGURE);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sb_reconfigure(w, i)->time, 0);
    char why[256];
    assert_int_equal(sb_mig_layout_parse(h100(), sb_last_reconfigure(w)->mig_layout, NULL, 0, NULL, why, sizeof why),
                     3);
    submit_mig(w, 4, "1g.10gb", 30);
    assert_int_equal(tb_tick(w, 30, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
}

static void the_interval_comes_from_the_engine_config(void **state)
{
    (void)state;
    gp_engine_config cfg = gp_engine_config_default();
    assert_int_equal(cfg.mig_reconfigure_interval_s, 60);
    cfg.mig_reconfigure_interval_s = 120;
    tb_world *w = tb_new();
    gp_engine_free(w->e);
    w->e = gp_engine_new(&cfg);
    assert_non_null(w->e);
    mig_fleet(w, 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "1g.10gb", 10);
    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 119, GP_DEC_BIND), 0);
    assert_int_equal(tb_tick(w, 120, GP_DEC_BIND), 1);
    tb_free(w);
}

static void an_interval_of_zero_allows_a_change_at_every_tick(void **state)
{
    (void)state;
    gp_engine_config cfg = gp_engine_config_default();
    cfg.mig_reconfigure_interval_s = 0;
    tb_world *w = tb_new();
    gp_engine_free(w->e);
    w->e = gp_engine_new(&cfg);
    assert_non_null(w->e);
    mig_fleet(w, 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "1g.10gb", 1);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
    tb_free(w);
}

static void the_rate_limit_is_per_gpu(void **state)
{
    tb_world *w = *state;
    /* t=0: A -> g0 (both empty, the first wins).  t=10: B would go to g0
     * by best fit (room 6 vs 7), but g0 changed at 0: B goes to g1. */
    mig_fleet(w, 2);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 1).gpu, 0);
    submit_mig(w, 2, "1g.10gb", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    assert_int_equal(sb_reconfigure(w, 0)->gpu_index, 1);
}

/* ---- which GPU changes ---- */

static void a_fuller_gpu_beats_reusing_an_idle_instance(void **state)
{
    tb_world *w = *state;
    /* t=0: A 1g -> g0@6.  t=10: B 3g -> g1@4 (g0 rate-limited).  t=20: A
     * ends: g0 holds an idle 1g@6 and no running instance.  t=100: C 1g.
     * Fullness comes first (best fit keeps g0 empty for a big instance):
     * g1 (4 busy slices) beats g0 (none), although g1 needs a create and
     * g0 could reuse; so C lands beside B with one RECONFIGURE, and g0's
     * idle 1g stays. */
    mig_fleet(w, 2);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "3g.40gb", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    submit_mig(w, 3, "1g.10gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
    assert_int_equal(sb_slice(w, 3).gpu, 1);
    assert_true(sb_slice(w, 3).mig_start < 4);
    assert_string_equal(layout(w, 0), "1g.10gb@6");
}

/* Among equally full GPUs the cheapest change wins, and among equal
 * changes the lower index.  t=0: A 1g -> g0@6, t=10: B 1g -> g1@6 (g0
 * rate-limited).  t=20 both end: both GPUs hold an idle 1g@6 and run
 * nothing.  t=100: C 1g can reuse either idle instance: no RECONFIGURE,
 * and g0 (the lower index) gets it. */
static void among_equally_full_gpus_reuse_beats_create(void **state)
{
    tb_world *w = *state;
    mig_fleet(w, 2);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "1g.10gb", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 20);
    submit_mig(w, 3, "1g.10gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_int_equal(sb_slice(w, 3).gpu, 0);
    assert_int_equal(sb_slice(w, 3).mig_start, 6);
}

static void creating_beats_destroying_on_another_gpu(void **state)
{
    tb_world *w = *state;
    /* t=0: A 7g -> g0.  t=10: B 3g -> g1@4 (g0 full).  t=20: A ends: g0
     * holds an idle 7g@0.  t=100: C 1g: g0 would destroy the 7g, g1 can
     * create beside B: g1, and the idle 7g stays for the next 7g job. */
    mig_fleet(w, 2);
    submit_mig(w, 1, "7g.80gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "3g.40gb", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    submit_mig(w, 3, "1g.10gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(sb_slice(w, 3).gpu, 1);
    assert_string_equal(layout(w, 0), "7g.80gb@0");
    submit_mig(w, 4, "7g.80gb", 110);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_int_equal(sb_slice(w, 4).gpu, 0);
}

static void among_creates_the_fuller_gpu_wins(void **state)
{
    tb_world *w = *state;
    /* t=0: A 3g -> g0@4.  t=10: B 1g -> g1@6 (g0 rate-limited).  t=100:
     * C 1g: both create; room after: g0 8 - 4 - 1 = 3, g1 8 - 1 - 1 = 6:
     * g0, keeping g1's big hole. */
    mig_fleet(w, 2);
    submit_mig(w, 1, "3g.40gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit_mig(w, 2, "1g.10gb", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    submit_mig(w, 3, "1g.10gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(sb_slice(w, 3).gpu, 0);
    assert_true(sb_slice(w, 3).mig_start < 4);
}

static void among_equally_full_gpus_the_one_that_strands_least_wins(void **state)
{
    tb_world *w = *state;
    /* t=0: X 2g -> g0@4 (slices 4-5).  t=10: Y 1g.20gb -> g1@6 (slices
     * 6-7; g0 rate-limited).  t=100: Z 1g; both GPUs create, both have 2
     * busy slices (room 5).  Instances still placeable after (first fit of
     * 1g, 1g.20gb, 2g, 3g, 4g):
     *   g0 best 1g@6 {4,5,6}: 4 + 2 + 2 + 1 + 1 = 10 (slice 7 is stranded:
     *      no 1g starts there);
     *   g1 best 1g@4 {4,6,7}: 5 + 2 + 2 + 1 + 1 = 11 (1g@5 also 11; 1g@0..3: 9).
     * Z goes to g1 at 4. */
    mig_fleet(w, 2);
    submit_mig(w, 1, "2g.20gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 1).gpu, 0);
    assert_int_equal(sb_slice(w, 1).mig_start, 4);
    submit_mig(w, 2, "1g.20gb", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 2).gpu, 1);
    assert_int_equal(sb_slice(w, 2).mig_start, 6);
    submit_mig(w, 3, "1g.10gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(sb_slice(w, 3).gpu, 1);
    assert_int_equal(sb_slice(w, 3).mig_start, 4);
    assert_int_equal(sb_assert_mig_layout_valid(w, 1, h100()), 2);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(a_finished_job_leaves_its_instance_idle),
        TB_TEST(an_idle_instance_is_reused_without_reconfigure),
        TB_TEST(a_reconfigure_comes_before_the_bind_that_uses_it),
        TB_TEST(a_new_profile_destroys_only_the_idle_instance_in_its_way),
        TB_TEST(creating_in_free_slices_beats_destroying_an_idle_instance),
        TB_TEST(a_4g_destroys_the_idle_1g_in_its_slices),
        TB_TEST(a_second_change_waits_for_the_reconfigure_interval),
        TB_TEST(changes_at_the_same_now_count_as_one),
        cmocka_unit_test(the_interval_comes_from_the_engine_config),
        cmocka_unit_test(an_interval_of_zero_allows_a_change_at_every_tick),
        TB_TEST(the_rate_limit_is_per_gpu),
        TB_TEST(a_fuller_gpu_beats_reusing_an_idle_instance),
        TB_TEST(among_equally_full_gpus_reuse_beats_create),
        TB_TEST(creating_beats_destroying_on_another_gpu),
        TB_TEST(among_creates_the_fuller_gpu_wins),
        TB_TEST(among_equally_full_gpus_the_one_that_strands_least_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
