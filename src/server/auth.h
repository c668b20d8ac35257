/* auth.h - bearer tokens, roles, tenant scopes and per-token rate limits.
 *
 * A token is "gpt_" + 64 hex digits: 256 random bits from GnuTLS.  The
 * daemon keeps only SHA-256(token) (store table `tokens`), so a copy of the
 * store does not let anyone in.  The live tokens are cached here, keyed by
 * hash, so an API thread authenticates without touching the store.
 *
 * Roles (docs/api.md has the full matrix):
 *   admin         everything
 *   operator      reads everything but the audit log; drains nodes, cancels jobs
 *   auditor       reads everything, the audit log included; changes nothing
 *   tenant-admin  scope S: jobs and usage of S's subtree, creates and changes
 *                 tenants strictly below S, tokens inside S
 *   member        scope T: submits to and sees/cancels jobs of T's subtree
 *   join          registers nodes (POST /v1/agents:register) and nothing else;
 *                 expires (1 h unless given a TTL)
 *   node          scope N (a node name): the agent endpoints of node N only;
 *                 made by a registration, never by hand
 * Anything outside a scope is answered as if it did not exist (404).
 *
 * Grants: a caller holds a list of (role, scope) grants.  A static token
 * holds one, its own role and scope; a person signed in through OIDC
 * (oidc.h) holds the union of the role bindings of its user and each of its
 * groups (api_rolebindings.c), strongest first (admin, tenant-admin,
 * member).  role and scope repeat the first grant, so `role == admin`
 * still reads "holds admin"; anything that asks about a tenant path asks
 * gp_principal_holds, which looks at every grant.  Example: alice bound
 * tenant-admin at research/nlp and member at product/ads holds
 * tenant-admin for research/nlp/x and member for product/ads, nothing
 * elsewhere.
 *
 * Expiry: a token may carry an expiry (epoch seconds); from then on
 * gp_auth_check answers GP_AUTH_EXPIRED (the API says 401 and when).  The
 * bootstrap admin token never expires.
 *
 * Last use: gp_auth_check notes each use in the cache (exact, in memory);
 * the store gets it at most once a minute per token (GP_AUTH_TOUCH_EVERY_S):
 * gp_auth_flush_last_used writes what is due, from the engine thread, in
 * its batch's transaction.  So the stored last use is best effort: a
 * restart may lose up to a minute of it, and a request costs no write.
 *
 * Threads: every function is thread-safe (one mutex).
 * Ownership: gp_auth owns its cache; principals are copied out.
 */
#ifndef GP_SERVER_AUTH_H
#define GP_SERVER_AUTH_H

#include "core/types.h"
#include "store/store.h"

#include <pthread.h>

typedef enum gp_role {
    GP_ROLE_ADMIN = 0,
    GP_ROLE_OPERATOR,
    GP_ROLE_AUDITOR,
    GP_ROLE_TENANT_ADMIN,
    GP_ROLE_MEMBER,
    GP_ROLE_JOIN,
    GP_ROLE_NODE,
    GP_ROLE_COUNT
} gp_role;

#define GP_TOKEN_ID_LEN 16      /* hex chars of the public id */
#define GP_TOKEN_SECRET_LEN 68  /* "gpt_" + 64 hex */

#define GP_GRANTS_MAX 16
#define GP_PRINCIPAL_GROUPS_MAX 32

typedef struct gp_grant {
    gp_role role;
    char scope[GP_PATH_MAX]; /* "" for admin */
    int64_t binding;         /* the role binding it comes from; 0 = the token itself */
    char from[GP_NAME_MAX + 8]; /* that binding's subject: "group:ml-admins", "user:alice"; "" for a token */
} gp_grant;

typedef struct gp_principal {
    char token_id[GP_TOKEN_ID_LEN + 1];
    char name[GP_NAME_MAX];
    gp_role role;
    char scope[GP_PATH_MAX]; /* "" for admin, operator, auditor; the node's name for node; for join the
                                node-name patterns it registers ("h100-*,a100-?": gp_join_covers) */
    char user[GP_NAME_MAX];  /* jobs submitted with this token run as this user ("" = none) */
    int64_t expires;         /* epoch seconds, -1 = never */
    bool single_use;         /* join: spent by its first registration */
    gp_grant grants[GP_GRANTS_MAX]; /* strongest first; grants[0] is role and scope */
    int n_grants;
    bool oidc;               /* signed in through OIDC: name and user are the person, token_id the sign-in's id */
    bool second_factor;      /* oidc: the token shows a second factor (oidc.h) */
    char groups[GP_PRINCIPAL_GROUPS_MAX][GP_NAME_MAX]; /* oidc: the token's groups */
    int n_groups;
    int issuer;              /* oidc: index of its issuer */
} gp_principal;

#define GP_AUTH_TOUCH_EVERY_S 60

typedef struct gp_auth_entry gp_auth_entry;

typedef struct gp_auth {
    pthread_mutex_t lock;
    gp_auth_entry *entries;
    size_t n, cap;
    double rate_per_s;      /* per token; 0 = unlimited */
    double burst;
} gp_auth;

const char *gp_role_name(gp_role r);
/* false when the name is not a role. */
bool gp_role_parse(const char *name, gp_role *out);

void gp_auth_init(gp_auth *a, double rate_per_s);
void gp_auth_free(gp_auth *a);
/* Loads the live tokens of the store into the cache. */
gp_err gp_auth_load(gp_auth *a, gp_store *store, gp_error *err);
/* Replaces the cache with the store's live tokens (a follower, which
 * does not see the leader's token changes otherwise); rate buckets and
 * unsaved last uses start over. */
gp_err gp_auth_reload(gp_auth *a, gp_store *store, gp_error *err);
/* Adds a token record (as written to the store). */
gp_err gp_auth_add(gp_auth *a, const gp_store_token *t, gp_error *err);
void gp_auth_revoke(gp_auth *a, const char *token_id);
/* Counts live tokens. */
size_t gp_auth_count(gp_auth *a);

typedef enum gp_auth_result {
    GP_AUTH_OK = 0,
    GP_AUTH_UNKNOWN,
    GP_AUTH_RATE_LIMITED,
    GP_AUTH_EXPIRED /* *out is filled: its name and expiry make the message */
} gp_auth_result;
/* Looks the secret up, refuses it once expired, charges one request to
 * its rate bucket and notes the use (see "Last use" above). */
gp_auth_result gp_auth_check(gp_auth *a, const char *secret, int64_t now_ms, gp_principal *out);
/* The last use the cache knows of token_id (epoch seconds), else -1. */
int64_t gp_auth_last_used(gp_auth *a, const char *token_id);
/* Writes the last uses due to the store (the caller's open transaction). */
gp_err gp_auth_flush_last_used(gp_auth *a, gp_store *store, gp_error *err);

/* A fresh secret, its public id and its hash (hex). */
gp_err gp_token_generate(char secret[GP_TOKEN_SECRET_LEN + 1], char id[GP_TOKEN_ID_LEN + 1], char hash_hex[65],
                         gp_error *err);
void gp_token_hash(const char *secret, char hash_hex[65]);

/* path is scope or below it ("a/b" covers "a/b" and "a/b/c", not "a/bc"). */
bool gp_scope_covers(const char *scope, const char *path);
/* Does a join token's pattern list (comma-separated shell patterns,
 * fnmatch: "h100-*,a100-0[0-7]") cover the node name?  "" covers none. */
bool gp_join_covers(const char *patterns, const char *node);
/* The one check of a caller's authority at a tenant path: does p hold
 * role, or a stronger one (admin > tenant-admin > member), at path?  An
 * admin grant holds everywhere; a tenant-admin or member grant where its
 * scope covers path, strictly below its scope when `below` (a tenant-admin
 * changes the tenants under it, not its own).  Operator, auditor, join and
 * node: that exact role. */
bool gp_principal_holds(const gp_principal *p, gp_role role, const char *path, bool below);
/* The one scope every grant of p has, else NULL (several, or admin). */
const char *gp_principal_one_scope(const gp_principal *p);
/* Sorts grants strongest first and sets role and scope from the first. */
void gp_principal_grants_done(gp_principal *p);
/* admin, operator, auditor: see every tenant. */
bool gp_principal_sees_all(const gp_principal *p);
/* May p see (read) things of tenant path?  Never for join and node. */
bool gp_principal_sees(const gp_principal *p, const char *path);

#endif
