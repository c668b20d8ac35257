/* fuzz_fleet.c - the small fleet every fuzz target's engine stage runs on.
 *
 * Six nodes of 8 GPUs, one for each kind of placement the engine makes:
 * three exclusive H100 nodes in one fabric block (a 3 x 8 gang fits), an
 * MPS H100 node, a MIG A100-80GB node and a time-sliced L40S node: 32
 * H100, 8 A100, 8 L40S, as many as the guarantees of
 * examples/tenants.yaml (the apply seed) need.  No tenants: each target
 * adds its own.
 */
#include "fuzz_harness.h"

#include <stdlib.h>

static void add_node(gp_engine *e, const char *name, const char *block, const char *type, int64_t gpu_mem_mib,
                     gp_sharing sharing)
{
    gp_node_spec n = {.name = name, .zone = "z", .block = block, .gpu_type = type, .gpu_count = 8,
                      .nvlink_domains = 1, .gpu_mem_mib = gpu_mem_mib, .cpu_millis = 64000,
                      .mem_mib = 1 << 20, .sharing = sharing};
    if (gp_engine_node_add(e, &n, 0, NULL) != GP_OK)
        abort();
}

gp_engine *gp_fuzz_fleet(void)
{
    gp_engine *e = gp_engine_new(NULL);
    add_node(e, "h0", "b0", "H100", 81920, GP_SHARING_EXCLUSIVE);
    add_node(e, "h1", "b0", "H100", 81920, GP_SHARING_EXCLUSIVE);
    add_node(e, "h2", "b0", "H100", 81920, GP_SHARING_EXCLUSIVE);
    add_node(e, "mps0", "b1", "H100", 81920, GP_SHARING_MPS);
    add_node(e, "mig0", "b2", "A100", 81920, GP_SHARING_MIG);
    add_node(e, "ts0", "b3", "L40S", 46068, GP_SHARING_TIMESLICE);
    return e;
}

void gp_fuzz_check_invariants(const gp_engine *e)
{
    if (gp_engine_check_invariants(e, NULL) != GP_OK)
        abort();
}
