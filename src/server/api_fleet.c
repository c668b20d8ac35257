/* api_fleet.c - GET /v1/nodes, GET /v1/nodes/{name}, GET
 * /v1/nodes/{name}/checks, POST /v1/nodes/{name}/drain, GET /v1/usage,
 * GET /v1/preemptions.
 *
 * Nodes are the engine's view of the fleet: the nodes of --fleet and the
 * nodes node agents registered; one node's view adds what its agent said
 * in its last heartbeat (what runs, the GPUs' telemetry) and each GPU's
 * health: since when, why, its last check and its XIDs (the checks
 * themselves are .../checks?gpu=N&limit=L, newest first, 50 by default).
 * Every role may list them -- capacity is not
 * a secret -- but which job holds a GPU is shown only to roles that see
 * every tenant.  Draining is for admin and operator.  In one node's view
 * a member or tenant-admin sees the agent's replicas of its own scope's
 * jobs only; another tenant's are left out (counted in "other_jobs"),
 * and the GPUs they hold keep their health but not their use:
 *   member of product/ads, job 12 of research/nlp on GPU 0 -> "running":
 *   [], "other_jobs": 1, "gpus": [{"index": 0, "uuid": "GPU-...",
 *   "lost": false, "temperature_c": 55, "ecc": {...}, "other_tenant": true}]
 *
 * Usage is read from the store's usage intervals: GPU-seconds by tenant,
 * GPU type and class (guaranteed / burstable) over [from, to), open
 * intervals counted up to now; scoped like jobs.  A member's default
 * tenant is its own.  An ancestor of the caller's scope answers 403 with
 * why (not 404: the caller's pending reasons name it):
 *   member of ml/train, GET /v1/usage?tenant=ml -> 403 "tenant ml is above
 *   this token's scope ml/train: its limits hold the jobs of ml/train ..."
 *
 * Allocated vs used (use.h): /v1/usage adds "allocated_vs_used", per
 * tenant and GPU type allocated, used (driven), lost-to-preemption and
 * idle-held (allocated - used) GPU-hours; used and lost count the jobs'
 * whole runs (the period cuts only allocated).  GET
 * /v1/usage/underdriven?sm=10&for=1800 lists the running jobs every GPU
 * sample of which was below sm % for at least `for` seconds, with the
 * smallest MIG profile and MPS share that would hold their peaks
 * (gp_share_fit): job 7 on an H100, peaks 6 % SM and 6,000 MiB, below
 * 10 % for 40 min -> {"job": 7, "suggest": {"mig": "1g.10gb", "mps_pct": 10}}.
 *
 * Preemptions are the newest job history rows of kind "preempt" (when,
 * which job, its tenant, why), scoped like jobs: `gpupool top` shows them.
 */
#include "server/api.h"

#include "spec/json_input.h"
#include "util/nearest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *gpu_view(const gp_engine *e, uint32_t g, bool show_jobs)
{
    gp_gpu_info gi;
    if (!gp_engine_gpu_get(e, g, &gi))
        return json_null();
    json_t *o = json_pack("{s:i, s:s, s:b, s:i, s:s}", "index", gi.index, "uuid", gi.uuid, "healthy", gi.healthy,
                          "nvlink_domain", gi.nvlink_domain, "sharing", gp_sharing_name(gi.sharing));
    if (gi.sharing != GP_SHARING_EXCLUSIVE)
        json_object_set_new(o, "used_milli_gpus", json_integer(gi.used_milli));
    if (gi.sharing == GP_SHARING_MIG) /* its instances, "3g.40gb@0,3g.40gb@4": the dashboard draws them */
        json_object_set_new(o, "mig_layout", json_string(gi.mig_layout));
    if (show_jobs)
        json_object_set_new(o, "job", gi.job ? json_integer((json_int_t)gi.job) : json_null());
    else
        json_object_set_new(o, "allocated", json_boolean(gi.job != 0 || gi.used_milli > 0));
    return o;
}

/* "drained": draining and its last job gone (the engine's DRAINED). */
static json_t *node_view(const gp_engine *e, const gp_node_info *n, bool show_jobs)
{
    json_t *gpus = json_array();
    for (int g = 0; g < n->gpu_count; g++)
        json_array_append_new(gpus, gpu_view(e, n->gpu_first + (uint32_t)g, show_jobs));
    json_t *view = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:o}", "name", n->name, "zone",
                     n->zone, "block", n->block, "gpu_type", gp_engine_gpu_type_name(e, n->type), "gpu_count",
                     n->gpu_count, "gpus_free", n->gpus_free, "gpus_healthy", n->gpus_healthy, "up", n->up, "draining",
                     n->draining, "cpu_millis", (json_int_t)n->cpu_millis, "cpu_used", (json_int_t)n->cpu_used,
                     "mem_mib", (json_int_t)n->mem_mib, "mem_used", (json_int_t)n->mem_used, "gpus", gpus);
    json_object_set_new(view, "drained", json_boolean(n->draining && n->replicas == 0));
    return view;
}

/* A job of the caller's scope (its subtree): one it may see by id. */
static bool job_visible(const gp_engine *e, const gp_principal *who, json_int_t job)
{
    gp_job_info info;
    gp_tenant_info t;
    return job > 0 && gp_engine_job_info(e, (uint64_t)job, &info, NULL) == GP_OK &&
           gp_engine_tenant_get(e, info.tenant, &t) && gp_principal_sees(who, t.path);
}

/* Adds to the node's GPU views each GPU's sm_active_pct of its agent's last
 * heartbeat (where it sent one: `gpupool top`'s USE).  A caller that does
 * not see every tenant gets it only for a GPU that is free or held by a job
 * it may see: another tenant's use is that tenant's (agent_redact). */
static void gpus_sm_add(gp_server *srv, const gp_principal *who, const gp_node_info *n, json_t *gpus)
{
    const gp_engine *e = srv->journal.engine;
    json_t *agent = gp_agents_view(&srv->agents, n->name), *sample;
    size_t i;
    json_array_foreach(json_object_get(agent, "gpus"), i, sample) {
        json_t *sm = json_object_get(sample, "sm_active_pct");
        json_int_t g = json_integer_value(json_object_get(sample, "index"));
        gp_gpu_info gi;
        if (!json_is_integer(sm) || g < 0 || g >= n->gpu_count ||
            !gp_engine_gpu_get(e, n->gpu_first + (uint32_t)g, &gi))
            continue;
        bool others = gi.job ? !job_visible(e, who, (json_int_t)gi.job) : gi.used_milli > 0;
        if (gp_principal_sees_all(who) || !others)
            json_object_set(json_array_get(gpus, (size_t)g), "sm_active_pct", sm);
    }
    json_decref(agent);
}

static void nodes_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    const gp_engine *e = srv->journal.engine;
    bool show_jobs = gp_principal_sees_all(op->who);
    json_t *list = json_array();
    for (uint32_t i = 0; i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        if (!gp_engine_node_get(e, i, &n))
            continue;
        json_t *view = node_view(e, &n, show_jobs);
        gpus_sm_add(srv, op->who, &n, json_object_get(view, "gpus"));
        json_array_append_new(list, view);
    }
    gp_op_reply(op, 200, json_pack("{s:o}", "nodes", list));
}

void gp_api_nodes_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_op op = {.run = nodes_run};
    gp_api_run_op(r, &op);
}

/* The engine's node called name, else a 404 answer naming the nearest
 * node name ("no node a100-mig; did you mean a100-c-0?"). */
static bool node_find(const gp_engine *e, gp_op *op, const char *name, gp_node_info *out)
{
    size_t count = gp_engine_node_count(e);
    for (uint32_t i = 0; i < count; i++)
        if (gp_engine_node_get(e, i, out) && strcmp(out->name, name) == 0)
            return true;
    char(*names)[GP_NAME_MAX] = calloc(count + 1, sizeof *names);
    const char **list = calloc(count + 1, sizeof *list);
    size_t k = 0;
    for (uint32_t i = 0; names && list && i < count; i++)
        if (gp_engine_node_get(e, i, out)) {
            snprintf(names[k], GP_NAME_MAX, "%s", out->name);
            list[k] = names[k];
            k++;
        }
    const char *near = list ? gp_suggest(name, list, k) : NULL;
    gp_error err;
    gp_error_set(&err, GP_ERR_NOT_FOUND, "node", "no node %s%s%s%s", name, near ? "; did you mean " : "",
                 near ? near : "", near ? "?" : "");
    gp_op_fail(op, &err);
    free(list);
    free(names);
    return false;
}

/* The ids of the jobs holding the node's GPUs that the caller may see,
 * each once (jobs that hold no GPU of it, CPU-only ones, are not listed). */
static json_t *node_jobs(const gp_engine *e, const gp_principal *who, const gp_node_info *n)
{
    json_t *ids = json_array();
    for (int g = 0; g < n->gpu_count; g++) {
        gp_gpu_info gi;
        json_int_t job = gp_engine_gpu_get(e, n->gpu_first + (uint32_t)g, &gi) ? (json_int_t)gi.job : 0;
        bool listed = false;
        size_t i;
        json_t *v;
        json_array_foreach(ids, i, v) listed = listed || json_integer_value(v) == job;
        if (job > 0 && !listed && job_visible(e, who, job))
            json_array_append_new(ids, json_integer(job));
    }
    return ids;
}

/* Each GPU's "health": healthy (the engine's), since, reason, last_check
 * and xids (the store's records, store.h). */
static gp_err gpus_health(gp_server *srv, const gp_node_info *n, json_t *gpus, gp_error *err)
{
    json_t *records = NULL;
    gp_err rc = gp_store_gpu_health_view(srv->store, n->name, n->gpu_count, &records, err);
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        if (rc != GP_OK || !json_is_object(g))
            continue;
        json_t *h = json_incref(json_array_get(records, i));
        json_object_set_new(h, "healthy", json_incref(json_object_get(g, "healthy")));
        json_object_set_new(g, "health", h);
    }
    json_decref(records);
    return rc;
}

/* ---- what a tenant's caller sees of other tenants' jobs on a node ---- */

/* Marks in other[] the node's GPUs that a job the caller may not see holds. */
static void mark_job_gpus(const gp_engine *e, const gp_node_info *n, json_int_t job, bool *other)
{
    gp_job_info info;
    if (job <= 0 || gp_engine_job_info(e, (uint64_t)job, &info, NULL) != GP_OK)
        return;
    size_t cap = (size_t)info.replicas * (size_t)info.gpus; /* a gang may hold thousands */
    uint32_t *gpus = cap ? malloc(cap * sizeof *gpus) : NULL;
    size_t k = gpus ? gp_engine_job_gpus(e, (uint64_t)job, gpus, cap) : 0;
    for (size_t i = 0; i < k; i++)
        if (gpus[i] >= n->gpu_first && gpus[i] < n->gpu_first + (uint32_t)n->gpu_count)
            other[gpus[i] - n->gpu_first] = true;
    free(gpus);
}

/* The agent's "running" without the replicas of jobs the caller may not
 * see (their ids, pids and per-process use), counted as "other_jobs";
 * other[] gets the GPUs those jobs hold. */
static void running_redact(const gp_engine *e, const gp_principal *who, const gp_node_info *n, json_t *agent,
                           bool *other)
{
    json_t *running = json_object_get(agent, "running"), *kept = json_array(), *r;
    size_t i, hidden = 0;
    json_array_foreach(running, i, r) {
        json_int_t job = json_integer_value(json_object_get(r, "job"));
        if (job_visible(e, who, job)) {
            json_array_append(kept, r);
            continue;
        }
        hidden++;
        mark_job_gpus(e, n, job, other);
    }
    json_object_set_new(agent, "running", kept);
    json_object_set_new(agent, "other_jobs", json_integer((json_int_t)hidden));
}

/* A member's (or a tenant-admin's) view of a node's agent: other tenants'
 * replicas left out; a GPU one of their jobs holds keeps its health
 * (lost, temperature, ECC) but not its use (SM, memory, power), which is
 * that job's, and says "other_tenant": true. */
static void agent_redact(const gp_engine *e, const gp_principal *who, const gp_node_info *n, json_t *agent)
{
    bool other[GP_MAX_GPUS_PER_NODE] = {false};
    running_redact(e, who, n, agent, other);
    for (int g = 0; g < n->gpu_count; g++) {
        gp_gpu_info gi;
        if (gp_engine_gpu_get(e, n->gpu_first + (uint32_t)g, &gi) && gi.job && !job_visible(e, who, (json_int_t)gi.job))
            other[g] = true;
    }
    json_t *samples = json_deep_copy(json_object_get(agent, "gpus")), *sample; /* the agents' table shares it */
    size_t i;
    json_object_set_new(agent, "gpus", samples ? samples : json_array());
    json_array_foreach(samples, i, sample) {
        json_int_t g = json_integer_value(json_object_get(sample, "index"));
        if (!json_is_object(sample) || g < 0 || g >= n->gpu_count || !other[g])
            continue;
        json_object_del(sample, "sm_active_pct");
        json_object_del(sample, "memory_used_mib");
        json_object_del(sample, "power_w");
        json_object_set_new(sample, "other_tenant", json_true());
    }
}

/* What the agent last said, as the caller may see it; NULL without one. */
static json_t *agent_view(gp_server *srv, const gp_principal *who, const gp_node_info *n)
{
    json_t *agent = gp_agents_view(&srv->agents, n->name);
    if (agent && !gp_principal_sees_all(who))
        agent_redact(srv->journal.engine, who, n, agent);
    return agent;
}

/* One node, with what its agent last said (agents.h) under "agent"
 * (null for a node without one; agent_view) and each GPU's health. */
static void node_get_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    const gp_engine *e = srv->journal.engine;
    gp_node_info n;
    gp_error err;
    if (!node_find(e, op, op->arg, &n))
        return;
    json_t *view = node_view(e, &n, gp_principal_sees_all(op->who));
    json_object_set_new(view, "jobs", node_jobs(e, op->who, &n));
    json_t *agent = agent_view(srv, op->who, &n);
    json_object_set_new(view, "agent", agent ? agent : json_null());
    if (gpus_health(srv, &n, json_object_get(view, "gpus"), &err) != GP_OK) {
        json_decref(view);
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, view);
}

void gp_api_node_get(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_op op = {.run = node_get_run, .arg = (void *)name};
    gp_api_run_op(r, &op);
}

typedef struct checks_arg {
    const char *name;
    int64_t gpu, limit;
} checks_arg;

static void checks_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    checks_arg *a = op->arg;
    gp_node_info n;
    gp_error err;
    json_t *out = NULL;
    if (!node_find(srv->journal.engine, op, a->name, &n))
        return;
    if (a->gpu >= n.gpu_count) {
        gp_error_set(&err, GP_ERR_INVALID, "gpu", "node %s has GPUs 0..%d", n.name, n.gpu_count - 1);
        gp_op_fail(op, &err);
        return;
    }
    if (gp_store_gpu_checks_list(srv->store, n.name, (int)a->gpu, (int)a->limit, &out, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    json_object_set_new(out, "node", json_string(n.name));
    gp_op_reply(op, 200, out);
}

void gp_api_node_checks(gp_request *r, const char *name)
{
    static const char *const allowed[] = {"gpu", "limit", NULL};
    checks_arg a = {.name = name, .gpu = -1, .limit = 50};
    if (!gp_api_query_only(r, allowed) || !gp_api_query_int(r, "gpu", 0, GP_MAX_GPUS_PER_NODE - 1, &a.gpu) ||
        !gp_api_query_int(r, "limit", 1, 1000, &a.limit))
        return;
    gp_op op = {.run = checks_run, .arg = &a};
    gp_api_run_op(r, &op);
}

typedef struct drain_arg {
    const char *name;
    bool drain;
} drain_arg;

static void drain_run(gp_server *srv, gp_op *op, int64_t now)
{
    drain_arg *a = op->arg;
    gp_error err;
    /* an operator's drain or undrain is the operator's: health never undoes it */
    if (gp_journal_node_drain(&srv->journal, a->name, a->drain, now, &err) != GP_OK ||
        gp_store_health_drain_set(srv->store, a->name, false, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s, s:b}", "node", a->name, "draining", a->drain));
}

void gp_api_node_drain(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_OPERATOR) {
        gp_api_forbidden(r, "drain nodes");
        return;
    }
    drain_arg a = {.name = name, .drain = true};
    if (r->body_len > 0) {
        json_t *body = gp_api_body_object(r);
        if (!body)
            return;
        gp_error err;
        gp_err rc = GP_OK;
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v) {
            if (rc == GP_OK)
                rc = strcmp(key, "drain") == 0 ? gp_json_bool(v, key, &a.drain, &err)
                                               : gp_json_unknown_field("", key, &err);
        }
        json_decref(body);
        if (rc) {
            gp_api_fail(r, &err);
            return;
        }
    }
    gp_op op = {.run = drain_run, .mutates = true, .arg = &a};
    snprintf(op.action, sizeof op.action, "%s", a.drain ? "node.drain" : "node.undrain");
    snprintf(op.target, sizeof op.target, "node/%s", name);
    gp_api_run_op(r, &op);
}

/* A tenant the caller may not see: an ancestor of its scope exists (its
 * limits hold the caller's jobs, and pending reasons name it), so it gets
 * a 403 that says why; anything else is 404 as if it did not exist. */
static void usage_refuse(gp_request *r, const char *tenant)
{
    if (!gp_scope_covers(tenant, r->who.scope)) {
        gp_api_error(r, 404, "not_found", "tenant", "no tenant %s", tenant);
        return;
    }
    gp_api_error(r, 403, "forbidden", "tenant",
                 "tenant %s is above this token's scope %s: its limits hold the jobs of %s (a pending job's reason"
                 " shows the limit and what is in use), but its usage counts tenants this token may not see; ask a"
                 " tenant-admin of %s or an admin",
                 tenant, r->who.scope, r->who.scope, tenant);
}

/* One row per tenant and GPU type of the allocation rows (classes
 * summed) and of the used rows ({"tenant": {"type": [used_s, lost_s]}}). */
static json_t *allocated_vs_used(const json_t *usage, json_t *use)
{
    json_t *alloc = json_object(), *rows = json_array(), *v, *types, *x;
    size_t i;
    const char *t, *type;
    json_array_foreach(usage, i, v) {
        t = json_string_value(json_object_get(v, "tenant"));
        if (!(types = json_object_get(alloc, t)))
            json_object_set_new(alloc, t, types = json_object());
        type = json_string_value(json_object_get(v, "gpu_type"));
        double s = json_real_value(json_object_get(types, type)) +
                   json_number_value(json_object_get(v, "gpu_seconds"));
        json_object_set_new(types, type, json_real(s));
        if (!json_object_get(use, t))
            json_object_set_new(use, t, json_object());
    }
    json_object_foreach(use, t, types) {
        json_object_foreach(types, type, x) {
            double a = json_number_value(json_object_get(json_object_get(alloc, t), type));
            double u = json_number_value(json_array_get(x, 0)), lost = json_number_value(json_array_get(x, 1));
            json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f}", "tenant", t, "gpu_type", type,
                                                  "allocated_gpu_hours", a / 3600.0, "used_gpu_hours", u / 3600.0,
                                                  "lost_gpu_hours", lost / 3600.0, "idle_held_gpu_hours",
                                                  (a > u ? a - u : 0) / 3600.0));
        }
        json_object_foreach(json_object_get(alloc, t), type, x) {
            if (!json_object_get(types, type))
                json_array_append_new(rows, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f}", "tenant", t, "gpu_type", type,
                                                      "allocated_gpu_hours", json_real_value(x) / 3600.0,
                                                      "used_gpu_hours", 0.0, "lost_gpu_hours", 0.0,
                                                      "idle_held_gpu_hours", json_real_value(x) / 3600.0));
        }
    }
    json_decref(alloc);
    return rows;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* sreport's roll-ups: "subtrees" [{"tenant", "gpu_seconds"}], each listed
 * tenant and every ancestor with the GPU-seconds of its whole subtree
 * (path order), and "total_gpu_seconds", all of "usage". */
static void usage_rollup(json_t *out)
{
    json_t *sums = json_object(), *v, *rows = json_array();
    double total = 0;
    size_t i;
    const char *path;
    json_array_foreach(json_object_get(out, "usage"), i, v) {
        char up[1024];
        double s = json_number_value(json_object_get(v, "gpu_seconds"));
        snprintf(up, sizeof up, "%s", json_string_value(json_object_get(v, "tenant")));
        total += s;
        for (char *slash = up + strlen(up); slash; slash = strrchr(up, '/')) {
            *slash = '\0'; /* up itself first (its terminator), then each ancestor */
            json_object_set_new(sums, up, json_real(json_real_value(json_object_get(sums, up)) + s));
        }
    }
    const char **keys = malloc((json_object_size(sums) + 1) * sizeof *keys);
    size_t n = 0;
    json_object_foreach(sums, path, v) {
        if (keys)
            keys[n++] = path;
    }
    qsort(keys, n, sizeof *keys, by_text);
    for (i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:s, s:O}", "tenant", keys[i], "gpu_seconds",
                                              json_object_get(sums, keys[i])));
    free(keys);
    json_object_set_new(out, "subtrees", rows);
    json_object_set_new(out, "total_gpu_seconds", json_real(total));
    json_decref(sums);
}

void gp_api_usage(gp_request *r)
{
    static const char *const allowed[] = {"tenant", "from", "to", "by", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    int64_t now = gp_wall_ms() / 1000, from = 0, to = now;
    const char *tenant = gp_api_query(r, "tenant"), *by = gp_api_query(r, "by");
    if (by && strcmp(by, "tenant") != 0 && strcmp(by, "user") != 0) {
        gp_api_error(r, 400, "invalid", "by", "by must be tenant or user; got %.40s", by);
        return;
    }
    if ((tenant && !gp_api_tenant_path_ok(r, tenant, "tenant")) ||
        !gp_api_query_int(r, "from", 0, INT64_C(1) << 40, &from) ||
        !gp_api_query_int(r, "to", 0, INT64_C(1) << 40, &to))
        return;
    if (to < from) {
        gp_api_error(r, 400, "invalid", "to", "to must not be before from");
        return;
    }
    if (!tenant && r->who.role == GP_ROLE_MEMBER && !(tenant = gp_principal_one_scope(&r->who))) {
        gp_api_error(r, 400, "invalid", "tenant", "%s holds roles in several tenants: name one with tenant",
                     r->who.name);
        return;
    }
    if (tenant && !gp_principal_sees(&r->who, tenant)) {
        usage_refuse(r, tenant);
        return;
    }
    int n_scopes;
    const char *const *scopes = gp_api_scopes(r, &n_scopes);
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *out = NULL;
    if (!s || gp_store_usage_query(s, scopes, n_scopes, tenant, by && strcmp(by, "user") == 0, from, to, now, &out, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    json_t *use = NULL;
    if (gp_store_use_query(s, scopes, n_scopes, tenant, &use, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        json_decref(out);
        gp_api_fail(r, &err);
        return;
    }
    json_object_set_new(out, "allocated_vs_used", allocated_vs_used(json_object_get(out, "usage"), use));
    usage_rollup(out);
    json_decref(use);
    /* as for jobs: no usage of a tenant that does not exist is a typo */
    bool unknown = tenant && json_array_size(json_object_get(out, "usage")) == 0 &&
                   !gp_api_tenant_known(r, s, tenant, "tenant");
    gp_readers_give(&r->srv->readers, s);
    if (unknown) {
        json_decref(out);
        return;
    }
    gp_api_reply(r, 200, out);
}

typedef struct underdriven_ctx {
    const gp_engine *e;
    const gp_principal *who;
    int sm;
    int64_t for_s, now;
    json_t *jobs;
} underdriven_ctx;

/* The memory of one GPU of the job (its first), 0 when not placed. */
static int64_t job_gpu_mem(const gp_engine *e, uint64_t job)
{
    uint32_t g;
    gp_gpu_info gi;
    gp_node_info n;
    if (gp_engine_job_gpus(e, job, &g, 1) == 0 || !gp_engine_gpu_get(e, g, &gi) ||
        !gp_engine_node_get(e, gi.node, &n))
        return 0;
    return n.gpu_mem_mib;
}

static void underdriven_job(void *arg, const gp_store_job_use *c)
{
    underdriven_ctx *x = arg;
    gp_job_info info;
    gp_tenant_info t;
    int64_t since = c->below_since[x->sm];
    if (since == 0 || x->now - since < x->for_s || gp_engine_job_info(x->e, c->job_id, &info, NULL) != GP_OK ||
        info.state != GP_JOB_RUNNING || !gp_engine_tenant_get(x->e, info.tenant, &t) ||
        !gp_principal_sees(x->who, t.path))
        return;
    const char *type = gp_engine_gpu_type_name(x->e, info.gpu_type);
    gp_share_fit_out fit;
    json_t *suggest = json_null();
    if (type && gp_share_fit(type, job_gpu_mem(x->e, c->job_id), c->peak_sm, c->peak_memory_mib, &fit))
        suggest = json_pack("{s:s?, s:i}", "mig", fit.mig[0] ? fit.mig : NULL, "mps_pct", fit.mps_pct);
    json_array_append_new(x->jobs, json_pack("{s:I, s:s, s:s?, s:i, s:i, s:I, s:I, s:I, s:o}", "job",
                                             (json_int_t)c->job_id, "tenant", t.path, "gpu_type", type, "gpus",
                                             info.replicas * info.gpus, "peak_sm_pct", c->peak_sm,
                                             "peak_memory_mib", (json_int_t)c->peak_memory_mib, "below_since",
                                             (json_int_t)since, "below_s", (json_int_t)(x->now - since),
                                             "suggest", suggest));
}

static void underdriven_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    underdriven_ctx *x = op->arg;
    x->e = srv->journal.engine;
    x->who = op->who;
    x->now = gp_wall_ms() / 1000; /* the samples' clock */
    x->jobs = json_array();
    gp_use_each(&srv->use, underdriven_job, x);
    gp_op_reply(op, 200, json_pack("{s:o, s:i, s:I}", "jobs", x->jobs, "sm", x->sm, "for", (json_int_t)x->for_s));
}

void gp_api_usage_underdriven(gp_request *r)
{
    static const char *const allowed[] = {"sm", "for", NULL};
    int64_t sm = 10, for_s = 1800;
    if (!gp_api_query_only(r, allowed) || !gp_api_query_int(r, "sm", 1, 100, &sm) ||
        !gp_api_query_int(r, "for", 0, INT64_C(1) << 32, &for_s))
        return;
    underdriven_ctx x = {.sm = (int)sm, .for_s = for_s};
    gp_op op = {.run = underdriven_run, .arg = &x};
    gp_api_run_op(r, &op);
}

void gp_api_preemptions(gp_request *r)
{
    static const char *const allowed[] = {"limit", NULL};
    int64_t limit = 20;
    if (!gp_api_query_only(r, allowed) || !gp_api_query_int(r, "limit", 1, 1000, &limit))
        return;
    int n_scopes;
    const char *const *scopes = gp_api_scopes(r, &n_scopes);
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *out = NULL;
    gp_err rc = s ? gp_store_preemptions_list(s, scopes, n_scopes, (int)limit, &out, &err) : err.code;
    gp_readers_give(&r->srv->readers, s);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    gp_api_reply(r, 200, out);
}
