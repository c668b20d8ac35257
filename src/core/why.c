/* why.c - answers to "why is my job waiting?".
 *
 * The pass stores a wait reason as a code with numbers (cheap: it runs for
 * every pending job every pass); this file turns it into a sentence a
 * person can act on only when somebody asks, e.g.
 *
 *   "limit of research on H100 reached: 120 + 16 > 128 GPUs in use"
 *   "no fabric block can hold 64 H100 GPUs even when empty (largest 32)"
 *   "held for the reservation of job 42 (research/nlp), expected to
 *    start at t=5400; this job would still run then"
 *
 * gp_engine_why is here; the other read-only queries of engine.h are
 * queries.c's, amounts in words amounts.c's, the enum names names.c's.  A
 * top file (internal.h, "Layers"): nothing in src/core calls it.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "GPU" or "GPUs", "node" or "nodes": the noun for a count of n. */
static const char *noun(int64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static const char *tenant_name(const gp_engine *e, uint32_t t)
{
    return t < e->n_tenants ? e->tenants[t].path : "?";
}

/* The most GPUs of type t on one node of shape s (0: none). */
static int largest_node(const gp__fleet_shape *s, int t)
{
    int g = GP_MAX_GPUS_PER_NODE;
    while (g > 0 && s->empty_replicas[t][g] == 0)
        g--;
    return g;
}

/* A job whose replicas are too big or too many for shape s (w: a
 * TOPOLOGY wait against s): what it asks, what the largest node, block or
 * domain of that type holds, and what to ask for instead; *field (when
 * field is not NULL) the job field to change. */
static int topology_format(const gp_engine *e, const gp__fleet_shape *s, const gp__job *j, const gp_wait *w, char *buf,
                           size_t len, const char **field)
{
    const char *type = gp__dim_label(e, w->dim);
    int node = largest_node(s, w->dim);
    const char *f = "replicas";
    int n;
    if (j->topology != GP_TOPO_NVLINK && j->gpus > node) {
        f = "gpus";
        n = snprintf(buf, len, "%d %s GPUs in one replica, but the largest %s node has %d; ask for at most %d per "
                     "replica (and more replicas)", j->gpus, type, type, node, node);
    } else if (j->topology == GP_TOPO_NVLINK) {
        f = "topology";
        n = snprintf(buf, len, "%lld %s GPUs in one NVLink domain, but the largest %s domain has %d even when empty; "
                     "ask for fewer GPUs, or topology block or any", (long long)w->b, type, type,
                     s->max_domain[w->dim]);
    } else {
        int64_t fit = w->a / j->gpus;
        n = snprintf(buf, len, "%d replicas of %d %s %s%s, but the %s holds %lld such %s even when empty; "
                     "ask for fewer replicas%s", j->replicas, j->gpus, type, noun(j->gpus, "GPU", "GPUs"),
                     j->topology == GP_TOPO_BLOCK ? " in one fabric block" : "",
                     j->topology == GP_TOPO_BLOCK ? "largest block" : "whole fleet", (long long)fit,
                     noun(fit, "replica", "replicas"), j->topology == GP_TOPO_BLOCK ? " or topology any" : "");
    }
    if (field)
        *field = f;
    return n;
}

/* Why a job can never fit shape s, w being gp__place_possible_in's answer
 * against it (TOPOLOGY, NODE_SHAPE or SHARING_MODE); *field (when field
 * is not NULL) the job field to change. */
static size_t never_fits_format(const gp_engine *e, const gp__fleet_shape *s, const gp__job *j, const gp_wait *w,
                                char *buf, size_t len, const char **field)
{
    const char *type = gp__dim_label(e, w->dim), *f = "share";
    int n;
    if (w->code == GP_WAIT_TOPOLOGY)
        return (size_t)topology_format(e, s, j, w, buf, len, field);
    if (w->code == GP_WAIT_NODE_SHAPE && j->cpu > w->a) {
        f = "cpu_millis";
        n = snprintf(buf, len, "%lld millicores per replica, but the largest %s node has %lld", (long long)j->cpu,
                     type, (long long)w->a);
    } else if (w->code == GP_WAIT_NODE_SHAPE) {
        f = "mem_mib";
        n = snprintf(buf, len, "%lld MiB of memory per replica, but the largest %s node has %lld", (long long)j->mem,
                     type, (long long)w->b);
    } else if (j->isolation == GP_ISO_MIG) {
        n = snprintf(buf, len, "no %s GPU of the fleet is in MIG mode with a model that offers %s", type,
                     j->mig_profile);
    } else {
        n = snprintf(buf, len, "no %s GPU of the fleet is in %s mode", type,
                     j->isolation == GP_ISO_MPS ? "MPS" : "time-slice");
    }
    if (field)
        *field = f;
    return n < 0 ? 0 : (size_t)n;
}

static size_t wait_format(const gp_engine *e, const gp__job *j, const gp_wait *w, char *buf, size_t len)
{
    char a[32], b[32], c[32];
    gp__amount_number(a, sizeof a, w->dim, w->a);
    gp__amount_number(b, sizeof b, w->dim, w->b);
    gp__amount_number(c, sizeof c, w->dim, w->c);
    const char *type = gp__dim_label(e, w->dim);
    int n;
    switch (w->code) {
    case GP_WAIT_NEW:
        n = snprintf(buf, len, "waiting for the next scheduling pass");
        break;
    case GP_WAIT_LIMIT:
        if (w->b > w->c)
            n = snprintf(buf, len, "cannot run while the limit stands: it needs %s%s of %s, more than the limit of "
                         "%s (%s%s) even with nothing else running; ask for less or for a higher limit",
                         b, gp__amount_unit(w->dim, w->b), type, tenant_name(e, w->tenant), c,
                         gp__amount_unit(w->dim, w->c));
        else
            n = snprintf(buf, len, "limit of %s on %s reached: %s + %s > %s%s in use", tenant_name(e, w->tenant),
                         type, a, b, c, gp__amount_unit(w->dim, w->c));
        break;
    case GP_WAIT_USER_LIMIT:
        if (w->b > w->c)
            n = snprintf(buf, len, "cannot run while the limit stands: it needs %s%s of %s, more than the per-user "
                         "limit in %s (%s%s); ask for less or for a higher limit",
                         b, gp__amount_unit(w->dim, w->b), type, tenant_name(e, w->tenant), c,
                         gp__amount_unit(w->dim, w->c));
        else
            n = snprintf(buf, len, "per-user limit in %s on %s reached: %s + %s > %s%s",
                         tenant_name(e, w->tenant), type, a, b, c, gp__amount_unit(w->dim, w->c));
        break;
    case GP_WAIT_NO_GPU_TYPE:
        n = snprintf(buf, len, "no healthy, schedulable GPU of an accepted type is in the fleet");
        break;
    case GP_WAIT_TOPOLOGY:
        n = (int)never_fits_format(e, &e->fleet.shape, j, w, buf, len, NULL);
        break;
    case GP_WAIT_NODE_SHAPE:
        n = snprintf(buf, len, "no node of an accepted type has %lld millicores and %lld MiB for one replica "
                     "(largest: %lld millicores, %lld MiB)",
                     (long long)j->cpu, (long long)j->mem, (long long)w->a, (long long)w->b);
        break;
    case GP_WAIT_CAPACITY:
        if (j->isolation == GP_ISO_MIG)
            n = snprintf(buf, len, "waiting for room: no %s GPU in MIG mode can take a %s instance now (layouts "
                         "change only around running instances, at most once per %llds per GPU)",
                         type, j->mig_profile, (long long)e->cfg.mig_reconfigure_interval_s);
        else if (j->isolation == GP_ISO_MPS || j->isolation == GP_ISO_TIMESLICE)
            n = snprintf(buf, len, "waiting for room: no %s GPU in %s mode has room for this share for its trust "
                         "domain", type, j->isolation == GP_ISO_MPS ? "MPS" : "time-slice");
        else if (w->tenant != GP__NONE && w->tenant != j->tenant)
            n = snprintf(buf, len, "waiting for capacity: %lld %s %s free, needs %lld (%s topology); %s went "
                         "ahead in the fair order",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), (long long)w->b,
                         gp_topology_name(j->topology),
                         tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len, "waiting for capacity: %lld %s %s free, needs %lld (%s topology)",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), (long long)w->b,
                         gp_topology_name(j->topology));
        break;
    case GP_WAIT_LENDING:
        n = snprintf(buf, len,
                     "the %lld free %s %s kept for tenants that do not lend their idle guarantee (%lld held)",
                     (long long)w->a, type, w->a == 1 ? "GPU is" : "GPUs are", (long long)w->b);
        break;
    case GP_WAIT_RESERVATION:
        if (w->time == GP__START_UNKNOWN)
            n = snprintf(buf, len,
                         "held for the reservation of job %llu (%s), which starts once running jobs without a time "
                         "limit or expected runtime end; until then its nodes take no other work",
                         (unsigned long long)w->job, tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len,
                         "held for the reservation of job %llu (%s), expected to start at t=%lld; this job would "
                         "still be running then",
                         (unsigned long long)w->job, tenant_name(e, w->tenant), (long long)w->time);
        break;
    case GP_WAIT_RESERVED:
        if (w->time == GP__START_UNKNOWN)
            n = snprintf(buf, len, "first in line for %s: %lld %s held; starts once the jobs on %s without a "
                         "time limit or expected runtime end", type, (long long)w->a, noun(w->a, "node", "nodes"),
                         noun(w->a, "it", "them"));
        else
            n = snprintf(buf, len, "first in line for %s: %lld %s held, expected to start at t=%lld", type,
                         (long long)w->a, noun(w->a, "node", "nodes"), (long long)w->time);
        break;
    case GP_WAIT_RECLAIM:
        if (w->b == 2) /* from a pool its tenant owns (reclaim.c) */
            n = snprintf(buf, len, "%s takes its own pool back: %lld borrowing %s from other tenants preempted, grace "
                         "ends at t=%lld", tenant_name(e, w->tenant), (long long)w->a, noun(w->a, "job", "jobs"),
                         (long long)w->time);
        else if (w->b) /* for fair share (reclaim.c) */
            n = snprintf(buf, len, "%s is below its fair share: %lld borrowing %s of tenants above theirs preempted, "
                         "grace ends at t=%lld", tenant_name(e, w->tenant), (long long)w->a,
                         noun(w->a, "job", "jobs"), (long long)w->time);
        else
            n = snprintf(buf, len, "reclaiming the guarantee of %s: %lld borrowing %s preempted, grace ends at t=%lld",
                         tenant_name(e, w->tenant), (long long)w->a, noun(w->a, "job", "jobs"), (long long)w->time);
        break;
    case GP_WAIT_TRUST:
        if (w->tenant == j->tenant)
            n = snprintf(buf, len, "tenant %s is untrusted: %s is not allowed; cancel and resubmit as exclusive or mig, "
                         "or ask an admin to trust %s", tenant_name(e, j->tenant), gp_isolation_name(j->isolation),
                         tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len, "tenant %s is untrusted (inherited from %s): %s is not allowed; cancel and resubmit "
                         "as exclusive or mig, or ask an admin to trust %s", tenant_name(e, j->tenant),
                         tenant_name(e, w->tenant), gp_isolation_name(j->isolation), tenant_name(e, w->tenant));
        break;
    case GP_WAIT_SHARING_MODE:
        if (j->isolation == GP_ISO_MIG)
            n = snprintf(buf, len, "cannot fit as the fleet stands: no healthy, schedulable GPU of an accepted type "
                         "(%s, ...) is in MIG mode with a model that offers %s; it waits for such a GPU",
                         type, j->mig_profile);
        else
            n = snprintf(buf, len, "cannot fit as the fleet stands: no healthy, schedulable GPU of an accepted type "
                         "(%s, ...) is in %s mode; it waits for such a GPU",
                         type, j->isolation == GP_ISO_MPS ? "MPS" : "time-slice");
        break;
    case GP_WAIT_DEDICATED:
        if (w->c == 2)
            n = snprintf(buf, len, "waiting for capacity: its free GPUs are in pool %s owned by tenant %s, which does "
                         "not lend them (%lld free %s %s in such pools; it needs %lld)",
                         w->pool < e->fleet.n_pools ? e->fleet.pools[w->pool].name : "",
                         w->pool < e->fleet.n_pools ? e->fleet.pools[w->pool].spec.owner : "",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), (long long)w->b);
        else if (w->c == 1)
            n = snprintf(buf, len, "waiting for a node of its own: %s has dedicated nodes, and the %lld free %s %s "
                         "that would hold it are on nodes running other tenants' jobs; it starts once a node with "
                         "room runs nothing from outside %s",
                         tenant_name(e, w->tenant), (long long)w->a, type, noun(w->a, "GPU", "GPUs"),
                         tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len, "waiting for capacity: %lld free %s %s %s on nodes dedicated to %s, which share "
                         "a node with no one else; it needs %lld",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), noun(w->a, "is", "are"),
                         tenant_name(e, w->tenant), (long long)w->b);
        break;
    case GP_WAIT_HELD:
        n = snprintf(buf, len, "held by %s: it is not placed until released (gpupool release %llu)", j->held_by,
                     (unsigned long long)j->id);
        break;
    case GP_WAIT_BOOKING:
        n = snprintf(buf, len, "waiting for its booking: it begins at t=%lld, and the job runs on its GPUs then",
                     (long long)w->time);
        break;
    case GP_WAIT_BACKOFF:
        n = snprintf(buf, len, "restarting after a failure (restart %lld of %lld, restart_policy on-failure): eligible "
                     "again at t=%lld", (long long)w->a, (long long)w->b, (long long)w->time);
        break;
    default:
        n = snprintf(buf, len, "not waiting");
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t gp_engine_why(const gp_engine *e, uint64_t id, char *buf, size_t len)
{
    if (!e || !buf || len == 0)
        return 0;
    uint32_t job = gp__job_lookup(e, id);
    if (job == GP__NONE) {
        int n = snprintf(buf, len, "no job %llu", (unsigned long long)id);
        return n < 0 ? 0 : (size_t)n;
    }
    const gp__job *j = &e->jobs[job];
    if (j->state == GP_JOB_PENDING)
        return wait_format(e, j, &j->wait, buf, len);
    const gp_history_entry *h = &e->histories[job].entry[(j->n_history + GP__HISTORY - 1) % GP__HISTORY];
    int n = snprintf(buf, len, "%s", j->n_history > 0 ? h->reason : gp_job_state_name(j->state));
    return n < 0 ? 0 : (size_t)n;
}


/* A job of this spec (checked) as the placement tables see it. */
static void job_shape(const gp_engine *e, const gp_job_spec *s, gp__job *j)
{
    memset(j, 0, sizeof *j);
    j->replicas = s->replicas;
    j->gpus = s->gpus;
    j->type_mask = gp__job_type_mask(&e->fleet, s);
    j->cpu = s->cpu_millis;
    j->mem = s->mem_mib;
    j->topology = s->topology;
    j->isolation = s->isolation;
    snprintf(j->mig_profile, sizeof j->mig_profile, "%s", s->isolation == GP_ISO_MIG ? s->share.mig_profile : "");
}

/* The types a job names, "H200" or "H200 or B200", none of which any
 * registered node has (a NO_GPU_TYPE wait against the registered shape). */
static void named_types_format(const gp_engine *e, const gp__job *j, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < e->fleet.n_types && used < len; t++)
        if (j->type_mask & (1u << t)) {
            int n = snprintf(buf + used, len - used, "%s%s", used ? " or " : "", e->fleet.types[t]);
            used += n < 0 ? 0 : (size_t)n;
        }
}

gp_err gp_engine_job_fits(const gp_engine *e, const gp_job_spec *spec, gp_error *err)
{
    gp__fleet_shape *registered = malloc(sizeof *registered);
    if (!registered || !gp__fleet_registered_shape(&e->fleet, registered)) {
        free(registered);
        return gp_error_set(err, GP_ERR_NOMEM, "gpus", "out of memory");
    }
    gp__job j;
    job_shape(e, spec, &j);
    gp_wait w = gp__place_possible_in(&e->fleet, registered, &j);
    gp_err rc = GP_OK;
    if (w.code == GP_WAIT_NO_GPU_TYPE && j.type_mask != 0xff) { /* it names types (declared) no node has */
        char types[GP_MAX_GPU_TYPES * (GP_NAME_MAX + 4)];
        named_types_format(e, &j, types, sizeof types);
        rc = gp_error_set(err, GP_ERR_NEVER_FITS, "gpu_types", "no node of GPU type %s has joined the fleet yet",
                          types);
    } else if (w.code != GP_WAIT_NONE && w.code != GP_WAIT_NO_GPU_TYPE) { /* any type, no GPU node yet: waits */
        char text[GP_ERROR_MESSAGE_MAX];
        const char *field;
        never_fits_format(e, registered, &j, &w, text, sizeof text, &field);
        rc = gp_error_set(err, GP_ERR_NEVER_FITS, field, "%s", text);
    }
    free(registered);
    return rc;
}
