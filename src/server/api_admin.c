/* api_admin.c - tokens (and who the caller's token is), the audit log,
 * the usage ledger and the event log.
 *
 * Tokens: an admin creates any token; a tenant-admin of S creates
 * tenant-admin and member tokens scoped inside S; the secret is returned
 * once and only its hash is kept.  Everybody may list and revoke their
 * own token; admins all tokens, tenant-admins the tokens inside their
 * scope.  Rotating a token = create the new one, switch, revoke the old.
 *
 * A member token names its user (400 `user` without one: jobs submitted
 * with it run as that user, so per-user limits hold).  The user must be
 * one jobs may run as and, for a scoped token, bound to the token's scope
 * or above it; a user bound to nothing is bound to the scope (users.h).
 * A token expires
 * ttl_s seconds after its creation; without ttl_s a member token takes
 * gpupoold's --member-token-ttl (90 days unless set; 0 = never) and the
 * other roles do not expire.  Example: {"name": "alice-ci", "role":
 * "member", "scope": "ml/train", "user": "alice", "ttl_s": 2592000}
 * answers "expires": created + 30 days; from then on it gets 401 "token
 * alice-ci (id ...) expired at 2026-12-24T10:00:00Z; ...".
 *
 * GET /v1/whoami answers the caller's own token as the server reads it (no
 * secret): {"id", "name", "role", "scope", "user", "expires"} -- what the
 * dashboard shows and how it knows which panels the role may read.
 *
 * A join token (role "join", admin only) registers node agents and does
 * nothing else; without ttl_s it expires after JOIN_TOKEN_TTL_S (1 hour).
 * It names the nodes it may register: "nodes", comma-separated shell
 * patterns ("h100-*,a100-0[0-7]"; "*" written out for any name), kept as
 * its scope; with "single_use": true its first registration spends it
 * (api_agents.c).  Example: {"name": "rack7", "role": "join", "nodes":
 * "h100-7?", "single_use": true}.  Node credentials
 * (role "node") are made only by a registration (api_agents.c): asking for
 * one here is 400.
 *
 * Audit: admin and auditor read the chain and ask for a verification,
 * which recomputes every hash and names the first broken link.
 *
 * Usage ledger: admin and auditor page through it (GET /v1/ledger?after=
 * SEQ&limit=N) and verify it (GET /v1/ledger/verify), which recomputes
 * the whole chain on a reader connection: {"ok": true, "records": N,
 * "head": {"seq", "hash"}} or {"ok": false, "records": N, "first_bad":
 * SEQ, "why": "..."} (store_ledger.c says what each why means).
 *
 * Event log: admin and auditor page through it (GET /v1/log?after=SEQ&
 * limit=N), each event with its payload and the record of its decisions,
 * which is what `gpupool admin export-log` writes for gpupool-replay.
 */
#include "server/api.h"

#include "server/users.h"
#include "spec/json_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens ---- */

typedef struct token_arg {
    char name[GP_NAME_MAX];
    char role[32];
    char scope[GP_PATH_MAX];
    char user[GP_NAME_MAX];
    char id[GP_TOKEN_ID_LEN + 1];
    int64_t ttl_s; /* -1 = not given */
    char nodes[GP_PATH_MAX]; /* join: the node-name patterns, stored as its scope */
    bool single_use;         /* join */
} token_arg;

/* A join token's life when created without ttl_s: a rack is joined in an hour. */
#define JOIN_TOKEN_TTL_S 3600

/* Ten years: a longer life is no expiry, and its sum with now stays small. */
#define TOKEN_TTL_MAX_S (3650 * INT64_C(86400))

static bool role_needs_scope(gp_role r)
{
    return r == GP_ROLE_TENANT_ADMIN || r == GP_ROLE_MEMBER;
}

/* Whose users a token for scope may run as: NULL for an admin, else the
 * scope of the caller's tenant-admin grant that covers it (users.h). */
static const char *tenant_admin_scope(const gp_principal *who, const char *scope)
{
    if (who->role == GP_ROLE_ADMIN)
        return NULL;
    for (int i = 0; i < who->n_grants; i++)
        if (who->grants[i].role == GP_ROLE_TENANT_ADMIN && gp_scope_covers(who->grants[i].scope, scope))
            return who->grants[i].scope;
    return who->scope;
}

static json_t *time_or_null(int64_t t)
{
    return t >= 0 ? json_integer(t) : json_null();
}

static void token_create_run(gp_server *srv, gp_op *op, int64_t now)
{
    token_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    gp_role role;
    gp_role_parse(a->role, &role);
    if (role_needs_scope(role) && gp_engine_tenant_find(srv->journal.engine, a->scope, &index, NULL) != GP_OK) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "scope", "no tenant %s", a->scope);
        gp_op_fail(op, &err);
        return;
    }
    bool unbound = false; /* the user's first scoped token binds it (users.h) */
    if (a->user[0] && role_needs_scope(role) &&
        gp_user_tenant_check(srv->store, a->user, a->scope, tenant_admin_scope(op->who, a->scope), &unbound, &err) !=
            GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    char secret[GP_TOKEN_SECRET_LEN + 1], hash[65];
    int64_t ttl = a->ttl_s >= 0              ? a->ttl_s
                  : role == GP_ROLE_MEMBER ? srv->cfg.member_token_ttl_s
                  : role == GP_ROLE_JOIN   ? JOIN_TOKEN_TTL_S
                                           : 0;
    gp_store_token t = {.id = a->id,
                        .hash_hex = hash,
                        .name = a->name,
                        .role = a->role,
                        .scope = role == GP_ROLE_JOIN ? a->nodes : a->scope,
                        .user = a->user,
                        .created = now,
                        .revoked = -1,
                        .expires = ttl > 0 ? now + ttl : -1,
                        .last_used = -1,
                        .created_by = op->who ? op->who->token_id : "gpupoold",
                        .single_use = a->single_use};
    if (gp_token_generate(secret, a->id, hash, &err) != GP_OK ||
        (unbound && gp_store_user_bind(srv->store, a->user, a->scope, now, t.created_by, &err) != GP_OK) ||
        gp_store_token_insert(srv->store, &t, &err) != GP_OK ||
        gp_auth_add(&srv->auth, &t, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    snprintf(op->target, sizeof op->target, "token/%s", a->id);
    gp_op_reply(op, 201,
                json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:s}", "id", a->id, "name", a->name, "role", a->role,
                          "scope", t.scope, "user", a->user, "expires", time_or_null(t.expires), "token", secret,
                          "note", "the token is shown once; gpupoold keeps only its hash"));
    if (role == GP_ROLE_JOIN)
        json_object_set_new(op->reply, "single_use", json_boolean(a->single_use));
}

/* A join token's "nodes": comma-separated shell patterns of node names. */
static gp_err join_nodes_check(const char *nodes, gp_error *err)
{
    static const char CHARS[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-*?[]!";
    for (const char *p = nodes;; p++) {
        size_t n = strspn(p, CHARS);
        if (n == 0 || (p[n] != ',' && p[n] != '\0'))
            return gp_error_set(err, GP_ERR_INVALID, "nodes",
                                "nodes is a comma-separated list of node-name patterns (letters, digits, . _ - and"
                                " the shell's * ? [...]); \"*\" for any name");
        p += n;
        if (!*p)
            return GP_OK;
    }
}

/* The fields only a join token takes, and the one it needs. */
static gp_err join_fields_check(gp_role role, const token_arg *a, gp_error *err)
{
    if (role != GP_ROLE_JOIN && (a->nodes[0] || a->single_use))
        return gp_error_set(err, GP_ERR_INVALID, a->nodes[0] ? "nodes" : "single_use",
                            "only a join token takes nodes and single_use");
    if (role == GP_ROLE_JOIN && !a->nodes[0])
        return gp_error_set(err, GP_ERR_INVALID, "nodes",
                            "a join token names the nodes it may register: nodes \"h100-*\" (gpupool token create"
                            " --nodes; comma-separated shell patterns, \"*\" for any name)");
    return role == GP_ROLE_JOIN ? join_nodes_check(a->nodes, err) : GP_OK;
}

static gp_err token_body(json_t *body, token_arg *a, gp_error *err)
{
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(body, key, v) {
        if (rc)
            break;
        if (strcmp(key, "name") == 0)
            rc = gp_json_string(v, key, GP_NAME_MAX - 1, a->name, sizeof a->name, err);
        else if (strcmp(key, "role") == 0)
            rc = gp_json_string(v, key, sizeof a->role - 1, a->role, sizeof a->role, err);
        else if (strcmp(key, "scope") == 0)
            rc = gp_json_string(v, key, GP_PATH_MAX - 1, a->scope, sizeof a->scope, err);
        else if (strcmp(key, "user") == 0)
            rc = gp_json_string(v, key, GP_NAME_MAX - 1, a->user, sizeof a->user, err);
        else if (strcmp(key, "ttl_s") == 0)
            rc = gp_json_int(v, key, 1, TOKEN_TTL_MAX_S, &a->ttl_s, err);
        else if (strcmp(key, "nodes") == 0)
            rc = gp_json_string(v, key, GP_PATH_MAX - 1, a->nodes, sizeof a->nodes, err);
        else if (strcmp(key, "single_use") == 0)
            rc = gp_json_bool(v, key, &a->single_use, err);
        else
            rc = gp_json_unknown_field("", key, err);
    }
    gp_role role;
    if (rc == GP_OK && !a->name[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "name", "a token needs a name");
    else if (rc == GP_OK && !gp_role_parse(a->role, &role))
        rc = gp_error_set(err, GP_ERR_INVALID, "role",
                          "role must be admin, operator, auditor, tenant-admin, member or join");
    else if (rc == GP_OK && role == GP_ROLE_NODE)
        rc = gp_error_set(err, GP_ERR_INVALID, "role",
                          "node credentials are made by registering a node (POST /v1/agents:register with a join"
                          " token), not by hand");
    else if (rc == GP_OK && role_needs_scope(role) && !a->scope[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "scope", "role %s needs a scope (a tenant path)", a->role);
    else if (rc == GP_OK && !role_needs_scope(role) && a->scope[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "scope", "role %s is fleet-wide and takes no scope", a->role);
    else if (rc == GP_OK && role == GP_ROLE_MEMBER && !a->user[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "user",
                          "a member token needs a user (gpupool token create --user NAME): jobs submitted with it"
                          " run as that user, and per-user limits hold them");
    return rc == GP_OK ? join_fields_check(role, a, err) : rc;
}

void gp_api_tokens_create(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "create tokens");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    token_arg a;
    memset(&a, 0, sizeof a);
    a.ttl_s = -1;
    gp_error err;
    gp_err rc = token_body(body, &a, &err);
    json_decref(body);
    if (rc) {
        gp_api_fail(r, &err);
        return;
    }
    if (a.scope[0] && !gp_api_tenant_path_ok(r, a.scope, "scope"))
        return;
    gp_role role;
    gp_role_parse(a.role, &role);
    if (r->who.role == GP_ROLE_TENANT_ADMIN &&
        (!role_needs_scope(role) || !gp_principal_holds(&r->who, GP_ROLE_TENANT_ADMIN, a.scope, false))) {
        gp_api_forbidden(r, "create tokens outside its scope or with a fleet-wide role");
        return;
    }
    if (a.user[0] && gp_user_name_check(a.user, r->srv->cfg.min_job_uid, &err) != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = token_create_run, .mutates = true, .arg = &a, .action = "token.create"};
    snprintf(op.target, sizeof op.target, "token/%s", a.name);
    gp_api_run_op(r, &op);
}

/* May `who` see or revoke token t? */
static bool token_visible(const gp_principal *who, const gp_store_token *t)
{
    if (who->role == GP_ROLE_ADMIN || strcmp(who->token_id, t->id) == 0)
        return true;
    gp_role role;
    return who->role == GP_ROLE_TENANT_ADMIN && gp_role_parse(t->role, &role) && role_needs_scope(role) &&
           gp_principal_holds(who, GP_ROLE_TENANT_ADMIN, t->scope, false); /* a join or node token's scope names nodes */
}

typedef struct token_list {
    const gp_principal *who;
    gp_auth *auth;            /* for the last uses not yet stored; NULL = the store's */
    json_t *list;
    const char *find_id;
    bool found, visible, revoked;
} token_list;

static gp_err token_row(void *ctx, const gp_store_token *t, gp_error *err)
{
    (void)err;
    token_list *l = ctx;
    if (l->find_id) {
        if (strcmp(l->find_id, t->id) == 0) {
            l->found = true;
            l->visible = token_visible(l->who, t);
            l->revoked = t->revoked >= 0;
        }
        return GP_OK;
    }
    if (!token_visible(l->who, t))
        return GP_OK;
    int64_t cached = l->auth ? gp_auth_last_used(l->auth, t->id) : -1;
    json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:o, s:o, s:o}", "id", t->id, "name",
                                             t->name, "role", t->role, "scope", t->scope, "user", t->user, "created",
                                             (json_int_t)t->created, "created_by", t->created_by, "revoked",
                                             time_or_null(t->revoked), "expires", time_or_null(t->expires),
                                             "last_used", time_or_null(cached > t->last_used ? cached : t->last_used));
    if (strcmp(t->role, "join") == 0)
        json_object_set_new(row, "single_use", json_boolean(t->single_use));
    json_array_append_new(l->list, row);
    return GP_OK;
}

void gp_api_tokens_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    token_list l = {.who = &r->who, .auth = &r->srv->auth, .list = json_array()};
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s || gp_store_tokens_scan(s, token_row, &l, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        json_decref(l.list);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_api_reply(r, 200, json_pack("{s:o}", "tokens", l.list));
}

static void token_revoke_run(gp_server *srv, gp_op *op, int64_t now)
{
    token_arg *a = op->arg;
    gp_error err;
    token_list l = {.who = op->who, .find_id = a->id};
    gp_err rc = gp_store_tokens_scan(srv->store, token_row, &l, &err);
    if (rc == GP_OK && (!l.found || !l.visible))
        rc = gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no token %s", a->id);
    else if (rc == GP_OK && l.revoked)
        rc = gp_error_set(&err, GP_ERR_CONFLICT, "id", "token %s is already revoked", a->id);
    if (rc == GP_OK)
        rc = gp_store_token_revoke(srv->store, a->id, now, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_auth_revoke(&srv->auth, a->id);
    gp_op_reply(op, 200, json_pack("{s:s, s:I}", "revoked", a->id, "time", (json_int_t)now));
}

void gp_api_whoami(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    const gp_principal *w = &r->who;
    json_t *reply = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "id", w->token_id, "name", w->name, "role",
                              gp_role_name(w->role), "scope", w->scope, "user", w->user, "expires",
                              time_or_null(w->expires));
    if (w->oidc)
        gp_api_whoami_oidc(r, reply);
    gp_api_reply(r, 200, reply);
}

void gp_api_token_revoke(gp_request *r, const char *id)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    token_arg a;
    memset(&a, 0, sizeof a);
    size_t n = strlen(id);
    bool hex = n == GP_TOKEN_ID_LEN;
    for (size_t i = 0; hex && i < n; i++)
        hex = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
    if (!hex) {
        gp_api_error(r, 404, "not_found", "id", "no token %.40s", id);
        return;
    }
    memcpy(a.id, id, n + 1);
    gp_op op = {.run = token_revoke_run, .mutates = true, .arg = &a, .action = "token.revoke"};
    snprintf(op.target, sizeof op.target, "token/%s", id);
    gp_api_run_op(r, &op);
}

/* ---- audit ---- */

static bool audit_reader(gp_request *r, const char *what)
{
    if (r->who.role == GP_ROLE_ADMIN || r->who.role == GP_ROLE_AUDITOR)
        return true;
    gp_api_forbidden(r, what);
    return false;
}

typedef gp_err (*page_fn)(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err);

/* A page of the audit chain or the event log: ?after=SEQ&limit=N. */
static void reader_page(gp_request *r, const char *what, page_fn list)
{
    static const char *const allowed[] = {"after", "limit", NULL};
    int64_t after = 0, limit = 100;
    if (!gp_api_query_only(r, allowed) || !audit_reader(r, what) ||
        !gp_api_query_int(r, "after", 0, INT64_MAX, &after) || !gp_api_query_int(r, "limit", 1, 1000, &limit))
        return;
    gp_error err;
    json_t *out = NULL;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s || list(s, after, (int)limit, &out, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_api_reply(r, 200, out);
}

void gp_api_audit_list(gp_request *r)
{
    reader_page(r, "read the audit log", gp_store_audit_list);
}

/* Admin and auditor: the event log, oldest first (store.h:
 * gp_store_events_list). */
void gp_api_log_list(gp_request *r)
{
    reader_page(r, "read the event log", gp_store_events_list);
}

void gp_api_audit_verify(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !audit_reader(r, "read the audit log"))
        return;
    gp_error err;
    int64_t checked, broken;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s || gp_store_audit_verify(s, &checked, &broken, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_api_reply(r, 200, json_pack("{s:b, s:I, s:o}", "ok", broken == 0, "checked", (json_int_t)checked,
                                   "first_broken", broken ? json_integer(broken) : json_null()));
}

/* ---- usage ledger ---- */

void gp_api_ledger_list(gp_request *r)
{
    reader_page(r, "read the usage ledger", gp_store_ledger_list);
}

static json_t *ledger_check_json(const gp_store_ledger_check *c)
{
    if (c->first_bad)
        return json_pack("{s:b, s:I, s:I, s:s}", "ok", 0, "records", (json_int_t)c->records, "first_bad",
                         (json_int_t)c->first_bad, "why", c->why);
    return json_pack("{s:b, s:I, s:{s:I, s:s}}", "ok", 1, "records", (json_int_t)c->records, "head", "seq",
                     (json_int_t)c->head_seq, "hash", c->head_hash);
}

void gp_api_ledger_verify(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !audit_reader(r, "verify the usage ledger"))
        return;
    gp_error err;
    gp_store_ledger_check check;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s || gp_store_ledger_verify(s, &check, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_ledger_verified(&r->srv->ledger, &check, gp_wall_ms() / 1000);
    gp_api_reply(r, 200, ledger_check_json(&check));
}
