/* agent_netfence.c - a node's replicas in the network fence
 * (launch/netfence.h): whether the fence is on, what each replica may
 * reach (its uid, its tenant, its peers' addresses, its tenant's egress)
 * and who may reach it (its tenant's reach_from),
 * added before a replica starts, dropped at its end, and rebuilt from the
 * running replicas after the agent restarts.
 *
 * The fence is on when the agent is root, nft loads a table with every
 * expression the fence uses (gp_netfence_probe) and --no-network-fence is
 * not given.  Off, the node logs why once, and a replica of an untrusted
 * tenant is refused (field "network") unless --no-network-fence was given:
 * the operator said so out loud, as with --no-isolate-devices.
 *
 * Peers, and the nodes reach_from concerns, are names (gpupoold sends
 * each replica's node); their addresses are looked up here, once per
 * start (the reach_from nodes again whenever a poll answer names others:
 * gp_node_fence_refresh), and a name without one is logged and left out
 * (fenced shut, never open).  The sim backend's nodes are all on this
 * host: not looked up.
 */
#define _GNU_SOURCE
#include "agent/agent_node.h"

#include "agent/launch/netfence.h"

#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GP__RESOLV_CONF "/etc/resolv.conf"
#define GP__RESOLV_MAX 8192
#define GP__PEER_ADDRS_MAX 4096

/* --no-network-fence: a table an earlier agent left for this node goes
 * (its rules would outlive the replicas they were for). */
static void gp__fence_remove_earlier(gp_node *n)
{
    gp_netfence *empty = NULL;
    gp_error err;
    if (geteuid() == 0 && gp_netfence_open(n->name, NULL, n->opt->nft, &empty, &err) == GP_OK)
        gp_netfence_apply(empty, &err); /* no nft, no table: nothing to remove */
    gp_netfence_free(empty);
}

void gp_node_fence_open(gp_node *n)
{
    gp_error err = {0};
    char resolv[GP__RESOLV_MAX] = "";
    if (n->opt->no_network_fence) {
        snprintf(n->fence_off, sizeof n->fence_off, "--no-network-fence");
        gp__fence_remove_earlier(n);
    } else if (!gp_netfence_probe(n->opt->nft, &err)) {
        snprintf(n->fence_off, sizeof n->fence_off, "%s", err.message);
    } else {
        gp_state_read(GP__RESOLV_CONF, resolv, sizeof resolv);
        if (gp_netfence_open(n->name, resolv, n->opt->nft, &n->fence, &err) != GP_OK)
            snprintf(n->fence_off, sizeof n->fence_off, "%s", err.message);
    }
    if (n->fence_off[0])
        gp_agent_log(n, "network fence off (%s): replicas reach any address; %s", n->fence_off,
                     n->opt->no_network_fence ? "untrusted tenants' replicas run unfenced"
                                              : "untrusted tenants' replicas are refused");
    else
        gp_agent_log(n, "network fence on: nftables table inet %s", gp_netfence_table(n->fence));
}

/* The uid the replica runs as, from its launch.json: job_uid, else its
 * user's; 0 when neither (the agent's own user: not root, no fence). */
static uid_t gp__launch_uid(const json_t *launch)
{
    json_int_t job_uid = json_integer_value(json_object_get(launch, "job_uid"));
    if (job_uid > 0)
        return (uid_t)job_uid;
    const char *user = json_string_value(json_object_get(launch, "user"));
    struct passwd *pw = user ? getpwnam(user) : NULL;
    return pw ? pw->pw_uid : 0;
}

/* Appends one address of a peer (no port). */
static void gp__add_addr(gp_netfence_dest *out, size_t *n, const struct sockaddr *sa)
{
    gp_netfence_dest d = {.family = sa->sa_family};
    if (sa->sa_family == AF_INET) {
        memcpy(d.addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        d.prefix = 32;
    } else if (sa->sa_family == AF_INET6) {
        memcpy(d.addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        d.prefix = 128;
    } else {
        return;
    }
    if (*n < GP__PEER_ADDRS_MAX)
        out[(*n)++] = d;
}

/* The addresses of the nodes named (the assignment's peers, or the
 * nodes reach_from concerns: what says which; caller frees *out).  This
 * node is left out (its addresses are local: the local rule), and so is
 * every node named to a sim node: sim nodes all live on this host, and a
 * name lookup that waits on an unreachable resolver would stall the loop. */
static void gp__node_addrs(gp_node *n, const gp_assignment *a, char *const *names, size_t n_names, const char *what,
                           gp_netfence_dest **out, size_t *count)
{
    *count = 0;
    *out = calloc(GP__PEER_ADDRS_MAX, sizeof **out);
    for (size_t i = 0; *out && n->opt->nvml && i < n_names; i++) {
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
        if (strcmp(names[i], n->name) == 0)
            continue;
        if (!names[i][0] || getaddrinfo(names[i], NULL, &hints, &res) != 0) {
            gp_agent_log(n, "job=%llu network fence: %s %s has no address: not reachable", (unsigned long long)a->job,
                         what, names[i]);
            continue;
        }
        for (const struct addrinfo *p = res; p; p = p->ai_next)
            gp__add_addr(*out, count, p->ai_addr);
        freeaddrinfo(res);
    }
}

/* The tenant's egress destinations (caller frees *out); bad ones logged and left out. */
static void gp__egress(gp_node *n, const gp_assignment *a, gp_netfence_dest **out, size_t *count)
{
    *count = 0;
    *out = calloc(a->n_egress ? a->n_egress : 1, sizeof **out);
    for (size_t i = 0; *out && i < a->n_egress; i++) {
        gp_error err;
        if (gp_netfence_dest_parse(a->egress[i], &(*out)[*count], &err) == GP_OK)
            (*count)++;
        else
            gp_agent_log(n, "job=%llu network fence: %s", (unsigned long long)a->job, err.message);
    }
}

/* The tenant's reach_from subtrees (caller frees *out; the strings stay
 * a's); bad ones logged and left out. */
static void gp__reach_from(gp_node *n, const gp_assignment *a, const char ***out, size_t *count)
{
    *count = 0;
    *out = calloc(a->n_reach_from ? a->n_reach_from : 1, sizeof **out);
    for (size_t i = 0; *out && i < a->n_reach_from; i++) {
        gp_error err;
        if (gp_reach_entry_check(a->reach_from[i], GP_NETFENCE_TENANT_MAX, &err) == GP_OK)
            (*out)[(*count)++] = a->reach_from[i];
        else
            gp_agent_log(n, "job=%llu network fence: %s", (unsigned long long)a->job, err.message);
    }
}

/* Adds the replica to the fence (loads nothing); mark: its tenant's mark
 * before an agent restart (0 none). */
static gp_err gp__fence_add(gp_node *n, const gp_replica *r, const gp_assignment *a, const json_t *launch,
                            unsigned mark, gp_error *err)
{
    gp_netfence_dest *peers = NULL, *egress = NULL, *from_nodes = NULL, *to_nodes = NULL;
    const char **reach_from = NULL;
    gp_netfence_replica fr = {.name = r->name, .tenant = a->tenant, .uid = gp__launch_uid(launch), .mark = mark};
    gp__node_addrs(n, a, a->peers, a->n_peers, "peer", &peers, &fr.n_peers);
    gp__node_addrs(n, a, a->reach_from_nodes, a->n_reach_from_nodes, "reach_from node", &from_nodes,
                   &fr.n_from_nodes);
    gp__node_addrs(n, a, a->reach_to_nodes, a->n_reach_to_nodes, "reach_to node", &to_nodes, &fr.n_to_nodes);
    gp__egress(n, a, &egress, &fr.n_egress);
    gp__reach_from(n, a, &reach_from, &fr.n_reach_from);
    fr.peers = peers;
    fr.egress = egress;
    fr.reach_from = reach_from;
    fr.from_nodes = from_nodes;
    fr.to_nodes = to_nodes;
    gp_err rc = peers && egress && reach_from && from_nodes && to_nodes
                    ? gp_netfence_add(n->fence, &fr, err)
                    : gp_error_set(err, GP_ERR_NOMEM, "network", "out of memory");
    free(peers);
    free(from_nodes);
    free(to_nodes);
    free(egress);
    free(reach_from);
    return rc;
}

gp_err gp_node_fence_start(gp_node *n, const gp_replica *r, const gp_assignment *a, const json_t *launch,
                           gp_error *err)
{
    if (!n->fence) {
        if (a->untrusted && !n->opt->no_network_fence)
            return gp_error_set(err, GP_ERR_CONFLICT, "network",
                                "the network fence is off (%s): an untrusted tenant's replica is refused; "
                                "--no-network-fence runs it unfenced",
                                n->fence_off);
        return GP_OK;
    }
    gp_err rc = gp__fence_add(n, r, a, launch, 0, err);
    if (rc == GP_OK)
        rc = gp_netfence_apply(n->fence, err);
    if (rc != GP_OK) {
        gp_netfence_remove(n->fence, r->name);
        return rc;
    }
    char path[GP_STATE_PATH_MAX], text[16];
    snprintf(path, sizeof path, "%s/fence_mark", r->dir);
    snprintf(text, sizeof text, "%u\n", gp_netfence_mark_of(n->fence, r->name));
    if (gp_state_write(path, text, 0600, err) != GP_OK) /* its tenant's mark after a restart */
        gp_agent_log(n, "job=%llu replica=%u network fence: %s", (unsigned long long)r->job, r->replica,
                     err->message);
    return GP_OK;
}

void gp_node_fence_adopt(gp_node *n, const gp_replica *r)
{
    if (!n->fence)
        return;
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/launch.json", r->dir);
    json_t *launch = json_load_file(path, 0, NULL);
    gp_assignment a;
    gp_error err;
    gp_err rc = gp_assignment_parse(json_object_get(launch, "assignment"), &a, &err);
    char text[16] = "";
    snprintf(path, sizeof path, "%s/fence_mark", r->dir);
    unsigned mark = gp_state_read(path, text, sizeof text) ? (unsigned)strtoul(text, NULL, 10) : 0;
    if (rc == GP_OK) {
        rc = gp__fence_add(n, r, &a, launch, mark, &err);
        gp_assignment_free(&a);
    }
    if (rc != GP_OK)
        gp_agent_log(n, "job=%llu replica=%u network fence: %s", (unsigned long long)r->job, r->replica,
                     err.message);
    json_decref(launch);
}

void gp_node_fence_sync(gp_node *n)
{
    gp_error err;
    if (n->fence && gp_netfence_apply(n->fence, &err) != GP_OK)
        gp_agent_log(n, "network fence: %s", err.message);
}

/* The live replica that assignment a runs, NULL when none. */
static const gp_replica *gp__replica_running(const gp_node *n, const gp_assignment *a)
{
    for (size_t i = 0; i < n->n_replicas; i++) {
        const gp_replica *r = n->replicas[i];
        if (!r->ended && r->job == a->job && r->replica == a->replica && r->bind_time == a->bind_time)
            return r;
    }
    return NULL;
}

static bool gp__names_same(char *const *a, size_t na, char *const *b, size_t nb)
{
    for (size_t i = 0; na == nb && i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return na == nb;
}

/* The previous answer named the same reach_from nodes for a's run. */
static bool gp__nodes_unchanged(const gp_assignment *a, const gp_assignment *before, size_t n_before)
{
    for (size_t i = 0; i < n_before; i++) {
        const gp_assignment *b = &before[i];
        if (b->job == a->job && b->replica == a->replica && b->bind_time == a->bind_time)
            return gp__names_same(a->reach_from_nodes, a->n_reach_from_nodes, b->reach_from_nodes,
                                  b->n_reach_from_nodes) &&
                   gp__names_same(a->reach_to_nodes, a->n_reach_to_nodes, b->reach_to_nodes, b->n_reach_to_nodes);
    }
    return false;
}

void gp_node_fence_refresh(gp_node *n, const gp_assignment *before, size_t n_before)
{
    bool changed = false;
    for (size_t i = 0; n->fence && i < n->n_assignments; i++) {
        const gp_assignment *a = &n->assignments[i];
        const gp_replica *r = a->stop || gp__nodes_unchanged(a, before, n_before) ? NULL : gp__replica_running(n, a);
        gp_netfence_dest *from = NULL, *to = NULL;
        size_t n_from = 0, n_to = 0;
        if (!r)
            continue;
        gp__node_addrs(n, a, a->reach_from_nodes, a->n_reach_from_nodes, "reach_from node", &from, &n_from);
        gp__node_addrs(n, a, a->reach_to_nodes, a->n_reach_to_nodes, "reach_to node", &to, &n_to);
        if (from && to && gp_netfence_nodes_set(n->fence, r->name, from, n_from, to, n_to))
            changed = true;
        free(from);
        free(to);
    }
    if (changed)
        gp_node_fence_sync(n);
}

void gp_node_fence_end(gp_node *n, const gp_replica *r)
{
    if (n->fence && gp_netfence_remove(n->fence, r->name))
        gp_node_fence_sync(n);
}

void gp_node_fence_close(gp_node *n)
{
    gp_netfence_free(n->fence); /* the table stays: the replicas outlive the agent */
    n->fence = NULL;
}
