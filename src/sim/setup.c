/* setup.c - one engine per policy, and the groups reports are made of.
 *
 * Policies differ only in how the engine is configured (simulator.h):
 * static partitioning caps every guaranteed tenant at its guarantee, FIFO
 * sends every job to one quota-free tenant, the placement policies set a
 * score on every pool.  The fleet and the trace are the same for all.
 *
 * Report groups.  A trace tenant (the leaf its jobs run under) reports
 * under its nearest ancestor-or-self that has a guarantee in the tenant
 * file, else under itself: the synthetic world's projects report under
 * their team, an ITP cluster under itself.  A job is "within guarantee"
 * when its group's ideal demand (every job of the group running from its
 * submit time for its duration, no queueing) including the job itself fits
 * under the group's guarantee at its submit time: the jobs gpupool
 * promises to start promptly.  This depends on the trace only, so every
 * policy is judged on the same jobs.
 *
 * A group's entitlement (fairness.h) is the share of the fleet
 * hierarchical DRF gives it, read off the tenant tree (the tenant file and
 * the trace's tenants) the same way for every policy.  Example: 8 H100 and
 * 8 A100; a guarantees {H100: 4, A100: 2} (default weight 6, its
 * guaranteed GPUs), b has no guarantee (weight 1), c none and weight 3:
 * 6/10, 1/10, 3/10.  (Its guarantee as a share, max(4/8, 2/8) = 0.5, is
 * not on the scale of the weight shares: a split DRF calls fair would read
 * as unfair.)  Under an org: org o (weight 8) next to a top-level team z
 * (weight 2), o's teams p (weight 3) and q (weight 1): p 8/10 x 3/4 = 0.6.
 */
#include "sim/setup.h"

#include <stdlib.h>
#include <string.h>

static gp_tenant_spec no_quota(void)
{
    gp_tenant_spec s;
    memset(&s, 0, sizeof s);
    s.lend = -1;
    s.trust = GP_TRUST_INHERIT;
    return s;
}

/* Create path and its missing ancestors without quotas. */
static gp_err ensure_tenant(gp_engine *e, const char *path, gp_error *err)
{
    char prefix[GP_PATH_MAX];
    size_t len = strlen(path);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        snprintf(prefix, sizeof prefix, "%.*s", (int)i, path);
        uint32_t idx;
        if (gp_engine_tenant_find(e, prefix, &idx, NULL) == GP_OK)
            continue;
        gp_tenant_spec s = no_quota();
        gp_err rc = gp_engine_tenant_set(e, prefix, &s, gp_engine_now(e), err);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* Limit = guarantee, GPU types of the fleet not listed = 0. */
static void cap_at_guarantee(gp_tenant_spec *s, const gp_fleet_file *fleet)
{
    s->limit = s->guarantee;
    for (size_t n = 0; n < fleet->n_nodes; n++) {
        const char *type = fleet->nodes[n].gpu_type;
        bool listed = false;
        for (int i = 0; i < s->limit.n_gpu; i++)
            listed = listed || strcmp(s->limit.gpu[i].type, type) == 0;
        if (!listed && s->limit.n_gpu < GP_MAX_GPU_TYPES) {
            snprintf(s->limit.gpu[s->limit.n_gpu].type, GP_NAME_MAX, "%s", type);
            s->limit.gpu[s->limit.n_gpu++].milli = 0;
        }
    }
}

static gp_err apply_tenants(gp_engine *e, const gp_sim_setup *setup, const gp_sim_policy *policy, gp_error *err)
{
    const gp_tenant_file *tf = setup->tenants;
    for (size_t i = 0; tf && i < tf->n_tenants; i++) {
        gp_tenant_spec s = tf->tenants[i].spec;
        if (policy->kind == GP_SIM_STATIC && s.guarantee.set)
            cap_at_guarantee(&s, setup->fleet);
        gp_err rc = gp_engine_tenant_set(e, tf->tenants[i].path, &s, 0, err);
        if (rc) {
            char msg[GP_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "tenant %s: %s", tf->tenants[i].path, err ? err->message : "");
            return gp_error_set(err, rc, err ? err->field : "tenants", "%s", msg);
        }
    }
    return GP_OK;
}

/* The fleet file with every pool (and "default") set to the policy's score. */
static gp_err apply_fleet(gp_engine *e, const gp_sim_setup *setup, const gp_sim_policy *policy,
                          const gp_sim_options *opt, gp_error *err)
{
    if (!policy->set_score)
        return gp_fleet_file_apply(setup->fleet, e, 0, err);
    gp_fleet_file scored = *setup->fleet;
    scored.pools = calloc(setup->fleet->n_pools + 1, sizeof *scored.pools);
    if (!scored.pools)
        return gp_error_set(err, GP_ERR_NOMEM, "pools", "out of memory");
    bool has_default = false;
    for (size_t p = 0; p < setup->fleet->n_pools; p++) {
        scored.pools[p] = setup->fleet->pools[p];
        has_default = has_default || strcmp(scored.pools[p].name, "default") == 0;
    }
    if (!has_default)
        snprintf(scored.pools[scored.n_pools++].name, GP_NAME_MAX, "default");
    for (size_t p = 0; p < scored.n_pools; p++) {
        scored.pools[p].spec.score = policy->score;
        scored.pools[p].spec.seed = opt->seed;
    }
    gp_err rc = gp_fleet_file_apply(&scored, e, 0, err);
    free(scored.pools);
    return rc;
}

gp_err gp__sim_engine_new(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_sim_options *opt,
                          gp_engine **out, char (**tenant_of)[GP_PATH_MAX], gp_error *err)
{
    const gp_trace *t = setup->trace;
    gp_engine *e = gp_engine_new(&opt->engine);
    char(*paths)[GP_PATH_MAX] = calloc(t->n_tenants ? t->n_tenants : 1, sizeof *paths);
    if (!e || !paths) {
        gp_engine_free(e);
        free(paths);
        return gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    }
    gp_err rc = apply_fleet(e, setup, policy, opt, err);
    if (rc == GP_OK && policy->kind != GP_SIM_FIFO)
        rc = apply_tenants(e, setup, policy, err);
    for (size_t i = 0; rc == GP_OK && i < t->n_tenants; i++) {
        snprintf(paths[i], GP_PATH_MAX, "%s", policy->kind == GP_SIM_FIFO ? "fifo" : t->tenants[i]);
        rc = ensure_tenant(e, paths[i], err);
    }
    if (rc) {
        gp_engine_free(e);
        free(paths);
        return rc;
    }
    *out = e;
    *tenant_of = paths;
    return GP_OK;
}

/* ---- groups ---- */

static const gp_tenant_entry *find_entry(const gp_tenant_file *tf, const char *path, size_t len)
{
    for (size_t i = 0; tf && i < tf->n_tenants; i++)
        if (strlen(tf->tenants[i].path) == len && strncmp(tf->tenants[i].path, path, len) == 0)
            return &tf->tenants[i];
    return NULL;
}

static int64_t guarantee_milli(const gp_quota *q)
{
    int64_t sum = 0;
    for (int i = 0; q->set && i < q->n_gpu; i++)
        sum += q->gpu[i].milli;
    return sum;
}

/* Group path of one trace tenant and its guarantee. */
static void group_of(const gp_tenant_file *tf, const char *leaf, char *group, int64_t *guarantee)
{
    size_t len = strlen(leaf);
    for (;;) {
        const gp_tenant_entry *te = find_entry(tf, leaf, len);
        if (te && te->spec.guarantee.set) {
            snprintf(group, GP_PATH_MAX, "%.*s", (int)len, leaf);
            *guarantee = guarantee_milli(&te->spec.guarantee);
            return;
        }
        while (len > 0 && leaf[len - 1] != '/')
            len--;
        if (len == 0)
            break;
        len--; /* drop the '/' */
    }
    snprintf(group, GP_PATH_MAX, "%s", leaf);
    *guarantee = 0;
}

typedef struct demand_change {
    int64_t time;
    int64_t milli;   /* + at submit, - at end */
    uint32_t job;
} demand_change;

static int by_time_ends_first(const void *a, const void *b)
{
    const demand_change *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if ((x->milli < 0) != (y->milli < 0))
        return x->milli < 0 ? -1 : 1;
    return x->job < y->job ? -1 : x->job > y->job;
}

static gp_err mark_within_guarantee(const gp_trace *t, gp_sim_result *r, gp_error *err)
{
    demand_change *ch = malloc(2 * (t->n_jobs ? t->n_jobs : 1) * sizeof *ch);
    int64_t *cur = calloc(r->n_groups ? r->n_groups : 1, sizeof *cur);
    if (!ch || !cur) {
        free(ch);
        free(cur);
        return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    }
    size_t n = 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        int64_t d = gp_trace_job_milli(&t->jobs[j]);
        ch[n++] = (demand_change){t->jobs[j].submit, d, (uint32_t)j};
        if (t->jobs[j].duration >= 0)
            ch[n++] = (demand_change){t->jobs[j].submit + t->jobs[j].duration, -d, (uint32_t)j};
    }
    qsort(ch, n, sizeof *ch, by_time_ends_first);
    for (size_t i = 0; i < n; i++) {
        uint32_t g = r->job_group[ch[i].job];
        cur[g] += ch[i].milli;
        if (ch[i].milli >= 0)
            r->jobs[ch[i].job].within_guarantee = r->group_guarantee_milli[g] > 0 &&
                                                  cur[g] <= r->group_guarantee_milli[g];
    }
    free(ch);
    free(cur);
    return GP_OK;
}

gp_err gp__sim_groups(const gp_sim_setup *setup, gp_sim_result *r, gp_error *err)
{
    const gp_trace *t = setup->trace;
    size_t nt = t->n_tenants ? t->n_tenants : 1;
    uint32_t *tenant_group = calloc(nt, sizeof *tenant_group);
    r->groups = calloc(nt, sizeof *r->groups);
    r->group_guarantee_milli = calloc(nt, sizeof *r->group_guarantee_milli);
    r->job_group = calloc(t->n_jobs ? t->n_jobs : 1, sizeof *r->job_group);
    if (!tenant_group || !r->groups || !r->group_guarantee_milli || !r->job_group) {
        free(tenant_group);
        return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    }
    for (size_t i = 0; i < t->n_tenants; i++) {
        char group[GP_PATH_MAX];
        int64_t guarantee;
        group_of(setup->tenants, t->tenants[i], group, &guarantee);
        size_t g = 0;
        while (g < r->n_groups && strcmp(r->groups[g], group) != 0)
            g++;
        if (g == r->n_groups) {
            snprintf(r->groups[r->n_groups], GP_PATH_MAX, "%s", group);
            r->group_guarantee_milli[r->n_groups++] = guarantee;
        }
        tenant_group[i] = (uint32_t)g;
    }
    for (size_t j = 0; j < t->n_jobs; j++)
        r->job_group[j] = tenant_group[t->jobs[j].tenant];
    free(tenant_group);
    return mark_within_guarantee(t, r, err);
}

/* ---- entitlements ---- */

/* The tenant tree every policy is judged on: the tenant file as written
 * (on the fleet, which its guarantees must fit) and the trace's tenants.
 * The gpupool, static and scored policies' engines have it already (static
 * changes limits, not weights); FIFO's has one tenant.  Caller frees. */
static gp_err tenant_tree(const gp_sim_setup *setup, gp_engine **out, gp_error *err)
{
    static const gp_sim_policy as_written = {.name = "gpupool", .kind = GP_SIM_GPUPOOL};
    gp_engine *e = gp_engine_new(NULL);
    if (!e)
        return gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
    gp_err rc = gp_fleet_file_apply(setup->fleet, e, 0, err);
    if (rc == GP_OK)
        rc = apply_tenants(e, setup, &as_written, err);
    for (size_t i = 0; rc == GP_OK && i < setup->trace->n_tenants; i++)
        rc = ensure_tenant(e, setup->trace->tenants[i], err);
    if (rc) {
        gp_engine_free(e);
        return rc;
    }
    *out = e;
    return GP_OK;
}

/* r->fair_tree from tenant tree e: every tenant a node (its index), with
 * its parent and weight; false when out of memory. */
static bool fill_tree(const gp_engine *e, gp_sim_result *r)
{
    gp_sim_fair_tree *tree = &r->fair_tree;
    size_t n = gp_engine_tenant_count(e);
    tree->parent = malloc((n ? n : 1) * sizeof *tree->parent);
    tree->weight = malloc((n ? n : 1) * sizeof *tree->weight);
    tree->group_node = malloc((r->n_groups ? r->n_groups : 1) * sizeof *tree->group_node);
    if (!tree->parent || !tree->weight || !tree->group_node)
        return false;
    tree->n_nodes = n;
    for (size_t i = 0; i < n; i++) {
        gp_tenant_info t;
        bool live = gp_engine_tenant_get(e, (uint32_t)i, &t);
        tree->parent[i] = live && t.parent != UINT32_MAX ? (int32_t)t.parent : -1;
        tree->weight[i] = live ? t.weight : 0;
    }
    for (size_t g = 0; g < r->n_groups; g++) {
        uint32_t t;
        tree->group_node[g] = gp_engine_tenant_find(e, r->groups[g], &t, NULL) == GP_OK ? (int32_t)t : -1;
    }
    return true;
}

/* r->group_entitlement from tenant tree e (gp_engine_tenant_entitlement)
 * and r->fair_tree; false when out of memory. */
static bool fill_entitlements(const gp_engine *e, gp_sim_result *r)
{
    r->group_entitlement = calloc(r->n_groups ? r->n_groups : 1, sizeof *r->group_entitlement);
    if (!r->group_entitlement)
        return false;
    for (size_t g = 0; g < r->n_groups; g++) {
        uint32_t t;
        r->group_entitlement[g] =
            gp_engine_tenant_find(e, r->groups[g], &t, NULL) == GP_OK ? gp_engine_tenant_entitlement(e, t) : 0;
    }
    return fill_tree(e, r);
}

gp_err gp__sim_entitlements(const gp_sim_setup *setup, const gp_sim_policy *policy, const gp_engine *policy_engine,
                            gp_sim_result *r, gp_error *err)
{
    gp_engine *own = NULL;
    if (policy->kind == GP_SIM_FIFO) {
        gp_err rc = tenant_tree(setup, &own, err);
        if (rc)
            return rc;
    }
    bool ok = fill_entitlements(own ? own : policy_engine, r);
    gp_engine_free(own);
    return ok ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "sim", "out of memory");
}
