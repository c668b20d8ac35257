/* api_agents.c - the node agents' endpoints (docs/api.md, "Agents").
 *
 *   POST /v1/agents:register               join token (or admin, or the
 *        node's own credential): a node's inventory in, the node added
 *        through the journal, a node credential out (shown once; the
 *        node's older ones are revoked).  A join token registers only
 *        the names its patterns cover (403 node.name), and a single-use
 *        one only once; a node gpupoold already knows registers again
 *        only with its current credential, as an admin, or after an
 *        admin's approval (409 node.name otherwise: nothing is revoked,
 *        the live agent goes on).  With --approve-nodes a new node comes
 *        in cordoned (drained) until approved.  Over HTTPS with
 *        --agent-mtls on, a "csr" in the body gets the node a client
 *        certificate bound to the new credential (api_node_certs.c).
 *   POST /v1/nodes/{name}/approve          admin or operator: a node
 *        awaiting approval takes work; any other node's next join-token
 *        registration is let in, once, within an hour
 *   DELETE /v1/nodes/{name}                admin: the node removed -- its
 *        live credentials revoked (its certificates, bound to them,
 *        refused with them at its next call), lost (its jobs requeued),
 *        a pending approval cleared; it returns only through an approval
 *   GET  /v1/agents/{node}/assignments?after=V&wait=S
 *        long-poll: answers at once when the node's version is past V,
 *        else when a commit touches the node, else after S seconds; the
 *        answer is the node's whole desired state (agents.h for versions)
 *        -- the engine's part on the engine thread (job_assignments:
 *        nodes, GPUs, action), the spec's fields on the API thread,
 *        read from a job's row once and then kept with the node's last
 *        answer (a spec never changes; agents.h, gp_agents_specs), so
 *        a poll reads the store only for a job new to the node, for
 *        the secrets of a replica to start, and for a container's
 *        tenant policy and registry credential (mounts, allow_userns,
 *        image_auth: read as they are now, api_containers.c), and the
 *        images the node should warm (image_hints.h: the last hint made)
 *   POST /v1/agents/{node}/heartbeat       what runs, GPU telemetry; the
 *        answer carries the image hint, made again when stale, and the
 *        partition fence's terms (fence_terms)
 *   POST /v1/agents/{node}/reports         replicas started/exited,
 *        checkpoints, GPU health: engine events through the journal
 * The three node paths take only that node's credential (router.c lets a
 * node credential call nothing else).
 *
 * Example: job 7, 2 replicas x 8 H100 on n1 and n2, bound at t=100;
 * n2's poll answers {"version": ..., "assignments": [{"job": 7, "replica":
 * 1, "replicas": 2, "peers": ["n1", "n2"], "gpus": [8 UUIDs], "action":
 * "run", ...}]}.  Job 9 reclaims at t=130: the same poll answers the same
 * replica with "action": "stop", "stop_reason": "preempt", "kill_deadline":
 * 161 and "kill_deadline_ms": 160412 (decided at 130.412 s, grace 30 s;
 * the whole-second deadline has the engine's 1 s resolution added).
 * The agent signals it; replica 1 exits; POST .../reports
 * {"reports": [{"what": "exited", "job": 7, "replica": 1, "bind_time": 100,
 * "exit_code": 0, "reason": "exited"}]} -- once both replicas are reported
 * the grace ends (the job is requeued) and job 9 binds in the same batch
 * (the pass runs at once, not --pass-min-ms later: loop.h pass_now).
 */
#include "server/api.h"

#include "eventlog/placement.h"
#include "server/clock.h"
#include "spec/container_spec.h"
#include "spec/json_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_WAIT_S = 300, MAX_REPORTS = 1000, MAX_JOBS_PER_NODE = 4096 };

/* An admin's approval of a node's join-token registration holds this long. */
#define APPROVAL_TTL_S 3600

/* The engine's node of that name; false when it has none. */
static bool engine_node(const gp_engine *e, const char *name, gp_node_info *out)
{
    for (uint32_t i = 0; i < gp_engine_node_count(e); i++)
        if (gp_engine_node_get(e, i, out) && strcmp(out->name, name) == 0)
            return true;
    return false;
}

/* ---- register ---- */

typedef struct register_arg {
    gp_node_request node;
    const char *csr;     /* the agent's certificate request, NULL none (api_node_certs.c) */
    char secret[GP_TOKEN_SECRET_LEN + 1];
    char id[GP_TOKEN_ID_LEN + 1];
    json_t *revoked;     /* ids of the node's live credentials, revoked once the new one is made */
    bool proven;         /* the caller's token is one of them */
    bool approval_used;  /* an admin's approval let this join-token registration in */
    bool awaiting;       /* a new node cordoned until approved (--approve-nodes) */
    const char *caller;  /* the caller's token id */
    bool caller_live;    /* ... is not revoked (a single-use join token spent by an earlier op of the batch is) */
} register_arg;

static gp_err live_credential(void *ctx, const gp_store_token *t, gp_error *err)
{
    (void)err;
    register_arg *a = ctx;
    if (strcmp(t->id, a->caller) == 0)
        a->caller_live = t->revoked < 0;
    if (t->revoked >= 0 || strcmp(t->role, "node") != 0 || strcmp(t->scope, a->node.spec.name) != 0)
        return GP_OK;
    json_array_append_new(a->revoked, json_string(t->id));
    return GP_OK;
}

/* Is the caller's token (a node credential) among the node's live ones? */
static bool caller_proven(const register_arg *a, const gp_principal *who)
{
    size_t i;
    json_t *id;
    json_array_foreach(a->revoked, i, id) {
        if (who->role == GP_ROLE_NODE && strcmp(json_string_value(id), who->token_id) == 0)
            return true;
    }
    return false;
}

/* A fresh credential of role node for a->node, the older ones revoked. */
static gp_err node_credential(gp_server *srv, register_arg *a, const gp_op *op, int64_t now, gp_error *err)
{
    char hash[65];
    gp_store_token t = {.id = a->id, .hash_hex = hash, .name = a->node.spec.name, .role = "node",
                        .scope = a->node.spec.name, .user = "", .created = now, .revoked = -1, .expires = -1,
                        .last_used = -1, .created_by = op->who->token_id};
    gp_err rc = GP_OK;
    size_t i;
    json_t *id;
    json_array_foreach(a->revoked, i, id) {
        if (rc == GP_OK)
            rc = gp_store_token_revoke(srv->store, json_string_value(id), now, err);
        if (rc == GP_OK)
            gp_auth_revoke(&srv->auth, json_string_value(id));
    }
    if (rc == GP_OK)
        rc = gp_token_generate(a->secret, a->id, hash, err);
    if (rc == GP_OK)
        rc = gp_store_token_insert(srv->store, &t, err);
    if (rc == GP_OK)
        rc = gp_auth_add(&srv->auth, &t, err);
    return rc;
}

/* A node gpupoold knows (or holds a credential of) registers again: with
 * its own credential, as an admin, or with a join token once an admin
 * approved it -- never with a join token alone, which would take the
 * live node's place (and its jobs) from whoever holds one. */
static gp_err existing_node_check(gp_server *srv, register_arg *a, const gp_principal *who, int64_t now,
                                  gp_error *err)
{
    a->proven = caller_proven(a, who);
    if (a->proven || who->role == GP_ROLE_ADMIN)
        return GP_OK;
    char state[16];
    int64_t since;
    const char *name = a->node.spec.name;
    gp_err rc = gp_store_node_approval_get(srv->store, name, state, sizeof state, &since, err);
    if (rc == GP_OK && strcmp(state, "approved") == 0 && now - since <= APPROVAL_TTL_S)
        a->approval_used = true;
    else if (rc == GP_OK)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "node.name",
                          "node %s already exists: only its agent registers it again, with its current credential"
                          " (STATE/%s/credential); a join token alone may not.  If the agent lost its credential,"
                          " an admin runs `gpupool nodes approve %s`, then the agent registers again (within an"
                          " hour)",
                          name, name, name);
    return rc;
}

/* After the node is in: a used approval is spent, a new node under
 * --approve-nodes is cordoned until approved, a single-use join token is
 * spent. */
static gp_err register_after(gp_server *srv, register_arg *a, const gp_principal *who, bool existing, int64_t now,
                             gp_error *err)
{
    const char *name = a->node.spec.name;
    gp_err rc = GP_OK;
    if (a->approval_used)
        rc = gp_store_node_approval_clear(srv->store, name, err);
    a->awaiting = !existing && srv->cfg.approve_nodes && who->role != GP_ROLE_ADMIN;
    if (rc == GP_OK && a->awaiting)
        rc = gp_journal_node_drain(&srv->journal, name, true, now, err);
    if (rc == GP_OK && a->awaiting)
        rc = gp_store_node_approval_set(srv->store, name, "awaiting", now, who->token_id, err);
    if (rc == GP_OK && who->role == GP_ROLE_JOIN && who->single_use) {
        rc = gp_store_token_revoke(srv->store, who->token_id, now, err);
        if (rc == GP_OK)
            gp_auth_revoke(&srv->auth, who->token_id);
    }
    return rc;
}

/* The refusal of a join token for a name outside its patterns: 403. */
static void refuse_name(gp_op *op, const char *name)
{
    char message[400];
    if (op->who->scope[0])
        snprintf(message, sizeof message, "join token %.64s may register nodes matching \"%.200s\", not %.64s",
                 op->who->name, op->who->scope, name);
    else /* made before join tokens named their nodes */
        snprintf(message, sizeof message,
                 "join token %.64s names no nodes: make one that does (gpupool token create --role join --nodes"
                 " PATTERNS)",
                 op->who->name);
    gp_op_reply(op, 403,
                json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "forbidden", "message", message, "field",
                          "node.name"));
    snprintf(op->error_text, sizeof op->error_text, "forbidden: %s", message);
}

/* The partition fence's terms (docs/operations.md "Partitions"), in the
 * register and heartbeat answers: a node whose last answered heartbeat was
 * sent fence_after_ms ago stops its replicas (their stop signal, a kill
 * fence_grace_ms later).  fence + grace = 3/4 of --node-lost-after, so a
 * fenced replica is dead before gpupoold counts the node lost and places
 * the copies; the last quarter covers the kill's own time.  Below 4 s the
 * heartbeat (1 s at least) leaves no room: no terms, no fence; nor with
 * --no-partition-fence (an agent given none stops fencing). */
static void fence_terms(const gp_server *srv, json_t *reply)
{
    int64_t lost_ms = srv->cfg.node_lost_after_s * 1000;
    if (srv->cfg.node_lost_after_s < 4 || srv->cfg.no_partition_fence)
        return;
    json_object_set_new(reply, "fence_after_ms", json_integer(lost_ms / 2));
    json_object_set_new(reply, "fence_grace_ms", json_integer(lost_ms / 4));
}

static void register_run(gp_server *srv, gp_op *op, int64_t now)
{
    register_arg *a = op->arg;
    const char *name = a->node.spec.name;
    gp_node_info n;
    gp_error err;
    bool known = engine_node(srv->journal.engine, name, &n);
    if (op->who->role == GP_ROLE_JOIN && !gp_join_covers(op->who->scope, name)) {
        refuse_name(op, name);
        return;
    }
    if (known && n.up && !gp_agents_has_agent(&srv->agents, name)) {
        gp_error_set(&err, GP_ERR_CONFLICT, "node.name",
                     "node %s is up as a static node (--fleet); an agent cannot take it over: take it out of the"
                     " fleet file first, or register under another name",
                     name);
        gp_op_fail(op, &err);
        return;
    }
    a->caller = op->who->token_id;
    gp_err rc = gp_store_tokens_scan(srv->store, live_credential, a, &err);
    bool existing = known || json_array_size(a->revoked) > 0;
    if (rc == GP_OK && op->who->role == GP_ROLE_JOIN && !a->caller_live)
        rc = gp_error_set(&err, GP_ERR_CONFLICT, "Authorization",
                          "join token %s is single-use and an earlier registration spent it", op->who->name);
    else if (rc == GP_OK && existing)
        rc = existing_node_check(srv, a, op->who, now, &err);
    if (rc == GP_OK)
        rc = gp_journal_node_add(&srv->journal, &a->node.spec, now, &err);
    if (rc == GP_OK)
        rc = node_credential(srv, a, op, now, &err);
    if (rc == GP_OK)
        rc = register_after(srv, a, op->who, existing, now, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_agents_registered(&srv->agents, name, gp_wall_ms());
    int64_t beat = srv->cfg.node_lost_after_s / 4 > 0 ? srv->cfg.node_lost_after_s / 4 : 1;
    json_t *reply = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:O, s:b, s:s}", "node", name, "token", a->secret,
                              "token_id", a->id, "epoch", (json_int_t)srv->agents.epoch, "heartbeat_s",
                              (json_int_t)beat, "node_lost_after_s", (json_int_t)srv->cfg.node_lost_after_s,
                              "revoked", a->revoked, "awaiting_approval", a->awaiting, "note",
                              "the credential is shown once; gpupoold keeps only its hash");
    fence_terms(srv, reply);
    if (a->csr && gp_api_node_cert_issue(srv, a->csr, name, a->id, gp_wall_ms() / 1000, reply, &err) != GP_OK)
        gp_log(GP_LOG_WARN, "node_certificate", "node=%s error=\"%s\"", name, err.message);
    gp_op_reply(op, 201, reply);
}

/* The body: the node's inventory, and a certificate request (a text:
 * api_node_certs.c reads it) or none. */
static gp_err register_body(json_t *body, gp_node_request *node, gp_error *err)
{
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(body, key, v) {
        if (rc == GP_OK && strcmp(key, "node") != 0 && strcmp(key, "csr") != 0)
            rc = gp_json_unknown_field("", key, err);
    }
    json_t *csr = json_object_get(body, "csr");
    if (rc == GP_OK && csr && !json_is_string(csr))
        rc = gp_error_set(err, GP_ERR_INVALID, "csr", "the certificate request is a PEM text");
    if (rc == GP_OK && !json_object_get(body, "node"))
        rc = gp_error_set(err, GP_ERR_INVALID, "node", "the body needs the node's inventory under \"node\"");
    if (rc == GP_OK)
        rc = gp_node_request_parse(json_object_get(body, "node"), node, err);
    return rc;
}

void gp_api_agent_register(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_JOIN && r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_NODE) {
        gp_api_forbidden(r, "register nodes (a join token does: gpupool token create --role join)");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    register_arg a = {.revoked = json_array()};
    gp_error err;
    json_t *csr = json_object_get(body, "csr");
    gp_err rc = register_body(body, &a.node, &err);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
    } else if (r->who.role == GP_ROLE_NODE && strcmp(r->who.scope, a.node.spec.name) != 0) {
        gp_api_error(r, 403, "forbidden", "node.name", "the credential of node %.64s registers only that node",
                     r->who.scope);
    } else if (!csr || !gp_api_node_certs_on(r->srv) ||
               gp_api_node_cert_request_ok(r, json_string_value(csr), a.node.spec.name)) {
        /* without certificates (--agent-mtls off) a request is ignored: the agent goes on without one */
        a.csr = csr && gp_api_node_certs_on(r->srv) ? json_string_value(csr) : NULL;
        gp_op op = {.run = register_run, .mutates = true, .arg = &a, .action = "agent.register"};
        snprintf(op.target, sizeof op.target, "node/%s", a.node.spec.name);
        gp_api_run_op(r, &op);
    }
    json_decref(body);
    json_decref(a.revoked);
}

/* ---- approve ---- */

static void approve_run(gp_server *srv, gp_op *op, int64_t now)
{
    const char *name = op->arg;
    gp_node_info n;
    gp_error err;
    char state[16];
    if (!engine_node(srv->journal.engine, name, &n)) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "node", "no node %s", name);
        gp_op_fail(op, &err);
        return;
    }
    int64_t since;
    gp_err rc = gp_store_node_approval_get(srv->store, name, state, sizeof state, &since, &err);
    bool awaiting = rc == GP_OK && strcmp(state, "awaiting") == 0;
    if (rc == GP_OK && awaiting)
        rc = gp_journal_node_drain(&srv->journal, name, false, now, &err);
    if (rc == GP_OK && awaiting)
        rc = gp_store_node_approval_clear(srv->store, name, &err);
    else if (rc == GP_OK)
        rc = gp_store_node_approval_set(srv->store, name, "approved", now, op->who->token_id, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200,
                json_pack("{s:s, s:s, s:s}", "node", name, "approved", awaiting ? "new node" : "registration",
                          "note",
                          awaiting ? "the node takes work now"
                                   : "its next registration with a join token within an hour is let in, once (it"
                                     " replaces the node's credential)"));
}

void gp_api_node_approve(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_OPERATOR) {
        gp_api_forbidden(r, "approve nodes");
        return;
    }
    gp_op op = {.run = approve_run, .mutates = true, .arg = (void *)name, .action = "node.approve"};
    snprintf(op.target, sizeof op.target, "node/%s", name);
    gp_api_run_op(r, &op);
}

/* ---- remove ---- */

/* The node's live credentials (role node, scope the node). */
static gp_err node_credentials(void *ctx, const gp_store_token *t, gp_error *err)
{
    (void)err;
    json_t *ids = ctx;
    const char *node = json_string_value(json_array_get(ids, 0));
    if (t->revoked < 0 && strcmp(t->role, "node") == 0 && strcmp(t->scope, node) == 0)
        json_array_append_new(ids, json_string(t->id));
    return GP_OK;
}

/* The node's credentials revoked (so its certificates, bound to them, with
 * them), the node lost (its jobs requeued), a pending approval cleared:
 * it comes back only through `gpupool nodes approve` and a registration. */
static void remove_run(gp_server *srv, gp_op *op, int64_t now)
{
    const char *name = op->arg;
    gp_node_info n;
    gp_error err;
    if (!engine_node(srv->journal.engine, name, &n)) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "node", "no node %s", name);
        gp_op_fail(op, &err);
        return;
    }
    json_t *ids = json_pack("[s]", name); /* [0]: the node, then its credentials */
    gp_err rc = gp_store_tokens_scan(srv->store, node_credentials, ids, &err);
    for (size_t i = 1; rc == GP_OK && i < json_array_size(ids); i++) {
        rc = gp_store_token_revoke(srv->store, json_string_value(json_array_get(ids, i)), now, &err);
        if (rc == GP_OK)
            gp_auth_revoke(&srv->auth, json_string_value(json_array_get(ids, i)));
    }
    if (rc == GP_OK && n.up)
        rc = gp_journal_node_lost(&srv->journal, name, now, &err);
    if (rc == GP_OK)
        rc = gp_store_node_approval_clear(srv->store, name, &err);
    if (rc != GP_OK) {
        json_decref(ids);
        gp_op_fail(op, &err);
        return;
    }
    json_array_remove(ids, 0);
    gp_op_reply(op, 200,
                json_pack("{s:s, s:o, s:s}", "node", name, "revoked", ids, "note",
                          "its credentials and certificates are refused from now on; it comes back only after"
                          " `gpupool nodes approve` and a registration"));
}

void gp_api_node_remove(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "remove nodes");
        return;
    }
    gp_op op = {.run = remove_run, .mutates = true, .arg = (void *)name, .action = "node.remove"};
    snprintf(op.target, sizeof op.target, "node/%s", name);
    gp_api_run_op(r, &op);
}

/* ---- assignments ---- */

typedef struct state_arg {
    const char *node;
    char gpu_type[GP_NAME_MAX]; /* out: the node's, "" when unknown (image_hints.h) */
} state_arg;

/* When the grace ends in wall-clock ms: the decision's real time plus the
 * grace where that time is known (engine time is whole seconds, so the
 * engine's deadline is up to a second late), never after the engine's
 * deadline; a checkpoint in the grace ends it at the checkpoint's time. */
static int64_t kill_deadline_ms(const gp_job_info *info, const gp_agent_stop *stop, int64_t deadline)
{
    if (!stop || stop->since_ms < 0 || deadline != info->preempt_deadline)
        return deadline * 1000;
    int64_t ms = stop->since_ms + stop->grace_s * 1000;
    return ms < deadline * 1000 ? ms : deadline * 1000;
}

static const char *action_of(const gp_agents *a, const gp_job_info *info, json_t *o)
{
    if (info->state != GP_JOB_PREEMPTING)
        return "run";
    gp_agent_stop stop;
    bool known = gp_agents_stop_of(a, info->id, &stop);
    int64_t deadline = info->preempt_deadline;
    if (known && info->last_checkpoint >= stop.since)
        deadline = info->last_checkpoint; /* checkpoint done: the grace is over, stop now */
    json_object_set_new(o, "stop_reason", json_string(known ? stop.reason : "stop"));
    json_object_set_new(o, "kill_deadline", json_integer(deadline));
    json_object_set_new(o, "kill_deadline_ms", json_integer(kill_deadline_ms(info, known ? &stop : NULL, deadline)));
    return "stop";
}

/* A copy of a replica's slice, an MPS one with the GPU memory the engine
 * counts for it (`gpu_mem_mib`: the job's own limit, else its share of the
 * GPU's memory), which the agent enforces.  (A time-slice replica is
 * counted the whole GPU's memory; the agent caps it at its share.) */
static json_t *slice_with_memory(const gp_engine *e, const gp_job_info *info, int replica, json_t *slice)
{
    json_t *o = json_deep_copy(slice);
    gp_slice *slices = calloc((size_t)info->replicas, sizeof *slices);
    size_t n = slices ? gp_engine_job_slices(e, info->id, slices, (size_t)info->replicas) : 0;
    if ((size_t)replica < n && slices[replica].kind == GP_ISO_MPS && slices[replica].gpu_mem_mib > 0)
        json_object_set_new(o, "gpu_mem_mib", json_integer(slices[replica].gpu_mem_mib));
    free(slices);
    return o;
}

/* What the agent checks again before it starts a replica (issue 29): the
 * lowest uid gpupoold allows a named user, and the effective trust of the
 * job's tenant (an untrusted tenant's replica needs device isolation). */
static void add_identity(const gp_server *srv, const gp_job_info *info, json_t *o)
{
    gp_tenant_info tenant;
    bool untrusted = !gp_engine_tenant_get(srv->journal.engine, info->tenant, &tenant) || tenant.untrusted;
    json_object_set_new(o, "uid_min", json_integer(srv->cfg.min_job_uid));
    json_object_set_new(o, "trust", json_string(untrusted ? "untrusted" : "trusted"));
}

/* The replicas of job id on node, as the agent runs them (the spec's
 * fields are added on the API thread, desired_add_specs). */
static void job_assignments(const gp_server *srv, uint64_t id, const char *node, json_t *out)
{
    const gp_engine *e = srv->journal.engine;
    gp_job_info info;
    if (gp_engine_job_info(e, id, &info, NULL) != GP_OK)
        return;
    json_t *placement = gp_placement_json(e, id, &info);
    json_t *peers = json_array();
    size_t r;
    json_t *rep;
    json_array_foreach(placement, r, rep) json_array_append(peers, json_object_get(rep, "node"));
    json_array_foreach(placement, r, rep) {
        if (strcmp(json_string_value(json_object_get(rep, "node")), node) != 0)
            continue;
        json_t *o = json_pack("{s:I, s:i, s:i, s:I, s:O, s:O, s:i, s:o, s:o}", "job", (json_int_t)id, "replica",
                              (int)r, "replicas", info.replicas, "bind_time", (json_int_t)info.bind_time, "gpus",
                              json_object_get(rep, "gpus"), "peers", peers, "restart_count", info.requeues + info.restarts,
                              "time_limit_s", info.time_limit_s > 0 ? json_integer(info.time_limit_s) : json_null(),
                              "last_checkpoint",
                              info.last_checkpoint >= 0 ? json_integer(info.last_checkpoint) : json_null());
        if (json_object_get(rep, "slice"))
            json_object_set_new(o, "slice", slice_with_memory(e, &info, (int)r, json_object_get(rep, "slice")));
        add_identity(srv, &info, o);
        json_object_set_new(o, "action", json_string(action_of(&srv->agents, &info, o)));
        json_array_append_new(out, o);
    }
    json_decref(peers);
    json_decref(placement);
}

/* On the engine thread, after a commit: the node's version and replicas. */
static void state_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    state_arg *a = op->arg;
    uint64_t *ids = malloc(MAX_JOBS_PER_NODE * sizeof *ids);
    size_t n = ids ? gp_agents_jobs_on(&srv->agents, a->node, ids, MAX_JOBS_PER_NODE) : 0;
    gp_node_info info;
    bool known = engine_node(srv->journal.engine, a->node, &info), up = known && info.up;
    const char *type = known ? gp_engine_gpu_type_name(srv->journal.engine, info.type) : NULL;
    snprintf(a->gpu_type, sizeof a->gpu_type, "%s", type ? type : "");
    json_t *list = json_array();
    for (size_t i = 0; i < n && i < MAX_JOBS_PER_NODE; i++)
        job_assignments(srv, ids[i], a->node, list);
    free(ids);
    gp_op_reply(op, 200,
                json_pack("{s:s, s:I, s:I, s:b, s:b, s:I, s:o}", "node", a->node, "epoch",
                          (json_int_t)srv->agents.epoch, "version", (json_int_t)gp_agents_version(&srv->agents, a->node),
                          "up", up, "draining", up && info.draining, "now_ms", (json_int_t)gp_wall_ms(), "assignments",
                          list));
}

/* The fields of a job's spec an assignment carries. */
static const char *const SPEC_KEYS[] = {"name", "tenant", "user", "kind", "command", "env", "cpu_millis", "mem_mib",
                                        "checkpoint_grace_s", "stop_signal", "pids_max", "image", "shm_mib",
                                        "read_only_root", "network", "keep_running_when_partitioned"};

/* The job's spec fields an agent needs, kept per job: SPEC_KEYS, and
 * env_from_secret for the secrets and mounts for the container.  A job's spec never changes, so they
 * are read from its row once (the first answer that names it) and then
 * taken from the node's last answer (`known`, agents.h gp_agents_specs);
 * each goes into `kept`, the node's next.  NULL when the row cannot be
 * read.  *s: a reader, taken on the first read.  The fields are shared,
 * never changed (read by other API threads; jansson counts references
 * atomically). */
static json_t *spec_fields(gp_request *r, gp_store **s, uint64_t job, const json_t *known, json_t *kept, bool *fresh)
{
    char key[24];
    snprintf(key, sizeof key, "%llu", (unsigned long long)job);
    json_t *fields = json_object_get(known, key);
    *fresh = !fields;
    if (fields) {
        json_object_set(kept, key, fields);
        return fields;
    }
    gp_error err;
    json_t *row = NULL;
    if (!*s)
        *s = gp_readers_take(&r->srv->readers, &err);
    if (!*s || gp_store_job_get(*s, job, &row, &err) != GP_OK)
        return NULL;
    json_t *spec = json_object_get(row, "spec");
    fields = json_object();
    for (size_t k = 0; k < sizeof SPEC_KEYS / sizeof SPEC_KEYS[0]; k++)
        if (json_object_get(spec, SPEC_KEYS[k]))
            json_object_set(fields, SPEC_KEYS[k], json_object_get(spec, SPEC_KEYS[k]));
    const char *more[] = {"env_from_secret", "mounts"};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++)
        if (json_object_get(spec, more[k]))
            json_object_set(fields, more[k], json_object_get(spec, more[k]));
    json_object_set_new(kept, key, fields);
    json_decref(row);
    return fields;
}

/* The job's spec fields an agent needs (spec_fields); an entry to run gets
 * the values of the secrets its job names (api_secrets.c: read every
 * time, a secret may change), its container's mounts, allow_userns and
 * image_auth, and its tenant's egress and reach_from, as its tenant's
 * policy and credentials are now (api_containers.c; the tenants' specs
 * read once per answer). */
static void desired_add_specs(gp_request *r, const state_arg *a, json_t *assignments)
{
    const char *node = a->node;
    json_t *known = gp_agents_specs(&r->srv->agents, node), *kept = json_object(), *tenants = NULL;
    gp_store *s = NULL;
    gp_error err;
    size_t i;
    json_t *o;
    json_array_foreach(assignments, i, o) {
        uint64_t job = (uint64_t)json_integer_value(json_object_get(o, "job"));
        bool fresh = false;
        json_t *fields = spec_fields(r, &s, job, known, kept, &fresh);
        if (!fields)
            continue;
        if (fresh) /* the node's first answer that carries the job: it starts there */
            gp_image_hints_note_start(&r->srv->image_hints, a->gpu_type, job,
                                      json_string_value(json_object_get(fields, "tenant")),
                                      json_string_value(json_object_get(fields, "image")), gp_wall_ms());
        for (size_t k = 0; k < sizeof SPEC_KEYS / sizeof SPEC_KEYS[0]; k++)
            if (json_object_get(fields, SPEC_KEYS[k]))
                json_object_set(o, SPEC_KEYS[k], json_object_get(fields, SPEC_KEYS[k]));
        bool run = strcmp(json_string_value(json_object_get(o, "action")), "run") == 0; /* secrets: only to start it */
        bool container = json_object_get(fields, "image") != NULL;
        if (run && !s)
            s = gp_readers_take(&r->srv->readers, &err);
        if (run && s)
            gp_api_assignment_secrets(r->srv, s, o, fields);
        if (run && s && container)
            gp_api_assignment_container(r->srv, s, o, fields);
        if (run && s && !tenants && gp_store_tenants_get(s, &tenants, &err) != GP_OK)
            tenants = NULL; /* each entry then reads its chain itself */
        if (run && s)
            gp_api_assignment_egress(s, tenants, o);
    }
    json_decref(tenants);
    gp_readers_give(&r->srv->readers, s);
    gp_agents_specs_keep(&r->srv->agents, node, kept);
    json_decref(known);
}

void gp_api_agent_assignments(gp_request *r, const char *node)
{
    static const char *const allowed[] = {"after", "wait", NULL};
    int64_t after = 0, wait = 0;
    if (!gp_api_query_only(r, allowed) || !gp_api_node_caller(r, node) ||
        !gp_api_query_int(r, "after", 0, INT64_MAX, &after) || !gp_api_query_int(r, "wait", 0, MAX_WAIT_S, &wait))
        return;
    gp_agents_wait(&r->srv->agents, node, (uint64_t)after, wait * 1000);
    state_arg a = {.node = node};
    gp_op op = {.run = state_run, .arg = &a};
    op.who = &r->who;
    op.request_id = r->request_id;
    gp_loop_run(&r->srv->loop, &op);
    if (op.status == 200) {
        desired_add_specs(r, &a, json_object_get(op.reply, "assignments"));
        json_object_set_new(op.reply, "image_hints", gp_image_hints_for(&r->srv->image_hints, node, a.gpu_type));
    }
    gp_api_reply(r, op.status ? op.status : 500, op.reply);
}

/* ---- heartbeat ---- */

/* A replica's image pull in progress (state "pulling"): {"image":
 * "docker://...", "done_bytes": N, "total_bytes": M (0: not known yet),
 * "started_at": epoch s}, every field required. */
static gp_err running_pull(const json_t *v, const char *field, gp_error *err)
{
    static const char *const NEEDS[] = {"image", "done_bytes", "total_bytes", "started_at"};
    gp_err rc = gp_json_object(v, field, err);
    const char *key;
    json_t *x;
    int64_t n;
    char image[GP_IMAGE_REF_MAX + 1];
    json_object_foreach((json_t *)v, key, x) {
        char name[96];
        gp_json_field_name(name, sizeof name, field, key);
        if (rc == GP_OK && strcmp(key, "image") == 0)
            rc = gp_json_string(x, name, GP_IMAGE_REF_MAX, image, sizeof image, err);
        else if (rc == GP_OK && strcmp(key, "started_at") == 0)
            rc = gp_json_int(x, name, 0, INT64_C(1) << 40, &n, err);
        else if (rc == GP_OK && (strcmp(key, "done_bytes") == 0 || strcmp(key, "total_bytes") == 0))
            rc = gp_json_int(x, name, 0, INT64_C(1) << 50, &n, err);
        else if (rc == GP_OK)
            rc = gp_json_unknown_field(field, key, err);
    }
    for (size_t k = 0; rc == GP_OK && k < sizeof NEEDS / sizeof NEEDS[0]; k++)
        if (!json_object_get(v, NEEDS[k]))
            rc = gp_error_set(err, GP_ERR_INVALID, field, "%s.%s is required", field, NEEDS[k]);
    return rc;
}

/* {"job": 7, "replica": 0, "pid": 4242, "state": "running",
 *  "gpus": [{"uuid": "MIG-...", "memory_used_mib": 9000, "sm_active_pct": 40}]}
 * (gpus: the replica's use of its GPUs or slices, opaque like the node's;
 * "state": "pulling" with "pull" while its image is pulled) */
static gp_err running_entry(const json_t *v, size_t i, gp_error *err)
{
    char field[48];
    snprintf(field, sizeof field, "running[%zu]", i);
    gp_err rc = gp_json_object(v, field, err);
    const char *key;
    json_t *x;
    int64_t n;
    char text[GP_NAME_MAX];
    json_object_foreach((json_t *)v, key, x) {
        if (rc)
            break;
        char name[96];
        gp_json_field_name(name, sizeof name, field, key);
        if (strcmp(key, "job") == 0)
            rc = gp_json_int(x, name, 1, INT64_MAX, &n, err);
        else if (strcmp(key, "replica") == 0)
            rc = gp_json_int(x, name, 0, GP_MAX_REPLICAS - 1, &n, err);
        else if (strcmp(key, "pid") == 0)
            rc = gp_json_int(x, name, 0, INT32_MAX, &n, err);
        else if (strcmp(key, "state") == 0)
            rc = gp_json_string(x, name, sizeof text - 1, text, sizeof text, err);
        else if (strcmp(key, "gpus") == 0 && !json_is_array(x))
            rc = gp_error_set(err, GP_ERR_INVALID, name, "%s must be an array", name);
        else if (strcmp(key, "pull") == 0)
            rc = running_pull(x, name, err);
        else if (strcmp(key, "gpus") != 0)
            rc = gp_json_unknown_field(field, key, err);
    }
    if (rc == GP_OK && (!json_object_get(v, "job") || !json_object_get(v, "replica")))
        rc = gp_error_set(err, GP_ERR_INVALID, field, "%s needs job and replica", field);
    return rc;
}

static gp_err heartbeat_body(const json_t *body, gp_error *err)
{
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach((json_t *)body, key, v) {
        if (rc)
            break;
        if ((strcmp(key, "running") == 0 || strcmp(key, "gpus") == 0) && !json_is_array(v))
            rc = gp_error_set(err, GP_ERR_INVALID, key, "%s must be an array", key);
        else if (strcmp(key, "running") != 0 && strcmp(key, "gpus") != 0)
            rc = gp_json_unknown_field("", key, err);
    }
    size_t i;
    json_array_foreach(json_object_get(body, "running"), i, v) {
        if (rc == GP_OK)
            rc = running_entry(v, i, err);
    }
    return rc;
}

void gp_api_agent_heartbeat(gp_request *r, const char *node)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_node_caller(r, node))
        return;
    json_t *body = r->body_len ? gp_api_body_object(r) : json_object();
    if (!body)
        return;
    gp_error err;
    if (heartbeat_body(body, &err) != GP_OK) {
        json_decref(body);
        gp_api_fail(r, &err);
        return;
    }
    uint64_t version = 0;
    int64_t now_ms = gp_wall_ms();
    json_t *running = json_incref(json_object_get(body, "running")), *gpus = json_incref(json_object_get(body, "gpus"));
    gp_agent_beat beat = gp_agents_heartbeat(&r->srv->agents, node, running ? running : json_array(),
                                             gpus ? gpus : json_array(), now_ms, &version);
    if (beat == GP_AGENT_BEAT_OK) /* allocated vs used (use.h) */
        gp_use_beat(&r->srv->use, node, json_object_get(body, "running"), now_ms);
    json_decref(body);
    if (beat != GP_AGENT_BEAT_OK) {
        gp_api_error(r, 409, "conflict", "node",
                     "node %s is %s: register again (POST /v1/agents:register with the node's credential); its jobs"
                     " were requeued",
                     node, beat == GP_AGENT_BEAT_LOST ? "lost (silent past --node-lost-after, or taken down)"
                                                      : "not registered by an agent");
        return;
    }
    json_t *reply = json_pack("{s:s, s:I, s:I, s:o}", "node", node, "epoch", (json_int_t)r->srv->agents.epoch,
                              "version", (json_int_t)version, "image_hints",
                              gp_image_hints_for_node(&r->srv->image_hints, &r->srv->readers, node, now_ms));
    fence_terms(r->srv, reply); /* a restarted gpupoold's terms reach nodes that do not register again */
    gp_api_reply(r, 200, reply);
}

/* ---- reports ---- */

typedef enum report_what {
    REPORT_STARTED = 0,
    REPORT_EXITED,
    REPORT_CHECKPOINTED,
    REPORT_GPU_HEALTH,
    REPORT_GPU_CHECK,
} report_what;

#define REPORT_KINDS 5

typedef struct report {
    report_what what;
    gp_replica_exit exit;   /* job_id, replica; exited: the rest */
    int64_t time;           /* checkpointed: when, on the agent's clock */
    int64_t pid;            /* started: the replica's pid, 0 = not said */
    int gpu;                /* gpu_health, gpu_check */
    bool healthy;
    char why[256];          /* gpu_health: optional */
    bool drain_node;        /* gpu_health: the agent asks for the node to be drained */
    char check[64];         /* gpu_check: "sim", "nvml", "xid", "repair", a diagnostic */
    bool passed;
    char detail[256];
    int64_t xid;            /* gpu_check: 0 = none */
    char action[32];        /* gpu_check: the XID's action, "" = none */
    int64_t at;             /* gpu_check: epoch seconds, 0 = not said (now) */
    int64_t duration_ms;    /* gpu_check: -1 = not said */
    int64_t log_dropped;    /* exited: bytes of output its log cap dropped, 0 = none */
    int64_t from_bind_ms;   /* started: bind -> exec, -1 = not said */
    int64_t pull_ms;        /* started: the image pull's part of it, -1 = no pull */
    char image[GP_IMAGE_REF_MAX + 1]; /* started: the image pulled */
    char message[512];      /* exited: why a run never started (the agent's DIR/error) */
} report;

typedef struct reports_arg {
    const char *node;
    report *items;
    size_t n;
} reports_arg;

static gp_err report_what_parse(const json_t *v, const char *field, report_what *out, gp_error *err)
{
    static const char *const NAMES[REPORT_KINDS] = {"started", "exited", "checkpointed", "gpu_health", "gpu_check"};
    char text[16];
    gp_err rc = gp_json_string(v, field, sizeof text - 1, text, sizeof text, err);
    for (int k = 0; rc == GP_OK && k < REPORT_KINDS; k++)
        if (strcmp(text, NAMES[k]) == 0) {
            *out = (report_what)k;
            return GP_OK;
        }
    return rc ? rc : gp_error_set(err, GP_ERR_INVALID, field, "%s must be started, exited, checkpointed, gpu_health or gpu_check",
                                  field);
}

/* A report's integer fields and their bounds; false for another key. */
static bool report_int_bounds(const char *key, int64_t *min, int64_t *max)
{
    static const struct {
        const char *key;
        int64_t min, max;
    } INTS[] = {{"job", 1, INT64_MAX},      {"replica", 0, GP_MAX_REPLICAS - 1},  {"bind_time", 0, INT64_MAX},
                {"exit_code", 0, 255},      {"signal", 0, 64},                    {"time", 0, INT64_C(1) << 40},
                {"gpu", 0, GP_MAX_GPUS_PER_NODE - 1}, {"pid", 1, INT32_MAX},
                {"gpu_memory_mib", 0, INT64_C(1) << 40}, {"gpu_memory_share_mib", 0, INT64_C(1) << 40},
                {"xid", 1, 1023},                      {"at", 0, INT64_C(1) << 40},
                {"duration_ms", 0, INT64_C(1) << 40},  {"log_dropped_bytes", 0, INT64_C(1) << 50},
                {"from_bind_ms", 0, INT64_C(1) << 40}, {"pull_ms", 0, INT64_C(1) << 40}};
    for (size_t i = 0; i < sizeof INTS / sizeof INTS[0]; i++)
        if (strcmp(key, INTS[i].key) == 0) {
            *min = INTS[i].min;
            *max = INTS[i].max;
            return true;
        }
    return false;
}

static void report_int_store(report *out, const char *key, int64_t n)
{
    if (strcmp(key, "job") == 0)
        out->exit.job_id = (uint64_t)n;
    else if (strcmp(key, "replica") == 0)
        out->exit.replica = (int)n;
    else if (strcmp(key, "bind_time") == 0)
        out->exit.bind_time = n;
    else if (strcmp(key, "exit_code") == 0)
        out->exit.exit_code = (int)n;
    else if (strcmp(key, "signal") == 0)
        out->exit.signal = (int)n;
    else if (strcmp(key, "time") == 0)
        out->time = n;
    else if (strcmp(key, "pid") == 0)
        out->pid = n;
    else if (strcmp(key, "gpu_memory_mib") == 0)
        out->exit.gpu_memory_mib = n;
    else if (strcmp(key, "gpu_memory_share_mib") == 0)
        out->exit.gpu_memory_share_mib = n;
    else if (strcmp(key, "xid") == 0)
        out->xid = n;
    else if (strcmp(key, "at") == 0)
        out->at = n;
    else if (strcmp(key, "duration_ms") == 0)
        out->duration_ms = n;
    else if (strcmp(key, "log_dropped_bytes") == 0)
        out->log_dropped = n;
    else if (strcmp(key, "from_bind_ms") == 0)
        out->from_bind_ms = n;
    else if (strcmp(key, "pull_ms") == 0)
        out->pull_ms = n;
    else
        out->gpu = (int)n;
}

/* gpu_check's action: a lowercase name ("reset_gpu"); the agent's XID
 * table (docs/agent.md) says which. */
static gp_err report_action(const json_t *v, const char *name, report *out, gp_error *err)
{
    gp_err rc = gp_json_string(v, name, sizeof out->action - 1, out->action, sizeof out->action, err);
    if (rc == GP_OK && (!out->action[0] || strspn(out->action, "abcdefghijklmnopqrstuvwxyz_") != strlen(out->action)))
        rc = gp_error_set(err, GP_ERR_INVALID, name, "%s must be an action name such as reset_gpu", name);
    return rc;
}

/* The text and flag fields of gpu_health and gpu_check; false for another key. */
static bool report_health_field(const char *key, const json_t *v, const char *name, report *out, gp_err *rc,
                                gp_error *err)
{
    if (strcmp(key, "why") == 0)
        *rc = gp_json_string(v, name, sizeof out->why - 1, out->why, sizeof out->why, err);
    else if (strcmp(key, "detail") == 0)
        *rc = gp_json_string(v, name, sizeof out->detail - 1, out->detail, sizeof out->detail, err);
    else if (strcmp(key, "check") == 0)
        *rc = gp_json_string(v, name, sizeof out->check - 1, out->check, sizeof out->check, err);
    else if (strcmp(key, "action") == 0)
        *rc = report_action(v, name, out, err);
    else if (strcmp(key, "passed") == 0)
        *rc = gp_json_bool(v, name, &out->passed, err);
    else if (strcmp(key, "drain_node") == 0)
        *rc = gp_json_bool(v, name, &out->drain_node, err);
    else if (strcmp(key, "image") == 0)
        *rc = gp_json_string(v, name, sizeof out->image - 1, out->image, sizeof out->image, err);
    else if (strcmp(key, "message") == 0)
        *rc = gp_json_string(v, name, sizeof out->message - 1, out->message, sizeof out->message, err);
    else
        return false;
    return true;
}

/* One field of a report into it. */
static gp_err report_field(const char *key, const json_t *v, const char *name, report *out, gp_error *err)
{
    int64_t n = 0, min, max;
    char reason[32];
    gp_err rc;
    if (strcmp(key, "what") == 0)
        return report_what_parse(v, name, &out->what, err);
    if (strcmp(key, "healthy") == 0)
        return gp_json_bool(v, name, &out->healthy, err);
    if (report_health_field(key, v, name, out, &rc, err))
        return rc;
    if (strcmp(key, "reason") == 0) {
        rc = gp_json_string(v, name, sizeof reason - 1, reason, sizeof reason, err);
        if (rc == GP_OK && !gp_exit_reason_parse(reason, &out->exit.reason)) {
            char names[128];
            gp_exit_reason_list(names, sizeof names);
            rc = gp_error_set(err, GP_ERR_INVALID, name, "%s must be %s", name, names);
        }
        return rc;
    }
    if (!report_int_bounds(key, &min, &max))
        return gp_error_set(err, GP_ERR_INVALID, name, "unknown field %s", name);
    rc = gp_json_int(v, name, min, max, &n, err);
    if (rc == GP_OK)
        report_int_store(out, key, n);
    return rc;
}

/* The fields each kind of report must carry. */
static gp_err report_required(const json_t *v, const char *field, report_what what, gp_error *err)
{
    static const char *const NEEDS[REPORT_KINDS][4] = {
        [REPORT_STARTED] = {"job", "replica", NULL},
        [REPORT_EXITED] = {"job", "replica", "bind_time", "reason"},
        [REPORT_CHECKPOINTED] = {"job", "time", NULL},
        [REPORT_GPU_HEALTH] = {"gpu", "healthy", NULL},
        [REPORT_GPU_CHECK] = {"gpu", "check", "passed", NULL},
    };
    for (int k = 0; k < 4 && NEEDS[what][k]; k++)
        if (!json_object_get(v, NEEDS[what][k]))
            return gp_error_set(err, GP_ERR_INVALID, field, "%s.%s is required for this report", field,
                                NEEDS[what][k]);
    return GP_OK;
}

static gp_err report_parse(const json_t *v, size_t i, const char *node, report *out, gp_error *err)
{
    char field[48];
    snprintf(field, sizeof field, "reports[%zu]", i);
    memset(out, 0, sizeof *out);
    out->exit.bind_time = -1; /* not given (optional for started) */
    out->duration_ms = -1;
    out->from_bind_ms = -1;
    out->pull_ms = -1;
    snprintf(out->exit.node, sizeof out->exit.node, "%s", node);
    gp_err rc = gp_json_object(v, field, err);
    if (rc == GP_OK && !json_object_get(v, "what"))
        rc = gp_error_set(err, GP_ERR_INVALID, field, "%s.what is required", field);
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        char name[96];
        gp_json_field_name(name, sizeof name, field, key);
        if (rc == GP_OK)
            rc = report_field(key, x, name, out, err);
    }
    if (rc == GP_OK && out->exit.reason != GP_EXIT_REASON_GPU_MEMORY &&
        (json_object_get(v, "gpu_memory_mib") || json_object_get(v, "gpu_memory_share_mib")))
        rc = gp_error_set(err, GP_ERR_INVALID, field, "%s: gpu_memory_mib and gpu_memory_share_mib are only for reason"
                          " gpu_memory", field);
    return rc ? rc : report_required(v, field, out->what, err);
}

/* Is replica `replica` of the job placed on `node`? (any replica: -1) */
static bool replica_on(const gp_engine *e, const gp_job_info *info, int replica, const char *node)
{
    const char *name;
    for (int r = replica < 0 ? 0 : replica; (name = gp_engine_job_node(e, info->id, r)) != NULL; r++) {
        if (strcmp(name, node) == 0)
            return true;
        if (replica >= 0)
            return false;
    }
    return false;
}

/* A report about a job: its replica on this node, else why not. */
static const char *job_report_refused(const gp_engine *e, const report *rep, const char *node, gp_job_info *info)
{
    if (gp_engine_job_info(e, rep->exit.job_id, info, NULL) != GP_OK)
        return "the job is no longer live";
    int replica = rep->what == REPORT_CHECKPOINTED ? -1 : rep->exit.replica;
    if (!replica_on(e, info, replica, node))
        return "not assigned to this node (any more)";
    return NULL;
}

/* An audit row for a change a node's report made (actor: the node's
 * credential), in the batch's transaction. */
static gp_err audit_report_change(gp_server *srv, const gp_op *op, int64_t now, const char *action,
                                  const char *target, gp_error *err)
{
    gp_store_audit row = {.time = now,
                          .request_id = op->request_id ? op->request_id : "",
                          .actor = op->who ? op->who->token_id : "gpupoold",
                          .role = op->who ? gp_role_name(op->who->role) : "system",
                          .action = action,
                          .target = target,
                          .result = "ok"};
    return gp_store_audit_append(srv->store, &row, err);
}

/* Drains the node for GPU health (the agent asked, or
 * --drain-on-gpu-failure) or undoes such a drain once every GPU of the
 * node is healthy; an operator's drain is never undone (it is not in
 * health_drains). */
static gp_err health_drain(gp_server *srv, const gp_op *op, const char *node, const report *rep, int64_t now,
                           bool *changed, gp_error *err)
{
    gp_node_info n;
    bool by_health = false;
    char target[GP_NAME_MAX + 8];
    snprintf(target, sizeof target, "node/%s", node);
    if (!engine_node(srv->journal.engine, node, &n))
        return GP_OK;
    gp_err rc = gp_store_health_drain_get(srv->store, node, &by_health, err);
    bool drain = !rep->healthy && (rep->drain_node || srv->cfg.drain_on_gpu_failure) && !n.draining;
    bool undrain = rep->healthy && by_health && n.gpus_healthy == n.gpu_count;
    if (rc != GP_OK || (!drain && !undrain))
        return rc;
    if (drain || n.draining)
        rc = gp_journal_node_drain(&srv->journal, node, drain, now, err);
    if (rc == GP_OK)
        rc = gp_store_health_drain_set(srv->store, node, drain, now, err);
    if (rc == GP_OK)
        rc = audit_report_change(srv, op, now, drain ? "node.drain" : "node.undrain", target, err);
    *changed = rc == GP_OK;
    return rc;
}

static gp_err apply_gpu_health(gp_server *srv, const gp_op *op, const reports_arg *a, const report *rep, int64_t now,
                               const char **note, gp_error *err)
{
    gp_node_info n;
    gp_gpu_info g;
    if (!engine_node(srv->journal.engine, a->node, &n) || rep->gpu >= n.gpu_count)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "node %s has GPUs 0..%d", a->node, n.gpu_count - 1);
    bool changed = !gp_engine_gpu_get(srv->journal.engine, n.gpu_first + (uint32_t)rep->gpu, &g) ||
                   g.healthy != rep->healthy;
    gp_err rc = GP_OK;
    char target[GP_NAME_MAX + 24];
    snprintf(target, sizeof target, "node/%s/gpu/%d", a->node, rep->gpu);
    if (changed)
        rc = gp_journal_gpu_health(&srv->journal, a->node, rep->gpu, rep->healthy, now, err);
    if (rc == GP_OK && (changed || rep->why[0])) /* a GPU still out may say why anew */
        rc = gp_store_gpu_health_set(srv->store, a->node, rep->gpu, rep->healthy, now, rep->why[0] ? rep->why : NULL,
                                     err);
    if (rc == GP_OK && changed)
        rc = audit_report_change(srv, op, now, rep->healthy ? "gpu.healthy" : "gpu.unhealthy", target, err);
    bool drained = false;
    if (rc == GP_OK)
        rc = health_drain(srv, op, a->node, rep, now, &drained, err);
    if (rc == GP_OK && !changed && !drained)
        *note = "no change";
    return rc;
}

/* A check's result: a row of gpu_checks (no engine event). */
static gp_err apply_gpu_check(gp_server *srv, const reports_arg *a, const report *rep, int64_t now, gp_error *err)
{
    gp_node_info n;
    if (!engine_node(srv->journal.engine, a->node, &n) || rep->gpu >= n.gpu_count)
        return gp_error_set(err, GP_ERR_INVALID, "gpu", "node %s has GPUs 0..%d", a->node, n.gpu_count - 1);
    gp_store_gpu_check c = {.node = a->node, .gpu = rep->gpu, .at = rep->at > 0 ? rep->at : now,
                            .check = rep->check, .passed = rep->passed, .detail = rep->detail[0] ? rep->detail : NULL,
                            .xid = (int)rep->xid, .action = rep->action[0] ? rep->action : NULL,
                            .duration_ms = rep->duration_ms};
    return gp_store_gpu_check_add(srv->store, &c, err);
}

/* A replica started: a history row "start" (once per replica run). */
static gp_err apply_started(gp_server *srv, const report *rep, const gp_job_info *info, int64_t now,
                            const char **note, gp_error *err)
{
    if (rep->exit.bind_time >= 0 && rep->exit.bind_time != info->bind_time) {
        *note = "not the job's current run";
        return GP_OK;
    }
    bool first;
    gp_err rc = gp_store_run_started(srv->store, rep->exit.job_id, info->bind_time, rep->exit.replica, rep->pid,
                                     &first, err);
    if (rc != GP_OK || !first) {
        *note = rc == GP_OK ? "already recorded" : NULL;
        return rc;
    }
    char text[GP_NAME_MAX + GP_IMAGE_REF_MAX + 160];
    size_t n = (size_t)snprintf(text, sizeof text, "replica %d on %s: started", rep->exit.replica, rep->exit.node);
    if (rep->pid > 0)
        n += (size_t)snprintf(text + n, sizeof text - n, ", pid %lld", (long long)rep->pid);
    if (rep->from_bind_ms >= 0)
        n += (size_t)snprintf(text + n, sizeof text - n, ", %.1f s from bind", (double)rep->from_bind_ms / 1000.0);
    if (rep->from_bind_ms >= 0 && rep->pull_ms >= 0 && rep->image[0])
        snprintf(text + n, sizeof text - n, ", of which %.1f s pulling %s", (double)rep->pull_ms / 1000.0,
                 rep->image);
    return gp_store_history_add(srv->store, rep->exit.job_id, now, "start", NULL, NULL, text, err);
}

/* False once a job that was in its stop grace has ended or been requeued
 * (its last replica's exit): the GPUs it held are free. */
static bool job_still_preempting(const gp_engine *e, uint64_t id)
{
    gp_job_info info;
    return gp_engine_job_info(e, id, &info, NULL) == GP_OK && info.state == GP_JOB_PREEMPTING;
}

/* Applies one report: GP_OK with *note saying why nothing was done, or
 * the journal's answer. */
/* The output a replica's log cap dropped (docs/agent.md, "Logs"), in the
 * job's history beside its exit: "replica 0 on n1: its log kept the newest
 * output; 33554432 bytes dropped".  Written with the exit that counted, so
 * a resent report adds nothing. */
static gp_err log_dropped_history(gp_server *srv, const report *rep, int64_t now, gp_error *err)
{
    if (rep->log_dropped <= 0)
        return GP_OK;
    char text[GP_NAME_MAX + 128];
    snprintf(text, sizeof text, "replica %d on %s: its log kept the newest output; %lld bytes dropped",
             rep->exit.replica, rep->exit.node, (long long)rep->log_dropped);
    return gp_store_history_add(srv->store, rep->exit.job_id, now, "log", NULL, NULL,
                                text, err);
}

/* Why a run never started, as its agent said ("image pull failed
 * (not_found): ..."), beside its exit: "replica 0 on n1: not started:
 * ...".  Written with the exit that counted. */
static gp_err not_started_history(gp_server *srv, const report *rep, int64_t now, gp_error *err)
{
    if (!rep->message[0])
        return GP_OK;
    char text[GP_NAME_MAX + sizeof rep->message + 48];
    snprintf(text, sizeof text, "replica %d on %s: not started: %s", rep->exit.replica, rep->exit.node,
             rep->message);
    return gp_store_history_add(srv->store, rep->exit.job_id, now, "exit", NULL, NULL, text, err);
}

static gp_err report_apply(gp_server *srv, const gp_op *op, const reports_arg *a, const report *rep, int64_t now,
                           const char **note, gp_error *err)
{
    gp_job_info info;
    if (rep->what == REPORT_GPU_HEALTH)
        return apply_gpu_health(srv, op, a, rep, now, note, err);
    if (rep->what == REPORT_GPU_CHECK)
        return apply_gpu_check(srv, a, rep, now, err);
    if ((*note = job_report_refused(srv->journal.engine, rep, a->node, &info)))
        return GP_OK;
    if (rep->what == REPORT_STARTED)
        return apply_started(srv, rep, &info, now, note, err);
    if (rep->what == REPORT_CHECKPOINTED && info.last_checkpoint >= rep->time) {
        *note = "already recorded";
        return GP_OK;
    }
    if (rep->what == REPORT_CHECKPOINTED)
        return gp_journal_checkpointed(&srv->journal, rep->exit.job_id, now, err);
    gp_err rc = gp_journal_replica_exit(&srv->journal, &rep->exit, now, err);
    if (rc == GP_OK && !srv->journal.last_logged)
        *note = "counted already";
    else if (rc == GP_OK)
        rc = log_dropped_history(srv, rep, now, err);
    if (rc == GP_OK && srv->journal.last_logged)
        rc = not_started_history(srv, rep, now, err);
    /* The last replica of a job in its grace is gone: its GPUs are free and
     * its reclaimer waits for them.  The pass runs in this batch (a batch
     * is committed whole: the exit is on disk before the bind is known)
     * rather than up to --pass-min-ms later; such exits are as rare as
     * preemptions, so the passes they add are few. */
    if (rc == GP_OK && info.state == GP_JOB_PREEMPTING && !job_still_preempting(srv->journal.engine, rep->exit.job_id))
        srv->loop.pass_now = true;
    return rc;
}

/* One report's result (applied, or why not) into results. */
static void report_result(gp_server *srv, const gp_op *op, const reports_arg *a, const report *rep, int64_t now,
                          json_t *results)
{
    const char *note = NULL;
    gp_error err = {0};
    gp_err rc = report_apply(srv, op, a, rep, now, &note, &err);
    json_t *o = json_pack("{s:b}", "applied", rc == GP_OK && !note);
    if (rc != GP_OK)
        json_object_set_new(o, "error", json_string(err.message));
    else if (note)
        json_object_set_new(o, "note", json_string(note));
    gp_job_info info;
    if (rep->what != REPORT_GPU_HEALTH && rep->what != REPORT_GPU_CHECK && gp_engine_job_info(srv->journal.engine, rep->exit.job_id, &info, NULL) == GP_OK)
        json_object_set_new(o, "job_state", json_string(gp_job_state_name(info.state)));
    json_array_append_new(results, o);
}

static void reports_run(gp_server *srv, gp_op *op, int64_t now)
{
    reports_arg *a = op->arg;
    json_t *results = json_array();
    for (size_t i = 0; i < a->n && !srv->journal.broken; i++)
        report_result(srv, op, a, &a->items[i], now, results);
    gp_op_reply(op, 200, json_pack("{s:o}", "results", results));
}

void gp_api_agent_reports(gp_request *r, const char *node)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_node_caller(r, node))
        return;
    json_t *list;
    json_t *body = gp_api_body_list(r, "reports", MAX_REPORTS, &list);
    if (!body)
        return;
    gp_error err;
    gp_err rc = GP_OK;
    reports_arg a = {.node = node, .n = json_array_size(list)};
    a.items = calloc(a.n + 1, sizeof *a.items);
    if (rc == GP_OK && !a.items)
        rc = gp_error_set(&err, GP_ERR_NOMEM, "reports", "out of memory");
    for (size_t i = 0; rc == GP_OK && i < a.n; i++)
        rc = report_parse(json_array_get(list, i), i, node, &a.items[i], &err);
    json_decref(body);
    if (rc != GP_OK) {
        free(a.items);
        gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = reports_run, .mutates = true, .arg = &a, .action = "agent.report"};
    snprintf(op.target, sizeof op.target, "node/%s", node);
    gp_api_run_op(r, &op);
    free(a.items);
}
