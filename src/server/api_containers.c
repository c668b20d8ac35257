/* api_containers.c - where gpupoold applies a tenant's container policy
 * (spec/container_spec.h; docs/api.md "Containers").
 *
 *   at submit      a job's image and mounts against its tenant's inherited
 *                  policy: 400 image / mounts, nothing stored
 *   in a view      GET /v1/tenants shows each tenant's policy as inherited
 *   in a change    only an admin sets or changes a tenant's container,
 *                  image_sources, volumes, allow_userns, egress or
 *                  reach_from (a volume is a host folder, egress and
 *                  reach_from holes in the network fence: the tenant
 *                  tree's own admins may not hand any out);
 *                  the change then cancels the queued jobs of
 *                  the subtree it no longer allows (refuse_queued below)
 *   at bind        the run entry of an assignment gets mounts resolved to
 *                  the volumes' host paths as they are now, allow_userns
 *                  and image_auth (api_secrets.c); every run entry, with an
 *                  image or not, gets egress and reach_from (the chain's
 *                  destinations and subtrees as they are now: a replica
 *                  keeps what it started with) and the nodes where the
 *                  jobs reach_from concerns run (reach_nodes below)
 *
 * The policy is read from the store's tenant specs along the path (the
 * engine keeps none of it); trust, which forces containers, is the
 * engine's (or, on the API thread, the assignment's "trust").
 *
 * Example: an admin takes volume "scratch" away from research while job
 * 12 of research/nlp (pending, mounting scratch) waits and job 9 (running,
 * mounting it too) runs: the PATCH answers "cancelled_jobs": [12], job 12
 * ends cancelled with a history line saying why, job 9 runs on with what
 * it was started with; should job 9 restart, its node gets no scratch.
 */
#include "server/api.h"

#include "spec/container_spec.h"
#include "spec/net_dest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tenant's chain of specs ---- */

typedef struct tenant_chain {
    gp_tenant_spec *specs; /* top first */
    size_t n;
    gp_container_effective effective;
} tenant_chain;

static void chain_free(tenant_chain *c)
{
    free(c->specs);
    *c = (tenant_chain){0};
}

/* The specs of tenant's path from `all` (path -> spec) or, when NULL, the
 * store; a path with no spec counts as one that sets nothing. */
static gp_err chain_load(gp_store *s, const json_t *all, const char *tenant, bool untrusted, tenant_chain *c,
                         gp_error *err)
{
    size_t len = strlen(tenant), depth = 1;
    for (size_t i = 0; i < len; i++)
        depth += tenant[i] == '/';
    *c = (tenant_chain){.specs = calloc(depth, sizeof *c->specs)};
    const gp_container_policy **policies = calloc(depth, sizeof *policies);
    gp_err rc = c->specs && policies ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "tenant", "out of memory");
    for (size_t i = 0; rc == GP_OK && i <= len; i++) {
        if (tenant[i] != '/' && tenant[i] != '\0')
            continue;
        char prefix[GP_PATH_MAX];
        snprintf(prefix, sizeof prefix, "%.*s", (int)i, tenant);
        json_t *spec = all ? json_incref(json_object_get(all, prefix)) : NULL, *empty = json_object();
        if (!all)
            rc = gp_store_tenant_get(s, prefix, &spec, err);
        if (rc == GP_OK)
            rc = gp_tenant_spec_parse(json_is_object(spec) ? spec : empty, &c->specs[c->n], err);
        json_decref(empty);
        json_decref(spec);
        if (rc == GP_OK) {
            policies[c->n] = &c->specs[c->n].containers;
            c->n++;
        }
    }
    size_t from = 0;
    while (from < c->n && c->specs[from].trust != GP_TRUST_UNTRUSTED)
        from++;
    if (rc == GP_OK)
        gp_container_effective_make(policies, c->n, untrusted, from, &c->effective);
    free(policies);
    if (rc != GP_OK)
        chain_free(c);
    return rc;
}

/* The engine's trust of tenant (unknown: untrusted, the safe side). */
static bool engine_untrusted(const gp_engine *e, const char *tenant)
{
    uint32_t index;
    gp_tenant_info t;
    return gp_engine_tenant_find(e, tenant, &index, NULL) != GP_OK || !gp_engine_tenant_get(e, index, &t) ||
           t.untrusted;
}

/* ---- at submit ---- */

gp_err gp_api_job_container_check(gp_server *srv, const gp_job_request *req, gp_error *err)
{
    uint32_t index;
    if (gp_engine_tenant_find(srv->journal.engine, req->tenant, &index, NULL) != GP_OK)
        return GP_OK; /* the engine's submit names the unknown tenant */
    tenant_chain c;
    gp_err rc = chain_load(srv->store, NULL, req->tenant, engine_untrusted(srv->journal.engine, req->tenant), &c, err);
    if (rc == GP_OK)
        rc = gp_container_admit(&c.effective, req->tenant, &req->container, err);
    chain_free(&c);
    return rc;
}

/* ---- in a view ---- */

void gp_api_tenant_view_containers(gp_server *srv, const json_t *all, const char *tenant, bool untrusted,
                                   json_t *view)
{
    tenant_chain c;
    gp_error err;
    if (chain_load(srv->store, all, tenant, untrusted, &c, &err) != GP_OK)
        return;
    gp_container_effective_to_json(&c.effective, view);
    chain_free(&c);
}

/* ---- in a change ---- */

const char *gp_api_container_policy_changed(const json_t *have, const json_t *want)
{
    static const char *const KEYS[] = {"container", "image_sources", "volumes", "allow_userns", "egress", "reach_from"};
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++) {
        const json_t *a = json_object_get(have, KEYS[i]), *b = json_object_get(want, KEYS[i]);
        if ((a || b) && !(a && b && json_equal(a, b)))
            return KEYS[i];
    }
    return NULL;
}

bool gp_api_container_policy_may_change(const gp_principal *who, const json_t *have, const json_t *want,
                                        gp_error *err)
{
    const char *key = gp_api_container_policy_changed(have, want);
    if (who->role == GP_ROLE_ADMIN || !key)
        return true;
    gp_error_set(err, GP_ERR_INVALID, key,
                 "only an admin sets a tenant's container, image_sources, volumes, allow_userns, egress or reach_from"
                 " (a volume is a host folder, an image source what runs on the nodes, egress where its jobs may"
                 " connect, reach_from whose jobs may connect to them)");
    return false;
}

/* Pending job `row` (a store row) is cancelled when its tenant's policy
 * no longer allows it; its id is added to cancelled. */
static gp_err refuse_one(gp_server *srv, const json_t *row, int64_t now, json_t *cancelled, gp_error *err)
{
    gp_job_request req;
    gp_error why;
    gp_err rc = GP_OK;
    if (gp_job_request_parse(json_object_get(row, "spec"), true, &req, &why) == GP_OK &&
        gp_api_job_container_check(srv, &req, &why) == GP_ERR_INVALID) {
        char text[GP_ERROR_MESSAGE_MAX + 64];
        snprintf(text, sizeof text, "cancelled: its tenant's container policy changed: %s", why.message);
        rc = gp_journal_cancel(&srv->journal, req.spec.id, now, err);
        if (rc == GP_OK)
            rc = gp_store_history_add(srv->store, req.spec.id, now, "policy", NULL, NULL, text, err);
        if (rc == GP_OK)
            json_array_append_new(cancelled, json_integer((json_int_t)req.spec.id));
    }
    gp_job_request_free(&req);
    return rc;
}

gp_err gp_api_container_refuse_queued(gp_server *srv, const char *path, int64_t now, json_t *cancelled,
                                      gp_error *err)
{
    gp_store_job_filter f = {.tenant = path, .state = "pending", .limit = 1000};
    gp_err rc = GP_OK;
    for (bool more = true; rc == GP_OK && more;) {
        json_t *page = NULL, *row;
        size_t i;
        rc = gp_store_jobs_list(srv->store, &f, &page, err);
        json_array_foreach(json_object_get(page, "jobs"), i, row) {
            if (rc == GP_OK)
                rc = refuse_one(srv, row, now, cancelled, err);
        }
        const json_t *next = json_object_get(page, "next");
        more = json_is_integer(next);
        f.before = (uint64_t)json_integer_value(next);
        json_decref(page);
    }
    return rc;
}

/* ---- at bind ---- */

void gp_api_assignment_container(gp_server *srv, gp_store *s, json_t *entry, const json_t *fields)
{
    const char *tenant = json_string_value(json_object_get(entry, "tenant"));
    const char *trust = json_string_value(json_object_get(entry, "trust"));
    if (!tenant)
        return;
    tenant_chain c;
    gp_error err;
    if (chain_load(s, NULL, tenant, !trust || strcmp(trust, "trusted") != 0, &c, &err) != GP_OK) {
        gp_log(GP_LOG_WARN, "container_policy_unread", "tenant=%s why=\"%s\"", tenant, err.message);
        return;
    }
    size_t dropped = 0;
    json_t *mounts = gp_container_mounts_resolve(&c.effective, json_object_get(fields, "mounts"), &dropped);
    if (dropped)
        gp_log(GP_LOG_WARN, "mount_dropped", "job=%lld tenant=%s mounts=%zu why=\"volume no longer visible\"",
               (long long)json_integer_value(json_object_get(entry, "job")), tenant, dropped);
    json_object_set_new(entry, "mounts", mounts);
    json_object_set_new(entry, "allow_userns", json_boolean(c.effective.allow_userns));
    chain_free(&c);
    const char *image = json_string_value(json_object_get(fields, "image"));
    if (image)
        gp_api_assignment_image_auth(srv, s, entry, tenant, image);
}

/* ---- reach_from across nodes ---- */

#define REACH_JOBS_MAX 1000 /* the newest live jobs of one subtree whose nodes are read */

/* The nodes of subtree's live jobs added to nodes (each name once). */
static void live_nodes_add(gp_store *s, const char *subtree, json_t *nodes)
{
    gp_store_job_filter f = {.tenant = subtree, .state = "live", .limit = REACH_JOBS_MAX};
    json_t *list = NULL, *job, *rep, *have;
    gp_error err;
    size_t i, r, k;
    if (gp_store_jobs_list(s, &f, &list, &err) != GP_OK) {
        gp_log(GP_LOG_WARN, "reach_nodes_unread", "tenant=%s why=\"%s\"", subtree, err.message);
        return;
    }
    json_array_foreach(json_object_get(list, "jobs"), i, job) {
        json_array_foreach(json_object_get(job, "placement"), r, rep) {
            json_t *node = json_object_get(rep, "node");
            bool known = !json_is_string(node);
            json_array_foreach(nodes, k, have) {
                known = known || json_equal(have, node);
            }
            if (!known)
                json_array_append(nodes, node);
        }
    }
    json_decref(list);
}

/* Whether spec's own reach_from lets tenant in. */
static bool lets_in(const json_t *spec, const char *tenant)
{
    size_t i;
    json_t *entry;
    json_array_foreach(json_object_get(spec, "reach_from"), i, entry) {
        if (json_is_string(entry) && gp_reach_covers(json_string_value(entry), tenant))
            return true;
    }
    return false;
}

/* The entry's "reach_from_nodes" (from the subtrees e lets in) and
 * "reach_to_nodes" (from every tenant whose own reach_from lets tenant in,
 * with its subtree, which inherits it). */
static void reach_nodes(gp_store *s, const json_t *tenants, const char *tenant, const gp_container_effective *e,
                        json_t *entry)
{
    json_t *from = json_array(), *to = json_array(), *all = tenants ? json_incref((json_t *)tenants) : NULL, *spec;
    gp_error err;
    const char *path;
    for (size_t i = 0; i < e->n_reach_from; i++)
        live_nodes_add(s, e->reach_from[i], from);
    if (!all && gp_store_tenants_get(s, &all, &err) != GP_OK)
        all = NULL;
    json_object_foreach(all, path, spec) {
        if (lets_in(spec, tenant))
            live_nodes_add(s, path, to);
    }
    json_decref(all);
    json_object_set_new(entry, "reach_from_nodes", from);
    json_object_set_new(entry, "reach_to_nodes", to);
}

void gp_api_assignment_egress(gp_store *s, const json_t *tenants, json_t *entry)
{
    const char *tenant = json_string_value(json_object_get(entry, "tenant"));
    tenant_chain c;
    gp_error err;
    if (!tenant)
        return;
    if (chain_load(s, tenants, tenant, true, &c, &err) != GP_OK) {
        gp_log(GP_LOG_WARN, "egress_unread", "tenant=%s why=\"%s\" egress=none", tenant, err.message);
        return;
    }
    json_object_set_new(entry, "egress", gp_container_egress_json(&c.effective));
    json_object_set_new(entry, "reach_from", gp_container_reach_from_json(&c.effective));
    reach_nodes(s, tenants, tenant, &c.effective, entry);
    chain_free(&c);
}
