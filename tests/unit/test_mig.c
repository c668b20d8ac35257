/* test_mig.c - MIG geometry through the engine: profiles, placements, layouts.
 *
 * Semantics under test (src/core/mig.c, docs/sharing.md "MIG geometry"):
 * a MIG GPU has 8 memory slices; a profile takes `size` of them from one of
 * its allowed starts (NVIDIA's table, repeated independently in
 * tests/support/sharing_builder.h); two instances never share a memory
 * slice; an instance counts floor(1000 x compute / 7) milli-GPUs.
 *
 * Everything is driven through the public API: a node of MIG GPUs, jobs
 * asking for a profile, then the RECONFIGURE layout string, the job's
 * slice (gp_engine_job_slices) and the GPU's used_milli.
 *
 * Where a lone instance goes on an empty GPU (mig.c: among the allowed
 * starts, the one that keeps the most instances of every profile
 * placeable).  Count, for each profile, how many more instances still fit
 * by first fit (1g, 1g double, 2g, 3g, 4g; 7g never fits beside anything):
 *   1g at 0..3:  6 + 3 + 2 + 1 + 0 = 12     1g at 4, 5: 6 + 3 + 2 + 1 + 1 = 13
 *   1g at 6:     6 + 3 + 3 + 1 + 1 = 14  -> start 6
 *   2-slice at 0 or 2: 5 + 3 + 2 + 1 + 0 = 11;  at 4: 5 + 3 + 2 + 1 + 1 = 12;
 *   at 6 (1g double only): 6 + 3 + 3 + 1 + 1 = 14
 *                 -> 1g double at 6, 2g at 4
 *   3g at 0: 3 + 2 + 1 + 1 + 0 = 7;  at 4: 4 + 2 + 2 + 1 + 1 = 10 -> start 4
 *   4g, 7g: only start 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"
#include "support/sharing_builder.h"

/* Profile order of the tables: 1g, 1g double memory, 2g, 3g, 4g, 7g. */
static const int empty_gpu_start[SB_MIG_PROFILES] = {6, 6, 4, 4, 0, 0};

static const sb_mig_model *model(const char *name)
{
    for (int m = 0; m < SB_MIG_MODELS; m++)
        if (strcmp(sb_mig_models[m].name, name) == 0)
            return &sb_mig_models[m];
    fail_msg("no model %s", name);
    return NULL;
}

static tb_world *mig_world(const sb_mig_model *m, int gpus)
{
    tb_world *w = tb_new();
    sb_add_node(w, "m0", m->gpu_type, gpus, m->gpu_mem_mib, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    return w;
}

static void submit_mig(tb_world *w, uint64_t id, const char *profile, int64_t now)
{
    gp_job_spec s = sb_mig_job(id, "org", profile);
    sb_submit(w, &s, now);
}

/* ---- one instance on an empty GPU ---- */

static void each_profile_lands_on_an_empty_gpu(const sb_mig_model *m)
{
    for (int p = 0; p < SB_MIG_PROFILES; p++) {
        const sb_mig_profile *prof = &m->profiles[p];
        tb_world *w = mig_world(m, 1);
        submit_mig(w, 1, prof->name, 0);
        assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
        assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 1);
        const gp_decision *rc = sb_reconfigure(w, 0);
        char want[64];
        snprintf(want, sizeof want, "%s@%d", prof->name, empty_gpu_start[p]);
        assert_string_equal(rc->mig_layout, want);
        assert_string_equal(rc->node, "m0");
        assert_int_equal(rc->gpu_index, 0);
        assert_int_equal(rc->time, 0);
        gp_slice s = sb_slice(w, 1);
        assert_int_equal(s.kind, GP_ISO_MIG);
        assert_string_equal(s.mig_profile, prof->name);
        assert_int_equal(s.mig_start, empty_gpu_start[p]);
        assert_true(prof->starts >> s.mig_start & 1u);
        assert_int_equal(s.milli, sb_mig_milli(prof->compute));
        assert_int_equal(s.gpu_mem_mib, m->gpu_mem_mib * prof->size / 8);
        assert_string_equal(tb_gpu(w, s.gpu).mig_layout, want);
        assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
        sb_assert_sharing_consistent(w, m->gpu_mem_mib);
        tb_free(w);
    }
}

static void a100_40gb_places_each_profile_on_an_empty_gpu(void **state)
{
    (void)state;
    each_profile_lands_on_an_empty_gpu(model("A100-40GB"));
}

static void a100_80gb_places_each_profile_on_an_empty_gpu(void **state)
{
    (void)state;
    each_profile_lands_on_an_empty_gpu(model("A100-80GB"));
}

static void h100_80gb_places_each_profile_on_an_empty_gpu(void **state)
{
    (void)state;
    each_profile_lands_on_an_empty_gpu(model("H100-80GB"));
}

static void h200_141gb_places_each_profile_on_an_empty_gpu(void **state)
{
    (void)state;
    each_profile_lands_on_an_empty_gpu(model("H200-141GB"));
}

/* ---- every allowed placement: fill a GPU with one profile ---- */

/* n instances of a profile with n allowed starts tile the GPU, so filling
 * it uses every allowed start exactly once (1g: 0-6, 1g double: 0 2 4 6,
 * 2g: 0 2 4, 3g: 0 4, 4g: 0, 7g: 0); one more of the profile waits. */
static void each_profile_fills_the_gpu_at_every_allowed_start(const sb_mig_model *m)
{
    for (int p = 0; p < SB_MIG_PROFILES; p++) {
        const sb_mig_profile *prof = &m->profiles[p];
        int n = __builtin_popcount(prof->starts);
        tb_world *w = mig_world(m, 1);
        for (int i = 1; i <= n + 1; i++)
            submit_mig(w, (uint64_t)i, prof->name, 0);
        assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), n);
        assert_int_equal(tb_state(w, (uint64_t)n + 1), GP_JOB_PENDING);
        unsigned starts = 0;
        for (int i = 1; i <= n; i++) {
            gp_slice s = sb_slice(w, (uint64_t)i);
            assert_false(starts >> s.mig_start & 1u); /* no start used twice */
            starts |= 1u << s.mig_start;
        }
        assert_int_equal(starts, prof->starts);
        uint32_t gpu = sb_slice(w, 1).gpu;
        assert_int_equal(sb_assert_mig_layout_valid(w, gpu, m), n);
        assert_int_equal(tb_gpu(w, gpu).used_milli, n * sb_mig_milli(prof->compute)); /* 7 x 142 = 994 for 1g */
        /* long after the rate limit: still no room, nothing changes */
        assert_int_equal(tb_tick(w, 1000, GP_DEC_BIND), 0);
        assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
        assert_int_equal(tb_state(w, (uint64_t)n + 1), GP_JOB_PENDING);
        sb_assert_sharing_consistent(w, m->gpu_mem_mib);
        tb_free(w);
    }
}

static void a100_40gb_fills_with_each_profile_at_every_allowed_start(void **state)
{
    (void)state;
    each_profile_fills_the_gpu_at_every_allowed_start(model("A100-40GB"));
}

static void a100_80gb_fills_with_each_profile_at_every_allowed_start(void **state)
{
    (void)state;
    each_profile_fills_the_gpu_at_every_allowed_start(model("A100-80GB"));
}

static void h100_80gb_fills_with_each_profile_at_every_allowed_start(void **state)
{
    (void)state;
    each_profile_fills_the_gpu_at_every_allowed_start(model("H100-80GB"));
}

static void h200_141gb_fills_with_each_profile_at_every_allowed_start(void **state)
{
    (void)state;
    each_profile_fills_the_gpu_at_every_allowed_start(model("H200-141GB"));
}

/* ---- full mixed layouts ---- */

/* Submits the profiles (ids 1..n, placed in id order within one pass),
 * expects all bound with exactly `layout` (as a set), then a 1g of the
 * model waits: the GPU is full. */
static void layout_fits_exactly(const sb_mig_model *m, const char *const *profiles, int n,
                                const char *const *expected, const int *starts)
{
    tb_world *w = mig_world(m, 1);
    for (int i = 0; i < n; i++)
        submit_mig(w, (uint64_t)i + 1, profiles[i], 0);
    submit_mig(w, 99, m->profiles[0].name, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), n);
    assert_int_equal(tb_state(w, 99), GP_JOB_PENDING);
    uint32_t gpu = sb_slice(w, 1).gpu;
    unsigned mask = 0;
    char why[256];
    gp_gpu_info g = tb_gpu(w, gpu);
    int count = sb_mig_layout_parse(m, g.mig_layout, NULL, 0, &mask, why, sizeof why);
    if (count < 0)
        fail_msg("%s", why);
    assert_int_equal(count, n);
    for (int i = 0; i < n; i++) {
        if (!sb_mig_layout_has(g.mig_layout, expected[i], starts[i]))
            fail_msg("layout \"%s\" lacks %s@%d", g.mig_layout, expected[i], starts[i]);
        assert_int_equal(sb_slice(w, (uint64_t)i + 1).mig_start, starts[i]);
    }
    assert_int_equal(tb_tick(w, 500, GP_DEC_BIND), 0);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    sb_assert_sharing_consistent(w, m->gpu_mem_mib);
    tb_free(w);
}

static void seven_1g_instances_fill_an_h100(void **state)
{
    (void)state;
    /* 1g goes to 6, then to the start keeping most: the seven end on 0..6 */
    const char *p[] = {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"};
    tb_world *w = mig_world(model("H100-80GB"), 1);
    for (int i = 0; i < 7; i++)
        submit_mig(w, (uint64_t)i + 1, p[i], 0);
    submit_mig(w, 8, "1g.10gb", 0);  /* slice 7 is free, but no 1g starts there */
    submit_mig(w, 9, "1g.20gb", 0);  /* 6-7: 6 is taken */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 7);
    assert_int_equal(tb_state(w, 8), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 9), GP_JOB_PENDING);
    unsigned mask = 0;
    char why[256];
    assert_int_equal(sb_mig_layout_parse(model("H100-80GB"), tb_gpu(w, 0).mig_layout, NULL, 0, &mask, why,
                                         sizeof why),
                     7);
    assert_int_equal(mask, 0x7f); /* slices 0-6 */
    assert_int_equal(tb_gpu(w, 0).used_milli, 994); /* 7 x 142, never more than 1000 */
    tb_free(w);
}

static void three_g_and_three_g_fill_an_h100(void **state)
{
    (void)state;
    /* the first 3g goes to 4 (keeps 10 vs 7), the second to 0 */
    const char *p[] = {"3g.40gb", "3g.40gb"};
    const char *e[] = {"3g.40gb", "3g.40gb"};
    const int s[] = {4, 0};
    layout_fits_exactly(model("H100-80GB"), p, 2, e, s);
}

static void four_g_and_three_g_fill_an_h100(void **state)
{
    (void)state;
    const char *p[] = {"4g.40gb", "3g.40gb"};
    const int s[] = {0, 4};
    layout_fits_exactly(model("H100-80GB"), p, 2, p, s);
}

static void three_g_then_two_2g_fill_an_h100(void **state)
{
    (void)state;
    /* 3g first (id 1): at 4.  Then 2g: starts 0 and 2 keep the same count
     * (1g: 2, 1g double: 1, 2g: 1 = 4 each); the lower start wins the tie,
     * so 2g@0 and the next 2g@2.  (In the other order the first 2g takes
     * 4, where it keeps a 4g possible, and the 3g no longer fits.) */
    const char *p[] = {"3g.40gb", "2g.20gb", "2g.20gb"};
    const int s[] = {4, 0, 2};
    layout_fits_exactly(model("H100-80GB"), p, 3, p, s);
}

static void four_1g_20gb_fill_an_a100_80gb(void **state)
{
    (void)state;
    /* 1g.20gb takes 2 slices: 6 first (keeps 14), then 4, 2, 0 in some order */
    const sb_mig_model *m = model("A100-80GB");
    tb_world *w = mig_world(m, 1);
    for (int i = 1; i <= 5; i++)
        submit_mig(w, (uint64_t)i, "1g.20gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    assert_int_equal(tb_state(w, 5), GP_JOB_PENDING);
    assert_int_equal(sb_slice(w, 1).mig_start, 6);
    unsigned mask = 0;
    char why[256];
    assert_int_equal(sb_mig_layout_parse(m, tb_gpu(w, 0).mig_layout, NULL, 0, &mask, why, sizeof why), 4);
    assert_int_equal(mask, 0xff);
    for (int start = 0; start < 8; start += 2)
        assert_true(sb_mig_layout_has(tb_gpu(w, 0).mig_layout, "1g.20gb", start));
    assert_int_equal(tb_gpu(w, 0).used_milli, 4 * 142);
    tb_free(w);
}

/* ---- overlaps never happen ---- */

static void an_instance_overlapping_a_running_one_waits(void **state)
{
    (void)state;
    /* 3g@4 runs (slices 4-7).  7g needs 0-7: waits.  4g@0 (0-3) fits.
     * Then nothing is free: a 1g waits too. */
    const sb_mig_model *m = model("H100-80GB");
    tb_world *w = mig_world(m, 1);
    submit_mig(w, 1, "3g.40gb", 0);
    submit_mig(w, 2, "7g.80gb", 0);
    submit_mig(w, 3, "4g.40gb", 0);
    submit_mig(w, 4, "1g.10gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 4), GP_JOB_PENDING);
    assert_int_equal(sb_slice(w, 1).mig_start, 4);
    assert_int_equal(sb_slice(w, 3).mig_start, 0);
    assert_int_equal(sb_assert_mig_layout_valid(w, 0, m), 2);
    for (int64_t t = 60; t <= 600; t += 60) { /* no change ever makes room */
        assert_int_equal(tb_tick(w, t, GP_DEC_BIND), 0);
        assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
        assert_int_equal(sb_assert_mig_layout_valid(w, 0, m), 2);
    }
    sb_assert_sharing_consistent(w, m->gpu_mem_mib);
    tb_free(w);
}

static void a_4g_waits_while_a_1g_runs_in_its_slices(void **state)
{
    (void)state;
    /* 3g@4 and a 1g somewhere in 0-3: a 4g (only at 0, slices 0-3) must wait */
    const sb_mig_model *m = model("H100-80GB");
    tb_world *w = mig_world(m, 1);
    submit_mig(w, 1, "3g.40gb", 0);
    submit_mig(w, 2, "1g.10gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_true(sb_slice(w, 2).mig_start < 4);
    submit_mig(w, 3, "4g.40gb", 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 0);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    assert_int_equal(sb_assert_mig_layout_valid(w, 0, m), 2);
    tb_free(w);
}

/* ---- compute shares ---- */

static void instances_count_floor_of_their_compute_sevenths(void **state)
{
    (void)state;
    /* placed in id order, best fit (the fullest GPU with room first):
     * g0: 4g@0 + 3g@4 = 571 + 428 = 999; g1: 7g = 1000; g2: 2g = 285 */
    const sb_mig_model *m = model("H100-80GB");
    tb_world *w = mig_world(m, 3);
    submit_mig(w, 1, "4g.40gb", 0);
    submit_mig(w, 2, "3g.40gb", 0);
    submit_mig(w, 3, "7g.80gb", 0);
    submit_mig(w, 4, "2g.20gb", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    assert_int_equal(sb_slice(w, 1).milli, 571);
    assert_int_equal(sb_slice(w, 2).milli, 428);
    assert_int_equal(sb_slice(w, 3).milli, 1000);
    assert_int_equal(sb_slice(w, 4).milli, 285);
    assert_int_equal(sb_slice(w, 1).gpu, sb_slice(w, 2).gpu);
    assert_int_equal(tb_gpu(w, sb_slice(w, 1).gpu).used_milli, 999);
    assert_int_equal(tb_gpu(w, sb_slice(w, 3).gpu).used_milli, 1000);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 571 + 428 + 1000 + 285);
    sb_assert_sharing_consistent(w, m->gpu_mem_mib);
    tb_free(w);
}

static void tenant_usage_counts_a_1g_instance_as_142_until_it_ends(void **state)
{
    (void)state;
    tb_world *w = mig_world(model("H100-80GB"), 1);
    submit_mig(w, 1, "1g.10gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 142);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 0);
    assert_int_equal(tb_gpu(w, 0).used_milli, 0);
    tb_free(w);
}

static void usage_interval_of_a_1g_instance_carries_142_milli(void **state)
{
    (void)state;
    /* 1g from t=0 to t=100: 142 mGPU x 100 s = 14,200 mGPU-s (docs/sharing.md:
     * "Usage intervals carry the slice's mGPU") */
    tb_world *w = mig_world(model("H100-80GB"), 1);
    submit_mig(w, 1, "1g.10gb", 0);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 0);
    assert_int_equal(sb_usage_open_milli(w, 1), 142);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 100);
    assert_int_equal(sb_metered_milli_seconds(w, 100), 14200);
    tb_free(w);
}

/* ---- profiles and models ---- */

static void unknown_profile_is_refused_at_submit(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    const char *bad[] = {"5g.50gb", "", "1g.10gb+me", "1G.10GB", "7g"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gp_job_spec s = sb_mig_job(10 + i, "org", bad[i]);
        sb_submit_refused(w, &s, 0, "share.mig");
    }
    gp_job_spec s = sb_mig_job(20, "org", "1g.10gb");
    memset(s.share.mig_profile, 'x', sizeof s.share.mig_profile); /* no terminating NUL */
    sb_submit_refused(w, &s, 0, "share.mig");
    assert_int_equal(tb_jobs_in_state(w, NULL, GP_JOB_PENDING), 0);
}

static void a_profile_of_another_model_never_lands_on_the_gpu(void **state)
{
    tb_world *w = *state;
    /* 1g.5gb (A100-40GB) and 1g.18gb (H200) are known names but no H100
     * profile: accepted at submit, never placed on the H100 */
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec a = sb_mig_job(1, "org", "1g.5gb"), b = sb_mig_job(2, "org", "1g.18gb");
    sb_submit(w, &a, 0);
    sb_submit(w, &b, 0);
    for (int64_t t = 0; t <= 300; t += 100) {
        assert_int_equal(tb_tick(w, t, GP_DEC_BIND), 0);
        assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    }
    assert_string_equal(tb_gpu(w, 0).mig_layout, "");
    /* an A100-40GB joins: the 1g.5gb goes there, the 1g.18gb still waits */
    sb_add_node(w, "a0", "A100", 1, SB_A100_40_MIB, GP_SHARING_MIG, NULL);
    assert_int_equal(tb_tick(w, 400, GP_DEC_BIND), 1);
    assert_string_equal(sb_job_node(w, 1), "a0");
    assert_int_equal(sb_slice(w, 1).gpu_mem_mib, SB_A100_40_MIB / 8);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_string_equal(tb_gpu(w, 0).mig_layout, "");
}

static void one_g_10gb_takes_two_slices_on_an_a100_40gb_and_one_on_an_h100(void **state)
{
    tb_world *w = *state;
    /* the same name is the double-memory 1g on A100-40GB (starts 0 2 4 6,
     * 2 x 5 GB) and the plain 1g on H100 (starts 0-6, 1 x 10 GB): both 10 GB */
    sb_add_node(w, "a0", "A100", 1, SB_A100_40_MIB, GP_SHARING_MIG, NULL);
    sb_add_node(w, "h0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec a = sb_mig_job(1, "org", "1g.10gb");
    a.n_gpu_types = 1;
    a.gpu_types[0] = "A100";
    gp_job_spec h = sb_mig_job(2, "org", "1g.10gb");
    h.n_gpu_types = 1;
    h.gpu_types[0] = "H100";
    sb_submit(w, &a, 0);
    sb_submit(w, &h, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    gp_slice sa = sb_slice(w, 1), sh = sb_slice(w, 2);
    assert_int_equal(sa.gpu_mem_mib, 10240);  /* 40960 x 2 / 8 */
    assert_int_equal(sh.gpu_mem_mib, 10240);  /* 81920 x 1 / 8 */
    assert_int_equal(sa.mig_start, 6);        /* even start, slices 6-7 */
    assert_int_equal(sh.mig_start, 6);
    assert_int_equal(sa.milli, 142);
    assert_int_equal(sh.milli, 142);
    unsigned mask = 0;
    char why[256];
    assert_int_equal(sb_mig_layout_parse(model("A100-40GB"), tb_gpu(w, sa.gpu).mig_layout, NULL, 0, &mask, why,
                                         sizeof why),
                     1);
    assert_int_equal(mask, 0xc0);
}

static void mig_mode_without_mig_geometry_is_refused(void **state)
{
    tb_world *w = *state;
    struct {
        const char *type;
        int64_t mem;
    } bad[] = {{"L40S", 49152}, {"A100", 24576}, {"H100", 98304}, {"H200", 98304}, {"T4", 16384}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gp_node_spec s = sb_node_spec("x0", bad[i].type, 2, bad[i].mem, GP_SHARING_MIG, NULL);
        gp_error err;
        gp_error_clear(&err);
        assert_int_equal(gp_engine_node_add(w->e, &s, 0, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "sharing");
    }
    /* per-GPU modes: one MIG GPU on an L40S is enough to refuse the node */
    gp_sharing modes[2] = {GP_SHARING_MPS, GP_SHARING_MIG};
    gp_node_spec s = sb_node_spec("x1", "L40S", 2, 49152, GP_SHARING_EXCLUSIVE, NULL);
    s.gpu_sharing = modes;
    gp_error err;
    gp_error_clear(&err);
    assert_int_equal(gp_engine_node_add(w->e, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "sharing");
    assert_int_equal(gp_engine_node_count(w->e), 0);
    /* the same GPUs in MPS mode are fine */
    sb_add_node(w, "x2", "L40S", 2, 49152, GP_SHARING_MPS, NULL);
    assert_int_equal(gp_engine_node_count(w->e), 1);
}

static void a_mig_gpu_takes_no_whole_gpu_job(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 2, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_whole_job(1, "org", 1);
    sb_submit(w, &s, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).job, 0);
}

/* ---- MIG jobs and failures ---- */

static void a_mig_job_on_a_lost_node_is_requeued_and_its_instance_freed(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mig(w, 1, "3g.40gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_node_lost(w->e, "m0", 10, NULL), GP_OK);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_STOP), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).used_milli, 0);
    assert_int_equal(tb_gpu(w, 0).jobs, 0);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 0);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void a_mig_job_on_a_gpu_that_turns_unhealthy_is_requeued(void **state)
{
    tb_world *w = *state;
    /* docs/scheduling.md: "a GPU turning unhealthy under a job: the whole
     * job is stopped at once (STOP, grace 0) and requeued" */
    sb_add_node(w, "m0", "H100", 2, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mig(w, 1, "3g.40gb", 0);
    tb_tick(w, 0, GP_DEC_BIND);
    int index = tb_gpu(w, sb_slice(w, 1).gpu).index;
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_gpu_health(w->e, "m0", index, false, 10, NULL), GP_OK);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_STOP), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
    /* the next pass puts it on the healthy GPU */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_not_equal(tb_gpu(w, sb_slice(w, 1).gpu).index, index);
}

/* ---- claims during a reclaim (docs/sharing.md "Claims during a reclaim") ---- */

/* One H100 in MIG mode, full: b borrows 4g.40gb@0 (grace 120); x runs
 * 2g.20gb@4 and y 1g.20gb@6 at priority 1 (never the victims); g holds a
 * guarantee of 1.  All placed at t=0 (one layout change). */
static void a_full_mig_gpu_with_a_borrower(tb_world *w)
{
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    const char *tenants[] = {"b", "x", "y", "o"};
    for (int i = 0; i < 4; i++)
        sb_tenant(w, tenants[i], GP_TRUST_TRUSTED);
    tb_tenant(w, "g", "H100", 1, -1);
    gp_job_spec borrower = sb_mig_job(1, "b", "4g.40gb");
    borrower.checkpoint_grace_s = 120;
    sb_submit(w, &borrower, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_job_spec x = sb_mig_job(2, "x", "2g.20gb"), y = sb_mig_job(3, "y", "1g.20gb");
    x.priority = y.priority = 1;
    sb_submit(w, &x, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    sb_submit(w, &y, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(sb_slice(w, 1).mig_start, 0);
    assert_int_equal(sb_slice(w, 2).mig_start, 4);
    assert_int_equal(sb_slice(w, 3).mig_start, 6);
}

static void a_mig_reclaim_claims_its_slices_and_others_use_the_free_ones(void **state)
{
    tb_world *w = *state;
    /* t=100: g's 3g.40gb (slices 0-3 or 4-7) reclaims b's 4g and claims
     * slices 0-3 only.  t=105: x ends, its 2g instance at 4-5 is idle;
     * g's 3g does not fit there (y holds 6-7).  t=110: o's 2g.20gb takes
     * that instance during the grace (before, the whole GPU was claimed).
     * t=220: g binds on its claimed slices. */
    a_full_mig_gpu_with_a_borrower(w);
    gp_job_spec mine = sb_mig_job(4, "g", "3g.40gb");
    sb_submit(w, &mine, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_find(w, 1, GP_DEC_PREEMPT)->by_job, 4);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 105);
    gp_job_spec other = sb_mig_job(5, "o", "2g.20gb");
    sb_submit(w, &other, 110);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 5), GP_JOB_RUNNING);
    assert_int_equal(sb_slice(w, 5).mig_start, 4);
    assert_int_equal(tb_state(w, 4), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
    tb_tick(w, 220, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 4), GP_JOB_RUNNING);
    assert_int_equal(sb_slice(w, 4).mig_start, 0);
    assert_true(sb_mig_layout_has(tb_gpu(w, 0).mig_layout, "3g.40gb", 0));
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void a_reclaimer_binds_on_its_claim_even_where_a_fresh_look_would_not(void **state)
{
    tb_world *w = *state;
    /* Two H100 in MIG mode.  GPU 0 as above (b's 4g@0 borrowed, x 2g@4,
     * y 1g.20gb@6); GPU 1 full with v's 4g@0 and z's 3g.40gb@4, both at
     * priority 1.  g's 3g.40gb reclaims b and claims slices 0-3 of GPU 0.
     * z ends at t=220, just as the grace does: a fresh look would reuse
     * z's idle 3g on GPU 1 (no layout change), but g binds on its claim. */
    sb_add_node(w, "m0", "H100", 2, SB_H100_MIB, GP_SHARING_MIG, NULL);
    const char *tenants[] = {"b", "x", "y", "v", "z"};
    for (int i = 0; i < 5; i++)
        sb_tenant(w, tenants[i], GP_TRUST_TRUSTED);
    tb_tenant(w, "g", "H100", 1, -1);
    const char *profiles[] = {"4g.40gb", "2g.20gb", "1g.20gb", "4g.40gb", "3g.40gb"};
    for (int i = 0; i < 5; i++) {
        gp_job_spec s = sb_mig_job((uint64_t)i + 1, tenants[i], profiles[i]);
        s.priority = i == 0 ? 0 : 1;
        s.checkpoint_grace_s = 120;
        sb_submit(w, &s, 0);
        assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    }
    uint32_t gpu0 = sb_slice(w, 1).gpu;
    assert_int_equal(sb_slice(w, 2).gpu, gpu0);
    assert_int_equal(sb_slice(w, 3).gpu, gpu0);
    assert_int_not_equal(sb_slice(w, 5).gpu, gpu0);
    gp_job_spec mine = sb_mig_job(6, "g", "3g.40gb");
    sb_submit(w, &mine, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_find(w, 1, GP_DEC_PREEMPT)->by_job, 6);
    tb_finish(w, 5, GP_EXIT_SUCCEEDED, 220);
    tb_tick(w, 220, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 6), GP_JOB_RUNNING);
    assert_int_equal(sb_slice(w, 6).gpu, gpu0);
    assert_int_equal(sb_slice(w, 6).mig_start, 0);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void a_layout_change_that_would_delay_a_claim_waits_for_its_grace_end(void **state)
{
    /* As above, but o asks for a 1g.10gb, which needs a layout change (the
     * idle 2g destroyed).  At t=110 that is allowed: g may still change the
     * layout at its grace end, t=220 (110 + 60 <= 220).  At t=170 it would
     * not be (170 + 60 > 220): o waits, and at t=220 both change the
     * layout at the same moment. */
    for (int64_t at = 110; at <= 170; at += 60) {
        tb_world *v = tb_new();
        a_full_mig_gpu_with_a_borrower(v);
        gp_job_spec mine = sb_mig_job(4, "g", "3g.40gb");
        sb_submit(v, &mine, 100);
        assert_int_equal(tb_tick(v, 100, GP_DEC_PREEMPT), 1);
        tb_finish(v, 2, GP_EXIT_SUCCEEDED, 105);
        gp_job_spec other = sb_mig_job(5, "o", "1g.10gb");
        sb_submit(v, &other, at);
        assert_int_equal(tb_tick(v, at, GP_DEC_BIND), at == 110 ? 1 : 0);
        sb_assert_sharing_consistent(v, SB_H100_MIB);
        assert_int_equal(tb_tick(v, 220, GP_DEC_BIND), at == 110 ? 1 : 2);
        assert_int_equal(tb_state(v, 4), GP_JOB_RUNNING);
        assert_int_equal(tb_state(v, 5), GP_JOB_RUNNING);
        assert_int_equal(sb_slice(v, 4).mig_start, 0);
        sb_assert_sharing_consistent(v, SB_H100_MIB);
        tb_free(v);
    }
    (void)state;
}

static void an_untrusted_tenants_mig_claim_keeps_others_off_the_gpu(void **state)
{
    tb_world *w = *state;
    /* b borrows 4g.40gb@0 of the only MIG GPU (grace 120); g is untrusted
     * and may not share b's GPU, so its 3g.40gb reclaims it and claims
     * slices 4-7 (a new instance beside b's idle one beats destroying
     * it).  The claim stands for g's instance: o's 2g.20gb may not take
     * the free slices beside it, during the grace or after. */
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "b", GP_TRUST_TRUSTED);
    sb_tenant(w, "o", GP_TRUST_TRUSTED);
    gp_tenant_spec untrusted = tb_tenant_spec("H100", 1, -1);
    untrusted.trust = GP_TRUST_UNTRUSTED;
    assert_int_equal(tb_tenant_try(w, "g", &untrusted, NULL), GP_OK);
    gp_job_spec borrower = sb_mig_job(1, "b", "4g.40gb");
    borrower.checkpoint_grace_s = 120;
    sb_submit(w, &borrower, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_job_spec mine = sb_mig_job(2, "g", "3g.40gb");
    sb_submit(w, &mine, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    gp_job_spec other = sb_mig_job(3, "o", "2g.20gb");
    sb_submit(w, &other, 110);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 0);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
    assert_int_equal(tb_tick(w, 220, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_int_equal(sb_slice(w, 2).mig_start, 4);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, SB_H100_MIB);
}

static void share_fit_suggests_the_smallest_mig_profile_and_mps_share_that_cover_use(void **state)
{
    (void)state;
    gp_share_fit_out f;
    assert_true(gp_share_fit("H100", SB_H100_MIB, 9, 6000, &f));
    assert_string_equal(f.mig, "1g.10gb");
    assert_int_equal(f.mps_pct, 10);
    /* 20 % SM needs 2 sevenths; 30,000 MiB needs 4 memory slices: 3g.40gb */
    assert_true(gp_share_fit("H100", SB_H100_MIB, 20, 30000, &f));
    assert_string_equal(f.mig, "3g.40gb");
    assert_int_equal(f.mps_pct, 40);
    /* a busy job fits only the whole GPU */
    assert_true(gp_share_fit("H100", SB_H100_MIB, 95, 1000, &f));
    assert_string_equal(f.mig, "7g.80gb");
    assert_int_equal(f.mps_pct, 95);
    /* an idle job still gets the smallest share, never 0 */
    assert_true(gp_share_fit("H100", SB_H100_MIB, 0, 0, &f));
    assert_string_equal(f.mig, "1g.10gb");
    assert_int_equal(f.mps_pct, 5);
}

static void share_fit_offers_no_mig_profile_on_a_gpu_without_mig_and_refuses_bad_input(void **state)
{
    (void)state;
    gp_share_fit_out f;
    assert_true(gp_share_fit("L40S", 46068, 12, 2000, &f));
    assert_string_equal(f.mig, "");
    assert_int_equal(f.mps_pct, 15);
    assert_false(gp_share_fit("H100", 0, 10, 10, &f));
    assert_false(gp_share_fit("H100", SB_H100_MIB, -1, 10, &f));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a100_40gb_places_each_profile_on_an_empty_gpu),
        cmocka_unit_test(a100_80gb_places_each_profile_on_an_empty_gpu),
        cmocka_unit_test(h100_80gb_places_each_profile_on_an_empty_gpu),
        cmocka_unit_test(h200_141gb_places_each_profile_on_an_empty_gpu),
        cmocka_unit_test(a100_40gb_fills_with_each_profile_at_every_allowed_start),
        cmocka_unit_test(a100_80gb_fills_with_each_profile_at_every_allowed_start),
        cmocka_unit_test(h100_80gb_fills_with_each_profile_at_every_allowed_start),
        cmocka_unit_test(h200_141gb_fills_with_each_profile_at_every_allowed_start),
        cmocka_unit_test(seven_1g_instances_fill_an_h100),
        cmocka_unit_test(three_g_and_three_g_fill_an_h100),
        cmocka_unit_test(four_g_and_three_g_fill_an_h100),
        cmocka_unit_test(three_g_then_two_2g_fill_an_h100),
        cmocka_unit_test(four_1g_20gb_fill_an_a100_80gb),
        cmocka_unit_test(an_instance_overlapping_a_running_one_waits),
        cmocka_unit_test(a_4g_waits_while_a_1g_runs_in_its_slices),
        cmocka_unit_test(instances_count_floor_of_their_compute_sevenths),
        cmocka_unit_test(tenant_usage_counts_a_1g_instance_as_142_until_it_ends),
        cmocka_unit_test(usage_interval_of_a_1g_instance_carries_142_milli),
        TB_TEST(unknown_profile_is_refused_at_submit),
        TB_TEST(a_profile_of_another_model_never_lands_on_the_gpu),
        TB_TEST(one_g_10gb_takes_two_slices_on_an_a100_40gb_and_one_on_an_h100),
        TB_TEST(mig_mode_without_mig_geometry_is_refused),
        TB_TEST(a_mig_gpu_takes_no_whole_gpu_job),
        TB_TEST(a_mig_job_on_a_lost_node_is_requeued_and_its_instance_freed),
        TB_TEST(a_mig_job_on_a_gpu_that_turns_unhealthy_is_requeued),
        TB_TEST(a_mig_reclaim_claims_its_slices_and_others_use_the_free_ones),
        TB_TEST(a_reclaimer_binds_on_its_claim_even_where_a_fresh_look_would_not),
        cmocka_unit_test(a_layout_change_that_would_delay_a_claim_waits_for_its_grace_end),
        TB_TEST(an_untrusted_tenants_mig_claim_keeps_others_off_the_gpu),
        cmocka_unit_test(share_fit_suggests_the_smallest_mig_profile_and_mps_share_that_cover_use),
        cmocka_unit_test(share_fit_offers_no_mig_profile_on_a_gpu_without_mig_and_refuses_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
