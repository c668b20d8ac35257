/* job_limits.c - what a tenant sets for its jobs' processes on the node:
 * the CPU, memory and process count a replica gets when its job sets none
 * (job_defaults) and the most a job may ask for (job_max), as a Kubernetes
 * LimitRange does for a namespace.
 *
 * Each value is inherited down the tree field by field: the nearest tenant
 * on the path that sets it wins.  Where a tenant has a maximum but no
 * default anywhere above it, the maximum is the default, so every job of a
 * capped subtree runs capped.  The rules, checked when a tenant changes (a
 * change that breaks one is refused and nothing changes):
 *   - a tenant's own maximum is no more than its parent's (effective) one;
 *   - every tenant's effective default is no more than its effective
 *     maximum (a job that sets nothing must fit);
 * and when a job is submitted: each of its values is no more than its
 * tenant's effective maximum, and 0 (none: the node's whole share) is
 * refused where a maximum holds.  The daemon fills a job's unset values
 * with gp_engine_job_defaults (queries.c; gp__job_limits_fill here) before
 * it logs the job, so the log, the store and the node agent see the values
 * the job runs with; this file only computes and checks, it keeps no state
 * of its own.
 *
 * Example: research {job_max: {pids_max 4096, mem_mib 65536}},
 * research/nlp {job_defaults: {cpu_millis 4000, mem_mib 16384}}.
 *   - a job of research/nlp that sets nothing gets cpu_millis 4000,
 *     mem_mib 16384 and pids_max 4096 (research's maximum);
 *   - one with mem_mib 131072 is refused (400 mem_mib: more than the 65536
 *     research allows);
 *   - setting research/nlp {job_max: {pids_max 8192}} is refused
 *     (job_max.pids_max: more than research's 4096), and so is setting
 *     research {job_max: {mem_mib 8192}} (research/nlp's default 16384
 *     would no longer fit).
 */
#include "core/internal.h"

#include <stdio.h>

enum { N_FIELDS = 3 };

static const char *const FIELD[N_FIELDS] = {"cpu_millis", "mem_mib", "pids_max"};
static const int64_t FIELD_MAX[N_FIELDS] = {INT64_C(1) << 40, INT64_C(1) << 40, GP_PIDS_MAX};

static int64_t *field_of(gp_job_limits *l, int f)
{
    return f == 0 ? &l->cpu_millis : f == 1 ? &l->mem_mib : &l->pids_max;
}

static int64_t value_of(const gp_job_limits *l, int f)
{
    return f == 0 ? l->cpu_millis : f == 1 ? l->mem_mib : l->pids_max;
}

void gp__tenant_job_limits(const gp_engine *e, uint32_t t, gp_job_limits *defaults, gp_job_limits *max)
{
    *defaults = (gp_job_limits){0};
    *max = (gp_job_limits){0};
    for (uint32_t a = t; a != GP__NONE; a = e->tenants[a].parent)
        for (int f = 0; f < N_FIELDS; f++) {
            if (!*field_of(defaults, f))
                *field_of(defaults, f) = value_of(&e->tenants[a].job_defaults, f);
            if (!*field_of(max, f))
                *field_of(max, f) = value_of(&e->tenants[a].job_max, f);
        }
    for (int f = 0; f < N_FIELDS; f++)
        if (!*field_of(defaults, f))
            *field_of(defaults, f) = *field_of(max, f);
}

gp_err gp__job_limits_spec_check(const gp_tenant_spec *s, gp_error *err)
{
    const gp_job_limits *sets[] = {&s->job_defaults, &s->job_max};
    const char *names[] = {"job_defaults", "job_max"};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < N_FIELDS; f++) {
            int64_t v = value_of(sets[i], f);
            char field[GP_ERROR_FIELD_MAX];
            snprintf(field, sizeof field, "%s.%s", names[i], FIELD[f]);
            if (v < 0 || v > FIELD_MAX[f])
                return gp_error_set(err, GP_ERR_INVALID, field, "%s must be 1..%lld (0 = the parent's)", field,
                                    (long long)FIELD_MAX[f]);
        }
    return GP_OK;
}

/* The rules for tenant u (the one being set is `set`: errors name it). */
static gp_err tenant_check(const gp_engine *e, uint32_t u, uint32_t set, gp_error *err)
{
    const gp__tenant *ten = &e->tenants[u];
    gp_job_limits defaults, max, parent_defaults, parent_max = {0};
    gp__tenant_job_limits(e, u, &defaults, &max);
    if (ten->parent != GP__NONE)
        gp__tenant_job_limits(e, ten->parent, &parent_defaults, &parent_max);
    const char *who = u == set ? "" : ten->path;
    for (int f = 0; f < N_FIELDS; f++) {
        char field[GP_ERROR_FIELD_MAX];
        int64_t own = value_of(&ten->job_max, f), above = value_of(&parent_max, f);
        if (own > 0 && above > 0 && own > above) {
            snprintf(field, sizeof field, "job_max.%s", FIELD[f]);
            return gp_error_set(err, GP_ERR_INVALID, field, "%s%s%s %lld is more than the %lld that %s allows", who,
                                who[0] ? "'s " : "", field, (long long)own, (long long)above,
                                e->tenants[ten->parent].path);
        }
        int64_t d = value_of(&defaults, f), m = value_of(&max, f);
        if (d > 0 && m > 0 && d > m) {
            snprintf(field, sizeof field, "job_defaults.%s", FIELD[f]);
            return gp_error_set(err, GP_ERR_INVALID, field, "%s%sdefault %s %lld is more than its maximum %lld",
                                who, who[0] ? "'s " : "", FIELD[f], (long long)d, (long long)m);
        }
    }
    return GP_OK;
}

gp_err gp__job_limits_tree_check(const gp_engine *e, uint32_t t, uint32_t set, gp_error *err)
{
    gp_err rc = tenant_check(e, t, set, err);
    const gp__tenant *ten = &e->tenants[t];
    for (size_t i = 0; rc == GP_OK && i < ten->n_children; i++)
        rc = gp__job_limits_tree_check(e, ten->children[i], set, err);
    return rc;
}

gp_err gp__job_limits_check(const gp_engine *e, const gp_job_spec *s, uint32_t tenant, gp_error *err)
{
    gp_job_limits defaults, max;
    gp__tenant_job_limits(e, tenant, &defaults, &max);
    const gp_job_limits asked = {.cpu_millis = s->cpu_millis, .mem_mib = s->mem_mib, .pids_max = s->pids_max};
    for (int f = 0; f < N_FIELDS; f++) {
        int64_t v = value_of(&asked, f), m = value_of(&max, f);
        if (v < 0 || v > FIELD_MAX[f])
            return gp_error_set(err, GP_ERR_INVALID, FIELD[f], "%s must be 0..%lld", FIELD[f],
                                (long long)FIELD_MAX[f]);
        if (m > 0 && v == 0)
            return gp_error_set(err, GP_ERR_INVALID, FIELD[f], "%s must be set: %s allows a job at most %lld",
                                FIELD[f], e->tenants[tenant].path, (long long)m);
        if (m > 0 && v > m)
            return gp_error_set(err, GP_ERR_INVALID, FIELD[f], "%s %lld is more than the %lld that %s allows a job",
                                FIELD[f], (long long)v, (long long)m, e->tenants[tenant].path);
    }
    return GP_OK;
}

void gp__job_limits_fill(const gp_engine *e, uint32_t tenant, gp_job_spec *s)
{
    gp_job_limits defaults, max;
    gp__tenant_job_limits(e, tenant, &defaults, &max);
    gp_job_limits asked = {.cpu_millis = s->cpu_millis, .mem_mib = s->mem_mib, .pids_max = s->pids_max};
    for (int f = 0; f < N_FIELDS; f++)
        if (!*field_of(&asked, f))
            *field_of(&asked, f) = value_of(&defaults, f);
    s->cpu_millis = asked.cpu_millis;
    s->mem_mib = asked.mem_mib;
    s->pids_max = asked.pids_max;
}
