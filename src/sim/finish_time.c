/* finish_time.c - each team replayed alone on its share, and the ratios
 * of completion times (see finish_time.h).
 *
 * A team's cluster is cut from the fleet file: for each GPU type of its
 * guarantee, k nodes of the type picked evenly (node i of k is the type's
 * node floor(i x n / k)), k = the GPUs wanted over the type's mean node
 * size, rounded up, the last one cut to the GPUs left.  Node names, blocks
 * and pools stay the fleet's.
 */
#include "sim/finish_time.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/capacity.h"
#include "sim/setup.h"

/* The tenant file's guarantee of group path `path`; NULL when it has none. */
static const gp_quota *guarantee_of(const gp_tenant_file *tf, const char *path)
{
    for (size_t i = 0; tf && i < tf->n_tenants; i++)
        if (strcmp(tf->tenants[i].path, path) == 0 && tf->tenants[i].spec.guarantee.set)
            return &tf->tenants[i].spec.guarantee;
    return NULL;
}

/* Node `base` cut down to `gpus` GPUs. */
static gp_node_spec cut_node(const gp_node_spec *base, int gpus)
{
    gp_node_spec n = *base;
    if (gpus >= base->gpu_count)
        return n;
    n.gpu_count = gpus;
    n.cpu_millis = base->cpu_millis * gpus / base->gpu_count;
    n.mem_mib = base->mem_mib * gpus / base->gpu_count;
    n.gpu_uuids = NULL;
    if (n.nvlink_domains < 1 || gpus % n.nvlink_domains)
        n.nvlink_domains = 1;
    return n;
}

/* Append to nodes (room for every node of base) `gpus` GPUs of type
 * `type`: the type's nodes picked evenly, then (nodes smaller than the
 * mean) the others in order, the last one cut; false when out of memory. */
static bool add_type(const gp_fleet_file *base, const char *type, int64_t gpus, gp_node_spec *nodes, size_t *n)
{
    size_t of_type = 0, *idx = malloc((base->n_nodes ? base->n_nodes : 1) * sizeof *idx);
    bool *used = calloc(base->n_nodes ? base->n_nodes : 1, sizeof *used);
    if (!idx || !used) {
        free(idx);
        free(used);
        return false;
    }
    int64_t type_gpus = 0;
    for (size_t k = 0; k < base->n_nodes; k++)
        if (strcmp(base->nodes[k].gpu_type, type) == 0) {
            idx[of_type++] = k;
            type_gpus += base->nodes[k].gpu_count;
        }
    int64_t mean = of_type && type_gpus / (int64_t)of_type > 0 ? type_gpus / (int64_t)of_type : 1;
    size_t want = of_type ? (size_t)((gpus + mean - 1) / mean) : 0;
    want = want < of_type ? want : of_type;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; gpus > 0 && i < (pass ? of_type : want); i++) {
            size_t at = pass ? i : i * of_type / want;
            if (used[at])
                continue;
            used[at] = true;
            const gp_node_spec *node = &base->nodes[idx[at]];
            int take = gpus < node->gpu_count ? (int)gpus : node->gpu_count;
            nodes[(*n)++] = cut_node(node, take);
            gpus -= take;
        }
    free(idx);
    free(used);
    return true;
}

/* The team's cluster (nodes malloc'ed; pools borrowed from base). */
static gp_err team_fleet(const gp_fleet_file *base, const gp_quota *g, gp_fleet_file *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    out->nodes = calloc(base->n_nodes ? base->n_nodes : 1, sizeof *out->nodes);
    if (!out->nodes)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    for (int i = 0; i < g->n_gpu; i++) {
        int64_t gpus = (g->gpu[i].milli + 500) / 1000;
        if (!add_type(base, g->gpu[i].type, g->gpu[i].milli > 0 && gpus < 1 ? 1 : gpus, out->nodes, &out->n_nodes))
            return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    }
    out->pools = base->pools;
    out->n_pools = base->n_pools;
    return GP_OK;
}

/* Drop from team the jobs that ask for more GPUs of their types than the
 * cluster has (marking them kept[k] = false). */
static void drop_too_large(gp_trace *team, const gp_fleet_file *cluster, bool *kept)
{
    size_t w = 0;
    for (size_t k = 0; k < team->n_jobs; k++) {
        const gp_trace_job *j = &team->jobs[k];
        int64_t room = 0;
        for (size_t n = 0; n < cluster->n_nodes; n++) {
            bool accepted = j->type_mask == 0;
            for (int b = 0; b < team->n_types && !accepted; b++)
                accepted = (j->type_mask >> b & 1u) && strcmp(team->types[b], cluster->nodes[n].gpu_type) == 0;
            room += accepted ? cluster->nodes[n].gpu_count * 1000 : 0;
        }
        kept[k] = gp_trace_job_milli(j) <= room;
        if (kept[k]) {
            team->jobs[w] = *j;
            team->jobs[w].id = w + 1;
            w++;
        }
    }
    team->n_jobs = w;
}

/* Replay group g alone; its jobs' completion times into d->jct. */
static gp_err replay_team(const gp_sim_setup *setup, const gp_sim_options *opt, const gp_sim_result *groups,
                          uint32_t g, const gp_quota *guarantee, gp_sim_dedicated *d, gp_error *err)
{
    gp_trace team;
    gp_fleet_file cluster;
    bool *kept = NULL;
    gp_sim_result r;
    memset(&r, 0, sizeof r);
    gp_err rc = gp_sim_team_trace(setup->trace, groups, g, &team, NULL, err);
    if (rc == GP_OK)
        rc = team_fleet(setup->fleet, guarantee, &cluster, err);
    else
        memset(&cluster, 0, sizeof cluster);
    if (rc == GP_OK && !(kept = malloc((team.n_jobs ? team.n_jobs : 1) * sizeof *kept)))
        rc = gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    if (rc == GP_OK && cluster.n_nodes > 0) {
        size_t all = team.n_jobs;
        drop_too_large(&team, &cluster, kept);
        gp_sim_policy alone = {.name = "gpupool", .kind = GP_SIM_GPUPOOL};
        gp_sim_setup s = {.fleet = &cluster, .tenants = NULL, .trace = &team};
        if (team.n_jobs > 0)
            rc = gp_sim_run(&s, &alone, opt, &r, err);
        for (size_t j = 0, k = 0, ran = 0; rc == GP_OK && j < setup->trace->n_jobs && k < all; j++) {
            if (groups->job_group[j] != g)
                continue;
            if (kept[k++]) {
                const gp_sim_job_result *jr = &r.jobs[ran++];
                d->jct[j] = jr->outcome == GP_SIM_DONE ? jr->end - setup->trace->jobs[j].submit : -1;
            }
        }
        d->teams++;
    }
    gp_sim_result_free(&r);
    free(kept);
    free(cluster.nodes);
    gp_trace_free(&team);
    return rc;
}

/* The report groups of setup (gp__sim_groups) into a bare result. */
static gp_err groups_of(const gp_sim_setup *setup, gp_sim_result *groups, gp_error *err)
{
    memset(groups, 0, sizeof *groups);
    groups->n_jobs = setup->trace->n_jobs;
    groups->jobs = calloc(groups->n_jobs ? groups->n_jobs : 1, sizeof *groups->jobs);
    if (!groups->jobs)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    return gp__sim_groups(setup, groups, err);
}

gp_err gp_sim_dedicated_run(const gp_sim_setup *setup, const gp_sim_options *opt, gp_sim_dedicated *out,
                            gp_error *err)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(out, 0, sizeof *out);
    out->n_jobs = setup->trace->n_jobs;
    out->jct = malloc((out->n_jobs ? out->n_jobs : 1) * sizeof *out->jct);
    if (!out->jct)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    for (size_t j = 0; j < out->n_jobs; j++)
        out->jct[j] = -1;
    gp_sim_options o = *opt;
    o.ledger = NULL;
    o.progress = NULL;
    o.record_arrivals = false;
    o.fail_unplaced = false;
    gp_sim_result groups;
    gp_err rc = groups_of(setup, &groups, err);
    for (uint32_t g = 0; rc == GP_OK && g < groups.n_groups; g++) {
        const gp_quota *guarantee = guarantee_of(setup->tenants, groups.groups[g]);
        if (guarantee)
            rc = replay_team(setup, &o, &groups, g, guarantee, out, err);
    }
    gp_sim_result_free(&groups);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc)
        gp_sim_dedicated_free(out);
    return rc;
}

void gp_sim_dedicated_free(gp_sim_dedicated *d)
{
    free(d->jct);
    memset(d, 0, sizeof *d);
}

double gp_sim_finish_ratio(int64_t shared_jct, int64_t dedicated_jct)
{
    if (dedicated_jct < 0)
        return -1;
    return (double)(shared_jct > 1 ? shared_jct : 1) / (double)(dedicated_jct > 1 ? dedicated_jct : 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank p of n sorted values; -1 when n is 0. */
static double rank_of(const double *v, size_t n, double p)
{
    if (n == 0)
        return -1;
    size_t rank = (size_t)ceil(p * (double)n);
    return v[rank == 0 ? 0 : rank - 1];
}

gp_err gp_sim_finish_stats_compute(const gp_sim_result *r, const gp_trace *t, const gp_sim_dedicated *d,
                                   size_t group, gp_sim_finish_stats *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    size_t cap = r->n_jobs ? r->n_jobs : 1, n_within = 0;
    double *rho = malloc(cap * sizeof *rho), *within = malloc(cap * sizeof *within);
    if (!rho || !within) {
        free(rho);
        free(within);
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    }
    out->team_within = true;
    for (size_t j = 0; j < r->n_jobs; j++) {
        const gp_sim_job_result *jr = &r->jobs[j];
        if ((group != GP_SIM_ALL_GROUPS && r->job_group[j] != group) || jr->outcome == GP_SIM_REJECTED)
            continue;
        out->team_within = out->team_within && jr->within_guarantee;
        int64_t end = jr->outcome == GP_SIM_DONE ? jr->end : r->t_end;
        double x = d && j < d->n_jobs ? gp_sim_finish_ratio(end - t->jobs[j].submit, d->jct[j]) : -1;
        if (x < 0) {
            out->no_ratio++;
            continue;
        }
        rho[out->jobs++] = x;
        if (jr->within_guarantee)
            within[n_within++] = x;
    }
    qsort(rho, out->jobs, sizeof *rho, cmp_double);
    qsort(within, n_within, sizeof *within, cmp_double);
    out->p50 = rank_of(rho, out->jobs, 0.50);
    out->p95 = rank_of(rho, out->jobs, 0.95);
    out->max = out->jobs ? rho[out->jobs - 1] : -1;
    out->within_p95 = rank_of(within, n_within, 0.95);
    free(rho);
    free(within);
    return GP_OK;
}

gp_err gp_sim_finish_summary_compute(const gp_sim_result *r, const gp_trace *t, const gp_sim_dedicated *d,
                                     gp_sim_finish_summary *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    out->worst_within_p95 = -1;
    for (size_t g = 0; g < r->n_groups; g++) {
        gp_sim_finish_stats st;
        gp_err rc = gp_sim_finish_stats_compute(r, t, d, g, &st, err);
        if (rc)
            return rc;
        out->teams_all_within += st.team_within && st.jobs > 0;
        if (st.within_p95 < 0)
            continue;
        out->teams_judged++;
        out->teams_met += st.within_p95 <= 1.0;
        out->worst_within_p95 = st.within_p95 > out->worst_within_p95 ? st.within_p95 : out->worst_within_p95;
    }
    return gp_sim_finish_stats_compute(r, t, d, GP_SIM_ALL_GROUPS, &out->all, err);
}
