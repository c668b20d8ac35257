/* tenants.c - the tenancy tree: quotas, validation, usage and shares.
 *
 * Tenants form a tree org/team/project (up to GP_MAX_TENANT_DEPTH levels);
 * jobs are submitted to leaves.  Each tenant has:
 *   guarantee  a floor: its jobs up to this much run "guaranteed" and are
 *              never preempted; a tenant without one is transparent (its
 *              jobs are guaranteed through an ancestor's floor, if any);
 *   limit      a ceiling on everything it runs, borrowed capacity included;
 *   user_limit a ceiling per user inside it;
 *   weight     its fair-share weight among siblings (default: guaranteed
 *              GPUs, at least 1);
 *   lend       whether others may borrow its idle guarantee;
 *   trust      trusted or untrusted, inherited; a floor: a tenant is
 *              untrusted when it or any ancestor is, and "trusted" below
 *              an untrusted ancestor is refused (only the ancestor can lift
 *              it).  What a change means for jobs (trust; demotion of
 *              work over a shrunk guarantee) is engine.c's.
 *   nodes      shared or dedicated, inherited as a floor like trust: the
 *              outermost dedicated tenant on a path is the dedicated
 *              domain of the tenants below it, and a node that runs any of
 *              its jobs runs nothing from outside it (dedicated.c).
 *   time_limit a default time limit per job kind, inherited (jobs.c).
 *   job_defaults, job_max  what its jobs' replicas get and may ask for
 *              on the node (CPU, memory, processes), inherited
 *              (job_limits.c).
 *
 * Invariants checked on every change (a change that breaks one is refused
 * and nothing changes):
 *   - for every tenant with a guarantee, the guarantees of its nearest
 *     guaranteed descendants add up to no more than its own;
 *   - the nearest guaranteed tenants under the root add up to no more than
 *     the healthy fleet (a change may not make an overcommitted tree worse);
 *   - a guarantee never exceeds the tenant's own limit, and the guarantees
 *     below a tenant never add up to more than its limit (so guaranteed
 *     work always fits every limit: when borrowers fill a limit, a
 *     guaranteed job can take it back, see reclaim.c).
 *
 * Example: fleet 32 H100.  research {guarantee 24}, research/nlp {16},
 * research/cv {8}: valid (16 + 8 <= 24 <= 32).  Setting research/cv to 12
 * is refused: 16 + 12 > 24.  Setting product {guarantee 16} is refused:
 * 24 + 16 > 32 GPUs in the fleet.
 *
 * Usage is kept per tenant for its whole subtree (usage) and for the part
 * running guaranteed (guaranteed); gp__tenant_charge walks the path.
 */
#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- resource vectors ---- */

void gp__res_zero(gp_res *r) { memset(r, 0, sizeof *r); }

void gp__res_fill(gp_res *r, int64_t v)
{
    for (int d = 0; d < GP_DIMS; d++)
        r->v[d] = v;
}

void gp__res_add(gp_res *a, const gp_res *b)
{
    for (int d = 0; d < GP_DIMS; d++)
        a->v[d] += b->v[d];
}

int gp__res_exceeds(const gp_res *a, const gp_res *b, const gp_res *limit)
{
    for (int d = 0; d < GP_DIMS; d++)
        if (b->v[d] > 0 && limit->v[d] != GP_UNLIMITED && a->v[d] + b->v[d] > limit->v[d])
            return d;
    return -1;
}

/* gp__res_exceeds for one job's demand on GPU type `type`, which is zero
 * outside that type, CPU and memory: the same answer from the only three
 * dimensions that can exceed, taken in the same (ascending) order.
 * Admission asks this for every pending job, at every tenant on its path,
 * in every pass (issue 17: the ten-dimension loop was 15 % of a pass's
 * instructions at 50,000 pending). */
int gp__res_exceeds_job(const gp_res *a, const gp_res *demand, const gp_res *limit, int type)
{
    const int dims[3] = {type, GP_DIM_CPU, GP_DIM_MEM};
    for (int i = 0; i < 3; i++) {
        int d = dims[i];
        if (demand->v[d] > 0 && limit->v[d] != GP_UNLIMITED && a->v[d] + demand->v[d] > limit->v[d])
            return d;
    }
    return -1;
}

/* ---- paths ---- */

/* Bytes of the UTF-8 sequence s starts with (1 for ASCII or a stray
 * byte), at most up to s's end. */
static int utf8_length(const char *s)
{
    unsigned char c = (unsigned char)s[0];
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return (int)strnlen(s, (size_t)n);
}

static gp_err check_path(const char *path, int *depth, gp_error *err)
{
    if (path == NULL || path[0] == '\0')
        return gp_error_set(err, GP_ERR_INVALID, "path", "tenant path is required");
    size_t len = strlen(path);
    if (len >= GP_PATH_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "path", "tenant path is longer than %d characters",
                            GP_PATH_MAX - 1);
    int segs = 1;
    size_t seg_len = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = path[i];
        if (c == '/' || c == '\0') {
            if (seg_len == 0)
                return gp_error_set(err, GP_ERR_INVALID, "path", "tenant path has an empty segment: %s", path);
            if (seg_len >= GP_NAME_MAX)
                return gp_error_set(err, GP_ERR_INVALID, "path", "a tenant name is longer than %d characters",
                                    GP_NAME_MAX - 1);
            const char *seg = path + i - seg_len;
            if (seg[0] == '.')
                return gp_error_set(err, GP_ERR_INVALID, "path", "a tenant name may not start with '.'");
            if (c == '/')
                segs++;
            seg_len = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '_' || c == '.';
        if (!ok) /* quoted whole: one byte of a UTF-8 letter (café's 0xc3) is not text */
            return gp_error_set(err, GP_ERR_INVALID, "path",
                                "tenant names may hold ASCII letters, digits, '-', '_' and '.', not '%.*s'",
                                utf8_length(path + i), path + i);
        seg_len++;
    }
    if (segs > GP_MAX_TENANT_DEPTH)
        return gp_error_set(err, GP_ERR_INVALID, "path", "tenant trees are at most %d levels deep",
                            GP_MAX_TENANT_DEPTH);
    *depth = segs;
    return GP_OK;
}

uint32_t gp__tenant_lookup(const gp_engine *e, const char *path)
{
    uint32_t t;
    if (path == NULL || !gp_strmap_get(&e->tenant_by_path, path, &t))
        return GP__NONE;
    return t;
}

bool gp__tenant_is_leaf(const gp_engine *e, uint32_t t)
{
    return e->tenants[t].n_children == 0;
}

static bool has_live_jobs(const gp__tenant *t)
{
    return t->n_pending > 0 || t->running > 0;
}

/* ---- quotas ---- */

/* Convert a caller's quota into engine dimensions.  `unlisted` is what GPU
 * types not named get (0 for a guarantee, unlimited for a limit). */
static gp_err quota_to_res(gp_engine *e, const gp_quota *q, int64_t unlisted, const char *field, gp_res *out,
                           gp_error *err)
{
    gp__res_fill(out, GP_UNLIMITED);
    if (!q->set)
        return GP_OK;
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        out->v[t] = unlisted;
    if (q->n_gpu < 0 || q->n_gpu > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s lists %d GPU types; at most %d", field, q->n_gpu,
                            GP_MAX_GPU_TYPES);
    for (int i = 0; i < q->n_gpu; i++) {
        const char *name = q->gpu[i].type;
        if (name[0] == '\0' || memchr(name, '\0', GP_NAME_MAX) == NULL)
            return gp_error_set(err, GP_ERR_INVALID, field, "%s has a GPU type without a name", field);
        int64_t m = q->gpu[i].milli;
        if (m < 0 || m > INT64_C(1000000000000))
            return gp_error_set(err, GP_ERR_INVALID, field, "%s of %s must be 0..1e9 GPUs", field, name);
        int t = gp__fleet_type_intern(&e->fleet, name);
        if (t < 0)
            return gp_error_set(err, GP_ERR_INVALID, field, "too many GPU types; %s is one more than %d", name,
                                GP_MAX_GPU_TYPES);
        out->v[t] = m;
    }
    if (q->cpu_millis < 0 || q->mem_mib < 0)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s cpu and memory must not be negative", field);
    out->v[GP_DIM_CPU] = q->cpu_millis;
    out->v[GP_DIM_MEM] = q->mem_mib;
    return GP_OK;
}

/* Sum of the guarantees of t's nearest guaranteed descendants (or of the
 * top level when t is GP__NONE).  Unlimited dimensions do not add up. */
static void descendant_guarantees(const gp_engine *e, uint32_t t, gp_res *sum)
{
    const uint32_t *kids = t == GP__NONE ? e->roots : e->tenants[t].children;
    size_t n = t == GP__NONE ? e->n_roots : e->tenants[t].n_children;
    for (size_t i = 0; i < n; i++) {
        const gp__tenant *c = &e->tenants[kids[i]];
        if (!c->has_guarantee) {
            descendant_guarantees(e, kids[i], sum);
            continue;
        }
        for (int d = 0; d < GP_DIMS; d++)
            if (c->guarantee.v[d] != GP_UNLIMITED)
                sum->v[d] += c->guarantee.v[d];
    }
}

static const char *dim_name(const gp_engine *e, int d)
{
    if (d == GP_DIM_CPU)
        return "cpu_millis";
    if (d == GP_DIM_MEM)
        return "mem_mib";
    return d < e->fleet.n_types ? e->fleet.types[d] : "gpu";
}

static gp_err validate_tree(const gp_engine *e, const gp_res *old_top, gp_error *err)
{
    for (size_t i = 0; i < e->n_tenants; i++) {
        const gp__tenant *t = &e->tenants[i];
        if (t->removed)
            continue;
        gp_res sum;
        gp__res_zero(&sum);
        descendant_guarantees(e, (uint32_t)i, &sum);
        char have[64], bound[64];
        for (int d = 0; d < GP_DIMS; d++) /* floors below must fit under this ceiling */
            if (t->limit.v[d] != GP_UNLIMITED && sum.v[d] > t->limit.v[d]) {
                gp__amount_format(e, d, sum.v[d], have, sizeof have);
                gp__amount_format(e, d, t->limit.v[d], bound, sizeof bound);
                return gp_error_set(err, GP_ERR_QUOTA, "limit",
                                    "the guarantees under %s add up to %s, more than its limit of %s", t->path, have,
                                    bound);
            }
        if (!t->has_guarantee)
            continue;
        for (int d = 0; d < GP_DIMS; d++) {
            if (t->guarantee.v[d] != GP_UNLIMITED && sum.v[d] > t->guarantee.v[d]) {
                gp__amount_format(e, d, sum.v[d], have, sizeof have);
                gp__amount_format(e, d, t->guarantee.v[d], bound, sizeof bound);
                return gp_error_set(err, GP_ERR_QUOTA, "guarantee",
                                    "the guarantees under %s add up to %s, more than its own %s", t->path, have,
                                    bound);
            }
            if (t->guarantee.v[d] != GP_UNLIMITED && t->limit.v[d] != GP_UNLIMITED &&
                t->guarantee.v[d] > t->limit.v[d])
                return gp_error_set(err, GP_ERR_QUOTA, "limit", "the guarantee of %s exceeds its limit on %s",
                                    t->path, dim_name(e, d));
        }
    }
    gp_res top;
    gp__res_zero(&top);
    descendant_guarantees(e, GP__NONE, &top);
    char have[64], bound[64];
    for (int d = 0; d < GP_DIMS; d++)
        if (top.v[d] > e->fleet.capacity.v[d] && top.v[d] > old_top->v[d]) {
            gp__amount_format(e, d, top.v[d], have, sizeof have);
            gp__amount_format(e, d, e->fleet.capacity.v[d], bound, sizeof bound);
            return gp_error_set(err, GP_ERR_QUOTA, "guarantee",
                                "guarantees would add up to %s, more than the healthy fleet's %s", have, bound);
        }
    return GP_OK;
}

/* Effective trust is a floor: untrusted when set so here or anywhere above,
 * whatever the descendants ask for. */
static void update_trust(gp_engine *e, uint32_t t)
{
    gp__tenant *ten = &e->tenants[t];
    bool parent_untrusted = ten->parent != GP__NONE && e->tenants[ten->parent].untrusted;
    ten->untrusted = ten->trust_set == GP_TRUST_UNTRUSTED || parent_untrusted;
    /* dedication is a floor the same way: the outermost dedicated tenant is the domain */
    uint32_t parent_domain = ten->parent != GP__NONE ? e->tenants[ten->parent].ded_domain : GP__NONE;
    ten->ded_domain = parent_domain != GP__NONE                 ? parent_domain
                      : ten->nodes_set == GP_NODES_DEDICATED ? t
                                                               : GP__NONE;
    for (size_t i = 0; i < ten->n_children; i++)
        update_trust(e, ten->children[i]);
}

uint32_t gp__trust_source(const gp_engine *e, uint32_t t)
{
    for (uint32_t a = t; a != GP__NONE; a = e->tenants[a].parent)
        if (e->tenants[a].trust_set == GP_TRUST_UNTRUSTED)
            return a;
    return t;
}

/* A change may not make a tenant more trusted than its parent: "trusted"
 * below an untrusted tenant is refused (an unknown parent is reported by
 * tenant_create). */
/* The parent of path if it exists, else GP__NONE (also for a top-level path). */
static uint32_t parent_of(const gp_engine *e, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return GP__NONE;
    char ppath[GP_PATH_MAX];
    snprintf(ppath, sizeof ppath, "%.*s", (int)(slash - path), path);
    return gp__tenant_lookup(e, ppath);
}

static gp_err check_trust_floor(const gp_engine *e, const char *path, const gp_tenant_spec *s, gp_error *err)
{
    uint32_t parent = s->trust == GP_TRUST_TRUSTED ? parent_of(e, path) : GP__NONE;
    if (parent == GP__NONE || !e->tenants[parent].untrusted)
        return GP_OK;
    const char *source = e->tenants[gp__trust_source(e, parent)].path;
    return gp_error_set(err, GP_ERR_INVALID, "trust",
                        "%s is untrusted, so %s cannot be trusted (trust is inherited as a floor); use inherit or "
                        "untrusted, or have an admin trust %s",
                        source, path, source);
}

/* "shared" below a dedicated tenant is refused as "trusted" below an
 * untrusted one is: only the domain itself can lift it. */
static gp_err check_nodes_floor(const gp_engine *e, const char *path, const gp_tenant_spec *s, gp_error *err)
{
    uint32_t parent = s->nodes == GP_NODES_SHARED ? parent_of(e, path) : GP__NONE;
    if (parent == GP__NONE || e->tenants[parent].ded_domain == GP__NONE)
        return GP_OK;
    const char *domain = e->tenants[e->tenants[parent].ded_domain].path;
    return gp_error_set(err, GP_ERR_INVALID, "nodes",
                        "%s has dedicated nodes, so %s cannot be shared (nodes is inherited as a floor); use inherit "
                        "or dedicated, or have an admin make %s shared",
                        domain, path, domain);
}

double gp__tenant_weight(const gp_engine *e, const gp__tenant *t)
{
    (void)e;
    if (t->weight_set)
        return t->weight;
    if (!t->has_guarantee)
        return 1.0;
    double gpus = 0;
    for (int d = 0; d < GP_MAX_GPU_TYPES; d++)
        gpus += (double)t->guarantee.v[d] / 1000.0;
    return gpus < 1.0 ? 1.0 : gpus;
}

double gp__tenant_entitlement_walk(const gp_engine *e, uint32_t tenant)
{
    double share = 1.0;
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent) {
        uint32_t parent = e->tenants[a].parent;
        const uint32_t *sib = parent == GP__NONE ? e->roots : e->tenants[parent].children;
        size_t n = parent == GP__NONE ? e->n_roots : e->tenants[parent].n_children;
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += gp__tenant_weight(e, &e->tenants[sib[i]]);
        if (sum > 0)
            share *= gp__tenant_weight(e, &e->tenants[a]) / sum;
    }
    return share;
}

double gp__tenant_entitlement(const gp_engine *e, uint32_t tenant)
{
    if (tenant >= e->n_tenants || e->tenants[tenant].removed)
        return 0;
    return e->entitlements_known ? e->entitlement[tenant] : gp__tenant_entitlement_walk(e, tenant);
}

/* Entitlements are asked for every candidate's tenant of every victim
 * search (reclaim.c: 6 % of the 30-day bench_sim walking the siblings'
 * weights), and change only with the tree: they are walked once per
 * change and kept. */
void gp__entitlements_update(gp_engine *e)
{
    e->entitlements_known = gp__grow((void **)&e->entitlement, &e->cap_entitlement,
                                     e->n_tenants ? e->n_tenants : 1, sizeof *e->entitlement);
    for (size_t t = 0; e->entitlements_known && t < e->n_tenants; t++)
        e->entitlement[t] = gp__tenant_entitlement_walk(e, (uint32_t)t);
}

void gp__tenant_update_share(gp_engine *e, uint32_t t)
{
    gp__tenant *ten = &e->tenants[t];
    double share = 0;
    for (int d = 0; d < GP_DIMS; d++) {
        int64_t cap = e->fleet.capacity.v[d];
        if (cap > 0 && ten->usage.v[d] > 0) {
            double s = (double)ten->usage.v[d] / (double)cap;
            if (s > share)
                share = s;
        }
    }
    ten->share = share / gp__tenant_weight(e, ten);
    ten->share_capacity = e->fleet.capacity_version;
    e->shares_updated++;
}

void gp__tenant_charge(gp_engine *e, uint32_t t, const gp_res *demand, gp_class cls, int sign)
{
    for (uint32_t a = t; a != GP__NONE; a = e->tenants[a].parent) {
        gp__tenant *ten = &e->tenants[a];
        for (int d = 0; d < GP_DIMS; d++) {
            ten->usage.v[d] += sign * demand->v[d];
            if (cls == GP_CLASS_GUARANTEED)
                ten->guaranteed.v[d] += sign * demand->v[d];
        }
        if (sign < 0 && cls == GP_CLASS_GUARANTEED)
            ten->promote_dirty = true;
        gp__tenant_update_share(e, a);
    }
}

static gp_err check_spec(const gp_tenant_spec *s, gp_error *err)
{
    if (s == NULL)
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "tenant spec is required");
    if (s->weight != 0.0 && !(s->weight >= GP_WEIGHT_MIN && s->weight <= GP_WEIGHT_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "weight", "weight must be 0 (default) or %g..%g", GP_WEIGHT_MIN,
                            GP_WEIGHT_MAX);
    if (s->lend < -1 || s->lend > 1)
        return gp_error_set(err, GP_ERR_INVALID, "lend", "lend must be -1 (default), 0 or 1");
    if (s->trust < GP_TRUST_INHERIT || s->trust > GP_TRUST_UNTRUSTED)
        return gp_error_set(err, GP_ERR_INVALID, "trust", "trust must be inherit, trusted or untrusted");
    if (s->nodes < GP_NODES_INHERIT || s->nodes > GP_NODES_DEDICATED)
        return gp_error_set(err, GP_ERR_INVALID, "nodes", "nodes must be inherit, shared or dedicated");
    for (int k = GP_KIND_TRAINING; k <= GP_KIND_INTERACTIVE; k++)
        if (s->time_limit_s[k] < 0 || s->time_limit_s[k] > GP_TIME_LIMIT_MAX_S) {
            char field[32];
            snprintf(field, sizeof field, "time_limit.%s", gp_job_kind_name((gp_job_kind)k));
            return gp_error_set(err, GP_ERR_INVALID, field, "%s must be 1..%lld seconds (0 = the parent's)", field,
                                (long long)GP_TIME_LIMIT_MAX_S);
        }
    return gp__job_limits_spec_check(s, err);
}

int64_t gp__tenant_time_limit(const gp_engine *e, uint32_t t, gp_job_kind kind)
{
    for (; t != GP__NONE; t = e->tenants[t].parent)
        if (e->tenants[t].time_limit[kind] > 0)
            return e->tenants[t].time_limit[kind];
    return 0;
}

static gp_err tenant_create(gp_engine *e, const char *path, int depth, uint32_t *out, gp_error *err)
{
    uint32_t parent = GP__NONE;
    if (depth > 1) {
        char ppath[GP_PATH_MAX];
        snprintf(ppath, sizeof ppath, "%s", path);
        *strrchr(ppath, '/') = '\0';
        parent = gp__tenant_lookup(e, ppath);
        if (parent == GP__NONE)
            return gp_error_set(err, GP_ERR_NOT_FOUND, "path", "parent tenant %s does not exist", ppath);
        if (has_live_jobs(&e->tenants[parent]))
            return gp_error_set(err, GP_ERR_CONFLICT, "path",
                                "%s has jobs; a tenant with jobs cannot get sub-tenants", ppath);
    }
    if (!GP__GROW(e->tenants, e->n_tenants, e->cap_tenants))
        return gp_error_set(err, GP_ERR_NOMEM, "path", "out of memory");
    uint32_t t = (uint32_t)e->n_tenants;
    if (parent != GP__NONE) {
        gp__tenant *p = &e->tenants[parent];
        if (!GP__GROW(p->children, p->n_children, p->cap_children))
            return gp_error_set(err, GP_ERR_NOMEM, "path", "out of memory");
    } else if (!GP__GROW(e->roots, e->n_roots, e->cap_roots)) {
        return gp_error_set(err, GP_ERR_NOMEM, "path", "out of memory");
    }
    if (!gp_strmap_put(&e->tenant_by_path, path, t))
        return gp_error_set(err, GP_ERR_NOMEM, "path", "out of memory");
    e->n_tenants++;
    gp__tenant *ten = &e->tenants[t];
    memset(ten, 0, sizeof *ten);
    snprintf(ten->path, sizeof ten->path, "%s", path);
    ten->parent = parent;
    ten->depth = depth;
    ten->lend = true;
    gp__res_fill(&ten->limit, GP_UNLIMITED);
    gp__res_fill(&ten->user_limit, GP_UNLIMITED);
    gp__res_fill(&ten->guarantee, GP_UNLIMITED);
    if (parent != GP__NONE) {
        gp__tenant *p = &e->tenants[parent];
        p->children[p->n_children++] = t;
    } else {
        e->roots[e->n_roots++] = t;
    }
    *out = t;
    return GP_OK;
}

static void tenant_unlink(gp_engine *e, uint32_t t)
{
    gp__tenant *ten = &e->tenants[t];
    uint32_t *list = ten->parent == GP__NONE ? e->roots : e->tenants[ten->parent].children;
    size_t *n = ten->parent == GP__NONE ? &e->n_roots : &e->tenants[ten->parent].n_children;
    for (size_t i = 0; i < *n; i++)
        if (list[i] == t) {
            memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof *list);
            (*n)--;
            break;
        }
    gp_strmap_remove(&e->tenant_by_path, ten->path);
    ten->removed = true;
}

gp_err gp__tenant_set(gp_engine *e, const char *path, const gp_tenant_spec *spec, int64_t now, gp_error *err)
{
    int depth = 0;
    gp_err rc;
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    if ((rc = check_path(path, &depth, err)) || (rc = check_spec(spec, err)) ||
        (rc = check_trust_floor(e, path, spec, err)) || (rc = check_nodes_floor(e, path, spec, err)))
        return rc;
    int n_types_before = e->fleet.n_types;
    gp_res guarantee, limit, user_limit;
    if ((rc = quota_to_res(e, &spec->guarantee, 0, "guarantee", &guarantee, err)) ||
        (rc = quota_to_res(e, &spec->limit, GP_UNLIMITED, "limit", &limit, err)) ||
        (rc = quota_to_res(e, &spec->user_limit, GP_UNLIMITED, "user_limit", &user_limit, err))) {
        e->fleet.n_types = n_types_before;
        return rc;
    }
    gp_res old_top;
    gp__res_zero(&old_top);
    descendant_guarantees(e, GP__NONE, &old_top);

    uint32_t t = gp__tenant_lookup(e, path);
    bool created = false;
    if (t == GP__NONE) {
        if ((rc = tenant_create(e, path, depth, &t, err))) {
            e->fleet.n_types = n_types_before;
            return rc;
        }
        created = true;
    }
    gp__tenant *ten = &e->tenants[t];
    gp__tenant saved = *ten;
    ten->has_guarantee = spec->guarantee.set;
    ten->guarantee = guarantee;
    ten->limit = limit;
    ten->user_limit = user_limit;
    ten->has_user_limit = spec->user_limit.set;
    ten->weight = spec->weight;
    ten->weight_set = spec->weight > 0;
    ten->lend = spec->lend != 0;
    ten->trust_set = spec->trust;
    ten->nodes_set = spec->nodes;
    memcpy(ten->time_limit, spec->time_limit_s, sizeof ten->time_limit);
    ten->job_defaults = spec->job_defaults;
    ten->job_max = spec->job_max;
    if ((rc = validate_tree(e, &old_top, err)) || (rc = gp__job_limits_tree_check(e, t, t, err))) {
        if (created)
            tenant_unlink(e, t), e->n_tenants--;
        else
            *ten = saved;
        e->fleet.n_types = n_types_before;
        return rc;
    }
    e->now = now;
    update_trust(e, t);
    gp__tenant_update_share(e, t);
    gp__entitlements_update(e);
    ten->promote_dirty = true;
    return GP_OK;
}

gp_err gp_engine_tenant_remove(gp_engine *e, const char *path, int64_t now, gp_error *err)
{
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    uint32_t t = gp__tenant_lookup(e, path);
    if (t == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "path", "no tenant %s", path ? path : "(null)");
    gp__tenant *ten = &e->tenants[t];
    if (ten->n_children > 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "path", "%s has sub-tenants; remove them first", path);
    if (has_live_jobs(ten))
        return gp_error_set(err, GP_ERR_CONFLICT, "path", "%s has pending or running jobs", path);
    e->now = now;
    tenant_unlink(e, t);
    gp__entitlements_update(e);
    return GP_OK;
}

void gp__tenants_free(gp_engine *e)
{
    for (size_t i = 0; i < e->n_tenants; i++)
        free(e->tenants[i].children);
    free(e->tenants);
    free(e->roots);
    free(e->users);
    gp_strmap_free(&e->tenant_by_path);
    gp_strmap_free(&e->user_by_key);
}
