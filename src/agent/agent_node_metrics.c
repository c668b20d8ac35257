/* agent_node_metrics.c - one node's snapshot for the agent's /metrics
 * (agent_metrics.h): its GPUs and MIG instances from a telemetry sample,
 * each with the tenant and job of the replica on it.
 *
 * A whole GPU's row carries the sample's readings of it (utilization and
 * SM activity are both the sample's one activity reading, sm_active_pct;
 * memory free is the GPU's memory less what is used).  A MIG instance's row
 * carries what the sample's processes on the instance use (memory, SM
 * activity: their sums, unknown when one of them is) and the instance's
 * memory less that; power, temperature and XIDs are the GPU's, on its row.
 * A lost GPU keeps only its XID.  Example: GPU 0 of an A100 node with a
 * 3g.40gb instance (GI 2) running job 9 of tenant "nlp" gives two rows:
 * gpu 0 (tenant "", its power and temperature) and gpu 0 GPU_I_ID 2
 * GPU_I_PROFILE 3g.40gb (tenant "nlp", job "9", its process's memory).
 */
#include "agent/agent_node.h"

#include "util/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gp__rows {
    gp_metrics_row *v;
    size_t n, cap;
} gp__rows;

static gp_metrics_row *gp__add(gp__rows *rows, const gp_metrics_row *proto)
{
    gp_metrics_row *v = gp_grow(rows->v, &rows->cap, rows->n + 1, sizeof *v);
    if (!v)
        return NULL;
    rows->v = v;
    rows->v[rows->n] = *proto;
    return &rows->v[rows->n++];
}

static bool gp__on_gpu(const gp_replica *r, const char *uuid)
{
    for (size_t i = 0; i < r->n_gpus; i++)
        if (strcmp(r->gpus[i], uuid) == 0)
            return true;
    return false;
}

/* A row per live replica on the GPU (mig NULL) or on the instance mig,
 * else one idle row. */
static void gp__rows_of(const gp_node *n, const gp_metrics_row *proto, const char *uuid, const char *mig,
                        gp__rows *rows)
{
    size_t added = 0;
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        bool here = mig ? strcmp(r->mig_uuid, mig) == 0 : !r->mig_uuid[0] && gp__on_gpu(r, uuid);
        gp_metrics_row *row = !r->ended && here ? gp__add(rows, proto) : NULL;
        if (!row)
            continue;
        snprintf(row->tenant, sizeof row->tenant, "%s", r->tenant);
        snprintf(row->job, sizeof row->job, "%llu", (unsigned long long)r->job);
        added++;
    }
    if (!added)
        gp__add(rows, proto);
}

static const gp_gpu_sample *gp__sample_of(const gp_telemetry *t, int gpu)
{
    for (int i = 0; i < t->n_gpus; i++)
        if (t->gpus[i].index == gpu)
            return &t->gpus[i];
    return NULL;
}

static gp_metrics_row gp__gpu_row(const gp_node *n, const gp_node_gpu *g, const gp_gpu_sample *s)
{
    gp_metrics_row row = {.gpu = g->index, .gi_id = -1, .xid = n->last_xid[g->index], .util_pct = -1,
                          .fb_used_mib = -1, .fb_free_mib = -1, .power_w = -1, .temp_c = -1, .sm_active_pct = -1};
    snprintf(row.uuid, sizeof row.uuid, "%s", g->uuid);
    snprintf(row.pci_bus_id, sizeof row.pci_bus_id, "%s", g->pci_bus_id);
    if (!s || s->lost)
        return row;
    row.util_pct = row.sm_active_pct = s->sm_active_pct;
    row.fb_used_mib = s->memory_used_mib;
    row.fb_free_mib = s->memory_used_mib >= 0 && g->memory_mib > 0 ? g->memory_mib - s->memory_used_mib : -1;
    row.power_w = s->power_w;
    row.temp_c = s->temperature_c;
    return row;
}

/* The instance's row: what the sample's processes on it use. */
static gp_metrics_row gp__mig_row(const gp_metrics_row *gpu, const gp_mig_instance *m, const gp_telemetry *t,
                                  bool lost)
{
    gp_metrics_row row = *gpu;
    row.gi_id = m->gi_id;
    snprintf(row.mig_profile, sizeof row.mig_profile, "%s", m->profile);
    row.util_pct = row.power_w = row.temp_c = row.xid = -1;
    int64_t used = lost ? -1 : 0;
    int sm = lost ? -1 : 0;
    for (int p = 0; p < t->n_processes; p++) {
        const gp_gpu_process *proc = &t->processes[p];
        if (strcmp(proc->uuid, m->uuid) != 0)
            continue;
        used = used < 0 || proc->memory_used_mib < 0 ? -1 : used + proc->memory_used_mib;
        sm = sm < 0 || proc->sm_active_pct < 0 ? -1 : sm + proc->sm_active_pct;
    }
    row.fb_used_mib = used;
    row.fb_free_mib = used >= 0 && m->memory_mib > 0 ? m->memory_mib - used : -1;
    row.sm_active_pct = sm > 100 ? 100 : sm;
    return row;
}

void gp_node_metrics_publish(gp_node *n, const gp_telemetry *t)
{
    if (!n->metrics)
        return;
    for (size_t i = 0; i < n->n_replicas; i++)
        if (!n->replicas[i]->ended && n->replicas[i]->mig_uuid[0]) { /* instances made since the last look */
            gp_gpu_inventory(&n->gpu, &n->inventory, NULL);
            break;
        }
    gp__rows rows = {0};
    for (int g = 0; g < n->inventory.gpu_count; g++) {
        const gp_node_gpu *gpu = &n->inventory.gpus[g];
        const gp_gpu_sample *s = gp__sample_of(t, gpu->index);
        gp_metrics_row whole = gp__gpu_row(n, gpu, s);
        gp__rows_of(n, &whole, gpu->uuid, NULL, &rows);
        for (int k = 0; k < gpu->n_mig; k++) {
            gp_metrics_row mig = gp__mig_row(&whole, &gpu->mig[k], t, !s || s->lost);
            gp__rows_of(n, &mig, gpu->uuid, gpu->mig[k].uuid, &rows);
        }
    }
    gp_metrics_node snap = {.n_rows = rows.n, .rows = rows.v};
    snprintf(snap.name, sizeof snap.name, "%s", n->name);
    snprintf(snap.model, sizeof snap.model, "%s", n->inventory.model);
    gp_agent_metrics_publish(n->metrics, n->index, &snap);
}
