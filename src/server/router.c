/* router.c - which handler answers a request: method and path to the
 * api_*.c handlers, and the route pattern the request metrics count it
 * under (metrics.h).
 *
 * It owns ROUTES, the one table of endpoints (docs/api.md lists them):
 * each endpoint once, with its pattern (also its metric label), who may
 * call it before authentication, and a handler for each method it takes.
 * Dispatch and the metric labels both read it, so a new endpoint is one
 * row.  A path it does not know is 404 naming the path, a known path
 * asked with another method is 405 naming the methods it takes.  http.c calls gp_api_route_public
 * before authentication (/v1/health, /v1/leader, /v1/auth, the dashboard's files -- / and
 * /web/NAME, api_web.c -- and, with --metrics-open, /metrics need no token)
 * and gp_api_route after it.
 *
 * Join tokens and node credentials reach nothing but the agent endpoints
 * (/v1/agents...): anything else is 403 for them, whatever the path.
 *
 * Example: "DELETE /v1/jobs/42" -> gp_api_job_cancel(r, "42");
 *          "GET /v1/jobs/42/logs" -> gp_api_job_logs(r, "42");
 *          "PUT /v1/jobs" -> 405 "PUT is not allowed here; use GET, POST".
 */
#include "server/api.h"

#include <string.h>

/* A method a route takes and its handler: `plain` for a pattern without
 * an argument, `with_arg` for one with ("{id}"). */
typedef struct route_method {
    const char *method;
    void (*plain)(gp_request *r);
    void (*with_arg)(gp_request *r, const char *arg);
} route_method;

/* Who reaches a route before authentication (gp_api_route_public). */
typedef enum route_access {
    ROUTE_TOKEN,        /* after authentication */
    ROUTE_OPEN,         /* no token */
    ROUTE_METRICS,      /* no token with --metrics-open, else after authentication */
} route_access;

/* What a route's {argument} may be beyond a non-empty text without '/'. */
enum { ARG_SLASHES = 1, ARG_EMPTY = 2 };

typedef struct route {
    /* the path, at most one {argument} (ARG_ flags), shorter than arg_max
     * bytes (0: any length); the pattern is the request metrics' route
     * label too */
    const char *pattern;
    route_access access;
    unsigned arg;        /* ARG_SLASHES: tenant paths, web files; ARG_EMPTY: the handler answers "" */
    size_t arg_max;
    const char *note;    /* added to the 405's list of methods; NULL = none */
    route_method methods[4]; /* method NULL: any method (the handler answers it) */
} route;

static void health(gp_request *r)
{
    gp_api_reply(r, 200, json_pack("{s:s}", "status", "ok"));
}

static void web_index(gp_request *r)
{
    gp_api_web_file(r, "index.html");
}

/* Every endpoint, once.  A more specific pattern before one it would also
 * match ("/v1/jobs/{id}/logs" before "/v1/jobs/{id}").  Join tokens and
 * node credentials reach only the /v1/agents rows (gp_api_route). */
static const route ROUTES[] = {
    {"/v1/health", ROUTE_OPEN, 0, 0, NULL, {{"GET", health, NULL}}},
    {"/v1/leader", ROUTE_OPEN, 0, 0, NULL, {{"GET", gp_api_leader, NULL}}},
    {"/v1/auth", ROUTE_OPEN, 0, 0, NULL, {{"GET", gp_api_auth_info, NULL}}},
    {"/", ROUTE_OPEN, 0, 0, NULL, {{NULL, web_index, NULL}}},
    {"/web/{file}", ROUTE_OPEN, ARG_SLASHES | ARG_EMPTY, 0, NULL, {{NULL, NULL, gp_api_web_file}}},
    {"/metrics", ROUTE_METRICS, 0, 0, NULL, {{"GET", gp_api_metrics, NULL}}},
    {"/v1/agents:register", ROUTE_TOKEN, 0, 0, NULL, {{"POST", gp_api_agent_register, NULL}}},
    {"/v1/agents/{node}/assignments", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL,
     {{"GET", NULL, gp_api_agent_assignments}}},
    {"/v1/agents/{node}/heartbeat", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL, {{"POST", NULL, gp_api_agent_heartbeat}}},
    {"/v1/agents/{node}/reports", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL, {{"POST", NULL, gp_api_agent_reports}}},
    {"/v1/agents/{node}/logs", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL, {{"POST", NULL, gp_api_agent_logs}}},
    {"/v1/agents/{node}/certificate", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL,
     {{"POST", NULL, gp_api_agent_certificate}}},
    {"/v1/jobs", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_jobs_list, NULL}, {"POST", gp_api_jobs_submit, NULL}}},
    {"/v1/jobs:batch", ROUTE_TOKEN, 0, 0, NULL, {{"POST", gp_api_jobs_batch, NULL}}},
    {"/v1/jobs/{id}/logs", ROUTE_TOKEN, 0, 32, NULL, {{"GET", NULL, gp_api_job_logs}}},
    {"/v1/jobs/{id}", ROUTE_TOKEN, ARG_EMPTY, 0, NULL,
     {{"GET", NULL, gp_api_job_get}, {"PATCH", NULL, gp_api_job_patch}, {"DELETE", NULL, gp_api_job_cancel}}},
    {"/v1/arrays/{id}", ROUTE_TOKEN, ARG_EMPTY, 32, NULL,
     {{"GET", NULL, gp_api_array}, {"PATCH", NULL, gp_api_array}, {"DELETE", NULL, gp_api_array}}},
    {"/v1/tenants", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_tenants_list, NULL}}},
    {"/v1/tenants:apply", ROUTE_TOKEN, 0, 0, NULL, {{"POST", gp_api_tenants_apply, NULL}}},
    {"/v1/tenants:move", ROUTE_TOKEN, 0, 0, NULL, {{"POST", gp_api_tenants_move, NULL}}},
    {"/v1/tenants/{path}", ROUTE_TOKEN, ARG_SLASHES | ARG_EMPTY, 0, NULL,
     {{"GET", NULL, gp_api_tenant_get},
      {"PUT", NULL, gp_api_tenant_put},
      {"PATCH", NULL, gp_api_tenant_patch},
      {"DELETE", NULL, gp_api_tenant_delete}}},
    {"/v1/gpu-types", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_gpu_types_list, NULL}}},
    {"/v1/gpu-types/{name}", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL,
     {{"PUT", NULL, gp_api_gpu_type}, {"DELETE", NULL, gp_api_gpu_type}}},
    {"/v1/nodes", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_nodes_list, NULL}}},
    {"/v1/nodes/{name}", ROUTE_TOKEN, ARG_EMPTY, 0, NULL,
     {{"GET", NULL, gp_api_node_get}, {"DELETE", NULL, gp_api_node_remove}}},
    {"/v1/nodes/{name}/drain", ROUTE_TOKEN, ARG_SLASHES, GP_NAME_MAX + 1, NULL, {{"POST", NULL, gp_api_node_drain}}},
    {"/v1/nodes/{name}/approve", ROUTE_TOKEN, ARG_SLASHES, GP_NAME_MAX + 1, NULL, {{"POST", NULL, gp_api_node_approve}}},
    {"/v1/nodes/{name}/checks", ROUTE_TOKEN, ARG_SLASHES, GP_NAME_MAX + 1, NULL, {{"GET", NULL, gp_api_node_checks}}},
    {"/v1/bookings", ROUTE_TOKEN, 0, 0, NULL,
     {{"GET", gp_api_bookings_list, NULL}, {"POST", gp_api_bookings_create, NULL}}},
    {"/v1/bookings/{name}", ROUTE_TOKEN, 0, GP_BOOKING_NAME_MAX + 8, NULL,
     {{"GET", NULL, gp_api_booking}, {"PATCH", NULL, gp_api_booking}, {"DELETE", NULL, gp_api_booking}}},
    {"/v1/booking-allowances/{org}", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL,
     {{"PUT", NULL, gp_api_booking_allowance_put}}},
    {"/v1/pools", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_pools_list, NULL}}},
    {"/v1/pools/{name}", ROUTE_TOKEN, 0, GP_NAME_MAX, NULL, {{"PUT", NULL, gp_api_pool_put}}},
    {"/v1/usage", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_usage, NULL}}},
    {"/v1/usage/underdriven", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_usage_underdriven, NULL}}},
    {"/v1/preemptions", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_preemptions, NULL}}},
    {"/v1/audit", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_audit_list, NULL}}},
    {"/v1/audit/verify", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_audit_verify, NULL}}},
    {"/v1/log", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_log_list, NULL}}},
    {"/v1/ledger", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_ledger_list, NULL}}},
    {"/v1/ledger/verify", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_ledger_verify, NULL}}},
    {"/v1/prices", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_prices_get, NULL}, {"PUT", gp_api_prices_put, NULL}}},
    {"/v1/prices/modes/{org}", ROUTE_TOKEN, ARG_SLASHES, 0, NULL, {{"PUT", NULL, gp_api_prices_mode_put}}},
    {"/v1/bill", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_bill, NULL}}},
    {"/v1/tokens", ROUTE_TOKEN, 0, 0, NULL,
     {{"GET", gp_api_tokens_list, NULL}, {"POST", gp_api_tokens_create, NULL}}},
    {"/v1/tokens/{id}", ROUTE_TOKEN, ARG_SLASHES | ARG_EMPTY, 0, NULL, {{"DELETE", NULL, gp_api_token_revoke}}},
    {"/v1/secrets", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_secrets_list, NULL}}},
    {"/v1/secrets/{name}", ROUTE_TOKEN, 0, 0, "(a secret's value is never read back)",
     {{"PUT", NULL, gp_api_secret}, {"DELETE", NULL, gp_api_secret}}},
    {"/v1/registries", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_registries_list, NULL}}},
    {"/v1/registries/{host}", ROUTE_TOKEN, 0, 0, "(a registry's password is never read back)",
     {{"PUT", NULL, gp_api_registry}, {"DELETE", NULL, gp_api_registry}}},
    {"/v1/whoami", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_whoami, NULL}}},
    {"/v1/users", ROUTE_TOKEN, 0, 0, NULL, {{"GET", gp_api_users_list, NULL}}},
    {"/v1/rolebindings", ROUTE_TOKEN, 0, 0, NULL,
     {{"GET", gp_api_rolebindings_list, NULL}, {"POST", gp_api_rolebindings_create, NULL}}},
    {"/v1/rolebindings/{id}", ROUTE_TOKEN, 0, 24, NULL, {{"DELETE", NULL, gp_api_rolebinding_delete}}},
    {"/v1/users/{name}", ROUTE_TOKEN, ARG_SLASHES, 0, NULL,
     {{"PUT", NULL, gp_api_user_bind}, {"DELETE", NULL, gp_api_user_unbind}}},
};

enum { N_ROUTES = sizeof ROUTES / sizeof *ROUTES, ARG_CAP = 4096 };

/* url on rt's pattern: true with the argument (if any) in arg. */
static bool route_matches(const route *rt, const char *url, char *arg)
{
    const char *open = strchr(rt->pattern, '{');
    arg[0] = '\0';
    if (!open)
        return strcmp(url, rt->pattern) == 0;
    const char *suffix = strchr(open, '}') + 1;
    size_t pre = (size_t)(open - rt->pattern), post = strlen(suffix), n = strlen(url);
    if (n < pre + post || strncmp(url, rt->pattern, pre) != 0 || strcmp(url + n - post, suffix) != 0)
        return false;
    size_t len = n - pre - post;
    if ((len == 0 && !(rt->arg & ARG_EMPTY)) || len >= ARG_CAP || (rt->arg_max && len >= rt->arg_max) ||
        (!(rt->arg & ARG_SLASHES) && memchr(url + pre, '/', len)))
        return false;
    memcpy(arg, url + pre, len);
    arg[len] = '\0';
    return true;
}

static const route *route_find(const char *url, char *arg)
{
    for (size_t i = 0; i < N_ROUTES; i++)
        if (route_matches(&ROUTES[i], url, arg))
            return &ROUTES[i];
    return NULL;
}

/* The 405: "PUT is not allowed here; use GET, POST". */
static void method_not_allowed(gp_request *r, const route *rt)
{
    char allowed[128] = "";
    for (size_t i = 0; i < 4 && rt->methods[i].method; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "",
                 rt->methods[i].method);
    if (rt->note)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), " %s", rt->note);
    gp_api_error(r, 405, "method_not_allowed", "method", "%s is not allowed here; use %s", r->method, allowed);
}

static void route_call(gp_request *r, const route *rt, const char *arg)
{
    for (size_t i = 0; i < 4 && (rt->methods[i].plain || rt->methods[i].with_arg); i++) {
        const route_method *m = &rt->methods[i];
        if (m->method && strcmp(r->method, m->method) != 0)
            continue;
        if (m->plain)
            m->plain(r);
        else
            m->with_arg(r, arg);
        return;
    }
    method_not_allowed(r, rt);
}

const char *gp_api_route_pattern(const char *url)
{
    char arg[ARG_CAP];
    const route *rt = route_find(url, arg);
    return rt ? rt->pattern : "unknown";
}

bool gp_api_route_public(gp_request *r)
{
    char arg[ARG_CAP];
    const route *rt = route_find(r->url, arg);
    if (!rt || rt->access == ROUTE_TOKEN || (rt->access == ROUTE_METRICS && !r->srv->cfg.metrics_open))
        return false;
    route_call(r, rt, arg);
    return true;
}

void gp_api_route(gp_request *r)
{
    char arg[ARG_CAP];
    if (strncmp(r->url, "/v1/agents", strlen("/v1/agents")) != 0 &&
        (r->who.role == GP_ROLE_JOIN || r->who.role == GP_ROLE_NODE)) {
        gp_api_error(r, 403, "forbidden", "Authorization",
                     "a %s token may call only the agent endpoints (%s)", gp_role_name(r->who.role),
                     r->who.role == GP_ROLE_JOIN ? "POST /v1/agents:register" : "/v1/agents/NODE/...");
        return;
    }
    if (!gp_api_node_cert_ok(r)) /* a node credential's client certificate (api_node_certs.c) */
        return;
    const route *rt = route_find(r->url, arg);
    if (rt && rt->access != ROUTE_OPEN) /* those are gp_api_route_public's */
        route_call(r, rt, arg);
    else
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
}
