/* gpu_json.c - inventory and telemetry as JSON (gpu_json.h). */
#include "agent/gpu/gpu_json.h"

#include "spec/spec_json.h"

/* A number, or null for the "unknown" -1. */
static json_t *known_int(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *known_string(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *mig_to_json(const gp_mig_instance *m)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:I}", "uuid", m->uuid, "profile", m->profile, "start",
                     m->start, "size", m->size, "gi_id", m->gi_id, "ci_id", m->ci_id, "memory_mib",
                     (json_int_t)m->memory_mib);
}

static json_t *gpu_to_json(const gp_node_gpu *g)
{
    json_t *mig = json_array();
    for (int i = 0; mig && i < g->n_mig; i++)
        json_array_append_new(mig, mig_to_json(&g->mig[i]));
    return json_pack("{s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:i, s:o, s:s, s:o}", "index", g->index, "uuid", g->uuid,
                     "memory_mib", known_int(g->memory_mib), "minor", known_int(g->minor), "device",
                     known_string(g->device_path), "pci_bus_id", known_string(g->pci_bus_id), "cpu_affinity",
                     known_string(g->cpu_affinity), "nvlink_domain", g->nvlink_domain, "block",
                     known_string(g->block), "sharing", gp_sharing_name(g->sharing), "mig", mig);
}

json_t *gp_inventory_to_json(const gp_node_inventory *inv)
{
    const char *uuids[GP_MAX_GPUS_PER_NODE];
    gp_sharing sharing[GP_MAX_GPUS_PER_NODE];
    for (int g = 0; g < inv->gpu_count; g++) {
        uuids[g] = inv->gpus[g].uuid;
        sharing[g] = inv->gpus[g].sharing;
    }
    gp_node_spec spec = {
        .name = inv->name, .zone = inv->zone, .block = inv->block, .gpu_type = inv->model,
        .gpu_count = inv->gpu_count, .nvlink_domains = inv->nvlink_domains,
        .gpu_mem_mib = inv->gpu_count ? inv->gpus[0].memory_mib : 0, .cpu_millis = inv->cpu_millis,
        .mem_mib = inv->mem_mib, .gpu_uuids = uuids, .sharing = inv->gpu_count ? sharing[0] : GP_SHARING_EXCLUSIVE,
        .gpu_sharing = sharing, .pool = inv->pool,
    };
    json_t *gpus = json_array();
    for (int g = 0; gpus && g < inv->gpu_count; g++)
        json_array_append_new(gpus, gpu_to_json(&inv->gpus[g]));
    return json_pack("{s:s, s:o, s:o, s:o}", "backend", inv->backend, "driver_version",
                     known_string(inv->driver_version), "node", gp_node_spec_to_json(&spec), "gpus", gpus);
}

static json_t *sample_to_json(const gp_gpu_sample *s)
{
    return json_pack("{s:i, s:s, s:b, s:o, s:o, s:o, s:o, s:{s:o, s:o}}", "index", s->index, "uuid", s->uuid, "lost",
                     s->lost, "sm_active_pct", known_int(s->sm_active_pct), "memory_used_mib",
                     known_int(s->memory_used_mib), "power_w", known_int(s->power_w), "temperature_c",
                     known_int(s->temperature_c), "ecc", "corrected", known_int(s->ecc_corrected), "uncorrected",
                     known_int(s->ecc_uncorrected));
}

json_t *gp_gpu_process_to_json(const gp_gpu_process *p)
{
    return json_pack("{s:i, s:s, s:o, s:o}", "pid", p->pid, "uuid", p->uuid, "memory_used_mib",
                     known_int(p->memory_used_mib), "sm_active_pct", known_int(p->sm_active_pct));
}

json_t *gp_telemetry_to_json(const gp_telemetry *t)
{
    json_t *gpus = json_array(), *procs = json_array();
    for (int g = 0; gpus && g < t->n_gpus; g++)
        json_array_append_new(gpus, sample_to_json(&t->gpus[g]));
    for (int p = 0; procs && p < t->n_processes; p++)
        json_array_append_new(procs, gp_gpu_process_to_json(&t->processes[p]));
    return json_pack("{s:I, s:o, s:o}", "at_ms", (json_int_t)t->at_ms, "gpus", gpus, "processes", procs);
}
