/* metering.c - the decision stream and usage intervals.
 *
 * Everything the engine decides leaves through one append-only list of
 * gp_decision that the caller drains.  Metering rides on it: every
 * allocation opens a usage interval (tenant, job, GPU type, milli-GPUs,
 * class, topology, start) and closes it when the GPUs are released or the
 * job changes class (burstable <-> guaranteed), so
 *
 *     sum over intervals of milli_gpus x (end - start)
 *
 * is exactly the allocated milli-GPU-seconds, split by class for billing
 * (floors by reservation, burst by consumption).  Interval ids increase
 * from 1 and are never reused within one engine.
 *
 * Example: job 7 of research/nlp binds 2x8 H100 at t=100 as burstable
 * (interval 1 opens: 16000 mGPU, burstable), is promoted at t=400
 * (interval 1 closes at 400, interval 2 opens as guaranteed) and ends at
 * t=1000 (interval 2 closes): 16 GPUs x 300 s burst + 16 x 600 s
 * guaranteed.
 *
 * Dedicated idle: the free GPUs of a node where a dedicated domain's
 * replicas run (dedicated.c) stand idle because of its exclusivity, so
 * they are its cost too: an interval per node (job 0, dedicated_idle,
 * tenant = the domain, milli = free GPUs x 1000), kept in step at the end
 * of every pass.  Example: secure runs 2 GPUs of an 8-GPU node from t=100
 * to t=700: interval (secure, 6000 mGPU, dedicated idle) from 100 to 700.
 */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

gp_decision *gp__decision_push(gp_engine *e, gp_decision_kind kind, uint64_t job)
{
    if (!GP__GROW(e->decisions, e->n_decisions, e->cap_decisions))
        return NULL;
    gp_decision *d = &e->decisions[e->n_decisions++];
    e->changes++;
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->time = e->now;
    d->job_id = job;
    return d;
}

static void usage_fill(const gp_engine *e, const gp__job *j, gp_usage *u)
{
    u->interval_id = j->interval_id;
    u->job_id = j->id;
    snprintf(u->tenant, sizeof u->tenant, "%s", e->tenants[j->tenant].path);
    snprintf(u->gpu_type, sizeof u->gpu_type, "%s", e->fleet.types[j->bound_type]);
    u->milli_gpus = j->milli_total;
    u->cls = j->cls;
    u->topology = j->topology;
    u->start = j->interval_start;
    u->end = -1;
}

void gp__usage_open(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    j->interval_id = ++e->next_interval;
    j->interval_start = e->now;
    gp_decision *d = gp__decision_push(e, GP_DEC_USAGE_OPEN, j->id);
    if (d)
        usage_fill(e, j, &d->usage);
}

void gp__usage_close(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (j->interval_id == 0)
        return;
    gp_decision *d = gp__decision_push(e, GP_DEC_USAGE_CLOSE, j->id);
    if (d) {
        usage_fill(e, j, &d->usage);
        d->usage.end = e->now;
    }
    j->interval_id = 0;
}

static void idle_fill(const gp_engine *e, const gp__node *n, gp_decision *d)
{
    gp_usage *u = &d->usage;
    snprintf(d->node, sizeof d->node, "%s", n->name);
    u->interval_id = n->idle_interval;
    snprintf(u->tenant, sizeof u->tenant, "%s", e->tenants[n->idle_domain].path);
    snprintf(u->gpu_type, sizeof u->gpu_type, "%s", e->fleet.types[n->type]);
    u->milli_gpus = (int64_t)n->idle_gpus * 1000;
    u->start = n->idle_start;
    u->end = -1;
    u->dedicated_idle = true;
}

static void idle_node_sync(gp_engine *e, gp__node *n)
{
    uint32_t domain = n->ded_replicas > 0 && n->free > 0 ? n->ded_domain : GP__NONE;
    if (n->idle_interval && (n->idle_domain != domain || n->idle_gpus != n->free)) {
        gp_decision *d = gp__decision_push(e, GP_DEC_USAGE_CLOSE, 0);
        if (d) {
            idle_fill(e, n, d);
            d->usage.end = e->now;
        }
        n->idle_interval = 0;
        e->n_idle_open--;
    }
    if (!n->idle_interval && domain != GP__NONE) {
        n->idle_interval = ++e->next_interval;
        n->idle_start = e->now;
        n->idle_domain = domain;
        n->idle_gpus = n->free;
        e->n_idle_open++;
        gp_decision *d = gp__decision_push(e, GP_DEC_USAGE_OPEN, 0);
        if (d)
            idle_fill(e, n, d);
    }
}

void gp__dedicated_idle_sync(gp_engine *e)
{
    if (!e->fenced && e->n_idle_open == 0)
        return;
    for (size_t n = 0; n < e->fleet.n_nodes; n++)
        idle_node_sync(e, &e->fleet.nodes[n]);
}

const gp_decision *gp_engine_decisions(const gp_engine *e, size_t *count)
{
    if (count)
        *count = e ? e->n_decisions : 0;
    return e ? e->decisions : NULL;
}

void gp_engine_decisions_clear(gp_engine *e)
{
    if (e)
        e->n_decisions = 0;
}
