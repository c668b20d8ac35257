/* fuzz_tenant_json.c - libFuzzer target: PUT /v1/tenants/{path} bodies.
 *
 * Body parser, strict tenant parser, canonical round trip (must be
 * stable: the event log replays the canonical form), then the engine: on a
 * fresh engine with the shared fleet (fuzz_fleet.c), the spec is set on
 * "org" and "org/team", a 1-GPU job of org/team is submitted and a
 * scheduling pass runs (so the floor, limit, user limit, weight, lend and
 * trust of the spec are read by admission and placement, not only
 * stored), and the engine's invariants are checked.
 * gp_fuzz_reached_engine() reports whether the last input got through
 * both tenant_sets and the pass (fuzz_replay.c requires it of every seed).
 */
#include "core/engine.h"
#include "fuzz_harness.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"

#include <stdlib.h>

static bool reached_engine;

bool gp_fuzz_reached_engine(void)
{
    return reached_engine;
}

static bool run_engine(const gp_tenant_spec *spec)
{
    gp_engine *e = gp_fuzz_fleet();
    bool ok = gp_engine_tenant_set(e, "org", spec, 0, NULL) == GP_OK &&
              gp_engine_tenant_set(e, "org/team", spec, 0, NULL) == GP_OK;
    if (ok) {
        gp_job_spec job = {.id = 1, .tenant = "org/team", .user = "u", .replicas = 1, .gpus = 1};
        ok = gp_engine_job_submit(e, &job, 1, NULL) == GP_OK && gp_engine_tick(e, 1, NULL) == GP_OK;
        gp_fuzz_check_invariants(e);
    }
    gp_engine_free(e);
    return ok;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    reached_engine = false;
    json_t *body;
    if (gp_json_parse_body((const char *)data, size, &body, NULL) != GP_OK)
        return 0;
    gp_tenant_spec spec;
    if (gp_tenant_spec_parse(body, &spec, NULL) == GP_OK) {
        json_t *canon = gp_tenant_spec_to_json(&spec);
        gp_tenant_spec again;
        if (gp_tenant_spec_parse(canon, &again, NULL) != GP_OK)
            abort();
        json_t *canon2 = gp_tenant_spec_to_json(&again);
        if (!json_equal(canon, canon2))
            abort();
        reached_engine = run_engine(&again);
        json_decref(canon);
        json_decref(canon2);
    }
    json_decref(body);
    return 0;
}
