/* test_tenant_weight.c - a given weight keeps fair shares finite.
 *
 * Rule (docs/api.md, tenants; docs/scheduling.md, fair share): a tenant's
 * weight is 0 (derived from its guarantee) or GP_WEIGHT_MIN..GP_WEIGHT_MAX
 * (0.001..1000000); anything else is refused naming "weight" and nothing
 * changes.  Seen: 5e-324 was accepted; one running GPU then made the
 * tenant's share usage / weight infinite.
 *
 * Example: "light" with weight 0.001 running 8 of 16 H100 has dominant
 * share 0.5 / 0.001 = 500: large, finite, and it sorts after every tenant
 * with a smaller share.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static gp_err put_weight(tb_world *w, const char *path, double weight, gp_error *err)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.weight = weight;
    return tb_tenant_try(w, path, &s, err);
}

static void weights_outside_the_range_are_refused_naming_the_field(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    const double bad[] = {5e-324, 0.0005, -1, 1e7, INFINITY, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_error err;
        assert_int_equal(put_weight(w, "t", bad[i], &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "weight");
    }
    uint32_t index;
    assert_int_equal(gp_engine_tenant_find(w->e, "t", &index, NULL), GP_ERR_NOT_FOUND);
}

static void the_smallest_weight_gives_a_finite_share(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    assert_int_equal(put_weight(w, "light", GP_WEIGHT_MIN, NULL), GP_OK);
    assert_int_equal(put_weight(w, "heavy", GP_WEIGHT_MAX, NULL), GP_OK);
    tb_submit(w, 1, "light", 1, 8, 0);
    tb_submit(w, 2, "heavy", 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    gp_tenant_info light = tb_tenant_info(w, "light"), heavy = tb_tenant_info(w, "heavy");
    assert_true(isfinite(light.dominant_share) && light.dominant_share > 0);
    assert_true(isfinite(heavy.dominant_share) && heavy.dominant_share > 0);
    assert_true(light.dominant_share > heavy.dominant_share);
}

/* Entitlements (hierarchical DRF: at each level, weight over the weights
 * of the siblings) follow every change of the tree: a tenant added, a
 * weight changed, a tenant removed; a refused change changes none.  The
 * engine keeps them between changes (tenants.c, gp__entitlements_update). */
static double entitlement(tb_world *w, const char *path)
{
    return gp_engine_tenant_entitlement(w->e, tb_tenant_index(w, path));
}

static void entitlements_follow_every_change_of_the_tree(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    assert_int_equal(put_weight(w, "a", 1, NULL), GP_OK);
    assert_int_equal(put_weight(w, "b", 3, NULL), GP_OK);
    assert_float_equal(entitlement(w, "a"), 0.25, 1e-12);
    assert_int_equal(put_weight(w, "a/x", 1, NULL), GP_OK);
    assert_int_equal(put_weight(w, "a/y", 1, NULL), GP_OK);
    assert_float_equal(entitlement(w, "a/x"), 0.125, 1e-12);
    assert_int_equal(put_weight(w, "b", 1, NULL), GP_OK);
    assert_float_equal(entitlement(w, "a/x"), 0.25, 1e-12);
    assert_int_equal(put_weight(w, "b", -1, NULL), GP_ERR_INVALID);
    assert_float_equal(entitlement(w, "b"), 0.5, 1e-12);
    assert_int_equal(gp_engine_tenant_remove(w->e, "a/y", gp_engine_now(w->e), NULL), GP_OK);
    assert_float_equal(entitlement(w, "a/x"), 0.5, 1e-12);
    assert_int_equal(gp_engine_tenant_remove(w->e, "b", gp_engine_now(w->e), NULL), GP_OK);
    assert_float_equal(entitlement(w, "a/x"), 1.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(weights_outside_the_range_are_refused_naming_the_field),
        TB_TEST(the_smallest_weight_gives_a_finite_share),
        TB_TEST(entitlements_follow_every_change_of_the_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
