/* netfence.h - the network fence between tenants on one node: one
 * nftables table per node that says where each running replica may
 * connect, rebuilt whole from the node's running replicas at every start
 * and end (the full design and a worked example: netfence.c).
 *
 * A replica is known by the uid its sockets belong to (`meta skuid`):
 * every replica of a root agent runs as its job's own uid (2000000000 +
 * job id % span) or its job's user, on both cgroup layouts, in a container
 * or not, and a socket keeps the uid that made it.  A replica of tenant T
 * may open:
 *   - TCP to any address of this node (127.0.0.0/8, ::1, the node's own
 *     addresses), answered only by a replica of T: the connection is
 *     marked with T's mark, and an answer from any other socket is dropped;
 *   - DNS (UDP and TCP port 53) to the resolvers of /etc/resolv.conf,
 *     answered by no replica (one that took a local resolver's address);
 *   - TCP to its gang peers' addresses, any port (the rendezvous port and
 *     NCCL's bootstrap and ring sockets, which take ephemeral ports);
 *   - TCP to the other nodes where replicas of tenants that let its tenant
 *     in ("reach_from") run, any port (per node, not per tenant: their
 *     own fences decide who answers);
 *   - its tenant's "egress" destinations (CIDR, any protocol; CIDR:port,
 *     TCP and UDP to that port; on this node's own addresses TCP only,
 *     answered by a service that is no replica, or by its own tenant);
 * and nothing else.  A replica answers connections from this node's
 * processes that are no replica (the agent), from its own tenant's
 * replicas, from the replicas here of the tenants its tenant's
 * "reach_from" names (and their subtrees), from the other nodes where
 * replicas of those run (any process there: the fence knows nodes, not
 * tenants, across nodes), from its peers and from its egress
 * destinations: nothing else.
 *
 * Who allocates and frees: gp_netfence_open allocates the fence,
 * gp_netfence_free frees it (the table stays: replicas outlive the agent).
 * gp_netfence_add copies what it is given.  gp_netfence_ruleset returns a
 * malloc'd string the caller frees.
 */
#ifndef GP_AGENT_NETFENCE_H
#define GP_AGENT_NETFENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "spec/net_dest.h" /* gp_netfence_dest and its parser */
#include "util/error.h"

#define GP_NETFENCE_NAME_MAX 96
#define GP_NETFENCE_TENANT_MAX 256
/* Conntrack marks: 0x475 ("GP") in the top 12 bits, then 12 bits naming
 * the table (from its name: two agents or sim nodes on one host keep apart
 * the connections each marked), then 8 bits for the tenant (1..255 on one
 * node, kept by a tenant while it has replicas here; 0 marks DNS). */
#define GP_NETFENCE_MARK_BASE 0x47500000u
#define GP_NETFENCE_TABLE_MASK 0xffffff00u

/* One running replica, as the fence needs it. */
typedef struct gp_netfence_replica {
    const char *name;               /* "job7-r1-1795523111": the key */
    const char *tenant;             /* "research/nlp" */
    uid_t uid;                      /* the uid its processes run as (> 0) */
    unsigned mark;                  /* its tenant's mark before an agent restart (gp_netfence_mark_of,
                                       kept by the caller), kept when no other tenant holds it; 0 none */
    const gp_netfence_dest *peers;  /* its gang peers' addresses (port 0) */
    size_t n_peers;
    const gp_netfence_dest *egress; /* its tenant's allowed destinations */
    size_t n_egress;
    const char *const *reach_from;  /* tenant subtrees whose replicas here may connect to it (net_dest.h:
                                       checked by the caller; each under GP_NETFENCE_TENANT_MAX bytes) */
    size_t n_reach_from;
    const gp_netfence_dest *from_nodes; /* addresses of other nodes whose replicas it lets in (TCP, any port) */
    size_t n_from_nodes;
    const gp_netfence_dest *to_nodes;   /* addresses of other nodes whose replicas let it in (TCP, any port) */
    size_t n_to_nodes;
} gp_netfence_replica;

typedef struct gp_netfence gp_netfence;

/* A fence for the node named node (its table: inet gpupool_NODE, every
 * character but letters, digits and '_' written '_'), with the resolvers
 * of resolv_conf (the text of /etc/resolv.conf; NULL or "" none) and the
 * nft program (NULL: /usr/sbin/nft, else nft on PATH).  Loads nothing. */
gp_err gp_netfence_open(const char *node, const char *resolv_conf, const char *nft, gp_netfence **out,
                        gp_error *err);
void gp_netfence_free(gp_netfence *f);

/* The table's name: "gpupool_h100_1".  Owned by f. */
const char *gp_netfence_table(const gp_netfence *f);

/* Adds replica r (replacing one of the same name).  GP_ERR_CONFLICT when
 * its uid is another tenant's replica's on this node, or 255 other tenants
 * have replicas here (field "network"), GP_ERR_INVALID for no name, tenant or uid, GP_ERR_NOMEM.  Loads nothing. */
gp_err gp_netfence_add(gp_netfence *f, const gp_netfence_replica *r, gp_error *err);
/* The mark (1..255) of the replica of that name's tenant, 0 when it holds
 * none: a tenant keeps one mark while it has replicas here. */
unsigned gp_netfence_mark_of(const gp_netfence *f, const char *name);
/* Replaces the from_nodes and to_nodes of the replica of that name (the
 * rest stays as added); true when they changed, false when they did not,
 * it holds no such replica or memory ran out (the old ones then stay).
 * Loads nothing. */
bool gp_netfence_nodes_set(gp_netfence *f, const char *name, const gp_netfence_dest *from, size_t n_from,
                           const gp_netfence_dest *to, size_t n_to);
/* Forgets the replica of that name; false when it held none.  Loads nothing. */
bool gp_netfence_remove(gp_netfence *f, const char *name);
/* The replicas it holds. */
size_t gp_netfence_count(const gp_netfence *f);

/* The nft script that replaces the table with the replicas' rules (or
 * removes it when there are none), in one transaction.  Pure.  NULL when
 * out of memory. */
char *gp_netfence_ruleset(const gp_netfence *f);
/* Runs `nft -f -` with that script.  GP_ERR_CONFLICT naming nft's own
 * words when it refuses or cannot run (field "network"). */
gp_err gp_netfence_apply(const gp_netfence *f, gp_error *err);

/* Whether this host can fence: root, and nft loads and removes an empty
 * table (nft NULL: as in gp_netfence_open).  false with the reason. */
bool gp_netfence_probe(const char *nft, gp_error *err);

#endif
