/* oidc.c - a provider's JWT read, checked and turned into an identity
 * (oidc.h says the rules); the keys are oidc_keys.c's.
 *
 * Example: {"alg": "RS256", "kid": "k1"} . {"iss": "https://idp.example.com",
 * "aud": ["gpupool"], "exp": ..., "preferred_username": "alice", "groups":
 * ["ml-admins"], "amr": ["pwd", "otp"]} . SIG -> user alice, groups
 * ml-admins, second factor yes.
 */
#include "server/oidc.h"

#include "util/grow.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const RESULT_NAMES[GP_OIDC_RESULT_COUNT] = {
    "ok",           "not_jwt",        "bad_signature", "expired",       "not_yet_valid",
    "wrong_audience", "unknown_issuer", "unknown_key",   "bad_algorithm", "issuer_unreachable",
    "no_binding",     "second_factor_missing"};

/* amr values (RFC 8176) that show more than a password. */
static const char *const SECOND_FACTORS[] = {"mfa", "mca", "otp", "hwk", "swk", "sms", "tel",
                                             "sc",  "fpt", "face", "iris", "retina", "vbm", "pop"};

const char *gp_oidc_result_name(gp_oidc_result r)
{
    return (unsigned)r < GP_OIDC_RESULT_COUNT ? RESULT_NAMES[r] : "unknown";
}

gp_err gp_oidc_config_check(const gp_oidc_config *cfg, gp_error *err)
{
    if (cfg->n_issuers != cfg->n_audiences)
        return gp_error_set(err, GP_ERR_INVALID, "oidc-audience",
                            "each --oidc-issuer needs its --oidc-audience (%d issuers, %d audiences)",
                            cfg->n_issuers, cfg->n_audiences);
    for (int i = 0; i < cfg->n_issuers; i++) {
        if (!gp_oidc_url_ok(cfg->issuer[i], cfg->allow_http_loopback))
            return gp_error_set(err, GP_ERR_INVALID, "oidc-issuer",
                                "--oidc-issuer %.200s: must be https:// (plain http only to a loopback issuer with "
                                "--oidc-allow-http-loopback)",
                                cfg->issuer[i]);
        if (!cfg->audience[i][0])
            return gp_error_set(err, GP_ERR_INVALID, "oidc-audience", "--oidc-audience may not be empty");
    }
    return GP_OK;
}

bool gp_oidc_mfa_parse(const char *text, int *out)
{
    if (strcmp(text, "all") == 0 || strcmp(text, "none") == 0) {
        *out = text[0] == 'a' ? GP_OIDC_MFA_ADMIN | GP_OIDC_MFA_TENANT_ADMIN | GP_OIDC_MFA_MEMBER : 0;
        return true;
    }
    int bits = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 5 && strncmp(p, "admin", 5) == 0)
            bits |= GP_OIDC_MFA_ADMIN;
        else if (n == 12 && strncmp(p, "tenant-admin", 12) == 0)
            bits |= GP_OIDC_MFA_TENANT_ADMIN;
        else if (n == 6 && strncmp(p, "member", 6) == 0)
            bits |= GP_OIDC_MFA_MEMBER;
        else
            return false;
        p += n + (p[n] == ',');
    }
    *out = bits;
    return bits != 0;
}

gp_err gp_oidc_init(gp_oidc *o, const gp_oidc_config *cfg, gp_oidc_fetch_fn fetch, void *fetch_ctx, gp_error *err)
{
    memset(o, 0, sizeof *o);
    o->cfg = *cfg;
    o->fetch = fetch;
    o->fetch_ctx = fetch_ctx;
    pthread_mutex_init(&o->seen_lock, NULL);
    if (o->cfg.n_issuers == 0)
        return GP_OK;
    gp_err rc = gp_oidc_config_check(cfg, err);
    return rc == GP_OK ? gp_oidc_issuers_init(o, err) : rc;
}

void gp_oidc_free(gp_oidc *o)
{
    gp_oidc_issuers_free(o);
    free(o->seen);
    pthread_mutex_destroy(&o->seen_lock);
    memset(o, 0, sizeof *o);
}

bool gp_oidc_enabled(const gp_oidc *o)
{
    return o->cfg.n_issuers > 0;
}

/* ---- the token ---- */

/* A base64url part as a JSON object (NULL when it is not one). */
static json_t *part_object(const char *p, size_t n)
{
    unsigned char *raw;
    size_t len;
    if (!gp_oidc_b64url_decode(p, n, &raw, &len))
        return NULL;
    json_t *obj = json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, NULL);
    free(raw);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static bool aud_has(const json_t *aud, const char *want)
{
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), want) == 0;
    size_t i;
    json_t *v;
    json_array_foreach(aud, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
            return true;
    return false;
}

/* The time claims (exp required; see oidc.h). */
static gp_oidc_result times_ok(const json_t *claims, int64_t now, char *detail, size_t cap)
{
    json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
    json_t *iat = json_object_get(claims, "iat");
    if (!json_is_number(exp) || json_number_value(exp) <= (double)(now - GP_OIDC_SKEW_S)) {
        snprintf(detail, cap, "%s", json_is_number(exp) ? "the token expired" : "the token has no exp");
        return GP_OIDC_EXPIRED;
    }
    if ((nbf && (!json_is_number(nbf) || json_number_value(nbf) > (double)(now + GP_OIDC_SKEW_S))) ||
        (iat && (!json_is_number(iat) || json_number_value(iat) > (double)(now + GP_OIDC_SKEW_S)))) {
        snprintf(detail, cap, "the token's nbf or iat is more than %d s ahead", GP_OIDC_SKEW_S);
        return GP_OIDC_NOT_YET_VALID;
    }
    return GP_OIDC_OK;
}

static bool names_second_factor(const json_t *claims, const char *mfa_acr)
{
    const char *acr = json_string_value(json_object_get(claims, "acr"));
    if (mfa_acr && acr && strcmp(acr, mfa_acr) == 0)
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(claims, "amr"), i, v)
        for (size_t k = 0; json_is_string(v) && k < sizeof SECOND_FACTORS / sizeof *SECOND_FACTORS; k++)
            if (strcmp(json_string_value(v), SECOND_FACTORS[k]) == 0)
                return true;
    return false;
}

static void add_group(gp_oidc_identity *id, const json_t *g)
{
    const char *name = json_string_value(g);
    if (name && name[0] && strlen(name) < GP_NAME_MAX && id->n_groups < GP_OIDC_GROUPS_MAX)
        snprintf(id->groups[id->n_groups++], GP_NAME_MAX, "%s", name);
}

/* The identity of verified claims; false (with detail) when it names no user. */
static bool identity(const gp_oidc *o, const json_t *claims, int issuer, gp_oidc_identity *id, char *detail,
                     size_t cap)
{
    const char *claim = o->cfg.username_claim ? o->cfg.username_claim : "preferred_username";
    const char *user = json_string_value(json_object_get(claims, claim));
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    if (user && user[0] && strlen(user) < GP_NAME_MAX)
        snprintf(id->user, sizeof id->user, "%s", user);
    else if (sub && sub[0] && strlen(o->cfg.issuer[issuer]) + strlen(sub) + 1 < GP_NAME_MAX)
        snprintf(id->user, sizeof id->user, "%s#%s", o->cfg.issuer[issuer], sub);
    else {
        snprintf(detail, cap, "the token names no user (%s, sub)", claim);
        return false;
    }
    json_t *groups = json_object_get(claims, o->cfg.groups_claim ? o->cfg.groups_claim : "groups");
    size_t i;
    json_t *g;
    if (json_is_string(groups))
        add_group(id, groups);
    json_array_foreach(groups, i, g)
        add_group(id, g);
    id->issuer = issuer;
    id->second_factor = names_second_factor(claims, o->cfg.mfa_acr);
    id->expires = (int64_t)json_number_value(json_object_get(claims, "exp"));
    return true;
}

/* The issuer the claims name, or -1. */
static int issuer_of(const gp_oidc *o, const json_t *claims)
{
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    for (int i = 0; iss && i < o->cfg.n_issuers; i++)
        if (strcmp(o->cfg.issuer[i], iss) == 0)
            return i;
    return -1;
}

/* The checks after the signature: times, audience, identity. */
static gp_oidc_result claims_ok(gp_oidc *o, const json_t *claims, int issuer, int64_t now, gp_oidc_identity *id,
                                char *detail, size_t cap)
{
    gp_oidc_result res = times_ok(claims, now, detail, cap);
    if (res != GP_OIDC_OK)
        return res;
    if (!aud_has(json_object_get(claims, "aud"), o->cfg.audience[issuer])) {
        snprintf(detail, cap, "the token is not for audience %s", o->cfg.audience[issuer]);
        return GP_OIDC_WRONG_AUDIENCE;
    }
    return identity(o, claims, issuer, id, detail, cap) ? GP_OIDC_OK : GP_OIDC_BAD_SIGNATURE;
}

static gp_oidc_result verify(gp_oidc *o, const char *token, int64_t now, gp_oidc_identity *id, char *detail,
                             size_t cap)
{
    const char *dot1 = strchr(token, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strchr(dot2 + 1, '.') || strlen(token) > GP_OIDC_TOKEN_MAX)
        return GP_OIDC_NOT_JWT;
    json_t *head = part_object(token, (size_t)(dot1 - token));
    json_t *claims = part_object(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    gp_oidc_result res = GP_OIDC_OK;
    const char *alg = json_string_value(json_object_get(head, "alg"));
    int issuer = issuer_of(o, claims);
    if (!head || !claims)
        res = GP_OIDC_NOT_JWT;
    else if (!alg || (strcmp(alg, "RS256") != 0 && strcmp(alg, "ES256") != 0)) {
        snprintf(detail, cap, "algorithm %.20s is not accepted (RS256, ES256 only)", alg ? alg : "missing");
        res = GP_OIDC_BAD_ALGORITHM;
    } else if (json_object_get(head, "crit")) { /* RFC 7515 4.1.11: extensions it must understand; it knows none */
        snprintf(detail, cap, "the header's crit names extensions gpupoold does not implement");
        res = GP_OIDC_BAD_ALGORITHM;
    } else if (issuer < 0) {
        const char *iss = json_string_value(json_object_get(claims, "iss"));
        snprintf(detail, cap, "issuer %.200s is not trusted", iss ? iss : "missing");
        res = GP_OIDC_UNKNOWN_ISSUER;
    } else if (!gp_oidc_b64url_decode(dot2 + 1, strlen(dot2 + 1), &sig, &sig_len)) {
        snprintf(detail, cap, "the signature is not base64url");
        res = GP_OIDC_BAD_SIGNATURE;
    } else {
        const char *kid = json_string_value(json_object_get(head, "kid"));
        res = gp_oidc_key_verify(o, issuer, kid, alg, token, (size_t)(dot2 - token), sig, sig_len, now, detail, cap);
        if (res == GP_OIDC_OK)
            res = claims_ok(o, claims, issuer, now, id, detail, cap);
        else if (res == GP_OIDC_BAD_SIGNATURE)
            snprintf(detail, cap, "the signature does not verify");
    }
    free(sig);
    json_decref(head);
    json_decref(claims);
    return res;
}

gp_oidc_result gp_oidc_verify(gp_oidc *o, const char *token, int64_t now, gp_oidc_identity *id, char *detail,
                              size_t detail_cap)
{
    char scratch[8];
    if (!detail) {
        detail = scratch;
        detail_cap = sizeof scratch;
    }
    detail[0] = '\0';
    memset(id, 0, sizeof *id);
    if (!gp_oidc_enabled(o) || !token)
        return GP_OIDC_NOT_JWT;
    gp_oidc_result res = verify(o, token, now, id, detail, detail_cap);
    if (res == GP_OIDC_ISSUER_UNREACHABLE && !detail[0])
        snprintf(detail, detail_cap, "the issuer's keys could not be fetched");
    if (res == GP_OIDC_OK) {
        unsigned char digest[32];
        gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), digest);
        for (size_t i = 0; i < sizeof digest; i++)
            snprintf(id->token_hash + 2 * i, 3, "%02x", digest[i]);
    }
    return res;
}

/* ---- sign-ins seen ---- */

bool gp_oidc_first_use(gp_oidc *o, const gp_oidc_identity *id, int64_t now)
{
    bool first = true;
    pthread_mutex_lock(&o->seen_lock);
    for (size_t i = 0; i < o->n_seen;) {
        if (o->seen[i].expires + GP_OIDC_SKEW_S < now) { /* its token is refused from now on */
            o->seen[i] = o->seen[--o->n_seen];
            continue;
        }
        first = first && strcmp(o->seen[i].token_hash, id->token_hash) != 0;
        i++;
    }
    gp_oidc_seen *grown = first ? gp_grow(o->seen, &o->cap_seen, o->n_seen + 1, sizeof *grown) : NULL;
    if (grown) {
        o->seen = grown;
        memcpy(o->seen[o->n_seen].token_hash, id->token_hash, sizeof id->token_hash);
        o->seen[o->n_seen++].expires = id->expires;
    }
    pthread_mutex_unlock(&o->seen_lock);
    return first;
}
