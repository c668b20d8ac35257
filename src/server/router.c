/* router.c - which handler answers a request: method and path to the
 * api_*.c handlers.
 *
 * It owns the table of endpoints (docs/api.md lists them): a path it does
 * not know is 404 naming the path, a known path asked with another method
 * is 405 naming the methods it takes.  http.c calls gp_api_route_public
 * before authentication (/v1/health, /v1/leader, the dashboard's files -- / and
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

static bool method_is(const gp_request *r, const char *m)
{
    return strcmp(r->method, m) == 0;
}

static void method_not_allowed(gp_request *r, const char *allowed)
{
    gp_api_error(r, 405, "method_not_allowed", "method", "%s is not allowed here; use %s", r->method, allowed);
}

/* "{id}/logs" */
static void route_job_logs(gp_request *r, const char *rest)
{
    char id[32];
    const char *slash = strchr(rest, '/');
    size_t n = (size_t)(slash - rest);
    if (strcmp(slash, "/logs") != 0 || n == 0 || n >= sizeof id) {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
        return;
    }
    memcpy(id, rest, n);
    id[n] = '\0';
    if (method_is(r, "GET"))
        gp_api_job_logs(r, id);
    else
        method_not_allowed(r, "GET");
}

static void route_jobs(gp_request *r, const char *rest)
{
    if (!rest[0]) {
        if (method_is(r, "POST"))
            gp_api_jobs_submit(r);
        else if (method_is(r, "GET"))
            gp_api_jobs_list(r);
        else
            method_not_allowed(r, "GET, POST");
    } else if (strcmp(rest, ":batch") == 0) {
        if (method_is(r, "POST"))
            gp_api_jobs_batch(r);
        else
            method_not_allowed(r, "POST");
    } else if (rest[0] == '/' && strchr(rest + 1, '/')) {
        route_job_logs(r, rest + 1);
    } else if (rest[0] == '/') {
        if (method_is(r, "GET"))
            gp_api_job_get(r, rest + 1);
        else if (method_is(r, "DELETE"))
            gp_api_job_cancel(r, rest + 1);
        else
            method_not_allowed(r, "GET, DELETE");
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

static void route_tenants(gp_request *r, const char *rest)
{
    if (!rest[0]) {
        if (method_is(r, "GET"))
            gp_api_tenants_list(r);
        else
            method_not_allowed(r, "GET");
    } else if (strcmp(rest, ":apply") == 0 || strcmp(rest, ":move") == 0) {
        if (!method_is(r, "POST"))
            method_not_allowed(r, "POST");
        else if (rest[1] == 'a')
            gp_api_tenants_apply(r);
        else
            gp_api_tenants_move(r);
    } else if (rest[0] == '/') {
        if (method_is(r, "GET"))
            gp_api_tenant_get(r, rest + 1);
        else if (method_is(r, "PUT"))
            gp_api_tenant_put(r, rest + 1);
        else if (method_is(r, "PATCH"))
            gp_api_tenant_patch(r, rest + 1);
        else if (method_is(r, "DELETE"))
            gp_api_tenant_delete(r, rest + 1);
        else
            method_not_allowed(r, "GET, PUT, PATCH, DELETE");
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

/* "/NAME/ACTION" (action: "/drain"): true with NAME in name; false for
 * another path or a name too long for a node (no such endpoint). */
static bool node_action(const char *rest, const char *action, char *name, size_t cap)
{
    size_t n = strlen(rest), len = strlen(action);
    if (rest[0] != '/' || n <= len + 1 || n - len - 1 >= cap || strcmp(rest + n - len, action) != 0)
        return false;
    snprintf(name, cap, "%.*s", (int)(n - len - 1), rest + 1);
    return true;
}

static void route_nodes(gp_request *r, const char *rest)
{
    char name[GP_NAME_MAX + 1];
    if (!rest[0]) {
        if (method_is(r, "GET"))
            gp_api_nodes_list(r);
        else
            method_not_allowed(r, "GET");
    } else if (rest[0] == '/' && !strchr(rest + 1, '/')) {
        if (method_is(r, "GET"))
            gp_api_node_get(r, rest + 1);
        else
            method_not_allowed(r, "GET");
    } else if (node_action(rest, "/drain", name, sizeof name)) {
        if (method_is(r, "POST"))
            gp_api_node_drain(r, name);
        else
            method_not_allowed(r, "POST");
    } else if (node_action(rest, "/approve", name, sizeof name)) {
        if (method_is(r, "POST"))
            gp_api_node_approve(r, name);
        else
            method_not_allowed(r, "POST");
    } else if (node_action(rest, "/checks", name, sizeof name)) {
        if (method_is(r, "GET"))
            gp_api_node_checks(r, name);
        else
            method_not_allowed(r, "GET");
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

static void route_simple(gp_request *r, const char *method, void (*handler)(gp_request *))
{
    if (method_is(r, method))
        handler(r);
    else
        method_not_allowed(r, method);
}

static void route_simple_arg(gp_request *r, const char *method, void (*handler)(gp_request *, const char *),
                             const char *arg)
{
    if (method_is(r, method))
        handler(r, arg);
    else
        method_not_allowed(r, method);
}

static bool starts(const char *url, const char *prefix, const char **rest)
{
    size_t n = strlen(prefix);
    if (strncmp(url, prefix, n) != 0)
        return false;
    *rest = url + n;
    return true;
}

static void route_tokens(gp_request *r, const char *rest)
{
    if (!rest[0]) {
        if (method_is(r, "GET"))
            gp_api_tokens_list(r);
        else if (method_is(r, "POST"))
            gp_api_tokens_create(r);
        else
            method_not_allowed(r, "GET, POST");
    } else if (rest[0] == '/') {
        if (method_is(r, "DELETE"))
            gp_api_token_revoke(r, rest + 1);
        else
            method_not_allowed(r, "DELETE");
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

/* "/v1/users", "/v1/users/{name}" */
static void route_users(gp_request *r, const char *rest)
{
    if (!rest[0])
        route_simple(r, "GET", gp_api_users_list);
    else if (rest[0] == '/' && rest[1] && method_is(r, "PUT"))
        gp_api_user_bind(r, rest + 1);
    else if (rest[0] == '/' && rest[1] && method_is(r, "DELETE"))
        gp_api_user_unbind(r, rest + 1);
    else if (rest[0] == '/' && rest[1])
        method_not_allowed(r, "PUT, DELETE");
    else
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
}

/* "/{node}/{what}" -> the node agent's endpoints. */
static void route_agent_node(gp_request *r, const char *rest)
{
    const char *slash = strrchr(rest, '/');
    char node[GP_NAME_MAX];
    size_t n = slash ? (size_t)(slash - rest) : 0;
    if (!slash || n < 2 || n - 1 >= sizeof node || memchr(rest + 1, '/', n - 1)) {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
        return;
    }
    memcpy(node, rest + 1, n - 1);
    node[n - 1] = '\0';
    const char *what = slash + 1;
    if (strcmp(what, "assignments") == 0) {
        if (method_is(r, "GET"))
            gp_api_agent_assignments(r, node);
        else
            method_not_allowed(r, "GET");
    } else if (strcmp(what, "heartbeat") == 0 || strcmp(what, "reports") == 0 || strcmp(what, "logs") == 0) {
        if (!method_is(r, "POST"))
            method_not_allowed(r, "POST");
        else if (what[0] == 'h')
            gp_api_agent_heartbeat(r, node);
        else if (what[0] == 'r')
            gp_api_agent_reports(r, node);
        else
            gp_api_agent_logs(r, node);
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

static void route_agents(gp_request *r, const char *rest)
{
    if (strcmp(rest, ":register") == 0)
        route_simple(r, "POST", gp_api_agent_register);
    else if (rest[0] == '/')
        route_agent_node(r, rest);
    else
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
}

/* "/v1/secrets" (list), "/v1/secrets/{name}" (set, delete); ?tenant= */
static void route_secrets(gp_request *r, const char *rest)
{
    if (!rest[0])
        route_simple(r, "GET", gp_api_secrets_list);
    else if (rest[0] == '/' && rest[1] && !strchr(rest + 1, '/') && (method_is(r, "PUT") || method_is(r, "DELETE")))
        gp_api_secret(r, rest + 1);
    else if (rest[0] == '/' && rest[1] && !strchr(rest + 1, '/'))
        method_not_allowed(r, "PUT, DELETE (a secret's value is never read back)");
    else
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
}

/* "/v1/prices", "/v1/prices/modes/{org}" */
static void route_prices(gp_request *r, const char *rest)
{
    const char *org;
    if (!rest[0]) {
        if (method_is(r, "GET"))
            gp_api_prices_get(r);
        else if (method_is(r, "PUT"))
            gp_api_prices_put(r);
        else
            method_not_allowed(r, "GET, PUT");
    } else if (starts(rest, "/modes/", &org) && org[0]) {
        route_simple_arg(r, "PUT", gp_api_prices_mode_put, org);
    } else {
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
    }
}

static void health(gp_request *r)
{
    gp_api_reply(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* ---- route patterns, for the request metrics (metrics.h) ---- */

static const char *const EXACT_ROUTES[] = {
    "/", "/metrics", "/v1/health", "/v1/leader", "/v1/jobs", "/v1/jobs:batch", "/v1/tenants", "/v1/tenants:apply",
    "/v1/tenants:move", "/v1/nodes", "/v1/usage", "/v1/audit", "/v1/audit/verify", "/v1/log", "/v1/tokens",
    "/v1/agents:register", "/v1/ledger", "/v1/ledger/verify", "/v1/preemptions",
    "/v1/usage/underdriven", "/v1/whoami", "/v1/prices", "/v1/bill", "/v1/users", "/v1/secrets",
};

/* A path below a collection: its pattern by the collection and the last
 * segment ("/v1/nodes/n1/drain" -> "/v1/nodes/{name}/drain"). */
typedef struct nested_route {
    const char *prefix;  /* "/v1/nodes/" */
    const char *action;  /* last segment after the name; NULL = the name alone */
    const char *pattern;
} nested_route;

static const nested_route NESTED_ROUTES[] = {
    {"/v1/jobs/", "logs", "/v1/jobs/{id}/logs"},
    {"/v1/jobs/", NULL, "/v1/jobs/{id}"},
    {"/v1/tenants/", NULL, "/v1/tenants/{path}"},
    {"/v1/nodes/", "drain", "/v1/nodes/{name}/drain"},
    {"/v1/nodes/", "checks", "/v1/nodes/{name}/checks"},
    {"/v1/nodes/", "approve", "/v1/nodes/{name}/approve"},
    {"/v1/nodes/", NULL, "/v1/nodes/{name}"},
    {"/v1/tokens/", NULL, "/v1/tokens/{id}"},
    {"/v1/users/", NULL, "/v1/users/{name}"},
    {"/v1/secrets/", NULL, "/v1/secrets/{name}"},
    {"/v1/prices/modes/", NULL, "/v1/prices/modes/{org}"},
    {"/v1/agents/", "assignments", "/v1/agents/{node}/assignments"},
    {"/v1/agents/", "heartbeat", "/v1/agents/{node}/heartbeat"},
    {"/v1/agents/", "reports", "/v1/agents/{node}/reports"},
    {"/v1/agents/", "logs", "/v1/agents/{node}/logs"},
    {"/web/", NULL, "/web/{file}"},
};

static bool nested_matches(const nested_route *n, const char *url)
{
    size_t len = strlen(n->prefix);
    if (strncmp(url, n->prefix, len) != 0 || !url[len])
        return false;
    const char *slash = strrchr(url + len, '/');
    if (!n->action) /* tenants and web files nest: their path may hold '/' */
        return !slash || strcmp(n->prefix, "/v1/tenants/") == 0 || strcmp(n->prefix, "/web/") == 0;
    return slash && slash > url + len && strcmp(slash + 1, n->action) == 0;
}

const char *gp_api_route_pattern(const char *url)
{
    for (size_t i = 0; i < sizeof EXACT_ROUTES / sizeof *EXACT_ROUTES; i++)
        if (strcmp(url, EXACT_ROUTES[i]) == 0)
            return EXACT_ROUTES[i];
    for (size_t i = 0; i < sizeof NESTED_ROUTES / sizeof *NESTED_ROUTES; i++)
        if (nested_matches(&NESTED_ROUTES[i], url))
            return NESTED_ROUTES[i].pattern;
    return "unknown";
}

bool gp_api_route_public(gp_request *r)
{
    if (strcmp(r->url, "/v1/health") == 0)
        route_simple(r, "GET", health);
    else if (strcmp(r->url, "/v1/leader") == 0)
        route_simple(r, "GET", gp_api_leader);
    else if (strcmp(r->url, "/") == 0)
        gp_api_web_file(r, "index.html");
    else if (strncmp(r->url, "/web/", 5) == 0)
        gp_api_web_file(r, r->url + 5);
    else if (strcmp(r->url, "/metrics") == 0 && r->srv->cfg.metrics_open)
        route_simple(r, "GET", gp_api_metrics); /* --metrics-open: no token */
    else
        return false;
    return true;
}

void gp_api_route(gp_request *r)
{
    const char *rest;
    if (starts(r->url, "/v1/agents", &rest)) {
        route_agents(r, rest);
        return;
    }
    if (r->who.role == GP_ROLE_JOIN || r->who.role == GP_ROLE_NODE) {
        gp_api_error(r, 403, "forbidden", "Authorization",
                     "a %s token may call only the agent endpoints (%s)", gp_role_name(r->who.role),
                     r->who.role == GP_ROLE_JOIN ? "POST /v1/agents:register" : "/v1/agents/NODE/...");
        return;
    }
    if (strcmp(r->url, "/v1/jobs") == 0 || strcmp(r->url, "/v1/jobs:batch") == 0 || starts(r->url, "/v1/jobs/", &rest))
        route_jobs(r, r->url + strlen("/v1/jobs"));
    else if (starts(r->url, "/v1/tenants", &rest))
        route_tenants(r, rest);
    else if (starts(r->url, "/v1/nodes", &rest))
        route_nodes(r, rest);
    else if (strcmp(r->url, "/v1/usage") == 0)
        route_simple(r, "GET", gp_api_usage);
    else if (strcmp(r->url, "/v1/usage/underdriven") == 0)
        route_simple(r, "GET", gp_api_usage_underdriven);
    else if (strcmp(r->url, "/v1/preemptions") == 0)
        route_simple(r, "GET", gp_api_preemptions);
    else if (strcmp(r->url, "/v1/audit") == 0)
        route_simple(r, "GET", gp_api_audit_list);
    else if (strcmp(r->url, "/v1/audit/verify") == 0)
        route_simple(r, "GET", gp_api_audit_verify);
    else if (strcmp(r->url, "/v1/log") == 0)
        route_simple(r, "GET", gp_api_log_list);
    else if (strcmp(r->url, "/v1/ledger") == 0)
        route_simple(r, "GET", gp_api_ledger_list);
    else if (strcmp(r->url, "/v1/ledger/verify") == 0)
        route_simple(r, "GET", gp_api_ledger_verify);
    else if (starts(r->url, "/v1/prices", &rest))
        route_prices(r, rest);
    else if (strcmp(r->url, "/v1/bill") == 0)
        route_simple(r, "GET", gp_api_bill);
    else if (starts(r->url, "/v1/tokens", &rest))
        route_tokens(r, rest);
    else if (starts(r->url, "/v1/secrets", &rest))
        route_secrets(r, rest);
    else if (strcmp(r->url, "/v1/whoami") == 0)
        route_simple(r, "GET", gp_api_whoami);
    else if (starts(r->url, "/v1/users", &rest))
        route_users(r, rest);
    else if (strcmp(r->url, "/metrics") == 0)
        route_simple(r, "GET", gp_api_metrics);
    else
        gp_api_error(r, 404, "not_found", "path", "no such endpoint %s", r->url);
}
