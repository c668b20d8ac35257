/* placement.c - a job's placement as JSON (see placement.h). */
#include "eventlog/placement.h"

#include <stdlib.h>

/* A shared replica's share: kind and milli-GPUs, and for MIG the instance. */
static json_t *slice_json(const gp_slice *sl)
{
    json_t *o = json_pack("{s:s, s:i}", "kind", gp_isolation_name(sl->kind), "milli_gpus", sl->milli);
    if (sl->kind == GP_ISO_MIG) {
        json_object_set_new(o, "mig_profile", json_string(sl->mig_profile));
        json_object_set_new(o, "mig_start", json_integer(sl->mig_start));
    }
    return o;
}

/* One replica: its node and GPUs, each GPU once.  An exclusive replica
 * lists its whole GPUs; a shared one (MIG, MPS, time-slice) the one GPU it
 * has a share of, and the share. */
static json_t *replica_json(const gp_engine *e, const gp_job_info *info, int r, const uint32_t *gpus, size_t n,
                            const gp_slice *slices, size_t ns)
{
    json_t *list = json_array();
    uint32_t first = ns > 0 ? slices[r].gpu : gpus[(size_t)r * info->gpus];
    gp_gpu_info gi = {0};
    gp_node_info ni = {0};
    if (ns > 0) {
        if (gp_engine_gpu_get(e, first, &gi))
            json_array_append_new(list, json_string(gi.uuid));
    } else {
        for (int g = 0; g < info->gpus && n > 0; g++)
            if (gp_engine_gpu_get(e, gpus[(size_t)r * info->gpus + g], &gi))
                json_array_append_new(list, json_string(gi.uuid));
    }
    gp_engine_gpu_get(e, first, &gi);
    gp_engine_node_get(e, gi.node, &ni);
    json_t *rep = json_pack("{s:s, s:o}", "node", ni.name, "gpus", list);
    if (ns > 0)
        json_object_set_new(rep, "slice", slice_json(&slices[r]));
    return rep;
}

json_t *gp_placement_json(const gp_engine *e, uint64_t id, const gp_job_info *info)
{
    size_t cap = (size_t)info->replicas * (size_t)info->gpus;
    uint32_t *gpus = malloc((cap ? cap : 1) * sizeof *gpus);
    gp_slice *slices = calloc((size_t)info->replicas, sizeof *slices);
    size_t n = gpus ? gp_engine_job_gpus(e, id, gpus, cap) : 0;
    size_t ns = slices ? gp_engine_job_slices(e, id, slices, (size_t)info->replicas) : 0;
    json_t *out = n > 0 || ns > 0 ? json_array() : json_null();
    for (int r = 0; r < info->replicas && (n > 0 || ns > 0); r++)
        json_array_append_new(out, replica_json(e, info, r, gpus, n, slices, ns));
    free(gpus);
    free(slices);
    return out;
}
