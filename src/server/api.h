/* api.h - one HTTP request as the API handlers see it, and the handlers.
 *
 * http.c turns a libmicrohttpd connection into a gp_request (method, path,
 * body, authenticated principal, request id), router.c calls the handler
 * its route names, and http.c sends whatever the handler put into
 * status/reply (api_request.c's helpers put it there).  Handlers
 * (api_jobs.c, api_tenants.c, api_fleet.c, api_admin.c, api_agents.c, api_logs.c, api_bill.c, api_users.c) run on the API
 * thread: they validate everything they can there, then hand the engine
 * thread an op (gp_api_run_op) for anything that touches the engine or
 * writes the store, or read committed rows through a reader connection.
 *
 * Error bodies are {"error": {"code", "message", "field"}}; statuses:
 * 400 invalid, 401 no/unknown token, 403 role may not, 404 unknown or out
 * of scope, 405 method, 409 exists/conflict, 413 body too large, 414 URL
 * too long, 415 not JSON, 422 quota rules, 429 rate limited, 431 headers
 * too large, 503 shutting down / out of memory.
 *
 * Ownership: the request owns body and reply; gp_api_reply steals.
 */
#ifndef GP_SERVER_API_H
#define GP_SERVER_API_H

#include "server/server.h"

#include <microhttpd.h>

typedef struct gp_request {
    gp_server *srv;
    struct MHD_Connection *conn;
    const char *method;
    const char *url;
    char request_id[48];
    bool authenticated;
    gp_principal who;
    char *body;
    size_t body_len, body_cap;
    bool body_too_large;
    int status;
    json_t *reply;
    const char *content_type; /* of the reply; NULL = application/json */
    char *text_reply;         /* non-JSON replies (metrics, the dashboard's files) */
    const char *scopes[GP_GRANTS_MAX]; /* gp_api_scopes */
    char *raw_url;            /* the request target exactly as sent (uri.h); owned */
    bool started;             /* the access handler has seen the request */
    bool web_file;            /* a dashboard file: sent with its caching and security headers */
    char *location;           /* a follower's 307: the leader's URL for this request; owned */
    bool retry_after;         /* a follower's 503 while no leader is known: Retry-After: 1 */
    bool audited;             /* an op with its own audit row answered it (a refusal is not noted again) */
} gp_request;

/* The HTTP server (http.c).  gp_http_check refuses a bad --listen or TLS
 * setting (plain HTTP off loopback) before anything else starts. */
gp_err gp_http_check(const gp_server_config *cfg, gp_error *err);
/* Binds and listens on --listen (srv->listen_fd), before the store is
 * opened or a token written, so a port in use fails with nothing created. */
gp_err gp_http_bind(gp_server *srv, gp_error *err);
gp_err gp_http_start(gp_server *srv, gp_error *err);
void gp_http_stop(gp_server *srv);

/* The router (router.c).  gp_api_route_public answers the paths that need
 * no token (/v1/health, the dashboard's files) and returns true, else false;
 * gp_api_route answers every other path (404 / 405 when unknown). */
bool gp_api_route_public(gp_request *r);
void gp_api_route(gp_request *r);
/* The route a path is answered by, as a static pattern for metrics:
 * "/v1/jobs/42" -> "/v1/jobs/{id}"; "unknown" for a path no route takes. */
const char *gp_api_route_pattern(const char *url);

/* The lead (api_leader.c): GET /v1/leader; a follower's answer to a
 * request that writes (307 to the leader, 503 while none is known):
 * true when it answered. */
void gp_api_leader(gp_request *r);
bool gp_api_follower_redirect(gp_request *r);

/* The request helpers (api_request.c). */
void gp_api_reply(gp_request *r, int status, json_t *reply);
void gp_api_error(gp_request *r, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void gp_api_fail(gp_request *r, const gp_error *err);
/* 403 "role X may not ..." */
void gp_api_forbidden(gp_request *r, const char *what);

/* Query parameter or NULL.  gp_api_query_only replies 400 naming the first
 * parameter not in allowed (NULL-terminated) and returns false. */
const char *gp_api_query(gp_request *r, const char *key);
bool gp_api_query_only(gp_request *r, const char *const *allowed);
/* An integer query parameter in [min, max]; *out untouched when absent. */
bool gp_api_query_int(gp_request *r, const char *key, int64_t min, int64_t max, int64_t *out);
/* Parses the body as a JSON object; replies 400 and returns NULL on error. */
json_t *gp_api_body_object(gp_request *r);
/* A body that is {"KEY": [...]} with at most max items: the body (the
 * caller's to decref) and *list in it; else replies 400 naming KEY and
 * returns NULL. */
json_t *gp_api_body_list(gp_request *r, const char *key, size_t max, json_t **list);
/* Tenant path from a URL or query: replies 400 (field) when malformed. */
bool gp_api_tenant_path_ok(gp_request *r, const char *path, const char *field);
/* A filter's tenant that names nothing: true when path is in the store's
 * tenants; otherwise replies 404 "no tenant ml/trian; did you mean
 * ml/train?" (the suggestion among the tenants the caller sees) and returns
 * false.  s: a reader connection the caller holds. */
bool gp_api_tenant_known(gp_request *r, gp_store *s, const char *path, const char *field);
/* May the caller submit jobs at all?  Operators and auditors may not
 * (403, answered here); everyone else may, within its scope.  The one
 * submit and the batch both ask. */
bool gp_api_may_submit(gp_request *r);
/* A job as the caller may submit it: its tenant is in the caller's scope
 * (404 tenant otherwise), it runs as the token's user (only an admin
 * names another) and names only secrets of its tenant or its ancestors
 * (gp_api_job_secrets_check); fills req->user from the token.  Used by
 * one submit and by the batch alike. */
gp_err gp_api_job_for_caller(const gp_request *r, gp_job_request *req, gp_error *err);
/* A member's jobs go to its tenant when they name none: sets "tenant" of
 * the job object (before parsing) to the caller's one scope.  Other roles
 * must name the tenant; a caller with grants in several tenants too
 * (GP_ERR_INVALID, field "tenant", "... name one").  Used by one submit
 * and the batch. */
gp_err gp_api_job_default_tenant(const gp_request *r, json_t *job, gp_error *err);

/* Runs op on the engine thread and turns its answer into the reply. */
void gp_api_run_op(gp_request *r, gp_op *op);

/* The scopes the caller may see, for store queries: NULL = all. */
const char *const *gp_api_scopes(gp_request *r, int *n);

/* A job id from a URL: replies 400 (field id) and returns false when it
 * is not a positive integer. */
bool gp_api_parse_job_id(gp_request *r, const char *text, uint64_t *id);
/* An agent endpoint of `node`: true for that node's credential, else
 * replies 403 and returns false. */
bool gp_api_node_caller(gp_request *r, const char *node);

/* A job row (store) or live view as the API shows it. */
json_t *gp_api_job_view(json_t *row);

/* ---- handlers ---- */
void gp_api_jobs_submit(gp_request *r);
void gp_api_jobs_list(gp_request *r);
void gp_api_job_get(gp_request *r, const char *id);
void gp_api_job_cancel(gp_request *r, const char *id);
void gp_api_job_patch(gp_request *r, const char *id); /* api_job_patch.c */
/* PATCH's body ({"hold", "priority", "time_limit_s"}) into u; err names a
 * bad or unknown field.  One job's PATCH and an array's share it. */
gp_err gp_api_job_update_parse(const json_t *body, gp_job_update *u, gp_error *err);
/* A job array as one handle (api_arrays.c): GET lists its members, PATCH
 * and DELETE act on those ?index= names (all when none). */
void gp_api_array(gp_request *r, const char *id);
/* api_job_rights.c: may who (already in scope of the job's tenant) cancel
 * (cancel true) or change the job run as owner (NULL: none)?  Members:
 * their own; to cancel, also any where the tenant's cancel is `tenant`. */
bool gp_api_job_may_act(gp_server *srv, const gp_principal *who, const char *tenant, const char *owner, bool cancel);
/* A tenant setting inherited down the tree (`cancel`, `booking`): the value
 * of enum `which` that key has on the tenant or its nearest ancestor that
 * sets it to other than 0 (inherit); 0 when none does.  Reads the store:
 * engine thread. */
int gp_api_tenant_inherited(gp_server *srv, const char *tenant, gp_enum which, const char *key);
/* The tenant's cancel in force (its own or inherited): "own" or "tenant". */
const char *gp_api_tenant_cancel_setting(gp_server *srv, const char *tenant);
/* The op's answer: 403 naming "id" with message (static text). */
void gp_api_op_forbidden(gp_op *op, uint64_t id, const char *message);
/* Only an admin changes a tenant's "cancel" (err names it; the caller answers 403). */
bool gp_api_cancel_policy_may_change(const gp_principal *who, const json_t *have, const json_t *want, gp_error *err);
void gp_api_jobs_batch(gp_request *r); /* api_jobs_batch.c */

void gp_api_tenants_list(gp_request *r);
void gp_api_tenant_get(gp_request *r, const char *path);
void gp_api_tenant_put(gp_request *r, const char *path);   /* full replace; If-None-Match: * creates only */
void gp_api_tenant_patch(gp_request *r, const char *path); /* JSON merge patch of an existing tenant */
void gp_api_tenant_delete(gp_request *r, const char *path);
void gp_api_tenants_apply(gp_request *r);
void gp_api_tenants_move(gp_request *r);

void gp_api_gpu_types_list(gp_request *r);                  /* gpu_types.c */
void gp_api_gpu_type(gp_request *r, const char *name);      /* PUT declares, DELETE undeclares */
void gp_api_nodes_list(gp_request *r);
void gp_api_node_get(gp_request *r, const char *name);
void gp_api_node_drain(gp_request *r, const char *name);
void gp_api_node_approve(gp_request *r, const char *name);               /* api_agents.c */
void gp_api_bookings_list(gp_request *r);                                /* api_bookings.c */
void gp_api_bookings_create(gp_request *r);
void gp_api_booking(gp_request *r, const char *name);                    /* GET, PATCH, DELETE */
void gp_api_booking_allowance_put(gp_request *r, const char *org);       /* admin */
void gp_api_pools_list(gp_request *r);                                   /* api_pools.c */
void gp_api_pool_put(gp_request *r, const char *name);                   /* admin: {"owner": PATH | null} */
void gp_api_secrets_list(gp_request *r);                                 /* api_secrets.c */
void gp_api_secret(gp_request *r, const char *name);                     /* PUT, DELETE */
/* A submit's env_from_secret: each name is a secret of the job's tenant or
 * an ancestor (400 env_from_secret.ENV otherwise). */
gp_err gp_api_job_secrets_check(const gp_request *r, const gp_job_request *req, gp_error *err);
/* entry["secrets"] = {"ENV": value} of the job spec's env_from_secret,
 * opened with gpupoold's key (s: a reader connection the caller holds); a
 * secret deleted since, or that does not open, is left out and logged. */
void gp_api_assignment_secrets(gp_server *srv, gp_store *s, json_t *entry, const json_t *spec);
/* Registry credentials (api_secrets.c): a tenant's username and password
 * for one image registry, kept as its secret "registry:HOST". */
void gp_api_registries_list(gp_request *r);                              /* GET ?tenant= */
void gp_api_registry(gp_request *r, const char *host);                   /* PUT, DELETE ?tenant= */
/* entry["image_auth"] = {"username", "password"}: the credential of
 * tenant (or its nearest ancestor that has one) for image's registry;
 * nothing for an image of no registry or without a credential. */
void gp_api_assignment_image_auth(gp_server *srv, gp_store *s, json_t *entry, const char *tenant,
                                  const char *image);
/* Whether tenant (or an ancestor) holds a credential for image's registry
 * (true too when the store cannot say); false for an image of no registry. */
bool gp_api_registry_credential_held(gp_store *s, const char *tenant, const char *image);
/* A tenant's container policy (api_containers.c).  On the engine thread:
 * may req run under its tenant's inherited policy (400 image / mounts)? */
gp_err gp_api_job_container_check(gp_server *srv, const gp_job_request *req, gp_error *err);
/* A job as the live engine would take it with id (gp_engine_job_check), on
 * a fleet that could hold it (gp_engine_job_fits, skipped for
 * "wait_for_fleet": true), under its tenant's container policy; engine
 * thread. */
gp_err gp_api_job_engine_check(gp_server *srv, const gp_job_request *req, uint64_t id, gp_error *err);
/* Adds the tenant's inherited policy to its view (all: the store's
 * tenants, path -> spec). */
void gp_api_tenant_view_containers(gp_server *srv, const json_t *all, const char *tenant, bool untrusted,
                                   json_t *view);
/* The first container policy key two canonical tenant specs differ in, NULL when none. */
const char *gp_api_container_policy_changed(const json_t *have, const json_t *want);
/* Only an admin changes a tenant's container policy: false (err naming
 * the key) when who may not make this change. */
bool gp_api_container_policy_may_change(const gp_principal *who, const json_t *have, const json_t *want,
                                        gp_error *err);
/* On the engine thread, after a change of path's policy: its subtree's
 * pending jobs the policy no longer allows are cancelled (a history line
 * says why), their ids added to cancelled. */
gp_err gp_api_container_refuse_queued(gp_server *srv, const char *path, int64_t now, json_t *cancelled,
                                      gp_error *err);
/* On the API thread: a run entry's mounts resolved against its tenant's
 * volumes, allow_userns, image_auth (fields: the job's spec fields). */
void gp_api_assignment_container(gp_server *srv, gp_store *s, json_t *entry, const json_t *fields);
/* On the API thread: a run entry's "egress" and "reach_from", its tenant
 * chain's destinations and subtrees as they are now (any job, with an
 * image or not: the node fences both), and the nodes across which
 * reach_from opens: "reach_from_nodes" (where the live jobs of the
 * subtrees it lets in are placed) and "reach_to_nodes" (where the live
 * jobs of the tenants that let it in are placed).  tenants: every
 * tenant's spec (gp_store_tenants_get), NULL: read from the store. */
void gp_api_assignment_egress(gp_store *s, const json_t *tenants, json_t *entry);
void gp_api_node_checks(gp_request *r, const char *name);
void gp_api_usage(gp_request *r);
void gp_api_usage_underdriven(gp_request *r); /* GET /v1/usage/underdriven?sm=PCT&for=S */
void gp_api_preemptions(gp_request *r); /* GET /v1/preemptions?limit=N */

void gp_api_agent_register(gp_request *r);                       /* api_agents.c */
void gp_api_agent_assignments(gp_request *r, const char *node);
void gp_api_agent_heartbeat(gp_request *r, const char *node);
void gp_api_agent_reports(gp_request *r, const char *node);
void gp_api_agent_logs(gp_request *r, const char *node);        /* api_logs.c */
void gp_api_node_remove(gp_request *r, const char *name);        /* api_agents.c: DELETE /v1/nodes/{name} */
/* api_node_certs.c: agents' client certificates (issue 33).  certs_on:
 * gpupoold issues them (HTTPS and --agent-mtls on). */
bool gp_api_node_certs_on(const gp_server *srv);
/* A node credential's call: false (answered 403) when its connection's
 * client certificate is wrong, or missing under --agent-mtls required. */
bool gp_api_node_cert_ok(gp_request *r);
/* csr is a good request for node: else false, answered (400 field "csr",
 * or 409 when certificates are off). */
bool gp_api_node_cert_request_ok(gp_request *r, const char *csr, const char *node);
/* Signs csr for node's credential credential_id into reply's "certificate",
 * "ca" and "certificate_expires". */
gp_err gp_api_node_cert_issue(gp_server *srv, const char *csr, const char *node, const char *credential_id,
                              int64_t now, json_t *reply, gp_error *err);
void gp_api_agent_certificate(gp_request *r, const char *node); /* POST /v1/agents/{node}/certificate */
void gp_api_job_logs(gp_request *r, const char *id);

void gp_api_audit_list(gp_request *r);
void gp_api_audit_verify(gp_request *r);
void gp_api_log_list(gp_request *r);
void gp_api_ledger_list(gp_request *r);
void gp_api_ledger_verify(gp_request *r);
void gp_api_tokens_create(gp_request *r);
void gp_api_tokens_list(gp_request *r);
void gp_api_token_revoke(gp_request *r, const char *id);
void gp_api_whoami(gp_request *r); /* GET /v1/whoami: the caller's own token */
/* api_rolebindings.c: OIDC sign-in (oidc.h).  The principal of a verified
 * token: the grants of the role bindings naming its user or groups;
 * GP_OIDC_NO_BINDING when none does, GP_OIDC_ISSUER_UNREACHABLE (err says
 * why) when the store could not be read. */
gp_oidc_result gp_api_oidc_principal(gp_server *srv, const gp_oidc_identity *id, gp_principal *who, gp_error *err);
void gp_api_rolebindings_list(gp_request *r);                 /* GET /v1/rolebindings */
void gp_api_rolebindings_create(gp_request *r);               /* POST {"user"|"group", "role", "scope"} */
void gp_api_rolebinding_delete(gp_request *r, const char *id); /* DELETE /v1/rolebindings/{id} */
void gp_api_auth_info(gp_request *r);                         /* GET /v1/auth, no token */
/* A sign-in's audit row (oidc.signin: the user, second factor, groups),
 * written before the request goes on; the first request of each token. */
void gp_api_oidc_sign_in(gp_request *r);
/* Adds an OIDC caller's issuer, groups, grants and second_factor to whoami's reply. */
void gp_api_whoami_oidc(const gp_request *r, json_t *reply);
void gp_api_users_list(gp_request *r);                    /* api_users.c */
void gp_api_user_bind(gp_request *r, const char *name);   /* PUT /v1/users/{name} {"tenant": PATH} */
void gp_api_user_unbind(gp_request *r, const char *name);
void gp_api_metrics(gp_request *r);

/* The dashboard's static files (api_web.c): name is the path below the web
 * root ("index.html", "app.js"), read from srv->cfg.web_root; GET only. */
void gp_api_web_file(gp_request *r, const char *name);
/* The web root when --web-root is not given: the installed share folder
 * when it holds index.html, else the source tree's web/ (a static string). */
const char *gp_web_root_default(void);
/* A --web-root must hold index.html (field "web_root" otherwise). */
gp_err gp_web_root_check(const char *dir, gp_error *err);

void gp_api_prices_get(gp_request *r);                       /* api_bill.c */
void gp_api_prices_put(gp_request *r);                       /* PUT /v1/prices[?backdate=true] */
void gp_api_prices_mode_put(gp_request *r, const char *org); /* PUT /v1/prices/modes/{org} */
void gp_api_bill(gp_request *r);                             /* GET /v1/bill?period=YYYY-MM[&tenant][&hourly][&format] */

#endif
