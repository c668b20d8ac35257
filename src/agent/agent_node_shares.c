/* agent_node_shares.c - a node's shared GPUs made real: its MPS daemons
 * (agent_mps.h), the watch over its replicas' GPU memory (agent_share.h)
 * and the dcgm-exporter job map (agent_dcgm.h), driven from the node's
 * step and its replicas' starts and ends (agent_node.h).
 *
 * The watch: every telemetry sample the heartbeat takes, and one of its
 * own at least every 2 s while an MPS or time-slice replica runs.  A
 * replica over its share is killed at once, its whole tree (stop cause
 * gpu_memory), and STATE/NODE/replicas/RUN/gpu_memory records what it used
 * and its share for the exit report ("exited", reason gpu_memory).
 */
#include "agent/agent_node.h"

#include "agent/agent_dcgm.h"
#include "agent/agent_mps.h"
#include "agent/agent_plan.h"
#include "agent/agent_share.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP__MEMORY_EVERY_MS 2000

int64_t gp_node_gpu_memory_mib(const gp_node *n, const char *uuid)
{
    for (int g = 0; g < n->inventory.gpu_count; g++)
        if (strcmp(n->inventory.gpus[g].uuid, uuid) == 0)
            return n->inventory.gpus[g].memory_mib;
    return 0;
}

int64_t gp_replica_share_mib(const gp_node *n, const gp_replica *r)
{
    if (r->slice_mem_mib > 0)
        return r->slice_mem_mib;
    return gp_share_memory_mib(r->milli_gpus, r->n_gpus ? gp_node_gpu_memory_mib(n, r->gpus[0]) : 0);
}

static bool gp__shared(const gp_replica *r)
{
    return (r->slice == GP_SHARING_MPS || r->slice == GP_SHARING_TIMESLICE) && r->n_gpus > 0;
}

/* ---- MPS daemons ---- */

static bool gp__mps_in_use(const gp_node *n, const char *uuid)
{
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        if (!r->ended && r->slice == GP_SHARING_MPS && r->n_gpus > 0 && strcmp(r->gpus[0], uuid) == 0)
            return true;
    }
    return false;
}

void gp_node_mps_sweep(gp_node *n)
{
    for (int g = 0; g < n->inventory.gpu_count; g++) {
        const gp_node_gpu *gpu = &n->inventory.gpus[g];
        if (gpu->sharing != GP_SHARING_MPS || gp__mps_in_use(n, gpu->uuid))
            continue;
        char pipe[GP_STATE_PATH_MAX], log[GP_STATE_PATH_MAX];
        gp_mps_dirs(n->dir, gpu->uuid, pipe, log, sizeof pipe);
        if (!gp_mps_answers(pipe))
            continue;
        gp_error err;
        if (gp_mps_quit(n->opt->mps_control, n->dir, gpu->uuid, &err) == GP_OK)
            gp_agent_log(n, "gpu=%d mps daemon quit: no MPS replica left", g);
        else
            gp_agent_log(n, "gpu=%d mps daemon: quit failed: %s", g, err.message);
    }
}

/* ---- GPU memory ---- */

static void gp__kill_for_memory(gp_node *n, gp_replica *r, const gp_share_replica *w)
{
    char path[GP_STATE_PATH_MAX], text[64];
    snprintf(path, sizeof path, "%s/gpu_memory", r->dir);
    snprintf(text, sizeof text, "%lld %lld\n", (long long)w->used_mib, (long long)w->cap_mib);
    gp_state_write(path, text, 0600, NULL);
    gp_replica_stop_within(n, r, SIGKILL, 0, GP_STOP_GPU_MEMORY);
    r->stop_deadline = GP_PLAN_KILLED;
    gp_agent_log(n, "job=%llu replica=%u killed: its processes hold %lld MiB of GPU memory, its share is %lld MiB",
                 (unsigned long long)r->job, r->replica, (long long)w->used_mib, (long long)w->cap_mib);
}

void gp_node_watch_memory(gp_node *n, const gp_telemetry *t)
{
    gp_share_replica *w = calloc(n->n_replicas + 1, sizeof *w);
    gp_replica **who = calloc(n->n_replicas + 1, sizeof *who);
    size_t k = 0;
    for (size_t i = 0; w && who && i < n->n_replicas; i++) {
        gp_replica *r = n->replicas[i];
        if (r->ended || !gp__shared(r) || r->stop_deadline == GP_PLAN_KILLED)
            continue;
        who[k] = r;
        w[k++] = (gp_share_replica){
            .cgroup = n->opt->no_cgroups ? NULL : r->name, .pid = gp_replica_pid(r), .uuid = r->gpus[0],
            .cap_mib = gp_replica_share_mib(n, r)};
    }
    gp_share_sum("/proc", t, w, k);
    for (size_t i = 0; i < k; i++)
        if (gp_share_over(&w[i]))
            gp__kill_for_memory(n, who[i], &w[i]);
    free(w);
    free(who);
}

int64_t gp_node_memory_step(gp_node *n, int64_t now_ms)
{
    if (now_ms < n->next_memory_ms)
        return n->next_memory_ms;
    bool shared = false;
    for (size_t i = 0; i < n->n_replicas && !shared; i++)
        shared = !n->replicas[i]->ended && gp__shared(n->replicas[i]);
    static gp_telemetry t;
    if (shared && gp_gpu_telemetry(&n->gpu, gp_agent_real_ms(), &t, NULL) == GP_OK)
        gp_node_watch_memory(n, &t);
    n->next_memory_ms = now_ms + GP__MEMORY_EVERY_MS;
    return n->next_memory_ms;
}

/* ---- dcgm-exporter's job map ---- */

/* The MIG GPU instance id of uuid on GPU g, or -1. */
static int gp__gi_of(const gp_node *n, int g, const char *uuid)
{
    for (int i = 0; i < n->inventory.gpus[g].n_mig; i++)
        if (strcmp(n->inventory.gpus[g].mig[i].uuid, uuid) == 0)
            return n->inventory.gpus[g].mig[i].gi_id;
    return -1;
}

/* The uses of replica r (at most GP_MAX_GPUS_PER_NODE) into out. */
static size_t gp__uses_of(const gp_node *n, const gp_replica *r, gp_dcgm_use *out)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n_gpus; i++)
        for (int g = 0; g < n->inventory.gpu_count; g++)
            if (strcmp(n->inventory.gpus[g].uuid, r->gpus[i]) == 0)
                out[k++] = (gp_dcgm_use){.gpu = g, .gi = r->mig_uuid[0] ? gp__gi_of(n, g, r->mig_uuid) : -1,
                                         .job = r->job};
    return k;
}

void gp_node_dcgm_update(gp_node *n)
{
    if (!n->opt->dcgm_job_map)
        return;
    bool mig = false;
    for (size_t i = 0; i < n->n_replicas; i++)
        mig |= !n->replicas[i]->ended && n->replicas[i]->mig_uuid[0];
    if (mig) /* instances made since the last look */
        gp_gpu_inventory(&n->gpu, &n->inventory, NULL);
    gp_dcgm_use *uses = calloc(n->n_replicas * GP_MAX_GPUS_PER_NODE + 1, sizeof *uses);
    size_t k = 0;
    for (size_t i = 0; uses && i < n->n_replicas; i++)
        if (!n->replicas[i]->ended)
            k += gp__uses_of(n, n->replicas[i], uses + k);
    gp_error err;
    if (uses && gp_dcgm_job_map_write(n->opt->dcgm_job_map, n->inventory.gpu_count, uses, k, &err) != GP_OK)
        gp_agent_log(n, "dcgm job map: %s", err.message);
    free(uses);
}
