/* test_admission.c - limits, user limits, job class, promotion, lending.
 *
 * Semantics under test (docs/scheduling.md, "Admission" and "Why a job
 * waits"): a job fits when, at every ancestor, usage + demand <= limit and
 * the user's usage + demand <= the nearest user limit; otherwise it waits
 * with GP_WAIT_LIMIT / GP_WAIT_USER_LIMIT naming that tenant (a = usage, b =
 * demand, c = limit, in the dimension's units: mGPU).  It runs GUARANTEED
 * when it fits under every ancestor's guarantee (at least one), else
 * BURSTABLE; a burstable job is promoted (oldest first) when it fits again,
 * marked by USAGE_CLOSE + USAGE_OPEN.  The unused guarantee of a lend=0
 * tenant is never used by burstable jobs (GP_WAIT_LENDING).
 *
 * Fleet: four nodes of 8 H100 (32 GPUs) unless a test says otherwise; all
 * jobs are 1 replica x 1 GPU unless said.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static void fleet32(tb_world *w)
{
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    assert_int_equal(tb_type_index(w, "H100"), 0);
}

static void tree(tb_world *w, int org_limit, int team_limit, int proj_limit)
{
    tb_tenant(w, "org", "H100", -1, org_limit);
    tb_tenant(w, "org/team", "H100", -1, team_limit);
    tb_tenant(w, "org/team/proj", "H100", -1, proj_limit);
}

static void assert_wait_limit(tb_world *w, uint64_t job, gp_wait_code code, const char *tenant, int64_t usage,
                              int64_t demand, int64_t limit)
{
    gp_job_info info = tb_info(w, job);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, code);
    assert_string_equal(gp_engine_tenant_path(w->e, info.wait.tenant), tenant);
    assert_int_equal(info.wait.dim, 0); /* H100 */
    assert_int_equal(info.wait.a, usage);
    assert_int_equal(info.wait.b, demand);
    assert_int_equal(info.wait.c, limit);
}

static void submit_user(tb_world *w, uint64_t id, const char *tenant, const char *user, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.user = user;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void set_user_limit(tb_world *w, const char *path, int user_gpus)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.user_limit = tb_quota_gpus("H100", user_gpus);
    assert_int_equal(tb_tenant_try(w, path, &s, NULL), GP_OK);
}

/* ---- limits ---- */

static void org_limit_blocks_and_wait_names_org(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, 4, -1, -1);
    tb_submit_many(w, 1, 5, "org/team/proj", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    /* job 5: org usage 4000 + demand 1000 > limit 4000 */
    assert_wait_limit(w, 5, GP_WAIT_LIMIT, "org", 4000, 1000, 4000);
}

static void team_limit_blocks_and_wait_names_team(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, 10, 2, -1);
    tb_submit_many(w, 1, 3, "org/team/proj", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_wait_limit(w, 3, GP_WAIT_LIMIT, "org/team", 2000, 1000, 2000);
}

static void leaf_limit_blocks_and_wait_names_leaf(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, 10, 5, 1);
    tb_submit_many(w, 1, 2, "org/team/proj", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_wait_limit(w, 2, GP_WAIT_LIMIT, "org/team/proj", 1000, 1000, 1000);
}

static void demand_above_limit_waits_on_an_empty_fleet(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, 4, -1, -1);
    tb_submit(w, 1, "org/team/proj", 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_wait_limit(w, 1, GP_WAIT_LIMIT, "org", 0, 8000, 4000);
}

static void limit_counts_usage_of_the_whole_subtree(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", -1, 3);
    tb_tenant(w, "org/a", "H100", -1, -1);
    tb_tenant(w, "org/b", "H100", -1, -1);
    tb_submit_many(w, 1, 2, "org/a", 0);
    tb_submit_many(w, 11, 2, "org/b", 0);
    /* 4 jobs, org allows 3 GPUs in all */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    assert_int_equal(tb_jobs_in_state(w, NULL, GP_JOB_PENDING), 1);
    uint64_t waiting = tb_jobs_in_state(w, "org/a", GP_JOB_PENDING) ? 2 : 12;
    assert_wait_limit(w, waiting, GP_WAIT_LIMIT, "org", 3000, 1000, 3000);
}

static void limit_on_one_gpu_type_leaves_others_unbounded(void **state)
{
    tb_world *w = *state;
    fleet32(w);                                /* H100 */
    tb_add_nodes(w, 1, "A100", 8, "b1", "z0"); /* A100 */
    tb_tenant(w, "org", "H100", -1, 2);        /* at most 2 H100; A100 not listed */
    gp_job_spec s = tb_job(1, "org", 0);
    s.gpus = 4;
    s.gpu_types[0] = "H100";
    s.n_gpu_types = 1;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    s.id = 2;
    s.gpu_types[0] = "A100";
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    s.id = 3; /* either type: only A100 is admissible */
    s.gpu_types[1] = "H100";
    s.n_gpu_types = 2;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_wait_limit(w, 1, GP_WAIT_LIMIT, "org", 0, 4000, 2000);
    assert_int_equal(tb_info(w, 2).state, GP_JOB_RUNNING);
    assert_int_equal(tb_info(w, 3).gpu_type, tb_type_index(w, "A100"));
}

static void finished_job_frees_limit_for_the_next(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, 2, -1, -1);
    tb_submit_many(w, 1, 3, "org/team/proj", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 3, GP_DEC_BIND));
    assert_int_equal(tb_tenant_info(w, "org").usage.v[0], 2000);
}

static void cpu_limit_blocks_with_the_cpu_dimension(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.limit.set = true;
    s.limit.cpu_millis = 2500; /* GPUs unbounded, 2.5 cores */
    assert_int_equal(tb_tenant_try(w, "org", &s, NULL), GP_OK);
    tb_submit_many(w, 1, 3, "org", 0); /* 1000 mCPU each */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    gp_job_info info = tb_info(w, 3);
    assert_int_equal(info.wait.code, GP_WAIT_LIMIT);
    assert_int_equal(info.wait.dim, GP_DIM_CPU);
    assert_int_equal(info.wait.a, 2000);
    assert_int_equal(info.wait.b, 1000);
    assert_int_equal(info.wait.c, 2500);
}

/* ---- user limits ---- */

static void user_limit_blocks_that_user_only(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, -1, -1, -1);
    set_user_limit(w, "org/team/proj", 2);
    submit_user(w, 1, "org/team/proj", "alice", 0);
    submit_user(w, 2, "org/team/proj", "alice", 1);
    submit_user(w, 3, "org/team/proj", "alice", 2);
    submit_user(w, 4, "org/team/proj", "bob", 3);
    submit_user(w, 5, "org/team/proj", NULL, 4); /* no user: no user limit */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 4);
    assert_non_null(tb_find(w, 4, GP_DEC_BIND));
    assert_non_null(tb_find(w, 5, GP_DEC_BIND));
    /* alice: 2000 used + 1000 > 2000; her two oldest run */
    assert_wait_limit(w, 3, GP_WAIT_USER_LIMIT, "org/team/proj", 2000, 1000, 2000);
}

static void user_limit_of_an_ancestor_applies(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, -1, -1, -1);
    set_user_limit(w, "org", 1);
    submit_user(w, 1, "org/team/proj", "alice", 0);
    submit_user(w, 2, "org/team/proj", "alice", 1);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_wait_limit(w, 2, GP_WAIT_USER_LIMIT, "org", 1000, 1000, 1000);
}

static void nearest_user_limit_wins(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, -1, -1, -1);
    set_user_limit(w, "org", 1);
    set_user_limit(w, "org/team/proj", 3); /* nearer: alice may run 3 here */
    for (uint64_t id = 1; id <= 4; id++)
        submit_user(w, id, "org/team/proj", "alice", (int64_t)id);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 3);
    assert_wait_limit(w, 4, GP_WAIT_USER_LIMIT, "org/team/proj", 3000, 1000, 3000);
}

static void finished_job_frees_the_user_limit(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, -1, -1, -1);
    set_user_limit(w, "org/team/proj", 1);
    submit_user(w, 1, "org/team/proj", "alice", 0);
    submit_user(w, 2, "org/team/proj", "alice", 1);
    assert_int_equal(tb_tick(w, 5, GP_DEC_BIND), 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

/* ---- class ---- */

static void class_is_guaranteed_within_guarantee_else_burstable(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 4, -1);
    tb_tenant(w, "org/team", "H100", 4, -1);
    tb_tenant(w, "org/team/proj", "H100", 2, -1);
    tb_submit(w, 1, "org/team/proj", 1, 1, 0);
    tb_submit(w, 2, "org/team/proj", 1, 1, 1);
    tb_submit(w, 3, "org/team/proj", 1, 1, 2);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 3);
    /* proj guarantee 2: jobs 1 and 2 under it, job 3 borrows */
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_find(w, 1, GP_DEC_USAGE_OPEN)->usage.cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_find(w, 3, GP_DEC_USAGE_OPEN)->usage.cls, GP_CLASS_BURSTABLE);
    gp_tenant_info proj = tb_tenant_info(w, "org/team/proj");
    assert_int_equal(proj.usage.v[0], 3000);
    assert_int_equal(proj.guaranteed_usage.v[0], 2000);
}

static void guarantee_of_an_ancestor_covers_leaves_without_one(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 2, -1);
    tb_tenant(w, "org/a", "H100", -1, -1); /* no floor of its own */
    tb_tenant(w, "org/b", "H100", -1, -1);
    tb_submit(w, 1, "org/a", 1, 1, 0);
    tb_submit(w, 2, "org/b", 1, 1, 0);
    tb_submit(w, 3, "org/a", 1, 1, 1);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 3);
    /* org's floor of 2 covers two of the three jobs */
    assert_int_equal(tb_jobs_in_state(w, NULL, GP_JOB_RUNNING), 3);
    int guaranteed = 0, burstable = 0;
    for (uint64_t id = 1; id <= 3; id++) {
        gp_class c = tb_info(w, id).cls;
        guaranteed += c == GP_CLASS_GUARANTEED;
        burstable += c == GP_CLASS_BURSTABLE;
    }
    assert_int_equal(guaranteed, 2);
    assert_int_equal(burstable, 1);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 2000);
}

static void no_guarantee_anywhere_means_burstable(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tree(w, -1, -1, -1);
    tb_submit(w, 1, "org/team/proj", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
}

static void whole_demand_must_fit_under_guarantee(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 2, -1);
    tb_submit(w, 1, "org", 1, 3, 0); /* 3 GPUs, floor 2: not split, burstable as a whole */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 0);
}

/* ---- promotion ---- */

static void burstable_job_is_promoted_when_guaranteed_job_finishes(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 1, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    tb_submit(w, 2, "org", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_BURSTABLE);

    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    tb_advance(w, 100);
    size_t close_at = 0, open_at = 0;
    const gp_decision *close = tb_find_from(w, 2, GP_DEC_USAGE_CLOSE, 0, &close_at);
    assert_non_null(close);
    assert_int_equal(close->usage.cls, GP_CLASS_BURSTABLE);
    assert_int_equal(close->usage.start, 0);
    assert_int_equal(close->usage.end, 100);
    const gp_decision *open = tb_find_from(w, 2, GP_DEC_USAGE_OPEN, close_at, &open_at);
    assert_non_null(open);
    assert_true(open_at > close_at);
    assert_int_equal(open->usage.cls, GP_CLASS_GUARANTEED);
    assert_int_equal(open->usage.start, 100);
    assert_int_equal(open->usage.end, -1);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 1000);
}

static void shrinking_a_guarantee_demotes_the_newest_guaranteed_jobs(void **state)
{
    tb_world *w = *state;
    /* org is guaranteed 3 GPUs and runs jobs 1, 2, 3 guaranteed.  The
     * guarantee shrinks to 1: the newest (3, then 2) become burstable, and
     * each class change closes one usage interval and opens another. */
    fleet32(w);
    tb_tenant(w, "org", "H100", 3, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    tb_submit(w, 2, "org", 1, 1, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    tb_submit(w, 3, "org", 1, 1, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 100);
    tb_tenant(w, "org", "H100", 1, -1);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 1000);
    const gp_decision *open = tb_find(w, 3, GP_DEC_USAGE_OPEN);
    assert_non_null(open);
    assert_int_equal(open->usage.cls, GP_CLASS_BURSTABLE);
    assert_int_equal(open->usage.start, 100);
}

static void removing_the_only_guarantee_demotes_its_jobs(void **state)
{
    tb_world *w = *state;
    /* with no guarantee left on its path a job cannot be guaranteed */
    fleet32(w);
    tb_tenant(w, "org", "H100", 1, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    tb_tenant(w, "org", "H100", -1, -1);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
}

static void promotion_goes_oldest_first(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 1, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    tb_submit(w, 2, "org", 1, 1, 1);
    tb_submit(w, 3, "org", 1, 1, 2);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 3);
    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    tb_advance(w, 100);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_BURSTABLE);
    assert_null(tb_find(w, 3, GP_DEC_USAGE_CLOSE));
    assert_null(tb_find(w, 3, GP_DEC_USAGE_OPEN));
}

static void an_older_job_too_big_for_the_guarantee_does_not_hold_back_a_younger_one(void **state)
{
    tb_world *w = *state;
    /* org is guaranteed 2 GPUs: job 1 (2 GPUs) runs guaranteed, jobs 2 (3
     * GPUs) and 3 (1 GPU) burstable.  When job 1 ends, job 2 is the oldest
     * but can never fit the guarantee; job 3 is promoted. */
    fleet32(w);
    tb_tenant(w, "org", "H100", 2, -1);
    tb_submit(w, 1, "org", 1, 2, 0);
    tb_submit(w, 2, "org", 1, 3, 1);
    tb_submit(w, 3, "org", 1, 1, 2);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 3);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_BURSTABLE);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    tb_advance(w, 100);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 1000);
}

static void larger_guarantee_promotes_running_burstable_jobs(void **state)
{
    tb_world *w = *state;
    fleet32(w);
    tb_tenant(w, "org", "H100", 1, -1);
    tb_submit_many(w, 1, 3, "org", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_BURSTABLE);
    /* the floor grows from 1 to 2 GPUs: one more job fits under it */
    tb_tenant(w, "org", "H100", 2, -1);
    tb_advance(w, 10);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_tenant_info(w, "org").guaranteed_usage.v[0], 2000);
}

/* ---- lending ---- */

static void lend_zero_keeps_idle_guarantee_from_borrowers(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0"); /* 8 GPUs */
    gp_tenant_spec keeper = tb_tenant_spec("H100", 4, -1);
    keeper.lend = 0;
    assert_int_equal(tb_tenant_try(w, "keeper", &keeper, NULL), GP_OK);
    tb_tenant(w, "borrower", "H100", -1, -1);

    tb_submit_many(w, 1, 8, "borrower", 0);
    /* 8 free, keeper's 4 idle guarantee held back: borrower gets 4 */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    assert_int_equal(tb_jobs_in_state(w, "borrower", GP_JOB_PENDING), 4);
    assert_int_equal(tb_info(w, 8).wait.code, GP_WAIT_LENDING);

    /* the keeper's jobs find their guarantee free, no preemption needed */
    tb_submit_many(w, 101, 4, "keeper", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 4);
    assert_int_equal(tb_count(w, GP_DEC_PREEMPT), 0);
    for (uint64_t id = 101; id <= 104; id++)
        assert_int_equal(tb_info(w, id).cls, GP_CLASS_GUARANTEED);
    tb_assert_gpus_consistent(w);
}

static void lending_tenant_lets_borrowers_use_idle_guarantee(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "keeper", "H100", 4, -1); /* lend default: yes */
    tb_tenant(w, "borrower", "H100", -1, -1);
    tb_submit_many(w, 1, 8, "borrower", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
}

static void lend_zero_holds_only_the_unused_part(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_tenant_spec keeper = tb_tenant_spec("H100", 4, -1);
    keeper.lend = 0;
    assert_int_equal(tb_tenant_try(w, "keeper", &keeper, NULL), GP_OK);
    tb_tenant(w, "borrower", "H100", -1, -1);
    tb_submit_many(w, 101, 2, "keeper", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    /* 8 - 2 used by keeper - 2 unused guarantee held = 4 for the borrower */
    tb_submit_many(w, 1, 8, "borrower", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 4);
    assert_int_equal(tb_info(w, 8).wait.code, GP_WAIT_LENDING);
}

/* Seen: a lend = no tenant with its guarantee unused could not run a job
 * above its guarantee on its own reserved GPUs.  A reserve never blocks
 * its owner: 8 GPUs, 2 borrowed, keeper's 4 idle guarantee held; keeper's
 * 1x6 job (burstable: 6 > 4) takes the 6 free GPUs, its own 4 included. */
static void lend_zero_reserve_never_blocks_its_owner(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_tenant_spec keeper = tb_tenant_spec("H100", 4, -1);
    keeper.lend = 0;
    assert_int_equal(tb_tenant_try(w, "keeper", &keeper, NULL), GP_OK);
    tb_tenant(w, "keeper/team", "H100", -1, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    tb_submit_many(w, 1, 2, "borrower", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_submit(w, 101, "keeper/team", 1, 6, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 101), GP_JOB_RUNNING);
    assert_int_equal(tb_info(w, 101).cls, GP_CLASS_BURSTABLE);
    /* others are still held off what is left of the reserve */
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    tb_submit(w, 3, "borrower", 1, 1, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, 3).wait.code, GP_WAIT_LENDING);
    tb_assert_gpus_consistent(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(org_limit_blocks_and_wait_names_org),
        TB_TEST(team_limit_blocks_and_wait_names_team),
        TB_TEST(leaf_limit_blocks_and_wait_names_leaf),
        TB_TEST(demand_above_limit_waits_on_an_empty_fleet),
        TB_TEST(limit_counts_usage_of_the_whole_subtree),
        TB_TEST(limit_on_one_gpu_type_leaves_others_unbounded),
        TB_TEST(finished_job_frees_limit_for_the_next),
        TB_TEST(cpu_limit_blocks_with_the_cpu_dimension),
        TB_TEST(user_limit_blocks_that_user_only),
        TB_TEST(user_limit_of_an_ancestor_applies),
        TB_TEST(nearest_user_limit_wins),
        TB_TEST(finished_job_frees_the_user_limit),
        TB_TEST(class_is_guaranteed_within_guarantee_else_burstable),
        TB_TEST(guarantee_of_an_ancestor_covers_leaves_without_one),
        TB_TEST(no_guarantee_anywhere_means_burstable),
        TB_TEST(whole_demand_must_fit_under_guarantee),
        TB_TEST(burstable_job_is_promoted_when_guaranteed_job_finishes),
        TB_TEST(promotion_goes_oldest_first),
        TB_TEST(an_older_job_too_big_for_the_guarantee_does_not_hold_back_a_younger_one),
        TB_TEST(shrinking_a_guarantee_demotes_the_newest_guaranteed_jobs),
        TB_TEST(removing_the_only_guarantee_demotes_its_jobs),
        TB_TEST(larger_guarantee_promotes_running_burstable_jobs),
        TB_TEST(lend_zero_keeps_idle_guarantee_from_borrowers),
        TB_TEST(lending_tenant_lets_borrowers_use_idle_guarantee),
        TB_TEST(lend_zero_holds_only_the_unused_part),
        TB_TEST(lend_zero_reserve_never_blocks_its_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
