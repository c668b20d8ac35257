/* capacity.c - the smallest fleet meeting the service level (see capacity.h).
 *
 * Worked example (tests/sim/test_capacity.c): two teams on 8-GPU nodes,
 * a runs an 8-GPU job over [0, 100), b one over [200, 300); a promise of
 * 8 GPUs each.  Static gives each team one node: 2 nodes.  Pooled, the
 * jobs never overlap: 1 node.  Offered work 1,600 GPU-s over the window
 * [0, 200]: static 16 GPUs -> 50 %, pooled 8 GPUs -> 100 %.
 */
#include "sim/capacity.h"

#include <stdlib.h>
#include <string.h>

#include "sim/metrics.h"
#include "sim/plots.h"
#include "sim/report.h"
#include "sim/setup.h"

gp_err gp_sim_bisect(int64_t lo, int64_t hi, int64_t max, gp_sim_meets_fn meets, void *ctx, int64_t *out,
                     int *probes, gp_error *err)
{
    int calls = 0, m;
    hi = hi < lo ? lo : hi;
    max = max < hi ? hi : max;
    while ((m = meets(ctx, hi, err)) == 0 && hi < max) { /* grow until it meets */
        calls++;
        lo = hi + 1;
        hi = hi * 2 < max ? hi * 2 : max;
    }
    calls++;
    while (m == 1 && lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        calls++;
        int r = meets(ctx, mid, err);
        if (r < 0) {
            m = r;
            break;
        }
        if (r)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (probes)
        *probes = calls;
    if (m < 0)
        return err ? err->code : GP_ERR_INVALID;
    *out = m == 1 ? hi : -1;
    return GP_OK;
}

/* First and last arrival (0, 0 for an empty trace). */
static void arrival_window(const gp_trace *t, int64_t *from, int64_t *to)
{
    *from = t->n_jobs ? INT64_MAX : 0;
    *to = t->n_jobs ? INT64_MIN : 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        *from = t->jobs[j].submit < *from ? t->jobs[j].submit : *from;
        *to = t->jobs[j].submit > *to ? t->jobs[j].submit : *to;
    }
}

double gp_sim_offered_gpu_s(const gp_trace *t)
{
    int64_t from, to;
    arrival_window(t, &from, &to);
    double work = 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        const gp_trace_job *tj = &t->jobs[j];
        int64_t end = tj->duration < 0 || tj->submit + tj->duration > to ? to : tj->submit + tj->duration;
        if (end > tj->submit)
            work += (double)gp_trace_job_milli(tj) / 1000.0 * (double)(end - tj->submit);
    }
    return work;
}

void gp_sim_whole_gpus_only(gp_trace *t, gp_fleet_file *fleet)
{
    for (size_t j = 0; j < t->n_jobs; j++) {
        gp_trace_job *tj = &t->jobs[j];
        if (tj->gpu_milli == 0 && tj->isolation == GP_ISO_EXCLUSIVE)
            continue;
        tj->gpus = 1;
        tj->gpu_milli = 0;
        tj->isolation = GP_ISO_EXCLUSIVE;
        tj->mig_profile[0] = '\0';
    }
    for (size_t n = 0; n < fleet->n_nodes; n++) {
        fleet->nodes[n].sharing = GP_SHARING_EXCLUSIVE;
        fleet->nodes[n].gpu_sharing = NULL;
    }
}

/* ---- fleets and guarantees of a size ---- */

typedef struct sized {
    gp_fleet_file fleet;         /* nodes owned here; pools borrowed from the base */
    char (*names)[24];
    gp_tenant_file tenants;      /* entries owned here */
} sized;

static void sized_free(sized *s)
{
    free(s->fleet.nodes);
    free(s->names);
    free(s->tenants.tenants);
    memset(s, 0, sizeof *s);
}

static gp_err fleet_of(const gp_fleet_file *base, int64_t n, sized *s, gp_error *err)
{
    s->fleet.nodes = calloc((size_t)n, sizeof *s->fleet.nodes);
    s->names = calloc((size_t)n, sizeof *s->names);
    if (!s->fleet.nodes || !s->names)
        return gp_error_set(err, GP_ERR_NOMEM, "capacity", "out of memory");
    for (int64_t k = 0; k < n; k++) {
        gp_node_spec *node = &s->fleet.nodes[k];
        *node = base->nodes[(size_t)(k * (int64_t)base->n_nodes / n)];
        snprintf(s->names[k], sizeof s->names[k], "c%lld", (long long)k);
        node->name = s->names[k];
        node->gpu_uuids = NULL;
    }
    s->fleet.n_nodes = (size_t)n;
    s->fleet.pools = base->pools;
    s->fleet.n_pools = base->n_pools;
    return GP_OK;
}

static int64_t type_gpus_milli(const gp_fleet_file *f, const char *type)
{
    int64_t sum = 0;
    for (size_t n = 0; n < f->n_nodes; n++)
        if (strcmp(f->nodes[n].gpu_type, type) == 0)
            sum += (int64_t)f->nodes[n].gpu_count * 1000;
    return sum;
}

/* True when a proper ancestor of entry i has a guarantee. */
static bool under_guarantee(const gp_tenant_file *tf, size_t i)
{
    const char *path = tf->tenants[i].path;
    for (size_t k = 0; k < tf->n_tenants; k++) {
        size_t len = strlen(tf->tenants[k].path);
        if (k != i && tf->tenants[k].spec.guarantee.set && strncmp(path, tf->tenants[k].path, len) == 0 &&
            path[len] == '/')
            return true;
    }
    return false;
}

static int64_t top_guarantees(const gp_tenant_file *tf, const char *type)
{
    int64_t sum = 0;
    for (size_t i = 0; i < tf->n_tenants; i++) {
        const gp_quota *g = &tf->tenants[i].spec.guarantee;
        for (int q = 0; g->set && q < g->n_gpu; q++)
            if (strcmp(g->gpu[q].type, type) == 0 && !under_guarantee(tf, i))
                sum += g->gpu[q].milli;
    }
    return sum;
}

/* The promises with every guarantee scaled to fit s->fleet (see capacity.h). */
static gp_err tenants_for(const gp_tenant_file *promises, sized *s, gp_error *err)
{
    s->tenants.n_tenants = promises ? promises->n_tenants : 0;
    s->tenants.tenants = calloc(s->tenants.n_tenants + 1, sizeof *s->tenants.tenants);
    if (!s->tenants.tenants)
        return gp_error_set(err, GP_ERR_NOMEM, "capacity", "out of memory");
    for (size_t i = 0; i < s->tenants.n_tenants; i++) {
        gp_tenant_entry *te = &s->tenants.tenants[i];
        *te = promises->tenants[i];
        for (int q = 0; te->spec.guarantee.set && q < te->spec.guarantee.n_gpu; q++) {
            int64_t have = type_gpus_milli(&s->fleet, te->spec.guarantee.gpu[q].type);
            int64_t want = top_guarantees(promises, te->spec.guarantee.gpu[q].type);
            if (want > have)
                te->spec.guarantee.gpu[q].milli = te->spec.guarantee.gpu[q].milli * have / want;
        }
    }
    return GP_OK;
}

/* ---- one probe ---- */

typedef struct probe {
    const gp_sim_capacity_config *c;
    const gp_sim_policy *policy;
    const gp_trace *trace;       /* the whole trace, or one team's */
    const bool *within;          /* per job of trace: within its team's promise */
    bool with_tenants;           /* false: a static team alone, no quotas */
    const char *label;
    gp_sim_result last;          /* the last run that met, for the figures */
    int64_t last_n;              /* its fleet in nodes; 0: none yet */
} probe;

/* Worst team's figures, or the whole run's (one team): false when one misses. */
static gp_err judge(probe *p, gp_sim_result *r, bool *meets, double *worst_mean, double *worst_p99,
                    gp_error *err)
{
    for (size_t j = 0; j < r->n_jobs; j++)
        r->jobs[j].within_guarantee = p->within[j];
    size_t n_groups = p->with_tenants ? r->n_groups : 1;
    *meets = true;
    *worst_mean = *worst_p99 = 0;
    for (size_t g = 0; g < n_groups; g++) {
        gp_sim_metrics m;
        gp_err rc = gp_sim_metrics_compute(r, p->trace, p->with_tenants ? g : GP_SIM_ALL_GROUPS, &m, err);
        if (rc)
            return rc;
        *meets = *meets && m.unfinished == 0 && m.failed == 0 && m.rejected == 0 &&
                 m.mean_wait_s <= (double)p->c->slo.mean_wait_s &&
                 m.within_p99_wait_s <= (double)p->c->slo.p99_wait_guaranteed_s;
        *worst_mean = m.mean_wait_s > *worst_mean ? m.mean_wait_s : *worst_mean;
        *worst_p99 = m.within_p99_wait_s > *worst_p99 ? m.within_p99_wait_s : *worst_p99;
    }
    return GP_OK;
}

static int probe_meets(void *ctx, int64_t n, gp_error *err)
{
    probe *p = ctx;
    sized s;
    memset(&s, 0, sizeof s);
    gp_sim_result r;
    memset(&r, 0, sizeof r);
    gp_err rc = fleet_of(p->c->base, n, &s, err);
    if (rc == GP_OK && p->with_tenants)
        rc = tenants_for(p->c->promises, &s, err);
    gp_sim_setup setup = {.fleet = &s.fleet, .tenants = p->with_tenants ? &s.tenants : NULL, .trace = p->trace};
    gp_sim_options opt = p->c->opt;
    opt.progress = NULL;
    opt.ledger = NULL;
    if (rc == GP_OK)
        rc = gp_sim_run(&setup, p->policy, &opt, &r, err);
    bool meets = false;
    double mean = 0, p99 = 0;
    if (rc == GP_OK)
        rc = judge(p, &r, &meets, &mean, &p99, err);
    sized_free(&s);
    if (rc) {
        gp_sim_result_free(&r);
        return -1;
    }
    if (p->c->log)
        fprintf(p->c->log, "capacity %s: %lld nodes: %s (worst team: mean wait %.0f s, within-promise p99 %.0f s)\n",
                p->label, (long long)n, meets ? "meets" : "misses", mean, p99);
    if (meets) {
        gp_sim_result_free(&p->last);
        p->last = r;
        p->last_n = n;
    } else {
        gp_sim_result_free(&r);
    }
    return meets ? 1 : 0;
}

/* Smallest fleet for one probe; p->last is left holding the run at it. */
static gp_err search(probe *p, int64_t start, int64_t *nodes, int *probes, gp_error *err)
{
    gp_err rc = gp_sim_bisect(1, start, 64 * start, probe_meets, p, nodes, probes, err);
    if (rc == GP_OK && *nodes > 0 && p->last_n != *nodes && probe_meets(p, *nodes, err) < 0)
        rc = err ? err->code : GP_ERR_INVALID;
    return rc;
}

/* ---- policies ---- */

/* Jobs within their team's promise, and the team of each job. */
static gp_err promise_marks(const gp_sim_capacity_config *c, gp_sim_result *marks, gp_error *err)
{
    gp_sim_setup setup = {.fleet = c->base, .tenants = c->promises, .trace = c->trace};
    memset(marks, 0, sizeof *marks);
    marks->n_jobs = c->trace->n_jobs;
    marks->jobs = calloc(marks->n_jobs ? marks->n_jobs : 1, sizeof *marks->jobs);
    if (!marks->jobs)
        return gp_error_set(err, GP_ERR_NOMEM, "capacity", "out of memory");
    return gp__sim_groups(&setup, marks, err);
}

gp_err gp_sim_team_trace(const gp_trace *t, const gp_sim_result *marks, uint32_t team, gp_trace *out, bool *within,
                         gp_error *err)
{
    gp_trace_init(out);
    memcpy(out->types, t->types, sizeof out->types);
    out->n_types = t->n_types;
    for (size_t j = 0; j < t->n_jobs; j++) {
        if (marks->job_group[j] != team)
            continue;
        gp_trace_job job = t->jobs[j];
        if (!gp_trace_tenant(out, t->tenants[t->jobs[j].tenant], &job.tenant))
            return gp_error_set(err, GP_ERR_NOMEM, "capacity", "out of memory");
        if (within)
            within[out->n_jobs] = marks->jobs[j].within_guarantee;
        gp_err rc = gp_trace_add(out, &job, err);
        if (rc)
            return rc;
    }
    return GP_OK;
}

static int64_t nodes_for(const gp_fleet_file *base, int64_t milli)
{
    int64_t gpus = 0;
    for (size_t n = 0; n < base->n_nodes; n++)
        gpus += base->nodes[n].gpu_count;
    int64_t per_node = base->n_nodes ? (gpus * 1000) / (int64_t)base->n_nodes : 8000;
    int64_t nodes = (milli + per_node - 1) / per_node;
    return nodes > 0 ? nodes : 1;
}

static int64_t fleet_gpus(const gp_fleet_file *base, int64_t n)
{
    int64_t gpus = 0;
    for (int64_t k = 0; k < n; k++)
        gpus += base->nodes[(size_t)(k * (int64_t)base->n_nodes / n)].gpu_count;
    return gpus;
}

/* What the runs at the fleets found add up to. */
typedef struct tally {
    double gpu_s, cap_s;         /* allocation: GPU-seconds in use, GPUs x window (metrics.h) */
    double worst_mean, worst_p99;
} tally;

static gp_err tally_add(probe *p, tally *t, gp_error *err)
{
    const gp_sim_result *r = &p->last;
    t->gpu_s += r->allocated_gpu_s;
    t->cap_s += (double)r->capacity_milli / 1000.0 * (double)(r->t_last_arrival - r->t_first_arrival);
    double mean, p99;
    bool meets;
    gp_err rc = judge(p, &p->last, &meets, &mean, &p99, err);
    t->worst_mean = mean > t->worst_mean ? mean : t->worst_mean;
    t->worst_p99 = p99 > t->worst_p99 ? p99 : t->worst_p99;
    return rc;
}

static gp_err run_static(const gp_sim_capacity_config *c, const gp_sim_policy *policy, const gp_sim_result *marks,
                         bool *within, gp_sim_capacity_row *row, tally *t, gp_error *err)
{
    gp_err rc = GP_OK;
    for (uint32_t g = 0; rc == GP_OK && g < marks->n_groups; g++) {
        gp_trace team;
        rc = gp_sim_team_trace(c->trace, marks, g, &team, within, err);
        probe p = {.c = c, .policy = policy, .trace = &team, .within = within, .label = marks->groups[g]};
        int64_t nodes = -1, promise = marks->group_guarantee_milli[g];
        int probes = 0;
        if (rc == GP_OK)
            rc = search(&p, 4 * nodes_for(c->base, promise > 0 ? promise : 8000), &nodes, &probes, err);
        row->probes += probes;
        if (rc == GP_OK && (nodes < 0 || row->nodes < 0)) {
            row->nodes = row->gpus = -1;
        } else if (rc == GP_OK) {
            row->nodes += nodes;
            row->gpus += fleet_gpus(c->base, nodes);
            rc = tally_add(&p, t, err);
        }
        if (c->log && rc == GP_OK)
            fprintf(c->log, "capacity static: team %s needs %lld nodes\n", marks->groups[g], (long long)nodes);
        gp_sim_result_free(&p.last);
        gp_trace_free(&team);
    }
    return rc;
}

static gp_err run_pooled(const gp_sim_capacity_config *c, const gp_sim_policy *policy, const gp_sim_result *marks,
                         bool *within, gp_sim_capacity_row *row, tally *t, gp_error *err)
{
    for (size_t j = 0; j < c->trace->n_jobs; j++)
        within[j] = marks->jobs[j].within_guarantee;
    probe p = {.c = c, .policy = policy, .trace = c->trace, .within = within, .with_tenants = true,
               .label = policy->name};
    gp_err rc = search(&p, (int64_t)c->base->n_nodes, &row->nodes, &row->probes, err);
    row->gpus = row->nodes > 0 ? fleet_gpus(c->base, row->nodes) : -1;
    if (rc == GP_OK && row->nodes > 0)
        rc = tally_add(&p, t, err);
    gp_sim_result_free(&p.last);
    return rc;
}

gp_err gp_sim_capacity_run(const gp_sim_capacity_config *c, const gp_sim_policy *policy, gp_sim_capacity_row *row,
                           gp_error *err)
{
    memset(row, 0, sizeof *row);
    snprintf(row->policy, sizeof row->policy, "%s", policy->name);
    if (c->base->n_nodes == 0 || c->trace->n_jobs == 0)
        return gp_error_set(err, GP_ERR_INVALID, "capacity", "the capacity experiment needs a fleet and jobs");
    gp_sim_result marks;
    gp_err rc = promise_marks(c, &marks, err);
    bool *within = calloc(c->trace->n_jobs, sizeof *within);
    if (rc == GP_OK && !within)
        rc = gp_error_set(err, GP_ERR_NOMEM, "capacity", "out of memory");
    tally t = {0};
    if (rc == GP_OK && policy->kind == GP_SIM_STATIC)
        rc = run_static(c, policy, &marks, within, row, &t, err);
    else if (rc == GP_OK)
        rc = run_pooled(c, policy, &marks, within, row, &t, err);
    gp_sim_result_free(&marks);
    free(within);
    if (rc)
        return rc;
    int64_t from, to;
    arrival_window(c->trace, &from, &to);
    double window = (double)(to - from);
    double offered = c->offered_gpu_s > 0 ? c->offered_gpu_s : gp_sim_offered_gpu_s(c->trace);
    row->utilization_pct = row->gpus > 0 && window > 0 ? 100.0 * offered / ((double)row->gpus * window) : 0;
    row->allocation_pct = t.cap_s > 0 ? 100.0 * t.gpu_s / t.cap_s : 0;
    row->worst_mean_wait_s = t.worst_mean;
    row->worst_within_p99_s = t.worst_p99;
    return GP_OK;
}

/* ---- outputs ---- */

gp_err gp_sim_capacity_write(const char *dir, const char *label, const gp_sim_capacity_row *rows, size_t n,
                             gp_error *err)
{
    FILE *f = gp_sim_open_out(dir, "capacity.csv", err);
    if (!f)
        return GP_ERR_INVALID;
    fprintf(f, "policy,nodes,gpus,utilization_pct,allocation_pct,worst_mean_wait_s,worst_within_p99_s,probes\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s,%lld,%lld,%.3f,%.3f,%.0f,%.0f,%d\n", rows[i].policy, (long long)rows[i].nodes,
                (long long)rows[i].gpus, rows[i].utilization_pct, rows[i].allocation_pct, rows[i].worst_mean_wait_s,
                rows[i].worst_within_p99_s, rows[i].probes);
    fclose(f);
    char title[256];
    snprintf(title, sizeof title, "smallest fleet meeting the service level: %s", label);
    FILE *g = gp_sim_plot_begin(dir, "capacity", title, "policy", "fleet, GPUs", err);
    if (!g)
        return GP_ERR_INVALID;
    fprintf(g, "set y2label \"utilization, %% (offered work / fleet)\"\nset y2range [0:100]\nset yrange [0:*]\n"
               "set ytics nomirror\nset y2tics\nset style fill solid 0.6\nset boxwidth 0.6\n"
               "set datafile missing '-1'\n");
    gp_sim_plot_both(g, "capacity",
                     "plot 'capacity.csv' using 0:3:xtic(1) with boxes title 'fleet GPUs' axes x1y1, \\\n"
                     "     '' using 0:4 with linespoints pt 7 lw 2 title 'utilization %' axes x1y2, \\\n"
                     "     '' using 0:4:(sprintf('%.1f %%', $4)) with labels offset 0,1 notitle axes x1y2");
    fclose(g);
    return GP_OK;
}
