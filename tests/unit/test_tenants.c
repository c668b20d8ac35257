/* test_tenants.c - the tenancy tree: creation, quota fit, update, removal,
 * path syntax, trust inheritance and default weights.
 *
 * Semantics under test (docs/scheduling.md, "Tenants and quotas"): a
 * tenant's parent must exist; the sum of children's guarantees must fit in
 * the parent's, and the sum of top-level guarantees in the healthy fleet,
 * else GP_ERR_QUOTA and nothing changed; weight 0 means "guaranteed GPUs
 * summed over types, fractions kept (min 1), or 1 without guarantee"; trust
 * INHERIT takes the parent's, trusted at the root.
 *
 * Most tests use a 16-GPU fleet: two nodes of 8 H100.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static void fleet16(tb_world *w)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    assert_int_equal(tb_type_index(w, "H100"), 0);
}

static gp_err set_tenant(tb_world *w, const char *path, int guarantee_gpus, int limit_gpus)
{
    gp_tenant_spec s = tb_tenant_spec("H100", guarantee_gpus, limit_gpus);
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = tb_tenant_try(w, path, &s, &err);
    if (rc != GP_OK)
        assert_int_equal(err.code, rc); /* the error buffer is filled with the same code */
    return rc;
}

static bool tenant_exists(const tb_world *w, const char *path)
{
    uint32_t index;
    return gp_engine_tenant_find(w->e, path, &index, NULL) == GP_OK;
}

static void assert_res_equal(const gp_res *a, const gp_res *b)
{
    for (int d = 0; d < GP_DIMS; d++)
        assert_int_equal(a->v[d], b->v[d]);
}

/* ---- creation ---- */

static void tree_is_created_parent_first(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", 8, -1);
    tb_tenant(w, "org/team", "H100", 4, -1);
    tb_tenant(w, "org/team/proj", "H100", 2, -1);

    gp_tenant_info org = tb_tenant_info(w, "org");
    gp_tenant_info team = tb_tenant_info(w, "org/team");
    gp_tenant_info proj = tb_tenant_info(w, "org/team/proj");
    assert_int_equal(org.parent, UINT32_MAX);
    assert_int_equal(team.parent, org.index);
    assert_int_equal(proj.parent, team.index);
    assert_string_equal(proj.path, "org/team/proj");
    assert_string_equal(gp_engine_tenant_path(w->e, proj.index), "org/team/proj");
    assert_true(proj.has_guarantee);
    assert_int_equal(proj.guarantee.v[0], 2000); /* 2 whole GPUs = 2000 mGPU */
    assert_int_equal(org.guarantee.v[0], 8000);
}

static void parent_must_exist(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    assert_int_equal(set_tenant(w, "org/team", -1, -1), GP_ERR_NOT_FOUND);
    assert_false(tenant_exists(w, "org/team"));
    assert_false(tenant_exists(w, "org"));

    tb_tenant(w, "org", "H100", -1, -1);
    assert_int_equal(set_tenant(w, "org/team/proj", -1, -1), GP_ERR_NOT_FOUND); /* org/team missing */
    assert_false(tenant_exists(w, "org/team/proj"));
}

static void depth_four_is_allowed(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "a", "H100", -1, -1);
    tb_tenant(w, "a/b", "H100", -1, -1);
    tb_tenant(w, "a/b/c", "H100", -1, -1);
    tb_tenant(w, "a/b/c/d", "H100", -1, -1);
    assert_string_equal(tb_tenant_info(w, "a/b/c/d").path, "a/b/c/d");
}

/* ---- guarantees must fit ---- */

static void children_guarantees_must_fit_in_parent(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", 8, -1);
    tb_tenant(w, "org/a", "H100", 6, -1);
    size_t tenants_before = gp_engine_tenant_count(w->e);
    /* 6 + 3 = 9 > 8 */
    assert_int_equal(set_tenant(w, "org/b", 3, -1), GP_ERR_QUOTA);
    assert_false(tenant_exists(w, "org/b"));
    assert_int_equal(gp_engine_tenant_count(w->e), tenants_before);
    /* 6 + 2 = 8 fits exactly */
    assert_int_equal(set_tenant(w, "org/b", 2, -1), GP_OK);
}

static void child_update_that_overflows_parent_changes_nothing(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", 8, -1);
    tb_tenant(w, "org/a", "H100", 6, 12);
    tb_tenant(w, "org/b", "H100", 2, -1);
    gp_tenant_info before = tb_tenant_info(w, "org/a");

    /* a 6 -> 7: 7 + 2 = 9 > 8; the limit change in the same call must not land either */
    assert_int_equal(set_tenant(w, "org/a", 7, 10), GP_ERR_QUOTA);
    gp_tenant_info after = tb_tenant_info(w, "org/a");
    assert_res_equal(&after.guarantee, &before.guarantee);
    assert_res_equal(&after.limit, &before.limit);
    assert_int_equal(after.guarantee.v[0], 6000);
    assert_int_equal(after.limit.v[0], 12000);
}

static void parent_shrink_below_children_changes_nothing(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", 8, -1);
    tb_tenant(w, "org/a", "H100", 6, -1);
    /* org 8 -> 5 < 6 of its child */
    assert_int_equal(set_tenant(w, "org", 5, -1), GP_ERR_QUOTA);
    assert_int_equal(tb_tenant_info(w, "org").guarantee.v[0], 8000);
    /* 6 still fits */
    assert_int_equal(set_tenant(w, "org", 6, -1), GP_OK);
    assert_int_equal(tb_tenant_info(w, "org").guarantee.v[0], 6000);
}

static void top_level_guarantees_must_fit_in_fleet(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    assert_int_equal(set_tenant(w, "a", 10, -1), GP_OK);
    /* 10 + 7 = 17 > 16 GPUs */
    assert_int_equal(set_tenant(w, "b", 7, -1), GP_ERR_QUOTA);
    assert_false(tenant_exists(w, "b"));
    assert_int_equal(set_tenant(w, "b", 6, -1), GP_OK); /* 16 */
}

static void top_level_guarantees_count_only_healthy_gpus(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 0, false, 0, NULL), GP_OK);
    assert_int_equal(set_tenant(w, "a", 10, -1), GP_OK);
    /* 15 healthy: 10 + 6 = 16 > 15 */
    assert_int_equal(set_tenant(w, "b", 6, -1), GP_ERR_QUOTA);
    assert_int_equal(set_tenant(w, "b", 5, -1), GP_OK);
}

static void guarantee_of_gpu_type_absent_from_fleet_does_not_fit(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    gp_tenant_spec s = tb_tenant_spec("A100", 1, -1); /* the fleet has 0 A100 */
    gp_error err;
    assert_int_equal(tb_tenant_try(w, "a", &s, &err), GP_ERR_QUOTA);
    assert_false(tenant_exists(w, "a"));
}

/* ---- update ---- */

static void update_changes_quota_weight_and_lend_in_place(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", 4, 8);
    uint32_t index = tb_tenant_index(w, "org");

    gp_tenant_spec s = tb_tenant_spec("H100", 2, 6);
    s.weight = 2.5;
    s.lend = 0;
    assert_int_equal(tb_tenant_try(w, "org", &s, NULL), GP_OK);

    gp_tenant_info info = tb_tenant_info(w, "org");
    assert_int_equal(info.index, index);
    assert_int_equal(info.guarantee.v[0], 2000);
    assert_int_equal(info.limit.v[0], 6000);
    assert_true(info.weight == 2.5);
    assert_false(info.lend);
}

/* ---- remove ---- */

static void remove_leaf_forgets_it(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, "org/a", "H100", -1, -1);
    uint32_t index = tb_tenant_index(w, "org/a");
    assert_int_equal(gp_engine_tenant_remove(w->e, "org/a", 0, NULL), GP_OK);
    assert_false(tenant_exists(w, "org/a"));
    gp_tenant_info info;
    assert_false(gp_engine_tenant_get(w->e, index, &info));
    tb_tenant(w, "org/a", "H100", -1, -1); /* the path is free again */
}

static void remove_with_children_conflicts(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, "org/a", "H100", -1, -1);
    assert_int_equal(gp_engine_tenant_remove(w->e, "org", 0, NULL), GP_ERR_CONFLICT);
    assert_true(tenant_exists(w, "org"));
    assert_true(tenant_exists(w, "org/a"));
}

static void remove_with_live_job_conflicts_until_it_ends(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", -1, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    assert_int_equal(gp_engine_tenant_remove(w->e, "org", 0, NULL), GP_ERR_CONFLICT);
    assert_true(tenant_exists(w, "org"));
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 0, NULL), GP_OK); /* pending: cancelled at once */
    assert_int_equal(gp_engine_tenant_remove(w->e, "org", 0, NULL), GP_OK);
}

static void remove_unknown_is_not_found(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    assert_int_equal(gp_engine_tenant_remove(w->e, "ghost", 0, NULL), GP_ERR_NOT_FOUND);
}

static void tenant_with_live_jobs_cannot_get_children(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", -1, -1);
    tb_submit(w, 1, "org", 1, 1, 0);
    assert_int_equal(set_tenant(w, "org/child", -1, -1), GP_ERR_CONFLICT);
    assert_false(tenant_exists(w, "org/child"));
}

/* ---- paths ---- */

static void malformed_paths_are_invalid(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "a", "H100", -1, -1);
    tb_tenant(w, "a/b", "H100", -1, -1);
    tb_tenant(w, "a/b/c", "H100", -1, -1);
    tb_tenant(w, "a/b/c/d", "H100", -1, -1);
    char long_segment[GP_NAME_MAX + 1];
    memset(long_segment, 'x', GP_NAME_MAX);
    long_segment[GP_NAME_MAX] = '\0'; /* 64 chars: one more than a name may have */

    const char *bad[] = {
        "",          /* empty */
        "a//b",      /* empty segment (parent "a" exists) */
        "/a",        /* leading slash */
        "a/",        /* trailing slash */
        "a/b/c/d/e", /* depth 5 > GP_MAX_TENANT_DEPTH, parent exists */
        "team one",  /* space */
        "a/b c",     /* space in a child segment */
        "..",        /* dot-dot */
        "a/..",      /* dot-dot child */
        ".",         /* dot */
        long_segment,
    };
    size_t tenants = gp_engine_tenant_count(w->e);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
        gp_error err;
        gp_error_clear(&err);
        gp_err rc = tb_tenant_try(w, bad[i], &s, &err);
        if (rc != GP_ERR_INVALID)
            fail_msg("path \"%s\": got %s, want invalid", bad[i], gp_err_name(rc));
        assert_false(tenant_exists(w, bad[i]));
    }
    assert_int_equal(gp_engine_tenant_count(w->e), tenants);
}

/* ---- trust ---- */

static void trust_is_inherited_down_the_tree(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.trust = GP_TRUST_UNTRUSTED;
    assert_int_equal(tb_tenant_try(w, "ext", &s, NULL), GP_OK);
    tb_tenant(w, "ext/team", "H100", -1, -1);      /* INHERIT */
    tb_tenant(w, "ext/team/proj", "H100", -1, -1); /* INHERIT */
    tb_tenant(w, "int", "H100", -1, -1);           /* INHERIT at the root: trusted */

    assert_true(tb_tenant_info(w, "ext").untrusted);
    assert_true(tb_tenant_info(w, "ext/team").untrusted);
    assert_true(tb_tenant_info(w, "ext/team/proj").untrusted);
    assert_false(tb_tenant_info(w, "int").untrusted);
}

static void child_may_be_untrusted_under_trusted_parent(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_tenant(w, "org", "H100", -1, -1);
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.trust = GP_TRUST_UNTRUSTED;
    assert_int_equal(tb_tenant_try(w, "org/x", &s, NULL), GP_OK);
    tb_tenant(w, "org/y", "H100", -1, -1);
    assert_true(tb_tenant_info(w, "org/x").untrusted);
    assert_false(tb_tenant_info(w, "org/y").untrusted);
}

/* ---- weights and lend ---- */

static void default_weight_is_guaranteed_whole_gpus(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    tb_add_nodes(w, 1, "A100", 8, "b1", "z0");

    tb_tenant(w, "three", "H100", 3, -1); /* 3 H100 -> weight 3 */
    tb_tenant(w, "none", "H100", -1, -1); /* no guarantee -> 1 */
    tb_tenant(w, "zero", "H100", 0, -1);  /* guarantee of 0 GPUs -> min 1 */

    gp_tenant_spec two_types = tb_tenant_spec("H100", 2, -1);
    two_types.guarantee.n_gpu = 2;
    strcpy(two_types.guarantee.gpu[1].type, "A100");
    two_types.guarantee.gpu[1].milli = 3000; /* 2 H100 + 3 A100 -> weight 5 */
    assert_int_equal(tb_tenant_try(w, "two", &two_types, NULL), GP_OK);

    gp_tenant_spec explicit_weight = tb_tenant_spec("H100", 4, -1);
    explicit_weight.weight = 2.5; /* given: kept, not derived */
    assert_int_equal(tb_tenant_try(w, "given", &explicit_weight, NULL), GP_OK);

    assert_true(tb_tenant_info(w, "three").weight == 3.0);
    assert_true(tb_tenant_info(w, "none").weight == 1.0);
    assert_true(tb_tenant_info(w, "zero").weight == 1.0);
    assert_true(tb_tenant_info(w, "two").weight == 5.0);
    assert_true(tb_tenant_info(w, "given").weight == 2.5);
}

static void lend_defaults_to_yes(void **state)
{
    tb_world *w = *state;
    fleet16(w);
    gp_tenant_spec s = tb_tenant_spec("H100", 2, -1);
    s.lend = -1;
    assert_int_equal(tb_tenant_try(w, "dflt", &s, NULL), GP_OK);
    s.lend = 0;
    assert_int_equal(tb_tenant_try(w, "keep", &s, NULL), GP_OK);
    s.lend = 1;
    assert_int_equal(tb_tenant_try(w, "lend", &s, NULL), GP_OK);
    assert_true(tb_tenant_info(w, "dflt").lend);
    assert_false(tb_tenant_info(w, "keep").lend);
    assert_true(tb_tenant_info(w, "lend").lend);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(tree_is_created_parent_first),
        TB_TEST(parent_must_exist),
        TB_TEST(depth_four_is_allowed),
        TB_TEST(children_guarantees_must_fit_in_parent),
        TB_TEST(child_update_that_overflows_parent_changes_nothing),
        TB_TEST(parent_shrink_below_children_changes_nothing),
        TB_TEST(top_level_guarantees_must_fit_in_fleet),
        TB_TEST(top_level_guarantees_count_only_healthy_gpus),
        TB_TEST(guarantee_of_gpu_type_absent_from_fleet_does_not_fit),
        TB_TEST(update_changes_quota_weight_and_lend_in_place),
        TB_TEST(remove_leaf_forgets_it),
        TB_TEST(remove_with_children_conflicts),
        TB_TEST(remove_with_live_job_conflicts_until_it_ends),
        TB_TEST(remove_unknown_is_not_found),
        TB_TEST(tenant_with_live_jobs_cannot_get_children),
        TB_TEST(malformed_paths_are_invalid),
        TB_TEST(trust_is_inherited_down_the_tree),
        TB_TEST(child_may_be_untrusted_under_trusted_parent),
        TB_TEST(default_weight_is_guaranteed_whole_gpus),
        TB_TEST(lend_defaults_to_yes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
