/* netfence.c - the network fence's nftables table: built from the node's
 * running replicas, loaded with `nft -f -` in one transaction.
 *
 * The design.  One table per node, inet gpupool_NODE, owned by the agent
 * and rebuilt whole (create, delete, create: one atomic transaction) from
 * the replicas that run, so a start, an end and an agent's restart are the
 * same step: the rules are a pure function of what runs.  A replica is
 * matched by the uid of the socket (`meta skuid`), not by its cgroup:
 * the uid is the same on both cgroup layouts (on the test machines'
 * hybrid one net_cls is not mounted and no replica is in a cgroup2
 * group), and it is known before the replica starts, so its rules are
 * loaded before its first process exists (a cgroup match resolves its
 * group when loaded: only after the group exists).
 *
 * The output hook sees every packet a process of this node sends; two
 * chains decide:
 *   - a packet that opens a connection (ct original direction) from a
 *     replica's uid jumps to that uid's chain out_UID: DNS (marked with
 *     the bare mark base: a resolver on this host answers it, a replica
 *     that took its address never does), then any local
 *     address (fib daddr type local: 127.0.0.0/8, ::1, the node's own
 *     addresses) for TCP only, marking the connection with the tenant's
 *     mark, then peers, then egress, then drop;
 *   - a packet that answers a connection (ct reply direction) from a
 *     replica's uid jumps to answer_UID: a connection its own tenant
 *     marked is answered, one another tenant marked is dropped, an
 *     unmarked one (this node's other processes, the agent) is answered,
 *     one from its peers and egress destinations too; anything else is
 *     dropped.  An answer from a socket of no replica to a marked
 *     connection (the node's own services: sshd, the agent) is dropped,
 *     unless it comes from one of the marking tenant's egress
 *     destinations (an admin opened 127.0.0.1:3128, a proxy on the node,
 *     to that tenant: its answers pass; another tenant's replica
 *     listening there still drops them, the mark being not its own).
 * A local TCP connection is therefore answered by nothing but the
 * caller's own tenant: B's SYN to A's port leaves B, A's SYN-ACK is
 * dropped, the connect times out.  Local UDP other than DNS is dropped
 * outright (its receiver cannot be told by the sender's rules).
 *
 * reach_from ("vision" lets research in): on this node, vision's answer
 * chains also accept the marks of research's replicas here (and of its
 * subtree's), recomputed at every rebuild; across nodes, gpupoold names
 * the nodes where research's replicas run (vision's answer chains let
 * TCP answers to them out) and, to research's replicas, the nodes where
 * vision's run (their out chains let TCP to them out).  Across nodes the
 * fence knows nodes, not tenants: any process of such a node is answered.
 *
 * Worked example: node h100-1, resolver 10.255.255.53; job 7 of
 * research/nlp (uid 2000000007, peers 192.0.2.3) and job 9 of vision
 * (uid 2000000009, egress 10.0.0.0/8:443) run here.  The table's marks
 * are 0x475c3b00 and up (gp__mark_base: 0x475, then 12 bits of the table
 * name's hash); research/nlp is mark 0x475c3b01, vision 0x475c3b02 (the
 * order their first replicas came in; a tenant keeps its mark while it has
 * a replica here, so other tenants' ends never re-mark its open
 * connections, and the agent keeps each replica's mark in its state to
 * give it back after a restart: gp_netfence_replica's mark).  Job 9 connecting to job 7's port on 127.0.0.1: out_2000000009
 * marks the connection 0x475c3b02 and lets the SYN out; job 7's SYN-ACK
 * goes through answer_2000000007, where 0x475c3b02 is not its mark:
 * dropped.  Job 9 resolving a name: the
 * DNS rule.  Job 9 to 10.1.2.3:443: egress.  Job 9 to 192.0.2.3: dropped
 * (job 7's peer, not its own).
 *
 * The text is generated from numbers (uids, marks, addresses printed by
 * inet_ntop, ports) and the node's name in letters, digits and '_': no
 * name a job or a tenant chose reaches nft.
 */
#define _GNU_SOURCE
#include "agent/launch/netfence.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define GP__DNS_MAX 8
#define GP__TABLE_MAX 128
#define GP__NFT_OUTPUT_MAX 512

typedef struct gp__entry {
    char name[GP_NETFENCE_NAME_MAX];
    char tenant[GP_NETFENCE_TENANT_MAX];
    uid_t uid;
    unsigned mark;               /* its tenant's, 1..255: under the table's base */
    gp_netfence_dest *peers, *egress, *from_nodes, *to_nodes;
    size_t n_peers, n_egress, n_from_nodes, n_to_nodes;
    char (*reach_from)[GP_NETFENCE_TENANT_MAX]; /* tenant subtrees let in */
    size_t n_reach_from;
} gp__entry;

struct gp_netfence {
    char table[GP__TABLE_MAX];
    unsigned mark_base;          /* GP_NETFENCE_MARK_BASE | this table's 12 bits << 8 */
    char nft[256]; /* "" = /usr/sbin/nft, else nft on PATH */
    gp_netfence_dest dns[GP__DNS_MAX];
    size_t n_dns;
    gp__entry *entries;
    size_t n, cap;
};

/* ---- the fence ---- */

static void gp__table_name(const char *node, char *out, size_t cap)
{
    size_t used = (size_t)snprintf(out, cap, "gpupool_");
    for (const char *p = node; *p && used + 1 < cap; p++)
        out[used++] = isalnum((unsigned char)*p) ? *p : '_';
    out[used] = '\0';
}

/* The nameserver lines of resolv.conf's text. */
static void gp__resolvers(gp_netfence *f, const char *text)
{
    const char *line = text;
    while (line && *line && f->n_dns < GP__DNS_MAX) {
        char addr[64];
        if (sscanf(line, " nameserver %63s", addr) == 1) {
            addr[strcspn(addr, "%")] = '\0'; /* fe80::1%eth0: the scope is the interface's */
            gp_netfence_dest d;
            gp_error err;
            if (!strchr(addr, '/') && gp_netfence_dest_parse(addr, &d, &err) == GP_OK && d.port == 0)
                f->dns[f->n_dns++] = d;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
}

/* The table's marks: FNV-1a of its name, 12 bits of it, under the fence's
 * 0x475.  Another table's marks are not this one's, so its "marked, and
 * not by a replica of mine: drop" rules leave them alone. */
static unsigned gp__mark_base(const char *table)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)table; *c; c++)
        h = (h ^ *c) * 16777619u;
    return GP_NETFENCE_MARK_BASE | ((h & 0xfffu) << 8);
}

gp_err gp_netfence_open(const char *node, const char *resolv_conf, const char *nft, gp_netfence **out,
                        gp_error *err)
{
    gp_netfence *f = calloc(1, sizeof *f);
    if (!f)
        return gp_error_set(err, GP_ERR_NOMEM, "network", "out of memory");
    gp__table_name(node ? node : "", f->table, sizeof f->table);
    f->mark_base = gp__mark_base(f->table);
    snprintf(f->nft, sizeof f->nft, "%s", nft ? nft : "");
    gp__resolvers(f, resolv_conf);
    *out = f;
    return GP_OK;
}

static void gp__entry_clear(gp__entry *e)
{
    free(e->peers);
    free(e->egress);
    free(e->reach_from);
    free(e->from_nodes);
    free(e->to_nodes);
    memset(e, 0, sizeof *e);
}

void gp_netfence_free(gp_netfence *f)
{
    for (size_t i = 0; f && i < f->n; i++)
        gp__entry_clear(&f->entries[i]);
    if (f)
        free(f->entries);
    free(f);
}

const char *gp_netfence_table(const gp_netfence *f)
{
    return f->table;
}

size_t gp_netfence_count(const gp_netfence *f)
{
    return f->n;
}

static gp_netfence_dest *gp__dests_copy(const gp_netfence_dest *d, size_t n)
{
    gp_netfence_dest *out = malloc((n ? n : 1) * sizeof *out);
    if (out && n)
        memcpy(out, d, n * sizeof *out);
    return out;
}

static gp__entry *gp__find(gp_netfence *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0)
            return &f->entries[i];
    return NULL;
}

/* The uid runs a replica of another tenant (the one named), else NULL. */
static const char *gp__uid_taken(const gp_netfence *f, const gp_netfence_replica *r)
{
    for (size_t i = 0; i < f->n; i++) {
        const gp__entry *e = &f->entries[i];
        if (e->uid == r->uid && strcmp(e->name, r->name) != 0 && strcmp(e->tenant, r->tenant) != 0)
            return e->tenant;
    }
    return NULL;
}

/* A tenant's mark: the one its replicas here hold; else the one it asks
 * for (want, its mark before an agent restart) when no other tenant holds
 * it; else the lowest free.  0 when all 255 are taken. */
static unsigned gp__tenant_mark(const gp_netfence *f, const char *tenant, unsigned want)
{
    bool used[256] = {false};
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->entries[i].tenant, tenant) == 0)
            return f->entries[i].mark;
        used[f->entries[i].mark] = true;
    }
    if (want >= 1 && want <= 255 && !used[want])
        return want;
    for (unsigned m = 1; m <= 255; m++)
        if (!used[m])
            return m;
    return 0;
}

unsigned gp_netfence_mark_of(const gp_netfence *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0)
            return f->entries[i].mark;
    return 0;
}

gp_err gp_netfence_add(gp_netfence *f, const gp_netfence_replica *r, gp_error *err)
{
    if (!r->name || !r->name[0] || strlen(r->name) >= GP_NETFENCE_NAME_MAX || !r->tenant || !r->tenant[0] ||
        strlen(r->tenant) >= GP_NETFENCE_TENANT_MAX || r->uid == 0)
        return gp_error_set(err, GP_ERR_INVALID, "network", "a fenced replica needs a name, a tenant and a uid > 0");
    const char *other = gp__uid_taken(f, r);
    if (other)
        return gp_error_set(err, GP_ERR_CONFLICT, "network",
                            "uid %u runs a replica of tenant %s on this node: one uid cannot be fenced for two tenants",
                            (unsigned)r->uid, other);
    gp__entry *slot = gp__find(f, r->name);
    if (slot) /* replaced: its own old entry holds no mark for the choice */
        gp_netfence_remove(f, r->name);
    gp__entry e = {.uid = r->uid, .mark = gp__tenant_mark(f, r->tenant, r->mark), .n_peers = r->n_peers,
                   .n_egress = r->n_egress, .n_reach_from = r->n_reach_from, .n_from_nodes = r->n_from_nodes,
                   .n_to_nodes = r->n_to_nodes};
    if (!e.mark)
        return gp_error_set(err, GP_ERR_CONFLICT, "network", "255 tenants already have replicas on this node");
    snprintf(e.name, sizeof e.name, "%s", r->name);
    snprintf(e.tenant, sizeof e.tenant, "%s", r->tenant);
    e.peers = gp__dests_copy(r->peers, r->n_peers);
    e.egress = gp__dests_copy(r->egress, r->n_egress);
    e.from_nodes = gp__dests_copy(r->from_nodes, r->n_from_nodes);
    e.to_nodes = gp__dests_copy(r->to_nodes, r->n_to_nodes);
    e.reach_from = calloc(r->n_reach_from ? r->n_reach_from : 1, sizeof *e.reach_from);
    for (size_t i = 0; e.reach_from && i < r->n_reach_from; i++)
        snprintf(e.reach_from[i], sizeof e.reach_from[i], "%s", r->reach_from[i]);
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        gp__entry *grown = realloc(f->entries, cap * sizeof *grown);
        if (grown) {
            f->entries = grown;
            f->cap = cap;
        }
    }
    if (!e.peers || !e.egress || !e.reach_from || !e.from_nodes || !e.to_nodes || f->n == f->cap) {
        gp__entry_clear(&e);
        return gp_error_set(err, GP_ERR_NOMEM, "network", "out of memory");
    }
    f->entries[f->n++] = e;
    return GP_OK;
}

static bool gp__dests_same(const gp_netfence_dest *a, size_t na, const gp_netfence_dest *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

bool gp_netfence_nodes_set(gp_netfence *f, const char *name, const gp_netfence_dest *from, size_t n_from,
                           const gp_netfence_dest *to, size_t n_to)
{
    gp__entry *e = gp__find(f, name);
    if (!e || (gp__dests_same(e->from_nodes, e->n_from_nodes, from, n_from) &&
               gp__dests_same(e->to_nodes, e->n_to_nodes, to, n_to)))
        return false;
    gp_netfence_dest *new_from = gp__dests_copy(from, n_from), *new_to = gp__dests_copy(to, n_to);
    if (!new_from || !new_to) {
        free(new_from);
        free(new_to);
        return false;
    }
    free(e->from_nodes);
    free(e->to_nodes);
    e->from_nodes = new_from;
    e->n_from_nodes = n_from;
    e->to_nodes = new_to;
    e->n_to_nodes = n_to;
    return true;
}

bool gp_netfence_remove(gp_netfence *f, const char *name)
{
    gp__entry *e = gp__find(f, name);
    if (!e)
        return false;
    gp__entry_clear(e);
    *e = f->entries[--f->n];
    return true;
}

/* ---- the ruleset ---- */

static int gp__by_uid_then_name(const void *a, const void *b)
{
    const gp__entry *x = *(const gp__entry *const *)a, *y = *(const gp__entry *const *)b;
    if (x->uid != y->uid)
        return x->uid < y->uid ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* "ip daddr 10.0.0.0/8" or "ip6 saddr 2001:db8::1" (which: "daddr", "saddr"). */
static void gp__match_addr(FILE *m, const gp_netfence_dest *d, const char *which)
{
    char text[INET6_ADDRSTRLEN];
    inet_ntop(d->family, d->addr, text, sizeof text);
    bool v4 = d->family == AF_INET;
    fprintf(m, "%s %s %s", v4 ? "ip" : "ip6", which, text);
    if (d->prefix != (v4 ? 32u : 128u))
        fprintf(m, "/%u", d->prefix);
}

static void gp__match_daddr(FILE *m, const gp_netfence_dest *d)
{
    gp__match_addr(m, d, "daddr");
}

static void gp__rule_dns(FILE *m, const gp_netfence_dest *d, unsigned base)
{
    fputs("\t\t", m);
    gp__match_daddr(m, d);
    fprintf(m, " meta l4proto { tcp, udp } th dport 53 ct mark set 0x%08x accept\n", base);
}

static void gp__rule_peer(FILE *m, const gp_netfence_dest *d)
{
    fputs("\t\t", m);
    gp__match_daddr(m, d);
    fputs(" meta l4proto tcp accept\n", m);
}

static void gp__rule_egress(FILE *m, const gp_netfence_dest *d)
{
    fputs("\t\t", m);
    gp__match_daddr(m, d);
    if (d->port)
        fprintf(m, " meta l4proto { tcp, udp } th dport %u", d->port);
    fputs(" accept\n", m);
}

/* An answer to this address is let out (any port, any protocol). */
static void gp__rule_answer_to(FILE *m, const gp_netfence_dest *d)
{
    fputs("\t\t", m);
    gp__match_daddr(m, d);
    fputs(" accept\n", m);
}

/* The entries [first, end) (one uid, one tenant) let in the replicas of
 * every other tenant here that their reach_from covers: those tenants'
 * marks are answered too, each once. */
static void gp__answers_let_in(FILE *m, const gp_netfence *f, gp__entry *const *first, gp__entry *const *end)
{
    bool done[256] = {false};
    done[(*first)->mark] = true;
    for (size_t i = 0; i < f->n; i++) {
        const gp__entry *other = &f->entries[i];
        bool covered = false;
        for (gp__entry *const *e = first; e < end && !covered && !done[other->mark]; e++)
            for (size_t k = 0; k < (*e)->n_reach_from && !covered; k++)
                covered = gp_reach_covers((*e)->reach_from[k], other->tenant);
        if (covered)
            fprintf(m, "\t\tct mark 0x%08x accept\n", f->mark_base + other->mark);
        done[other->mark] = done[other->mark] || covered;
    }
}

/* The entries [first, end) share one uid: its two chains. */
static void gp__uid_chains(FILE *m, const gp_netfence *f, gp__entry *const *first, gp__entry *const *end,
                           unsigned mark)
{
    unsigned uid = (unsigned)(*first)->uid;
    fprintf(m, "\tchain out_%u {\n", uid);
    for (size_t i = 0; i < f->n_dns; i++)
        gp__rule_dns(m, &f->dns[i], f->mark_base);
    fprintf(m, "\t\tfib daddr type local meta l4proto tcp ct mark set 0x%08x accept\n", mark);
    fputs("\t\tfib daddr type local drop\n", m);
    for (gp__entry *const *e = first; e < end; e++)
        for (size_t i = 0; i < (*e)->n_peers; i++)
            gp__rule_peer(m, &(*e)->peers[i]);
    for (gp__entry *const *e = first; e < end; e++)
        for (size_t i = 0; i < (*e)->n_to_nodes; i++)
            gp__rule_peer(m, &(*e)->to_nodes[i]);
    for (gp__entry *const *e = first; e < end; e++)
        for (size_t i = 0; i < (*e)->n_egress; i++)
            gp__rule_egress(m, &(*e)->egress[i]);
    fputs("\t\tdrop\n\t}\n", m);
    fprintf(m, "\tchain answer_%u {\n", uid);
    fprintf(m, "\t\tct mark 0x%08x accept\n", mark);
    gp__answers_let_in(m, f, first, end);
    fprintf(m, "\t\tct mark and 0x%08x == 0x%08x drop\n", GP_NETFENCE_TABLE_MASK, f->mark_base);
    fputs("\t\tfib daddr type local accept\n", m);
    for (gp__entry *const *e = first; e < end; e++) {
        for (size_t i = 0; i < (*e)->n_peers; i++)
            gp__rule_answer_to(m, &(*e)->peers[i]);
        for (size_t i = 0; i < (*e)->n_egress; i++)
            gp__rule_answer_to(m, &(*e)->egress[i]);
        for (size_t i = 0; i < (*e)->n_from_nodes; i++)
            gp__rule_peer(m, &(*e)->from_nodes[i]); /* TCP answers to that node */
    }
    fputs("\t\tdrop\n\t}\n", m);
}

/* "meta skuid vmap { U1 : jump PREFIX_U1, ... }" over the distinct uids. */
static void gp__dispatch(FILE *m, gp__entry *const *sorted, size_t n, const char *prefix)
{
    fputs("\t\tmeta skuid vmap {", m);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || sorted[i]->uid != sorted[i - 1]->uid)
            fprintf(m, "%s %u : jump %s_%u", i ? "," : "", (unsigned)sorted[i]->uid, prefix,
                    (unsigned)sorted[i]->uid);
    fputs(" }\n", m);
}

/* A service of this node that is no replica (the agent, a local proxy) at
 * one of the entry's egress destinations may answer its tenant's
 * connections: in the answer direction the destination is the source. */
static void gp__answers_from_egress(FILE *m, const gp__entry *e, unsigned mark)
{
    for (size_t i = 0; i < e->n_egress; i++) {
        const gp_netfence_dest *d = &e->egress[i];
        fprintf(m, "\t\tct mark 0x%08x ", mark);
        gp__match_addr(m, d, "saddr");
        if (d->port)
            fprintf(m, " meta l4proto tcp th sport %u", d->port);
        fputs(" accept\n", m);
    }
}

static void gp__table(FILE *m, const gp_netfence *f, gp__entry *const *sorted)
{
    fprintf(m, "table inet %s {\n", f->table);
    fputs("\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n"
          "\t\tct direction reply jump answer\n\t\tct state established,related accept\n",
          m);
    gp__dispatch(m, sorted, f->n, "out");
    fputs("\t}\n\tchain answer {\n", m);
    gp__dispatch(m, sorted, f->n, "answer");
    fprintf(m, "\t\tct mark 0x%08x accept\n", f->mark_base); /* DNS: a resolver, no replica */
    for (size_t i = 0; i < f->n; i++)
        gp__answers_from_egress(m, sorted[i], f->mark_base + sorted[i]->mark);
    fprintf(m, "\t\tct mark and 0x%08x == 0x%08x drop\n\t}\n", GP_NETFENCE_TABLE_MASK, f->mark_base);
    for (size_t i = 0; i < f->n;) {
        size_t end = i + 1;
        while (end < f->n && sorted[end]->uid == sorted[i]->uid)
            end++;
        gp__uid_chains(m, f, sorted + i, sorted + end, f->mark_base + sorted[i]->mark);
        i = end;
    }
    fputs("}\n", m);
}

char *gp_netfence_ruleset(const gp_netfence *f)
{
    gp__entry **sorted = malloc((f->n ? f->n : 1) * sizeof *sorted);
    char *text = NULL;
    size_t len = 0;
    FILE *m = sorted ? open_memstream(&text, &len) : NULL;
    if (!m) {
        free(sorted);
        return NULL;
    }
    for (size_t i = 0; i < f->n; i++)
        sorted[i] = &f->entries[i];
    qsort(sorted, f->n, sizeof *sorted, gp__by_uid_then_name);
    /* made if missing, so that the delete never fails; then the new one */
    fprintf(m, "table inet %s\ndelete table inet %s\n", f->table, f->table);
    if (f->n)
        gp__table(m, f, sorted);
    free(sorted);
    if (fclose(m) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- running nft ---- */

/* A memfd holding text, at offset 0; -1 on failure. */
static int gp__memfd_with(const char *name, const char *text)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    size_t len = text ? strlen(text) : 0, done = 0;
    while (fd >= 0 && done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    if (fd >= 0)
        lseek(fd, 0, SEEK_SET);
    return fd;
}

/* In the child: stdin the script, stdout and stderr the output memfd. */
static void gp__exec_nft(const char *nft, int in, int out)
{
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    char *argv[] = {"nft", "-f", "-", NULL};
    if (nft[0])
        execv(nft, argv);
    else {
        execv("/usr/sbin/nft", argv);
        execvp("nft", argv);
    }
    fprintf(stderr, "cannot run nft: %s", strerror(errno));
    _exit(127);
}

/* Runs nft -f - on script; GP_OK when it exits 0, else its words. */
static gp_err gp__run_nft(const char *nft, const char *script, gp_error *err)
{
    int in = gp__memfd_with("gpupool-netfence", script);
    int out = gp__memfd_with("gpupool-netfence-out", "");
    pid_t pid = in >= 0 && out >= 0 ? fork() : -1;
    if (pid == 0)
        gp__exec_nft(nft, in, out);
    int status = -1;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char words[GP__NFT_OUTPUT_MAX] = "";
    ssize_t got = out >= 0 ? pread(out, words, sizeof words - 1, 0) : -1;
    words[got > 0 ? got : 0] = '\0';
    for (char *p = words; *p; p++)
        if (*p == '\n')
            *p = ' ';
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (pid < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "network", "cannot run nft: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "network", "nft refused the fence: %s",
                            words[0] ? words : "(no message)");
    return GP_OK;
}

gp_err gp_netfence_apply(const gp_netfence *f, gp_error *err)
{
    char *script = gp_netfence_ruleset(f);
    if (!script)
        return gp_error_set(err, GP_ERR_NOMEM, "network", "out of memory");
    gp_err rc = gp__run_nft(f->nft, script, err);
    free(script);
    return rc;
}

bool gp_netfence_probe(const char *nft, gp_error *err)
{
    /* every expression the fence uses, in a table made and removed in one transaction */
    static const char probe[] =
        "table inet gpupool_probe {\n"
        "\tchain c {\n"
        "\t\tmeta skuid vmap { 1 : jump d }\n"
        "\t\tfib daddr type local meta l4proto tcp ct mark set 0x47500000 accept\n"
        "\t\tct direction reply ct mark and 0xfff00000 == 0x47500000 drop\n"
        "\t}\n"
        "\tchain d {\n\t\tip daddr 192.0.2.0/24 meta l4proto { tcp, udp } th dport 53 accept\n\t}\n"
        "}\n"
        "delete table inet gpupool_probe\n";
    if (geteuid() != 0) {
        gp_error_set(err, GP_ERR_CONFLICT, "network", "the agent is not root");
        return false;
    }
    return gp__run_nft(nft ? nft : "", probe, err) == GP_OK;
}
