/* auth.c - token cache, hashing, scopes and rate buckets (see auth.h).
 *
 * Rate limiting is a token bucket per API token: `rate_per_s` requests a
 * second refill it, up to `burst`; a request with an empty bucket gets 429.
 * The cache is a plain array: a fleet has hundreds of tokens, not
 * millions, and a linear scan of hashes under one mutex costs less than a
 * request's JSON parsing.
 */
#include "server/auth.h"

#include "util/grow.h"

#include <fnmatch.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the cache keeps of a token; gp_auth_check makes the principal of
 * it (a principal, with room for an OIDC person's grants and groups, is
 * several KiB: thousands of node credentials need not each hold one). */
typedef struct token_who {
    char token_id[GP_TOKEN_ID_LEN + 1];
    char name[GP_NAME_MAX];
    gp_role role;
    char scope[GP_PATH_MAX];
    char user[GP_NAME_MAX];
    int64_t expires;
    bool single_use;
} token_who;

struct gp_auth_entry {
    char hash_hex[65];
    token_who who;
    double bucket;
    int64_t refilled_ms;
    int64_t last_used;   /* seconds, -1 = never: the newest use */
    int64_t last_stored; /* seconds, -1 = never: what the store has */
};

static const char *const ROLE_NAMES[GP_ROLE_COUNT] = {"admin",  "operator", "auditor", "tenant-admin",
                                                           "member", "join",     "node"};

const char *gp_role_name(gp_role r)
{
    return (unsigned)r < GP_ROLE_COUNT ? ROLE_NAMES[r] : "unknown";
}

bool gp_role_parse(const char *name, gp_role *out)
{
    for (int i = 0; i < GP_ROLE_COUNT; i++)
        if (name && strcmp(name, ROLE_NAMES[i]) == 0) {
            *out = (gp_role)i;
            return true;
        }
    return false;
}

void gp_auth_init(gp_auth *a, double rate_per_s)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->rate_per_s = rate_per_s;
    a->burst = rate_per_s * 2 > 10 ? rate_per_s * 2 : 10;
}

void gp_auth_free(gp_auth *a)
{
    free(a->entries);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof *a);
}

static gp_err load_one(void *ctx, const gp_store_token *t, gp_error *err)
{
    if (t->revoked >= 0)
        return GP_OK;
    return gp_auth_add(ctx, t, err);
}

gp_err gp_auth_load(gp_auth *a, gp_store *store, gp_error *err)
{
    return gp_store_tokens_scan(store, load_one, a, err);
}

gp_err gp_auth_reload(gp_auth *a, gp_store *store, gp_error *err)
{
    gp_auth fresh;
    gp_auth_init(&fresh, a->rate_per_s);
    gp_err rc = gp_auth_load(&fresh, store, err);
    if (rc == GP_OK) {
        pthread_mutex_lock(&a->lock);
        gp_auth_entry *old = a->entries;
        a->entries = fresh.entries;
        a->n = fresh.n;
        a->cap = fresh.cap;
        fresh.entries = old;
        pthread_mutex_unlock(&a->lock);
    }
    gp_auth_free(&fresh);
    return rc;
}

gp_err gp_auth_add(gp_auth *a, const gp_store_token *t, gp_error *err)
{
    gp_role role;
    if (!gp_role_parse(t->role, &role))
        return gp_error_set(err, GP_ERR_INVALID, "role", "token %s has unknown role %s", t->id, t->role);
    pthread_mutex_lock(&a->lock);
    gp_auth_entry *grown = gp_grow(a->entries, &a->cap, a->n + 1, sizeof *grown);
    if (!grown) {
        pthread_mutex_unlock(&a->lock);
        return gp_error_set(err, GP_ERR_NOMEM, "token", "out of memory");
    }
    a->entries = grown;
    gp_auth_entry *e = &a->entries[a->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->hash_hex, sizeof e->hash_hex, "%s", t->hash_hex);
    snprintf(e->who.token_id, sizeof e->who.token_id, "%s", t->id);
    snprintf(e->who.name, sizeof e->who.name, "%s", t->name);
    snprintf(e->who.scope, sizeof e->who.scope, "%s", t->scope);
    snprintf(e->who.user, sizeof e->who.user, "%s", t->user ? t->user : "");
    e->who.role = role;
    e->who.expires = t->expires;
    e->who.single_use = t->single_use;
    e->last_used = e->last_stored = t->last_used;
    e->bucket = a->burst;
    pthread_mutex_unlock(&a->lock);
    return GP_OK;
}

void gp_auth_revoke(gp_auth *a, const char *token_id)
{
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->entries[i].who.token_id, token_id) == 0) {
            a->entries[i] = a->entries[--a->n];
            break;
        }
    pthread_mutex_unlock(&a->lock);
}

size_t gp_auth_count(gp_auth *a)
{
    pthread_mutex_lock(&a->lock);
    size_t n = a->n;
    pthread_mutex_unlock(&a->lock);
    return n;
}

/* A static token's principal: its one grant is its role and scope. */
static void principal_of(const token_who *t, gp_principal *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->token_id, t->token_id, sizeof out->token_id);
    memcpy(out->name, t->name, sizeof out->name);
    memcpy(out->scope, t->scope, sizeof out->scope);
    memcpy(out->user, t->user, sizeof out->user);
    out->role = t->role;
    out->expires = t->expires;
    out->single_use = t->single_use;
    out->grants[0].role = t->role;
    memcpy(out->grants[0].scope, t->scope, sizeof out->grants[0].scope);
    out->n_grants = 1;
}

gp_auth_result gp_auth_check(gp_auth *a, const char *secret, int64_t now_ms, gp_principal *out)
{
    char hash[65];
    if (!secret || strncmp(secret, "gpt_", 4) != 0 || strlen(secret) != GP_TOKEN_SECRET_LEN)
        return GP_AUTH_UNKNOWN;
    gp_token_hash(secret, hash);
    gp_auth_result res = GP_AUTH_UNKNOWN;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n; i++) {
        gp_auth_entry *e = &a->entries[i];
        if (strcmp(e->hash_hex, hash) != 0)
            continue;
        principal_of(&e->who, out);
        if (e->who.expires >= 0 && now_ms >= e->who.expires * 1000) {
            res = GP_AUTH_EXPIRED;
            break;
        }
        res = GP_AUTH_OK;
        if (now_ms / 1000 > e->last_used)
            e->last_used = now_ms / 1000;
        if (a->rate_per_s > 0) {
            double refill = (double)(now_ms - e->refilled_ms) * a->rate_per_s / 1000.0;
            e->bucket = e->bucket + refill > a->burst ? a->burst : e->bucket + refill;
            e->refilled_ms = now_ms;
            if (e->bucket < 1)
                res = GP_AUTH_RATE_LIMITED;
            else
                e->bucket -= 1;
        }
        break;
    }
    pthread_mutex_unlock(&a->lock);
    return res;
}

int64_t gp_auth_last_used(gp_auth *a, const char *token_id)
{
    int64_t t = -1;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->entries[i].who.token_id, token_id) == 0)
            t = a->entries[i].last_used;
    pthread_mutex_unlock(&a->lock);
    return t;
}

/* Is e's last use due for the store? */
static bool touch_due(const gp_auth_entry *e)
{
    return e->last_used >= 0 && (e->last_stored < 0 || e->last_used - e->last_stored >= GP_AUTH_TOUCH_EVERY_S);
}

gp_err gp_auth_flush_last_used(gp_auth *a, gp_store *store, gp_error *err)
{
    gp_err rc = GP_OK;
    pthread_mutex_lock(&a->lock); /* a few rows at most a minute: held across the writes */
    for (size_t i = 0; i < a->n && rc == GP_OK; i++) {
        gp_auth_entry *e = &a->entries[i];
        if (!touch_due(e))
            continue;
        rc = gp_store_token_touch(store, e->who.token_id, e->last_used, err);
        if (rc == GP_OK)
            e->last_stored = e->last_used;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

static void hex(const unsigned char *bytes, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

void gp_token_hash(const char *secret, char hash_hex[65])
{
    unsigned char digest[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, secret, strlen(secret), digest);
    hex(digest, sizeof digest, hash_hex);
}

gp_err gp_token_generate(char secret[GP_TOKEN_SECRET_LEN + 1], char id[GP_TOKEN_ID_LEN + 1], char hash_hex[65],
                         gp_error *err)
{
    unsigned char key[32], pub[GP_TOKEN_ID_LEN / 2];
    if (gnutls_rnd(GNUTLS_RND_KEY, key, sizeof key) != 0 || gnutls_rnd(GNUTLS_RND_NONCE, pub, sizeof pub) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "token", "no random bytes from GnuTLS");
    memcpy(secret, "gpt_", 4);
    hex(key, sizeof key, secret + 4);
    hex(pub, sizeof pub, id);
    gp_token_hash(secret, hash_hex);
    return GP_OK;
}

bool gp_scope_covers(const char *scope, const char *path)
{
    size_t n = strlen(scope);
    return n > 0 && strncmp(scope, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool gp_join_covers(const char *patterns, const char *node)
{
    char one[GP_PATH_MAX];
    for (const char *p = patterns; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        if (one[0] && fnmatch(one, node, 0) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

/* admin 3 > tenant-admin 2 > member 1; the other roles 0 (held exactly). */
static int strength(gp_role r)
{
    return r == GP_ROLE_ADMIN ? 3 : r == GP_ROLE_TENANT_ADMIN ? 2 : r == GP_ROLE_MEMBER ? 1 : 0;
}

bool gp_principal_holds(const gp_principal *p, gp_role role, const char *path, bool below)
{
    for (int i = 0; i < p->n_grants; i++) {
        const gp_grant *g = &p->grants[i];
        if (g->role == GP_ROLE_ADMIN && strength(role) > 0)
            return true;
        if (strength(role) == 0 ? g->role == role : strength(g->role) >= strength(role) &&
                                                        gp_scope_covers(g->scope, path) &&
                                                        !(below && strcmp(g->scope, path) == 0))
            return true;
    }
    return false;
}

const char *gp_principal_one_scope(const gp_principal *p)
{
    for (int i = 1; i < p->n_grants; i++)
        if (strcmp(p->grants[i].scope, p->grants[0].scope) != 0)
            return NULL;
    return p->n_grants > 0 && p->grants[0].scope[0] ? p->grants[0].scope : NULL;
}

static int stronger_first(const void *a, const void *b)
{
    return strength(((const gp_grant *)b)->role) - strength(((const gp_grant *)a)->role);
}

void gp_principal_grants_done(gp_principal *p)
{
    qsort(p->grants, (size_t)p->n_grants, sizeof p->grants[0], stronger_first);
    p->role = p->n_grants ? p->grants[0].role : GP_ROLE_COUNT; /* none: "unknown" in a refusal's audit row */
    snprintf(p->scope, sizeof p->scope, "%s", p->n_grants ? p->grants[0].scope : "");
}

bool gp_principal_sees_all(const gp_principal *p)
{
    return p->role == GP_ROLE_ADMIN || p->role == GP_ROLE_OPERATOR || p->role == GP_ROLE_AUDITOR;
}

bool gp_principal_sees(const gp_principal *p, const char *path)
{
    if (p->role == GP_ROLE_JOIN || p->role == GP_ROLE_NODE)
        return false; /* a node's name is not a tenant scope */
    if (gp_principal_sees_all(p))
        return true;
    for (int i = 0; i < p->n_grants; i++)
        if (gp_scope_covers(p->grants[i].scope, path))
            return true;
    return false;
}
