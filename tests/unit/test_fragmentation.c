/* test_fragmentation.c - the FGD fragmentation measure and the placement scores.
 *
 * Semantics under test (src/core/fragmentation.c, docs/sharing.md
 * "Packing fractional work"): for the workload mix M (shapes m with
 * weights p_m) and a node with free milli-GPUs left_g per GPU,
 *   F_n(m) = sum of left_g over GPUs with left_g < m.milli   if m fits n;
 *          = sum of all left_g                               otherwise
 *            (and always for CPU-only shapes);
 *   F = sum over up, undrained nodes and shapes of p_m F_n(m).
 * Free capacity: an exclusive GPU 1000 (0 when owned), an MPS GPU 1000 -
 * its shares.  MPS shares are placed by the pool's score, and so are
 * whole-GPU and CPU-only jobs when every pool uses a paper score or every
 * node of the models they accept is MPS; `default` scores as `fgd` does,
 * but is not a paper score: other whole-GPU jobs go to placement.c's best
 * fit (the one place the two differ, tested below).
 * Equal scores go to a fixed node order drawn from the pool's seed
 * (random: a fresh draw per task).
 *
 * Fleets: H100 nodes of 2 GPUs (81920 MiB each, 128 cores), one tenant
 * "org"; MPS jobs with cpu 0 so that CPU never decides.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"
#include "support/sharing_builder.h"

#define MIB 81920

static gp_workload_shape shape(int gpus, int milli, double weight)
{
    gp_workload_shape s;
    memset(&s, 0, sizeof s);
    s.gpus = gpus;
    s.milli = milli;
    s.weight = weight;
    return s;
}

static void set_mix(tb_world *w, const gp_workload_shape *shapes, size_t n)
{
    gp_error err;
    gp_error_clear(&err);
    if (gp_engine_workload_set(w->e, shapes, n, &err) != GP_OK)
        fail_msg("workload_set: %s", err.message);
}

static void submit_mps(tb_world *w, uint64_t id, int milli, int64_t now)
{
    gp_job_spec s = sb_mps_job(id, "org", milli, 0);
    sb_submit(w, &s, now);
}

/* The MPS GPU (index within its node) and node of a placed job. */
static int job_gpu_index(const tb_world *w, uint64_t id)
{
    return tb_gpu(w, sb_slice(w, id).gpu).index;
}

/* ---- the mix ---- */

static void workload_set_refuses_shapes_out_of_range(void **state)
{
    tb_world *w = *state;
    gp_workload_shape bad[13];
    for (size_t i = 0; i < 13; i++)
        bad[i] = shape(1, 500, 1);
    bad[0].cpu_millis = -1;
    bad[1].gpus = GP_MAX_GPUS_PER_NODE + 1;
    bad[2].gpus = -1;
    bad[3].milli = 1001;
    bad[4].milli = -1;
    bad[5].milli = 0;              /* GPUs without a share */
    bad[6] = shape(0, 500, 1);     /* a share without GPUs */
    bad[7].weight = 0;
    bad[8].weight = -1;
    bad[9].weight = NAN;
    bad[10].n_gpu_types = GP_MAX_GPU_TYPES + 1;
    bad[11].n_gpu_types = -1;
    bad[12].n_gpu_types = 1;       /* gpu_types[0] NULL */
    for (size_t i = 0; i < 13; i++) {
        gp_error err;
        gp_error_clear(&err);
        if (gp_engine_workload_set(w->e, &bad[i], 1, &err) != GP_ERR_INVALID)
            fail_msg("shape %zu was accepted", i);
        assert_string_equal(err.field, "shapes");
    }
    gp_error err;
    gp_error_clear(&err);
    assert_int_equal(gp_engine_workload_set(w->e, NULL, 1, &err), GP_ERR_INVALID);
    static gp_workload_shape many[257];
    for (size_t i = 0; i < 257; i++)
        many[i] = shape(1, 1000, 1);
    assert_int_equal(gp_engine_workload_set(w->e, many, 257, &err), GP_ERR_INVALID);
    /* in range: 256 shapes, a CPU-only shape, and n = 0 (learn again) */
    assert_int_equal(gp_engine_workload_set(w->e, many, 256, &err), GP_OK);
    gp_workload_shape cpu = shape(0, 0, 1);
    assert_int_equal(gp_engine_workload_set(w->e, &cpu, 1, &err), GP_OK);
    assert_int_equal(gp_engine_workload_set(w->e, NULL, 0, &err), GP_OK);
}

static void a_refused_workload_set_changes_nothing(void **state)
{
    tb_world *w = *state;
    /* 8 GPU types fill the type table, so a shape naming a 9th is refused.
     * Learned mix before: one CPU-only job -> F = all free GPUs = 8000.
     * The refused call must leave the engine learning: after 20 whole-GPU
     * jobs the mix is {whole: 1} (20 of 21 >= 95 %) and F = 0. */
    const char *types[8] = {"T0", "T1", "T2", "T3", "T4", "T5", "T6", "T7"};
    for (int i = 0; i < 8; i++)
        tb_add_nodes(w, 1, types[i], 1, NULL, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec cpu = sb_cpu_job(1, "org", 1000, 0);
    sb_submit(w, &cpu, 0);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 8000.0) < 1e-9);
    gp_workload_shape s[2] = {shape(1, 1000, 1), shape(1, 1000, 1)};
    s[1].n_gpu_types = 1;
    s[1].gpu_types[0] = "T8";
    gp_error err;
    gp_error_clear(&err);
    assert_int_equal(gp_engine_workload_set(w->e, s, 2, &err), GP_ERR_INVALID);
    assert_int_equal(gp_engine_gpu_type_count(w->e), 8);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 8000.0) < 1e-9);
    for (uint64_t id = 10; id < 30; id++)
        tb_submit(w, id, "org", 1, 1, 0);
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
}

static void the_learned_mix_keeps_the_shapes_that_make_up_95_percent(void **state)
{
    tb_world *w = *state;
    /* node of 2 free exclusive GPUs.  19 whole-GPU jobs and 1 CPU-only:
     * most frequent first, stop once 95 % (19 of 20) are in: {whole: 1},
     * and a whole GPU fits: F = 0.  One more CPU-only job: 19 of 21 <
     * 19.95, so CPU-only joins: p = 19/21, 2/21; F = 2/21 x 2000. */
    tb_add_nodes(w, 1, "H100", 2, NULL, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 19; id++)
        tb_submit(w, id, "org", 1, 1, 0);
    gp_job_spec cpu = sb_cpu_job(100, "org", 1000, 0);
    sb_submit(w, &cpu, 0);
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
    cpu.id = 101;
    sb_submit(w, &cpu, 0);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 2.0 / 21.0 * 2000.0) < 1e-6);
}

/* ---- the measure, by hand ---- */

static void an_empty_fleet_and_a_fitting_mix_have_no_fragmentation(void **state)
{
    tb_world *w = *state;
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
    tb_add_nodes(w, 2, "H100", 2, NULL, NULL);
    gp_workload_shape m = shape(1, 1000, 1);
    set_mix(w, &m, 1);
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
}

static void cpu_only_shapes_and_other_types_count_all_free_gpus(void **state)
{
    tb_world *w = *state;
    /* one node, 2 free GPUs = 2000 left.  CPU-only: 2000.  A shape for
     * A100 only: the H100 node cannot host it: 2000.  A shape needing
     * 200 cores (the node has 128): 2000.  Half and half of the first two
     * plus a fitting whole GPU (weight 2): (1 x 2000 + 1 x 2000 + 0) / 4. */
    tb_add_nodes(w, 1, "H100", 2, NULL, NULL);
    gp_workload_shape cpu = shape(0, 0, 1);
    set_mix(w, &cpu, 1);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 2000.0) < 1e-9);
    gp_workload_shape a100 = shape(1, 1000, 1);
    a100.n_gpu_types = 1;
    a100.gpu_types[0] = "A100";
    set_mix(w, &a100, 1);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 2000.0) < 1e-9);
    gp_workload_shape big = shape(1, 1000, 1);
    big.cpu_millis = 200000;
    set_mix(w, &big, 1);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 2000.0) < 1e-9);
    gp_workload_shape mix[3] = {cpu, a100, shape(1, 1000, 2)};
    set_mix(w, mix, 3);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 1000.0) < 1e-9);
}

static void owned_lost_and_draining_capacity_is_not_counted(void **state)
{
    tb_world *w = *state;
    /* CPU-only mix: F = free GPU capacity of up, undrained nodes.
     * 2 nodes x 2 GPUs = 4000; a whole-GPU job on n00: 3000; drain n01:
     * 1000; lose n00: 0. */
    tb_add_nodes(w, 2, "H100", 2, NULL, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_workload_shape cpu = shape(0, 0, 1);
    set_mix(w, &cpu, 1);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 4000.0) < 1e-9);
    gp_job_spec whole = sb_whole_job(1, "org", 1);
    whole.n_gpu_types = 0;
    sb_submit(w, &whole, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 3000.0) < 1e-9);
    const char *busy = tb_job_node(w, 1) == tb_node_index(w, "n00") ? "n00" : "n01";
    const char *idle = strcmp(busy, "n00") == 0 ? "n01" : "n00";
    assert_int_equal(gp_engine_node_drain(w->e, idle, true, 10, NULL), GP_OK);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 1000.0) < 1e-9);
    assert_int_equal(gp_engine_node_lost(w->e, busy, 20, NULL), GP_OK);
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
}

/* The example of fragmentation.c's header: M = {1 GPU: 50 %, 0.5 GPU:
 * 50 %}; node a (MPS) has left (1000, 600) after a 400 share, node b
 * (1000, 1000).
 *   F_a = 0.5 x 600 (the 1-GPU shape fits on a's full GPU, 600 is a
 *         fragment for it) + 0.5 x 0 (both GPUs host 0.5) = 300;  F_b = 0.
 * A 0.5 task on a's 600 GPU: a = (1000, 100): 0.5 x 100 + 0.5 x 100 = 100
 * (dF = -200); on a's full GPU: (500, 600), no whole GPU left, so the
 * 1-GPU shape counts all 1100: 0.5 x 1100 = 550 (dF = +250); on b:
 * (500, 1000): 0.5 x 500 = 250 (dF = +250).  Best: a's 600 GPU, F = 100. */
static void build_header_example(tb_world *w, const char *pool)
{
    gp_workload_shape m[2] = {shape(1, 1000, 0.5), shape(1, 500, 0.5)};
    set_mix(w, m, 2);
    sb_add_node(w, "a", "H100", 2, MIB, GP_SHARING_MPS, pool);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 400, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    sb_add_node(w, "b", "H100", 2, MIB, GP_SHARING_MPS, pool);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 300.0) < 1e-9);
}

static void fragmentation_of_the_header_example_is_300_then_100(void **state)
{
    tb_world *w = *state;
    build_header_example(w, NULL);
    submit_mps(w, 2, 500, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "a");
    assert_int_equal(sb_slice(w, 2).gpu, sb_slice(w, 1).gpu); /* the 600 GPU */
    assert_true(fabs(gp_engine_fragmentation(w->e) - 100.0) < 1e-9);
}

static void fgd_puts_a_half_gpu_task_where_fragmentation_grows_least(void **state)
{
    tb_world *w = *state;
    /* FGD's integer score floor(100 / (1 + exp(dF / 1000))):
     * a's 600 GPU: floor(100 / (1 + e^-0.2)) = 54; a's full GPU and b:
     * floor(100 / (1 + e^0.25)) = 43.  a's 600 GPU wins. */
    sb_pool(w, "fgd", GP_SCORE_FGD, 0, 7);
    build_header_example(w, "fgd");
    submit_mps(w, 2, 500, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "a");
    assert_int_equal(sb_slice(w, 2).gpu, sb_slice(w, 1).gpu);
    assert_true(fabs(gp_engine_fragmentation(w->e) - 100.0) < 1e-9);
}

static void default_score_takes_the_least_growth_before_the_fuller_node(void **state)
{
    tb_world *w = *state;
    /* M = {0.5 GPU: 1}.  a holds two 300 shares (700, 700): fuller; b is
     * empty.  A 0.5 task on a leaves a 200 fragment (dF = +200); on b
     * (500, 1000) nothing is a fragment (dF = 0): b. */
    gp_workload_shape m = shape(1, 500, 1);
    set_mix(w, &m, 1);
    sb_add_node(w, "a", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 300, 0);
    submit_mps(w, 2, 300, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_not_equal(job_gpu_index(w, 1), job_gpu_index(w, 2)); /* 300 on 700 would leave 400: +400 */
    sb_add_node(w, "b", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    submit_mps(w, 3, 500, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 3), "b");
    assert_true(fabs(gp_engine_fragmentation(w->e)) < 1e-9);
}

/* The fleet of the test below, every node exclusive and in the default
 * pool, which scores `score`: M = {1 whole GPU with 4 cores}; "small" (2
 * GPUs, 8 cores) comes first, then "big" (4 GPUs, 64 cores).  Places one
 * 1-GPU job with 6 cores and returns the name of its node. */
static const char *whole_gpu_on_exclusive_nodes(tb_world *w, gp_score score)
{
    sb_pool(w, "default", score, 0, 5);
    gp_workload_shape m = shape(1, 1000, 1);
    m.cpu_millis = 4000;
    set_mix(w, &m, 1);
    gp_node_spec small = sb_node_spec("small", "H100", 2, MIB, GP_SHARING_EXCLUSIVE, NULL);
    small.cpu_millis = 8000;
    gp_node_spec big = sb_node_spec("big", "H100", 4, MIB, GP_SHARING_EXCLUSIVE, NULL);
    big.cpu_millis = 64000;
    assert_int_equal(gp_engine_node_add(w->e, &small, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_node_add(w->e, &big, 0, NULL), GP_OK);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec j = sb_whole_job(1, "org", 1);
    j.cpu_millis = 6000;
    sb_submit(w, &j, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    return sb_job_node(w, 1);
}

static void default_places_whole_gpus_on_exclusive_nodes_by_best_fit(void **state)
{
    tb_world *w = *state;
    /* Where default and fgd differ: the default scores only shares and
     * jobs on MPS-only models; this whole-GPU job on exclusive GPUs goes
     * through placement.c's best fit, which takes the node with the
     * fewest free GPUs that fits: small (2 < 4), although the 2 cores it
     * leaves make small's last GPU a fragment for M. */
    assert_string_equal(whole_gpu_on_exclusive_nodes(w, GP_SCORE_DEFAULT), "small");
}

static void fgd_pool_scores_whole_gpus_on_exclusive_nodes_too(void **state)
{
    tb_world *w = *state;
    /* The same fleet with every pool on fgd: the paper scores every task.
     * On small the last GPU becomes a fragment (dF = +1000, score 26); on
     * big nothing changes (score 50): big. */
    assert_string_equal(whole_gpu_on_exclusive_nodes(w, GP_SCORE_FGD), "big");
}

/* ---- the paper's other scores ---- */

/* Nodes a and b of 2 MPS GPUs in `pool`; a holds a share of `first` on
 * GPU 0 (placed while b was not there yet). */
static void two_nodes_one_share(tb_world *w, const char *pool, gp_score score, int first)
{
    sb_pool(w, pool, score, 0, 11);
    sb_add_node(w, "a", "H100", 2, MIB, GP_SHARING_MPS, pool);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, first, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(job_gpu_index(w, 1), 0);
    sb_add_node(w, "b", "H100", 2, MIB, GP_SHARING_MPS, pool);
}

static void bestfit_puts_a_share_on_the_fullest_gpu_of_the_fullest_node(void **state)
{
    tb_world *w = *state;
    /* a = (400, 1000), b = (1000, 1000); task 300, cpu 0.
     * score = floor(100 x (1 - (cpu left / 128000 + gpu left / 8000) / 2)):
     * a: (1 + 1100/8000) / 2 = 0.56875 -> 43;  b: (1 + 1700/8000) / 2 =
     * 0.60625 -> 39.  a wins; inside a both GPUs score 43, the fullest GPU
     * that fits (400 left) is taken: GPU 0. */
    two_nodes_one_share(w, "bf", GP_SCORE_BESTFIT, 600);
    submit_mps(w, 2, 300, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "a");
    assert_int_equal(job_gpu_index(w, 2), 0);
}

static void spread_puts_a_share_on_the_emptiest_node(void **state)
{
    tb_world *w = *state;
    /* the same scores negated: b (-39) beats a (-43) */
    two_nodes_one_share(w, "sp", GP_SCORE_SPREAD, 600);
    submit_mps(w, 2, 300, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "b");
}

static void packing_fills_a_shared_gpu_first(void **state)
{
    tb_world *w = *state;
    /* GpuPacking, a = (400, 1000), b = (1000, 1000), task 300:
     *   a GPU 0 (partly used): max(100 - (400 x 100 / 1000) / 10, 50) = 96;
     *   a GPU 1 (a free GPU of a used node): max(50 - 1, 33) = 49;
     *   b (all free): max(33 - 2, 2) = 31.   -> a, GPU 0. */
    two_nodes_one_share(w, "pk", GP_SCORE_PACKING, 600);
    submit_mps(w, 2, 300, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "a");
    assert_int_equal(job_gpu_index(w, 2), 0);
}

static void packing_prefers_a_used_node_to_an_empty_one(void **state)
{
    tb_world *w = *state;
    /* a = (0, 1000) (a full share on GPU 0), b empty: a GPU 1 scores 49,
     * b 31 -> a, GPU 1 */
    two_nodes_one_share(w, "pk", GP_SCORE_PACKING, 1000);
    submit_mps(w, 2, 300, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 2), "a");
    assert_int_equal(job_gpu_index(w, 2), 1);
}

/* Places 8 shares of 100 one tick at a time on 4 one-GPU MPS nodes of a
 * random-score pool; writes the node index of each. */
static void random_run(uint64_t seed, uint32_t nodes_out[8])
{
    tb_world *w = tb_new();
    sb_pool(w, "r", GP_SCORE_RANDOM, 0, seed);
    const char *names[4] = {"r0", "r1", "r2", "r3"};
    for (int i = 0; i < 4; i++)
        sb_add_node(w, names[i], "H100", 1, MIB, GP_SHARING_MPS, "r");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 8; id++) {
        submit_mps(w, id, 100, (int64_t)id);
        assert_int_equal(tb_tick(w, (int64_t)id, GP_DEC_BIND), 1);
        nodes_out[id - 1] = tb_gpu(w, sb_slice(w, id).gpu).node;
    }
    tb_free(w);
}

static void random_with_a_fixed_seed_repeats_its_choices(void **state)
{
    (void)state;
    uint32_t first[8], second[8], other[8];
    random_run(42, first);
    random_run(42, second);
    assert_memory_equal(first, second, sizeof first);
    /* and it does choose: 8 picks from 4 equal nodes use more than one,
     * and another seed picks otherwise */
    int distinct = 0;
    for (int i = 0; i < 8; i++) {
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= first[k] == first[i];
        distinct += !seen;
    }
    assert_true(distinct >= 2);
    random_run(43, other);
    assert_true(memcmp(first, other, sizeof first) != 0);
}

/* 8 one-GPU tasks, one tick each, on 4 equal 8-GPU MPS nodes of an FGD
 * pool: the mix is that one shape, which every node keeps hosting, so
 * every node scores 50 and the fixed node order decides; writes the node
 * of each task. */
static void fgd_cpu_run(uint64_t seed, const char *nodes_out[8])
{
    tb_world *w = tb_new();
    sb_pool(w, "f", GP_SCORE_FGD, 0, seed);
    const char *names[4] = {"f0", "f1", "f2", "f3"};
    for (int i = 0; i < 4; i++)
        sb_add_node(w, names[i], "H100", 8, MIB, GP_SHARING_MPS, "f");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 8; id++) {
        gp_job_spec s = sb_whole_job(id, "org", 1);
        sb_submit(w, &s, (int64_t)id);
        assert_int_equal(tb_tick(w, (int64_t)id, GP_DEC_BIND), 1);
        nodes_out[id - 1] = names[tb_node_index(w, sb_job_node(w, id))];
    }
    tb_free(w);
}

static void equal_scores_go_to_a_fixed_node_order(void **state)
{
    (void)state;
    /* A fresh draw per task would spread 8 tasks over 4 nodes; the fixed
     * order packs them onto one node, for any seed. */
    const char *seen[8];
    for (uint64_t seed = 1; seed <= 5; seed++) {
        fgd_cpu_run(seed, seen);
        for (int i = 1; i < 8; i++)
            assert_string_equal(seen[i], seen[0]);
    }
}

static void default_places_whole_gpus_by_fragmentation_on_mps_only_models(void **state)
{
    tb_world *w = *state;
    /* M = {0.5 GPU with 4 cores}.  Every H100 node is MPS, so a whole GPU
     * is scored too.  "small" (2 GPUs, 8 cores) comes first and has the
     * fewest free GPUs (best fit would take it), but a 1-GPU task with 6
     * cores there leaves 2 cores: the shape no longer fits, its last GPU
     * becomes a fragment (dF = +1000, score 26).  On "big" (4 GPUs, 64
     * cores) nothing changes (score 50): big. */
    gp_workload_shape m = shape(1, 500, 1);
    m.cpu_millis = 4000;
    set_mix(w, &m, 1);
    gp_node_spec small = sb_node_spec("small", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    small.cpu_millis = 8000;
    gp_node_spec big = sb_node_spec("big", "H100", 4, MIB, GP_SHARING_MPS, NULL);
    big.cpu_millis = 64000;
    assert_int_equal(gp_engine_node_add(w->e, &small, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_node_add(w->e, &big, 0, NULL), GP_OK);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec j = sb_whole_job(1, "org", 1);
    j.cpu_millis = 6000;
    sb_submit(w, &j, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 1), "big");
}

/* ---- scores of a share shape, remembered between looks ----
 * Two MPS nodes in pool "p" (fgd, seed 3: "a" comes first in the tie
 * order), "a" with 8 cores, "b" with 16, M = {0.25 GPU, no CPU}.  Share 1
 * (0.25 GPU, 1 core) goes to "a"; its look made the table of its shape.
 * Something then changes on "a" that only the node itself shows; share 3,
 * of the same shape, must see it. */
static void share_on_a(tb_world *w)
{
    sb_pool(w, "p", GP_SCORE_FGD, 0, 3);
    gp_workload_shape m = shape(1, 250, 1);
    set_mix(w, &m, 1);
    gp_node_spec a = sb_node_spec("a", "H100", 2, MIB, GP_SHARING_MPS, "p");
    a.cpu_millis = 8000;
    gp_node_spec b = sb_node_spec("b", "H100", 2, MIB, GP_SHARING_MPS, "p");
    b.cpu_millis = 16000;
    assert_int_equal(gp_engine_node_add(w->e, &a, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_node_add(w->e, &b, 0, NULL), GP_OK);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_mps_job(1, "org", 250, 0);
    s.cpu_millis = 1000;
    sb_submit(w, &s, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 1), "a");
}

/* A share of the shape of share 1, bound at `now`. */
static void submit_share(tb_world *w, uint64_t id, int64_t now)
{
    gp_job_spec s = sb_mps_job(id, "org", 250, 0);
    s.cpu_millis = 1000;
    sb_submit(w, &s, now);
    assert_int_equal(tb_tick(w, now, GP_DEC_BIND), 1);
}

/* CPU-only job 2 (7 cores) at t=10 goes to "a" (fewer free GPUs, fewer
 * cores left) and leaves it none. */
static void fill_a_with_cpu_only_work(tb_world *w)
{
    gp_job_spec c = sb_cpu_job(2, "org", 7000, 0);
    sb_submit(w, &c, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_node(w, "a").cpu_used, 8000);
}

static void a_share_does_not_take_cores_that_cpu_only_work_took_since_its_last_look(void **state)
{
    tb_world *w = *state;
    share_on_a(w);
    fill_a_with_cpu_only_work(w); /* share 3 needs a core: "b" */
    submit_share(w, 3, 20);
    assert_string_equal(sb_job_node(w, 3), "b");
}

static void a_share_does_not_go_to_a_node_drained_since_its_last_look(void **state)
{
    tb_world *w = *state;
    share_on_a(w);
    gp_error err;
    gp_error_clear(&err);
    assert_int_equal(gp_engine_node_drain(w->e, "a", true, 10, &err), GP_OK);
    submit_share(w, 3, 20);
    assert_string_equal(sb_job_node(w, 3), "b");
}

static void a_share_goes_back_to_room_freed_since_its_last_look(void **state)
{
    tb_world *w = *state;
    share_on_a(w);
    /* with "a" full of CPU-only work share 4's look finds "b" ... */
    fill_a_with_cpu_only_work(w);
    submit_share(w, 4, 20);
    assert_string_equal(sb_job_node(w, 4), "b");
    /* ... and once the CPU-only job ends, share 3 goes back to "a" (first
     * in the tie order, and equal to "b" now). */
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 30);
    submit_share(w, 3, 40);
    assert_string_equal(sb_job_node(w, 3), "a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(workload_set_refuses_shapes_out_of_range),
        TB_TEST(a_refused_workload_set_changes_nothing),
        TB_TEST(the_learned_mix_keeps_the_shapes_that_make_up_95_percent),
        TB_TEST(an_empty_fleet_and_a_fitting_mix_have_no_fragmentation),
        TB_TEST(cpu_only_shapes_and_other_types_count_all_free_gpus),
        TB_TEST(owned_lost_and_draining_capacity_is_not_counted),
        TB_TEST(fragmentation_of_the_header_example_is_300_then_100),
        TB_TEST(fgd_puts_a_half_gpu_task_where_fragmentation_grows_least),
        TB_TEST(default_score_takes_the_least_growth_before_the_fuller_node),
        TB_TEST(default_places_whole_gpus_on_exclusive_nodes_by_best_fit),
        TB_TEST(fgd_pool_scores_whole_gpus_on_exclusive_nodes_too),
        TB_TEST(bestfit_puts_a_share_on_the_fullest_gpu_of_the_fullest_node),
        TB_TEST(spread_puts_a_share_on_the_emptiest_node),
        TB_TEST(packing_fills_a_shared_gpu_first),
        TB_TEST(packing_prefers_a_used_node_to_an_empty_one),
        cmocka_unit_test(random_with_a_fixed_seed_repeats_its_choices),
        cmocka_unit_test(equal_scores_go_to_a_fixed_node_order),
        TB_TEST(default_places_whole_gpus_by_fragmentation_on_mps_only_models),
        TB_TEST(a_share_does_not_take_cores_that_cpu_only_work_took_since_its_last_look),
        TB_TEST(a_share_does_not_go_to_a_node_drained_since_its_last_look),
        TB_TEST(a_share_goes_back_to_room_freed_since_its_last_look),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
