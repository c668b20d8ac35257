/* api_leader.c - which replica leads, and what a follower answers to a
 * writer (server/lease.h).
 *
 *   GET /v1/leader (any replica, no token)
 *       {"leader": URL|null, "epoch": N, "self": URL,
 *        "role": "leader"|"follower"}
 *
 * A follower sends every request that changes something -- any method but
 * GET and HEAD, and every agent endpoint (an agent's long-poll waits on
 * the leader's assignments) -- to the leader, before authentication (the
 * leader authenticates it):
 *
 *   307, Location: <leader's advertised URL><path and query as sent>
 *       {"error": {"code": "not_leader", "field": "leader", "message": ...,
 *                  "leader": URL}}
 *   503, Retry-After: 1 while no leader is known (the lease expired and
 *       nobody has taken it yet, or this replica is taking it now)
 *       {"error": {"code": "no_leader", "field": "leader", "message": ...}}
 *
 * Example: a follower at :8751 while :8750 leads answers
 * "POST /v1/jobs?x=1" with 307 and Location: http://127.0.0.1:8750/v1/jobs?x=1;
 * the client repeats the POST, body and Authorization included, there.
 */
#include "server/api.h"
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool leads(const gp_request *r)
{
    return atomic_load(&r->srv->lease.leading);
}

void gp_api_leader(gp_request *r)
{
    char url[1024];
    int64_t epoch;
    gp_lease_leader(&r->srv->lease, url, sizeof url, &epoch);
    gp_api_reply(r, 200,
                 json_pack("{s:o, s:I, s:s, s:s}", "leader", url[0] ? json_string(url) : json_null(), "epoch",
                           (json_int_t)epoch, "self", r->srv->lease.self_url, "role",
                           leads(r) ? "leader" : "follower"));
}

static bool writes(const gp_request *r)
{
    return (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) ||
           strncmp(r->url, "/v1/agents", strlen("/v1/agents")) == 0;
}

bool gp_api_follower_redirect(gp_request *r)
{
    if (leads(r) || !writes(r))
        return false;
    char url[1024];
    int64_t epoch;
    gp_lease_leader(&r->srv->lease, url, sizeof url, &epoch);
    if (!url[0]) {
        gp_api_error(r, 503, "no_leader", "leader", "no replica leads right now; try again in a second");
        r->retry_after = true;
        return true;
    }
    const char *target = r->raw_url ? r->raw_url : r->url;
    size_t len = strlen(url) + strlen(target) + 1;
    r->location = malloc(len);
    if (!r->location) {
        gp_api_error(r, 503, "unavailable", "", "out of memory");
        return true;
    }
    snprintf(r->location, len, "%s%s", url, target);
    gp_api_error(r, 307, "not_leader", "leader", "this replica follows; the leader is %s", url);
    json_object_set_new(json_object_get(r->reply, "error"), "leader", json_string(url));
    return true;
}
