/* net_dest.h - a network destination as a tenant's "egress" policy names
 * it and the node's fence matches it: an address or prefix and a port;
 * and a source as its "reach_from" names it: a tenant subtree whose jobs
 * may connect in.  One parser for each, on both sides, so what gpupoold
 * accepts at PUT is exactly what the agent's fence loads
 * (spec/container_spec.c, agent/launch/netfence.c).
 *
 * Ownership: the caller's (a plain struct); the text is borrowed for the call.
 */
#ifndef GP_SPEC_NET_DEST_H
#define GP_SPEC_NET_DEST_H

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

/* An address or prefix, and a port (0: any). */
typedef struct gp_netfence_dest {
    int family;              /* AF_INET or AF_INET6 */
    unsigned char addr[16];  /* network order; the first 4 bytes for AF_INET */
    unsigned prefix;         /* 32 or 128 for one address */
    unsigned port;           /* 1..65535, 0 any */
} gp_netfence_dest;

/* "10.0.0.0/8", "192.0.2.7", "192.0.2.7:443", "10.0.0.0/8:53",
 * "2001:db8::/32", "[2001:db8::1]:443", "[2001:db8::/32]:443".
 * GP_ERR_INVALID (field "egress") for anything else: a prefix longer than
 * the family's, host bits set, a port outside 1..65535. */
gp_err gp_netfence_dest_parse(const char *text, gp_netfence_dest *out, gp_error *err);

/* A "reach_from" entry: a tenant path, "research" or "research/nlp"
 * (1..4 names of [A-Za-z0-9._-], not starting with '.', joined by '/'),
 * standing for that tenant and its whole subtree.  GP_ERR_INVALID (field
 * "reach_from") for anything else or one of cap bytes or more. */
gp_err gp_reach_entry_check(const char *text, size_t cap, gp_error *err);
/* Whether tenant is entry or under it ("research/nlp" is under
 * "research"; "research-x" is not). */
bool gp_reach_covers(const char *entry, const char *tenant);

#endif
