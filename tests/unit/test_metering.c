/* test_metering.c - usage intervals for chargeback.
 *
 * Semantics under test (docs/scheduling.md, "Metering"): USAGE_OPEN at bind,
 * one interval per job (tenant, job, gpu type, milli_gpus = replicas x gpus
 * x 1000, class, topology, start, end = -1); USAGE_CLOSE with end at release
 * or class change.  The sum over closed and open intervals of milli_gpus x
 * (end - start) equals allocated GPU-time.
 *
 * Worked example (intervals_sum_to_gpu_time), one node of 8 H100:
 *   A: 2 GPUs, bound t=0,  finishes t=100  -> 2 x 100 = 200 GPU-s
 *   B: 1 GPU,  bound t=0,  finishes t=250  -> 1 x 250 = 250 GPU-s
 *   C: 3 GPUs, submitted t=50, bound at the tick of t=60, finishes t=160
 *                                           -> 3 x 100 = 300 GPU-s
 *   total 750 GPU-s = 750,000 mGPU-s.  The same from the allocation curve:
 *   0-60: 3 GPUs (180), 60-100: 6 (240), 100-160: 4 (240), 160-250: 1 (90).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

/* Sum of milli_gpus x (end - start) over the intervals in the decisions:
 * closed ones as closed, open ones (never closed) up to `now`. */
static int64_t metered_milli_seconds(tb_world *w, int64_t now)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    int64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        if (d[i].kind == GP_DEC_USAGE_CLOSE) {
            total += d[i].usage.milli_gpus * (d[i].usage.end - d[i].usage.start);
        } else if (d[i].kind == GP_DEC_USAGE_OPEN) {
            bool closed = false;
            for (size_t k = i + 1; k < count && !closed; k++)
                closed = d[k].kind == GP_DEC_USAGE_CLOSE && d[k].usage.interval_id == d[i].usage.interval_id;
            if (!closed)
                total += d[i].usage.milli_gpus * (now - d[i].usage.start);
        }
    }
    return total;
}

static void submit_gpus(tb_world *w, uint64_t id, const char *tenant, int replicas, int gpus, gp_topology topo,
                        int64_t grace, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, grace);
    s.replicas = replicas;
    s.gpus = gpus;
    s.topology = topo;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void usage_opens_at_bind_with_what_was_allocated(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", 8, -1);
    tb_tenant(w, "org/team", "H100", 8, -1);
    submit_gpus(w, 1, "org/team", 2, 4, GP_TOPO_BLOCK, 0, 0);
    assert_int_equal(tb_tick(w, 10, GP_DEC_USAGE_OPEN), 1);
    const gp_decision *open = tb_find(w, 1, GP_DEC_USAGE_OPEN);
    assert_non_null(open);
    assert_int_equal(open->time, 10);
    assert_int_equal(open->usage.job_id, 1);
    assert_string_equal(open->usage.tenant, "org/team");
    assert_string_equal(open->usage.gpu_type, "H100");
    assert_int_equal(open->usage.milli_gpus, 8000); /* 2 replicas x 4 GPUs x 1000 */
    assert_int_equal(open->usage.cls, GP_CLASS_GUARANTEED);
    assert_int_equal(open->usage.topology, GP_TOPO_BLOCK);
    assert_int_equal(open->usage.start, 10);
    assert_int_equal(open->usage.end, -1);
    assert_int_equal(tb_count(w, GP_DEC_USAGE_CLOSE), 0);
}

static void usage_closes_at_finish_matching_its_open(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "A100", 8, "b0", "z0");
    tb_tenant(w, "team", "A100", -1, -1);
    submit_gpus(w, 1, "team", 1, 3, GP_TOPO_ANY, 0, 0);
    assert_int_equal(tb_tick(w, 10, GP_DEC_USAGE_OPEN), 1);
    gp_usage open = tb_find(w, 1, GP_DEC_USAGE_OPEN)->usage;

    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 250);
    const gp_decision *close = tb_find(w, 1, GP_DEC_USAGE_CLOSE);
    assert_non_null(close); /* at the finish event, not at a later tick */
    assert_int_equal(close->usage.interval_id, open.interval_id);
    assert_int_equal(close->usage.job_id, 1);
    assert_string_equal(close->usage.tenant, "team");
    assert_string_equal(close->usage.gpu_type, "A100");
    assert_int_equal(close->usage.milli_gpus, 3000);
    assert_int_equal(close->usage.cls, GP_CLASS_BURSTABLE);
    assert_int_equal(close->usage.topology, GP_TOPO_ANY);
    assert_int_equal(close->usage.start, 10);
    assert_int_equal(close->usage.end, 250);
}

static void every_job_gets_its_own_interval(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    tb_submit_many(w, 1, 3, "team", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_USAGE_OPEN), 3);
    uint64_t a = tb_find(w, 1, GP_DEC_USAGE_OPEN)->usage.interval_id;
    uint64_t b = tb_find(w, 2, GP_DEC_USAGE_OPEN)->usage.interval_id;
    uint64_t c = tb_find(w, 3, GP_DEC_USAGE_OPEN)->usage.interval_id;
    assert_true(a != b && b != c && a != c);
}

static void intervals_sum_to_gpu_time(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    gp_engine_decisions_clear(w->e);
    submit_gpus(w, 1, "team", 1, 2, GP_TOPO_ANY, 0, 0); /* A */
    submit_gpus(w, 2, "team", 1, 1, GP_TOPO_ANY, 0, 0); /* B */
    tb_advance(w, 0);
    submit_gpus(w, 3, "team", 1, 3, GP_TOPO_ANY, 0, 50); /* C */
    tb_advance(w, 60);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    tb_advance(w, 100);
    tb_finish(w, 3, GP_EXIT_SUCCEEDED, 160);
    tb_advance(w, 200);
    /* at t=200, B still open: 200 (A) + 300 (C) + 1 x 200 (B so far) = 700 GPU-s */
    assert_int_equal(metered_milli_seconds(w, 200), 700 * 1000);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 250);
    tb_advance(w, 300);
    assert_int_equal(tb_count(w, GP_DEC_USAGE_OPEN), 3);
    assert_int_equal(tb_count(w, GP_DEC_USAGE_CLOSE), 3);
    assert_int_equal(metered_milli_seconds(w, 300), 750 * 1000);
    assert_int_equal(tb_find(w, 3, GP_DEC_USAGE_OPEN)->usage.start, 60);
}

static void preempted_job_is_metered_until_its_gpus_are_released(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 4, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    gp_engine_decisions_clear(w->e);
    submit_gpus(w, 1, "borrower", 1, 8, GP_TOPO_ANY, 60, 0);
    tb_advance(w, 0);
    submit_gpus(w, 2, "owner", 1, 4, GP_TOPO_ANY, 0, 100);
    tb_advance(w, 100); /* PREEMPT, grace 60 */
    assert_null(tb_find(w, 1, GP_DEC_USAGE_CLOSE)); /* GPUs still held */
    tb_advance(w, 160);
    const gp_decision *close = tb_find(w, 1, GP_DEC_USAGE_CLOSE);
    assert_non_null(close);
    assert_int_equal(close->usage.end, 160);
    const gp_decision *open = tb_find(w, 2, GP_DEC_USAGE_OPEN);
    assert_non_null(open);
    assert_int_equal(open->usage.start, 160);
    assert_int_equal(open->usage.cls, GP_CLASS_GUARANTEED);
    /* 8 x 160 for the victim, 4 x (200 - 160) for the owner */
    assert_int_equal(metered_milli_seconds(w, 200), (8 * 160 + 4 * 40) * 1000);
}

static void promotion_splits_the_interval_without_losing_time(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", 1, -1);
    gp_engine_decisions_clear(w->e);
    tb_submit(w, 1, "team", 1, 1, 0); /* guaranteed */
    tb_submit(w, 2, "team", 1, 1, 0); /* burstable */
    tb_advance(w, 0);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    tb_advance(w, 100); /* job 2 promoted */
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 300);
    /* job 1: 100; job 2: 100 burstable + 200 guaranteed */
    assert_int_equal(tb_count_for_job(w, 2, GP_DEC_USAGE_OPEN), 2);
    assert_int_equal(tb_count_for_job(w, 2, GP_DEC_USAGE_CLOSE), 2);
    assert_int_equal(metered_milli_seconds(w, 300), (100 + 300) * 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(usage_opens_at_bind_with_what_was_allocated),
        TB_TEST(usage_closes_at_finish_matching_its_open),
        TB_TEST(every_job_gets_its_own_interval),
        TB_TEST(intervals_sum_to_gpu_time),
        TB_TEST(preempted_job_is_metered_until_its_gpus_are_released),
        TB_TEST(promotion_splits_the_interval_without_losing_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
