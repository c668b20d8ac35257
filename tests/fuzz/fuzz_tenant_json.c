/* fuzz_tenant_json.c - libFuzzer target: PUT /v1/tenants/{path} bodies.
 *
 * Body parser, strict tenant parser, canonical round trip (must be
 * stable: the event log replays the canonical form), then the engine's
 * tenant_set on a fresh engine with a small fleet.
 */
#include "core/engine.h"
#include "server/json_input.h"
#include "server/spec_json.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
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
        gp_engine *e = gp_engine_new(NULL);
        gp_node_spec n = {.name = "n0", .zone = "z", .block = "b", .gpu_type = "H100", .gpu_count = 8,
                          .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 1 << 20};
        gp_engine_node_add(e, &n, 0, NULL);
        gp_engine_tenant_set(e, "org", &again, 0, NULL);
        gp_engine_tenant_set(e, "org/team", &again, 0, NULL);
        gp_engine_free(e);
        json_decref(canon);
        json_decref(canon2);
    }
    json_decref(body);
    return 0;
}
