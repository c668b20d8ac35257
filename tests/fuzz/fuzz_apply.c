/* fuzz_apply.c - libFuzzer target: POST /v1/tenants:apply bodies (YAML or JSON).
 *
 * What apply does before the store: the tenant file parser (libyaml),
 * then per entry the canonical form the journal logs (round trip must be
 * stable) and the engine's tenant_set, in file order, on a fresh engine.
 */
#include "config/tenant_file.h"
#include "core/engine.h"
#include "server/spec_json.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    gp_tenant_file f;
    if (gp_tenant_file_parse((const char *)data, size, "fuzz", &f, NULL) != GP_OK)
        return 0;
    gp_engine *e = gp_engine_new(NULL);
    gp_node_spec n = {.name = "n0", .zone = "z", .block = "b", .gpu_type = "H100", .gpu_count = 8,
                      .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 1 << 20};
    gp_engine_node_add(e, &n, 0, NULL);
    for (size_t i = 0; i < f.n_tenants; i++) {
        json_t *canon = gp_tenant_spec_to_json(&f.tenants[i].spec);
        gp_tenant_spec again;
        if (gp_tenant_spec_parse(canon, &again, NULL) != GP_OK)
            abort();
        json_t *canon2 = gp_tenant_spec_to_json(&again);
        if (!json_equal(canon, canon2))
            abort();
        json_decref(canon);
        json_decref(canon2);
        gp_engine_tenant_set(e, f.tenants[i].path, &again, 0, NULL);
    }
    gp_engine_free(e);
    gp_tenant_file_free(&f);
    return 0;
}
